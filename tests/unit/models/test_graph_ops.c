/* tests/unit/models/test_graph_ops.c — the op graph's kernels and liveness (models/ops/graph.h,
 * graph_layer.c): per-op FLOPs of a Llama and a GPT-2 layer, the layer's forward as a fold
 * over them (Narayanan et al. 2021 §5.1), what each checkpointing policy reruns, and the
 * forward's transient peak from the ops' frees, each derived by hand in its comment.
 *
 * Shapes are small integers so every count is exact (no tolerance).
 */
#include "config.h"
#include "models/ops/cost.h"
#include "models/ops/graph.h"
#include "tests/testlib.h"

#include <string.h>

#include "tests/unit/models/cost_fixture.h"

/* small_llama (cost_fixture.h): h 64, q = 64, c = 32, i = 128; b = 2, s = 32 (T = 64),
 * e = 2. */
static const double T = 64, H = 64, Q = 64, E = 2;

/* The graph op named `name` (NULL if none). */
static const ModelGraphOp *
graph_op (const ModelGraph *g, const char *name)
{
  for (guint j = 0; j < g->ops->len; j++)
    if (strcmp (g_array_index (g->ops, ModelGraphOp, j).name, name) == 0)
      return &g_array_index (g->ops, ModelGraphOp, j);
  g_printerr ("\n  graph op '%s' not found\n", name);
  return NULL;
}

/* The forward FLOPs of kernel op `name`, or its bytes when `bytes`; -1 if none. */
static double
op_cost (const ModelGraph *g, const char *name, gboolean bytes)
{
  const ModelGraphOp *op = graph_op (g, name);
  if (op == NULL || !op->launches)
    return -1;
  return bytes ? op->kernel.bytes : op->kernel.flops;
}

static double
op_flops (const ModelGraph *g, const char *name)
{
  return op_cost (g, name, FALSE);
}

/* Llama layer, flash. GEMM FLOPs 2·M·N·K with M = T tokens:
 *   q_proj   2·T·h·q  = 2·64·64·64   =   524,288  (M = 64, N = q = 64, K = h = 64)
 *   k_proj   2·T·h·c  = 2·64·64·32   =   262,144  (v_proj the same)
 *   o_proj   2·T·q·h  = 2·64·64·64   =   524,288
 *   gate_proj, up_proj 2·T·h·i = 2·64·64·128 = 1,048,576 each; down_proj 2·T·i·h the same
 * attention: FlashAttention's two GEMMs per head, S = QKᵀ and O = PV, 2·s²·d each:
 *   4·b·s²·a·d = 4·2·32²·4·16 = 524,288 over the full square (Dao 2023, FlashAttention-2
 *   §4.1: "4 · seqlen² · head dimension · number of heads" forward, halved with a causal
 *   mask: 262,144 executed; the op carries the full count, the model-FLOPs convention of
 *   Narayanan et al. §5.1, and its shape says causal, which hardware/kernel.c's tables
 *   read with the halved count). Norms, rotary, silu, the product and the residual adds
 *   are memory-bound: 0 FLOPs. Forward Σ = 3·524,288 + 2·262,144 + 3·1,048,576 = 5,242,880. */
static void
test_llama_op_flops (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  CU_ASSERT_EQUAL (op_flops (g, "q_proj"), 524288);
  CU_ASSERT_EQUAL (op_flops (g, "k_proj"), 262144);
  CU_ASSERT_EQUAL (op_flops (g, "v_proj"), 262144);
  CU_ASSERT_EQUAL (op_flops (g, "o_proj"), 524288);
  CU_ASSERT_EQUAL (op_flops (g, "gate_proj"), 1048576);
  CU_ASSERT_EQUAL (op_flops (g, "up_proj"), 1048576);
  CU_ASSERT_EQUAL (op_flops (g, "mlp_down"), 1048576);
  CU_ASSERT_EQUAL (op_flops (g, "attention"), 524288);
  CU_ASSERT_EQUAL (op_flops (g, "rms_norm"), 0);
  CU_ASSERT_EQUAL (op_flops (g, "silu"), 0);
  const ModelGraphOp *qp = graph_op (g, "q_proj"), *at = graph_op (g, "attention");
  CU_ASSERT_PTR_NOT_NULL_FATAL (qp);
  CU_ASSERT_PTR_NOT_NULL_FATAL (at);
  CU_ASSERT_EQUAL (qp->kernel.shape.cls, HW_KERNEL_GEMM);
  CU_ASSERT_EQUAL (qp->kernel.shape.m, T);
  CU_ASSERT_EQUAL (qp->kernel.shape.n, Q);
  CU_ASSERT_EQUAL (qp->kernel.shape.k, H);
  CU_ASSERT_EQUAL (at->kernel.op_class, MODEL_OP_ATTENTION);
  CU_ASSERT_EQUAL (at->kernel.shape.cls, HW_KERNEL_FLASH_FWD);
  CU_ASSERT_EQUAL (at->kernel.shape.head_dim, 16);
  CU_ASSERT_TRUE (at->kernel.shape.causal);
  /* the layer's forward pass is the fold of these kernels, nothing else */
  ModelBlockCost c = model_cost_layer (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.flops, 5242880);
  guint launching = 0;
  for (guint j = 0; j < g->ops->len; j++)
    launching += g_array_index (g->ops, ModelGraphOp, j).launches ? 1 : 0;
  CU_ASSERT_EQUAL (c.fwd.n_ops, launching);
  CU_ASSERT_EQUAL (c.bwd.n_ops, launching);
}

/* GPT-2 layer (fused c_attn, GELU i = 4h, b = 2, s = 32, h = 64, a = 4): per op
 *   c_attn 2·T·h·3h = 6·b·s·h² = 1,572,864    scores 2·b·s²·h = 262,144 (eager)
 *   P·V    2·b·s²·h = 262,144                  c_proj 2·b·s·h² = 524,288
 *   c_fc   2·T·h·4h = 8·b·s·h² = 2,097,152     mlp c_proj the same
 * and the forward folds to 24·b·s·h² + 4·b·s²·h (Narayanan et al. 2021, arXiv 2104.04473,
 * §5.1, a layer's forward: 24·B·s·h² + 4·B·s²·h) = 6,291,456 + 524,288 = 6,815,744, with
 * eager attention (two GEMMs) and with the flash kernel (4·b·s²·h in one op) alike. */
static void
test_gpt2_forward_closed_form (void)
{
  double b = 2, s = 32, h = 64;
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 32, FALSE, 0.1);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  CU_ASSERT_EQUAL (op_flops (g, "qkv"), 1572864);
  CU_ASSERT_EQUAL (op_flops (g, "attn_scores"), 262144);
  CU_ASSERT_EQUAL (op_flops (g, "attn_av"), 262144);
  CU_ASSERT_EQUAL (op_flops (g, "o_proj"), 524288);
  CU_ASSERT_EQUAL (op_flops (g, "mlp_fc"), 2097152);
  CU_ASSERT_EQUAL (op_flops (g, "mlp_down"), 2097152);
  double closed = 24 * b * s * h * h + 4 * b * s * s * h;
  CU_ASSERT_EQUAL (closed, 6815744);
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).fwd.flops, closed);
  p.flash_attention = TRUE;
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).fwd.flops, closed);
}

/* TRUE when pass `sub` is exactly the kernels of `all` whose class is (want_class TRUE) or
 * is not (FALSE) `cls`, in order. */
static gboolean
is_class_subset (const ModelPass *all, const ModelPass *sub, ModelOpClass cls, gboolean want)
{
  guint k = 0;
  for (guint j = 0; j < all->n_ops; j++)
    {
      if ((all->ops[j].op_class == cls) != want)
        continue;
      if (k >= sub->n_ops || strcmp (sub->ops[k].name, all->ops[j].name) != 0
          || sub->ops[k].bytes != all->ops[j].bytes)
        return FALSE;
      k++;
    }
  return k == sub->n_ops;
}

/* Op-level selective (torchtitan's op SAC) keeps the attention's outputs, the batched and
 * biased GEMMs' (bmm, addmm) and every odd-numbered plain mm's, so its recompute is the
 * forward's non-matmul kernels — norms, rotary, silu, the product, residual adds (Llama);
 * LayerNorms, softmax, dropouts, GELU, residual adds (GPT-2 eager) — and the even mms:
 * Llama's k_proj, attn_out and mlp_up (mms 2, 4 and 6 of q, k, v, o, gate, up, down);
 * none of GPT-2's, whose projections all have biases (addmm) and whose attention GEMMs are
 * batched over the heads (bmm). Korthikanti's selective recompute reruns exactly the
 * attention core (the flash kernel; or the scores GEMM, softmax, dropout and P·V). */
static void
test_recompute_classes (void)
{
  ModelArch llama = small_llama (), gpt = gpt_like (64, 4, 1, 1000);
  ModelCostParams pl = params (2, 32, TRUE, 0), pg = params (2, 32, FALSE, 0.1);
  pl.norm_fp32 = TRUE;
  const ModelArch *archs[] = { &llama, &gpt };
  const ModelCostParams *ps[] = { &pl, &pg };
  for (guint k = 0; k < 2; k++)
    {
      ModelBlockCost c = model_cost_layer (archs[k], ps[k]);
      CU_ASSERT (c.pointwise_fwd.n_ops >= 6);
      /* the graph op by op: a kernel reruns iff it is point-wise or an even mm */
      const char *even_mms[] = { "k_proj", "attn_out", "mlp_up" };
      guint n_even = k == 0 ? G_N_ELEMENTS (even_mms) : 0, seen = 0;
      double gemm_flops = 0;
      g_autoptr (ModelGraph) g = model_cost_layer_graph (archs[k], ps[k]);
      for (guint j = 0; j < g->ops->len; j++)
        {
          const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
          if (!op->launches)
            continue;
          gboolean rerun_mm = FALSE;
          for (guint e = 0; e < n_even; e++)
            rerun_mm = rerun_mm || strcmp (op->kernel.name, even_mms[e]) == 0;
          seen += rerun_mm;
          if (rerun_mm)
            gemm_flops += op->kernel.flops;
          CU_ASSERT_EQUAL (model_graph_op_reruns (g, j, MODEL_GRAPH_KEEP_MATMUL),
                           op->kernel.op_class == MODEL_OP_ELEMENTWISE || rerun_mm);
        }
      CU_ASSERT_EQUAL (seen, n_even);
      CU_ASSERT_EQUAL (c.pointwise_fwd.flops, gemm_flops);
      if (k == 1) /* GPT-2: exactly the element-wise kernels */
        CU_ASSERT_TRUE (is_class_subset (&c.fwd, &c.pointwise_fwd, MODEL_OP_ELEMENTWISE, TRUE));
    }
  ModelBlockCost cl = model_cost_layer (&llama, &pl);
  CU_ASSERT_EQUAL (cl.selective_fwd.n_ops, 1);
  CU_ASSERT_STRING_EQUAL (cl.selective_fwd.ops[0].name, "attention");
  ModelBlockCost cg = model_cost_layer (&gpt, &pg);
  const char *core[] = { "attn_scores", "softmax", "attn_dropout", "attn_av" };
  CU_ASSERT_EQUAL_FATAL (cg.selective_fwd.n_ops, G_N_ELEMENTS (core));
  for (guint j = 0; j < G_N_ELEMENTS (core); j++)
    CU_ASSERT_STRING_EQUAL (cg.selective_fwd.ops[j].name, core[j]);
  /* Σ = the two GEMMs, 4·b·s²·h */
  CU_ASSERT_EQUAL (cg.selective_fwd.flops, 4.0 * 2 * 32 * 32 * 64);
}

/* Liveness of a hand-made graph: x (10 B, the input) → op a makes y (5 B) and frees x →
 * op b makes z (3 B) and frees y. Live at a: x + y = 15, at b: y + z = 8 (z, freed by
 * nothing, is the output). When b saves y, y is the backward's, not transient: at a
 * x = 10, at b z = 3. */
static void
test_frees_synthetic (void)
{
  for (guint save = 0; save < 2; save++)
    {
      g_autoptr (ModelGraph) g = model_graph_new ();
      guint x = model_graph_tensor (g, "x", 10, MODEL_TENSOR_INPUT, -1);
      guint y = model_graph_tensor (g, "y", 5, MODEL_TENSOR_POINTWISE, -1);
      guint z = model_graph_tensor (g, "z", 3, MODEL_TENSOR_POINTWISE, -1);
      model_graph_op (g, "a", y, NULL, 0);
      model_graph_op_frees (g, &x, 1);
      model_graph_op (g, "b", z, save ? &y : NULL, save ? 1 : 0);
      model_graph_op_frees (g, &y, 1);
      guint at = 99;
      CU_ASSERT_EQUAL (model_graph_transient_peak (g, FALSE, &at), save ? 10 : 15);
      CU_ASSERT_EQUAL (at, 0);
    }
}

/* The Llama layer's forward transients (flash, RMSNorm upcasting, bf16). Saved: the norms'
 * fp32 copies, rstd and normalized tensors, the norm outputs (the projections' input), q,
 * k, v, the attention output and logsumexp, gate, up, silu(gate), the product. Not saved:
 * the block input x (the norm keeps its fp32 copy instead; x lives until residual1 adds
 * it), the o-projection output (until residual1), the first sum h1 (until residual2), the
 * MLP output (until residual2) and the layer output. At residual1 x, o_proj's output and
 * h1 coexist; at residual2 h1, the MLP output and the sum: 3·e·T·h = 3·2·64·64 = 24,576,
 * first reached at residual1. With a LayerNorm-style norm (norm_fp32 off: the norm saves
 * its input) x and h1 are saved, and the peak is the second add's 2·e·T·h = 16,384. */
static void
test_llama_transient_peak (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  guint at = 0;
  CU_ASSERT_EQUAL (model_graph_transient_peak (g, FALSE, &at), 3 * E * T * H);
  CU_ASSERT_STRING_EQUAL (g_array_index (g->ops, ModelGraphOp, at).name, "residual1");
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).fwd.workspace, 3 * E * T * H);
  p.norm_fp32 = FALSE;
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).fwd.workspace, 2 * E * T * H);
}

/* Eager GPT-2 (h 64, 8 heads, dropout): the pre-softmax scores e·b·a·s² = 2·2·8·32² =
 * 32,768 B live from the scores GEMM to the softmax that frees them, beside nothing else
 * unsaved (q, k, v, the LayerNorms' inputs are saved); the residual stream's transients
 * (dropout output + sum, 2·e·T·h = 16,384) are smaller: the peak is the scores, at the
 * softmax. Under autocast the softmax runs in fp32: ATen's softmax converts the e-byte scores
 * to an fp32 copy, 4·16,384 = 65,536 B, which lives beside them through the softmax:
 * 32,768 + 65,536 = 98,304. */
static void
test_eager_scores_peak (void)
{
  ModelArch arch = gpt_like (64, 8, 1, 1000);
  ModelCostParams p = params (2, 32, FALSE, 0.1);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  guint at = 0;
  CU_ASSERT_EQUAL (model_graph_transient_peak (g, FALSE, &at), 32768);
  CU_ASSERT_STRING_EQUAL (g_array_index (g->ops, ModelGraphOp, at).name, "attn_scores");
  p.autocast = TRUE;
  p.act_bytes = 2;
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).fwd.workspace, 98304);
}

/* HF's eager LlamaAttention in bf16 without autocast (softmax_fp32): `softmax(S, dtype=
 * float32).to(query.dtype)`. small_llama, b 2, s 32: scores b·a·s² = 2·4·32² = 8,192.
 *   saved: _softmax's fp32 result 4·8,192 = 32,768 and the bf16 cast P·V saves
 *          2·8,192 = 16,384, where a bf16 softmax saves its e-byte result 16,384:
 *          +32,768 B a layer (4 B a score)
 *   kernels: the upcast reads e and writes 4: 6·8,192 = 49,152; the softmax reads and
 *          writes fp32: 8·8,192 = 65,536 (bf16: 4·8,192 = 32,768); the cast back 49,152
 * In fp16 the softmax takes the Half scores to fp32 in one kernel (half_to_float): no upcast
 * op, the softmax reads 2 and writes 4: 6·8,192 = 49,152, saving the same 4 + 2 B a score.
 * No effect on GPT-2's code (softmax in the scores' dtype), nor in fp32 (the upcast is the
 * identity). */
static void
test_eager_softmax_fp32 (void)
{
  const double scores = 2.0 * 4 * 32 * 32;
  ModelArch llama = small_llama (), gpt = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 32, FALSE, 0);
  double off = model_cost_layer (&llama, &p).act_saved;
  g_autoptr (ModelGraph) g0 = model_cost_layer_graph (&llama, &p);
  CU_ASSERT_EQUAL (op_cost (g0, "softmax", TRUE), 2 * E * scores);
  for (guint j = 0; j < g0->ops->len; j++) /* no upcast, no cast back */
    CU_ASSERT_FALSE (g_str_has_suffix (g_array_index (g0->ops, ModelGraphOp, j).name, "cast"));
  p.softmax_fp32 = TRUE;
  CU_ASSERT_EQUAL (model_cost_layer (&llama, &p).act_saved - off, 4 * scores);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&llama, &p);
  CU_ASSERT_EQUAL (op_cost (g, "softmax_upcast", TRUE), (E + 4) * scores);
  CU_ASSERT_EQUAL (op_cost (g, "softmax", TRUE), 8 * scores);
  CU_ASSERT_EQUAL (op_cost (g, "probs_cast", TRUE), (4 + E) * scores);
  double on = model_cost_layer (&llama, &p).act_saved;
  p.fp16 = TRUE;
  g_autoptr (ModelGraph) gh = model_cost_layer_graph (&llama, &p);
  for (guint j = 0; j < gh->ops->len; j++)
    CU_ASSERT (strcmp (g_array_index (gh->ops, ModelGraphOp, j).name, "softmax_upcast") != 0);
  CU_ASSERT_EQUAL (op_cost (gh, "softmax", TRUE), (E + 4) * scores);
  CU_ASSERT_EQUAL (model_cost_layer (&llama, &p).act_saved, on);
  p.fp16 = FALSE;
  ModelCostParams pg = params (2, 32, FALSE, 0);
  double gpt_off = model_cost_layer (&gpt, &pg).act_saved;
  pg.softmax_fp32 = TRUE;
  CU_ASSERT_EQUAL (model_cost_layer (&gpt, &pg).act_saved, gpt_off);
  p.act_bytes = p.weight_bytes = 4;
  double fp32_on = model_cost_layer (&llama, &p).act_saved;
  p.softmax_fp32 = FALSE;
  CU_ASSERT_EQUAL (model_cost_layer (&llama, &p).act_saved, fp32_on);
}

static const StepsimTest tests[] = {
  { "Llama layer: per-op FLOPs and kernel shapes", test_llama_op_flops },
  { "GPT-2 layer: forward folds to 24bsh^2 + 4bs^2h", test_gpt2_forward_closed_form },
  { "recompute: selective_op = non-matmul ops, selective = core", test_recompute_classes },
  { "frees: liveness of a hand-made graph", test_frees_synthetic },
  { "Llama layer: transient peak from frees", test_llama_transient_peak },
  { "eager attention: the scores are the transient peak", test_eager_scores_peak },
  { "eager attention: HF's fp32 softmax saves 4 B a score more", test_eager_softmax_fp32 },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/graph_ops", tests);
}
