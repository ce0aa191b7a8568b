/* models/stack/framework.h — what the training framework keeps that the model alone does
 * not say: the loss computation, norm precision, elementwise fusion, gradient buffers,
 * optimizer implementation and DeepSpeed's buffers.
 *
 * A profile (`[training] framework = …`) sets documented defaults for every field, each
 * citing the framework's source (models/stack/framework.c); every field can then be
 * overridden by its own scenario key. MODEL_FRAMEWORK_CUSTOM is plain PyTorch eager with
 * the Hugging Face model code, stepsim's behaviour before profiles existed.
 *
 * Ownership: a plain value struct, copied freely; no heap members.
 */
#pragma once

#include <glib.h>

typedef enum
{
  MODEL_FRAMEWORK_CUSTOM,          /* plain PyTorch eager + HF model code; every key explicit */
  MODEL_FRAMEWORK_HF_TRAINER,      /* transformers Trainer */
  MODEL_FRAMEWORK_ACCELERATE_FSDP, /* accelerate with its FSDP plugin */
  MODEL_FRAMEWORK_TORCHTUNE,
  MODEL_FRAMEWORK_TORCHTITAN,
  MODEL_FRAMEWORK_MEGATRON,
  MODEL_FRAMEWORK_DEEPSPEED,
  MODEL_FRAMEWORK_NANOTRON,
  MODEL_N_FRAMEWORKS
} ModelFrameworkKind;

/* How the loss head turns hidden states into a loss (memory of the head's op graph). */
typedef enum
{
  MODEL_LOSS_UPCAST,  /* HF ForCausalLMLoss: logits.float(), shifted copy, log_softmax
                       * saves its fp32 output, fp32 gradient (transformers loss_utils.py) */
  MODEL_LOSS_PLAIN,   /* F.cross_entropy on the compute-dtype logits, no extra copies */
  MODEL_LOSS_CHUNKED, /* torchtune CEWithChunkedOutputLoss: logits in loss_chunks chunks,
                       * each upcast on its own */
  MODEL_LOSS_FUSED,   /* fused linear + cross-entropy (Megatron, Liger): no full logits */
  MODEL_N_LOSSES
} ModelLossImpl;

typedef enum
{
  MODEL_OPTIMIZER_IMPL_PER_TENSOR, /* a Python loop over parameters (adamw_hf, torch < 2.0) */
  MODEL_OPTIMIZER_IMPL_FOREACH,    /* torch.optim foreach (multi-tensor), torch >= 2.0 default */
  MODEL_OPTIMIZER_IMPL_FUSED,      /* torch fused=True / apex FusedAdam: no whole-state temporaries */
  MODEL_OPTIMIZER_IMPL_CPU_ADAM,   /* DeepSpeed CPU-Adam (with optimizer offload) */
  MODEL_N_OPTIMIZER_IMPLS
} ModelOptimizerImpl;

typedef struct
{
  ModelFrameworkKind kind;
  /* Op-graph knobs (models/ops/): */
  ModelLossImpl loss;
  guint loss_chunks;            /* chunks of MODEL_LOSS_CHUNKED (torchtune: 8), >= 1 */
  gboolean norm_fp32;           /* norms upcast to fp32 and save the fp32 input (HF LlamaRMSNorm) */
  gboolean compile;             /* torch.compile fuses elementwise chains (fewer saved tensors) */
  gboolean kv_repeat;           /* GQA keys/values expanded to the query heads before the
                                 * attention kernel, which saves the expanded copies (torchtune
                                 * modules/attention.py; HF repeat_kv for eager and masked SDPA) */
  /* Model-state and step knobs (models/stack/, models/plan/): */
  gboolean main_grad_fp32;      /* Megatron: an fp32 main_grad buffer beside 16-bit params */
  ModelOptimizerImpl optimizer_impl;
  gboolean optimizer_in_backward; /* torchtune: each parameter stepped in its backward hook */
  gboolean activation_offload;  /* torchtune: saved activations to pinned host memory */
  /* DeepSpeed buffers, in elements as ds_config means them (0: not DeepSpeed): */
  double allgather_bucket_elements;
  double reduce_bucket_elements;
  double stage3_prefetch_bucket_elements;
  double stage3_param_persistence_threshold;
  double stage3_max_live_parameters;
} ModelFramework;
