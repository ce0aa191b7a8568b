/* cli/scenario/scenario.c — scenario files: strict checks, then the [model], [cluster] and
 * [training] groups turned into a CliScenario. See scenario.h.
 *
 * GKeyFile does the parsing. Two things it accepts silently are rejected here before it
 * runs: a duplicate group or key (GKeyFile keeps the last one) and a comment after a value
 * (GKeyFile makes it part of the value); two it reports without saying where or what are
 * reported here with their line: a malformed group header ("[training" without its
 * bracket) and an empty file (no group at all, which GKeyFile loads as an empty key file).
 * That pre-scan only looks at the first character of each line, at group headers and at
 * "name =" prefixes; it does not parse values.
 */
#include "config.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/scenario_private.h"
#include "cli/scenario/output.h"
#include "cli/scenario/input.h"
#include "models/plan/plan.h"
#include "cli/scenario/sweep.h"

#include <string.h>
#include "hardware/catalog.h"
#include "hardware/cluster_spec.h"
#include "sim/text.h"
#include "sim/units.h"

typedef struct
{
  const char *group;
  const char *const *keys;
} GroupSchema;

static const char *const scenario_keys[] = { "name", "description", NULL };
static const char *const training_keys[] = {
  "micro_batch", "seq_len", "grad_accum", "precision", "optimizer", "checkpointing",
  "checkpoint_every", "recompute_modules",
  "attention",   "tf32",    "dropout",    "optimizer_foreach", "zero_grad_to_none",
  "softmax_saves_input", "loss", "loss_chunks", "norm_fp32", "compile", "kv_repeat",
  "kv_repeat_sdpa", "softmax_fp32",
  "logits_kept", "padding", "mtp_layers",
  /* framework profiles (cli/scenario/scenario_framework.c) */
  "framework", "deepspeed_config", "main_grad_fp32", "optimizer_impl", "optimizer_in_backward",
  "activation_offload", "reduce_bucket_size", "allgather_bucket_size",
  "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
  "stage3_max_live_parameters", "host_op_time", "host_backward_op_time",
  "host_sync_micro_batch", "rope_table", "fsdp_end_units", "fsdp_version", NULL,
};
static const char *const parallel_keys[] = { "data_parallel", "bucket_size", "prefetch",
                                             "algorithm", "reduce_dtype", "dp_replicate",
                                             "dp_shard", "tp", "sequence_parallel",
                                             "tp_comm_overlap", "pp", "cp", "cp_variant",
                                             "pipeline_schedule", "virtual_stages",
                                             "layers_per_stage", "pipeline_layout", "ep",
                                             "etp", "order", NULL };
static const char *const moe_keys[] = { "capacity_factor", "load_imbalance", "pad_to_capacity",
                                        "a2a_overlap", "dispatcher", "expert_load", NULL };
static const char *const run_keys[] = { "steps", "seed", "kernel_jitter", "stragglers",
                                        "rank_classes", NULL };
static const char *const allocator_keys[] = { "expandable_segments", NULL };
static const char *const validation_keys[] = { "id", "source", "metric", "measured", "tolerance",
                                               "known_gap", "gap_error", "gap_margin", NULL };
static const char *const offload_keys[] = { "optimizer", "parameters", "activations",
                                            "pin_memory", NULL };
static const char *const finetune_keys[] = { "method", "rank", "targets", "double_quant",
                                             "dequantize", NULL };
static const char *const group_names[] = { "scenario", "model", "cluster", "training",
                                           "parallel", "run", "allocator", "offload",
                                           "finetune", "moe", "gpu.NAME",
                                           "node.NAME", "baseline", "validation", "plan",
                                           "cost", NULL };

/* [model] accepts hf_config, family and every architecture field of models/arch/arch.h. */
static char **
model_keys (void)
{
  GPtrArray *a = g_ptr_array_new ();
  g_ptr_array_add (a, g_strdup ("hf_config"));
  g_ptr_array_add (a, g_strdup ("family"));
  g_ptr_array_add (a, g_strdup ("tie_word_embeddings"));
  for (const char *const *k = model_arch_field_names (); *k != NULL; k++)
    g_ptr_array_add (a, g_strdup (*k));
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

static void
free_member_and_struct (CliScenario *sc)
{
  g_free (sc->path);
  g_free (sc->name);
  if (sc->resolved != NULL)
    g_key_file_unref (sc->resolved);
  g_free (sc->ds_path);
  model_ds_config_clear (&sc->ds);
  model_arch_free (sc->arch);
  hw_node_spec_clear (&sc->node);
  if (sc->slowdowns != NULL)
    g_array_unref (sc->slowdowns);
  if (sc->warnings != NULL)
    g_ptr_array_unref (sc->warnings);
  g_free (sc);
}

void
cli_scenario_free (CliScenario *sc)
{
  if (sc != NULL)
    free_member_and_struct (sc);
}

/* ---- pre-scan: duplicates and inline comments ----------------------------------------- */

static gboolean
prescan_line (const char *line, guint lineno, char **group, GHashTable *seen, GError **error)
{
  g_autofree char *t = g_strstrip (g_strdup (line));
  if (t[0] == '\0' || t[0] == '#')
    return TRUE;
  if (t[0] == '[')
    {
      /* "[NAME]" and nothing else: GKeyFile refuses "[training" with a message that names
       * no line, and a name with a bracket would be taken for another group here */
      gsize n = strlen (t);
      if (n < 3 || t[n - 1] != ']' || strpbrk (t + 1, "[]") != t + n - 1)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                       "line %u: malformed group header '%s' (a group header is [NAME] on a "
                       "line of its own)", lineno, t);
          return FALSE;
        }
      g_free (*group);
      *group = g_strndup (t + 1, n - 2);
      char *gkey = g_strdup_printf ("[%s]", *group);
      if (!g_hash_table_add (seen, gkey))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                       "line %u: group [%s] appears twice", lineno, *group);
          return FALSE;
        }
      return TRUE;
    }
  char *eq = strchr (t, '=');
  if (eq == NULL)
    {
      /* GKeyFile's message names no line */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                   "line %u: '%s' is neither a key = value line, a [group] header nor a # "
                   "comment", lineno, t);
      return FALSE;
    }
  if (*group == NULL)
    {
      g_autofree char *name = g_strstrip (g_strndup (t, (gsize) (eq - t)));
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                   "line %u: key '%s' comes before any [group] header (every key belongs to "
                   "a group such as [model] or [training])", lineno, name);
      return FALSE;
    }
  g_autofree char *key = g_strstrip (g_strndup (t, (gsize) (eq - t)));
  if (key[0] == '\0')
    {
      /* GKeyFile's message names no line (QA: "=1") */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                   "line %u: group [%s]: '%s' has no key before its '='", lineno, *group, t);
      return FALSE;
    }
  if (strchr (key, '[') != NULL)
    {
      /* GKeyFile would keep "key[locale]" aside and never show it to the schema check. */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "line %u: group [%s], key '%s': localised keys are not supported", lineno,
                   *group, key);
      return FALSE;
    }
  char *k = g_strdup_printf ("%s\x1f%s", *group, key);
  if (!g_hash_table_add (seen, k))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "line %u: group [%s], key '%s' appears twice", lineno, *group, key);
      return FALSE;
    }
  if (g_strcmp0 (key, "description") != 0 && (strstr (eq, " #") || strstr (eq, "\t#")))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "line %u: group [%s], key '%s': comments after a value are not allowed "
                   "(put the comment on its own line)", lineno, *group, key);
      return FALSE;
    }
  return TRUE;
}

static gboolean
prescan_text (const char *text, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *group = NULL;
  gboolean blank = TRUE, comments = FALSE;
  for (guint i = 0; lines[i] != NULL; i++)
    {
      if (!prescan_line (lines[i], i + 1, &group, seen, error))
        return FALSE;
      g_autofree char *t = g_strstrip (g_strdup (lines[i]));
      comments = comments || t[0] == '#';
      blank = blank && (t[0] == '\0' || t[0] == '#');
    }
  if (blank)
    {
      /* said so, rather than the first required group being missing */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE, comments
                   ? "the file has only comments (no group, no key)" : "the file is empty");
      return FALSE;
    }
  return TRUE;
}

/* The last text each thread's prescan accepted (GPrivate, freed with the thread): a batch
 * loads the same scenario file for every point of a sweep, and the scan is a pure function
 * of the text that logs nothing, so a text equal to it passes again without the scan (1.4 %
 * of a single-GPU scenario's instructions in a batch). A refused text is not remembered. */
static GPrivate prescan_memo = G_PRIVATE_INIT (g_free);

static gboolean
prescan (const char *text, GError **error)
{
  const char *last = g_private_get (&prescan_memo);
  if (last != NULL && strcmp (last, text) == 0)
    return TRUE;
  if (!prescan_text (text, error))
    return FALSE;
  g_private_replace (&prescan_memo, g_strdup (text)); /* frees the previous one */
  return TRUE;
}

gboolean
cli_scenario_prescan (const char *text, GError **error)
{
  return prescan (text, error);
}

gboolean
cli_scenario_load_keyfile (GKeyFile *kf, const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!cli_input_read (path, &text, &length, error)) /* its message names the file */
    return FALSE;
  if (!cli_scenario_prescan (text, error)
      || !g_key_file_load_from_data (kf, text, length, G_KEY_FILE_NONE, error))
    return g_prefix_error (error, "%s: ", path), FALSE;
  return TRUE;
}

/* ---- --set overrides -------------------------------------------------------------------- */

static gboolean
apply_set (GKeyFile *kf, const char *set, GError **error)
{
  g_autofree char *group = NULL, *key = NULL, *value = NULL;
  if (!cli_sweep_parse_set (set, &group, &key, &value, error))
    return FALSE;
  /* an empty value removes the key: the scenario's default applies, and a key that excludes
   * another (cluster node / gpu, plan tokens / train_steps) can be swapped for it */
  if (value[0] == '\0')
    g_key_file_remove_key (kf, group, key, NULL);
  else
    g_key_file_set_value (kf, group, key, value);
  return TRUE;
}

void
cli_scenario_keyfile_apply_sets (GKeyFile *kf, const char *const *sets)
{
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    apply_set (kf, sets[i], NULL);
}

GStrv
cli_scenario_json_files (const char *path, const char *const *sets)
{
  g_autoptr (GStrvBuilder) files = g_strv_builder_new ();
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  /* the checked reader: /dev/zero or a FIFO fails here, as the load itself will say */
  if (cli_input_load_keyfile (kf, path, NULL))
    {
      cli_scenario_keyfile_apply_sets (kf, sets); /* a malformed one fails the load itself */
      g_autofree char *hf = cli_scenario_get_raw (kf, "model", "hf_config", FALSE, NULL);
      g_autofree char *ds = cli_scenario_get_raw (kf, "training", "deepspeed_config", FALSE,
                                                  NULL);
      g_autofree char *hf_file = hf != NULL ? cli_scenario_resolve_hf_config (hf, path) : NULL;
      g_autofree char *ds_file = ds != NULL && g_strstrip (ds)[0] != '\0'
                                   ? cli_scenario_resolve_path (ds, path)
                                   : NULL;
      if (hf_file != NULL)
        g_strv_builder_add (files, hf_file);
      if (ds_file != NULL)
        g_strv_builder_add (files, ds_file);
    }
  return g_strv_builder_end (files);
}

gboolean
cli_scenario_sets_name_json_files (const char *const *sets)
{
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    {
      g_autofree char *group = NULL, *key = NULL, *value = NULL;
      /* as apply_set reads it: a set that does not parse is skipped there */
      if (cli_sweep_parse_set (sets[i], &group, &key, &value, NULL)
          && ((strcmp (group, "model") == 0 && strcmp (key, "hf_config") == 0)
              || (strcmp (group, "training") == 0 && strcmp (key, "deepspeed_config") == 0)))
        return TRUE;
    }
  return FALSE;
}


/* ---- schema ------------------------------------------------------------------------------ */

/* The keys of schema[s].group are valid; a key of another group's ([run] host_op_time, a
 * [training] key) is named with the group it belongs in, else the nearest valid name. */
static gboolean
check_keys (GKeyFile *kf, const GroupSchema *schema, guint n_schema, guint s, GError **error)
{
  const char *group = schema[s].group;
  const char *const *valid = schema[s].keys;
  g_auto (GStrv) keys = g_key_file_get_keys (kf, group, NULL, NULL);
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    if (!g_strv_contains (valid, keys[i]))
      {
        char *msg = g_strdup_printf ("group [%s], key '%s': unknown key", group, keys[i]);
        const char *home = NULL;
        for (guint o = 0; o < n_schema && home == NULL; o++)
          if (o != s && g_strv_contains (schema[o].keys, keys[i]))
            home = schema[o].group;
        if (home != NULL)
          {
            char *more = g_strdup_printf ("%s here; it is a key of group [%s]", msg, home);
            g_free (msg);
            msg = more;
          }
        else
          msg = sim_text_with_hint (msg, keys[i], valid);
        g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
        g_free (msg);
        return FALSE;
      }
  return TRUE;
}

/* [baseline] holds "group.key = value" overrides (read by batch and fit --for stack, which
 * apply them and report a bad value): each must name a key of the schema, so that a typo is
 * refused by every command, `run` included, and not only when a baseline runs. The named
 * groups [gpu.NAME], [node.NAME], [plan] and [cost] are checked by their readers when the
 * baseline loads; a [baseline] key inside [baseline] is refused. */
static gboolean
check_baseline (GKeyFile *kf, const GroupSchema *schema, guint n_schema, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "baseline", NULL, NULL);
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    {
      g_autofree char *value = g_key_file_get_value (kf, "baseline", keys[i], NULL);
      g_autofree char *set = g_strdup_printf ("%s=%s", keys[i], value ? value : "");
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      GError *e = NULL;
      if (!cli_sweep_parse_set (set, &g, &k, &v, &e))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [baseline], key '%s': not a group.key override (%s)", keys[i],
                       e->message);
          g_error_free (e);
          return FALSE;
        }
      if (strcmp (g, "baseline") == 0)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                       "group [baseline], key '%s': a baseline override names a scenario "
                       "key, not one of [baseline] itself", keys[i]);
          return FALSE;
        }
      if (g_str_has_prefix (g, "gpu.") || g_str_has_prefix (g, "node.")
          || strcmp (g, "plan") == 0 || strcmp (g, "cost") == 0)
        continue;
      guint s = 0;
      while (s < n_schema && strcmp (schema[s].group, g) != 0)
        s++;
      char *msg = NULL;
      if (s == n_schema)
        msg = sim_text_with_hint (
          g_strdup_printf ("group [baseline], key '%s': unknown group [%s]", keys[i], g), g,
          group_names);
      else if (!g_strv_contains (schema[s].keys, k))
        msg = sim_text_with_hint (
          g_strdup_printf ("group [baseline], key '%s': unknown key '%s' of group [%s]",
                           keys[i], k, g),
          k, schema[s].keys);
      if (msg != NULL)
        {
          g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
          g_free (msg);
          return FALSE;
        }
    }
  return TRUE;
}

gboolean
cli_scenario_check_names (GKeyFile *kf, GError **error)
{
  g_auto (GStrv) mkeys = model_keys ();
  const GroupSchema schema[] = {
    { "scenario", scenario_keys },
    { "model", (const char *const *) mkeys },
    { "cluster", hw_cluster_spec_keys () },
    { "training", training_keys },
    { "parallel", parallel_keys },
    { "run", run_keys },
    { "allocator", allocator_keys },
    { "validation", validation_keys }, /* read by stepsim validate (cli/cmd_validate.c) */
    { "offload", offload_keys },
    { "finetune", finetune_keys },
    { "moe", moe_keys },
  };
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  for (guint i = 0; groups[i] != NULL; i++)
    {
      const char *g = groups[i];
      if (g_str_has_prefix (g, "gpu.") && g[4] != '\0')
        {
          /* Checked in full even when no [cluster] uses it: a typo there is still a typo. */
          g_autoptr (HwGpuSpec) spec = hw_catalog_gpu_from_keyfile (kf, g, error);
          if (spec == NULL)
            return FALSE;
          continue;
        }
      if (g_str_has_prefix (g, "node.") && g[5] != '\0')
        {
          HwNodeSpec node = { 0 };
          gboolean ok = hw_node_spec_from_keyfile (kf, g, &node, error);
          hw_node_spec_clear (&node);
          if (!ok)
            return FALSE;
          continue;
        }
      if (g_strcmp0 (g, "baseline") == 0)
        {
          /* group.key overrides: their names here, their values where a baseline runs */
          if (!check_baseline (kf, schema, G_N_ELEMENTS (schema), error))
            return FALSE;
          continue;
        }
      if (g_strcmp0 (g, "plan") == 0 || g_strcmp0 (g, "cost") == 0)
        continue; /* keys per GPU type: checked by cli/scenario/scenario_plan.c */
      gboolean known = FALSE;
      for (guint s = 0; s < G_N_ELEMENTS (schema); s++)
        if (g_strcmp0 (schema[s].group, g) == 0)
          {
            known = TRUE;
            if (!check_keys (kf, schema, G_N_ELEMENTS (schema), s, error))
              return FALSE;
          }
      if (!known)
        {
          char *msg = g_strdup_printf ("group [%s]: unknown group", g);
          msg = sim_text_with_hint (msg, g, group_names);
          g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND, msg);
          g_free (msg);
          return FALSE;
        }
    }
  return TRUE;
}

/* The names (cli_scenario_check_names) and the groups every scenario has. */
static gboolean
check_schema (GKeyFile *kf, GError **error)
{
  if (!cli_scenario_check_names (kf, error))
    return FALSE;
  const char *required[] = { "model", "cluster", "training" };
  for (guint i = 0; i < G_N_ELEMENTS (required); i++)
    if (!g_key_file_has_group (kf, required[i]))
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                     "group [%s] is missing", required[i]);
        return FALSE;
      }
  return TRUE;
}

/* ---- entry point -------------------------------------------------------------------------- */

/* A rotary-position model runs at any length, but it was trained up to max_position_embeddings:
 * beyond it quality needs position scaling (RoPE interpolation, Chen et al. 2023, arXiv
 * 2306.15595; YaRN). The step is simulated as given, with one warning per process (a fit or
 * sweep loads the scenario once per candidate). Learned positions are an error instead
 * (models/plan/plan.c); ALiBi extrapolates by design (Press et al. 2022, arXiv 2108.12409). */
static void
warn_trained_length (const CliScenario *sc, const char *const *sets, const char *const *origins)
{
  static gsize warned = 0;
  const ModelArch *a = sc->arch;
  gboolean rotary = !a->learned_positions && a->family != MODEL_FAMILY_MPT;
  if (!rotary || a->max_positions == 0 || sc->stack.seq_len <= a->max_positions
      || !g_once_init_enter (&warned))
    return;
  g_autofree char *msg = g_strdup_printf (
      "group [training], key 'seq_len': %" G_GUINT64_FORMAT " is above the %" G_GUINT64_FORMAT
      " positions model '%s' was trained for ([model] max_position_embeddings; rotary "
      "positions): simulated as given, the model would need position scaling (warned once)",
      sc->stack.seq_len, a->max_positions, a->name);
  /* the file, with the --set (or sweep) overrides the message names, as every message */
  g_autofree char *source = cli_scenario_error_source (sc->path, sets, origins, msg);
  g_autofree char *full = g_strdup_printf ("%s: %s", source, msg);
  cli_scenario_warn (full); /* "stepsim run: warning: …", as the others (QA: "stepsim:") */
  g_once_init_leave (&warned, 1);
}

/* [scenario] `key` (name, description), when given, is printed text (summaries, verdicts,
 * tables, charts, the file's resolved text): no control character, C0 (U+0000–U+001F, the
 * escape of a terminal sequence), DEL or C1 (U+0080–U+009F, U+009B the one-character CSI
 * that terminals act on as ESC [ does). The file is UTF-8 (cli/scenario/input.c). */
static gboolean
check_printed_text (GKeyFile *kf, const char *key, GError **error)
{
  if (!g_key_file_has_key (kf, "scenario", key, NULL))
    return TRUE;
  /* a backslash that starts no escape ("run\") is refused, not dropped from the name */
  g_autofree char *text = sim_text_keyfile_string (kf, "scenario", key, error);
  if (text == NULL)
    return g_prefix_error (error, "group [scenario], key '%s': ", key), FALSE;
  gunichar u = sim_text_first_control (text);
  if (u != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [scenario], key '%s': contains a control character (U+%04X); "
                   "a %s is printed text", key, u, key);
      return FALSE;
    }
  return TRUE;
}

static CliScenario *
load_keyfile (const char *path, GKeyFile *kf, GError **error)
{
  g_autoptr (CliScenario) sc = g_new0 (CliScenario, 1);
  sc->path = g_strdup (path);
  sc->warnings = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *base = cli_file_stem (path);
  sc->name = g_key_file_get_string (kf, "scenario", "name", NULL);
  /* an empty name (`name =`, --set scenario.name=) is no name: the file's base name */
  if (sc->name == NULL || g_strstrip (sc->name)[0] == '\0')
    g_free (sc->name), sc->name = g_strdup (base);
  sc->resolved = g_key_file_ref (kf);
  if (!check_printed_text (kf, "name", error) || !check_printed_text (kf, "description", error)
      || !check_schema (kf, error) || !cli_scenario_load_model (kf, path, sc, error)
      || !cli_scenario_load_cluster (kf, sc, error) || !cli_scenario_load_training (kf, sc, error)
      || !cli_scenario_load_parallel (kf, sc, error) || !cli_scenario_load_moe (kf, sc, error)
      || !cli_scenario_load_run (kf, sc, error)
      || !cli_scenario_load_offload (kf, sc, error)
      || !cli_scenario_load_framework_late (kf, sc, error)
      || !cli_scenario_check_offload (sc, error)
      || !cli_scenario_load_finetune (kf, sc, error)
      || !cli_scenario_load_plan (kf, sc, error)
      /* the combinations: what the plan would refuse, refused here naming group and key */
      || !model_plan_validate (sc->arch, &sc->stack, &sc->par, error))
    return NULL;
  return g_steal_pointer (&sc);
}

/* Sets *error to "SOURCE: MESSAGE" (SOURCE as cli_scenario_error_source, or just the path
 * when `sets` is NULL), printable and at most MESSAGE_MAX characters; frees `e`. */
static void
fail_with (GError **error, GError *e, const char *path, const char *const *sets,
           const char *const *origins)
{
  g_autofree char *source = cli_scenario_error_source (path, sets, origins, e->message);
  g_autofree char *full = g_strdup_printf ("%s: %s", source, e->message);
  g_autofree char *shown = sim_text_printable (full, CLI_SCENARIO_MESSAGE_MAX);
  g_set_error_literal (error, e->domain, e->code, shown);
  g_error_free (e);
}

/* A scenario loaded with overrides is not the file's any more: its name says what changed,
 * "NAME (training.precision=bf16_mixed, cluster.gpu=H100-SXM)" (every override but those of
 * [scenario] and the baseline's, in order, the last of a key kept). When that is longer than NAME_MAX_CHARS
 * characters it keeps the whole overrides that fit and counts the rest, "NAME (a=1, b=2, +3
 * more)": an override is never cut (a cut in the middle read as a different value). */
#define NAME_MAX_CHARS 200
static void
name_overrides (CliScenario *sc, const char *const *sets)
{
  g_autoptr (GPtrArray) seen = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) shown = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      /* a baseline's override does not change the scenario simulated (QA: named in it) */
      if (!cli_sweep_parse_set (sets[i], &g, &k, &v, NULL) || strcmp (g, "scenario") == 0
          || strcmp (g, "baseline") == 0)
        continue;
      char *key = g_strdup_printf ("%s.%s", g, k);
      g_autofree char *raw = g_strdup_printf ("%s=%s", key, v);
      char *item = sim_text_printable (raw, 0); /* escaped, whole */
      for (guint j = 0; j < seen->len; j++)
        if (strcmp (g_ptr_array_index (seen, j), key) == 0)
          {
            g_ptr_array_remove_index (seen, j);
            g_ptr_array_remove_index (shown, j);
            break;
          }
      g_ptr_array_add (seen, key);
      g_ptr_array_add (shown, item);
    }
  if (shown->len == 0)
    return;
  g_autoptr (GString) full = g_string_new (sc->name);
  g_string_append (full, " (");
  for (guint i = 0; i < shown->len; i++)
    {
      const char *item = g_ptr_array_index (shown, i);
      g_autofree char *more = g_strdup_printf (", +%u more)", shown->len - i);
      glong room = NAME_MAX_CHARS - (glong) g_utf8_strlen (full->str, -1);
      glong need = (glong) g_utf8_strlen (item, -1) + (i > 0 ? 2 : 0);
      /* the last one needs ")" after it, any other the room to say how many follow */
      glong after = i + 1 == shown->len ? 1 : (glong) g_utf8_strlen (more, -1);
      if (i > 0 && need + after > room)
        {
          g_string_append (full, more);
          break;
        }
      g_string_append_printf (full, "%s%s", i > 0 ? ", " : "", item);
      if (i + 1 == shown->len)
        g_string_append (full, ")");
    }
  g_free (sc->name);
  sc->name = g_string_free (g_steal_pointer (&full), FALSE);
}

CliScenario *
cli_scenario_load_origins (const char *path, const char *const *sets,
                           const char *const *origins, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  GError *e = NULL;
  gsize length = 0;
  if (!cli_input_read (path, &text, &length, &e))
    {
      /* the message already starts with the path */
      g_autofree char *shown = sim_text_printable (e->message, CLI_SCENARIO_MESSAGE_MAX);
      g_set_error_literal (error, e->domain, e->code, shown);
      g_error_free (e);
      return NULL;
    }
  /* Errors of the file itself (syntax, duplicates) are the file's, whatever the overrides. */
  if (!prescan (text, &e) || !g_key_file_load_from_data (kf, text, length, G_KEY_FILE_NONE, &e))
    return fail_with (error, e, path, NULL, NULL), NULL;
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    if (!apply_set (kf, sets[i], &e))
      {
        const char *origin = origins != NULL && origins[i] != NULL ? origins[i] : "--set";
        g_prefix_error (&e, "%s ", origin);
        return fail_with (error, e, path, NULL, NULL), NULL;
      }
  CliScenario *sc = load_keyfile (path, kf, &e);
  if (sc == NULL)
    fail_with (error, e, path, sets, origins);
  else
    {
      warn_trained_length (sc, sets, origins);
      cli_scenario_collect_warnings (kf, sc, sets, origins);
      name_overrides (sc, sets);
    }
  return sc;
}

char *
cli_scenario_text (const CliScenario *sc)
{
  g_return_val_if_fail (sc != NULL, NULL);
  return sc->resolved != NULL ? g_key_file_to_data (sc->resolved, NULL, NULL) : g_strdup ("");
}

CliScenario *
cli_scenario_load (const char *path, const char *const *sets, GError **error)
{
  return cli_scenario_load_origins (path, sets, NULL, error);
}
