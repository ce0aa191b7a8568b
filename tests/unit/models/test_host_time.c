/* tests/unit/models/test_host_time.c — the host (CPU) side of a step: the PyTorch ops the
 * op graph says the framework's code issues (ModelOp.host_ops), the framework's host time
 * per op, the host syncs the plan marks (ModelTask.host_sync) and the executor's host clock
 * (models/plan/executor.c). Closed forms, derivations in the comments. */
#include "config.h"
#include "hardware/cluster.h"
#include "models/memory/ledger.h"
#include "models/ops/cost.h"
#include "models/plan/executor.h"
#include "models/plan/op_times.h"
#include "models/plan/plan.h"
#include "models/stack/stack.h"
#include "sim/recorder.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/cost_fixture.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

/* Σ host ops of a pass's kernels. */
static double
pass_host_ops (const ModelPass *pass)
{
  double n = 0;
  for (guint i = 0; i < pass->n_ops; i++)
    n += model_op_host_ops (&pass->ops[i]);
  return n;
}

/* Llama-3.2-1B in pure bf16 as the custom profile runs it (HF's eager model code, SDPA,
 * the upcast loss of transformers >= 4.49): the forward issues
 *   a layer: input RMSNorm 8 (to fp32, pow, mean, + eps, rsqrt, mul, to bf16, · weight),
 *            q, k, v projections 3, rotary 10 (q and k: · cos, −x2, cat, · sin, +),
 *            SDPA 1, o_proj 1, residual 1, post-attention RMSNorm 8, gate and up 2,
 *            silu 1, the product 1, down 1, residual 1                        = 38
 *   the embedding 1 + the cos/sin tables 10                                   = 11
 *   the head: final RMSNorm 8, lm_head 1, loss 3 (float, log_softmax, nll)   = 12
 * 16 × 38 + 11 + 12 = 631, the count framework.c divides the measured forward by. */
static void
test_llama_forward_ops (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-3.2-1b");
  ModelStack s;
  model_stack_init_defaults (&s);
  s.precision = MODEL_PRECISION_BF16;
  s.micro_batch = 1;
  s.seq_len = 512;
  s.flash_attention = TRUE;
  ModelCostParams p = model_stack_cost_params (&s);
  ModelBlockCost layer = model_cost_layer (a, &p), emb = model_cost_embedding (a, &p),
                 head = model_cost_head (a, &p);
  CU_ASSERT_DOUBLE_EQUAL (pass_host_ops (&layer.fwd), 38, 0);
  CU_ASSERT_DOUBLE_EQUAL (pass_host_ops (&emb.fwd), 11, 0);
  CU_ASSERT_DOUBLE_EQUAL (pass_host_ops (&head.fwd), 12, 0);
  CU_ASSERT_EQUAL (a->n_layers, 16);
  CU_ASSERT_DOUBLE_EQUAL (16 * pass_host_ops (&layer.fwd) + pass_host_ops (&emb.fwd)
                            + pass_host_ops (&head.fwd), 631, 0);
  /* the backward: a trainable GEMM's node issues two mm (input and weight gradients), the
   * rest as many as forward: the layer's 7 GEMMs add 7 */
  CU_ASSERT_DOUBLE_EQUAL (pass_host_ops (&layer.bwd), 38 + 7, 0);
  /* fused code (Megatron's profile, or compile): one op per kernel, 38 - 7 - 9 = 22 */
  p.compile = TRUE;
  ModelBlockCost fused = model_cost_layer (a, &p);
  CU_ASSERT_DOUBLE_EQUAL (pass_host_ops (&fused.fwd), fused.fwd.n_ops, 0);
  CU_ASSERT (pass_host_ops (&fused.fwd) < 38);
}

/* HF's eager RMSNorm moves, per element of T·h: to fp32 (2 + 4), pow (4 + 4), mean (4),
 * x·rstd (4 + 4), to bf16 (4 + 2), weight · x (2 + 2) = 36 B for a bf16 input, against the
 * fused kernel's 2 + 2 = 4 (plus the weights, h·2 B, both); an fp32 input (the autocast
 * stream) skips both casts: 8 + 4 + 8 + 8 = 28 B and 6 ops. */
static void
test_eager_rmsnorm_bytes (void)
{
  ModelArch a = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  const double Th = 2 * 32 * 64, w = 2 * 64;
  ModelBlockCost eager = model_cost_layer (&a, &p);
  const ModelOp *n1 = NULL;
  for (guint i = 0; i < eager.fwd.n_ops; i++)
    if (g_strcmp0 (eager.fwd.ops[i].name, "norm1") == 0)
      n1 = &eager.fwd.ops[i];
  g_assert (n1 != NULL);
  CU_ASSERT_DOUBLE_EQUAL (n1->bytes, 36 * Th + w, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (model_op_host_ops (n1), 8, 0);
  p.compile = TRUE;
  ModelBlockCost fused = model_cost_layer (&a, &p);
  for (guint i = 0; i < fused.fwd.n_ops; i++)
    if (g_strcmp0 (fused.fwd.ops[i].name, "norm1") == 0)
      {
        CU_ASSERT_DOUBLE_EQUAL (fused.fwd.ops[i].bytes, 4 * Th + w, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL (model_op_host_ops (&fused.fwd.ops[i]), 1, 0);
      }
  p.compile = FALSE;
  p.autocast = TRUE; /* the fp32 stream: the norm reads and writes fp32 */
  ModelBlockCost amp = model_cost_layer (&a, &p);
  for (guint i = 0; i < amp.fwd.n_ops; i++)
    if (g_strcmp0 (amp.fwd.ops[i].name, "norm1") == 0)
      {
        CU_ASSERT_DOUBLE_EQUAL (amp.fwd.ops[i].bytes, 28 * Th + w, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL (model_op_host_ops (&amp.fwd.ops[i]), 6, 0);
      }
}

/* Autocast's casts (graph_layer.c autocast_casts): a GPT-like layer (fused QKV, GELU MLP
 * 4h, biases) on an fp32 model under autocast casts its four weights — QKV h·3h + 3h, out
 * h·h + h, fc h·4h + 4h, proj 4h·h + h: 12h² + 9h elements, biases left out of the cast
 * (F.linear casts them too; they are 9h of 12h²: 0.1 % at h 1024, below the check) — and
 * the two fp32 norm outputs the QKV and fc projections read, T·h each: (4 + e)·(12h² + 2Th)
 * B in six ops; none without autocast. */
static void
test_autocast_casts (void)
{
  ModelArch a = gpt_like (1024, 16, 1, 1000);
  ModelCostParams p = params (2, 512, TRUE, 0);
  const double h = 1024, T = 2 * 512, e = 2;
  ModelBlockCost plain = model_cost_layer (&a, &p);
  for (guint i = 0; i < plain.fwd.n_ops; i++)
    CU_ASSERT_STRING_NOT_EQUAL (plain.fwd.ops[i].name, "autocast_cast");
  p.autocast = TRUE;
  ModelBlockCost amp = model_cost_layer (&a, &p);
  double bytes = 0, ops = 0;
  for (guint i = 0; i < amp.fwd.n_ops; i++)
    if (g_strcmp0 (amp.fwd.ops[i].name, "autocast_cast") == 0)
      {
        bytes += amp.fwd.ops[i].bytes;
        ops += model_op_host_ops (&amp.fwd.ops[i]);
      }
  STEPSIM_ASSERT_REL (bytes, (4 + e) * (12 * h * h + 2 * T * h), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (ops, 6, 0);
}

/* The optimizer's host ops: per tensor 8 a tensor (9 with weight decay), foreach 8 (9)
 * once, fused 1; fp16 loss scaling 3 more. */
static void
test_optimizer_host_ops (void)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  s.framework.weight_decay_zero = FALSE;
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 9 * 146, 0);
  s.framework.weight_decay_zero = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 8 * 146, 0);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 8, 0);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 1, 0);
  /* fp16 loss scaling: GradScaler's unscale_ and update add 3 to the foreach step */
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  s.precision = MODEL_PRECISION_FP16_AMP;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 8 + 3, 0);
  /* and once, not per tensor, in the per-tensor loop */
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 8 * 146 + 3, 0);
}

/* Other optimizers (stack.h): SGD with momentum 3 a tensor (4 with decay) per tensor, once
 * foreach, 1 fused; Adafactor always per tensor, whatever the profile says (transformers
 * has no foreach or fused Adafactor): 24 a matrix and 16 a vector, 3 more each with
 * 16-bit parameters; 8-bit AdamW one kernel a tensor. 146 tensors, 100 of them matrices. */
static void
test_optimizer_host_ops_others (void)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  s.precision = MODEL_PRECISION_BF16_MIXED;
  s.framework.weight_decay_zero = TRUE;
  s.optimizer = MODEL_OPTIMIZER_SGD_MOMENTUM;
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 3 * 146, 0);
  s.framework.weight_decay_zero = FALSE;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 4 * 146, 0);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 4, 0);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 1, 0);
  CU_ASSERT_EQUAL (model_stack_optimizer_impl (&s), MODEL_OPTIMIZER_IMPL_FUSED);
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  CU_ASSERT_EQUAL (model_stack_optimizer_impl (&s), MODEL_OPTIMIZER_IMPL_PER_TENSOR);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 24 * 100 + 16 * 46, 0);
  s.precision = MODEL_PRECISION_BF16; /* pure bf16: no fp32 master, the casts */
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 27 * 100 + 19 * 46, 0);
  s.optimizer = MODEL_OPTIMIZER_ADAMW_8BIT;
  CU_ASSERT_EQUAL (model_stack_optimizer_impl (&s), MODEL_OPTIMIZER_IMPL_PER_TENSOR);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_host_ops (&s, 146, 100), 146, 0);
}

/* Every profile charges the same host time per op (framework.c: 8.1 ms / 631 forward, 4 us
 * backward); only the HF Trainer waits for each micro-batch. */
static void
test_profile_host_times (void)
{
  for (guint k = 0; k < MODEL_N_FRAMEWORKS; k++)
    {
      ModelFramework fw;
      model_framework_apply_profile (&fw, k);
      STEPSIM_ASSERT_REL (fw.host_op_time, 8.1e-3 / 631, 1e-12);
      STEPSIM_ASSERT_REL (fw.host_backward_op_time, 4e-6, 1e-12);
      CU_ASSERT_EQUAL (fw.host_sync_micro_batch, k == MODEL_FRAMEWORK_HF_TRAINER);
    }
}

/* The plan of `s` for tiny_arch() on one GPU (caller frees). */
static ModelPlan *
tiny_plan (const ModelStack *s)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelParallel par;
  model_parallel_init_defaults (&par);
  ModelPlan *plan = model_plan_new (a, s, &par, NULL);
  g_assert (plan != NULL);
  return plan;
}

/* The plan's optimizer op under Adafactor issues model_stack_optimizer_host_ops of the
 * model's trainable tensors, its matrices counted from the inventory (ndim >= 2: the
 * factored ones): one GPU holds every tensor. */
static void
test_plan_adafactor_host_ops (void)
{
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  g_autoptr (ModelPlan) plan = tiny_plan (&s);
  g_autoptr (ModelArch) a = tiny_arch ();
  g_autoptr (ModelInventory) inv = model_stack_inventory (&s, a);
  double tensors = 0, matrices = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      double n = t->trainable ? (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) : 0;
      tensors += n;
      matrices += t->ndim >= 2 ? n : 0;
    }
  CU_ASSERT (matrices > 0 && matrices < tensors);
  double want = model_stack_optimizer_host_ops (&s, tensors, matrices), got = -1;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      for (guint k = 0; t->kind == MODEL_TASK_KIND_OPTIMIZER && k < t->n_kernels; k++)
        if (g_strcmp0 (model_plan_kernel (plan, t->first_kernel + k)->op.name, "optimizer") == 0)
          got = model_op_host_ops (&model_plan_kernel (plan, t->first_kernel + k)->op);
    }
  STEPSIM_ASSERT_REL (got, want, 1e-12);
  CU_ASSERT (want > 16 * tensors); /* the matrices' 24 each are in it */
}

/* The tasks marked host_sync on rank 0 of a plan of `s` (one GPU), as (micro-batch, kind)
 * pairs, each micro-batch's first task in plan order. */
static void
syncs_of (const ModelStack *s, GArray *out)
{
  g_autoptr (ModelPlan) plan = tiny_plan (s);
  g_assert (plan != NULL);
  gint seen = -1;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      gboolean first = t->micro_batch > seen;
      if (first)
        seen = t->micro_batch;
      if (!t->host_sync)
        continue;
      /* a sync is the optimizer step or the first task of a micro-batch after the first */
      CU_ASSERT (t->kind == MODEL_TASK_KIND_OPTIMIZER || (first && t->micro_batch >= 1));
      gint mb = t->kind == MODEL_TASK_KIND_OPTIMIZER ? -1 : t->micro_batch;
      g_array_append_val (out, mb);
    }
}

/* HF Trainer, GA 3: micro-batches 1 and 2 and the optimizer; fp16 loss scaling alone: the
 * optimizer; bf16 without the Trainer: none. */
static void
test_plan_marks_syncs (void)
{
  ModelStack s = tiny_stack ();
  s.grad_accum = 3;
  g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (gint));
  syncs_of (&s, none);
  CU_ASSERT_EQUAL (none->len, 0);
  s.framework.host_sync_micro_batch = TRUE;
  g_autoptr (GArray) hf = g_array_new (FALSE, FALSE, sizeof (gint));
  syncs_of (&s, hf);
  CU_ASSERT_EQUAL (hf->len, 3);
  if (hf->len == 3)
    {
      CU_ASSERT_EQUAL (g_array_index (hf, gint, 0), 1);
      CU_ASSERT_EQUAL (g_array_index (hf, gint, 1), 2);
      CU_ASSERT_EQUAL (g_array_index (hf, gint, 2), -1);
    }
  s.framework.host_sync_micro_batch = FALSE;
  s.precision = MODEL_PRECISION_FP16_MIXED;
  g_autoptr (GArray) fp16 = g_array_new (FALSE, FALSE, sizeof (gint));
  syncs_of (&s, fp16);
  CU_ASSERT_EQUAL (fp16->len, 1);
  if (fp16->len == 1)
    CU_ASSERT_EQUAL (g_array_index (fp16, gint, 0), -1);
}

/* One node of `n` tiny GPUs (tiny.h) on NVSwitch, on `fluid` (borrowed); caller frees. */
static HwCluster *
tiny_node (guint n, SimFluid *fluid)
{
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = n, .host_memory = 1e12,
                      .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 100e9,
                      .intra_latency = 2e-6 };
  HwCluster *cluster = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  return cluster;
}

/* Replays `plan` on one node of its ranks' tiny GPUs, recording into `rec` and `times`
 * (each may be NULL); asserts every task ran; returns rank 0's end (s). */
static double
run_plan (const ModelPlan *plan, SimRecorder *rec, ModelOpTimes *times)
{
  guint n = model_plan_n_ranks (plan);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_node (n, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (n, NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, rec);
  if (times != NULL)
    model_executor_set_op_times (exec, times);
  model_executor_start (exec);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (model_executor_n_done (exec), model_plan_n_tasks (plan));
  return model_executor_rank_end (exec, 0);
}

/* Replays `s` on one tiny GPU; returns the step time (s) and fills `segments` with, per
 * host-sync segment of rank 0's plan (split before each host_sync task), its host ops and
 * the time alone of its last kernel (pairs of doubles). */
static double
replay_segments (const ModelStack *s, GArray *segments)
{
  g_autoptr (ModelPlan) plan = tiny_plan (s);
  double end = run_plan (plan, NULL, NULL);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = tiny_node (1, fluid); /* for the kernels' times alone */
  double ops = 0, last = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->host_sync && ops > 0)
        {
          double pair[2] = { ops, last };
          g_array_append_vals (segments, pair, 2);
          ops = 0;
        }
      for (guint j = 0; j < t->n_kernels; j++)
        {
          const ModelKernel *k = model_plan_kernel (plan, t->first_kernel + j);
          ops += model_op_host_ops (&k->op);
          last = hw_cluster_kernel_time_alone_shaped (cluster, 0, k->dtype, &k->op.shape,
                                                      k->op.flops, k->op.bytes);
        }
    }
  double pair[2] = { ops, last };
  g_array_append_vals (segments, pair, 2);
  return end;
}

/* A host-bound step: with c = 1 s of host time per op (forward and backward), far above any
 * tiny kernel's time alone, every kernel waits for the host. Without syncs the host never
 * waits, so the step is N·c + τ_last (N: Σ host ops of the rank's kernels, τ_last: the
 * last kernel's time alone). A host sync lets the host resume only when the GPU has
 * finished what came before, so each segment between syncs costs its own N_i·c + τ_i:
 * step = Σ_i (N_i·c + τ_i). GA 2 under the HF Trainer's syncs: three segments. */
static void
test_host_bound_with_syncs (void)
{
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  s.framework.host_op_time = s.framework.host_backward_op_time = 1.0;
  g_autoptr (GArray) plain = g_array_new (FALSE, FALSE, sizeof (double));
  double t_plain = replay_segments (&s, plain);
  CU_ASSERT_EQUAL (plain->len, 2);
  double n = g_array_index (plain, double, 0), tau = g_array_index (plain, double, 1);
  CU_ASSERT (n > 10 && tau < 1e-3);
  CU_ASSERT_DOUBLE_EQUAL (t_plain, n * 1.0 + tau, 1e-9);
  s.framework.host_sync_micro_batch = TRUE;
  g_autoptr (GArray) seg = g_array_new (FALSE, FALSE, sizeof (double));
  double t_sync = replay_segments (&s, seg);
  CU_ASSERT_EQUAL (seg->len, 6);
  double expect = 0, total = 0;
  for (guint i = 0; i + 1 < seg->len; i += 2)
    {
      expect += g_array_index (seg, double, i) * 1.0 + g_array_index (seg, double, i + 1);
      total += g_array_index (seg, double, i);
    }
  CU_ASSERT_DOUBLE_EQUAL (total, n, 0);
  CU_ASSERT_DOUBLE_EQUAL (t_sync, expect, 1e-9);
  CU_ASSERT (t_sync > t_plain + 1e-7); /* the GPU's tail of each segment is exposed */
}

/* The backward's ops cost host_backward_op_time, the rest host_op_time: with the backward
 * free (0) and the forward at 1 s an op, the step is at least the forward's host ops in
 * seconds and less than all ops'. */
static void
test_backward_host_time (void)
{
  ModelStack s = tiny_stack ();
  s.framework.host_op_time = 1.0;
  g_autoptr (GArray) seg = g_array_new (FALSE, FALSE, sizeof (double));
  double t = replay_segments (&s, seg);
  g_autoptr (ModelPlan) plan = tiny_plan (&s);
  double fwd = 0, bwd = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *tk = model_plan_task (plan, i);
      for (guint j = 0; j < tk->n_kernels; j++)
        *(tk->kind == MODEL_TASK_KIND_BACKWARD ? &bwd : &fwd)
          += model_op_host_ops (&model_plan_kernel (plan, tk->first_kernel + j)->op);
    }
  CU_ASSERT (bwd > 0);
  CU_ASSERT (t >= fwd * 1.0);
  CU_ASSERT (t < fwd * 1.0 + 1.0);
}

/* The hold at a sync: with no host time at all, the HF Trainer's sync still keeps every
 * task after it in plan order from starting before every earlier task of its rank has
 * ended; without the syncs, under ZeRO-2 (each micro-batch's gradient reduce-scatter on the
 * communication stream) micro-batch 1's forward starts while micro-batch 0's last
 * reduce-scatter still runs. Two ranks, GA 2. */
static gboolean
held_after_syncs (gboolean sync, ModelDataParallel mode)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  s.framework.host_sync_micro_batch = sync;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = mode;
  par.degree = 2;
  g_autoptr (ModelPlan) plan = model_plan_new (a, &s, &par, NULL);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  run_plan (plan, rec, NULL);
  guint n = model_plan_n_tasks (plan);
  g_autofree double *start = g_new0 (double, n), *end = g_new0 (double, n);
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *r = sim_recorder_task (rec, i);
      start[r->id] = r->start;
      end[r->id] = r->end;
    }
  /* the first task of micro-batch 1 on rank 0 (a sync under the Trainer's profile) */
  guint first = G_MAXUINT;
  for (guint i = 0; i < n && first == G_MAXUINT; i++)
    if (model_plan_task (plan, i)->rank == 0 && model_plan_task (plan, i)->micro_batch == 1)
      first = i;
  g_assert (first != G_MAXUINT);
  CU_ASSERT_EQUAL (model_plan_task (plan, first)->host_sync, sync);
  double before = 0, after = G_MAXDOUBLE;
  for (guint i = 0; i < n; i++)
    if (model_plan_task (plan, i)->rank == 0)
      {
        if (i < first)
          before = MAX (before, end[i]);
        else
          after = MIN (after, start[i]);
      }
  return after >= before;
}

static void
test_sync_holds_later_tasks (void)
{
  CU_ASSERT_TRUE (held_after_syncs (TRUE, MODEL_DP_ZERO2));
  CU_ASSERT_FALSE (held_after_syncs (FALSE, MODEL_DP_ZERO2));
}

/* The op-time table carries the host's side: rank 0's host seconds are Σ host ops × c over
 * its kernels (c = 2 us forward and optimizer, 1 us backward) and its host ops their sum. */
static void
test_op_times_host (void)
{
  ModelStack s = tiny_stack ();
  s.framework.host_op_time = 2e-6;
  s.framework.host_backward_op_time = 1e-6;
  g_autoptr (ModelPlan) plan = tiny_plan (&s);
  g_autoptr (ModelOpTimes) times = model_op_times_new ();
  run_plan (plan, NULL, times);
  double want = 0, ops = 0, got_ops = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      for (guint j = 0; j < t->n_kernels; j++)
        {
          double n = model_op_host_ops (&model_plan_kernel (plan, t->first_kernel + j)->op);
          ops += n;
          want += n * (t->kind == MODEL_TASK_KIND_BACKWARD ? 1e-6 : 2e-6);
        }
    }
  STEPSIM_ASSERT_REL (model_op_times_rank_host_seconds (times, 0, &got_ops), want, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (got_ops, ops, 0);
  CU_ASSERT (ops > 0);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "op counts: Llama-3.2-1B's eager forward issues 631 PyTorch ops", test_llama_forward_ops },
    { "HF's eager RMSNorm: 36 B an element in 8 ops, fused 4 B in 1", test_eager_rmsnorm_bytes },
    { "autocast: weight and input casts before the projections", test_autocast_casts },
    { "optimizer host ops: per tensor, foreach, fused", test_optimizer_host_ops },
    { "optimizer host ops: SGD, Adafactor, 8-bit AdamW", test_optimizer_host_ops_others },
    { "Adafactor's host ops from the plan's tensors and matrices", test_plan_adafactor_host_ops },
    { "profiles: host time per op; the HF Trainer syncs per micro-batch",
      test_profile_host_times },
    { "plan: host syncs at micro-batches (HF Trainer) and fp16's optimizer step",
      test_plan_marks_syncs },
    { "executor: a host-bound step is N·c + tail, each sync segment its own",
      test_host_bound_with_syncs },
    { "executor: backward ops at host_backward_op_time", test_backward_host_time },
    { "executor: a sync holds the rank's later tasks, other streams too",
      test_sync_holds_later_tasks },
    { "op times: host seconds and ops per rank", test_op_times_host },
  };
  return STEPSIM_RUN_TESTS ("models/host_time", tests);
}
