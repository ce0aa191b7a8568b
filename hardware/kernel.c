/* hardware/kernel.c — the kernel model: GEMM tile and wave quantization, sustained
 * tensor-core rates per dtype, FlashAttention-2 efficiency tables.
 * See kernel.h. References are ../shared/reference/kernels.md (§ numbers below) and
 * ../shared/reference/hardware.md.
 *
 * GEMM (kernels.md §1, "Wave quantization model"; NVIDIA "Matrix Multiplication Background
 * User's Guide" §3.1–3.2). C[m×n] is cut into output tiles tm×tn; split-K cuts K into
 * `split` slices. CTAs = ⌈m/tm⌉·⌈n/tn⌉·batch·split run in waves of one CTA per SM:
 * W = ⌈CTAs / SMs⌉, and a partial last wave takes as long as a full one. One CTA's time is
 * 2·tm·tn·⌈k/split⌉ / r_tile with r_tile the per-SM rate of that tile, so
 *     t = W · 2·tm·tn·⌈k/split⌉ / r_tile  (+ split-K's fp32 partial sums through HBM),
 * minimised over tm ∈ {128, 64}, tn ∈ {256, 128, 64, 32}, split ∈ {1, 2, 4, 8, 16} (K
 * slices of at least 128), as cuBLAS's heuristics pick a kernel per shape.
 *   - The default tile 128×256 (the tile of ml-engineering's worked example, kernels.md §1)
 *     reaches the GPU's sustained rate R / SMs per SM (R = hw_kernel_sustained_rate()).
 *   - Assumption (not measured): a smaller tile is bound by feeding its operands, so its
 *     per-SM rate scales with its operand reuse tm·tn/(tm+tn) relative to the default
 *     tile's (85.3): 128×128 reaches 0.75, 64×64 0.375 of it. This is what makes big tiles
 *     win on big shapes and small tiles or split-K win on skinny ones (small micro-batch ×
 *     hidden, LoRA's rank-r products); their HBM bytes, charged by the caller, then bound
 *     them (the memory-bound regime falls out of the roofline).
 *   - Alignment (M, kernels.md §1): on H100 a SwiGLU GEMM with d_ff = 10922 ran at 272.73
 *     TFLOP/s against 395.9 (mean of 10848–11008, all multiples of 16 B); a dimension whose
 *     bytes are not a multiple of 16 (8 fp16 elements, NVIDIA's tensor-core requirement)
 *     runs at 272.73 / 395.94 = 0.689 of the aligned rate. The requirement is on the
 *     leading dimensions (row strides) of the operands (cuBLAS docs, "Tensor Core Usage":
 *     lda, ldb, ldc multiples of 16 B for the tensor-core kernels; CUTLASS's alignment is
 *     on each operand's contiguous dimension), not on an outer extent. The models layer
 *     (models/ops/cost.c) passes row-major A[m×k] (activations, stride k), B (weight, [k×n]
 *     or nn.Linear's [n×k], stride n or k) and C[m×n] (stride n); dgrad dA[m×k] = dC·Bᵀ
 *     reads dC (stride n) and B and writes dA (stride k); wgrad dB = Aᵀ·dC contracts over
 *     m, but m is the row count of both stored operands A[m×k] and dC[m×n], whose strides
 *     are k and n. So only n and k can be misaligned; m (the token count, or the query
 *     length of the batched attention GEMMs) never is, and the penalty ignores it.
 *   - Backward: dgrad (output m×k, inner n) and wgrad (output k×n, inner m) each get their
 *     own waves; the efficiency is their summed FLOPs over their summed times.
 * Sustained rates (per GPU, catalog.c): compute_efficiency × peak for 16/32-bit dtypes.
 * FP8 (kernels.md §3, TE `docs/examples/gemm_profiling`, M): a layer's GEMMs under
 * te.fp8_autocast with DelayedScaling (TE's default recipe, which Composer's amp_fp8 and
 * Megatron use) took 18.978 ms against 32.014 ms in BF16 on an H200 NVL — 1.687× including
 * the cast/amax kernels TE runs; on B300, full model, 306.2 / 187.2 = 1.636×. So the fp8
 * sustained rate is the bf16 one × that ratio (Ada: Hopper's, an assumption; Volta/Ampere
 * have no fp8 and fall back to fp32).
 *
 * Attention kernels. The shape's `attn` picks the software's kernel (HwAttnKernel): FA-2, the
 * Triton kernel (flash_attn_triton.py) or FA-1; each has its own fwd+bwd figures from the
 * same FA-2 paper benchmark (Fig. 4: "FA Triton" and "FlashAttention" columns on A100;
 * Fig. 7: "FlashAttention" on H100). The paper has no Triton bars on H100; they are derived
 * as Triton's A100 figure × FA-2's measured H100/A100 ratio at the same point: the
 * (pre-MLIR) Triton compiler, like FA-2, emits Ampere-style mma.sync with no TMA or wgmma
 * on Hopper (FA-2 paper §4.1 "no special instructions"), so both gain the same from the
 * newer GPU. FA-1's 16k points (batch 1 in that benchmark: 16–32 CTAs, an occupancy
 * collapse on A100) are replaced by its 8k ones (assumption). Everything below applies to
 * every kernel alike.
 * FlashAttention-2 (kernels.md §2, M): fwd+bwd TFLOP/s by head dimension, causal mask and
 * sequence length from the FA-2 paper's Fig. 4 (A100 80GB SXM4) and Fig. 7 (H100 SXM5),
 * FLOPs counted as 4·s²·d·heads, ÷2 causal, ×3.5 fwd+bwd. Read as a fraction of the
 * benchmark GPU's dense fp16 peak (312 / 989 TFLOP/s), so it carries to the other GPUs of
 * its generation (A100 40 GB, H100 PCIe, H200); Ada takes Ampere's (assumption), Blackwell
 * Hopper's times the measured B200/H100 ratio of FA-2 (fa2_b200 below). Interpolated
 * linearly in log2(seq) between 512 and
 * 16k (clamped outside) and linearly in d between 64 and 128 (clamped). The counted FLOPs
 * are the full square, so a causal kernel's efficiency is 2× the table's fraction. The
 * forward and backward kernels both take the fwd+bwd figure (the paper's separate fwd/bwd
 * figures exist for A100 d=128 only). fp32 inputs are not supported by FA-2: flat.
 *
 * Persistent GEMMs (Hopper). cuBLAS's sm90 GEMM kernels are persistent: they launch one
 * CTA per SM (132 on an H100 SXM), each looping over a fixed share of the output tiles
 * (pytorch/pytorch#143988: in FSDP on H100 "all the matmuls look like they are using
 * persistent kernels. That is, they launch as many CUDA blocks as there are SMs"; PR
 * #147966: "Newer matmul kernels, e.g. those targeting Hopper GPUs, sometime use a
 * persistent schedule"; CUTLASS's sm90 persistent tile scheduler sizes the grid to the SM
 * count). NCCL's CTAs never share an SM with a compute kernel (sjeaugey, NVIDIA/nccl#689),
 * so a persistent GEMM launched beside a collective places only the CTAs that fit on the
 * free SMs; the rest start when SMs free up and then do their whole share: "This can lead to
 * its blocks being scheduled as two separate waves ... can double the latency of the matmul
 * kernels" (PR #147966), measured "2x as long" beside NCCL in FSDP on H100 (#143988) and
 * 80 % → 47 % MFU beside a 24-CTA all-gather (NVIDIA developer forum, "Compute-communication
 * overlap causes severe GEMM performance degradation because of tail effect", nsys). Ampere's
 * cuBLAS kernels launch one CTA per tile (several per SM), so a held SM only slows them
 * by the share held, as the fluid model charges. Blackwell's persistent kernels fetch tiles
 * dynamically (CUTLASS sm100 cluster launch control), so a late CTA takes fewer tiles:
 * not marked persistent here (assumption, no measurement found). hw_kernel_persistent_ctas()
 * marks the GEMM classes on Hopper; hardware/cluster.c applies the delay.
 *
 * Launch cost: every kernel keeps the GPU's kernel_latency (catalog.c, 4 us: the eager
 * dispatch-bound figure of pytorch/pytorch#82793, kernels.md §5). The host timeline (the
 * CPU issuing kernels no faster than Python and the dispatcher allow) is the executor's:
 * the framework's host time per PyTorch op (models/stack/framework.h host_op_time) for the
 * ops each kernel stands for, plus HwGpuSpec.host_dispatch per kernel (0 by default), in
 * program order (models/plan/executor.c).
 */
#include "config.h"
#include "hardware/kernel.h"

#include <math.h>
#include <stdarg.h>

#define TFLOPS 1e12
#define US 1e-6

#define DEFAULT_TM 128.0
#define DEFAULT_TN 256.0
#define MIN_SPLIT_K 128.0
#define MISALIGNED (272.73 / 395.94)

/* Seq-lengths of the FA-2 tables: 512 … 16k. */
#define N_SEQ 6
static const double seqs[N_SEQ] = { 512, 1024, 2048, 4096, 8192, 16384 };

typedef double AttnRows[2][2][N_SEQ]; /* [causal][d = 64, 128][seq], fwd+bwd TFLOP/s */

typedef struct
{
  double peak;            /* FLOP/s, the benchmark GPU's dense fp16 peak */
  HwGpuGeneration gen;    /* the benchmark GPU's generation (hw_kernel_attn_table) */
} FlashTable;

/* FA-2 paper Fig. 4a–d (A100) and Fig. 7 (H100), kernels.md §2; transcription in
 * viktor-shcherb/msc_thesis references/2024-05-flashattention-2/sections/
 * 04_empirical-validation.md. [kernel][gen: 0 A100, 1 H100]. */
static const AttnRows attn_rows[HW_N_ATTN_KERNELS][2] = {
  [HW_ATTN_FA2] = {
    { { { 132, 162, 171, 175, 176, 176 }, { 131, 181, 196, 201, 203, 203 } },
      { { 88, 119, 140, 158, 165, 171 }, { 99, 131, 155, 182, 189, 189 } } },
    { { { 215, 254, 274, 288, 294, 295 }, { 248, 320, 326, 315, 318, 318 } },
      { { 141, 192, 232, 257, 273, 284 }, { 163, 221, 265, 294, 308, 328 } } },
  },
  /* "FA Triton" column of Fig. 4 (A100); the paper has no Triton bars on H100: that row is
   * derived in hw_kernel_attn_table() and left 0 here. */
  [HW_ATTN_TRITON] = {
    { { { 58, 76, 102, 104, 73, 110 }, { 57, 75, 79, 82, 83, 83 } },
      { { 38, 75, 68, 73, 80, 97 }, { 28, 61, 74, 80, 83, 92 } } },
    { { { 0 } } },
  },
  /* "FlashAttention" (FA-1 CUDA) column of Fig. 4 (A100) and Fig. 7 (H100). FA-1
   * parallelises over batch × heads only (FA-2 paper §3.2), and the benchmark's 16k point
   * is batch 1 (16k tokens), 16–32 CTAs on 108 SMs: its A100 bars collapse (46/45/18/19),
   * an occupancy effect of that batch, not the kernel's rate at 16k, so the 8k value is
   * repeated there (an assumption) on both GPUs. */
  [HW_ATTN_FA1] = {
    { { { 91, 102, 104, 108, 110, 110 }, { 74, 91, 95, 95, 98, 98 } },
      { { 58, 70, 77, 87, 92, 92 }, { 53, 72, 81, 87, 91, 91 } } },
    { { { 157, 136, 163, 161, 166, 166 }, { 127, 143, 143, 160, 167, 167 } },
      { { 104, 123, 136, 138, 149, 149 }, { 98, 126, 106, 104, 135, 135 } } },
  },
};

static const FlashTable fa2_a100 = { 312 * TFLOPS, HW_GPU_GEN_AMPERE };
static const FlashTable fa2_h100 = { 989 * TFLOPS, HW_GPU_GEN_HOPPER };
/* Blackwell runs FA-2 (and PyTorch's SDPA flash backend, the same kernels built for sm100)
 * with Ampere's warp-level mma.sync, not its tcgen05 tensor-core path, so it gains its
 * SMs and clocks over Hopper, not its 2.3x dense peak: flash-attn 2.7.4 on a B200
 * (Dao-AILab/flash-attention#1589, benchmark_flash_attention.py, d = 64, non-causal,
 * fwd+bwd) measured 258.7, 299.4, 320.7, 312.5, 333.0, 345.8 TFLOP/s at 512 ... 16k,
 * against Fig. 7's H100 215, 254, 274, 288, 294, 295: 1.157x on average (1.09-1.20).
 * So Blackwell takes the H100 table times that ratio: the reference peak that turns the
 * table into a fraction is a B200's 2250 TFLOP/s over it (GB200, 2500, then gets 1.28x). */
#define FA2_B200_OVER_H100 ((258.71 / 215 + 299.37 / 254 + 320.70 / 274 + 312.45 / 288 \
                             + 332.97 / 294 + 345.80 / 295) / 6)
static const FlashTable fa2_b200 = { 2250 * TFLOPS / FA2_B200_OVER_H100, HW_GPU_GEN_HOPPER };

static const char *const attn_names[HW_N_ATTN_KERNELS] = { "flash", "triton", "flash1" };

const char *
hw_attn_kernel_name (HwAttnKernel k)
{
  return (guint) k < HW_N_ATTN_KERNELS ? attn_names[k] : NULL;
}

double
hw_kernel_attn_table (HwAttnKernel k, HwGpuGeneration gen, gboolean causal, gboolean d128,
                      guint seq_index)
{
  g_return_val_if_fail ((guint) k < HW_N_ATTN_KERNELS && seq_index < N_SEQ, 0.0);
  if (gen != HW_GPU_GEN_AMPERE && gen != HW_GPU_GEN_HOPPER)
    return 0.0;
  guint c = causal ? 1 : 0, d = d128 ? 1 : 0, g = gen == HW_GPU_GEN_HOPPER ? 1 : 0;
  if (k == HW_ATTN_TRITON && g == 1)
    /* Derived: the Triton kernel (pre-MLIR Triton, mma.sync, no TMA/wgmma) runs on H100 as
     * FA-2 does, which also uses "no special instructions" there (FA-2 paper §4.1): its
     * A100 figure × FA-2's measured H100/A100 ratio at the same point. */
    return attn_rows[HW_ATTN_TRITON][0][c][d][seq_index] * attn_rows[HW_ATTN_FA2][1][c][d][seq_index]
           / attn_rows[HW_ATTN_FA2][0][c][d][seq_index];
  return attn_rows[k][g][c][d][seq_index];
}

typedef struct
{
  const FlashTable *flash; /* NULL: flat */
  double fp8_ratio;        /* fp8 / bf16 sustained GEMM rate; 0: no fp8 tensor cores */
  const char *flash_source;
  const char *fp8_source;
} GenFactors;

#define SRC_FA2_A100 "FA-2 paper (Dao 2023, arXiv 2307.08691) Fig. 4, A100 fwd+bwd (kernels.md §2)"
#define SRC_FA2_H100 "FA-2 paper (Dao 2023, arXiv 2307.08691) Fig. 7, H100 fwd+bwd (kernels.md §2)"
#define SRC_FA2_B200 "FA-2 paper Fig. 7 (H100) x 1.157, flash-attn 2.7.4 on B200 over H100 " \
  "(Dao-AILab/flash-attention#1589, d 64 non-causal)"
#define SRC_FP8_H "TE gemm_profiling, H200 NVL, DelayedScaling autocast 32.014/18.978 ms (kernels.md §3)"
#define SRC_FP8_B "TE gemm_profiling, B300, DelayedScaling autocast 306.2/187.2 ms (kernels.md §3)"

static const GenFactors gen_factors[] = {
  [HW_GPU_GEN_UNKNOWN] = { NULL, 0, "none (unknown generation): flat compute_efficiency", "none" },
  [HW_GPU_GEN_VOLTA] = { NULL, 0, "none (FA-2 needs sm80+): flat compute_efficiency",
                         "none (no fp8 tensor cores)" },
  [HW_GPU_GEN_AMPERE] = { &fa2_a100, 0, SRC_FA2_A100, "none (no fp8 tensor cores)" },
  [HW_GPU_GEN_ADA] = { &fa2_a100, 32.014 / 18.978, SRC_FA2_A100 " (assumed for Ada)",
                       SRC_FP8_H " (assumed for Ada)" },
  [HW_GPU_GEN_HOPPER] = { &fa2_h100, 32.014 / 18.978, SRC_FA2_H100, SRC_FP8_H },
  [HW_GPU_GEN_BLACKWELL] = { &fa2_b200, 306.2 / 187.2, SRC_FA2_B200, SRC_FP8_B },
  /* AMD CDNA3 (MI300X): no published fwd+bwd table of ROCm's FlashAttention-2 (CK backend)
   * in kernels.md, and NVIDIA's tables do not carry to another vendor's kernels, so attention
   * runs at the flat compute_efficiency, as an unknown GPU's. FP8: its dense FP8 peak is 2x
   * BF16, as Hopper's; Hopper's TE recipe ratio is assumed (as for Ada): TE's ROCm port
   * runs the same DelayedScaling recipe, unmeasured here. GEMM tiles and waves use its 304
   * CUs as SMs (hipBLASLt tiles the output the same way; the tile-rate assumption is
   * NVIDIA's). */
  [HW_GPU_GEN_CDNA3] = { NULL, 32.014 / 18.978,
                         "none (no MI300X FlashAttention table): flat compute_efficiency",
                         SRC_FP8_H " (assumed for CDNA3)" },
};

static const GenFactors *
factors_of (const HwGpuSpec *gpu)
{
  guint g = (guint) gpu->generation;
  return &gen_factors[g < G_N_ELEMENTS (gen_factors) ? g : HW_GPU_GEN_UNKNOWN];
}

/* The dtype a kernel really runs at: the requested one, or fp32 when the GPU lacks it. */
static HwDtype
runnable (const HwGpuSpec *gpu, HwDtype dtype)
{
  if (dtype == HW_DTYPE_FP8 && factors_of (gpu)->fp8_ratio <= 0)
    return HW_DTYPE_FP32;
  return gpu->peak_flops[dtype] > 0 ? dtype : HW_DTYPE_FP32;
}

double
hw_kernel_sustained_rate (const HwGpuSpec *gpu, HwDtype dtype)
{
  g_return_val_if_fail (gpu != NULL && dtype < HW_N_DTYPES, 0.0);
  HwDtype dt = runnable (gpu, dtype);
  if (dt == HW_DTYPE_FP8)
    {
      double bf16 = gpu->peak_flops[HW_DTYPE_BF16] > 0 ? gpu->peak_flops[HW_DTYPE_BF16]
                                                       : gpu->peak_flops[HW_DTYPE_FP16];
      return MIN (bf16 * gpu->compute_efficiency * factors_of (gpu)->fp8_ratio,
                  gpu->peak_flops[HW_DTYPE_FP8]);
    }
  return gpu->peak_flops[dt] * gpu->compute_efficiency;
}

static gboolean
misaligned (double dim, double elem_bytes)
{
  return fmod (dim * elem_bytes, 16.0) != 0.0;
}

/* Seconds of the best tile/split for one GEMM C[m×n] (inner k) × batch at per-SM rate
 * `r_sm` (FLOP/s) on `sms` SMs; split-K partial sums (fp32, written and read once per
 * slice) move at `hbm` B/s. */
static double
gemm_seconds (double m, double n, double k, double batch, double r_sm, double sms, double hbm)
{
  static const double tms[] = { 128, 64 }, tns[] = { 256, 128, 64, 32 };
  const double ref = DEFAULT_TM * DEFAULT_TN / (DEFAULT_TM + DEFAULT_TN);
  double best = INFINITY;
  for (guint a = 0; a < G_N_ELEMENTS (tms); a++)
    for (guint b = 0; b < G_N_ELEMENTS (tns); b++)
      for (double split = 1; split <= 16; split *= 2)
        {
          if (split > 1 && k / split < MIN_SPLIT_K)
            break;
          double tm = tms[a], tn = tns[b];
          double rate = r_sm * MIN (1.0, tm * tn / (tm + tn) / ref);
          double ctas = ceil (m / tm) * ceil (n / tn) * batch * split;
          double t = ceil (ctas / sms) * 2 * tm * tn * ceil (k / split) / rate;
          if (split > 1)
            t += 2 * 4 * split * m * n * batch / hbm;
          best = MIN (best, t);
        }
  return best;
}

static double
gemm_efficiency (const HwGpuSpec *gpu, HwDtype dt, const HwKernelShape *s)
{
  double peak = gpu->peak_flops[dt];
  double r_sm = hw_kernel_sustained_rate (gpu, dt) / gpu->sm_count;
  double hbm = gpu->hbm_bandwidth * gpu->hbm_efficiency, sms = gpu->sm_count;
  double m = MAX (s->m, 1), n = MAX (s->n, 1), k = MAX (s->k, 1), b = MAX (s->batch, 1);
  double flops = 2 * m * n * k * b, t;
  switch (s->cls)
    {
    case HW_KERNEL_GEMM_BACKWARD: /* dgrad m×k (inner n), wgrad k×n (inner m) */
      t = gemm_seconds (m, k, n, b, r_sm, sms, hbm) + gemm_seconds (k, n, m, b, r_sm, sms, hbm);
      flops *= 2;
      break;
    case HW_KERNEL_GEMM_DGRAD:
      t = gemm_seconds (m, k, n, b, r_sm, sms, hbm);
      break;
    default:
      t = gemm_seconds (m, n, k, b, r_sm, sms, hbm);
      break;
    }
  /* Only n and k are leading dimensions (see the header comment): m (tokens) never is. */
  double e = hw_dtype_bytes (dt);
  if (misaligned (n, e) || misaligned (k, e))
    t /= MISALIGNED;
  return flops / (peak * t);
}

/* Linear interpolation over seqs[] in log2(seq), clamped, of the table at (k, gen, causal, d). */
static double
attn_interp (HwAttnKernel k, HwGpuGeneration gen, gboolean causal, gboolean d128, double seq)
{
  double x = log2 (CLAMP (seq, seqs[0], seqs[N_SEQ - 1]) / seqs[0]);
  guint i = MIN ((guint) floor (x), N_SEQ - 2);
  double f = x - i, lo = hw_kernel_attn_table (k, gen, causal, d128, i);
  return lo + f * (hw_kernel_attn_table (k, gen, causal, d128, i + 1) - lo);
}

static double
flash_efficiency (const HwGpuSpec *gpu, HwDtype dt, const HwKernelShape *s)
{
  const FlashTable *tab = factors_of (gpu)->flash;
  /* no table, fp32, or a head_dim FA-2 lacks: SDPA's memory-efficient kernel, flat */
  if (tab == NULL || (dt != HW_DTYPE_BF16 && dt != HW_DTYPE_FP16)
      || s->head_dim > HW_FA2_MAX_HEAD_DIM)
    return gpu->compute_efficiency;
  HwAttnKernel k = (guint) s->attn < HW_N_ATTN_KERNELS ? s->attn : HW_ATTN_FA2;
  double lo = attn_interp (k, tab->gen, s->causal, FALSE, s->seq);
  double hi = attn_interp (k, tab->gen, s->causal, TRUE, s->seq);
  double f = (CLAMP (s->head_dim, 64.0, 128.0) - 64.0) / 64.0;
  double frac = (lo + f * (hi - lo)) * TFLOPS / tab->peak;
  return s->causal ? 2 * frac : frac;
}

double
hw_kernel_efficiency (const HwGpuSpec *gpu, HwDtype dtype, const HwKernelShape *shape)
{
  g_return_val_if_fail (gpu != NULL && dtype < HW_N_DTYPES, 1.0);
  HwDtype dt = runnable (gpu, dtype);
  if (shape == NULL || shape->cls == HW_KERNEL_PLAIN || gpu->sm_count < 1
      || gpu->generation == HW_GPU_GEN_UNKNOWN)
    return gpu->compute_efficiency;
  if (shape->cls == HW_KERNEL_FLASH_FWD || shape->cls == HW_KERNEL_FLASH_BWD)
    return flash_efficiency (gpu, dt, shape);
  return gemm_efficiency (gpu, dt, shape);
}

gboolean
hw_kernel_is_persistent (const HwGpuSpec *gpu, const HwKernelShape *shape)
{
  g_return_val_if_fail (gpu != NULL, FALSE);
  /* hw_kernel_persistent_ctas's cases: each dimension and the batch count at least 1, so
   * at least one tile, and min(SMs ≥ 1, tiles) > 0 */
  return shape != NULL && gpu->generation == HW_GPU_GEN_HOPPER && !(gpu->sm_count < 1)
         && (shape->cls == HW_KERNEL_GEMM || shape->cls == HW_KERNEL_GEMM_DGRAD
             || shape->cls == HW_KERNEL_GEMM_BACKWARD);
}

double
hw_kernel_persistent_ctas (const HwGpuSpec *gpu, const HwKernelShape *shape)
{
  g_return_val_if_fail (gpu != NULL, 0.0);
  if (!hw_kernel_is_persistent (gpu, shape))
    return 0.0;
  double m = MAX (shape->m, 1), n = MAX (shape->n, 1), k = MAX (shape->k, 1);
  double b = MAX (shape->batch, 1), tiles;
  switch (shape->cls)
    {
    case HW_KERNEL_GEMM:
      tiles = ceil (m / DEFAULT_TM) * ceil (n / DEFAULT_TN);
      break;
    case HW_KERNEL_GEMM_DGRAD: /* dA[m×k] */
      tiles = ceil (m / DEFAULT_TM) * ceil (k / DEFAULT_TN);
      break;
    case HW_KERNEL_GEMM_BACKWARD: /* dgrad dA[m×k] and wgrad dB[k×n]: the larger grid */
      tiles = MAX (ceil (m / DEFAULT_TM) * ceil (k / DEFAULT_TN),
                   ceil (k / DEFAULT_TM) * ceil (n / DEFAULT_TN));
      break;
    default:
      return 0.0;
    }
  return MIN (gpu->sm_count, tiles * b);
}

double
hw_kernel_executed_fraction (const HwKernelShape *shape)
{
  gboolean flash = shape != NULL
                   && (shape->cls == HW_KERNEL_FLASH_FWD || shape->cls == HW_KERNEL_FLASH_BWD);
  return flash && shape->causal ? 0.5 : 1.0;
}

double
hw_kernel_peak_flops (const HwGpuSpec *gpu, HwDtype dtype)
{
  g_return_val_if_fail (gpu != NULL && dtype < HW_N_DTYPES, 0.0);
  return gpu->peak_flops[runnable (gpu, dtype)];
}

double
hw_kernel_compute_seconds (const HwGpuSpec *gpu, HwDtype dtype, const HwKernelShape *shape,
                           double flops)
{
  g_return_val_if_fail (gpu != NULL && dtype < HW_N_DTYPES, 0.0);
  if (flops <= 0)
    return 0.0;
  return flops / (hw_kernel_peak_flops (gpu, dtype) * hw_kernel_efficiency (gpu, dtype, shape));
}

void
hw_kernel_describe_factors (const HwGpuSpec *gpu, GString *out)
{
  g_return_if_fail (gpu != NULL && out != NULL);
  const GenFactors *f = factors_of (gpu);
  HwDtype half = gpu->peak_flops[HW_DTYPE_BF16] > 0 ? HW_DTYPE_BF16 : HW_DTYPE_FP16;
  double rate = hw_kernel_sustained_rate (gpu, half) / TFLOPS;
  g_string_append_printf (out, "gemm_sustained_%s\t%.0f TFLOP/s (compute_efficiency %.3f)\t%s\n",
                          hw_dtype_name (half), rate, gpu->compute_efficiency,
                          gpu->efficiency_source ? gpu->efficiency_source : "see the GPU's source");
  if (f->fp8_ratio > 0 && gpu->peak_flops[HW_DTYPE_FP8] > 0)
    g_string_append_printf (out, "fp8_gemm_ratio\t%.3f (fp8 sustained %.0f TFLOP/s)\t%s\n",
                            f->fp8_ratio, hw_kernel_sustained_rate (gpu, HW_DTYPE_FP8) / TFLOPS,
                            f->fp8_source);
  g_string_append_printf (out, "gemm_tile\t128x256, %g SMs\tml-engineering training/performance "
                          "(tile/wave quantization, kernels.md §1); SMs: datasheet\n", gpu->sm_count);
  g_string_append_printf (out, "gemm_misaligned\t%.3f\tml-engineering SwiGLU d_ff sweep on H100, "
                          "272.73/395.94 TFLOP/s (kernels.md §1)\n", MISALIGNED);
  g_string_append_printf (out, "gemm_small_tile\tops-reuse tm*tn/(tm+tn)\tassumption "
                          "(not measured): operand-feed bound smaller tiles\n");
  if (gpu->generation == HW_GPU_GEN_HOPPER)
    g_string_append_printf (out, "gemm_persistent\tone CTA per SM; beside a collective the "
                            "CTAs that do not fit wait for free SMs\tpytorch/pytorch#143988, "
                            "#147966 (H100, 2x beside NCCL); NVIDIA/nccl#689 (no SM sharing)\n");
  g_string_append_printf (out, "flash_attention\ttable\t%s\n", f->flash_source);
  if (f->flash != NULL)
    g_string_append_printf (out, "attention_triton_flash1\ttable (attention = triton, flash1)\t"
                            "FA-2 paper Fig. 4 'FA Triton' and 'FlashAttention' (A100), Fig. 7 "
                            "'FlashAttention' (H100); Triton on H100 derived: A100 x FA-2's "
                            "H100/A100 ratio\n");
  g_string_append_printf (out, "hbm_efficiency\t%.2f\tassumption: no STREAM-like figure in "
                          "kernels.md/hardware.md (catalog.c)\n", gpu->hbm_efficiency);
  g_string_append_printf (out, "kernel_latency\t%.1f us\tassumption: 3-5 us per eager PyTorch "
                          "kernel (catalog.c); cf. 4 us/op dispatch-bound, pytorch/pytorch#82793 "
                          "(kernels.md §5)\n", gpu->kernel_latency / US);
}

gboolean
hw_kernel_has_flash2 (const HwGpuSpec *gpu)
{
  g_return_val_if_fail (gpu != NULL, FALSE);
  return gpu->generation != HW_GPU_GEN_VOLTA;
}

static gboolean
attn_refuse (GError **error, HwAttnKernel k, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static gboolean
attn_refuse (GError **error, HwAttnKernel k, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s %s",
               k == HW_ATTN_TRITON ? "triton (flash_attn_triton.py)"
               : k == HW_ATTN_FA1  ? "flash1 (flash-attn 1.x)"
                                   : "flash (flash-attn 2)",
               why);
  return FALSE;
}

/* FA-2's mha_fwd / mha_bwd TORCH_CHECKs (flash-attn csrc/flash_attn/flash_api.cpp):
 * "FlashAttention only supports Ampere GPUs or newer." (sm8x, sm90), "FlashAttention only
 * support fp16 and bf16 data type", "FlashAttention forward only supports head dimension at
 * most 256" (a head_dim not a multiple of 8 is padded, not refused). fp8 recipes run the
 * attention in bf16 (plan.c), so FP8 passes. */
static gboolean
fa2_supported (const HwGpuSpec *gpu, guint64 head_dim, HwDtype dtype, GError **error)
{
  if (!hw_kernel_has_flash2 (gpu))
    return attn_refuse (error, HW_ATTN_FA2, "runs on Ampere GPUs or newer only (sm80+), not "
                        "%s (%s; attention = sdpa runs PyTorch's memory-efficient kernel "
                        "there)", gpu->name, hw_gpu_generation_name (gpu->generation));
  if (dtype != HW_DTYPE_FP16 && dtype != HW_DTYPE_BF16 && dtype != HW_DTYPE_FP8)
    return attn_refuse (error, HW_ATTN_FA2, "takes fp16 or bf16 inputs only, not %s (use mixed "
                        "precision or autocast, or attention = sdpa: PyTorch's "
                        "memory-efficient kernel)", hw_dtype_name (dtype));
  if (head_dim > HW_FA2_MAX_HEAD_DIM)
    return attn_refuse (error, HW_ATTN_FA2, "supports head_dim up to %d, not %" G_GUINT64_FORMAT
                        " (attention = sdpa runs PyTorch's memory-efficient kernel)",
                        HW_FA2_MAX_HEAD_DIM, head_dim);
  return TRUE;
}

gboolean
hw_kernel_attn_supported (HwAttnKernel k, const HwGpuSpec *gpu, guint64 head_dim, HwDtype dtype,
                          GError **error)
{
  g_return_val_if_fail (gpu != NULL && (guint) k < HW_N_ATTN_KERNELS, FALSE);
  if (k == HW_ATTN_FA2)
    return fa2_supported (gpu, head_dim, dtype, error);
  if (dtype != HW_DTYPE_FP16 && dtype != HW_DTYPE_BF16 && dtype != HW_DTYPE_FP8)
    return attn_refuse (error, k, "takes fp16 or bf16 inputs only, not %s (use mixed "
                        "precision, or attention = sdpa)", hw_dtype_name (dtype));
  if (head_dim > 128)
    return attn_refuse (error, k, "supports head_dim up to 128, not %" G_GUINT64_FORMAT
                        " (attention = flash runs FA-2: up to 256)", head_dim);
  if (k == HW_ATTN_TRITON)
    return TRUE;
  HwGpuGeneration g = gpu->generation;
  if (g == HW_GPU_GEN_VOLTA || g == HW_GPU_GEN_BLACKWELL || g == HW_GPU_GEN_CDNA3)
    return attn_refuse (error, k, "runs on Turing, Ampere, Ada and Hopper GPUs only "
                        "(sm75, sm8x, sm90), not %s (%s)", gpu->name, hw_gpu_generation_name (g));
  if (head_dim % 8 != 0)
    return attn_refuse (error, k, "needs head_dim a multiple of 8, not %" G_GUINT64_FORMAT,
                        head_dim);
  if (head_dim > 64 && g == HW_GPU_GEN_ADA)
    return attn_refuse (error, k, "backward for head_dim > 64 (here %" G_GUINT64_FORMAT ") "
                        "needs an A100 or H100 (sm80/sm90: shared memory), not %s", head_dim,
                        gpu->name);
  return TRUE;
}

gboolean
hw_kernel_attn_has_window (HwAttnKernel k)
{
  return k == HW_ATTN_FA2;
}
