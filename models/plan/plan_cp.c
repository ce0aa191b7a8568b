/* models/plan/plan_cp.c — context parallelism in the plan: what one cp rank holds, runs and
 * sends, from models/parallel/context_parallel.h.
 *
 *   kernels       the layer's GEMMs and element-wise ops on the rank's s/cp tokens (plan.c
 *                 builds the blocks at seq_len / cp); the attention kernel replaced by the
 *                 rank's attention steps (model_cp_attention_steps: ring steps, all-gather's
 *                 two query chunks, Ulysses's whole-sequence kernel on a/cp heads), each with
 *                 the FLOPs the kernel model is given (a causal step at twice what it
 *                 executes, the square-mask convention of hardware/kernel.h) and its shape
 *                 (query length, causal or not); their backward FlashAttention's 2.5×
 *   activations   the full-sequence layer graph, tp-sharded (model_tp_shard_graph) and then
 *                 cp-sharded (model_cp_shard_graph): 1/cp of every per-token tensor; the
 *                 attention's transient buffers (model_cp_attention_workspace, the largest
 *                 rank's) join the layer's forward and backward workspace
 *   collectives   each layer's cp collectives per pass (model_cp_layer_comms) on
 *                 MODEL_STREAM_CP: the ring's P2P sends as one SEND_RECV ring shift over the
 *                 cp group per step (hardware/collective.h), issued beside the layer's task
 *                 from its start, the next compute task waiting for the last; all-gather and
 *                 Ulysses collectives on the critical path before or after the task
 *   model states  replicated over cp: gradients Partial and ZeRO/FSDP shards over dp·cp
 *                 (models/parallel/parallel.c, placement.c's merged dp·cp group); a MoE
 *                 model's expert states and dispatch are plan_ep.c's, over expert groups
 *                 carved from the stage's dp·cp·tp ranks (plan_cp_validate leaves an
 *                 expert carving that does not fit the stage or the order to
 *                 plan_ep_validate to name: key 'ep', 'etp' or 'order')
 * Approximate: the ring's overlap window is the layer's whole task, not each step's kernel
 * (context_parallel.h's Σ max(compute_i, comm_i) rule): its sends hide behind the GEMMs of
 * the layer too, and exposure is max(0, Σ comm − task) rather than Σ max(0, comm_i −
 * compute_i); a full recompute, and a selective one of the attention core, re-issues the
 * forward's cp collectives (plan_ckpt.c: they run inside TE's rerun attention); the
 * embedding's and head's tokens are the rank's s/cp; the loss all-reduce over cp (a few
 * bytes) is not issued. */
#include "config.h"
#include "models/plan/plan-private.h"

#include <string.h>
#include "models/parallel/context_parallel.h"
#include "models/parallel/tensor_parallel.h"

/* The leaf's parameters for `arch` (whole model) under `par`'s mesh. */
static void
params_of (const ModelArch *arch, const ModelStack *s, const ModelParallel *par,
           ModelCpParams *out)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  model_cp_params_init (out, arch, &mesh, par->cp_variant, s->micro_batch, s->seq_len,
                        model_stack_activation_bytes (s));
}

/* The full-sequence layer graph as one tp and cp rank holds it (NULL + error). */
static ModelGraph *
shard_graph (const ModelArch *arch, const ModelStack *s, const ModelParallel *par,
             GError **error)
{
  g_autoptr (ModelGraph) g = plan_tp_layer_graph (arch, s, par, error);
  if (g == NULL)
    return NULL;
  ModelCpParams cp;
  params_of (arch, s, par, &cp);
  return model_cp_shard_graph (g, &cp, error);
}

gboolean
plan_cp_validate (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                  GError **error)
{
  if (par->cp <= 1)
    return TRUE;
  ModelCostParams cost = model_stack_cost_params (stack);
  if (!cost.flash_attention)
    {
      /* Ring and all-gather need a fused kernel (TE, PyTorch); Ulysses's eager core over
       * the whole sequence on a/cp heads is not modelled. */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'cp': cp = %u needs a fused attention kernel "
                   "([training] attention = flash…; the eager core is not modelled under "
                   "context parallelism)", par->cp);
      return FALSE;
    }
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  /* a mesh the expert degrees break (ep·etp not dividing a stage's dp·cp·tp ranks; under
   * tp-cp-ep-pp-dp with pp > 1, etp·ep ≠ cp·tp), which model_cp_check's mesh check would
   * meet first, is plan_ep_validate's to name (key 'ep', 'etp' or 'order'), not cp's */
  ModelMesh dense = mesh;
  dense.ep = dense.etp = 1;
  if (!model_ep_check (arch, &mesh, NULL)
      || (!model_mesh_validate (&mesh, par->degree, NULL)
          && model_mesh_validate (&dense, par->degree, NULL)))
    {
      gboolean ok = plan_ep_validate (arch, stack, par, error);
      g_assert (!ok); /* it runs model_ep_check first */
      return FALSE;
    }
  ModelCpParams p;
  params_of (arch, stack, par, &p);
  if (!model_cp_check (arch, &mesh, par->degree, &p, error))
    return g_prefix_error (error, "group [parallel], key 'cp': "), FALSE;
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelGraph) sg = shard_graph (arch, stack, par, &e);
  if (sg == NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'cp': %s", e->message);
      return FALSE;
    }
  return TRUE;
}

void
plan_cp_init (ModelPlan *p)
{
  PlanCp *cp = &p->cp;
  *cp = (PlanCp){ .cp = MAX (p->par.cp, 1) };
  if (cp->cp <= 1)
    return;
  params_of (p->arch, &p->stack, &p->par, &cp->params);
  for (guint d = 0; d < 2; d++)
    {
      cp->comms[d] = g_array_new (FALSE, FALSE, sizeof (ModelCpComm));
      model_cp_layer_comms (&cp->params, d == 0 ? MODEL_CP_FORWARD : MODEL_CP_BACKWARD,
                            cp->comms[d]);
    }
}

void
plan_cp_clear (PlanCp *cp)
{
  for (guint d = 0; d < 2; d++)
    g_clear_pointer (&cp->comms[d], g_array_unref);
}

guint64
plan_cp_seq_multiple (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par)
{
  ModelCpParams p;
  params_of (arch, stack, par, &p);
  return model_cp_seq_multiple (&p);
}

guint64
plan_cp_seq_len (const ModelPlan *p)
{
  return p->stack.seq_len / MAX (p->par.cp, 1);
}

/* Replaces the first attention op of `pass` by `steps` (ModelCpStep; the forward's FLOPs,
 * × 2.5 in the backward as cost.c's mirror does). Bytes: the replaced op's, scaled by
 * the tokens and heads a step reads and writes against the s/cp-token op's
 * ((q_len + kv_len)·heads over 2·tok·a). Model FLOPs: the full-square attention / cp,
 * cp × the s/cp op's (4·b·(s/cp)²·a·d · cp = 4·b·s²·a·d / cp). When the steps would
 * overflow the pass, one op carries their sum with the first step's shape. */
static void
replace_attention (ModelPass *pass, const GArray *steps, gboolean backward, guint cp,
                   double tok, double heads)
{
  guint j = 0;
  while (j < pass->n_ops && pass->ops[j].op_class != MODEL_OP_ATTENTION)
    j++;
  if (j == pass->n_ops || steps->len == 0)
    return;
  ModelOp orig = pass->ops[j];
  guint n = steps->len;
  gboolean merge = pass->n_ops - 1 + n > MODEL_COST_MAX_OPS;
  guint emit = merge ? 1 : n;
  memmove (&pass->ops[j + emit], &pass->ops[j + 1],
           (pass->n_ops - j - 1) * sizeof (ModelOp));
  pass->n_ops += emit - 1;
  double factor = backward ? 2.5 : 1.0, flops = 0, bytes = 0;
  for (guint i = 0; i < n; i++)
    {
      const ModelCpStep *st = &g_array_index (steps, ModelCpStep, i);
      ModelOp op = orig;
      op.name = "attention (cp step)";
      op.flops = factor * st->flops;
      op.bytes = orig.bytes * (double) (st->q_len + st->kv_len) * (double) st->heads
                 / (2 * tok * heads);
      op.shape.seq = (double) st->q_len;
      op.shape.causal = st->causal;
      flops += op.flops;
      bytes += op.bytes;
      if (!merge)
        pass->ops[j + i] = op;
      else if (i == 0)
        pass->ops[j] = op;
      else
        pass->ops[j].flops += op.flops, pass->ops[j].bytes += op.bytes;
    }
  pass->flops += flops - orig.flops;
  pass->bytes += bytes - orig.bytes;
  pass->model_flops += (cp - 1.0) * (backward ? orig.flops / 2.5 * 2.0 : orig.flops);
}

/* The largest transient of the attention over the cp ranks in `pass`. */
static double
attention_workspace (const ModelCpParams *cp, ModelCpPass pass)
{
  double most = 0;
  for (guint r = 0; r < cp->cp; r++)
    most = MAX (most, model_cp_attention_workspace (cp, r, pass));
  return most;
}

void
plan_cp_layer (const ModelPlan *p, ModelBlockCost *layer)
{
  const PlanCp *cp = &p->cp;
  if (cp->cp <= 1)
    return;
  /* Time: the attention steps. Every rank runs the same work under load balancing (the
   * leaf's 2·cp chunks); rank cp − 1's steps stand for all (the plan is per rank, and
   * Ulysses and the balanced split give every rank the same FLOPs). */
  guint rank = cp->cp - 1;
  g_autoptr (GArray) fwd = g_array_new (FALSE, FALSE, sizeof (ModelCpStep));
  g_autoptr (GArray) bwd = g_array_new (FALSE, FALSE, sizeof (ModelCpStep));
  model_cp_attention_steps (&cp->params, rank, MODEL_CP_FORWARD, fwd);
  model_cp_attention_steps (&cp->params, rank, MODEL_CP_BACKWARD, bwd);
  double tok = (double) plan_cp_seq_len (p), heads = (double) cp->params.q_heads;
  replace_attention (&layer->fwd, fwd, FALSE, cp->cp, tok, heads);
  replace_attention (&layer->selective_fwd, fwd, FALSE, cp->cp, tok, heads);
  replace_attention (&layer->bwd, bwd, TRUE, cp->cp, tok, heads);
  double ws_f = attention_workspace (&cp->params, MODEL_CP_FORWARD);
  layer->fwd.workspace += ws_f;
  layer->selective_fwd.workspace += ws_f;
  layer->bwd.workspace += attention_workspace (&cp->params, MODEL_CP_BACKWARD);
  /* Memory: the tp- and cp-sharded full-sequence graph. */
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelGraph) sg = shard_graph (p->arch, &p->stack, &p->par, &error);
  g_assert (sg != NULL); /* plan_cp_validate */
  ModelCostParams cost = model_stack_cost_params (&p->stack);
  gboolean compile = cost.compile;
  double saved = model_graph_saved (sg, MODEL_GRAPH_KEEP_ALL, compile, NULL, 0, NULL);
  layer->act_saved = saved + model_cost_layer_weight_cache (plan_cost_arch (p), &cost);
  layer->act_selective
    = saved - model_graph_saved (sg, MODEL_GRAPH_KEEP_NON_SELECTIVE, compile, NULL, 0, NULL);
  layer->act_keep_matmul = model_graph_saved (sg, MODEL_GRAPH_KEEP_MATMUL, compile, NULL, 0, NULL);
  layer->act_pointwise
    = saved - model_graph_saved (sg, MODEL_GRAPH_KEEP_MATMUL_SAVED, compile, NULL, 0, NULL);
}

guint
plan_cp_saved_tensors (const ModelPlan *p, PlanSavedSet which, double *sizes, guint max)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelGraph) sg = shard_graph (p->arch, &p->stack, &p->par, &error);
  g_assert (sg != NULL);
  return plan_graph_saved_tensors (p, sg, which, sizes, max);
}

guint
plan_cp_issue (ModelPlan *p, guint rank, guint pass, PlanCpWhen when, guint after, gint layer,
               gint micro_batch)
{
  const GArray *comms = p->cp.comms[pass];
  guint last = after;
  for (guint i = 0; comms != NULL && i < comms->len; i++)
    {
      const ModelCpComm *m = &g_array_index (comms, ModelCpComm, i);
      PlanCpWhen w = m->step >= 0 ? PLAN_CP_RING
                                  : m->before_attention ? PLAN_CP_BEFORE : PLAN_CP_AFTER;
      if (w != when)
        continue;
      guint id = plan_collective_on (p, rank, MODEL_STREAM_CP, MODEL_MESH_BIT (m->dim), m->kind,
                                     m->bytes, layer, micro_batch, m->name);
      if (id == G_MAXUINT)
        continue;
      plan_task_dep (p, last);
      last = id;
    }
  return last;
}

void
plan_cp_after (ModelPlan *p, guint rank, guint pass, guint start, guint task, gint layer,
               gint micro_batch, guint *wait)
{
  guint ring = plan_cp_issue (p, rank, pass, PLAN_CP_RING, start, layer, micro_batch);
  if (ring != start)
    *wait = ring;
  guint last = plan_cp_issue (p, rank, pass, PLAN_CP_AFTER, task, layer, micro_batch);
  if (last != task)
    *wait = last;
}
