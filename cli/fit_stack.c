/* cli/fit_stack.c — `fit --for stack`: the techniques in the seeds' order (fit.h), each step
 * adding to the one before, simulated through the memo of cli/fit.c. */
#include "config.h"
#include "cli/fit-private.h"

#include <math.h>
#include <string.h>
#include "cli/input.h"
#include "cli/sweep.h"
#include "hardware/gpu.h"

typedef struct
{
  const char *label;
  const char *sets[6]; /* NULL-terminated; "%P" stands for the mixed-precision override */
} StackStep;

/* The seeds' order (fit.h); each step lists all its overrides. */
static const StackStep stack_steps[] = {
  { "as given", { NULL } },
  { "+ mixed precision", { "%P", NULL } },
  { "+ full activation checkpointing", { "%P", "training.checkpointing=full", NULL } },
  { "+ ZeRO-1", { "%P", "training.checkpointing=full", "parallel.data_parallel=zero1", NULL } },
  { "+ ZeRO-2", { "%P", "training.checkpointing=full", "parallel.data_parallel=zero2", NULL } },
  { "+ ZeRO-3", { "%P", "training.checkpointing=full", "parallel.data_parallel=zero3", NULL } },
  { "+ optimizer offload to CPU",
    { "%P", "training.checkpointing=full", "parallel.data_parallel=zero3", "offload.optimizer=cpu",
      NULL } },
  { "+ optimizer offload to NVMe",
    { "%P", "training.checkpointing=full", "parallel.data_parallel=zero3",
      "offload.optimizer=nvme", NULL } },
};
static const StackStep finetune_steps[] = {
  /* the frozen base is not offloaded (not modelled with LoRA): parameter offload is dropped */
  { "LoRA r 16 (mixed precision, ckpt)",
    { "%P", "training.checkpointing=full", "finetune.method=lora", "finetune.rank=16",
      "offload.parameters=none", NULL } },
  { "QLoRA r 16 (mixed precision, ckpt)",
    { "%P", "training.checkpointing=full", "finetune.method=qlora", "finetune.rank=16",
      "offload.parameters=none", NULL } },
};

/* TRUE if every override of `sets` already holds in the scenario text `kf`. */
static gboolean
already_set (GKeyFile *kf, char **sets)
{
  for (guint i = 0; sets[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      if (!cli_sweep_parse_set (sets[i], &g, &k, &v, NULL))
        return FALSE;
      g_autofree char *have = g_key_file_get_value (kf, g, k, NULL);
      if (have == NULL || strcmp (g_strstrip (have), v) != 0)
        return FALSE;
    }
  return sets[0] != NULL;
}

static char **
step_sets (const StackStep *s, const char *mixed)
{
  GPtrArray *a = g_ptr_array_new ();
  for (guint i = 0; s->sets[i] != NULL; i++)
    g_ptr_array_add (a, g_strdup (strcmp (s->sets[i], "%P") == 0 ? mixed : s->sets[i]));
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

/* The overrides of `sets` that `prev` (the step before, may be NULL) does not have: what the
 * step adds. New NULL-terminated array of borrowed strings (free the array only). */
static char **
added_sets (char **sets, char **prev)
{
  GPtrArray *a = g_ptr_array_new ();
  for (guint i = 0; sets[i] != NULL; i++)
    if (prev == NULL || !g_strv_contains ((const char *const *) prev, sets[i]))
      g_ptr_array_add (a, sets[i]);
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

/* Runs one step unless it changes nothing — every override it adds to the step before
 * `prev` (NULL for none) already holds in the scenario; TRUE when it fits. */
static gboolean
try_step (Ctx *ctx, GKeyFile *kf, const StackStep *s, const StackStep *prev, const char *mixed,
          gint *first_fit)
{
  char **sets = step_sets (s, mixed);
  g_auto (GStrv) before = prev != NULL ? step_sets (prev, mixed) : NULL;
  g_autofree char **added = added_sets (sets, before);
  if (already_set (kf, added))
    {
      g_strfreev (sets);
      return FALSE;
    }
  guint i = cli_fit_evaluate (ctx, s->label, sets);
  if (!cli_fit_fits_at (ctx, i))
    return FALSE;
  if (*first_fit < 0)
    *first_fit = (gint) i;
  return TRUE;
}

/* The scenario file's [baseline] overrides, simulated outside the candidate list. */
static double
baseline_tokens (Ctx *ctx)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_auto (GStrv) keys = NULL;
  if (cli_input_load_keyfile (kf, ctx->path, NULL))
    keys = g_key_file_get_keys (kf, "baseline", NULL, NULL);
  if (keys == NULL || keys[0] == NULL)
    return NAN;
  GPtrArray *a = g_ptr_array_new ();
  for (guint i = 0; keys[i] != NULL; i++)
    {
      g_autofree char *v = g_key_file_get_value (kf, "baseline", keys[i], NULL);
      g_ptr_array_add (a, g_strdup_printf ("%s=%s", keys[i], g_strstrip (v)));
    }
  g_ptr_array_add (a, NULL);
  CliFitCandidate c = { .sets = (char **) g_ptr_array_free (a, FALSE), .tokens_per_s = NAN };
  cli_fit_simulate (ctx, &c);
  double t = c.tokens_per_s;
  g_strfreev (c.sets);
  g_free (c.reason);
  return t;
}

void
cli_fit_search_stack (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_key_file_load_from_data (kf, sc->text, (gsize) -1, G_KEY_FILE_NONE, NULL);
  const char *mixed = sc->node.gpu->peak_flops[HW_DTYPE_BF16] > 0
                          ? "training.precision=bf16_mixed" : "training.precision=fp16_mixed";
  gint first = -1;
  /* ZeRO shards over data-parallel ranks: on one GPU its stages change nothing, so they
   * are not tried there (offload still is: it works on one GPU, as ZeRO-Offload). */
  gboolean one_gpu = sc->node.n_gpus * sc->n_nodes == 1;
  for (guint s = 0; s < G_N_ELEMENTS (stack_steps); s++)
    {
      if (one_gpu && g_str_has_prefix (stack_steps[s].label, "+ ZeRO-"))
        continue;
      if (try_step (ctx, kf, &stack_steps[s], s > 0 ? &stack_steps[s - 1] : NULL, mixed, &first)
          && !opt->all)
        break;
    }
  for (guint s = 0; opt->allow_finetune && s < G_N_ELEMENTS (finetune_steps); s++)
    if ((first < 0 || opt->all)
        && try_step (ctx, kf, &finetune_steps[s], NULL, mixed, &first) && !opt->all)
      break;
  ctx->report->best = first;
  ctx->report->baseline_tokens = baseline_tokens (ctx);
  if (isnan (ctx->report->baseline_tokens) && ctx->report->candidates->len > 0)
    ctx->report->baseline_tokens = cli_fit_report_candidate (ctx->report, 0)->tokens_per_s;
}

