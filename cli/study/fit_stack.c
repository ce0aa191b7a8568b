/* cli/study/fit_stack.c — `fit --for stack`: the techniques in the seeds' order (fit.h), each step
 * adding to the one before, simulated through the memo of cli/study/fit.c. */
#include "config.h"
#include "cli/study/fit-private.h"

#include <math.h>
#include <string.h>
#include "cli/scenario/input.h"
#include "cli/scenario/sweep.h"
#include "hardware/gpu.h"
#include "models/parallel/parallel.h"

/* The knobs a step turns, each meant to lower memory; applied only where it changes the
 * scenario as loaded (step_sets), so a step never re-sets what the scenario has or weakens
 * it (what it really saves is the candidate's measured saving). */
enum
{
  K_MIXED = 1 << 0,  /* fp32 / autocast → bf16 (fp16) mixed precision */
  K_CKPT = 1 << 1,   /* full activation checkpointing */
  K_ZERO1 = 1 << 2,
  K_ZERO2 = 1 << 3,
  K_ZERO3 = 1 << 4,
  K_OFF_CPU = 1 << 5, /* optimizer offload */
  K_OFF_NVME = 1 << 6,
  K_ADAM8 = 1 << 7,  /* bitsandbytes 8-bit AdamW */
  K_PAGED8 = 1 << 8, /* bitsandbytes paged 8-bit AdamW */
  K_LORA = 1 << 9,
  K_QLORA = 1 << 10,
};

typedef struct
{
  const char *label;
  guint knobs; /* all the step's knobs */
  guint adds;  /* the knob that defines it: the step is skipped when that one is a no-op */
} StackStep;

/* The seeds' order (fit.h); each step lists all its knobs. The 8-bit optimizers (opt-in)
 * branch off after checkpointing: they change the optimizer's numerics (block-wise
 * quantized states, Dettmers et al. 2022, arXiv 2110.02861), not what is trained, and
 * cost almost no time, so they come before sharding and offload. */
static const StackStep stack_steps[] = {
  { "as given", 0, 0 },
  { "+ mixed precision", K_MIXED, K_MIXED },
  { "+ full activation checkpointing", K_MIXED | K_CKPT, K_CKPT },
  { "+ 8-bit AdamW", K_MIXED | K_CKPT | K_ADAM8, K_ADAM8 },
  { "+ paged 8-bit AdamW", K_MIXED | K_CKPT | K_PAGED8, K_PAGED8 },
  { "+ ZeRO-1", K_MIXED | K_CKPT | K_ZERO1, K_ZERO1 },
  { "+ ZeRO-2", K_MIXED | K_CKPT | K_ZERO2, K_ZERO2 },
  { "+ ZeRO-3", K_MIXED | K_CKPT | K_ZERO3, K_ZERO3 },
  { "+ optimizer offload to CPU", K_MIXED | K_CKPT | K_ZERO3 | K_OFF_CPU, K_OFF_CPU },
  { "+ optimizer offload to NVMe", K_MIXED | K_CKPT | K_ZERO3 | K_OFF_NVME, K_OFF_NVME },
};
/* the frozen base is not offloaded (not modelled with LoRA): parameter offload is dropped */
static const StackStep finetune_steps[] = {
  { "LoRA r 16", K_MIXED | K_CKPT | K_LORA, K_LORA },
  { "QLoRA r 16", K_MIXED | K_CKPT | K_QLORA, K_QLORA },
};

static guint
dp_stage_of (guint knob)
{
  return knob == K_ZERO1 ? 1 : knob == K_ZERO2 ? 2 : 3;
}

/* The override knob k stands for on scenario sc, or NULL when it changes nothing or would
 * raise memory: mixed precision only from fp32 or autocast (pure bf16 / fp16 and the mixed
 * recipes hold fewer or as many bytes), checkpointing only when it keeps more than full
 * (none, selective, every k-th; √L keeps less), a ZeRO stage only above the scenario's,
 * offload only where there is none (or
 * CPU, for NVMe), the 8-bit optimizers only in place of AdamW, LoRA / QLoRA only on a
 * full fine-tune (QLoRA also on LoRA). */
static char *
knob_set (guint k, const CliScenario *sc, const char *mixed)
{
  const ModelStack *s = &sc->stack;
  switch (k)
    {
    case K_MIXED:
      return s->precision == MODEL_PRECISION_FP32 || s->precision == MODEL_PRECISION_FP16_AMP
                 || s->precision == MODEL_PRECISION_BF16_AMP ? g_strdup (mixed) : NULL;
    case K_CKPT:
      return s->checkpointing == MODEL_CHECKPOINTING_NONE
                 || s->checkpointing == MODEL_CHECKPOINTING_SELECTIVE
                 || s->checkpointing == MODEL_CHECKPOINTING_SELECTIVE_OP
                 || s->checkpointing == MODEL_CHECKPOINTING_EVERY_K
               ? g_strdup ("training.checkpointing=full") : NULL;
    case K_ZERO1:
    case K_ZERO2:
    case K_ZERO3:
      return model_parallel_stage (&sc->par) < dp_stage_of (k)
               ? g_strdup_printf ("parallel.data_parallel=zero%u", dp_stage_of (k)) : NULL;
    case K_OFF_CPU:
      return s->offload.optimizer == MODEL_OFFLOAD_NONE ? g_strdup ("offload.optimizer=cpu")
                                                        : NULL;
    case K_OFF_NVME:
      return s->offload.optimizer != MODEL_OFFLOAD_NVME ? g_strdup ("offload.optimizer=nvme")
                                                        : NULL;
    case K_ADAM8:
      return s->optimizer == MODEL_OPTIMIZER_ADAMW ? g_strdup ("training.optimizer=adamw_8bit")
                                                   : NULL;
    case K_PAGED8:
      return s->optimizer == MODEL_OPTIMIZER_ADAMW || s->optimizer == MODEL_OPTIMIZER_ADAMW_8BIT
               ? g_strdup ("training.optimizer=paged_adamw_8bit") : NULL;
    case K_LORA:
      return s->finetune.method == MODEL_FINETUNE_NONE ? g_strdup ("finetune.method=lora") : NULL;
    case K_QLORA:
      return s->finetune.method != MODEL_FINETUNE_QLORA ? g_strdup ("finetune.method=qlora")
                                                        : NULL;
    }
  return NULL;
}

/* The overrides of step `st` on scenario sc (NULL-terminated, owned), NULL when its defining
 * knob changes nothing there. */
static char **
step_sets (const StackStep *st, const CliScenario *sc, const char *mixed)
{
  /* ZeRO shards over data-parallel ranks: on one GPU its stages change nothing, so they are
   * not tried there (offload still is, with stage 3: it works on one GPU, as ZeRO-Offload) */
  gboolean one_gpu = sc->node.n_gpus * sc->n_nodes == 1;
  if (one_gpu && (st->adds & (K_ZERO1 | K_ZERO2 | K_ZERO3)))
    return NULL;
  g_autofree char *defining = st->adds != 0 ? knob_set (st->adds, sc, mixed) : NULL;
  if (st->adds != 0 && defining == NULL)
    return NULL;
  GPtrArray *a = g_ptr_array_new ();
  for (guint k = 1; k <= K_QLORA; k <<= 1)
    {
      char *set = (st->knobs & k) ? knob_set (k, sc, mixed) : NULL;
      if (set != NULL)
        g_ptr_array_add (a, set);
      if (set != NULL && (k == K_LORA || k == K_QLORA))
        {
          g_ptr_array_add (a, g_strdup ("finetune.rank=16"));
          if (sc->stack.offload.parameters != MODEL_OFFLOAD_NONE)
            g_ptr_array_add (a, g_strdup ("offload.parameters=none"));
        }
    }
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

/* "LoRA r 16 (+ mixed precision, ckpt)": a fine-tuning step names what it adds besides. */
static char *
step_label (const StackStep *st, char **sets)
{
  if (!(st->knobs & (K_LORA | K_QLORA)))
    return g_strdup (st->label);
  gboolean mixed = FALSE, ckpt = FALSE;
  for (guint i = 0; sets[i] != NULL; i++)
    mixed |= g_str_has_prefix (sets[i], "training.precision="),
      ckpt |= g_str_has_prefix (sets[i], "training.checkpointing=");
  if (!mixed && !ckpt)
    return g_strdup (st->label);
  return g_strdup_printf ("%s (%s%s%s)", st->label, mixed ? "mixed precision" : "",
                          mixed && ckpt ? ", " : "", ckpt ? "ckpt" : "");
}

/* Runs one step unless it changes nothing on the scenario; TRUE when it fits and changes
 * memory (a candidate with the same GPU and host memory as the scenario as given is listed,
 * marked no_change, and never the answer). */
static gboolean
try_step (Ctx *ctx, const CliScenario *sc, const StackStep *st, const char *mixed,
          gint *first_fit)
{
  char **sets = step_sets (st, sc, mixed);
  if (sets == NULL)
    return FALSE;
  if (sets[0] == NULL && st->adds != 0)
    {
      g_strfreev (sets);
      return FALSE;
    }
  g_autofree char *label = step_label (st, sets);
  guint n = ctx->report->candidates->len;
  guint i = cli_fit_evaluate (ctx, label, sets);
  if (i < n && i > 0) /* the same overrides as an earlier step: nothing new */
    return FALSE;
  CliFitCandidate *c = g_ptr_array_index (ctx->report->candidates, i);
  const CliFitCandidate *given = cli_fit_report_candidate (ctx->report, 0);
  /* one byte of slack: the same plan replays to the same bytes */
  if (i > 0 && c->status != CLI_FIT_INFEASIBLE && given->status != CLI_FIT_INFEASIBLE
      && fabs (c->device_used - given->device_used) < 1 && fabs (c->host_peak - given->host_peak) < 1)
    c->no_change = TRUE;
  if (!cli_fit_fits_at (ctx, i) || c->no_change)
    return FALSE;
  if (*first_fit < 0)
    *first_fit = (gint) i;
  return TRUE;
}

/* The scenario's [baseline] overrides — the file's group with the command line's --set
 * baseline.group.key=value applied, as the scenario loader sees it — simulated outside the
 * candidate list. NAN when there is none, or when it cannot be simulated: then its error is
 * kept in the report's notes, and cli_fit_search fails with it (README: a baseline's values
 * are refused when it runs, under fit --for stack as under batch). */
static double
baseline_tokens (Ctx *ctx)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_auto (GStrv) keys = NULL;
  if (cli_input_load_keyfile (kf, ctx->path, NULL))
    {
      cli_scenario_keyfile_apply_sets (kf, ctx->sets); /* as the loader: baseline.* too */
      keys = g_key_file_get_keys (kf, "baseline", NULL, NULL);
    }
  if (keys == NULL || keys[0] == NULL)
    return NAN;
  GPtrArray *a = g_ptr_array_new ();
  for (guint i = 0; keys[i] != NULL; i++)
    {
      g_autofree char *v = g_key_file_get_value (kf, "baseline", keys[i], NULL);
      g_ptr_array_add (a, g_strdup_printf ("%s=%s", keys[i], g_strstrip (v)));
    }
  g_ptr_array_add (a, NULL);
  gboolean from_set = FALSE; /* a --set baseline.* among the overrides: named as such */
  for (guint i = 0; ctx->sets != NULL && ctx->sets[i] != NULL && !from_set; i++)
    from_set = cli_sweep_set_is_baseline (ctx->sets[i]);
  CliFitCandidate c = { .sets = (char **) g_ptr_array_free (a, FALSE),
                        .origin = from_set ? "[baseline] and --set baseline.*" : "[baseline]",
                        .tokens_per_s = NAN };
  cli_fit_simulate (ctx, &c);
  double t = c.tokens_per_s;
  if (c.status == CLI_FIT_INFEASIBLE)
    {
      const char *why = c.reason;
      if (g_str_has_prefix (why, "not feasible: "))
        why += strlen ("not feasible: ");
      ctx->report->notes.baseline = g_strdup_printf ("the baseline cannot run: %s", why);
    }
  g_strfreev (c.sets);
  g_free (c.reason);
  return c.status == CLI_FIT_INFEASIBLE ? NAN : t;
}

void
cli_fit_search_stack (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt)
{
  const char *mixed = sc->node.gpu->peak_flops[HW_DTYPE_BF16] > 0
                          ? "training.precision=bf16_mixed" : "training.precision=fp16_mixed";
  gint first = -1;
  gboolean optimizer_steps = FALSE;
  for (guint s = 0; s < G_N_ELEMENTS (stack_steps); s++)
    {
      gboolean eight_bit = stack_steps[s].adds & (K_ADAM8 | K_PAGED8);
      g_autofree char *probe = eight_bit ? knob_set (stack_steps[s].adds, sc, mixed) : NULL;
      optimizer_steps |= probe != NULL;
      if (eight_bit && !opt->allow_optimizer)
        continue;
      if (try_step (ctx, sc, &stack_steps[s], mixed, &first) && !opt->all)
        break;
    }
  for (guint s = 0; opt->allow_finetune && s < G_N_ELEMENTS (finetune_steps); s++)
    if ((first < 0 || opt->all) && try_step (ctx, sc, &finetune_steps[s], mixed, &first)
        && !opt->all)
      break;
  if (optimizer_steps && !opt->allow_optimizer)
    ctx->report->notes.skipped = g_strdup (
      "not tried: 8-bit AdamW and paged 8-bit AdamW (training.optimizer = adamw_8bit, "
      "paged_adamw_8bit: 2 instead of 8 bytes of states per parameter, with block-wise "
      "quantized numerics); --allow-optimizer-change includes them");
  ctx->report->best = first;
  ctx->report->baseline_tokens = baseline_tokens (ctx);
  if (isnan (ctx->report->baseline_tokens) && ctx->report->candidates->len > 0)
    ctx->report->baseline_tokens = cli_fit_report_candidate (ctx->report, 0)->tokens_per_s;
}


GPtrArray *
cli_fit_stack_candidates (const CliScenario *sc, const HwGpuSpec *gpu, gboolean allow_finetune,
                          gboolean allow_optimizer)
{
  const char *mixed = gpu->peak_flops[HW_DTYPE_BF16] > 0 ? "training.precision=bf16_mixed"
                                                         : "training.precision=fp16_mixed";
  GPtrArray *a = g_ptr_array_new_with_free_func (cli_fit_stack_candidate_free);
  for (guint pass = 0; pass < (allow_finetune ? 2u : 1u); pass++)
    {
      const StackStep *steps = pass == 0 ? stack_steps : finetune_steps;
      guint n = pass == 0 ? G_N_ELEMENTS (stack_steps) : G_N_ELEMENTS (finetune_steps);
      for (guint i = 0; i < n; i++)
        {
          if ((steps[i].adds & (K_ADAM8 | K_PAGED8)) && !allow_optimizer)
            continue;
          char **sets = step_sets (&steps[i], sc, mixed);
          if (sets == NULL || (sets[0] == NULL && steps[i].adds != 0))
            {
              g_strfreev (sets); /* changes nothing on this scenario */
              continue;
            }
          CliFitStackCandidate *c = g_new0 (CliFitStackCandidate, 1);
          c->label = step_label (&steps[i], sets);
          c->sets = sets;
          g_ptr_array_add (a, c);
        }
    }
  return a;
}

void
cli_fit_stack_candidate_free (gpointer p)
{
  CliFitStackCandidate *c = p;
  g_free (c->label);
  g_strfreev (c->sets);
  g_free (c);
}
