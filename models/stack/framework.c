/* models/stack/framework.c — framework profiles: names, parsing and the table of defaults per
 * framework (framework.h). Each value cites the framework source file that sets it; the
 * revisions read are microsoft/DeepSpeed 38327e0 (2025-02), pytorch/torchtune bd2a0fc,
 * pytorch/torchtitan b5bcd76, NVIDIA/Megatron-LM d98e8a6, huggingface/nanotron 2411b02,
 * huggingface/transformers (main of 2026: loss/loss_utils.py 0114da07, training_args.py
 * fd798335, integrations/sdpa_attention.py 00c238bd) and huggingface/accelerate 16cb6eb8.
 * torchtune's values are its last release's (v0.6.1, 2025-04: CEWithChunkedOutputLoss);
 * its unreleased main configures LinearCrossEntropyLoss instead (9c06c8bda, 2025-04-30).
 */
#include "config.h"
#include "models/stack/framework.h"
#include "sim/text.h"

#include <math.h>

static const char *const framework_names[] = { "custom",     "hf_trainer", "accelerate_fsdp",
                                               "torchtune",  "torchtitan", "megatron",
                                               "deepspeed",  "nanotron",   NULL };
static const char *const loss_names[] = { "upcast",       "plain",          "chunked", "fused",
                                          "upcast_shift", "vocab_parallel", "sharded",
                                          "te_parallel",  "chunked_head", NULL };
static const char *const optimizer_impl_names[] = { "per_tensor", "foreach", "fused", "cpu_adam",
                                                    NULL };
static const char *const rope_table_names[] = { "none", "max_positions", "seq_len", "per_layer",
                                                NULL };
G_STATIC_ASSERT (G_N_ELEMENTS (framework_names) == MODEL_N_FRAMEWORKS + 1);
G_STATIC_ASSERT (G_N_ELEMENTS (rope_table_names) == MODEL_N_ROPE_TABLES + 1);
G_STATIC_ASSERT (G_N_ELEMENTS (loss_names) == MODEL_N_LOSSES + 1);
G_STATIC_ASSERT (G_N_ELEMENTS (optimizer_impl_names) == MODEL_N_OPTIMIZER_IMPLS + 1);

/* DeepSpeed's ZeRO defaults, in elements (deepspeed/runtime/zero/config.py,
 * DeepSpeedZeroConfig: reduce_bucket_size pp_int(5e8), allgather_bucket_size pp_int(5e8),
 * prefetch_bucket_size pp_int(5e7) alias stage3_prefetch_bucket_size,
 * param_persistence_threshold pp_int(1e5), max_live_parameters pp_int(1e9)). */
#define DS_REDUCE_BUCKET 5e8
#define DS_ALLGATHER_BUCKET 5e8
#define DS_PREFETCH_BUCKET 5e7
#define DS_PERSISTENCE 1e5
#define DS_MAX_LIVE 1e9

/* The host's time per PyTorch op (ModelFramework.host_op_time, host_backward_op_time), the
 * same in every profile: each is Python driving PyTorch eager (Megatron's and nanotron's
 * modules too; their fused kernels are fewer ops, ModelOp.host_ops).
 * Forward (Python): the one published eager/CUDA-graph pair found, Llama-3.2-1B bf16 with
 * SDPA at batch 1 × 512 on one B200 (ml-engineering training/performance/README.md,
 * torch.compile table; kernels.md §5): eager forward 8.1 ms, the same forward under CUDA
 * graphs ("reduce-overhead": no per-op host work) 1.9 ms, so the eager forward is
 * host-bound; stepsim's op graph issues 631 PyTorch ops for that forward
 * (tests/unit/models/test_host_time.c counts them), 8.1 ms / 631 = 12.8 us an op. It
 * holds the nn.Module calls and the views between the ops too, and is of the order of
 * the op-level figures (pytorch/pytorch#41383: 7 us for a scalar op recording autograd,
 * 2020; #82793: 4 us an op, PyTorch 1.12, A100).
 * Backward (the autograd engine in C++, no Python): 4 us an op (pytorch/pytorch#82793,
 * "4 us per op on CUDA"; #41383: about 1 us of the dispatcher from C++, the rest the
 * launch). The same table's eager backward (40.7 ms) is ~10x what stepsim gives for that
 * model (3.98 ms, GPU-bound at these figures): not understood, not fitted. */
#define HOST_PYTHON_OP (8.1e-3 / 631.0)
#define HOST_AUTOGRAD_OP (4.0e-6)
#define SRC_HOST_PYTHON "M: Llama-3.2-1B eager forward 8.1 ms on B200 (ml-engineering torch.compile " \
  "table, kernels.md §5) over the 631 PyTorch ops stepsim's op graph issues for it"
#define SRC_HOST_AUTOGRAD "M: 4 us an op, dispatch-bound eager model (pytorch/pytorch#82793, " \
  "kernels.md §5); the autograd engine runs in C++"

void
model_framework_describe_host_factors (GString *out)
{
  g_return_if_fail (out != NULL);
  g_string_append_printf (out, "host_op_time\t%.2f us\t%s\n", HOST_PYTHON_OP * 1e6,
                          SRC_HOST_PYTHON);
  g_string_append_printf (out, "host_backward_op_time\t%.2f us\t%s\n", HOST_AUTOGRAD_OP * 1e6,
                          SRC_HOST_AUTOGRAD);
}

/* The profiles, in ModelFrameworkKind order. Fields not given are 0 / FALSE. */
static const ModelFramework profiles[MODEL_N_FRAMEWORKS] = {
  [MODEL_FRAMEWORK_CUSTOM] = {
    /* plain PyTorch eager with the HF model code: stepsim's behaviour before profiles (the
     * loss as transformers >= 4.49 computes it: no shifted copy) */
    .kind = MODEL_FRAMEWORK_CUSTOM,
    .loss = MODEL_LOSS_UPCAST, .loss_chunks = 1, .norm_fp32 = TRUE,
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH,
    /* the HF model code's eager attention (as hf_trainer below) */
    .softmax_fp32 = TRUE,
  },
  [MODEL_FRAMEWORK_HF_TRAINER] = {
    .kind = MODEL_FRAMEWORK_HF_TRAINER,
    /* transformers loss/loss_utils.py ForCausalLMLoss since v4.49.0 (PR #35646, merged
     * 2025-01; unchanged in the main read, 0114da07, 2026): `logits = logits.float()`,
     * then `labels = nn.functional.pad(labels, (0, 1), value=ignore_index)`, `shift_labels
     * = labels[..., 1:].contiguous()` and `logits.view(-1, vocab_size)` into
     * fixed_cross_entropy: the labels are shifted, no logits copied, so the loss is the
     * upcast one (10 B a bf16 logit at the forward's peak). v4.46.0–v4.48.x sliced and
     * copied the fp32 logits (`logits[..., :-1, :].contiguous()`, 14 B a logit; cost_ends.c
     * hf_shift_loss_memory): set loss = upcast_shift for those. */
    .loss = MODEL_LOSS_UPCAST, .loss_chunks = 1,
    /* models/llama/modeling_llama.py LlamaRMSNorm.forward:
     * hidden_states.to(torch.float32) before the variance */
    .norm_fp32 = TRUE,
    /* training_args.py: torch_compile = False */
    .compile = FALSE,
    /* trainer.py: gradients are the parameters' .grad in the parameter dtype */
    .main_grad_fp32 = FALSE,
    /* training_args.py (transformers main read, fd798335): `default_optim = "adamw_torch"`,
     * then `if is_torch_greater_or_equal_than_2_8: default_optim = "adamw_torch_fused"`
     * (PR #37358, merged 2025-07): torch.optim.AdamW(fused=True), one _fused_adamw_ kernel,
     * no whole-state temporaries. With torch < 2.8 (or a transformers before that PR) the
     * default is "adamw_torch", foreach on CUDA: set optimizer_impl = foreach for those */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
    /* training_args.py: weight_decay = 0.0 (trainer.py passes it to AdamW) */
    .weight_decay_zero = TRUE,
    /* transformers integrations/sdpa_attention.py sdpa_attention_forward (main read,
     * 00c238bd; PR #39412, merged 2025-07): `if not use_gqa_in_sdpa(attention_mask, key)`
     * repeat_kv, else `sdpa_kwargs = {"enable_gqa": True}`, and use_gqa_in_sdpa is true on
     * CUDA with torch >= 2.5 and `attention_mask is None`; the mask is None for a causal
     * batch without padding (masking_utils.py _ignore_causal_mask_sdpa: `padding_mask is
     * None or padding_mask.all()`, kv_length == query_length), the full-length sequences
     * stepsim runs. So SDPA gets the key/value heads as they are, nothing expanded is saved.
     * Before that PR (4.46 LlamaSdpaAttention.forward, 4.48 sdpa_attention_forward)
     * transformers called repeat_kv before every SDPA call, which saved the expanded
     * copies: set kv_repeat_sdpa = true for those, and for padded batches (a mask) or
     * torch < 2.5. The eager path (eager_attention_forward) repeats them in any version;
     * flash_attention_2 passes GQA to flash-attn. */
    .kv_repeat_sdpa = FALSE,
    /* transformers models/llama/modeling_llama.py eager_attention_forward (4.48; the
     * LlamaAttention of 4.46 the same): `attn_weights = nn.functional.softmax(attn_weights,
     * dim=-1, dtype=torch.float32).to(query.dtype)` (model_arch_softmax_fp32's families) */
    .softmax_fp32 = TRUE,
    /* trainer.py _inner_training_loop, after each training_step: `if
     * args.logging_nan_inf_filter and (torch.isnan(tr_loss_step) or
     * torch.isinf(tr_loss_step))` (logging_nan_inf_filter = True, training_args.py): a
     * Python `if` on a GPU tensor copies it to the host, which waits for the
     * micro-batch's kernels */
    .host_sync_micro_batch = TRUE,
  },
  [MODEL_FRAMEWORK_ACCELERATE_FSDP] = {
    .kind = MODEL_FRAMEWORK_ACCELERATE_FSDP,
    /* the loss is the model's (transformers loss_utils.py ForCausalLMLoss, as above: upcast
     * since v4.49), and its attention: SDPA with enable_gqa, no repeat_kv (kv_repeat_sdpa,
     * as hf_trainer) */
    .loss = MODEL_LOSS_UPCAST, .loss_chunks = 1, .norm_fp32 = TRUE,
    .kv_repeat_sdpa = FALSE, .softmax_fp32 = TRUE,
    /* accelerate/utils/dataclasses.py FullyShardedDataParallelPlugin: no compile, gradients
     * in the FSDP mixed-precision param dtype (no extra main_grad) */
    .compile = FALSE, .main_grad_fp32 = FALSE,
    /* the user's torch.optim.AdamW: foreach by default on CUDA (torch/optim/optimizer.py
     * _default_to_fused_or_foreach) */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH,
  },
  [MODEL_FRAMEWORK_TORCHTUNE] = {
    .kind = MODEL_FRAMEWORK_TORCHTUNE,
    /* torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss:
     * num_output_chunks = 8, each chunk upcast on its own */
    .loss = MODEL_LOSS_CHUNKED, .loss_chunks = 8,
    /* torchtune/modules/rms_norm.py RMSNorm.forward: x_fp32 = x.float() */
    .norm_fp32 = TRUE,
    /* recipes/configs/ (every yaml): compile: False */
    .compile = FALSE,
    /* torchtune/modules/attention.py MultiHeadAttention.forward: with GQA, k and v are
     * expanded to the query heads (unsqueeze(2).expand(...).flatten(1, 2)) before SDPA,
     * which saves the expanded copies */
    .kv_repeat = TRUE,
    /* recipes/lora_finetune_single_device.py (and the other recipes) train(): `del logits` before loss.backward() ("free logits otherwise it
     * peaks backward memory", pytorch/torchtune#1235, from v0.3.0); set logits_kept for
     * the recipes of v0.1–v0.2, which keep them bound through the backward */
    .logits_kept = FALSE,
    .main_grad_fp32 = FALSE,
    /* recipes/configs/llama3_2/3B_full.yaml: torch.optim.AdamW with fused: True */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
    /* recipes/full_finetune_single_device.py: optimizer_in_bwd from the config (off unless
     * set; it refuses gradient_accumulation_steps > 1), enable_activation_offloading =
     * cfg.get("enable_activation_offloading", False) */
    .optimizer_in_backward = FALSE, .activation_offload = FALSE,
    /* torchtune/models/llama3_1/_position_embeddings.py Llama3ScaledRoPE (and
     * modules/position_embeddings.py RotaryPositionalEmbeddings): rope_init builds
     * `cache` = stack([cos, sin]) of an fp32 einsum over max_seq_len positions × dim/2,
     * a non-persistent buffer on the model's device, one module shared by every layer;
     * the builders' max_seq_len is the HF max_position_embeddings (llama3_2 131072,
     * llama2 4096, qwen2 32768) */
    .rope_table = MODEL_ROPE_TABLE_MAX_POSITIONS,
    /* torchtune/training/_distributed.py shard_model: torch.distributed._composable.fsdp
     * fully_shard on each layer and the root */
    .fsdp2 = TRUE,
  },
  [MODEL_FRAMEWORK_TORCHTITAN] = {
    .kind = MODEL_FRAMEWORK_TORCHTITAN,
    /* torchtitan/components/loss.py ChunkedLossWrapper (Config.num_chunks = 8) around
     * CrossEntropyLoss (cross_entropy_loss: pred.float() then F.cross_entropy): every
     * decoder's trainer config (models/<name>/config_registry.py: llama3_8b, _70b, _405b,
     * qwen3, deepseek_v3, gpt_oss, ...) builds `loss=ChunkedLossWrapper.Config(loss_fn=
     * CrossEntropyLoss.Config(...))` since 786e26f8e (2026-04-27, "ChunkedCELoss (#2937)";
     * renamed in 9530a874d, 2026-06-26): the lm_head and the loss on 8 slices of tokens, each
     * slice's backward at once (models/ops/cost_ends.c chunked_head). Before it the configs
     * left the loss to cross_entropy_loss on the whole logits: loss = upcast. */
    .loss = MODEL_LOSS_CHUNKED_HEAD, .loss_chunks = 8,
    /* torchtitan/models/common/nn_modules.py RMSNorm(nn.RMSNorm): torch's rms_norm keeps
     * its input in the compute dtype */
    .norm_fp32 = FALSE,
    /* torchtitan/config/configs.py CompileConfig.enable = False */
    .compile = FALSE,
    /* FSDP2 reduce_dtype float32 is the reduction's dtype, not a kept buffer
     * (torchtitan/config/configs.py mixed_precision_reduce) */
    .main_grad_fp32 = FALSE,
    /* torchtitan/components/optimizer/optimizer.py: implementation = "fused" */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
    /* torchtitan 02d24f017 (2026-06-05, "[RoPE] Move centralized freqs_cis to each
     * transform layer"): models/common/attention.py builds `self.rope = config.rope.build()`
     * in every attention module, and common/rope.py RoPE.__init__ registers its own
     * `cache` buffer over max_context_length, which common/decoder.py update_from_config
     * sets to training.max_context_length; ComplexRoPE's cache is complex64 (8 B a rotary
     * pair), CosSinRoPE's cat([cos, sin]) of cat([freqs, freqs]) fp32 (16 B a pair:
     * qwen3 and gpt_oss in models/<name>/__init__.py). "For PP: every stage owns the RoPE
     * modules for its local layers." Before it (ba24697, 2024-12, models/llama/model.py):
     * one complex64 freqs_cis over seq_len per model, kept whole by every stage's deep copy
     * (rope_table = seq_len). */
    .rope_table = MODEL_ROPE_TABLE_PER_LAYER,
    /* torchtitan/distributed/fsdp.py apply_fsdp_to_decoder: fully_shard(model.tok_embeddings)
     * and fully_shard([model.norm, model.lm_head], reshard_after_forward = policy
     * "always"), then the layers and the root; a tied model's (tok_embeddings, norm,
     * lm_head) one unit */
    .fsdp_end_units = TRUE,
    /* torchtitan/distributed/fsdp.py apply_fsdp: torch.distributed.fsdp.fully_shard */
    .fsdp2 = TRUE,
  },
  [MODEL_FRAMEWORK_MEGATRON] = {
    .kind = MODEL_FRAMEWORK_MEGATRON,
    /* megatron/core/tensor_parallel/cross_entropy.py vocab_parallel_cross_entropy: the
     * logits upcast once (calculate_logits_max: .float()), softmax computed in place
     * (torch.exp(..., out=exp_logits), exp_logits.div_) and that one fp32 buffer saved and
     * reused as the gradient: "vocab_parallel" (models/ops/cost_ends.c).
     * (--cross-entropy-loss-fusion, off by default in transformer_config.py, runs the same
     * ops compiled: megatron/core/fusions/fused_cross_entropy.py, the same buffers.) */
    .loss = MODEL_LOSS_VOCAB_PARALLEL, .loss_chunks = 1,
    /* Transformer Engine / Apex fused RMSNorm: saves the 16-bit input and fp32 rstd */
    .norm_fp32 = FALSE,
    .compile = FALSE,
    /* megatron/training/arguments.py validate_args: bf16 sets
     * accumulate_allreduce_grads_in_fp32 = True; megatron/core/distributed/
     * param_and_grad_buffer.py keeps param.main_grad views of one fp32 grad buffer */
    .main_grad_fp32 = TRUE,
    /* megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBuffer.__init__:
     * one contiguous grad_data per dtype, each _ParamAndGradBucket's grad_data a view into
     * it, so the DDP all-reduce needs no bucket copies (unlike torch DDP's default
     * gradient_as_bucket_view=False) */
    .grad_buffer_buckets = TRUE,
    /* megatron/training/arguments.py: gradient_accumulation_fusion on unless
     * --no-gradient-accumulation-fusion; each linear's backward then accumulates its weight
     * gradient into main_grad and returns, for the DDP hook's sake (param.grad must not be
     * None), Transformer Engine's get_dummy_wgrad(main_grad.shape, dtype): a torch.empty
     * cached per (shape, dtype) in a module-level dict and never freed (TE
     * pytorch/module/base.py; TE linear.py, layernorm_linear.py, grouped_linear.py;
     * Megatron's own ColumnParallelLinear when TE is installed, megatron/core/
     * tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication) */
    .wgrad_dummy = TRUE,
    /* megatron/core/optimizer/__init__.py: TE or Apex FusedAdam */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
    /* megatron/core/transformer/moe/experts.py TEGroupedMLP with
     * moe_apply_probs_on_input False: the probabilities enter the activation
     * (fused_bias_swiglu.py weighted_bias_swiglu_impl) */
    .moe_grouped_mlp = TRUE,
  },
  [MODEL_FRAMEWORK_DEEPSPEED] = {
    .kind = MODEL_FRAMEWORK_DEEPSPEED,
    /* DeepSpeed wraps the user's model: the loss, norms and attention are the model's (HF
     * code, the transformers of hf_trainer above: the upcast loss since v4.49, SDPA with
     * enable_gqa) */
    .loss = MODEL_LOSS_UPCAST, .loss_chunks = 1, .norm_fp32 = TRUE, .compile = FALSE,
    .kv_repeat_sdpa = FALSE, .softmax_fp32 = TRUE,
    .main_grad_fp32 = FALSE,
    /* deepspeed/runtime/engine.py _configure_basic_optimizer: FusedAdam for "Adam"/"AdamW"
     * on the GPU, DeepSpeedCPUAdam under ZeRO-Offload (the scenario switches to cpu_adam
     * when [offload] optimizer is set) */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
    .allgather_bucket_elements = DS_ALLGATHER_BUCKET,
    .reduce_bucket_elements = DS_REDUCE_BUCKET,
    .stage3_prefetch_bucket_elements = DS_PREFETCH_BUCKET,
    .stage3_param_persistence_threshold = DS_PERSISTENCE,
    .stage3_max_live_parameters = DS_MAX_LIVE,
    /* zero/config.py overlap_comm_valid: None → stage == 3, so off for stages 1–2, the only
     * ones where it adds a second reduce buffer */
    .ds_overlap_comm = FALSE,
  },
  [MODEL_FRAMEWORK_NANOTRON] = {
    .kind = MODEL_FRAMEWORK_NANOTRON,
    /* src/nanotron/models/llama.py: the model returns cast_to_fp32(logits) and Loss calls
     * sharded_cross_entropy(..., dtype=torch.float); parallel/tensor_parallel/functional.py
     * _ShardedCrossEntropy subtracts the max out of place (a second fp32 buffer), then
     * exponentiates and divides it in place and saves it: "sharded" (cost_ends.c) */
    .loss = MODEL_LOSS_SHARDED, .loss_chunks = 1,
    /* src/nanotron/nn/layer_norm.py TritonRMSNorm: fused kernel, 16-bit input saved */
    .norm_fp32 = FALSE,
    .compile = FALSE,
    /* src/nanotron/optim/gradient_accumulator.py FP32GradientAccumulator
     * (examples/config_tiny_llama.yaml accumulate_grad_in_fp32: true) */
    .main_grad_fp32 = TRUE,
    /* examples/config_tiny_llama.yaml torch_adam_is_fused: true */
    .optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED,
  },
};

const char *
model_framework_name (ModelFrameworkKind k)
{
  g_return_val_if_fail (k < MODEL_N_FRAMEWORKS, NULL);
  return framework_names[k];
}

const char *
model_framework_loss_name (ModelLossImpl l)
{
  g_return_val_if_fail (l < MODEL_N_LOSSES, NULL);
  return loss_names[l];
}

const char *
model_framework_optimizer_impl_name (ModelOptimizerImpl i)
{
  g_return_val_if_fail (i < MODEL_N_OPTIMIZER_IMPLS, NULL);
  return optimizer_impl_names[i];
}

const char *
model_framework_rope_table_name (ModelRopeTable t)
{
  g_return_val_if_fail (t < MODEL_N_ROPE_TABLES, NULL);
  return rope_table_names[t];
}

gboolean
model_framework_rope_table_from_string (const char *s, ModelRopeTable *out, GError **error)
{
  int v;
  if (!sim_text_lookup (rope_table_names, "rope_table", s, &v, error))
    return FALSE;
  *out = (ModelRopeTable) v;
  return TRUE;
}

gboolean
model_framework_from_string (const char *s, ModelFrameworkKind *out, GError **error)
{
  int v;
  if (!sim_text_lookup (framework_names, "framework", s, &v, error))
    return FALSE;
  *out = (ModelFrameworkKind) v;
  return TRUE;
}

gboolean
model_framework_loss_from_string (const char *s, ModelLossImpl *out, GError **error)
{
  int v;
  if (!sim_text_lookup (loss_names, "loss", s, &v, error))
    return FALSE;
  *out = (ModelLossImpl) v;
  return TRUE;
}

gboolean
model_framework_optimizer_impl_from_string (const char *s, ModelOptimizerImpl *out,
                                            GError **error)
{
  int v;
  if (!sim_text_lookup (optimizer_impl_names, "optimizer_impl", s, &v, error))
    return FALSE;
  *out = (ModelOptimizerImpl) v;
  return TRUE;
}

void
model_framework_apply_profile (ModelFramework *fw, ModelFrameworkKind kind)
{
  g_return_if_fail (fw != NULL && kind < MODEL_N_FRAMEWORKS);
  *fw = profiles[kind];
  fw->host_op_time = HOST_PYTHON_OP;
  fw->host_backward_op_time = HOST_AUTOGRAD_OP;
  fw->deepspeed_engine = kind == MODEL_FRAMEWORK_DEEPSPEED;
  /* No stage-3 element budgets outside DeepSpeed: NAN, so that a 0 given by a key or a
   * ds_config keeps DeepSpeed's meaning (no prefetch; model_framework_ds_prefetch_layers) */
  if (kind != MODEL_FRAMEWORK_DEEPSPEED)
    fw->stage3_prefetch_bucket_elements = fw->stage3_max_live_parameters = NAN;
}

double
model_framework_ds_reduce_buffer_bytes (const ModelFramework *fw, guint stage, double grad_bytes)
{
  g_return_val_if_fail (fw != NULL, 0);
  if (stage < 1 || stage > 3 || !(fw->reduce_bucket_elements > 0))
    return 0;
  /* stage 1–2: buf_0, and buf_1 with overlap_comm (its default is off below stage 3);
   * stage 3: one flat bucket whatever overlap_comm says */
  guint buffers = stage <= 2 && fw->ds_overlap_comm ? 2 : 1;
  return buffers * fw->reduce_bucket_elements * grad_bytes;
}

/* numel of a base weight-dtype tensor of at most *threshold elements, else 0 */
static double
persistent_numel (const ModelTensor *t, gpointer data)
{
  double threshold = *(const double *) data, n = (double) model_tensor_numel (t);
  gboolean base = t->role != MODEL_TENSOR_LORA_A && t->role != MODEL_TENSOR_LORA_B
                  && t->role != MODEL_TENSOR_DORA_MAGNITUDE;
  return base && t->storage == MODEL_TENSOR_STORAGE_WEIGHT && n <= threshold ? n : 0;
}

double
model_framework_ds_persistent_elements (const ModelFramework *fw, const ModelInventory *inv)
{
  g_return_val_if_fail (fw != NULL && inv != NULL, 0);
  double threshold = fw->stage3_param_persistence_threshold;
  if (!(threshold > 0))
    return 0;
  return model_inventory_fold (inv, MODEL_INVENTORY_ALL, persistent_numel, &threshold);
}

guint
model_framework_ds_prefetch_layers (const ModelFramework *fw, double layer_params, guint n_layers)
{
  g_return_val_if_fail (fw != NULL, G_MAXUINT);
  double bucket = fw->stage3_prefetch_bucket_elements, live = fw->stage3_max_live_parameters;
  if (isnan (bucket) || !(layer_params > 0) || n_layers == 0)
    return G_MAXUINT;
  /* partitioned_param_coordinator.py fetch_sub_module: "if self.__prefetch_bucket_sz > 0"
   * guards the prefetch, and max_params_to_prefetch = min(max_live − available, bucket) is
   * <= 0 once max_live is 0: each module's parameters are then gathered on demand */
  if (bucket == 0 || live == 0)
    return 0;
  double ahead = ceil (bucket / layer_params);
  if (live > 0)
    ahead = MIN (ahead, floor (live / layer_params) - 1);
  return (guint) CLAMP (ahead, 1, (double) n_layers);
}
