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

static void
check_case (const char *file, const char *const *sets, const char *base, double capacity)
{
  ModelSimResult r, at_demand, at_least, below, plain;
  CU_ASSERT_FATAL (run_at (file, sets, base, capacity, TRUE, &r));
  CU_ASSERT_FATAL (!r.gpu_fits);
  /* the premise: the demand on this GPU, as a GPU's memory, is short */
  double demand = r.lifetime_device;
  CU_ASSERT_FATAL (run_at (file, sets, base, demand, FALSE, &at_demand));
  CU_ASSERT_FALSE (at_demand.gpu_fits);
  /* the answer fits, on the granule, above the demand here */
  double least = r.fits_from;
  CU_ASSERT (least > demand);
  CU_ASSERT_EQUAL (fmod (least, MODEL_FITS_FROM_GRANULE), 0);
  CU_ASSERT_FATAL (run_at (file, sets, base, least, FALSE, &at_least));
  CU_ASSERT_TRUE (at_least.gpu_fits);
  CU_ASSERT_EQUAL (at_least.fits_from, 0); /* fits: nothing searched */
  double window = MAX (MODEL_FITS_FROM_GRANULE, least * MODEL_FITS_FROM_TOLERANCE);
  CU_ASSERT_FATAL (run_at (file, sets, base, least - window - MODEL_FITS_FROM_GRANULE, FALSE,
                           &below));
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
  check_case ("scenarios/s1-llama-3.2-1b-fp32.ini", sets, "A100-80GB-SXM", 20.0 * (1 << 30));
}

/* Llama 3.1 8B with paged 8-bit AdamW at 16,384 tokens on a 20 GiB H100: every state is
 * paged out there and the cache released at each failure, 89.75 GiB demanded; on an
 * 89.75 GiB GPU the run reserves 100.34 GiB. */
static void
test_paged (void)
{
  const char *sets[] = { "training.seq_len=16384", "training.optimizer=paged_adamw_8bit",
                         NULL };
  check_case ("scenarios/llama-3.1-8b-bf16-h100.ini", sets, "H100-SXM", 20.0 * (1 << 30));
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "fits_from: plain run, the cache released on a short GPU", test_plain },
    { "fits_from: paged 8-bit AdamW", test_paged },
  };
  return STEPSIM_RUN_TESTS ("cli/fits_from", tests);
}
