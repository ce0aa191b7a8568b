/* models/plan/plan_comm.c — collective tasks of data parallelism and the groups they span.
 *
 * Ranks are numbered node-major (hardware/cluster.h). With D data-parallel ranks and shard
 * groups of N (parallel.h): ALL = every rank; SHARD = the N consecutive ranks of r's shard
 * group (all D unless hybrid); REPLICA = the D/N ranks with r's index inside its group.
 * Each rank's k-th collective on a group is the same collective instance on every rank of
 * that group: plans of all ranks issue collectives in the same order, as NCCL requires.
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

/* Fills ranks (capacity n_ranks) with the members of `group` seen from `rank`; returns
 * their count and writes the group's name into `name`. */
static guint
group_members (const ModelPlan *p, guint rank, PlanGroup group, guint *ranks, GString *name)
{
  guint d = p->n_ranks, n = model_parallel_shard_size (&p->par), count = 0;
  switch (group)
    {
    case PLAN_GROUP_SHARD:
      g_string_printf (name, "shard%u", rank / n);
      for (guint i = 0; i < n; i++)
        ranks[count++] = (rank / n) * n + i;
      break;
    case PLAN_GROUP_REPLICA:
      g_string_printf (name, "replica%u", rank % n);
      for (guint j = rank % n; j < d; j += n)
        ranks[count++] = j;
      break;
    case PLAN_GROUP_ALL:
    default:
      g_string_assign (name, "all");
      for (guint i = 0; i < d; i++)
        ranks[count++] = i;
      break;
    }
  return count;
}

/* Index of the instance for this rank's next collective on group `name`. */
static guint
instance_for (ModelPlan *p, guint rank, const char *name, HwCollectiveKind kind, double bytes,
              const guint *ranks, guint n)
{
  char *seq_key = g_strdup_printf ("%u/%s", rank, name);
  guint seq = GPOINTER_TO_UINT (g_hash_table_lookup (p->sequence, seq_key));
  g_hash_table_replace (p->sequence, seq_key, GUINT_TO_POINTER (seq + 1));
  char *key = g_strdup_printf ("%s/%u", name, seq);
  gpointer found = g_hash_table_lookup (p->instances, key);
  if (found != NULL)
    {
      g_free (key);
      const ModelCollective *c = model_plan_collective (p, GPOINTER_TO_UINT (found) - 1);
      g_assert (c->kind == kind && c->bytes == bytes); /* ranks issue the same sequence */
      return GPOINTER_TO_UINT (found) - 1;
    }
  guint *copy = g_memdup2 (ranks, n * sizeof (guint));
  g_ptr_array_add (p->rank_lists, copy);
  ModelCollective c = { kind, p->par.algorithm, bytes, copy, n };
  g_array_append_val (p->collectives, c);
  g_hash_table_insert (p->instances, key, GUINT_TO_POINTER (p->collectives->len));
  return p->collectives->len - 1;
}

guint
plan_collective (ModelPlan *p, guint rank, PlanGroup group, HwCollectiveKind kind,
                 double bytes, gint layer, gint micro_batch, const char *what)
{
  g_autofree guint *ranks = g_new (guint, p->n_ranks);
  g_autoptr (GString) name = g_string_new (NULL);
  guint n = group_members (p, rank, group, ranks, name);
  if (n <= 1 || bytes <= 0)
    return G_MAXUINT;
  guint index = instance_for (p, rank, name->str, kind, bytes, ranks, n);
  guint id = plan_task_begin (p, rank, MODEL_STREAM_COMM, MODEL_TASK_KIND_COLLECTIVE, layer,
                              micro_batch, "%s %s", hw_collective_kind_name (kind), what);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  return id;
}
