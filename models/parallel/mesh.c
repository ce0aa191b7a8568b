/* models/parallel/mesh.c — the device mesh's rank map and groups; see mesh.h. */
#include "config.h"
#include "models/parallel/mesh.h"

static const char *const dim_names[MODEL_MESH_N_DIMS] = {
  "pp", "dp_replicate", "dp_shard", "cp", "tp",
};

/* The rank layout of each order, outermost dimension first (Megatron spells it innermost
 * first: "tp-cp-ep-dp-pp" is pp, dp, cp, tp from the outside in; dp = dp_replicate ×
 * dp_shard, replicate outer as torchtitan's). ep is no dense mesh dimension: it is carved
 * out of a stage's ranks (model_mesh_expert_group). */
static const ModelMeshDim layouts[MODEL_MESH_N_ORDERS][MODEL_MESH_N_DIMS] = {
  [MODEL_MESH_ORDER_TP_CP_EP_DP_PP] = { MODEL_MESH_PP, MODEL_MESH_DP_REPLICATE,
                                        MODEL_MESH_DP_SHARD, MODEL_MESH_CP, MODEL_MESH_TP },
  [MODEL_MESH_ORDER_TP_CP_EP_PP_DP] = { MODEL_MESH_DP_REPLICATE, MODEL_MESH_DP_SHARD,
                                        MODEL_MESH_PP, MODEL_MESH_CP, MODEL_MESH_TP },
};

/* Accepted spellings of each order: Megatron's full one first (its canonical name), then
 * the same order with the dimensions stepsim places by itself left out (cp is always just
 * outside tp, ep is carved inside a stage). */
static const char *const order_spellings[MODEL_MESH_N_ORDERS][4] = {
  [MODEL_MESH_ORDER_TP_CP_EP_DP_PP] = { "tp-cp-ep-dp-pp", "tp-cp-dp-pp", "tp-ep-dp-pp",
                                        "tp-dp-pp" },
  [MODEL_MESH_ORDER_TP_CP_EP_PP_DP] = { "tp-cp-ep-pp-dp", "tp-cp-pp-dp", "tp-ep-pp-dp",
                                        "tp-pp-dp" },
};

static inline const ModelMeshDim *
layout_of (const ModelMesh *mesh)
{
  return layouts[mesh->order < MODEL_MESH_N_ORDERS ? mesh->order : 0];
}

const char *
model_mesh_order_name (ModelMeshOrder order)
{
  g_return_val_if_fail (order < MODEL_MESH_N_ORDERS, NULL);
  return order_spellings[order][0];
}

gboolean
model_mesh_order_from_string (const char *text, ModelMeshOrder *order, GError **error)
{
  g_return_val_if_fail (text != NULL && order != NULL, FALSE);
  for (guint o = 0; o < MODEL_MESH_N_ORDERS; o++)
    for (guint i = 0; i < G_N_ELEMENTS (order_spellings[o]); i++)
      if (g_strcmp0 (text, order_spellings[o][i]) == 0)
        {
          *order = (ModelMeshOrder) o;
          return TRUE;
        }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown order '%s' (Megatron's spelling, innermost first; accepted: "
               "tp-cp-ep-dp-pp (default; also tp-cp-dp-pp, tp-ep-dp-pp, tp-dp-pp) or "
               "tp-cp-ep-pp-dp (Megatron --use-tp-pp-dp-mapping; also tp-cp-pp-dp, "
               "tp-ep-pp-dp, tp-pp-dp))", text);
  return FALSE;
}

void
model_mesh_init (ModelMesh *mesh, guint gpus_per_node)
{
  g_return_if_fail (mesh != NULL);
  *mesh = (ModelMesh){ .gpus_per_node = MAX (gpus_per_node, 1), .ep = 1, .etp = 1,
                       .order = MODEL_MESH_ORDER_TP_CP_EP_DP_PP };
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    mesh->degree[d] = 1;
}

const char *
model_mesh_dim_name (ModelMeshDim dim)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_DIMS, NULL);
  return dim_names[dim];
}

guint
model_mesh_size (const ModelMesh *mesh)
{
  guint n = 1;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    n *= mesh->degree[d];
  return n;
}

gboolean
model_mesh_validate (const ModelMesh *mesh, guint n_gpus, GError **error)
{
  guint64 product = 1;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    {
      if (mesh->degree[d] < 1)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "key '%s': a mesh degree must be >= 1", dim_names[d]);
          return FALSE;
        }
      product *= mesh->degree[d];
    }
  if (product != n_gpus)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "mesh degrees pp %u × dp_replicate %u × dp_shard %u × cp %u × tp %u = %"
                   G_GUINT64_FORMAT " ranks, but the cluster has %u GPUs",
                   mesh->degree[MODEL_MESH_PP], mesh->degree[MODEL_MESH_DP_REPLICATE],
                   mesh->degree[MODEL_MESH_DP_SHARD], mesh->degree[MODEL_MESH_CP],
                   mesh->degree[MODEL_MESH_TP], product, n_gpus);
      return FALSE;
    }
  guint inner = (guint) (product / mesh->degree[MODEL_MESH_PP]);
  if (mesh->ep < 1 || mesh->etp < 1 || inner % (mesh->ep * mesh->etp) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "expert degrees ep %u × etp %u must divide the dp·cp·tp = %u rank%s of a "
                   "pipeline stage", mesh->ep, mesh->etp, inner, inner == 1 ? "" : "s");
      return FALSE;
    }
  guint ct = mesh->degree[MODEL_MESH_CP] * mesh->degree[MODEL_MESH_TP];
  if (mesh->order >= MODEL_MESH_N_ORDERS)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "key 'order': no such mesh order (%u)", (guint) mesh->order);
      return FALSE;
    }
  /* Megatron (parallel_state.py, initialize_model_parallel) asserts that the expert rank
   * generator's pp groups equal the dense one's, and that an order not ending in pp keeps
   * the expert-dp degree equal to dp: with pp inside dp, the expert grid etp × ep must be
   * the cp × tp block a stage holds between two pp neighbours. */
  if (mesh->order == MODEL_MESH_ORDER_TP_CP_EP_PP_DP && mesh->degree[MODEL_MESH_PP] > 1
      && mesh->ep * mesh->etp > 1 && mesh->ep * mesh->etp != ct)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "key 'order': tp-cp-ep-pp-dp with pp %u needs ep × etp = cp × tp (here "
                   "ep %u × etp %u, cp %u × tp %u): with pp inside dp Megatron's expert and "
                   "dense pipeline groups differ otherwise (parallel_state.py asserts they "
                   "match); use the default order tp-cp-ep-dp-pp",
                   mesh->degree[MODEL_MESH_PP], mesh->ep, mesh->etp,
                   mesh->degree[MODEL_MESH_CP], mesh->degree[MODEL_MESH_TP]);
      return FALSE;
    }
  return TRUE;
}

guint
model_mesh_stride (const ModelMesh *mesh, ModelMeshDim dim)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_DIMS, 1);
  const ModelMeshDim *lay = layout_of (mesh);
  guint stride = 1;
  for (guint i = MODEL_MESH_N_DIMS; i-- > 0 && lay[i] != dim;)
    stride *= mesh->degree[lay[i]];
  return stride;
}

void
model_mesh_coords (const ModelMesh *mesh, guint rank, guint *coords)
{
  g_return_if_fail (rank < model_mesh_size (mesh));
  const ModelMeshDim *lay = layout_of (mesh);
  for (guint i = MODEL_MESH_N_DIMS; i-- > 0;)
    {
      ModelMeshDim d = lay[i];
      coords[d] = rank % mesh->degree[d];
      rank /= mesh->degree[d];
    }
}

guint
model_mesh_rank (const ModelMesh *mesh, const guint *coords)
{
  const ModelMeshDim *lay = layout_of (mesh);
  guint rank = 0;
  for (guint i = 0; i < MODEL_MESH_N_DIMS; i++)
    {
      ModelMeshDim d = lay[i];
      g_return_val_if_fail (coords[d] < mesh->degree[d], 0);
      rank = rank * mesh->degree[d] + coords[d];
    }
  return rank;
}

gboolean
model_mesh_intra_node (const ModelMesh *mesh, ModelMeshDim dim)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_DIMS, FALSE);
  if (mesh->degree[dim] <= 1)
    return TRUE;
  guint span = model_mesh_stride (mesh, dim) * mesh->degree[dim];
  return span <= mesh->gpus_per_node && mesh->gpus_per_node % span == 0;
}

guint
model_mesh_group (const ModelMesh *mesh, guint rank, guint dims, guint *ranks, guint *index)
{
  guint coords[MODEL_MESH_N_DIMS], walk[MODEL_MESH_N_DIMS];
  model_mesh_coords (mesh, rank, coords);
  guint count = 1, which = 0;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    {
      if (dims & MODEL_MESH_BIT (d))
        count *= mesh->degree[d];
      else
        which = which * mesh->degree[d] + coords[d];
    }
  if (index != NULL)
    *index = which;
  /* Row-major over the group's own dimensions in the layout's order: increasing ranks. */
  const ModelMeshDim *lay = layout_of (mesh);
  for (guint i = 0; i < count; i++)
    {
      guint rest = i;
      for (guint j = MODEL_MESH_N_DIMS; j-- > 0;)
        {
          ModelMeshDim d = lay[j];
          if (dims & MODEL_MESH_BIT (d))
            {
              walk[d] = rest % mesh->degree[d];
              rest /= mesh->degree[d];
            }
          else
            walk[d] = coords[d];
        }
      ranks[i] = model_mesh_rank (mesh, walk);
    }
  return count;
}

guint
model_mesh_expert_degree (const ModelMesh *mesh, ModelMeshExpertDim dim)
{
  switch (dim)
    {
    case MODEL_MESH_EXPERT_TP:
      return mesh->etp;
    case MODEL_MESH_EXPERT_EP:
      return mesh->ep;
    case MODEL_MESH_EXPERT_TP_EP:
      return mesh->etp * mesh->ep;
    case MODEL_MESH_EXPERT_DP:
    default:
      return model_mesh_size (mesh) / mesh->degree[MODEL_MESH_PP] / (mesh->ep * mesh->etp);
    }
}

gboolean
model_mesh_expert_dp_own (const ModelMesh *mesh)
{
  return mesh->ep * mesh->etp > 1 || mesh->degree[MODEL_MESH_TP] > 1;
}

guint
model_mesh_expert_group (const ModelMesh *mesh, guint rank, ModelMeshExpertDim dim,
                         guint *ranks)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_EXPERT_DIMS, 0);
  /* Within the stage, local = etp_coord + etp·(ep_coord + ep·edp_coord) (Megatron's
   * RankGenerator over the order with cp = 1: under tp-cp-ep-dp-pp the stage is a block
   * and local its offset; under tp-cp-ep-pp-dp, where model_mesh_validate asks etp·ep =
   * cp·tp, Megatron's expert rank ((edp·pp + s)·ep + ep_coord)·etp + etp_coord is the
   * stage-local index model_mesh_stage_local gives). */
  guint stage = model_mesh_stage_of (mesh, rank), local = model_mesh_stage_local (mesh, rank);
  guint stride = dim == MODEL_MESH_EXPERT_TP || dim == MODEL_MESH_EXPERT_TP_EP ? 1
                 : dim == MODEL_MESH_EXPERT_EP ? mesh->etp
                                               : mesh->etp * mesh->ep;
  guint n = model_mesh_expert_degree (mesh, dim);
  guint coord = (local / stride) % n;
  guint first = local - coord * stride;
  for (guint i = 0; i < n; i++)
    ranks[i] = model_mesh_stage_rank (mesh, stage, first + i * stride);
  return n;
}

guint
model_mesh_stage_of (const ModelMesh *mesh, guint rank)
{
  guint stride = model_mesh_stride (mesh, MODEL_MESH_PP);
  return rank / stride % mesh->degree[MODEL_MESH_PP];
}

guint
model_mesh_stage_size (const ModelMesh *mesh)
{
  return model_mesh_size (mesh) / mesh->degree[MODEL_MESH_PP];
}

/* A stage's ranks are the mesh with the pp coordinate fixed: split a rank at pp into the
 * part outside it (hi, in units of pp·stride) and inside it (lo < stride). */
guint
model_mesh_stage_local (const ModelMesh *mesh, guint rank)
{
  guint stride = model_mesh_stride (mesh, MODEL_MESH_PP);
  guint span = stride * mesh->degree[MODEL_MESH_PP];
  return rank / span * stride + rank % stride;
}

guint
model_mesh_stage_rank (const ModelMesh *mesh, guint stage, guint local)
{
  g_return_val_if_fail (stage < mesh->degree[MODEL_MESH_PP], 0);
  guint stride = model_mesh_stride (mesh, MODEL_MESH_PP);
  guint span = stride * mesh->degree[MODEL_MESH_PP];
  return local / stride * span + stage * stride + local % stride;
}

gboolean
model_mesh_stages_contiguous (const ModelMesh *mesh)
{
  return mesh->degree[MODEL_MESH_PP] == 1
         || model_mesh_stride (mesh, MODEL_MESH_PP) == model_mesh_stage_size (mesh);
}

/* One plain generator (blocks of g, shift d): see model_mesh_shift_keeps_stages. */
static gboolean
plain_keeps_stages (const ModelMesh *mesh, guint n, guint g, guint d)
{
  guint pp = mesh->degree[MODEL_MESH_PP], run = model_mesh_stride (mesh, MODEL_MESH_PP);
  guint span = run * pp;
  if (pp == 1 || d == g || run % g == 0 || (g % span == 0 && d % span == 0))
    return TRUE;
  HwRankShift sh = hw_rank_shift_plain (n, g, d);
  for (guint r = 0; r < n; r++)
    if (r / run % pp != hw_rank_shift_image (&sh, r) / run % pp)
      return FALSE;
  return TRUE;
}

gboolean
model_mesh_shift_keeps_stages (const ModelMesh *mesh, const HwRankShift *shift)
{
  g_return_val_if_fail (mesh != NULL && shift != NULL, FALSE);
  guint n = model_mesh_size (mesh);
  g_return_val_if_fail (shift->n == n && hw_rank_shift_valid (shift), FALSE);
  for (guint i = 0; i < HW_RANK_SHIFT_LEVELS; i++)
    if (!plain_keeps_stages (mesh, n, shift->level[i].block, shift->level[i].d))
      return FALSE;
  return TRUE;
}
