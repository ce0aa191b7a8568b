/* models/plan/plan_tp.c — Megatron tensor (and sequence) parallelism in the plan: what one
 * tp rank holds and runs, from models/parallel/tensor_parallel.h.
 *
 *   model states  the fractions of the whole model's trainable parameters and stored weight
 *                 bytes a rank holds (the layout's column/row/vocab splits, replicated norms
 *                 and row-parallel biases, the vocabulary padded to 128·tp); plan_state.c
 *                 and plan.c scale the single-rank sizes by them before the data-parallel
 *                 mode's own sharding over dp_shard (torchtitan 2-D FSDP + TP: FSDP flattens
 *                 the TP-local tensor; Megatron's distributed optimizer its TP-local buffers)
 *   kernels       one rank's shapes: a copy of the arch with a/tp query heads, the KV heads a
 *                 rank's attention holds, i/tp MLP inner size and V_padded/tp vocabulary, so
 *                 the op graph builds the per-rank GEMMs (wave quantization sees them) and
 *                 FlashAttention over a/tp heads (Shoeybi et al. 2019 §3); with SP the
 *                 sequence region's point-wise kernels (norms, residual dropouts and
 *                 adds) on the rank's s/t tokens (Korthikanti et al. 2022 §4.2.2)
 *   activations   the full layer graph sharded by model_tp_shard_graph (Korthikanti et al.
 *                 2022 Table 2 exact for GPT settings), under every checkpointing policy;
 *                 with SP a fully checkpointed layer keeps its sequence shard (2sbh/t)
 *   collectives   each block's tp collectives per micro-batch and pass (model_tp_*_comms),
 *                 scheduled by plan_step.c on MODEL_STREAM_TP; SP's gradient all-reduce.
 * MoE layers under tp (with SP, as Megatron requires): the attention and norms as above,
 * the router and experts on the rank's s/tp tokens (the graph's MoE tensors are of the
 * sequence region, tensor_parallel.h model_tp_act_region_of; the expert GEMMs are
 * plan_ep.c's, the experts split over etp, not tp). A MoE layer's shared expert
 * (Qwen2-MoE's shared_expert with its sigmoid gate, DeepSeek's n_shared_experts;
 * Megatron-LM megatron/core/transformer/moe/shared_experts.py SharedExpertMLP, an MLP on
 * the tp group) is sharded as the dense MLP: gate/up column- and down row-parallel, so the
 * rank's arch holds shared_expert_size/tp and its GEMMs run on every token of the gathered
 * sequence at that width; its own all-gather and reduce-scatter (model_tp_layer_comms),
 * its inner activations split over tp and its output, gate and sum with the routed
 * output on the sequence shard; the gate weight replicated (its gradient in SP's
 * all-reduce), its h → 1 GEMM on the rank's s/tp tokens. MLA (DeepSeek-V2/V3;
 * Megatron-LM multi_latent_attention.py MLASelfAttention): the rank's arch holds nh/tp
 * heads, so q_proj / q_b_proj and kv_b_proj run on every token at nh/tp heads,
 * FlashAttention over nh/tp heads of q·k width dn + dr and value width dv, o_proj on
 * nh/tp·dv inputs; the duplicated down projections (q_a_proj, kv_a_proj_with_mqa) on the
 * rank's s/tp tokens at their whole width, the latent norms likewise (sequence_gemm,
 * shard_sequence_ops); their weights whole, their gradients in SP's all-reduce; the
 * latents' gathers are model_tp_layer_comms'. Approximate: DeepSeek's leading dense layers
 * (first_k_dense_replace) run the plan's one layer cost and tp collectives, a MoE layer's
 * (their dense MLP's all-gather and reduce-scatter equal the shared expert's X each; their
 * GEMMs are the MoE layer's); LoRA adapters on MLA's duplicated down projections run on
 * every token and keep their r-wide A·x whole (their bases read the s/tp shard). Not
 * modelled: --moe-shared-expert-overlap (the shared expert
 * on a side stream beside the dispatch: here in line, Megatron's default), the head's
 * sequence shard under SP (its final-norm and head-input activations are counted whole). */
#include "config.h"
#include "models/plan/plan-private.h"

#include <string.h>

#include "models/arch/inventory.h"
#include "models/parallel/tensor_parallel.h"

const ModelArch *
plan_cost_arch (const ModelPlan *p)
{
  return p->tp.arch != NULL ? p->tp.arch : p->arch;
}

static ModelTpCommParams
comm_params (const ModelStack *s, const ModelParallel *par)
{
  return (ModelTpCommParams){ .tp = MAX (par->tp, 1), .sp = par->sequence_parallel,
                              .micro_batch = s->micro_batch,
                              .seq_len = s->seq_len / MAX (par->cp, 1), /* a cp rank's */
                              .act_bytes = model_stack_activation_bytes (s) };
}

/* See plan-private.h. */
ModelGraph *
plan_tp_layer_graph (const ModelArch *arch, const ModelStack *s, const ModelParallel *par,
                     GError **error)
{
  ModelCostParams cp = model_stack_cost_params (s);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, &cp);
  guint64 k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  return model_tp_shard_graph (g, par->tp, par->sequence_parallel, k, s->seq_len, error);
}

gboolean
plan_tp_validate (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                  GError **error)
{
  if (par->tp <= 1)
    return TRUE;
  if (arch->n_experts > 0 && !par->sequence_parallel)
    {
      /* megatron/core/transformer/moe/moe_layer.py MoELayer.forward raises in training
       * when the attention is tensor-parallel without sequence parallelism */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'sequence_parallel': tp = %u with the experts of "
                   "model '%s' needs sequence_parallel = true (Megatron-LM's MoE layer "
                   "refuses tensor parallelism without it)", par->tp, arch->name);
      return FALSE;
    }
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  if (!model_tp_check (arch, &mesh, error))
    return g_prefix_error (error, "group [parallel], key 'tp': "), FALSE;
  /* Megatron-LM's sequence parallelism scatters the sequence dimension evenly over the tp
   * ranks (megatron/core/tensor_parallel/mappings.py _split_along_first_dim asserts
   * divisibility): the sequence length is what is wrong, so name it. */
  if (stack->seq_len % model_tp_seq_multiple (par->tp, par->sequence_parallel) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'seq_len': seq_len = %" G_GUINT64_FORMAT " is not a "
                   "multiple of [parallel] tp = %u, which [parallel] sequence_parallel = true "
                   "needs (sequence parallelism splits the sequence evenly over the "
                   "tensor-parallel ranks)", stack->seq_len, par->tp);
      return FALSE;
    }
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelGraph) sg = plan_tp_layer_graph (arch, stack, par, &e);
  if (sg == NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'tp': %s", e->message);
      return FALSE;
    }
  return TRUE;
}

/* Which tensors a count covers: those of `scope`, or (range) those of the decoder layers
 * [from, to) plus the embedding (embed) and the head (head) roots; all of them, or only the
 * routed experts' (expert 1) or only the others (expert 0). */
typedef struct
{
  gboolean range;
  ModelInventoryScope scope;
  guint64 from, to;
  gboolean embed, head;
  gint expert; /* -1 both, 0 dense, 1 expert */
} Selection;

static guint64
selected_copies (const ModelInventory *inv, const ModelTensor *t, const Selection *sel)
{
  if (!sel->range)
    return model_inventory_copies (inv, t, sel->scope);
  if (t->layer == MODEL_TENSOR_ROOT)
    return (t->after_layers ? sel->head : sel->embed) ? t->count : 0;
  return model_inventory_copies_in_layers (inv, t, sel->from, sel->to);
}

/* Σ over the selected tensors (trainable ones only, or all) of copies × what one rank
 * holds, over the whole model's Σ of copies × size of all tensors of `whole_scope`, as
 * elements (trainable) or stored bytes at one byte per weight element (NF4 0.5); 1 where
 * the whole holds none. */
static double
selected_fraction (const ModelTpLayout *layout, const ModelInventory *inv, const Selection *sel,
                   ModelInventoryScope whole_scope, gboolean trainable)
{
  double local = 0, whole = 0;
  for (guint i = 0; i < layout->tensors->len; i++)
    {
      const ModelTpTensor *x = &g_array_index (layout->tensors, ModelTpTensor, i);
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if ((trainable && !t->trainable) || !model_tensor_is_parameter (t))
        continue; /* QLoRA's constants are no weights (category quantization) */
      /* weights are the frozen base under LoRA (category weights, model_stack_initial_bytes):
       * the adapters, category lora, are the trainable parameters' share. Counting them
       * here scaled the base's bytes by a ratio of base + adapters, a fraction of a byte off
       * (and 23 MB too many for Mixtral's attention adapters under ep 8) */
      if (!trainable && (t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B))
        continue;
      double unit = trainable ? 1.0 : x->element_bytes;
      whole += (double) model_inventory_copies (inv, t, whole_scope)
               * (double) model_tensor_numel (t) * unit;
      if (sel->expert >= 0 && x->expert != (sel->expert == 1))
        continue;
      double copies = (double) selected_copies (inv, t, sel);
      local += copies / (x->expert ? layout->ep : 1) * x->tp_bytes / x->element_bytes * unit;
    }
  return whole > 0 ? local / whole : 1.0;
}

/* The fraction of `scope`'s trainable parameters (elements) or stored weight bytes one rank
 * holds. */
static double
fraction (const ModelTpLayout *layout, const ModelInventory *inv, ModelInventoryScope scope,
          gboolean trainable)
{
  Selection sel = { .scope = scope, .expert = -1 };
  return selected_fraction (layout, inv, &sel, scope, trainable);
}

void
plan_tp_stage_fractions (const ModelPlan *p, guint64 from_layer, guint64 to_layer,
                         gboolean embed, gboolean head, gboolean trainable, double *dense,
                         double *expert)
{
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelTpLayout) layout = model_tp_layout_new (inv, &p->mesh, 1.0, &error);
  g_assert (layout != NULL); /* plan_tp_validate ran model_tp_check */
  Selection sel = { .range = TRUE, .from = from_layer, .to = to_layer, .embed = embed,
                    .head = head, .expert = 0 };
  *dense = selected_fraction (layout, inv, &sel, MODEL_INVENTORY_ALL, trainable);
  sel.expert = 1;
  *expert = selected_fraction (layout, inv, &sel, MODEL_INVENTORY_ALL, trainable);
  if (!model_mesh_expert_dp_own (&p->mesh)) /* experts shard as the rest */
    *dense += *expert, *expert = 0;
}

static void
init_comms (PlanTp *tp, const ModelArch *arch, const ModelTpCommParams *cp)
{
  for (guint b = 0; b < 3; b++)
    for (guint d = 0; d < 2; d++)
      {
        GArray *a = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
        ModelTpPass pass = d == 0 ? MODEL_TP_FORWARD : MODEL_TP_BACKWARD;
        if (b == PLAN_TP_EMBEDDING)
          model_tp_embedding_comms (arch, cp, pass, a);
        else if (b == PLAN_TP_LAYER)
          model_tp_layer_comms (arch, cp, pass, a);
        else
          model_tp_head_comms (arch, cp, pass, a);
        tp->comms[b][d] = a;
      }
}

void
plan_tp_init (ModelPlan *p)
{
  PlanTp *tp = &p->tp;
  *tp = (PlanTp){ .tp = MAX (p->par.tp, 1), .trainable = 1, .trainable_layer = 1,
                  .trainable_root = 1, .trainable_embed = 1, .trainable_mtp = 1,
                  .weights = 1, .weights_layer = 1,
                  .weights_root = 1, .weights_embed = 1, .quant = 1 };
  /* Under expert parallelism alone (tp = 1) the layout still divides the experts' tensors
   * by mesh.ep and mesh.etp (plan_ep.c): the fractions (the vocabulary padded to 128 as
   * Megatron pads it), not the kernels or collectives. */
  if (tp->tp <= 1 && p->mesh.ep * p->mesh.etp <= 1)
    return;
  tp->sp = p->par.sequence_parallel;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelTpLayout) layout = model_tp_layout_new (inv, &p->mesh, 1.0, &error);
  g_assert (layout != NULL); /* plan_tp_validate ran model_tp_check */
  tp->trainable = fraction (layout, inv, MODEL_INVENTORY_ALL, TRUE);
  if (model_mesh_expert_dp_own (&p->mesh)) /* their own data-parallel group */
    {
      Selection experts = { .scope = MODEL_INVENTORY_ALL, .expert = 1 };
      tp->trainable_expert = selected_fraction (layout, inv, &experts, MODEL_INVENTORY_ALL, TRUE);
      tp->weights_expert = selected_fraction (layout, inv, &experts, MODEL_INVENTORY_ALL, FALSE);
    }
  tp->trainable_layer = fraction (layout, inv, MODEL_INVENTORY_LAYER, TRUE);
  tp->trainable_root = fraction (layout, inv, MODEL_INVENTORY_ROOT, TRUE);
  tp->trainable_embed = fraction (layout, inv, MODEL_INVENTORY_EMBED, TRUE);
  tp->trainable_mtp = fraction (layout, inv, MODEL_INVENTORY_MTP, TRUE);
  tp->weights = fraction (layout, inv, MODEL_INVENTORY_ALL, FALSE);
  tp->weights_layer = fraction (layout, inv, MODEL_INVENTORY_LAYER, FALSE);
  tp->weights_root = fraction (layout, inv, MODEL_INVENTORY_ROOT, FALSE);
  tp->weights_embed = fraction (layout, inv, MODEL_INVENTORY_EMBED, FALSE);
  double constants = model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_ALL);
  if (constants > 0)
    tp->quant = model_tp_layout_constant_bytes (layout, inv, MODEL_INVENTORY_ALL, FALSE)
                / constants;
  if (tp->tp <= 1)
    return;
  if (tp->sp) /* Megatron's main_grad (fp32 under its default) or the gradients' dtype */
    tp->sp_grad_bytes = (double) model_tp_sp_grad_numel (layout, inv)
                        * (model_stack_main_grad_fp32 (&p->stack)
                             ? 4.0
                             : model_stack_gradient_bytes (&p->stack));
  ModelArch *a = model_arch_copy (p->arch);
  a->n_heads = layout->q_heads;
  a->n_kv_heads = layout->kv_heads;
  if (p->arch->n_experts == 0) /* a MoE's experts split over etp (1), not tp */
    a->intermediate_size /= tp->tp;
  else /* its shared expert over tp as a dense MLP (shared_experts.py SharedExpertMLP) */
    a->shared_expert_size /= tp->tp;
  a->deepseek.dense_intermediate_size /= tp->tp; /* DeepSeek's dense layers' MLP */
  a->vocab_size = layout->vocab / tp->tp;
  tp->arch = a;
  ModelTpCommParams cp = comm_params (&p->stack, &p->par);
  init_comms (tp, p->arch, &cp);
}

void
plan_tp_clear (PlanTp *tp)
{
  g_clear_pointer (&tp->arch, model_arch_free);
  for (guint b = 0; b < 3; b++)
    for (guint d = 0; d < 2; d++)
      g_clear_pointer (&tp->comms[b][d], g_array_unref);
}

void
plan_tp_layer_memory (const ModelPlan *p, ModelBlockCost *layer)
{
  if (p->tp.tp <= 1)
    return;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelGraph) sg = plan_tp_layer_graph (p->arch, &p->stack, &p->par, &error);
  g_assert (sg != NULL); /* plan_tp_validate */
  ModelCostParams cp = model_stack_cost_params (&p->stack);
  gboolean compile = cp.compile;
  double saved = model_graph_saved (sg, MODEL_GRAPH_KEEP_ALL, compile, NULL, 0, NULL);
  layer->act_saved = saved + model_cost_layer_weight_cache (p->tp.arch, &cp);
  layer->act_selective
    = saved - model_graph_saved (sg, MODEL_GRAPH_KEEP_NON_SELECTIVE, compile, NULL, 0, NULL);
  layer->act_keep_matmul = model_graph_saved (sg, MODEL_GRAPH_KEEP_MATMUL, compile, NULL, 0, NULL);
  layer->act_pointwise
    = saved - model_graph_saved (sg, MODEL_GRAPH_KEEP_MATMUL_SAVED, compile, NULL, 0, NULL);
  /* Under SP a checkpointed layer's input is its sequence shard (Korthikanti Table 2, full
   * recompute with SP: 2sbh/t; Megatron checkpoints the scattered hidden states). */
  if (p->tp.sp)
    layer->act_checkpoint /= p->tp.tp;
}

/* Whether kernel `name` of graph `g` is a point-wise kernel writing a tensor of the
 * sequence region (norms, residual dropouts and adds: outside the tp-parallel blocks). The
 * passes name their ops by kernel ("norm1"), the graph its ops by operator ("layer_norm"). */
static gboolean
sequence_op (const ModelGraph *g, const char *name)
{
  for (guint i = 0; i < g->ops->len; i++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, i);
      if (!op->launches || op->kernel.op_class != MODEL_OP_ELEMENTWISE
          || strcmp (op->kernel.name, name) != 0)
        continue;
      const ModelGraphTensor *t = &g_array_index (g->tensors, ModelGraphTensor, op->out);
      ModelTpActRegion region;
      return model_tp_act_region_of (t->name, model_tp_graph_is_moe (g), &region)
             && region == MODEL_TP_ACT_SEQUENCE;
    }
  return FALSE;
}

/* The replicated GEMMs that read the rank's sequence shard under SP (graph_layer.c names):
 * the shared expert's sigmoid gate (shared_experts.py SharedExpertMLP.forward:
 * linear(hidden_states, gate_weight) on the shard the MoE layer got, before fc1's gather)
 * and MLA's down projections (multi_latent_attention.py: linear_q_down_proj and
 * linear_kv_down_proj, TELinear parallel_mode 'duplicated', on the shard). */
static gboolean
sequence_gemm (const char *name)
{
  static const char *const names[] = { "shared_expert_gate", "q_a_proj", "kv_a_proj_with_mqa",
                                       NULL };
  return g_strv_contains (names, name);
}

/* GEMM `op` (T tokens × k → n) on the rank's T/tp tokens: its FLOPs and activation traffic
 * ÷ tp, its weight read whole, its pass factor (forward 1, backward 2) kept; the model
 * FLOPs follow. */
static void
shard_sequence_gemm (ModelPass *pass, ModelOp *op, double tp, double e, double w)
{
  const HwKernelShape *o = &op->shape;
  double fwd = 2 * o->m * o->n * o->k * MAX (o->batch, 1);
  double factor = fwd > 0 ? op->flops / fwd : 1;
  double flops = op->flops / tp;
  pass->model_flops += flops - op->flops;
  op->shape.m = o->m / tp;
  op->flops = flops;
  op->bytes = factor * (e * op->shape.m * o->k + w * o->k * o->n + e * op->shape.m * o->n);
}

static void
shard_sequence_ops (const ModelGraph *g, ModelPass *pass, double tp, double e, double w)
{
  pass->flops = pass->bytes = 0;
  for (guint i = 0; i < pass->n_ops; i++)
    {
      ModelOp *op = &pass->ops[i];
      if (op->op_class == MODEL_OP_GEMM && sequence_gemm (op->name))
        shard_sequence_gemm (pass, op, tp, e, w);
      else if (op->op_class == MODEL_OP_ELEMENTWISE && sequence_op (g, op->name))
        { /* the norm's weight read (2h elements) is divided too: negligible */
          op->flops /= tp;
          op->bytes /= tp;
        }
      pass->flops += op->flops;
      pass->bytes += op->bytes;
    }
}

void
plan_tp_layer_kernels (const ModelPlan *p, ModelBlockCost *layer)
{
  if (p->tp.tp <= 1 || !p->tp.sp)
    return;
  ModelCostParams cp = model_stack_cost_params (&p->stack);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (p->tp.arch, &cp);
  double t = p->tp.tp;
  shard_sequence_ops (g, &layer->fwd, t, cp.act_bytes, cp.weight_bytes);
  shard_sequence_ops (g, &layer->bwd, t, cp.act_bytes, cp.weight_bytes);
  shard_sequence_ops (g, &layer->pointwise_fwd, t, cp.act_bytes, cp.weight_bytes);
}

guint
plan_tp_saved_tensors (const ModelPlan *p, PlanSavedSet which, double *sizes, guint max)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelGraph) sg = plan_tp_layer_graph (p->arch, &p->stack, &p->par, &error);
  g_assert (sg != NULL);
  return plan_graph_saved_tensors (p, sg, which, sizes, max);
}

guint
plan_graph_saved_tensors (const ModelPlan *p, const ModelGraph *sg, PlanSavedSet which,
                          double *sizes, guint max)
{
  ModelCostParams cp = model_stack_cost_params (&p->stack);
  guint n = 0;
  switch (which)
    {
    case PLAN_SAVED_SELECTIVE_KEPT:
      model_graph_saved (sg, MODEL_GRAPH_KEEP_NON_SELECTIVE, cp.compile, sizes, max, &n);
      break;
    case PLAN_SAVED_SELECTIVE_RECREATED:
      model_graph_recreated (sg, MODEL_GRAPH_KEEP_NON_SELECTIVE, cp.compile, sizes, max, &n);
      break;
    case PLAN_SAVED_MATMUL_KEPT:
      model_graph_saved (sg, MODEL_GRAPH_KEEP_MATMUL, cp.compile, sizes, max, &n);
      break;
    case PLAN_SAVED_POINTWISE_RECREATED:
      model_graph_recreated (sg, MODEL_GRAPH_KEEP_MATMUL_SAVED, cp.compile, sizes, max, &n);
      break;
    case PLAN_SAVED_ALL:
    default:
      model_graph_saved (sg, MODEL_GRAPH_KEEP_ALL, cp.compile, sizes, max, &n);
      break;
    }
  return MIN (n, max);
}

guint
plan_tp_issue (ModelPlan *p, guint rank, PlanTpBlock block, guint pass, gint only, guint after,
               gint layer, gint micro_batch)
{
  const GArray *comms = p->tp.comms[block][pass];
  guint last = after;
  for (guint i = 0; comms != NULL && i < comms->len; i++)
    {
      const ModelTpComm *m = &g_array_index (comms, ModelTpComm, i);
      if (only >= 0 && (gint) m->overlapped != only)
        continue;
      guint id = plan_collective_on (p, rank, MODEL_STREAM_TP, MODEL_MESH_BIT (m->dim), m->kind,
                                     m->bytes, layer, micro_batch, m->name);
      if (id == G_MAXUINT)
        continue;
      plan_task_dep (p, last);
      last = id;
    }
  return last;
}
