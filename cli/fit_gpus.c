/* cli/fit_gpus.c — `fit --for gpus`: the fewest GPUs that fit, and when none does, why.
 *
 * Data parallelism replicates the step on every GPU: micro_batch is per GPU, so activations
 * and workspace stay what they are on one GPU, and only the states the data-parallel mode
 * shards shrink, as 1/N (ZeRO, Rajbhandari et al. 2020, arXiv 1910.02054, §5 and Figure 1:
 * ZeRO-1 shards optimizer states, ZeRO-2 also gradients, ZeRO-3 / FSDP full_shard also the
 * parameters; DDP nothing; hybrid_shard only within a node). So per-GPU memory follows
 * m(N) = floor + shardable / N, and as N grows it tends to the floor: when the floor is above
 * the capacity, no number of data-parallel GPUs fits. The floor is fitted through the
 * smallest and the largest GPU count the search simulated (device-used memory of the worst
 * rank, the quantity the verdict compares with the capacity), per category too (the peak's
 * allocated bytes; the rest is the allocator's cache and the CUDA context): an estimate (allocator rounding, buffers sized by the
 * rank count), printed with "~"; with nothing sharded (ddp, no_shard) it is m itself.
 */
#include "config.h"
#include "cli/fit-private.h"

#include <math.h>
#include <string.h>
#include "models/parallel.h"
#include "sim/units.h"

/* GPU count of a gpus candidate (its first two overrides: gpus_per_node, nodes). */
static guint64
gpus_of (const CliFitCandidate *c)
{
  guint64 per_node = g_ascii_strtoull (strchr (c->sets[0], '=') + 1, NULL, 10);
  guint64 nodes = g_ascii_strtoull (strchr (c->sets[1], '=') + 1, NULL, 10);
  return per_node * nodes;
}

static char *
gib (double b)
{
  return sim_units_format (b, SIM_DIM_BYTES, 2);
}

/* The floor's largest categories, "activations 40.1 GiB, workspace 9.3 GiB". */
static char *
floor_parts (const CliFitNotes *n)
{
  GString *s = g_string_new (NULL);
  gboolean used[MODEL_N_MEM] = { FALSE };
  double rest = n->floor;
  for (guint c = 0; c < MODEL_N_MEM; c++)
    rest -= n->floor_mix[c];
  for (guint k = 0; k < 3; k++)
    {
      gint top = -1;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        if (!used[c] && n->floor_mix[c] > 0.01 * n->floor
            && (top < 0 || n->floor_mix[c] > n->floor_mix[top]))
          top = (gint) c;
      if (top < 0)
        break;
      used[top] = TRUE;
      g_autofree char *b = gib (n->floor_mix[top]);
      g_string_append_printf (s, "%s%s %s", s->len > 0 ? ", " : "",
                              model_ledger_category_name ((ModelMemCategory) top), b);
    }
  if (rest > 0.01 * n->floor)
    {
      g_autofree char *b = gib (rest);
      g_string_append_printf (s, ", allocator cache and CUDA context %s", b);
    }
  return g_string_free (s, FALSE);
}

/* What would lower the floor, given what the scenario already does. */
static char *
advice (const CliFitNotes *n, const CliScenario *sc)
{
  double act = n->floor_mix[MODEL_MEM_ACTIVATIONS] + n->floor_mix[MODEL_MEM_WORKSPACE];
  double states = n->floor_mix[MODEL_MEM_WEIGHTS] + n->floor_mix[MODEL_MEM_MASTER_WEIGHTS]
                  + n->floor_mix[MODEL_MEM_GRADIENTS] + n->floor_mix[MODEL_MEM_OPTIMIZER_STATE];
  const ModelStack *s = &sc->stack;
  guint stage = model_parallel_stage (&sc->par);
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  if (act > 0.1 * n->floor && s->checkpointing != MODEL_CHECKPOINTING_FULL
      && s->checkpointing != MODEL_CHECKPOINTING_SQRT)
    g_ptr_array_add (a, g_strdup ("activation checkpointing (training.checkpointing = full)"));
  if (act > 0.1 * n->floor && s->offload.activations == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("activation offload (offload.activations = cpu)"));
  if (act > 0.1 * n->floor)
    g_ptr_array_add (a, g_strdup ("a smaller micro_batch or seq_len (activations are per GPU)"));
  if (states > 0.1 * n->floor && (stage < 3 || sc->par.mode == MODEL_DP_FSDP_HYBRID_SHARD))
    g_ptr_array_add (a, g_strdup ("a sharded data_parallel mode (zero3 or fsdp_full_shard shard "
                                  "weights, gradients and optimizer states over all GPUs)"));
  if (states > 0.1 * n->floor && s->offload.optimizer == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("optimizer offload (offload.optimizer = cpu)"));
  if (states > 0.1 * n->floor && stage >= 3 && s->offload.parameters == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("parameter offload (offload.parameters = cpu)"));
  g_ptr_array_add (a, g_strdup ("model parallelism (tensor or pipeline parallel, which split "
                                "each layer's weights and activations: not yet available in "
                                "stepsim)"));
  g_ptr_array_add (a, NULL);
  g_autofree char *list = g_strjoinv ("; ", (char **) a->pdata);
  g_ptr_array_unref (a);
  return g_strdup_printf ("what would help: %s", list);
}

/* The floor through the smallest and the largest GPU count simulated; why nothing fits and
 * what would help. */
static void
explain (Ctx *ctx, const CliScenario *sc)
{
  CliFitNotes *n = &ctx->report->notes;
  const CliFitCandidate *c1 = NULL, *c2 = NULL;
  for (guint i = 0; i < ctx->report->candidates->len; i++)
    {
      const CliFitCandidate *c = cli_fit_report_candidate (ctx->report, i);
      if (c->status == CLI_FIT_INFEASIBLE || isnan (c->peak_allocated))
        continue;
      if (c1 == NULL || gpus_of (c) < gpus_of (c1))
        c1 = c;
      if (c2 == NULL || gpus_of (c) > gpus_of (c2))
        c2 = c;
    }
  if (c1 == NULL)
    return;
  gboolean sharded = model_parallel_stage (&sc->par) > 0;
  double m1 = c1->device_used, m2 = c2->device_used;
  double n1 = (double) gpus_of (c1), n2 = (double) gpus_of (c2);
  n->capacity = c2->capacity;
  n->floor_n1 = (guint) n1;
  n->floor_n2 = (guint) n2;
  if (!sharded || n2 == n1)
    {
      if (sharded) /* one count only: the floor is not known */
        return;
      n->floor = m2, n->shardable = 0;
      memcpy (n->floor_mix, c2->peak_mix, sizeof n->floor_mix);
    }
  else
    {
      /* m(N) = F + S/N through (n1, m1) and (n2, m2): F = (n2 m2 − n1 m1) / (n2 − n1) */
      n->floor = MAX ((n2 * m2 - n1 * m1) / (n2 - n1), c2->cuda_context);
      n->shardable = MAX ((m1 - n->floor) * n1, 0);
      for (guint k = 0; k < MODEL_N_MEM; k++)
        n->floor_mix[k] = MAX ((n2 * c2->peak_mix[k] - n1 * c1->peak_mix[k]) / (n2 - n1), 0);
    }
  g_autofree char *fl = gib (n->floor), *cap = gib (n->capacity), *parts = floor_parts (n);
  const char *mode = model_parallel_mode_name (sc->par.mode);
  if (n->floor >= n->capacity)
    {
      g_autofree char *how = sharded
        ? g_strdup_printf ("fitted as floor + shardable / N through %u and %u GPUs",
                           n->floor_n1, n->floor_n2)
        : g_strdup ("nothing is sharded, every GPU holds all of it");
      n->why = g_strdup_printf (
        "adding data-parallel GPUs cannot help: as their number grows the memory per GPU "
        "tends to ~%s under data_parallel = %s (%s; %s), above the capacity %s", fl, mode,
        parts, how, cap);
      n->advice = advice (n, sc);
    }
  else if (sharded && n->shardable > 0)
    {
      /* F + S/N <= capacity ⇔ N >= S / (capacity − F) */
      n->gpus_predicted = (guint64) ceil (n->shardable / (n->capacity - n->floor));
      g_autofree char *sh = gib (n->shardable);
      n->why = g_strdup_printf (
        "beyond the searched range: the memory per GPU under data_parallel = %s is ~%s + %s / N "
        "(fitted through %u and %u GPUs), so about %" G_GUINT64_FORMAT " GPUs would fit (an "
        "estimate: the allocator rounds; raise --max-gpus-per-node or --max-nodes to check)", mode, fl, sh, n->floor_n1,
        n->floor_n2, n->gpus_predicted);
    }
}

void
cli_fit_search_gpus (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt)
{
  Probe p = { ctx, NULL, NULL, 0, 0, NULL, NULL, NULL };
  guint g = opt->max_gpus_per_node;
  guint64 n = cli_fit_smallest (1, g, cli_fit_probe_fits, &p);
  g_autofree char *label = NULL;
  if (n > 0)
    label = g_strdup_printf ("gpus_per_node=%" G_GUINT64_FORMAT ", nodes=1", n);
  else if (opt->max_nodes >= 2)
    {
      p.per_node = g;
      guint64 m = cli_fit_smallest (2, opt->max_nodes, cli_fit_probe_fits, &p);
      if (m > 0)
        {
          label = g_strdup_printf ("gpus_per_node=%u, nodes=%" G_GUINT64_FORMAT, g, m);
          n = m * g;
        }
    }
  ctx->report->value = n;
  ctx->report->best = label != NULL ? cli_fit_find_label (ctx->report, label) : -1;
  if (ctx->report->best < 0)
    explain (ctx, sc);
}
