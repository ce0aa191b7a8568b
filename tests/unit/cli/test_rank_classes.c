/* tests/unit/cli/test_rank_classes.c — rank classes (models/plan/rank_classes.h) change no
 * figure: every shipped scenario of at most 512 GPUs (every .ini of scenarios/ and the bench/ cases)
 * is simulated with one rank per class ([run] rank_classes = auto) and with every rank
 * (off); step time and every rank's allocated and device-used peak agree to 1e-9 relative
 * (issue 17). The collapse must also happen where the symmetry holds (fewer ranks replayed
 * than GPUs on the 8-GPU and multi-node cases), and a straggler, which breaks the shift
 * that would move it, must split the classes. The plan built for the representatives only
 * (model_rank_classes_plan) must be, task by task, the first ranks of the full plan, with
 * the period the full comparison finds. */
#include "config.h"

#include <math.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "models/plan/rank_classes.h"
#include "models/plan/simulate.h"
#include "sim/fluid.h"
#include "tests/testlib.h"

#include <string.h>

static gboolean
close_rel (double a, double b)
{
  return fabs (a - b) <= 1e-9 * MAX (fabs (a), fabs (b));
}

/* Simulates `rel` with `sets` (NULL-terminated, may be NULL) into res; FALSE if it does not
 * load or run (then the test fails). */
static gboolean
simulate (const char *rel, const char *const *sets, ModelSimResult *res)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  if (sc == NULL)
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  if (!cli_scenario_simulate (sc, NULL, res, &e))
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  return TRUE;
}

/* Collapsed against full on `rel`; returns the ranks the collapsed run replayed. */
static guint
check_equivalent (const char *rel)
{
  static const char *const off[] = { "run.rank_classes=off", NULL };
  ModelSimResult a = { 0 }, b = { 0 };
  CU_ASSERT_FATAL (simulate (rel, NULL, &a));
  CU_ASSERT_FATAL (simulate (rel, off, &b));
  CU_ASSERT_EQUAL (b.rank_classes, b.n_ranks);
  CU_ASSERT_EQUAL (a.n_ranks, b.n_ranks);
  gboolean same = close_rel (a.step_time, b.step_time) && a.fits == b.fits
                  && close_rel (a.device_used, b.device_used)
                  && close_rel (a.lifetime_device, b.lifetime_device);
  for (guint r = 0; r < a.n_ranks; r++)
    same = same && close_rel (a.rank_peak_allocated[r], b.rank_peak_allocated[r])
           && close_rel (a.rank_device_used[r], b.rank_device_used[r]);
  if (!same)
    g_printerr ("%s: collapsed %.12g s, %.12g B; full %.12g s, %.12g B\n", rel, a.step_time,
                a.device_used, b.step_time, b.device_used);
  CU_ASSERT (same);
  guint classes = a.rank_classes;
  model_sim_result_clear (&a);
  model_sim_result_clear (&b);
  return classes;
}

/* The ModelTask fields that say what a task is and does (its id and every index into the
 * plan's arrays included: the full plan builds rank 0's tasks first, then rank 1's, …, so
 * the representatives' part of it has the same numbering). */
static gboolean
same_task (const ModelPlan *a, const ModelPlan *b, guint id)
{
  const ModelTask *s = model_plan_task (a, id), *t = model_plan_task (b, id);
  if (s->id != t->id || s->rank != t->rank || s->stream != t->stream || s->kind != t->kind
      || strcmp (s->label, t->label) != 0 || s->layer != t->layer
      || s->micro_batch != t->micro_batch || s->first_kernel != t->first_kernel
      || s->n_kernels != t->n_kernels || s->first_dep != t->first_dep
      || s->n_deps != t->n_deps || s->first_effect != t->first_effect
      || s->n_effects != t->n_effects || s->flops != t->flops || s->bytes != t->bytes
      || s->collective != t->collective || s->offload != t->offload || s->amount != t->amount)
    return FALSE;
  for (guint k = 0; k < s->n_deps; k++)
    if (model_plan_dep (a, s->first_dep + k) != model_plan_dep (b, t->first_dep + k))
      return FALSE;
  for (guint k = 0; k < s->n_effects; k++)
    {
      const ModelMemEffect *e = model_plan_effect (a, s->first_effect + k);
      const ModelMemEffect *f = model_plan_effect (b, t->first_effect + k);
      if (e->category != f->category || e->bytes != f->bytes || e->when != f->when
          || e->handle != f->handle || e->where != f->where)
        return FALSE;
    }
  if (s->collective >= 0)
    {
      const ModelCollective *c = model_plan_collective (a, (guint) s->collective);
      const ModelCollective *d = model_plan_collective (b, (guint) t->collective);
      if (c->kind != d->kind || c->bytes != d->bytes || c->n_ranks != d->n_ranks
          || c->dims != d->dims || c->ub_sms != d->ub_sms || memcmp (c->ranks, d->ranks, c->n_ranks * sizeof (guint)) != 0)
        return FALSE;
    }
  return TRUE;
}

/* On `rel`: the representatives-only plan against the full plan. Returns its period. */
static guint
check_representatives (const char *rel)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
  CU_ASSERT_FATAL (sc != NULL);
  ModelSimInput in = cli_scenario_sim_input (sc);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new_with_fabric (in.node, in.n_nodes, in.fabric,
                                                              fluid);
  g_autoptr (ModelPlan) full = model_plan_new (in.arch, in.stack, in.par, &e);
  CU_ASSERT_FATAL (full != NULL);
  guint period = 0;
  g_autoptr (ModelPlan) reps = model_rank_classes_plan (in.arch, in.stack, in.par, 0, cluster,
                                                        &period, &e);
  CU_ASSERT_FATAL (reps != NULL);
  guint n = model_plan_n_ranks (full);
  CU_ASSERT_EQUAL (model_plan_n_ranks (reps), n);
  CU_ASSERT_EQUAL (period, model_rank_classes_period (full, cluster));
  CU_ASSERT_EQUAL (model_plan_n_built (reps), in.par->pp > 1 ? n : period);
  guint built = model_plan_n_built (reps);
  CU_ASSERT_EQUAL (model_plan_n_tasks (reps) * (n / built), model_plan_n_tasks (full));
  gboolean same = TRUE;
  for (guint id = 0; same && id < model_plan_n_tasks (reps); id++)
    same = same_task (reps, full, id);
  for (guint r = 0; same && r < n; r++) /* rank r answers for its representative */
    for (guint c = 0; c < MODEL_N_MEM; c++)
      same = same && model_plan_state_bytes (reps, r) == model_plan_state_bytes (full, r % built)
             && model_plan_initial_handle (reps, r, c)
                  == model_plan_initial_handle (full, r % built, c);
  if (!same)
    g_printerr ("%s: the representatives' plan differs from the full plan's\n", rel);
  CU_ASSERT (same);
  return period;
}

static void
test_representatives_plan (void)
{
  /* 8 GPUs behind PCIe switches of two, 16 and 64 nodes: built for 2, 8 and 8 ranks */
  CU_ASSERT_EQUAL (check_representatives ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini"), 2);
  CU_ASSERT_EQUAL (check_representatives ("bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini"), 8);
  CU_ASSERT_EQUAL (check_representatives ("bench/llama-3.1-70b-fsdp-64xdgx-h100.ini"), 8);
  /* tp8 LoRA, cp8 and pipeline stages (every rank built: the general path) */
  check_representatives ("scenarios/llama-3.1-70b-lora-tp8-dgx-h100.ini");
  check_representatives ("scenarios/cp-llama-3.1-8b-128k-dgx-h100.ini");
  check_representatives ("tests/validation/t2b-gpt-175b-tp8-pp8-sp-selective.ini");
  check_representatives ("tests/validation/offload-s10-llama-8b-zero2-dgx-a100.ini");
}

static void
test_shipped_scenarios (void)
{
  g_autofree char *dir = stepsim_test_srcpath ("scenarios");
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  CU_ASSERT_FATAL (d != NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".ini"))
      g_ptr_array_add (names, g_strdup_printf ("scenarios/%s", n));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0); /* fixed order */
  CU_ASSERT (names->len >= 10);
  for (guint i = 0; i < names->len; i++)
    check_equivalent (g_ptr_array_index (names, i));
}

/* The bench/ cases: 8 GPUs of one DGX H100 (PCIe switches of two GPUs: the shift by 2 is
 * the least that maps the node onto itself), 16 and 64 nodes (a whole node). */
static void
test_bench_collapse (void)
{
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini"), 2);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini"), 8);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-fsdp-64xdgx-h100.ini"), 8);
}

/* A straggler at rank 5 of 8 breaks every shift that moves rank 5 onto a normal rank: only
 * the identity is left, and the run replays every rank. */
static void
test_straggler_splits (void)
{
  static const char *const sets[] = { "run.stragglers=5:1.3", NULL };
  ModelSimResult a = { 0 };
  CU_ASSERT_FATAL (simulate ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini", sets, &a));
  CU_ASSERT_EQUAL (a.rank_classes, 8);
  model_sim_result_clear (&a);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "shipped scenarios: collapsed = full to 1e-9", test_shipped_scenarios },
    { "bench cases collapse to a period of 2, 8, 8 ranks", test_bench_collapse },
    { "a straggler splits the classes", test_straggler_splits },
    { "the representatives' plan is the full plan's first ranks", test_representatives_plan },
  };
  return STEPSIM_RUN_TESTS ("cli/rank_classes", tests);
}
