/* cli/report/plot.h — drawing charts of a run with gnuplot (plots/<figure>.gp). */
#pragma once

#include <glib.h>

/* The TSV text of `object` of the HDF5 file (sim_h5out_export_tsv); caller frees; NULL +
 * error when it cannot be exported. */
char *cli_plot_export_text (const char *h5path, const char *object, GError **error);

/* The value of `name` in a /summary export ("name<TAB>value<TAB>unit" lines, as
 * cli_plot_export_text gives it); "" if absent. Caller frees. */
char *cli_plot_summary_value (const char *summary, const char *name);

/* Draws the memory timeline of `rank` from the HDF5 file `h5path` into `out_path` (.png or
 * .svg): `gnuplot -c memory.gp TSV OUT CAPACITY_GIB TITLE [OOM_TIME OOM_TEXT]` on the export
 * of /series/rank<r>/memory, with the OOM of /summary marked when it is this rank's (its
 * time, the failing request's size, category and task, and the largest live buffers), through cli_charts_render() (written to a temporary name renamed
 * onto out_path only on success). `capacity` in B (0: no line). FALSE + error if gnuplot
 * fails or cannot run; no partial chart is left. */
gboolean cli_plot_memory (const char *h5path, guint rank, double capacity, const char *title,
                          const char *out_path, GError **error);
