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
 * n flows starting at one instant cost one solve, not n. Getters flush first, so they always
 * see the solved state. Completions re-solve at once, before their done callbacks run.
 *
 * Completion: a min-heap of finish times t_last + remaining/r feeds exactly one pending
 * "next completion" engine event. When it fires, every activity at the top of the heap whose
 * finish time is ≤ now, or whose remaining is ≤ 1e-9 × amount, completes; they are removed
 * in id order, the touched components are re-solved once, and only then are their done
 * callbacks called in id order (callbacks may start or cancel activities; they must not free
 * the fluid). The load observer is called after each flush for every resource whose usage
 * changed, in resource-id order, with exactly 0 when a resource becomes idle.
 * Getters (rate, usage) flush pending changes first, so the load observer may be called from
 * inside them.
 * Layout: bookkeeping here; component search and progressive filling in sim/fluid_solve.c;
 * shared structures in sim/fluid-private.h.
 * Units: capacity in resource units/s, amount in activity units, time in s.
 */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/fluid.h"
#include "sim/fluid-private.h"

#include <math.h>
#include <string.h>

/* Relative completion tolerance (sim/fluid.h). */
#define DONE_REL_TOL 1e-9

static void flush (SimFluid *fluid);
static void reschedule_completion (SimFluid *fluid);

static double
fluid_now (const SimFluid *fluid)
{
  return sim_engine_now (fluid->engine);
}

static void
activity_free (gpointer data)
{
  SimFluidActivity *a = data;
  g_free (a->uses);
  g_free (a->slots);
  g_free (a);
}

static void
resource_free (gpointer data)
{
  SimFluidResource *r = data;
  g_free (r->name);
  g_array_unref (r->members);
  g_free (r);
}

SimFluid *
sim_fluid_new (SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, NULL);
  SimFluid *fluid = g_new0 (SimFluid, 1);
  fluid->engine = engine;
  fluid->next_id = 1;
  fluid->epoch = 1;
  fluid->resources = g_ptr_array_new_with_free_func (resource_free);
  fluid->activities = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, activity_free);
  fluid->finishing = sim_heap_new ();
  fluid->dirty_res = g_array_new (FALSE, FALSE, sizeof (SimResourceId));
  fluid->dirty_acts = g_array_new (FALSE, FALSE, sizeof (SimActivityId));
  fluid->solver = sim_fluid_solver_new ();
  return fluid;
}

/* Cancels an activity's latency event so the engine holds no pointer into a freed fluid. */
static void
cancel_latency_cb (gpointer key, gpointer value, gpointer user_data)
{
  (void) key;
  SimFluidActivity *a = value;
  if (a->latency_event != 0)
    sim_engine_cancel (user_data, a->latency_event);
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
  /* Iterating the table is harmless here: cancelling in any order has the same effect. */
  g_hash_table_foreach (fluid->activities, cancel_latency_cb, fluid->engine);
  sim_heap_free (fluid->finishing);
  g_hash_table_unref (fluid->activities);
  g_ptr_array_unref (fluid->resources);
  g_array_unref (fluid->dirty_res);
  g_array_unref (fluid->dirty_acts);
  sim_fluid_solver_free (fluid->solver);
  g_free (fluid);
}

SimResourceId
sim_fluid_add_resource (SimFluid *fluid, const char *name, double capacity)
{
  g_return_val_if_fail (fluid != NULL, 0);
  g_return_val_if_fail (name != NULL, 0);
  g_return_val_if_fail (isfinite (capacity) && capacity > 0.0, 0);
  SimFluidResource *r = g_new0 (SimFluidResource, 1);
  r->id = fluid->resources->len;
  r->name = g_strdup (name);
  r->capacity = capacity;
  r->members = g_array_new (FALSE, FALSE, sizeof (SimFluidMember));
  r->node.index = SIM_HEAP_NONE;
  g_ptr_array_add (fluid->resources, r);
  return r->id;
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
  return get_resource (fluid, resource)->name;
}

double
sim_fluid_resource_capacity (const SimFluid *fluid, SimResourceId resource)
{
  g_return_val_if_fail (fluid != NULL && resource < fluid->resources->len, 0.0);
  return get_resource (fluid, resource)->capacity;
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
  g_array_append_val (fluid->dirty_res, r->id);
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

/* Puts an activity into the sharing set: it joins each resource's member list. */
static void
join_sharing (SimFluid *fluid, SimFluidActivity *a)
{
  a->sharing = TRUE;
  a->t_last = fluid_now (fluid);
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = get_resource (fluid, a->uses[u].resource);
      SimFluidMember m = { a, u };
      a->slots[u] = r->members->len;
      g_array_append_val (r->members, m);
      mark_resource_dirty (fluid, r);
    }
  if (a->n_uses == 0)
    g_array_append_val (fluid->dirty_acts, a->id);
  request_flush (fluid);
}

/* Takes a sharing activity out of every resource (swap-remove, fixing the moved member's
 * slot) and out of the finish-time heap; the touched resources become dirty. */
static void
leave_sharing (SimFluid *fluid, SimFluidActivity *a)
{
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = get_resource (fluid, a->uses[u].resource);
      guint slot = a->slots[u], last = r->members->len - 1;
      if (slot != last)
        {
          SimFluidMember moved = g_array_index (r->members, SimFluidMember, last);
          g_array_index (r->members, SimFluidMember, slot) = moved;
          moved.act->slots[moved.use] = slot;
        }
      g_array_set_size (r->members, last);
      mark_resource_dirty (fluid, r);
    }
  if (a->finish.index != SIM_HEAP_NONE)
    sim_heap_remove (fluid->finishing, &a->finish);
  a->sharing = FALSE;
}

static void
on_latency_end (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  SimFluidActivity *a = user_data;
  a->latency_event = 0;
  join_sharing (a->fluid, a);
}

/* Copies the caller's uses into `a`, merging repeats of one resource (their weights add) so
 * each resource appears at most once per activity. FALSE if a resource id is unknown or a
 * weight is not finite and > 0. */
static gboolean
copy_uses (const SimFluid *fluid, const SimUse *uses, guint n_uses, SimFluidActivity *a)
{
  a->uses = g_new (SimUse, MAX (n_uses, 1));
  a->n_uses = 0;
  for (guint k = 0; k < n_uses; k++)
    {
      if (uses[k].resource >= fluid->resources->len || !isfinite (uses[k].weight)
          || uses[k].weight <= 0.0)
        return FALSE;
      guint u = 0;
      while (u < a->n_uses && a->uses[u].resource != uses[k].resource)
        u++;
      if (u == a->n_uses)
        a->uses[a->n_uses++] = uses[k];
      else
        a->uses[u].weight += uses[k].weight;
    }
  a->slots = g_new (guint, MAX (a->n_uses, 1));
  return TRUE;
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
  SimFluidActivity *a = g_new0 (SimFluidActivity, 1);
  if (!copy_uses (fluid, uses, n_uses, a))
    {
      activity_free (a);
      g_return_val_if_reached (0); /* a use names an unknown resource or a weight <= 0 */
    }
  a->fluid = fluid;
  a->id = fluid->next_id++;
  a->amount = amount;
  a->remaining = amount;
  a->rate_bound = rate_bound >= G_MAXDOUBLE ? INFINITY : rate_bound;
  a->done = done;
  a->user_data = user_data;
  a->finish.index = SIM_HEAP_NONE;
  a->finish.tie = a->id;
  g_hash_table_insert (fluid->activities, &a->id, a);
  if (latency > 0.0)
    a->latency_event = sim_engine_schedule_after (fluid->engine, latency, on_latency_end, a, NULL);
  else
    join_sharing (fluid, a);
  return a->id;
}

double
sim_fluid_activity_rate (const SimFluid *fluid, SimActivityId id)
{
  g_return_val_if_fail (fluid != NULL, -1.0);
  flush ((SimFluid *) fluid); /* logically const: only brings the cached solution up to date */
  const SimFluidActivity *a = g_hash_table_lookup (fluid->activities, &id);
  if (a == NULL)
    return -1.0;
  return a->sharing ? a->rate : 0.0;
}

gboolean
sim_fluid_cancel (SimFluid *fluid, SimActivityId id)
{
  g_return_val_if_fail (fluid != NULL, FALSE);
  SimFluidActivity *a = g_hash_table_lookup (fluid->activities, &id);
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
  g_hash_table_remove (fluid->activities, &id);
  return TRUE;
}

void
sim_fluid_set_load_func (SimFluid *fluid, SimLoadFunc func, gpointer user_data)
{
  g_return_if_fail (fluid != NULL);
  fluid->load_func = func;
  fluid->load_data = user_data;
}

guint
sim_fluid_n_activities (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0);
  return g_hash_table_size (fluid->activities);
}

guint64
sim_fluid_n_solves (const SimFluid *fluid)
{
  g_return_val_if_fail (fluid != NULL, 0);
  return fluid->n_solves;
}

static void on_completion (SimEngine *engine, gpointer user_data);

/* Keeps exactly one completion event pending, at the earliest finish time (none if idle). */
static void
reschedule_completion (SimFluid *fluid)
{
  SimHeapNode *top = sim_heap_peek (fluid->finishing);
  if (fluid->completion_event != 0 && (top == NULL || top->key != fluid->completion_time))
    {
      sim_engine_cancel (fluid->engine, fluid->completion_event);
      fluid->completion_event = 0;
    }
  if (top != NULL && fluid->completion_event == 0)
    {
      fluid->completion_time = MAX (top->key, fluid_now (fluid));
      fluid->completion_event = sim_engine_schedule_at (fluid->engine, fluid->completion_time,
                                                        on_completion, fluid, NULL);
    }
}

static gint
compare_resource_ids (gconstpointer a, gconstpointer b)
{
  SimResourceId x = *(const SimResourceId *) a, y = *(const SimResourceId *) b;
  return x < y ? -1 : x > y;
}

/* Re-solves every dirty component once, reschedules the completion event and reports the
 * resources whose usage changed, in id order. Re-entrant: the observer may start activities. */
static void
flush (SimFluid *fluid)
{
  if (fluid->dirty_res->len == 0 && fluid->dirty_acts->len == 0)
    return;
  if (fluid->flush_event != 0)
    {
      sim_engine_cancel (fluid->engine, fluid->flush_event);
      fluid->flush_event = 0;
    }
  g_autoptr (GArray) res = g_steal_pointer (&fluid->dirty_res);
  g_autoptr (GArray) acts = g_steal_pointer (&fluid->dirty_acts);
  fluid->dirty_res = g_array_new (FALSE, FALSE, sizeof (SimResourceId));
  fluid->dirty_acts = g_array_new (FALSE, FALSE, sizeof (SimActivityId));
  g_autoptr (GArray) changed = g_array_new (FALSE, FALSE, sizeof (SimResourceId));
  fluid->epoch++; /* components visited in this flush carry this stamp */
  for (guint k = 0; k < res->len; k++)
    {
      SimFluidResource *r = get_resource (fluid, g_array_index (res, SimResourceId, k));
      r->dirty = FALSE;
      sim_fluid_solve_from (fluid, r, NULL, changed);
    }
  for (guint k = 0; k < acts->len; k++)
    {
      SimFluidActivity *a
          = g_hash_table_lookup (fluid->activities, &g_array_index (acts, SimActivityId, k));
      if (a != NULL && a->sharing)
        sim_fluid_solve_from (fluid, NULL, a, changed);
    }
  reschedule_completion (fluid);
  if (fluid->load_func == NULL)
    return;
  g_array_sort (changed, compare_resource_ids);
  double now = fluid_now (fluid);
  for (guint k = 0; k < changed->len; k++)
    {
      SimResourceId id = g_array_index (changed, SimResourceId, k);
      fluid->load_func (fluid, id, now, get_resource (fluid, id)->usage, fluid->load_data);
    }
}

static gint
compare_activity_ids (gconstpointer a, gconstpointer b)
{
  const SimFluidActivity *x = *(SimFluidActivity *const *) a;
  const SimFluidActivity *y = *(SimFluidActivity *const *) b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Pops from the finish-time heap every activity complete at `now` (see file comment). */
static GPtrArray *
collect_finished (SimFluid *fluid, double now)
{
  GPtrArray *done = g_ptr_array_new_with_free_func (activity_free);
  SimHeapNode *top;
  while ((top = sim_heap_peek (fluid->finishing)) != NULL)
    {
      SimFluidActivity *a
          = (SimFluidActivity *) ((char *) top - G_STRUCT_OFFSET (SimFluidActivity, finish));
      if (top->key > now && sim_fluid_remaining_at (a, now) > DONE_REL_TOL * a->amount)
        break;
      sim_heap_pop (fluid->finishing);
      g_ptr_array_add (done, a);
    }
  g_ptr_array_sort (done, compare_activity_ids);
  return done;
}

static void
on_completion (SimEngine *engine, gpointer user_data)
{
  SimFluid *fluid = user_data;
  fluid->completion_event = 0;
  double now = sim_engine_now (engine);
  g_autoptr (GPtrArray) done = collect_finished (fluid, now);
  for (guint k = 0; k < done->len; k++)
    {
      SimFluidActivity *a = g_ptr_array_index (done, k);
      a->remaining = 0.0;
      a->t_last = now;
      leave_sharing (fluid, a);
      g_hash_table_steal (fluid->activities, &a->id); /* `done` frees it after the callback */
    }
  flush (fluid);
  reschedule_completion (fluid); /* also when nothing was dirty (activities without uses) */
  for (guint k = 0; k < done->len; k++)
    {
      SimFluidActivity *a = g_ptr_array_index (done, k);
      if (a->done != NULL)
        a->done (fluid, a->id, a->user_data);
    }
}
