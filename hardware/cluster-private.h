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

/* `n` doubles, all zero, owned by the cluster and reused by every call: the caller must
 * leave them zero when done (hw_collective_plan_time's per-resource load and latency, which
 * it resets entry by entry). Allocating and freeing such arrays per collective made glibc
 * trim and regrow the heap each time (brk, TLB flushes: 60 % of a 512-GPU run's time). The
 * pointer is valid until the next call with a larger n. */
double *hw_cluster_resource_scratch (const HwCluster *cluster, guint n);

/* The memo of collective lowerings (hardware/collective_lower.c, hw_collective_lower):
 * lowering is a pure function of the cluster's topology and node, fixed for its lifetime,
 * and of the key below. Keys HwLowerKey* (g_malloc'd with their ranks, owned), values
 * HwLowerEntry* (g_new, owned with their plan: GPtrArray* of GArray* of flows). */
typedef struct
{
  guint kind;      /* HwCollectiveKind */
  guint algorithm; /* HwCollectiveAlgorithm */
  double bytes;
  guint n_ranks;
  guint ranks[]; /* n_ranks members in the collective's order */
} HwLowerKey;
typedef struct
{
  GPtrArray *plan;   /* the lowered plan (owned) */
  double time_alone; /* hw_collective_plan_time of it on the idle cluster, s */
} HwLowerEntry;
GHashTable *hw_cluster_lower_memo (const HwCluster *cluster);

/* The collectives in flight on the cluster (hardware/collective.c: each running instance's
 * state, added at its start and taken out when it completes), a set owned by the cluster
 * whose elements it frees with `free_run` when it is reset (hw_cluster_reset, after its
 * fluid's reset dropped their flows) or freed. Created on the first call with `free_run`
 * (the same function every call). */
GHashTable *hw_cluster_live_collectives (HwCluster *cluster, GDestroyNotify free_run);

/* The registry of collective groups (hardware/collective.c hw_collective_group) and of
 * rank-class answers (hw_collective_shift_invariant), opaque here: made by `make` on the
 * first call, owned by the cluster and freed with `free_groups` (the same two functions
 * every call) when the cluster is freed. It holds only what is a pure function of the
 * topology, the node, the rank shift and its keys, so a reset keeps it, and a const cluster
 * gives it (a memo, as hw_cluster_lower_memo). */
gpointer hw_cluster_collective_groups (const HwCluster *cluster, gpointer (*make) (void),
                                       GDestroyNotify free_groups);
