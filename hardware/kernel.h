/* hardware/kernel.h — how fast one GPU kernel runs given its shape: the kernel model.
 *
 * hardware/ knows GPUs, not layers: a kernel is described by its class and shape (a GEMM's
 * M, N, K, an attention kernel's sequence length, head dimension and mask), never by the
 * layer it belongs to. The model returns an *efficiency*: the fraction of the GPU's dense
 * peak of the kernel's dtype at which the kernel's counted FLOPs run, so the caller's
 * compute time is flops / (peak × efficiency). Memory-bound kernels need no efficiency:
 * their HBM bytes run at hbm_bandwidth × hbm_efficiency on the GPU's HBM resource and the
 * roofline max(F/C, M/H) falls out of the fluid model (DESIGN §5).
 *
 * Formulas, factors and their sources are in kernel.c's header comment; every named factor
 * is listed by hw_kernel_describe_factors() (`stepsim list gpus --factors`,
 * `stepsim validate --factors`).
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"

typedef enum
{
  HW_KERNEL_PLAIN,          /* no shape: the flat compute_efficiency */
  HW_KERNEL_GEMM,           /* C[m×n] = A[m×k]·B[k×n], `batch` independent products */
  HW_KERNEL_GEMM_BACKWARD,  /* the backward of that GEMM: dA[m×k] = dC·Bᵀ (inner n) and
                             * dB[k×n] = Aᵀ·dC (inner m), run one after the other */
  HW_KERNEL_GEMM_DGRAD,     /* dA only (frozen weights, LoRA's base GEMMs) */
  HW_KERNEL_FLASH_FWD,      /* FlashAttention-2 forward (Dao 2023) */
  HW_KERNEL_FLASH_BWD,      /* its backward */
} HwKernelClass;

/* Which fused-attention kernel a flash class runs (the software, not the GPU, decides):
 * the zero value is FlashAttention-2, so a shape that does not say keeps it. */
typedef enum
{
  HW_ATTN_FA2,    /* FlashAttention-2 CUDA (flash-attn >= 2.0; PyTorch SDPA's flash backend) */
  HW_ATTN_TRITON, /* FlashAttention's Triton kernel (flash_attn_triton.py; llm-foundry's
                   * attn_impl: triton, on its triton-pre-mlir compiler) */
  HW_ATTN_FA1,    /* FlashAttention-1 CUDA (flash-attn 1.x; llm-foundry attn_impl: flash
                   * before flash-attn 2) */
  HW_N_ATTN_KERNELS
} HwAttnKernel;

/* A kernel's shape. GEMM classes: m, n, k, batch (elements, >= 1). Flash classes: seq
 * (query length), head_dim, causal, attn (the kernel implementation); the counted FLOPs
 * are the full s×s square (no causal halving, the model-FLOPs convention), so a causal
 * kernel's efficiency can exceed 1. */
typedef struct
{
  HwKernelClass cls;
  double m, n, k, batch;
  double seq, head_dim;
  gboolean causal;
  HwAttnKernel attn;
} HwKernelShape;

/* Sustained FLOP/s of a large, well-shaped GEMM of `dtype` on `gpu` (the rate one full wave
 * of the default tile reaches): peak × compute_efficiency for 16/32-bit dtypes; for fp8 the
 * bf16 sustained rate × the measured Transformer Engine FP8/BF16 layer-GEMM ratio of the
 * GPU's generation (including TE's quantization kernels). A dtype the GPU lacks runs at
 * fp32 (CUDA cores), as frameworks fall back. */
double hw_kernel_sustained_rate (const HwGpuSpec *gpu, HwDtype dtype);

/* Efficiency (fraction of peak_flops[dtype], or of fp32 when the dtype is unsupported) of
 * one kernel of `shape`; > 0. HW_KERNEL_PLAIN and a GPU of unknown generation or SM count
 * give compute_efficiency. Pure function. */
double hw_kernel_efficiency (const HwGpuSpec *gpu, HwDtype dtype, const HwKernelShape *shape);

/* The fraction of its counted FLOPs a kernel of `shape` computes: 1/2 for a causal
 * FlashAttention kernel (its FLOPs count the whole s×s square, the model-FLOPs convention,
 * and the kernel skips the masked half: the FlashAttention papers count half, Dao 2023,
 * arXiv 2307.08691 §4.1), 1 for every other kernel (NULL: HW_KERNEL_PLAIN). Pure. */
double hw_kernel_executed_fraction (const HwKernelShape *shape);

/* Peak FLOP/s `gpu` runs `dtype` at: peak_flops[dtype], or peak_flops[fp32] when the GPU
 * lacks the dtype (the fallback hw_kernel_efficiency and _compute_seconds use). */
double hw_kernel_peak_flops (const HwGpuSpec *gpu, HwDtype dtype);

/* Seconds of the whole GPU's compute the kernel's `flops` FLOP need: flops / (peak ×
 * efficiency); 0 for flops <= 0. `shape` NULL is HW_KERNEL_PLAIN. */
double hw_kernel_compute_seconds (const HwGpuSpec *gpu, HwDtype dtype, const HwKernelShape *shape,
                                  double flops);

/* CTAs a GEMM of `shape` launches when its library runs it as a persistent kernel (one CTA
 * per SM, each looping over its share of the output tiles: min(SMs, tiles of the default
 * 128×256 tile)), or 0 when it does not: only GEMM classes on Hopper (cuBLAS/cuBLASLt sm90
 * kernels; see kernel.c, "Persistent GEMMs"). Such a kernel, started while other kernels hold
 * some SMs, cannot place all its CTAs: the caller (hardware/cluster.c) delays its tail.
 * Pure function; `shape` NULL gives 0. */
double hw_kernel_persistent_ctas (const HwGpuSpec *gpu, const HwKernelShape *shape);
/* hw_kernel_persistent_ctas (gpu, shape) > 0, without counting the tiles (a test made at
 * every kernel's launch): a GEMM class on a Hopper GPU with SMs. Pure function; `shape` NULL
 * gives FALSE. */
gboolean hw_kernel_is_persistent (const HwGpuSpec *gpu, const HwKernelShape *shape);

/* Appends to `out` one line per named factor the kernel model uses for `gpu`:
 * "<name>\t<value>\t<source>\n" (value as printed, with its unit). */
void hw_kernel_describe_factors (const HwGpuSpec *gpu, GString *out);

/* TRUE when the GPU runs FlashAttention-2 (sm80 or newer: Ampere, Ada, Hopper, Blackwell;
 * FA-2 README "Requirements"; PyTorch sdp_utils.cpp check_sm_version for the flash backend).
 * FALSE for Volta, where the fused attention of attention = sdpa is PyTorch SDPA's
 * memory-efficient (xFormers cutlass) kernel: no s × s scores either, timed at the flat
 * compute_efficiency. An unknown generation is taken to have it (its scenario says flash). */
gboolean hw_kernel_has_flash2 (const HwGpuSpec *gpu);

/* The largest head dimension FlashAttention-2 runs (flash_api.cpp mha_fwd; PyTorch's SDPA
 * flash backend, sdp_utils.cpp check_head_dim_size_flash). */
#define HW_FA2_MAX_HEAD_DIM 256

/* Whether kernel `k` runs a training step's attention of head dimension `head_dim` on
 * inputs of `dtype` (the compute dtype: fp32/tf32 without autocast) on `gpu`. The kernels
 * refuse, at their first call, what they do not support:
 *   flash2 (flash-attn 2 csrc/flash_attn/flash_api.cpp mha_fwd/mha_bwd TORCH_CHECKs:
 *     Ampere or newer (hw_kernel_has_flash2), fp16/bf16 inputs (fp8: its attention runs in
 *     bf16), head_dim <= HW_FA2_MAX_HEAD_DIM). The same three are PyTorch SDPA's flash
 *     backend filters (sdp_utils.cpp check_sm_version, check_dtype,
 *     check_head_dim_size_flash): where they fail, `attention = sdpa` runs the
 *     memory-efficient kernel instead (timed at the flat compute_efficiency), so the caller
 *     asks this for `attention = flash` only. flash-attn 2's check is sm8x or sm90; a
 *     Blackwell GPU is taken to run it (PyTorch's copy of FA-2 does): an approximation.
 *   triton (flash_attn_triton.py _flash_attn_forward: assert d <= 128, assert q.dtype in
 *     [fp16, bf16]; llm-foundry attention.py check_valid_inputs raises TypeError)
 *   flash1 (flash-attn 1.0.9 csrc/flash_attn/fmha_api.cpp, mha_fwd/mha_bwd TORCH_CHECKs:
 *     sm75, sm8x or sm90 only — no Volta, no Blackwell —; fp16, or bf16 on sm8x/sm90;
 *     head_size % 8 == 0 and <= 128; backward head dim > 64 on sm80/sm90 only ("requires
 *     A100 or H100 GPUs as the implementation needs a large amount of shared memory"):
 *     refused on Ada. The catalog's generations do not tell sm86 (RTX 3090, A10) from
 *     sm80, so Ampere passes: an approximation.)
 * An unknown generation passes. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE saying what the
 * kernel lacks ("flash1 (flash-attn 1.x) needs head_dim <= 128 …"); the caller adds the
 * group and key. */
gboolean hw_kernel_attn_supported (HwAttnKernel k, const HwGpuSpec *gpu, guint64 head_dim,
                                   HwDtype dtype, GError **error);

/* Whether kernel `k` applies a model's sliding window: FA-2 does (window_size, flash-attn
 * >= 2.3); the Triton kernel takes none (flash_attn_triton.py has a bias, no window, and
 * llm-foundry's triton_flash_attn_fn is not passed sliding_window_size) and neither does
 * FA-1 (no window argument; llm-foundry's flash-attn v1 path drops it): they attend to the
 * whole causal context. */
gboolean hw_kernel_attn_has_window (HwAttnKernel k);

/* Scenario names of the attention kernels, as [training] attention spells them ("flash",
 * "triton", "flash1"); NULL for an out-of-range value. Static strings. */
const char *hw_attn_kernel_name (HwAttnKernel k);

/* Measured fwd+bwd TFLOP/s (table convention: causal FLOPs halved) of kernel `k` at one of
 * the benchmark points: `gen` Ampere or Hopper (anything else: 0), causal or not, head
 * dimension 64 or 128 (`d128`), sequence index 0..5 (512 … 16k). For the Triton kernel on
 * Hopper the value is derived (kernel.c header). Exposed for tests. */
double hw_kernel_attn_table (HwAttnKernel k, HwGpuGeneration gen, gboolean causal,
                             gboolean d128, guint seq_index);
