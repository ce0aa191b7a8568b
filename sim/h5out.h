/* sim/h5out.h — writes a SimRecorder to HDF5 and reads datasets back as TSV.
 * Implemented by sim/h5out.c (writer) on sim/h5out_writer.c (primitives),
 * sim/h5out_export.c and sim/h5out_series.c (export), sim/h5out_read.c (typed reads) and
 * sim/h5out_table.c (tables); only
 * sim/h5out*.c include hdf5.h
 * (DESIGN §2, §8).
 *
 * Layout (H5MD-style, documented in doc/hdf5-layout.md):
 *   /            attributes program, version, scenario (the resolved scenario text)
 *   /summary                   1-D compound table, a row per summary entry: name, kind (enum
 *                              number | text), value, unit, text
 *   /series/index              1-D compound table, a row per series: path, unit, first, count
 *   /series/time, /series/value  1-D double: every series' change points, series after series
 *                              (time unit "s"; value units in the index)
 *   /tasks                     1-D compound table: id, rank, stream (enum), kind (enum), label
 *                              (fixed string), layer, micro_batch, start, end, flops, bytes;
 *                              attribute unit_start "s" etc.
 *   /<name>                    each further table of the recorder (sim_recorder_add_table),
 *                              e.g. /ops, in sim_h5out_write_table's layout
 * Seven objects and the recorder's tables, whatever the ranks and series; the export and
 * typed reads give /series/<path> and /summary/<name> as views of the tables (and read
 * files of the former layout, one group per series and one dataset per summary entry, as
 * before).
 * Datasets of arrays are chunked and extendible, written in buffered blocks.
 * Output goes to "<path>.tmp.<pid>" (registered in sim/tempfiles.h, so an interrupted
 * process removes it) and is renamed onto `path` only on success; on any
 * error the temporary file is removed and no file is left behind.
 */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "sim/recorder.h"
#include "sim/table.h"

#define SIM_H5OUT_ERROR (sim_h5out_error_quark ())
GQuark sim_h5out_error_quark (void);

typedef enum
{
  SIM_H5OUT_ERROR_IO,        /* could not create/write/rename/open */
  SIM_H5OUT_ERROR_NOT_FOUND, /* dataset or group missing */
  SIM_H5OUT_ERROR_FORMAT,    /* object of an unexpected type */
} SimH5outError;

/* Metadata stored as root attributes, and the enum names of the /tasks table. */
typedef struct
{
  const char *program;          /* "stepsim" */
  const char *version;          /* PACKAGE_VERSION */
  const char *scenario_text;    /* resolved scenario (may be "") */
  const char *const *kind_names;   /* names of SimTaskRecord.kind values, n_kind_names */
  guint n_kind_names;
  const char *const *stream_names; /* names of SimTaskRecord.stream values */
  guint n_stream_names;
} SimH5Meta;

/* Writes `rec` with `meta` to `path` atomically (see above). `meta` may be NULL (program
 * "stepsim", version PACKAGE_VERSION, empty scenario, no enum names). With no kind (stream)
 * names the column is a plain u32; with names, every task's kind (stream) must be below
 * n_kind_names (n_stream_names). FALSE + SIM_H5OUT_ERROR (IO for create/write/close/rename,
 * FORMAT for a task value without a name or duplicate enum names), message naming `path`. */
gboolean sim_h5out_write (const char *path, const SimRecorder *rec, const SimH5Meta *meta,
                          GError **error);

/* Writes the object `object` of file `path` as tab-separated text to `out`, with a header
 * line naming the columns. `object` is an HDF5 path ("/tasks", "/series/index") or a view
 * of the layout's tables (doc/hdf5-layout.md):
 *   - "/series/<p>": the series whose path is <p> as "time\tvalue" rows; else every series
 *     whose path begins with "<p>/" ("/series": all), one column each named by its path
 *     relative to <p>, over the union of their change times (step functions, 0 before their
 *     first point), in index order;
 *   - "/summary": "name\tvalue\tunit" rows; "/summary/<p>": the entries below <p>, named
 *     relative to it, or the one entry <p> as a "value" column;
 *   - a compound table: its fields as columns, enums as names;
 *   - any other numeric dataset: a "value" header and one number per line; a string
 *     dataset: a "value" header and the text.
 * A file of the former layout exports the same paths from its groups (a group of series:
 * every series below it, depth first in creation order).
 * Numbers are printed with %.17g (locale-independent) so values round-trip; texts have
 * backslash, tab, newline and CR escaped as \\ \t \n \r so each row stays one line.
 * Errors: SIM_H5OUT_ERROR_IO (file missing or not HDF5, write error on `out`), _NOT_FOUND
 * (object absent), _FORMAT (an object of an unexpected type, or one that does not match the
 * documented layout: a count or size larger than the file, a string dataspace of several
 * elements, times not increasing, a soft or external link, groups nested more than 16 deep).
 * The file is read in a child process (sim/h5out_guard.c): when libhdf5 itself crashes on
 * corrupt metadata, or the read runs past its deadline (10 s + 2 s per MiB), that is a
 * _FORMAT error naming the file and object. Nothing is written to `out` unless the whole
 * export succeeded. */
gboolean sim_h5out_export_tsv (const char *path, const char *object, FILE *out, GError **error);
/* The same read in this process, writing to `out` as it goes (output before an error stays):
 * for the fuzz harness (tests/fuzz/fuzz_h5.c), which must see the reader's own faults. A
 * corrupt file can crash libhdf5 here (doc/hdf5-layout.md, "Reading damaged files"). */
gboolean sim_h5out_export_tsv_in_process (const char *path, const char *object, FILE *out,
                                          GError **error);

/* Reads the string attribute `name` of the object `object` ("/" for the root, e.g.
 * "scenario" or "version"; "/series/time" and "unit") of file `path`.
 * Returns a newly allocated UTF-8 string (caller frees), or NULL + SIM_H5OUT_ERROR_IO (file
 * not readable as HDF5), _NOT_FOUND (object or attribute absent) or _FORMAT (not a string;
 * libhdf5 crashed or the read ran past its deadline: read in a child process like
 * sim_h5out_export_tsv). */
char *sim_h5out_read_text_attr (const char *path, const char *object, const char *name,
                                GError **error);
/* The same read in this process (see sim_h5out_export_tsv_in_process). */
char *sim_h5out_read_text_attr_in_process (const char *path, const char *object,
                                           const char *name, GError **error);

/* Writes `table` to a new HDF5 file `path` atomically (as sim_h5out_write): the root gets
 * the string attributes of `root_attrs` (NULL-terminated list of name, value pairs; may be
 * NULL), and `dataset` (an absolute path such as "/results"; missing groups are created) a
 * 1-D compound table, one member per column in column order: float64 for double columns
 * (NaN for "no value"), variable-length UTF-8 strings for text columns; attribute
 * "unit_<column>" for each double column. Layout in doc/hdf5-layout.md ("Batch files").
 * `sim_h5out_export_tsv (path, dataset, …)` prints it back exactly as
 * sim_table_write_text (table, …, '\t') does. FALSE + SIM_H5OUT_ERROR_IO (create, write,
 * rename) or _FORMAT, message naming `path`; no file is left behind. */
gboolean sim_h5out_write_table (const char *path, const char *dataset, const SimTable *table,
                                const char *const *root_attrs, GError **error);

/* ---- typed reads (sim/h5out_read.c) ------------------------------------------------------
 * The objects of a file as C values, for stepsim's own readers (the charts,
 * cli/report/results_read.h), so nothing has to parse the TSV export back. Each read runs in
 * a child process like sim_h5out_export_tsv (sim/h5out_guard.c) and checks the file as
 * that does (doc/hdf5-layout.md, "Reading damaged files"); its answer comes back as a
 * serialized GVariant, checked for its type. Errors: SIM_H5OUT_ERROR_IO (file missing or not
 * HDF5), _NOT_FOUND (object absent: "PATH: OBJECT: no such object"), _FORMAT (an object of
 * another kind or type, damaged or over a bound), each message naming the file and object. */

/* The series of a group sampled over the union of their change times (what the export of a
 * group of series prints, as numbers). */
typedef struct
{
  GArray *time;      /* double, s: the union of the change times, strictly increasing */
  GPtrArray *names;  /* char *: each series' path relative to the group read ("weights",
                      * "memory/weights"); "value" when the group read is one series */
  GPtrArray *values; /* GArray of double per name, time->len each: the series' value at
                      * time[i] (a step function: its last point at or before, 0 before any) */
} SimH5Timeline;

SimH5Timeline *sim_h5_timeline_new (void); /* empty; free with sim_h5_timeline_free */
void sim_h5_timeline_free (SimH5Timeline *t); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimH5Timeline, sim_h5_timeline_free)

/* The entries of /summary of the run file `path`, in recorded order (creation order), names
 * relative to /summary ("ranks/rank0/peak_allocated"): scalars with `unit` (the unit
 * attribute, "" when it has none) and `value`, texts with `text` (unit NULL). A
 * GPtrArray of SimSummaryEntry (sim/recorder.h) that frees them; caller unrefs. NULL + error
 * (_NOT_FOUND when the file has no /summary). */
GPtrArray *sim_h5out_read_summary (const char *path, GError **error);

/* The 1-D compound dataset `object` ("/tasks", "/results") of `path` as a table, one column
 * per field in file order: integer and float fields as SIM_TABLE_DOUBLE columns (unit: the
 * dataset's "unit_<field>" attribute, "" without one), enums (by member name; a value
 * without a name as its number) and strings as SIM_TABLE_TEXT columns. Caller frees. NULL +
 * error: _NOT_FOUND, _FORMAT (not a 1-D compound table, a field of another type, a field
 * name a SimTable cannot hold: empty, or with a tab, newline or comma). */
SimTable *sim_h5out_read_table (const char *path, const char *object, GError **error);

/* The series `group` names ("/series/rank0/memory"; a single series too) of `path`, as
 * sim_h5out_export_tsv lists them (every series below the prefix, in index order). Caller frees. NULL + error: _NOT_FOUND, _FORMAT (no series below the group, times
 * not increasing, …). */
SimH5Timeline *sim_h5out_read_timeline (const char *path, const char *group, GError **error);
