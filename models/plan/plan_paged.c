/* models/plan/plan_paged.c — paged optimizer states woven into a rank's step through the hooks of
 * plan_paged-private.h; see models/plan/plan_paged.h for the schedule and its sources.
 *
 * Invariants: p->paged_spill is 0 unless the optimizer is paged, and never more than the
 * rank's optimizer states; host DRAM holds the spill for the whole step, the GPU a chunk of
 * it from its page-in's start to its page-out's end (plan_paged.h).
 * Units: B.
 */
#include "config.h"
#include "models/plan/plan_paged.h"
#include "models/plan/plan_paged-private.h"

#include <math.h>

#define NONE G_MAXUINT

/* ---- hooks -------------------------------------------------------------------------------- */

void
plan_paged_initial_state (ModelPlan *p)
{
  if (!model_stack_optimizer_is_paged (&p->stack))
    p->paged_spill = 0;
  p->paged_spill = CLAMP (p->paged_spill, 0, p->initial[MODEL_MEM_OPTIMIZER_STATE]);
  p->initial[MODEL_MEM_OPTIMIZER_STATE] -= p->paged_spill;
}

/* Allocates the spill in host DRAM in the current task (at its start); the handle. */
static guint
host_alloc (ModelPlan *p)
{
  guint h = plan_task_alloc (p, MODEL_MEM_OPTIMIZER_STATE, p->paged_spill, MODEL_EFFECT_AT_START);
  g_array_index (p->handles, ModelMemEffect, h).where = MODEL_MEM_ON_HOST;
  g_array_index (p->effects, ModelMemEffect, p->effects->len - 1).where = MODEL_MEM_ON_HOST;
  return h;
}

void
plan_paged_begin_rank (ModelPlan *p, guint rank)
{
  p->paged_host = 0;
  if (p->paged_spill <= 0)
    return;
  plan_task_begin (p, rank, MODEL_STREAM_CPU, MODEL_TASK_KIND_OFFLOAD, -1, -1,
                   "paged optimizer states");
  p->paged_host = host_alloc (p);
}

guint
plan_paged_n_chunks (const ModelPlan *p, double shard)
{
  if (p->paged_spill <= 0)
    return 0;
  /* bitsandbytes prefetches one state tensor before its update (the largest: the most a
   * migration holds at once), a rank's shard of it under ZeRO/FSDP; whole UVM blocks */
  ModelOptimizerView view = plan_optimizer_view (p);
  double most = model_stack_largest_tensor_state (&p->stack, p->arch, &view) * shard;
  most = MAX (ceil (most / MODEL_PAGED_GRANULE), 1) * MODEL_PAGED_GRANULE;
  return (guint) MAX (ceil (p->paged_spill / most), 1);
}

/* A migration of chunk i on `stream` (no kernels: the executor runs it as a copy). */
static guint
migration (ModelPlan *p, guint rank, ModelStream stream, ModelOffloadOp op, const char *what,
           guint i, double bytes)
{
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_OFFLOAD, -1, -1,
                              "%s optimizer states %u", what, i);
  ModelTask *t = plan_current (p);
  t->offload = op;
  t->amount = t->bytes = bytes;
  return id;
}

/* The last task of `rank` on the compute stream so far (NONE if none). */
static guint
last_compute (const ModelPlan *p, guint rank)
{
  for (guint i = p->tasks->len; i-- > 0;)
    {
      const ModelTask *t = &g_array_index (p->tasks, ModelTask, i);
      if (t->rank != rank)
        break;
      if (t->stream == MODEL_STREAM_COMPUTE)
        return t->id;
    }
  return NONE;
}

guint
plan_paged_chunk_in (ModelPlan *p, guint rank, guint i, double bytes, guint after,
                     guint *handle)
{
  guint compute = i == 0 ? last_compute (p, rank) : NONE;
  guint id = migration (p, rank, MODEL_STREAM_H2D, MODEL_OFFLOAD_OP_PAGE_IN, "page in", i,
                        bytes);
  plan_task_dep (p, compute);
  plan_task_dep (p, after);
  *handle = plan_task_alloc (p, MODEL_MEM_OPTIMIZER_STATE, bytes, MODEL_EFFECT_AT_START);
  return id;
}

void
plan_paged_chunk_out (ModelPlan *p, guint rank, guint i, double bytes, guint step,
                      guint handle)
{
  migration (p, rank, MODEL_STREAM_D2H, MODEL_OFFLOAD_OP_PAGE_OUT, "page out", i, bytes);
  plan_task_dep (p, step);
  plan_task_free (p, handle, MODEL_EFFECT_AT_END);
}

/* ---- queries -------------------------------------------------------------------------------- */

double
model_plan_paged_spill (const ModelPlan *plan)
{
  g_return_val_if_fail (plan != NULL, 0);
  return plan->paged_spill;
}

double
model_plan_paged_round (double spill, double state_bytes)
{
  g_return_val_if_fail (spill >= 0 && state_bytes >= 0, 0);
  return MIN (ceil (spill / MODEL_PAGED_GRANULE) * MODEL_PAGED_GRANULE, state_bytes);
}
