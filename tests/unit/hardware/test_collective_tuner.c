/* tests/unit/hardware/test_collective_tuner.c — a platform's collective tuner as data
 * (hardware/collective_tuner.c): AWS's aws-ofi-nccl region tables (commit 2daf7d30,
 * src/tuner/nccl_ofi_regions.cpp) decide AUTO's algorithm and protocol on AWS-P5en and
 * AWS-P6-B200 beyond 2 nodes, the time is still this model's; a [node.NAME] may name the tuner.
 *
 * Oracles are read off the upstream vertices (bytes, ranks); the tuner works in log2 of both,
 * so a straight edge between two vertices is a straight line in log-log space. P6, 8 ranks
 * per node (region_init_internal_p6), all-reduce at 32 ranks (4 nodes): Tree/LL left of the
 * vertical x = 393216 (its extension to TUNER_MAX_RANKS keeps x); Tree/LL128 between it and
 * the vertex (18350080, 32); Ring/LL128 on the edge (18350080, 32)–(133693440, 32), which the
 * 32-rank line runs along (on an edge counts as inside); NVLS_TREE up to the vertex
 * (435159040, 32); Ring/Simple from there to (TUNER_MAX_SIZE, 16). P5en (region_init_internal_
 * p5en), all-reduce at 32 ranks: Ring/Simple right of the edge (29884416, 16)–(509607936, 32)
 * ... i.e. from 509607936 B at 32 ranks.
 */
#include "config.h"

#include <string.h>

#include "hardware/cluster_spec.h"
#include "hardware/collective-private.h"
#include "hardware/node_catalog.h"
#include "tests/testlib.h"
#include "tests/unit/hardware/fixture.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024)
#define GIB (1024.0 * 1024 * 1024)

static const HwCollectiveKind AR = HW_COLLECTIVE_ALL_REDUCE;

/* The first region the tuner names, or FALSE if it leaves the choice to NCCL. */
static gboolean
first_pick (HwCollectiveTuner t, HwCollectiveKind k, guint n, guint m, double s, HwTunerPick *out)
{
  HwTunerPick picks[8];
  guint c = hw_tuner_regions_at (t, k, n, m, s, picks, G_N_ELEMENTS (picks));
  if (c > 0)
    *out = picks[0];
  return c > 0;
}

static void
assert_pick (HwCollectiveTuner t, guint n, guint m, double s, HwTunerAlgorithm a,
             HwCollectiveProtocol p)
{
  HwTunerPick got = { 0 };
  CU_ASSERT_TRUE_FATAL (first_pick (t, AR, n, m, s, &got));
  if (got.algorithm != a || got.protocol != p)
    g_printerr ("\n  %.0f B x %u ranks: algorithm %d protocol %d, want %d %d\n", s, n,
                got.algorithm, got.protocol, a, p);
  CU_ASSERT_EQUAL (got.algorithm, a);
  CU_ASSERT_EQUAL (got.protocol, p);
}

/* P6 all-reduce at 32 ranks across the sizes of the file comment. */
static void
test_p6_regions_32_ranks (void)
{
  const HwCollectiveTuner t = HW_TUNER_AWS_OFI_P6_B200;
  assert_pick (t, 32, 4, 256 * KIB, HW_TUNER_TREE, HW_PROTO_LL);
  assert_pick (t, 32, 4, 1 * MIB, HW_TUNER_TREE, HW_PROTO_LL128);
  assert_pick (t, 32, 4, 16 * MIB, HW_TUNER_TREE, HW_PROTO_LL128);
  assert_pick (t, 32, 4, 64 * MIB, HW_TUNER_RING, HW_PROTO_LL128);
  assert_pick (t, 32, 4, 256 * MIB, HW_TUNER_NVLS_TREE, HW_PROTO_SIMPLE);
  assert_pick (t, 32, 4, 512 * MIB, HW_TUNER_RING, HW_PROTO_SIMPLE);
  assert_pick (t, 32, 4, 16 * GIB, HW_TUNER_RING, HW_PROTO_SIMPLE);
}

/* P5en all-reduce at 32 ranks: Ring/Simple from 509607936 B (C4 at 4 GiB: the ring, as
 * ml-engineering's NCCL_DEBUG log of that cluster says), NVLS_TREE just below it. */
static void
test_p5en_regions_32_ranks (void)
{
  const HwCollectiveTuner t = HW_TUNER_AWS_OFI_P5EN;
  assert_pick (t, 32, 4, 4 * GIB, HW_TUNER_RING, HW_PROTO_SIMPLE);
  assert_pick (t, 32, 4, 600e6, HW_TUNER_RING, HW_PROTO_SIMPLE);
  assert_pick (t, 32, 4, 400e6, HW_TUNER_NVLS_TREE, HW_PROTO_SIMPLE);
  assert_pick (t, 32, 4, 64 * KIB, HW_TUNER_TREE, HW_PROTO_LL);
}

/* Where the tuner leaves the choice to NCCL: NCCL's own tuner, at most 2 nodes (both upstream
 * get_coll_info versions return early), a layout without a table (4 ranks per node), a
 * broadcast (no table). */
static void
test_falls_back_to_nccl (void)
{
  HwTunerPick p;
  CU_ASSERT_FALSE (first_pick (HW_TUNER_NCCL, AR, 32, 4, MIB, &p));
  CU_ASSERT_FALSE (first_pick (HW_TUNER_AWS_OFI_P6_B200, AR, 16, 2, MIB, &p));
  CU_ASSERT_FALSE (first_pick (HW_TUNER_AWS_OFI_P6_B200, AR, 8, 1, 64 * MIB, &p));
  CU_ASSERT_FALSE (first_pick (HW_TUNER_AWS_OFI_P6_B200, AR, 16, 4, MIB, &p));
  CU_ASSERT_FALSE (first_pick (HW_TUNER_AWS_OFI_P6_B200, HW_COLLECTIVE_BROADCAST, 32, 4, MIB, &p));
  CU_ASSERT_TRUE (first_pick (HW_TUNER_AWS_OFI_P6_B200, HW_COLLECTIVE_ALL_GATHER, 32, 4, MIB, &p));
  CU_ASSERT_TRUE (first_pick (HW_TUNER_AWS_OFI_P6_B200, AR, 4, 4, MIB, &p)); /* 1 rank/node */
}

/* Idle-cluster all-reduce time on `node` x m under `algo`. */
static double
time_of (const HwNodeSpec *node, guint m, HwCollectiveAlgorithm algo, double s)
{
  Fixture f = fixture_new (node, m, 1);
  guint n = node->n_gpus * m;
  g_autofree guint *ranks = fixture_ranks (0, n);
  double t = fixture_run_collective (&f, AR, algo, ranks, n, s);
  STEPSIM_ASSERT_REL (t, hw_collective_time_alone (f.cluster, AR, algo, ranks, n, s), 1e-9);
  fixture_free (&f);
  return t;
}

/* AUTO follows the tuner and costs its pick with this model: on 4 P6-B200 nodes at 64 MiB the
 * table says Ring/LL128, so AUTO takes exactly the ring's time (LL128 is also the ring's
 * fastest protocol there), where NCCL's own cost model (the same node with collective_tuner =
 * nccl) prefers a faster-estimated tree. At 256 MiB the
 * table says NVLS_TREE, which is not lowered: AUTO is NCCL's own choice there. */
static void
test_auto_follows_tuner (void)
{
  const HwNodeSpec *p6 = hw_catalog_node ("AWS-P6-B200", NULL);
  CU_ASSERT_EQUAL (p6->collective_tuner, HW_TUNER_AWS_OFI_P6_B200);
  HwNodeSpec nccl;
  hw_node_spec_copy_into (&nccl, p6);
  nccl.collective_tuner = HW_TUNER_NCCL;
  double s = 64 * MIB;
  double t_auto = time_of (p6, 4, HW_ALGORITHM_AUTO, s);
  STEPSIM_ASSERT_REL (t_auto, time_of (p6, 4, HW_ALGORITHM_RING, s), 1e-12);
  CU_ASSERT_TRUE (time_of (&nccl, 4, HW_ALGORITHM_AUTO, s) < 0.99 * t_auto);
  STEPSIM_ASSERT_REL (time_of (p6, 4, HW_ALGORITHM_AUTO, 256 * MIB),
                      time_of (&nccl, 4, HW_ALGORITHM_AUTO, 256 * MIB), 1e-12);
  /* one node: the tuner steps aside (NVLS, NCCL's own pick) */
  STEPSIM_ASSERT_REL (time_of (p6, 1, HW_ALGORITHM_AUTO, 64 * MIB),
                      time_of (&nccl, 1, HW_ALGORITHM_AUTO, 64 * MIB), 1e-12);
  hw_node_spec_clear (&nccl);
}

/* C6 at 1 MiB (4 × P6-B200, 32 ranks): what NCCL runs and what it costs here.
 * Tuner: the point (log2 1048576, log2 32) = (20, 5) is right of Tree/LL's strip
 * (x < log2 393216 = 18.58) and left of Tree/LL128's lower edge (4718592, 16)–(18350080, 32),
 * which reaches x = log2 18350080 = 24.13 at y = 5: Tree/LL128, the first region that holds
 * it (test_p6_regions_32_ranks); aws-ofi-nccl leaves LL128 on (GPUDirect RDMA on P6, so
 * nccl_ofi_net.cpp does not force NCCL_PROTO=simple) and NCCL 2.27.7 enables it on sm90+
 * for GPU–NIC paths up to PXN (tuning.cc, ncclTopoTuneModel; P6 puts 2 GPUs and 2 NICs on a
 * PCIe switch: PXB). Latency, tuning.cc ncclTopoTuneModel, tree all-reduce:
 * baseLat[TREE][LL128] + 2·((ppn − 1)·hwLat[NVLINK][TREE][LL128]
 *                           + log2(nNodes)·(hwLat[NET][TREE][LL128] + latencyInter))
 * = 14 + 2·(7 × 1.25 + 2 × (8.5 + 35)) = 205.5 us, latencyInter being the 35 us the plugin
 * reports (platform-aws.cpp, p5en/p6-b200 .latency; no flush term off Simple). The explicit
 * tree picks LL128 too, by NCCL's estimate: LL 175.2 us but at most 20.4 GB/s bus (llMaxBws,
 * Intel row, > 2 nodes) × 0.5 (treeCorrectionFactor[LL] at 2^14 · 64 B) × 0.5 (tree algbw),
 * + 206 us for 1 MiB, ≈ 381 us in all; Simple
 * 8.4 + 2·(7 × 4 + 2 × (14 + 2 × 35)) = 400.4 us. So AUTO = tree = O + 205.5 us + the
 * payload's part, which at 1 MiB is a few us (two phases of S at the tree's LL128 cap,
 * 0.92 · 721.8 GB/s · 120/128 · 0.6 = 373.5 GB/s: 2 × 2.8 us, a little more where NICs are
 * shared). */
static void
test_c6_point_runs_tree_ll128 (void)
{
  const HwNodeSpec *p6 = hw_catalog_node ("AWS-P6-B200", NULL);
  STEPSIM_ASSERT_REL (hw_nccl_tree_latency (p6, HW_PROTO_LL128, 32, 4), 205.5 * US, 1e-12);
  STEPSIM_ASSERT_REL (hw_nccl_tree_latency (p6, HW_PROTO_LL, 32, 4), 175.2 * US, 1e-12);
  STEPSIM_ASSERT_REL (hw_nccl_tree_latency (p6, HW_PROTO_SIMPLE, 32, 4), 400.4 * US, 1e-12);
  double t = time_of (p6, 4, HW_ALGORITHM_AUTO, MIB);
  STEPSIM_ASSERT_REL (t, time_of (p6, 4, HW_ALGORITHM_TREE, MIB), 1e-12);
  double payload = t - p6->collective_overhead - 205.5 * US;
  CU_ASSERT_TRUE (payload >= 2 * MIB / 373.5e9 * (1 - 1e-6));
  CU_ASSERT_TRUE (payload < 10 * US);
}

/* [node.NAME] collective_tuner: inherited from the base, overridden, rejected when unknown
 * with group and key in the message. */
static void
test_node_key (void)
{
  const char *ok = "[cluster]\nnode = Mine\nnodes = 4\n[node.Mine]\nbase = AWS-P6-B200\n"
                   "collective_tuner = nccl\n";
  const char *inherit = "[cluster]\nnode = Mine\n[node.Mine]\nbase = AWS-P5en\n";
  const char *bad = "[cluster]\nnode = Mine\n[node.Mine]\nbase = DGX-H100\n"
                    "collective_tuner = aws\n";
  struct { const char *text; gboolean ok; HwCollectiveTuner want; } cases[] = {
    { ok, TRUE, HW_TUNER_NCCL }, { inherit, TRUE, HW_TUNER_AWS_OFI_P5EN }, { bad, FALSE, 0 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GKeyFile) kf = g_key_file_new ();
      CU_ASSERT_FATAL (g_key_file_load_from_data (kf, cases[i].text, (gsize) -1, G_KEY_FILE_NONE,
                                                  NULL));
      g_autoptr (GError) error = NULL;
      HwNodeSpec node = { 0 };
      guint n = 0;
      HwFabricSpec fabric = { 0 };
      gboolean parsed = hw_cluster_spec_from_keyfile (kf, &node, &n, &fabric, &error);
      CU_ASSERT_EQUAL (parsed, cases[i].ok);
      if (parsed)
        {
          CU_ASSERT_EQUAL (node.collective_tuner, cases[i].want);
        }
      else
        {
          CU_ASSERT_PTR_NOT_NULL_FATAL (error);
          CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "[node.Mine]"));
          CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "collective_tuner"));
          CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "aws-ofi-p6-b200"));
        }
      hw_node_spec_clear (&node);
    }
  HwCollectiveTuner t;
  for (HwCollectiveTuner k = HW_TUNER_NCCL; k <= HW_TUNER_AWS_OFI_P6_B200; k++)
    {
      CU_ASSERT_TRUE (hw_collective_tuner_from_string (hw_collective_tuner_name (k), &t, NULL));
      CU_ASSERT_EQUAL (t, k);
    }
}

static const StepsimTest tests[] = {
  { "P6 all-reduce regions at 32 ranks", test_p6_regions_32_ranks },
  { "C6 1 MiB: Tree/LL128 at NCCL's 205.5 us tree latency", test_c6_point_runs_tree_ll128 },
  { "P5en all-reduce regions at 32 ranks", test_p5en_regions_32_ranks },
  { "tuner leaves <= 2 nodes, other layouts, broadcast to NCCL", test_falls_back_to_nccl },
  { "auto follows the tuner's pick, costed by the model", test_auto_follows_tuner },
  { "[node.NAME] collective_tuner", test_node_key },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/collective_tuner", tests);
}
