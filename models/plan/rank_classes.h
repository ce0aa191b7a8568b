/* models/plan/rank_classes.h — classes of equivalent ranks, simulated once each.
 *
 * Almost every rank of a data-, tensor- or context-parallel job does the same work on the
 * same kind of links (Multiverse, NSDI 2025, exploits the same symmetry). Here the symmetry
 * is found, not assumed: a shift T: r → (r + d) mod n of the ranks is a symmetry of a run when
 *   - the plan maps onto itself: rank r + d's task list equals rank r's, task by task (stream,
 *     kind, label, layer, micro-batch, kernels with their shapes, memory effects with their
 *     sizes, dependencies at the same positions of the shifted ranks, offload amounts) and
 *     each collective instance of rank r + d is the shifted member list of rank r's
 *     (model_plan_shift_invariant);
 *   - the cluster maps onto itself (hardware/cluster.h hw_cluster_shift_invariant: topology,
 *     stragglers, no jitter);
 *   - every collective's lowered flows map onto themselves under the shifts that fix its
 *     members (hardware/collective.h hw_collective_shift_invariant).
 * The period of a run is the least such d (d = n, the identity, always qualifies); the
 * classes are then {r, r + d, r + 2d, …}, m = n / d ranks each, and the simulation replays
 * the representatives r < d only: the executor (executor.h) runs their tasks, one instance
 * per orbit of collective instances, and the fluid carries the multiplicities
 * (sim/fluid.h sim_fluid_set_fold). Because every member of a class sees the same events at
 * the same times in the full replay, the collapsed one gives the same step time and
 * per-rank memory (to rounding: sums of m equal weights against one weight × m). Anything
 * rank-dependent — pipeline stages, expert load skew, a straggler — fails the check for the
 * shifts it breaks and so splits the classes by itself.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/plan/plan.h"

/* Whether shifting every rank by `d` (dividing the plan's rank count) maps `plan` onto
 * itself (the first condition above). O(tasks + collective members). d = n: TRUE. */
gboolean model_plan_shift_invariant (const ModelPlan *plan, guint d);

/* The period of replaying `plan` on `cluster` (both borrowed): the least divisor d of the
 * rank count for which the plan, the cluster and every collective the representatives run
 * are shift-invariant; the rank count when none smaller is. */
guint model_rank_classes_period (const ModelPlan *plan, const HwCluster *cluster);

/* The plan of one step for replaying on `cluster` by rank classes, and its period
 * (`*period`), built for the representatives only where that is provable without the
 * other ranks' tasks: without pipeline stages (pp = 1) the plan builder's output depends
 * on a rank only through the mesh groups its collectives run on (plan_comm.c names them by
 * the rank's coordinates; no task reads a coordinate otherwise: tp, cp and data-parallel
 * ranks hold equal shares and run equal kernels), so a shift by d is a symmetry of the plan
 * when it maps every group the plan uses onto a group (in member order, or onto itself),
 * and of the run when the cluster and the representatives' collectives are invariant too.
 * Such a plan (model_plan_new_representatives) holds ranks 0 … d − 1 only: its cost is
 * that of d ranks, not n (issue 17). One built rank is checked first to hold no dependency
 * across ranks and no collective outside a mesh group; anything else — pipeline stages,
 * or no proper period found this way — builds every rank and finds the period by
 * model_rank_classes_period. Arguments are borrowed; the plan is new (model_plan_free);
 * NULL + error as model_plan_new_paged(). */
ModelPlan *model_rank_classes_plan (const ModelArch *arch, const ModelStack *stack,
                                    const ModelParallel *par, double paged_spill,
                                    const HwCluster *cluster, guint *period, GError **error);
