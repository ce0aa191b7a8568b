/* models/stack/stack-private.h — per-element figures of stack.c that the whole-model folds of
 * stack_params.c share. Not for use outside models/stack/stack*.c. */
#pragma once

#include "models/stack/stack.h"

/* bitsandbytes: block size of the block-wise quantisation of the 8-bit optimizer states
 * (one fp32 absmax per block per state: bitsandbytes/optim/optimizer.py
 * Optimizer2State.init_state, `blocks = n // 256`, since 0.44.0, aa57bd89 2024-09-20
 * "Change 8bit optimizer blocksize 2048->256"; 2048 before; torchao's AdamW8bit,
 * torchao/prototype/low_bit_optim, block_size 256 too) and the smallest tensor that gets
 * 8-bit states (Optimizer8bit min_8bit_size; torchao's _new_buffer, numel >= 4096). */
#define BNB_BLOCK 256.0
#define BNB_MIN_8BIT 4096

/* Bytes of one optimizer-state element: fp32, or bf16 in the pure bf16 recipe (torch.optim
 * makes its states like the parameter). Adafactor's are fp32 whatever the parameters:
 * transformers optimization.py Adafactor.step upcasts a 16-bit gradient (`grad =
 * grad.float()`) and makes its states from it (`torch.zeros_like(grad)`, `.to(grad)`). */
static inline double
model_stack_state_elem (const ModelStack *s)
{
  if (s->optimizer == MODEL_OPTIMIZER_ADAFACTOR)
    return 4;
  return s->precision == MODEL_PRECISION_BF16 ? 2 : 4;
}

/* Whether the optimizer is bitsandbytes' 8-bit Adam (paged or not). */
static inline gboolean
model_stack_is_8bit (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_ADAMW_8BIT
         || s->optimizer == MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
}
