/* cli/report/results_read.h — the one typed reader of stepsim's result files for the charts
 * (`stepsim plot`, `stepsim run --plot`, cli/report/charts.h and plot.h): a run's /summary,
 * /tasks and memory timelines, a batch's /results, as C values read through the typed reads of
 * sim/h5out.h (guarded child process, every size checked; doc/hdf5-layout.md). Nothing here
 * parses text: the charts get numbers and names, and write their gnuplot data from them.
 *
 * Errors name the file and the object (and the entry or field): SIM_H5OUT_ERROR_NOT_FOUND
 * for a missing object ("run.h5: /tasks: no such object") or entry ("run.h5:
 * /summary/capacity: no such entry"), SIM_H5OUT_ERROR_FORMAT for one of another type
 * ("run.h5: /tasks: field 'kind' holds numbers, not names") or a missing table field,
 * SIM_H5OUT_ERROR_IO for a file that is not HDF5.
 */
#pragma once

#include <glib.h>
#include "sim/h5out.h"
#include "sim/recorder.h"
#include "sim/table.h"

/* ---- /summary ----------------------------------------------------------------------------- */

typedef struct
{
  char *file;         /* the file read (for messages) */
  GPtrArray *entries; /* SimSummaryEntry (sim/recorder.h), in recorded order */
} CliSummary;

/* The /summary of the run file `h5`; caller frees. NULL + error (_NOT_FOUND without one). */
CliSummary *cli_read_summary (const char *h5, GError **error);
void cli_summary_free (CliSummary *s); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliSummary, cli_summary_free)

/* The entry `name` ("capacity", "ranks/rank0/device_used"), borrowed; NULL when absent. */
const SimSummaryEntry *cli_summary_find (const CliSummary *s, const char *name);
/* Sets *value to the scalar `name` (in its unit, SI). FALSE + error "FILE: /summary/NAME: no
 * such entry" (_NOT_FOUND) or "…: a text, not a number" (_FORMAT). */
gboolean cli_summary_number (const CliSummary *s, const char *name, double *value,
                             GError **error);
/* The text entry `name`, borrowed; NULL + error as cli_summary_number ("…: a number, not a
 * text"). */
const char *cli_summary_text (const CliSummary *s, const char *name, GError **error);
/* The number of ranks the run recorded: its ranks/rank<r>/device_used entries (0 when none). */
guint cli_summary_n_ranks (const CliSummary *s);
/* Why rank `rank` has no series when the run replayed rank classes (models/plan/
 * rank_classes.h: only each class's representative is replayed and recorded): "FILE
 * replayed R of its N ranks, one for each class …", newly allocated; NULL when the rank was
 * replayed, is out of range, or the run replayed every rank. */
char *cli_summary_folded_rank (const CliSummary *s, guint rank);
/* The summary as a one-row results table: a text column "label" holding the scenario's name
 * (the "scenario" entry, else "scenario"), then one column per entry in recorded order
 * (scalars as double columns with their units, texts as text columns). Caller frees. */
SimTable *cli_summary_as_row (const CliSummary *s);

/* ---- /tasks ------------------------------------------------------------------------------- */

/* One row of /tasks (doc/hdf5-layout.md). */
typedef struct
{
  guint32 id, rank;       /* task id, global GPU index */
  gint stream, kind;      /* indices into model_sim_stream_names () and model_sim_kind_names ()
                           * (models/plan/simulate.h); -1 for a name stepsim has not */
  char *label;            /* owned by the array */
  gint32 layer;           /* -1: not a layer task */
  gint32 micro_batch;     /* -1: not per micro-batch */
  double start, end;      /* s */
  double flops, bytes;    /* FLOP, B */
} CliTask;

/* The /tasks table of the run file `h5`: a GArray of CliTask in recorded order that frees the
 * labels; caller unrefs. NULL + error: _NOT_FOUND without /tasks; _FORMAT when a field of the
 * layout is missing ("no field 'kind'"), has the other type (stream and kind must be enums,
 * label a string, the others numbers), or an id, rank, layer or micro-batch is not an integer
 * of its range (naming the field and row). */
GArray *cli_read_tasks (const char *h5, GError **error);

/* ---- results rows ------------------------------------------------------------------------- */

typedef struct
{
  char *file;      /* the file read */
  char *object;    /* "/results" (a batch) or "/summary" (a run, as one row) */
  char *name;      /* for titles: the batch's name attribute (else the file's name), or the
                    * run's scenario */
  SimTable *table; /* one row per scenario; see doc/hdf5-layout.md, "Batch files" */
} CliResults;

/* A batch file's /results, else (unless `batch_only`) a run file's /summary as one row
 * (cli_summary_as_row). Caller frees. NULL + error: with `batch_only`, a file without
 * /results is "FILE: not a batch file (no /results): …" (_NOT_FOUND). */
CliResults *cli_read_results (const char *h5, gboolean batch_only, GError **error);
void cli_results_free (CliResults *r); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliResults, cli_results_free)

/* ---- series ------------------------------------------------------------------------------- */

/* /series/rank<rank>/memory of the run file `h5`: bytes per ledger category (names as the
 * file has them, in its order) over the union of their change times (s). Caller frees. NULL +
 * error (_NOT_FOUND when the run has no such rank or series). */
SimH5Timeline *cli_read_memory (const char *h5, guint rank, GError **error);
