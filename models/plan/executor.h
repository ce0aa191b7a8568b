/* models/plan/executor.h — replays a ModelPlan on a cluster with CUDA-stream semantics.
 *
 * Each (rank, stream) is an in-order queue: its tasks run one at a time in plan order; a
 * task also waits for every task in its dependency list, so streams overlap exactly where
 * the plan lets them (DESIGN §5). A task applies its start effects to the ledger, runs its
 * kernels back to back on its rank's GPU (each a roofline activity shared max-min with
 * whatever else runs there), applies its end effects and is recorded in the recorder's
 * task table. Persistent state is allocated at the engine's current time when started
 * (in the process's first step, optimizer states at its optimizer step).
 * An offload task (models/plan/plan_offload.h) runs one transfer or host-CPU step instead of
 * kernels; its host-DRAM and NVMe effects go to the host ledger (model_executor_set_host_ledger).
 * A collective task occupies its comm stream from its start; the collective itself
 * (hardware/collective.h) starts once every participating rank's task has started, and all
 * of them finish together when it completes.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/memory/host_ledger.h"
#include "models/memory/ledger.h"
#include "models/plan/op_times.h"
#include "models/plan/plan.h"
#include "sim/engine.h"
#include "sim/recorder.h"

typedef struct _ModelExecutor ModelExecutor;

/* Binds a plan (borrowed) to a cluster, engine, ledger and recorder (all borrowed; rec
 * may be NULL). The cluster must have at least model_plan_n_ranks(plan) ranks. */
ModelExecutor *model_executor_new (const ModelPlan *plan, HwCluster *cluster, SimEngine *engine,
                                   ModelLedger *ledger, SimRecorder *rec);
void model_executor_free (ModelExecutor *exec); /* NULL is a no-op */

/* As model_executor_new(), replaying one rank per class of equivalent ranks
 * (models/plan/rank_classes.h): the classes are the orbits of `shift` (hardware/rank_shift.h;
 * borrowed, its n the plan's rank count); its representatives run and stand for their
 * classes; a dependency on another rank's task waits for its representative's; one
 * collective instance runs per orbit of instances, and host effects count once per rank of
 * the class on the node. `ledger` holds one row per representative, row
 * hw_rank_shift_index (shift, r) for representative r (model_ledger_new_named). The cluster
 * must fold with the same shift (hw_cluster_set_shift). Per-rank queries (rank_end,
 * exposed_comm, kind_time, task_time) answer for any rank from its representative. The plan
 * holds every rank's tasks, or only the representatives' of the same shift
 * (model_plan_built: rank_classes.h model_rank_classes_plan). The identity is
 * model_executor_new(). API misuse (a ledger of another size, a plan built for another
 * shift): NULL. */
ModelExecutor *model_executor_new_classes (const ModelPlan *plan, HwCluster *cluster,
                                           SimEngine *engine, ModelLedger *ledger,
                                           SimRecorder *rec, const HwRankShift *shift);

/* Routes the plan's host-DRAM and NVMe effects (offloading, models/memory/offload.h) to `host`
 * (borrowed; NULL: ignored). Call before model_executor_start(). */
void model_executor_set_host_ledger (ModelExecutor *exec, ModelHostLedger *host);
/* Adds every kernel the replay runs to `times` (borrowed; NULL, the default: none is
 * collected), models/plan/op_times.h. Call before model_executor_start(). */
void model_executor_set_op_times (ModelExecutor *exec, ModelOpTimes *times);

/* Whether the replay is the process's first step (default FALSE): the initial
 * allocations that model_plan_creation_task gives a task (PyTorch optimizers' states) are
 * made at that task's start, before its own effects, instead of at the start. Call before
 * model_executor_start(). */
void model_executor_set_first_step (ModelExecutor *exec, gboolean first_step);

/* Whether every kernel runs through the fluid's events (TRUE), or (FALSE, the default) a
 * kernel the engine's run would run with nothing else happening in the simulation from its
 * start to its end (an idle fluid, no event due before its end: hardware/cluster.h
 * hw_cluster_run_kernel) runs off the engine when it starts as the last thing an engine
 * event does (a kernel's completion, an empty task's end): the same figures, events and
 * calls either way. Call before model_executor_start(). */
void model_executor_set_on_engine (ModelExecutor *exec, gboolean on_engine);

/* Kernels run off the engine so far (model_executor_set_on_engine). */
guint64 model_executor_n_off_engine (const ModelExecutor *exec);

/* Allocates the initial state (every allocation not live in the ledger already: those a
 * previous step left, model_ledger_continue; in a first step, not those created later)
 * and starts every task that can start now. Run the engine
 * afterwards (sim_engine_run). */
void model_executor_start (ModelExecutor *exec);

/* Whether the replay is a single rank's whose tasks can never run at once: one rank, every
 * task on one stream, no collective, no offload task (copies, host-CPU steps, NVMe). Its
 * kernels then run one at a time, each alone on the GPU, and model_executor_run_alone()
 * gives the engine's result without it. */
gboolean model_executor_runs_alone (const ModelExecutor *exec);

/* Instead of model_executor_start() and sim_engine_run(), for a replay
 * model_executor_runs_alone() accepts, on an executor that has not started and a cluster
 * whose GPU is idle (reset): runs the plan's tasks in order, each kernel's start and end
 * computed in closed form as the engine's run gives them (max of its issue by the host
 * clock and the end of the kernel before; hardware/cluster.h hw_cluster_kernel_lone_end),
 * so every figure, the ledger, the host ledger, the recorder, a kept trace and the op times
 * get the same calls with the same values in the same order. The engine and the fluid are
 * not touched (the cluster's jitter generator advances as in the engine's run). Returns the
 * number of engine events the engine's run would have fired (0 on API misuse). */
guint64 model_executor_run_alone (ModelExecutor *exec);

/* A replay's task starts and ends with their times, in the order they happened: what the
 * memory effects and the time figures of a replay depend on. The executor's timing reads
 * neither the ledger nor the host ledger (memory never delays a task), and its first-step
 * flag changes only which allocations a task makes, so a replay of the same plan on the same
 * cluster, shift and seed (a reset cluster gives a new one's times) starts and ends its tasks
 * exactly as a recorded one did, whatever its ledger holds. */
typedef struct _ModelExecutorTrace ModelExecutorTrace;
ModelExecutorTrace *model_executor_trace_new (void);      /* empty */
void model_executor_trace_free (ModelExecutorTrace *trace); /* NULL is a no-op */

/* Records the starts and ends of this replay in `trace` (borrowed; emptied here; it must
 * stay alive until the engine has run). Call before model_executor_start(). */
void model_executor_keep_trace (ModelExecutor *exec, ModelExecutorTrace *trace);

/* Appends a caller's event to `trace` at its place among the starts and ends recorded so
 * far (`id`, `time` in s and `value` are the caller's: a fluid's load change, say), for
 * model_executor_run_trace to hand back in order. */
void model_executor_trace_mark (ModelExecutorTrace *trace, guint id, double time, double value);

/* Receives a mark of a trace (model_executor_trace_mark) as it is replayed. */
typedef void (*ModelTraceMarkFunc) (guint id, double time, double value, gpointer user_data);

/* Replays the step `trace` holds without the engine, the fluid or the cluster: the initial
 * state at the trace's start, then each recorded start (states created, start effects),
 * end (end effects, task record, rank end, busy time and intervals) and mark (`mark` (may
 * be NULL) called with it and `user_data`) at its recorded time and in the recorded order,
 * so every figure below, the ledger, the host ledger and the recorder (whose calls come in
 * the same order) read as after the replay that recorded it — provided `exec` was made for
 * the same plan, shift and cluster (API misuse otherwise, not checked). The engine and the
 * fluid are not touched. Instead of model_executor_start() and sim_engine_run(), on an
 * executor that has not started (g_return_if_fail). */
void model_executor_run_trace (ModelExecutor *exec, const ModelExecutorTrace *trace,
                               ModelTraceMarkFunc mark, gpointer user_data);

/* Number of tasks completed; equals model_executor_n_expected() after a complete run (the
 * plan's task count in the full replay, the representatives' with rank classes). */
guint model_executor_n_done (const ModelExecutor *exec);
guint model_executor_n_expected (const ModelExecutor *exec);
/* The replay's rank shift (model_executor_new_classes; the identity in the full replay;
 * borrowed, the executor's). */
const HwRankShift *model_executor_shift (const ModelExecutor *exec);

/* Time (s) the last task of `rank` ended; the step time is the maximum over ranks. */
double model_executor_rank_end (const ModelExecutor *exec, guint rank);

/* Exposed communication of `rank` (s): time its comm stream was busy (a collective
 * launched, waiting for peers or moving data) while its compute stream was idle. */
double model_executor_exposed_comm (const ModelExecutor *exec, guint rank);
/* The same for one of its streams alone (s): time `stream` was busy while the compute stream
 * was idle (MODEL_STREAM_EP: the expert dispatch and combine all-to-alls exposed). */
double model_executor_exposed_stream (const ModelExecutor *exec, guint rank,
                                      ModelStream stream);

/* Exposed offload transfers of `rank` (s): time any of its transfer streams (h2d, d2h, NVMe
 * read, NVMe write) was busy while none of its compute, comm and host-CPU optimizer streams
 * was (so it never counts time already in model_executor_exposed_comm or in a task's own
 * time): the step time offloading adds by waiting for data. */
double model_executor_exposed_offload (const ModelExecutor *exec, guint rank);

/* Pipeline idle time of `rank` (s): the part of [0, its end) in which none of its streams but
 * the pipeline's P2P ones (pp_fwd_send … pp_bwd_recv) ran, so it waited for another stage: its
 * share of the pipeline bubble. Disjoint from its tasks' times, from
 * model_executor_exposed_comm and from model_executor_exposed_offload. Meaningful with
 * pipeline stages (with one, the gaps it measures are not a pipeline's). */
double model_executor_pipeline_idle (const ModelExecutor *exec, guint rank);

/* Seconds `rank` spent running tasks of `kind` (sum of task durations). */
double model_executor_kind_time (const ModelExecutor *exec, guint rank, ModelTaskKind kind);
/* Seconds task `task` ran (end − start; 0 if it has not completed). */
double model_executor_task_time (const ModelExecutor *exec, guint task);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelExecutor, model_executor_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelExecutorTrace, model_executor_trace_free)
