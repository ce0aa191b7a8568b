/* cli/scenario/sweep_points.c — the points of a loaded sweep (sweep.h): the axis values, labels and
 * overrides of point i (a mixed-radix number over the [axes] lengths, first axis most
 * significant, the [zip] index the least significant digit), and the checks of extra --set
 * against the axes. */
#include "config.h"
#include "cli/scenario/sweep-private.h"

#include <math.h>
#include <string.h>
#include "sim/text.h"

const char *
cli_sweep_path (const CliSweep *sweep)
{
  return sweep->path;
}

const char *
cli_sweep_name (const CliSweep *sweep)
{
  return sweep->name;
}

const char *
cli_sweep_scenario (const CliSweep *sweep)
{
  return sweep->scenario;
}

const char *
cli_sweep_text (const CliSweep *sweep)
{
  return sweep->text;
}

guint
cli_sweep_n_axes (const CliSweep *sweep)
{
  return sweep->axes->len;
}

static const Axis *
axis_at (const CliSweep *sweep, guint axis)
{
  g_return_val_if_fail (axis < sweep->axes->len, NULL);
  return g_ptr_array_index (sweep->axes, axis);
}

const char *
cli_sweep_axis_key (const CliSweep *sweep, guint axis)
{
  return axis_at (sweep, axis)->key;
}

gboolean
cli_sweep_axis_numeric (const CliSweep *sweep, guint axis)
{
  return axis_at (sweep, axis)->numeric;
}

guint
cli_sweep_n_points (const CliSweep *sweep)
{
  return sweep->n_points;
}

const char *
cli_sweep_value (const CliSweep *sweep, guint point, guint axis)
{
  g_return_val_if_fail (point < sweep->n_points && axis < sweep->axes->len, NULL);
  /* Digits from the least significant: the zip index, then [axes] from the last. */
  guint zip_len = 0;
  for (guint i = 0; i < sweep->axes->len; i++)
    if (((Axis *) g_ptr_array_index (sweep->axes, i))->zipped)
      zip_len = ((Axis *) g_ptr_array_index (sweep->axes, i))->n_values;
  const Axis *a = axis_at (sweep, axis);
  guint rest = point;
  if (zip_len > 0)
    {
      if (a->zipped)
        return a->values[rest % zip_len];
      rest /= zip_len;
    }
  for (guint i = sweep->axes->len; i-- > 0;)
    {
      const Axis *b = g_ptr_array_index (sweep->axes, i);
      if (b->zipped)
        continue;
      if (i == axis)
        return b->values[rest % b->n_values];
      rest /= b->n_values;
    }
  g_assert_not_reached ();
}

char *
cli_sweep_label (const CliSweep *sweep, guint point)
{
  if (sweep->axes->len == 0)
    return g_strdup (sweep->name);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < sweep->axes->len; i++)
    {
      const char *key = axis_at (sweep, i)->key;
      const char *dot = cli_sweep_key_dot (key);
      g_string_append_printf (s, "%s%s=%s", i > 0 ? ", " : "", dot ? dot + 1 : key,
                              cli_sweep_value (sweep, point, i));
    }
  return g_string_free (s, FALSE);
}

char **
cli_sweep_sets (const CliSweep *sweep, guint point, const char *const *extra)
{
  GPtrArray *out = g_ptr_array_new ();
  for (guint i = 0; i < sweep->sets->len; i++)
    g_ptr_array_add (out, g_strdup (g_ptr_array_index (sweep->sets, i)));
  for (guint i = 0; i < sweep->axes->len; i++)
    g_ptr_array_add (out, g_strdup_printf ("%s=%s", axis_at (sweep, i)->key,
                                           cli_sweep_value (sweep, point, i)));
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    {
      /* spaces dropped, as the sweep's own: one spelling per key (batch.c compares them) */
      char *norm = cli_sweep_normalize_set (extra[i], NULL);
      g_ptr_array_add (out, norm ? norm : g_strdup (extra[i]));
    }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

char **
cli_sweep_set_origins (const CliSweep *sweep, const char *const *extra)
{
  GPtrArray *out = g_ptr_array_new ();
  for (guint i = 0; i < sweep->sets->len; i++)
    g_ptr_array_add (out, g_strdup (sweep->origin_set));
  for (guint i = 0; i < sweep->axes->len; i++)
    g_ptr_array_add (out, g_strdup (axis_at (sweep, i)->zipped ? sweep->origin_zip
                                                                : sweep->origin_axes));
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (out, g_strdup ("--set"));
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

const char *const *
cli_sweep_baseline (const CliSweep *sweep)
{
  return (const char *const *) sweep->baseline->pdata;
}

const char *
cli_sweep_baseline_origin (const CliSweep *sweep)
{
  return sweep->origin_baseline;
}

gboolean
cli_sweep_check_extra_sets (const CliSweep *sweep, const char *const *extra, GError **error)
{
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    {
      g_autofree char *norm = cli_sweep_normalize_set (extra[i], error);
      if (norm == NULL)
        return g_prefix_error (error, "--set "), FALSE;
      *strchr (norm, '=') = '\0';
      for (guint a = 0; a < sweep->axes->len; a++)
        if (strcmp (axis_at (sweep, a)->key, norm) == 0)
          {
            g_autofree char *shown = sim_text_printable (extra[i], 80);
            g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                         "--set '%s': %s is an axis of %s ([%s]): every scenario would run "
                         "with this value while its label and axis column say otherwise; "
                         "change the axis in the sweep file instead", shown, norm,
                         sweep->path, axis_at (sweep, a)->zipped ? "zip" : "axes");
            return FALSE;
          }
    }
  return TRUE;
}
