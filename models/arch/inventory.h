/* models/arch/inventory.h — the tensor inventory: every parameter tensor of a model under a
 * fine-tuning method, and the folds that count parameters and bytes over it.
 *
 * One list, built once per (architecture, fine-tuning method): each nn.Module parameter of
 * the HF implementation (modeling_{llama,mistral,mixtral,qwen2,gpt2,bert,mpt}.py) with its
 * HF-style name, PyTorch shape, layer, role, whether it trains, and how it is stored; plus
 * the LoRA adapters PEFT adds (lora_A r × in, lora_B out × r per targeted projection; Hu
 * et al. 2021, arXiv 2106.09685 §4.1); plus, under QLoRA, the quantization constants
 * bitsandbytes keeps beside each NF4 weight (its QuantState; see "Quantization constants"
 * below). Parameter counts (arch.h), trainable counts, weight, gradient, master,
 * optimizer-state, adapter and NF4-constant bytes (models/stack/stack.h) are folds over this
 * list; nothing else counts parameters. The quantization constants are tensors but not
 * parameters (model_tensor_is_parameter()): no parameter count includes them.
 *
 * Representation (cheap for 100+ layer models): the transformer layers are identical, so
 * the list holds the root tensors (layer MODEL_TENSOR_ROOT: embeddings before the layers,
 * final norm and head after them) and ONE layer's tensors as a template (layer
 * MODEL_TENSOR_EACH_LAYER), which stands for every layer 0 … n_layers−1. A template
 * tensor's name has "{i}" where the layer index goes ("model.layers.{i}.self_attn.q_proj.
 * weight"); model_inventory_tensor_name() expands it. Experts of a MoE layer are one entry
 * with count = n_experts (HF Mixtral: one nn.Linear per expert, "…experts.{e}.w1.weight";
 * each copy has `shape`). A tensor therefore stands for
 *   copies = count × (n_layers if layer == MODEL_TENSOR_EACH_LAYER else 1)
 * identical tensors of shape[0] × … × shape[ndim−1] elements each; a template tensor
 * limited to a layer range (from_layer, to_layer: deepseek's dense first layers) has
 * count × (to_layer − from_layer) copies instead. A later pass may add
 * entries with layer ≥ 0 (one concrete layer); every fold below already handles them.
 *
 * Order (it is the allocation order the memory plan replays, so it is part of the
 * contract): root tensors before the layers (token, position, token-type embeddings,
 * bert's embedding LayerNorm), the layer template, root tensors after the layers (final
 * norm, pooler, classifier, LM head), then the multi-token-prediction modules when the
 * training stack trains them (model_inventory_new_mtp; concrete layers n_layers + d). Inside the layer: q, k, v (or the fused qkv), o;
 * their biases; the router; the MLP weights (gate, up, down / fc, proj); their biases; the
 * shared expert (gate, up, down) and its gate (qwen2_moe); the
 * norm weights (qwen3: q_norm, k_norm, then the two layer norms); the norm biases; then the
 * LoRA adapters, A of each projection of a group
 * and then their B (groups: q, k, v, qkv, o, router, {gate, up} or fc, down, {shared gate, shared up},
 * shared down, shared expert gate); then the
 * quantization constants of the NF4 weights, in weight order (each weight's absmax, then
 * under double quantization its absmax2).
 *
 * Quantization constants (QLoRA, Dettmers et al. 2023 arXiv 2305.14314 §3; bitsandbytes
 * functional.py quantize_4bit, the CUDA kernel's absmax in backends/cuda/ops.py, and
 * QuantState): an NF4 weight of n elements is quantized in blocks of blocksize = 64
 * (Linear4bit's default) with one absmax per block, b = ⌈n/64⌉ of them:
 *   - without double quantization (compress_statistics False): absmax, b × fp32;
 *   - with it (bnb_4bit_use_double_quant, compress_statistics True): absmax − its mean is
 *     quantized blockwise with blocksize 256 (quantize_blockwise, the 8-bit dynamic map),
 *     so absmax is b × uint8, and the nested state keeps absmax2, ⌈b/256⌉ × fp32.
 * Each is one entry with role MODEL_TENSOR_QUANT_ABSMAX / _ABSMAX2, shape (b) / (⌈b/256⌉),
 * storage FP32 or UINT8, frozen, `base` the NF4 weight, layer, after_layers and count as
 * the weight's. Per weight bnb also keeps the 16-entry NF4 code (fp32), and under double
 * quantization the fp32 offset (the mean) and a 256-entry fp32 copy of the dynamic map;
 * those ≈ 1.1 KB per weight are not listed (the fold reproduces QLoRA §3's per-weight
 * rate, model_finetune_nf4_constant_bytes(), exactly for every n that is a multiple of
 * 64 · 256).
 *
 * gpt_oss (modeling_gpt_oss.py): after the q/k/v/o biases, self_attn.sinks (role
 * ATTN_SINK, a); the router mlp.router weight (E, h) and bias (E); the experts as one
 * entry each with count E: mlp.experts.gate_up_proj (role MLP_UP, (2i, h): one expert's
 * slice of HF's [E, h, 2i] parameter, kept out × in like nn.Linear), its bias (2i),
 * mlp.experts.down_proj (MLP_DOWN, (h, i)) and its bias (h). No "{e}" in those names: HF
 * holds all experts in one 3-D nn.Parameter, so PEFT's all-linear (nn.Linear modules only)
 * does not target them and bitsandbytes does not quantize them. Under LoRA/QLoRA, when the
 * config's quantization_config is mxfp4 (arch.h mxfp4_experts), the two expert weight
 * matrices are stored MXFP4 (the released checkpoint's gate_up_proj_blocks/_scales,
 * down_proj_blocks/_scales; modules_to_not_convert — attention, router, embeddings, head —
 * and every bias stay in the weight dtype) unless the fine-tune sets `dequantize`
 * (finetune.h; Mxfp4Config(dequantize=True)); a full fine-tune trains dequantized weights
 * (transformers Mxfp4Config(dequantize=True)), WEIGHT storage.
 *
 * Shapes are PyTorch's parameter shapes: nn.Linear weight (out, in), bias (out); GPT-2's
 * Conv1D weight (in, out) (modeling_gpt2.py Conv1D: weight nx × nf); nn.Embedding
 * (num, dim); norm weight/bias (h). ndim is 1 or 2 for everything built today.
 *
 * Sharding (models/parallel/): a tensor is identified by its index in `tensors` (and, for
 * template entries, the layer; for counted entries, the copy); shard one along dimension d
 * with shape[d] / n. The inventory itself never shards.
 */
#pragma once

#include <glib.h>
#include "models/arch/arch.h"
#include "models/arch/finetune.h"

/* What a tensor is in the model. Weights and biases of one projection share the role
 * (`is_bias` tells them apart). */
typedef enum
{
  MODEL_TENSOR_EMBEDDING,      /* token embedding V × h (the LM head too when tied) */
  MODEL_TENSOR_POSITION,       /* learned position embedding P × h (gpt2, bert) */
  MODEL_TENSOR_TOKEN_TYPE,     /* bert token-type embedding T × h */
  MODEL_TENSOR_Q,              /* attention query projection */
  MODEL_TENSOR_K,
  MODEL_TENSOR_V,
  MODEL_TENSOR_QKV,            /* fused q, k, v (gpt2 c_attn, mpt Wqkv) */
  MODEL_TENSOR_Q_A,            /* MLA q_a_proj r_q × h (q down-projection W_DQ) */
  MODEL_TENSOR_Q_B,            /* MLA q_b_proj nh·(dn+dr) × r_q (W_UQ and W_QR) */
  MODEL_TENSOR_KV_A,           /* MLA kv_a_proj_with_mqa (r_kv+dr) × h (W_DKV and W_KR) */
  MODEL_TENSOR_KV_B,           /* MLA kv_b_proj nh·(dn+dv) × r_kv (W_UK and W_UV) */
  MODEL_TENSOR_ATTN_OUT,       /* attention output projection */
  MODEL_TENSOR_MLP_GATE,       /* SwiGLU gate (count n_experts for MoE: an expert's w1) */
  MODEL_TENSOR_MLP_UP,         /* SwiGLU up / GELU fc (MoE: w3; GELU: c_fc, up_proj) */
  MODEL_TENSOR_MLP_DOWN,       /* SwiGLU down / GELU proj (MoE: w2) */
  MODEL_TENSOR_SHARED_GATE,    /* qwen2_moe shared expert gate_proj s × h (always active) */
  MODEL_TENSOR_SHARED_UP,      /* qwen2_moe shared expert up_proj s × h */
  MODEL_TENSOR_SHARED_DOWN,    /* qwen2_moe shared expert down_proj h × s */
  MODEL_TENSOR_SHARED_EXPERT_GATE, /* qwen2_moe shared_expert_gate 1 × h (sigmoid scale) */
  MODEL_TENSOR_ROUTER,         /* MoE router n_experts × h (block_sparse_moe.gate, mlp.gate) */
  MODEL_TENSOR_NORM,           /* RMSNorm / LayerNorm weight or bias */
  MODEL_TENSOR_QK_NORM,        /* qwen3 q_norm / k_norm RMSNorm weight (head_dim) */
  MODEL_TENSOR_MLA_NORM,       /* MLA q_a_layernorm (r_q) / kv_a_layernorm (r_kv) weight */
  MODEL_TENSOR_ATTN_SINK,      /* gpt_oss self_attn.sinks: one learned logit per query head
                                  (num_attention_heads), counted with the attention */
  MODEL_TENSOR_POOLER,         /* bert pooler dense h × h */
  MODEL_TENSOR_CLASSIFIER,     /* bert sequence-classification head n_labels × h */
  MODEL_TENSOR_HEAD,           /* untied LM head V × h */
  MODEL_TENSOR_MTP_EH_PROJ,    /* DeepSeek-V3 MTP eh_proj h × 2h: [enorm(emb); hnorm(h)] → h */
  MODEL_TENSOR_LORA_A,         /* adapter A: r × in */
  MODEL_TENSOR_LORA_B,         /* adapter B: out × r */
  MODEL_TENSOR_DORA_MAGNITUDE, /* DoRA magnitude vector (out); reserved: no DoRA method yet */
  MODEL_TENSOR_QUANT_ABSMAX,   /* QLoRA: an NF4 weight's per-64 absmax (fp32, or uint8
                                  under double quantization); not a parameter */
  MODEL_TENSOR_QUANT_ABSMAX2,  /* QLoRA double quantization: the absmax's per-256 fp32
                                  absmax (nested QuantState); not a parameter */
  MODEL_N_TENSOR_ROLES
} ModelTensorRole;

/* How a tensor is stored on the GPU. The per-element bytes of WEIGHT depend on the
 * precision (models/stack/stack.h model_stack_weight_bytes(): 4 or 2). */
typedef enum
{
  MODEL_TENSOR_STORAGE_WEIGHT, /* the stack's weight dtype (fp32, or the 16-bit copy) */
  MODEL_TENSOR_STORAGE_NF4,    /* QLoRA 4-bit NormalFloat, 0.5 B per element (packed two
                                  per uint8); its constants are their own tensors */
  MODEL_TENSOR_STORAGE_FP32,   /* 4 B per element whatever the precision (absmax, absmax2) */
  MODEL_TENSOR_STORAGE_UINT8,  /* 1 B per element (double-quantized absmax) */
  MODEL_TENSOR_STORAGE_MXFP4,  /* OCP Microscaling MXFP4 (OCP MX spec v1.0 §5, §6.3): blocks
                                  of 32 FP4 E2M1 values sharing one E8M0 scale byte, 4.25
                                  bits = 0.53125 B per element (MODEL_MXFP4_BYTES), scales
                                  included; gpt_oss's frozen expert weights */
} ModelTensorStorage;

/* B per MXFP4 element: (32 × 4 bits + 8 bits) / 32 / 8 bits. */
#define MODEL_MXFP4_BYTES (4.25 / 8)


#define MODEL_TENSOR_ROOT (-1)       /* outside the transformer layers (FSDP root unit) */
#define MODEL_TENSOR_EACH_LAYER (-2) /* template: one copy in every transformer layer */

typedef struct
{
  const char *name;   /* HF-style, "{i}" for the layer and "{e}" for the expert; owned by
                         the inventory */
  ModelTensorRole role;
  gboolean is_bias;   /* a bias (or a LayerNorm bias) rather than a weight */
  guint ndim;         /* 1 or 2 (≤ 4) */
  guint64 shape[4];   /* PyTorch shape; unused dims are 1 */
  gint layer;         /* MODEL_TENSOR_ROOT, MODEL_TENSOR_EACH_LAYER, or a layer index ≥ 0 */
  gboolean after_layers; /* a root tensor after the layers (final norm, pooler, classifier,
                            LM head); FALSE for the embeddings and for layer tensors */
  guint64 count;      /* identical copies per layer (n_experts for an expert's tensor), ≥ 1 */
  gboolean trainable; /* has gradients, master weights and optimizer state */
  ModelTensorStorage storage;
  gboolean lora_target; /* a projection weight that carries LoRA adapters */
  gint base;          /* LoRA A/B: index of the projection weight it adapts; quantization
                         constants: of the NF4 weight they belong to; else -1 */
  guint64 from_layer, to_layer; /* template tensors only: present in layers
                         [from_layer, to_layer), to_layer 0 meaning n_layers (every layer:
                         the default). DeepSeek: the dense MLP of layers 0 … k−1 (to_layer
                         k) and the MoE block of the others (from_layer k) */
} ModelTensor;

/* A model parameter (an nn.Parameter: base tensors and adapters), rather than a
 * quantization constant (MODEL_TENSOR_QUANT_*). */
gboolean model_tensor_is_parameter (const ModelTensor *t);
/* A quantization constant (MODEL_TENSOR_QUANT_ABSMAX or _ABSMAX2). */
gboolean model_tensor_is_quant_constant (const ModelTensor *t);

/* B per element of `t` as stored: `weight_bytes` for WEIGHT storage, 0.5 for NF4
 * (MODEL_NF4_BYTES), 4 for FP32, 1 for UINT8, 0.53125 for MXFP4 (MODEL_MXFP4_BYTES). */
double model_tensor_storage_bytes (const ModelTensor *t, double weight_bytes);

typedef struct
{
  ModelArch *arch;    /* an owned copy of the architecture */
  ModelFinetune finetune; /* method NONE for full fine-tuning */
  guint64 n_layers;   /* = arch->n_layers */
  guint n_mtp;        /* multi-token-prediction depths listed (model_inventory_new_mtp) */
  GArray *tensors;    /* of ModelTensor, in the order above; read-only for users */
  GStringChunk *names; /* storage of the names */
  gint ref_count;      /* private: the thread's memo (inventory.c) shares it */
} ModelInventory;

/* Builds the inventory of `arch` under `ft` (NULL: full fine-tuning, every parameter
 * trains). Under LoRA/QLoRA the base is frozen and the adapters of the targeted
 * projections (finetune.h: all_linear, attention, qv; on the fused qkv where q, k, v are
 * fused) are the only trainable tensors; under QLoRA the layers' projection weights
 * (router included: bitsandbytes replaces every nn.Linear of the blocks) are NF4, the
 * rest (embeddings, norms, biases, head) stays in the weight dtype.
 * A tensor with a 0-sized dimension is absent (left out). The architecture need not have
 * passed model_arch_validate(). Errors: MODEL_ARCH_ERROR_INVALID when LoRA/QLoRA has rank 0
 * or a size exceeds 2^32 (counts would not stay exact). Returns a new inventory
 * (model_inventory_free) or NULL. */
ModelInventory *model_inventory_new (const ModelArch *arch, const ModelFinetune *ft,
                                     GError **error);
/* The same, followed by `n_mtp` DeepSeek-V3 multi-token-prediction modules (the training
 * stack's [training] mtp_layers; model_stack_inventory): depth d is the concrete layer
 * n_layers + d (HF checkpoint model.layers.{L+d}): enorm, hnorm, eh_proj (h × 2h), a copy
 * of each parameter tensor of the last layer, shared_head.norm (arch.h
 * model_arch_n_params_mtp); the shared embedding and head are not repeated. They come
 * after every other tensor, are in the ALL and MTP scopes and no other, and train unless
 * an adapter method froze the base (no adapters on them). n_mtp is not checked against
 * the config's num_nextn_predict_layers (the plan's validation does that). Errors and
 * ownership as model_inventory_new (which is this with n_mtp = 0). */
ModelInventory *model_inventory_new_mtp (const ModelArch *arch, const ModelFinetune *ft,
                                         guint n_mtp, GError **error);
/* Both return the calling thread's last inventory again when the inputs are the same (a
 * memo: inventory.c), so an inventory is read-only and its reference belongs to the
 * thread that got it; model_inventory_free drops that reference. */
void model_inventory_free (ModelInventory *inv); /* NULL is a no-op */

/* Elements of ONE copy of `t` (Π shape). */
guint64 model_tensor_numel (const ModelTensor *t);

/* The i-th tensor; i < inv->tensors->len. */
const ModelTensor *model_inventory_tensor (const ModelInventory *inv, guint i);

/* `t`'s name for layer `layer` (template tensors; ignored for others) and expert `expert`
 * (counted tensors), e.g. "model.layers.3.self_attn.q_proj.weight". Newly allocated. */
char *model_inventory_tensor_name (const ModelTensor *t, guint64 layer, guint64 expert);

/* Which part of the model a fold covers: the whole model (root + n_layers × layer, + the
 * MTP modules when listed), the root tensors only, one transformer layer (the template,
 * count copies each), the root tensors before the layers (embeddings, bert's embedding
 * LayerNorm) or after them (final norm, pooler, classifier, LM head), the MTP modules
 * (model_inventory_new_mtp; empty otherwise). ROOT = EMBED + HEAD. */
typedef enum
{
  MODEL_INVENTORY_ALL,
  MODEL_INVENTORY_ROOT,
  MODEL_INVENTORY_LAYER,
  MODEL_INVENTORY_EMBED,
  MODEL_INVENTORY_HEAD,
  MODEL_INVENTORY_MTP,
} ModelInventoryScope;

/* Copies of `t` inside `scope` (0 if t is outside it): ALL count × (n_layers for
 * template tensors, or the size of its layer range), ROOT (EMBED, HEAD: before, after the
 * layers) count for root tensors, LAYER count for template tensors present in the last
 * layer (the representative one: deepseek's MoE layer; its dense first layers' MLP is
 * outside LAYER, inside ALL), MTP count for the MTP modules' tensors (layer ≥ n_layers). */
guint64 model_inventory_copies (const ModelInventory *inv, const ModelTensor *t,
                                ModelInventoryScope scope);

/* Copies of `t` in the decoder layers [from_layer, to_layer) (a pipeline stage's): count ×
 * the layers of the range that hold it for template tensors (deepseek's dense MLP only in
 * its first layers, the MoE block in the others), count for a concrete layer's tensor in
 * the range, 0 for root tensors and outside the range. */
guint64 model_inventory_copies_in_layers (const ModelInventory *inv, const ModelTensor *t,
                                          guint64 from_layer, guint64 to_layer);

/* The generic fold: Σ over the tensors in `scope` of copies × fn(t, data). */
typedef double (*ModelTensorFn) (const ModelTensor *t, gpointer data);
double model_inventory_fold (const ModelInventory *inv, ModelInventoryScope scope,
                             ModelTensorFn fn, gpointer data);

/* Parameter counts (exact; quantization constants are no parameters and count in none).
 * n_params: base model (adapters excluded: what the published counts count); n_trainable: what has gradients (every base tensor under full
 * fine-tuning, the adapters alone under LoRA); n_adapter: the LoRA A/B tensors; n_role:
 * of one role (weights and biases); n_nf4: elements stored as NF4. */
guint64 model_inventory_n_params (const ModelInventory *inv, ModelInventoryScope scope);
guint64 model_inventory_n_trainable (const ModelInventory *inv, ModelInventoryScope scope);
guint64 model_inventory_n_adapter (const ModelInventory *inv, ModelInventoryScope scope);
guint64 model_inventory_n_role (const ModelInventory *inv, ModelInventoryScope scope,
                                ModelTensorRole role);
guint64 model_inventory_n_nf4 (const ModelInventory *inv, ModelInventoryScope scope);

/* Parameters of transformer layer `layer` alone (template tensors present there and
 * concrete entries of that layer), base tensors. */
guint64 model_inventory_n_params_of_layer (const ModelInventory *inv, guint64 layer);

/* Parameters touched per token (MoE: experts_per_token of the n_experts experts' tensors,
 * the router whole), whole model, base tensors: for model FLOPs. */
guint64 model_inventory_n_active (const ModelInventory *inv);

/* Elements of the largest single parameter tensor copy in `scope` (trainable_only: among
 * the trainable ones); 0 if none. */
guint64 model_inventory_largest (const ModelInventory *inv, ModelInventoryScope scope,
                                 gboolean trainable_only);

/* Stored bytes (B) of the parameters in `scope`, adapters included or not: WEIGHT storage
 * `weight_bytes` per element, NF4 0.5 B per element (MODEL_NF4_BYTES; its constants are
 * not parameters: model_inventory_nf4_constant_bytes()), MXFP4 0.53125 B per element (its
 * E8M0 scales included). */
double model_inventory_weight_bytes (const ModelInventory *inv, ModelInventoryScope scope,
                                     double weight_bytes, gboolean with_adapters);
/* Bytes (B) of the quantization constants in `scope` (QLoRA §3; 0 without NF4 tensors):
 * Σ copies × numel × storage bytes over the MODEL_TENSOR_QUANT_* tensors (see
 * "Quantization constants" above); = n_nf4 × model_finetune_nf4_constant_bytes() when
 * every NF4 tensor's size is a multiple of 64 · 256. */
double model_inventory_nf4_constant_bytes (const ModelInventory *inv, ModelInventoryScope scope);
/* Number of quantization-constant tensor copies in `scope` (Σ copies). */
guint64 model_inventory_n_quant_constant_tensors (const ModelInventory *inv,
                                                  ModelInventoryScope scope);

/* The projections of one layer as finetune.h's ModelLinear (a group, e.g. SwiGLU gate and
 * up, is one entry with their summed count). New GArray of ModelLinear. */
GArray *model_inventory_layer_linears (const ModelInventory *inv);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelInventory, model_inventory_free)
