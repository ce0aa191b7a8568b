/* tests/unit/models/test_stack.c — model-state bytes per parameter per precision and
 * optimizer, against their closed forms. */
#include "config.h"

#include <math.h>
#include "models/stack.h"
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
  for (int p = 0; p <= MODEL_PRECISION_FP16_MIXED; p++)
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

/* AdamW step traffic, mixed: read master 4 + grad 2 + m,v 8; write master 4 + m,v 8 +
 * bf16 copy 2 = 28 B/param. fp32: read 4 + 4 + 8, write 4 + 8 = 28. */
static void
test_optimizer_step_bytes (void)
{
  ModelStack a = stack (MODEL_PRECISION_FP32, MODEL_OPTIMIZER_ADAMW);
  ModelStack b = stack (MODEL_PRECISION_BF16_MIXED, MODEL_OPTIMIZER_ADAMW);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&a), 28);
  CU_ASSERT_EQUAL (model_stack_optimizer_step_bytes (&b), 28);
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
  };
  return STEPSIM_RUN_TESTS ("models/stack", tests);
}
