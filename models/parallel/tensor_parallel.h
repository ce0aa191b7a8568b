/* models/parallel/tensor_parallel.h — Megatron-LM tensor parallelism (TP) and sequence
 * parallelism (SP): where every inventory tensor lies on the tp dimension of the mesh, the
 * collectives a layer runs on it, and what a layer's saved activations become per rank.
 *
 * Weights (Shoeybi et al. 2019, arXiv 1909.08053, §3; megatron/core/tensor_parallel/
 * layers.py): a ColumnParallelLinear splits its output features over tp (q, k, v or the
 * fused qkv; the MLP gate and up / fc), a RowParallelLinear its input features (attention
 * out, MLP down); a column-parallel bias is split with its weight, a row-parallel bias is
 * whole on every rank (added after the reduction). VocabParallelEmbedding and the output
 * layer (a ColumnParallelLinear over the vocabulary) split the vocabulary, padded first to
 * a multiple of make_vocab_size_divisible_by (128) × tp (megatron/core/tokenizers/utils/
 * build_tokenizer.py vocab_size_with_padding: ceil(V / (128·tp)) · 128·tp); a tied head is
 * the embedding itself. Norms, learned position and token-type embeddings (plain
 * torch.nn.Embedding in megatron/core/models/common/embeddings/language_model_embedding.py),
 * the MoE router (TopKRouter's plain weight), a MoE shared expert's sigmoid gate weight
 * (shared_experts.py gate_weight, 1 × h), bert's pooler and classifier are replicated; the
 * shared expert's gate/up and down projections are column- and row-parallel over tp like
 * the dense MLP's (SharedExpertMLP is an MLP on the tp group, not the expert grid).
 * LoRA on a parallel linear (PEFT peft/tuners/lora/tp_layer.py LoraParallelLinear): on a
 * column-parallel base lora_B is split on its output rows and lora_A is whole; on a
 * row-parallel base lora_A is split on its input columns and lora_B is whole. MoE experts'
 * linears split over the expert tensor-parallel degree etp (Megatron's expert carving,
 * mesh.h) the same way, and each rank holds n_experts / ep of them.
 *
 * Multi-head Latent Attention (DeepSeek-V2/V3; megatron/core/transformer/
 * multi_latent_attention.py MLASelfAttention with the Transformer Engine spec,
 * gpt_layer_specs.py): linear_q_proj (q_proj, when q_lora_rank is null), linear_q_up_proj
 * (q_b_proj) and linear_kv_up_proj (kv_b_proj) are column-parallel, split by heads (their
 * rows are head-major: nh/tp heads of dn + dr, or of dn + dv, a rank); linear_q_down_proj
 * (q_a_proj) and linear_kv_down_proj (kv_a_proj_with_mqa) are TELinear parallel_mode
 * 'duplicated' — whole on every rank, reading the rank's sequence shard under SP, their
 * gradients partial sums that Megatron all-reduces over tp with the norms' (TELinear sets
 * sequence_parallel on them); q_a_layernorm and kv_a_layernorm are replicated and run on
 * the shard; linear_proj (o_proj) is row-parallel. num_attention_heads must be a multiple
 * of tp.
 *
 * Grouped-query attention (megatron/core/transformer/attention.py Attention.__init__ and
 * get_query_key_value_tensors; transformer_config.py __post_init__): num_attention_heads
 * must be a multiple of tp, and num_query_groups (KV heads, k) a multiple or a divisor of
 * tp. With k >= tp each rank holds k/tp KV heads. With k < tp (supported since Megatron-LM
 * f7dfb99, "Support TP greater than num_kv_heads by supporting QKV activation
 * sub-sharding", Dec 2025; rejected before) the fused linear_qkv weight, (a + 2k)·d rows
 * interleaved per KV group "q1…q(a/k) k v", is still split evenly: each rank holds
 * (a + 2k)·d/tp rows — no weight is replicated. Its output is all-gathered over tp in the
 * forward (all_gather_last_dim_from_tensor_parallel_region; a reduce-scatter in the
 * backward), each rank slices its group's one KV head and its a/tp query heads: the
 * activations hold 1 KV head per rank, each KV head on tp/k ranks. The inventory keeps
 * HF's separate q, k, v: their local shapes here are the even row split (a·d/tp, k·d/tp
 * rows), which gives every rank exactly Megatron's (a + 2k)·d/tp rows of the fused weight
 * (how those rows divide among q, k and v varies by rank under sub-sharding).
 *
 * Composition with data-parallel sharding (parallel.h): ZeRO and FSDP flatten and shard
 * the TP-local tensor over dp_shard (torchtitan 2-D FSDP + TP: FSDP over the DTensor's
 * local shard; Megatron's distributed optimizer over the TP-local buffers): a rank holds
 * the TP-local bytes / dp_shard of a sharded state. The flat padding to a multiple of
 * dp_shard is not counted, as placement.h does not count it.
 *
 * Units: bytes (B) and elements, doubles for bytes. Errors: G_KEY_FILE_ERROR_INVALID_VALUE
 * naming the model key and the [parallel] key (the caller adds the file).
 */
#pragma once

#include <glib.h>
#include "hardware/collective.h"
#include "models/arch/inventory.h"
#include "models/ops/graph.h"
#include "models/parallel/placement.h"

/* Megatron-LM's default --make-vocab-size-divisible-by (megatron/training/arguments.py). */
#define MODEL_TP_VOCAB_DIVISIBLE_BY 128

typedef enum
{
  MODEL_TP_REPLICATE, /* whole on every tp rank */
  MODEL_TP_COLUMN,    /* output features split (ColumnParallelLinear; its bias) */
  MODEL_TP_ROW,       /* input features split (RowParallelLinear weight) */
  MODEL_TP_VOCAB,     /* vocabulary rows split after padding (embedding, output layer) */
} ModelTpStyle;

/* "replicate", "column", "row", "vocab". */
const char *model_tp_style_name (ModelTpStyle style);

/* The vocabulary Megatron trains with: `vocab` rounded up to a multiple of
 * divisible_by · tp (vocab_size_with_padding). divisible_by, tp >= 1. */
guint64 model_tp_padded_vocab (guint64 vocab, guint tp, guint divisible_by);

/* Checks that `arch` splits over tensor-parallel degree `tp` as Megatron requires:
 * num_attention_heads a multiple of tp (MLA's too); num_key_value_heads a multiple or a
 * divisor of tp
 * (with k < tp also (a + 2k)·head_dim a multiple of tp, the fused qkv rows);
 * intermediate_size a multiple of tp (or of etp for MoE experts, with n_experts a multiple
 * of ep; a MoE's shared_expert_intermediate_size and DeepSeek's dense layers'
 * intermediate_size multiples of tp). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming the model key, [parallel] tp and
 * the numbers. `mesh` gives tp, ep and etp. */
gboolean model_tp_check (const ModelArch *arch, const ModelMesh *mesh, GError **error);

/* One inventory tensor as a rank holds it. */
typedef struct
{
  guint index;            /* in inv->tensors */
  ModelTpStyle style;
  gboolean expert;        /* a MoE expert's tensor (or its adapter): split over etp, and
                           * n_experts / ep copies per rank */
  gint tp_dim;            /* tensor dimension split over tp (or etp for experts); -1 if none */
  ModelPlacements placements; /* Shard(tp_dim) or Replicate on tp; Shard(flat) on dp_shard
                               * (what a dp-sharded model state is; parallel.h says which
                               * states are) */
  guint ndim;
  guint64 shape[4];       /* the trained shape: the inventory's, vocabulary rows padded */
  guint64 local_shape[4]; /* one tp rank's share of one copy */
  guint64 copies;         /* copies one rank holds in the whole model: count (experts: /ep)
                           * × n_layers for layer templates */
  double element_bytes;   /* B per element (weight dtype, NF4's 0.5; a quantization
                           * constant's 4 or 1, whatever weight_bytes) */
  double tp_bytes;        /* B of one copy's tp-local share */
  double rank_bytes;      /* B of one copy when also sharded over dp_shard: tp_bytes /
                           * dp_shard */
} ModelTpTensor;

typedef struct
{
  guint tp, dp_shard, ep, etp;
  guint64 vocab;          /* padded vocabulary (the embedding's and head's rows) */
  guint64 q_heads;        /* query heads per rank in the attention: a/tp */
  guint64 kv_heads;       /* KV heads per rank in the attention: k/tp, or 1 when k < tp */
  guint kv_replicas;      /* ranks whose attention holds the same KV head: 1, or tp/k */
  gboolean qkv_gather;    /* k < tp: the qkv output is all-gathered (see above) */
  GArray *tensors;        /* ModelTpTensor, one per inventory tensor, same order */
} ModelTpLayout;

/* The layout of `inv` on `mesh` (tp, dp_shard, ep, etp read; other degrees ignored: a
 * pipeline stage's share of the layers is the caller's), weights stored in `weight_bytes`
 * B per element (NF4 tensors 0.5). Runs model_tp_check. Errors as model_tp_check, or
 * placement.h's local-shape error. New layout (model_tp_layout_free) or NULL. */
ModelTpLayout *model_tp_layout_new (const ModelInventory *inv, const ModelMesh *mesh,
                                    double weight_bytes, GError **error);
void model_tp_layout_free (ModelTpLayout *layout); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelTpLayout, model_tp_layout_free)

/* B one rank holds of the parameter tensors of `inv` in `scope` (inventory.h; experts
 * /ep): Σ copies × (dp_sharded ? rank_bytes : tp_bytes), adapters included or not; QLoRA's
 * quantization constants are not parameters (model_tp_layout_constant_bytes). `layout`
 * must have been built from `inv`. */
double model_tp_layout_bytes (const ModelTpLayout *layout, const ModelInventory *inv,
                              ModelInventoryScope scope, gboolean dp_sharded,
                              gboolean with_adapters);
/* The same for the quantization constants (MODEL_TENSOR_QUANT_*; 0 without QLoRA): each
 * shards with its NF4 weight (a rank's constants are those of the share it quantizes). */
double model_tp_layout_constant_bytes (const ModelTpLayout *layout, const ModelInventory *inv,
                                       ModelInventoryScope scope, gboolean dp_sharded);

/* Elements of the trainable tensors whose gradient each tp rank computes from its
 * sequence shard under SP, so Megatron all-reduces them (SUM, one coalesced all-reduce over
 * tp per step, after the backward) before the optimizer: the params Megatron tags
 * `sequence_parallel` — norm weights and biases (fused_layer_norm.py) and row-parallel
 * biases (layers.py RowParallelLinear) — gathered by finalize_model_grads.py
 * _allreduce_non_tensor_model_parallel_grads, and a MoE shared expert's sigmoid gate
 * weight (shared_experts.py tags it so), MLA's latent norms and duplicated down
 * projections q_a_proj and kv_a_proj_with_mqa. Whole model; 0 for tp = 1. Multiply by the
 * gradient's element bytes (Megatron's main_grad: 4) for the all-reduce's bytes. */
guint64 model_tp_sp_grad_numel (const ModelTpLayout *layout, const ModelInventory *inv);

/* ---- Communication ------------------------------------------------------------------ */

typedef enum
{
  MODEL_TP_FORWARD,
  MODEL_TP_BACKWARD,
} ModelTpPass;

/* The Transformer Engine userbuffers overlap method a collective gets under Megatron's
 * --tp-comm-overlap (transformer_engine/pytorch/module/base.py initialize_ub, its default
 * `methods`): the column-parallel inputs' forward all-gathers (qkv_fprop, fc1_fprop) and the
 * row-parallel outputs' backward gradient all-gathers (proj_dgrad, fc2_dgrad) RING
 * (ring_exchange); the row-parallel outputs' forward reduce-scatters (proj_fprop,
 * fc2_fprop) PIPELINE; the column-parallel inputs' backward re-gather and gradient
 * reduce-scatter (qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad) BULK. NONE: not a userbuffers
 * overlap (all-reduces without SP, the qkv output's gather of k < tp, embedding and head). */
typedef enum
{
  MODEL_TP_UB_NONE,
  MODEL_TP_UB_RING,
  MODEL_TP_UB_PIPELINE,
  MODEL_TP_UB_BULK,
} ModelTpUb;

/* One collective on the tp groups. */
typedef struct
{
  const char *name;       /* static, e.g. "attn_out all-reduce (g)" */
  HwCollectiveKind kind;
  ModelMeshDim dim;       /* MODEL_MESH_TP */
  double bytes;           /* B, hardware/collective.h's convention */
  gboolean overlapped;    /* Megatron issues it async beside a GEMM of the same backward
                           * (dgrad all-reduce / reduce-scatter beside the wgrad GEMM, the
                           * input re-gather beside the dgrad GEMM; layers.py
                           * LinearWithGradAccumulationAndAsyncCommunication.backward) */
  ModelTpUb ub;           /* its userbuffers overlap under tp_comm_overlap (SP only) */
} ModelTpComm;

typedef struct
{
  guint tp;               /* >= 1; 1: no collectives */
  gboolean sp;            /* sequence parallelism (Megatron --sequence-parallel) */
  guint64 micro_batch;    /* b */
  guint64 seq_len;        /* s (whole sequence, before SP's split) */
  double act_bytes;       /* e: B per activation element (2 for bf16) */
} ModelTpCommParams;

/* The tp collectives of one transformer layer's forward or backward for one micro-batch,
 * appended to `out` (GArray of ModelTpComm) in the order they run (Shoeybi et al. §3,
 * Fig. 3; Korthikanti et al. 2022, arXiv 2205.05198, §4.2.2, Fig. 5). X = b·s·h·e:
 *   no SP, forward:  all-reduce X after attention out, all-reduce X after MLP down (g)
 *   no SP, backward: all-reduce X of the MLP input's gradient, of the QKV input's (f)
 *   SP, forward:     all-gather X before QKV, reduce-scatter X after attention out,
 *                    all-gather X before the MLP, reduce-scatter X after MLP down
 *   SP, backward:    per block, all-gather X of the output gradient (the reduce-scatter's
 *                    conjugate), all-gather X re-gathering the column-parallel input for
 *                    the weight gradient (Megatron saves the sequence-sharded input,
 *                    layers.py backward), reduce-scatter X of the input gradient
 * so SP moves the all-reduces' volume as all-gather + reduce-scatter and adds the two
 * input re-gathers. GQA with k < tp adds the qkv output's all-gather (forward) and
 * reduce-scatter (backward) of b·s·(a + 2k)·d·e (attention.py). A MoE layer has no MLP
 * collectives here (its routed experts' dispatch is expert_parallel.h's, on the rank's
 * sequence shard) but its shared expert's when it has one: Megatron's SharedExpertMLP
 * (megatron/core/transformer/moe/shared_experts.py) is an MLP on the tp group whose fc1
 * gathers the shard itself and whose fc2 reduce-scatters (or all-reduces) its output, the
 * dense MLP's four (SP) or two (no SP) per pass under its own names ("shared_fc1_in …",
 * "shared_fc2 …"), its forward pair before the router's (moe_layer.py runs
 * shared_experts_compute first). Without --moe-shared-expert-overlap, which moves them
 * onto a side stream beside the dispatch (not modelled), they run in line.
 * MLA's attention (layout above) has no gather of the layer input — its duplicated down
 * projections read the shard —: forward under SP k_pos_emb's all-gather of b·s·dr·e
 * (get_query_key_value_tensors), the up projections' input all-gathers of b·s·r_kv·e and
 * b·s·r_q·e (X for q_proj), the output's reduce-scatter X; backward the output gradient's
 * all-gather X, per up projection the input re-gather and input-gradient reduce-scatter,
 * k_pos_emb's reduce-scatter; without SP the output's all-reduce X and the up projections'
 * input-gradient all-reduces.
 * A full-recompute backward reruns the forward's list first (the caller's). Nothing for
 * tp = 1. */
void model_tp_layer_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass,
                           GArray *out);
/* The embedding's: forward all-reduce X (VocabParallelEmbedding,
 * reduce_from_tensor_model_parallel_region), or under SP a reduce-scatter X (Llama-like:
 * reduce_scatter_embeddings) or, with learned position or token-type embeddings, the
 * all-reduce then a local scatter (language_model_embedding.py); backward under SP the
 * all-gather X of the scatter's conjugate, nothing without SP. */
void model_tp_embedding_comms (const ModelArch *arch, const ModelTpCommParams *p,
                               ModelTpPass pass, GArray *out);
/* The output layer and vocab-parallel cross-entropy's: forward under SP the all-gather X of
 * the head's input; the loss's three all-reduces of b·s fp32 values (4·b·s B each: the
 * logits' max, the target logit, the sum of exponentials; megatron/core/tensor_parallel/
 * cross_entropy.py VocabParallelCrossEntropy.forward, logits upcast to float first).
 * Backward: the loss gradient is local; the head's input gradient is all-reduced X (f), or
 * under SP re-gathered and reduce-scattered as a layer's column-parallel input. */
void model_tp_head_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass,
                          GArray *out);

/* ---- Activations -------------------------------------------------------------------- */

/* How a saved tensor of the layer graph (graph.h, models/ops/graph_layer.c) lies on tp:
 *   SEQUENCE  [b, s, h]-shaped tensors outside the parallel regions (block input, norms and
 *             their saved inputs, residual, dropout masks, the row-parallel outputs, the
 *             column-parallel inputs): whole without SP, split along s with SP
 *   HEADS     inside attention and MLP (q, repeated k/v, scores, softmax, attention
 *             dropout, attention output, logsumexp, the MLP's inner tensors): split over tp
 *   KV        k and v before any repeat: split over min(tp, k) (1 KV head per rank when
 *             k < tp, above)
 *   WHOLE     LoRA's A·x (r wide; PEFT's LoraParallelLinear computes it whole on every rank:
 *             a whole A on the gathered input, or a split A followed by an all-reduce)
 * A MoE layer's router and routed-expert tensors: model_tp_act_region_of. Its shared
 * expert's (Megatron SharedExpertMLP, a dense MLP on the tp group) are the dense MLP's:
 * fc1's outputs and the SwiGLU HEADS (s/tp features of every token), fc2's reduce-scattered
 * output, the sigmoid gate's logit, score and scaled output and the sum with the routed
 * output (moe_out) SEQUENCE. MLA's (graph_layer.c mla_qkv): the down projections'
 * outputs q_a and kv_a and the latent norms' SEQUENCE (computed on the rank's tokens), the
 * up projections' outputs and the assembled query_states / key_states HEADS. */
typedef enum
{
  MODEL_TP_ACT_SEQUENCE,
  MODEL_TP_ACT_HEADS,
  MODEL_TP_ACT_KV,
  MODEL_TP_ACT_WHOLE,
} ModelTpActRegion;

/* The region of a graph tensor by its name; FALSE if the name is not one graph_layer.c
 * builds for a dense layer. */
gboolean model_tp_act_region (const char *name, ModelTpActRegion *out);
/* Whether `g` is a MoE layer's graph (it routes tokens: a "routed_tokens" tensor). */
gboolean model_tp_graph_is_moe (const ModelGraph *g);
/* model_tp_act_region for a layer whose MLP is MoE (`moe`): its router's and experts'
 * tensors are of the rank's tokens (the sequence region: under sequence parallelism a rank
 * routes its s/tp tokens, expert tp 1), not i/tp features. */
gboolean model_tp_act_region_of (const char *name, gboolean moe, ModelTpActRegion *out);

/* The layer graph `g` as one tp rank holds it: the same tensors and ops with each tensor's
 * bytes divided as its region says (SEQUENCE by tp only with `sp`), so model_graph_saved
 * gives a rank's saved activations under any checkpointing policy; the ops are copied
 * exactly (model_graph_copy_scaled: saves, writes, frees, flags), so
 * model_graph_transient_peak gives the rank's forward transient peak. Their kernels are
 * the unsharded layer's (the tp kernel shares are plan_tp's). With GPT settings
 * (Korthikanti §4.2, Table 2) this is s·b·h·(10 + 24/t + 5·a·s/(h·t)) (TP),
 * s·b·h·(34 + 5·a·s/h)/t (TP+SP), 34·s·b·h/t (TP+SP+selective). `n_kv_heads` (k) for the
 * KV region; `seq_len` must be a multiple of tp with SP (Megatron's
 * scatter_to_sequence_parallel_region splits it evenly). Errors (G_KEY_FILE_ERROR_
 * INVALID_VALUE): a tensor of no known region, the sequence not divisible ([training]
 * seq_len and [parallel] tp). A MoE layer's router and expert tensors are of the sequence
 * region (model_tp_act_region_of). New graph or NULL. */
/* The multiple of the sequence length (tokens) that tensor parallelism needs: tp under
 * sequence parallelism (Megatron-LM's mappings.py _split_along_first_dim scatters the
 * sequence evenly over the tp ranks), else 1. tp = 0 counts as 1. */
guint model_tp_seq_multiple (guint tp, gboolean sp);

ModelGraph *model_tp_shard_graph (const ModelGraph *g, guint tp, gboolean sp,
                                  guint64 n_kv_heads, guint64 seq_len, GError **error);
