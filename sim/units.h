/* sim/units.h — strict parsing and printing of dimensioned quantities.
 *
 * Internally every quantity is a double in SI base units: s, B, FLOP, B/s, FLOP/s
 * (DESIGN §6). Units are parsed only at input and printed only at output.
 * Accepted syntax: optional spaces, a finite decimal number (no sign for sizes that must be
 * non-negative is NOT enforced here), one or more spaces optional, then exactly one unit
 * token, then optional trailing spaces and nothing else. Decimal prefixes (k, M, G, T, P)
 * are powers of 1000, binary prefixes (Ki, Mi, Gi, Ti, Pi) powers of 1024.
 *   bytes:        B kB MB GB TB PB KiB MiB GiB TiB PiB
 *   bandwidth:    B/s kB/s MB/s GB/s TB/s KiB/s MiB/s GiB/s TiB/s, and bit/s kbit/s Mbit/s
 *                 Gbit/s Tbit/s (divided by 8 to give B/s)
 *   compute rate: FLOP/s kFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s (also the datasheet
 *                 spellings FLOPS kFLOPS MFLOPS GFLOPS TFLOPS PFLOPS)
 *   work:         FLOP kFLOP MFLOP GFLOP TFLOP PFLOP EFLOP
 *   time:         s ms us µs ns min h d (µ as U+00B5 micro sign or U+03BC Greek mu; d = 86400 s)
 *   power:        W kW MW (SI: W)
 *   energy:       J kJ MJ GJ Wh kWh MWh GWh (SI: J; 1 Wh = 3600 J)
 *   carbon intensity: gCO2/kWh kgCO2/kWh kgCO2/MWh tCO2/MWh (SI: kg CO2 per J)
 * Money is not a dimension of this table: a price names its currency, which stepsim never
 * converts, so it has its own parser (sim_units_parse_money) and keeps the code beside the
 * amount.
 * Units are case-sensitive ("Gib", "gb" are unknown; the message suggests the nearest).
 * A dimensioned value without a unit, with a unit of another dimension, with an unknown unit
 * or with trailing text is an error (SIM_UNITS_ERROR, below).
 */
#pragma once

#include <glib.h>

typedef enum
{
  SIM_DIM_BYTES,
  SIM_DIM_BANDWIDTH, /* B/s */
  SIM_DIM_FLOP_RATE, /* FLOP/s */
  SIM_DIM_FLOP,
  SIM_DIM_TIME, /* s */
  SIM_DIM_POWER,  /* W */
  SIM_DIM_ENERGY, /* J */
  SIM_DIM_CARBON_INTENSITY, /* kg CO2 per J */
} SimDimension;

#define SIM_UNITS_ERROR (sim_units_error_quark ())
GQuark sim_units_error_quark (void);

typedef enum
{
  SIM_UNITS_ERROR_SYNTAX,       /* not a number, trailing text, empty */
  SIM_UNITS_ERROR_MISSING_UNIT, /* a dimensioned value given as a bare number */
  SIM_UNITS_ERROR_UNKNOWN_UNIT, /* unit token not known, or of another dimension */
  SIM_UNITS_ERROR_RANGE,        /* negative where not allowed, not finite, not an integer */
} SimUnitsError;

/* Parses `text` as a quantity of dimension `dim` into *out (SI base units).
 * Returns FALSE and sets SIM_UNITS_ERROR on any deviation; *out is then untouched.
 * The message quotes the text and lists the accepted units of `dim`. */
gboolean sim_units_parse (const char *text, SimDimension dim, double *out, GError **error);

/* The currencies a price may name (ISO 4217 codes), NULL-terminated, static. */
const char *const *sim_units_currencies (void);

/* Parses a sum of money "1000 USD" (`per_time` FALSE) or a price per time "2.49 USD/h"
 * (`per_time` TRUE: CODE/s, CODE/min, CODE/h or CODE/d) into *amount (the currency's units,
 * per second for a rate) and currency[] (the code, NUL-terminated). The code is one of
 * sim_units_currencies(), case-sensitive. A bare number, a missing time unit where a rate is
 * expected (or one given where a sum is), an unknown code, trailing text or a negative or
 * non-finite value is SIM_UNITS_ERROR; the outputs are then untouched. Zero is accepted
 * here (the caller decides whether it may be). */
gboolean sim_units_parse_money (const char *text, gboolean per_time, double *amount,
                                char currency[4], GError **error);

/* Parses a dimensionless finite number (no unit allowed; "1e-3" ok). */
gboolean sim_units_parse_number (const char *text, double *out, GError **error);

/* Parses a non-negative integer count ("8"; no sign, no unit, no fraction) into *out.
 * A number that is not a plain digit string ("8.0", "-1", "1e3") or overflows guint64 is
 * SIM_UNITS_ERROR_RANGE; anything else ("8 GPUs", "") SIM_UNITS_ERROR_SYNTAX. */
gboolean sim_units_parse_count (const char *text, guint64 *out, GError **error);

/* sim_units_parse_count within [min, max]: any text that is not such a count (out of range,
 * too large for 64 bits, "1e30", "-1", "2.5", "8 GPUs", empty) is SIM_UNITS_ERROR_RANGE (or
 * SYNTAX when not a number at all) whose message gives the valid range: "'1e30' is not a
 * whole number in [1, 65536] (digits only: no sign, decimal point or exponent)", "'0' is
 * outside [1, 65536]". *out is untouched on failure. */
gboolean sim_units_parse_count_in (const char *text, guint64 min, guint64 max, guint64 *out,
                                   GError **error);

/* Parses "true"/"false"/"yes"/"no"/"1"/"0" (case-sensitive lower case). */
gboolean sim_units_parse_bool (const char *text, gboolean *out, GError **error);

/* Formats `value` (SI) with the conventional unit for `dim` and `digits` decimals (0..17):
 * bytes in GiB/MiB/KiB/B (binary, as nvidia-smi and PyTorch print memory), bandwidth in
 * GB/s, FLOP/s in TFLOP/s, FLOP in TFLOP/PFLOP, time in s/ms/us. The unit is the largest
 * of its list in which the value, rounded to `digits` decimals, is >= 1 ("80.00 GiB",
 * "12.3 ms", "1.000 s" for 0.99996 s); zero prints in the base unit ("0.00 B", "0.0 s").
 * Locale-independent ('.' decimal point); the result parses back with sim_units_parse().
 * Caller frees. */
char *sim_units_format (double value, SimDimension dim, int digits);

/* As sim_units_format, in the same unit, but the number rounded up to `digits` decimals
 * instead of to the nearest: a size printed this way is never below `value` ("needs 100.35
 * GiB" for 100.341 GiB, so a GPU of the printed size has the room). Caller frees. */
char *sim_units_format_up (double value, SimDimension dim, int digits);

/* The unit name used by sim_units_format()'s scaling for HDF5 `unit` attributes of raw SI
 * values: "B", "B/s", "FLOP/s", "FLOP", "s", "W", "J", "kg/J". Static string. */
const char *sim_units_si_name (SimDimension dim);
