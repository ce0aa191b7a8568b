/* tests/fuzz/fuzz_units.c — libFuzzer harness of the unit-string parser (sim/units.c): the
 * input is one value as a scenario or node catalog gives it ("80 GiB", "1.5 TB/s").
 *
 * Checks, beyond "no crash, no sanitizer report": a value accepted for a dimension is
 * finite, and sim_units_format's text for it parses back (sim/units.h promises the round
 * trip) to the same value up to the printed digits (17 decimals: relative error < 1e-12 for
 * a magnitude of at least 1 in the base unit, where the chosen unit is at most that big).
 */
#include "config.h"
#include "tests/fuzz/fuzz-common.h"

#include <math.h>
#include "sim/units.h"

static void
round_trip (double v, SimDimension dim)
{
  g_autofree char *text = sim_units_format (v, dim, 17);
  double back = NAN;
  g_autoptr (GError) error = NULL;
  if (!sim_units_parse (text, dim, &back, &error))
    {
      fprintf (stderr, "formatted '%s' does not parse back: %s\n", text, error->message);
      abort ();
    }
  if (fabs (v) >= 1 && fabs (back - v) > 1e-12 * fabs (v))
    {
      fprintf (stderr, "'%s' parses back as %.17g, not %.17g\n", text, back, v);
      abort ();
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autofree char *text = fuzz_strndup (data, size);
  static const SimDimension dims[] = { SIM_DIM_BYTES, SIM_DIM_BANDWIDTH, SIM_DIM_FLOP_RATE,
                                       SIM_DIM_FLOP, SIM_DIM_TIME };
  for (gsize i = 0; i < G_N_ELEMENTS (dims); i++)
    {
      double v = NAN;
      g_autoptr (GError) error = NULL;
      if (sim_units_parse (text, dims[i], &v, &error))
        {
          if (!isfinite (v))
            abort ();
          round_trip (v, dims[i]);
        }
      else if (error == NULL || error->message == NULL)
        abort (); /* every failure explains itself */
    }
  double x;
  guint64 n;
  gboolean b;
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
  if (sim_units_parse_number (text, &x, &e1) && !isfinite (x))
    abort ();
  (void) sim_units_parse_count (text, &n, &e2);
  (void) sim_units_parse_bool (text, &b, &e3);
  return 0;
}
