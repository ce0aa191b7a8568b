/* tests/unit/cli/test_fit.c — fit searches (cli/fit.h) checked against brute force: the
 * generic monotone searches on random thresholds, then the real searches on S1 with a
 * smaller GPU (a [gpu.Small] group set from the command line) over small grids, where every
 * value is simulated and the largest that fits is found by scanning. */
#include "config.h"
#include "cli/fit.h"
#include "cli/run.h"
#include "cli/scenario.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

typedef struct
{
  guint64 threshold;
  gboolean below; /* ok(x) ⇔ x <= threshold (largest), else x >= threshold (smallest) */
  guint calls;
} Thresh;

static gboolean
thresh_ok (guint64 x, gpointer data)
{
  Thresh *t = data;
  t->calls++;
  return t->below ? x <= t->threshold : x >= t->threshold;
}

/* Brute force: the answer of a threshold predicate is the threshold itself when it lies in
 * the range (rounded down to the step for `largest`), else 0. */
static void
test_generic_searches_match_brute_force (void)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (20240501);
  for (guint trial = 0; trial < 2000; trial++)
    {
      guint64 step = 1 + g_rand_int_range (rand, 0, 4);
      guint64 lo = step * (1 + g_rand_int_range (rand, 0, 3));
      guint64 hi = lo + g_rand_int_range (rand, 0, 300);
      Thresh t = { g_rand_int_range (rand, 0, 400), TRUE, 0 };
      guint64 expect = 0;
      for (guint64 x = lo; x <= hi; x += step) /* brute force over multiples of step */
        if (x <= t.threshold)
          expect = x;
      guint64 got = cli_fit_largest (lo, hi, step, thresh_ok, &t);
      if (got != expect)
        g_printerr ("\n  largest lo %lu hi %lu step %lu thr %lu: %lu vs %lu\n", (gulong) lo,
                    (gulong) hi, (gulong) step, (gulong) t.threshold, (gulong) got, (gulong) expect);
      CU_ASSERT_EQUAL (got, expect);
      CU_ASSERT_TRUE (t.calls <= 2 * 10 + 2); /* O(log): 300 / 1 < 2^9 */
      Thresh s = { g_rand_int_range (rand, 0, 400), FALSE, 0 };
      guint64 first = 0;
      for (guint64 x = lo; x <= hi && first == 0; x++)
        if (x >= s.threshold)
          first = x;
      CU_ASSERT_EQUAL (cli_fit_smallest (lo, hi, thresh_ok, &s), first);
    }
}

/* S1 (fp32 AdamW, full checkpointing) on a 30 GiB A100: a few micro-batches fit. */
static const char *small_gpu[] = { "gpu.Small.base=A100-80GB-SXM", "gpu.Small.memory=30 GiB",
                                   "cluster.gpu=Small", NULL };

static gboolean
fits (const char *key, guint64 value)
{
  g_autofree char *set = g_strdup_printf ("%s=%" G_GUINT64_FORMAT, key, value);
  const char *sets[] = { small_gpu[0], small_gpu[1], small_gpu[2], set, NULL };
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliScenario) sc = cli_scenario_load (s1, sets, NULL);
  CliRunResult res;
  if (sc == NULL || !cli_run_simulate (sc, NULL, &res, NULL))
    return FALSE;
  gboolean f = res.fits;
  cli_run_result_clear (&res);
  return f;
}

static void
check_size_search (CliFitTarget target, const char *key, guint64 step, guint64 max)
{
  guint64 expect = 0;
  for (guint64 v = step; v <= max; v += step) /* brute force on the grid */
    if (fits (key, v))
      expect = v;
  CU_ASSERT_TRUE_FATAL (expect > step && expect < max); /* the grid brackets the answer */
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  opt.max_micro_batch = opt.max_seq_len = max;
  opt.multiple_of = step;
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliFitReport) r = cli_fit_search (s1, small_gpu, target, &opt, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  CU_ASSERT_EQUAL (cli_fit_report_value (r), expect);
  gint best = cli_fit_report_best (r);
  CU_ASSERT_TRUE_FATAL (best >= 0);
  CU_ASSERT_EQUAL (cli_fit_report_candidate (r, (guint) best)->status, CLI_FIT_FITS);
  /* every rejection says why, naming the overflow */
  for (guint i = 0; i < cli_fit_report_n_candidates (r); i++)
    {
      const CliFitCandidate *c = cli_fit_report_candidate (r, i);
      if (c->status == CLI_FIT_OOM)
        CU_ASSERT_TRUE (c->reason != NULL && g_str_has_prefix (c->reason, "OOM by ")
                        && strstr (c->reason, "largest category at the peak") != NULL);
    }
}

static void
test_micro_batch_matches_brute_force (void)
{
  check_size_search (CLI_FIT_MICRO_BATCH, "training.micro_batch", 1, 12);
}

static void
test_seq_len_matches_brute_force (void)
{
  check_size_search (CLI_FIT_SEQ_LEN, "training.seq_len", 1024, 24576);
}

/* Multi-GPU plans are rejected by this build: only 1 GPU is feasible. On 80 GB S1 fits on
 * one; with 64 sequences per micro-batch it does not, and 2..8 GPUs are "not feasible". */
static void
test_gpus (void)
{
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  opt.max_nodes = 2;
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliFitReport) one = cli_fit_search (s1, NULL, CLI_FIT_GPUS, &opt, NULL);
  CU_ASSERT_EQUAL (cli_fit_report_value (one), 1);
  const char *big[] = { "training.micro_batch=64", NULL };
  g_autoptr (CliFitReport) none = cli_fit_search (s1, big, CLI_FIT_GPUS, &opt, NULL);
  CU_ASSERT_EQUAL (cli_fit_report_value (none), 0);
  CU_ASSERT_EQUAL (cli_fit_report_best (none), -1);
  gboolean infeasible = FALSE;
  for (guint i = 0; i < cli_fit_report_n_candidates (none); i++)
    {
      const CliFitCandidate *c = cli_fit_report_candidate (none, i);
      infeasible |= c->status == CLI_FIT_INFEASIBLE && g_str_has_prefix (c->reason, "not feasible");
    }
  CU_ASSERT_TRUE (infeasible);
}

/* With --all every candidate is simulated; the answer must be the first that fits in the
 * seeds' order. S1 without checkpointing on a 22 GiB GPU does not fit as given. */
static void
test_stack_is_first_fit_in_order (void)
{
  /* Per-tensor AdamW (no foreach temporary), so the candidates differ only in what the
   * search changes. */
  const char *sets[] = { "gpu.Small.base=A100-80GB-SXM", "gpu.Small.memory=22 GiB",
                         "cluster.gpu=Small", "training.checkpointing=none",
                         "training.optimizer_foreach=false", NULL };
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  opt.all = TRUE;
  opt.allow_finetune = TRUE;
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliFitReport) r = cli_fit_search (s1, sets, CLI_FIT_STACK, &opt, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  CU_ASSERT_EQUAL (cli_fit_report_candidate (r, 0)->status, CLI_FIT_OOM); /* as given */
  gint first = -1;
  for (guint i = 0; i < cli_fit_report_n_candidates (r) && first < 0; i++)
    if (cli_fit_report_candidate (r, i)->status == CLI_FIT_FITS)
      first = (gint) i;
  CU_ASSERT_TRUE (first > 0);
  CU_ASSERT_EQUAL (cli_fit_report_best (r), first);
  /* baseline: the scenario as given */
  CU_ASSERT_EQUAL (cli_fit_report_baseline_tokens (r), cli_fit_report_candidate (r, 0)->tokens_per_s);
  /* LoRA and QLoRA come last; each holds less than full fine-tuning with the same mixed
   * precision and checkpointing, QLoRA least (NF4 base). */
  guint n = cli_fit_report_n_candidates (r);
  CU_ASSERT_FATAL (n >= 3);
  const CliFitCandidate *lora = cli_fit_report_candidate (r, n - 2);
  const CliFitCandidate *qlora = cli_fit_report_candidate (r, n - 1);
  CU_ASSERT_TRUE (g_str_has_prefix (lora->label, "LoRA"));
  CU_ASSERT_TRUE (g_str_has_prefix (qlora->label, "QLoRA"));
  for (guint i = 0; i < n; i++)
    if (g_str_has_prefix (cli_fit_report_candidate (r, i)->label, "+ full activation"))
      CU_ASSERT (lora->device_used < cli_fit_report_candidate (r, i)->device_used);
  CU_ASSERT (qlora->device_used < lora->device_used);
  CU_ASSERT_EQUAL (qlora->status, CLI_FIT_FITS);
}

/* A scenario that is already bf16 with checkpointing skips those two candidates. */
static void
test_stack_skips_what_is_set (void)
{
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  g_autofree char *path = stepsim_test_srcpath ("scenarios/llama-3.1-8b-bf16-h100.ini");
  g_autoptr (CliFitReport) r = cli_fit_search (path, NULL, CLI_FIT_STACK, &opt, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  for (guint i = 0; i < cli_fit_report_n_candidates (r); i++)
    {
      const char *label = cli_fit_report_candidate (r, i)->label;
      CU_ASSERT_TRUE (strcmp (label, "+ mixed precision") != 0
                      && strcmp (label, "+ full activation checkpointing") != 0);
    }
  /* S2 is fp32 with checkpointing already: "+ mixed precision" changes the precision, but
   * "+ full activation checkpointing" would add nothing to it, so it is not listed */
  g_autofree char *s2 = stepsim_test_srcpath ("scenarios/s2-llama-2-7b-fp32.ini");
  g_autoptr (CliFitReport) r2 = cli_fit_search (s2, NULL, CLI_FIT_STACK, &opt, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r2);
  gboolean mixed = FALSE;
  for (guint i = 0; i < cli_fit_report_n_candidates (r2); i++)
    {
      const char *label = cli_fit_report_candidate (r2, i)->label;
      mixed |= strcmp (label, "+ mixed precision") == 0;
      CU_ASSERT_STRING_NOT_EQUAL (label, "+ full activation checkpointing");
    }
  CU_ASSERT_TRUE (mixed);
}

static void
test_missing_scenario_is_an_error (void)
{
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  g_autoptr (GError) error = NULL;
  g_autoptr (CliFitReport) r = cli_fit_search ("/nonexistent.ini", NULL, CLI_FIT_STACK, &opt, &error);
  CU_ASSERT_PTR_NULL (r);
  CU_ASSERT_PTR_NOT_NULL (error);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "generic searches = brute force on random thresholds", test_generic_searches_match_brute_force },
    { "micro_batch search = brute force on 1..12", test_micro_batch_matches_brute_force },
    { "seq_len search = brute force on multiples of 1024", test_seq_len_matches_brute_force },
    { "gpus: 1 fits; multi-GPU not feasible in this build", test_gpus },
    { "stack: first fit in the seeds' order", test_stack_is_first_fit_in_order },
    { "stack: skips techniques the scenario has", test_stack_skips_what_is_set },
    { "missing scenario: error", test_missing_scenario_is_an_error },
  };
  return STEPSIM_RUN_TESTS ("fit", tests);
}
