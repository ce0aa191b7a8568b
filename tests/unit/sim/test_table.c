/* tests/unit/sim/test_table.c — the results table (sim/table.h) and its HDF5 form
 * (sim_h5out_write_table): text output, TSV/CSV escaping, and the round trip
 * write → sim_h5out_export_tsv giving back exactly the TSV of the table. Values are exactly
 * representable, so %.17g prints them in their shortest form. */
#include "config.h"
#include "sim/h5out.h"
#include "sim/table.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* label (text) | step_time (s) | note (text), two rows; the second has no step time. */
static SimTable *
fixture (void)
{
  SimTable *t = sim_table_new ();
  guint l = sim_table_add_column (t, "label", SIM_TABLE_TEXT, NULL);
  guint s = sim_table_add_column (t, "step_time", SIM_TABLE_DOUBLE, "s");
  guint r0 = sim_table_add_row (t);
  sim_table_set_text (t, r0, l, "mb=1");
  sim_table_set_double (t, r0, s, 0.25);
  guint r1 = sim_table_add_row (t);
  sim_table_set_text (t, r1, l, "a,b \"q\"\tx");
  guint n = sim_table_add_column (t, "note", SIM_TABLE_TEXT, NULL); /* added after rows */
  sim_table_set_text (t, r0, n, "ok");
  return t;
}

static char *
to_text (const SimTable *t, char sep)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  CU_ASSERT_TRUE (sim_table_write_text (t, f, sep, NULL));
  fclose (f);
  return buf;
}

static void
test_defaults_and_lookup (void)
{
  g_autoptr (SimTable) t = fixture ();
  CU_ASSERT_EQUAL (sim_table_n_rows (t), 2);
  CU_ASSERT_EQUAL (sim_table_n_columns (t), 3);
  CU_ASSERT_EQUAL (sim_table_find_column (t, "step_time"), 1);
  CU_ASSERT_EQUAL (sim_table_find_column (t, "nope"), G_MAXUINT);
  CU_ASSERT_TRUE (isnan (sim_table_get_double (t, 1, 1)));   /* never set: no value */
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (t, 1, 2), ""); /* column added later */
  CU_ASSERT_STRING_EQUAL (sim_table_column_unit (t, 1), "s");
}

static void
test_tsv_escapes (void)
{
  g_autoptr (SimTable) t = fixture ();
  g_autofree char *tsv = to_text (t, '\t');
  CU_ASSERT_STRING_EQUAL (tsv, "label\tstep_time\tnote\n"
                               "mb=1\t0.25\tok\n"
                               "a,b \"q\"\\tx\tnan\t\n");
}

static void
test_csv_quotes (void)
{
  g_autoptr (SimTable) t = fixture ();
  g_autofree char *csv = to_text (t, ',');
  CU_ASSERT_STRING_EQUAL (csv, "label,step_time,note\n"
                               "mb=1,0.25,ok\n"
                               "\"a,b \"\"q\"\"\tx\",nan,\n");
}

static void
test_hdf5_round_trip (void)
{
  g_autoptr (SimTable) t = fixture ();
  g_autofree char *dir = g_dir_make_tmp ("stepsim-table-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "batch.h5", NULL);
  const char *attrs[] = { "program", "stepsim", "name", "my sweep", NULL };
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (path, "/results", t, attrs, &error));
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  CU_ASSERT_TRUE (sim_h5out_export_tsv (path, "/results", f, &error));
  fclose (f);
  g_autofree char *tsv = to_text (t, '\t');
  CU_ASSERT_STRING_EQUAL (buf, tsv);
  free (buf);
  g_autofree char *unit = sim_h5out_read_text_attr (path, "/results", "unit_step_time", NULL);
  CU_ASSERT_STRING_EQUAL (unit, "s");
  g_autofree char *name = sim_h5out_read_text_attr (path, "/", "name", NULL);
  CU_ASSERT_STRING_EQUAL (name, "my sweep");
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_same_table_same_bytes (void)
{
  g_autoptr (SimTable) t = fixture ();
  g_autofree char *dir = g_dir_make_tmp ("stepsim-table-XXXXXX", NULL);
  g_autofree char *a = g_build_filename (dir, "a.h5", NULL);
  g_autofree char *b = g_build_filename (dir, "b.h5", NULL);
  CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (a, "/results", t, NULL, NULL));
  CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (b, "/results", t, NULL, NULL));
  g_autofree char *ca = NULL, *cb = NULL;
  gsize la = 0, lb = 0;
  CU_ASSERT_TRUE (g_file_get_contents (a, &ca, &la, NULL) && g_file_get_contents (b, &cb, &lb, NULL));
  CU_ASSERT_TRUE (la == lb && memcmp (ca, cb, la) == 0);
  g_unlink (a);
  g_unlink (b);
  g_rmdir (dir);
}

static void
test_unwritable_leaves_nothing (void)
{
  g_autoptr (SimTable) t = fixture ();
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_h5out_write_table ("/nonexistent-dir/x.h5", "/results", t, NULL, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO));
  CU_ASSERT_PTR_NOT_NULL (error != NULL ? strstr (error->message, "/nonexistent-dir/x.h5") : NULL);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "defaults and lookup", test_defaults_and_lookup },
    { "TSV escapes like export", test_tsv_escapes },
    { "CSV quotes RFC 4180", test_csv_quotes },
    { "HDF5 table exports back to the same TSV", test_hdf5_round_trip },
    { "same table, same bytes", test_same_table_same_bytes },
    { "unwritable path: IO error, nothing left", test_unwritable_leaves_nothing },
  };
  return STEPSIM_RUN_TESTS ("table", tests);
}
