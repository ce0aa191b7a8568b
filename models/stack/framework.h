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
#include "models/arch/inventory.h"

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
  MODEL_LOSS_UPCAST,  /* logits.float(), log_softmax saves its fp32 output, fp32 gradient
                       * (transformers >= 4.49 ForCausalLMLoss, which shifts the labels;
                       * torchtitan cross_entropy_loss) */
  MODEL_LOSS_PLAIN,   /* F.cross_entropy on the compute-dtype logits, no extra copies */
  MODEL_LOSS_CHUNKED, /* torchtune CEWithChunkedOutputLoss: logits in loss_chunks chunks,
                       * each upcast on its own */
  MODEL_LOSS_FUSED,   /* fused linear + cross-entropy (Megatron, Liger): no full logits */
  MODEL_LOSS_UPCAST_SHIFT, /* transformers 4.46-4.48 ForCausalLMLoss: the upcast loss plus
                            * the shifted contiguous fp32 copy of the logits */
  MODEL_LOSS_VOCAB_PARALLEL, /* Megatron's vocab-parallel cross-entropy: one fp32 copy of the
                              * logits made softmax in place and saved, reused as gradient */
  MODEL_LOSS_SHARDED, /* nanotron's sharded_cross_entropy: the fp32 logits, and a second fp32
                       * copy shifted by the max, made softmax in place and saved */
  MODEL_LOSS_TE_PARALLEL, /* Transformer Engine's parallel_cross_entropy (Megatron's
                           * cross_entropy_fusion_impl "te"): two Triton passes, the gradient
                           * written over the 16-bit logits, which are saved */
  MODEL_LOSS_CHUNKED_HEAD, /* torchtitan's ChunkedLossWrapper: the head GEMM and the upcast
                            * cross-entropy on loss_chunks slices of the hidden states, each
                            * slice's backward run at once into an fp32 gradient buffer, so
                            * one slice's logits live at a time and none are saved */
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

/* Where the rotary position table lives (ModelFramework.rope_table): a GPU buffer built
 * once with the model, positions × rotary_dim/2 entries of 8 B (fp32 cos and sin, or one
 * complex64), in the weights; or computed in each forward for the batch's positions (an
 * activation, models/ops/). */
typedef enum
{
  MODEL_ROPE_TABLE_NONE,          /* per forward (HF transformers' LlamaRotaryEmbedding
                                   * keeps only inv_freq, rotary_dim/2 floats) */
  MODEL_ROPE_TABLE_MAX_POSITIONS, /* over the model's max_position_embeddings (torchtune) */
  MODEL_ROPE_TABLE_SEQ_LEN,       /* over the training sequence length, one per model and
                                   * whole on every pipeline stage (torchtitan before
                                   * 2026-06) */
  MODEL_ROPE_TABLE_PER_LAYER,     /* over the training sequence length, one in each
                                   * attention layer (torchtitan since 2026-06: a stage
                                   * holds its layers'; cos‖sin, 16 B a pair, for the
                                   * models torchtitan builds with CosSinRoPE) */
  MODEL_N_ROPE_TABLES
} ModelRopeTable;

typedef struct
{
  ModelFrameworkKind kind;
  /* Op-graph knobs (models/ops/): */
  ModelLossImpl loss;
  guint loss_chunks;            /* chunks of MODEL_LOSS_CHUNKED (torchtune: 8) and
                                 * MODEL_LOSS_CHUNKED_HEAD (torchtitan: 8), >= 1 */
  gboolean norm_fp32;           /* norms upcast to fp32 and save the fp32 input (HF LlamaRMSNorm) */
  gboolean compile;             /* torch.compile fuses elementwise chains (fewer saved tensors) */
  gboolean kv_repeat;           /* GQA keys/values expanded to the query heads before the
                                 * attention kernel, which saves the expanded copies (torchtune
                                 * modules/attention.py), whatever the kernel */
  gboolean kv_repeat_sdpa;      /* the same before PyTorch's SDPA, not before flash-attn (the
                                 * eager core expands them in every framework,
                                 * model_stack_cost_params) (HF transformers 4.46–4.48:
                                 * LlamaSdpaAttention and sdpa_attention_forward call
                                 * repeat_kv; flash_attention_2 takes GQA as is; since PR
                                 * #39412, 2025-07, SDPA gets enable_gqa instead when the
                                 * mask is None: FALSE in every profile) */
  gboolean softmax_fp32;        /* the eager attention core computes softmax in fp32 and
                                 * casts the probabilities back, as the HF model code of
                                 * llama-like families does (model_arch_softmax_fp32); only
                                 * in a 16-bit dtype without autocast (ModelCostParams) */
  gboolean logits_kept;         /* the training loop still holds the logits it passed to the
                                 * loss while loss.backward() runs (torchtune < 0.3: no
                                 * `del logits` before the backward, pytorch/torchtune#1235) */
  gboolean moe_grouped_mlp;     /* MoE experts as Megatron's TEGroupedMLP (experts.py): the
                                 * routing weights applied inside the fused weighted SwiGLU
                                 * (weighted_bias_swiglu_impl), which saves fc1's output, so
                                 * neither SiLU's output nor the experts' output is saved;
                                 * FALSE: HF's eager expert loop (modeling_mixtral.py) */
  /* Model-state and step knobs (models/stack/, models/plan/): */
  gboolean main_grad_fp32;      /* Megatron: an fp32 main_grad buffer beside 16-bit params */
  gboolean grad_buffer_buckets; /* the data-parallel all-reduce buckets are views into the
                                 * gradient buffer, no separate bucket copies (Megatron:
                                 * megatron/core/distributed/param_and_grad_buffer.py
                                 * _ParamAndGradBuffer, each bucket a view of grad_data) */
  gboolean wgrad_dummy;         /* the linears' weight gradients go straight into main_grad
                                 * (gradient_accumulation_fusion) and autograd gets one cached
                                 * empty tensor per distinct weight shape instead, held for the
                                 * process's life (Transformer Engine module/base.py
                                 * get_dummy_wgrad; models/plan/plan_state.c) */
  ModelOptimizerImpl optimizer_impl;
  gboolean weight_decay_zero;   /* the optimizer runs with weight_decay 0 (the HF Trainer's
                                 * default, training_args.py weight_decay = 0.0): PyTorch's
                                 * foreach and per-tensor AdamW skip their decay pass (a
                                 * user's torch.optim.AdamW defaults to 1e-2) */
  gboolean optimizer_in_backward; /* torchtune: each parameter stepped in its backward hook */
  /* Host (CPU) cost of issuing the step's kernels (models/plan/executor.c): */
  double host_op_time;          /* s of host time for each PyTorch op the forward, a recompute
                                 * or the optimizer issues from Python (ModelOp.host_ops) */
  double host_backward_op_time; /* s for each op the autograd engine issues in the backward
                                 * (C++, no Python) */
  gboolean host_sync_micro_batch; /* the host waits for each micro-batch's work to finish
                                   * before issuing the next micro-batch and the optimizer
                                   * step (the HF Trainer's NaN check of the loss) */
  gboolean activation_offload;  /* torchtune: saved activations to pinned host memory */
  ModelRopeTable rope_table;    /* the rotary table a GPU buffer (torchtune, torchtitan) */
  gboolean fsdp_end_units;      /* under FSDP (full or hybrid sharding) the
                                 * embedding and the output head (with the final norm) are
                                 * FSDP units of their own, gathered around their forward and
                                 * backward, the head's gradient reduce-scattered after its
                                 * backward (torchtitan; torchtune's custom_sharded_layers =
                                 * ['tok_embeddings', 'output']), not parts of the root unit,
                                 * which stays gathered from the forward to the end of the
                                 * backward; a tied model keeps them in one unit */
  gboolean fsdp2;               /* [parallel] data_parallel = fsdp_* is FSDP2's fully_shard
                                 * (torch/distributed/fsdp/_fully_shard: a DTensor per
                                 * parameter, in its own shape; torchtune, torchtitan), not
                                 * FSDP1's FullyShardedDataParallel, whose FlatParameter the
                                 * optimizer steps as 1-D shard views (use_orig_params;
                                 * ModelOptimizerView, models/stack/stack.h). Scenario key
                                 * fsdp_version = 1 | 2 */
  /* DeepSpeed buffers, in elements as ds_config means them (0: not DeepSpeed; the two
   * stage-3 prefetch budgets are NAN outside the DeepSpeed profile, as 0 means "no
   * prefetch" there): */
  double allgather_bucket_elements;
  double reduce_bucket_elements;
  double stage3_prefetch_bucket_elements;
  double stage3_param_persistence_threshold;
  double stage3_max_live_parameters;
  gboolean deepspeed_engine;    /* DeepSpeed's engine runs the step: framework = deepspeed, or
                                 * any profile given a ds_config (the HF Trainer's --deepspeed,
                                 * custom code calling deepspeed.initialize) */
  gboolean ds_overlap_comm;     /* zero_optimization.overlap_comm: two reduce buffers (DeepSpeed
                                 * default: true under stage 3 only, zero/config.py
                                 * overlap_comm_valid) */
} ModelFramework;

/* The most host time per op a scenario may give: 10 ms (s), a thousand times the eager
 * figure (framework.c), so a unit slip (12 s for 12 us) is refused. */
#define MODEL_FRAMEWORK_MAX_HOST_OP_TIME 10e-3

/* The most elements a DeepSpeed bucket or threshold may name: 2^40 (a 2 TiB bf16 bucket,
 * far beyond any GPU; DeepSpeed's defaults are 5e7–1e9). Readers refuse larger values,
 * fractions, and negatives, so a typo (1e30, 0.5) cannot make a buffer of 1e21 GiB or
 * a fraction of an element. 0 stays valid: it switches the buffer or threshold off. */
#define MODEL_FRAMEWORK_MAX_ELEMENTS 1099511627776.0

/* Names for scenarios and reports: "custom", "hf_trainer", "accelerate_fsdp", "torchtune",
 * "torchtitan", "megatron", "deepspeed", "nanotron"; "upcast", "plain", "chunked", "fused",
 * "upcast_shift", "vocab_parallel", "sharded", "te_parallel", "chunked_head";
 * "per_tensor", "foreach", "fused", "cpu_adam"; "none", "max_positions", "seq_len", "per_layer"
 * (rope_table).
 * Parsing sets G_KEY_FILE_ERROR_INVALID_VALUE
 * whose message lists the accepted names (the caller prefixes group and key). */
const char *model_framework_name (ModelFrameworkKind k);
const char *model_framework_loss_name (ModelLossImpl l);
const char *model_framework_optimizer_impl_name (ModelOptimizerImpl i);
gboolean model_framework_from_string (const char *s, ModelFrameworkKind *out, GError **error);
gboolean model_framework_loss_from_string (const char *s, ModelLossImpl *out, GError **error);
gboolean model_framework_optimizer_impl_from_string (const char *s, ModelOptimizerImpl *out,
                                                     GError **error);
const char *model_framework_rope_table_name (ModelRopeTable t);
gboolean model_framework_rope_table_from_string (const char *s, ModelRopeTable *out,
                                                 GError **error);

/* Appends to `out` one line per host-time factor every profile uses (host_op_time,
 * host_backward_op_time): "name<TAB>value<TAB>source\n". */
void model_framework_describe_host_factors (GString *out);

/* Sets every field of *fw to profile `kind`'s defaults (the table in framework.c, each value
 * citing the framework's source file). MODEL_FRAMEWORK_CUSTOM gives the values
 * model_stack_init_defaults() sets. */
void model_framework_apply_profile (ModelFramework *fw, ModelFrameworkKind kind);

/* Bytes of DeepSpeed's gradient reduction buffers under ZeRO stage `stage` (1–3) with
 * `grad_bytes` per gradient element (B): the contiguous-gradients "ipg" bucket of
 * reduce_bucket_elements elements of the 16-bit gradient dtype, allocated whole whatever
 * the model size — stage 1–2 two of them with overlap_comm (deepspeed/runtime/zero/
 * stage_1_and_2.py backward(): ipg_buffer buf_0, buf_1), stage 3 one
 * (deepspeed/runtime/zero/stage3.py __ipg_bucket_flat_buffer). 0 when reduce_bucket_elements
 * is 0 (not DeepSpeed) or stage is 0. */
double model_framework_ds_reduce_buffer_bytes (const ModelFramework *fw, guint stage,
                                               double grad_bytes);

/* DeepSpeed stage 3: the parameter elements that stay gathered on every rank — each tensor
 * of at most stage3_param_persistence_threshold elements is marked ds_persist and never
 * partitioned (deepspeed/runtime/zero/parameter_offload.py mark_persistent_parameters,
 * `param.ds_numel <= param_threshold`). Counted over the base tensors stored in the weight
 * dtype of `inv` (the weights category; LoRA adapters and NF4 matrices are not). 0 without
 * a threshold. */
double model_framework_ds_persistent_elements (const ModelFramework *fw,
                                               const ModelInventory *inv);

/* DeepSpeed stage 3: layers gathered ahead of the one computing, from the prefetch bucket
 * and the live-parameter cap in elements and one layer's `layer_params` parameters:
 * ⌈prefetch_bucket / layer_params⌉, but at most ⌊max_live / layer_params⌋ − 1 so that the
 * layers live at once (the computing one and the prefetched) stay under max_live
 * (deepspeed/runtime/zero/partitioned_param_coordinator.py fetch_sub_module:
 * max_params_to_prefetch = min(max_available − available, prefetch_bucket_sz)); clamped to
 * [1, n_layers] (the plan's gathers are layer-granular; DeepSpeed's on-demand fetch of a
 * bucket smaller than a layer is counted as one layer ahead). 0 when the bucket or max_live
 * is 0: DeepSpeed then prefetches nothing (fetch_sub_module's "if prefetch_bucket_sz > 0";
 * max_params_to_prefetch <= 0), every layer is gathered when it is needed. G_MAXUINT when
 * the profile has no stage-3 prefetch bucket (NAN: use [parallel] prefetch). */
guint model_framework_ds_prefetch_layers (const ModelFramework *fw, double layer_params,
                                          guint n_layers);
