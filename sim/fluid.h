/* sim/fluid.h — max-min fair fluid sharing of resources among activities.
 *
 * A resource is a capacity (units/s: bytes/s of a link direction, or a dimensionless
 * "fraction of the device per second"). An activity has an amount of work (any unit) and
 * consumes each resource it uses at rate × weight, so its progress rate r must satisfy
 * Σ_i weight_ij · r_i ≤ capacity_j for every resource j. Rates are the max-min fair
 * allocation found by progressive filling (bottleneck first), as in SimGrid's LMM solver
 * (src/kernel/lmm/System.hpp, Casanova et al. "Versatile, scalable and accurate simulation
 * of distributed applications and platforms", JPDC 2014 §4), each rate further capped by the
 * activity's optional rate bound.
 *
 * Examples: a transfer of S bytes over links with capacity B: amount S, weight 1 on each link
 * → time L + S/B alone, S/(B/n) with n equal flows. A roofline kernel: amount 1, weight F/C
 * on a compute resource of capacity 1 and weight M on an HBM resource of capacity H →
 * time max(F/C, M/H).
 *
 * Invariants: after every re-solve, Σ_i weight_ij · r_i ≤ capacity_j (1 + 1e-9) for all j.
 * Rates are re-solved whenever an activity starts sharing or ends; exactly one "next
 * completion" event is pending on the engine at a time. An activity is complete when its
 * remaining amount is ≤ 1e-9 × its amount (relative, so units do not matter).
 * An activity with latency L first waits L seconds without consuming anything.
 * Knows nothing of GPUs (DESIGN §2).
 */
#pragma once

#include <glib.h>
#include "sim/engine.h"

typedef struct _SimFluid SimFluid;

/* Index of a resource, dense from 0 in creation order. */
typedef guint SimResourceId;

/* Identifies an activity; 0 is never valid. */
typedef guint64 SimActivityId;

/* One resource an activity consumes: at progress rate r it uses r × weight of `resource`. */
typedef struct
{
  SimResourceId resource;
  double weight; /* > 0, resource units per activity unit */
} SimUse;

/* Called (from an engine event) when an activity completes; it is already removed. */
typedef void (*SimActivityDoneFunc) (SimFluid *fluid, SimActivityId id, gpointer user_data);

/* Called whenever the total usage Σ_i weight_ij · r_i of a resource changes, with the
 * time (s) and the new usage (resource units/s). Used to record link-load series. */
typedef void (*SimLoadFunc) (SimFluid *fluid, SimResourceId resource, double time, double usage,
                             gpointer user_data);

/* Creates a solver bound to `engine` (borrowed; must outlive the fluid). */
SimFluid *sim_fluid_new (SimEngine *engine);

/* Frees the fluid; running activities are dropped without callbacks. NULL is a no-op. */
void sim_fluid_free (SimFluid *fluid);

/* Makes `fluid` behave as a new one with the same resources (capacities, names, namer and
 * fold kept), for a simulation replayed on the same objects: running activities are dropped
 * without callbacks, every resource is idle (usage 0), the load function is unset, and the
 * next activities get the creation sequence numbers a new fluid gives, so a replay gives
 * the same result as on a new fluid (ids differ; they are only ever compared for
 * equality). Call it before sim_engine_reset of its engine; not from inside a callback.
 * Cost: O(activity slots), plus O(resources) only when activities were still running. */
void sim_fluid_reset (SimFluid *fluid);

/* Adds a resource named `name` (copied) with `capacity` > 0 (units/s). */
SimResourceId sim_fluid_add_resource (SimFluid *fluid, const char *name, double capacity);
/* The same, taking ownership of `name` (g_malloc'ed; freed here on misuse too). */
SimResourceId sim_fluid_add_resource_take (SimFluid *fluid, char *name, double capacity);

/* Names given on demand: a resource added without a name (sim_fluid_add_resource_unnamed)
 * is named by `namer` (resource id, `data` → a g_malloc'ed name) the first time
 * sim_fluid_resource_name asks, and keeps that name. A cluster adds about a million
 * resources, of which a run asks a few names (link-load series). The fluid owns `data`
 * (freed with `destroy`, may be NULL) from now on; one namer per fluid (a second call
 * replaces the first, destroying its data). */
typedef char *(*SimFluidNamer) (SimResourceId resource, gconstpointer data);
void sim_fluid_set_namer (SimFluid *fluid, SimFluidNamer namer, gpointer data,
                          GDestroyNotify destroy);
/* Adds a resource of `capacity` > 0 named by the fluid's namer (API misuse without one). */
SimResourceId sim_fluid_add_resource_unnamed (SimFluid *fluid, double capacity);

guint sim_fluid_n_resources (const SimFluid *fluid);
/* The resource's name (borrowed, valid while the fluid lives; an unnamed resource's is
 * formatted by the namer now and kept). */
const char *sim_fluid_resource_name (const SimFluid *fluid, SimResourceId resource);
double sim_fluid_resource_capacity (const SimFluid *fluid, SimResourceId resource);

/* The bound engine's current time (s): sim_engine_now of the engine given to sim_fluid_new. */
double sim_fluid_now (const SimFluid *fluid);

/* Current usage of a resource (units/s), Σ_i weight_ij · r_i. */
double sim_fluid_resource_usage (const SimFluid *fluid, SimResourceId resource);

/* Starts an activity now: `amount` > 0 units of work; `latency` >= 0 s spent before it
 * starts sharing; `rate_bound` > 0 caps its rate (units/s; G_MAXDOUBLE or INFINITY: none);
 * `uses` (copied, n_uses >= 0) are the resources it consumes. With n_uses == 0 and no
 * bound it completes after `latency` alone. `done` (may be NULL) is called on completion
 * with user_data (borrowed). Returns the activity id. */
SimActivityId sim_fluid_start (SimFluid *fluid, double amount, double latency, double rate_bound,
                               const SimUse *uses, guint n_uses, SimActivityDoneFunc done,
                               gpointer user_data);

/* When an activity that sim_fluid_start (fluid, amount, latency, rate_bound, uses, n_uses,
 * …) would start at `now` (s) completes if nothing else uses any of its resources from its
 * start to its end (s, > now − 1 ulp): the bits the engine's run gives, by the same
 * arithmetic — it joins at now + latency (sim_engine_schedule_after), is solved alone there
 * (fluid_solve.c solve_trivial: rate min_j c_j / w_j over its uses in order, after folding
 * and merging as sim_fluid_start does, or its bound when lower) and completes at
 * join + amount / rate (its finish time, when the completion event fires). The caller
 * guarantees it is alone; the fluid is not changed. Arguments as sim_fluid_start (API
 * misuse: returns NAN). Such a run costs two engine events, or one and a flush event when
 * latency is 0. */
double sim_fluid_lone_end (const SimFluid *fluid, double now, double amount, double latency,
                           double rate_bound, const SimUse *uses, guint n_uses);

/* The whole run of an activity sim_fluid_start (fluid, amount, latency, no bound, uses,
 * n_uses, …) would start now, done at once when the engine's run would do nothing else
 * meanwhile: the fluid is idle (no live activity, none of its events pending, nothing
 * waiting for a flush, and, inside a done callback, no other callback of that completion
 * still to run), latency > 0, its uses (folded, merged) are 1 or 2 resources whose loads
 * the observer does not want (none set, or quieted), and its end is before every pending
 * engine event within the run's horizon (sim_engine_would_fire_next). Then its latency
 * event, lone join, completion fired in place and lone leave happen as numbers only: the
 * engine's sequence numbers and fired count, its clock (left at the end), the fluid's
 * creation number, epochs and solve count move as they would, and *end (s) is the end
 * sim_fluid_lone_end gives; the activity's done callback is not called (the caller goes on
 * as it would) and it takes no slot (ids given later may differ, as identities only).
 * Returns TRUE then; FALSE, nothing changed, otherwise (the caller starts it). From inside
 * an engine event only, as the last thing that event does (nothing else may happen at the
 * instants it skips). */
gboolean sim_fluid_run_lone (SimFluid *fluid, double amount, double latency,
                             const SimUse *uses, guint n_uses, double *end);

/* Current rate of a running activity (units/s; 0 while in latency). -1 if unknown. */
double sim_fluid_activity_rate (const SimFluid *fluid, SimActivityId id);

/* Cancels a running activity without calling `done`. FALSE if unknown or finished. */
gboolean sim_fluid_cancel (SimFluid *fluid, SimActivityId id);

/* Installs a usage observer (NULL to remove); every resource is reported to it again
 * (sim_fluid_quiet_loads undone). */
void sim_fluid_set_load_func (SimFluid *fluid, SimLoadFunc func, gpointer user_data);

/* The installed observer wants no more reports of `resource` (an unknown id is refused):
 * until the observer is replaced or the fluid reset, its usage changes are not reported
 * (for an observer of links, the GPUs' compute and HBM, whose changes are two a kernel).
 * Safe from inside the observer. */
void sim_fluid_quiet_loads (SimFluid *fluid, SimResourceId resource);

/* Folds resources onto representatives: from now on, a use (u, w) of an activity started is
 * a use (canon[u], w · scale[u]) (uses then merged per resource as always). This is the
 * quotient of a max-min system under a symmetry group G that permutes resources and
 * activities (rank classes, models/plan/rank_classes.h): simulating one activity per
 * activity orbit (size |F|) on one resource per resource orbit (size |R|) with the weight
 * scaled by |F| / |R| gives every orbit the rates and usages of the full system, since the
 * load of resource ρ is Σ over the |F|·#(uses ∩ R)/|R| activities of F that use ρ. `canon`
 * and `scale` (sim_fluid_n_resources entries each, copied; canon[u] a resource, scale[u]
 * finite and > 0) or both NULL to stop folding. Call before adding activities that should be
 * folded; resources added later are not folded. */
void sim_fluid_set_fold (SimFluid *fluid, const SimResourceId *canon, const double *scale);

/* Number of running activities (including those still in latency). */
guint sim_fluid_n_activities (const SimFluid *fluid);

/* Number of component re-solves so far (diagnostics and benchmarks; see sim/fluid.c). */
guint64 sim_fluid_n_solves (const SimFluid *fluid);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimFluid, sim_fluid_free)
