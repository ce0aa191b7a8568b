/* tests/unit/cli/test_paged.c — the paged optimizer end to end (models/plan/simulate.c's two passes,
 * models/plan/plan_paged.h) on tests/validation/paged-llama-3.2-1b.ini: Llama 3.2 1B, bf16 mixed,
 * paged 8-bit AdamW on an A100 cut down to 13 GiB.
 *
 * Spill oracle: with S optimizer-state bytes per rank, R the reserved peak of the step when
 * memory is no constraint and C = GPU memory − CUDA context (what the allocator may
 * reserve), everything else peaks at R − S, and the states that do not fit beside it are
 * S − (C − (R − S)) = R − C (when positive), rounded up to whole 2 MiB UVM blocks. R is
 * measured on the same scenario with the GPU's memory raised to 80 GiB, where nothing is
 * paged and the allocator never has to release its cache. */
#include "config.h"

#include <math.h>
#include "cli/report/report.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "models/plan/plan_paged.h"
#include "tests/testlib.h"

#define PAGED "tests/validation/paged-llama-3.2-1b.ini"
#define BIG_GPU "gpu.A100-13GB.memory=80 GiB"

/* Loads and simulates PAGED with `sets` (NULL-terminated, may be NULL) into *r and, when
 * `rec` is not NULL, its summary; the scenario in *sc_out (caller frees) when not NULL. */
static gboolean
simulate (const char *const *sets, ModelSimResult *r, SimRecorder *rec, CliScenario **sc_out)
{
  g_autofree char *path = stepsim_test_srcpath (PAGED);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  if (sc == NULL || !model_simulate (&in, rec, r, &e))
    {
      g_printerr ("\n  %s: %s\n", PAGED, e ? e->message : "?");
      return FALSE;
    }
  if (rec != NULL)
    cli_report_fill_summary (rec, sc, r);
  if (sc_out != NULL)
    *sc_out = g_steal_pointer (&sc);
  return TRUE;
}

/* Plain 8-bit AdamW keeps all its states on the 13 GiB GPU and runs out of memory (the LM
 * head's logits in the backward); the paged one fits by moving the excess to host DRAM. */
static void
test_fits_where_8bit_ooms (void)
{
  ModelSimResult plain, paged;
  const char *sets[] = { "training.optimizer=adamw_8bit", NULL };
  CU_ASSERT_FATAL (simulate (sets, &plain, NULL, NULL));
  CU_ASSERT_FATAL (simulate (NULL, &paged, NULL, NULL));
  CU_ASSERT_FALSE (plain.fits);
  CU_ASSERT_TRUE (plain.oom);
  CU_ASSERT_EQUAL (plain.paged_spill, 0);
  CU_ASSERT_TRUE (paged.fits);
  CU_ASSERT_FALSE (paged.oom);
  CU_ASSERT (paged.device_used <= paged.capacity);
  CU_ASSERT (paged.paged_spill > 0);
  model_sim_result_clear (&plain);
  model_sim_result_clear (&paged);
}

/* The spill is at most R − C (file comment) rounded up to a 2 MiB block, and at least
 * A − C with A the allocated peak: on the cut-down GPU the allocator may release cached
 * blocks (the forward's transients, cached in segments the big GPU keeps) before the
 * states are paged, so the reserved peak beside the states can be below R − S, never
 * below what the tensors themselves need. The host DRAM holds exactly the spill (nothing
 * else is offloaded). */
static void
test_spill_closed_form (void)
{
  ModelSimResult big, paged;
  const char *sets[] = { BIG_GPU, NULL };
  CliScenario *sc = NULL;
  CU_ASSERT_FATAL (simulate (sets, &big, NULL, NULL));
  CU_ASSERT_FATAL (simulate (NULL, &paged, NULL, &sc));
  CU_ASSERT_EQUAL (big.paged_spill, 0);
  double c = sc->node.gpu->memory_capacity - sc->node.gpu->cuda_context;
  double expected = big.peak_reserved - c, floor = big.peak_allocated - c;
  CU_ASSERT (floor > 0);
  g_printerr ("\n  paged spill %.0f B, R - C = %.0f B, A - C = %.0f B\n", paged.paged_spill,
              expected, floor);
  CU_ASSERT (paged.paged_spill >= floor);
  CU_ASSERT (paged.paged_spill < expected + MODEL_PAGED_GRANULE);
  CU_ASSERT_EQUAL (paged.host_peak, paged.paged_spill);
  CU_ASSERT_EQUAL (paged.host_peak_mix[MODEL_MEM_OPTIMIZER_STATE], paged.paged_spill);
  CU_ASSERT_EQUAL (paged.offload_h2d, paged.paged_spill);
  CU_ASSERT_EQUAL (paged.offload_d2h, paged.paged_spill);
  cli_scenario_free (sc);
  model_sim_result_clear (&big);
  model_sim_result_clear (&paged);
}

/* With room for everything nothing is paged and the run is plain 8-bit AdamW's: same step
 * time, no host bytes, no migration time. */
static void
test_no_spill_when_it_fits (void)
{
  ModelSimResult big, plain;
  const char *sets[] = { BIG_GPU, NULL };
  const char *plain_sets[] = { BIG_GPU, "training.optimizer=adamw_8bit", NULL };
  CU_ASSERT_FATAL (simulate (sets, &big, NULL, NULL));
  CU_ASSERT_FATAL (simulate (plain_sets, &plain, NULL, NULL));
  CU_ASSERT_TRUE (big.fits);
  CU_ASSERT_EQUAL (big.paged_spill, 0);
  CU_ASSERT_EQUAL (big.paged_time, 0);
  CU_ASSERT_EQUAL (big.host_peak, 0);
  CU_ASSERT_EQUAL (big.step_time, plain.step_time);
  model_sim_result_clear (&big);
  model_sim_result_clear (&plain);
}

/* The migrations run on an otherwise idle PCIe link (nothing else is offloaded), in K
 * chunks of S/K each way, each α + (S/K) / (e·B) (e = MODEL_PAGED_MIGRATION_EFFICIENCY, B
 * the GPU's PCIe bandwidth, α its latency): 2 (K α + S / (e·B)) in all; the step is slower
 * than plain 8-bit AdamW's by at least the last page-out, after the last update. The
 * summary records paged_spill (B) and paged_time (s). */
static void
test_transfer_time (void)
{
  ModelSimResult plain, paged;
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  const char *sets[] = { "training.optimizer=adamw_8bit", NULL };
  CliScenario *sc = NULL;
  CU_ASSERT_FATAL (simulate (sets, &plain, NULL, NULL));
  CU_ASSERT_FATAL (simulate (NULL, &paged, rec, &sc));
  const HwGpuSpec *g = sc->node.gpu;
  double s = paged.paged_spill, bw = MODEL_PAGED_MIGRATION_EFFICIENCY * g->pcie_bandwidth;
  guint k = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    k += g_str_has_prefix (sim_recorder_task (rec, i)->label, "page in optimizer states");
  CU_ASSERT_FATAL (k >= 1);
  STEPSIM_ASSERT_REL (paged.paged_time, 2 * (k * g->pcie_latency + s / bw), 1e-9);
  CU_ASSERT (paged.step_time - plain.step_time >= g->pcie_latency + s / k / bw);
  double v = -1;
  CU_ASSERT (sim_recorder_summary_get (rec, "paged_spill", &v) && v == s);
  CU_ASSERT (sim_recorder_summary_get (rec, "paged_time", &v) && v == paged.paged_time);
  g_printerr ("\n  spill %.1f MiB, migrations %.2f ms, step %.2f ms vs %.2f ms\n",
              s / 1048576, 1e3 * paged.paged_time, 1e3 * paged.step_time, 1e3 * plain.step_time);
  cli_scenario_free (sc);
  model_sim_result_clear (&plain);
  model_sim_result_clear (&paged);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "paged 8-bit AdamW fits where adamw_8bit OOMs", test_fits_where_8bit_ooms },
    { "paged spill = R - C, held in host DRAM", test_spill_closed_form },
    { "no spill when everything fits: plain 8-bit run", test_no_spill_when_it_fits },
    { "migrations 2 (alpha + S/(e B)), step slower by >= 2S/(e B)", test_transfer_time },
  };
  return STEPSIM_RUN_TESTS ("cli/paged", tests);
}
