/* bench/bench_collective.c — wall time to simulate one all-reduce of 1 GiB on 64 nodes of
 * 8 GPUs (512 ranks) with the ring (one phase of 512 flows) and the hierarchical algorithm
 * (8-GPU rings on every node, 8 concurrent 64-node rings, 8-GPU rings again).
 *
 * Not a test: prints "name<TAB>value<TAB>unit" lines (bench/run.sh format), the wall time of
 * building the cluster and running the collective to completion (best of 3), the simulated
 * time and the fluid's re-solve count. Usage: bench_collective [nodes] (default 64).
 */
#include "config.h"
#include "hardware/collective.h"
#include "hardware/node_catalog.h"
#include "sim/engine.h"
#include "sim/fluid.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct
{
  SimEngine *engine;
  double end;
} DoneAt;

static void
done_at (gpointer user_data)
{
  DoneAt *d = user_data;
  d->end = sim_engine_now (d->engine);
}

static void
report (const char *name, const char *what, double value, const char *unit)
{
  printf ("collective_%s_%s\t%.6g\t%s\n", name, what, value, unit);
}

/* One run: returns the wall time (s); *sim_time and *solves receive the simulated time and
 * the number of component re-solves. */
static double
run_once (guint n_nodes, HwCollectiveAlgorithm algo, double *sim_time, guint64 *solves)
{
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster
      = hw_cluster_new (hw_catalog_node ("DGX-H100", NULL), n_nodes, fluid);
  guint n = hw_cluster_n_ranks (cluster);
  g_autofree guint *ranks = g_new (guint, n);
  for (guint i = 0; i < n; i++)
    ranks[i] = i;
  DoneAt d = { engine, -1 };
  hw_collective_start (cluster, HW_COLLECTIVE_ALL_REDUCE, algo, ranks, n, 1024.0 * 1024 * 1024,
                       done_at, &d);
  sim_engine_run (engine);
  *sim_time = d.end;
  *solves = sim_fluid_n_solves (fluid);
  return (g_get_monotonic_time () - t0) / 1e6;
}

int
main (int argc, char **argv)
{
  guint n_nodes = argc > 1 ? (guint) strtoul (argv[1], NULL, 10) : 64;
  if (n_nodes == 0)
    n_nodes = 64;
  const HwCollectiveAlgorithm algos[] = { HW_ALGORITHM_RING, HW_ALGORITHM_HIERARCHICAL };
  for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
    {
      const char *name = hw_collective_algorithm_name (algos[a]);
      double best = G_MAXDOUBLE, sim = 0;
      guint64 solves = 0;
      for (guint rep = 0; rep < 3; rep++)
        best = MIN (best, run_once (n_nodes, algos[a], &sim, &solves));
      report (name, "ranks", n_nodes * 8.0, "ranks");
      report (name, "wall_time", best, "s");
      report (name, "simulated_time", sim, "s");
      report (name, "solves", (double) solves, "solves");
    }
  return 0;
}
