/* cli/scenario/scenario_warnings.c — keys a scenario sets that have no effect under the stack it
 * chose: accepted (a sweep may keep them in [set] across values where they matter), but
 * said once, naming the file, group and key and why (scenario.h,
 * cli_scenario_print_warnings). Each rule mirrors where the plan reads the key:
 *   [parallel] bucket_size    stages 0–1 on > 1 GPU only (models/plan/plan_step.c bucket_reduce)
 *   [parallel] prefetch       stage 3 gathers only (> 1 GPU or parameter offload)
 *   [parallel] reduce_dtype, algorithm   collectives only (> 1 GPU)
 *   [parallel] data_parallel  a sharded mode on one GPU without offload is the 1-GPU plan
 *              (zero1-3: "shards nothing", their optimizer states made at the load)
 *   [parallel] pipeline_schedule   pp > 1 only
 *   [training] host_sync_micro_batch   (set true) grad_accum > 1 at pp = 1 only
 *              (models/plan/plan.c mark_host_syncs: each micro-batch after the first)
 *   [training] grad_accum     (not "no effect": "bubble-bound") fewer micro-batches than
 *              pipeline stages under 1f1b or zb-h1 (models/parallel/pipeline_schedule.h)
 *   [training] checkpoint_every   checkpointing = every_k only (plan_ckpt.c)
 *   [training] checkpointing = selective under a fused attention kernel (flash, sdpa,
 *              triton, flash1): recomputes the attention core, whose saved tensors the
 *              kernel already keeps small (its logsumexp); the note names the kernel
 *   [training] attention = triton | flash1: the model's sliding window is not applied (the
 *              kernels have none); triton on a Volta GPU is untested
 *   [training] kv_repeat, kv_repeat_sdpa   GQA models only (n_kv_heads < n_heads); not
 *              under attention = eager (its core expands the heads in every framework);
 *              kv_repeat_sdpa not beside kv_repeat = true, nor under attention = flash,
 *              triton, flash1 (the flash-attn package takes grouped heads)
 *   [training] softmax_fp32   under attention = eager only, for a family whose HF code upcasts
 *              (model_arch_softmax_fp32), in a 16-bit dtype without autocast (which
 *              computes softmax in fp32 anyway; models/ops/cost.c Dims.sm_fp32)
 *   [training] logits_kept    not with loss = fused (no whole logits; models/ops/cost_ends.c)
 *   [training] deepspeed_config   under framework = custom or megatron: applied, but those
 *              profiles' loss/norm/optimizer defaults are not DeepSpeed's; a stage >= 1 on
 *              one GPU without offload shards nothing, as [parallel] data_parallel
 *   [training] tf32           fp32 GEMMs only (precision = fp32; models/stack/stack.c)
 *   [training] optimizer_foreach   the GPU AdamW step only (models/stack/stack.c workspace)
 *   [training] optimizer_impl      AdamW only; reduce/allgather_bucket_size: ZeRO modes only
 *              (allgather: no memory effect); stage3_*: zero3 only; deepspeed_config: each
 *              of its keys not modelled (models/stack/ds_config.h)
 *   [offload]  pin_memory     host copies only (something offloaded)
 *   [run]      seed           kernel jitter only (kernel_jitter > 0)
 *   [finetune] double_quant   qlora only; rank, targets: lora or qlora only; dequantize:
 *              MXFP4 checkpoints (gpt_oss) under lora or qlora only
 *   [training] attention = sdpa for a model with attention sinks (gpt_oss): transformers
 *              falls back to eager (not "no effect": timed as asked)
 *   [training] optimizer = sgd_momentum | adafactor with [offload] optimizer (not "no
 *              effect": timed as DeepSpeed's CPU-Adam, which DeepSpeed's engine requires)
 *   [training] fsdp_end_units  fsdp_full_shard and fsdp_hybrid_shard of an untied model only
 *   [training] fsdp_version    the fsdp_* data-parallel modes only; 1 under torchtune or
 *              torchtitan (not "no effect": simulated as asked, not as the framework runs)
 *   [training] optimizer adafactor or an 8-bit one under framework = megatron (not "no
 *              effect": Megatron-LM has none of them; simulated as given)
 *   [training] optimizer other than adamw under DeepSpeed's ZeRO without the ds_config's
 *              zero_allow_untested_optimizer = true (not "no effect": the engine stops)
 *   [parallel] tp_comm_overlap  tp > 1 only; bulk or pipelined with tp across nodes (not
 *              "no effect": TE's userbuffers are built for one NVLink domain)
 *   [node.NAME] a group [cluster] does not use (its node is another, or a GPU)
 *   [gpu.NAME]  a group neither [cluster] gpu nor any [node.NAME] gpu names
 *   [cluster], [node.NAME] host_memory: offloading or a paged optimizer only
 *   [cluster]  cpu_cores, cpu_adam_rate: optimizer offload only; nvme_*: NVMe offload only;
 *              nics_per_node, nic_bandwidth, rail_optimized, inter_latency,
 *              spine_oversubscription, nodes_per_pod: more than one node only;
 *              pod_oversubscription: more than one pod only
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

#include <stdarg.h>
#include <stdio.h>
#include "models/ops/cost.h"
#include "models/plan/plan.h"
#include "cli/scenario/sweep.h"
#include "sim/text.h"

static gboolean
has (GKeyFile *kf, const char *group, const char *key)
{
  return cli_scenario_has_key (kf, group, key);
}

/* Adds "SOURCE: MSG" to sc->warnings, SOURCE naming the file and the overrides MSG is about. */
static void
add_warning (CliScenario *sc, const char *const *sets, const char *const *origins,
             const char *msg)
{
  g_autofree char *source = cli_scenario_error_source (sc->path, sets, origins, msg);
  g_autofree char *full = g_strdup_printf ("%s: %s", source, msg);
  g_ptr_array_add (sc->warnings, sim_text_printable (full, CLI_SCENARIO_MESSAGE_MAX));
}

/* Adds "SOURCE: group [G], key 'K': EFFECT: WHY" to sc->warnings. */
G_GNUC_PRINTF (7, 8)
static void
note (CliScenario *sc, const char *const *sets, const char *const *origins, const char *group,
      const char *key, const char *effect, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *msg = g_strdup_printf ("group [%s], key '%s': %s: %s", group, key, effect,
                                          what);
  add_warning (sc, sets, origins, msg);
}

#define NOTE(group, key, ...) note (sc, sets, origins, group, key, "has no effect", __VA_ARGS__)

static void
parallel_keys (GKeyFile *kf, CliScenario *sc, const char *const *sets,
               const char *const *origins)
{
  const ModelParallel *par = &sc->par;
  const ModelOffload *o = &sc->stack.offload;
  guint stage = model_parallel_stage (par);
  const char *mode = model_parallel_mode_name (par->mode);
  gboolean one = par->degree <= 1;
  if (has (kf, "parallel", "bucket_size"))
    {
      if (one)
        NOTE ("parallel", "bucket_size", "one GPU reduces no gradients");
      else if (stage >= 2)
        NOTE ("parallel", "bucket_size",
              "data_parallel = %s reduce-scatters each block's gradients as its backward "
              "ends, without DDP/ZeRO-1 buckets", mode);
    }
  if (has (kf, "parallel", "prefetch")
      && (stage < 3 || (one && o->parameters == MODEL_OFFLOAD_NONE)))
    NOTE ("parallel", "prefetch", "only stage-3 modes (zero3, fsdp_full_shard, "
          "fsdp_hybrid_shard) on more than one GPU, or with parameter offload, gather layers "
          "ahead; here data_parallel = %s on %u GPU%s", mode, par->degree, one ? "" : "s");
  /* models/plan/plan.c mark_host_syncs: the Trainer's wait after each micro-batch is a
   * property of its one-micro-batch-at-a-time loop; a pipeline schedule interleaves them */
  if (par->pp > 1 && sc->stack.framework.host_sync_micro_batch)
    {
      gboolean own = has (kf, "training", "host_sync_micro_batch");
      note (sc, sets, origins, "training", own ? "host_sync_micro_batch" : "framework",
            own ? "has no effect" : "its host_sync_micro_batch is not applied",
            "pp = %u: a pipeline schedule interleaves the micro-batches, so the host waits "
            "for each one only in a loop that runs them one at a time; it waits before the "
            "optimizer step alone", par->pp);
    }
  else if (sc->stack.grad_accum <= 1 && has (kf, "training", "host_sync_micro_batch")
           && sc->stack.framework.host_sync_micro_batch)
    NOTE ("training", "host_sync_micro_batch", "grad_accum = 1: the host waits for each "
          "micro-batch after the first, and one micro-batch has none; it waits before the "
          "optimizer step alone");
  if (par->pp <= 1 && has (kf, "parallel", "pipeline_schedule"))
    NOTE ("parallel", "pipeline_schedule", "pp = 1: there are no pipeline stages to schedule");
  /* pipeline_schedule.h: m < p micro-batches leave each rank idle (p − 1) of (m + p − 1)
   * slots with equal stages; Megatron allows it (GPipe's order is the same then). */
  if (par->pp > 1 && par->pp_schedule != MODEL_PP_GPIPE && sc->stack.grad_accum < par->pp)
    note (sc, sets, origins, "training", "grad_accum", "allowed, but bubble-bound",
          "%" G_GUINT64_FORMAT " micro-batch%s for pp = %u stages under pipeline_schedule = "
          "%s: with equal stages each rank idles %u of %" G_GUINT64_FORMAT " micro-batch "
          "slots", sc->stack.grad_accum, sc->stack.grad_accum == 1 ? "" : "es", par->pp,
          model_pp_schedule_name (par->pp_schedule), par->pp - 1,
          sc->stack.grad_accum + par->pp - 1);
  if (par->tp <= 1 && par->sequence_parallel)
    NOTE ("parallel", "sequence_parallel", "sequence parallelism splits the tensor-parallel "
          "regions' sequence over tp ranks, and here tp = 1");
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  if (par->tp > 1 && !model_mesh_intra_node (&mesh, MODEL_MESH_TP))
    note (sc, sets, origins, "parallel", "tp", "spans nodes",
          par->tp > par->gpus_per_node
              ? "tp = %u is more than the %u GPUs of a node: every layer's tensor-parallel "
                "collectives cross the inter-node network (Megatron keeps tp inside a node)"
              : "tp = %u does not divide the %u GPUs of a node, so some tp groups straddle "
                "two nodes and their tensor-parallel collectives cross the inter-node network "
                "(Megatron keeps tp inside a node)",
          par->tp, par->gpus_per_node);
  if (par->tp > 1 && !model_mesh_intra_node (&mesh, MODEL_MESH_TP)
      && par->tp_comm_overlap != MODEL_TP_OVERLAP_NONE)
    note (sc, sets, origins, "parallel", "tp_comm_overlap", "crosses nodes",
          "Transformer Engine's userbuffers overlap is built for a tp group inside one "
          "NVLink domain (transformer_engine/pytorch/module/base.py initialize_ub); here each "
          "chunk of a split collective crosses the network and pays its latency, so the "
          "overlap may cost more than it hides");
  if (par->tp <= 1 && has (kf, "parallel", "tp_comm_overlap"))
    NOTE ("parallel", "tp_comm_overlap", "tp = 1 runs no tensor-parallel collectives");
  if (par->cp <= 1 && has (kf, "parallel", "cp_variant"))
    NOTE ("parallel", "cp_variant", "cp = 1 splits no sequence");
  /* mesh.h: with one stage both orders lay the ranks out alike */
  if (par->pp <= 1 && par->order != MODEL_MESH_ORDER_TP_CP_EP_DP_PP)
    NOTE ("parallel", "order", "pp = 1: %s lays the ranks out as the default order",
          model_mesh_order_name (par->order));
  /* plan_ep.c: at ep 1 every rank holds every expert and runs all the routed rows, so a
   * hot expert makes no rank slower (the leaf's slowdown is 1); capacity still clips it */
  if (par->ep <= 1 && !par->moe_drop && sc->arch->n_experts > 0
      && has (kf, "moe", "load_imbalance"))
    NOTE ("moe", "load_imbalance", "ep = 1 without a capacity_factor: every GPU holds every "
          "expert, so a hot expert slows no GPU more than another");
  if (par->ep <= 1 && !par->moe_drop && sc->arch->n_experts > 0
      && has (kf, "moe", "expert_load"))
    NOTE ("moe", "expert_load", "ep = 1 without a capacity_factor: every GPU holds every "
          "expert, so how the tokens spread over them slows no GPU more than another");
  /* plan_step.c: the combined 1F1B pairs micro-batch i's forward with i − 1's backward */
  if (par->moe_a2a_overlap && par->pp <= 1 && sc->stack.grad_accum <= 1
      && has (kf, "moe", "a2a_overlap"))
    NOTE ("moe", "a2a_overlap", "grad_accum = 1 at pp = 1: a single micro-batch has no other "
          "micro-batch's backward to overlap its all-to-alls with");
  /* token_dispatcher.py: both dispatchers communicate only "if self.tp_size > 1 or
   * self.ep_size > 1" (the expert degrees) */
  if (par->ep <= 1 && par->etp <= 1 && sc->arch->n_experts > 0
      && par->moe_dispatcher != MODEL_EP_DISPATCHER_ALLTOALL && has (kf, "moe", "dispatcher"))
    NOTE ("moe", "dispatcher", "ep = etp = 1: %s gathers nothing (every GPU routes its own "
          "tokens to its own experts)", model_ep_dispatcher_name (par->moe_dispatcher));
  if (one && has (kf, "parallel", "reduce_dtype"))
    NOTE ("parallel", "reduce_dtype", "one GPU reduces no gradients");
  if (one && has (kf, "parallel", "algorithm"))
    NOTE ("parallel", "algorithm", "one GPU runs no collectives");
  gboolean sharded_one = one && par->mode != MODEL_DP_DDP
                        && par->mode != MODEL_DP_FSDP_NO_SHARD && !model_offload_any (o);
  /* DeepSpeed's ZeRO optimizer makes its fp32 states in its constructor (deepspeed.initialize,
   * stage_1_and_2.py / stage3.py), one GPU or many: part of the load (models/plan/
   * plan_state.c model_plan_load_bytes), where ddp and FSDP make them at the first optimizer
   * step. So zero1-3 on one GPU shard nothing but are not "no effect" (QA: 8B bf16 on an
   * H100, 44.87 → 104.70 GiB after load); the FSDP modes are the ddp plan there. */
  gboolean zero = model_parallel_is_zero (par->mode);
#define ZERO_AT_LOAD                                                                          \
  "but DeepSpeed's ZeRO makes the optimizer states at the load, not at the first step as "    \
  "ddp: more memory after load"
  if (sharded_one && has (kf, "parallel", "data_parallel"))
    {
      if (zero)
        note (sc, sets, origins, "parallel", "data_parallel", "shards nothing",
              "%s over one GPU shards nothing (without [offload] the step is the single-GPU "
              "one), " ZERO_AT_LOAD, mode);
      else
        NOTE ("parallel", "data_parallel", "%s over one GPU shards nothing (without "
              "[offload] the step is the single-GPU one)", mode);
    }
  else if (sharded_one && sc->has_ds && sc->ds.stage >= 1)
    /* the same mode from the ds_config's stage (scenario_framework.c late_stage): its other
     * values still apply, so "shards nothing" rather than "has no effect" */
    note (sc, sets, origins, "training", "deepspeed_config", "shards nothing",
          "%s: zero_optimization.stage = %d (data_parallel = %s) over one GPU shards nothing "
          "without [offload], " ZERO_AT_LOAD,
          sc->ds_path, sc->ds.stage, mode);
#undef ZERO_AT_LOAD
}

/* attention = triton | flash1 where the kernel runs, but not as the scenario may expect
 * (hardware/kernel.h): the model's sliding window is not applied (both kernels attend to
 * the whole causal context; timed so: models/ops/cost.h window_ignored), or the Triton
 * kernel on a pre-Ampere GPU ("only been tested on A100", flash_attn_triton.py; no bf16
 * there, and no measured table: flat compute_efficiency). What the kernels refuse is an
 * error (models/plan/simulate.c). */
static void
attention_key (CliScenario *sc, const char *const *sets, const char *const *origins)
{
  const ModelStack *s = &sc->stack;
  const char *name = hw_attn_kernel_name (s->attention_kernel);
  guint64 w = sc->arch->sliding_window;
  if (s->flash_attention && !hw_kernel_attn_has_window (s->attention_kernel) && w > 0
      && w < s->seq_len)
    note (sc, sets, origins, "training", "attention", "ignores the sliding window",
          "%s has no sliding-window support (llm-foundry passes sliding_window_size to "
          "flash-attn >= 2.3 only): the model's window of %" G_GUINT64_FORMAT " tokens is not "
          "applied, every query attends to its whole causal context of up to %" G_GUINT64_FORMAT
          " (timed so); attention = flash applies it", name, w, s->seq_len);
  if (sc->arch->attn_sinks && s->attention_sdpa)
    note (sc, sets, origins, "training", "attention", "is not offered for this model",
          "transformers' gpt_oss has no SDPA path for its attention sinks "
          "(GptOssPreTrainedModel._supports_sdpa is False: it falls back to eager); timed "
          "as the SDPA kernel here, set attention = eager for what transformers runs");
  const HwGpuSpec *gpu = sc->node.gpu;
  if (s->flash_attention && s->attention_kernel == HW_ATTN_TRITON && gpu != NULL
      && gpu->generation == HW_GPU_GEN_VOLTA)
    note (sc, sets, origins, "training", "attention", "is untested on this GPU",
          "FlashAttention's Triton kernel has only been tested on A100 (flash_attn_triton.py); "
          "on %s (volta) stepsim has no measured table for it and times it at the flat "
          "compute_efficiency", gpu->name);
}

static void
training_keys (GKeyFile *kf, CliScenario *sc, const char *const *sets,
               const char *const *origins)
{
  const ModelStack *s = &sc->stack;
  attention_key (sc, sets, origins);
  if (has (kf, "training", "checkpoint_every") && s->checkpointing != MODEL_CHECKPOINTING_EVERY_K)
    NOTE ("training", "checkpoint_every", "it is the k of checkpointing = every_k; here "
          "checkpointing = %s", model_stack_checkpointing_name (s->checkpointing));
  const ModelFramework *fw = &s->framework;
  /* moe_act reruns Megatron's grouped experts' activation (graph_layer.c grouped_swiglu):
   * nothing else has it */
  /* (on a dense model moe, moe_act and shared_experts are errors: scenario_groups.c) */
  if ((s->recompute_modules & MODEL_RECOMPUTE_MOE_ACT) && sc->arch->n_experts > 0
      && !fw->moe_grouped_mlp)
    NOTE ("training", "recompute_modules", "moe_act reruns the activation of Megatron's "
          "grouped MoE experts; here the experts are not Megatron's (framework = megatron "
          "runs them)");
  /* transformer_layer.py: mlp checkpoints a dense layer's MLP only; moe_layer.py: moe a MoE
   * layer, shared_experts its shared experts (graph_layer.c mlp, shared_experts) */
  if ((s->recompute_modules & MODEL_RECOMPUTE_MLP) && sc->arch->n_experts > 0)
    NOTE ("training", "recompute_modules", "mlp reruns the MLP of dense layers, and stepsim "
          "costs every layer of this MoE model as a MoE layer (DeepSeek's first dense layers "
          "included, an approximation of models/plan/plan_ep.c); moe reruns those");
  if ((s->recompute_modules & MODEL_RECOMPUTE_SHARED_EXPERTS) && sc->arch->n_experts > 0
      && sc->arch->shared_expert_size == 0)
    NOTE ("training", "recompute_modules", "shared_experts reruns a MoE layer's shared experts; "
          "the model has none");
  if (has (kf, "training", "loss_chunks") && fw->loss_chunks > 1
      && fw->loss != MODEL_LOSS_CHUNKED && fw->loss != MODEL_LOSS_FUSED
      && fw->loss != MODEL_LOSS_CHUNKED_HEAD)
    NOTE ("training", "loss_chunks", "chunks are those of loss = chunked, fused or "
          "chunked_head; here the loss is computed on the whole logits at once "
          "(models/ops/cost.h)");
  if (has (kf, "training", "logits_kept") && fw->logits_kept
      && (fw->loss == MODEL_LOSS_FUSED || fw->loss == MODEL_LOSS_CHUNKED_HEAD))
    NOTE ("training", "logits_kept", "loss = %s computes the loss from the hidden states "
          "chunk by chunk, so there are no whole logits to keep (models/ops/cost_ends.c "
          "kept_logits)", model_framework_loss_name (fw->loss));
  if (has (kf, "training", "norm_fp32")
      && (model_stack_autocast (s) || sc->arch->norm != MODEL_NORM_RMS))
    NOTE ("training", "norm_fp32", "it is the upcast of an RMSNorm on 16-bit activations; %s",
          sc->arch->norm != MODEL_NORM_RMS ? "this model's norms are LayerNorms, which keep "
                                             "their input in its own dtype"
                                           : "under autocast the model and its norms are fp32 "
                                             "already");
  if (s->checkpointing == MODEL_CHECKPOINTING_SELECTIVE && s->flash_attention
      && (s->recompute_modules & ~MODEL_RECOMPUTE_CORE_ATTN) == 0)
    {
      /* Selective recomputes the attention core (Korthikanti et al. 2022 §5): under every
       * fused kernel (flash_attention: flash-attn 2 or 1, its Triton kernel, SDPA's
       * FlashAttention-2 or memory-efficient kernel; only eager keeps the s² scores) what it
       * stops keeping is the logsumexp, act_selective (models/ops/cost.h). The kernel is
       * named as the summary's training line names it (QA: "under attention = flash" was
       * said of sdpa's memory-efficient kernel). */
      ModelCostParams cp = model_stack_cost_params (s);
      ModelBlockCost c = model_cost_layer (sc->arch, &cp);
      g_autofree char *saved = sim_units_format (c.act_selective, SIM_DIM_BYTES, 2);
      note (sc, sets, origins, "training", "checkpointing", "has almost no effect",
            "selective recomputes the attention core, whose saved tensors under attention = "
            "%s, which runs %s here, are its logsumexp: it saves %s a layer (%.2f %% of the "
            "layer's activations) and adds the core's forward to the backward; full, every_k "
            "or selective_op save memory", model_stack_attention_name (s),
            model_stack_attention_label (s, sc->node.gpu, sc->arch->head_dim), saved,
            100 * c.act_selective / c.act_saved);
    }
  /* models/stack/stack.c model_stack_cost_params, models/ops/cost.c: the expanded k/v
   * copies exist only for grouped k/v heads; the eager core makes them in every framework,
   * kv_repeat before every kernel, kv_repeat_sdpa before SDPA alone (a profile's default is
   * silent) */
  const char *kv_keys[] = { "kv_repeat", "kv_repeat_sdpa" };
  for (guint i = 0; i < G_N_ELEMENTS (kv_keys); i++)
    {
      if (!has (kf, "training", kv_keys[i]))
        continue;
      if (!model_arch_grouped_kv (sc->arch))
        NOTE ("training", kv_keys[i], "model '%s' has as many key/value heads as query heads "
              "(%" G_GUINT64_FORMAT "): there is nothing to expand", sc->arch->name,
              sc->arch->n_heads);
      else if (!s->flash_attention)
        NOTE ("training", kv_keys[i], "attention = eager expands the key/value heads to the "
              "query heads in every framework (HF eager_attention_forward's repeat_kv, "
              "Megatron's repeat_interleave)");
      else if (i == 1 && fw->kv_repeat)
        NOTE ("training", "kv_repeat_sdpa", "kv_repeat = true expands the key/value heads "
              "before every attention kernel already");
      else if (i == 1 && !s->attention_sdpa)
        NOTE ("training", "kv_repeat_sdpa", "it is HF's repeat_kv before PyTorch's SDPA; "
              "attention = %s runs the flash-attn package, which takes the grouped key/value "
              "heads as they are (HF's flash_attention_2 path)",
              model_stack_attention_name (s));
    }
  /* models/ops/cost.c cost_dims_of (Dims.sm_fp32): the eager core's softmax in fp32 */
  if (has (kf, "training", "softmax_fp32"))
    {
      if (s->flash_attention)
        NOTE ("training", "softmax_fp32", "it is the eager core's softmax; attention = %s "
              "runs a fused kernel, whose softmax is fp32 inside", model_stack_attention_name (s));
      else if (!model_arch_softmax_fp32 (sc->arch))
        NOTE ("training", "softmax_fp32", "model '%s' (%s) computes its eager softmax in the "
              "scores' dtype whatever the key", sc->arch->name,
              model_arch_family_name (sc->arch->family));
      else if (model_stack_autocast (s))
        NOTE ("training", "softmax_fp32", "precision = %s runs softmax in fp32 under autocast "
              "anyway", model_stack_precision_name (s->precision));
      else if (model_stack_activation_bytes (s) >= 4)
        NOTE ("training", "softmax_fp32", "precision = %s computes in fp32 already",
              model_stack_precision_name (s->precision));
    }
  if (has (kf, "training", "tf32") && s->precision != MODEL_PRECISION_FP32)
    NOTE ("training", "tf32", "it selects TF32 for fp32 GEMMs; precision = %s runs them in "
          "16 bit", model_stack_precision_name (s->precision));
  if (has (kf, "training", "optimizer_foreach")
      && (s->optimizer != MODEL_OPTIMIZER_ADAMW || s->offload.optimizer != MODEL_OFFLOAD_NONE))
    NOTE ("training", "optimizer_foreach", "it is the GPU AdamW step's foreach "
          "implementation; here %s", s->offload.optimizer != MODEL_OFFLOAD_NONE
                                       ? "the optimizer step runs on the host CPU"
                                       : "optimizer is not adamw");
}

/* The framework keys (cli/scenario/scenario_framework.c) and the ds_config's keys that
 * stepsim does not model (models/stack/ds_config.h: listed, not refused). */
static void
framework_keys (GKeyFile *kf, CliScenario *sc, const char *const *sets,
                const char *const *origins)
{
  const ModelStack *s = &sc->stack;
  ModelDataParallel m = sc->par.mode;
  gboolean zero = model_parallel_is_zero (m);
  const char *ds_keys[] = { "reduce_bucket_size", "allgather_bucket_size" };
  for (guint i = 0; i < G_N_ELEMENTS (ds_keys); i++)
    if (has (kf, "training", ds_keys[i]) && !zero)
      NOTE ("training", ds_keys[i], "it sizes DeepSpeed ZeRO's buckets; here data_parallel = "
            "%s", model_parallel_mode_name (m));
  const char *stage3_keys[] = { "stage3_prefetch_bucket_size",
                                "stage3_param_persistence_threshold",
                                "stage3_max_live_parameters" };
  for (guint i = 0; i < G_N_ELEMENTS (stage3_keys); i++)
    if (has (kf, "training", stage3_keys[i]) && m != MODEL_DP_ZERO3)
      NOTE ("training", stage3_keys[i], "it is DeepSpeed ZeRO stage 3's; here data_parallel "
            "= %s", model_parallel_mode_name (m));
  if (has (kf, "training", "allgather_bucket_size") && zero)
    note (sc, sets, origins, "training", "allgather_bucket_size", "has no memory effect",
          "DeepSpeed gathers the updated parameters into their own 16-bit partitions in "
          "chunks of this many elements (stage_1_and_2.py all_gather_dp_groups): no buffer; "
          "the chunks' extra latency is not modelled");
  if (has (kf, "training", "main_grad_fp32") && s->framework.main_grad_fp32
      && !model_stack_main_grad_fp32 (s))
    NOTE ("training", "main_grad_fp32", "the parameters and their gradients are fp32 already "
          "under precision = %s", model_stack_precision_name (s->precision));
  if (has (kf, "training", "optimizer_impl") && s->optimizer != MODEL_OPTIMIZER_ADAMW)
    NOTE ("training", "optimizer_impl", "it is the AdamW step's implementation; here "
          "optimizer = %s", model_stack_optimizer_name (s->optimizer));
  ModelFrameworkKind kind = s->framework.kind;
  ModelFramework ds_profile; /* the deepspeed profile's loss and step, for the note below */
  model_framework_apply_profile (&ds_profile, MODEL_FRAMEWORK_DEEPSPEED);
  if (sc->has_ds && (kind == MODEL_FRAMEWORK_CUSTOM || kind == MODEL_FRAMEWORK_MEGATRON))
    note (sc, sets, origins, "training", "deepspeed_config", "is applied under another profile",
          "its values are used, but framework = %s keeps its own loss and optimizer_impl "
          "(%s, %s), not DeepSpeed's (%s, %s); set framework = deepspeed, or "
          "hf_trainer for the Trainer's --deepspeed",
          model_framework_name (kind), model_framework_loss_name (s->framework.loss),
          model_framework_optimizer_impl_name (s->framework.optimizer_impl),
          model_framework_loss_name (ds_profile.loss),
          model_framework_optimizer_impl_name (ds_profile.optimizer_impl));
  for (guint i = 0; sc->has_ds && i < sc->ds.ignored->len; i++)
    note (sc, sets, origins, "training", "deepspeed_config", "is partly ignored",
          "%s: key '%s' is not modelled by stepsim", sc->ds_path,
          (const char *) g_ptr_array_index (sc->ds.ignored, i));
}

static void
other_keys (GKeyFile *kf, CliScenario *sc, const char *const *sets, const char *const *origins)
{
  const ModelStack *s = &sc->stack;
  const ModelOffload *o = &s->offload;
  if (has (kf, "offload", "pin_memory") && !model_offload_any (o))
    NOTE ("offload", "pin_memory", "nothing is offloaded (optimizer, parameters and "
          "activations are none)");
  if (has (kf, "run", "seed") && !(sc->kernel_jitter > 0))
    NOTE ("run", "seed", "it seeds the kernel-time jitter, and kernel_jitter is 0");
  ModelFinetuneMethod m = s->finetune.method;
  if (has (kf, "finetune", "double_quant") && m != MODEL_FINETUNE_QLORA)
    NOTE ("finetune", "double_quant", "it quantizes QLoRA's constants; here method = %s",
          model_finetune_method_name (m));
  if (has (kf, "finetune", "dequantize") && !sc->arch->mxfp4_experts)
    NOTE ("finetune", "dequantize", "model '%s' has no MXFP4 weights to upcast",
          sc->arch->name);
  else if (has (kf, "finetune", "dequantize") && m == MODEL_FINETUNE_NONE)
    NOTE ("finetune", "dequantize", "a full fine-tune trains every weight at the weight "
          "dtype: nothing stays MXFP4 (method = none)");
  /* a targets list naming a projection the model lacks (a list naming none is refused) */
  const ModelFinetune *ft = &sc->stack.finetune;
  if (has (kf, "finetune", "targets") && m != MODEL_FINETUNE_NONE
      && ft->targets == MODEL_LORA_MODULES)
    for (guint bit = 1; bit != 0 && bit <= ft->modules; bit <<= 1)
      {
        ModelFinetune one = *ft;
        one.modules = bit;
        if ((ft->modules & bit) && model_finetune_layer_adapter_params (sc->arch, &one) == 0)
          {
            g_autofree char *name = model_finetune_targets_text (&one);
            NOTE ("finetune", "targets", "model '%s' has no '%s' projection to adapt",
                  sc->arch->name, name);
          }
      }
  if (has (kf, "training", "rope_table") && model_arch_rotary_dim (sc->arch) == 0
      && sc->stack.framework.rope_table != MODEL_ROPE_TABLE_NONE)
    NOTE ("training", "rope_table", "model '%s' has no rotary positions (learned or ALiBi)",
          sc->arch->name);
  /* fsdp_end_units splits FSDP's root unit where the plan can (model_plan_end_units) */
  if (has (kf, "training", "fsdp_end_units"))
    switch (model_plan_end_units (sc->arch, &sc->stack, &sc->par))
      {
      case MODEL_END_UNITS_NO_FSDP:
        NOTE ("training", "fsdp_end_units", "[parallel] data_parallel = %s has no FSDP units "
              "that gather parameters", model_parallel_mode_name (sc->par.mode));
        break;
      case MODEL_END_UNITS_TIED:
        NOTE ("training", "fsdp_end_units", "model '%s' ties its head to the embedding: one "
              "unit holds both", sc->arch->name);
        break;
      case MODEL_END_UNITS_MTP:
        NOTE ("training", "fsdp_end_units", "[training] mtp_layers share the head outside "
              "FSDP's units");
        break;
      case MODEL_END_UNITS_ON:
      case MODEL_END_UNITS_OFF:
        break;
      }
  /* fsdp_version names which FSDP wraps the model: nothing without FSDP */
  if (has (kf, "training", "fsdp_version") && !model_parallel_is_fsdp (sc->par.mode))
    NOTE ("training", "fsdp_version", "[parallel] data_parallel = %s is not FSDP",
          model_parallel_mode_name (sc->par.mode));
  /* torchtune and torchtitan shard with fully_shard (FSDP2) only (framework.c) */
  ModelFrameworkKind fk = sc->stack.framework.kind;
  if (has (kf, "training", "fsdp_version") && !sc->stack.framework.fsdp2
      && (fk == MODEL_FRAMEWORK_TORCHTUNE || fk == MODEL_FRAMEWORK_TORCHTITAN))
    note (sc, sets, origins, "training", "fsdp_version", "not the framework's",
          "%s shards with fully_shard (FSDP2) only; simulated as FSDP1",
          model_framework_name (fk));
  /* An offloaded SGD or Adafactor: DeepSpeed's engine refuses an optimizer other than its
   * CPU-Adam (or CPU Lion) under ZeRO-Offload unless zero_force_ds_cpu_optimizer is false
   * (deepspeed/runtime/engine.py _configure_basic_optimizer: "You are using ZeRO-Offload
   * with a client provided optimizer ... which in most cases will yield poor performance"),
   * and the host step is timed at CPU-Adam's rate (plan_offload.c) */
  if (sc->stack.offload.optimizer != MODEL_OFFLOAD_NONE
      && (sc->stack.optimizer == MODEL_OPTIMIZER_SGD_MOMENTUM
          || sc->stack.optimizer == MODEL_OPTIMIZER_ADAFACTOR))
    note (sc, sets, origins, "training", "optimizer", "timed as DeepSpeed's CPU-Adam",
          "%s with [offload] optimizer = %s runs its host step at CPU-Adam's rate; DeepSpeed "
          "refuses it there unless zero_force_ds_cpu_optimizer = false",
          model_stack_optimizer_name (sc->stack.optimizer),
          model_offload_target_name (sc->stack.offload.optimizer));
  /* DeepSpeed's engine under ZeRO asserts that the optimizer is one it tested
   * (deepspeed/runtime/engine.py: "You are using an untested ZeRO Optimizer. Please add
   * <"zero_allow_untested_optimizer": true> in the configuration file to use it.";
   * zero/utils.py ZERO_SUPPORTED_OPTIMIZERS: torch's Adam and AdamW, DeepSpeed's fused and
   * CPU Adam, Adagrad and Lion — not torch's SGD, transformers' Adafactor or
   * bitsandbytes' 8-bit AdamW). The offloaded case is the note above. */
  if (model_parallel_is_zero (sc->par.mode) && sc->stack.framework.deepspeed_engine && sc->stack.optimizer != MODEL_OPTIMIZER_ADAMW
      && sc->stack.offload.optimizer == MODEL_OFFLOAD_NONE
      && !(sc->has_ds && sc->ds.allow_untested == 1))
    note (sc, sets, origins, "training", "optimizer", "DeepSpeed stops on it",
          "%s under ZeRO (%s) is an optimizer DeepSpeed has not tested with ZeRO: its engine "
          "refuses it unless the ds_config sets zero_allow_untested_optimizer = true "
          "(simulated as given)",
          model_stack_optimizer_name (sc->stack.optimizer),
          model_parallel_mode_name (sc->par.mode));
  /* Megatron-LM's --optimizer is adam, sgd, muon, lion or soap (megatron/training/
   * arguments.py): no Adafactor or 8-bit AdamW (QA) */
  if (sc->stack.framework.kind == MODEL_FRAMEWORK_MEGATRON
      && sc->stack.optimizer != MODEL_OPTIMIZER_ADAMW
      && sc->stack.optimizer != MODEL_OPTIMIZER_SGD_MOMENTUM)
    note (sc, sets, origins, "training", "optimizer", "not the framework's",
          "Megatron-LM's --optimizer offers adam, sgd, muon, lion and soap, not %s; "
          "simulated as given", model_stack_optimizer_name (sc->stack.optimizer));
  const char *adapter_keys[] = { "rank", "targets" };
  for (guint i = 0; i < G_N_ELEMENTS (adapter_keys); i++)
    if (has (kf, "finetune", adapter_keys[i]) && m == MODEL_FINETUNE_NONE)
      NOTE ("finetune", adapter_keys[i], "method = none trains no adapters");
  const char *cpu_keys[] = { "cpu_cores", "cpu_adam_rate" };
  for (guint i = 0; i < G_N_ELEMENTS (cpu_keys); i++)
    if (has (kf, "cluster", cpu_keys[i]) && o->optimizer == MODEL_OFFLOAD_NONE)
      NOTE ("cluster", cpu_keys[i], "only the offloaded optimizer step runs on the host CPU "
            "([offload] optimizer is none)");
  const char *nvme_keys[] = { "nvme_drives", "nvme_read_bandwidth", "nvme_write_bandwidth",
                              "nvme_capacity" };
  gboolean nvme = o->optimizer == MODEL_OFFLOAD_NVME || o->parameters == MODEL_OFFLOAD_NVME;
  for (guint i = 0; i < G_N_ELEMENTS (nvme_keys); i++)
    if (has (kf, "cluster", nvme_keys[i]) && !nvme)
      NOTE ("cluster", nvme_keys[i], "nothing is offloaded to NVMe");
  const char *net_keys[] = { "nics_per_node", "nic_bandwidth", "rail_optimized",
                             "inter_latency", "spine_oversubscription", "nodes_per_pod" };
  for (guint i = 0; i < G_N_ELEMENTS (net_keys); i++)
    if (has (kf, "cluster", net_keys[i]) && sc->n_nodes <= 1)
      NOTE ("cluster", net_keys[i], "one node has no inter-node traffic");
  if (has (kf, "cluster", "pod_oversubscription")
      && (sc->fabric.nodes_per_pod == 0 || sc->fabric.nodes_per_pod >= sc->n_nodes))
    NOTE ("cluster", "pod_oversubscription", "one pod (nodes_per_pod at least nodes) has no "
          "traffic between pods");
}

/* [node.NAME] groups [cluster] does not use (it names one node, or a GPU: a [node.NAME] is
 * never another's base, hardware/cluster_spec_node.c), [gpu.NAME] groups no GPU key names
 * (a [gpu.NAME] is never another's base either, hardware/catalog.c), and host_memory
 * ([cluster] or the used node's) when nothing is kept in host DRAM: only offloading and a
 * paged optimizer put bytes there (models/plan/plan_offload.c, plan_paged.c; the host ledger
 * of simulate.c). */
static void
node_keys (GKeyFile *kf, CliScenario *sc, const char *const *sets, const char *const *origins)
{
  g_autofree char *name = g_key_file_get_string (kf, "cluster", "node", NULL);
  g_autofree char *used = name != NULL ? g_strconcat ("node.", g_strstrip (name), NULL) : NULL;
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  for (guint i = 0; groups[i] != NULL; i++)
    if (g_str_has_prefix (groups[i], "node.") && g_strcmp0 (groups[i], used) != 0)
      {
        g_autofree char *msg
            = name != NULL ? g_strdup_printf ("group [%s]: is not used: [cluster] key 'node' "
                                              "names %s", groups[i], name)
                           : g_strdup_printf ("group [%s]: is not used: [cluster] gives "
                                              "key 'gpu', not 'node'", groups[i]);
        add_warning (sc, sets, origins, msg);
      }
  /* [gpu.NAME] groups no GPU key names, [cluster]'s or a node group's (a node group [cluster]
   * does not use is said above; its GPU is not said twice) */
  g_autofree char *gpu = g_key_file_get_string (kf, "cluster", "gpu", NULL);
  g_autoptr (GPtrArray) named = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; groups[i] != NULL; i++)
    {
      char *g = NULL;
      if (g_str_has_prefix (groups[i], "node.")
          && (g = g_key_file_get_string (kf, groups[i], "gpu", NULL)) != NULL)
        g_ptr_array_add (named, g_strconcat ("gpu.", g_strstrip (g), NULL));
      g_free (g);
    }
  if (gpu != NULL)
    g_ptr_array_add (named, g_strconcat ("gpu.", g_strstrip (gpu), NULL));
  for (guint i = 0; groups[i] != NULL; i++)
    if (g_str_has_prefix (groups[i], "gpu.")
        && !g_ptr_array_find_with_equal_func (named, groups[i], g_str_equal, NULL))
      {
        g_autofree char *msg
            = gpu != NULL ? g_strdup_printf ("group [%s]: is not used: [cluster] key 'gpu' "
                                             "names %s", groups[i], gpu)
                          : g_strdup_printf ("group [%s]: is not used: [cluster] gives key "
                                             "'node', and no [node.NAME] key 'gpu' names %s",
                                             groups[i], groups[i] + 4);
        add_warning (sc, sets, origins, msg);
      }
  const ModelStack *s = &sc->stack;
  if (model_offload_any (&s->offload) || model_stack_optimizer_is_paged (s))
    return;
  const char *where[] = { "cluster", used };
  for (guint i = 0; i < G_N_ELEMENTS (where); i++)
    if (where[i] != NULL && g_key_file_has_group (kf, where[i])
        && has (kf, where[i], "host_memory"))
      /* the keys that keep nothing there named as "[G] K", so that the --set among them
       * are named as the message's origin, as for the other notes (QA: --set
       * offload.optimizer=none left this one saying "s6.ini:" alone) */
      NOTE (where[i], "host_memory", "nothing is kept in host memory ([offload] optimizer, "
            "parameters and activations are none; [training] optimizer is not paged)");
}

void
cli_scenario_collect_warnings (GKeyFile *kf, CliScenario *sc, const char *const *sets,
                               const char *const *origins)
{
  g_return_if_fail (kf != NULL && sc != NULL && sc->warnings != NULL);
  node_keys (kf, sc, sets, origins);
  parallel_keys (kf, sc, sets, origins);
  training_keys (kf, sc, sets, origins);
  framework_keys (kf, sc, sets, origins);
  other_keys (kf, sc, sets, origins);
}

void
cli_scenario_warn (const char *message)
{
  const char *prg = g_get_prgname () != NULL ? g_get_prgname () : "stepsim";
  g_autofree char *shown = sim_text_printable (message, CLI_SCENARIO_MESSAGE_MAX);
  fprintf (stderr, "%s: warning: %s\n", prg, shown);
}

void
cli_scenario_print_warnings (const CliScenario *sc)
{
  static GMutex lock; /* batches load scenarios on several threads */
  static GHashTable *said; /* messages printed so far; lookup only, never iterated */
  g_return_if_fail (sc != NULL);
  g_mutex_lock (&lock);
  if (said == NULL)
    said = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; sc->warnings != NULL && i < sc->warnings->len; i++)
    {
      const char *w = g_ptr_array_index (sc->warnings, i);
      if (g_hash_table_add (said, g_strdup (w)))
        cli_scenario_warn (w);
    }
  g_mutex_unlock (&lock);
}

void
cli_scenario_warn_baseline_sets (const char *const *sets, const char *const *origins)
{
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    if (cli_sweep_set_is_baseline (sets[i]))
      {
        g_autofree char *shown = sim_text_printable (sets[i], CLI_SCENARIO_MESSAGE_MAX);
        g_autofree char *msg = g_strdup_printf (
          "%s %s: has no effect here: a baseline runs under batch and fit --for stack only",
          origins != NULL && origins[i] != NULL ? origins[i] : "--set", shown);
        cli_scenario_warn (msg);
      }
}
