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

int
main (void)
{
  static const StepsimTest tests[] = {
    { "mesh rank mapping, innermost on NVLink", test_rank_mapping },
    { "mesh groups", test_groups },
    { "Megatron expert carving", test_expert_carving },
    { "expert tensor parallel carving (etp 2 × ep 4)", test_expert_tp_carving },
    { "mesh degrees must make the GPU count", test_mesh_product_error },
    { "placement local shapes and divisibility", test_local_shape },
    { "each placement change implies its collective", test_redistribute_each_change },
    { "hybrid reduction: inner dimension first", test_redistribute_hybrid_order },
    { "ZeRO Fig. 1 model states from placements", test_zero_fig1_from_placements },
    { "DP modes derive their collectives", test_modes_derive_collectives },
    { "DP modes on the mesh", test_mode_mesh },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/mesh", tests);
}
