/* models/plan.c — expands one training step into tasks with memory effects; see plan.h. */
#include "config.h"
#include "models/plan.h"

#include <stdarg.h>

struct _ModelPlan
{
  ModelArch *arch;
  ModelStack stack;
  guint n_ranks;
  GArray *tasks;   /* ModelTask, index = id */
  GArray *kernels; /* ModelKernel */
  GArray *deps;    /* guint task ids */
  GArray *effects; /* ModelMemEffect */
  GStringChunk *labels;
  GArray *handles; /* ModelMemEffect of each allocation, index = handle (0 unused) */
  double initial[MODEL_N_MEM];
  GArray *initial_handles; /* guint, n_ranks × MODEL_N_MEM */
  GArray *grad_handles;    /* guint, gradients allocated by the current rank's backward */
  double model_flops;
  double hardware_flops;
};

static const char *const kind_names[MODEL_N_TASK_KINDS] = {
  "forward", "backward", "recompute", "optimizer", "collective", "offload",
};
static const char *const stream_names[MODEL_N_STREAMS] = { "compute", "comm", "h2d", "d2h" };

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

/* ---- building ------------------------------------------------------------------------ */

/* Starts a new task; kernels, dependencies and effects added next belong to it. */
G_GNUC_PRINTF (7, 8)
static guint
task_begin (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind, gint layer,
            gint micro_batch, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *label = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  ModelTask t = {
    .id = p->tasks->len,
    .rank = rank,
    .stream = stream,
    .kind = kind,
    .label = g_string_chunk_insert (p->labels, label),
    .layer = layer,
    .micro_batch = micro_batch,
    .first_kernel = p->kernels->len,
    .first_dep = p->deps->len,
    .first_effect = p->effects->len,
  };
  g_array_append_val (p->tasks, t);
  return t.id;
}

static ModelTask *
current (ModelPlan *p)
{
  return &g_array_index (p->tasks, ModelTask, p->tasks->len - 1);
}

/* Appends the kernels of one pass. GEMM and attention FLOPs run at the stack's tensor
 * dtype; element-wise kernels on the CUDA cores (fp32). */
static void
task_add_pass (ModelPlan *p, const ModelPass *pass)
{
  HwDtype tensor = model_stack_compute_dtype (&p->stack);
  ModelTask *t = current (p);
  for (guint i = 0; i < pass->n_ops; i++)
    {
      ModelKernel k = { pass->ops[i], pass->ops[i].op_class == MODEL_OP_ELEMENTWISE
                                          ? HW_DTYPE_FP32 : tensor };
      g_array_append_val (p->kernels, k);
      t->n_kernels++;
      t->flops += k.op.flops;
      t->bytes += k.op.bytes;
    }
}

/* A new allocation handle for `bytes` of `category` (0 when bytes is 0). */
static guint
new_handle (ModelPlan *p, ModelMemCategory category, double bytes)
{
  if (bytes <= 0)
    return 0;
  ModelMemEffect e = { category, bytes, MODEL_EFFECT_AT_START, p->handles->len };
  g_array_append_val (p->handles, e);
  return e.handle;
}

/* The current task allocates `bytes` of `category` at its start or end; returns the
 * handle for the matching task_free() (0 if nothing was allocated). */
static guint
task_alloc (ModelPlan *p, ModelMemCategory category, double bytes, ModelEffectWhen when)
{
  guint h = new_handle (p, category, bytes);
  if (h == 0)
    return 0;
  ModelMemEffect e = { category, bytes, when, h };
  g_array_append_val (p->effects, e);
  current (p)->n_effects++;
  return h;
}

/* The current task frees allocation `handle` (0: nothing) at its start or end. */
static void
task_free (ModelPlan *p, guint handle, ModelEffectWhen when)
{
  if (handle == 0)
    return;
  const ModelMemEffect *a = &g_array_index (p->handles, ModelMemEffect, handle);
  ModelMemEffect e = { a->category, -a->bytes, when, handle };
  g_array_append_val (p->effects, e);
  current (p)->n_effects++;
}

/* Workspace lives exactly as long as the task. */
static void
task_workspace (ModelPlan *p, double bytes)
{
  task_free (p, task_alloc (p, MODEL_MEM_WORKSPACE, bytes, MODEL_EFFECT_AT_START),
             MODEL_EFFECT_AT_END);
}

/* Gradients produced for the first time (micro-batch 0) stay until the optimizer step. */
static void
task_alloc_gradients (ModelPlan *p, double bytes)
{
  if (!p->stack.zero_grad_to_none)
    return; /* allocated at time 0 and kept (model_stack_initial_bytes) */
  guint h = task_alloc (p, MODEL_MEM_GRADIENTS, bytes, MODEL_EFFECT_AT_START);
  if (h != 0)
    g_array_append_val (p->grad_handles, h);
}

typedef struct
{
  ModelBlockCost embedding, layer, head;
  double grad_embedding, grad_layer, grad_head; /* B of gradients each block produces */
} BlockCosts;

static void
block_costs (const ModelPlan *p, BlockCosts *bc)
{
  const ModelStack *s = &p->stack;
  ModelCostParams cp = {
    .micro_batch = s->micro_batch,
    .seq_len = s->seq_len,
    .act_bytes = model_stack_activation_bytes (s),
    .weight_bytes = model_stack_weight_bytes (s),
    .flash_attention = s->flash_attention,
    .dropout = s->dropout,
    .weight_cache_bytes = model_stack_weight_cache_bytes (s),
  };
  bc->embedding = model_cost_embedding (p->arch, &cp);
  bc->layer = model_cost_layer (p->arch, &cp);
  bc->head = model_cost_head (p->arch, &cp);
  double g = model_stack_gradient_bytes (s);
  bc->grad_embedding = g * (double) model_arch_n_params_embedding (p->arch);
  bc->grad_layer = g * (double) model_arch_n_params_layer (p->arch);
  bc->grad_head = g * (double) (model_arch_n_params_lm_head (p->arch)
                                + model_arch_n_params_final_norm (p->arch));
  /* Tied embeddings: the head's backward is the first to produce the shared gradient. */
  if (p->arch->tied_embeddings)
    {
      bc->grad_head += bc->grad_embedding;
      bc->grad_embedding = 0;
    }
}

/* Handles of one micro-batch's saved activations, freed by its backward. */
typedef struct
{
  guint embedding;
  guint head;
  guint *layer;      /* per layer: saved activations (or the checkpointed input) */
} SavedActs;

static void
plan_forward (ModelPlan *p, guint rank, gint mb, const BlockCosts *bc, SavedActs *saved)
{
  gboolean ckpt = p->stack.checkpointing == MODEL_CHECKPOINTING_FULL;
  task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, -1, mb, "fwd embed mb%d", mb);
  task_add_pass (p, &bc->embedding.fwd);
  saved->embedding = task_alloc (p, MODEL_MEM_ACTIVATIONS, bc->embedding.act_saved,
                                 MODEL_EFFECT_AT_START);
  task_workspace (p, bc->embedding.fwd.workspace);
  for (guint64 l = 0; l < p->arch->n_layers; l++)
    {
      task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, (gint) l, mb,
                  "fwd L%" G_GUINT64_FORMAT " mb%d", l, mb);
      task_add_pass (p, &bc->layer.fwd);
      saved->layer[l] = task_alloc (p, MODEL_MEM_ACTIVATIONS,
                                    ckpt ? bc->layer.act_checkpoint : bc->layer.act_saved,
                                    MODEL_EFFECT_AT_START);
      task_workspace (p, bc->layer.fwd.workspace);
    }
  task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, -1, mb, "fwd head mb%d", mb);
  task_add_pass (p, &bc->head.fwd);
  saved->head = task_alloc (p, MODEL_MEM_ACTIVATIONS, bc->head.act_saved, MODEL_EFFECT_AT_START);
  task_workspace (p, bc->head.fwd.workspace);
}

static void
plan_backward (ModelPlan *p, guint rank, gint mb, const BlockCosts *bc, const SavedActs *saved)
{
  gboolean ckpt = p->stack.checkpointing == MODEL_CHECKPOINTING_FULL;
  gboolean first = mb == 0;
  task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD, -1, mb, "bwd head mb%d", mb);
  task_add_pass (p, &bc->head.bwd);
  task_alloc_gradients (p, first ? bc->grad_head : 0);
  task_workspace (p, bc->head.bwd.workspace);
  task_free (p, saved->head, MODEL_EFFECT_AT_END);
  for (gint64 l = (gint64) p->arch->n_layers - 1; l >= 0; l--)
    {
      guint recomputed = 0;
      if (ckpt)
        {
          /* Full checkpointing (Chen et al. 2016, arXiv 1604.06174, §3): rerun the layer's
           * forward from its saved input, re-creating its activations. */
          task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_RECOMPUTE, (gint) l, mb,
                      "recompute L%" G_GINT64_FORMAT " mb%d", l, mb);
          task_add_pass (p, &bc->layer.fwd);
          recomputed = task_alloc (p, MODEL_MEM_ACTIVATIONS, bc->layer.act_saved,
                                   MODEL_EFFECT_AT_START);
          task_workspace (p, bc->layer.fwd.workspace);
          p->hardware_flops += current (p)->flops;
        }
      task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD, (gint) l, mb,
                  "bwd L%" G_GINT64_FORMAT " mb%d", l, mb);
      task_add_pass (p, &bc->layer.bwd);
      task_alloc_gradients (p, first ? bc->grad_layer : 0);
      task_workspace (p, bc->layer.bwd.workspace);
      task_free (p, recomputed, MODEL_EFFECT_AT_END);
      task_free (p, saved->layer[l], MODEL_EFFECT_AT_END);
    }
  task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD, -1, mb, "bwd embed mb%d", mb);
  task_add_pass (p, &bc->embedding.bwd);
  task_alloc_gradients (p, first ? bc->grad_embedding : 0);
  task_workspace (p, bc->embedding.bwd.workspace);
  task_free (p, saved->embedding, MODEL_EFFECT_AT_END);
}

static void
plan_optimizer (ModelPlan *p, guint rank)
{
  double n = (double) model_arch_n_params (p->arch);
  task_begin (p, rank, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_OPTIMIZER, -1, -1, "optimizer step");
  ModelPass pass = { .n_ops = 1 };
  pass.ops[0] = (ModelOp){ "optimizer", MODEL_OP_ELEMENTWISE,
                           n * model_stack_optimizer_step_flops (&p->stack),
                           n * model_stack_optimizer_step_bytes (&p->stack) };
  task_add_pass (p, &pass);
  task_workspace (p, model_stack_optimizer_workspace (&p->stack, p->arch));
  /* zero_grad(set_to_none=True), PyTorch's default since 2.0, releases the gradients. */
  for (guint i = 0; i < p->grad_handles->len; i++)
    task_free (p, g_array_index (p->grad_handles, guint, i), MODEL_EFFECT_AT_END);
  g_array_set_size (p->grad_handles, 0);
}

static gboolean
check_stack (const ModelArch *arch, const ModelStack *s, GError **error)
{
  if (s->micro_batch < 1 || s->seq_len < 1 || s->grad_accum < 1)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "micro_batch, seq_len and grad_accum must be at least 1");
      return FALSE;
    }
  if (arch->learned_positions && s->seq_len > arch->max_positions)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "seq_len %" G_GUINT64_FORMAT " exceeds the %" G_GUINT64_FORMAT
                   " learned positions of model '%s'", s->seq_len, arch->max_positions,
                   arch->name);
      return FALSE;
    }
  if (!(s->dropout >= 0 && s->dropout < 1))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "dropout must be in [0, 1)");
      return FALSE;
    }
  return TRUE;
}

ModelPlan *
model_plan_new (const ModelArch *arch, const ModelStack *stack, guint n_ranks, GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL && n_ranks > 0, NULL);
  if (!model_arch_validate (arch, error) || !check_stack (arch, stack, error))
    return NULL;
  ModelPlan *p = g_new0 (ModelPlan, 1);
  p->arch = model_arch_copy (arch);
  p->stack = *stack;
  p->n_ranks = n_ranks;
  p->tasks = g_array_new (FALSE, TRUE, sizeof (ModelTask));
  p->kernels = g_array_new (FALSE, TRUE, sizeof (ModelKernel));
  p->deps = g_array_new (FALSE, TRUE, sizeof (guint));
  p->effects = g_array_new (FALSE, TRUE, sizeof (ModelMemEffect));
  p->labels = g_string_chunk_new (4096);
  p->handles = g_array_new (FALSE, TRUE, sizeof (ModelMemEffect));
  g_array_set_size (p->handles, 1); /* handle 0 means "none" */
  p->initial_handles = g_array_new (FALSE, TRUE, sizeof (guint));
  g_array_set_size (p->initial_handles, n_ranks * MODEL_N_MEM);
  p->grad_handles = g_array_new (FALSE, FALSE, sizeof (guint));

  for (guint c = 0; c < MODEL_N_MEM; c++)
    p->initial[c] = model_stack_initial_bytes (stack, arch, c);

  BlockCosts bc;
  block_costs (p, &bc);
  double fwd = bc.embedding.fwd.flops + (double) arch->n_layers * bc.layer.fwd.flops
               + bc.head.fwd.flops;
  /* Model FLOPs: forward + backward = 3 × forward (Narayanan et al. 2021 §5.1). */
  p->model_flops = 3 * fwd * (double) stack->grad_accum;
  g_autofree guint *layer_handles = g_new0 (guint, arch->n_layers);
  SavedActs saved = { .layer = layer_handles };
  for (guint r = 0; r < n_ranks; r++)
    {
      for (guint c = 0; c < MODEL_N_MEM; c++)
        g_array_index (p->initial_handles, guint, r * MODEL_N_MEM + c)
          = new_handle (p, c, p->initial[c]);
      p->hardware_flops = 0;
      for (guint64 mb = 0; mb < stack->grad_accum; mb++)
        {
          plan_forward (p, r, (gint) mb, &bc, &saved);
          plan_backward (p, r, (gint) mb, &bc, &saved);
        }
      plan_optimizer (p, r);
    }
  p->hardware_flops += p->model_flops;
  return p;
}

void
model_plan_free (ModelPlan *plan)
{
  if (plan == NULL)
    return;
  model_arch_free (plan->arch);
  g_array_unref (plan->tasks);
  g_array_unref (plan->kernels);
  g_array_unref (plan->deps);
  g_array_unref (plan->effects);
  g_string_chunk_free (plan->labels);
  g_array_unref (plan->handles);
  g_array_unref (plan->initial_handles);
  g_array_unref (plan->grad_handles);
  g_free (plan);
}

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

guint
model_plan_n_ranks (const ModelPlan *plan)
{
  return plan->n_ranks;
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
  return g_array_index (plan->initial_handles, guint, rank * MODEL_N_MEM + category);
}

double
model_plan_model_flops (const ModelPlan *plan)
{
  return plan->model_flops;
}

double
model_plan_hardware_flops (const ModelPlan *plan)
{
  return plan->hardware_flops;
}

double
model_plan_tokens_per_rank (const ModelPlan *plan)
{
  return (double) (plan->stack.micro_batch * plan->stack.seq_len * plan->stack.grad_accum);
}
