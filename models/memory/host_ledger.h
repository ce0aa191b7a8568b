/* models/memory/host_ledger.h — host DRAM and NVMe capacity as ledgers, per node (DESIGN §4).
 *
 * Offloading (models/memory/offload.h) puts model states, swap buffers and activations in the
 * host DRAM or on the NVMe drives of a rank's node, which every rank of the node shares.
 * This ledger keeps, per node and place (host, NVMe), the current bytes per category, the
 * peak total, the category mix at the peak and the capacity; a peak above the capacity is
 * the host's (or drive's) out-of-memory, reported like a GPU OOM. No allocator model: host
 * buffers are pinned or pageable allocations of their exact size. If a recorder is given,
 * every change is written as change points of "node<n>/<place>/<category>" (B).
 * Invariant: no category ever goes below zero (a free without its allocation is a plan bug).
 * Units: B, s.
 */
#pragma once

#include <glib.h>
#include "models/memory/ledger.h"
#include "models/memory/offload.h"
#include "sim/recorder.h"

typedef struct _ModelHostLedger ModelHostLedger;

/* A ledger for `n_nodes` nodes of `ranks_per_node` ranks (rank r is on node
 * r / ranks_per_node, hardware/cluster.h) with `host_capacity` B of DRAM and `nvme_capacity`
 * B of NVMe per node (0: none); `rec` borrowed, may be NULL. */
ModelHostLedger *model_host_ledger_new (guint n_nodes, guint ranks_per_node,
                                        double host_capacity, double nvme_capacity,
                                        SimRecorder *rec);
void model_host_ledger_free (ModelHostLedger *ledger); /* NULL is a no-op */

/* Adds `delta` B (> 0 allocates, < 0 frees) of `category` in `place` (host or NVMe; GPU is
 * API misuse) of the node of `rank`, at `time` s. */
void model_host_ledger_apply (ModelHostLedger *ledger, guint rank, ModelMemPlace place,
                              ModelMemCategory category, double delta, double time);

guint model_host_ledger_n_nodes (const ModelHostLedger *ledger);
double model_host_ledger_capacity (const ModelHostLedger *ledger, ModelMemPlace place);
double model_host_ledger_current (const ModelHostLedger *ledger, guint node, ModelMemPlace place,
                                  ModelMemCategory category);
/* Peak total of `place` on `node` (B), and the bytes of `category` at that peak. */
double model_host_ledger_peak (const ModelHostLedger *ledger, guint node, ModelMemPlace place);
double model_host_ledger_peak_mix (const ModelHostLedger *ledger, guint node, ModelMemPlace place,
                                   ModelMemCategory category);
/* The node with the highest peak of `place` (the lowest index among equals). */
guint model_host_ledger_worst_node (const ModelHostLedger *ledger, ModelMemPlace place);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelHostLedger, model_host_ledger_free)
