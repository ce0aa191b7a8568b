/* cli/report/plot.c — the memory chart of a run (rendered through cli_charts_render, the one
 * gnuplot runner, cli/report/charts_render.c: a leaf that calls nothing here); see plot.h.
 * Its data come typed from cli/report/results_read.h. */
#include "config.h"
#include "cli/report/plot.h"

#include <string.h>
#include "cli/report/charts.h"
#include "cli/report/results_read.h"
#include "sim/text.h"
#include "sim/units.h"

/* The OOM mark of the chart when `rank` is the rank whose first OOM /summary describes:
 * its time (s, as text) and the text "OOM at t = … s: SIZE of CATEGORY in TASK" with a line
 * per live buffer (the largest four). Both NULL otherwise (no OOM, another rank's, or a
 * summary without the OOM entries). */
static void
oom_mark (const CliSummary *s, guint rank, char **time, char **text)
{
  *time = *text = NULL;
  double oom = 0, peak_rank = -1, t = 0, req = 0;
  if (!cli_summary_number (s, "oom", &oom, NULL) || oom != 1
      || !cli_summary_number (s, "peak_rank", &peak_rank, NULL) || peak_rank != rank
      || !cli_summary_number (s, "oom_time", &t, NULL)
      || !cli_summary_number (s, "oom_requested", &req, NULL))
    return;
  const char *cat = cli_summary_text (s, "oom_category", NULL);
  const char *task = cli_summary_text (s, "oom_task", NULL);
  const char *holders = cli_summary_text (s, "oom_holders", NULL);
  g_autofree char *size = sim_units_format (req, SIM_DIM_BYTES, 2);
  GString *m = g_string_new (NULL);
  g_string_printf (m, "OOM at t = %.4f s: %s of %s in %s; live then:", t, size,
                   cat != NULL ? cat : "", task != NULL ? task : "");
  g_auto (GStrv) h = g_strsplit (holders != NULL ? holders : "", "; ", -1);
  for (guint i = 0; h[i] != NULL && i < 4; i++)
    g_string_append_printf (m, "\n  %s", h[i]);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  *time = g_strdup (sim_text_format_double (buf, t));
  *text = g_string_free (m, FALSE);
}

char *
cli_plot_memory_data (const SimH5Timeline *m, double end)
{
  GString *out = g_string_new ("time");
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint k = 0; k < m->names->len; k++)
    {
      g_string_append_c (out, '\t');
      for (const char *c = g_ptr_array_index (m->names, k); *c != '\0'; c++) /* one field */
        g_string_append_c (out, *c == '\t' || *c == '\n' || *c == '\r' ? ' ' : *c);
    }
  g_string_append_c (out, '\n');
  for (guint i = 0; i < m->time->len; i++)
    {
      g_string_append (out, sim_text_format_double (buf, g_array_index (m->time, double, i)));
      for (guint k = 0; k < m->values->len; k++)
        {
          GArray *v = g_ptr_array_index (m->values, k);
          g_string_append_c (out, '\t');
          g_string_append (out, sim_text_format_double (buf, g_array_index (v, double, i)));
        }
      g_string_append_c (out, '\n');
    }
  guint n = m->time->len;
  if (n > 0 && end > g_array_index (m->time, double, n - 1))
    {
      g_string_append (out, sim_text_format_double (buf, end));
      for (guint k = 0; k < m->values->len; k++)
        {
          GArray *v = g_ptr_array_index (m->values, k);
          g_string_append_c (out, '\t');
          g_string_append (out, sim_text_format_double (buf, g_array_index (v, double, n - 1)));
        }
      g_string_append_c (out, '\n');
    }
  return g_string_free (out, FALSE);
}

/* The end of the run in `h5path`: the latest end of its /tasks (s), every rank's; 0 when the
 * file has no readable task table (the chart then ends at the rank's last change). */
static double
run_end (const char *h5path)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (GArray) tasks = cli_read_tasks (h5path, &e);
  double end = 0;
  for (guint i = 0; tasks != NULL && i < tasks->len; i++)
    end = MAX (end, g_array_index (tasks, CliTask, i).end);
  return end;
}

gboolean
cli_plot_memory (const char *h5path, const CliSummary *summary, guint rank, double capacity,
                 const char *title, const char *out_path, GError **error)
{
  g_autoptr (SimH5Timeline) memory = cli_read_memory (h5path, rank, error);
  if (memory == NULL)
    return FALSE;
  g_autofree char *data = cli_plot_memory_data (memory, run_end (h5path));
  g_autofree char *oom_time = NULL, *oom_text = NULL;
  oom_mark (summary, rank, &oom_time, &oom_text);
  g_autofree char *cap = g_strdup_printf ("%.6g", capacity / (1024.0 * 1024 * 1024));
  g_autofree char *lines = cli_charts_title (title);
  const char *args[] = { cap, lines, oom_time, oom_text, NULL };
  return cli_charts_render ("memory", data, args, out_path, error);
}
