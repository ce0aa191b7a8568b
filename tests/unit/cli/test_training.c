/* tests/unit/cli/test_training.c — [plan] and [cost] (cli/scenario/scenario_plan.c), the training-run
 * estimate (cli/report/training.h), the error band's median (cli/report/error_band.h) and the cost chart's
 * data (cli/report/charts_cost.c).
 *
 * Closed forms (training.h): with the simulated step time T and tokens per step S of the
 * scenario (tokens/s = S / T), N GPUs, price p per GPU-hour, fixed F, PUE e, board power
 * P, node overhead O per GPU and intensity c:
 *   time = tokens / (S / T);  GPU-hours = N · time / 3600;  cost = GPU-hours · p + F;
 *   energy = N · (P + O) · time · e;  emissions = energy · c.
 * The simulation gives T and S; everything after them is checked against these formulas.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include "cli/report/charts.h"
#include "cli/report/error_band.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/report/training.h"
#include "tests/testlib.h"

/* A small scenario: Llama-3.2-1B, bf16, on 2 GPUs of a DGX H100 (700 W boards, 575 W of
 * node overhead per GPU: (10.2 kW − 8 × 700 W) / 8, hardware/node_catalog.c). */
static const char base[] =
  "[model]\nhf_config = llama-3.2-1b\n"
  "[cluster]\nnode = DGX-H100\ngpus_per_node = 2\n"
  "[training]\nmicro_batch = 1\nseq_len = 1024\nprecision = bf16_mixed\ncheckpointing = full\n"
  "[parallel]\ndata_parallel = zero2\n";

static char *tmpdir;

static CliScenario *
load_text (const char *text, GError **error, char **path_out)
{
  char *path = g_build_filename (tmpdir, "plan.ini", NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  CliScenario *sc = cli_scenario_load (path, NULL, error);
  if (path_out != NULL)
    *path_out = path;
  else
    g_free (path);
  return sc;
}

static void
expect_error (const char *extra, const char *const *needles)
{
  g_autofree char *text = g_strconcat (base, extra, NULL);
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc = load_text (text, &e, &path);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, path));
  for (guint i = 0; needles[i] != NULL; i++)
    {
      gboolean found = strstr (e->message, needles[i]) != NULL;
      if (!found)
        g_printerr ("\n  message \"%s\" lacks \"%s\"\n", e->message, needles[i]);
      CU_ASSERT (found);
    }
}

static void
estimate_text (const char *text, CliScenario **sc_out, ModelSimResult *r, CliTrainingEstimate *e)
{
  g_autoptr (GError) error = NULL;
  *sc_out = load_text (text, &error, NULL);
  if (error != NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (*sc_out);
  CU_ASSERT_TRUE_FATAL (cli_scenario_simulate (*sc_out, NULL, r, &error));
  cli_training_estimate (*sc_out, r, e);
}

static void
estimate (const char *extra, CliScenario **sc_out, ModelSimResult *r, CliTrainingEstimate *e)
{
  g_autofree char *text = g_strconcat (base, extra, NULL);
  estimate_text (text, sc_out, r, e);
}

static void
test_closed_forms (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CliTrainingEstimate e;
  estimate ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49 USD/h\nfixed = 1000 USD\n"
            "pue = 1.2\ncarbon_intensity = 400 gCO2/kWh\n", &sc, &r, &e);
  CU_ASSERT_TRUE_FATAL (e.valid && e.has_cost && e.has_energy && e.has_emissions);
  double time = 1e9 / (r.tokens_per_step / r.step_time);
  STEPSIM_ASSERT_REL (e.time, time, 1e-12);
  STEPSIM_ASSERT_REL (e.gpu_time / 3600, 2 * time / 3600, 1e-12);
  STEPSIM_ASSERT_REL (e.cost, 2 * time / 3600 * 2.49 + 1000, 1e-12);
  STEPSIM_ASSERT_REL (e.energy, 2 * (700 + 575) * time * 1.2, 1e-12);
  /* 400 g per kWh = 0.4 kg per 3.6e6 J */
  STEPSIM_ASSERT_REL (e.emissions, e.energy * 0.4 / 3.6e6, 1e-12);
  STEPSIM_ASSERT_REL (e.steps, 1e9 / r.tokens_per_step, 1e-12);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

/* train_steps: time = steps × T; node_hour bills nodes (1 here), not GPUs. */
static void
test_train_steps_node_price (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CliTrainingEstimate e;
  estimate ("[plan]\ntrain_steps = 5000\n[cost]\nnode_hour = 20 EUR/h\n", &sc, &r, &e);
  CU_ASSERT_TRUE_FATAL (e.valid && e.has_cost);
  STEPSIM_ASSERT_REL (e.time, 5000 * r.step_time, 1e-12);
  STEPSIM_ASSERT_REL (e.tokens, 5000 * r.tokens_per_step, 1e-12);
  STEPSIM_ASSERT_REL (e.cost, 1 * 5000 * r.step_time / 3600 * 20, 1e-12);
  CU_ASSERT_STRING_EQUAL (sc->plan.currency, "EUR");
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

/* With an idle power the board follows the compute-busy fraction u:
 * P = P_idle + (P_max − P_idle)·u; a price for the GPU type wins over gpu_hour. */
static void
test_idle_power_and_type_price (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CliTrainingEstimate e;
  g_auto (GStrv) parts = g_strsplit (base, "node = DGX-H100", 2);
  g_autofree char *text = g_strconcat (
      parts[0], "node = N", parts[1],
      "[gpu.H]\nbase = H100-SXM\nidle_power = 100 W\n[node.N]\nbase = DGX-H100\ngpu = H\n"
      "[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 9 USD/h\ngpu_hour.H = 2 USD/h\n"
      "gpu_hour.B200-SXM = 5 USD/h\n", NULL);
  estimate_text (text, &sc, &r, &e);
  CU_ASSERT_TRUE (r.compute_busy > 0.05 && r.compute_busy < 1);
  STEPSIM_ASSERT_REL (e.gpu_power, 100 + 600 * r.compute_busy, 1e-12);
  STEPSIM_ASSERT_REL (e.cost, e.gpu_time / 3600 * 2, 1e-12);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

static void
test_oom_gets_nothing (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CliTrainingEstimate e;
  /* 70B on 2 GPUs: ZeRO-2 leaves 140 GB of bf16 weights on each 80 GB GPU */
  g_auto (GStrv) parts = g_strsplit (base, "llama-3.2-1b", 2);
  g_autofree char *text = g_strconcat (parts[0], "llama-3.1-70b", parts[1],
                                       "[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2 USD/h\n", NULL);
  estimate_text (text, &sc, &r, &e);
  CU_ASSERT_FALSE (r.fits);
  CU_ASSERT_FALSE (e.valid || e.has_cost || e.has_energy);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

static void
test_bad_input (void)
{
  const char *key[] = { "group [cost], key 'gpu_hour'", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49\n", key);
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49 /h\n", key);
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49 USD\n", key);
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49 USD/week\n", key);
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2.49 usd/h\n", key);
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = -1 USD/h\n", key);
  const char *zero[] = { "group [cost], key 'gpu_hour'", "'0 USD/h': a price must be positive",
                         NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 0 USD/h\n", zero);
  /* two prices for one GPU type: the second key names the first, as written */
  const char *clash[] = { "group [cost], key 'gpu_hour.h100-sxm'",
                          "already has a price in key 'gpu_hour.H100-SXM'", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour.H100-SXM = 2 USD/h\n"
                "gpu_hour.h100-sxm = 3 USD/h\n", clash);
  const char *both_price[] = { "group [cost], key 'node_hour'", "key 'gpu_hour' already", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2 USD/h\nnode_hour = 9 USD/h\n",
                both_price);
  const char *both[] = { "group [plan], key 'train_steps'", "not both", NULL };
  expect_error ("[plan]\ntokens = 1e9\ntrain_steps = 10\n", both);
  const char *none[] = { "group [plan]", "'tokens' or 'train_steps'", NULL };
  expect_error ("[plan]\n", none);
  const char *type[] = { "group [cost], key 'gpu_hour.X100'", "names no GPU type", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour.X100 = 2 USD/h\n", type);
  /* a node's name is no GPU type: the error gives the node's GPU type instead */
  const char *node[] = { "group [cost], key 'node_hour.DGX-H100'", "is a node, not a GPU type",
                         "here node_hour.H100-SXM", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\nnode_hour.DGX-H100 = 20 USD/h\n", node);
  const char *mix[] = { "group [cost], key 'fixed'", "EUR", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hour = 2 USD/h\nfixed = 5 EUR\n", mix);
  const char *noplan[] = { "group [cost]", "[plan]", NULL };
  expect_error ("[cost]\ngpu_hour = 2 USD/h\n", noplan);
  const char *pue[] = { "group [cost], key 'pue'", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\npue = 0.9\n", pue);
  const char *tok[] = { "group [plan], key 'tokens'", NULL };
  expect_error ("[plan]\ntokens = 1e9 tokens\n", tok);
  const char *unk[] = { "group [cost], key 'gpu_hr'", "gpu_hour", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ngpu_hr = 2 USD/h\n", unk);
  const char *ci[] = { "group [cost], key 'carbon_intensity'", NULL };
  expect_error ("[plan]\ntokens = 1e9\n[cost]\ncarbon_intensity = 400\n", ci);
}

/* The band is the median of the matching rows' |error|: GPU A, step-time kinds, errors
 * +0.10, −0.30, +0.20 → sorted |e| 0.10, 0.20, 0.30 → 0.20 (3 cases), the largest −0.30;
 * with a fourth (0.50) the mean of the middle two, (0.20 + 0.30) / 2 = 0.25, the largest
 * +0.50. Rows of other GPUs and of memory metrics do not count. */
static void
test_band_median (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "band.tsv", NULL);
  const char *head = "id\tgpu\tmetric\tpredicted\tmeasured\terror\tknown_gap\n"
                     "a\tA\tstep_time\t1.1\t1\t0.1\t0\n"
                     "b\tA\ttokens_per_s_per_gpu\t7\t10\t-0.3\t1\n"
                     "c\tA\tmfu\t0.6\t0.5\t0.2\t0\n"
                     "d\tA\tdevice_used\t2\t1\t1\t0\n"
                     "e\tB\tstep_time\t9\t1\t8\t0\n";
  g_assert (g_file_set_contents (path, head, -1, NULL));
  CliErrorBand b;
  CU_ASSERT_TRUE (cli_error_band_from_file (path, "A", CLI_BAND_STEP_TIME, &b, NULL));
  CU_ASSERT_EQUAL (b.n_cases, 3);
  STEPSIM_ASSERT_REL (b.median, 0.2, 1e-15);
  STEPSIM_ASSERT_REL (b.worst, -0.3, 1e-15); /* the largest |error|, its sign kept */
  CU_ASSERT_TRUE (cli_error_band_from_file (path, "A", CLI_BAND_MEMORY, &b, NULL));
  CU_ASSERT_EQUAL (b.n_cases, 1);
  CU_ASSERT_TRUE (cli_error_band_from_file (path, "C", CLI_BAND_STEP_TIME, &b, NULL));
  CU_ASSERT_EQUAL (b.n_cases, 0);
  CU_ASSERT_TRUE (isnan (b.median));
  CU_ASSERT_TRUE (isnan (b.worst));
  g_autofree char *four = g_strconcat (head, "f\tA\tstep_time\t1.5\t1\t0.5\t0\n", NULL);
  g_assert (g_file_set_contents (path, four, -1, NULL));
  CU_ASSERT_TRUE (cli_error_band_from_file (path, "A", CLI_BAND_STEP_TIME, &b, NULL));
  STEPSIM_ASSERT_REL (b.median, 0.25, 1e-15);
  STEPSIM_ASSERT_REL (b.worst, 0.5, 1e-15);
  g_assert (g_file_set_contents (path, "h\nx\tA\tstep_time\t1\n", -1, NULL));
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (cli_error_band_from_file (path, "A", CLI_BAND_STEP_TIME, &b, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "line 2") : NULL);
}

/* cli_error_band_get remembers each (GPU, kind) it read: asked in any order, twice, it
 * gives what cli_error_band_from_file reads from the build's table for that very pair
 * (the kinds of one GPU differ: A100 has step-time and memory rows). */
static void
test_band_get_remembers_each_pair (void)
{
  const char *path = cli_error_band_table_path ();
  const struct
  {
    const char *gpu;
    CliBandKind kind;
  } ask[] = { { "A100-80GB-SXM", CLI_BAND_STEP_TIME }, { "A100-80GB-SXM", CLI_BAND_MEMORY },
              { "H100-SXM", CLI_BAND_STEP_TIME },      { "V100-16GB-SXM2", CLI_BAND_MEMORY },
              { "no-such-gpu", CLI_BAND_MEMORY } };
  for (guint round = 0; round < 2; round++)
    for (guint i = 0; i < G_N_ELEMENTS (ask); i++)
      {
        CliErrorBand got, want = { .median = NAN };
        cli_error_band_get (ask[i].gpu, ask[i].kind, &got);
        if (path != NULL)
          CU_ASSERT_TRUE (cli_error_band_from_file (path, ask[i].gpu, ask[i].kind, &want, NULL));
        CU_ASSERT_EQUAL (got.table, want.table);
        CU_ASSERT_EQUAL (got.n_cases, want.n_cases);
        CU_ASSERT (got.median == want.median || (isnan (got.median) && isnan (want.median)));
      }
  CliErrorBand a, m;
  cli_error_band_get ("A100-80GB-SXM", CLI_BAND_STEP_TIME, &a);
  cli_error_band_get ("A100-80GB-SXM", CLI_BAND_MEMORY, &m);
  if (path != NULL)
    CU_ASSERT_NOT_EQUAL (a.n_cases, m.n_cases);
}

/* Pareto front: (1 d, 100), (2 d, 50), (3 d, 80), (4 d, 40): in time order a point is on
 * the front when cheaper than all faster ones → rows 1, 2 and 4; the OOM row is left out
 * and counted, the failed one too. */
static void
test_cost_chart_data (void)
{
  static const char *const label[] = { "c", "a", "d", "b", "oom", "bad" };
  static const char *const status[] = { "ok", "ok", "ok", "ok", "ok", "failed" };
  static const double fits[] = { 1, 1, 1, 1, 0, NAN };
  static const double time[] = { 259200, 86400, 345600, 172800, NAN, NAN }; /* s: 3, 1, 4, 2 d */
  static const double cost[] = { 80, 100, 40, 50, NAN, NAN };
  g_autoptr (SimTable) rows = sim_table_new ();
  guint c_index = sim_table_add_column (rows, "index", SIM_TABLE_DOUBLE, "1");
  guint c_label = sim_table_add_column (rows, "label", SIM_TABLE_TEXT, NULL);
  guint c_status = sim_table_add_column (rows, "status", SIM_TABLE_TEXT, NULL);
  guint c_fits = sim_table_add_column (rows, "fits", SIM_TABLE_DOUBLE, "1");
  guint c_time = sim_table_add_column (rows, "train_time", SIM_TABLE_DOUBLE, "s");
  guint c_cost = sim_table_add_column (rows, "train_cost", SIM_TABLE_DOUBLE, "USD");
  for (guint r = 0; r < G_N_ELEMENTS (label); r++)
    {
      sim_table_add_row (rows);
      sim_table_set_double (rows, r, c_index, r);
      sim_table_set_text (rows, r, c_label, label[r]);
      sim_table_set_text (rows, r, c_status, status[r]);
      sim_table_set_double (rows, r, c_fits, fits[r]);
      sim_table_set_double (rows, r, c_time, time[r]);
      sim_table_set_double (rows, r, c_cost, cost[r]);
    }
  g_autofree char *caption = NULL;
  g_autoptr (GError) e = NULL;
  const char *unit = NULL;
  g_autofree char *data = cli_charts_cost_data (rows, &caption, &unit, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (data);
  CU_ASSERT_STRING_EQUAL (unit, "days");
  CU_ASSERT_PTR_NOT_NULL (strstr (data, "1\t100\t1\t1\ta\t"));
  CU_ASSERT_PTR_NOT_NULL (strstr (data, "\n2\t50\t1\t2\tb\t"));
  CU_ASSERT_PTR_NOT_NULL (strstr (data, "\n3\t80\t0\t3\tc\t"));
  CU_ASSERT_PTR_NOT_NULL (strstr (data, "\n4\t40\t1\t4\td\t"));
  CU_ASSERT_PTR_NOT_NULL (strstr (caption, "4 plans drawn"));
  CU_ASSERT_PTR_NOT_NULL (strstr (caption, "1 out of memory (OOM) left out"));
  CU_ASSERT_PTR_NOT_NULL (strstr (caption, "1 failed"));
}

int
main (void)
{
  tmpdir = g_dir_make_tmp ("stepsim-training-XXXXXX", NULL);
  static const StepsimTest tests[] = {
    { "closed forms: time, GPU-hours, cost, energy, emissions", test_closed_forms },
    { "train_steps and a node price", test_train_steps_node_price },
    { "idle power follows utilisation; price per GPU type", test_idle_power_and_type_price },
    { "an OOM scenario gets no estimate", test_oom_gets_nothing },
    { "the build's error band, remembered per GPU and kind", test_band_get_remembers_each_pair },
    { "bad [plan] and [cost] input names file, group and key", test_bad_input },
    { "error band = median of the matching rows", test_band_median },
    { "cost chart: Pareto front and left-out rows", test_cost_chart_data },
  };
  int rc = STEPSIM_RUN_TESTS ("training", tests);
  g_autofree char *p1 = g_build_filename (tmpdir, "plan.ini", NULL);
  g_autofree char *p2 = g_build_filename (tmpdir, "band.tsv", NULL);
  g_unlink (p1);
  g_unlink (p2);
  g_rmdir (tmpdir);
  g_free (tmpdir);
  return rc;
}
