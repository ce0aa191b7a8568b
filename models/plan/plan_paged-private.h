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

/* Right before the GPU optimizer task: the page-in task (after the rank's last compute
 * task and `after`), allocating the spill on the GPU into *handle; the optimizer task must
 * depend on the returned id. NONE and *handle = 0 without spill. */
guint plan_paged_page_in (ModelPlan *p, guint rank, guint after, guint *handle);

/* After the optimizer task `opt` is complete (all its effects added): the page-out task,
 * which frees the GPU copy `handle` at its end. No-op without spill. */
void plan_paged_page_out (ModelPlan *p, guint rank, guint opt, guint handle);
