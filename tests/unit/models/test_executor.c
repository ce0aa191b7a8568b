/* tests/unit/models/test_executor.c — replaying a plan: step time and memory timeline
 * against closed forms. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/recorder.h"
#include "tests/testlib.h"
#include "tests/unit/models/tiny.h"

typedef struct
{
  double step_time;
  double act_peak, grad_peak, ws_peak, total_peak;
  double end_total;
  guint n_done, n_tasks;
  double op_seconds, op_flops; /* rank 0's kernels in the op-time table (op_times.h) */
  guint64 op_kernels;
} Outcome;

static double replay_host_dispatch; /* host_dispatch of replay()'s GPU (default 0) */

/* One node of `n_gpus` tiny GPUs (tiny.h) on NVSwitch, host_dispatch `host_dispatch` s, on
 * `fluid` (borrowed); caller frees. */
static HwCluster *
tiny_cluster (guint n_gpus, double host_dispatch, SimFluid *fluid)
{
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = n_gpus, .host_memory = 1e12,
                      .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 100e9,
                      .intra_latency = 2e-6 };
  node.gpu->host_dispatch = host_dispatch;
  HwCluster *cluster = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  return cluster;
}

static Outcome
replay (const ModelArch *a, const ModelStack *s, guint n_ranks, double *sum_alone)
{
  Outcome o = { 0 };
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = n_ranks;
  g_autoptr (ModelPlan) plan = model_plan_new (a, s, &par, NULL);
  g_assert (plan != NULL);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_cluster (n_ranks, replay_host_dispatch, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (n_ranks, NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  g_autoptr (ModelOpTimes) ops = model_op_times_new ();
  model_executor_set_op_times (exec, ops);
  model_executor_start (exec);
  sim_engine_run (engine);
  for (guint i = 0; i < model_op_times_n (ops); i++)
    {
      const ModelOpTime *e = model_op_times_get (ops, i);
      if (e->rank != 0)
        continue;
      o.op_seconds += e->seconds;
      o.op_flops += e->flops;
      o.op_kernels += e->count;
    }
  STEPSIM_ASSERT_REL (o.op_seconds, model_op_times_rank_seconds (ops, 0, -1), 1e-12);
  o.n_done = model_executor_n_done (exec);
  o.n_tasks = model_plan_n_tasks (plan);
  o.step_time = model_executor_rank_end (exec, 0);
  o.act_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_ACTIVATIONS);
  o.grad_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_GRADIENTS);
  o.ws_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_WORKSPACE);
  o.total_peak = model_ledger_peak (ledger, 0);
  o.end_total = model_ledger_current_total (ledger, 0);
  if (sum_alone != NULL)
    {
      /* One stream, one task at a time, kernels back to back, nothing else on the GPU:
       * the step is the sum of every kernel's time alone, latency + max(F/C, M/H). */
      *sum_alone = 0;
      for (guint i = 0; i < model_plan_n_tasks (plan); i++)
        {
          const ModelTask *t = model_plan_task (plan, i);
          for (guint k = 0; t->rank == 0 && k < t->n_kernels; k++)
            {
              const ModelKernel *kk = model_plan_kernel (plan, t->first_kernel + k);
              *sum_alone += hw_cluster_kernel_time_alone (cluster, 0, kk->dtype, kk->op.flops,
                                                          kk->op.bytes);
            }
        }
    }
  return o;
}

static void
test_step_time_is_sum_of_kernels (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  double expected;
  Outcome o = replay (a, &s, 1, &expected);
  CU_ASSERT_EQUAL (o.n_done, o.n_tasks);
  STEPSIM_ASSERT_REL (o.step_time, expected, 1e-9);
}

/* The op-time table's cache of (op address, rank, kind) → entry (op_times.c) never adds to
 * a wrong entry: a ModelOp whose address is reused for another op name gets an entry of its
 * own, and 3,000 ops, more than the cache holds, each added 3 times over 2 ranks in
 * interleaved rounds, keep one entry each with their own sums. */
static void
test_op_times_cache (void)
{
  g_autoptr (ModelOpTimes) t = model_op_times_new ();
  ModelOp op = { .name = "first", .op_class = MODEL_OP_GEMM, .flops = 1 };
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &op, 1.0, 0);
  op.name = "second"; /* the same struct, now another op */
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &op, 2.0, 0);
  CU_ASSERT_EQUAL_FATAL (model_op_times_n (t), 2);
  CU_ASSERT_STRING_EQUAL (model_op_times_get (t, 1)->op, "second");
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_get (t, 0)->seconds, 1.0, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_get (t, 1)->seconds, 2.0, 0);
  g_autoptr (ModelOpTimes) u = model_op_times_new ();
  enum { N = 3000 };
  ModelOp *ops = g_new0 (ModelOp, N);
  char **names = g_new0 (char *, N);
  for (guint i = 0; i < N; i++)
    {
      names[i] = g_strdup_printf ("op%u", i);
      ops[i] = (ModelOp){ .name = names[i], .op_class = MODEL_OP_ELEMENTWISE, .bytes = 1 };
    }
  for (guint round = 0; round < 3; round++)
    for (guint i = 0; i < N; i++)
      for (guint rank = 0; rank < 2; rank++)
        model_op_times_add (u, rank, MODEL_TASK_KIND_FORWARD, &ops[i], i + rank * 0.5, 0);
  CU_ASSERT_EQUAL_FATAL (model_op_times_n (u), 2 * N);
  guint bad = 0;
  for (guint i = 0; i < 2 * N; i++)
    {
      const ModelOpTime *e = model_op_times_get (u, i);
      guint op_i = i / 2, rank = i % 2;
      if (e->rank != rank || strcmp (e->op, names[op_i]) != 0 || e->count != 3
          || e->seconds != 3 * (op_i + rank * 0.5))
        bad++;
    }
  CU_ASSERT_EQUAL (bad, 0);
  for (guint i = 0; i < N; i++)
    g_free (names[i]);
  g_free (names);
  g_free (ops);
}

/* The op-time table's sums: kernels of one (rank, kind, op name) add into one entry, in
 * the order the first of each ended; another rank, kind or name is an entry of its own. The
 * names are compared as strings (two literals with the same text are one op). */
static void
test_op_times_sums (void)
{
  g_autoptr (ModelOpTimes) t = model_op_times_new ();
  char name[] = "qkv";
  ModelOp qkv = { .name = "qkv", .op_class = MODEL_OP_GEMM, .flops = 10, .bytes = 3 };
  ModelOp qkv2 = qkv;
  qkv2.name = name; /* same text, another pointer */
  ModelOp norm = { .name = "norm", .op_class = MODEL_OP_ELEMENTWISE, .bytes = 7 };
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &qkv, 1.0, 0);
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &norm, 0.5, 0);
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &qkv2, 2.0, 0);
  model_op_times_add (t, 0, MODEL_TASK_KIND_BACKWARD, &qkv, 4.0, 0);
  model_op_times_add (t, 3, MODEL_TASK_KIND_FORWARD, &qkv, 8.0, 0);
  CU_ASSERT_EQUAL_FATAL (model_op_times_n (t), 4);
  const ModelOpTime *e = model_op_times_get (t, 0);
  CU_ASSERT_STRING_EQUAL (e->op, "qkv");
  CU_ASSERT_EQUAL (e->count, 2);
  CU_ASSERT_DOUBLE_EQUAL (e->seconds, 3.0, 0);
  CU_ASSERT_DOUBLE_EQUAL (e->flops, 20, 0);
  CU_ASSERT_DOUBLE_EQUAL (e->bytes, 6, 0);
  CU_ASSERT_STRING_EQUAL (model_op_times_get (t, 1)->op, "norm");
  CU_ASSERT_EQUAL (model_op_times_get (t, 2)->kind, MODEL_TASK_KIND_BACKWARD);
  CU_ASSERT_EQUAL (model_op_times_get (t, 3)->rank, 3);
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_rank_seconds (t, 0, -1), 7.5, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_rank_seconds (t, 0, MODEL_OP_GEMM), 7.0, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_rank_seconds (t, 3, MODEL_OP_ELEMENTWISE), 0, 0);
  /* a causal fused attention kernel computes half the s² square its FLOPs count (so its
   * achieved rate stays below the peak); a non-causal one, and an eager GEMM, all of it */
  ModelOp attn = { .name = "attention", .op_class = MODEL_OP_ATTENTION, .flops = 8 };
  attn.shape.cls = HW_KERNEL_FLASH_FWD;
  attn.shape.causal = TRUE;
  model_op_times_add (t, 0, MODEL_TASK_KIND_FORWARD, &attn, 1.0, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_get (t, 4)->flops, 4, 0);
  attn.shape.causal = FALSE;
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_executed_flops (&attn), 8, 0);
  ModelOp scores = { .name = "attn_scores", .op_class = MODEL_OP_GEMM, .flops = 8 };
  scores.shape.cls = HW_KERNEL_GEMM;
  scores.shape.causal = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_op_times_executed_flops (&scores), 8, 0);
}

/* The op-time table (models/plan/op_times.h) of a one-rank step whose kernels run back to
 * back: every kernel is in it once, with its FLOPs, and the seconds add up to the step. */
static void
test_op_times_cover_the_step (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  Outcome o = replay (a, &s, 1, NULL);
  ModelParallel par;
  model_parallel_init_defaults (&par);
  g_autoptr (ModelPlan) plan = model_plan_new (a, &s, &par, NULL);
  guint64 n = 0;
  double flops = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      for (guint k = 0; t->rank == 0 && k < t->n_kernels; k++)
        {
          n++;
          const ModelKernel *kk = model_plan_kernel (plan, t->first_kernel + k);
          flops += model_op_times_executed_flops (&kk->op);
        }
    }
  CU_ASSERT_TRUE (n > 0);
  CU_ASSERT_EQUAL (o.op_kernels, n);
  STEPSIM_ASSERT_REL (o.op_flops, flops, 1e-12);
  STEPSIM_ASSERT_REL (o.op_seconds, o.step_time, 1e-9);
}

/* Host dispatch (executor.c): the CPU issues rank 0's N kernels in program order at c s
 * each and never waits, so kernel i starts at (i + 1)·c + latency. With c = 1 s, far above
 * any tiny kernel's time alone τ, no kernel waits for the previous one, and the step ends
 * when the last one does: N·c + τ_last (τ_last = its time alone, latency included). */
static void
test_host_dispatch_bound (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  replay_host_dispatch = 1.0;
  Outcome o = replay (a, &s, 1, NULL);
  replay_host_dispatch = 0;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  g_autoptr (ModelPlan) plan = model_plan_new (a, &s, &par, NULL);
  guint n = 0;
  const ModelKernel *last = NULL;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->rank == 0 && t->n_kernels > 0)
        {
          n += t->n_kernels;
          last = model_plan_kernel (plan, t->first_kernel + t->n_kernels - 1);
        }
    }
  CU_ASSERT_PTR_NOT_NULL_FATAL (last);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_cluster (1, 0, fluid);
  double tau = hw_cluster_kernel_time_alone_shaped (cluster, 0, last->dtype, &last->op.shape,
                                                    last->op.flops, last->op.bytes);
  CU_ASSERT_TRUE (tau < 1.0);
  STEPSIM_ASSERT_REL (o.step_time, n * 1.0 + tau, 1e-9);
  CU_ASSERT_EQUAL (o.n_done, o.n_tasks);
  /* A kernel's time in the op table runs from its launch, its issue here (the GPU idles
   * before it), not from the previous kernel's end: the sum is every kernel's τ, far below
   * the step's N·c. */
  double sum_tau = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      for (guint k = 0; t->rank == 0 && k < t->n_kernels; k++)
        {
          const ModelKernel *kk = model_plan_kernel (plan, t->first_kernel + k);
          sum_tau += hw_cluster_kernel_time_alone_shaped (cluster, 0, kk->dtype, &kk->op.shape,
                                                          kk->op.flops, kk->op.bytes);
        }
    }
  STEPSIM_ASSERT_REL (o.op_seconds, sum_tau, 1e-9);
}

/* Without checkpointing every layer's saved activations coexist at the end of the forward:
 * peak = embedding + L × layer + head activations. */
static void
test_activation_peak_no_checkpointing (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  ModelCostParams cp = model_stack_cost_params (&s);
  Outcome o = replay (a, &s, 1, NULL);
  double expected = model_cost_embedding (a, &cp).act_saved
                    + 4 * model_cost_layer (a, &cp).act_saved + model_cost_head (a, &cp).act_saved;
  STEPSIM_ASSERT_REL (o.act_peak, expected, 1e-12);
}

/* Full checkpointing keeps L layer inputs; the largest moment is either the head's forward
 * (inputs + head activations) or the last layer's recompute (inputs + one layer's
 * activations, the head's already freed): embedding + L × e·sbh + max(head, layer). */
static void
test_activation_peak_full_checkpointing (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  ModelCostParams cp = model_stack_cost_params (&s);
  Outcome o = replay (a, &s, 1, NULL);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  double expected = model_cost_embedding (a, &cp).act_saved + 4 * layer.act_checkpoint
                    + MAX (model_cost_head (a, &cp).act_saved, layer.act_saved);
  STEPSIM_ASSERT_REL (o.act_peak, expected, 1e-12);
  CU_ASSERT (layer.act_checkpoint < layer.act_saved);
}

/* The other variants on the 4-layer model, each peak derived from what each layer keeps:
 *  selective: every layer keeps all but the attention core; the core is re-created for one
 *    layer at a time after the head's activations are gone → emb + 4(A − C) + max(H, C);
 *  every_k (k = 2): layers 0 and 2 keep their input (I), 1 and 3 everything (A); the head's
 *    moment dominates (recomputing layer 2 happens after layer 3 freed A) → emb + 2I + 2A + H;
 *  sqrt (segments of ⌈√4⌉ = 2): layers 0 and 2 keep I, 1 and 3 nothing; a segment's two
 *    layers are recomputed together → emb + 2I + max(H, 2A). */
static void
test_activation_peak_variants (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.flash_attention = FALSE;
  s.dropout = 0.1;
  ModelCostParams cp = model_stack_cost_params (&s);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  double emb = model_cost_embedding (a, &cp).act_saved, head = model_cost_head (a, &cp).act_saved;
  double A = layer.act_saved, I = layer.act_checkpoint, C = layer.act_selective;
  s.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  STEPSIM_ASSERT_REL (replay (a, &s, 1, NULL).act_peak, emb + 4 * (A - C) + MAX (head, C), 1e-12);
  s.checkpointing = MODEL_CHECKPOINTING_EVERY_K;
  s.checkpoint_every = 2;
  STEPSIM_ASSERT_REL (replay (a, &s, 1, NULL).act_peak, emb + 2 * I + 2 * A + head, 1e-12);
  s.checkpointing = MODEL_CHECKPOINTING_SQRT;
  STEPSIM_ASSERT_REL (replay (a, &s, 1, NULL).act_peak, emb + 2 * I + MAX (head, 2 * A), 1e-12);
  CU_ASSERT (C > 0 && C < A);
}

/* Op-level selective (models/ops/graph.h): every layer keeps its input, its attention
 * outputs and its odd mms' outputs (K); the recompute re-creates the rest of what eager
 * saves (P) for one layer at a time, after the head's activations are gone:
 * emb + 4K + max(H, P). The rerun ops are the point-wise ones and the even mms (k, o and
 * up: graph.h), so each of the 4 layers adds its recompute pass's FLOPs once to the
 * model's, and those are exactly the three GEMMs'. */
static void
test_activation_peak_selective_op (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  ModelCostParams cp = model_stack_cost_params (&s);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  double emb = model_cost_embedding (a, &cp).act_saved, head = model_cost_head (a, &cp).act_saved;
  double K = layer.act_keep_matmul, P = layer.act_pointwise;
  s.checkpointing = MODEL_CHECKPOINTING_SELECTIVE_OP;
  STEPSIM_ASSERT_REL (replay (a, &s, 1, NULL).act_peak, emb + 4 * K + MAX (head, P), 1e-12);
  CU_ASSERT (P > 0 && K > 0);
  g_autoptr (ModelPlan) plan = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT (layer.pointwise_fwd.flops > 0);
  STEPSIM_ASSERT_REL (model_plan_hardware_flops (plan) - model_plan_model_flops (plan),
                      4 * layer.pointwise_fwd.flops, 1e-12);
}

/* Recompute costs: selective reruns only the attention core, full the whole layer. */
static void
test_recompute_flops (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.flash_attention = FALSE;
  ModelCostParams cp = model_stack_cost_params (&s);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  s.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  g_autoptr (ModelPlan) sel = model_plan_new (a, &s, NULL, NULL);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  g_autoptr (ModelPlan) full = model_plan_new (a, &s, NULL, NULL);
  STEPSIM_ASSERT_REL (model_plan_hardware_flops (sel) - model_plan_model_flops (sel),
                      4 * layer.selective_fwd.flops, 1e-12);
  STEPSIM_ASSERT_REL (model_plan_hardware_flops (full) - model_plan_model_flops (full),
                      4 * layer.fwd.flops, 1e-12);
}

/* Gradients reach Ψ × gradient bytes and are released by the optimizer step; at the end
 * only the persistent state (weights, master, optimizer) remains. */
static void
test_gradients_and_end_state (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 3;
  Outcome o = replay (a, &s, 1, NULL);
  double psi = (double) model_arch_n_params (a);
  STEPSIM_ASSERT_REL (o.grad_peak, psi * model_stack_gradient_bytes (&s), 1e-12);
  STEPSIM_ASSERT_REL (o.end_total, psi * (model_stack_state_bytes (&s)
                                          - model_stack_gradient_bytes (&s)), 1e-12);
}

/* Checkpointing trades memory for time: lower activation peak, longer step. */
static void
test_checkpointing_tradeoff (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome none = replay (a, &s, 1, NULL);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  Outcome full = replay (a, &s, 1, NULL);
  CU_ASSERT (full.act_peak < none.act_peak);
  CU_ASSERT (full.step_time > none.step_time);
}

/* DP degree 1 is the single-GPU plan; the same scenario twice gives the same result. */
static void
test_degree_one_and_deterministic (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome one = replay (a, &s, 1, NULL);
  Outcome again = replay (a, &s, 1, NULL);
  CU_ASSERT_EQUAL (one.step_time, again.step_time);
  CU_ASSERT_EQUAL (one.total_peak, again.total_peak);
  double sum_alone;
  Outcome single = replay (a, &s, 1, &sum_alone);
  STEPSIM_ASSERT_REL (single.step_time, sum_alone, 1e-9);
}

/* Two DDP ranks: the gradient all-reduce can only add time, and DDP's bucket copies add
 * Ψ × 2 B (bf16 gradients) to each rank's memory (gradient_as_bucket_view=False). */
static void
test_two_ranks_ddp (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome one = replay (a, &s, 1, NULL);
  Outcome two = replay (a, &s, 2, NULL);
  CU_ASSERT_EQUAL (two.n_done, two.n_tasks);
  CU_ASSERT (two.step_time > one.step_time);
  STEPSIM_ASSERT_REL (two.total_peak - one.total_peak, 2.0 * model_arch_n_params (a), 1e-9);
}

/* `plan` (two ranks) run on the engine over tiny_cluster (2, 0, …), every task done; the
 * recorder of its tasks (caller frees). */
static SimRecorder *
run_pair_recorded (const ModelPlan *plan)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_cluster (2, 0, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (2, NULL);
  SimRecorder *rec = sim_recorder_new ();
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, rec);
  model_executor_start (exec);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (model_executor_n_done (exec), model_plan_n_tasks (plan));
  return rec;
}

/* The end (s) of rank 0's task `label` in `rec`; -1 if none. */
static double
rank0_task_end (const SimRecorder *rec, const char *label)
{
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if (t->rank == 0 && strcmp (t->label, label) == 0)
        return t->end;
    }
  return -1;
}

/* Bytes rank 0's gradient all-reduces / reduce-scatters carry from the end of its last
 * micro-batch's embedding backward on, and in all, for a data-parallel `mode` on two ranks
 * with 64 KiB buckets (smaller than the embedding's gradient, so that where the embedding
 * is bucketed shows). */
static void
reduced_after_embedding (const ModelArch *a, ModelDataParallel mode, double *after,
                         double *total)
{
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = mode;
  par.degree = 2;
  par.bucket_size = 64 * 1024;
  g_autoptr (ModelPlan) plan = model_plan_new (a, &s, &par, NULL);
  g_assert (plan != NULL);
  g_autoptr (SimRecorder) rec = run_pair_recorded (plan);
  double emb_end = rank0_task_end (rec, "bwd embed mb1");
  CU_ASSERT (emb_end > 0);
  *after = *total = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      const ModelTask *task = model_plan_task (plan, t->id);
      if (t->rank != 0 || task->collective < 0 || strstr (t->label, "grads") == NULL)
        continue;
      *total += task->bytes;
      if (t->start >= emb_end)
        *after += task->bytes;
    }
}

/* Real DDP reduces a parameter once, after its last gradient contribution: the reducer's
 * hook runs on the parameter's AccumulateGrad node, which autograd runs once all uses have
 * contributed (torch/csrc/distributed/c10d/reducer.cpp). A tied LM head's gradient is the
 * embedding's, completed by the embedding's backward, so under DDP and ZeRO-1 the buckets
 * holding its V × h × 2 B (bf16 gradients) start after that backward ends. Untied, the
 * embedding's own V × h gradient is in the same position; the head's is reduced before.
 * Totals stay Ψ × 2 B. */
static void
test_tied_embedding_reduced_after_its_backward (void)
{
  const ModelDataParallel modes[] = { MODEL_DP_DDP, MODEL_DP_ZERO1 };
  for (guint tied = 0; tied < 2; tied++)
    for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
      {
        g_autoptr (ModelArch) a = tiny_arch ();
        a->tied_embeddings = tied;
        double emb = 2.0 * (double) model_arch_n_params_embedding (a); /* V h × 2 B */
        double after, total;
        reduced_after_embedding (a, modes[m], &after, &total);
        STEPSIM_ASSERT_REL (total, 2.0 * (double) model_arch_n_params (a), 1e-12);
        /* everything bucketed at the embedding, and no more than one bucket beside it */
        CU_ASSERT (after >= emb);
        CU_ASSERT (after < emb + 64 * 1024);
      }
}

/* The tiny model's step under ZeRO-3 on two ranks with `grad_accum` micro-batches (the
 * trace tests' plan). */
static ModelPlan *
zero3_pair_plan (guint grad_accum)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = grad_accum;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = MODEL_DP_ZERO3;
  par.degree = 2;
  ModelPlan *plan = model_plan_new (a, &s, &par, NULL);
  g_assert (plan != NULL);
  return plan;
}

/* FSDP2 unshards a layer for its backward in the pre-backward hook autograd runs when the
 * layer's output gradient is ready, and prefetches the previous layer from there
 * (_fsdp_param_group.py pre_backward, _backward_prefetch): no backward re-gather starts
 * before the head's backward has ended, the top layers' included (they used to run on the
 * comm stream during the forward and hold prefetch + 1 gathered layers over the head). */
static void
test_backward_gathers_after_the_head (void)
{
  g_autoptr (ModelPlan) plan = zero3_pair_plan (1);
  g_autoptr (SimRecorder) rec = run_pair_recorded (plan);
  double head_end = rank0_task_end (rec, "bwd head mb0");
  CU_ASSERT (head_end > 0);
  guint n = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if (t->rank != 0 || strstr (t->label, "all_gather params L") == NULL
          || strstr (t->label, "(bwd)") == NULL)
        continue;
      n++;
      CU_ASSERT (t->start >= head_end);
    }
  CU_ASSERT (n > 0);
}

/* QLoRA's NF4 constants under data-parallel sharding: torchtune's NF4Tensor (torchao)
 * splits quantized_scalers and quantization_factor with its data for FSDP2 (nf4_split,
 * fsdp_pre_all_gather), so a rank of two holds half; bitsandbytes' quant_state (any other
 * framework) stays whole on every rank. */
static void
test_nf4_constants_shard_under_torchtune (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  double q[2][2]; /* [torchtune][ranks - 1] */
  for (guint tt = 0; tt < 2; tt++)
    for (guint n = 1; n <= 2; n++)
      {
        ModelStack s = tiny_stack ();
        s.precision = MODEL_PRECISION_BF16;
        s.finetune.method = MODEL_FINETUNE_QLORA;
        if (tt)
          s.framework.kind = MODEL_FRAMEWORK_TORCHTUNE;
        ModelParallel par;
        model_parallel_init_defaults (&par);
        par.mode = MODEL_DP_FSDP_FULL_SHARD;
        par.degree = n;
        g_autoptr (ModelPlan) plan = model_plan_new (a, &s, &par, NULL);
        g_assert (plan != NULL);
        q[tt][n - 1] = model_plan_initial_bytes (plan, MODEL_MEM_QUANTIZATION);
      }
  CU_ASSERT (q[0][0] > 0);
  STEPSIM_ASSERT_REL (q[0][1], q[0][0], 1e-12);
  STEPSIM_ASSERT_REL (q[1][0], q[0][0], 1e-12);
  STEPSIM_ASSERT_REL (q[1][1], 0.5 * q[0][0], 1e-12);
}

/* A replay's trace (model_executor_keep_trace) replayed without the engine
 * (model_executor_run_trace) on a new ledger, host ledger and recorder makes every recorder
 * call of the engine's run in the same order: the same series (paths in creation order,
 * change points) and task table, and the same figures — two ZeRO-3 ranks with kernel
 * jitter, the fluid's load changes captured as marks and recorded as series "load/<id>"
 * by both runs. */
typedef struct
{
  SimRecorder *rec;
  GHashTable *series; /* resource id + 1 → series + 1 */
  ModelExecutorTrace *trace; /* NULL: not captured */
} LoadLog;

static void
load_mark (guint id, double time, double value, gpointer data)
{
  LoadLog *l = data;
  gpointer s = g_hash_table_lookup (l->series, GUINT_TO_POINTER (id + 1));
  if (s == NULL)
    {
      g_autofree char *path = g_strdup_printf ("load/%u", id);
      s = GUINT_TO_POINTER (sim_recorder_series (l->rec, path, "B/s") + 1);
      g_hash_table_insert (l->series, GUINT_TO_POINTER (id + 1), s);
    }
  sim_recorder_set (l->rec, GPOINTER_TO_UINT (s) - 1, time, value);
}

static void
load_func (SimFluid *fluid, SimResourceId id, double time, double usage, gpointer data)
{
  (void) fluid;
  LoadLog *l = data;
  load_mark (id, time, usage, l);
  model_executor_trace_mark (l->trace, id, time, usage);
}

static void
test_trace_replays_the_run (void)
{
  g_autoptr (ModelPlan) plan = zero3_pair_plan (2);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_cluster (2, 0, fluid);
  hw_cluster_set_jitter (cluster, 0.05, 7);
  g_autoptr (SimRecorder) rec1 = sim_recorder_new ();
  g_autoptr (SimRecorder) rec2 = sim_recorder_new ();
  g_autoptr (GHashTable) series1 = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_autoptr (GHashTable) series2 = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_autoptr (ModelExecutorTrace) trace = model_executor_trace_new ();
  LoadLog log1 = { rec1, series1, trace }, log2 = { rec2, series2, NULL };
  g_autoptr (ModelLedger) ledger1 = model_ledger_new (2, rec1);
  g_autoptr (ModelHostLedger) host1 = model_host_ledger_new (1, 2, 1e12, 0, rec1);
  g_autoptr (ModelExecutor) run = model_executor_new (plan, cluster, engine, ledger1, rec1);
  model_executor_set_host_ledger (run, host1);
  model_executor_keep_trace (run, trace);
  sim_fluid_set_load_func (fluid, load_func, &log1);
  model_executor_start (run);
  sim_engine_run (engine);
  sim_fluid_set_load_func (fluid, NULL, NULL);
  g_autoptr (ModelLedger) ledger2 = model_ledger_new (2, rec2);
  g_autoptr (ModelHostLedger) host2 = model_host_ledger_new (1, 2, 1e12, 0, rec2);
  g_autoptr (ModelExecutor) again = model_executor_new (plan, cluster, engine, ledger2, rec2);
  model_executor_set_host_ledger (again, host2);
  model_executor_run_trace (again, trace, load_mark, &log2);

  CU_ASSERT_EQUAL (model_executor_n_done (again), model_plan_n_tasks (plan));
  CU_ASSERT_TRUE (g_hash_table_size (series1) > 0); /* the links carried the collectives */
  CU_ASSERT_EQUAL_FATAL (sim_recorder_n_series (rec2), sim_recorder_n_series (rec1));
  for (guint i = 0; i < sim_recorder_n_series (rec1); i++)
    {
      CU_ASSERT_STRING_EQUAL (sim_recorder_series_path (rec2, i),
                              sim_recorder_series_path (rec1, i));
      const double *t1, *v1, *t2, *v2;
      guint n1 = sim_recorder_series_points (rec1, i, &t1, &v1);
      guint n2 = sim_recorder_series_points (rec2, i, &t2, &v2);
      CU_ASSERT_EQUAL_FATAL (n2, n1);
      CU_ASSERT_TRUE (memcmp (t1, t2, n1 * sizeof (double)) == 0);
      CU_ASSERT_TRUE (memcmp (v1, v2, n1 * sizeof (double)) == 0);
    }
  CU_ASSERT_EQUAL_FATAL (sim_recorder_n_tasks (rec2), sim_recorder_n_tasks (rec1));
  for (guint i = 0; i < sim_recorder_n_tasks (rec1); i++)
    {
      const SimTaskRecord *x = sim_recorder_task (rec1, i), *y = sim_recorder_task (rec2, i);
      CU_ASSERT_TRUE (x->id == y->id && x->start == y->start && x->end == y->end);
    }
  for (guint r = 0; r < 2; r++)
    {
      CU_ASSERT_EQUAL (model_executor_rank_end (again, r), model_executor_rank_end (run, r));
      CU_ASSERT_EQUAL (model_executor_exposed_comm (again, r),
                       model_executor_exposed_comm (run, r));
      CU_ASSERT_EQUAL (model_ledger_peak (ledger2, r), model_ledger_peak (ledger1, r));
      CU_ASSERT_STRING_EQUAL (model_ledger_peak_task (ledger2, r),
                              model_ledger_peak_task (ledger1, r));
    }
}

/* With rank classes, a replay from a trace reports every task's time as the engine's run
 * did: a task of a rank that is no representative reads its representative's
 * (model_executor_task_time), also when the replay never indexed the run (the engine's
 * index is built at model_executor_start only). Two ZeRO-3 ranks, one class: rank 1's
 * tasks run nowhere and report rank 0's times, which are > 0 for the compute tasks. */
static void
test_trace_task_times_with_classes (void)
{
  g_autoptr (ModelPlan) plan = zero3_pair_plan (1);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_cluster (2, 0, fluid);
  HwRankShift one = hw_rank_shift_plain (2, 2, 1); /* rank 1 stands for rank 0 */
  g_assert (hw_rank_shift_valid (&one) && hw_rank_shift_n_reps (&one) == 1);
  g_autoptr (ModelExecutorTrace) trace = model_executor_trace_new ();
  g_autoptr (ModelLedger) ledger1 = model_ledger_new (1, NULL);
  g_autoptr (ModelExecutor) run
    = model_executor_new_classes (plan, cluster, engine, ledger1, NULL, &one);
  g_assert (run != NULL);
  model_executor_keep_trace (run, trace);
  model_executor_start (run);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL_FATAL (model_executor_n_done (run), model_executor_n_expected (run));
  g_autoptr (ModelLedger) ledger2 = model_ledger_new (1, NULL);
  g_autoptr (ModelExecutor) again
    = model_executor_new_classes (plan, cluster, engine, ledger2, NULL, &one);
  model_executor_run_trace (again, trace, NULL, NULL);
  guint on_rank1 = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      CU_ASSERT_EQUAL (model_executor_task_time (again, i), model_executor_task_time (run, i));
      if (model_plan_task (plan, i)->rank == 1 && model_executor_task_time (again, i) > 0)
        on_rank1++;
    }
  CU_ASSERT_TRUE (on_rank1 > 0);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "step time = sum of kernel times alone", test_step_time_is_sum_of_kernels },
    { "trace replay with rank classes: every task's time as the run's",
      test_trace_task_times_with_classes },
    { "host dispatch: a host-bound step ends at N x host_dispatch + the last kernel", test_host_dispatch_bound },
    { "op times: every kernel once, FLOPs and seconds add up to the step", test_op_times_cover_the_step },
    { "op times: one entry per (rank, kind, op name), in first-seen order", test_op_times_sums },
    { "op times: the entry cache never adds to a wrong entry", test_op_times_cache },
    { "activation peak without checkpointing", test_activation_peak_no_checkpointing },
    { "activation peak with full checkpointing", test_activation_peak_full_checkpointing },
    { "gradients and end state", test_gradients_and_end_state },
    { "activation peaks of selective, every_k, sqrt", test_activation_peak_variants },
    { "op-level selective checkpointing peak", test_activation_peak_selective_op },
  { "recompute FLOPs: selective vs full", test_recompute_flops },
    { "checkpointing trades memory for time", test_checkpointing_tradeoff },
    { "degree 1 = single GPU, deterministic", test_degree_one_and_deterministic },
    { "two DDP ranks", test_two_ranks_ddp },
    { "a trace replays the run's recorder calls and figures", test_trace_replays_the_run },
    { "tied embedding reduced after its own backward",
      test_tied_embedding_reduced_after_its_backward },
    { "stage 3: backward re-gathers start after the head's backward",
      test_backward_gathers_after_the_head },
    { "QLoRA: NF4 constants shard under torchtune's FSDP2, not bitsandbytes'",
      test_nf4_constants_shard_under_torchtune },
  };
  return STEPSIM_RUN_TESTS ("models/executor", tests);
}
