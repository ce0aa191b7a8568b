/* tests/unit/models/tiny.h — small fixtures for plan and executor tests: a 4-layer
 * llama-family model and a GPU with round figures. Header-only (static inline). */
#pragma once

#include "hardware/gpu.h"
#include "models/arch/arch.h"
#include "models/stack/stack.h"

static inline ModelArch *
tiny_arch (void)
{
  ModelArch *a = g_new0 (ModelArch, 1);
  model_arch_set_family_defaults (a, MODEL_FAMILY_LLAMA);
  a->name = g_strdup ("tiny");
  a->hidden_size = 256;
  a->n_layers = 4;
  a->n_heads = 8;
  a->n_kv_heads = 2;
  a->head_dim = 32;
  a->intermediate_size = 688;
  a->vocab_size = 1000;
  a->max_positions = 4096;
  return a;
}

static inline ModelStack
tiny_stack (void)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  s.micro_batch = 2;
  s.seq_len = 128;
  /* the GPU's side alone: no host time per op (the host model's tests set it) */
  s.framework.host_op_time = s.framework.host_backward_op_time = 0;
  return s;
}

static inline HwGpuSpec *
tiny_gpu (void)
{
  HwGpuSpec *g = g_new0 (HwGpuSpec, 1);
  g->name = g_strdup ("tiny-gpu");
  g->memory_capacity = 16e9;
  g->hbm_bandwidth = 1e12;
  for (int d = 0; d < HW_N_DTYPES; d++)
    g->peak_flops[d] = 100e12;
  g->peak_flops[HW_DTYPE_FP32] = 10e12;
  g->compute_efficiency = 0.5;
  g->hbm_efficiency = 0.8;
  g->cuda_context = 1e9;
  g->pcie_bandwidth = 25e9;
  g->pcie_latency = 2e-6;
  g->kernel_latency = 3e-6;
  return g;
}
