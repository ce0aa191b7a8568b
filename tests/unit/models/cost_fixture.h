/* tests/unit/models/cost_fixture.h — the architectures and cost parameters the cost and
 * fine-tuning tests share (test_cost*.c, test_finetune.c, test_graph*.c, the parallelism
 * tests, cli/test_finetune_validation.c).
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

/* Llama-like: the llama family's defaults (RMSNorm, SwiGLU, rotary, no biases, untied) with
 * hidden size h, L layers, a query heads and k key/value heads of d, intermediate size i,
 * vocabulary V and P positions. */
static inline ModelArch
llama_like (guint64 h, guint64 L, guint64 a, guint64 k, guint64 d, guint64 i, guint64 V,
            guint64 P)
{
  ModelArch arch = { 0 };
  model_arch_set_family_defaults (&arch, MODEL_FAMILY_LLAMA);
  arch.hidden_size = h;
  arch.n_layers = L;
  arch.n_heads = a;
  arch.n_kv_heads = k;
  arch.head_dim = d;
  arch.intermediate_size = i;
  arch.vocab_size = V;
  arch.max_positions = P;
  return arch;
}

/* Tiny llama: h = 4, a = 2 query heads, k = 1 kv head, d = 2, i = 8, V = 10. */
static inline ModelArch
tiny_llama (void)
{
  return llama_like (4, 1, 2, 1, 2, 8, 10, 16);
}

/* A small Llama-like layer with GQA (test_graph.c, test_graph_ops.c): h 64, L 2, 4 query heads
 * and 2 key/value heads of d = 16 (q = 64, c = 32), SwiGLU i = 128, V 1000. */
static inline ModelArch
small_llama (void)
{
  return llama_like (64, 2, 4, 2, 16, 128, 1000, 4096);
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
