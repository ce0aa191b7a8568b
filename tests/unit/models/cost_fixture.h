/* tests/unit/models/cost_fixture.h — the architectures and cost parameters the cost and
 * fine-tuning tests share (test_cost*.c, test_finetune.c, cli/test_finetune_validation.c).
 * Header-only. */
#pragma once

#include "models/ops/cost.h"

/* GPT-like: MHA (k = a), d = h/a, GELU MLP with i = 4h, LayerNorm, learned positions. */
static inline ModelArch
gpt_like (guint64 h, guint64 a, guint64 L, guint64 V)
{
  ModelArch arch = { 0 };
  model_arch_set_family_defaults (&arch, MODEL_FAMILY_GPT2);
  arch.hidden_size = h;
  arch.n_layers = L;
  arch.n_heads = a;
  arch.n_kv_heads = a;
  arch.head_dim = h / a;
  arch.intermediate_size = 4 * h;
  arch.vocab_size = V;
  arch.max_positions = 2048;
  return arch;
}

/* Tiny llama: h = 4, a = 2 query heads, k = 1 kv head, d = 2, i = 8, V = 10. */
static inline ModelArch
tiny_llama (void)
{
  ModelArch arch = { 0 };
  model_arch_set_family_defaults (&arch, MODEL_FAMILY_LLAMA);
  arch.hidden_size = 4;
  arch.n_layers = 1;
  arch.n_heads = 2;
  arch.n_kv_heads = 1;
  arch.head_dim = 2;
  arch.intermediate_size = 8;
  arch.vocab_size = 10;
  arch.max_positions = 16;
  return arch;
}

static inline ModelCostParams
params (guint64 b, guint64 s, gboolean flash, double dropout)
{
  ModelCostParams p = { .micro_batch = b, .seq_len = s, .act_bytes = 2.0, .weight_bytes = 2.0,
                        .flash_attention = flash, .dropout = dropout };
  return p;
}

/* GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, h 12288, 96 heads of 128, FFN 4h,
 * GPT-2 layout (fused c_attn), vocabulary 50257, 2048 positions. */
static inline ModelArch
gpt3_175b (void)
{
  return gpt_like (12288, 96, 96, 50257);
}
