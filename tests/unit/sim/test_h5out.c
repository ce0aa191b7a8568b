/* tests/unit/sim/test_h5out.c — HDF5 output written by sim_h5out_write() and read back with
 * sim_h5out_export_tsv() (sim/h5out.h, doc/hdf5-layout.md). Each test writes into its own
 * temporary directory and checks exact TSV text: every value in the fixture is exactly
 * representable, so %.17g prints it in its shortest form. */
#include "config.h"
#include "sim/h5out.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <hdf5.h>
#include <string.h>

static const char *const kind_names[] = { "forward", "backward", "allreduce" };
static const char *const stream_names[] = { "compute", "comm" };

static const SimH5Meta meta = {
  .program = "stepsim",
  .version = PACKAGE_VERSION,
  .scenario_text = "[model]\nname = gpt2\n",
  .kind_names = kind_names,
  .n_kind_names = G_N_ELEMENTS (kind_names),
  .stream_names = stream_names,
  .n_stream_names = G_N_ELEMENTS (stream_names),
};

/* The fixture:
 *   rank0/memory/weights      (0,100) (3,50)        created first
 *   rank0/memory/activations  (1,10) (3,30) (4,0)   created second
 *   link/nvlink0/load         (0.5,1e9)
 * two tasks, three summary entries (one text with a tab). */
static SimRecorder *
fixture (void)
{
  SimRecorder *rec = sim_recorder_new ();
  guint w = sim_recorder_series (rec, "rank0/memory/weights", "B");
  guint a = sim_recorder_series (rec, "rank0/memory/activations", "B");
  guint l = sim_recorder_series (rec, "link/nvlink0/load", "B/s");
  sim_recorder_set (rec, w, 0.0, 100.0);
  sim_recorder_set (rec, a, 1.0, 10.0);
  sim_recorder_set (rec, w, 3.0, 50.0);
  sim_recorder_set (rec, a, 3.0, 30.0);
  sim_recorder_set (rec, a, 4.0, 0.0);
  sim_recorder_set (rec, l, 0.5, 1e9);
  SimTaskRecord t0 = { 7, 0, 0, 0, "fwd L3 mb0", 3, 0, 0.5, 1.25, 1e12, 4096 };
  SimTaskRecord t1 = { 8, 1, 1, 2, "allreduce grads", -1, -1, 1.25, 2.0, 0, 1048576 };
  sim_recorder_add_task (rec, &t0);
  sim_recorder_add_task (rec, &t1);
  sim_recorder_summary_scalar (rec, "step_time", 0.25, "s");
  sim_recorder_summary_text (rec, "verdict", "fits\tOK");
  sim_recorder_summary_scalar (rec, "mfu", 0.375, "1");
  return rec;
}

typedef struct
{
  char *dir;
  char *path;
} TmpOut;

static void
tmp_out_init (TmpOut *t)
{
  t->dir = g_dir_make_tmp ("stepsim-h5out-XXXXXX", NULL);
  g_assert (t->dir != NULL);
  t->path = g_build_filename (t->dir, "run.h5", NULL);
}

/* Number of directory entries, to prove no temporary file was left behind. */
static guint
dir_entries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

/* Removes the directory and the files directly in it. */
static void
tmp_out_clear (TmpOut *t)
{
  g_autoptr (GDir) d = g_dir_open (t->dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *p = g_build_filename (t->dir, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR))
        g_rmdir (p);
      else
        g_remove (p);
    }
  g_rmdir (t->dir);
  g_free (t->dir);
  g_free (t->path);
}

static void
write_fixture (const char *path)
{
  g_autoptr (SimRecorder) rec = fixture ();
  g_autoptr (GError) error = NULL;
  gboolean ok = sim_h5out_write (path, rec, &meta, &error);
  if (!ok)
    g_printerr ("\n  write failed: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
}

/* Exports `object` of `path` into a string (NULL on failure, with `error` set). */
static char *
export_text (const char *path, const char *object, GError **error)
{
  FILE *f = tmpfile ();
  g_assert (f != NULL);
  gboolean ok = sim_h5out_export_tsv (path, object, f, error);
  long len = ftell (f);
  rewind (f);
  char *buf = g_malloc0 ((gsize) MAX (len, 0) + 1);
  gsize got = fread (buf, 1, (gsize) MAX (len, 0), f);
  buf[got] = '\0';
  fclose (f);
  if (!ok)
    g_clear_pointer (&buf, g_free);
  return buf;
}

static void
check_export (const char *path, const char *object, const char *expected)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *text = export_text (path, object, &error);
  if (text == NULL)
    g_printerr ("\n  export %s failed: %s\n", object, error->message);
  else if (strcmp (text, expected) != 0)
    g_printerr ("\n  export %s gave:\n%s  expected:\n%s", object, text, expected);
  CU_ASSERT_PTR_NOT_NULL_FATAL (text);
  CU_ASSERT_STRING_EQUAL (text, expected);
}

static void
test_write_leaves_only_the_file (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  CU_ASSERT_TRUE (g_file_test (t.path, G_FILE_TEST_IS_REGULAR));
  CU_ASSERT_EQUAL (dir_entries (t.dir), 1);
  tmp_out_clear (&t);
}

static void
test_export_one_series (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  check_export (t.path, "/series/rank0/memory/weights", "time\tvalue\n0\t100\n3\t50\n");
  check_export (t.path, "/series/link/nvlink0/load", "time\tvalue\n0.5\t1000000000\n");
  tmp_out_clear (&t);
}

static void
test_export_group_merges_series (void)
{
  /* Union of change times {0,1,3,4}; each column is its step function, 0 before its
   * first point: weights 100,100,50,50; activations 0,10,30,0. Columns follow creation
   * order (weights before activations), not name order. */
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  check_export (t.path, "/series/rank0/memory",
                "time\tweights\tactivations\n"
                "0\t100\t0\n"
                "1\t100\t10\n"
                "3\t50\t30\n"
                "4\t50\t0\n");
  tmp_out_clear (&t);
}

static void
test_export_nested_group_names_columns_by_path (void)
{
  /* /series holds rank0/... then link/...: columns are relative paths, depth first. */
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  check_export (t.path, "/series",
                "time\trank0/memory/weights\trank0/memory/activations\tlink/nvlink0/load\n"
                "0\t100\t0\t0\n"
                "0.5\t100\t0\t1000000000\n"
                "1\t100\t10\t1000000000\n"
                "3\t50\t30\t1000000000\n"
                "4\t50\t0\t1000000000\n");
  tmp_out_clear (&t);
}

static void
test_export_summary (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  check_export (t.path, "/summary",
                "name\tvalue\tunit\n"
                "step_time\t0.25\ts\n"
                "verdict\tfits\\tOK\t\n"
                "mfu\t0.375\t1\n");
  tmp_out_clear (&t);
}

static void
test_export_summary_nested_names (void)
{
  /* A '/' in a summary name nests it in a group; export gives the relative path back. */
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_scalar (rec, "rank1/peak_allocated", 1024, "B");
  sim_recorder_summary_scalar (rec, "step_time", 2, "s");
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, rec, NULL, NULL));
  check_export (t.path, "/summary",
                "name\tvalue\tunit\n"
                "rank1/peak_allocated\t1024\tB\n"
                "step_time\t2\ts\n");
  tmp_out_clear (&t);
}

/* A recorder's further tables (sim_recorder_add_table) are written as /<name>, exported as
 * the table's own TSV, in the order added. */
static void
test_recorder_tables (void)
{
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_scalar (rec, "step_time", 2, "s");
  SimTable *ops = sim_table_new ();
  guint c_op = sim_table_add_column (ops, "op", SIM_TABLE_TEXT, NULL);
  guint c_time = sim_table_add_column (ops, "time", SIM_TABLE_DOUBLE, "s");
  guint r = sim_table_add_row (ops);
  sim_table_set_text (ops, r, c_op, "qkv");
  sim_table_set_double (ops, r, c_time, 0.5);
  r = sim_table_add_row (ops);
  sim_table_set_text (ops, r, c_op, "norm");
  sim_table_set_double (ops, r, c_time, 0.25);
  sim_recorder_add_table (rec, "ops", ops);
  SimTable *other = sim_table_new ();
  sim_table_set_double (other, sim_table_add_row (other),
                        sim_table_add_column (other, "n", SIM_TABLE_DOUBLE, "1"), 3);
  sim_recorder_add_table (rec, "more_2", other);
  CU_ASSERT_EQUAL (sim_recorder_n_tables (rec), 2);
  const char *name = NULL;
  CU_ASSERT_PTR_EQUAL (sim_recorder_table (rec, 1, &name), other);
  CU_ASSERT_STRING_EQUAL (name, "more_2");
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, rec, NULL, NULL));
  check_export (t.path, "/ops", "op\ttime\nqkv\t0.5\nnorm\t0.25\n");
  check_export (t.path, "/more_2", "n\n3\n");
  g_autoptr (GError) error = NULL;
  g_autofree char *unit = sim_h5out_read_text_attr (t.path, "/ops", "unit_time", &error);
  CU_ASSERT_STRING_EQUAL (unit != NULL ? unit : "", "s");
  tmp_out_clear (&t);
}

static void
test_export_tasks_with_enum_names (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  check_export (t.path, "/tasks",
                "id\trank\tstream\tkind\tlabel\tlayer\tmicro_batch\tstart\tend\tflops\tbytes\n"
                "7\t0\tcompute\tforward\tfwd L3 mb0\t3\t0\t0.5\t1.25\t1000000000000\t4096\n"
                "8\t1\tcomm\tallreduce\tallreduce grads\t-1\t-1\t1.25\t2\t0\t1048576\n");
  tmp_out_clear (&t);
}

static void
test_tasks_without_names_are_numbers (void)
{
  /* meta == NULL: no enum names, so stream and kind are plain u32 columns. */
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  SimTaskRecord task = { 1, 2, 3, 4, "caf\xc3\xa9", 5, 6, 0.5, 1, 2, 3 };
  sim_recorder_add_task (rec, &task);
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, rec, NULL, NULL));
  check_export (t.path, "/tasks",
                "id\trank\tstream\tkind\tlabel\tlayer\tmicro_batch\tstart\tend\tflops\tbytes\n"
                "1\t2\t3\t4\tcaf\xc3\xa9\t5\t6\t0.5\t1\t2\t3\n");
  tmp_out_clear (&t);
}

static void
test_export_plain_dataset (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  /* the point arrays of /series hold the series in index order: weights (0, 3), then
   * activations (1, 3, 4), then the link (0.5) */
  check_export (t.path, "/series/time", "value\n0\n3\n1\n3\n4\n0.5\n");
  check_export (t.path, "/series/index",
                "path\tunit\tfirst\tcount\n"
                "rank0/memory/weights\tB\t0\t2\n"
                "rank0/memory/activations\tB\t2\t3\n"
                "link/nvlink0/load\tB/s\t5\t1\n");
  /* one summary entry exports as the scalar dataset it used to be */
  check_export (t.path, "/summary/mfu", "value\n0.375\n");
  check_export (t.path, "/summary/verdict", "value\nfits\\tOK\n");
  tmp_out_clear (&t);
}

static void
test_attributes (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  static const char *const cases[][3] = {
    { "/", "program", "stepsim" },
    { "/", "version", PACKAGE_VERSION },
    { "/", "scenario", "[model]\nname = gpt2\n" },
    { "/series/time", "unit", "s" },
    /* every unit attribute of /tasks (doc/hdf5-layout.md), not a subset: a renamed one
     * breaks readers that go by the documented names */
    { "/tasks", "unit_start", "s" },
    { "/tasks", "unit_end", "s" },
    { "/tasks", "unit_flops", "FLOP" },
    { "/tasks", "unit_bytes", "B" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *v = sim_h5out_read_text_attr (t.path, cases[i][0], cases[i][1], &error);
      CU_ASSERT_PTR_NOT_NULL (v);
      if (v != NULL)
        CU_ASSERT_STRING_EQUAL (v, cases[i][2]);
    }
  tmp_out_clear (&t);
}

static void
test_export_missing_object (void)
{
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  g_autoptr (GError) e1 = NULL, e2 = NULL;
  g_autofree char *a = export_text (t.path, "/series/rank9/memory", &e1);
  CU_ASSERT_PTR_NULL (a);
  CU_ASSERT_TRUE (g_error_matches (e1, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
  g_autofree char *missing = g_build_filename (t.dir, "absent.h5", NULL);
  g_autofree char *b = export_text (missing, "/summary", &e2);
  CU_ASSERT_PTR_NULL (b);
  CU_ASSERT_TRUE (g_error_matches (e2, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO));
  tmp_out_clear (&t);
}

static void
test_unwritable_directory_fails_cleanly (void)
{
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = fixture ();
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (t.dir, "no-such-dir", "run.h5", NULL);
  CU_ASSERT_FALSE (sim_h5out_write (path, rec, &meta, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO));
  CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, path) : NULL);
  CU_ASSERT_EQUAL (dir_entries (t.dir), 0);
  tmp_out_clear (&t);
}

static void
test_rename_failure_removes_temp (void)
{
  /* The target is a directory: the temporary file is written, the rename fails, and the
   * temporary file must be gone afterwards. */
  TmpOut t;
  tmp_out_init (&t);
  g_assert (g_mkdir (t.path, 0700) == 0);
  g_autoptr (SimRecorder) rec = fixture ();
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_h5out_write (t.path, rec, &meta, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO));
  CU_ASSERT_EQUAL (dir_entries (t.dir), 1); /* only the directory run.h5 */
  tmp_out_clear (&t);
}

static void
test_hdf5_failure_mid_write_removes_temp (void)
{
  /* Duplicate kind names: libhdf5 refuses the enum of /tasks, written after /summary and
   * /series, so the failure comes with the file open and half written. */
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = fixture ();
  static const char *const twice[] = { "forward", "forward", "allreduce" };
  SimH5Meta m = meta;
  m.kind_names = twice;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_h5out_write (t.path, rec, &m, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_EQUAL (dir_entries (t.dir), 0);
  tmp_out_clear (&t);
}

static void
test_unnamed_kind_is_an_error (void)
{
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = fixture ();
  SimTaskRecord bad = { .id = 9, .kind = 3, .label = "x" };
  sim_recorder_add_task (rec, &bad);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_h5out_write (t.path, rec, &meta, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_EQUAL (dir_entries (t.dir), 0);
  tmp_out_clear (&t);
}

static void
test_same_input_same_bytes (void)
{
  TmpOut t;
  tmp_out_init (&t);
  g_autofree char *second = g_build_filename (t.dir, "again.h5", NULL);
  write_fixture (t.path);
  g_usleep (1100 * 1000); /* HDF5 timestamps have 1 s resolution: make them differ */
  write_fixture (second);
  g_autofree char *a = NULL, *b = NULL;
  gsize la = 0, lb = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (t.path, &a, &la, NULL));
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (second, &b, &lb, NULL));
  CU_ASSERT_EQUAL (la, lb);
  CU_ASSERT_TRUE (la == lb && memcmp (a, b, la) == 0);
  tmp_out_clear (&t);
}

static void
test_long_series_spans_blocks (void)
{
  /* 70001 alternating points cross a write block of 65536 (SERIES_BLOCK); the export must
   * return the points around the block boundary and the last one intact, one row each. */
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "x", "B");
  for (guint i = 0; i <= 70000; i++)
    sim_recorder_set (rec, s, i, i % 2);
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, rec, NULL, NULL));
  g_autofree char *text = export_text (t.path, "/series/x", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (text);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  CU_ASSERT_EQUAL (g_strv_length (lines), 1 + 70001 + 1); /* header, rows, final "" */
  CU_ASSERT_STRING_EQUAL (lines[65536], "65535\t1");
  CU_ASSERT_STRING_EQUAL (lines[65537], "65536\t0");
  CU_ASSERT_STRING_EQUAL (lines[70001], "70000\t0");
  tmp_out_clear (&t);
}


/* Counts the objects below the root (H5Ovisit calls back once per object, the root too). */
static herr_t
count_object (hid_t obj, const char *name, const H5O_info_t *info, void *data)
{
  (void) obj, (void) name, (void) info;
  ++*(guint *) data;
  return 0;
}

static guint
n_objects (const char *path)
{
  hid_t f = H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT);
  guint n = 0;
  CU_ASSERT_TRUE_FATAL (f >= 0);
  H5Ovisit (f, H5_INDEX_NAME, H5_ITER_INC, count_object, &n);
  H5Fclose (f);
  return n;
}

/* A run of `ranks` ranks as stepsim records one: per rank 14 series of 3 points
 * (rank<r>/memory/c<k>, value r·1000 + k·10 + j at time j + r/1024), a link series per
 * rank and two summary entries per rank. */
static SimRecorder *
ranks_fixture (guint ranks)
{
  SimRecorder *rec = sim_recorder_new ();
  for (guint r = 0; r < ranks; r++)
    {
      for (guint k = 0; k < 14; k++)
        {
          g_autofree char *p = g_strdup_printf ("rank%u/memory/c%u", r, k);
          guint s = sim_recorder_series (rec, p, "B");
          for (guint j = 0; j < 3; j++)
            sim_recorder_set (rec, s, j + r / 1024.0, r * 1000.0 + k * 10 + j);
        }
      g_autofree char *l = g_strdup_printf ("links/gpu%u.nvlink.tx", r);
      sim_recorder_set (rec, sim_recorder_series (rec, l, "B/s"), 0.5, 1e9 + r);
      g_autofree char *a = g_strdup_printf ("ranks/rank%u/peak_allocated", r);
      g_autofree char *d = g_strdup_printf ("ranks/rank%u/device_used", r);
      sim_recorder_summary_scalar (rec, a, 1e9 + r, "B");
      sim_recorder_summary_scalar (rec, d, 2e9 + r, "B");
    }
  sim_recorder_summary_scalar (rec, "step_time", 0.25, "s");
  return rec;
}

static void
test_objects_bounded_in_ranks (void)
{
  /* The layout holds a fixed set of objects whatever the ranks and series (doc/hdf5-layout.md):
   * the root, /summary, /series, /series/index, /series/time, /series/value, /tasks = 7. */
  TmpOut t;
  tmp_out_init (&t);
  g_autofree char *small = g_build_filename (t.dir, "small.h5", NULL);
  g_autoptr (SimRecorder) r8 = ranks_fixture (8);
  g_autoptr (SimRecorder) r512 = ranks_fixture (512);
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (small, r8, &meta, NULL));
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, r512, &meta, NULL));
  CU_ASSERT_EQUAL (n_objects (small), 7);
  CU_ASSERT_EQUAL (n_objects (t.path), 7);
  g_remove (small);
  /* values round-trip: rank 511's c13 (511013, 511014 and 511015 from 0 + 511/1024 on) */
  g_autofree char *ts = g_strdup_printf ("time\tvalue\n%s\t511130\n%s\t511131\n%s\t511132\n",
                                         "0.4990234375", "1.4990234375", "2.4990234375");
  check_export (t.path, "/series/rank511/memory/c13", ts);
  check_export (t.path, "/series/links/gpu300.nvlink.tx", "time\tvalue\n0.5\t1000000300\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (SimH5Timeline) m = sim_h5out_read_timeline (t.path, "/series/rank300/memory", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL (m->names->len, 14);
  CU_ASSERT_EQUAL (m->time->len, 3);
  CU_ASSERT_STRING_EQUAL (g_ptr_array_index (m->names, 7), "c7");
  GArray *c7 = g_ptr_array_index (m->values, 7);
  CU_ASSERT_DOUBLE_EQUAL (g_array_index (c7, double, 2), 300072, 0);
  CU_ASSERT_DOUBLE_EQUAL (g_array_index (m->time, double, 0), 300 / 1024.0, 0);
  g_autoptr (GPtrArray) sum = sim_h5out_read_summary (t.path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sum);
  CU_ASSERT_EQUAL (sum->len, 2 * 512 + 1);
  const SimSummaryEntry *e = g_ptr_array_index (sum, 2 * 511 + 1);
  CU_ASSERT_STRING_EQUAL (e->name, "ranks/rank511/device_used");
  CU_ASSERT_STRING_EQUAL (e->unit, "B");
  CU_ASSERT_DOUBLE_EQUAL (e->value, 2e9 + 511, 0);
  check_export (t.path, "/summary/ranks/rank7",
                "name\tvalue\tunit\npeak_allocated\t1000000007\tB\ndevice_used\t2000000007\tB\n");
  tmp_out_clear (&t);
}

static void
test_series_path_of_a_dataset_is_refused (void)
{
  /* "time" would be both a series and /series/time: the writer refuses it, leaves no file */
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_set (rec, sim_recorder_series (rec, "time/x", "s"), 0, 1);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sim_h5out_write (t.path, rec, NULL, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_EQUAL (dir_entries (t.dir), 0);
  tmp_out_clear (&t);
}

static void
test_former_layout_still_reads (void)
{
  /* tests/fuzz/corpus/h5/run-gpt2-1layer-v0.h5: written by stepsim before /series and
   * /summary became tables (one group per series, one dataset per summary entry) */
  g_autofree char *path = stepsim_test_srcpath ("tests/fuzz/corpus/h5/run-gpt2-1layer-v0.h5");
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) sum = sim_h5out_read_summary (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sum);
  CU_ASSERT_STRING_EQUAL (((SimSummaryEntry *) g_ptr_array_index (sum, 0))->name, "scenario");
  g_autoptr (SimH5Timeline) m = sim_h5out_read_timeline (path, "/series/rank0/memory", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_STRING_EQUAL (g_ptr_array_index (m->names, 0), "weights");
}

static void
test_h5dump_reads_the_file (void)
{
  g_autofree char *h5dump = g_find_program_in_path ("h5dump");
  if (h5dump == NULL)
    {
      /* hdf5-tools is part of the set-up command: without it this check fails, never passes */
      g_printerr ("\n  h5dump not found (apt-get install hdf5-tools): FAILED\n");
      CU_FAIL ("h5dump not found");
      return;
    }
  TmpOut t;
  tmp_out_init (&t);
  write_fixture (t.path);
  const char *argv[] = { h5dump, "-H", t.path, NULL };
  int status = -1;
  g_autofree char *out = NULL;
  gboolean spawned = g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                                   NULL, &out, NULL, &status, NULL);
  CU_ASSERT_TRUE (spawned);
  CU_ASSERT_EQUAL (status, 0); /* wait status 0: exited normally with code 0 */
  CU_ASSERT_PTR_NOT_NULL (out ? strstr (out, "DATASET \"tasks\"") : NULL);
  tmp_out_clear (&t);
}

/* The typed reads of a large run (sim/h5out_read.c): a /summary of 65,536 entries (two per
 * rank of 32,768, as a 4,096-node run records) and a /tasks of 65,536 rows, each label a
 * variable-size string, read back entry by entry and row by row in the file's order. Their
 * answers are arrays of that many variable-size elements, read through sim/variant.h in
 * O(n) (tests/unit/sim/test_variant.c checks the refusals that make that sound). */
static void
test_many_rows_read_back (void)
{
  enum { RANKS = 32768, TASKS = 65536 };
  TmpOut t;
  tmp_out_init (&t);
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  for (guint r = 0; r < RANKS; r++)
    {
      g_autofree char *u = g_strdup_printf ("ranks/rank%u/device_used", r);
      g_autofree char *v = g_strdup_printf ("ranks/rank%u/verdict", r);
      sim_recorder_summary_scalar (rec, u, 1e9 + r, "B");
      sim_recorder_summary_text (rec, v, r % 2 ? "fits" : "OOM");
    }
  for (guint i = 0; i < TASKS; i++)
    {
      g_autofree char *label = g_strdup_printf ("fwd L%u", i);
      SimTaskRecord k = { i, i % 8, i % 2, 0, label, (gint32) i, -1, 0.5 * i, 0.5 * i + 1,
                          2.0 * i, 0 };
      sim_recorder_add_task (rec, &k);
    }
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (t.path, rec, &meta, &error));
  g_autoptr (GPtrArray) sum = sim_h5out_read_summary (t.path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sum);
  CU_ASSERT_EQUAL_FATAL (sum->len, 2 * RANKS);
  guint wrong = 0;
  for (guint r = 0; r < RANKS; r++)
    {
      const SimSummaryEntry *u = g_ptr_array_index (sum, 2 * r);
      const SimSummaryEntry *v = g_ptr_array_index (sum, 2 * r + 1);
      g_autofree char *un = g_strdup_printf ("ranks/rank%u/device_used", r);
      g_autofree char *vn = g_strdup_printf ("ranks/rank%u/verdict", r);
      wrong += strcmp (u->name, un) != 0 || u->text != NULL || u->value != 1e9 + r
               || g_strcmp0 (u->unit, "B") != 0 || strcmp (v->name, vn) != 0
               || g_strcmp0 (v->text, r % 2 ? "fits" : "OOM") != 0;
    }
  CU_ASSERT_EQUAL (wrong, 0);
  g_autoptr (SimTable) tasks = sim_h5out_read_table (t.path, "/tasks", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (tasks);
  CU_ASSERT_EQUAL_FATAL (sim_table_n_rows (tasks), TASKS);
  guint id = sim_table_find_column (tasks, "id"), lab = sim_table_find_column (tasks, "label");
  guint end = sim_table_find_column (tasks, "end");
  CU_ASSERT_FATAL (id != G_MAXUINT && lab != G_MAXUINT && end != G_MAXUINT);
  for (guint i = 0; i < TASKS; i++)
    {
      g_autofree char *label = g_strdup_printf ("fwd L%u", i);
      wrong += sim_table_get_double (tasks, i, id) != i
               || strcmp (sim_table_get_text (tasks, i, lab), label) != 0
               || sim_table_get_double (tasks, i, end) != 0.5 * i + 1;
    }
  CU_ASSERT_EQUAL (wrong, 0);
  tmp_out_clear (&t);
}

static const StepsimTest tests[] = {
  { "write leaves only the target file", test_write_leaves_only_the_file },
  { "export one series", test_export_one_series },
  { "export a group merges its series", test_export_group_merges_series },
  { "export nested groups names columns by path", test_export_nested_group_names_columns_by_path },
  { "export /summary", test_export_summary },
  { "export /summary with nested names", test_export_summary_nested_names },
  { "export /tasks with enum names", test_export_tasks_with_enum_names },
    { "recorder tables written as /<name>, exported as the table", test_recorder_tables },
  { "tasks without enum names export numbers", test_tasks_without_names_are_numbers },
  { "export a plain dataset", test_export_plain_dataset },
  { "root and unit attributes", test_attributes },
  { "export of a missing object or file fails", test_export_missing_object },
  { "unwritable directory: error, no file", test_unwritable_directory_fails_cleanly },
  { "failed rename removes the temporary file", test_rename_failure_removes_temp },
  { "HDF5 failure mid-write removes the temporary file", test_hdf5_failure_mid_write_removes_temp },
  { "a task kind without a name is an error", test_unnamed_kind_is_an_error },
  { "same recorder gives byte-identical files", test_same_input_same_bytes },
  { "long series spans several write blocks", test_long_series_spans_blocks },
  { "h5dump -H reads the file", test_h5dump_reads_the_file },
  { "objects bounded in ranks; values round-trip", test_objects_bounded_in_ranks },
  { "a series path naming a /series dataset is refused", test_series_path_of_a_dataset_is_refused },
  { "files of the former layout still read", test_former_layout_still_reads },
  { "65,536 summary entries and task rows read back", test_many_rows_read_back },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/h5out", tests);
}
