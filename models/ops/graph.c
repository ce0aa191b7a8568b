/* models/ops/graph.c — the op graph (graph.h): construction, the policies that read it, and
 * the forward's liveness. Invariant: every op's `out`, `saved`, `writes` and `frees` index
 * an existing tensor. */
#include "config.h"
#include "models/ops/graph.h"

double
model_op_host_ops (const ModelOp *op)
{
  g_return_val_if_fail (op != NULL, 1.0);
  return op->host_ops > 1.0 ? op->host_ops : 1.0;
}

ModelGraph *
model_graph_new (void)
{
  ModelGraph *g = g_new0 (ModelGraph, 1);
  g->tensors = g_array_new (FALSE, TRUE, sizeof (ModelGraphTensor));
  g->ops = g_array_new (FALSE, TRUE, sizeof (ModelGraphOp));
  return g;
}

void
model_graph_free (ModelGraph *g)
{
  if (g == NULL)
    return;
  g_array_unref (g->tensors);
  g_array_unref (g->ops);
  g_free (g);
}

ModelGraph *
model_graph_copy_scaled (const ModelGraph *g, const double *divisors)
{
  g_return_val_if_fail (g != NULL, NULL);
  g_autoptr (ModelGraph) r = model_graph_new ();
  g_array_append_vals (r->tensors, g->tensors->data, g->tensors->len);
  if (divisors != NULL)
    for (guint i = 0; i < r->tensors->len; i++)
      {
        g_return_val_if_fail (divisors[i] > 0, NULL);
        g_array_index (r->tensors, ModelGraphTensor, i).bytes /= divisors[i];
      }
  g_array_append_vals (r->ops, g->ops->data, g->ops->len);
  r->n_mm = g->n_mm;
  return g_steal_pointer (&r);
}

guint
model_graph_tensor (ModelGraph *g, const char *name, double bytes, ModelTensorSource source,
                    gint from)
{
  g_return_val_if_fail (g != NULL && bytes >= 0, G_MAXUINT);
  g_return_val_if_fail (from < (gint) g->tensors->len, G_MAXUINT);
  ModelGraphTensor t = { name, bytes, source, FALSE, from };
  g_array_append_val (g->tensors, t);
  return g->tensors->len - 1;
}

void
model_graph_op (ModelGraph *g, const char *name, guint out, const guint *saved, guint n)
{
  g_return_if_fail (g != NULL && out < g->tensors->len && n <= MODEL_GRAPH_MAX_SAVED);
  ModelGraphOp op = { .name = name, .out = out };
  for (guint i = 0; i < n; i++)
    if (saved[i] != G_MAXUINT)
      {
        g_return_if_fail (saved[i] < g->tensors->len);
        op.saved[op.n_saved++] = saved[i];
      }
  g_array_append_val (g->ops, op);
}

void
model_graph_mark_selective (ModelGraph *g, guint t)
{
  g_return_if_fail (g != NULL && t < g->tensors->len);
  g_array_index (g->tensors, ModelGraphTensor, t).selective = TRUE;
}

static ModelGraphOp *
last_op (ModelGraph *g)
{
  g_return_val_if_fail (g != NULL && g->ops->len > 0, NULL);
  return &g_array_index (g->ops, ModelGraphOp, g->ops->len - 1);
}

void
model_graph_op_kernel (ModelGraph *g, const ModelOp *kernel)
{
  ModelGraphOp *op = last_op (g);
  g_return_if_fail (op != NULL && kernel != NULL);
  op->launches = TRUE;
  op->kernel = *kernel;
  if (kernel->op_class == MODEL_OP_GEMM && kernel->shape.batch <= 1 && !kernel->addmm)
    op->mm_call = ++g->n_mm;
}

/* Appends the valid entries of t[0..n) to list[*len] (capacity `cap`). */
static void
append_tensors (const ModelGraph *g, guint *list, guint *len, guint cap, const guint *t, guint n)
{
  for (guint i = 0; i < n; i++)
    if (t[i] != G_MAXUINT)
      {
        g_return_if_fail (t[i] < g->tensors->len && *len < cap);
        list[(*len)++] = t[i];
      }
}

void
model_graph_op_writes (ModelGraph *g, const guint *t, guint n)
{
  ModelGraphOp *op = last_op (g);
  g_return_if_fail (op != NULL);
  append_tensors (g, op->writes, &op->n_writes, MODEL_GRAPH_MAX_SAVED, t, n);
}

void
model_graph_op_frees (ModelGraph *g, const guint *t, guint n)
{
  ModelGraphOp *op = last_op (g);
  g_return_if_fail (op != NULL);
  append_tensors (g, op->frees, &op->n_frees, MODEL_GRAPH_MAX_FREES, t, n);
}

void
model_graph_op_selective (ModelGraph *g)
{
  ModelGraphOp *op = last_op (g);
  g_return_if_fail (op != NULL);
  op->selective = TRUE;
}

void
model_graph_mark_block_selective (ModelGraph *g, guint first_tensor, guint first_op)
{
  g_return_if_fail (g != NULL);
  for (guint t = first_tensor; t < g->tensors->len; t++)
    g_array_index (g->tensors, ModelGraphTensor, t).selective = TRUE;
  for (guint o = first_op; o < g->ops->len; o++)
    g_array_index (g->ops, ModelGraphOp, o).selective = TRUE;
}

static const ModelGraphTensor *
tensor (const ModelGraph *g, guint i)
{
  return &g_array_index (g->tensors, ModelGraphTensor, i);
}

/* The tensor compile keeps in place of `i`: follow `from` to one the backward needs
 * materialized. `from` always points to an earlier tensor, so this ends. */
static guint
kept_for (const ModelGraph *g, guint i)
{
  while (tensor (g, i)->from >= 0)
    i = (guint) tensor (g, i)->from;
  return i;
}

static gboolean
policy_keeps (const ModelGraphTensor *t, ModelGraphPolicy policy)
{
  switch (policy)
    {
    case MODEL_GRAPH_KEEP_NON_SELECTIVE:
      return !t->selective;
    case MODEL_GRAPH_KEEP_MATMUL:
    case MODEL_GRAPH_KEEP_MATMUL_SAVED:
      return t->source != MODEL_TENSOR_POINTWISE;
    case MODEL_GRAPH_KEEP_ALL:
    default:
      return TRUE;
    }
}

/* mark[i] = TRUE for each tensor an op saves (compile: the tensor kept in its place);
 * `mark` has g->tensors->len entries. */
static void
mark_saved (const ModelGraph *g, gboolean compile, gboolean *mark)
{
  for (guint j = 0; j < g->ops->len; j++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
      for (guint k = 0; k < op->n_saved; k++)
        mark[compile ? kept_for (g, op->saved[k]) : op->saved[k]] = TRUE;
    }
}

/* Whether tensor i is kept for the backward under `policy`, given mark[] (mark_saved's). */
static gboolean
kept (const ModelGraph *g, const gboolean *mark, guint i, ModelGraphPolicy policy)
{
  const ModelGraphTensor *t = tensor (g, i);
  return mark[i] && policy_keeps (t, policy) && t->bytes > 0;
}

/* TRUE for an op torchtitan's op-level policy reruns although a GEMM makes its output: an
 * even-numbered plain mm (graph.h, op-level selective). */
static gboolean
even_mm (const ModelGraphOp *op)
{
  return op->mm_call > 0 && op->mm_call % 2 == 0;
}

static void
mark_policy (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile, gboolean *mark)
{
  mark_saved (g, compile, mark);
  if (policy == MODEL_GRAPH_KEEP_MATMUL)
    /* torchtitan's policy caches every matmul and attention output, saved by an op or not
     * (the recompute reruns the point-wise ops from them); the block input is the
     * checkpoint's own. */
    for (guint i = 0; i < g->tensors->len; i++)
      if (tensor (g, i)->source != MODEL_TENSOR_POINTWISE)
        mark[i] = TRUE;
  if (policy == MODEL_GRAPH_KEEP_MATMUL || policy == MODEL_GRAPH_KEEP_MATMUL_SAVED)
    /* but every second mm's outputs are recomputed, whoever saves them */
    for (guint j = 0; j < g->ops->len; j++)
      {
        const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
        if (!even_mm (op))
          continue;
        mark[op->out] = FALSE;
        for (guint k = 0; k < op->n_writes; k++)
          mark[op->writes[k]] = FALSE;
      }
}

double
model_graph_saved_named (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                         const char *const *names)
{
  g_return_val_if_fail (g != NULL && names != NULL, 0);
  g_autofree gboolean *mark = g_new0 (gboolean, g->tensors->len + 1);
  mark_policy (g, policy, compile, mark);
  double sum = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    if (kept (g, mark, i, policy) && g_strv_contains (names, tensor (g, i)->name))
      sum += tensor (g, i)->bytes;
  return sum;
}

/* The tensors i with pick[i] (g->tensors->len entries), in index order: their total B,
 * `sizes` filled with at most `max` of them, *n_out (may be NULL) their count. */
static double
collect (const ModelGraph *g, const gboolean *pick, double *sizes, guint max, guint *n_out)
{
  double sum = 0;
  guint n = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    {
      if (!pick[i])
        continue;
      double bytes = tensor (g, i)->bytes;
      sum += bytes;
      if (sizes != NULL && n < max)
        sizes[n] = bytes;
      n++;
    }
  if (n_out != NULL)
    *n_out = n;
  return sum;
}

double
model_graph_saved (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                   double *sizes, guint max, guint *n_out)
{
  g_return_val_if_fail (g != NULL, 0);
  guint nt = g->tensors->len;
  g_autofree gboolean *mark = g_new0 (gboolean, nt + 1);
  g_autofree gboolean *pick = g_new0 (gboolean, nt + 1);
  mark_policy (g, policy, compile, mark);
  for (guint i = 0; i < nt; i++)
    pick[i] = kept (g, mark, i, policy);
  return collect (g, pick, sizes, max, n_out);
}

double
model_graph_recreated (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                       double *sizes, guint max, guint *n_out)
{
  g_return_val_if_fail (g != NULL, 0);
  guint nt = g->tensors->len;
  g_autofree gboolean *mark = g_new0 (gboolean, nt + 1);
  g_autofree gboolean *keeps = g_new0 (gboolean, nt + 1);
  mark_policy (g, MODEL_GRAPH_KEEP_ALL, compile, mark);
  mark_policy (g, policy, compile, keeps); /* the even mms' outputs unmarked (op-level) */
  for (guint i = 0; i < nt; i++) /* saved by eager, not kept by the policy */
    mark[i] = kept (g, mark, i, MODEL_GRAPH_KEEP_ALL) && !kept (g, keeps, i, policy);
  return collect (g, mark, sizes, max, n_out);
}

gboolean
model_graph_op_reruns (const ModelGraph *g, guint j, ModelGraphPolicy policy)
{
  g_return_val_if_fail (g != NULL && j < g->ops->len, FALSE);
  const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
  switch (policy)
    {
    case MODEL_GRAPH_KEEP_NON_SELECTIVE:
      return op->selective;
    case MODEL_GRAPH_KEEP_MATMUL:
    case MODEL_GRAPH_KEEP_MATMUL_SAVED:
      /* what the policy does not keep is re-created by rerunning the op that made it */
      return tensor (g, op->out)->source == MODEL_TENSOR_POINTWISE || even_mm (op);
    case MODEL_GRAPH_KEEP_ALL:
    default:
      return FALSE;
    }
}

/* born[t] = the first op naming t (the block input: 0), dies[t] = the op freeing it (or the
 * last op). Arrays of g->tensors->len entries; G_MAXUINT for a tensor no op names. */
static void
lifetimes (const ModelGraph *g, guint *born, guint *dies)
{
  guint nt = g->tensors->len, last = g->ops->len > 0 ? g->ops->len - 1 : 0;
  for (guint i = 0; i < nt; i++)
    {
      born[i] = tensor (g, i)->source == MODEL_TENSOR_INPUT ? 0 : G_MAXUINT;
      dies[i] = last;
    }
  for (guint j = 0; j < g->ops->len; j++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
      const guint *lists[] = { &op->out, op->writes, op->saved, op->frees };
      guint lens[] = { 1, op->n_writes, op->n_saved, op->n_frees };
      for (guint l = 0; l < G_N_ELEMENTS (lists); l++)
        for (guint k = 0; k < lens[l]; k++)
          born[lists[l][k]] = MIN (born[lists[l][k]], j);
      for (guint k = 0; k < op->n_frees; k++)
        dies[op->frees[k]] = j;
    }
}

double
model_graph_transient_peak (const ModelGraph *g, gboolean compile, guint *at_op)
{
  g_return_val_if_fail (g != NULL, 0);
  guint nt = g->tensors->len;
  g_autofree gboolean *kept = g_new0 (gboolean, nt + 1);
  g_autofree guint *born = g_new (guint, nt + 1);
  g_autofree guint *dies = g_new (guint, nt + 1);
  mark_saved (g, compile, kept);
  lifetimes (g, born, dies);
  double peak = 0;
  guint where = 0;
  for (guint j = 0; j < g->ops->len; j++)
    {
      double live = 0;
      for (guint i = 0; i < nt; i++)
        if (!kept[i] && born[i] <= j && j <= dies[i])
          live += tensor (g, i)->bytes;
      if (live > peak)
        peak = live, where = j;
    }
  if (at_op != NULL)
    *at_op = where;
  return peak;
}
