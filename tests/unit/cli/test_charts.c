/* tests/unit/cli/test_charts.c — the data of the planning charts (cli/report/charts.h), computed
 * from small hand-written TSV inputs with round numbers: 1 GiB = 1073741824 B, so the GiB
 * columns are exact; times in s become ms below 2 s. */
#include "config.h"
#include "cli/report/charts.h"
#include "tests/testlib.h"

#include <string.h>

/* Two ranks; rank 0 computes and communicates, rank 1 only computes. */
static const char tasks[] =
  "id\trank\tstream\tkind\tlabel\tlayer\tmicro_batch\tstart\tend\tflops\tbytes\n"
  "0\t0\tcompute\tforward\tfwd L0 mb0\t0\t0\t0\t0.25\t1\t1\n"
  "1\t0\tcompute\tbackward\tbwd L0 mb0\t0\t0\t0.25\t0.75\t1\t1\n"
  "2\t0\tcomm\tcollective\tallreduce\t-1\t-1\t0.5\t1\t0\t1\n"
  "3\t1\tcompute\tforward\tfwd L0 mb0\t0\t0\t0\t0.25\t1\t1\n";

static void
test_gantt_lanes_and_kinds (void)
{
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

/* Two ok rows and one failed row (left out). GiB = B / 2^30. */
static const char results[] =
  "index\tlabel\tstatus\terror\ttraining.micro_batch\ttraining.precision\tpeak_allocated\tpeak_reserved\t"
  "cuda_context\tcapacity\tpeak_weights\tpeak_activations\tstep_time\ttime_forward\ttime_backward\t"
  "tokens_per_s\tmfu\n"
  "0\tmb=2\tok\t\t2\tfp32\t3221225472\t4294967296\t1073741824\t85899345920\t1073741824\t2147483648\t"
  "1.5\t0.5\t1\t4000\t0.5\n"
  "1\tmb=1\tok\t\t1\tfp32\t2147483648\t2147483648\t1073741824\t85899345920\t1073741824\t1073741824\t"
  "0.75\t0.25\t0.5\t3000\t0.25\n"
  "2\tmb=3\tfailed\tboom\t3\tfp32\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tnan\n";

static void
test_breakdown (void)
{
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
  g_autofree char *mixed = cli_charts_breakdown_data (
    "label\tstatus\tfits\tpeak_allocated\tpeak_reserved\tcuda_context\tcapacity\n"
    "big\tok\t1\t1073741824\t1073741824\t1073741824\t85899345920\n"
    "small\tok\t0\t1073741824\t1073741824\t1073741824\t25769803776\n", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (mixed);
  g_auto (GStrv) m = g_strsplit (mixed, "\n", -1);
  CU_ASSERT_TRUE (g_str_has_prefix (m[1], "big\t") && g_str_has_suffix (m[1], "\t80"));
  CU_ASSERT_TRUE (g_str_has_prefix (m[2], "small (OOM)\t") && g_str_has_suffix (m[2], "\t24"));
}

static void
test_steptime (void)
{
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
  g_autofree char *label = NULL;
  g_autofree char *d = cli_charts_sweep_data (results, "training.micro_batch", "peak_allocated",
                                              NULL, "B", &label, NULL);
  CU_ASSERT_STRING_EQUAL (label, "peak_allocated (GiB)");
  CU_ASSERT_STRING_EQUAL (d, "x\tpeak_allocated\n1\t2\n2\t3\n"); /* sorted by x */
  g_autofree char *l2 = NULL;
  g_autofree char *d2 = cli_charts_sweep_data (results, "training.micro_batch", "mfu",
                                               "training.precision", "1", &l2, NULL);
  CU_ASSERT_STRING_EQUAL (l2, "mfu (%)");
  CU_ASSERT_STRING_EQUAL (d2, "x\tprecision=fp32\n1\t25\n2\t50\n");
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "label", "mfu", NULL, "1", &l2, &error);
  CU_ASSERT_PTR_NULL (bad); /* no numbers on x */
}

/* A text column on y is an error naming it (not a gnuplot failure); a batch where nothing
 * ran has nothing to draw. */
static void
test_sweep_text_y (void)
{
  g_autofree char *l = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "micro_batch", "label", NULL, NULL, &l,
                                                &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "column 'label' has no numbers to put on the y axis"));
  g_clear_error (&error);
  g_autofree char *none = cli_charts_sweep_data (
    "label\tstatus\tmicro_batch\tmfu\na\tfailed\t1\tnan\n", "micro_batch", "mfu", NULL, "1",
    &l, &error);
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
  g_autofree char *l = NULL, *full = NULL, *s = NULL;
  full = cli_charts_sweep_data (results, "training.micro_batch", "mfu", "training.precision",
                                "1", &l, NULL);
  g_free (l);
  s = cli_charts_sweep_data (results, "micro_batch", "mfu", "precision", "1", &l, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  CU_ASSERT_STRING_EQUAL (s, full);
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = cli_charts_sweep_data (results, "micro_bach", "mfu", NULL, "1", &l,
                                                &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "did you mean 'micro_batch'"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "columns: "));
}

static void
test_penalty_needs_baseline (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *d = cli_charts_penalty_data (results, &error);
  CU_ASSERT_PTR_NULL (d);
  CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, "baseline") : NULL);
  g_autofree char *p = cli_charts_penalty_data ("label\tstatus\tpenalty\na\tok\t12.5\nb\tfailed\tnan\n", NULL);
  CU_ASSERT_STRING_EQUAL (p, "label\tpenalty\na\t12.5\n");
}

static void
test_summary_as_row (void)
{
  g_autofree char *row = cli_charts_summary_as_row ("name\tvalue\tunit\nscenario\tS1\t\nstep_time\t0.5\ts\n");
  CU_ASSERT_STRING_EQUAL (row, "label\tscenario\tstep_time\nS1\tS1\t0.5\n");
}

static void
test_axis_label (void)
{
  g_autofree char *a = cli_charts_axis_label ("training.seq_len");
  g_autofree char *b = cli_charts_axis_label ("cluster.gpu");
  CU_ASSERT_STRING_EQUAL (a, "training.seq_len (tokens)");
  CU_ASSERT_STRING_EQUAL (b, "cluster.gpu");
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "gantt: lanes per rank and stream, dense kinds, ms", test_gantt_lanes_and_kinds },
    { "gantt: rank filter", test_gantt_rank_filter },
    { "breakdown: GiB per category + cache + context", test_breakdown },
    { "steptime: parts in ms, absent ones 0", test_steptime },
    { "sweep: axis named by its key without group", test_sweep_short_key },
    { "sweep: sorted lines, units, grouping", test_sweep_lines },
    { "sweep: a text column on y is an error", test_sweep_text_y },
    { "gnuplot's stderr reduced to one line", test_gnuplot_error_one_line },
    { "penalty needs a baseline", test_penalty_needs_baseline },
    { "summary as one row", test_summary_as_row },
    { "axis labels carry units", test_axis_label },
  };
  return STEPSIM_RUN_TESTS ("charts", tests);
}
