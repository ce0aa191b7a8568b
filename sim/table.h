/* sim/table.h — an in-memory results table: named columns of doubles (with a unit) or
 * texts, rows appended one at a time. The batch runner fills one row per scenario;
 * sim/h5out_table.c writes it to HDF5, sim_table_write_text() to TSV or CSV.
 *
 * Invariants: column names are unique; every row has a value in every column (a double
 * column starts at NaN, "no value", a text column at ""). Order is insertion order for both
 * columns and rows (determinism, DESIGN §6); the name lookup uses a GHashTable that is never
 * iterated. Units are strings as in the HDF5 files ("s", "B", "token/s", "1", "%", "").
 */
#pragma once

#include <glib.h>
#include <stdio.h>

typedef enum
{
  SIM_TABLE_DOUBLE,
  SIM_TABLE_TEXT,
} SimTableKind;

typedef struct _SimTable SimTable;

SimTable *sim_table_new (void);
void sim_table_free (SimTable *t); /* NULL is a no-op */

/* Adds a column (name and unit copied; NULL unit means ""); returns its index. Columns can
 * be added while rows exist (they get NaN or ""). A duplicate or empty name is API misuse
 * (g_critical, G_MAXUINT). Names must not contain tab, newline or comma. */
guint sim_table_add_column (SimTable *t, const char *name, SimTableKind kind, const char *unit);
/* Appends a row of NaN / "" and returns its index. */
guint sim_table_add_row (SimTable *t);

/* Setting a value of the wrong kind, or outside the table, is API misuse (g_critical). */
void sim_table_set_double (SimTable *t, guint row, guint col, double value);
void sim_table_set_text (SimTable *t, guint row, guint col, const char *text); /* copied */

guint sim_table_n_rows (const SimTable *t);
guint sim_table_n_columns (const SimTable *t);
const char *sim_table_column_name (const SimTable *t, guint col);
SimTableKind sim_table_column_kind (const SimTable *t, guint col);
const char *sim_table_column_unit (const SimTable *t, guint col);
/* Index of the column `name`, or G_MAXUINT. */
guint sim_table_find_column (const SimTable *t, const char *name);
double sim_table_get_double (const SimTable *t, guint row, guint col);
const char *sim_table_get_text (const SimTable *t, guint row, guint col); /* borrowed */

/* Writes the table as text to `out`: a header line of column names, then one line per row,
 * fields separated by `sep` ('\t' or ','). Numbers with %.17g (locale-independent; NaN as
 * "nan"), so they read back exactly. With '\t', texts have \\ \t \n \r escaped as in
 * `stepsim export` (a TSV written here equals the export of the HDF5 table); with ',' a
 * text containing a comma, quote, CR or LF is quoted RFC 4180-style ("" for a quote).
 * FALSE + G_FILE_ERROR_IO on a write error. */
gboolean sim_table_write_text (const SimTable *t, FILE *out, char sep, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimTable, sim_table_free)
