/* hardware/collective.h — collectives among ranks of a cluster, lowered to flows.
 *
 * A collective is lowered by its algorithm into phases of point-to-point flows over the
 * routes of the topology (hardware/topology.h); every flow shares every link direction it
 * crosses with all other traffic (max-min, sim/fluid.h). Algorithms (Thakur et al., "Opt.
 * of collective communication operations in MPICH", IJHPCA 2005; NCCL): ring (bandwidth-
 * optimal; all-reduce 2(p−1) steps of S/p), tree (double binary tree, latency log p),
 * NVLS (NVLink SHARP inside an NVSwitch node), hierarchical (intra-node reduce-scatter,
 * inter-node all-reduce among same local ranks, intra-node all-gather, in sequence), each
 * with NCCL's protocols (LL, LL128, Simple) and NCCL's own latency and bandwidth model
 * (src/graph/tuning.cc; hardware/collective_nccl.c).
 *
 * Sizes follow nccl-tests: `bytes` is the per-rank buffer for all-reduce and broadcast, the
 * gathered (output) size for all-gather, the input size for reduce-scatter, the per-rank
 * send buffer for all-to-all and the message for send/recv. Bus bandwidth factors
 * (nccl-tests doc/PERFORMANCE.md): all-reduce 2(n−1)/n, all-gather and reduce-scatter
 * (n−1)/n, all-to-all (n−1)/n, broadcast and send/recv 1.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"

typedef enum
{
  HW_COLLECTIVE_ALL_REDUCE,
  HW_COLLECTIVE_ALL_GATHER,
  HW_COLLECTIVE_REDUCE_SCATTER,
  HW_COLLECTIVE_BROADCAST,
  HW_COLLECTIVE_ALL_TO_ALL,
  HW_COLLECTIVE_SEND_RECV, /* ranks[0] sends to ranks[1]; over n > 2 ranks a ring shift:
                            * every ranks[i] sends `bytes` to ranks[(i + 1) % n] at once
                            * (one batch_isend_irecv per rank, as ring attention's K/V
                            * exchange; NCCL groups the P2P calls) */
  HW_N_COLLECTIVES
} HwCollectiveKind;

typedef enum
{
  HW_ALGORITHM_AUTO, /* what NCCL's tuner picks: least time over ring, tree and NVLS × protocols */
  HW_ALGORITHM_RING,
  HW_ALGORITHM_TREE,
  HW_ALGORITHM_HIERARCHICAL, /* Horovod-style three levels, run one after the other */
  HW_ALGORITHM_NVLS,         /* NVLink SHARP all-reduce in one NVSwitch node (H100+); else ring */
  HW_N_ALGORITHMS
} HwCollectiveAlgorithm;

/* Called once when every flow of the collective has completed. */
typedef void (*HwCollectiveDoneFunc) (gpointer user_data);

/* "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv";
 * "auto", "ring", "tree", "hierarchical", "nvls". Parsing errors: G_KEY_FILE_ERROR_INVALID_VALUE
 * listing the accepted names. */
const char *hw_collective_kind_name (HwCollectiveKind kind);
const char *hw_collective_algorithm_name (HwCollectiveAlgorithm algorithm);
gboolean hw_collective_algorithm_from_string (const char *text, HwCollectiveAlgorithm *out,
                                              GError **error);

/* "nccl", "aws-ofi-p5en", "aws-ofi-p6-b200" (HwCollectiveTuner, hardware/cluster.h). Parsing
 * errors: G_KEY_FILE_ERROR_INVALID_VALUE listing the accepted names. */
const char *hw_collective_tuner_name (HwCollectiveTuner tuner);
gboolean hw_collective_tuner_from_string (const char *text, HwCollectiveTuner *out,
                                          GError **error);

/* Whether NCCL has `algorithm` for a collective of `kind` on nodes of `node` at all (before
 * the rank and node counts, where NCCL falls back to the ring: NVLS below 5 GPUs or across
 * nodes). TRUE for auto and ring of a ring collective. FALSE, with `*why` set to a static
 * sentence, for: any explicit algorithm of all_to_all or send_recv (NCCL runs them as
 * point-to-point sends, src/collectives.cc, no algorithm choice); tree of anything but
 * all_reduce (NCCL's tree is all-reduce only, src/graph/tuning.cc); nvls of anything but
 * all_reduce (NCCL 2.18+ also runs reduce_scatter and all_gather over NVLS, which this model
 * does not lower); nvls on a node without NVLink SHARP (an NVSwitch node of Hopper or
 * Blackwell GPUs; A100's second-generation NVSwitch has none). */
gboolean hw_collective_algorithm_applies (const HwNodeSpec *node, HwCollectiveKind kind,
                                          HwCollectiveAlgorithm algorithm, const char **why);

/* Starts a collective of `kind` among `ranks` (n_ranks >= 1 distinct cluster ranks, copied)
 * on `bytes` B (>= 0; see the size convention above) now. With one rank or zero bytes it
 * completes after no time (a zero-delay event). `done` is called from an engine event.
 * Returns an id > 0. */
guint64 hw_collective_start (HwCluster *cluster, HwCollectiveKind kind,
                             HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                             double bytes, HwCollectiveDoneFunc done, gpointer user_data);
/* The same, its kernels holding `comm_sms` SMs of each participant's GPU (a whole or
 * fractional count >= 0; the fraction comm_sms / sm_count, at most 0.9) instead of the GPU's
 * NCCL comm_sm_fraction; comm_sms < 0 or a GPU without sm_count: that fraction. For
 * collectives whose kernels are not NCCL's, e.g. Transformer Engine's userbuffers overlaps
 * (models/plan/plan_tp_overlap.c: num_sm SMs taken from the GEMM beside them). Such a hold
 * only shares the compute resource (a compute-bound kernel beside it runs at 1 − comm_sms /
 * sm_count): it is not registered with hw_cluster_sm_hold_begin, since TE sizes the GEMMs
 * it overlaps to the SMs left (set_sm_margin), so no persistent GEMM waits for its tail. */
guint64 hw_collective_start_sms (HwCluster *cluster, HwCollectiveKind kind,
                                 HwCollectiveAlgorithm algorithm, const guint *ranks,
                                 guint n_ranks, double bytes, double comm_sms,
                                 HwCollectiveDoneFunc done, gpointer user_data);

/* Collective groups: a member list interned once per cluster, so that a start on it costs
 * only the flows it runs and its representative members (rank classes), nothing more per
 * member (hardware/collective.c, "collective groups"). hw_collective_group: the id (>= 1)
 * of `ranks` (n_ranks >= 1 cluster ranks in the collective's order, copied), the same id
 * for an equal list on the same cluster, valid while the cluster lives; O(n_ranks) to hash
 * and compare, so callers keep the id of a list they start often. 0 on a NULL argument.
 * hw_collective_start_group: hw_collective_start_sms on the group's members (the same
 * flows, holds and done in the same order, so every result is the same); each distinct
 * (group, kind, algorithm, bytes) is prepared once under the cluster's rank shift (its
 * lowering, time alone, stabilizer, kept flows and the bytes each representative sends),
 * again after the shift changes. Misuse (a g_return check, returns 0): an unknown group,
 * ranks that repeat or lie outside the cluster, send_recv on one rank.
 * hw_collective_group_n_prepared: how many preparations the cluster made (for tests and
 * benchmarks). */
guint hw_collective_group (HwCluster *cluster, const guint *ranks, guint n_ranks);
guint64 hw_collective_start_group (HwCluster *cluster, HwCollectiveKind kind,
                                   HwCollectiveAlgorithm algorithm, guint group, double bytes,
                                   double comm_sms, HwCollectiveDoneFunc done,
                                   gpointer user_data);
guint hw_collective_group_n_prepared (HwCluster *cluster);

/* Rank classes (hardware/cluster.h hw_cluster_set_shift): whether the collective's lowered
 * flows are mapped onto themselves — same bytes, latency and rate — by the stabilizer of its
 * members under `shift` (hardware/rank_shift.h: the shift by the least multiple s of d
 * dividing the block that maps `ranks` onto themselves), so that one flow per orbit stands
 * for the rest exactly. TRUE when no such s exists (the instance's images are other
 * instances). FALSE, e.g., for a tree rooted at one member of a group the shift maps onto
 * itself. Same arguments as hw_collective_start; shift->n the cluster's rank count. */
gboolean hw_collective_shift_invariant (const HwCluster *cluster, HwCollectiveKind kind,
                                        HwCollectiveAlgorithm algorithm, const guint *ranks,
                                        guint n_ranks, double bytes, const HwRankShift *shift);

/* Closed-form time (s) of the same collective on an otherwise idle cluster, e.g. ring
 * all-reduce L + 2(p−1)/p·S/min(B, cap) with B the slowest link direction of the ring, L
 * the node's collective_overhead plus NCCL's latency, cap NCCL's protocol bandwidth. */
double hw_collective_time_alone (const HwCluster *cluster, HwCollectiveKind kind,
                                 HwCollectiveAlgorithm algorithm, const guint *ranks,
                                 guint n_ranks, double bytes);

/* nccl-tests' algorithm bandwidth bytes/time and bus bandwidth algbw × factor(kind, n). */
double hw_collective_algbw (double bytes, double time);
double hw_collective_busbw (HwCollectiveKind kind, guint n_ranks, double bytes, double time);
