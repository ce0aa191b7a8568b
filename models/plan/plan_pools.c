/* models/plan/plan_pools.c — the CUDA stream each buffer a framework allocates is made on,
 * so the caching allocator serves it from that stream's pool (models/memory/allocator.h
 * "streams"); plan-private.h declares these.
 *
 * PyTorch's FSDP (data_parallel fsdp_*, FSDP1 and FSDP2 alike) allocates outside the
 * compute stream:
 * - the gathered parameters: FSDP1 unshards under `state._unshard_stream`
 *   (torch/distributed/fsdp/_runtime_utils.py _unshard: `with
 *   state._device_handle.stream(unshard_stream): handle.unshard()`, whose
 *   _alloc_padded_unsharded_flat_param allocates _full_param_padded); FSDP2's
 *   foreach_all_gather allocates the all-gather output under all_gather_copy_in_stream
 *   (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py). stepsim's gathered buffer
 *   (plan_step.c gather_block) stands for it; FSDP2's copy-out into the unsharded
 *   parameters on the compute stream is not a buffer of its own here;
 * - the kept gradient shards: FSDP1 _post_backward_hook reduces under
 *   `state._post_backward_stream` (_reduce_grad: `new_sharded_grad =
 *   torch.empty_like(chunks[0])`); FSDP2 foreach_reduce allocates reduce_output "in the
 *   RS stream and used in the default stream (for optimizer)" (its comment), and the
 *   sharded parameters hold it through the optimizer step.
 * Blocks freed there (a layer's gathered buffer after its use, the gradient shards at
 * zero_grad's set_to_none) are cached for those streams only: the forward's activations
 * cannot reuse them, which is where FSDP's reserved memory exceeds its allocated memory.
 * DeepSpeed's ZeRO-3 gathers under its all-gather stream as well
 * (runtime/zero/partitioned_param_coordinator.py fetch_sub_module: `with
 * get_accelerator().stream(self.__allgather_stream)` around all_gather_coalesced, whose
 * _all_gather_coalesced allocates the flat buffer, partition_parameters.py; free_param's
 * record_stream only delays the block's reuse), but reduces into gradient partitions it
 * allocates at initialization (stage3.py), so its gradients stay on the compute stream. */
#include "config.h"
#include "models/plan/plan-private.h"

/* Whether the plan shards with PyTorch's FSDP (a sharding fsdp_* mode). */
static gboolean
pytorch_fsdp (const ModelPlan *p)
{
  ModelDataParallel m = p->par.mode;
  return m == MODEL_DP_FSDP_FULL_SHARD || m == MODEL_DP_FSDP_HYBRID_SHARD
         || m == MODEL_DP_FSDP_SHARD_GRAD_OP;
}

ModelAllocStream
plan_gather_stream (const ModelPlan *p)
{
  return pytorch_fsdp (p) || p->par.mode == MODEL_DP_ZERO3 ? MODEL_ALLOC_STREAM_ALL_GATHER
                                                           : MODEL_ALLOC_STREAM_COMPUTE;
}

ModelAllocStream
plan_grad_shard_stream (const ModelPlan *p)
{
  return pytorch_fsdp (p) ? MODEL_ALLOC_STREAM_REDUCE_SCATTER : MODEL_ALLOC_STREAM_COMPUTE;
}
