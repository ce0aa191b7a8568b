/* sim/engine.c — the discrete-event engine: a clock and a priority queue of events.
 *
 * Structure: pending events live in an intrusive binary min-heap (sim/heap.c) keyed by
 * (time, id); ids are a strictly increasing counter, so the id doubles as the insertion
 * sequence and same-time events fire in scheduling order (DESIGN §6). A hash table maps
 * id → event for O(1) lookup at cancel; the event then leaves the heap in O(log n) through
 * its stored heap index, so sim_engine_pending() is always the exact heap size.
 *
 * Invariants: an event is in the heap iff it is in the id table; the clock never decreases;
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

#include <math.h>

typedef struct
{
  SimHeapNode node; /* key = time (s), tie = id */
  SimEventId id;
  SimEventFunc func;
  gpointer user_data;
  GDestroyNotify destroy;
} SimEvent;

struct _SimEngine
{
  double now;
  SimEventId next_id;
  guint64 fired;
  SimHeap *queue;
  GHashTable *by_id; /* &event->id → event (not owned: the heap's events are freed by us) */
  gboolean running;
  gboolean stop_requested;
};

static void
event_finish (SimEvent *ev)
{
  if (ev->destroy != NULL)
    ev->destroy (ev->user_data);
  g_free (ev);
}

SimEngine *
sim_engine_new (void)
{
  SimEngine *engine = g_new0 (SimEngine, 1);
  engine->next_id = 1;
  engine->queue = sim_heap_new ();
  engine->by_id = g_hash_table_new (g_int64_hash, g_int64_equal);
  return engine;
}

void
sim_engine_free (SimEngine *engine)
{
  if (engine == NULL)
    return;
  /* Drop pending events in firing order so destroy notifiers run deterministically. */
  SimHeapNode *node;
  while ((node = sim_heap_pop (engine->queue)) != NULL)
    {
      SimEvent *ev = (SimEvent *) node;
      g_hash_table_remove (engine->by_id, &ev->id);
      event_finish (ev);
    }
  g_hash_table_unref (engine->by_id);
  sim_heap_free (engine->queue);
  g_free (engine);
}

double
sim_engine_now (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0.0);
  return engine->now;
}

SimEventId
sim_engine_schedule_at (SimEngine *engine, double time, SimEventFunc func, gpointer user_data,
                        GDestroyNotify destroy)
{
  g_return_val_if_fail (engine != NULL, 0);
  g_return_val_if_fail (func != NULL, 0);
  g_return_val_if_fail (isfinite (time) && time >= engine->now, 0);
  SimEvent *ev = g_new (SimEvent, 1);
  ev->id = engine->next_id++;
  ev->node.key = time;
  ev->node.tie = ev->id;
  ev->node.index = SIM_HEAP_NONE;
  ev->func = func;
  ev->user_data = user_data;
  ev->destroy = destroy;
  sim_heap_push (engine->queue, &ev->node);
  g_hash_table_insert (engine->by_id, &ev->id, ev);
  return ev->id;
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
  SimEvent *ev = g_hash_table_lookup (engine->by_id, &id);
  if (ev == NULL)
    return FALSE;
  g_hash_table_remove (engine->by_id, &ev->id);
  sim_heap_remove (engine->queue, &ev->node);
  event_finish (ev);
  return TRUE;
}

/* Pops the earliest event, advances the clock to it, fires it and runs its notifier. */
static void
fire_next (SimEngine *engine)
{
  SimEvent *ev = (SimEvent *) sim_heap_pop (engine->queue);
  g_hash_table_remove (engine->by_id, &ev->id);
  g_assert (ev->node.key >= engine->now);
  engine->now = ev->node.key;
  engine->fired++;
  ev->func (engine, ev->user_data);
  event_finish (ev);
}

/* Fires events with time <= t_end until the queue empties or stop is requested. */
static guint64
run_loop (SimEngine *engine, double t_end)
{
  engine->running = TRUE;
  engine->stop_requested = FALSE;
  guint64 n = 0;
  SimHeapNode *top;
  while (!engine->stop_requested && (top = sim_heap_peek (engine->queue)) != NULL
         && top->key <= t_end)
    {
      fire_next (engine);
      n++;
    }
  engine->running = FALSE;
  return n;
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
  return sim_heap_size (engine->queue);
}

guint64
sim_engine_events_fired (const SimEngine *engine)
{
  g_return_val_if_fail (engine != NULL, 0);
  return engine->fired;
}
