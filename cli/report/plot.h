/* cli/report/plot.h — the memory chart of a run with gnuplot (plots/memory.gp). */
#pragma once

#include <glib.h>
#include "cli/report/results_read.h"

/* Draws the memory timeline of `rank` from the HDF5 file `h5path` into `out_path` (.png or
 * .svg): `gnuplot -c memory.gp DATA OUT CAPACITY_GIB TITLE [OOM_TIME OOM_TEXT]`, DATA being
 * /series/rank<r>/memory (read typed by cli_read_memory, cli/report/results_read.h) as
 * "time<TAB>category…" rows of bytes at every change time, with the OOM of `summary` (the
 * file's /summary as cli_read_summary gives it, borrowed: read once by the caller, it holds
 * an entry per rank) marked when it is this rank's (its time, the failing request's size,
 * category and task, and the largest live buffers), through cli_charts_render() (written to
 * a temporary name renamed onto out_path only on success). `capacity` in B (0: no line).
 * The stack runs to the end of the run (the latest task end of /tasks), not only to the
 * rank's last change (cli_plot_memory_data).
 * FALSE + error if the file lacks the series, or gnuplot fails or cannot run; no partial
 * chart is left. */
gboolean cli_plot_memory (const char *h5path, const CliSummary *summary, guint rank,
                          double capacity, const char *title, const char *out_path,
                          GError **error);

/* The memory chart's DATA for `m` (a rank's /series/rank<r>/memory, as cli_read_memory gives
 * it; borrowed): a header "time<TAB>category…", then one row per change time (s; bytes per
 * category), every number with the fewest digits that read back exactly, and, when `end`
 * (s) is after the last change time, one more row at `end` repeating the last values: a
 * series holds its last value to the end of the run (doc/hdf5-layout.md), and gnuplot's
 * fillsteps draws a step only up to its last point, so a rank that finishes before the
 * others (a later pipeline stage) would seem to free its memory. Caller frees. */
char *cli_plot_memory_data (const SimH5Timeline *m, double end);
