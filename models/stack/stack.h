/* models/stack/stack.h — the technique stack of a training run and what it implies per parameter.
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
 *
 * More precisions (bytes per parameter: weights + master + gradients):
 *   bf16        pure bf16: weights, gradients and optimizer states in bf16, no master copy:
 *               2 + 0 + 2, AdamW states 2 × 2 = 4, so 8 B/param (the "pure bf16" recipe,
 *               e.g. Zamirai et al. 2020, "Revisiting BFloat16 Training", arXiv 2010.06192,
 *               who need stochastic rounding or Kahan summation in the update to match fp32
 *               accuracy; the Kahan buffer, 2 B/param more, is not modelled).
 *   fp8_mixed   Transformer Engine's recipe (NVIDIA TE docs, "Using FP8 with Transformer
 *               Engine"; Micikevicius et al. 2022, "FP8 Formats for Deep Learning", arXiv
 *               2209.05433 §4): bf16 weights 2 + fp32 master 4 + bf16 gradients 2, plus
 *               fp8 weight copies 1 B/param (category quantization) and delayed-scaling
 *               state: an amax history of 1024 fp32 values (TE DelayedScaling default) for
 *               each of the 5 fp8 tensors (3 forward, 2 backward) of each of the 4 GEMM
 *               modules of a layer (category quantization, tiny). GEMMs run at fp8.
 *   fp16_amp /  PyTorch autocast as the HF Trainer uses it (fp16=True / bf16=True): the
 *   bf16_amp    model stays fp32 (weights 4, gradients 4, no separate master), and autocast
 *               casts each weight to 16 bit in the forward, a copy (2 B/param) that the
 *               autograd graph keeps until the layer's backward — HF's "18 bytes/param" for
 *               mixed-precision AdamW (published.md M9: 4 + 2 weights, 4 grads, 8 Adam).
 *               Dynamic loss scaling (GradScaler) keeps a scalar scale and step counters and
 *               unscales the fp32 gradients in place (_amp_foreach_non_finite_check_and_
 *               unscale_): no per-parameter buffer.
 *   fp16_mixed  fp16 compute copy + fp32 master (Micikevicius et al. 2018 §3.1-3.2): the
 *               gradients stay fp16 and are upcast tensor by tensor when unscaled into the
 *               master's update, so no persistent fp32 gradient copy is counted.
 *
 * More optimizers (optimizer-state bytes, fp32 states unless the precision is pure bf16):
 *   adafactor        factored second moment (Shazeer & Stern 2018, arXiv 1804.04235 §3-4):
 *                    a matrix r×c keeps r + c values instead of r·c, a vector keeps all its
 *                    n; no first moment (beta1 = None, the paper's and HF's default).
 *   adamw_8bit       bitsandbytes block-wise 8-bit Adam (Dettmers et al. 2022, "8-bit
 *                    Optimizers via Block-wise Quantization", arXiv 2110.02861 §2): both
 *                    states 1 B/element + one fp32 absmax per 256-element block per state
 *                    (bitsandbytes >= 0.44; 2048 before); tensors under 4096 elements keep
 *                    fp32 states (bnb min_8bit_size).
 *   paged_adamw_8bit the same bytes, allocated in CUDA unified memory (bitsandbytes paged
 *                    optimizers; QLoRA, Dettmers et al. 2023, arXiv 2305.14314 §3): pages
 *                    evicted to host under memory pressure. model_stack_paged_spill() gives
 *                    the bytes that spill; models/plan/plan_paged.h keeps them in host DRAM and
 *                    migrates them around the optimizer step (models/plan/simulate.c sizes the spill).
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"
#include "models/arch/arch.h"
#include "models/ops/cost.h"
#include "models/arch/finetune.h"
#include "models/arch/inventory.h"
#include "models/stack/framework.h"
#include "models/memory/ledger.h"
#include "models/memory/offload.h"
#include "models/parallel/parallel.h"

/* The most micro-batches a step may accumulate: the plan builds each one's tasks, so the
 * inputs (scenario [training] grad_accum, a DeepSpeed config's gradient_accumulation_steps)
 * are bounded here (QA: 2147483647 built micro-batches until killed; 100000 ran three
 * minutes in 3.7 GB). */
#define MODEL_STACK_MAX_GRAD_ACCUM 1024

typedef enum
{
  MODEL_PRECISION_FP32,
  MODEL_PRECISION_BF16_MIXED, /* bf16 compute copy + fp32 master weights */
  MODEL_PRECISION_FP16_MIXED, /* fp16 compute copy + fp32 master weights (+ loss scaling) */
  MODEL_PRECISION_BF16,       /* pure bf16: weights, gradients, optimizer states */
  MODEL_PRECISION_FP8_MIXED,  /* Transformer Engine: bf16 weights, fp32 master, fp8 GEMMs */
  MODEL_PRECISION_FP16_AMP,   /* autocast fp16 on an fp32 model (HF Trainer fp16=True) */
  MODEL_PRECISION_BF16_AMP,   /* autocast bf16 on an fp32 model (HF Trainer bf16=True) */
  MODEL_N_PRECISIONS
} ModelPrecision;

typedef enum
{
  MODEL_OPTIMIZER_ADAMW,
  MODEL_OPTIMIZER_SGD_MOMENTUM,
  MODEL_OPTIMIZER_ADAFACTOR,
  MODEL_OPTIMIZER_ADAMW_8BIT,
  MODEL_OPTIMIZER_PAGED_ADAMW_8BIT,
  MODEL_N_OPTIMIZERS
} ModelOptimizer;

typedef enum
{
  MODEL_CHECKPOINTING_NONE,
  MODEL_CHECKPOINTING_FULL,      /* keep each layer's input, recompute the layer in backward */
  MODEL_CHECKPOINTING_SELECTIVE, /* keep all but the attention core's, recompute that
                                    (Korthikanti et al. 2022 §5) */
  MODEL_CHECKPOINTING_EVERY_K,   /* full checkpointing of every k-th layer (checkpoint_every) */
  MODEL_CHECKPOINTING_SQRT,      /* √L segments: keep each segment's input, recompute a
                                    segment at a time (Chen et al. 2016, arXiv 1604.06174 §3) */
  MODEL_CHECKPOINTING_SELECTIVE_OP, /* op-level: keep matmul and attention outputs, recompute
                                       the point-wise ops (torchtitan selective_ac_option op;
                                       models/ops/graph.h) */
} ModelCheckpointing;

typedef struct
{
  guint64 micro_batch;    /* sequences per micro-batch, >= 1 */
  guint64 seq_len;        /* tokens per sequence, >= 1 */
  guint64 grad_accum;     /* micro-batches per optimizer step (GA), 1 …
                           * MODEL_STACK_MAX_GRAD_ACCUM */
  ModelPrecision precision;
  ModelOptimizer optimizer;
  ModelCheckpointing checkpointing;
  guint checkpoint_every; /* k of MODEL_CHECKPOINTING_EVERY_K, >= 1 */
  guint recompute_modules; /* under MODEL_CHECKPOINTING_SELECTIVE: what it reruns
                            * (models/ops/cost.h MODEL_RECOMPUTE_* bits; 0: the attention
                            * core, Megatron's default core_attn) */
  gboolean flash_attention;
  /* which fused kernel runs it (hardware/kernel.h; `attention = flash | triton | flash1`):
   * timing only, the memory of all three is FlashAttention's. Default HW_ATTN_FA2. */
  HwAttnKernel attention_kernel;
  /* PyTorch's scaled_dot_product_attention picks the kernel (attention = sdpa, and the
   * default): FA-2 where its filters pass, else the memory-efficient kernel
   * (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp select_sdp_backend). FALSE for
   * attention = flash (flash-attn 2 itself: it raises where it does not run,
   * hardware/kernel.h hw_kernel_attn_supported), triton and flash1. Default TRUE. */
  gboolean attention_sdpa;
  gboolean tf32;          /* fp32 GEMMs on TF32 tensor cores (PyTorch default: off) */
  double dropout;         /* probability in [0, 1) */
  /* DeepSeek-V3 multi-token-prediction depths trained beside the main loss ([training]
   * mtp_layers; Megatron-LM --mtp-num-layers): each adds its module's parameters to the
   * inventory (model_stack_inventory; inventory.h model_inventory_new_mtp) and its
   * forward/backward on the rank holding the loss (models/plan/plan_step.c). 0 (default):
   * off, as HF transformers and torchtune, which ignore the checkpoint's MTP weights. */
  guint mtp_layers;
  /* zero_grad(set_to_none=True), PyTorch's default since 2.0: gradients are freed after
   * the step and re-allocated by the next backward. FALSE (PyTorch 1.x): they are zeroed
   * in place and stay allocated all the time. */
  gboolean zero_grad_to_none;
  /* PyTorch <= 1.10 autograd: softmax and log_softmax keep their input for backward as
   * well as their output (pytorch/pytorch#64000; fixed in 1.11). Default FALSE. */
  gboolean softmax_saves_input;
  /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (models/memory/allocator.h); default off */
  gboolean expandable_segments;
  /* [training] padding = longest: every micro-batch is padded to its own longest sample (at
   * most seq_len), so shapes vary from batch to batch and the caching allocator arrives at
   * the longest batch holding the segments the shorter ones made (models/plan/simulate.h,
   * "padded batches"). Collators that do this: torchtune utils.padded_collate (unpacked
   * datasets), transformers DataCollatorWithPadding / DataCollatorForSeq2Seq (padding=True,
   * i.e. "longest"). FALSE (default, padding = max_length): every batch is seq_len long —
   * packed datasets, or padding="max_length". */
  gboolean pad_to_longest;
  /* [offload]: optimizer, parameters and activations off the GPU (models/memory/offload.h) */
  ModelOffload offload;
  /* [finetune]: LoRA / QLoRA adapters on a frozen base (models/arch/finetune.h) */
  ModelFinetune finetune;
  /* [training] framework and its per-key overrides (models/stack/framework.h); the
   * optimizer implementation (per-tensor, foreach, fused, CPU-Adam) is
   * framework.optimizer_impl */
  ModelFramework framework;
} ModelStack;

/* Defaults: micro_batch 1, seq_len 2048, GA 1, bf16 mixed, AdamW, no checkpointing,
 * FlashAttention on, tf32 off, dropout 0, zero_grad to None, no expandable segments,
 * softmax does not keep its input, full fine-tuning, framework profile custom (foreach
 * optimizer; models/stack/framework.c). */
void model_stack_init_defaults (ModelStack *stack);

/* Name tables for scenarios and reports ("fp32", "bf16_mixed", "fp16_mixed", "bf16",
 * "fp8_mixed", "fp16_amp", "bf16_amp"; "adamw", "sgd_momentum", "adafactor", "adamw_8bit",
 * "paged_adamw_8bit"; "none", "full"). Parsing errors are G_KEY_FILE_ERROR_INVALID_VALUE whose
 * message lists the accepted names. NULL-terminated name lists are static. */
const char *model_stack_precision_name (ModelPrecision p);
const char *model_stack_optimizer_name (ModelOptimizer o);
const char *model_stack_checkpointing_name (ModelCheckpointing c);
gboolean model_stack_precision_from_string (const char *s, ModelPrecision *out, GError **error);
gboolean model_stack_optimizer_from_string (const char *s, ModelOptimizer *out, GError **error);
gboolean model_stack_checkpointing_from_string (const char *s, ModelCheckpointing *out,
                                                GError **error);
/* [training] attention (eager | sdpa | flash | triton | flash1; stack.c says what each
 * runs): sets the stack's flash_attention, attention_sdpa and
 * attention_kernel. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE listing the names otherwise. */
gboolean model_stack_attention_from_string (const char *s, ModelStack *out, GError **error);
/* The [training] attention value the stack holds ("sdpa", …): static. */
const char *model_stack_attention_name (const ModelStack *s);
/* The attention implementation as the run summary says it, with the kernel that runs on
 * `gpu` for heads of head_dim in the stack's compute dtype: "eager (PyTorch ops)", "PyTorch
 * SDPA (FlashAttention-2 kernel)" or "PyTorch SDPA (memory-efficient kernel)" (PyTorch's
 * choice: FA-2 where hardware/kernel.h hw_kernel_attn_supported passes it, else the
 * memory-efficient kernel), "flash-attn 2", "flash-attn (Triton kernel)", "flash-attn 1".
 * Static. */
const char *model_stack_attention_label (const ModelStack *s, const HwGpuSpec *gpu,
                                         guint64 head_dim);

/* Bytes per parameter of each model-state category (see the file comment). */
double model_stack_weight_bytes (const ModelStack *s);     /* persistent weights: 4 or 2 */
double model_stack_master_bytes (const ModelStack *s);     /* 0 or 4 */
/* 4 or 2; 4 whenever framework.main_grad_fp32 (Megatron's fp32 main_grad buffer,
 * megatron/core/distributed/param_and_grad_buffer.py; nanotron's FP32GradientAccumulator:
 * the 16-bit .grad is added into it by the backward hook and freed, so the kept gradient
 * is the fp32 one). */
double model_stack_gradient_bytes (const ModelStack *s);
/* K for dense-state optimizers: AdamW 8 (4 in pure bf16), SGD 4 (2), 8-bit Adam 2 +
 * 8/256 (absmax); Adafactor's depends on shapes: 4 here is its unfactored upper bound,
 * use model_stack_optimizer_state_total() for the real figure. */
double model_stack_optimizer_bytes (const ModelStack *s);
/* Sum of the four: total model-state bytes per parameter. */
double model_stack_state_bytes (const ModelStack *s);
/* fp8 weight copies per parameter (1 for fp8_mixed, else 0; category quantization). */
double model_stack_fp8_weight_bytes (const ModelStack *s);
/* Bytes per parameter of the 16-bit weight copy autocast makes in the forward and the
 * graph keeps until the layer's backward (2 for the amp precisions, else 0). */
double model_stack_weight_cache_bytes (const ModelStack *s);
/* Whether the precision is torch.autocast on an fp32 model (fp16_amp, bf16_amp). */
gboolean model_stack_autocast (const ModelStack *s);
/* TRUE when the step runs fp16 with dynamic loss scaling (fp16_mixed, fp16_amp: compute dtype
 * fp16): GradScaler, Megatron's and DeepSpeed's fp16 optimizers unscale the gradients and
 * read their overflow flag on the host before the step. */
gboolean model_stack_loss_scaled (const ModelStack *s);

/* The cost model's parameters (models/ops/cost.h) for this stack: micro-batch, sequence,
 * element sizes, attention kind, dropout, autocast and its weight-cast cache, and the
 * framework's softmax behaviour. */
ModelCostParams model_stack_cost_params (const ModelStack *s);

/* What trains and what is stored (models/stack/stack_params.c). Full fine-tuning trains every
 * parameter; LoRA and QLoRA (models/arch/finetune.h) train the adapters alone, so master
 * weights, gradients and optimizer states follow the bytes above for the adapter
 * parameters only, while the frozen base keeps just its weights: in the weight dtype (the
 * compute copy, no master: nothing updates it), or for QLoRA the layers' linear weights as
 * NF4, 0.5 B each, their absmax constants (the inventory's quantization-constant tensors,
 * model_inventory_nf4_constant_bytes()) in the quantization category, and the rest
 * (embeddings, norms, biases, head) in the weight dtype.
 *
 * Trainable parameters of the whole model (with the mtp_layers MTP modules, inventory.h
 * MODEL_INVENTORY_MTP), of one layer, and of the root unit (embedding, final norm, head;
 * 0 under LoRA). */
double model_stack_trainable_params (const ModelStack *s, const ModelArch *arch);
double model_stack_trainable_layer_params (const ModelStack *s, const ModelArch *arch);
double model_stack_trainable_root_params (const ModelStack *s, const ModelArch *arch);
/* The tensor inventory of `arch` under the stack's [finetune] method, with its mtp_layers
 * MTP modules (models/arch/inventory.h model_inventory_new_mtp): every count and byte
 * below is a fold over it. Aborts (an
 * invariant) if the method is one model_stack_validate_finetune() refuses (rank 0). New;
 * model_inventory_free(). */
ModelInventory *model_stack_inventory (const ModelStack *s, const ModelArch *arch);
/* Persistent weight bytes (B) of one layer, of the root unit, and of the whole model
 * (= L × layer + root, + the MTP modules), adapters included; of the adapters alone
 * (ledger category lora: w B per adapter parameter, 0 without LoRA). */
double model_stack_layer_weight_bytes (const ModelStack *s, const ModelArch *arch);
double model_stack_root_weight_bytes (const ModelStack *s, const ModelArch *arch);
double model_stack_weights_total (const ModelStack *s, const ModelArch *arch);
double model_stack_lora_bytes (const ModelStack *s, const ModelArch *arch);
/* The persistent tensors of the frozen base (all weights without LoRA), B each, as PyTorch
 * allocates them (one per parameter tensor, NF4 matrices under QLoRA); they sum to
 * model_stack_weights_total() − model_stack_lora_bytes(). New GArray of double. */
GArray *model_stack_weight_tensor_bytes (const ModelStack *s, const ModelArch *arch);

/* The LoRA/QLoRA combinations modelled: rank >= 1; not with fp8_mixed; QLoRA computes in 16
 * bit (any precision but fp32; with bf16_amp/fp16_amp the non-quantized parameters stay fp32,
 * as PEFT's prepare_model_for_kbit_training casts them); no parameter offload (the base weights would
 * be offloaded: not modelled). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE saying which, as
 * "group [finetune], key 'K': …" naming the other side of a conflict as "[group] key". TRUE
 * for full fine-tuning. */
gboolean model_stack_validate_finetune (const ModelStack *s, GError **error);

/* The framework knobs' combinations that are modelled (models/stack/stack_framework.c), against
 * the data-parallel configuration `par`:
 *   optimizer_impl = cpu_adam   needs [offload] optimizer (DeepSpeed's host-side Adam) and
 *                               optimizer = adamw;
 *   optimizer_in_backward       grad_accum 1 (torchtune recipes raise "Gradient accumulation
 *                               is not supported with optimizer_in_bwd"), one data-parallel
 *                               rank, no optimizer offload, a GPU optimizer that is not paged;
 *   main_grad_fp32              not with ZeRO-2/3 or FSDP sharding of gradients over > 1 rank
 *                               (Megatron's buffer is full-size; its distributed optimizer is
 *                               ZeRO-1).
 * FALSE + G_KEY_FILE_ERROR_INVALID_VALUE "group [training], key 'K': …". */
gboolean model_stack_validate_framework (const ModelStack *s, const ModelParallel *par,
                                         GError **error);

/* Applies the framework knobs that are expressed by another part of the stack:
 * activation_offload (torchtune OffloadActivations, torchtune/training/
 * _activation_offloading.py: every saved activation moved to pinned host memory in the
 * forward, back before its backward, on a side stream) is [offload] activations = cpu
 * (models/memory/offload.h), pinned. Idempotent. */
void model_stack_resolve_framework (ModelStack *s);

/* The tensors the optimizer steps, which the data-parallel wrapper decides
 * (models/plan/plan_state.c plan_optimizer_view). Shape-dependent optimizers see the
 * difference: Adafactor factors only tensors of two or more dimensions (transformers
 * optimization.py Adafactor._get_options: `factored = len(param_shape) >= 2`), and 8-bit
 * Adam gives fp32 states to tensors under 4096 elements (min_8bit_size).
 * - PARAMETERS: each parameter in its own shape (plain PyTorch, DDP, FSDP2's fully_shard,
 *   whose DTensor keeps the parameter's shape; FSDP1 NO_SHARD, whose use_orig_params
 *   views are unflattened);
 * - SHARD_VIEWS: each parameter's shard as a 1-D view of 1/`shards` of it (FSDP1's
 *   FlatParameter under a sharding strategy: torch/distributed/fsdp/_flat_param.py
 *   _use_sharded_views, "the views are kept as flattened");
 * - FLAT_PARTITIONS: one flat fp32 partition per parameter group (DeepSpeed ZeRO:
 *   deepspeed/runtime/zero/stage_1_and_2.py `param_group['params'] =
 *   [self.single_partition_of_fp32_groups[i]]`; stage3.py steps each sub-group's
 *   fp32_partitioned_groups_flat[i] alone). Groups as the HF Trainer makes them
 *   (trainer.py create_optimizer): the weight-decay group, the matrices, and the rest.
 * So Adafactor keeps a full second moment under flat sharding ("under existing PyTorch FSDP's
 * flat-parameter sharding, it is not possible [to factor] without some shape recovery",
 * pytorch/pytorch#109581, A. Gu, 2023-12). */
typedef enum
{
  MODEL_OPTIMIZER_SEES_PARAMETERS,
  MODEL_OPTIMIZER_SEES_SHARD_VIEWS,
  MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS,
} ModelOptimizerSees;

typedef struct
{
  ModelOptimizerSees sees;
  double shards; /* SHARD_VIEWS: pieces a parameter is cut into (FSDP's shard degree), >= 1 */
} ModelOptimizerView;

/* Optimizer-state bytes of the whole model (B; stack_params.c), shapes included:
 * Adafactor's r + c per matrix (n per tensor it sees flattened), 8-bit Adam's fp32 states
 * for tensors (or shard views) under 4096 elements and its absmax; over the trainable
 * tensors. `view` NULL: MODEL_OPTIMIZER_SEES_PARAMETERS. The plan shards the total. */
double model_stack_optimizer_state_total (const ModelStack *s, const ModelArch *arch,
                                          const ModelOptimizerView *view);
/* Elements of the largest tensor the optimizer steps under `view` (NULL: parameters), one
 * copy, before data-parallel sharding; a flat partition: its whole group's (the trainable
 * matrices', or the rest's, whichever is larger); 0 when nothing trains. */
double model_stack_largest_stepped (const ModelStack *s, const ModelArch *arch,
                                    const ModelOptimizerView *view);
/* B of optimizer state of the largest tensor the optimizer steps under `view` (NULL:
 * parameters), before data-parallel sharding (a flat partition: its whole group's); 0
 * when nothing trains. */
double model_stack_largest_tensor_state (const ModelStack *s, const ModelArch *arch,
                                         const ModelOptimizerView *view);

/* Whether framework.main_grad_fp32 takes effect: only with 16-bit parameters (bf16/fp16/
 * fp8 mixed, pure bf16). Under precision fp32 or autocast amp the parameters, and so their
 * gradients, are fp32 already: Megatron's main_grad is then the parameter's own dtype
 * (megatron/core/distributed/distributed_data_parallel.py: grad_dtype = torch.float if
 * accumulate_allreduce_grads_in_fp32 else param.dtype), nothing beside it. */
gboolean model_stack_main_grad_fp32 (const ModelStack *s);

/* Whether the gradients are allocated at time 0 and kept across steps: zero_grad in place
 * (zero_grad_to_none FALSE), or a framework's persistent fp32 gradient buffer
 * (framework.main_grad_fp32: Megatron allocates its grad buffer once when wrapping the
 * model and zeroes it each step, param_and_grad_buffer.py reset()). */
gboolean model_stack_gradients_persistent (const ModelStack *s);

/* Bytes allocated at time 0 and kept all step for `category` (B; stack_params.c):
 * weights (the frozen base under LoRA), lora (the adapter weights), master weights,
 * optimizer state, quantization (fp8 copies + amax histories, QLoRA's NF4 constants),
 * and gradients when model_stack_gradients_persistent(). 0 for the other categories. */
double model_stack_initial_bytes (const ModelStack *s, const ModelArch *arch,
                                  ModelMemCategory category);

/* Temporary bytes the optimizer step allocates on top of the states (B; stack_params.c), by
 * framework.optimizer_impl: foreach AdamW one copy of the second moment (exp_avg_sq_sqrt =
 * _foreach_sqrt(exp_avg_sqs), PyTorch _multi_tensor_adamw), the per-tensor loop one
 * tensor's (the largest), fused 0 (torch _fused_adamw_ / apex FusedAdam update each
 * element in registers: no whole-state temporary), cpu_adam 0 on the GPU (the step runs
 * on the host, models/plan/plan_offload.c); SGD 0 (in-place
 * foreach ops); Adafactor (HF transformers Adafactor.step, one tensor at a time) two fp32
 * tensors of the largest tensor it steps (grad**2 + eps, then the update
 * exp_avg_sq.rsqrt().mul_(grad) or the factored reconstruction; the update and its
 * negation in p_data_fp32.add_(-update)); 8-bit Adam 0 (fused bitsandbytes kernel).
 * Whole-model figures: the plan scales them by the rank's share, `view` (NULL:
 * parameters) says which tensors are stepped one at a time (a flat partition: its whole
 * group). */
double model_stack_optimizer_workspace (const ModelStack *s, const ModelArch *arch,
                                        const ModelOptimizerView *view);

/* Paged optimizer (memory side): with `state_bytes` of optimizer state in unified memory,
 * `other_peak` bytes of everything else at the peak and `capacity` bytes of GPU memory
 * available, the state bytes that do not fit and are paged out to host:
 * clamp(other_peak + state_bytes − capacity, 0, state_bytes). B. */
double model_stack_paged_spill (double state_bytes, double other_peak, double capacity);
gboolean model_stack_optimizer_is_paged (const ModelStack *s);

/* Bytes per activation element (4 for fp32, 2 otherwise) and the tensor-core dtype of
 * GEMMs (fp32, tf32, bf16, fp16 or fp8). */
double model_stack_activation_bytes (const ModelStack *s);
HwDtype model_stack_compute_dtype (const ModelStack *s);

/* HBM bytes moved per parameter by one optimizer step (read weights/master, gradients and
 * states, write them back): fused AdamW (ModelFramework.optimizer_impl fused, cpu_adam's
 * GPU side, DeepSpeed's and Megatron's) reads param, grad, m, v and writes param, m, v
 * (+ the compute copy in mixed precision); PyTorch's foreach and per-tensor AdamW make a
 * pass over memory per operation, 4p + 14s + 2g (2p less with weight_decay 0; + p + copy
 * under a master; stack.c adamw_unfused_bytes); SGD reads param, grad, momentum and writes param,
 * momentum; Adafactor reads param and grad, writes param (its factored state is
 * negligible; flattened under `view`, its whole second moment is read and written: 2 × 4
 * more) and reads grad once more for the row/column means; 8-bit Adam reads and
 * writes its 1-byte states. FLOPs per parameter: AdamW ≈ 12, SGD ≈ 4 (element-wise;
 * Loshchilov & Hutter 2019, Algorithm 2), Adafactor ≈ 14 (grad², two means, rsqrt,
 * update, RMS clip; Shazeer & Stern 2018 Alg. 4), 8-bit Adam ≈ 20 (AdamW + dequantise
 * and requantise both states; estimate). */
double model_stack_optimizer_step_bytes (const ModelStack *s, const ModelOptimizerView *view);
double model_stack_optimizer_step_flops (const ModelStack *s);

/* The optimizer implementation that runs: the framework's optimizer_impl for AdamW and SGD
 * (torch.optim's per-tensor loop, foreach or fused kernels); per_tensor for Adafactor
 * (transformers' Adafactor.step loops over the parameters, with no foreach or fused form)
 * and the 8-bit AdamWs (bitsandbytes Optimizer8bit.step calls update_step, one
 * optimizer_update_8bit_blockwise kernel, per parameter; torchao's AdamW8bit one compiled
 * single-parameter step each); cpu_adam under [offload] optimizer for any of them. */
ModelOptimizerImpl model_stack_optimizer_impl (const ModelStack *s);

/* The PyTorch ops the host issues for one optimizer step over `tensors` parameter tensors,
 * `matrices` of them with two or more dimensions (ModelOp.host_ops; the framework's
 * host_op_time each), under model_stack_optimizer_impl:
 * - AdamW per tensor (torch/optim/adamw.py _single_tensor_adamw: step += 1, the decay mul_
 *   unless weight_decay 0, lerp_, mul_ + addcmul_, sqrt / bias correction + eps,
 *   addcdiv_): 8 (9 with decay) a tensor; foreach (_multi_tensor_adamw): the same 8 (9)
 *   _foreach_ ops once, each launching its kernels from C++;
 * - SGD with momentum (torch/optim/sgd.py _single_tensor_sgd: the decay add unless
 *   weight_decay 0, buf.mul_(momentum).add_(grad), param.add_(buf)): 3 (4) a tensor;
 *   foreach (_multi_tensor_sgd) the same 3 (4) once;
 * - Adafactor (transformers optimization.py Adafactor.step, each parameter: _rms of the
 *   parameter (norm, div), grad**2 + eps, then factored — two dimensions or more — the row
 *   and column means each mean, mul_, add_, _approx_sq_grad's mean, div, rsqrt_, rsqrt
 *   and mul, update.mul_(grad); unfactored mul_, add_, rsqrt, mul_; then the RMS clip
 *   (norm, div, div, clamp_, div_), mul_(lr), neg and add_): 24 a matrix, 16 a vector,
 *   3 more each with 16-bit parameters (grad.float(), p.float(), the copy back);
 * - 8-bit AdamW: 1 kernel a tensor;
 * - fused (_fused_adamw_, _fused_sgd_, apex/TE FusedAdam) and cpu_adam: 1.
 * Under fp16 loss scaling 3 more, once (GradScaler's foreach unscale_ and update), with
 * the per-tensor and foreach loops. tensors >= 1, 0 <= matrices <= tensors (clamped). */
double model_stack_optimizer_host_ops (const ModelStack *s, double tensors, double matrices);
