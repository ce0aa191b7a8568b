/* tests/unit/cli/test_rank_classes.c — rank classes (models/plan/rank_classes.h) change no
 * figure: every shipped scenario of at most 512 GPUs (every .ini of scenarios/ and the bench/ cases)
 * is simulated with one rank per class ([run] rank_classes = auto) and with every rank
 * (off); step time and every rank's allocated and device-used peak agree to 1e-9 relative
 * (issue 17). The collapse must also happen where the symmetry holds (fewer ranks replayed
 * than GPUs on the 8-GPU and multi-node cases), and a straggler, which breaks the shift
 * that would move it, must split the classes. */
#include "config.h"

#include <math.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "models/plan/simulate.h"
#include "tests/testlib.h"

static gboolean
close_rel (double a, double b)
{
  return fabs (a - b) <= 1e-9 * MAX (fabs (a), fabs (b));
}

/* Simulates `rel` with `sets` (NULL-terminated, may be NULL) into res; FALSE if it does not
 * load or run (then the test fails). */
static gboolean
simulate (const char *rel, const char *const *sets, ModelSimResult *res)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  if (sc == NULL)
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  if (!cli_scenario_simulate (sc, NULL, res, &e))
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  return TRUE;
}

/* Collapsed against full on `rel`; returns the ranks the collapsed run replayed. */
static guint
check_equivalent (const char *rel)
{
  static const char *const off[] = { "run.rank_classes=off", NULL };
  ModelSimResult a = { 0 }, b = { 0 };
  CU_ASSERT_FATAL (simulate (rel, NULL, &a));
  CU_ASSERT_FATAL (simulate (rel, off, &b));
  CU_ASSERT_EQUAL (b.rank_classes, b.n_ranks);
  CU_ASSERT_EQUAL (a.n_ranks, b.n_ranks);
  gboolean same = close_rel (a.step_time, b.step_time) && a.fits == b.fits
                  && close_rel (a.device_used, b.device_used)
                  && close_rel (a.lifetime_device, b.lifetime_device);
  for (guint r = 0; r < a.n_ranks; r++)
    same = same && close_rel (a.rank_peak_allocated[r], b.rank_peak_allocated[r])
           && close_rel (a.rank_device_used[r], b.rank_device_used[r]);
  if (!same)
    g_printerr ("%s: collapsed %.12g s, %.12g B; full %.12g s, %.12g B\n", rel, a.step_time,
                a.device_used, b.step_time, b.device_used);
  CU_ASSERT (same);
  guint classes = a.rank_classes;
  model_sim_result_clear (&a);
  model_sim_result_clear (&b);
  return classes;
}

static void
test_shipped_scenarios (void)
{
  g_autofree char *dir = stepsim_test_srcpath ("scenarios");
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  CU_ASSERT_FATAL (d != NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".ini"))
      g_ptr_array_add (names, g_strdup_printf ("scenarios/%s", n));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0); /* fixed order */
  CU_ASSERT (names->len >= 10);
  for (guint i = 0; i < names->len; i++)
    check_equivalent (g_ptr_array_index (names, i));
}

/* The bench/ cases: 8 GPUs of one DGX H100 (PCIe switches of two GPUs: the shift by 2 is
 * the least that maps the node onto itself), 16 and 64 nodes (a whole node). */
static void
test_bench_collapse (void)
{
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini"), 2);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini"), 8);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-fsdp-64xdgx-h100.ini"), 8);
}

/* A straggler at rank 5 of 8 breaks every shift that moves rank 5 onto a normal rank: only
 * the identity is left, and the run replays every rank. */
static void
test_straggler_splits (void)
{
  static const char *const sets[] = { "run.stragglers=5:1.3", NULL };
  ModelSimResult a = { 0 };
  CU_ASSERT_FATAL (simulate ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini", sets, &a));
  CU_ASSERT_EQUAL (a.rank_classes, 8);
  model_sim_result_clear (&a);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "shipped scenarios: collapsed = full to 1e-9", test_shipped_scenarios },
    { "bench cases collapse to a period of 2, 8, 8 ranks", test_bench_collapse },
    { "a straggler splits the classes", test_straggler_splits },
  };
  return STEPSIM_RUN_TESTS ("cli/rank_classes", tests);
}
