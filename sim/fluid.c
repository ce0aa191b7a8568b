/* sim/fluid.c — max-min fair fluid sharing of resources among activities; see sim/fluid.h.
 *
 * Model: each resource j has a capacity c_j; each sharing activity i progresses at rate r_i
 * and uses weight_ij · r_i of every resource it names. Rates are the weighted max-min fair
 * allocation computed by progressive filling (SimGrid LMM, src/kernel/lmm/System.hpp;
 * Casanova et al., JPDC 2014 §4; Bertsekas & Gallager, "Data Networks" 2nd ed. §6.5.2):
 * all unfixed rates rise together as one level λ; resource j saturates when
 * λ = c'_j / W_j (c'_j: capacity left by fixed activities, W_j: Σ weights of the unfixed
 * ones on j); an activity saturates at its rate bound. The lowest saturation fixes its
 * activities at that λ, and the rest continues. A min-heap of c'_j / W_j (that value only
 * rises as activities get fixed, since λ* ≤ c'_j / W_j) makes a solve O((R + U) log R) for
 * R resources and U uses in the component, instead of O(R²).
 *
 * Component-local solving: the allocation of a connected component (activities linked
 * through shared resources, transitively) depends on nothing outside it, so a change only
 * re-solves the components it touches; every other activity keeps its rate, and its
 * remaining amount is advanced lazily (remaining at t_last, rate since t_last).
 *
 * Batching: starts, latency ends and cancels only mark resources dirty and make sure one
 * "flush" engine event is pending at now; the flush re-solves each dirty component once, so
 * n flows starting at one instant cost one solve, not n. A latency end with no other event
 * due at its instant flushes at once instead (that flush event would fire next). Getters
 * flush first, so they always see the solved state. Completions re-solve at once, before
 * their done callbacks run. An activity that joins idle resources, or leaves resources it
 * had alone, with nothing else waiting for a flush, skips the dirty lists (join_lone,
 * leave_lone: the same solves and reports); such a join's completion event, when it would
 * be the engine's next, fires in place (sim_engine_fire_reserved). On an idle fluid, such an
 * activity's whole run (latency event, lone join, completion in place, lone leave) can be
 * done as numbers only when nothing else is due meanwhile (sim_fluid_run_lone).
 *
 * Completion: a min-heap of finish times t_last + remaining/r feeds exactly one pending
 * "next completion" engine event. When it fires, every activity at the top of the heap whose
 * finish time is ≤ now, or whose remaining is ≤ 1e-9 × amount, completes; they are removed
 * in creation order, the touched components are re-solved once, and only then are their done
 * callbacks called in creation order (callbacks may start or cancel activities; they must not free
 * the fluid). The load observer is called after each flush for every resource whose usage
 * changed, in resource-id order, with exactly 0 when a resource becomes idle.
 * Getters (rate, usage) flush pending changes first, so the load observer may be called from
 * inside them.
 * Storage: activities live in a generational slot pool (sim/slots.h: stable addresses for the
 * intrusive heaps and member lists, a free list; an id names slot and generation, so lookups
 * need no hashing and a stale id never matches); ordering uses the creation sequence
 * number `seq`, never the id. Flush scratch vectors (sim/vec.h: inline append) are reused
 * (sim/fluid-private.h).
 * Layout: bookkeeping here; component search and progressive filling in sim/fluid_solve.c;
 * shared structures in sim/fluid-private.h.
 * Units: capacity in resource units/s, amount in activity units, time in s.
 */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/fluid.h"
#include "sim/fluid-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative completion tolerance (sim/fluid.h). */
#define DONE_REL_TOL 1e-9

static void flush (SimFluid *fluid);
static void reschedule_completion (SimFluid *fluid);
static void on_completion (SimEngine *engine, gpointer user_data);

static double
fluid_now (const SimFluid *fluid)
{
  return *fluid->clock;
}

static SimFluidActivity *
act_at (const SimFluid *fluid, guint slot)
{
  return sim_slots_at (&fluid->acts, slot);
}

/* The live activity named by `id`, or NULL (unknown, finished, cancelled, slot reused). */
static SimFluidActivity *
lookup_activity (const SimFluid *fluid, SimActivityId id)
{
  guint slot;
  if (!sim_slot_of_id (&fluid->acts, id, &slot))
    return NULL;
  SimFluidActivity *a = act_at (fluid, slot);
  return a->live && a->id == id ? a : NULL;
}

/* Takes a zeroed activity from the pool and gives it a fresh id and sequence number. */
static SimFluidActivity *
activity_alloc (SimFluid *fluid)
{
  guint slot;
  SimFluidActivity *a = sim_slots_take (&fluid->acts, &slot);
  g_return_val_if_fail (a != NULL, NULL);
  guint32 gen = a->gen + 1;
  memset (a, 0, sizeof *a);
  a->gen = gen;
  a->pool_slot = slot;
  a->id = sim_slot_id (gen, slot);
  a->seq = fluid->next_seq++;
  a->fluid = fluid;
  a->live = TRUE;
  fluid->n_live++;
  return a;
}

/* Ends an activity's life: lookups by its id fail from now on (the struct, id included,
 * stays readable until the slot is released). */
static void
activity_unlink (SimFluid *fluid, SimFluidActivity *a)
{
  a->live = FALSE;
  fluid->n_live--;
}

/* Frees what the activity owns and returns its slot to the pool; after activity_unlink. */
static void
activity_release (SimFluid *fluid, SimFluidActivity *a)
{
  if (a->uses != a->inline_uses)
    g_free (a->uses);
  if (a->slots != a->inline_slots)
    g_free (a->slots);
  a->uses = NULL;
  a->slots = NULL;
  sim_slots_give (&fluid->acts, a->pool_slot);
}

/* Frees what a resource owns (its struct lives in res_store). */
static void
resource_free (gpointer data)
{
  SimFluidResource *r = data;
  g_free (r->name);
  sim_vec_clear (&r->members);
}

/* Frees a stack of spare vectors and their storage. */
static void
spares_clear (SimVec *spares)
{
  for (guint k = 0; k < spares->len; k++)
    sim_vec_clear (&SIM_VEC_AT (spares, SimVec, k));
  sim_vec_clear (spares);
}

SimFluid *
sim_fluid_new (SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, NULL);
  SimFluid *fluid = g_new0 (SimFluid, 1);
  fluid->engine = engine;
  fluid->clock = sim_engine_clock (engine);
  fluid->next_seq = 1;
  fluid->epoch = 1;
  fluid->resources = g_ptr_array_new_with_free_func (resource_free);
  sim_slots_init (&fluid->res_store, sizeof (SimFluidResource), SIM_FLUID_RES_BLOCK);
  sim_slots_init (&fluid->acts, sizeof (SimFluidActivity), SIM_FLUID_ACT_BLOCK);
  fluid->finishing = sim_heap_new ();
  fluid->solver = sim_fluid_solver_new ();
  return fluid;
}

/* Releases every live activity, cancelling its pending latency event so the engine holds no
 * pointer into an activity (or a fluid) that is gone. */
static void
drop_live_activities (SimFluid *fluid)
{
  for (guint slot = 0; slot < fluid->acts.n_slots; slot++)
    {
      SimFluidActivity *a = act_at (fluid, slot);
      if (!a->live)
        continue;
      if (a->latency_event != 0)
        sim_engine_cancel (fluid->engine, a->latency_event);
      activity_unlink (fluid, a);
      activity_release (fluid, a);
    }
}

void
sim_fluid_free (SimFluid *fluid)
{
  if (fluid == NULL)
    return;
  if (fluid->completion_event != 0)
    sim_engine_cancel (fluid->engine, fluid->completion_event);
  if (fluid->flush_event != 0)
    sim_engine_cancel (fluid->engine, fluid->flush_event);
  drop_live_activities (fluid);
  sim_heap_free (fluid->finishing);
  sim_slots_clear (&fluid->acts);
  spares_clear (&fluid->spare_res);
  spares_clear (&fluid->spare_acts);
  sim_vec_clear (&fluid->done_buf);
  g_ptr_array_unref (fluid->resources);
  sim_slots_clear (&fluid->res_store);
  if (fluid->namer_destroy != NULL)
    fluid->namer_destroy (fluid->namer_data);
  g_free (fluid->fold_canon);
  g_free (fluid->fold_scale);
  sim_vec_clear (&fluid->dirty_res);
  sim_vec_clear (&fluid->dirty_acts);
  sim_vec_clear (&fluid->lone_changed);
  sim_fluid_solver_free (fluid->solver);
  g_free (fluid);
}

void
sim_fluid_reset (SimFluid *fluid)
{
  g_return_if_fail (fluid != NULL && !fluid->done_busy);
  if (fluid->completion_event != 0)
    sim_engine_cancel (fluid->engine, fluid->completion_event);
  if (fluid->flush_event != 0)
    sim_engine_cancel (fluid->engine, fluid->flush_event);
  fluid->completion_event = fluid->flush_event = 0;
  fluid->completion_time = 0;
  fluid->completion_reserved = FALSE;
  gboolean busy = fluid->n_live > 0 || fluid->dirty_res.len > 0 || fluid->dirty_acts.len > 0;
  drop_live_activities (fluid);
  sim_heap_clear (fluid->finishing);
  /* After a complete run every resource is idle already: its last flush solved it to
   * usage exactly 0 with no member (file comment); otherwise make it so. */
  for (guint i = 0; busy && i < fluid->resources->len; i++)
    {
      SimFluidResource *r = g_ptr_array_index (fluid->resources, i);
      r->members.len = 0;
      r->usage = 0.0;
      r->dirty = FALSE;
      r->node.index = SIM_HEAP_NONE;
    }
  fluid->dirty_res.len = 0;
  fluid->dirty_acts.len = 0;
  sim_slots_reset (&fluid->acts);
  fluid->n_live = 0;
  fluid->next_seq = 1;
  fluid->n_solves = 0;
  sim_fluid_set_load_func (fluid, NULL, NULL);
}

/* A resource of `capacity` in a new, zeroed slot of the store, no name yet. */
static SimResourceId
new_resource (SimFluid *fluid, double capacity)
{
  guint slot;
  SimFluidResource *r = sim_slots_take (&fluid->res_store, &slot);
  r->id = fluid->resources->len;
  r->capacity = capacity;
  r->node.index = SIM_HEAP_NONE;
  g_ptr_array_add (fluid->resources, r);
  return r->id;
}

static SimFluidResource *get_resource (const SimFluid *fluid, SimResourceId id);

SimResourceId
sim_fluid_add_resource (SimFluid *fluid, const char *name, double capacity)
{
  g_return_val_if_fail (fluid != NULL, 0);
  g_return_val_if_fail (name != NULL, 0);
  return sim_fluid_add_resource_take (fluid, g_strdup (name), capacity);
}

SimResourceId
sim_fluid_add_resource_take (SimFluid *fluid, char *name, double capacity)
{
  g_return_val_if_fail (fluid != NULL, 0);
  g_return_val_if_fail (name != NULL, 0);
  if (!isfinite (capacity) || capacity <= 0.0)
    {
      g_free (name);
      g_return_val_if_reached (0);
    }
  SimResourceId id = new_resource (fluid, capacity);
  get_resource (fluid, id)->name = name;
  return id;
}

void
sim_fluid_set_namer (SimFluid *fluid, SimFluidNamer namer, gpointer data, GDestroyNotify destroy)
{
  g_return_if_fail (fluid != NULL);
  if (fluid->namer_destroy != NULL)
    fluid->namer_destroy (fluid->namer_data);
  fluid->namer = namer;
  fluid->namer_data = data;
  fluid->namer_destroy = destroy;
}

SimResourceId
sim_fluid_add_resource_unnamed (SimFluid *fluid, double capacity)
{
  g_return_val_if_fail (fluid != NULL && fluid->namer != NULL, 0);
  g_return_val_if_fail (isfinite (capacity) && capacity > 0.0, 0);
  return new_resource (fluid, capacity);
}

guint
sim_fluid_n_resources (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0);
  return fluid->resources->len;
}

static SimFluidResource *
get_resource (const SimFluid *fluid, SimResourceId id)
{
  return g_ptr_array_index (fluid->resources, id);
}

const char *
sim_fluid_resource_name (const SimFluid *fluid, SimResourceId resource)
{
  g_return_val_if_fail (fluid != NULL && resource < fluid->resources->len, NULL);
  SimFluidResource *r = get_resource (fluid, resource);
  if (r->name == NULL) /* named on demand: a cache, the fluid is unchanged otherwise */
    r->name = fluid->namer (resource, fluid->namer_data);
  return r->name;
}

double
sim_fluid_resource_capacity (const SimFluid *fluid, SimResourceId resource)
{
  g_return_val_if_fail (fluid != NULL && resource < fluid->resources->len, 0.0);
  return get_resource (fluid, resource)->capacity;
}

double
sim_fluid_now (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0.0);
  return fluid_now (fluid);
}

double
sim_fluid_resource_usage (const SimFluid *fluid, SimResourceId resource)
{
  g_return_val_if_fail (fluid != NULL && resource < fluid->resources->len, 0.0);
  flush ((SimFluid *) fluid); /* logically const: only brings the cached solution up to date */
  return get_resource (fluid, resource)->usage;
}

static void
mark_resource_dirty (SimFluid *fluid, SimFluidResource *r)
{
  if (r->dirty)
    return;
  r->dirty = TRUE;
  SIM_VEC_PUSH (&fluid->dirty_res, SimResourceId, r->id);
}

static void
on_flush_event (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  SimFluid *fluid = user_data;
  fluid->flush_event = 0;
  flush (fluid);
}

static void
request_flush (SimFluid *fluid)
{
  if (fluid->flush_event == 0)
    fluid->flush_event
        = sim_engine_schedule_at (fluid->engine, fluid_now (fluid), on_flush_event, fluid, NULL);
}

/* Puts an activity into the sharing set: it joins each resource's member list (the caller
 * then flushes, or requests the flush). */
/* Makes `a` sharing from now and a member of each resource it uses, marking them dirty when
 * `dirty` (the general path; a lone join solves its one component itself). */
static void
add_members (SimFluid *fluid, SimFluidActivity *a, gboolean dirty)
{
  a->sharing = TRUE;
  a->t_last = fluid_now (fluid);
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = get_resource (fluid, a->uses[u].resource);
      a->slots[u] = r->members.len;
      SIM_VEC_PUSH (&r->members, SimFluidMember, ((SimFluidMember){ a, u }));
      if (dirty)
        mark_resource_dirty (fluid, r);
    }
}

static void
join_sharing (SimFluid *fluid, SimFluidActivity *a)
{
  add_members (fluid, a, TRUE);
  if (a->n_uses == 0)
    SIM_VEC_PUSH (&fluid->dirty_acts, SimActivityId, a->id);
}

/* Takes a sharing activity out of every resource (swap-remove, fixing the moved member's
 * slot) and out of the finish-time heap; the touched resources become dirty. */
static void
leave_sharing (SimFluid *fluid, SimFluidActivity *a)
{
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = get_resource (fluid, a->uses[u].resource);
      guint slot = a->slots[u], last = r->members.len - 1;
      if (slot != last)
        {
          SimFluidMember moved = SIM_VEC_AT (&r->members, SimFluidMember, last);
          SIM_VEC_AT (&r->members, SimFluidMember, slot) = moved;
          moved.act->slots[moved.use] = slot;
        }
      r->members.len = last;
      mark_resource_dirty (fluid, r);
    }
  if (a->finish.index != SIM_HEAP_NONE)
    sim_heap_remove (fluid->finishing, &a->finish);
  a->sharing = FALSE;
}

/* ---- lone joins and leaves ---------------------------------------------------------------
 *
 * Most activities (a kernel on its GPU's compute and HBM) join resources nobody uses and
 * leave them idle. For those, the flush that join_sharing or leave_sharing would request
 * touches nothing but the activity's own resources, so it is done here without the dirty
 * lists: the same solves (sim_fluid_solve_from, in the order the dirty list would give them:
 * the activity's uses), the same completion event, the same load reports in id order, so the
 * same rates, times, events and calls. Only when no other change waits for a flush (else the
 * flush would solve that too, in its place). */

/* Uses of an activity the lone paths take (a kernel has two: compute, HBM). */
#define LONE_MAX_USES 2

static gboolean
lone_on (const SimFluid *fluid, const SimFluidActivity *a, guint members)
{
  if (fluid->no_lone || a->n_uses == 0 || a->n_uses > LONE_MAX_USES || fluid->flush_event != 0
      || fluid->dirty_res.len > 0 || fluid->dirty_acts.len > 0)
    return FALSE;
  for (guint u = 0; u < a->n_uses; u++)
    if (get_resource (fluid, a->uses[u].resource)->members.len != members)
      return FALSE;
  return TRUE;
}

/* The end of flush after a lone path's solves, which left their changed resources in
 * fluid->lone_changed: the completion event (with `reserve`, when none is pending, only its
 * sequence number: join_lone), then the load observer, resource-id order. */
static void
lone_flush_end (SimFluid *fluid, gboolean reserve)
{
  SimHeapNode *top = sim_heap_peek (fluid->finishing);
  if (reserve && fluid->completion_event == 0 && top != NULL)
    {
      /* reschedule_completion's event, numbered now, scheduled or fired after the reports */
      fluid->completion_time = MAX (top->key, fluid_now (fluid));
      fluid->completion_seq = sim_engine_reserve (fluid->engine);
      fluid->completion_reserved = TRUE;
    }
  else
    reschedule_completion (fluid);
  if (fluid->load_func == NULL)
    return;
  /* copied out: the observer may start activities (a later lone path reuses the vector) */
  SimResourceId ids[LONE_MAX_USES];
  guint n = fluid->lone_changed.len;
  for (guint k = 0; k < n; k++)
    ids[k] = SIM_VEC_AT (&fluid->lone_changed, SimResourceId, k);
  if (n == 2 && ids[0] > ids[1])
    {
      SimResourceId t = ids[0];
      ids[0] = ids[1];
      ids[1] = t;
    }
  double now = fluid_now (fluid);
  for (guint k = 0; k < n; k++)
    {
      const SimFluidResource *r = get_resource (fluid, ids[k]);
      if (!r->quiet)
        fluid->load_func (fluid, ids[k], now, r->usage, fluid->load_data);
    }
}

/* join_sharing, then flush, for an activity whose resources are idle (lone_on): TRUE, or
 * FALSE (nothing done) when it is not such an activity. */
static gboolean
join_lone (SimFluid *fluid, SimFluidActivity *a)
{
  if (!lone_on (fluid, a, 0))
    return FALSE;
  add_members (fluid, a, FALSE);
  /* one component, solved from the first use's resource (the others are visited by it) */
  fluid->epoch++;
  fluid->lone_changed.len = 0;
  sim_fluid_solve_from (fluid, get_resource (fluid, a->uses[0].resource), NULL,
                        &fluid->lone_changed);
  lone_flush_end (fluid, TRUE);
  if (fluid->completion_reserved) /* (the load observer may have changed it) */
    {
      /* the completion event: when it would fire next (nothing due before it; usually the
       * kernel's end on an otherwise idle GPU), it fires here, without the queue */
      fluid->completion_reserved = FALSE;
      if (sim_engine_fire_reserved (fluid->engine, fluid->completion_seq, fluid->completion_time))
        on_completion (fluid->engine, fluid);
      else
        fluid->completion_event
            = sim_engine_schedule_reserved (fluid->engine, fluid->completion_seq,
                                            fluid->completion_time, on_completion, fluid, NULL);
    }
  return TRUE;
}

/* on_completion's leave_sharing and unlink of its one finished activity `a`, then flush, when
 * a was alone on its resources (lone_on): TRUE, or FALSE (nothing done) otherwise. */
static gboolean
leave_lone (SimFluid *fluid, SimFluidActivity *a, double now)
{
  if (!lone_on (fluid, a, 1))
    return FALSE;
  a->remaining = 0.0;
  a->t_last = now;
  for (guint u = 0; u < a->n_uses; u++)
    get_resource (fluid, a->uses[u].resource)->members.len = 0; /* its one member */
  if (a->finish.index != SIM_HEAP_NONE)
    sim_heap_remove (fluid->finishing, &a->finish);
  a->sharing = FALSE;
  activity_unlink (fluid, a); /* its slot is released after the callbacks */
  /* each resource idle now: a component of its own, solved in use order */
  fluid->epoch++;
  fluid->lone_changed.len = 0;
  for (guint u = 0; u < a->n_uses; u++)
    sim_fluid_solve_from (fluid, get_resource (fluid, a->uses[u].resource), NULL,
                          &fluid->lone_changed);
  lone_flush_end (fluid, FALSE);
  return TRUE;
}

/* A latency over: the activity starts sharing. When no other event is due at this instant,
 * the flush event it would request is the engine's next event, so the flush runs here: the
 * same changes in the same order, one engine event fewer (a kernel's start on a GPU). The
 * events scheduled later take creation sequence numbers one lower, all of them alike, so
 * their relative order, which breaks ties of equal times, is the same. */
static void
on_latency_end (SimEngine *engine, gpointer user_data)
{
  SimFluidActivity *a = user_data;
  SimFluid *fluid = a->fluid;
  a->latency_event = 0;
  gboolean alone = fluid->flush_event == 0 && sim_engine_next_time (engine) > fluid_now (fluid);
  if (alone && join_lone (fluid, a))
    return;
  join_sharing (fluid, a);
  if (alone)
    flush (fluid);
  else
    request_flush (fluid);
}

/* `in` as the fluid shares it: a folded resource's use moved to its canonical one with the
 * weight scaled (sim_fluid_set_fold). FALSE (nothing written) if its resource is unknown
 * or its weight is not finite and > 0. */
static inline gboolean
fold_use (const SimFluid *fluid, const SimUse *in, SimUse *out)
{
  if (in->resource >= fluid->resources->len || !isfinite (in->weight) || in->weight <= 0.0)
    return FALSE;
  *out = *in;
  if (out->resource < fluid->n_fold)
    {
      out->weight *= fluid->fold_scale[out->resource];
      out->resource = fluid->fold_canon[out->resource];
    }
  return TRUE;
}

/* Copies the caller's uses into `a`, merging repeats of one resource (their weights add) so
 * each resource appears at most once per activity. FALSE if a resource id is unknown or a
 * weight is not finite and > 0. */
static gboolean
copy_uses (const SimFluid *fluid, const SimUse *uses, guint n_uses, SimFluidActivity *a)
{
  a->uses = n_uses <= SIM_FLUID_INLINE_USES ? a->inline_uses : g_new (SimUse, n_uses);
  a->n_uses = 0;
  for (guint k = 0; k < n_uses; k++)
    {
      SimUse use;
      if (!fold_use (fluid, &uses[k], &use))
        return FALSE;
      guint u = 0;
      while (u < a->n_uses && a->uses[u].resource != use.resource)
        u++;
      if (u == a->n_uses)
        a->uses[a->n_uses++] = use;
      else
        a->uses[u].weight += use.weight;
    }
  a->slots = a->n_uses <= SIM_FLUID_INLINE_USES ? a->inline_slots : g_new (guint, a->n_uses);
  return TRUE;
}

void
sim_fluid_set_fold (SimFluid *fluid, const SimResourceId *canon, const double *scale)
{
  g_return_if_fail (fluid != NULL && (canon == NULL) == (scale == NULL));
  g_clear_pointer (&fluid->fold_canon, g_free);
  g_clear_pointer (&fluid->fold_scale, g_free);
  fluid->n_fold = 0;
  if (canon == NULL)
    return;
  guint n = fluid->resources->len;
  for (guint u = 0; u < n; u++)
    g_return_if_fail (canon[u] < n && isfinite (scale[u]) && scale[u] > 0);
  fluid->fold_canon = g_memdup2 (canon, n * sizeof (SimResourceId));
  fluid->fold_scale = g_memdup2 (scale, n * sizeof (double));
  fluid->n_fold = n;
}

SimActivityId
sim_fluid_start (SimFluid *fluid, double amount, double latency, double rate_bound,
                 const SimUse *uses, guint n_uses, SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (fluid != NULL, 0);
  g_return_val_if_fail (isfinite (amount) && amount > 0.0, 0);
  g_return_val_if_fail (isfinite (latency) && latency >= 0.0, 0);
  g_return_val_if_fail (rate_bound > 0.0, 0); /* also rejects NaN */
  g_return_val_if_fail (n_uses == 0 || uses != NULL, 0);
  SimFluidActivity *a = activity_alloc (fluid);
  if (!copy_uses (fluid, uses, n_uses, a))
    {
      activity_unlink (fluid, a);
      activity_release (fluid, a);
      g_return_val_if_reached (0); /* a use names an unknown resource or a weight <= 0 */
    }
  a->amount = amount;
  a->remaining = amount;
  a->rate_bound = rate_bound >= G_MAXDOUBLE ? INFINITY : rate_bound;
  a->done = done;
  a->user_data = user_data;
  a->finish.index = SIM_HEAP_NONE;
  a->finish.tie = a->seq;
  if (latency > 0.0)
    a->latency_event = sim_engine_schedule_after (fluid->engine, latency, on_latency_end, a, NULL);
  else
    {
      join_sharing (fluid, a);
      request_flush (fluid);
    }
  return a->id;
}

double
sim_fluid_lone_end (const SimFluid *fluid, double now, double amount, double latency,
                    double rate_bound, const SimUse *uses, guint n_uses)
{
  g_return_val_if_fail (fluid != NULL, NAN);
  g_return_val_if_fail (isfinite (amount) && amount > 0.0, NAN);
  g_return_val_if_fail (isfinite (latency) && latency >= 0.0, NAN);
  g_return_val_if_fail (rate_bound > 0.0, NAN);
  g_return_val_if_fail (n_uses == 0 || uses != NULL, NAN);
  /* the uses sim_fluid_start would give it (copy_uses sets uses, n_uses and slots only, so
   * the rest of the activity stays unset) */
  SimFluidActivity a;
  a.slots = a.inline_slots;
  gboolean ok = copy_uses (fluid, uses, n_uses, &a);
  /* solve_trivial's level, in the same order; without uses the filling fixes it at its
   * bound (INFINITY without one), which the same expression gives */
  double level = INFINITY;
  for (guint u = 0; ok && u < a.n_uses; u++)
    level = MIN (level, get_resource (fluid, a.uses[u].resource)->capacity / a.uses[u].weight);
  if (a.uses != a.inline_uses)
    g_free (a.uses);
  if (a.slots != a.inline_slots)
    g_free (a.slots);
  g_return_val_if_fail (ok, NAN); /* a use names an unknown resource or a weight <= 0 */
  rate_bound = rate_bound >= G_MAXDOUBLE ? INFINITY : rate_bound;
  double rate = isfinite (rate_bound) && rate_bound <= level ? rate_bound : MAX (level, 0.0);
  g_return_val_if_fail (rate > 0.0, NAN); /* would never finish */
  /* the latency event's time (sim_engine_schedule_after: now + delay; with no latency it
   * joins at now), then update_finish_time's key, which the completion event fires at */
  double join = latency > 0.0 ? now + latency : now;
  return isinf (rate) ? join : join + amount / rate;
}

gboolean
sim_fluid_run_lone (SimFluid *fluid, double amount, double latency, const SimUse *uses,
                    guint n_uses, double *end)
{
  g_return_val_if_fail (fluid != NULL && end != NULL, FALSE);
  g_return_val_if_fail (isfinite (amount) && amount > 0.0, FALSE);
  g_return_val_if_fail (isfinite (latency) && latency >= 0.0, FALSE);
  g_return_val_if_fail (n_uses == 0 || uses != NULL, FALSE);
  /* an idle fluid: no activity (latent or sharing), no event of its own pending, nothing
   * dirty, and no other done callback of this completion's batch still to run */
  if (fluid->no_lone || fluid->n_live != 0 || fluid->completion_event != 0
      || fluid->completion_reserved || fluid->flush_event != 0 || fluid->dirty_res.len > 0
      || fluid->dirty_acts.len > 0 || (fluid->done_busy && fluid->done_left != 0)
      || latency <= 0.0)
    return FALSE;
  /* the uses sim_fluid_start would give it (copy_uses: folded, a repeat merged into the
   * first by the same addition; invalid ones left to sim_fluid_start to refuse), 1 or 2 as
   * join_lone and leave_lone take */
  if (n_uses == 0 || n_uses > LONE_MAX_USES)
    return FALSE;
  SimUse merged[LONE_MAX_USES];
  guint n = 0;
  for (guint k = 0; k < n_uses; k++)
    {
      SimUse use;
      if (!fold_use (fluid, &uses[k], &use))
        return FALSE;
      if (n == 1 && merged[0].resource == use.resource)
        merged[0].weight += use.weight;
      else
        merged[n++] = use;
    }
  double level = INFINITY;
  for (guint u = 0; u < n; u++)
    {
      const SimFluidResource *r = get_resource (fluid, merged[u].resource);
      if (fluid->load_func != NULL && !r->quiet)
        return FALSE; /* its load reports would be due */
      level = MIN (level, r->capacity / merged[u].weight);
    }
  double rate = MAX (level, 0.0); /* no bound: solve_trivial's rate */
  double now = fluid_now (fluid), join = now + latency, fin = join + amount / rate;
  if (!(rate > 0.0) || !isfinite (fin) || !(fin > now)
      || !sim_engine_would_fire_next (fluid->engine, fin))
    return FALSE;
  /* sim_fluid_start: a creation number and the latency event's sequence number; the event
   * fires (nothing is due before it) and join_lone solves the one component */
  fluid->next_seq++;
  guint64 seq = sim_engine_reserve (fluid->engine);
  if (!sim_engine_fire_reserved (fluid->engine, seq, join))
    g_assert_not_reached (); /* (sim_engine_would_fire_next said it would) */
  fluid->epoch++;
  fluid->n_solves++;
  /* its completion event, reserved and fired in place; leave_lone solves each resource */
  fluid->completion_time = fin;
  fluid->completion_seq = sim_engine_reserve (fluid->engine);
  if (!sim_engine_fire_reserved (fluid->engine, fluid->completion_seq, fin))
    g_assert_not_reached ();
  fluid->epoch++;
  fluid->n_solves += n;
  *end = fin;
  return TRUE;
}

double
sim_fluid_activity_rate (const SimFluid *fluid, SimActivityId id)
{
  g_return_val_if_fail (fluid != NULL, -1.0);
  flush ((SimFluid *) fluid); /* logically const: only brings the cached solution up to date */
  const SimFluidActivity *a = lookup_activity (fluid, id);
  if (a == NULL)
    return -1.0;
  return a->sharing ? a->rate : 0.0;
}

gboolean
sim_fluid_cancel (SimFluid *fluid, SimActivityId id)
{
  g_return_val_if_fail (fluid != NULL, FALSE);
  SimFluidActivity *a = lookup_activity (fluid, id);
  if (a == NULL)
    return FALSE;
  if (a->latency_event != 0)
    sim_engine_cancel (fluid->engine, a->latency_event);
  if (a->sharing)
    {
      leave_sharing (fluid, a);
      request_flush (fluid);
      reschedule_completion (fluid);
    }
  activity_unlink (fluid, a);
  activity_release (fluid, a);
  return TRUE;
}

void
sim_fluid_set_load_func (SimFluid *fluid, SimLoadFunc func, gpointer user_data)
{
  g_return_if_fail (fluid != NULL);
  fluid->load_func = func;
  fluid->load_data = user_data;
  for (guint id = 0; id < fluid->resources->len; id++)
    get_resource (fluid, id)->quiet = FALSE;
}

void
sim_fluid_quiet_loads (SimFluid *fluid, SimResourceId resource)
{
  g_return_if_fail (fluid != NULL && resource < fluid->resources->len);
  get_resource (fluid, resource)->quiet = TRUE;
}

guint
sim_fluid_n_activities (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0);
  return fluid->n_live;
}

guint64
sim_fluid_n_solves (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0);
  return fluid->n_solves;
}

/* Keeps exactly one completion event pending, at the earliest finish time (none if idle). */
static void
reschedule_completion (SimFluid *fluid)
{
  SimHeapNode *top = sim_heap_peek (fluid->finishing);
  if (fluid->completion_reserved && (top == NULL || top->key != fluid->completion_time))
    fluid->completion_reserved = FALSE; /* as a cancel (join_lone) */
  if (fluid->completion_event != 0 && (top == NULL || top->key != fluid->completion_time))
    {
      sim_engine_cancel (fluid->engine, fluid->completion_event);
      fluid->completion_event = 0;
    }
  if (top != NULL && fluid->completion_event == 0 && !fluid->completion_reserved)
    {
      fluid->completion_time = MAX (top->key, fluid_now (fluid));
      fluid->completion_event = sim_engine_schedule_at (fluid->engine, fluid->completion_time,
                                                        on_completion, fluid, NULL);
    }
}

/* An empty vector from the stack `spares` (storage kept from an earlier flush), or a new
 * one; give it back with put_vec. */
static SimVec
take_vec (SimVec *spares)
{
  if (spares->len > 0)
    return SIM_VEC_AT (spares, SimVec, --spares->len);
  return (SimVec) SIM_VEC_INIT;
}

static void
put_vec (SimVec *spares, SimVec v)
{
  v.len = 0;
  SIM_VEC_PUSH (spares, SimVec, v);
}

/* Re-solves every dirty component once, reschedules the completion event and reports the
 * resources whose usage changed, in id order. Re-entrant: the observer may start activities
 * (and a getter it calls may flush again: each flush takes its own scratch vectors). */
static void
flush (SimFluid *fluid)
{
  if (fluid->dirty_res.len == 0 && fluid->dirty_acts.len == 0)
    return;
  if (fluid->flush_event != 0)
    {
      sim_engine_cancel (fluid->engine, fluid->flush_event);
      fluid->flush_event = 0;
    }
  SimVec res = fluid->dirty_res, acts = fluid->dirty_acts;
  fluid->dirty_res = take_vec (&fluid->spare_res);
  fluid->dirty_acts = take_vec (&fluid->spare_acts);
  SimVec changed = take_vec (&fluid->spare_res);
  fluid->epoch++; /* components visited in this flush carry this stamp */
  for (guint k = 0; k < res.len; k++)
    {
      SimFluidResource *r = get_resource (fluid, SIM_VEC_AT (&res, SimResourceId, k));
      r->dirty = FALSE;
      sim_fluid_solve_from (fluid, r, NULL, &changed);
    }
  for (guint k = 0; k < acts.len; k++)
    {
      SimFluidActivity *a = lookup_activity (fluid, SIM_VEC_AT (&acts, SimActivityId, k));
      if (a != NULL && a->sharing)
        sim_fluid_solve_from (fluid, NULL, a, &changed);
    }
  put_vec (&fluid->spare_res, res);
  put_vec (&fluid->spare_acts, acts);
  reschedule_completion (fluid);
  if (fluid->load_func != NULL)
    {
      /* The ids are distinct (each component is solved once per epoch), so the order does not
       * depend on the sorting algorithm. */
      sim_sort_uints (changed.data, changed.len);
      double now = fluid_now (fluid);
      for (guint k = 0; k < changed.len; k++)
        {
          SimResourceId id = SIM_VEC_AT (&changed, SimResourceId, k);
          const SimFluidResource *r = get_resource (fluid, id);
          if (!r->quiet)
            fluid->load_func (fluid, id, now, r->usage, fluid->load_data);
        }
    }
  put_vec (&fluid->spare_res, changed);
}

/* Creation order (distinct sequence numbers: a total order). */
static int
compare_activity_seqs (const void *a, const void *b)
{
  const SimFluidActivity *x = *(SimFluidActivity *const *) a;
  const SimFluidActivity *y = *(SimFluidActivity *const *) b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Pops from the finish-time heap every activity complete at `now` (see file comment) into
 * `done`, in creation order. */
static void
collect_finished (SimFluid *fluid, double now, SimVec *done)
{
  SimHeapNode *top;
  while ((top = sim_heap_peek (fluid->finishing)) != NULL)
    {
      SimFluidActivity *a
          = (SimFluidActivity *) ((char *) top - G_STRUCT_OFFSET (SimFluidActivity, finish));
      if (top->key > now && sim_fluid_remaining_at (a, now) > DONE_REL_TOL * a->amount)
        break;
      sim_heap_pop (fluid->finishing);
      SIM_VEC_PUSH (done, SimFluidActivity *, a);
    }
  if (done->len > 1) /* one activity, most completions: already in order */
    sim_sort_ptrs (done->data, done->len, compare_activity_seqs);
}

static void
on_completion (SimEngine *engine, gpointer user_data)
{
  SimFluid *fluid = user_data;
  fluid->completion_event = 0;
  (void) engine; /* fluid->engine, whose clock fluid->clock reads */
  double now = *fluid->clock; /* sim_engine_now (engine) */
  /* Engine events do not nest, but a nested use would take its own vector. */
  gboolean own = fluid->done_busy;
  SimVec local = SIM_VEC_INIT;
  SimVec *done = own ? &local : &fluid->done_buf;
  fluid->done_busy = TRUE;
  collect_finished (fluid, now, done);
  if (done->len != 1 || !leave_lone (fluid, SIM_VEC_AT (done, SimFluidActivity *, 0), now))
    {
      for (guint k = 0; k < done->len; k++)
        {
          SimFluidActivity *a = SIM_VEC_AT (done, SimFluidActivity *, k);
          a->remaining = 0.0;
          a->t_last = now;
          leave_sharing (fluid, a);
          activity_unlink (fluid, a); /* its slot is released after the callbacks */
        }
      flush (fluid);
    }
  reschedule_completion (fluid); /* also when nothing was dirty (activities without uses) */
  guint outer_left = fluid->done_left;
  for (guint k = 0; k < done->len; k++)
    {
      SimFluidActivity *a = SIM_VEC_AT (done, SimFluidActivity *, k);
      fluid->done_left = done->len - 1 - k;
      if (a->done != NULL)
        a->done (fluid, a->id, a->user_data);
    }
  fluid->done_left = outer_left;
  for (guint k = 0; k < done->len; k++)
    activity_release (fluid, SIM_VEC_AT (done, SimFluidActivity *, k));
  done->len = 0;
  if (own)
    sim_vec_clear (&local);
  else
    fluid->done_busy = FALSE;
}
