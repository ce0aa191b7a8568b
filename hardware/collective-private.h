/* hardware/collective-private.h — a collective lowered to phases of flows, shared by
 * hardware/collective.c (running it, its closed form) and hardware/collective_lower.c (the
 * algorithms). Not for models/ or cli/.
 *
 * A plan is a GPtrArray of phases; a phase is a GArray of HwFlow that start together; phase
 * k+1 starts when every flow of phase k has completed. Empty phases are never stored.
 */
#pragma once

#include "hardware/collective.h"

typedef struct
{
  guint src, dst; /* cluster ranks, distinct */
  double bytes;   /* B, > 0 */
  double latency; /* s before the flow starts sharing */
} HwFlow;

/* Lowers the collective (arguments as hw_collective_start) into a new plan (free with
 * g_ptr_array_unref). One rank or zero bytes give an empty plan. */
GPtrArray *hw_collective_lower (const HwCluster *cluster, HwCollectiveKind kind,
                                HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                                double bytes);
