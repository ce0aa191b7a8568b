/* tests/unit/models/test_mesh.c — the device mesh (rank ↔ coordinates, groups, intra-node
 * dimensions, Megatron's expert carving), placements (local shapes and bytes, the
 * divisibility error, the collective of each placement change) and the data-parallel modes
 * as placement tables (ZeRO Fig. 1 per-rank model states, derived collectives). */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/parallel.h"
#include "tests/testlib.h"

/* pp 2 × dp_replicate 2 × dp_shard 2 × cp 1 × tp 2 = 16 ranks, 8 per node. */
static ModelMesh
mesh_16 (void)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_PP] = 2;
  m.degree[MODEL_MESH_DP_REPLICATE] = 2;
  m.degree[MODEL_MESH_DP_SHARD] = 2;
  m.degree[MODEL_MESH_TP] = 2;
  return m;
}

/* rank = (((pp·R + rep)·S + shard)·C + cp)·T + tp (mesh.h): rank 13 = pp 1, rep 1, shard 0,
 * cp 0, tp 1, since ((1·2 + 1)·2 + 0)·2 + 1 = 13. Every rank round-trips; tp neighbours are
 * consecutive ranks. Spans (stride × degree): tp 2, cp 2, dp_shard 4, dp_replicate 8 fit
 * the 8-GPU node; pp spans 16 ranks, two nodes. */
static void
test_rank_mapping (void)
{
  ModelMesh m = mesh_16 ();
  CU_ASSERT_EQUAL (model_mesh_size (&m), 16);
  guint c[MODEL_MESH_N_DIMS];
  model_mesh_coords (&m, 13, c);
  CU_ASSERT (c[MODEL_MESH_PP] == 1 && c[MODEL_MESH_DP_REPLICATE] == 1
             && c[MODEL_MESH_DP_SHARD] == 0 && c[MODEL_MESH_CP] == 0 && c[MODEL_MESH_TP] == 1);
  for (guint r = 0; r < 16; r++)
    {
      model_mesh_coords (&m, r, c);
      CU_ASSERT_EQUAL (model_mesh_rank (&m, c), r);
    }
  CU_ASSERT_EQUAL (model_mesh_stride (&m, MODEL_MESH_TP), 1);
  CU_ASSERT_EQUAL (model_mesh_stride (&m, MODEL_MESH_DP_SHARD), 2);
  CU_ASSERT_EQUAL (model_mesh_stride (&m, MODEL_MESH_PP), 8);
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_TP));
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_CP));
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_DP_SHARD));
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_DP_REPLICATE));
  CU_ASSERT (!model_mesh_intra_node (&m, MODEL_MESH_PP));
  m.gpus_per_node = 4; /* now dp_replicate (span 8) crosses nodes too */
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_DP_SHARD));
  CU_ASSERT (!model_mesh_intra_node (&m, MODEL_MESH_DP_REPLICATE));
  CU_ASSERT_STRING_EQUAL (model_mesh_dim_name (MODEL_MESH_DP_SHARD), "dp_shard");
}

/* Groups of rank 13 (coordinates above): tp {12, 13}; dp_shard steps by 2 from shard 0:
 * {13, 15}; both dp dimensions (pp 1, tp 1 fixed): {9, 11, 13, 15}; pp {5, 13}. The group
 * index is the row-major number of the other coordinates: for tp (pp 1, rep 1, shard 0,
 * cp 0) 1·4 + 1·2 + 0 = 6. */
static void
test_groups (void)
{
  ModelMesh m = mesh_16 ();
  guint ranks[16], index = 99;
  CU_ASSERT_EQUAL (model_mesh_group (&m, 13, MODEL_MESH_BIT (MODEL_MESH_TP), ranks, &index), 2);
  CU_ASSERT (ranks[0] == 12 && ranks[1] == 13);
  CU_ASSERT_EQUAL (index, 6);
  CU_ASSERT_EQUAL (model_mesh_group (&m, 13, MODEL_MESH_BIT (MODEL_MESH_DP_SHARD), ranks, NULL), 2);
  CU_ASSERT (ranks[0] == 13 && ranks[1] == 15);
  CU_ASSERT_EQUAL (model_mesh_group (&m, 13, MODEL_MESH_DP, ranks, NULL), 4);
  CU_ASSERT (ranks[0] == 9 && ranks[1] == 11 && ranks[2] == 13 && ranks[3] == 15);
  CU_ASSERT_EQUAL (model_mesh_group (&m, 13, MODEL_MESH_BIT (MODEL_MESH_PP), ranks, NULL), 2);
  CU_ASSERT (ranks[0] == 5 && ranks[1] == 13);
}

/* Megatron's expert carving (parallel_state.py, "tp-cp-ep-dp-pp" with tp = etp): 16 ranks,
 * pp 2, dp_shard 8, ep 4, etp 1 → edp = 8 / 4 = 2. Rank 13 is local 5 of stage 1 (base 8):
 * ep coordinate 5 mod 4 = 1, edp coordinate 5 div 4 = 1: EP group {12..15}, EDP group
 * {9, 13}. ep 3 does not divide the stage's 8 ranks. */
static void
test_expert_carving (void)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_PP] = 2;
  m.degree[MODEL_MESH_DP_SHARD] = 8;
  m.ep = 4;
  CU_ASSERT (model_mesh_validate (&m, 16, NULL));
  CU_ASSERT_EQUAL (model_mesh_expert_degree (&m, MODEL_MESH_EXPERT_DP), 2);
  guint ranks[16];
  CU_ASSERT_EQUAL (model_mesh_expert_group (&m, 13, MODEL_MESH_EXPERT_EP, ranks), 4);
  CU_ASSERT (ranks[0] == 12 && ranks[1] == 13 && ranks[2] == 14 && ranks[3] == 15);
  CU_ASSERT_EQUAL (model_mesh_expert_group (&m, 13, MODEL_MESH_EXPERT_DP, ranks), 2);
  CU_ASSERT (ranks[0] == 9 && ranks[1] == 13);
  CU_ASSERT_EQUAL (model_mesh_expert_group (&m, 13, MODEL_MESH_EXPERT_TP, ranks), 1);
  CU_ASSERT_EQUAL (ranks[0], 13);
  m.ep = 3;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_mesh_validate (&m, 16, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "ep 3") != NULL);
}

/* Expert tensor parallelism (parallel_state.py expert_decoder_rank_generator, order
 * "tp-ep-dp" inside a stage): tp 2 × dp 4 = 8 ranks, etp 2, ep 4 → edp = 8 / (2·4) = 1.
 * Stage-local rank = etp_coord + 2·(ep_coord + 4·edp_coord); rank 5 = 1 + 2·2: its etp
 * group {4, 5}, its ep group the ranks with etp coordinate 1, {1, 3, 5, 7}, its tp_ep
 * group (get_ranks('tp-ep'), the token-count all-gather's) all 8, its edp group itself.
 * With pp 2 on 16 ranks rank 13 (local 5 of stage 1, base 8) gets the same groups + 8. */
static void
test_expert_tp_carving (void)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_DP_SHARD] = 4;
  m.degree[MODEL_MESH_TP] = 2;
  m.ep = 4;
  m.etp = 2;
  CU_ASSERT (model_mesh_validate (&m, 8, NULL));
  CU_ASSERT_EQUAL (model_mesh_expert_degree (&m, MODEL_MESH_EXPERT_DP), 1);
  CU_ASSERT_EQUAL (model_mesh_expert_degree (&m, MODEL_MESH_EXPERT_TP_EP), 8);
  for (guint pp = 1; pp <= 2; pp++)
    {
      m.degree[MODEL_MESH_PP] = pp;
      guint r = pp == 1 ? 5 : 13, base = r - 5, ranks[16];
      CU_ASSERT_EQUAL (model_mesh_expert_group (&m, r, MODEL_MESH_EXPERT_TP, ranks), 2);
      CU_ASSERT (ranks[0] == base + 4 && ranks[1] == base + 5);
      CU_ASSERT_EQUAL (model_mesh_expert_group (&m, r, MODEL_MESH_EXPERT_EP, ranks), 4);
      CU_ASSERT (ranks[0] == base + 1 && ranks[1] == base + 3 && ranks[2] == base + 5
                 && ranks[3] == base + 7);
      CU_ASSERT_EQUAL (model_mesh_expert_group (&m, r, MODEL_MESH_EXPERT_TP_EP, ranks), 8);
      for (guint i = 0; i < 8; i++)
        CU_ASSERT_EQUAL (ranks[i], base + i);
      CU_ASSERT_EQUAL (model_mesh_expert_group (&m, r, MODEL_MESH_EXPERT_DP, ranks), 1);
      CU_ASSERT_EQUAL (ranks[0], r);
    }
}

/* Degrees whose product (16) is not the GPU count (8): one error naming both. */
static void
test_mesh_product_error (void)
{
  ModelMesh m = mesh_16 ();
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_mesh_validate (&m, 8, &e));
  CU_ASSERT (g_error_matches (e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  CU_ASSERT (e != NULL && strstr (e->message, "16 ranks") != NULL
             && strstr (e->message, "8 GPUs") != NULL);
  CU_ASSERT (model_mesh_validate (&m, 16, NULL));
}

/* Local shapes of a [4096, 11008] matrix on mesh_16: Shard(1) on tp (2) → [4096, 5504];
 * Shard(0) on tp and Shard(1) on dp_shard → [2048, 5504]; Shard(flat) on dp_shard and
 * dp_replicate → one dimension of 4096·11008/4 = 11272192. A 4095-wide dimension does not
 * divide over tp 2: an error naming the dimension, its size and the mesh dimension. */
static void
test_local_shape (void)
{
  ModelMesh m = mesh_16 ();
  const guint64 shape[] = { 4096, 11008 };
  guint64 out[8];
  guint n = 0;
  ModelPlacements pl = model_placements_replicate ();
  pl.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 1 };
  CU_ASSERT (model_placement_local_shape (&pl, &m, shape, 2, out, &n, NULL));
  CU_ASSERT (n == 2 && out[0] == 4096 && out[1] == 5504);
  STEPSIM_ASSERT_REL (model_placement_local_bytes (&pl, &m, 2.0 * 4096 * 11008),
                      2.0 * 4096 * 5504, 1e-15);
  pl.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 0 };
  pl.on[MODEL_MESH_DP_SHARD] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 1 };
  CU_ASSERT (model_placement_local_shape (&pl, &m, shape, 2, out, &n, NULL));
  CU_ASSERT (n == 2 && out[0] == 2048 && out[1] == 5504);
  ModelPlacements flat = model_placements_replicate ();
  flat.on[MODEL_MESH_DP_SHARD] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, MODEL_PLACEMENT_FLAT };
  flat.on[MODEL_MESH_DP_REPLICATE] = flat.on[MODEL_MESH_DP_SHARD];
  CU_ASSERT (model_placement_local_shape (&flat, &m, shape, 2, out, &n, NULL));
  CU_ASSERT (n == 1 && out[0] == 11272192);
  CU_ASSERT_EQUAL (model_placement_ways (&flat, &m), 4);
  /* A flat shard that does not divide is padded, as FSDP and ZeRO pad the flat buffer:
   * 3 × 5 = 15 elements over 4 ranks → ⌈15 / 4⌉ = 4 each (16 with one element of padding),
   * not an error. */
  const guint64 uneven[] = { 3, 5 };
  CU_ASSERT (model_placement_local_shape (&flat, &m, uneven, 2, out, &n, NULL));
  CU_ASSERT (n == 1 && out[0] == 4);
  /* Partial holds full size */
  ModelPlacements partial = model_placements_replicate ();
  partial.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_PARTIAL, 0 };
  CU_ASSERT_EQUAL (model_placement_local_bytes (&partial, &m, 100.0), 100.0);
  CU_ASSERT (!model_placements_sharded (&partial, &m));
  const guint64 odd[] = { 4096, 4095 };
  ModelPlacements tp1 = model_placements_replicate ();
  tp1.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 1 };
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_placement_local_shape (&tp1, &m, odd, 2, out, &n, &e));
  CU_ASSERT (g_error_matches (e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  CU_ASSERT (e != NULL && strstr (e->message, "dim 1 of size 4095") != NULL
             && strstr (e->message, "tp of degree 2") != NULL);
}

/* One placement change on dp_shard (degree 2 in mesh_16), B = 1000 bytes whole, sizes as
 * hardware/collective.h: P→R all-reduce of B; P→S reduce-scatter of the B input; S→R
 * all-gather of the B output; S(0)→S(1) all-to-all of the local B/2; R→S and R→P move
 * nothing; S→P is refused. The same change on cp (degree 1) moves nothing. */
static void
test_redistribute_each_change (void)
{
  ModelMesh m = mesh_16 ();
  const ModelPlacement R = { MODEL_PLACEMENT_REPLICATE, 0 }, P = { MODEL_PLACEMENT_PARTIAL, 0 },
                       S0 = { MODEL_PLACEMENT_SHARD, 0 }, S1 = { MODEL_PLACEMENT_SHARD, 1 };
  const struct
  {
    ModelPlacement from, to;
    gint kind; /* -1: none */
    double bytes;
  } cases[] = {
    { P, R, HW_COLLECTIVE_ALL_REDUCE, 1000 },   { P, S0, HW_COLLECTIVE_REDUCE_SCATTER, 1000 },
    { S0, R, HW_COLLECTIVE_ALL_GATHER, 1000 },  { S0, S1, HW_COLLECTIVE_ALL_TO_ALL, 500 },
    { R, S0, -1, 0 },                           { R, P, -1, 0 },
    { R, R, -1, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (guint d = MODEL_MESH_DP_SHARD; d <= MODEL_MESH_CP; d++)
      {
        ModelPlacements a = model_placements_replicate (), b = model_placements_replicate ();
        a.on[d] = cases[i].from;
        b.on[d] = cases[i].to;
        g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (ModelPlacementComm));
        CU_ASSERT (model_placement_redistribute (&a, &b, &m, 1000, out, NULL));
        guint want = d == MODEL_MESH_CP || cases[i].kind < 0 ? 0 : 1;
        CU_ASSERT_EQUAL (out->len, want);
        if (out->len == 1 && want == 1)
          {
            const ModelPlacementComm *c = &g_array_index (out, ModelPlacementComm, 0);
            CU_ASSERT_EQUAL (c->kind, (HwCollectiveKind) cases[i].kind);
            CU_ASSERT_EQUAL (c->dim, MODEL_MESH_DP_SHARD);
            CU_ASSERT_EQUAL (c->bytes, cases[i].bytes);
          }
      }
  ModelPlacements a = model_placements_replicate (), b = model_placements_replicate ();
  a.on[MODEL_MESH_TP] = S0;
  b.on[MODEL_MESH_TP] = P;
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (ModelPlacementComm));
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_placement_redistribute (&a, &b, &m, 1000, out, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "tp") != NULL);
}

/* Hybrid sharding's gradient reduction, Partial on both dp dimensions → Replicate on
 * dp_replicate, Shard on dp_shard, B = 1000, shard degree 2: the inner dimension first, a
 * reduce-scatter of B on dp_shard, then the all-reduce of the B/2 shard on dp_replicate. */
static void
test_redistribute_hybrid_order (void)
{
  ModelMesh m = mesh_16 ();
  ModelPlacements a = model_placements_replicate (), b = model_placements_replicate ();
  a.on[MODEL_MESH_DP_REPLICATE] = a.on[MODEL_MESH_DP_SHARD]
    = (ModelPlacement){ MODEL_PLACEMENT_PARTIAL, 0 };
  b.on[MODEL_MESH_DP_SHARD] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, MODEL_PLACEMENT_FLAT };
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (ModelPlacementComm));
  CU_ASSERT (model_placement_redistribute (&a, &b, &m, 1000, out, NULL));
  CU_ASSERT_EQUAL_FATAL (out->len, 2);
  const ModelPlacementComm *c = (const ModelPlacementComm *) (gpointer) out->data;
  CU_ASSERT (c[0].kind == HW_COLLECTIVE_REDUCE_SCATTER && c[0].dim == MODEL_MESH_DP_SHARD
             && c[0].bytes == 1000);
  CU_ASSERT (c[1].kind == HW_COLLECTIVE_ALL_REDUCE && c[1].dim == MODEL_MESH_DP_REPLICATE
             && c[1].bytes == 500);
  g_autofree char *text = model_placements_to_string (&b);
  CU_ASSERT_STRING_EQUAL (text, "[S(flat) on dp_shard]");
}

static ModelParallel
dp (ModelDataParallel mode, guint degree, guint per_node)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = mode;
  par.degree = degree;
  par.gpus_per_node = per_node;
  return par;
}

/* ZeRO (arXiv 1910.02054) Figure 1 from the placements alone: Ψ = 7.5e9, N = 64, weights
 * and gradients 2 B, K = 12 (fp32 master 4 + Adam 8), each state's share at rest:
 *   DP (2 + 2 + K)Ψ = 120 GB; P_os (2 + 2 + K/N)Ψ = 31.4; P_os+g (2 + (2 + K)/N)Ψ = 16.6;
 *   P_os+g+p (2 + 2 + K)Ψ/N = 1.875 (the paper prints 1.9). */
static void
test_zero_fig1_from_placements (void)
{
  const double psi = 7.5e9;
  const ModelDataParallel modes[] = { MODEL_DP_DDP, MODEL_DP_ZERO1, MODEL_DP_ZERO2, MODEL_DP_ZERO3 };
  const double gb[] = { 120, 30 + 1.40625, 15 + 1.640625, 1.875 };
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      ModelParallel par = dp (modes[i], 64, 8);
      double sum = model_parallel_local_bytes (&par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST, 2 * psi)
                   + model_parallel_local_bytes (&par, MODEL_STATE_GRADIENTS, MODEL_PHASE_REST, 2 * psi)
                   + model_parallel_local_bytes (&par, MODEL_STATE_MASTER, MODEL_PHASE_REST, 4 * psi)
                   + model_parallel_local_bytes (&par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_REST, 8 * psi);
      STEPSIM_ASSERT_REL (sum / 1e9, gb[i], 1e-12);
      CU_ASSERT_EQUAL (model_parallel_stage (&par), i);
      /* activations: the global batch split over all 64 ranks, whatever the stage */
      STEPSIM_ASSERT_REL (model_parallel_local_bytes (&par, MODEL_STATE_ACTIVATIONS,
                                                      MODEL_PHASE_COMPUTE, 64e9), 1e9, 1e-15);
    }
}

/* The modes' collectives, derived from placement changes, 8 ranks, 4 per node, B = 800:
 * DDP: gradients accumulate → step, all-reduce on dp_replicate (all 8); ZeRO-1: a
 * reduce-scatter on dp_shard there, and weights step → rest an all-gather (ZeRO §5.1);
 * ZeRO-2: gradients compute → accumulate a reduce-scatter every micro-batch; ZeRO-3:
 * weights rest → compute an all-gather; hybrid: reduce-scatter on dp_shard (4), then
 * all-reduce of the 200-byte shard on dp_replicate (2). */
static void
test_modes_derive_collectives (void)
{
  const struct
  {
    ModelDataParallel mode;
    ModelState state;
    ModelPhase from, to;
    guint n;
    HwCollectiveKind kind[2];
    ModelMeshDim dim[2];
    double bytes[2];
  } cases[] = {
    { MODEL_DP_DDP, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE, MODEL_PHASE_STEP, 1,
      { HW_COLLECTIVE_ALL_REDUCE }, { MODEL_MESH_DP_REPLICATE }, { 800 } },
    { MODEL_DP_DDP, MODEL_STATE_GRADIENTS, MODEL_PHASE_COMPUTE, MODEL_PHASE_ACCUMULATE, 0,
      { 0 }, { 0 }, { 0 } },
    { MODEL_DP_ZERO1, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE, MODEL_PHASE_STEP, 1,
      { HW_COLLECTIVE_REDUCE_SCATTER }, { MODEL_MESH_DP_SHARD }, { 800 } },
    { MODEL_DP_ZERO1, MODEL_STATE_WEIGHTS, MODEL_PHASE_STEP, MODEL_PHASE_REST, 1,
      { HW_COLLECTIVE_ALL_GATHER }, { MODEL_MESH_DP_SHARD }, { 800 } },
    { MODEL_DP_ZERO2, MODEL_STATE_GRADIENTS, MODEL_PHASE_COMPUTE, MODEL_PHASE_ACCUMULATE, 1,
      { HW_COLLECTIVE_REDUCE_SCATTER }, { MODEL_MESH_DP_SHARD }, { 800 } },
    { MODEL_DP_ZERO2, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST, MODEL_PHASE_COMPUTE, 0,
      { 0 }, { 0 }, { 0 } },
    { MODEL_DP_ZERO3, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST, MODEL_PHASE_COMPUTE, 1,
      { HW_COLLECTIVE_ALL_GATHER }, { MODEL_MESH_DP_SHARD }, { 800 } },
    { MODEL_DP_ZERO3, MODEL_STATE_WEIGHTS, MODEL_PHASE_STEP, MODEL_PHASE_REST, 0,
      { 0 }, { 0 }, { 0 } },
    { MODEL_DP_FSDP_HYBRID_SHARD, MODEL_STATE_GRADIENTS, MODEL_PHASE_COMPUTE,
      MODEL_PHASE_ACCUMULATE, 2, { HW_COLLECTIVE_REDUCE_SCATTER, HW_COLLECTIVE_ALL_REDUCE },
      { MODEL_MESH_DP_SHARD, MODEL_MESH_DP_REPLICATE }, { 800, 200 } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelParallel par = dp (cases[i].mode, 8, 4);
      g_autoptr (GArray) out = model_parallel_redistribute (&par, cases[i].state, cases[i].from,
                                                            cases[i].to, 800);
      CU_ASSERT_EQUAL (out->len, cases[i].n);
      for (guint k = 0; k < out->len && k < cases[i].n; k++)
        {
          const ModelPlacementComm *c = &g_array_index (out, ModelPlacementComm, k);
          CU_ASSERT (c->kind == cases[i].kind[k] && c->dim == cases[i].dim[k]
                     && c->bytes == cases[i].bytes[k]);
        }
    }
}

/* The data-parallel mesh of each mode on 16 GPUs, 8 per node: DDP replicates over 16;
 * ZeRO-3 shards over 16; hybrid shards over the node (8) and replicates over 2; explicit
 * dp_replicate 4 under ZeRO-3 leaves dp_shard 4. A mesh whose product is not the GPU count,
 * or a DDP that shards, is refused naming the key. */
static void
test_mode_mesh (void)
{
  ModelMesh m;
  ModelParallel par = dp (MODEL_DP_DDP, 16, 8);
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_REPLICATE] == 16 && m.degree[MODEL_MESH_DP_SHARD] == 1);
  par = dp (MODEL_DP_ZERO3, 16, 8);
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_REPLICATE] == 1 && m.degree[MODEL_MESH_DP_SHARD] == 16);
  par = dp (MODEL_DP_FSDP_HYBRID_SHARD, 16, 8);
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_REPLICATE] == 2 && m.degree[MODEL_MESH_DP_SHARD] == 8);
  CU_ASSERT_EQUAL (model_parallel_shard_size (&par), 8);
  CU_ASSERT_EQUAL (model_parallel_replicas (&par), 2);
  /* hybrid with tp 2 × pp 2 (dp 4): by default a node's 8 GPUs are 4 dp ranks of one stage;
   * under tp-cp-ep-pp-dp 2 pipeline replicas, so the shard group is 2, on the node */
  par.tp = 2;
  par.pp = 2;
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_SHARD] == 4 && model_mesh_intra_node (&m, MODEL_MESH_DP_SHARD));
  par.order = MODEL_MESH_ORDER_TP_CP_EP_PP_DP;
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_SHARD] == 2 && m.degree[MODEL_MESH_DP_REPLICATE] == 2);
  CU_ASSERT (model_mesh_intra_node (&m, MODEL_MESH_DP_SHARD));
  par = dp (MODEL_DP_ZERO3, 16, 8);
  par.dp_replicate = 4;
  model_parallel_mesh (&par, &m);
  CU_ASSERT (m.degree[MODEL_MESH_DP_REPLICATE] == 4 && m.degree[MODEL_MESH_DP_SHARD] == 4);
  CU_ASSERT (model_parallel_validate (&par, NULL));
  par.dp_shard = 8;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_parallel_validate (&par, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "dp_replicate") != NULL);
  par = dp (MODEL_DP_DDP, 16, 8);
  par.dp_shard = 2;
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT (!model_parallel_validate (&par, &e2));
  CU_ASSERT (e2 != NULL && strstr (e2->message, "dp_shard") != NULL);
}

int main (void);

/* ---- rank order ([parallel] order, mesh.h) ---------------------------------------------- */

/* 16 ranks: tp 2 × pp 2 × dp 4 (dp_replicate 4). Default "tp-cp-ep-dp-pp":
 * rank = (pp·4 + dp)·2 + tp, so rank 0's pp group is {0, 8} and its dp group {0, 2, 4, 6};
 * "tp-cp-ep-pp-dp" (Megatron --use-tp-pp-dp-mapping): rank = (dp·2 + pp)·2 + tp, rank 0's
 * pp group {0, 2} (one pipeline on neighbouring ranks) and dp group {0, 4, 8, 12}; tp
 * stays {0, 1}. Rank 6 = (1·2 + 1)·2 + 0 is stage 1 under the new order (stage 0 by
 * default), its stage-local index 1·2 + 0 = 2, and stage 1's ranks are {2, 3, 6, 7, 10, 11,
 * 14, 15}. */
static ModelMesh
mesh_tp2_pp2_dp4 (ModelMeshOrder order)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_TP] = 2;
  m.degree[MODEL_MESH_PP] = 2;
  m.degree[MODEL_MESH_DP_REPLICATE] = 4;
  m.order = order;
  return m;
}

static gboolean
ranks_are (const guint *ranks, guint n, const guint *want, guint n_want)
{
  return n == n_want && memcmp (ranks, want, n * sizeof (guint)) == 0;
}

static void
test_order_groups (void)
{
  guint r[16];
  ModelMesh a = mesh_tp2_pp2_dp4 (MODEL_MESH_ORDER_TP_CP_EP_DP_PP);
  ModelMesh b = mesh_tp2_pp2_dp4 (MODEL_MESH_ORDER_TP_CP_EP_PP_DP);
  guint pp = MODEL_MESH_BIT (MODEL_MESH_PP), tp = MODEL_MESH_BIT (MODEL_MESH_TP);
  CU_ASSERT (ranks_are (r, model_mesh_group (&a, 0, pp, r, NULL), (guint[]){ 0, 8 }, 2));
  CU_ASSERT (ranks_are (r, model_mesh_group (&a, 0, MODEL_MESH_DP, r, NULL),
                        (guint[]){ 0, 2, 4, 6 }, 4));
  CU_ASSERT (ranks_are (r, model_mesh_group (&b, 0, pp, r, NULL), (guint[]){ 0, 2 }, 2));
  CU_ASSERT (ranks_are (r, model_mesh_group (&b, 0, MODEL_MESH_DP, r, NULL),
                        (guint[]){ 0, 4, 8, 12 }, 4));
  CU_ASSERT (ranks_are (r, model_mesh_group (&b, 0, tp, r, NULL), (guint[]){ 0, 1 }, 2));
  CU_ASSERT_EQUAL (model_mesh_stride (&b, MODEL_MESH_PP), 2);
  CU_ASSERT_EQUAL (model_mesh_stride (&b, MODEL_MESH_DP_REPLICATE), 4);
  /* pp spans 4 ranks, inside the 8-GPU node; dp spans 16 */
  CU_ASSERT (model_mesh_intra_node (&b, MODEL_MESH_PP));
  CU_ASSERT (!model_mesh_intra_node (&a, MODEL_MESH_PP));
  CU_ASSERT (!model_mesh_intra_node (&b, MODEL_MESH_DP_REPLICATE));
  CU_ASSERT_EQUAL (model_mesh_stage_of (&a, 6), 0);
  CU_ASSERT_EQUAL (model_mesh_stage_of (&b, 6), 1);
  CU_ASSERT_EQUAL (model_mesh_stage_local (&b, 6), 2);
  CU_ASSERT (model_mesh_stages_contiguous (&a) && !model_mesh_stages_contiguous (&b));
  guint stage1[8], k = 0;
  for (guint i = 0; i < model_mesh_stage_size (&b); i++)
    stage1[k++] = model_mesh_stage_rank (&b, 1, i);
  CU_ASSERT (ranks_are (stage1, k, (guint[]){ 2, 3, 6, 7, 10, 11, 14, 15 }, 8));
  for (guint x = 0; x < 16; x++)
    {
      guint c[MODEL_MESH_N_DIMS];
      model_mesh_coords (&b, x, c);
      CU_ASSERT_EQUAL (model_mesh_rank (&b, c), x);
      CU_ASSERT_EQUAL (c[MODEL_MESH_PP], model_mesh_stage_of (&b, x));
      CU_ASSERT_EQUAL (model_mesh_stage_rank (&b, model_mesh_stage_of (&b, x),
                                              model_mesh_stage_local (&b, x)), x);
      CU_ASSERT_EQUAL (model_mesh_stage_rank (&a, model_mesh_stage_of (&a, x),
                                              model_mesh_stage_local (&a, x)), x);
    }
}

/* Megatron's RankGenerator, ported: the order string innermost first, each name's stride
 * the product of the sizes before it (generate_masked_orthogonal_rank_groups), so a rank's
 * coordinate along `name` is rank / stride mod size. For tp 2 × cp 2 × pp 2 × dp 2 (16
 * ranks, dp as dp_shard) under both orders, every rank's coordinates are stepsim's. */
static guint
megatron_coord (const char *order, const guint *sizes, const char *const *names, guint n_names,
                guint rank, const char *name)
{
  g_auto (GStrv) tokens = g_strsplit (order, "-", -1);
  guint stride = 1;
  for (guint t = 0; tokens[t] != NULL; t++)
    for (guint i = 0; i < n_names; i++)
      if (strcmp (tokens[t], names[i]) == 0)
        {
          if (strcmp (names[i], name) == 0)
            return rank / stride % sizes[i];
          stride *= sizes[i];
        }
  g_assert_not_reached ();
}

static void
test_order_megatron (void)
{
  static const char *const names[] = { "tp", "cp", "ep", "dp", "pp" };
  const guint sizes[] = { 2, 2, 1, 2, 2 };
  const ModelMeshDim dims[] = { MODEL_MESH_TP, MODEL_MESH_CP, MODEL_MESH_N_DIMS,
                                MODEL_MESH_DP_SHARD, MODEL_MESH_PP };
  for (guint o = 0; o < MODEL_MESH_N_ORDERS; o++)
    {
      ModelMesh m;
      model_mesh_init (&m, 8);
      m.degree[MODEL_MESH_TP] = m.degree[MODEL_MESH_CP] = 2;
      m.degree[MODEL_MESH_DP_SHARD] = m.degree[MODEL_MESH_PP] = 2;
      m.order = (ModelMeshOrder) o;
      const char *order = model_mesh_order_name (m.order);
      gboolean same = TRUE;
      for (guint r = 0; r < 16; r++)
        {
          guint c[MODEL_MESH_N_DIMS];
          model_mesh_coords (&m, r, c);
          for (guint i = 0; i < G_N_ELEMENTS (names); i++)
            if (dims[i] != MODEL_MESH_N_DIMS)
              same = same && c[dims[i]] == megatron_coord (order, sizes, names, 5, r, names[i]);
        }
      CU_ASSERT (same);
    }
}

/* Experts under "tp-cp-ep-pp-dp": Megatron's expert generator (tp = etp 1, ep 2, cp 1, pp 2,
 * dp = edp 4, the same order) numbers rank ((edp·2 + pp)·2 + ep); on tp 2 × pp 2 × dp 4 it
 * must give the dense pp groups (parallel_state.py asserts it; etp·ep = 2 = cp·tp). Rank 5
 * (edp 1, pp 0, ep 1): EP group {4, 5}, EDP group {1, 5, 9, 13}. ep 4 (≠ cp·tp) is refused
 * naming the key 'order'; with pp 1 the orders coincide and ep 4 is fine. */
static void
test_order_experts (void)
{
  ModelMesh m = mesh_tp2_pp2_dp4 (MODEL_MESH_ORDER_TP_CP_EP_PP_DP);
  m.ep = 2;
  CU_ASSERT (model_mesh_validate (&m, 16, NULL));
  guint r[16];
  CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, 5, MODEL_MESH_EXPERT_EP, r),
                        (guint[]){ 4, 5 }, 2));
  CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, 5, MODEL_MESH_EXPERT_DP, r),
                        (guint[]){ 1, 5, 9, 13 }, 4));
  gboolean stage_kept = TRUE; /* every expert group inside its rank's stage */
  for (guint x = 0; x < 16; x++)
    for (guint d = 0; d < MODEL_MESH_N_EXPERT_DIMS; d++)
      {
        guint k = model_mesh_expert_group (&m, x, (ModelMeshExpertDim) d, r);
        for (guint i = 0; i < k; i++)
          stage_kept = stage_kept && model_mesh_stage_of (&m, r[i]) == model_mesh_stage_of (&m, x);
      }
  CU_ASSERT (stage_kept);
  m.ep = 4;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_mesh_validate (&m, 16, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "key 'order'") != NULL
             && strstr (e->message, "ep × etp = cp × tp") != NULL);
  m.degree[MODEL_MESH_PP] = 1;
  m.degree[MODEL_MESH_DP_REPLICATE] = 8;
  CU_ASSERT (model_mesh_validate (&m, 16, NULL));
}

/* Experts carved across context parallelism (parallel_state.py: the expert generator is
 * RankGenerator(tp = etp, ep, dp = edp, pp, cp = 1) over the same world, its groups from
 * generate_masked_orthogonal_rank_groups, innermost first). 8 GPUs, tp 1 × cp 2 × dp 4 (order
 * tp-cp-ep-dp-pp): dense rank = cp + 2·dp, so the cp groups are {0, 1}, {2, 3}, …. With ep 4
 * (etp 1, edp = 8 / 4 = 2) expert rank = ep + 4·edp: EP groups {0, 1, 2, 3} and {4, 5, 6, 7}
 * — each spans both cp ranks of two dp ranks —, expert-dp groups {r, r + 4}. With tp 2 ×
 * cp 2 × dp 2 (dense rank = tp + 2·cp + 4·dp) and ep 2, etp 1 (edp 4): EP group of rank 0
 * {0, 1} (its tp pair), expert-dp group {0, 2, 4, 6} = _EXPERT_DATA_PARALLEL_GROUP, which
 * holds cp ranks 0 and 1 (ranks 0 and 2) of dp ranks 0 and 1: the dense dp·cp group of
 * rank 0 is the same set. ep 16 does not divide the 8 ranks. */
static void
test_expert_carving_cp (void)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_CP] = 2;
  m.degree[MODEL_MESH_DP_SHARD] = 4;
  m.ep = 4;
  CU_ASSERT (model_mesh_validate (&m, 8, NULL));
  CU_ASSERT_EQUAL (model_mesh_expert_degree (&m, MODEL_MESH_EXPERT_DP), 2);
  guint r[8], c[MODEL_MESH_N_DIMS];
  for (guint x = 0; x < 8; x++)
    {
      guint base = x < 4 ? 0 : 4;
      CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, x, MODEL_MESH_EXPERT_EP, r),
                            (guint[]){ base, base + 1, base + 2, base + 3 }, 4));
      CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, x, MODEL_MESH_EXPERT_DP, r),
                            (guint[]){ x % 4, x % 4 + 4 }, 2));
    }
  CU_ASSERT (ranks_are (r, model_mesh_group (&m, 0, MODEL_MESH_BIT (MODEL_MESH_CP), r, NULL),
                        (guint[]){ 0, 1 }, 2));
  model_mesh_coords (&m, 1, c);
  CU_ASSERT (c[MODEL_MESH_CP] == 1 && c[MODEL_MESH_DP_SHARD] == 0);
  model_mesh_coords (&m, 3, c);
  CU_ASSERT (c[MODEL_MESH_CP] == 1 && c[MODEL_MESH_DP_SHARD] == 1);

  m.degree[MODEL_MESH_TP] = 2;
  m.degree[MODEL_MESH_DP_SHARD] = 2;
  m.ep = 2;
  CU_ASSERT (model_mesh_validate (&m, 8, NULL));
  CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, 0, MODEL_MESH_EXPERT_EP, r),
                        (guint[]){ 0, 1 }, 2));
  CU_ASSERT (ranks_are (r, model_mesh_expert_group (&m, 0, MODEL_MESH_EXPERT_DP, r),
                        (guint[]){ 0, 2, 4, 6 }, 4));
  CU_ASSERT (ranks_are (r, model_mesh_group (&m, 0, MODEL_MESH_DP | MODEL_MESH_BIT (MODEL_MESH_CP),
                                             r, NULL),
                        (guint[]){ 0, 2, 4, 6 }, 4));
  model_mesh_coords (&m, 2, c);
  CU_ASSERT (c[MODEL_MESH_CP] == 1 && c[MODEL_MESH_DP_SHARD] == 0 && c[MODEL_MESH_TP] == 0);
  m.ep = 16;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_mesh_validate (&m, 8, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "ep 16") != NULL
             && strstr (e->message, "dp·cp·tp = 8") != NULL);
}

/* The spellings: Megatron's two orders and their short forms; anything else an error
 * listing them. */
static void
test_order_parse (void)
{
  ModelMeshOrder o = MODEL_MESH_N_ORDERS;
  CU_ASSERT (model_mesh_order_from_string ("tp-cp-ep-dp-pp", &o, NULL)
             && o == MODEL_MESH_ORDER_TP_CP_EP_DP_PP);
  CU_ASSERT (model_mesh_order_from_string ("tp-pp-dp", &o, NULL)
             && o == MODEL_MESH_ORDER_TP_CP_EP_PP_DP);
  CU_ASSERT (model_mesh_order_from_string ("tp-cp-pp-dp", &o, NULL)
             && o == MODEL_MESH_ORDER_TP_CP_EP_PP_DP);
  CU_ASSERT (model_mesh_order_from_string ("tp-dp-pp", &o, NULL)
             && o == MODEL_MESH_ORDER_TP_CP_EP_DP_PP);
  CU_ASSERT_STRING_EQUAL (model_mesh_order_name (MODEL_MESH_ORDER_TP_CP_EP_PP_DP),
                          "tp-cp-ep-pp-dp");
  static const char *const bad[] = { "pp-dp-tp", "tp-ep-cp-dp-pp", "TP-PP-DP", "", "tp-cp-ep-dp" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) e = NULL;
      CU_ASSERT (!model_mesh_order_from_string (bad[i], &o, &e));
      CU_ASSERT (e != NULL && strstr (e->message, "tp-cp-ep-pp-dp") != NULL
                 && strstr (e->message, "tp-cp-ep-dp-pp") != NULL);
    }
}

/* Shifts that keep stages (rank classes): on tp 2 × pp 2 × dp 4 under tp-cp-ep-pp-dp
 * (stages alternate every 2 ranks), a shift by one pipeline replica (4 ranks) in blocks of
 * 16 or 8 and the swap inside each tp pair keep every rank's stage; a shift by 2 over all
 * 16 (stage 0 onto stage 1) and a rotation inside each replica (blocks of 4 by 1) do not.
 * Under the default order (stages are blocks of 8) a shift inside blocks of 8 keeps them,
 * the shift by 2 over all 16 does not. */
static void
test_order_shifts (void)
{
  ModelMesh b = mesh_tp2_pp2_dp4 (MODEL_MESH_ORDER_TP_CP_EP_PP_DP);
  HwRankShift s1 = hw_rank_shift_plain (16, 16, 4), s2 = hw_rank_shift_plain (16, 2, 1);
  HwRankShift s3 = hw_rank_shift_plain (16, 16, 2), s4 = hw_rank_shift_plain (16, 8, 4);
  HwRankShift s5 = hw_rank_shift_plain (16, 4, 1);
  CU_ASSERT (model_mesh_shift_keeps_stages (&b, &s1));
  CU_ASSERT (model_mesh_shift_keeps_stages (&b, &s2));
  CU_ASSERT (!model_mesh_shift_keeps_stages (&b, &s3));
  CU_ASSERT (model_mesh_shift_keeps_stages (&b, &s4));
  CU_ASSERT (!model_mesh_shift_keeps_stages (&b, &s5));
  ModelMesh a = mesh_tp2_pp2_dp4 (MODEL_MESH_ORDER_TP_CP_EP_DP_PP);
  HwRankShift s6 = hw_rank_shift_plain (16, 8, 2);
  CU_ASSERT (model_mesh_shift_keeps_stages (&a, &s6));
  CU_ASSERT (!model_mesh_shift_keeps_stages (&a, &s3));
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "mesh rank mapping, innermost on NVLink", test_rank_mapping },
    { "mesh groups", test_groups },
    { "Megatron expert carving", test_expert_carving },
    { "expert tensor parallel carving (etp 2 × ep 4)", test_expert_tp_carving },
    { "mesh degrees must make the GPU count", test_mesh_product_error },
    { "rank order: groups and stages under both orders", test_order_groups },
    { "rank order: coordinates are Megatron's RankGenerator's", test_order_megatron },
    { "rank order: experts under tp-cp-ep-pp-dp", test_order_experts },
    { "experts carved across cp (tp 1 cp 2 ep 4; tp 2 cp 2 ep 2)", test_expert_carving_cp },
    { "rank order: accepted spellings", test_order_parse },
    { "rank order: shifts that keep stages", test_order_shifts },
    { "placement local shapes and divisibility", test_local_shape },
    { "each placement change implies its collective", test_redistribute_each_change },
    { "hybrid reduction: inner dimension first", test_redistribute_hybrid_order },
    { "ZeRO Fig. 1 model states from placements", test_zero_fig1_from_placements },
    { "DP modes derive their collectives", test_modes_derive_collectives },
    { "DP modes on the mesh", test_mode_mesh },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/mesh", tests);
}
