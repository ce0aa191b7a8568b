/* tests/unit/cli/test_memory_validation.c — published.md M1–M5: bert-large-uncased on one
 * V100-SXM2 16 GB (HF transformers docs, "Efficient training on a single GPU"), device-used
 * memory as nvidia-smi shows it ("MB" there are MiB: nvidia-smi counts 2^20 B).
 * Scenarios: tests/validation/m*.ini (their comments state the assumed settings).
 *
 * Tolerance: each row's own, what its measurement supports, no wider (a regression of more
 * than the noise of the measurement must fail). The figures are single nvidia-smi readings
 * (1 MiB resolution) of one PyTorch/CUDA install: the CUDA context alone differs by ~1 %
 * of these totals between driver and CUDA versions, and the caching allocator's segment
 * rounding by ~1 % more; so 2 % for rows predicted within 1 % (M1 −0.5 %, M2 0.0 %, M3
 * 0.0 %), and for M4 (−2.4 %, the fp16 copies' allocator layout, scenario comment) its
 * error plus that 1 %, 3.5 %. The 5 % of the target is the bound for new cases. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/report/report.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "hardware/catalog.h"
#include "models/arch/inventory.h"
#include "models/memory/allocator.h"
#include "sim/units.h"
#include "tests/testlib.h"

#define MiB (1024.0 * 1024.0)

/* Device-used (MiB) of a validation scenario; NAN on failure. */
static double
device_used_mib (const char *file)
{
  g_autofree char *path = stepsim_test_srcpath (file);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
  ModelSimResult r;
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  if (sc == NULL || !model_simulate (&in, NULL, &r, &e))
    {
      g_printerr ("\n  %s: %s\n", file, e ? e->message : "?");
      return NAN;
    }
  double mib = r.device_used / MiB;
  g_printerr ("\n  %s: predicted %.0f MiB (allocated %.0f, reserved %.0f, context %.0f)%s\n",
              file, mib, r.peak_allocated / MiB, r.peak_reserved / MiB, r.cuda_context / MiB,
              r.fits ? "" : " OOM");
  model_sim_result_clear (&r);
  return mib;
}

static void
check_row (const char *id, const char *file, double measured, double tolerance)
{
  double p = device_used_mib (file);
  g_printerr ("  %s: measured %.0f MiB, error %+.1f %% (tolerance %.1f %%)\n", id, measured,
              100 * (p - measured) / measured, 100 * tolerance);
  STEPSIM_ASSERT_REL (p, measured, tolerance);
}

/* M2: fp32, GA 4, MBS 1: 8,681 MB. Model states 16 B/param (gradients kept, PyTorch 1.x
 * zero_grad) + one sequence's activations + the allocator's rounding + context. */
static void
test_m2 (void)
{
  check_row ("M2", "tests/validation/m2-bert-large-fp32-ga4.ini", 8681, 0.02);
}

/* M3: as M2 with gradient checkpointing: 6,775 MB. */
static void
test_m3 (void)
{
  check_row ("M3", "tests/validation/m3-bert-large-fp32-ga4-ckpt.ini", 6775, 0.02);
}

/* M5: CUDA context alone 1,343 MB (the catalog's V100 context is that measurement, so this
 * half only checks the catalog carries it), and context + fp32 weights loaded 2,631 MB:
 * model.to("cuda") allocates every parameter tensor separately through the caching
 * allocator, so the prediction is the context plus the reserved bytes of the 4-byte
 * parameter tensors of models/arch/arch.h's list fed to the allocator model. */
static void
test_m5 (void)
{
  const HwGpuSpec *v100 = hw_catalog_gpu ("V100-16GB-SXM2", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v100);
  STEPSIM_ASSERT_REL (v100->cuda_context / MiB, 1343, 0.001); /* the measurement itself */
  g_autofree char *path = stepsim_test_srcpath ("models/configs/bert-large-uncased.json");
  g_autoptr (ModelArch) arch = model_arch_load_hf_config (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
  g_autoptr (ModelAllocator) a = model_allocator_new (v100->memory_capacity - v100->cuda_context,
                                                      FALSE);
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *x = model_inventory_tensor (inv, k);
      for (guint64 i = 0; i < model_inventory_copies (inv, x, MODEL_INVENTORY_ALL); i++)
        model_allocator_malloc (a, 4.0 * (double) model_tensor_numel (x), NULL);
    }
  double p = (v100->cuda_context + model_allocator_reserved (a)) / MiB;
  g_printerr ("\n  M5: context + fp32 weights predicted %.0f MiB (weights %.1f MiB "
              "allocated, %.1f reserved), measured 2631\n", p,
              model_allocator_allocated (a) / MiB, model_allocator_reserved (a) / MiB);
  /* +0.1 % today; 1 %: the allocator's rounding of 390 tensors, nothing else varies here */
  STEPSIM_ASSERT_REL (p, 2631, 0.01);
}

/* M1: fp32, MBS 4: 14,949 MB. As M2 with four sequences: the per-sequence activations,
 * eager attention's s² tensors above all, count four times. The measurement ran PyTorch
 * 1.10, whose softmax keeps its input as well as its output (scenario comment): one more
 * fp32 b·a·s² tensor per layer, 64 MiB at b = 4, 1.5 GiB over 24 layers. Without it M1
 * came out 11 % low, M2 4 % low: a gap proportional to the micro-batch. */
static void
test_m1 (void)
{
  check_row ("M1", "tests/validation/m1-bert-large-fp32-mbs4.ini", 14949, 0.02);
}

/* M4: fp16 AMP, MBS 4: 13,939 MB. Autocast keeps softmax and the norms in fp32 (the
 * masked scores are fp32 through the fp32 attention mask), and each of BERT's separate
 * query, key and value projections saves its own fp16 cast of the layer input
 * (models/ops/cost.c). The model stays fp32, so the states are as M1's. */
static void
test_m4 (void)
{
  check_row ("M4", "tests/validation/m4-bert-large-fp16-amp-mbs4.ini", 13939, 0.035);
}

/* M11: fp16 AMP, GA 4, MBS 1, gradient checkpointing: 7,275 MB, 500 MB above M3 (fp32,
 * same otherwise) although fp16 activations are smaller: autocast's cache keeps the fp16
 * copy of every linear weight (2 B × 302M, 578 MiB) from the checkpointed forward until
 * the autocast region around forward and loss exits (models/plan/plan_ckpt.c). */
static void
test_m11 (void)
{
  check_row ("M11", "tests/validation/m11-bert-large-fp16-amp-ga4-ckpt.ini", 7275, 0.03);
}

/* M12: as M11 with transformers' Adafactor: 4,847 MB. No first moment and a factored
 * second moment (a few MiB) in place of AdamW's 8 B/param; the same weight cache. */
static void
test_m12 (void)
{
  check_row ("M12", "tests/validation/m12-bert-large-fp16-amp-ga4-ckpt-adafactor.ini", 4847, 0.03);
}

/* Ordering the source shows: M1 (MBS 4) > M4 (fp16 amp, MBS 4) > M2 (GA 4, MBS 1) > M3
 * (+ checkpointing). */
static void
test_ordering (void)
{
  double m1 = device_used_mib ("tests/validation/m1-bert-large-fp32-mbs4.ini");
  double m2 = device_used_mib ("tests/validation/m2-bert-large-fp32-ga4.ini");
  double m3 = device_used_mib ("tests/validation/m3-bert-large-fp32-ga4-ckpt.ini");
  double m4 = device_used_mib ("tests/validation/m4-bert-large-fp16-amp-mbs4.ini");
  CU_ASSERT (m1 > m4 && m4 > m2 && m2 > m3);
}

/* OOM diagnosis: Llama-2-7B in fp32 with AdamW on one 80 GB GPU (S2) runs out of memory:
 * 16 B/param of states alone are 107.8 GB. torch.optim's AdamW creates its states at the
 * first optimizer step (models/plan/plan.h model_plan_creation_task), after the backward
 * made the fp32 gradients (4Ψ) beside the fp32 weights (4Ψ): 53.9 GB before any state, so
 * the first step raises in "optimizer step" while creating them, an optimizer_state tensor
 * the request that fails. The states granted before it are live, the largest holder,
 * allocated by "optimizer step", fewer than C − 8Ψ bytes (C = 79 GiB for the allocator;
 * 8Ψ = weights + gradients); then the weights (4Ψ, "initial state"). The summary prints
 * the moment, the task, the first step, and the holders. */
static void
test_oom_diagnosis (void)
{
  g_autofree char *path = stepsim_test_srcpath ("scenarios/s2-llama-2-7b-fp32.ini");
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  ModelSimResult r;
  ModelSimInput in = cli_scenario_sim_input (sc);
  CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
  CU_ASSERT_TRUE (r.oom);
  CU_ASSERT_FALSE (r.fits);
  CU_ASSERT_PTR_NOT_NULL (r.oom_task);
  CU_ASSERT (r.oom_requested > 0);
  CU_ASSERT (r.oom_reserved + r.oom_requested > r.capacity - r.cuda_context);
  CU_ASSERT_FATAL (r.oom_n_holders >= 2);
  double psi = 6738415616.0;
  CU_ASSERT_TRUE (r.oom_in_first_step);
  CU_ASSERT_TRUE (r.first_step_oom);
  CU_ASSERT_STRING_EQUAL (r.oom_task, "optimizer step");
  CU_ASSERT_EQUAL (r.oom_category, MODEL_MEM_OPTIMIZER_STATE);
  CU_ASSERT_EQUAL (r.oom_holders[0].category, MODEL_MEM_OPTIMIZER_STATE);
  CU_ASSERT (r.oom_holders[0].bytes > 0);
  CU_ASSERT (r.oom_holders[0].bytes < r.capacity - r.cuda_context - 8 * psi);
  CU_ASSERT_STRING_EQUAL (r.oom_holders[0].task, "optimizer step");
  CU_ASSERT_EQUAL (r.oom_holders[1].category, MODEL_MEM_WEIGHTS);
  CU_ASSERT_EQUAL (r.oom_holders[1].bytes, 4 * psi);
  CU_ASSERT_STRING_EQUAL (r.oom_holders[1].task, "initial state");
  CU_ASSERT_EQUAL (r.oom_mix[MODEL_MEM_WEIGHTS], 4 * psi);
  CU_ASSERT_EQUAL (r.oom_mix[MODEL_MEM_GRADIENTS], 4 * psi);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  cli_report_print (f, sc, &r, FALSE);
  fclose (f);
  g_autofree char *expect = g_strdup_printf ("during \"%s\"", r.oom_task);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "out of memory (rank 0)"));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, expect));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "optimizer_state  optimizer step"));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "out of memory (rank 0) in the first step at t ="));
  free (text);
  model_sim_result_clear (&r);
}

/* Memory right after model load and initialisation, its own figure (models/plan/plan.h
 * model_plan_load_bytes): S1, Llama-3.2-1B in fp32 on one GPU with torch.optim AdamW, is
 * the fp32 weights alone, 4Ψ = 4 × 1,235,814,400 B (the optimizer's states appear at the
 * first step, gradients in the first backward). The summary prints it and /summary records
 * it as memory_after_load with unit "B". */
static void
test_memory_after_load (void)
{
  g_autofree char *path = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  ModelSimResult r;
  ModelSimInput in = cli_scenario_sim_input (sc);
  CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
  double psi = (double) model_arch_n_params (sc->arch);
  CU_ASSERT_DOUBLE_EQUAL (psi, 1235814400.0, 0);
  CU_ASSERT_DOUBLE_EQUAL (r.load_bytes, 4 * psi, 0);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  cli_report_print (f, sc, &r, FALSE);
  fclose (f);
  g_autofree char *v = sim_units_format (4 * psi, SIM_DIM_BYTES, 2);
  g_autofree char *line = g_strdup_printf ("  %-22s %14s", "after model load", v);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, line));
  free (text);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  cli_report_fill_summary (rec, sc, &r);
  gboolean found = FALSE;
  for (guint i = 0; i < sim_recorder_n_summary (rec); i++)
    {
      const SimSummaryEntry *e = sim_recorder_summary_entry (rec, i);
      if (strcmp (e->name, "memory_after_load") != 0)
        continue;
      found = TRUE;
      CU_ASSERT_STRING_EQUAL (e->unit, "B");
      CU_ASSERT_DOUBLE_EQUAL (e->value, 4 * psi, 0);
    }
  CU_ASSERT (found);
  model_sim_result_clear (&r);
}

/* Steady state against the whole run (models/plan/simulate.h): M16a's scenario at 2,048 tokens, QLoRA
 * under bf16_amp. Its load peaks above the load bytes by the 16-bit original of the largest
 * non-quantized tensor PEFT casts to fp32 (the 128256 × 4096 embedding, 2 B each:
 * models/plan/plan_state.c); the lifetime figures are the maxima of the steady-state step
 * and that load; the summary prints the loading peak and /summary records load_peak,
 * lifetime_allocated and lifetime_device_used in B. */
static void
test_lifetime_peak (void)
{
  g_autofree char *path = stepsim_test_srcpath ("tests/validation/m16-llama-3.1-8b-qlora-fit-16gb.ini");
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  ModelSimResult r;
  ModelSimInput in = cli_scenario_sim_input (sc);
  CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
  STEPSIM_ASSERT_REL (r.load_peak - r.load_bytes, 2.0 * 128256 * 4096, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (r.lifetime_allocated, MAX (r.need_allocated, r.load_peak), 0);
  CU_ASSERT_DOUBLE_EQUAL (r.lifetime_device, MAX (r.need_device, r.load_peak + r.cuda_context), 0);
  CU_ASSERT_EQUAL (r.gpu_fits, !r.oom && r.lifetime_device <= r.capacity);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  cli_report_print (f, sc, &r, FALSE);
  fclose (f);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "loading peak"));
  free (text);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  cli_report_fill_summary (rec, sc, &r);
  const char *names[] = { "load_peak", "lifetime_allocated", "lifetime_device_used" };
  const double values[] = { r.load_peak, r.lifetime_allocated, r.lifetime_device };
  for (guint k = 0; k < G_N_ELEMENTS (names); k++)
    {
      gboolean found = FALSE;
      for (guint i = 0; i < sim_recorder_n_summary (rec); i++)
        {
          const SimSummaryEntry *e = sim_recorder_summary_entry (rec, i);
          if (strcmp (e->name, names[k]) != 0)
            continue;
          found = TRUE;
          CU_ASSERT_STRING_EQUAL (e->unit, "B");
          CU_ASSERT_DOUBLE_EQUAL (e->value, values[k], 0);
        }
      CU_ASSERT (found);
    }
  model_sim_result_clear (&r);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "M2 bert-large fp32 GA 4 within 2 %", test_m2 },
    { "M3 bert-large fp32 GA 4 + checkpointing within 2 %", test_m3 },
    { "M5 context + fp32 weights within 1 %", test_m5 },
    { "memory after model load: its own figure", test_memory_after_load },
    { "lifetime peak: the load beside the steady-state step", test_lifetime_peak },
    { "M1 bert-large fp32 MBS 4 within 2 %", test_m1 },
    { "M11: fp16 AMP + GA 4 + checkpointing, 7,275 MB", test_m11 },
    { "M12: as M11 with Adafactor, 4,847 MB", test_m12 },
    { "M4 bert-large fp16 amp MBS 4 within 3.5 %", test_m4 },
    { "M1 > M4 > M2 > M3", test_ordering },
    { "OOM diagnosis names moment, task and holders", test_oom_diagnosis },
  };
  return STEPSIM_RUN_TESTS ("validation/memory", tests);
}
