/* cli/scenario/scenario_groups.c — the [model], [cluster] and [training] groups of a scenario. */
#include "config.h"
#include "cli/scenario/scenario_private.h"

#include <string.h>
#include "cli/scenario/input.h"
#include "hardware/catalog.h"
#include "hardware/cluster_spec.h"
#include "sim/text.h"

/* [training] caps: far beyond any published run, small enough that a plan stays tractable */
#define MAX_MICRO_BATCH 65536
#define MAX_SEQ_LEN 16777216 /* 2^24, the largest max_position_embeddings accepted */
#define MAX_GRAD_ACCUM CLI_SCENARIO_MAX_GRAD_ACCUM


/* hf_config is a path relative to the scenario file, or the bare name of a shipped config
 * ("llama-3.1-8b", see `stepsim list models`). */
char *
cli_scenario_resolve_hf_config (const char *value, const char *scenario_path)
{
  if (strchr (value, '/') == NULL && !g_str_has_suffix (value, ".json"))
    {
      g_autofree char *file = g_strconcat (value, ".json", NULL);
      return g_build_filename (cli_scenario_models_dir (), file, NULL);
    }
  if (g_path_is_absolute (value))
    return g_strdup (value);
  g_autofree char *dir = g_path_get_dirname (scenario_path);
  if (strcmp (dir, ".") == 0) /* a scenario in the current directory: the path as given */
    return g_strdup (value);
  return g_build_filename (dir, value, NULL);
}

/* A bare name must be one of the shipped configs; say which exist. */
static gboolean
check_shipped (const char *value, const char *file, GError **error)
{
  if (strchr (value, '/') != NULL || g_str_has_suffix (value, ".json")
      || g_file_test (file, G_FILE_TEST_IS_REGULAR))
    return TRUE;
  g_auto (GStrv) v = cli_scenario_shipped_models ();
  char *msg = g_strdup_printf ("group [model], key 'hf_config': no shipped config '%s'", value);
  msg = sim_text_with_hint (msg, value, (const char *const *) v);
  g_autofree char *joined = g_strjoinv (", ", v);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s (shipped: %s; or give a path to a config.json)", msg, joined);
  g_free (msg);
  return FALSE;
}

static ModelArch *
arch_from_family (GKeyFile *kf, const CliScenario *sc, GError **error)
{
  g_autofree char *family = cli_scenario_get_raw (kf, "model", "family", FALSE, NULL);
  if (family == NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [model], key 'hf_config': required (a shipped config's name, see "
                   "stepsim list models, or a path to a config.json; or give 'family' and "
                   "the model's sizes)");
      return NULL;
    }
  g_autoptr (ModelArch) arch = g_new0 (ModelArch, 1);
  if (!model_arch_family_from_string (family, &arch->family, error))
    return PREFIX_KEY (error, "model", "family"), NULL;
  model_arch_set_family_defaults (arch, arch->family);
  (void) sc;
  arch->name = NULL; /* named from its family and size once the sizes are read */
  /* Without a config every size must be given, except those HF derives: key/value heads
   * (= heads), head_dim (hidden / heads) and, for gpt2, the MLP width (4 × hidden). */
  const char *required[] = { "hidden_size", "num_hidden_layers", "num_attention_heads",
                             "vocab_size", "max_position_embeddings",
                             (arch->family == MODEL_FAMILY_GPT2 || arch->family == MODEL_FAMILY_MPT) ? NULL : "intermediate_size",
                             model_arch_family_moe (arch->family) ? "num_local_experts" : NULL,
                             model_arch_family_moe (arch->family) ? "num_experts_per_tok" : NULL };
  if (arch->family == MODEL_FAMILY_GPT_OSS)
    {
      /* layer_types, attention sinks and MXFP4 experts have no [model] keys */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [model], key 'hf_config': required for family gpt_oss (layer_types "
                   "and quantization_config are read from the config)");
      return NULL;
    }
  if (arch->family == MODEL_FAMILY_QWEN2_MOE)
    {
      /* its shared expert's width (shared_expert_intermediate_size) has no [model] key */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [model], key 'hf_config': required for family qwen2_moe (the shared "
                   "expert's width is read from the config)");
      return NULL;
    }
  if (model_arch_family_deepseek (arch->family))
    {
      /* MLA ranks, head widths and the dense/MoE layer split have no [model] keys */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [model], key 'hf_config': required for family %s (MLA and the "
                   "DeepSeekMoE layout are read from the config)", family);
      return NULL;
    }
  for (guint i = 0; i < G_N_ELEMENTS (required); i++)
    if (required[i] != NULL && !g_key_file_has_key (kf, "model", required[i], NULL))
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                     "group [model], key '%s': required without hf_config (family %s)",
                     required[i], family);
        return NULL;
      }
  return g_steal_pointer (&arch);
}

/* Sizes HF derives when a config omits them (transformers' config classes); head_dim:
 * derive_head_dim. */
static void
derive_defaults (ModelArch *arch, GKeyFile *kf)
{
  if (!g_key_file_has_key (kf, "model", "num_key_value_heads", NULL) && arch->n_kv_heads == 0)
    arch->n_kv_heads = arch->n_heads;
  if ((arch->family == MODEL_FAMILY_GPT2 || arch->family == MODEL_FAMILY_MPT) && arch->intermediate_size == 0)
    arch->intermediate_size = 4 * arch->hidden_size;
}

static gboolean
load_tied (GKeyFile *kf, ModelArch *arch, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "model", "tie_word_embeddings", FALSE, NULL);
  if (v == NULL)
    return TRUE;
  if (!sim_units_parse_bool (v, &arch->tied_embeddings, error))
    return PREFIX_KEY (error, "model", "tie_word_embeddings"), FALSE;
  return TRUE;
}

/* "llama 8.0B", "gpt2 124M": the family and the parameter count. Caller frees. */
static char *
family_and_size (const ModelArch *arch)
{
  double n = (double) model_arch_n_params (arch);
  const char *family = model_arch_family_name (arch->family);
  if (n >= 1e9)
    return g_strdup_printf ("%s %.1fB", family, n / 1e9);
  if (n >= 1e6)
    return g_strdup_printf ("%s %.0fM", family, n / 1e6);
  return g_strdup_printf ("%s %.0fK", family, n / 1e3);
}

/* The model's name, never the scenario's: a shipped config keeps its name (what hf_config
 * says); a config of the user's is named by its `_name_or_path` (models/arch/arch.h), else by
 * its family and size; [model] sizes without a config give the family and size. Sizes
 * changed in [model] on top of a config make it "FAMILY SIZE (NAME with [model] sizes)". */
static void
name_model (GKeyFile *kf, const char *hf, const char *file, ModelArch *arch)
{
  gboolean shipped = hf != NULL && strchr (hf, '/') == NULL && !g_str_has_suffix (hf, ".json");
  gboolean resized = FALSE;
  for (const char *const *k = model_arch_field_names (); *k != NULL; k++)
    resized = resized || g_key_file_has_key (kf, "model", *k, NULL);
  g_autofree char *size = family_and_size (arch);
  g_autofree char *stem = NULL;
  if (hf != NULL && !shipped)
    {
      /* the loader fell back to the file's name: no _name_or_path in the config */
      g_autofree char *base = g_path_get_basename (file);
      if (strcmp (base, "config.json") == 0)
        {
          g_autofree char *dir = g_path_get_dirname (file);
          stem = g_path_get_basename (dir);
        }
      else
        stem = g_strndup (base, g_str_has_suffix (base, ".json") ? strlen (base) - 5 : strlen (base));
    }
  char *name;
  if (hf == NULL)
    name = g_strdup (size);
  else if (resized)
    name = g_strdup_printf ("%s (%s with [model] sizes)", size, arch->name);
  else if (!shipped && g_strcmp0 (arch->name, stem) == 0)
    name = g_strdup (size);
  else
    return;
  g_free (arch->name);
  arch->name = name;
}

/* Whether head_dim follows hidden_size / num_attention_heads, judged before the [model] keys
 * apply: not when [model] gives head_dim, nor when the config gave one other than that
 * quotient (or the family takes its head widths from the config: DeepSeek's MLA). */
static gboolean
head_dim_derived (GKeyFile *kf, gboolean from_config, const ModelArch *a)
{
  if (g_key_file_has_key (kf, "model", "head_dim", NULL) || model_arch_family_deepseek (a->family))
    return FALSE;
  return !from_config
         || (a->n_heads > 0 && a->hidden_size % a->n_heads == 0
             && a->head_dim == a->hidden_size / a->n_heads);
}

/* head_dim re-derived from the sizes the [model] keys left (model_arch_derive_head_dim, the
 * config loader's check), the error naming the [model] key that broke it. */
static gboolean
derive_head_dim (GKeyFile *kf, ModelArch *arch, GError **error)
{
  g_autoptr (GError) e = NULL;
  if (model_arch_derive_head_dim (arch, &e))
    return TRUE;
  const char *key = g_key_file_has_key (kf, "model", "num_attention_heads", NULL)
                      ? "num_attention_heads"
                    : g_key_file_has_key (kf, "model", "hidden_size", NULL) ? "hidden_size"
                                                                             : "hf_config";
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [model], key '%s': %s; give head_dim to set it", key, e->message);
  return FALSE;
}

/* The HF config `file` (`hf` as [model] gives it, resolved) parsed (new), from the input memo
 * when a command keeps one (cli/scenario/input.h: a batch parses each config once); NULL +
 * error as check_shipped, or as model_arch_load_hf_config prefixed with [model] hf_config. */
static ModelArch *
load_hf_config (const char *hf, const char *file, GError **error)
{
  const ModelArch *kept = cli_input_memo_lookup ("hf_config", file);
  if (kept != NULL)
    return model_arch_copy (kept);
  if (!check_shipped (hf, file, error))
    return NULL;
  ModelArch *arch = model_arch_load_hf_config (file, error);
  if (arch == NULL)
    return PREFIX_KEY (error, "model", "hf_config"), NULL;
  cli_input_memo_keep ("hf_config", file, model_arch_copy (arch),
                       (GDestroyNotify) model_arch_free);
  return arch;
}

gboolean
cli_scenario_load_model (GKeyFile *kf, const char *path, CliScenario *sc, GError **error)
{
  g_autofree char *hf = cli_scenario_get_raw (kf, "model", "hf_config", FALSE, NULL);
  g_autoptr (ModelArch) arch = NULL;
  if (hf != NULL)
    {
      g_autofree char *file = cli_scenario_resolve_hf_config (hf, path);
      arch = load_hf_config (hf, file, error);
      if (arch == NULL)
        return FALSE;
      if (g_key_file_has_key (kf, "model", "family", NULL))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [model], key 'family': not allowed with hf_config (the config's "
                       "model_type sets it)");
          return FALSE;
        }
    }
  else if ((arch = arch_from_family (kf, sc, error)) == NULL)
    return FALSE;
  gboolean head_derived = head_dim_derived (kf, hf != NULL, arch);
  /* Explicit keys override the JSON fields (DESIGN §7). */
  for (const char *const *k = model_arch_field_names (); *k != NULL; k++)
    {
      guint64 v;
      gboolean present = g_key_file_has_key (kf, "model", *k, NULL);
      if (present
          && !cli_scenario_get_count (kf, "model", *k, TRUE, model_arch_field_max (*k), &v,
                                      error))
        return FALSE;
      if (present && !model_arch_set_field (arch, *k, v, error))
        return PREFIX_KEY (error, "model", *k), FALSE;
    }
  derive_defaults (arch, kf);
  if (head_derived && !derive_head_dim (kf, arch, error))
    return FALSE;
  if (arch->n_experts > 0 && !model_arch_family_moe (arch->family))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [model], key 'num_local_experts': experts are modelled for the "
                   "mixtral, qwen3_moe, qwen2_moe and gpt_oss families only (this model is %s)",
                   model_arch_family_name (arch->family));
      return FALSE;
    }
  if (!load_tied (kf, arch, error))
    return FALSE;
  const char *keys[2];
  GError *e = NULL;
  if (!model_arch_validate_key (arch, keys, &e))
    {
      /* name the key the group gives (the other of two may be the config's); neither given:
       * the first, or hf_config when the value is the config's */
      const char *k = keys[0];
      if (keys[1] != NULL && !g_key_file_has_key (kf, "model", keys[0], NULL)
          && g_key_file_has_key (kf, "model", keys[1], NULL))
        k = keys[1];
      else if (hf != NULL && !g_key_file_has_key (kf, "model", keys[0], NULL)
               && (keys[1] == NULL || !g_key_file_has_key (kf, "model", keys[1], NULL)))
        k = "hf_config";
      const char *what = e->message;
      gsize n = strlen (k);
      if (strncmp (what, k, n) == 0 && what[n] == ' ')
        what += n + 1; /* "key 'num_hidden_layers': must be in …", the key said once */
      /* [model] sizes without a config have no name yet (name_model comes after): none said
       * (QA: "(model '(null)')") */
      g_autofree char *named = arch->name != NULL ? g_strdup_printf (" (model '%s')", arch->name)
                                                  : g_strdup ("");
      g_set_error (error, e->domain, e->code, "group [model], key '%s': %s%s", k, what, named);
      g_error_free (e);
      return FALSE;
    }
  g_autofree char *file = hf != NULL ? cli_scenario_resolve_hf_config (hf, path) : NULL;
  name_model (kf, hf, file, arch);
  sc->arch = g_steal_pointer (&arch);
  return TRUE;
}

gboolean
cli_scenario_load_cluster (GKeyFile *kf, CliScenario *sc, GError **error)
{
  return hw_cluster_spec_from_keyfile (kf, &sc->node, &sc->n_nodes, &sc->fabric, error);
}

/* The value of [training] `key` into *out (caller frees): FALSE + error when it is required
 * and missing; TRUE with *out NULL when optional and absent. */
static gboolean
training_value (GKeyFile *kf, const char *key, gboolean required, char **out, GError **error)
{
  return cli_scenario_get_value (kf, "training", key, required, out, error);
}

static gboolean
get_dropout (GKeyFile *kf, double *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", "dropout", FALSE, NULL);
  if (v == NULL)
    return TRUE;
  double p;
  if (!sim_units_parse_number (v, &p, error))
    return PREFIX_KEY (error, "training", "dropout"), FALSE;
  if (!(p >= 0 && p < 1))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'dropout': '%s' is outside [0, 1)", g_strstrip (v));
      return FALSE;
    }
  *out = p;
  return TRUE;
}

/* Upper bounds: the plan has one task per layer per micro-batch, so GA is the simulation's
 * cost; micro_batch and seq_len bound the byte counts (doubles stay exact in the
 * allocator model). */
static gboolean
check_caps (const ModelStack *s, GError **error)
{
  const struct
  {
    const char *key;
    guint64 value, max;
  } caps[] = {
    { "micro_batch", s->micro_batch, MAX_MICRO_BATCH },
    { "seq_len", s->seq_len, MAX_SEQ_LEN },
    { "grad_accum", s->grad_accum, MAX_GRAD_ACCUM },
  };
  for (guint i = 0; i < G_N_ELEMENTS (caps); i++)
    if (caps[i].value > caps[i].max)
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "group [training], key '%s': at most %" G_GUINT64_FORMAT, caps[i].key,
                     caps[i].max);
        return FALSE;
      }
  return TRUE;
}

/* The enumerated [training] keys, each parsed by its own typed parser. precision is
 * required unless a deepspeed_config says it (its fp16/bf16 blocks). */
static gboolean
load_training_enums (GKeyFile *kf, ModelStack *s, gboolean has_ds, GError **error)
{
  g_autofree char *prec = NULL, *opt = NULL, *ckpt = NULL, *attn = NULL, *tf32 = NULL;
  if (!training_value (kf, "precision", !has_ds, &prec, error)
      || !training_value (kf, "optimizer", FALSE, &opt, error)
      || !training_value (kf, "checkpointing", FALSE, &ckpt, error)
      || !training_value (kf, "attention", FALSE, &attn, error)
      || !training_value (kf, "tf32", FALSE, &tf32, error))
    return FALSE;
  const char *bad = NULL;
  if (prec != NULL && !model_stack_precision_from_string (prec, &s->precision, error))
    bad = "precision";
  else if (opt != NULL && !model_stack_optimizer_from_string (opt, &s->optimizer, error))
    bad = "optimizer";
  else if (ckpt != NULL && !model_stack_checkpointing_from_string (ckpt, &s->checkpointing, error))
    bad = "checkpointing";
  else if (attn != NULL && !model_stack_attention_from_string (attn, s, error))
    bad = "attention";
  else if (tf32 != NULL && !sim_units_parse_bool (tf32, &s->tf32, error))
    bad = "tf32";
  if (bad != NULL)
    return PREFIX_KEY (error, "training", bad), FALSE;
  return TRUE;
}

/* [training] mtp_layers: DeepSeek-V3 multi-token-prediction depths trained (Megatron-LM
 * --mtp-num-layers), a whole number >= 0 (0, the default: off), at most 64; checked against
 * the model's num_nextn_predict_layers by model_plan_validate (plan.c check_mtp). */
static gboolean
get_mtp_layers (GKeyFile *kf, ModelStack *s, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", "mtp_layers", FALSE, NULL);
  guint64 n = 0;
  if (v == NULL)
    return TRUE;
  if (!sim_units_parse_count_in (v, 0, 64, &n, error))
    return PREFIX_KEY (error, "training", "mtp_layers"), FALSE;
  s->mtp_layers = (guint) n;
  return TRUE;
}

/* [training] recompute_modules: what checkpointing = selective reruns, Megatron-LM's
 * --recompute-modules (transformer_config.py recompute_modules): a comma-separated list of
 * core_attn (the default), layernorm, moe_act, mlp, moe, shared_experts and mla_up_proj
 * (multi-latent attention only, as Megatron raises otherwise); Megatron's others (the
 * gated-delta-net and mhc modules) are not modelled. Only with checkpointing = selective. */
static gboolean
get_recompute_modules (GKeyFile *kf, ModelStack *s, GError **error)
{
  static const struct
  {
    const char *name;
    guint bit;
  } modules[] = { { "core_attn", MODEL_RECOMPUTE_CORE_ATTN },
                  { "layernorm", MODEL_RECOMPUTE_LAYERNORM },
                  { "moe_act", MODEL_RECOMPUTE_MOE_ACT },
                  { "mlp", MODEL_RECOMPUTE_MLP },
                  { "moe", MODEL_RECOMPUTE_MOE },
                  { "shared_experts", MODEL_RECOMPUTE_SHARED_EXPERTS },
                  { "mla_up_proj", MODEL_RECOMPUTE_MLA_UP_PROJ } };
  g_autofree char *v = cli_scenario_get_raw (kf, "training", "recompute_modules", FALSE, NULL);
  if (v == NULL)
    return TRUE;
  if (s->checkpointing != MODEL_CHECKPOINTING_SELECTIVE)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'recompute_modules': needs checkpointing = "
                   "selective (what selective recomputation reruns)");
      return FALSE;
    }
  g_auto (GStrv) parts = g_strsplit (v, ",", -1);
  guint mask = 0;
  g_autofree char *trimmed = g_strstrip (g_strdup (v));
  if (trimmed[0] == '\0')
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'recompute_modules': empty (a comma-separated list "
                   "of core_attn, layernorm, moe_act, mlp, moe, shared_experts, mla_up_proj)");
      return FALSE;
    }
  for (guint i = 0; parts[i] != NULL; i++)
    {
      g_strstrip (parts[i]);
      guint k = 0;
      while (k < G_N_ELEMENTS (modules) && strcmp (parts[i], modules[k].name) != 0)
        k++;
      if (k == G_N_ELEMENTS (modules))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [training], key 'recompute_modules': '%s' is not modelled "
                       "(expected a comma-separated list of core_attn, layernorm, moe_act, "
                       "mlp, moe, shared_experts, mla_up_proj)",
                       parts[i]);
          return FALSE;
        }
      if (mask & modules[k].bit) /* a set: a repeat is a slip, not a second rerun */
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [training], key 'recompute_modules': '%s' is in the list twice",
                       parts[i]);
          return FALSE;
        }
      mask |= modules[k].bit;
    }
  s->recompute_modules = mask;
  return TRUE;
}

gboolean
cli_scenario_load_training (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelStack *s = &sc->stack;
  model_stack_init_defaults (s);
  guint64 every = s->checkpoint_every;
  if (!cli_scenario_load_framework (kf, sc, error)
      || !cli_scenario_get_count (kf, "training", "micro_batch", TRUE, MAX_MICRO_BATCH,
                                  &s->micro_batch, error)
      || !cli_scenario_get_count (kf, "training", "seq_len", TRUE, MAX_SEQ_LEN, &s->seq_len,
                                  error)
      || !cli_scenario_get_count (kf, "training", "grad_accum", FALSE, MAX_GRAD_ACCUM,
                                  &s->grad_accum, error)
      || !load_training_enums (kf, s, sc->has_ds, error) || !get_dropout (kf, &s->dropout, error)
      || !check_caps (s, error) || !get_mtp_layers (kf, s, error)
      || !get_recompute_modules (kf, s, error)
      || !cli_scenario_get_count (kf, "training", "checkpoint_every", FALSE,
                                  MAX (sc->arch->n_layers, 1), &every, error))
    return FALSE;
  s->checkpoint_every = (guint) MIN (every, G_MAXUINT);
  /* transformer_config.py: "mla_up_proj in recompute_modules is only supported with
   * multi_latent_attention" (a ValueError) */
  if ((s->recompute_modules & MODEL_RECOMPUTE_MLA_UP_PROJ) && !sc->arch->deepseek.mla)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'recompute_modules': mla_up_proj needs multi-latent "
                   "attention (DeepSeek-V2/V3); model '%s' has none (Megatron-LM raises)",
                   sc->arch->name);
      return FALSE;
    }
  /* moe, moe_act and shared_experts rerun parts of MoE layers: on a dense model they would
   * silently rerun nothing */
  const guint moe_only = MODEL_RECOMPUTE_MOE | MODEL_RECOMPUTE_MOE_ACT
                         | MODEL_RECOMPUTE_SHARED_EXPERTS;
  if ((s->recompute_modules & moe_only) && sc->arch->n_experts == 0)
    {
      guint bit = s->recompute_modules & moe_only;
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'recompute_modules': %s reruns part of MoE layers; "
                   "model '%s' has no experts (num_local_experts absent or 0; mlp reruns a "
                   "dense MLP)",
                   (bit & MODEL_RECOMPUTE_MOE_ACT) ? "moe_act"
                   : (bit & MODEL_RECOMPUTE_MOE)   ? "moe"
                                                   : "shared_experts",
                   sc->arch->name);
      return FALSE;
    }
  /* checkpoint_every without any checkpointing key would be silently ignored (the default is
   * none): an error. With an explicit checkpointing it applies where it means something, so
   * a sweep over checkpointing modes may keep it in [set]. */
  if (g_key_file_has_key (kf, "training", "checkpoint_every", NULL)
      && !g_key_file_has_key (kf, "training", "checkpointing", NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'checkpoint_every': needs checkpointing = every_k "
                   "(checkpointing defaults to none)");
      return FALSE;
    }
  return cli_scenario_load_memory (kf, sc, error);
}
