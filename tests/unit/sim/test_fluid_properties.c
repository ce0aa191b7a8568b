/* tests/unit/sim/test_fluid_properties.c — randomised properties of max-min fair fluid
 * sharing (sim/fluid.c): 300 random activities on 6 resources keep the allocation max-min
 * fair and never exceed a capacity, and the same inputs give the same times. The
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
  { "random: allocation is max-min fair", test_random_allocation_is_max_min_fair },
  { "same inputs give same times", test_same_inputs_same_times },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/fluid_properties", tests);
}
