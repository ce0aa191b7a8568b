/* models/arch/hf_config.c — loads a Hugging Face config.json into a ModelArch (json-glib).
 *
 * Each canonical field is looked up through an alias table (the spellings used by the HF
 * config classes: LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, GPT2Config, and
 * OPT/T5-style names). Multimodal configs nest the language model under "text_config":
 * when present, keys are read there first and then at the top level (so a top-level
 * model_type or tie_word_embeddings still applies). A JSON null counts as absent.
 *
 * Defaults when absent (HF's own): num_key_value_heads = num_attention_heads; head_dim =
 * hidden_size / num_attention_heads; gpt2 intermediate = 4·hidden (GPT2MLP, n_inner None);
 * sliding_window 0 (also when "use_sliding_window" is false, Qwen2Config);
 * tie_word_embeddings per family (gpt2 true, others false); bert: type_vocab_size 2
 * (BertConfig), num_labels 2 (PretrainedConfig), or the number of entries of "id2label". Llama's "attention_bias" sets
 * biases on q, k, v and o (LlamaAttention), "mlp_bias" on gate/up/down (LlamaMLP).
 * MPT (MptConfig / llm-foundry MPTConfig; keys d_model, n_layers, n_heads, max_seq_len are
 * aliases above): intermediate = expansion_ratio × d_model (llm-foundry MPTMLP:
 * int(expansion_ratio · d_model); default ratio 4); "no_bias" (default true, HF MptConfig)
 * drops linear and LayerNorm biases; "attn_config" {"alibi" (default true), "kv_n_heads"
 * (GQA, llm-foundry)}; a learned position table only when alibi is false and
 * "learned_pos_emb" is not false (MPT-7B's remote code: wpe exists iff not alibi).
 *
 * Qwen3 / Qwen3-MoE / Qwen2-MoE: "attention_bias" (qwen3 families) sets q/k/v/o biases;
 * the MoE families read the expert width from "moe_intermediate_size", qwen2_moe the shared
 * expert's from "shared_expert_intermediate_size"; "decoder_sparse_step" other than 1 or a
 * non-empty "mlp_only_layers" is refused (read_qwen_moe).
 *
 * DeepSeek-V2 / V3 (model_type deepseek_v2, deepseek_v3; DeepseekV2Config /
 * DeepseekV3Config, modeling_deepseek.py): read_deepseek, below.
 * gpt_oss: layer_types, sliding_window, attention_bias, experts_per_token, hidden_act,
 * swiglu_limit and quantization_config (read_gpt_oss, with the rules above it).
 *
 * Errors (domain MODEL_ARCH_ERROR, message starts with the file/origin): IO (unreadable),
 * JSON (malformed, with json-glib's line:column), FAMILY (unknown model_type), FIELD (key
 * missing, of the wrong JSON type, negative, non-integer or zero, or given twice in one
 * object: "key 'rope_scaling.factor' appears twice", as json.load would keep the last),
 * INVALID (shape).
 *
 * Real-valued fields (rope_theta, rms_norm_eps, layer_norm_eps, layer_norm_epsilon,
 * routed_scaling_factor, swiglu_limit): when given, a finite number > 0, else FIELD naming
 * the key (a negative rope_theta gives NaN rotary frequencies in transformers; a literal
 * beyond the double range such as 1e999 reads as inf). stepsim does not model RoPE or the
 * epsilons: they are checked, not used.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <sys/stat.h>
#include "models/arch/arch.h"
#include "models/arch/json_unique.h"
#include "sim/text.h"

#include <json-glib/json-glib.h>
#include <errno.h>
#include <math.h>
#include <string.h>

typedef struct
{
  const char *key; /* canonical, as in model_arch_field_names() */
  const char *aliases[5];
} FieldAlias;

static const FieldAlias alias_table[] = {
  { "hidden_size", { "hidden_size", "n_embd", "d_model", NULL } },
  { "num_hidden_layers", { "num_hidden_layers", "n_layer", "num_layers", "n_layers", NULL } },
  { "num_attention_heads", { "num_attention_heads", "n_head", "num_heads", "n_heads", NULL } },
  { "num_key_value_heads", { "num_key_value_heads", NULL } },
  { "head_dim", { "head_dim", NULL } },
  { "intermediate_size", { "intermediate_size", "n_inner", "ffn_dim", NULL } },
  { "vocab_size", { "vocab_size", NULL } },
  { "max_position_embeddings", { "max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", NULL } },
  { "num_local_experts", { "num_local_experts", "num_experts", NULL } },
  { "num_experts_per_tok", { "num_experts_per_tok", NULL } },
  { "sliding_window", { "sliding_window", NULL } },
  { "type_vocab_size", { "type_vocab_size", NULL } },
  { "num_labels", { "num_labels", NULL } },
};

typedef struct
{
  JsonObject *text; /* "text_config", or NULL */
  JsonObject *top;
  const char *origin;
  const char *json;  /* the text parsed, to tell a negative literal from an overflowed one */
} Ctx;

/* The first non-null member named `name`, text_config first; NULL if absent. */
static JsonNode *
member (const Ctx *c, const char *name)
{
  JsonObject *objs[2] = { c->text, c->top };
  for (int i = 0; i < 2; i++)
    if (objs[i] != NULL && json_object_has_member (objs[i], name))
      {
        JsonNode *n = json_object_get_member (objs[i], name);
        if (!JSON_NODE_HOLDS_NULL (n))
          return n;
      }
  return NULL;
}

/* "ORIGIN: key 'PATH': WHAT", PATH the member's JSON path: "text_config.hidden_size" when
 * the value read came from text_config (member() looks there first). */
static gboolean
field_error (const Ctx *c, GError **error, const char *name, const char *what)
{
  JsonNode *nested = c->text != NULL && json_object_has_member (c->text, name)
                       ? json_object_get_member (c->text, name) : NULL;
  gboolean in_text = nested != NULL && !JSON_NODE_HOLDS_NULL (nested);
  g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD, "%s: key '%s%s': %s", c->origin,
               in_text ? "text_config." : "", name, what);
  return FALSE;
}

/* Whether member `name` of the text is written with a minus sign ("name": -…). json-glib
 * 1.6 reads an integer literal beyond 2^63 − 1 into a wrapped gint64 (json-scanner.c
 * accumulates in a guint64 and casts), so a negative value is a negative literal only if
 * the text says so; otherwise the number was too large. */
static gboolean
written_negative (const Ctx *c, const char *name)
{
  const char *dot = strrchr (name, '.'); /* "attn_config.kv_n_heads": the member's own name */
  g_autofree char *quoted = g_strdup_printf ("\"%s\"", dot != NULL ? dot + 1 : name);
  for (const char *p = strstr (c->json, quoted); p != NULL; p = strstr (p + 1, quoted))
    {
      const char *q = p + strlen (quoted);
      while (g_ascii_isspace (*q))
        q++;
      if (*q != ':')
        continue;
      q++;
      while (g_ascii_isspace (*q))
        q++;
      if (*q == '-')
        return TRUE;
    }
  return FALSE;
}

/* Optional real field `name`: absent (or null) leaves *out and returns TRUE; otherwise a
 * JSON number, finite and > 0, into *out (out may be NULL: checked only). */
static gboolean
optional_positive_real (const Ctx *c, const char *name, double *out, GError **error)
{
  JsonNode *n = member (c, name);
  if (n == NULL)
    return TRUE;
  GType t = JSON_NODE_HOLDS_VALUE (n) ? json_node_get_value_type (n) : G_TYPE_INVALID;
  if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
    return field_error (c, error, name, "expected a number");
  double v = t == G_TYPE_INT64 ? (double) json_node_get_int (n) : json_node_get_double (n);
  if (!(v > 0) || !isfinite (v))
    {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_autofree char *why = g_strdup_printf ("%s must be a finite number > 0",
                                              g_ascii_dtostr (buf, sizeof buf, v));
      return field_error (c, error, name, why);
    }
  if (out != NULL)
    *out = v;
  return TRUE;
}

/* Reads a JSON number that is a non-negative integer (an integral double like 4096.0 too);
 * the error says what is wrong: negative, a fraction, or too large (above 9·10^15, where a
 * double stops holding every integer; no architecture size comes near it). */
static gboolean
node_u64 (const Ctx *c, JsonNode *n, const char *name, guint64 *out, GError **error)
{
  GType t = JSON_NODE_HOLDS_VALUE (n) ? json_node_get_value_type (n) : G_TYPE_INVALID;
  if (t == G_TYPE_INT64)
    {
      gint64 v = json_node_get_int (n);
      if (v < 0 && c->json != NULL && !written_negative (c, name))
        return field_error (c, error, name, "expected a non-negative integer, got one too "
                                            "large (above 2^63 - 1)");
      if (v < 0)
        return field_error (c, error, name, "expected a non-negative integer, got a negative one");
      *out = (guint64) v;
      return TRUE;
    }
  if (t == G_TYPE_DOUBLE)
    {
      double v = json_node_get_double (n);
      if (v < 0)
        return field_error (c, error, name, "expected a non-negative integer, got a negative one");
      if (v > 9.0e15)
        return field_error (c, error, name, "expected a non-negative integer, got one too "
                                            "large (above 9e15)");
      if (v != floor (v))
        return field_error (c, error, name, "expected a non-negative integer, got a fraction");
      *out = (guint64) v;
      return TRUE;
    }
  return field_error (c, error, name, "expected a non-negative integer");
}

/* Looks up canonical `key` through its aliases. *found FALSE if absent or null. */
static gboolean
lookup_size (const Ctx *c, const char *key, guint64 *out, gboolean *found, GError **error)
{
  *found = FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS (alias_table); i++)
    {
      if (strcmp (alias_table[i].key, key) != 0)
        continue;
      for (const char *const *a = alias_table[i].aliases; *a != NULL; a++)
        {
          JsonNode *n = member (c, *a);
          if (n == NULL)
            continue;
          if (!node_u64 (c, n, *a, out, error))
            return FALSE;
          if (*out == 0 && strcmp (key, "sliding_window") != 0)
            return field_error (c, error, *a, "must be positive");
          *found = TRUE;
          return TRUE;
        }
    }
  return TRUE;
}

static gboolean
lookup_bool (const Ctx *c, const char *name, gboolean *out, GError **error)
{
  JsonNode *n = member (c, name);
  if (n == NULL)
    return TRUE; /* keep the default */
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_BOOLEAN)
    return field_error (c, error, name, "expected true or false");
  *out = json_node_get_boolean (n);
  return TRUE;
}

static gboolean
read_family (const Ctx *c, ModelArch *arch, GError **error)
{
  JsonNode *n = member (c, "model_type");
  if (n == NULL)
    return field_error (c, error, "model_type", "missing");
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return field_error (c, error, "model_type", "expected a string");
  ModelFamily family;
  if (!model_arch_family_from_string (json_node_get_string (n), &family, error))
    {
      g_prefix_error (error, "%s: key 'model_type': ", c->origin);
      return FALSE;
    }
  model_arch_set_family_defaults (arch, family);
  return TRUE;
}

/* attn_config member `name` (MPT), NULL if absent. */
static JsonNode *
attn_config_member (const Ctx *c, const char *name)
{
  JsonNode *cfg = member (c, "attn_config");
  if (cfg == NULL || !JSON_NODE_HOLDS_OBJECT (cfg))
    return NULL;
  JsonObject *o = json_node_get_object (cfg);
  if (!json_object_has_member (o, name))
    return NULL;
  JsonNode *n = json_object_get_member (o, name);
  return JSON_NODE_HOLDS_NULL (n) ? NULL : n;
}

/* MPT's MLP width, position scheme, kv heads and bias flag (file header). Runs before
 * the generic checks so that they see the derived sizes. */
static gboolean
read_mpt (const Ctx *c, ModelArch *arch, gboolean have_inner, gboolean have_kv, GError **error)
{
  JsonNode *ratio = member (c, "expansion_ratio");
  if (!have_inner)
    {
      double r = 4.0; /* MPTConfig default */
      GType t = ratio != NULL && JSON_NODE_HOLDS_VALUE (ratio) ? json_node_get_value_type (ratio)
                                                               : G_TYPE_INVALID;
      if (t == G_TYPE_INT64)
        r = (double) json_node_get_int (ratio);
      else if (t == G_TYPE_DOUBLE)
        r = json_node_get_double (ratio);
      else if (ratio != NULL)
        return field_error (c, error, "expansion_ratio", "expected a number");
      if (!(r > 0) || r * (double) arch->hidden_size < 1 || r > 1e6)
        return field_error (c, error, "expansion_ratio", "must be positive");
      arch->intermediate_size = (guint64) (r * (double) arch->hidden_size);
    }
  JsonNode *kv = attn_config_member (c, "kv_n_heads");
  if (kv != NULL && !have_kv)
    {
      guint64 v = 0;
      if (!node_u64 (c, kv, "attn_config.kv_n_heads", &v, error))
        return FALSE;
      if (v == 0)
        return field_error (c, error, "attn_config.kv_n_heads", "must be positive");
      arch->n_kv_heads = v;
    }
  gboolean no_bias = TRUE, alibi = TRUE, learned = TRUE;
  JsonNode *a = attn_config_member (c, "alibi");
  if (a != NULL && (!JSON_NODE_HOLDS_VALUE (a) || json_node_get_value_type (a) != G_TYPE_BOOLEAN))
    return field_error (c, error, "attn_config.alibi", "expected true or false");
  if (a != NULL)
    alibi = json_node_get_boolean (a);
  if (!lookup_bool (c, "no_bias", &no_bias, error)
      || !lookup_bool (c, "learned_pos_emb", &learned, error))
    return FALSE;
  arch->norm = no_bias ? MODEL_NORM_LAYER_NO_BIAS : MODEL_NORM_LAYER;
  arch->qkv_bias = arch->attn_out_bias = arch->mlp_bias = !no_bias;
  arch->learned_positions = !alibi && learned;
  return TRUE;
}

/* A required positive size `name` of the qwen MoE configs into *out. */
static gboolean
required_size (const Ctx *c, const char *name, guint64 *out, GError **error)
{
  JsonNode *n = member (c, name);
  if (n == NULL)
    return field_error (c, error, name, "missing (required for a MoE family)");
  if (!node_u64 (c, n, name, out, error))
    return FALSE;
  if (*out == 0)
    return field_error (c, error, name, "must be positive");
  return TRUE;
}

/* Qwen3-MoE / Qwen2-MoE (Qwen3MoeConfig, Qwen2MoeConfig; modeling_qwen{3,2}_moe.py): the
 * experts are moe_intermediate_size wide (it replaces intermediate_size, which then no
 * layer uses); qwen2_moe adds the shared expert of shared_expert_intermediate_size. A
 * layer i is sparse when i ∉ mlp_only_layers and (i + 1) % decoder_sparse_step == 0
 * (the decoder layer's constructor); the inventory holds one layer template, so only
 * stacks where every layer is sparse load (step 1, mlp_only_layers empty, the defaults). */
static gboolean
read_qwen_moe (const Ctx *c, ModelArch *arch, GError **error)
{
  if (!required_size (c, "moe_intermediate_size", &arch->intermediate_size, error))
    return FALSE;
  if (arch->family == MODEL_FAMILY_QWEN2_MOE
      && !required_size (c, "shared_expert_intermediate_size", &arch->shared_expert_size, error))
    return FALSE;
  JsonNode *step = member (c, "decoder_sparse_step");
  guint64 s = 1;
  if (step != NULL && !node_u64 (c, step, "decoder_sparse_step", &s, error))
    return FALSE;
  if (s != 1)
    return field_error (c, error, "decoder_sparse_step",
                        "only 1 is supported (every layer a MoE layer; dense layers between "
                        "them are not modelled)");
  JsonNode *only = member (c, "mlp_only_layers");
  if (only != NULL && !JSON_NODE_HOLDS_ARRAY (only))
    return field_error (c, error, "mlp_only_layers", "expected an array of layer indices");
  if (only != NULL && json_array_get_length (json_node_get_array (only)) > 0)
    return field_error (c, error, "mlp_only_layers",
                        "only [] is supported (dense layers among MoE layers are not modelled)");
  return TRUE;
}

/* ---- DeepSeek-V2 / V3 ------------------------------------------------------------- */

/* An optional non-negative size `name` (absent or null: *out unchanged). */
static gboolean
optional_size (const Ctx *c, const char *name, guint64 *out, GError **error)
{
  JsonNode *n = member (c, name);
  return n == NULL || node_u64 (c, n, name, out, error);
}

/* A string member `name` into *out (absent or null: *out unchanged). */
static gboolean
optional_string (const Ctx *c, const char *name, const char **out, GError **error)
{
  JsonNode *n = member (c, name);
  if (n == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return field_error (c, error, name, "expected a string");
  *out = json_node_get_string (n);
  return TRUE;
}

/* DeepseekV2Config / DeepseekV3Config (HF modeling_deepseek.py, configuration_deepseek.py;
 * DeepSeek-V2 arXiv 2405.04434 §2.1-2.2, DeepSeek-V3 arXiv 2412.19437 §2.1-2.2), into
 * arch->deepseek (arch.h ModelDeepseek) and the generic fields:
 *   MLA   q_lora_rank (null: a full q_proj), kv_lora_rank, qk_nope_head_dim,
 *         qk_rope_head_dim, v_head_dim are required (positive; q_lora_rank may be null);
 *         head_dim := dn + dr (HF q_head_dim), num_key_value_heads := num_attention_heads
 *         (MLA has no separate kv heads: the key is rebuilt per head from the latent).
 *   MoE   n_routed_experts and num_experts_per_tok required; moe_intermediate_size is the
 *         expert width (ModelArch.intermediate_size), intermediate_size the dense layers'
 *         (required when first_k_dense_replace > 0); n_shared_experts (default 0);
 *         moe_layer_freq other than 1 is refused (dense layers between MoE ones are not
 *         modelled), first_k_dense_replace must not exceed num_hidden_layers.
 *   Gate  topk_method greedy | group_limited_greedy | noaux_tc (V3 adds
 *         e_score_correction_bias of E beside the router); scoring_func softmax | sigmoid;
 *         n_group, topk_group (default 1), routed_scaling_factor (default 1.0),
 *         norm_topk_prob (default false) are stored.
 *   MTP   num_nextn_predict_layers (default 0) is stored; the main counts exclude it.
 *   attention_bias true is refused (no shipped DeepSeek has it). */
static gboolean
read_deepseek (const Ctx *c, ModelArch *arch, gboolean have_inner, GError **error)
{
  ModelDeepseek *ds = &arch->deepseek;
  const char *mla_keys[] = { "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                             "v_head_dim" };
  guint64 *mla_out[] = { &ds->kv_lora_rank, &ds->qk_nope_head_dim, &ds->qk_rope_head_dim,
                         &ds->v_head_dim };
  for (gsize k = 0; k < G_N_ELEMENTS (mla_keys); k++)
    if (!required_size (c, mla_keys[k], mla_out[k], error))
      return FALSE;
  ds->q_lora_rank = 0; /* null in V2-Lite: q_proj h → nh·(dn+dr) */
  if (!optional_size (c, "q_lora_rank", &ds->q_lora_rank, error))
    return FALSE;
  if (member (c, "q_lora_rank") != NULL && ds->q_lora_rank == 0)
    return field_error (c, error, "q_lora_rank", "must be positive or null");
  arch->head_dim = ds->qk_nope_head_dim + ds->qk_rope_head_dim;
  arch->n_kv_heads = arch->n_heads;
  ds->dense_intermediate_size = have_inner ? arch->intermediate_size : 0;
  if (!required_size (c, "moe_intermediate_size", &arch->intermediate_size, error)
      || !required_size (c, "n_routed_experts", &arch->n_experts, error)
      || !required_size (c, "num_experts_per_tok", &arch->experts_per_token, error))
    return FALSE;
  guint64 freq = 1;
  if (!optional_size (c, "first_k_dense_replace", &ds->first_k_dense, error)
      || !optional_size (c, "moe_layer_freq", &freq, error)
      || !optional_size (c, "n_shared_experts", &ds->n_shared_experts, error)
      || !optional_size (c, "num_nextn_predict_layers", &ds->n_mtp_layers, error))
    return FALSE;
  if (freq != 1)
    return field_error (c, error, "moe_layer_freq", "only 1 is supported (dense layers "
                                                    "between MoE layers are not modelled)");
  if (ds->first_k_dense > arch->n_layers)
    return field_error (c, error, "first_k_dense_replace", "exceeds num_hidden_layers");
  if (ds->first_k_dense > 0 && ds->dense_intermediate_size == 0)
    return field_error (c, error, "intermediate_size",
                        "missing (required by the dense layers, first_k_dense_replace > 0)");
  arch->shared_expert_size = ds->n_shared_experts * arch->intermediate_size;
  arch->shared_expert_gate = FALSE; /* DeepseekV2MoE: shared_experts added ungated */
  const char *topk = "greedy", *scoring = "softmax";
  if (!optional_string (c, "topk_method", &topk, error)
      || !optional_string (c, "scoring_func", &scoring, error))
    return FALSE;
  if (strcmp (topk, "greedy") == 0)
    ds->topk_method = MODEL_TOPK_GREEDY;
  else if (strcmp (topk, "group_limited_greedy") == 0)
    ds->topk_method = MODEL_TOPK_GROUP_LIMITED_GREEDY;
  else if (strcmp (topk, "noaux_tc") == 0)
    ds->topk_method = MODEL_TOPK_NOAUX_TC;
  else
    return field_error (c, error, "topk_method",
                        "unsupported (known: greedy, group_limited_greedy, noaux_tc)");
  if (strcmp (scoring, "softmax") == 0)
    ds->scoring = MODEL_SCORING_SOFTMAX;
  else if (strcmp (scoring, "sigmoid") == 0)
    ds->scoring = MODEL_SCORING_SIGMOID;
  else
    return field_error (c, error, "scoring_func", "unsupported (known: softmax, sigmoid)");
  ds->router_bias = ds->topk_method == MODEL_TOPK_NOAUX_TC; /* MoEGate.e_score_correction_bias */
  ds->n_group = ds->topk_group = 1;
  if (!optional_size (c, "n_group", &ds->n_group, error)
      || !optional_size (c, "topk_group", &ds->topk_group, error))
    return FALSE;
  if (ds->n_group == 0 || arch->n_experts % ds->n_group != 0)
    {
      g_autofree char *what = g_strdup_printf ("must be positive and divide n_routed_experts = %"
                                               G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT,
                                               arch->n_experts, ds->n_group);
      return field_error (c, error, "n_group", what);
    }
  if (ds->topk_group == 0 || ds->topk_group > ds->n_group)
    {
      g_autofree char *what = g_strdup_printf ("must be in [1, n_group = %" G_GUINT64_FORMAT
                                               "], not %" G_GUINT64_FORMAT, ds->n_group,
                                               ds->topk_group);
      return field_error (c, error, "topk_group", what);
    }
  ds->routed_scaling_factor = 1.0;
  if (!optional_positive_real (c, "routed_scaling_factor", &ds->routed_scaling_factor, error))
    return FALSE;
  gboolean attn_bias = FALSE;
  if (!lookup_bool (c, "norm_topk_prob", &ds->norm_topk_prob, error)
      || !lookup_bool (c, "attention_bias", &attn_bias, error))
    return FALSE;
  if (attn_bias)
    return field_error (c, error, "attention_bias", "true is not supported for the deepseek "
                                                    "families (MLA biases are not modelled)");
  return TRUE;
}

/* ---- end DeepSeek ------------------------------------------------------------------- */
/* ---- gpt_oss (GptOssConfig, modeling_gpt_oss.py) ----------------------------------------
 * layer_types: an array of num_hidden_layers strings, each "sliding_attention" (the layer
 * attends to the last sliding_window keys) or "full_attention"; absent: GptOssConfig's
 * default, sliding for even layer indices ((i + 1) % 2 ≠ 0), full for odd ones. With a
 * sliding layer, sliding_window absent means GptOssConfig's default 128; null means None
 * (no window: every layer full). attention_bias (default true) sets q/k/v/o biases.
 * experts_per_token, when given, must equal num_experts_per_tok (the config duplicates it);
 * hidden_act must be "silu"; swiglu_limit a positive number (the clamped SwiGLU,
 * GptOssExperts: gate.clamp(max=limit), up.clamp(±limit), (up + 1)·gate·σ(1.702·gate):
 * the same GEMMs, a few more element-wise operations, no parameters). quantization_config,
 * when present, must have quant_method "mxfp4" (transformers' Mxfp4Config); the experts are
 * MXFP4 unless an entry of modules_to_not_convert names them ("…mlp.experts…"). Anything
 * else is refused naming the key. */
#define GPT_OSS_DEFAULT_WINDOW 128 /* GptOssConfig.sliding_window */

static gboolean
gpt_oss_layer_types (const Ctx *c, ModelArch *arch, guint64 *n_sliding, GError **error)
{
  JsonNode *n = member (c, "layer_types");
  guint64 L = arch->n_layers, full = 0;
  if (n == NULL)
    full = L / 2; /* odd indices of 0 … L−1 */
  else
    {
      if (!JSON_NODE_HOLDS_ARRAY (n))
        return field_error (c, error, "layer_types", "expected an array of strings");
      JsonArray *a = json_node_get_array (n);
      if (json_array_get_length (a) != L)
        {
          guint len = json_array_get_length (a);
          g_autofree char *what = g_strdup_printf ("has %u entr%s, num_hidden_layers is %"
                                                   G_GUINT64_FORMAT, len, len == 1 ? "y" : "ies",
                                                   L);
          return field_error (c, error, "layer_types", what);
        }
      for (guint i = 0; i < json_array_get_length (a); i++)
        {
          JsonNode *e = json_array_get_element (a, i);
          const char *t = JSON_NODE_HOLDS_VALUE (e) && json_node_get_value_type (e) == G_TYPE_STRING
                            ? json_node_get_string (e) : NULL;
          if (t != NULL && strcmp (t, "full_attention") == 0)
            full++;
          else if (t == NULL || strcmp (t, "sliding_attention") != 0)
            {
              g_autofree char *what = g_strdup_printf (
                "entry %u is %s%s%s (only \"sliding_attention\" and \"full_attention\" are "
                "modelled)", i, t != NULL ? "\"" : "", t != NULL ? t : "not a string",
                t != NULL ? "\"" : "");
              return field_error (c, error, "layer_types", what);
            }
        }
    }
  *n_sliding = L - full;
  arch->n_full_attention_layers = full;
  return TRUE;
}

static gboolean
gpt_oss_quantization (const Ctx *c, ModelArch *arch, GError **error)
{
  JsonNode *q = member (c, "quantization_config");
  arch->mxfp4_experts = FALSE;
  if (q == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (q))
    return field_error (c, error, "quantization_config", "expected an object");
  JsonObject *o = json_node_get_object (q);
  JsonNode *m = json_object_has_member (o, "quant_method") ? json_object_get_member (o, "quant_method") : NULL;
  const char *method = m != NULL && JSON_NODE_HOLDS_VALUE (m) && json_node_get_value_type (m) == G_TYPE_STRING
                         ? json_node_get_string (m) : NULL;
  if (method == NULL || strcmp (method, "mxfp4") != 0)
    {
      g_autofree char *what = g_strdup_printf ("%s%s%s: only \"mxfp4\" (the released gpt-oss "
                                               "checkpoints' format) is modelled",
                                               method != NULL ? "\"" : "",
                                               method != NULL ? method : "missing or not a string",
                                               method != NULL ? "\"" : "");
      return field_error (c, error, "quantization_config.quant_method", what);
    }
  gboolean experts = TRUE;
  JsonNode *keep = json_object_has_member (o, "modules_to_not_convert")
                     ? json_object_get_member (o, "modules_to_not_convert") : NULL;
  if (keep != NULL && !JSON_NODE_HOLDS_NULL (keep))
    {
      if (!JSON_NODE_HOLDS_ARRAY (keep))
        return field_error (c, error, "quantization_config.modules_to_not_convert",
                            "expected an array of module names");
      JsonArray *a = json_node_get_array (keep);
      for (guint i = 0; i < json_array_get_length (a); i++)
        {
          JsonNode *e = json_array_get_element (a, i);
          if (!JSON_NODE_HOLDS_VALUE (e) || json_node_get_value_type (e) != G_TYPE_STRING)
            return field_error (c, error, "quantization_config.modules_to_not_convert",
                                "expected an array of module names (strings)");
          if (strstr (json_node_get_string (e), "mlp.experts") != NULL)
            experts = FALSE;
        }
    }
  arch->mxfp4_experts = experts;
  return TRUE;
}

static gboolean
read_gpt_oss (const Ctx *c, ModelArch *arch, GError **error)
{
  guint64 sliding = 0;
  if (!gpt_oss_layer_types (c, arch, &sliding, error))
    return FALSE;
  JsonObject *objs[2] = { c->text, c->top };
  gboolean window_given = FALSE;
  for (int i = 0; i < 2; i++)
    window_given = window_given || (objs[i] != NULL && json_object_has_member (objs[i], "sliding_window"));
  if (!window_given)
    arch->sliding_window = GPT_OSS_DEFAULT_WINDOW;
  if (sliding > 0 && arch->sliding_window == 0) /* None: the sliding layers see everything */
    arch->n_full_attention_layers = arch->n_layers;
  JsonNode *ept = member (c, "experts_per_token");
  guint64 k = 0;
  if (ept != NULL && !node_u64 (c, ept, "experts_per_token", &k, error))
    return FALSE;
  if (ept != NULL && k != arch->experts_per_token)
    return field_error (c, error, "experts_per_token", "differs from num_experts_per_tok");
  JsonNode *act = member (c, "hidden_act");
  if (act != NULL && (!JSON_NODE_HOLDS_VALUE (act) || json_node_get_value_type (act) != G_TYPE_STRING
                      || strcmp (json_node_get_string (act), "silu") != 0))
    return field_error (c, error, "hidden_act", "only \"silu\" (the clamped SwiGLU) is modelled");
  if (!optional_positive_real (c, "swiglu_limit", &arch->swiglu_limit, error))
    return FALSE;
  gboolean attn_bias = TRUE;
  if (!lookup_bool (c, "attention_bias", &attn_bias, error))
    return FALSE;
  arch->qkv_bias = arch->attn_out_bias = attn_bias;
  return gpt_oss_quantization (c, arch, error);
}
/* ---- end gpt_oss ---- */

/* Reads every aliased size; applies defaults for the optional ones. */
static gboolean
read_sizes (const Ctx *c, ModelArch *arch, GError **error)
{
  const char *const *keys = model_arch_field_names ();
  gboolean have[G_N_ELEMENTS (alias_table)];
  G_STATIC_ASSERT (G_N_ELEMENTS (alias_table) == 13);
  for (gsize i = 0; keys[i] != NULL; i++)
    {
      g_assert (i < G_N_ELEMENTS (alias_table) && strcmp (keys[i], alias_table[i].key) == 0);
      guint64 v = 0;
      if (!lookup_size (c, keys[i], &v, &have[i], error))
        return FALSE;
      if (have[i])
        model_arch_set_field (arch, keys[i], v, NULL);
    }
  /* Required: hidden, layers, heads, vocab (indices in alias_table order). */
  const gsize required[] = { 0, 1, 2, 6 };
  for (gsize r = 0; r < G_N_ELEMENTS (required); r++)
    if (!have[required[r]])
      return field_error (c, error, alias_table[required[r]].key, "missing");
  if (!have[3])
    arch->n_kv_heads = arch->n_heads;
  if (model_arch_family_deepseek (arch->family))
    { /* MLA sizes, the MoE stack and the gate (read_deepseek) */
      if (!read_deepseek (c, arch, have[5], error))
        return FALSE;
    }
  else if (!have[4])
    {
      g_autoptr (GError) e = NULL;
      if (!model_arch_derive_head_dim (arch, &e))
        {
          g_autofree char *what = g_strdup_printf ("missing, and %s", e->message);
          return field_error (c, error, "head_dim", what);
        }
    }
  if (arch->family == MODEL_FAMILY_MPT)
    {
      if (!read_mpt (c, arch, have[5], have[3], error))
        return FALSE;
    }
  else if (!have[5] && arch->family == MODEL_FAMILY_GPT2)
    arch->intermediate_size = 4 * arch->hidden_size; /* GPT2MLP: n_inner or 4 * n_embd */
  else if (!have[5] && arch->family != MODEL_FAMILY_QWEN3_MOE
           && arch->family != MODEL_FAMILY_QWEN2_MOE /* those read moe_intermediate_size */
           && !model_arch_family_deepseek (arch->family)) /* read_deepseek checks its own */
    return field_error (c, error, "intermediate_size", "missing");
  if (model_arch_family_moe (arch->family) && !model_arch_family_deepseek (arch->family)
      && (!have[8] || !have[9]))
    return field_error (c, error, have[8] ? "num_experts_per_tok"
                                  : arch->family == MODEL_FAMILY_MIXTRAL ? "num_local_experts"
                                                                         : "num_experts",
                        arch->family == MODEL_FAMILY_MIXTRAL ? "missing (required for mixtral)"
                                                             : "missing (required for a MoE family)");
  if (arch->family == MODEL_FAMILY_QWEN3_MOE || arch->family == MODEL_FAMILY_QWEN2_MOE)
    {
      if (!read_qwen_moe (c, arch, error))
        return FALSE;
    }
  else if (arch->family == MODEL_FAMILY_GPT_OSS)
    {
      if (!read_gpt_oss (c, arch, error))
        return FALSE;
    }
  else if (arch->family == MODEL_FAMILY_QWEN3 && have[8])
    return field_error (c, error, "num_experts", "not supported for qwen3 (a dense family; "
                                                 "use model_type qwen3_moe)");
  if (arch->family == MODEL_FAMILY_BERT && !have[12])
    {
      JsonNode *labels = member (c, "id2label");
      if (labels != NULL && JSON_NODE_HOLDS_OBJECT (labels))
        arch->num_labels = json_object_get_size (json_node_get_object (labels));
    }
  if (arch->family != MODEL_FAMILY_BERT)
    arch->type_vocab_size = arch->num_labels = 0; /* only the bert head uses them */
  if (arch->learned_positions && !have[7])
    return field_error (c, error, "max_position_embeddings",
                        "missing (required with learned positions)");
  return TRUE;
}

static gboolean
read_flags (const Ctx *c, ModelArch *arch, GError **error)
{
  /* checked, not modelled (file header) */
  static const char *const reals[] = { "rope_theta", "rms_norm_eps", "layer_norm_eps",
                                       "layer_norm_epsilon" };
  for (guint i = 0; i < G_N_ELEMENTS (reals); i++)
    if (!optional_positive_real (c, reals[i], NULL, error))
      return FALSE;
  if (!lookup_bool (c, "tie_word_embeddings", &arch->tied_embeddings, error))
    return FALSE;
  gboolean use_window = TRUE;
  if (!lookup_bool (c, "use_sliding_window", &use_window, error))
    return FALSE;
  if (!use_window)
    arch->sliding_window = 0;
  if (arch->family != MODEL_FAMILY_LLAMA && arch->family != MODEL_FAMILY_QWEN3
      && arch->family != MODEL_FAMILY_QWEN3_MOE)
    return TRUE;
  if (arch->family != MODEL_FAMILY_LLAMA)
    { /* Qwen3Attention: q/k/v/o bias = attention_bias (default false); no mlp_bias */
      gboolean attn_bias = arch->qkv_bias;
      if (!lookup_bool (c, "attention_bias", &attn_bias, error))
        return FALSE;
      arch->qkv_bias = arch->attn_out_bias = attn_bias;
      return TRUE;
    }
  gboolean attn_bias = arch->qkv_bias;
  if (!lookup_bool (c, "attention_bias", &attn_bias, error)
      || !lookup_bool (c, "mlp_bias", &arch->mlp_bias, error))
    return FALSE;
  arch->qkv_bias = attn_bias;
  arch->attn_out_bias = attn_bias;
  return TRUE;
}

/* "dir/llama-3.1-8b.json" → "llama-3.1-8b"; "dir/Foo/config.json" → "Foo". */
static char *
name_from_origin (const char *origin)
{
  g_autofree char *base = g_path_get_basename (origin);
  if (strcmp (base, "config.json") == 0)
    {
      g_autofree char *dir = g_path_get_dirname (origin);
      g_autofree char *parent = g_path_get_basename (dir);
      if (strcmp (parent, ".") != 0 && strcmp (parent, G_DIR_SEPARATOR_S) != 0)
        return g_steal_pointer (&parent);
    }
  if (g_str_has_suffix (base, ".json"))
    base[strlen (base) - strlen (".json")] = '\0';
  return g_steal_pointer (&base);
}

#define MAX_JSON_DEPTH MODEL_JSON_MAX_DEPTH

/* One walk over JSON text for model_json_depth and model_json_escaped_nul (arch.h): outside
 * strings the nesting of [ and { (into *max_depth, stopping past MAX_JSON_DEPTH when no
 * NUL is asked for); inside them escapes skipped, the first escaped NUL's offset into *nul
 * (-1: none). Either pointer may be NULL. */
static void
json_walk (const char *text, guint *max_depth, gssize *nul)
{
  guint depth = 0, max = 0;
  gboolean in_string = FALSE;
  if (nul != NULL)
    *nul = -1;
  for (const char *c = text; *c != '\0'; c++)
    {
      if (in_string)
        {
          if (*c == '\\' && nul != NULL && strncmp (c + 1, "u0000", 5) == 0)
            {
              *nul = c - text;
              break;
            }
          if (*c == '\\' && c[1] != '\0')
            c++;
          else if (*c == '"')
            in_string = FALSE;
        }
      else if (*c == '"')
        in_string = TRUE;
      else if (*c == '[' || *c == '{')
        {
          depth++; /* not inside MAX (), which evaluates its arguments twice */
          max = MAX (max, depth);
          if (max > MAX_JSON_DEPTH && nul == NULL)
            break;
        }
      else if ((*c == ']' || *c == '}') && depth > 0)
        depth--;
    }
  if (max_depth != NULL)
    *max_depth = max;
}

/* See arch.h (model_json_depth). */
guint
model_json_depth (const char *text)
{
  guint max;
  json_walk (text, &max, NULL);
  return max;
}

/* See arch.h (model_json_escaped_nul). */
gssize
model_json_escaped_nul (const char *text)
{
  gssize nul;
  json_walk (text, NULL, &nul);
  return nul;
}

/* Parses `json_text` into a root object; the error names `origin` and json-glib's
 * line:column ("<data>" in its message is replaced by `origin`). */
static JsonParser *
parse_object (const char *json_text, const char *origin, GError **error)
{
  if (model_json_depth (json_text) > MAX_JSON_DEPTH)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON,
                   "%s: malformed config: arrays and objects nested deeper than %d levels",
                   origin, MAX_JSON_DEPTH);
      return NULL;
    }
  gssize nul = model_json_escaped_nul (json_text);
  if (nul >= 0)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON,
                   "%s: malformed config: an escaped NUL (\\u0000) at offset %" G_GSSIZE_FORMAT
                   " would cut its name or value short there", origin, nul);
      return NULL;
    }
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) local = NULL;
  g_autofree char *dup_path = NULL;
  if (!model_json_load_unique (parser, json_text, &dup_path, &local))
    {
      /* json-glib says "<data>:LINE:COL: Parse error: …"; put our origin in its place. */
      if (g_str_has_prefix (local->message, "<data>:"))
        g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON, "%s:%s (malformed JSON)",
                     origin, local->message + strlen ("<data>:"));
      else
        g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON, "%s: malformed JSON: %s",
                     origin, local->message);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON,
                   "%s: malformed config: the top level is not a JSON object", origin);
      return NULL;
    }
  if (dup_path != NULL)
    {
      /* transformers reads config.json with json.load, which keeps the last silently */
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD,
                   "%s: key '%s' appears twice (JSON parsers keep the last silently; give it "
                   "once)", origin, dup_path);
      return NULL;
    }
  return g_steal_pointer (&parser);
}

/* The last architecture each thread parsed, with its text and origin (GPrivate, freed with
 * the thread): a batch loads the same config.json for every scenario of a sweep, and
 * parsing it was 3 % of a single-GPU scenario's instructions. The parse is a pure function
 * of (text, origin) and logs nothing, so a copy of the remembered result is what a parse
 * gives. Failed parses are not remembered. */
typedef struct
{
  char *text, *origin;
  ModelArch *arch;
} ParseMemo;

static void
parse_memo_free (gpointer p)
{
  ParseMemo *m = p;
  g_free (m->text);
  g_free (m->origin);
  model_arch_free (m->arch);
  g_free (m);
}

static GPrivate parse_memo = G_PRIVATE_INIT (parse_memo_free);

static ModelArch *load_hf_json (const char *json_text, const char *origin, GError **error);

ModelArch *
model_arch_load_hf_json (const char *json_text, const char *origin, GError **error)
{
  g_return_val_if_fail (json_text != NULL, NULL);
  if (origin == NULL)
    origin = "<config>";
  const ParseMemo *m = g_private_get (&parse_memo);
  if (m != NULL && strcmp (m->origin, origin) == 0 && strcmp (m->text, json_text) == 0)
    return model_arch_copy (m->arch);
  ModelArch *arch = load_hf_json (json_text, origin, error);
  if (arch == NULL)
    return NULL;
  ParseMemo *next = g_new (ParseMemo, 1);
  next->text = g_strdup (json_text);
  next->origin = g_strdup (origin);
  next->arch = model_arch_copy (arch);
  g_private_replace (&parse_memo, next); /* frees the previous one */
  return arch;
}

static ModelArch *
load_hf_json (const char *json_text, const char *origin, GError **error)
{
  g_autoptr (JsonParser) parser = parse_object (json_text, origin, error);
  if (parser == NULL)
    return NULL;
  Ctx c = { NULL, json_node_get_object (json_parser_get_root (parser)), origin, json_text };
  if (json_object_has_member (c.top, "text_config"))
    {
      JsonNode *t = json_object_get_member (c.top, "text_config");
      if (JSON_NODE_HOLDS_OBJECT (t))
        c.text = json_node_get_object (t);
      else if (!JSON_NODE_HOLDS_NULL (t))
        {
          field_error (&c, error, "text_config", "expected an object");
          return NULL;
        }
    }
  g_autoptr (ModelArch) arch = g_new0 (ModelArch, 1);
  arch->name = name_from_origin (origin);
  if (!read_family (&c, arch, error) || !read_sizes (&c, arch, error)
      || !read_flags (&c, arch, error))
    return NULL;
  /* transformers' save_pretrained() records the checkpoint name: the model's own name */
  JsonNode *path_name = member (&c, "_name_or_path");
  if (path_name != NULL && JSON_NODE_HOLDS_VALUE (path_name)
      && json_node_get_value_type (path_name) == G_TYPE_STRING
      && json_node_get_string (path_name)[0] != '\0')
    {
      g_free (arch->name);
      arch->name = g_strdup (json_node_get_string (path_name));
    }
  if (!model_arch_validate (arch, error))
    {
      g_prefix_error (error, "%s: ", origin);
      return NULL;
    }
  return g_steal_pointer (&arch);
}

ModelArch *
model_arch_load_hf_config (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) local = NULL;
  /* A config.json is a few KiB: refuse devices, pipes and anything absurdly large before
   * reading it (a path such as /dev/zero would never end). */
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    {
      /* worded as a scenario file that cannot be opened (cli/scenario/input.c) */
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO, "%s: cannot open: %s", path,
                   g_strerror (errno));
      return NULL;
    }
  if (!S_ISREG (st.st_mode))
    {
      /* a model's directory holds its config.json: point there */
      g_autofree char *inside = g_build_filename (path, "config.json", NULL);
      gboolean has = S_ISDIR (st.st_mode) && g_file_test (inside, G_FILE_TEST_IS_REGULAR);
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO,
                   "%s: is %s, not a config.json file%s%s%s", path,
                   sim_text_file_kind (st.st_mode), has ? " (give the one it holds: " : "",
                   has ? inside : "", has ? ")" : "");
      return NULL;
    }
  if (st.st_size > 16 * 1024 * 1024)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO,
                   "%s: larger than 16 MiB, not a config.json (a few KiB)", path);
      return NULL;
    }
  if (!sim_text_read_file (path, &text, NULL, &local))
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO, "%s", local->message);
      return NULL;
    }
  return model_arch_load_hf_json (text, path, error);
}
