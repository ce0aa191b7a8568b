/* hardware/collective-private.h — a collective lowered to phases of flows, shared by
 * hardware/collective.c (running it), hardware/collective_lower.c (the algorithms) and
 * hardware/collective_time.c (its closed form). Not for models/ or cli/.
 *
 * A plan is a GPtrArray of phases; a phase is a GArray of HwFlow that start together; phase
 * k+1 starts when every flow of phase k has completed. Empty phases are never stored.
 */
#pragma once

#include "hardware/collective.h"

typedef struct
{
  guint src, dst; /* cluster ranks, distinct */
  double bytes;   /* B on the wire (payload / protocol efficiency), > 0 */
  double latency; /* s before the flow starts sharing */
  double rate;    /* B/s, the flow's own bound (NCCL protocol and channel caps); INFINITY: none */
} HwFlow;

/* NCCL's protocols (src/include/nccl_common.h order). */
typedef enum
{
  HW_PROTO_LL,
  HW_PROTO_LL128,
  HW_PROTO_SIMPLE,
  HW_N_PROTOCOLS
} HwCollectiveProtocol;

/* Lowers the collective (arguments as hw_collective_start) into a new plan (free with
 * g_ptr_array_unref). One rank or zero bytes give an empty plan. Memoized per cluster
 * (cluster-private.h hw_cluster_lower_memo): each distinct (kind, algorithm, bytes, members) is lowered once,
 * the caller gets a copy it owns. */
GPtrArray *hw_collective_lower (const HwCluster *cluster, HwCollectiveKind kind,
                                HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                                double bytes);
/* As hw_collective_lower, also setting *time_alone (when not NULL) to the plan's
 * hw_collective_plan_time, memoized with it (0 for an empty plan). */
GPtrArray *hw_collective_lower_timed (const HwCluster *cluster, HwCollectiveKind kind,
                                      HwCollectiveAlgorithm algorithm, const guint *ranks,
                                      guint n_ranks, double bytes, double *time_alone);

/* As hw_collective_lower_timed, the memo's own plan (borrowed, valid while the cluster
 * lives; never to be changed): for callers that only read it, without the copy. */
const GPtrArray *hw_collective_lower_borrowed (const HwCluster *cluster, HwCollectiveKind kind,
                                              HwCollectiveAlgorithm algorithm,
                                              const guint *ranks, guint n_ranks, double bytes,
                                              double *time_alone);

/* Closed-form time (s) of `plan` alone on the idle cluster (collective_time.c file comment). */
double hw_collective_plan_time (const HwCluster *cluster, GPtrArray *plan);

/* NCCL's cost model (hardware/collective_nccl.c; constants from NCCL src/graph/tuning.cc).
 * `node` the cluster's node, n ranks over m nodes, bytes the collective's size. Latencies
 * in s, bandwidths in B/s. */
double hw_nccl_wire_efficiency (HwCollectiveProtocol proto);      /* LL 0.5, LL128 0.92, Simple 1 */
double hw_nccl_ring_bus_bandwidth (const HwNodeSpec *node);       /* ring Simple, one node; INFINITY on PCIe */
gboolean hw_nccl_protocol_enabled (const HwNodeSpec *node, HwCollectiveProtocol proto);
gboolean hw_nccl_nvls_eligible (const HwNodeSpec *node, HwCollectiveKind kind, guint n_ranks,
                                guint n_nodes);
double hw_nccl_nvls_port_bandwidth (const HwNodeSpec *node);      /* per GPU port, each way */
/* `choosing`: NCCL's selection estimate (with the ×1.4 multi-node Simple all-reduce plateau
 * term of ncclTopoGetAlgoTime); FALSE: the run's own pipeline-fill latency (collective_nccl.c). */
double hw_nccl_ring_latency (const HwNodeSpec *node, HwCollectiveKind kind,
                             HwCollectiveProtocol proto, guint n, guint m, double bytes,
                             gboolean choosing);
double hw_nccl_tree_latency (const HwNodeSpec *node, HwCollectiveProtocol proto, guint n, guint m);
double hw_nccl_nvls_latency (void);
/* Payload bus-bandwidth caps (per rank) of the ring and of the double binary tree. */
double hw_nccl_ring_payload_cap (const HwNodeSpec *node, HwCollectiveProtocol proto, guint m);
double hw_nccl_tree_payload_cap (const HwNodeSpec *node, HwCollectiveProtocol proto, guint m,
                                 double bytes);

/* A platform tuner's region (hardware/collective_tuner.c): NCCL's algorithm and protocol. */
typedef enum
{
  HW_TUNER_TREE,
  HW_TUNER_RING,
  HW_TUNER_NVLS_TREE, /* NVLS inside nodes + tree across them: not lowered by this model */
  HW_TUNER_PAT,       /* NCCL's PAT all-gather / reduce-scatter: not lowered by this model */
} HwTunerAlgorithm;

typedef struct
{
  HwTunerAlgorithm algorithm;
  HwCollectiveProtocol protocol;
} HwTunerPick;

/* The regions of `tuner` holding (bytes, n_ranks) for a collective of `kind` among n_ranks
 * over n_nodes, in the tuner's order of preference, at most `max` into `out`; returns how
 * many. The caller takes the first it can run (the tuner skips what NCCL marks as ignored).
 * 0 means NCCL's own tuner decides: HW_TUNER_NCCL, at most 2 nodes, a rank layout or kind
 * without a table, bytes < 1. */
guint hw_tuner_regions_at (HwCollectiveTuner tuner, HwCollectiveKind kind, guint n_ranks,
                           guint n_nodes, double bytes, HwTunerPick *out, guint max);
