/* models/arch/counts.c — parameter counts of an architecture (arch.h) and the per-layer
 * views of a fine-tuning method (finetune.h): each builds the tensor inventory
 * (inventory.h) and folds over it; the closed forms these folds reproduce are in arch.c's
 * comment. Above inventory.c, arch.c and finetune.c: none of those calls these folds.
 */
#include "config.h"
#include "models/arch/arch.h"
#include "models/arch/finetune.h"
#include "models/arch/inventory.h"

/* The full-fine-tuning inventory of `arch` (NULL only for sizes beyond 2^32, which
 * model_arch_validate() refuses long before). */
static ModelInventory *
inventory (const ModelArch *arch)
{
  g_autoptr (GError) error = NULL;
  ModelInventory *inv = model_inventory_new (arch, NULL, &error);
  if (inv == NULL)
    g_critical ("%s", error->message);
  return inv;
}

/* Σ over `roles` (terminated by MODEL_N_TENSOR_ROLES) in `scope`. */
static guint64
n_roles (const ModelArch *arch, ModelInventoryScope scope, const ModelTensorRole *roles)
{
  g_autoptr (ModelInventory) inv = inventory (arch);
  guint64 n = 0;
  for (guint k = 0; inv != NULL && roles[k] != MODEL_N_TENSOR_ROLES; k++)
    n += model_inventory_n_role (inv, scope, roles[k]);
  return n;
}

static const ModelTensorRole attention_roles[] = {
  MODEL_TENSOR_Q, MODEL_TENSOR_K, MODEL_TENSOR_V, MODEL_TENSOR_QKV, MODEL_TENSOR_ATTN_OUT,
  MODEL_N_TENSOR_ROLES,
};
static const ModelTensorRole mlp_roles[] = {
  MODEL_TENSOR_MLP_GATE, MODEL_TENSOR_MLP_UP, MODEL_TENSOR_MLP_DOWN, MODEL_TENSOR_ROUTER,
  MODEL_N_TENSOR_ROLES,
};
static const ModelTensorRole expert_roles[] = {
  MODEL_TENSOR_MLP_GATE, MODEL_TENSOR_MLP_UP, MODEL_TENSOR_MLP_DOWN, MODEL_N_TENSOR_ROLES,
};
static const ModelTensorRole head_roles[] = {
  MODEL_TENSOR_HEAD, MODEL_TENSOR_POOLER, MODEL_TENSOR_CLASSIFIER, MODEL_N_TENSOR_ROLES,
};
static const ModelTensorRole norm_roles[] = { MODEL_TENSOR_NORM, MODEL_N_TENSOR_ROLES };

guint64
model_arch_n_params_attention (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  return n_roles (arch, MODEL_INVENTORY_LAYER, attention_roles);
}

guint64
model_arch_n_params_expert (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  guint64 n = n_roles (arch, MODEL_INVENTORY_LAYER, expert_roles);
  return arch->n_experts > 0 ? n / arch->n_experts : n;
}

guint64
model_arch_n_params_mlp (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  return n_roles (arch, MODEL_INVENTORY_LAYER, mlp_roles);
}

guint64
model_arch_n_params_layer (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_params (inv, MODEL_INVENTORY_LAYER) : 0;
}

guint64
model_arch_n_params_lm_head (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  return n_roles (arch, MODEL_INVENTORY_HEAD, head_roles);
}

guint64
model_arch_n_params_final_norm (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  /* bert is post-LN: its only root norm is the embedding LayerNorm, before the layers */
  return n_roles (arch, MODEL_INVENTORY_HEAD, norm_roles);
}

guint64
model_arch_n_params_embedding (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  if (inv == NULL)
    return 0;
  return model_inventory_n_params (inv, MODEL_INVENTORY_EMBED);
}

guint64
model_arch_n_params (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_params (inv, MODEL_INVENTORY_ALL) : 0;
}

guint64
model_arch_n_params_active (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_active (inv) : 0;
}

/* ---- per-layer views of a fine-tuning method (finetune.h) ---------------------------- */

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
