/* cli/study/fit_cost.c — `stepsim fit SCENARIO --for cost --deadline 30d [--gpus A,B]
 * [--max-gpus N] [--allow-finetune] [--set …]`: the cheapest GPU type, GPU count and
 * technique stack whose step fits in memory and whose training run ([plan], cli/report/training.h)
 * finishes within the deadline, priced by the scenario's [cost] (gpu_hour.TYPE keys price
 * each GPU type).
 *
 * Search. For each GPU type (--gpus, default the scenario's own), a node of that GPU: the
 * first catalog node built of it when the scenario names a `node` (DGX-H100 for H100-SXM),
 * else `cluster.gpu`. GPU counts: 1, 2, 4, … below the node's GPUs, the whole node, then 2,
 * 4, … such nodes, at most --max-gpus (default 64), each a multiple of the layout's unit
 * (cli_fit_layout_unit: u, 2u, 4u, … and whole nodes in steps that hold whole units).
 * Stacks: the candidates of `fit --for stack` (cli_fit_stack_candidates). Every stack is
 * simulated at every count: cost is not monotone in the count (more GPUs add communication,
 * so GPU-hours usually grow, but a node_hour price bills the whole node, the data-parallel
 * collectives' share of the step changes with the count, and a larger count can leave more
 * memory for a faster stack), so no bound prunes the search; a few counts per type keep it
 * short.
 * Every candidate simulated is printed with its verdict and why it lost.
 * The command's options are parsed in cli/cmd_fit.c (cli_cmd_fit_cost), which prints the
 * message this search returns.
 */
#include "config.h"
#include "cli/study/fit_cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/report/error_band.h"
#include "cli/study/fit-private.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep.h"
#include "cli/report/training.h"
#include "hardware/catalog.h"
#include "hardware/cluster_spec.h"
#include "hardware/node_catalog.h"
#include "sim/arith.h"
#include "sim/units.h"

typedef enum
{
  COST_MEETS,
  COST_LATE,     /* fits, misses the deadline */
  COST_OOM,
  COST_REJECTED, /* the loader or simulator refused it */
} CostStatus;

typedef struct
{
  char *label;
  const char *gpu;   /* catalog name (static) */
  guint n_gpus;
  CostStatus status;
  gboolean has_cost;
  gboolean fallback_price; /* priced by the scenario's gpu_hour / node_hour, not by one for
                            * its type (gpu_hour.TYPE) */
  double time, cost; /* s, currency; NaN unless estimated */
  char *reason;      /* OOM or rejection message */
} CostCandidate;

typedef struct
{
  const CliScenario *base; /* the scenario as given (its stack decides the stack steps) */
  const char *path;
  char **sets;        /* the caller's --set */
  double deadline;    /* s */
  guint max_gpus;
  gboolean allow_finetune;
  gboolean uses_node; /* the scenario's [cluster] names a node */
  GPtrArray *cands;   /* CostCandidate * */
  GHashTable *seen;   /* resolved scenario text → its candidate (borrowed), looked up only */
  char currency[4];
} CostSearch;

static void
cand_free (gpointer p)
{
  CostCandidate *c = p;
  g_free (c->label);
  g_free (c->reason);
  g_free (c);
}

/* The first catalog node whose GPU is `gpu`, or NULL. */
static const HwNodeSpec *
node_of (const HwGpuSpec *gpu)
{
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    if (strcmp (hw_catalog_node_at (i)->gpu->name, gpu->name) == 0)
      return hw_catalog_node_at (i);
  return NULL;
}

/* The hardware overrides for `n` GPUs of type `gpu` (per_node of them per node). */
static void
hardware_sets (const CostSearch *s, const HwGpuSpec *gpu, const HwNodeSpec *node,
               guint per_node, guint n, GStrvBuilder *b)
{
  guint gpn = MIN (n, per_node);
  g_autofree char *hw = s->uses_node ? g_strdup_printf ("cluster.node=%s", node->name)
                                     : g_strdup_printf ("cluster.gpu=%s", gpu->name);
  g_autofree char *g = g_strdup_printf ("cluster.gpus_per_node=%u", gpn);
  g_autofree char *nn = g_strdup_printf ("cluster.nodes=%u", n / gpn);
  g_strv_builder_add (b, hw);
  g_strv_builder_add (b, g);
  g_strv_builder_add (b, nn);
}

/* Loads and simulates one candidate; appends it and returns it. */
static CostCandidate *
evaluate (CostSearch *s, const HwGpuSpec *gpu, const HwNodeSpec *node, guint per_node, guint n,
          const CliFitStackCandidate *stack)
{
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  if (s->sets != NULL)
    g_strv_builder_addv (b, (const char **) s->sets);
  hardware_sets (s, gpu, node, per_node, n, b);
  g_strv_builder_addv (b, (const char **) stack->sets);
  g_auto (GStrv) sets = g_strv_builder_end (b);
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (s->path, (const char *const *) sets, &error);
  /* A stack step that changes nothing here (mixed precision on a bf16 scenario) is the
   * same scenario: simulated and listed once. */
  g_autofree char *text = sc != NULL ? cli_scenario_text (sc) : NULL;
  CostCandidate *same = sc != NULL ? g_hash_table_lookup (s->seen, text) : NULL;
  if (same != NULL)
    return same;
  CostCandidate *c = g_new0 (CostCandidate, 1);
  c->label = g_strdup_printf ("%s x%u, %s", gpu->name, n, stack->label);
  c->gpu = gpu->name;
  c->n_gpus = n;
  c->time = c->cost = NAN;
  g_ptr_array_add (s->cands, c);
  if (sc != NULL)
    g_hash_table_insert (s->seen, g_steal_pointer (&text), c);
  ModelSimResult r = { 0 };
  if (sc == NULL || !cli_scenario_simulate (sc, NULL, &r, &error))
    {
      c->status = COST_REJECTED;
      c->reason = g_strdup (error->message);
      return c;
    }
  CliTrainingEstimate e;
  cli_training_estimate (sc, &r, &e);
  if (!r.fits)
    {
      /* the need and the shortfall, as run and fit --for gpus say them: device-used is
       * capped at the capacity after an OOM */
      c->status = COST_OOM;
      c->reason = cli_fit_oom_reason (&r);
    }
  else
    {
      c->time = e.time;
      c->has_cost = e.has_cost;
      c->fallback_price = e.has_cost && !sc->plan.price_for_type;
      c->cost = e.has_cost ? e.cost : NAN;
      c->status = e.time <= s->deadline ? COST_MEETS : COST_LATE;
      if (e.has_cost)
        memcpy (s->currency, sc->plan.currency, sizeof s->currency);
      else
        c->reason = g_strdup_printf ("no [cost] price for %s (add gpu_hour or gpu_hour.%s)",
                                     gpu->name, gpu->name);
    }
  model_sim_result_clear (&r);
  return c;
}

static gboolean
good (const CostCandidate *c)
{
  return c->status == COST_MEETS && c->has_cost;
}

/* One GPU type: every stack at every GPU count (see the file comment). */
static void
search_gpu (CostSearch *s, const HwGpuSpec *gpu)
{
  const HwNodeSpec *node = node_of (gpu);
  guint per_node = s->uses_node ? (node != NULL ? node->n_gpus : 0) : 8;
  if (per_node == 0)
    {
      CostCandidate *c = g_new0 (CostCandidate, 1);
      c->label = g_strdup_printf ("%s (any count)", gpu->name);
      c->status = COST_REJECTED;
      c->time = c->cost = NAN;
      c->reason = g_strdup_printf ("no catalog node is built of %s (the scenario names a node; "
                                   "see stepsim list nodes)", gpu->name);
      g_ptr_array_add (s->cands, c);
      return;
    }
  /* u, 2u, 4u, … below a node, the whole node, then 2, 4, … such nodes: a 72-GPU rack gives
   * …, 32, 64, 72, 144, … (not only powers of two, which never reach whole racks); u is the
   * layout's unit (cli_fit_layout_unit, 1 without model parallelism), and whole nodes
   * go in steps of the fewest that hold whole units (tp 8 × pp 3 on 8-GPU nodes: 3, 6, 12,
   * … nodes), so that every count can run the scenario's layout */
  guint64 unit = cli_fit_layout_unit (s->base);
  g_autoptr (GArray) counts = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint64 n = unit; n < per_node && n <= s->max_gpus; n *= 2)
    {
      guint v = (guint) n;
      g_array_append_val (counts, v);
    }
  guint64 step = unit / sim_gcd64 (unit, per_node);
  for (guint64 n = step * per_node; n <= s->max_gpus; n *= 2)
    {
      guint v = (guint) n;
      g_array_append_val (counts, v);
    }
  if (counts->len == 0)
    {
      CostCandidate *c = g_new0 (CostCandidate, 1);
      c->label = g_strdup_printf ("%s (any count)", gpu->name);
      c->status = COST_REJECTED;
      c->time = c->cost = NAN;
      c->reason = g_strdup_printf ("the scenario's layout needs a multiple of %" G_GUINT64_FORMAT
                                   " GPUs (pp · lcm(tp·cp·dp_shard·dp_replicate, ep·etp)): "
                                   "none within --max-gpus %u", unit, s->max_gpus);
      g_ptr_array_add (s->cands, c);
      return;
    }
  /* Every stack at every count: neither cost nor meeting the deadline is monotone in the
   * count (node_hour bills whole nodes, so a full node can cost less than one GPU of it;
   * the ZeRO collectives' share of the step changes with the count), nor across stacks,
   * so no count or stack is skipped. */
  g_autoptr (GPtrArray) stacks = cli_fit_stack_candidates (s->base, gpu, s->allow_finetune,
                                                           FALSE);
  for (guint k = 0; k < stacks->len; k++)
    for (guint i = 0; i < counts->len; i++)
      (void) evaluate (s, gpu, node, per_node, g_array_index (counts, guint, i),
                       g_ptr_array_index (stacks, k));
}

static const char *
status_word (CostStatus st)
{
  switch (st)
    {
    case COST_MEETS: return "MEETS";
    case COST_LATE: return "LATE";
    case COST_OOM: return "OOM";
    case COST_REJECTED: return "REJECTED";
    }
  return "?";
}

/* Index of the cheapest candidate among those `pick` accepts (ties: fewer GPUs, then
 * faster), or -1. `by_time`: the fastest instead. */
static gint
best_of (const CostSearch *s, gboolean (*pick) (const CostCandidate *), gboolean by_time)
{
  gint best = -1;
  for (guint i = 0; i < s->cands->len; i++)
    {
      const CostCandidate *c = g_ptr_array_index (s->cands, i);
      if (!pick (c))
        continue;
      const CostCandidate *b = best >= 0 ? g_ptr_array_index (s->cands, best) : NULL;
      double key = by_time ? c->time : c->cost, bkey = b ? (by_time ? b->time : b->cost) : 0;
      if (b == NULL || key < bkey
          || (key == bkey && (c->n_gpus < b->n_gpus
                              || (c->n_gpus == b->n_gpus && c->time < b->time))))
        best = (gint) i;
    }
  return best;
}

static gboolean
fits_priced (const CostCandidate *c)
{
  return (c->status == COST_MEETS || c->status == COST_LATE) && c->has_cost;
}

static gboolean
fits_any (const CostCandidate *c)
{
  return c->status == COST_MEETS || c->status == COST_LATE;
}

/* A duration for messages: "1.61 d", "365 d", "36500 d" (whole days from 1000 on: %g read
 * "3.65e+04 d"), or "7.5 h" / "30 min" / "45 s" below a day / an hour / a minute (a 1 s
 * deadline read "0.0167 min"). Caller frees. */
static char *
duration (double sec)
{
  if (sec >= 1000 * 86400.0)
    return g_strdup_printf ("%.0f d", sec / 86400);
  if (sec >= 86400)
    return g_strdup_printf ("%.3g d", sec / 86400);
  if (sec >= 3600)
    return g_strdup_printf ("%.3g h", sec / 3600);
  if (sec >= 60)
    return g_strdup_printf ("%.3g min", sec / 60);
  return g_strdup_printf ("%.3g s", sec);
}

/* Why candidate `c` is not the answer `a` (NULL when it is). Caller frees. */
static char *
why_lost (const CostSearch *s, const CostCandidate *c, const CostCandidate *a)
{
  if (c == a)
    return NULL;
  if (c->reason != NULL)
    return g_strdup (c->reason);
  if (c->status == COST_LATE)
    {
      g_autofree char *t = duration (c->time), *d = duration (s->deadline);
      return g_strdup_printf ("misses the deadline: %s > %s", t, d);
    }
  if (a != NULL)
    return g_strdup_printf ("costs %.0f %s more than the answer (+%.1f %%)", c->cost - a->cost,
                            s->currency, 100 * (c->cost / a->cost - 1));
  return NULL;
}

static void
print_candidate (const CostSearch *s, const CostCandidate *c, const CostCandidate *a)
{
  printf ("%-4s %-9s %-52s %5u", c == a ? "==>" : "", status_word (c->status), c->label,
          c->n_gpus);
  if (isnan (c->time))
    printf (" %10s", "-");
  else
    printf (" %8.2f d", c->time / 86400);
  if (isnan (c->cost))
    printf (" %14s\n", "-");
  else
    printf (" %10.0f %s\n", c->cost, s->currency);
  g_autofree char *why = why_lost (s, c, a);
  if (why != NULL)
    printf ("%-14s %s\n", "", why);
}

/* "priced at the scenario's gpu_hour (no gpu_hour.TYPE): GB200, MI300X" naming the GPU types
 * of priced candidates that no price of their own covers, when there are any: a plan's
 * ranking across types is then only as good as that one price. */
static void
print_fallback_prices (const CostSearch *s)
{
  g_autoptr (GString) types = g_string_new (NULL);
  g_autoptr (GHashTable) named = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < s->cands->len; i++)
    {
      const CostCandidate *c = g_ptr_array_index (s->cands, i);
      if (c->fallback_price && g_hash_table_add (named, (gpointer) c->gpu))
        g_string_append_printf (types, "%s%s", types->len > 0 ? ", " : "", c->gpu);
    }
  if (types->len > 0)
    printf ("  priced at the scenario's gpu_hour or node_hour (no gpu_hour.TYPE for them): %s\n",
            types->str);
}

static void
print_answer (const CostSearch *s, gint answer)
{
  g_autofree char *dl = duration (s->deadline);
  if (answer >= 0)
    {
      const CostCandidate *a = g_ptr_array_index (s->cands, answer);
      g_autofree char *t = duration (a->time);
      printf ("answer: cheapest plan that meets %s = %s: %s, %.0f %s\n", dl, a->label, t,
              a->cost, s->currency);
      g_autofree char *band = cli_error_band_text (a->gpu, CLI_BAND_STEP_TIME);
      printf ("  error band: %s\n", band);
      print_fallback_prices (s);
      return;
    }
  printf ("answer: no plan meets the deadline of %s\n", dl);
  gint fast = best_of (s, fits_any, TRUE), cheap = best_of (s, fits_priced, FALSE);
  if (fast < 0)
    {
      printf ("  nothing simulated fits in memory\n");
      return;
    }
  const CostCandidate *f = g_ptr_array_index (s->cands, fast);
  g_autofree char *ft = duration (f->time);
  printf ("  fastest:  %s: %s", f->label, ft);
  if (f->has_cost)
    printf (", %.0f %s", f->cost, s->currency);
  printf ("\n");
  if (cheap >= 0)
    {
      const CostCandidate *c = g_ptr_array_index (s->cands, cheap);
      g_autofree char *ct = duration (c->time);
      printf ("  cheapest: %s: %.0f %s, %s\n", c->label, c->cost, s->currency, ct);
    }
  print_fallback_prices (s);
}

/* --gpus "A,B": catalog GPUs (or [gpu.NAME] groups of the scenario: not searched, the
 * catalog's nodes are). NULL + a usage message naming the option on an unknown one. */
static GPtrArray *
parse_gpus (const char *list, const CliScenario *sc, char **msg)
{
  GPtrArray *a = g_ptr_array_new ();
  if (list == NULL)
    {
      g_ptr_array_add (a, (gpointer) sc->node.gpu);
      return a;
    }
  g_auto (GStrv) items = g_strsplit (list, ",", -1);
  if (items[0] == NULL)
    {
      *msg = g_strdup ("fit: --gpus: an empty list (name catalog GPUs: "
                       "--gpus H100-SXM,A100-80GB-SXM; stepsim list gpus)");
      g_ptr_array_unref (a);
      return NULL;
    }
  for (guint i = 0; items[i] != NULL; i++)
    {
      g_autoptr (GError) e = NULL;
      const HwGpuSpec *g = hw_catalog_gpu (g_strstrip (items[i]), &e);
      if (g == NULL)
        {
          *msg = g_strdup_printf ("fit: --gpus: %s", e->message);
          g_ptr_array_unref (a);
          return NULL;
        }
      if (g_ptr_array_find (a, g, NULL))
        {
          gboolean alias = g_strcmp0 (items[i], g->name) != 0;
          *msg = g_strdup_printf ("fit: --gpus: '%s' is in the list twice%s%s%s", items[i],
                                  alias ? " (as " : "", alias ? g->name : "", alias ? ")" : "");
          g_ptr_array_unref (a);
          return NULL;
        }
      g_ptr_array_add (a, (gpointer) g);
    }
  return a;
}

int
cli_fit_cost_run (const CliFitCostOptions *opt, char **message)
{
  CostSearch search = { .path = opt->path, .sets = opt->sets, .deadline = opt->deadline,
                        .max_gpus = opt->max_gpus, .allow_finetune = opt->allow_finetune };
  CostSearch *s = &search;
  *message = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (s->path, (const char *const *) s->sets, &error);
  if (sc == NULL)
    return *message = g_strdup (error->message), 1;
  g_autoptr (GPtrArray) types = parse_gpus (opt->gpus, sc, message);
  s->base = sc;
  if (types == NULL)
    return 2;
  if (!sc->plan.given)
    {
      *message = g_strdup_printf ("%s: fit --for cost needs a training run: add "
                                  "[plan] tokens or train_steps (and [cost] prices)", s->path);
      return 1;
    }
  s->uses_node = g_key_file_has_key (sc->resolved, "cluster", "node", NULL);
  s->cands = g_ptr_array_new_with_free_func (cand_free);
  s->seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < types->len; i++)
    search_gpu (s, g_ptr_array_index (types, i));
  gint answer = best_of (s, good, FALSE);
  const CostCandidate *a = answer >= 0 ? g_ptr_array_index (s->cands, answer) : NULL;
  printf ("%-4s %-9s %-52s %5s %10s %14s\n", "", "verdict", "candidate", "GPUs",
          "time", "cost");
  for (guint i = 0; i < s->cands->len; i++)
    print_candidate (s, g_ptr_array_index (s->cands, i), a);
  print_answer (s, answer);
  g_ptr_array_unref (s->cands);
  g_hash_table_unref (s->seen);
  return 0;
}
