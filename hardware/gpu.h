/* hardware/gpu.h — one GPU type: memory, bandwidths, peak FLOP/s per dtype, efficiency
 * factors, CUDA context size, host link. Plain data with a source per figure.
 *
 * Units: B, B/s, FLOP/s, s (SI doubles, DESIGN §6). Peaks are dense (no sparsity). The
 * efficiency factors are kept apart from the peaks: achievable fraction of the peak for
 * large tensor-core kernels and of HBM bandwidth for streaming kernels (DESIGN §5).
 */
#pragma once

#include <glib.h>

typedef enum
{
  HW_DTYPE_FP32,
  HW_DTYPE_TF32,
  HW_DTYPE_BF16,
  HW_DTYPE_FP16,
  HW_DTYPE_FP8,
  HW_N_DTYPES
} HwDtype;

/* GPU architecture generation: selects the kernel model's measured attention tables and
 * FP8 recipe ratios (hardware/kernel.c). UNKNOWN (a scenario GPU without `base`): flat
 * compute_efficiency for every kernel. */
typedef enum
{
  HW_GPU_GEN_UNKNOWN,
  HW_GPU_GEN_VOLTA,
  HW_GPU_GEN_AMPERE,
  HW_GPU_GEN_ADA,
  HW_GPU_GEN_HOPPER,
  HW_GPU_GEN_BLACKWELL,
  HW_GPU_GEN_CDNA3, /* AMD Instinct MI300 series (ROCm): no tables of its own, kernel.c */
} HwGpuGeneration;

typedef struct
{
  char *name;                     /* catalog key, e.g. "A100-80GB-SXM" */
  char *description;              /* one line for `stepsim list gpus` */
  double memory_capacity;         /* B usable: nvidia-smi memory.total (A100-80GB: 80 GiB) */
  double hbm_bandwidth;           /* B/s, peak */
  double peak_flops[HW_N_DTYPES]; /* FLOP/s, dense; 0 where the dtype is unsupported */
  double compute_efficiency;      /* achievable fraction of peak_flops for large GEMMs */
  double hbm_efficiency;          /* achievable fraction of hbm_bandwidth */
  double cuda_context;            /* B taken by the CUDA context + framework kernels */
  double pcie_bandwidth;          /* B/s effective, per direction, to the host */
  double pcie_latency;            /* s, per transfer */
  double nvlink_bandwidth;        /* B/s per direction per GPU; 0 when none */
  double kernel_latency;          /* s of launch gap added to every kernel */
  double host_dispatch;           /* s of host (CPU) time to issue one kernel beyond the
                                     framework's time per PyTorch op (models/stack/framework.h
                                     host_op_time), in program order, running ahead of the
                                     GPU (models/plan/executor.c); 0: none */
  double comm_sm_fraction;        /* fraction of the SMs a running collective's kernels hold
                                     (NCCL CTAs / SM count), taken from compute while it runs;
                                     0: not modelled */
  double sm_count;                /* streaming multiprocessors (datasheet); 0: unknown, the
                                     kernel model then skips wave quantization */
  HwGpuGeneration generation;     /* architecture, for the kernel model's tables */
  char *efficiency_source;        /* where compute_efficiency comes from (one line) */
  char *source;                   /* citations for the figures above */
  /* Power (hardware/catalog.c, cli/report/training.h): the board power under load, the datasheet's
   * maximum (TDP / "max power consumption"), W; 0 when unknown. idle_power: the board's
   * power with no kernel running, W, where a datasheet gives it; 0 when not given (then the
   * board is taken to draw board_power all the time, an upper bound). */
  double board_power;
  double idle_power;
} HwGpuSpec;

/* "volta", "ampere", "ada", "hopper", "blackwell", "cdna3", "unknown" (static). */
const char *hw_gpu_generation_name (HwGpuGeneration gen);
/* Parses one of those names (not "unknown"). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE
 * listing the valid names. */
gboolean hw_gpu_generation_from_string (const char *text, HwGpuGeneration *out, GError **error);

/* dtype names as used in scenarios: "fp32", "tf32", "bf16", "fp16", "fp8". */
const char *hw_dtype_name (HwDtype dtype);
gboolean hw_dtype_from_string (const char *text, HwDtype *out, GError **error);
/* Bytes per element of the dtype: 4, 4, 2, 2, 1. */
double hw_dtype_bytes (HwDtype dtype);
/* TRUE when the GPU runs `dtype` natively (its dense peak is > 0; datasheet: V100 has no
 * bf16/tf32/fp8, A100 no fp8). The one test of "the GPU lacks this precision": scenarios
 * (models/plan/simulate.c) and measured kernel rows (cli/study/validate_measured.c) refuse what it refuses. */
gboolean hw_gpu_has_dtype (const HwGpuSpec *spec, HwDtype dtype);

HwGpuSpec *hw_gpu_spec_copy (const HwGpuSpec *spec);
void hw_gpu_spec_free (HwGpuSpec *spec); /* NULL is a no-op */

/* Upper bounds of a GPU's figures, in SI units: far above any GPU (B200: 8 TB/s of HBM,
 * 4.5 PFLOP/s dense fp8, 1.2 kW; 1 PiB is also what a summary prints), low enough that a
 * typo such as 1e30 is refused instead of simulated as a step of no time. */
#define HW_GPU_MAX_MEMORY 1125899906842624.0 /* B, 1 PiB */
#define HW_GPU_MAX_FLOP_RATE 1e18            /* FLOP/s, 1e6 TFLOP/s */
#define HW_GPU_MAX_BANDWIDTH 1e15            /* B/s, 1 PB/s (HBM, PCIe, NVLink) */
#define HW_GPU_MAX_LATENCY 1.0               /* s (pcie_latency, kernel_latency, host_dispatch) */
#define HW_GPU_MAX_POWER 1e5                 /* W, 100 kW */

/* Checks every figure is positive/finite where required (efficiencies in (0, 1]).
 * FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming the field. Precisely: name non-empty;
 * memory, hbm_bandwidth, pcie_bandwidth finite and > 0; every peak, cuda_context, latencies
 * and nvlink_bandwidth finite and >= 0; fp32 or bf16 peak > 0; cuda_context < memory;
 * board_power and idle_power finite and >= 0, idle_power <= board_power when both are given;
 * none above the HW_GPU_MAX_* bounds. description and source may be NULL.
 * (hw_catalog_gpu_from_keyfile checks the same ranges per key, to name the key.) */
gboolean hw_gpu_spec_validate (const HwGpuSpec *spec, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (HwGpuSpec, hw_gpu_spec_free)
