/* models/plan/op_times.c — per-op kernel time sums; see op_times.h. */
#include "config.h"
#include "models/plan/op_times.h"

/* Entries in a GArray (first-seen order); a GHashTable from (rank, kind, name) to the
 * entry's index + 1 finds them (looked up with a key on the stack, stored as a copy).
 * In front of it, a direct-mapped cache from (op's address, rank, kind) to an entry index
 * + 1: the executor adds each of a plan's kernels, the same ModelOp, step after step, and
 * hashing the name was 2 % of an 8-GPU step. A cached index is used only when its entry's
 * key equals the one asked for (the same rank and kind, the same name pointer, so the same
 * name), so a stale or colliding slot costs a table lookup, never a wrong entry. */
#define HINT_SLOTS 4096 /* a power of two; an 8-GPU step adds ~1,000 distinct keys */
typedef struct
{
  guint rank;
  ModelTaskKind kind;
  const char *op;
} Key;

struct _ModelOpTimes
{
  GArray *entries;    /* ModelOpTime */
  GHashTable *index;  /* Key * (owned, g_free) → GUINT_TO_POINTER (entry index + 1) */
  guint *hint;        /* HINT_SLOTS entry indices + 1 (0: none), owned */
};

/* The cache slot of (op, rank, kind). */
static guint
hint_slot (const ModelOp *op, guint rank, ModelTaskKind kind)
{
  guint64 h = ((guint64) (guintptr) op >> 3) ^ ((guint64) rank << 20) ^ ((guint64) kind << 28);
  return (guint) ((h * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> 40) & (HINT_SLOTS - 1);
}

static guint
key_hash (gconstpointer p)
{
  const Key *k = p;
  return g_str_hash (k->op) ^ (k->rank * 2654435761u) ^ ((guint) k->kind << 24);
}

static gboolean
key_equal (gconstpointer a, gconstpointer b)
{
  const Key *x = a, *y = b;
  return x->rank == y->rank && x->kind == y->kind && g_str_equal (x->op, y->op);
}

double
model_op_times_executed_flops (const ModelOp *op)
{
  g_return_val_if_fail (op != NULL, 0);
  return op->flops * hw_kernel_executed_fraction (&op->shape);
}

ModelOpTimes *
model_op_times_new (void)
{
  ModelOpTimes *t = g_new0 (ModelOpTimes, 1);
  t->entries = g_array_new (FALSE, FALSE, sizeof (ModelOpTime));
  t->index = g_hash_table_new_full (key_hash, key_equal, g_free, NULL);
  t->hint = g_new0 (guint, HINT_SLOTS);
  return t;
}

void
model_op_times_free (ModelOpTimes *t)
{
  if (t == NULL)
    return;
  g_array_unref (t->entries);
  g_hash_table_unref (t->index);
  g_free (t->hint);
  g_free (t);
}

void
model_op_times_add (ModelOpTimes *t, guint rank, ModelTaskKind kind, const ModelOp *op,
                    double seconds, double host_seconds)
{
  g_return_if_fail (t != NULL && op != NULL && op->name != NULL);
  guint slot = hint_slot (op, rank, kind), i = t->hint[slot];
  if (i != 0)
    {
      const ModelOpTime *h = &g_array_index (t->entries, ModelOpTime, i - 1);
      if (h->rank != rank || h->kind != kind || h->op != op->name)
        i = 0;
    }
  Key k = { rank, kind, op->name };
  if (i == 0)
    i = GPOINTER_TO_UINT (g_hash_table_lookup (t->index, &k));
  if (i == 0)
    {
      ModelOpTime e = { rank, kind, op->name, op->op_class, 0, 0, 0, 0, 0, 0 };
      g_array_append_val (t->entries, e);
      i = t->entries->len;
      g_hash_table_insert (t->index, g_memdup2 (&k, sizeof k), GUINT_TO_POINTER (i));
    }
  t->hint[slot] = i;
  ModelOpTime *e = &g_array_index (t->entries, ModelOpTime, i - 1);
  e->count++;
  e->seconds += seconds;
  e->flops += model_op_times_executed_flops (op);
  e->bytes += op->bytes;
  e->host_ops += model_op_host_ops (op);
  e->host_seconds += host_seconds;
}

double
model_op_times_rank_host_seconds (const ModelOpTimes *t, guint rank, double *ops)
{
  double s = 0, n = 0;
  for (guint i = 0; i < model_op_times_n (t); i++)
    {
      const ModelOpTime *e = model_op_times_get (t, i);
      if (e->rank != rank)
        continue;
      s += e->host_seconds;
      n += e->host_ops;
    }
  if (ops != NULL)
    *ops = n;
  return s;
}

guint
model_op_times_n (const ModelOpTimes *t)
{
  return t != NULL ? t->entries->len : 0;
}

const ModelOpTime *
model_op_times_get (const ModelOpTimes *t, guint i)
{
  g_return_val_if_fail (t != NULL && i < t->entries->len, NULL);
  return &g_array_index (t->entries, ModelOpTime, i);
}

double
model_op_times_rank_seconds (const ModelOpTimes *t, guint rank, int op_class)
{
  double s = 0;
  for (guint i = 0; i < model_op_times_n (t); i++)
    {
      const ModelOpTime *e = model_op_times_get (t, i);
      if (e->rank == rank && (op_class < 0 || (int) e->op_class == op_class))
        s += e->seconds;
    }
  return s;
}
