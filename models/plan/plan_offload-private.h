/* models/plan/plan_offload-private.h — the hooks through which plan.c and plan_step.c weave the
 * offload schedule of plan_offload.c (models/memory/offload.h) into a rank's step. Each hook is a
 * no-op (NONE / FALSE / untouched handle) when the stack offloads nothing of its kind, so
 * the schedule without offload is exactly the plan's own. Not for use outside models/plan*.c.
 *
 * Task ids and handles follow plan-private.h; NONE is G_MAXUINT, handle 0 is "none".
 */
#pragma once

#include "models/plan/plan-private.h"

typedef struct _PlanOffload PlanOffload;
void plan_offload_free (PlanOffload *o); /* NULL is a no-op */

/* B of each of DeepSpeed's two buffers for offloaded gradients: with the optimizer offloaded,
 * stages 1–2 allocate temp_grad_buffer_for_gpu_offload on the GPU and the pinned
 * temp_grad_buffer_for_cpu_offload on the host, zeros of the largest trainable parameter's
 * numel in the 16-bit dtype, in the optimizer's constructor, and keep them for the run
 * (stage_1_and_2.py __init__, cpu_offload; async_accumulate_grad_in_cpu_via_gpu stages the
 * host's gradient sum in the GPU one). 0 outside DeepSpeed's engine, at stage 3 or without
 * optimizer offload. */
double plan_offload_ds_grad_buffer (const ModelPlan *p);

/* Whether the optimizer / the parameters are offloaded (any target). */
gboolean plan_offloads_optimizer (const ModelPlan *p);
gboolean plan_offloads_parameters (const ModelPlan *p);

/* After plan_initial_state(): the GPU's time-0 bytes less what lives off the GPU (master
 * weights and optimizer states with an offloaded optimizer, kept gradients too; the
 * weight shard with offloaded parameters). */
void plan_offload_initial_state (ModelPlan *p);

/* Before a rank's schedule: a task on its CPU stream holding, from time 0, what lives in
 * host DRAM or on NVMe for that rank (models/memory/offload.h lists the bytes). */
void plan_offload_begin_rank (ModelPlan *p, guint rank, const PlanCosts *pc);

/* Parameter offload: a copy of this rank's `bytes` of a block's parameters from host DRAM
 * (or NVMe) into a new GPU buffer (comm_buffers, handle in *handle), after task `after`;
 * returns the copy task (NONE, *handle = 0 without parameter offload). The caller frees
 * *handle once the gathered layer exists (or uses it as the layer on one rank). */
guint plan_offload_fetch_params (ModelPlan *p, guint rank, double bytes, gint layer, gint mb,
                                 guint after, const char *what, guint *handle);

/* Activation offload. Call right after the forward task `fwd_task` of `layer` is complete
 * (all its effects added, no task created since): moves the activations of *handle (GPU) to
 * host DRAM (*handle becomes 0) and makes `fwd_task` wait for the copy of layer − 2. */
void plan_offload_save_activation (ModelPlan *p, guint rank, guint fwd_task, guint layer,
                                   gint mb, guint *handle);
/* Call before the first backward-side task of `layer` (recompute or backward): returns the
 * H2D task the task must depend on and sets *handle to the GPU buffer it restores (NONE and
 * *handle untouched when the layer was not offloaded). Also issues the copy of layer − 1,
 * after task `after` (the previous layer's backward), so one layer is prefetched. */
guint plan_offload_restore_activation (ModelPlan *p, guint rank, guint layer, gint mb,
                                       guint after, guint *handle);

/* Optimizer offload: a D2H copy of `bytes` (B, in the gradient dtype) of gradients after
 * task `after`, freeing GPU handles h1 and h2 (0: none) at its end (at its start where
 * DeepSpeed's reduce bucket holds them), and holding the rank's next compute task back
 * behind it or behind the previous copy (plan_offload.c grad_copy_order); NONE (nothing
 * done) without optimizer offload. */
guint plan_offload_gradients (ModelPlan *p, guint rank, guint after, double bytes, guint h1,
                              guint h2, gint layer, gint mb);

/* Optimizer offload: the step of `rank` on the host (CPU chunks, NVMe swaps, parameter
 * copies back, the stage 1–2 all-gather) in place of the GPU optimizer task; sets the
 * rank's state bytes. FALSE (nothing done) without optimizer offload. */
gboolean plan_offload_optimizer (ModelPlan *p, guint rank, const PlanCosts *pc);
