/* sim/engine.h — the discrete-event engine: a clock and a queue of events.
 *
 * Invariants: events fire in (time, insertion sequence) order, so two events at the same
 * time fire in the order they were scheduled (determinism, DESIGN §6). Time is a double in
 * seconds and never goes backwards: scheduling before now() is API misuse.
 * Units: seconds. Knows nothing of GPUs (DESIGN §2).
 */
#pragma once

#include <glib.h>

typedef struct _SimEngine SimEngine;

/* Identifies a scheduled event; 0 is never a valid id. */
typedef guint64 SimEventId;

/* Called when an event fires; the engine's clock already equals the event's time. */
typedef void (*SimEventFunc) (SimEngine *engine, gpointer user_data);

/* Creates an empty engine with its clock at 0 s. Never NULL; free with sim_engine_free(). */
SimEngine *sim_engine_new (void);

/* Frees the engine; pending events are dropped and their destroy notifiers called.
 * NULL is a no-op. */
void sim_engine_free (SimEngine *engine);

/* Makes `engine` behave as a new one (clock at 0 s, no pending event, the same event
 * order and sequence numbers as sim_engine_new's) while keeping its storage, for a
 * simulation replayed on the same objects (sim_fluid_reset first for a fluid on it).
 * Pending events are dropped in firing order and their destroy notifiers called; ids
 * handed out before never match again. Not from inside sim_engine_run*(). */
void sim_engine_reset (SimEngine *engine);

/* Current simulated time in seconds. */
double sim_engine_now (const SimEngine *engine);
/* The address of the engine's clock (s): *clock is sim_engine_now (engine) at every moment
 * of the engine's life (borrowed; valid until sim_engine_free), for the fluid and the
 * executor, which read the time at each kernel's events (a call each was 1.5 % of a
 * simulation's instructions). */
const double *sim_engine_clock (const SimEngine *engine);

/* Schedules func(engine, user_data) at absolute time `time` (s, >= now, finite).
 * `destroy` (may be NULL) is called on user_data after the event fired or was cancelled,
 * or when the engine is freed. Returns the event's id (> 0). */
SimEventId sim_engine_schedule_at (SimEngine *engine, double time, SimEventFunc func,
                                   gpointer user_data, GDestroyNotify destroy);

/* Same as sim_engine_schedule_at() at now + delay (delay >= 0 s). */
SimEventId sim_engine_schedule_after (SimEngine *engine, double delay, SimEventFunc func,
                                      gpointer user_data, GDestroyNotify destroy);

/* Takes the next sequence number (the tie-break of equal times) for an event the caller
 * may schedule later with sim_engine_schedule_reserved() or stand in for with
 * sim_engine_fire_reserved(): that event then keeps its place among the events scheduled
 * after this call, as if scheduled now. Use the number once. */
guint64 sim_engine_reserve (SimEngine *engine);

/* sim_engine_schedule_at() with the sequence number `seq` (from sim_engine_reserve(), not
 * used yet) instead of a new one. */
SimEventId sim_engine_schedule_reserved (SimEngine *engine, guint64 seq, double time,
                                         SimEventFunc func, gpointer user_data,
                                         GDestroyNotify destroy);

/* For an event at `time` (s, >= now) with the reserved number `seq`, from inside an event
 * of a running sim_engine_run*(): when it would be the next to fire (before every pending
 * event by (time, sequence), within the run's t_end, no stop requested), advances the clock
 * to `time`, counts it as fired and returns TRUE; the caller then does its work at once,
 * which is what the engine would do next. FALSE, nothing changed, otherwise (the caller
 * schedules it: sim_engine_schedule_reserved). Saves the event's storage and queue work. */
gboolean sim_engine_fire_reserved (SimEngine *engine, guint64 seq, double time);

/* From inside an event of a running sim_engine_run*(): TRUE when an event scheduled now at
 * `time` (s, >= now) would be the next to fire — before every pending event (a new sequence
 * number loses every tie), within the run's t_end, no stop requested — so that
 * sim_engine_reserve () then sim_engine_fire_reserved () at `time` succeeds, and so does the
 * same for any time from now to `time` before. FALSE otherwise (outside a run too). */
gboolean sim_engine_would_fire_next (const SimEngine *engine, double time);
/* Cancels a pending event: it will not fire and its destroy notifier runs now.
 * Returns FALSE if the id is unknown, already fired or already cancelled. */
gboolean sim_engine_cancel (SimEngine *engine, SimEventId id);

/* Fires events until the queue is empty or sim_engine_stop() is called.
 * Returns the number of events fired by this call. */
guint64 sim_engine_run (SimEngine *engine);

/* Fires events with time <= t_end (s), then sets the clock to t_end if it was earlier
 * and the run was not stopped. Returns the number of events fired by this call. */
guint64 sim_engine_run_until (SimEngine *engine, double t_end);

/* Makes the running sim_engine_run*() return after the current event. */
void sim_engine_stop (SimEngine *engine);

/* Number of pending (scheduled, not fired, not cancelled) events. */
guint sim_engine_pending (const SimEngine *engine);

/* The time (s) of the earliest pending event, +INFINITY when none is pending. */
double sim_engine_next_time (const SimEngine *engine);

/* Total events fired since creation. */
guint64 sim_engine_events_fired (const SimEngine *engine);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimEngine, sim_engine_free)
