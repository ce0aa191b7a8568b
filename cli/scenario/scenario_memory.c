/* cli/scenario/scenario_memory.c — scenario keys of the memory stack: how PyTorch's optimizer and
 * caching allocator are configured (models/stack/stack.h, models/memory/allocator.h).
 *
 *   [training] zero_grad_to_none = true|false   zero_grad(set_to_none=…) (default true,
 *                                               PyTorch ≥ 2.0)
 *   [training] softmax_saves_input = true|false autograd keeps softmax's input too
 *                                               (default false; true for PyTorch ≤ 1.10)
 *   [allocator] expandable_segments = true|false PYTORCH_CUDA_ALLOC_CONF (default false)
 *   [training] loss = upcast|plain|chunked|fused|upcast_shift|vocab_parallel|sharded|te_parallel
 *                     |chunked_head
 *                                               how the loss head computes the loss
 *                                               (models/stack/framework.h ModelLossImpl)
 *   [training] loss_chunks = N                  chunks of the chunked/fused loss (>= 1, at
 *                                               most seq_len under chunked or
 *                                               chunked_head; loss = chunked without it
 *                                               nor a profile's count: 8, torchtune's
 *                                               CEWithChunkedOutputLoss num_output_chunks)
 *   [training] norm_fp32 = true|false           RMSNorm upcasts and saves its fp32 input
 *   [training] compile = true|false             torch.compile's partitioner (op graph)
 *   [training] kv_repeat = true|false           GQA k/v expanded to the query heads
 *   [training] kv_repeat_sdpa = true|false      the same before SDPA only (eager always)
 *   [training] softmax_fp32 = true|false        the eager core's softmax in fp32, the
 *                                               probabilities cast back (HF model code)
 *   [training] logits_kept = true|false         the training loop holds the loss's input
 *                                               logits through the backward (torchtune
 *                                               < 0.3; default false)
 *   [training] padding = max_length|longest     every batch seq_len long (default), or each
 *                                               padded to its own longest sample, so the
 *                                               allocator sees varying shapes
 *                                               (ModelStack.pad_to_longest)
 * The op-graph keys override a field only when present: a framework profile
 * ([training] framework) may have set its default before.
 *
 * Errors name the group and key (the caller prefixes the file).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"
#include "sim/text.h"

static gboolean
get_bool (GKeyFile *kf, const char *group, const char *key, gboolean *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, group, key, FALSE, NULL);
  if (v == NULL)
    return TRUE;
  if (!sim_units_parse_bool (v, out, error))
    return PREFIX_KEY (error, group, key), FALSE;
  return TRUE;
}


/* torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss.__init__:
 * num_output_chunks = 8, the default taken when loss = chunked names no count. */
#define DEFAULT_LOSS_CHUNKS 8

static gboolean
load_framework_keys (GKeyFile *kf, ModelStack *s, GError **error)
{
  ModelFramework *f = &s->framework;
  g_autofree char *loss = cli_scenario_get_raw (kf, "training", "loss", FALSE, NULL);
  if (loss != NULL)
    {
      if (!model_framework_loss_from_string (loss, &f->loss, error))
        return PREFIX_KEY (error, "training", "loss"), FALSE;
    }
  guint64 chunks = f->loss_chunks;
  if (!cli_scenario_get_count (kf, "training", "loss_chunks", FALSE, 65536, &chunks, error))
    return FALSE;
  gboolean chunks_key = g_key_file_has_key (kf, "training", "loss_chunks", NULL);
  /* loss = chunked (or chunked_head) under a profile whose loss is not chunked (its count
   * is 1): 1 chunk would be the upcast loss, so take torchtune's (torchtitan's) default */
  if ((f->loss == MODEL_LOSS_CHUNKED || f->loss == MODEL_LOSS_CHUNKED_HEAD) && !chunks_key
      && chunks <= 1)
    chunks = DEFAULT_LOSS_CHUNKS;
  /* torchtune chunks the logits along the sequence (logits.chunk(num_output_chunks,
   * dim=1) in the recipes' forward), torchtitan's ChunkedLossWrapper the hidden states
   * (components/loss.py _chunk_local: torch.split along the sequence, which it checks is
   * divisible by num_chunks), so more chunks than tokens of a sequence cannot be */
  if ((f->loss == MODEL_LOSS_CHUNKED || f->loss == MODEL_LOSS_CHUNKED_HEAD) && s->seq_len > 0
      && chunks > s->seq_len)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key '%s': %" G_GUINT64_FORMAT " loss chunks exceed "
                   "the %" G_GUINT64_FORMAT " tokens of a sequence (seq_len), along which "
                   "the %s are chunked", chunks_key ? "loss_chunks" : "seq_len", chunks,
                   s->seq_len, f->loss == MODEL_LOSS_CHUNKED ? "logits" : "hidden states");
      return FALSE;
    }
  f->loss_chunks = (guint) chunks;
  return get_bool (kf, "training", "norm_fp32", &f->norm_fp32, error)
         && get_bool (kf, "training", "compile", &f->compile, error)
         && get_bool (kf, "training", "kv_repeat", &f->kv_repeat, error)
         && get_bool (kf, "training", "kv_repeat_sdpa", &f->kv_repeat_sdpa, error)
         && get_bool (kf, "training", "softmax_fp32", &f->softmax_fp32, error)
         && get_bool (kf, "training", "logits_kept", &f->logits_kept, error);
}

static const char *const padding_names[] = { "max_length", "longest", NULL };

static gboolean
load_padding (GKeyFile *kf, ModelStack *s, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", "padding", FALSE, NULL);
  int mode = 0;
  if (v != NULL && !sim_text_lookup (padding_names, "padding", v, &mode, error))
    return PREFIX_KEY (error, "training", "padding"), FALSE;
  s->pad_to_longest = mode == 1;
  return TRUE;
}

gboolean
cli_scenario_load_memory (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelStack *s = &sc->stack;
  return get_bool (kf, "training", "zero_grad_to_none", &s->zero_grad_to_none, error)
         && get_bool (kf, "training", "softmax_saves_input", &s->softmax_saves_input, error)
         && get_bool (kf, "allocator", "expandable_segments", &s->expandable_segments, error)
         && load_framework_keys (kf, s, error) && load_padding (kf, s, error);
}
