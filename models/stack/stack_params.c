/* models/stack/stack_params.c — what trains and what is stored, per stack (stack.h): every
 * parameter under full fine-tuning, the LoRA/QLoRA adapters over a frozen base otherwise
 * (models/arch/finetune.h). */
#include "config.h"
#include "models/stack/stack.h"

static gboolean
lora (const ModelStack *s)
{
  return model_finetune_active (&s->finetune);
}

static gboolean
qlora (const ModelStack *s)
{
  return s->finetune.method == MODEL_FINETUNE_QLORA;
}

static double
root_params (const ModelArch *arch)
{
  return (double) (model_arch_n_params (arch)
                   - arch->n_layers * model_arch_n_params_layer (arch));
}

double
model_stack_trainable_layer_params (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  return lora (s) ? (double) model_finetune_layer_adapter_params (arch, &s->finetune)
                  : (double) model_arch_n_params_layer (arch);
}

double
model_stack_trainable_root_params (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  return lora (s) ? 0 : root_params (arch);
}

double
model_stack_trainable_params (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  if (!lora (s))
    return (double) model_arch_n_params (arch);
  return (double) arch->n_layers * model_stack_trainable_layer_params (s, arch);
}

/* `tensors` with every count multiplied by `times`. */
static GArray *
times (GArray *tensors, guint64 times)
{
  for (guint k = 0; k < tensors->len; k++)
    g_array_index (tensors, ModelArchTensor, k).count *= times;
  return tensors;
}

GArray *
model_stack_trainable_tensors (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, NULL);
  if (!lora (s))
    return model_arch_param_tensors (arch);
  return times (model_finetune_layer_adapter_tensors (arch, &s->finetune), arch->n_layers);
}

GArray *
model_stack_layer_trainable_tensors (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, NULL);
  return lora (s) ? model_finetune_layer_adapter_tensors (arch, &s->finetune)
                  : model_arch_layer_tensors (arch);
}

double
model_stack_layer_weight_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  double w = model_stack_weight_bytes (s), base = (double) model_arch_n_params_layer (arch);
  if (!lora (s))
    return w * base;
  double adapters = w * model_stack_trainable_layer_params (s, arch);
  if (!qlora (s))
    return w * base + adapters;
  double linear = (double) model_finetune_layer_linear_params (arch);
  return MODEL_NF4_BYTES * linear + w * (base - linear) + adapters;
}

double
model_stack_root_weight_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  return model_stack_weight_bytes (s) * root_params (arch);
}

double
model_stack_lora_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  return lora (s) ? model_stack_weight_bytes (s) * model_stack_trainable_params (s, arch) : 0;
}

double
model_stack_weights_total (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  return (double) arch->n_layers * model_stack_layer_weight_bytes (s, arch)
         + model_stack_root_weight_bytes (s, arch);
}

static void
append_tensors (GArray *out, GArray *tensors, double bytes_matrix, double bytes_vector,
                guint64 times)
{
  for (guint k = 0; k < tensors->len; k++)
    {
      const ModelArchTensor *t = &g_array_index (tensors, ModelArchTensor, k);
      double b = (double) (t->rows * t->cols) * (t->cols >= 2 ? bytes_matrix : bytes_vector);
      for (guint64 j = 0; j < t->count * times; j++)
        g_array_append_val (out, b);
    }
}

GArray *
model_stack_weight_tensor_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  double w = model_stack_weight_bytes (s);
  g_autoptr (GArray) root = model_arch_root_tensors (arch);
  g_autoptr (GArray) layer = model_arch_layer_tensors (arch);
  append_tensors (out, root, w, w, 1);
  /* In a layer the matrices are exactly the nn.Linear weights: NF4 under QLoRA. */
  append_tensors (out, layer, qlora (s) ? MODEL_NF4_BYTES : w, w, arch->n_layers);
  return out;
}

gboolean
model_stack_validate_finetune (const ModelStack *s, GError **error)
{
  g_return_val_if_fail (s != NULL, FALSE);
  const ModelFinetune *f = &s->finetune;
  if (!model_finetune_active (f))
    return TRUE;
  const char *m = model_finetune_method_name (f->method);
  if (f->rank < 1)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [finetune], key 'rank': must be at least 1");
      return FALSE;
    }
  if (s->precision == MODEL_PRECISION_FP8_MIXED)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [finetune], key 'method': %s with [training] precision fp8_mixed is "
                   "not modelled", m);
      return FALSE;
    }
  if (f->method == MODEL_FINETUNE_QLORA && s->precision == MODEL_PRECISION_FP32)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [finetune], key 'method': qlora computes in 16 bit "
                   "(bnb_4bit_compute_dtype): [training] precision must be bf16_mixed, "
                   "fp16_mixed, bf16, bf16_amp or fp16_amp, not fp32");
      return FALSE;
    }
  if (s->offload.parameters != MODEL_OFFLOAD_NONE)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [finetune], key 'method': %s with [offload] parameters is not "
                   "modelled (offload the optimizer instead)", m);
      return FALSE;
    }
  return TRUE;
}
