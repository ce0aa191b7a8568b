/* models/plan/plan_comm.c — collective tasks of data parallelism and the groups they span.
 *
 * Ranks are numbered node-major (hardware/cluster.h) and mapped onto the plan's mesh
 * (models/parallel/mesh.h: dp_shard inner, so a shard group is N consecutive ranks, and a
 * dp_replicate group the D/N ranks with r's index inside its shard group). Which
 * collectives run is derived from the placements of the model states (parallel.h,
 * placement.h): plan_redistribute issues the ones a change of phase implies. Each rank's
 * k-th collective on a group is the same collective instance on every rank of that group:
 * plans of all ranks issue collectives in the same order, as NCCL requires.
 */
#include "config.h"
#include "models/plan/plan-private.h"

double
plan_reduce_bytes (const ModelPlan *p)
{
  if (p->par.reduce_dtype_set)
    return hw_dtype_bytes (p->par.reduce_dtype);
  return model_stack_gradient_bytes (&p->stack);
}

/* The name of `rank`'s group over the mesh dimensions `dims` into `name` ("dp_shard:1",
 * "dp_replicate+dp_shard:0": the group's index is the rank's coordinates on the other
 * dimensions, row-major, as model_mesh_group numbers them); returns the group's size. O(mesh
 * dimensions): the members themselves are listed once a group (instance_for), not once per
 * rank or per collective, so a plan's collectives cost O(ranks) in all rather than
 * O(ranks × group size). */
static guint
group_name (const ModelPlan *p, guint rank, guint dims, GString *name)
{
  guint coords[MODEL_MESH_N_DIMS];
  model_mesh_coords (&p->mesh, rank, coords);
  guint count = 1, index = 0;
  g_string_truncate (name, 0);
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    if (dims & MODEL_MESH_BIT (d))
      {
        count *= p->mesh.degree[d];
        g_string_append_printf (name, "%s%s", name->len > 0 ? "+" : "",
                                model_mesh_dim_name ((ModelMeshDim) d));
      }
    else
      index = index * p->mesh.degree[d] + coords[d];
  g_string_append_printf (name, ":%u", index);
  return count;
}

/* Index of the instance for this rank's next collective on group `name` (of `n` ranks over
 * `dims`); the first rank to reach the group lists its members, once for all the group's
 * collectives (a ZeRO-3 step issues thousands on one data-parallel group: a list each was
 * 64 KB a collective and O(collectives × group size) time at 16,384 ranks). */
static guint
instance_for (ModelPlan *p, guint rank, guint dims, const char *name, HwCollectiveKind kind,
              double bytes, guint n, gint expert_dim)
{
  char *seq_key = g_strdup_printf ("%u/%s", rank, name);
  guint seq = GPOINTER_TO_UINT (g_hash_table_lookup (p->sequence, seq_key));
  g_hash_table_replace (p->sequence, seq_key, GUINT_TO_POINTER (seq + 1));
  char *key = g_strdup_printf ("%s/%u", name, seq);
  gpointer found = g_hash_table_lookup (p->instances, key);
  if (found != NULL)
    {
      g_free (key);
      const ModelCollective *c
        = &g_array_index (p->collectives, ModelCollective, GPOINTER_TO_UINT (found) - 1);
      g_assert (c->kind == kind && c->bytes == bytes); /* ranks issue the same sequence */
      return GPOINTER_TO_UINT (found) - 1;
    }
  guint *ranks = g_hash_table_lookup (p->members, name);
  if (ranks == NULL)
    {
      ranks = g_new (guint, expert_dim >= 0 ? model_mesh_size (&p->mesh) : n);
      guint listed = expert_dim >= 0
                       ? model_mesh_expert_group (&p->mesh, rank,
                                                  (ModelMeshExpertDim) expert_dim, ranks)
                       : model_mesh_group (&p->mesh, rank, dims, ranks, NULL);
      g_assert (listed == n);
      g_ptr_array_add (p->rank_lists, ranks);
      g_hash_table_insert (p->members, g_strdup (name), ranks);
    }
  ModelCollective c = { kind, p->par.algorithm, bytes, ranks, n, dims, 0 };
  g_array_append_val (p->collectives, c);
  g_hash_table_insert (p->instances, key, GUINT_TO_POINTER (p->collectives->len));
  return p->collectives->len - 1;
}

guint
plan_collective (ModelPlan *p, guint rank, guint dims, HwCollectiveKind kind,
                 double bytes, gint layer, gint micro_batch, const char *what)
{
  return plan_collective_on (p, rank, MODEL_STREAM_COMM, dims, kind, bytes, layer, micro_batch,
                             what);
}

guint
plan_collective_on (ModelPlan *p, guint rank, ModelStream stream, guint dims,
                    HwCollectiveKind kind, double bytes, gint layer, gint micro_batch,
                    const char *what)
{
  g_autoptr (GString) name = g_string_new (NULL);
  guint n = group_name (p, rank, dims, name);
  if (n <= 1 || bytes <= 0)
    return G_MAXUINT;
  guint index = instance_for (p, rank, dims, name->str, kind, bytes, n, -1);
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_COLLECTIVE, layer,
                              micro_batch, "%s %s", hw_collective_kind_name (kind), what);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  return id;
}

/* See plan-private.h. The group is named by its expert dimension and its first member
 * ("expert_ep@8"), the same on every member, so the k-th collective of each member on it
 * is one instance; its dims MODEL_COLLECTIVE_EXPERT (dim), which rank_classes.c maps
 * through the expert groups as it maps mesh groups. */
guint
plan_collective_expert (ModelPlan *p, guint rank, ModelStream stream, ModelMeshExpertDim dim,
                        HwCollectiveKind kind, double bytes, gint layer, gint micro_batch,
                        const char *what)
{
  static const char *const names[] = { "expert_tp", "expert_ep", "expert_dp", "expert_tp_ep" };
  g_return_val_if_fail (dim < MODEL_MESH_N_EXPERT_DIMS, G_MAXUINT);
  guint n = model_mesh_expert_degree (&p->mesh, dim);
  if (n <= 1 || bytes <= 0)
    return G_MAXUINT;
  g_autofree guint *members = g_new (guint, model_mesh_size (&p->mesh));
  model_mesh_expert_group (&p->mesh, rank, dim, members);
  g_autofree char *name = g_strdup_printf ("%s@%u", names[dim], members[0]);
  guint index
    = instance_for (p, rank, MODEL_COLLECTIVE_EXPERT (dim), name, kind, bytes, n, (gint) dim);
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_COLLECTIVE, layer, micro_batch,
                              "%s %s", hw_collective_kind_name (kind), what);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  return id;
}

guint
plan_redistribute (ModelPlan *p, guint rank, ModelState state, ModelPhase from, ModelPhase to,
                   double bytes, gint layer, gint micro_batch, const char *what, guint after,
                   guint *first)
{
  return plan_redistribute_as (p, &p->par, rank, state, from, to, bytes, layer, micro_batch,
                               what, after, first);
}

guint
plan_redistribute_as (ModelPlan *p, const ModelParallel *par, guint rank, ModelState state,
                      ModelPhase from, ModelPhase to, double bytes, gint layer,
                      gint micro_batch, const char *what, guint after, guint *first)
{
  g_autoptr (GArray) comms = model_parallel_redistribute (par, state, from, to, bytes);
  guint last = G_MAXUINT;
  *first = G_MAXUINT;
  for (guint i = 0; i < comms->len; i++)
    {
      const ModelPlacementComm *c = &g_array_index (comms, ModelPlacementComm, i);
      g_autofree char *label = *first == G_MAXUINT ? g_strdup (what)
                                                   : g_strdup_printf ("%s shard", what);
      guint id = plan_collective (p, rank, c->dims, c->kind, c->bytes, layer,
                                  micro_batch, label);
      if (id == G_MAXUINT)
        continue;
      plan_task_dep (p, last == G_MAXUINT ? after : last);
      if (*first == G_MAXUINT)
        *first = id;
      last = id;
    }
  return last;
}
