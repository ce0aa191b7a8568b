/* models/ledger.c — per-rank memory ledger; see ledger.h. */
#include "config.h"
#include "models/ledger.h"

#include <math.h>

static const char *const category_names[MODEL_N_MEM] = {
  "weights",     "master_weights", "gradients",       "optimizer_state", "activations",
  "workspace",   "comm_buffers",   "offload_staging", "lora",            "quantization",
};

typedef struct
{
  double current[MODEL_N_MEM];
  double category_peak[MODEL_N_MEM];
  double total;
  double peak;
  double peak_time;
  double peak_mix[MODEL_N_MEM];
  char *peak_task;
  guint series[MODEL_N_MEM];
  guint series_total;
  GHashTable *live; /* handle → Buffer; lookup only, never iterated */
} RankLedger;

typedef struct
{
  ModelMemCategory category;
  double bytes;
} Buffer;

struct _ModelLedger
{
  guint n_ranks;
  RankLedger *ranks;
  SimRecorder *rec;
};

const char *
model_ledger_category_name (ModelMemCategory category)
{
  g_return_val_if_fail (category < MODEL_N_MEM, NULL);
  return category_names[category];
}

ModelLedger *
model_ledger_new (guint n_ranks, SimRecorder *rec)
{
  g_return_val_if_fail (n_ranks > 0, NULL);
  ModelLedger *l = g_new0 (ModelLedger, 1);
  l->n_ranks = n_ranks;
  l->ranks = g_new0 (RankLedger, n_ranks);
  l->rec = rec;
  for (guint r = 0; r < n_ranks; r++)
    l->ranks[r].live = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  if (rec == NULL)
    return l;
  /* All categories are created up front, in enum order, so every rank's memory group has
   * the same columns in the same order (stacked plots, DESIGN §8). */
  for (guint r = 0; r < n_ranks; r++)
    {
      for (guint c = 0; c < MODEL_N_MEM; c++)
        {
          g_autofree char *path = g_strdup_printf ("rank%u/memory/%s", r, category_names[c]);
          l->ranks[r].series[c] = sim_recorder_series (rec, path, "B");
          sim_recorder_set (rec, l->ranks[r].series[c], 0.0, 0.0);
        }
      g_autofree char *path = g_strdup_printf ("rank%u/allocated", r);
      l->ranks[r].series_total = sim_recorder_series (rec, path, "B");
      sim_recorder_set (rec, l->ranks[r].series_total, 0.0, 0.0);
    }
  return l;
}

void
model_ledger_free (ModelLedger *ledger)
{
  if (ledger == NULL)
    return;
  for (guint r = 0; r < ledger->n_ranks; r++)
    {
      g_free (ledger->ranks[r].peak_task);
      g_hash_table_unref (ledger->ranks[r].live);
    }
  g_free (ledger->ranks);
  g_free (ledger);
}

static void
change (ModelLedger *ledger, guint rank, ModelMemCategory category, double delta, double time,
        const char *task_label)
{
  RankLedger *rl = &ledger->ranks[rank];
  rl->current[category] += delta;
  rl->total += delta;
  /* Tolerate rounding residue of sums of doubles, never a real over-free. */
  g_assert (rl->current[category] >= -1e-6 * fmax (1.0, fabs (delta)));
  if (rl->current[category] < 0)
    rl->current[category] = 0;
  if (rl->current[category] > rl->category_peak[category])
    rl->category_peak[category] = rl->current[category];
  if (rl->total > rl->peak)
    {
      rl->peak = rl->total;
      rl->peak_time = time;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        rl->peak_mix[c] = rl->current[c];
      g_free (rl->peak_task);
      rl->peak_task = g_strdup (task_label);
    }
  if (ledger->rec != NULL)
    {
      sim_recorder_set (ledger->rec, rl->series[category], time, rl->current[category]);
      sim_recorder_set (ledger->rec, rl->series_total, time, rl->total);
    }
}

void
model_ledger_alloc (ModelLedger *ledger, guint rank, ModelMemCategory category, double bytes,
                    guint handle, double time, const char *task_label)
{
  g_return_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM);
  g_return_if_fail (handle > 0 && bytes > 0 && isfinite (bytes));
  Buffer *b = g_new (Buffer, 1);
  *b = (Buffer){ category, bytes };
  gboolean fresh = g_hash_table_insert (ledger->ranks[rank].live, GUINT_TO_POINTER (handle), b);
  g_assert (fresh);
  change (ledger, rank, category, bytes, time, task_label);
}

void
model_ledger_release (ModelLedger *ledger, guint rank, guint handle, double time,
                      const char *task_label)
{
  g_return_if_fail (rank < ledger->n_ranks);
  GHashTable *live = ledger->ranks[rank].live;
  Buffer *b = g_hash_table_lookup (live, GUINT_TO_POINTER (handle));
  g_assert (b != NULL);
  ModelMemCategory category = b->category;
  double bytes = b->bytes;
  g_hash_table_remove (live, GUINT_TO_POINTER (handle));
  change (ledger, rank, category, -bytes, time, task_label);
}

guint
model_ledger_n_ranks (const ModelLedger *ledger)
{
  return ledger->n_ranks;
}

double
model_ledger_current (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].current[category];
}

double
model_ledger_current_total (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].total;
}

double
model_ledger_category_peak (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].category_peak[category];
}

double
model_ledger_peak (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].peak;
}

double
model_ledger_peak_time (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].peak_time;
}

const char *
model_ledger_peak_task (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, NULL);
  return ledger->ranks[rank].peak_task;
}

double
model_ledger_peak_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].peak_mix[category];
}
