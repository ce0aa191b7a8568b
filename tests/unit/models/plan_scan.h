/* tests/unit/models/plan_scan.h — reading a built plan back in the plan tests
 * (test_plan_tp.c, test_plan_tp_moe.c, test_plan_cp.c, test_plan_ep.c, test_plan_ep_cp.c):
 * what one rank's task allocates, and the kernels it runs.
 * Header-only (static inline). */
#pragma once

#include <string.h>
#include "models/plan/plan.h"

/* B that rank `rank`'s task labelled `label` allocates in `category` (the sum of its
 * positive memory effects there). Aborts the test program when the rank has no such task
 * (a scan of a missing task must not pass as 0 B). */
static inline double
plan_scan_allocated (const ModelPlan *p, guint rank, const char *label, ModelMemCategory category)
{
  double sum = 0;
  gboolean found = FALSE;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != rank || g_strcmp0 (t->label, label) != 0)
        continue;
      found = TRUE;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
          if (m->category == category && m->bytes > 0)
            sum += m->bytes;
        }
    }
  g_assert (found);
  return sum;
}

/* B of activations rank 0's first layer keeps from its first micro-batch's forward (task
 * "fwd L0 mb0"). */
static inline double
plan_scan_layer_activations (const ModelPlan *p)
{
  return plan_scan_allocated (p, 0, "fwd L0 mb0", MODEL_MEM_ACTIVATIONS);
}

/* The kernels named `name` in rank 0's task `label`, at most `max` of them written to `out`
 * (borrowed from the plan); returns how many were written. */
static inline guint
plan_scan_kernels (const ModelPlan *p, const char *label, const char *name, const ModelOp **out,
                   guint max)
{
  guint n = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || g_strcmp0 (t->label, label) != 0)
        continue;
      for (guint j = 0; j < t->n_kernels; j++)
        {
          const ModelOp *op = &model_plan_kernel (p, t->first_kernel + j)->op;
          if (g_strcmp0 (op->name, name) == 0 && n < max)
            out[n++] = op;
        }
    }
  return n;
}

/* Whether rank `rank`'s first task on `stream` for `layer` of micro-batch `mb` built after
 * its receive of that micro-batch's output gradient (the first task on the pipeline's
 * backward-receive stream for `mb`) depends on that receive. Aborts the test program when
 * either task is missing. */
static inline gboolean
plan_scan_waits_for_grad (const ModelPlan *p, guint rank, ModelStream stream, gint layer, gint mb)
{
  guint recv = G_MAXUINT, first = G_MAXUINT;
  for (guint k = 0; k < model_plan_n_tasks (p) && first == G_MAXUINT; k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != rank || t->micro_batch != mb)
        continue;
      if (recv == G_MAXUINT && t->stream == MODEL_STREAM_PP_BWD_RECV)
        recv = t->id;
      else if (recv != G_MAXUINT && t->stream == stream && t->layer == layer)
        first = t->id;
    }
  g_assert (recv != G_MAXUINT && first != G_MAXUINT);
  const ModelTask *t = model_plan_task (p, first);
  for (guint d = 0; d < t->n_deps; d++)
    if (model_plan_dep (p, t->first_dep + d) == recv)
      return TRUE;
  return FALSE;
}
