/* models/plan/plan_state.c — the persistent state a plan allocates at time 0 on every rank:
 * how much of each category (sharded as parallel.h says) and the tensors it is made of
 * (per parameter for plain PyTorch, flat shards for ZeRO/FSDP, buckets for DDP). */
#include "config.h"
#include "models/plan/plan-private.h"

#include "models/arch/inventory.h"
#include "models/parallel/tensor_parallel.h"

#include "models/plan/plan_offload-private.h"
#include "models/plan/plan_paged-private.h"

/* The model state a memory category holds (MODEL_N_STATES: none). */
static ModelState
state_of (ModelMemCategory c)
{
  switch (c)
    {
    case MODEL_MEM_WEIGHTS:
    case MODEL_MEM_LORA: /* the adapters' weights */
      return MODEL_STATE_WEIGHTS;
    case MODEL_MEM_MASTER_WEIGHTS:
      return MODEL_STATE_MASTER;
    case MODEL_MEM_OPTIMIZER_STATE:
      return MODEL_STATE_OPTIMIZER;
    case MODEL_MEM_GRADIENTS:
      return MODEL_STATE_GRADIENTS;
    default:
      return MODEL_N_STATES;
    }
}

/* Whether the data-parallel mode is DeepSpeed's ZeRO (whose buffers framework.h sizes). */
static gboolean
deepspeed_zero (const ModelPlan *p)
{
  return model_parallel_is_zero (p->par.mode);
}

/* B of DeepSpeed's contiguous-gradient reduce bucket(s) (framework.h
 * model_framework_ds_reduce_buffer_bytes): reduce_bucket_size elements of the gradient
 * dtype, allocated whole. Counted from time 0: DeepSpeed makes it at the first backward and
 * keeps it until the step releases it (stage_1_and_2.py _release_ipg_buffers), so it is
 * live through every backward; the forward before it is the part over-counted. */
static double
ds_reduce_buffer (const ModelPlan *p)
{
  guint stage = model_parallel_stage (&p->par);
  if (!deepspeed_zero (p))
    return 0;
  return model_framework_ds_reduce_buffer_bytes (&p->stack.framework, stage,
                                                 model_stack_gradient_bytes (&p->stack));
}

/* B of weights DeepSpeed stage 3 keeps gathered beyond this rank's shard: the tensors under
 * stage3_param_persistence_threshold elements are never partitioned (framework.h), so
 * each rank holds them whole — (1 − 1/N) of their bytes more than the shard counted. */
static double
ds_persistent_weights (const ModelPlan *p)
{
  double share = model_parallel_local_fraction (&p->par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST);
  if (p->par.mode != MODEL_DP_ZERO3 || share >= 1)
    return 0;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  double elems = model_framework_ds_persistent_elements (&p->stack.framework, inv);
  return elems * model_stack_weight_bytes (&p->stack) * (1 - share);
}

gboolean
plan_fsdp_casts_params (const ModelPlan *p)
{
  ModelDataParallel m = p->par.mode;
  gboolean gathered = (m == MODEL_DP_FSDP_FULL_SHARD || m == MODEL_DP_FSDP_HYBRID_SHARD)
                      && model_parallel_local_fraction (&p->par, MODEL_STATE_WEIGHTS,
                                                        MODEL_PHASE_REST) < 1;
  return gathered && model_stack_master_bytes (&p->stack) > 0
         && p->stack.finetune.method == MODEL_FINETUNE_NONE && !plan_offloads_optimizer (p)
         && !plan_offloads_parameters (p);
}

double
plan_grad_shard_bytes (const ModelPlan *p)
{
  return plan_fsdp_casts_params (p) ? model_stack_master_bytes (&p->stack)
                                    : model_stack_gradient_bytes (&p->stack);
}

/* PyTorch FSDP's mixed precision (plan_fsdp_casts_params) keeps the parameters it shards in
 * their fp32 and casts them to param_dtype only into each all-gather's input: FSDP1
 * torch/distributed/fsdp/_flat_param.py _use_low_precision_shard allocates the 16-bit
 * shard for the all-gather and _free_low_precision_sharded_param frees it after;
 * FSDP2 torch/distributed/fsdp/_fully_shard/_fsdp_param.py all_gather_inputs
 * `_to_dtype_if_needed(self._sharded_param_data, self.param_dtype)`. The optimizer steps
 * those fp32 shards: they are stepsim's master weights, and the 16-bit weights exist only
 * gathered (plan_step.c's gather buffers). The reduced gradient is cast back to the
 * parameter's dtype before it is kept (FSDP1 _runtime_utils.py _cast_grad_to_param_dtype;
 * FSDP2 _fsdp_collectives.py foreach_reduce `_to_dtype_if_needed(new_sharded_grad,
 * fsdp_param.orig_dtype)`), so a kept gradient shard is 4 B a parameter. DeepSpeed's
 * ZeRO (zero1–3), by contrast, stores 16-bit parameters beside its fp32 partition. */
static void
fsdp_mixed_state (ModelPlan *p)
{
  if (!plan_fsdp_casts_params (p))
    return;
  p->initial[MODEL_MEM_WEIGHTS] = 0;
  p->initial[MODEL_MEM_GRADIENTS]
    *= plan_grad_shard_bytes (p) / model_stack_gradient_bytes (&p->stack);
}

/* The share of QLoRA's NF4 constants a rank holds at rest under data-parallel sharding:
 * torchtune's NF4 base is torchao's NF4Tensor, whose FSDP2 shard (aten.split, nf4_split)
 * splits quantized_scalers and quantization_factor with quantized_data and all-gathers the
 * three (fsdp_pre_all_gather; torchao nf4tensor.py), so they shard as the weights do.
 * Elsewhere 1: bitsandbytes' Params4bit keeps its quant_state whole on every rank (FSDP
 * flattens only the packed weight). */
static double
quant_dp_fraction (const ModelPlan *p)
{
  if (p->stack.finetune.method != MODEL_FINETUNE_QLORA
      || p->stack.framework.kind != MODEL_FRAMEWORK_TORCHTUNE)
    return 1;
  return model_parallel_local_fraction (&p->par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST);
}

/* Persistent state per rank (parallel.h, models/stack/stack.h): each model state's share as
 * placed at rest (weights sharded under stage 3, master weights and optimizer states from
 * stage 1, gradients when zero_grad keeps them allocated from stage 2), fp8 weight copies,
 * and DDP's gradient bucket copies (gradient_as_bucket_view=False, PyTorch's default: Li et
 * al. 2020 §3.2.3) — the buffers of the bucketed all-reduce (gradients Partial → Replicate
 * at the step; none under Megatron, whose buckets are views of its grad buffer:
 * ModelFramework.grad_buffer_buckets) — and under DeepSpeed's ZeRO its reduce bucket(s), the
 * GPU buffer of its offloaded gradients and stage 3's persistent small parameters
 * (models/stack/framework.h). */
void
plan_initial_state (ModelPlan *p)
{
  /* A tp rank's share first (plan_tp.c: its TP-local tensors), then the data-parallel
   * mode's sharding of those over dp_shard (the routed experts' over expert-dp). */
  double n = model_stack_trainable_params (&p->stack, p->arch) * p->tp.trainable;
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      if (c == MODEL_MEM_OPTIMIZER_STATE) /* as the data-parallel wrapper presents them */
        {
          ModelOptimizerView view = plan_optimizer_view (p);
          p->initial[c] = model_stack_optimizer_state_total (&p->stack, p->arch, &view);
        }
      else
        p->initial[c] = model_stack_initial_bytes (&p->stack, p->arch, c);
      if (state_of (c) != MODEL_N_STATES)
        p->initial[c] *= plan_state_rank_fraction (p, c, p->tp.trainable - p->tp.trainable_expert,
                                                   p->tp.trainable_expert,
                                                   p->tp.weights - p->tp.weights_expert,
                                                   p->tp.weights_expert);
      else if (c == MODEL_MEM_QUANTIZATION) /* NF4 constants shard with their weights */
        p->initial[c] *= (p->stack.finetune.method == MODEL_FINETUNE_QLORA ? p->tp.quant
                                                                           : p->tp.weights)
                         * quant_dp_fraction (p);
    }
  /* FSDP's NO_SHARD all-reduces each unit's flat gradient in place (torch/distributed/fsdp/
   * _runtime_utils.py _reduce_grad_no_shard: dist.all_reduce(flat_param.grad)): no bucket
   * copies */
  if (!model_parallel_state_sharded (&p->par, MODEL_STATE_GRADIENTS, MODEL_PHASE_STEP)
      && model_parallel_dp_degree (&p->par) > 1 && !p->stack.framework.grad_buffer_buckets
      && p->par.mode != MODEL_DP_FSDP_NO_SHARD)
    p->initial[MODEL_MEM_COMM_BUFFERS] = n * plan_reduce_bytes (p);
  p->initial[MODEL_MEM_COMM_BUFFERS] += ds_reduce_buffer (p) + plan_offload_ds_grad_buffer (p);
  p->initial[MODEL_MEM_WEIGHTS] += ds_persistent_weights (p);
  fsdp_mixed_state (p);
  plan_offload_initial_state (p);
  plan_paged_initial_state (p);
  p->initial[MODEL_MEM_WEIGHTS] += plan_rope_table_bytes (p);
}

/* B of one rotary table (of one layer under per_layer). */
static double
rope_table_one (const ModelPlan *p)
{
  double positions = 0, pair = 8; /* complex64, or fp32 (cos, sin) */
  switch (p->stack.framework.rope_table)
    {
    case MODEL_ROPE_TABLE_MAX_POSITIONS: positions = (double) p->arch->max_positions; break;
    case MODEL_ROPE_TABLE_SEQ_LEN: positions = (double) p->stack.seq_len; break;
    case MODEL_ROPE_TABLE_PER_LAYER:
      positions = (double) p->stack.seq_len;
      /* torchtitan's CosSinRoPE (qwen3, gpt_oss): cos and sin each over the whole
       * rotary_dim (framework.c) */
      if (p->arch->family == MODEL_FAMILY_QWEN3 || p->arch->family == MODEL_FAMILY_QWEN3_MOE
          || p->arch->family == MODEL_FAMILY_GPT_OSS)
        pair = 16;
      break;
    case MODEL_ROPE_TABLE_NONE:
    case MODEL_N_ROPE_TABLES: break;
    }
  return positions * (double) (model_arch_rotary_dim (p->arch) / 2) * pair;
}

double
plan_rope_table_bytes (const ModelPlan *p)
{
  double one = rope_table_one (p);
  if (p->stack.framework.rope_table != MODEL_ROPE_TABLE_PER_LAYER)
    return one;
  return one * (double) (p->arch->n_layers + p->stack.mtp_layers);
}

/* See plan.h (here, beside what a rank holds of each state: the units FSDP gathers its
 * weights in). */
ModelEndUnits
model_plan_end_units (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par)
{
  g_return_val_if_fail (arch != NULL && stack != NULL && par != NULL, MODEL_END_UNITS_OFF);
  if (!stack->framework.fsdp_end_units)
    return MODEL_END_UNITS_OFF;
  if (par->mode != MODEL_DP_FSDP_FULL_SHARD && par->mode != MODEL_DP_FSDP_HYBRID_SHARD)
    return MODEL_END_UNITS_NO_FSDP;
  if (arch->tied_embeddings) /* torchtitan's fsdp.py: (tok_embeddings, norm, lm_head) one unit */
    return MODEL_END_UNITS_TIED;
  return stack->mtp_layers > 0 ? MODEL_END_UNITS_MTP : MODEL_END_UNITS_ON;
}

double
plan_state_rank_initial (const ModelPlan *p, guint rank, ModelMemCategory c)
{
  double rope = c == MODEL_MEM_WEIGHTS ? plan_rope_table_bytes (p) : 0;
  return (p->initial[c] - rope) * plan_pp_state_fraction (p, rank, c)
         + (rope > 0 ? plan_rope_table_rank_bytes (p, rank) : 0);
}

double
plan_rope_table_rank_bytes (const ModelPlan *p, guint rank)
{
  if (p->stack.framework.rope_table != MODEL_ROPE_TABLE_PER_LAYER || p->pp.layers == NULL)
    return plan_rope_table_bytes (p);
  return rope_table_one (p) * (double) p->pp.layers[plan_pp_rank_of (p, rank)];
}

double
plan_state_shard_fraction (const ModelPlan *p, ModelMemCategory c, ModelPhase phase,
                           gboolean expert)
{
  ModelState s = state_of (c);
  if (s == MODEL_N_STATES)
    return 1;
  double f = model_parallel_local_fraction (&p->par, s, phase);
  if (!expert || !model_mesh_expert_dp_own (&p->mesh) || f >= 1)
    return f;
  /* Megatron's distributed optimizer shards the expert parameters' buffers over the
   * expert-data-parallel group (distributed_data_parallel.py: expert_parallel_buffers on
   * expert_data_parallel_group; distrib_optimizer.py one range per rank of its bucket's
   * group), edp = dp·cp·tp / (ep·etp) (mesh.h); plan_ep_validate refuses the modes where
   * that is not the whole story (stage 3, hybrid sharding) */
  return 1.0 / model_mesh_expert_degree (&p->mesh, MODEL_MESH_EXPERT_DP);
}

double
plan_state_rank_fraction (const ModelPlan *p, ModelMemCategory c, double trainable_dense,
                          double trainable_expert, double weights_dense, double weights_expert)
{
  gboolean w = c == MODEL_MEM_WEIGHTS || c == MODEL_MEM_QUANTIZATION;
  double dense = w ? weights_dense : trainable_dense;
  double expert = w ? weights_expert : trainable_expert;
  return dense * plan_state_shard_fraction (p, c, MODEL_PHASE_REST, FALSE)
         + expert * plan_state_shard_fraction (p, c, MODEL_PHASE_REST, TRUE);
}

double
model_plan_load_bytes (const ModelPlan *p)
{
  g_return_val_if_fail (p != NULL, 0);
  static const ModelMemCategory at_load[] = { MODEL_MEM_WEIGHTS, MODEL_MEM_MASTER_WEIGHTS,
                                              MODEL_MEM_LORA, MODEL_MEM_COMM_BUFFERS };
  double sum = 0;
  /* under pp: the stage holding the most (plan_pp.c; 1 without pp) */
  for (guint i = 0; i < G_N_ELEMENTS (at_load); i++)
    sum += p->initial[at_load[i]] * plan_pp_state_fraction_max (p, at_load[i]);
  /* DeepSpeed's ZeRO-1/2 reduce bucket is made by the first backward (stage 3's in its
   * optimizer's constructor, stage3.py __init__) */
  if (p->par.mode != MODEL_DP_ZERO3)
    sum -= ds_reduce_buffer (p);
  /* QLoRA's absmax constants come with the NF4 weights at load; fp8_mixed's fp8 weight
   * copies are made by the first forward (Transformer Engine's weight cache). */
  if (p->stack.finetune.method == MODEL_FINETUNE_QLORA)
    sum += p->initial[MODEL_MEM_QUANTIZATION]
           * plan_pp_state_fraction_max (p, MODEL_MEM_QUANTIZATION);
  if (deepspeed_zero (p))
    sum += p->initial[MODEL_MEM_OPTIMIZER_STATE]
           * plan_pp_state_fraction_max (p, MODEL_MEM_OPTIMIZER_STATE);
  return model_ledger_whole_bytes (sum);
}

gboolean
plan_states_at_first_step (const ModelPlan *p)
{
  ModelDataParallel m = p->par.mode;
  /* the cases model_plan_creation_task (plan.h) lists as present from the load */
  return p->initial[MODEL_MEM_OPTIMIZER_STATE] > 0 && m != MODEL_DP_ZERO1
         && m != MODEL_DP_ZERO2 && m != MODEL_DP_ZERO3
         && !model_stack_optimizer_is_paged (&p->stack)
         && !p->stack.framework.optimizer_in_backward;
}

/* Elements of the largest NF4-stored tensor copy of `inv` (0 if none). */
static double
largest_nf4 (const ModelInventory *inv)
{
  double m = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, i);
      if (t->storage == MODEL_TENSOR_STORAGE_NF4)
        m = MAX (m, (double) model_tensor_numel (t));
    }
  return m;
}

double
model_plan_load_peak_bytes (const ModelPlan *p)
{
  g_return_val_if_fail (p != NULL, 0);
  double transient = 0;
  g_autoptr (ModelInventory) inv = p->stack.finetune.method == MODEL_FINETUNE_QLORA
                                     ? model_stack_inventory (&p->stack, p->arch)
                                     : NULL;
  if (inv != NULL)
    {
      /* Each base matrix arrives on the GPU in 16 bit and is quantized there; the 16-bit
       * tensor lives until its NF4 codes and constants exist (bitsandbytes nn/modules.py
       * Params4bit._quantize: w = self.data.contiguous().to(device), then
       * F.quantize_4bit(w, ...); transformers quantizers/quantizer_bnb_4bit.py
       * create_quantized_param, one tensor at a time). */
      transient = 2.0 * largest_nf4 (inv);
      /* PEFT's prepare_model_for_kbit_training then casts every 16-bit parameter that is
       * not quantized to fp32 (peft/utils/other.py: param.data = param.data.to(float32)),
       * the 16-bit original alive while its fp32 copy is made — under the autocast
       * precisions, which model that cast (models/stack/stack.h). */
      if (model_stack_autocast (&p->stack))
        transient = MAX (transient,
                         2.0 * (double) model_inventory_largest (inv, MODEL_INVENTORY_ROOT, FALSE));
    }
  return model_plan_load_bytes (p) + model_ledger_whole_bytes (transient);
}

/* Whether `category` is split into flat shards (ZeRO partitions, FSDP flat parameters). */
static gboolean
sharded (const ModelPlan *p, ModelMemCategory c)
{
  ModelState s = state_of (c);
  return s != MODEL_N_STATES
         && model_parallel_local_fraction (&p->par, s, MODEL_PHASE_REST) < 1;
}

/* The tensors of the initial allocation of `category` (B each; they sum to initial[c]):
 * PyTorch allocates model states tensor by tensor — one per parameter, and per optimizer
 * state per parameter (Adam: m and v) — while ZeRO and FSDP keep a flat shard per unit
 * (FSDP: per wrapped layer; Zhao et al. 2023 §3.2). DDP's gradient buckets are blocks of
 * bucket_size (Li et al. 2020 §3.2.3). */
/* The share of decoder layer `layer` in the whole model: of its stored bytes less the LoRA
 * adapters (weights: the frozen base), or of its trainable parameters. */
static double
layer_share (const ModelInventory *inv, const ModelStack *s, gboolean weights, guint64 layer)
{
  double w = model_stack_weight_bytes (s), part = 0, whole = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      gboolean adapter = t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B;
      if (!model_tensor_is_parameter (t) || (weights ? adapter : !t->trainable))
        continue;
      double unit = (double) model_tensor_numel (t) * (weights ? model_tensor_storage_bytes (t, w) : 1);
      part += (double) model_inventory_copies_in_layers (inv, t, layer, layer + 1) * unit;
      whole += (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) * unit;
    }
  return whole > 0 ? part / whole : 0;
}

/* plan_initial_tensors without the rotary table: the tensors of `total` B of `c`. */
static GArray *
state_tensors (const ModelPlan *p, ModelMemCategory c, double total)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  const ModelStack *s = &p->stack;
  double psi = model_stack_trainable_params (s, p->arch);
  if (total <= 0)
    return out;
  if (c == MODEL_MEM_COMM_BUFFERS)
    {
      /* DeepSpeed's reduce buckets are one tensor each (two with overlap_comm) */
      double ds = ds_reduce_buffer (p);
      guint ds_n = p->par.mode != MODEL_DP_ZERO3 && p->stack.framework.ds_overlap_comm ? 2 : 1;
      for (guint i = 0; ds > 0 && i < ds_n; i++)
        {
          double b = ds / ds_n;
          g_array_append_val (out, b);
        }
      total -= ds;
      double staging = plan_offload_ds_grad_buffer (p);
      if (staging > 0)
        g_array_append_val (out, staging);
      total -= staging;
      for (double left = total; left > 0; left -= p->par.bucket_size)
        {
          double b = MIN (left, p->par.bucket_size);
          g_array_append_val (out, b);
        }
      return out;
    }
  gboolean per_param = c == MODEL_MEM_WEIGHTS || c == MODEL_MEM_MASTER_WEIGHTS
                       || c == MODEL_MEM_GRADIENTS || c == MODEL_MEM_OPTIMIZER_STATE
                       || c == MODEL_MEM_LORA;
  /* Paged states are CUDA managed memory, outside the caching allocator (plan_paged.h). */
  gboolean paged = c == MODEL_MEM_OPTIMIZER_STATE && model_stack_optimizer_is_paged (&p->stack);
  if (!per_param || paged)
    {
      g_array_append_val (out, total);
      return out;
    }
  if (sharded (p, c))
    {
      /* one flat shard per layer (deepseek's dense first layers smaller than its MoE
       * layers), then the root unit's */
      g_autoptr (ModelInventory) inv = model_stack_inventory (s, p->arch);
      double left = total;
      for (guint64 l = 0; l < p->arch->n_layers; l++)
        {
          double layer = layer_share (inv, s, c == MODEL_MEM_WEIGHTS, l) * total;
          g_array_append_val (out, layer);
          left -= layer;
        }
      if (left > 0)
        g_array_append_val (out, left);
      return out;
    }
  if (c == MODEL_MEM_WEIGHTS) /* the (frozen) base as stored, NF4 under QLoRA */
    {
      g_autoptr (GArray) w = model_stack_weight_tensor_bytes (s, p->arch);
      double sum = 0;
      for (guint i = 0; i < w->len; i++)
        sum += g_array_index (w, double, i);
      for (guint i = 0; i < w->len; i++)
        {
          double b = g_array_index (w, double, i) / sum * total;
          g_array_append_val (out, b);
        }
      return out;
    }
  guint states = c == MODEL_MEM_OPTIMIZER_STATE
                     && (p->stack.optimizer == MODEL_OPTIMIZER_ADAMW) ? 2 : 1;
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, p->arch);
  for (guint i = 0; i < inv->tensors->len; i++) /* the trainable tensors, in model order */
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if (!t->trainable)
        continue;
      double b = (double) model_tensor_numel (t) / psi * total / states;
      guint n = (guint) (model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) * states);
      guint first = out->len;
      g_array_set_size (out, first + n); /* one growth per tensor, not one call per copy */
      for (guint k = 0; k < n; k++)
        g_array_index (out, double, first + k) = b;
    }
  return out;
}

GArray *
plan_initial_tensors (const ModelPlan *p, ModelMemCategory c)
{
  double rope = c == MODEL_MEM_WEIGHTS ? plan_rope_table_bytes (p) : 0;
  GArray *out = state_tensors (p, c, p->initial[c] - rope);
  if (rope > 0)
    g_array_append_val (out, rope);
  return out;
}

GArray *
plan_optimizer_workspace_tensors (const ModelPlan *p, double bytes)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  if (!(bytes > 0))
    return out;
  const ModelStack *s = &p->stack;
  gboolean foreach = s->optimizer == MODEL_OPTIMIZER_ADAMW
                     && model_stack_optimizer_impl (s) == MODEL_OPTIMIZER_IMPL_FOREACH
                     && !model_stack_optimizer_is_paged (s);
  g_autoptr (GArray) states = foreach ? plan_initial_tensors (p, MODEL_MEM_OPTIMIZER_STATE)
                                      : NULL;
  if (states == NULL || states->len < 2)
    {
      g_array_append_val (out, bytes);
      return out;
    }
  /* Per parameter: one tensor like each parameter's second moment, every other entry of the
   * (m, v) pairs. Flat shards (one state tensor per unit): one temporary per unit's shard. */
  guint first = 0, stride = 1;
  if (!sharded (p, MODEL_MEM_OPTIMIZER_STATE))
    first = 1, stride = 2;
  double sum = 0;
  for (guint i = first; i < states->len; i += stride)
    sum += g_array_index (states, double, i);
  for (guint i = first; i < states->len; i += stride)
    {
      double b = g_array_index (states, double, i) / sum * bytes;
      g_array_append_val (out, b);
    }
  return out;
}

/* ---- pipeline stage shares (plan_pp.c fills them; here so that plan_step.c reads them
 * without calling plan_pp.c, which calls plan_step.c) ---- */

guint
plan_pp_rank_of (const ModelPlan *p, guint rank)
{
  guint coords[MODEL_MESH_N_DIMS];
  model_mesh_coords (&p->mesh, rank, coords);
  return coords[MODEL_MESH_PP];
}

static double
stage_fraction (const ModelPlan *p, guint s, ModelMemCategory c)
{
  const PlanTp *tp = &p->tp;
  double whole = plan_state_rank_fraction (p, c, tp->trainable - tp->trainable_expert,
                                           tp->trainable_expert, tp->weights - tp->weights_expert,
                                           tp->weights_expert);
  double stage = plan_state_rank_fraction (p, c, p->pp.share[0][s], p->pp.share[1][s],
                                           p->pp.share[2][s], p->pp.share[3][s]);
  return whole > 0 ? stage / whole : 0;
}

double
plan_pp_state_fraction (const ModelPlan *p, guint rank, ModelMemCategory c)
{
  if (p->pp.pp == 1 || p->pp.share[0] == NULL)
    return 1;
  return stage_fraction (p, plan_pp_rank_of (p, rank), c);
}

double
plan_pp_state_fraction_max (const ModelPlan *p, ModelMemCategory c)
{
  if (p->pp.pp == 1 || p->pp.share[0] == NULL)
    return 1;
  double m = 0;
  for (guint s = 0; s < p->pp.pp; s++)
    m = MAX (m, stage_fraction (p, s, c));
  return m;
}

void
plan_pp_stage_params (const ModelPlan *p, guint rank, double *dense, double *expert)
{
  double n = (double) model_stack_trainable_params (&p->stack, p->arch);
  gboolean staged = p->pp.pp > 1 && p->pp.share[0] != NULL;
  guint s = staged ? plan_pp_rank_of (p, rank) : 0;
  *dense = n * (staged ? p->pp.share[0][s] : p->tp.trainable - p->tp.trainable_expert);
  *expert = n * (staged ? p->pp.share[1][s] : p->tp.trainable_expert);
}

/* ---- Transformer Engine's dummy weight gradients ---- */

/* Megatron's module (one weight, one get_dummy_wgrad call) an inventory tensor is part of:
 * Megatron fuses q, k and v into linear_qkv (attention.py SelfAttention) and SwiGLU's gate
 * and up into linear_fc1 (mlp.py MLP, experts.py TEGroupedMLP, shared_experts.py), whose
 * rows are the parts' rows stacked; every other linear weight is a module of its own.
 * -1: not a linear whose weight gradient goes to main_grad (norms, biases, the embedding
 * — F.embedding's dense gradient is real —, the router, whose RouterGatingLinearFunction
 * returns a real gradient, a shared expert's gate, adapters, quantization constants). */
static gint
wgrad_module (const ModelTensor *t)
{
  if (t->is_bias || !t->trainable || t->ndim != 2)
    return -1;
  switch (t->role)
    {
    case MODEL_TENSOR_Q:
    case MODEL_TENSOR_K:
    case MODEL_TENSOR_V:
    case MODEL_TENSOR_QKV:
      return MODEL_TENSOR_QKV;
    case MODEL_TENSOR_MLP_GATE:
    case MODEL_TENSOR_MLP_UP:
      return MODEL_TENSOR_MLP_UP;
    case MODEL_TENSOR_SHARED_GATE:
    case MODEL_TENSOR_SHARED_UP:
      return MODEL_TENSOR_SHARED_UP;
    case MODEL_TENSOR_Q_A:
    case MODEL_TENSOR_Q_B:
    case MODEL_TENSOR_KV_A:
    case MODEL_TENSOR_KV_B:
    case MODEL_TENSOR_ATTN_OUT:
    case MODEL_TENSOR_MLP_DOWN:
    case MODEL_TENSOR_SHARED_DOWN:
    case MODEL_TENSOR_HEAD:
    case MODEL_TENSOR_MTP_EH_PROJ:
      return (gint) t->role;
    default:
      return -1;
    }
}

/* Whether pipeline rank `pp_rank` holds tensor `t` (every rank without pp): a decoder
 * layer's or MTP depth's in one of its virtual stages, the embedding where a stage holds
 * it, the head where a stage holds the loss. */
static gboolean
wgrad_held (const ModelPlan *p, const ModelInventory *inv, const ModelTensor *t, guint pp_rank)
{
  if (p->pp.pp == 1 || p->pp.part == NULL)
    return model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) > 0;
  guint64 L = p->arch->n_layers, d0 = 0;
  for (guint k = 0; k < p->pp.part->stages->len; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (p->pp.part, k);
      gboolean mine = st->rank == pp_rank;
      if (mine && t->layer == MODEL_TENSOR_ROOT && (t->after_layers ? st->loss : st->embedding))
        return TRUE;
      if (mine && t->layer != MODEL_TENSOR_ROOT
          && (model_inventory_copies_in_layers (inv, t, st->first_layer,
                                                st->first_layer + st->n_layers) > 0
              || (st->n_mtp > 0
                  && model_inventory_copies_in_layers (inv, t, L + d0, L + d0 + st->n_mtp) > 0)))
        return TRUE;
      d0 += st->n_mtp;
    }
  return FALSE;
}

/* Whether pipeline rank `pp_rank` computes the loss (the output layer's GEMM). */
static gboolean
wgrad_has_loss (const ModelPlan *p, guint pp_rank)
{
  if (p->pp.pp == 1 || p->pp.part == NULL)
    return TRUE;
  for (guint k = 0; k < p->pp.part->stages->len; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (p->pp.part, k);
      if (st->rank == pp_rank && st->loss)
        return TRUE;
    }
  return FALSE;
}

/* Whether tensors `a` and `b` are of one block of the inventory (the same layers and copies):
 * parts of one fused module. */
static gboolean
same_block (const ModelTensor *a, const ModelTensor *b)
{
  return a->layer == b->layer && a->from_layer == b->from_layer && a->to_layer == b->to_layer
         && a->count == b->count && a->after_layers == b->after_layers;
}

typedef struct
{
  guint64 rows, cols;
} WgradShape;

GArray *
plan_wgrad_dummy_tensors (const ModelPlan *p, guint rank)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  const ModelStack *s = &p->stack;
  if (!s->framework.wgrad_dummy || !model_stack_main_grad_fp32 (s))
    return out;
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, p->arch);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelTpLayout) layout = model_tp_layout_new (inv, &p->mesh, 1.0, &error);
  g_assert (layout != NULL); /* plan_tp_validate ran model_tp_check */
  guint pp_rank = plan_pp_rank_of (p, rank);
  /* Megatron's modules on this rank, as the (rows, columns) of one tp (etp) rank's weight:
   * the parts of a fused module are consecutive entries of one block of the inventory
   * (inventory.h's order: q, k, v; gate, up), so a run of them is one weight. */
  g_autoptr (GArray) shapes = g_array_new (FALSE, FALSE, sizeof (WgradShape));
  gint open = -1;
  const ModelTensor *first = NULL;
  WgradShape cur = { 0, 0 };
  for (guint i = 0; i <= inv->tensors->len; i++)
    {
      const ModelTensor *t = i < inv->tensors->len ? model_inventory_tensor (inv, i) : NULL;
      gint m = -1;
      if (t != NULL && wgrad_held (p, inv, t, pp_rank))
        m = wgrad_module (t);
      /* a tied model's output layer multiplies by the embedding's weight (gpt_model.py
       * shared_embedding_or_output_weight): its dummy has the embedding's shape */
      if (t != NULL && m < 0 && p->arch->tied_embeddings && t->role == MODEL_TENSOR_EMBEDDING
          && t->trainable && wgrad_has_loss (p, pp_rank))
        m = MODEL_TENSOR_HEAD;
      const ModelTpTensor *x = m >= 0 ? &g_array_index (layout->tensors, ModelTpTensor, i)
                                      : NULL;
      gboolean joins = m >= 0 && m == open && m != MODEL_TENSOR_HEAD && same_block (first, t)
                       && x->local_shape[1] == cur.cols;
      if (!joins && open >= 0)
        {
          g_array_append_val (shapes, cur);
          open = -1;
        }
      if (m < 0)
        continue;
      if (joins)
        cur.rows += x->local_shape[0];
      else
        {
          open = m, first = t;
          cur = (WgradShape){ x->local_shape[0], x->local_shape[1] };
        }
    }
  /* one buffer per distinct shape (the cache's key is (shape, dtype); one dtype here) */
  double e = model_stack_weight_bytes (s);
  for (guint a = 0; a < shapes->len; a++)
    {
      const WgradShape *w = &g_array_index (shapes, WgradShape, a);
      gboolean seen = FALSE;
      for (guint b = 0; b < a && !seen; b++)
        {
          const WgradShape *q = &g_array_index (shapes, WgradShape, b);
          seen = q->rows == w->rows && q->cols == w->cols;
        }
      if (!seen)
        {
          double bytes = (double) w->rows * (double) w->cols * e;
          g_array_append_val (out, bytes);
        }
    }
  return out;
}
