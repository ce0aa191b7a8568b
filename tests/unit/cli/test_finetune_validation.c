/* tests/unit/cli/test_finetune_validation.c — LoRA and QLoRA against the seed claims
 * (../shared/validation/published.md S4, S7, S8) and the [finetune] scenario group.
 * Scenarios: scenarios/s4-llama-2-70b-lora-zero3-8xa100.ini and
 * tests/validation/s7-qlora-llama-65b-48gb.ini (their comments state the assumptions). */
#include "config.h"

#include <string.h>
#include <glib/gstdio.h>
#include "models/stack/stack.h"
#include "tests/unit/cli/simulate.h"
#include "tests/unit/models/cost_fixture.h"

#define GB 1e9

/* S7: "QLoRA: 65B on one 48 GB GPU (NF4 base, double quantization, paged optimizer): fits
 * (vs > 780 GB for 16-bit full fine-tune)". The QLoRA scenario fits; the same model's
 * model states for a 16-bit full fine-tune (bf16 mixed AdamW, 16 B/param; the paper's
 * 780 GB is 12 B/param: 16-bit weights and gradients, fp32 Adam states) exceed 780 GB. */
static void
test_s7_qlora_65b_fits_48gb (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate ("tests/validation/s7-qlora-llama-65b-48gb.ini", NULL, &sc, &r));
  g_printerr ("\n  S7: device-used %.1f GB of %.1f GB\n", r.device_used / GB, r.capacity / GB);
  CU_ASSERT_TRUE (r.fits);
  CU_ASSERT (r.capacity <= 48 * GB);
  ModelStack full = sc->stack;
  full.finetune.method = MODEL_FINETUNE_NONE;
  full.precision = MODEL_PRECISION_BF16_MIXED;
  full.optimizer = MODEL_OPTIMIZER_ADAMW;
  double states = 0;
  for (guint c = MODEL_MEM_WEIGHTS; c <= MODEL_MEM_OPTIMIZER_STATE; c++)
    states += model_stack_initial_bytes (&full, sc->arch, c);
  states += model_stack_gradient_bytes (&full) * (double) model_arch_n_params (sc->arch);
  CU_ASSERT (states > 780 * GB);
  /* LoRA in 16 bit (no NF4) does not fit the same card: the base alone is 2 B/param */
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
  CU_ASSERT_FATAL (simulate ("tests/validation/s7-qlora-llama-65b-48gb.ini",
                             (const char *[]){ "finetune.method=lora", NULL }, &sc, &r));
  CU_ASSERT_FALSE (r.fits);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

/* S8: "LoRA on GPT-3 175B: training VRAM 1.2 TB → 350 GB; checkpoint 350 GB → 35 MB; ratio
 * ≈ 3.4×" (Hu et al. 2021 §4.2: r = 4, adapters on W_q and W_v). GPT-3 175B: 96 layers,
 * h 12288, GPT-2 layout. States in a 16-bit model with Adam in 16 bit (precision bf16):
 *   full  Ψ·(2 + 2 + 4) = 8Ψ = 1.40 TB (the paper's 1.2 TB leaves its accounting unstated);
 *   LoRA  2Ψ + 8A, A = 96 × 4 × 2 × 24576 = 18,874,368 → 350.5 GB (the paper: 350 GB);
 *   checkpoint 2A = 37.7 MB (the paper: 35 MB).
 * Asserted: LoRA within 5 % of 350 GB, the checkpoint within 10 % of 35 MB, the ratio
 * within 20 % of 3.4 (ours 4.0). */
static void
test_s8_lora_gpt3 (void)
{
  ModelArch a = gpt3_175b ();
  ModelStack s;
  model_stack_init_defaults (&s);
  s.precision = MODEL_PRECISION_BF16;
  s.zero_grad_to_none = FALSE;
  double full = 0, lora = 0;
  for (guint c = MODEL_MEM_WEIGHTS; c <= MODEL_MEM_OPTIMIZER_STATE; c++)
    full += model_stack_initial_bytes (&s, &a, c);
  s.finetune.method = MODEL_FINETUNE_LORA;
  s.finetune.rank = 4;
  s.finetune.targets = MODEL_LORA_QV;
  for (guint c = MODEL_MEM_WEIGHTS; c <= MODEL_MEM_OPTIMIZER_STATE; c++)
    lora += model_stack_initial_bytes (&s, &a, c);
  lora += model_stack_initial_bytes (&s, &a, MODEL_MEM_LORA); /* the adapters' weights */
  double ckpt = model_stack_weight_bytes (&s) * model_stack_trainable_params (&s, &a);
  g_printerr ("\n  S8: full %.2f TB, LoRA %.1f GB (x%.2f), checkpoint %.1f MB\n", full / 1e12,
              lora / GB, full / lora, ckpt / 1e6);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_params (&s, &a), 18874368, 0);
  STEPSIM_ASSERT_REL (lora, 350 * GB, 0.05);
  STEPSIM_ASSERT_REL (ckpt, 35e6, 0.10);
  STEPSIM_ASSERT_REL (full / lora, 3.4, 0.20);
}

/* S4: "70B fine-tune on 8× A100-80GB: S3's stack plus LoRA rank 16 and CPU optimizer
 * offload: about 65 GB per GPU". Fits; the GPU keeps the bf16 weights and adapters,
 * sharded: (2Ψ + 2A)/8 with Ψ = 68,976,648,192 and A = 80 × 16 × 161,792 = 207,093,760
 * (q 8192+8192, k and v 8192+1024, o 8192+8192, gate, up, down 8192+28672); master
 * weights, gradients and AdamW states of the adapters live on the host, 16 B per adapter
 * parameter over the node. The seed's 65 GB is not reached (device-used about 39 GB; as
 * S3's, unsourced: bench/RESULTS.md). */
static void
test_s4_lora_zero3_offload (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate ("scenarios/s4-llama-2-70b-lora-zero3-8xa100.ini", NULL, &sc, &r));
  const double psi = 68976648192.0, A = 207093760.0;
  g_printerr ("\n  S4: device-used %.1f GB, model states %.2f GB per GPU, host %.2f GB\n",
              r.device_used / GB, r.state_bytes / GB, r.host_peak / GB);
  CU_ASSERT_TRUE (r.fits);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_params (&sc->stack, sc->arch), A, 0);
  STEPSIM_ASSERT_REL (r.state_bytes, (2 * psi + 2 * A) / 8, 1e-9);
  STEPSIM_ASSERT_REL (r.host_peak, 16 * A, 1e-6);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

/* LoRA's effect on one scenario: less memory than full fine-tuning (no gradients, master
 * or optimizer states of the base), a faster backward (no weight gradients), and QLoRA
 * less memory still. */
static void
test_lora_orders_memory_and_backward (void)
{
  const char *file = "scenarios/s4-llama-2-70b-lora-zero3-8xa100.ini";
  const char *full_sets[] = { "finetune.method=none", "offload.optimizer=none",
                              "cluster.nodes=2", NULL };
  const char *lora_sets[] = { "offload.optimizer=none", "cluster.nodes=2", NULL };
  const char *qlora_sets[] = { "offload.optimizer=none", "cluster.nodes=2",
                               "finetune.method=qlora", NULL };
  CliScenario *sf = NULL, *sl = NULL, *sq = NULL;
  ModelSimResult f, l, q;
  CU_ASSERT_FATAL (simulate (file, full_sets, &sf, &f));
  CU_ASSERT_FATAL (simulate (file, lora_sets, &sl, &l));
  CU_ASSERT_FATAL (simulate (file, qlora_sets, &sq, &q));
  CU_ASSERT (l.state_bytes < f.state_bytes / 4);
  CU_ASSERT (q.state_bytes < l.state_bytes);
  CU_ASSERT (l.time_by_kind[MODEL_TASK_KIND_BACKWARD] < f.time_by_kind[MODEL_TASK_KIND_BACKWARD]);
  CU_ASSERT (l.model_flops < f.model_flops);
  model_sim_result_clear (&f);
  model_sim_result_clear (&l);
  model_sim_result_clear (&q);
  cli_scenario_free (sf);
  cli_scenario_free (sl);
  cli_scenario_free (sq);
}

/* [finetune] bad input: one error naming the group and key. */
static void
expect_load_error (const char *const *sets, const char *key, const char *needle)
{
  g_autofree char *path = stepsim_test_srcpath ("scenarios/s4-llama-2-70b-lora-zero3-8xa100.ini");
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  g_autofree char *k = g_strdup_printf ("group [finetune], key '%s'", key);
  /* The file is named by its base name at least: a long directory part is shortened in
   * the middle (issue 11 item 18), never the group, key or override. */
  g_autofree char *base = g_path_get_basename (path);
  gboolean ok = strstr (e->message, k) != NULL && strstr (e->message, needle) != NULL
                && strstr (e->message, base) != NULL;
  if (!ok)
    g_printerr ("\n  message \"%s\" lacks \"%s\" or \"%s\"\n", e->message, k, needle);
  CU_ASSERT_TRUE (ok);
}

static void
test_bad_finetune_input (void)
{
  expect_load_error ((const char *[]){ "finetune.method=dora", NULL }, "method", "qlora");
  expect_load_error ((const char *[]){ "finetune.rank=0", NULL }, "rank", "0");
  expect_load_error ((const char *[]){ "finetune.rank=16.5", NULL }, "rank", "16.5");
  expect_load_error ((const char *[]){ "finetune.rank=9000", NULL }, "rank", "smaller side");
  expect_load_error ((const char *[]){ "finetune.rank=8192", NULL }, "rank",
                     "'8192' is outside [1, 8191]"); /* Llama-2-70B: q, o are 8192 × 8192 */
  expect_load_error ((const char *[]){ "finetune.rank=1e30", NULL }, "rank",
                     "'1e30' is not a whole number in [1, 8191]");
  expect_load_error ((const char *[]){ "finetune.targets=mlp", NULL }, "targets", "all_linear");
  expect_load_error ((const char *[]){ "finetune.double_quant=maybe", NULL }, "double_quant",
                     "maybe");
  /* a conflict names the other side as "[group] key", so the override that caused it is
   * named too, even though the error is about [finetune] method */
  expect_load_error ((const char *[]){ "finetune.method=qlora", "training.precision=fp32",
                                       NULL },
                     "method", "16 bit");
  expect_load_error ((const char *[]){ "training.precision=fp32", "finetune.method=qlora",
                                       NULL },
                     "method", "(with training.precision=fp32");
  expect_load_error ((const char *[]){ "offload.parameters=cpu", NULL }, "method",
                     "[offload] parameters is not modelled");
  expect_load_error ((const char *[]){ "offload.parameters=cpu", NULL }, "method",
                     "(with offload.parameters=cpu)");
}

/* rank without a method is an error, not silently ignored (a scenario's own group). */
static void
test_rank_without_method (void)
{
  g_autofree char *dir = stepsim_test_tmpdir ("stepsim-ft-XXXXXX");
  g_autofree char *path = g_build_filename (dir, "x.ini", NULL);
  const char *text = "[model]\nhf_config = gpt2\n[cluster]\ngpu = A100-80GB-SXM\n"
                     "[training]\nmicro_batch = 1\nseq_len = 128\nprecision = bf16_mixed\n"
                     "[finetune]\nrank = 8\n";
  g_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "group [finetune], key 'rank': needs method")
                            : NULL);
  g_unlink (path);
  g_rmdir (dir);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "S7 QLoRA 65B fits 48 GB; 16-bit full > 780 GB", test_s7_qlora_65b_fits_48gb },
    { "S8 LoRA GPT-3 175B: 350 GB, 35 MB, ratio", test_s8_lora_gpt3 },
    { "S4 70B LoRA ZeRO-3 + CPU offload fits", test_s4_lora_zero3_offload },
    { "LoRA < full in states and backward; QLoRA < LoRA", test_lora_orders_memory_and_backward },
    { "[finetune] bad input names group and key", test_bad_finetune_input },
    { "[finetune] rank without method", test_rank_without_method },
  };
  return STEPSIM_RUN_TESTS ("validation/finetune", tests);
}
