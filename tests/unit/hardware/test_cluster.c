/* tests/unit/hardware/test_cluster.c — hardware/cluster.c: node specs (deep copy, clear),
 * kernels on the topology's compute/HBM resources, stragglers (slow-down) and seeded
 * jitter. Oracles: the roofline time L + max(F/(peak·eff), M/(H·eff)) of cluster.h.
 */
#include "config.h"

#include <string.h>

#include "hardware/node_catalog.h"
#include "tests/testlib.h"
#include "tests/unit/hardware/fixture.h"

/* Runs one kernel of `flops` bf16 FLOP and `bytes` on `rank` alone; returns its duration. */
static double
kernel_time (Fixture *f, guint rank, double flops, double bytes)
{
  EndAt e = { f->engine, -1 };
  double t0 = sim_engine_now (f->engine);
  hw_cluster_start_kernel (f->cluster, rank, HW_DTYPE_BF16, flops, bytes, end_at, &e);
  sim_engine_run (f->engine);
  return e.end - t0;
}

/* The copy owns its own strings and GPU: freeing the original leaves it intact. */
static void
test_node_spec_copy_is_deep (void)
{
  HwNodeSpec a = { 0 }, b = { 0 };
  hw_node_spec_copy_into (&a, hw_catalog_node ("DGX-H100", NULL));
  hw_node_spec_copy_into (&b, &a);
  CU_ASSERT_PTR_NOT_EQUAL (a.name, b.name);
  CU_ASSERT_PTR_NOT_EQUAL (a.gpu, b.gpu);
  CU_ASSERT_PTR_NOT_EQUAL (a.source, b.source);
  CU_ASSERT_PTR_NOT_EQUAL (a.description, b.description);
  hw_node_spec_clear (&a);
  CU_ASSERT_PTR_NULL (a.name);
  CU_ASSERT_PTR_NULL (a.gpu);
  CU_ASSERT_STRING_EQUAL (b.name, "DGX-H100");
  CU_ASSERT_STRING_EQUAL (b.gpu->name, "H100-SXM");
  CU_ASSERT_EQUAL (b.n_nics, 8);
  hw_node_spec_clear (&b);
  hw_node_spec_clear (&b); /* clearing twice is harmless */
}

/* The cluster copies its spec: the caller may free its own at once. */
static void
test_cluster_copies_spec (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture f = fixture_new (&node, 2, 1);
  hw_node_spec_clear (&node);
  const HwNodeSpec *kept = hw_cluster_node_spec (f.cluster);
  CU_ASSERT_STRING_EQUAL (kept->name, "test-nvswitch");
  CU_ASSERT_EQUAL (hw_cluster_n_ranks (f.cluster), 8);
  CU_ASSERT_EQUAL (hw_cluster_n_nodes (f.cluster), 2);
  CU_ASSERT_STRING_EQUAL (hw_cluster_gpu (f.cluster, 7)->name, "A100-80GB-SXM");
  fixture_free (&f);
}

/* A compute-bound kernel (no HBM bytes) on a rank slowed by 2 takes L + 2·F/(peak·eff); the
 * other ranks keep L + F/(peak·eff), and the closed form agrees. */
static void
test_slowdown_doubles_compute (void)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  Fixture f = fixture_new (&node, 1, 1);
  const HwGpuSpec *g = hw_cluster_gpu (f.cluster, 0);
  double flops = 1e12, tc = flops / (g->peak_flops[HW_DTYPE_BF16] * g->compute_efficiency);
  hw_cluster_set_slowdown (f.cluster, 1, 2.0);
  STEPSIM_ASSERT_REL (kernel_time (&f, 0, flops, 0), g->kernel_latency + tc, 1e-9);
  STEPSIM_ASSERT_REL (kernel_time (&f, 1, flops, 0), g->kernel_latency + 2 * tc, 1e-9);
  STEPSIM_ASSERT_REL (hw_cluster_kernel_time_alone (f.cluster, 1, HW_DTYPE_BF16, flops, 0),
                      g->kernel_latency + 2 * tc, 1e-12);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* A memory-bound kernel is not slowed by a compute straggler factor: the slow-down scales
 * F/(peak·eff) only, and 1.5 × that stays below M/(H·eff). */
static void
test_slowdown_spares_memory_bound (void)
{
  HwNodeSpec node = fixture_nvswitch_node (1);
  Fixture f = fixture_new (&node, 1, 1);
  const HwGpuSpec *g = hw_cluster_gpu (f.cluster, 0);
  double bytes = 1e9, tm = bytes / (g->hbm_bandwidth * g->hbm_efficiency);
  double flops = 0.5 * tm * g->peak_flops[HW_DTYPE_BF16] * g->compute_efficiency;
  hw_cluster_set_slowdown (f.cluster, 0, 1.5);
  STEPSIM_ASSERT_REL (kernel_time (&f, 0, flops, bytes), g->kernel_latency + tm, 1e-9);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

/* Durations of `n` sequential compute-bound kernels on rank 0 with jitter (cv, seed). */
static double *
jittered_times (double cv, guint32 seed, guint n)
{
  HwNodeSpec node = fixture_nvswitch_node (1);
  Fixture f = fixture_new (&node, 1, 1);
  hw_cluster_set_jitter (f.cluster, cv, seed);
  double *t = g_new (double, n);
  for (guint i = 0; i < n; i++)
    t[i] = kernel_time (&f, 0, 1e12, 0);
  fixture_free (&f);
  hw_node_spec_clear (&node);
  return t;
}

/* Same seed → the same kernel times; another seed → different ones; every factor is
 * >= 0.5 (cluster.h), so no kernel is faster than L + 0.5·F/(peak·eff). */
static void
test_jitter_seeded (void)
{
  const guint n = 50;
  g_autofree double *a = jittered_times (0.2, 42, n);
  g_autofree double *b = jittered_times (0.2, 42, n);
  g_autofree double *c = jittered_times (0.2, 43, n);
  g_autofree double *none = jittered_times (0, 42, 1);
  const HwGpuSpec *g = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  double tc = 1e12 / (g->peak_flops[HW_DTYPE_BF16] * g->compute_efficiency);
  guint differ = 0, varied = 0;
  for (guint i = 0; i < n; i++)
    {
      CU_ASSERT_EQUAL (a[i], b[i]);
      differ += a[i] != c[i];
      varied += fabs (a[i] - none[0]) > 1e-12 * none[0];
      CU_ASSERT_TRUE (a[i] >= g->kernel_latency + 0.5 * tc * (1 - 1e-12));
    }
  CU_ASSERT_TRUE (differ > n / 2);
  CU_ASSERT_TRUE (varied > n / 2);
}

/* A jittered kernel never computes above the GPU's peak: with a large cv many draws fall
 * below the GPU's efficiency e (A100: e > 0.5), and those kernels take exactly L + F/peak
 * (the factor clamped at e, cluster.h), none less. */
static void
test_jitter_never_above_peak (void)
{
  const guint n = 200;
  g_autofree double *t = jittered_times (3.0, 42, n);
  const HwGpuSpec *g = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  double at_peak = g->kernel_latency + 1e12 / g->peak_flops[HW_DTYPE_BF16];
  CU_ASSERT_TRUE (g->compute_efficiency > 0.5);
  guint clamped = 0;
  for (guint i = 0; i < n; i++)
    {
      CU_ASSERT_TRUE (t[i] >= at_peak * (1 - 1e-12));
      clamped += fabs (t[i] - at_peak) <= 1e-12 * at_peak;
    }
  CU_ASSERT_TRUE (clamped > n / 10);
}

/* cv = 0: no jitter at all, every kernel takes exactly its closed form. */
static void
test_jitter_zero_cv (void)
{
  g_autofree double *t = jittered_times (0, 7, 5);
  const HwGpuSpec *g = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  double want = g->kernel_latency + 1e12 / (g->peak_flops[HW_DTYPE_BF16] * g->compute_efficiency);
  for (guint i = 0; i < 5; i++)
    STEPSIM_ASSERT_REL (t[i], want, 1e-9);
}

/* With cv = 0.1 over many kernels the mean factor is near 1 (clamping at 0.5 is 5 σ away):
 * the sample mean of 2000 factors has σ ≈ 0.1/√2000 ≈ 0.0022, so |mean − 1| < 0.01. */
static void
test_jitter_mean (void)
{
  const guint n = 2000;
  g_autofree double *t = jittered_times (0.1, 1, n);
  const HwGpuSpec *g = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  double tc = 1e12 / (g->peak_flops[HW_DTYPE_BF16] * g->compute_efficiency), sum = 0;
  for (guint i = 0; i < n; i++)
    sum += (t[i] - g->kernel_latency) / tc;
  CU_ASSERT_TRUE (fabs (sum / n - 1) < 0.01);
}

/* ---- reset (hw_cluster_reset: replays on one cluster) ---------------------------------- */

typedef struct
{
  HwCluster *cluster;
  GArray *log; /* double: completion times, kernels and the collective */
  guint left;  /* kernels still to start on rank 1 */
} ResetRun;

static void
reset_kernel_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) id;
  ResetRun *r = user_data;
  double now = sim_fluid_now (fluid);
  g_array_append_val (r->log, now);
  if (r->left > 0 && r->left--)
    hw_cluster_start_kernel (r->cluster, 1, HW_DTYPE_BF16, 1e12, 1e8, reset_kernel_done, r);
}

static void
reset_collective_done (gpointer user_data)
{
  ResetRun *r = user_data;
  double now = -sim_fluid_now (hw_cluster_fluid (r->cluster)); /* negative: the collective */
  g_array_append_val (r->log, now);
}

/* Eight jittered kernels on rank 1, one after another, beside a 1 GB all-reduce over
 * ranks 0–3 whose NCCL kernels hold SMs on rank 1 (hw_cluster_sm_hold_begin); runs until
 * `until` (s; INFINITY: to the end). The log ends with the collective's id. */
static void
reset_play (Fixture *f, ResetRun *r, double until)
{
  r->cluster = f->cluster;
  r->log = g_array_new (FALSE, FALSE, sizeof (double));
  r->left = 7;
  const guint ranks[] = { 0, 1, 2, 3 };
  double id = (double) hw_collective_start (f->cluster, HW_COLLECTIVE_ALL_REDUCE, HW_ALGORITHM_RING, ranks, 4,
                                            1e9, reset_collective_done, r);
  hw_cluster_start_kernel (f->cluster, 1, HW_DTYPE_BF16, 1e12, 1e8, reset_kernel_done, r);
  if (isfinite (until))
    sim_engine_run_until (f->engine, until);
  else
    sim_engine_run (f->engine);
  g_array_append_val (r->log, id);
}

/* A cluster reset after a run stopped half-way (the collective holding SMs, kernels
 * running) and reseeded replays bit for bit as a new cluster with that seed: the same
 * kernel and collective times, collective ids from 1 again; another seed draws other
 * kernel times. */
static void
test_reset_replays_as_new (void)
{
  HwNodeSpec node = fixture_nvswitch_node (4);
  Fixture a = fixture_new (&node, 1, 1), b = fixture_new (&node, 1, 1);
  hw_cluster_set_jitter (a.cluster, 0.2, 42);
  hw_cluster_set_jitter (b.cluster, 0.2, 7);
  ResetRun fresh, cut, again, other;
  reset_play (&a, &fresh, INFINITY);
  CU_ASSERT_EQUAL_FATAL (fresh.log->len, 8 + 1 + 1);
  CU_ASSERT_EQUAL (g_array_index (fresh.log, double, 9), 1.0);
  reset_play (&b, &cut, 0.005);
  CU_ASSERT_TRUE (sim_fluid_n_activities (b.fluid) > 0);
  sim_fluid_reset (b.fluid);
  sim_engine_reset (b.engine);
  hw_cluster_reset (b.cluster, 42);
  reset_play (&b, &again, INFINITY);
  CU_ASSERT_EQUAL_FATAL (again.log->len, fresh.log->len);
  CU_ASSERT (memcmp (again.log->data, fresh.log->data, fresh.log->len * sizeof (double)) == 0);
  sim_fluid_reset (b.fluid);
  sim_engine_reset (b.engine);
  hw_cluster_reset (b.cluster, 43);
  reset_play (&b, &other, INFINITY);
  CU_ASSERT_EQUAL_FATAL (other.log->len, fresh.log->len);
  CU_ASSERT (memcmp (other.log->data, fresh.log->data, fresh.log->len * sizeof (double)) != 0);
  g_array_unref (fresh.log);
  g_array_unref (cut.log);
  g_array_unref (again.log);
  g_array_unref (other.log);
  fixture_free (&a);
  fixture_free (&b);
  hw_node_spec_clear (&node);
}

/* The efficiency memo's cache by shape address (cluster.c) answers by the shape's content
 * and dtype: one HwKernelShape rewritten in place with other shapes, each asked in turn at
 * several dtypes (fp32 has no FlashAttention table), twice over, gives the times a second
 * cluster gives for copies of them at addresses of their own. */
static void
test_shape_memo_by_content (void)
{
  HwNodeSpec node = fixture_nvswitch_node (1);
  Fixture a = fixture_new (&node, 1, 1), b = fixture_new (&node, 1, 1);
  HwKernelShape shapes[] = {
    { .cls = HW_KERNEL_GEMM, .m = 4096, .n = 4096, .k = 4096, .batch = 1 },
    { .cls = HW_KERNEL_GEMM, .m = 96, .n = 4096, .k = 4096, .batch = 1 },
    { .cls = HW_KERNEL_GEMM, .m = 4096, .n = 96, .k = 333, .batch = 2 },
    { .cls = HW_KERNEL_FLASH_FWD, .batch = 2, .seq = 4096, .head_dim = 128, .causal = TRUE },
    { .cls = HW_KERNEL_FLASH_FWD, .batch = 2, .seq = 512, .head_dim = 64 },
    { .cls = HW_KERNEL_GEMM, .m = 8, .n = 8192, .k = 64, .batch = 1 },
    { .cls = HW_KERNEL_GEMM_BACKWARD, .m = 200, .n = 100, .k = 50, .batch = 3 },
  };
  const HwDtype dtypes[] = { HW_DTYPE_BF16, HW_DTYPE_FP32, HW_DTYPE_TF32, HW_DTYPE_FP16 };
  guint n = G_N_ELEMENTS (shapes), bad = 0;
  HwKernelShape *copies = g_new (HwKernelShape, n * G_N_ELEMENTS (dtypes));
  HwKernelShape one;
  for (guint round = 0; round < 2; round++)
    for (guint i = 0; i < n; i++)
      for (guint d = 0; d < G_N_ELEMENTS (dtypes); d++)
        {
          one = shapes[i];
          double t = hw_cluster_kernel_time_alone_shaped (a.cluster, 0, dtypes[d], &one, 1e12, 0);
          HwKernelShape *c = &copies[d * n + i];
          *c = shapes[i];
          double want = hw_cluster_kernel_time_alone_shaped (b.cluster, 0, dtypes[d], c, 1e12, 0);
          bad += t != want;
        }
  CU_ASSERT_EQUAL (bad, 0);
  /* the shapes do differ in time, so a stale answer would show */
  CU_ASSERT_NOT_EQUAL (hw_cluster_kernel_time_alone_shaped (b.cluster, 0, HW_DTYPE_BF16,
                                                            &shapes[0], 1e12, 0),
                       hw_cluster_kernel_time_alone_shaped (b.cluster, 0, HW_DTYPE_BF16,
                                                            &shapes[1], 1e12, 0));
  g_free (copies);
  fixture_free (&a);
  fixture_free (&b);
  hw_node_spec_clear (&node);
}

static void
count_log (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data)
{
  (void) domain, (void) level, (void) message;
  (*(int *) data)++;
}

/* Runs `n` kernels (shapes[i % 3], flops[i % 3]) on rank i % 2 of a 2-GPU cluster with
 * rank 1 slowed by 1.7 and jitter (cv 0.3, seed 7), one after another, each started from
 * its FLOPs (hw_cluster_start_kernel_after), or with `kept` run through
 * hw_cluster_run_kernel_base from base seconds asked once per kernel and kept (as the
 * executor keeps them per plan kernel); the ends. */
static double *
run_kernels (gboolean kept, guint n)
{
  HwNodeSpec node = fixture_nvswitch_node (2);
  Fixture f = fixture_new (&node, 1, 1);
  hw_cluster_set_slowdown (f.cluster, 1, 1.7);
  hw_cluster_set_jitter (f.cluster, 0.3, 7);
  const HwKernelShape shapes[] = {
    { .cls = HW_KERNEL_GEMM, .m = 4096, .n = 4096, .k = 4096, .batch = 1 },
    { .cls = HW_KERNEL_FLASH_FWD, .batch = 2, .seq = 4096, .head_dim = 128, .causal = TRUE },
    { .cls = HW_KERNEL_PLAIN },
  };
  const double flops[] = { 2.0 * 4096 * 4096 * 4096, 3e11, 0 };
  double base[3];
  for (guint j = 0; j < 3; j++)
    base[j] = hw_cluster_kernel_base_seconds (f.cluster, HW_DTYPE_BF16, &shapes[j], flops[j]);
  double *ends = g_new (double, n);
  for (guint i = 0; i < n; i++)
    {
      EndAt e = { f.engine, -1 };
      double end = -1;
      if (kept)
        {
          CU_ASSERT_FALSE (hw_cluster_run_kernel_base (f.cluster, i % 2, HW_DTYPE_BF16,
                                                       &shapes[i % 3], base[i % 3], 1e9, 0,
                                                       FALSE, end_at, &e, &end));
        }
      else
        hw_cluster_start_kernel_after (f.cluster, i % 2, HW_DTYPE_BF16, &shapes[i % 3],
                                       flops[i % 3], 1e9, 0, end_at, &e);
      sim_engine_run (f.engine);
      ends[i] = e.end;
    }
  fixture_free (&f);
  hw_node_spec_clear (&node);
  return ends;
}

/* A kernel run from its kept base seconds (hw_cluster_kernel_base_seconds) is the kernel
 * started from its FLOPs: the same ends, to the bit, under a slow-down and jitter; a bad
 * FLOP count gives a base that the run refuses. */
static void
test_run_from_base_seconds (void)
{
  const guint n = 12;
  g_autofree double *from_flops = run_kernels (FALSE, n);
  g_autofree double *from_base = run_kernels (TRUE, n);
  guint differ = 0;
  for (guint i = 0; i < n; i++)
    differ += memcmp (&from_flops[i], &from_base[i], sizeof (double)) != 0;
  CU_ASSERT_EQUAL (differ, 0);
  CU_ASSERT_TRUE (from_flops[n - 1] > from_flops[0]);
  HwNodeSpec node = fixture_nvswitch_node (1);
  Fixture f = fixture_new (&node, 1, 1);
  double end = 0;
  int criticals = 0;
  guint h = g_log_set_handler (NULL, G_LOG_LEVEL_CRITICAL, count_log, &criticals);
  double base = hw_cluster_kernel_base_seconds (f.cluster, HW_DTYPE_BF16, NULL, -1);
  CU_ASSERT_TRUE (base < 0);
  CU_ASSERT_FALSE (hw_cluster_run_kernel_base (f.cluster, 0, HW_DTYPE_BF16, NULL, base, 0, 0,
                                               FALSE, NULL, NULL, &end));
  g_log_remove_handler (NULL, h);
  CU_ASSERT_EQUAL (criticals, 2);
  fixture_free (&f);
  hw_node_spec_clear (&node);
}

static const StepsimTest tests[] = {
  { "node spec copy is deep, clear frees", test_node_spec_copy_is_deep },
  { "cluster keeps its own copy of the spec", test_cluster_copies_spec },
  { "slow-down 2 doubles a compute-bound kernel", test_slowdown_doubles_compute },
  { "slow-down spares a memory-bound kernel", test_slowdown_spares_memory_bound },
  { "jitter: same seed same times, factor >= 0.5", test_jitter_seeded },
    { "jitter never runs a kernel above the peak", test_jitter_never_above_peak },
  { "jitter: cv = 0 changes nothing", test_jitter_zero_cv },
  { "jitter: mean factor near 1", test_jitter_mean },
  { "a reset cluster replays as a new one", test_reset_replays_as_new },
  { "the efficiency memo answers by shape content, not address", test_shape_memo_by_content },
  { "a kernel run from its kept base seconds = from its FLOPs", test_run_from_base_seconds },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/cluster", tests);
}
