/* tests/unit/sim/test_h5read.c — reading damaged or foreign HDF5 files (sim/h5out_export.c,
 * sim/h5out_series.c, sim/h5out_guard.c): each file here breaks one rule of
 * doc/hdf5-layout.md in a way a corrupt byte can, and the export must answer with one
 * error naming the file and object — before the fix each of these crashed, overflowed a
 * buffer, allocated gigabytes or recursed without end.
 * The files are built with the HDF5 API directly (this test is not bound by the rule that
 * only sim/h5out*.c include hdf5.h, tests/layering.sh).
 */
#include "config.h"
#include "tests/testlib.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "sim/h5out.h"

static char *dir;

static char *
new_path (const char *name)
{
  if (dir == NULL)
    dir = g_dir_make_tmp ("stepsim-h5read-XXXXXX", NULL);
  g_assert (dir != NULL);
  return g_build_filename (dir, name, NULL);
}

/* Exports `object` of `path` with sim_h5out_export_tsv; returns the error (NULL on success)
 * and checks nothing was written on failure. */
static GError *
export_error (const char *path, const char *object)
{
  GError *error = NULL;
  FILE *f = tmpfile ();
  g_assert (f != NULL);
  gboolean ok = sim_h5out_export_tsv (path, object, f, &error);
  long len = ftell (f);
  fclose (f);
  if (!ok)
    CU_ASSERT_EQUAL (len, 0); /* no partial output */
  CU_ASSERT_TRUE (ok == (error == NULL));
  return error;
}

static void
check_refused (const char *path, const char *object, const char *words)
{
  g_autoptr (GError) error = export_error (path, object);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_TRUE (g_str_has_prefix (error->message, path));
  if (strstr (error->message, words) == NULL)
    g_printerr ("\n  '%s' lacks '%s'\n", error->message, words);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, words));
}

/* A 1-D double dataset `name` below `loc` with `n` values 0, 1, 2, … */
static void
put_doubles (hid_t loc, const char *name, const double *v, hsize_t n)
{
  hid_t s = H5Screate_simple (1, &n, NULL);
  hid_t d = H5Dcreate2 (loc, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  g_assert (d >= 0);
  g_assert (H5Dwrite (d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  H5Dclose (d);
  H5Sclose (s);
}

static hid_t
new_file (const char *path)
{
  H5Eset_auto2 (H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fcreate (path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  g_assert (f >= 0);
  return f;
}

/* /summary/model: a text entry whose dataspace holds 64 strings. The reader's buffer holds
 * one, so the read wrote 63 strings past it (ASan: heap-buffer-overflow). */
static void
test_string_of_several_elements (void)
{
  g_autofree char *path = new_path ("strings.h5");
  hid_t f = new_file (path);
  hid_t g = H5Gcreate2 (f, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = 64;
  hid_t s = H5Screate_simple (1, &n, NULL);
  hid_t t = H5Tcopy (H5T_C_S1);
  H5Tset_size (t, 8);
  hid_t d = H5Dcreate2 (g, "model", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  char text[64 * 8];
  memset (text, 'x', sizeof text);
  H5Dwrite (d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
  H5Dclose (d);
  H5Tclose (t);
  H5Sclose (s);
  H5Gclose (g);
  H5Fclose (f);
  check_refused (path, "/summary", "not one string");
  check_refused (path, "/summary/model", "not one string");
}

/* A series whose `time` dataset claims 2^33 points (an extendible dataset grown without
 * data: what one flipped byte of the dataspace gives). The point count was cast to guint
 * (2^33 -> 0) and 2^33 doubles read into the empty array; at 2^31 it was a 16 GiB
 * allocation. */
static void
test_point_count_larger_than_file (void)
{
  g_autofree char *path = new_path ("points.h5");
  hid_t f = new_file (path);
  hid_t g = H5Gcreate2 (f, "series", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sg = H5Gcreate2 (g, "x", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = (hsize_t) 1 << 33, one = 1, max = H5S_UNLIMITED, chunk = 16;
  hid_t s = H5Screate_simple (1, &one, &max);
  hid_t dcpl = H5Pcreate (H5P_DATASET_CREATE);
  H5Pset_chunk (dcpl, 1, &chunk);
  hid_t d = H5Dcreate2 (sg, "time", H5T_IEEE_F64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  g_assert (H5Dset_extent (d, &n) >= 0);
  H5Dclose (d);
  double v = 1.0;
  put_doubles (sg, "value", &v, 1);
  H5Pclose (dcpl);
  H5Sclose (s);
  H5Gclose (sg);
  H5Gclose (g);
  H5Fclose (f);
  check_refused (path, "/series/x", "claims 8589934592 values");
  check_refused (path, "/series/x/time", "claims 8589934592 values");
}

/* Times that are not strictly increasing (here a NaN) break the step-function merge. */
static void
test_times_not_increasing (void)
{
  g_autofree char *path = new_path ("times.h5");
  hid_t f = new_file (path);
  hid_t g = H5Gcreate2 (f, "series", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t a = H5Gcreate2 (g, "a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double t[] = { 0.0, NAN, 2.0 }, v[] = { 1.0, 2.0, 3.0 };
  put_doubles (a, "time", t, 3);
  put_doubles (a, "value", v, 3);
  H5Gclose (a);
  H5Gclose (g);
  H5Fclose (f);
  check_refused (path, "/series", "time[1]");
}

/* A soft link and a hard link back to an ancestor: the walk below /series followed both
 * without end (stack overflow). stepsim writes only hard links, never a cycle. */
static void
test_link_cycles (void)
{
  g_autofree char *soft = new_path ("soft.h5");
  hid_t f = new_file (soft);
  hid_t g = H5Gcreate2 (f, "series", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_soft ("/series", g, "loop", H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose (g);
  H5Fclose (f);
  check_refused (soft, "/series", "soft link");
  g_autoptr (GError) through = export_error (soft, "/series/loop");
  CU_ASSERT_TRUE (g_error_matches (through, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));

  g_autofree char *hard = new_path ("hard.h5");
  f = new_file (hard);
  g = H5Gcreate2 (f, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_hard (f, "/summary", g, "loop", H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose (g);
  H5Fclose (f);
  check_refused (hard, "/summary", "nested more than 16 deep");
  /* the root of a file without a series store names its objects, never walks them */
  g_autoptr (GError) root = export_error (hard, "/");
  CU_ASSERT_TRUE (g_error_matches (root, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
  CU_ASSERT_PTR_NOT_NULL (root != NULL ? strstr (root->message, "export one of its objects "
                                                                "(/summary)")
                                       : NULL);
}

/* An external link would make the reader open another file. */
static void
test_external_link (void)
{
  g_autofree char *path = new_path ("external.h5");
  hid_t f = new_file (path);
  H5Lcreate_external ("/etc/passwd", "/", f, "summary", H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose (f);
  g_autoptr (GError) error = export_error (path, "/summary");
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
}

/* A series' `value` whose dataspace a flipped byte made scalar over its 1-D chunks
 * (tests/h5mutate.sh, mutation 209): libhdf5 1.10 read it in an endless loop. */
static void
test_chunk_rank_mismatch (void)
{
  g_autofree char *path = stepsim_test_srcpath ("tests/fuzz/corpus/h5/series-scalar-space-1d-chunks-loop.h5");
  check_refused (path, "/series", "chunks of rank 1 in a dataspace of rank 0");
  check_refused (path, "/series/rank0/memory/comm_buffers/value", "chunks of rank 1");
}

/* Files that crash libhdf5 1.10 itself (found by tests/h5mutate.sh; see doc/hdf5-layout.md):
 * the export is one error naming the file and object, not a crash of the caller. */
static void
test_libhdf5_crash_is_contained (void)
{
  static const char *const files[][2] = {
    { "tests/fuzz/corpus/h5-libhdf5/heap-object-size-H5HG_read.h5", "/summary" },
    { "tests/fuzz/corpus/h5-libhdf5/cache-double-free.h5", "/summary" },
    { "tests/fuzz/corpus/h5-libhdf5/btree2-header-H5F__accum_read.h5", "/series" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *path = stepsim_test_srcpath (files[i][0]);
      g_autoptr (GError) error = export_error (path, files[i][1]);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      CU_ASSERT_TRUE (g_str_has_prefix (error->message, path));
      g_autoptr (GError) e2 = NULL;
      g_free (sim_h5out_read_text_attr (path, "/", "scenario", &e2)); /* returns either way */
    }
}

/* The typed reads (sim/h5out_read.c) run in the same guarded reader: the files that crash
 * libhdf5 give one error naming the file and object there too, never a crash of the caller. */
static void
test_typed_reads_contained (void)
{
  static const char *const files[] = {
    "tests/fuzz/corpus/h5-libhdf5/heap-object-size-H5HG_read.h5",
    "tests/fuzz/corpus/h5-libhdf5/cache-double-free.h5",
    "tests/fuzz/corpus/h5-libhdf5/btree2-header-H5F__accum_read.h5",
  };
  guint refused = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *path = stepsim_test_srcpath (files[i]);
      g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
      g_autoptr (GPtrArray) summary = sim_h5out_read_summary (path, &e1);
      g_autoptr (SimH5Timeline) series = sim_h5out_read_timeline (path, "/series", &e2);
      g_autoptr (SimTable) tasks = sim_h5out_read_table (path, "/tasks", &e3);
      GError *errors[] = { e1, e2, e3 };
      for (guint k = 0; k < G_N_ELEMENTS (errors); k++)
        if (errors[k] != NULL)
          {
            refused++;
            CU_ASSERT_TRUE (g_str_has_prefix (errors[k]->message, path));
          }
    }
  /* the object each file was kept for (test_libhdf5_crash_is_contained) is refused at least */
  CU_ASSERT_TRUE (refused >= G_N_ELEMENTS (files));
}

static const StepsimTest tests[] = {
  { "typed reads of libhdf5-crashing files are contained", test_typed_reads_contained },
  { "a text entry of several strings is refused", test_string_of_several_elements },
  { "a point count larger than the file is refused", test_point_count_larger_than_file },
  { "series times must increase", test_times_not_increasing },
  { "soft links and link cycles are refused", test_link_cycles },
  { "an external link is not followed", test_external_link },
  { "chunks of another rank than the dataspace are refused", test_chunk_rank_mismatch },
  { "a libhdf5 crash becomes one error", test_libhdf5_crash_is_contained },
};

int
main (void)
{
  int rc = STEPSIM_RUN_TESTS ("sim/h5read", tests);
  if (dir != NULL)
    {
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      const char *name;
      while (d != NULL && (name = g_dir_read_name (d)) != NULL)
        {
          g_autofree char *p = g_build_filename (dir, name, NULL);
          g_remove (p);
        }
      g_rmdir (dir);
    }
  return rc;
}
