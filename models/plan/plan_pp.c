/* models/plan/plan_pp.c — pipeline parallelism (PP) in the plan: each rank builds only its
 * pipeline stage's layers, in the order its pipeline rank's schedule gives
 * (models/parallel/pipeline_schedule.h), with the activations and gradients between stages
 * as P2P transfers. The bubble is not computed anywhere: it is what the executor's replay
 * of these per-rank orders and their cross-rank transfers leaves idle.
 *
 * Rank order (mesh.h, parallel_state.py RankGenerator): pipeline rank s of a (dp, cp, tp)
 * coordinate is the global rank with that coordinate and pp = s (peer() below, whatever
 * the order). Under Megatron's default "tp-cp-ep-dp-pp" pp is the outermost mesh
 * dimension: stage s's tp group stays on one node's NVLink and consecutive stages are
 * degree / pp ranks apart (NICs once that fills a node); under "tp-cp-ep-pp-dp"
 * (--use-tp-pp-dp-mapping) they are cp·tp ranks apart, a pipeline's stages on neighbouring
 * nodes and its data-parallel replicas far apart.
 *
 * What each pipeline rank holds: the decoder layers of its virtual stages (the partition:
 * even, layers_per_stage or Megatron's layout), the embedding on the stage that has it
 * (Megatron's pre_process, stage 0), the final norm, LM head and loss (with the full-vocab
 * logits of the loss head's workspace) on the last (post_process); their time and memory
 * unbalance those stages as in Megatron; DeepSeek-V3's MTP layers ([training] mtp_layers)
 * on the stage holding the loss (a layout's 'm' elsewhere is refused). Model states: the
 * rank's share of the model's trainable parameters (PlanPp.trainable, of its stored weights
 * PlanPp.weights), applied to every state allocated at time 0, the optimizer step's FLOPs
 * and its temporaries; each scope weighs what one tp/ep rank holds of it (plan_tp.c's
 * fractions: experts ÷ ep, the vocabulary ÷ tp), every decoder layer as the representative
 * (last) one — approximate for DeepSeek's dense first layers. With tied embeddings the last
 * stage holds a copy of the embedding matrix as the output layer (Megatron's shared
 * embedding with share_embeddings_and_output_weights), and the MTP layers' stage one for
 * their input embedding (language_module.py setup_embeddings_and_output_layer); the two
 * copies' gradients are all-reduced over the embedding group after the flush
 * (tied_grads_all_reduce).
 *
 * Schedule replay. For every op of the pipeline rank's list, in order:
 *   F (stage k, mb i)  receive the activation from stage k − 1 (k > 0) on the
 *                      pp_fwd_recv stream, run plan_step_forward of the stage's layers
 *                      (waiting for it), send the output to stage k + 1 (k < S − 1) on
 *                      pp_fwd_send after the last forward task
 *   BW                 receive the output gradient from stage k + 1 on pp_bwd_recv, run
 *                      plan_step_backward, send the input gradient to stage k − 1 on pp_bwd_send
 *   B, W (ZB-H1)       B: the backward with each GEMM's weight-gradient half removed (its
 *                      input gradient only; Qi et al. 2023 §2 "B" and "W"), then W: one task
 *                      of those halves for the stage's layers. B frees the layer's saved
 *                      activations and keeps what W needs (each trainable GEMM's input and
 *                      its output's gradient, w_hold_layer_bytes; the head's input and
 *                      logits gradient), which W frees: the last stage holds up to p − 1
 *                      micro-batches' W tensors (its W ops come last), the first stage none,
 *                      so under full recompute (little else held) the last stage needs the
 *                      most (as reported for the reference implementation,
 *                      sail-sg/zero-bubble-pipeline-parallelism issue 74). Approximate: the embedding's dY is
 *                      not held, and the held inputs are counted apart from the saved
 *                      activations B releases (one allocation, not the same tensors).
 * Each transfer is a two-rank SEND_RECV (hardware/collective.h: ranks[0] sends to ranks[1])
 * of p2p_bytes = micro_batch · (seq_len / cp) · hidden · compute dtype bytes, ÷ tp under
 * sequence parallelism (Megatron p2p_communication.py tensor_shape: (seq_length /
 * context_parallel_size / tensor_model_parallel_size if sequence_parallel, micro_batch_size,
 * hidden_size)), one collective instance per message. A collective starts when both of its
 * tasks have started: the send when its forward or backward is done, the receive when the
 * receiver's previous op is (Megatron's schedules post recv_forward / recv_backward just
 * before the op needing them, p2p_communication.py, blocking without overlap_p2p_comm:
 * approximate for the interleaved schedule's overlapped variant, which posts them one op
 * ahead), and the route (hardware/cluster.h: NVLink inside a node, NICs across) carries it;
 * a receive's wait is the receiver's bubble, not exposed communication (executor.c). One stream per directed channel keeps each a FIFO of
 * messages both ends issue in the same order (the schedule's order of the virtual
 * micro-batches is the same on every rank), so no two transfers wait on each other.
 *
 * Gradient accumulation is the schedule's micro-batch count ([training] grad_accum); each
 * stage's data-parallel reductions follow its own backwards (the last micro-batch's
 * buckets, or every micro-batch's reduce-scatters), and its optimizer step follows its
 * last backward op (the flush) and its reductions.
 */
#include "config.h"
#include "models/plan/plan_step-private.h"

#include "models/arch/inventory.h"

/* ---- checks ------------------------------------------------------------------------------- */

static ModelPpPartition *
partition_of (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
              GError **error)
{
  ModelPpPartitionSpec spec = {
    .n_layers = (guint) arch->n_layers,
    .n_mtp = stack->mtp_layers,
    .pp = MAX (par->pp, 1),
    .vpp = par->pp_virtual,
    .layers_per_stage = par->pp_n_layers_per_stage > 0 ? par->pp_layers_per_stage : NULL,
    .n_layers_per_stage = par->pp_n_layers_per_stage,
    .layout = par->pp_layout,
  };
  return model_pp_partition_new (&spec, error);
}

static gboolean
refuse (GError **error, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [parallel], key 'pp': %s with pipeline parallelism is not modelled", what);
  return FALSE;
}

gboolean
plan_pp_validate (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                  GError **error)
{
  if (MAX (par->pp, 1) == 1)
    {
      const char *key = par->pp_virtual > 1 ? "virtual_stages"
                        : par->pp_n_layers_per_stage > 0 ? "layers_per_stage"
                        : par->pp_layout != NULL ? "pipeline_layout" : NULL;
      if (key == NULL)
        return TRUE;
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key '%s': needs pipeline stages ([parallel] pp > 1)", key);
      return FALSE;
    }
  /* DeepSpeed's PipelineEngine refuses ZeRO stages 2 and 3 (deepspeed/runtime/pipe/engine.py,
   * PipelineEngine.__init__: assert self.zero_optimization_stage() <
   * ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with pipeline
   * parallelism"); torchtitan composes FSDP with its pipeline stages (torchtitan/distributed/
   * pipeline_parallel.py, each stage's model chunk fully_shard-ed). */
  if (stack->framework.deepspeed_engine && model_parallel_stage (par) >= 2)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'data_parallel': %s with [parallel] pp = %u under "
                   "DeepSpeed's engine ([training] %s): its pipeline engine allows ZeRO "
                   "stage 0 or 1 only (\"ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                   "parallelism\"); use zero1, or framework = torchtitan for FSDP with a "
                   "pipeline", model_parallel_mode_name (par->mode), par->pp,
                   stack->framework.kind == MODEL_FRAMEWORK_DEEPSPEED ? "framework = deepspeed"
                                                                      : "deepspeed_config");
      return FALSE;
    }
  if (model_offload_any (&stack->offload))
    return refuse (error, "offloading ([offload])");
  if (stack->framework.optimizer_in_backward)
    return refuse (error, "the optimizer in the backward");
  if (stack->checkpointing == MODEL_CHECKPOINTING_SQRT)
    return refuse (error, "[training] checkpointing = sqrt");
  if (stack->pad_to_longest)
    return refuse (error, "[training] padding = longest");
  /* the leaf's messages name both sides ("[parallel] pp"); the house prefix names the key
   * the user is to change: of an even split over pp × virtual_stages that pp alone would
   * make, virtual_stages */
  g_autoptr (ModelPpPartition) part = partition_of (arch, stack, par, error);
  if (part == NULL)
    return g_prefix_error (error, "group [parallel], key '%s': ",
                           par->pp_layout != NULL            ? "pipeline_layout"
                           : par->pp_n_layers_per_stage > 0 ? "layers_per_stage"
                           : par->pp_virtual > 1 && arch->n_layers % MAX (par->pp, 1) == 0
                             ? "virtual_stages"
                             : "pp"),
           FALSE;
  /* Megatron may place the MTP layers on a stage before the loss's (a layout's 'm' in
   * another chunk), sending their hidden states on; the plan runs them beside the loss */
  for (guint k = 0; k < part->stages->len; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (part, k);
      if (st->n_mtp > 0 && !st->loss)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'pipeline_layout': MTP layers ('m') on a "
                       "stage without the loss ('L', virtual stage %u has them) are not "
                       "modelled; place them in the last chunk, before 'L'", k);
          return FALSE;
        }
    }
  guint m = (guint) stack->grad_accum;
  g_autoptr (ModelPpSchedule) sched
    = model_pp_schedule_new_with (par->pp_schedule, part->pp, m, part->vpp,
                                  par->moe_a2a_overlap, error);
  /* the key to change: grad_accum for interleaving's multiple of pp; the layout when its
   * chunk count, not a virtual_stages the user gave, made the stages virtual */
  gboolean from_layout = par->pp_layout != NULL && par->pp_virtual <= 1 && part->vpp > 1;
  if (sched == NULL)
    return g_prefix_error (error, "%s",
                           par->pp_schedule == MODEL_PP_INTERLEAVED && part->vpp > 1
                               && m % part->pp != 0
                             ? "group [training], key 'grad_accum': "
                           : from_layout
                             ? "group [parallel], key 'pipeline_layout' (its chunks make the "
                               "stages virtual): "
                             : "group [parallel], key 'pipeline_schedule': "),
           FALSE;
  return TRUE;
}

/* ---- set-up --------------------------------------------------------------------------------- */

void
plan_pp_init (ModelPlan *p)
{
  PlanPp *pp = &p->pp;
  pp->pp = MAX (p->par.pp, 1);
  pp->vpp = 1;
  if (pp->pp == 1)
    return;
  pp->part = partition_of (p->arch, &p->stack, &p->par, NULL);
  g_assert (pp->part != NULL); /* validated */
  pp->vpp = pp->part->vpp;
  pp->sched = model_pp_schedule_new_with (p->par.pp_schedule, pp->pp,
                                          (guint) p->stack.grad_accum, pp->vpp,
                                          p->par.moe_a2a_overlap, NULL);
  g_assert (pp->sched != NULL);
  const ModelStack *s = &p->stack;
  double tokens = (double) s->micro_batch * (double) s->seq_len / MAX (p->par.cp, 1);
  if (p->par.sequence_parallel)
    tokens /= MAX (p->par.tp, 1);
  pp->p2p_bytes = tokens * (double) p->arch->hidden_size
                  * hw_dtype_bytes (model_stack_compute_dtype (s));
}

void
plan_pp_fractions (ModelPlan *p)
{
  PlanPp *pp = &p->pp;
  if (pp->pp == 1)
    return;
  gboolean tied = p->arch->tied_embeddings;
  guint L = (guint) p->arch->n_layers, d0 = 0;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  /* a tp rank's share of the vocab-parallel embedding (its padding aside): a tied model's,
   * or the one the MTP layers' stage holds (its two copies' gradients summed as a tied
   * pair's, finalize_model_grads.py _get_shared_word_embedding_weight:
   * "share_embeddings_and_output_weights or mtp_num_layers") */
  pp->tied_params = tied || p->stack.mtp_layers > 0
                      ? (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_EMBED)
                          / MAX (p->par.tp, 1)
                      : 0;
  for (guint k = 0; k < 4; k++)
    pp->share[k] = g_new0 (double, pp->pp);
  pp->layers = g_new0 (guint, pp->pp);
  for (guint k = 0; k < pp->part->stages->len; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (pp->part, k);
      pp->layers[st->rank] += st->n_layers + st->n_mtp;
      /* what one rank holds of the stage's own layers (deepseek's dense first layers and
       * its MoE layers differ), its MTP depths (inventory layers L + d), its embedding, and
       * its head; the last stage of a tied model holds the output layer as a copy of the
       * embedding, the MTP layers' stage one for their input embedding (gpt_model.py: the
       * embedding is built where pre_process or mtp_process), one copy for both */
      gboolean copy = !st->embedding && ((st->loss && tied) || st->n_mtp > 0);
      for (guint w = 0; w < 2; w++)
        {
          double dense, expert, mtp_dense = 0, mtp_expert = 0;
          plan_tp_stage_fractions (p, st->first_layer, st->first_layer + st->n_layers,
                                   st->embedding || copy, st->loss, w == 0, &dense, &expert);
          if (st->n_mtp > 0)
            plan_tp_stage_fractions (p, L + d0, L + d0 + st->n_mtp, FALSE, FALSE, w == 0,
                                     &mtp_dense, &mtp_expert);
          pp->share[2 * w][st->rank] += dense + mtp_dense;
          pp->share[2 * w + 1][st->rank] += expert + mtp_expert;
        }
      d0 += st->n_mtp;
    }
}

void
plan_pp_clear (PlanPp *pp)
{
  g_clear_pointer (&pp->part, model_pp_partition_free);
  g_clear_pointer (&pp->sched, model_pp_schedule_free);
  for (guint k = 0; k < 4; k++)
    g_clear_pointer (&pp->share[k], g_free);
  g_clear_pointer (&pp->layers, g_free);
}

/* ---- P2P ----------------------------------------------------------------------------------- */

/* The global rank of pipeline rank `s` beside `rank` (the same dp, cp and tp coordinates). */
static guint
peer (const ModelPlan *p, guint rank, guint s)
{
  guint coords[MODEL_MESH_N_DIMS];
  model_mesh_coords (&p->mesh, rank, coords);
  coords[MODEL_MESH_PP] = s;
  return model_mesh_rank (&p->mesh, coords);
}

/* The two-rank collective instance named `key` (its first end to arrive creates it, the
 * other finds it): ranks[0] = a, ranks[1] = b (a sends, for SEND_RECV), two members of one
 * pp group (dims: the pp bit, plan.h). */
static guint
pair_instance (ModelPlan *p, const char *key, HwCollectiveKind kind, double bytes, guint a,
               guint b)
{
  gpointer found = g_hash_table_lookup (p->instances, key);
  if (found != NULL)
    return GPOINTER_TO_UINT (found) - 1;
  guint *ranks = g_new (guint, 2);
  ranks[0] = a, ranks[1] = b;
  g_ptr_array_add (p->rank_lists, ranks);
  ModelCollective c = { kind, p->par.algorithm, bytes, ranks, 2, MODEL_MESH_BIT (MODEL_MESH_PP),
                        0 };
  g_array_append_val (p->collectives, c);
  g_hash_table_insert (p->instances, g_strdup (key), GUINT_TO_POINTER (p->collectives->len));
  return p->collectives->len - 1;
}

/* One side of the transfer of micro-batch `mb`'s activation (grad FALSE: into virtual
 * stage `stage` + 1) or output gradient (grad TRUE: into `stage` − 1) from `src` to `dst`,
 * on `rank` (one of them), after task `after`; returns the task. Both ends name the same
 * collective instance (the message), whichever builds its side first. */
static guint
p2p (ModelPlan *p, guint rank, guint src, guint dst, gboolean grad, guint stage, gint mb,
     guint after)
{
  gboolean send = rank == src;
  g_autofree char *key = g_strdup_printf ("pp %s %u>%u s%u mb%d", grad ? "grad" : "act", src,
                                          dst, stage, mb);
  guint index = pair_instance (p, key, HW_COLLECTIVE_SEND_RECV, p->pp.p2p_bytes, src, dst);
  ModelStream stream = grad ? (send ? MODEL_STREAM_PP_BWD_SEND : MODEL_STREAM_PP_BWD_RECV)
                            : (send ? MODEL_STREAM_PP_FWD_SEND : MODEL_STREAM_PP_FWD_RECV);
  guint id = plan_task_begin (p, rank, stream, MODEL_TASK_KIND_COLLECTIVE, -1, mb,
                              "%s %s stage %u mb%d", send ? "send" : "recv",
                              grad ? "grad" : "act", stage, mb);
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = p->pp.p2p_bytes;
  plan_task_dep (p, after);
  return id;
}

/* Tied embeddings: the first stage's input embedding and the last stage's output layer are
 * two copies of one matrix, whose gradients Megatron sums after the flush and before the
 * optimizer step (megatron/core/distributed/finalize_model_grads.py
 * _allreduce_word_embedding_grads: an all-reduce of the embedding's main_grad over the
 * embedding group, the first and last pipeline ranks of each (dp, cp, tp) coordinate), after
 * the data-parallel reductions. Issued on `rank`'s comm stream, so its optimizer step waits;
 * a two-rank instance named by its pair, as the P2P messages are. */
static void
tied_grads_all_reduce (ModelPlan *p, guint rank, guint s)
{
  const PlanPp *pp = &p->pp;
  if (pp->tied_params <= 0 || (s != 0 && s != pp->pp - 1))
    return;
  guint first = peer (p, rank, 0), last = peer (p, rank, pp->pp - 1);
  double bytes = pp->tied_params * plan_reduce_bytes (p);
  g_autofree char *key = g_strdup_printf ("pp tied %u+%u", first, last);
  guint index = pair_instance (p, key, HW_COLLECTIVE_ALL_REDUCE, bytes, first, last);
  guint after = plan_last_on_stream (p, rank, MODEL_STREAM_COMM);
  guint compute = plan_last_on_stream (p, rank, MODEL_STREAM_COMPUTE);
  plan_task_begin (p, rank, MODEL_STREAM_COMM, MODEL_TASK_KIND_COLLECTIVE, -1, -1,
                   "all-reduce tied embedding grads");
  ModelTask *t = plan_current (p);
  t->collective = (gint) index;
  t->bytes = bytes;
  plan_task_dep (p, after);
  plan_task_dep (p, compute); /* after the flush: the last backward's gradients */
}

/* ---- ZB-H1's split backward ------------------------------------------------------------------ */

/* A GEMM's backward is its input gradient and its weight gradient, one half each of its
 * 2× FLOPs and traffic (cost.h); a frozen GEMM (LoRA's base, the frozen head: its backward
 * kernel HW_KERNEL_GEMM_DGRAD, cost.c cost_mirror_backward) computes the input gradient
 * only and stays whole in B. B keeps the rest of the pass and the input-gradient halves, W
 * the weight-gradient halves (Qi et al. 2023, §2: F, B, W with T_B ≈ T_W). */
static gboolean
has_weight_grad (const ModelOp *op)
{
  return op->op_class == MODEL_OP_GEMM && op->bwd_factor != 1
         && op->shape.cls != HW_KERNEL_GEMM_DGRAD;
}

static void
split_pass (const ModelPass *bwd, ModelPass *b, ModelPass *w)
{
  *b = *bwd;
  *w = (ModelPass){ 0 };
  b->flops = b->bytes = b->model_flops = 0;
  for (guint i = 0; i < bwd->n_ops; i++)
    {
      ModelOp *op = &b->ops[i];
      if (has_weight_grad (op) && w->n_ops < MODEL_COST_MAX_OPS)
        {
          op->flops *= 0.5, op->bytes *= 0.5;
          w->ops[w->n_ops++] = *op;
          w->flops += op->flops, w->bytes += op->bytes, w->model_flops += op->flops;
        }
      b->flops += op->flops, b->bytes += op->bytes;
    }
  b->model_flops = bwd->model_flops - w->model_flops;
}

/* ---- one rank's step ------------------------------------------------------------------------- */

/* B of what ZB-H1's W pass of one layer needs after its B (Qi et al. 2023 §2: W computes
 * each linear's dW = Xᵀ·dY, so the linear's saved input X and its output gradient dY
 * outlive B): over the rank's layer graph (plan_tp_layer_graph, ÷ cp as the sequence is),
 * each trainable GEMM's saved inputs (once each) and its output's size. */
static double
w_hold_layer_bytes (const ModelPlan *p)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelGraph) g = plan_tp_layer_graph (p->arch, &p->stack, &p->par, &error);
  g_assert (g != NULL); /* plan_tp_validate */
  g_autofree gboolean *held = g_new0 (gboolean, g->tensors->len);
  double dy = 0, x = 0;
  for (guint i = 0; i < g->ops->len; i++)
    {
      const ModelGraphOp *op = &g_array_index (g->ops, ModelGraphOp, i);
      if (!op->launches || op->kernel.op_class != MODEL_OP_GEMM || op->kernel.bwd_factor == 1)
        continue; /* bwd_factor 1: a frozen GEMM, input gradient only (split_pass) */
      dy += g_array_index (g->tensors, ModelGraphTensor, op->out).bytes;
      for (guint k = 0; k < op->n_saved; k++)
        held[op->saved[k]] = TRUE;
    }
  for (guint i = 0; i < g->tensors->len; i++)
    if (held[i])
      x += g_array_index (g->tensors, ModelGraphTensor, i).bytes;
  return (x + dy) / MAX (p->par.cp, 1);
}

/* The same of the LM head: its input (b·s·h) and the logits' gradient (b·s·V/tp), at the
 * compute dtype's bytes (untied or tied alike: the head's dW needs both). */
static double
w_hold_head_bytes (const ModelPlan *p)
{
  const ModelStack *s = &p->stack;
  double tokens = (double) s->micro_batch * (double) s->seq_len / MAX (p->par.cp, 1);
  const ModelArch *a = plan_cost_arch (p); /* one tp rank's vocabulary */
  return tokens * (double) (p->arch->hidden_size + a->vocab_size)
         * hw_dtype_bytes (model_stack_compute_dtype (s));
}

/* ZB-H1's W of virtual stage `st`: one task of its blocks' weight-gradient halves, `w` the
 * W passes of a layer, the head, the embedding and an MTP depth's block before its layer
 * (an MTP depth: that block, a layer and a head), which releases what their B held for it
 * (the MTP depths' layers and heads keep nothing apart: approximate). */
static void
weight_grad (StepCtx *c, const ModelPpStage *st, const ModelPass *const w[4])
{
  ModelPlan *p = c->p;
  plan_task_begin (p, c->rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD,
                   (gint) st->first_layer, c->mb, "wgrad stage %u mb%d",
                   st->rank + st->chunk * p->pp.pp, c->mb);
  if (st->loss)
    plan_task_add_pass (p, w[1]);
  for (guint d = 0; st->loss && d < st->n_mtp; d++)
    {
      plan_task_add_pass (p, w[1]);
      plan_task_add_pass (p, w[0]);
      plan_task_add_pass (p, w[3]);
    }
  for (guint l = 0; l < st->n_layers; l++)
    plan_task_add_pass (p, w[0]);
  if (st->embedding)
    plan_task_add_pass (p, w[2]);
  for (guint l = st->first_layer; l < st->first_layer + st->n_layers; l++)
    {
      plan_task_free (p, c->w_hold[l], MODEL_EFFECT_AT_END);
      c->w_hold[l] = 0;
    }
  if (st->loss)
    plan_task_free (p, c->head_w_hold, MODEL_EFFECT_AT_END), c->head_w_hold = 0;
}

/* F or B/BW op `op`'s receive on `rank` after task `after`: the activation from stage k − 1
 * (F, k > 0) or the output gradient from stage k + 1 (B/BW, k < S − 1). Returns the task
 * its compute waits for, NONE when the stage receives nothing. */
static guint
op_receive (ModelPlan *p, guint rank, const ModelPpOp *op, guint after)
{
  const PlanPp *pp = &p->pp;
  guint S = pp->pp * pp->vpp;
  gboolean grad = op->kind != MODEL_PP_OP_F;
  if (grad ? op->stage + 1 >= S : op->stage == 0)
    return NONE;
  guint from = grad ? op->stage + 1 : op->stage - 1;
  return p2p (p, rank, peer (p, rank, from % pp->pp), rank, grad, op->stage, (gint) op->mb,
              after);
}

/* Its send after its last compute task `last`: the activation to stage k + 1 (F) or the
 * input gradient to stage k − 1 (B/BW); nothing from the last / first stage. */
static void
op_send (ModelPlan *p, guint rank, const ModelPpOp *op, guint last)
{
  const PlanPp *pp = &p->pp;
  guint S = pp->pp * pp->vpp;
  gboolean grad = op->kind != MODEL_PP_OP_F;
  if (grad ? op->stage == 0 : op->stage + 1 >= S)
    return;
  guint to = grad ? op->stage - 1 : op->stage + 1;
  p2p (p, rank, rank, peer (p, rank, to % pp->pp), grad, to, (gint) op->mb, last);
}

/* A steady-state F, BW pair of rank `rank`'s list as one combined step ([moe]
 * a2a_overlap; schedules.py forward_backward_pipelining_with_interleaving's
 * combined_1f1b_schedule_for_interleaved_pipelining): both receives (the forward's
 * activation, the backward's output gradient) before it, plan_step_combined, then both
 * sends after each side's own last task. Returns the backward's last compute task.
 * Approximate: Megatron posts these transfers around the combined step with its P2P
 * overlap; here they block it as the plain interleaved schedule's do. */
static guint
combined_pair (ModelPlan *p, guint rank, StepCtx *c, PlanStepSlot *slots, const ModelPpOp *fop,
               const ModelPpOp *bop)
{
  const PlanPp *pp = &p->pp;
  const ModelPpStage *fst = model_pp_partition_stage (pp->part, fop->stage);
  const ModelPpStage *bst = model_pp_partition_stage (pp->part, bop->stage);
  PlanStepMb f = { .slot = &slots[fop->mb], .mb = fop->mb, .lo = fst->first_layer,
                   .hi = fst->first_layer + fst->n_layers, .embed = fst->embedding,
                   .head = fst->loss, .tp_wait = NONE, .cp_wait = NONE, .pp_wait = NONE };
  PlanStepMb b = { .slot = &slots[bop->mb], .mb = bop->mb, .lo = bst->first_layer,
                   .hi = bst->first_layer + bst->n_layers, .embed = bst->embedding,
                   .head = bst->loss, .tp_wait = NONE, .cp_wait = NONE, .pp_wait = NONE };
  guint prev = plan_last_on_stream (p, rank, MODEL_STREAM_COMPUTE);
  f.pp_wait = op_receive (p, rank, fop, prev);
  b.pp_wait = op_receive (p, rank, bop, prev);
  plan_step_combined (c, &f, &b);
  c->pp_wait = NONE;
  op_send (p, rank, fop, f.last);
  op_send (p, rank, bop, b.last);
  return b.last;
}

void
plan_pp_step_rank (ModelPlan *p, guint rank, const PlanCosts *pc)
{
  const PlanPp *pp = &p->pp;
  guint m = pp->sched->n_micro;
  guint s = plan_pp_rank_of (p, rank);
  /* ZB-H1: the backward as B (input gradients) and W (weight gradients) */
  g_autofree PlanCosts *split = g_new (PlanCosts, 1);
  ModelPass w_layer, w_head, w_emb, w_mtp;
  *split = *pc;
  split_pass (&pc->layer.bwd, &split->layer.bwd, &w_layer);
  split_pass (&pc->head.bwd, &split->head.bwd, &w_head);
  split_pass (&pc->embedding.bwd, &split->embedding.bwd, &w_emb);
  split_pass (&pc->mtp_proj.bwd, &split->mtp_proj.bwd, &w_mtp);
  const ModelPass *w[] = { &w_layer, &w_head, &w_emb, &w_mtp };
  gsize per_mb = (gsize) PLAN_STEP_BUF_PER_LAYER * plan_step_slots (p);
  g_autofree guint *bufs = g_new0 (guint, per_mb * m);
  gboolean zb = pp->sched->kind == MODEL_PP_ZB_H1;
  /* a frozen head (LoRA's) has no weight gradient, so no W pass holds its input for one */
  double hold_layer = zb ? w_hold_layer_bytes (p) : 0;
  double hold_head = zb && w_head.n_ops > 0 ? w_hold_head_bytes (p) : 0;
  g_autofree PlanStepSlot *slots = g_new0 (PlanStepSlot, m);
  for (guint i = 0; i < m; i++)
    slots[i].buf = bufs + per_mb * i;
  StepCtx c;
  plan_step_ctx_init (&c, p, rank, pc, slots[0].buf);
  const GArray *ops = model_pp_schedule_rank (pp->sched, s);
  guint last = NONE;
  for (guint i = 0; i < ops->len; i++)
    {
      const ModelPpOp *op = &g_array_index (ops, ModelPpOp, i);
      if (op->combined) /* a steady-state F, the BW after it (pipeline_schedule.h) */
        {
          c.pc = pc;
          c.w_hold_layer = c.w_hold_head = 0;
          last = combined_pair (p, rank, &c, slots, op, &g_array_index (ops, ModelPpOp, ++i));
          continue;
        }
      const ModelPpStage *st = model_pp_partition_stage (pp->part, op->stage);
      guint lo = st->first_layer, hi = st->first_layer + st->n_layers;
      plan_step_slot_load (&c, &slots[op->mb]);
      c.mb = (gint) op->mb;
      c.last_mb = op->mb + 1 == m;
      c.pc = op->kind == MODEL_PP_OP_B ? split : pc;
      c.w_hold_layer = op->kind == MODEL_PP_OP_B ? hold_layer : 0;
      c.w_hold_head = op->kind == MODEL_PP_OP_B ? hold_head : 0;
      switch (op->kind)
        {
        case MODEL_PP_OP_F:
          c.pp_wait = op_receive (p, rank, op, plan_last_on_stream (p, rank, MODEL_STREAM_COMPUTE));
          plan_step_forward (&c, lo, hi, st->embedding, st->loss);
          last = plan_last_on_stream (p, rank, MODEL_STREAM_COMPUTE);
          c.pp_wait = NONE;
          op_send (p, rank, op, last);
          break;
        case MODEL_PP_OP_B:
        case MODEL_PP_OP_BW:
          c.pp_wait = op_receive (p, rank, op, plan_last_on_stream (p, rank, MODEL_STREAM_COMPUTE));
          last = plan_step_backward (&c, lo, hi, st->embedding, st->loss);
          c.pp_wait = NONE;
          op_send (p, rank, op, last);
          break;
        case MODEL_PP_OP_W:
          weight_grad (&c, st, w);
          last = plan_current (p)->id;
          break;
        }
      plan_step_slot_store (&c, &slots[op->mb]);
    }
  c.pc = pc;
  /* SP's norm and row-bias gradients: the stage's share of the non-expert parameters */
  double dense, expert;
  plan_pp_stage_params (p, rank, &dense, &expert);
  double whole = (double) model_stack_trainable_params (&p->stack, p->arch)
                 * (p->tp.trainable - p->tp.trainable_expert);
  plan_step_sp_grads (&c, last, whole > 0 ? p->tp.sp_grad_bytes * dense / whole : 0);
  c.mb = -1;
  tied_grads_all_reduce (p, rank, s);
  plan_step_optimizer (&c, plan_last_on_stream (p, rank, MODEL_STREAM_COMM));
}
