/* models/stack/stack_params.c — what trains and what is stored, per stack (stack.h): folds
 * over the tensor inventory (models/arch/inventory.h) built for the stack's fine-tuning
 * method — every parameter trains under full fine-tuning, the LoRA/QLoRA adapters over a
 * frozen base otherwise (models/arch/finetune.h). The whole-model bytes of each state
 * (model_stack_initial_bytes(), the optimizer state with its shapes, the optimizer's
 * workspace) are counted here from stack.c's bytes per element; stack.c calls none of
 * these. Units: B. */
#include "config.h"
#include "models/stack/stack.h"
#include "models/stack/stack-private.h"

#include <math.h>

/* Transformer Engine DelayedScaling: amax_history_len 1024 fp32 values per fp8 tensor,
 * 5 fp8 tensors per GEMM module (input, weight, output-grad … ; 3 fwd + 2 bwd meta
 * entries), 4 GEMM modules per transformer layer (QKV, proj, fc1, fc2). */
#define TE_AMAX_BYTES (1024.0 * 4 * 5 * 4)

ModelInventory *
model_stack_inventory (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, NULL);
  g_autoptr (GError) error = NULL;
  ModelInventory *inv = model_inventory_new_mtp (arch, &s->finetune, s->mtp_layers, &error);
  /* rank 0 is refused by model_stack_validate_finetune() before any count is asked */
  if (inv == NULL)
    g_error ("%s", error->message);
  return inv;
}

double
model_stack_trainable_layer_params (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_LAYER);
}

double
model_stack_trainable_root_params (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_ROOT);
}

double
model_stack_trainable_params (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_ALL);
}

double
model_stack_layer_weight_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return model_inventory_weight_bytes (inv, MODEL_INVENTORY_LAYER, model_stack_weight_bytes (s),
                                       TRUE);
}

double
model_stack_root_weight_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return model_inventory_weight_bytes (inv, MODEL_INVENTORY_ROOT, model_stack_weight_bytes (s),
                                       TRUE);
}

double
model_stack_lora_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return model_stack_weight_bytes (s) * (double) model_inventory_n_adapter (inv, MODEL_INVENTORY_ALL);
}

double
model_stack_weights_total (const ModelStack *s, const ModelArch *arch)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return model_inventory_weight_bytes (inv, MODEL_INVENTORY_ALL, model_stack_weight_bytes (s),
                                       TRUE);
}

/* Bytes of one copy of `t` as stored. */
static double
stored_bytes (const ModelTensor *t, double w)
{
  return (double) model_tensor_numel (t) * model_tensor_storage_bytes (t, w);
}

GArray *
model_stack_weight_tensor_bytes (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  double w = model_stack_weight_bytes (s);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  /* The root unit's tensors, then the layers' (each template tensor L × count times, in
   * inventory order); the adapters are category lora and QLoRA's constants category
   * quantization, not listed. */
  const ModelInventoryScope scopes[] = { MODEL_INVENTORY_ROOT, MODEL_INVENTORY_ALL };
  for (guint sc = 0; sc < G_N_ELEMENTS (scopes); sc++)
    for (guint k = 0; k < inv->tensors->len; k++)
      {
        const ModelTensor *t = model_inventory_tensor (inv, k);
        if (t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B
            || !model_tensor_is_parameter (t) || (sc == 0) != (t->layer == MODEL_TENSOR_ROOT))
          continue;
        double b = stored_bytes (t, w);
        for (guint64 j = 0; j < model_inventory_copies (inv, t, scopes[sc]); j++)
          g_array_append_val (out, b);
      }
  return out;
}

/* The optimizer-state rule of a fold: the stack and the tensors the optimizer sees. */
typedef struct
{
  const ModelStack *s;
  ModelOptimizerView view;
} StateRule;

static StateRule
state_rule (const ModelStack *s, const ModelOptimizerView *view)
{
  StateRule r = { .s = s, .view = { MODEL_OPTIMIZER_SEES_PARAMETERS, 1 } };
  if (view != NULL)
    r.view = *view;
  r.view.shards = MAX (r.view.shards, 1.0);
  return r;
}

/* State bytes of one copy of tensor `t` (a matrix r × c, or a vector of n) as the rule's
 * view presents it: Adafactor factors what it sees as a matrix (Shazeer & Stern 2018 §3:
 * r + c), 8-bit Adam keeps fp32 states for what it sees under bnb's min_8bit_size (a
 * shard view: n / shards elements; a flat partition: never) and one fp32 absmax per block
 * otherwise. */
static double
tensor_state (const ModelTensor *t, gpointer data)
{
  const StateRule *r = data;
  const ModelStack *s = r->s;
  double n = (double) model_tensor_numel (t);
  double rows = (double) t->shape[0], cols = t->ndim >= 2 ? (double) t->shape[1] : 1;
  gboolean whole = r->view.sees == MODEL_OPTIMIZER_SEES_PARAMETERS;
  if (!t->trainable)
    return 0;
  if (s->optimizer == MODEL_OPTIMIZER_ADAFACTOR)
    return model_stack_state_elem (s) * (whole && cols >= 2 && rows >= 2 ? rows + cols : n);
  if (model_stack_is_8bit (s))
    {
      if (r->view.sees == MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS)
        return 2 * (n + 4 * n / BNB_BLOCK);
      double piece = whole ? n : n / r->view.shards, pieces = whole ? 1 : r->view.shards;
      return piece < BNB_MIN_8BIT ? 2 * 4 * n : 2 * (n + 4 * ceil (piece / BNB_BLOCK) * pieces);
    }
  return model_stack_optimizer_bytes (s) * n;
}

double
model_stack_optimizer_state_total (const ModelStack *s, const ModelArch *arch,
                                   const ModelOptimizerView *view)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  StateRule r = state_rule (s, view);
  return model_inventory_fold (inv, MODEL_INVENTORY_ALL, tensor_state, &r);
}

static double
largest_stepped (const ModelInventory *inv, const StateRule *r)
{
  if (r->view.sees != MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS)
    return (double) model_inventory_largest (inv, MODEL_INVENTORY_ALL, TRUE);
  double groups[2] = { 0, 0 }; /* the weight-decay group (matrices), the rest */
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, k);
      if (t->trainable)
        groups[t->ndim >= 2 ? 0 : 1] += (double) model_tensor_numel (t)
                                        * (double) model_inventory_copies (
                                            inv, t, MODEL_INVENTORY_ALL);
    }
  return MAX (groups[0], groups[1]);
}

double
model_stack_largest_stepped (const ModelStack *s, const ModelArch *arch,
                             const ModelOptimizerView *view)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  StateRule r = state_rule (s, view);
  return largest_stepped (inv, &r);
}

double
model_stack_largest_tensor_state (const ModelStack *s, const ModelArch *arch,
                                  const ModelOptimizerView *view)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  StateRule r = state_rule (s, view);
  if (r.view.sees == MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS)
    {
      double n = largest_stepped (inv, &r), trainable = model_stack_trainable_params (s, arch);
      return trainable > 0 ? n / trainable * model_stack_optimizer_state_total (s, arch, view)
                           : 0;
    }
  double most = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    most = MAX (most, tensor_state (model_inventory_tensor (inv, k), &r));
  return most;
}

double
model_stack_initial_bytes (const ModelStack *s, const ModelArch *arch, ModelMemCategory category)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  double n = model_stack_trainable_params (s, arch);
  double all = (double) model_arch_n_params (arch);
  switch (category)
    {
    case MODEL_MEM_WEIGHTS: /* the frozen base under LoRA; the adapters are `lora` */
      return model_stack_weights_total (s, arch) - model_stack_lora_bytes (s, arch);
    case MODEL_MEM_LORA:
      return model_stack_lora_bytes (s, arch);
    case MODEL_MEM_MASTER_WEIGHTS:
      return n * model_stack_master_bytes (s);
    case MODEL_MEM_OPTIMIZER_STATE: /* each parameter in its shape; the plan's view: plan_state.c */
      return model_stack_optimizer_state_total (s, arch, NULL);
    case MODEL_MEM_GRADIENTS:
      return model_stack_gradients_persistent (s) ? n * model_stack_gradient_bytes (s) : 0;
    case MODEL_MEM_QUANTIZATION:
      if (s->finetune.method == MODEL_FINETUNE_QLORA) /* the inventory's NF4 constants */
        {
          g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
          return model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_ALL);
        }
      return s->precision == MODEL_PRECISION_FP8_MIXED
               ? all * model_stack_fp8_weight_bytes (s) + (double) arch->n_layers * TE_AMAX_BYTES
               : 0;
    default:
      return 0;
    }
}

double
model_stack_optimizer_workspace (const ModelStack *s, const ModelArch *arch,
                                 const ModelOptimizerView *view)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  StateRule r = state_rule (s, view);
  double largest = largest_stepped (inv, &r);
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_ADAMW:
      switch (s->framework.optimizer_impl)
        {
        case MODEL_OPTIMIZER_IMPL_FOREACH:
          return model_stack_state_elem (s) * model_stack_trainable_params (s, arch);
        case MODEL_OPTIMIZER_IMPL_PER_TENSOR:
          return model_stack_state_elem (s) * largest;
        case MODEL_OPTIMIZER_IMPL_FUSED:
        case MODEL_OPTIMIZER_IMPL_CPU_ADAM:
        default:
          return 0;
        }
    case MODEL_OPTIMIZER_ADAFACTOR:
      return 2 * 4 * largest;
    default:
      return 0;
    }
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
