/* models/ops/graph_layer.c — the saved-tensor graph of one transformer layer (graph.h), built
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
 */
#include "config.h"
#include "models/ops/cost-private.h"

#define NO G_MAXUINT

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

/* A norm reading `in`; returns the tensor the following projections read. */
static guint
norm (ModelGraph *g, const Dims *d, guint in, const char *name)
{
  double Th = d->T * d->h;
  if (d->norm_fp32)
    {
      guint x32 = t_new (g, "norm_x_fp32", 4 * Th, MODEL_TENSOR_POINTWISE, (gint) in);
      guint rstd = t_new (g, "norm_rstd", 4 * d->T, MODEL_TENSOR_POINTWISE, -1);
      guint xn = t_new (g, "norm_x_normed", d->e * Th, MODEL_TENSOR_POINTWISE, (gint) in);
      guint out = t_new (g, name, d->e * Th, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "norm_pow", x32, x32, NO, NO);
      op1 (g, "norm_rsqrt", rstd, rstd, x32, NO);
      op1 (g, "norm_scale", out, xn, NO, NO);
      return out;
    }
  guint out = t_new (g, name, d->ea * Th, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "layer_norm", out, in, NO, NO);
  return out;
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
core (ModelGraph *g, guint t)
{
  model_graph_mark_core (g, t);
  return t;
}

static guint
attention (ModelGraph *g, const Dims *d, guint q, guint k, guint v, gboolean flash)
{
  double T = d->T, scores = d->b * d->a * d->s * d->s;
  if (flash)
    {
      guint o = t_new (g, "attn_out", d->e * T * d->q, MODEL_TENSOR_ATTENTION, -1);
      guint lse = core (g, t_new (g, "logsumexp", 4 * d->b * d->a * d->s,
                                  MODEL_TENSOR_ATTENTION, -1));
      guint saved[5] = { q, k, v, o, lse };
      model_graph_op (g, "attention", o, saved, 5);
      return o;
    }
  guint s = t_new (g, "scores", d->ea * scores, MODEL_TENSOR_GEMM, -1);
  op1 (g, "attn_scores", s, q, k, NO);
  /* PyTorch <= 1.10: softmax keeps its input, the masked scores (cost.c) */
  guint masked = d->sm_in > 0 ? core (g, t_new (g, "masked_scores", d->ea * scores,
                                                MODEL_TENSOR_POINTWISE, -1))
                              : NO;
  guint p = core (g, t_new (g, "softmax", d->ea * scores, MODEL_TENSOR_POINTWISE, -1));
  op1 (g, "softmax", p, masked, p, NO);
  guint av_in = p;
  if (d->drop > 0)
    {
      guint mask = core (g, t_new (g, "attn_dropout_mask", scores, MODEL_TENSOR_POINTWISE, -1));
      /* under autocast the fp32 dropped-out P is not kept: the bmm saves its cast */
      guint pd = core (g, t_new (g, "attn_dropout", d->autocast ? 0 : d->e * scores,
                                 MODEL_TENSOR_POINTWISE, -1));
      op1 (g, "attn_dropout", pd, mask, NO, NO);
      av_in = pd;
    }
  if (d->autocast)
    av_in = core (g, t_new (g, "attn_av_cast", d->e * scores, MODEL_TENSOR_POINTWISE, -1));
  guint o = t_new (g, "attn_out", d->e * T * d->q, MODEL_TENSOR_GEMM, -1);
  op1 (g, "attn_av", o, av_in, v, NO);
  return o;
}

/* The tensor the MLP's down projection saves for `x`: x itself, or under kbit the e-byte
 * autocast cast of the fp32 x that the adapter's lora_A makes and saves (PEFT
 * tuners/lora/bnb.py Linear4bit.forward: under autocast x is not converted, and lora_A's
 * F.linear casts it; bitsandbytes' MatMul4Bit saves no input, autograd/_functions.py
 * MatMul4Bit.forward ctx.tensors = (None, B)). The base's own x.to(compute_dtype) is a
 * transient nothing saves. */
static guint
down_input (ModelGraph *g, const Dims *d, guint x, double m)
{
  if (!d->kbit)
    return x;
  guint c = t_new (g, "mlp_down_cast", d->e * m * d->i, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "lora_a_cast", c, NO, NO, NO);
  return c;
}

/* The MLP's inner tensors for `m` tokens reading the tensors in[] (mlp_in of them); returns
 * the one the down projection saves. Under kbit (QLoRA + autocast with PEFT's
 * prepare_model_for_kbit_training: the norms and so the MLP's input are fp32)
 * bitsandbytes 0.45 nn/modules.py Linear4bit.forward computes in compute_dtype and returns
 * `.to(inp_dtype)`, fp32, and LoRA's result + lora_B(…) promotes to fp32 too: the gate/up/fc
 * outputs are 4 B an element, and silu, gelu and their product (on no autocast list) stay
 * fp32. */
static guint
mlp_inner (ModelGraph *g, const Dims *d, const ModelArch *arch, const guint *in, double m)
{
  double ei = (d->kbit ? 4.0 : d->e) * m * d->i;
  if (arch->mlp == MODEL_MLP_SWIGLU)
    {
      guint gate = t_new (g, "mlp_gate", ei, MODEL_TENSOR_GEMM, -1);
      op1 (g, "gate_proj", gate, in[0], NO, NO);
      guint up = t_new (g, "mlp_up", ei, MODEL_TENSOR_GEMM, -1);
      op1 (g, "up_proj", up, in[d->mlp_in > 1 ? 1 : 0], NO, NO);
      guint act = t_new (g, "mlp_silu", ei, MODEL_TENSOR_POINTWISE, (gint) gate);
      op1 (g, "silu", act, gate, NO, NO);
      guint prod = t_new (g, "mlp_product", ei, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "mul", prod, act, up, NO);
      return down_input (g, d, prod, m);
    }
  guint fc = t_new (g, "mlp_fc", ei, MODEL_TENSOR_GEMM, -1);
  op1 (g, "mlp_fc", fc, in[0], NO, NO);
  guint act = t_new (g, "mlp_act", ei, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "gelu", act, fc, NO, NO);
  return down_input (g, d, act, m);
}

static guint
mlp (ModelGraph *g, const Dims *d, const ModelArch *arch, guint n2)
{
  double T = d->T, h = d->h, e = d->e;
  guint in[2];
  if (arch->n_experts > 0)
    {
      /* the router reads the norm output; probabilities saved for the combine; each routed
       * token copy (one cast each under autocast) is what the experts' GEMMs save */
      guint logits = t_new (g, "router_logits", e * T * d->E, MODEL_TENSOR_GEMM, -1);
      guint rin;
      proj_inputs (g, d, n2, 1, &rin);
      op1 (g, "router", logits, rin, NO, NO);
      guint probs = t_new (g, "router_probs", e * T * d->E, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "router_softmax", probs, probs, NO, NO);
      for (guint k = 0; k < (guint) d->mlp_in; k++)
        {
          in[k] = t_new (g, "routed_tokens", e * d->m * h, MODEL_TENSOR_POINTWISE, -1);
          op1 (g, "dispatch", in[k], NO, NO, NO);
        }
      guint inner = mlp_inner (g, d, arch, in, d->m);
      guint out = t_new (g, "expert_out", e * d->m * h, MODEL_TENSOR_GEMM, -1);
      op1 (g, "expert_down", out, inner, NO, NO);
      guint comb = t_new (g, "moe_combine", e * T * h, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "combine", comb, out, probs, NO);
      return comb;
    }
  proj_inputs (g, d, n2, (guint) d->mlp_in, in);
  guint inner = mlp_inner (g, d, arch, in, T);
  guint out = t_new (g, "mlp_out", e * T * h, MODEL_TENSOR_GEMM, -1);
  op1 (g, "mlp_down", out, inner, NO, NO);
  return out;
}

/* A 1-byte dropout mask after `x` (none without dropout). */
static void
dropout_mask (ModelGraph *g, const Dims *d, const char *name)
{
  if (d->drop <= 0)
    return;
  guint m = t_new (g, name, d->T * d->h, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, name, m, m, NO, NO);
}

/* LoRA: each target's A·x (e·tokens·r), which B's weight gradient reads. */
static void
lora (ModelGraph *g, const Dims *d, const ModelArch *arch)
{
  if (!d->frozen)
    return;
  g_autoptr (GArray) lin = model_finetune_layer_linears (arch, d->ft);
  for (guint j = 0; j < lin->len; j++)
    {
      const ModelLinear *x = &g_array_index (lin, ModelLinear, j);
      if (!x->targeted)
        continue;
      double b = d->e * d->T * x->tokens_per_token * (double) x->count * (double) d->ft->rank;
      guint ax = t_new (g, "lora_ax", b, MODEL_TENSOR_GEMM, -1);
      op1 (g, "lora_b", ax, ax, NO, NO);
    }
}

ModelGraph *
cost_layer_graph (const Dims *d, const ModelArch *arch, gboolean flash)
{
  ModelGraph *g = model_graph_new ();
  double T = d->T, h = d->h, e = d->e;
  guint x = t_new (g, "input", d->ea * T * h, MODEL_TENSOR_INPUT, -1);
  guint n1 = norm (g, d, x, "norm1_out");
  guint in[3];
  proj_inputs (g, d, n1, (guint) d->qkv_in, in);
  guint q = t_new (g, "q", e * T * d->q, MODEL_TENSOR_GEMM, -1);
  guint k = t_new (g, "k", e * T * d->c, MODEL_TENSOR_GEMM, -1);
  guint v = t_new (g, "v", e * T * d->c, MODEL_TENSOR_GEMM, -1);
  op1 (g, "q_proj", q, in[0], NO, NO);
  op1 (g, "k_proj", k, in[d->qkv_in > 1 ? 1 : 0], NO, NO);
  op1 (g, "v_proj", v, in[d->qkv_in > 1 ? 2 : 0], NO, NO);
  if (d->kv_repeat)
    {
      /* k.unsqueeze(2).expand(…).flatten(1, 2): a copy at the query heads; expand and
       * flatten save nothing, the attention saves the copies (torchtune
       * modules/attention.py MultiHeadAttention.forward; HF repeat_kv) */
      k = t_new (g, "k_repeated", e * T * d->q, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "k_repeat", k, NO, NO, NO);
      v = t_new (g, "v_repeated", e * T * d->q, MODEL_TENSOR_POINTWISE, -1);
      op1 (g, "v_repeat", v, NO, NO, NO);
    }
  guint o = attention (g, d, q, k, v, flash);
  guint ao = t_new (g, "o_proj_out", e * T * h, MODEL_TENSOR_GEMM, -1);
  op1 (g, "o_proj", ao, o, NO, NO);
  dropout_mask (g, d, "resid_dropout1");
  guint h1 = t_new (g, "residual1", d->ea * T * h, MODEL_TENSOR_POINTWISE, -1);
  op1 (g, "residual1", h1, NO, NO, NO);
  guint n2 = norm (g, d, h1, "norm2_out");
  mlp (g, d, arch, n2);
  dropout_mask (g, d, "resid_dropout2");
  lora (g, d, arch);
  return g;
}
