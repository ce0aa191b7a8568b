/* tests/unit/models/test_context_parallel.c — context parallelism: the checks, each rank's
 * attention kernels under causal load balancing (TransformerEngine AttnFuncWithCPAndKVP2P's
 * ring sections, the all-gather chunks, Ulysses' head split), the cp collectives, the
 * attention's workspace, the ring's overlap rule and the per-rank saved activations.
 *
 * The worked case throughout is Llama 3.1 8B (shipped config: h 4096, a 32, k 8, d 128,
 * i 14336) at s = 131072 = 2^17 tokens, b = 1, bf16 (e = 2), cp = 8. Then:
 *   balanced tile c = s/(2·cp) = 8192 = 2^13; one tile-unit 4·b·c²·a·d = 2^2·2^26·2^5·2^7
 *   = 2^40 FLOP; the causal total 2·b·s²·a·d = 2^47, per rank 2^47/8 = 2^44;
 *   KV chunk 2·b·(s/cp)·k·d·e = 2·2^14·2^3·2^7·2 = 2^26 B (64 MiB);
 *   local q (and output) b·(s/cp)·a·d·e = 2^14·2^5·2^7·2 = 2^27 B (128 MiB).
 * Every number is a power of two or a small multiple, so equalities are exact. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/context_parallel.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

#include "tests/unit/models/cost_fixture.h"

#define S 131072u
#define UNIT 1099511627776.0 /* 2^40 */
#define KV 67108864.0        /* 2^26 */
#define QL 134217728.0       /* 2^27 */

static ModelMesh
cp_mesh (guint cp, guint tp)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_CP] = cp;
  m.degree[MODEL_MESH_TP] = tp;
  return m;
}

static ModelCpParams
llama8b (ModelCpVariant variant, guint cp)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  ModelMesh m = cp_mesh (cp, 1);
  ModelCpParams p;
  model_cp_params_init (&p, arch, &m, variant, 1, S, 2.0);
  return p;
}

static GArray *
steps_of (const ModelCpParams *p, guint rank, ModelCpPass pass)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (ModelCpStep));
  model_cp_attention_steps (p, rank, pass, a);
  return a;
}

#define STEP(a, i) (&g_array_index ((a), ModelCpStep, (i)))

static void
test_variant_names (void)
{
  for (guint v = 0; v < MODEL_CP_N_VARIANTS; v++)
    {
      ModelCpVariant out;
      CU_ASSERT (model_cp_variant_from_string (model_cp_variant_name (v), &out, NULL));
      CU_ASSERT_EQUAL (out, v);
    }
  ModelCpVariant out;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_cp_variant_from_string ("p2p", &out, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "ulysses") != NULL);
}

/* TE's ring sections for rank r = 3 of 8 (context_parallel.h):
 *   forward step i uses the K/V of rank (3 − i) mod 8: 3 2 1 0 7 6 5 4.
 *   step 0 "diagonal": q = kv = 2c = 16384, causal, 1 full + 2 diagonal tiles: 2 units
 *     executed, counted for the kernel model as the full square 4·16384²·32·128 = 2^42;
 *   steps 1–3 (source < 3) "lower-triangle": q 2c = 16384 against kv c = 8192, 2 full;
 *   steps 4–7 (source > 3) "upper-triangle": q c = 8192 against kv 2c = 16384, 2 full.
 *   Backward: sources (3 + 1 + i) mod 8 = 4 5 6 7 0 1 2 3 — upper ×4, lower ×3, diagonal last.
 * Every step executes 2^41 FLOP, so every rank 8·2^41 = 2^44 = the causal total / cp. Over
 * the 8 ranks the tiles cover the causal square once: Σ full = 16·15/2 = 120, Σ diagonal 16. */
static void
test_ring_steps (void)
{
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  CU_ASSERT (p.load_balance);
  g_autoptr (GArray) f = steps_of (&p, 3, MODEL_CP_FORWARD);
  g_autoptr (GArray) b = steps_of (&p, 3, MODEL_CP_BACKWARD);
  CU_ASSERT_EQUAL_FATAL (f->len, 8);
  CU_ASSERT_EQUAL_FATAL (b->len, 8);
  const guint fsrc[] = { 3, 2, 1, 0, 7, 6, 5, 4 }, bsrc[] = { 4, 5, 6, 7, 0, 1, 2, 3 };
  for (guint i = 0; i < 8; i++)
    {
      const ModelCpStep *s = STEP (f, i);
      CU_ASSERT_EQUAL (s->kv_source, fsrc[i]);
      CU_ASSERT_EQUAL (STEP (b, i)->kv_source, bsrc[i]);
      CU_ASSERT_EQUAL (s->tile, 8192);
      CU_ASSERT_EQUAL (s->heads, 32);
      CU_ASSERT_EQUAL (s->exec_flops, 2 * UNIT);
      CU_ASSERT_EQUAL (STEP (b, i)->exec_flops, 2 * UNIT);
      if (i == 0)
        {
          CU_ASSERT (s->causal && s->q_len == 16384 && s->kv_len == 16384);
          CU_ASSERT (s->n_full == 1 && s->n_diagonal == 2);
          CU_ASSERT_EQUAL (s->flops, 4.0 * 16384 * 16384 * 32 * 128);
        }
      else if (i <= 3)
        {
          CU_ASSERT (!s->causal && s->q_len == 16384 && s->kv_len == 8192 && s->n_full == 2
                     && s->flops == s->exec_flops);
        }
      else
        {
          CU_ASSERT (!s->causal && s->q_len == 8192 && s->kv_len == 16384 && s->n_full == 2);
        }
    }
  CU_ASSERT (STEP (b, 7)->causal && STEP (b, 7)->n_diagonal == 2);
  CU_ASSERT (STEP (b, 0)->q_len == 8192 && STEP (b, 6)->q_len == 16384);

  guint full = 0, diag = 0;
  for (guint r = 0; r < 8; r++)
    {
      CU_ASSERT_EQUAL (model_cp_attention_flops (&p, r), 16 * UNIT); /* 2^44 */
      g_autoptr (GArray) a = steps_of (&p, r, MODEL_CP_FORWARD);
      for (guint i = 0; i < a->len; i++)
        full += STEP (a, i)->n_full, diag += STEP (a, i)->n_diagonal;
    }
  CU_ASSERT_EQUAL (full, 120);
  CU_ASSERT_EQUAL (diag, 16);
  CU_ASSERT_EQUAL (16 * UNIT, 2.0 * S * S * 32 * 128 / 8);
}

/* Without load balancing (contiguous s/cp = 16384-token chunks; PyTorch
 * enable_load_balance = False): rank r meets r full tiles and one diagonal of 16384² —
 * tile-unit 4·16384²·32·128 = 2^42 —, (r + ½)·2^42 FLOP; the steps with source > r are
 * empty (_CausalBehavior.SKIP). Rank 7 does 7.5·2^42, rank 0 0.5·2^42, the sum the causal
 * total 32·2^42 = 2^47. The balanced layout gives every rank 2^44 = 4·2^42, so the slowest
 * rank's attention shrinks from 7.5 to 4 (×1.875). */
static void
test_ring_unbalanced (void)
{
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  p.load_balance = FALSE;
  const double u = 4 * UNIT;
  double sum = 0;
  for (guint r = 0; r < 8; r++)
    {
      double f = model_cp_attention_flops (&p, r);
      CU_ASSERT_EQUAL (f, (r + 0.5) * u);
      sum += f;
    }
  CU_ASSERT_EQUAL (sum, 2.0 * S * S * 32 * 128);
  g_autoptr (GArray) a = steps_of (&p, 2, MODEL_CP_FORWARD);
  CU_ASSERT_EQUAL (STEP (a, 3)->kv_source, 7);
  CU_ASSERT_EQUAL (STEP (a, 3)->exec_flops, 0);
}

/* All-gather (Llama 3's CP): rank r's chunk r meets r full tiles and the diagonal (keys
 * [0, (r+1)·c)), chunk 15 − r meets 15 − r full and the diagonal: (r + ½ + 15 − r + ½) = 16
 * units = 2^44 on every rank, the ring's total. The kernel-model count of a causal chunk is
 * twice what it executes ((2r + 1)·2^40 for the first). Non-causal (BERT-like): each chunk
 * against all 16 tiles, 32 units. Ulysses: one kernel over the whole 131072 tokens on
 * 32/8 = 4 query heads (k 8/8 = 1): 4·s²·4·128/2 = 2^44 executed again. */
static void
test_all_gather_and_ulysses_work (void)
{
  ModelCpParams p = llama8b (MODEL_CP_ALL_GATHER, 8);
  for (guint r = 0; r < 8; r++)
    {
      g_autoptr (GArray) a = steps_of (&p, r, MODEL_CP_FORWARD);
      CU_ASSERT_EQUAL_FATAL (a->len, 2);
      CU_ASSERT (STEP (a, 0)->q_len == 8192 && STEP (a, 0)->kv_len == (r + 1) * 8192ull);
      CU_ASSERT (STEP (a, 1)->kv_len == (16 - r) * 8192ull);
      CU_ASSERT (STEP (a, 0)->n_full == r && STEP (a, 0)->n_diagonal == 1);
      CU_ASSERT_EQUAL (STEP (a, 0)->flops, (2 * r + 1) * UNIT);
      CU_ASSERT_EQUAL (model_cp_attention_flops (&p, r), 16 * UNIT);
    }
  ModelCpParams nc = p;
  nc.causal = FALSE;
  CU_ASSERT_EQUAL (model_cp_attention_flops (&nc, 5), 32 * UNIT);

  ModelCpParams u = llama8b (MODEL_CP_ULYSSES, 8);
  CU_ASSERT (!u.load_balance);
  g_autoptr (GArray) a = steps_of (&u, 6, MODEL_CP_FORWARD);
  CU_ASSERT_EQUAL_FATAL (a->len, 1);
  CU_ASSERT (STEP (a, 0)->q_len == S && STEP (a, 0)->kv_len == S && STEP (a, 0)->heads == 4);
  CU_ASSERT (STEP (a, 0)->causal);
  CU_ASSERT_EQUAL (STEP (a, 0)->exec_flops, 16 * UNIT);
  CU_ASSERT_EQUAL (u.kv_heads / u.cp, 1);

  /* cp = 1: the plain attention, 4·s²·32·128 counted, half executed */
  ModelCpParams one = llama8b (MODEL_CP_RING, 1);
  g_autoptr (GArray) o = steps_of (&one, 0, MODEL_CP_FORWARD);
  CU_ASSERT_EQUAL_FATAL (o->len, 1);
  CU_ASSERT_EQUAL (STEP (o, 0)->flops, 4.0 * S * S * 32 * 128);
  CU_ASSERT_EQUAL (model_cp_attention_flops (&one, 0), 2.0 * S * S * 32 * 128);
}

static double
total (const GArray *c, HwCollectiveKind kind)
{
  double t = 0;
  for (guint j = 0; j < c->len; j++)
    {
      const ModelCpComm *x = &g_array_index (c, ModelCpComm, j);
      CU_ASSERT_EQUAL (x->dim, MODEL_MESH_CP);
      if (x->kind == kind)
        t += x->bytes;
    }
  return t;
}

/* The cp collectives per layer (context_parallel.h):
 *   ring forward: 7 sends of one KV chunk 2^26 B, beside steps 0…6;
 *   ring backward: 8 sends, K/V (2^26) at step 0, K/V + dK/dV (2^27) at steps 1…6, dK/dV
 *     (2^26) at step 7: 14·2^26 = 2·(cp − 1) chunks;
 *   all_gather: forward K and V all-gathered, b·s·k·d·e = 2^17·8·128·2 = 2^28 B each;
 *     backward the re-gather and a reduce-scatter each of dK, dV (2^28). A rank sends
 *     (n−1)/n of a gather: 7/8·2·2^28 = 7·2^26, the ring's 7 chunks — same traffic;
 *   ulysses: forward all-to-all q 2^27, k and v b·(s/cp)·k·d·e = 2^25 each, output 2^27;
 *     backward dout, dq, dk, dv the same sizes. */
static void
test_layer_comms (void)
{
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  CU_ASSERT_EQUAL (model_cp_kv_chunk_bytes (&p), KV);
  g_autoptr (GArray) f = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&p, MODEL_CP_FORWARD, f);
  model_cp_layer_comms (&p, MODEL_CP_BACKWARD, b);
  CU_ASSERT_EQUAL_FATAL (f->len, 7);
  CU_ASSERT_EQUAL_FATAL (b->len, 8);
  for (guint i = 0; i < 7; i++)
    {
      const ModelCpComm *c = &g_array_index (f, ModelCpComm, i);
      CU_ASSERT (c->kind == HW_COLLECTIVE_SEND_RECV && c->bytes == KV && c->step == (gint) i);
    }
  CU_ASSERT_EQUAL (g_array_index (b, ModelCpComm, 0).bytes, KV);
  CU_ASSERT_EQUAL (g_array_index (b, ModelCpComm, 3).bytes, 2 * KV);
  CU_ASSERT_EQUAL (g_array_index (b, ModelCpComm, 7).bytes, KV);
  CU_ASSERT_EQUAL (total (b, HW_COLLECTIVE_SEND_RECV), 14 * KV);
  double ring_sent = total (f, HW_COLLECTIVE_SEND_RECV);

  ModelCpParams g = llama8b (MODEL_CP_ALL_GATHER, 8);
  g_autoptr (GArray) gf = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  g_autoptr (GArray) gb = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&g, MODEL_CP_FORWARD, gf);
  model_cp_layer_comms (&g, MODEL_CP_BACKWARD, gb);
  CU_ASSERT_EQUAL (gf->len, 2);
  CU_ASSERT_EQUAL (total (gf, HW_COLLECTIVE_ALL_GATHER), 2 * 268435456.0);
  CU_ASSERT_EQUAL (total (gb, HW_COLLECTIVE_ALL_GATHER), 2 * 268435456.0);
  CU_ASSERT_EQUAL (total (gb, HW_COLLECTIVE_REDUCE_SCATTER), 2 * 268435456.0);
  CU_ASSERT_EQUAL (7.0 / 8 * total (gf, HW_COLLECTIVE_ALL_GATHER), ring_sent);

  ModelCpParams u = llama8b (MODEL_CP_ULYSSES, 8);
  g_autoptr (GArray) uf = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  g_autoptr (GArray) ub = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&u, MODEL_CP_FORWARD, uf);
  model_cp_layer_comms (&u, MODEL_CP_BACKWARD, ub);
  CU_ASSERT_EQUAL_FATAL (uf->len, 4);
  CU_ASSERT_EQUAL_FATAL (ub->len, 4);
  const double sizes[] = { QL, KV / 2, KV / 2, QL };
  for (guint i = 0; i < 4; i++)
    {
      const ModelCpComm *c = &g_array_index (uf, ModelCpComm, i);
      CU_ASSERT (c->kind == HW_COLLECTIVE_ALL_TO_ALL && c->bytes == sizes[i]);
      CU_ASSERT_EQUAL (c->before_attention, i < 3);
    }
  CU_ASSERT_EQUAL (total (ub, HW_COLLECTIVE_ALL_TO_ALL), 2 * QL + KV);

  ModelCpParams one = llama8b (MODEL_CP_RING, 1);
  g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&one, MODEL_CP_FORWARD, none);
  CU_ASSERT_EQUAL (none->len, 0);
}

/* The ring's overlap (TE: step i's kernel and the next K/V's P2P start together; step i+1
 * waits for both): Σ max(compute_i, comm_i). Synthetic: compute 2, 2, 2 and comm 1, 3, 0 →
 * 2 + 3 + 2 = 7, 1 exposed. Llama 3.1 8B at cp 8: a step's 2^41 FLOP at 800 TFLOP/s take
 * 2.749 ms; its 2^26-B chunk at 25 GB/s 2.684 ms (hidden), at 20 GB/s 3.355 ms: 7 forward
 * steps expose 7·(2^26/20e9 − 2^41/8e14). */
static void
test_ring_overlap (void)
{
  const double c3[] = { 2, 2, 2 }, m3[] = { 1, 3, 0 };
  CU_ASSERT_EQUAL (model_cp_ring_critical_path (c3, m3, 3), 7);
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  g_autoptr (GArray) st = steps_of (&p, 5, MODEL_CP_FORWARD);
  g_autoptr (GArray) cm = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&p, MODEL_CP_FORWARD, cm);
  const double rates[] = { 25e9, 20e9 };
  for (guint k = 0; k < 2; k++)
    {
      double compute[8], comm_s[8] = { 0 }, sum = 0;
      for (guint i = 0; i < 8; i++)
        sum += compute[i] = STEP (st, i)->exec_flops / 8e14;
      for (guint j = 0; j < cm->len; j++)
        {
          const ModelCpComm *c = &g_array_index (cm, ModelCpComm, j);
          comm_s[c->step] += c->bytes / rates[k];
        }
      double exposed = model_cp_ring_critical_path (compute, comm_s, 8) - sum;
      if (k == 0)
        {
          CU_ASSERT_EQUAL (exposed, 0);
        }
      else
        STEPSIM_ASSERT_REL (exposed, 7 * (KV / 20e9 - 2 * UNIT / 8e14), 1e-12);
    }
}

/* The attention's transient bytes (context_parallel.h), rank 7 and rank 0 of the ring:
 *   forward: 8 K/V buffers 8·2^26 = 2^29, plus every step's output and logsumexp. Rank 7's
 *     steps all cover both query chunks (q 16384): 8·(2^27 + 4·32·16384 = 2^21) = 2^30 +
 *     2^24 (the whole sequence's output: TE merges after the loop). Rank 0: step 0 q 16384
 *     (2^27 + 2^21), steps 1–7 q 8192 (2^26 + 2^20 each).
 *   backward: 4·2^26 (two [K/V, dK/dV] buffers) + 2^27 (dq) + the largest step's dq, dk,
 *     dv: the diagonal 2·(16384·32·128 + 2·16384·8·128) = 2^27 + 2^26: 2^29 + 2^26.
 *   all_gather forward: the gathered K/V 8·2^26 = 2^29 + the two chunks' outputs and lse,
 *     2·(8192·32·128·2 + 4·32·8192) = 2^27 + 2^21.
 *   ulysses: one staging copy of the local q, 2^27. */
static void
test_workspace (void)
{
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  const double M = 1048576.0;
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&p, 7, MODEL_CP_FORWARD), 512 * M + 1024 * M + 16 * M);
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&p, 0, MODEL_CP_FORWARD),
                   512 * M + (128 * M + 2 * M) + 7 * (64 * M + M));
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&p, 3, MODEL_CP_BACKWARD), 512 * M + 64 * M);
  ModelCpParams g = llama8b (MODEL_CP_ALL_GATHER, 8);
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&g, 4, MODEL_CP_FORWARD), 512 * M + 128 * M + 2 * M);
  ModelCpParams u = llama8b (MODEL_CP_ULYSSES, 8);
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&u, 4, MODEL_CP_BACKWARD), QL);
  ModelCpParams one = llama8b (MODEL_CP_RING, 1);
  CU_ASSERT_EQUAL (model_cp_attention_workspace (&one, 0, MODEL_CP_FORWARD), 0);
}

/* Saved activations per rank. The layer graph at s = 131072 (flash, no dropout) holds
 * per-token tensors only (its logsumexp too, 4·b·a·s), all multiples of 8 B, so under ring
 * (and all_gather) a rank's saved bytes are exactly 1/8 of the graph's under every policy,
 * and its transient forward peak too (the ops' frees are kept). Ulysses adds the
 * o-projection's all-to-all'd input beside the attention's saved output: + 2^27 B.
 * cp = 1 is the graph itself, kernels included. */
static void
test_shard_graph (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  ModelCostParams cp = params (1, S, TRUE, 0);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, &cp);
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  g_autoptr (ModelGraph) r = model_cp_shard_graph (g, &p, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  const ModelGraphPolicy pol[] = { MODEL_GRAPH_KEEP_ALL, MODEL_GRAPH_KEEP_NON_SELECTIVE,
                                   MODEL_GRAPH_KEEP_MATMUL };
  for (guint j = 0; j < G_N_ELEMENTS (pol); j++)
    for (guint compile = 0; compile < 2; compile++)
      CU_ASSERT_EQUAL (model_graph_saved (r, pol[j], compile, NULL, 0, NULL),
                       model_graph_saved (g, pol[j], compile, NULL, 0, NULL) / 8);
  double whole = model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL);
  CU_ASSERT (whole > 0);
  CU_ASSERT_EQUAL (model_graph_transient_peak (r, FALSE, NULL),
                   model_graph_transient_peak (g, FALSE, NULL) / 8);
  for (guint i = 0; i < r->ops->len; i++)
    CU_ASSERT (!g_array_index (r->ops, ModelGraphOp, i).launches);

  ModelCpParams u = llama8b (MODEL_CP_ULYSSES, 8);
  g_autoptr (ModelGraph) ug = model_cp_shard_graph (g, &u, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ug);
  CU_ASSERT_EQUAL (model_graph_saved (ug, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL),
                   whole / 8 + QL);
  CU_ASSERT_EQUAL (ug->ops->len, g->ops->len + 1);

  ModelCpParams one = llama8b (MODEL_CP_RING, 1);
  g_autoptr (ModelGraph) o = model_cp_shard_graph (g, &one, NULL);
  CU_ASSERT_EQUAL (model_graph_saved (o, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL), whole);
  CU_ASSERT_EQUAL (g_array_index (o->ops, ModelGraphOp, 2).launches,
                   g_array_index (g->ops, ModelGraphOp, 2).launches);
}

/* Eager attention: ring and all_gather refuse it (naming [training] attention and
 * [parallel] cp); Ulysses splits the s×s scores over heads, 1/8 each. Its P·V output is
 * saved by nothing but the o-projection (bmm saves P and v), which now saves the a2a'd copy
 * instead: exactly 1/8 of the graph's, no second output as under flash. QLoRA's dequantized NF4 weight is
 * a weight, not per token: whole on every rank. */
static void
test_shard_graph_eager_and_nf4 (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  ModelCostParams ep = params (1, 4096, FALSE, 0);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, &ep);
  ModelCpParams p = llama8b (MODEL_CP_RING, 8);
  p.seq_len = 4096;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (model_cp_shard_graph (g, &p, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "[training] attention") != NULL
             && strstr (e->message, "[parallel] cp") != NULL);
  ModelCpParams u = llama8b (MODEL_CP_ULYSSES, 8);
  u.seq_len = 4096;
  g_autoptr (ModelGraph) ug = model_cp_shard_graph (g, &u, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ug);
  CU_ASSERT_EQUAL (model_graph_saved (ug, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL),
                   model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL) / 8);

  ModelCostParams qp = params (1, 4096, TRUE, 0);
  qp.finetune = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelGraph) qg = model_cost_layer_graph (arch, &qp);
  g_autoptr (ModelGraph) qr = model_cp_shard_graph (qg, &p, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (qr);
  guint seen = 0;
  for (guint i = 0; i < qg->tensors->len; i++)
    {
      const ModelGraphTensor *a = &g_array_index (qg->tensors, ModelGraphTensor, i);
      const ModelGraphTensor *b = &g_array_index (qr->tensors, ModelGraphTensor, i);
      gboolean w = strcmp (a->name, "nf4_dequantized") == 0;
      seen += w;
      CU_ASSERT_EQUAL (b->bytes, w ? a->bytes : a->bytes / 8);
    }
  CU_ASSERT_EQUAL (seen, 1);
}

static void
expect_error (const ModelArch *arch, guint cp, guint tp, guint gpus, ModelCpVariant v,
              guint64 seq, const char *k1, const char *k2)
{
  ModelMesh m = cp_mesh (cp, tp);
  ModelCpParams p;
  model_cp_params_init (&p, arch, &m, v, 1, seq, 2.0);
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_cp_check (arch, &m, gpus, &p, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  if (strstr (e->message, k1) == NULL || strstr (e->message, k2) == NULL)
    g_printerr ("\n  expected '%s' and '%s' in: %s\n", k1, k2, e->message);
  CU_ASSERT (strstr (e->message, k1) != NULL && strstr (e->message, k2) != NULL);
}

static gboolean
accepts (const ModelArch *arch, guint cp, guint tp, ModelCpVariant v, guint64 seq)
{
  ModelMesh m = cp_mesh (cp, tp);
  ModelCpParams p;
  model_cp_params_init (&p, arch, &m, v, 1, seq, 2.0);
  return model_cp_check (arch, &m, cp * tp, &p, NULL);
}

/* The checks: 131080 = 16·8192 + 8 is no multiple of 2·8 (ring, all_gather) but is of 8
 * (Ulysses, contiguous); Ulysses at cp 3 over 32 heads; at cp 16 the 32 query heads divide
 * but the 8 KV heads do not; at tp 2 × cp 8 each tp rank has 16 query and 4 KV heads, 4 %
 * 8 ≠ 0, the message names tp; cp 8 × tp 2 on 8 GPUs is 16 ranks; Mistral 7B's 4096-token
 * sliding window under the ring, shorter than the 32768 sequence. */
static void
test_errors (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  CU_ASSERT (accepts (arch, 8, 1, MODEL_CP_RING, S));
  CU_ASSERT (accepts (arch, 8, 1, MODEL_CP_ULYSSES, S));
  expect_error (arch, 8, 1, 8, MODEL_CP_RING, S + 8, "[training] seq_len = 131080", "2·[parallel] cp = 2·8 = 16");
  expect_error (arch, 8, 1, 8, MODEL_CP_ALL_GATHER, S + 8, "seq_len", "[parallel] cp");
  CU_ASSERT (accepts (arch, 8, 1, MODEL_CP_ULYSSES, S + 8));
  CU_ASSERT (accepts (arch, 3, 1, MODEL_CP_RING, 3 * 4096));
  expect_error (arch, 3, 1, 3, MODEL_CP_ULYSSES, 3 * 4096, "num_attention_heads = 32",
                "[parallel] cp = 3");
  expect_error (arch, 16, 1, 16, MODEL_CP_ULYSSES, S, "num_key_value_heads = 8", "cp = 16");
  expect_error (arch, 8, 2, 16, MODEL_CP_ULYSSES, S, "num_key_value_heads = 8 (4 per",
                "[parallel] tp = 2");
  expect_error (arch, 8, 2, 8, MODEL_CP_RING, S, "cp 8 × tp 2 = 16 ranks", "8 GPUs");
  g_autoptr (ModelArch) mistral = shipped ("mistral-7b-v0.1");
  expect_error (mistral, 8, 1, 8, MODEL_CP_RING, 32768, "sliding_window = 4096", "seq_len = 32768");
  CU_ASSERT (accepts (mistral, 8, 1, MODEL_CP_ULYSSES, 32768));
  CU_ASSERT (accepts (mistral, 8, 1, MODEL_CP_RING, 4096)); /* the window covers it */
}

int main (void);

/* DeepSeek-V2-Lite's Multi-head Latent Attention (shipped config: 16 heads, q·k heads of
 * qk_nope + qk_rope = 128 + 64 = d = 192, v heads of dv = 128) at s = 4096, b = 1, e = 2,
 * cp = 2 (k = a = 16: MLA's up projections give every head its own k and v):
 *   KV chunk b·(s/cp)·k·(d + dv)·e = 2048·16·320·2 = 20,971,520 B (TE's p2p sends MLA's K
 *     and V flattened into one buffer)
 *   executed attention, causal: b·s²·a·(d + dv) = 4096²·16·320 = 85,899,345,920 FLOP (Q·Kᵀ
 *     2·b·s²·a·d and P·V 2·b·s²·a·dv over the full square, halved), per balanced rank half
 *     of it: 42,949,672,960, every rank the same
 *   Ulysses forward: q b·(s/cp)·a·d·e = 2048·16·192·2 = 12,582,912, k the same, v and the
 *     output b·(s/cp)·a·dv·e = 2048·16·128·2 = 8,388,608 each
 * With dv = d (Llama) every figure is the former single-width one (the tests above). */
static void
test_mla_widths (void)
{
  g_autoptr (ModelArch) arch = shipped ("deepseek-v2-lite");
  ModelMesh m = cp_mesh (2, 1);
  ModelCpParams p;
  model_cp_params_init (&p, arch, &m, MODEL_CP_RING, 1, 4096, 2.0);
  CU_ASSERT_EQUAL (p.head_dim, 192);
  CU_ASSERT_EQUAL (p.v_head_dim, 128);
  CU_ASSERT_TRUE (model_cp_check (arch, &m, 2, &p, NULL));
  CU_ASSERT_EQUAL (model_cp_kv_chunk_bytes (&p), 20971520.0);
  for (guint r = 0; r < 2; r++)
    CU_ASSERT_EQUAL (model_cp_attention_flops (&p, r), 42949672960.0);
  ModelCpParams u;
  model_cp_params_init (&u, arch, &m, MODEL_CP_ULYSSES, 1, 4096, 2.0);
  g_autoptr (GArray) uf = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
  model_cp_layer_comms (&u, MODEL_CP_FORWARD, uf);
  CU_ASSERT_EQUAL_FATAL (uf->len, 4);
  const double sizes[] = { 12582912.0, 12582912.0, 8388608.0, 8388608.0 };
  for (guint i = 0; i < 4; i++)
    CU_ASSERT_EQUAL (g_array_index (uf, ModelCpComm, i).bytes, sizes[i]);
  CU_ASSERT_EQUAL (model_cp_attention_flops (&u, 0), 42949672960.0);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "variant names", test_variant_names },
    { "ring steps under causal load balancing", test_ring_steps },
    { "ring without load balancing", test_ring_unbalanced },
    { "all-gather and Ulysses attention work", test_all_gather_and_ulysses_work },
    { "per-layer cp collectives", test_layer_comms },
    { "ring P2P overlap", test_ring_overlap },
    { "attention workspace", test_workspace },
    { "saved activations per cp rank", test_shard_graph },
    { "eager attention and NF4 weights under cp", test_shard_graph_eager_and_nf4 },
    { "cp checks", test_errors },
    { "MLA: K and V of their own widths", test_mla_widths },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/context_parallel", tests);
}
