/* models/parallel/placement.c — placements on the mesh and their redistribution; see
 * placement.h. */
#include "config.h"
#include "models/parallel/placement.h"

ModelPlacements
model_placements_replicate (void)
{
  ModelPlacements pl;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    pl.on[d] = (ModelPlacement){ MODEL_PLACEMENT_REPLICATE, 0 };
  return pl;
}

char *
model_placements_to_string (const ModelPlacements *pl)
{
  GString *s = g_string_new ("[");
  for (guint d = MODEL_MESH_N_DIMS; d-- > 0;)
    {
      const ModelPlacement *p = &pl->on[d];
      if (p->kind == MODEL_PLACEMENT_REPLICATE)
        continue;
      if (s->len > 1)
        g_string_append (s, ", ");
      if (p->kind == MODEL_PLACEMENT_PARTIAL)
        g_string_append (s, "P");
      else if (p->dim == MODEL_PLACEMENT_FLAT)
        g_string_append (s, "S(flat)");
      else
        g_string_append_printf (s, "S(%d)", p->dim);
      g_string_append_printf (s, " on %s", model_mesh_dim_name ((ModelMeshDim) d));
    }
  if (s->len == 1)
    g_string_append (s, "R");
  g_string_append (s, "]");
  return g_string_free (s, FALSE);
}

gboolean
model_placements_any_shard (const ModelPlacements *pl)
{
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    if (pl->on[d].kind == MODEL_PLACEMENT_SHARD)
      return TRUE;
  return FALSE;
}

guint
model_placement_ways (const ModelPlacements *pl, const ModelMesh *mesh)
{
  guint ways = 1;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    if (pl->on[d].kind == MODEL_PLACEMENT_SHARD)
      ways *= mesh->degree[d];
  return ways;
}

gboolean
model_placements_sharded (const ModelPlacements *pl, const ModelMesh *mesh)
{
  return model_placement_ways (pl, mesh) > 1;
}

double
model_placement_local_bytes (const ModelPlacements *pl, const ModelMesh *mesh, double bytes)
{
  return bytes / model_placement_ways (pl, mesh);
}

double
model_placement_local_fraction (const ModelPlacements *pl, const ModelMesh *mesh)
{
  return 1.0 / model_placement_ways (pl, mesh);
}

gboolean
model_placement_local_shape (const ModelPlacements *pl, const ModelMesh *mesh,
                             const guint64 *shape, guint ndim, guint64 *out, guint *out_ndim,
                             GError **error)
{
  g_return_val_if_fail (ndim >= 1 && ndim <= 8, FALSE);
  guint n = ndim;
  for (guint i = 0; i < ndim; i++)
    out[i] = shape[i];
  gboolean flat = FALSE;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    flat = flat || (pl->on[d].kind == MODEL_PLACEMENT_SHARD && pl->on[d].dim == MODEL_PLACEMENT_FLAT);
  if (flat)
    {
      for (guint i = 1; i < ndim; i++)
        out[0] *= out[i];
      n = 1;
    }
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    {
      const ModelPlacement *p = &pl->on[d];
      if (p->kind != MODEL_PLACEMENT_SHARD)
        continue;
      guint axis = p->dim == MODEL_PLACEMENT_FLAT ? 0 : (guint) p->dim;
      if (p->dim != MODEL_PLACEMENT_FLAT && (p->dim < 0 || axis >= n || flat))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "Shard(%d) on %s: the tensor has %u dimension%s", p->dim,
                       model_mesh_dim_name ((ModelMeshDim) d), n, n == 1 ? "" : "s");
          return FALSE;
        }
      guint degree = mesh->degree[d];
      if (p->dim == MODEL_PLACEMENT_FLAT)
        {
          /* FSDP and ZeRO pad the flat buffer to a multiple of the group: each rank holds
           * ⌈n / N⌉ elements (placement.h) */
          out[axis] = (out[axis] + degree - 1) / degree;
          continue;
        }
      if (out[axis] % degree != 0)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "tensor dim %u of size %" G_GUINT64_FORMAT
                       " does not divide over %s of degree %u", axis, out[axis],
                       model_mesh_dim_name ((ModelMeshDim) d), degree);
          return FALSE;
        }
      out[axis] /= degree;
    }
  *out_ndim = n;
  return TRUE;
}

/* Appends the collective of dimension `dim`, or merges it into the cp change just before
 * it when the two make the same collective and the dimensions between are of degree 1
 * (placement.h: one dp·cp group). */
static void
add (GArray *out, const ModelMesh *mesh, HwCollectiveKind kind, guint dim, double bytes)
{
  if (out->len > 0)
    {
      ModelPlacementComm *last = &g_array_index (out, ModelPlacementComm, out->len - 1);
      gboolean between_trivial = TRUE;
      for (guint d = dim + 1; d < MODEL_MESH_CP; d++)
        between_trivial = between_trivial && mesh->degree[d] == 1;
      if (last->dims == MODEL_MESH_BIT (MODEL_MESH_CP) && last->kind == kind
          && kind != HW_COLLECTIVE_ALL_TO_ALL && dim < MODEL_MESH_CP && between_trivial)
        {
          for (guint d = dim; d < MODEL_MESH_CP; d++)
            last->dims |= MODEL_MESH_BIT (d);
          if (kind == HW_COLLECTIVE_ALL_GATHER)
            last->bytes = bytes;
          return;
        }
    }
  ModelPlacementComm c = { kind, (ModelMeshDim) dim, MODEL_MESH_BIT (dim), bytes };
  g_array_append_val (out, c);
}

gboolean
model_placement_redistribute (const ModelPlacements *from, const ModelPlacements *to,
                              const ModelMesh *mesh, double bytes, GArray *out, GError **error)
{
  /* The local size is always the whole over the current number of ways, so a gather back
   * to Replicate carries exactly `bytes`. */
  guint ways = model_placement_ways (from, mesh);
  for (guint d = MODEL_MESH_N_DIMS; d-- > 0;)
    {
      const ModelPlacement *a = &from->on[d], *b = &to->on[d];
      guint n = mesh->degree[d];
      if (a->kind == b->kind && (a->kind != MODEL_PLACEMENT_SHARD || a->dim == b->dim))
        continue;
      if (a->kind == MODEL_PLACEMENT_SHARD && b->kind == MODEL_PLACEMENT_PARTIAL)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "no redistribution from Shard to Partial on %s",
                       model_mesh_dim_name ((ModelMeshDim) d));
          return FALSE;
        }
      gboolean comm = n > 1;
      if (a->kind == MODEL_PLACEMENT_PARTIAL && b->kind == MODEL_PLACEMENT_REPLICATE)
        {
          if (comm)
            add (out, mesh, HW_COLLECTIVE_ALL_REDUCE, d, bytes / ways);
        }
      else if (a->kind == MODEL_PLACEMENT_PARTIAL && b->kind == MODEL_PLACEMENT_SHARD)
        {
          if (comm)
            add (out, mesh, HW_COLLECTIVE_REDUCE_SCATTER, d, bytes / ways);
          ways *= n;
        }
      else if (a->kind == MODEL_PLACEMENT_SHARD && b->kind == MODEL_PLACEMENT_REPLICATE)
        {
          ways /= n;
          if (comm)
            add (out, mesh, HW_COLLECTIVE_ALL_GATHER, d, bytes / ways);
        }
      else if (a->kind == MODEL_PLACEMENT_SHARD && b->kind == MODEL_PLACEMENT_SHARD)
        {
          if (comm)
            add (out, mesh, HW_COLLECTIVE_ALL_TO_ALL, d, bytes / ways);
        }
      else if (a->kind == MODEL_PLACEMENT_REPLICATE && b->kind == MODEL_PLACEMENT_SHARD)
        ways *= n;
      /* Replicate → Partial: nothing moves. */
    }
  return TRUE;
}
