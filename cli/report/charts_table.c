/* cli/report/charts_table.c — the helpers every planning chart of cli/report/charts.c and
 * charts_cost.c shares: looking up columns, numbers and texts of a typed results table
 * (sim/table.h, read by cli/report/results_read.h), and printing numbers and labels of the
 * gnuplot data. See charts-private.h.
 *
 * Output numbers use %.6g (display precision).
 */
#include "config.h"
#include "cli/report/charts-private.h"
#include "cli/report/charts.h"
#include "sim/text.h"

#include <math.h>
#include <string.h>

/* ---- results tables in ---------------------------------------------------------------------- */

gint
cli_table_col (const SimTable *t, const char *name)
{
  guint c = sim_table_find_column (t, name);
  return c == G_MAXUINT ? -1 : (gint) c;
}

/* The one column named "GROUP.<name>" (a scenario key given without its group), or -1
 * when none or several are. */
static gint
col_by_key (const SimTable *t, const char *name)
{
  g_autofree char *suffix = g_strconcat (".", name, NULL);
  gint found = -1;
  for (guint i = 0; i < sim_table_n_columns (t); i++)
    if (g_str_has_suffix (sim_table_column_name (t, i), suffix))
      {
        if (found >= 0)
          return -1;
        found = (gint) i;
      }
  return found;
}

gboolean
cli_table_need_col (const SimTable *t, const char *name, gint *col, GError **error)
{
  *col = cli_table_col (t, name);
  if (*col < 0 && strchr (name, '.') == NULL)
    *col = col_by_key (t, name);
  if (*col >= 0)
    return TRUE;
  /* Hint among the names as they may be given: keys without their group for a name
   * without a dot. */
  g_autoptr (GPtrArray) cands = g_ptr_array_new ();
  g_autoptr (GString) names = g_string_new (NULL);
  for (guint i = 0; i < sim_table_n_columns (t); i++)
    {
      const char *head = sim_table_column_name (t, i), *dot = strrchr (head, '.');
      g_ptr_array_add (cands, strchr (name, '.') == NULL && dot ? (char *) dot + 1 : (char *) head);
      g_string_append_printf (names, "%s%s", i > 0 ? ", " : "", head);
    }
  g_ptr_array_add (cands, NULL);
  char *msg = g_strdup_printf ("no column '%s' in the data", name);
  msg = sim_text_with_hint (msg, name, (const char *const *) cands->pdata);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s (columns: %s)", msg,
               names->str);
  g_free (msg);
  return FALSE;
}

double
cli_table_num (const SimTable *t, guint row, gint col)
{
  if (col < 0 || sim_table_column_kind (t, (guint) col) != SIM_TABLE_DOUBLE)
    return NAN;
  return sim_table_get_double (t, row, (guint) col);
}

char *
cli_table_text (const SimTable *t, guint row, gint col)
{
  if (col < 0)
    return g_strdup ("");
  if (sim_table_column_kind (t, (guint) col) == SIM_TABLE_TEXT)
    return g_strdup (sim_table_get_text (t, row, (guint) col));
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup (sim_text_format_double (buf, sim_table_get_double (t, row, (guint) col)));
}

gboolean
cli_table_row_ok (const SimTable *t, guint row)
{
  gint s = cli_table_col (t, "status");
  return s < 0 || sim_table_column_kind (t, (guint) s) != SIM_TABLE_TEXT
         || strcmp (sim_table_get_text (t, row, (guint) s), "ok") == 0;
}

guint
cli_charts_rows_not_drawn (const SimTable *t)
{
  guint n = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    n += !cli_table_row_ok (t, r);
  return n;
}

gboolean
cli_table_row_oom (const SimTable *t, guint row)
{
  return cli_table_num (t, row, cli_table_col (t, "fits")) == 0;
}

/* ---- TSV out ------------------------------------------------------------------------------ */

void
cli_tsv_put_num (GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append (s, g_ascii_formatd (buf, sizeof buf, "%.6g", isnan (v) ? 0.0 : v));
}

/* A label with tabs and line breaks turned into spaces (it is one TSV field). */
void
cli_tsv_put_label (GString *s, const char *label)
{
  for (const char *p = label; *p != '\0'; p++)
    g_string_append_c (s, *p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p);
}

char *
cli_charts_nothing_to_draw (GError **error, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "nothing to draw: %s", what);
  return NULL;
}
