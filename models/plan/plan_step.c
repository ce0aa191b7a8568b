/* models/plan/plan_step.c — the schedule of one rank's step: micro-batches of forward and
 * backward over the embedding, the layers and the head, then the optimizer step, with the
 * data-parallel collectives of plan_comm.c woven in (see plan.h for the schedule and
 * parallel.h for what each stage shards).
 *
 * Stage-3 gathers are bounded: the forward gather of layer l + prefetch waits for the
 * forward of layer l − 1 (its buffer released), the backward gather of layer l − prefetch
 * for the backward of layer l + 1, so at most prefetch + 1 gathered layers are live (FSDP's
 * rate limiter, Zhao et al. 2023 §4.2). Activation checkpointing is in plan_ckpt.c.
 */
#include "config.h"
#include "models/plan/plan_step-private.h"

#include <math.h>
#include <string.h>
#include "models/parallel/tensor_parallel.h"
#include "models/plan/plan_offload-private.h"
#include "models/plan/plan_paged-private.h"
#include "sim/text.h"

/* Whether `state` is split into shards in `phase` (parallel.h's placements) while the
 * sharding machinery is on. */
static gboolean
sharded_in (const StepCtx *c, ModelState state, ModelPhase phase)
{
  return c->sharding && model_parallel_state_sharded (&c->p->par, state, phase);
}

/* This rank's share of `bytes` of `state` in `phase` (placement.h). */
static double
local (const StepCtx *c, ModelState state, ModelPhase phase, double bytes)
{
  return model_parallel_local_bytes (&c->p->par, state, phase, bytes);
}

/* ---- stage 3 parameter gathers --------------------------------------------------------- */

/* The all-gather of a block's `bytes` of parameters after task `after`, preceded under
 * parameter offload by the copy of this rank's shard to the GPU (plan_offload.c); on one
 * rank that copy is the block itself. Sets the task to wait for and the buffer to free. */
static void
gather_block (StepCtx *c, double bytes, gint layer, const char *what, guint after, guint *task,
              guint *handle)
{
  guint fetched = 0;
  guint fetch = plan_offload_fetch_params (c->p, c->rank,
                                           local (c, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST, bytes),
                                           layer, c->mb, after, what, &fetched);
  guint first; /* weights at rest → as the layer uses them: the all-gather */
  *task = plan_redistribute (c->p, c->rank, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST,
                             MODEL_PHASE_COMPUTE, bytes, layer, c->mb, what, NONE, &first);
  *handle = fetched;
  if (*task == NONE)
    {
      *task = fetch;
      return;
    }
  plan_task_dep (c->p, after);
  plan_task_dep (c->p, fetch);
  *handle = plan_task_alloc_on (c->p, MODEL_MEM_COMM_BUFFERS, bytes, MODEL_EFFECT_AT_START,
                                plan_gather_stream (c->p));
  plan_task_free (c->p, fetched, MODEL_EFFECT_AT_END);
}

static void
gather (StepCtx *c, gint layer, const char *phase, guint after)
{
  double bytes = c->pc->weight_layer;
  char buf[64];
  g_autofree char *slow = NULL;
  const char *what = sim_text_label (buf, sizeof buf, &slow, "params L%d (%s)", layer, phase);
  gather_block (c, bytes, layer, what, after, &c->gather_task[layer], &c->gather_handle[layer]);
}

/* A hold of the current micro-batch on shared unit u (StepCtx root_unit, head_unit) of
 * `bytes`, recorded in *held: the first holder gathers it after `after`; every holder gets
 * the gather's task and buffer. */
static void
unit_hold (StepCtx *c, PlanStepUnit *u, double bytes, const char *what, guint after,
           guint *task, guint *handle, gboolean *held)
{
  g_assert (!*held);
  if (u->refs++ == 0)
    gather_block (c, bytes, -1, what, after, &u->task, &u->handle);
  *task = u->task;
  *handle = u->handle;
  *held = TRUE;
}

/* Releases the current micro-batch's hold (*held) on u at the end of the current task: the
 * last holder frees the buffer. Nothing without a hold. */
static void
unit_release (StepCtx *c, PlanStepUnit *u, guint *handle, gboolean *held)
{
  if (!*held)
    return;
  g_assert (u->refs > 0);
  if (--u->refs == 0)
    plan_task_free (c->p, u->handle, MODEL_EFFECT_AT_END);
  *handle = 0;
  *held = FALSE;
}

/* Weights sharded at rest gather among > 1 ranks, or on one rank fetch offloaded
 * parameters. */
static gboolean
gathers (const StepCtx *c)
{
  return sharded_in (c, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST)
         && (model_parallel_local_fraction (&c->p->par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST) < 1
             || plan_offloads_parameters (c->p));
}

/* Whether the embedding and the head are FSDP units of their own (c->end_units): as
 * model_plan_end_units decides (plan.h), where parameters are gathered at all. */
static gboolean
end_units (const StepCtx *c)
{
  const ModelPlan *p = c->p;
  return gathers (c) && model_plan_end_units (p->arch, &p->stack, &p->par) == MODEL_END_UNITS_ON;
}

/* The head's unit (end_units: the final norm and the output layer) gathered after `after`,
 * once a forward. */
static void
gather_head (StepCtx *c, guint after)
{
  if (c->head_held)
    return;
  unit_hold (c, &c->head_unit, c->pc->weight_root - c->pc->weight_embedding, "params head",
             after, &c->head_gather_task, &c->head_gather_handle, &c->head_held);
}

/* Whether gathered parameters are released after the forward and gathered again for the
 * backward (c->regathers). */
static gboolean
regathers (const StepCtx *c)
{
  return gathers (c) && !model_parallel_keeps_gathered (&c->p->par);
}

/* ---- gradient reduction ---------------------------------------------------------------- */

/* Gradients accumulated as Partial (stages 0–1, and any mode over a shard group of one
 * rank) are reduced in buckets at the last micro-batch, by the change accumulate → step:
 * all-reduce (DDP, Partial → Replicate) or reduce-scatter (ZeRO-1, Partial → Shard: each
 * rank then updates its own partition, ZeRO §5.1). Adds `params` parameters' gradients to the open bucket and issues the full buckets
 * after `ready` (the task that produced them); `flush` issues the remainder. */
static void
bucket_reduce (StepCtx *c, double params, guint ready, gint layer, gboolean flush)
{
  if (!c->last_mb || sharded_in (c, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE))
    return;
  double size = c->p->par.bucket_size;
  c->bucket_fill += params * plan_reduce_bytes (c->p);
  guint full = 0;
  while (c->bucket_fill >= size)
    {
      c->bucket_fill -= size;
      full++;
    }
  double bytes = full * size + (flush ? c->bucket_fill : 0);
  if (flush)
    c->bucket_fill = 0;
  if (bytes <= 0)
    return;
  /* whole MiB rounded as %.0f rounds them (the current rounding mode: to nearest, ties to
   * even), without the floating-point formatter's multi-precision conversion per label */
  guint64 mib = (guint64) nearbyint (bytes / (1024.0 * 1024));
  g_autofree char *what = g_strdup_printf ("grads bucket %u (%" G_GUINT64_FORMAT " MiB)",
                                           c->bucket_count++, mib);
  /* A sharding mode over a shard group of one rank (c->sharding off) shards nothing, but
   * its replicas still reduce their gradients: it runs as its unsharded equivalent, whose
   * accumulated Partial gradients are all-reduced over dp_replicate. */
  ModelParallel par = c->sharding ? c->p->par : model_parallel_unsharded (&c->p->par);
  guint first;
  plan_redistribute_as (c->p, &par, c->rank, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE,
                        MODEL_PHASE_STEP, bytes, layer, c->mb, what, ready, &first);
}

/* Issues comms[from…] (collectives of a redistribution) after `after`, each after the
 * previous, named "`what` shard"; returns the last task (NONE: none). */
static guint
issue_after (StepCtx *c, const GArray *comms, guint from, guint after, gint layer,
             const char *what)
{
  guint last = NONE;
  for (guint i = from; i < comms->len; i++)
    {
      const ModelPlacementComm *m = &g_array_index (comms, ModelPlacementComm, i);
      char buf[256];
      g_autofree char *slow = NULL;
      const char *rep = sim_text_label (buf, sizeof buf, &slow, "%s shard", what);
      guint r = plan_collective (c->p, c->rank, m->dims, m->kind, m->bytes,
                                 layer, c->mb, rep);
      if (r != NONE)
        plan_task_dep (c->p, last == NONE ? after : last), last = r;
    }
  return last;
}

/* Gradients sharded as they accumulate (stages 2–3) are reduced after every micro-batch,
 * by the change compute → accumulate: the reduce-scatter (Partial → Shard) releases the
 * full gradient buffers and the rank keeps its shard (allocated once, then accumulated
 * into); hybrid sharding then all-reduces the shard across replicas (Partial → Replicate
 * on dp_replicate). */
static void
shard_reduce (StepCtx *c, double params, guint ready, guint full1, guint full2, gint layer,
              const char *what)
{
  if (!sharded_in (c, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE)
      || params <= 0) /* no gradients here (LoRA's root unit) */
    return;
  double bytes = params * plan_reduce_bytes (c->p);
  g_autoptr (GArray) comms = plan_parallel_redistribute (
    c->p, &c->p->par, MODEL_STATE_GRADIENTS, MODEL_PHASE_COMPUTE, MODEL_PHASE_ACCUMULATE, bytes);
  const ModelPlacementComm *scatter = &g_array_index (comms, ModelPlacementComm, 0);
  gboolean scatters = comms->len > 0 && scatter->kind == HW_COLLECTIVE_REDUCE_SCATTER;
  guint id = !scatters ? NONE
                       : plan_collective (c->p, c->rank, scatter->dims,
                                          scatter->kind, scatter->bytes, layer, c->mb, what);
  double grad_bytes = params * model_stack_gradient_bytes (&c->p->stack);
  if (id == NONE) /* nothing to scatter: keep the full gradients as they are */
    {
      guint last = issue_after (c, comms, 0, ready, layer, what); /* replicas' all-reduce */
      if (plan_offload_gradients (c->p, c->rank, last == NONE ? ready : last, grad_bytes, full1,
                                  full2, layer, c->mb)
          != NONE)
        return;
      if (c->mb == 0)
        {
          plan_keep_gradient (c->p, full1);
          plan_keep_gradient (c->p, full2);
        }
      return;
    }
  plan_task_dep (c->p, ready);
  plan_task_free (c->p, full1, MODEL_EFFECT_AT_END);
  plan_task_free (c->p, full2, MODEL_EFFECT_AT_END);
  /* the shard as kept: FSDP's mixed precision casts it to the parameters' fp32 */
  double grad_shard = local (c, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE,
                             params * plan_grad_shard_bytes (c->p));
  guint offloaded = 0; /* optimizer offload: the shard leaves the GPU every micro-batch */
  if (plan_offloads_optimizer (c->p))
    offloaded = plan_task_alloc_on (c->p, MODEL_MEM_GRADIENTS, grad_shard, MODEL_EFFECT_AT_END,
                                    plan_grad_shard_stream (c->p));
  else if (c->mb == 0 && !model_stack_gradients_persistent (&c->p->stack))
    plan_keep_gradient (c->p, plan_task_alloc_on (c->p, MODEL_MEM_GRADIENTS, grad_shard,
                                                  MODEL_EFFECT_AT_END,
                                                  plan_grad_shard_stream (c->p)));
  guint last = issue_after (c, comms, 1, id, layer, what);
  plan_offload_gradients (c->p, c->rank, last == NONE ? id : last, grad_shard, offloaded, 0,
                          layer, c->mb);
}

/* The elementwise pass of an optimizer step over `params` parameters (stack.h
 * model_stack_optimizer_step_flops/_bytes), with the ops the host issues for them: the
 * rank's share of the model's parameter tensors (pc: the plan's costs). */
static ModelPass
optimizer_pass (const ModelPlan *p, const PlanCosts *pc, double params)
{
  ModelPass pass = { .n_ops = 1 };
  ModelOptimizerView view = plan_optimizer_view (p);
  double share = pc->trainable_params > 0 ? params / pc->trainable_params : 0;
  double tensors = share > 0 ? ceil (pc->trainable_tensors * share) : 1;
  double matrices = share > 0 ? ceil (pc->trainable_matrices * share) : 0;
  if (view.sees != MODEL_OPTIMIZER_SEES_PARAMETERS)
    matrices = 0; /* 1-D views or partitions: Adafactor factors none */
  if (view.sees == MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS && share > 0)
    {
      /* a flat partition per parameter group (the matrices', the rest's), ZeRO-3's in
       * sub-groups (PLAN_DS_SUB_GROUP_ELEMENTS) */
      double groups = (pc->trainable_matrices > 0) + (pc->trainable_tensors
                                                      > pc->trainable_matrices);
      tensors = MAX (groups, 1);
      if (p->par.mode == MODEL_DP_ZERO3)
        tensors = MAX (tensors, ceil (params / PLAN_DS_SUB_GROUP_ELEMENTS));
    }
  pass.ops[0] = (ModelOp){ .name = "optimizer", .op_class = MODEL_OP_ELEMENTWISE,
                           .flops = params * model_stack_optimizer_step_flops (&p->stack),
                           .bytes = params * model_stack_optimizer_step_bytes (&p->stack, &view),
                           .shape = { HW_KERNEL_PLAIN },
                           .host_ops = model_stack_optimizer_host_ops (&p->stack, tensors,
                                                                       matrices) };
  return pass;
}

/* Optimizer in the backward (torchtune optimizer_in_bwd, torchtune/training/_optimizer_
 * hooks via register_optim_in_bwd_hooks / register_post_accumulate_grad_hook): each
 * parameter is stepped by its own optimizer as soon as its gradient is accumulated, and
 * the hook then sets p.grad = None, so a block's gradients live only while the block's
 * backward runs and the full gradient set is never held. The step's time joins the
 * backward task; its temporaries are one tensor's (an optimizer per parameter: foreach
 * over one tensor is the per-tensor loop). One data-parallel rank, GA 1 (stack checks). */
static void
step_pass_in_backward (StepCtx *c, double bytes)
{
  ModelPlan *p = c->p;
  ModelPass pass = optimizer_pass (p, c->pc, bytes / model_stack_gradient_bytes (&p->stack));
  plan_task_add_pass (p, &pass);
  ModelStack one = p->stack;
  if (one.framework.optimizer_impl == MODEL_OPTIMIZER_IMPL_FOREACH)
    one.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  ModelOptimizerView view = plan_optimizer_view (p);
  plan_task_workspace (p, model_stack_optimizer_workspace (&one, p->arch, &view));
}

static guint
step_in_backward (StepCtx *c, double bytes)
{
  ModelPlan *p = c->p;
  if (!(bytes > 0))
    return 0;
  step_pass_in_backward (c, bytes);
  plan_task_free (p, plan_task_alloc (p, MODEL_MEM_GRADIENTS, bytes, MODEL_EFFECT_AT_START),
                  MODEL_EFFECT_AT_END);
  return 0;
}

/* Optimizer in the backward with tied embeddings: the shared matrix has one AccumulateGrad
 * node with two incoming edges, and the autograd engine runs it, and so its
 * post-accumulate-grad hook (the optimizer step), once both have contributed (torch/csrc/
 * autograd/engine.cpp: a node runs when its dependencies count reaches 0; the head's
 * contribution waits in the node's InputBuffer). The head's gradient is therefore held
 * from the head's backward to the embedding's, which steps it. TRUE when that applies. */
static gboolean
tied_step_at_embedding (const StepCtx *c)
{
  return c->p->stack.framework.optimizer_in_backward && c->p->arch->tied_embeddings;
}

/* Gradients a backward task produces: under stages 0–1 allocated at micro-batch 0 and kept
 * until the optimizer; under stages 2–3 allocated every micro-batch, released by the
 * reduce-scatter (returns the handle for it). */
static guint
produce_gradients (StepCtx *c, double bytes, gboolean layer)
{
  if (c->p->stack.framework.optimizer_in_backward)
    return step_in_backward (c, bytes);
  if (sharded_in (c, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE)) /* one flat gradient per unit */
    return plan_task_alloc (c->p, MODEL_MEM_GRADIENTS, bytes, MODEL_EFFECT_AT_START);
  if (model_stack_gradients_persistent (&c->p->stack) || c->mb != 0)
    return 0; /* kept from time 0 (model_stack_initial_bytes) or from micro-batch 0 */
  if (!layer)
    {
      plan_keep_gradient (c->p, plan_task_alloc (c->p, MODEL_MEM_GRADIENTS, bytes,
                                                 MODEL_EFFECT_AT_START));
      return 0;
    }
  /* autograd allocates each parameter's .grad on its own */
  double elems = 0, sizes[G_N_ELEMENTS (c->grad_tensor_elems)];
  for (guint i = 0; i < c->n_grad_tensors; i++)
    elems += c->grad_tensor_elems[i];
  double scale = bytes / elems; /* a tp rank's share of each tensor (plan_tp.c) */
  for (guint i = 0; i < c->n_grad_tensors; i++)
    sizes[i] = c->grad_tensor_elems[i] * scale;
  plan_keep_gradient (c->p, plan_task_alloc_tensors (c->p, MODEL_MEM_GRADIENTS, sizes,
                                                     c->n_grad_tensors, MODEL_EFFECT_AT_START));
  return 0;
}

/* B of the head matrix's gradient: a tp rank's V×h (0 when the head is frozen). */
static double
head_matrix_grad (const StepCtx *c)
{
  const ModelArch *a = plan_cost_arch (c->p); /* a tp rank's vocabulary shard */
  return c->pc->grad_head > 0 ? model_stack_gradient_bytes (&c->p->stack)
                                  * (double) a->vocab_size * (double) a->hidden_size
                              : 0;
}

/* B of the head matrix's gradient that the backward of the head (`head` TRUE) or of the
 * embedding adds into a gradient already held: autograd sums the pieces of a gradient in
 * place into the first (torch/csrc/autograd/input_buffer.cpp accumulate: old_var.add_(var)
 * when it holds the last reference, grad mode being off in the backward), so each later
 * piece is a whole matrix-sized tensor beside it while it is added. The pieces: the
 * chunks' weight gradients of a chunked output (torchtune's TransformerDecoder runs
 * `self.output(chunk)` for each of the loss_chunks chunks, one mm each) at the head; under
 * tied embeddings the embedding's gradient (embedding_dense_backward) added to the head's
 * at the embedding (both on this rank). 0 when the head matrix is frozen. */
static double
head_grad_piece (const StepCtx *c, gboolean head, gboolean both)
{
  const ModelPlan *p = c->p;
  double g = head_matrix_grad (c);
  if (!(g > 0))
    return 0;
  if (head)
    return (p->stack.framework.loss == MODEL_LOSS_CHUNKED
            || p->stack.framework.loss == MODEL_LOSS_CHUNKED_HEAD)
               && p->stack.framework.loss_chunks > 1
             ? g : 0;
  return p->arch->tied_embeddings && both ? g : 0;
}

/* B of the head matrix's gradient a later micro-batch computes beside the kept one
 * (head_grad_accumulating; accumulates_beside: when that happens at all): with
 * gradients kept across micro-batches (unsharded, stepped at the end) autograd computes
 * each parameter's gradient anew and AccumulateGrad adds it in place into .grad (torch/csrc/
 * autograd/functions/accumulate_grad.h accumulateGrad: `variable_grad += new_grad` with
 * grad mode off), so from micro-batch 1 on the head's new V×h gradient is a tensor of its
 * own until it is added. Not under a fp32 main_grad (Megatron's gradient_accumulation_
 * fusion writes the weight gradient into main_grad), optimizer in the backward (GA 1),
 * gradients sharded as they accumulate (a new full gradient every micro-batch already,
 * produce_gradients) or optimizer offload. 0: none. */
static gboolean
accumulates_beside (const StepCtx *c)
{
  const ModelPlan *p = c->p;
  return c->mb > 0 && !p->stack.framework.optimizer_in_backward
         && !model_stack_main_grad_fp32 (&p->stack)
         && !sharded_in (c, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE)
         && !plan_offloads_optimizer (p);
}

static double
head_grad_accumulating (const StepCtx *c)
{
  return accumulates_beside (c) ? head_matrix_grad (c) : 0;
}

/* B of a layer's largest gradient tensor (its tp share, as produce_gradients books them):
 * AccumulateGrad runs as soon as a weight's gradient is made (its nodes come first in the
 * engine's ready queue), so in a later micro-batch one fresh weight gradient at a time
 * waits to be added. */
static double
largest_layer_grad (const StepCtx *c)
{
  double elems = 0, largest = 0;
  for (guint i = 0; i < c->n_grad_tensors; i++)
    {
      elems += c->grad_tensor_elems[i];
      largest = MAX (largest, c->grad_tensor_elems[i]);
    }
  return elems > 0 ? largest * c->pc->grad_layer / elems : 0;
}

/* The backward task of the head (`head` TRUE) or of the embedding, `both` when the other
 * end is on this rank too: after the pending tp/cp collectives, its pass and workspace, its
 * gradients (`*grad_full`: produce_gradients' handle), the head matrix's gradient pieces
 * (head_grad_piece, head_grad_accumulating; under tied embeddings held from the head's
 * backward to the embedding's) and the release of its saved activations `act` at its end.
 * Returns the task. */
static guint
end_backward (StepCtx *c, gboolean head, gboolean both, const ModelPass *pass, double grad,
              guint act, guint *grad_full)
{
  ModelPlan *p = c->p;
  guint t = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD, -1,
                             c->mb, "bwd %s mb%d", head ? "head" : "embed", c->mb);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  plan_task_add_pass (p, pass);
  if (head && tied_step_at_embedding (c) && grad > 0)
    {
      c->tied_grad = plan_task_alloc (p, MODEL_MEM_GRADIENTS, grad, MODEL_EFFECT_AT_START);
      *grad_full = 0;
    }
  else
    *grad_full = produce_gradients (c, grad, FALSE);
  double piece = head_grad_piece (c, head, both);
  if (piece > 0) /* a transient of the task, not a model state */
    plan_task_workspace (p, piece);
  double fresh = head ? head_grad_accumulating (c) : 0;
  if (fresh > 0 && p->arch->tied_embeddings && both)
    /* tied: it waits in the shared matrix's input buffer for the embedding's gradient */
    c->fresh_grad = plan_task_alloc (p, MODEL_MEM_WORKSPACE, fresh, MODEL_EFFECT_AT_START);
  else if (fresh > 0)
    plan_task_workspace (p, fresh);
  if (!head && c->fresh_grad != 0)
    {
      plan_task_free (p, c->fresh_grad, MODEL_EFFECT_AT_END);
      c->fresh_grad = 0;
    }
  if (!head && c->tied_grad != 0)
    {
      step_pass_in_backward (c, g_array_index (p->handles, ModelMemEffect, c->tied_grad).bytes);
      plan_task_free (p, c->tied_grad, MODEL_EFFECT_AT_END);
      c->tied_grad = 0;
    }
  plan_task_pass_workspace (p, pass);
  plan_task_free (p, act, MODEL_EFFECT_AT_END);
  return t;
}

/* ---- tensor-parallel collectives --------------------------------------------------------- */

/* Before a block's forward task: its tp collectives on the critical path before it (under
 * tp_comm_overlap = pipelined the first chunk of each ring-exchange all-gather,
 * plan_tp_overlap.c; none otherwise), after the previous compute task; the task waits for
 * them (c->tp_wait). Returns what its overlapped chunks start after (plan_step_tp_after). */
static guint
plan_step_tp_before (StepCtx *c, PlanTpBlock block, gint layer)
{
  guint prev = plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE);
  guint last = plan_tp_overlap_issue (c->p, c->rank, block, MODEL_TP_FORWARD, PLAN_TP_PART_BEFORE,
                                      prev, layer, c->mb);
  if (last != prev)
    c->tp_wait = last;
  return last;
}

/* The forward tp collectives of `block` around the compute task just built: those beside
 * it from `start` (plan_step_tp_before; pipelined chunks only), then those after it; the
 * next compute task waits for the last (Megatron without tp_comm_overlap: all after). */
static void
plan_step_tp_after (StepCtx *c, PlanTpBlock block, guint start, gint layer)
{
  guint task = plan_current (c->p)->id;
  guint beside = plan_tp_overlap_issue (c->p, c->rank, block, MODEL_TP_FORWARD,
                                        PLAN_TP_PART_BESIDE, start, layer, c->mb);
  if (beside != start)
    c->tp_wait = beside;
  guint last = plan_tp_overlap_issue (c->p, c->rank, block, MODEL_TP_FORWARD, PLAN_TP_PART_AFTER,
                                      task, layer, c->mb);
  if (last != task)
    c->tp_wait = last;
}

/* Before a block's backward task: its critical-path tp collectives (SP's output-gradient
 * all-gather, or under tp_comm_overlap = pipelined its first chunk; the qkv reduce-scatter
 * of k < tp), after the previous compute task; the backward then waits for them
 * (c->tp_wait). Returns what the block's overlapped collectives start after
 * (tp_overlapped). */
/* What a backward's collectives before its compute task follow, from `prev` (the last
 * compute task): the pipeline receive of the output gradient instead when it is newer —
 * those collectives move that gradient or what it yields (SP's all-gather of the output
 * gradient, the combine's backward all-to-all, Ulysses's all-to-all), so they cannot start
 * before it arrives. Without pp, or past a chunk's first layer, `prev`. */
static guint
backward_after (const StepCtx *c, guint prev)
{
  return c->pp_wait != NONE && (prev == NONE || c->pp_wait > prev) ? c->pp_wait : prev;
}

static guint
tp_before_backward (StepCtx *c, PlanTpBlock block, gint layer)
{
  guint prev = backward_after (c, plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE));
  guint last = plan_tp_overlap_issue (c->p, c->rank, block, MODEL_TP_BACKWARD,
                                      PLAN_TP_PART_BEFORE, prev, layer, c->mb);
  if (last != prev)
    c->tp_wait = last;
  return last;
}

/* After a block's backward task is built: the collectives Megatron issues async beside
 * the weight-gradient GEMM (the input gradient's all-reduce, or SP's input re-gather and
 * reduce-scatter; layers.py LinearWithGradAccumulationAndAsyncCommunication.backward;
 * under tp_comm_overlap = pipelined also the output-gradient all-gathers' other chunks),
 * here beside the whole backward task, from `start` (its predecessor) on; the next compute
 * task waits for them. Approximate: the overlap window is the task, not the one wgrad
 * GEMM. */
static void
tp_overlapped (StepCtx *c, PlanTpBlock block, guint start, gint layer)
{
  guint last = plan_tp_overlap_issue (c->p, c->rank, block, MODEL_TP_BACKWARD,
                                      PLAN_TP_PART_BESIDE, start, layer, c->mb);
  if (last != start)
    c->tp_wait = last;
}

/* ---- expert-parallel collectives (plan_ep.c) ------------------------------------------ */

/* A MoE layer's dispatch and combine in `pass` after the last compute task (and after the
 * tp collectives the next one waits for, when newer); the next compute task waits for them
 * through c->tp_wait (in line with the compute, as Megatron's default token dispatcher). */
static void
plan_step_ep (StepCtx *c, ModelEpPass pass, gint layer)
{
  guint after = plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE);
  if (pass == MODEL_EP_BACKWARD)
    after = backward_after (c, after);
  if (c->tp_wait != NONE && (after == NONE || c->tp_wait > after))
    after = c->tp_wait;
  guint last = plan_ep_issue (c->p, c->rank, pass, after, layer, c->mb);
  if (last != after)
    c->tp_wait = last;
}

/* ---- context-parallel collectives ------------------------------------------------------- */

/* Before a layer's task in `pass`: its critical-path cp collectives (all-gather K/V,
 * Ulysses's q/k/v all-to-alls), after the previous compute task; the layer waits for them
 * (c->cp_wait). Returns that previous compute task, where the ring's sends start. */
static guint
cp_before (StepCtx *c, guint pass, gint layer)
{
  guint prev = plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE);
  guint from = pass == MODEL_CP_BACKWARD ? backward_after (c, prev) : prev;
  guint last = plan_cp_issue (c->p, c->rank, pass, PLAN_CP_BEFORE, from, layer, c->mb);
  if (last != from)
    c->cp_wait = last;
  return prev;
}

/* After layer task `task` in `pass` is built: the ring's P2P sends beside it from `start`
 * (its predecessor: TE posts step i+1's K/V as step i begins), then the critical-path
 * collectives after the attention (Ulysses's output all-to-all) after the task; the next
 * compute task waits for the last (plan_cp.c on the approximate overlap window). */
static void
cp_after (StepCtx *c, guint pass, guint start, guint task, gint layer)
{
  plan_cp_after (c->p, c->rank, pass, start, task, layer, c->mb, &c->cp_wait);
}

/* ---- forward ----------------------------------------------------------------------------- */

/* "L<l>" for a decoder layer, "mtp<d>" for MTP layer L + d, in `buf`; returns buf. */
static const char *
layer_tag (const StepCtx *c, guint l, char buf[24])
{
  /* sim_text_format: g_snprintf's text, cheaper (it always fits: 3 + 10 digits) */
  if (l < c->L)
    sim_text_format (buf, 24, "L%u", l);
  else
    sim_text_format (buf, 24, "mtp%u", l - c->L);
  return buf;
}

/* Layer l's forward task (a decoder layer, or MTP layer L + d: the same decoder layer) with
 * its stage-3 gathers, tp, ep and cp collectives and activation offload. `region_end`: the
 * stage (without the loss) leaves its forward's autocast region after it, which frees the
 * casts cached by its layers [lo, hi). */
static void
forward_layer (StepCtx *c, guint l, gboolean region_end)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  char tag[24];
  if (c->gathers && l + p->par.prefetch < c->hi)
    gather (c, (gint) (l + p->par.prefetch), "fwd", l > c->lo ? c->fwd_task[l - 1] : NONE);
  else if (c->end_units && c->fwd_head && l < c->L && l + p->par.prefetch == c->hi)
    gather_head (c, l > c->lo ? c->fwd_task[l - 1] : NONE); /* as layer hi's would be */
  guint tp_start = plan_step_tp_before (c, PLAN_TP_LAYER, (gint) l);
  guint cp_start = cp_before (c, MODEL_CP_FORWARD, (gint) l);
  c->fwd_task[l] = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD,
                                    (gint) l, c->mb, "fwd %s mb%d", layer_tag (c, l, tag), c->mb);
  if (c->gathers)
    plan_task_dep (p, c->gather_task[l]);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  plan_task_dep (p, c->pp_wait);
  plan_task_add_pass (p, &pc->layer.fwd);
  c->act_layer[l] = plan_step_store_activations (c, l);
  c->autocast_cache[l] = plan_step_autocast_cache (c, l);
  plan_task_pass_workspace (p, &pc->layer.fwd);
  for (guint j = c->lo; region_end && j < c->hi; j++)
    plan_task_free (p, c->autocast_cache[j], MODEL_EFFECT_AT_END);
  if (c->regathers)
    plan_task_free (p, c->gather_handle[l], MODEL_EFFECT_AT_END);
  plan_step_tp_after (c, PLAN_TP_LAYER, tp_start, (gint) l);
  plan_step_ep (c, MODEL_EP_FORWARD, (gint) l);
  cp_after (c, MODEL_CP_FORWARD, cp_start, c->fwd_task[l], (gint) l);
  plan_offload_save_activation (p, c->rank, c->fwd_task[l], l, c->mb, &c->act_layer[l]);
}

/* A compute task of MTP depth d's block `what` in `pass` (kind FORWARD or BACKWARD) after
 * the pending tp/cp/pp collectives, with its pass (the caller adds its memory effects and
 * then plan_task_pass_workspace); returns the task. */
static guint
mtp_task (StepCtx *c, ModelTaskKind kind, guint d, const char *what, const ModelPass *pass)
{
  ModelPlan *p = c->p;
  guint t = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, kind, (gint) (c->L + d), c->mb,
                             "%s mtp%u %s mb%d", kind == MODEL_TASK_KIND_FORWARD ? "fwd" : "bwd",
                             d, what, c->mb);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  plan_task_dep (p, c->pp_wait);
  plan_task_add_pass (p, pass);
  return t;
}

/* DeepSeek-V3's multi-token-prediction depths on the rank holding the loss, after its last
 * decoder layer and before the main head (Megatron-LM megatron/core/models/gpt/
 * gpt_model.py _postprocess: self.mtp(...) before the output layer; megatron/core/
 * transformer/multi_token_prediction.py MultiTokenPredictionLayer). Depth d, layer L + d
 * of the per-layer arrays: one task of the shifted embedding, enorm, hnorm, concatenation
 * and eh_proj (pc->mtp_proj), the decoder layer as the main model's last (forward_layer:
 * its EP dispatch and combine, checkpointing, tp and cp collectives), then one task of its
 * shared_head.norm, the shared output layer and cross-entropy (pc->head; process_mtp_loss),
 * whose saved tensors live until that head's backward. Approximate: Megatron computes the
 * depths' logits after all their layers; here each depth's head follows its layer (the
 * same order for one depth, DeepSeek-V3's). */
static void
mtp_forward (StepCtx *c)
{
  const PlanCosts *pc = c->pc;
  for (guint d = 0; d < c->n_mtp; d++)
    {
      guint l = c->L + d;
      mtp_task (c, MODEL_TASK_KIND_FORWARD, d, "proj", &pc->mtp_proj.fwd);
      c->act_mtp_proj[l] = plan_task_alloc (c->p, MODEL_MEM_ACTIVATIONS, pc->mtp_proj.act_saved,
                                            MODEL_EFFECT_AT_START);
      plan_task_pass_workspace (c->p, &pc->mtp_proj.fwd);
      forward_layer (c, l, FALSE);
      mtp_task (c, MODEL_TASK_KIND_FORWARD, d, "head", &pc->head.fwd);
      c->act_mtp_head[l] = plan_task_alloc (c->p, MODEL_MEM_ACTIVATIONS, pc->head.act_saved,
                                            MODEL_EFFECT_AT_START);
      plan_task_pass_workspace (c->p, &pc->head.fwd);
    }
}

/* The forward's start: FSDP's root gather and first prefetches, the embedding (`embed`). */
static void
forward_begin (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  c->lo = lo, c->hi = hi;
  /* Under virtual stages a micro-batch's later chunk runs while its first holds the root
   * unit (rank 0: the embedding's chunk, then the chunk pp further on): that hold and its
   * gather stay the micro-batch's. A chunk with the embedding or the head holds nothing
   * yet. */
  g_assert (!(embed || head) || (!c->root_held && !c->head_held));
  if (!c->root_held)
    c->root_gather_task = NONE, c->root_gather_handle = 0;
  if (!c->head_held)
    c->head_gather_task = NONE, c->head_gather_handle = 0;
  c->fwd_head = head;
  if (c->gathers)
    {
      /* FSDP's root unit (embedding, final norm, head) stays gathered until its backward;
       * under pp the stages holding the embedding or the head gather it (whole: approximate).
       * Under end_units the embedding's own unit instead, and the head's before its forward
       * (forward_layer, forward_end). */
      if (c->end_units && embed)
        unit_hold (c, &c->root_unit, pc->weight_embedding, "params embed", NONE,
                   &c->root_gather_task, &c->root_gather_handle, &c->root_held);
      else if (!c->end_units && (embed || head))
        unit_hold (c, &c->root_unit, pc->weight_root, "params root", NONE,
                   &c->root_gather_task, &c->root_gather_handle, &c->root_held);
      for (guint l = lo; l < MIN (lo + p->par.prefetch, hi); l++)
        gather (c, (gint) l, "fwd", NONE);
      if (c->end_units && head && lo + p->par.prefetch > hi)
        gather_head (c, NONE); /* a chunk shorter than the prefetch */
    }
  if (embed)
    {
      guint tp_start = plan_step_tp_before (c, PLAN_TP_EMBEDDING, -1);
      plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, -1, c->mb,
                       "fwd embed mb%d", c->mb);
      plan_task_dep (p, c->root_gather_task);
      plan_task_dep (p, c->tp_wait);
      plan_task_dep (p, c->cp_wait);
      plan_task_dep (p, c->pp_wait);
      plan_task_add_pass (p, &pc->embedding.fwd);
      c->act_embedding = plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, pc->embedding.act_saved,
                                          MODEL_EFFECT_AT_START);
      plan_task_pass_workspace (p, &pc->embedding.fwd);
      if (c->end_units && c->regathers) /* resharded after its forward */
        unit_release (c, &c->root_unit, &c->root_gather_handle, &c->root_held);
      plan_step_tp_after (c, PLAN_TP_EMBEDDING, tp_start, -1);
    }
}

/* The forward's end after its layers: the MTP depths, the head and the loss. */
static void
forward_end (StepCtx *c)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  guint lo = c->lo, hi = c->hi;
  mtp_forward (c);
  if (c->end_units)
    gather_head (c, hi > lo ? c->fwd_task[hi - 1] : NONE); /* prefetch 0 */
  guint tp_head = plan_step_tp_before (c, PLAN_TP_HEAD, -1);
  plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, -1, c->mb,
                   "fwd head mb%d", c->mb);
  plan_task_dep (p, c->head_gather_task);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  plan_task_dep (p, c->pp_wait);
  plan_task_add_pass (p, &pc->head.fwd);
  c->act_head = plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, pc->head.act_saved, MODEL_EFFECT_AT_START);
  double cast = plan_step_head_cast_bytes (c);
  c->head_cast = cast > 0 ? plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, cast, MODEL_EFFECT_AT_START) : 0;
  plan_task_pass_workspace (p, &pc->head.fwd);
  /* The forward and the loss ran inside one autocast region; leaving it clears the cache. */
  for (guint l = lo; l < hi; l++)
    plan_task_free (p, c->autocast_cache[l], MODEL_EFFECT_AT_END);
  for (guint l = c->L; l < c->L + c->n_mtp; l++)
    plan_task_free (p, c->autocast_cache[l], MODEL_EFFECT_AT_END);
  plan_step_tp_after (c, PLAN_TP_HEAD, tp_head, -1);
}

void
plan_step_forward (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head)
{
  forward_begin (c, lo, hi, embed, head);
  /* A stage without the loss leaves its forward's autocast region after its last layer */
  for (guint l = lo; l < hi; l++)
    forward_layer (c, l, !head && l + 1 == hi);
  if (head)
    forward_end (c);
}

/* ---- backward ---------------------------------------------------------------------------- */

/* What layer l's backward issues before its task (backward_layer_before), for the task. */
typedef struct
{
  guint tp_start, cp_start, restored;
} BackwardBefore;

/* Under end_units, the embedding's unit gathered again for its backward after `after` (its
 * pre-backward hook, or the backward prefetch of the layer above it), once a backward. */
static void
regather_embedding (StepCtx *c, guint after)
{
  if (c->root_held || !c->regathers)
    return;
  unit_hold (c, &c->root_unit, c->pc->weight_embedding, "params embed (bwd)", after,
             &c->root_gather_task, &c->root_gather_handle, &c->root_held);
}

/* Layer l's backward up to its task: the stage-3 re-gather, the offloaded activations'
 * restore, the recompute, and the tp, ep and cp collectives the task waits for. */
static void
backward_layer_before (StepCtx *c, guint l, BackwardBefore *before)
{
  ModelPlan *p = c->p;
  guint prefetch = p->par.prefetch;
  if (c->regathers && l >= c->lo + prefetch)
    gather (c, (gint) (l - prefetch), "bwd", l + 1 < c->hi ? c->bwd_task[l + 1] : NONE);
  else if (c->end_units && c->regathers && c->bwd_embed && l + 1 == c->lo + prefetch)
    regather_embedding (c, l + 1 < c->hi ? c->bwd_task[l + 1] : NONE);
  /* offloaded activations come back when the backward reaches them (torchtune's
   * OffloadActivations unpack hook, training/_activation_offloading.py: a layer's tensors
   * as autograd unpacks them, the next layer's prefetched then): the top layer's after the
   * head's backward, not during the head's forward */
  c->restored = plan_offload_restore_activation (p, c->rank, l, c->mb,
                                                 l + 1 < c->hi ? c->bwd_task[l + 1]
                                                               : c->bwd_head,
                                                 &c->act_layer[l]);
  plan_step_recompute_before_backward (c, l);
  before->tp_start = tp_before_backward (c, PLAN_TP_LAYER, (gint) l);
  plan_step_ep (c, MODEL_EP_BACKWARD, (gint) l);
  before->cp_start = cp_before (c, MODEL_CP_BACKWARD, (gint) l);
  before->restored = c->restored;
}

/* Layer l's backward task after backward_layer_before, with its gradients' reductions. */
static void
backward_layer_task (StepCtx *c, guint l, const BackwardBefore *before)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  guint tp_start = before->tp_start, cp_start = before->cp_start;
  c->restored = before->restored;
  char tag[24];
  c->bwd_task[l] = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD,
                                    (gint) l, c->mb, "bwd %s mb%d", layer_tag (c, l, tag), c->mb);
  plan_task_dep (p, c->restored);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  plan_task_dep (p, c->pp_wait);
  if (c->regathers)
    plan_task_dep (p, c->gather_task[l]);
  plan_task_add_pass (p, &pc->layer.bwd);
  guint full = produce_gradients (c, pc->grad_layer, TRUE);
  if (accumulates_beside (c)) /* each weight's new gradient, one at a time: the largest */
    plan_task_workspace (p, largest_layer_grad (c));
  plan_task_pass_workspace (p, &pc->layer.bwd);
  plan_task_free (p, c->recomputed[l], MODEL_EFFECT_AT_END);
  plan_task_free (p, c->act_layer[l], MODEL_EFFECT_AT_END);
  if (c->w_hold_layer > 0) /* ZB-H1's B: what its W needs stays (plan_pp.c) */
    c->w_hold[l] = plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, c->w_hold_layer,
                                    MODEL_EFFECT_AT_END);
  if (c->gathers)
    plan_task_free (p, c->gather_handle[l], MODEL_EFFECT_AT_END);
  tp_overlapped (c, PLAN_TP_LAYER, tp_start, (gint) l);
  cp_after (c, MODEL_CP_BACKWARD, cp_start, c->bwd_task[l], (gint) l);
  char what_buf[64];
  g_autofree char *slow = NULL;
  const char *what = sim_text_label (what_buf, sizeof what_buf, &slow, "grads %s", tag);
  shard_reduce (c, pc->params_layer, c->bwd_task[l], full, 0, (gint) l, what);
  bucket_reduce (c, plan_ep_dense_params (p, pc->params_layer), c->bwd_task[l], (gint) l, FALSE);
  if (c->last_mb)
    plan_ep_reduce_grads (p, c->rank, c->bwd_task[l], (gint) l, c->mb);
}

static void
backward_layer (StepCtx *c, guint l)
{
  BackwardBefore before;
  backward_layer_before (c, l, &before);
  backward_layer_task (c, l, &before);
}

/* The MTP depths' backward, after the main head's (the order autograd runs them: the MTP
 * losses reach the graph through MTPLossAutoScaler on the main output layer's input,
 * multi_token_prediction.py process_mtp_loss, so the main output layer's backward comes
 * first, then the depths' heads, last depth first — the later-created nodes first — and
 * then, once the concatenated hidden states have all their gradients, the depths' layers,
 * last first) and before the decoder layers'. Each head's backward frees its saved
 * tensors; each depth's block before its layer produces the gradients of enorm, hnorm,
 * eh_proj and shared_head.norm (pc->params_mtp) and, on a pipeline stage without the
 * embedding (`embed` FALSE) and with an untied head, those of the stage's copy of the
 * embedding (Megatron's mtp_process stage holds one, language_module.py
 * setup_embeddings_and_output_layer), all booked at depth 0's, the last to contribute. */
static void
mtp_backward (StepCtx *c, gboolean embed)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  for (guint d = c->n_mtp; d-- > 0;)
    {
      mtp_task (c, MODEL_TASK_KIND_BACKWARD, d, "head", &pc->head.bwd);
      plan_task_pass_workspace (p, &pc->head.bwd);
      plan_task_free (p, c->act_mtp_head[c->L + d], MODEL_EFFECT_AT_END);
    }
  gboolean copy = !embed && !p->arch->tied_embeddings;
  for (guint d = c->n_mtp; d-- > 0;)
    {
      guint l = c->L + d;
      backward_layer (c, l);
      double params = pc->params_mtp + (copy && d == 0 ? pc->params_embedding : 0);
      double grad = pc->grad_mtp + (copy && d == 0 ? pc->grad_embedding : 0);
      guint t = mtp_task (c, MODEL_TASK_KIND_BACKWARD, d, "proj", &pc->mtp_proj.bwd);
      guint full = produce_gradients (c, grad, FALSE);
      plan_task_pass_workspace (p, &pc->mtp_proj.bwd);
      plan_task_free (p, c->act_mtp_proj[l], MODEL_EFFECT_AT_END);
      g_autofree char *what = g_strdup_printf ("grads mtp%u", d);
      shard_reduce (c, params, t, full, 0, (gint) l, what);
      bucket_reduce (c, params, t, (gint) l, FALSE);
    }
}

/* SP: the norms' and row-parallel biases' gradients (`bytes`), each tp rank's from its
 * sequence shard, all-reduced over tp once after the last backward `after` (Megatron
 * finalize_model_grads.py _allreduce_non_tensor_model_parallel_grads, one coalesced
 * all-reduce). */
void
plan_step_sp_grads (StepCtx *c, guint after, double bytes)
{
  if (bytes <= 0)
    return;
  guint ar = plan_collective_on (c->p, c->rank, MODEL_STREAM_TP, MODEL_MESH_BIT (MODEL_MESH_TP),
                                 HW_COLLECTIVE_ALL_REDUCE, bytes, -1, -1,
                                 "sequence-parallel grads (norms, row biases)");
  if (ar != NONE)
    plan_task_dep (c->p, after), c->tp_wait = ar;
}

/* The backward's start: the head, loss and MTP depths (`head`), and the re-gathers of the
 * first layers under stage 3. Returns the last compute task (NONE without `head`). */
static guint
backward_begin (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  c->lo = lo, c->hi = hi;
  /* Parameters whose gradients are complete after the head's backward: the root unit less
   * the embedding. A tied head's gradient is the embedding's, which the embedding's
   * backward completes: DDP's reducer marks a parameter ready when its AccumulateGrad hook
   * fires, once per backward after every use has contributed (torch/csrc/distributed/c10d/
   * reducer.cpp, autograd_hook), so it is bucketed at the embedding. */
  double head_params = pc->params_root - pc->params_embedding;
  guint tp_start, last = NONE;
  c->bwd_embed = embed;
  if (head)
    {
      tp_start = tp_before_backward (c, PLAN_TP_HEAD, -1);
      last = end_backward (c, TRUE, embed, &pc->head.bwd, pc->grad_head, c->act_head,
                           &c->grad_head_full);
      if (c->w_hold_head > 0) /* ZB-H1's B: what the head's W needs stays (plan_pp.c) */
        c->head_w_hold = plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, c->w_hold_head,
                                          MODEL_EFFECT_AT_END);
      plan_task_free (p, c->head_cast, MODEL_EFFECT_AT_END);
      /* a last pipeline stage: its root unit is the head's; under end_units the head's own
       * unit, resharded and its gradient reduce-scattered after its backward (FSDP2's
       * post-backward hook on the unit's input, _fsdp_state.py _post_backward) */
      if (c->end_units)
        unit_release (c, &c->head_unit, &c->head_gather_handle, &c->head_held);
      else if (!embed)
        unit_release (c, &c->root_unit, &c->root_gather_handle, &c->root_held);
      tp_overlapped (c, PLAN_TP_HEAD, tp_start, -1);
      bucket_reduce (c, head_params, last, -1, FALSE);
      if (!embed || c->end_units)
        shard_reduce (c, head_params, last, c->grad_head_full, 0, -1, "grads head");
      mtp_backward (c, embed);
    }
  c->bwd_head = last;
  /* The top layers' re-gathers wait for the head's backward: FSDP2 unshards a layer for its
   * backward in its pre-backward hook, which autograd runs when its output's gradient is
   * ready, and prefetches the previous layer from there (torch/distributed/fsdp/
   * _fully_shard/_fsdp_param_group.py pre_backward, _backward_prefetch), as DeepSpeed's
   * stage-3 pre-backward fetch does; only the root unit stays gathered from the forward
   * (_fsdp_state.py _lazy_init: post_forward_mesh_info = None for the root). Before, they
   * ran on the comm stream during the forward and held prefetch + 1 layers over the head. */
  if (c->regathers)
    for (guint l = hi; l-- > lo && l + p->par.prefetch >= hi;)
      gather (c, (gint) l, "bwd", last);
  return last;
}

/* The backward's end after its layers (`last` the last layer task built): the embedding
 * (`embed`) with the root unit's reductions, or a stage's last bucket. Returns the last
 * compute task. */
static guint
backward_end (StepCtx *c, guint last, gboolean embed, gboolean head)
{
  ModelPlan *p = c->p;
  const PlanCosts *pc = c->pc;
  guint tp_start;
  if (!embed)
    {
      bucket_reduce (c, 0, last, -1, TRUE); /* the stage's last bucket */
      return last;
    }
  if (c->end_units) /* prefetch 0, or no layer in the chunk */
    regather_embedding (c, last);
  tp_start = tp_before_backward (c, PLAN_TP_EMBEDDING, -1);
  guint emb = end_backward (c, FALSE, head, &pc->embedding.bwd, pc->grad_embedding,
                            c->act_embedding, &c->grad_embedding_full);
  if (c->end_units)
    {
      g_assert (plan_current (p)->id == emb); /* end_backward's task is the current one */
      plan_task_dep (p, c->root_gather_task);
    }
  unit_release (c, &c->root_unit, &c->root_gather_handle, &c->root_held);
  tp_overlapped (c, PLAN_TP_EMBEDDING, tp_start, -1);
  if (c->last_mb && head)
    plan_step_sp_grads (c, emb, c->p->tp.sp_grad_bytes);
  if (head && !c->end_units)
    shard_reduce (c, pc->params_root, emb, c->grad_head_full, c->grad_embedding_full, -1,
                  "grads root");
  else /* a first pipeline stage: the embedding alone */
    shard_reduce (c, pc->params_embedding, emb, c->grad_embedding_full, 0, -1, "grads embed");
  bucket_reduce (c, pc->params_embedding, emb, -1, TRUE);
  return emb;
}

guint
plan_step_backward (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head)
{
  guint last = backward_begin (c, lo, hi, embed, head);
  for (guint l = hi; l-- > lo;)
    {
      backward_layer (c, l);
      last = c->bwd_task[l];
    }
  return backward_end (c, last, embed, head);
}

/* ---- optimizer ----------------------------------------------------------------------------- */

/* B of the fp32 gradient partition DeepSpeed's ZeRO-1/2 optimizer step creates under mixed
 * precision: step() flattens this rank's 16-bit gradient partition, casts it to the fp32
 * master's dtype and attaches it as the master partition's .grad for the optimizer, then
 * drops it after the step (deepspeed/runtime/zero/stage_1_and_2.py, step(): "Step 4:- get
 * rid of the fp32 gradients"). 4 B × the partition's `part` parameters; 0 for FSDP's
 * SHARD_GRAD_OP and without a separate fp32 master (fp32, the amp precisions, pure bf16). */
static double
fp32_grad_partition (const StepCtx *c, double part)
{
  const ModelStack *s = &c->p->stack;
  if (!sharded_in (c, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP)
      || sharded_in (c, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST)
      || (c->p->par.mode != MODEL_DP_ZERO1 && c->p->par.mode != MODEL_DP_ZERO2))
    return 0;
  double master = model_stack_master_bytes (s);
  return master > model_stack_gradient_bytes (s) ? master * part : 0;
}

void
plan_step_optimizer (StepCtx *c, guint last_comm)
{
  ModelPlan *p = c->p;
  if (plan_offload_optimizer (p, c->rank, c->pc))
    return; /* on the host CPU (plan_offload.c) */
  /* the trainable parameters of a tp rank (of its pipeline stage), and the part its
   * optimizer steps: the data-parallel mode's shard, the routed experts' over expert-dp */
  double dense, expert;
  plan_pp_stage_params (p, c->rank, &dense, &expert);
  double part = dense * plan_state_shard_fraction (p, MODEL_MEM_OPTIMIZER_STATE,
                                                   MODEL_PHASE_STEP, FALSE)
                + expert * plan_state_shard_fraction (p, MODEL_MEM_OPTIMIZER_STATE,
                                                      MODEL_PHASE_STEP, TRUE);
  /* paged optimizer states (plan_paged.c): the spilled part of the states is updated chunk
   * by chunk after the resident part, each chunk paged in before its update (the first
   * beside the resident part's) and out after it */
  guint n_chunks = plan_paged_n_chunks (p, plan_state_shard_fraction (
                                               p, MODEL_MEM_OPTIMIZER_STATE, MODEL_PHASE_STEP,
                                               FALSE));
  double spill = p->paged_spill, chunk_bytes = n_chunks > 0 ? spill / n_chunks : 0;
  double resident = plan_state_rank_initial (p, c->rank, MODEL_MEM_OPTIMIZER_STATE);
  double paged_part = n_chunks > 0 ? part * spill / (spill + resident) : 0;
  guint chunk_handle = 0;
  guint chunk_in = n_chunks > 0 ? plan_paged_chunk_in (p, c->rank, 0, chunk_bytes, last_comm,
                                                       &chunk_handle)
                                : NONE;
  guint step = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_OPTIMIZER,
                                -1, -1, "optimizer step");
  if (plan_states_at_first_step (p)) /* the first step's _init_group (plan.h) */
    g_array_index (p->creation_tasks, guint, c->rank * MODEL_N_MEM + MODEL_MEM_OPTIMIZER_STATE)
      = step;
  plan_task_dep (p, last_comm);
  plan_task_dep (p, c->tp_wait);
  plan_task_dep (p, c->cp_wait);
  /* Under optimizer_in_backward every parameter was stepped in its backward hook. */
  gboolean in_bwd = p->stack.framework.optimizer_in_backward;
  ModelPass pass = optimizer_pass (p, c->pc, in_bwd ? 0 : part - paged_part);
  plan_task_add_pass (p, &pass);
  /* Temporaries of the step itself (e.g. foreach AdamW's sqrt of the second moment). */
  if (!in_bwd)
    {
      /* the whole model's temporaries per trainable parameter, times the part this rank
       * steps (its tp share of its pipeline stage, sharded): QA, under pp every stage held
       * the whole model's (262.83 GiB a rank for 70B at pp 8) */
      ModelOptimizerView view = plan_optimizer_view (p);
      double share = part / model_stack_trainable_params (&p->stack, p->arch);
      double ws = model_stack_optimizer_workspace (&p->stack, p->arch, &view) * share;
      /* ZeRO-3 steps its partition a sub-group at a time (stage3.py step: the optimizer's
       * params set to one sub-group's flat fp32 tensor, then optimizer.step()), so the
       * temporaries of a per-tensor or foreach optimizer are one sub-group's at most: a
       * sub-group closes at the parameter that takes it to sub_group_size or beyond */
      if (view.sees == MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS && p->par.mode == MODEL_DP_ZERO3
          && ws > 0)
        {
          double partition = model_stack_largest_stepped (&p->stack, p->arch, &view) * share;
          double sub_group = PLAN_DS_SUB_GROUP_ELEMENTS
                             + model_stack_largest_stepped (&p->stack, p->arch, NULL) * share;
          if (partition > sub_group)
            ws *= sub_group / partition;
        }
      g_autoptr (GArray) tmp = plan_optimizer_workspace_tensors (p, ws);
      plan_task_free (p, plan_task_alloc_tensors (p, MODEL_MEM_WORKSPACE, (const double *) tmp->data,
                                                  tmp->len, MODEL_EFFECT_AT_START),
                      MODEL_EFFECT_AT_END);
    }
  double fp32_grads = fp32_grad_partition (c, part); /* a model state while the step runs */
  plan_task_free (p, plan_task_alloc (p, MODEL_MEM_GRADIENTS, fp32_grads, MODEL_EFFECT_AT_START),
                  MODEL_EFFECT_AT_END);
  guint opt = plan_current (p)->id;
  double state = fp32_grads;
  for (guint m = MODEL_MEM_WEIGHTS; m <= MODEL_MEM_OPTIMIZER_STATE; m++)
    state += plan_state_rank_initial (p, c->rank, m);
  state += plan_state_rank_initial (p, c->rank, MODEL_MEM_LORA);
  /* the spilled chunks, each after its page-in, which waits for the update two chunks
   * before (so at most three chunks are on the GPU: one paging out, one updating, one
   * paging in) */
  guint before_last = NONE; /* the update of chunk i − 2 (opt: of chunk i − 1) */
  for (guint i = 0; i < n_chunks; i++)
    {
      if (i > 0)
        chunk_in = plan_paged_chunk_in (p, c->rank, i, chunk_bytes, before_last,
                                        &chunk_handle);
      before_last = i > 0 ? opt : NONE;
      opt = plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_OPTIMIZER, -1, -1,
                             "optimizer step (paged %u)", i);
      plan_task_dep (p, chunk_in);
      ModelPass chunk = optimizer_pass (p, c->pc, paged_part / n_chunks);
      plan_task_add_pass (p, &chunk);
      if (i + 1 < n_chunks) /* the last one's after the gradients' release, below */
        plan_paged_chunk_out (p, c->rank, i, chunk_bytes, opt, chunk_handle);
    }
  /* zero_grad(set_to_none=True), PyTorch's default since 2.0, releases the gradients. */
  for (guint i = 0; i < p->grad_handles->len; i++)
    {
      guint h = g_array_index (p->grad_handles, guint, i);
      state += g_array_index (p->handles, ModelMemEffect, h).bytes;
      plan_task_free (p, h, MODEL_EFFECT_AT_END);
    }
  g_array_set_size (p->grad_handles, 0);
  p->state_bytes[c->rank] = model_ledger_whole_bytes (state);
  if (n_chunks > 0)
    plan_paged_chunk_out (p, c->rank, n_chunks - 1, chunk_bytes, opt, chunk_handle);
  /* Weights step → rest: under stages 1–2 every rank updated its partition and gathers
   * the new (trainable) parameters (ZeRO §5.1). */
  guint first;
  double wb = model_stack_weight_bytes (&p->stack);
  if (c->sharding)
    plan_redistribute (p, c->rank, MODEL_STATE_WEIGHTS, MODEL_PHASE_STEP, MODEL_PHASE_REST,
                       dense * wb, -1, -1,
                       "updated params", opt, &first);
  plan_ep_gather_params (p, c->rank, opt, expert * wb);
}


guint
plan_step_slots (const ModelPlan *p)
{
  return (guint) p->arch->n_layers + p->stack.mtp_layers;
}

void
plan_step_ctx_init (StepCtx *c, ModelPlan *p, guint rank, const PlanCosts *pc, guint *buf)
{
  guint L = (guint) p->arch->n_layers, N = plan_step_slots (p);
  *c = (StepCtx){
    .p = p, .rank = rank, .pc = pc, .L = L, .n_mtp = p->stack.mtp_layers, .slots = N,
    .lo = 0, .hi = L,
    /* Sharding over one rank is no sharding: the plan is the single-GPU one — unless
     * something is offloaded, which works on the stage-2/3 machinery (ZeRO-Offload). */
    .sharding = model_parallel_shard_size (&p->par) > 1 || model_offload_any (&p->stack.offload),
    .ckpt = p->stack.checkpointing,
    .segment = plan_step_segment_length (p),
    .tp_wait = NONE, .cp_wait = NONE, .pp_wait = NONE, .bwd_head = NONE,
  };
  plan_step_ctx_buffers (c, buf);
  c->gathers = gathers (c);
  c->regathers = regathers (c);
  c->end_units = end_units (c);
  c->root_gather_task = c->head_gather_task = NONE;
  plan_step_layer_tensors (c);
}

void
plan_step_ctx_buffers (StepCtx *c, guint *buf)
{
  guint N = c->slots;
  c->act_layer = buf, c->gather_task = buf + N, c->gather_handle = buf + 2 * N;
  c->fwd_task = buf + 3 * N, c->bwd_task = buf + 4 * N, c->act_mtp_proj = buf + 5 * N;
  c->recomputed = buf + 6 * N, c->autocast_cache = buf + 7 * N, c->act_mtp_head = buf + 8 * N;
  c->w_hold = buf + 9 * N;
}

void
plan_step_slot_load (StepCtx *c, const PlanStepSlot *s)
{
  plan_step_ctx_buffers (c, s->buf);
  c->head_w_hold = s->head_w_hold;
  c->act_embedding = s->act_embedding, c->act_head = s->act_head, c->head_cast = s->head_cast;
  c->root_gather_task = s->root_gather_task, c->root_gather_handle = s->root_gather_handle;
  c->head_gather_task = s->head_gather_task, c->head_gather_handle = s->head_gather_handle;
  c->root_held = s->root_held, c->head_held = s->head_held;
  c->grad_head_full = s->grad_head_full, c->grad_embedding_full = s->grad_embedding_full;
}

void
plan_step_slot_store (const StepCtx *c, PlanStepSlot *s)
{
  s->act_embedding = c->act_embedding, s->act_head = c->act_head, s->head_cast = c->head_cast;
  s->root_gather_task = c->root_gather_task, s->root_gather_handle = c->root_gather_handle;
  s->head_gather_task = c->head_gather_task, s->head_gather_handle = c->head_gather_handle;
  s->root_held = c->root_held, s->head_held = c->head_held;
  s->grad_head_full = c->grad_head_full, s->grad_embedding_full = c->grad_embedding_full;
  s->head_w_hold = c->head_w_hold;
}

static void
mb_enter (StepCtx *c, const PlanStepMb *m)
{
  plan_step_slot_load (c, m->slot);
  c->mb = (gint) m->mb;
  c->last_mb = m->mb + 1 == c->p->stack.grad_accum;
  c->lo = m->lo, c->hi = m->hi;
  c->tp_wait = m->tp_wait, c->cp_wait = m->cp_wait, c->pp_wait = m->pp_wait;
}

static void
mb_leave (const StepCtx *c, PlanStepMb *m)
{
  plan_step_slot_store (c, m->slot);
  m->tp_wait = c->tp_wait, m->cp_wait = c->cp_wait, m->pp_wait = c->pp_wait;
}

/* Megatron's combined 1F1B step ([moe] a2a_overlap; combined_1f1b.py
 * combined_forward_backward_step, the layer schedule plan of
 * models/common/model_chunk_schedule_plan.py): f's embedding (when its chunk holds it),
 * b's head and loss backward (when its chunk holds them), then f's k-th layer beside b's
 * k-th from last, each layer's dispatch/combine all-to-alls on the communication stream
 * while the other micro-batch's layer computes, then f's head and loss, b's embedding
 * backward. Here each micro-batch keeps its own chain of collective waits, and a backward
 * layer's all-to-alls (backward_layer_before) are issued before the forward layer it pairs
 * with, after the backward's own previous task: in the streams' FIFO order each
 * micro-batch's all-to-alls then run beside the other's layer task (issued after the
 * forward task, they would wait for it and for the forward's all-to-alls, and hide
 * nothing). Chunks of unequal layer counts run their extra layers alone. Approximate: a
 * layer is one task, so the overlap window is the other micro-batch's whole layer, not its
 * attention or MLP half. Memory: f's forward allocates while b's backward frees, so about
 * one more layer's activations (and the embedding's) are held than under F/B alternation,
 * as in Megatron. */
void
plan_step_combined (StepCtx *c, PlanStepMb *f, PlanStepMb *b)
{
  mb_enter (c, f);
  forward_begin (c, f->lo, f->hi, f->embed, f->head);
  f->last = plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE);
  mb_leave (c, f);
  mb_enter (c, b);
  b->last = backward_begin (c, b->lo, b->hi, b->embed, b->head);
  mb_leave (c, b);
  guint nf = f->hi - f->lo, nb = b->hi - b->lo;
  for (guint k = 0; k < MAX (nf, nb); k++)
    {
      BackwardBefore before;
      guint lb = b->hi - 1 - k, lf = f->lo + k;
      if (k < nb)
        {
          mb_enter (c, b);
          backward_layer_before (c, lb, &before);
          mb_leave (c, b);
        }
      if (k < nf)
        {
          mb_enter (c, f);
          /* a chunk without the loss leaves its autocast region after its last layer */
          forward_layer (c, lf, !f->head && lf + 1 == f->hi);
          f->last = c->fwd_task[lf];
          mb_leave (c, f);
        }
      if (k < nb)
        {
          mb_enter (c, b);
          backward_layer_task (c, lb, &before);
          b->last = c->bwd_task[lb];
          mb_leave (c, b);
        }
    }
  if (f->head)
    {
      mb_enter (c, f);
      forward_end (c);
      f->last = plan_last_on_stream (c->p, c->rank, MODEL_STREAM_COMPUTE);
      mb_leave (c, f);
    }
  mb_enter (c, b);
  b->last = backward_end (c, b->last, b->embed, b->head);
  mb_leave (c, b);
}

/* Combined 1F1B without pipelining (schedules.py combined_1f1b_schedule_for_no_pipelining):
 * micro-batch 0's forward, then for i = 1 … m − 1 the forward of i combined with the
 * backward of i − 1 (plan_step_combined), then the backward of m − 1. */
static void
step_combined (StepCtx *c, guint L, guint *bufs, gsize per_mb)
{
  guint m = (guint) c->p->stack.grad_accum;
  PlanStepSlot slots[2] = { { .buf = bufs }, { .buf = bufs + per_mb } };
  PlanStepMb mbs[2];
  for (guint j = 0; j < 2; j++)
    mbs[j] = (PlanStepMb){ .slot = &slots[j], .lo = 0, .hi = L, .embed = TRUE, .head = TRUE,
                           .tp_wait = NONE, .cp_wait = NONE, .pp_wait = NONE };
  mb_enter (c, &mbs[0]);
  plan_step_forward (c, 0, L, TRUE, TRUE);
  mb_leave (c, &mbs[0]);
  for (guint i = 1; i < m; i++)
    {
      PlanStepMb *f = &mbs[i % 2];
      f->mb = i, f->tp_wait = f->cp_wait = NONE;
      plan_step_combined (c, f, &mbs[(i - 1) % 2]);
    }
  mb_enter (c, &mbs[(m - 1) % 2]);
  plan_step_backward (c, 0, L, TRUE, TRUE);
}

/* ---- micro-batches 2 … GA − 2 as copies of micro-batch 1 ------------------------------------
 *
 * Without pipelining, micro-batches 1 … GA − 2 of a rank run the same code on the same state
 * but for shifted ids: the schedule branches on the index only at micro-batch 0 (gradients
 * allocated once, kept gradients) and at the last (bucketed reductions, the SP all-reduce).
 * So where nothing else carries state from one micro-batch to the next (no tp, cp or ep
 * collectives, no pipeline, offload, paged states, MTP, optimizer in the backward or tied
 * embeddings: template_applies), micro-batch k is micro-batch 1 with its tasks moved by
 * (k − 1) × its task count, its handles and tensor sizes likewise, its labels' " mb1"
 * made " mb<k>", and each collective taking its group's next instance. template_check
 * takes micro-batch 1 as the template only when it holds exactly that: micro-batch 0 with
 * the same tasks (kind, stream, layer) one by one, dependencies into micro-batches 0 and 1
 * only, frees of its own buffers only, its buffers allocated in order by its own effects,
 * no kernel range or kept gradient added, labels naming the micro-batch only as a final
 * " mb1", and the recompute FLOPs the plan's total grew by in task order. The 8-GPU ZeRO-3
 * bench's plan (GA 8) derives micro-batches 0, 1 and 7 and copies 2 … 6 (bench/RESULTS.md,
 * h-speed3). tests/unit/cli/test_plan_memo compares the plans of every shipped scenario
 * with and without (model_plan_set_memo). */

/* Where the plan's arrays end (what a micro-batch appends to). */
typedef struct
{
  guint tasks, deps, effects, handles, sizes, kernels, grads, collectives;
  double hardware_flops;
} PlanMarks;

static void
plan_marks (const ModelPlan *p, PlanMarks *m)
{
  *m = (PlanMarks){ p->tasks->len, p->deps->len, p->effects->len, p->handles->len,
                    p->tensor_sizes->len, p->kernels->len, p->grad_handles->len,
                    p->collectives->len, p->hardware_flops };
}

/* Whether c's rank may copy micro-batches from a template (the comment above). */
static gboolean
template_applies (const StepCtx *c)
{
  const ModelPlan *p = c->p;
  return plan_memo_on () && p->stack.grad_accum >= 4 && p->tp.tp <= 1 && p->cp.cp <= 1
         && p->pp.pp <= 1 && !p->ep.on && !model_offload_any (&p->stack.offload)
         && p->paged_spill == 0 && c->n_mtp == 0
         && !p->stack.framework.optimizer_in_backward && !p->arch->tied_embeddings
         && c->w_hold_layer == 0 && c->w_hold_head == 0 && p->compute_gate == NONE;
}

/* Whether label `s` names the micro-batch only as a final " mb1" (*suffix: it does). */
static gboolean
template_label (const char *s, gboolean *suffix)
{
  gsize n = strlen (s);
  const char *at = strstr (s, "mb1");
  *suffix = n >= 4 && strcmp (s + n - 4, " mb1") == 0;
  return at == NULL || (*suffix && at == s + n - 3);
}

/* Whether micro-batch 1 (the plan between m1 and mn; micro-batch 0 from m0) is a template
 * (the comment above). */
static gboolean
template_check (const StepCtx *c, const PlanMarks *m0, const PlanMarks *m1,
                const PlanMarks *mn)
{
  const ModelPlan *p = c->p;
  guint len = mn->tasks - m1->tasks;
  if (len == 0 || m1->tasks - m0->tasks != len || mn->kernels != m1->kernels
      || mn->grads != m1->grads)
    return FALSE;
  guint dep = m1->deps, effect = m1->effects, handle = m1->handles, size = m1->sizes;
  double hw = m1->hardware_flops;
  for (guint i = 0; i < len; i++)
    {
      const ModelTask *a = &g_array_index (p->tasks, ModelTask, m0->tasks + i);
      const ModelTask *t = &g_array_index (p->tasks, ModelTask, m1->tasks + i);
      gboolean suffix;
      if (t->rank != c->rank || t->micro_batch != 1 || a->micro_batch != 0
          || a->kind != t->kind || a->stream != t->stream || a->layer != t->layer
          || (a->collective < 0) != (t->collective < 0)
          || t->offload != MODEL_OFFLOAD_OP_NONE || t->amount != 0 || t->host_sync
          || t->first_dep != dep || t->first_effect != effect
          || !template_label (t->label, &suffix))
        return FALSE;
      for (guint d = 0; d < t->n_deps; d++, dep++)
        {
          guint on = g_array_index (p->deps, guint, dep);
          if (on < m0->tasks || on >= t->id)
            return FALSE;
        }
      for (guint k = 0; k < t->n_effects; k++, effect++)
        {
          const ModelMemEffect *e = &g_array_index (p->effects, ModelMemEffect, effect);
          if (e->where != MODEL_MEM_ON_GPU)
            return FALSE;
          if (e->bytes > 0)
            {
              if (e->handle != handle++)
                return FALSE;
              if (e->n_tensors > 1 && e->first_tensor != size)
                return FALSE;
              size += e->n_tensors > 1 ? e->n_tensors : 0;
            }
          else if (e->handle < m1->handles || e->handle >= mn->handles)
            return FALSE;
        }
      if (t->collective >= 0)
        {
          const ModelCollective *k = &g_array_index (p->collectives, ModelCollective,
                                                     t->collective);
          if ((k->dims & MODEL_COLLECTIVE_EXPERT_BIT) != 0 || t->stream != MODEL_STREAM_COMM)
            return FALSE;
        }
      if (t->kind == MODEL_TASK_KIND_RECOMPUTE)
        hw += t->flops;
    }
  return dep == mn->deps && effect == mn->effects && handle == mn->handles
         && size == mn->sizes && memcmp (&hw, &mn->hardware_flops, sizeof hw) == 0;
}

/* Appends to `a` (of ModelMemEffect: the plan's handles or effects) copies of its n
 * entries from `from`, each handle moved by dh and each tensor range by ds: a template's
 * allocations as micro-batch k makes them. */
static void
append_shifted_effects (GArray *a, guint from, guint n, guint dh, guint ds)
{
  guint at = a->len;
  g_array_set_size (a, at + n);
  ModelMemEffect *e = &g_array_index (a, ModelMemEffect, 0);
  for (guint i = 0; i < n; i++)
    {
      ModelMemEffect x = e[from + i];
      x.handle += dh;
      if (x.n_tensors > 1)
        x.first_tensor += ds;
      e[at + i] = x;
    }
}

/* Appends micro-batch k (2 ≤ k) of c's rank as a copy of the template m1 … mn. */
static void
template_copy (StepCtx *c, const PlanMarks *m1, const PlanMarks *mn, guint k)
{
  ModelPlan *p = c->p;
  guint len = mn->tasks - m1->tasks, nh = mn->handles - m1->handles;
  guint ns = mn->sizes - m1->sizes;
  guint dt = (k - 1) * len, dh = (k - 1) * nh, ds = (k - 1) * ns;
  /* the tensor sizes and allocations, in the template's order (indices: the arrays grow) */
  guint at = p->tensor_sizes->len;
  g_array_set_size (p->tensor_sizes, at + ns);
  memcpy (&g_array_index (p->tensor_sizes, double, at),
          &g_array_index (p->tensor_sizes, double, m1->sizes), ns * sizeof (double));
  g_assert (p->handles->len == m1->handles + dh);
  append_shifted_effects (p->handles, m1->handles, nh, dh, ds);
  /* the dependencies and effects, whole: the template's are contiguous (template_check),
   * so each task's move by (d0 − m1->deps, e0 − m1->effects) as appending them task by
   * task would */
  guint n_dep = mn->deps - m1->deps, n_eff = mn->effects - m1->effects;
  guint d0 = p->deps->len, e0 = p->effects->len, t0 = p->tasks->len;
  g_array_set_size (p->deps, d0 + n_dep);
  guint *deps = &g_array_index (p->deps, guint, 0);
  for (guint i = 0; i < n_dep; i++)
    deps[d0 + i] = deps[m1->deps + i] + dt;
  append_shifted_effects (p->effects, m1->effects, n_eff, dh, ds);
  g_array_set_size (p->tasks, t0 + len);
  for (guint i = 0; i < len; i++)
    {
      ModelTask t = g_array_index (p->tasks, ModelTask, m1->tasks + i);
      g_assert (t.id + dt == t0 + i);
      t.id += dt;
      t.micro_batch = (gint) k;
      gboolean suffix;
      template_label (t.label, &suffix);
      if (suffix) /* "… mb1" → "… mb<k>" */
        {
          char digits[24], stack_label[256];
          gssize nd = sim_text_format (digits, sizeof digits, "%u", k);
          gsize n = strlen (t.label) - 1; /* without the final "1" */
          g_assert (nd > 0);
          g_autofree char *heap_label = n + (gsize) nd < sizeof stack_label
                                          ? NULL : g_malloc (n + (gsize) nd + 1);
          char *label = heap_label != NULL ? heap_label : stack_label;
          memcpy (label, t.label, n);
          memcpy (label + n, digits, (gsize) nd + 1);
          t.label = g_string_chunk_insert_len (p->labels, label, (gssize) n + nd);
        }
      t.first_dep = t.first_dep - m1->deps + d0;
      t.first_effect = t.first_effect - m1->effects + e0;
      if (t.collective >= 0)
        t.collective = (gint) plan_collective_instance_like (p, c->rank, (guint) t.collective);
      g_array_index (p->tasks, ModelTask, t0 + i) = t;
      if (t.kind == MODEL_TASK_KIND_RECOMPUTE)
        p->hardware_flops += t.flops;
    }
}

/* c's ids into micro-batch 1 (the template m1 … mn) moved to micro-batch k, as building
 * micro-batches 2 … k would have left them. */
static void
template_shift_ctx (StepCtx *c, const PlanMarks *m1, const PlanMarks *mn, guint k)
{
  guint len = mn->tasks - m1->tasks, nh = mn->handles - m1->handles;
  guint dt = (k - 1) * len, dh = (k - 1) * nh;
  guint N = c->slots;
  guint *task_arrays[] = { c->gather_task, c->fwd_task, c->bwd_task };
  guint *handle_arrays[] = { c->act_layer, c->gather_handle, c->act_mtp_proj, c->recomputed,
                             c->autocast_cache, c->act_mtp_head, c->w_hold };
  guint *tasks[] = { &c->root_gather_task, &c->head_gather_task, &c->bwd_head, &c->restored,
                     &c->tp_wait, &c->cp_wait, &c->pp_wait };
  guint *handles[] = { &c->act_embedding, &c->act_head, &c->head_cast, &c->root_gather_handle,
                       &c->head_gather_handle,
                       &c->grad_head_full, &c->grad_embedding_full, &c->tied_grad,
                       &c->fresh_grad, &c->head_w_hold };
#define MOVE(v, lo, hi, by) ((v) >= (lo) && (v) < (hi) ? (v) + (by) : (v))
  for (guint a = 0; a < G_N_ELEMENTS (task_arrays); a++)
    for (guint l = 0; l < N; l++)
      task_arrays[a][l] = MOVE (task_arrays[a][l], m1->tasks, mn->tasks, dt);
  for (guint a = 0; a < G_N_ELEMENTS (handle_arrays); a++)
    for (guint l = 0; l < N; l++)
      handle_arrays[a][l] = MOVE (handle_arrays[a][l], m1->handles, mn->handles, dh);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    *tasks[i] = MOVE (*tasks[i], m1->tasks, mn->tasks, dt);
  for (guint i = 0; i < G_N_ELEMENTS (handles); i++)
    *handles[i] = MOVE (*handles[i], m1->handles, mn->handles, dh);
#undef MOVE
}

void
plan_step_rank (ModelPlan *p, guint rank, const PlanCosts *pc)
{
  guint L = (guint) p->arch->n_layers;
  gsize per_mb = (gsize) PLAN_STEP_BUF_PER_LAYER * plan_step_slots (p);
  gboolean combined = p->par.moe_a2a_overlap && p->stack.grad_accum > 1;
  g_autofree guint *buf = g_new0 (guint, per_mb * (combined ? 2 : 1));
  StepCtx c;
  plan_step_ctx_init (&c, p, rank, pc, buf);
  if (combined)
    step_combined (&c, L, buf, per_mb);
  else
    {
      /* micro-batches 2 … GA − 2 copied from micro-batch 1 where it is a template */
      gboolean copy = template_applies (&c);
      PlanMarks m0, m1, mn;
      guint64 ga = p->stack.grad_accum;
      for (guint64 mb = 0; mb < ga; mb++)
        {
          if (copy && mb >= 2 && mb + 1 < ga)
            {
              template_copy (&c, &m1, &mn, (guint) mb);
              p->n_copied_mbs++;
              if (mb + 2 == ga)
                template_shift_ctx (&c, &m1, &mn, (guint) mb);
              continue;
            }
          if (mb <= 1)
            plan_marks (p, mb == 0 ? &m0 : &m1);
          c.mb = (gint) mb;
          c.last_mb = mb + 1 == ga;
          plan_step_forward (&c, 0, L, TRUE, TRUE);
          plan_step_backward (&c, 0, L, TRUE, TRUE);
          if (copy && mb == 1)
            {
              plan_marks (p, &mn);
              copy = template_check (&c, &m0, &m1, &mn);
            }
        }
    }
  c.mb = -1;
  plan_step_optimizer (&c, plan_last_on_stream (p, rank, MODEL_STREAM_COMM));
}
