/* models/stack/stack.c — technique stack names and per-parameter byte counts; see stack.h for
 * every figure's source. Units: bytes per parameter; the whole-model totals (B), folds over
 * the tensor inventory, are stack_params.c's. */
#include "config.h"
#include "models/stack/stack.h"
#include "models/stack/stack-private.h"
#include "sim/text.h"

static const char *const precision_names[] = { "fp32",     "bf16_mixed", "fp16_mixed", "bf16",
                                               "fp8_mixed", "fp16_amp",  "bf16_amp",   NULL };
static const char *const optimizer_names[] = { "adamw",      "sgd_momentum",     "adafactor",
                                               "adamw_8bit", "paged_adamw_8bit", NULL };
static const char *const checkpointing_names[] = { "none", "full", "selective", "every_k", "sqrt",
                                                   "selective_op", NULL };
G_STATIC_ASSERT (G_N_ELEMENTS (precision_names) == MODEL_N_PRECISIONS + 1);
G_STATIC_ASSERT (G_N_ELEMENTS (optimizer_names) == MODEL_N_OPTIMIZERS + 1);


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
    .attention_sdpa = TRUE,
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

/* [training] attention: flash | sdpa | eager | triton | flash1. `eager` is the PyTorch ops (matmul,
 * softmax, matmul: HF attn_implementation="eager"); `flash` is the flash-attn 2 package itself (HF
 * "flash_attention_2"). `sdpa` is torch.nn.functional.scaled_dot_product_attention (HF
 * attn_implementation="sdpa"): PyTorch dispatches, in priority order, to FlashAttention-2
 * (fp16/bf16 inputs, sm80 or newer, head_dim ≤ 256 and a multiple of 8, no explicit mask), else the
 * memory-efficient kernel (xFormers' cutlass kernel: fp32 too, sm50 or newer), else the math
 * fallback (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp: select_sdp_backend,
 * can_use_flash_attention, can_use_mem_efficient_attention). The causal LM training stepsim models
 * passes is_causal without a mask, and every supported head_dim meets the alignment, so a fused
 * kernel runs: neither materialises the s × s scores and both recompute them in the backward.
 * stepsim models sdpa as flash (memory exact for both kernels; for fp32 or pre-sm80 GPUs the
 * memory-efficient kernel runs, whose time the flash cost model approximates).
 * `triton` and `flash1` are FlashAttention too (same memory) but another kernel's speed
 * (hardware/kernel.h HwAttnKernel): FlashAttention's Triton kernel (flash_attn_triton.py,
 * llm-foundry's `attn_impl: triton`) and flash-attn 1.x's CUDA kernel. */
static const struct
{
  const char *name;
  gboolean flash, sdpa;
  HwAttnKernel kernel;
} attention_names[] = {
  { "flash", TRUE, FALSE, HW_ATTN_FA2 },  { "sdpa", TRUE, TRUE, HW_ATTN_FA2 },
  { "eager", FALSE, FALSE, HW_ATTN_FA2 }, { "triton", TRUE, FALSE, HW_ATTN_TRITON },
  { "flash1", TRUE, FALSE, HW_ATTN_FA1 },
};

gboolean
model_stack_attention_from_string (const char *s, ModelStack *out, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (attention_names); i++)
    if (g_strcmp0 (s, attention_names[i].name) == 0)
      {
        out->flash_attention = attention_names[i].flash;
        out->attention_sdpa = attention_names[i].sdpa;
        out->attention_kernel = attention_names[i].kernel;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown attention '%s' (expected one of: eager, flash, flash1, sdpa, triton)", s);
  return FALSE;
}

const char *
model_stack_attention_name (const ModelStack *s)
{
  if (!s->flash_attention)
    return "eager";
  if (s->attention_sdpa)
    return "sdpa";
  for (guint i = 0; i < G_N_ELEMENTS (attention_names); i++)
    if (attention_names[i].flash && !attention_names[i].sdpa
        && attention_names[i].kernel == s->attention_kernel)
      return attention_names[i].name;
  return "flash";
}

const char *
model_stack_attention_label (const ModelStack *s, const HwGpuSpec *gpu, guint64 head_dim)
{
  if (!s->flash_attention)
    return "eager (PyTorch ops)";
  if (s->attention_sdpa)
    return hw_kernel_attn_supported (HW_ATTN_FA2, gpu, head_dim, model_stack_compute_dtype (s),
                                     NULL)
             ? "PyTorch SDPA (FlashAttention-2 kernel)"
             : "PyTorch SDPA (memory-efficient kernel)";
  switch (s->attention_kernel)
    {
    case HW_ATTN_TRITON: return "flash-attn (Triton kernel)";
    case HW_ATTN_FA1: return "flash-attn 1";
    default: return "flash-attn 2";
    }
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

double
model_stack_optimizer_bytes (const ModelStack *s)
{
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_SGD_MOMENTUM:
    case MODEL_OPTIMIZER_ADAFACTOR:
      return model_stack_state_elem (s);
    case MODEL_OPTIMIZER_ADAMW_8BIT:
    case MODEL_OPTIMIZER_PAGED_ADAMW_8BIT:
      return 2 * (1 + 4 / BNB_BLOCK);
    case MODEL_OPTIMIZER_ADAMW:
    default:
      return 2 * model_stack_state_elem (s);
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

gboolean
model_stack_loss_scaled (const ModelStack *s)
{
  return model_stack_compute_dtype (s) == HW_DTYPE_FP16;
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

/* AdamW run as PyTorch's foreach (torch/optim/adam.py _multi_tensor_adam, AdamW's
 * decoupled weight decay) or per-tensor loop (_single_tensor_adam): not one kernel but a
 * pass over memory per operation, each reading and writing whole tensors —
 *   params.mul_(1 - lr·wd)                2p   (skipped when weight_decay == 0)
 *   exp_avg.lerp_(grad, 1 - β1)           2s + g
 *   exp_avg_sq.mul_(β2)                   2s
 *   exp_avg_sq.addcmul_(grad, grad, ·)    2s + g  (the second read of grad is the same
 *                                                  address in the same thread: cached)
 *   denom = sqrt(exp_avg_sq)              2s   (a new tensor)
 *   denom /= bias_correction2_sqrt        2s
 *   denom += eps                          2s
 *   params.addcdiv_(exp_avg, denom, ·)    2p + 2s
 * = 4p + 14s + 2g per parameter (p: the parameter stepped, the fp32 master when there is
 * one; s: one moment's element; g: the gradient), against 2p + 4s + g for the fused kernel
 * (_fused_adamw_, one read and one write of each); with a master, the compute copy is
 * one more pass (read p, write the copy). */
static double
adamw_unfused_bytes (const ModelStack *s, double param, double grad, double copy)
{
  double moment = model_stack_optimizer_bytes (s) / 2;
  double decay = s->framework.weight_decay_zero ? 0 : 2 * param;
  return decay + 2 * param + 14 * moment + 2 * grad + (copy > 0 ? param + copy : 0);
}

/* fp16 loss scaling's pass over the gradients before the step: torch.amp.GradScaler.unscale_
 * (and Megatron's _unscale_main_grads_and_check_for_nan) runs
 * _amp_foreach_non_finite_check_and_unscale_, which reads every gradient and writes it back
 * scaled: 2 × the gradient's bytes a parameter; bf16 and fp32 have no loss scale. */
static double
unscale_bytes (const ModelStack *s)
{
  return model_stack_loss_scaled (s) ? 2 * model_stack_gradient_bytes (s) : 0;
}

double
model_stack_optimizer_step_bytes (const ModelStack *s, const ModelOptimizerView *view)
{
  /* Read: fp32 parameter (master when there is one), gradient, states; write: parameter,
   * states, and the fresh compute copy when a master exists. */
  double param = has_master (s) ? 4 : model_stack_weight_bytes (s);
  double grad = model_stack_gradient_bytes (s), states = model_stack_optimizer_bytes (s);
  double copy = has_master (s) ? model_stack_weight_bytes (s) : 0;
  double unscale = unscale_bytes (s);
  if (s->optimizer == MODEL_OPTIMIZER_ADAFACTOR) /* + its unfactored second moment, in and out */
    return unscale + (param + 2 * grad) + (param + copy)
           + (view != NULL && view->sees != MODEL_OPTIMIZER_SEES_PARAMETERS ? 2 * states : 0);
  ModelOptimizerImpl impl = model_stack_optimizer_impl (s);
  if (s->optimizer == MODEL_OPTIMIZER_ADAMW
      && (impl == MODEL_OPTIMIZER_IMPL_FOREACH || impl == MODEL_OPTIMIZER_IMPL_PER_TENSOR))
    return unscale + adamw_unfused_bytes (s, param, grad, copy);
  return unscale + (param + grad + states) + (param + states + copy);
}

ModelOptimizerImpl
model_stack_optimizer_impl (const ModelStack *s)
{
  g_return_val_if_fail (s != NULL, MODEL_OPTIMIZER_IMPL_PER_TENSOR);
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_ADAFACTOR:
    case MODEL_OPTIMIZER_ADAMW_8BIT:
    case MODEL_OPTIMIZER_PAGED_ADAMW_8BIT:
      return s->framework.optimizer_impl == MODEL_OPTIMIZER_IMPL_CPU_ADAM
               ? MODEL_OPTIMIZER_IMPL_CPU_ADAM
               : MODEL_OPTIMIZER_IMPL_PER_TENSOR;
    default:
      return s->framework.optimizer_impl;
    }
}

double
model_stack_optimizer_host_ops (const ModelStack *s, double tensors, double matrices)
{
  g_return_val_if_fail (s != NULL, 1.0);
  gboolean decay = !s->framework.weight_decay_zero;
  /* GradScaler: unscale_ (one foreach op over all gradients) and update's two, once */
  double scaler = model_stack_loss_scaled (s) ? 3 : 0;
  tensors = MAX (tensors, 1.0);
  matrices = CLAMP (matrices, 0.0, tensors);
  ModelOptimizerImpl impl = model_stack_optimizer_impl (s);
  if (impl != MODEL_OPTIMIZER_IMPL_PER_TENSOR && impl != MODEL_OPTIMIZER_IMPL_FOREACH)
    return 1.0;
  switch (s->optimizer)
    {
    case MODEL_OPTIMIZER_ADAFACTOR:
      {
        /* 16-bit parameters: grad.float(), p.float() and the copy back, a tensor */
        double cast = has_master (s) || model_stack_weight_bytes (s) >= 4 ? 0 : 3;
        return (24 + cast) * matrices + (16 + cast) * (tensors - matrices) + scaler;
      }
    case MODEL_OPTIMIZER_ADAMW_8BIT:
    case MODEL_OPTIMIZER_PAGED_ADAMW_8BIT:
      return tensors + scaler;
    default:
      break;
    }
  double ops = s->optimizer == MODEL_OPTIMIZER_SGD_MOMENTUM ? (decay ? 4 : 3) : (decay ? 9 : 8);
  return (impl == MODEL_OPTIMIZER_IMPL_PER_TENSOR ? ops * tensors : ops) + scaler;
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
    case MODEL_LOSS_VOCAB_PARALLEL:
      return MODEL_COST_LOSS_VOCAB_PARALLEL;
    case MODEL_LOSS_SHARDED:
      return MODEL_COST_LOSS_SHARDED;
    case MODEL_LOSS_TE_PARALLEL:
      return MODEL_COST_LOSS_TE_PARALLEL;
    case MODEL_LOSS_CHUNKED_HEAD:
      return MODEL_COST_LOSS_CHUNKED_HEAD;
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
    .softmax_fp32 = s->framework.softmax_fp32,
    .fp16 = model_stack_compute_dtype (s) == HW_DTYPE_FP16,
    /* the expanded copies: always (torchtune); before the eager core in every framework (its
     * batched Q·Kᵀ needs a key per query head: HF eager_attention_forward's repeat_kv,
     * Megatron DotProductAttention.forward's key.repeat_interleave); before SDPA with
     * kv_repeat_sdpa (HF's repeat_kv); never before flash-attn, Triton or FA-1 (attention =
     * flash, triton, flash1), which take GQA as is */
    .kv_repeat = s->framework.kv_repeat || !s->flash_attention
                 || (s->framework.kv_repeat_sdpa && s->attention_sdpa),
    .logits_kept = s->framework.logits_kept,
    .moe_grouped_mlp = s->framework.moe_grouped_mlp,
    .recompute_modules = s->checkpointing == MODEL_CHECKPOINTING_SELECTIVE
                           ? s->recompute_modules : 0,
    .window_ignored = s->flash_attention && !hw_kernel_attn_has_window (s->attention_kernel),
  };
}
