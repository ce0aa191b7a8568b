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

#include <string.h>

double
plan_reduce_bytes (const ModelPlan *p)
{
  if (p->par.reduce_dtype_set)
    return hw_dtype_bytes (p->par.reduce_dtype);
  return model_stack_gradient_bytes (&p->stack);
}

/* A group collectives run on, named by its dimensions and index: `dims` the mesh dimensions
 * (MODEL_MESH_BIT set) and `index` the rank's coordinates on the other dimensions,
 * row-major, as model_mesh_group numbers them; or `dims` MODEL_COLLECTIVE_EXPERT (dim) and
 * `index` the expert group's first member. The same on every member, so each member's k-th
 * collective on the group is the group's instance k. Integers, not a printed name: printing
 * and hashing "dp_shard:1"-style names per collective was 6 % of the instructions of the
 * 8-GPU ZeRO-3 bench (bench/RESULTS.md, 2026-12-07). */
typedef struct
{
  guint dims, index;
  guint *ranks;        /* its members (in the plan's rank_lists), listed at its first use */
  guint n;
  GArray *instances;   /* guint: collective index of instance k, in order */
  GHashTable *next;    /* member rank + 1 → the number of instances it has reached (its next
                        * instance's; absent: 0) */
} PlanGroup;

static guint
group_hash (gconstpointer p)
{
  const PlanGroup *g = p;
  return g->dims * 2654435761u ^ g->index;
}

static gboolean
group_equal (gconstpointer a, gconstpointer b)
{
  const PlanGroup *x = a, *y = b;
  return x->dims == y->dims && x->index == y->index;
}

static void
group_free (gpointer p)
{
  PlanGroup *g = p;
  g_array_unref (g->instances);
  g_hash_table_unref (g->next);
  g_free (g);
}

GHashTable *
plan_groups_new (void)
{
  return g_hash_table_new_full (group_hash, group_equal, group_free, NULL);
}

/* The index of `rank`'s group over the mesh dimensions `dims` (PlanGroup) into *index;
 * returns the group's size. O(mesh dimensions): the members themselves are listed once a
 * group (instance_for), not once per rank or per collective, so a plan's collectives cost
 * O(ranks) in all rather than O(ranks × group size). */
static guint
group_index (const ModelPlan *p, guint rank, guint dims, guint *index)
{
  guint coords[MODEL_MESH_N_DIMS];
  model_mesh_coords (&p->mesh, rank, coords);
  guint count = 1;
  *index = 0;
  for (guint d = 0; d < MODEL_MESH_N_DIMS; d++)
    if (dims & MODEL_MESH_BIT (d))
      count *= p->mesh.degree[d];
    else
      *index = *index * p->mesh.degree[d] + coords[d];
  return count;
}

/* Index of the instance for this rank's next collective on group (`dims`, `index`) of `n`
 * ranks (PlanGroup); the first rank to reach the group lists its members, once for all the
 * group's collectives (a ZeRO-3 step issues thousands on one data-parallel group: a list
 * each was 64 KB a collective and O(collectives × group size) time at 16,384 ranks). */
static guint
instance_for (ModelPlan *p, guint rank, guint dims, guint index, HwCollectiveKind kind,
              double bytes, guint n, gint expert_dim)
{
  PlanGroup probe = { .dims = dims, .index = index };
  PlanGroup *g = g_hash_table_lookup (p->groups, &probe);
  if (g == NULL)
    {
      g = g_new (PlanGroup, 1);
      *g = probe;
      g->ranks = g_new (guint, expert_dim >= 0 ? model_mesh_size (&p->mesh) : n);
      guint listed = expert_dim >= 0
                       ? model_mesh_expert_group (&p->mesh, rank,
                                                  (ModelMeshExpertDim) expert_dim, g->ranks)
                       : model_mesh_group (&p->mesh, rank, dims, g->ranks, NULL);
      g_assert (listed == n);
      g->n = n;
      g_ptr_array_add (p->rank_lists, g->ranks);
      g->instances = g_array_new (FALSE, FALSE, sizeof (guint));
      g->next = g_hash_table_new (g_direct_hash, g_direct_equal);
      g_hash_table_add (p->groups, g);
    }
  /* every member issues the group's instances in the same order: instance `seq` exists once
   * some member has passed it, and is created by the first to reach it */
  guint seq = GPOINTER_TO_UINT (g_hash_table_lookup (g->next, GUINT_TO_POINTER (rank + 1)));
  g_hash_table_insert (g->next, GUINT_TO_POINTER (rank + 1), GUINT_TO_POINTER (seq + 1));
  g_assert (seq <= g->instances->len);
  if (seq < g->instances->len)
    {
      guint found = g_array_index (g->instances, guint, seq);
      const ModelCollective *c = &g_array_index (p->collectives, ModelCollective, found);
      g_assert (c->kind == kind && c->bytes == bytes); /* ranks issue the same sequence */
      return found;
    }
  ModelCollective c = { kind, p->par.algorithm, bytes, g->ranks, n, dims, 0 };
  g_array_append_val (p->collectives, c);
  g_array_append_val (g->instances, (guint){ p->collectives->len - 1 });
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
  guint group;
  guint n = group_index (p, rank, dims, &group);
  if (n <= 1 || bytes <= 0)
    return G_MAXUINT;
  guint index = instance_for (p, rank, dims, group, kind, bytes, n, -1);
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_COLLECTIVE, layer,
                              micro_batch, "%s %s", hw_collective_kind_name (kind), what);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  return id;
}

guint
plan_collective_instance_like (ModelPlan *p, guint rank, guint like)
{
  const ModelCollective *c = &g_array_index (p->collectives, ModelCollective, like);
  guint dims = c->dims, group;
  HwCollectiveKind kind = c->kind;
  double bytes = c->bytes;
  g_return_val_if_fail ((dims & MODEL_COLLECTIVE_EXPERT_BIT) == 0, G_MAXUINT);
  guint n = group_index (p, rank, dims, &group);
  g_return_val_if_fail (n == c->n_ranks, G_MAXUINT);
  return instance_for (p, rank, dims, group, kind, bytes, n, -1);
}

/* See plan-private.h. The group is named by its expert dimension and its first member
 * (PlanGroup), the same on every member, so the k-th collective of each member on it is one
 * instance; its dims MODEL_COLLECTIVE_EXPERT (dim), which rank_classes.c maps through the
 * expert groups as it maps mesh groups. */
guint
plan_collective_expert (ModelPlan *p, guint rank, ModelStream stream, ModelMeshExpertDim dim,
                        HwCollectiveKind kind, double bytes, gint layer, gint micro_batch,
                        const char *what)
{
  g_return_val_if_fail (dim < MODEL_MESH_N_EXPERT_DIMS, G_MAXUINT);
  guint n = model_mesh_expert_degree (&p->mesh, dim);
  if (n <= 1 || bytes <= 0)
    return G_MAXUINT;
  g_autofree guint *members = g_new (guint, model_mesh_size (&p->mesh));
  model_mesh_expert_group (&p->mesh, rank, dim, members);
  guint index = instance_for (p, rank, MODEL_COLLECTIVE_EXPERT (dim), members[0], kind, bytes,
                              n, (gint) dim);
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_COLLECTIVE, layer, micro_batch,
                              "%s %s", hw_collective_kind_name (kind), what);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  return id;
}

/* ---- redistributions seen before ----------------------------------------------------------
 *
 * model_parallel_redistribute is a function of the parallel setup, the state, the two
 * phases and the bytes alone; a plan asks for the same few again and again (a ZeRO-3
 * layer's gather and gradient reduce-scatter per layer and micro-batch: ~1,200
 * instructions each, with its placements and GArray). The memo keeps the last few, each
 * with a copy of the setup it was derived for, compared bit for bit. */
#define REDIST_MEMO_SLOTS 8

typedef struct
{
  GArray *comms;  /* ModelPlacementComm, a reference of the memo's; NULL: empty */
  ModelParallel par;
  ModelState state;
  ModelPhase from, to;
  double bytes;
} RedistMemoSlot;

struct _PlanRedistMemo
{
  RedistMemoSlot slots[REDIST_MEMO_SLOTS];
  guint next;     /* the slot the next new one takes (round robin) */
};

void
plan_redist_memo_free (struct _PlanRedistMemo *memo)
{
  if (memo == NULL)
    return;
  for (guint i = 0; i < REDIST_MEMO_SLOTS; i++)
    if (memo->slots[i].comms != NULL)
      g_array_unref (memo->slots[i].comms);
  g_free (memo);
}

GArray *
plan_parallel_redistribute (ModelPlan *p, const ModelParallel *par, ModelState state,
                            ModelPhase from, ModelPhase to, double bytes)
{
  if (!plan_memo_on ())
    return model_parallel_redistribute (par, state, from, to, bytes);
  if (p->redist_memo == NULL)
    p->redist_memo = g_new0 (struct _PlanRedistMemo, 1);
  struct _PlanRedistMemo *memo = p->redist_memo;
  for (guint i = 0; i < REDIST_MEMO_SLOTS; i++)
    {
      const RedistMemoSlot *m = &memo->slots[i];
      if (m->comms != NULL && m->state == state && m->from == from && m->to == to
          && memcmp (&m->bytes, &bytes, sizeof bytes) == 0
          && memcmp (&m->par, par, sizeof *par) == 0)
        return g_array_ref (m->comms);
    }
  GArray *comms = model_parallel_redistribute (par, state, from, to, bytes);
  RedistMemoSlot *m = &memo->slots[memo->next];
  memo->next = (memo->next + 1) % REDIST_MEMO_SLOTS;
  if (m->comms != NULL)
    g_array_unref (m->comms);
  *m = (RedistMemoSlot){ g_array_ref (comms), *par, state, from, to, bytes };
  return comms;
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
  g_autoptr (GArray) comms = plan_parallel_redistribute (p, par, state, from, to, bytes);
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
