/* tests/unit/cli/test_dp_properties.c — properties of data-parallel steps, simulated end
 * to end (scenario → plan → executor) from shipped scenarios with `--set` overrides.
 *
 * Properties: a slower inter-node link never makes a step faster; data parallelism of
 * degree 1 is the single-GPU run; step-time distributions with kernel jitter are ordered
 * and reproducible per seed; a straggler holds every rank back (collectives wait) by at
 * least the derived amount; ZeRO-3 lowers per-GPU memory as GPUs are added.
 */
#include "config.h"

#include <math.h>
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "models/plan/plan.h"
#include "sim/recorder.h"
#include "tests/testlib.h"

/* Two DGX A100 nodes would cross InfiniBand; the S10 file is DDP on one DGX A100. */
#define DDP_1B "tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini"
#define S1 "scenarios/s1-llama-3.2-1b-fp32.ini"
#define S3 "scenarios/s3-llama-2-7b-zero3-8xa100.ini"

static gboolean
simulate_rec (const char *file, const char *const *sets, SimRecorder *rec, ModelSimResult *res)
{
  g_autofree char *path = stepsim_test_srcpath (file);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  if (sc == NULL || !model_simulate (&in, rec, res, &e))
    {
      g_printerr ("\n  %s: %s\n", file, e ? e->message : "?");
      return FALSE;
    }
  return TRUE;
}

static gboolean
simulate (const char *file, const char *const *sets, ModelSimResult *res)
{
  return simulate_rec (file, sets, NULL, res);
}

/* DDP over two nodes (16 GPUs): the gradient all-reduce crosses the NICs. Lowering the NIC
 * bandwidth 200 → 100 → 25 → 5 Gbit/s never shortens the step. At 5 Gbit/s it is more than
 * 1.2× the 200 Gbit/s step: an all-reduce of S = 2Ψ = 2.47 GB of bf16 gradients between two
 * nodes moves at least S/2 out of each node in its reduce-scatter and S/2 in its all-gather
 * (Patarasuk & Yuan 2009 bandwidth bound), S over 8 × 0.625 GB/s = 0.49 s; at most the last
 * micro-batch's backward, about a sixth of the 1.2 s step (GA 4, backward 2/3 of each
 * micro-batch), hides it, so the step grows by ≥ 0.29 s > 0.2 × 1.2 s. */
static void
test_slower_link (void)
{
  const char *bw[] = { "200 Gbit/s", "100 Gbit/s", "25 Gbit/s", "5 Gbit/s" };
  double prev = 0, first = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (bw); i++)
    {
      g_autofree char *nic = g_strdup_printf ("cluster.nic_bandwidth=%s", bw[i]);
      const char *const sets[] = { "cluster.nodes=2", nic, NULL };
      ModelSimResult r;
      CU_ASSERT_FATAL (simulate (DDP_1B, sets, &r));
      CU_ASSERT_EQUAL (r.n_ranks, 16);
      CU_ASSERT (r.step_time >= prev);
      if (i == 0)
        first = r.step_time;
      prev = r.step_time;
      model_sim_result_clear (&r);
    }
  CU_ASSERT (prev > first * 1.2);
}

/* Every data-parallel mode at degree 1 (one GPU) gives the single-GPU summary exactly: no
 * collective has a peer, nothing is sharded. Checked for S1 (fp32) and its bf16-mixed
 * variant against the scenario without a [parallel] group. One difference is physical:
 * DeepSpeed's ZeRO (zero1/2/3) creates the optimizer states at construction, PyTorch's
 * optimizers at the first step among the blocks its backward freed (models/plan/plan.h
 * model_plan_creation_task), so the caching allocator's segments — reserved, device-used —
 * are those of one DeepSpeed run for the three stages, not the single-GPU run's. */
static void
check_degree_one (const char *precision)
{
  const char *modes[] = { "ddp", "zero1", "zero2", "zero3", "fsdp_full_shard",
                          "fsdp_shard_grad_op", "fsdp_no_shard" };
  g_autofree char *prec = g_strdup_printf ("training.precision=%s", precision);
  const char *const base_sets[] = { prec, NULL };
  ModelSimResult base;
  CU_ASSERT_FATAL (simulate (S1, base_sets, &base));
  CU_ASSERT_EQUAL (base.n_ranks, 1);
  double zero_reserved = -1;
  for (gsize i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autofree char *mode = g_strdup_printf ("parallel.data_parallel=%s", modes[i]);
      const char *const sets[] = { prec, mode, NULL };
      ModelSimResult r;
      CU_ASSERT_FATAL (simulate (S1, sets, &r));
      if (r.step_time != base.step_time || r.peak_allocated != base.peak_allocated)
        g_printerr ("\n  %s %s: step %.17g vs %.17g, allocated %.17g vs %.17g\n", precision,
                    modes[i], r.step_time, base.step_time, r.peak_allocated, base.peak_allocated);
      CU_ASSERT_EQUAL (r.n_ranks, 1);
      CU_ASSERT_EQUAL (r.step_time, base.step_time);
      CU_ASSERT_EQUAL (r.peak_allocated, base.peak_allocated);
      gboolean deepspeed = g_str_has_prefix (modes[i], "zero");
      if (!deepspeed)
        {
          CU_ASSERT_EQUAL (r.peak_reserved, base.peak_reserved);
          CU_ASSERT_EQUAL (r.device_used, base.device_used);
        }
      else if (zero_reserved < 0)
        zero_reserved = r.peak_reserved;
      else
        CU_ASSERT_EQUAL (r.peak_reserved, zero_reserved);
      CU_ASSERT_EQUAL (r.model_states, base.model_states);
      CU_ASSERT_EQUAL (r.mfu, base.mfu);
      CU_ASSERT_EQUAL (r.exposed_comm, 0.0);
      model_sim_result_clear (&r);
    }
  model_sim_result_clear (&base);
}

static void
test_degree_one (void)
{
  check_degree_one ("fp32");
  check_degree_one ("bf16_mixed");
}

/* [run] steps = 20, kernel_jitter = 0.05 on 8-GPU DDP: min ≤ median ≤ p99 with min < p99
 * (jitter exists); the same seed gives the same three numbers; another seed does not. */
static void
test_jitter (void)
{
  const char *const a_sets[] = { "run.steps=20", "run.kernel_jitter=0.05", "run.seed=11", NULL };
  const char *const b_sets[] = { "run.steps=20", "run.kernel_jitter=0.05", "run.seed=12345",
                                 NULL };
  ModelSimResult a, a2, b;
  CU_ASSERT_FATAL (simulate (DDP_1B, a_sets, &a));
  CU_ASSERT_FATAL (simulate (DDP_1B, a_sets, &a2));
  CU_ASSERT_FATAL (simulate (DDP_1B, b_sets, &b));
  CU_ASSERT_EQUAL (a.steps, 20);
  CU_ASSERT (a.step_time_min <= a.step_time_median && a.step_time_median <= a.step_time_p99);
  CU_ASSERT (a.step_time_min < a.step_time_p99);
  CU_ASSERT_EQUAL (a.step_time_min, a2.step_time_min);
  CU_ASSERT_EQUAL (a.step_time_median, a2.step_time_median);
  CU_ASSERT_EQUAL (a.step_time_p99, a2.step_time_p99);
  CU_ASSERT (a.step_time_min != b.step_time_min || a.step_time_median != b.step_time_median
             || a.step_time_p99 != b.step_time_p99);
  model_sim_result_clear (&a);
  model_sim_result_clear (&a2);
  model_sim_result_clear (&b);
}

/* Latest end of any task of `rank` in the recorded task table. */
static double
rank_end (const SimRecorder *rec, guint rank)
{
  double end = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if (t->rank == rank)
        end = MAX (end, t->end);
    }
  return end;
}

/* FLOPs of `rank`'s forward, backward and recompute tasks. */
static double
rank_fb_flops (const SimRecorder *rec, guint rank)
{
  double f = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if (t->rank == rank
          && (t->kind == MODEL_TASK_KIND_FORWARD || t->kind == MODEL_TASK_KIND_BACKWARD
              || t->kind == MODEL_TASK_KIND_RECOMPUTE))
        f += t->flops;
    }
  return f;
}

/* A straggler (rank 3, kernels' compute 2× slower) under DDP with GA 4. Derived bound: each
 * kernel of rank 3 takes at least 2·F_k/(P·η) (P the bf16 peak, η the compute efficiency
 * of the A100-80GB catalog entry, 271/312), so its forward and backward end no earlier than
 * 2·F/(P·η), F = Σ of its forward/backward FLOPs. Rank 0's last gradient all-reduce needs
 * rank 3's last gradients, and rank 0's optimizer step follows it, so rank 0 — not only the
 * straggler — ends after 2·F/(P·η). Without the straggler rank 0 ends before that bound
 * (else the property would say nothing). */
static void
test_straggler (void)
{
  const char *const sets[] = { "run.stragglers=3:2", NULL };
  g_autoptr (SimRecorder) rec0 = sim_recorder_new ();
  g_autoptr (SimRecorder) rec1 = sim_recorder_new ();
  ModelSimResult base, slow;
  CU_ASSERT_FATAL (simulate_rec (DDP_1B, NULL, rec0, &base));
  CU_ASSERT_FATAL (simulate_rec (DDP_1B, sets, rec1, &slow));
  double eta = 271.0 / 312.0, peak = 312e12;
  double F = rank_fb_flops (rec1, 3);
  double bound = 2 * F / (peak * eta);
  CU_ASSERT (F > 0);
  CU_ASSERT_EQUAL (F, rank_fb_flops (rec0, 0));
  g_printerr ("\n  straggler 2x: rank 0 ends %.4f s (without: %.4f s), bound 2*F/(P*eta) "
              "= %.4f s\n", rank_end (rec1, 0), rank_end (rec0, 0), bound);
  CU_ASSERT (rank_end (rec0, 0) < bound);
  CU_ASSERT (rank_end (rec1, 0) >= bound);
  CU_ASSERT (slow.step_time >= bound);
  model_sim_result_clear (&base);
  model_sim_result_clear (&slow);
}

/* ZeRO-3 (S3, Llama-2-7B) on 8, 16 and 32 GPUs: per-GPU model states are 16Ψ/N exactly
 * (ZeRO Figure 1) and peak allocated and device-used memory fall strictly. */
static void
test_zero3_scaling (void)
{
  const char *nodes[] = { "cluster.nodes=1", "cluster.nodes=2", "cluster.nodes=4" };
  const guint gpus[] = { 8, 16, 32 };
  double psi = 6738415616.0, prev_alloc = INFINITY, prev_used = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS (nodes); i++)
    {
      const char *const sets[] = { nodes[i], NULL };
      ModelSimResult r;
      CU_ASSERT_FATAL (simulate (S3, sets, &r));
      CU_ASSERT_EQUAL (r.n_ranks, gpus[i]);
      STEPSIM_ASSERT_REL (r.state_bytes, 16 * psi / gpus[i], 1e-9);
      CU_ASSERT (r.peak_allocated < prev_alloc);
      CU_ASSERT (r.device_used < prev_used);
      prev_alloc = r.peak_allocated;
      prev_used = r.device_used;
      model_sim_result_clear (&r);
    }
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "slower NIC never faster (2-node DDP)", test_slower_link },
    { "DP degree 1 equals the single-GPU run", test_degree_one },
    { "jitter: ordered, seeded, reproducible", test_jitter },
    { "straggler 2x holds rank 0 back", test_straggler },
    { "ZeRO-3: more GPUs, less memory per GPU", test_zero3_scaling },
  };
  return STEPSIM_RUN_TESTS ("cli/dp_properties", tests);
}
