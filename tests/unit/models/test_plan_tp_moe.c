/* tests/unit/models/test_plan_tp_moe.c — MoE models under tensor and sequence parallelism
 * through the plan (models/plan/plan_tp.c): a MoE layer's shared expert (Megatron-LM
 * megatron/core/transformer/moe/shared_experts.py SharedExpertMLP, an MLP on the tp group),
 * Qwen1.5-MoE-A2.7B at tp 2 + SP, ep 4 on one 8-GPU node; and Multi-head Latent Attention
 * (multi_latent_attention.py MLASelfAttention), DeepSeek-V2-Lite likewise. Each: a rank's
 * weights by bucket, the per-rank GEMMs, the tp collectives per layer and micro-batch, the
 * layer's saved activations against tp 1. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/plan/plan.h"
#include "tests/testlib.h"
#include "tests/unit/models/moe_fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/shipped.h"

/* Qwen1.5-MoE-A2.7B (models/configs/qwen1.5-moe-a2.7b.json): h 2048, 24 layers, 16 heads of
 * 128 (k = 16), q/k/v biased, 60 SwiGLU experts of i 1408 top-4, one shared SwiGLU expert of
 * 5632 with its sigmoid gate (1 × h), V 151936 untied. */
static const double H = 2048, L = 24, E = 60, I = 1408, S = 5632;

static ModelParallel
moe_par (guint gpus, guint tp, guint ep)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.tp = tp;
  par.sequence_parallel = tp > 1;
  par.ep = ep;
  return par;
}


static ModelPlan *
model_plan (const char *model, guint gpus, guint tp, guint ep, guint64 s)
{
  g_autoptr (ModelArch) a = shipped (model);
  ModelStack st = bf16_stack (s);
  ModelParallel par = moe_par (gpus, tp, ep);
  g_autoptr (GError) error = NULL;
  ModelPlan *p = model_plan_new (a, &st, &par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  return p;
}

static ModelPlan *
qwen_plan (guint gpus, guint tp, guint ep, guint64 s)
{
  return model_plan ("qwen1.5-moe-a2.7b", gpus, tp, ep, s);
}

static ModelPlan *
deepseek_plan (guint gpus, guint tp, guint ep, guint64 s)
{
  return model_plan ("deepseek-v2-lite", gpus, tp, ep, s);
}

/* A rank's weights at tp 2 (SP), ep 4 on 8 GPUs, C14's buckets (Megatron-LM #4050):
 *   ÷ tp     attention q, k, v (h × h each, with their column-parallel biases h) and o
 *            (h × h): (4h² + 3h)/2 a layer; the shared expert's gate, up (column) and down
 *            (row) 3·h·S/2 a layer (SharedExpertMLP's fc1/fc2 on the tp group); embedding
 *            and head over V padded to a multiple of 128·2: 152064 = 594·256, 2·152064·h/2
 *   whole    both RMSNorms 2h and the router E·h a layer, the shared expert's sigmoid gate
 *            weight h a layer (replicated, shared_experts.py gate_weight), the final norm h
 *   ÷ ep·etp the routed experts 3·h·I·E/4 a layer
 * (4·2048² + 3·2048)/2 = 8,391,680; 3·2048·5632/2 = 17,301,504; 2·2048 + 60·2048 + 2048 =
 * 129,024; 3·2048·1408·60/4 = 129,761,280: 155,583,488 a layer, 3,734,003,712 for 24;
 * + 152064·2048 = 311,427,072 + 2048: 4,045,432,832 weights, 2 B each in bf16 and 4 B
 * master weights (DDP: nothing sharded over dp). */
static void
test_rank_weights (void)
{
  g_autoptr (ModelPlan) p = qwen_plan (8, 2, 4, 512);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double layer = (4 * H * H + 3 * H) / 2 + 3 * H * S / 2 + (2 * H + E * H + H)
                 + 3 * H * I * E / 4;
  double elems = L * layer + 2 * 152064 * H / 2 + H;
  CU_ASSERT_EQUAL (elems, 4045432832.0);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * elems, 1e-12);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS), 4 * elems, 1e-12);
}

/* A GEMM one rank runs: op name, m × k → n. */
typedef struct
{
  const char *name;
  double m, n, k;
} Gemm;

/* Checks rank 0's GEMMs `want` in layer `layer`'s first forward of plan `p` (tp 2): each
 * runs once with shape m × k → n and 2·m·n·k FLOP, half the FLOPs of the same GEMM in `q`
 * (tp 1 on half the GPUs, the same ep grid); with `bwd`, also its backward (dgrad + wgrad,
 * twice the forward's FLOPs), again half q's. */
static void
check_gemms (const ModelPlan *p, const ModelPlan *q, guint layer, const Gemm *want, gsize n,
             gboolean bwd)
{
  g_autofree char *fwd_label = g_strdup_printf ("fwd L%u mb0", layer);
  g_autofree char *bwd_label = g_strdup_printf ("bwd L%u mb0", layer);
  for (gsize c = 0; c < n; c++)
    {
      const ModelOp *op[2], *one[2];
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, fwd_label, want[c].name, op, 2), 1);
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (q, fwd_label, want[c].name, one, 2), 1);
      CU_ASSERT_EQUAL (op[0]->shape.m, want[c].m);
      CU_ASSERT_EQUAL (op[0]->shape.n, want[c].n);
      CU_ASSERT_EQUAL (op[0]->shape.k, want[c].k);
      STEPSIM_ASSERT_REL (op[0]->flops, 2 * want[c].m * want[c].n * want[c].k, 1e-12);
      STEPSIM_ASSERT_REL (op[0]->flops, one[0]->flops / 2, 1e-12);
      if (!bwd)
        continue;
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, bwd_label, want[c].name, op, 2), 1);
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (q, bwd_label, want[c].name, one, 2), 1);
      STEPSIM_ASSERT_REL (op[0]->flops, 2 * 2 * want[c].m * want[c].n * want[c].k, 1e-12);
      STEPSIM_ASSERT_REL (op[0]->flops, one[0]->flops / 2, 1e-12);
    }
}

/* The shared expert's GEMMs on one rank (s = 4096, b = 1, tp 2 SP): fc1 reads the
 * all-gathered sequence, so gate and up are m 4096 × k 2048 → n S/2 = 2816 and down
 * m 4096 × k 2816 → n 2048 (Shoeybi §3: the dense MLP's split); the sigmoid gate scores
 * the rank's 2048 tokens: m 2048 × k 2048 → n 1, 2·2048·2048 FLOP forward, twice that
 * backward (dgrad + wgrad). Every shared GEMM's FLOPs are half tp 1's (4 GPUs, same ep 4
 * grid). */
static void
test_shared_expert_gemms (void)
{
  g_autoptr (ModelPlan) p = qwen_plan (8, 2, 4, 4096);
  g_autoptr (ModelPlan) q = qwen_plan (4, 1, 4, 4096);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  static const Gemm want[] = {
    { "shared_gate", 4096, 2816, 2048 },
    { "shared_up", 4096, 2816, 2048 },
    { "shared_down", 4096, 2048, 2816 },
    { "shared_expert_gate", 2048, 1, 2048 },
  };
  check_gemms (p, q, 0, want, G_N_ELEMENTS (want), TRUE);
}

/* rank 0's tp collectives of layer 1, micro-batch 0 (tensor_parallel.h
 * model_tp_layer_comms), each X = b·s·h·e = 4096 · 2048 · 2 B over the 2 tp ranks: the
 * attention's 2 forward (all-gather, reduce-scatter) and 3 backward (output gradient
 * all-gather, input re-gather, input gradient reduce-scatter), and as many of the shared
 * expert's own (its fc1 gathers, its fc2 reduce-scatters: SharedExpertMLP without
 * --moe-shared-expert-overlap): 10, 6 all-gathers and 4 reduce-scatters, 5 of them the
 * shared expert's. Without a shared expert (the same model, shared_expert_size 0) the MoE
 * layer has only the attention's 5. */
static void
test_shared_expert_collectives (void)
{
  for (guint with = 0; with < 2; with++)
    {
      g_autoptr (ModelArch) a = shipped ("qwen1.5-moe-a2.7b");
      a->n_layers = 2;
      if (!with)
        a->shared_expert_size = 0, a->shared_expert_gate = FALSE;
      ModelStack st = bf16_stack (4096);
      ModelParallel par = moe_par (8, 2, 4);
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint n = 0, ag = 0, rs = 0, shared = 0;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank != 0 || t->stream != MODEL_STREAM_TP || t->layer != 1 || t->micro_batch != 0)
            continue;
          n++;
          STEPSIM_ASSERT_REL (t->bytes, 4096.0 * 2048 * 2, 1e-12);
          const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
          CU_ASSERT_EQUAL (c->n_ranks, 2);
          ag += c->kind == HW_COLLECTIVE_ALL_GATHER;
          rs += c->kind == HW_COLLECTIVE_REDUCE_SCATTER;
          shared += strstr (t->label, "shared") != NULL;
        }
      CU_ASSERT_EQUAL (n, with ? 10 : 5);
      CU_ASSERT_EQUAL (ag, with ? 6 : 3);
      CU_ASSERT_EQUAL (rs, with ? 4 : 2);
      CU_ASSERT_EQUAL (shared, with ? 5 : 0);
    }
}

/* Under tp 2 with SP every saved tensor of the layer is split in two (Korthikanti §4.2.2):
 * the sequence region's (norms, residuals, the router's, the shared expert's reduce-scattered
 * output, its gate's logit and score and their product) on s/2 tokens, the attention's
 * over 16/2 heads, the routed experts at half the rows (each rank routes its 2048 tokens),
 * and the shared expert's fc1 outputs, SwiGLU and fc2 input (graph_layer.c shared_gate,
 * shared_up, shared_silu, shared_product) at S/2 features of all 4096 tokens. So a rank
 * keeps exactly half of what tp 1 keeps on 4 GPUs (the same ep 4 grid, 4096 tokens a rank);
 * the shared expert's own tensors, 4 · e·s·S at tp 1, 2 · 2 B · 4096 · 5632 less. */
static void
test_layer_activations (void)
{
  g_autoptr (ModelPlan) p = qwen_plan (8, 2, 4, 4096);
  g_autoptr (ModelPlan) q = qwen_plan (4, 1, 4, 4096);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  double tp2 = plan_scan_layer_activations (p), tp1 = plan_scan_layer_activations (q);
  CU_ASSERT (tp1 > 4 * 2.0 * 4096 * S);
  STEPSIM_ASSERT_REL (tp2, tp1 / 2, 1e-12);
}

/* ---- MLA: DeepSeek-V2-Lite -------------------------------------------------------- */

/* DeepSeek-V2-Lite (h 2048, 27 layers — layer 0 dense, SwiGLU 10944 —, 16 heads, q_proj
 * h → 16·192, kv_a_proj_with_mqa h → 512 + 64, kv_b_proj 512 → 16·256, o_proj 16·128 → h;
 * 64 experts of 1408, 2 shared (2816 wide, ungated), V 102400 untied) at tp 2 + SP, ep 4 on
 * 8 GPUs, a rank's weights:
 *   attention ÷ tp on q_proj, kv_b_proj (column, by heads) and o_proj (row):
 *     (3072·2048 + 4096·512 + 2048·2048)/2 = 3,145,728 + 1,048,576 + 2,097,152; whole:
 *     kv_a_proj_with_mqa 576·2048 = 1,179,648 (TELinear 'duplicated'), kv_a_layernorm 512,
 *     the two RMSNorms 4096: 7,475,712 a layer, 201,844,224 for 27
 *   layer 0's dense MLP 3·2048·10944/2 = 33,619,968
 *   26 MoE layers: router 64·2048 = 131,072 whole, experts 3·2048·1408·64/4 = 138,412,032,
 *     shared 3·2048·2816/2 = 8,650,752: 147,193,856 a layer, 3,827,040,256
 *   embedding and head 2·102400·2048/2 (102400 = 400·256, no padding) = 209,715,200, final
 *     norm 2048
 * 4,272,221,696 weights (the whole model: 15,706,484,224). */
static void
test_mla_rank_weights (void)
{
  g_autoptr (ModelPlan) p = deepseek_plan (8, 2, 4, 512);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double attn = (3072.0 * 2048 + 4096.0 * 512 + 2048.0 * 2048) / 2 + 576.0 * 2048 + 512 + 2 * 2048;
  double moe = 64.0 * 2048 + 3.0 * 2048 * 1408 * 64 / 4 + 3.0 * 2048 * 2816 / 2;
  double elems = 27 * attn + 3.0 * 2048 * 10944 / 2 + 26 * moe + 102400.0 * 2048 + 2048;
  CU_ASSERT_EQUAL (elems, 4272221696.0);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * elems, 1e-12);
}

/* MLA's kernels on one rank (s = 4096, b = 1, tp 2 SP): the duplicated kv_a_proj_with_mqa
 * on the rank's 2048 tokens, m 2048 × k 2048 → n 576; the column-parallel q_proj and
 * kv_b_proj on all 4096 (their inputs all-gathered) over 8 heads, n 8·192 = 1536 and
 * 8·(128 + 128) = 2048; o_proj m 4096 × k 8·128 → n 2048; FlashAttention over 8 heads of
 * q·k width 192 (dn + dr) and value width 128: head_dim 192, half tp 1's FLOPs; the
 * kv_a_layernorm on the rank's tokens, half tp 1's bytes. */
static void
test_mla_kernels (void)
{
  g_autoptr (ModelPlan) p = deepseek_plan (8, 2, 4, 4096);
  g_autoptr (ModelPlan) q = deepseek_plan (4, 1, 4, 4096);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  static const Gemm want[] = {
    { "kv_a_proj_with_mqa", 2048, 576, 2048 },
    { "q_proj", 4096, 1536, 2048 },
    { "kv_b_proj", 4096, 2048, 512 },
    { "attn_out", 4096, 2048, 1024 },
  };
  check_gemms (p, q, 1, want, G_N_ELEMENTS (want), FALSE);
  const ModelOp *fa[2], *fa1[2], *ln[2], *ln1[2];
  CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, "fwd L1 mb0", "attention", fa, 2), 1);
  CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (q, "fwd L1 mb0", "attention", fa1, 2), 1);
  CU_ASSERT_EQUAL (fa[0]->shape.head_dim, 192);
  STEPSIM_ASSERT_REL (fa[0]->flops, fa1[0]->flops / 2, 1e-12);
  CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, "fwd L1 mb0", "kv_a_layernorm", ln, 2), 1);
  CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (q, "fwd L1 mb0", "kv_a_layernorm", ln1, 2), 1);
  STEPSIM_ASSERT_REL (ln[0]->bytes, ln1[0]->bytes / 2, 1e-12);
}

/* rank 0's tp collectives of layer 1, micro-batch 0, over the 2 tp ranks (tensor_parallel.h
 * model_tp_layer_comms; X = 4096 · 2048 · 2 B): MLA's forward all-gathers k_pe
 * (4096 · 64 · 2 = 524,288 B), q_proj's input X and kv_b_proj's latent (4096 · 512 · 2 =
 * 4,194,304 B), then reduce-scatters o_proj's X — no all-gather of the layer input, which
 * the duplicated down projection reads as the sequence shard; the shared expert's
 * all-gather and reduce-scatter X. Backward: the shared expert's 3 X, o_proj's gradient
 * all-gather X, per up projection a re-gather and a reduce-scatter of its input (X for
 * q_proj, 4,194,304 B for kv_b_proj), k_pe's reduce-scatter 524,288 B: 15 in all. */
static void
test_mla_collectives (void)
{
  g_autoptr (ModelArch) a = shipped ("deepseek-v2-lite");
  a->n_layers = 3;
  ModelStack st = bf16_stack (4096);
  ModelParallel par = moe_par (8, 2, 4);
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const double X = 4096.0 * 2048 * 2, KV = 4096.0 * 512 * 2, PE = 4096.0 * 64 * 2;
  const struct
  {
    HwCollectiveKind kind;
    double bytes;
    guint n;
  } want[] = {
    { HW_COLLECTIVE_ALL_GATHER, PE, 1 },     { HW_COLLECTIVE_ALL_GATHER, X, 2 + 3 + 1 },
    { HW_COLLECTIVE_ALL_GATHER, KV, 1 + 1 }, { HW_COLLECTIVE_REDUCE_SCATTER, X, 2 + 2 },
    { HW_COLLECTIVE_REDUCE_SCATTER, KV, 1 }, { HW_COLLECTIVE_REDUCE_SCATTER, PE, 1 },
  };
  guint got[G_N_ELEMENTS (want)] = { 0 }, n = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->stream != MODEL_STREAM_TP || t->layer != 1 || t->micro_batch != 0)
        continue;
      n++;
      const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
      CU_ASSERT_EQUAL (c->n_ranks, 2);
      for (gsize j = 0; j < G_N_ELEMENTS (want); j++)
        if (c->kind == want[j].kind && t->bytes == want[j].bytes)
          got[j]++;
    }
  CU_ASSERT_EQUAL (n, 15);
  for (gsize j = 0; j < G_N_ELEMENTS (want); j++)
    CU_ASSERT_EQUAL (got[j], want[j].n);
}

/* Under tp 2 with SP every saved tensor of the (MoE) layer is split in two: the latent
 * kv_a and its norm on the rank's 2048 tokens, kv_b's output and the assembled per-head q
 * and k over 8 heads, the shared expert as Qwen's (test_layer_activations): exactly half
 * what tp 1 keeps on 4 GPUs (same ep 4 grid). */
static void
test_mla_activations (void)
{
  g_autoptr (ModelPlan) p = deepseek_plan (8, 2, 4, 4096);
  g_autoptr (ModelPlan) q = deepseek_plan (4, 1, 4, 4096);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  STEPSIM_ASSERT_REL (plan_scan_layer_activations (p), plan_scan_layer_activations (q) / 2, 1e-12);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "Qwen1.5-MoE tp 2 ep 4: a rank's weights by bucket", test_rank_weights },
    { "shared expert GEMMs per rank: dense MLP's split, gate on s/tp", test_shared_expert_gemms },
    { "shared expert's own all-gather and reduce-scatter per layer", test_shared_expert_collectives },
    { "layer activations at tp 2 + SP: half tp 1's", test_layer_activations },
    { "MLA tp 2 ep 4: a rank's weights by bucket", test_mla_rank_weights },
    { "MLA kernels per rank: up projections by heads, down on s/tp", test_mla_kernels },
    { "MLA collectives per layer: latents gathered, no input gather", test_mla_collectives },
    { "MLA layer activations at tp 2 + SP: half tp 1's", test_mla_activations },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_tp_moe", tests);
}
