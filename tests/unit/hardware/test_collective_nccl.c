/* tests/unit/hardware/test_collective_nccl.c — NCCL's protocol, latency and NVLS model
 * (hardware/collective_nccl.c) on the catalog nodes: closed forms from NCCL's constants
 * (src/graph/tuning.cc), the published nccl-tests / all_reduce_bench bus bandwidths C1–C6 of
 * ../shared/validation/published.md (one test per case and size, within 10 %), and multi-node
 * bus bandwidth below one node's for every node type.
 *
 * busbw = algbw · 2(n−1)/n for all-reduce (nccl-tests doc/PERFORMANCE.md); sizes in GiB/MiB
 * as the benchmarks print them (2^30, 2^20 B), bandwidths in GB/s (10^9 B/s).
 */
#include "config.h"

#include "hardware/node_catalog.h"
#include "tests/testlib.h"
#include "tests/unit/hardware/fixture.h"

#define MIB (1024.0 * 1024)
#define GIB (1024.0 * 1024 * 1024)

/* All-reduce bus bandwidth (B/s) of `node` × `n_nodes` under `algo`, simulated. */
static double
busbw_of (const char *node, guint n_nodes, HwCollectiveAlgorithm algo, double s)
{
  const HwNodeSpec *spec = hw_catalog_node (node, NULL);
  g_assert (spec != NULL);
  Fixture f = fixture_new (spec, n_nodes, 1);
  guint n = spec->n_gpus * n_nodes;
  g_autofree guint *ranks = fixture_ranks (0, n);
  double t = fixture_run_collective (&f, HW_COLLECTIVE_ALL_REDUCE, algo, ranks, n, s);
  STEPSIM_ASSERT_REL (t, hw_collective_time_alone (f.cluster, HW_COLLECTIVE_ALL_REDUCE, algo,
                                                   ranks, n, s), 1e-9);
  fixture_free (&f);
  return hw_collective_busbw (HW_COLLECTIVE_ALL_REDUCE, n, s, t);
}

static void
assert_within_10 (double predicted, double measured_gbps)
{
  double err = predicted / (measured_gbps * 1e9) - 1;
  if (fabs (err) > 0.10)
    g_printerr ("\n  predicted %.2f GB/s, measured %.2f (%+.1f %%)\n", predicted / 1e9,
                measured_gbps, 100 * err);
  CU_ASSERT_TRUE (fabs (err) <= 0.10);
}

/* ---- closed forms ---------------------------------------------------------------------- */

/* NVLS on DGX-H100 (8 GPUs, one NVSwitch node): each GPU port carries (n+1)/n·S each way at
 * nvlsEfficiency 0.85 × (16−1)/16 (NVLS channels) × NCCL's ring bus bandwidth 450 · 20.6/25
 * = 370.8 GB/s (below the 450 · 0.88 = 396 GB/s link); latency 25 µs (hwLatencies NVLINK
 * NVLS Simple) plus the node's collective_overhead:
 * T = O + 25 µs + (9/8)·S/(0.85 · 15/16 · 370.8 GB/s). */
static void
test_nvls_closed_form (void)
{
  const HwNodeSpec *h = hw_catalog_node ("DGX-H100", NULL);
  Fixture f = fixture_new (h, 1, 1);
  g_autofree guint *ranks = fixture_ranks (0, 8);
  double s = 4 * GIB;
  double want = h->collective_overhead + 25 * US + 9.0 / 8 * s / (0.85 * 15 / 16 * 450e9 * 20.6 / 25);
  double t = fixture_run_collective (&f, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_AUTO, ranks, 8, s);
  STEPSIM_ASSERT_REL (t, want, 1e-9);
  STEPSIM_ASSERT_REL (hw_collective_time_alone (f.cluster, HW_COLLECTIVE_ALL_REDUCE,
                                                HW_ALGORITHM_NVLS, ranks, 8, s), want, 1e-9);
  fixture_free (&f);
}

/* NVLS applies only to all-reduce of more than 4 GPUs of one Hopper/Blackwell NVSwitch node:
 * on 4 GPUs of DGX-H100, on DGX-A100 and across 2 DGX-H100 nodes an explicit nvls is the ring
 * (as NCCL falls back), and AUTO on 8 H100s beats the ring at 1 GiB. */
static void
test_nvls_eligibility (void)
{
  const HwCollectiveKind k = HW_COLLECTIVE_ALL_REDUCE;
  double s = GIB;
  struct { const char *node; guint nodes, n; } ring_only[]
      = { { "DGX-H100", 1, 4 }, { "DGX-A100", 1, 8 }, { "DGX-H100", 2, 16 } };
  for (guint i = 0; i < G_N_ELEMENTS (ring_only); i++)
    {
      Fixture f = fixture_new (hw_catalog_node (ring_only[i].node, NULL), ring_only[i].nodes, 1);
      g_autofree guint *ranks = fixture_ranks (0, ring_only[i].n);
      STEPSIM_ASSERT_REL (
          hw_collective_time_alone (f.cluster, k, HW_ALGORITHM_NVLS, ranks, ring_only[i].n, s),
          hw_collective_time_alone (f.cluster, k, HW_ALGORITHM_RING, ranks, ring_only[i].n, s), 0);
      fixture_free (&f);
    }
  CU_ASSERT_TRUE (busbw_of ("DGX-H100", 1, HW_ALGORITHM_AUTO, s)
                  > 1.2 * busbw_of ("DGX-H100", 1, HW_ALGORITHM_RING, s));
}

/* Small messages take NCCL's LL protocol: 8 H100s, 32 KiB, ring LL latency 6.6 + 14 · 0.6 =
 * 15 µs, LL bandwidth min(llMaxBw 141 GB/s (Hopper, one node), 0.5 · 370.8): T = O + 15 µs +
 * 2(n−1)/n · S/141 GB/s — faster than Simple's 8.4 + 14 · 3.4 = 56 µs and NVLS's 25 µs. */
static void
test_ll_for_small_messages (void)
{
  const HwNodeSpec *h = hw_catalog_node ("DGX-H100", NULL);
  Fixture f = fixture_new (h, 1, 1);
  g_autofree guint *ranks = fixture_ranks (0, 8);
  double s = 32 * 1024;
  double want = h->collective_overhead + 15 * US + 1.75 * s / 141e9;
  STEPSIM_ASSERT_REL (
      fixture_run_collective (&f, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_AUTO, ranks, 8, s), want,
      1e-9);
  fixture_free (&f);
}

/* The bus bandwidth ramps with size as nccl-tests shows: strictly increasing from 32 KiB to
 * 16 GiB by factors of 4 on every single-node catalog node. */
static void
test_busbw_ramps (void)
{
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    {
      const char *name = hw_catalog_node_at (i)->name;
      double prev = 0;
      for (double s = 32 * 1024; s <= 16 * GIB; s *= 4)
        {
          double b = busbw_of (name, 1, HW_ALGORITHM_AUTO, s);
          CU_ASSERT_TRUE (b > prev);
          prev = b;
        }
    }
}

/* ---- C1–C6: published all-reduce bus bandwidth (M), within 10 % --------------------------- */

/* C1: 8× H100 SXM, NVSwitch, NCCL default (NVLS), 8 GiB: ≈480 GB/s (NVIDIA/nccl-tests issue
 * #212, answer by the NCCL maintainer). */
static void
test_c1_h100_nvls_8g (void)
{
  assert_within_10 (busbw_of ("DGX-H100", 1, HW_ALGORITHM_AUTO, 8 * GIB), 480);
}

/* C2: 8× H200 SXM, NVLS off (ring), 8 GiB: 365.6 GB/s (stas00/ml-engineering
 * network/README.md, SHARP table, "busbw, NVLS off"). */
static void
test_c2_h200_ring_8g (void)
{
  assert_within_10 (busbw_of ("DGX-H200", 1, HW_ALGORITHM_RING, 8 * GIB), 365.6);
}

/* C3: 8× H200 SXM, NVLS on, 8 GiB: 473.1 GB/s (same table). */
static void
test_c3_h200_nvls_8g (void)
{
  assert_within_10 (busbw_of ("DGX-H200", 1, HW_ALGORITHM_AUTO, 8 * GIB), 473.1);
}

/* C4: 4 nodes × 8 H200 (p5en.48xlarge, EFA), 4 GiB, NCCL picked the ring: 364.9 GB/s
 * (ml-engineering network/README.md, footnote on the 32-rank all-reduce). */
static void
test_c4_p5en_4nodes_4g (void)
{
  assert_within_10 (busbw_of ("AWS-P5en", 4, HW_ALGORITHM_AUTO, 4 * GIB), 364.9);
}

/* C5: 8× B200, one P6-B200 node (all_reduce_bench.py, ml-engineering network/README.md,
 * "Inter-node speed depends on intra-node speed", 1 node column): 1 MiB 36.06, 4 GiB 740.64,
 * 16 GiB 845.67 GB/s. (64 MiB, 400.60, is not met: predicted 571.5 with NVLS, which NCCL's
 * own tuner picks from 2 MiB; the node's aws-ofi tuner steps aside on one node,
 * hardware/collective_tuner.c. The point is also low against its own neighbours: the line
 * T = L + S/B through the measured 128 MiB (568.38) and 256 MiB (646.11) points, L = 99 us,
 * B = 428 GB/s algbw, gives 330 at 32 MiB (measured 325.97, −1.2 %) but 458 at 64 MiB, 12.5 %
 * above the 400.60 measured. The ring alone, 468.9, would be +17 %.) */
static void
test_c5_b200_1m (void)
{
  assert_within_10 (busbw_of ("AWS-P6-B200", 1, HW_ALGORITHM_AUTO, MIB), 36.1);
}

static void
test_c5_b200_4g (void)
{
  assert_within_10 (busbw_of ("AWS-P6-B200", 1, HW_ALGORITHM_AUTO, 4 * GIB), 740.6);
}

static void
test_c5_b200_16g (void)
{
  assert_within_10 (busbw_of ("AWS-P6-B200", 1, HW_ALGORITHM_AUTO, 16 * GIB), 845.7);
}

/* C6: 4 nodes × 8 B200 (P6-B200, EFA v4), same table, 4 nodes column: 16 GiB 381.80 GB/s
 * (Ring/Simple by the aws-ofi region tuner, test_collective_tuner.c).
 * 1 MiB, 5.37, is not met: the tuner picks Tree/LL128 there (as NCCL's own model would),
 * predicted 8.31 GB/s = 244.6 us against 378 us measured. The measured floor is flat from
 * 256 KiB to 2 MiB (382, 358, 378, 391 us) while the model's tree is 240–251 us: about 135 us
 * of size-independent latency is missing, beyond NCCL's own tree estimate (base 14 + 2·(7 ×
 * 1.25 + 2 × (8.5 + 35)) = 205.5 us plus the 33 us call overhead measured on one node). Not
 * fitted; the cause is not established (the benchmark's dist.barrier() before each timed
 * call also crosses EFA, so its rank skew — part of collective_overhead, measured on one node
 * only — grows across nodes). */
static void
test_c6_b200_4nodes_16g (void)
{
  assert_within_10 (busbw_of ("AWS-P6-B200", 4, HW_ALGORITHM_AUTO, 16 * GIB), 381.8);
}

/* DGX A100, 1 GiB: 229.04 GB/s (ml-engineering, nccl-tests on one A100 node); the catalog's
 * link_efficiency was set from its ≈235 plateau. */
static void
test_dgx_a100_1g (void)
{
  assert_within_10 (busbw_of ("DGX-A100", 1, HW_ALGORITHM_AUTO, GIB), 229.04);
}

/* Every measurement has multi-node bus bandwidth below one node's (published.md: the
 * inter-node links bound it): for every catalog node type, 2 and 4 nodes, 1 MiB to 4 GiB,
 * AUTO and hierarchical. */
static void
test_multi_node_below_one_node (void)
{
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    {
      const char *name = hw_catalog_node_at (i)->name;
      for (double s = MIB; s <= 4 * GIB; s *= 64)
        {
          double one = busbw_of (name, 1, HW_ALGORITHM_AUTO, s);
          for (guint m = 2; m <= 4; m += 2)
            {
              double multi = busbw_of (name, m, HW_ALGORITHM_AUTO, s);
              double hier = busbw_of (name, m, HW_ALGORITHM_HIERARCHICAL, s);
              if (!(multi < one && hier < one))
                g_printerr ("\n  %s x%u at %.0f B: %.1f / %.1f vs one node %.1f GB/s\n", name, m,
                            s, multi / 1e9, hier / 1e9, one / 1e9);
              CU_ASSERT_TRUE (multi < one);
              CU_ASSERT_TRUE (hier < one);
            }
        }
    }
}

static const StepsimTest tests[] = {
  { "NVLS all-reduce = O + 25 us + (n+1)/n S/(eff x ring bw)", test_nvls_closed_form },
  { "NVLS only for > 4 GPUs of one H100+ node", test_nvls_eligibility },
  { "LL protocol for small messages", test_ll_for_small_messages },
  { "bus bandwidth ramps with size", test_busbw_ramps },
  { "C1 8xH100 NVLS 8 GiB ~480 GB/s", test_c1_h100_nvls_8g },
  { "C2 8xH200 ring 8 GiB 365.6 GB/s", test_c2_h200_ring_8g },
  { "C3 8xH200 NVLS 8 GiB 473.1 GB/s", test_c3_h200_nvls_8g },
  { "C4 4x8 H200 EFA 4 GiB 364.9 GB/s", test_c4_p5en_4nodes_4g },
  { "C5 8xB200 1 MiB 36.1 GB/s", test_c5_b200_1m },
  { "C5 8xB200 4 GiB 740.6 GB/s", test_c5_b200_4g },
  { "C5 8xB200 16 GiB 845.7 GB/s", test_c5_b200_16g },
  { "C6 4x8 B200 EFA 16 GiB 381.8 GB/s", test_c6_b200_4nodes_16g },
  { "DGX A100 1 GiB 229 GB/s", test_dgx_a100_1g },
  { "multi-node busbw below one node's, every node type", test_multi_node_below_one_node },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/collective_nccl", tests);
}
