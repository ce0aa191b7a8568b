/* tests/unit/models/test_ds_config.c — reading a DeepSpeed ds_config.json
 * (models/stack/ds_config.h): the modelled keys in DeepSpeed's units, "auto", keys listed
 * for a warning, and one error naming the file and key for what cannot be honoured. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/stack/ds_config.h"
#include "tests/testlib.h"

static char *tmpdir;

static char *
write_json (const char *text)
{
  char *path = g_build_filename (tmpdir, "ds_config.json", NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static void
test_modelled_keys (void)
{
  g_autofree char *path = write_json (
    "{ \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": \"auto\",\n"
    "  \"train_batch_size\": 64, \"communication_data_type\": \"FP32\",\n"
    "  \"zero_allow_untested_optimizer\": true,\n"
    "  \"bf16\": { \"enabled\": true }, \"gradient_clipping\": 1.0,\n"
    "  \"optimizer\": { \"type\": \"AdamW\", \"params\": { \"lr\": 1e-5 } },\n"
    "  \"zero_optimization\": { \"stage\": 3, \"reduce_bucket_size\": 2e8,\n"
    "     \"allgather_bucket_size\": 500000000, \"stage3_prefetch_bucket_size\": \"auto\",\n"
    "     \"stage3_param_persistence_threshold\": 1e4, \"stage3_max_live_parameters\": 1e9,\n"
    "     \"overlap_comm\": true, \"round_robin_gradients\": false,\n"
    "     \"reduce_scatter\": false,\n" /* stage 3 reduce-scatters whatever it says */
    "     \"offload_optimizer\": { \"device\": \"cpu\", \"pin_memory\": true },\n"
    "     \"frobnicate\": 1 },\n"
    "  \"made_up\": {} }\n");
  ModelDsConfig c;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE_FATAL (model_ds_config_load (path, &c, &e));
  CU_ASSERT_EQUAL (c.stage, 3);
  CU_ASSERT_EQUAL (c.reduce_bucket, 2e8);
  CU_ASSERT_EQUAL (c.allgather_bucket, 5e8);
  CU_ASSERT (isnan (c.prefetch_bucket) && c.prefetch_bucket_auto);
  CU_ASSERT_EQUAL (c.persistence, 1e4);
  CU_ASSERT_EQUAL (c.max_live, 1e9);
  CU_ASSERT_EQUAL (c.overlap_comm, 1);
  CU_ASSERT_EQUAL (c.offload_optimizer, MODEL_OFFLOAD_CPU);
  CU_ASSERT_EQUAL (c.offload_param, MODEL_DS_UNSET);
  CU_ASSERT_EQUAL (c.pin_memory, 1);
  CU_ASSERT_EQUAL (c.bf16, 1);
  CU_ASSERT_EQUAL (c.fp16, MODEL_DS_UNSET);
  CU_ASSERT_EQUAL (c.grad_accum, MODEL_DS_AUTO);
  CU_ASSERT_EQUAL (c.micro_batch, 4);
  CU_ASSERT_EQUAL (c.train_batch, 64);
  CU_ASSERT_EQUAL (c.comm_dtype, HW_DTYPE_FP32); /* any case, as DeepSpeed's .lower() */
  CU_ASSERT_EQUAL (c.allow_untested, 1);
  /* the keys not modelled, for the caller's warning: exactly the two unknown ones */
  CU_ASSERT_EQUAL_FATAL (c.ignored->len, 2);
  gboolean zero = FALSE, top = FALSE;
  for (guint i = 0; i < c.ignored->len; i++)
    {
      const char *k = g_ptr_array_index (c.ignored, i);
      zero |= strcmp (k, "zero_optimization.frobnicate") == 0;
      top |= strcmp (k, "made_up") == 0;
    }
  CU_ASSERT (zero && top);
  model_ds_config_clear (&c);
}

/* Each bad file: one error with the file's path and the key. */
static void
test_errors (void)
{
  const struct
  {
    const char *json, *needle;
  } cases[] = {
    { "{ \"zero_optimization\": { \"zero_quantized_weights\": true } }",
      "key 'zero_optimization.zero_quantized_weights'" },
    { "{ \"zero_optimization\": { \"zero_hpz_partition_size\": 8 } }",
      "key 'zero_optimization.zero_hpz_partition_size'" },
    { "{ \"zero_optimization\": { \"stage\": 5 } }", "key 'zero_optimization.stage'" },
    /* stages 1-2 all-reduce instead (stage_1_and_2.py average_tensor), also when the stage
     * comes after the key */
    { "{ \"zero_optimization\": { \"reduce_scatter\": false, \"stage\": 2 } }",
      "key 'zero_optimization.reduce_scatter': false at stage 2 all-reduces" },
    { "{ \"zero_optimization\": { \"reduce_scatter\": 0, \"stage\": 1 } }",
      "key 'zero_optimization.reduce_scatter': must be true, false" },
    { "{ \"zero_optimization\": { \"reduce_bucket_size\": -1 } }",
      "key 'zero_optimization.reduce_bucket_size'" },
    { "{ \"zero_optimization\": { \"reduce_bucket_size\": 1e30 } }",
      "key 'zero_optimization.reduce_bucket_size': must be a whole number" },
    { "{ \"zero_optimization\": { \"reduce_bucket_size\": 0.5 } }",
      "key 'zero_optimization.reduce_bucket_size': must be a whole number" },
    { "{ \"zero_optimization\": { \"allgather_bucket_size\": 1099511627777 } }",
      "key 'zero_optimization.allgather_bucket_size'" },
    { "{ \"zero_optimization\": { \"stage3_prefetch_bucket_size\": 2.5 } }",
      "key 'zero_optimization.stage3_prefetch_bucket_size'" },
    { "{ \"zero_optimization\": { \"stage3_param_persistence_threshold\": 1e20 } }",
      "key 'zero_optimization.stage3_param_persistence_threshold'" },
    { "{ \"zero_optimization\": { \"stage3_max_live_parameters\": 1e20 } }",
      "key 'zero_optimization.stage3_max_live_parameters'" },
    { "{ \"zero_optimization\": { \"offload_param\": { \"device\": \"tape\" } } }",
      "key 'zero_optimization.offload_param.device'" },
    { "{ \"zero_optimization\": { \"offload_optimizer\": { \"device\": \"cpu\", "
      "\"ratio\": 0.3 } } }", "key 'zero_optimization.offload_optimizer.ratio'" },
    { "{ \"optimizer\": { \"type\": \"Lamb\" } }", "key 'optimizer.type'" },
    { "{ \"pipeline\": { \"stages\": 2 } }", "key 'pipeline'" },
    { "{ \"communication_data_type\": \"fp8\" }",
      "key 'communication_data_type': 'fp8' is not one of DeepSpeed's fp32, fp16 or bf16" },
    { "{ \"communication_data_type\": 16 }", "key 'communication_data_type': must be a string" },
    { "{ \"zero_allow_untested_optimizer\": \"yes\" }", "key 'zero_allow_untested_optimizer'" },
    { "{ \"activation_checkpointing\": { \"cpu_checkpointing\": true } }",
      "key 'activation_checkpointing.cpu_checkpointing'" },
    { "{ \"fp16\": { \"enabled\": 1 } }", "key 'fp16.enabled'" },
    { "{ \"zero_optimization\": 3 }", "key 'zero_optimization'" },
    { "{ \"zero_optimization\": { \"stage\": 2, } ", "not valid JSON at line 1, column" },
    { "[1, 2]", "must be a JSON object" },
    /* a repeated key: json-glib keeps the last silently; refused, named by its path */
    { "{ \"zero_optimization\": { \"stage\": 2, \"stage\": 3 } }",
      "key 'zero_optimization.stage' appears twice" },
    { "{ \"zero_optimization\": { \"offload_param\": { \"device\": \"cpu\", "
      "\"device\": \"none\" } } }", "key 'zero_optimization.offload_param.device' appears twice" },
    { "{ \"train_batch_size\": 8, \"train_batch_size\": 16 }",
      "key 'train_batch_size' appears twice" },
    { "{ \"train_batch_size\": 0 }", "key 'train_batch_size'" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = write_json (cases[i].json);
      ModelDsConfig c;
      g_autoptr (GError) e = NULL;
      CU_ASSERT_FALSE (model_ds_config_load (path, &c, &e));
      CU_ASSERT_PTR_NOT_NULL_FATAL (e);
      gboolean ok = strstr (e->message, path) != NULL && strstr (e->message, cases[i].needle);
      if (!ok)
        g_printerr ("\n  case %u: \"%s\" lacks \"%s\"\n", i, e->message, cases[i].needle);
      CU_ASSERT (ok);
    }
  ModelDsConfig c;
  g_autoptr (GError) e = NULL;
  g_autofree char *missing = g_build_filename (tmpdir, "absent.json", NULL);
  CU_ASSERT_FALSE (model_ds_config_load (missing, &c, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "absent.json: cannot open: ") : NULL);
  g_clear_error (&e);
  /* 100,000 nested arrays: refused before json-glib's recursion overflows the stack
   * (the depth check shared with hf_config, MODEL_JSON_MAX_DEPTH = 64); 64 levels parse */
  {
    GString *deep = g_string_new ("{ \"a\": ");
    for (int i = 0; i < 100000; i++)
      g_string_append_c (deep, '[');
    for (int i = 0; i < 100000; i++)
      g_string_append_c (deep, ']');
    g_string_append (deep, " }");
    g_autofree char *dp = write_json (deep->str);
    g_string_free (deep, TRUE);
    CU_ASSERT_FALSE (model_ds_config_load (dp, &c, &e));
    CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "nested deeper than 64") : NULL);
    CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, dp) : NULL);
    g_clear_error (&e);
    GString *ok = g_string_new ("{ \"train_batch_size\": 8, \"x\": ");
    for (int i = 0; i < 63; i++)
      g_string_append_c (ok, '[');
    for (int i = 0; i < 63; i++)
      g_string_append_c (ok, ']');
    g_string_append (ok, " }");
    g_autofree char *op = write_json (ok->str);
    g_string_free (ok, TRUE);
    ModelDsConfig c2;
    gboolean loaded = model_ds_config_load (op, &c2, &e);
    if (!loaded)
      g_printerr ("\n  64-level ds_config refused: %s\n", e->message);
    CU_ASSERT (loaded);
    if (loaded)
      model_ds_config_clear (&c2);
    g_clear_error (&e);
  }
  /* a device that never ends is refused before reading */
  CU_ASSERT_FALSE (model_ds_config_load ("/dev/zero", &c, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "/dev/zero") : NULL);
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-ds-XXXXXX");
  static const StepsimTest tests[] = {
    { "modelled keys, auto, unknown keys listed", test_modelled_keys },
    { "unmodelled or bad values: error naming file and key", test_errors },
  };
  int rc = STEPSIM_RUN_TESTS ("models/ds_config", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (tmpdir);
  return rc;
}
