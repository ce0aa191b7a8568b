/* models/arch/arch.c — transformer architectures: families, validation, overrides; the shapes
 * parameter counts (arch_counts.c) are folded from.
 *
 * Invariants: a ModelArch that passed model_arch_validate() has every size positive (except
 * n_experts, experts_per_token and sliding_window, which may be 0), n_kv_heads dividing
 * n_heads and experts_per_token ≤ n_experts. Parameter counts are exact integers (guint64)
 * and reproduce the published totals of the configs in models/configs/ (README there).
 *
 * Parameter counts are folds over the tensor inventory (inventory.c), which lists exactly
 * these tensors; arch_counts.c folds them. Closed form of one layer (h hidden, a heads, k kv
 * heads, d head_dim, i inner, E experts):
 *   attention  q h·(a·d), k and v h·(k·d) each, o (a·d)·h;
 *              + a·d + 2·k·d if qkv_bias, + h if attn_out_bias
 *   MLP        SwiGLU 3·h·i (+ 2·i + h with biases); GELU 2·h·i (+ i + h with biases)
 *   MoE        E × MLP + router h·E (no bias); qwen2_moe adds a shared SwiGLU expert
 *              3·h·s (s = shared_expert_intermediate_size) and its gate h·1
 *   qk norm    qwen3: 2·d (q_norm, k_norm over head_dim)
 *   gpt_oss    attention + a sinks; router h·E + E; each expert h·2i + 2i (gate_up_proj and
 *              its bias) + i·h + h (down_proj and its bias) = 3·h·i + 2·i + h, the
 *              SwiGLU-with-biases count. gpt-oss-20b (h 2880, L 24, a 64, k 8, d 64,
 *              i 2880, E 32, V 201088): attention 26,550,144 per layer, MLP 796,631,072,
 *              norms 5,760; total 20,914,757,184 (the card's, arXiv 2508.10925 table 1)
 *   norms      2 per layer: h each (RMSNorm, weight only) or 2h (LayerNorm, weight + bias)
 *   MLA        deepseek (arXiv 2405.04434 §2.1, modeling_deepseek.py DeepseekV2Attention),
 *              nh heads, dn/dr/dv head widths, r_q/r_kv ranks: h·r_q + r_q + r_q·nh·(dn+dr)
 *              (or h·nh·(dn+dr) without q LoRA) + h·(r_kv+dr) + r_kv + r_kv·nh·(dn+dv)
 *              + nh·dv·h; its layers 0 … k−1 hold a dense SwiGLU 3·h·I_dense, the others
 *              E·3·h·I + n_shared·3·h·I + router h·E (+ E with noaux_tc)
 * Whole model: V·h (+ P·h learned positions) + L × layer + final norm + V·h LM head unless
 * tied. BERT (Devlin et al. 2019, arXiv 1810.04805 §3; HF modeling_bert.py): embedding
 * V·h + P·h + T_type·h + LayerNorm 2h; post-LN layers with two LayerNorms and biases
 * everywhere; no final norm; head = pooler h·h + h and classifier h·n_labels + n_labels
 * (BertForSequenceClassification). bert-large-uncased with 2 labels: 31,782,912 + 24 ×
 * 12,596,224 + 1,049,600 + 2,050 = 335,143,938. MPT (MosaicML 2023, "Introducing MPT-7B";
 * HF modeling_mpt.py; llm-foundry mpt/modeling_mpt.py): ALiBi, so no position table; GELU
 * MLP of i = expansion_ratio·h; with no_bias every norm is h (weight only) and no linear has
 * a bias; tied head. MPT-7B (h 4096, L 32, V 50432): 206,569,472 + 32 × 201,334,784 + 4,096
 * = 6,649,286,656. These are the module shapes of HF transformers' modeling_{llama,mistral,mixtral,
 * qwen2,gpt2}.py; see Vaswani et al. 2017 §3, Radford et al. 2019 (GPT-2), Touvron et al.
 * 2023 (LLaMA, arXiv 2302.13971 §2.2), Jiang et al. 2024 (Mixtral, arXiv 2401.04088 §2).
 */
#include "config.h"
#include "models/arch/arch.h"

#include "sim/text.h"

#include <string.h>

G_DEFINE_QUARK (stepsim-model-arch-error-quark, model_arch_error)

static const struct
{
  const char *name;
  ModelFamily family;
} family_table[] = {
  { "llama", MODEL_FAMILY_LLAMA },   { "mistral", MODEL_FAMILY_MISTRAL },
  { "mixtral", MODEL_FAMILY_MIXTRAL }, { "qwen2", MODEL_FAMILY_QWEN2 },
  { "gpt2", MODEL_FAMILY_GPT2 },     { "bert", MODEL_FAMILY_BERT },
  { "mpt", MODEL_FAMILY_MPT },       { "qwen3", MODEL_FAMILY_QWEN3 },
  { "qwen3_moe", MODEL_FAMILY_QWEN3_MOE }, { "qwen2_moe", MODEL_FAMILY_QWEN2_MOE },
  { "deepseek_v2", MODEL_FAMILY_DEEPSEEK_V2 }, { "deepseek_v3", MODEL_FAMILY_DEEPSEEK_V3 },
  { "gpt_oss", MODEL_FAMILY_GPT_OSS },
};

gboolean
model_arch_family_from_string (const char *text, ModelFamily *out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  for (gsize i = 0; i < G_N_ELEMENTS (family_table); i++)
    if (text != NULL && strcmp (text, family_table[i].name) == 0)
      {
        *out = family_table[i].family;
        return TRUE;
      }
  g_autoptr (GString) known = g_string_new (NULL);
  const char *names[G_N_ELEMENTS (family_table) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS (family_table); i++)
    {
      g_string_append_printf (known, "%s%s", i > 0 ? ", " : "", family_table[i].name);
      names[i] = family_table[i].name;
    }
  names[G_N_ELEMENTS (family_table)] = NULL;
  char *msg = g_strdup_printf ("unknown model family '%s' (known: %s)",
                               text != NULL ? text : "(null)", known->str);
  if (text != NULL)
    msg = sim_text_with_hint (msg, text, names);
  g_set_error_literal (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FAMILY, msg);
  g_free (msg);
  return FALSE;
}

const char *
model_arch_family_name (ModelFamily family)
{
  for (gsize i = 0; i < G_N_ELEMENTS (family_table); i++)
    if (family_table[i].family == family)
      return family_table[i].name;
  g_return_val_if_reached ("unknown");
}

gboolean
model_arch_family_moe (ModelFamily family)
{
  return family == MODEL_FAMILY_MIXTRAL || family == MODEL_FAMILY_QWEN3_MOE
         || family == MODEL_FAMILY_QWEN2_MOE || family == MODEL_FAMILY_GPT_OSS
         || model_arch_family_deepseek (family);
}

gboolean
model_arch_family_deepseek (ModelFamily family)
{
  return family == MODEL_FAMILY_DEEPSEEK_V2 || family == MODEL_FAMILY_DEEPSEEK_V3;
}

/* MPT as released (mosaicml/mpt-7b, -30b config.json; HF modeling_mpt.py): LayerNorm with
 * no_bias = true (weight only: MptBlock sets norm_1/norm_2.bias = None, MptModel norm_f
 * too), GELU MLP up_proj/down_proj without biases, ALiBi in the attention scores instead
 * of any position embedding (Press et al. 2022, arXiv 2108.12409), LM head tied to wte. */
static void
mpt_defaults (ModelArch *arch)
{
  arch->norm = MODEL_NORM_LAYER_NO_BIAS;
  arch->mlp = MODEL_MLP_GELU;
  arch->learned_positions = FALSE;
  arch->tied_embeddings = TRUE;
  arch->qkv_bias = arch->attn_out_bias = arch->mlp_bias = FALSE;
}

/* gpt_oss (HF modeling_gpt_oss.py, GptOssConfig): attention_bias true (q/k/v/o biases),
 * GptOssAttention.sinks (num_attention_heads), GptOssTopKRouter weight E × h and bias E,
 * GptOssExperts gate_up_proj [E, h, 2i] + gate_up_proj_bias [E, 2i] and down_proj [E, i, h]
 * + down_proj_bias [E, h]; RMSNorm; untied head. Off for every other family. */
static void
gpt_oss_defaults (ModelArch *arch, gboolean on)
{
  arch->attn_sinks = arch->router_bias = arch->fused_gate_up = on;
  arch->n_full_attention_layers = 0; /* hf_config.c counts layer_types */
  arch->mxfp4_experts = FALSE;       /* set by quantization_config */
  if (on)
    arch->qkv_bias = arch->attn_out_bias = arch->mlp_bias = TRUE;
}

void
model_arch_set_family_defaults (ModelArch *arch, ModelFamily family)
{
  g_return_if_fail (arch != NULL);
  gboolean bert = family == MODEL_FAMILY_BERT;
  gboolean gpt2 = family == MODEL_FAMILY_GPT2 || bert;
  arch->family = family;
  /* GPT-2: LayerNorm with bias, learned positions, GELU MLP, Conv1D layers with biases,
   * LM head tied to wte (Radford et al. 2019; HF modeling_gpt2.py). The llama-like
   * families use RMSNorm, rotary positions, bias-free SwiGLU, untied head by default;
   * Qwen2 adds q/k/v biases (HF modeling_qwen2.py, Qwen2Attention). */
  arch->norm = gpt2 ? MODEL_NORM_LAYER : MODEL_NORM_RMS;
  arch->mlp = gpt2 ? MODEL_MLP_GELU : MODEL_MLP_SWIGLU;
  arch->learned_positions = gpt2;
  arch->tied_embeddings = gpt2;
  arch->qkv_bias = gpt2 || family == MODEL_FAMILY_QWEN2 || family == MODEL_FAMILY_QWEN2_MOE;
  /* Qwen3 (HF modeling_qwen3.py / modeling_qwen3_moe.py, Qwen3Attention): q_norm and
   * k_norm = Qwen3RMSNorm(head_dim) applied per head before rotary; attention_bias
   * false. Qwen2-MoE (modeling_qwen2_moe.py, Qwen2MoeSparseMoeBlock): shared_expert
   * Qwen2MoeMLP and shared_expert_gate nn.Linear(h, 1, bias=False); its size is the
   * config's (hf_config.c). */
  arch->qk_norm = family == MODEL_FAMILY_QWEN3 || family == MODEL_FAMILY_QWEN3_MOE;
  arch->shared_expert_size = 0;
  arch->shared_expert_gate = family == MODEL_FAMILY_QWEN2_MOE;
  arch->attn_out_bias = gpt2;
  arch->mlp_bias = gpt2;
  /* DeepSeek (modeling_deepseek.py): MLA with no biases (attention_bias false), RMSNorm,
   * SwiGLU; hf_config.c fills the sizes and the routing fields. */
  memset (&arch->deepseek, 0, sizeof arch->deepseek);
  arch->deepseek.mla = model_arch_family_deepseek (family);
  /* BERT shares GPT-2's layer shapes (LayerNorm, GELU, biases, learned positions) but
   * has its own classification head, so nothing is tied (BertForSequenceClassification);
   * 2 token types and 2 labels are BertConfig's / PretrainedConfig's defaults. */
  if (bert)
    {
      arch->tied_embeddings = FALSE;
      arch->type_vocab_size = 2;
      arch->num_labels = 2;
    }
  if (family == MODEL_FAMILY_MPT)
    mpt_defaults (arch);
  gpt_oss_defaults (arch, family == MODEL_FAMILY_GPT_OSS);
}

/* Upper bounds of the sizes: far beyond any published model (Llama 3.1 405B: 126 layers,
 * h 16384, FFN 53248, vocabulary 128256), low enough that parameter counts stay exact in 64
 * bits and a step's schedule (tasks per layer and rank) stays tractable. */
#define LIMIT_HIDDEN (G_GUINT64_CONSTANT (1) << 20)
#define LIMIT_LAYERS G_GUINT64_CONSTANT (1024)
#define LIMIT_HEADS (G_GUINT64_CONSTANT (1) << 16)
#define LIMIT_FFN (G_GUINT64_CONSTANT (1) << 22)
#define LIMIT_VOCAB (G_GUINT64_CONSTANT (1) << 24)
#define LIMIT_EXPERTS G_GUINT64_CONSTANT (1024)
#define LIMIT_POSITIONS (G_GUINT64_CONSTANT (1) << 24)

guint64
model_arch_field_max (const char *key)
{
  static const struct
  {
    const char *key;
    guint64 max;
  } maxima[] = {
    { "hidden_size", LIMIT_HIDDEN },
    { "num_hidden_layers", LIMIT_LAYERS },
    { "num_attention_heads", LIMIT_HEADS },
    { "num_key_value_heads", LIMIT_HEADS },
    { "head_dim", LIMIT_HEADS },
    { "intermediate_size", LIMIT_FFN },
    { "vocab_size", LIMIT_VOCAB },
    { "max_position_embeddings", LIMIT_POSITIONS },
    { "num_local_experts", LIMIT_EXPERTS },
    { "num_experts_per_tok", LIMIT_EXPERTS },
    { "sliding_window", LIMIT_POSITIONS },
    { "type_vocab_size", LIMIT_VOCAB },
    { "num_labels", LIMIT_VOCAB },
  };
  g_return_val_if_fail (key != NULL, 0);
  for (guint i = 0; i < G_N_ELEMENTS (maxima); i++)
    if (strcmp (key, maxima[i].key) == 0)
      return maxima[i].max;
  return 0;
}

/* The first check `arch` fails: *keys (up to two canonical field names, the second NULL
 * when one) and *what (caller frees: "KEY must be …", naming the fields); FALSE. TRUE when
 * every check passes. */
static gboolean
check (const ModelArch *arch, const char *keys[2], char **what)
{
  const struct
  {
    const char *key;
    guint64 value;
  } positive[] = {
    { "hidden_size", arch->hidden_size },
    { "num_hidden_layers", arch->n_layers },
    { "num_attention_heads", arch->n_heads },
    { "num_key_value_heads", arch->n_kv_heads },
    { "head_dim", arch->head_dim },
    { "intermediate_size", arch->intermediate_size },
    { "vocab_size", arch->vocab_size },
  };
  const guint64 limit[] = { LIMIT_HIDDEN, LIMIT_LAYERS, LIMIT_HEADS, LIMIT_HEADS, LIMIT_HEADS,
                            LIMIT_FFN, LIMIT_VOCAB };
  keys[0] = keys[1] = NULL;
#define FAIL(k0, k1, ...) \
  return keys[0] = (k0), keys[1] = (k1), *what = g_strdup_printf (__VA_ARGS__), FALSE
  for (gsize i = 0; i < G_N_ELEMENTS (positive); i++)
    if (positive[i].value == 0 || positive[i].value > limit[i])
      FAIL (positive[i].key, NULL, "%s must be in [1, %" G_GUINT64_FORMAT "], not %"
            G_GUINT64_FORMAT, positive[i].key, limit[i], positive[i].value);
  if (arch->n_experts > LIMIT_EXPERTS)
    FAIL ("num_local_experts", NULL, "num_local_experts must be at most 1024, not %"
          G_GUINT64_FORMAT, arch->n_experts);
  if (arch->max_positions > LIMIT_POSITIONS)
    FAIL ("max_position_embeddings", NULL, "max_position_embeddings must be at most 16777216, "
          "not %" G_GUINT64_FORMAT, arch->max_positions);
  if (arch->n_heads % arch->n_kv_heads != 0)
    FAIL ("num_attention_heads", "num_key_value_heads",
          "num_attention_heads is %" G_GUINT64_FORMAT ", not a multiple of "
          "num_key_value_heads = %" G_GUINT64_FORMAT " (GQA groups)", arch->n_heads,
          arch->n_kv_heads);
  if (arch->learned_positions && arch->max_positions == 0)
    FAIL ("max_position_embeddings", NULL,
          "max_position_embeddings must be positive with learned position embeddings");
  if (arch->n_experts == 0 && arch->experts_per_token != 0)
    FAIL ("num_experts_per_tok", "num_local_experts",
          "num_experts_per_tok is set but num_local_experts is 0");
  if (arch->n_experts > 0 && arch->experts_per_token == 0)
    FAIL ("num_experts_per_tok", NULL,
          "num_experts_per_tok must be positive for a mixture of experts");
  if (arch->experts_per_token > arch->n_experts)
    FAIL ("num_experts_per_tok", "num_local_experts",
          "num_experts_per_tok is %" G_GUINT64_FORMAT ", more than num_local_experts = %"
          G_GUINT64_FORMAT, arch->experts_per_token, arch->n_experts);
  if (arch->family == MODEL_FAMILY_BERT && arch->num_labels == 0)
    FAIL ("num_labels", NULL, "num_labels must be positive for bert");
  if (arch->family == MODEL_FAMILY_BERT && arch->type_vocab_size == 0)
    FAIL ("type_vocab_size", NULL, "type_vocab_size must be positive for bert");
#undef FAIL
  return TRUE;
}

gboolean
model_arch_validate (const ModelArch *arch, GError **error)
{
  g_return_val_if_fail (arch != NULL, FALSE);
  const char *keys[2];
  g_autofree char *what = NULL;
  if (check (arch, keys, &what))
    return TRUE;
  g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID, "model '%s': %s",
               arch->name != NULL ? arch->name : "(unnamed)", what);
  return FALSE;
}

gboolean
model_arch_validate_key (const ModelArch *arch, const char *keys[2], GError **error)
{
  g_return_val_if_fail (arch != NULL && keys != NULL, FALSE);
  g_autofree char *what = NULL;
  if (check (arch, keys, &what))
    return TRUE;
  g_set_error_literal (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID, what);
  return FALSE;
}

ModelArch *
model_arch_copy (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);
  ModelArch *copy = g_new (ModelArch, 1);
  *copy = *arch;
  copy->name = g_strdup (arch->name);
  return copy;
}

void
model_arch_free (ModelArch *arch)
{
  if (arch == NULL)
    return;
  g_free (arch->name);
  g_free (arch);
}

/* ---- overrides by canonical key ---------------------------------------------------------- */

static const char *const field_names[] = {
  "hidden_size",       "num_hidden_layers", "num_attention_heads",     "num_key_value_heads",
  "head_dim",          "intermediate_size", "vocab_size",              "max_position_embeddings",
  "num_local_experts", "num_experts_per_tok", "sliding_window",        "type_vocab_size",
  "num_labels",        NULL,
};

const char *const *
model_arch_field_names (void)
{
  return field_names;
}

/* The guint64 member named by canonical `key`, or NULL. */
static guint64 *
field_slot (ModelArch *arch, const char *key)
{
  guint64 *slots[] = {
    &arch->hidden_size,    &arch->n_layers,          &arch->n_heads,    &arch->n_kv_heads,
    &arch->head_dim,       &arch->intermediate_size, &arch->vocab_size, &arch->max_positions,
    &arch->n_experts,      &arch->experts_per_token, &arch->sliding_window,
    &arch->type_vocab_size, &arch->num_labels,
  };
  G_STATIC_ASSERT (G_N_ELEMENTS (slots) == G_N_ELEMENTS (field_names) - 1);
  for (gsize i = 0; i < G_N_ELEMENTS (slots); i++)
    if (strcmp (key, field_names[i]) == 0)
      return slots[i];
  return NULL;
}

gboolean
model_arch_get_field (const ModelArch *arch, const char *key, guint64 *out)
{
  g_return_val_if_fail (arch != NULL && key != NULL && out != NULL, FALSE);
  guint64 *slot = field_slot ((ModelArch *) arch, key);
  if (slot == NULL)
    return FALSE;
  *out = *slot;
  return TRUE;
}

gboolean
model_arch_set_field (ModelArch *arch, const char *key, guint64 value, GError **error)
{
  g_return_val_if_fail (arch != NULL && key != NULL, FALSE);
  guint64 *slot = field_slot (arch, key);
  if (slot == NULL)
    {
      char *msg = g_strdup_printf ("unknown model field '%s'", key);
      msg = sim_text_with_hint (msg, key, field_names);
      g_set_error_literal (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD, msg);
      g_free (msg);
      return FALSE;
    }
  /* head_dim follows hidden_size / num_attention_heads when it was the derived default
   * (HF: head_dim = getattr(config, "head_dim", hidden_size // num_attention_heads)). */
  gboolean derived = arch->n_heads > 0 && arch->head_dim == arch->hidden_size / arch->n_heads
                     && arch->hidden_size % arch->n_heads == 0;
  *slot = value;
  if (derived && (slot == &arch->hidden_size || slot == &arch->n_heads) && arch->n_heads > 0
      && arch->hidden_size % arch->n_heads == 0)
    arch->head_dim = arch->hidden_size / arch->n_heads;
  return TRUE;
}

gboolean
model_arch_fused_qkv (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, FALSE);
  return arch->family == MODEL_FAMILY_MPT || arch->family == MODEL_FAMILY_GPT2;
}

gboolean
model_arch_derive_head_dim (ModelArch *arch, GError **error)
{
  g_return_val_if_fail (arch != NULL, FALSE);
  if (arch->n_heads == 0)
    return TRUE;
  if (arch->hidden_size % arch->n_heads != 0)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID,
                   "hidden_size %" G_GUINT64_FORMAT " is not a multiple of num_attention_heads "
                   "%" G_GUINT64_FORMAT " (head_dim, not given, would be their quotient)",
                   arch->hidden_size, arch->n_heads);
      return FALSE;
    }
  arch->head_dim = arch->hidden_size / arch->n_heads;
  return TRUE;
}

guint64
model_arch_rotary_dim (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  if (arch->learned_positions || arch->family == MODEL_FAMILY_MPT)
    return 0;
  return arch->deepseek.mla ? arch->deepseek.qk_rope_head_dim : arch->head_dim;
}

gboolean
model_arch_grouped_kv (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, FALSE);
  return arch->n_kv_heads < arch->n_heads;
}

gboolean
model_arch_softmax_fp32 (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, FALSE);
  switch (arch->family) /* no default: a new family must say */
    {
    case MODEL_FAMILY_LLAMA:
    case MODEL_FAMILY_MISTRAL:
    case MODEL_FAMILY_MIXTRAL:
    case MODEL_FAMILY_QWEN2:
    case MODEL_FAMILY_MPT:
    case MODEL_FAMILY_QWEN3:
    case MODEL_FAMILY_QWEN3_MOE:
    case MODEL_FAMILY_QWEN2_MOE:
    case MODEL_FAMILY_DEEPSEEK_V2:
    case MODEL_FAMILY_DEEPSEEK_V3:
      return TRUE;
    case MODEL_FAMILY_GPT2:
    case MODEL_FAMILY_BERT:
    case MODEL_FAMILY_GPT_OSS:
      return FALSE;
    }
  return FALSE;
}
