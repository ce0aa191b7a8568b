/* sim/table.c — the in-memory results table; see table.h.
 *
 * Storage is column-major: each column is a GArray of doubles or a GPtrArray of owned
 * strings, all of n_rows elements.
 */
#include "config.h"
#include "sim/text.h"
#include "sim/table.h"

#include <errno.h>
#include <math.h>
#include <string.h>

typedef struct
{
  char *name;
  char *unit;
  SimTableKind kind;
  GArray *doubles;  /* SIM_TABLE_DOUBLE */
  GPtrArray *texts; /* SIM_TABLE_TEXT, owned strings */
} Column;

struct _SimTable
{
  GPtrArray *columns; /* Column *, insertion order */
  GHashTable *by_name; /* name → index + 1; lookup only, never iterated */
  guint n_rows;
};

static void
column_free (gpointer p)
{
  Column *c = p;
  g_free (c->name);
  g_free (c->unit);
  if (c->doubles != NULL)
    g_array_unref (c->doubles);
  if (c->texts != NULL)
    g_ptr_array_unref (c->texts);
  g_free (c);
}

SimTable *
sim_table_new (void)
{
  SimTable *t = g_new0 (SimTable, 1);
  t->columns = g_ptr_array_new_with_free_func (column_free);
  t->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  return t;
}

void
sim_table_free (SimTable *t)
{
  if (t == NULL)
    return;
  g_hash_table_unref (t->by_name);
  g_ptr_array_unref (t->columns);
  g_free (t);
}

/* Grows column `c` to n rows with NaN or "". */
static void
column_fill (Column *c, guint n)
{
  const double nan = NAN;
  if (c->kind == SIM_TABLE_DOUBLE)
    while (c->doubles->len < n)
      g_array_append_val (c->doubles, nan);
  else
    while (c->texts->len < n)
      g_ptr_array_add (c->texts, g_strdup (""));
}

guint
sim_table_add_column (SimTable *t, const char *name, SimTableKind kind, const char *unit)
{
  g_return_val_if_fail (t != NULL && name != NULL && name[0] != '\0', G_MAXUINT);
  g_return_val_if_fail (strpbrk (name, "\t\n\r,") == NULL, G_MAXUINT);
  g_return_val_if_fail (!g_hash_table_contains (t->by_name, name), G_MAXUINT);
  Column *c = g_new0 (Column, 1);
  c->name = g_strdup (name);
  c->unit = g_strdup (unit != NULL ? unit : "");
  c->kind = kind;
  if (kind == SIM_TABLE_DOUBLE)
    c->doubles = g_array_new (FALSE, FALSE, sizeof (double));
  else
    c->texts = g_ptr_array_new_with_free_func (g_free);
  column_fill (c, t->n_rows);
  g_ptr_array_add (t->columns, c);
  g_hash_table_insert (t->by_name, c->name, GUINT_TO_POINTER (t->columns->len));
  return t->columns->len - 1;
}

guint
sim_table_add_row (SimTable *t)
{
  g_return_val_if_fail (t != NULL, G_MAXUINT);
  t->n_rows++;
  for (guint i = 0; i < t->columns->len; i++)
    column_fill (g_ptr_array_index (t->columns, i), t->n_rows);
  return t->n_rows - 1;
}

static Column *
cell_column (const SimTable *t, guint row, guint col, SimTableKind kind)
{
  g_return_val_if_fail (t != NULL && row < t->n_rows && col < t->columns->len, NULL);
  Column *c = g_ptr_array_index (t->columns, col);
  g_return_val_if_fail (c->kind == kind, NULL);
  return c;
}

void
sim_table_set_double (SimTable *t, guint row, guint col, double value)
{
  Column *c = cell_column (t, row, col, SIM_TABLE_DOUBLE);
  if (c != NULL)
    g_array_index (c->doubles, double, row) = value;
}

void
sim_table_set_text (SimTable *t, guint row, guint col, const char *text)
{
  Column *c = cell_column (t, row, col, SIM_TABLE_TEXT);
  if (c == NULL)
    return;
  g_free (g_ptr_array_index (c->texts, row));
  g_ptr_array_index (c->texts, row) = g_strdup (text != NULL ? text : "");
}

guint
sim_table_n_rows (const SimTable *t)
{
  return t->n_rows;
}

guint
sim_table_n_columns (const SimTable *t)
{
  return t->columns->len;
}

static const Column *
column_at (const SimTable *t, guint col)
{
  g_return_val_if_fail (t != NULL && col < t->columns->len, NULL);
  return g_ptr_array_index (t->columns, col);
}

const char *
sim_table_column_name (const SimTable *t, guint col)
{
  const Column *c = column_at (t, col);
  return c != NULL ? c->name : NULL;
}

SimTableKind
sim_table_column_kind (const SimTable *t, guint col)
{
  const Column *c = column_at (t, col);
  return c != NULL ? c->kind : SIM_TABLE_DOUBLE;
}

const char *
sim_table_column_unit (const SimTable *t, guint col)
{
  const Column *c = column_at (t, col);
  return c != NULL ? c->unit : NULL;
}

guint
sim_table_find_column (const SimTable *t, const char *name)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (t->by_name, name));
  return i == 0 ? G_MAXUINT : i - 1;
}

double
sim_table_get_double (const SimTable *t, guint row, guint col)
{
  const Column *c = cell_column (t, row, col, SIM_TABLE_DOUBLE);
  return c != NULL ? g_array_index (c->doubles, double, row) : NAN;
}

const char *
sim_table_get_text (const SimTable *t, guint row, guint col)
{
  const Column *c = cell_column (t, row, col, SIM_TABLE_TEXT);
  return c != NULL ? g_ptr_array_index (c->texts, row) : NULL;
}

/* ---- text output ------------------------------------------------------------------------- */

static void
put_text (FILE *out, const char *s, char sep)
{
  if (sep != '\t')
    {
      if (strpbrk (s, ",\"\r\n") == NULL)
        {
          fputs (s, out);
          return;
        }
      fputc ('"', out);
      for (const char *p = s; *p != '\0'; p++)
        {
          if (*p == '"')
            fputc ('"', out);
          fputc (*p, out);
        }
      fputc ('"', out);
      return;
    }
  for (const char *p = s; *p != '\0'; p++)
    switch (*p)
      {
      case '\\': fputs ("\\\\", out); break;
      case '\t': fputs ("\\t", out); break;
      case '\n': fputs ("\\n", out); break;
      case '\r': fputs ("\\r", out); break;
      default: fputc (*p, out); break;
      }
}

gboolean
sim_table_write_text (const SimTable *t, FILE *out, char sep, GError **error)
{
  g_return_val_if_fail (t != NULL && out != NULL, FALSE);
  for (guint c = 0; c < t->columns->len; c++)
    {
      if (c > 0)
        fputc (sep, out);
      fputs (sim_table_column_name (t, c), out);
    }
  fputc ('\n', out);
  for (guint r = 0; r < t->n_rows; r++)
    {
      for (guint c = 0; c < t->columns->len; c++)
        {
          const Column *col = g_ptr_array_index (t->columns, c);
          char buf[G_ASCII_DTOSTR_BUF_SIZE];
          if (c > 0)
            fputc (sep, out);
          if (col->kind == SIM_TABLE_TEXT)
            put_text (out, g_ptr_array_index (col->texts, r), sep);
          else
            fputs (sim_text_format_double (buf, g_array_index (col->doubles, double, r)), out);
        }
      fputc ('\n', out);
    }
  if (fflush (out) != 0 || ferror (out))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO, "write error: %s", g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}
