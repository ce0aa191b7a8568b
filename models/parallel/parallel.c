/* models/parallel/parallel.c — data-parallel modes mapped to ZeRO stages; see parallel.h. */
#include "config.h"
#include "models/parallel/parallel.h"
#include "sim/text.h"

static const char *const mode_names[] = {
  "ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_no_shard",
  "fsdp_hybrid_shard", NULL,
};

void
model_parallel_init_defaults (ModelParallel *par)
{
  *par = (ModelParallel){
    .mode = MODEL_DP_DDP,
    .degree = 1,
    .gpus_per_node = 1,
    .bucket_size = 25.0 * 1024 * 1024, /* torch.nn.parallel.DistributedDataParallel bucket_cap_mb */
    .prefetch = 1,
    .algorithm = HW_ALGORITHM_AUTO,
  };
}

const char *
model_parallel_mode_name (ModelDataParallel mode)
{
  g_return_val_if_fail (mode < MODEL_N_DP_MODES, NULL);
  return mode_names[mode];
}

gboolean
model_parallel_mode_from_string (const char *text, ModelDataParallel *out, GError **error)
{
  int i;
  if (!sim_text_lookup (mode_names, "data-parallel mode", text, &i, error))
    return FALSE;
  *out = (ModelDataParallel) i;
  return TRUE;
}

guint
model_parallel_stage (const ModelParallel *par)
{
  switch (par->mode)
    {
    case MODEL_DP_ZERO1:
      return 1;
    case MODEL_DP_ZERO2:
    case MODEL_DP_FSDP_SHARD_GRAD_OP:
      return 2;
    case MODEL_DP_ZERO3:
    case MODEL_DP_FSDP_FULL_SHARD:
    case MODEL_DP_FSDP_HYBRID_SHARD:
      return 3;
    case MODEL_DP_DDP:
    case MODEL_DP_FSDP_NO_SHARD:
    default:
      return 0;
    }
}

guint
model_parallel_shard_size (const ModelParallel *par)
{
  if (model_parallel_stage (par) == 0)
    return 1;
  if (par->mode == MODEL_DP_FSDP_HYBRID_SHARD)
    return MIN (par->gpus_per_node, par->degree);
  return par->degree;
}

guint
model_parallel_replicas (const ModelParallel *par)
{
  return par->degree / model_parallel_shard_size (par);
}

gboolean
model_parallel_keeps_gathered (const ModelParallel *par)
{
  return par->mode == MODEL_DP_FSDP_SHARD_GRAD_OP;
}

gboolean
model_parallel_reduces_every_micro_batch (const ModelParallel *par)
{
  return model_parallel_stage (par) >= 2;
}

gboolean
model_parallel_validate (const ModelParallel *par, GError **error)
{
  if (par->degree < 1 || !(par->bucket_size > 0))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "data-parallel degree must be >= 1 and bucket_size positive");
      return FALSE;
    }
  if (par->mode == MODEL_DP_FSDP_HYBRID_SHARD && par->degree % model_parallel_shard_size (par) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "fsdp_hybrid_shard needs the %u GPUs to be a multiple of the %u GPUs per node",
                   par->degree, par->gpus_per_node);
      return FALSE;
    }
  return TRUE;
}
