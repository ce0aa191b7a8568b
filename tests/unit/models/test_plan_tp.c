/* tests/unit/models/test_plan_tp.c — tensor (and sequence) parallelism through the plan
 * (models/plan/plan_tp.c): a rank's model states, its tp collectives per layer, its saved
 * activations (Korthikanti et al. 2022 Table 2), the data-parallel group beside tp, and the
 * MFU numerator. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/plan/plan.h"
#include "models/plan/plan_offload.h"
#include "tests/testlib.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/cost_fixture.h"

static ModelParallel
tp_par (guint gpus, guint tp, gboolean sp)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.tp = tp;
  par.sequence_parallel = sp;
  return par;
}

/* GPT settings of Korthikanti Table 2: fp16, eager attention, dropout 0.1. */
static ModelStack
gpt_stack (guint64 b, guint64 s, ModelCheckpointing ckpt)
{
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_FP16_MIXED;
  st.flash_attention = FALSE;
  st.dropout = 0.1;
  st.micro_batch = b;
  st.seq_len = s;
  st.checkpointing = ckpt;
  return st;
}

/* Llama-2-7B (h 4096, L 32, a = k = 32, i 11008, V 32000, untied) at tp 2 and 4: each rank
 * holds 1/tp of the q, k, v, o and gate, up, down matrices (4h² + 3hi per layer), both norms
 * whole (2h per layer, h for the final one), and 1/tp of the embedding and the LM head over
 * the vocabulary padded to a multiple of 128·tp: 32000 at tp 2 (125 × 256), 32256 at tp 4
 * (63 × 512). Weights at the stack's weight bytes, master weights and both Adam moments at 4 B
 * (bf16_mixed, model_stack_*_bytes). */
static void
test_llama2_7b_rank_states (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.micro_batch = 1;
  st.seq_len = 512;
  const double h = 4096, L = 32, i = 11008;
  const struct
  {
    guint tp;
    double vocab;
  } cases[] = { { 2, 32000 }, { 4, 32256 } };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      double t = cases[c].tp;
      double elems = L * ((4 * h * h + 3 * h * i) / t + 2 * h) + 2 * cases[c].vocab * h / t + h;
      ModelParallel par = tp_par (cases[c].tp, cases[c].tp, FALSE);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS),
                          elems * model_stack_weight_bytes (&st), 1e-12);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS), 4 * elems, 1e-12);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE),
                          elems * model_stack_optimizer_bytes (&st), 1e-12);
    }
}

/* The tp collectives of rank 0's layer 1, micro-batch 0 (tasks on the tp stream): count, and
 * each moving X = b·s·h·e (Megatron; tensor_parallel.h model_tp_layer_comms):
 *   no SP        forward 2 all-reduces (g after attention out, MLP down), backward 2 (f)
 *   SP           forward 4 (all-gather + reduce-scatter per block), backward 6 (per block the
 *                output gradient's all-gather, the input re-gather, the input gradient's
 *                reduce-scatter)
 *   no SP, full  + the forward's 2 again in the recompute
 * Every one of them is a collective over the 2 ranks of the tp group. */
static void
test_layer_collectives (void)
{
  ModelArch gpt = gpt_like (256, 4, 3, 1024);
  const struct
  {
    gboolean sp;
    ModelCheckpointing ckpt;
    guint n;
    HwCollectiveKind first;
  } cases[] = {
    { FALSE, MODEL_CHECKPOINTING_NONE, 4, HW_COLLECTIVE_ALL_REDUCE },
    { TRUE, MODEL_CHECKPOINTING_NONE, 10, HW_COLLECTIVE_ALL_GATHER },
    { FALSE, MODEL_CHECKPOINTING_FULL, 6, HW_COLLECTIVE_ALL_REDUCE },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      ModelStack st = gpt_stack (2, 128, cases[c].ckpt);
      ModelParallel par = tp_par (2, 2, cases[c].sp);
      g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint n = 0;
      gboolean first = TRUE;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank != 0 || t->stream != MODEL_STREAM_TP || t->layer != 1 || t->micro_batch != 0)
            continue;
          n++;
          CU_ASSERT_EQUAL (t->kind, MODEL_TASK_KIND_COLLECTIVE);
          CU_ASSERT_EQUAL (t->bytes, 2.0 * 128 * 256 * 2);
          const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
          CU_ASSERT_EQUAL (col->n_ranks, 2);
          if (first)
            CU_ASSERT_EQUAL (col->kind, cases[c].first);
          first = FALSE;
        }
      CU_ASSERT_EQUAL (n, cases[c].n);
    }
}

/* Korthikanti Table 2 through the plan, the 22B model's layer (h 6144, a 64, s 2048, b 1)
 * at t = 8 on 8 GPUs: TP sbh(10 + 24/t + 5as/(ht)); TP + SP sbh(34 + 5as/h)/t; TP +
 * selective sbh(10 + 24/t); TP + SP + selective 34sbh/t; full recompute 2sbh, with SP
 * 2sbh/t (the checkpointed input is the sequence shard). Exact: every term is an integer
 * below 2^53 divisible by 8. */
static void
test_activations_table2 (void)
{
  ModelArch gpt = gpt_like (6144, 64, 2, 51200);
  const double t = 8, s = 2048, b = 1, h = 6144, a = 64, sbh = s * b * h, as2b = a * s * s * b;
  const struct
  {
    gboolean sp;
    ModelCheckpointing ckpt;
    double want;
  } cases[] = {
    { FALSE, MODEL_CHECKPOINTING_NONE, 10 * sbh + 24 * sbh / t + 5 * as2b / t },
    { TRUE, MODEL_CHECKPOINTING_NONE, (34 * sbh + 5 * as2b) / t },
    { FALSE, MODEL_CHECKPOINTING_SELECTIVE, 10 * sbh + 24 * sbh / t },
    { TRUE, MODEL_CHECKPOINTING_SELECTIVE, 34 * sbh / t },
    { FALSE, MODEL_CHECKPOINTING_FULL, 2 * sbh },
    { TRUE, MODEL_CHECKPOINTING_FULL, 2 * sbh / t },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      ModelStack st = gpt_stack (1, 2048, cases[c].ckpt);
      ModelParallel par = tp_par (8, 8, cases[c].sp);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      CU_ASSERT_EQUAL (plan_scan_layer_activations (p), cases[c].want);
    }
}

/* Sequence parallelism's kernels (Korthikanti §4.2.2): the point-wise ops outside the
 * tp-parallel blocks — both LayerNorms, both residual dropouts and both residual adds —
 * run on a rank's s/t tokens, every other kernel as without SP. So for the layer's
 * forward task on rank 0, with S the HBM bytes of those six kernels without SP:
 * bytes(SP) = bytes(no SP) − (1 − 1/t)·S, the GEMMs' FLOPs equal, and the backward task
 * (the same ops mirrored) shrinks in the same proportion of its own such kernels. */
static const ModelTask *
find_task (const ModelPlan *p, const char *label)
{
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    if (model_plan_task (p, k)->rank == 0 && strcmp (model_plan_task (p, k)->label, label) == 0)
      return model_plan_task (p, k);
  g_assert_not_reached ();
}

static double
sequence_kernel_bytes (const ModelPlan *p, const ModelTask *t)
{
  double s = 0;
  for (guint i = 0; i < t->n_kernels; i++)
    {
      const ModelKernel *k = model_plan_kernel (p, t->first_kernel + i);
      if (g_str_has_prefix (k->op.name, "norm") || g_str_has_prefix (k->op.name, "resid"))
        s += k->op.bytes;
    }
  return s;
}

static void
test_sp_sequence_kernels (void)
{
  ModelArch gpt = gpt_like (512, 8, 2, 1024);
  ModelStack st = gpt_stack (2, 256, MODEL_CHECKPOINTING_NONE);
  const double t = 4;
  ModelParallel tp = tp_par (4, 4, FALSE), sp = tp_par (4, 4, TRUE);
  g_autoptr (ModelPlan) a = model_plan_new (&gpt, &st, &tp, NULL);
  g_autoptr (ModelPlan) b = model_plan_new (&gpt, &st, &sp, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  const char *labels[] = { "fwd L0 mb0", "bwd L0 mb0" };
  for (gsize i = 0; i < G_N_ELEMENTS (labels); i++)
    {
      const ModelTask *x = find_task (a, labels[i]), *y = find_task (b, labels[i]);
      double S = sequence_kernel_bytes (a, x);
      CU_ASSERT (S > 0);
      CU_ASSERT_EQUAL (x->n_kernels, y->n_kernels);
      STEPSIM_ASSERT_REL (y->bytes, x->bytes - (1 - 1 / t) * S, 1e-12);
      STEPSIM_ASSERT_REL (sequence_kernel_bytes (b, y), S / t, 1e-12);
      CU_ASSERT_EQUAL (y->flops, x->flops);
    }
}

/* tp 2 × dp 2 on 4 GPUs (DDP): the gradient all-reduce runs over the data-parallel group
 * only — ranks {0, 2} and {1, 3} (tp innermost, mesh.h) — never over the tp ranks, and moves
 * a rank's TP-local gradients. The tp collectives span {0, 1} and {2, 3}. */
static void
test_dp_group_beside_tp (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = gpt_stack (2, 128, MODEL_CHECKPOINTING_NONE);
  ModelParallel par = tp_par (4, 2, FALSE);
  g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint dp_seen = 0, tp_seen = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->collective < 0)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      CU_ASSERT_EQUAL_FATAL (col->n_ranks, 2);
      guint stride = col->ranks[1] - col->ranks[0];
      gboolean on_tp = t->stream == MODEL_STREAM_TP;
      CU_ASSERT_EQUAL (stride, on_tp ? 1u : 2u);
      tp_seen += on_tp;
      dp_seen += !on_tp;
    }
  CU_ASSERT (dp_seen > 0);
  CU_ASSERT (tp_seen > 0);
}

/* MFU's numerator (Korthikanti §6): a rank's model FLOPs are its replica's whole-model
 * FLOPs / tp, so Σ over ranks = dp × one replica: the tp = 8 plan on 8 GPUs carries, in
 * all, exactly the model FLOPs of the same step on one GPU. Hardware FLOPs per rank are the
 * rank's kernels: about 1/8 of the single GPU's (the per-rank GEMMs; replicated norms carry
 * no FLOPs, the vocabulary is not padded at 51200). */
static void
test_model_flops (void)
{
  ModelArch gpt = gpt_like (1024, 16, 2, 51200);
  ModelStack st = gpt_stack (1, 512, MODEL_CHECKPOINTING_FULL);
  ModelParallel par = tp_par (8, 8, FALSE);
  g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
  g_autoptr (ModelPlan) one = model_plan_new (&gpt, &st, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (one);
  STEPSIM_ASSERT_REL (8 * model_plan_model_flops (p), model_plan_model_flops (one), 1e-12);
  STEPSIM_ASSERT_REL (8 * model_plan_hardware_flops (p), model_plan_hardware_flops (one), 1e-9);
  STEPSIM_ASSERT_REL (8 * model_plan_tokens_per_rank (p), model_plan_tokens_per_rank (one), 1e-12);
}

/* QLoRA at tp 2 on Llama-2-7B: every NF4 projection splits in two, and its constants with
 * it (tensor_parallel.h model_tp_layout_constant_bytes), so a rank holds exactly half the
 * quantization category: 102,768,640 / 2 B with double quantization (test_inventory's
 * derivation: 32 × 3,211,520 B), 404,750,336 / 2 without — not the weights' fraction,
 * which the replicated norms lift above 1/2. */
static void
test_qlora_constants_per_rank (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  for (int dq = 0; dq < 2; dq++)
    {
      ModelStack st;
      model_stack_init_defaults (&st);
      st.precision = MODEL_PRECISION_BF16;
      st.micro_batch = 1;
      st.seq_len = 512;
      st.finetune.method = MODEL_FINETUNE_QLORA;
      st.finetune.rank = 16;
      st.finetune.double_quant = dq;
      ModelParallel par = tp_par (2, 2, FALSE);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      g_assert_no_error (error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      CU_ASSERT_DOUBLE_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_QUANTIZATION),
                              (dq ? 102768640.0 : 404750336.0) / 2, 0);
    }
}

/* ZeRO-3 with the optimizer and the parameters offloaded to the CPU (DeepSpeed ZeRO-Offload /
 * Infinity, stage3.py): each rank keeps in host DRAM its ZeRO partition of its tp rank's
 * TP-local parameters — fp32 master (4 B), both fp32 Adam moments (8 B), the fp32 gradient
 * partition (4 B) and the bf16 parameter shard (2 B): 18 B × elems(tp)/dp. Llama-2-7B on 8
 * GPUs: tp 1 holds all Ψ = 6,738,415,616 elements, dp 8; tp 2 holds elems(2) (the formula of
 * test_llama2_7b_rank_states, vocabulary 32000), dp 4. So host bytes per GPU stay about
 * Ψ/8 whatever tp (they would double with tp if the dp shard were of the whole model). */
static void
test_offloaded_host_states_per_rank (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.micro_batch = 1;
  st.seq_len = 512;
  st.offload.optimizer = MODEL_OFFLOAD_CPU;
  st.offload.parameters = MODEL_OFFLOAD_CPU;
  const double h = 4096, L = 32, i = 11008, V = 32000, per = 4 + 8 + 4 + 2;
  const struct
  {
    guint tp;
    double elems;
  } cases[] = {
    { 1, 6738415616.0 },
    { 2, L * ((4 * h * h + 3 * h * i) / 2 + 2 * h) + 2 * V * h / 2 + h },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      ModelParallel par = tp_par (8, cases[c].tp, FALSE);
      par.mode = MODEL_DP_ZERO3;
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      g_assert_no_error (error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      double dp = 8.0 / cases[c].tp;
      STEPSIM_ASSERT_REL (model_plan_offloaded_state_bytes (p, 0, MODEL_MEM_ON_HOST),
                          per * cases[c].elems / dp, 1e-12);
    }
}

/* LoRA under tp 8 + SP with op-level selective checkpointing (torchtitan's policy keeps every
 * GEMM output): the adapters' B·(A·x) are split as their base's output (column-parallel q, k,
 * v, gate, up: the rank's output features; row-parallel o, down: the sequence shard under
 * SP). Llama-2-7B, b 2, s 4096: counted whole, the 7 B·(A·x) alone (2·T·(4h + 3i) B per
 * layer, 0.81 GB) exceed all a layer keeps without checkpointing at tp 8; sharded, the
 * policy keeps at most no checkpointing's bytes, as at tp 1. */
static void
test_lora_selective_op_sharded (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  double act[2];
  const ModelCheckpointing ck[2] = { MODEL_CHECKPOINTING_NONE, MODEL_CHECKPOINTING_SELECTIVE_OP };
  for (int c = 0; c < 2; c++)
    {
      ModelStack st;
      model_stack_init_defaults (&st);
      st.precision = MODEL_PRECISION_BF16_MIXED;
      st.micro_batch = 2;
      st.seq_len = 4096;
      st.checkpointing = ck[c];
      st.finetune.method = MODEL_FINETUNE_LORA;
      st.finetune.rank = 16;
      ModelParallel par = tp_par (8, 8, TRUE);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      g_assert_no_error (error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      act[c] = plan_scan_layer_activations (p);
    }
  CU_ASSERT (act[1] > 0);
  CU_ASSERT (act[1] <= act[0]);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "Llama-2-7B model states per rank at tp 2 and 4", test_llama2_7b_rank_states },
    { "tp collectives per layer: count, kind and bytes", test_layer_collectives },
    { "layer activations per rank = Korthikanti Table 2", test_activations_table2 },
    { "SP: the sequence region's point-wise kernels on s/t tokens", test_sp_sequence_kernels },
    { "data-parallel group beside tp", test_dp_group_beside_tp },
    { "model FLOPs: the whole model over the ranks", test_model_flops },
    { "QLoRA constants per rank at tp 2", test_qlora_constants_per_rank },
    { "CPU-offloaded ZeRO-3 states per rank: the tp shard over dp", test_offloaded_host_states_per_rank },
    { "LoRA + selective_op under tp + SP: adapters' outputs sharded", test_lora_selective_op_sharded },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_tp", tests);
}
