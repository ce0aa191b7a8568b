/* tests/unit/hardware/test_symmetry.c — the pieces rank classes rest on
 * (models/plan/rank_classes.h): the fluid's fold (sim/fluid.h), the topology's shift map
 * (hardware/topology.h) and a collective run on one instance per orbit
 * (hardware/cluster.h hw_cluster_set_shift). */
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
 * (not rail-optimised: GPUs 0 and 1 use NIC 0 on switch 0, GPUs 2 and 3 NIC 1 on switch 1).
 * A shift maps the topology onto itself when it moves whole nodes, or rotates the GPUs
 * inside each node in blocks of whole switches or inside one switch; then every route of a
 * shifted pair is the permuted route, for every pair. */
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

/* Whether `sh` maps the fixture's topology onto itself and every route of (σs, σd) is perm
 * applied to the route of (s, d) (and each host route, unless none runs). */
static gboolean
shift_maps_routes_in (const Fixture *f, gboolean no_host, HwRankShift sh)
{
  const HwTopology *t = hw_cluster_topology (f->cluster);
  SimFluid *fluid = f->fluid;
  g_autofree SimResourceId *perm = g_new (SimResourceId, sim_fluid_n_resources (fluid));
  if (!hw_topology_shift_map (t, &sh, perm))
    return FALSE;
  guint n = hw_topology_n_ranks (t);
  gboolean ok = TRUE;
  for (guint s = 0; s < n; s++)
    for (guint d = 0; d < n; d++)
      {
        if (s == d)
          continue;
        SimResourceId r1[HW_ROUTE_MAX], r2[HW_ROUTE_MAX];
        guint k1 = hw_topology_route (t, s, d, r1, NULL);
        guint k2 = hw_topology_route (t, hw_rank_shift_image (&sh, s),
                                      hw_rank_shift_image (&sh, d), r2, NULL);
        ok = ok && k1 == k2;
        for (guint i = 0; ok && i < k1; i++)
          ok = perm[r1[i]] == r2[i];
      }
  for (guint r = 0; ok && !no_host && r < n; r++) /* host routes too, where they run */
    for (guint dir = 0; dir < 2; dir++)
      {
        SimResourceId h1[HW_ROUTE_MAX], h2[HW_ROUTE_MAX];
        guint k1 = hw_topology_host_route (t, r, dir, h1);
        guint k2 = hw_topology_host_route (t, hw_rank_shift_image (&sh, r), dir, h2);
        ok = ok && k1 == k2;
        for (guint i = 0; ok && i < k1; i++)
          ok = perm[h1[i]] == h2[i];
      }
  CU_ASSERT (ok);
  return TRUE;
}

static gboolean
shift_maps_routes (const Fixture *f, HwRankShift sh)
{
  return shift_maps_routes_in (f, FALSE, sh);
}

static void
test_shift_map (void)
{
  HwNodeSpec node = switched_node ();
  Fixture f = fixture_new (&node, 4, 1.0);
  /* across nodes: whole nodes only */
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (16, 16, 4)));
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (16, 8, 4))); /* node pairs swap */
  CU_ASSERT_FALSE (shift_maps_routes (&f, hw_rank_shift_plain (16, 16, 2)));
  CU_ASSERT_FALSE (shift_maps_routes (&f, hw_rank_shift_plain (16, 16, 3)));
  CU_ASSERT_FALSE (shift_maps_routes (&f, hw_rank_shift_plain (16, 8, 2)));
  /* inside every node: whole switches (the switches and their NICs swap), or inside one */
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (16, 4, 2)));
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (16, 2, 1)));
  CU_ASSERT_FALSE (shift_maps_routes (&f, hw_rank_shift_plain (16, 4, 1)));
  fixture_free (&f);
  Fixture one = fixture_new (&node, 1, 1.0);
  CU_ASSERT (shift_maps_routes (&one, hw_rank_shift_plain (4, 4, 2)));
  CU_ASSERT_FALSE (shift_maps_routes (&one, hw_rank_shift_plain (4, 4, 1)));
  fixture_free (&one);
  hw_node_spec_clear (&node);
}

/* Pods (hardware/topology.c, translation symmetry): 4 fixture nodes of 2 GPUs in pods of 2
 * nodes (4 ranks). Whole pods swapping (block 8, d 4) and node pairs swapping inside a pod
 * (block 4, d 2) map every route, pod core links included; a shift by one node around all
 * four (block 8, d 2) would send node 1 → node 2 (across pods) onto node 2 → node 3 (inside
 * pod 1), and blocks of 3 nodes over pods of 2 (12 ranks, block 6) straddle pods: both are
 * refused, though one pod accepts them. GPU rotations inside every node stay valid. */
static void
test_shift_map_pods (void)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  Fixture f = fixture_new_pods (&node, 4, 1.0, 2, 2.0);
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (8, 8, 4)));
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (8, 4, 2)));
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (8, 2, 1)));
  CU_ASSERT_FALSE (shift_maps_routes (&f, hw_rank_shift_plain (8, 8, 2)));
  fixture_free (&f);
  Fixture one = fixture_new_pods (&node, 4, 1.0, 4, 2.0);
  CU_ASSERT (shift_maps_routes (&one, hw_rank_shift_plain (8, 8, 2)));
  fixture_free (&one);
  Fixture each = fixture_new_pods (&node, 4, 1.0, 1, 2.0); /* every node its own pod */
  CU_ASSERT (shift_maps_routes (&each, hw_rank_shift_plain (8, 8, 2)));
  fixture_free (&each);
  Fixture six = fixture_new_pods (&node, 6, 1.0, 2, 1.0);
  CU_ASSERT_FALSE (shift_maps_routes (&six, hw_rank_shift_plain (12, 6, 2)));
  CU_ASSERT (shift_maps_routes (&six, hw_rank_shift_plain (12, 12, 4)));
  fixture_free (&six);
  Fixture six_one = fixture_new_pods (&node, 6, 1.0, 6, 1.0);
  CU_ASSERT (shift_maps_routes (&six_one, hw_rank_shift_plain (12, 6, 2)));
  fixture_free (&six_one);
  hw_node_spec_clear (&node);
}

/* DGX-like nodes of 4 GPUs on PCIe switches of 2, NVLink between them and a NIC per GPU on
 * its own switch: a rotation by one GPU splits the switches, no symmetry while host copies
 * may cross them. Declared without host copies, no route crosses a switch uplink (NVLink
 * inside a node, each GPU's NIC on its switch): the rotation maps every route. With one NIC
 * per node (on switch 0, which GPUs 2 and 3 reach over the uplinks) it still does not. */
static void
test_shift_map_idle_switches (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  node.gpus_per_pcie_switch = 2;
  node.pcie_switch_uplink = 16 * GBPS;
  Fixture f = fixture_new (&node, 3, 1.0);
  HwRankShift one = hw_rank_shift_plain (12, 4, 1);
  CU_ASSERT_FALSE (shift_maps_routes (&f, one));
  hw_cluster_set_no_host_copies (f.cluster);
  CU_ASSERT (shift_maps_routes_in (&f, TRUE, one));
  fixture_free (&f);
  node.n_nics = 1;
  node.rail_optimized = FALSE;
  Fixture g = fixture_new (&node, 3, 1.0);
  hw_cluster_set_no_host_copies (g.cluster);
  CU_ASSERT_FALSE (shift_maps_routes_in (&g, TRUE, one));
  CU_ASSERT (shift_maps_routes_in (&g, TRUE, hw_rank_shift_plain (12, 12, 4)));
  fixture_free (&g);
  hw_node_spec_clear (&node);
}

/* Rail-optimised nodes of 4 GPUs (GPU j uses NIC j mod n_nics, no PCIe switches), 3 nodes.
 * 4 NICs: rotating the GPUs inside every node rotates the NICs with them, in the whole node
 * or in blocks of 2. 2 NICs (GPUs 0, 2 on NIC 0; 1, 3 on NIC 1): a rotation by one sends
 * NIC 0's GPUs onto NIC 1's and back, a one-to-one NIC map. 3 NICs (GPUs 0 and 3 share NIC
 * 0): a rotation by one sends GPU 0 onto NIC 1 and GPU 3 onto NIC 0, no NIC map: refused. */
static void
test_shift_map_rails (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture f = fixture_new (&node, 3, 1.0);
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (12, 4, 1)));
  CU_ASSERT (shift_maps_routes (&f, hw_rank_shift_plain (12, 2, 1)));
  fixture_free (&f);
  node.n_nics = 2;
  Fixture two = fixture_new (&node, 3, 1.0);
  CU_ASSERT (shift_maps_routes (&two, hw_rank_shift_plain (12, 4, 1)));
  fixture_free (&two);
  node.n_nics = 3;
  Fixture g = fixture_new (&node, 3, 1.0);
  CU_ASSERT_FALSE (shift_maps_routes (&g, hw_rank_shift_plain (12, 4, 1)));
  fixture_free (&g);
  hw_node_spec_clear (&node);
}

/* A ring all-reduce over all 16 ranks and, beside it, four all-gathers over each node's
 * ranks: with the cluster's shift by one node (4 ranks) one ring flow per orbit and one of
 * the four node instances run, and both take what the full simulation gives (to 1e-9). */
static double
run_pair (gboolean folded, double *node_time)
{
  HwNodeSpec node = switched_node ();
  Fixture f = fixture_new (&node, 4, 2.0);
  HwRankShift sh = hw_rank_shift_plain (16, 16, 4);
  if (folded)
    hw_cluster_set_shift (f.cluster, &sh);
  guint all[16];
  for (guint i = 0; i < 16; i++)
    all[i] = i;
  DoneAt ring = { f.engine, -1 }, local[4];
  hw_collective_start (f.cluster, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_RING, all, 16,
                       64e6, fixture_done_at, &ring);
  for (guint k = 0; k < (folded ? 1 : 4); k++)
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

/* A cluster of `n_nodes` × `node` for the folded-vs-full runs below, `sh` checked
 * invariant and set when `folded`. */
static Fixture
fixture_folded (const HwNodeSpec *node, guint n_nodes, const HwRankShift *sh, gboolean folded)
{
  Fixture f = fixture_new (node, n_nodes, 2.0);
  CU_ASSERT (hw_cluster_shift_invariant (f.cluster, sh));
  if (folded)
    hw_cluster_set_shift (f.cluster, sh);
  return f;
}

/* Runs `f` to the end and frees it and `node`: the end of `first`, and of `second` into
 * *second_time. */
static double
run_to_end (Fixture *f, HwNodeSpec *node, const DoneAt *first, const DoneAt *second,
            double *second_time)
{
  sim_engine_run (f->engine);
  double t = first->end;
  *second_time = second->end;
  fixture_free (f);
  hw_node_spec_clear (node);
  return t;
}

/* One collective of the folded-vs-full runs below: it must be invariant under `sh`
 * (hw_collective_shift_invariant), and starts (its end into *done) unless `skip` (folded:
 * another instance of its orbit stands for it). */
static void
start_checked (Fixture *f, HwCollectiveKind kind, const guint *members, guint n, double bytes,
               const HwRankShift *sh, gboolean skip, DoneAt *done)
{
  CU_ASSERT (hw_collective_shift_invariant (f->cluster, kind, HW_ALGORITHM_RING, members, n,
                                            bytes, sh));
  *done = (DoneAt){ f->engine, -1 };
  if (!skip)
    hw_collective_start (f->cluster, kind, HW_ALGORITHM_RING, members, n, bytes,
                         fixture_done_at, done);
}

/* Inside every node, 4 GPUs on 2 switches: an all-reduce over each node's GPUs and
 * all-gathers over the GPU pairs {0, 2} and {1, 3} of each node (rank r and r + 2 pair
 * up), all at once. Under the shift by 2 inside nodes (switch 0's GPUs onto switch 1's)
 * every instance is its own image (the node's ring 0→1→2→3→0 becomes 2→3→0→1→2, the same
 * edges; a pair's members swap): each runs with half its flows standing for the other
 * half, and takes what the full simulation gives (to 1e-9). */
static double
run_inside (gboolean folded, double *pair_time)
{
  HwNodeSpec node = switched_node ();
  HwRankShift sh = hw_rank_shift_plain (16, 4, 2);
  Fixture f = fixture_folded (&node, 4, &sh, folded);
  guint members[12][4];
  DoneAt done[12];
  guint k = 0;
  for (guint a = 0; a < 4; a++)
    {
      for (guint j = 0; j < 4; j++)
        members[k][j] = 4 * a + j;
      start_checked (&f, HW_COLLECTIVE_ALL_REDUCE, members[k], 4, 64e6, &sh, FALSE, &done[k]);
      k++;
      for (guint j = 0; j < 2; j++, k++)
        {
          members[k][0] = 4 * a + j, members[k][1] = 4 * a + j + 2;
          start_checked (&f, HW_COLLECTIVE_ALL_GATHER, members[k], 2, 32e6, &sh, FALSE,
                         &done[k]);
        }
    }
  return run_to_end (&f, &node, &done[0], &done[1], pair_time);
}

/* The group of both: whole nodes shifted (σ: 4 places in blocks of 16) and every node's
 * GPUs rotated by a switch (τ: 2 places in blocks of 4), 4 nodes of 4 GPUs. Each node's
 * ring all-reduce (τ maps it onto itself, σ onto the next node's) and each rail's ring
 * across the nodes, GPUs {j, j + 4, j + 8, j + 12} (σ maps it onto itself, τ onto rail
 * j + 2), all at once. Folded, one instance per orbit runs: node 0's, rails 0 and 1. Times
 * as in the full simulation (to 1e-9). */
static double
run_compound (gboolean folded, double *rail_time)
{
  HwNodeSpec node = switched_node ();
  HwRankShift sh = hw_rank_shift_with_level (hw_rank_shift_plain (16, 16, 4), 1, 4, 2);
  Fixture f = fixture_folded (&node, 4, &sh, folded);
  guint members[8][4];
  DoneAt done[8];
  for (guint k = 0; k < 8; k++)
    {
      for (guint i = 0; i < 4; i++)
        members[k][i] = k < 4 ? 4 * k + i : (k - 4) + 4 * i; /* nodes, then rails */
      /* folded: stood for by node 0's ring, rail 0's or rail 1's */
      start_checked (&f, HW_COLLECTIVE_ALL_REDUCE, members[k], 4, 48e6, &sh,
                     folded && k != 0 && k != 4 && k != 5, &done[k]);
    }
  return run_to_end (&f, &node, &done[0], &done[5], rail_time);
}

/* One NVSwitch node of 8 GPUs under the rotation by one GPU (every GPU one class): the
 * all-gathers over {j, j + 4} are one orbit, and {0, 4} is fixed by the rotation by 4, a
 * divisor above √8 (the stabilizer's search counts those down from the cofactors). Folded,
 * {0, 4} alone runs half its flows; its time is the full simulation's. */
static double
run_halves (gboolean folded, double *second)
{
  HwNodeSpec node = fixture_nvswitch_node (8);
  HwRankShift sh = hw_rank_shift_plain (8, 8, 1);
  Fixture f = fixture_folded (&node, 1, &sh, folded);
  guint members[4][2];
  DoneAt done[4];
  for (guint j = 0; j < 4; j++)
    {
      members[j][0] = j, members[j][1] = j + 4;
      start_checked (&f, HW_COLLECTIVE_ALL_GATHER, members[j], 2, 40e6, &sh, folded && j > 0,
                     &done[j]);
    }
  return run_to_end (&f, &node, &done[0], &done[0], second);
}

/* The two times `run` reports, full and folded: positive, and equal to 1e-9. */
static void
check_folded (double (*run) (gboolean folded, double *second))
{
  double full2, folded2;
  double full = run (FALSE, &full2), folded = run (TRUE, &folded2);
  CU_ASSERT (full > 0 && full2 > 0);
  STEPSIM_ASSERT_REL (folded, full, 1e-9);
  STEPSIM_ASSERT_REL (folded2, full2, 1e-9);
}

/* NCCL's double binary tree over 3 nodes (one GPU each: ranks 0, 4, 8 of 3 nodes of 4): tree
 * 0 has the node edges 1 → 2 and 2 → 0, tree 1 (its shift for odd counts) 0 → 1 and 2 → 0.
 * As a set of pairs {0→1, 1→2, 2→0} the rotation by one node maps it onto itself; as a
 * multiset it does not (2 → 0 is there twice: node 2's NIC sends twice as much). So where
 * the tree is kept — pods of one node whose core tapers (2:1) — the collective is no
 * symmetry of the shift by a node, while a ring over the same ranks is. In one pod the
 * tree's node edges are laid as a circulant (k → k + 1 and k → k − 1, collective_lower.c
 * tree_edges_as_circulant, the tree's time: test_collective), which the shift maps onto
 * itself — unless the group has fewer channels than local GPUs (fewer NICs), where the
 * tree is kept. */
static void
test_tree_multiset (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  const guint members[] = { 0, 4, 8 };
  HwRankShift sh = hw_rank_shift_plain (12, 12, 4);
  Fixture pods = fixture_new_pods (&node, 3, 1.0, 1, 2.0);
  CU_ASSERT_FALSE (hw_collective_shift_invariant (pods.cluster, HW_COLLECTIVE_ALL_REDUCE,
                                                  HW_ALGORITHM_TREE, members, 3, 64e6, &sh));
  CU_ASSERT (hw_collective_shift_invariant (pods.cluster, HW_COLLECTIVE_ALL_REDUCE,
                                            HW_ALGORITHM_RING, members, 3, 64e6, &sh));
  fixture_free (&pods);
  Fixture f = fixture_new (&node, 3, 1.0);
  CU_ASSERT (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_REDUCE,
                                            HW_ALGORITHM_TREE, members, 3, 64e6, &sh));
  fixture_free (&f);
  /* every GPU of the 3 nodes on 2 NICs a node: 2 channels for 4 local GPUs, the tree kept */
  node.n_nics = 2;
  Fixture two = fixture_new (&node, 3, 1.0);
  g_autofree guint *all = fixture_ranks (0, 12);
  CU_ASSERT_FALSE (hw_collective_shift_invariant (two.cluster, HW_COLLECTIVE_ALL_REDUCE,
                                                  HW_ALGORITHM_TREE, all, 12, 64e6, &sh));
  fixture_free (&two);
  hw_node_spec_clear (&node);
}

/* The orbits of a shift's group, found by closing under its generators (every rank's
 * orbit, as the least member, into `orbit`), against rank_shift.h's closed forms: one
 * representative per orbit, hw_rank_shift_rep inside the orbit, orbits of
 * hw_rank_shift_multiplicity ranks, the dense index increasing and inverted by
 * hw_rank_shift_rank. */
static void
check_orbits (const HwRankShift *sh)
{
  guint n = sh->n;
  CU_ASSERT_FATAL (hw_rank_shift_valid (sh));
  g_autofree guint *orbit = g_new (guint, n), *size = g_new0 (guint, n), *reps = g_new0 (guint, n);
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint k = hw_rank_shift_generators (sh, gen);
  for (guint r = 0; r < n; r++)
    orbit[r] = r;
  for (gboolean changed = TRUE; changed;) /* least member reachable, to a fixed point */
    {
      changed = FALSE;
      for (guint r = 0; r < n; r++)
        for (guint i = 0; i < k; i++)
          {
            guint s = hw_rank_shift_image (&gen[i], r), m = MIN (orbit[r], orbit[s]);
            if (orbit[r] != m || orbit[s] != m)
              orbit[r] = orbit[s] = m, changed = TRUE;
          }
    }
  guint n_reps = 0;
  for (guint r = 0; r < n; r++)
    {
      size[orbit[r]]++;
      if (hw_rank_shift_is_rep (sh, r))
        {
          reps[orbit[r]]++;
          CU_ASSERT_EQUAL (hw_rank_shift_index (sh, r), n_reps);
          CU_ASSERT_EQUAL (hw_rank_shift_rank (sh, n_reps), r);
          n_reps++;
        }
      guint q = hw_rank_shift_rep (sh, r);
      CU_ASSERT (hw_rank_shift_is_rep (sh, q) && orbit[q] == orbit[r]);
      CU_ASSERT_EQUAL (hw_rank_shift_index (sh, r), hw_rank_shift_index (sh, q));
    }
  CU_ASSERT_EQUAL (n_reps, hw_rank_shift_n_reps (sh));
  for (guint r = 0; r < n; r++)
    if (orbit[r] == r)
      {
        CU_ASSERT_EQUAL (reps[r], 1);
        CU_ASSERT_EQUAL (size[r], hw_rank_shift_multiplicity (sh));
      }
}

/* Plain, two and three levels (pods of 32 ranks, nodes of 8, switch pairs; a stage of 2
 * pods in 2 stages), levels that move nothing, and the identity. */
static void
test_rank_shift_levels (void)
{
  HwRankShift plain = hw_rank_shift_plain (64, 32, 8);
  HwRankShift two = hw_rank_shift_with_level (plain, 1, 8, 2);
  HwRankShift three = hw_rank_shift_with_level (hw_rank_shift_with_level (
                                                  hw_rank_shift_plain (128, 64, 32), 1, 32, 8),
                                                2, 8, 2);
  HwRankShift gap = hw_rank_shift_with_level (hw_rank_shift_plain (64, 64, 64), 1, 16, 4);
  HwRankShift id = hw_rank_shift_identity (12);
  const HwRankShift *all[] = { &plain, &two, &three, &gap, &id };
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    check_orbits (all[i]);
  CU_ASSERT (hw_rank_shift_is_plain (&plain) && !hw_rank_shift_is_plain (&two));
  CU_ASSERT (hw_rank_shift_is_identity (&id) && !hw_rank_shift_is_identity (&gap));
  CU_ASSERT_EQUAL (hw_rank_shift_n_reps (&three), 2 * 2); /* 2 stages × (8 / 8 · 2) */
  CU_ASSERT_EQUAL (hw_rank_shift_multiplicity (&three), 2 * 4 * 4);
  /* a level's block must divide the previous level's d */
  HwRankShift bad = hw_rank_shift_with_level (plain, 1, 16, 2);
  CU_ASSERT_FALSE (hw_rank_shift_valid (&bad));
}

/* The group of σ (a node: 4 places in blocks of 8) and τ (2 places inside each node's 4
 * GPUs) on 2 nodes: the pair {0, 6} is fixed by neither (σ: 0 → 4, τ: 0 → 2) but by στ
 * (0 → 2 → 6, 6 → 4 → 0). Its stabilizer is then no product of the two shifts' steps, one
 * flow per source no longer stands for its orbit: the collective is refused. The pair
 * {0, 4} (fixed by σ) is not. */
static void
test_diagonal_stabilizer (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture f = fixture_new (&node, 2, 1.0);
  HwRankShift sh = hw_rank_shift_with_level (hw_rank_shift_plain (8, 8, 4), 1, 4, 2);
  const guint diagonal[] = { 0, 6 }, along[] = { 0, 4 };
  CU_ASSERT_FALSE (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                                  HW_ALGORITHM_RING, diagonal, 2, 8e6, &sh));
  CU_ASSERT (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                            HW_ALGORITHM_RING, along, 2, 8e6, &sh));
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Answers are kept per question (hw_collective_shift_invariant: per cluster, collective and
 * shift): on one cluster the pair {0, 6} of test_diagonal_stabilizer is invariant under σ
 * alone (σ moves it to {4, 2}: only the identity fixes it, every flow its own orbit), not
 * under the group of σ and τ, and again under σ, whatever was asked before; and the same
 * answer twice. */
static void
test_invariant_answers (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture f = fixture_new (&node, 2, 1.0);
  HwRankShift sigma = hw_rank_shift_plain (8, 8, 4);
  HwRankShift both = hw_rank_shift_with_level (sigma, 1, 4, 2);
  const guint diagonal[] = { 0, 6 };
  for (guint round = 0; round < 2; round++)
    {
      CU_ASSERT (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                                HW_ALGORITHM_RING, diagonal, 2, 8e6, &sigma));
      CU_ASSERT_FALSE (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                                      HW_ALGORITHM_RING, diagonal, 2, 8e6,
                                                      &both));
    }
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Three levels on 4 nodes of 4 GPUs: pairs of nodes swap (8 places in blocks of 16), the
 * nodes of a pair swap (4 in blocks of 8), every node's GPUs rotate by 2 (in blocks of 4).
 * {0, 14} is fixed by the product of all three (0 → 8 → 12 → 14) and by no product of
 * fewer; {0, 6} by the last two: both refused. {0, 8} (fixed by the first) is not. */
static void
test_diagonal_three_levels (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture f = fixture_new (&node, 4, 1.0);
  HwRankShift sh = hw_rank_shift_with_level (
      hw_rank_shift_with_level (hw_rank_shift_plain (16, 16, 8), 1, 8, 4), 2, 4, 2);
  const guint all[] = { 0, 14 }, two[] = { 0, 6 }, along[] = { 0, 8 };
  CU_ASSERT (hw_cluster_shift_invariant (f.cluster, &sh));
  CU_ASSERT_FALSE (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                                  HW_ALGORITHM_RING, all, 2, 8e6, &sh));
  CU_ASSERT_FALSE (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                                  HW_ALGORITHM_RING, two, 2, 8e6, &sh));
  CU_ASSERT (hw_collective_shift_invariant (f.cluster, HW_COLLECTIVE_ALL_GATHER,
                                            HW_ALGORITHM_RING, along, 2, 8e6, &sh));
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

static void
test_collective_orbits (void)
{
  check_folded (run_pair);
  check_folded (run_inside);
  check_folded (run_compound);
  check_folded (run_halves);
}

/* Collective groups (hardware/collective.h hw_collective_group): equal member lists are one
 * group; each distinct (group, kind, algorithm, bytes) is prepared once, however often it
 * starts and through either API, and once more when the rank shift changes. The oracle
 * for the shift: a ring all-reduce over all 16 ranks on the idle cluster takes the same
 * time full and folded by whole nodes (test_collective_orbits); a start reusing the
 * preparation made before the fold (all 16 flows kept, each then standing for its orbit of
 * 4) would load every link 4 times over and take longer. */
static double
timed_group_start (Fixture *f, guint group, double bytes)
{
  DoneAt d = { f->engine, -1 };
  double t0 = sim_engine_now (f->engine);
  CU_ASSERT (hw_collective_start_group (f->cluster, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_RING,
                                        group, bytes, -1, fixture_done_at, &d)
             > 0);
  sim_engine_run (f->engine);
  return d.end - t0;
}

static void
test_collective_groups (void)
{
  HwNodeSpec node = switched_node ();
  HwRankShift sh = hw_rank_shift_plain (16, 16, 4);
  Fixture f = fixture_folded (&node, 4, &sh, FALSE);
  guint all[16], again[16];
  for (guint i = 0; i < 16; i++)
    all[i] = again[i] = i;
  guint g = hw_collective_group (f.cluster, all, 16);
  CU_ASSERT (g > 0);
  CU_ASSERT_EQUAL (hw_collective_group (f.cluster, again, 16), g); /* by value */
  CU_ASSERT_NOT_EQUAL (hw_collective_group (f.cluster, all, 4), g);
  CU_ASSERT_EQUAL (hw_collective_group_n_prepared (f.cluster), 0);
  double full = timed_group_start (&f, g, 64e6);
  CU_ASSERT (full > 0);
  STEPSIM_ASSERT_REL (timed_group_start (&f, g, 64e6), full, 1e-12);
  STEPSIM_ASSERT_REL (fixture_run_collective (&f, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_RING,
                                               again, 16, 64e6),
                      full, 1e-12);
  CU_ASSERT_EQUAL (hw_collective_group_n_prepared (f.cluster), 1); /* reused twice */
  timed_group_start (&f, g, 32e6);
  CU_ASSERT_EQUAL (hw_collective_group_n_prepared (f.cluster), 2); /* other bytes */
  hw_cluster_set_shift (f.cluster, &sh);
  STEPSIM_ASSERT_REL (timed_group_start (&f, g, 64e6), full, 1e-9);
  CU_ASSERT_EQUAL (hw_collective_group_n_prepared (f.cluster), 3); /* the new shift's */
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "fold: one flow with multiplicity m gets the rate of m equal flows", test_fold },
    { "shift map: routes of shifted pairs are the permuted routes", test_shift_map },
    { "shift map: rails rotate with the GPUs inside nodes", test_shift_map_rails },
    { "shift map: whole-node shifts map pods onto pods", test_shift_map_pods },
    { "shift map: idle PCIe switches (no host copies) let GPUs rotate across them",
      test_shift_map_idle_switches },
    { "collectives on one instance per orbit take the full-simulation time", test_collective_orbits },
    { "a 3-node tree: a multiset under a tapered core, a circulant in one pod", test_tree_multiset },
    { "a member set fixed only by a diagonal element is refused", test_diagonal_stabilizer },
    { "rank-class answers are kept per collective and shift", test_invariant_answers },
    { "three levels: diagonal elements of two and of three levels are refused",
      test_diagonal_three_levels },
    { "rank shift levels: representatives, index and orbits by closure", test_rank_shift_levels },
    { "collective groups: prepared once per (group, kind, algorithm, bytes) and shift",
      test_collective_groups },
  };
  return STEPSIM_RUN_TESTS ("hardware/symmetry", tests);
}
