/* tests/unit/models/test_simulate.c — the plan layer's one call (models/plan/simulate.h) on
 * the tiny fixtures: its summary is what the executor and ledger of the same replay report,
 * MFU and HFU are Korthikanti et al. 2022 §6's ratio, the verdict follows the capacity, the
 * step-time distribution is ordered, stragglers and jitter reach the cluster, and a GPU
 * without the stack's compute dtype is one clear error. No scenario file, no command. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/plan/executor.h"
#include "models/plan/simulate.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/tiny.h"

typedef struct
{
  ModelArch *arch;
  ModelStack stack;
  ModelParallel par;
  HwNodeSpec node;
  HwFabricSpec fabric;
  ModelSimInput in;
} Fixture;

/* n_ranks GPUs of the tiny type on one NVSwitch node, DDP. */
static void
fixture_init (Fixture *f, guint n_ranks)
{
  f->arch = tiny_arch ();
  f->stack = tiny_stack ();
  model_parallel_init_defaults (&f->par);
  f->par.degree = n_ranks;
  f->node = (HwNodeSpec){ .gpu = tiny_gpu (), .n_gpus = n_ranks, .host_memory = 1e12,
                          .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 100e9,
                          .intra_latency = 2e-6 };
  f->fabric = (HwFabricSpec){ .spine_oversubscription = 1.0 };
  f->in = (ModelSimInput){ .arch = f->arch, .stack = &f->stack, .par = &f->par,
                           .node = &f->node, .n_nodes = 1, .fabric = &f->fabric, .steps = 1 };
}

static void
fixture_clear (Fixture *f)
{
  hw_node_spec_clear (&f->node);
  model_arch_free (f->arch);
}

/* One rank: step time, peak allocated and task count are those of the same plan replayed by
 * hand (engine, fluid, cluster, ledger, executor); MFU = model FLOPs ÷ (step × GPUs × peak)
 * and HFU the same with recompute (Korthikanti et al. 2022 §6), tokens/s = tokens ÷ step. */
static void
test_summary_is_the_replay (void)
{
  Fixture f;
  fixture_init (&f, 1);
  f.stack.checkpointing = MODEL_CHECKPOINTING_FULL; /* recompute makes HFU > MFU */
  ModelSimResult r;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &r, &e));

  g_autoptr (ModelPlan) plan = model_plan_new (f.arch, &f.stack, &f.par, NULL);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new (&f.node, 1, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (1, NULL);
  model_ledger_set_allocator (ledger, f.node.gpu->memory_capacity - f.node.gpu->cuda_context,
                              f.stack.expandable_segments);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  model_executor_start (exec);
  sim_engine_run (engine);

  CU_ASSERT_EQUAL (r.n_ranks, 1);
  CU_ASSERT_EQUAL (r.n_tasks, model_plan_n_tasks (plan));
  CU_ASSERT_EQUAL (r.step_time, model_executor_rank_end (exec, 0));
  CU_ASSERT_EQUAL (r.peak_allocated, model_ledger_peak (ledger, 0));
  CU_ASSERT_EQUAL (r.need_reserved, model_ledger_peak_reserved (ledger, 0));
  CU_ASSERT_EQUAL (r.device_used, r.peak_reserved + f.node.gpu->cuda_context);
  CU_ASSERT_EQUAL (r.peak_flops, f.node.gpu->peak_flops[model_stack_compute_dtype (&f.stack)]);
  STEPSIM_ASSERT_REL (r.mfu, model_plan_model_flops (plan) / (r.step_time * r.peak_flops), 1e-12);
  STEPSIM_ASSERT_REL (r.hfu, model_plan_hardware_flops (plan) / (r.step_time * r.peak_flops),
                      1e-12);
  CU_ASSERT (r.hfu > r.mfu);
  STEPSIM_ASSERT_REL (r.tokens_per_s, model_plan_tokens_per_rank (plan) / r.step_time, 1e-12);
  CU_ASSERT_TRUE (r.fits && r.gpu_fits && r.host_fits && r.nvme_fits);
  CU_ASSERT_FALSE (r.oom);
  model_sim_result_clear (&r);
  fixture_clear (&f);
}

/* The verdict: the same step on a GPU whose capacity is the CUDA context plus half of what
 * the step needs reserved runs out of memory; need_device (reserved need + context) stays the
 * step as planned and exceeds the capacity, device-used is capped by it. */
static void
test_verdict_follows_capacity (void)
{
  Fixture f;
  fixture_init (&f, 1);
  ModelSimResult big;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &big, NULL));
  CU_ASSERT_TRUE (big.fits);
  f.node.gpu->memory_capacity = f.node.gpu->cuda_context + big.need_reserved / 2;
  ModelSimResult small;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &small, NULL));
  CU_ASSERT_FALSE (small.fits);
  CU_ASSERT_FALSE (small.gpu_fits);
  CU_ASSERT_TRUE (small.oom);
  CU_ASSERT (small.need_device > small.capacity);
  CU_ASSERT (small.device_used <= small.capacity);
  model_sim_result_clear (&big);
  model_sim_result_clear (&small);
  fixture_clear (&f);
}

/* K = 9 replays with kernel jitter: min ≤ median ≤ p99, min < p99, step_time is the median;
 * the same seed repeats the three numbers. K = 1 without jitter: all three are the step. */
static void
test_distribution (void)
{
  Fixture f;
  fixture_init (&f, 2);
  ModelSimResult one;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &one, NULL));
  CU_ASSERT_EQUAL (one.steps, 1);
  CU_ASSERT_EQUAL (one.step_time_min, one.step_time);
  CU_ASSERT_EQUAL (one.step_time_p99, one.step_time);
  f.in.steps = 9;
  f.in.kernel_jitter = 0.1;
  f.in.seed = 7;
  ModelSimResult a, b;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &a, NULL));
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &b, NULL));
  CU_ASSERT_EQUAL (a.steps, 9);
  CU_ASSERT (a.step_time_min <= a.step_time_median && a.step_time_median <= a.step_time_p99);
  CU_ASSERT (a.step_time_min < a.step_time_p99);
  CU_ASSERT_EQUAL (a.step_time, a.step_time_median);
  CU_ASSERT_EQUAL (a.step_time_median, b.step_time_median);
  CU_ASSERT_EQUAL (a.step_time_p99, b.step_time_p99);
  model_sim_result_clear (&one);
  model_sim_result_clear (&a);
  model_sim_result_clear (&b);
  fixture_clear (&f);
}

/* padding = longest (models/plan/simulate.c "padded batches"). The tiny model with a 32000
 * vocabulary at micro-batch 2 × 512: the head's fp32 logits are 4·T·V = 125 MiB, so every
 * shorter batch leaves large segments too small for the longest one's, and the cache never
 * shrinks (no cudaMalloc fails on 16 GB): reserved ends above one step's from an empty
 * cache. The step itself is unchanged (same allocated peak); the kept sequence is the
 * median of the spread; the same input repeats every figure; without it nothing is padded. */
static void
test_padded_batches (void)
{
  Fixture f;
  fixture_init (&f, 1);
  f.arch->vocab_size = 32000;
  f.stack.seq_len = 512;
  ModelSimResult fresh, a, b;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &fresh, NULL));
  CU_ASSERT_EQUAL (fresh.padded_sequences, 0);
  CU_ASSERT_EQUAL (fresh.padded_reserved_max, 0);
  f.stack.pad_to_longest = TRUE;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &a, NULL));
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &b, NULL));
  CU_ASSERT_EQUAL (a.padded_sequences, 5);
  CU_ASSERT_EQUAL (a.padded_batches, 100);
  CU_ASSERT_EQUAL (a.peak_allocated, fresh.peak_allocated);
  CU_ASSERT (a.peak_reserved > fresh.peak_reserved);
  CU_ASSERT (a.padded_reserved_min <= a.peak_reserved);
  CU_ASSERT (a.peak_reserved <= a.padded_reserved_max);
  CU_ASSERT_EQUAL (a.device_used, a.peak_reserved + a.cuda_context);
  CU_ASSERT_EQUAL (a.peak_reserved, b.peak_reserved);
  CU_ASSERT_EQUAL (a.padded_reserved_min, b.padded_reserved_min);
  CU_ASSERT_EQUAL (a.padded_reserved_max, b.padded_reserved_max);
  CU_ASSERT_EQUAL (a.step_time, fresh.step_time);
  model_sim_result_clear (&fresh);
  model_sim_result_clear (&a);
  model_sim_result_clear (&b);
  fixture_clear (&f);
}

/* A straggler: rank 0's kernels 2× slower on one GPU. Every kernel's compute time doubles
 * and the rest does not shrink, so the step grows, and by less than 2× (latencies and HBM
 * time are not scaled). */
static void
test_straggler_reaches_cluster (void)
{
  Fixture f;
  fixture_init (&f, 1);
  ModelSimResult base, slow;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &base, NULL));
  const ModelSimSlowdown s[] = { { 0, 2.0 } };
  f.in.slowdowns = s;
  f.in.n_slowdowns = 1;
  CU_ASSERT_TRUE_FATAL (model_simulate (&f.in, NULL, &slow, NULL));
  CU_ASSERT (slow.step_time > base.step_time);
  CU_ASSERT (slow.step_time <= 2 * base.step_time);
  model_sim_result_clear (&base);
  model_sim_result_clear (&slow);
  fixture_clear (&f);
}

/* bf16 mixed precision on a GPU without bf16: FALSE and an error naming [training]
 * precision; nothing simulated. */
static void
test_missing_dtype (void)
{
  Fixture f;
  fixture_init (&f, 1);
  f.stack.precision = MODEL_PRECISION_BF16_MIXED;
  f.node.gpu->peak_flops[HW_DTYPE_BF16] = 0;
  ModelSimResult r;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_simulate (&f.in, NULL, &r, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "group [training], key 'precision'"));
  fixture_clear (&f);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "summary = the replay's executor and ledger; MFU/HFU", test_summary_is_the_replay },
    { "verdict follows the capacity", test_verdict_follows_capacity },
    { "step-time distribution ordered and seeded", test_distribution },
    { "straggler reaches the cluster", test_straggler_reaches_cluster },
    { "padded batches: the step inherits the shorter batches' cache", test_padded_batches },
    { "GPU without the compute dtype: one error", test_missing_dtype },
  };
  return STEPSIM_RUN_TESTS ("models/simulate", tests);
}
