/* tests/unit/models/test_plan_pp.c — pipeline parallelism through the plan and the executor
 * (models/plan/plan_pp.c): the step time and bubble the replay of each schedule gives on
 * a synthetic equal-stage pipeline with (nearly) free communication, each stage's layers
 * and model states, the P2P transfers and their bytes, in-flight activations per schedule,
 * and the bad settings. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "models/plan/plan.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/cost_fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/tiny.h"

/* A Llama-like model whose embedding and loss head cost next to nothing (vocabulary 8), so
 * that every stage is its layers: L = 8 layers of h 2048, 16 heads of 128, MLP 8192. */
static ModelArch
equal_stage_arch (void)
{
  return llama_like (2048, 8, 16, 16, 128, 8192, 8, 4096);
}

static ModelStack
pp_stack (guint64 m)
{
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.flash_attention = TRUE;
  st.micro_batch = 1;
  st.seq_len = 512;
  st.grad_accum = m;
  /* the closed forms are the GPU's: no host time per op, and fused norms (Megatron's), so
   * that the ends stay small beside the layers */
  st.framework.host_op_time = st.framework.host_backward_op_time = 0;
  st.framework.norm_fp32 = FALSE;
  return st;
}

static ModelParallel
pp_par (guint gpus, guint pp, ModelPpScheduleKind kind, guint v)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.pp = pp;
  par.pp_schedule = kind;
  par.pp_virtual = v;
  return par;
}

typedef struct
{
  double flush;      /* end of rank 0's last backward: the pipeline's makespan */
  double t_f, t_b;   /* one micro-batch's forward and backward on a middle rank (all its
                      * layers), as the replay timed them */
  double ends;       /* the embedding's and the head's tasks of micro-batch 0 */
  double act_peak0;  /* rank 0's activation peak */
  double idle0;      /* rank 0's pipeline idle time (model_executor_pipeline_idle) */
  guint n_done, n_tasks;
} PpRun;

/* Replays `plan` on one node whose NVLink is so fast and so close that a P2P transfer of
 * the pipeline's activations takes ~1e-12 s (bandwidth 1e18 B/s, latency 0): communication
 * costs nothing next to the layers' milliseconds. No kernel latency or host dispatch. */
static PpRun
replay (const ModelPlan *plan)
{
  PpRun o = { 0 };
  guint n = model_plan_n_ranks (plan);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = 8, .host_memory = 1e12,
                      .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 1e18,
                      .intra_latency = 0 };
  node.gpu->kernel_latency = 0;
  node.gpu->memory_capacity = 1e15;
  g_autoptr (HwCluster) cluster = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  g_autoptr (ModelLedger) ledger = model_ledger_new (n, NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  model_executor_start (exec);
  sim_engine_run (engine);
  o.n_done = model_executor_n_done (exec);
  o.n_tasks = model_plan_n_tasks (plan);
  guint mid = model_plan_pp_degree (plan) / 2;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      double d = model_executor_task_time (exec, i);
      if (t->rank == 0 && t->kind == MODEL_TASK_KIND_OPTIMIZER)
        o.flush = model_executor_rank_end (exec, 0) - d;
      if (t->stream != MODEL_STREAM_COMPUTE || t->micro_batch != 0)
        continue;
      if (t->layer < 0 && t->kind != MODEL_TASK_KIND_OPTIMIZER)
        o.ends += d;
      if (t->rank == mid && t->layer >= 0)
        *(t->kind == MODEL_TASK_KIND_FORWARD ? &o.t_f : &o.t_b) += d;
    }
  o.act_peak0 = model_ledger_category_peak (ledger, 0, MODEL_MEM_ACTIVATIONS);
  o.idle0 = model_executor_pipeline_idle (exec, 0);
  return o;
}

static PpRun
run (ModelPpScheduleKind kind, guint p, guint m, guint v)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (m);
  ModelParallel par = pp_par (p, p, kind, v);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) plan = model_plan_new (&a, &st, &par, &error);
  if (plan == NULL)
    g_error ("%s", error->message);
  PpRun o = replay (plan);
  CU_ASSERT_EQUAL (o.n_done, o.n_tasks); /* no transfer waits on another: no deadlock */
  /* The ends are what makes the stages unequal: small here (< 1 % of a stage's
   * micro-batch, memory-bound b·s·h passes beside the layers' b·s·h² GEMMs); the closed
   * forms below are bounded by them. */
  CU_ASSERT (o.ends < 1e-2 * (o.t_f + o.t_b));
  return o;
}

/* GPipe and 1F1B on p equal stages with free communication (Narayanan et al. 2021 §2.2.1):
 * the last micro-batch's forward leaves stage 0 after m·t_f and reaches the last stage
 * (p − 1)·t_f later; the backwards then run back down, so each rank is busy m·(t_f + t_b)
 * and idle (p − 1)·(t_f + t_b): step A = (m + p − 1)·(t_f + t_b) and the bubble fraction
 * b0 = (p − 1)/(m + p − 1). 1F1B reorders the same work without changing the makespan.
 * The first and last stages also run the embedding and the head (e = their time per
 * micro-batch, run() bounds it); each of the m + p − 1 slots on the critical path is then
 * at most t_f + t_b + e, so A ≤ step ≤ (m + p − 1)·(t_f + t_b + e), and with ε = e/(t_f +
 * t_b) the measured bubble 1 − m·(t_f + t_b)/step lies in [b0, b0 + ε]. The transfers take
 * ~1e-12 s (replay()). */
static void
test_gpipe_1f1b_step (void)
{
  const ModelPpScheduleKind kinds[] = { MODEL_PP_GPIPE, MODEL_PP_1F1B };
  const guint ps[] = { 2, 4, 8 }, ms[] = { 1, 4, 8 };
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (gsize i = 0; i < G_N_ELEMENTS (ps); i++)
      for (gsize j = 0; j < G_N_ELEMENTS (ms); j++)
        {
          guint p = ps[i], m = ms[j];
          PpRun o = run (kinds[k], p, m, 1);
          double unit = o.t_f + o.t_b, eps = o.ends / unit;
          double slots = m + p - 1;
          CU_ASSERT (o.flush >= slots * unit * (1 - 1e-9));
          CU_ASSERT (o.flush <= slots * (unit + o.ends));
          double bubble = 1 - m * unit / o.flush, b0 = (double) (p - 1) / slots;
          CU_ASSERT (bubble >= b0 - 1e-9 && bubble <= b0 + eps);
          /* rank 0's idle time, as the summary's pipeline bubble measures it: the flush less
           * its m micro-batches (each unit + at most e), so (p − 1)·unit within m·e below
           * and (m + p − 1)·e above */
          CU_ASSERT (o.idle0 >= (p - 1) * unit - m * o.ends - 1e-9 * o.flush);
          CU_ASSERT (o.idle0 <= (p - 1) * unit + slots * o.ends + 1e-9 * o.flush);
        }
}

/* Interleaved 1F1B with v chunks per rank (ibid. §2.2.2): each chunk's forward takes
 * t_f/v (t_f, t_b: a rank's whole share of one micro-batch), and the warm-up and
 * cool-down are (p − 1) chunk passes long: bubble time (p − 1)·(t_f + t_b)/v, step =
 * m·(t_f + t_b) + (p − 1)·(t_f + t_b)/v = (m·v + p − 1)·(t_f + t_b)/v, so the bubble over
 * the ideal m·(t_f + t_b) is (p − 1)/(v·m): v times smaller than 1F1B's (p − 1)/m. The
 * ends bound it as above, per chunk slot: step ≤ (m·v + p − 1)·((t_f + t_b)/v + e). */
static void
test_interleaved_step (void)
{
  const guint p = 4, v = 2, ms[] = { 4, 8 };
  for (gsize j = 0; j < G_N_ELEMENTS (ms); j++)
    {
      guint m = ms[j];
      PpRun o = run (MODEL_PP_INTERLEAVED, p, m, v);
      double unit = o.t_f + o.t_b, slots = m * v + p - 1;
      CU_ASSERT (o.flush >= slots * unit / v * (1 - 1e-9));
      CU_ASSERT (o.flush <= slots * (unit / v + o.ends));
      PpRun flat = run (MODEL_PP_1F1B, p, m, 1);
      CU_ASSERT (o.flush < flat.flush);
      /* the bubbles over the ideal: 1F1B's ≥ (p − 1)/m, interleaved's ≤ its bound */
      double b_int = o.flush / (m * unit) - 1, b_flat = flat.flush / (m * unit) - 1;
      CU_ASSERT (b_flat >= (double) (p - 1) / m * (1 - 1e-9));
      CU_ASSERT (b_int <= slots * (unit / v + o.ends) / (m * unit) - 1);
      CU_ASSERT (b_flat / b_int > 0.9 * v);
    }
}

/* ZB-H1 (Qi et al. 2023 §3.1): the backward split into B (input gradient) and W (weight
 * gradient), W deferred into what would be the bubble; the same work, so the step lies
 * between the ideal m·(t_f + t_b) and 1F1B's (m + p − 1)·(t_f + t_b): the paper's bubble
 * (p − 1)·(T_F + T_B − T_W) against 1F1B's (p − 1)·(T_F + T_B + T_W). */
static void
test_zb_h1_below_1f1b (void)
{
  const guint p = 4, m = 8;
  PpRun zb = run (MODEL_PP_ZB_H1, p, m, 1);
  PpRun flat = run (MODEL_PP_1F1B, p, m, 1);
  double unit = flat.t_f + flat.t_b;
  CU_ASSERT (zb.flush < flat.flush * (1 - 1e-2));
  CU_ASSERT (zb.flush > m * unit);
}

/* ZB-H1's W needs each trainable linear's input X and its output's gradient dY (dW =
 * Xᵀ·dY, Qi et al. 2023 §2), so B keeps them until W frees them. On the last of p = 4
 * ranks (2 of the 8 layers, and the head) a micro-batch's B allocates, and its W frees,
 * per layer: the inputs of q/k/v (norm output, b·s·h), o (attention output, b·s·h),
 * gate/up (norm output, b·s·h) and down (activation, b·s·i), 3bsh + bsi, and the outputs'
 * gradients, q, k, v and o 4bsh (16 KV heads of 128 = h), gate and up 2bsi, down bsh;
 * 8bsh + 3bsi elements; the head its input and the logits' gradient, bs·(h + V); 2 B each
 * (bf16). With b·s = 512, h 2048, i 8192, V 8: 2·(2·512·(8·2048 + 3·8192) + 512·2056). */
static void
test_zb_h1_holds_w_inputs (void)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (8);
  ModelParallel par = pp_par (4, 4, MODEL_PP_ZB_H1, 1);
  g_autoptr (ModelPlan) plan = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  const double bs = 512, h = 2048, i = 8192, V = 8;
  const double want = 2 * (2 * bs * (8 * h + 3 * i) + bs * (h + V));
  double freed = 0;
  guint n_w = 0;
  for (guint k = 0; k < model_plan_n_tasks (plan); k++)
    {
      const ModelTask *t = model_plan_task (plan, k);
      if (t->rank != 3 || t->micro_batch != 0 || strncmp (t->label, "wgrad", 5) != 0)
        continue;
      n_w++;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (plan, t->first_effect + e);
          if (m->bytes < 0 && m->category == MODEL_MEM_ACTIVATIONS)
            freed -= m->bytes;
        }
    }
  CU_ASSERT_EQUAL (n_w, 1);
  STEPSIM_ASSERT_REL (freed, want, 1e-12);
  /* 1F1B holds nothing for a W: no wgrad task */
  par.pp_schedule = MODEL_PP_1F1B;
  g_autoptr (ModelPlan) flat = model_plan_new (&a, &st, &par, NULL);
  for (guint k = 0; k < model_plan_n_tasks (flat); k++)
    CU_ASSERT (strncmp (model_plan_task (flat, k)->label, "wgrad", 5) != 0);
}

/* Rank 3's micro-batch 0 W task under ZB-H1 (test_zb_h1_holds_w_inputs' setting): its
 * FLOPs and the activation bytes it frees. */
static void
zb_w_task (const ModelArch *a, const ModelStack *st, double *flops, double *freed)
{
  ModelParallel par = pp_par (4, 4, MODEL_PP_ZB_H1, 1);
  g_autoptr (ModelPlan) plan = model_plan_new (a, st, &par, NULL);
  g_assert (plan != NULL);
  *flops = *freed = 0;
  for (guint k = 0; k < model_plan_n_tasks (plan); k++)
    {
      const ModelTask *t = model_plan_task (plan, k);
      if (t->rank != 3 || t->micro_batch != 0 || strncmp (t->label, "wgrad", 5) != 0)
        continue;
      *flops += t->flops;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (plan, t->first_effect + e);
          if (m->bytes < 0 && m->category == MODEL_MEM_ACTIVATIONS)
            *freed -= m->bytes;
        }
    }
}

/* Under LoRA the base GEMMs and the head are frozen: their backward is the input gradient
 * alone (cost.c, HW_KERNEL_GEMM_DGRAD), which stays whole in B, so W is the adapters'
 * weight gradients only: with r = 8 on q and v, each adapter GEMM's FLOPs are r/h = 1/256
 * of its base's, and the base holds 12·h² of a layer's GEMM parameters against the
 * adapters' 4·r·h, so W's FLOPs under LoRA are < 1 % of full fine-tuning's. And W holds
 * nothing for the frozen head: the bytes it frees do not change with the vocabulary, where
 * full fine-tuning's grow by the head's dY, 2 B · bs a logit (V → 4V: 2·bs·3V). */
static void
test_zb_h1_lora_frozen (void)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (8);
  double full_flops, full_freed, lora_flops, lora_freed;
  zb_w_task (&a, &st, &full_flops, &full_freed);
  model_finetune_init_defaults (&st.finetune);
  st.finetune.method = MODEL_FINETUNE_LORA;
  st.finetune.rank = 8;
  st.finetune.targets = MODEL_LORA_QV;
  zb_w_task (&a, &st, &lora_flops, &lora_freed);
  CU_ASSERT (lora_flops > 0);
  CU_ASSERT (lora_flops < 0.01 * full_flops);
  ModelArch wide = a;
  wide.vocab_size = 4 * a.vocab_size;
  double f, wide_lora_freed, wide_full_freed;
  zb_w_task (&wide, &st, &f, &wide_lora_freed);
  STEPSIM_ASSERT_REL (wide_lora_freed, lora_freed, 1e-12);
  ModelStack full = pp_stack (8);
  zb_w_task (&wide, &full, &f, &wide_full_freed);
  const double bs = 512;
  STEPSIM_ASSERT_REL (wide_full_freed - full_freed, 2 * bs * 3 * a.vocab_size, 1e-9);
}

/* In-flight activations (pipeline_schedule.h): GPipe's first stage holds all m
 * micro-batches' activations before its first backward, 1F1B's min(p, m): with m = 8 and
 * p = 4 the first rank's activation peak under GPipe is ~2× 1F1B's (each micro-batch's
 * stage activations are the same tensors; the embedding's are ~0 here). */
static void
test_in_flight_activations (void)
{
  PpRun g = run (MODEL_PP_GPIPE, 4, 8, 1);
  PpRun f = run (MODEL_PP_1F1B, 4, 8, 1);
  STEPSIM_ASSERT_REL (g.act_peak0 / f.act_peak0, 8.0 / 4.0, 5e-2);
}

/* Counts rank `rank`'s tasks whose label begins with `prefix`, summing their bytes. */
static guint
count_tasks (const ModelPlan *p, guint rank, const char *prefix, double *bytes)
{
  guint n = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank == rank && g_str_has_prefix (t->label, prefix))
        {
          n++;
          if (bytes != NULL)
            *bytes = t->bytes;
        }
    }
  return n;
}

/* Each rank holds only its stage's layers (8 layers over 4 stages: 2 each), the embedding
 * on the first, the head on the last; a middle rank sends m activations forward and m
 * gradients back and receives as many, each micro_batch·seq_len·hidden·2 B (bf16) =
 * 1·512·2048·2; with sequence parallelism over tp = 2 the tensor is split: half. */
static void
test_stage_layers_and_p2p (void)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 4, MODEL_PP_1F1B, 1);
  g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_EQUAL (count_tasks (p, 0, "fwd embed", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "fwd embed", NULL), 0);
  CU_ASSERT_EQUAL (count_tasks (p, 3, "fwd head", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 0, "fwd head", NULL), 0);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "fwd L2 ", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "fwd L3 ", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "fwd L4 ", NULL), 0);
  double bytes = 0;
  CU_ASSERT_EQUAL (count_tasks (p, 1, "send act", &bytes), 4);
  CU_ASSERT_EQUAL (bytes, 1.0 * 512 * 2048 * 2);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "recv act", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "send grad", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 1, "recv grad", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (p, 0, "recv act", NULL), 0);
  CU_ASSERT_EQUAL (count_tasks (p, 3, "send act", NULL), 0);
  /* the collective of a message pairs sender and receiver, sender first */
  for (guint c = 0; c < model_plan_n_collectives (p); c++)
    {
      const ModelCollective *k = model_plan_collective (p, c);
      CU_ASSERT_EQUAL (k->kind, HW_COLLECTIVE_SEND_RECV);
      CU_ASSERT_EQUAL (k->n_ranks, 2);
    }
  ModelParallel sp = pp_par (8, 4, MODEL_PP_1F1B, 1);
  sp.tp = 2;
  sp.sequence_parallel = TRUE;
  g_autoptr (ModelPlan) q = model_plan_new (&a, &st, &sp, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  /* rank order: tp innermost, pp outermost — pipeline rank 1 is ranks 2 and 3 */
  CU_ASSERT_EQUAL (model_plan_pp_rank (q, 2), 1);
  CU_ASSERT_EQUAL (model_plan_pp_rank (q, 1), 0);
  CU_ASSERT_EQUAL (count_tasks (q, 2, "send act", &bytes), 4);
  CU_ASSERT_EQUAL (bytes, 1.0 * 512 * 2048 * 2 / 2);
}

/* Sequence parallelism's backward all-gather of the output gradient before a layer's
 * backward (plan_step.c tp_before_backward) moves the gradient a pipeline stage receives,
 * so on a stage's last layer it waits for that receive (1F1B, pp 2, tp 2 with SP on 4
 * GPUs: stage 0 holds layers 0-3, rank 0's first tp collective of layer 3's backward of
 * micro-batch 0 follows its "recv grad"). */
static void
test_sp_backward_waits_for_grad (void)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 2, MODEL_PP_1F1B, 1);
  par.tp = 2;
  par.sequence_parallel = TRUE;
  g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT (plan_scan_waits_for_grad (p, 0, MODEL_STREAM_TP, 3, 0));
}

/* Model states per stage: a middle stage's weights are its 2 of 8 layers (no embedding or
 * head): 2 × the layer's parameters × 2 B; the whole model's over the stages sums to the
 * model's (untied: every tensor on exactly one stage). */
static void
test_stage_states (void)
{
  ModelArch a = llama_like (1024, 8, 8, 8, 128, 4096, 32000, 4096);
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 4, MODEL_PP_1F1B, 1);
  g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
  g_autoptr (ModelPlan) one = model_plan_new (&a, &st, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double layer = 4.0 * 1024 * 1024 + 3.0 * 1024 * 4096 + 2 * 1024; /* q,k,v,o; MLP; norms */
  const ModelMemEffect *w1
    = model_plan_allocation (p, model_plan_initial_handle (p, 1, MODEL_MEM_WEIGHTS));
  STEPSIM_ASSERT_REL (w1->bytes, 2 * layer * 2, 1e-12);
  double sum = 0, all = model_plan_state_bytes (one, 0);
  for (guint r = 0; r < 4; r++)
    sum += model_plan_state_bytes (p, r);
  STEPSIM_ASSERT_REL (sum, all, 1e-9);
  /* the first and last stages carry the embedding and the head: heavier than the middle */
  CU_ASSERT (model_plan_state_bytes (p, 0) > model_plan_state_bytes (p, 1));
  CU_ASSERT (model_plan_state_bytes (p, 3) > model_plan_state_bytes (p, 1));
}

/* The plan of equal_stage_arch under FSDP full sharding over pp 2 × dp 2, GA 4, with
 * schedule `kind` (v virtual stages) and fsdp_end_units `ends` (new; never NULL). */
static ModelPlan *
fsdp_pipeline (ModelPpScheduleKind kind, guint v, gboolean ends)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 2, kind, v);
  par.mode = MODEL_DP_FSDP_FULL_SHARD;
  st.framework.fsdp_end_units = ends;
  ModelPlan *p = model_plan_new (&a, &st, &par, NULL);
  g_assert (p != NULL);
  return p;
}

/* FSDP under a pipeline: a unit held from the forward to the backward is gathered once
 * while any micro-batch in flight holds it (FSDP unshards a unit once; a second unshard is a
 * no-op). pp 2 × dp 2, 1F1B, GA 4: stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, so some micro-batch
 * holds the root unit (embedding, final norm, head) from F0 to B3: one gather on rank 0
 * (one a micro-batch, four, each held to its backward, before), whose buffer the last
 * embedding backward frees. With fsdp_end_units the embedding unit is resharded after each
 * forward: one gather per forward and per backward, eight. */
static void
test_fsdp_root_once (void)
{
  g_autoptr (ModelPlan) p = fsdp_pipeline (MODEL_PP_1F1B, 1, FALSE);
  CU_ASSERT_EQUAL (count_tasks (p, 0, "all_gather params root", NULL), 1);
  guint gather = G_MAXUINT, last_embed = G_MAXUINT;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank == 0 && g_str_has_prefix (t->label, "all_gather params root"))
        gather = i;
      if (t->rank == 0 && g_str_has_prefix (t->label, "bwd embed"))
        last_embed = i;
    }
  CU_ASSERT_FATAL (gather != G_MAXUINT && last_embed != G_MAXUINT);
  const ModelTask *g = model_plan_task (p, gather), *e = model_plan_task (p, last_embed);
  guint handle = 0, frees = 0;
  for (guint i = 0; i < g->n_effects; i++)
    if (model_plan_effect (p, g->first_effect + i)->bytes > 0)
      handle = model_plan_effect (p, g->first_effect + i)->handle;
  for (guint i = 0; i < e->n_effects; i++)
    frees += model_plan_effect (p, e->first_effect + i)->bytes < 0
             && model_plan_effect (p, e->first_effect + i)->handle == handle;
  CU_ASSERT (handle != 0 && frees == 1);
  g_autoptr (ModelPlan) q = fsdp_pipeline (MODEL_PP_1F1B, 1, TRUE);
  CU_ASSERT_EQUAL (count_tasks (q, 0, "all_gather params embed", NULL), 8);
  CU_ASSERT_EQUAL (count_tasks (q, 0, "all_gather params root", NULL), 0);
}

/* FSDP under an interleaved pipeline: a micro-batch holding the root unit in its first chunk
 * (the embedding's, virtual stage 0 on rank 0) runs the forward of its second chunk (virtual
 * stage 2, on rank 0 too) while it holds it; the second chunk holds nothing of its own and
 * keeps the first's hold (an assertion in forward_begin aborted). pp 2 × dp 2, v 2, GA 4:
 * one root gather on rank 0 (embedding) and one a micro-batch on rank 2, pipeline rank 1
 * (head, virtual stage 3, whose backward follows its forward); with fsdp_end_units the
 * embedding gathered for each forward and each backward, eight, and the head once a
 * micro-batch, four. */
static void
test_fsdp_root_interleaved (void)
{
  g_autoptr (ModelPlan) p = fsdp_pipeline (MODEL_PP_INTERLEAVED, 2, FALSE);
  CU_ASSERT_EQUAL (count_tasks (p, 0, "all_gather params root", NULL), 1);
  CU_ASSERT_EQUAL (count_tasks (p, 2, "all_gather params root", NULL), 4);
  g_autoptr (ModelPlan) q = fsdp_pipeline (MODEL_PP_INTERLEAVED, 2, TRUE);
  CU_ASSERT_EQUAL (count_tasks (q, 0, "all_gather params embed", NULL), 8);
  CU_ASSERT_EQUAL (count_tasks (q, 2, "all_gather params head", NULL), 4);
  CU_ASSERT_EQUAL (count_tasks (q, 0, "all_gather params root", NULL), 0);
}

/* B of the weights global `rank` holds from time 0 with rotary tables `table` less without. */
static double
rope_on_rank (ModelRopeTable table, guint rank)
{
  ModelArch a = llama_like (1024, 8, 8, 8, 128, 4096, 32000, 4096);
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 4, MODEL_PP_1F1B, 1);
  double w[2];
  for (guint i = 0; i < 2; i++)
    {
      st.framework.rope_table = i == 0 ? MODEL_ROPE_TABLE_NONE : table;
      g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
      g_assert (p != NULL);
      w[i] = model_plan_allocation (p, model_plan_initial_handle (p, rank, MODEL_MEM_WEIGHTS))
               ->bytes;
    }
  return w[1] - w[0];
}

/* The rotary tables on a pipeline stage (8 layers over pp 4: 2 a stage; seq_len 512, 64
 * rotary pairs): one model-wide table is whole on every stage, 512 × 64 × 8 = 262,144 B
 * (torchtitan's stage split deep-copies the model with its freqs_cis buffer); per-layer
 * tables are the stage's two, 2 × 262,144 = 524,288 B, where a stage's share of the states
 * would give a middle stage 8 × 262,144 × its parameter share. */
static void
test_stage_rope_tables (void)
{
  for (guint r = 0; r < 4; r++)
    {
      CU_ASSERT_EQUAL (rope_on_rank (MODEL_ROPE_TABLE_SEQ_LEN, r), 262144.0);
      CU_ASSERT_EQUAL (rope_on_rank (MODEL_ROPE_TABLE_PER_LAYER, r), 524288.0);
    }
}

/* B of the workspace `rank` holds from time 0 (its initial allocation; handle 0: none). */
static double
initial_workspace (const ModelPlan *p, guint rank)
{
  guint h = model_plan_initial_handle (p, rank, MODEL_MEM_WORKSPACE);
  return h > 0 ? model_plan_allocation (p, h)->bytes : 0;
}

/* Megatron's dummy weight gradients (Transformer Engine get_dummy_wgrad, one cached empty
 * tensor per distinct weight shape, plan_state.c): a Llama-like model of h 1024, 8 layers,
 * a = k = 8 heads of 128, i 4096, V 32000 (a multiple of 128: no padding), bf16, pp 4 (two
 * identical layers a stage). Megatron's modules of a layer, as (out, in): linear_qkv
 * ((a + 2k)·d = 3072, 1024) — q, k and v fused —, linear_proj (1024, 1024), linear_fc1
 * (2i = 8192, 1024) — gate and up fused —, linear_fc2 (1024, 4096): 1024 · (3072 + 1024 +
 * 8192 + 4096) = 16,777,216 elements, × 2 B, once whatever the stage's layer count (one
 * buffer per shape). The last stage adds the output layer (32000, 1024): 32,768,000
 * elements more. tp 2 halves every module (column: rows, row: columns; the vocabulary
 * 32000 stays a multiple of 128·2). Without the profile's flag, none. */
static void
test_wgrad_dummy (void)
{
  ModelArch a = llama_like (1024, 8, 8, 8, 128, 4096, 32000, 4096);
  ModelStack st = pp_stack (4);
  ModelParallel par = pp_par (4, 4, MODEL_PP_1F1B, 1);
  st.framework.main_grad_fp32 = TRUE;
  st.framework.wgrad_dummy = FALSE;
  g_autoptr (ModelPlan) off = model_plan_new (&a, &st, &par, NULL);
  st.framework.wgrad_dummy = TRUE;
  g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (off);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double layer = 1024.0 * (3072 + 1024 + 8192 + 4096) * 2, head = 32000.0 * 1024 * 2;
  for (guint r = 0; r < 4; r++)
    STEPSIM_ASSERT_REL (initial_workspace (p, r) - initial_workspace (off, r),
                        layer + (r == 3 ? head : 0), 1e-12);
  ModelParallel tp = pp_par (8, 4, MODEL_PP_1F1B, 1);
  tp.tp = 2;
  g_autoptr (ModelPlan) half = model_plan_new (&a, &st, &tp, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (half);
  STEPSIM_ASSERT_REL (initial_workspace (half, 7) - initial_workspace (off, 3),
                      (layer + head) / 2, 1e-12);
  /* gradients in the parameters' dtype (no fp32 main_grad): no fused accumulation */
  st.framework.main_grad_fp32 = FALSE;
  g_autoptr (ModelPlan) plain = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plain);
  CU_ASSERT_DOUBLE_EQUAL (initial_workspace (plain, 3), initial_workspace (off, 3), 0);
}

/* Tied embeddings under pp: the first and last stages hold the two copies of the embedding
 * matrix and all-reduce their gradients after the flush, before the optimizer step
 * (Megatron finalize_model_grads.py _allreduce_word_embedding_grads): one two-rank
 * all-reduce of V·h gradient elements (tp 1) on ranks 0 and p − 1, none on the middle
 * stages, none without tying. */
static void
test_tied_embedding_all_reduce (void)
{
  for (int tied = 0; tied < 2; tied++)
    {
      ModelArch a = llama_like (1024, 8, 8, 8, 128, 4096, 32000, 4096);
      a.tied_embeddings = tied;
      ModelStack st = pp_stack (4);
      ModelParallel par = pp_par (4, 4, MODEL_PP_1F1B, 1);
      g_autoptr (ModelPlan) p = model_plan_new (&a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint found[4] = { 0 }, opt_waits = 0;
      gint index = -1;
      for (guint i = 0; i < model_plan_n_tasks (p); i++)
        {
          const ModelTask *t = model_plan_task (p, i);
          if (g_strcmp0 (t->label, "all-reduce tied embedding grads") == 0)
            {
              found[t->rank]++;
              const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
              CU_ASSERT_EQUAL (c->kind, HW_COLLECTIVE_ALL_REDUCE);
              CU_ASSERT_EQUAL (c->n_ranks, 2);
              CU_ASSERT (c->ranks[0] == 0 && c->ranks[1] == 3);
              double per = t->bytes / (32000.0 * 1024); /* B a gradient element: bf16 or fp32 */
              CU_ASSERT (per == 2 || per == 4);
              CU_ASSERT (index < 0 || index == t->collective); /* one instance, both ends */
              index = t->collective;
            }
          if (t->kind == MODEL_TASK_KIND_OPTIMIZER && t->rank == 0)
            for (guint k = 0; k < t->n_deps; k++)
              {
                const ModelTask *d = model_plan_task (p, model_plan_dep (p, t->first_dep + k));
                opt_waits += g_strcmp0 (d->label, "all-reduce tied embedding grads") == 0;
              }
        }
      CU_ASSERT_EQUAL (found[0], tied ? 1 : 0);
      CU_ASSERT_EQUAL (found[3], tied ? 1 : 0);
      CU_ASSERT_EQUAL (found[1] + found[2], 0);
      CU_ASSERT_EQUAL (opt_waits, tied ? 1 : 0);
    }
}

static void
expect_error (const ModelArch *a, const ModelStack *st, const ModelParallel *par,
              const char *needle)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, st, par, &e);
  CU_ASSERT_PTR_NULL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  if (strstr (e->message, needle) == NULL)
    g_printerr ("\nexpected '%s' in: %s\n", needle, e->message);
  CU_ASSERT (strstr (e->message, needle) != NULL);
}

static void
test_bad_settings (void)
{
  ModelArch a = equal_stage_arch ();
  ModelStack st = pp_stack (8);
  /* 8 layers over 3 stages (on 3 GPUs) without an explicit split */
  ModelParallel par = pp_par (3, 3, MODEL_PP_1F1B, 1);
  expect_error (&a, &st, &par, "layers_per_stage");
  par.pp_layers_per_stage[0] = 3, par.pp_layers_per_stage[1] = 3, par.pp_layers_per_stage[2] = 2;
  par.pp_n_layers_per_stage = 3;
  g_autoptr (ModelPlan) ok = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL (ok);
  /* interleaving with m not a multiple of p (Megatron raises) */
  st.grad_accum = 6;
  par = pp_par (4, 4, MODEL_PP_INTERLEAVED, 2);
  expect_error (&a, &st, &par, "grad_accum");
  /* DeepSpeed's pipeline engine refuses ZeRO-2/3; torchtitan composes FSDP with PP */
  st.grad_accum = 8;
  par = pp_par (8, 4, MODEL_PP_1F1B, 1);
  par.mode = MODEL_DP_ZERO2;
  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_DEEPSPEED);
  expect_error (&a, &st, &par, "deepspeed");
  par.mode = MODEL_DP_FSDP_FULL_SHARD;
  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_TORCHTITAN);
  g_autoptr (ModelPlan) fsdp = model_plan_new (&a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL (fsdp);
  if (fsdp != NULL)
    {
      PpRun o = replay (fsdp);
      CU_ASSERT_EQUAL (o.n_done, o.n_tasks);
    }
  /* pipeline keys without stages */
  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_CUSTOM);
  par = pp_par (1, 1, MODEL_PP_1F1B, 2);
  par.mode = MODEL_DP_DDP;
  expect_error (&a, &st, &par, "virtual_stages");
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "GPipe, 1F1B: step (m + p - 1)(t_f + t_b), bubble (p - 1)/(m + p - 1), rank 0 idle "
      "(p - 1)(t_f + t_b)",
      test_gpipe_1f1b_step },
    { "interleaved: bubble / v", test_interleaved_step },
    { "ZB-H1 below 1F1B", test_zb_h1_below_1f1b },
    { "ZB-H1: B holds each linear's input and output gradient until W",
      test_zb_h1_holds_w_inputs },
    { "ZB-H1 under LoRA: frozen GEMMs and head stay in B", test_zb_h1_lora_frozen },
    { "in-flight activations: GPipe m, 1F1B p", test_in_flight_activations },
    { "stage layers and P2P transfers", test_stage_layers_and_p2p },
    { "SP backward all-gather waits for the stage's output gradient", test_sp_backward_waits_for_grad },
    { "model states per stage", test_stage_states },
    { "rotary tables per stage", test_stage_rope_tables },
    { "FSDP under a pipeline: the root unit gathered once while held", test_fsdp_root_once },
    { "FSDP under an interleaved pipeline: a chunk keeps the root its micro-batch holds",
      test_fsdp_root_interleaved },
    { "Megatron's dummy weight gradients: one per weight shape a stage holds",
      test_wgrad_dummy },
    { "tied embeddings: first and last stages all-reduce their gradients", test_tied_embedding_all_reduce },
    { "bad pp settings", test_bad_settings },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_pp", tests);
}
