/* cli/study/fit-private.h — what the fit searches share: cli/study/fit.c (the report, the
 * candidate memo, probes and bisections) is called by the searches (fit_size.c, fit_gpus.c,
 * fit_stack.c, and fit_cost.c for the stack candidates) and by fit_search.c, which picks
 * the search. Not a public header. */
#pragma once

#include "cli/study/fit.h"
#include "cli/scenario/scenario.h"

struct _CliFitReport
{
  GPtrArray *candidates; /* CliFitCandidate * */
  gint best;
  guint64 value;
  double baseline_tokens;
  CliFitNotes notes;
};

typedef struct
{
  const char *path;
  const char *const *sets;
  CliFitReport *report;
  GHashTable *memo; /* joined overrides → index + 1 */
} Ctx;

/* A new empty report (no candidates, best -1, NaN baseline and notes); cli_fit_report_free. */
CliFitReport *cli_fit_report_new (void);
/* Why a result that does not fit is out of memory, as `run` says it: "OOM by X: needs Y >
 * capacity Z; largest category at the peak: C W (P %)" (Y the step as planned,
 * models/plan/simulate.h need_device, never the capped device-used figure); "OOM: a
 * request failed (needs Y of Z: the allocator's segments)" when the need fits but the
 * allocator's segments do not; host memory or NVMe capacity short otherwise. Caller frees. */
char *cli_fit_oom_reason (const ModelSimResult *res);
/* Loads the scenario with the context's --set and the candidate's overrides, simulates it
 * and fills c's figures, status and reason. */
void cli_fit_simulate (const Ctx *ctx, CliFitCandidate *c);
/* The candidate `sets` (taken), simulated once (memo); returns its index. */
guint cli_fit_evaluate (Ctx *ctx, const char *label, char **sets);
/* Whether candidate i fits. */
gboolean cli_fit_fits_at (Ctx *ctx, guint i);
/* One probe of a search over integers: the overrides for a value x and the candidate's label.
 * micro_batch / seq_len: fmt and name; gpus: fmt NULL (per_node 0 while searching
 * gpus_per_node on one node, else nodes at that many GPUs per node). */
typedef struct
{
  Ctx *ctx;
  const char *fmt;  /* override key for x, e.g. "training.micro_batch" */
  const char *name; /* label prefix */
  guint per_node;   /* gpus: 0 while searching gpus_per_node, else the fixed one */
  guint64 positions_cap; /* seq_len: above it the probe also sets model.max_position_embeddings
                            to x (the position table extended; 0: never) */
  const char *extra;     /* one more override on every probe, NULL for none */
  const char *extra_label; /* appended to the label when extra is set */
  GArray *seen;     /* guint: candidate indices this probe evaluated (may be NULL) */
  guint node_step;  /* gpus with per_node > 0: x counts groups of this many nodes (whole
                     * pods, [cluster] nodes_per_pod); 0 or 1: x counts nodes */
  guint gpu_step;   /* gpus with per_node 0: x counts groups of this many GPUs on the node
                     * (pp · lcm(tp·cp, ep·etp), cli/study/fit_gpus.c); 0 or 1: x counts
                     * GPUs */
} Probe;

/* The GPUs a count must be a multiple of to keep the scenario's layout: pp stages of GPUs
 * that tp·cp divide (a whole data-parallel degree; times the [parallel] dp_shard and
 * dp_replicate the scenario gives) and ep·etp divide (the expert grid carved out of a
 * stage): pp · lcm(tp·cp·dp_shard·dp_replicate, ep·etp), at least 1. */
guint64 cli_fit_layout_unit (const CliScenario *sc);
/* Evaluates (memo) the probe at x; returns the candidate's index. */
guint cli_fit_probe_index (Probe *p, guint64 x);
/* Whether the probe at x fits (CliFitPredicate). */
gboolean cli_fit_probe_fits (guint64 x, gpointer probe);
/* Index of the candidate whose label is `label`, or -1. */
gint cli_fit_find_label (const CliFitReport *r, const char *label);
/* The micro_batch / seq_len search (fit.h, cli/study/fit_size.c). */
void cli_fit_search_size (Ctx *ctx, const CliScenario *sc, CliFitTarget target,
                          const CliFitOptions *opt);
/* The gpus search and its per-GPU floor (fit.h, cli/study/fit_gpus.c). */
void cli_fit_search_gpus (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt);
/* The stack search (fit.h): fills the report's candidates, best and baseline. */
void cli_fit_search_stack (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt);

/* One technique stack of the stack search (cli/study/fit_stack.c), for other searches that
 * combine it with hardware (cli/study/fit_cost.c): its label and overrides. */
typedef struct
{
  char *label; /* owned */
  char **sets; /* owned, NULL-terminated group.key=value */
} CliFitStackCandidate;

/* The stack search's candidates in its order for scenario `sc` (steps that change nothing
 * there are left out, as the stack search does) on GPU type `gpu` (mixed precision is
 * bf16, or fp16 without bf16); the LoRA/QLoRA ones with `allow_finetune`, the 8-bit
 * optimizers with `allow_optimizer`. A new array that frees its elements. */
GPtrArray *cli_fit_stack_candidates (const CliScenario *sc, const HwGpuSpec *gpu,
                                     gboolean allow_finetune, gboolean allow_optimizer);
void cli_fit_stack_candidate_free (gpointer c);
