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

/* A list's names (module_names[i] is bit i of ModelLoraModule) and their HF Llama names. */
static const char *const module_names[] = { "q", "k", "v", "o", "gate", "up", "down",
                                            "router", NULL };
static const char *const module_hf_names[] = { "q_proj", "k_proj", "v_proj", "o_proj",
                                               "gate_proj", "up_proj", "down_proj", NULL };

char *
model_finetune_targets_text (const ModelFinetune *f)
{
  g_return_val_if_fail (f != NULL, NULL);
  if (f->targets != MODEL_LORA_MODULES)
    return g_strdup ((guint) f->targets < G_N_ELEMENTS (targets_names) - 1
                       ? targets_names[f->targets] : "?");
  GString *s = g_string_new (NULL);
  for (guint i = 0; module_names[i] != NULL; i++)
    if (f->modules & (1u << i))
      g_string_append_printf (s, "%s%s", s->len > 0 ? "," : "", module_names[i]);
  return g_string_free (s, FALSE);
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

/* One list item: its ModelLoraModule bit, or 0 with `error` set. */
static guint
module_bit (const char *name, GError **error)
{
  for (guint i = 0; module_hf_names[i] != NULL; i++)
    if (strcmp (name, module_hf_names[i]) == 0)
      return 1u << i;
  /* torchtune's lora_attn_modules name the attention output output_proj */
  if (strcmp (name, "output_proj") == 0)
    return MODEL_LORA_MODULE_O;
  int v;
  if (!sim_text_lookup (module_names, "LoRA target projection", name, &v, error))
    return 0;
  return 1u << v;
}

gboolean
model_finetune_targets_from_string (const char *s, ModelFinetune *f, GError **error)
{
  g_return_val_if_fail (s != NULL && f != NULL, FALSE);
  for (guint i = 0; targets_names[i] != NULL; i++)
    if (strcmp (s, targets_names[i]) == 0)
      {
        f->targets = (ModelLoraTargets) i;
        return TRUE;
      }
  g_auto (GStrv) items = g_strsplit (s, ",", -1);
  guint mask = 0;
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);
      g_autoptr (GError) e = NULL;
      guint bit = *item == '\0' ? 0 : module_bit (item, &e);
      if (bit == 0 || (mask & bit))
        {
          if (*item == '\0')
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "LoRA targets '%s' has an empty item", s);
          else if (bit != 0)
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "LoRA targets '%s' names the %s projection twice", s,
                         module_names[g_bit_nth_lsf (bit, -1)]);
          else if (items[1] == NULL) /* one word: a preset may have been meant too */
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "unknown LoRA targets '%s' (expected all_linear, attention, qv, or "
                         "a comma-separated list of q, k, v, o, gate, up, down, router)", s);
          else
            g_propagate_error (error, g_steal_pointer (&e));
          return FALSE;
        }
      mask |= bit;
    }
  f->targets = MODEL_LORA_MODULES, f->modules = mask;
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
