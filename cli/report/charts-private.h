/* cli/report/charts-private.h — the TSV helpers shared by the planning charts: cli/report/charts.c (the
 * figures' data and rendering) uses them, cli/report/charts_tsv.c defines them. Not a public
 * header: nothing outside cli/charts*.c includes it.
 *
 * A Tsv is the text `stepsim export` prints split into a header line and rows of fields;
 * empty lines are skipped. Rows may be shorter than the header (missing fields read "").
 */
#pragma once

#include <glib.h>

typedef struct
{
  char **head;
  GPtrArray *rows; /* GStrv */
} Tsv;

void cli_tsv_free (Tsv *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Tsv, cli_tsv_free)

/* Splits `text` into lines and tab-separated fields; the first non-empty line is the header
 * (empty when there is none). Never NULL; free with cli_tsv_free(). */
Tsv *cli_tsv_parse (const char *text);
/* The index of column `name`, -1 if there is none. */
gint cli_tsv_col (const Tsv *t, const char *name);
/* Sets *col to the index of column `name`, or, for a name without a dot, of the one column
 * "GROUP.name" (a scenario key without its group: "micro_batch" for
 * "training.micro_batch"); FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming it, with the
 * nearest column as a hint and the list of columns, if there is none or the key is
 * ambiguous. */
gboolean cli_tsv_need_col (const Tsv *t, const char *name, gint *col, GError **error);
/* The text in (row, col); "" for a missing column or field. */
const char *cli_tsv_get (const Tsv *t, guint row, gint col);
/* The number in (row, col); NaN for a missing column or text. */
double cli_tsv_num (const Tsv *t, guint row, gint col);
/* Rows of a results table that ran (status "ok", or no status column: a run's summary). */
gboolean cli_tsv_row_ok (const Tsv *t, guint row);

/* Appends `v` with %.6g (NaN as 0). */
void cli_tsv_put_num (GString *s, double v);
/* Appends a label with tabs turned into spaces (it is one TSV field). */
void cli_tsv_put_label (GString *s, const char *label);
/* Sets G_KEY_FILE_ERROR_INVALID_VALUE "nothing to draw: <what>"; returns NULL. */
char *cli_charts_nothing_to_draw (GError **error, const char *what);
