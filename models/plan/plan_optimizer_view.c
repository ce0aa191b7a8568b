/* models/plan/plan_optimizer_view.c — the tensors the optimizer steps as the data-parallel
 * wrapper presents them (models/stack/stack.h ModelOptimizerView; plan-private.h declares
 * it): shape-dependent optimizers (Adafactor's factoring, 8-bit Adam's smallest 8-bit
 * tensor) keep what they keep for those, not for the model's parameters. Read by the
 * initial state (plan_state.c), the optimizer step (plan_step.c), the offloaded step
 * (plan_offload.c) and paged states (plan_paged.c); calls nothing of the plan's. */
#include "config.h"
#include "models/plan/plan-private.h"

ModelOptimizerView
plan_optimizer_view (const ModelPlan *p)
{
  ModelOptimizerView v = { MODEL_OPTIMIZER_SEES_PARAMETERS, 1 };
  double f = model_parallel_local_fraction (&p->par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_REST);
  ModelFrameworkKind k = p->stack.framework.kind;
  gboolean ranges = k == MODEL_FRAMEWORK_MEGATRON || k == MODEL_FRAMEWORK_NANOTRON;
  switch (p->par.mode)
    {
    case MODEL_DP_ZERO1:
    case MODEL_DP_ZERO2:
    case MODEL_DP_ZERO3:
      if (!ranges)
        v.sees = MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS;
      else if (f < 1)
        v.sees = MODEL_OPTIMIZER_SEES_SHARD_VIEWS, v.shards = 1 / f;
      break;
    case MODEL_DP_FSDP_FULL_SHARD:
    case MODEL_DP_FSDP_SHARD_GRAD_OP:
    case MODEL_DP_FSDP_HYBRID_SHARD:
      if (!p->stack.framework.fsdp2 && f < 1)
        v.sees = MODEL_OPTIMIZER_SEES_SHARD_VIEWS, v.shards = 1 / f;
      break;
    default:
      break;
    }
  return v;
}
