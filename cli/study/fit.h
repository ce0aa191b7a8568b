/* cli/study/fit.h — what fits: the largest micro-batch or sequence length, the fewest GPUs, or
 * the cheapest technique stack that fits the GPU's memory (`stepsim fit`).
 *
 * Each candidate is the scenario with a few --set overrides, loaded and simulated like
 * `stepsim run`; it fits when the whole run does: model loading, the first step (optimizer
 * states created at its optimizer step) and the steady-state step, each with the CUDA
 * context, ≤ capacity and none out of memory (models/plan/simulate.h gpu_fits,
 * lifetime_device); its memory is that lifetime need. A candidate
 * the loader or the simulator rejects (a combination not modelled, a GPU count the cluster
 * cannot have) is "not feasible" with their message, and counts as not fitting.
 *
 * Searches (the simulator is deterministic, so each candidate is simulated at most once):
 *   micro_batch, seq_len  largest value that fits: doubling from the scenario's lower bound
 *                         until a value does not fit, then binary search between the last
 *                         fit and the first miss; seq_len in multiples of `multiple_of`
 *                         and of what the parallelism needs (model_plan_seq_len_multiple),
 *                         from the least such length of at least a chunked loss's chunks.
 *                         Memory is not always monotone in the value (cli/study/fit_size.c): the
 *                         boundary is verified, allocator cliffs are named with the answer
 *                         under expandable segments, and an inconsistent bracket is scanned
 *                         above the answer (CliFitNotes). A learned-position model's
 *                         max_position_embeddings caps seq_len; memory's own limit past it
 *                         is estimated with the table extended.
 *   gpus                  fewest GPUs: first cluster.gpus_per_node in 1..max_gpus_per_node
 *                         (nodes = 1), then cluster.nodes in 2..max_nodes at the largest
 *                         gpus_per_node; per-GPU memory falls as sharding spreads states,
 *                         so fitting is monotone the other way (binary search for the first
 *                         that fits, after checking the smallest and the largest). When none
 *                         fits, the per-GPU floor as the DP degree grows (cli/study/fit_gpus.c).
 *   stack                 candidates in the order the seeds recommend, each adding to the
 *                         one before: as given; mixed precision (bf16, or fp16 where the GPU
 *                         lacks bf16); full activation checkpointing; with allow_optimizer,
 *                         8-bit and paged 8-bit AdamW; ZeRO-1, -2, -3
 *                         (parallel.data_parallel); optimizer offload to CPU, then NVMe
 *                         (offload.optimizer); with `allow_finetune`, LoRA and QLoRA
 *                         (finetune.method). Each knob only where it lowers memory against
 *                         the scenario as loaded (cli/study/fit_stack.c); the first candidate that
 *                         fits and changes memory is the cheapest. Throughput is shown
 *                         relative to the scenario as given (and to a [baseline] group):
 *                         tokens/s ÷ its tokens/s, "x0.33" for a candidate three times
 *                         slower (a penalty of 67 %).
 */
#pragma once

#include <glib.h>
#include "models/memory/ledger.h"

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
  const char *origin; /* what messages call `sets` ("[baseline]"); NULL: "candidate" */
  CliFitStatus status;
  double step_time;  /* s; NaN unless simulated */
  double tokens_per_s;
  double device_used, capacity; /* B: what the candidate needs on the device (models/plan/simulate.h
                                   need_device; above capacity on OOM), the GPU's */
  double peak_allocated, cuda_context; /* B, worst rank, the step as planned (need_allocated;
                                          NaN unless simulated) */
  double host_peak;  /* B of host DRAM at its peak (0 without offload) */
  double peak_mix[MODEL_N_MEM]; /* B per category at the worst rank's peak */
  gboolean allocator_cliff; /* OOM although peak allocated + CUDA context <= capacity: the
                               caching allocator's segments, not the bytes in use, overflow */
  gboolean no_change; /* stack: same GPU and host memory as the scenario as given, so it is
                         listed but never proposed */
  char *reason;      /* one line: why it does not fit (NULL when it fits) */
} CliFitCandidate;

/* What a search found beside its answer (zeros / NaN when it does not apply). */
typedef struct
{
  /* seq_len: max_position_embeddings of a learned-position model when it, not memory, stops
   * the search (the answer is then the largest multiple <= it), and the memory limit found
   * by a second search past it, each probe with the position table extended to the probed
   * length (model.max_position_embeddings = seq_len): an estimate ("~"), 0 if not searched */
  guint64 position_limit;
  guint64 memory_value;
  /* micro_batch, seq_len: the value above the memory limit whose OOM is an allocator cliff
   * (its peak allocated + CUDA context fit the capacity), 0 if none; the largest value that
   * fits with [allocator] expandable_segments = true (0: not searched) */
  guint64 cliff_at;
  guint64 expandable_value;
  /* the next multiple above the memory limit, simulated and found not to fit (0: the limit
   * is the end of the range, or nothing fits) */
  guint64 next_value;
  /* Values above the memory limit that fit again although a smaller one does not: the
   * fitting set is not an interval (found by the local scan, at most 8 kept), and how many
   * values the scan simulated (0: the bracket was consistent, no scan). */
  guint64 also_fits[8];
  guint n_also_fits;
  guint n_fit_scanned; /* how many scanned values fit (also_fits keeps the first 8) */
  guint scanned;
  guint64 scan_from;       /* the value the scan started above (the memory limit it checked) */
  const char *scan_reason; /* static: what in the search made it scan, NULL: no scan */
  /* micro_batch, seq_len: the --max-micro-batch / --max-seq-len limit when the answer is it
   * (larger values were not tried), 0 otherwise */
  guint64 range_limit;
  /* gpus: per-GPU memory floor as the data-parallel degree grows without bound, m(N) =
   * floor + shardable / N fitted per part (cli/study/fit_gpus.c) through the smallest and the
   * largest GPU count simulated (B; NaN when fewer than two counts ran); per category; GPUs the fit predicts would be
   * needed (0 when the floor is above the capacity or unknown); why and what would help
   * (one line each, owned, NULL when something fits). */
  double floor, shardable, capacity;
  double floor_mix[MODEL_N_MEM];
  double floor_cache, floor_context; /* B: the allocator's cache (reserved − allocated) and
                                        the CUDA context in the floor; floor is the sum of
                                        floor_mix, floor_cache and floor_context */
  guint floor_n1, floor_n2;
  guint floor_counts;  /* GPU counts simulated; a sharded floor is credible from 3 on */
  gboolean floor_credible; /* ddp (nothing shards) or >= 3 counts: "cannot help" is claimed
                              only then */
  guint64 gpus_predicted;
  char *why, *advice;
  /* stack: optimizers not tried (8-bit AdamW, paged 8-bit AdamW), one line, owned; NULL
   * when they were tried or do not apply */
  char *skipped;
  /* stack: the [baseline] could not be simulated (its error), one line, owned; NULL when
   * it ran or there is none; cli_fit_search fails with it rather than return the report */
  char *baseline;
} CliFitNotes;

typedef struct
{
  guint64 max_micro_batch;   /* upper end of the micro_batch search (default 4096) */
  guint64 max_seq_len;       /* upper end of the seq_len search (default 1048576) */
  guint64 multiple_of;       /* seq_len granularity (default 1) */
  guint max_gpus_per_node;   /* 0 (default): the scenario's GPUs per node, at least 8 (a
                              * GB200 NVL72 rack's 72) */
  guint max_nodes;           /* default 64 */
  gboolean allow_finetune;   /* also try LoRA / QLoRA */
  gboolean allow_optimizer;  /* stack: also try adamw_8bit and paged_adamw_8bit */
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
/* What the search found beside its answer (owned by the report). */
const CliFitNotes *cli_fit_report_notes (const CliFitReport *report);

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
