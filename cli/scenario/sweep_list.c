/* cli/scenario/sweep_list.c — the value syntax of sweep files: LISTs of values and numeric ranges
 * (FIRST:LAST[:STEP|:*FACTOR]) expanded into their values, and "group.key=value" (--set)
 * split into its parts: the one parser of overrides, for every command and loader, so a
 * name GKeyFile cannot store never reaches g_key_file_set_value. See sweep.h for the
 * format; loading and points are in cli/scenario/sweep.c.
 *
 * Invariants: range values are computed from their index, never accumulated; integers
 * print without a decimal point, others with %.15g (locale-independent).
 */
#include "config.h"
#include "cli/scenario/sweep.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include "cli/scenario/sweep-private.h"
#include "sim/text.h"

/* ---- lists and ranges --------------------------------------------------------------------- */

/* Parses all of `s` as a number; `integer` tells whether it was written as one. */
gboolean
cli_sweep_parse_number (const char *s, double *out, gboolean *integer)
{
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod (s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite (v))
    return FALSE;
  *out = v;
  *integer = strpbrk (s, ".eE") == NULL && fabs (v) < 9e15;
  return TRUE;
}

static void
add_number (GPtrArray *out, double v, gboolean integer)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (integer)
    g_ptr_array_add (out, g_strdup_printf ("%.0f", v));
  else
    g_ptr_array_add (out, g_strdup (g_ascii_formatd (buf, sizeof buf, "%.15g", v)));
}

/* Whether all of `s` reads as a number that is not finite: nan, inf, infinity (any case, a
 * sign), or one past the double range (1e400). */
static gboolean
non_finite_number (const char *s)
{
  char *end = NULL;
  double v = g_ascii_strtod (s, &end);
  return end != s && *end == '\0' && !isfinite (v);
}

/* Expands FIRST:LAST[:STEP|:*FACTOR] into `out`. A bound (or step) that is no finite
 * number is refused by name (QA: nan:3 was taken as a value, 1:nan said only "not a range"). */
static gboolean
expand_range (const char *item, GPtrArray *out, GError **error)
{
  g_auto (GStrv) p = g_strsplit (item, ":", -1);
  guint n = g_strv_length (p);
  double first, last, step = 1;
  gboolean i1, i2, i3 = TRUE, geometric = FALSE;
  for (guint i = 0; i < n; i++)
    g_strstrip (p[i]);
  if (n == 3 && p[2][0] == '*')
    geometric = TRUE;
  static const char *const part[] = { "FIRST", "LAST", "STEP" };
  for (guint i = 0; i < n && i < 3; i++)
    if (non_finite_number (p[i] + (i == 2 && geometric)))
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "range '%s': %s '%s' is not a finite number", item,
                     i == 2 && geometric ? "FACTOR" : part[i], p[i] + (i == 2 && geometric));
        return FALSE;
      }
  if ((n != 2 && n != 3) || !cli_sweep_parse_number (p[0], &first, &i1)
      || !cli_sweep_parse_number (p[1], &last, &i2)
      || (n == 3 && !cli_sweep_parse_number (p[2] + geometric, &step, &i3)))
    goto bad;
  gboolean integer = i1 && i2 && i3;
  if (geometric ? !(step > 1 && first > 0 && last >= first)
                : !(step != 0 && (last - first) * step >= 0))
    goto bad;
  /* Values computed from the index, not accumulated, so 0.1 steps do not drift. */
  for (guint k = 0;; k++)
    {
      double v = geometric ? first * pow (step, k) : first + k * step;
      double past = geometric ? v - last : (v - last) * (step > 0 ? 1 : -1);
      if (past > 1e-9 * MAX (fabs (last), 1.0))
        break;
      if (out->len >= MAX_VALUES)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "range '%s' has more than %d values", item, MAX_VALUES);
          return FALSE;
        }
      add_number (out, v, integer);
    }
  return TRUE;
bad:
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "'%s' is not a range FIRST:LAST, FIRST:LAST:STEP or FIRST:LAST:*FACTOR whose "
               "step reaches LAST (FACTOR > 1, FIRST > 0)", item);
  return FALSE;
}

/* Keys whose LIST items are values as written, never ranges: their syntax has ':' in it
 * (run.stragglers RANK:FACTOR, moe.expert_load zipf:S: QA, "3:1.25" was refused as a range
 * and "0:2, 5:7" swept ranks 0 to 7 with no factor), or they are text or file names, which
 * may have one too. No other key's value has a ':' (numbers, quantities, words). */
static const char *const literal_keys[] = {
  "run.stragglers",  "moe.expert_load", "model.hf_config", "training.deepspeed_config",
  "scenario.name",   "scenario.description", "validation.id", "validation.source", NULL,
};

gboolean
cli_sweep_key_takes_ranges (const char *key)
{
  g_return_val_if_fail (key != NULL, TRUE);
  return !g_strv_contains (literal_keys, key);
}

/* The items of `list` split at its commas, but not at those inside a double-quoted item,
 * which is taken whole and without its quotes (*quoted[i] TRUE); spaces around items are
 * dropped. NULL + error for a quote that opens an item and does not close it, or one inside
 * an unquoted item. */
static GPtrArray *
split_items (const char *list, GArray *quoted, GError **error)
{
  g_autoptr (GPtrArray) items = g_ptr_array_new_with_free_func (g_free);
  const char *p = list;
  for (guint n = 1;; n++)
    {
      while (g_ascii_isspace (*p))
        p++;
      gboolean q = *p == '"';
      const char *start = q ? p + 1 : p, *end;
      if (q)
        {
          end = strchr (start, '"');
          if (end == NULL)
            {
              g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                           "item %u of the list opens a '\"' it does not close", n);
              return NULL;
            }
          p = end + 1;
          while (g_ascii_isspace (*p))
            p++;
          if (*p != ',' && *p != '\0')
            {
              g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                           "item %u of the list has text after its closing '\"'", n);
              return NULL;
            }
        }
      else
        {
          end = strchr (start, ',');
          if (end == NULL)
            end = start + strlen (start);
          p = end;
        }
      g_autofree char *item = g_strndup (start, (gsize) (end - start));
      if (!q && strchr (item, '"') != NULL)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "item %u of the list has a '\"' inside it: quote the whole item", n);
          return NULL;
        }
      g_ptr_array_add (items, q ? g_steal_pointer (&item) : g_strstrip (g_steal_pointer (&item)));
      g_array_append_val (quoted, q);
      if (*p == '\0')
        break;
      p++; /* the comma */
    }
  return g_steal_pointer (&items);
}

char **
cli_sweep_parse_list (const char *list, gboolean ranges, GError **error)
{
  g_return_val_if_fail (list != NULL, NULL);
  g_autofree char *whole = g_strstrip (g_strdup (list));
  if (whole[0] == '\0')
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "the list is empty");
      return NULL;
    }
  g_autoptr (GArray) quoted = g_array_new (FALSE, FALSE, sizeof (gboolean));
  g_autoptr (GPtrArray) items = split_items (list, quoted, error);
  if (items == NULL)
    return NULL;
  g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < items->len; i++)
    {
      char *item = g_ptr_array_index (items, i);
      const char *colon = strchr (item, ':');
      if (item[0] == '\0')
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "item %u of the list is empty", i + 1);
          return NULL;
        }
      /* a quoted item is a value as written: commas and all, never a range (QA: a
       * moe.expert_load histogram "8, 3, 5" could not be swept) */
      if (g_array_index (quoted, gboolean, i))
        {
          g_ptr_array_add (out, g_strdup (item));
          continue;
        }
      /* a key that takes ranges has no ':' of its own (cli_sweep_key_takes_ranges): an item
       * with one is a range, or refused here as one (QA: ':4' ran as a value, each row
       * failing "not a whole number", where '1:' was refused) */
      if (ranges && colon != NULL)
        {
          if (!expand_range (item, out, error))
            return NULL;
        }
      else
        g_ptr_array_add (out, g_strdup (item));
    }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (g_steal_pointer (&out), FALSE);
}

/* ---- --set ------------------------------------------------------------------------------ */

enum
{
  ECHO_MAX = 80, /* characters of an override echoed in a message */
};

/* GKeyFile refuses group and key names with '[', ']' or control characters (its CRITICAL
 * path); they must be UTF-8 too, as everything echoed in messages. */
static const char *
name_problem (const char *name)
{
  if (!g_utf8_validate (name, -1, NULL))
    return "is not UTF-8";
  for (const char *p = name; *p != '\0'; p++)
    if (*p == '[' || *p == ']' || g_ascii_iscntrl (*p))
      return "cannot contain '[', ']' or control characters";
  return NULL;
}

/* The problem of a group or key name as typed, spaces around it included: a control
 * character other than a tab (which g_strstrip would drop at its ends), else NULL. */
static const char *
raw_name_problem (const char *name)
{
  for (const char *p = name; *p != '\0'; p++)
    if (*p != '\t' && g_ascii_iscntrl (*p))
      return "cannot contain '[', ']' or control characters";
  return NULL;
}

/* A value goes into the key file and its text: no line breaks or other control characters
 * (a tab is fine) and UTF-8. */
static const char *
value_problem (const char *value)
{
  if (!g_utf8_validate (value, -1, NULL))
    return "is not UTF-8";
  for (const char *p = value; *p != '\0'; p++)
    if (*p != '\t' && g_ascii_iscntrl (*p))
      return "cannot contain control characters (such as a line break)";
  return NULL;
}

gboolean
cli_sweep_check_value (const char *value, GError **error)
{
  const char *why = value_problem (value);
  if (why == NULL)
    return TRUE;
  g_autofree char *shown = sim_text_printable (value, ECHO_MAX);
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "value '%s' %s", shown, why);
  return FALSE;
}

const char *
cli_sweep_key_dot (const char *lhs)
{
  g_return_val_if_fail (lhs != NULL, NULL);
  const char *dot = strchr (lhs, '.');
  if (dot == NULL)
    return NULL;
  /* [gpu.NAME] and [node.NAME] are the only groups with a dot, and their keys have none;
   * elsewhere the key may have dots ([cost] gpu_hour.TYPE, [baseline] group.key) and the
   * group has none. */
  g_autofree char *head = g_strstrip (g_strndup (lhs, (gsize) (dot - lhs)));
  if (strcmp (head, "gpu") == 0 || strcmp (head, "node") == 0)
    return strrchr (lhs, '.');
  return dot;
}

gboolean
cli_sweep_parse_set (const char *set, char **group, char **key, char **value, GError **error)
{
  g_return_val_if_fail (set != NULL, FALSE);
  /* `shown` (the set as quoted in a message) is made on an error path only: every scenario
   * of a sweep parses its sets */
  g_autofree char *shown = NULL;
  const char *eq = strchr (set, '=');
  g_autofree char *lhs = eq ? g_strndup (set, (gsize) (eq - set)) : NULL;
  char *dot = lhs ? (char *) cli_sweep_key_dot (lhs) : NULL;
  if (dot != NULL)
    *dot = '\0';
  /* Spaces around the group, the key and the value are not part of them, as in a file. */
  g_autofree char *g = dot ? g_strstrip (g_strdup (lhs)) : NULL;
  g_autofree char *k = dot ? g_strstrip (g_strdup (dot + 1)) : NULL;
  if (eq == NULL || dot == NULL || g[0] == '\0' || k[0] == '\0')
    {
      shown = sim_text_printable (set, ECHO_MAX);
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "'%s': expected group.key=value", shown);
      return FALSE;
    }
  /* a line break (or another control character) around a name is refused as one inside it:
   * g_strstrip would drop it silently; `lhs` is the group as typed, `dot + 1` the key */
  const char *what = "group", *name = lhs, *why = raw_name_problem (lhs);
  if (why == NULL)
    name = g, why = name_problem (g);
  if (why == NULL)
    what = "key", name = dot + 1, why = raw_name_problem (dot + 1);
  if (why == NULL)
    name = k, why = name_problem (k);
  if (why != NULL)
    {
      g_autofree char *n = sim_text_printable (name, ECHO_MAX);
      shown = sim_text_printable (set, ECHO_MAX);
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "'%s': %s '%s' %s", shown,
                   what, n, why);
      return FALSE;
    }
  /* checked before the spaces around it go: a trailing line break is a control character
   * as any other (QA: "--set 'scenario.name=x\n'" ran, "…=x\x01" was refused) */
  if (!cli_sweep_check_value (eq + 1, error))
    {
      shown = sim_text_printable (set, ECHO_MAX);
      return g_prefix_error (error, "'%s': ", shown), FALSE;
    }
  g_autofree char *v = g_strstrip (g_strdup (eq + 1));
  *group = g_steal_pointer (&g);
  *key = g_steal_pointer (&k);
  *value = g_steal_pointer (&v);
  return TRUE;
}

gboolean
cli_sweep_set_is_baseline (const char *set)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  return cli_sweep_parse_set (set, &g, &k, &v, NULL) && strcmp (g, "baseline") == 0;
}

char *
cli_sweep_normalize_set (const char *set, GError **error)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  if (!cli_sweep_parse_set (set, &g, &k, &v, error))
    return NULL;
  return g_strdup_printf ("%s.%s=%s", g, k, v);
}

void
cli_sweep_sets_from_cwd (char **sets)
{
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      if (!cli_sweep_parse_set (sets[i], &g, &k, &v, NULL) || v[0] == '\0'
          || g_path_is_absolute (v))
        continue;
      gboolean hf = strcmp (g, "model") == 0 && strcmp (k, "hf_config") == 0
                    && (strchr (v, '/') != NULL || g_str_has_suffix (v, ".json"));
      gboolean ds = strcmp (g, "training") == 0 && strcmp (k, "deepspeed_config") == 0;
      if (!hf && !ds)
        continue;
      g_autofree char *cwd = g_get_current_dir ();
      g_autofree char *file = g_canonicalize_filename (v, cwd); /* "./x" → "CWD/x" */
      g_free (sets[i]);
      sets[i] = g_strdup_printf ("%s.%s=%s", g, k, file);
    }
}

gboolean
cli_sweep_check_sets (const char *what, const char *const *sets, GError **error)
{
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    {
      g_autofree char *g = NULL, *k = NULL, *v = NULL;
      if (!cli_sweep_parse_set (sets[i], &g, &k, &v, error))
        return g_prefix_error (error, "%s ", what), FALSE;
    }
  return TRUE;
}
