/* cli/scenario/scenario_keys.c — the typed getters every scenario group parser shares
 * (cli/scenario/scenario_keys.h): a key's presence, its stripped value (as a value or a
 * success flag), a positive count, a positive dimensioned quantity. A leaf: it calls nothing
 * of the other scenario files, which all call it (tests/layering.sh). Every error names
 * group and key; the caller prefixes the file name.
 */
#include "config.h"
#include "cli/scenario/scenario_keys.h"


/* g_key_file_has_key, the group tested first: for a group the file lacks, GLib's test
 * builds a translated GError into a temporary and drops it (gkeyfile.c
 * g_key_file_has_key_full: g_set_error with _(), then g_propagate_error into NULL), ~3,500
 * instructions against a walk of the group list (a scenario asks ~50 keys of absent
 * groups). */
gboolean
cli_scenario_has_key (GKeyFile *kf, const char *group, const char *key)
{
  return g_key_file_has_group (kf, group) && g_key_file_has_key (kf, group, key, NULL);
}

/* Returns the value or NULL; a missing required key is an error, a missing optional one
 * is not (then *error stays unset and NULL is returned). */
char *
cli_scenario_get_raw (GKeyFile *kf, const char *group, const char *key, gboolean required, GError **error)
{
  if (!cli_scenario_has_key (kf, group, key))
    {
      if (required)
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                     "group [%s], key '%s': required key is missing", group, key);
      return NULL;
    }
  char *v = g_key_file_get_value (kf, group, key, NULL);
  return g_strstrip (v);
}

/* cli_scenario_get_raw as a success flag: FALSE + error when required and missing; TRUE
 * with *out the stripped value (caller frees), or NULL when optional and absent. */
gboolean
cli_scenario_get_value (GKeyFile *kf, const char *group, const char *key, gboolean required,
                        char **out, GError **error)
{
  GError *e = NULL;
  *out = cli_scenario_get_raw (kf, group, key, required, &e);
  if (e != NULL)
    g_propagate_error (error, e);
  return e == NULL;
}

/* Reads an integer in [1, max] into *out (left untouched when optional and absent); every
 * other text is one message giving the range (scenario_keys.h). */
gboolean
cli_scenario_get_count (GKeyFile *kf, const char *group, const char *key, gboolean required,
                        guint64 max, guint64 *out, GError **error)
{
  g_autofree char *v = NULL;
  if (!cli_scenario_get_value (kf, group, key, required, &v, error))
    return FALSE;
  if (v == NULL)
    return TRUE;
  if (!sim_units_parse_count_in (v, 1, max, out, error))
    return PREFIX_KEY (error, group, key), FALSE;
  return TRUE;
}

/* Reads a positive dimensioned quantity (strict units) into *out. */
gboolean
cli_scenario_get_quantity (GKeyFile *kf, const char *group, const char *key, SimDimension dim,
                           gboolean required, double *out, GError **error)
{
  g_autofree char *v = NULL;
  if (!cli_scenario_get_value (kf, group, key, required, &v, error))
    return FALSE;
  if (v == NULL)
    return TRUE;
  double x;
  if (!sim_units_parse (v, dim, &x, error))
    return PREFIX_KEY (error, group, key), FALSE;
  if (!(x > 0))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key '%s': must be positive", group, key);
      return FALSE;
    }
  *out = x;
  return TRUE;
}
