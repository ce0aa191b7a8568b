/* models/parallel/mesh.c — the device mesh's rank map and groups; see mesh.h. */
#include "config.h"
#include "models/parallel/mesh.h"

static const char *const dim_names[MODEL_MESH_N_DIMS] = {
  "pp", "dp_replicate", "dp_shard", "cp", "tp",
};

void
model_mesh_init (ModelMesh *mesh, guint gpus_per_node)
{
  g_return_if_fail (mesh != NULL);
  *mesh = (ModelMesh){ .gpus_per_node = MAX (gpus_per_node, 1), .ep = 1, .etp = 1 };
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
                   "expert degrees ep %u × etp %u must divide the dp·cp·tp = %u ranks of a "
                   "pipeline stage", mesh->ep, mesh->etp, inner);
      return FALSE;
    }
  return TRUE;
}

guint
model_mesh_stride (const ModelMesh *mesh, ModelMeshDim dim)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_DIMS, 1);
  guint stride = 1;
  for (guint d = dim + 1; d < MODEL_MESH_N_DIMS; d++)
    stride *= mesh->degree[d];
  return stride;
}

void
model_mesh_coords (const ModelMesh *mesh, guint rank, guint *coords)
{
  g_return_if_fail (rank < model_mesh_size (mesh));
  for (guint d = MODEL_MESH_N_DIMS; d-- > 0;)
    {
      coords[d] = rank % mesh->degree[d];
      rank /= mesh->degree[d];
    }
}

guint
model_mesh_rank (const ModelMesh *mesh, const guint *coords)
{
  guint rank = 0;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    {
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
  /* Row-major over the group's own dimensions: increasing ranks. */
  for (guint i = 0; i < count; i++)
    {
      guint rest = i;
      for (guint d = MODEL_MESH_N_DIMS; d-- > 0;)
        {
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

guint
model_mesh_expert_group (const ModelMesh *mesh, guint rank, ModelMeshExpertDim dim,
                         guint *ranks)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_EXPERT_DIMS, 0);
  /* Within the stage, local = etp_coord + etp·(ep_coord + ep·edp_coord) (Megatron's
   * RankGenerator over "tp-cp-ep-dp-pp" with cp = 1). */
  guint stage_size = model_mesh_size (mesh) / mesh->degree[MODEL_MESH_PP];
  guint base = rank - rank % stage_size, local = rank % stage_size;
  guint stride = dim == MODEL_MESH_EXPERT_TP || dim == MODEL_MESH_EXPERT_TP_EP ? 1
                 : dim == MODEL_MESH_EXPERT_EP ? mesh->etp
                                               : mesh->etp * mesh->ep;
  guint n = model_mesh_expert_degree (mesh, dim);
  guint coord = (local / stride) % n;
  guint first = local - coord * stride;
  for (guint i = 0; i < n; i++)
    ranks[i] = base + first + i * stride;
  return n;
}
