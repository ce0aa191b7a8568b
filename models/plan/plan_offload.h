/* models/plan/plan_offload.h — offload tasks of a plan (models/memory/offload.h, built by
 * models/plan/plan_offload.c): their volumes per step and how the executor runs them.
 *
 * An offload task (ModelTask.offload != MODEL_OFFLOAD_OP_NONE) runs no kernels; it is one
 * activity on the cluster: H2D/D2H a copy over the rank's host route (hardware/cluster.h;
 * with pin_memory = false its bytes count 1/HW_PAGEABLE_COPY_EFFICIENCY times), NVMe reads
 * and writes a flow over the node's drives (NVMe → GPU also over the rank's PCIe link), a
 * CPU step `amount` parameter updates on the node's CPU, a paged-state migration (page in,
 * page out) a copy whose bytes count 1/MODEL_PAGED_MIGRATION_EFFICIENCY times
 * (models/plan/plan_paged.h).
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/plan/plan.h"

/* Sum over `rank`'s tasks of kind `op` of their amount: B moved, or parameters updated
 * (MODEL_OFFLOAD_OP_CPU_STEP). One step. */
double model_plan_offload_amount (const ModelPlan *plan, guint rank, ModelOffloadOp op);

/* For each op, out[op] (out: MODEL_N_OFFLOAD_OPS doubles, the caller's) = the sum over
 * `rank`'s tasks of kind op of their amount, in task order: B moved, or parameters updated
 * (MODEL_OFFLOAD_OP_CPU_STEP). One step; one pass over the tasks for all ops. */
void model_plan_offload_amounts (const ModelPlan *plan, guint rank, double *out);

/* B of model states (16-bit parameter shard, fp32 master weights, fp32 gradients, optimizer
 * states) `rank` keeps off the GPU at `where` (MODEL_MEM_ON_HOST: host DRAM, MODEL_MEM_ON_NVME:
 * NVMe), as allocated at time 0 by the rank's "offloaded state" task; swap buffers
 * (offload_staging) and offloaded activations are not model states. 0 without offload or
 * for MODEL_MEM_ON_GPU. */
double model_plan_offloaded_state_bytes (const ModelPlan *plan, guint rank, ModelMemPlace where);

/* The largest model_plan_offloaded_state_bytes over the plan's ranks (B; 0 without offload),
 * in one pass over the tasks: O(tasks + ranks) instead of O(tasks × ranks). */
double model_plan_offloaded_state_peak (const ModelPlan *plan, ModelMemPlace where);

/* Starts offload task `task` of `plan` on `cluster` (both borrowed); `done` is called with
 * `user_data` on completion. Returns the activity id. API misuse (0): a task that is not
 * an offload task, or hardware the task needs missing (no CPU figures, no NVMe drives). */
SimActivityId model_plan_offload_start (const ModelPlan *plan, HwCluster *cluster,
                                        const ModelTask *task, SimActivityDoneFunc done,
                                        gpointer user_data);
