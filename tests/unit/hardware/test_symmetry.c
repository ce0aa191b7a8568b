/* tests/unit/hardware/test_symmetry.c — the pieces rank classes rest on
 * (models/plan/rank_classes.h): the fluid's fold (sim/fluid.h), the topology's shift map
 * (hardware/topology.h) and a collective run on one instance per orbit
 * (hardware/cluster.h hw_cluster_set_period). */
#include "config.h"

#include "tests/testlib.h"
#include "tests/unit/hardware/fixture.h"

/* Four equal flows of 6 B on one 12 B/s link take 6 / (12 / 4) = 2 s; folded, one flow
 * with scale 4 on that link must take the same 2 s. A second resource folded onto the
 * first with scale 2 counts twice there: a flow over both alone has weight 4 + 2 = 6 on the
 * first and gets 12 / 6 = 2 B/s. */
static void
test_fold (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  SimResourceId a = sim_fluid_add_resource (fluid, "a", 12);
  SimResourceId b = sim_fluid_add_resource (fluid, "b", 12);
  const SimResourceId canon[] = { a, a };
  const double scale[] = { 4, 2 };
  sim_fluid_set_fold (fluid, canon, scale);
  SimUse ua = { a, 1 };
  SimActivityId id = sim_fluid_start (fluid, 6, 0, INFINITY, &ua, 1, NULL, NULL);
  sim_engine_run_until (engine, 1.0);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (fluid, id), 3.0, 1e-12);
  sim_engine_run (engine);
  STEPSIM_ASSERT_REL (sim_engine_now (engine), 2.0, 1e-12);
  SimUse both[] = { { a, 1 }, { b, 1 } };
  id = sim_fluid_start (fluid, 4, 0, INFINITY, both, 2, NULL, NULL);
  STEPSIM_ASSERT_REL (sim_fluid_activity_rate (fluid, id), 2.0, 1e-12);
  sim_fluid_set_fold (fluid, NULL, NULL);
}

/* A 4-node cluster of 4 GPUs behind PCIe switches of 2 with an uplink and 2 NICs per node
 * (not rail-optimised): a shift by one node maps every route onto the shifted route, for
 * every pair; a shift by 2 GPUs is no symmetry across nodes; on one node it is. */
static HwNodeSpec
switched_node (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  node.intra = HW_INTRA_PCIE;
  node.gpus_per_pcie_switch = 2;
  node.pcie_switch_uplink = 16 * GBPS;
  node.n_nics = 2;
  node.rail_optimized = FALSE;
  return node;
}

static void
test_shift_map (void)
{
  HwNodeSpec node = switched_node ();
  Fixture f = fixture_new (&node, 4, 1.0);
  const HwTopology *t = hw_cluster_topology (f.cluster);
  guint nr = sim_fluid_n_resources (f.fluid), n = hw_topology_n_ranks (t);
  g_autofree SimResourceId *perm = g_new (SimResourceId, nr);
  CU_ASSERT_FALSE (hw_topology_shift_map (t, 2, perm));
  CU_ASSERT_FALSE (hw_topology_shift_map (t, 3, perm));
  CU_ASSERT_FATAL (hw_topology_shift_map (t, 4, perm));
  gboolean ok = TRUE;
  for (guint s = 0; s < n; s++)
    for (guint d = 0; d < n; d++)
      {
        if (s == d)
          continue;
        SimResourceId r1[HW_ROUTE_MAX], r2[HW_ROUTE_MAX];
        guint k1 = hw_topology_route (t, s, d, r1, NULL);
        guint k2 = hw_topology_route (t, (s + 4) % n, (d + 4) % n, r2, NULL);
        ok = ok && k1 == k2;
        for (guint i = 0; ok && i < k1; i++)
          ok = perm[r1[i]] == r2[i];
      }
  CU_ASSERT (ok);
  fixture_free (&f);
  Fixture one = fixture_new (&node, 1, 1.0);
  g_autofree SimResourceId *p1 = g_new (SimResourceId, sim_fluid_n_resources (one.fluid));
  CU_ASSERT (hw_topology_shift_map (hw_cluster_topology (one.cluster), 2, p1));
  CU_ASSERT_FALSE (hw_topology_shift_map (hw_cluster_topology (one.cluster), 1, p1));
  fixture_free (&one);
  hw_node_spec_clear (&node);
}

/* A ring all-reduce over all 16 ranks and, beside it, four all-gathers over each node's
 * ranks: with the cluster's period 4 (one node) one ring flow per orbit and one of the four
 * node instances run, and both take what the full simulation gives (to 1e-9). */
static double
run_pair (guint period, double *node_time)
{
  HwNodeSpec node = switched_node ();
  Fixture f = fixture_new (&node, 4, 2.0);
  if (period < 16)
    hw_cluster_set_period (f.cluster, period);
  guint all[16];
  for (guint i = 0; i < 16; i++)
    all[i] = i;
  DoneAt ring = { f.engine, -1 }, local[4];
  hw_collective_start (f.cluster, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_RING, all, 16,
                       64e6, fixture_done_at, &ring);
  for (guint k = 0; k < (period < 16 ? 1 : 4); k++)
    {
      local[k] = (DoneAt){ f.engine, -1 };
      hw_collective_start (f.cluster, HW_COLLECTIVE_ALL_GATHER, HW_ALGORITHM_RING, all + 4 * k,
                           4, 32e6, fixture_done_at, &local[k]);
    }
  sim_engine_run (f.engine);
  *node_time = local[0].end;
  fixture_free (&f);
  hw_node_spec_clear (&node);
  return ring.end;
}

static void
test_collective_orbits (void)
{
  double full_node, folded_node;
  double full = run_pair (16, &full_node), folded = run_pair (4, &folded_node);
  CU_ASSERT (full > 0 && full_node > 0);
  STEPSIM_ASSERT_REL (folded, full, 1e-9);
  STEPSIM_ASSERT_REL (folded_node, full_node, 1e-9);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "fold: one flow with multiplicity m gets the rate of m equal flows", test_fold },
    { "shift map: routes of shifted pairs are the permuted routes", test_shift_map },
    { "collectives on one instance per orbit take the full-simulation time", test_collective_orbits },
  };
  return STEPSIM_RUN_TESTS ("hardware/symmetry", tests);
}
