/* tests/unit/sim/test_units.c — strict unit parsing and formatting (sim/units.h).
 * Expected values are the definitions: decimal prefixes 10^3n, binary prefixes 2^10n,
 * bit/s divided by 8. */
#include "config.h"
#include "sim/units.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

typedef struct
{
  const char *text;
  SimDimension dim;
  double expected;
} Accept;

typedef struct
{
  const char *text;
  SimDimension dim;
  SimUnitsError code;
} Reject;

static void
test_accepts (void)
{
  static const Accept cases[] = {
    { "80 GiB", SIM_DIM_BYTES, 85899345920.0 },
    { "80GB", SIM_DIM_BYTES, 8e10 },
    { "  80 GiB  ", SIM_DIM_BYTES, 85899345920.0 },
    { "3e2 MB", SIM_DIM_BYTES, 3e8 },
    { "0.5 KiB", SIM_DIM_BYTES, 512.0 },
    { "2 PiB", SIM_DIM_BYTES, 2.0 * 1125899906842624.0 },
    { "450 GB/s", SIM_DIM_BANDWIDTH, 4.5e11 },
    { "400 Gbit/s", SIM_DIM_BANDWIDTH, 5e10 },
    { "1 GiB/s", SIM_DIM_BANDWIDTH, 1073741824.0 },
    { "989 TFLOP/s", SIM_DIM_FLOP_RATE, 9.89e14 },
    { "989 TFLOPS", SIM_DIM_FLOP_RATE, 9.89e14 },
    { "1.5 PFLOP", SIM_DIM_FLOP, 1.5e15 },
    { "3 EFLOP", SIM_DIM_FLOP, 3e18 },
    { "2 us", SIM_DIM_TIME, 2e-6 },
    { "2 \xc2\xb5s", SIM_DIM_TIME, 2e-6 },
    { "1.5 ms", SIM_DIM_TIME, 1.5e-3 },
    { "10 ns", SIM_DIM_TIME, 1e-8 },
    { "2 min", SIM_DIM_TIME, 120.0 },
    { "1 h", SIM_DIM_TIME, 3600.0 },
    { "0 s", SIM_DIM_TIME, 0.0 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      double v = -1.0;
      g_autoptr (GError) error = NULL;
      gboolean ok = sim_units_parse (cases[i].text, cases[i].dim, &v, &error);
      if (!ok)
        g_printerr ("\n  '%s' rejected: %s\n", cases[i].text, error->message);
      CU_ASSERT_TRUE (ok);
      STEPSIM_ASSERT_REL (v, cases[i].expected, 1e-15);
    }
}

static void
test_exact_values (void)
{
  /* Exact binary results: integers and the double nearest to the decimal literal. */
  double v = 0;
  CU_ASSERT_TRUE (sim_units_parse ("80 GiB", SIM_DIM_BYTES, &v, NULL));
  CU_ASSERT_EQUAL (v, 85899345920.0);
  CU_ASSERT_TRUE (sim_units_parse ("1.5 ms", SIM_DIM_TIME, &v, NULL));
  CU_ASSERT_EQUAL (v, 1.5e-3);
  CU_ASSERT_TRUE (sim_units_parse ("2 us", SIM_DIM_TIME, &v, NULL));
  CU_ASSERT_EQUAL (v, 2e-6);
}

static void
test_rejects (void)
{
  static const Reject cases[] = {
    { "80", SIM_DIM_BYTES, SIM_UNITS_ERROR_MISSING_UNIT },
    { "80 GiB extra", SIM_DIM_BYTES, SIM_UNITS_ERROR_SYNTAX },
    { "80 GiB # comment", SIM_DIM_BYTES, SIM_UNITS_ERROR_SYNTAX },
    { "80 Gib", SIM_DIM_BYTES, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "80 gb", SIM_DIM_BYTES, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "80 GB/s", SIM_DIM_BYTES, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "2 GiB", SIM_DIM_TIME, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "", SIM_DIM_BYTES, SIM_UNITS_ERROR_SYNTAX },
    { "   ", SIM_DIM_BYTES, SIM_UNITS_ERROR_SYNTAX },
    { "abc GiB", SIM_DIM_BYTES, SIM_UNITS_ERROR_SYNTAX },
    { "0x10 GiB", SIM_DIM_BYTES, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "1,5 GiB", SIM_DIM_BYTES, SIM_UNITS_ERROR_UNKNOWN_UNIT },
    { "nan GiB", SIM_DIM_BYTES, SIM_UNITS_ERROR_RANGE },
    { "inf GB", SIM_DIM_BYTES, SIM_UNITS_ERROR_RANGE },
    { "1e400 GB", SIM_DIM_BYTES, SIM_UNITS_ERROR_RANGE },
    { "1e-320 GB", SIM_DIM_BYTES, SIM_UNITS_ERROR_RANGE },   /* subnormal: precision lost */
    { "1e-300 ns", SIM_DIM_TIME, SIM_UNITS_ERROR_RANGE },    /* 1e-309 s: subnormal in SI */
    { "-5 GiB", SIM_DIM_BYTES, SIM_UNITS_ERROR_RANGE },
    { "-1 s", SIM_DIM_TIME, SIM_UNITS_ERROR_RANGE },
    { "-2 GB/s", SIM_DIM_BANDWIDTH, SIM_UNITS_ERROR_RANGE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      double v = 42.0;
      g_autoptr (GError) error = NULL;
      gboolean ok = sim_units_parse (cases[i].text, cases[i].dim, &v, &error);
      CU_ASSERT_FALSE (ok);
      CU_ASSERT_EQUAL (v, 42.0); /* untouched on failure */
      if (!g_error_matches (error, SIM_UNITS_ERROR, cases[i].code))
        g_printerr ("\n  '%s': expected code %d, got %s\n", cases[i].text, cases[i].code,
                    error ? error->message : "no error");
      CU_ASSERT_TRUE (g_error_matches (error, SIM_UNITS_ERROR, cases[i].code));
    }
}

static void
test_message_quotes_and_lists (void)
{
  g_autoptr (GError) error = NULL;
  double v;
  CU_ASSERT_FALSE (sim_units_parse ("80 Gib", SIM_DIM_BYTES, &v, &error));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "'80 Gib'"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "KiB, MiB, GiB"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "did you mean 'GiB'"));
}

static void
test_message_names_other_dimension (void)
{
  g_autoptr (GError) error = NULL;
  double v;
  CU_ASSERT_FALSE (sim_units_parse ("80 GB/s", SIM_DIM_BYTES, &v, &error));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "bandwidth"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "GiB"));
}

static void
test_parse_number (void)
{
  double v = 0;
  CU_ASSERT_TRUE (sim_units_parse_number ("1e-3", &v, NULL));
  CU_ASSERT_EQUAL (v, 1e-3);
  CU_ASSERT_TRUE (sim_units_parse_number ("-0.25", &v, NULL));
  CU_ASSERT_EQUAL (v, -0.25);
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
  CU_ASSERT_FALSE (sim_units_parse_number ("3 GiB", &v, &e1));
  CU_ASSERT_TRUE (g_error_matches (e1, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX));
  CU_ASSERT_FALSE (sim_units_parse_number ("nan", &v, &e2));
  CU_ASSERT_TRUE (g_error_matches (e2, SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE));
  CU_ASSERT_FALSE (sim_units_parse_number ("", &v, &e3));
  CU_ASSERT_TRUE (g_error_matches (e3, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX));
}

static void
test_parse_count (void)
{
  guint64 n = 0;
  CU_ASSERT_TRUE (sim_units_parse_count ("8", &n, NULL));
  CU_ASSERT_EQUAL (n, 8);
  CU_ASSERT_TRUE (sim_units_parse_count ("18446744073709551615", &n, NULL));
  CU_ASSERT_EQUAL (n, G_MAXUINT64);
  static const struct
  {
    const char *text;
    SimUnitsError code;
  } bad[] = {
    { "8.0", SIM_UNITS_ERROR_RANGE },   { "-1", SIM_UNITS_ERROR_RANGE },
    { "1e3", SIM_UNITS_ERROR_RANGE },   { "18446744073709551616", SIM_UNITS_ERROR_RANGE },
    { "8 GPUs", SIM_UNITS_ERROR_SYNTAX }, { "", SIM_UNITS_ERROR_SYNTAX },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      n = 7;
      CU_ASSERT_FALSE (sim_units_parse_count (bad[i].text, &n, &error));
      CU_ASSERT_EQUAL (n, 7);
      CU_ASSERT_TRUE (g_error_matches (error, SIM_UNITS_ERROR, bad[i].code));
    }
}

/* A count within a range: every failure gives the range, never ">= 0" when the range
 * starts at 1 (1e30 used to read "expected a count (a whole number >= 0, …)"). */
static void
test_parse_count_in (void)
{
  guint64 n = 0;
  CU_ASSERT_TRUE (sim_units_parse_count_in ("1", 1, 65536, &n, NULL));
  CU_ASSERT_EQUAL (n, 1);
  CU_ASSERT_TRUE (sim_units_parse_count_in (" 65536 ", 1, 65536, &n, NULL));
  CU_ASSERT_EQUAL (n, 65536);
  static const struct
  {
    const char *text, *message;
    SimUnitsError code;
  } bad[] = {
    { "1e30", "'1e30' is not a whole number in [1, 65536]", SIM_UNITS_ERROR_RANGE },
    { "-1", "'-1' is not a whole number in [1, 65536]", SIM_UNITS_ERROR_RANGE },
    { "2.5", "'2.5' is not a whole number in [1, 65536]", SIM_UNITS_ERROR_RANGE },
    { "0", "'0' is outside [1, 65536]", SIM_UNITS_ERROR_RANGE },
    { "65537", "'65537' is outside [1, 65536]", SIM_UNITS_ERROR_RANGE },
    { "99999999999999999999", "'99999999999999999999' is outside [1, 65536]",
      SIM_UNITS_ERROR_RANGE },
    { "8 GPUs", "'8 GPUs' is not a whole number in [1, 65536]", SIM_UNITS_ERROR_SYNTAX },
    { "", "'' is not a whole number in [1, 65536]", SIM_UNITS_ERROR_SYNTAX },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      n = 7;
      CU_ASSERT_FALSE (sim_units_parse_count_in (bad[i].text, 1, 65536, &n, &error));
      CU_ASSERT_EQUAL (n, 7);
      CU_ASSERT_TRUE (g_error_matches (error, SIM_UNITS_ERROR, bad[i].code));
      CU_ASSERT_PTR_NOT_NULL (error != NULL ? strstr (error->message, bad[i].message) : NULL);
      CU_ASSERT_PTR_NULL (error != NULL ? strstr (error->message, ">= 0") : NULL);
    }
}

static void
test_parse_bool (void)
{
  static const char *const yes[] = { "true", "yes", "1" };
  static const char *const no[] = { "false", "no", "0" };
  gboolean b;
  for (gsize i = 0; i < 3; i++)
    {
      b = FALSE;
      CU_ASSERT_TRUE (sim_units_parse_bool (yes[i], &b, NULL) && b);
      b = TRUE;
      CU_ASSERT_TRUE (sim_units_parse_bool (no[i], &b, NULL) && !b);
    }
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_units_parse_bool ("True", &b, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX));
}

static void
check_format (double value, SimDimension dim, int digits, const char *expected)
{
  g_autofree char *s = sim_units_format (value, dim, digits);
  if (strcmp (s, expected) != 0)
    g_printerr ("\n  format(%g) = '%s', expected '%s'\n", value, s, expected);
  CU_ASSERT_STRING_EQUAL (s, expected);
}

static void
test_format (void)
{
  check_format (85899345920.0, SIM_DIM_BYTES, 2, "80.00 GiB");
  check_format (512.0 * 1048576.0, SIM_DIM_BYTES, 1, "512.0 MiB");
  check_format (100.0, SIM_DIM_BYTES, 0, "100 B");
  check_format (0.0, SIM_DIM_BYTES, 2, "0.00 B");
  check_format (4.5e11, SIM_DIM_BANDWIDTH, 1, "450.0 GB/s");
  check_format (3.12e14, SIM_DIM_FLOP_RATE, 1, "312.0 TFLOP/s");
  check_format (5e14, SIM_DIM_FLOP, 1, "500.0 TFLOP");
  check_format (2.5e15, SIM_DIM_FLOP, 2, "2.50 PFLOP");
  check_format (1.234, SIM_DIM_TIME, 3, "1.234 s");
  check_format (0.0123, SIM_DIM_TIME, 1, "12.3 ms");
  check_format (4e-6, SIM_DIM_TIME, 1, "4.0 us");
  check_format (0.0, SIM_DIM_TIME, 1, "0.0 s");
}

static void
test_format_rounds_up_a_unit (void)
{
  /* 0.99996 s rounds to 1.000 in s with 3 digits, so it is printed in s, not "999.960 ms". */
  check_format (0.99996, SIM_DIM_TIME, 3, "1.000 s");
  check_format (0.9994, SIM_DIM_TIME, 3, "999.400 ms");
}

/* sim_units_format_up: the same unit, the number rounded up to the digits, so a printed
 * size is never below the value; a value already on the digits (up to a rounding error of
 * the division, 100.34 GiB / 0.01) stays as it is. */
static void
test_format_up (void)
{
  static const struct
  {
    double v;
    const char *expected;
  } cases[] = {
    { 100.341 * 1073741824.0, "100.35 GiB" }, /* nearest would print 100.34 */
    { 100.34 * 1073741824.0, "100.34 GiB" },
    { 80.0 * 1073741824.0, "80.00 GiB" },
    { 100.3401 * 1073741824.0, "100.35 GiB" },
    { 3.0 * 1048576.0 + 1, "3.01 MiB" },
    { 0.0, "0.00 B" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *s = sim_units_format_up (cases[i].v, SIM_DIM_BYTES, 2);
      if (strcmp (s, cases[i].expected) != 0)
        g_printerr ("\n  format_up(%.17g) = '%s', expected '%s'\n", cases[i].v, s,
                    cases[i].expected);
      CU_ASSERT_STRING_EQUAL (s, cases[i].expected);
      double back = -1;
      CU_ASSERT_TRUE (sim_units_parse (s, SIM_DIM_BYTES, &back, NULL));
      CU_ASSERT (back >= cases[i].v * (1 - 1e-12));
    }
}

static void
test_format_round_trips (void)
{
  static const struct
  {
    double v;
    SimDimension dim;
  } cases[] = {
    { 85899345920.0, SIM_DIM_BYTES }, { 3.0 * 1048576.0, SIM_DIM_BYTES },
    { 2.0e12, SIM_DIM_BANDWIDTH },    { 9.89e14, SIM_DIM_FLOP_RATE },
    { 1.5e15, SIM_DIM_FLOP },         { 0.0125, SIM_DIM_TIME },
    { 2.5e-5, SIM_DIM_TIME },         { 42.0, SIM_DIM_TIME },
    /* Found by tests/fuzz/fuzz_units: "%f" of a value this large has 191 integer digits;
     * a 39-byte buffer cut it to "93132257461547848743677345338311200912 GiB". */
    { 1e200, SIM_DIM_BYTES },         { 1.7976931348623157e308, SIM_DIM_TIME },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *s = sim_units_format (cases[i].v, cases[i].dim, 6);
      double back = -1.0;
      CU_ASSERT_TRUE (sim_units_parse (s, cases[i].dim, &back, NULL));
      STEPSIM_ASSERT_REL (back, cases[i].v, 1e-6);
    }
}

static void
test_si_names (void)
{
  CU_ASSERT_STRING_EQUAL (sim_units_si_name (SIM_DIM_BYTES), "B");
  CU_ASSERT_STRING_EQUAL (sim_units_si_name (SIM_DIM_BANDWIDTH), "B/s");
  CU_ASSERT_STRING_EQUAL (sim_units_si_name (SIM_DIM_FLOP_RATE), "FLOP/s");
  CU_ASSERT_STRING_EQUAL (sim_units_si_name (SIM_DIM_FLOP), "FLOP");
  CU_ASSERT_STRING_EQUAL (sim_units_si_name (SIM_DIM_TIME), "s");
}

/* Power, energy, carbon intensity and the day: exact SI values (1 Wh = 3600 J; 1 gCO2/kWh
 * = 1e-3 kg / 3.6e6 J; 1 d = 86400 s). */
static void
test_energy_units (void)
{
  double v = 0;
  CU_ASSERT_TRUE (sim_units_parse ("700 W", SIM_DIM_POWER, &v, NULL) && v == 700);
  CU_ASSERT_TRUE (sim_units_parse ("10.2 kW", SIM_DIM_POWER, &v, NULL) && v == 10.2 * 1e3);
  CU_ASSERT_TRUE (sim_units_parse ("1.5 MWh", SIM_DIM_ENERGY, &v, NULL) && v == 1.5 * 3.6e9);
  CU_ASSERT_TRUE (sim_units_parse ("400 gCO2/kWh", SIM_DIM_CARBON_INTENSITY, &v, NULL));
  STEPSIM_ASSERT_REL (v, 400e-3 / 3.6e6, 1e-15);
  CU_ASSERT_TRUE (sim_units_parse ("30d", SIM_DIM_TIME, &v, NULL) && v == 30 * 86400.0);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (sim_units_parse ("700", SIM_DIM_POWER, &v, &e));
  CU_ASSERT_TRUE (g_error_matches (e, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT));
  g_clear_error (&e);
  CU_ASSERT_FALSE (sim_units_parse ("700 W", SIM_DIM_ENERGY, &v, &e));
  CU_ASSERT_TRUE (g_error_matches (e, SIM_UNITS_ERROR, SIM_UNITS_ERROR_UNKNOWN_UNIT));
  g_autofree char *s = sim_units_format (3.6e9 * 2.5, SIM_DIM_ENERGY, 2);
  CU_ASSERT_STRING_EQUAL (s, "2.50 MWh");
}

/* Money: the code is kept, a rate is per second ("2.49 USD/h" = 2.49 / 3600 USD/s); a
 * bare number, no code, no time unit where a rate is expected, an unknown code, a negative
 * amount are errors, the outputs untouched. */
static void
test_money (void)
{
  double v = -1;
  char code[4] = "";
  CU_ASSERT_TRUE (sim_units_parse_money ("2.49 USD/h", TRUE, &v, code, NULL));
  CU_ASSERT_EQUAL (v, 2.49 / 3600);
  CU_ASSERT_STRING_EQUAL (code, "USD");
  CU_ASSERT_TRUE (sim_units_parse_money ("1000 EUR", FALSE, &v, code, NULL) && v == 1000);
  CU_ASSERT_STRING_EQUAL (code, "EUR");
  const char *bad_rates[] = { "2.49", "2.49 USD", "2.49 /h", "2.49 usd/h", "2.49 XYZ/h",
                              "2.49 USD/week", "-1 USD/h", "2.49 USD/h extra", NULL };
  for (guint i = 0; bad_rates[i] != NULL; i++)
    {
      v = -1;
      g_autoptr (GError) e = NULL;
      CU_ASSERT_FALSE (sim_units_parse_money (bad_rates[i], TRUE, &v, code, &e));
      CU_ASSERT_TRUE (e != NULL && e->domain == SIM_UNITS_ERROR && v == -1);
    }
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (sim_units_parse_money ("5 USD/h", FALSE, &v, code, &e));
  CU_ASSERT_EQUAL (v, -1);
}

static const StepsimTest tests[] = {
  { "power, energy, carbon intensity, days", test_energy_units },
  { "money: currency and time unit", test_money },
  { "accepts the documented units", test_accepts },
  { "gives exact SI values", test_exact_values },
  { "rejects malformed quantities with the right code", test_rejects },
  { "message quotes text, lists units, hints", test_message_quotes_and_lists },
  { "message names a unit's other dimension", test_message_names_other_dimension },
  { "parse_number", test_parse_number },
  { "parse_count", test_parse_count },
  { "parse_count_in: the range in every message", test_parse_count_in },
  { "parse_bool", test_parse_bool },
  { "format scales to the conventional unit", test_format },
  { "format moves up a unit when rounding reaches it", test_format_rounds_up_a_unit },
  { "format output parses back", test_format_round_trips },
  { "format_up rounds up in the same unit", test_format_up },
  { "SI unit names", test_si_names },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/units", tests);
}
