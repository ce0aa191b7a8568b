/* cli/report/charts.h — planning charts (`stepsim plot KIND …`): the data of each figure as a small
 * TSV prepared from a run's or a batch's HDF5 file, drawn by plots/<figure>.gp.
 *
 * Every `cli_charts_*_data` function takes typed values read by cli/report/results_read.h —
 * a run's task rows (GArray of CliTask) or a results table (SimTable, sim/table.h: a batch's
 * /results, or a run's /summary as one row, cli_summary_as_row) — and returns the TSV the
 * figure's script reads, with values already in display units (GiB = 2^30 B, ms or s, %).
 * They are pure functions of their input, so they are tested on tables built in memory.
 * Errors are G_KEY_FILE_ERROR_INVALID_VALUE (a missing column, a non-numeric axis, nothing
 * to draw) naming the column.
 */
#pragma once

#include <glib.h>
#include "sim/table.h"

/* Figures drawn from a run's /tasks (CliTask rows; tasks of a stream or kind stepsim has not
 * are left out): a Gantt chart, one lane per (rank, stream) that has tasks, for the ranks listed in `ranks` (NULL-terminated indices as text, NULL for all).
 * Output columns: start, end (in *unit: "ms" for steps under 2 s, else "s"), lane, kind
 * (dense index into *kinds), lane name. *kinds: space-separated kind names (caller frees). */
char *cli_charts_gantt_data (const GArray *tasks, const char *const *ranks, char **kinds,
                             const char **unit, GError **error);

/* Memory breakdown across rows of a batch's /results (or a run's /summary as one row):
 * label, then GiB per memory category at the peak (peak_<category>, every category in the
 * ledger's order so colours agree between charts; the script hides all-zero ones), the
 * allocator's cache (peak_reserved − peak_allocated) and the CUDA context, so a bar's top
 * is device-used memory, then the row's GPU capacity (GiB; batches may mix GPUs). Rows that
 * ran out of memory (fits 0) get " (OOM)" after their label: their figures are what was
 * held when a request failed, a lower bound. Failed rows are left out. */
char *cli_charts_breakdown_data (const SimTable *results, GError **error);

/* Step-time breakdown (rank 0): label, forward, backward, recompute, optimizer, exposed
 * communication, exposed offload (offload_stall), pipeline bubble (a column a file written before
 * it lacks is 0, and the chart leaves all-zero parts out), and
 * step time, in *unit ("ms" when every step is under 2 s, else "s"). Rows out of memory get
 * " (OOM)" after their label: their times are the step as planned, which cannot run. */
char *cli_charts_steptime_data (const SimTable *results, const char **unit, GError **error);

/* The rows of a batch's results that no chart draws: status other than "ok" (the scenario
 * failed, or did not run before an interrupt). */
guint cli_charts_rows_not_drawn (const SimTable *results);

/* A sweep line chart: `y` against the numeric axis `x` (both must have numbers in rows that
 * ran: a text column is an error naming it; no row that ran is "nothing to draw"), one block (separated by two blank
 * lines, a header "x<TAB><by>=<value>" each) per value of `by` (NULL: one block titled `y`).
 * Rows sorted by x; failed rows left out; a `by` column of numbers groups by their shortest
 * exact text. The y column's unit gives the display unit ("B" → GiB, a fraction "1" of
 * mfu/hfu → %); *label gets the y axis label with it. When a row that ran is out of memory
 * each block has a third column "OOM" (1 on such points, else 0). */
char *cli_charts_sweep_data (const SimTable *results, const char *x, const char *y,
                             const char *by, char **label, GError **error);

/* Throughput penalty against the baseline: label, penalty (%). A row out of memory
 * (" (OOM)") or whose baseline is (baseline_fits 0: " (baseline OOM)") has penalty 0 and a
 * third column "note" says which ("OOM", "baseline OOM"; "-" on the other rows); the column
 * is there only when some row needs it. Error if the batch had no baseline. */
char *cli_charts_penalty_data (const SimTable *results, GError **error);

/* Cost against time to train (cli/report/charts_cost.c): for every row that ran, fits and has
 * train_time and train_cost (cli/report/training.h), in time order: time (in *time_unit, "hours"
 * when every run is shorter than two days, else "days"), cost, front (1 on the Pareto
 * front: cheaper than every row at least as fast), number (1, 2, … in this order), label,
 * and label_x, label_y (where plots/cost.gp puts the number: beside its point, clear of the
 * other points and numbers where it can be); then, after two blank lines, a second block of
 * the front's rows alone (same columns, label "-"). *caption: how many rows are drawn and
 * how many were left out (OOM, no price or plan, failed); caller frees. Error when no row
 * can be drawn or the columns are missing. */
char *cli_charts_cost_data (const SimTable *results, char **caption, const char **time_unit,
                            GError **error);

/* The x axis label of a sweep axis: the key with its unit when known
 * ("training.micro_batch (sequences)"). Caller frees. */
char *cli_charts_axis_label (const char *axis);

/* Directory of the gnuplot scripts: plots/ in the source tree, else $(pkgdatadir)/plots.
 * Static string. */
const char *cli_charts_dir (void);

/* Runs `gnuplot -c <plots dir>/<figure>.gp DATA OUT ARGS…` on `data` (written to a temporary
 * file) into a temporary output renamed onto `out_path` (.png or .svg, any case) only on
 * success. FALSE + error: one line naming `out_path` and gnuplot's message reduced by
 * cli_charts_gnuplot_error(); no partial chart is left. */
gboolean cli_charts_render (const char *figure, const char *data, const char *const *args,
                            const char *out_path, GError **error);

/* gnuplot's stderr reduced to one line: the last error line, as "SCRIPT.gp line N: MESSAGE"
 * (the script without its directory; warnings only when there is no error), else the last
 * non-empty line. Caller frees. */
char *cli_charts_gnuplot_error (const char *stderr_text);

/* Characters of a chart title's line (cli_charts_title): the canvas is 1100 px wide
 * (plots/style.gp), the title centred over the plot, which the key's column narrows; 11-pt
 * Helvetica sets about 6.5 px a character. */
#define CLI_CHART_TITLE_COLS 100

/* `title` broken at spaces into lines of at most CLI_CHART_TITLE_COLS characters (UTF-8
 * characters; a longer word stays whole on its own line), so gnuplot does not clip a long
 * title (a scenario name with its --set overrides) at the canvas edges. Caller frees. */
char *cli_charts_title (const char *title);

/* Whether `path` ends in .svg, ignoring case (else a chart is a PNG). */
gboolean cli_charts_path_is_svg (const char *path);
