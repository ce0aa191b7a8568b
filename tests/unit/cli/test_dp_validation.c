/* tests/unit/cli/test_dp_validation.c — data-parallel validation cases
 * (../shared/validation/published.md rows T9–T12, S3, S10) simulated from the scenarios
 * in tests/validation/ and checked against the published figures with the tolerance stated
 * in each scenario's comment. Every case prints predicted and measured.
 *
 * MosaicML rows (T9–T12). Tolerance, one for all four, fixed before simulating: predicted
 * tokens/s per GPU within ±20 % of the measured value. MosaicML's MFU, (6N + 12·L·h·s) ·
 * tokens/s ÷ 312 TFLOP/s (llm-foundry benchmarking README), is a fixed multiple of
 * tokens/s, so the same ±20 % holds for it; it is computed here from our tokens/s and N,
 * L, h of the scenario's model. Our own MFU (models/plan/simulate.h) divides the plan's model FLOPs —
 * 3 × the forward's matrix products: every linear layer, the attention scores and A·V over
 * the full s² (so 12·L·h·s per token, as MosaicML's term), the LM head GEMM — by the same
 * peak. It leaves out what 6N adds beyond the GEMMs: the norm weights (6·(2L + 1)·h per
 * token) and, for an untied model, the embedding table (a lookup, no FLOPs). For MPT (tied,
 * no biases) the two agree within 1e-3, checked below.
 *
 * All four rows are inside ±20 % since the kernel model (hardware/kernel.c: GEMM waves and
 * split-K, FlashAttention-2 tables, the A100's sustained-clock GEMM rate; T9 +7 %, T10
 * +13 %, T11 +12 %, T12 −6 % when written). Before it, T9–T11 were 24–30 % optimistic (every
 * GEMM at the best-shape matmul rate). Since the rows run FlashAttention's Triton kernel as
 * llm-foundry's benchmark did (attention = triton, issue 13): T9 +0 %, T10 +7 %, T11 +1 %,
 * T12 −9 % (outside `stepsim validate`'s own 8 % for T12: a documented known gap there). No per-case factor is applied. A row listed as a
 * known miss is asserted to still miss, on the optimistic side, so that this test fails —
 * and the list must be updated — as soon as a modelling change moves it.
 */
#include "config.h"

#include <math.h>
#include "models/plan/simulate.h"
#include "cli/scenario/scenario.h"
#include "tests/testlib.h"
#include "tests/unit/cli/simulate.h"


#define MOSAIC_TOLERANCE 0.20 /* ±20 % on tokens/s per GPU, all four rows */
#define A100_BF16_PEAK 312e12 /* FLOP/s, NVIDIA A100 datasheet (dense) */

typedef struct
{
  const char *id;
  const char *file;
  double tokens_per_gpu; /* measured, token/s per GPU */
  double mfu;            /* measured, MosaicML's formula, fraction */
  gboolean known_miss;   /* strict expected failure (file header) */
} MosaicRow;

static const MosaicRow mosaic_rows[] = {
  { "T9", "tests/validation/t9-mpt-7b-fsdp-8xa100.ini", 4641, 0.6423, FALSE },
  { "T10", "tests/validation/t10-mpt-13b-fsdp-8xa100.ini", 2262, 0.5957, FALSE },
  { "T11", "tests/validation/t11-mpt-1b-fsdp-8xa100.ini", 20513, 0.5986, FALSE },
  { "T12", "tests/validation/t12-mpt-30b-fsdp-ckpt-8xa100.ini", 916, 0.5530, FALSE },
};

/* MosaicML's model FLOPs per token: 6N + 12·L·h·s. */
static double
mosaic_flops_per_token (const CliScenario *sc)
{
  const ModelArch *a = sc->arch;
  return 6.0 * (double) model_arch_n_params (a)
         + 12.0 * (double) a->n_layers * (double) a->hidden_size * (double) sc->stack.seq_len;
}

/* The formula reproduces the published MFU from the published tokens/s with our N (the
 * MPT parameter count) — within 0.5 %, the rounding of the table's tokens/s and MFU. So N,
 * L, h and s of each scenario are the ones MosaicML ran. */
static void
test_mosaic_formula (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (mosaic_rows); i++)
    {
      const MosaicRow *row = &mosaic_rows[i];
      g_autofree char *path = stepsim_test_srcpath (row->file);
      g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
      double mfu = mosaic_flops_per_token (sc) * row->tokens_per_gpu / A100_BF16_PEAK;
      STEPSIM_ASSERT_REL (mfu, row->mfu, 0.005);
    }
}

static void
check_mosaic_row (const MosaicRow *row)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate (row->file, NULL, &sc, &r));
  double per_gpu = r.tokens_per_s / r.n_ranks;
  double mosaic_mfu = mosaic_flops_per_token (sc) * per_gpu / A100_BF16_PEAK;
  double err = per_gpu / row->tokens_per_gpu - 1.0;
  gboolean inside = fabs (err) <= MOSAIC_TOLERANCE;
  g_printerr ("\n  %s: tokens/s/GPU predicted %.0f, measured %.0f (%+.1f %%); MFU (MosaicML) "
              "predicted %.2f %%, measured %.2f %%; our MFU %.2f %%, HFU %.2f %%; %s\n",
              row->id, per_gpu, row->tokens_per_gpu, 100 * err, 100 * mosaic_mfu, 100 * row->mfu,
              100 * r.mfu, 100 * r.hfu,
              inside ? "within +/-20 %" : row->known_miss ? "KNOWN MISS (optimistic)" : "MISS");
  CU_ASSERT_EQUAL (r.n_ranks, 8);
  CU_ASSERT (r.fits); /* the run happened, so it fit in 80 GB */
  /* Our MFU and MosaicML's count the same FLOPs for MPT (file header). */
  STEPSIM_ASSERT_REL (r.mfu, mosaic_mfu, 1e-3);
  gboolean expected = row->known_miss ? err > MOSAIC_TOLERANCE : inside;
  CU_ASSERT (expected);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

static void
test_t9 (void)
{
  check_mosaic_row (&mosaic_rows[0]);
}

static void
test_t10 (void)
{
  check_mosaic_row (&mosaic_rows[1]);
}

static void
test_t11 (void)
{
  check_mosaic_row (&mosaic_rows[2]);
}

static void
test_t12 (void)
{
  check_mosaic_row (&mosaic_rows[3]);
}

/* S3 (scenarios/s3-llama-2-7b-zero3-8xa100.ini): "about 45 GB per GPU, fits in 80 GB".
 * Checked: it fits, and ZeRO-3's model states per GPU are (2 + 2 + 12)Ψ/N_d = 16Ψ/8 for
 * Llama-2-7B, Ψ = 6,738,415,616 (ZeRO paper, arXiv 1910.02054, Figure 1; bf16 weights and
 * gradients, fp32 master, Adam moments). The seed's 45 GB is printed beside our
 * device-used but not asserted: the seed gives no tolerance and no source for it (see
 * bench/RESULTS.md for what the gap is made of). */
static void
test_s3 (void)
{
  CliScenario *sc = NULL;
  ModelSimResult r;
  CU_ASSERT_FATAL (simulate ("scenarios/s3-llama-2-7b-zero3-8xa100.ini", NULL, &sc, &r));
  double psi = 6738415616.0;
  g_printerr ("\n  S3: device-used predicted %.1f GB (allocated %.1f GB), seed about 45 GB; "
              "model states %.2f GB = 16Psi/8 %.2f GB; capacity %.1f GB\n",
              r.device_used / 1e9, r.peak_allocated / 1e9, r.state_bytes / 1e9,
              16 * psi / 8 / 1e9, r.capacity / 1e9);
  CU_ASSERT_EQUAL (r.n_ranks, 8);
  STEPSIM_ASSERT_REL (r.state_bytes, 16 * psi / 8, 1e-9);
  CU_ASSERT (r.fits);
  CU_ASSERT (r.device_used < r.capacity);
  model_sim_result_clear (&r);
  cli_scenario_free (sc);
}

/* S10: ZeRO-1 and ZeRO-2 cost at most 5 % of step time against DDP (same model, hardware
 * and batch; tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini). DDP must fit for the
 * comparison to mean anything. The bound alone would also pass if ZeRO's collectives cost
 * nothing, so their time is checked against the closed form: a ring over N = 8 GPUs moves
 * (N - 1)/N * S bytes through each GPU's NVLink per reduce-scatter or all-gather of S bytes
 * (an all-reduce is both; NCCL's ring, Patarasuk & Yuan 2009), at most 300 GB/s one way
 * (A100 NVLink 3, 12 links x 25 GB/s, datasheet). Every stage moves the bf16 gradients
 * (S = 2 Psi) through a reduce-scatter and the 16-bit parameters or the reduced gradients
 * back through an all-gather, so rank 0's collectives are busy at least
 * 2 * (7/8) * 2 Psi / 300 GB/s = 14.4 ms (Psi = 1,235,814,400, Llama-3.2-1B); and the step
 * is no shorter than its compute: forward + backward + optimizer busy time. */
static void
test_s10 (void)
{
  const char *file = "tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini";
  const char *const z1[] = { "parallel.data_parallel=zero1", NULL };
  const char *const z2[] = { "parallel.data_parallel=zero2", NULL };
  CliScenario *sd = NULL, *s1 = NULL, *s2 = NULL;
  ModelSimResult rd, r1, r2;
  CU_ASSERT_FATAL (simulate (file, NULL, &sd, &rd));
  CU_ASSERT_FATAL (simulate (file, z1, &s1, &r1));
  CU_ASSERT_FATAL (simulate (file, z2, &s2, &r2));
  g_printerr ("\n  S10: step DDP %.4f s, ZeRO-1 %.4f s (%.3fx), ZeRO-2 %.4f s (%.3fx); "
              "bound 1.05x\n", rd.step_time, r1.step_time, r1.step_time / rd.step_time,
              r2.step_time, r2.step_time / rd.step_time);
  CU_ASSERT (rd.fits);
  CU_ASSERT (r1.step_time <= 1.05 * rd.step_time);
  CU_ASSERT (r2.step_time <= 1.05 * rd.step_time);
  const double psi = 1235814400.0, nvlink = 300e9;
  const double comm_floor = 2 * (7.0 / 8.0) * 2 * psi / nvlink;
  const ModelSimResult *all[] = { &rd, &r1, &r2 };
  const char *names[] = { "DDP", "ZeRO-1", "ZeRO-2" };
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    {
      const double *t = all[i]->time_by_kind;
      double compute = t[MODEL_TASK_KIND_FORWARD] + t[MODEL_TASK_KIND_BACKWARD]
                       + t[MODEL_TASK_KIND_OPTIMIZER];
      g_printerr ("  S10 %s: collectives busy %.1f ms (closed-form floor %.1f ms), compute "
                  "%.4f s, step %.4f s\n", names[i], 1e3 * t[MODEL_TASK_KIND_COLLECTIVE],
                  1e3 * comm_floor, compute, all[i]->step_time);
      CU_ASSERT (t[MODEL_TASK_KIND_COLLECTIVE] >= comm_floor);
      CU_ASSERT (all[i]->step_time >= compute);
    }
  /* And they do shard: less state per GPU than DDP (ZeRO Figure 1 ordering). */
  CU_ASSERT (r1.state_bytes < rd.state_bytes && r2.state_bytes < r1.state_bytes);
  model_sim_result_clear (&rd);
  model_sim_result_clear (&r1);
  model_sim_result_clear (&r2);
  cli_scenario_free (sd);
  cli_scenario_free (s1);
  cli_scenario_free (s2);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "MosaicML MFU formula reproduces the table", test_mosaic_formula },
    { "T9 MPT-7B FSDP 8x A100 within 20 %", test_t9 },
    { "T10 MPT-13B FSDP 8x A100 within 20 %", test_t10 },
    { "T11 MPT-1B FSDP 8x A100 within 20 %", test_t11 },
    { "T12 MPT-30B FSDP + ckpt 8x A100 within 20 %", test_t12 },
    { "S3 7B ZeRO-3 fits, states 16Psi/8", test_s3 },
    { "S10 ZeRO-1/2 within 5 % of DDP", test_s10 },
  };
  return STEPSIM_RUN_TESTS ("validation/dp", tests);
}
