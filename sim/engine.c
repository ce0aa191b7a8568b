/* sim/engine.c — the discrete-event engine: a clock and a priority queue of events.
 *
 * Structure: pending events live in an intrusive binary min-heap (sim/heap.c) keyed by
 * (time, insertion sequence), so same-time events fire in scheduling order (DESIGN §6).
 * Events sit in a slot table; an id names its slot plus the slot's generation, so cancel
 * finds the event in O(1) without hashing, and a stale id (fired, cancelled, slot reused)
 * no longer matches. The event leaves the heap in O(log n) through its stored heap index.
 * An event scheduled before every pending one (in a run, usually the next to fire) waits in
 * a one-event lane instead of the heap, and goes into the heap only if an earlier one comes
 * (enqueue): no heap push and pop for it. sim_engine_pending() is the heap's size plus the
 * lane's.
 *
 * Invariants: an event is pending (in the lane or the heap) iff its slot holds its id; the
 * lane's event comes before every event of the heap; the clock never decreases;
 * every destroy notifier runs exactly once (after firing, at cancel, or at free).
 * Re-entrancy: callbacks may schedule, cancel (a fired or firing event cannot be cancelled)
 * and stop; they must not call sim_engine_run*() (nested runs are refused) nor free the engine.
 * Units: seconds. Reference: Banks et al., "Discrete-Event System Simulation", 5th ed., §3.1
 * (event-scheduling world view).
 */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/engine.h"
#include "sim/heap.h"
#include "sim/slots.h"

#include <math.h>

/* Events live in a generational slot pool (sim/slots.h) of EVENT_BLOCK-slot blocks (stable
 * addresses for the intrusive heap, no malloc per event). 128 a block: a single GPU's run
 * has a few events pending, and each block is zeroed when taken (1,024 zeroed 64 kB per
 * engine, 1 % of a single-GPU sweep scenario's instructions). */
#define EVENT_BLOCK 128

typedef struct
{
  SimHeapNode node; /* key = time (s), tie = insertion sequence */
  SimEventId id;    /* 0 while the slot is free */
  guint32 gen;      /* bumped at each reuse of the slot, so stale ids do not match */
  SimEventFunc func;
  gpointer user_data;
  GDestroyNotify destroy;
} SimEvent;

struct _SimEngine
{
  double now;
  guint64 next_seq;
  guint64 fired;
  SimHeap *queue;
  SimEvent *lane; /* a pending event earlier than every one in `queue`, kept out of it, or NULL */
  SimSlots events; /* SimEvent slots, owned */
  gboolean running;
  gboolean stop_requested;
  double t_end; /* the running loop's horizon (s) */
};

/* An id names its slot and generation (sim/slots.h): found without hashing. */
static SimEvent *
lookup (const SimEngine *engine, SimEventId id)
{
  guint slot;
  if (!sim_slot_of_id (&engine->events, id, &slot))
    return NULL;
  SimEvent *ev = sim_slots_at (&engine->events, slot);
  return ev->id == id ? ev : NULL;
}

static SimEvent *
alloc_event (SimEngine *engine)
{
  guint slot;
  SimEvent *ev = sim_slots_take (&engine->events, &slot);
  g_return_val_if_fail (ev != NULL, NULL);
  ev->gen++;
  ev->id = sim_slot_id (ev->gen, slot);
  ev->node.index = SIM_HEAP_NONE;
  return ev;
}

/* Frees the slot of an event already out of the heap, then runs its destroy notifier (the
 * slot may be reused by the notifier: nothing of it is read afterwards). */
static void
release_event (SimEngine *engine, SimEvent *ev)
{
  guint slot = (guint32) ev->id - 1;
  GDestroyNotify destroy = ev->destroy;
  gpointer data = ev->user_data;
  ev->id = 0;
  sim_slots_give (&engine->events, slot);
  if (destroy != NULL)
    destroy (data);
}

/* (time, sequence) order: a before b. */
static inline gboolean
node_before (const SimHeapNode *a, const SimHeapNode *b)
{
  return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

/* Queues `ev`: in the lane when it comes before every pending event (usually the next event
 * of a run: then it never enters the heap), else in the heap. */
static inline void
enqueue (SimEngine *engine, SimEvent *ev)
{
  ev->node.index = SIM_HEAP_NONE;
  if (engine->lane == NULL)
    {
      const SimHeapNode *top = sim_heap_peek (engine->queue);
      if (top == NULL || node_before (&ev->node, top))
        {
          engine->lane = ev;
          return;
        }
    }
  else if (node_before (&ev->node, &engine->lane->node))
    {
      sim_heap_push (engine->queue, &engine->lane->node);
      engine->lane = ev;
      return;
    }
  sim_heap_push (engine->queue, &ev->node);
}

/* The earliest pending event, or NULL. */
static inline const SimHeapNode *
peek_next (const SimEngine *engine)
{
  return engine->lane != NULL ? &engine->lane->node : sim_heap_peek (engine->queue);
}

/* Takes the earliest pending event out of the queue, or NULL. */
static SimEvent *
pop_next (SimEngine *engine)
{
  SimEvent *ev = engine->lane;
  if (ev != NULL)
    {
      engine->lane = NULL;
      return ev;
    }
  return (SimEvent *) sim_heap_pop (engine->queue);
}

SimEngine *
sim_engine_new (void)
{
  SimEngine *engine = g_new0 (SimEngine, 1);
  engine->next_seq = 1;
  engine->queue = sim_heap_new ();
  sim_slots_init (&engine->events, sizeof (SimEvent), EVENT_BLOCK);
  return engine;
}

void
sim_engine_free (SimEngine *engine)
{
  if (engine == NULL)
    return;
  /* Drop pending events in firing order so destroy notifiers run deterministically. */
  SimEvent *ev;
  while ((ev = pop_next (engine)) != NULL)
    release_event (engine, ev);
  sim_heap_free (engine->queue);
  sim_slots_clear (&engine->events);
  g_free (engine);
}

void
sim_engine_reset (SimEngine *engine)
{
  g_return_if_fail (engine != NULL && !engine->running);
  SimEvent *ev;
  while ((ev = pop_next (engine)) != NULL)
    release_event (engine, ev);
  sim_slots_reset (&engine->events); /* generations go on: old ids stay stale */
  engine->now = 0.0;
  engine->next_seq = 1;
  engine->fired = 0;
  engine->stop_requested = FALSE;
}

double
sim_engine_now (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0.0);
  return engine->now;
}

const double *
sim_engine_clock (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, NULL);
  return &engine->now;
}

/* Queues an event at `time` with sequence number `seq` (its place among equal times); 0 when
 * no event can be made. Arguments checked by the callers. */
static SimEventId
schedule_seq (SimEngine *engine, guint64 seq, double time, SimEventFunc func,
              gpointer user_data, GDestroyNotify destroy)
{
  SimEvent *ev = alloc_event (engine);
  if (ev == NULL)
    return 0;
  ev->node.key = time;
  ev->node.tie = seq;
  ev->func = func;
  ev->user_data = user_data;
  ev->destroy = destroy;
  enqueue (engine, ev);
  return ev->id;
}

SimEventId
sim_engine_schedule_at (SimEngine *engine, double time, SimEventFunc func, gpointer user_data,
                        GDestroyNotify destroy)
{
  g_return_val_if_fail (engine != NULL, 0);
  g_return_val_if_fail (func != NULL, 0);
  g_return_val_if_fail (isfinite (time) && time >= engine->now, 0);
  /* the number taken only once the event exists, as before (alloc_event may fail) */
  SimEventId id = schedule_seq (engine, engine->next_seq, time, func, user_data, destroy);
  if (id != 0)
    engine->next_seq++;
  return id;
}

guint64
sim_engine_reserve (SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0);
  return engine->next_seq++;
}

SimEventId
sim_engine_schedule_reserved (SimEngine *engine, guint64 seq, double time, SimEventFunc func,
                              gpointer user_data, GDestroyNotify destroy)
{
  g_return_val_if_fail (engine != NULL && seq > 0 && seq < engine->next_seq, 0);
  g_return_val_if_fail (func != NULL, 0);
  g_return_val_if_fail (isfinite (time) && time >= engine->now, 0);
  return schedule_seq (engine, seq, time, func, user_data, destroy);
}

gboolean
sim_engine_fire_reserved (SimEngine *engine, guint64 seq, double time)
{
  g_return_val_if_fail (engine != NULL && seq > 0 && seq < engine->next_seq, FALSE);
  g_return_val_if_fail (isfinite (time) && time >= engine->now, FALSE);
  if (!engine->running || engine->stop_requested || time > engine->t_end)
    return FALSE;
  const SimHeapNode *top = peek_next (engine);
  if (top != NULL && !(time < top->key || (time == top->key && seq < top->tie)))
    return FALSE;
  engine->now = time;
  engine->fired++;
  return TRUE;
}

gboolean
sim_engine_would_fire_next (const SimEngine *engine, double time)
{
  g_return_val_if_fail (engine != NULL, FALSE);
  if (!engine->running || engine->stop_requested || !(time >= engine->now)
      || !(time <= engine->t_end))
    return FALSE;
  const SimHeapNode *top = peek_next (engine);
  return top == NULL || time < top->key; /* a new number loses every tie */
}

SimEventId
sim_engine_schedule_after (SimEngine *engine, double delay, SimEventFunc func, gpointer user_data,
                           GDestroyNotify destroy)
{
  g_return_val_if_fail (engine != NULL, 0);
  g_return_val_if_fail (isfinite (delay) && delay >= 0.0, 0);
  return sim_engine_schedule_at (engine, engine->now + delay, func, user_data, destroy);
}

gboolean
sim_engine_cancel (SimEngine *engine, SimEventId id)
{
  g_return_val_if_fail (engine != NULL, FALSE);
  SimEvent *ev = lookup (engine, id);
  if (ev == NULL)
    return FALSE;
  if (ev == engine->lane)
    engine->lane = NULL;
  else
    sim_heap_remove (engine->queue, &ev->node);
  release_event (engine, ev);
  return TRUE;
}

/* Pops the earliest event, advances the clock to it, fires it and runs its notifier. */
static void
fire_next (SimEngine *engine)
{
  SimEvent *ev = pop_next (engine);
  g_assert (ev->node.key >= engine->now);
  engine->now = ev->node.key;
  engine->fired++;
  /* The id stops matching before the callback runs: a firing event cannot be cancelled. */
  SimEventId id = ev->id;
  ev->id = 0;
  ev->func (engine, ev->user_data); /* blocks never move and the slot is not yet free */
  ev->id = id;
  release_event (engine, ev);
}

/* Fires events with time <= t_end until the queue empties or stop is requested. */
static guint64
run_loop (SimEngine *engine, double t_end)
{
  engine->running = TRUE;
  engine->stop_requested = FALSE;
  engine->t_end = t_end;
  guint64 fired = engine->fired; /* with the events fired in place (sim_engine_fire_reserved) */
  const SimHeapNode *top;
  while (!engine->stop_requested && (top = peek_next (engine)) != NULL
         && top->key <= t_end)
    fire_next (engine);
  engine->running = FALSE;
  return engine->fired - fired;
}

guint64
sim_engine_run (SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0);
  g_return_val_if_fail (!engine->running, 0);
  return run_loop (engine, INFINITY);
}

guint64
sim_engine_run_until (SimEngine *engine, double t_end)
{
  g_return_val_if_fail (engine != NULL, 0);
  g_return_val_if_fail (!isnan (t_end), 0);
  g_return_val_if_fail (!engine->running, 0);
  guint64 n = run_loop (engine, t_end);
  /* An infinite horizon leaves the clock at the last event (time must stay finite). */
  if (!engine->stop_requested && isfinite (t_end) && engine->now < t_end)
    engine->now = t_end;
  return n;
}

void
sim_engine_stop (SimEngine *engine)
{
  g_return_if_fail (engine != NULL);
  engine->stop_requested = TRUE;
}

guint
sim_engine_pending (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0);
  return sim_heap_size (engine->queue) + (engine->lane != NULL);
}

double
sim_engine_next_time (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, INFINITY);
  const SimHeapNode *top = peek_next (engine);
  return top != NULL ? top->key : INFINITY;
}

guint64
sim_engine_events_fired (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0);
  return engine->fired;
}
