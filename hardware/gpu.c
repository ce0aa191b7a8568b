/* hardware/gpu.c — dtype names and sizes, and the HwGpuSpec value type (copy, free,
 * validate).
 *
 * Invariants checked by hw_gpu_spec_validate(): every capacity a kernel or transfer divides
 * by (HBM bandwidth, PCIe bandwidth, memory) is finite and > 0, at least one of the FP32 and
 * BF16 peaks is > 0 (a GPU that can run nothing is an input error), efficiencies are in
 * (0, 1], and the CUDA context fits in memory. Units: SI (B, B/s, FLOP/s, s; DESIGN §6).
 */
#include "config.h"
#include "hardware/gpu.h"

#include <math.h>
#include "sim/units.h"

static const char *const dtype_names[HW_N_DTYPES] = {
  [HW_DTYPE_FP32] = "fp32", [HW_DTYPE_TF32] = "tf32", [HW_DTYPE_BF16] = "bf16",
  [HW_DTYPE_FP16] = "fp16", [HW_DTYPE_FP8] = "fp8",
};

/* TF32 is stored in 32-bit registers and memory; only the tensor core drops mantissa bits. */
static const double dtype_bytes[HW_N_DTYPES] = {
  [HW_DTYPE_FP32] = 4, [HW_DTYPE_TF32] = 4, [HW_DTYPE_BF16] = 2,
  [HW_DTYPE_FP16] = 2, [HW_DTYPE_FP8] = 1,
};

const char *
hw_gpu_generation_name (HwGpuGeneration gen)
{
  static const char *const names[] = {
    [HW_GPU_GEN_UNKNOWN] = "unknown", [HW_GPU_GEN_VOLTA] = "volta",
    [HW_GPU_GEN_AMPERE] = "ampere",   [HW_GPU_GEN_ADA] = "ada",
    [HW_GPU_GEN_HOPPER] = "hopper",   [HW_GPU_GEN_BLACKWELL] = "blackwell",
    [HW_GPU_GEN_CDNA3] = "cdna3",
  };
  g_return_val_if_fail ((guint) gen < G_N_ELEMENTS (names), NULL);
  return names[gen];
}

gboolean
hw_gpu_generation_from_string (const char *text, HwGpuGeneration *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  for (guint g = HW_GPU_GEN_VOLTA; g <= HW_GPU_GEN_CDNA3; g++)
    if (g_strcmp0 (text, hw_gpu_generation_name ((HwGpuGeneration) g)) == 0)
      {
        *out = (HwGpuGeneration) g;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown generation '%s' (expected volta, ampere, ada, hopper, blackwell or "
               "cdna3)", text);
  return FALSE;
}

const char *
hw_dtype_name (HwDtype dtype)
{
  g_return_val_if_fail (dtype < HW_N_DTYPES, NULL);
  return dtype_names[dtype];
}

gboolean
hw_dtype_from_string (const char *text, HwDtype *out, GError **error)
{
  g_return_val_if_fail (text != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);
  for (guint i = 0; i < HW_N_DTYPES; i++)
    if (g_strcmp0 (text, dtype_names[i]) == 0)
      {
        *out = (HwDtype) i;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown dtype '%s' (expected fp32, tf32, bf16, fp16 or fp8)", text);
  return FALSE;
}

double
hw_dtype_bytes (HwDtype dtype)
{
  g_return_val_if_fail (dtype < HW_N_DTYPES, 0.0);
  return dtype_bytes[dtype];
}

HwGpuSpec *
hw_gpu_spec_copy (const HwGpuSpec *spec)
{
  g_return_val_if_fail (spec != NULL, NULL);
  HwGpuSpec *copy = g_new (HwGpuSpec, 1);
  *copy = *spec;
  copy->name = g_strdup (spec->name);
  copy->description = g_strdup (spec->description);
  copy->source = g_strdup (spec->source);
  copy->efficiency_source = g_strdup (spec->efficiency_source);
  return copy;
}

void
hw_gpu_spec_free (HwGpuSpec *spec)
{
  if (spec == NULL)
    return;
  g_free (spec->name);
  g_free (spec->description);
  g_free (spec->source);
  g_free (spec->efficiency_source);
  g_free (spec);
}

/* Sets the validation error for `field` of `spec`; always returns FALSE. */
static gboolean
invalid (const HwGpuSpec *spec, const char *field, const char *why, double value, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "GPU '%s': %s is %g, must be %s", spec->name ? spec->name : "(unnamed)", field,
               value, why);
  return FALSE;
}

static gboolean
check_positive (const HwGpuSpec *spec, const char *field, double v, GError **error)
{
  return (isfinite (v) && v > 0) || invalid (spec, field, "finite and > 0", v, error);
}

static gboolean
check_non_negative (const HwGpuSpec *spec, const char *field, double v, GError **error)
{
  return (isfinite (v) && v >= 0) || invalid (spec, field, "finite and >= 0", v, error);
}

/* Efficiencies below 1 % describe no GPU (and make a step last for ages). */
static gboolean
check_fraction (const HwGpuSpec *spec, const char *field, double v, GError **error)
{
  return (isfinite (v) && v >= 0.01 && v <= 1) || invalid (spec, field, "in [0.01, 1]", v, error);
}

/* A rate of at least `min` in `dim` (what even a 2010 GPU has), with units in the message. */
static gboolean
check_rate (const HwGpuSpec *spec, const char *field, double v, double min, SimDimension dim,
            gboolean zero_ok, GError **error)
{
  if (isfinite (v) && (v >= min || (zero_ok && v == 0)))
    return TRUE;
  g_autofree char *low = sim_units_format (min, dim, 3);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "GPU '%s': %s is %.3g %s, must be %sat least %s",
               spec->name ? spec->name : "(unnamed)", field, v, sim_units_si_name (dim),
               zero_ok ? "0 (unsupported) or " : "", low);
  return FALSE;
}

static gboolean
check_peaks (const HwGpuSpec *spec, GError **error)
{
  for (guint i = 0; i < HW_N_DTYPES; i++)
    {
      g_autofree char *field = g_strdup_printf ("peak FLOP/s of %s", dtype_names[i]);
      if (!check_rate (spec, field, spec->peak_flops[i], 1e9, SIM_DIM_FLOP_RATE, TRUE, error))
        return FALSE;
    }
  if (spec->peak_flops[HW_DTYPE_FP32] > 0)
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "GPU '%s': needs a peak FLOP/s > 0 for fp32 (element-wise kernels run there)",
               spec->name ? spec->name : "(unnamed)");
  return FALSE;
}

gboolean
hw_gpu_spec_validate (const HwGpuSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, FALSE);
  if (spec->name == NULL || spec->name[0] == '\0')
    {
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                           "GPU has no name");
      return FALSE;
    }
  if (spec->memory_capacity > HW_GPU_MAX_MEMORY)
    return invalid (spec, "memory", "at most 1 PiB (1125899906842624 B)", spec->memory_capacity,
                    error);
  const struct
  {
    const char *field;
    double v, max;
  } upper[] = {
    { "hbm_bandwidth", spec->hbm_bandwidth, HW_GPU_MAX_BANDWIDTH },
    { "pcie_bandwidth", spec->pcie_bandwidth, HW_GPU_MAX_BANDWIDTH },
    { "nvlink_bandwidth", spec->nvlink_bandwidth, HW_GPU_MAX_BANDWIDTH },
    { "peak FLOP/s of fp32", spec->peak_flops[HW_DTYPE_FP32], HW_GPU_MAX_FLOP_RATE },
    { "peak FLOP/s of tf32", spec->peak_flops[HW_DTYPE_TF32], HW_GPU_MAX_FLOP_RATE },
    { "peak FLOP/s of bf16", spec->peak_flops[HW_DTYPE_BF16], HW_GPU_MAX_FLOP_RATE },
    { "peak FLOP/s of fp16", spec->peak_flops[HW_DTYPE_FP16], HW_GPU_MAX_FLOP_RATE },
    { "peak FLOP/s of fp8", spec->peak_flops[HW_DTYPE_FP8], HW_GPU_MAX_FLOP_RATE },
    { "pcie_latency", spec->pcie_latency, HW_GPU_MAX_LATENCY },
    { "kernel_latency", spec->kernel_latency, HW_GPU_MAX_LATENCY },
    { "host_dispatch", spec->host_dispatch, HW_GPU_MAX_LATENCY },
    { "power", spec->board_power, HW_GPU_MAX_POWER },
    { "idle_power", spec->idle_power, HW_GPU_MAX_POWER },
  };
  for (guint i = 0; i < G_N_ELEMENTS (upper); i++)
    if (upper[i].v > upper[i].max)
      {
        g_autofree char *why = g_strdup_printf ("at most %g", upper[i].max);
        return invalid (spec, upper[i].field, why, upper[i].v, error);
      }
  if (!check_positive (spec, "memory", spec->memory_capacity, error)
      || !check_rate (spec, "hbm_bandwidth", spec->hbm_bandwidth, 1e9, SIM_DIM_BANDWIDTH, FALSE,
                      error)
      || !check_peaks (spec, error)
      || !check_fraction (spec, "compute_efficiency", spec->compute_efficiency, error)
      || !check_fraction (spec, "hbm_efficiency", spec->hbm_efficiency, error)
      || !check_non_negative (spec, "cuda_context", spec->cuda_context, error)
      || !check_rate (spec, "pcie_bandwidth", spec->pcie_bandwidth, 1e8, SIM_DIM_BANDWIDTH, FALSE,
                      error)
      || !check_non_negative (spec, "pcie_latency", spec->pcie_latency, error)
      || !check_rate (spec, "nvlink_bandwidth", spec->nvlink_bandwidth, 1e8, SIM_DIM_BANDWIDTH,
                      TRUE, error)
      || !check_non_negative (spec, "kernel_latency", spec->kernel_latency, error)
      || !check_non_negative (spec, "host_dispatch", spec->host_dispatch, error)
      || !check_non_negative (spec, "power", spec->board_power, error)
      || !check_non_negative (spec, "idle_power", spec->idle_power, error))
    return FALSE;
  if (spec->idle_power > 0 && spec->idle_power > spec->board_power)
    return invalid (spec, "idle_power", "at most the board power (key 'power')", spec->idle_power,
                    error);
  if (spec->cuda_context >= spec->memory_capacity)
    {
      g_autofree char *ctx = sim_units_format (spec->cuda_context, SIM_DIM_BYTES, 2);
      g_autofree char *mem = sim_units_format (spec->memory_capacity, SIM_DIM_BYTES, 2);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "GPU '%s': cuda_context %s must be below memory %s",
                   spec->name ? spec->name : "(unnamed)", ctx, mem);
      return FALSE;
    }
  if (!(isfinite (spec->sm_count) && spec->sm_count >= 0 && spec->sm_count <= 1e4))
    return invalid (spec, "sm_count", "in [0, 10000]", spec->sm_count, error);
  if (!(spec->comm_sm_fraction >= 0 && spec->comm_sm_fraction < 1))
    return invalid (spec, "comm_sm_fraction", "in [0, 1)", spec->comm_sm_fraction, error);
  return TRUE;
}

gboolean
hw_gpu_has_dtype (const HwGpuSpec *spec, HwDtype dtype)
{
  g_return_val_if_fail (spec != NULL && dtype < HW_N_DTYPES, FALSE);
  return spec->peak_flops[dtype] > 0;
}
