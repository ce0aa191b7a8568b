/* models/stack/stack.c — technique stack names and per-parameter byte counts; see stack.h for
 * every figure's source. Units: bytes per parameter, or bytes (B) for whole-model totals. */
#include "config.h"
#include "models/stack/stack.h"
#include "sim/text.h"

#include <math.h>

static const char *const precision_names[] = { "fp32",     "bf16_mixed", "fp16_mixed", "bf16",
                                               "fp8_mixed", "fp16_amp",  "bf16_amp",   NULL };
static const char *const optimizer_names[] = { "adamw",      "sgd_momentum",     "adafactor",
                                               "adamw_8bit", "paged_adamw_8bit", NULL };
static const char *const checkpointing_names[] = { "none", "full", "selective", "every_k", "sqrt",
                                                   "selective_op", NULL };
G_STATIC_ASSERT (G_N_ELEMENTS (precision_names) == MODEL_N_PRECISIONS + 1);
G_STATIC_ASSERT (G_N_ELEMENTS (optimizer_names) == MODEL_N_OPTIMIZERS + 1);

/* bitsandbytes: block size of the block-wise quantisation and the smallest tensor that
 * gets 8-bit states (Optimizer8bit min_8bit_size). */
#define BNB_BLOCK 2048.0
#define BNB_MIN_8BIT 4096
/* Transformer Engine DelayedScaling: amax_history_len 1024 fp32 values per fp8 tensor,
 * 5 fp8 tensors per GEMM module (input, weight, output-grad … ; 3 fwd + 2 bwd meta
 * entries), 4 GEMM modules per transformer layer (QKV, proj, fc1, fc2). */
#define TE_AMAX_BYTES (1024.0 * 4 * 5 * 4)

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
    .checkpoint_every = 2,
    .flash_attention = TRUE,
    .attention_kernel = HW_ATTN_FA2,
    .tf32 = FALSE,
    .dropout = 0,
    .zero_grad_to_none = TRUE,
    .softmax_saves_input = FALSE,
  };
  model_finetune_init_defaults (&stack->finetune);
  /* MODEL_FRAMEWORK_CUSTOM: plain PyTorch eager with the HF model code (framework.h) */
  model_framework_apply_profile (&stack->framework, MODEL_FRAMEWORK_CUSTOM);
}


const char *
model_stack_precision_name (ModelPrecision p)
{
  g_return_val_if_fail (p < MODEL_N_PRECISIONS, NULL);
  return precision_names[p];
}

const char *
model_stack_optimizer_name (ModelOptimizer o)
{
  g_return_val_if_fail (o < MODEL_N_OPTIMIZERS, NULL);
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
  if (!sim_text_lookup (precision_names, "precision", s, &v, error))
    return FALSE;
  *out = (ModelPrecision) v;
  return TRUE;
}

gboolean
model_stack_optimizer_from_string (const char *s, ModelOptimizer *out, GError **error)
{
  int v;
  if (!sim_text_lookup (optimizer_names, "optimizer", s, &v, error))
    return FALSE;
  *out = (ModelOptimizer) v;
  return TRUE;
}

gboolean
model_stack_checkpointing_from_string (const char *s, ModelCheckpointing *out, GError **error)
{
  int v;
  if (!sim_text_lookup (checkpointing_names, "checkpointing", s, &v, error))
    return FALSE;
  *out = (ModelCheckpointing) v;
  return TRUE;
}

static gboolean
is_amp (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_FP16_AMP || s->precision == MODEL_PRECISION_BF16_AMP;
}

/* A 16-bit compute copy next to an fp32 master (bf16/fp16 mixed, fp8 mixed). */
static gboolean
has_master (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_BF16_MIXED || s->precision == MODEL_PRECISION_FP16_MIXED
         || s->precision == MODEL_PRECISION_FP8_MIXED;
}

double
model_stack_weight_bytes (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_FP32 || is_amp (s) ? 4 : 2;
}

double
model_stack_master_bytes (const ModelStack *s)
{
  return has_master (s) ? 4 : 0;
}

double
model_stack_gradient_bytes (const ModelStack *s)
{
  if (model_stack_main_grad_fp32 (s))
    return 4;
  return s->precision == MODEL_PRECISION_FP32 || is_amp (s) ? 4 : 2;
}

/* Bytes of one optimizer-state element: fp32, or bf16 in the pure bf16 recipe. */
static double
state_elem (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_BF16 ? 2 : 4;
}

static gboolean
is_8bit (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_ADAMW_8BIT
         || s->optimizer == MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
}

double
model_stack_optimizer_bytes (const ModelStack *s)
{
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_SGD_MOMENTUM:
    case MODEL_OPTIMIZER_ADAFACTOR:
      return state_elem (s);
    case MODEL_OPTIMIZER_ADAMW_8BIT:
    case MODEL_OPTIMIZER_PAGED_ADAMW_8BIT:
      return 2 * (1 + 4 / BNB_BLOCK);
    case MODEL_OPTIMIZER_ADAMW:
    default:
      return 2 * state_elem (s);
    }
}

double
model_stack_state_bytes (const ModelStack *s)
{
  return model_stack_weight_bytes (s) + model_stack_master_bytes (s)
         + model_stack_gradient_bytes (s) + model_stack_optimizer_bytes (s);
}

double
model_stack_fp8_weight_bytes (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_FP8_MIXED ? 1 : 0;
}

double
model_stack_weight_cache_bytes (const ModelStack *s)
{
  return is_amp (s) ? 2 : 0;
}

gboolean
model_stack_autocast (const ModelStack *s)
{
  return is_amp (s);
}

/* State bytes of one copy of tensor `t` (a matrix r × c, or a vector of n): Adafactor
 * factors matrices (Shazeer & Stern 2018 §3: r + c), 8-bit Adam keeps fp32 states under
 * bnb's min_8bit_size and one fp32 absmax per block otherwise. */
static double
tensor_state (const ModelTensor *t, gpointer data)
{
  const ModelStack *s = data;
  double n = (double) model_tensor_numel (t);
  double rows = (double) t->shape[0], cols = t->ndim >= 2 ? (double) t->shape[1] : 1;
  if (!t->trainable)
    return 0;
  if (s->optimizer == MODEL_OPTIMIZER_ADAFACTOR)
    return state_elem (s) * (cols >= 2 && rows >= 2 ? rows + cols : n);
  if (is_8bit (s))
    return n < BNB_MIN_8BIT ? 2 * 4 * n : 2 * (n + 4 * ceil (n / BNB_BLOCK));
  return model_stack_optimizer_bytes (s) * n;
}

double
model_stack_optimizer_state_total (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  return model_inventory_fold (inv, MODEL_INVENTORY_ALL, tensor_state, (gpointer) s);
}

gboolean
model_stack_gradients_persistent (const ModelStack *s)
{
  return !s->zero_grad_to_none || model_stack_main_grad_fp32 (s);
}

gboolean
model_stack_main_grad_fp32 (const ModelStack *s)
{
  return s->framework.main_grad_fp32 && s->precision != MODEL_PRECISION_FP32 && !is_amp (s);
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
    case MODEL_MEM_OPTIMIZER_STATE:
      return model_stack_optimizer_state_total (s, arch);
    case MODEL_MEM_GRADIENTS:
      return model_stack_gradients_persistent (s) ? n * model_stack_gradient_bytes (s) : 0;
    case MODEL_MEM_QUANTIZATION:
      if (s->finetune.method == MODEL_FINETUNE_QLORA) /* NF4 absmax constants */
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
model_stack_optimizer_workspace (const ModelStack *s, const ModelArch *arch)
{
  g_return_val_if_fail (s != NULL && arch != NULL, 0);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, arch);
  double largest = (double) model_inventory_largest (inv, MODEL_INVENTORY_ALL, TRUE);
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_ADAMW:
      switch (s->framework.optimizer_impl)
        {
        case MODEL_OPTIMIZER_IMPL_FOREACH:
          return state_elem (s) * model_stack_trainable_params (s, arch);
        case MODEL_OPTIMIZER_IMPL_PER_TENSOR:
          return state_elem (s) * largest;
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

double
model_stack_paged_spill (double state_bytes, double other_peak, double capacity)
{
  return CLAMP (other_peak + state_bytes - capacity, 0, state_bytes);
}

gboolean
model_stack_optimizer_is_paged (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
}

double
model_stack_activation_bytes (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_FP32 ? 4 : 2;
}

HwDtype
model_stack_compute_dtype (const ModelStack *s)
{
  switch (s->precision)
    {
    case MODEL_PRECISION_BF16_MIXED:
    case MODEL_PRECISION_BF16:
    case MODEL_PRECISION_BF16_AMP:
      return HW_DTYPE_BF16;
    case MODEL_PRECISION_FP16_MIXED:
    case MODEL_PRECISION_FP16_AMP:
      return HW_DTYPE_FP16;
    case MODEL_PRECISION_FP8_MIXED:
      return HW_DTYPE_FP8;
    case MODEL_PRECISION_FP32:
    default:
      return s->tf32 ? HW_DTYPE_TF32 : HW_DTYPE_FP32;
    }
}

double
model_stack_optimizer_step_bytes (const ModelStack *s)
{
  /* Read: fp32 parameter (master when there is one), gradient, states; write: parameter,
   * states, and the fresh compute copy when a master exists. */
  double param = has_master (s) ? 4 : model_stack_weight_bytes (s);
  double grad = model_stack_gradient_bytes (s), states = model_stack_optimizer_bytes (s);
  double copy = has_master (s) ? model_stack_weight_bytes (s) : 0;
  if (s->optimizer == MODEL_OPTIMIZER_ADAFACTOR)
    return (param + 2 * grad) + (param + copy);
  return (param + grad + states) + (param + states + copy);
}

double
model_stack_optimizer_step_flops (const ModelStack *s)
{
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_SGD_MOMENTUM:
      return 4;
    case MODEL_OPTIMIZER_ADAFACTOR:
      return 14;
    case MODEL_OPTIMIZER_ADAMW_8BIT:
    case MODEL_OPTIMIZER_PAGED_ADAMW_8BIT:
      return 20;
    case MODEL_OPTIMIZER_ADAMW:
    default:
      return 12;
    }
}

/* ModelLossImpl (framework.h) as the cost model's own enum (models/ops may not include
 * models/stack). */
static ModelCostLoss
loss_of (ModelLossImpl l)
{
  switch (l)
    {
    case MODEL_LOSS_PLAIN:
      return MODEL_COST_LOSS_PLAIN;
    case MODEL_LOSS_CHUNKED:
      return MODEL_COST_LOSS_CHUNKED;
    case MODEL_LOSS_FUSED:
      return MODEL_COST_LOSS_FUSED;
    case MODEL_LOSS_UPCAST_SHIFT:
      return MODEL_COST_LOSS_UPCAST_SHIFT;
    case MODEL_LOSS_UPCAST:
    default:
      return MODEL_COST_LOSS_UPCAST;
    }
}

ModelCostParams
model_stack_cost_params (const ModelStack *s)
{
  g_return_val_if_fail (s != NULL, (ModelCostParams){ 0 });
  return (ModelCostParams){
    .micro_batch = s->micro_batch,
    .seq_len = s->seq_len,
    .act_bytes = model_stack_activation_bytes (s),
    .weight_bytes = model_stack_weight_bytes (s),
    .flash_attention = s->flash_attention,
    .dropout = s->dropout,
    /* QLoRA's NF4 weights are dequantized per use, and bitsandbytes saves the NF4 codes for
     * the backward: no 16-bit copy is kept (MatMul4Bit) */
    .weight_cache_bytes = s->finetune.method == MODEL_FINETUNE_QLORA
                            ? 0 : model_stack_weight_cache_bytes (s),
    .autocast = model_stack_autocast (s),
    .softmax_saves_input = s->softmax_saves_input,
    .finetune = s->finetune,
    .loss = loss_of (s->framework.loss),
    .loss_chunks = s->framework.loss_chunks,
    .norm_fp32 = s->framework.norm_fp32,
    .compile = s->framework.compile,
    .kv_repeat = s->framework.kv_repeat,
    .logits_kept = s->framework.logits_kept,
    .window_ignored = s->flash_attention && !hw_kernel_attn_has_window (s->attention_kernel),
  };
}
