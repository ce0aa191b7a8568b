/* tests/unit/hardware/test_topology.c — hardware/topology.c: which resources exist with which
 * capacity, and which link directions a route crosses (NVSwitch, PCIe switches, NICs,
 * spine), plus flows sharing a direction. Oracles are the rules of topology.h applied by
 * hand to small clusters.
 */
#include "config.h"

#include <string.h>

#include "hardware/node_catalog.h"
#include "tests/testlib.h"
#include "tests/unit/hardware/fixture.h"

/* Asserts the route src → dst crosses exactly the resources named in `expected`
 * (NULL-terminated, in path order) and starts after `latency`. */
static void
assert_route (const Fixture *f, guint src, guint dst, const char *const *expected, double latency)
{
  const HwTopology *topo = hw_cluster_topology (f->cluster);
  SimResourceId route[HW_ROUTE_MAX];
  double lat = -1;
  guint n = hw_topology_route (topo, src, dst, route, &lat);
  guint n_expected = g_strv_length ((char **) expected);
  CU_ASSERT_EQUAL (n, n_expected);
  for (guint i = 0; i < MIN (n, n_expected); i++)
    {
      const char *name = sim_fluid_resource_name (f->fluid, route[i]);
      if (g_strcmp0 (name, expected[i]) != 0)
        g_printerr ("\n  hop %u: %s, expected %s\n", i, name, expected[i]);
      CU_ASSERT_STRING_EQUAL (name, expected[i]);
    }
  STEPSIM_ASSERT_REL (lat, latency, 1e-12);
}

/* Capacity of the resource called `name` (-1 if there is none). */
static double
capacity_of (const Fixture *f, const char *name)
{
  for (guint i = 0; i < sim_fluid_n_resources (f->fluid); i++)
    if (g_strcmp0 (sim_fluid_resource_name (f->fluid, i), name) == 0)
      return sim_fluid_resource_capacity (f->fluid, i);
  return -1;
}

static Fixture
catalog_fixture (const char *node, guint n_nodes, double oversubscription)
{
  return fixture_new (hw_catalog_node (node, NULL), n_nodes, oversubscription);
}

/* NVSwitch: GPU → switch → GPU, one direction out of the sender and one into the receiver. */
static void
test_route_nvswitch (void)
{
  Fixture f = catalog_fixture ("DGX-A100", 1, 1);
  const char *const r12[] = { "gpu1.nvlink.tx", "gpu2.nvlink.rx", NULL };
  assert_route (&f, 1, 2, r12, 2 * US);
  const char *const r21[] = { "gpu2.nvlink.tx", "gpu1.nvlink.rx", NULL };
  assert_route (&f, 2, 1, r21, 2 * US);
  fixture_free (&f);
}

/* DGX-A100 × 2, rail-optimised: GPU 3 of node 0 → GPU 3 of node 1 (rank 11) goes through its
 * own PCIe link (GPUDirect RDMA), NIC 3 (rail 3), the spine, NIC 3 of node 1. The NIC sits on
 * GPU 3's switch (NIC j on switch ⌊j·4/8⌋ = 1 = ⌊3/2⌋), so no uplink is crossed. */
static void
test_route_inter_node_rail (void)
{
  Fixture f = catalog_fixture ("DGX-A100", 2, 1);
  const char *const r[] = { "gpu3.pcie.d2h",
                            "node0.nic3.tx",
                            "node0.spine.up",
                            "node1.spine.down",
                            "node1.nic3.rx",
                            "gpu11.pcie.h2d",
                            NULL };
  assert_route (&f, 3, 11, r, 5 * US);
  /* Rank 3 → rank 12 (GPU 4 of node 1): rail 3 out, rail 4 in. */
  const char *const r2[] = { "gpu3.pcie.d2h",
                             "node0.nic3.tx",
                             "node0.spine.up",
                             "node1.spine.down",
                             "node1.nic4.rx",
                             "gpu12.pcie.h2d",
                             NULL };
  assert_route (&f, 3, 12, r2, 5 * US);
  fixture_free (&f);
}

/* 8x-RTX-4090: switches of 4 GPUs. Same switch: down and up the switch only; across
 * switches: through both uplinks (host root complex); across nodes from switch 1: the
 * single NIC sits on switch 0, so the flow climbs to the host and back down on both ends. */
static void
test_route_pcie_box (void)
{
  Fixture f = catalog_fixture ("8x-RTX-4090", 2, 1);
  const char *const same[] = { "gpu1.pcie.d2h", "gpu2.pcie.h2d", NULL };
  assert_route (&f, 1, 2, same, 5 * US);
  const char *const across[]
      = { "gpu1.pcie.d2h", "node0.pcie_sw0.up", "node0.pcie_sw1.down", "gpu5.pcie.h2d", NULL };
  assert_route (&f, 1, 5, across, 5 * US);
  const char *const inter[] = {
    "gpu5.pcie.d2h",
    "node0.pcie_sw1.up",
    "node0.pcie_sw0.down",
    "node0.nic0.tx",
    "node0.spine.up",
    "node1.spine.down",
    "node1.nic0.rx",
    "node1.pcie_sw0.up",
    "node1.pcie_sw1.down",
    "gpu13.pcie.h2d",
    NULL,
  };
  assert_route (&f, 5, 13, inter, 10 * US);
  fixture_free (&f);
  /* The longest route: the same with each node its own pod, through the core. */
  Fixture pods = fixture_new_pods (hw_catalog_node ("8x-RTX-4090", NULL), 2, 1, 1, 1);
  const char *const longest[] = {
    "gpu5.pcie.d2h",     "node0.pcie_sw1.up",   "node0.pcie_sw0.down", "node0.nic0.tx",
    "node0.spine.up",    "pod0.core.up",        "pod1.core.down",      "node1.spine.down",
    "node1.nic0.rx",     "node1.pcie_sw0.up",   "node1.pcie_sw1.down", "gpu13.pcie.h2d",
    NULL,
  };
  assert_route (&pods, 5, 13, longest, 10 * US);
  CU_ASSERT_EQUAL (g_strv_length ((char **) longest), HW_ROUTE_MAX);
  fixture_free (&pods);
}

/* Without rail optimisation a GPU uses a NIC on its own PCIe switch. DGX-A100 layout (4
 * switches of 2 GPUs) with only 4 NICs: NIC j sits on switch ⌊j·4/4⌋ = j, so GPU 5 (switch
 * ⌊5/2⌋ = 2) uses NIC 2; on rails it uses NIC 5 mod 4 = 1. */
static void
test_nic_choice (void)
{
  HwNodeSpec node = { 0 };
  hw_node_spec_copy_into (&node, hw_catalog_node ("DGX-A100", NULL));
  node.n_nics = 4;
  node.rail_optimized = FALSE;
  Fixture f = fixture_new (&node, 2, 1);
  CU_ASSERT_EQUAL (hw_topology_nic_of (hw_cluster_topology (f.cluster), 5), 2);
  fixture_free (&f);
  node.rail_optimized = TRUE;
  f = fixture_new (&node, 2, 1);
  CU_ASSERT_EQUAL (hw_topology_nic_of (hw_cluster_topology (f.cluster), 5), 1);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Capacities (topology.h): NVLink and NIC derated by link_efficiency; the spine of a node is
 * n_nics × NIC / oversubscription. DGX-A100: 300 GB/s × 235/300 = 235 GB/s; HDR 200 Gbit/s
 * = 25 GB/s × 235/300; spine at 2:1 = 8 × that / 2. */
static void
test_capacities (void)
{
  Fixture f = catalog_fixture ("DGX-A100", 2, 2);
  double eff = 235.0 / 300.0;
  STEPSIM_ASSERT_REL (capacity_of (&f, "gpu0.nvlink.tx"), 235e9, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "gpu15.nvlink.rx"), 235e9, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "node1.nic7.rx"), 25e9 * eff, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "node0.spine.up"), 8 * 25e9 * eff / 2, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "node0.pcie_sw3.down"), 25e9, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "gpu0.pcie.h2d"), 25e9, 1e-12);
  CU_ASSERT_EQUAL (capacity_of (&f, "node0.pcie_sw4.up"), -1); /* 4 switches only */
  fixture_free (&f);
}

/* A single node has neither NICs nor spine, and a PCIe node no NVLink resources. */
static void
test_single_node_has_no_fabric (void)
{
  Fixture f = catalog_fixture ("8x-RTX-4090", 1, 1);
  CU_ASSERT_EQUAL (capacity_of (&f, "node0.nic0.tx"), -1);
  CU_ASSERT_EQUAL (capacity_of (&f, "node0.spine.up"), -1);
  CU_ASSERT_EQUAL (capacity_of (&f, "gpu0.nvlink.tx"), -1);
  CU_ASSERT_EQUAL (hw_topology_gpu_resource (hw_cluster_topology (f.cluster), 0, HW_GPU_NVLINK_TX),
                   G_MAXUINT);
  fixture_free (&f);
}

/* Host copies behind a PCIe switch share its uplink: DGX-A100 GPUs 0 and 1 sit on switch 0
 * (uplink 25 GB/s, each GPU's link 25 GB/s). One copy alone: L + S/25e9; two at once: the
 * uplink's 25 GB/s is split, L + S/12.5e9 each. GPU 2 (switch 1) is unaffected. */
static void
test_host_copies_share_uplink (void)
{
  Fixture f = catalog_fixture ("DGX-A100", 1, 1);
  double s = 1e9, lat = hw_cluster_gpu (f.cluster, 0)->pcie_latency;
  EndAt a = { f.engine, -1 }, b = { f.engine, -1 }, c = { f.engine, -1 };
  hw_cluster_start_copy (f.cluster, 0, HW_COPY_H2D, s, end_at, &a);
  hw_cluster_start_copy (f.cluster, 1, HW_COPY_H2D, s, end_at, &b);
  hw_cluster_start_copy (f.cluster, 2, HW_COPY_H2D, s, end_at, &c);
  sim_engine_run (f.engine);
  STEPSIM_ASSERT_REL (a.end, lat + s / 12.5e9, 1e-9);
  STEPSIM_ASSERT_REL (b.end, lat + s / 12.5e9, 1e-9);
  STEPSIM_ASSERT_REL (c.end, lat + s / 25e9, 1e-9);
  fixture_free (&f);
}

/* Two flows out of one GPU share its nvlink.tx (B each half): a send/recv 0 → 1 and 0 → 2 at
 * once each take α + S/(B/2); a flow 3 → 4 at the same time is unaffected, α + S/B. */
static void
test_flows_share_direction (void)
{
  HwNodeSpec node = fixture_nvswitch_node (8);
  Fixture f = fixture_new (&node, 1, 1);
  double s = 1e9, alpha = 2 * US, b = 100 * GBPS;
  DoneAt d[3] = { { f.engine, -1 }, { f.engine, -1 }, { f.engine, -1 } };
  const guint p01[] = { 0, 1 }, p02[] = { 0, 2 }, p34[] = { 3, 4 };
  hw_collective_start (f.cluster, HW_COLLECTIVE_SEND_RECV, HW_ALGORITHM_AUTO, p01, 2, s,
                       fixture_done_at, &d[0]);
  hw_collective_start (f.cluster, HW_COLLECTIVE_SEND_RECV, HW_ALGORITHM_AUTO, p02, 2, s,
                       fixture_done_at, &d[1]);
  hw_collective_start (f.cluster, HW_COLLECTIVE_SEND_RECV, HW_ALGORITHM_AUTO, p34, 2, s,
                       fixture_done_at, &d[2]);
  sim_engine_run (f.engine);
  STEPSIM_ASSERT_REL (d[0].end, alpha + s / (b / 2), 1e-9);
  STEPSIM_ASSERT_REL (d[1].end, alpha + s / (b / 2), 1e-9);
  STEPSIM_ASSERT_REL (d[2].end, alpha + s / b, 1e-9);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Pods (hardware/topology.h): 4 fixture nodes of 2 GPUs (a 10 GB/s NIC each, rails) in 2
 * pods of 2 nodes. Inside a pod the route is the one-tier route (rank 0 → rank 2, node 0 →
 * node 1); across pods (rank 1, node 0 of pod 0 → rank 5, GPU 1 of node 2 of pod 1) it also
 * climbs pod 0's core link and comes down pod 1's, between the two spine hops, with the
 * same inter-node latency. */
static void
test_route_pods (void)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  Fixture f = fixture_new_pods (&node, 4, 1, 2, 2);
  const char *const same[] = { "gpu0.pcie.d2h",   "node0.nic0.tx", "node0.spine.up",
                               "node1.spine.down", "node1.nic0.rx", "gpu2.pcie.h2d",
                               NULL };
  assert_route (&f, 0, 2, same, 5 * US);
  const char *const across[] = { "gpu1.pcie.d2h",  "node0.nic1.tx",    "node0.spine.up",
                                 "pod0.core.up",   "pod1.core.down",   "node2.spine.down",
                                 "node2.nic1.rx",  "gpu5.pcie.h2d",    NULL };
  assert_route (&f, 1, 5, across, 5 * US);
  const char *const back[] = { "gpu7.pcie.d2h",  "node3.nic1.tx",    "node3.spine.up",
                               "pod1.core.up",   "pod0.core.down",   "node0.spine.down",
                               "node0.nic0.rx",  "gpu0.pcie.h2d",    NULL };
  assert_route (&f, 7, 0, back, 5 * US);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Core capacity: a pod's spines carry its nodes' spine links, nodes_per_pod × n_nics × NIC /
 * spine_oversubscription = 2 × 2 × 10 / 1.5 GB/s, and pass 1/pod_oversubscription of that
 * to the core: / 2 = 13.33 GB/s per direction. The node's spine link stays n_nics × NIC /
 * spine_oversubscription = 13.33 GB/s. One pod (nodes_per_pod at least nodes, or 0) adds no core
 * link: the same resources, ids and capacities as a fabric that never heard of pods. */
static void
test_pod_capacities (void)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  Fixture f = fixture_new_pods (&node, 4, 1.5, 2, 2);
  STEPSIM_ASSERT_REL (capacity_of (&f, "pod0.core.up"), 2 * 2 * 10 * GBPS / 1.5 / 2, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "pod1.core.down"), 2 * 2 * 10 * GBPS / 1.5 / 2, 1e-12);
  STEPSIM_ASSERT_REL (capacity_of (&f, "node3.spine.up"), 2 * 10 * GBPS / 1.5, 1e-12);
  CU_ASSERT_EQUAL (capacity_of (&f, "pod2.core.up"), -1);
  Fixture one = fixture_new_pods (&node, 4, 1.5, 4, 2);
  Fixture part = fixture_new_pods (&node, 4, 1.5, 32, 2); /* 4 nodes of a 32-node pod */
  Fixture plain = fixture_new (&node, 4, 1.5);
  CU_ASSERT_EQUAL (capacity_of (&one, "pod0.core.up"), -1);
  CU_ASSERT_EQUAL (capacity_of (&part, "pod0.core.up"), -1);
  guint n = sim_fluid_n_resources (plain.fluid);
  CU_ASSERT_EQUAL (sim_fluid_n_resources (one.fluid), n);
  CU_ASSERT_EQUAL (sim_fluid_n_resources (part.fluid), n);
  CU_ASSERT_EQUAL (sim_fluid_n_resources (f.fluid), n + 4); /* 2 pods × up and down */
  for (guint i = 0; i < n; i++)
    {
      CU_ASSERT_STRING_EQUAL (sim_fluid_resource_name (one.fluid, i),
                              sim_fluid_resource_name (plain.fluid, i));
      CU_ASSERT_EQUAL (sim_fluid_resource_capacity (one.fluid, i),
                       sim_fluid_resource_capacity (plain.fluid, i));
    }
  fixture_free (&f);
  fixture_free (&one);
  fixture_free (&part);
  fixture_free (&plain);
  hw_node_spec_clear (&node);
}

/* Point-to-point across pods at the closed-form rate. 4 fixture nodes of 2 GPUs in 2 pods of
 * 2, pod_oversubscription 2: each pod's core link is 2 × 2 × 10 / 2 = 20 GB/s. All 4 GPUs of
 * pod 0 send S to the same GPU 4 ranks on (node n → node n + 2, pod 1) at once: each flow
 * could run at its NIC's 10 GB/s (spine up 20 GB/s for the node's 2 flows), but the 4 flows
 * share pod 0's core.up (and pod 1's core.down): 20 / 4 = 5 GB/s each, α + S/5 GB/s. The same
 * 4 sends inside pod 0 (node 0 ↔ node 1) run at the NIC rate, α + S/10 GB/s. */
static void
test_pod_send_recv_rate (void)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  double s = 1e9, alpha = 5 * US;
  const guint across[4][2] = { { 0, 4 }, { 1, 5 }, { 2, 6 }, { 3, 7 } };
  const guint inside[4][2] = { { 0, 2 }, { 1, 3 }, { 2, 0 }, { 3, 1 } };
  for (guint c = 0; c < 2; c++)
    {
      Fixture f = fixture_new_pods (&node, 4, 1, 2, 2);
      DoneAt d[4];
      for (guint i = 0; i < 4; i++)
        {
          d[i] = (DoneAt){ f.engine, -1 };
          hw_collective_start (f.cluster, HW_COLLECTIVE_SEND_RECV, HW_ALGORITHM_AUTO,
                               c == 0 ? across[i] : inside[i], 2, s, fixture_done_at, &d[i]);
        }
      sim_engine_run (f.engine);
      for (guint i = 0; i < 4; i++)
        STEPSIM_ASSERT_REL (d[i].end, alpha + s / (c == 0 ? 5 * GBPS : 10 * GBPS), 1e-9);
      fixture_free (&f);
    }
  hw_node_spec_clear (&node);
}

static const StepsimTest tests[] = {
  { "route inside an NVSwitch node", test_route_nvswitch },
  { "route across nodes on rails", test_route_inter_node_rail },
  { "routes of a PCIe box, in and across nodes", test_route_pcie_box },
  { "NIC choice with and without rails", test_nic_choice },
  { "link capacities with efficiency and oversubscription", test_capacities },
  { "single node: no NICs or spine; PCIe node: no NVLink", test_single_node_has_no_fabric },
  { "host copies behind one switch share the uplink", test_host_copies_share_uplink },
  { "flows share the link directions they cross", test_flows_share_direction },
  { "pods: core links only on routes across pods", test_route_pods },
  { "pods: core capacity; one pod adds nothing", test_pod_capacities },
  { "pods: sends across pods share the core link", test_pod_send_recv_rate },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/topology", tests);
}
