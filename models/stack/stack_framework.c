/* models/stack/stack_framework.c — which combinations of framework knobs (framework.h) and
 * the rest of the technique stack are modelled, and the knobs the stack implies (stack.h:
 * model_stack_validate_framework, model_stack_resolve_framework). A leaf: it reads the
 * stack and the framework, nothing calls back into it but the scenario loader. */
#include "config.h"
#include "models/stack/stack.h"

static gboolean
refuse (GError **error, const char *key, const char *why)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [training], key '%s': %s", key, why);
  return FALSE;
}

gboolean
model_stack_validate_framework (const ModelStack *s, const ModelParallel *par, GError **error)
{
  g_return_val_if_fail (s != NULL && par != NULL, FALSE);
  const ModelFramework *fw = &s->framework;
  gboolean offload_opt = s->offload.optimizer != MODEL_OFFLOAD_NONE;
  if (fw->optimizer_impl == MODEL_OPTIMIZER_IMPL_CPU_ADAM && !offload_opt)
    return refuse (error, "optimizer_impl", "cpu_adam is DeepSpeed's host-side Adam "
                   "(DeepSpeedCPUAdam): it needs [offload] optimizer = cpu or nvme");
  if (fw->optimizer_impl == MODEL_OPTIMIZER_IMPL_CPU_ADAM && s->optimizer != MODEL_OPTIMIZER_ADAMW)
    return refuse (error, "optimizer_impl", "cpu_adam steps Adam/AdamW: needs [training] "
                   "optimizer = adamw");
  if (fw->optimizer_in_backward)
    {
      if (s->grad_accum > 1)
        return refuse (error, "optimizer_in_backward", "needs grad_accum = 1 (each gradient "
                       "is consumed by its step as it is produced; torchtune refuses "
                       "gradient_accumulation_steps > 1 with optimizer_in_bwd)");
      if (par->degree > 1)
        return refuse (error, "optimizer_in_backward", "with more than one data-parallel "
                       "rank is not modelled");
      if (offload_opt)
        return refuse (error, "optimizer_in_backward", "with [offload] optimizer is not "
                       "modelled (the step runs on the host)");
      if (model_stack_optimizer_is_paged (s))
        return refuse (error, "optimizer_in_backward", "with a paged optimizer is not "
                       "modelled");
    }
  if (fw->main_grad_fp32 && par->degree > 1
      && model_parallel_state_sharded (par, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE))
    return refuse (error, "main_grad_fp32", "the fp32 main_grad buffer is full-size "
                   "(Megatron-LM param_and_grad_buffer.py; its distributed optimizer is "
                   "ZeRO-1): with gradients sharded ([parallel] data_parallel stage 2 or 3) it "
                   "is not modelled");
  return TRUE;
}

void
model_stack_resolve_framework (ModelStack *s)
{
  g_return_if_fail (s != NULL);
  if (s->framework.activation_offload && s->offload.activations == MODEL_OFFLOAD_NONE)
    s->offload.activations = MODEL_OFFLOAD_CPU;
}
