/* bench/bench_engine.c — throughput of the event engine and of the fluid solver.
 *
 * Not a test: prints one line per measure, "name<TAB>value<TAB>unit", for bench/run.sh.
 * Workloads (all seeded, so runs are comparable):
 *   engine_bulk     N events at uniform random times in [0, 1000) s scheduled up front,
 *                   every tenth cancelled, then run (schedule + cancel + fire per second);
 *   engine_hold     the classic "hold" model: a queue of 100,000 pending events where each
 *                   firing schedules one more at now + Exp(1) s (Vaucher & Duval, CACM 1975);
 *   fluid_chains    1,000 independent resources, each with a chain of 100 sequential
 *                   activities of random amount (a done callback starts the next);
 *   fluid_shared    one link with 1,000 concurrent flows of random amount (each completion
 *                   re-solves the 1,000-flow component), repeated 10 times.
 * Usage: bench_engine [scale]   (scale multiplies the event counts; default 1).
 */
#include "config.h"
#include "sim/engine.h"
#include "sim/fluid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static guint64 n_fired;

static void
count_cb (SimEngine *engine, gpointer user_data)
{
  (void) engine, (void) user_data;
  n_fired++;
}

static double
seconds_since (gint64 t0)
{
  return (g_get_monotonic_time () - t0) / 1e6;
}

static void
report (const char *name, double value, const char *unit)
{
  printf ("%s\t%.6g\t%s\n", name, value, unit);
}

static void
bench_engine_bulk (guint n)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (1);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  SimEventId *ids = g_new (SimEventId, n);
  gint64 t0 = g_get_monotonic_time ();
  for (guint i = 0; i < n; i++)
    ids[i]
        = sim_engine_schedule_at (engine, g_rand_double_range (rng, 0, 1000), count_cb, NULL, NULL);
  for (guint i = 0; i < n; i += 10)
    sim_engine_cancel (engine, ids[i]);
  guint64 fired = sim_engine_run (engine);
  double dt = seconds_since (t0);
  g_free (ids);
  report ("engine_bulk_events", n, "events");
  report ("engine_bulk_fired", fired, "events");
  report ("engine_bulk_rate", n / dt, "events/s");
}

typedef struct
{
  GRand *rng;
  guint64 left;
} Hold;

static void
hold_cb (SimEngine *engine, gpointer user_data)
{
  Hold *h = user_data;
  if (h->left == 0)
    return;
  h->left--;
  double delay = -log (1.0 - g_rand_double (h->rng)); /* Exp(1) by inversion */
  sim_engine_schedule_after (engine, delay, hold_cb, h, NULL);
}

static void
bench_engine_hold (guint n)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Hold h = { g_rand_new_with_seed (2), n };
  for (guint i = 0; i < 100000; i++)
    sim_engine_schedule_at (engine, g_rand_double (h.rng), hold_cb, &h, NULL);
  gint64 t0 = g_get_monotonic_time ();
  guint64 fired = sim_engine_run (engine);
  double dt = seconds_since (t0);
  g_rand_free (h.rng);
  report ("engine_hold_rate", fired / dt, "events/s");
}

typedef struct
{
  GRand *rng;
  SimResourceId res;
  guint left;
  guint64 *done;
} Chain;

static void
chain_next (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) id;
  Chain *c = user_data;
  (*c->done)++;
  if (c->left == 0)
    return;
  c->left--;
  SimUse use = { c->res, 1.0 };
  sim_fluid_start (fluid, g_rand_double_range (c->rng, 1e6, 1e8), 1e-6, INFINITY, &use, 1,
                   chain_next, c);
}

static void
bench_fluid_chains (guint n_res, guint length)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (GRand) rng = g_rand_new_with_seed (3);
  Chain *chains = g_new (Chain, n_res);
  guint64 done = 0;
  gint64 t0 = g_get_monotonic_time ();
  for (guint j = 0; j < n_res; j++)
    {
      chains[j] = (Chain){ rng, sim_fluid_add_resource (fluid, "gpu", 1e12), length, &done };
      chain_next (fluid, 0, &chains[j]);
    }
  done -= n_res; /* the priming calls above were not completions */
  sim_engine_run (engine);
  double dt = seconds_since (t0);
  g_free (chains);
  report ("fluid_chains_activities", done, "activities");
  report ("fluid_chains_rate", done / dt, "activities/s");
  report ("fluid_chains_events_rate", sim_engine_events_fired (engine) / dt, "events/s");
}

static void
count_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) fluid, (void) id;
  (*(guint64 *) user_data)++;
}

static void
bench_fluid_shared (guint n_flows, guint reps)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (4);
  guint64 done = 0;
  gint64 t0 = g_get_monotonic_time ();
  for (guint rep = 0; rep < reps; rep++)
    {
      g_autoptr (SimEngine) engine = sim_engine_new ();
      g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
      SimUse use = { sim_fluid_add_resource (fluid, "link", 50e9), 1.0 };
      for (guint i = 0; i < n_flows; i++)
        sim_fluid_start (fluid, g_rand_double_range (rng, 1e6, 1e9), 2e-6, INFINITY, &use, 1,
                         count_done, &done);
      sim_engine_run (engine);
    }
  double dt = seconds_since (t0);
  report ("fluid_shared_activities", done, "activities");
  report ("fluid_shared_rate", done / dt, "activities/s");
}

int
main (int argc, char **argv)
{
  double scale = argc > 1 ? g_ascii_strtod (argv[1], NULL) : 1.0;
  if (!(scale > 0))
    {
      fprintf (stderr, "usage: %s [scale > 0]\n", argv[0]);
      return 2;
    }
  bench_engine_bulk ((guint) (2e6 * scale));
  bench_engine_hold ((guint) (2e6 * scale));
  bench_fluid_chains (1000, 100);
  bench_fluid_shared (1000, 10);
  return n_fired > 0 ? 0 : 1;
}
