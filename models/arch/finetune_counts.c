/* models/arch/finetune_counts.c — the per-layer views of a fine-tuning method (finetune.h):
 * the layer's projections with what LoRA targets, the elements QLoRA stores as NF4, the
 * adapter parameters and the largest meaningful rank, each a fold over the tensor
 * inventory (inventory.h) built for the method. Above inventory.c and finetune.c: neither
 * calls these folds.
 */
#include "config.h"
#include "models/arch/finetune.h"
#include "models/arch/inventory.h"

/* The inventory of `arch` under `f`, for the per-layer folds below: targets depend on
 * `f`, not on its rank, so a rank of 0 (refused by model_stack_validate_finetune()) is
 * taken as 1 here and the adapter count handles it. */
static ModelInventory *
inventory_under (const ModelArch *arch, const ModelFinetune *f)
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
  g_autoptr (ModelInventory) inv = inventory_under (arch, f);
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
  g_autoptr (ModelInventory) inv = inventory_under (arch, &q);
  return inv != NULL ? model_inventory_n_nf4 (inv, MODEL_INVENTORY_LAYER) : 0;
}

guint64
model_finetune_layer_adapter_params (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, 0);
  if (!model_finetune_active (f) || f->rank == 0)
    return 0;
  g_autoptr (ModelInventory) inv = inventory_under (arch, f);
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
