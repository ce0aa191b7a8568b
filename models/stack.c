/* models/stack.c — technique stack names and per-parameter byte counts; see stack.h. */
#include "config.h"
#include "models/stack.h"

static const char *const precision_names[] = { "fp32", "bf16_mixed", "fp16_mixed", NULL };
static const char *const optimizer_names[] = { "adamw", "sgd_momentum", NULL };
static const char *const checkpointing_names[] = { "none", "full", NULL };

void
model_stack_init_defaults (ModelStack *stack)
{
  *stack = (ModelStack){
    .micro_batch = 1,
    .seq_len = 2048,
    .grad_accum = 1,
    .precision = MODEL_PRECISION_BF16_MIXED,
    .optimizer = MODEL_OPTIMIZER_ADAMW,
    .checkpointing = MODEL_CHECKPOINTING_NONE,
    .flash_attention = TRUE,
    .tf32 = FALSE,
    .dropout = 0,
  };
}

static gboolean
lookup (const char *const *names, const char *what, const char *s, int *out, GError **error)
{
  for (int i = 0; names[i] != NULL; i++)
    if (g_strcmp0 (names[i], s) == 0)
      {
        *out = i;
        return TRUE;
      }
  g_autofree char *list = g_strjoinv (", ", (char **) names);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown %s '%s' (expected one of: %s)", what, s, list);
  return FALSE;
}

const char *
model_stack_precision_name (ModelPrecision p)
{
  return precision_names[p];
}

const char *
model_stack_optimizer_name (ModelOptimizer o)
{
  return optimizer_names[o];
}

const char *
model_stack_checkpointing_name (ModelCheckpointing c)
{
  return checkpointing_names[c];
}

gboolean
model_stack_precision_from_string (const char *s, ModelPrecision *out, GError **error)
{
  int v;
  if (!lookup (precision_names, "precision", s, &v, error))
    return FALSE;
  *out = (ModelPrecision) v;
  return TRUE;
}

gboolean
model_stack_optimizer_from_string (const char *s, ModelOptimizer *out, GError **error)
{
  int v;
  if (!lookup (optimizer_names, "optimizer", s, &v, error))
    return FALSE;
  *out = (ModelOptimizer) v;
  return TRUE;
}

gboolean
model_stack_checkpointing_from_string (const char *s, ModelCheckpointing *out, GError **error)
{
  int v;
  if (!lookup (checkpointing_names, "checkpointing", s, &v, error))
    return FALSE;
  *out = (ModelCheckpointing) v;
  return TRUE;
}

static gboolean
is_mixed (const ModelStack *s)
{
  return s->precision != MODEL_PRECISION_FP32;
}

double
model_stack_weight_bytes (const ModelStack *s)
{
  return is_mixed (s) ? 2 : 4;
}

double
model_stack_master_bytes (const ModelStack *s)
{
  return is_mixed (s) ? 4 : 0;
}

double
model_stack_gradient_bytes (const ModelStack *s)
{
  return is_mixed (s) ? 2 : 4;
}

double
model_stack_optimizer_bytes (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_ADAMW ? 8 : 4;
}

double
model_stack_state_bytes (const ModelStack *s)
{
  return model_stack_weight_bytes (s) + model_stack_master_bytes (s)
         + model_stack_gradient_bytes (s) + model_stack_optimizer_bytes (s);
}

double
model_stack_activation_bytes (const ModelStack *s)
{
  return is_mixed (s) ? 2 : 4;
}

HwDtype
model_stack_compute_dtype (const ModelStack *s)
{
  switch (s->precision)
    {
    case MODEL_PRECISION_BF16_MIXED:
      return HW_DTYPE_BF16;
    case MODEL_PRECISION_FP16_MIXED:
      return HW_DTYPE_FP16;
    case MODEL_PRECISION_FP32:
    default:
      return s->tf32 ? HW_DTYPE_TF32 : HW_DTYPE_FP32;
    }
}

double
model_stack_optimizer_step_bytes (const ModelStack *s)
{
  /* Read: fp32 parameter (master in mixed), gradient, states; write: parameter, states,
   * and in mixed precision the fresh compute copy. */
  double param = 4, grad = model_stack_gradient_bytes (s), states = model_stack_optimizer_bytes (s);
  double copy = is_mixed (s) ? model_stack_weight_bytes (s) : 0;
  return (param + grad + states) + (param + states + copy);
}

double
model_stack_optimizer_step_flops (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_ADAMW ? 12 : 4;
}
