/* cli/report/trace.h — a simulated step as a Chrome / Perfetto trace-event JSON file, to open in
 * ui.perfetto.dev or chrome://tracing (`stepsim run --trace OUT.json`).
 *
 * Format (Trace Event Format, Google, "JSON Object Format"): {"traceEvents": [...],
 * "displayTimeUnit": "ms", "otherData": {...}}. One process per rank ("pid" = rank, named
 * "rank R" by a "process_name" metadata event) and one thread per stream ("tid" = stream
 * index, named by "thread_name": compute, comm, h2d, d2h); every task is a complete event
 * ("ph": "X", "ts" start and "dur" in µs, "cat" the task kind, "args" FLOPs, bytes, layer,
 * micro-batch); every change point of a rank's memory series is a counter event ("ph": "C",
 * "name" "memory <category>", "args" {"MiB": value}) on that rank, so each category is its
 * own counter track. Events are in recorder order (tasks, then series), which trace viewers
 * accept unsorted.
 */
#pragma once

#include <glib.h>
#include "sim/recorder.h"

/* Builds the trace of `rec` (series "rank<r>/memory/<category>" in B, tasks with stream and
 * kind indices into model_sim_stream_names / model_sim_kind_names) titled `title`, as a JSON
 * string (caller frees). */
char *cli_trace_to_json (const SimRecorder *rec, const char *title);

/* Writes cli_trace_to_json to `path` atomically (g_file_set_contents). FALSE + G_FILE_ERROR,
 * message naming the file. */
gboolean cli_trace_write (const char *path, const SimRecorder *rec, const char *title,
                          GError **error);
