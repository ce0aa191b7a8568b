/* models/stack.h — the technique stack of a training run and what it implies per parameter.
 *
 * Model-state bytes per parameter (Rajbhandari et al. 2020, ZeRO, arXiv 1910.02054, §3.1):
 *   fp32:            weights 4 + gradients 4 + optimizer K                    = 8 + K
 *   bf16/fp16 mixed: weights 2 + gradients 2 + master weights 4 + optimizer K = 8 + K
 *                    (Micikevicius et al. 2018, "Mixed Precision Training", §3.1: fp32
 *                    master copy; the ZeRO paper's 2Ψ + 2Ψ + KΨ with K = 12 counts the
 *                    master copy inside K, i.e. K_ZeRO = 4 + K here)
 *   optimizer K:     AdamW 8 (first and second moments in fp32; Loshchilov & Hutter 2019),
 *                    SGD with momentum 4 (one fp32 momentum buffer).
 * So fp32 AdamW = 16 B/param (published.md S2) and mixed AdamW = 16 B/param (ZeRO's 2+2+12).
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"

typedef enum
{
  MODEL_PRECISION_FP32,
  MODEL_PRECISION_BF16_MIXED, /* bf16 compute copy + fp32 master weights */
  MODEL_PRECISION_FP16_MIXED, /* fp16 compute copy + fp32 master weights (+ loss scaling) */
} ModelPrecision;

typedef enum
{
  MODEL_OPTIMIZER_ADAMW,
  MODEL_OPTIMIZER_SGD_MOMENTUM,
} ModelOptimizer;

typedef enum
{
  MODEL_CHECKPOINTING_NONE,
  MODEL_CHECKPOINTING_FULL, /* keep each layer's input, recompute the layer in backward */
} ModelCheckpointing;

typedef struct
{
  guint64 micro_batch;    /* sequences per micro-batch, >= 1 */
  guint64 seq_len;        /* tokens per sequence, >= 1 */
  guint64 grad_accum;     /* micro-batches per optimizer step (GA), >= 1 */
  ModelPrecision precision;
  ModelOptimizer optimizer;
  ModelCheckpointing checkpointing;
  gboolean flash_attention;
  gboolean tf32;          /* fp32 GEMMs on TF32 tensor cores (PyTorch default: off) */
  double dropout;         /* probability in [0, 1) */
} ModelStack;

/* Defaults: micro_batch 1, seq_len 2048, GA 1, bf16 mixed, AdamW, no checkpointing,
 * FlashAttention on, tf32 off, dropout 0. */
void model_stack_init_defaults (ModelStack *stack);

/* Name tables for scenarios and reports ("fp32", "bf16_mixed", "fp16_mixed"; "adamw",
 * "sgd_momentum"; "none", "full"). Parsing errors are G_KEY_FILE_ERROR_INVALID_VALUE whose
 * message lists the accepted names. NULL-terminated name lists are static. */
const char *model_stack_precision_name (ModelPrecision p);
const char *model_stack_optimizer_name (ModelOptimizer o);
const char *model_stack_checkpointing_name (ModelCheckpointing c);
gboolean model_stack_precision_from_string (const char *s, ModelPrecision *out, GError **error);
gboolean model_stack_optimizer_from_string (const char *s, ModelOptimizer *out, GError **error);
gboolean model_stack_checkpointing_from_string (const char *s, ModelCheckpointing *out,
                                                GError **error);

/* Bytes per parameter of each model-state category (see the file comment). */
double model_stack_weight_bytes (const ModelStack *s);     /* compute copy: 4 or 2 */
double model_stack_master_bytes (const ModelStack *s);     /* 0 or 4 */
double model_stack_gradient_bytes (const ModelStack *s);   /* 4 or 2 */
double model_stack_optimizer_bytes (const ModelStack *s);  /* K: 8 (AdamW) or 4 (SGD) */
/* Sum of the four: total model-state bytes per parameter. */
double model_stack_state_bytes (const ModelStack *s);

/* Bytes per activation element (4 for fp32, 2 for mixed) and the tensor-core dtype of
 * GEMMs (fp32, tf32, bf16 or fp16). */
double model_stack_activation_bytes (const ModelStack *s);
HwDtype model_stack_compute_dtype (const ModelStack *s);

/* HBM bytes moved per parameter by one optimizer step (read weights/master, gradients and
 * states, write them back): AdamW reads param, grad, m, v and writes param, m, v (+ the
 * compute copy in mixed precision); SGD reads param, grad, momentum and writes param,
 * momentum. FLOPs per parameter: AdamW ≈ 12, SGD ≈ 4 (element-wise; Loshchilov & Hutter
 * 2019, Algorithm 2). */
double model_stack_optimizer_step_bytes (const ModelStack *s);
double model_stack_optimizer_step_flops (const ModelStack *s);
