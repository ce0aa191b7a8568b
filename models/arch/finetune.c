/* models/arch/finetune.c — LoRA and QLoRA names and per-layer views (finetune.h); the
 * tensors and their counts are the inventory's (inventory.c). */
#include "config.h"
#include "models/arch/finetune.h"
#include "models/arch/inventory.h"
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

/* The inventory of `arch` under `f`, for the per-layer folds below: targets depend on
 * `f`, not on its rank, so a rank of 0 (refused by model_stack_validate_finetune()) is
 * taken as 1 here and the adapter count handles it. */
static ModelInventory *
inventory (const ModelArch *arch, const ModelFinetune *f)
{
  ModelFinetune ft;
  model_finetune_init_defaults (&ft);
  if (f != NULL)
    ft = *f;
  ft.rank = MAX (ft.rank, 1);
  g_autoptr (GError) error = NULL;
  ModelInventory *inv = model_inventory_new (arch, &ft, &error);
  if (inv == NULL)
    g_critical ("%s", error->message);
  return inv;
}

GArray *
model_finetune_layer_linears (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, NULL);
  g_autoptr (ModelInventory) inv = inventory (arch, f);
  return inv != NULL ? model_inventory_layer_linears (inv)
                     : g_array_new (FALSE, FALSE, sizeof (ModelLinear));
}

guint64
model_finetune_layer_linear_params (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  ModelFinetune q;
  model_finetune_init_defaults (&q);
  q.method = MODEL_FINETUNE_QLORA; /* exactly the layers' linear weights are NF4 */
  g_autoptr (ModelInventory) inv = inventory (arch, &q);
  return inv != NULL ? model_inventory_n_nf4 (inv, MODEL_INVENTORY_LAYER) : 0;
}

guint64
model_finetune_layer_adapter_params (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, 0);
  if (!model_finetune_active (f) || f->rank == 0)
    return 0;
  g_autoptr (ModelInventory) inv = inventory (arch, f);
  return inv != NULL ? model_inventory_n_adapter (inv, MODEL_INVENTORY_LAYER) : 0;
}

guint64
model_finetune_max_rank (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, 0);
  if (!model_finetune_active (f))
    return 0;
  g_autoptr (GArray) l = model_finetune_layer_linears (arch, f);
  guint64 m = 0;
  for (guint j = 0; j < l->len; j++)
    {
      const ModelLinear *x = &g_array_index (l, ModelLinear, j);
      if (x->targeted)
        m = MAX (m, MIN (x->in, x->out));
    }
  return m;
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
