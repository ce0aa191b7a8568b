/* tests/unit/sim/fluid_fixture.h — a fluid on a fresh engine with a completion log, shared
 * by test_fluid.c and test_fluid_properties.c. Header-only (static inline). */
#pragma once

#include <math.h>
#include "sim/fluid.h"

/* Completion log: order = ids as reported (ids are opaque, not indices), done[k] = the time
 * (s) at which order[k] completed. */
typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  GArray *done;  /* double, parallel to order */
  GArray *order; /* SimActivityId in callback order */
} Rec;

static inline Rec *
rec_new (void)
{
  Rec *r = g_new0 (Rec, 1);
  r->engine = sim_engine_new ();
  r->fluid = sim_fluid_new (r->engine);
  r->done = g_array_new (FALSE, FALSE, sizeof (double));
  r->order = g_array_new (FALSE, FALSE, sizeof (SimActivityId));
  return r;
}

static inline void
rec_free (Rec *r)
{
  sim_fluid_free (r->fluid);
  sim_engine_free (r->engine);
  g_array_unref (r->done);
  g_array_unref (r->order);
  g_free (r);
}

static inline void
done_cb (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  Rec *r = user_data;
  (void) fluid;
  double now = sim_engine_now (r->engine);
  g_array_append_val (r->done, now);
  g_array_append_val (r->order, id);
}

