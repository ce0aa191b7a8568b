/* models/plan/plan_ckpt.c — activation checkpointing inside one rank's schedule (plan_step.c):
 * what each layer's forward keeps under none / full / selective / selective_op / every_k /
 * sqrt, the
 * recompute tasks its backward needs, and one layer's parameter and saved-activation
 * tensors. Selective: Korthikanti et al. 2022 §5; full and √L segments: Chen et al. 2016
 * (arXiv 1604.06174) §3. */
#include "config.h"
#include "models/plan/plan_step-private.h"

#include <math.h>
#include "models/parallel/context_parallel.h"
#include "models/parallel/tensor_parallel.h"

/* ---- activation checkpointing ----------------------------------------------------------- */

/* Whether layer l keeps only its input and is recomputed whole. */
static gboolean
checkpointed (const StepCtx *c, guint l)
{
  switch (c->ckpt)
    {
    case MODEL_CHECKPOINTING_FULL:
      return TRUE;
    case MODEL_CHECKPOINTING_EVERY_K:
    case MODEL_CHECKPOINTING_SQRT:
      return l % c->segment == 0;
    default:
      return FALSE;
    }
}

/* B of a checkpointed layer's input. Under autocast on an fp32 model the residual stream
 * between layers is fp32: the embedding's output is (fp32 table; embedding is on no
 * autocast list), the norms run and return fp32 (layer_norm is on autocast's fp32 list,
 * aten/src/ATen/autocast_mode.cpp; HF's LlamaRMSNorm computes in fp32 and multiplies by its
 * fp32 weight, transformers models/llama/modeling_llama.py), and each residual add of an
 * fp32 and a 16-bit tensor promotes to fp32. So the tensor a checkpoint keeps is 4 B an
 * element there, not the cost model's e (models/ops/cost.c act_checkpoint = e·T·h). */
static double
checkpoint_bytes (const StepCtx *c)
{
  const ModelStack *s = &c->p->stack;
  double e = model_stack_activation_bytes (s);
  double stream = model_stack_autocast (s) ? 4.0 : e;
  return c->pc->layer.act_checkpoint * stream / e;
}

/* Bytes layer l's forward keeps for the backward. Under √L segments a segment's inner
 * layers keep nothing: the segment is recomputed from its first layer's input. */
static double
stored_bytes (const StepCtx *c, guint l)
{
  const ModelBlockCost *lc = &c->pc->layer;
  if (checkpointed (c, l))
    return checkpoint_bytes (c);
  if (c->ckpt == MODEL_CHECKPOINTING_SQRT)
    return 0;
  if (c->ckpt == MODEL_CHECKPOINTING_SELECTIVE)
    return lc->act_saved - lc->act_selective;
  if (c->ckpt == MODEL_CHECKPOINTING_SELECTIVE_OP)
    return lc->act_keep_matmul;
  return lc->act_saved;
}

/* Allocates what layer l's forward keeps: its saved tensors one by one when it keeps them
 * all or under (op-level) selective recompute (the ones it does not recompute: each its own
 * allocation in PyTorch, so each its own caching-allocator block), else one block (a
 * checkpointed input, which is one tensor). */
guint
plan_step_store_activations (StepCtx *c, guint l)
{
  double bytes = stored_bytes (c, l);
  if (bytes == c->pc->layer.act_saved)
    return plan_task_alloc_tensors (c->p, MODEL_MEM_ACTIVATIONS, c->saved_tensors,
                                    c->n_saved_tensors, MODEL_EFFECT_AT_START);
  if (c->ckpt == MODEL_CHECKPOINTING_SELECTIVE || c->ckpt == MODEL_CHECKPOINTING_SELECTIVE_OP)
    return plan_task_alloc_tensors (c->p, MODEL_MEM_ACTIVATIONS, c->kept_tensors,
                                    c->n_kept_tensors, MODEL_EFFECT_AT_START);
  return plan_task_alloc (c->p, MODEL_MEM_ACTIVATIONS, bytes, MODEL_EFFECT_AT_START);
}

/* Autocast's weight cache under checkpointing. torch.autocast casts an fp32 leaf that
 * requires grad once per autocast region and keeps the copy in a thread-local cache until
 * the outermost region exits (PyTorch aten/src/ATen/autocast_mode.cpp, cached_cast: the
 * can_try_cache rule — to the low-precision type, fp32, requires_grad, leaf — does not look
 * at grad mode, so a checkpointed forward under no_grad fills it too;
 * clear_autocast_cache() when autocast_decrement_nesting() reaches 0,
 * torch/amp/autocast_mode.py __exit__). HF Trainer wraps forward and loss in one region and
 * calls backward outside it (transformers trainer.py, training_step / compute_loss under
 * autocast_smart_context_manager), so a checkpointed layer's cast weights stay allocated
 * until the head's forward ends, although the layer keeps only its input for the backward.
 * The recompute runs in a region of its own (torch/utils/checkpoint.py,
 * CheckpointFunction.backward re-enters torch.autocast with the forward's state), whose
 * copies the recomputed graph holds: those are in the layer's saved tensors already.
 * Frozen weights (requires_grad false: LoRA's base) are cast per use and never cached, so
 * under an adapter method only the adapters' copies are. */
static double
autocast_cache_bytes (const StepCtx *c)
{
  const ModelStack *s = &c->p->stack;
  double per_param = model_stack_weight_cache_bytes (s);
  if (per_param == 0)
    return 0;
  if (s->finetune.method == MODEL_FINETUNE_NONE)
    {
      ModelCostParams cp = model_stack_cost_params (s);
      cp.weight_cache_bytes = per_param;
      return model_cost_layer_weight_cache (plan_cost_arch (c->p), &cp);
    }
  double elems = 0; /* the layer's trainable tensors: its adapters */
  for (guint i = 0; i < c->n_grad_tensors; i++)
    elems += c->grad_tensor_elems[i];
  return per_param * elems;
}

guint
plan_step_autocast_cache (StepCtx *c, guint l)
{
  /* A layer keeping all its saved tensors (or selective's remainder, which holds the cast
   * weights) already holds the copies until its backward. */
  if (c->ckpt == MODEL_CHECKPOINTING_NONE || c->ckpt == MODEL_CHECKPOINTING_SELECTIVE
      || stored_bytes (c, l) == c->pc->layer.act_saved)
    return 0;
  double bytes = autocast_cache_bytes (c);
  return bytes > 0 ? plan_task_alloc (c->p, MODEL_MEM_ACTIVATIONS, bytes, MODEL_EFFECT_AT_START)
                   : 0;
}

/* The head's cast weight under autocast: F.linear casts the fp32 head matrix to the 16-bit
 * type (aten/src/ATen/autocast_mode.cpp, cached_cast; linear is on the lower-precision
 * list) and mm's backward keeps that copy for the input gradient (torch/csrc/autograd/
 * FunctionsManual.cpp, mm_mat1_backward uses mat2), so it lives from the head's forward to
 * its backward — cached (a trainable leaf) or not (frozen, as PEFT's
 * prepare_model_for_kbit_training leaves an fp32 lm_head that bitsandbytes never
 * quantizes: transformers integrations/bitsandbytes.py get_keys_to_not_convert). A tied
 * head casts the embedding matrix. B; 0 without autocast. */
double
plan_step_head_cast_bytes (const StepCtx *c)
{
  const ModelArch *a = plan_cost_arch (c->p); /* a tp rank's vocabulary shard */
  double per_param = model_stack_weight_cache_bytes (&c->p->stack);
  double matrix = a->tied_embeddings ? (double) a->vocab_size * (double) a->hidden_size
                                     : (double) model_arch_n_params_lm_head (a);
  return per_param * matrix;
}

typedef enum
{
  RECOMPUTE_LAYER,     /* the whole forward, re-creating act_saved */
  RECOMPUTE_SELECTIVE, /* selective: the attention core (or recompute_modules), re-creating
                          what it saves */
  RECOMPUTE_POINTWISE, /* op-level selective: the point-wise ops, from the kept matmul outputs */
} RecomputeWhat;

/* A recompute task for layer l. */
static void
recompute (StepCtx *c, guint l, RecomputeWhat what)
{
  ModelPlan *p = c->p;
  const ModelBlockCost *lc = &c->pc->layer;
  static const char *const label[] = { "", " selective", " pointwise" };
  /* Megatron's full recompute reruns the forward, its tp collectives included
   * (tensor_parallel/random.py CheckpointFunction.backward calls run_function again), placed
   * as the forward's (plan_tp_overlap.c): before, beside and after the task. */
  guint prev = plan_last_on_stream (p, c->rank, MODEL_STREAM_COMPUTE), tp_start = prev;
  if (what == RECOMPUTE_LAYER)
    {
      tp_start = plan_tp_overlap_issue (p, c->rank, PLAN_TP_LAYER, MODEL_TP_FORWARD,
                                        PLAN_TP_PART_BEFORE, prev, (gint) l, c->mb);
      if (tp_start != prev)
        c->tp_wait = tp_start;
    }
  /* the rerun attention's cp collectives (the ring's K/V sends, all-gather's K/V, Ulysses's
   * all-to-alls run inside TE's context-parallel attention): a full recompute reruns the
   * forward, a selective one the attention core (Megatron's default core_attn: TE
   * DotProductAttention under checkpoint_core_attention) */
  guint modules = p->stack.recompute_modules;
  gboolean cp_rerun = what == RECOMPUTE_LAYER
                      || (what == RECOMPUTE_SELECTIVE
                          && (modules == 0 || (modules & MODEL_RECOMPUTE_CORE_ATTN)));
  if (cp_rerun)
    {
      guint before = plan_cp_issue (p, c->rank, MODEL_CP_FORWARD, PLAN_CP_BEFORE, prev,
                                    (gint) l, c->mb);
      if (before != prev)
        c->cp_wait = before;
    }
  plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_RECOMPUTE, (gint) l, c->mb,
                   "recompute%s L%u mb%d", label[what], l, c->mb);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  if (c->regathers)
    plan_task_dep (p, c->gather_task[l]);
  plan_task_dep (p, c->restored);
  const ModelPass *rerun = &lc->fwd;
  switch (what)
    {
    case RECOMPUTE_SELECTIVE:
      rerun = &lc->selective_fwd;
      plan_task_add_pass (p, &lc->selective_fwd);
      c->recomputed[l] = plan_task_alloc_tensors (p, MODEL_MEM_ACTIVATIONS, c->recreated_tensors,
                                                  c->n_recreated_tensors, MODEL_EFFECT_AT_START);
      plan_task_pass_workspace (p, &lc->selective_fwd);
      break;
    case RECOMPUTE_POINTWISE:
      rerun = &lc->pointwise_fwd;
      plan_task_add_pass (p, &lc->pointwise_fwd);
      c->recomputed[l] = plan_task_alloc_tensors (p, MODEL_MEM_ACTIVATIONS, c->recreated_tensors,
                                                  c->n_recreated_tensors, MODEL_EFFECT_AT_START);
      break;
    case RECOMPUTE_LAYER:
    default:
      plan_task_add_pass (p, &lc->fwd);
      c->recomputed[l] = plan_task_alloc_tensors (p, MODEL_MEM_ACTIVATIONS, c->saved_tensors,
                                                  c->n_saved_tensors, MODEL_EFFECT_AT_START);
      plan_task_pass_workspace (p, &lc->fwd);
      break;
    }
  /* the cluster's work: a rank replayed as the slowest EP rank runs the mean rank's rows
   * (plan_ep.c rewrite_pass), as model FLOPs count them */
  p->hardware_flops += plan_current (p)->flops - rerun->straggler_flops;
  guint task = plan_current (p)->id;
  if (cp_rerun)
    plan_cp_after (p, c->rank, MODEL_CP_FORWARD, prev, task, (gint) l, c->mb, &c->cp_wait);
  if (what == RECOMPUTE_SELECTIVE && (p->stack.recompute_modules & MODEL_RECOMPUTE_MOE))
    {
      /* recompute_modules moe: moe_layer.py's checkpoint of the MoE layer reruns its
       * dispatch and combine (plan_ep.c) before the backward, after the rerun task (a
       * layer is one task: the router's and the experts' kernels on either side of them
       * run as one) */
      guint last = plan_ep_issue (p, c->rank, MODEL_EP_FORWARD, task, (gint) l, c->mb);
      if (last != task)
        c->tp_wait = last;
    }
  if (what != RECOMPUTE_LAYER)
    return;
  guint beside = plan_tp_overlap_issue (p, c->rank, PLAN_TP_LAYER, MODEL_TP_FORWARD,
                                        PLAN_TP_PART_BESIDE, tp_start, (gint) l, c->mb);
  if (beside != tp_start)
    c->tp_wait = beside;
  guint last = plan_tp_overlap_issue (p, c->rank, PLAN_TP_LAYER, MODEL_TP_FORWARD,
                                      PLAN_TP_PART_AFTER, task, (gint) l, c->mb);
  /* Megatron's full recompute reruns the forward (tensor_parallel/random.py
   * CheckpointFunction.backward calls run_function again), a MoE layer's dispatch and
   * combine included (plan_ep.c) */
  last = plan_ep_issue (p, c->rank, MODEL_EP_FORWARD, last, (gint) l, c->mb);
  if (last != task)
    c->tp_wait = last;
}

/* Recomputation needed before layer l's backward. */
void
plan_step_recompute_before_backward (StepCtx *c, guint l)
{
  if (c->ckpt != MODEL_CHECKPOINTING_SQRT)
    c->recomputed[l] = 0; /* under √L the segment's recompute already set it */
  switch (c->ckpt)
    {
    case MODEL_CHECKPOINTING_SELECTIVE:
      recompute (c, l, RECOMPUTE_SELECTIVE);
      break;
    case MODEL_CHECKPOINTING_SELECTIVE_OP:
      recompute (c, l, RECOMPUTE_POINTWISE);
      break;
    case MODEL_CHECKPOINTING_SQRT:
      /* Entering a segment from its last layer: rerun the segment's forward, in order. */
      if (l + 1 == c->hi || (l + 1) % c->segment == 0)
        for (guint j = MAX (l - l % c->segment, c->lo); j <= l; j++)
          recompute (c, j, RECOMPUTE_LAYER);
      break;
    default:
      if (checkpointed (c, l))
        recompute (c, l, RECOMPUTE_LAYER);
      break;
    }
}

/* One layer's saved-activation tensors in set `which` (B each, into `sizes`, room for
 * MODEL_COST_MAX_TENSORS + 2; returns their count), each its own allocation in PyTorch: the
 * rank's layer graph's (cp-, tp-sharded or whole), the slowest EP rank's rows beyond it
 * (plan_ep_layer_memory's row_extra: [0] of all, [1] of the selective ones, [2] of what
 * op-level selective keeps, [3] of what it re-creates) and, in the sets whose total holds
 * them (ALL, SELECTIVE_KEPT), autocast's cached weight copies. Σ = act_saved (ALL),
 * act_saved − act_selective (SELECTIVE_KEPT), act_selective (SELECTIVE_RECREATED),
 * act_keep_matmul (MATMUL_KEPT), act_pointwise (POINTWISE_RECREATED). */
static guint
layer_saved_set (const StepCtx *c, PlanSavedSet which, double *sizes)
{
  const ModelPlan *p = c->p;
  const ModelBlockCost *lc = &c->pc->layer;
  ModelCostParams cp = model_stack_cost_params (&p->stack);
  guint n;
  if (p->cp.cp > 1)
    n = plan_cp_saved_tensors (p, which, sizes, MODEL_COST_MAX_TENSORS);
  else if (p->tp.tp > 1)
    n = plan_tp_saved_tensors (p, which, sizes, MODEL_COST_MAX_TENSORS);
  else if (which == PLAN_SAVED_ALL)
    n = model_cost_layer_saved_tensors (p->arch, &cp, sizes, MODEL_COST_MAX_TENSORS);
  else
    {
      g_autoptr (ModelGraph) g = model_cost_layer_graph (p->arch, &cp);
      n = plan_graph_saved_tensors (p, g, which, sizes, MODEL_COST_MAX_TENSORS);
    }
  /* A full list leaves no room to tell whether a tensor was dropped: an invariant. */
  g_assert (n < MODEL_COST_MAX_TENSORS);
  double sum = 0;
  for (guint i = 0; i < n; i++)
    sum += sizes[i];
  /* the slowest EP rank's rows beyond the layer graph's (plan_ep_layer_memory): one more
   * tensor; fewer rows (capacity drops) shrink the tensors in proportion (approximate: the
   * list does not say which are the experts' rows) */
  const double *extra = p->ep.row_extra;
  double rows = 0, want = 0;
  gboolean with_cache = FALSE;
  switch (which)
    {
    case PLAN_SAVED_ALL:
      rows = p->ep.on ? extra[0] : 0;
      want = lc->act_saved;
      with_cache = TRUE;
      break;
    case PLAN_SAVED_SELECTIVE_KEPT:
      rows = p->ep.on ? extra[0] - extra[1] : 0;
      want = lc->act_saved - lc->act_selective;
      with_cache = TRUE;
      break;
    case PLAN_SAVED_SELECTIVE_RECREATED:
      rows = p->ep.on ? extra[1] : 0;
      want = lc->act_selective;
      break;
    case PLAN_SAVED_MATMUL_KEPT:
      rows = p->ep.on ? extra[2] : 0;
      want = lc->act_keep_matmul;
      break;
    case PLAN_SAVED_POINTWISE_RECREATED:
    default:
      rows = p->ep.on ? extra[3] : 0;
      want = lc->act_pointwise;
      break;
    }
  if (rows > 0)
    sizes[n++] = rows;
  else if (rows < 0 && sum > 0)
    for (guint i = 0; i < n; i++)
      sizes[i] *= (sum + rows) / sum;
  /* autocast's copies, kept by the forward's graph until the layer's backward (op-level
   * selective books them apart: plan_step_autocast_cache) */
  double cache = with_cache ? model_cost_layer_weight_cache (plan_cost_arch (p), &cp) : 0;
  if (cache > 0)
    sizes[n++] = cache;
  /* The tensor list and the cost's totals are two counts of the same bytes
   * (models/ops/cost.c); a difference is a bug in one of them, never booked as an extra
   * tensor. The tolerance is the rounding of summing in another order. */
  g_assert (fabs (sum + rows + cache - want) <= 1e-12 * lc->act_saved);
  return n;
}

/* One layer's trainable tensors (for per-tensor gradients) and saved-activation tensors
 * (Σ = act_saved: the cost model's tensors plus autocast's cached weight copies). */
void
plan_step_layer_tensors (StepCtx *c)
{
  const ModelPlan *p = c->p;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      guint64 copies = t->trainable ? model_inventory_copies (inv, t, MODEL_INVENTORY_LAYER) : 0;
      for (guint64 k = 0; k < copies && c->n_grad_tensors < G_N_ELEMENTS (c->grad_tensor_elems); k++)
        c->grad_tensor_elems[c->n_grad_tensors++] = (double) model_tensor_numel (t);
    }
  c->n_saved_tensors = layer_saved_set (c, PLAN_SAVED_ALL, c->saved_tensors);
  c->n_kept_tensors = c->n_recreated_tensors = 0;
  if (c->ckpt == MODEL_CHECKPOINTING_SELECTIVE)
    {
      c->n_kept_tensors = layer_saved_set (c, PLAN_SAVED_SELECTIVE_KEPT, c->kept_tensors);
      c->n_recreated_tensors
        = layer_saved_set (c, PLAN_SAVED_SELECTIVE_RECREATED, c->recreated_tensors);
    }
  else if (c->ckpt == MODEL_CHECKPOINTING_SELECTIVE_OP)
    {
      c->n_kept_tensors = layer_saved_set (c, PLAN_SAVED_MATMUL_KEPT, c->kept_tensors);
      c->n_recreated_tensors
        = layer_saved_set (c, PLAN_SAVED_POINTWISE_RECREATED, c->recreated_tensors);
    }
}

guint
plan_step_segment_length (const ModelPlan *p)
{
  if (p->stack.checkpointing == MODEL_CHECKPOINTING_EVERY_K)
    return MAX (p->stack.checkpoint_every, 1);
  /* Chen et al. 2016 §3: √n segments balance stored inputs against one segment's
   * activations. */
  return MAX ((guint) ceil (sqrt ((double) p->arch->n_layers)), 1);
}

