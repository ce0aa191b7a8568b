/* models/arch/arch.h — a transformer architecture: its shape and its exact parameter count.
 *
 * Built from a Hugging Face config.json (json-glib, the only json-glib user of the
 * project) through an alias table (hidden_size|n_embd|d_model, num_hidden_layers|n_layer,
 * …; "text_config" nesting), or filled in directly. Families: llama, mistral, mixtral,
 * qwen2 (decoder with RMSNorm, rotary positions, SwiGLU MLP, GQA; qwen2 adds q/k/v biases;
 * mixtral replaces the MLP by n_experts SwiGLU experts and a router), gpt2 (LayerNorm with
 * bias, learned positions, GELU MLP with 4h, biases everywhere, tied embeddings), bert
 * (encoder: post-LayerNorm with bias, learned positions + token-type embeddings and an
 * embedding LayerNorm, GELU MLP, biases everywhere; head = pooler h×h + bias and a
 * sequence-classification layer h×num_labels + bias, as BertForSequenceClassification),
 * mpt (MosaicML MPT: LayerNorm, ALiBi — no position embeddings, no rotary —, GELU MLP of
 * expansion_ratio × d_model, fused Wqkv, tied embeddings; no_bias drops every linear bias
 * and the LayerNorm biases), qwen3 (qwen2 without biases, explicit head_dim, q_norm and
 * k_norm RMSNorms of head_dim per layer; modeling_qwen3.py Qwen3Attention), qwen3_moe
 * (qwen3 attention, every MLP a router h → E plus E SwiGLU experts of moe_intermediate_size;
 * modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock), qwen2_moe (qwen2 attention with q/k/v
 * biases, router + E experts of moe_intermediate_size + one always-active shared SwiGLU
 * expert of shared_expert_intermediate_size scaled by sigmoid(shared_expert_gate h → 1);
 * modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock), gpt_oss (OpenAI gpt-oss, arXiv 2508.10925;
 * modeling_gpt_oss.py: q/k/v/o with biases, head_dim from the config, per-head attention
 * sinks, a router with bias, experts with a fused gate_up_proj and biases, clamped SwiGLU,
 * layers alternating sliding_window and full attention). For the MoE families intermediate_size
 * holds moe_intermediate_size (the expert width); only all-MoE layer stacks load.
 * Parameter counts reproduce the published ones exactly (tests/unit/models/test_arch.c).
 */
#pragma once

#include <glib.h>

typedef enum
{
  MODEL_FAMILY_LLAMA,
  MODEL_FAMILY_MISTRAL,
  MODEL_FAMILY_MIXTRAL,
  MODEL_FAMILY_QWEN2,
  MODEL_FAMILY_GPT2,
  MODEL_FAMILY_BERT,
  MODEL_FAMILY_MPT,
  MODEL_FAMILY_QWEN3,     /* qwen2 without biases, plus q_norm/k_norm over head_dim */
  MODEL_FAMILY_QWEN3_MOE, /* qwen3 attention, every layer a routed MoE (no shared expert) */
  MODEL_FAMILY_QWEN2_MOE, /* qwen2 attention, routed MoE plus a sigmoid-gated shared expert */
  MODEL_FAMILY_DEEPSEEK_V2, /* MLA attention, DeepSeekMoE (shared + routed experts), dense first layers */
  MODEL_FAMILY_DEEPSEEK_V3, /* deepseek_v2 plus sigmoid noaux_tc routing and MTP */
  MODEL_FAMILY_GPT_OSS,   /* gpt_oss: biased q/k/v/o + sinks, biased router, fused gate_up
                             experts with biases, alternating sliding/full attention */
} ModelFamily;

typedef enum
{
  MODEL_MLP_SWIGLU, /* gate, up (h×i each), down (i×h) */
  MODEL_MLP_GELU,   /* fc (h×i), proj (i×h) */
} ModelMlpKind;

typedef enum
{
  MODEL_NORM_RMS,   /* weight only: h parameters */
  MODEL_NORM_LAYER, /* weight and bias: 2h parameters */
  MODEL_NORM_LAYER_NO_BIAS, /* LayerNorm, weight only (MPT no_bias): h parameters */
} ModelNormKind;

/* DeepSeek-V2/V3 (model_type deepseek_v2, deepseek_v3; HF modeling_deepseek.py,
 * DeepseekV2Attention / DeepseekV2MoE / MoEGate; DeepSeek-V2 arXiv 2405.04434 §2.1-2.2,
 * DeepSeek-V3 arXiv 2412.19437 §2.1-2.2). Routing method of MoEGate.topk_method. */
typedef enum
{
  MODEL_TOPK_GREEDY,               /* plain top-k of the scores (V2-Lite) */
  MODEL_TOPK_GROUP_LIMITED_GREEDY, /* top-k inside the topk_group best of n_group groups (V2) */
  MODEL_TOPK_NOAUX_TC,             /* V3: bias-corrected (e_score_correction_bias) group top-k */
} ModelTopkMethod;

typedef enum
{
  MODEL_SCORING_SOFTMAX, /* MoEGate scoring_func "softmax" (V2) */
  MODEL_SCORING_SIGMOID, /* "sigmoid" (V3) */
} ModelScoringFunc;

/* The DeepSeek-specific shape and routing fields; all zero (mla FALSE) for the other
 * families. Multi-head Latent Attention (V2 §2.1.2-2.1.3): q = W_UQ·RMSNorm(W_DQ·x)
 * (q_a_proj h → r_q, q_a_layernorm, q_b_proj r_q → nh·(dn+dr)) or, with q_lora_rank 0
 * (null in config.json), q_proj h → nh·(dn+dr); kv_a_proj_with_mqa h → r_kv + dr (the
 * latent c_KV and the shared rotary key k_R), kv_a_layernorm r_kv, kv_b_proj r_kv →
 * nh·(dn+dv); o_proj nh·dv → h. ModelArch.head_dim holds dn + dr (q·k width per head,
 * HF's q_head_dim) and n_kv_heads = n_heads. The layer stack (DeepseekV2DecoderLayer):
 * layer i is MoE when i ≥ first_k_dense_replace and i % moe_layer_freq == 0 (only
 * moe_layer_freq 1 loads), else a dense SwiGLU MLP of dense_intermediate_size; a MoE
 * layer holds the router, n_experts routed experts of ModelArch.intermediate_size
 * (moe_intermediate_size) and the always-active shared experts, one SwiGLU of
 * n_shared_experts · moe_intermediate_size (ModelArch.shared_expert_size, no gate). */
typedef struct
{
  gboolean mla;                /* Multi-head Latent Attention (the deepseek families) */
  guint64 q_lora_rank;         /* r_q; 0 when q_lora_rank is null (q_proj is full) */
  guint64 kv_lora_rank;        /* r_kv, the latent KV width */
  guint64 qk_nope_head_dim;    /* dn */
  guint64 qk_rope_head_dim;    /* dr */
  guint64 v_head_dim;          /* dv */
  guint64 first_k_dense;       /* first_k_dense_replace: layers 0 … k−1 are dense */
  guint64 dense_intermediate_size; /* intermediate_size of the dense layers */
  guint64 n_shared_experts;    /* shared experts (their SwiGLU is n_shared · I_moe wide) */
  ModelTopkMethod topk_method;
  ModelScoringFunc scoring;
  guint64 n_group, topk_group; /* expert groups and groups kept (stored for routing work) */
  double routed_scaling_factor;
  gboolean norm_topk_prob;
  gboolean router_bias;        /* e_score_correction_bias (E) beside the router: noaux_tc */
  guint64 n_mtp_layers;        /* num_nextn_predict_layers (V3: 1); not in the main counts */
} ModelDeepseek;

typedef struct
{
  char *name;               /* e.g. "llama-3.1-8b" (file stem) or user-given; owned */
  ModelFamily family;
  guint64 hidden_size;      /* h */
  guint64 n_layers;         /* L */
  guint64 n_heads;          /* a, query heads */
  guint64 n_kv_heads;       /* key/value heads (GQA); == n_heads for MHA */
  guint64 head_dim;         /* d; hidden_size / n_heads unless given */
  guint64 intermediate_size;/* i, MLP inner width (per expert for MoE) */
  guint64 vocab_size;       /* V */
  guint64 max_positions;    /* context length the model was built for */
  guint64 n_experts;        /* 0 for dense models */
  guint64 experts_per_token;/* top-k routing; 0 for dense */
  guint64 sliding_window;   /* 0 when none */
  guint64 type_vocab_size;  /* bert: token-type (segment) embeddings; 0 otherwise */
  guint64 num_labels;       /* bert: classes of the classification head; 0 otherwise */
  gboolean tied_embeddings; /* LM head shares the input embedding */
  gboolean learned_positions; /* a max_positions × h position embedding (gpt2) */
  gboolean qkv_bias;        /* biases on q, k, v projections */
  gboolean attn_out_bias;   /* bias on the attention output projection */
  gboolean mlp_bias;        /* biases on MLP projections */
  ModelMlpKind mlp;
  ModelNormKind norm;
  gboolean qk_norm;         /* qwen3: RMSNorm over head_dim on q and k (d each, per layer) */
  guint64 shared_expert_size; /* qwen2_moe: width of the always-active shared SwiGLU
                                 expert (shared_expert_intermediate_size); 0 when none */
  gboolean shared_expert_gate; /* qwen2_moe: the shared expert's sigmoid gate h → 1 */
  ModelDeepseek deepseek;   /* deepseek_v2 / deepseek_v3 fields (all zero otherwise) */
  /* gpt_oss (HF modeling_gpt_oss.py; hf_config.c read_gpt_oss reads them) */
  gboolean attn_sinks;      /* GptOssAttention.sinks: one learned logit per query head */
  gboolean router_bias;     /* GptOssTopKRouter.bias: E, beside the h·E weight */
  gboolean fused_gate_up;   /* GptOssExperts: gate_up_proj h → 2i (+ bias 2i), down i → h
                               (+ bias h), one 3-D parameter each over the experts */
  double swiglu_limit;      /* GptOssExperts' clamped SwiGLU: gate ≤ limit, |up| ≤ limit
                               (swiglu_limit); 0: no clamp */
  guint64 n_full_attention_layers; /* layers attending to the whole causal context although
                                      sliding_window > 0 (layer_types "full_attention");
                                      0: every layer windowed (mistral) */
  gboolean mxfp4_experts;   /* quantization_config quant_method "mxfp4": the experts' weight
                               matrices are stored MXFP4 while frozen (inventory.h) */
} ModelArch;

#define MODEL_ARCH_ERROR (model_arch_error_quark ())
GQuark model_arch_error_quark (void);

typedef enum
{
  MODEL_ARCH_ERROR_IO,       /* file unreadable */
  MODEL_ARCH_ERROR_JSON,     /* not JSON, or not an object */
  MODEL_ARCH_ERROR_FAMILY,   /* model_type unknown */
  MODEL_ARCH_ERROR_FIELD,    /* a required field missing, of the wrong type, or not positive */
  MODEL_ARCH_ERROR_INVALID,  /* inconsistent shape (heads not dividing, kv_heads ∤ heads…) */
} ModelArchError;

/* Parses a family name as used in HF "model_type" ("llama", "mistral", "mixtral", "qwen2",
 * "gpt2", "bert", "mpt", "qwen3", "qwen3_moe", "qwen2_moe", "deepseek_v2", "deepseek_v3"). FALSE + MODEL_ARCH_ERROR_FAMILY (message lists the known ones) if unknown. */
gboolean model_arch_family_from_string (const char *text, ModelFamily *out, GError **error);
const char *model_arch_family_name (ModelFamily family);

/* Whether `family`'s MLP is a routed mixture of experts (mixtral, qwen3_moe, qwen2_moe, gpt_oss):
 * num_local_experts / num_experts_per_tok are required and allowed only there. */
gboolean model_arch_family_moe (ModelFamily family);

/* Whether `family` is deepseek_v2 or deepseek_v3 (MLA, DeepSeekMoE; ModelDeepseek). */
gboolean model_arch_family_deepseek (ModelFamily family);

/* Fills the family's defaults (norm, mlp kind, bias flags, tied, positions) into `arch`
 * for `family`, leaving sizes untouched. */
void model_arch_set_family_defaults (ModelArch *arch, ModelFamily family);

/* Loads a Hugging Face config.json. The result's name is its `_name_or_path` when that is a
 * non-empty string (the checkpoint name save_pretrained() records), else the file's
 * basename without ".json" (for a file named config.json: its directory's name). Errors: MODEL_ARCH_ERROR_* with the path in the message and the JSON key named.
 * Returns a new ModelArch (free with model_arch_free) or NULL. */
ModelArch *model_arch_load_hf_config (const char *path, GError **error);

/* Deepest nesting of arrays and objects in the NUL-terminated `text` (brackets inside
 * strings skipped), stopping at MODEL_JSON_MAX_DEPTH + 1 as soon as it goes deeper. Every
 * JSON reader in models/ checks it before json-glib: json-glib's recursive descent has no
 * depth limit, so a hostile file of 100,000 nested brackets overflows the stack, while a
 * config.json or ds_config.json nests a handful of levels. Not a parser: json-glib still
 * reports syntax errors. No allocation, no errors. */
#define MODEL_JSON_MAX_DEPTH 64
guint model_json_depth (const char *text);

/* Offset in the NUL-terminated `text` of the first escaped NUL, a `\u0000` inside a string
 * (an escaped backslash before `u0000` is none), or -1. json-glib decodes it into a C string
 * that ends there, so a name or value would be read cut short ("llama\u0000x" as "llama");
 * every JSON reader in models/ refuses it, as it refuses a NUL byte. Not a parser: no
 * allocation, no errors. */
gssize model_json_escaped_nul (const char *text);

/* Same, from JSON text in memory; `origin` names the source in messages. Each thread
 * remembers its last successful parse: the same text and origin again give a copy of it
 * (what a parse gives) without parsing. */
ModelArch *model_arch_load_hf_json (const char *json_text, const char *origin, GError **error);

/* Checks sizes are positive and consistent (n_heads % n_kv_heads == 0, experts_per_token ≤
 * n_experts, …). FALSE + MODEL_ARCH_ERROR_INVALID naming the field. */
gboolean model_arch_validate (const ModelArch *arch, GError **error);

/* The same checks, for a caller that names the key itself (the scenario's [model] group):
 * on failure keys[0] is the canonical field name (model_arch_field_names) the message is
 * about and keys[1] a second field it involves (or NULL), both static strings; the message
 * ("num_hidden_layers must be in [1, 1024], not 2000") does not name the model. */
gboolean model_arch_validate_key (const ModelArch *arch, const char *keys[2], GError **error);

/* The largest value canonical field `key` may take, the upper end of its [model] key's
 * range: model_arch_validate's bound (layers 1024, hidden 2^20, heads and head_dim 2^16,
 * FFN 2^22, vocabulary and positions 2^24, experts 1024); sliding_window is capped at the
 * positions' bound, type_vocab_size and num_labels at the vocabulary's. 0 for an unknown
 * key. */
guint64 model_arch_field_max (const char *key);

ModelArch *model_arch_copy (const ModelArch *arch);
void model_arch_free (ModelArch *arch); /* NULL is a no-op */

/* Parameter counts (exact integers; arch_counts.c), folds over the tensor inventory
 * (inventory.h; each call builds it: for many folds build one ModelInventory instead).
 * Whole model; embedding (+ positions); one transformer layer (attention + MLP/experts +
 * router + its norms); LM head (0 if tied); final norm.
 * total = embedding + L × layer + final_norm + lm_head. */
guint64 model_arch_n_params (const ModelArch *arch);
guint64 model_arch_n_params_embedding (const ModelArch *arch);
guint64 model_arch_n_params_layer (const ModelArch *arch);
guint64 model_arch_n_params_lm_head (const ModelArch *arch);
guint64 model_arch_n_params_final_norm (const ModelArch *arch);
/* Parameters touched per token (MoE: only top-k experts), for model FLOPs. */
guint64 model_arch_n_params_active (const ModelArch *arch);

/* Parts of one layer: attention (q, k, v, o and their biases); the MLP block (all experts
 * plus the router for MoE); one expert's (or the dense) MLP alone. Layer = attention + MLP
 * + its two norms. */
guint64 model_arch_n_params_attention (const ModelArch *arch);
guint64 model_arch_n_params_mlp (const ModelArch *arch);
guint64 model_arch_n_params_expert (const ModelArch *arch);

/* DeepSeek-V3's multi-token-prediction modules (num_nextn_predict_layers of them;
 * arXiv 2412.19437 §2.2, HF checkpoint layer 61): per module enorm h + hnorm h + eh_proj
 * 2h·h + one MoE decoder layer + shared_head.norm h; the embedding and head are shared
 * with the main model and not counted. 0 when n_mtp_layers is 0. Not part of
 * model_arch_n_params(); a fold over inventory.h model_inventory_new_mtp's MTP scope. A
 * plan trains them under [training] mtp_layers (models/stack/stack.h). */
guint64 model_arch_n_params_mtp (const ModelArch *arch);

/* Parameters of transformer layer `layer` (0 … n_layers − 1) alone: differs from
 * model_arch_n_params_layer() (the last layer, the representative one) only for stacks
 * whose first layers are dense (deepseek first_k_dense_replace). */
guint64 model_arch_n_params_of_layer (const ModelArch *arch, guint64 layer);

/* Canonical size keys, in HF spelling, that model_arch_set_field() accepts: hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
 * vocab_size, max_position_embeddings, num_local_experts, num_experts_per_tok,
 * sliding_window, type_vocab_size, num_labels. Static, NULL-terminated. */
const char *const *model_arch_field_names (void);

/* Sets the size named by canonical `key` (a scenario's [model] override) to `value`
 * (a count, no unit). When head_dim was the derived default hidden_size / num_attention_heads,
 * changing either of those re-derives it (HF's rule); an explicit different head_dim stays.
 * No range check here: call model_arch_validate() after all overrides.
 * FALSE + MODEL_ARCH_ERROR_FIELD (with a nearest-name hint) if `key` is unknown. */
gboolean model_arch_set_field (ModelArch *arch, const char *key, guint64 value, GError **error);

/* Reads the size named by canonical `key` into *out; FALSE (no error) if `key` is unknown. */
gboolean model_arch_get_field (const ModelArch *arch, const char *key, guint64 *out);

/* Channels a head rotates with RoPE: head_dim for the rotary families, MLA's
 * qk_rope_head_dim (DeepSeek-V2/V3: only q_pe and the shared k_pe rotate); 0 for learned
 * positions (gpt2, bert) and ALiBi (mpt). */
guint64 model_arch_rotary_dim (const ModelArch *arch);

/* Whether q, k and v are one fused projection in the HF implementation: MPT's Wqkv (out
 * (a + 2k)·d × in h; MptAttention.Wqkv) and GPT-2's c_attn (Conv1D h × 3h;
 * GPT2Attention.c_attn). FALSE: three separate nn.Linear (llama, mistral, mixtral, qwen2,
 * bert), each of which autocast feeds its own cast copy of the input (models/ops/cost.h). */
gboolean model_arch_fused_qkv (const ModelArch *arch);

/* head_dim as HF derives it when a config gives none: hidden_size / num_attention_heads
 * (transformers' config classes, e.g. LlamaConfig: head_dim = hidden_size //
 * num_attention_heads; the attention modules of the releases stepsim follows raise
 * unless the division is exact, LlamaAttention "hidden_size must be divisible by
 * num_heads"). Sets arch->head_dim; FALSE + MODEL_ARCH_ERROR_INVALID ("hidden_size 1000 is
 * not a multiple of num_attention_heads 3") when it is not exact, the caller naming where the
 * sizes came from. n_heads 0: nothing set (model_arch_validate refuses it). The one check
 * of the config loader and the scenario's [model] group. */
gboolean model_arch_derive_head_dim (ModelArch *arch, GError **error);

/* Whether keys and values have fewer heads than the queries (GQA or MQA: n_kv_heads <
 * n_heads), so a kv_repeat expands them (models/ops/cost.h); FALSE for multi-head attention. */
gboolean model_arch_grouped_kv (const ModelArch *arch);

/* Whether the family's HF eager attention computes softmax in fp32 and casts the
 * probabilities back to the compute dtype: llama's eager_attention_forward
 * (`nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)`),
 * which mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe and deepseek_v2/v3 share, and
 * MptAttention (`softmax(attention_scores.float(), dim=-1).to(value_states.dtype)`).
 * FALSE: GPT-2 and BERT (softmax in the scores' dtype) and gpt_oss (its sink softmax in
 * `combined_logits.dtype`). */
gboolean model_arch_softmax_fp32 (const ModelArch *arch);

/* Sliding-window attention (attention_window.c). Query-key pairs a causal attention over a
 * sequence of `seq_len` tokens scores when each query sees at most `window` keys (itself and
 * the window − 1 before it; window 0 or ≥ seq_len: the whole causal prefix):
 * K(s, w) = Σ_{i=1..s} min(i, w). Exact integer, returned as a double. */
double model_arch_causal_pairs (guint64 seq_len, guint64 window);

/* Keys per query, averaged over `arch`'s layers, in the full-square convention of the
 * attention cost (models/ops/cost.h: FLOPs 4·b·s·s_kv·a·d, the causal kernel twice as
 * efficient): a windowed layer contributes 2·K(s, w)/s, so that the causal halving leaves
 * exactly its K(s, w) scored pairs; a full layer (gpt_oss layer_types "full_attention")
 * s. Without a window (or w ≥ s), s. `causal` FALSE (bert): min(w, s) for windowed
 * layers. */
double model_arch_attention_keys (const ModelArch *arch, guint64 seq_len, gboolean causal);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelArch, model_arch_free)
