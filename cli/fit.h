/* cli/fit.h — what fits: the largest micro-batch or sequence length, the fewest GPUs, or
 * the cheapest technique stack that fits the GPU's memory (`stepsim fit`).
 *
 * Each candidate is the scenario with a few --set overrides, loaded and simulated like
 * `stepsim run`; it fits when device-used memory ≤ capacity (cli/run.h). A candidate the
 * loader or the simulator rejects (a combination not modelled, a GPU count the cluster
 * cannot have) is "not feasible" with their message, and counts as not fitting.
 *
 * Searches (the simulator is deterministic, so each candidate is simulated at most once):
 *   micro_batch, seq_len  largest value that fits; memory grows with both, so fitting is
 *                         monotone (fits up to a point, then not): doubling from the
 *                         scenario's lower bound until a value does not fit, then binary
 *                         search between the last fit and the first miss; seq_len in
 *                         multiples of `multiple_of`.
 *   gpus                  fewest GPUs: first cluster.gpus_per_node in 1..max_gpus_per_node
 *                         (nodes = 1), then cluster.nodes in 2..max_nodes at the largest
 *                         gpus_per_node; per-GPU memory falls as sharding spreads states,
 *                         so fitting is monotone the other way (binary search for the first
 *                         that fits, after checking the smallest and the largest).
 *   stack                 candidates in the order the seeds recommend, each adding to the
 *                         one before: as given; mixed precision (bf16, or fp16 where the GPU
 *                         lacks bf16); full activation checkpointing; ZeRO-1, -2, -3
 *                         (parallel.data_parallel); optimizer offload to CPU, then NVMe
 *                         (offload.optimizer); with `allow_finetune`, LoRA and QLoRA
 *                         (finetune.method) on mixed precision + checkpointing. The first
 *                         that fits is the cheapest; a candidate equal to the scenario's own
 *                         values is skipped. Each candidate's throughput is shown relative
 *                         to the baseline (the scenario's [baseline] group, else the
 *                         scenario as given): tokens/s ÷ baseline tokens/s, "x0.33" for a
 *                         candidate three times slower (a penalty of 67 %).
 */
#pragma once

#include <glib.h>

typedef enum
{
  CLI_FIT_MICRO_BATCH,
  CLI_FIT_SEQ_LEN,
  CLI_FIT_GPUS,
  CLI_FIT_STACK,
} CliFitTarget;

typedef enum
{
  CLI_FIT_FITS,
  CLI_FIT_OOM,
  CLI_FIT_INFEASIBLE,  /* loader or simulator rejected it */
} CliFitStatus;

typedef struct
{
  char *label;       /* "micro_batch=8", "+ ZeRO-2" */
  char **sets;       /* overrides on top of the scenario (and the caller's --set) */
  CliFitStatus status;
  double step_time;  /* s; NaN unless simulated */
  double tokens_per_s;
  double device_used, capacity; /* B */
  char *reason;      /* one line: why it does not fit (NULL when it fits) */
} CliFitCandidate;

typedef struct
{
  guint64 max_micro_batch;   /* upper end of the micro_batch search (default 4096) */
  guint64 max_seq_len;       /* upper end of the seq_len search (default 1048576) */
  guint64 multiple_of;       /* seq_len granularity (default 1) */
  guint max_gpus_per_node;   /* default 8 */
  guint max_nodes;           /* default 64 */
  gboolean allow_finetune;   /* also try LoRA / QLoRA */
  gboolean all;              /* stack: evaluate every candidate, not only up to the first fit */
} CliFitOptions;

typedef struct _CliFitReport CliFitReport;

void cli_fit_options_init (CliFitOptions *opt);

/* Runs the search for `target` on the scenario `path` with `sets` (NULL-terminated
 * "group.key=value", may be NULL). NULL + error only when the scenario itself cannot be
 * loaded; everything about candidates is in the report. */
CliFitReport *cli_fit_search (const char *path, const char *const *sets, CliFitTarget target,
                              const CliFitOptions *opt, GError **error);
void cli_fit_report_free (CliFitReport *report); /* NULL is a no-op */

/* Candidates in the order they were evaluated. */
guint cli_fit_report_n_candidates (const CliFitReport *report);
const CliFitCandidate *cli_fit_report_candidate (const CliFitReport *report, guint i);
/* Index of the answer, or -1 when nothing fits. */
gint cli_fit_report_best (const CliFitReport *report);
/* The answer's value (micro_batch, seq_len, GPU count; 0 when nothing fits or for stack). */
guint64 cli_fit_report_value (const CliFitReport *report);
/* Baseline tokens/s for penalties (stack search; NaN otherwise or when it failed). */
double cli_fit_report_baseline_tokens (const CliFitReport *report);

/* Generic monotone searches over integers x in [lo, hi] with `ok` memoised by the caller:
 * the largest x with ok(x) when ok holds up to a point (0 when ok(lo) fails), and the
 * smallest x with ok(x) when ok holds from a point on (0 when ok(hi) fails). `step`: only
 * multiples of it are tried (lo must be one). Largest: doubling from lo (capped at hi),
 * then bisection, so O(log(answer)) calls. Smallest: checks lo, then hi, then bisects. */
typedef gboolean (*CliFitPredicate) (guint64 x, gpointer data);
guint64 cli_fit_largest (guint64 lo, guint64 hi, guint64 step, CliFitPredicate ok, gpointer data);
guint64 cli_fit_smallest (guint64 lo, guint64 hi, CliFitPredicate ok, gpointer data);

const char *cli_fit_target_name (CliFitTarget target);
gboolean cli_fit_target_from_string (const char *s, CliFitTarget *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliFitReport, cli_fit_report_free)
