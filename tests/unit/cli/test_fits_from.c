/* tests/unit/cli/test_fits_from.c — the least GPU memory at which a run fits
 * (ModelSimResult.fits_from, models/plan/simulate.c find_fits_from) on shipped scenarios.
 *
 * Why a search: PyTorch's caching allocator frees its cached blocks and retries when
 * cudaMalloc fails, and a paged optimizer spills what the capacity leaves no room for, so
 * a run's demand on a short GPU is lower than what it reserves on a GPU of that size: the
 * demand is no size that fits. Each case checks that premise (the demand, given as the
 * GPU's memory, is still short), then the search's answer: the run fits there, and it is
 * short one tolerance window below (the window, MAX (granule, hi x tolerance), is how far
 * above the threshold the bisection may stop; below the threshold nothing fits). */
#include "config.h"

#include <math.h>
#include "sim/units.h"
#include "tests/unit/cli/simulate.h"

/* `file` with `sets` plus the GPU's memory set to `capacity` B (group gpu.G based on
 * `base`), simulated with or without the search. */
static gboolean
run_at (const char *file, const char *const *sets, const char *base, double capacity,
        gboolean search, ModelSimResult *r)
{
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  for (guint i = 0; sets[i] != NULL; i++)
    g_strv_builder_add (b, sets[i]);
  g_autofree char *gpu = g_strdup_printf ("gpu.G.base=%s", base);
  g_autofree char *memory = g_strdup_printf ("gpu.G.memory=%.0f B", capacity);
  g_strv_builder_add_many (b, gpu, "cluster.gpu=G", memory, NULL);
  g_auto (GStrv) all = g_strv_builder_end (b);
  g_autofree char *path = stepsim_test_srcpath (file);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, (const char *const *) all, &e);
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  in.find_fits_from = search;
  if (sc == NULL || !model_simulate (&in, NULL, r, &e))
    {
      g_printerr ("\n  %s: %s\n", file, e ? e->message : "?");
      return FALSE;
    }
  return TRUE;
}

/* `monotone`: the case's fitting sizes form an interval (no fragmentation cliff near the
 * threshold), so one window below the answer is short too. */
static void
check_case (const char *file, const char *const *sets, const char *base, double capacity,
            gboolean monotone)
{
  ModelSimResult r, at_demand, at_least, below, plain;
  CU_ASSERT_FATAL (run_at (file, sets, base, capacity, TRUE, &r));
  CU_ASSERT_FATAL (!r.gpu_fits);
  /* the premise: the demand on this GPU, as a GPU's memory, is short */
  double demand = r.lifetime_device;
  CU_ASSERT_FATAL (run_at (file, sets, base, demand, FALSE, &at_demand));
  CU_ASSERT_FALSE (at_demand.gpu_fits);
  /* the answer fits, above the demand here, and is the size its printed form reads back as
   * (the verdict prints it rounded up: the same value), in whole bytes (/summary's byte
   * counts are whole: 131.13 GiB is 140799765381 B, not 140799765381.12) */
  double least = r.fits_from;
  CU_ASSERT (least > demand);
  CU_ASSERT (least == floor (least) && r.fits_from_short == floor (r.fits_from_short));
  g_autofree char *shown = sim_units_format_up (least, SIM_DIM_BYTES, 2);
  double back = 0;
  CU_ASSERT (sim_units_parse (shown, SIM_DIM_BYTES, &back, NULL) && fabs (back - least) < 1);
  CU_ASSERT_FATAL (run_at (file, sets, base, least, FALSE, &at_least));
  CU_ASSERT_TRUE (at_least.gpu_fits);
  CU_ASSERT_EQUAL (at_least.fits_from, 0); /* fits: nothing searched */
  CU_ASSERT (r.fits_from_short >= capacity && r.fits_from_short < least);
  CU_ASSERT (least - r.fits_from_short <= least * MODEL_FITS_FROM_TOLERANCE);
  double window = least * MODEL_FITS_FROM_TOLERANCE;
  CU_ASSERT_FATAL (run_at (file, sets, base, least - 2 * window, FALSE, &below));
  if (monotone)
    CU_ASSERT_FALSE (below.gpu_fits);
  /* without the search the field stays 0 and nothing else changes */
  CU_ASSERT_FATAL (run_at (file, sets, base, capacity, FALSE, &plain));
  CU_ASSERT_EQUAL (plain.fits_from, 0);
  CU_ASSERT_EQUAL (plain.lifetime_device, r.lifetime_device);
  CU_ASSERT_EQUAL (plain.step_time, r.step_time);
  g_printerr ("\n  %s: demand %.3f GiB on %.2f GiB, fits from %.3f GiB\n", file,
              demand / 1073741824, capacity / 1073741824, least / 1073741824);
  model_sim_result_clear (&r);
  model_sim_result_clear (&at_demand);
  model_sim_result_clear (&at_least);
  model_sim_result_clear (&below);
  model_sim_result_clear (&plain);
}

/* S1 (Llama 3.2 1B, fp32 AdamW, full checkpointing) at 16,384 tokens on a 20 GiB A100: the
 * allocator releases its cache at every failed cudaMalloc there, so it demands less than it
 * reserves on a GPU that size (47.13 against 47.51 GiB). */
static void
test_plain (void)
{
  const char *sets[] = { "training.seq_len=16384", NULL };
  check_case ("scenarios/s1-llama-3.2-1b-fp32.ini", sets, "A100-80GB-SXM", 20.0 * (1 << 30),
              TRUE);
}

/* Llama 3.1 8B with paged 8-bit AdamW at 16,384 tokens on a 20 GiB H100: every state is
 * paged out there and the cache released at each failure, 89.75 GiB demanded; on an
 * 89.75 GiB GPU the run reserves more. Near its threshold the fitting sizes are not an
 * interval (97 GiB holds it, 98 does not, 98.8 does: the cache's fragmentation). */
static void
test_paged (void)
{
  const char *sets[] = { "training.seq_len=16384", "training.optimizer=paged_adamw_8bit",
                         NULL };
  check_case ("scenarios/llama-3.1-8b-bf16-h100.ini", sets, "H100-SXM", 20.0 * (1 << 30),
              FALSE);
}

/* A paged optimizer evicts on demand as much of its states as the GPU needs (UVM), so more
 * memory never makes a paged run fail. Before the spill was grown until the run fits, it
 * was sized from one fresh-allocator replay against the capacity (not the steady step on
 * the first step's cache, whose reserved peak is higher): Llama 3.1 8B at 8,192 tokens
 * fitted on 82.09 and 86 GiB and was short at 82.5-85.5 and 86.5-92.5 GiB. On a grid of
 * 0.5 GiB from 76 to 95 GiB, once a size fits every larger one does, and the least that
 * fits is the search's (fits_from within its window). */
static void
test_paged_monotone (void)
{
  const char *sets[] = { "training.optimizer=paged_adamw_8bit", NULL };
  const char *file = "scenarios/llama-3.1-8b-bf16-h100.ini";
  const double GiB = 1 << 30;
  double first = 0;
  guint n_short_after = 0;
  for (double c = 76 * GiB; c <= 95 * GiB; c += 0.5 * GiB)
    {
      ModelSimResult at;
      CU_ASSERT_FATAL (run_at (file, sets, "H100-SXM", c, FALSE, &at));
      if (at.gpu_fits && first == 0)
        first = c;
      else if (!at.gpu_fits && first > 0)
        {
          g_printerr ("\n  paged run short at %.2f GiB, fits at %.2f GiB\n", c / GiB,
                      first / GiB);
          n_short_after++;
        }
      model_sim_result_clear (&at);
    }
  CU_ASSERT (first > 76 * GiB);
  CU_ASSERT_EQUAL (n_short_after, 0);
  ModelSimResult r;
  CU_ASSERT_FATAL (run_at (file, sets, "H100-SXM", 60 * GiB, TRUE, &r));
  /* the search's threshold: bisection stops with its short lower end within
   * MODEL_FITS_FROM_TOLERANCE of the answer, so the answer lies in (T, T / (1 − tol)] for
   * the true threshold T ∈ (first − 0.5 GiB, first] (plus the 0.01 GiB its printable sizes
   * round up by) */
  CU_ASSERT (r.fits_from > first - 0.5 * GiB);
  CU_ASSERT (r.fits_from <= first / (1 - MODEL_FITS_FROM_TOLERANCE) + 0.01 * GiB);
  model_sim_result_clear (&r);
}

/* S2 (Llama 2 7B, fp32 AdamW) on 80 GiB: the caching allocator's fragmentation gives the
 * fitting sizes a gap (127.54-128.00 GiB hold it, 128.25-131.00 GiB do not, 131.13 GiB and
 * up do). "needs X" must be a size from which larger GPUs fit too: the search checks 1, 2, 4
 * and 8 % above its answer and goes on above a short one, keeping the smaller answer as the
 * island. Checked here: every one of those sizes above fits_from holds the run, the island
 * holds it, the size above the island the search found short does not, and it lies between
 * the two. */
static void
test_island (void)
{
  const char *sets[] = { NULL };
  const char *file = "scenarios/s2-llama-2-7b-fp32.ini";
  ModelSimResult r, at;
  CU_ASSERT_FATAL (run_at (file, sets, "A100-80GB-SXM", 80.0 * (1 << 30), TRUE, &r));
  CU_ASSERT_FATAL (r.fits_from > 0);
  CU_ASSERT_FATAL (r.fits_from_island > 0);
  CU_ASSERT (r.fits_from_island < r.fits_from_island_short);
  CU_ASSERT (r.fits_from_island_short < r.fits_from);
  static const double above[] = { 1.0, 1.01, 1.02, 1.04, 1.08 };
  for (guint k = 0; k < G_N_ELEMENTS (above); k++)
    {
      CU_ASSERT_FATAL (run_at (file, sets, "A100-80GB-SXM", r.fits_from * above[k], FALSE, &at));
      CU_ASSERT_TRUE (at.gpu_fits);
      model_sim_result_clear (&at);
    }
  CU_ASSERT_FATAL (run_at (file, sets, "A100-80GB-SXM", r.fits_from_island, FALSE, &at));
  CU_ASSERT_TRUE (at.gpu_fits);
  model_sim_result_clear (&at);
  CU_ASSERT_FATAL (run_at (file, sets, "A100-80GB-SXM", r.fits_from_island_short, FALSE, &at));
  CU_ASSERT_FALSE (at.gpu_fits);
  model_sim_result_clear (&at);
  g_printerr ("\n  S2: fits from %.2f GiB, also in %.2f GiB, not in %.2f GiB\n",
              r.fits_from / (1 << 30), r.fits_from_island / (1 << 30),
              r.fits_from_island_short / (1 << 30));
  model_sim_result_clear (&r);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "fits_from: plain run, the cache released on a short GPU", test_plain },
    { "fits_from: paged 8-bit AdamW", test_paged },
    { "paged 8-bit AdamW: every larger GPU fits too", test_paged_monotone },
    { "a gap in the fitting sizes: the answer is above it", test_island },
  };
  return STEPSIM_RUN_TESTS ("cli/fits_from", tests);
}
