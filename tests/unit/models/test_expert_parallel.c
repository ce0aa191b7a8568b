/* tests/unit/models/test_expert_parallel.c — expert parallelism on Mixtral 8x7B: the degree
 * checks, a rank's expert parameters, one MoE layer's dispatch (capacity, drops, the
 * imbalance model, all-to-all volumes, GEMM shapes), its collectives and its activation
 * memory under Megatron's grouped GEMM and HF's eager loop, and under Megatron's
 * all-gather dispatcher.
 *
 * Mixtral 8x7B (the shipped HF config): h = 4096, i = 14336, E = 8 experts, top-k = 2,
 * L = 32 layers, V = 32000, untied. One expert is w1, w3 (i × h) and w2 (h × i): 3·h·i =
 * 176 160 768 parameters; all experts 8 · 32 · 176 160 768 = 45 097 156 608; the router
 * L·E·h = 1 048 576. The published total 46 702 792 704 (test_arch.c) leaves 1 605 636 096
 * outside the experts (attention 32·(2·4096² + 2·1024·4096) = 1 342 177 280, embedding and
 * head 2·32000·4096 = 262 144 000, norms 65·4096 = 266 240, router 1 048 576).
 *
 * Dispatch oracles at b·s = 4096 tokens per rank, bf16 (e = 2): T·k = 8192 copies, μ =
 * T·k/E = 1024 per expert per source rank, send buffer T·k·h·e = 8192 · 8192 B =
 * 67 108 864 B. Formulas: expert_parallel.h (Megatron moe_utils.py get_capacity, DeepSpeed
 * sharded_moe.py _capacity). */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/expert_parallel.h"
#include "models/parallel/tensor_parallel.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

/* One pipeline stage of `dp` data-parallel (sharded) ranks, expert degrees ep and etp. */
static ModelMesh
ep_mesh (guint dp, guint ep, guint etp)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_DP_SHARD] = dp;
  m.ep = ep;
  m.etp = etp;
  return m;
}

/* b = 1, s = 4096 (b·s = 4096 tokens on each rank), bf16, over ep. */
static ModelEpParams
mixtral_params (guint ep)
{
  ModelEpParams p;
  model_ep_params_init (&p);
  p.seq_len = 4096;
  p.ep = ep;
  return p;
}

static const double experts_total = 45097156608.0, mixtral_total = 46702792704.0;

/* ep 1/2/4/8 on an 8-rank stage: a rank holds 8/ep experts per layer, 45 097 156 608/ep
 * expert parameters (×2 B in bf16: 90.19 GB, 45.10, 22.55, 11.27 GB); the router (1 048 576)
 * on every rank. Cross-check with the tp layout (tensor_parallel.h), an independent fold:
 * its whole-model bytes are 2·(46 702 792 704 − 45 097 156 608·(1 − 1/ep)). etp 2 with ep 4
 * halves each expert again: 45 097 156 608/8 = 5 637 144 576. */
static void
test_param_split (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
  const guint eps[] = { 1, 2, 4, 8 };
  const guint64 local[] = { 45097156608ULL, 22548578304ULL, 11274289152ULL, 5637144576ULL };
  for (guint j = 0; j < G_N_ELEMENTS (eps); j++)
    {
      ModelMesh m = ep_mesh (8, eps[j], 1);
      ModelEpParamSplit s;
      g_autoptr (GError) e = NULL;
      CU_ASSERT_FATAL (model_ep_param_split (inv, &m, &s, &e));
      CU_ASSERT_EQUAL (s.n_local_experts, 8 / eps[j]);
      CU_ASSERT_EQUAL (s.expert_numel, local[j]);
      CU_ASSERT_EQUAL (s.expert_total, 45097156608ULL);
      CU_ASSERT_EQUAL (s.router_numel, 1048576);
      ModelMesh tp1 = ep_mesh (1, eps[j], 1); /* the tp layout: dp_shard 1, whole states */
      tp1.degree[MODEL_MESH_DP_REPLICATE] = 8;
      g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &tp1, 2.0, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (l);
      STEPSIM_ASSERT_REL (model_tp_layout_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE, FALSE),
                          2 * (mixtral_total - experts_total * (1 - 1.0 / eps[j])), 0);
      STEPSIM_ASSERT_REL (2.0 * (double) s.expert_numel, 2 * experts_total / eps[j], 0);
    }
  ModelMesh m = ep_mesh (8, 4, 2);
  ModelEpParamSplit s;
  CU_ASSERT_FATAL (model_ep_param_split (inv, &m, &s, NULL));
  CU_ASSERT_EQUAL (s.expert_numel, 5637144576ULL);
  CU_ASSERT_EQUAL (s.n_local_experts, 2);
  /* LoRA adapters on the experts are adapters, not the published count */
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) lora = model_inventory_new (a, &f, NULL);
  CU_ASSERT_FATAL (model_ep_param_split (lora, &m, &s, NULL));
  CU_ASSERT_EQUAL (s.expert_total, 45097156608ULL);
}

static void
assert_error (GError *e, const char *a, const char *b)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT (g_error_matches (e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  if (strstr (e->message, a) == NULL || (b != NULL && strstr (e->message, b) == NULL))
    g_printerr ("\n  message '%s' lacks '%s' / '%s'\n", e->message, a, b ? b : "");
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, a));
  if (b != NULL)
    CU_ASSERT_PTR_NOT_NULL (strstr (e->message, b));
}

/* Megatron's rules: 8 experts over ep 3 (8 % 3 ≠ 0) or ep 16 (> 8) fail naming
 * num_local_experts and [parallel] ep; ep 8 on a 4-rank stage (world % (etp·ep·pp) ≠ 0)
 * and ep 4 × etp 2 on 4 ranks fail naming ep and etp; etp 3 does not divide i = 14336 =
 * 2^11·7; a dense model at ep 2 has no experts; ep 8 × etp 1 on 8 ranks, and ep 2 × etp 2
 * on an 8-rank stage of pp 2 × dp 4 · … pass. */
static void
test_checks (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  g_autoptr (ModelArch) dense = shipped ("llama-2-7b");
  struct { guint dp, ep, etp; const char *key1, *key2; } bad[] = {
    { 24, 3, 1, "num_local_experts = 8", "[parallel] ep = 3" },
    { 16, 16, 1, "num_local_experts = 8", "[parallel] ep = 16" },
    { 4, 8, 1, "[parallel] ep = 8", "etp = 1" },
    { 4, 4, 2, "[parallel] ep = 4", "etp = 2" },
    { 6, 2, 3, "intermediate_size = 14336", "[parallel] etp = 3" },
  };
  for (guint j = 0; j < G_N_ELEMENTS (bad); j++)
    {
      ModelMesh m = ep_mesh (bad[j].dp, bad[j].ep, bad[j].etp);
      g_autoptr (GError) e = NULL;
      CU_ASSERT (!model_ep_check (a, &m, &e));
      assert_error (e, bad[j].key1, bad[j].key2);
    }
  ModelMesh m = ep_mesh (8, 2, 1);
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_ep_check (dense, &m, &e));
  assert_error (e, "[parallel] ep = 2", "no experts");
  ModelMesh ok = ep_mesh (8, 8, 1);
  CU_ASSERT (model_ep_check (a, &ok, NULL));
  ModelMesh staged = ep_mesh (4, 2, 2);
  staged.degree[MODEL_MESH_PP] = 2;
  CU_ASSERT (model_ep_check (a, &staged, NULL));
  ModelMesh one = ep_mesh (8, 1, 1);
  CU_ASSERT (model_ep_check (dense, &one, NULL));
}

/* Dropless, uniform routing, ep 1/2/4/8: the send buffer is 67 108 864 B, of which
 * (ep − 1)/ep leaves the rank (0, 33 554 432, 50 331 648, 58 720 256 B). Each local
 * expert gets ep·μ = 1024·ep rows (from ep source ranks), 8/ep experts per rank, 8192 rows
 * per rank whatever ep: no slowdown. fc1 (gate‖up) is m = 1024·ep, n = 2·14336 = 28672,
 * k = 4096, batch 8/ep; fc2 n = 4096, k = 14336. Under SP (tp 2) and cp 2 the router holds
 * 4096/(2·2) = 1024 tokens: μ = 256 — at 256 tokens with ep 1 an expert GEMM is 64 rows. */
static void
test_dispatch_uniform (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  const guint eps[] = { 1, 2, 4, 8 };
  const double remote[] = { 0, 33554432, 50331648, 58720256 };
  for (guint j = 0; j < G_N_ELEMENTS (eps); j++)
    {
      guint ep = eps[j];
      ModelEpParams p = mixtral_params (ep);
      ModelEpDispatch d;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
      CU_ASSERT_EQUAL (d.n_local_experts, 8 / ep);
      CU_ASSERT_EQUAL (d.tokens, 4096);
      CU_ASSERT_EQUAL (d.routed, 8192);
      CU_ASSERT_EQUAL (d.mean_load, 1024);
      CU_ASSERT_EQUAL (d.capacity, 0);
      CU_ASSERT_EQUAL (d.dropped, 0);
      STEPSIM_ASSERT_REL (d.a2a_bytes, 67108864.0, 0);
      STEPSIM_ASSERT_REL (d.a2a_remote_bytes, remote[j], 0);
      STEPSIM_ASSERT_REL (d.probs_a2a_bytes, 8192.0 * 2, 0);
      STEPSIM_ASSERT_REL (d.mean_rows, 1024.0 * ep, 1e-15);
      STEPSIM_ASSERT_REL (d.slowest_rows, 8192.0, 1e-15);
      STEPSIM_ASSERT_REL (d.slowdown, 1.0, 1e-15);
      HwKernelShape fc1 = model_ep_expert_gemm (a, 1, FALSE, d.mean_rows, d.n_local_experts);
      HwKernelShape fc2 = model_ep_expert_gemm (a, 1, TRUE, d.mean_rows, d.n_local_experts);
      CU_ASSERT (fc1.cls == HW_KERNEL_GEMM && fc1.m == 1024.0 * ep && fc1.n == 28672
                 && fc1.k == 4096 && fc1.batch == 8 / ep);
      CU_ASSERT (fc2.n == 4096 && fc2.k == 14336);
    }
  ModelEpParams p = mixtral_params (1);
  p.tp = 2;
  p.sp = TRUE;
  p.cp = 2;
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.tokens, 1024);
  CU_ASSERT_EQUAL (d.mean_load, 256);
  p = mixtral_params (1);
  p.seq_len = 256;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  HwKernelShape skinny = model_ep_expert_gemm (a, 1, FALSE, d.mean_rows, d.n_local_experts);
  CU_ASSERT_EQUAL (skinny.m, 64); /* 256·2/8 */
  CU_ASSERT_EQUAL (skinny.batch, 8);
  /* etp 2 halves the inner width */
  CU_ASSERT_EQUAL (model_ep_expert_gemm (a, 2, FALSE, 1, 1).n, 14336);
  CU_ASSERT_EQUAL (model_ep_expert_gemm (a, 2, TRUE, 1, 1).k, 7168);
}

/* Capacity factor 1.25: C = ceil(1.25 · 8192/8) = 1280 per expert per source rank.
 *   uniform: every expert 1024 ≤ 1280, nothing dropped; padded to capacity the send
 *     buffer is E·C = 10 240 rows, 10 240·8192 = 83 886 080 B.
 *   imbalance 2.0: the hot expert gets 2048 > 1280, 768 dropped; the 7 others share
 *     8192 − 2048 = 6144, 877.7 each, under C: kept 7424, send 7424·8192 = 60 817 408 B.
 *     ep 8 (one expert a rank): the hot rank runs 8·1280 = 10 240 rows, the mean rank
 *     8·7424/8 = 7424: slowdown 10 240/7424 = 1.3793. ep 2 (4 a rank): 2·1280 +
 *     3·2·6144/7 rows against 4·2·7424/8 = 7424.
 *   capacity 0.5: C = 512 < 1024, every expert drops 512: 4096 dropped uniform.
 * Dropless, imbalance 2.0: ep 8 the hot rank runs 8·2048 = 16 384 rows vs 8192, slowdown
 * 2 (the imbalance itself); ep 2: (2 + 3·6/7)/4 = 8/7; ep 1: 1 (a rank holds them all).
 * imbalance E/k = 4 (every token routes to the hot expert) is the bound. */
static void
test_capacity_and_imbalance (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelEpParams p = mixtral_params (8);
  p.drop = TRUE;
  p.capacity_factor = 1.25;
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.capacity, 1280);
  CU_ASSERT_EQUAL (d.dropped, 0);
  CU_ASSERT_EQUAL (d.send_rows, 8192);
  p.pad = TRUE;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.send_rows, 10240);
  STEPSIM_ASSERT_REL (d.a2a_bytes, 83886080.0, 0);
  STEPSIM_ASSERT_REL (d.slowest_rows, 10240.0, 0);
  p.pad = FALSE;
  p.imbalance = 2.0;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.hot_load, 2048);
  STEPSIM_ASSERT_REL (d.rest_load, 6144.0 / 7, 1e-15);
  STEPSIM_ASSERT_REL (d.dropped, 768.0, 1e-15);
  STEPSIM_ASSERT_REL (d.kept, 7424.0, 1e-15);
  STEPSIM_ASSERT_REL (d.a2a_bytes, 60817408.0, 1e-15);
  STEPSIM_ASSERT_REL (d.hot_rows, 10240.0, 1e-15);
  STEPSIM_ASSERT_REL (d.slowdown, 10240.0 / 7424, 1e-14);
  STEPSIM_ASSERT_REL (d.a2a_recv_max_bytes, 10240.0 * 8192, 1e-15);
  p.ep = 2;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  STEPSIM_ASSERT_REL (d.slowest_rows, 2 * 1280 + 3 * 2 * 6144.0 / 7, 1e-14);
  STEPSIM_ASSERT_REL (d.slowdown, (2 * 1280 + 3 * 2 * 6144.0 / 7) / 7424, 1e-14);
  p.imbalance = 1;
  p.capacity_factor = 0.5;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.capacity, 512);
  STEPSIM_ASSERT_REL (d.dropped, 4096.0, 1e-15);

  const guint eps[] = { 8, 2, 1 };
  const double slow[] = { 2.0, 8.0 / 7, 1.0 };
  for (guint j = 0; j < G_N_ELEMENTS (eps); j++)
    {
      ModelEpParams q = mixtral_params (eps[j]);
      q.imbalance = 2.0;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &q, &d, NULL));
      CU_ASSERT_EQUAL (d.dropped, 0);
      STEPSIM_ASSERT_REL (d.slowdown, slow[j], 1e-14);
    }
  ModelEpParams q = mixtral_params (8);
  q.imbalance = 4.0;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &q, &d, NULL));
  STEPSIM_ASSERT_REL (d.hot_load, 4096.0, 0);
}

/* [moe] expert_load (model_ep_expert_shares). A histogram that states load_imbalance 2's
 * model — expert 0 at 2μ, the 7 others at (8 − 2)/7 μ each, relative loads 14 and 6 ×
 * seven (sum 56: 14/56 = 2/8) — gives its dispatch exactly, dropless and at capacity 1.25.
 * Two hot experts: loads 3, 3, 1, 1, 1, 1, 1, 1 (sum 12) at ep 4 (two experts a rank):
 * rank 0 holds both hot experts, 8192·(3 + 3)/12 = 4096 copies from each of 4 source
 * ranks, 16 384 rows, the hot one 8192 and the rest (L − 1 = 1) 8192; the other ranks
 * 8192·2/12 · 4 = 5461.33 rows each (the least loaded); mean 8192 · 2 · 4 / 8 = 8192 a rank,
 * slowdown 2. The same loads at ep 8: the hot rank is either hot expert alone, 8192·3/12 ·
 * 8 = 16 384 rows, the least 8192/12 · 8 = 5461.33. zipf:0 is uniform; zipf:S's shares are
 * (q + 1)^−S / Σ over some order of the experts. */
static void
test_expert_load (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  for (guint drop = 0; drop < 2; drop++)
    {
      ModelEpParams r = mixtral_params (8), h = mixtral_params (8);
      r.drop = h.drop = drop;
      r.capacity_factor = h.capacity_factor = 1.25;
      r.imbalance = 2;
      h.expert_load = "14, 6, 6, 6, 6, 6, 6, 6";
      ModelEpDispatch dr, dh;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &r, &dr, NULL));
      CU_ASSERT_FATAL (model_ep_dispatch (a, &h, &dh, NULL));
      STEPSIM_ASSERT_REL (dh.hot_rows, dr.hot_rows, 1e-12);
      STEPSIM_ASSERT_REL (dh.slowest_rows, dr.slowest_rows, 1e-12);
      STEPSIM_ASSERT_REL (dh.kept, dr.kept, 1e-12);
      STEPSIM_ASSERT_REL (dh.dropped + 1, dr.dropped + 1, 1e-12);
      STEPSIM_ASSERT_REL (dh.slowdown, dr.slowdown, 1e-12);
      STEPSIM_ASSERT_REL (dh.least_rows, dr.least_rows, 1e-12);
    }
  ModelEpParams p = mixtral_params (4);
  p.expert_load = "3, 3, 1, 1, 1, 1, 1, 1";
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  STEPSIM_ASSERT_REL (d.slowest_rows, 16384.0, 1e-12);
  STEPSIM_ASSERT_REL (d.hot_rows, 8192.0, 1e-12);
  STEPSIM_ASSERT_REL (d.rest_rows, 8192.0, 1e-12);
  STEPSIM_ASSERT_REL (d.least_rows, 8192.0 * 2 / 12 * 4, 1e-12);
  STEPSIM_ASSERT_REL (d.mean_rows * d.n_local_experts, 8192.0, 1e-12);
  STEPSIM_ASSERT_REL (d.slowdown, 2.0, 1e-12);
  p.ep = 8;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  STEPSIM_ASSERT_REL (d.slowest_rows, 16384.0, 1e-12);
  STEPSIM_ASSERT_REL (d.least_rows, 8192.0 / 12 * 8, 1e-12);
  /* loads near DBL_MAX (their sum overflows) are the shares 1/2, 1/2, 0, … */
  double big[8];
  CU_ASSERT_FATAL (model_ep_expert_shares ("1e308, 1e308, 0, 0, 0, 0, 0, 0", 8, 2, big, NULL));
  STEPSIM_ASSERT_REL (big[0], 0.5, 1e-15);
  STEPSIM_ASSERT_REL (big[1], 0.5, 1e-15);
  CU_ASSERT_EQUAL (big[2], 0);
  /* a trailing comma is no ninth value */
  ModelEpParams comma = mixtral_params (8);
  comma.expert_load = "3, 3, 1, 1, 1, 1, 1, 1,";
  CU_ASSERT (model_ep_dispatch (a, &comma, &d, NULL));
  /* zipf */
  double f[8];
  CU_ASSERT_FATAL (model_ep_expert_shares ("zipf:0", 8, 2, f, NULL));
  for (guint e = 0; e < 8; e++)
    STEPSIM_ASSERT_REL (f[e], 1.0 / 8, 1e-15);
  CU_ASSERT_FATAL (model_ep_expert_shares (" zipf:1.2 ", 8, 2, f, NULL));
  double sorted[8], sum = 0;
  memcpy (sorted, f, sizeof f);
  for (guint q = 0; q < 8; q++)
    sum += pow (q + 1.0, -1.2);
  for (guint i = 0; i < 8; i++) /* selection sort, descending */
    for (guint j = i + 1; j < 8; j++)
      if (sorted[j] > sorted[i])
        {
          double t = sorted[i];
          sorted[i] = sorted[j], sorted[j] = t;
        }
  for (guint q = 0; q < 8; q++)
    STEPSIM_ASSERT_REL (sorted[q], pow (q + 1.0, -1.2) / sum, 1e-14);
  /* the popular ones are not all the first experts (Megatron's rank 0) */
  CU_ASSERT (!(f[0] >= f[1] && f[1] >= f[2] && f[2] >= f[3]));
  /* bad specs: count, values, all zero, a share above 1/k, zipf's exponent */
  const char *const bad[][2] = {
    { "1, 2", "2 values" }, { "1, 1, 1, 1, 1, 1, 1, x", "value 8 'x'" },
    { "1, 1, 1, 1, 1, 1, 1, -1", "value 8" }, { "0, 0, 0, 0, 0, 0, 0, 0", "every load is 0" },
    { "9, 1, 1, 1, 1, 1, 1, 1", "above 1 / num_experts_per_tok" },
    { "zipf:", "exponent" }, { "zipf:-1", "exponent" }, { "zipf:nan", "exponent" },
    { "zipf:4", "above 1 / num_experts_per_tok" }, { "1, 1, 1, 1, 1, 1, 1, inf", "value 8" },
    { "8 3 5 1 1 1 1 1", "separated by commas" }, { "uniform", "not zipf:S nor a number" },
  };
  for (guint j = 0; j < G_N_ELEMENTS (bad); j++)
    {
      ModelEpParams q = mixtral_params (8);
      q.expert_load = bad[j][0];
      g_autoptr (GError) e = NULL;
      CU_ASSERT (!model_ep_dispatch (a, &q, &d, &e));
      assert_error (e, "[moe] expert_load", bad[j][1]);
    }
}

/* A skewed router slows the all-to-alls: all_to_all_single ends when its most loaded
 * receiver has its rows. Mixtral ep 8, load_imbalance 2: the hot expert's rank receives
 * 2μ = 2048 copies from each of 8 ranks, 16 384 rows against a balanced rank's 8192, so the
 * dispatch's and the combine's all-to-alls are timed at 16 384·8192 = 134 217 728 B (2×
 * the uniform 67 108 864) and the probabilities' at 2 × 16 384 B, forward and backward.
 * The histogram 3, 3, 1 × 6 at ep 4 (two experts a rank): rank 0 receives 4 ranks ×
 * 8192·6/12 = 16 384 rows, 2× again. Balanced routing (r = 1) keeps 67 108 864 B. */
static double sum_kind (GArray *c, HwCollectiveKind kind, ModelMeshExpertDim dim);

static void
test_skewed_comms (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  struct { guint ep; double r; const char *load; double factor; } cases[] = {
    { 8, 1, NULL, 1 }, { 8, 2, NULL, 2 }, { 4, 1, "3, 3, 1, 1, 1, 1, 1, 1", 2 },
  };
  for (guint j = 0; j < G_N_ELEMENTS (cases); j++)
    {
      ModelEpParams p = mixtral_params (cases[j].ep);
      p.imbalance = cases[j].r;
      p.expert_load = cases[j].load;
      ModelEpDispatch d;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
      for (guint pass = 0; pass < 2; pass++)
        {
          g_autoptr (GArray) c = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
          model_ep_layer_comms (a, &p, &d, pass == 0 ? MODEL_EP_FORWARD : MODEL_EP_BACKWARD, c);
          /* tokens twice (dispatch, combine) and the probabilities once a pass */
          STEPSIM_ASSERT_REL (sum_kind (c, HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP),
                              cases[j].factor * (2 * 67108864.0 + 16384), 1e-12);
        }
    }
  /* under etp the hot rank's etp group gathers its rows, not the mean rank's: ep 4 × etp 2,
   * r = 2: rank 0 holds experts 0 and 1, 8 sources × (2048 + 6144/7) = 23 405.7 rows against
   * the mean 16 384; the forward's etp all-gathers (tokens h·e and probabilities 2 B a row)
   * move those rows */
  ModelEpParams q = mixtral_params (4);
  q.etp = 2;
  q.imbalance = 2;
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &q, &d, NULL));
  STEPSIM_ASSERT_REL (d.slowest_rows, 8 * (2048 + 6144.0 / 7), 1e-12);
  g_autoptr (GArray) c = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
  model_ep_layer_comms (a, &q, &d, MODEL_EP_FORWARD, c);
  STEPSIM_ASSERT_REL (sum_kind (c, HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_TP),
                      d.slowest_rows * (4096 * 2 + 2), 1e-12);
}

/* Bad input: capacity ≤ 0 or NaN, padding without capacity, imbalance below 1 or above
 * E/k = 4, a sequence cp·tp does not divide under SP, E not a multiple of ep, a dense
 * model: each names its group and key. */
static void
test_dispatch_errors (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  g_autoptr (ModelArch) dense = shipped ("llama-2-7b");
  ModelEpDispatch d;
  struct { double c; gboolean drop, pad; double r; guint ep; guint64 s; const char *k1, *k2; } bad[] = {
    { 0, TRUE, FALSE, 1, 8, 4096, "[moe] capacity_factor", NULL },
    { -1, TRUE, FALSE, 1, 8, 4096, "[moe] capacity_factor", NULL },
    { NAN, TRUE, FALSE, 1, 8, 4096, "[moe] capacity_factor", NULL },
    { 1, FALSE, TRUE, 1, 8, 4096, "[moe] pad_to_capacity", NULL },
    { 1, FALSE, FALSE, 0.5, 8, 4096, "[moe] load_imbalance", NULL },
    { 1, FALSE, FALSE, 4.5, 8, 4096, "[moe] load_imbalance", "4" },
    { 1, FALSE, FALSE, 1, 3, 4096, "[parallel] ep = 3", "num_local_experts" },
    { 1, FALSE, FALSE, 1, 8, 4094, "[training] seq_len = 4094", NULL },
  };
  for (guint j = 0; j < G_N_ELEMENTS (bad); j++)
    {
      ModelEpParams p = mixtral_params (bad[j].ep);
      p.capacity_factor = bad[j].c;
      p.drop = bad[j].drop;
      p.pad = bad[j].pad;
      p.imbalance = bad[j].r;
      p.seq_len = bad[j].s;
      p.tp = 4;
      p.sp = TRUE;
      g_autoptr (GError) e = NULL;
      CU_ASSERT (!model_ep_dispatch (a, &p, &d, &e));
      assert_error (e, bad[j].k1, bad[j].k2);
    }
  ModelEpParams p = mixtral_params (1);
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_ep_dispatch (dense, &p, &d, &e));
  assert_error (e, "[parallel] ep", "no experts");
}

static double
sum_kind (GArray *c, HwCollectiveKind kind, ModelMeshExpertDim dim)
{
  double s = 0;
  for (guint j = 0; j < c->len; j++)
    {
      const ModelEpComm *x = &g_array_index (c, ModelEpComm, j);
      if (x->kind == kind && x->dim == dim)
        s += x->bytes;
    }
  return s;
}

/* ep 8, dropless: forward = the counts' all-gather over the 8 ranks (8 int64 each,
 * 8·8·8 = 512 B gathered), tokens 67 108 864 B and probs 8192·2 = 16 384 B all-to-all,
 * the combine's 67 108 864 B all-to-all: 4; backward = the three all-to-alls' conjugates.
 * ep 4 × etp 2: each expert's rows come from 8 ranks: 8·1024 = 8192 a local expert, 2 a
 * rank, 16 384 rows gathered over etp: all-gather 16 384·8192 = 134 217 728 B forward (and
 * the probs' 32 768 B), the combine's reduce-scatter the same; 7 forward, 6 backward. The
 * counts' all-gather runs over the tp_ep group (ep·etp = 8 ranks, 8·8·8 = 512 B). Under
 * --moe-router-dtype fp32 (prob_bytes 4) the combine's reduce-scatter moves fp32
 * (combine_preprocess casts to probs.dtype): 16 384·4096·4 = 268 435 456 B, and so does its
 * backward all-gather.
 * Padded to capacity the counts are static: no all-gather. ep = etp = 1: none. */
static void
test_comms (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelEpParams p = mixtral_params (8);
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  g_autoptr (GArray) f = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
  model_ep_layer_comms (a, &p, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_BACKWARD, b);
  CU_ASSERT_EQUAL_FATAL (f->len, 4);
  CU_ASSERT_EQUAL (b->len, 3);
  const ModelEpComm *c0 = &g_array_index (f, ModelEpComm, 0);
  CU_ASSERT (c0->kind == HW_COLLECTIVE_ALL_GATHER && c0->bytes == 512 && c0->ranks == 8
             && c0->dim == MODEL_MESH_EXPERT_TP_EP);
  STEPSIM_ASSERT_REL (sum_kind (f, HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP),
                      2 * 67108864.0 + 16384, 0);
  STEPSIM_ASSERT_REL (sum_kind (b, HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP),
                      2 * 67108864.0 + 16384, 0);

  p.ep = 4;
  p.etp = 2;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.group, 8);
  STEPSIM_ASSERT_REL (d.mean_rows, 8192.0, 0);
  g_array_set_size (f, 0);
  g_array_set_size (b, 0);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_BACKWARD, b);
  CU_ASSERT_EQUAL (f->len, 7);
  CU_ASSERT_EQUAL (b->len, 6);
  STEPSIM_ASSERT_REL (sum_kind (f, HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_TP),
                      134217728.0 + 32768, 0);
  STEPSIM_ASSERT_REL (sum_kind (f, HW_COLLECTIVE_REDUCE_SCATTER, MODEL_MESH_EXPERT_TP),
                      134217728.0, 0);
  STEPSIM_ASSERT_REL (sum_kind (b, HW_COLLECTIVE_REDUCE_SCATTER, MODEL_MESH_EXPERT_TP),
                      134217728.0 + 32768, 0);
  c0 = &g_array_index (f, ModelEpComm, 0);
  CU_ASSERT (c0->kind == HW_COLLECTIVE_ALL_GATHER && c0->bytes == 512 && c0->ranks == 8
             && c0->dim == MODEL_MESH_EXPERT_TP_EP);
  p.prob_bytes = 4;
  g_array_set_size (f, 0);
  g_array_set_size (b, 0);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_BACKWARD, b);
  STEPSIM_ASSERT_REL (sum_kind (f, HW_COLLECTIVE_REDUCE_SCATTER, MODEL_MESH_EXPERT_TP),
                      268435456.0, 0);
  STEPSIM_ASSERT_REL (sum_kind (b, HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_TP),
                      268435456.0, 0);
  p.prob_bytes = 2;

  p.etp = 1;
  p.drop = p.pad = TRUE;
  p.capacity_factor = 1.25;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  g_array_set_size (f, 0);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_FORWARD, f);
  CU_ASSERT_EQUAL (f->len, 3);
  CU_ASSERT_EQUAL (sum_kind (f, HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_EP), 0);

  ModelEpParams one = mixtral_params (1);
  CU_ASSERT_FATAL (model_ep_dispatch (a, &one, &d, NULL));
  g_array_set_size (f, 0);
  model_ep_layer_comms (a, &one, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &one, &d, MODEL_EP_BACKWARD, f);
  CU_ASSERT_EQUAL (f->len, 0);
}

/* One MoE layer at b·s = 4096, bf16, dropless uniform, m = N = 8192 rows (any ep):
 * Megatron grouped: router input 2·4096·4096 = 33 554 432, scores 2·4096·8 = 65 536,
 * fc1 input 2·8192·4096 = 67 108 864, fc1 output + fc2 input 2·8192·3·14336 = 704 643 072,
 * weights 2·8192 = 16 384.
 * HF eager: router input 33 554 432; fp32 softmax 4·4096·8 = 131 072, top-k weights and
 * their sum 4·4096·2 + 4·4096 = 49 152; rows 67 108 864; w1, silu, w3, product
 * 4·2·8192·14336 = 939 524 096; expert output 67 108 864; weights 16 384.
 * So HF keeps e·m·(i + h) = 2·8192·18432 = 301 989 888 B more in the experts.
 * Transient, Megatron ep 8 (one expert a rank, etp 1: the all-to-all output is fc1's saved
 * input): dispatch 67 108 864 (the send buffer alone), combine fc2 output + all-to-all
 * output 2·67 108 864 = 134 217 728. ep 1 (8 experts, sorted): send buffer + all-to-all
 * output 134 217 728 as well. HF: the accumulator 33 554 432 + one expert's weighted
 * output 2·1024·4096 = 8 388 608.
 * Imbalance 2.0 at ep 8: the hot rank runs 16 384 rows: its fc1 input doubles. */
static void
test_activations (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelEpParams p = mixtral_params (8);
  ModelEpDispatch d;
  ModelEpActs mg, hf;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  model_ep_acts_megatron (a, &p, &d, &mg);
  CU_ASSERT_EQUAL (mg.router_in, 33554432);
  CU_ASSERT_EQUAL (mg.router_probs, 65536);
  CU_ASSERT_EQUAL (mg.expert_in, 67108864);
  CU_ASSERT_EQUAL (mg.expert_inner, 704643072);
  CU_ASSERT_EQUAL (mg.expert_out, 0);
  CU_ASSERT_EQUAL (mg.weights, 16384);
  CU_ASSERT_EQUAL (mg.saved, 33554432.0 + 65536 + 67108864 + 704643072 + 16384);
  CU_ASSERT_EQUAL (mg.transient, 134217728);

  ModelEpParams p1 = mixtral_params (1);
  ModelEpActs mg1;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p1, &d, NULL));
  model_ep_acts_megatron (a, &p1, &d, &mg1);
  CU_ASSERT_EQUAL (mg1.saved, mg.saved);
  CU_ASSERT_EQUAL (mg1.transient, 134217728);

  model_ep_acts_hf_eager (a, &p1, &hf);
  CU_ASSERT_EQUAL (hf.router_in, 33554432);
  CU_ASSERT_EQUAL (hf.router_probs, 131072 + 49152);
  CU_ASSERT_EQUAL (hf.expert_in, 67108864);
  CU_ASSERT_EQUAL (hf.expert_inner, 939524096);
  CU_ASSERT_EQUAL (hf.expert_out, 67108864);
  CU_ASSERT_EQUAL (hf.weights, 16384);
  CU_ASSERT_EQUAL ((hf.expert_in + hf.expert_inner + hf.expert_out)
                     - (mg1.expert_in + mg1.expert_inner), 301989888);
  CU_ASSERT_EQUAL (hf.transient, 33554432 + 8388608);

  p.imbalance = 2.0;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  model_ep_acts_megatron (a, &p, &d, &mg);
  CU_ASSERT_EQUAL (mg.expert_in, 2 * 67108864.0);
}

/* The all-gather dispatcher (token_dispatcher.py MoEAllGatherTokenDispatcher) at ep 8,
 * b·s = 4096 tokens a rank, bf16: every rank gathers the tp_ep group's G = ep·etp·T =
 * 8·4096 = 32 768 tokens. Forward, all over tp_ep (8 ranks): the routing map G·E·1 B =
 * 262 144 (bool), the probabilities G·E·2 = 524 288, the hidden states G·h·e = 32 768 ·
 * 4096 · 2 = 268 435 456 (of which (8 − 1)/8 = 234 881 024 B arrive from the 7 others),
 * the combine's reduce-scatter 268 435 456 (input, in the probabilities' dtype); backward
 * the combine's all-gather 268 435 456 and the reduce-scatters of the probabilities
 * (524 288) and hidden states (268 435 456). No all-to-all, no count all-gather. The
 * volume depends on G alone: a skewed router (r = 2), capacity padding or ep 4 × etp 2
 * (the same 8-rank tp_ep group) leave every byte as it is, while the hot rank's rows
 * double under r = 2. fp32 probabilities (prob_bytes 4): the combine's reduce-scatter and
 * its all-gather move 536 870 912 B, the probabilities' gather 1 048 576. ep = etp = 1:
 * nothing (token_dispatch skips its gathers on one rank). */
static void
test_allgather_comms (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelEpParams p = mixtral_params (8);
  p.dispatcher = MODEL_EP_DISPATCHER_ALLGATHER;
  ModelEpDispatch d;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  CU_ASSERT_EQUAL (d.gathered_tokens, 32768);
  CU_ASSERT_EQUAL (d.ag_bytes, 268435456);
  static const struct
  {
    HwCollectiveKind kind;
    double bytes;
  } fwd[] = { { HW_COLLECTIVE_ALL_GATHER, 262144 },
              { HW_COLLECTIVE_ALL_GATHER, 524288 },
              { HW_COLLECTIVE_ALL_GATHER, 268435456 },
              { HW_COLLECTIVE_REDUCE_SCATTER, 268435456 } },
    bwd[] = { { HW_COLLECTIVE_ALL_GATHER, 268435456 },
              { HW_COLLECTIVE_REDUCE_SCATTER, 524288 },
              { HW_COLLECTIVE_REDUCE_SCATTER, 268435456 } };
  ModelEpParams variants[4] = { p, p, p, p };
  variants[1].imbalance = 2;
  variants[2].drop = variants[2].pad = TRUE, variants[2].capacity_factor = 1.25;
  variants[3].ep = 4, variants[3].etp = 2;
  for (guint v = 0; v < G_N_ELEMENTS (variants); v++)
    {
      ModelEpDispatch dv;
      CU_ASSERT_FATAL (model_ep_dispatch (a, &variants[v], &dv, NULL));
      g_autoptr (GArray) f = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
      g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
      model_ep_layer_comms (a, &variants[v], &dv, MODEL_EP_FORWARD, f);
      model_ep_layer_comms (a, &variants[v], &dv, MODEL_EP_BACKWARD, b);
      CU_ASSERT_EQUAL_FATAL (f->len, G_N_ELEMENTS (fwd));
      CU_ASSERT_EQUAL_FATAL (b->len, G_N_ELEMENTS (bwd));
      for (guint j = 0; j < f->len + b->len; j++)
        {
          gboolean back = j >= f->len;
          const ModelEpComm *c = &g_array_index (back ? b : f, ModelEpComm,
                                                 back ? j - f->len : j);
          CU_ASSERT (c->kind == (back ? bwd[j - f->len] : fwd[j]).kind);
          CU_ASSERT_EQUAL (c->bytes, (back ? bwd[j - f->len] : fwd[j]).bytes);
          CU_ASSERT (c->dim == MODEL_MESH_EXPERT_TP_EP && c->ranks == 8);
        }
      if (v == 1)
        STEPSIM_ASSERT_REL (dv.slowest_rows, 2 * d.slowest_rows, 1e-12);
    }

  p.prob_bytes = 4;
  g_autoptr (GArray) f = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
  model_ep_layer_comms (a, &p, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &p, &d, MODEL_EP_BACKWARD, b);
  CU_ASSERT_EQUAL (sum_kind (f, HW_COLLECTIVE_REDUCE_SCATTER, MODEL_MESH_EXPERT_TP_EP),
                   536870912);
  CU_ASSERT_EQUAL (g_array_index (b, ModelEpComm, 0).bytes, 536870912);
  CU_ASSERT_EQUAL (g_array_index (f, ModelEpComm, 1).bytes, 1048576);

  ModelEpParams one = mixtral_params (1);
  one.dispatcher = MODEL_EP_DISPATCHER_ALLGATHER;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &one, &d, NULL));
  g_array_set_size (f, 0);
  model_ep_layer_comms (a, &one, &d, MODEL_EP_FORWARD, f);
  model_ep_layer_comms (a, &one, &d, MODEL_EP_BACKWARD, f);
  CU_ASSERT_EQUAL (f->len, 0);
}

/* The all-gather dispatcher's memory, Mixtral ep 8, 4096 tokens a rank, bf16, N = 8192
 * rows, G = 32 768 gathered tokens: saved exactly as under all-to-all (the gathers,
 * index_select and scatter_add keep no activation), the transients of the gathered tokens:
 * forward dispatch gathered hidden e·G·h = 268 435 456 + map and probs G·E·(1 + 2) =
 * 786 432 (the permuted rows are fc1's saved input): 269 221 888; combine fc2 output
 * e·N·h = 67 108 864 + unpermuted e·G·h = 268 435 456 = 335 544 320, the larger.
 * Backward: the output gradient's all-gather e·G·h beside the unpermute's backward e·N·h,
 * and fc1's input gradient e·N·h beside the permute's backward e·G·h: 335 544 320 both
 * (all-to-all: forward 134 217 728, test_activations). fp32 probabilities (prob_bytes 4):
 * the combine casts the unpermuted tensor, 4·G·h = 536 870 912 beside its bf16 source
 * 268 435 456: 805 306 368 forward, and the gradient's fp32 all-gather beside its bf16 cast
 * the same backward. */
static void
test_allgather_activations (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelEpParams p = mixtral_params (8);
  ModelEpDispatch d;
  ModelEpActs a2a, ag;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  model_ep_acts_megatron (a, &p, &d, &a2a);
  p.dispatcher = MODEL_EP_DISPATCHER_ALLGATHER;
  CU_ASSERT_FATAL (model_ep_dispatch (a, &p, &d, NULL));
  model_ep_acts_megatron (a, &p, &d, &ag);
  CU_ASSERT_EQUAL (ag.saved, a2a.saved);
  CU_ASSERT_EQUAL (ag.expert_in, 67108864);
  CU_ASSERT_EQUAL (a2a.transient, 134217728);
  CU_ASSERT_EQUAL (ag.transient, 335544320);
  CU_ASSERT_EQUAL (ag.transient_bwd, 335544320);
  CU_ASSERT_EQUAL (a2a.transient_bwd, 0);
  p.prob_bytes = 4;
  model_ep_acts_megatron (a, &p, &d, &ag);
  CU_ASSERT_EQUAL (ag.transient, 805306368);
  CU_ASSERT_EQUAL (ag.transient_bwd, 805306368);
}

/* [moe] dispatcher's values: Megatron's --moe-token-dispatcher-type names; flex refused as
 * not modelled, anything else listed. */
static void
test_dispatcher_names (void)
{
  ModelEpDispatcher d = MODEL_EP_DISPATCHER_ALLTOALL;
  CU_ASSERT (model_ep_dispatcher_from_string ("allgather", &d, NULL)
             && d == MODEL_EP_DISPATCHER_ALLGATHER);
  CU_ASSERT (model_ep_dispatcher_from_string ("alltoall", &d, NULL)
             && d == MODEL_EP_DISPATCHER_ALLTOALL);
  CU_ASSERT_STRING_EQUAL (model_ep_dispatcher_name (MODEL_EP_DISPATCHER_ALLGATHER), "allgather");
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_ep_dispatcher_from_string ("flex", &d, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "not modelled") != NULL);
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_FALSE (model_ep_dispatcher_from_string ("alltoall_seq", &d, &e2));
  CU_ASSERT (e2 != NULL && strstr (e2->message, "alltoall, allgather") != NULL);
  CU_ASSERT_EQUAL (d, MODEL_EP_DISPATCHER_ALLTOALL);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "expert_load: histograms and Zipf shares, the slowest and least loaded EP rank",
      test_expert_load },
    { "a skewed router's all-to-alls are timed at the hot rank's receive", test_skewed_comms },
    { "Mixtral expert parameters per rank over ep and etp", test_param_split },
    { "expert degree checks (Megatron's carving)", test_checks },
    { "uniform dispatch: all-to-all bytes, GEMM shapes", test_dispatch_uniform },
    { "capacity, dropped tokens, imbalance slowdown", test_capacity_and_imbalance },
    { "dispatch bad input names its key", test_dispatch_errors },
    { "dispatch and combine collectives", test_comms },
    { "MoE activations: Megatron grouped vs HF eager", test_activations },
    { "all-gather dispatcher: tp_ep gathers and reduce-scatters, bytes fixed by G",
      test_allgather_comms },
    { "all-gather dispatcher: saved as all-to-all, transients of the gathered tokens",
      test_allgather_activations },
    { "[moe] dispatcher names, flex refused", test_dispatcher_names },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/expert_parallel", tests);
}
