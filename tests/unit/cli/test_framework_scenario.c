/* tests/unit/cli/test_framework_scenario.c — [training] framework, its per-key overrides and
 * [training] deepspeed_config in a scenario (cli/scenario/scenario_framework.c): the profile
 * is applied first so that explicit keys override it; a ds_config's values land where the
 * scenario keeps them, must agree with the scenario's own keys, and its unmodelled keys are
 * warned about (or refused) naming the file and key. */
#include "config.h"

#include <string.h>
#include "cli/scenario/scenario.h"
#include "tests/testlib.h"

static const char base[] =
  "[model]\nhf_config = llama-3.2-1b\n"
  "[cluster]\ngpu = A100-80GB-SXM\n"
  "[training]\nmicro_batch = 2\nseq_len = 2048\n";
/* the scenarios without a ds_config say their precision */
#define PREC "precision = bf16_mixed\n"

static char *tmpdir;

static CliScenario *
load (const char *extra, const char *const *sets, GError **error)
{
  g_autofree char *path = g_build_filename (tmpdir, "case.ini", NULL);
  g_autofree char *text = g_strconcat (base, extra, NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  return cli_scenario_load (path, sets, error);
}

static void
write_ds (const char *json)
{
  g_autofree char *path = g_build_filename (tmpdir, "ds.json", NULL);
  g_assert (g_file_set_contents (path, json, -1, NULL));
}

/* The load fails and the message has the scenario's path and every needle. */
static void
expect_error (const char *extra, const char *const *sets, const char *const *needles)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load (extra, sets, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "case.ini"));
  for (guint i = 0; needles[i] != NULL; i++)
    {
      gboolean found = strstr (e->message, needles[i]) != NULL;
      if (!found)
        g_printerr ("\n  message \"%s\" lacks \"%s\"\n", e->message, needles[i]);
      CU_ASSERT (found);
    }
}

static void
test_profile_then_overrides (void)
{
  g_autoptr (GError) e = NULL;
  const char *const sets[] = { "training.framework=megatron", NULL };
  g_autoptr (CliScenario) sc = load (PREC, sets, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.framework.kind, MODEL_FRAMEWORK_MEGATRON);
  CU_ASSERT_TRUE (sc->stack.framework.main_grad_fp32);
  CU_ASSERT_EQUAL (sc->stack.framework.optimizer_impl, MODEL_OPTIMIZER_IMPL_FUSED);
  /* an explicit key beats the profile whatever the order in the file */
  g_autoptr (CliScenario) sc2 = load (PREC "main_grad_fp32 = false\n"
                                      "optimizer_impl = per_tensor\nframework = megatron\n",
                                      NULL, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc2);
  CU_ASSERT_FALSE (sc2->stack.framework.main_grad_fp32);
  CU_ASSERT_EQUAL (sc2->stack.framework.optimizer_impl, MODEL_OPTIMIZER_IMPL_PER_TENSOR);
  /* the rest stays Megatron's */
  CU_ASSERT_EQUAL (sc2->stack.framework.loss, MODEL_LOSS_VOCAB_PARALLEL);
  /* the older key maps onto optimizer_impl */
  const char *const old[] = { "training.optimizer_foreach=false", NULL };
  g_autoptr (CliScenario) sc3 = load (PREC, old, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc3);
  CU_ASSERT_EQUAL (sc3->stack.framework.optimizer_impl, MODEL_OPTIMIZER_IMPL_PER_TENSOR);
  /* activation_offload is [offload] activations = cpu */
  const char *const act[] = { "training.activation_offload=true", NULL };
  g_autoptr (CliScenario) sc4 = load (PREC, act, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc4);
  CU_ASSERT_EQUAL (sc4->stack.offload.activations, MODEL_OFFLOAD_CPU);
  /* an offloaded optimizer steps with CPU-Adam */
  const char *const off[] = { "cluster.gpus_per_node=8", "parallel.data_parallel=zero2",
                              "offload.optimizer=cpu", NULL };
  g_autoptr (CliScenario) sc5 = load (PREC, off, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc5);
  CU_ASSERT_EQUAL (sc5->stack.framework.optimizer_impl, MODEL_OPTIMIZER_IMPL_CPU_ADAM);
}

static void
test_bad_keys (void)
{
  const struct
  {
    const char *sets[5];
    const char *needles[4];
  } cases[] = {
    { { "training.framework=jax" }, { "group [training], key 'framework'", "torchtune" } },
    { { "training.optimizer_impl=magic" }, { "group [training], key 'optimizer_impl'",
                                             "cpu_adam" } },
    { { "training.optimizer_impl=fused", "training.optimizer_foreach=true" },
      { "key 'optimizer_foreach'", "optimizer_impl" } },
    { { "training.reduce_bucket_size=lots" }, { "key 'reduce_bucket_size'", "elements" } },
    /* bounded whole numbers: 1e30 would be a 1.86e21 GiB buffer, 0.5 half an element */
    { { "training.reduce_bucket_size=1e30" }, { "key 'reduce_bucket_size'", "2^40" } },
    { { "training.reduce_bucket_size=0.5" }, { "key 'reduce_bucket_size'", "whole" } },
    { { "training.allgather_bucket_size=2e12" }, { "key 'allgather_bucket_size'", "2^40" } },
    { { "training.stage3_prefetch_bucket_size=1.5" },
      { "key 'stage3_prefetch_bucket_size'", "whole" } },
    { { "training.stage3_param_persistence_threshold=1e13" },
      { "key 'stage3_param_persistence_threshold'", "2^40" } },
    { { "training.stage3_max_live_parameters=1e40" },
      { "key 'stage3_max_live_parameters'", "2^40" } },
    { { "training.main_grad_fp32=maybe" }, { "key 'main_grad_fp32'" } },
    { { "training.optimizer_impl=cpu_adam" }, { "key 'optimizer_impl'", "[offload] optimizer" } },
    { { "training.optimizer_in_backward=true", "training.grad_accum=4" },
      { "key 'optimizer_in_backward'", "grad_accum" } },
    { { "cluster.gpus_per_node=8", "parallel.data_parallel=zero2", "offload.optimizer=cpu",
        "training.optimizer_impl=fused" }, { "key 'optimizer_impl'", "cpu_adam" } },
    { { "training.activation_offload=true", "offload.activations=none" },
      { "key 'activation_offload'", "[offload] activations" } },
    { { "training.deepspeed_config=absent.json" }, { "key 'deepspeed_config'", "absent.json" } },
    { { "training.framework=megatron", "cluster.gpus_per_node=8",
        "parallel.data_parallel=zero3" }, { "key 'framework'", "main_grad_fp32", "zero3" } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    expect_error (PREC, cases[i].sets, cases[i].needles);
  /* an empty value in the file (an empty --set value removes the key instead) */
  static const char *const empty[] = { "key 'deepspeed_config'", "the value is empty", NULL };
  expect_error (PREC "deepspeed_config =\n", NULL, empty);
}

/* A ds_config: stage into [parallel], GA and precision into [training] (the scenario has
 * neither), the bucket sizes into the framework ("auto" reduce bucket: HF's hidden² =
 * 2048² for Llama 3.2 1B), the offload device into [offload]. */
static void
test_deepspeed_config (void)
{
  write_ds ("{ \"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": 4,"
            "  \"bf16\": { \"enabled\": true },"
            "  \"zero_optimization\": { \"stage\": 2, \"reduce_bucket_size\": \"auto\","
            "    \"allgather_bucket_size\": 2e8, \"overlap_comm\": true,"
            "    \"offload_optimizer\": { \"device\": \"cpu\" } } }");
  const char *const sets[] = { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
                               NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load ("", sets, &e);
  if (sc == NULL)
    g_printerr ("\n  %s\n", e->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->par.mode, MODEL_DP_ZERO2);
  CU_ASSERT_EQUAL (sc->stack.grad_accum, 4);
  CU_ASSERT_EQUAL (sc->stack.micro_batch, 2);
  CU_ASSERT_EQUAL (sc->stack.precision, MODEL_PRECISION_BF16_MIXED);
  CU_ASSERT_EQUAL (sc->stack.framework.reduce_bucket_elements, 2048.0 * 2048);
  CU_ASSERT_EQUAL (sc->stack.framework.allgather_bucket_elements, 2e8);
  CU_ASSERT_TRUE (sc->stack.framework.ds_overlap_comm);
  CU_ASSERT_EQUAL (sc->stack.offload.optimizer, MODEL_OFFLOAD_CPU);
  CU_ASSERT_EQUAL (sc->stack.framework.optimizer_impl, MODEL_OPTIMIZER_IMPL_CPU_ADAM);

  /* disagreements with the scenario's own keys, and the same size in both places */
  const struct
  {
    const char *sets[5];
    const char *needles[4];
  } cases[] = {
    { { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
        "training.precision=fp32" },
      { "group [training], key 'precision'", "ds.json", "bf16.enabled" } },
    { { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
        "training.grad_accum=2" },
      { "group [training], key 'grad_accum'", "gradient_accumulation_steps" } },
    { { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
        "parallel.data_parallel=zero3" },
      { "group [parallel], key 'data_parallel'", "zero_optimization.stage" } },
    { { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
        "training.allgather_bucket_size=1e8" },
      { "key 'allgather_bucket_size'", "deepspeed_config" } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    expect_error ("", cases[i].sets, cases[i].needles);
}

/* train_batch_size (DeepSpeed's config.py): with micro × GA × ranks all known they must
 * give it (8 GPUs, micro 2: GA 4 → 64); without GA it is derived, 32 / (2 × 8) = 2; a
 * mismatch or a remainder names the ds_config and the key; the ranks are the data-parallel
 * ones, GPUs / (tp · cp · pp). */
static void
test_deepspeed_train_batch (void)
{
  write_ds ("{ \"train_batch_size\": 32, \"bf16\": { \"enabled\": \"auto\" } }");
  const char *const sets[] = { "cluster.gpus_per_node=8", "training.micro_batch=2",
                               "training.deepspeed_config=ds.json", NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load (PREC, sets, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.grad_accum, 2);
  const char *const agree[] = { "cluster.gpus_per_node=8", "training.micro_batch=2",
                                "training.grad_accum=2", "training.deepspeed_config=ds.json",
                                NULL };
  g_autoptr (CliScenario) ok = load (PREC, agree, NULL);
  CU_ASSERT_PTR_NOT_NULL (ok);
  const char *const wrong[] = { "cluster.gpus_per_node=8", "training.micro_batch=2",
                                "training.grad_accum=4", "training.deepspeed_config=ds.json",
                                NULL };
  const char *const mismatch[] = { "group [training], key 'deepspeed_config'", "ds.json",
                                   "key 'train_batch_size' is 32",
                                   "micro_batch 2 × grad_accum 4 × 8 data-parallel ranks = 64",
                                   NULL };
  expect_error (PREC, wrong, mismatch);
  write_ds ("{ \"train_batch_size\": 40, \"bf16\": { \"enabled\": \"auto\" } }");
  const char *const remainder[] = { "key 'train_batch_size' is 40", "not a multiple", NULL };
  expect_error (PREC, sets, remainder);
  /* the data-parallel world is GPUs / (tp · pp), not the GPUs (DeepSpeed reads it from the
   * model-parallel unit): tp 2 × pp 2 of 8 GPUs leaves 2 ranks, 32 / (2 × 2) = GA 8 */
  write_ds ("{ \"train_batch_size\": 32, \"bf16\": { \"enabled\": \"auto\" } }");
  const char *const mp[] = { "cluster.gpus_per_node=8", "training.micro_batch=2",
                             "training.deepspeed_config=ds.json", "parallel.tp=2",
                             "parallel.pp=2", NULL };
  g_autoptr (CliScenario) mps = load (PREC, mp, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (mps);
  CU_ASSERT_EQUAL (mps->stack.grad_accum, 8);
  const char *const mp_wrong[] = { "cluster.gpus_per_node=8", "training.micro_batch=2",
                                   "training.grad_accum=2", "training.deepspeed_config=ds.json",
                                   "parallel.tp=2", "parallel.pp=2", NULL };
  const char *const mp_mismatch[] = { "key 'train_batch_size' is 32",
                                      "micro_batch 2 × grad_accum 2 × 2 data-parallel ranks = 8",
                                      NULL };
  expect_error (PREC, mp_wrong, mp_mismatch);
}

/* DeepSpeed's stage3_prefetch_bucket_size = 0 or stage3_max_live_parameters = 0: no
 * prefetch (partitioned_param_coordinator.py), 0 layers ahead in the plan. */
static void
test_deepspeed_no_prefetch (void)
{
  const char *const keys[] = { "stage3_prefetch_bucket_size", "stage3_max_live_parameters" };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      g_autofree char *json = g_strdup_printf ("{ \"bf16\": { \"enabled\": \"auto\" }, "
                                               "\"zero_optimization\": { \"stage\": 3, "
                                               "\"%s\": 0 } }", keys[i]);
      write_ds (json);
      const char *const sets[] = { "cluster.gpus_per_node=8", "training.framework=deepspeed",
                                   "training.deepspeed_config=ds.json", NULL };
      g_autoptr (GError) e = NULL;
      g_autoptr (CliScenario) sc = load (PREC, sets, &e);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
      CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&sc->stack.framework, 1e6, 16), 0);
    }
}

/* A key the reader does not know is a warning naming the ds_config and the key; one that
 * changes memory and is not modelled is an error naming the scenario, the ds_config and
 * the key. */
/* fp16/bf16 "enabled": "auto" is the Trainer's --fp16/--bf16 (transformers
 * integrations/deepspeed.py fills it): the scenario's precision, required then, never a
 * default; an explicit false contradicts the scenario's mixed precision of that dtype; a
 * ds_config without either block is DeepSpeed's fp32, and the error says so without naming
 * a key the file lacks. */
static void
test_deepspeed_precision (void)
{
  const char *const sets[] = { "training.deepspeed_config=ds.json", NULL };
  write_ds ("{ \"fp16\": { \"enabled\": \"auto\" }, \"bf16\": { \"enabled\": false } }");
  const char *const missing[] = { "group [training], key 'precision': required key is missing",
                                  "ds.json", "fp16.enabled", NULL };
  expect_error ("", sets, missing);
  const char *const bf16_off[] = { "group [training], key 'precision': bf16_mixed", "ds.json",
                                   "bf16.enabled = false", NULL };
  expect_error (PREC, sets, bf16_off);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load ("precision = fp16_mixed\n", sets, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.precision, MODEL_PRECISION_FP16_MIXED);
  write_ds ("{ \"zero_optimization\": { \"stage\": 1 } }");
  g_autoptr (CliScenario) fp32 = load ("", sets, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (fp32);
  CU_ASSERT_EQUAL (fp32->stack.precision, MODEL_PRECISION_FP32);
  const char *const none[] = { "group [training], key 'precision': bf16_mixed",
                               "no fp16 or bf16 block", NULL };
  expect_error (PREC, sets, none);
  g_autoptr (GError) e2 = NULL;
  g_autoptr (CliScenario) again = load (PREC, sets, &e2);
  CU_ASSERT (again == NULL && e2 != NULL && strstr (e2->message, "bf16.enabled") == NULL);
  /* one block "auto", the other explicitly true: the scenario's precision must be the true
   * one's (fp16 true with bf16 auto was read as the scenario's bf16_mixed) */
  write_ds ("{ \"fp16\": { \"enabled\": true }, \"bf16\": { \"enabled\": \"auto\" } }");
  const char *const fp16_on[] = { "group [training], key 'precision': bf16_mixed", "ds.json",
                                  "fp16.enabled", NULL };
  expect_error (PREC, sets, fp16_on);
  g_autoptr (GError) e3 = NULL;
  g_autoptr (CliScenario) fp16 = load ("precision = fp16_mixed\n", sets, &e3);
  CU_ASSERT_PTR_NOT_NULL_FATAL (fp16);
  CU_ASSERT_EQUAL (fp16->stack.precision, MODEL_PRECISION_FP16_MIXED);
}

/* offload_optimizer with ZeRO stage 1: DeepSpeed runs it (stage_1_and_2.py, one class), the
 * plan's offloaded step needs sharded gradients: an error naming the scenario's key, the
 * ds_config and its key (not [offload]'s message for a key the scenario lacks); stage 2
 * loads. */
static void
test_deepspeed_offload_stage1 (void)
{
  const char *const sets[] = { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
                               NULL };
  write_ds ("{ \"zero_optimization\": { \"stage\": 1, \"offload_optimizer\": "
            "{ \"device\": \"cpu\" } } }");
  const char *const needles[] = { "group [training], key 'deepspeed_config'", "ds.json",
                                  "key 'zero_optimization.offload_optimizer'", "zero1",
                                  "zero_optimization.stage 2", NULL };
  expect_error ("", sets, needles);
  write_ds ("{ \"zero_optimization\": { \"stage\": 2, \"offload_optimizer\": "
            "{ \"device\": \"cpu\" } } }");
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load ("", sets, &e);
  CU_ASSERT_PTR_NOT_NULL (sc);
}

static void
test_deepspeed_unmodelled (void)
{
  write_ds ("{ \"zero_optimization\": { \"stage\": 1, \"new_knob\": 3 } }");
  const char *const sets[] = { "training.deepspeed_config=ds.json", NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load ("", sets, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  gboolean warned = FALSE;
  for (guint i = 0; i < sc->warnings->len; i++)
    {
      const char *w = g_ptr_array_index (sc->warnings, i);
      warned |= strstr (w, "key 'deepspeed_config'") != NULL
                && strstr (w, "zero_optimization.new_knob") != NULL
                && strstr (w, "ds.json") != NULL;
    }
  CU_ASSERT (warned);
  write_ds ("{ \"zero_optimization\": { \"stage\": 3, \"zero_quantized_gradients\": true } }");
  const char *const needles[] = { "group [training], key 'deepspeed_config'", "ds.json",
                                  "zero_optimization.zero_quantized_gradients", NULL };
  expect_error ("", sets, needles);
}

/* TRUE when one of sc's warnings has every needle. */
static gboolean
warned_with (const CliScenario *sc, const char *const *needles)
{
  for (guint i = 0; i < sc->warnings->len; i++)
    {
      const char *w = g_ptr_array_index (sc->warnings, i);
      gboolean all = TRUE;
      for (guint j = 0; needles[j] != NULL; j++)
        all = all && strstr (w, needles[j]) != NULL;
      if (all)
        return TRUE;
    }
  return FALSE;
}

/* A ds_config under another profile: DeepSpeed's engine runs, so its ZeRO defaults apply
 * (reduce bucket 5e8, max live 1e9 elements: zero/config.py) under custom as under
 * deepspeed, with a warning that custom keeps its own loss and optimizer_impl; a profile
 * that never runs DeepSpeed (torchtune, torchtitan, nanotron, accelerate_fsdp) is an error
 * naming both keys; hf_trainer (the Trainer's --deepspeed) is silent. */
static void
test_deepspeed_framework (void)
{
  write_ds ("{ \"bf16\": { \"enabled\": \"auto\" }, \"zero_optimization\": { \"stage\": 2 } }");
  const char *const custom[] = { "cluster.gpus_per_node=8", "training.deepspeed_config=ds.json",
                                 NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load (PREC, custom, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.framework.kind, MODEL_FRAMEWORK_CUSTOM);
  CU_ASSERT_EQUAL (sc->stack.framework.reduce_bucket_elements, 5e8);
  CU_ASSERT_EQUAL (sc->stack.framework.stage3_max_live_parameters, 1e9);
  const char *const profile[] = { "key 'deepspeed_config'", "framework = custom",
                                  "not DeepSpeed's (upcast, fused)", NULL };
  CU_ASSERT_TRUE (warned_with (sc, profile));
  const char *const trainer[] = { "cluster.gpus_per_node=8", "training.framework=hf_trainer",
                                  "training.deepspeed_config=ds.json", NULL };
  g_autoptr (CliScenario) hf = load (PREC, trainer, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (hf);
  CU_ASSERT_EQUAL (hf->stack.framework.reduce_bucket_elements, 5e8);
  const char *const any[] = { "key 'deepspeed_config'", NULL };
  CU_ASSERT_FALSE (warned_with (hf, any));
  const char *const never[] = { "torchtune", "torchtitan", "nanotron", "accelerate_fsdp" };
  for (guint i = 0; i < G_N_ELEMENTS (never); i++)
    {
      g_autofree char *fw = g_strdup_printf ("training.framework=%s", never[i]);
      const char *const sets[] = { "cluster.gpus_per_node=8", fw,
                                   "training.deepspeed_config=ds.json", NULL };
      const char *const needles[] = { "group [training], key 'deepspeed_config'",
                                      "key 'framework'", never[i], NULL };
      expect_error (PREC, sets, needles);
    }
  /* stage 2 on one GPU without offload shards nothing: said as [parallel] data_parallel's */
  const char *const one[] = { "training.framework=deepspeed",
                              "training.deepspeed_config=ds.json", NULL };
  g_autoptr (CliScenario) sc1 = load (PREC, one, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc1);
  const char *const shards[] = { "key 'deepspeed_config'", "ds.json", "zero_optimization.stage",
                                 "over one GPU shards nothing", NULL };
  CU_ASSERT_TRUE (warned_with (sc1, shards));
  const char *const eight[] = { "cluster.gpus_per_node=8", "training.framework=deepspeed",
                                "training.deepspeed_config=ds.json", NULL };
  g_autoptr (CliScenario) sc8 = load (PREC, eight, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc8);
  CU_ASSERT_FALSE (warned_with (sc8, any));
}

/* logits_kept under loss = fused: there are no logits (models/ops/cost_ends.c kept_logits
 * returns 0), one warning naming the key; under loss = upcast it keeps the fp32 logits and
 * is silent. */
static void
test_logits_kept_fused (void)
{
  const char *const fused[] = { "training.logits_kept=true", "training.loss=fused", NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load (PREC, fused, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  const char *const needles[] = { "case.ini", "group [training], key 'logits_kept'",
                                  "has no effect", "loss = fused", NULL };
  CU_ASSERT_TRUE (warned_with (sc, needles));
  const char *const upcast[] = { "training.logits_kept=true", "training.loss=upcast", NULL };
  g_autoptr (CliScenario) sc2 = load (PREC, upcast, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc2);
  const char *const any[] = { "key 'logits_kept'", NULL };
  CU_ASSERT_FALSE (warned_with (sc2, any));
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-fw-XXXXXX");
  static const StepsimTest tests[] = {
    { "profile first, explicit keys override it", test_profile_then_overrides },
    { "bad framework keys name group and key", test_bad_keys },
    { "deepspeed_config values land in the scenario", test_deepspeed_config },
    { "deepspeed_config: unknown keys warned, unmodelled refused", test_deepspeed_unmodelled },
    { "deepspeed_config: fp16/bf16 auto takes the scenario's precision", test_deepspeed_precision },
    { "deepspeed_config: offload_optimizer with stage 1 is refused naming its key",
      test_deepspeed_offload_stage1 },
    { "deepspeed_config: train_batch_size = micro × GA × ranks", test_deepspeed_train_batch },
    { "deepspeed_config: a zero prefetch bucket or max_live prefetches nothing",
      test_deepspeed_no_prefetch },
    { "deepspeed_config under another profile: applied and warned, or refused",
      test_deepspeed_framework },
    { "logits_kept with loss = fused: warned", test_logits_kept_fused },
  };
  int rc = STEPSIM_RUN_TESTS ("cli/framework", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (tmpdir);
  return rc;
}
