/* tests/unit/hardware/test_catalog.c — hardware/gpu.c and hardware/catalog.c: dtype table,
 * spec validation, the built-in catalog (datasheet figures from
 * ../shared/reference/hardware.md) and [gpu.NAME] scenario groups (strict units, hints).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "hardware/catalog.h"
#include "hardware/gpu.h"
#include "sim/units.h"
#include "tests/testlib.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Loads `text` as a key file; CUnit-asserts it parses. Caller frees. */
static GKeyFile *
load (const char *text)
{
  GKeyFile *kf = g_key_file_new ();
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FATAL (g_key_file_load_from_data (kf, text, (gsize) -1, G_KEY_FILE_NONE, &error));
  return kf;
}

/* Builds [gpu.MyGPU] from `text` and expects failure with `domain`/`code`; returns the
 * message (caller frees). */
static char *
expect_error (const char *text, GQuark domain, int code)
{
  g_autoptr (GKeyFile) kf = load (text);
  g_autoptr (GError) error = NULL;
  g_autoptr (HwGpuSpec) spec = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", &error);
  CU_ASSERT_PTR_NULL (spec);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_EQUAL (error->domain, domain);
  CU_ASSERT_EQUAL (error->code, code);
  return g_strdup (error->message);
}

static void
test_dtype_table (void)
{
  static const struct
  {
    const char *name;
    HwDtype dtype;
    double bytes;
  } rows[] = {
    { "fp32", HW_DTYPE_FP32, 4 }, { "tf32", HW_DTYPE_TF32, 4 }, { "bf16", HW_DTYPE_BF16, 2 },
    { "fp16", HW_DTYPE_FP16, 2 }, { "fp8", HW_DTYPE_FP8, 1 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      HwDtype d = HW_N_DTYPES;
      CU_ASSERT_TRUE (hw_dtype_from_string (rows[i].name, &d, NULL));
      CU_ASSERT_EQUAL (d, rows[i].dtype);
      CU_ASSERT_STRING_EQUAL (hw_dtype_name (rows[i].dtype), rows[i].name);
      CU_ASSERT_EQUAL (hw_dtype_bytes (rows[i].dtype), rows[i].bytes);
    }
}

static void
test_dtype_unknown (void)
{
  static const char *const bad[] = { "float32", "bf", "", "fp32 " };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      HwDtype d = HW_DTYPE_FP8;
      CU_ASSERT_FALSE (hw_dtype_from_string (bad[i], &d, &error));
      CU_ASSERT_PTR_NOT_NULL (error);
      CU_ASSERT_EQUAL (d, HW_DTYPE_FP8); /* untouched */
    }
}

static void
test_catalog_entries_valid (void)
{
  CU_ASSERT_TRUE (hw_catalog_n_gpus () >= 11);
  for (guint i = 0; i < hw_catalog_n_gpus (); i++)
    {
      const HwGpuSpec *g = hw_catalog_gpu_at (i);
      g_autoptr (GError) error = NULL;
      gboolean ok = hw_gpu_spec_validate (g, &error);
      if (!ok)
        g_printerr ("\n  %s\n", error->message);
      CU_ASSERT_TRUE (ok);
      CU_ASSERT_TRUE (g->source != NULL && strlen (g->source) > 20);
      CU_ASSERT_TRUE (g->description != NULL && g->description[0] != '\0');
      for (guint j = 0; j < i; j++)
        CU_ASSERT_TRUE (g_ascii_strcasecmp (g->name, hw_catalog_gpu_at (j)->name) != 0);
      /* Each entry is found by its own name. */
      CU_ASSERT_PTR_EQUAL (hw_catalog_gpu (g->name, NULL), g);
    }
}

static void
test_catalog_required_names (void)
{
  static const char *const names[] = {
    "V100-16GB-SXM2", "V100-32GB-SXM2", "A100-40GB-SXM", "A100-80GB-SXM", "A100-80GB-PCIE",
    "H100-SXM",       "H100-PCIE",      "H200-SXM",      "B200-SXM",      "RTX-3090",
    "RTX-4090",       "GB200",          "MI300X",
  };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    CU_ASSERT_PTR_NOT_NULL (hw_catalog_gpu (names[i], NULL));
}

static void
test_catalog_case_insensitive (void)
{
  const HwGpuSpec *a = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_EQUAL (hw_catalog_gpu ("a100-80gb-sxm", NULL), a);
  CU_ASSERT_PTR_EQUAL (hw_catalog_gpu ("A100-80gb-Sxm", NULL), a);
  CU_ASSERT_PTR_EQUAL (hw_catalog_gpu ("h100-sxm", NULL), hw_catalog_gpu ("H100-SXM", NULL));
}

static void
test_catalog_unknown_hint (void)
{
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (hw_catalog_gpu ("A100-80GB-SMX", &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_TRUE (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "unknown GPU 'A100-80GB-SMX'"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "did you mean 'A100-80GB-SXM'?"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "RTX-4090")); /* list of known names */
}

/* A100 80GB SXM datasheet (S): 312 TFLOP/s BF16 dense, 19.5 FP32, 156 TF32, 2,039 GB/s,
 * NVLink 3 300 GB/s per direction; memory 81,920 MiB = 80 GiB as nvidia-smi reports. */
static void
test_catalog_a100_figures (void)
{
  const HwGpuSpec *g = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_BF16], 312e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP16], 312e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP32], 19.5e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_TF32], 156e12, 1e-12);
  CU_ASSERT_EQUAL (g->peak_flops[HW_DTYPE_FP8], 0);
  STEPSIM_ASSERT_REL (g->hbm_bandwidth, 2.039e12, 1e-12);
  STEPSIM_ASSERT_REL (g->nvlink_bandwidth, 300e9, 1e-12);
  CU_ASSERT_EQUAL (g->memory_capacity, 85899345920.0);
  /* best-shape matmul 271 of 312 TFLOP/s at the sustained 1200 of 1410 MHz (catalog.c) */
  STEPSIM_ASSERT_REL (g->compute_efficiency, 271.0 / 312.0 * 1200.0 / 1410.0, 1e-12);
}

/* H100 SXM datasheet (S): 989 BF16, 1979 FP8, 67 FP32, 3.35 TB/s, NVLink 4 450 GB/s. */
static void
test_catalog_h100_figures (void)
{
  const HwGpuSpec *g = hw_catalog_gpu ("H100-SXM", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_BF16], 989e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP8], 1979e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP32], 67e12, 1e-12);
  STEPSIM_ASSERT_REL (g->hbm_bandwidth, 3.35e12, 1e-12);
  STEPSIM_ASSERT_REL (g->nvlink_bandwidth, 450e9, 1e-12);
  STEPSIM_ASSERT_REL (g->pcie_bandwidth, 55e9, 1e-12);
}

/* V100: Volta has FP16 tensor cores only; the CUDA context is the measured 1,343 MiB. */
static void
test_catalog_v100_dtypes (void)
{
  const HwGpuSpec *g = hw_catalog_gpu ("v100-32gb-sxm2", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_EQUAL (g->peak_flops[HW_DTYPE_BF16], 0);
  CU_ASSERT_EQUAL (g->peak_flops[HW_DTYPE_TF32], 0);
  CU_ASSERT_EQUAL (g->peak_flops[HW_DTYPE_FP8], 0);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP16], 125e12, 1e-12);
  CU_ASSERT_EQUAL (g->cuda_context, 1343.0 * 1024 * 1024);
  CU_ASSERT_EQUAL (g->memory_capacity, 32 * GIB);
}

static void
test_spec_copy_independent (void)
{
  g_autoptr (HwGpuSpec) copy = hw_gpu_spec_copy (hw_catalog_gpu ("H200-SXM", NULL));
  CU_ASSERT_PTR_NOT_NULL_FATAL (copy);
  CU_ASSERT_STRING_EQUAL (copy->name, "H200-SXM");
  CU_ASSERT_PTR_NOT_EQUAL (copy->name, hw_catalog_gpu ("H200-SXM", NULL)->name);
  g_free (copy->name);
  copy->name = g_strdup ("changed");
  CU_ASSERT_STRING_EQUAL (hw_catalog_gpu ("H200-SXM", NULL)->name, "H200-SXM");
  hw_gpu_spec_free (NULL); /* no-op */
}

static void
test_validate_rejects (void)
{
  const HwGpuSpec *base = hw_catalog_gpu ("A100-80GB-SXM", NULL);
  /* 6–10: values that describe no GPU and would make a step last for ages */
  for (guint i = 0; i < 11; i++)
    {
      g_autoptr (HwGpuSpec) s = hw_gpu_spec_copy (base);
      switch (i)
        {
        case 0: s->compute_efficiency = 1.5; break;
        case 1: s->hbm_efficiency = 0; break;
        case 2: s->hbm_bandwidth = NAN; break;
        case 3: s->peak_flops[HW_DTYPE_FP32] = s->peak_flops[HW_DTYPE_BF16] = 0; break;
        case 4: s->cuda_context = s->memory_capacity; break;
        case 5: s->peak_flops[HW_DTYPE_FP8] = -1; break;
        case 6: s->peak_flops[HW_DTYPE_BF16] = 1e-288; break;
        case 7: s->hbm_efficiency = 1e-300; break;
        case 8: s->hbm_bandwidth = 1e6; break;
        case 9: s->memory_capacity = 1e30; break;
        default: s->comm_sm_fraction = 1; break;
        }
      g_autoptr (GError) error = NULL;
      CU_ASSERT_FALSE (hw_gpu_spec_validate (s, &error));
      CU_ASSERT_TRUE (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
    }
}

static void
test_keyfile_base_override (void)
{
  g_autoptr (GKeyFile) kf = load ("[gpu.MyGPU]\n"
                                  "base = a100-80gb-sxm\n"
                                  "memory = 40 GiB\n"
                                  "compute_efficiency = 0.5\n"
                                  "nvlink_bandwidth = 400 Gbit/s\n"
                                  "pcie_latency = 3 us\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_STRING_EQUAL (g->name, "MyGPU");
  CU_ASSERT_EQUAL (g->memory_capacity, 40 * GIB);
  CU_ASSERT_EQUAL (g->compute_efficiency, 0.5);
  STEPSIM_ASSERT_REL (g->nvlink_bandwidth, 5e10, 1e-12);
  STEPSIM_ASSERT_REL (g->pcie_latency, 3e-6, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_BF16], 312e12, 1e-12); /* inherited */
  STEPSIM_ASSERT_REL (g->hbm_bandwidth, 2.039e12, 1e-12);
  CU_ASSERT_PTR_NOT_NULL (strstr (g->source, "A100-80GB-SXM"));
  CU_ASSERT_PTR_NOT_NULL (strstr (g->source, "[gpu.MyGPU]"));
}

static void
test_keyfile_without_base (void)
{
  g_autoptr (GKeyFile) kf = load ("[gpu.Custom]\n"
                                  "description = a made-up accelerator\n"
                                  "memory = 96 GiB\n"
                                  "hbm_bandwidth = 3 TB/s\n"
                                  "fp32 = 50 TFLOP/s\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.Custom", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_STRING_EQUAL (g->name, "Custom");
  CU_ASSERT_STRING_EQUAL (g->description, "a made-up accelerator");
  CU_ASSERT_EQUAL (g->memory_capacity, 96 * GIB);
  STEPSIM_ASSERT_REL (g->hbm_bandwidth, 3e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP32], 50e12, 1e-12);
  CU_ASSERT_EQUAL (g->peak_flops[HW_DTYPE_BF16], 0);
  CU_ASSERT_EQUAL (g->nvlink_bandwidth, 0);
  CU_ASSERT_TRUE (g->compute_efficiency > 0 && g->compute_efficiency <= 1);
  CU_ASSERT_TRUE (g->source != NULL && g->source[0] != '\0');
}

/* Every documented key can be set (and the key list is what the parser accepts). */
static void
test_keyfile_every_key (void)
{
  g_autoptr (GKeyFile) kf = load ("[gpu.All]\n"
                                  "base = H100-SXM\ndescription = all keys\nmemory = 1 TiB\n"
                                  "hbm_bandwidth = 10 TB/s\nfp32 = 1 TFLOP/s\ntf32 = 2 TFLOP/s\n"
                                  "bf16 = 3 TFLOP/s\nfp16 = 4 TFLOP/s\nfp8 = 5 TFLOP/s\n"
                                  "compute_efficiency = 0.7\nhbm_efficiency = 0.9\n"
                                  "cuda_context = 1343 MiB\npcie_bandwidth = 50 GB/s\n"
                                  "pcie_latency = 1 us\nnvlink_bandwidth = 1 TB/s\n"
                                  "kernel_latency = 5 us\nhost_dispatch = 7 us\ncomm_sm_fraction = 0.2\n"
                                  "sm_count = 100\ngeneration = ampere\n"
                                  "power = 900 W\nidle_power = 0.1 kW\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.All", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_FP8], 5e12, 1e-12);
  STEPSIM_ASSERT_REL (g->peak_flops[HW_DTYPE_TF32], 2e12, 1e-12);
  CU_ASSERT_EQUAL (g->hbm_efficiency, 0.9);
  CU_ASSERT_EQUAL (g->cuda_context, 1343.0 * 1024 * 1024);
  STEPSIM_ASSERT_REL (g->kernel_latency, 5e-6, 1e-12);
  STEPSIM_ASSERT_REL (g->host_dispatch, 7e-6, 1e-12);
  CU_ASSERT_EQUAL (g->sm_count, 100);
  CU_ASSERT_EQUAL (g->generation, HW_GPU_GEN_AMPERE);
  CU_ASSERT_EQUAL (g->board_power, 900);
  CU_ASSERT_EQUAL (g->idle_power, 100);
  gsize n = 0;
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "gpu.All", &n, NULL);
  CU_ASSERT_EQUAL (n, g_strv_length ((char **) hw_catalog_gpu_keys ()));
}

static void
test_keyfile_missing_required (void)
{
  g_autofree char *msg = expect_error ("[gpu.MyGPU]\nhbm_bandwidth = 2 TB/s\nbf16 = 1 TFLOP/s\n",
                                       G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL (strstr (msg, "group [gpu.MyGPU]: key 'memory' is required"));
  /* fp32 is required even with bf16 given: element-wise kernels run on the CUDA cores. */
  g_autofree char *msg2 = expect_error ("[gpu.MyGPU]\nmemory = 8 GiB\nhbm_bandwidth = 1 TB/s\n"
                                        "bf16 = 100 TFLOP/s\n",
                                        G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL (strstr (msg2, "key 'fp32' is required"));
}

static void
test_keyfile_unknown_key_hint (void)
{
  g_autofree char *msg = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nmemry = 80 GiB\n",
                                       G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  CU_ASSERT_STRING_EQUAL (msg, "group [gpu.MyGPU], key 'memry': unknown key; "
                               "did you mean 'memory'?");
}

static void
test_keyfile_unknown_base (void)
{
  g_autofree char *msg = expect_error ("[gpu.MyGPU]\nbase = H100-SMX\n", G_KEY_FILE_ERROR,
                                       G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (msg, "group [gpu.MyGPU], key 'base': unknown GPU"));
  CU_ASSERT_PTR_NOT_NULL (strstr (msg, "did you mean 'H100-SXM'?"));
}

static void
test_keyfile_bad_units (void)
{
  static const char *const bad[] = {
    "[gpu.MyGPU]\nbase = H100-SXM\nmemory = 80\n",            /* bare number */
    "[gpu.MyGPU]\nbase = H100-SXM\nmemory = 80 GB/s\n",       /* other dimension */
    "[gpu.MyGPU]\nbase = H100-SXM\nmemory = 80 GiB extra\n",  /* trailing text */
    "[gpu.MyGPU]\nbase = H100-SXM\nmemory = lots\n",          /* not a number */
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GKeyFile) kf = load (bad[i]);
      g_autoptr (GError) error = NULL;
      g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", &error);
      CU_ASSERT_PTR_NULL (g);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      CU_ASSERT_EQUAL (error->domain, SIM_UNITS_ERROR);
      CU_ASSERT_TRUE (g_str_has_prefix (error->message, "group [gpu.MyGPU], key 'memory': "));
    }
}

static void
test_keyfile_efficiency_range (void)
{
  g_autofree char *msg = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\ncompute_efficiency = 1.5\n",
                                       G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (msg, "key 'compute_efficiency'"));
  g_autofree char *m0 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nhbm_efficiency = 0\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  g_autofree char *mu = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nhbm_efficiency = 85 %\n",
                                      SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX);
  /* comm_sm_fraction is a share taken away, [0, 1): parse and validation agree */
  g_autofree char *m1 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\ncomm_sm_fraction = 1\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (m1, "key 'comm_sm_fraction': '1' is outside [0, 1)"));
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_assert (g_key_file_load_from_data (kf, "[gpu.MyGPU]\nbase = H100-SXM\ncomm_sm_fraction = 0\n",
                                       -1, G_KEY_FILE_NONE, NULL));
  g_autoptr (HwGpuSpec) zero = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", NULL);
  CU_ASSERT_PTR_NOT_NULL (zero);
}

static void
test_keyfile_invalid_result (void)
{
  g_autofree char *msg = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\ncuda_context = 100 GiB\n",
                                       G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  /* the house format, naming the key the group gives (the memory is the base's) */
  CU_ASSERT_TRUE (g_str_has_prefix (msg, "group [gpu.MyGPU], key 'cuda_context': "));
  g_autofree char *m2 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nmemory = 512 MiB\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_TRUE (g_str_has_prefix (m2, "group [gpu.MyGPU], key 'memory': "));
  g_autofree char *m3 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nidle_power = 2 kW\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_TRUE (g_str_has_prefix (m3, "group [gpu.MyGPU], key 'idle_power': "));
}

/* Each figure's range, checked as the key is read (the message names it): 0 B of memory,
 * 1e30 TFLOP/s, 1e20 TB/s, a 10 s kernel latency are no GPU; 0 is "not supported" for a
 * tensor-core dtype but not for fp32. The bounds are HW_GPU_MAX_* (hardware/gpu.h): the
 * largest figure accepted is accepted. */
static void
test_keyfile_bounds (void)
{
  static const struct
  {
    const char *line, *key;
  } bad[] = {
    { "memory = 0 GB", "memory" },
    { "memory = 2 PiB", "memory" },
    { "bf16 = 1e30 TFLOP/s", "bf16" },
    { "fp8 = 2e6 TFLOP/s", "fp8" },
    { "fp32 = 0 TFLOP/s", "fp32" },
    { "hbm_bandwidth = 1e20 TB/s", "hbm_bandwidth" },
    { "pcie_bandwidth = 2000 TB/s", "pcie_bandwidth" },
    { "nvlink_bandwidth = 1e4 TB/s", "nvlink_bandwidth" },
    { "kernel_latency = 10 s", "kernel_latency" },
    { "power = 1 MW", "power" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *text = g_strdup_printf ("[gpu.MyGPU]\nbase = H100-SXM\n%s\n", bad[i].line);
      g_autofree char *msg = expect_error (text, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
      g_autofree char *want = g_strdup_printf ("group [gpu.MyGPU], key '%s': ", bad[i].key);
      if (!g_str_has_prefix (msg, want) || strstr (msg, "is outside") == NULL)
        g_printerr ("\n  %s: \"%s\"\n", bad[i].line, msg);
      CU_ASSERT_TRUE (g_str_has_prefix (msg, want) && strstr (msg, "is outside") != NULL);
    }
  /* the range is printed in the units the figures are printed in, not in raw SI (QA:
   * "[1e+09, 1e+15] B/s") */
  g_autofree char *bw = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nhbm_bandwidth = 0 TB/s\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (bw, "'0 TB/s' is outside [1 GB/s, 1000000 GB/s]"));
  static const char *const good[] = { "bf16 = 1e6 TFLOP/s", "fp8 = 0 TFLOP/s",
                                      "hbm_bandwidth = 1000 TB/s", "nvlink_bandwidth = 0 GB/s",
                                      "memory = 1 PiB", "kernel_latency = 1 s" };
  for (guint i = 0; i < G_N_ELEMENTS (good); i++)
    {
      g_autofree char *text = g_strdup_printf ("[gpu.MyGPU]\nbase = H100-SXM\n%s\n", good[i]);
      g_autoptr (GKeyFile) kf = load (text);
      g_autoptr (GError) e = NULL;
      g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", &e);
      if (g == NULL)
        g_printerr ("\n  %s: %s\n", good[i], e->message);
      CU_ASSERT_PTR_NOT_NULL (g);
    }
}

static void
test_keyfile_missing_group (void)
{
  g_autoptr (GKeyFile) kf = load ("[gpu.Other]\nbase = H100-SXM\n");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", &error));
  CU_ASSERT_TRUE (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND));
}

/* sm_count is a whole number, generation one of the names; both name group and key. */
static void
test_keyfile_kernel_model_keys (void)
{
  g_autofree char *m1 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\nsm_count = 13.5\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (m1, "group [gpu.MyGPU], key 'sm_count'"));
  g_autofree char *m2 = expect_error ("[gpu.MyGPU]\nbase = H100-SXM\ngeneration = pascal\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  CU_ASSERT_PTR_NOT_NULL (strstr (m2, "group [gpu.MyGPU], key 'generation'"));
  CU_ASSERT_PTR_NOT_NULL (strstr (m2, "hopper"));
  /* without base: inherits nothing, so the flat model until both are given */
  g_autoptr (GKeyFile) kf = load ("[gpu.MyGPU]\nmemory = 10 GiB\nhbm_bandwidth = 1 TB/s\n"
                                  "fp32 = 10 TFLOP/s\n");
  g_autoptr (HwGpuSpec) g = hw_catalog_gpu_from_keyfile (kf, "gpu.MyGPU", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_EQUAL (g->generation, HW_GPU_GEN_UNKNOWN);
  CU_ASSERT_EQUAL (g->sm_count, 0);
}

static const StepsimTest tests[] = {
  { "dtype names, parse and bytes", test_dtype_table },
  { "unknown dtype is an error", test_dtype_unknown },
  { "every catalog entry validates and cites a source", test_catalog_entries_valid },
  { "catalog has the required GPUs", test_catalog_required_names },
  { "lookup is case-insensitive", test_catalog_case_insensitive },
  { "unknown GPU names the nearest", test_catalog_unknown_hint },
  { "A100-80GB-SXM datasheet figures", test_catalog_a100_figures },
  { "H100-SXM datasheet figures", test_catalog_h100_figures },
  { "V100 has no bf16/tf32, measured context", test_catalog_v100_dtypes },
  { "spec copy is deep", test_spec_copy_independent },
  { "validate rejects bad figures", test_validate_rejects },
  { "keyfile: base + overrides", test_keyfile_base_override },
  { "keyfile: GPU without base", test_keyfile_without_base },
  { "keyfile: every key settable", test_keyfile_every_key },
  { "keyfile: missing required key", test_keyfile_missing_required },
  { "keyfile: unknown key has hint", test_keyfile_unknown_key_hint },
  { "keyfile: unknown base has hint", test_keyfile_unknown_base },
  { "keyfile: strict units", test_keyfile_bad_units },
  { "keyfile: efficiency outside (0,1]", test_keyfile_efficiency_range },
  { "keyfile: result validated", test_keyfile_invalid_result },
  { "keyfile: each figure bounded, the key named", test_keyfile_bounds },
  { "keyfile: missing group", test_keyfile_missing_group },
  { "keyfile: sm_count and generation", test_keyfile_kernel_model_keys },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/catalog", tests);
}
