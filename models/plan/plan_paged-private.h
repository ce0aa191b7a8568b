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

/* The chunks the spill migrates in (plan_paged.h), `shard` the rank's share of a tensor's
 * optimizer states (ZeRO/FSDP; 1 unsharded): 0 without spill; each spill / n B. */
guint plan_paged_n_chunks (const ModelPlan *p, double shard);

/* Chunk i (`bytes` B)'s page-in task after `after` (chunk 0 also after the rank's last
 * compute task so far: the backward), allocating the chunk on the GPU into *handle; the
 * chunk's optimizer task must depend on the returned id. */
guint plan_paged_chunk_in (ModelPlan *p, guint rank, guint i, double bytes, guint after,
                           guint *handle);

/* After chunk i (`bytes` B)'s optimizer task `step` (all its effects added): its page-out
 * task, which frees the GPU copy `handle` at its end. */
void plan_paged_chunk_out (ModelPlan *p, guint rank, guint i, double bytes, guint step,
                           guint handle);
