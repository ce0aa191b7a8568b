/* models/plan/plan_paged-private.h — the hooks through which plan.c and plan_step.c weave the
 * paged optimizer states of plan_paged.c (models/plan/plan_paged.h) into a rank's step. Every
 * hook is a no-op (NONE / untouched) when the plan spills nothing, so a plan without spill
 * is exactly the plan's own. Not for use outside models/plan*.c.
 * Task ids and handles follow plan-private.h; NONE is G_MAXUINT, handle 0 is "none". */
#pragma once

#include "models/plan/plan-private.h"

/* After plan_initial_state(): clamps the requested spill to the rank's optimizer states (0
 * unless the optimizer is paged) and takes it off the GPU's time-0 bytes. */
void plan_paged_initial_state (ModelPlan *p);

/* Before a rank's schedule: a CPU-stream task holding the spill in host DRAM from time 0. */
void plan_paged_begin_rank (ModelPlan *p, guint rank);

/* The chunks the spill migrates in (plan_paged.h): 0 without spill. */
guint plan_paged_n_chunks (const ModelPlan *p);

/* The fraction of the rank's optimizer states that is spilled (0 without spill): of the
 * optimizer step's parameters, the part its chunk steps update. */
double plan_paged_fraction (const ModelPlan *p, guint rank);

/* Chunk i's page-in task (after the rank's last compute task and `after`), allocating the
 * chunk on the GPU into *handle; the chunk's optimizer task must depend on the returned
 * id. */
guint plan_paged_chunk_in (ModelPlan *p, guint rank, guint i, guint after, guint *handle);

/* After chunk i's optimizer task `step` (all its effects added): its page-out task, which
 * frees the GPU copy `handle` at its end. */
void plan_paged_chunk_out (ModelPlan *p, guint rank, guint i, guint step, guint handle);
