/* tests/unit/models/test_plan_ep.c — expert parallelism through the plan
 * (models/plan/plan_ep.c): a rank's weights by C14's three buckets, the dispatch's
 * all-to-all on one NVSwitch node against its closed form, a skewed router slowing the MoE
 * layers by the leaf's slowdown, and the refusals. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "hardware/node_catalog.h"
#include "models/parallel/expert_parallel.h"
#include "models/plan/executor.h"
#include "models/plan/plan.h"
#include "models/plan/simulate.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/moe_fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/refusal.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

static ModelParallel
ep_par (guint gpus, guint ep)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.ep = ep;
  return par;
}



/* C14 (Megatron-LM #4050): a rank's weights are three buckets — tensor-parallel-sharded
 * (÷ tp), replicated, and experts ÷ (etp·ep). Mixtral 8x7B (h 4096, i 14336, 32 layers, 8
 * SwiGLU experts of 3·h·i each, 46,702,792,704 parameters in all) at tp 1, ep 8 on 8 GPUs:
 * experts 32 · 8 · 3 · 4096 · 14336 = 45,097,156,608 parameters, the other 1,605,636,096
 * (attention, norms, router, embedding and head) whole on every rank, so a rank holds
 * 1,605,636,096 + 45,097,156,608 / 8 = 7,242,780,672 weights, and as many master weights
 * and (÷ 8 as well) optimizer elements; at ep 1 all 46.7B. */
static void
test_c14_buckets (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelStack st = bf16_stack (512);
  const double experts = 32.0 * 8 * 3 * 4096 * 14336, total = 46702792704.0;
  CU_ASSERT_EQUAL (model_arch_n_params (a), (guint64) total);
  const guint eps[] = { 1, 8, 4 };
  for (guint c = 0; c < G_N_ELEMENTS (eps); c++)
    {
      ModelParallel par = ep_par (8, eps[c]);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      double want = total - experts + experts / eps[c];
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS),
                          want * model_stack_weight_bytes (&st), 1e-12);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS), 4 * want,
                          1e-12);
    }
}

typedef struct
{
  double step;     /* s, rank 0's end */
  double dispatch; /* s, rank 0's first "dispatch all-to-all (ep)" task */
  guint n_a2a;     /* rank 0's all-to-all tasks on the ep stream */
  double fwd_l0;   /* s, rank 0's "fwd L0 mb0" */
  double flops;    /* Σ FLOPs of rank 0's compute tasks */
} EpRun;

/* Replays `plan` on one DGX H100 (NVSwitch) and reads rank 0's tasks. */
static EpRun
replay (const ModelPlan *plan, const HwNodeSpec *node)
{
  EpRun o = { 0 };
  MoeReplay r;
  moe_replay_run (plan, node, &r);
  ModelExecutor *exec = r.exec;
  CU_ASSERT_EQUAL (model_executor_n_done (exec), model_plan_n_tasks (plan));
  o.step = model_executor_rank_end (exec, 0);
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->rank != 0)
        continue;
      if (t->stream == MODEL_STREAM_COMPUTE)
        o.flops += t->flops;
      if (t->stream == MODEL_STREAM_EP && strstr (t->label, "all_to_all") != NULL)
        {
          if (o.n_a2a == 0)
            o.dispatch = model_executor_task_time (exec, i);
          o.n_a2a++;
        }
      if (strcmp (t->label, "fwd L0 mb0") == 0)
        o.fwd_l0 = model_executor_task_time (exec, i);
    }
  moe_replay_clear (&r);
  return o;
}

/* B the kernels named `name` of rank 0's first forward task move (at most 64 of them). */
static double
first_layer_kernel_bytes (const ModelPlan *p, const char *name)
{
  const ModelOp *ops[64];
  guint n = plan_scan_kernels (p, "fwd L0 mb0", name, ops, G_N_ELEMENTS (ops));
  g_assert (n < G_N_ELEMENTS (ops));
  double bytes = 0;
  for (guint i = 0; i < n; i++)
    bytes += ops[i]->bytes;
  return bytes;
}

/* C14's buckets with TP ≠ ETP·EP (Megatron-LM #4050): Mixtral 8x7B at tp 2 (sequence
 * parallel), ep 4, etp 1 on 8 GPUs: the tensor-parallel bucket ÷ 2 (attention 32 · 4096 ·
 * (4096 + 2 · 1024 + 4096) = 1,342,177,280; embedding and head 2 · 32000 · 4096, the
 * vocabulary 32000 a multiple of 128 · 2, no padding), the replicated bucket whole (norms
 * 2 · 4096 · 32 + 4096, router 8 · 4096 · 32) and the experts ÷ (etp · ep) = 4
 * (45,097,156,608): 671,088,640 + 131,072,000 + 266,240 + 1,048,576 + 11,274,289,152 =
 * 12,077,764,608 weights a rank, 2 B each. Its experts see the rank's s/tp tokens: with
 * ep 4 over tp 2 · dp 4 the expert group spans both tp ranks of a pair. */
static void
test_c14_buckets_tp (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelStack st = bf16_stack (512);
  ModelParallel par = ep_par (8, 4);
  par.tp = 2;
  par.sequence_parallel = TRUE;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * 12077764608.0, 1e-12);
  double slowest, mean;
  CU_ASSERT (model_plan_ep_load (p, &slowest, &mean, NULL));
  STEPSIM_ASSERT_REL (slowest, 512.0 / 2 * 2, 1e-12); /* 256 tokens · top-2, balanced */
  /* the router reads the rank's 256 tokens: 2 · 256 · 4096 · 8 FLOP a forward */
  const ModelOp *router[2];
  CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, "fwd L0 mb0", "router", router, 2), 1);
  STEPSIM_ASSERT_REL (router[0]->flops, 2.0 * 256 * 4096 * 8, 1e-12);
  /* every tensor of the layer is split over tp under SP (the sequence region, the heads, 8
   * KV heads over 2): a rank keeps half what tp 1 on 4 GPUs keeps (same ep 4 grid, 512
   * tokens a rank there), the experts whole at half the rows */
  ModelParallel one = ep_par (4, 4);
  g_autoptr (ModelPlan) q1 = model_plan_new (a, &st, &one, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q1);
  STEPSIM_ASSERT_REL (plan_scan_layer_activations (p), plan_scan_layer_activations (q1) / 2, 1e-12);
  /* and the experts' point-wise kernels run on half the rows at the whole width i */
  STEPSIM_ASSERT_REL (first_layer_kernel_bytes (p, "mlp_act"),
                      first_layer_kernel_bytes (q1, "mlp_act") / 2, 1e-12);
  /* without sequence parallelism Megatron's MoE layer refuses tensor parallelism */
  par.sequence_parallel = FALSE;
  g_autoptr (GError) e2 = NULL;
  g_autoptr (ModelPlan) q = model_plan_new (a, &st, &par, &e2);
  CU_ASSERT_PTR_NULL (q);
  CU_ASSERT (e2 != NULL && strstr (e2->message, "key 'sequence_parallel'") != NULL);
}

/* The dispatch all-to-all on one NVSwitch node: each GPU sends (p−1) flows of S/p out of
 * its one NVLink port, all after the intra-node latency α (hardware/collective.h; the
 * hardware test's closed form): T = α + (p − 1)/p · S / B, B the NVLink port's achieved
 * bandwidth (link_efficiency · nvlink_bandwidth: 0.88 · 450 GB/s), α = 2 µs (DGX-H100 in
 * hardware/node_catalog.c), with S the per-rank send
 * buffer T·k·h·e = 4096 · 2 · 256 · 2 B (b = 1, s = 4096, dropless, uniform) and p = ep = 8.
 * The forward's token-count all-gather runs before it. Per MoE layer and micro-batch: 2
 * forward all-to-alls (tokens, combine) plus the probabilities', and their 3 backward
 * conjugates: 6 × 4 layers on rank 0's ep stream (9 × 4 under full recompute). */
static void
test_dispatch_all_to_all_closed_form (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (4096);
  ModelParallel par = ep_par (8, 8);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const HwNodeSpec *node = hw_catalog_node ("DGX-H100", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (node);
  EpRun r = replay (p, node);
  double S = 4096.0 * 2 * 256 * 2, n = 8;
  double want = node->intra_latency
                + (n - 1) / n * S / (node->link_efficiency * node->nvlink_bandwidth);
  STEPSIM_ASSERT_REL (r.dispatch, want, 1e-6);
  CU_ASSERT_EQUAL (r.n_a2a, 6 * 4);
  /* full recompute reruns each layer's forward, its 3 all-to-alls included */
  st.checkpointing = MODEL_CHECKPOINTING_FULL;
  g_autoptr (ModelPlan) full = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (full);
  CU_ASSERT_EQUAL (replay (full, node).n_a2a, 9 * 4);
  /* so does selective recompute of the MoE module (recompute_modules moe: moe_layer.py
   * checkpoints the layer, dispatch and combine included) */
  st.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  st.recompute_modules = MODEL_RECOMPUTE_MOE;
  g_autoptr (ModelPlan) moe = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (moe);
  CU_ASSERT_EQUAL (replay (moe, node).n_a2a, 9 * 4);
}

/* FLOPs of rank 0's task `label`. */
static double
task_flops (const ModelPlan *p, const char *label)
{
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank == 0 && g_strcmp0 (t->label, label) == 0)
        return t->flops;
    }
  g_assert_not_reached ();
}

/* recompute_modules moe reruns the slowest rank's expert GEMMs (plan_ep.c rewrites the
 * selective rerun as the forward): with load_imbalance 2 the rerun's FLOPs grow by exactly
 * what the forward's do (Mixtral 8x7B cut to 2 layers, ep 8, seq 2048). */
static void
test_moe_recompute_slowest_rank (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (2048);
  st.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  st.recompute_modules = MODEL_RECOMPUTE_MOE;
  double fwd[2], rerun[2];
  for (guint i = 0; i < 2; i++)
    {
      ModelParallel par = ep_par (8, 8);
      par.moe_imbalance = 1 + i;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      fwd[i] = task_flops (p, "fwd L0 mb0");
      rerun[i] = task_flops (p, "recompute selective L0 mb0");
    }
  CU_ASSERT (fwd[1] > fwd[0]);
  STEPSIM_ASSERT_REL (rerun[1] - rerun[0], fwd[1] - fwd[0], 1e-9);
}

/* A skewed router (load_imbalance r = 2) on Mixtral's 8 experts, top-2, ep 8: the hot
 * expert takes 2μ copies from every rank (μ = T·k/E), and its rank, holding that expert
 * alone, processes 2× the mean rows (model_ep_dispatch's slowdown = 2). Every MoE layer's
 * expert GEMMs on that rank double (the plan gives every rank the slowest rank's kernels:
 * the all-to-alls pace them all by it): rank 0's compute FLOPs grow by exactly the expert
 * GEMMs' FLOPs of one pass set (forward + backward, no recompute: 3 · 2 · T·k · 3hi per
 * layer) and the simulated step — dominated by those GEMMs — grows by more than half of
 * what they take at the GPU's peak. Ignoring the slowdown would leave both unchanged. */
static void
test_imbalance_slows_step (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (2048);
  double step[2], hw[2];
  const double r[2] = { 1, 2 };
  for (guint i = 0; i < 2; i++)
    {
      ModelParallel par = ep_par (8, 8);
      par.moe_imbalance = r[i];
      ModelEpParams ep;
      model_ep_params_init (&ep);
      ep.micro_batch = 1, ep.seq_len = 2048, ep.ep = 8, ep.imbalance = r[i];
      ModelEpDispatch d;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &ep, &d, NULL));
      STEPSIM_ASSERT_REL (d.slowdown, r[i], 1e-12);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      EpRun run = replay (p, hw_catalog_node ("DGX-H100", NULL));
      step[i] = run.step;
      hw[i] = run.flops;
    }
  double T = 2048, k = 2, h = 4096, inter = 14336, L = 2;
  double expert = 3 * 2 * T * k * 3 * h * inter * L; /* fwd + bwd, one rank */
  STEPSIM_ASSERT_REL (hw[1] - hw[0], expert, 1e-9);
  double peak = hw_catalog_node ("DGX-H100", NULL)->gpu->peak_flops[HW_DTYPE_BF16];
  CU_ASSERT (step[1] - step[0] > 0.5 * expert / peak);
  CU_ASSERT (step[1] > 1.2 * step[0]);
}

/* DDP with ep 4 on 8 GPUs (expert-dp 2): rank 0's dp buckets (all-reduce over all 8)
 * carry only the dense gradients, Σ = (N − experts) · g B (with the embedding and head over
 * the vocabulary padded to 1024, the layout's Megatron padding), and each layer's expert
 * gradients, 8 · 3 · h · i / 4 parameters a rank holds, are one all-reduce over the
 * expert-dp pair {0, 4} (etp 1: local = ep_coord + ep · edp_coord, mesh.h). At ep 8
 * (expert-dp 1) no expert all-reduce runs at all. */
static void
test_expert_grads_over_edp (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  const double h = 256, i = 688, L = 4, experts = L * 8 * 3 * h * i;
  const double N = (double) model_arch_n_params (a), g = model_stack_gradient_bytes (&st);
  const double pad = 2 * (1024 - 1000) * h; /* tensor_parallel.h: V padded to 128·tp */
  const guint eps[] = { 4, 8 };
  for (guint c = 0; c < G_N_ELEMENTS (eps); c++)
    {
      ModelParallel par = ep_par (8, eps[c]);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      double buckets = 0, expert = 0;
      guint n_expert = 0;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE)
            continue;
          const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
          if (strstr (t->label, "grads bucket") != NULL)
            {
              CU_ASSERT_EQUAL (col->n_ranks, 8);
              buckets += t->bytes;
            }
          if (strstr (t->label, "expert grads") != NULL)
            {
              CU_ASSERT_EQUAL (col->n_ranks, 2);
              CU_ASSERT (col->ranks[0] == 0 && col->ranks[1] == 4);
              expert += t->bytes;
              n_expert++;
            }
        }
      STEPSIM_ASSERT_REL (buckets, (N - experts + pad) * g, 1e-12);
      CU_ASSERT_EQUAL (n_expert, eps[c] == 4 ? 4 : 0);
      if (eps[c] == 4)
        STEPSIM_ASSERT_REL (expert, experts / 4 * g, 1e-12);
    }
}

/* Expert parallelism inside pipeline stages (Megatron's expert_decoder_rank_generator has
 * pp outermost, mesh.h): the tiny MoE (4 layers) on 16 GPUs, pp 2 × dp 8, ep 4, DDP. Each
 * stage of 8 ranks carves its own expert grid: the dispatch all-to-alls of rank r run on
 * the 4 ranks of r's stage with its expert-dp coordinate (ranks 0–3 for rank 0, 8–11 for
 * rank 8, never across stages), and each layer's expert gradients are all-reduced over
 * the expert-dp pair {r, r + 4}, one per layer of the rank's stage (2 each). */
static void
test_ep_inside_stages (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  st.grad_accum = 2;
  ModelParallel par = ep_par (16, 4);
  par.pp = 2;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint n_a2a[2] = { 0, 0 }, n_grads[2] = { 0, 0 };
  gboolean inside = TRUE;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->kind != MODEL_TASK_KIND_COLLECTIVE || (t->rank != 0 && t->rank != 8))
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      guint s = t->rank / 8;
      if (col->kind == HW_COLLECTIVE_ALL_TO_ALL)
        {
          n_a2a[s]++;
          inside = inside && col->n_ranks == 4;
          for (guint i = 0; inside && i < col->n_ranks; i++)
            inside = col->ranks[i] == t->rank + i;
        }
      if (strstr (t->label, "expert grads") != NULL)
        {
          n_grads[s]++;
          inside = inside && col->n_ranks == 2 && col->ranks[0] == t->rank
                   && col->ranks[1] == t->rank + 4;
        }
    }
  CU_ASSERT (inside);
  CU_ASSERT (n_a2a[0] > 0 && n_a2a[0] == n_a2a[1]);
  CU_ASSERT_EQUAL (n_grads[0], 2);
  CU_ASSERT_EQUAL (n_grads[1], 2);
}

/* ZeRO-1 (Megatron's distributed optimizer) with ep 4 on 8 GPUs, expert-dp 2: the dense
 * parameters' master weights and Adam states shard over the 8 data-parallel ranks, the
 * experts' over their expert-dp pair (distributed_data_parallel.py expert_parallel_buffers
 * on expert_data_parallel_group). With D = N − experts + pad dense parameters (the
 * embedding and head over the vocabulary padded to 1024) and X = experts / 4 a rank's
 * expert parameters: master 4·(D/8 + X/2) B, Adam 8·(D/8 + X/2) B, weights 2·(D + X) B
 * unsharded. Its collectives: the dense buckets reduce-scattered over the 8 (Σ D·g B in),
 * each layer's expert gradients reduce-scattered over {0, 4} (Σ X·g), and after the step
 * the updated dense weights all-gathered over the 8 (D·2 B out) and the experts' over
 * {0, 4} (X·2 B). */
static void
test_zero1_expert_states_over_edp (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  const double h = 256, i = 688, L = 4, experts = L * 8 * 3 * h * i;
  const double N = (double) model_arch_n_params (a), g = model_stack_gradient_bytes (&st);
  const double pad = 2 * (1024 - 1000) * h; /* tensor_parallel.h: V padded to 128·tp */
  const double D = N - experts + pad, X = experts / 4;
  ModelParallel par = ep_par (8, 4);
  par.mode = MODEL_DP_ZERO1;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS),
                      4 * (D / 8 + X / 2), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE),
                      8 * (D / 8 + X / 2), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * (D + X), 1e-12);
  double dense_in = 0, expert_in = 0, dense_out = 0, expert_out = 0;
  guint n_expert = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      gboolean pair = col->n_ranks == 2 && col->ranks[0] == 0 && col->ranks[1] == 4;
      if (strstr (t->label, "grads bucket") != NULL)
        {
          CU_ASSERT (col->kind == HW_COLLECTIVE_REDUCE_SCATTER && col->n_ranks == 8);
          dense_in += t->bytes;
        }
      else if (strstr (t->label, "expert grads") != NULL)
        {
          CU_ASSERT (col->kind == HW_COLLECTIVE_REDUCE_SCATTER && pair);
          expert_in += t->bytes;
          n_expert++;
        }
      else if (strstr (t->label, "updated expert params") != NULL)
        {
          CU_ASSERT (col->kind == HW_COLLECTIVE_ALL_GATHER && pair);
          expert_out += t->bytes;
        }
      else if (strstr (t->label, "updated params") != NULL)
        {
          CU_ASSERT (col->kind == HW_COLLECTIVE_ALL_GATHER && col->n_ranks == 8);
          dense_out += t->bytes;
        }
    }
  CU_ASSERT_EQUAL (n_expert, 4);
  STEPSIM_ASSERT_REL (dense_in, D * g, 1e-12);
  STEPSIM_ASSERT_REL (expert_in, X * g, 1e-12);
  STEPSIM_ASSERT_REL (dense_out, D * 2, 1e-12);
  STEPSIM_ASSERT_REL (expert_out, X * 2, 1e-12);
}

/* Tensor parallelism without expert parallelism (tp 2 + SP, ep = etp = 1) under ZeRO-1 on 8
 * GPUs: each tp rank routes its own s/tp tokens through the same replicated experts, so
 * their gradients differ across the tp pair and Megatron reduces them over the
 * expert-data-parallel group, dp·cp·tp / (ep·etp) = 8 ranks (parallel_state.py
 * _EXPERT_DATA_PARALLEL_GROUP; distributed_data_parallel.py puts every expert parameter in
 * the expert buffers, whatever ep), not over dp = 4 as the dense ones. With X = experts =
 * 4 · 8 · 3 · h · i whole on every rank and D a tp rank's dense parameters (weights
 * 2·(D + X) B unsharded, so D = weights / 2 − X): Adam 8·(D/4 + X/8) B, and each layer's
 * expert gradients one reduce-scatter over all 8 ranks, Σ X·g B. Reducing them over dp
 * only (the tp ranks' expert gradients never summed) gives 8·(D + X)/4 and 4-rank groups. */
static void
test_tp_expert_grads_over_edp (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  const double h = 256, i = 688, L = 4, X = L * 8 * 3 * h * i;
  const double g = model_stack_gradient_bytes (&st);
  ModelParallel par = ep_par (8, 1);
  par.tp = 2;
  par.sequence_parallel = TRUE;
  par.mode = MODEL_DP_ZERO1;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double D = model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS) / 2 - X;
  CU_ASSERT (D > 0);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE),
                      8 * (D / 4 + X / 8), 1e-12);
  double expert_in = 0;
  guint n_expert = 0;
  gboolean all8 = TRUE;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE
          || strstr (t->label, "expert grads") == NULL)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      all8 = all8 && col->kind == HW_COLLECTIVE_REDUCE_SCATTER && col->n_ranks == 8;
      expert_in += t->bytes;
      n_expert++;
    }
  CU_ASSERT (all8);
  CU_ASSERT_EQUAL (n_expert, 4);
  STEPSIM_ASSERT_REL (expert_in, X * g, 1e-12);
}

/* Pipeline stages of a model whose layers differ (DeepSeek-V2-Lite cut to 4 layers: layer
 * 0 dense, 1–3 MoE with 64 experts of 3 · 2048 · 1408 = 8,650,752 parameters each) under
 * ep 8, pp 2 on 16 GPUs: a rank of stage 0 holds the embedding (102400 · 2048), the dense
 * layer 0 (81,007,104) and MoE layer 1 with 8 of its 64 experts (584,847,872 − 56 ·
 * 8,650,752); a rank of stage 1 the two MoE layers likewise, the final norm (2048) and the
 * head (102400 · 2048): each × 2 B (bf16 weights). Counting every layer as the last
 * (MoE) layer, or splitting the stage shares by whole-model counts, gets both wrong. */
static void
test_stage_states_heterogeneous_layers (void)
{
  g_autoptr (ModelArch) a = shipped ("deepseek-v2-lite");
  a->n_layers = 4;
  ModelStack st = bf16_stack (512);
  ModelParallel par = ep_par (16, 8);
  par.pp = 2;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const double E = 3.0 * 2048 * 1408, moe = 584847872.0 - 56 * E, vh = 102400.0 * 2048;
  const double want[2] = { 2 * (vh + 81007104.0 + moe), 2 * (2 * moe + 2048 + vh) };
  for (guint s = 0; s < 2; s++)
    {
      const ModelMemEffect *w
        = model_plan_allocation (p, model_plan_initial_handle (p, 8 * s, MODEL_MEM_WEIGHTS));
      STEPSIM_ASSERT_REL (w->bytes, want[s], 1e-12);
      /* a stage's share of each tensor in whole bytes (plan.c scale_whole_bytes) */
      const double *sizes = model_plan_tensor_sizes (p, w->first_tensor);
      gboolean whole = TRUE;
      for (guint k = 0; k < w->n_tensors; k++)
        whole = whole && sizes[k] == floor (sizes[k]);
      CU_ASSERT (w->n_tensors > 0 && whole);
    }
  /* the dense layer 0 dispatches nothing; MoE layer 1 does (plan_ep.c moe_layer) */
  guint a2a[2] = { 0, 0 };
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank == 0 && t->kind == MODEL_TASK_KIND_COLLECTIVE && t->layer >= 0 && t->layer < 2
          && model_plan_collective (p, (guint) t->collective)->kind == HW_COLLECTIVE_ALL_TO_ALL)
        a2a[t->layer]++;
    }
  CU_ASSERT_EQUAL (a2a[0], 0);
  CU_ASSERT (a2a[1] > 0);
  /* ZeRO-1 without pp: the flat shards of the master weights and Adam states (one per
   * layer, the dense layer's smaller) add up to the rank's share */
  par = ep_par (8, 8);
  par.mode = MODEL_DP_ZERO1;
  g_autoptr (ModelPlan) z = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (z);
  const ModelMemCategory cats[] = { MODEL_MEM_MASTER_WEIGHTS, MODEL_MEM_OPTIMIZER_STATE };
  for (guint c = 0; c < G_N_ELEMENTS (cats); c++)
    {
      const ModelMemEffect *m
        = model_plan_allocation (z, model_plan_initial_handle (z, 0, cats[c]));
      const double *sizes = model_plan_tensor_sizes (z, m->first_tensor);
      double sum = 0;
      for (guint k = 0; k < m->n_tensors; k++)
        sum += sizes[k];
      CU_ASSERT (m->n_tensors > 4);
      STEPSIM_ASSERT_REL (sum, model_plan_initial_bytes (z, cats[c]), 1e-12);
      CU_ASSERT (sizes[0] < sizes[1]); /* layer 0 dense, smaller than MoE layer 1 */
    }
}

/* Megatron's all-to-all dispatcher sorts the received rows by local expert after the
 * dispatch and back before the combine (token_dispatcher.py sort_chunks_by_idxs, with
 * more than one local expert): the tiny MoE (8 experts, top-2, h 256) at ep 4 on 8 GPUs,
 * 512 tokens a rank: each rank receives, from the 4 ranks of its expert group, the copies
 * routed to its 2 local experts, 4 · 512 · 2 · 2/8 = 1024 rows (balanced routing), so each
 * sort reads and writes 2 · 2 B · 1024 · 256 B; forward and backward layer tasks carry one
 * sort and one unsort each; none under ep 8 (one local expert) or another framework. */
static void
test_megatron_sort_chunks (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  const guint eps[] = { 4, 8, 4 };
  for (guint c = 0; c < G_N_ELEMENTS (eps); c++)
    {
      ModelStack s = st;
      if (c < 2)
        model_framework_apply_profile (&s.framework, MODEL_FRAMEWORK_MEGATRON);
      ModelParallel par = ep_par (8, eps[c]);
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint n = 0;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank != 0 || t->layer != 0 || t->stream != MODEL_STREAM_COMPUTE)
            continue;
          for (guint j = 0; j < t->n_kernels; j++)
            {
              const ModelKernel *kn = model_plan_kernel (p, t->first_kernel + j);
              if (g_str_has_suffix (kn->op.name, "sort_chunks"))
                {
                  n++;
                  STEPSIM_ASSERT_REL (kn->op.bytes, 2.0 * 2 * 1024 * 256, 1e-12);
                }
            }
        }
      CU_ASSERT_EQUAL (n, c == 0 ? 4 : 0);
    }
}

/* The slowest EP rank keeps its experts' rows for the backward: a skewed router
 * (load_imbalance 2) at ep 8 (one expert a rank) gives the hot rank twice the rows, so a MoE
 * layer's saved activations grow by its expert-row tensors once more. The tiny MoE (h 256,
 * i 688, top-2, bf16, HF's eager expert loop), 512 tokens: m = 1024 routed rows; saved per
 * row: the routed copy (h, saved by gate and up), gate, silu, up and their product (4·i),
 * and the expert output (h, saved by the weighting): 2 B · 1024 · (2·256 + 4·688). */
static void
test_imbalance_keeps_more_rows (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  double act[2] = { 0, 0 };
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = ep_par (8, 8);
      par.moe_imbalance = c == 0 ? 1.0 : 2.0;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      act[c] = plan_scan_layer_activations (p);
    }
  CU_ASSERT (act[0] > 0);
  STEPSIM_ASSERT_REL (act[1] - act[0], 2.0 * 1024 * (2 * 256 + 4 * 688), 1e-12);
}

/* Mixtral 8x7B at tp 2 (sequence parallel) on 8 GPUs, with ep 4 × etp 2 (expert-dp 1)
 * against ep 8 × etp 1, the same ep·etp = 8. */
static ModelParallel
mixtral_etp (guint ep, guint etp)
{
  ModelParallel par = ep_par (8, ep);
  par.etp = etp;
  par.tp = 2;
  par.sequence_parallel = TRUE;
  return par;
}

/* C14's buckets with etp (Megatron-LM #4050; experts.py TEGroupedMLP: fc1 column-, fc2
 * row-parallel over expt_tp): Mixtral 8x7B at tp 2 (SP), ep 4, etp 2 on 8 GPUs. A rank holds
 * 2 of the 8 experts of each of the 32 layers, each split over etp 2: fc1 (gate‖up)
 * 2·i/2 × h = 14336 · 4096 and fc2 h × i/2 = 4096 · 7168, 88,080,384 parameters an expert
 * shard, 32 · 2 · 88,080,384 = 5,637,144,576 = 45,097,156,608 / (ep·etp) expert weights;
 * the tensor-parallel bucket ÷ 2 (671,088,640 attention + 131,072,000 embedding and head)
 * and the replicated one whole (266,240 norms + 1,048,576 router) as in
 * test_c14_buckets_tp: 6,440,620,032 weights a rank, 2 B each — the same as ep 8 × etp 1
 * (the expert bucket ÷ 8 either way), and at tp 1 (dense bucket whole, etp carved from
 * data-parallel ranks) the expert bucket is still ÷ 8. Master weights 4 B each (DDP). */
static void
test_etp_weights (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelStack st = bf16_stack (512);
  const double experts = 45097156608.0, shard = 32.0 * 2 * (14336.0 * 4096 + 4096.0 * 7168);
  STEPSIM_ASSERT_REL (shard, experts / 8, 0);
  const double want = 671088640.0 + 131072000 + 266240 + 1048576 + shard;
  const guint grid[][2] = { { 4, 2 }, { 8, 1 } };
  for (guint c = 0; c < G_N_ELEMENTS (grid); c++)
    {
      ModelParallel par = mixtral_etp (grid[c][0], grid[c][1]);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      if (p == NULL)
        g_printerr ("\n  %s\n", error->message);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * want, 1e-12);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS), 4 * want,
                          1e-12);
    }
  ModelParallel dp = ep_par (8, 4);
  dp.etp = 2;
  g_autoptr (ModelPlan) q = model_plan_new (a, &st, &dp, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (q, MODEL_MEM_WEIGHTS),
                      2 * (46702792704.0 - experts + shard), 1e-12);
}

/* The etp collectives of one MoE layer and micro-batch (token_dispatcher.py
 * MoEAlltoAllTokenDispatcher), Mixtral 8x7B, tp 2 (SP), ep 4, etp 2, s = 512, b = 1, bf16,
 * dropless uniform: a rank routes T = 512/2 = 256 tokens, T·k = 512 copies. Rank 0's
 * groups (mesh.h: stage-local = etp_coord + 2·(ep_coord + 4·edp_coord)): etp {0, 1}, ep
 * {0, 2, 4, 6}, tp_ep {0 … 7}. Forward, in order: the token counts all-gathered over
 * tp_ep (preprocess: 8 int64 from each of 8 ranks, 512 B gathered); tokens and
 * probabilities all-to-all'ed over ep (512 · 4096 · 2 = 4,194,304 B; 512 · 2 = 1024 B);
 * dispatch_postprocess all-gathers both over etp (output: etp × 512 = 1024 rows,
 * 8,388,608 B and 2048 B); combine_preprocess reduce-scatters the experts' output over etp
 * (input 1024 rows · 4096 · 2 B = 8,388,608 B, probs dtype bf16); the combine all-to-all
 * over ep (4,194,304 B). Backward, in reverse: the combine's all-to-all, the
 * reduce-scatter's all-gather, the two gathers' reduce-scatters (probs, tokens), the two
 * all-to-alls (probs, tokens). */
static void
test_etp_collectives (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (512);
  ModelParallel par = mixtral_etp (4, 2);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  static const guint etp[] = { 0, 1 }, ep[] = { 0, 2, 4, 6 }, all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  const struct
  {
    HwCollectiveKind kind;
    const guint *members;
    guint n;
    double bytes;
  } want[] = {
    { HW_COLLECTIVE_ALL_GATHER, all, 8, 512 },
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 4194304 },
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 1024 },
    { HW_COLLECTIVE_ALL_GATHER, etp, 2, 8388608 },
    { HW_COLLECTIVE_ALL_GATHER, etp, 2, 2048 },
    { HW_COLLECTIVE_REDUCE_SCATTER, etp, 2, 8388608 },
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 4194304 },
    /* backward */
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 4194304 },
    { HW_COLLECTIVE_ALL_GATHER, etp, 2, 8388608 },
    { HW_COLLECTIVE_REDUCE_SCATTER, etp, 2, 2048 },
    { HW_COLLECTIVE_REDUCE_SCATTER, etp, 2, 8388608 },
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 1024 },
    { HW_COLLECTIVE_ALL_TO_ALL, ep, 4, 4194304 },
  };
  guint n = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->stream != MODEL_STREAM_EP || t->layer != 0 || t->micro_batch != 0)
        continue;
      CU_ASSERT_FATAL (n < G_N_ELEMENTS (want));
      const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
      CU_ASSERT_EQUAL (c->kind, want[n].kind);
      STEPSIM_ASSERT_REL (t->bytes, want[n].bytes, 1e-12);
      CU_ASSERT_EQUAL_FATAL (c->n_ranks, want[n].n);
      for (guint i = 0; i < c->n_ranks; i++)
        CU_ASSERT_EQUAL (c->ranks[i], want[n].members[i]);
      n++;
    }
  CU_ASSERT_EQUAL (n, G_N_ELEMENTS (want));
}

/* The expert GEMMs of rank 0's first forward at ep 4 × etp 2 against ep 8 × etp 1 (Mixtral,
 * tp 2 SP, s = 512: T·k = 512 copies a rank). etp 2: each of the 2 local experts gets
 * ep·etp·T·k/E = 8·512/8 = 512 rows (the gathered rows: 1024 a rank, etp × the 512 the
 * all-to-all delivers) at the inner width i/etp = 7168: gate and up m 512 × n 7168 × k 4096,
 * down m 512 × n 4096 × k 7168, one GEMM for the (hot) first expert and one for the other.
 * etp 1, ep 8: one local expert of 512 rows at n = 14336. Total expert FLOPs a rank equal:
 * 2 · 512 · 3 · 4096 · 14336 = 180,388,626,432 either way (2 experts × 512 rows × i/2 = 1
 * expert × 512 rows × i). The sort-by-local-expert kernels (Megatron, 2 local experts) read
 * and write the 1024 gathered rows: 2 · 2 · 1024 · 4096 B each. */
static void
test_etp_expert_gemms (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (512);
  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_MEGATRON);
  const guint grid[][2] = { { 4, 2 }, { 8, 1 } };
  for (guint c = 0; c < G_N_ELEMENTS (grid); c++)
    {
      ModelParallel par = mixtral_etp (grid[c][0], grid[c][1]);
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      double inner = 14336.0 / grid[c][1], flops = 0, sort = 0;
      guint n = 0, n_sort = 0;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank != 0 || g_strcmp0 (t->label, "fwd L0 mb0") != 0)
            continue;
          for (guint j = 0; j < t->n_kernels; j++)
            {
              const ModelOp *op = &model_plan_kernel (p, t->first_kernel + j)->op;
              if (g_str_has_suffix (op->name, "sort_chunks"))
                n_sort++, sort = op->bytes;
              gboolean down = g_strcmp0 (op->name, "mlp_down") == 0;
              if (!down && g_strcmp0 (op->name, "mlp_gate") != 0
                  && g_strcmp0 (op->name, "mlp_up") != 0)
                continue;
              n++;
              flops += op->flops;
              CU_ASSERT_EQUAL (op->shape.m, 512);
              CU_ASSERT_EQUAL (op->shape.batch, 1);
              CU_ASSERT_EQUAL (op->shape.n, down ? 4096 : inner);
              CU_ASSERT_EQUAL (op->shape.k, down ? inner : 4096);
            }
        }
      CU_ASSERT_EQUAL (n, grid[c][1] == 2 ? 6 : 3);
      STEPSIM_ASSERT_REL (flops, 2.0 * 512 * 3 * 4096 * 14336, 1e-12);
      CU_ASSERT_EQUAL (n_sort, grid[c][1] == 2 ? 2 : 0);
      if (n_sort > 0)
        STEPSIM_ASSERT_REL (sort, 2.0 * 2 * 1024 * 4096, 1e-12);
    }
}

/* Saved activations under etp (Megatron's grouped experts, experts.py TEGroupedMLP): the
 * rank's experts keep fc1's input at the gathered rows × h (TE GroupedLinear saves it:
 * 1024 rows at ep 4 × etp 2 against 512 at ep 8 × etp 1) and fc1's output and fc2's input
 * at those rows × i/etp, as many bytes as 512 rows × i; nothing else of the dispatch (the
 * all-gather's output feeds the sort, whose output fc1 saves; the reduce-scatter's input is
 * fc2's output, which nothing saves). So the layer keeps 2 B · (1024 − 512) · 4096 =
 * 4,194,304 B more at etp 2, the inner tensors unchanged; and the forward's transient peak
 * (at the experts' output, the reduce-scatter's input) grows by as much. */
static void
test_etp_activations (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (512);
  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_MEGATRON);
  ModelParallel p2 = mixtral_etp (4, 2), p1 = mixtral_etp (8, 1);
  g_autoptr (ModelPlan) q2 = model_plan_new (a, &st, &p2, NULL);
  g_autoptr (ModelPlan) q1 = model_plan_new (a, &st, &p1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q1);
  STEPSIM_ASSERT_REL (plan_scan_layer_activations (q2) - plan_scan_layer_activations (q1),
                      2.0 * 512 * 4096, 1e-12);
  /* the forward's transient peak: the experts' output (fc2's, the reduce-scatter's input,
   * saved by nothing) lives at the 1024 gathered rows × h, 2 · (1024 − 512) · 4096 B more */
  STEPSIM_ASSERT_REL (plan_scan_allocated (q2, 0, "fwd L0 mb0", MODEL_MEM_WORKSPACE)
                          - plan_scan_allocated (q1, 0, "fwd L0 mb0", MODEL_MEM_WORKSPACE),
                      2.0 * 512 * 4096, 1e-12);
}

/* Expert tensor parallelism carved from data-parallel ranks (tp 1: Megatron's
 * expert_decoder_rank_generator takes etp from any of the stage's ranks; no check ties it
 * to tp): the tiny MoE at ep 2 × etp 2 on 8 GPUs, DDP, expert-dp 8/4 = 2. Rank 0's etp
 * group {0, 1} gathers the rows, and each layer's expert gradients — 8 · 3 · 256 · 688 /
 * (ep·etp) = 1,056,768 parameters a rank, 2 B each — are all-reduced over its expert-dp
 * pair {0, 4} (stage-local = etp + 2·(ep + 2·edp)), 4 layers. */
static void
test_etp_over_dp (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  ModelParallel par = ep_par (8, 2);
  par.etp = 2;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double expert = 0;
  guint n_expert = 0, n_gather = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      if (strstr (t->label, "dispatch all-gather (etp)") != NULL)
        {
          n_gather++;
          CU_ASSERT (col->n_ranks == 2 && col->ranks[0] == 0 && col->ranks[1] == 1);
        }
      if (strstr (t->label, "expert grads") != NULL)
        {
          CU_ASSERT (col->kind == HW_COLLECTIVE_ALL_REDUCE && col->n_ranks == 2
                     && col->ranks[0] == 0 && col->ranks[1] == 4);
          expert += t->bytes;
          n_expert++;
        }
    }
  CU_ASSERT_EQUAL (n_gather, 4);
  CU_ASSERT_EQUAL (n_expert, 4);
  STEPSIM_ASSERT_REL (expert, 4 * 1056768.0 * model_stack_gradient_bytes (&st), 1e-12);

  /* etp alone (ep 1 × etp 2) under ZeRO-1: the expert states shard over expert-dp
   * 8 / 2 = 4 (distributed_data_parallel.py expert_parallel_buffers on
   * expert_data_parallel_group), the dense over the 8: with D = N − experts + pad and
   * X = experts / etp, master weights 4·(D/8 + X/4) B, Adam 8·(D/8 + X/4); after the step
   * the updated expert weights are all-gathered over the expert-dp group {0, 2, 4, 6}
   * (X·2 B), as the experts' gradients were reduce-scattered over it (X·g B) and the
   * dense ones over the 8 (D·g B) */
  const double h = 256, i = 688, experts = 4 * 8 * 3 * h * i;
  const double pad = 2 * (1024 - 1000) * h; /* tensor_parallel.h: V padded to 128·tp */
  const double D = (double) model_arch_n_params (a) - experts + pad, X = experts / 2;
  ModelParallel z = ep_par (8, 1);
  z.etp = 2;
  z.mode = MODEL_DP_ZERO1;
  g_autoptr (ModelPlan) q = model_plan_new (a, &st, &z, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (q, MODEL_MEM_MASTER_WEIGHTS),
                      4 * (D / 8 + X / 4), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (q, MODEL_MEM_OPTIMIZER_STATE),
                      8 * (D / 8 + X / 4), 1e-12);
  double gathered = 0, reduced = 0, dense = 0, g = model_stack_gradient_bytes (&st);
  for (guint k = 0; k < model_plan_n_tasks (q); k++)
    {
      const ModelTask *t = model_plan_task (q, k);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE)
        continue;
      const ModelCollective *col = model_plan_collective (q, (guint) t->collective);
      gboolean edp = col->n_ranks == 4 && col->ranks[0] == 0 && col->ranks[1] == 2
                     && col->ranks[3] == 6;
      if (strstr (t->label, "updated expert params") != NULL)
        {
          CU_ASSERT (edp);
          gathered += t->bytes;
        }
      else if (strstr (t->label, "expert grads") != NULL)
        {
          CU_ASSERT (edp && col->kind == HW_COLLECTIVE_REDUCE_SCATTER);
          reduced += t->bytes;
        }
      else if (strstr (t->label, "grads bucket") != NULL)
        {
          CU_ASSERT (col->n_ranks == 8);
          dense += t->bytes;
        }
    }
  STEPSIM_ASSERT_REL (gathered, X * 2, 1e-12);
  /* the gradients: the experts' reduce-scattered over that group, the rest over the 8 */
  STEPSIM_ASSERT_REL (reduced, X * g, 1e-12);
  STEPSIM_ASSERT_REL (dense, D * g, 1e-12);
}

/* Refusals, each naming group and key: ep not dividing the experts (8 % 3); ep not
 * dividing a stage's dp·cp·tp ranks (6 % 4); ep > 1 on a dense model; capacity factor ≤ 0;
 * load imbalance above E/k; top-k above the experts (the model key); etp not dividing
 * intermediate_size, ep·etp not dividing the ranks, etp with biased experts; ZeRO-2 with
 * trainable experts (gradient shards over expert-dp are not modelled), FSDP full shard. */
/* One step of Mixtral 8x7B cut to 2 layers (seq 2048, GA 4, bf16, no recompute) with ep 8
 * on one DGX H100, the all-to-all overlap on or off. */
static void
simulate_overlap (gboolean overlap, ModelSimResult *r)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (2048);
  st.grad_accum = 4;
  ModelParallel par = ep_par (8, 8);
  par.moe_a2a_overlap = overlap;
  const HwNodeSpec *node = hw_catalog_node ("DGX-H100", NULL);
  HwFabricSpec fabric = { .spine_oversubscription = 1.0 };
  ModelSimInput in = { .arch = a, .stack = &st, .par = &par, .node = node, .n_nodes = 1,
                       .fabric = &fabric, .steps = 1 };
  g_autoptr (GError) e = NULL;
  gboolean ok = model_simulate (&in, NULL, r, &e);
  if (!ok)
    g_printerr ("%s\n", e->message);
  CU_ASSERT_FATAL (ok);
}

/* [moe] a2a_overlap (Megatron's combined 1F1B, plan_step.c step_combined). Without it every
 * micro-batch's dispatch and combine all-to-alls sit on the critical path: exposed
 * E_off = 3 (a_f + a_b) + (a_f + a_b') over m = 4 micro-batches, a_f and a_b one
 * micro-batch's forward and backward all-to-alls (2 layers each), a_b' ≥ a_b the last
 * micro-batch's backward ones, which share the NVLink with DDP's gradient all-reduce. With
 * it micro-batch i's forward layers run beside i − 1's backward layers, each layer's
 * all-to-alls (~0.1 ms on NVSwitch) beside the other micro-batch's layer task (~10 ms of
 * GEMMs), so only micro-batch 0's forward and 3's backward all-to-alls stay exposed:
 * E_on = a_f + a_b', between E_off / 4 and (a_b' − a_b small) 5 % above it. The step is
 * shorter. Memory: micro-batch i's embedding and first layer are allocated before i − 1's
 * backward frees its last layer, so the peak is at least the alternating schedule's and at
 * most one layer's saved activations above it. */
static void
test_a2a_overlap_hides_all_to_alls (void)
{
  ModelSimResult off, on;
  simulate_overlap (FALSE, &off);
  simulate_overlap (TRUE, &on);
  CU_ASSERT (off.exposed_all_to_all > 0);
  CU_ASSERT (on.exposed_all_to_all >= off.exposed_all_to_all / 4 * (1 - 1e-9));
  CU_ASSERT (on.exposed_all_to_all <= off.exposed_all_to_all / 4 * 1.05);
  CU_ASSERT (on.step_time < off.step_time);
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (2048);
  ModelParallel par = ep_par (8, 8);
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double layer = plan_scan_layer_activations (p);
  CU_ASSERT (layer > 0);
  CU_ASSERT (on.peak_allocated >= off.peak_allocated);
  CU_ASSERT (on.peak_allocated <= off.peak_allocated + layer);
  model_sim_result_clear (&off);
  model_sim_result_clear (&on);
}

/* A pipeline stage's backward starts when the next stage's output gradient arrives: the
 * dispatcher's backward all-to-alls of the stage's last layer move that gradient (the
 * combine's conjugate first), so they wait for its receive too, not only for the stage's
 * previous compute task (which, under 1F1B, is another micro-batch's forward). Tiny MoE,
 * pp 2 (layers 0-1 on stage 0), ep 4: stage 0's first backward all-to-all of micro-batch 0
 * (layer 1) depends on its "recv grad". */
static void
test_backward_all_to_all_waits_for_grad (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  st.grad_accum = 4;
  ModelParallel par = ep_par (8, 4);
  par.pp = 2;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT (plan_scan_waits_for_grad (p, 0, MODEL_STREAM_EP, 1, 0));
}

/* Mixtral 8x7B cut to 4 layers under the interleaved pipeline: pp 2 × 2 virtual stages of
 * one layer (stage 3 with the head), ep 4 over each stage's 4 GPUs, GA 4. */
static ModelParallel
interleaved_par (gboolean overlap)
{
  ModelParallel par = ep_par (8, 4);
  par.pp = 2;
  par.pp_schedule = MODEL_PP_INTERLEAVED;
  par.pp_virtual = 2;
  par.moe_a2a_overlap = overlap;
  return par;
}

/* a2a_overlap under the interleaved pipeline (plan_pp.c combined_pair). Pipeline rank 1
 * (GPU 4) runs its list F0.0 F1.0 F0.1, then the pairs (F1.1, BW0.1) (F2.0, BW1.1)
 * (F3.0, BW0.0) (F2.1, BW1.0) (F3.1, BW2.1), then BW3.1 BW2.0 BW3.0
 * (test_pipeline_schedule.c's order: one more warm-up forward), chunk 0 its layer 1,
 * chunk 1 its layer 3 and the head. A pair runs the backward's head first, then the
 * forward's layer beside the backward's, then the forward's head: the compute order below.
 * Replayed, the paired all-to-alls hide behind each other's layers where the pipeline
 * leaves both sides ready, so exposure and step fall (not by a closed form: the pairs
 * also wait on their two receives). */
static void
test_a2a_overlap_interleaved (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 4;
  ModelStack st = bf16_stack (2048);
  st.grad_accum = 4;
  ModelParallel par = interleaved_par (TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const char *const want[]
    = { "fwd L1 mb0", "fwd L1 mb1", "fwd L3 mb0", "fwd head mb0",
        "bwd head mb0", "fwd L3 mb1", "bwd L3 mb0", "fwd head mb1",
        "bwd head mb1", "fwd L1 mb2", "bwd L3 mb1",
        "fwd L1 mb3", "bwd L1 mb0",
        "fwd L3 mb2", "bwd L1 mb1", "fwd head mb2",
        "bwd head mb2", "fwd L3 mb3", "bwd L3 mb2", "fwd head mb3",
        "bwd head mb3", "bwd L3 mb3", "bwd L1 mb2", "bwd L1 mb3" };
  guint n = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 4 || t->stream != MODEL_STREAM_COMPUTE || t->kind == MODEL_TASK_KIND_OPTIMIZER)
        continue;
      CU_ASSERT_FATAL (n < G_N_ELEMENTS (want));
      CU_ASSERT_STRING_EQUAL (t->label, want[n]);
      n++;
    }
  CU_ASSERT_EQUAL (n, G_N_ELEMENTS (want));
  ModelSimResult r[2];
  for (guint i = 0; i < 2; i++)
    {
      ModelParallel pi = interleaved_par (i == 1);
      HwFabricSpec fabric = { .spine_oversubscription = 1.0 };
      ModelSimInput in = { .arch = a, .stack = &st, .par = &pi,
                           .node = hw_catalog_node ("DGX-H100", NULL), .n_nodes = 1,
                           .fabric = &fabric, .steps = 1 };
      CU_ASSERT_FATAL (model_simulate (&in, NULL, &r[i], NULL));
    }
  CU_ASSERT (r[0].exposed_all_to_all > 0);
  CU_ASSERT (r[1].exposed_all_to_all < 0.9 * r[0].exposed_all_to_all);
  CU_ASSERT (r[1].step_time < r[0].step_time);
  model_sim_result_clear (&r[0]);
  model_sim_result_clear (&r[1]);
  /* GA = pp: pipeline rank 0's warm-up takes every forward, so only rank 1 combines; the
   * step completes. Pairing rank 0's last forward with its first backward deadlocked once
   * a chunk had two layers: that forward's second layer queued behind the backward's first,
   * which waits for rank 1's gradient, which waits for that forward's output. */
  a->n_layers = 8;
  st.grad_accum = 2;
  ModelParallel two = interleaved_par (TRUE);
  HwFabricSpec fabric = { .spine_oversubscription = 1.0 };
  ModelSimInput in = { .arch = a, .stack = &st, .par = &two,
                       .node = hw_catalog_node ("DGX-H100", NULL), .n_nodes = 1,
                       .fabric = &fabric, .steps = 1 };
  ModelSimResult r2;
  g_autoptr (GError) e = NULL;
  gboolean ok = model_simulate (&in, NULL, &r2, &e);
  if (!ok)
    g_printerr ("\n  %s\n", e->message);
  CU_ASSERT_FATAL (ok);
  model_sim_result_clear (&r2);
}

/* The combined schedule's order on rank 0 (GA 2, the tiny model's 4 layers): micro-batch
 * 0's forward, then micro-batch 1's embedding, 0's head backward, the layer pairs (1's L0
 * with 0's L3, …, 1's L3 with 0's L0), 1's head, 0's embedding backward, then 1's backward;
 * and each backward
 * layer's all-to-alls follow its own micro-batch's previous compute task, not the forward
 * task built just before it (or they would wait for it and hide nothing). */
static void
test_a2a_overlap_order (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (512);
  st.grad_accum = 2;
  ModelParallel par = ep_par (8, 8);
  par.moe_a2a_overlap = TRUE;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const char *const want[]
    = { "fwd embed mb0", "fwd L0 mb0", "fwd L1 mb0", "fwd L2 mb0", "fwd L3 mb0",
        "fwd head mb0", "fwd embed mb1", "bwd head mb0", "fwd L0 mb1", "bwd L3 mb0",
        "fwd L1 mb1", "bwd L2 mb0", "fwd L2 mb1", "bwd L1 mb0", "fwd L3 mb1", "bwd L0 mb0",
        "fwd head mb1", "bwd embed mb0", "bwd head mb1", "bwd L3 mb1", "bwd L2 mb1",
        "bwd L1 mb1", "bwd L0 mb1", "bwd embed mb1" };
  guint n = 0, head_bwd = G_MAXUINT, fwd_l0 = G_MAXUINT, a2a = G_MAXUINT;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0)
        continue;
      /* the first expert-parallel collective of "bwd L3 mb0" */
      if (t->stream == MODEL_STREAM_EP && t->layer == 3 && t->micro_batch == 0
          && head_bwd != G_MAXUINT && a2a == G_MAXUINT)
        a2a = t->id;
      if (t->stream != MODEL_STREAM_COMPUTE || t->kind == MODEL_TASK_KIND_OPTIMIZER)
        continue;
      CU_ASSERT_FATAL (n < G_N_ELEMENTS (want));
      CU_ASSERT_STRING_EQUAL (t->label, want[n]);
      n++;
      if (g_strcmp0 (t->label, "bwd head mb0") == 0)
        head_bwd = t->id;
      if (g_strcmp0 (t->label, "fwd L0 mb1") == 0)
        fwd_l0 = t->id;
    }
  CU_ASSERT_EQUAL (n, G_N_ELEMENTS (want));
  /* issued before micro-batch 1's first layer, after micro-batch 0's head backward */
  CU_ASSERT_FATAL (a2a != G_MAXUINT && fwd_l0 != G_MAXUINT);
  CU_ASSERT (a2a < fwd_l0);
  const ModelTask *t = model_plan_task (p, a2a);
  gboolean after_head = FALSE;
  for (guint d = 0; d < t->n_deps; d++)
    after_head |= model_plan_dep (p, t->first_dep + d) == head_bwd;
  CU_ASSERT (after_head);
  /* each micro-batch waits for its own all-to-alls, never for the other's: "fwd L1 mb1"
   * for L0 mb1's, "bwd L3 mb0" for its own (issued above) and for none of mb1's */
  const struct { const char *task; gint layer, mb; gboolean want; } waits[] = {
    { "fwd L1 mb1", 0, 1, TRUE }, { "bwd L3 mb0", 3, 0, TRUE }, { "bwd L3 mb0", 0, 1, FALSE },
  };
  for (guint w = 0; w < G_N_ELEMENTS (waits); w++)
    {
      gboolean found = FALSE;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *c = model_plan_task (p, k);
          if (c->rank != 0 || g_strcmp0 (c->label, waits[w].task) != 0)
            continue;
          for (guint d = 0; d < c->n_deps; d++)
            {
              const ModelTask *dep = model_plan_task (p, model_plan_dep (p, c->first_dep + d));
              found |= dep->stream == MODEL_STREAM_EP && dep->layer == waits[w].layer
                       && dep->micro_batch == waits[w].mb;
            }
        }
      CU_ASSERT_EQUAL (found, waits[w].want);
    }
}

static void
test_bad_settings (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  g_autoptr (ModelArch) dense = tiny_arch ();
  ModelStack st = bf16_stack (512);
  ModelParallel par = ep_par (6, 3);
  expect_refusal (a, &st, &par, "group [parallel], key 'ep'", "num_local_experts");
  par = ep_par (6, 4);
  expect_refusal (a, &st, &par, "group [parallel], key 'ep'", "does not divide");
  par = ep_par (8, 8);
  expect_refusal (dense, &st, &par, "group [parallel], key 'ep'", "no experts");
  par = ep_par (8, 8);
  par.moe_drop = TRUE, par.moe_capacity_factor = 0;
  expect_refusal (a, &st, &par, "group [moe], key 'capacity_factor'", NULL);
  par = ep_par (8, 8);
  par.moe_imbalance = 5;
  expect_refusal (a, &st, &par, "group [moe], key 'load_imbalance'", NULL);
  /* etp: intermediate_size 688 = 16·43 not a multiple of 3; ep·etp = 16 not dividing 8
   * ranks; biased experts (Megatron: "Bias in Moe is only supported when ETP==1"); ZeRO-2
   * with expert shards over etp alone (ep 1) */
  par = ep_par (6, 2);
  par.etp = 3;
  expect_refusal (a, &st, &par, "group [parallel], key 'etp'", "intermediate_size = 688");
  par = ep_par (8, 4);
  par.etp = 4;
  expect_refusal (a, &st, &par, "etp = 4", "does not divide");
  par = ep_par (8, 1);
  par.etp = 2;
  a->mlp_bias = TRUE;
  expect_refusal (a, &st, &par, "group [parallel], key 'etp'", "bias");
  a->mlp_bias = FALSE;
  par.mode = MODEL_DP_ZERO2;
  expect_refusal (a, &st, &par, "group [parallel], key 'data_parallel'", "etp = 2");
  par = ep_par (8, 8);
  par.mode = MODEL_DP_ZERO2; /* full fine-tune: expert gradient shards over expert-dp */
  expect_refusal (a, &st, &par, "group [parallel], key 'data_parallel'", "expert-data-parallel");
  par.mode = MODEL_DP_FSDP_FULL_SHARD;
  expect_refusal (a, &st, &par, "group [parallel], key 'data_parallel'", "weights");
  /* tp 2 at ep = etp = 1: expert-dp (dp·tp) is not dp, so ZeRO-2 is refused the same way */
  par = ep_par (8, 1);
  par.tp = 2;
  par.sequence_parallel = TRUE;
  par.mode = MODEL_DP_ZERO2;
  expect_refusal (a, &st, &par, "group [parallel], key 'data_parallel'", "tp = 2");
  /* [moe] a2a_overlap: Megatron's asserts and what the combined schedule models */
  par = ep_par (8, 1);
  par.moe_a2a_overlap = TRUE;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "expert model parallelism");
  par.ep = 8;
  st.checkpointing = MODEL_CHECKPOINTING_FULL;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "full recomputation");
  st.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  st.recompute_modules = MODEL_RECOMPUTE_MOE;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "recompute_modules moe");
  st.checkpointing = MODEL_CHECKPOINTING_SELECTIVE_OP;
  st.recompute_modules = 0;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "torchtitan");
  /* activations offloaded: their per-layer save and restore assume one micro-batch in
   * flight (it crashed the ledger before it was refused) */
  st.checkpointing = MODEL_CHECKPOINTING_NONE;
  st.offload.activations = MODEL_OFFLOAD_CPU;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "activations offloaded");
  st.offload.activations = MODEL_OFFLOAD_NONE;
  st.precision = MODEL_PRECISION_FP32;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "bf16 or fp16");
  st = bf16_stack (512);
  par = ep_par (8, 4);
  par.moe_a2a_overlap = TRUE;
  par.pp = 2;
  expect_refusal (a, &st, &par, "group [moe], key 'a2a_overlap'", "interleaved");
  par = ep_par (8, 8);
  par.moe_a2a_overlap = TRUE;
  expect_refusal (dense, &st, &par, "group [moe], key 'a2a_overlap'", "no experts");
  par = ep_par (8, 8);
  a->experts_per_token = 9;
  expect_refusal (a, &st, &par, "num_experts_per_tok", NULL);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "C14 buckets: experts ÷ ep, the rest replicated (Mixtral 8x7B)", test_c14_buckets },
    { "C14 buckets with tp 2 ≠ etp·ep 4: attention ÷ tp, experts ÷ ep (Mixtral 8x7B)",
      test_c14_buckets_tp },
    { "dispatch all-to-all on one NVSwitch node = closed form",
      test_dispatch_all_to_all_closed_form },
    { "load_imbalance 2 slows the MoE layers by the leaf's slowdown", test_imbalance_slows_step },
    { "DDP: expert gradients all-reduced over expert-dp, not dp", test_expert_grads_over_edp },
    { "ZeRO-1: expert states sharded and reduced over expert-dp, dense over dp",
      test_zero1_expert_states_over_edp },
    { "tp 2, ep 1: expert gradients and states over expert-dp = dp·tp, not dp",
      test_tp_expert_grads_over_edp },
    { "pp: stage states of dense and MoE layers (DeepSeek-V2-Lite cut)",
      test_stage_states_heterogeneous_layers },
    { "Megatron's dispatcher sorts received rows by local expert and back",
      test_megatron_sort_chunks },
    { "load_imbalance 2: the hot rank keeps twice its experts' rows",
      test_imbalance_keeps_more_rows },
    { "bad ep / moe settings", test_bad_settings },
    { "recompute_modules moe reruns the slowest rank's expert GEMMs",
      test_moe_recompute_slowest_rank },
    { "a2a_overlap: only the first forward's and last backward's all-to-alls exposed",
      test_a2a_overlap_hides_all_to_alls },
    { "a2a_overlap: the combined schedule's task order", test_a2a_overlap_order },
    { "pp: a stage's backward all-to-alls wait for its output gradient",
      test_backward_all_to_all_waits_for_grad },
    { "a2a_overlap under the interleaved pipeline: the paired F/BW hide their all-to-alls",
      test_a2a_overlap_interleaved },
    { "etp: expert weights ÷ (ep·etp), tp bucket ÷ tp (Mixtral 8x7B tp 2 ep 4 etp 2)",
      test_etp_weights },
    { "etp: the dispatcher's etp all-gathers and reduce-scatters, groups and bytes",
      test_etp_collectives },
    { "etp: expert GEMMs at etp × the rows and i/etp, FLOPs as ep·etp at etp 1",
      test_etp_expert_gemms },
    { "etp: fc1's input saved, fc2's output live at the gathered rows; inner unchanged",
      test_etp_activations },
    { "etp carved from data-parallel ranks (tp 1): groups and expert gradients",
      test_etp_over_dp },
    { "pp: each stage carves its expert grid; expert grads over its expert-dp pairs",
      test_ep_inside_stages },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_ep", tests);
}
