/* tests/unit/sim/test_fluid_properties.c — randomised properties of max-min fair fluid
 * sharing (sim/fluid.c): 300 random activities on 6 resources keep the allocation max-min
 * fair and never exceed a capacity, the same inputs give the same times, and the
 * component-local incremental solve agrees with a solve from scratch. The
 * closed-form cases are in test_fluid.c. */
#include "config.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/sim/fluid_fixture.h"

#include <math.h>
#include <string.h>

/* Observer that checks the capacity invariant and keeps each resource's last usage. */
typedef struct
{
  GArray *last;     /* double per resource */
  guint violations; /* usage > capacity (1 + 1e-9) */
  guint calls;
} LoadCheck;

static void
load_cb (SimFluid *fluid, SimResourceId res, double time, double usage, gpointer user_data)
{
  LoadCheck *lc = user_data;
  (void) time;
  lc->calls++;
  if (usage > sim_fluid_resource_capacity (fluid, res) * (1 + 1e-9) || usage < 0.0)
    lc->violations++;
  CU_ASSERT_EQUAL (usage, sim_fluid_resource_usage (fluid, res));
  g_array_index (lc->last, double, res) = usage;
}

#define N_RAND_RES 6
#define N_RAND_ACT 300

/* What the random run started, for the max-min check below. */
typedef struct
{
  Rec *rec;
  SimActivityId id[N_RAND_ACT];
  SimUse uses[N_RAND_ACT][3];
  guint n_uses[N_RAND_ACT];
  double bound[N_RAND_ACT];
  guint checks, violations;
} RandomRun;

/* Is activity i limited by a resource it uses, i.e. one that is full (usage ≥ c(1 − 1e-9))
 * and on which no activity runs faster than i? */
static gboolean
has_bottleneck (RandomRun *rr, guint i, const double *rate)
{
  SimFluid *fluid = rr->rec->fluid;
  for (guint u = 0; u < rr->n_uses[i]; u++)
    {
      SimResourceId j = rr->uses[i][u].resource;
      double cap = sim_fluid_resource_capacity (fluid, j);
      if (sim_fluid_resource_usage (fluid, j) < cap * (1 - 1e-9))
        continue;
      gboolean fastest = TRUE;
      for (guint k = 0; k < N_RAND_ACT && fastest; k++)
        for (guint v = 0; v < rr->n_uses[k]; v++)
          if (rr->uses[k][v].resource == j && rate[k] > rate[i] * (1 + 1e-9))
            fastest = FALSE;
      if (fastest)
        return TRUE;
    }
  return FALSE;
}

/* Bottleneck characterisation of max-min fairness (Bertsekas & Gallager §6.5.2): a feasible
 * allocation is max-min fair iff every activity is at its bound or has a bottleneck. */
static void
check_max_min (SimEngine *engine, gpointer user_data)
{
  RandomRun *rr = user_data;
  double rate[N_RAND_ACT];
  for (guint i = 0; i < N_RAND_ACT; i++)
    rate[i] = MAX (0.0, sim_fluid_activity_rate (rr->rec->fluid, rr->id[i]));
  for (guint i = 0; i < N_RAND_ACT; i++)
    {
      if (rate[i] <= 0.0)
        continue; /* finished or in latency */
      rr->checks++;
      if (rate[i] < rr->bound[i] * (1 - 1e-9) && !has_bottleneck (rr, i, rate))
        rr->violations++;
    }
  if (sim_fluid_n_activities (rr->rec->fluid) > 0)
    sim_engine_schedule_after (engine, 0.37, check_max_min, rr, NULL);
}

/* 300 random activities on 6 resources: 1–3 uses with weights in [0.1, 10], latencies in
 * [0, 5] s, one in four bounded. With `rr`, checks max-min fairness every 0.37 s.
 * Returns the completion log (caller frees). */
static Rec *
random_run (guint32 seed, LoadCheck *lc, RandomRun *rr)
{
  Rec *r = rec_new ();
  g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
  for (guint j = 0; j < N_RAND_RES; j++)
    {
      g_autofree char *name = g_strdup_printf ("r%u", j);
      sim_fluid_add_resource (r->fluid, name, g_rand_double_range (rng, 1.0, 100.0));
    }
  g_array_set_size (lc->last, N_RAND_RES);
  sim_fluid_set_load_func (r->fluid, load_cb, lc);
  for (guint i = 0; i < N_RAND_ACT; i++)
    {
      SimUse uses[3];
      guint n_uses = g_rand_int_range (rng, 1, 4);
      for (guint u = 0; u < n_uses; u++)
        uses[u]
            = (SimUse){ g_rand_int_range (rng, 0, N_RAND_RES), g_rand_double_range (rng, 0.1, 10) };
      double bound
          = g_rand_int_range (rng, 0, 4) == 0 ? g_rand_double_range (rng, 0.5, 5) : INFINITY;
      SimActivityId id
          = sim_fluid_start (r->fluid, g_rand_double_range (rng, 1, 50),
                             g_rand_double_range (rng, 0, 5), bound, uses, n_uses, done_cb, r);
      if (rr != NULL)
        {
          rr->id[i] = id;
          rr->n_uses[i] = n_uses;
          rr->bound[i] = bound;
          memcpy (rr->uses[i], uses, sizeof uses);
        }
    }
  if (rr != NULL)
    {
      rr->rec = r;
      sim_engine_schedule_at (r->engine, 0.1, check_max_min, rr, NULL);
    }
  sim_engine_run (r->engine);
  return r;
}

static void
test_random_allocation_is_max_min_fair (void)
{
  LoadCheck lc = { g_array_new (FALSE, TRUE, sizeof (double)), 0, 0 };
  RandomRun *rr = g_new0 (RandomRun, 1);
  Rec *r = random_run (99, &lc, rr);
  CU_ASSERT (rr->checks > 1000); /* many activities were checked while running */
  CU_ASSERT_EQUAL (rr->violations, 0);
  CU_ASSERT_EQUAL (r->order->len, N_RAND_ACT);
  rec_free (r);
  g_free (rr);
  g_array_unref (lc.last);
}

static void
test_random_capacity_never_exceeded (void)
{
  LoadCheck lc = { g_array_new (FALSE, TRUE, sizeof (double)), 0, 0 };
  Rec *r = random_run (4242, &lc, NULL);
  CU_ASSERT_EQUAL (lc.violations, 0);
  CU_ASSERT (lc.calls > 300); /* the observer really ran */
  CU_ASSERT_EQUAL (r->order->len, N_RAND_ACT);
  CU_ASSERT_EQUAL (sim_fluid_n_activities (r->fluid), 0);
  CU_ASSERT_EQUAL (sim_engine_pending (r->engine), 0);
  for (guint j = 0; j < lc.last->len; j++)
    CU_ASSERT_EQUAL (g_array_index (lc.last, double, j), 0.0); /* reported idle at the end */
  rec_free (r);
  g_array_unref (lc.last);
}

/* Component-local re-solving (sim/fluid.c) against a solve from scratch: 400 random
 * activities on 8 groups of 5 resources (uses inside one group, one in ten also crossing to
 * another, so there are several components that merge and split), with latencies spreading
 * the joins; every 0.29 s the sharing activities are copied, with their uses and bounds,
 * onto a fresh fluid, where one flush solves them all at once. The max-min allocation is
 * unique (Bertsekas & Gallager §6.5.2), so each rate must agree up to rounding: the
 * incremental solver keeps no stale rate in a component it did not re-solve. */
#define N_GROUPS 8
#define GROUP_RES 5
#define N_LOCAL_ACT 400

typedef struct
{
  Rec *rec;
  double cap[N_GROUPS * GROUP_RES];
  SimActivityId id[N_LOCAL_ACT];
  SimUse uses[N_LOCAL_ACT][4];
  guint n_uses[N_LOCAL_ACT];
  double bound[N_LOCAL_ACT];
  guint checks, compared, mismatches;
  double worst;         /* largest relative difference seen */
  guint max_components; /* most components the fresh fluid's one flush solved */
} LocalRun;

static void
check_against_scratch (SimEngine *engine, gpointer user_data)
{
  LocalRun *lr = user_data;
  g_autoptr (SimEngine) e2 = sim_engine_new ();
  g_autoptr (SimFluid) f2 = sim_fluid_new (e2);
  for (guint j = 0; j < N_GROUPS * GROUP_RES; j++)
    sim_fluid_add_resource (f2, "r", lr->cap[j]);
  double rate[N_LOCAL_ACT];
  SimActivityId copy[N_LOCAL_ACT];
  for (guint i = 0; i < N_LOCAL_ACT; i++)
    {
      rate[i] = sim_fluid_activity_rate (lr->rec->fluid, lr->id[i]);
      copy[i] = rate[i] > 0.0 /* sharing */
                    ? sim_fluid_start (f2, 1.0, 0.0, lr->bound[i], lr->uses[i], lr->n_uses[i],
                                       NULL, NULL)
                    : 0;
    }
  lr->checks++;
  sim_fluid_resource_usage (f2, 0); /* one flush: one solve per component */
  lr->max_components = MAX (lr->max_components, (guint) sim_fluid_n_solves (f2));
  for (guint i = 0; i < N_LOCAL_ACT; i++)
    {
      if (copy[i] == 0)
        continue;
      double fresh = sim_fluid_activity_rate (f2, copy[i]);
      double rel = fabs (fresh - rate[i]) / fresh;
      lr->compared++;
      lr->worst = MAX (lr->worst, rel);
      if (!(rel <= 1e-9))
        lr->mismatches++;
    }
  if (sim_fluid_n_activities (lr->rec->fluid) > 0)
    sim_engine_schedule_after (engine, 0.29, check_against_scratch, lr, NULL);
}

static void
test_component_solve_equals_full_solve (void)
{
  for (guint32 seed = 1; seed <= 3; seed++)
    {
      LocalRun lr = { 0 };
      lr.rec = rec_new ();
      g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
      for (guint j = 0; j < N_GROUPS * GROUP_RES; j++)
        {
          lr.cap[j] = g_rand_double_range (rng, 1.0, 100.0);
          sim_fluid_add_resource (lr.rec->fluid, "r", lr.cap[j]);
        }
      for (guint i = 0; i < N_LOCAL_ACT; i++)
        {
          guint g = g_rand_int_range (rng, 0, N_GROUPS);
          guint n = g_rand_int_range (rng, 1, 4);
          for (guint u = 0; u < n; u++)
            lr.uses[i][u] = (SimUse){ g * GROUP_RES + g_rand_int_range (rng, 0, GROUP_RES),
                                      g_rand_double_range (rng, 0.1, 10) };
          if (g_rand_int_range (rng, 0, 10) == 0)
            lr.uses[i][n++] = (SimUse){ g_rand_int_range (rng, 0, N_GROUPS * GROUP_RES),
                                        g_rand_double_range (rng, 0.1, 10) };
          lr.n_uses[i] = n;
          lr.bound[i]
              = g_rand_int_range (rng, 0, 4) == 0 ? g_rand_double_range (rng, 0.5, 5) : INFINITY;
          lr.id[i] = sim_fluid_start (lr.rec->fluid, g_rand_double_range (rng, 1, 30),
                                      g_rand_double_range (rng, 0, 20), lr.bound[i], lr.uses[i],
                                      n, done_cb, lr.rec);
        }
      sim_engine_schedule_at (lr.rec->engine, 0.05, check_against_scratch, &lr, NULL);
      sim_engine_run (lr.rec->engine);
      CU_ASSERT_EQUAL (lr.rec->order->len, N_LOCAL_ACT); /* all completed */
      CU_ASSERT (lr.checks > 20);
      CU_ASSERT (lr.compared > 1000);
      CU_ASSERT_EQUAL (lr.mismatches, 0);
      CU_ASSERT (lr.worst <= 1e-9);
      CU_ASSERT (lr.max_components > 2); /* the instance did have separate components */
      rec_free (lr.rec);
    }
}

static void
test_same_inputs_same_times (void)
{
  LoadCheck lc1 = { g_array_new (FALSE, TRUE, sizeof (double)), 0, 0 };
  LoadCheck lc2 = { g_array_new (FALSE, TRUE, sizeof (double)), 0, 0 };
  Rec *a = random_run (777, &lc1, NULL), *b = random_run (777, &lc2, NULL);
  CU_ASSERT_EQUAL_FATAL (a->done->len, b->done->len);
  CU_ASSERT (memcmp (a->done->data, b->done->data, a->done->len * sizeof (double)) == 0);
  CU_ASSERT (memcmp (a->order->data, b->order->data, a->order->len * sizeof (SimActivityId)) == 0);
  CU_ASSERT_EQUAL (lc1.calls, lc2.calls);
  rec_free (a);
  rec_free (b);
  g_array_unref (lc1.last);
  g_array_unref (lc2.last);
}

static const StepsimTest tests[] = {
  { "random: capacity never exceeded, all done", test_random_capacity_never_exceeded },
  { "random: component re-solve = solve from scratch", test_component_solve_equals_full_solve },
  { "random: allocation is max-min fair", test_random_allocation_is_max_min_fair },
  { "same inputs give same times", test_same_inputs_same_times },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/fluid_properties", tests);
}
