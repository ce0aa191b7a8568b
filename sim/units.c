/* sim/units.c — strict parsing and printing of dimensioned quantities (see units.h).
 *
 * Grammar accepted by sim_units_parse() (ASCII spaces and tabs count as blanks):
 *   blanks? number blanks? unit blanks?
 *   number := [+-]? digits ('.' digits?)? | [+-]? '.' digits, then ([eE] [+-]? digits)?
 * The number is scanned here before g_ascii_strtod() converts it, so hexadecimal floats,
 * "nan", "inf" and locale-specific decimal separators never slip through; the words
 * nan/inf/infinity are recognised only to report them as RANGE errors (not finite).
 * The unit token is every non-blank byte after the number; it is looked up exactly
 * (case-sensitive) in one table of all dimensions, so a known unit of the wrong dimension
 * gets its own message ("'GB/s' is a bandwidth").
 *
 * Invariants: every accepted quantity is finite and non-negative; results are SI base units
 * (B, B/s, FLOP/s, FLOP, s). Factors below 1 are stored as exact integer divisors and
 * applied by division, so "1.5 ms" gives the double nearest to 1.5e-3, like the literal.
 *
 * Formatting (sim_units_format) picks the largest unit of a fixed ladder in which the value,
 * rounded to `digits` decimals, is at least 1 (0 uses the base unit):
 *   bytes B, KiB, MiB, GiB (binary, as nvidia-smi and PyTorch print memory; never TiB);
 *   bandwidth always GB/s; FLOP/s always TFLOP/s; FLOP TFLOP or PFLOP (TFLOP below 1 PFLOP);
 *   time us, ms, s; power W, kW, MW; energy J, Wh, kWh, MWh, GWh; carbon intensity always
 *   gCO2/kWh. Zero (and inf/nan) print in the SI base unit when the ladder has it
 *   ("0.00 B", "0.0 s"), else in the ladder's only/largest unit ("0.0 GB/s").
 * Every printed unit is accepted back by sim_units_parse() (round trip up to rounding).
 */
#include "config.h"
#include "sim/units.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "sim/text.h"

G_DEFINE_QUARK (stepsim-units-error-quark, sim_units_error)

typedef struct
{
  const char *name;
  SimDimension dim;
  double mul; /* value = number * mul / div */
  double div;
} UnitDef;

/* Decimal prefixes are powers of 1000, binary prefixes powers of 1024 (IEC 80000-13). */
static const UnitDef unit_table[] = {
  { "B", SIM_DIM_BYTES, 1.0, 1.0 },
  { "kB", SIM_DIM_BYTES, 1e3, 1.0 },
  { "MB", SIM_DIM_BYTES, 1e6, 1.0 },
  { "GB", SIM_DIM_BYTES, 1e9, 1.0 },
  { "TB", SIM_DIM_BYTES, 1e12, 1.0 },
  { "PB", SIM_DIM_BYTES, 1e15, 1.0 },
  { "KiB", SIM_DIM_BYTES, 1024.0, 1.0 },
  { "MiB", SIM_DIM_BYTES, 1048576.0, 1.0 },
  { "GiB", SIM_DIM_BYTES, 1073741824.0, 1.0 },
  { "TiB", SIM_DIM_BYTES, 1099511627776.0, 1.0 },
  { "PiB", SIM_DIM_BYTES, 1125899906842624.0, 1.0 },
  { "B/s", SIM_DIM_BANDWIDTH, 1.0, 1.0 },
  { "kB/s", SIM_DIM_BANDWIDTH, 1e3, 1.0 },
  { "MB/s", SIM_DIM_BANDWIDTH, 1e6, 1.0 },
  { "GB/s", SIM_DIM_BANDWIDTH, 1e9, 1.0 },
  { "TB/s", SIM_DIM_BANDWIDTH, 1e12, 1.0 },
  { "KiB/s", SIM_DIM_BANDWIDTH, 1024.0, 1.0 },
  { "MiB/s", SIM_DIM_BANDWIDTH, 1048576.0, 1.0 },
  { "GiB/s", SIM_DIM_BANDWIDTH, 1073741824.0, 1.0 },
  { "TiB/s", SIM_DIM_BANDWIDTH, 1099511627776.0, 1.0 },
  { "bit/s", SIM_DIM_BANDWIDTH, 1.0, 8.0 },
  { "kbit/s", SIM_DIM_BANDWIDTH, 1e3, 8.0 },
  { "Mbit/s", SIM_DIM_BANDWIDTH, 1e6, 8.0 },
  { "Gbit/s", SIM_DIM_BANDWIDTH, 1e9, 8.0 },
  { "Tbit/s", SIM_DIM_BANDWIDTH, 1e12, 8.0 },
  { "FLOP/s", SIM_DIM_FLOP_RATE, 1.0, 1.0 },
  { "kFLOP/s", SIM_DIM_FLOP_RATE, 1e3, 1.0 },
  { "MFLOP/s", SIM_DIM_FLOP_RATE, 1e6, 1.0 },
  { "GFLOP/s", SIM_DIM_FLOP_RATE, 1e9, 1.0 },
  { "TFLOP/s", SIM_DIM_FLOP_RATE, 1e12, 1.0 },
  { "PFLOP/s", SIM_DIM_FLOP_RATE, 1e15, 1.0 },
  /* The datasheet spelling "TFLOPS" (a rate, not a plural of FLOP). */
  { "FLOPS", SIM_DIM_FLOP_RATE, 1.0, 1.0 },
  { "kFLOPS", SIM_DIM_FLOP_RATE, 1e3, 1.0 },
  { "MFLOPS", SIM_DIM_FLOP_RATE, 1e6, 1.0 },
  { "GFLOPS", SIM_DIM_FLOP_RATE, 1e9, 1.0 },
  { "TFLOPS", SIM_DIM_FLOP_RATE, 1e12, 1.0 },
  { "PFLOPS", SIM_DIM_FLOP_RATE, 1e15, 1.0 },
  { "FLOP", SIM_DIM_FLOP, 1.0, 1.0 },
  { "kFLOP", SIM_DIM_FLOP, 1e3, 1.0 },
  { "MFLOP", SIM_DIM_FLOP, 1e6, 1.0 },
  { "GFLOP", SIM_DIM_FLOP, 1e9, 1.0 },
  { "TFLOP", SIM_DIM_FLOP, 1e12, 1.0 },
  { "PFLOP", SIM_DIM_FLOP, 1e15, 1.0 },
  { "EFLOP", SIM_DIM_FLOP, 1e18, 1.0 },
  { "s", SIM_DIM_TIME, 1.0, 1.0 },
  { "ms", SIM_DIM_TIME, 1.0, 1e3 },
  { "us", SIM_DIM_TIME, 1.0, 1e6 },
  { "\xc2\xb5s", SIM_DIM_TIME, 1.0, 1e6 }, /* U+00B5 MICRO SIGN */
  { "\xce\xbcs", SIM_DIM_TIME, 1.0, 1e6 }, /* U+03BC GREEK SMALL LETTER MU */
  { "ns", SIM_DIM_TIME, 1.0, 1e9 },
  { "min", SIM_DIM_TIME, 60.0, 1.0 },
  { "h", SIM_DIM_TIME, 3600.0, 1.0 },
  { "d", SIM_DIM_TIME, 86400.0, 1.0 },
  { "W", SIM_DIM_POWER, 1.0, 1.0 },
  { "kW", SIM_DIM_POWER, 1e3, 1.0 },
  { "MW", SIM_DIM_POWER, 1e6, 1.0 },
  { "J", SIM_DIM_ENERGY, 1.0, 1.0 },
  { "kJ", SIM_DIM_ENERGY, 1e3, 1.0 },
  { "MJ", SIM_DIM_ENERGY, 1e6, 1.0 },
  { "GJ", SIM_DIM_ENERGY, 1e9, 1.0 },
  { "Wh", SIM_DIM_ENERGY, 3600.0, 1.0 },
  { "kWh", SIM_DIM_ENERGY, 3.6e6, 1.0 },
  { "MWh", SIM_DIM_ENERGY, 3.6e9, 1.0 },
  { "GWh", SIM_DIM_ENERGY, 3.6e12, 1.0 },
  /* grams of CO2 per kWh: 1e-3 kg / 3.6e6 J */
  { "gCO2/kWh", SIM_DIM_CARBON_INTENSITY, 1e-3, 3.6e6 },
  { "kgCO2/kWh", SIM_DIM_CARBON_INTENSITY, 1.0, 3.6e6 },
  { "kgCO2/MWh", SIM_DIM_CARBON_INTENSITY, 1.0, 3.6e9 },
  { "tCO2/MWh", SIM_DIM_CARBON_INTENSITY, 1e3, 3.6e9 },
};

static const char *const dim_nouns[] = {
  [SIM_DIM_BYTES] = "a size",
  [SIM_DIM_BANDWIDTH] = "a bandwidth",
  [SIM_DIM_FLOP_RATE] = "a compute rate",
  [SIM_DIM_FLOP] = "an amount of work (FLOP)",
  [SIM_DIM_TIME] = "a time",
  [SIM_DIM_POWER] = "a power",
  [SIM_DIM_ENERGY] = "an energy",
  [SIM_DIM_CARBON_INTENSITY] = "a carbon intensity",
};

static gboolean
is_blank (char c)
{
  return c == ' ' || c == '\t';
}

static const char *
skip_blanks (const char *p)
{
  while (is_blank (*p))
    p++;
  return p;
}

static const char *
skip_digits (const char *p, gboolean *any)
{
  while (g_ascii_isdigit (*p))
    {
      p++;
      *any = TRUE;
    }
  return p;
}

/* Returns the end of the decimal number starting at p, or p itself if there is none. */
static const char *
scan_number (const char *p)
{
  const char *q = p;
  gboolean digits = FALSE;
  if (*q == '+' || *q == '-')
    q++;
  q = skip_digits (q, &digits);
  if (*q == '.')
    q = skip_digits (q + 1, &digits);
  if (!digits)
    return p;
  if (*q == 'e' || *q == 'E')
    {
      const char *e = q + 1;
      gboolean exp_digits = FALSE;
      if (*e == '+' || *e == '-')
        e++;
      e = skip_digits (e, &exp_digits);
      if (exp_digits)
        q = e;
    }
  return q;
}

/* TRUE if p starts with an optionally signed nan/inf/infinity word (case-insensitive). */
static gboolean
starts_non_finite (const char *p, const char **end)
{
  static const char *const words[] = { "infinity", "inf", "nan" };
  if (*p == '+' || *p == '-')
    p++;
  for (gsize i = 0; i < G_N_ELEMENTS (words); i++)
    {
      gsize n = strlen (words[i]);
      if (g_ascii_strncasecmp (p, words[i], n) == 0)
        {
          *end = p + n;
          return TRUE;
        }
    }
  return FALSE;
}

static char *
accepted_units (SimDimension dim)
{
  GString *s = g_string_new (NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (unit_table); i++)
    if (unit_table[i].dim == dim)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", unit_table[i].name);
  return g_string_free (s, FALSE);
}

static const char **
unit_names (SimDimension dim)
{
  GPtrArray *names = g_ptr_array_new ();
  for (gsize i = 0; i < G_N_ELEMENTS (unit_table); i++)
    if (unit_table[i].dim == dim)
      g_ptr_array_add (names, (gpointer) unit_table[i].name);
  g_ptr_array_add (names, NULL);
  return (const char **) g_ptr_array_free (names, FALSE);
}

static const UnitDef *
lookup_unit (const char *token)
{
  for (gsize i = 0; i < G_N_ELEMENTS (unit_table); i++)
    if (strcmp (unit_table[i].name, token) == 0)
      return &unit_table[i];
  return NULL;
}

/* Parses the number at the start of text (after blanks) into *value and sets *rest to what
 * follows it. A syntax or range problem sets `error`, quoting `text`. */
static gboolean
parse_leading_number (const char *text, double *value, const char **rest, GError **error)
{
  const char *p = skip_blanks (text);
  const char *end = scan_number (p);
  const char *word_end = NULL;
  if (end == p)
    {
      if (starts_non_finite (p, &word_end))
        g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                     "'%s': the number is not finite", text);
      else
        g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
                     *p ? "'%s': expected a decimal number" : "'%s': empty value", text);
      return FALSE;
    }
  /* Convert only the scanned text, so strtod cannot read further (e.g. "0x10" as hex). */
  g_autofree char *num = g_strndup (p, (gsize) (end - p));
  char *num_end = NULL;
  double v = g_ascii_strtod (num, &num_end);
  g_assert (*num_end == '\0');
  /* a subnormal (nonzero below DBL_MIN: strtod's ERANGE underflow) has lost its precision:
   * out of range as an overflow is */
  if (!isfinite (v) || fpclassify (v) == FP_SUBNORMAL)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                   "'%s': the number is out of range", text);
      return FALSE;
    }
  *value = v + 0.0; /* turns -0 into +0 */
  *rest = end;
  return TRUE;
}

static gboolean
check_unit (const char *text, const char *token, SimDimension dim, const UnitDef **def,
            GError **error)
{
  g_autofree char *accepted = accepted_units (dim);
  const UnitDef *u = lookup_unit (token);
  if (u != NULL && u->dim == dim)
    {
      *def = u;
      return TRUE;
    }
  if (u != NULL)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT,
                   "'%s': '%s' is %s, expected %s; accepted units: %s", text, token,
                   dim_nouns[u->dim], dim_nouns[dim], accepted);
      return FALSE;
    }
  g_autofree const char **names = unit_names (dim);
  char *msg = g_strdup_printf ("'%s': unknown unit '%s' for %s; accepted units: %s", text, token,
                               dim_nouns[dim], accepted);
  msg = sim_text_with_hint (msg, token, names);
  g_set_error_literal (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT, msg);
  g_free (msg);
  return FALSE;
}

/* After a value's unit: nothing but blanks may follow, and the value is not negative
 * (`noun` names the quantity in the message, e.g. "a price"). FALSE with `error` set. */
static gboolean
check_tail_and_sign (const char *text, const char *tok_end, double v, const char *noun,
                     GError **error)
{
  const char *trail = skip_blanks (tok_end);
  if (*trail)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
                   "'%s': unexpected text '%s' after the unit", text, trail);
      return FALSE;
    }
  if (v < 0.0)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                   "'%s': %s cannot be negative", text, noun);
      return FALSE;
    }
  return TRUE;
}

gboolean
sim_units_parse (const char *text, SimDimension dim, double *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  g_return_val_if_fail ((guint) dim < G_N_ELEMENTS (dim_nouns), FALSE);
  double v = 0.0;
  const char *p = NULL;
  if (!parse_leading_number (text, &v, &p, error))
    return FALSE;
  p = skip_blanks (p);
  const char *tok_end = p;
  while (*tok_end && !is_blank (*tok_end))
    tok_end++;
  if (tok_end == p)
    {
      g_autofree char *accepted = accepted_units (dim);
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                   "'%s': %s needs a unit; accepted units: %s", text, dim_nouns[dim], accepted);
      return FALSE;
    }
  g_autofree char *token = g_strndup (p, (gsize) (tok_end - p));
  const UnitDef *u = NULL;
  if (!check_unit (text, token, dim, &u, error))
    return FALSE;
  if (!check_tail_and_sign (text, tok_end, v, dim_nouns[dim], error))
    return FALSE;
  double si = v * u->mul / u->div;
  if (!isfinite (si) || (si != 0 && fabs (si) < DBL_MIN))
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                   "'%s': the value is out of range", text);
      return FALSE;
    }
  *out = si;
  return TRUE;
}

gboolean
sim_units_parse_number (const char *text, double *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  double v = 0.0;
  const char *p = NULL;
  if (!parse_leading_number (text, &v, &p, error))
    return FALSE;
  p = skip_blanks (p);
  if (*p)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
                   "'%s': unexpected text '%s' after the number (a plain number takes no unit)",
                   text, p);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

gboolean
sim_units_parse_count (const char *text, guint64 *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  const char *p = skip_blanks (text);
  gboolean any = FALSE;
  const char *end = skip_digits (p, &any);
  if (any && *skip_blanks (end) == '\0')
    {
      errno = 0;
      guint64 v = g_ascii_strtoull (p, NULL, 10);
      if (errno == ERANGE)
        {
          g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE, "'%s': count too large",
                       text);
          return FALSE;
        }
      *out = v;
      return TRUE;
    }
  /* Not plain digits: say "not a whole non-negative number" if it is a number at all. */
  double v = 0.0;
  g_autoptr (GError) num_error = NULL;
  if (sim_units_parse_number (text, &v, &num_error))
    g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                 "'%s': expected a count (a whole number >= 0, written without sign, "
                 "decimal point or exponent)",
                 text);
  else
    g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
                 *p ? "'%s': expected a count (digits only, no unit)" : "'%s': empty count",
                 text);
  return FALSE;
}

gboolean
sim_units_parse_count_in (const char *text, guint64 min, guint64 max, guint64 *out,
                          GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL && min <= max, FALSE);
  guint64 v = 0;
  g_autoptr (GError) e = NULL;
  if (sim_units_parse_count (text, &v, &e))
    {
      if (v >= min && v <= max)
        {
          *out = v;
          return TRUE;
        }
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                   "'%s' is outside [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]", text, min,
                   max);
      return FALSE;
    }
  /* digits beyond 64 bits are out of range too; a number in another form (sign, fraction,
   * exponent) is not a count; neither is text */
  const char *p = skip_blanks (text);
  gboolean any = FALSE;
  gboolean digits = *skip_blanks (skip_digits (p, &any)) == '\0' && any;
  if (digits)
    g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE,
                 "'%s' is outside [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]", text, min,
                 max);
  else
    g_set_error (error, SIM_UNITS_ERROR, e->code,
                 "'%s' is not a whole number in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                 "] (digits only: no sign, decimal point, exponent or unit)", text, min, max);
  return FALSE;
}

gboolean
sim_units_parse_bool (const char *text, gboolean *out, GError **error)
{
  static const char *const yes[] = { "true", "yes", "1" };
  static const char *const no[] = { "false", "no", "0" };
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  for (gsize i = 0; i < G_N_ELEMENTS (yes); i++)
    {
      if (strcmp (text, yes[i]) == 0)
        {
          *out = TRUE;
          return TRUE;
        }
      if (strcmp (text, no[i]) == 0)
        {
          *out = FALSE;
          return TRUE;
        }
    }
  g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX,
               "'%s': expected a boolean: true, false, yes, no, 1 or 0", text);
  return FALSE;
}

typedef struct
{
  const char *name;
  double scale; /* SI value of one unit */
} Rung;

static const Rung bytes_ladder[] = {
  { "GiB", 1073741824.0 }, { "MiB", 1048576.0 }, { "KiB", 1024.0 }, { "B", 1.0 }, { NULL, 0 }
};
static const Rung bandwidth_ladder[] = { { "GB/s", 1e9 }, { NULL, 0 } };
static const Rung rate_ladder[] = { { "TFLOP/s", 1e12 }, { NULL, 0 } };
static const Rung flop_ladder[] = { { "PFLOP", 1e15 }, { "TFLOP", 1e12 }, { NULL, 0 } };
static const Rung time_ladder[] = { { "s", 1.0 }, { "ms", 1e-3 }, { "us", 1e-6 }, { NULL, 0 } };
static const Rung power_ladder[] = { { "MW", 1e6 }, { "kW", 1e3 }, { "W", 1.0 }, { NULL, 0 } };
static const Rung energy_ladder[] = {
  { "GWh", 3.6e12 }, { "MWh", 3.6e9 }, { "kWh", 3.6e6 }, { "Wh", 3600.0 }, { "J", 1.0 }, { NULL, 0 }
};
static const Rung carbon_ladder[] = { { "gCO2/kWh", 1e-3 / 3.6e6 }, { NULL, 0 } };

static const Rung *const ladders[] = {
  [SIM_DIM_BYTES] = bytes_ladder,
  [SIM_DIM_BANDWIDTH] = bandwidth_ladder,
  [SIM_DIM_FLOP_RATE] = rate_ladder,
  [SIM_DIM_FLOP] = flop_ladder,
  [SIM_DIM_TIME] = time_ladder,
  [SIM_DIM_POWER] = power_ladder,
  [SIM_DIM_ENERGY] = energy_ladder,
  [SIM_DIM_CARBON_INTENSITY] = carbon_ladder,
};

/* sim_units_format, and sim_units_format_up when `up`. */
static char *
format_value (double value, SimDimension dim, int digits, gboolean up)
{
  g_return_val_if_fail ((guint) dim < G_N_ELEMENTS (ladders), NULL);
  digits = CLAMP (digits, 0, 17);
  const Rung *ladder = ladders[dim];
  const Rung *pick = &ladder[0];
  for (const Rung *r = ladder; r->name != NULL; r++)
    if (r->scale == 1.0)
      pick = r; /* zero and non-finite values print in the base unit when the ladder has it */
  double quantum = pow (10.0, -digits);
  if (value != 0.0 && isfinite (value))
    {
      /* Largest unit whose rounded magnitude is >= 1, so 0.9999 s prints "1.000 s"
       * rather than "1000.0 ms" or "999.9 ms" depending on digits. */
      for (const Rung *r = ladder; r->name != NULL; r++)
        {
          pick = r;
          if (round (fabs (value) / r->scale / quantum) * quantum >= 1.0)
            break;
        }
    }
  double shown = value / pick->scale;
  if (up && isfinite (shown))
    {
      /* the least multiple of the quantum at or above the value; a quotient a rounding
       * error above a whole number (100.34 / 0.01 = 10034.000000000002) stays on it */
      double q = shown / quantum;
      shown = (fabs (q - round (q)) <= 1e-9 * MAX (1.0, fabs (q)) ? round (q) : ceil (q))
              * quantum;
    }
  char fmt[16];
  /* %f prints every integer digit: up to DBL_MAX_10_EXP + 1 of them, a sign, the point and
   * 17 decimals (G_ASCII_DTOSTR_BUF_SIZE, 39, is only enough for %g: a larger value would be
   * cut off and print as a different number). */
  char num[DBL_MAX_10_EXP + 1 + G_ASCII_DTOSTR_BUF_SIZE];
  g_snprintf (fmt, sizeof fmt, "%%.%df", digits);
  g_ascii_formatd (num, sizeof num, fmt, shown);
  return g_strdup_printf ("%s %s", num, pick->name);
}

char *
sim_units_format (double value, SimDimension dim, int digits)
{
  return format_value (value, dim, digits, FALSE);
}

char *
sim_units_format_up (double value, SimDimension dim, int digits)
{
  return format_value (value, dim, digits, TRUE);
}

const char *
sim_units_si_name (SimDimension dim)
{
  static const char *const names[] = {
    [SIM_DIM_BYTES] = "B",
    [SIM_DIM_BANDWIDTH] = "B/s",
    [SIM_DIM_FLOP_RATE] = "FLOP/s",
    [SIM_DIM_FLOP] = "FLOP",
    [SIM_DIM_TIME] = "s",
    [SIM_DIM_POWER] = "W",
    [SIM_DIM_ENERGY] = "J",
    [SIM_DIM_CARBON_INTENSITY] = "kg/J",
  };
  g_return_val_if_fail ((guint) dim < G_N_ELEMENTS (names), NULL);
  return names[dim];
}

/* ---- money ---------------------------------------------------------------------------------- */

/* ISO 4217 codes of the currencies most prices are quoted in; stepsim never converts
 * between them (a scenario's prices must all name the same one, cli/report/training.h). */
static const char *const currencies[] = { "USD", "EUR", "GBP", "JPY", "CNY", "CHF", "CAD",
                                          "AUD", "INR", "KRW", "SEK", "NOK", "DKK", "SGD",
                                          NULL };

const char *const *
sim_units_currencies (void)
{
  return currencies;
}

/* The seconds of a price's time unit ("h" in "USD/h"), or 0 when it is not one. */
static double
price_period (const char *unit)
{
  static const char *const names[] = { "s", "min", "h", "d" };
  static const double secs[] = { 1, 60, 3600, 86400 };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (strcmp (unit, names[i]) == 0)
      return secs[i];
  return 0;
}

static gboolean
money_unit (const char *text, const char *token, gboolean per_time, double *period,
            char currency[4], GError **error)
{
  const char *slash = strchr (token, '/');
  g_autofree char *code = slash ? g_strndup (token, (gsize) (slash - token)) : g_strdup (token);
  if (!g_strv_contains (currencies, code))
    {
      g_autofree char *known = g_strjoinv (", ", (char **) currencies);
      char *msg = g_strdup_printf ("'%s': unknown currency '%s' (an ISO 4217 code: %s)", text,
                                   code, known);
      msg = sim_text_with_hint (msg, code, currencies);
      g_set_error_literal (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT, msg);
      g_free (msg);
      return FALSE;
    }
  if (per_time && (slash == NULL || (*period = price_period (slash + 1)) == 0))
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                   "'%s': a price per time needs a time unit after the currency: %s/h, %s/min, "
                   "%s/s or %s/d", text, code, code, code, code);
      return FALSE;
    }
  if (!per_time && slash != NULL)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT,
                   "'%s': expected a sum of money (e.g. 1000 %s), not a price per time", text,
                   code);
      return FALSE;
    }
  memcpy (currency, code, 4);
  return TRUE;
}

gboolean
sim_units_parse_money (const char *text, gboolean per_time, double *amount, char currency[4],
                       GError **error)
{
  g_return_val_if_fail (text != NULL && amount != NULL && currency != NULL, FALSE);
  double v = 0.0, period = 1.0;
  const char *p = NULL;
  if (!parse_leading_number (text, &v, &p, error))
    return FALSE;
  p = skip_blanks (p);
  const char *tok_end = p;
  while (*tok_end && !is_blank (*tok_end))
    tok_end++;
  if (tok_end == p)
    {
      g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                   per_time ? "'%s': a price needs its currency and time unit, e.g. 2.49 USD/h"
                            : "'%s': a sum of money needs its currency, e.g. 1000 USD", text);
      return FALSE;
    }
  g_autofree char *token = g_strndup (p, (gsize) (tok_end - p));
  char code[4];
  if (!money_unit (text, token, per_time, &period, code, error))
    return FALSE;
  if (!check_tail_and_sign (text, tok_end, v, "a price", error))
    return FALSE;
  *amount = v / period;
  memcpy (currency, code, 4);
  return TRUE;
}
