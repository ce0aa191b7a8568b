/* models/memory/offload.c — offload choices: names, parsing and consistency; see offload.h. */
#include "config.h"
#include "models/memory/offload.h"

static const char *const target_names[] = { "none", "cpu", "nvme", NULL };
static const char *const op_names[MODEL_N_OFFLOAD_OPS] = {
  "none", "h2d", "d2h", "nvme_read", "nvme_write", "nvme_to_gpu", "cpu_step", "page_in", "page_out",
};
static const char *const place_names[MODEL_N_MEM_PLACES] = { "gpu", "host", "nvme" };

void
model_offload_init_defaults (ModelOffload *o)
{
  g_return_if_fail (o != NULL);
  *o = (ModelOffload){ MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, FALSE };
}

gboolean
model_offload_any (const ModelOffload *o)
{
  return o->optimizer != MODEL_OFFLOAD_NONE || o->parameters != MODEL_OFFLOAD_NONE
         || o->activations != MODEL_OFFLOAD_NONE;
}

const char *
model_offload_target_name (ModelOffloadTarget t)
{
  g_return_val_if_fail (t < MODEL_N_OFFLOAD_TARGETS, NULL);
  return target_names[t];
}

gboolean
model_offload_target_from_string (const char *s, ModelOffloadTarget *out, GError **error)
{
  g_return_val_if_fail (s != NULL && out != NULL, FALSE);
  for (guint i = 0; target_names[i] != NULL; i++)
    if (g_strcmp0 (s, target_names[i]) == 0)
      {
        *out = (ModelOffloadTarget) i;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown offload target '%s' (expected one of: none, cpu, nvme)", s);
  return FALSE;
}

const char *
model_offload_op_name (ModelOffloadOp op)
{
  g_return_val_if_fail (op < MODEL_N_OFFLOAD_OPS, NULL);
  return op_names[op];
}

const char *
model_offload_place_name (ModelMemPlace place)
{
  g_return_val_if_fail (place < MODEL_N_MEM_PLACES, NULL);
  return place_names[place];
}

gboolean
model_offload_validate (const ModelOffload *o, const ModelParallel *par, GError **error)
{
  g_return_val_if_fail (o != NULL && par != NULL, FALSE);
  const char *why = NULL, *key = NULL;
  g_autofree char *why_opt = NULL;
  gboolean grads_sharded
    = model_parallel_state_sharded (par, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE);
  gboolean weights_sharded = model_parallel_state_sharded (par, MODEL_STATE_WEIGHTS,
                                                           MODEL_PHASE_REST);
  if (o->optimizer != MODEL_OFFLOAD_NONE && !grads_sharded)
    {
      /* DeepSpeed offloads the optimizer under stage 1 too (stage 1 and 2 are one class,
       * deepspeed/runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer, cpu_offload; docs
       * config-json.md offload_optimizer): whole gradients stay on the GPU until the
       * accumulation boundary. stepsim's offloaded step (model_offload_volumes, the plan's
       * host step) is modelled over gradients sharded as they accumulate only. */
      key = "optimizer";
      why = why_opt = g_strdup_printf (
        "with [parallel] data_parallel = %s (gradients not sharded as they accumulate) is not "
        "modelled: stepsim models the offloaded optimizer step over sharded gradients only "
        "(DeepSpeed also runs it with ZeRO stage 1); use zero2, zero3 or an FSDP sharding "
        "mode", model_parallel_mode_name (par->mode));
    }
  else if (o->parameters != MODEL_OFFLOAD_NONE && !weights_sharded)
    key = "parameters", why = "needs ZeRO stage 3 ([parallel] data_parallel = zero3 or "
                              "fsdp_full_shard)";
  else if (o->parameters != MODEL_OFFLOAD_NONE && o->optimizer == MODEL_OFFLOAD_NONE)
    key = "parameters", why = "needs the optimizer offloaded too (optimizer = cpu or nvme): "
                              "the GPU optimizer step would need the parameters on the GPU";
  else if (o->activations == MODEL_OFFLOAD_NVME)
    key = "activations", why = "can only be none or cpu";
  if (key == NULL)
    return TRUE;
  ModelOffloadTarget t = g_strcmp0 (key, "optimizer") == 0    ? o->optimizer
                         : g_strcmp0 (key, "parameters") == 0 ? o->parameters
                                                              : o->activations;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s = %s %s", key,
               model_offload_target_name (t), why);
  return FALSE;
}
