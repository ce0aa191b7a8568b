/* tests/unit/cli/test_results_read.c — the typed reader of result files (cli/report/results_read.h
 * over sim/h5out_read.c): files written by the real writers (sim_h5out_write of a recorder,
 * sim_h5out_write_table) read back as typed values; a missing object, entry or field and a
 * field of the wrong type are errors naming the file and the object. */
#include "config.h"
#include "cli/report/results_read.h"
#include "models/plan/plan.h"
#include "models/plan/simulate.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* A run of two ranks: summary texts and scalars, rank 0's memory in two categories, three
 * tasks. With `names` the stream and kind columns are enums (as stepsim run writes them),
 * else plain integers. */
static char *
write_run (const char *name, gboolean names)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_text (rec, "scenario", "tiny run");
  sim_recorder_summary_scalar (rec, "step_time", 1.25, "s");
  sim_recorder_summary_scalar (rec, "capacity", 80e9, "B");
  sim_recorder_summary_scalar (rec, "ranks/rank0/device_used", 3e9, "B");
  sim_recorder_summary_scalar (rec, "ranks/rank1/device_used", 4e9, "B");
  guint w = sim_recorder_series (rec, "rank0/memory/weights", "B");
  guint a = sim_recorder_series (rec, "rank0/memory/activations", "B");
  sim_recorder_set (rec, w, 0, 10);
  sim_recorder_set (rec, a, 0.5, 5);
  sim_recorder_set (rec, a, 1, 0);
  const SimTaskRecord tasks[] = {
    { 0, 0, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_FORWARD, "fwd L0 mb0", 0, 0, 0, 0.5, 1e12, 2e9 },
    { 1, 0, MODEL_STREAM_COMM, MODEL_TASK_KIND_COLLECTIVE, "allreduce", -1, -1, 0.5, 1, 0, 4e6 },
    { 2, 1, MODEL_STREAM_COMPUTE, MODEL_TASK_KIND_BACKWARD, "bwd L0 mb0", 0, 0, 0.5, 1.25, 2e12, 3e9 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    sim_recorder_add_task (rec, &tasks[i]);
  SimH5Meta meta = { "stepsim", "test", "", NULL, 0, NULL, 0 };
  if (names)
    {
      meta.kind_names = model_sim_kind_names ();
      meta.n_kind_names = MODEL_N_TASK_KINDS;
      meta.stream_names = model_sim_stream_names ();
      meta.n_stream_names = MODEL_N_STREAMS;
    }
  char *path = tmp_path (name);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE_FATAL (sim_h5out_write (path, rec, &meta, &e));
  return path;
}

/* The summary reads back in recorded order, typed, nested names relative to /summary. */
static void
test_summary (void)
{
  g_autofree char *h5 = write_run ("run.h5", TRUE);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliSummary) s = cli_read_summary (h5, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  CU_ASSERT_EQUAL_FATAL (s->entries->len, 5);
  const SimSummaryEntry *first = g_ptr_array_index (s->entries, 0);
  CU_ASSERT_STRING_EQUAL (first->name, "scenario");
  CU_ASSERT_STRING_EQUAL (cli_summary_text (s, "scenario", NULL), "tiny run");
  double v = 0;
  CU_ASSERT_TRUE (cli_summary_number (s, "step_time", &v, NULL));
  CU_ASSERT_EQUAL (v, 1.25);
  CU_ASSERT_STRING_EQUAL (cli_summary_find (s, "capacity")->unit, "B");
  CU_ASSERT_TRUE (cli_summary_number (s, "ranks/rank1/device_used", &v, NULL));
  CU_ASSERT_EQUAL (v, 4e9);
  CU_ASSERT_EQUAL (cli_summary_n_ranks (s), 2);
  /* a missing entry, and entries of the other type, name file and entry */
  CU_ASSERT_FALSE (cli_summary_number (s, "mfu", &v, &e));
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
  g_autofree char *want = g_strdup_printf ("%s: /summary/mfu: no such entry", h5);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "", want);
  g_clear_error (&e);
  CU_ASSERT_FALSE (cli_summary_number (s, "scenario", &v, &e));
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "/summary/scenario: a text, not a number") : NULL);
  g_clear_error (&e);
  CU_ASSERT_PTR_NULL (cli_summary_text (s, "step_time", &e));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "/summary/step_time: a number, not a text") : NULL);
}

/* Tasks read back field by field: enum names mapped onto stepsim's tables, the 48-byte
 * fixed label, -1 of the signed columns. */
static void
test_tasks (void)
{
  g_autofree char *h5 = write_run ("tasks.h5", TRUE);
  g_autoptr (GError) e = NULL;
  g_autoptr (GArray) t = cli_read_tasks (h5, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT_EQUAL_FATAL (t->len, 3);
  const CliTask *c = &g_array_index (t, CliTask, 1);
  CU_ASSERT_EQUAL (c->id, 1);
  CU_ASSERT_EQUAL (c->rank, 0);
  CU_ASSERT_EQUAL (c->stream, MODEL_STREAM_COMM);
  CU_ASSERT_EQUAL (c->kind, MODEL_TASK_KIND_COLLECTIVE);
  CU_ASSERT_STRING_EQUAL (c->label, "allreduce");
  CU_ASSERT_EQUAL (c->layer, -1);
  CU_ASSERT_EQUAL (c->micro_batch, -1);
  CU_ASSERT_EQUAL (c->start, 0.5);
  CU_ASSERT_EQUAL (c->end, 1);
  CU_ASSERT_EQUAL (c->bytes, 4e6);
  const CliTask *last = &g_array_index (t, CliTask, 2);
  CU_ASSERT_EQUAL (last->rank, 1);
  CU_ASSERT_EQUAL (last->kind, MODEL_TASK_KIND_BACKWARD);
  CU_ASSERT_EQUAL (last->flops, 2e12);
}

/* The memory of a rank over the union of the change times {0, 0.5, 1}: weights 10 from 0 on;
 * activations 0 before their first point at 0.5, then 5, then 0 from 1. */
static void
test_memory_timeline (void)
{
  g_autofree char *h5 = write_run ("mem.h5", TRUE);
  g_autoptr (GError) e = NULL;
  g_autoptr (SimH5Timeline) m = cli_read_memory (h5, 0, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL_FATAL (m->time->len, 3);
  CU_ASSERT_EQUAL_FATAL (m->names->len, 2);
  CU_ASSERT_STRING_EQUAL (g_ptr_array_index (m->names, 0), "weights"); /* creation order */
  CU_ASSERT_STRING_EQUAL (g_ptr_array_index (m->names, 1), "activations");
  const double times[] = { 0, 0.5, 1 }, weights[] = { 10, 10, 10 }, act[] = { 0, 5, 0 };
  GArray *w = g_ptr_array_index (m->values, 0), *a = g_ptr_array_index (m->values, 1);
  for (guint i = 0; i < 3; i++)
    {
      CU_ASSERT_EQUAL (g_array_index (m->time, double, i), times[i]);
      CU_ASSERT_EQUAL (g_array_index (w, double, i), weights[i]);
      CU_ASSERT_EQUAL (g_array_index (a, double, i), act[i]);
    }
  /* a rank the run does not have: the missing group is named, with the ranks there are */
  g_autoptr (SimH5Timeline) none = cli_read_memory (h5, 5, &e);
  CU_ASSERT_PTR_NULL (none);
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
  g_autofree char *want = g_strdup_printf (
    "%s: /series/rank5/memory: no such object (/series holds rank0)", h5);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "", want);
}

/* A batch table written by sim_h5out_write_table reads back with its kinds, units, NaNs and
 * the batch's name; a run file read as a batch only is "not a batch file", and as results a
 * one-row table of its summary. */
static void
test_results (void)
{
  g_autoptr (SimTable) t = sim_table_new ();
  guint label = sim_table_add_column (t, "label", SIM_TABLE_TEXT, NULL);
  guint status = sim_table_add_column (t, "status", SIM_TABLE_TEXT, NULL);
  guint mb = sim_table_add_column (t, "training.micro_batch", SIM_TABLE_DOUBLE, "");
  guint step = sim_table_add_column (t, "step_time", SIM_TABLE_DOUBLE, "s");
  for (guint r = 0; r < 2; r++)
    sim_table_add_row (t);
  sim_table_set_text (t, 0, label, "micro_batch=1");
  sim_table_set_text (t, 0, status, "ok");
  sim_table_set_double (t, 0, mb, 1);
  sim_table_set_double (t, 0, step, 0.75);
  sim_table_set_text (t, 1, label, "micro_batch=2\twith a tab");
  sim_table_set_text (t, 1, status, "failed");
  sim_table_set_double (t, 1, mb, 2);
  g_autofree char *h5 = tmp_path ("batch.h5");
  const char *attrs[] = { "name", "my sweep", NULL };
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (h5, "/results", t, attrs, &e));
  g_autoptr (CliResults) r = cli_read_results (h5, TRUE, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  CU_ASSERT_STRING_EQUAL (r->name, "my sweep");
  CU_ASSERT_STRING_EQUAL (r->object, "/results");
  const SimTable *b = r->table;
  CU_ASSERT_EQUAL_FATAL (sim_table_n_columns (b), 4);
  CU_ASSERT_EQUAL_FATAL (sim_table_n_rows (b), 2);
  CU_ASSERT_EQUAL (sim_table_column_kind (b, 0), SIM_TABLE_TEXT);
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (b, 1, 0), "micro_batch=2\twith a tab"); /* as is */
  CU_ASSERT_EQUAL (sim_table_column_kind (b, 2), SIM_TABLE_DOUBLE);
  CU_ASSERT_STRING_EQUAL (sim_table_column_name (b, 3), "step_time");
  CU_ASSERT_STRING_EQUAL (sim_table_column_unit (b, 3), "s");
  CU_ASSERT_EQUAL (sim_table_get_double (b, 0, 3), 0.75);
  CU_ASSERT_TRUE (isnan (sim_table_get_double (b, 1, 3)));
  /* a batch file has no /tasks: the missing object is named */
  g_autoptr (GArray) tasks = cli_read_tasks (h5, &e);
  CU_ASSERT_PTR_NULL (tasks);
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND));
  g_autofree char *want = g_strdup_printf ("%s: /tasks: no such object", h5);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "", want);
  g_clear_error (&e);
  /* a run file */
  g_autofree char *run = write_run ("run2.h5", TRUE);
  g_autoptr (CliResults) none = cli_read_results (run, TRUE, &e);
  CU_ASSERT_PTR_NULL (none);
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "not a batch file (no /results)") : NULL);
  g_clear_error (&e);
  g_autoptr (CliResults) row = cli_read_results (run, FALSE, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (row);
  CU_ASSERT_STRING_EQUAL (row->object, "/summary");
  CU_ASSERT_STRING_EQUAL (row->name, "tiny run");
  guint c = sim_table_find_column (row->table, "step_time");
  CU_ASSERT_FATAL (c != G_MAXUINT);
  CU_ASSERT_EQUAL (sim_table_get_double (row->table, 0, c), 1.25);
  CU_ASSERT_STRING_EQUAL (sim_table_get_text (row->table, 0, 0), "tiny run"); /* label */
}

/* /tasks fields of the wrong type or missing are errors naming file, object and field: a run
 * written without enum names (plain integer stream and kind columns), a table whose kind is a
 * number, one without bytes. */
static void
test_tasks_wrong_fields (void)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *plain = write_run ("plain.h5", FALSE);
  g_autoptr (GArray) t = cli_read_tasks (plain, &e);
  CU_ASSERT_PTR_NULL (t);
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  g_autofree char *want = g_strdup_printf ("%s: /tasks: field 'stream' holds numbers, not names",
                                           plain);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "", want);
  g_clear_error (&e);

  static const char *const fields[] = { "id", "rank", "stream", "kind", "label", "layer",
                                        "micro_batch", "start", "end", "flops", "bytes" };
  for (guint variant = 0; variant < 2; variant++)
    {
      g_autoptr (SimTable) bad = sim_table_new ();
      for (guint f = 0; f < G_N_ELEMENTS (fields); f++)
        {
          gboolean text = f >= 2 && f <= 4 && !(variant == 0 && f == 3); /* 0: kind a number */
          if (variant == 1 && f == 10)
            continue; /* 1: no bytes */
          sim_table_add_column (bad, fields[f], text ? SIM_TABLE_TEXT : SIM_TABLE_DOUBLE, "");
        }
      sim_table_add_row (bad);
      g_autofree char *h5 = tmp_path (variant == 0 ? "kind.h5" : "bytes.h5");
      CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (h5, "/tasks", bad, NULL, &e));
      g_autoptr (GArray) got = cli_read_tasks (h5, &e);
      CU_ASSERT_PTR_NULL (got);
      CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
      g_autofree char *msg = g_strdup_printf (variant == 0 ? "%s: /tasks: field 'kind' holds numbers, not names"
                                                           : "%s: /tasks: no field 'bytes'", h5);
      CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, msg) : NULL);
      g_clear_error (&e);
    }
}

/* A rank that is not an integer (a foreign or damaged file) is refused, naming row and field. */
static void
test_tasks_bad_rank (void)
{
  static const char *const fields[] = { "id", "rank", "stream", "kind", "label", "layer",
                                        "micro_batch", "start", "end", "flops", "bytes" };
  g_autoptr (SimTable) t = sim_table_new ();
  for (guint f = 0; f < G_N_ELEMENTS (fields); f++)
    sim_table_add_column (t, fields[f], f >= 2 && f <= 4 ? SIM_TABLE_TEXT : SIM_TABLE_DOUBLE, "");
  sim_table_add_row (t);
  for (guint f = 0; f < G_N_ELEMENTS (fields); f++)
    if (f < 2 || f > 4)
      sim_table_set_double (t, 0, f, f == 1 ? 1.5 : 0);
  g_autofree char *h5 = tmp_path ("rank.h5");
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE_FATAL (sim_h5out_write_table (h5, "/tasks", t, NULL, &e));
  g_autoptr (GArray) got = cli_read_tasks (h5, &e);
  CU_ASSERT_PTR_NULL (got);
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "/tasks: row 0: field 'rank' = 1.5 is not an integer") : NULL);
}

/* A file that is not HDF5 and one that does not exist: IO errors naming the file. */
static void
test_not_hdf5 (void)
{
  g_autofree char *txt = tmp_path ("notes.h5");
  g_assert (g_file_set_contents (txt, "not HDF5\n", -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (CliSummary) s = cli_read_summary (txt, &e);
  CU_ASSERT_PTR_NULL (s);
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, txt) : NULL);
  g_clear_error (&e);
  g_autofree char *missing = tmp_path ("missing.h5");
  g_autoptr (SimTable) t = sim_h5out_read_table (missing, "/results", &e);
  CU_ASSERT_PTR_NULL (t);
  g_autofree char *want = g_strdup_printf ("%s: no such file", missing);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "", want);
}

/* A dataset that is not a compound table, read as one: a format error naming it. */
static void
test_not_a_table (void)
{
  g_autofree char *h5 = write_run ("nt.h5", TRUE);
  g_autoptr (GError) e = NULL;
  g_autoptr (SimTable) t = sim_h5out_read_table (h5, "/series/time", &e);
  CU_ASSERT_PTR_NULL (t);
  CU_ASSERT_TRUE (g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "/series/time: not a compound table") : NULL);
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-results-read-XXXXXX");
  static const StepsimTest tests[] = {
    { "summary: typed entries, lookups and their errors", test_summary },
    { "tasks: fields read back typed", test_tasks },
    { "memory: series over the union of change times", test_memory_timeline },
    { "results: batch table typed; run as a batch or a row", test_results },
    { "tasks: missing and wrong-type fields named", test_tasks_wrong_fields },
    { "tasks: a non-integer rank is refused", test_tasks_bad_rank },
    { "not HDF5, no file: IO errors naming it", test_not_hdf5 },
    { "a scalar read as a table: format error", test_not_a_table },
  };
  int rc = STEPSIM_RUN_TESTS ("results_read", tests);
  g_autoptr (GDir) d = g_dir_open (tmpdir, 0, NULL);
  for (const char *n; d != NULL && (n = g_dir_read_name (d)) != NULL;)
    {
      g_autofree char *p = tmp_path (n);
      g_unlink (p);
    }
  g_rmdir (tmpdir);
  g_free (tmpdir);
  return rc;
}
