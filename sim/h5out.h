/* sim/h5out.h — writes a SimRecorder to HDF5 and reads datasets back as TSV.
 * The only file of the project that includes hdf5.h (DESIGN §2, §8).
 *
 * Layout (H5MD-style, documented in doc/hdf5-layout.md):
 *   /            attributes program, version, scenario (the resolved scenario text)
 *   /summary/<name>            scalar double dataset, attribute unit; text entries are
 *                              scalar variable-length string datasets
 *   /series/<path>/time        1-D double, unit "s" (change points)
 *   /series/<path>/value       1-D double, unit attribute of the series
 *   /tasks                     1-D compound table: id, rank, stream (enum), kind (enum), label
 *                              (fixed string), layer, micro_batch, start, end, flops, bytes;
 *                              attribute unit_start "s" etc.
 * Datasets of arrays are chunked and extendible, written in buffered blocks.
 * Output goes to "<path>.tmp.<pid>" and is renamed onto `path` only on success; on any
 * error the temporary file is removed and no file is left behind.
 */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "sim/recorder.h"

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

/* Writes `rec` with `meta` to `path` atomically (see above). FALSE + error on failure. */
gboolean sim_h5out_write (const char *path, const SimRecorder *rec, const SimH5Meta *meta,
                          GError **error);

/* Writes the object `object` (an HDF5 path such as "/summary", "/tasks",
 * "/series/rank0/memory/weights" or a group of series such as "/series/rank0/memory") of
 * file `path` as tab-separated text to `out`, with a header line naming the columns:
 *   - a series (group with time/value): "time\tvalue" rows;
 *   - a group whose children are series: "time\t<child1>\t<child2>..." over the union of
 *     change times, each column holding its series' value at that time (step function,
 *     0 before its first point), in the group's creation order;
 *   - /summary: "name\tvalue\tunit" rows;
 *   - a compound table: its fields as columns, enums as names.
 * Numbers are printed with %.17g so values round-trip. FALSE + error if absent/other type. */
gboolean sim_h5out_export_tsv (const char *path, const char *object, FILE *out, GError **error);
