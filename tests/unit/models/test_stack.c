/* tests/unit/models/test_stack.c — model-state bytes per parameter per precision and
 * optimizer, against their closed forms. */
#include "config.h"

#include <math.h>
#include "models/stack/stack.h"
#include <string.h>
#include "tests/testlib.h"

static ModelStack
stack (ModelPrecision p, ModelOptimizer o)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  s.precision = p;
  s.optimizer = o;
  return s;
}

/* The cost model's kv_repeat: always with kv_repeat (torchtune); always under attention =
 * eager (HF eager_attention_forward's repeat_kv, Megatron DotProductAttention's
 * repeat_interleave, whatever the profile); with kv_repeat_sdpa (HF transformers
 * 4.46–4.48's repeat_kv) under attention = sdpa; never before flash-attn's kernels
 * (attention = flash, triton, flash1), which take GQA as is. */
static void
test_kv_repeat_by_attention (void)
{
  ModelStack s = stack (MODEL_PRECISION_BF16_MIXED, MODEL_OPTIMIZER_ADAMW);
  model_framework_apply_profile (&s.framework, MODEL_FRAMEWORK_HF_TRAINER);
  s.framework.kv_repeat_sdpa = TRUE; /* HF 4.46–4.48; the profile's newer HF: enable_gqa */
  s.flash_attention = TRUE, s.attention_sdpa = TRUE; /* sdpa */
  CU_ASSERT_TRUE (model_stack_cost_params (&s).kv_repeat);
  s.flash_attention = FALSE, s.attention_sdpa = FALSE; /* eager */
  CU_ASSERT_TRUE (model_stack_cost_params (&s).kv_repeat);
  s.flash_attention = TRUE, s.attention_sdpa = FALSE; /* flash */
  CU_ASSERT_FALSE (model_stack_cost_params (&s).kv_repeat);
  s.framework.kv_repeat = TRUE; /* torchtune: before any kernel */
  CU_ASSERT_TRUE (model_stack_cost_params (&s).kv_repeat);
  model_framework_apply_profile (&s.framework, MODEL_FRAMEWORK_CUSTOM);
  s.attention_sdpa = TRUE; /* newer HF: enable_gqa */
  CU_ASSERT_FALSE (model_stack_cost_params (&s).kv_repeat);
  s.flash_attention = FALSE, s.attention_sdpa = FALSE; /* eager: repeat_kv in any version */
  CU_ASSERT_TRUE (model_stack_cost_params (&s).kv_repeat);
  model_framework_apply_profile (&s.framework, MODEL_FRAMEWORK_MEGATRON);
  CU_ASSERT_TRUE (model_stack_cost_params (&s).kv_repeat); /* repeat_interleave */
}

/* fp32 AdamW: weights 4 + gradients 4 + m 4 + v 4 = 16 B/param (published.md S2:
 * 28 + 28 + 56 = 112 GB for 7e9 parameters). */
static void
test_fp32_adamw_16_bytes (void)
{
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_weight_bytes (&s), 4);
  CU_ASSERT_EQUAL (model_stack_gradient_bytes (&s), 4);
  CU_ASSERT_EQUAL (model_stack_master_bytes (&s), 0);
  CU_ASSERT_EQUAL (model_stack_optimizer_bytes (&s), 8);
  CU_ASSERT_EQUAL (model_stack_state_bytes (&s), 16);
  STEPSIM_ASSERT_REL (model_stack_state_bytes (&s) * 7e9, 112e9, 1e-15);
}

/* Mixed precision AdamW (Micikevicius et al. 2018 §3.1; ZeRO §3.1): bf16/fp16 weights 2
 * + bf16/fp16 gradients 2 + fp32 master 4 + fp32 m 4 + fp32 v 4 = 16 B/param, i.e. the
 * ZeRO paper's 2Ψ + 2Ψ + KΨ with K = 12 (master + m + v). */
static void
test_mixed_adamw_zero_k12 (void)
{
  for (int p = MODEL_PRECISION_BF16_MIXED; p <= MODEL_PRECISION_FP16_MIXED; p++)
    {
      ModelStack s = stack (p, MODEL_OPTIMIZER_ADAMW);
      double k = model_stack_master_bytes (&s) + model_stack_optimizer_bytes (&s);
      CU_ASSERT_EQUAL (k, 12);
      CU_ASSERT_EQUAL (model_stack_weight_bytes (&s) + model_stack_gradient_bytes (&s), 4);
      CU_ASSERT_EQUAL (model_stack_state_bytes (&s), 16);
      CU_ASSERT_EQUAL (model_stack_activation_bytes (&s), 2);
    }
}

/* SGD with momentum keeps one fp32 buffer: fp32 4 + 4 + 4 = 12; mixed 2 + 2 + 4 + 4 = 12. */
static void
test_sgd_momentum (void)
{
  ModelStack a = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_SGD_MOMENTUM);
  ModelStack b = stack (MODEL_PRECISION_BF16_MIXED, MODEL_OPTIMIZER_SGD_MOMENTUM);
  CU_ASSERT_EQUAL (model_stack_optimizer_bytes (&a), 4);
  CU_ASSERT_EQUAL (model_stack_state_bytes (&a), 12);
  CU_ASSERT_EQUAL (model_stack_state_bytes (&b), 12);
}

static void
test_compute_dtype (void)
{
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_compute_dtype (&s), HW_DTYPE_FP32);
  s.tf32 = TRUE;
  CU_ASSERT_EQUAL (model_stack_compute_dtype (&s), HW_DTYPE_TF32);
  s.precision = MODEL_PRECISION_BF16_MIXED;
  CU_ASSERT_EQUAL (model_stack_compute_dtype (&s), HW_DTYPE_BF16);
  s.precision = MODEL_PRECISION_FP16_MIXED;
  CU_ASSERT_EQUAL (model_stack_compute_dtype (&s), HW_DTYPE_FP16);
}

static void
test_names_round_trip (void)
{
  for (int p = 0; p < MODEL_N_PRECISIONS; p++)
    {
      ModelPrecision out;
      CU_ASSERT (model_stack_precision_from_string (model_stack_precision_name (p), &out, NULL));
      CU_ASSERT_EQUAL (out, p);
    }
  g_autoptr (GError) e = NULL;
  ModelOptimizer o;
  CU_ASSERT_FALSE (model_stack_optimizer_from_string ("adam", &o, &e));
  CU_ASSERT_PTR_NOT_NULL (e);
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "adamw") : NULL);
}

/* AdamW step traffic, fused (one kernel): mixed: read master 4 + grad 2 + m,v 8; write
 * master 4 + m,v 8 + bf16 copy 2 = 28 B/param. fp32: read 4 + 4 + 8, write 4 + 8 = 28.
 * PyTorch's foreach (and per-tensor) AdamW, one pass per operation (torch/optim/adam.py
 * _multi_tensor_adam): params.mul_ 2p, exp_avg.lerp_ 2s + g, exp_avg_sq.mul_ 2s, .addcmul_
 * 2s + g, sqrt 2s, div_ 2s, add_ 2s, params.addcdiv_ 2p + 2s = 4p + 14s + 2g:
 * fp32 (p = s = g = 4): 16 + 56 + 8 = 80; pure bf16 (2): 8 + 28 + 4 = 40, 36 without the
 * weight-decay pass (HF Trainer's weight_decay 0); bf16 mixed (p = s = 4, g = 2): 16 + 56 +
 * 4 = 76, + the bf16 copy from the master (read 4, write 2) = 82. */
static void
test_optimizer_step_bytes (void)
{
  ModelStack a = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  ModelStack b = stack (MODEL_PRECISION_BF16_MIXED, MODEL_OPTIMIZER_ADAMW);
  a.framework.optimizer_impl = b.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&a, NULL), 28);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&b, NULL), 28);
  a.framework.optimizer_impl = b.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&a, NULL), 80);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&b, NULL), 82);
  ModelStack c = stack (MODEL_PRECISION_BF16, MODEL_OPTIMIZER_ADAMW);
  c.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&c, NULL), 40);
  c.framework.weight_decay_zero = TRUE;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&c, NULL), 36);
  /* 8-bit AdamW is bitsandbytes' one fused kernel whatever the implementation key */
  ModelStack d = stack (MODEL_PRECISION_BF16, MODEL_OPTIMIZER_ADAMW_8BIT);
  double fused8 = model_stack_optimizer_step_bytes (&d, NULL);
  d.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&d, NULL), fused8);
  /* fp16 loss scaling unscales the gradients first, reading and writing each (2g): fp16
   * mixed, fused: 28 with g = 2 as bf16 mixed, + 4 = 32; fp16 AMP (fp32 gradients), fused
   * as fp32: 28 + 8 = 36 */
  ModelStack f = stack (MODEL_PRECISION_FP16_MIXED, MODEL_OPTIMIZER_ADAMW);
  f.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&f, NULL), 32);
  f.precision = MODEL_PRECISION_FP16_AMP;
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&f, NULL), 36);
}

/* A small arch with hand-countable tensors: gpt2-like, h = 4, L = 1, V = 10, P = 8, i = 16,
 * tied. Tensors: wte 10×4, wpe 8×4, q, k, v, o 4×4 each, biases 4 ×4, fc 16×4, proj 4×16,
 * fc bias 16, proj bias 4, 2 LayerNorms × 2 × 4, final LayerNorm 2 × 4.
 * Matrices: wte 40, wpe 32, q,k,v,o 64, fc 64, proj 64 → 264; vectors 16 + 16 + 4 + 16 + 8
 * = 60; total Ψ = 324. */
static ModelArch *
small_arch (void)
{
  ModelArch *a = g_new0 (ModelArch, 1);
  a->name = g_strdup ("small");
  model_arch_set_family_defaults (a, MODEL_FAMILY_GPT2);
  a->hidden_size = 4;
  a->n_layers = 1;
  a->n_heads = a->n_kv_heads = 1;
  a->head_dim = 4;
  a->intermediate_size = 16;
  a->vocab_size = 10;
  a->max_positions = 8;
  return a;
}

/* Per-parameter byte table of every precision (weights, master, gradients) with AdamW:
 *   fp32 4/0/4, bf16_mixed and fp16_mixed 2/4/2, bf16 (pure) 2/0/2 with bf16 AdamW states
 *   2 × 2 = 4 → 8 B/param, fp8_mixed 2/4/2 + 1 B fp8 copy, fp16_amp/bf16_amp 4/0/4 + a
 *   2 B cast kept from forward to backward (HF's 18 B/param, published.md M9:
 *   4 + 2 + 4 + 8). */
static void
test_precision_table (void)
{
  const struct
  {
    ModelPrecision p;
    double w, m, g, k, fp8, cache;
  } rows[] = {
    { MODEL_PRECISION_FP32, 4, 0, 4, 8, 0, 0 },      { MODEL_PRECISION_BF16_MIXED, 2, 4, 2, 8, 0, 0 },
    { MODEL_PRECISION_FP16_MIXED, 2, 4, 2, 8, 0, 0 }, { MODEL_PRECISION_BF16, 2, 0, 2, 4, 0, 0 },
    { MODEL_PRECISION_FP8_MIXED, 2, 4, 2, 8, 1, 0 }, { MODEL_PRECISION_FP16_AMP, 4, 0, 4, 8, 0, 2 },
    { MODEL_PRECISION_BF16_AMP, 4, 0, 4, 8, 0, 2 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      ModelStack s = stack (rows[i].p, MODEL_OPTIMIZER_ADAMW);
      CU_ASSERT_EQUAL (model_stack_weight_bytes (&s), rows[i].w);
      CU_ASSERT_EQUAL (model_stack_master_bytes (&s), rows[i].m);
      CU_ASSERT_EQUAL (model_stack_gradient_bytes (&s), rows[i].g);
      CU_ASSERT_EQUAL (model_stack_optimizer_bytes (&s), rows[i].k);
      CU_ASSERT_EQUAL (model_stack_fp8_weight_bytes (&s), rows[i].fp8);
      CU_ASSERT_EQUAL (model_stack_weight_cache_bytes (&s), rows[i].cache);
    }
  ModelStack pure = stack (MODEL_PRECISION_BF16, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_state_bytes (&pure), 8);
  ModelStack amp = stack (MODEL_PRECISION_FP16_AMP, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_state_bytes (&amp) + model_stack_weight_cache_bytes (&amp), 18);
  ModelStack fp8 = stack (MODEL_PRECISION_FP8_MIXED, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_compute_dtype (&fp8), HW_DTYPE_FP8);
}

/* Optimizer-state bytes of the whole small model (Ψ = 324, matrices 264 in 8 of them,
 * vectors 60):
 *   AdamW 8Ψ = 2592; SGD 4Ψ = 1296;
 *   Adafactor: matrices keep r + c fp32 values: wte 10+4, wpe 8+4, GPT-2's fused c_attn
 *     (q, k, v: 12×4) 12+4 and o 4+4, fc 16+4, proj 4+16 → 14 + 12 + 24 + 20 + 20 = 90;
 *     vectors keep all 60: 150 × 4 = 600;
 *   8-bit Adam: every tensor is under 4096 elements, so all keep fp32 states: 8Ψ = 2592. */
static void
test_optimizer_states_small (void)
{
  g_autoptr (ModelArch) a = small_arch ();
  CU_ASSERT_EQUAL_FATAL (model_arch_n_params (a), 324);
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), 2592);
  s.optimizer = MODEL_OPTIMIZER_SGD_MOMENTUM;
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), 1296);
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), 600);
  s.optimizer = MODEL_OPTIMIZER_ADAMW_8BIT;
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), 2592);
}

/* 8-bit Adam on a large tensor: h = 1024, V = 4096 makes wte 4096 × 1024 = 4,194,304
 * elements = 16,384 blocks of 256 (bitsandbytes >= 0.44 Optimizer2State.init_state):
 * states 2 × (4,194,304 + 4 × 16,384) = 8,519,680 B, i.e. 2 + 8/256 B per element
 * (Dettmers et al. 2022 §2, with bitsandbytes' block). Checked as the difference between
 * vocabularies 4096 and 2048 (the other tensors are equal): 2 × (2,097,152 + 4 × 8192) =
 * 4,259,840 B (with 2048-element blocks, as before 0.44, it would be 4,202,496).
 * On 1-D shard views bitsandbytes' min_8bit_size applies to the view the optimizer sees:
 * over 2 shards each view of wte is ≥ 4096 elements, so the difference is the same blocks'
 * 4,259,840 B (2 views of 8192 and of 4096 blocks); over 2048 shards a view is 2048 (1024)
 * elements, under 4096: fp32 states, 8 B an element, 8 × 2,097,152 = 16,777,216 B. */
static void
test_adam_8bit_blocks (void)
{
  g_autoptr (ModelArch) a = small_arch ();
  a->hidden_size = 1024;
  a->head_dim = 1024;
  a->intermediate_size = 4096;
  a->vocab_size = 4096;
  g_autoptr (ModelArch) b = model_arch_copy (a);
  b->vocab_size = 2048;
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW_8BIT);
  ModelOptimizerView v = { MODEL_OPTIMIZER_SEES_SHARD_VIEWS, 2 };
  const ModelOptimizerView *views[] = { NULL, &v, &v };
  const double want[] = { 4259840, 4259840, 16777216 };
  for (guint i = 0; i < G_N_ELEMENTS (views); i++)
    {
      v.shards = i < 2 ? 2 : 2048;
      CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, views[i])
                         - model_stack_optimizer_state_total (&s, b, views[i]), want[i]);
    }
}

/* Persistent bytes at time 0: gradients only when zero_grad keeps them; fp8 copies and the
 * amax histories (1024 × 4 B × 5 tensors × 4 GEMMs per layer = 81,920 B) in quantization. */
static void
test_initial_bytes (void)
{
  g_autoptr (ModelArch) a = small_arch ();
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_GRADIENTS), 0);
  s.zero_grad_to_none = FALSE;
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_GRADIENTS), 4 * 324);
  s.precision = MODEL_PRECISION_FP8_MIXED;
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_QUANTIZATION), 324 + 81920);
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_MASTER_WEIGHTS), 4 * 324);
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_ACTIVATIONS), 0);
}

/* Optimizer temporaries: foreach AdamW one fp32 copy of the second moment, 4Ψ = 1296; the
 * per-tensor loop one tensor, the largest (fc, 64 elements): 256; Adafactor 2 × 4 × 64 =
 * 512; SGD 0. */
static void
test_optimizer_workspace (void)
{
  g_autoptr (ModelArch) a = small_arch ();
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 1296);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 256);
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 512);
  s.optimizer = MODEL_OPTIMIZER_SGD_MOMENTUM;
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 0);
}

/* The optimizer's states and temporaries by the tensors it steps (ModelOptimizerView), small
 * model (Ψ = 324, matrices 264, vectors 60; the largest matrix 64 elements):
 *   Adafactor as parameters 600 (test_optimizer_states_small), also in pure bf16 (its states
 *     are fp32 whatever the parameters: 300 if they followed them); as 1-D shard views or
 *     flat partitions nothing is a matrix: 4Ψ = 1296;
 *   8-bit Adam as flat partitions: every element 8-bit, 2Ψ(1 + 4/256) = 658.125 (as
 *     parameters each tensor is under 4096 elements: fp32, 2592);
 *   Adafactor's temporaries (2 × 4 B × the largest tensor stepped): parameters and shard
 *     views the fc matrix, 512 (whole-model: the plan scales it); flat partitions the
 *     matrices' group, 2 × 4 × 264 = 2112;
 *   Adafactor's step traffic, fp32: param + 2 grad reads, param write = 16; its unfactored
 *     second moment read and written as views: 16 + 2 × 4 = 24. */
static void
test_optimizer_view (void)
{
  g_autoptr (ModelArch) a = small_arch ();
  const ModelOptimizerView views = { MODEL_OPTIMIZER_SEES_SHARD_VIEWS, 2 };
  const ModelOptimizerView flat = { MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS, 1 };
  ModelStack s = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAFACTOR);
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, &views), 1296);
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, &flat), 1296);
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 512);
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, &views), 512);
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, &flat), 2112);
  CU_ASSERT_EQUAL (model_stack_largest_stepped (&s, a, &flat), 264);
  CU_ASSERT_EQUAL (model_stack_largest_tensor_state (&s, a, &flat), 4 * 264);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&s, NULL), 16);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&s, &views), 24);
  s.precision = MODEL_PRECISION_BF16;
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), 600);
  ModelStack e = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW_8BIT);
  CU_ASSERT_EQUAL (model_stack_optimizer_state_total (&e, a, NULL), 2592);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_state_total (&e, a, &flat), 658.125, 1e-9);
}

/* Paged states spill what does not fit: 10 GB of states, 70 GB of the rest, 75 GB of
 * room: 5 GB spill; nothing when it fits; never more than the states. */
static void
test_paged_spill (void)
{
  CU_ASSERT_EQUAL (model_stack_paged_spill (10e9, 70e9, 75e9), 5e9);
  CU_ASSERT_EQUAL (model_stack_paged_spill (10e9, 60e9, 75e9), 0);
  CU_ASSERT_EQUAL (model_stack_paged_spill (10e9, 90e9, 75e9), 10e9);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "fp32 AdamW is 16 B/param", test_fp32_adamw_16_bytes },
    { "mixed AdamW is ZeRO's 2+2+12", test_mixed_adamw_zero_k12 },
    { "SGD momentum states", test_sgd_momentum },
    { "compute dtype per precision", test_compute_dtype },
    { "names round-trip, unknown rejected", test_names_round_trip },
    { "optimizer step traffic", test_optimizer_step_bytes },
    { "kv_repeat: always, or before SDPA and eager (HF repeat_kv)", test_kv_repeat_by_attention },
    { "precision byte table", test_precision_table },
    { "optimizer states by shape", test_optimizer_states_small },
    { "8-bit Adam block-wise absmax, on shard views too", test_adam_8bit_blocks },
    { "initial bytes: grads kept, fp8 copies", test_initial_bytes },
    { "optimizer temporaries", test_optimizer_workspace },
    { "the tensors the optimizer steps (flat shards, partitions)", test_optimizer_view },
    { "paged optimizer spill", test_paged_spill },
  };
  return STEPSIM_RUN_TESTS ("models/stack", tests);
}
