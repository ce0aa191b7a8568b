/* cli/study/batch.h — running the scenarios of a sweep in parallel and tabulating the results.
 *
 * A batch has one job per sweep point and, when the sweep names a baseline stack, one
 * baseline job per distinct baseline scenario (the point's overrides with the baseline's on
 * top; a baseline equal to a point, e.g. the point without techniques, reuses its job). Jobs run on a GThreadPool; each loads its scenario (cli_scenario_load) and simulates
 * it (cli_scenario_simulate) without recording series, then reads its figures from the /summary
 * entries cli_report_fill_summary writes (so new summary fields appear without changes
 * here). A job that fails keeps its error message; the others go on. Results are stored
 * by job index, so the table does not depend on the number of threads or processes.
 *
 * Throughput penalty of a point against its baseline (%):
 *   penalty = 100 × (1 − tokens_per_s / baseline_tokens_per_s)
 * (positive: slower than the baseline; both figures from the same simulator, so the ratio
 * is what the techniques cost, not an absolute prediction).
 */
#pragma once

#include <glib.h>
#include "cli/scenario/sweep.h"
#include "sim/table.h"

typedef struct _CliBatch CliBatch;

/* Called in the thread that runs cli_batch_run once for each finished job, in order (done =
 * 1, 2, …, total), within 50 ms of its end (that thread looks at the finished jobs every 50
 * ms, and at once when the last ends): jobs done so far (of this process), jobs to run (of
 * this process), seconds since the start. */
typedef void (*CliBatchProgress) (guint done, guint total, double elapsed, gpointer data);

/* Jobs of `sweep` (borrowed; must outlive the batch) with `extra_sets` (command-line --set,
 * copied, may be NULL) applied to every scenario. */
CliBatch *cli_batch_new (const CliSweep *sweep, const char *const *extra_sets);
void cli_batch_free (CliBatch *batch); /* NULL is a no-op */

guint cli_batch_n_jobs (const CliBatch *batch);   /* points + baseline jobs */
guint cli_batch_n_points (const CliBatch *batch); /* scenarios of the sweep */

/* The scenario warnings of every job, printed before the jobs run (when `print`) instead of
 * by each job as it loads: under mpirun every process would print the warnings common to
 * its share (QA: once per rank); rank 0 passes TRUE, the others FALSE. Loads each scenario
 * once more (not simulated); call before cli_batch_run. */
void cli_batch_warnings_ahead (CliBatch *batch, gboolean print);

/* Runs the jobs whose index i satisfies i % stride == offset (one process's share of an MPI
 * run; offset 0, stride 1 for all) on `n_threads` threads (>= 1). Blocks until they are
 * done; `progress` (may be NULL) is called after each. TRUE when every job finished; FALSE
 * when a signal deferred by cli_interrupt_defer() arrived first: the jobs finished so far
 * are marked done (the table shows the others as "not run"), the running ones are
 * abandoned still running, so the batch must not be freed: the caller writes what is done
 * and ends the process (cli_interrupt_exit). */
gboolean cli_batch_run (CliBatch *batch, guint n_threads, guint offset, guint stride,
                        CliBatchProgress progress, gpointer data);

/* Results of finished jobs as a GVariant "a(ubsad)" (index, ok, error, metrics), for
 * gathering across processes; cli_batch_merge stores such results into `batch`. FALSE +
 * G_FILE_ERROR_INVAL when `results` is not of that type or has a bad index. */
GVariant *cli_batch_serialize (const CliBatch *batch);
gboolean cli_batch_merge (CliBatch *batch, GVariant *results, GError **error);

/* Number of sweep points that ran and failed (not OOM: OOM is a result). */
guint cli_batch_n_failed (const CliBatch *batch);

/* Number of sweep points that ran (all of them unless interrupted). */
guint cli_batch_n_done (const CliBatch *batch);

/* After the run (and the gather): every point that ran has a baseline that ran too, else
 * its penalty would be NaN without a word. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE, message
 * "SWEEP.ini [baseline]: the baseline of scenario 'LABEL' failed: ERROR" (or the base
 * scenario's [baseline]), for the first such point. A point that failed itself is its
 * row's error, not the baseline's. TRUE without a baseline. */
gboolean cli_batch_check_baselines (const CliBatch *batch, GError **error);

/* The results table, one row per sweep point in point order: index, label, status ("ok",
 * "failed" or "not run"), error, the axes (numeric columns when every value is a number),
 * fits (1/0), memory (peak_allocated, peak_reserved, device_used, capacity, cuda_context,
 * need_allocated, need_reserved, need_device, shortfall: models/plan/simulate.h; peak_<category> at the
 * peak), time (step_time, tokens_per_s, mfu, hfu,
 * exposed_communication, time_<kind>, offload_stall, pipeline_bubble), and, with a
 * baseline, baseline_tokens_per_s, baseline_fits (1/0) and penalty (%; NaN against a
 * baseline out of memory, which cannot run). Failed rows have NaN figures. Caller
 * frees. */
SimTable *cli_batch_table (const CliBatch *batch);

/* "[#####-----]  12/40  30%  ETA 0:12" (tty) or "batch: 12 of 40 simulations done (30%),
 * ETA 12 s" (log line) for `done` of `total` after `elapsed` seconds. Caller frees. */
char *cli_batch_progress_text (guint done, guint total, double elapsed, gboolean tty);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliBatch, cli_batch_free)
