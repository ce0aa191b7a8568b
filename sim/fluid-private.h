/* sim/fluid-private.h — the fluid solver's internal structures, shared by sim/fluid.c
 * (bookkeeping: activities, events, dirty sets) and sim/fluid_solve.c (component search and
 * progressive filling). Not installed, not for use outside sim/fluid*.c.
 *
 * Invariants: a sharing activity appears exactly once in the member list of each resource it
 * uses, at slots[u] for its use u; it is in `finishing` iff its rate is > 0; `remaining` is
 * the amount left at time t_last, and the activity has progressed at `rate` since t_last.
 * Units: capacities and usages in resource units/s, amounts in activity units, times in s.
 */
#pragma once

#include "sim/fluid.h"
#include "sim/heap.h"
#include "sim/slots.h"
#include "sim/vec.h"

typedef struct _SimFluidActivity SimFluidActivity;
typedef struct _SimFluidSolver SimFluidSolver;

/* Activities per block of the activity pool: a single GPU has a few running at once, and
 * each block is zeroed when taken (64 × 248 B; 512 a block zeroed 127 kB per fluid, 2 % of
 * a single-GPU sweep scenario's instructions). Slots are handed out in the same order
 * whatever the block length. */
#define SIM_FLUID_ACT_BLOCK 64
/* Resources per block of the resource store: a 131,072-GPU cluster has about a million
 * (4,096 blocks); a single GPU a dozen, and each block is zeroed when taken (with 4,096 a
 * block, ~0.5 MB zeroed per fluid was 10 % of a single-GPU sweep scenario's instructions). */
#define SIM_FLUID_RES_BLOCK 256

/* One entry of a resource's member list: the activity and the index of its use. */
typedef struct
{
  SimFluidActivity *act;
  guint use;
} SimFluidMember;

typedef struct
{
  SimResourceId id;
  gboolean quiet;  /* not reported to the load observer (sim_fluid_quiet_loads); beside
                    * the id, in what was padding */
  char *name;
  double capacity; /* units/s, > 0 */
  double usage;    /* Σ weight · rate after the last solve of its component */
  SimVec members;  /* SimFluidMember of the sharing activities that use it (owned) */
  gboolean dirty;  /* listed in SimFluid.dirty_res */
  guint visit;     /* epoch stamp of the last component search that reached it */
  /* Progressive-filling scratch. */
  SimHeapNode node; /* key = cap_left / w_unfixed (the level λ that saturates it) */
  double cap_left, w_unfixed, w_total;
  guint n_unfixed;
} SimFluidResource;

/* Uses stored inside the activity itself (no allocation); more go to the heap. Kernels use
 * 1–2 resources and flows 1–4 links in the shipped topologies. */
#define SIM_FLUID_INLINE_USES 4

struct _SimFluidActivity
{
  SimFluid *fluid;
  SimActivityId id; /* public id: (generation << 32) | (pool slot + 1) */
  guint64 seq;      /* creation order, from 1: the tie-break of every ordering */
  guint32 gen;      /* bumped at each reuse of the pool slot, so stale ids do not match */
  guint pool_slot;  /* its index in the pool */
  gboolean live;    /* started, not yet finished or cancelled: lookups by id find it */
  double amount, remaining, rate, rate_bound, t_last;
  SimUse *uses; /* merged: each resource at most once; points to inline_uses or the heap */
  guint n_uses;
  guint *slots; /* slots[u]: index in the member list of uses[u].resource */
  SimUse inline_uses[SIM_FLUID_INLINE_USES];
  guint inline_slots[SIM_FLUID_INLINE_USES];
  SimActivityDoneFunc done;
  gpointer user_data;
  SimEventId latency_event; /* 0 once the latency is over */
  gboolean sharing;         /* past its latency, not finished */
  SimHeapNode finish;       /* key = finish time (s), tie = id */
  guint visit;              /* epoch stamp, as for resources */
  gboolean fixed;           /* progressive-filling scratch */
};

struct _SimFluid
{
  SimEngine *engine;
  const double *clock; /* sim_engine_clock (engine) */
  GPtrArray *resources;   /* SimFluidResource*, index = id (into res_store) */
  SimSlots res_store;     /* the SimFluidResource structs, in blocks (no malloc each), owned */
  SimFluidNamer namer;    /* names unnamed resources on demand (sim_fluid_set_namer) */
  gpointer namer_data;    /* owned */
  GDestroyNotify namer_destroy;
  /* Activity pool (sim/slots.h): blocks of SIM_FLUID_ACT_BLOCK activities with stable
   * addresses for the intrusive heaps and member lists; an id names its slot and generation,
   * so lookup and cancel need no hashing (as in sim/engine.c). */
  SimSlots acts;          /* SimFluidActivity slots, owned */
  guint n_live;           /* live activities (sim_fluid_n_activities) */
  guint64 next_seq;
  SimVec spare_res;      /* empty SimVecs of SimResourceId (storage kept), reused by flush */
  SimVec spare_acts;     /* empty SimVecs of SimActivityId (storage kept), reused by flush */
  SimVec done_buf;       /* SimFluidActivity* scratch of on_completion */
  gboolean done_busy;    /* done_buf is in use (a nested completion takes its own) */
  guint done_left;       /* in a done callback of on_completion: the callbacks of its batch
                          * still to run after it (sim_fluid_run_lone needs none) */
  SimHeap *finishing; /* sharing activities by finish time */
  SimEventId completion_event, flush_event;
  double completion_time;
  /* a lone join's completion event, its sequence number reserved (sim_engine_reserve) and
   * not yet scheduled or fired in place (sim/fluid.c join_lone); completion_time is its time */
  gboolean completion_reserved;
  guint64 completion_seq;
  SimVec dirty_res;  /* SimResourceId whose component must be re-solved */
  SimVec dirty_acts; /* SimActivityId of joined activities without uses */
  SimVec lone_changed; /* SimResourceId scratch of the lone join and leave (sim/fluid.c) */
  gboolean no_lone;    /* tests only: every join and leave through the dirty lists */
  guint epoch;
  guint64 n_solves;
  SimLoadFunc load_func;
  gpointer load_data;
  SimFluidSolver *solver;
  SimResourceId *fold_canon; /* sim_fluid_set_fold, or NULL */
  double *fold_scale;
  guint n_fold;              /* resources the fold covers */
};

SimFluidSolver *sim_fluid_solver_new (void);
void sim_fluid_solver_free (SimFluidSolver *solver);

/* Remaining amount of a sharing activity at time `now` (>= t_last), without changing it. */
double sim_fluid_remaining_at (const SimFluidActivity *a, double now);

/* Re-solves the connected component that contains `seed_res` (or `seed_act` when seed_res is
 * NULL), unless this flush's epoch already visited it: advances its activities to now, sets
 * their rates by progressive filling, re-keys them in `finishing`, updates resource usages
 * and appends the id (SimResourceId) of every resource whose usage changed to `changed`. */
void sim_fluid_solve_from (SimFluid *fluid, SimFluidResource *seed_res, SimFluidActivity *seed_act,
                           SimVec *changed);
