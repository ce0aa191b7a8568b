/* cli/study/fit_gpus.c — `fit --for gpus`: the fewest GPUs that fit, and when none does, why.
 *
 * Data parallelism replicates the step on every GPU: micro_batch is per GPU, so activations
 * and workspace stay what they are on one GPU, and only the states the data-parallel mode
 * shards shrink, as 1/N (ZeRO, Rajbhandari et al. 2020, arXiv 1910.02054, §5 and Figure 1:
 * ZeRO-1 shards optimizer states, ZeRO-2 also gradients, ZeRO-3 / FSDP full_shard also the
 * parameters; DDP nothing; hybrid_shard only within a node). So per-GPU memory follows
 * m(N) = floor + shardable / N, and as N grows it tends to the floor: when the floor is above
 * the capacity, no number of data-parallel GPUs fits. The floor is fitted per part through
 * the smallest and the largest GPU count the search simulated: each ledger category at the
 * worst rank's peak, the allocator's cache (device used − CUDA context − allocated) and the
 * CUDA context, each F_k + S_k/N with F_k clamped to [0, the part at the largest count]; the
 * floor is their sum (so the parts printed sum to it). An estimate (allocator rounding,
 * buffers sized by the rank count), printed with "~"; with nothing sharded (ddp, no_shard)
 * it is m itself, as under a [parallel] dp_shard the scenario fixes (more GPUs add replicas,
 * HSDP, not shards). A sharded fit through two counts cannot separate what shards from what
 * does not, so "cannot help" is said only from three counts on (one more is simulated when
 * the range has room); otherwise the note says the range was too small to tell.
 */
#include "config.h"
#include "cli/study/fit-private.h"

#include <math.h>
#include <string.h>
#include "models/parallel/parallel.h"
#include "sim/arith.h"
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

/* Every part of the floor, largest first, "activations 40.1 GiB, workspace 9.3 GiB, allocator
 * cache 1.2 GiB, CUDA context 0.5 GiB": the parts sum to the floor (nothing is left out; parts
 * under 1 MiB are not listed). */
static char *
floor_parts (const CliFitNotes *n)
{
  GString *s = g_string_new (NULL);
  gboolean used[MODEL_N_MEM] = { FALSE };
  for (;;)
    {
      gint top = -1;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        if (!used[c] && n->floor_mix[c] >= 1024.0 * 1024
            && (top < 0 || n->floor_mix[c] > n->floor_mix[top]))
          top = (gint) c;
      if (top < 0)
        break;
      used[top] = TRUE;
      g_autofree char *b = gib (n->floor_mix[top]);
      g_string_append_printf (s, "%s%s %s", s->len > 0 ? ", " : "",
                              model_ledger_category_name ((ModelMemCategory) top), b);
    }
  const double extra[] = { n->floor_cache, n->floor_context };
  const char *name[] = { "allocator cache", "CUDA context" };
  for (guint k = 0; k < 2; k++)
    if (extra[k] >= 1024.0 * 1024)
      {
        g_autofree char *b = gib (extra[k]);
        g_string_append_printf (s, "%s%s %s", s->len > 0 ? ", " : "", name[k], b);
      }
  if (s->len == 0)
    g_string_append (s, "no part above 1 MiB");
  return g_string_free (s, FALSE);
}

/* What would lower the floor, given what the scenario already does. Per-GPU activation
 * remedies are offered only when the model states (weights, master weights, gradients,
 * optimizer states) and the CUDA context leave room under the capacity: otherwise removing
 * every activation byte still does not fit. */
static char *
advice (const CliFitNotes *n, const CliScenario *sc)
{
  double act = n->floor_mix[MODEL_MEM_ACTIVATIONS] + n->floor_mix[MODEL_MEM_WORKSPACE];
  double states = n->floor_mix[MODEL_MEM_WEIGHTS] + n->floor_mix[MODEL_MEM_MASTER_WEIGHTS]
                  + n->floor_mix[MODEL_MEM_GRADIENTS] + n->floor_mix[MODEL_MEM_OPTIMIZER_STATE];
  gboolean act_can_help = act > 0.1 * n->floor && states + n->floor_context < n->capacity;
  const ModelStack *s = &sc->stack;
  guint stage = model_parallel_stage (&sc->par);
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  if (act_can_help && s->checkpointing != MODEL_CHECKPOINTING_FULL
      && s->checkpointing != MODEL_CHECKPOINTING_SQRT)
    g_ptr_array_add (a, g_strdup ("activation checkpointing (training.checkpointing = full)"));
  if (act_can_help && s->offload.activations == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("activation offload (offload.activations = cpu)"));
  if (act_can_help)
    g_ptr_array_add (a, g_strdup ("a smaller micro_batch or seq_len (activations are per GPU)"));
  if (states > 0.1 * n->floor && (stage < 3 || sc->par.mode == MODEL_DP_FSDP_HYBRID_SHARD))
    g_ptr_array_add (a, g_strdup ("a sharded data_parallel mode (zero3 or fsdp_full_shard shard "
                                  "weights, gradients and optimizer states over all GPUs)"));
  if (states > 0.1 * n->floor && stage > 0 && sc->par.dp_shard > 0)
    g_ptr_array_add (a, g_strdup_printf ("a larger shard group than parallel.dp_shard = %u (or "
                                         "none: the mode shards over every GPU)",
                                         sc->par.dp_shard));
  if (states > 0.1 * n->floor && s->offload.optimizer == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("optimizer offload (offload.optimizer = cpu)"));
  if (states > 0.1 * n->floor && stage >= 3 && s->offload.parameters == MODEL_OFFLOAD_NONE)
    g_ptr_array_add (a, g_strdup ("parameter offload (offload.parameters = cpu)"));
  /* Tensor parallelism splits each layer's weights, gradients, optimizer states and (with
   * sequence parallelism) activations over the tp ranks of a node (Korthikanti et al. 2022
   * §4): it helps either kind of floor. Pipeline parallelism splits the layers (and their
   * states) over stages across nodes (models/plan/plan_pp.c). */
  if (sc->par.tp <= 1)
    g_ptr_array_add (a, g_strdup ("tensor parallelism (parallel.tp = 2..8 inside a node, with "
                                  "parallel.sequence_parallel = true: splits each layer's "
                                  "weights and activations over the tp GPUs)"));
  else
    g_ptr_array_add (a, g_strdup_printf ("a larger tensor-parallel degree than parallel.tp = %u "
                                         "(as far as the heads and the node allow)",
                                         sc->par.tp));
  if (sc->par.pp <= 1)
    g_ptr_array_add (a, g_strdup ("pipeline parallelism (parallel.pp = 2.. across nodes: each "
                                  "stage holds its layers' weights, gradients and optimizer "
                                  "states)"));
  else
    g_ptr_array_add (a, g_strdup_printf ("more pipeline stages than parallel.pp = %u",
                                         sc->par.pp));
  g_ptr_array_add (a, NULL);
  g_autofree char *list = g_strjoinv ("; ", (char **) a->pdata);
  g_ptr_array_unref (a);
  if (act > 0.1 * n->floor && !act_can_help)
    {
      g_autofree char *st = gib (states + n->floor_context);
      return g_strdup_printf ("what would help: %s (not activation remedies: the model states "
                              "and CUDA context alone take %s per GPU)", list, st);
    }
  return g_strdup_printf ("what would help: %s", list);
}

/* A candidate's parts: the ledger categories at the worst rank's peak, then the allocator's
 * cache (device used − CUDA context − allocated) and the CUDA context; they sum to device_used. */
#define N_PARTS (MODEL_N_MEM + 2)
static void
parts_of (const CliFitCandidate *c, double p[N_PARTS])
{
  double alloc = 0;
  for (guint k = 0; k < MODEL_N_MEM; k++)
    p[k] = c->peak_mix[k], alloc += p[k];
  p[MODEL_N_MEM] = MAX (c->device_used - c->cuda_context - alloc, 0);
  p[MODEL_N_MEM + 1] = c->cuda_context;
}

/* The floor, per part, through the smallest and the largest GPU count simulated; why nothing
 * fits and what would help. */
static void
explain (Ctx *ctx, const CliScenario *sc)
{
  CliFitNotes *n = &ctx->report->notes;
  const CliFitCandidate *c1 = NULL, *c2 = NULL;
  guint counts = 0;
  for (guint i = 0; i < ctx->report->candidates->len; i++)
    {
      const CliFitCandidate *c = cli_fit_report_candidate (ctx->report, i);
      if (c->status == CLI_FIT_INFEASIBLE || isnan (c->peak_allocated))
        continue;
      counts++; /* each GPU count is simulated at most once */
      if (c1 == NULL || gpus_of (c) < gpus_of (c1))
        c1 = c;
      if (c2 == NULL || gpus_of (c) > gpus_of (c2))
        c2 = c;
    }
  if (c1 == NULL)
    return;
  /* [parallel] dp_shard given: the shard group is that many GPUs whatever the count, so more
   * GPUs add replicas (HSDP), not shards, and the memory per GPU is the same at every count */
  gboolean fixed_group = sc->par.dp_shard > 0 && model_parallel_stage (&sc->par) > 0;
  gboolean sharded = model_parallel_stage (&sc->par) > 0 && !fixed_group;
  double n1 = (double) gpus_of (c1), n2 = (double) gpus_of (c2);
  double p1[N_PARTS], p2[N_PARTS], f[N_PARTS];
  parts_of (c1, p1);
  parts_of (c2, p2);
  n->capacity = c2->capacity;
  n->floor_n1 = (guint) n1;
  n->floor_n2 = (guint) n2;
  n->floor_counts = counts;
  n->floor_credible = !sharded || counts >= 3;
  if (sharded && n2 == n1) /* one count only: the floor is not known */
    return;
  n->floor = 0, n->shardable = 0;
  for (guint k = 0; k < N_PARTS; k++)
    {
      if (!sharded)
        f[k] = p2[k];
      else
        {
          /* p_k(N) = F_k + S_k/N through (n1, p1_k) and (n2, p2_k): F_k = (n2 p2_k − n1 p1_k) /
           * (n2 − n1), within [0, p2_k] (a part cannot go negative, nor grow past what the
           * largest count holds, as N grows) */
          f[k] = (n2 * p2[k] - n1 * p1[k]) / (n2 - n1);
          f[k] = CLAMP (f[k], 0, p2[k]);
          n->shardable += MAX ((p1[k] - f[k]) * n1, 0);
        }
      n->floor += f[k];
    }
  memcpy (n->floor_mix, f, sizeof n->floor_mix);
  n->floor_cache = f[MODEL_N_MEM];
  n->floor_context = f[MODEL_N_MEM + 1];
  g_autofree char *fl = gib (n->floor), *cap = gib (n->capacity), *parts = floor_parts (n);
  const char *mode = model_parallel_mode_name (sc->par.mode);
  if (n->floor >= n->capacity && n->floor_credible)
    {
      g_autofree char *how = sharded
        ? g_strdup_printf ("fitted as floor + shardable / N per part through %u and %u GPUs, "
                           "%u GPU counts simulated", n->floor_n1, n->floor_n2, counts)
        : fixed_group
            ? g_strdup_printf ("[parallel] dp_shard = %u fixes the shard group: more GPUs add "
                               "replicas, not shards", sc->par.dp_shard)
            : g_strdup ("nothing is sharded, every GPU holds all of it");
      n->why = g_strdup_printf (
        "adding data-parallel GPUs cannot help: as their number grows the memory per GPU "
        "tends to ~%s under data_parallel = %s (%s; %s), above the capacity %s", fl, mode,
        parts, how, cap);
      n->advice = advice (n, sc);
    }
  else if (n->floor >= n->capacity)
    {
    g_autofree char *sh = gib (n->shardable);
    n->why = g_strdup_printf (
      "the searched range (%u to %u GPUs, %u counts) is too small to tell whether more "
      "data-parallel GPUs would help: a fit through %u and %u GPUs puts the memory per GPU "
      "under data_parallel = %s at ~%s + %s / N (%s), a floor above the capacity %s, but %u "
      "counts cannot separate what shards from what does not; raise --max-gpus-per-node or "
      "--max-nodes to check", n->floor_n1, n->floor_n2, counts, n->floor_n1, n->floor_n2,
      mode, fl, sh, parts, cap, counts);
    }
  else if (sharded && n->shardable > 0)
    {
      /* F + S/N <= capacity ⇔ N >= S / (capacity − F) */
      n->gpus_predicted = (guint64) ceil (n->shardable / (n->capacity - n->floor));
      g_autofree char *sh = gib (n->shardable);
      n->why = g_strdup_printf (
        "beyond the searched range: the memory per GPU under data_parallel = %s is ~%s + %s / N "
        "(%s; fitted through %u and %u GPUs, %u counts simulated), so about %" G_GUINT64_FORMAT
        " GPUs would fit (an estimate%s: the allocator rounds; raise --max-gpus-per-node or "
        "--max-nodes to check)", mode, fl, sh, parts, n->floor_n1, n->floor_n2, counts,
        n->gpus_predicted, n->floor_credible ? "" : ", rough from so few counts");
    }
}

void
cli_fit_search_gpus (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt)
{
  Probe p = { ctx, NULL, NULL, 0, 0, NULL, NULL, NULL, 0, 0 };
  /* Every GPU count tried keeps the scenario's layout: pp stages of GPUs that tp·cp divide
   * (the data-parallel degree GPUs / (tp·cp·pp) whole) and that ep·etp divide (the expert
   * grid carved out of a stage, models/parallel/parallel.h), so a multiple of
   * unit = pp · lcm(tp·cp, ep·etp). Fill the scenario's node first (a 72-GPU NVLink rack
   * before the network) in steps of unit (tp 8 on a 72-GPU rack: 8, 16, …, 72); when unit
   * is above a node, nodes in steps that make whole units (tp 8 × pp 8 on 8-GPU nodes: 8,
   * 16, … nodes); a bisection over counts that cannot run would read them as "does not
   * fit" and miss the answer. */
  guint g = opt->max_gpus_per_node > 0 ? opt->max_gpus_per_node : MAX (sc->node.n_gpus, 8);
  guint64 unit = cli_fit_layout_unit (sc);
  guint64 n = 0;
  if (unit <= g)
    {
      p.gpu_step = (guint) unit;
      n = cli_fit_smallest (1, g / unit, cli_fit_probe_fits, &p) * unit;
    }
  g_autofree char *label = NULL;
  if (n > 0)
    label = g_strdup_printf ("gpus_per_node=%" G_GUINT64_FORMAT ", nodes=1", n);
  else if (opt->max_nodes >= 2)
    {
      /* with pods ([cluster] nodes_per_pod P) a cluster is up to one pod of nodes or whole
       * pods (hardware/cluster_spec.h): nodes 2..P first, then 2, 3, … pods of P nodes;
       * either in steps of s nodes, the fewest that hold whole units */
      guint64 s = unit / sim_gcd64 (unit, g);
      guint pod = sc->fabric.nodes_per_pod;
      guint64 first = pod >= 2 && pod < opt->max_nodes ? pod : opt->max_nodes;
      p.per_node = g;
      p.node_step = (guint) s;
      guint64 lo = s > 1 ? 1 : 2;
      guint64 m = first / s >= lo ? cli_fit_smallest (lo, first / s, cli_fit_probe_fits, &p) * s
                                  : 0;
      if (m == 0 && first < opt->max_nodes && opt->max_nodes / pod >= 2)
        {
          guint64 step = pod / sim_gcd64 (pod, s) * s; /* whole pods of whole units */
          lo = step > pod ? 1 : 2;
          p.node_step = (guint) step;
          if (opt->max_nodes / step >= lo)
            m = cli_fit_smallest (lo, opt->max_nodes / step, cli_fit_probe_fits, &p) * step;
        }
      if (m > 0)
        {
          label = g_strdup_printf ("gpus_per_node=%u, nodes=%" G_GUINT64_FORMAT, g, m);
          n = m * g;
        }
    }
  ctx->report->value = n;
  ctx->report->best = label != NULL ? cli_fit_find_label (ctx->report, label) : -1;
  if (ctx->report->best < 0 && model_parallel_stage (&sc->par) > 0 && sc->par.dp_shard == 0)
    {
      /* a sharded floor through two counts cannot tell what shards from what does not: one
       * more count in the range, the middle one on one node, where the search left it out */
      guint counts = 0;
      for (guint i = 0; i < ctx->report->candidates->len; i++)
        {
          const CliFitCandidate *c = cli_fit_report_candidate (ctx->report, i);
          counts += c->status != CLI_FIT_INFEASIBLE && !isnan (c->peak_allocated);
        }
      if (counts < 3 && g >= 3 && (g / 2 > 1 ? g / 2 : 2) % unit == 0)
        {
          Probe q = { ctx, NULL, NULL, 0, 0, NULL, NULL, NULL, 0, 0 };
          (void) cli_fit_probe_fits (g / 2 > 1 ? g / 2 : 2, &q);
        }
    }
  if (ctx->report->best < 0)
    explain (ctx, sc);
}
