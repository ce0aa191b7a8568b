/* models/ops/graph.c — the saved-tensor graph (graph.h): construction and the policies that
 * read it. Invariant: every op's `out` and `saved` index an existing tensor. */
#include "config.h"
#include "models/ops/graph.h"

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
model_graph_mark_core (ModelGraph *g, guint t)
{
  g_return_if_fail (g != NULL && t < g->tensors->len);
  g_array_index (g->tensors, ModelGraphTensor, t).attn_core = TRUE;
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
    case MODEL_GRAPH_KEEP_NON_CORE:
      return !t->attn_core;
    case MODEL_GRAPH_KEEP_MATMUL:
    case MODEL_GRAPH_KEEP_MATMUL_SAVED:
      return t->source != MODEL_TENSOR_POINTWISE;
    case MODEL_GRAPH_KEEP_ALL:
    default:
      return TRUE;
    }
}

double
model_graph_saved (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                   double *sizes, guint max, guint *n_out)
{
  g_return_val_if_fail (g != NULL, 0);
  guint nt = g->tensors->len;
  g_autofree gboolean *mark = g_new0 (gboolean, nt + 1);
  for (guint j = 0; j < g->ops->len; j++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, j);
      for (guint k = 0; k < op->n_saved; k++)
        mark[compile ? kept_for (g, op->saved[k]) : op->saved[k]] = TRUE;
    }
  if (policy == MODEL_GRAPH_KEEP_MATMUL)
    /* torchtitan's policy caches every matmul and attention output, saved by an op or not
     * (the recompute reruns the point-wise ops from them); the block input is the
     * checkpoint's own. */
    for (guint i = 0; i < nt; i++)
      if (tensor (g, i)->source != MODEL_TENSOR_POINTWISE)
        mark[i] = TRUE;
  double sum = 0;
  guint n = 0;
  for (guint i = 0; i < nt; i++)
    {
      const ModelGraphTensor *t = tensor (g, i);
      if (!mark[i] || !policy_keeps (t, policy) || t->bytes <= 0)
        continue;
      sum += t->bytes;
      if (sizes != NULL && n < max)
        sizes[n] = t->bytes;
      n++;
    }
  if (n_out != NULL)
    *n_out = n;
  return sum;
}
