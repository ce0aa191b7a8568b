/* cli/report/charts_tsv.c — the TSV helpers every planning chart of cli/report/charts.c shares: parsing
 * the text `stepsim export` prints into a header and rows, looking up columns and numbers,
 * and printing numbers and labels of the output TSV. See charts-private.h.
 *
 * Input: texts escaped, numbers round-trip, NaN as "nan" (sim/h5out.h). Output numbers use %.6g
 * (display precision).
 */
#include "config.h"
#include "cli/report/charts-private.h"
#include "sim/text.h"

#include <math.h>
#include <string.h>

/* ---- TSV in ------------------------------------------------------------------------------- */

void
cli_tsv_free (Tsv *t)
{
  g_strfreev (t->head);
  g_ptr_array_unref (t->rows);
  g_free (t);
}

Tsv *
cli_tsv_parse (const char *text)
{
  Tsv *t = g_new0 (Tsv, 1);
  t->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      if (lines[i][0] == '\0')
        continue;
      char **f = g_strsplit (lines[i], "\t", -1);
      if (t->head == NULL)
        t->head = f;
      else
        g_ptr_array_add (t->rows, f);
    }
  if (t->head == NULL)
    t->head = g_new0 (char *, 1);
  return t;
}

gint
cli_tsv_col (const Tsv *t, const char *name)
{
  for (guint i = 0; t->head[i] != NULL; i++)
    if (strcmp (t->head[i], name) == 0)
      return (gint) i;
  return -1;
}

/* The one column named "GROUP.<name>" (a scenario key given without its group), or -1
 * when none or several are. */
static gint
col_by_key (const Tsv *t, const char *name)
{
  g_autofree char *suffix = g_strconcat (".", name, NULL);
  gint found = -1;
  for (guint i = 0; t->head[i] != NULL; i++)
    if (g_str_has_suffix (t->head[i], suffix))
      {
        if (found >= 0)
          return -1;
        found = (gint) i;
      }
  return found;
}

gboolean
cli_tsv_need_col (const Tsv *t, const char *name, gint *col, GError **error)
{
  *col = cli_tsv_col (t, name);
  if (*col < 0 && strchr (name, '.') == NULL)
    *col = col_by_key (t, name);
  if (*col >= 0)
    return TRUE;
  g_autofree char *names = g_strjoinv (", ", t->head);
  /* Hint among the names as they may be given: keys without their group for a name
   * without a dot. */
  g_autoptr (GPtrArray) cands = g_ptr_array_new ();
  for (guint i = 0; t->head[i] != NULL; i++)
    {
      const char *dot = strrchr (t->head[i], '.');
      g_ptr_array_add (cands, strchr (name, '.') == NULL && dot ? (char *) dot + 1 : t->head[i]);
    }
  g_ptr_array_add (cands, NULL);
  char *msg = g_strdup_printf ("no column '%s' in the data", name);
  msg = sim_text_with_hint (msg, name, (const char *const *) cands->pdata);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s (columns: %s)", msg,
               names);
  g_free (msg);
  return FALSE;
}

const char *
cli_tsv_get (const Tsv *t, guint row, gint col)
{
  char **f = g_ptr_array_index (t->rows, row);
  return col >= 0 && (guint) col < g_strv_length (f) ? f[col] : "";
}

/* The number in (row, col); NaN for a missing column or text. */
double
cli_tsv_num (const Tsv *t, guint row, gint col)
{
  const char *s = cli_tsv_get (t, row, col);
  char *end = NULL;
  double v = g_ascii_strtod (s, &end);
  return end == s || *end != '\0' ? NAN : v;
}

/* Rows of a results table that ran (status "ok", or no status column: a run's summary). */
gboolean
cli_tsv_row_ok (const Tsv *t, guint row)
{
  gint s = cli_tsv_col (t, "status");
  return s < 0 || strcmp (cli_tsv_get (t, row, s), "ok") == 0;
}

/* ---- TSV out ------------------------------------------------------------------------------ */

void
cli_tsv_put_num (GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append (s, g_ascii_formatd (buf, sizeof buf, "%.6g", isnan (v) ? 0.0 : v));
}

/* A label with tabs turned into spaces (it is one TSV field). */
void
cli_tsv_put_label (GString *s, const char *label)
{
  for (const char *p = label; *p != '\0'; p++)
    g_string_append_c (s, *p == '\t' ? ' ' : *p);
}

char *
cli_charts_nothing_to_draw (GError **error, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "nothing to draw: %s", what);
  return NULL;
}
