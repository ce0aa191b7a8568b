/* models/ops/cost-private.h — what models/ops/cost.c (the transformer layer) and
 * models/ops/cost_ends.c (embedding, head, step totals) share: the dimensions of a cost query
 * and the primitives that add ops to a pass. Not a public header. Notation in cost.c. */
#pragma once

#include "models/ops/cost.h"

typedef struct
{
  double b, s, T, h, a, q, c, i, V, e, w;
  double ea;       /* bytes of what autocast keeps in fp32 (softmax, norms); e without it */
  gboolean autocast;
  double qkv_in;   /* copies of the QKV input saved: 3 under autocast with separate q, k, v */
  double mlp_in;   /* copies of the MLP input saved: 2 under autocast with separate gate, up */
  double sm_in;    /* 1 if softmax keeps its input for backward (PyTorch <= 1.10), else 0 */
  double s_kv;     /* keys per query seen by flash attention (sliding window) */
  double E, k;     /* experts and top-k; E = 0 for dense, then k = 1 */
  double m;        /* tokens through the MLP GEMMs: T·k */
  double touched;  /* experts whose weights are read: 1 dense, min(E, T·k) MoE */
  double drop;     /* 1 if dropout > 0, else 0 */
  double norm_w;   /* parameters of one norm */
  gboolean rotary; /* rotary positions applied to q and k */
  gboolean alibi;  /* ALiBi bias added to the scores (MPT) */
  gboolean causal; /* causal mask (decoders); BERT attends both ways */
  gboolean frozen; /* LoRA/QLoRA: base weights frozen (finetune.h) */
  gboolean nf4;    /* QLoRA: base linear weights stored as NF4, dequantized per use */
  gboolean norm_fp32; /* RMSNorm saving its fp32 input (p->norm_fp32, RMSNorm, no autocast) */
  gboolean eager;     /* the model code's RMSNorm and rotary run op by op as HF transformers
                       * and torchtune write them (p->norm_fp32's profiles, not compiled):
                       * cost_norm_op, graph_layer.c rotary */
  gboolean rms;       /* the norms are RMSNorm */
  gboolean fp16;      /* the compute dtype is fp16 (p->fp16) */
  gboolean mask_fp32; /* the eager core's masked scores are fp32 under autocast: HF
                       * BertSelfAttention adds the extended mask in the model's dtype
                       * (get_extended_attention_mask: `.to(dtype=self.dtype)`) */
  gboolean sm_fp32;   /* the eager core upcasts the scores to fp32 for softmax and casts the
                       * probabilities back (p->softmax_fp32, model_arch_softmax_fp32,
                       * 16-bit, no autocast; graph_layer.c eager_attention) */
  gboolean compile;   /* torch.compile partitioner (graph.h) */
  gboolean kv_repeat; /* GQA k, v expanded to q's heads before attention (p->kv_repeat, k < a) */
  gboolean grouped;   /* MoE experts as Megatron's TEGroupedMLP (p->moe_grouped_mlp) */
  guint recompute;    /* MODEL_RECOMPUTE_* bits selective recompute reruns (never 0) */
  gboolean kbit;      /* QLoRA under autocast: PEFT prepare_model_for_kbit_training's fp32 stream
                       * through bitsandbytes Linear4bit, which returns its input's dtype
                       * (graph_layer.c) */
  const ModelFinetune *ft;
  double v_q;      /* width of the attention's output (o_proj's input): a·dv under MLA, else q */
  double v_c;      /* width of the values the attention reads: a·dv under MLA, else c */
} Dims;

/* The dimensions of `arch` under `p` (SI doubles, cost.c's notation). */
Dims cost_dims_of (const ModelArch *arch, const ModelCostParams *p);
/* TRUE when `arch` and `p` can be costed (a micro-batch, a sequence, element sizes). */
gboolean cost_params_ok (const ModelArch *arch, const ModelCostParams *p);
/* The kernel of Y[m×p] = X[m×n]·W[n×p] with `weights` parameters (incl. bias): 2·m·n·p FLOP,
 * e·m·n + w·weights + e·m·p B, GEMM shape m×p (inner n); frozen (backward 1×) under LoRA. */
ModelOp cost_gemm_op (const Dims *d, const char *name, double m, double n, double p,
                      double weights);
/* The kernel of a norm over T·h elements of `x` B each (graph_layer.c: fused, or HF's eager
 * RMSNorm chain), named `name`. */
ModelOp cost_norm_op (const Dims *d, const char *name, double x);
/* B a norm over the T·h elements saves for its backward, its input included: what
 * graph_layer.c's norm() makes for a layer's norms, for the norms costed without a graph
 * (the head's final norm, the MTP depths' norms, cost_ends.c). */
double cost_norm_saved (const Dims *d);
/* Autocast's cast kernel for `n_weights` weight tensors of `weights` elements and `n_inputs`
 * fp32 inputs of T·h (graph_layer.c); FALSE, *out untouched, when nothing is cast. */
gboolean cost_autocast_cast_op (const Dims *d, double weights, guint n_weights, guint n_inputs,
                                ModelOp *out);
/* A memory-bound kernel moving `bytes` B (0 FLOP, no shape). */
ModelOp cost_elementwise_op (const char *name, double bytes);
/* Appends `op` to `pass` (sums updated). */
void cost_add_kernel (ModelPass *pass, const ModelOp *op);
/* Appends an op of `flops` FLOP and `bytes` B to `pass` (sums updated). */
void cost_add_op (ModelPass *pass, const char *name, ModelOpClass cls, double flops,
                  double bytes);
/* Y[m×p] = X[m×n]·W[n×p] with `weights` parameters (incl. bias), frozen under LoRA. */
void cost_add_gemm (ModelPass *pass, const Dims *d, const char *name, double m, double n,
                    double p, double weights);
/* A memory-bound op moving `bytes` B. */
void cost_add_elementwise (ModelPass *pass, const char *name, double bytes);
/* The op graph of one layer (graph_layer.c): tensors, saves, frees and kernels. New graph. */
ModelGraph *cost_layer_graph (const Dims *d, const ModelArch *arch, gboolean flash);
/* Elements of the largest single projection of a layer (QLoRA's dequantized buffer). */
double cost_largest_linear (const ModelArch *arch);
/* Appends to `bwd` the backward of each op of `fwd`, in reverse (cost.c). */
void cost_mirror_backward (const ModelPass *fwd, ModelPass *bwd, double attn_extra);
