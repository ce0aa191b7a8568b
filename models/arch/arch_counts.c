/* models/arch/arch_counts.c — parameter counts of an architecture (arch.h): each builds the
 * full-fine-tuning tensor inventory (inventory.h) and folds over it; the closed forms these
 * folds reproduce are in arch.c's comment. Above inventory.c and arch.c: neither calls
 * these folds. The per-layer views of a fine-tuning method are finetune_counts.c's.
 */
#include "config.h"
#include "models/arch/arch.h"
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

/* Σ over every tensor in `scope`. */
static guint64
n_scope (const ModelArch *arch, ModelInventoryScope scope)
{
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_params (inv, scope) : 0;
}

static const ModelTensorRole attention_roles[] = {
  MODEL_TENSOR_Q, MODEL_TENSOR_K, MODEL_TENSOR_V, MODEL_TENSOR_QKV, MODEL_TENSOR_ATTN_OUT,
  MODEL_TENSOR_Q_A, MODEL_TENSOR_Q_B, MODEL_TENSOR_KV_A, MODEL_TENSOR_KV_B, MODEL_TENSOR_MLA_NORM,
  MODEL_TENSOR_ATTN_SINK, /* gpt_oss: the card's attention count includes the sinks */
  MODEL_N_TENSOR_ROLES,
};
static const ModelTensorRole mlp_roles[] = {
  MODEL_TENSOR_MLP_GATE, MODEL_TENSOR_MLP_UP, MODEL_TENSOR_MLP_DOWN, MODEL_TENSOR_ROUTER,
  MODEL_TENSOR_SHARED_GATE, MODEL_TENSOR_SHARED_UP, MODEL_TENSOR_SHARED_DOWN,
  MODEL_TENSOR_SHARED_EXPERT_GATE, MODEL_N_TENSOR_ROLES,
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
  return n_scope (arch, MODEL_INVENTORY_LAYER);
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
  return n_scope (arch, MODEL_INVENTORY_EMBED);
}

guint64
model_arch_n_params (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  return n_scope (arch, MODEL_INVENTORY_ALL);
}

guint64
model_arch_n_params_active (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_active (inv) : 0;
}

/* ---- DeepSeek ---------------------------------------------------------------------- */

guint64
model_arch_n_params_of_layer (const ModelArch *arch, guint64 layer)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (ModelInventory) inv = inventory (arch);
  return inv != NULL ? model_inventory_n_params_of_layer (inv, layer) : 0;
}

/* DeepSeek-V3 MTP module (arXiv 2412.19437 §2.2, eq. 21: h' = M·[RMSNorm(h);
 * RMSNorm(Emb(t))]; HF checkpoint model.layers.61: enorm, hnorm, eh_proj 2h → h, one
 * DeepseekV3DecoderLayer with the MoE block, shared_head.norm; embed_tokens and
 * shared_head.head duplicate the main model's and are not counted). DeepSeek-V3:
 * 3·7168 + 2·7168² + 11,507,286,272 = 11,610,068,224 (models/configs/README.md). */
guint64
model_arch_n_params_mtp (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  guint64 n = arch->deepseek.n_mtp_layers;
  if (n == 0 || arch->n_layers == 0 || n > G_MAXUINT)
    return 0;
  /* a fold over the inventory's MTP modules (inventory.h model_inventory_new_mtp): per
   * depth 3 norms of h, eh_proj 2h·h and a copy of the main stack's last (MoE) layer */
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelInventory) inv = model_inventory_new_mtp (arch, NULL, (guint) n, &error);
  return inv != NULL ? model_inventory_n_params (inv, MODEL_INVENTORY_MTP) : 0;
}
