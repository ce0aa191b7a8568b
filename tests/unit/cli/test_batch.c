/* tests/unit/cli/test_batch.c — the batch runner (cli/study/batch.h): rows equal independent
 * single runs, a failing scenario keeps its error while the others run, the table does not
 * depend on the thread count or on splitting the jobs across processes (serialize/merge, as
 * MPI does), the penalty formula, and the progress text. Sweeps vary S1's micro-batch
 * (each scenario simulates in a few tens of ms). */
#include "config.h"
#include "cli/study/batch.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "tests/testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *tmpdir;

static CliSweep *
sweep (const char *name, const char *body)
{
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autofree char *text = g_strdup_printf ("[sweep]\nscenario = %s\n%s", s1, body);
  g_autofree char *path = g_build_filename (tmpdir, name, NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GError) error = NULL;
  CliSweep *sw = cli_sweep_load (path, &error);
  if (sw == NULL)
    g_printerr ("\n  %s\n", error->message);
  return sw;
}

static char *
table_text (const SimTable *t)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  sim_table_write_text (t, f, '\t', NULL);
  fclose (f);
  char *s = g_strdup (buf);
  free (buf);
  return s;
}

static double
cell (const SimTable *t, guint row, const char *col)
{
  return sim_table_get_double (t, row, sim_table_find_column (t, col));
}

static const char *const mb_body = "[axes]\ntraining.micro_batch = 1, 2, 3\n";

/* Each row holds exactly what cli_scenario_simulate gives for the same overrides. */
static void
test_rows_equal_single_runs (void)
{
  g_autoptr (CliSweep) sw = sweep ("rows.ini", mb_body);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  cli_batch_run (b, 2, 0, 1, NULL, NULL);
  g_autoptr (SimTable) t = cli_batch_table (b);
  CU_ASSERT_EQUAL_FATAL (sim_table_n_rows (t), 3);
  for (guint p = 0; p < 3; p++)
    {
      g_auto (GStrv) sets = cli_sweep_sets (sw, p, NULL);
      g_autoptr (CliScenario) sc = cli_scenario_load (cli_sweep_scenario (sw),
                                                      (const char *const *) sets, NULL);
      ModelSimResult res;
      CU_ASSERT_TRUE_FATAL (cli_scenario_simulate (sc, NULL, &res, NULL));
      CU_ASSERT_EQUAL (cell (t, p, "training.micro_batch"), p + 1.0);
      CU_ASSERT_EQUAL (cell (t, p, "step_time"), res.step_time);
      CU_ASSERT_EQUAL (cell (t, p, "tokens_per_s"), res.tokens_per_s);
      CU_ASSERT_EQUAL (cell (t, p, "device_used"), res.device_used);
      CU_ASSERT_EQUAL (cell (t, p, "peak_allocated"), res.peak_allocated);
      CU_ASSERT_EQUAL (cell (t, p, "peak_activations"), res.peak_mix[MODEL_MEM_ACTIVATIONS]);
      CU_ASSERT_EQUAL (cell (t, p, "time_recompute"), res.time_by_kind[MODEL_TASK_KIND_RECOMPUTE]);
      CU_ASSERT_EQUAL (cell (t, p, "fits"), res.fits ? 1.0 : 0.0);
      model_sim_result_clear (&res);
    }
}

static void
test_failing_scenario_keeps_going (void)
{
  g_autoptr (CliSweep) sw = sweep ("fail.ini", "[axes]\ntraining.precision = fp32, fp13, bf16_mixed\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  cli_batch_run (b, 2, 0, 1, NULL, NULL);
  CU_ASSERT_EQUAL (cli_batch_n_failed (b), 1);
  g_autoptr (SimTable) t = cli_batch_table (b);
  guint status = sim_table_find_column (t, "status"), err = sim_table_find_column (t, "error");
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 0, status), "ok");
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 1, status), "failed");
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 2, status), "ok");
  CU_ASSERT_PTR_NOT_NULL (strstr (sim_table_get_text (t, 1, err), "precision"));
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 0, err), "");
  CU_ASSERT_TRUE (isnan (cell (t, 1, "step_time")));
  CU_ASSERT_TRUE (cell (t, 2, "step_time") > 0);
}

static void
test_threads_do_not_change_the_table (void)
{
  g_autoptr (CliSweep) sw = sweep ("threads.ini", mb_body);
  g_autoptr (CliBatch) one = cli_batch_new (sw, NULL);
  g_autoptr (CliBatch) four = cli_batch_new (sw, NULL);
  cli_batch_run (one, 1, 0, 1, NULL, NULL);
  cli_batch_run (four, 4, 0, 1, NULL, NULL);
  g_autoptr (SimTable) t1 = cli_batch_table (one);
  g_autoptr (SimTable) t4 = cli_batch_table (four);
  g_autofree char *a = table_text (t1), *b = table_text (t4);
  CU_ASSERT_STRING_EQUAL (a, b);
}

/* Two "processes" each run every other job; merging one's results into the other gives the
 * table of a single run (what rank 0 does after MPI_Gatherv). */
static void
test_split_and_merge (void)
{
  g_autoptr (CliSweep) sw = sweep ("split.ini", mb_body);
  g_autoptr (CliBatch) all = cli_batch_new (sw, NULL);
  g_autoptr (CliBatch) even = cli_batch_new (sw, NULL);
  g_autoptr (CliBatch) odd = cli_batch_new (sw, NULL);
  cli_batch_run (all, 1, 0, 1, NULL, NULL);
  cli_batch_run (even, 1, 0, 2, NULL, NULL);
  cli_batch_run (odd, 1, 1, 2, NULL, NULL);
  g_autoptr (SimTable) partial = cli_batch_table (even);
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (partial, 1, sim_table_find_column (partial, "status")),
                          "not run");
  g_autoptr (GVariant) v = cli_batch_serialize (odd);
  /* through bytes, as on the wire */
  g_autoptr (GBytes) bytes = g_variant_get_data_as_bytes (v);
  g_autoptr (GVariant) back = g_variant_ref_sink (
    g_variant_new_from_bytes (G_VARIANT_TYPE ("a(ubsad)"), bytes, FALSE));
  CU_ASSERT_TRUE_FATAL (cli_batch_merge (even, back, NULL));
  g_autoptr (SimTable) ta = cli_batch_table (all);
  g_autoptr (SimTable) tm = cli_batch_table (even);
  g_autofree char *a = table_text (ta), *m = table_text (tm);
  CU_ASSERT_STRING_EQUAL (a, m);
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) wrong = g_variant_ref_sink (g_variant_new_string ("x"));
  CU_ASSERT_FALSE (cli_batch_merge (even, wrong, &error));
}

/* penalty = 100 (1 − t / t_base); a point equal to its baseline has penalty exactly 0, and
 * the other's baseline is that same scenario, so t_base is its tokens/s. */
static void
test_penalty (void)
{
  g_autoptr (CliSweep) sw = sweep ("base.ini", "[axes]\ntraining.checkpointing = none, full\n"
                                               "[baseline]\ntraining.checkpointing = none\n");
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  CU_ASSERT_EQUAL (cli_batch_n_jobs (b), 2); /* the baseline reuses point 0 */
  cli_batch_run (b, 2, 0, 1, NULL, NULL);
  g_autoptr (SimTable) t = cli_batch_table (b);
  double t0 = cell (t, 0, "tokens_per_s"), t1 = cell (t, 1, "tokens_per_s");
  CU_ASSERT_EQUAL (cell (t, 0, "penalty"), 0.0);
  CU_ASSERT_EQUAL (cell (t, 1, "baseline_tokens_per_s"), t0);
  STEPSIM_ASSERT_REL (cell (t, 1, "penalty"), 100 * (1 - t1 / t0), 1e-12);
  CU_ASSERT_TRUE (cell (t, 1, "penalty") > 0); /* recompute costs throughput */
  CU_ASSERT_EQUAL (cell (t, 1, "baseline_fits"), 1.0);
}

/* A baseline out of memory cannot run: no penalty against it (NaN, baseline_fits 0). S1 at
 * micro-batch 16 without checkpointing needs ~190 GiB of the A100's 80; with full
 * checkpointing ~98 GiB, micro-batch 8 ~57 GiB (the sweep scenarios/sweeps/s1-micro-batch.ini). */
static void
test_penalty_oom_baseline (void)
{
  g_autoptr (CliSweep) sw = sweep ("oombase.ini", "[axes]\ntraining.micro_batch = 8\n"
                                                  "training.checkpointing = none, full\n"
                                                  "[baseline]\ntraining.checkpointing = none\n");
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  cli_batch_run (b, 2, 0, 1, NULL, NULL);
  g_autoptr (SimTable) t = cli_batch_table (b);
  CU_ASSERT_EQUAL (cell (t, 0, "fits"), 0.0);
  CU_ASSERT_EQUAL (cell (t, 1, "fits"), 1.0);
  CU_ASSERT_EQUAL (cell (t, 1, "baseline_fits"), 0.0);
  CU_ASSERT_TRUE (isnan (cell (t, 1, "penalty")));
  CU_ASSERT_TRUE (isnan (cell (t, 0, "penalty")));
}

/* A baseline that fails (its overrides are bad) fails the batch, naming the sweep's
 * [baseline] and the error; a penalty is never NaN beside "ok" without a word. The check
 * passes when the baselines ran. */
static void
test_failing_baseline (void)
{
  g_autoptr (CliSweep) sw = sweep ("badbase.ini", "[axes]\ntraining.checkpointing = none, full\n"
                                                  "[baseline]\ntraining.micro_batch = 0\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  cli_batch_run (b, 2, 0, 1, NULL, NULL);
  CU_ASSERT_EQUAL (cli_batch_n_failed (b), 0); /* the points themselves ran */
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (cli_batch_check_baselines (b, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  const char *needles[] = { "badbase.ini [baseline]: the baseline of scenario 'checkpointing=none' failed",
                            "(with ", "badbase.ini [baseline] training.micro_batch=0)",
                            "group [training], key 'micro_batch'" };
  for (guint i = 0; i < G_N_ELEMENTS (needles); i++)
    {
      gboolean found = strstr (e->message, needles[i]) != NULL;
      if (!found)
        g_printerr ("\n  '%s' lacks '%s'\n", e->message, needles[i]);
      CU_ASSERT_TRUE (found);
    }
  g_autoptr (CliSweep) good = sweep ("goodbase.ini", "[axes]\ntraining.checkpointing = none, full\n"
                                                     "[baseline]\ntraining.checkpointing = none\n");
  g_autoptr (CliBatch) gb = cli_batch_new (good, NULL);
  cli_batch_run (gb, 2, 0, 1, NULL, NULL);
  CU_ASSERT_TRUE (cli_batch_check_baselines (gb, NULL));
}

/* A failed row's error is short and names the override it is about (the value, from the
 * sweep's [axes], is 2000 characters long). */
static void
test_row_error_short (void)
{
  g_autofree char *x = g_strnfill (2000, 'x');
  g_autofree char *body = g_strdup_printf ("[axes]\ntraining.precision = fp32, fp%s\n", x);
  g_autoptr (CliSweep) sw = sweep ("long.ini", body);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  g_autoptr (CliBatch) b = cli_batch_new (sw, NULL);
  cli_batch_run (b, 1, 0, 1, NULL, NULL);
  g_autoptr (SimTable) t = cli_batch_table (b);
  const char *err = sim_table_get_text (t, 1, sim_table_find_column (t, "error"));
  CU_ASSERT_PTR_NOT_NULL_FATAL (err);
  CU_ASSERT_TRUE (g_utf8_strlen (err, -1) <= CLI_SCENARIO_MESSAGE_MAX);
  CU_ASSERT_PTR_NOT_NULL (strstr (err, "long.ini [axes] training.precision=fpxxx"));
  CU_ASSERT_PTR_NOT_NULL (strstr (err, "expected one of"));
}

static void
test_progress_text (void)
{
  /* 10 of 40 after 5 s: 5/10 s per job × 30 left = 15 s. */
  g_autofree char *plain = cli_batch_progress_text (10, 40, 5.0, FALSE);
  CU_ASSERT_STRING_EQUAL (plain, "batch: 10 of 40 simulations done (25%), ETA 15 s");
  g_autofree char *tty = cli_batch_progress_text (10, 40, 5.0, TRUE);
  CU_ASSERT_STRING_EQUAL (tty, "[#######-----------------------] 10/40  25%  ETA 0:15");
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-batch-XXXXXX");
  static const StepsimTest tests[] = {
    { "rows equal single runs", test_rows_equal_single_runs },
    { "a failing scenario keeps its error; the batch goes on", test_failing_scenario_keeps_going },
    { "threads do not change the table", test_threads_do_not_change_the_table },
    { "split across processes and merged = one run", test_split_and_merge },
    { "penalty against the baseline", test_penalty },
    { "no penalty against a baseline out of memory", test_penalty_oom_baseline },
    { "a failing baseline fails the batch, named", test_failing_baseline },
    { "a row's error is short and names its override", test_row_error_short },
    { "progress text with ETA", test_progress_text },
  };
  int rc = STEPSIM_RUN_TESTS ("batch", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) system (cmd);
  g_free (tmpdir);
  return rc;
}
