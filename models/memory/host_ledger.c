/* models/memory/host_ledger.c — host DRAM and NVMe ledgers per node; see host_ledger.h.
 * Invariants: current[] >= 0 for every category (up to rounding: a free may leave -1e-6 B
 * of float error, clamped to 0); peak >= total at all times. */
#include "config.h"
#include "models/memory/host_ledger.h"

#include <math.h>

#define N_PLACES 2 /* host, NVMe: ModelMemPlace − 1 */

typedef struct
{
  double current[MODEL_N_MEM];
  double total, peak;
  double peak_mix[MODEL_N_MEM];
  guint series[MODEL_N_MEM]; /* G_MAXUINT until first used */
} PlaceLedger;

struct _ModelHostLedger
{
  guint n_nodes, ranks_per_node;
  double capacity[N_PLACES];
  PlaceLedger *places; /* n_nodes × N_PLACES */
  SimRecorder *rec;
};

ModelHostLedger *
model_host_ledger_new (guint n_nodes, guint ranks_per_node, double host_capacity,
                       double nvme_capacity, SimRecorder *rec)
{
  g_return_val_if_fail (n_nodes > 0 && ranks_per_node > 0, NULL);
  g_return_val_if_fail (host_capacity >= 0 && nvme_capacity >= 0, NULL);
  ModelHostLedger *l = g_new0 (ModelHostLedger, 1);
  l->n_nodes = n_nodes;
  l->ranks_per_node = ranks_per_node;
  l->capacity[0] = host_capacity;
  l->capacity[1] = nvme_capacity;
  l->places = g_new0 (PlaceLedger, (gsize) n_nodes * N_PLACES);
  for (guint i = 0; i < n_nodes * N_PLACES; i++)
    for (guint c = 0; c < MODEL_N_MEM; c++)
      l->places[i].series[c] = G_MAXUINT;
  l->rec = rec;
  return l;
}

void
model_host_ledger_free (ModelHostLedger *ledger)
{
  if (ledger == NULL)
    return;
  g_free (ledger->places);
  g_free (ledger);
}

static PlaceLedger *
place_of (const ModelHostLedger *l, guint node, ModelMemPlace place)
{
  return &l->places[node * N_PLACES + (place - 1)];
}

void
model_host_ledger_apply (ModelHostLedger *ledger, guint rank, ModelMemPlace place,
                         ModelMemCategory category, double delta, double time)
{
  g_return_if_fail (ledger != NULL && category < MODEL_N_MEM);
  g_return_if_fail (place == MODEL_MEM_ON_HOST || place == MODEL_MEM_ON_NVME);
  guint node = rank / ledger->ranks_per_node;
  g_return_if_fail (node < ledger->n_nodes);
  PlaceLedger *p = place_of (ledger, node, place);
  double next = p->current[category] + delta;
  g_assert (next > -1e-6 * MAX (1.0, fabs (delta)));
  p->current[category] = MAX (next, 0);
  p->total += delta;
  if (p->total > p->peak)
    {
      p->peak = p->total;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        p->peak_mix[c] = p->current[c];
    }
  if (ledger->rec == NULL)
    return;
  if (p->series[category] == G_MAXUINT)
    {
      g_autofree char *path = g_strdup_printf ("node%u/%s/%s", node,
                                               model_offload_place_name (place),
                                               model_ledger_category_name (category));
      p->series[category] = sim_recorder_series (ledger->rec, path, "B");
    }
  sim_recorder_set (ledger->rec, p->series[category], time, p->current[category]);
}

guint
model_host_ledger_n_nodes (const ModelHostLedger *ledger)
{
  return ledger->n_nodes;
}

double
model_host_ledger_capacity (const ModelHostLedger *ledger, ModelMemPlace place)
{
  g_return_val_if_fail (place == MODEL_MEM_ON_HOST || place == MODEL_MEM_ON_NVME, 0);
  return ledger->capacity[place - 1];
}

double
model_host_ledger_current (const ModelHostLedger *ledger, guint node, ModelMemPlace place,
                           ModelMemCategory category)
{
  g_return_val_if_fail (node < ledger->n_nodes && category < MODEL_N_MEM, 0);
  g_return_val_if_fail (place == MODEL_MEM_ON_HOST || place == MODEL_MEM_ON_NVME, 0);
  return place_of (ledger, node, place)->current[category];
}

double
model_host_ledger_peak (const ModelHostLedger *ledger, guint node, ModelMemPlace place)
{
  g_return_val_if_fail (node < ledger->n_nodes, 0);
  g_return_val_if_fail (place == MODEL_MEM_ON_HOST || place == MODEL_MEM_ON_NVME, 0);
  return place_of (ledger, node, place)->peak;
}

double
model_host_ledger_peak_mix (const ModelHostLedger *ledger, guint node, ModelMemPlace place,
                            ModelMemCategory category)
{
  g_return_val_if_fail (node < ledger->n_nodes && category < MODEL_N_MEM, 0);
  g_return_val_if_fail (place == MODEL_MEM_ON_HOST || place == MODEL_MEM_ON_NVME, 0);
  return place_of (ledger, node, place)->peak_mix[category];
}

guint
model_host_ledger_worst_node (const ModelHostLedger *ledger, ModelMemPlace place)
{
  guint worst = 0;
  for (guint n = 1; n < ledger->n_nodes; n++)
    if (model_host_ledger_peak (ledger, n, place) > model_host_ledger_peak (ledger, worst, place))
      worst = n;
  return worst;
}
