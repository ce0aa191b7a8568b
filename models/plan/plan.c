/* models/plan/plan.c — plan construction and accessors; see plan.h. The primitives every
 * part of the plan appends tasks with are in plan_task.c, the persistent state in
 * plan_state.c, the schedule itself in plan_step.c (activation checkpointing in
 * plan_ckpt.c), data-parallel collectives in plan_comm.c, offload and paged optimizer
 * states in plan_offload.c and plan_paged.c; plan.c calls them, none calls plan.c. */
#include "config.h"
#include "models/plan/plan-private.h"

#include <math.h>
#include "models/plan/plan_offload-private.h"
#include "models/plan/plan_paged-private.h"

#include <string.h>
#include "models/parallel/tensor_parallel.h"
#include "sim/arith.h"

static const char *const kind_names[MODEL_N_TASK_KINDS] = {
  "forward", "backward", "recompute", "optimizer", "collective", "offload",
};
static const char *const stream_names[MODEL_N_STREAMS] = { "compute", "comm", "h2d", "d2h",
                                                           "cpu", "nvme_read", "nvme_write",
                                                           "tp", "cp", "pp_fwd_send",
                                                           "pp_fwd_recv", "pp_bwd_send",
                                                           "pp_bwd_recv", "ep" };

const char *
model_plan_task_kind_name (ModelTaskKind kind)
{
  g_return_val_if_fail (kind < MODEL_N_TASK_KINDS, NULL);
  return kind_names[kind];
}

const char *
model_plan_stream_name (ModelStream stream)
{
  g_return_val_if_fail (stream < MODEL_N_STREAMS, NULL);
  return stream_names[stream];
}

/* ---- construction ---------------------------------------------------------------------- */

/* Scales the tensor sizes (B) by `f` in whole bytes, as tensors have: each rounded down,
 * then one byte more to those with the largest remainders until the total is Σ·f rounded
 * (the largest-remainder method), so a whole total stays exact. */
typedef struct
{
  double rem;
  guint i;
} Remainder;

static gint
by_remainder_desc (gconstpointer a, gconstpointer b)
{
  const Remainder *x = a, *y = b;
  return (x->rem < y->rem) - (x->rem > y->rem);
}

static void
scale_whole_bytes (GArray *sizes, double f)
{
  double total = 0, floors = 0;
  g_autoptr (GArray) rem = g_array_sized_new (FALSE, FALSE, sizeof (Remainder), sizes->len);
  for (guint i = 0; i < sizes->len; i++)
    {
      double x = g_array_index (sizes, double, i) * f;
      total += x;
      g_array_index (sizes, double, i) = floor (x);
      floors += floor (x);
      Remainder r = { x - floor (x), i };
      g_array_append_val (rem, r);
    }
  double left = nearbyint (total) - floors;
  if (left < 1)
    return;
  g_array_sort (rem, by_remainder_desc);
  for (guint k = 0; k < rem->len && left >= 1; k++, left--)
    g_array_index (sizes, double, g_array_index (rem, Remainder, k).i) += 1;
}

static void
plan_costs (const ModelPlan *p, PlanCosts *pc)
{
  const ModelStack *s = &p->stack;
  ModelCostParams cp = model_stack_cost_params (s);
  /* one tp rank's kernels and activations (plan_tp.c; the arch itself for tp = 1), on one
   * cp rank's seq_len / cp tokens (plan_cp.c: its attention steps and sharded graph) */
  cp.seq_len = plan_cp_seq_len (p);
  const ModelArch *ra = plan_cost_arch (p);
  /* in place: each ModelBlockCost is ~30 KB, which a returned value copied twice */
  model_cost_embedding_to (ra, &cp, &pc->embedding);
  model_cost_layer_to (ra, &cp, &pc->layer);
  model_cost_head_to (ra, &cp, &pc->head);
  /* the whole model's step FLOPs from these blocks while they are its own (before the tp,
   * cp and ep shares below; the same arch and parameters model_cost_step_flops would use) */
  pc->step_flops = ra == p->arch && cp.seq_len == s->seq_len
                     ? model_cost_step_flops_of (ra, &pc->layer, &pc->embedding, &pc->head)
                     : -1;
  plan_tp_layer_memory (p, &pc->layer);
  plan_tp_layer_kernels (p, &pc->layer);
  plan_cp_layer (p, &pc->layer);
  plan_ep_layer_kernels (p, &pc->layer);
  plan_ep_layer_memory (p, &pc->layer);
  g_autoptr (ModelInventory) inv = model_stack_inventory (s, p->arch);
  double emb = (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_EMBED);
  pc->trainable_tensors = pc->trainable_matrices = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if (!t->trainable)
        continue;
      double copies = (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL);
      pc->trainable_tensors += copies;
      if (t->ndim >= 2)
        pc->trainable_matrices += copies;
    }
  pc->trainable_params = (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_ALL);
  double head = (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_HEAD);
  pc->params_root = model_stack_trainable_root_params (s, p->arch);
  pc->params_layer = model_stack_trainable_layer_params (s, p->arch);
  pc->params_embedding = emb;
  pc->weight_root = model_stack_root_weight_bytes (s, p->arch);
  pc->weight_layer = model_stack_layer_weight_bytes (s, p->arch);
  pc->weight_embedding = model_inventory_weight_bytes (inv, MODEL_INVENTORY_EMBED,
                                                       model_stack_weight_bytes (s), TRUE);
  double g = model_stack_gradient_bytes (s);
  pc->grad_embedding = g * emb;
  pc->grad_layer = g * pc->params_layer;
  pc->grad_head = g * head;
  /* A tp rank's share of each block's parameters and weights (plan_tp.c) */
  const PlanTp *tp = &p->tp;
  pc->params_root *= tp->trainable_root;
  pc->params_layer *= tp->trainable_layer;
  pc->params_embedding *= tp->trainable_embed;
  pc->weight_root *= tp->weights_root;
  pc->weight_layer *= tp->weights_layer;
  pc->weight_embedding *= tp->weights_embed;
  pc->grad_embedding *= tp->trainable_embed;
  pc->grad_layer *= tp->trainable_layer;
  pc->grad_head *= tp->trainable_root;
  /* Tied embeddings: the head's backward is the first to produce the shared gradient (its
   * memory is held from then on); the embedding's backward adds the last contribution, so
   * the reduction of that gradient waits for it (params_embedding, plan_step.c). */
  if (p->arch->tied_embeddings)
    {
      pc->grad_head += pc->grad_embedding;
      pc->grad_embedding = 0;
    }
  /* DeepSeek-V3's MTP depths: each runs the block above its decoder layer (a rank's shapes),
   * the layer (pc->layer, the main model's last-layer type) and the shared head (pc->head);
   * its own parameters beyond the layer are enorm, hnorm, eh_proj and shared_head.norm. */
  memset (&pc->mtp_proj, 0, sizeof pc->mtp_proj);
  pc->params_mtp = pc->grad_mtp = 0;
  if (s->mtp_layers > 0)
    {
      pc->mtp_proj = model_cost_mtp_proj (ra, &cp);
      double depth = (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_MTP)
                     * tp->trainable_mtp / s->mtp_layers;
      pc->params_mtp = MAX (depth - pc->params_layer, 0);
      pc->grad_mtp = g * pc->params_mtp;
    }
}

/* [training] mtp_layers: DeepSeek-V3's multi-token-prediction depths (Megatron-LM
 * --mtp-num-layers) exist only where the config declares them (num_nextn_predict_layers;
 * Megatron builds up to mtp_num_layers of them, and HF's checkpoint holds that many), and
 * the plan runs them on full training without offload, √L segments or parameters sharded
 * at rest (what it models of them: plan_step.c). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE
 * "group [training], key 'mtp_layers': …". */
static gboolean
check_mtp (const ModelArch *arch, const ModelStack *s, const ModelParallel *par, GError **error)
{
  const char *what = NULL;
  if (s->mtp_layers == 0)
    return TRUE;
  if (s->mtp_layers > arch->deepseek.n_mtp_layers)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'mtp_layers': %u multi-token-prediction layer%s, but "
                   "model '%s' has %" G_GUINT64_FORMAT " (its config's "
                   "num_nextn_predict_layers; DeepSeek-V3 declares 1)", s->mtp_layers,
                   s->mtp_layers == 1 ? "" : "s",
                   arch->name != NULL ? arch->name : "(unnamed)", arch->deepseek.n_mtp_layers);
      return FALSE;
    }
  if (s->finetune.method != MODEL_FINETUNE_NONE)
    what = "an adapter method ([finetune] method)";
  else if (model_offload_any (&s->offload))
    what = "offloading ([offload])";
  else if (s->checkpointing == MODEL_CHECKPOINTING_SQRT)
    what = "[training] checkpointing = sqrt";
  else if (model_parallel_state_sharded (par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST)
           && par->degree > 1)
    what = "parameters sharded at rest ([parallel] data_parallel = zero3 or FSDP)";
  if (what == NULL)
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [training], key 'mtp_layers': training the MTP layers with %s is not "
               "modelled", what);
  return FALSE;
}

static gboolean
check_stack (const ModelArch *arch, const ModelStack *s, GError **error)
{
  if (s->micro_batch < 1 || s->seq_len < 1 || s->grad_accum < 1)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training]: micro_batch, seq_len and grad_accum must be at least 1");
      return FALSE;
    }
  if (arch->learned_positions && s->seq_len > arch->max_positions)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'seq_len': %" G_GUINT64_FORMAT " exceeds the %"
                   G_GUINT64_FORMAT " learned positions of model '%s' ([model] "
                   "max_position_embeddings)", s->seq_len, arch->max_positions, arch->name);
      return FALSE;
    }
  if (!(s->dropout >= 0 && s->dropout < 1))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'dropout': %g is outside [0, 1)", s->dropout);
      return FALSE;
    }
  return model_stack_validate_finetune (s, error);
}

/* The expert degrees' own checks (num_local_experts a multiple of ep, intermediate_size of
 * etp, ep·etp dividing a stage's ranks), which model_tp_check under tp > 1 meets too, are
 * plan_ep_validate's to name (key 'ep' or 'etp'), not tp's: a mesh they break fails here,
 * with plan_ep_validate's error (as plan_cp_validate defers to it). TRUE otherwise. */
static gboolean
expert_degrees_first (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                      GError **error)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  if (arch->n_experts == 0 || model_ep_check (arch, &mesh, NULL))
    return TRUE;
  gboolean ok = plan_ep_validate (arch, stack, par, error);
  g_assert (!ok); /* it runs model_ep_check */
  return FALSE;
}

/* The multiple of seq_len (tokens) torchtitan's chunked_head loss needs: loss_chunks chunks
 * of each rank's sequence, seq_len / cp (par NULL: cp 1); 1 under any other loss. */
static guint64
chunked_head_multiple (const ModelStack *stack, const ModelParallel *par)
{
  if (stack->framework.loss != MODEL_LOSS_CHUNKED_HEAD || stack->framework.loss_chunks <= 1)
    return 1;
  return (guint64) stack->framework.loss_chunks * (par != NULL ? MAX (par->cp, 1) : 1);
}

gboolean
model_plan_validate (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                     GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL && par != NULL, FALSE);
  if (!model_arch_validate (arch, error) || !check_stack (arch, stack, error)
      || !model_parallel_validate (par, error)
      || !model_offload_validate (&stack->offload, par, error)
      || !model_stack_validate_framework (stack, par, error)
      || !check_mtp (arch, stack, par, error)
      || !expert_degrees_first (arch, stack, par, error)
      || !plan_tp_validate (arch, stack, par, error)
      || !plan_cp_validate (arch, stack, par, error)
      || !plan_pp_validate (arch, stack, par, error)
      || !plan_ep_validate (arch, stack, par, error))
    return FALSE;
  if (stack->checkpointing == MODEL_CHECKPOINTING_SQRT
      && model_parallel_state_sharded (par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST)
      && !model_parallel_keeps_gathered (par) && par->degree > 1)
    {
      /* A segment's recompute would need every layer of the segment gathered at once. */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'checkpointing': sqrt with [parallel] data_parallel "
                   "= %s (parameters re-gathered for the backward) is not modelled; use full "
                   "or every_k", model_parallel_mode_name (par->mode));
      return FALSE;
    }
  /* torchtitan's ChunkedLossWrapper splits a rank's sequence into num_chunks equal chunks
   * and checks it divides (components/loss.py _chunk_local: "ChunkedLossWrapper sequence
   * length must be divisible by num_chunks") */
  guint64 chunks = chunked_head_multiple (stack, par);
  if (chunks > 1 && stack->seq_len % chunks != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'seq_len': %" G_GUINT64_FORMAT " is not a multiple "
                   "of %" G_GUINT64_FORMAT ": loss = chunked_head (framework %s) splits each "
                   "rank's sequence into loss_chunks (%u) equal chunks; give a multiple of it as "
                   "seq_len, or another [training] loss (upcast: the whole sequence at once)",
                   stack->seq_len, chunks, model_framework_name (stack->framework.kind),
                   stack->framework.loss_chunks);
      return FALSE;
    }
  return TRUE;
}

/* See plan.h. */
guint64
model_plan_seq_len_multiple (const ModelArch *arch, const ModelStack *stack,
                             const ModelParallel *par)
{
  g_return_val_if_fail (arch != NULL && stack != NULL, 1);
  if (par == NULL)
    return MAX (chunked_head_multiple (stack, NULL), 1);
  guint64 m = MAX (chunked_head_multiple (stack, par), 1);
  m = sim_lcm64 (m, model_tp_seq_multiple (par->tp, par->sequence_parallel));
  if (par->cp > 1)
    m = sim_lcm64 (m, plan_cp_seq_multiple (arch, stack, par));
  if (arch->n_experts > 0)
    {
      ModelEpParams ep;
      plan_ep_params (arch, stack, par, &ep);
      m = sim_lcm64 (m, model_ep_seq_multiple (&ep));
    }
  return m;
}

static ModelPlan *
plan_alloc (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par)
{
  ModelPlan *p = g_new0 (ModelPlan, 1);
  p->compute_gate = G_MAXUINT;
  p->arch = model_arch_copy (arch);
  p->stack = *stack;
  model_stack_resolve_framework (&p->stack);
  p->par = *par;
  model_parallel_mesh (par, &p->mesh);
  p->n_ranks = par->degree;
  g_assert (model_mesh_size (&p->mesh) == p->n_ranks);
  plan_tp_init (p);
  plan_cp_init (p);
  plan_pp_init (p);
  plan_ep_init (p);
  /* DeepSpeed stage 3 prefetches by element budgets, not layers (framework.h) */
  if (par->mode == MODEL_DP_ZERO3)
    {
      double layer = model_stack_layer_weight_bytes (stack, arch)
                     / model_stack_weight_bytes (stack);
      guint ahead = model_framework_ds_prefetch_layers (&stack->framework, layer,
                                                        (guint) arch->n_layers);
      if (ahead != G_MAXUINT)
        p->par.prefetch = ahead;
    }
  p->tasks = g_array_new (FALSE, TRUE, sizeof (ModelTask));
  p->kernels = g_array_new (FALSE, TRUE, sizeof (ModelKernel));
  p->kernel_runs = plan_kernel_runs_new ();
  p->deps = g_array_new (FALSE, TRUE, sizeof (guint));
  p->effects = g_array_new (FALSE, TRUE, sizeof (ModelMemEffect));
  p->labels = g_string_chunk_new (4096);
  p->handles = g_array_new (FALSE, TRUE, sizeof (ModelMemEffect));
  g_array_set_size (p->handles, 1); /* handle 0 means "none" */
  p->tensor_sizes = g_array_new (FALSE, FALSE, sizeof (double));
  p->initial_handles = g_array_new (FALSE, TRUE, sizeof (guint));
  g_array_set_size (p->initial_handles, p->n_ranks * MODEL_N_MEM);
  p->creation_tasks = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; i < p->n_ranks * MODEL_N_MEM; i++)
    g_array_append_val (p->creation_tasks, (guint){ G_MAXUINT });
  p->grad_handles = g_array_new (FALSE, FALSE, sizeof (guint));
  p->collectives = g_array_new (FALSE, TRUE, sizeof (ModelCollective));
  p->rank_lists = g_ptr_array_new_with_free_func (g_free);
  p->groups = plan_groups_new ();
  p->instances = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p->state_bytes = g_new0 (double, p->n_ranks);
  return p;
}


/* The error for a plan whose ranks' tasks (rank 0's times the built ranks) would exceed
 * MODEL_PLAN_MAX_TASKS. */
static void
plan_too_large (const ModelPlan *p, GError **error)
{
  guint built = hw_rank_shift_n_reps (&p->built);
  double tasks = (double) p->tasks->len * built / 1e6;
  if (p->par.pp > 1)
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [parallel], key 'pp': %u GPUs in %u pipeline stages build %u ranks' "
                 "tasks (one per rank class; an NCCL tree across pods joined by a tapered core, or "
                 "a straggler, leaves more classes): about %.1f million tasks, more than the %.0f million a plan "
                 "holds (each 0.6-1 KB and 20-100 us of CPU); use fewer stages or "
                 "micro-batches%s",
                 p->n_ranks, p->par.pp, built, tasks, MODEL_PLAN_MAX_TASKS / 1e6,
                 p->par.order != MODEL_MESH_ORDER_TP_CP_EP_DP_PP
                   ? ", or [parallel] order = tp-cp-ep-dp-pp (rank order tp-cp-ep-pp-dp "
                     "replays the ranks of whole pipeline replicas)"
                   : "");
  else
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [run], key 'rank_classes': %u ranks are built and replayed (one per "
                 "rank class; rank_classes = off, stragglers, kernel jitter or an NCCL tree "
                 "across nodes leave more classes): about %.1f million tasks, more than the "
                 "%.0f million a plan holds (each 0.6-1 KB and 20-100 us of CPU); use fewer "
                 "GPUs or micro-batches, or [parallel] algorithm = ring (a tree's root and "
                 "leaves differ, so no two nodes are alike; rings keep them interchangeable)",
                 built, tasks, MODEL_PLAN_MAX_TASKS / 1e6);
}


/* The tasks before which the host waits for its rank's earlier work (ModelTask.host_sync):
 * under fp16 loss scaling the optimizer step (the scaler reads found_inf on the host:
 * torch/amp/grad_scaler.py _maybe_opt_step `v.item()`; DeepSpeed's and Megatron's fp16
 * optimizers check their overflow flag with .item() too); with host_sync_micro_batch
 * (the HF Trainer) and no pipeline parallelism also each micro-batch after the first — its
 * first task in plan order — and the optimizer step. */
static void
mark_host_syncs (ModelPlan *p)
{
  const ModelStack *s = &p->stack;
  /* a pipeline schedule interleaves the micro-batches (and a stage's earlier tasks wait on
   * other stages' later ones): the per-micro-batch wait belongs to the Trainer's loop of one
   * micro-batch at a time, pp = 1 (cli/scenario/scenario_warnings.c says so) */
  gboolean per_mb = s->framework.host_sync_micro_batch && p->pp.pp <= 1;
  gboolean scaler = model_stack_loss_scaled (s);
  if (!per_mb && !scaler)
    return;
  g_autofree gint *seen = g_new (gint, p->n_ranks);
  for (guint r = 0; r < p->n_ranks; r++)
    seen[r] = -1;
  for (guint id = 0; id < p->tasks->len; id++)
    {
      ModelTask *t = &g_array_index (p->tasks, ModelTask, id);
      if (t->kind == MODEL_TASK_KIND_OPTIMIZER)
        t->host_sync = TRUE;
      else if (per_mb && t->micro_batch > seen[t->rank])
        {
          t->host_sync = seen[t->rank] >= 0;
          seen[t->rank] = t->micro_batch;
        }
    }
}

/* GDestroyNotify of a GPtrArray of GArrays whose slots may be NULL. */
static void
unref_array (gpointer a)
{
  if (a != NULL)
    g_array_unref (a);
}

static ModelPlan *
plan_build (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
            double paged_spill, const HwRankShift *built, GError **error)
{
  ModelParallel single;
  if (par == NULL)
    {
      model_parallel_init_defaults (&single);
      par = &single;
    }
  if (!model_plan_validate (arch, stack, par, error))
    return NULL;
  ModelPlan *p = plan_alloc (arch, stack, par);
  p->built = built != NULL ? *built : hw_rank_shift_identity (p->n_ranks);
  g_assert (p->built.n == p->n_ranks && hw_rank_shift_valid (&p->built));
  guint n_built = hw_rank_shift_n_reps (&p->built);
  p->paged_spill = paged_spill;
  plan_initial_state (p);
  /* on the heap: ~120 KB, which on the stack took ~30 page faults of their own (the heap's
   * are in huge pages, cli/malloc_tuning.h) */
  g_autofree PlanCosts *pcs = g_new (PlanCosts, 1);
  PlanCosts *pc = pcs;
  plan_costs (p, pc);
  /* Model FLOPs: forward + backward without recompute, 3 × forward for full fine-tuning
   * (Narayanan et al. 2021 §5.1); with LoRA's frozen base the backward skips the weight
   * gradients (cost.h); the MTP depths as Megatron's num_floating_point_operations counts
   * them (cost.h model_cost_mtp_flops). */
  ModelCostParams cp = model_stack_cost_params (stack);
  double step_flops = pc->step_flops >= 0 ? pc->step_flops : model_cost_step_flops (arch, &cp);
  p->model_flops = (step_flops + model_cost_mtp_flops (arch, &cp, stack->mtp_layers))
                   * (double) stack->grad_accum
                   / ((double) p->tp.tp * p->cp.cp * p->pp.pp); /* a replica's model FLOPs
                                                                 * shared by its tp·cp·pp ranks */
  plan_pp_fractions (p);
  double recompute = 0; /* Σ over ranks of recompute FLOPs (ranks differ under pp) */
  g_autoptr (GPtrArray) dummies = g_ptr_array_new_with_free_func (unref_array);
  g_ptr_array_set_size (dummies, (gint) p->pp.pp);
  for (guint b = 0; b < n_built; b++)
    {
      guint r = hw_rank_shift_rank (&p->built, b);
      for (guint c = 0; c < MODEL_N_MEM; c++)
        {
          g_autoptr (GArray) sizes = plan_initial_tensors (p, c);
          /* a pipeline stage's share of each state (plan_pp.c; 1 without pp); the rotary
           * tables, the weights' last tensor, are the rank's (plan_rope_table_rank_bytes:
           * a model's one whole on every stage, torchtitan's pipeline split deep-copying the
           * model with its buffers, distributed/pipeline_parallel.py _split_module; per-layer
           * ones with their layers) */
          double f = plan_pp_state_fraction (p, r, c);
          double rope = c == MODEL_MEM_WEIGHTS ? plan_rope_table_bytes (p) : 0;
          if (f != 1)
            {
              if (rope > 0)
                g_array_set_size (sizes, sizes->len - 1);
              scale_whole_bytes (sizes, f);
              if (rope > 0)
                {
                  double mine = plan_rope_table_rank_bytes (p, r);
                  g_array_append_val (sizes, mine);
                }
            }
          if (c == MODEL_MEM_WORKSPACE)
            {
              /* Transformer Engine's dummy weight gradients: made by the first backward,
               * held for good, so present through every steady-state step (the same on
               * every rank of a pipeline stage: computed once a stage) */
              guint s = plan_pp_rank_of (p, r);
              if (g_ptr_array_index (dummies, s) == NULL)
                g_ptr_array_index (dummies, s) = plan_wgrad_dummy_tensors (p, r);
              const GArray *dummy = g_ptr_array_index (dummies, s);
              g_array_append_vals (sizes, dummy->data, dummy->len);
            }
          g_array_index (p->initial_handles, guint, r * MODEL_N_MEM + c)
            = plan_new_handle_tensors (p, c, (const double *) sizes->data, sizes->len);
        }
      p->hardware_flops = 0;
      plan_offload_begin_rank (p, r, pc);
      plan_paged_begin_rank (p, r);
      if (p->pp.pp > 1)
        plan_pp_step_rank (p, r, pc);
      else
        plan_step_rank (p, r, pc);
      recompute += p->hardware_flops;
      if (b == 0 && (double) p->tasks->len * n_built > MODEL_PLAN_MAX_TASKS)
        {
          plan_too_large (p, error);
          model_plan_free (p);
          return NULL;
        }
    }
  if (p->pp.pp > 1)
    p->hardware_flops = recompute / n_built;
  p->hardware_flops += p->model_flops;
  mark_host_syncs (p);
  return p;
}

ModelPlan *
model_plan_new (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL, NULL);
  return plan_build (arch, stack, par, 0, NULL, error);
}

ModelPlan *
model_plan_new_representatives (const ModelArch *arch, const ModelStack *stack,
                                const ModelParallel *par, double paged_spill,
                                const HwRankShift *built, GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL, NULL);
  g_return_val_if_fail (paged_spill >= 0, NULL);
  g_return_val_if_fail (paged_spill == 0 || model_stack_optimizer_is_paged (stack), NULL);
  guint n = par != NULL ? MAX (par->degree, 1) : 1;
  g_return_val_if_fail (built == NULL || (built->n == n && hw_rank_shift_valid (built)), NULL);
  if (built != NULL && !hw_rank_shift_is_identity (built) && par != NULL)
    {
      ModelMesh mesh;
      model_parallel_mesh (par, &mesh);
      g_return_val_if_fail (model_mesh_size (&mesh) == n
                              && model_mesh_shift_keeps_stages (&mesh, built), NULL);
    }
  return plan_build (arch, stack, par, paged_spill, built, error);
}

ModelPlan *
model_plan_new_paged (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                      double paged_spill, GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL, NULL);
  g_return_val_if_fail (paged_spill >= 0, NULL);
  g_return_val_if_fail (paged_spill == 0 || model_stack_optimizer_is_paged (stack), NULL);
  return plan_build (arch, stack, par, paged_spill, NULL, error);
}

void
model_plan_free (ModelPlan *plan)
{
  if (plan == NULL)
    return;
  model_arch_free (plan->arch);
  plan_tp_clear (&plan->tp);
  plan_cp_clear (&plan->cp);
  plan_pp_clear (&plan->pp);
  plan_ep_clear (&plan->ep);
  g_array_unref (plan->tasks);
  g_array_unref (plan->kernels);
  g_hash_table_unref (plan->kernel_runs);
  plan_pass_memo_free (plan->pass_memo);
  plan_redist_memo_free (plan->redist_memo);
  g_array_unref (plan->deps);
  g_array_unref (plan->effects);
  g_string_chunk_free (plan->labels);
  g_array_unref (plan->handles);
  g_array_unref (plan->tensor_sizes);
  g_array_unref (plan->initial_handles);
  g_array_unref (plan->creation_tasks);
  g_array_unref (plan->grad_handles);
  g_array_unref (plan->collectives);
  g_ptr_array_unref (plan->rank_lists);
  g_hash_table_unref (plan->groups);
  g_hash_table_unref (plan->instances);
  g_free (plan->state_bytes);
  plan_offload_free (plan->offload);
  g_free (plan);
}

/* ---- accessors ------------------------------------------------------------------------- */

const ModelArch *
model_plan_arch (const ModelPlan *plan)
{
  return plan->arch;
}

const ModelStack *
model_plan_stack (const ModelPlan *plan)
{
  return &plan->stack;
}

const ModelParallel *
model_plan_parallel (const ModelPlan *plan)
{
  return &plan->par;
}

guint
model_plan_n_ranks (const ModelPlan *plan)
{
  return plan->n_ranks;
}

guint
model_plan_n_built (const ModelPlan *plan)
{
  g_return_val_if_fail (plan != NULL, 0);
  return hw_rank_shift_n_reps (&plan->built);
}

const HwRankShift *
model_plan_built (const ModelPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  return &plan->built;
}

guint
model_plan_n_tasks (const ModelPlan *plan)
{
  return plan->tasks->len;
}

const ModelTask *
model_plan_task (const ModelPlan *plan, guint id)
{
  g_return_val_if_fail (id < plan->tasks->len, NULL);
  return &g_array_index (plan->tasks, ModelTask, id);
}

const ModelKernel *
model_plan_kernel (const ModelPlan *plan, guint index)
{
  g_return_val_if_fail (index < plan->kernels->len, NULL);
  return &g_array_index (plan->kernels, ModelKernel, index);
}

guint
model_plan_dep (const ModelPlan *plan, guint index)
{
  g_return_val_if_fail (index < plan->deps->len, 0);
  return g_array_index (plan->deps, guint, index);
}

const ModelMemEffect *
model_plan_effect (const ModelPlan *plan, guint index)
{
  g_return_val_if_fail (index < plan->effects->len, NULL);
  return &g_array_index (plan->effects, ModelMemEffect, index);
}

guint
model_plan_n_collectives (const ModelPlan *plan)
{
  return plan->collectives->len;
}

const ModelCollective *
model_plan_collective (const ModelPlan *plan, guint index)
{
  g_return_val_if_fail (index < plan->collectives->len, NULL);
  return &g_array_index (plan->collectives, ModelCollective, index);
}

guint
model_plan_creation_task (const ModelPlan *plan, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (plan != NULL && rank < plan->n_ranks && category < MODEL_N_MEM,
                        G_MAXUINT);
  rank = hw_rank_shift_rep (&plan->built, rank);
  return g_array_index (plan->creation_tasks, guint, rank * MODEL_N_MEM + category);
}

double
model_plan_initial_bytes (const ModelPlan *plan, ModelMemCategory category)
{
  g_return_val_if_fail (category < MODEL_N_MEM, 0);
  return plan->initial[category];
}

guint
model_plan_initial_handle (const ModelPlan *plan, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < plan->n_ranks && category < MODEL_N_MEM, 0);
  rank = hw_rank_shift_rep (&plan->built, rank);
  return g_array_index (plan->initial_handles, guint, rank * MODEL_N_MEM + category);
}

const ModelMemEffect *
model_plan_allocation (const ModelPlan *plan, guint handle)
{
  g_return_val_if_fail (handle > 0 && handle < plan->handles->len, NULL);
  return &g_array_index (plan->handles, ModelMemEffect, handle);
}

const double *
model_plan_tensor_sizes (const ModelPlan *plan, guint first_tensor)
{
  g_return_val_if_fail (first_tensor < plan->tensor_sizes->len, NULL);
  return &g_array_index (plan->tensor_sizes, double, first_tensor);
}

double
model_plan_state_bytes (const ModelPlan *plan, guint rank)
{
  g_return_val_if_fail (rank < plan->n_ranks, 0);
  return plan->state_bytes[hw_rank_shift_rep (&plan->built, rank)];
}

double
model_plan_model_flops (const ModelPlan *plan)
{
  return plan->model_flops;
}

guint
model_plan_n_copied_micro_batches (const ModelPlan *plan)
{
  g_return_val_if_fail (plan != NULL, 0);
  return plan->n_copied_mbs;
}

double
model_plan_hardware_flops (const ModelPlan *plan)
{
  return plan->hardware_flops;
}

double
model_plan_tokens_per_rank (const ModelPlan *plan)
{
  return (double) (plan->stack.micro_batch * plan->stack.seq_len * plan->stack.grad_accum)
         / ((double) MAX (plan->par.tp, 1) * MAX (plan->par.cp, 1) * MAX (plan->par.pp, 1));
}

gboolean
model_plan_ep_load (const ModelPlan *plan, double *slowest, double *mean, double *least)
{
  g_return_val_if_fail (plan != NULL && slowest != NULL && mean != NULL, FALSE);
  const ModelEpDispatch *d = &plan->ep.dispatch;
  *slowest = plan->ep.on ? d->slowest_rows : 0;
  *mean = plan->ep.on ? d->mean_rows * d->n_local_experts : 0;
  if (least != NULL)
    *least = plan->ep.on ? d->least_rows : 0;
  return plan->ep.on;
}

guint
model_plan_pp_degree (const ModelPlan *plan)
{
  return plan->pp.pp;
}

const ModelMesh *
model_plan_mesh (const ModelPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  return &plan->mesh;
}

guint
model_plan_pp_rank (const ModelPlan *plan, guint rank)
{
  g_return_val_if_fail (rank < plan->n_ranks, 0);
  return plan_pp_rank_of (plan, rank);
}
