/* models/plan/rank_classes.h — classes of equivalent ranks, simulated once each.
 *
 * Almost every rank of a data-, tensor-, context- or pipeline-parallel job does the same work
 * as many others on the same kind of links (Multiverse, NSDI 2025, exploits the same
 * symmetry). Here the symmetry is found, not assumed. The candidates are the shift groups of
 * hardware/rank_shift.h, inside pipeline stages (under the default order pp is the mesh's
 * outermost dimension, so stage s holds ranks s·B … s·B + B − 1, B = n / pp; B = n without
 * stages): up to HW_RANK_SHIFT_LEVELS commuting levels, the outermost a shift by d places
 * inside blocks of g ranks (g dividing B), each further one a shift by e places inside
 * blocks of h ranks, h dividing the previous level's d. Under
 * the order tp-cp-ep-pp-dp (mesh.h) a stage is no block: the blocks are then divisors of
 * n and only the shifts that keep every rank in its stage are tried
 * (model_mesh_shift_keeps_stages): σ by whole pipeline replicas (d a multiple of pp·cp·tp
 * ranks) and rotations inside a stage's runs of cp·tp ranks. On a cluster of nodes the ones that
 * survive are levels moving a stage's ranks by whole pods, by whole nodes (of a pod, or of
 * a stage without pods) and rotating every node's GPUs (hardware/topology.h
 * hw_topology_shift_map); pods of a stage, nodes of a pod and GPUs of a node take three.
 * The group is a symmetry of a run when each
 * generator is, that is when
 *   - the plan maps onto itself: rank σr's task list equals rank r's, task by task (stream,
 *     kind, label, layer, micro-batch, kernels with their shapes, memory effects with their
 *     sizes, dependencies at the same positions of the image ranks, offload amounts) and
 *     each collective instance of rank σr is the image of rank r's member list
 *     (model_plan_shift_invariant);
 *   - the cluster maps onto itself (hardware/cluster.h hw_cluster_shift_invariant: topology,
 *     stragglers, no jitter);
 *   - every collective's lowered flows map onto themselves under the elements that fix its
 *     members (hardware/collective.h hw_collective_shift_invariant; an NCCL tree is rooted,
 *     so none across the nodes it spans does).
 * The candidate with the fewest representatives is taken (the identity always qualifies);
 * the classes are then the group's orbits, hw_rank_shift_multiplicity ranks each, and the
 * simulation replays the representatives (hw_rank_shift_is_rep) only: the executor
 * (executor.h) runs their tasks, one instance per orbit of collective instances, and the
 * fluid carries the multiplicities (sim/fluid.h sim_fluid_set_fold). Because every member
 * of a class sees the same events at the same times in the full replay, the collapsed one
 * gives the same step time and per-rank memory (to rounding: sums of m equal weights against
 * one weight × m). Anything rank-dependent inside a stage — expert load skew, a straggler —
 * fails the check for the shifts it breaks and so splits the classes by itself.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/plan/plan.h"

/* Whether the shift (its n the plan's rank count) maps `plan`, built for every rank, onto
 * itself (the first condition above). O(tasks + collective members). The identity: TRUE. */
gboolean model_plan_shift_invariant (const ModelPlan *plan, const HwRankShift *shift);

/* The rank classes of replaying `plan` on `cluster` (both borrowed): the candidate shift
 * group with the fewest representatives for which the plan, the cluster and every
 * collective the representatives run are invariant; the identity when none is. A plan
 * built for representatives answers with its own shift (model_plan_built). */
HwRankShift model_rank_classes_shift (const ModelPlan *plan, const HwCluster *cluster);

/* The plan of one step for replaying on `cluster` by rank classes, and its shift
 * (`*shift`), built for the representatives only where that is provable without the
 * other ranks' tasks: the plan builder's output depends on a rank only through its pipeline
 * stage and the mesh groups its collectives run on (plan_comm.c names them by the rank's
 * coordinates, and a pipeline message or tied-embedding reduction pairs the rank with its
 * peer of the same dp, cp and tp coordinates; no task reads a coordinate otherwise: tp, cp
 * and data-parallel ranks of a stage hold equal shares and run equal kernels), so a group
 * is a symmetry of the plan when each generator maps every group the plan uses onto a group
 * (in member order, or onto itself), and of the run when the cluster and the
 * representatives' collectives are invariant too. Such a plan
 * (model_plan_new_representatives) holds the representatives only: its cost is that of
 * hw_rank_shift_n_reps ranks, not n (issue 17). One rank per stage is built first and
 * checked to hold no dependency across ranks and no collective outside a mesh or pp group;
 * a candidate whose generators break one of that rank's collectives is ruled out before its
 * representatives are built. Anything else — expert-parallel groups, or no proper shift
 * found this way — builds every rank and finds the shift by model_rank_classes_shift.
 * Arguments are borrowed; the plan is new (model_plan_free); NULL + error as
 * model_plan_new_paged(). */
ModelPlan *model_rank_classes_plan (const ModelArch *arch, const ModelStack *stack,
                                    const ModelParallel *par, double paged_spill,
                                    const HwCluster *cluster, HwRankShift *shift,
                                    GError **error);
