/* models/ops/graph_layer.c — the op graph of one transformer layer (graph.h), built
 * from the model code PyTorch runs: HF LlamaDecoderLayer / torchtune
 * TransformerSelfAttentionLayer (RMSNorm, q/k/v projections, rotary, attention, o-proj,
 * residual, RMSNorm, SwiGLU MLP, residual) and GPT-2/BERT/MPT blocks (LayerNorm, fused or
 * separate QKV, GELU MLP, dropout). Notation and element sizes as in models/ops/cost.c.
 *
 * What each op saves (PyTorch autograd, tools/autograd/derivatives.yaml):
 *   LayerNorm     native_layer_norm saves its input (+ mean and rstd, b·s floats: left out,
 *                 as Korthikanti et al. 2022 §4.1 leaves them out)
 *   RMSNorm fp32  HF LlamaRMSNorm.forward / torchtune modules/rms_norm.py: x.float() (no
 *                 save), pow(2) saves the fp32 x, rsqrt saves its fp32 result (b·s), mul saves
 *                 both, .type_as(x) nothing, `x_normed * weight` saves x_normed (e bytes):
 *                 4·T·h + 4·T + e·T·h; its output is saved by the projections that read it
 *   Linear        saves its input (one tensor for q, k and v when they read the same one;
 *                 under autocast each projection saves its own cast copy)
 *   rotary        q·cos − … with cos/sin buffers that need no grad: mul saves only the
 *                 buffer, so nothing new (torchtune RotaryPositionalEmbeddings)
 *   flash/SDPA    _scaled_dot_product_flash_attention saves q, k, v, output, logsumexp
 *                 (fp32 b·a·s) and the RNG state; the output is the o-proj input (a view)
 *   eager core    bmm saves q and k; _softmax saves its result; native_dropout its mask;
 *                 bmm(P, V) saves P (dropped out) and v
 *   SwiGLU        silu saves the gate output, mul(silu(g), up) saves silu(g) and up, the down
 *                 projection saves the product: 4 tensors of e·T·i (HF LlamaMLP, torchtune
 *                 FeedForward); under compile silu(g) is recomputed from g: 3
 *   GELU          gelu saves the fc output, the projection saves the gelu output: 2
 *   dropout       a 1-byte mask
 * Korthikanti Table 2's 34·sbh + 5·a·s²·b for GPT falls out (tests/unit/models/test_cost.c).
 *
 * Kernels (FLOPs and byte conventions in models/ops/cost.c's header): one per op as eager
 * PyTorch launches it, with these fusions the time model keeps: a fused norm is one kernel
 * (2·e·T·h + weights; its fp32 copies are not extra traffic), HF's eager RMSNorm and rotary
 * one kernel each standing for their chains of ops (cost_norm_op; ModelOp.host_ops),
 * a GEMM's bias is in its epilogue. Projections follow the model code: one fused QKV GEMM
 * where the model has one (GPT-2 c_attn, MPT Wqkv: model_arch_fused_qkv), else q_proj,
 * k_proj, v_proj (HF LlamaAttention, torchtune MultiHeadAttention), each reading the
 * input; SwiGLU's gate_proj and up_proj are two GEMMs (HF LlamaMLP, torchtune
 * FeedForward w1/w3), then silu and the product are two kernels (eager) or one (compile
 * fuses them: read gate and up, write the product); dropout before a residual add is
 * its own kernel (native_dropout: read, write, 1-byte mask) unless compile fuses it
 * into the add. LoRA adds, per targeted projection, lora_A, lora_B and PEFT's scaled
 * add (peft/tuners/lora/layer.py Linear.forward), after the attention's or the MLP's
 * projections.
 *
 * Frees (liveness, graph.h): each op frees the inputs whose last forward use it is; the
 * block input lives until the first residual add, the first residual until the second;
 * the second residual (the block's output) lives to the end.
 */
#include "config.h"
#include "models/ops/cost-private.h"

#define NO G_MAXUINT

/* The kernel primitives cost.c and cost_ends.c build on (cost-private.h); here, so that
 * cost.o calls into this file and not the other way. */
/* Y[m×p] = X[m×n]·W[n×p] with `weights` parameters (incl. bias) read in weight dtype.
 * Parameters beyond the n×p matrix are a bias: the linear runs as aten.addmm (ModelOp). */
ModelOp
cost_gemm_op (const Dims *d, const char *name, double m, double n, double p, double weights)
{
  return (ModelOp){ name, MODEL_OP_GEMM, 2 * m * n * p,
                    d->e * m * n + d->w * weights + d->e * m * p, d->frozen ? 1 : 0,
                    { .cls = HW_KERNEL_GEMM, .m = m, .n = p, .k = n, .batch = 1 }, 1,
                    .addmm = weights > n * p };
}

ModelOp
cost_elementwise_op (const char *name, double bytes)
{
  return (ModelOp){ name, MODEL_OP_ELEMENTWISE, 0, bytes, 0, { HW_KERNEL_PLAIN }, 1, FALSE };
}

/* A norm's kernel. Fused (LayerNorm's native_layer_norm, Transformer Engine's or a Triton
 * RMSNorm, or any norm under compile): one pass, 2·e B an element (`x` unused). HF's eager
 * RMSNorm (modeling_llama.py LlamaRMSNorm.forward; torchtune modules/rms_norm.py the same
 * chain) runs op by op on an input of x B an element, returning its dtype, each op a kernel
 * over the T·h elements: `x.to(float32)` (x + 4 B; no kernel when x is fp32 already),
 * `pow(2)` (4 + 4), `mean(-1)` (4), `+ eps` and `rsqrt` (T elements: left out),
 * `x * rsqrt(...)` (4 + 4), `.to(input_dtype)` (4 + x; none when fp32), `weight * x`
 * (x + x): 36 B an element for a 16-bit input (against the fused pass's 4) and 8 ops,
 * 28 B and 6 ops for an fp32 one. */
ModelOp
cost_norm_op (const Dims *d, const char *name, double x)
{
  double Th = d->T * d->h, weights = d->w * d->norm_w;
  if (!(d->eager && d->rms)) /* its fp32 copies are not extra traffic */
    return cost_elementwise_op (name, 2 * d->e * Th + weights);
  double casts = x != 4 ? 2 * (x + 4) : 0;
  ModelOp k = cost_elementwise_op (name, (casts + 8 + 4 + 8 + 2 * x) * Th + weights);
  k.host_ops = x != 4 ? 8 : 6;
  return k;
}

/* norm() below saves: HF's upcasting RMSNorm (norm_fp32) its fp32 copy, rstd and x_normed
 * (compiled: the input and rstd, the partitioner recomputing the rest); on autocast's fp32
 * stream HF's eager RMSNorm its fp32 input, rstd and the fp32 x_normed; any other norm its
 * input (ea: the fp32 stream under autocast). */
double
cost_norm_saved (const Dims *d)
{
  double Th = d->T * d->h;
  if (d->norm_fp32)
    return d->compile ? d->e * Th + 4 * d->T : 4 * Th + 4 * d->T + d->e * Th;
  if (d->autocast && d->eager && d->rms)
    return d->ea * Th + 4 * d->T + d->ea * Th;
  return d->ea * Th;
}

/* Autocast's casts before a dense projection group or the head (autocast_mode.cpp
 * cached_cast, on an fp32 model under torch.autocast): each of its `n_weights` fp32 weight
 * tensors (`weights` elements in all) is cast to the compute dtype once a forward (the
 * cache lives for the autocast region, so a recompute casts again), and each of `n_inputs`
 * fp32 inputs of T·h (the norms' fp32 outputs; one per projection, as activations are not
 * cached) too: one op each (one fused kernel under compile), reading 4 B and writing e an
 * element; the backward casts the gradients back (1×). FALSE (no cast) without autocast
 * and under QLoRA (NF4 weights are dequantized, not cast). */
gboolean
cost_autocast_cast_op (const Dims *d, double weights, guint n_weights, guint n_inputs,
                       ModelOp *out)
{
  if (!d->autocast || d->nf4)
    return FALSE;
  *out = cost_elementwise_op ("autocast_cast", (4 + d->e) * (weights + n_inputs * d->T * d->h));
  out->bwd_factor = 1;
  out->host_ops = d->compile ? 1 : n_weights + n_inputs;
  return TRUE;
}

/* Elements of the largest single projection of a layer (QLoRA's dequantized buffer). */
double
cost_largest_linear (const ModelArch *arch)
{
  g_autoptr (GArray) lin = model_finetune_layer_linears (arch, NULL);
  double m = 0;
  for (guint j = 0; j < lin->len; j++)
    {
      const ModelLinear *x = &g_array_index (lin, ModelLinear, j);
      m = MAX (m, (double) (x->in * x->out));
    }
  return m;
}


static guint
t_new (ModelGraph *g, const char *name, double bytes, ModelTensorSource src, gint from)
{
  return model_graph_tensor (g, name, bytes, src, from);
}

static void
op1 (ModelGraph *g, const char *name, guint out, guint a, guint b, guint c)
{
  guint saved[3] = { a, b, c };
  model_graph_op (g, name, out, saved, 3);
}

static void
frees (ModelGraph *g, guint a, guint b, guint c)
{
  guint t[3] = { a, b, c };
  model_graph_op_frees (g, t, 3);
}

static void
writes (ModelGraph *g, guint a, guint b, guint c)
{
  guint t[3] = { a, b, c };
  model_graph_op_writes (g, t, 3);
}

/* The last op launches Y[m×p] = X[m×n]·W[n×p] (cost_gemm_op). */
static void
gemm (ModelGraph *g, const Dims *d, const char *kernel, double m, double n, double p,
      double weights)
{
  ModelOp k = cost_gemm_op (d, kernel, m, n, p, weights);
  model_graph_op_kernel (g, &k);
}

/* The last op launches a memory-bound kernel of `bytes` B. */
static void
ew (ModelGraph *g, const char *kernel, double bytes)
{
  ModelOp k = cost_elementwise_op (kernel, bytes);
  model_graph_op_kernel (g, &k);
}

/* The last op launches a memory-bound kernel of `bytes` B whose backward moves `bwd`
 * times as many (graph.h bwd_factor; the per-op sources are at the call sites). */
static void
ew_bwd (ModelGraph *g, const char *kernel, double bytes, double bwd)
{
  ModelOp k = cost_elementwise_op (kernel, bytes);
  k.bwd_factor = bwd;
  model_graph_op_kernel (g, &k);
}

/* An op that writes in place (rotary on q and k): a 0-B tensor stands for its output. */
static guint
scratch (ModelGraph *g)
{
  return t_new (g, "in_place", 0, MODEL_TENSOR_POINTWISE, -1);
}

/* The graph op of autocast's casts before a projection group (cost_autocast_cast_op; MoE
 * experts get none). Nothing is saved (the casts' copies are the projections' saved
 * inputs, proj_inputs): the op writes a 0-B stand-in. */
static void
autocast_casts (ModelGraph *g, const Dims *d, double weights, guint n_weights, guint n_inputs)
{
  ModelOp k;
  if (!cost_autocast_cast_op (d, weights, n_weights, n_inputs, &k))
    return;
  op1 (g, "autocast_cast", scratch (g), NO, NO, NO);
  model_graph_op_kernel (g, &k);
}

/* Marks tensor t re-created by selective recompute when `module` (MODEL_RECOMPUTE_*) is one
 * it reruns; returns t. */
static guint
selective (ModelGraph *g, const Dims *d, guint module, guint t)
{
  if (d->recompute & module)
    model_graph_mark_selective (g, t);
  return t;
}

/* The same for the last op: selective recompute reruns it. */
static void
selective_op (ModelGraph *g, const Dims *d, guint module)
{
  if (d->recompute & module)
    model_graph_op_selective (g);
}

/* A norm reading `in`, one kernel `kernel`; returns the tensor the following projections
 * read. */
static guint
norm (ModelGraph *g, const Dims *d, guint in, const char *name, const char *kernel)
{
  double Th = d->T * d->h;
  guint out;
  if (d->norm_fp32)
    {
      /* pow saves the fp32 copy, rsqrt its result, `x_normed * weight` x_normed */
      guint x32 = t_new (g, "norm_x_fp32", 4 * Th, MODEL_TENSOR_POINTWISE, (gint) in);
      guint rstd = t_new (g, "norm_rstd", 4 * d->T, MODEL_TENSOR_POINTWISE, -1);
      guint xn = t_new (g, "norm_x_normed", d->e * Th, MODEL_TENSOR_POINTWISE, (gint) in);
      out = t_new (g, name, d->e * Th, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "rms_norm", out, x32, rstd, xn);
      writes (g, x32, rstd, xn);
    }
  else if (d->autocast && d->eager && d->rms)
    {
      /* autocast's fp32 stream through HF's eager RMSNorm: pow saves the fp32 input itself
       * (`.to(torch.float32)` of an fp32 tensor is no copy), rsqrt its result, and
       * `self.weight * hidden_states.to(input_dtype)` saves x_normed in the input's dtype,
       * fp32 (transformers modeling_llama.py LlamaRMSNorm) */
      guint rstd = t_new (g, "norm_rstd", 4 * d->T, MODEL_TENSOR_POINTWISE, -1);
      guint xn = t_new (g, "norm_x_normed", d->ea * Th, MODEL_TENSOR_POINTWISE, (gint) in);
      out = t_new (g, name, d->ea * Th, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "rms_norm", out, in, rstd, xn);
      writes (g, rstd, xn, NO);
    }
  else
    {
      out = t_new (g, name, d->ea * Th, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "layer_norm", out, in, NO, NO);
    }
  /* HF's RMSNorm returns `weight * x.to(input_dtype)`: the input's dtype (the fp32 stream
   * under autocast, e otherwise) */
  ModelOp k = cost_norm_op (d, kernel, d->norm_fp32 ? d->e : d->ea);
  model_graph_op_kernel (g, &k);
  /* Megatron's layernorm recompute discards the output after its consumers ran and
   * recomputes it before their backward (transformer_layer.py CheckpointWithoutOutput over
   * input_layernorm / pre_mlp_layernorm); the norm's input stays (the residual stream) */
  selective_op (g, d, MODEL_RECOMPUTE_LAYERNORM);
  return selective (g, d, MODEL_RECOMPUTE_LAYERNORM, out);
}

/* The tensors `n` projections reading `in` save: `in` itself, or under autocast one e-byte
 * cast each (autocast caches casts of leaf weights only, autocast_mode.cpp cached_cast). */
static void
proj_inputs (ModelGraph *g, const Dims *d, guint in, guint n, guint *out)
{
  for (guint k = 0; k < n; k++)
    out[k] = d->autocast ? t_new (g, "cast", d->e * d->T * d->h, MODEL_TENSOR_POINTWISE, -1)
                         : in;
}

static guint
core (ModelGraph *g, const Dims *d, guint t)
{
  return selective (g, d, MODEL_RECOMPUTE_CORE_ATTN, t);
}

/* q, k, v from the norm output `n1` (in[] the tensors the projections save). */
static void
qkv (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n1, const guint *in, guint *q,
     guint *k, guint *v)
{
  double T = d->T, h = d->h, e = d->e, bias = arch->qkv_bias ? 1.0 : 0.0;
  *q = t_new (g, "q", e * T * d->q, MODEL_TENSOR_GEMM, -1);
  *k = t_new (g, "k", e * T * d->c, MODEL_TENSOR_GEMM, -1);
  *v = t_new (g, "v", e * T * d->c, MODEL_TENSOR_GEMM, -1);
  if (model_arch_fused_qkv (arch))
    {
      double n = d->q + 2 * d->c;
      op1 (g, "qkv", *q, in[0], NO, NO);
      writes (g, *k, *v, NO);
      gemm (g, d, "qkv", T, h, n, h * n + bias * n);
      frees (g, n1, in[0], NO);
      return;
    }
  op1 (g, "q_proj", *q, in[0], NO, NO);
  gemm (g, d, "q_proj", T, h, d->q, h * d->q + bias * d->q);
  op1 (g, "k_proj", *k, in[d->qkv_in > 1 ? 1 : 0], NO, NO);
  gemm (g, d, "k_proj", T, h, d->c, h * d->c + bias * d->c);
  op1 (g, "v_proj", *v, in[d->qkv_in > 1 ? 2 : 0], NO, NO);
  gemm (g, d, "v_proj", T, h, d->c, h * d->c + bias * d->c);
  frees (g, n1, NO, NO);
}

/* FlashAttention (Dao et al. 2022 §3): its two GEMMs, 4·b·s·s_kv·a·d FLOPs (the full
 * square; hardware/kernel.c halves it for the causal mask); reads q, k, v, writes o. */
static guint
flash_attention (ModelGraph *g, const Dims *d, guint q, guint k, guint v)
{
  guint o = t_new (g, "attn_out", d->e * d->T * d->v_q, MODEL_TENSOR_ATTENTION, -1);
  guint lse = core (g, d, t_new (g, "logsumexp", 4 * d->b * d->a * d->s, MODEL_TENSOR_ATTENTION, -1));
  guint saved[5] = { q, k, v, o, lse };
  model_graph_op (g, "attention", o, saved, 5);
  writes (g, lse, NO, NO);
  frees (g, q, k, v);
  selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
  /* Q·Kᵀ over q's width, P·V over the values' (v_q = q but under MLA, Dims) */
  ModelOp kern = { "attention", MODEL_OP_ATTENTION,
                   2 * d->b * d->s * d->s_kv * (d->q + d->v_q),
                   d->e * d->T * (d->q + d->c + d->v_c + d->v_q), 0,
                   { .cls = HW_KERNEL_FLASH_FWD, .seq = d->s, .head_dim = d->q / d->a,
                     .causal = d->causal }, 1, FALSE };
  model_graph_op_kernel (g, &kern);
  return o;
}

/* The eager core: S = Q·Kᵀ, (ALiBi), softmax, (dropout), P·V. The scores are in the
 * activation dtype (autocast runs matmul in it). The softmax runs in fp32 under autocast
 * (its fp32 list) and where the model code asks for it (d->sm_fp32: HF LlamaAttention's
 * `softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)`): ATen's softmax
 * (aten/src/ATen/native/SoftMax.cpp `softmax`) first converts its input
 * (`input_.toType(dtype)`, a kernel reading e and writing 4 B a score; the copy lives
 * through the softmax, beside its input), `_softmax` saves its 4-B result, and the
 * probabilities are cast back to e B for P·V, which saves the cast (the model code's
 * `.to(query.dtype)`, or autocast's cast of the matmul's input). A Half input needs no
 * copy: the same function hands it to one kernel that reads fp16 and writes fp32
 * (`_softmax(input_, dim_, true)`, half_to_float), whose backward writes the fp16 gradient
 * (_softmax_backward_data's input_dtype). BERT's masked scores are fp32 already under
 * autocast (Dims.mask_fp32): the mask's add made them, the op named the upcast here. */
static guint
eager_attention (ModelGraph *g, const Dims *d, guint q, guint k, guint v)
{
  double T = d->T, scores = d->b * d->a * d->s * d->s, hd = d->q / d->a;
  gboolean p32 = d->autocast || d->sm_fp32;
  gboolean half_to_float = p32 && d->fp16 && !d->mask_fp32;
  double pb = p32 ? 4 : d->e; /* B of a probability */
  double in_b = p32 && !half_to_float ? 4 : d->e; /* B of a score the softmax reads */
  guint s = t_new (g, "scores", d->e * scores, MODEL_TENSOR_GEMM, -1);
  op1 (g, "attn_scores", s, q, k, NO);
  frees (g, q, k, NO);
  selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
  ModelOp kern = { "attn_scores", MODEL_OP_GEMM, 2 * d->b * d->s * d->s * d->q,
                   d->e * T * (d->q + d->c) + d->e * scores, 0,
                   { .cls = HW_KERNEL_GEMM, .m = d->s, .n = d->s, .k = hd,
                     .batch = d->b * d->a }, 1, FALSE };
  model_graph_op_kernel (g, &kern);
  if (d->alibi) /* MptAttention: scores + position_bias, out of place */
    {
      guint biased = t_new (g, "alibi_scores", d->e * scores, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "alibi", biased, NO, NO, NO);
      frees (g, s, NO, NO);
      selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
      ew (g, "alibi", 2 * d->e * scores);
      s = biased;
    }
  /* PyTorch <= 1.10: softmax keeps its input, the masked scores (cost.c), which under an
   * fp32 softmax is the upcast copy */
  guint masked = d->sm_in > 0 ? core (g, d, t_new (g, "masked_scores", in_b * scores,
                                                MODEL_TENSOR_POINTWISE, -1))
                              : NO;
  guint up = NO;
  if (p32 && !half_to_float)
    {
      up = masked != NO ? masked : t_new (g, "scores_fp32", 4 * scores,
                                          MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "softmax_upcast", up, NO, NO, NO);
      selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
      /* backward: the fp32 gradient cast back to e (ToCopyBackward): the same bytes, 1× */
      ew_bwd (g, "softmax_upcast", (d->e + 4) * scores, 1.0);
    }
  guint p = core (g, d, t_new (g, "softmax", pb * scores, MODEL_TENSOR_POINTWISE, -1));
  op1 (g, "softmax", p, masked, p, NO);
  frees (g, s, up, NO);
  selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
  /* backward reads the output and its gradient, writes the input's: 1.5× (PyTorch
   * _softmax_backward_data, derivatives.yaml `_softmax: self: _softmax_backward_data(grad,
   * result, …)`; Megatron's fused scale_mask_softmax backward likewise reads
   * softmax_results and output_grads and writes in place, megatron/fused_kernels/
   * scaled_masked_softmax.h scaled_masked_softmax_warp_backward) */
  if (half_to_float) /* reads 2, writes 4; backward reads 4 + 4, writes 2 */
    ew_bwd (g, "softmax", (d->e + 4) * scores, (8 + d->e) / (d->e + 4));
  else
    ew_bwd (g, "softmax", 2 * pb * scores, 1.5);
  guint av_in = p, last = p;
  if (d->drop > 0)
    {
      guint mask = core (g, d, t_new (g, "attn_dropout_mask", scores, MODEL_TENSOR_POINTWISE, -1));
      /* under an fp32 softmax the dropped-out fp32 P is not kept: the bmm saves its cast */
      guint pd = core (g, d, t_new (g, "attn_dropout", p32 ? 0 : d->e * scores,
                                 MODEL_TENSOR_POINTWISE, -1));
      op1 (g, "attn_dropout", pd, mask, NO, NO);
      writes (g, mask, NO, NO);
      frees (g, p, NO, NO);
      selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
      /* backward grad·mask·scale: reads the gradient and the 1-byte mask, writes one:
       * what the forward moved, 1× (native_dropout_backward, derivatives.yaml
       * `native_dropout: input: native_dropout_backward(grad, result1, scale)`) */
      ew_bwd (g, "attn_dropout", 2 * d->e * scores + scores, 1.0);
      av_in = last = pd;
    }
  if (p32)
    {
      av_in = core (g, d, t_new (g, "attn_av_cast", d->e * scores, MODEL_TENSOR_POINTWISE, -1));
      op1 (g, "probs_cast", av_in, NO, NO, NO);
      selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
      /* reads 4, writes e B a probability; backward casts the gradient up (1×) */
      ew_bwd (g, "probs_cast", (4 + d->e) * scores, 1.0);
    }
  guint o = t_new (g, "attn_out", d->e * T * d->v_q, MODEL_TENSOR_GEMM, -1);
  op1 (g, "attn_av", o, av_in, v, NO);
  frees (g, av_in, v, last != av_in ? last : NO);
  selective_op (g, d, MODEL_RECOMPUTE_CORE_ATTN);
  ModelOp av = { "attn_av", MODEL_OP_GEMM, 2 * d->b * d->s * d->s * d->v_q,
                 d->e * scores + d->e * T * (d->v_c + d->v_q), 0,
                 { .cls = HW_KERNEL_GEMM, .m = d->s, .n = d->v_q / d->a, .k = d->s,
                   .batch = d->b * d->a }, 1, FALSE };
  model_graph_op_kernel (g, &av);
  return o;
}

/* ---- DeepSeek: MLA and the shared experts ------------------------------------------ */

/* An RMSNorm over `width` features of the T tokens of `in` (MLA's q_a_layernorm and
 * kv_a_layernorm, DeepseekV2RMSNorm): saves its input (the fp32 copies of norm() left out),
 * one kernel reading and writing e·T·width and its weight. */
static guint
mla_norm (ModelGraph *g, const Dims *d, guint in, double width, const char *name)
{
  guint out = t_new (g, name, d->e * d->T * width, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "rms_norm", out, in, NO, NO);
  ew (g, name, 2 * d->e * d->T * width + d->w * width);
  return out;
}

/* Multi-head Latent Attention's projections (DeepSeek-V2 arXiv 2405.04434 §2.1.2-2.1.3,
 * eq. 9-19; HF modeling_deepseek.py DeepseekV2Attention.forward), nh heads, dn/dr/dv:
 *   q        q_proj h → nh·(dn+dr), or q_a_proj h → r_q, q_a_layernorm, q_b_proj → nh·(dn+dr)
 *   latent   kv_a_proj_with_mqa h → r_kv + dr (c_KV and the shared rotary key k_pe),
 *            kv_a_layernorm on c_KV, kv_b_proj r_kv → nh·(dn+dv) (k_nope and the values)
 *   rotary   on q_pe (nh·dr) and k_pe (dr), read + write
 *   assembly query_states = [q_nope, q_pe] and key_states = [k_nope, k_pe broadcast over the
 *            heads] are new tensors (new_empty + two slice copies): one kernel each,
 *            reading its parts and writing nh·(dn+dr)
 * Outputs *q, *k (nh·(dn+dr) each: Dims q, c) and *v, the kv_b output whose value slice
 * (nh·dv, Dims v_c) the attention reads (a view: autograd keeps its base). The training
 * graph keeps the per-head k and v (HF's path), not the absorbed latent-cache form of
 * inference (V2 §2.1.2, "absorb W_UK into W_UQ"). */
static void
mla_qkv (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n1, const guint *in,
         guint *q, guint *k, guint *v)
{
  const ModelDeepseek *ds = &arch->deepseek;
  double T = d->T, h = d->h, e = d->e, nh = d->a;
  double rq = (double) ds->q_lora_rank, rkv = (double) ds->kv_lora_rank;
  double dn = (double) ds->qk_nope_head_dim, dr = (double) ds->qk_rope_head_dim;
  double dv = (double) ds->v_head_dim;
  guint qp = t_new (g, "q", e * T * d->q, MODEL_TENSOR_GEMM, -1);
  if (rq > 0)
    {
      guint qa = t_new (g, "q_a", e * T * rq, MODEL_TENSOR_GEMM, -1);
      op1 (g, "q_a_proj", qa, in[0], NO, NO);
      gemm (g, d, "q_a_proj", T, h, rq, h * rq);
      guint qn = mla_norm (g, d, qa, rq, "q_a_layernorm");
      frees (g, qa, NO, NO);
      op1 (g, "q_b_proj", qp, qn, NO, NO);
      gemm (g, d, "q_b_proj", T, rq, d->q, rq * d->q);
      selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
      frees (g, qn, NO, NO);
    }
  else
    {
      op1 (g, "q_proj", qp, in[0], NO, NO);
      gemm (g, d, "q_proj", T, h, d->q, h * d->q);
      selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
    }
  selective (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ, qp);
  guint kva = t_new (g, "kv_a", e * T * (rkv + dr), MODEL_TENSOR_GEMM, -1);
  op1 (g, "kv_a_proj_with_mqa", kva, in[d->qkv_in > 1 ? 1 : 0], NO, NO);
  gemm (g, d, "kv_a_proj_with_mqa", T, h, rkv + dr, h * (rkv + dr));
  frees (g, n1, NO, NO);
  guint ckv = mla_norm (g, d, kva, rkv, "kv_a_layernorm");
  guint kvb = t_new (g, "kv_b", e * T * nh * (dn + dv), MODEL_TENSOR_GEMM, -1);
  op1 (g, "kv_b_proj", kvb, ckv, NO, NO);
  gemm (g, d, "kv_b_proj", T, rkv, nh * (dn + dv), rkv * nh * (dn + dv));
  selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
  selective (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ, kvb);
  frees (g, ckv, NO, NO);
  if (d->rotary)
    {
      op1 (g, "rotary", selective (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ, scratch (g)), NO, NO, NO);
      ew (g, "rotary", 2 * e * T * (nh * dr + dr));
      selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
    }
  *q = selective (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ,
                  t_new (g, "query_states", e * T * d->q, MODEL_TENSOR_POINTWISE, -1));
  op1 (g, "q_assemble", *q, NO, NO, NO);
  frees (g, qp, NO, NO);
  ew (g, "q_assemble", 2 * e * T * d->q);
  selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
  *k = selective (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ,
                  t_new (g, "key_states", e * T * d->c, MODEL_TENSOR_POINTWISE, -1));
  op1 (g, "k_assemble", *k, NO, NO, NO);
  frees (g, kva, NO, NO);
  ew (g, "k_assemble", e * T * (nh * dn + dr) + e * T * d->c);
  selective_op (g, d, MODEL_RECOMPUTE_MLA_UP_PROJ);
  *v = kvb;
}

/* The shared experts: DeepSeekMoE's (DeepseekV2MoE.forward: y + shared_experts(identity);
 * one DeepseekV2MLP of width s = n_shared · moe_intermediate_size) and qwen2_moe's (one
 * Qwen2MoeMLP of shared_expert_intermediate_size, gated below): a SwiGLU on all T tokens,
 * gate and up GEMMs h → s, silu and the product, down s → h. Built before the routed
 * experts (it reads the norm output while that is live; the model runs it after them:
 * the peak differs by the routed block's transients only). Returns its output (e·T·h). */
static guint
shared_experts_block (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n2)
{
  double T = d->T, h = d->h, e = d->e, s = (double) arch->shared_expert_size, es = e * T * s;
  if (s <= 0)
    return NO;
  guint in[2];
  proj_inputs (g, d, n2, (guint) d->mlp_in, in);
  guint gate = t_new (g, "shared_gate", es, MODEL_TENSOR_GEMM, -1);
  op1 (g, "shared_gate_proj", gate, in[0], NO, NO);
  gemm (g, d, "shared_gate", T, h, s, h * s);
  guint up = t_new (g, "shared_up", es, MODEL_TENSOR_GEMM, -1);
  op1 (g, "shared_up_proj", up, in[d->mlp_in > 1 ? 1 : 0], NO, NO);
  gemm (g, d, "shared_up", T, h, s, h * s);
  guint act = t_new (g, "shared_silu", es, MODEL_TENSOR_POINTWISE, (gint) gate);
  op1 (g, "silu", act, gate, NO, NO);
  frees (g, gate, NO, NO);
  if (!d->compile)
    ew (g, "shared_silu", 2 * es);
  guint prod = t_new (g, "shared_product", es, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "mul", prod, act, up, NO);
  frees (g, act, up, NO);
  ew (g, "shared_act", 3 * es);
  guint out = t_new (g, "shared_out", e * T * h, MODEL_TENSOR_GEMM, -1);
  op1 (g, "shared_down_proj", out, prod, NO, NO);
  gemm (g, d, "shared_down", T, s, h, s * h);
  frees (g, prod, NO, NO);
  if (!arch->shared_expert_gate)
    return out;
  /* qwen2_moe (Qwen2MoeSparseMoeBlock.forward): F.sigmoid(shared_expert_gate(x)) ·
   * shared_expert_output, a GEMM h → 1, its sigmoid and the broadcast product (mul saves
   * both factors: e·T·h and e·T). */
  guint logit = t_new (g, "shared_gate_logit", e * T, MODEL_TENSOR_GEMM, -1);
  op1 (g, "shared_expert_gate", logit, in[0], NO, NO);
  gemm (g, d, "shared_expert_gate", T, h, 1, h);
  guint sig = t_new (g, "shared_gate_sigmoid", e * T, MODEL_TENSOR_POINTWISE, (gint) logit);
  op1 (g, "sigmoid", sig, logit, NO, NO);
  frees (g, logit, NO, NO);
  ew (g, "shared_gate_sigmoid", 2 * e * T);
  guint scaled = t_new (g, "shared_scaled", e * T * h, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "mul", scaled, out, sig, NO);
  frees (g, out, sig, NO);
  ew (g, "shared_scale", 2 * e * T * h + e * T);
  return scaled;
}

/* The shared experts (shared_experts_block) as a module of their own: under
 * recompute_modules shared_experts (moe_layer.py shared_experts_compute checkpoints
 * apply_module(self.shared_experts) over the layer input) everything they add is rerun. */
static guint
shared_experts (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n2)
{
  guint t0 = g->tensors->len, o0 = g->ops->len;
  guint out = shared_experts_block (g, d, arch, n2);
  if (out != NO && (d->recompute & MODEL_RECOMPUTE_SHARED_EXPERTS))
    model_graph_mark_block_selective (g, t0, o0);
  return out;
}

/* The routed output plus the shared experts': read two, write one (e·T·h each). */
static guint
add_shared (ModelGraph *g, const Dims *d, guint routed, guint shared)
{
  guint sum = t_new (g, "moe_out", d->e * d->T * d->h, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "shared_add", sum, NO, NO, NO);
  frees (g, routed, shared, NO);
  ew (g, "shared_add", 3 * d->e * d->T * d->h);
  return sum;
}

/* ---- end DeepSeek ------------------------------------------------------------------- */

/* The tensor the MLP's down projection saves for `x`: x itself, or under kbit the e-byte
 * autocast cast of the fp32 x that the adapter's lora_A makes and saves (PEFT
 * tuners/lora/bnb.py Linear4bit.forward: under autocast x is not converted, and lora_A's
 * F.linear casts it; bitsandbytes' MatMul4Bit saves no input, autograd/_functions.py
 * MatMul4Bit.forward ctx.tensors = (None, B)). The base's own x.to(compute_dtype) is a
 * transient nothing saves. */
static guint
down_input (ModelGraph *g, const Dims *d, guint x)
{
  if (!d->kbit)
    return x;
  guint c = t_new (g, "mlp_down_cast", d->e * d->m * d->i, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "lora_a_cast", c, NO, NO, NO);
  return c;
}

const char *const model_cost_moe_row_tensors[] = {
  "routed_tokens", "mlp_gate",      "mlp_up",     "mlp_silu",         "mlp_product",
  "mlp_clamped",   "mlp_down_cast", "expert_out", "expert_bias_rows", NULL
};

const char *const model_cost_moe_inner_row_tensors[] = {
  "mlp_gate", "mlp_up", "mlp_silu", "mlp_product", "mlp_clamped", "mlp_down_cast", NULL
};

/* MoE: the m routed tokens split over the touched experts, one GEMM each (a grouped GEMM,
 * as even routing gives): m/touched rows × `touched` products. Dense: unchanged. */
static void
expert_gemm (ModelGraph *g, const Dims *d, const char *kernel, double n, double p,
             double weights)
{
  ModelOp k = cost_gemm_op (d, kernel, d->m, n, p, d->touched * weights);
  if (d->E > 0 && d->touched > 1)
    {
      k.shape.m /= d->touched;
      k.shape.batch = d->touched;
    }
  model_graph_op_kernel (g, &k);
}

/* Megatron's TEGroupedMLP (experts.py) after fc1's two halves `gate` and `up` (e·m·i B
 * each, `ei`): the fused weighted SwiGLU (fused_bias_swiglu.py weighted_bias_swiglu_impl)
 * saves fc1's output and the rows' routing weights and writes silu(gate)·up·prob, which fc2
 * saves: no SiLU output tensor, and the probabilities are applied here, not in the combine.
 * Returns the product (fc2's input). */
static guint
grouped_swiglu (ModelGraph *g, const Dims *d, const ModelArch *arch, guint gate, guint up,
                double ei)
{
  guint act_in = NO;
  if (arch->swiglu_limit > 0)
    {
      /* gpt_oss's clamped GLU: Megatron clamps the two halves and concatenates them outside
       * the fused kernel (fused_bias_geglu.py weighted_bias_quick_geglu_impl with
       * clamp_value): each clamp reads and writes its half, the cat reads both and writes
       * fc1's width again, 8·e·m·i B; the clamps save their inputs (fc1's output stays) and
       * the activation the cat; backward, each clamp's reads the gradient and its input and
       * writes one, 6·e·m·i */
      act_in = selective (g, d, MODEL_RECOMPUTE_MOE_ACT,
                          t_new (g, "mlp_clamped", 2 * ei, MODEL_TENSOR_POINTWISE, -1));
      op1 (g, "clamp_cat", act_in, gate, up, NO);
      ew_bwd (g, "mlp_clamp", 8 * ei, 0.75);
      selective_op (g, d, MODEL_RECOMPUTE_MOE_ACT);
    }
  /* moe_act recompute (experts.py: CheckpointWithoutOutput over the activation) keeps
   * fc1's output and reruns the activation before fc2's backward */
  guint prod = selective (g, d, MODEL_RECOMPUTE_MOE_ACT,
                          t_new (g, "mlp_product", ei, MODEL_TENSOR_POINTWISE, -1));
  op1 (g, "weighted_swiglu", prod, act_in != NO ? act_in : gate, act_in != NO ? NO : up, NO);
  frees (g, gate, up, act_in);
  ew (g, "mlp_act", 3 * ei); /* read gate and up, write the product */
  selective_op (g, d, MODEL_RECOMPUTE_MOE_ACT);
  return prod;
}

/* The MLP's inner tensors for `m` tokens reading the tensors in[] (mlp_in of them, made
 * from `src`, freed after the last reads it); returns the down projection's input. Under
 * kbit (QLoRA + autocast with PEFT's prepare_model_for_kbit_training: the norms and so the
 * MLP's input are fp32) bitsandbytes 0.45 nn/modules.py Linear4bit.forward computes in
 * compute_dtype and returns `.to(inp_dtype)`, fp32, and LoRA's result + lora_B(…) promotes
 * to fp32 too: the gate/up/fc outputs are 4 B an element, and silu, gelu and their product
 * (on no autocast list) stay fp32, their kernels moving 4 B an element. */
static guint
mlp_inner (ModelGraph *g, const Dims *d, const ModelArch *arch, guint src, const guint *in)
{
  double ei = (d->kbit ? 4.0 : d->e) * d->m * d->i, h = d->h, i = d->i;
  double bias = arch->mlp_bias ? 1.0 : 0.0;
  if (arch->mlp == MODEL_MLP_SWIGLU)
    {
      guint gate = t_new (g, "mlp_gate", ei, MODEL_TENSOR_GEMM, -1);
      op1 (g, "gate_proj", gate, in[0], NO, NO);
      expert_gemm (g, d, "mlp_gate", h, i, h * i + bias * i);
      guint up = t_new (g, "mlp_up", ei, MODEL_TENSOR_GEMM, -1);
      op1 (g, "up_proj", up, in[d->mlp_in > 1 ? 1 : 0], NO, NO);
      expert_gemm (g, d, "mlp_up", h, i, h * i + bias * i);
      frees (g, src, NO, NO);
      if (d->grouped)
        return grouped_swiglu (g, d, arch, gate, up, ei);
      guint act = t_new (g, "mlp_silu", ei, MODEL_TENSOR_POINTWISE, (gint) gate);
      op1 (g, "silu", act, gate, NO, NO);
      frees (g, gate, NO, NO);
      if (!d->compile) /* read gate, write silu(gate) */
        ew (g, "mlp_silu", 2 * ei);
      guint prod = t_new (g, "mlp_product", ei, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "mul", prod, act, up, NO);
      frees (g, act, up, NO);
      /* eager: read silu(gate) and up, write the product; compiled, silu fused in: read
       * gate and up, write the product */
      ew (g, "mlp_act", 3 * ei);
      return prod;
    }
  guint fc = t_new (g, "mlp_fc", ei, MODEL_TENSOR_GEMM, -1);
  op1 (g, "mlp_fc", fc, in[0], NO, NO);
  expert_gemm (g, d, "mlp_fc", h, i, h * i + bias * i);
  frees (g, src, NO, NO);
  guint act = t_new (g, "mlp_act", ei, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "gelu", act, fc, NO, NO);
  frees (g, fc, NO, NO);
  /* backward reads the gradient and the saved input, writes one: 1.5× (gelu_backward,
   * derivatives.yaml `gelu: self: gelu_backward(grad, self, approximate)`; Megatron's
   * bias_gelu_back, megatron/model/fused_bias_gelu.py, reads g, bias, y, writes ff) */
  ew_bwd (g, "mlp_act", 2 * ei, 1.5);
  return act;
}

/* The MLP (dense or MoE) reading the norm output n2. Returns its output. */
static guint
mlp_block (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n2)
{
  double T = d->T, h = d->h, e = d->e, bias = arch->mlp_bias ? 1.0 : 0.0;
  const char *down = arch->mlp == MODEL_MLP_SWIGLU ? "mlp_down" : "mlp_proj";
  guint in[2];
  guint shared = arch->n_experts > 0 && arch->shared_expert_size > 0
                   ? shared_experts (g, d, arch, n2) : NO;
  if (arch->n_experts > 0)
    {
      /* the router reads the norm output; probabilities saved for the combine; each routed
       * token copy (one cast each under autocast) is what the experts' GEMMs save */
      guint logits = t_new (g, "router_logits", e * T * d->E, MODEL_TENSOR_GEMM, -1);
      guint rin;
      proj_inputs (g, d, n2, 1, &rin);
      op1 (g, "router", logits, rin, NO, NO);
      gemm (g, d, "router", T, h, d->E, h * d->E);
      guint probs = t_new (g, "router_probs", e * T * d->E, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "router_softmax", probs, probs, NO, NO);
      frees (g, logits, NO, NO);
      for (guint k = 0; k < (guint) d->mlp_in; k++)
        {
          in[k] = t_new (g, "routed_tokens", e * d->m * h, MODEL_TENSOR_POINTWISE, -1);
          op1 (g, "dispatch", in[k], NO, NO, NO);
          if (k == 0) /* read the tokens, write their routed copies */
            ew (g, "moe_dispatch", e * T * h + e * d->m * h);
        }
      frees (g, n2, rin, NO);
      guint inner = mlp_inner (g, d, arch, in[0], in), din = down_input (g, d, inner);
      guint out = t_new (g, "expert_out", e * d->m * h, MODEL_TENSOR_GEMM, -1);
      op1 (g, "expert_down", out, din, NO, NO);
      expert_gemm (g, d, down, d->i, h, d->i * h + bias * h);
      frees (g, inner, din, d->mlp_in > 1 ? in[1] : NO);
      if (d->grouped && arch->mlp_bias)
        {
          /* Megatron adds the experts' fc2 bias outside the grouped GEMM (skip_bias_add),
           * scaled by each row's routing weight, in fp32 (experts.py TEGroupedMLP
           * _apply_packed_bias: repeat_interleave of the fp32 bias rows, × probs,
           * + output, .to(dtype)): 4 + 8 + (e + 8) + (4 + e) B an output element; the
           * multiplication saves the fp32 bias rows (4·m·h) for the weights' gradient; the
           * backward (two casts, the products' gradients, the per-expert sums) about
           * 32 + 2e */
          guint rows = t_new (g, "expert_bias_rows", 4 * d->m * h, MODEL_TENSOR_POINTWISE, -1);
          op1 (g, "expert_bias_rows", rows, NO, NO, NO);
          guint biased = t_new (g, "expert_out", e * d->m * h, MODEL_TENSOR_POINTWISE, -1);
          op1 (g, "expert_bias", biased, rows, NO, NO);
          ew_bwd (g, "expert_bias", (24 + 2 * e) * d->m * h, (32 + 2 * e) / (24 + 2 * e));
          frees (g, out, NO, NO);
          out = biased;
        }
      guint comb = t_new (g, "moe_combine", e * T * h, MODEL_TENSOR_POINTWISE, -1);
      /* HF multiplies each expert's output by its routing weight (both saved); Megatron's
       * grouped SwiGLU applied the weights already, and its unpermute saves nothing */
      gboolean weighted = d->grouped && arch->mlp == MODEL_MLP_SWIGLU;
      op1 (g, "combine", comb, weighted ? NO : out, weighted ? NO : probs, NO);
      frees (g, out, probs, NO);
      ew (g, "moe_combine", e * d->m * h + e * T * h);
      return shared != NO ? add_shared (g, d, comb, shared) : comb;
    }
  proj_inputs (g, d, n2, (guint) d->mlp_in, in);
  gboolean gated = arch->mlp == MODEL_MLP_SWIGLU;
  autocast_casts (g, d, (gated ? 2 : 1) * h * d->i, gated ? 2 : 1, (guint) d->mlp_in);
  guint inner = mlp_inner (g, d, arch, n2, in), din = down_input (g, d, inner);
  autocast_casts (g, d, d->i * h, 1, 0);
  guint out = t_new (g, "mlp_out", e * T * h, MODEL_TENSOR_GEMM, -1);
  op1 (g, "mlp_down", out, din, NO, NO);
  expert_gemm (g, d, down, d->i, h, d->i * h + bias * h);
  frees (g, inner, din, NO);
  return out;
}

/* The MLP as a checkpointed module: under recompute_modules mlp (a dense layer:
 * transformer_layer.py _forward_mlp checkpoints self.mlp over the pre-MLP norm's output;
 * Megatron applies it to dense layers only) or moe (a MoE layer: moe_layer.py forward
 * checkpoints route, shared experts, dispatch, experts and combine), every tensor and op
 * the block adds is re-created and rerun; its input, the norm's output, stays. */
static guint
mlp (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n2)
{
  guint t0 = g->tensors->len, o0 = g->ops->len;
  guint out = mlp_block (g, d, arch, n2);
  if (d->recompute & (arch->n_experts > 0 ? MODEL_RECOMPUTE_MOE : MODEL_RECOMPUTE_MLP))
    model_graph_mark_block_selective (g, t0, o0);
  return out;
}

/* `residual` + dropout(`branch`): the dropout (1-byte mask saved) and the add. Frees both
 * inputs; returns the sum. */
static guint
residual (ModelGraph *g, const Dims *d, guint res, guint branch, const char *drop_name,
          const char *name)
{
  double Th = d->T * d->h;
  if (d->drop > 0)
    {
      guint m = t_new (g, drop_name, Th, MODEL_TENSOR_POINTWISE, -1);
      guint dropped = t_new (g, "dropped", d->e * Th, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, drop_name, dropped, m, NO, NO);
      writes (g, m, NO, NO);
      frees (g, branch, NO, NO);
      /* native_dropout: read, write, write the mask; its backward reads the gradient and
       * the mask, writes one: 1× (native_dropout_backward, derivatives.yaml) */
      if (!d->compile)
        ew_bwd (g, drop_name, 2 * d->e * Th + Th, 1.0);
      branch = dropped;
    }
  guint sum = t_new (g, name, d->ea * Th, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, name, sum, NO, NO, NO);
  frees (g, res, branch, NO);
  /* read both, write the sum; compiled, the dropout is fused in (+ its mask). Its
   * backward: add's gradient is the identity for both inputs (derivatives.yaml `add.Tensor:
   * self: handle_r_to_c(self, grad), other: maybe_multiply(grad, alpha)`), no kernel; the
   * kernel it costs is autograd's accumulation where the residual stream forks (the norm
   * and this add both read `res`: InputBuffer::accumulate adds the two gradients), read
   * two, write one: 1× eager. Compiled, the fused dropout's backward (reads the gradient
   * and the mask, writes one) comes on top: left at the default 2× (≈ 1.6× real). */
  ew_bwd (g, name, 3 * d->e * Th + (d->compile ? d->drop * Th : 0), d->compile ? 0 : 1.0);
  return sum;
}

/* LoRA (finetune.h), per targeted projection: A·x (e·tokens·r, which B's weight gradient
 * reads), B·(A·x), then PEFT's `result + lora_B(lora_A(x)) * scaling` (peft/tuners/lora/
 * layer.py, Linear.forward): the scaled copy reads and writes tokens × out (2), the sum
 * reads two and writes one (3), 5·e·tokens·out; its backward only scales the incoming
 * gradient (the sum passes it through): 2·e·tokens·out, 0.4× the forward. Tokens per
 * projection: T, or T·k over the experts of an MoE MLP; `count` such projections run as
 * one batched kernel. The adapters of the attention's projections (`attention`) run after
 * the o-projection, the MLP's after its down projection: their transients (B·A·x) are
 * placed with the block they belong to, not with the exact projection. */
static void
lora (ModelGraph *g, const Dims *d, const ModelArch *arch, gboolean attention)
{
  if (!d->frozen)
    return;
  g_autoptr (GArray) lin = model_finetune_layer_linears (arch, d->ft);
  double r = (double) d->ft->rank, e = d->e, w = d->w;
  for (guint j = 0; j < lin->len; j++)
    {
      const ModelLinear *x = &g_array_index (lin, ModelLinear, j);
      if (!x->targeted || x->attention != attention)
        continue;
      double m = d->T * x->tokens_per_token, n = (double) x->count, tok = m * n;
      double in = (double) x->in, out = (double) x->out;
      /* Names by the base's tensor-parallel split (tensor_parallel.c act_regions): A·x of
       * a row-parallel base (o, down) and its B·(A·x) live with the residual stream's
       * tokens; a column-parallel base's B·(A·x) is split with its output features. */
      const char *ax_name = x->reads_inner ? "lora_ax_row" : "lora_ax";
      const char *bx_name = x->reads_inner ? "lora_bx_row" : x->kv ? "lora_bx_kv" : "lora_bx";
      guint ax = t_new (g, ax_name, e * tok * r, MODEL_TENSOR_GEMM, -1);
      op1 (g, "lora_a", ax, NO, NO, NO);
      ModelOp ka = { "lora_a", MODEL_OP_GEMM, 2 * tok * in * r,
                     e * tok * in + w * r * in * n + e * tok * r, 0,
                     { .cls = HW_KERNEL_GEMM, .m = m, .n = r, .k = in, .batch = n }, 1, FALSE };
      model_graph_op_kernel (g, &ka);
      guint bx = t_new (g, bx_name, e * tok * out, MODEL_TENSOR_GEMM, -1);
      op1 (g, "lora_b", bx, ax, NO, NO);
      frees (g, ax, NO, NO);
      ModelOp kb = { "lora_b", MODEL_OP_GEMM, 2 * tok * r * out,
                     e * tok * r + w * r * out * n + e * tok * out, 0,
                     { .cls = HW_KERNEL_GEMM, .m = m, .n = out, .k = r, .batch = n }, 1, FALSE };
      model_graph_op_kernel (g, &kb);
      op1 (g, "lora_scale_add", scratch (g), NO, NO, NO);
      frees (g, bx, NO, NO);
      ModelOp ks = cost_elementwise_op ("lora_scale_add", 5 * e * tok * out);
      ks.bwd_factor = 0.4;
      model_graph_op_kernel (g, &ks);
    }
}

/* QLoRA: read the NF4 codes and constants, write 16-bit weights (the compute dtype,
 * bnb_4bit_compute_dtype); redone once in backward (1×). The buffer is the largest
 * projection's 16-bit weight (bitsandbytes dequantizes one Linear at a time), live through
 * the layer's GEMMs and adapters (freed by the last residual add). NO without QLoRA. */
static guint
nf4_dequant (ModelGraph *g, const Dims *d, const ModelArch *arch)
{
  if (!d->nf4)
    return NO;
  double n = (double) model_finetune_layer_linear_params (arch);
  guint wq = t_new (g, "nf4_dequantized", 2 * cost_largest_linear (arch), MODEL_TENSOR_POINTWISE,
                    -1);
  op1 (g, "nf4_dequant", wq, NO, NO, NO);
  ModelOp k = cost_elementwise_op ("nf4_dequant",
                                   n * (MODEL_NF4_BYTES + model_finetune_nf4_constant_bytes (d->ft) + 2));
  k.bwd_factor = 1;
  model_graph_op_kernel (g, &k);
  return wq;
}

ModelGraph *
cost_layer_graph (const Dims *d, const ModelArch *arch, gboolean flash)
{
  ModelGraph *g = model_graph_new ();
  double T = d->T, h = d->h, e = d->e;
  guint x = t_new (g, "input", d->ea * T * h, MODEL_TENSOR_INPUT, -1);
  guint wq = nf4_dequant (g, d, arch);
  guint n1 = norm (g, d, x, "norm1_out", "norm1");
  guint in[3], q, k, v;
  proj_inputs (g, d, n1, (guint) d->qkv_in, in);
  if (!arch->deepseek.mla)
    autocast_casts (g, d, h * (d->q + 2 * d->c), model_arch_fused_qkv (arch) ? 1 : 3,
                    (guint) d->qkv_in);
  if (arch->deepseek.mla)
    mla_qkv (g, d, arch, n1, in, &q, &k, &v);
  else
    qkv (g, d, arch, n1, in, &q, &k, &v);
  if (d->rotary && !arch->deepseek.mla)
    {
      /* fused (Megatron's and nanotron's kernels, compile): q and k read and written once.
       * HF's eager apply_rotary_pos_emb (modeling_llama.py) runs `q * cos`,
       * rotate_half's `-x2` and `cat`, `* sin` and the add on q and on k: 5 ops each,
       * 10·e B an element (read e + write e each, half for the negation, two reads for
       * the add) */
      op1 (g, "rotary", scratch (g), NO, NO, NO);
      ModelOp rk = cost_elementwise_op ("rotary", (d->eager ? 10 : 2) * e * T * (d->q + d->c));
      rk.host_ops = d->eager ? 10 : 1;
      model_graph_op_kernel (g, &rk);
    }
  if (d->kv_repeat)
    {
      /* k.unsqueeze(2).expand(…).flatten(1, 2): a copy at the query heads; expand and
       * flatten save nothing, the attention saves the copies (torchtune
       * modules/attention.py MultiHeadAttention.forward; HF repeat_kv); each reads the
       * kv heads and writes the copy */
      guint kr = t_new (g, "k_repeated", e * T * d->q, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "k_repeat", kr, NO, NO, NO);
      frees (g, k, NO, NO);
      ew (g, "k_repeat", e * T * (d->c + d->q));
      guint vr = t_new (g, "v_repeated", e * T * d->q, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "v_repeat", vr, NO, NO, NO);
      frees (g, v, NO, NO);
      ew (g, "v_repeat", e * T * (d->c + d->q));
      k = kr, v = vr;
    }
  guint o = flash ? flash_attention (g, d, q, k, v) : eager_attention (g, d, q, k, v);
  autocast_casts (g, d, d->v_q * h, 1, 0);
  guint ao = t_new (g, "o_proj_out", e * T * h, MODEL_TENSOR_GEMM, -1);
  op1 (g, "o_proj", ao, o, NO, NO);
  gemm (g, d, "attn_out", T, d->v_q, h, d->v_q * h + (arch->attn_out_bias ? h : 0));
  frees (g, o, NO, NO);
  lora (g, d, arch, TRUE);
  guint h1 = residual (g, d, x, ao, "resid_dropout1", "residual1");
  guint n2 = norm (g, d, h1, "norm2_out", "norm2");
  guint mo = mlp (g, d, arch, n2);
  lora (g, d, arch, FALSE);
  residual (g, d, h1, mo, "resid_dropout2", "residual2");
  frees (g, wq, NO, NO);
  return g;
}
