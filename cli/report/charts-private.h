/* cli/report/charts-private.h — the helpers shared by the planning charts: cli/report/charts.c
 * and charts_cost.c (the figures' data) use them, cli/report/charts_table.c defines them. Not a
 * public header: nothing outside cli/report/charts*.c includes it.
 *
 * The charts read typed results tables (SimTable, sim/table.h: a batch's /results or a run's
 * /summary as one row, cli/report/results_read.h) and write the gnuplot data as TSV text.
 */
#pragma once

#include <glib.h>
#include "sim/table.h"

/* ---- reading a results table ---- */
/* The index of column `name`, -1 if there is none. */
gint cli_table_col (const SimTable *t, const char *name);
/* Sets *col to the index of column `name`, or, for a name without a dot, of the one column
 * "GROUP.name" (a scenario key without its group: "micro_batch" for
 * "training.micro_batch"); FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming it, with the
 * nearest column as a hint and the list of columns, if there is none or the key is
 * ambiguous. */
gboolean cli_table_need_col (const SimTable *t, const char *name, gint *col, GError **error);
/* The number in (row, col); NaN for a missing column (col < 0) or a text column. */
double cli_table_num (const SimTable *t, guint row, gint col);
/* The cell (row, col) as text: a text column's text, a number with the fewest digits that
 * read back exactly (sim_text_format_double), "" for a missing column. Caller frees. */
char *cli_table_text (const SimTable *t, guint row, gint col);
/* Rows of a results table that ran (status "ok", or no status column: a run's summary). */
gboolean cli_table_row_ok (const SimTable *t, guint row);
/* Whether a row that ran is out of memory: its "fits" is 0 (no such column: FALSE). */
gboolean cli_table_row_oom (const SimTable *t, guint row);

/* ---- writing the gnuplot data ---- */
/* Appends `v` with %.6g (NaN as 0). */
void cli_tsv_put_num (GString *s, double v);
/* Appends a label with tabs and newlines turned into spaces (it is one TSV field). */
void cli_tsv_put_label (GString *s, const char *label);
/* Sets G_KEY_FILE_ERROR_INVALID_VALUE "nothing to draw: <what>"; returns NULL. */
char *cli_charts_nothing_to_draw (GError **error, const char *what);
