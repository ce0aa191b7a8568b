/* models/plan/plan-private.h — the plan's internals, shared by the files that build it:
 * plan_task.c (primitives), plan.c (construction, accessors), plan_state.c (persistent
 * state), plan_step.c (the per-rank schedule) and plan_comm.c (data-parallel
 * collectives). Not for use outside models/plan*.c. */
#pragma once

#include "models/plan/plan.h"

struct _ModelPlan
{
  ModelArch *arch;
  ModelStack stack;
  ModelParallel par;
  ModelMesh mesh;      /* model_parallel_mesh (&par) */
  guint n_ranks;
  GArray *tasks;       /* ModelTask, index = id */
  GArray *kernels;     /* ModelKernel */
  GArray *deps;        /* guint task ids */
  GArray *effects;     /* ModelMemEffect */
  GStringChunk *labels;
  GArray *handles;     /* ModelMemEffect of each allocation, index = handle (0 unused) */
  GArray *tensor_sizes; /* double, B: the tensors of allocations made of several */
  double initial[MODEL_N_MEM];
  GArray *initial_handles; /* guint, n_ranks × MODEL_N_MEM */
  GArray *creation_tasks;  /* guint, n_ranks × MODEL_N_MEM: model_plan_creation_task */
  GArray *grad_handles;    /* guint, gradients the current rank keeps until its optimizer */
  GArray *collectives;     /* ModelCollective */
  GPtrArray *rank_lists;   /* owned guint arrays behind ModelCollective.ranks */
  GHashTable *instances;   /* "group/sequence" → collective index + 1; lookup only */
  GHashTable *sequence;    /* "rank/group" → next sequence number; lookup only */
  double *state_bytes;     /* per rank */
  double model_flops;
  double hardware_flops;
  struct _PlanOffload *offload; /* plan_offload.c's per-rank state; NULL until used */
  double paged_spill;  /* B of optimizer state per rank paged out to host (plan_paged.c) */
  guint paged_host;    /* the current rank's host-DRAM handle of the spill (0: none) */
};

/* Per-block costs of one micro-batch and the gradient bytes each block produces. */
typedef struct
{
  ModelBlockCost embedding, layer, head;
  double params_root;   /* trainable parameters of the root unit (embedding + final norm +
                         * LM head; 0 under LoRA) and of one layer (stack.h) */
  double params_layer;
  double params_embedding; /* trainable parameters whose last gradient contribution is the
                            * embedding's backward: the embedding (with a tied LM head, the
                            * shared matrix); 0 under LoRA */
  double weight_root;   /* B of persistent weights of the root unit and of one layer: what a
                         * stage-3 gather moves */
  double weight_layer;
  double grad_embedding, grad_layer, grad_head; /* B of full gradients per block */
} PlanCosts;

/* ---- primitives (plan_task.c) ---- */
G_GNUC_PRINTF (7, 8)
guint plan_task_begin (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind,
                       gint layer, gint micro_batch, const char *fmt, ...);
ModelTask *plan_current (ModelPlan *p);
void plan_task_add_pass (ModelPlan *p, const ModelPass *pass);
void plan_task_dep (ModelPlan *p, guint task); /* no-op for G_MAXUINT */
guint plan_new_handle (ModelPlan *p, ModelMemCategory category, double bytes);
guint plan_task_alloc (ModelPlan *p, ModelMemCategory category, double bytes,
                       ModelEffectWhen when);
/* A buffer of n separate tensors (sizes in B, copied); n == 0 allocates nothing. */
guint plan_new_handle_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes,
                               guint n);
guint plan_task_alloc_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes,
                               guint n, ModelEffectWhen when);
void plan_task_free (ModelPlan *p, guint handle, ModelEffectWhen when);
void plan_task_workspace (ModelPlan *p, double bytes);
void plan_keep_gradient (ModelPlan *p, guint handle);
/* The last task of `rank` on `stream` built so far (tasks of a rank are contiguous), or
 * G_MAXUINT. */
guint plan_last_on_stream (const ModelPlan *p, guint rank, ModelStream stream);

/* ---- persistent state (plan_state.c) ---- */
/* Fills p->initial[] for every rank (sharding, offload). */
void plan_initial_state (ModelPlan *p);
/* Whether the optimizer states are created by the first optimizer step rather than at
 * load (model_plan_creation_task). */
gboolean plan_states_at_first_step (const ModelPlan *p);
/* The tensors (B each, new array, summing to `bytes`; empty when bytes is 0) of the
 * optimizer step's temporaries: foreach AdamW's torch._foreach_sqrt(exp_avg_sqs) is a list
 * of tensors, one like each parameter's second moment (torch/optim/adamw.py
 * _multi_tensor_adamw), so one block per parameter tensor — what the caching allocator
 * sees — or, over flat shards (ZeRO, FSDP), one per unit's shard; other optimizers and
 * implementations: one block. */
GArray *plan_optimizer_workspace_tensors (const ModelPlan *p, double bytes);
/* The tensors (B each, new array) making up the initial allocation of `category`. */
GArray *plan_initial_tensors (const ModelPlan *p, ModelMemCategory category);

/* ---- schedule (plan_step.c) ---- */
void plan_step_rank (ModelPlan *p, guint rank, const PlanCosts *pc);

/* ---- collectives (plan_comm.c) ---- */
/* Starts a collective task of `kind` on the comm stream of `rank` among its group over the
 * mesh dimensions `dims` (MODEL_MESH_BIT set; models/parallel/mesh.h), with `bytes` per
 * the nccl-tests convention; returns its task id (G_MAXUINT when the group has one rank:
 * no task). Dependencies and effects are added by the caller after this. */
guint plan_collective (ModelPlan *p, guint rank, guint dims, HwCollectiveKind kind,
                       double bytes, gint layer, gint micro_batch, const char *what);
/* The collectives moving `bytes` (B, whole) of `state` from phase `from` to `to`
 * (models/parallel/parallel.h's placements), issued in order on `rank`, each after the
 * previous, the first after `after` (NONE: no dependency); the first is named `what`, the
 * next "`what` shard". Returns the first task in *first (G_MAXUINT when none) and the last
 * as the result (G_MAXUINT when none). */
guint plan_redistribute (ModelPlan *p, guint rank, ModelState state, ModelPhase from,
                         ModelPhase to, double bytes, gint layer, gint micro_batch,
                         const char *what, guint after, guint *first);
/* plan_redistribute with the placements of `par` instead of the plan's own (bucket
 * reduction of a sharding mode over a shard group of one: model_parallel_unsharded). */
guint plan_redistribute_as (ModelPlan *p, const ModelParallel *par, guint rank,
                            ModelState state, ModelPhase from, ModelPhase to, double bytes,
                            gint layer, gint micro_batch, const char *what, guint after,
                            guint *first);
/* Bytes per element of gradient reductions. */
double plan_reduce_bytes (const ModelPlan *p);
