/* models/plan/plan_step-private.h — the state of one rank's schedule while it is built, shared
 * by plan_step.c (forward, backward, collectives, optimizer), plan_ckpt.c (activation
 * checkpointing) and plan_pp.c (a pipeline rank's schedule, which calls plan_step.c's
 * forward and backward of one model chunk). Not for use outside those files. */
#pragma once

#include "models/plan/plan-private.h"

#define NONE G_MAXUINT

/* A gathered FSDP unit a rank's micro-batches share: how many hold it, its gather's task and
 * buffer (valid while refs > 0). */
typedef struct
{
  guint refs, task, handle;
} PlanStepUnit;

typedef struct
{
  ModelPlan *p;
  guint rank;
  const PlanCosts *pc;
  guint L;
  guint n_mtp;          /* DeepSeek-V3 MTP depths ([training] mtp_layers): layers L … L +
                         * n_mtp − 1 of the per-layer arrays, run by the rank holding the
                         * loss after its decoder layers */
  guint slots;          /* entries of each per-layer array: L + n_mtp */
  guint lo, hi;         /* the layers [lo, hi) of the forward/backward being built (a
                         * pipeline stage's model chunk; 0, L without pp) */
  gboolean sharding;    /* ZeRO/FSDP machinery on: a shard group of > 1 ranks, or offload */
  gboolean gathers;     /* stage-3 parameters are gathered (plan_step.c gathers(): a
                         * function of the plan's setup, set once) */
  gboolean regathers;   /* stage-3 parameters are gathered again for the backward (set
                         * once by plan_step.c, read by the recompute of plan_ckpt.c) */
  gboolean end_units;   /* the embedding and the head gathered as FSDP units of their own
                         * (framework fsdp_end_units; plan_step.c end_units()), not as the
                         * root unit */
  gboolean fwd_head;    /* the forward being built ends with the head / the backward being */
  gboolean bwd_embed;   /* built with the embedding (forward_begin, backward_begin) */
  ModelCheckpointing ckpt;
  guint segment;        /* layers per segment: k of every_k, ⌈√L⌉ of sqrt */
  gboolean last_mb;
  gint mb;
  /* per micro-batch */
  guint act_embedding, act_head;
  guint *act_layer;
  guint *recomputed;   /* per layer: activations re-created by its recompute */
  guint *autocast_cache; /* per layer: autocast's cast weights a checkpointed forward left
                          * in the cache (0: none), freed when the forward's region exits */
  guint head_cast;      /* the head's cast weight under autocast (0: none) */
  guint restored;      /* task bringing the current layer's offloaded activations back */
  double grad_tensor_elems[64]; /* one layer's parameter tensors (elements) */
  guint n_grad_tensors;
  double saved_tensors[MODEL_COST_MAX_TENSORS + 2]; /* one layer's saved activations (B):
                                                    * the graph's, EP rows, autocast cache */
  guint n_saved_tensors;
  /* under (op-level) selective recompute: the saved tensors its forward keeps and those its
   * recompute re-creates (B), each booked as its own block, as PyTorch allocates them */
  double kept_tensors[MODEL_COST_MAX_TENSORS + 2];
  guint n_kept_tensors;
  double recreated_tensors[MODEL_COST_MAX_TENSORS + 2];
  guint n_recreated_tensors;
  guint *gather_task, *gather_handle; /* stage 3: per layer, current phase */
  guint *fwd_task, *bwd_task;
  guint bwd_head;       /* the head's backward task of the backward being built (NONE: none
                         * on this rank, or not begun): what the top layer's backward follows */
  guint tied_grad;      /* optimizer in the backward, tied embeddings: the head's gradient of
                         * the shared matrix, held to the embedding's backward (0: none) */
  guint fresh_grad;     /* gradient accumulation, tied embeddings: a later micro-batch's new
                         * head gradient, held to the embedding's backward (0: none) */
  guint *w_hold;        /* ZB-H1: per layer, the tensors its W pass needs, held from B */
  double w_hold_layer, w_hold_head; /* B of those per layer and of the head while building
                         * a B op (plan_pp.c); 0 otherwise */
  guint head_w_hold;    /* the head's, held from its B to its W (0: none) */
  guint *act_mtp_proj, *act_mtp_head; /* per MTP layer L + d: what its block before the
                                        * decoder layer and its shared head keep */
  guint root_gather_task, root_gather_handle; /* the root unit's, or under end_units the
                                               * embedding's unit's */
  guint head_gather_task, head_gather_handle; /* end_units: the head's unit's (NONE, 0) */
  gboolean root_held, head_held; /* the micro-batch holds root_unit / head_unit */
  /* The rank's gathered root (or embedding) unit and head unit, shared by the micro-batches
   * in flight that hold them (a pipeline's, the combined schedule's): FSDP unshards a unit
   * once, so a micro-batch that finds it gathered takes the same buffer, and the last to
   * release it frees it (plan_step.c unit_hold, unit_release). */
  PlanStepUnit root_unit, head_unit;
  guint grad_head_full, grad_embedding_full;
  guint tp_wait;        /* the tp collective the next compute task waits for (NONE) */
  guint cp_wait;        /* the cp collective the next compute task waits for (NONE) */
  guint pp_wait;        /* the pipeline receive the next compute task waits for (NONE) */
  /* bucketed reduction (gradients accumulated as Partial) */
  double bucket_fill;
  guint bucket_count;
} StepCtx;

/* What one in-flight micro-batch leaves in the StepCtx between its forward and backward
 * (a pipeline rank's, plan_pp.c, and the combined schedule's, plan_step.c). */
typedef struct
{
  guint *buf; /* its per-layer arrays (plan_step_ctx_buffers), borrowed */
  guint act_embedding, act_head, head_cast, root_gather_task, root_gather_handle;
  guint head_gather_task, head_gather_handle;
  gboolean root_held, head_held;
  guint grad_head_full, grad_embedding_full;
  guint head_w_hold;
} PlanStepSlot;

/* One micro-batch's side of a combined step (plan_step_combined): its in-flight state, its
 * model chunk and the collectives its next compute task waits for (each side keeps its own:
 * the other's must not hold it back). */
typedef struct
{
  PlanStepSlot *slot;   /* the micro-batch's state, borrowed */
  guint mb;
  guint lo, hi;         /* its model chunk's layers [lo, hi) */
  gboolean embed, head; /* the chunk holds the embedding / the head and loss */
  guint tp_wait, cp_wait, pp_wait;
  guint last;           /* out: its last compute task of the combined step */
} PlanStepMb;

/* plan_step.c */
/* Points c at slot s's micro-batch state / saves c's into s. */
void plan_step_slot_load (StepCtx *c, const PlanStepSlot *s);
void plan_step_slot_store (const StepCtx *c, PlanStepSlot *s);
/* Megatron's combined 1F1B step ([moe] a2a_overlap): the forward of f's chunk and the
 * backward of b's chunk, layer by layer beside each other (the comment of plan_step.c's
 * definition gives the order and why). Sets f->last and b->last; both keep their waits. */
void plan_step_combined (StepCtx *c, PlanStepMb *f, PlanStepMb *b);
/* guints of per-layer task/handle arrays a StepCtx needs: PLAN_STEP_BUF_PER_LAYER ×
 * plan_step_slots(). */
#define PLAN_STEP_BUF_PER_LAYER 10
/* Entries of each per-layer array: the decoder layers and the MTP layers (L + mtp_layers). */
guint plan_step_slots (const ModelPlan *p);
/* Sets *c up for `rank` (fresh per-layer arrays in `buf`, zeroed, PLAN_STEP_BUF_PER_LAYER
 * × plan_step_slots() guints, borrowed) and fills its per-layer tensor lists. */
void plan_step_ctx_init (StepCtx *c, ModelPlan *p, guint rank, const PlanCosts *pc, guint *buf);
/* Points c's per-layer arrays into `buf` (PLAN_STEP_BUF_PER_LAYER × c->slots guints,
 * borrowed): a pipeline rank keeps one such buffer per in-flight micro-batch. */
void plan_step_ctx_buffers (StepCtx *c, guint *buf);
/* The forward of micro-batch c->mb through layers [lo, hi), preceded by the embedding
 * (`embed`) and followed (`head`) by the MTP depths, when trained, and the head and loss:
 * a whole model without pp. Every compute task also waits for c->pp_wait. */
void plan_step_forward (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head);
/* Its backward: head and then the MTP depths, last first (when `head`), layers hi−1 … lo,
 * embedding (when `embed`), with the
 * gradient reductions they start; at the last micro-batch (c->last_mb) a stage without the
 * embedding flushes its last gradient bucket. Returns the last compute task. */
guint plan_step_backward (StepCtx *c, guint lo, guint hi, gboolean embed, gboolean head);
/* SP's coalesced all-reduce of `bytes` of norm/bias gradients over tp after task `after`. */
void plan_step_sp_grads (StepCtx *c, guint after, double bytes);
/* The optimizer step after `last_comm` (the rank's state shares, its stage's under pp). */
void plan_step_optimizer (StepCtx *c, guint last_comm);

/* plan_ckpt.c */
/* Allocates what layer l's forward keeps (its handle). */
guint plan_step_store_activations (StepCtx *c, guint l);
/* Allocates the cast weight copies autocast's cache keeps from layer l's forward when its
 * saved tensors do not hold them (checkpointed layers); the handle, 0 if none. */
guint plan_step_autocast_cache (StepCtx *c, guint l);
/* B of the 16-bit copy of the head matrix autocast makes in the head's forward and its
 * backward keeps (0 without autocast). */
double plan_step_head_cast_bytes (const StepCtx *c);
/* Adds the recompute tasks layer l's backward needs (sets c->recomputed). */
void plan_step_recompute_before_backward (StepCtx *c, guint l);
/* Fills c's per-layer parameter and saved-activation tensor lists. */
void plan_step_layer_tensors (StepCtx *c);
/* Layers per checkpointing segment: k of every_k, ⌈√L⌉ of sqrt. */
guint plan_step_segment_length (const ModelPlan *p);
