/* models/ledger.h — per-rank memory ledger of live buffers by category (DESIGN §4).
 *
 * Every change is a signed delta in bytes at a simulated time; the ledger keeps the current
 * bytes per category and in total (allocated, PyTorch's term), the peak total, the time and
 * task at the peak and the category mix at that moment. The peak is the first moment the
 * maximum is reached. If a recorder is given, every change is written as change points of
 * the series "rank<r>/memory/<category>" (B) and "rank<r>/allocated" (B).
 * Buffers are tracked individually by handle (a GHashTable per rank used for lookup only),
 * so a free releases exactly what its allocation took.
 * Invariant: no category ever goes below zero.
 */
#pragma once

#include <glib.h>
#include "sim/recorder.h"

typedef enum
{
  MODEL_MEM_WEIGHTS,
  MODEL_MEM_MASTER_WEIGHTS,
  MODEL_MEM_GRADIENTS,
  MODEL_MEM_OPTIMIZER_STATE,
  MODEL_MEM_ACTIVATIONS,      /* saved for backward (incl. checkpoints and recomputed) */
  MODEL_MEM_WORKSPACE,        /* transient inside one task */
  MODEL_MEM_COMM_BUFFERS,
  MODEL_MEM_OFFLOAD_STAGING,
  MODEL_MEM_LORA,
  MODEL_MEM_QUANTIZATION,
  MODEL_N_MEM
} ModelMemCategory;

/* "weights", "master_weights", "gradients", "optimizer_state", "activations", "workspace",
 * "comm_buffers", "offload_staging", "lora", "quantization". */
const char *model_ledger_category_name (ModelMemCategory category);

typedef struct _ModelLedger ModelLedger;

/* A ledger for ranks 0..n_ranks-1; `rec` (borrowed, may be NULL) receives the series. */
ModelLedger *model_ledger_new (guint n_ranks, SimRecorder *rec);
void model_ledger_free (ModelLedger *ledger); /* NULL is a no-op */

/* Allocates buffer `handle` (> 0, not live on this rank) of `bytes` (> 0) in `category` on
 * `rank` at `time` (s); `task_label` (borrowed, may be NULL) names the task causing it,
 * remembered at the peak. */
void model_ledger_alloc (ModelLedger *ledger, guint rank, ModelMemCategory category,
                         double bytes, guint handle, double time, const char *task_label);

/* Frees live buffer `handle` of `rank` at `time`. Freeing a handle that is not live is a
 * bug in the plan (g_assert). */
void model_ledger_release (ModelLedger *ledger, guint rank, guint handle, double time,
                           const char *task_label);

guint model_ledger_n_ranks (const ModelLedger *ledger);
double model_ledger_current (const ModelLedger *ledger, guint rank, ModelMemCategory category);
double model_ledger_current_total (const ModelLedger *ledger, guint rank);
/* Largest value a category ever reached on `rank` (B). */
double model_ledger_category_peak (const ModelLedger *ledger, guint rank,
                                   ModelMemCategory category);
/* Peak allocated bytes of `rank`, its time (s), the task then running (may be NULL) and the
 * bytes of `category` at that moment. */
double model_ledger_peak (const ModelLedger *ledger, guint rank);
double model_ledger_peak_time (const ModelLedger *ledger, guint rank);
const char *model_ledger_peak_task (const ModelLedger *ledger, guint rank);
double model_ledger_peak_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelLedger, model_ledger_free)
