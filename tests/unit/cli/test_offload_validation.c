/* tests/unit/cli/test_offload_validation.c — offload against published figures
 * (../shared/validation/published.md: S6, S10, M7, M8) and the [offload] scenario group.
 * Scenarios: scenarios/s6-zero-offload-13b-v100.ini and tests/validation/offload-*.ini;
 * their comments state the assumed settings and stand-in models.
 *
 * DeepSpeed's estimator (M7, M8) counts model states only: GPU = 16-bit parameters (and
 * what it assumes of gradients and gathered layers), CPU = host states × an
 * additional_buffer_factor of 1.5 (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
 * estimate_zero2/3_model_states_mem_needs). stepsim's host ledger holds the states without
 * slack, so its host peak is compared with the estimator's CPU figure ÷ 1.5, within 2 %.
 * GPU figures are compared with stepsim's GPU model states (state_bytes, plus the gathered
 * parameter buffers under ZeRO-3) within 5 % where the two count the same things; the rows
 * where they do not are "known gap" tests that assert the current band and say why. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/report/report.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "sim/units.h"
#include "tests/testlib.h"

#define GiB (1024.0 * 1024.0 * 1024.0)
#define ESTIMATOR_BUFFER_FACTOR 1.5

/* Loads and simulates `file` with `sets` (NULL-terminated, may be NULL); FALSE on error. */
static gboolean
simulate (const char *file, const char *const *sets, ModelSimResult *r)
{
  g_autofree char *path = stepsim_test_srcpath (file);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  if (sc == NULL || !model_simulate (&in, NULL, r, &e))
    {
      g_printerr ("\n  %s: %s\n", file, e ? e->message : "?");
      return FALSE;
    }
  return TRUE;
}

/* The error message of loading `file` with `sets`, or NULL if it loads. */
static char *
load_error (const char *file, const char *const *sets)
{
  g_autofree char *path = stepsim_test_srcpath (file);
  GError *e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  if (sc != NULL)
    return NULL;
  char *msg = g_strdup (e->message);
  g_error_free (e);
  return msg;
}

/* ---- S6 ------------------------------------------------------------------------------------ */

#define S6 "scenarios/s6-zero-offload-13b-v100.ini"
#define S6_PYTORCH "tests/validation/offload-s6-pytorch-1.4b.ini"

/* S6: 13B trains on one V100-32GB with ZeRO-2 + CPU Adam + checkpointing: fits (GPU:
 * 16-bit weights 2Ψ = 24.2 GiB + activations; host 16Ψ = 194 GiB of the DGX-2's 1.5 TiB);
 * without the offload the states alone (16Ψ) cannot fit. */
static void
test_s6_13b_fits_with_offload (void)
{
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (S6, NULL, &r));
  g_printerr ("\n  S6: device-used %.2f GiB of %.0f, host %.1f GiB\n", r.device_used / GiB,
              r.capacity / GiB, r.host_peak / GiB);
  CU_ASSERT_TRUE (r.fits);
  CU_ASSERT_TRUE (r.gpu_fits && r.host_fits);
  model_sim_result_clear (&r);
  const char *sets[] = { "offload.optimizer=none", NULL };
  CU_ASSERT_FATAL (simulate (S6, sets, &r));
  CU_ASSERT_FALSE (r.fits);
  CU_ASSERT_TRUE (r.oom);
  model_sim_result_clear (&r);
}

/* S6 at micro-batches 1, 2 and 4: GPU memory grows with the micro-batch. The gradient
 * copies to the host leave from bounded buffers, so a faster backward (a smaller
 * micro-batch) cannot pile gradients up on the GPU while they wait for PCIe: before the
 * copies held the backward back (plan_offload.c grad_copy_order), micro-batch 1 demanded
 * 40.2 GiB where 2 used 31.9. */
static void
test_s6_memory_grows_with_micro_batch (void)
{
  const char *mb[] = { "training.micro_batch=1", "training.micro_batch=2",
                       "training.micro_batch=4" };
  double used[G_N_ELEMENTS (mb)];
  for (guint i = 0; i < G_N_ELEMENTS (mb); i++)
    {
      const char *sets[] = { mb[i], NULL };
      ModelSimResult r;
      CU_ASSERT_FATAL (simulate (S6, sets, &r));
      used[i] = r.device_used;
      g_printerr ("%s  S6 %s: device-used %.2f GiB\n", i == 0 ? "\n" : "", mb[i],
                  used[i] / GiB);
      CU_ASSERT_TRUE (r.fits);
      CU_ASSERT (i == 0 || used[i] > used[i - 1]);
      model_sim_result_clear (&r);
    }
}

/* S6: plain PyTorch tops out near 1.4B on the same GPU: the 1.36B stand-in fits, the same
 * family at 32 layers (1.78B) and 48 layers (2.6B) does not. */
static void
test_s6_pytorch_tops_out_near_1_4b (void)
{
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (S6_PYTORCH, NULL, &r));
  g_printerr ("\n  S6 PyTorch 1.36B: device-used %.2f GiB\n", r.device_used / GiB);
  CU_ASSERT_TRUE (r.fits);
  model_sim_result_clear (&r);
  const char *const layers[] = { "model.num_hidden_layers=32", "model.num_hidden_layers=48" };
  for (guint i = 0; i < G_N_ELEMENTS (layers); i++)
    {
      const char *sets[] = { layers[i], NULL };
      CU_ASSERT_FATAL (simulate (S6_PYTORCH, sets, &r));
      CU_ASSERT_FALSE (r.fits);
      model_sim_result_clear (&r);
    }
}

/* ---- S10 ----------------------------------------------------------------------------------- */

#define S10 "tests/validation/offload-s10-llama-8b-zero2-dgx-a100.ini"

/* S10: "CPU offload 30–50 % slower". In the stated setting (GA 1, 4 × 2048 tokens per GPU,
 * the Hugging Face docs' ZeRO-2 ds_config, overlap_comm on) the step is within that band:
 * the CPU step (8.0B parameters at the DGX A100 host's CPU Adam rate, the DGX-2 figure
 * scaled by DRAM bandwidth 409.6 / 255.9 GB/s: 6.2 G/s, ≈ 1.3 s) and the last parameter
 * copy add to ≈ 2.8 s of GPU work. The cost is per step, so it is amortised over
 * micro-batches: with GA 4 the slow-down is smaller (about 12 %). Without overlap_comm
 * (DeepSpeed's own default at stage 2) the fp32 gradient copies run on the compute stream
 * and the backward waits for them: slower still. */
static void
test_s10_offload_slowdown (void)
{
  double t[2][2];
  const char *ga[] = { "training.grad_accum=1", "training.grad_accum=4" };
  g_autofree char *json = stepsim_test_srcpath ("tests/validation/offload-s10-ds-zero2.json");
  g_autofree char *no_offload = g_strdup_printf ("training.deepspeed_config=%s", json);
  for (guint g = 0; g < 2; g++)
    for (guint off = 0; off < 2; off++)
      {
        const char *sets[] = { ga[g], off ? "offload.optimizer=cpu" : "offload.optimizer=none",
                               off ? NULL : no_offload, NULL };
        ModelSimResult r;
        CU_ASSERT_FATAL (simulate (S10, sets, &r));
        t[g][off] = r.step_time;
        model_sim_result_clear (&r);
      }
  double slow = t[0][1] / t[0][0] - 1, slow4 = t[1][1] / t[1][0] - 1;
  g_printerr ("\n  S10: offload slow-down %.1f %% at GA 1, %.1f %% at GA 4\n", 100 * slow,
              100 * slow4);
  CU_ASSERT (slow >= 0.30 && slow <= 0.50);
  CU_ASSERT (slow4 > 0 && slow4 < slow);
  /* DeepSpeed's default at stage 2, overlap_comm off: the copies hold the backward */
  g_autofree char *serial_json
    = stepsim_test_srcpath ("tests/validation/offload-s10-ds-zero2-offload-no-overlap.json");
  g_autofree char *serial = g_strdup_printf ("training.deepspeed_config=%s", serial_json);
  const char *sets[] = { ga[0], serial, NULL };
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (S10, sets, &r));
  g_printerr ("  S10 without overlap_comm: %.3f s against %.3f s\n", r.step_time, t[0][1]);
  CU_ASSERT (r.step_time > t[0][1]);
  model_sim_result_clear (&r);
}

/* ---- M7 ------------------------------------------------------------------------------------ */

#define M7 "tests/validation/offload-m7-t5-3b-zero2.ini"

/* M7 with offload: GPU 5.31 GiB = 2Ψ (16-bit parameters, the only state left on the GPU)
 * within 5 %. CPU 127.5 GiB = Ψ · max(4 · 8 GPUs, 16) · 1.5: with 8 GPUs the estimator's
 * 4 B × GPUs term wins (every process holds an fp32 copy of the model while it loads);
 * stepsim models the training step, whose host states are 16Ψ per node (master 4 + Adam 8
 * + fp32 gradients 4), so it is compared with 16 · Ψ · 1.5 = 127.5 / 2 (known gap of the
 * load-time copies, factor 2 at 8 GPUs, none at ≤ 4). */
static void
test_m7_offload (void)
{
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (M7, NULL, &r));
  double gpu = r.state_bytes / GiB, cpu = r.host_peak / GiB;
  g_printerr ("\n  M7 offload: GPU states %.2f GiB (published 5.31), host %.2f GiB "
              "(published 127.5 = 2 x 1.5 x %.2f)\n", gpu, cpu, 127.5 / 3);
  STEPSIM_ASSERT_REL (gpu, 5.31, 0.05);
  STEPSIM_ASSERT_REL (cpu * ESTIMATOR_BUFFER_FACTOR, 127.5 / 2, 0.02);
  model_sim_result_clear (&r);
}

/* M7 without offload, known gap: published 15.93 GiB = (4 + 16/8)Ψ; stepsim's ZeRO-2 model
 * states are (2 + (2 + 4 + 12)/8)Ψ = 11.29 GiB (−29.2 %): the 16-bit gradient shard, the
 * fp32 gradient partition of the optimizer step (4Ψ/N, counted by the estimator too), master
 * and Adam. What remains is the estimator's full 16-bit gradients (2Ψ) on every GPU;
 * stepsim's ZeRO-2 reduce-scatters gradients per layer and keeps only the 16-bit shard
 * (models/parallel/parallel.h): 4.25/6 − 1 = −29.2 %. Band asserted: [−31 %, −27 %]. */
static void
test_m7_no_offload_known_gap (void)
{
  const char *sets[] = { "offload.optimizer=none", NULL };
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (M7, sets, &r));
  double err = (r.state_bytes / GiB - 15.93) / 15.93;
  g_printerr ("\n  M7 no offload: GPU states %.2f GiB, published 15.93 (%+.1f %%, known gap)\n",
              r.state_bytes / GiB, 100 * err);
  CU_ASSERT (err > -0.31 && err < -0.27);
  model_sim_result_clear (&r);
}

/* ---- M8 ------------------------------------------------------------------------------------ */

#define M8 "tests/validation/offload-m8-t0-3b-zero3.ini"

/* GPU model-state footprint under ZeRO-3: states kept plus the gathered parameter buffers
 * at their peak (what the estimator's "largest layer" term stands for). */
static double
zero3_gpu (const ModelSimResult *r)
{
  return (r->state_bytes + r->category_peak[MODEL_MEM_COMM_BUFFERS]) / GiB;
}

/* M8 host rows: parameters + optimizer offloaded 70 GiB = 18Ψ × 1.5; optimizer only
 * 62.23 GiB = 16Ψ × 1.5 (one GPU: no load-time term). stepsim: 18Ψ and 16Ψ. */
static void
test_m8_host (void)
{
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (M8, NULL, &r));
  g_printerr ("\n  M8 params+opt offload: host %.2f GiB x 1.5 = %.2f (published 70)\n",
              r.host_peak / GiB, ESTIMATOR_BUFFER_FACTOR * r.host_peak / GiB);
  STEPSIM_ASSERT_REL (ESTIMATOR_BUFFER_FACTOR * r.host_peak / GiB, 70.0, 0.02);
  model_sim_result_clear (&r);
  const char *sets[] = { "offload.parameters=none", NULL };
  CU_ASSERT_FATAL (simulate (M8, sets, &r));
  g_printerr ("  M8 opt offload: host %.2f GiB x 1.5 = %.2f (published 62.23)\n",
              r.host_peak / GiB, ESTIMATOR_BUFFER_FACTOR * r.host_peak / GiB);
  STEPSIM_ASSERT_REL (ESTIMATOR_BUFFER_FACTOR * r.host_peak / GiB, 62.23, 0.02);
  model_sim_result_clear (&r);
}

/* M8 GPU, optimizer offloaded: 5.43 GiB = 4 × 65M (largest layer) + 2Ψ; stepsim on one
 * rank keeps the 16-bit parameters (2Ψ = 5.19 GiB) and gathers nothing: within 5 %. */
static void
test_m8_gpu_optimizer_offload (void)
{
  const char *sets[] = { "offload.parameters=none", NULL };
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (M8, sets, &r));
  g_printerr ("\n  M8 opt offload: GPU %.2f GiB (published 5.43)\n", zero3_gpu (&r));
  STEPSIM_ASSERT_REL (zero3_gpu (&r), 5.43, 0.05);
  model_sim_result_clear (&r);
}

/* M8 GPU, known gaps. Parameters + optimizer offloaded: published 0.25 GiB = 4 B × the
 * 65.8M embedding; stepsim holds no states but FSDP's root unit (embedding + untied head,
 * 2 × 65.8M × 2 B) gathered through the step plus prefetch + 1 = 2 gathered layers
 * (2 × 48M × 2 B): 0.42 GiB (+70 %; band [+50 %, +90 %]). No offload: published 46.91 GiB
 * = 4 × 65.8M + 18Ψ (DeepSpeed keeps an fp32 gradient partition beside the 16-bit one);
 * stepsim counts 16Ψ = 41.5 GiB (−11.5 %; band [−15 %, −8 %]). */
static void
test_m8_gpu_known_gaps (void)
{
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (M8, NULL, &r));
  double err = (zero3_gpu (&r) - 0.25) / 0.25;
  g_printerr ("\n  M8 params+opt offload: GPU %.3f GiB, published 0.25 (%+.0f %%, known gap)\n",
              zero3_gpu (&r), 100 * err);
  CU_ASSERT (err > 0.50 && err < 0.90);
  model_sim_result_clear (&r);
  const char *sets[] = { "offload.parameters=none", "offload.optimizer=none", NULL };
  CU_ASSERT_FATAL (simulate (M8, sets, &r));
  err = (zero3_gpu (&r) - 46.91) / 46.91;
  g_printerr ("  M8 no offload: GPU %.2f GiB, published 46.91 (%+.1f %%, known gap)\n",
              zero3_gpu (&r), 100 * err);
  CU_ASSERT (err > -0.15 && err < -0.08);
  model_sim_result_clear (&r);
}

/* ---- host OOM and the [offload] group ------------------------------------------------------ */

/* A host too small for the offloaded states is an OOM like the GPU's: the summary prints
 * the host peak, the capacity and OOM, and the run does not fit although the GPU does. */
static void
test_host_oom_reported (void)
{
  const char *sets[] = { "cluster.host_memory=128 GiB", NULL };
  g_autofree char *path = stepsim_test_srcpath (S6);
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  ModelSimResult r;
  ModelSimInput in = cli_scenario_sim_input (sc);
  CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
  CU_ASSERT_TRUE (r.gpu_fits);
  CU_ASSERT_FALSE (r.host_fits);
  CU_ASSERT_FALSE (r.fits);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  cli_report_print (f, sc, &r, FALSE);
  fclose (f);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "host capacity"));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "OOM ("));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "GPU to host"));
  free (text);
  model_sim_result_clear (&r);
}

/* The summary of `sc` (as `stepsim run` prints it); caller frees. */
static char *
summary_text (const CliScenario *sc, const ModelSimResult *r)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&text, &len);
  cli_report_print (f, sc, r, FALSE);
  fclose (f);
  return text;
}

/* Under full offload the GPU holds no model states; the summary says where they are, per
 * GPU (models/memory/offload.h, ZeRO-Infinity §5), not "model states 0.00 B per GPU". M8 stand-in
 * (Ψ parameters, bf16 mixed AdamW, one GPU, ZeRO-3), per GPU of N:
 *   optimizer + parameters cpu:   host (2 + 4 + 8 + 4)Ψ/N = 18Ψ/N (16-bit shard, master,
 *                                 Adam moments, fp32 gradients), NVMe 0;
 *   optimizer + parameters nvme:  host 4Ψ/N (fp32 gradients), NVMe (2 + 4 + 8)Ψ/N = 14Ψ/N;
 * one GPU (the "states" line) and 8 GPUs of a node (the "parallel" line). */
static void
test_full_offload_states_located (void)
{
  const struct
  {
    const char *target;
    guint gpus;
    double host, nvme; /* × Ψ/N */
  } cases[] = { { "cpu", 1, 18, 0 }, { "nvme", 1, 4, 14 }, { "cpu", 8, 18, 0 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *opt = g_strdup_printf ("offload.optimizer=%s", cases[i].target);
      g_autofree char *par = g_strdup_printf ("offload.parameters=%s", cases[i].target);
      g_autofree char *gpus = g_strdup_printf ("cluster.gpus_per_node=%u", cases[i].gpus);
      const char *sets[] = { opt, par, gpus, NULL };
      g_autofree char *path = stepsim_test_srcpath (M8);
      g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
      ModelSimResult r;
      ModelSimInput in = cli_scenario_sim_input (sc);
      CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
      double part = (double) model_arch_n_params (sc->arch) / cases[i].gpus;
      CU_ASSERT_DOUBLE_EQUAL (r.state_bytes, 0, 0);
      STEPSIM_ASSERT_REL (r.state_host, cases[i].host * part, 1e-12);
      if (cases[i].nvme > 0)
        STEPSIM_ASSERT_REL (r.state_nvme, cases[i].nvme * part, 1e-12);
      else
        CU_ASSERT_DOUBLE_EQUAL (r.state_nvme, 0, 0);
      g_autofree char *text = summary_text (sc, &r);
      g_autofree char *host = sim_units_format (cases[i].host * part, SIM_DIM_BYTES, 2);
      g_autofree char *where = g_strdup_printf ("0.00 B on the GPU, %s in host DRAM", host);
      if (strstr (text, where) == NULL)
        g_printerr ("\n  no '%s' in:\n%s", where, text);
      CU_ASSERT_PTR_NOT_NULL (strstr (text, where));
      CU_ASSERT_PTR_NULL (strstr (text, "model states 0.00 B per GPU"));
      CU_ASSERT_EQUAL (strstr (text, "on NVMe") != NULL, cases[i].nvme > 0);
      CU_ASSERT_PTR_NOT_NULL (strstr (text, cases[i].gpus > 1 ? "parallel   " : "states     "));
      model_sim_result_clear (&r);
    }
}

/* Whether a line of `text` starting with "  " + `label` also holds `value`. */
static gboolean
line_has (const char *text, const char *label, const char *value)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (g_str_has_prefix (lines[i], "  ") && g_str_has_prefix (lines[i] + 2, label)
        && strstr (lines[i], value) != NULL)
      return TRUE;
  return FALSE;
}

/* The host CPU's optimizer step under ZeRO-Offload runs on cpu_cores × cpu_adam_rate
 * parameters/s (hardware/node_catalog.h: 81 Mparam/s per core, ZeRO-Offload Table 3). S6
 * (one V100 rank, 48 cores): its chunks run one after another alone on the node's CPU, so
 * rank 0's CPU time is Ψ / (cores × rate) — 13,015,864,320 / (48 × 81e6) = 3.348 s — and
 * with the rate and the cores set in [cluster] (as in a [node.NAME] or a catalog entry)
 * Ψ / (16 × 40e6). The summary prints it, /summary records it (cpu_step_time, s). */
static void
test_cpu_optimizer_time (void)
{
  const struct
  {
    const char *rate, *cores;
    double expect_rate;
    guint expect_cores;
  } cases[] = { { NULL, NULL, 81e6, 48 }, { "cluster.cpu_adam_rate=40 Mparam/s", "cluster.cpu_cores=16", 40e6, 16 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const char *sets[] = { cases[i].rate, cases[i].cores, NULL };
      g_autofree char *path = stepsim_test_srcpath (S6);
      g_autoptr (CliScenario) sc = cli_scenario_load (path, cases[i].rate ? sets : NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
      ModelSimResult r;
      ModelSimInput in = cli_scenario_sim_input (sc);
      CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, NULL));
      double psi = (double) model_arch_n_params (sc->arch);
      STEPSIM_ASSERT_REL (r.cpu_step_params, psi, 1e-12);
      STEPSIM_ASSERT_REL (r.cpu_step_time, psi / (cases[i].expect_cores * cases[i].expect_rate),
                          1e-9);
      g_autofree char *text = summary_text (sc, &r);
      g_autofree char *t = sim_units_format (r.cpu_step_time, SIM_DIM_TIME, 2);
      CU_ASSERT (line_has (text, "CPU optimizer step", t));
      g_autoptr (SimRecorder) rec = sim_recorder_new ();
      cli_report_fill_summary (rec, sc, &r);
      double v = -1;
      CU_ASSERT (sim_recorder_summary_get (rec, "cpu_step_time", &v));
      CU_ASSERT_DOUBLE_EQUAL (v, r.cpu_step_time, 0);
      model_sim_result_clear (&r);
    }
}

/* Bad [offload] input: one message naming the group and key (and a hint for a typo). */
static void
test_offload_group_errors (void)
{
  struct
  {
    const char *set, *expect;
  } cases[] = {
    { "offload.optimiser=cpu", "key 'optimiser': unknown key" },
    { "offload.optimizer=gpu", "key 'optimizer': unknown offload target 'gpu'" },
    { "offload.parameters=cpu", "key 'parameters': parameters = cpu needs ZeRO stage 3" },
    { "offload.pin_memory=maybe", "key 'pin_memory'" },
    { "offload.activations=nvme", "key 'activations'" },
    { "cluster.cpu_cores=0", "key 'optimizer': the optimizer step on the host needs" },
    { "cluster.cpu_adam_rate=81e6", "key 'cpu_adam_rate'" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const char *sets[] = { cases[i].set, NULL };
      g_autofree char *msg = load_error (S6, sets);
      CU_ASSERT_PTR_NOT_NULL_FATAL (msg);
      if (strstr (msg, cases[i].expect) == NULL)
        g_printerr ("\n  %s: got '%s'\n", cases[i].set, msg);
      CU_ASSERT_PTR_NOT_NULL (strstr (msg, cases[i].expect));
      CU_ASSERT_PTR_NOT_NULL (strstr (msg, "group ["));
    }
  const char *nvme[] = { "offload.optimizer=nvme", "cluster.nvme_drives=0", NULL };
  g_autofree char *msg = load_error (S6, nvme);
  CU_ASSERT (msg != NULL && strstr (msg, "nvme needs NVMe drives") != NULL);
  const char *ok[] = { "offload.optimizer=nvme", "cluster.cpu_adam_rate=50 Mparam/s", NULL };
  g_autofree char *none = load_error (S6, ok);
  CU_ASSERT_PTR_NULL (none);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "S6 13B fits one V100-32GB with ZeRO-Offload", test_s6_13b_fits_with_offload },
    { "S6 plain PyTorch tops out near 1.4B", test_s6_pytorch_tops_out_near_1_4b },
    { "S6 GPU memory grows with the micro-batch", test_s6_memory_grows_with_micro_batch },
    { "S10 CPU offload 30-50 % slower (GA 1)", test_s10_offload_slowdown },
    { "M7 ZeRO-2 offload GPU and CPU", test_m7_offload },
    { "M7 ZeRO-2 without offload: known gap", test_m7_no_offload_known_gap },
    { "M8 ZeRO-3 offload host figures", test_m8_host },
    { "M8 ZeRO-3 optimizer offload GPU", test_m8_gpu_optimizer_offload },
    { "M8 ZeRO-3 GPU: known gaps", test_m8_gpu_known_gaps },
    { "host OOM reported like a GPU OOM", test_host_oom_reported },
    { "full offload: the summary says where the model states are",
      test_full_offload_states_located },
    { "CPU optimizer step time: parameters / (cores x rate)", test_cpu_optimizer_time },
    { "[offload] errors name group and key", test_offload_group_errors },
  };
  return STEPSIM_RUN_TESTS ("validation/offload", tests);
}
