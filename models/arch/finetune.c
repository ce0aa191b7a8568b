/* models/arch/finetune.c — LoRA and QLoRA parameter accounting (finetune.h). */
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

typedef enum
{
  KIND_Q, KIND_K, KIND_V, KIND_QKV, KIND_O, KIND_ROUTER, KIND_MLP,
} Kind;

static gboolean
targeted (Kind k, const ModelFinetune *f)
{
  if (!model_finetune_active (f))
    return FALSE;
  switch (f->targets)
    {
    case MODEL_LORA_ALL_LINEAR: return TRUE; /* the MoE router too: an nn.Linear */
    case MODEL_LORA_ATTENTION: return k != KIND_ROUTER && k != KIND_MLP;
    case MODEL_LORA_QV: return k == KIND_Q || k == KIND_V || k == KIND_QKV;
    }
  return FALSE;
}

static void
add (GArray *out, const ModelFinetune *f, Kind k, guint64 in, guint64 outf, guint64 count,
     double tokens)
{
  ModelLinear l = { in, outf, count, tokens, targeted (k, f), k <= KIND_O };
  g_array_append_val (out, l);
}

GArray *
model_finetune_layer_linears (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelLinear));
  guint64 h = arch->hidden_size, q = arch->n_heads * arch->head_dim;
  guint64 c = arch->n_kv_heads * arch->head_dim, i = arch->intermediate_size;
  if (model_arch_fused_qkv (arch))
    add (out, f, KIND_QKV, h, q + 2 * c, 1, 1);
  else
    {
      add (out, f, KIND_Q, h, q, 1, 1);
      add (out, f, KIND_K, h, c, 1, 1);
      add (out, f, KIND_V, h, c, 1, 1);
    }
  add (out, f, KIND_O, q, h, 1, 1);
  guint64 E = arch->n_experts > 0 ? arch->n_experts : 1;
  double k = arch->n_experts > 0 ? (double) arch->experts_per_token / (double) E : 1.0;
  if (arch->n_experts > 0)
    add (out, f, KIND_ROUTER, h, arch->n_experts, 1, 1);
  if (arch->mlp == MODEL_MLP_SWIGLU)
    add (out, f, KIND_MLP, h, i, 2 * E, k); /* gate, up */
  else
    add (out, f, KIND_MLP, h, i, E, k);     /* fc */
  add (out, f, KIND_MLP, i, h, E, k);       /* down / proj */
  return out;
}

guint64
model_finetune_layer_linear_params (const ModelArch *arch)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (GArray) l = model_finetune_layer_linears (arch, NULL);
  guint64 n = 0;
  for (guint j = 0; j < l->len; j++)
    {
      const ModelLinear *x = &g_array_index (l, ModelLinear, j);
      n += x->in * x->out * x->count;
    }
  return n;
}

guint64
model_finetune_layer_adapter_params (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, 0);
  g_autoptr (GArray) t = model_finetune_layer_adapter_tensors (arch, f); /* A and B per target */
  guint64 n = 0;
  for (guint j = 0; j < t->len; j++)
    {
      const ModelArchTensor *x = &g_array_index (t, ModelArchTensor, j);
      n += x->rows * x->cols * x->count;
    }
  return n;
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

GArray *
model_finetune_layer_adapter_tensors (const ModelArch *arch, const ModelFinetune *f)
{
  g_return_val_if_fail (arch != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelArchTensor));
  if (!model_finetune_active (f))
    return out;
  g_autoptr (GArray) l = model_finetune_layer_linears (arch, f);
  for (guint j = 0; j < l->len; j++)
    {
      const ModelLinear *x = &g_array_index (l, ModelLinear, j);
      if (!x->targeted)
        continue;
      ModelArchTensor a = { f->rank, x->in, x->count }, b = { x->out, f->rank, x->count };
      g_array_append_val (out, a);
      g_array_append_val (out, b);
    }
  return out;
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
