/* tests/unit/sim/test_variant.c — sim/variant.h: bytes another process serialised are read
 * back exactly when in normal form, many variable-size elements included, and refused
 * otherwise. The refusals are what the linear reading rests on: a value is only read as
 * trusted (GLib then takes each child in O(1); untrusted, GLib 2.74 takes each in time
 * growing with its index, O(n^2) in all) after its bytes were checked. A
 * reader that went back to g_variant_new_from_bytes (…, FALSE) alone would accept every
 * corrupt answer below (reading defaults in its place) and fail these tests.
 */
#include "config.h"
#include "sim/variant.h"
#include "tests/testlib.h"

#include <string.h>

/* The bytes of `v` (sunk and unreffed here) as another process would send them. */
static GBytes *
bytes_of (GVariant *v)
{
  g_variant_ref_sink (v);
  GBytes *b = g_bytes_new (g_variant_get_data (v), g_variant_get_size (v));
  g_variant_unref (v);
  return b;
}

/* 65,536 entries shaped as /summary's answer (sim/h5out_read.c "a(smsdms)": name, unit or
 * none, value, text or none), enough data (~1.5 MB) for 4-byte offsets: every entry reads
 * back as built, in order. */
static void
test_many_entries_read_back (void)
{
  enum { N = 65536 };
  GVariantBuilder b;
  g_variant_builder_init (&b, G_VARIANT_TYPE ("a(smsdms)"));
  for (guint i = 0; i < N; i++)
    {
      g_autofree char *name = g_strdup_printf ("ranks/rank%u/device_used", i);
      g_autofree char *text = g_strdup_printf ("t%u", i);
      g_variant_builder_add (&b, "(smsdms)", name, i % 3 == 0 ? NULL : "B", 0.5 * i,
                             i % 5 == 0 ? text : NULL);
    }
  g_autoptr (GBytes) bytes = bytes_of (g_variant_builder_end (&b));
  g_autoptr (GVariant) v = sim_variant_new_checked (G_VARIANT_TYPE ("a(smsdms)"), bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v);
  CU_ASSERT_EQUAL (g_variant_n_children (v), N);
  GVariantIter it;
  g_variant_iter_init (&it, v);
  const char *name, *unit, *text;
  double value;
  guint i = 0, wrong = 0;
  while (g_variant_iter_next (&it, "(&sm&sdm&s)", &name, &unit, &value, &text))
    {
      g_autofree char *want = g_strdup_printf ("ranks/rank%u/device_used", i);
      g_autofree char *want_text = g_strdup_printf ("t%u", i);
      wrong += strcmp (name, want) != 0 || (unit == NULL) != (i % 3 == 0)
               || (unit != NULL && strcmp (unit, "B") != 0) || value != 0.5 * i
               || (text == NULL) != (i % 5 != 0)
               || (text != NULL && strcmp (text, want_text) != 0);
      i++;
    }
  CU_ASSERT_EQUAL (i, N);
  CU_ASSERT_EQUAL (wrong, 0);
}

/* "as" of "ab", "c" is "ab\0c\0" then the end offsets 3, 5 (one byte each: GVariant
 * specification, §Arrays of variable-size elements). Each corruption below makes it
 * non-normal: refused. The intact bytes are accepted (the check is not always false). */
static void
test_corrupt_array_refused (void)
{
  static const guint8 good[] = { 'a', 'b', 0, 'c', 0, 3, 5 };
  static const guint8 no_nul[] = { 'a', 'b', 'x', 'c', 0, 3, 5 };
  static const guint8 unordered[] = { 'a', 'b', 0, 'c', 0, 5, 3 };
  static const guint8 past_end[] = { 'a', 'b', 0, 'c', 0, 3, 9 };
  g_autoptr (GBytes) g = g_bytes_new_static (good, sizeof good);
  g_autoptr (GVariant) v = sim_variant_new_checked (G_VARIANT_TYPE ("as"), g);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v);
  g_autofree const char **s = g_variant_get_strv (v, NULL);
  CU_ASSERT_TRUE (g_strv_length ((char **) s) == 2 && strcmp (s[0], "ab") == 0
                  && strcmp (s[1], "c") == 0);
  const struct
  {
    const guint8 *data;
    gsize len;
  } bad[] = {
    { no_nul, sizeof no_nul }, { unordered, sizeof unordered }, { past_end, sizeof past_end },
    { good, sizeof good - 1 }, /* truncated: the last offset lost */
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GBytes) b = g_bytes_new_static (bad[i].data, bad[i].len);
      g_autoptr (GVariant) r = sim_variant_new_checked (G_VARIANT_TYPE ("as"), b);
      if (r != NULL)
        g_printerr ("\n  corrupt \"as\" %u accepted\n", i);
      CU_ASSERT_PTR_NULL (r);
    }
}

/* The MPI batch gather's answer (cli/cmd_batch.c, "a(ubsad)"): cut anywhere inside, the
 * bytes are refused, never merged with defaults for the rows lost. */
static void
test_truncated_results_refused (void)
{
  GVariantBuilder b;
  g_variant_builder_init (&b, G_VARIANT_TYPE ("a(ubsad)"));
  static const double m[] = { 1.5, 2.5 };
  for (guint32 i = 0; i < 3; i++)
    g_variant_builder_add (&b, "(ubs@ad)", i, i != 1, i == 1 ? "OOM" : "",
                           g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, m, 2,
                                                      sizeof (double)));
  g_autoptr (GBytes) all = bytes_of (g_variant_builder_end (&b));
  g_autoptr (GVariant) whole = sim_variant_new_checked (G_VARIANT_TYPE ("a(ubsad)"), all);
  CU_ASSERT_PTR_NOT_NULL_FATAL (whole);
  CU_ASSERT_EQUAL (g_variant_n_children (whole), 3);
  gsize n = g_bytes_get_size (all);
  guint accepted = 0;
  for (gsize len = 1; len < n; len++)
    {
      g_autoptr (GBytes) cut = g_bytes_new_from_bytes (all, 0, len);
      g_autoptr (GVariant) r = sim_variant_new_checked (G_VARIANT_TYPE ("a(ubsad)"), cut);
      accepted += r != NULL;
    }
  CU_ASSERT_EQUAL (accepted, 0);
}

static const StepsimTest tests[] = {
  { "65,536 variable-size entries read back exactly", test_many_entries_read_back },
  { "a corrupt array of strings is refused", test_corrupt_array_refused },
  { "truncated batch results are refused", test_truncated_results_refused },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/variant", tests);
}
