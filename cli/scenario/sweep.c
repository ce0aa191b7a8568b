/* cli/scenario/sweep.c — sweep files expanded into scenarios; see sweep.h for the format.
 *
 * Invariants: axes keep file order (g_key_file_get_keys returns keys in file order); the
 * point index is a mixed-radix number over the [axes] lengths, first axis most significant,
 * with the [zip] index as the least significant digit. Nothing iterates a hash table.
 * LIST expansion and the --set syntax are in cli/scenario/sweep_list.c.
 */
#include "config.h"
#include "cli/scenario/sweep.h"
#include "cli/scenario/output.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/scenario/input.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep-private.h"
#include "sim/text.h"

static const char *const group_names[] = { "sweep", "set", "axes", "zip", "baseline", NULL };
static const char *const sweep_keys[] = { "scenario", "name", "description", NULL };

static void
axis_free (gpointer p)
{
  Axis *a = p;
  g_free (a->key);
  g_strfreev (a->values);
  g_free (a);
}

void
cli_sweep_free (CliSweep *sweep)
{
  if (sweep == NULL)
    return;
  g_free (sweep->path);
  g_free (sweep->name);
  g_free (sweep->scenario);
  g_free (sweep->text);
  g_ptr_array_unref (sweep->sets);
  g_ptr_array_unref (sweep->baseline);
  g_ptr_array_unref (sweep->axes);
  g_free (sweep->origin_set);
  g_free (sweep->origin_axes);
  g_free (sweep->origin_zip);
  g_free (sweep->origin_baseline);
  g_free (sweep);
}

/* ---- loading ------------------------------------------------------------------------------ */

static gboolean
check_groups (GKeyFile *kf, GError **error)
{
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  if (!g_key_file_has_group (kf, "sweep")
      && (g_key_file_has_group (kf, "model") || g_key_file_has_group (kf, "training")))
    {
      /* a scenario given where a sweep is expected: say so, not only its first group */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                   "no [sweep] group: this is a scenario, not a sweep (run it with stepsim "
                   "run, or name it in a sweep's [sweep] scenario = …; see stepsim batch --help)");
      return FALSE;
    }
  for (guint i = 0; groups[i] != NULL; i++)
    if (!g_strv_contains (group_names, groups[i]))
      {
        char *msg = g_strdup_printf ("group [%s]: unknown group", groups[i]);
        msg = sim_text_with_hint (msg, groups[i], group_names);
        g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND, msg);
        g_free (msg);
        return FALSE;
      }
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "sweep", NULL, NULL);
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    if (!g_strv_contains (sweep_keys, keys[i]))
      {
        char *msg = g_strdup_printf ("group [sweep], key '%s': unknown key", keys[i]);
        msg = sim_text_with_hint (msg, keys[i], sweep_keys);
        g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
        g_free (msg);
        return FALSE;
      }
  if (!g_key_file_has_key (kf, "sweep", "scenario", NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [sweep], key 'scenario': required key is missing");
      return FALSE;
    }
  return TRUE;
}

/* Checks that "group.key" exists in the scenario schema by loading the base scenario with
 * it set to `value`: an unknown group or key is an error (the loader's message, with its
 * hint); any other failure is the value's, left to the scenario that uses it. `set_key` is
 * the key as the sweep file writes it; *norm receives "group.key" without spaces. */
static gboolean
check_key (const char *scenario, const char *group, const char *set_key, const char *value,
           char **norm, GError **error)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  g_autofree char *set = g_strdup_printf ("%s=%s", set_key, value);
  if (!cli_sweep_parse_set (set, &g, &k, &v, error))
    {
      g_prefix_error (error, "group [%s]: ", group);
      return FALSE;
    }
  *norm = g_strdup_printf ("%s.%s", g, k);
  g_autofree char *canonical = g_strdup_printf ("%s=%s", *norm, v);
  const char *sets[] = { canonical, NULL };
  GError *e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (scenario, sets, &e);
  if (sc == NULL)
    {
      /* The schema's own words for this key or group (scenario.c, hardware/): keep what
       * follows them, the reason and the hint. */
      g_autofree char *as_key = g_strdup_printf ("group [%s], key '%s': unknown key", g, k);
      g_autofree char *as_group = g_strdup_printf ("group [%s]: unknown group", g);
      const char *hit = strstr (e->message, as_key);
      const char *why = hit ? hit + strlen (as_key) - strlen ("unknown key") : NULL;
      if (why == NULL && (hit = strstr (e->message, as_group)) != NULL)
        why = hit + strlen (as_group) - strlen ("unknown group");
      if (why != NULL)
        {
          g_set_error (error, e->domain, e->code, "group [%s], key '%s': %s", group, *norm, why);
          g_error_free (e);
          return FALSE;
        }
    }
  g_clear_error (&e);
  return TRUE;
}

/* A key may be in only one of [set], [axes] and [zip], once (after dropping spaces: the
 * prescan only sees the text): else the last one would silently win, or two columns of the
 * results would have one name. */
static gboolean
claim_key (GHashTable *keys, const char *group, const char *norm, GError **error)
{
  const char *other = g_hash_table_lookup (keys, norm);
  if (other != NULL)
    {
      gboolean base = strcmp (group, "baseline") == 0;
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key '%s': already given in group [%s]%s", group, norm, other,
                   base ? "" : " (a key is set in only one of [set], [axes] and [zip], once)");
      return FALSE;
    }
  g_hash_table_insert (keys, g_strdup (norm), (gpointer) group); /* group: a literal */
  return TRUE;
}

/* A [baseline] override names a scenario key: "baseline.…" (an override of [baseline]
 * itself) is refused, with `shown` (how the user wrote it) in the message. */
static gboolean
baseline_key_ok (const char *key, const char *shown, GError **error)
{
  if (!g_str_has_prefix (key, "baseline."))
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
               "%s: a baseline override names a scenario key, not one of [baseline] itself",
               shown);
  return FALSE;
}

/* Reads the "group.key = value" pairs of `group` into `out` as "group.key=value" (spaces
 * dropped). `keys`: the table that each key must be new to ([set] shares the sweep's with
 * the axes; [baseline] has its own: it overrides them on purpose). */
static gboolean
read_sets (GKeyFile *kf, const char *group, const char *scenario, GPtrArray *out,
           GHashTable *keys, GError **error)
{
  g_auto (GStrv) names = g_key_file_get_keys (kf, group, NULL, NULL);
  for (guint i = 0; names != NULL && names[i] != NULL; i++)
    {
      g_autofree char *v = g_strstrip (g_key_file_get_value (kf, group, names[i], NULL));
      g_autofree char *norm = NULL;
      g_autofree char *shown = g_strdup_printf ("group [baseline], key '%s'", names[i]);
      gboolean base = strcmp (group, "baseline") == 0;
      if ((base && !baseline_key_ok (g_strstrip (names[i]), shown, error))
          || !check_key (scenario, group, names[i], v, &norm, error)
          || !claim_key (keys, group, norm, error))
        return FALSE;
      g_ptr_array_add (out, g_strdup_printf ("%s=%s", norm, v));
    }
  return TRUE;
}

static gboolean
all_numeric (char **values)
{
  for (guint i = 0; values[i] != NULL; i++)
    {
      double x;
      gboolean integer;
      if (!cli_sweep_parse_number (values[i], &x, &integer))
        return FALSE;
    }
  return TRUE;
}

static gboolean
read_axes (GKeyFile *kf, const char *group, CliSweep *sw, GHashTable *seen, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (kf, group, NULL, NULL);
  guint zip_len = 0;
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    {
      g_autofree char *v = g_key_file_get_value (kf, group, keys[i], NULL);
      Axis *a = g_new0 (Axis, 1);
      g_ptr_array_add (sw->axes, a);
      a->zipped = g_strcmp0 (group, "zip") == 0;
      /* the key's name without spaces decides whether its items may be ranges (a malformed
       * name is check_key's error below: parsed as if it could) */
      g_autofree char *set = g_strdup_printf ("%s=", keys[i]);
      g_autofree char *g = NULL, *k = NULL, *empty = NULL, *name = NULL;
      if (cli_sweep_parse_set (set, &g, &k, &empty, NULL))
        name = g_strdup_printf ("%s.%s", g, k);
      gboolean ranges = name == NULL || cli_sweep_key_takes_ranges (name);
      if ((a->values = cli_sweep_parse_list (v, ranges, error)) == NULL)
        return g_prefix_error (error, "group [%s], key '%s': ", group, keys[i]), FALSE;
      a->n_values = g_strv_length (a->values);
      a->numeric = all_numeric (a->values);
      if (!check_key (sw->scenario, group, keys[i], a->values[0], &a->key, error)
          || !claim_key (seen, group, a->key, error))
        return FALSE;
      for (guint j = 0; j < a->n_values; j++)
        if (!cli_sweep_check_value (a->values[j], error))
          return g_prefix_error (error, "group [%s], key '%s': ", group, a->key), FALSE;
      /* a product axis with a value twice gives identical points under the same label; a
       * zipped column may repeat (its rows differ in the other columns) */
      for (guint j = 0; !a->zipped && j < a->n_values; j++)
        for (guint m = 0; m < j; m++)
          if (strcmp (a->values[j], a->values[m]) == 0)
            {
              g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                           "group [axes], key '%s': '%s' is in the list twice", a->key,
                           a->values[j]);
              return FALSE;
            }
      if (a->zipped && zip_len != 0 && a->n_values != zip_len)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [zip], key '%s': %u value%s, but the zipped axes before it have "
                       "%u", a->key, a->n_values, a->n_values == 1 ? "" : "s", zip_len);
          return FALSE;
        }
      zip_len = a->n_values;
      if ((double) sw->n_points * (a->zipped && i > 0 ? 1 : a->n_values) > MAX_VALUES)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [%s], key '%s': the sweep would have more than %d scenarios",
                       group, a->key, MAX_VALUES);
          return FALSE;
        }
      if (!a->zipped || i == 0)
        sw->n_points *= a->n_values;
    }
  return TRUE;
}

/* Whether `e` is about a group or key name: unknown, or missing from a group that needs it. */
static gboolean
is_name_error (const GError *e)
{
  return e->domain == G_KEY_FILE_ERROR
         && (e->code == G_KEY_FILE_ERROR_KEY_NOT_FOUND
             || e->code == G_KEY_FILE_ERROR_GROUP_NOT_FOUND);
}

gboolean
cli_sweep_check_extra_names (const CliSweep *sweep, const char *const *extra, GError **error)
{
  g_return_val_if_fail (sweep != NULL, FALSE);
  /* The overrides are judged together, as `run` and every scenario of the batch take them:
   * a [gpu.NAME] defined by several --set (base, memory) is one group, which none of them
   * defines alone (QA: batch refused what run accepted). Malformed ones are left to
   * cli_sweep_check_extra_sets, [baseline]'s to cli_sweep_add_extra_baseline. */
  g_autoptr (GPtrArray) mine = g_ptr_array_new ();
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      if (cli_sweep_parse_set (extra[i], &g, &k, &v, NULL) && strcmp (g, "baseline") != 0)
        g_ptr_array_add (mine, (gpointer) extra[i]);
    }
  if (mine->len == 0)
    return TRUE;
  g_ptr_array_add (mine, NULL);
  const char *const *sets = (const char *const *) mine->pdata;
  /* the first scenario of the sweep: its [set] and axes may complete what they begin */
  g_auto (GStrv) first = cli_sweep_sets (sweep, 0, sets);
  g_auto (GStrv) origins = cli_sweep_set_origins (sweep, sets);
  GError *e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (
    sweep->scenario, (const char *const *) first, (const char *const *) origins, &e);
  if (sc != NULL)
    return TRUE;
  gboolean mistake = FALSE;
  if (is_name_error (e))
    {
      /* the error is the overrides' only if that scenario loads without them; else it is
       * the sweep's, said where its scenarios run */
      g_auto (GStrv) own = cli_sweep_sets (sweep, 0, NULL);
      g_autoptr (CliScenario) alone = cli_scenario_load (sweep->scenario,
                                                         (const char *const *) own, NULL);
      mistake = alone != NULL;
    }
  if (!mistake)
    {
      g_error_free (e);
      return TRUE;
    }
  /* Said as `run SCENARIO --set …` says it (naming the --set, not an axis beside them) when
   * the base scenario loads alone and not with them; else with the sweep's overrides too. */
  g_autoptr (CliScenario) base = cli_scenario_load (sweep->scenario, NULL, NULL);
  GError *run_e = NULL;
  if (base != NULL)
    {
      g_auto (GStrv) set_origins = cli_scenario_origins (sets, "--set");
      cli_scenario_free (cli_scenario_load_origins (sweep->scenario, sets,
                                                    (const char *const *) set_origins, &run_e));
    }
  if (run_e != NULL && is_name_error (run_e))
    {
      g_error_free (e);
      e = run_e;
    }
  else
    g_clear_error (&run_e);
  g_propagate_error (error, e);
  return FALSE;
}

gboolean
cli_sweep_add_extra_baseline (CliSweep *sweep, const char *const *extra, GError **error)
{
  g_return_val_if_fail (sweep != NULL, FALSE);
  gboolean any = FALSE;
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL, *norm = NULL;
      if (!cli_sweep_parse_set (extra[i], &g, &k, &v, error))
        return g_prefix_error (error, "--set "), FALSE;
      if (strcmp (g, "baseline") != 0)
        continue;
      g_autofree char *shown = g_strdup_printf ("--set %s", extra[i]);
      if (!baseline_key_ok (k, shown, error))
        return FALSE;
      if (!check_key (sweep->scenario, "baseline", k, v, &norm, error))
        return g_prefix_error (error, "--set %s: ", extra[i]), FALSE;
      /* before the NULL that ends the list, after the file's own: the last one wins */
      g_ptr_array_insert (sweep->baseline, (gint) sweep->baseline->len - 1,
                          g_strdup_printf ("%s=%s", norm, v));
      any = TRUE;
    }
  if (any)
    {
      char *o = sweep->origin_baseline
                    ? g_strdup_printf ("%s and --set baseline.*", sweep->origin_baseline)
                    : g_strdup ("--set baseline.*");
      g_free (sweep->origin_baseline);
      sweep->origin_baseline = o;
    }
  return TRUE;
}

/* [baseline] of the sweep, else of the base scenario file. */
static gboolean
read_baseline (GKeyFile *kf, CliSweep *sw, GError **error)
{
  g_autoptr (GHashTable) keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (g_key_file_has_group (kf, "baseline"))
    {
      sw->origin_baseline = g_strdup_printf ("%s [baseline]", sw->path);
      return read_sets (kf, "baseline", sw->scenario, sw->baseline, keys, error);
    }
  g_autoptr (GKeyFile) base = g_key_file_new ();
  if (!cli_input_load_keyfile (base, sw->scenario, NULL)
      || !g_key_file_has_group (base, "baseline"))
    return TRUE; /* the scenario's own problems are reported when it runs */
  sw->origin_baseline = g_strdup_printf ("%s [baseline]", sw->scenario);
  if (!read_sets (base, "baseline", sw->scenario, sw->baseline, keys, error))
    return g_prefix_error (error, "%s: ", sw->scenario), FALSE;
  return TRUE;
}

static gboolean
load_groups (GKeyFile *kf, CliSweep *sw, GError **error)
{
  if (!check_groups (kf, error))
    return FALSE;
  g_autofree char *rel = g_strstrip (g_key_file_get_value (kf, "sweep", "scenario", NULL));
  g_autofree char *dir = g_path_get_dirname (sw->path);
  sw->scenario = g_path_is_absolute (rel) ? g_strdup (rel) : g_build_filename (dir, rel, NULL);
  const char *problem = cli_input_path_problem (sw->scenario);
  if (problem != NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [sweep], key 'scenario': %s: %s", sw->scenario, problem);
      return FALSE;
    }
  GStatBuf self, target; /* the same file by any name: this sweep, not a scenario */
  if (g_stat (sw->path, &self) == 0 && g_stat (sw->scenario, &target) == 0
      && self.st_dev == target.st_dev && self.st_ino == target.st_ino)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [sweep], key 'scenario': %s is this sweep file itself; name the "
                   "scenario .ini the sweep varies", sw->scenario);
      return FALSE;
    }
  if (g_key_file_has_key (kf, "sweep", "name", NULL))
    {
      /* a trailing or stray backslash is an error, not silently dropped from the title */
      sw->name = sim_text_keyfile_string (kf, "sweep", "name", error);
      if (sw->name == NULL)
        return g_prefix_error (error, "group [sweep], key 'name': "), FALSE;
    }
  else
    sw->name = cli_file_stem (sw->path);
  sw->n_points = 1;
  /* "group.key" → the sweep group that gives it ([set], [axes] or [zip]) */
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (!read_sets (kf, "set", sw->scenario, sw->sets, seen, error)
      || !read_axes (kf, "axes", sw, seen, error) || !read_axes (kf, "zip", sw, seen, error)
      || !read_baseline (kf, sw, error))
    return FALSE;
  g_ptr_array_add (sw->baseline, NULL);
  return TRUE;
}

CliSweep *
cli_sweep_load (const char *path, GError **error)
{
  g_autoptr (CliSweep) sw = g_new0 (CliSweep, 1);
  sw->path = g_strdup (path);
  sw->sets = g_ptr_array_new_with_free_func (g_free);
  sw->baseline = g_ptr_array_new_with_free_func (g_free);
  sw->axes = g_ptr_array_new_with_free_func (axis_free);
  sw->origin_set = g_strdup_printf ("%s [set]", path);
  sw->origin_axes = g_strdup_printf ("%s [axes]", path);
  sw->origin_zip = g_strdup_printf ("%s [zip]", path);
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  GError *e = NULL;
  gsize length = 0;
  if (!cli_input_read (path, &sw->text, &length, &e))
    ; /* the message already starts with the path */
  else if (!cli_scenario_prescan (sw->text, &e)
           || !g_key_file_load_from_data (kf, sw->text, length, G_KEY_FILE_NONE, &e)
           || !load_groups (kf, sw, &e))
    g_prefix_error (&e, "%s: ", path);
  else
    return g_steal_pointer (&sw);
  g_autofree char *shown = sim_text_printable (e->message, CLI_SCENARIO_MESSAGE_MAX);
  g_set_error_literal (error, e->domain, e->code, shown);
  g_error_free (e);
  return NULL;
}
