/* tests/unit/hardware/test_kernel.c — hardware/kernel.c: GEMM wave quantization, the
 * alignment penalty, split-K for skinny shapes, FP8's measured ratio, FlashAttention-2,
 * Triton and FA-1 tables and the flat fallback. Oracles are closed forms of kernel.c's header formulas.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "hardware/catalog.h"
#include "hardware/kernel.h"
#include "tests/testlib.h"

static const HwGpuSpec *
gpu (const char *name)
{
  const HwGpuSpec *g = hw_catalog_gpu (name, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  return g;
}

static double
gemm (const HwGpuSpec *g, HwDtype dt, double m, double n, double k)
{
  HwKernelShape s = { .cls = HW_KERNEL_GEMM, .m = m, .n = n, .k = k, .batch = 1 };
  return hw_kernel_efficiency (g, dt, &s);
}

/* H100: 132 SMs. m = 12·128, n = 11·256 gives exactly 132 default tiles, one full wave:
 * the sustained rate, i.e. compute_efficiency of the bf16 peak. No other tile or split
 * beats it (smaller tiles run at tm·tn/(tm+tn)/85.3 < 1 of the rate and fill the same
 * SMs). */
static void
test_gemm_full_wave (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  STEPSIM_ASSERT_REL (gemm (g, HW_DTYPE_BF16, 12 * 128, 11 * 256, 4096), g->compute_efficiency,
                      1e-12);
}

/* 133 tiles (7·128 × 19·256) on 132 SMs: two waves, the second with one CTA, as long as the
 * first (kernels.md §1: "109 blocks on 108 SMs = 2 waves"), so the efficiency is
 * C·133/264. K = 128 rules split-K out (slices of >= 128); 128×128 tiles tie: 266 CTAs,
 * 3 waves × ½ tile / 0.75 rate = 2 units. */
static void
test_gemm_partial_wave (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  STEPSIM_ASSERT_REL (gemm (g, HW_DTYPE_BF16, 7 * 128, 19 * 256, 128),
                      g->compute_efficiency * 133.0 / 264.0, 1e-12);
}

/* d_ff 10922 (21844 B, not a multiple of 16) against 10944: same tile counts
 * (⌈n/256⌉ = 43 both), so the same time but for the penalty: the efficiency ratio is the
 * measured 272.73 / 395.94 times the FLOP ratio 10922 / 10944. */
static void
test_gemm_misaligned (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  double bad = gemm (g, HW_DTYPE_BF16, 8192, 10922, 4096);
  double good = gemm (g, HW_DTYPE_BF16, 8192, 10944, 4096);
  STEPSIM_ASSERT_REL (bad / good, 272.73 / 395.94 * 10922.0 / 10944.0, 1e-9);
}

/* The token count m is no leading dimension (kernel.c's header comment): m = 7207 vs 7208
 * (fp16 bytes 14414, not a multiple of 16) with n = 14336, k = 4096 (aligned) fill the same
 * ⌈m/tm⌉ tiles for every tile height (⌈7207/128⌉ = ⌈7208/128⌉ = 57, ⌈·/64⌉ = 113), so
 * the time of the forward, dgrad and full backward is the same up to split-K's partial
 * sums (linear in m): the efficiency ratio is the work ratio 7207/7208 (within 1e-3, the
 * penalty would be 0.689). A misaligned n (10922 vs 10944) still pays it. */
static void
test_gemm_token_dim_not_leading (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  HwKernelClass cls[] = { HW_KERNEL_GEMM, HW_KERNEL_GEMM_DGRAD, HW_KERNEL_GEMM_BACKWARD };
  for (guint i = 0; i < G_N_ELEMENTS (cls); i++)
    {
      HwKernelShape odd = { .cls = cls[i], .m = 7207, .n = 14336, .k = 4096, .batch = 1 };
      HwKernelShape even = odd;
      even.m = 7208;
      double r = hw_kernel_efficiency (g, HW_DTYPE_BF16, &odd)
                 / hw_kernel_efficiency (g, HW_DTYPE_BF16, &even);
      STEPSIM_ASSERT_REL (r, 7207.0 / 7208.0, 1e-3);
    }
  double bad = gemm (g, HW_DTYPE_BF16, 7207, 10922, 4096);
  double good = gemm (g, HW_DTYPE_BF16, 7207, 10944, 4096);
  STEPSIM_ASSERT_REL (bad / good, 272.73 / 395.94 * 10922.0 / 10944.0, 1e-9);
}

/* A skinny GEMM (16 tokens × 4096 → 4096) fills few tiles: far below the sustained rate,
 * but split-K lifts it above the single-split default-tile figure, 16·4096 /
 * (132 SMs · 128·256 per CTA) of a wave's work, C·16·4096/(132·128·256). */
static void
test_gemm_skinny (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  double e = gemm (g, HW_DTYPE_BF16, 16, 4096, 4096);
  double one_wave = g->compute_efficiency * 16.0 * 4096.0 / (132.0 * 128.0 * 256.0);
  CU_ASSERT_TRUE (e < 0.2 * g->compute_efficiency);
  CU_ASSERT_TRUE (e > one_wave);
}

/* FP8 sustained = bf16 sustained × TE's DelayedScaling layer ratio 32.014/18.978 (H200
 * NVL, kernels.md §3), not the 2× of the peaks. */
static void
test_fp8_ratio (void)
{
  const HwGpuSpec *g = gpu ("H100-SXM");
  STEPSIM_ASSERT_REL (hw_kernel_sustained_rate (g, HW_DTYPE_FP8),
                      989e12 * g->compute_efficiency * 32.014 / 18.978, 1e-12);
  /* Ampere has no fp8: it runs at fp32 */
  const HwGpuSpec *a = gpu ("A100-80GB-SXM");
  STEPSIM_ASSERT_REL (hw_kernel_sustained_rate (a, HW_DTYPE_FP8), 19.5e12 * a->compute_efficiency,
                      1e-12);
}

static double
flash (const HwGpuSpec *g, double seq, double d, gboolean causal)
{
  HwKernelShape s = { .cls = HW_KERNEL_FLASH_FWD, .seq = seq, .head_dim = d, .causal = causal };
  return hw_kernel_efficiency (g, HW_DTYPE_BF16, &s);
}

/* FA-2 paper Fig. 7 (H100) and Fig. 4 (A100), kernels.md §2: causal d=128 at 2k runs at
 * 265 TFLOP/s of causal FLOPs = 2·265/989 of the counted full-square FLOPs; non-causal
 * d=64 at 8k 294/989; A100 non-causal d=128 at 4k 201/312. Interpolation: seq 2048·√2 is
 * half-way in log2 between 2k and 4k; d = 96 half-way between 64 and 128; beyond 16k the
 * 16k figure. */
static void
test_flash_tables (void)
{
  const HwGpuSpec *h = gpu ("H100-SXM"), *a = gpu ("A100-80GB-SXM");
  STEPSIM_ASSERT_REL (flash (h, 2048, 128, TRUE), 2 * 265.0 / 989.0, 1e-12);
  STEPSIM_ASSERT_REL (flash (h, 8192, 64, FALSE), 294.0 / 989.0, 1e-12);
  STEPSIM_ASSERT_REL (flash (a, 4096, 128, FALSE), 201.0 / 312.0, 1e-12);
  STEPSIM_ASSERT_REL (flash (h, 2048 * sqrt (2.0), 128, TRUE), 2 * (265.0 + 294.0) / 2 / 989.0,
                      1e-9);
  STEPSIM_ASSERT_REL (flash (h, 4096, 96, FALSE), (288.0 + 315.0) / 2 / 989.0, 1e-12);
  STEPSIM_ASSERT_REL (flash (h, 131072, 128, TRUE), 2 * 328.0 / 989.0, 1e-12);
  /* H200: same generation, same fraction */
  STEPSIM_ASSERT_REL (flash (gpu ("H200-SXM"), 2048, 128, TRUE), 2 * 265.0 / 989.0, 1e-12);
  /* B200: FA-2's mma.sync does not use Blackwell's tcgen05 tensor cores, so it runs at the
   * H100 figure times the measured B200/H100 ratio (flash-attn#1589 over Fig. 7, d 64,
   * non-causal, the mean of the six sequence points: 1.157), not at 2250/989 of it: at d 64,
   * 2k, non-causal 274 x 1.157 = 317 TFLOP/s, within 2 % of the 320.7 measured there */
  double r = (258.71 / 215 + 299.37 / 254 + 320.70 / 274 + 312.45 / 288 + 332.97 / 294
              + 345.80 / 295) / 6;
  const HwGpuSpec *b = gpu ("B200-SXM");
  STEPSIM_ASSERT_REL (flash (b, 2048, 64, FALSE) * b->peak_flops[HW_DTYPE_BF16], 274e12 * r, 1e-9);
  double rate = flash (b, 2048, 64, FALSE) * b->peak_flops[HW_DTYPE_BF16];
  CU_ASSERT (fabs (rate / 320.70e12 - 1) < 0.02);
}

static double
attn (const HwGpuSpec *g, HwAttnKernel k, double seq, double d, gboolean causal)
{
  HwKernelShape s = { .cls = HW_KERNEL_FLASH_BWD, .seq = seq, .head_dim = d, .causal = causal,
                      .attn = k };
  return hw_kernel_efficiency (g, HW_DTYPE_BF16, &s);
}

/* The Triton and FA-1 kernels (FA-2 paper Fig. 4, "FA Triton" / "FlashAttention" columns,
 * A100; Fig. 7 "FlashAttention", H100): A100 Triton causal d=128 at 2k is 74 TFLOP/s of
 * causal FLOPs, i.e. 2·74/312 of the counted square; FA-1 on H100 non-causal d=64 at 1k
 * 136/989. Triton on H100 (no bars in the paper) is derived: 74 × 265/155 (FA-2's H100 and
 * A100 figures at that point) over 989, ×2 causal. FA-1 at 16k repeats its 8k figure (the
 * benchmark's batch-1 occupancy collapse, 19 on A100, is not the kernel's rate). */
static void
test_attention_kernels (void)
{
  const HwGpuSpec *h = gpu ("H100-SXM"), *a = gpu ("A100-80GB-SXM");
  STEPSIM_ASSERT_REL (attn (a, HW_ATTN_TRITON, 2048, 128, TRUE), 2 * 74.0 / 312.0, 1e-12);
  STEPSIM_ASSERT_REL (attn (h, HW_ATTN_FA1, 1024, 64, FALSE), 136.0 / 989.0, 1e-12);
  STEPSIM_ASSERT_REL (attn (h, HW_ATTN_TRITON, 2048, 128, TRUE), 2 * 74.0 * 265.0 / 155.0 / 989.0,
                      1e-12);
  STEPSIM_ASSERT_REL (hw_kernel_attn_table (HW_ATTN_TRITON, HW_GPU_GEN_HOPPER, FALSE, FALSE, 0),
                      58.0 * 215.0 / 132.0, 1e-12);
  STEPSIM_ASSERT_REL (attn (a, HW_ATTN_FA1, 16384, 128, TRUE), 2 * 91.0 / 312.0, 1e-12);
  /* the zero value is FA-2: a shape that names no kernel keeps FA-2's figures */
  STEPSIM_ASSERT_REL (attn (h, HW_ATTN_FA2, 2048, 128, TRUE), flash (h, 2048, 128, TRUE), 1e-12);
  /* the Triton kernel is slower than FA-2 at every benchmark point on both GPUs */
  for (guint i = 0; i < 6; i++)
    for (guint c = 0; c < 2; c++)
      for (guint d = 0; d < 2; d++)
        for (guint g = 0; g < 2; g++)
          {
            HwGpuGeneration gen = g ? HW_GPU_GEN_HOPPER : HW_GPU_GEN_AMPERE;
            CU_ASSERT_TRUE (hw_kernel_attn_table (HW_ATTN_TRITON, gen, c, d, i)
                            < hw_kernel_attn_table (HW_ATTN_FA2, gen, c, d, i));
          }
  CU_ASSERT_EQUAL (hw_kernel_attn_table (HW_ATTN_FA2, HW_GPU_GEN_VOLTA, TRUE, TRUE, 0), 0.0);
  CU_ASSERT_STRING_EQUAL (hw_attn_kernel_name (HW_ATTN_TRITON), "triton");
  CU_ASSERT_PTR_NULL (hw_attn_kernel_name (HW_N_ATTN_KERNELS));
}

/* A scenario GPU without a base has no generation or SM count: every kernel runs at the
 * flat compute_efficiency, as before the kernel model. */
static void
test_flat_fallback (void)
{
  HwGpuSpec g = *gpu ("H100-SXM");
  g.generation = HW_GPU_GEN_UNKNOWN;
  CU_ASSERT_EQUAL (gemm (&g, HW_DTYPE_BF16, 7 * 128, 19 * 256, 128), g.compute_efficiency);
  CU_ASSERT_EQUAL (flash (&g, 2048, 128, TRUE), g.compute_efficiency);
  CU_ASSERT_EQUAL (hw_kernel_efficiency (gpu ("H100-SXM"), HW_DTYPE_BF16, NULL),
                   g.compute_efficiency);
  STEPSIM_ASSERT_REL (hw_kernel_compute_seconds (&g, HW_DTYPE_BF16, NULL, 1e12),
                      1e12 / (989e12 * g.compute_efficiency), 1e-12);
}

/* Backward of a GEMM: dgrad (m×k, inner n) and wgrad (k×n, inner m), twice the FLOPs. For
 * a shape whose three GEMMs each fill exactly one wave-aligned grid, the efficiency equals
 * the forward's: m = n = k = 12·128·... Here m = n = k = 4224 = 33·128: tiles of 128×256
 * give 33·17 = 561 CTAs (not whole waves), so instead check the symmetric property: for
 * m = n = k the backward's two GEMMs have the forward's shape, hence its efficiency. */
static void
test_gemm_backward_symmetric (void)
{
  const HwGpuSpec *g = gpu ("A100-80GB-SXM");
  HwKernelShape s = { .cls = HW_KERNEL_GEMM_BACKWARD, .m = 4224, .n = 4224, .k = 4224, .batch = 1 };
  STEPSIM_ASSERT_REL (hw_kernel_efficiency (g, HW_DTYPE_BF16, &s),
                      gemm (g, HW_DTYPE_BF16, 4224, 4224, 4224), 1e-12);
}

/* Every factor line has a name, a value and a source. */
static void
test_factor_listing (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  hw_kernel_describe_factors (gpu ("H100-SXM"), out);
  g_auto (GStrv) lines = g_strsplit (out->str, "\n", -1);
  guint n = 0;
  for (char **l = lines; *l != NULL && **l != '\0'; l++, n++)
    {
      g_auto (GStrv) f = g_strsplit (*l, "\t", -1);
      CU_ASSERT_EQUAL (g_strv_length (f), 3);
      CU_ASSERT_TRUE (strlen (f[2]) > 5);
    }
  CU_ASSERT_TRUE (n >= 6);
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "fp8_gemm_ratio"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "FA-2"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "gemm_persistent"));
  g_autoptr (GString) a100 = g_string_new (NULL);
  hw_kernel_describe_factors (gpu ("A100-80GB-SXM"), a100);
  CU_ASSERT_PTR_NULL (strstr (a100->str, "gemm_persistent"));
}

/* Persistent GEMMs (kernel.c): on Hopper a GEMM launches min(SMs, tiles of 128×256) CTAs,
 * per class over its output grid: forward C[m×n], dgrad dA[m×k], backward the larger of
 * dgrad's m×k and wgrad's k×n; batch multiplies the tiles. Attention kernels, Ampere and
 * Blackwell GEMMs and a missing shape are not persistent (0). */
static void
test_persistent_ctas (void)
{
  const HwGpuSpec *h100 = gpu ("H100-SXM");
  HwKernelShape big = { .cls = HW_KERNEL_GEMM, .m = 8192, .n = 8192, .k = 8192, .batch = 1 };
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &big), 132); /* 64·32 tiles > 132 SMs */
  HwKernelShape small = { .cls = HW_KERNEL_GEMM, .m = 256, .n = 700, .k = 8192, .batch = 1 };
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &small), 2 * 3); /* ⌈256/128⌉·⌈700/256⌉ */
  small.batch = 4;
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &small), 24);
  HwKernelShape dgrad = { .cls = HW_KERNEL_GEMM_DGRAD, .m = 256, .n = 8192, .k = 512, .batch = 1 };
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &dgrad), 2 * 2); /* dA 256×512 */
  HwKernelShape bwd = { .cls = HW_KERNEL_GEMM_BACKWARD, .m = 256, .n = 1024, .k = 512, .batch = 1 };
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &bwd), 4 * 4); /* wgrad 512×1024 > 2·2 */
  HwKernelShape flash = { .cls = HW_KERNEL_FLASH_FWD, .batch = 8, .seq = 4096, .head_dim = 128 };
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, &flash), 0);
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (gpu ("A100-80GB-SXM"), &big), 0);
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (gpu ("B200-SXM"), &big), 0);
  CU_ASSERT_EQUAL (hw_kernel_persistent_ctas (h100, NULL), 0);
  /* the launch-time test is the count's sign, for every class, GPU and degenerate shape
   * (zero or negative dimensions and batch count: at least one tile) */
  const HwGpuSpec *gpus[] = { h100, gpu ("A100-80GB-SXM"), gpu ("B200-SXM"), gpu ("H200-SXM") };
  const double dims[] = { -3, 0, 1, 127, 128, 129, 4096 };
  for (guint g = 0; g < G_N_ELEMENTS (gpus); g++)
    for (int cls = HW_KERNEL_PLAIN; cls <= HW_KERNEL_FLASH_BWD; cls++)
      for (guint d = 0; d < G_N_ELEMENTS (dims); d++)
        {
          HwKernelShape s = { .cls = (HwKernelClass) cls, .m = dims[d], .n = dims[(d + 3) % 7],
                              .k = dims[(d + 5) % 7], .batch = dims[(d + 1) % 7] };
          CU_ASSERT_EQUAL (hw_kernel_is_persistent (gpus[g], &s),
                           hw_kernel_persistent_ctas (gpus[g], &s) > 0);
        }
  CU_ASSERT_TRUE (hw_kernel_is_persistent (h100, &big));
  CU_ASSERT_FALSE (hw_kernel_is_persistent (h100, &flash) || hw_kernel_is_persistent (h100, NULL));
}

/* What the Triton kernel, FA-1 and FA-2 refuse at their first call (kernel.h: the asserts of
 * flash_attn_triton.py, the TORCH_CHECKs of flash-attn 1.0.9 fmha_api.cpp and of flash-attn
 * 2 flash_api.cpp: sm80+, fp16/bf16, head_dim <= 256), each named in the message; what they
 * take passes. */
static void
test_attention_limits (void)
{
  const HwGpuSpec *a100 = gpu ("A100-80GB-SXM"), *v100 = gpu ("V100-32GB-SXM2"),
                  *ada = gpu ("RTX-4090"), *b200 = gpu ("B200-SXM"), *mi300x = gpu ("MI300X");
  const struct
  {
    HwAttnKernel k;
    const HwGpuSpec *g;
    guint64 d;
    HwDtype dt;
    const char *needle; /* NULL: supported */
  } cases[] = {
    { HW_ATTN_TRITON, a100, 128, HW_DTYPE_BF16, NULL },
    { HW_ATTN_TRITON, a100, 80, HW_DTYPE_FP16, NULL },  /* any d up to 128 (padded block) */
    { HW_ATTN_TRITON, a100, 256, HW_DTYPE_BF16, "head_dim up to 128, not 256" },
    { HW_ATTN_TRITON, a100, 64, HW_DTYPE_FP32, "fp16 or bf16 inputs only, not fp32" },
    { HW_ATTN_TRITON, a100, 64, HW_DTYPE_TF32, "not tf32" },
    { HW_ATTN_TRITON, v100, 64, HW_DTYPE_FP16, NULL },  /* untested there: a warning only */
    { HW_ATTN_FA1, a100, 128, HW_DTYPE_BF16, NULL },
    { HW_ATTN_FA1, ada, 64, HW_DTYPE_BF16, NULL },
    { HW_ATTN_FA1, ada, 128, HW_DTYPE_BF16, "head_dim > 64 (here 128) needs an A100 or H100" },
    { HW_ATTN_FA1, v100, 64, HW_DTYPE_FP16, "not V100-32GB-SXM2 (volta)" },
    { HW_ATTN_FA1, b200, 64, HW_DTYPE_BF16, "(blackwell)" },
    { HW_ATTN_FA1, mi300x, 64, HW_DTYPE_BF16, "not MI300X (cdna3)" }, /* CUDA only */
    { HW_ATTN_FA2, mi300x, 128, HW_DTYPE_BF16, NULL }, /* ROCm flash-attention (CK) */
    { HW_ATTN_TRITON, mi300x, 128, HW_DTYPE_BF16, NULL },
    { HW_ATTN_FA1, a100, 160, HW_DTYPE_BF16, "up to 128, not 160" },
    { HW_ATTN_FA1, a100, 100, HW_DTYPE_BF16, "multiple of 8, not 100" },
    { HW_ATTN_FA1, a100, 64, HW_DTYPE_FP32, "not fp32" },
    { HW_ATTN_FA2, a100, 256, HW_DTYPE_BF16, NULL },
    { HW_ATTN_FA2, a100, 100, HW_DTYPE_FP16, NULL },   /* padded to 104, not refused */
    { HW_ATTN_FA2, b200, 128, HW_DTYPE_FP8, NULL },    /* fp8 recipes: attention in bf16 */
    { HW_ATTN_FA2, a100, 512, HW_DTYPE_BF16, "head_dim up to 256, not 512" },
    { HW_ATTN_FA2, a100, 64, HW_DTYPE_FP32, "fp16 or bf16 inputs only, not fp32" },
    { HW_ATTN_FA2, v100, 64, HW_DTYPE_FP16, "Ampere GPUs or newer only (sm80+), not V100" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) e = NULL;
      gboolean ok = hw_kernel_attn_supported (cases[i].k, cases[i].g, cases[i].d, cases[i].dt, &e);
      if (cases[i].needle == NULL)
        {
          CU_ASSERT (ok && e == NULL);
        }
      else
        {
          CU_ASSERT (!ok);
          const char *name = cases[i].k == HW_ATTN_FA2 ? "flash (flash-attn 2)"
                                                       : hw_attn_kernel_name (cases[i].k);
          CU_ASSERT (e != NULL && strstr (e->message, cases[i].needle) != NULL
                     && strstr (e->message, name) != NULL);
          if (e != NULL && strstr (e->message, cases[i].needle) == NULL)
            g_printerr ("\n  case %u: \"%s\" lacks \"%s\"\n", i, e->message, cases[i].needle);
        }
    }
  /* a head_dim beyond FA-2 is SDPA's memory-efficient kernel, timed flat (as on Volta) */
  HwKernelShape wide = { .cls = HW_KERNEL_FLASH_FWD, .seq = 4096, .head_dim = 512,
                         .causal = TRUE, .attn = HW_ATTN_FA2 };
  CU_ASSERT_DOUBLE_EQUAL (hw_kernel_efficiency (a100, HW_DTYPE_BF16, &wide),
                          a100->compute_efficiency, 1e-12);
  wide.head_dim = 256;
  CU_ASSERT (fabs (hw_kernel_efficiency (a100, HW_DTYPE_BF16, &wide) - a100->compute_efficiency)
             > 1e-6);
  /* only FA-2 applies a sliding window */
  CU_ASSERT (hw_kernel_attn_has_window (HW_ATTN_FA2));
  CU_ASSERT_FALSE (hw_kernel_attn_has_window (HW_ATTN_TRITON));
  CU_ASSERT_FALSE (hw_kernel_attn_has_window (HW_ATTN_FA1));
}

/* MI300X (generation cdna3, kernel.c): no FlashAttention table of its own, so a FA-2
 * kernel runs at the flat compute_efficiency (0.80 × 1307.4 TFLOP/s: its efficiency is
 * exactly compute_efficiency, at any length); fp8 GEMMs at the bf16 sustained rate × Hopper's
 * TE ratio 32.014/18.978 (assumed); the generation name round-trips. */
static void
test_cdna3 (void)
{
  const HwGpuSpec *g = hw_catalog_gpu ("MI300X", NULL);
  CU_ASSERT_FATAL (g != NULL && g->generation == HW_GPU_GEN_CDNA3);
  for (double seq = 512; seq <= 16384; seq *= 4)
    {
      HwKernelShape fa = { .cls = HW_KERNEL_FLASH_FWD, .seq = seq, .head_dim = 128,
                           .causal = TRUE, .attn = HW_ATTN_FA2 };
      STEPSIM_ASSERT_REL (hw_kernel_efficiency (g, HW_DTYPE_BF16, &fa), g->compute_efficiency,
                          1e-12);
    }
  STEPSIM_ASSERT_REL (hw_kernel_sustained_rate (g, HW_DTYPE_FP8),
                      1307.4e12 * 0.80 * 32.014 / 18.978, 1e-12);
  HwGpuGeneration back = HW_GPU_GEN_UNKNOWN;
  CU_ASSERT (hw_gpu_generation_from_string ("cdna3", &back, NULL) && back == HW_GPU_GEN_CDNA3);
  CU_ASSERT_STRING_EQUAL (hw_gpu_generation_name (HW_GPU_GEN_CDNA3), "cdna3");
}

static const StepsimTest tests[] = {
  { "CDNA3 (MI300X): flat attention, Hopper's fp8 ratio", test_cdna3 },
  { "Triton, FA-1 and FA-2: what they refuse, named", test_attention_limits },
  { "GEMM: one full wave runs at the sustained rate", test_gemm_full_wave },
  { "GEMM: a partial last wave costs a full wave", test_gemm_partial_wave },
  { "GEMM: a dimension not a multiple of 16 B runs at the measured 0.689", test_gemm_misaligned },
  { "GEMM: the token dimension m is no leading dimension, no alignment penalty",
    test_gemm_token_dim_not_leading },
  { "GEMM: skinny shapes run far below peak, split-K helps", test_gemm_skinny },
  { "GEMM backward of a cube has the forward's efficiency", test_gemm_backward_symmetric },
  { "FP8 rate is TE's measured ratio over bf16", test_fp8_ratio },
  { "FlashAttention-2 tables, interpolation and clamping", test_flash_tables },
  { "Triton and FA-1 attention kernels: their own tables, Triton on H100 derived",
    test_attention_kernels },
  { "unknown generation: flat compute_efficiency", test_flat_fallback },
  { "factor listing: name, value, source", test_factor_listing },
  { "persistent GEMMs: Hopper GEMM classes, min(SMs, tiles) CTAs", test_persistent_ctas },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/kernel", tests);
}
