/* tests/unit/hardware/units_stub.c — TEMPORARY minimal sim/units.h implementation
 * (sim_units_error_quark, sim_units_parse, sim_units_parse_number) so test_catalog links
 * while sim/units.c is still a placeholder. Linked into test_catalog only, never into the
 * library. DELETE this file (and its line in tests/unit/hardware/local.mk) once sim/units.c
 * is merged. Semantics follow sim/units.h for the units the catalog tests use.
 */
#include "config.h"
#include "sim/units.h"

#include <math.h>
#include <string.h>

typedef struct
{
  const char *unit;
  SimDimension dim;
  double scale;
} StubUnit;

static const StubUnit stub_units[] = {
  { "B", SIM_DIM_BYTES, 1 },           { "kB", SIM_DIM_BYTES, 1e3 },
  { "MB", SIM_DIM_BYTES, 1e6 },        { "GB", SIM_DIM_BYTES, 1e9 },
  { "TB", SIM_DIM_BYTES, 1e12 },       { "KiB", SIM_DIM_BYTES, 1024.0 },
  { "MiB", SIM_DIM_BYTES, 1048576.0 }, { "GiB", SIM_DIM_BYTES, 1073741824.0 },
  { "TiB", SIM_DIM_BYTES, 1099511627776.0 },
  { "B/s", SIM_DIM_BANDWIDTH, 1 },     { "MB/s", SIM_DIM_BANDWIDTH, 1e6 },
  { "GB/s", SIM_DIM_BANDWIDTH, 1e9 },  { "TB/s", SIM_DIM_BANDWIDTH, 1e12 },
  { "GiB/s", SIM_DIM_BANDWIDTH, 1073741824.0 },
  { "Gbit/s", SIM_DIM_BANDWIDTH, 1e9 / 8 },
  { "FLOP/s", SIM_DIM_FLOP_RATE, 1 },  { "GFLOP/s", SIM_DIM_FLOP_RATE, 1e9 },
  { "TFLOP/s", SIM_DIM_FLOP_RATE, 1e12 }, { "TFLOPS", SIM_DIM_FLOP_RATE, 1e12 },
  { "PFLOP/s", SIM_DIM_FLOP_RATE, 1e15 },
  { "s", SIM_DIM_TIME, 1 },            { "ms", SIM_DIM_TIME, 1e-3 },
  { "us", SIM_DIM_TIME, 1e-6 },        { "ns", SIM_DIM_TIME, 1e-9 },
};

GQuark
sim_units_error_quark (void)
{
  return g_quark_from_static_string ("sim-units-error-quark");
}

/* Reads the leading number of `text`; *rest points after it (spaces skipped). */
static gboolean
stub_number (const char *text, double *out, const char **rest, GError **error)
{
  while (g_ascii_isspace (*text))
    text++;
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  if (end == text || !isfinite (v))
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX, "'%s' is not a number",
                   text);
      return FALSE;
    }
  while (g_ascii_isspace (*end))
    end++;
  *out = v;
  *rest = end;
  return TRUE;
}

gboolean
sim_units_parse (const char *text, SimDimension dim, double *out, GError **error)
{
  double v;
  const char *rest;
  if (!stub_number (text, &v, &rest, error))
    return FALSE;
  if (*rest == '\0')
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                   "'%s' has no unit", text);
      return FALSE;
    }
  g_autofree char *unit = g_strstrip (g_strdup (rest));
  for (guint i = 0; i < G_N_ELEMENTS (stub_units); i++)
    if (stub_units[i].dim == dim && strcmp (unit, stub_units[i].unit) == 0)
      {
        *out = v * stub_units[i].scale;
        return TRUE;
      }
  g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT,
               "'%s': unknown unit '%s'", text, unit);
  return FALSE;
}

gboolean
sim_units_parse_number (const char *text, double *out, GError **error)
{
  double v;
  const char *rest;
  if (!stub_number (text, &v, &rest, error))
    return FALSE;
  if (*rest != '\0')
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
                   "'%s': trailing text after the number", text);
      return FALSE;
    }
  *out = v;
  return TRUE;
}
