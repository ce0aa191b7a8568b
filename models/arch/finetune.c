/* models/arch/finetune.c — LoRA and QLoRA: defaults, names and NF4 storage (finetune.h);
 * the per-layer views of the projections and adapters are folds over the tensor inventory
 * (finetune_counts.c), which reads these. */
#include "config.h"
#include "models/arch/finetune.h"
#include "sim/text.h"

#include <string.h>

static const char *const method_names[] = { "none", "lora", "qlora", NULL };
static const char *const targets_names[] = { "all_linear", "attention", "qv", NULL };

void
model_finetune_init_defaults (ModelFinetune *f)
{
  g_return_if_fail (f != NULL);
  *f = (ModelFinetune){
    .method = MODEL_FINETUNE_NONE,
    .rank = 8,
    .targets = MODEL_LORA_ALL_LINEAR,
    .double_quant = TRUE,
  };
}

const char *
model_finetune_method_name (ModelFinetuneMethod m)
{
  return (guint) m < G_N_ELEMENTS (method_names) - 1 ? method_names[m] : "?";
}

const char *
model_finetune_targets_name (ModelLoraTargets t)
{
  return (guint) t < G_N_ELEMENTS (targets_names) - 1 ? targets_names[t] : "?";
}


gboolean
model_finetune_method_from_string (const char *s, ModelFinetuneMethod *out, GError **error)
{
  int v;
  if (!sim_text_lookup (method_names, "finetune method", s, &v, error))
    return FALSE;
  *out = (ModelFinetuneMethod) v;
  return TRUE;
}

gboolean
model_finetune_targets_from_string (const char *s, ModelLoraTargets *out, GError **error)
{
  int v;
  if (!sim_text_lookup (targets_names, "LoRA targets", s, &v, error))
    return FALSE;
  *out = (ModelLoraTargets) v;
  return TRUE;
}

gboolean
model_finetune_active (const ModelFinetune *f)
{
  return f != NULL && f->method != MODEL_FINETUNE_NONE;
}

double
model_finetune_nf4_constant_bytes (const ModelFinetune *f)
{
  g_return_val_if_fail (f != NULL, 0);
  /* QLoRA §3: blocks of 64 with an fp32 absmax, 32/64 bit per weight; double quantization:
   * 8-bit absmax + an fp32 constant per 256 blocks, 8/64 + 32/(64·256) bit. */
  double bits = f->double_quant ? 8.0 / 64 + 32.0 / (64.0 * 256) : 32.0 / 64;
  return bits / 8;
}
