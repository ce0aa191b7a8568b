/* tests/unit/cli/test_charts.c — the data of the planning charts (cli/report/charts.h), computed
 * from small typed inputs built in memory (task rows, results tables) with round numbers:
 * 1 GiB = 1073741824 B, so the GiB columns are exact; times in s become ms below 2 s. */
#include "config.h"
#include "cli/report/charts.h"
#include "cli/report/plot.h"
#include "cli/report/results_read.h"
#include "models/plan/simulate.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

/* ---- fixtures ---- */

static gint
index_of (const char *const *names, guint n, const char *name)
{
  for (guint i = 0; i < n; i++)
    if (strcmp (names[i], name) == 0)
      return (gint) i;
  CU_FAIL_FATAL ("name not in the table");
  return -1;
}

static void
add_task (GArray *tasks, guint32 rank, const char *stream, const char *kind, double start,
          double end)
{
  CliTask k = { .id = tasks->len, .rank = rank, .layer = -1, .micro_batch = -1,
                .start = start, .end = end, .label = g_strdup ("t") };
  k.stream = index_of (model_sim_stream_names (), MODEL_N_STREAMS, stream);
  k.kind = index_of (model_sim_kind_names (), MODEL_N_TASK_KINDS, kind);
  g_array_append_val (tasks, k);
}

static void
clear_task (gpointer p)
{
  g_free (((CliTask *) p)->label);
}

/* Two ranks; rank 0 computes and communicates, rank 1 only computes. */
static GArray *
tasks_fixture (void)
{
  GArray *t = g_array_new (FALSE, TRUE, sizeof (CliTask));
  g_array_set_clear_func (t, clear_task);
  add_task (t, 0, "compute", "forward", 0, 0.25);
  add_task (t, 0, "compute", "backward", 0.25, 0.75);
  add_task (t, 0, "comm", "collective", 0.5, 1);
  add_task (t, 1, "compute", "forward", 0, 0.25);
  return t;
}

/* A table of `n` rows; columns are added by num_col / text_col with one value per row. */
static SimTable *
table_rows (guint n)
{
  SimTable *t = sim_table_new ();
  for (guint r = 0; r < n; r++)
    sim_table_add_row (t);
  return t;
}

static void
num_col (SimTable *t, const char *name, const char *unit, const double *v)
{
  guint c = sim_table_add_column (t, name, SIM_TABLE_DOUBLE, unit);
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    sim_table_set_double (t, r, c, v[r]);
}

static void
text_col (SimTable *t, const char *name, const char *const *v)
{
  guint c = sim_table_add_column (t, name, SIM_TABLE_TEXT, NULL);
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    sim_table_set_text (t, r, c, v[r]);
}

#define NUMS(...) ((const double[]) { __VA_ARGS__ })
#define TEXTS(...) ((const char *const[]) { __VA_ARGS__ })

/* ---- Gantt ---- */

static void
test_gantt_lanes_and_kinds (void)
{
  g_autoptr (GArray) tasks = tasks_fixture ();
  g_autofree char *kinds = NULL;
  const char *unit = NULL;
  g_autofree char *d = cli_charts_gantt_data (tasks, NULL, &kinds, &unit, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  CU_ASSERT_STRING_EQUAL (unit, "ms"); /* step of 1 s < 2 s */
  CU_ASSERT_STRING_EQUAL (kinds, "forward backward collective"); /* kind-table order */
  /* 3 lanes: rank 0 compute on top (2), rank 0 comm (1), rank 1 compute (0) */
  CU_ASSERT_STRING_EQUAL (d, "start\tend\tlane\tkind\tlane_name\n"
                             "0\t250\t2\t0\trank 0 compute\n"
                             "250\t750\t2\t1\trank 0 compute\n"
                             "500\t1000\t1\t2\trank 0 comm\n"
                             "0\t250\t0\t0\trank 1 compute\n");
}

static void
test_gantt_rank_filter (void)
{
  g_autoptr (GArray) tasks = tasks_fixture ();
  g_autofree char *kinds = NULL;
  const char *unit = NULL;
  const char *ranks[] = { "1", NULL };
  g_autofree char *d = cli_charts_gantt_data (tasks, ranks, &kinds, &unit, NULL);
  CU_ASSERT_STRING_EQUAL (d, "start\tend\tlane\tkind\tlane_name\n0\t250\t0\t0\trank 1 compute\n");
  CU_ASSERT_STRING_EQUAL (kinds, "forward");
  const char *none[] = { "7", NULL };
  g_autoptr (GError) error = NULL;
  g_autofree char *n = cli_charts_gantt_data (tasks, none, &kinds, &unit, &error);
  CU_ASSERT_PTR_NULL (n);
  CU_ASSERT_PTR_NOT_NULL (error);
}

/* Tasks of a stream or kind stepsim has not (index -1: a foreign file's enum) are left out. */
static void
test_gantt_unknown_names (void)
{
  g_autoptr (GArray) tasks = tasks_fixture ();
  g_array_index (tasks, CliTask, 1).kind = -1;
  g_array_index (tasks, CliTask, 2).stream = -1;
  g_autofree char *kinds = NULL;
  const char *unit = NULL;
  g_autofree char *d = cli_charts_gantt_data (tasks, NULL, &kinds, &unit, NULL);
  CU_ASSERT_STRING_EQUAL (kinds, "forward collective");
  CU_ASSERT_STRING_EQUAL (d, "start\tend\tlane\tkind\tlane_name\n"
                             "0\t250\t1\t0\trank 0 compute\n"
                             "0\t250\t0\t0\trank 1 compute\n");
}

/* ---- results ---- */

/* Two ok rows and one failed row (left out). GiB = B / 2^30. */
static SimTable *
results_fixture (void)
{
  SimTable *t = table_rows (3);
  num_col (t, "index", "1", NUMS (0, 1, 2));
  text_col (t, "label", TEXTS ("mb=2", "mb=1", "mb=3"));
  text_col (t, "status", TEXTS ("ok", "ok", "failed"));
  text_col (t, "error", TEXTS ("", "", "boom"));
  num_col (t, "training.micro_batch", "", NUMS (2, 1, 3));
  text_col (t, "training.precision", TEXTS ("fp32", "fp32", "fp32"));
  num_col (t, "peak_allocated", "B", NUMS (3221225472, 2147483648, NAN));
  num_col (t, "peak_reserved", "B", NUMS (4294967296, 2147483648, NAN));
  num_col (t, "cuda_context", "B", NUMS (1073741824, 1073741824, NAN));
  num_col (t, "capacity", "B", NUMS (85899345920, 85899345920, NAN));
  num_col (t, "peak_weights", "B", NUMS (1073741824, 1073741824, NAN));
  num_col (t, "peak_activations", "B", NUMS (2147483648, 1073741824, NAN));
  num_col (t, "step_time", "s", NUMS (1.5, 0.75, NAN));
  num_col (t, "time_forward", "s", NUMS (0.5, 0.25, NAN));
  num_col (t, "time_backward", "s", NUMS (1, 0.5, NAN));
  num_col (t, "tokens_per_s", "token/s", NUMS (4000, 3000, NAN));
  num_col (t, "mfu", "1", NUMS (0.5, 0.25, NAN));
  return t;
}

/* The rows no chart draws (their status is not "ok"): the fixture's failed row, and an
 * interrupted batch's "not run" ones; a table without a status column has none. */
static void
test_rows_not_drawn (void)
{
  g_autoptr (SimTable) t = results_fixture ();
  CU_ASSERT_EQUAL (cli_charts_rows_not_drawn (t), 1);
  g_autoptr (SimTable) u = table_rows (4);
  text_col (u, "status", TEXTS ("ok", "not run", "failed", "not run"));
  CU_ASSERT_EQUAL (cli_charts_rows_not_drawn (u), 3);
  g_autoptr (SimTable) v = table_rows (2);
  num_col (v, "step_time", "s", NUMS (1, 2));
  CU_ASSERT_EQUAL (cli_charts_rows_not_drawn (v), 0);
}

static void
test_breakdown (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  g_autofree char *d = cli_charts_breakdown_data (results, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  g_auto (GStrv) lines = g_strsplit (d, "\n", -1);
  CU_ASSERT_TRUE (g_str_has_prefix (lines[0], "label\tweights\tmaster_weights\tgradients"));
  CU_ASSERT_TRUE (g_str_has_suffix (lines[0], "\tallocator cache\tCUDA context\tcapacity"));
  /* weights 1, activations 2 (5th category), others 0, cache 4 − 3 = 1, context 1,
   * capacity 80 GiB */
  CU_ASSERT_STRING_EQUAL (lines[1], "mb=2\t1\t0\t0\t0\t2\t0\t0\t0\t0\t0\t1\t1\t80");
  CU_ASSERT_TRUE (g_str_has_prefix (lines[2], "mb=1\t1\t"));
  CU_ASSERT_STRING_EQUAL (lines[3], ""); /* the failed row is left out */
  /* GPUs of different sizes in one batch: each row carries its own capacity; a row that ran
   * out of memory is labelled (its figures are a lower bound) */
  g_autoptr (SimTable) two = table_rows (2);
  text_col (two, "label", TEXTS ("big", "small"));
  text_col (two, "status", TEXTS ("ok", "ok"));
  num_col (two, "fits", "1", NUMS (1, 0));
  num_col (two, "peak_allocated", "B", NUMS (1073741824, 1073741824));
  num_col (two, "peak_reserved", "B", NUMS (1073741824, 1073741824));
  num_col (two, "cuda_context", "B", NUMS (1073741824, 1073741824));
  num_col (two, "capacity", "B", NUMS (85899345920, 25769803776));
  g_autofree char *mixed = cli_charts_breakdown_data (two, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (mixed);
  g_auto (GStrv) m = g_strsplit (mixed, "\n", -1);
  CU_ASSERT_TRUE (g_str_has_prefix (m[1], "big\t") && g_str_has_suffix (m[1], "\t80"));
  CU_ASSERT_TRUE (g_str_has_prefix (m[2], "small (OOM)\t") && g_str_has_suffix (m[2], "\t24"));
}

static void
test_steptime (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  const char *unit = NULL;
  g_autofree char *d = cli_charts_steptime_data (results, &unit, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  CU_ASSERT_STRING_EQUAL (unit, "ms");
  /* forward, backward, then absent columns as 0, step time last */
  CU_ASSERT_PTR_NOT_NULL (strstr (d, "\nmb=2\t500\t1000\t0\t0\t0\t0\t0\t1500\n"));
}

static void
test_sweep_lines (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  g_autofree char *label = NULL;
  g_autofree char *d = cli_charts_sweep_data (results, "training.micro_batch", "peak_allocated",
                                              NULL, &label, NULL);
  CU_ASSERT_STRING_EQUAL (label, "peak_allocated (GiB)");
  CU_ASSERT_STRING_EQUAL (d, "x\tpeak_allocated\n1\t2\n2\t3\n"); /* sorted by x */
  g_autofree char *l2 = NULL;
  g_autofree char *d2 = cli_charts_sweep_data (results, "training.micro_batch", "mfu",
                                               "training.precision", &l2, NULL);
  CU_ASSERT_STRING_EQUAL (l2, "mfu (%)");
  CU_ASSERT_STRING_EQUAL (d2, "x\tprecision=fp32\n1\t25\n2\t50\n");
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "label", "mfu", NULL, &l2, &error);
  CU_ASSERT_PTR_NULL (bad); /* no numbers on x */
}

/* A text column on y is an error naming it (not a gnuplot failure); a batch where nothing
 * ran has nothing to draw. */
static void
test_sweep_text_y (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  g_autofree char *l = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "micro_batch", "label", NULL, &l, &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message,
                                  "column 'label' has no numbers to put on the y axis (a text column)"));
  g_clear_error (&error);
  g_autoptr (SimTable) failed = table_rows (1);
  text_col (failed, "label", TEXTS ("a"));
  text_col (failed, "status", TEXTS ("failed"));
  num_col (failed, "micro_batch", "", NUMS (1));
  num_col (failed, "mfu", "1", NUMS (NAN));
  g_autofree char *none = cli_charts_sweep_data (failed, "micro_batch", "mfu", NULL, &l, &error);
  CU_ASSERT_PTR_NULL (none);
  CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, "nothing to draw") : NULL);
}

/* gnuplot's multi-line stderr becomes one line: its last error, the script without its
 * directory, warnings and the caret line dropped. */
static void
test_gnuplot_error_one_line (void)
{
  g_autofree char *a = cli_charts_gnuplot_error (
    "\"/src/plots/sweep.gp\" line 30: warning: No valid data points found in file\n"
    "\"/src/plots/sweep.gp\" line 31: undefined variable: STATS_blocks\n\n");
  CU_ASSERT_STRING_EQUAL (a, "sweep.gp line 31: undefined variable: STATS_blocks");
  g_autofree char *b = cli_charts_gnuplot_error (
    "set output style_out\n                    ^\n"
    "\"/src/plots/style.gp\" line 12: cannot open file; output not changed\n"
    "system error: No such file or directory\n");
  CU_ASSERT_STRING_EQUAL (b, "style.gp line 12: cannot open file; output not changed");
  g_autofree char *c = cli_charts_gnuplot_error ("\"x.gp\" line 1: warning: odd\n");
  CU_ASSERT_STRING_EQUAL (c, "x.gp line 1: warning: odd");
  g_autofree char *d = cli_charts_gnuplot_error ("something\nSegmentation fault\n");
  CU_ASSERT_STRING_EQUAL (d, "Segmentation fault");
  g_autofree char *e = cli_charts_gnuplot_error ("");
  CU_ASSERT_PTR_NULL (strchr (e, '\n'));
  CU_ASSERT_TRUE (e[0] != '\0');
}

/* A scenario key may be named without its group when one column ends in ".key"; an
 * unknown name fails with the nearest column and the list of columns. */
static void
test_sweep_short_key (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  g_autofree char *l = NULL, *full = NULL, *s = NULL;
  full = cli_charts_sweep_data (results, "training.micro_batch", "mfu", "training.precision",
                                &l, NULL);
  g_free (l);
  s = cli_charts_sweep_data (results, "micro_batch", "mfu", "precision", &l, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  CU_ASSERT_STRING_EQUAL (s, full);
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "micro_bach", "mfu", NULL, &l, &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "did you mean 'micro_batch'"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "columns: "));
}

static void
test_penalty_needs_baseline (void)
{
  g_autoptr (SimTable) results = results_fixture ();
  g_autoptr (GError) error = NULL;
  g_autofree char *d = cli_charts_penalty_data (results, &error);
  CU_ASSERT_PTR_NULL (d);
  CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, "baseline") : NULL);
  g_autoptr (SimTable) pen = table_rows (2);
  text_col (pen, "label", TEXTS ("a", "b"));
  text_col (pen, "status", TEXTS ("ok", "failed"));
  num_col (pen, "penalty", "%", NUMS (12.5, NAN));
  g_autofree char *p = cli_charts_penalty_data (pen, NULL);
  CU_ASSERT_STRING_EQUAL (p, "label\tpenalty\na\t12.5\n");
}

/* A row out of memory (fits 0) has figures of the step as planned, which cannot run: the
 * steptime and sweep charts mark it ("(OOM)", the sweep's OOM column), and the penalty chart
 * draws no penalty for it nor for a row whose baseline is out of memory, saying which in
 * the label and the note. Without OOM rows the sweep has no OOM column (test_sweep_lines). */
static void
test_oom_rows_marked (void)
{
  g_autoptr (SimTable) t = table_rows (3);
  text_col (t, "label", TEXTS ("a", "b", "c"));
  text_col (t, "status", TEXTS ("ok", "ok", "ok"));
  num_col (t, "training.micro_batch", "", NUMS (1, 2, 4));
  num_col (t, "fits", "1", NUMS (1, 1, 0));
  num_col (t, "step_time", "s", NUMS (0.5, 1, 1.5));
  num_col (t, "baseline_fits", "1", NUMS (1, 0, 1));
  num_col (t, "penalty", "%", NUMS (10, 20, 30));
  const char *unit = NULL;
  g_autofree char *st = cli_charts_steptime_data (t, &unit, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (st);
  CU_ASSERT_PTR_NOT_NULL (strstr (st, "\nb\t"));
  CU_ASSERT_PTR_NOT_NULL (strstr (st, "\nc (OOM)\t"));
  g_autofree char *pen = cli_charts_penalty_data (t, NULL);
  CU_ASSERT_STRING_EQUAL (pen, "label\tpenalty\tnote\na\t10\t-\nb (baseline OOM)\t0\tbaseline OOM\n"
                               "c (OOM)\t0\tOOM\n");
  g_autofree char *l = NULL;
  g_autofree char *sw = cli_charts_sweep_data (t, "micro_batch", "step_time", NULL, &l, NULL);
  CU_ASSERT_STRING_EQUAL (sw, "x\tstep_time\tOOM\n1\t0.5\t0\n2\t1\t0\n4\t1.5\t1\n");
}

/* A run's summary as one results row: label = the scenario's name, then every entry typed
 * (numbers keep their units, texts stay texts). */
static void
test_summary_as_row (void)
{
  CliSummary s = { "run.h5", g_ptr_array_new () };
  SimSummaryEntry scen = { "scenario", NULL, 0, "S1" }, step = { "step_time", "s", 0.5, NULL };
  g_ptr_array_add (s.entries, &scen);
  g_ptr_array_add (s.entries, &step);
  g_autoptr (SimTable) t = cli_summary_as_row (&s);
  CU_ASSERT_EQUAL (sim_table_n_rows (t), 1);
  CU_ASSERT_EQUAL_FATAL (sim_table_n_columns (t), 3);
  CU_ASSERT_STRING_EQUAL (sim_table_column_name (t, 0), "label");
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 0, 0), "S1");
  CU_ASSERT_EQUAL (sim_table_column_kind (t, 1), SIM_TABLE_TEXT);
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 0, 1), "S1");
  CU_ASSERT_EQUAL (sim_table_column_kind (t, 2), SIM_TABLE_DOUBLE);
  CU_ASSERT_STRING_EQUAL (sim_table_column_unit (t, 2), "s");
  CU_ASSERT_EQUAL (sim_table_get_double (t, 0, 2), 0.5);
  g_ptr_array_unref (s.entries);
}

/* A sweep grouped by a numeric column names each line by the number's shortest exact text. */
static void
test_sweep_by_numbers (void)
{
  g_autoptr (SimTable) t = table_rows (3);
  text_col (t, "status", TEXTS ("ok", "ok", "ok"));
  num_col (t, "cluster.nodes", "", NUMS (1, 2, 1));
  num_col (t, "training.micro_batch", "", NUMS (1, 1, 2));
  num_col (t, "step_time", "s", NUMS (0.1, 0.2, 0.3));
  g_autofree char *l = NULL;
  g_autofree char *d = cli_charts_sweep_data (t, "micro_batch", "step_time", "nodes", &l, NULL);
  CU_ASSERT_STRING_EQUAL (l, "step_time (s)");
  CU_ASSERT_STRING_EQUAL (d, "x\tnodes=1\n1\t0.1\n2\t0.3\n\n\nx\tnodes=2\n1\t0.2\n");
}

static void
test_axis_label (void)
{
  g_autofree char *a = cli_charts_axis_label ("training.seq_len");
  g_autofree char *b = cli_charts_axis_label ("cluster.gpu");
  CU_ASSERT_STRING_EQUAL (a, "training.seq_len (tokens)");
  CU_ASSERT_STRING_EQUAL (b, "cluster.gpu");
}

/* Chart titles: a short one unchanged; a long one (a scenario name with its --set
 * overrides, 2 + 40·6 = 242 characters with an em dash) broken at spaces into lines of at
 * most CLI_CHART_TITLE_COLS characters, every word kept in order (the newlines back to
 * spaces give the title again); a word longer than a line stays whole on its own line. */
static void
test_title_lines (void)
{
  g_autofree char *same = cli_charts_title ("S1 — memory of rank 0 over one step");
  CU_ASSERT_STRING_EQUAL (same, "S1 — memory of rank 0 over one step");
  GString *long_title = g_string_new ("S1");
  for (guint i = 0; i < 40; i++)
    g_string_append (long_title, i == 0 ? " — " : " set=x");
  g_autofree char *text = g_string_free (long_title, FALSE);
  g_autofree char *lines = cli_charts_title (text);
  g_auto (GStrv) split = g_strsplit (lines, "\n", -1);
  CU_ASSERT (g_strv_length (split) >= 3);
  for (guint i = 0; split[i] != NULL; i++)
    CU_ASSERT (g_utf8_strlen (split[i], -1) <= CLI_CHART_TITLE_COLS && split[i][0] != ' ');
  g_autofree char *joined = g_strjoinv (" ", split);
  CU_ASSERT_STRING_EQUAL (joined, text);
  char word[CLI_CHART_TITLE_COLS + 20];
  memset (word, 'w', sizeof word - 1);
  word[sizeof word - 1] = '\0';
  g_autofree char *with_word = g_strconcat ("a ", word, " b", NULL);
  g_autofree char *wrapped = cli_charts_title (with_word);
  g_autofree char *want = g_strconcat ("a\n", word, "\nb", NULL);
  CU_ASSERT_STRING_EQUAL (wrapped, want);
}

/* The memory chart's data: the change points as read, then the last values repeated at the
 * end of the run when the rank's last change is earlier (a later pipeline stage ends its work
 * before the step does: its memory stays to the end), not when it is not later. */
static void
test_memory_data_to_run_end (void)
{
  SimH5Timeline m = { g_array_new (FALSE, FALSE, sizeof (double)),
                      g_ptr_array_new_with_free_func (g_free),
                      g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref) };
  const double t[] = { 0, 0.5 }, w[] = { 1024, 1024 }, a[] = { 0, 2048 };
  g_array_append_vals (m.time, t, 2);
  g_ptr_array_add (m.names, g_strdup ("weights"));
  g_ptr_array_add (m.names, g_strdup ("activations"));
  GArray *vw = g_array_new (FALSE, FALSE, sizeof (double));
  GArray *va = g_array_new (FALSE, FALSE, sizeof (double));
  g_array_append_vals (vw, w, 2);
  g_array_append_vals (va, a, 2);
  g_ptr_array_add (m.values, vw);
  g_ptr_array_add (m.values, va);
  g_autofree char *to_end = cli_plot_memory_data (&m, 2);
  CU_ASSERT_STRING_EQUAL (to_end, "time\tweights\tactivations\n0\t1024\t0\n0.5\t1024\t2048\n"
                                  "2\t1024\t2048\n");
  g_autofree char *at_end = cli_plot_memory_data (&m, 0.5);
  CU_ASSERT_STRING_EQUAL (at_end,
                          "time\tweights\tactivations\n0\t1024\t0\n0.5\t1024\t2048\n");
  g_autofree char *no_end = cli_plot_memory_data (&m, 0);
  CU_ASSERT_STRING_EQUAL (no_end, at_end);
  g_array_unref (m.time);
  g_ptr_array_unref (m.names);
  g_ptr_array_unref (m.values);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "chart titles broken into lines", test_title_lines },
    { "gantt: lanes per rank and stream, dense kinds, ms", test_gantt_lanes_and_kinds },
    { "gantt: rank filter", test_gantt_rank_filter },
    { "gantt: unknown streams and kinds left out", test_gantt_unknown_names },
    { "breakdown: GiB per category + cache + context", test_breakdown },
    { "rows no chart draws: failed and not run", test_rows_not_drawn },
    { "steptime: parts in ms, absent ones 0", test_steptime },
    { "sweep: axis named by its key without group", test_sweep_short_key },
    { "sweep: sorted lines, units, grouping", test_sweep_lines },
    { "sweep: a text column on y is an error", test_sweep_text_y },
    { "sweep: lines by a numeric axis", test_sweep_by_numbers },
    { "gnuplot's stderr reduced to one line", test_gnuplot_error_one_line },
    { "penalty needs a baseline", test_penalty_needs_baseline },
    { "OOM rows are marked, no penalty against an OOM baseline", test_oom_rows_marked },
    { "summary as one row", test_summary_as_row },
    { "axis labels carry units", test_axis_label },
    { "memory chart data run to the end of the run", test_memory_data_to_run_end },
  };
  return STEPSIM_RUN_TESTS ("charts", tests);
}
