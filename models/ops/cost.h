/* models/ops/cost.h — per-layer compute, memory-traffic and activation costs: pure functions.
 *
 * A layer's forward and backward are each a short sequence of ops (GEMMs, attention core,
 * element-wise kernels); every op has FLOPs and HBM bytes so the executor can run each as a
 * roofline kernel max(F/C, M/H) (Williams et al., "Roofline", CACM 2009). A layer's ops
 * come from its op graph (graph.h): ModelPass is a fold over the graph's kernels.
 *
 * Notation: b micro-batch size (sequences), s sequence length, h hidden size, a query
 * heads, k key/value heads, d head dimension, i MLP inner size, V vocabulary, e bytes per
 * activation element. GEMM FLOPs = 2·m·n·k; backward = 2 × forward FLOPs (grad of input +
 * grad of weight; Narayanan et al. 2021, arXiv 2104.04473, §5.1).
 * Attention scores count the full s² (no causal halving), as Korthikanti et al. and
 * Narayanan et al. do for model FLOPs.
 * Activation bytes saved for backward generalise Korthikanti et al. 2022 (arXiv 2205.05198,
 * §4.1, Table 2) to GQA, SwiGLU, no dropout and any element size; with GPT settings
 * (k = a, MLP 4h GELU, dropout, e = 2) they equal sbh(34 + 5as/h) exactly.
 */
#pragma once

#include <glib.h>
#include "hardware/kernel.h"
#include "models/arch/arch.h"
#include "models/arch/finetune.h"
#include "models/ops/graph.h"

#define MODEL_COST_MAX_OPS 64
#define MODEL_COST_MAX_WORKSPACE_TENSORS 34 /* a chunked loss's 32 chunks and two more */

/* One pass (forward or backward) of one layer-like block for one micro-batch. */
typedef struct
{
  ModelOp ops[MODEL_COST_MAX_OPS];
  guint n_ops;
  double flops;      /* Σ ops.flops */
  double model_flops;/* FLOPs that count as model FLOPs: flops less FlashAttention's
                      * recomputed scores in its backward (Narayanan et al. 2021 §5.1) */
  double bytes;      /* Σ ops.bytes */
  double straggler_flops; /* of flops, those this rank runs beyond the mean rank's: expert
                           * parallelism's hot expert rows (models/plan/plan_ep.c), work
                           * the other ranks do not do (not in the cluster's HFU) */
  double workspace;  /* B, transient peak inside the pass (a layer's forward: the op
                      * graph's liveness; eager scores, logits in fp32) */
  /* The tensors making up `workspace`, in allocation order, each its own allocation in
   * PyTorch (so each its own caching-allocator block: a cached block freed by one pass can
   * serve one tensor of the next without being as large as the whole peak); Σ = workspace.
   * 0 tensors: not enumerated, the plan books `workspace` as one block. Filled for the loss
   * head (model_cost_head), whose logit-sized transients dominate the allocator's cache. */
  double workspace_tensors[MODEL_COST_MAX_WORKSPACE_TENSORS];
  guint n_workspace_tensors;
} ModelPass;

typedef struct
{
  ModelPass fwd;
  ModelPass bwd;
  double act_saved;      /* B saved for backward by forward without checkpointing */
  double act_checkpoint; /* B kept per layer under full checkpointing: its input, e·sbh */
  /* Selective recomputation (Korthikanti et al. 2022 §5): what it reruns in the backward
   * (the attention core — QKᵀ, softmax, dropout, ·V, or the fused flash kernel — or the
   * modules of recompute_modules) and the bytes of act_saved only those keep (the s² terms,
   * flash's logsumexp; the norms' outputs; the experts' activation). Layers only. */
  ModelPass selective_fwd;
  double act_selective;
  /* Op-level selective (graph.h MODEL_GRAPH_KEEP_MATMUL): B kept (block input, matmul and
   * attention outputs), the forward's point-wise ops rerun before the backward, and the B
   * of act_saved that rerun re-creates. Layers only. */
  double act_keep_matmul;
  ModelPass pointwise_fwd;
  double act_pointwise;
} ModelBlockCost;

/* The modules selective recomputation may rerun (Megatron-LM transformer_config.py
 * recompute_modules): the attention core (core_attn: QKᵀ, softmax, dropout, ·V, or the
 * fused attention kernel), the two layer norms (layernorm: input_layernorm and
 * pre_mlp_layernorm, their outputs discarded and recomputed before the backward:
 * CheckpointWithoutOutput), and the MoE experts' activation function (moe_act: fc1's
 * output kept, the activation's output and intermediates recomputed). */
#define MODEL_RECOMPUTE_CORE_ATTN (1u << 0)
#define MODEL_RECOMPUTE_LAYERNORM (1u << 1)
#define MODEL_RECOMPUTE_MOE_ACT (1u << 2)
/* The whole MLP block of a layer, its input kept (Megatron's "mlp": transformer_layer.py
 * _forward_mlp checkpoints self.mlp over the pre-MLP norm's output; for a MoE layer "moe":
 * moe_layer.py MoELayer.forward checkpoints router, dispatch, experts and combine, the
 * dispatcher's collectives rerun in the backward) and the shared experts alone
 * ("shared_experts": moe_layer.py's checkpoint of shared_experts). */
#define MODEL_RECOMPUTE_MLP (1u << 3)
#define MODEL_RECOMPUTE_MOE (1u << 4)
#define MODEL_RECOMPUTE_SHARED_EXPERTS (1u << 5)
/* MLA's up-projections and rotary ("mla_up_proj": multi_latent_attention.py runs
 * qkv_up_proj_and_rope_apply under CheckpointWithoutOutput and discards query, key and
 * value after the core attention): q_b_proj (q_proj without a q LoRA rank), kv_b_proj, the
 * rotary and the q/k assembly rerun before the backward from the kept latents. */
#define MODEL_RECOMPUTE_MLA_UP_PROJ (1u << 6)

/* How the loss head computes the loss (the framework's choice; mirrors ModelLossImpl of
 * models/stack/framework.h, which models/ops may not include). */
typedef enum
{
  MODEL_COST_LOSS_UPCAST,  /* logits.float(), log_softmax keeps its fp32 output */
  MODEL_COST_LOSS_PLAIN,   /* cross-entropy on the compute-dtype logits */
  MODEL_COST_LOSS_CHUNKED, /* torchtune CEWithChunkedOutputLoss: loss_chunks chunks */
  MODEL_COST_LOSS_FUSED,   /* fused linear + cross-entropy: no full logits */
  MODEL_COST_LOSS_UPCAST_SHIFT, /* upcast + the shifted contiguous fp32 copy (HF <= 4.48) */
  MODEL_COST_LOSS_VOCAB_PARALLEL, /* Megatron: one fp32 copy, softmax in place, saved */
  MODEL_COST_LOSS_SHARDED, /* nanotron: the fp32 logits and a shifted fp32 copy, saved */
  MODEL_COST_LOSS_TE_PARALLEL, /* TE parallel_cross_entropy: gradient over the saved logits */
  MODEL_COST_LOSS_CHUNKED_HEAD, /* torchtitan ChunkedLossWrapper: head + loss + backward per
                                 * chunk of tokens, an fp32 gradient buffer of the hidden states */
} ModelCostLoss;

typedef struct
{
  guint64 micro_batch;     /* b >= 1 */
  guint64 seq_len;         /* s >= 1 */
  double act_bytes;        /* e: 2 (bf16/fp16) or 4 (fp32) */
  double weight_bytes;     /* bytes per weight element read by kernels (2 or 4) */
  gboolean flash_attention;/* FlashAttention: no s² buffer, recompute in backward */
  double dropout;          /* dropout probability; > 0 adds 1-byte masks */
  double weight_cache_bytes; /* B per parameter of a low-precision weight copy the forward
                              * makes and backward keeps (autocast), 0 if none */
  gboolean autocast;       /* torch.autocast on an fp32 model: softmax and norms run in fp32
                            * (PyTorch's autocast op lists), so their saved inputs/outputs
                            * are 4 B, the attention matmul saves an e-byte cast copy, and
                            * each separate projection saves its own cast of its input */
  gboolean softmax_saves_input; /* PyTorch <= 1.10 autograd: softmax and log_softmax keep
                                 * their input as well as their output for backward */
  ModelFinetune finetune;  /* LoRA/QLoRA: frozen base GEMMs, adapter GEMMs, NF4 dequant */
  /* The framework's op-graph knobs (models/stack/framework.h ModelFramework): */
  ModelCostLoss loss;      /* the loss head (model_cost_head) */
  guint loss_chunks;       /* chunks of MODEL_COST_LOSS_CHUNKED / FUSED / CHUNKED_HEAD; 0 or
                            * 1: one */
  gboolean norm_fp32;      /* RMSNorm upcasts and saves its fp32 input (HF LlamaRMSNorm,
                            * torchtune RMSNorm); only without autocast, RMSNorm models */
  gboolean fp16;           /* the compute dtype is fp16 (not bf16): ATen's softmax turns a Half
                            * input into an fp32 result in one kernel (graph_layer.c) */
  gboolean softmax_fp32;   /* the model code's eager attention computes softmax in fp32 and
                            * casts the probabilities back (HF LlamaAttention and the
                            * families of model_arch_softmax_fp32); only in a 16-bit
                            * compute dtype without autocast, which does it anyway */
  gboolean compile;        /* torch.compile's partitioner recomputes fusible point-wise
                            * intermediates (graph.h) */
  gboolean logits_kept;    /* the training loop holds the loss's input logits through the
                            * backward (ModelFramework.logits_kept; model_cost_head) */
  gboolean kv_repeat;      /* GQA k and v expanded to the a query heads (a copy each) before
                            * the attention kernel, which saves the copies */
  gboolean moe_grouped_mlp; /* MoE experts as Megatron's TEGroupedMLP (framework.h): no
                            * SiLU output or expert output saved */
  guint recompute_modules; /* what selective recomputation reruns (MODEL_RECOMPUTE_*
                            * bits, Megatron's --recompute-modules); 0: the attention core
                            * (Korthikanti et al. 2022 §5, Megatron's default core_attn) */
  gboolean window_ignored; /* the fused attention kernel has no sliding window (Triton, FA-1:
                            * hardware/kernel.h hw_kernel_attn_has_window): it attends to the
                            * whole causal context whatever the model's sliding_window */
} ModelCostParams;

/* One transformer layer (attention + MLP or MoE experts). With weight_cache_bytes > 0
 * act_saved also holds the layer's cast weights: weight_cache_bytes × (attention + MLP
 * parameters) (autocast's cached casts, kept by the graph until the layer's backward). */
ModelBlockCost model_cost_layer (const ModelArch *arch, const ModelCostParams *p);
/* model_cost_layer() written into *out (every byte; no copy of the ~30 KB struct: plan
 * building). */
void model_cost_layer_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *out);

/* B of the cast weight copies one layer's forward keeps for its backward (autocast's cache):
 * weight_cache_bytes × (attention + MLP parameters); 0 without a weight cache. */
double model_cost_layer_weight_cache (const ModelArch *arch, const ModelCostParams *p);

/* The tensors making up model_cost_layer()'s act_saved without the autocast weight copies,
 * in forward order (each a separate allocation in PyTorch): fills `sizes` (B, capacity
 * `max`, MODEL_COST_MAX_TENSORS is enough) and returns their count. Σ sizes = act_saved −
 * model_cost_layer_weight_cache() (models/plan/plan_ckpt.c asserts it). */
#define MODEL_COST_MAX_TENSORS 40
guint model_cost_layer_saved_tensors (const ModelArch *arch, const ModelCostParams *p,
                                      double *sizes, guint max);

/* The saved-tensor graph of one transformer layer under `p` (graph.h; what
 * model_cost_layer()'s act_saved and the tensor list come from). New graph. */
ModelGraph *model_cost_layer_graph (const ModelArch *arch, const ModelCostParams *p);

/* The names (NULL-terminated) of a MoE layer graph's tensors with one row per routed copy
 * a rank's experts take (the routed input, the experts' inner tensors and outputs): they
 * scale with the rows an expert-parallel rank receives. */
extern const char *const model_cost_moe_row_tensors[];
/* The subset of model_cost_moe_row_tensors at the experts' inner width (fc1's outputs, the
 * activation's, fc2's input; i features a row), which expert tensor parallelism divides by
 * etp while the rest (the routed input, the experts' outputs: h a row) keep the hidden
 * width. */
extern const char *const model_cost_moe_inner_row_tensors[];

/* Token (+ position) embedding lookup: gather; its backward scatters into the embedding
 * gradient. act_saved holds nothing but the token ids (int64, 8·b·s B), plus the 1-byte
 * embedding-dropout mask b·s·h when dropout > 0. No FLOPs. */
ModelBlockCost model_cost_embedding (const ModelArch *arch, const ModelCostParams *p);
/* model_cost_embedding() written into *out (every byte; no copy of the ~30 KB struct: plan
 * building). */
void model_cost_embedding_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *out);

/* BERT (family bert): the embedding also adds token-type embeddings and a LayerNorm
 * (HF BertEmbeddings): act_saved adds the type ids 8·b·s and the LayerNorm input e·b·s·h
 * (+ its fp32 mean and rstd, 8·b·s). The head is BertPooler + classifier + loss: the
 * pooler's dense layer reads the [CLS] token, a view that keeps the last hidden state
 * (e·b·s·h) alive; then tanh output e·b·h, dropout mask b·h and classifier input e·b·h
 * are saved; logits are b × num_labels: FLOPs 2·b·h·(h + num_labels), workspace a few
 * bytes. Attention is bidirectional, already counted as the full s² (file comment). */

/* Final norm + LM head + cross-entropy loss, by p->loss (cost_ends.c loss_memory, each
 * case's source there). T = b·s, V vocabulary:
 *   upcast   act_saved adds log_softmax's fp32 result 4·T·V; workspace fwd e·T·V + 4·T·V
 *            (e-byte logits and their fp32 copy), bwd 8·T·V (nll's and log_softmax's
 *            gradients): 12 B a logit at the backward's peak
 *   upcast_shift (transformers 4.46–4.48) T' = b·(s − 1) shifted rows: act_saved adds
 *            4·T'·V; fwd e·T·V + 4·T·V + 4·T'·V (+ the contiguous shifted copy: 14 B a
 *            logit at the forward's peak), bwd 8·T'·V
 *   plain    e·T·V saved; fwd e·T·V, bwd 2·e·T·V
 *   vocab_parallel (Megatron) 4·T·V saved (the fp32 copy, softmax in place); fwd e·T·V
 *            (the model's logits beside it), bwd e·T·V (the e-byte gradient of the cast)
 *   sharded  (nanotron) 4·T·V saved (the shifted copy, softmax in place); fwd 4·T·V (the
 *            model's fp32 logits beside it), bwd e·T·V
 *   chunked_head (torchtitan ChunkedLossWrapper, n = loss_chunks) 4·T·h saved (the fp32
 *            gradient of the hidden states); fwd e·T·V/n + 3·4·T·V/n (one slice's logits,
 *            log_softmax's result and the two gradients of its backward, run at once); bwd
 *            none; no logits saved
 *   chunked  n = loss_chunks: eager 4·T·V saved, fwd e·T·V + 4·T·V/n, bwd 8·T·V/n;
 *            compiled e·T·V + 4·T saved, 4·T·V/n each way
 *   fused    4·T saved (logsumexp), fwd 4·T·V/n, bwd 8·T·V/n
 * MPT with the upcast default keeps llm-foundry's flash-attn cross-entropy (e-byte logits,
 * nothing saved, fwd e·T·V, bwd 2·e·T·V). act_saved also holds the final norm's tensors
 * (its input e·T·h, or under norm_fp32 4·T·h + 4·T + e·T·h; compiled e·T·h + 4·T) and the
 * LM-head input e·T·h; act_checkpoint = e·b·s·h. Under autocast (an fp32 residual stream)
 * the final norm saves its fp32 input 4·T·h (HF's eager RMSNorm also rsqrt's 4·T and the
 * fp32 x_normed 4·T·h), the head GEMM its e-byte cast, and the norm's fp32 output (the
 * model's last hidden state, held with its outputs while the loss runs) is the forward's
 * first transient, 4·T·h. */
ModelBlockCost model_cost_head (const ModelArch *arch, const ModelCostParams *p);
/* model_cost_head() written into *out (every byte; no copy of the ~30 KB struct: plan
 * building). */
void model_cost_head_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *out);

/* DeepSeek-V3's multi-token-prediction depth up to its decoder layer (Megatron-LM
 * multi_token_prediction.py MultiTokenPredictionLayer; cost_ends.c): the shifted ids
 * through the shared embedding (gather, as model_cost_embedding's; no FLOPs), enorm and
 * hnorm (RMSNorm on T·h each), the concatenation (e·T·2h) and eh_proj, a T × 2h by 2h × h
 * GEMM: 4·T·h² FLOPs forward, 8·T·h² backward. act_saved: ids 8·T + enorm's saved tensors
 * (as the head's final norm: e·T·h, or its norm_fp32 / compile variants) + hnorm's beyond
 * its input (the previous head GEMM's saved input, counted there) + the concatenation
 * e·T·2h (kept under every checkpointing policy). The depth's decoder layer is model_cost_layer's, its
 * shared_head.norm + output layer + loss model_cost_head's. */
ModelBlockCost model_cost_mtp_proj (const ModelArch *arch, const ModelCostParams *p);

/* Model FLOPs of `n_mtp` MTP depths for b·s tokens: n_mtp × (decoder layer + the block
 * above + head), forward FLOPs + backward model_flops each. As Megatron-LM's
 * num_floating_point_operations (megatron/training/training.py) counts them: one more
 * MoE layer per depth (the last layer's type), eh_proj's 6·2h² a token and the logits'
 * 6·h·V a token once more per depth; its "3h" of the three norms (6·3h a token) is not
 * here: norms are memory-bound kernels of no FLOPs in every block of this model (1.5/h of
 * the eh_proj term). 0 for n_mtp = 0. */
double model_cost_mtp_flops (const ModelArch *arch, const ModelCostParams *p, guint n_mtp);

/* Model FLOPs of one forward+backward for b·s tokens without recompute: Σ over the blocks
 * of forward FLOPs + backward model_flops; 3 × Σ forward FLOPs for full fine-tuning, less
 * under LoRA (no weight gradients of the frozen base). */
double model_cost_step_flops (const ModelArch *arch, const ModelCostParams *p);
/* The same from the three blocks' costs already computed for `arch` and the same parameters
 * (model_cost_layer, model_cost_embedding, model_cost_head; borrowed, read here only):
 * model_cost_step_flops is this fold over them. */
double model_cost_step_flops_of (const ModelArch *arch, const ModelBlockCost *layer,
                                 const ModelBlockCost *embedding, const ModelBlockCost *head);

/* Korthikanti et al. 2022 §6 eq. model FLOPs per iteration for GPT:
 * 72·B·L·s·h²·(1 + s/(6h) + V/(12hL)), B = global batch in sequences. Used as an oracle. */
double model_cost_korthikanti_flops (guint64 batch, guint64 n_layers, guint64 seq_len,
                                     guint64 hidden, guint64 vocab);
