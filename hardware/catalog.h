/* hardware/catalog.h — the built-in GPU catalog and scenario-defined GPUs.
 * Every figure carries its source (../shared/reference/hardware.md: NVIDIA datasheets,
 * measured matmul/bandwidth figures), recorded in HwGpuSpec.source.
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"

/* Number of built-in GPU types and the i-th one (creation order, borrowed). */
guint hw_catalog_n_gpus (void);
const HwGpuSpec *hw_catalog_gpu_at (guint i);

/* Looks a GPU up by name, case-insensitively (e.g. "a100-80gb-sxm", "H100-SXM").
 * NULL + G_KEY_FILE_ERROR_INVALID_VALUE if unknown; the message lists the nearest name. */
const HwGpuSpec *hw_catalog_gpu (const char *name, GError **error);

/* Builds a GPU from the scenario group `group` (e.g. "gpu.MyGPU") of `kf`: key `base`
 * names a catalog GPU to start from (optional); every other key overrides one figure,
 * parsed strictly with units: memory ("80 GiB"), hbm_bandwidth ("2039 GB/s"), fp32, tf32,
 * bf16, fp16, fp8 ("312 TFLOP/s"), compute_efficiency, hbm_efficiency (numbers in (0,1]),
 * cuda_context ("1343 MiB"), pcie_bandwidth, pcie_latency ("2 us"), nvlink_bandwidth,
 * kernel_latency, comm_sm_fraction, sm_count (a whole number), generation (volta, ampere,
 * ada, hopper, blackwell: the kernel model's tables, hardware/kernel.h). Without `base`,
 * memory, hbm_bandwidth and bf16 or fp32 are required, and without sm_count and generation
 * every kernel runs at the flat compute_efficiency.
 * Unknown keys are errors naming the nearest valid key. The result's name is the part of
 * `group` after "gpu.". Errors are G_KEY_FILE_ERROR or SIM_UNITS_ERROR naming group and key
 * (the caller prefixes the file name). */
/* Details of the above: key `description` (free text, optional) sets the one-line
 * description. Figures not given without `base` take the catalog defaults
 * (compute_efficiency 0.80, hbm_efficiency 0.85, cuda_context 1 GiB, pcie_bandwidth 25 GB/s,
 * pcie_latency 2 us, kernel_latency 4 us, other peaks 0, nvlink 0). Error codes:
 * G_KEY_FILE_ERROR_GROUP_NOT_FOUND (no such group), G_KEY_FILE_ERROR_KEY_NOT_FOUND (a
 * required key missing), G_KEY_FILE_ERROR_INVALID_VALUE (unknown key, unknown base, a
 * fraction outside (0, 1], or the result fails hw_gpu_spec_validate()), SIM_UNITS_ERROR (a
 * value that does not parse). Messages read "group [gpu.X], key 'k': ...". Returns a new
 * spec (free with hw_gpu_spec_free()) whose `source` records the group and the base. */
HwGpuSpec *hw_catalog_gpu_from_keyfile (GKeyFile *kf, const char *group, GError **error);

/* The keys hw_catalog_gpu_from_keyfile() accepts, NULL-terminated, static (for callers that
 * check scenario keys or build `--set gpu.X.key=` hints). */
const char *const *hw_catalog_gpu_keys (void);
