/* tests/unit/models/test_graph.c — the saved-tensor op graph (models/ops/graph.h) of a Llama
 * and a GPT-2 layer against the tensors PyTorch's autograd keeps, derived op by op from
 * tools/autograd/derivatives.yaml in each test's comment; torch.compile's partitioner
 * rule; the checkpointing policies read from the graph; the loss heads.
 *
 * Shapes are small integers so every byte count is exact (no tolerance).
 */
#include "config.h"
#include "models/ops/cost.h"
#include "models/ops/graph.h"
#include "tests/testlib.h"

#include <math.h>

#include "tests/unit/models/cost_fixture.h"
#include "tests/unit/models/shipped.h"

/* small_llama (cost_fixture.h): h 64, 4 query heads and 2 key/value heads of 16 (q = 64,
 * c = 32), SwiGLU i = 128. */
static const double B = 2, S = 32, T = 64, H = 64, A = 4, Q = 64, C = 32, I = 128, E = 2;

static guint
saved (const ModelArch *arch, const ModelCostParams *p, ModelGraphPolicy policy, double *sizes,
       guint max)
{
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, p);
  guint n = 0;
  model_graph_saved (g, policy, p->compile, sizes, max, &n);
  return n;
}

static void
assert_list (const double *got, guint n, const double *want, guint m)
{
  CU_ASSERT_EQUAL (n, m);
  for (guint k = 0; k < MIN (n, m); k++)
    if (got[k] != want[k])
      {
        g_printerr ("\n  tensor %u: %g B, expected %g B\n", k, got[k], want[k]);
        CU_FAIL ("saved tensor differs");
      }
}

/* Llama layer, pure bf16 (e = 2), flash, eager, RMSNorm upcasting (HF LlamaRMSNorm,
 * torchtune RMSNorm). In forward order, what autograd keeps:
 *   x.float()                         ToCopy: nothing
 *   pow(x32, 2)                       self: x32                          4·T·h
 *   rsqrt(mean + eps)                 result: rstd                        4·T
 *   x32 * rstd                        both (already kept)
 *   .type_as(x) * weight              mul keeps x_normed (weight needs grad)  e·T·h
 *   q/k/v_proj(norm out)              each keeps its input: ONE tensor        e·T·h
 *   rotary (cos/sin need no grad)     mul keeps the buffer only: nothing
 *   flash attention                   q, k, v (k, v of the kv heads), out,
 *                                     logsumexp fp32 b·a·s       e·T·(q + 2c) + e·T·q + 4·b·a·s
 *   o_proj(out)                       its input: the attention output (same tensor)
 *   x + o                             add: nothing
 *   RMSNorm again                     4·T·h + 4·T + e·T·h, its output e·T·h
 *   gate_proj, up_proj(norm out)      one input tensor (counted above)
 *   silu(gate)                        self: gate                          e·T·i
 *   silu(gate) * up                   both: silu(gate), up                2·e·T·i
 *   down_proj(product)                its input                           e·T·i
 * 17 tensors. */
static void
test_llama_eager (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  double got[40];
  guint n = saved (&arch, &p, MODEL_GRAPH_KEEP_ALL, got, 40);
  const double want[] = { 4 * T * H, 4 * T, E * T * H, E * T * H,     /* norm1 */
                          E * T * Q, E * T * C, E * T * C,            /* q, k, v */
                          E * T * Q, 4 * B * A * S,                   /* out, logsumexp */
                          4 * T * H, 4 * T, E * T * H, E * T * H,     /* norm2 */
                          E * T * I, E * T * I, E * T * I, E * T * I }; /* gate up silu product */
  assert_list (got, n, want, G_N_ELEMENTS (want));
  double sum = 0;
  for (guint k = 0; k < G_N_ELEMENTS (want); k++)
    sum += want[k];
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved, sum, 0);
  /* the tensor list the plan allocates is the same list */
  double list[MODEL_COST_MAX_TENSORS];
  guint m = model_cost_layer_saved_tensors (&arch, &p, list, MODEL_COST_MAX_TENSORS);
  assert_list (list, m, want, G_N_ELEMENTS (want));
}

/* Without the upcast (norm_fp32 FALSE, or a LayerNorm): the norm keeps its e-byte input,
 * which for norm1 is the layer input: e·T·h per norm instead of 4·T·h + 4·T + e·T·h. */
static void
test_llama_norm_plain (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  double upcast = model_cost_layer (&arch, &p).act_saved;
  p.norm_fp32 = FALSE;
  double plain = model_cost_layer (&arch, &p).act_saved;
  CU_ASSERT_DOUBLE_EQUAL (upcast - plain, 2 * (4 * T * H + 4 * T), 0);
  /* autocast (an fp32 model): the stream is fp32 already, so the upcast copy is no copy and
   * a fused norm saves its fp32 input; HF's eager RMSNorm (the knob's profiles) also saves
   * rsqrt's result and x_normed, fp32 like its input: + 4·T + 4·T·h per norm */
  p.autocast = TRUE;
  double ac = model_cost_layer (&arch, &p).act_saved;
  p.norm_fp32 = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved - ac, 2 * (4 * T + 4 * T * H), 0);
}

/* torch.compile (AOTAutograd min-cut partitioner): x32 and x_normed are point-wise from
 * the norm input and only point-wise backward formulas read them: recomputed, the bf16
 * input saved instead (layer input for norm1, the residual sum for norm2); rstd is a
 * reduction (kept); the norm output feeds the projections' weight-gradient GEMMs
 * (materialized in the backward: kept); silu(gate) is recomputed from the gate; the
 * product feeds down_proj's weight gradient (kept). 14 tensors:
 *   x e·T·h, rstd 4·T, norm1 out e·T·h, q, k, v, out, lse, residual e·T·h, rstd 4·T,
 *   norm2 out e·T·h, gate, up, product. */
static void
test_llama_compile (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  p.compile = TRUE;
  double got[40];
  guint n = saved (&arch, &p, MODEL_GRAPH_KEEP_ALL, got, 40);
  const double want[] = { E * T * H, 4 * T, E * T * H, E * T * Q, E * T * C, E * T * C,
                          E * T * Q, 4 * B * A * S, E * T * H, 4 * T, E * T * H,
                          E * T * I, E * T * I, E * T * I };
  assert_list (got, n, want, G_N_ELEMENTS (want));
}

/* kv_repeat (torchtune MultiHeadAttention, HF repeat_kv): k and v are copied to the a query
 * heads before the kernel, which saves the copies (e·T·q each); the kv-head GEMM outputs
 * are not kept: + 2·e·T·(q − c). */
static void
test_kv_repeat (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  double base = model_cost_layer (&arch, &p).act_saved;
  p.kv_repeat = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved - base, 2 * E * T * (Q - C), 0);
  arch.n_kv_heads = arch.n_heads; /* MHA: nothing to repeat */
  p.kv_repeat = FALSE;
  base = model_cost_layer (&arch, &p).act_saved;
  p.kv_repeat = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved, base, 0);
}

/* GPT-2 layer (fused c_attn, LayerNorm, GELU, eager attention, dropout, e = 2), in forward
 * order: ln_1 keeps its input x (2sbh); c_attn its input, the ln_1 output (2sbh); q, k, v
 * (bmm keeps q and k, bmm(P, v) keeps v: 6sbh); _softmax its result (2as²b); native_dropout
 * its mask (as²b); bmm(P_dropped, v) the dropped-out P (2as²b); c_proj its input, the
 * attention output (2sbh); resid dropout mask (sbh); ln_2 its input (2sbh); c_fc its input
 * (2sbh); gelu its input, the c_fc output (8sbh); mlp c_proj the gelu output (8sbh); mask
 * (sbh). Σ = 34·sbh + 5·a·s²·b (Korthikanti et al. 2022 Table 2). torch.compile keeps the
 * same set: each is read by a backward GEMM, is a mask, or is the block input. */
static void
test_gpt2 (void)
{
  double h = 64, a = 4, s = 32, b = 2, Tt = b * s, sc = b * a * s * s;
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 32, FALSE, 0.1);
  p.norm_fp32 = TRUE; /* LayerNorm: no effect */
  double got[40];
  guint n = saved (&arch, &p, MODEL_GRAPH_KEEP_ALL, got, 40);
  const double want[] = { E * Tt * h, E * Tt * h, E * Tt * h, E * Tt * h, E * Tt * h, /* x ln q k v */
                          E * sc, sc, E * sc, E * Tt * h,                     /* P mask Pd out */
                          Tt * h, E * Tt * h, E * Tt * h,                     /* mask x1 ln2 */
                          E * Tt * 4 * h, E * Tt * 4 * h, Tt * h };           /* fc gelu mask */
  assert_list (got, n, want, G_N_ELEMENTS (want));
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved,
                          34 * s * b * h + 5 * a * s * s * b, 0);
  p.compile = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved,
                          34 * s * b * h + 5 * a * s * s * b, 0);
}

/* Selective recompute (Korthikanti §5) drops the attention core: 5as²b for GPT, the
 * logsumexp under flash. */
static void
test_selective_core (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 32, FALSE, 0.1);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_selective, 5 * A * S * S * B, 0);
  ModelArch l = small_llama ();
  ModelCostParams f = params (2, 32, TRUE, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&l, &f).act_selective, 4 * B * A * S, 0);
}

/* Op-level selective (torchtitan): the layer input, the attention's out and logsumexp and
 * the outputs of the odd-numbered plain mms are kept. A Llama layer's mms in call order
 * (wq, wk, wv in Attention.forward, wo, then w2(silu(w1(x)) * w3(x)) in FeedForward) are
 * q 1, k 2, v 3, o 4, gate 5, up 6, down 7; torchtitan's policy recomputes every second one
 * (activation_checkpoint.py: "Save all compute/comm ops, except every second mm"), so
 * q, v, gate and down are kept and k, o and up rerun:
 *   kept = e·T·h + e·T·q + e·T·c + (e·T·q + 4·b·a·s) + e·T·i + e·T·h.
 * The recompute re-creates what eager saves beyond that: the norms' tensors, silu(gate) and
 * the product, and of the rerun mms' outputs those an op saves: k (the attention's input)
 * and up (the product's); o is saved by nobody (the residual add keeps nothing). Its FLOPs
 * are the three rerun GEMMs': 2·T·h·c + 2·T·q·h + 2·T·h·i. */
static void
test_selective_op (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.norm_fp32 = TRUE;
  ModelBlockCost c = model_cost_layer (&arch, &p);
  double kept = E * T * H + E * T * Q + E * T * C + E * T * Q + 4 * B * A * S + E * T * I
                + E * T * H;
  CU_ASSERT_DOUBLE_EQUAL (c.act_keep_matmul, kept, 0);
  double norms = 2 * (4 * T * H + 4 * T + 2 * E * T * H);
  CU_ASSERT_DOUBLE_EQUAL (c.act_pointwise, norms + 2 * E * T * I + E * T * C + E * T * I, 0);
  /* the tensors the rerun re-creates, one by one, are the same bytes */
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (
    model_graph_recreated (g, MODEL_GRAPH_KEEP_MATMUL_SAVED, FALSE, NULL, 0, NULL),
    c.act_pointwise, 0);
  CU_ASSERT (c.pointwise_fwd.n_ops > 0);
  CU_ASSERT_DOUBLE_EQUAL (c.pointwise_fwd.flops, 2 * T * H * C + 2 * T * Q * H + 2 * T * H * I,
                          0);
}

/* A biased linear is aten.addmm: kept by the op-level policy (a compute-intensive op) and
 * not counted among the mms. With q, k and v biased (Qwen2-style) the mms are o 1, gate 2,
 * up 3, down 4, so gate and down rerun:
 *   kept = e·T·h + e·T·(q + 2c) + (e·T·q + 4·b·a·s) + e·T·h (o) + e·T·i (up),
 * and the recompute's FLOPs are gate's and down's, 2·T·h·i + 2·T·i·h. */
static void
test_selective_op_addmm (void)
{
  ModelArch arch = small_llama ();
  arch.qkv_bias = TRUE;
  ModelCostParams p = params (2, 32, TRUE, 0);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  double kept = E * T * H + E * T * (Q + 2 * C) + E * T * Q + 4 * B * A * S + E * T * H
                + E * T * I;
  CU_ASSERT_DOUBLE_EQUAL (c.act_keep_matmul, kept, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.pointwise_fwd.flops, 2 * T * H * I + 2 * T * I * H, 0);
}

/* A tensor two ops save is held once; the graph answers the same list however many ops
 * name it. */
static void
test_identity (void)
{
  g_autoptr (ModelGraph) g = model_graph_new ();
  guint x = model_graph_tensor (g, "x", 10, MODEL_TENSOR_INPUT, -1);
  guint y = model_graph_tensor (g, "y", 7, MODEL_TENSOR_POINTWISE, (gint) x);
  guint z = model_graph_tensor (g, "z", 3, MODEL_TENSOR_GEMM, -1);
  guint s1[] = { x, y };
  guint s2[] = { x, G_MAXUINT };
  model_graph_op (g, "a", y, s1, 2);
  model_graph_op (g, "b", z, s2, 2);
  double sizes[4];
  guint n = 0;
  CU_ASSERT_DOUBLE_EQUAL (model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, FALSE, sizes, 4, &n), 17, 0);
  CU_ASSERT_EQUAL (n, 2);
  /* compile: y is recomputed from x, kept anyway */
  CU_ASSERT_DOUBLE_EQUAL (model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, TRUE, NULL, 0, &n), 10, 0);
  CU_ASSERT_EQUAL (n, 1);
  /* op-level: x and the GEMM output z, saved by nobody but cached by the policy */
  CU_ASSERT_DOUBLE_EQUAL (model_graph_saved (g, MODEL_GRAPH_KEEP_MATMUL, FALSE, NULL, 0, NULL), 13, 0);
}

/* Loss heads for T·V logits (e = 2; final-norm and LM-head inputs 2·e·T·h aside):
 *   plain     log_softmax's e-byte result; backward peak 3·e·T·V
 *   chunked   eager: every chunk's fp32 log_softmax result (4·T·V); backward transients one
 *             chunk's two fp32 gradients 8·T·V/n. compiled: the e-byte chunks + a
 *             logsumexp 4·T; Inductor's fused cross-entropy writes no T·V/n buffer in the
 *             forward, and its backward one chunk's gradient in the chunk's dtype, e·T·V/n
 *   fused     a logsumexp 4·T; one chunk of fp32 logits 4·T·V/n, 8·T·V/n in backward. */
static void
test_losses (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  double V = 1000, base = 2 * E * T * H, n = 8;
  p.loss = MODEL_COST_LOSS_PLAIN;
  ModelBlockCost c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base, E * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base + c.bwd.workspace, 3 * E * T * V, 0);
  p.loss = MODEL_COST_LOSS_CHUNKED;
  p.loss_chunks = 8;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base, 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 8 * T * V / n, 0);
  p.compile = TRUE;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base, E * T * V + 4 * T, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 0, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, E * T * V / n, 0);
  p.compile = FALSE;
  p.loss = MODEL_COST_LOSS_FUSED;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base, 4 * T, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 8 * T * V / n, 0);
  /* the upcasting RMSNorm keeps its fp32 input, rstd and normalized tensor for the final
   * norm too (4·T·h + 4·T more than the e-byte input) */
  p.loss = MODEL_COST_LOSS_UPCAST;
  double plain = model_cost_head (&arch, &p).act_saved;
  p.norm_fp32 = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_head (&arch, &p).act_saved - plain, 4 * T * H + 4 * T, 0);
}

/* transformers 4.46–4.48 ForCausalLMLoss (loss = upcast_shift), T = b·s = 64 logits rows,
 * T' = b·(s − 1) = 62 shifted rows, V = 1000, e = 2 (derivation in models/ops/cost_ends.c
 * hf_shift_loss_memory):
 *   kept for the backward: _log_softmax's result over the shifted rows, 4·T'·V (nll_loss
 *     saves the same tensor: held once)
 *   forward peak, at nll_loss: the model output's e-byte logits e·T·V, the .float() copy
 *     4·T·V, the contiguous shifted copy 4·T'·V and the result 4·T'·V (14 B a logit as
 *     T' → T); the workspace is what exceeds the kept result: e·T·V + 4·T·V + 4·T'·V
 *   backward peak: nll_loss_backward's gradient and _log_softmax_backward_data's output
 *     beside the result, 12·T'·V, above slice_backward's full-size zeros beside the shifted
 *     gradient (4·T·V + 4·T'·V) and ToCopyBackward0 (4·T·V + e·T·V) at these sizes
 *   PyTorch <= 1.10 (log_softmax keeps its input too): + the shifted copy 4·T'·V
 * Against the upcast loss (no copy, T rows): 4·T'·V more at the forward's peak, and the
 * result 4·(T − T')·V smaller. */
static void
test_loss_hf_shift (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  double V = 1000, Ts = B * (S - 1), base = 2 * E * T * H;
  p.loss = MODEL_COST_LOSS_UPCAST_SHIFT;
  ModelBlockCost c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base, 4 * Ts * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, E * T * V + 4 * T * V + 4 * Ts * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved - base + c.bwd.workspace, 12 * Ts * V, 0);
  p.loss = MODEL_COST_LOSS_UPCAST;
  ModelBlockCost u = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL ((c.act_saved + c.fwd.workspace) - (u.act_saved + u.fwd.workspace),
                          4 * Ts * V - 4 * (T - Ts) * V, 0);
  p.loss = MODEL_COST_LOSS_UPCAST_SHIFT;
  p.softmax_saves_input = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_head (&arch, &p).act_saved - base, 2 * 4 * Ts * V, 0);
  /* the variant is HF's loss whatever the family: MPT's llm-foundry kernel is the upcast
   * default's alone, so an MPT model under upcast_shift holds the same 4·T'·V */
  ModelArch mpt = gpt_like (64, 4, 1, 1000);
  mpt.family = MODEL_FAMILY_MPT;
  p.softmax_saves_input = FALSE;
  ModelBlockCost m = model_cost_head (&mpt, &p);
  CU_ASSERT_DOUBLE_EQUAL (m.fwd.workspace, E * T * V + 4 * T * V + 4 * Ts * V, 0);
}

/* QLoRA under autocast (PEFT prepare_model_for_kbit_training: norms fp32, so the stream
 * and every norm output are fp32), all linear layers targeted, flash. bitsandbytes 0.45
 * Linear4bit.forward returns matmul_4bit(x.to(compute_dtype), …).to(inp_dtype), and
 * MatMul4Bit saves no activation (ctx.tensors = (None, B)); PEFT's LoRA Linear4bit adds
 * lora_B(lora_A(x))·scaling (bf16 under autocast) to the fp32 result: fp32. So, against
 * LoRA on 16-bit frozen weights under the same autocast:
 *   q, k, v        fp32 outputs, but the FlashAttention-2 path casts them to the autocast
 *                  dtype first (transformers 4.46 LlamaFlashAttention2: input_dtype ==
 *                  float32 → .to(target_dtype)); the kernel saves the casts: same bytes
 *   o_proj         reads the bf16 attention output: unchanged
 *   gate, up       fp32: silu saves the gate, the mul saves silu(gate) and up: 3 × 4·T·i
 *                  instead of 3 × e·T·i
 *   product        fp32, saved by nothing; down's lora_A saves its e-byte autocast cast: the
 *                  same e·T·i, another tensor
 * Δ = 3·(4 − e)·T·i. The first 20 saved tensors in forward order (each block's adapters'
 * A·x, e·T·r, after that block's projections, graph_layer.c):
 *   x 4·T·h; the three lora_A casts e·T·h; q, k, v; out, lse; A·x of q, k, v, o; residual
 *   4·T·h; the two lora_A casts e·T·h; gate, up, silu 4·T·i; down's cast e·T·i. */
static void
test_qlora_kbit_dtypes (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 32, TRUE, 0);
  p.autocast = TRUE;
  p.finetune = ft (MODEL_FINETUNE_LORA, 4, MODEL_LORA_ALL_LINEAR);
  double lora = model_cost_layer (&arch, &p).act_saved;
  p.finetune.method = MODEL_FINETUNE_QLORA;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved - lora, 3 * (4 - E) * T * I, 0);
  double got[40];
  guint n = saved (&arch, &p, MODEL_GRAPH_KEEP_ALL, got, 40);
  const double want[] = { 4 * T * H, E * T * H, E * T * H, E * T * H,
                          E * T * Q, E * T * C, E * T * C, E * T * Q, 4 * B * A * S,
                          E * T * 4, E * T * 4, E * T * 4, E * T * 4,
                          4 * T * H, E * T * H, E * T * H,
                          4 * T * I, 4 * T * I, 4 * T * I, E * T * I };
  CU_ASSERT (n > G_N_ELEMENTS (want));
  assert_list (got, MIN (n, G_N_ELEMENTS (want)), want, G_N_ELEMENTS (want));
  /* without autocast (QLoRA on a 16-bit stream: nothing fp32) the MLP stays e-byte */
  p.autocast = FALSE;
  double q16 = model_cost_layer (&arch, &p).act_saved;
  p.finetune.method = MODEL_FINETUNE_LORA;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (&arch, &p).act_saved, q16, 0);
}

static const StepsimTest tests[] = {
  { "Llama layer: saved tensors from autograd (eager)", test_llama_eager },
  { "Llama layer: RMSNorm without upcast, and under autocast", test_llama_norm_plain },
  { "Llama layer: torch.compile partitioner", test_llama_compile },
  { "Llama layer: GQA k/v repeated", test_kv_repeat },
  { "GPT-2 layer: saved tensors = Korthikanti", test_gpt2 },
  { "selective recompute: attention core", test_selective_core },
  { "op-level selective: odd mms' and attention outputs kept", test_selective_op },
  { "op-level selective: a biased linear (addmm) kept, not counted", test_selective_op_addmm },
  { "a tensor saved twice is held once", test_identity },
  { "loss heads: plain, chunked, fused", test_losses },
  { "loss head: HF 4.46-4.48 shifted copy (upcast_shift)", test_loss_hf_shift },
  { "QLoRA + autocast: bitsandbytes returns the input dtype", test_qlora_kbit_dtypes },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/graph", tests);
}
