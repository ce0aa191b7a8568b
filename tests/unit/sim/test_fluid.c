/* tests/unit/sim/test_fluid.c — max-min fair fluid sharing (sim/fluid.c): closed-form
 * transfer, sharing, bottleneck, bound and roofline times; re-sharing; cancel; completion
 * order; the load observer; component-local and batched solves; bad arguments. The
 * randomised properties (max-min fairness, capacity, determinism) are in
 * test_fluid_properties.c. */
#include "config.h"
#include "sim/fluid.h"
#include "sim/fluid-private.h"
#include "tests/testlib.h"
#include "tests/unit/sim/fluid_fixture.h"

#include <math.h>
#include <string.h>

#define TOL 1e-12


static double
done_at (const Rec *r, SimActivityId id)
{
  for (guint k = 0; k < r->order->len; k++)
    if (g_array_index (r->order, SimActivityId, k) == id)
      return g_array_index (r->done, double, k);
  return NAN;
}

/* A flow of `amount` over one resource with weight 1. */
static SimActivityId
flow (Rec *r, SimResourceId res, double amount, double latency)
{
  SimUse use = { res, 1.0 };
  return sim_fluid_start (r->fluid, amount, latency, INFINITY, &use, 1, done_cb, r);
}

/* Alone on a link, a transfer waits L then moves S bytes at B: t = L + S/B. */
static void
test_single_transfer (void)
{
  Rec *r = rec_new ();
  const double L = 2e-6, S = 1e9, B = 100e9;
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", B);
  SimActivityId id = flow (r, link, S, L);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, id), 0.0); /* in latency */
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, id), L + S / B, TOL);
  CU_ASSERT_EQUAL (sim_fluid_n_activities (r->fluid), 0);
  rec_free (r);
}

/* n equal flows share B equally (B/n each: max-min with one bottleneck), so each needs
 * S/(B/n) after its latency: t = L + nS/B for all of them. */
static void
test_equal_flows_share (void)
{
  Rec *r = rec_new ();
  const guint n = 8;
  const double L = 1e-3, S = 5e8, B = 25e9;
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", B);
  SimActivityId ids[8];
  for (guint i = 0; i < n; i++)
    ids[i] = flow (r, link, S, L);
  sim_engine_run_until (r->engine, 2 * L);
  for (guint i = 0; i < n; i++)
    STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, ids[i]), B / n, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, link), B, TOL);
  sim_engine_run (r->engine);
  for (guint i = 0; i < n; i++)
    STEPSIM_ASSERT_REL (done_at (r, ids[i]), L + n * S / B, TOL);
  rec_free (r);
}

/* Flows A (link1), B (link1 + link2), C (link2); c1 = 10 < c2 = 25. Progressive filling:
 * the common level λ saturates link1 at c1/2 = 5 before link2 at c2/2 = 12.5, so A = B = 5;
 * link2 keeps c2 − 5 = 20 for C alone, so C = 20. Both links end up full. */
static void
test_two_link_bottleneck (void)
{
  Rec *r = rec_new ();
  SimResourceId l1 = sim_fluid_add_resource (r->fluid, "link1", 10.0);
  SimResourceId l2 = sim_fluid_add_resource (r->fluid, "link2", 25.0);
  SimUse ua = { l1, 1.0 }, ub[2] = { { l1, 1.0 }, { l2, 1.0 } }, uc = { l2, 1.0 };
  SimActivityId a = sim_fluid_start (r->fluid, 100.0, 0.0, INFINITY, &ua, 1, done_cb, r);
  SimActivityId b = sim_fluid_start (r->fluid, 100.0, 0.0, INFINITY, ub, 2, done_cb, r);
  SimActivityId c = sim_fluid_start (r->fluid, 100.0, 0.0, INFINITY, &uc, 1, done_cb, r);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, a), 5.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, b), 5.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, c), 20.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, l1), 10.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, l2), 25.0, TOL);
  /* C finishes at 100/20 = 5 s; then B shares link1 (5 each, link2 no longer binding):
   * A and B finish together at 100/5 = 20 s. */
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, c), 5.0, TOL);
  STEPSIM_ASSERT_REL (done_at (r, a), 20.0, TOL);
  STEPSIM_ASSERT_REL (done_at (r, b), 20.0, TOL);
  rec_free (r);
}

/* Link of capacity 10, X bounded at 2, Y and Z unbounded. The level reaches X's bound (2)
 * before the link saturates (10/3), so X = 2 and Y = Z = (10 − 2)/2 = 4. */
static void
test_rate_bound_caps (void)
{
  Rec *r = rec_new ();
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 10.0);
  SimUse use = { link, 1.0 };
  SimActivityId x = sim_fluid_start (r->fluid, 8.0, 0.0, 2.0, &use, 1, done_cb, r);
  SimActivityId y = flow (r, link, 100.0, 0.0);
  SimActivityId z = flow (r, link, 100.0, 0.0);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, x), 2.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, y), 4.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, z), 4.0, TOL);
  /* X: 8/2 = 4 s. Y, Z: 16 each by 4 s, then 5 each: 4 + 84/5 = 20.8 s. */
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, x), 4.0, TOL);
  STEPSIM_ASSERT_REL (done_at (r, y), 20.8, TOL);
  rec_free (r);
}

/* Roofline: amount 1, weight F (FLOP) on compute of capacity C (FLOP/s) and weight M (B)
 * on HBM of capacity H (B/s). Rate r ≤ min(C/F, H/M), so time = 1/r = max(F/C, M/H). */
static void
roofline_case (double F, double M, double expect)
{
  Rec *r = rec_new ();
  const double C = 1e14, H = 3e12;
  SimResourceId comp = sim_fluid_add_resource (r->fluid, "compute", C);
  SimResourceId hbm = sim_fluid_add_resource (r->fluid, "hbm", H);
  SimUse uses[2] = { { comp, F }, { hbm, M } };
  SimActivityId k = sim_fluid_start (r->fluid, 1.0, 0.0, INFINITY, uses, 2, done_cb, r);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, comp), F / expect, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, hbm), M / expect, TOL);
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, k), expect, TOL);
  rec_free (r);
}

static void
test_roofline_compute_bound (void)
{
  /* F/C = 1e12/1e14 = 1e-2 s > M/H = 1e9/3e12 ≈ 3.3e-4 s. */
  roofline_case (1e12, 1e9, 1e-2);
}

static void
test_roofline_memory_bound (void)
{
  /* F/C = 1e9/1e14 = 1e-5 s < M/H = 1e10/3e12 ≈ 3.3e-3 s. */
  roofline_case (1e9, 1e10, 1e10 / 3e12);
}

/* Link B = 1. f1 (amount 4) from t = 0; f2 (amount 1) joins at t = 1 (latency 1).
 * [0, 1]: f1 alone at 1 → 3 left. Then both at 1/2: f2 needs 1/(1/2) = 2 → done at 3;
 * f1 has 3 − 1 = 2 left at t = 3, alone again at 1 → done at 5. */
static void
test_late_flow_reshares (void)
{
  Rec *r = rec_new ();
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 1.0);
  SimActivityId f1 = flow (r, link, 4.0, 0.0);
  SimActivityId f2 = flow (r, link, 1.0, 1.0);
  sim_engine_run_until (r->engine, 2.0);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, f1), 0.5, TOL);
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, f2), 3.0, TOL);
  STEPSIM_ASSERT_REL (done_at (r, f1), 5.0, TOL);
  rec_free (r);
}

typedef struct
{
  Rec *rec;
  SimActivityId victim;
  gboolean first, second;
} CancelCtx;

static void
cancel_cb (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  CancelCtx *c = user_data;
  c->first = sim_fluid_cancel (c->rec->fluid, c->victim);
  c->second = sim_fluid_cancel (c->rec->fluid, c->victim);
}

/* Link B = 1, two flows of 10. Until the cancel of f1 at t = 2 each gets 1/2, so f2 has
 * 10 − 1 = 9 left; alone at 1 it finishes at 2 + 9 = 11. f1 never reports done. */
static void
test_cancel_speeds_up_others (void)
{
  Rec *r = rec_new ();
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 1.0);
  SimActivityId f1 = flow (r, link, 10.0, 0.0);
  SimActivityId f2 = flow (r, link, 10.0, 0.0);
  CancelCtx c = { r, f1, FALSE, TRUE };
  sim_engine_schedule_at (r->engine, 2.0, cancel_cb, &c, NULL);
  sim_engine_run (r->engine);
  CU_ASSERT_TRUE (c.first);
  CU_ASSERT_FALSE (c.second);
  CU_ASSERT_TRUE (isnan (done_at (r, f1)));
  STEPSIM_ASSERT_REL (done_at (r, f2), 11.0, TOL);
  CU_ASSERT_EQUAL (r->order->len, 1);
  CU_ASSERT_FALSE (sim_fluid_cancel (r->fluid, f2)); /* finished */
  rec_free (r);
}

/* Done callback that, for the first completion, checks the siblings completing at the same
 * instant are already gone, then starts a follow-up flow of 3 on the same link. */
typedef struct
{
  Rec *rec;
  SimResourceId link;
  SimActivityId siblings[3];
  SimActivityId follow;
} Burst;

static void
burst_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  Burst *b = user_data;
  done_cb (fluid, id, b->rec);
  if (b->follow != 0)
    return;
  for (guint i = 0; i < 3; i++)
    CU_ASSERT_EQUAL (sim_fluid_activity_rate (fluid, b->siblings[i]), -1.0);
  b->follow = flow (b->rec, b->link, 3.0, 0.0);
}

/* Three flows of 2 on a link of 3 run at 1 each and all end at t = 2, reported in id order;
 * the follow-up started from the first callback has the link alone: 2 + 3/3 = 3 s. */
static void
test_simultaneous_completions_in_id_order (void)
{
  Rec *r = rec_new ();
  Burst b = { r, sim_fluid_add_resource (r->fluid, "link", 3.0), { 0 }, 0 };
  SimUse use = { b.link, 1.0 };
  for (guint i = 0; i < 3; i++)
    b.siblings[i] = sim_fluid_start (r->fluid, 2.0, 0.0, INFINITY, &use, 1, burst_done, &b);
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL_FATAL (r->order->len, 4);
  for (guint i = 0; i < 3; i++)
    {
      CU_ASSERT_EQUAL (g_array_index (r->order, SimActivityId, i), b.siblings[i]);
      STEPSIM_ASSERT_REL (done_at (r, b.siblings[i]), 2.0, TOL);
    }
  STEPSIM_ASSERT_REL (done_at (r, b.follow), 3.0, TOL);
  rec_free (r);
}

/* No uses: without a bound it completes right after its latency (infinite rate); with a
 * bound of 5 an amount of 10 takes 10/5 = 2 s after a latency of 0.5. */
static void
test_no_uses (void)
{
  Rec *r = rec_new ();
  SimActivityId a = sim_fluid_start (r->fluid, 1e6, 0.25, INFINITY, NULL, 0, done_cb, r);
  SimActivityId b = sim_fluid_start (r->fluid, 10.0, 0.5, 5.0, NULL, 0, done_cb, r);
  SimActivityId c = sim_fluid_start (r->fluid, 7.0, 0.0, G_MAXDOUBLE, NULL, 0, done_cb, r);
  CU_ASSERT_TRUE (isnan (done_at (r, c))); /* never synchronously from start */
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL (done_at (r, c), 0.0);
  CU_ASSERT_EQUAL (done_at (r, a), 0.25);
  STEPSIM_ASSERT_REL (done_at (r, b), 2.5, TOL);
  rec_free (r);
}

typedef struct
{
  GArray *t, *u;
} Series;

static void
series_cb (SimFluid *fluid, SimResourceId res, double time, double usage, gpointer user_data)
{
  (void) fluid, (void) res;
  Series *s = user_data;
  g_array_append_val (s->t, time);
  g_array_append_val (s->u, usage);
}

/* One link of 4: f1 (8) alone → usage 4 at 0; f2 (2, latency 1) joins: both at 2, still 4
 * in total, so no call; f2 ends at 1 + 2/2 = 2 → still 4 (f1 alone); f1 has 8 − 4 − 2 = 2
 * left, ends at 2.5 → 0. Usage changes only at 0 and 2.5. With f3 on a second link of 10
 * bounded at 1 from t = 0 (amount 1): that link goes 1 at 0 and 0 at 1, in id order. */
static void
test_load_observer_series (void)
{
  Rec *r = rec_new ();
  Series s = { g_array_new (FALSE, FALSE, sizeof (double)),
               g_array_new (FALSE, FALSE, sizeof (double)) };
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 4.0);
  sim_fluid_set_load_func (r->fluid, series_cb, &s);
  flow (r, link, 8.0, 0.0);
  flow (r, link, 2.0, 1.0);
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL_FATAL (s.t->len, 2);
  CU_ASSERT_EQUAL (g_array_index (s.t, double, 0), 0.0);
  STEPSIM_ASSERT_REL (g_array_index (s.u, double, 0), 4.0, TOL);
  STEPSIM_ASSERT_REL (g_array_index (s.t, double, 1), 2.5, TOL);
  CU_ASSERT_EQUAL (g_array_index (s.u, double, 1), 0.0);
  g_array_unref (s.t);
  g_array_unref (s.u);
  rec_free (r);
}

typedef struct
{
  GArray *ids;         /* SimResourceId reported, in order */
  SimResourceId quiet; /* quieted at its first report (G_MAXUINT: none) */
} QuietObs;

static void
quiet_cb (SimFluid *fluid, SimResourceId res, double time, double usage, gpointer user_data)
{
  (void) time, (void) usage;
  QuietObs *q = user_data;
  g_array_append_val (q->ids, res);
  if (res == q->quiet)
    sim_fluid_quiet_loads (fluid, res);
}

static guint
count_id (const GArray *ids, SimResourceId id)
{
  guint n = 0;
  for (guint k = 0; k < ids->len; k++)
    n += g_array_index (ids, SimResourceId, k) == id;
  return n;
}

/* A resource the observer quiets is not reported again, by the lone paths (x joins idle b
 * at 0.25) nor by the general flush (y joins busy b at 0.5: usage 1 → 2; both end), while
 * the others are (a: 4 at 0, 0 at 1); installing the observer again reports it again (z
 * alone on b: its join and its end). */
static void
test_quiet_loads (void)
{
  Rec *r = rec_new ();
  SimResourceId a = sim_fluid_add_resource (r->fluid, "a", 4.0);
  SimResourceId b = sim_fluid_add_resource (r->fluid, "b", 4.0);
  QuietObs q = { g_array_new (FALSE, FALSE, sizeof (SimResourceId)), b };
  sim_fluid_set_load_func (r->fluid, quiet_cb, &q);
  SimUse ub = { b, 1.0 };
  sim_fluid_start (r->fluid, 2.0, 0.25, 1.0, &ub, 1, done_cb, r);
  sim_fluid_start (r->fluid, 2.0, 0.5, 1.0, &ub, 1, done_cb, r);
  flow (r, a, 4.0, 0.0);
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL (r->order->len, 3);
  CU_ASSERT_EQUAL (count_id (q.ids, b), 1);
  CU_ASSERT_EQUAL (count_id (q.ids, a), 2);
  q.quiet = G_MAXUINT;
  sim_fluid_set_load_func (r->fluid, quiet_cb, &q);
  sim_fluid_start (r->fluid, 1.0, 0.25, 1.0, &ub, 1, done_cb, r);
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL (count_id (q.ids, b), 3);
  g_array_unref (q.ids);
  rec_free (r);
}

/* Three flows on three separate links: one "next completion" event in the engine, not three. */
static void
test_one_completion_event_pending (void)
{
  Rec *r = rec_new ();
  for (guint i = 0; i < 3; i++)
    flow (r, sim_fluid_add_resource (r->fluid, "l", 1.0), 1.0 + i, 0.0);
  sim_fluid_resource_usage (r->fluid, 0); /* brings the solution up to date */
  CU_ASSERT_EQUAL (sim_engine_pending (r->engine), 1);
  sim_engine_run_until (r->engine, 1.5);
  CU_ASSERT_EQUAL (sim_engine_pending (r->engine), 1);
  sim_engine_run (r->engine);
  CU_ASSERT_EQUAL (r->order->len, 3);
  rec_free (r);
}

/* Batching and locality: 100 flows started at one instant on one link cost one solve; a
 * later flow on a disjoint link re-solves only its own component (one more solve). */
static void
test_batched_component_local_solves (void)
{
  Rec *r = rec_new ();
  SimResourceId busy = sim_fluid_add_resource (r->fluid, "busy", 1.0);
  SimResourceId other = sim_fluid_add_resource (r->fluid, "other", 1.0);
  SimActivityId first = flow (r, busy, 1.0, 0.0);
  for (guint i = 1; i < 100; i++)
    flow (r, busy, 1.0, 0.0);
  STEPSIM_ASSERT_REL (sim_fluid_resource_usage (r->fluid, busy), 1.0, TOL);
  CU_ASSERT_EQUAL (sim_fluid_n_solves (r->fluid), 1);
  sim_engine_run_until (r->engine, 1.0);
  SimActivityId x = flow (r, other, 1.0, 0.0);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, x), 1.0, TOL);
  CU_ASSERT_EQUAL (sim_fluid_n_solves (r->fluid), 2);
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, first), 100.0, TOL); /* 100 × 1 at 1/100 each */
  rec_free (r);
}

/* A latency end with nothing else due at its instant flushes at once (no flush event: the
 * engine fires the latency end and the completion, 2 events, and each flow's done time is
 * L + S/B); two latency ends at one instant still share one flush (one solve), each flow
 * then at half the link: done at 0.5 + 2 × 1/1. */
static void
test_latency_end_flush (void)
{
  Rec *r = rec_new ();
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 1.0);
  SimActivityId a = flow (r, link, 1.0, 0.5);
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, a), 1.5, TOL);
  CU_ASSERT_EQUAL (sim_engine_events_fired (r->engine), 2);
  CU_ASSERT_EQUAL (sim_fluid_n_solves (r->fluid), 2); /* the start and the completion */
  rec_free (r);

  r = rec_new ();
  link = sim_fluid_add_resource (r->fluid, "link", 1.0);
  SimActivityId x = flow (r, link, 1.0, 0.5), y = flow (r, link, 1.0, 0.5);
  sim_engine_run_until (r->engine, 0.5);
  CU_ASSERT_EQUAL (sim_fluid_n_solves (r->fluid), 1);
  sim_engine_run (r->engine);
  STEPSIM_ASSERT_REL (done_at (r, x), 2.5, TOL);
  STEPSIM_ASSERT_REL (done_at (r, y), 2.5, TOL);
  rec_free (r);
}

static void
count_log (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data)
{
  (void) domain, (void) level, (void) message;
  (*(int *) data)++;
}

static void
test_bad_arguments_refused (void)
{
  Rec *r = rec_new ();
  SimResourceId link = sim_fluid_add_resource (r->fluid, "link", 1.0);
  int criticals = 0;
  guint h = g_log_set_handler ("stepsim-sim", G_LOG_LEVEL_CRITICAL, count_log, &criticals);
  SimUse bad_res = { link + 1, 1.0 }, bad_w = { link, 0.0 };
  CU_ASSERT_EQUAL (sim_fluid_start (r->fluid, 1.0, 0.0, INFINITY, &bad_res, 1, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_fluid_start (r->fluid, 1.0, 0.0, INFINITY, &bad_w, 1, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_fluid_start (r->fluid, 0.0, 0.0, INFINITY, NULL, 0, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_fluid_start (r->fluid, 1.0, -1.0, INFINITY, NULL, 0, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_fluid_start (r->fluid, 1.0, 0.0, 0.0, NULL, 0, NULL, NULL), 0);
  g_log_remove_handler ("stepsim-sim", h);
  CU_ASSERT_EQUAL (criticals, 5);
  CU_ASSERT_EQUAL (sim_fluid_n_activities (r->fluid), 0);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, 12345), -1.0);
  rec_free (r);
}

/* Freeing the fluid with running activities leaves no event behind in the engine. */
static void
test_free_with_running_activities (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  SimFluid *fluid = sim_fluid_new (engine);
  SimResourceId link = sim_fluid_add_resource (fluid, "link", 1.0);
  SimUse use = { link, 1.0 };
  sim_fluid_start (fluid, 1.0, 0.0, INFINITY, &use, 1, NULL, NULL);
  sim_fluid_start (fluid, 1.0, 3.0, INFINITY, &use, 1, NULL, NULL);
  CU_ASSERT (sim_engine_pending (engine) > 0);
  sim_fluid_free (fluid);
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 0);
  sim_fluid_free (NULL);
}

/* An activity alone on its resources (the solver's shortcut, sim/fluid_solve.c
 * solve_trivial) gets exactly what progressive filling gives it: r = min(bound, c_j / w_j)
 * over its resources j, usage_j = w_j · r, bit for bit (== on doubles). Here c = (3, 7),
 * w = (0.7, 1.3): r = min(3/0.7 ≈ 4.286, 7/1.3 ≈ 5.385) = 3/0.7, the closed form computed
 * in the test, not copied from a run. With bound 2 below both levels, r = 2.
 * When a second activity shares resource 2 the general path runs; once it is cancelled
 * the lone activity is back at the closed form and the idle resource reads 0. */
static void
test_lone_activity_exact (void)
{
  Rec *r = rec_new ();
  SimResourceId a = sim_fluid_add_resource (r->fluid, "a", 3.0);
  SimResourceId b = sim_fluid_add_resource (r->fluid, "b", 7.0);
  SimResourceId c = sim_fluid_add_resource (r->fluid, "c", 1.0);
  SimUse uses[2] = { { a, 0.7 }, { b, 1.3 } };
  SimActivityId x = sim_fluid_start (r->fluid, 1e6, 0.0, INFINITY, uses, 2, done_cb, r);
  double level = MIN (3.0 / 0.7, 7.0 / 1.3);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, x), level);
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (r->fluid, a), 0.7 * level);
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (r->fluid, b), 1.3 * level);
  SimActivityId y = sim_fluid_start (r->fluid, 1e6, 0.0, 2.0, uses, 2, done_cb, r);
  /* Shared (general path): x and y both on a and b; y bounded at 2 below the fair share
   * 3/(2 · 0.7) ≈ 2.14, x takes what a leaves: (3 − 0.7 · 2) / 0.7. */
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, y), 2.0, TOL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (r->fluid, x), (3.0 - 0.7 * 2.0) / 0.7, TOL);
  CU_ASSERT_TRUE (sim_fluid_cancel (r->fluid, x));
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, y), 2.0); /* alone, bound below level */
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (r->fluid, b), 1.3 * 2.0);
  SimUse uc = { c, 2.0 };
  SimActivityId z = sim_fluid_start (r->fluid, 1.0, 0.0, INFINITY, &uc, 1, done_cb, r);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, z), 1.0 / 2.0);
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (r->fluid, c), 2.0 * (1.0 / 2.0));
  CU_ASSERT_EQUAL (sim_fluid_now (r->fluid), 0.0);
  sim_engine_run_until (r->engine, 2.5); /* z finishes at 1 / 0.5 = 2 s */
  CU_ASSERT_EQUAL (done_at (r, z), 2.0);
  CU_ASSERT_EQUAL (sim_fluid_now (r->fluid), sim_engine_now (r->engine));
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (r->fluid, c), 0.0);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (r->fluid, y), 2.0);
  rec_free (r);
}

/* A chain of activities, each started when the one before completes (as a GPU's kernels):
 * sim_fluid_lone_end, computed when each starts, is its completion time bit for bit (==),
 * and the engine fires two events per activity. Cases: latency or none, one use, two
 * (compute- or HBM-bound), a resource named twice (weights merged), a rate bound below the
 * level, no use with a bound; times that are not round (a start at 0.1 s). */
typedef struct
{
  Rec *r;
  guint next;
  double expected[6];
} LoneChain;

static const double lone_latency[6] = { 3e-6, 0.0, 1.7e-5, 0.0, 2e-6, 5e-6 };

static void
lone_next (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  LoneChain *ch = user_data;
  if (id != 0)
    done_cb (fluid, id, ch->r);
  guint k = ch->next++;
  if (k == G_N_ELEMENTS (ch->expected))
    return;
  /* compute-bound (3e-4 s on capacity 1: level 3,333/s; HBM 2.9e8 B: 4,826/s), HBM-bound
   * at k = 4 (1e-4 s: 10,000/s), and at k = 2 bound by the merged compute weight 5e-4 s
   * (2,000/s; unmerged, 3,333/s) */
  SimUse uses[3] = { { 0, k == 4 ? 1e-4 : 3e-4 }, { 1, 2.9e8 }, { 0, 2e-4 } };
  guint n = k == 0 ? 1 : k == 2 ? 3 : k == 5 ? 0 : 2;
  double bound = k == 3 ? 1e3 : k == 5 ? 7.0 : INFINITY;
  double now = sim_engine_now (ch->r->engine);
  ch->expected[k] = sim_fluid_lone_end (fluid, now, 1.0, lone_latency[k], bound, uses, n);
  sim_fluid_start (fluid, 1.0, lone_latency[k], bound, uses, n, lone_next, ch);
}

static void
lone_first (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  LoneChain *ch = user_data;
  lone_next (ch->r->fluid, 0, ch);
}

static void
test_lone_end_exact (void)
{
  Rec *r = rec_new ();
  sim_fluid_add_resource (r->fluid, "compute", 1.0);
  sim_fluid_add_resource (r->fluid, "hbm", 1.555e12 * 0.9);
  LoneChain ch = { r, 0, { 0 } };
  sim_engine_schedule_at (r->engine, 0.1, lone_first, &ch, NULL);
  guint64 events = sim_engine_run (r->engine);
  CU_ASSERT_EQUAL_FATAL (r->done->len, G_N_ELEMENTS (ch.expected));
  for (guint k = 0; k < r->done->len; k++)
    {
      CU_ASSERT_EQUAL (g_array_index (r->done, double, k), ch.expected[k]);
      CU_ASSERT_TRUE (ch.expected[k] > (k == 0 ? 0.1 : ch.expected[k - 1]));
    }
  CU_ASSERT_EQUAL (events, 1 + 2 * G_N_ELEMENTS (ch.expected));
  /* bad arguments: NAN and a critical each */
  int criticals = 0;
  guint h = g_log_set_handler ("stepsim-sim", G_LOG_LEVEL_CRITICAL, count_log, &criticals);
  SimUse bad_w = { 0, 0.0 };
  CU_ASSERT_TRUE (isnan (sim_fluid_lone_end (r->fluid, 0, 0.0, 0, INFINITY, NULL, 0)));
  CU_ASSERT_TRUE (isnan (sim_fluid_lone_end (r->fluid, 0, 1.0, 0, INFINITY, &bad_w, 1)));
  g_log_remove_handler ("stepsim-sim", h);
  CU_ASSERT_EQUAL (criticals, 2);
  rec_free (r);
}

/* ---- sim_fluid_run_lone: a kernel's whole run without its events ----------------------
 *
 * A chain of kernels (compute and HBM uses, one with compute only, one naming compute twice,
 * latencies of 1–5 µs), each started by the one before's done callback, as the executor
 * does; with `off`, a kernel sim_fluid_run_lone accepts runs at once and the next follows in
 * the same callback. Beside it, per variant: a timer event at the exact end of kernel 2 (a
 * tie the timer must win: it was scheduled first), a long flow on a third resource (the
 * fluid is not idle until it ends), and a load observer that wants every report (or quiets
 * them, as the simulation's does for GPU resources). The log of (who, time) — kernels' ends, the timer, the flow's end,
 * the load reports — the events fired, the next sequence number and the solve count must be
 * the engine's run's, bit for bit. */

#define OFF_N 8
static const double off_latency[OFF_N] = { 2e-6, 5e-6, 1e-6, 3e-6, 4e-6, 2e-6, 1e-6, 3e-6 };

typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  gboolean off;
  guint next;
  guint n_off;
  GArray *log; /* double pairs: who (kernel k, 100 the timer, 200 the flow, 300 + resource a
                * load report), time */
  gboolean quiet; /* the observer quiets the resources it is told about */
} OffChain;

static void
off_log (OffChain *ch, double who, double time)
{
  g_array_append_val (ch->log, who);
  g_array_append_val (ch->log, time);
}

static void
off_next (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  OffChain *ch = user_data;
  if (id != 0)
    off_log (ch, ch->next - 1, sim_fluid_now (fluid));
  while (ch->next < OFF_N)
    {
      guint k = ch->next++;
      SimUse uses[2] = { { 0, k == 3 ? 1e-4 : 3e-4 }, { k == 5 ? 0 : 1, k == 5 ? 2e-4 : 2.9e8 } };
      guint n = k == 1 ? 1 : 2;
      double end;
      if (ch->off && sim_fluid_run_lone (fluid, 1.0, off_latency[k], uses, n, &end))
        {
          CU_ASSERT_EQUAL (end, sim_fluid_now (fluid));
          ch->n_off++;
          off_log (ch, k, end);
          continue;
        }
      sim_fluid_start (fluid, 1.0, off_latency[k], INFINITY, uses, n, off_next, ch);
      return;
    }
}

static void
off_first (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  OffChain *ch = user_data;
  off_next (ch->fluid, 0, ch);
}

static void
off_timer (SimEngine *engine, gpointer user_data)
{
  off_log (user_data, 100, sim_engine_now (engine));
}

static void
off_flow_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) id;
  off_log (user_data, 200, sim_fluid_now (fluid));
}

static void
off_load (SimFluid *fluid, SimResourceId resource, double time, double usage,
          gpointer user_data)
{
  OffChain *ch = user_data;
  off_log (ch, 300 + resource, time);
  off_log (ch, usage, time);
  if (ch->quiet)
    sim_fluid_quiet_loads (fluid, resource);
}

/* One run of the chain from 0.1 s: variant 0 plain, 1 with the timer at `tie`, 2 with the
 * flow (it ends after a few kernels), 3 with an observer wanting every report, 4 with one
 * quieting them. Fills the log; returns the events fired; *seq the engine's next sequence
 * number, *solves the fluid's solves, *n_off the kernels run off the engine. */
static guint64
off_run (guint variant, gboolean off, double tie, GArray *log, guint64 *seq, guint64 *solves,
         guint *n_off)
{
  SimEngine *engine = sim_engine_new ();
  SimFluid *fluid = sim_fluid_new (engine);
  sim_fluid_add_resource (fluid, "compute", 1.0);
  sim_fluid_add_resource (fluid, "hbm", 1.555e12 * 0.9);
  sim_fluid_add_resource (fluid, "link", 1e9);
  OffChain ch = { engine, fluid, off, 0, 0, log, variant == 4 };
  if (variant >= 3)
    sim_fluid_set_load_func (fluid, off_load, &ch);
  sim_engine_schedule_at (engine, 0.1, off_first, &ch, NULL);
  if (variant == 1)
    sim_engine_schedule_at (engine, tie, off_timer, &ch, NULL);
  if (variant == 2)
    {
      SimUse use = { 2, 1.0 };
      sim_fluid_start (fluid, 1e9 * (0.1 + 1.1e-3), 0, INFINITY, &use, 1, off_flow_done, &ch);
    }
  guint64 events = sim_engine_run (engine);
  *seq = sim_engine_reserve (engine);
  *solves = sim_fluid_n_solves (fluid);
  *n_off = ch.n_off;
  CU_ASSERT_EQUAL (ch.next, OFF_N);
  CU_ASSERT_EQUAL (sim_fluid_n_activities (fluid), 0);
  sim_fluid_free (fluid);
  sim_engine_free (engine);
  return events;
}

static void
test_run_lone_is_the_engines_run (void)
{
  /* the kernels' ends on the engine, for the timer's tie */
  g_autoptr (GArray) plain = g_array_new (FALSE, FALSE, sizeof (double));
  guint64 seq, solves;
  guint n_off;
  off_run (0, FALSE, 0, plain, &seq, &solves, &n_off);
  CU_ASSERT_EQUAL_FATAL (plain->len, 2 * OFF_N);
  double tie = g_array_index (plain, double, 2 * 2 + 1);
  for (guint v = 0; v < 5; v++)
    {
      g_autoptr (GArray) on_log = g_array_new (FALSE, FALSE, sizeof (double));
      g_autoptr (GArray) off_log_ = g_array_new (FALSE, FALSE, sizeof (double));
      guint64 seq_on, seq_off, solves_on, solves_off;
      guint off_on, off_off;
      guint64 ev_on = off_run (v, FALSE, tie, on_log, &seq_on, &solves_on, &off_on);
      guint64 ev_off = off_run (v, TRUE, tie, off_log_, &seq_off, &solves_off, &off_off);
      CU_ASSERT_EQUAL (off_on, 0);
      CU_ASSERT_EQUAL (ev_on, ev_off);
      CU_ASSERT_EQUAL (seq_on, seq_off);
      CU_ASSERT_EQUAL (solves_on, solves_off);
      CU_ASSERT_EQUAL_FATAL (on_log->len, off_log_->len);
      for (guint i = 0; i < on_log->len; i++)
        CU_ASSERT_EQUAL (g_array_index (on_log, double, i), g_array_index (off_log_, double, i));
      /* which kernels ran off: all but the first (started from an event that is not a
       * kernel's end... here the chain's own first callback accepts it too), none with an
       * observer wanting their loads; with the timer, not kernel 2 (the tie); with the flow,
       * only after it ended */
      if (v == 0 || v == 4)
        CU_ASSERT_TRUE (off_off >= OFF_N - 2);
      if (v == 1)
        CU_ASSERT_TRUE (off_off > 0 && off_off < OFF_N);
      if (v == 2)
        CU_ASSERT_TRUE (off_off > 0 && off_off < OFF_N - 2);
      if (v == 3)
        CU_ASSERT_EQUAL (off_off, 0);
    }
  /* outside a run: refused */
  SimEngine *engine = sim_engine_new ();
  SimFluid *fluid = sim_fluid_new (engine);
  sim_fluid_add_resource (fluid, "compute", 1.0);
  SimUse use = { 0, 1e-3 };
  double end = -1;
  CU_ASSERT_FALSE (sim_fluid_run_lone (fluid, 1.0, 1e-6, &use, 1, &end));
  CU_ASSERT_EQUAL (end, -1);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 0);
  sim_fluid_free (fluid);
  sim_engine_free (engine);
}

/* Names on demand: an unnamed resource is named by the namer at the first ask, once (the
 * second ask returns the kept name without calling it); a named one keeps its name; the
 * namer's data is the fluid's and is destroyed with it. */
typedef struct
{
  guint calls;
  gboolean *destroyed;
} NamerData;

static char *
count_namer (SimResourceId id, gconstpointer data)
{
  ((NamerData *) data)->calls++;
  return g_strdup_printf ("res%u", id);
}

static void
namer_destroy (gpointer data)
{
  *((NamerData *) data)->destroyed = TRUE;
  g_free (data);
}

static void
test_names_on_demand (void)
{
  gboolean destroyed = FALSE;
  SimEngine *engine = sim_engine_new ();
  SimFluid *fluid = sim_fluid_new (engine);
  NamerData *d = g_new0 (NamerData, 1);
  d->destroyed = &destroyed;
  SimResourceId named = sim_fluid_add_resource (fluid, "link", 1.0);
  sim_fluid_set_namer (fluid, count_namer, d, namer_destroy);
  SimResourceId a = sim_fluid_add_resource_unnamed (fluid, 2.0);
  SimResourceId b = sim_fluid_add_resource_unnamed (fluid, 3.0);
  CU_ASSERT_EQUAL (d->calls, 0);
  CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (fluid, b), "res2");
  CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (fluid, b), "res2");
  CU_ASSERT_EQUAL (d->calls, 1);
  CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (fluid, named), "link");
  CU_ASSERT_EQUAL (d->calls, 1);
  CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (fluid, a), "res1");
  CU_ASSERT_EQUAL (sim_fluid_resource_capacity (fluid, a), 2.0);
  CU_ASSERT_FALSE (destroyed);
  sim_fluid_free (fluid);
  CU_ASSERT (destroyed);
  sim_engine_free (engine);
}

/* ---- reset (sim_fluid_reset + sim_engine_reset: replays on the same objects) ---------- */

/* What a replay leaves observable: completions (time, and the index of the activity in
 * start order: ids differ between a new and a reset fluid), load calls (resource, time,
 * usage), the events fired and the rates at the end. */
typedef struct
{
  GArray *log;   /* double: time, start index per completion */
  GArray *loads; /* double: resource, time, usage per load call */
  GArray *ids;   /* SimActivityId in start order */
} Replay;

static void
replay_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  Replay *p = user_data;
  double now = sim_fluid_now (fluid), index = -1;
  for (guint i = 0; i < p->ids->len; i++)
    if (g_array_index (p->ids, SimActivityId, i) == id)
      index = i;
  g_array_append_val (p->log, now);
  g_array_append_val (p->log, index);
}

static void
replay_load (SimFluid *fluid, SimResourceId res, double time, double usage, gpointer user_data)
{
  (void) fluid;
  Replay *p = user_data;
  double r = res;
  g_array_append_val (p->loads, r);
  g_array_append_val (p->loads, time);
  g_array_append_val (p->loads, usage);
}

/* Shared links, latencies, a rate bound, an activity without uses, simultaneous ends and a
 * cancel, on resources l0..l2; `until` < INFINITY stops the run half-way (live activities
 * and pending events left behind). */
static void
replay_play (SimEngine *e, SimFluid *f, Replay *p, double until)
{
  p->log = g_array_new (FALSE, FALSE, sizeof (double));
  p->loads = g_array_new (FALSE, FALSE, sizeof (double));
  p->ids = g_array_new (FALSE, FALSE, sizeof (SimActivityId));
  sim_fluid_set_load_func (f, replay_load, p);
  const SimUse u0 = { 0, 1.0 }, u01[] = { { 0, 1.0 }, { 1, 2.0 } }, u2 = { 2, 1.0 };
  SimActivityId id[] = {
    sim_fluid_start (f, 8.0, 0.0, INFINITY, &u0, 1, replay_done, p),
    sim_fluid_start (f, 3.0, 0.5, INFINITY, u01, 2, replay_done, p),
    sim_fluid_start (f, 2.0, 0.0, 0.75, &u2, 1, replay_done, p),
    sim_fluid_start (f, 1.0, 1.0, INFINITY, NULL, 0, replay_done, p),
    sim_fluid_start (f, 4.0, 0.0, INFINITY, &u2, 1, replay_done, p),
    sim_fluid_start (f, 4.0, 0.0, INFINITY, &u2, 1, replay_done, p),
  };
  g_array_append_vals (p->ids, id, G_N_ELEMENTS (id));
  sim_engine_run_until (e, 0.25);
  sim_fluid_cancel (f, id[2]);
  if (isfinite (until))
    sim_engine_run_until (e, until);
  else
    sim_engine_run (e);
  double fired = (double) sim_engine_events_fired (e), now = sim_engine_now (e);
  g_array_append_val (p->log, fired);
  g_array_append_val (p->log, now);
}

static void
replay_clear (Replay *p)
{
  g_array_unref (p->log);
  g_array_unref (p->loads);
  g_array_unref (p->ids);
}

static void
replay_assert_equal (const Replay *a, const Replay *b)
{
  CU_ASSERT_EQUAL_FATAL (a->log->len, b->log->len);
  CU_ASSERT (memcmp (a->log->data, b->log->data, a->log->len * sizeof (double)) == 0);
  CU_ASSERT_EQUAL_FATAL (a->loads->len, b->loads->len);
  CU_ASSERT (memcmp (a->loads->data, b->loads->data, a->loads->len * sizeof (double)) == 0);
}

static SimFluid *
replay_fluid (SimEngine *e)
{
  SimFluid *f = sim_fluid_new (e);
  sim_fluid_add_resource (f, "l0", 4.0);
  sim_fluid_add_resource (f, "l1", 6.0);
  sim_fluid_add_resource (f, "l2", 1.0);
  return f;
}

/* A replay on a reset fluid and engine, after a complete run and after a run stopped
 * half-way (activities running, latencies and completions pending), is bit for bit the
 * replay on new ones: the same completions in the same order at the same times, the same
 * load calls, the same number of events; the old ids never match again. */
static void
test_reset_replays_as_new (void)
{
  Replay fresh, again, cut, after_cut;
  SimEngine *e1 = sim_engine_new ();
  SimFluid *f1 = replay_fluid (e1);
  replay_play (e1, f1, &fresh, INFINITY);
  CU_ASSERT_EQUAL_FATAL (fresh.log->len, 2 * 5 + 2); /* five complete, one cancelled */
  sim_fluid_free (f1);
  sim_engine_free (e1);

  SimEngine *e = sim_engine_new ();
  SimFluid *f = replay_fluid (e);
  replay_play (e, f, &again, INFINITY);
  replay_assert_equal (&fresh, &again);
  SimActivityId old = g_array_index (again.ids, SimActivityId, 0);
  sim_fluid_reset (f);
  sim_engine_reset (e);
  CU_ASSERT_EQUAL (sim_engine_now (e), 0.0);
  replay_play (e, f, &cut, 2.0);
  CU_ASSERT (sim_fluid_n_activities (f) > 0);
  CU_ASSERT (sim_fluid_resource_usage (f, 0) > 0);
  sim_fluid_reset (f);
  sim_engine_reset (e);
  CU_ASSERT_EQUAL (sim_fluid_n_activities (f), 0);
  CU_ASSERT_EQUAL (sim_engine_pending (e), 0);
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (f, 0), 0.0);
  CU_ASSERT_EQUAL (sim_fluid_resource_usage (f, 1), 0.0);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (f, old), -1.0);
  CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (f, 1), "l1");
  replay_play (e, f, &after_cut, INFINITY);
  replay_assert_equal (&fresh, &after_cut);
  CU_ASSERT_EQUAL (sim_fluid_activity_rate (f, old), -1.0);
  replay_clear (&fresh);
  replay_clear (&again);
  replay_clear (&cut);
  replay_clear (&after_cut);
  sim_fluid_free (f);
  sim_engine_free (e);
}

/* Lone joins and leaves (sim/fluid.c: an activity alone on idle resources joins and leaves
 * without the dirty lists) against the general flush (SimFluid.no_lone): four GPUs run chains
 * of kernels (compute, HBM; the compute resource's id above the HBM's, so the load reports'
 * id order differs from the use order), some without latency, some with a third use; every
 * fifth kernel also starts a flow on a link shared by all GPUs and its HBM, so both paths
 * run. Completion times and order, every load report (resource, time, usage), the solves and
 * the engine's events are the same, bit for bit. */
typedef struct
{
  Rec *r;
  GRand *rng;
  GArray *loads; /* double triples: resource, time, usage */
  SimResourceId compute[4], hbm[4], link;
  guint left[4];
} LoneRun;

static void lone_run_next (SimFluid *fluid, SimActivityId id, gpointer user_data);

static void
lone_run_kernel (LoneRun *lr, guint g)
{
  if (lr->left[g] == 0)
    return;
  guint k = lr->left[g]--;
  SimUse uses[3] = { { lr->compute[g], g_rand_double_range (lr->rng, 1e-6, 1e-4) },
                     { lr->hbm[g], g_rand_double_range (lr->rng, 1e3, 1e8) },
                     { lr->link, 1.0 } };
  guint n = k % 7 == 0 ? 3 : k % 11 == 0 ? 1 : 2;
  double latency = k % 6 == 0 ? 0.0 : g_rand_double_range (lr->rng, 1e-6, 1e-5);
  sim_fluid_start (lr->r->fluid, 1.0, latency, INFINITY, uses, n, lone_run_next,
                   GUINT_TO_POINTER (g + 1));
  if (k % 5 == 0)
    {
      SimUse flow_uses[2] = { { lr->link, 1.0 }, { lr->hbm[g], 1.0 } };
      sim_fluid_start (lr->r->fluid, g_rand_double_range (lr->rng, 1e4, 1e6), 2e-6, INFINITY,
                       flow_uses, 2, lone_run_next, NULL);
    }
}

static LoneRun *lone_run_current;

static void
lone_run_next (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  LoneRun *lr = lone_run_current;
  done_cb (fluid, id, lr->r);
  if (user_data != NULL)
    lone_run_kernel (lr, GPOINTER_TO_UINT (user_data) - 1);
}

static void
lone_run_load (SimFluid *fluid, SimResourceId res, double time, double usage, gpointer data)
{
  (void) fluid;
  LoneRun *lr = data;
  double t[3] = { res, time, usage };
  g_array_append_vals (lr->loads, t, 3);
}

static LoneRun *
lone_run (gboolean lone)
{
  LoneRun *lr = g_new0 (LoneRun, 1);
  lr->r = rec_new ();
  lr->r->fluid->no_lone = !lone;
  lr->rng = g_rand_new_with_seed (17);
  lr->loads = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint g = 0; g < 4; g++)
    lr->hbm[g] = sim_fluid_add_resource (lr->r->fluid, "hbm", 3.35e12);
  for (guint g = 0; g < 4; g++)
    lr->compute[g] = sim_fluid_add_resource (lr->r->fluid, "compute", 1.0);
  lr->link = sim_fluid_add_resource (lr->r->fluid, "link", 4.5e11);
  sim_fluid_set_load_func (lr->r->fluid, lone_run_load, lr);
  lone_run_current = lr;
  for (guint g = 0; g < 4; g++)
    {
      lr->left[g] = 200;
      lone_run_kernel (lr, g);
    }
  sim_engine_run (lr->r->engine);
  return lr;
}

static void
lone_run_free (LoneRun *lr)
{
  rec_free (lr->r);
  g_rand_free (lr->rng);
  g_array_unref (lr->loads);
  g_free (lr);
}

static void
test_lone_paths_as_flush (void)
{
  LoneRun *a = lone_run (FALSE), *b = lone_run (TRUE);
  CU_ASSERT_EQUAL_FATAL (a->r->done->len, 4 * 200 + 4 * 40);
  CU_ASSERT_EQUAL_FATAL (b->r->done->len, a->r->done->len);
  CU_ASSERT (memcmp (a->r->done->data, b->r->done->data, a->r->done->len * sizeof (double)) == 0);
  CU_ASSERT (memcmp (a->r->order->data, b->r->order->data,
                     a->r->order->len * sizeof (SimActivityId)) == 0);
  CU_ASSERT_EQUAL_FATAL (a->loads->len, b->loads->len);
  CU_ASSERT (a->loads->len > 3 * 2000);
  CU_ASSERT (memcmp (a->loads->data, b->loads->data, a->loads->len * sizeof (double)) == 0);
  CU_ASSERT_EQUAL (sim_fluid_n_solves (a->r->fluid), sim_fluid_n_solves (b->r->fluid));
  CU_ASSERT_EQUAL (sim_engine_events_fired (a->r->engine), sim_engine_events_fired (b->r->engine));
  lone_run_free (a);
  lone_run_free (b);
}

static const StepsimTest tests[] = {
  { "a quieted resource is not reported until the observer is installed again",
    test_quiet_loads },
  { "lone joins and leaves = the general flush", test_lone_paths_as_flush },
  { "single transfer takes L + S/B", test_single_transfer },
  { "unnamed resources are named on demand, once", test_names_on_demand },
  { "n equal flows get B/n each", test_equal_flows_share },
  { "two-link bottleneck max-min split", test_two_link_bottleneck },
  { "rate bound caps, rest shared", test_rate_bound_caps },
  { "roofline compute bound", test_roofline_compute_bound },
  { "roofline memory bound", test_roofline_memory_bound },
  { "late flow re-shares piecewise", test_late_flow_reshares },
  { "cancel speeds up the others", test_cancel_speeds_up_others },
  { "simultaneous completions in id order", test_simultaneous_completions_in_id_order },
  { "activities without uses", test_no_uses },
  { "load observer series", test_load_observer_series },
  { "one completion event pending", test_one_completion_event_pending },
  { "batched, component-local solves", test_batched_component_local_solves },
  { "a latency end alone flushes at once, simultaneous ones together",
    test_latency_end_flush },
  { "bad arguments refused", test_bad_arguments_refused },
  { "free with running activities", test_free_with_running_activities },
  { "a lone activity gets min(bound, c/w) exactly", test_lone_activity_exact },
  { "a chain of lone activities ends at sim_fluid_lone_end exactly", test_lone_end_exact },
  { "a reset fluid and engine replay as new ones", test_reset_replays_as_new },
  { "sim_fluid_run_lone = the engine's run, refused where it would differ",
    test_run_lone_is_the_engines_run },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/fluid", tests);
}
