/* models/ops/cost.c — per-layer FLOPs, HBM bytes, workspace and saved activations (cost.h), and
 * the primitives cost_ends.c shares for the embedding, the head and the step totals.
 *
 * Units: FLOP and bytes, as doubles (SI). Notation as in cost.h; T = b·s tokens, q = a·d
 * (query width), c = k·d (key/value width), m = tokens entering the MLP GEMMs (T, or T·top-k
 * for MoE), e activation bytes, w weight bytes.
 *
 * FLOPs. A GEMM of an m×n by n×p product costs 2·m·n·p; its backward is two GEMMs of the
 * same size (grad of input, grad of weight), 2× forward (Narayanan et al. 2021, arXiv
 * 2104.04473, §5.1). Attention scores count the whole s×s square (no causal halving), as
 * §5.1 does. FlashAttention's forward is its two GEMMs, 4·b·s²·a·d (Dao et al. 2022, arXiv
 * 2205.14135, §3); its backward recomputes the scores, so 5 GEMMs instead of 2: 2.5× forward
 * (Dao 2023, FlashAttention-2, arXiv 2307.08691, §4.1 benchmark FLOP count). Element-wise
 * ops carry 0 FLOPs: they are memory-bound (a few FLOP per element against ≥ 2 bytes moved,
 * far below any GPU's ridge point) and model-FLOPs conventions count matrix products only
 * (Narayanan §5.1; Chowdhery et al. 2022, PaLM, arXiv 2204.02311, App. B). So a pass's
 * flops are exactly its model (or, for recompute, hardware) FLOPs.
 *
 * Bytes (HBM traffic, one read or write of each tensor; assumptions, not measurements):
 *   GEMM        e·(input) + w·(weights incl. bias) + e·(output); backward = 2× forward,
 *               since dX reads dY and W and writes dX, dW reads X and dY and writes dW
 *               (gradients in the weight dtype).
 *   element-wise read + write of each operand; backward 2× forward by default, or the op's
 *               own bwd_factor from what its backward kernel moves (graph_layer.c): dropout
 *               and the residual add 1×, softmax and GELU 1.5× (read two, write one).
 *   flash       q, k, v read + o written; backward reads q, k, v, o, dO, writes dq, dk, dv
 *               (2× forward) + logsumexp and delta (2 × 4·b·a·s). The fp32 dq accumulator's
 *               repeated traffic is assumed to stay in L2.
 *   MoE         expert weights are read once for each expert that receives a token:
 *               min(E, T·top-k) experts (all E once b·s·k ≥ E).
 *
 * A layer's kernels are its op graph's (graph_layer.c: one kernel per op, FLOPs, bytes and
 * GEMM shape each); the forward is their fold in order, the backward their mirror in
 * reverse (cost_mirror_backward), and what a checkpointing policy recomputes is the fold
 * over the ops it reruns (model_graph_op_reruns: the attention core for selective, the
 * non-matmul ops for op-level selective). The embedding and the head (cost_ends.c) are
 * still short op lists of their own.
 *
 * Workspace (transient inside one pass; GEMM/cuBLAS workspace is ignored: a few MiB,
 * allocated once per process, so it belongs to the context/allocator overhead):
 *   forward   the op graph's transient peak (model_graph_transient_peak): the tensors the
 *             forward holds that it does not save, alive from the op that makes them to
 *             the op that frees them: eager attention's pre-softmax scores e·b·a·s², the
 *             residual stream (block input, branch outputs, sums) where no norm saves it,
 *             QLoRA's dequantized weight, LoRA's B·A·x.
 *   backward  2·e·T·h (gradient flowing in, gradient of the layer input) plus the larger of
 *             attention: eager 2·e·b·a·s² (dP and dS coexist in softmax backward) or flash
 *             4·b·a·s (delta) + 4·T·q (FlashAttention-2's fp32 dq accumulator, flash_api.cpp
 *             mha_bwd), + e·T·(q + 2c) (dq, dk, dv);
 *             MLP: SwiGLU 3·e·m·i (d of product, d gate, d up), GELU 2·e·m·i, + e·m·h
 *             for MoE's dispatched-token gradient.
 * Weight gradients are not workspace: they belong to the ledger's `gradients` category.
 *
 * Activations saved by forward (bytes) come from the layer's op graph (graph.h,
 * graph_layer.c: each op's saved tensors by identity, the framework's norm_fp32, compile and
 * kv_repeat), which generalises Korthikanti et al. 2022, arXiv 2205.05198, §4.1 to GQA,
 * SwiGLU, MoE, no dropout and element size e. With norm_fp32 (an upcasting RMSNorm, no
 * autocast) each norm keeps 4·T·h + 4·T + e·T·h instead of its input:
 *   norm1 input e·T·h  (Korthikanti: LayerNorm input 2sbh)
 *   QKV input   e·T·h  (2sbh); under autocast each of separate q, k, v projections
 *               (model_arch_fused_qkv() FALSE) saves its own e-byte cast of the fp32
 *               input, 3·e·T·h: autocast casts activations at every op call and caches
 *               only leaf weights (PyTorch autocast_mode.cpp, cached_cast)
 *   Q, K, V     e·T·(q + 2c)  (QKᵀ 4sbh + V 2sbh when k = a)
 *   eager       softmax output e·b·a·s² (2as²b), 4 B under an fp32 softmax (autocast, or the
 *               HF model code's `softmax(..., dtype=float32)`, Dims.sm_fp32) plus the e-byte
 *               cast P·V saves (graph_layer.c eager_attention); with dropout also its
 *               1-byte mask b·a·s² (as²b) and the dropped-out probabilities e·b·a·s²
 *               (2as²b). PyTorch <= 1.10
 *               also keeps the softmax input, the masked scores (fp32 under autocast):
 *               its derivative formula referenced `self` (pytorch/pytorch#64000, fixed for
 *               1.11 by #65242); log_softmax likewise keeps the loss's fp32 logits
 *   flash       logsumexp 4·b·a·s; its output O is the same storage as the o-proj input
 *               (a view), counted once below; dropout keeps only the RNG state
 *   o-proj input e·T·q (2sbh); dropout mask after it T·h (sbh)
 *   norm2 input e·T·h, MLP input e·T·h (2 × 2sbh); SwiGLU's separate gate and up
 *               projections save 2·e·T·h of it under autocast (as QKV above)
 *   GELU MLP    fc output (GELU input) + GELU output: 2·e·T·i (8sbh + 8sbh at i = 4h)
 *   SwiGLU MLP  gate output, silu(gate), up output, silu(gate)·up (down input): 4·e·T·i as
 *               eager PyTorch keeps them; 3·e·T·i under compile, which recomputes silu(gate)
 *               (as Megatron-LM's fused SwiGLU does, core/fusions/fused_bias_swiglu.py)
 *   MoE         router probabilities e·T·E, then per routed token copy (m = T·k): its
 *               input e·m·h, the expert MLP (above, with m for T), its output e·m·h (for
 *               the routing-weight gradient)
 *   dropout mask after the MLP T·h (sbh)
 * Positions. Rotary (llama-like families) is an element-wise pass over q and k; learned
 * positions (gpt2, bert) a gather in the embedding; MPT's ALiBi (Press et al. 2022, arXiv
 * 2108.12409) adds a per-head linear bias to the scores: fused into the kernel under
 * FlashAttention (FA2 alibi_slopes; llm-foundry's triton kernel takes it as attn_bias), one
 * element-wise read + write of the scores in eager attention (MptAttention: scores +
 * position_bias). MPT is otherwise gpt2's layer without biases (arch.h).
 * With k = a, q = h, i = 4h, GELU, dropout, e = 2 this is 34·sbh + 5·a·s²·b: Korthikanti
 * Table 2, "no parallelism" (tests/unit/models/test_cost.c checks it exactly).
 * Under full checkpointing a layer keeps only its input, e·T·h (Table 2: 2sbh).
 */
#include "config.h"
#include "models/ops/cost-private.h"

#include <string.h>


Dims
cost_dims_of (const ModelArch *arch, const ModelCostParams *p)
{
  Dims d;
  d.b = (double) p->micro_batch;
  d.s = (double) p->seq_len;
  d.T = d.b * d.s;
  d.h = (double) arch->hidden_size;
  d.a = (double) arch->n_heads;
  d.q = (double) (arch->n_heads * arch->head_dim);
  d.c = (double) (arch->n_kv_heads * arch->head_dim);
  d.i = (double) arch->intermediate_size;
  d.V = (double) arch->vocab_size;
  d.e = p->act_bytes;
  /* Autocast runs softmax and layer norms in fp32 (PyTorch docs, "Autocast Op Reference":
   * softmax, layer_norm autocast to float32): what they save is 4 B an element. */
  d.ea = p->autocast ? 4.0 : p->act_bytes;
  d.autocast = p->autocast;
  d.qkv_in = p->autocast && !model_arch_fused_qkv (arch) ? 3.0 : 1.0;
  d.mlp_in = p->autocast && arch->mlp == MODEL_MLP_SWIGLU ? 2.0 : 1.0;
  d.sm_in = p->softmax_saves_input ? 1.0 : 0.0;
  d.w = p->weight_bytes;
  /* keys per query in the full-square convention: 2·K(s, w)/s for a causal windowed layer,
   * averaged with s over gpt_oss's full-attention layers (arch.h, attention_window.c) */
  d.s_kv = !p->window_ignored
             ? model_arch_attention_keys (arch, p->seq_len, arch->family != MODEL_FAMILY_BERT)
             : d.s;
  d.E = (double) arch->n_experts;
  d.k = arch->n_experts > 0 ? (double) arch->experts_per_token : 1.0;
  d.m = d.T * d.k;
  d.touched = arch->n_experts > 0 ? MIN (d.E, d.m) : 1.0;
  d.drop = p->dropout > 0 ? 1.0 : 0.0;
  d.norm_w = arch->norm == MODEL_NORM_LAYER ? 2 * d.h : d.h;
  d.alibi = arch->family == MODEL_FAMILY_MPT && !arch->learned_positions;
  d.causal = arch->family != MODEL_FAMILY_BERT;
  d.rotary = model_arch_rotary_dim (arch) > 0;
  d.frozen = model_finetune_active (&p->finetune);
  d.nf4 = p->finetune.method == MODEL_FINETUNE_QLORA;
  d.ft = &p->finetune;
  d.norm_fp32 = p->norm_fp32 && arch->norm == MODEL_NORM_RMS && !p->autocast;
  d.eager = p->norm_fp32 && !p->compile;
  d.rms = arch->norm == MODEL_NORM_RMS;
  d.fp16 = p->fp16;
  d.mask_fp32 = p->autocast && arch->family == MODEL_FAMILY_BERT;
  d.sm_fp32 = p->softmax_fp32 && model_arch_softmax_fp32 (arch) && !p->autocast
              && p->act_bytes < 4;
  d.compile = p->compile;
  d.kv_repeat = p->kv_repeat && model_arch_grouped_kv (arch);
  d.grouped = p->moe_grouped_mlp && arch->n_experts > 0;
  d.recompute = p->recompute_modules != 0 ? p->recompute_modules : MODEL_RECOMPUTE_CORE_ATTN;
  d.kbit = d.nf4 && p->autocast;
  /* MLA (arch.h ModelDeepseek): q·k over dn + dr per head (head_dim), values dv */
  d.v_q = arch->deepseek.mla ? (double) (arch->n_heads * arch->deepseek.v_head_dim) : d.q;
  d.v_c = arch->deepseek.mla ? d.v_q : d.c;
  return d;
}

void
cost_add_kernel (ModelPass *pass, const ModelOp *op)
{
  g_assert (pass->n_ops < MODEL_COST_MAX_OPS);
  pass->ops[pass->n_ops++] = *op;
  pass->flops += op->flops;
  pass->model_flops += op->flops;
  pass->bytes += op->bytes;
}

void
cost_add_op (ModelPass *pass, const char *name, ModelOpClass cls, double flops, double bytes)
{
  ModelOp op = { name, cls, flops, bytes, 0, { HW_KERNEL_PLAIN }, 1, FALSE };
  cost_add_kernel (pass, &op);
}

void
cost_add_gemm (ModelPass *pass, const Dims *d, const char *name, double m, double n, double p,
               double weights)
{
  ModelOp op = cost_gemm_op (d, name, m, n, p, weights);
  cost_add_kernel (pass, &op);
}

void
cost_add_elementwise (ModelPass *pass, const char *name, double bytes)
{
  ModelOp op = cost_elementwise_op (name, bytes);
  cost_add_kernel (pass, &op);
}

/* Backward = forward ops in reverse: GEMM 2× FLOPs and bytes; element-wise 2× bytes;
 * flash 2.5× FLOPs (recomputed scores, not model FLOPs), 2× bytes + `attn_extra`
 * (logsumexp, delta). A GEMM with frozen weights computes dX only (reads dY and W, writes
 * dX): 1× its forward FLOPs and bytes (LoRA: Hu et al. 2021 §4.2, no gradients or
 * optimizer states for the frozen weights). */
void
cost_mirror_backward (const ModelPass *fwd, ModelPass *bwd, double attn_extra)
{
  for (guint j = fwd->n_ops; j-- > 0;)
    {
      const ModelOp *op = &fwd->ops[j];
      gboolean attn = op->op_class == MODEL_OP_ATTENTION;
      double k = op->bwd_factor > 0 ? op->bwd_factor : 2.0, f = attn ? 2.5 : k;
      double extra = attn ? attn_extra : 0.0;
      cost_add_op (bwd, op->name, op->op_class, f * op->flops, k * op->bytes + extra);
      /* its autograd node's ops: a GEMM with trainable weights two (mm for the input's
       * gradient and for the weight's, derivatives.yaml `mm`), else as many as forward */
      bwd->ops[bwd->n_ops - 1].host_ops
        = model_op_host_ops (op) * (op->op_class == MODEL_OP_GEMM && op->bwd_factor != 1 ? 2 : 1);
      HwKernelShape *sh = &bwd->ops[bwd->n_ops - 1].shape;
      *sh = op->shape;
      if (sh->cls == HW_KERNEL_GEMM)
        sh->cls = op->bwd_factor == 1 ? HW_KERNEL_GEMM_DGRAD : HW_KERNEL_GEMM_BACKWARD;
      else if (sh->cls == HW_KERNEL_FLASH_FWD)
        sh->cls = HW_KERNEL_FLASH_BWD;
      if (attn)
        bwd->model_flops -= 0.5 * op->flops;
    }
}

ModelGraph *
model_cost_layer_graph (const ModelArch *arch, const ModelCostParams *p)
{
  g_return_val_if_fail (cost_params_ok (arch, p), NULL);
  Dims d = cost_dims_of (arch, p);
  return cost_layer_graph (&d, arch, p->flash_attention);
}

guint
model_cost_layer_saved_tensors (const ModelArch *arch, const ModelCostParams *p, double *sizes,
                                guint max)
{
  g_return_val_if_fail (cost_params_ok (arch, p), 0);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, p);
  guint n = 0;
  model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, p->compile, sizes, max, &n);
  return MIN (n, max);
}

/* The kernels of the ops of `g` that run under `policy` (every op for KEEP_ALL, else those
 * model_graph_op_reruns() names), in forward order: the forward of a layer, or what a
 * checkpointing policy recomputes. */
static void
graph_pass (const ModelGraph *g, ModelGraphPolicy policy, ModelPass *out)
{
  for (guint j = 0; j < g->ops->len; j++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
      if (op->launches && (policy == MODEL_GRAPH_KEEP_ALL || model_graph_op_reruns (g, j, policy)))
        cost_add_kernel (out, &op->kernel);
    }
}

static double
layer_bwd_workspace (const Dims *d, const ModelArch *arch, gboolean flash)
{
  double T = d->T, e = d->e, scores = d->b * d->a * d->s * d->s;
  double attn = e * T * (d->q + 2 * d->c)
                + (flash ? 4 * d->b * d->a * d->s + 4 * T * d->q : 2 * e * scores);
  double mlp = (arch->mlp == MODEL_MLP_SWIGLU ? 3.0 : 2.0) * e * d->m * d->i;
  if (arch->n_experts > 0)
    mlp += e * d->m * d->h;
  return 2 * e * T * d->h + MAX (attn, mlp);
}

double
model_cost_layer_weight_cache (const ModelArch *arch, const ModelCostParams *p)
{
  g_return_val_if_fail (arch != NULL && p != NULL, 0);
  return p->weight_cache_bytes
         * (double) (model_arch_n_params_attention (arch) + model_arch_n_params_mlp (arch));
}

gboolean
cost_params_ok (const ModelArch *arch, const ModelCostParams *p)
{
  return arch != NULL && p != NULL && p->micro_batch >= 1 && p->seq_len >= 1 && p->act_bytes > 0
         && p->weight_bytes > 0;
}

void
model_cost_layer_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *cost)
{
  memset (cost, 0, sizeof *cost);
  g_return_if_fail (cost_params_ok (arch, p));
  Dims d = cost_dims_of (arch, p);
  gboolean flash = p->flash_attention;
  g_autoptr (ModelGraph) g = cost_layer_graph (&d, arch, flash);
  /* Time: folds over the graph's kernels. */
  graph_pass (g, MODEL_GRAPH_KEEP_ALL, &cost->fwd);
  cost_mirror_backward (&cost->fwd, &cost->bwd, 8 * d.b * d.a * d.s);
  graph_pass (g, MODEL_GRAPH_KEEP_NON_SELECTIVE, &cost->selective_fwd);
  graph_pass (g, MODEL_GRAPH_KEEP_MATMUL, &cost->pointwise_fwd);
  /* Memory: the saved tensors under each policy, and the forward's transient peak from
   * the ops' frees (eager scores, the residual stream, QLoRA's dequantized weight). */
  cost->fwd.workspace = model_graph_transient_peak (g, d.compile, NULL);
  cost->bwd.workspace = layer_bwd_workspace (&d, arch, flash);
  if (d.nf4) /* the dequantized 16-bit weight of the projection being multiplied */
    cost->bwd.workspace += 2 * cost_largest_linear (arch);
  double saved = model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, d.compile, NULL, 0, NULL);
  cost->act_saved = saved + model_cost_layer_weight_cache (arch, p);
  cost->act_checkpoint = d.e * d.T * d.h;
  cost->act_selective
    = saved - model_graph_saved (g, MODEL_GRAPH_KEEP_NON_SELECTIVE, d.compile, NULL, 0, NULL);
  cost->act_keep_matmul = model_graph_saved (g, MODEL_GRAPH_KEEP_MATMUL, d.compile, NULL, 0, NULL);
  cost->act_pointwise
    = saved - model_graph_saved (g, MODEL_GRAPH_KEEP_MATMUL_SAVED, d.compile, NULL, 0, NULL);
}

ModelBlockCost
model_cost_layer (const ModelArch *arch, const ModelCostParams *p)
{
  ModelBlockCost cost;
  model_cost_layer_to (arch, p, &cost);
  return cost;
}
