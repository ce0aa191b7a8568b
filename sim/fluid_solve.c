/* sim/fluid_solve.c — component search and weighted progressive filling for sim/fluid.c.
 *
 * Progressive filling (Bertsekas & Gallager, "Data Networks" 2nd ed. §6.5.2; SimGrid LMM,
 * src/kernel/lmm/System.hpp, with every sharing penalty 1): all unfixed rates equal one level
 * λ. Resource j saturates at λ_j = c'_j / W_j, where c'_j is its capacity minus the use of
 * already fixed activities and W_j the sum of the unfixed activities' weights on it; an
 * activity saturates at its rate bound. Repeatedly the smallest saturation level λ* is
 * taken and the activities it limits are fixed at λ*. Fixing activity i (weight w on
 * resource k) turns λ_k into (c'_k − w λ*) / (W_k − w) ≥ λ_k, because λ* ≤ λ_k = c'_k / W_k;
 * levels only rise, so a min-heap of λ_j with re-keying finds each next bottleneck in
 * O(log R). The result satisfies Σ_i w_ij r_i ≤ c_j up to rounding and is max-min fair
 * (no rate can rise without lowering one that is no larger).
 *
 * Shortcut: an idle resource and an activity alone on its resources (most solves) skip the
 * search and the heap, with the same arithmetic (solve_trivial).
 *
 * Invariants: touches only the component of its seed (sim/fluid.c file comment); results do
 * not depend on anything outside it, and the traversal order depends only on the history of
 * starts and completions, so identical inputs give identical rates.
 * Units: capacities in units/s, rates in activity units/s, times in s.
 */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/fluid-private.h"

#include <math.h>
#include <stdlib.h>

struct _SimFluidSolver
{
  SimHeap *fill;  /* resources of the component still limiting someone, by λ_j */
  SimVec acts;    /* SimFluidActivity* of the component */
  SimVec res;     /* SimFluidResource* of the component (also the search queue) */
  SimVec bounded; /* SimFluidActivity* with a finite bound or no uses, by (bound, seq) */
};

SimFluidSolver *
sim_fluid_solver_new (void)
{
  SimFluidSolver *s = g_new0 (SimFluidSolver, 1);
  s->fill = sim_heap_new ();
  return s;
}

void
sim_fluid_solver_free (SimFluidSolver *solver)
{
  if (solver == NULL)
    return;
  sim_heap_free (solver->fill);
  sim_vec_clear (&solver->acts);
  sim_vec_clear (&solver->res);
  sim_vec_clear (&solver->bounded);
  g_free (solver);
}

double
sim_fluid_remaining_at (const SimFluidActivity *a, double now)
{
  double dt = now - a->t_last;
  if (dt <= 0.0)
    return a->remaining;
  if (isinf (a->rate))
    return 0.0;
  return MAX (0.0, a->remaining - a->rate * dt);
}

static SimFluidResource *
resource_of (SimFluid *fluid, const SimUse *use)
{
  return g_ptr_array_index (fluid->resources, use->resource);
}

static void
visit_activity (SimFluid *fluid, SimFluidSolver *s, SimFluidActivity *a)
{
  if (a->visit == fluid->epoch)
    return;
  a->visit = fluid->epoch;
  SIM_VEC_PUSH (&s->acts, SimFluidActivity *, a);
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = resource_of (fluid, &a->uses[u]);
      if (r->visit != fluid->epoch)
        {
          r->visit = fluid->epoch;
          SIM_VEC_PUSH (&s->res, SimFluidResource *, r);
        }
    }
}

/* Breadth-first search over resource → member activities → their resources; s->res grows
 * while it is scanned, so it is its own queue. */
static void
collect_component (SimFluid *fluid, SimFluidSolver *s, SimFluidResource *seed_res,
                   SimFluidActivity *seed_act)
{
  s->acts.len = 0;
  s->res.len = 0;
  if (seed_res != NULL)
    {
      seed_res->visit = fluid->epoch;
      SIM_VEC_PUSH (&s->res, SimFluidResource *, seed_res);
    }
  else
    visit_activity (fluid, s, seed_act);
  for (guint k = 0; k < s->res.len; k++)
    {
      SimFluidResource *r = SIM_VEC_AT (&s->res, SimFluidResource *, k);
      for (guint m = 0; m < r->members.len; m++)
        visit_activity (fluid, s, SIM_VEC_AT (&r->members, SimFluidMember, m).act);
    }
}

/* (bound, creation order): a total order, so the result does not depend on the sort. */
static int
compare_bounds (const void *pa, const void *pb)
{
  const SimFluidActivity *a = *(SimFluidActivity *const *) pa;
  const SimFluidActivity *b = *(SimFluidActivity *const *) pb;
  if (a->rate_bound != b->rate_bound)
    return a->rate_bound < b->rate_bound ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Resets the filling state: full capacities, weight sums, the λ heap and the bound list. */
static void
fill_init (SimFluidSolver *s)
{
  for (guint k = 0; k < s->res.len; k++)
    {
      SimFluidResource *r = SIM_VEC_AT (&s->res, SimFluidResource *, k);
      r->cap_left = r->capacity;
      r->w_unfixed = 0.0;
      r->n_unfixed = 0;
    }
  s->bounded.len = 0;
  for (guint k = 0; k < s->acts.len; k++)
    {
      SimFluidActivity *a = SIM_VEC_AT (&s->acts, SimFluidActivity *, k);
      a->fixed = FALSE;
      for (guint u = 0; u < a->n_uses; u++)
        {
          SimFluidResource *r = resource_of (a->fluid, &a->uses[u]);
          r->w_unfixed += a->uses[u].weight;
          r->n_unfixed++;
        }
      if (isfinite (a->rate_bound) || a->n_uses == 0)
        SIM_VEC_PUSH (&s->bounded, SimFluidActivity *, a);
    }
  sim_sort_ptrs (s->bounded.data, s->bounded.len, compare_bounds);
  for (guint k = 0; k < s->res.len; k++)
    {
      SimFluidResource *r = SIM_VEC_AT (&s->res, SimFluidResource *, k);
      r->w_total = r->w_unfixed;
      if (r->n_unfixed == 0)
        continue;
      r->node.key = r->cap_left / r->w_unfixed;
      r->node.tie = r->id;
      sim_heap_push (s->fill, &r->node);
    }
}

/* W_j after many subtractions can lose its last digits (or reach 0 with members left when
 * weights differ by many orders of magnitude); then it is summed again from scratch. */
static double
unfixed_weight (const SimFluidResource *r)
{
  if (r->w_unfixed > 1e-9 * r->w_total)
    return r->w_unfixed;
  double w = 0.0;
  for (guint m = 0; m < r->members.len; m++)
    {
      const SimFluidMember *mb = &SIM_VEC_AT (&r->members, SimFluidMember, m);
      if (!mb->act->fixed)
        w += mb->act->uses[mb->use].weight;
    }
  return w;
}

/* Fixes activity a at rate λ and re-keys the levels of the resources it uses. */
static void
fix_activity (SimFluidSolver *s, SimFluidActivity *a, double lambda)
{
  a->fixed = TRUE;
  a->rate = lambda;
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = resource_of (a->fluid, &a->uses[u]);
      r->cap_left -= a->uses[u].weight * lambda;
      r->w_unfixed -= a->uses[u].weight;
      r->n_unfixed--;
      if (r->node.index == SIM_HEAP_NONE)
        continue;
      if (r->n_unfixed == 0)
        {
          sim_heap_remove (s->fill, &r->node);
          continue;
        }
      r->w_unfixed = unfixed_weight (r);
      r->node.key = MAX (r->cap_left, 0.0) / r->w_unfixed;
      sim_heap_update (s->fill, &r->node);
    }
}

/* Progressive filling over the collected component (see file comment). */
static void
fill (SimFluidSolver *s)
{
  fill_init (s);
  guint bi = 0;
  for (;;)
    {
      while (bi < s->bounded.len
             && SIM_VEC_AT (&s->bounded, SimFluidActivity *, bi)->fixed)
        bi++;
      SimHeapNode *top = sim_heap_peek (s->fill);
      SimFluidActivity *b = bi < s->bounded.len ? SIM_VEC_AT (&s->bounded, SimFluidActivity *, bi) : NULL;
      if (b != NULL && (top == NULL || b->rate_bound <= top->key))
        {
          fix_activity (s, b, b->rate_bound); /* INFINITY only for activities without uses */
          continue;
        }
      if (top == NULL)
        break;
      sim_heap_pop (s->fill);
      SimFluidResource *r
          = (SimFluidResource *) ((char *) top - G_STRUCT_OFFSET (SimFluidResource, node));
      double lambda = MAX (top->key, 0.0);
      for (guint m = 0; m < r->members.len; m++)
        {
          SimFluidActivity *a = SIM_VEC_AT (&r->members, SimFluidMember, m).act;
          if (!a->fixed)
            fix_activity (s, a, lambda);
        }
    }
}

/* Re-keys activity a by its finish time under its new rate. */
static void
update_finish_time (SimFluid *fluid, SimFluidActivity *a, double now)
{
  if (!(a->rate > 0.0))
    {
      g_warning ("activity %" G_GUINT64_FORMAT " got rate 0 and would never finish", a->id);
      if (a->finish.index != SIM_HEAP_NONE)
        sim_heap_remove (fluid->finishing, &a->finish);
      return;
    }
  a->finish.key = isinf (a->rate) ? now : now + a->remaining / a->rate;
  if (a->finish.index == SIM_HEAP_NONE)
    sim_heap_push (fluid->finishing, &a->finish);
  else
    sim_heap_update (fluid->finishing, &a->finish);
}

/* Re-keys each activity by its finish time under the new rates. */
static void
update_finish_times (SimFluid *fluid, SimFluidSolver *s, double now)
{
  for (guint k = 0; k < s->acts.len; k++)
    update_finish_time (fluid, SIM_VEC_AT (&s->acts, SimFluidActivity *, k), now);
}

/* Recomputes Σ weight · rate of each resource; records those that changed. */
static void
update_usages (SimFluidSolver *s, SimVec *changed)
{
  for (guint k = 0; k < s->res.len; k++)
    {
      SimFluidResource *r = SIM_VEC_AT (&s->res, SimFluidResource *, k);
      double usage = 0.0;
      for (guint m = 0; m < r->members.len; m++)
        {
          const SimFluidMember *mb = &SIM_VEC_AT (&r->members, SimFluidMember, m);
          usage += mb->act->uses[mb->use].weight * mb->act->rate;
        }
      if (usage != r->usage)
        {
          r->usage = usage;
          SIM_VEC_PUSH (changed, SimResourceId, r->id);
        }
    }
}

/* Sets r's usage to `usage`, recording r in `changed` when it differs. */
static void
set_usage (SimFluidResource *r, double usage, SimVec *changed)
{
  if (usage != r->usage)
    {
      r->usage = usage;
      SIM_VEC_PUSH (changed, SimResourceId, r->id);
    }
}

/* The two components that make up most solves (three in four on the 8-GPU ZeRO-3 bench),
 * solved without the search and the filling machinery, with the same arithmetic, so the
 * same bits, as the general path:
 * - a resource nobody uses: usage Σ over no members = 0;
 * - one activity a alone on every resource it uses: the general filling starts every
 *   resource j at level c_j / w_j (cap_left = c_j, W_j = 0 + w_j = w_j) and fixes a once, at
 *   its bound if that is ≤ the lowest level, else at max(lowest level, 0); each usage is then
 *   0 + w_j · r = w_j · r.
 * TRUE if `seed` was such a component and is solved (visit stamps set, `changed` appended
 * in the general path's order: the seed, then a's other resources in use order). */
static gboolean
solve_trivial (SimFluid *fluid, SimFluidResource *seed, double now, SimVec *changed)
{
  if (seed->members.len == 0)
    {
      seed->visit = fluid->epoch;
      set_usage (seed, 0.0, changed);
      return TRUE;
    }
  if (seed->members.len != 1)
    return FALSE;
  SimFluidActivity *a = SIM_VEC_AT (&seed->members, SimFluidMember, 0).act;
  double level = INFINITY;
  for (guint u = 0; u < a->n_uses; u++)
    {
      const SimFluidResource *r = resource_of (fluid, &a->uses[u]);
      if (r->members.len != 1)
        return FALSE;
      level = MIN (level, r->capacity / a->uses[u].weight);
    }
  a->visit = fluid->epoch;
  a->remaining = sim_fluid_remaining_at (a, now);
  a->t_last = now;
  a->rate = isfinite (a->rate_bound) && a->rate_bound <= level ? a->rate_bound : MAX (level, 0.0);
  update_finish_time (fluid, a, now);
  guint seed_use = SIM_VEC_AT (&seed->members, SimFluidMember, 0).use;
  set_usage (seed, 0.0 + a->uses[seed_use].weight * a->rate, changed);
  for (guint u = 0; u < a->n_uses; u++)
    {
      SimFluidResource *r = resource_of (fluid, &a->uses[u]);
      r->visit = fluid->epoch;
      if (u != seed_use)
        set_usage (r, 0.0 + a->uses[u].weight * a->rate, changed);
    }
  return TRUE;
}

/* The general solve of sim_fluid_solve_from: the component's search, filling and updates.
 * Out of line, so the trivial components (most solves) do not pay its register saves. */
G_GNUC_NO_INLINE static void
solve_component (SimFluid *fluid, SimFluidResource *seed_res, SimFluidActivity *seed_act,
                 double now, SimVec *changed)
{
  SimFluidSolver *s = fluid->solver;
  collect_component (fluid, s, seed_res, seed_act);
  for (guint k = 0; k < s->acts.len; k++)
    {
      SimFluidActivity *a = SIM_VEC_AT (&s->acts, SimFluidActivity *, k);
      a->remaining = sim_fluid_remaining_at (a, now);
      a->t_last = now;
    }
  fill (s);
  update_finish_times (fluid, s, now);
  update_usages (s, changed);
}

void
sim_fluid_solve_from (SimFluid *fluid, SimFluidResource *seed_res, SimFluidActivity *seed_act,
                      SimVec *changed)
{
  guint visited = seed_res != NULL ? seed_res->visit : seed_act->visit;
  if (visited == fluid->epoch)
    return;
  double now = *fluid->clock; /* sim_engine_now */
  fluid->n_solves++;
  if (seed_res != NULL && solve_trivial (fluid, seed_res, now, changed))
    return;
  solve_component (fluid, seed_res, seed_act, now, changed);
}
