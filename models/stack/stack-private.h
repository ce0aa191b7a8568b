/* models/stack/stack-private.h — per-element figures of stack.c that the whole-model folds of
 * stack_params.c share. Not for use outside models/stack/stack*.c. */
#pragma once

#include "models/stack/stack.h"

/* bitsandbytes: block size of the block-wise quantisation and the smallest tensor that
 * gets 8-bit states (Optimizer8bit min_8bit_size). */
#define BNB_BLOCK 2048.0
#define BNB_MIN_8BIT 4096

/* Bytes of one optimizer-state element: fp32, or bf16 in the pure bf16 recipe. */
static inline double
model_stack_state_elem (const ModelStack *s)
{
  return s->precision == MODEL_PRECISION_BF16 ? 2 : 4;
}

/* Whether the optimizer is bitsandbytes' 8-bit Adam (paged or not). */
static inline gboolean
model_stack_is_8bit (const ModelStack *s)
{
  return s->optimizer == MODEL_OPTIMIZER_ADAMW_8BIT
         || s->optimizer == MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
}
