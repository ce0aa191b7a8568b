/* tests/unit/sim/test_engine.c — the event engine (sim/engine.c): (time, sequence) order,
 * cancel, destroy notifiers, run_until, stop, re-entrant scheduling, API misuse. */
#include "config.h"
#include "sim/engine.h"
#include "tests/testlib.h"

#include <math.h>

/* Firing log: each callback appends the id it was given (user_data = slot in `ids`). */
typedef struct
{
  GArray *fired; /* guint64 tags in firing order */
  GArray *times; /* double engine time at each firing */
} Log;

typedef struct
{
  Log *log;
  guint64 tag;
} Tagged;

static void
log_cb (SimEngine *engine, gpointer user_data)
{
  Tagged *t = user_data;
  g_array_append_val (t->log->fired, t->tag);
  double now = sim_engine_now (engine);
  g_array_append_val (t->log->times, now);
}

static Log *
log_new (void)
{
  Log *log = g_new0 (Log, 1);
  log->fired = g_array_new (FALSE, FALSE, sizeof (guint64));
  log->times = g_array_new (FALSE, FALSE, sizeof (double));
  return log;
}

static void
log_free (Log *log)
{
  g_array_unref (log->fired);
  g_array_unref (log->times);
  g_free (log);
}

static void
count_destroy (gpointer data)
{
  (*(int *) data)++;
}

static void
noop_cb (SimEngine *engine, gpointer user_data)
{
  (void) engine, (void) user_data;
}

typedef struct
{
  double time;
  guint64 tag;
  SimEventId id;
  gboolean cancelled;
} Ref;

static gint
ref_cmp (gconstpointer a, gconstpointer b)
{
  const Ref *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* 5,000 random times drawn from 200 distinct values (many ties), every third cancelled in
 * random order: the firing order must be the reference list sorted by (time, insertion). */
static void
test_random_order_against_sorted_reference (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (12345);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  const guint n = 5000;
  Ref *refs = g_new0 (Ref, n);
  Tagged *tags = g_new0 (Tagged, n);
  for (guint i = 0; i < n; i++)
    {
      refs[i].time = g_rand_int_range (rng, 0, 200) * 0.25;
      refs[i].tag = tags[i].tag = i;
      tags[i].log = log;
      refs[i].id = sim_engine_schedule_at (engine, refs[i].time, log_cb, &tags[i], NULL);
      CU_ASSERT (refs[i].id > 0);
    }
  guint n_cancel = 0;
  for (guint k = 0; k < n / 3; k++)
    {
      guint i = g_rand_int_range (rng, 0, n);
      gboolean ok = sim_engine_cancel (engine, refs[i].id);
      CU_ASSERT (ok == !refs[i].cancelled); /* a second cancel of the same id is FALSE */
      n_cancel += ok;
      refs[i].cancelled = TRUE;
    }
  CU_ASSERT_EQUAL (sim_engine_pending (engine), n - n_cancel);
  GArray *expect = g_array_new (FALSE, FALSE, sizeof (Ref));
  for (guint i = 0; i < n; i++)
    if (!refs[i].cancelled)
      g_array_append_val (expect, refs[i]);
  g_array_sort (expect, ref_cmp);
  CU_ASSERT_EQUAL (sim_engine_run (engine), n - n_cancel);
  CU_ASSERT_EQUAL_FATAL (log->fired->len, expect->len);
  for (guint k = 0; k < expect->len; k++)
    {
      CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, k), g_array_index (expect, Ref, k).tag);
      CU_ASSERT_EQUAL (g_array_index (log->times, double, k), g_array_index (expect, Ref, k).time);
    }
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 0);
  g_array_unref (expect);
  g_free (refs);
  g_free (tags);
  log_free (log);
}

static void
test_same_time_fires_in_insertion_order (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Tagged tags[6];
  /* Scheduled in tag order 0..5, times alternate so that the heap must reorder them. */
  double times[6] = { 2.0, 1.0, 2.0, 1.0, 2.0, 1.0 };
  for (guint i = 0; i < 6; i++)
    {
      tags[i] = (Tagged){ log, i };
      sim_engine_schedule_at (engine, times[i], log_cb, &tags[i], NULL);
    }
  sim_engine_run (engine);
  guint64 expect[6] = { 1, 3, 5, 0, 2, 4 };
  CU_ASSERT_EQUAL_FATAL (log->fired->len, 6);
  for (guint i = 0; i < 6; i++)
    CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, i), expect[i]);
  log_free (log);
}

static void
test_cancel_prevents_firing_and_destroys_once (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Tagged t = { log, 7 };
  int destroyed = 0;
  SimEventId id = sim_engine_schedule_at (engine, 1.0, log_cb, &t, NULL);
  SimEventId id2 = sim_engine_schedule_at (engine, 1.0, noop_cb, &destroyed, count_destroy);
  (void) id;
  CU_ASSERT_TRUE (sim_engine_cancel (engine, id2));
  CU_ASSERT_EQUAL (destroyed, 1); /* at cancel time, not later */
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 1);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (log->fired->len, 1); /* only the uncancelled one */
  CU_ASSERT_EQUAL (destroyed, 1);
  log_free (log);
}

static void
test_cancel_fired_or_unknown_returns_false (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  int destroyed = 0;
  Log *log = log_new ();
  Tagged t = { log, 0 };
  SimEventId id = sim_engine_schedule_at (engine, 0.5, log_cb, &t, NULL);
  SimEventId id2 = sim_engine_schedule_at (engine, 0.5, noop_cb, &destroyed, count_destroy);
  sim_engine_run (engine);
  CU_ASSERT_FALSE (sim_engine_cancel (engine, id));        /* fired */
  CU_ASSERT_FALSE (sim_engine_cancel (engine, id2));       /* fired */
  CU_ASSERT_FALSE (sim_engine_cancel (engine, id2 + 100)); /* never issued */
  CU_ASSERT_FALSE (sim_engine_cancel (engine, 0));         /* never valid */
  CU_ASSERT_EQUAL (destroyed, 1);                          /* notifier after firing only */
  log_free (log);
}

/* An id stays dead after its event fired, even once its storage is reused by a new event:
 * cancelling the old id must neither succeed nor touch the new event. */
static void
test_stale_id_does_not_cancel_reused_slot (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  int destroyed = 0;
  SimEventId old = sim_engine_schedule_at (engine, 1.0, noop_cb, NULL, NULL);
  sim_engine_run (engine);
  SimEventId fresh = sim_engine_schedule_at (engine, 2.0, noop_cb, &destroyed, count_destroy);
  CU_ASSERT_NOT_EQUAL (fresh, old);
  CU_ASSERT_FALSE (sim_engine_cancel (engine, old));
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 1);
  CU_ASSERT_EQUAL (destroyed, 0);
  CU_ASSERT_TRUE (sim_engine_cancel (engine, fresh));
  CU_ASSERT_EQUAL (destroyed, 1);
}

/* A callback cannot cancel the event that is firing (it is no longer pending). */
static void
self_cancel_cb (SimEngine *engine, gpointer user_data)
{
  SimEventId *id = user_data;
  CU_ASSERT_FALSE (sim_engine_cancel (engine, *id));
  *id = 0;
}

static void
test_firing_event_cannot_cancel_itself (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  SimEventId id = 0;
  id = sim_engine_schedule_at (engine, 1.0, self_cancel_cb, &id, NULL);
  CU_ASSERT_EQUAL (sim_engine_run (engine), 1);
  CU_ASSERT_EQUAL (id, 0); /* the callback ran */
}

/* Destroy notifier of a fired event runs after its callback (which still sees valid data). */
static void
check_not_destroyed_cb (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  CU_ASSERT_EQUAL (*(int *) user_data, 0);
}

static void
test_destroy_runs_after_fire (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  int destroyed = 0;
  sim_engine_schedule_after (engine, 1.0, check_not_destroyed_cb, &destroyed, count_destroy);
  CU_ASSERT_EQUAL (sim_engine_run (engine), 1);
  CU_ASSERT_EQUAL (destroyed, 1);
  CU_ASSERT_EQUAL (sim_engine_events_fired (engine), 1);
}

static void
test_run_until_stops_and_sets_clock (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Tagged tags[3] = { { log, 0 }, { log, 1 }, { log, 2 } };
  sim_engine_schedule_at (engine, 1.0, log_cb, &tags[0], NULL);
  sim_engine_schedule_at (engine, 2.0, log_cb, &tags[1], NULL); /* exactly t_end: fires */
  sim_engine_schedule_at (engine, 3.0, log_cb, &tags[2], NULL);
  const double *clock = sim_engine_clock (engine); /* reads sim_engine_now at every moment */
  CU_ASSERT_EQUAL (*clock, 0.0);
  CU_ASSERT_EQUAL (sim_engine_run_until (engine, 2.0), 2);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 2.0);
  CU_ASSERT_EQUAL (*clock, 2.0);
  CU_ASSERT_EQUAL (sim_engine_run_until (engine, 2.5), 0);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 2.5); /* clock moves to t_end with no event */
  CU_ASSERT_EQUAL (*clock, 2.5);
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 1);
  CU_ASSERT_EQUAL (sim_engine_run (engine), 1);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 3.0);
  CU_ASSERT_EQUAL (*clock, 3.0);
  CU_ASSERT_EQUAL (sim_engine_events_fired (engine), 3);
  log_free (log);
}

static void
stop_cb (SimEngine *engine, gpointer user_data)
{
  (void) user_data;
  sim_engine_stop (engine);
}

static void
test_stop_inside_callback (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Tagged tags[2] = { { log, 0 }, { log, 1 } };
  sim_engine_schedule_at (engine, 1.0, log_cb, &tags[0], NULL);
  sim_engine_schedule_at (engine, 2.0, stop_cb, NULL, NULL);
  sim_engine_schedule_at (engine, 3.0, log_cb, &tags[1], NULL);
  CU_ASSERT_EQUAL (sim_engine_run_until (engine, 10.0), 2);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 2.0); /* stopped: clock not moved to t_end */
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 1);
  CU_ASSERT_EQUAL (sim_engine_run (engine), 1); /* a new run resumes */
  CU_ASSERT_EQUAL (log->fired->len, 2);
  log_free (log);
}

/* A callback that reschedules itself `remaining` times, 0.5 s apart, and also schedules an
 * event at now, which must fire after the same-time events already queued. */
typedef struct
{
  int remaining;
  Log *log;
  Tagged now_tag;
} Chain;

static void
chain_cb (SimEngine *engine, gpointer user_data)
{
  Chain *c = user_data;
  if (c->remaining-- > 0)
    {
      sim_engine_schedule_after (engine, 0.5, chain_cb, c, NULL);
      sim_engine_schedule_after (engine, 0.0, log_cb, &c->now_tag, NULL);
    }
}

static void
test_schedule_from_callbacks (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Chain c = { 4, log, { log, 99 } };
  Tagged other = { log, 1 };
  sim_engine_schedule_at (engine, 0.0, chain_cb, &c, NULL);
  sim_engine_schedule_at (engine, 0.0, log_cb, &other, NULL); /* queued before chain's child */
  /* chain fires at 0, 0.5, 1.0, 1.5, 2.0 (4 reschedules + the first): 5 events, plus 4
   * same-time children and `other`. */
  CU_ASSERT_EQUAL (sim_engine_run (engine), 10);
  CU_ASSERT_EQUAL (sim_engine_now (engine), 2.0);
  CU_ASSERT_EQUAL_FATAL (log->fired->len, 5);
  CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, 0), 1);
  CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, 1), 99);
  CU_ASSERT_EQUAL (g_array_index (log->times, double, 4), 1.5);
  log_free (log);
}

static void
test_free_with_pending_calls_destroy (void)
{
  SimEngine *engine = sim_engine_new ();
  int destroyed = 0;
  for (int i = 0; i < 10; i++)
    sim_engine_schedule_at (engine, 1.0 + i, stop_cb, &destroyed, count_destroy);
  sim_engine_schedule_at (engine, 0.5, stop_cb, NULL, NULL); /* NULL notifier is fine */
  sim_engine_free (engine);
  CU_ASSERT_EQUAL (destroyed, 10);
  sim_engine_free (NULL); /* no-op */
}

static void
count_log (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data)
{
  (void) domain, (void) level, (void) message;
  (*(int *) data)++;
}

static void
test_schedule_in_past_or_nonfinite_is_refused (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  int criticals = 0;
  guint h = g_log_set_handler ("stepsim-sim", G_LOG_LEVEL_CRITICAL, count_log, &criticals);
  sim_engine_run_until (engine, 5.0);
  CU_ASSERT_EQUAL (sim_engine_schedule_at (engine, 4.0, stop_cb, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_engine_schedule_at (engine, NAN, stop_cb, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_engine_schedule_at (engine, INFINITY, stop_cb, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_engine_schedule_after (engine, -1.0, stop_cb, NULL, NULL), 0);
  g_log_remove_handler ("stepsim-sim", h);
  CU_ASSERT_EQUAL (criticals, 4);
  CU_ASSERT_EQUAL (sim_engine_pending (engine), 0);
  CU_ASSERT (sim_engine_schedule_at (engine, 5.0, stop_cb, NULL, NULL) > 0); /* = now is ok */
}

/* The next event's time: +inf on an empty queue, the earliest pending one, and it moves on
 * when that one is cancelled. */
static void
test_next_time (void)
{
  g_autoptr (SimEngine) e = sim_engine_new ();
  CU_ASSERT_TRUE (isinf (sim_engine_next_time (e)) && sim_engine_next_time (e) > 0);
  SimEventId late = sim_engine_schedule_at (e, 3.0, noop_cb, NULL, NULL);
  SimEventId early = sim_engine_schedule_at (e, 1.0, noop_cb, NULL, NULL);
  (void) late;
  CU_ASSERT_EQUAL (sim_engine_next_time (e), 1.0);
  sim_engine_cancel (e, early);
  CU_ASSERT_EQUAL (sim_engine_next_time (e), 3.0);
  sim_engine_run (e);
  CU_ASSERT_TRUE (isinf (sim_engine_next_time (e)));
}

/* Reserved sequence numbers (sim_engine_reserve): an event scheduled later with one keeps
 * its place among equal times (after the events scheduled before the reservation, before
 * those scheduled after it). */
static void
test_reserved_keeps_its_place (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  Tagged tags[4] = { { log, 0 }, { log, 1 }, { log, 2 }, { log, 3 } };
  sim_engine_schedule_at (engine, 1.0, log_cb, &tags[0], NULL);
  guint64 seq = sim_engine_reserve (engine);
  sim_engine_schedule_at (engine, 1.0, log_cb, &tags[2], NULL);
  CU_ASSERT_NOT_EQUAL (sim_engine_schedule_reserved (engine, seq, 1.0, log_cb, &tags[1], NULL), 0);
  sim_engine_schedule_at (engine, 0.5, log_cb, &tags[3], NULL);
  CU_ASSERT_FALSE (sim_engine_fire_reserved (engine, sim_engine_reserve (engine), 0.1));
  sim_engine_run (engine);
  guint64 expect[4] = { 3, 0, 1, 2 };
  CU_ASSERT_EQUAL_FATAL (log->fired->len, 4);
  for (guint i = 0; i < 4; i++)
    CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, i), expect[i]);
  log_free (log);
}

/* sim_engine_fire_reserved from inside an event at 1 s with events pending at 2 s (scheduled
 * before) and 3 s: FALSE at 2 s (the pending one comes first) and beyond the run's t_end;
 * TRUE at 1.5 s (the clock moves there, the event counts as fired) and at a time equal to
 * that of an event scheduled after the reservation. */
typedef struct
{
  Log *log;
  Tagged later;
  gboolean ok[5];
  double now[2];
} InPlace;

static void
in_place_cb (SimEngine *engine, gpointer user_data)
{
  InPlace *p = user_data;
  guint64 fired = sim_engine_events_fired (engine);
  guint64 seq = sim_engine_reserve (engine);
  p->ok[0] = sim_engine_fire_reserved (engine, seq, 2.0);
  p->ok[1] = sim_engine_fire_reserved (engine, seq, 2.6); /* beyond t_end */
  p->ok[2] = sim_engine_fire_reserved (engine, seq, 1.5);
  p->now[0] = sim_engine_now (engine);
  p->ok[3] = sim_engine_events_fired (engine) == fired + 1;
  seq = sim_engine_reserve (engine);
  sim_engine_schedule_at (engine, 1.7, log_cb, &p->later, NULL);
  p->ok[4] = sim_engine_fire_reserved (engine, seq, 1.7);
  p->now[1] = sim_engine_now (engine);
}

static void
test_fire_reserved_in_place (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  Log *log = log_new ();
  InPlace p = { log, { log, 9 }, { FALSE }, { 0, 0 } };
  Tagged two = { log, 2 }, three = { log, 3 };
  sim_engine_schedule_at (engine, 1.0, in_place_cb, &p, NULL);
  sim_engine_schedule_at (engine, 2.0, log_cb, &two, NULL);
  sim_engine_schedule_at (engine, 3.0, log_cb, &three, NULL);
  /* 1 s, then the two in place, 1.7 s and 2 s */
  CU_ASSERT_EQUAL (sim_engine_run_until (engine, 2.5), 5);
  CU_ASSERT_FALSE (p.ok[0]);
  CU_ASSERT_FALSE (p.ok[1]);
  CU_ASSERT_TRUE (p.ok[2]);
  CU_ASSERT_EQUAL (p.now[0], 1.5);
  CU_ASSERT_TRUE (p.ok[3]);
  CU_ASSERT_TRUE (p.ok[4]);
  CU_ASSERT_EQUAL (p.now[1], 1.7);
  CU_ASSERT_EQUAL_FATAL (log->fired->len, 2);
  CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, 0), 9);
  CU_ASSERT_EQUAL (g_array_index (log->times, double, 0), 1.7);
  CU_ASSERT_EQUAL (g_array_index (log->fired, guint64, 1), 2);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (sim_engine_events_fired (engine), 6);
  log_free (log);
}

/* sim_engine_would_fire_next from inside an event at 1 s with an event pending at 2 s and
 * the run's t_end 2.5 s: TRUE before 2 s, FALSE at 2 s (the pending one wins the tie) and
 * after it, FALSE before now, and asking changes nothing (clock, next number); FALSE beyond
 * t_end once nothing is pending, after a stop, and outside a run. */
typedef struct
{
  gboolean ok[7];
  double now;
  guint64 seq;
} WouldFire;

static void
would_fire_cb (SimEngine *engine, gpointer user_data)
{
  WouldFire *w = user_data;
  guint64 seq = sim_engine_reserve (engine);
  w->ok[0] = sim_engine_would_fire_next (engine, 1.5);
  w->ok[1] = sim_engine_would_fire_next (engine, nextafter (2.0, 0.0));
  w->ok[2] = sim_engine_would_fire_next (engine, 2.0);
  w->ok[3] = sim_engine_would_fire_next (engine, 2.2);
  w->ok[4] = sim_engine_would_fire_next (engine, 0.5);
  w->now = sim_engine_now (engine);
  w->seq = sim_engine_reserve (engine) - seq;
}

static void
would_fire_late_cb (SimEngine *engine, gpointer user_data)
{
  WouldFire *w = user_data;
  w->ok[5] = sim_engine_would_fire_next (engine, 2.6) || !sim_engine_would_fire_next (engine, 2.4);
  sim_engine_stop (engine);
  w->ok[6] = sim_engine_would_fire_next (engine, 2.1);
}

static void
test_would_fire_next (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  WouldFire w = { { FALSE }, 0, 0 };
  CU_ASSERT_FALSE (sim_engine_would_fire_next (engine, 1.0)); /* outside a run */
  sim_engine_schedule_at (engine, 1.0, would_fire_cb, &w, NULL);
  sim_engine_schedule_at (engine, 2.0, would_fire_late_cb, &w, NULL);
  sim_engine_run_until (engine, 2.5);
  CU_ASSERT_TRUE (w.ok[0]);
  CU_ASSERT_TRUE (w.ok[1]);
  CU_ASSERT_FALSE (w.ok[2]);
  CU_ASSERT_FALSE (w.ok[3]);
  CU_ASSERT_FALSE (w.ok[4]);
  CU_ASSERT_EQUAL (w.now, 1.0);
  CU_ASSERT_EQUAL (w.seq, 1);
  CU_ASSERT_FALSE (w.ok[5]);
  CU_ASSERT_FALSE (w.ok[6]);
}

/* Events scheduled and cancelled from callbacks, at random (times on a grid of 10 values
 * past now, many ties): every event scheduled and not cancelled fires once, and the firing
 * order is (time, scheduling order) over the whole run, since a callback schedules no
 * earlier than now. Exercises the one-event lane (sim/engine.c enqueue): an event earlier
 * than all pending ones, displaced by a later-scheduled earlier one, cancelled there. */
typedef struct
{
  SimEngine *engine;
  GRand *rng;
  GArray *refs;  /* Ref, by tag */
  GArray *fired; /* guint64 tags */
} Churn;

typedef struct
{
  Churn *c;
  guint64 tag;
} ChurnArg;

static void churn_cb (SimEngine *engine, gpointer user_data);

static void
churn_schedule (Churn *c, double time)
{
  ChurnArg *a = g_new (ChurnArg, 1);
  *a = (ChurnArg){ c, c->refs->len };
  Ref r = { time, a->tag, 0, FALSE };
  r.id = sim_engine_schedule_at (c->engine, time, churn_cb, a, g_free);
  g_array_append_val (c->refs, r);
}

static void
churn_cb (SimEngine *engine, gpointer user_data)
{
  ChurnArg *a = user_data;
  Churn *c = a->c;
  g_array_append_val (c->fired, a->tag);
  if (c->refs->len < 4000)
    for (guint k = g_rand_int_range (c->rng, 0, 4); k > 0; k--)
      churn_schedule (c, sim_engine_now (engine) + g_rand_int_range (c->rng, 0, 10) * 0.25);
  if (g_rand_int_range (c->rng, 0, 4) == 0)
    {
      Ref *r = &g_array_index (c->refs, Ref, g_rand_int_range (c->rng, 0, (gint) c->refs->len));
      if (!r->cancelled && sim_engine_cancel (engine, r->id))
        r->cancelled = TRUE;
    }
}

static void
test_callbacks_schedule_and_cancel (void)
{
  Churn c = { sim_engine_new (), g_rand_new_with_seed (11),
              g_array_new (FALSE, FALSE, sizeof (Ref)),
              g_array_new (FALSE, FALSE, sizeof (guint64)) };
  for (guint i = 0; i < 8; i++)
    churn_schedule (&c, g_rand_int_range (c.rng, 0, 4) * 0.5);
  sim_engine_run (c.engine);
  CU_ASSERT_EQUAL (sim_engine_pending (c.engine), 0);
  guint expected = 0;
  for (guint i = 0; i < c.refs->len; i++)
    expected += !g_array_index (c.refs, Ref, i).cancelled;
  CU_ASSERT (c.refs->len > 1000);
  CU_ASSERT_EQUAL_FATAL (c.fired->len, expected);
  for (guint k = 1; k < c.fired->len; k++)
    {
      const Ref *x = &g_array_index (c.refs, Ref, g_array_index (c.fired, guint64, k - 1));
      const Ref *y = &g_array_index (c.refs, Ref, g_array_index (c.fired, guint64, k));
      CU_ASSERT_TRUE (ref_cmp (x, y) < 0);
    }
  sim_engine_free (c.engine);
  g_rand_free (c.rng);
  g_array_unref (c.refs);
  g_array_unref (c.fired);
}

static const StepsimTest tests[] = {
  { "callbacks schedule and cancel at random: (time, order)", test_callbacks_schedule_and_cancel },
  { "a reserved number keeps its place", test_reserved_keeps_its_place },
  { "an event fired in place when it is next", test_fire_reserved_in_place },
  { "whether an event at a time would fire next", test_would_fire_next },
  { "random order against sorted reference", test_random_order_against_sorted_reference },
  { "same time fires in insertion order", test_same_time_fires_in_insertion_order },
  { "cancel prevents firing, destroys once", test_cancel_prevents_firing_and_destroys_once },
  { "cancel of fired or unknown id is FALSE", test_cancel_fired_or_unknown_returns_false },
  { "stale id does not cancel a reused slot", test_stale_id_does_not_cancel_reused_slot },
  { "firing event cannot cancel itself", test_firing_event_cannot_cancel_itself },
  { "destroy notifier runs after firing", test_destroy_runs_after_fire },
  { "run_until stops at t_end and sets clock", test_run_until_stops_and_sets_clock },
  { "stop inside a callback", test_stop_inside_callback },
  { "events scheduled from callbacks", test_schedule_from_callbacks },
  { "free with pending events destroys them", test_free_with_pending_calls_destroy },
  { "past or non-finite time is refused", test_schedule_in_past_or_nonfinite_is_refused },
  { "the next event's time", test_next_time },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/engine", tests);
}
