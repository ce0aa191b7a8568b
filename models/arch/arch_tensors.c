/* models/arch/arch_tensors.c — the parameter tensors of an architecture (arch.h): every
 * nn.Module parameter of the HF implementation, grouped by shape, in module order; their
 * elements sum to the counts of arch.c. */
#include "config.h"
#include "models/arch/arch.h"

static void
add_tensor (GArray *out, guint64 rows, guint64 cols, guint64 count)
{
  if (rows == 0 || cols == 0 || count == 0)
    return;
  ModelArchTensor t = { rows, cols, count };
  g_array_append_val (out, t);
}

static void
add_norm (GArray *out, const ModelArch *arch, guint64 count)
{
  add_tensor (out, arch->hidden_size, 1, count);
  if (arch->norm == MODEL_NORM_LAYER)
    add_tensor (out, arch->hidden_size, 1, count);
}

/* One layer's tensors, `L` times (nn.Linear weights are out × in; rows × cols here). */
static void
add_layer_tensors (GArray *out, const ModelArch *arch, guint64 L)
{
  guint64 h = arch->hidden_size, q = arch->n_heads * arch->head_dim;
  guint64 kv = arch->n_kv_heads * arch->head_dim, i = arch->intermediate_size;
  guint64 E = arch->n_experts > 0 ? arch->n_experts : 1;
  if (model_arch_fused_qkv (arch))
    add_tensor (out, q + 2 * kv, h, L);
  else
    {
      add_tensor (out, q, h, L);
      add_tensor (out, kv, h, 2 * L);
    }
  add_tensor (out, h, q, L);
  if (arch->qkv_bias && model_arch_fused_qkv (arch))
    add_tensor (out, q + 2 * kv, 1, L);
  else if (arch->qkv_bias)
    {
      add_tensor (out, q, 1, L);
      add_tensor (out, kv, 1, 2 * L);
    }
  if (arch->attn_out_bias)
    add_tensor (out, h, 1, L);
  if (arch->n_experts > 0)
    add_tensor (out, arch->n_experts, h, L); /* router */
  add_tensor (out, i, h, (arch->mlp == MODEL_MLP_SWIGLU ? 2 : 1) * E * L);
  add_tensor (out, h, i, E * L);
  if (arch->mlp_bias)
    {
      add_tensor (out, i, 1, (arch->mlp == MODEL_MLP_SWIGLU ? 2 : 1) * E * L);
      add_tensor (out, h, 1, E * L);
    }
  add_norm (out, arch, 2 * L);
}

/* Every tensor, with `L` transformer layers (0: the root unit's alone). */
static GArray *
param_tensors (const ModelArch *arch, guint64 L)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelArchTensor));
  guint64 h = arch->hidden_size;
  gboolean bert = arch->family == MODEL_FAMILY_BERT;
  add_tensor (out, arch->vocab_size, h, 1);
  if (arch->learned_positions)
    add_tensor (out, arch->max_positions, h, 1);
  if (bert)
    {
      add_tensor (out, arch->type_vocab_size, h, 1);
      add_norm (out, arch, 1);
    }
  add_layer_tensors (out, arch, L);
  if (bert)
    {
      add_tensor (out, h, h, 1);
      add_tensor (out, h, 1, 1);
      add_tensor (out, arch->num_labels, h, 1);
      add_tensor (out, arch->num_labels, 1, 1);
      return out;
    }
  add_norm (out, arch, 1);
  if (!arch->tied_embeddings)
    add_tensor (out, arch->vocab_size, h, 1);
  return out;
}

GArray *
model_arch_param_tensors (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);
  return param_tensors (arch, arch->n_layers);
}

GArray *
model_arch_root_tensors (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);
  return param_tensors (arch, 0);
}

GArray *
model_arch_layer_tensors (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelArchTensor));
  add_layer_tensors (out, arch, 1);
  return out;
}

guint64
model_arch_largest_tensor (const ModelArch *arch)
{
  g_autoptr (GArray) t = model_arch_param_tensors (arch);
  guint64 m = 0;
  for (guint k = 0; k < t->len; k++)
    {
      const ModelArchTensor *x = &g_array_index (t, ModelArchTensor, k);
      m = MAX (m, x->rows * x->cols);
    }
  return m;
}
