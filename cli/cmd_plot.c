/* cli/cmd_plot.c — `stepsim plot KIND FILE.h5 -o OUT.png|OUT.svg`: planning charts of a run
 * (memory, gantt) or a batch (breakdown, steptime, sweep, penalty; breakdown and steptime
 * also draw a single run). Data come from the HDF5 file through the typed reader
 * (cli/report/results_read.h) into the figures' data (cli/report/charts.h); each figure is
 * one gnuplot script in plots/. Charts are written
 * atomically; exit status 0 ok, 1 bad file or nothing to draw, 2 usage error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/report/charts.h"
#include "cli/commands.h"
#include "sim/text.h"
#include "cli/scenario/output.h"
#include "cli/report/plot.h"
#include "cli/report/results_read.h"
#include "sim/h5out.h"
#include "sim/units.h"

typedef struct
{
  char *output, *ranks, *x, *y, *by, *title;
  gint rank;         /* G_MININT: not given */
  gint stage;        /* G_MININT: not given; memory: a pipeline stage's worst GPU */
  char **rank_list;  /* --ranks as canonical numbers ("0", "2"), NULL: all */
} PlotOptions;

/* Each rank asked for is one of the run's: FALSE + error naming the option and the file. */
static gboolean
check_ranks (const CliSummary *summary, const char *what, const char *const *ranks,
             GError **error)
{
  guint n = cli_summary_n_ranks (summary);
  for (guint i = 0; ranks != NULL && ranks[i] != NULL; i++)
    if (n > 0 && g_ascii_strtoull (ranks[i], NULL, 10) >= n)
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "%s: %s has no rank %s (its ranks are 0 to %u)", what, summary->file,
                     ranks[i], n - 1);
        return FALSE;
      }
  return TRUE;
}

/* A missing object of a run file (`e`, SIM_H5OUT_ERROR_NOT_FOUND) said as "not a run file",
 * naming the chart that needs one; other errors are passed on. */
static void
not_a_run_file (const char *h5, const char *object, const char *chart, GError *e,
                GError **error)
{
  if (!g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND))
    {
      g_propagate_error (error, e);
      return;
    }
  g_error_free (e);
  g_autoptr (CliResults) batch = cli_read_results (h5, TRUE, NULL);
  g_autofree char *why = batch != NULL ? g_strdup ("a batch file, with /results")
                                       : g_strdup_printf ("no %s", object);
  g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
               "%s: not a run file (%s): the %s chart draws the output of stepsim run "
               "(-o RUN.h5)", h5, why, chart);
}

/* The /summary of a run file, or "not a run file" naming `chart`. */
static CliSummary *
run_summary (const char *h5, const char *chart, GError **error)
{
  GError *e = NULL;
  CliSummary *s = cli_read_summary (h5, &e);
  if (s == NULL)
    not_a_run_file (h5, "/summary", chart, e, error);
  return s;
}

/* The scenario's name for titles ("" when the summary has none). */
static const char *
scenario_name (const CliSummary *s)
{
  const char *name = cli_summary_text (s, "scenario", NULL);
  return name != NULL ? name : "";
}

static gboolean
plot_memory (const char *h5, const PlotOptions *o, GError **error)
{
  g_autoptr (CliSummary) summary = run_summary (h5, "memory", error);
  double cap = 0;
  if (summary == NULL || !cli_summary_number (summary, "capacity", &cap, error))
    return FALSE;
  /* by default the rank whose memory peaks, the one `run --plot` draws */
  double peak = 0;
  guint rank = o->rank != G_MININT ? (guint) o->rank
               : cli_summary_number (summary, "peak_rank", &peak, NULL) ? (guint) peak
                                                                          : 0;
  g_autofree char *stage_text = NULL;
  if (o->stage != G_MININT)
    {
      /* stage s's first GPU stands for its GPUs (they hold the same layers): s times the
       * rank distance between stages, G = GPUs / pp under the default order (stage s is
       * GPUs [s·G, (s+1)·G)), the summary's pp_rank_stride (cp·tp) under tp-cp-ep-pp-dp
       * (models/parallel/mesh.h) */
      double pp = 1;
      if (!cli_summary_number (summary, "pp_stages", &pp, NULL))
        pp = 1;
      if ((guint) o->stage >= (guint) pp)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "--stage: %s has no pipeline stage %d (its stages are 0 to %u)",
                       summary->file, o->stage, (guint) pp - 1);
          return FALSE;
        }
      double stride = cli_summary_n_ranks (summary) / (guint) pp;
      if (!cli_summary_number (summary, "pp_rank_stride", &stride, NULL))
        stride = cli_summary_n_ranks (summary) / (guint) pp;
      rank = (guint) o->stage * (guint) stride;
      stage_text = g_strdup_printf (" (pipeline stage %d)", o->stage);
    }
  g_autofree char *rank_text = g_strdup_printf ("%u", rank);
  const char *ranks[] = { rank_text, NULL };
  if (!check_ranks (summary, "--rank", ranks, error))
    return FALSE;
  g_autofree char *title = o->title ? g_strdup (o->title)
                                    : g_strdup_printf ("%s — memory of rank %u%s over one step",
                                                       scenario_name (summary), rank,
                                                       stage_text ? stage_text : "");
  GError *e = NULL;
  if (cli_plot_memory (h5, summary, rank, cap, title, o->output, &e))
    return TRUE;
  g_autofree char *folded = g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND)
                                ? cli_summary_folded_rank (summary, rank)
                                : NULL;
  if (folded != NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "--rank %u: %s",
                   rank, folded);
      g_error_free (e);
      return FALSE;
    }
  g_propagate_error (error, e);
  return FALSE;
}

static gboolean
plot_gantt (const char *h5, const PlotOptions *o, GError **error)
{
  GError *e = NULL;
  g_autoptr (GArray) tasks = cli_read_tasks (h5, &e);
  if (tasks == NULL)
    return not_a_run_file (h5, "/tasks", "gantt", e, error), FALSE;
  g_autoptr (CliSummary) summary = run_summary (h5, "gantt", error);
  const char *const *ranks = (const char *const *) o->rank_list;
  if (summary == NULL || !check_ranks (summary, "--ranks", ranks, error))
    return FALSE;
  /* a rank the rank classes did not replay has no tasks: say so rather than leave it out */
  for (guint i = 0; ranks != NULL && ranks[i] != NULL; i++)
    {
      guint r = (guint) g_ascii_strtoull (ranks[i], NULL, 10);
      gboolean has = FALSE;
      for (guint k = 0; k < tasks->len && !has; k++)
        has = g_array_index (tasks, CliTask, k).rank == r;
      g_autofree char *folded = has ? NULL : cli_summary_folded_rank (summary, r);
      if (folded != NULL)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "--ranks %u: %s",
                       r, folded);
          return FALSE;
        }
    }
  g_autofree char *kinds = NULL;
  const char *unit = "s";
  g_autofree char *data = cli_charts_gantt_data (tasks, ranks, &kinds, &unit, error);
  if (data == NULL)
    return g_prefix_error (error, "%s: ", h5), FALSE;
  g_autofree char *title = o->title ? g_strdup (o->title)
                                    : g_strdup_printf ("%s — streams over one step",
                                                       scenario_name (summary));
  g_autofree char *lines = cli_charts_title (title);
  const char *args[] = { lines, unit, kinds, NULL };
  return cli_charts_render ("gantt", data, args, o->output, error);
}

static gboolean
plot_results (const char *kind, const char *h5, const PlotOptions *o, GError **error)
{
  gboolean batch_only = strcmp (kind, "sweep") == 0 || strcmp (kind, "penalty") == 0
                        || strcmp (kind, "cost") == 0;
  g_autoptr (CliResults) res = cli_read_results (h5, batch_only, error);
  if (res == NULL)
    return FALSE;
  const SimTable *rows = res->table;
  const char *name = res->name;
  g_autofree char *data = NULL, *extra = NULL, *title = NULL;
  const char *unit = "";
  if (strcmp (kind, "breakdown") == 0)
    {
      data = cli_charts_breakdown_data (rows, error);
      title = g_strdup_printf ("%s — device memory at the peak by category", name);
    }
  else if (strcmp (kind, "steptime") == 0)
    {
      data = cli_charts_steptime_data (rows, &unit, error);
      extra = g_strdup (unit);
      title = g_strdup_printf ("%s — where the step time goes (rank 0)", name);
    }
  else if (strcmp (kind, "cost") == 0)
    {
      data = cli_charts_cost_data (rows, &extra, &unit, error);
      title = g_strdup_printf ("%s — cost against time to train", name);
    }
  else if (strcmp (kind, "penalty") == 0)
    {
      data = cli_charts_penalty_data (rows, error);
      title = g_strdup_printf ("%s — throughput penalty against the baseline", name);
    }
  else
    {
      if (o->x == NULL || o->y == NULL)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "plot sweep needs --x AXIS and --y METRIC");
          return FALSE;
        }
      data = cli_charts_sweep_data (rows, o->x, o->y, o->by, &extra, error);
      title = g_strdup_printf ("%s — %s against %s", name, o->y, o->x);
    }
  if (data == NULL)
    return g_prefix_error (error, "%s: ", h5), FALSE;
  /* rows that did not run (failed, or 'not run' in an interrupted batch) have no bar or
   * point: the title says how many, so a short chart is not read as the whole batch */
  guint missing = cli_charts_rows_not_drawn (rows), n_rows = sim_table_n_rows (rows);
  if (o->title != NULL) /* the user's title, with the same note */
    {
      g_free (title);
      title = g_strdup (o->title);
    }
  if (missing > 0 && strcmp (kind, "cost") != 0)
    {
      char *more = g_strdup_printf ("%s (%u of %u scenarios not drawn: failed or not run)",
                                    title, missing, n_rows);
      g_free (title);
      title = more;
    }
  /* cost: the style file as an argument, so the script needs no shell to find it */
  g_autofree char *xlabel = o->x                        ? cli_charts_axis_label (o->x)
                            : strcmp (kind, "cost") == 0 ? g_build_filename (cli_charts_dir (),
                                                                            "style.gp", NULL)
                                                         : g_strdup ("");
  /* cost: TITLE CAPTION STYLE.gp TIME-UNIT */
  g_autofree char *lines = cli_charts_title (title);
  const char *args[] = { lines, extra ? extra : "", xlabel,
                         strcmp (kind, "cost") == 0 ? unit : NULL, NULL };
  return cli_charts_render (kind, data, args, o->output, error);
}

/* --ranks "0, 2" → { "0", "2" }; NULL + a usage message on an empty or non-numeric item. */
static char **
parse_ranks (const char *text, char **msg)
{
  g_auto (GStrv) items = g_strsplit (text, ",", -1);
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  if (items[0] == NULL)
    {
      *msg = g_strdup ("plot: --ranks needs rank numbers, e.g. --ranks 0,1");
      return NULL;
    }
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);
      guint64 r;
      if (!sim_units_parse_count (item, &r, NULL) || r > G_MAXUINT)
        {
          *msg = g_strdup_printf ("plot: --ranks '%s': '%s' is not a rank number (expected "
                                  "R,R,… with R = 0, 1, …)", text, item);
          return NULL;
        }
      g_autofree char *canonical = g_strdup_printf ("%" G_GUINT64_FORMAT, r);
      for (guint j = 0; j < i; j++)
        {
          guint64 prev;
          if (sim_units_parse_count (items[j], &prev, NULL) && prev == r)
            {
              *msg = g_strdup_printf ("plot: --ranks '%s': rank %s is in the list twice", text,
                                      canonical);
              return NULL;
            }
        }
      g_strv_builder_add (b, canonical);
    }
  return g_strv_builder_end (b);
}

/* Options that apply to one kind only (given with another they would be ignored), a
 * negative --rank and a malformed --ranks: a usage message, else NULL. */
static char *
check_plot_options (const char *kind, PlotOptions *o)
{
  const struct
  {
    const char *name, *kind;
    gboolean given;
  } own[] = {
    { "--rank", "memory", o->rank != G_MININT }, { "--ranks", "gantt", o->ranks != NULL },
    { "--stage", "memory", o->stage != G_MININT },
    { "--x", "sweep", o->x != NULL },            { "--y", "sweep", o->y != NULL },
    { "--by", "sweep", o->by != NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (own); i++)
    if (own[i].given && strcmp (kind, own[i].kind) != 0)
      return g_strdup_printf ("plot: %s applies to plot %s only", own[i].name, own[i].kind);
  if (o->rank != G_MININT && o->rank < 0)
    return g_strdup_printf ("plot: --rank %d: a rank is 0 or more", o->rank);
  if (o->stage != G_MININT && o->rank != G_MININT) /* QA: one message said both rules */
    return g_strdup_printf ("plot: --stage %d and --rank %d: give one of them (a stage is "
                            "drawn by its first GPU)", o->stage, o->rank);
  if (o->stage != G_MININT && o->stage < 0)
    return g_strdup_printf ("plot: --stage %d: a stage is 0 or more", o->stage);
  char *msg = NULL;
  if (o->ranks != NULL)
    o->rank_list = parse_ranks (o->ranks, &msg);
  return msg;
}

static int
parse_plot_options (int *argc, char ***argv, PlotOptions *o)
{
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output, "chart to write (.png or .svg, any case)", "OUT" },
    { "rank", 'r', 0, G_OPTION_ARG_INT, &o->rank, "memory: the rank to draw (default: the one whose memory peaks)", "R" },
    { "stage", 0, 0, G_OPTION_ARG_INT, &o->stage, "memory: the pipeline stage to draw (its first GPU)", "S" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &o->ranks, "gantt: ranks to draw, e.g. 0,1 (all)", "R,R,…" },
    { "x", 'x', 0, G_OPTION_ARG_STRING, &o->x, "sweep: the axis on x (a results column, e.g. training.micro_batch or micro_batch)", "AXIS" },
    { "y", 'y', 0, G_OPTION_ARG_STRING, &o->y, "sweep: the metric on y (a results column)", "METRIC" },
    { "by", 0, 0, G_OPTION_ARG_STRING, &o->by, "sweep: one line per value of this axis", "AXIS" },
    { "title", 0, 0, G_OPTION_ARG_STRING, &o->title, "chart title (default: names the scenario)", "TEXT" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "memory|gantt|breakdown|steptime|sweep|penalty|cost FILE.h5 — draw a chart of a run or batch");
  g_option_context_set_description (
    ctx, "An option marked with a kind (memory:, gantt:, sweep:) applies to that chart only;\n"
         "given with another it is a usage error (exit 2). A rank the file does not have is an\n"
         "error (exit 1). cost: cost against time to train of every row of a batch that fits\n"
         "and has a [plan] and a [cost] price (OOM rows are left out and counted in the\n"
         "caption), numbered and listed with their labels, the Pareto front joined.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, argc, argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("plot", error);
      return cli_error (msg), 2;
    }
  static const char *const kinds[] = { "memory", "gantt", "breakdown", "steptime", "sweep",
                                       "penalty", "cost", NULL };
  /* a title is printed text: a control character drew giant glyphs over the chart (QA) */
  gunichar ctl = sim_text_first_control (o->title);
  if (ctl != 0)
    {
      g_autofree char *m = g_strdup_printf ("plot: --title contains a control character "
                                            "(U+%04X); a title is printed text", ctl);
      return cli_error (m), 2;
    }
  if (*argc != 3 || !g_strv_contains (kinds, (*argv)[1]))
    return cli_error ("plot: expected KIND FILE.h5 with KIND memory, gantt, breakdown, "
                      "steptime, sweep, penalty or cost (see stepsim plot --help)"), 2;
  if (o->output == NULL)
    return cli_error ("plot: -o OUT.png|OUT.svg is required"), 2;
  /* what the command line itself lacks is a usage error (exit 2), before any file is read */
  g_autoptr (GError) ext = NULL;
  if (!cli_output_check_chart ("-o", o->output, &ext))
    return cli_error (ext->message), 2;
  if (strcmp ((*argv)[1], "sweep") == 0 && (o->x == NULL || o->y == NULL))
    return cli_error ("plot sweep needs --x AXIS and --y METRIC"), 2;
  g_autofree char *msg = check_plot_options ((*argv)[1], o);
  if (msg != NULL)
    return cli_error (msg), 2;
  return 0;
}

int
cli_cmd_plot (int argc, char **argv)
{
  PlotOptions o = { .rank = G_MININT, .stage = G_MININT };
  int rc = parse_plot_options (&argc, &argv, &o);
  if (rc == 0)
    {
      g_autoptr (GError) error = NULL;
      const char *kind = argv[1], *h5 = argv[2];
      const char *inputs[] = { h5, NULL };
      gboolean ok = cli_output_check ("-o", o.output, inputs, &error);
      ok = ok && (strcmp (kind, "memory") == 0 ? plot_memory (h5, &o, &error)
                    : strcmp (kind, "gantt") == 0 ? plot_gantt (h5, &o, &error)
                                                  : plot_results (kind, h5, &o, &error));
      if (!ok)
        {
          cli_error (error != NULL ? error->message : "plot failed");
          rc = 1;
        }
    }
  g_free (o.output);
  g_free (o.ranks);
  g_strfreev (o.rank_list);
  g_free (o.x);
  g_free (o.y);
  g_free (o.by);
  g_free (o.title);
  return rc;
}
