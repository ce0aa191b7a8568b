/* hardware/cluster-private.h — what hardware/collective*.c needs of HwCluster beyond the
 * public API. Not installed, not for models/ or cli/. */
#pragma once

#include "hardware/cluster.h"

/* A fresh collective id (> 0), counted per cluster so ids do not depend on other clusters. */
guint64 hw_cluster_take_collective_id (HwCluster *cluster);

/* SM holds (hardware/collective.c, hold_gpu): a collective whose kernels hold `fraction` of
 * `rank`'s SMs begins its hold when it starts, expecting to end at about `until` (s, engine
 * time: its start plus its time alone), and ends it, with the same fraction, when it
 * completes. The cluster keeps per rank the held fraction (summed over the collectives
 * running there) and the latest expected end; a persistent GEMM started meanwhile waits for
 * its tail (hw_cluster_start_kernel_after, hw_kernel_persistent_ctas). */
void hw_cluster_sm_hold_begin (HwCluster *cluster, guint rank, double fraction, double until);
void hw_cluster_sm_hold_end (HwCluster *cluster, guint rank, double fraction);
