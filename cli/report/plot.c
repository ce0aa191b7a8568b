/* cli/report/plot.c — HDF5 export as text and the memory chart of a run (rendered through
 * cli_charts_render, the one gnuplot runner, cli/report/charts_render.c: a leaf that calls
 * nothing here); see plot.h. */
#include "config.h"
#include "cli/report/plot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/report/charts.h"
#include "sim/h5out.h"
#include "sim/units.h"

char *
cli_plot_export_text (const char *h5path, const char *object, GError **error)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  if (f == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM, "cannot export %s", object);
      return NULL;
    }
  gboolean ok = sim_h5out_export_tsv (h5path, object, f, error);
  fclose (f);
  char *text = ok ? g_strdup (buf) : NULL;
  free (buf);
  return text;
}

char *
cli_plot_summary_value (const char *summary, const char *name)
{
  g_auto (GStrv) lines = g_strsplit (summary, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto (GStrv) f = g_strsplit (lines[i], "\t", 3);
      if (f[0] != NULL && f[1] != NULL && strcmp (f[0], name) == 0)
        return g_strdup (f[1]);
    }
  return g_strdup ("");
}

/* The OOM mark of the chart when `rank` is the rank whose first OOM /summary describes:
 * its time (s, as text) and the text "OOM at t = … s: SIZE of CATEGORY in TASK" with a line
 * per live buffer (the largest four). Both NULL otherwise. */
static void
oom_mark (const char *summary, guint rank, char **time, char **text)
{
  *time = *text = NULL;
  g_autofree char *oom = cli_plot_summary_value (summary, "oom");
  g_autofree char *peak_rank = cli_plot_summary_value (summary, "peak_rank");
  if (g_ascii_strtod (oom, NULL) != 1 || g_ascii_strtoull (peak_rank, NULL, 10) != rank)
    return;
  g_autofree char *t = cli_plot_summary_value (summary, "oom_time");
  g_autofree char *req = cli_plot_summary_value (summary, "oom_requested");
  g_autofree char *cat = cli_plot_summary_value (summary, "oom_category");
  g_autofree char *task = cli_plot_summary_value (summary, "oom_task");
  g_autofree char *holders = cli_plot_summary_value (summary, "oom_holders");
  g_autofree char *size = sim_units_format (g_ascii_strtod (req, NULL), SIM_DIM_BYTES, 2);
  GString *m = g_string_new (NULL);
  g_string_printf (m, "OOM at t = %.4f s: %s of %s in %s; live then:", g_ascii_strtod (t, NULL),
                   size, cat, task);
  g_auto (GStrv) h = g_strsplit (holders, "; ", -1);
  for (guint i = 0; h[i] != NULL && i < 4; i++)
    g_string_append_printf (m, "\n  %s", h[i]);
  *time = g_strdup (t);
  *text = g_string_free (m, FALSE);
}

gboolean
cli_plot_memory (const char *h5path, guint rank, double capacity, const char *title,
                 const char *out_path, GError **error)
{
  g_autofree char *object = g_strdup_printf ("/series/rank%u/memory", rank);
  g_autofree char *data = cli_plot_export_text (h5path, object, error);
  if (data == NULL)
    return FALSE;
  g_autofree char *summary = cli_plot_export_text (h5path, "/summary", error);
  if (summary == NULL)
    return FALSE;
  g_autofree char *oom_time = NULL, *oom_text = NULL;
  oom_mark (summary, rank, &oom_time, &oom_text);
  g_autofree char *cap = g_strdup_printf ("%.6g", capacity / (1024.0 * 1024 * 1024));
  const char *args[] = { cap, title, oom_time, oom_text, NULL };
  return cli_charts_render ("memory", data, args, out_path, error);
}
