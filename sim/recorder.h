/* sim/recorder.h — what a run records: piecewise-constant series, task records, a
 * summary of named scalars and further named tables (sim/table.h, e.g. the kernel time per
 * op). Pure data; sim/h5out.c writes it to HDF5 (DESIGN §8).
 *
 * Series are identified by a slash path below /series (e.g. "rank0/memory/activations") and
 * store change points only: setting a value equal to the last one adds nothing; setting a
 * value at the same time as the last point replaces that point's value (so a series holds
 * at most one point per time), and if the replacement equals the point before it, the last
 * point is dropped (an alloc and a free at the same instant leave no trace). The first point
 * of a series is always kept, even when its value is 0. Times must be non-decreasing per
 * series (an earlier time is API misuse: g_critical, ignored).
 * Iteration order is creation order (determinism, DESIGN §6); lookup by path uses a
 * GHashTable that is never iterated.
 */
#pragma once

#include <glib.h>
#include "sim/table.h"

typedef struct _SimRecorder SimRecorder;

/* One row of the /tasks table. Strings are copied by sim_recorder_add_task(). */
typedef struct
{
  guint32 id;
  guint32 rank;
  guint32 stream;      /* index into the caller's stream names */
  guint32 kind;        /* index into the caller's kind names (an HDF5 enum) */
  const char *label;   /* e.g. "fwd L3 mb0"; at most SIM_TASK_LABEL_MAX-1 bytes kept */
  gint32 layer;        /* -1 when not a layer task */
  gint32 micro_batch;  /* -1 when not per micro-batch */
  double start, end;   /* s */
  double flops;        /* FLOP */
  double bytes;        /* B moved (HBM traffic for kernels, payload for transfers) */
} SimTaskRecord;

#define SIM_TASK_LABEL_MAX 48

/* One summary entry: a scalar with its unit ("" for dimensionless, "1" for ratios) or text. */
typedef struct
{
  char *name;
  char *unit;  /* NULL for text entries */
  double value;
  char *text;  /* NULL for scalar entries */
} SimSummaryEntry;

SimRecorder *sim_recorder_new (void);
void sim_recorder_free (SimRecorder *rec); /* NULL is a no-op */

/* Returns the id of the series at `path` (created with `unit` if new; unit copied; NULL
 * unit means ""). Ids are 0, 1, 2... in creation order. `path` is one or more non-empty
 * components separated by single slashes, none "." or ".."; an invalid path returns
 * G_MAXUINT (API misuse). Creating an existing path with a different unit is API misuse
 * (g_critical; the existing id is returned). */
guint sim_recorder_series (SimRecorder *rec, const char *path, const char *unit);

/* Records value (in the series' unit) from `time` (s) on. */
void sim_recorder_set (SimRecorder *rec, guint series, double time, double value);

/* Adds delta to the series' current value (0 if empty) at `time`. */
void sim_recorder_add (SimRecorder *rec, guint series, double time, double delta);

guint sim_recorder_n_series (const SimRecorder *rec);
const char *sim_recorder_series_path (const SimRecorder *rec, guint series);
const char *sim_recorder_series_unit (const SimRecorder *rec, guint series);
/* Points of a series: times (s) and values, both arrays of n_points doubles, borrowed. */
guint sim_recorder_series_points (const SimRecorder *rec, guint series, const double **times,
                                  const double **values);
/* Last value (0 if empty) and maximum value (0 if empty). */
double sim_recorder_series_last (const SimRecorder *rec, guint series);
double sim_recorder_series_max (const SimRecorder *rec, guint series);

/* Appends a task record (label copied/truncated). */
void sim_recorder_add_task (SimRecorder *rec, const SimTaskRecord *task);
guint sim_recorder_n_tasks (const SimRecorder *rec);
/* The i-th task record; its label is owned by the recorder. */
const SimTaskRecord *sim_recorder_task (const SimRecorder *rec, guint i);

/* Summary scalars and texts, kept in insertion order; a name set twice is replaced in place
 * (keeping its first position; a scalar may become text and back). Strings are copied; a
 * NULL unit means "". A '/' in a name nests it in groups below /summary in the HDF5 file.
 * A scalar in unit "B" is stored whole: within 1e-12 (relative) of a whole number that
 * number, else rounded up. */
void sim_recorder_summary_scalar (SimRecorder *rec, const char *name, double value,
                                  const char *unit);
void sim_recorder_summary_text (SimRecorder *rec, const char *name, const char *text);
guint sim_recorder_n_summary (const SimRecorder *rec);
const SimSummaryEntry *sim_recorder_summary_entry (const SimRecorder *rec, guint i);
/* Looks a scalar up by name; FALSE if absent or text. */
gboolean sim_recorder_summary_get (const SimRecorder *rec, const char *name, double *value);
/* From now on records only the summary entries whose names are keys of `names` (a set of
 * NUL-terminated names, g_str_hash/g_str_equal; borrowed: it must outlive `rec` and stay
 * unchanged while `rec` records; only looked up, so one set may serve recorders of several
 * threads): sim_recorder_summary_scalar and _text with another name record nothing. NULL
 * records every name (a new recorder's default). For a caller that reads a few entries back
 * by name (the batch table, cli/study/batch.c): a report's whole summary cost it ~5 % of a
 * sweep (bench/RESULTS.md, 2026-12-07, h-load2). */
void sim_recorder_summary_keep (SimRecorder *rec, GHashTable *names);

/* Adds the table `table` (ownership taken) as dataset /`name` of the run file (a 1-D
 * compound table, sim_h5out_write_table's layout). `name` is one path component (letters,
 * digits, '_'; not "summary", "series" or "tasks"); an invalid or repeated name is API
 * misuse (g_critical; the table is freed). Tables keep their insertion order. */
void sim_recorder_add_table (SimRecorder *rec, const char *name, SimTable *table);
guint sim_recorder_n_tables (const SimRecorder *rec);
/* The i-th table (borrowed) and its name (borrowed, may be NULL). */
const SimTable *sim_recorder_table (const SimRecorder *rec, guint i, const char **name);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimRecorder, sim_recorder_free)
