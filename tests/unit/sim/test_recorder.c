/* tests/unit/sim/test_recorder.c — series change points, task records and summary entries
 * (sim/recorder.h). */
#include "config.h"
#include "sim/recorder.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

/* Asserts that series `id` holds exactly the n points (t[i], v[i]). */
static void
assert_points (const SimRecorder *rec, guint id, guint n, const double *t, const double *v)
{
  const double *times = NULL, *values = NULL;
  guint got = sim_recorder_series_points (rec, id, &times, &values);
  CU_ASSERT_EQUAL (got, n);
  for (guint i = 0; i < MIN (got, n); i++)
    {
      CU_ASSERT_EQUAL (times[i], t[i]);
      CU_ASSERT_EQUAL (values[i], v[i]);
    }
}

static void
test_change_points_only (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "rank0/memory/weights", "B");
  sim_recorder_set (rec, s, 0.0, 5.0);
  sim_recorder_set (rec, s, 1.0, 5.0); /* no change: nothing recorded */
  sim_recorder_set (rec, s, 2.0, 7.0);
  sim_recorder_set (rec, s, 3.0, 7.0);
  const double t[] = { 0.0, 2.0 }, v[] = { 5.0, 7.0 };
  assert_points (rec, s, 2, t, v);
}

static void
test_first_point_kept_even_if_zero (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "a", "B");
  sim_recorder_set (rec, s, 1.0, 0.0);
  const double t[] = { 1.0 }, v[] = { 0.0 };
  assert_points (rec, s, 1, t, v);
}

static void
test_same_time_replaces (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "a", "B");
  sim_recorder_set (rec, s, 0.0, 1.0);
  sim_recorder_set (rec, s, 1.0, 2.0);
  sim_recorder_set (rec, s, 1.0, 3.0);
  const double t[] = { 0.0, 1.0 }, v[] = { 1.0, 3.0 };
  assert_points (rec, s, 2, t, v);
}

static void
test_same_time_replace_back_to_previous_drops (void)
{
  /* alloc then free at the same instant: the spike never existed. */
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "a", "B");
  sim_recorder_set (rec, s, 0.0, 1.0);
  sim_recorder_add (rec, s, 1.0, 4.0);
  sim_recorder_add (rec, s, 1.0, -4.0);
  sim_recorder_set (rec, s, 2.0, 1.0); /* still no change */
  const double t[] = { 0.0 }, v[] = { 1.0 };
  assert_points (rec, s, 1, t, v);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, s), 1.0);
}

static void
test_add_accumulates (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "a", "B");
  sim_recorder_add (rec, s, 0.0, 10.0); /* from 0 when empty */
  sim_recorder_add (rec, s, 1.0, 5.0);
  sim_recorder_add (rec, s, 2.0, -12.0);
  const double t[] = { 0.0, 1.0, 2.0 }, v[] = { 10.0, 15.0, 3.0 };
  assert_points (rec, s, 3, t, v);
  CU_ASSERT_EQUAL (sim_recorder_series_last (rec, s), 3.0);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, s), 15.0);
}

static void
test_empty_series_last_and_max_are_zero (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  guint s = sim_recorder_series (rec, "a", "B");
  CU_ASSERT_EQUAL (sim_recorder_series_points (rec, s, NULL, NULL), 0);
  CU_ASSERT_EQUAL (sim_recorder_series_last (rec, s), 0.0);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, s), 0.0);
}

static void
test_series_creation_order_and_lookup (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  static const char *const paths[] = { "z", "a", "m/x", "b" };
  for (gsize i = 0; i < G_N_ELEMENTS (paths); i++)
    CU_ASSERT_EQUAL (sim_recorder_series (rec, paths[i], "B/s"), i);
  CU_ASSERT_EQUAL (sim_recorder_series (rec, "a", "B/s"), 1); /* existing id */
  CU_ASSERT_EQUAL (sim_recorder_n_series (rec), 4);
  for (guint i = 0; i < 4; i++)
    {
      CU_ASSERT_STRING_EQUAL (sim_recorder_series_path (rec, i), paths[i]);
      CU_ASSERT_STRING_EQUAL (sim_recorder_series_unit (rec, i), "B/s");
    }
}

static void
test_tasks_in_insertion_order (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *label = g_strdup_printf ("task %u", 10 - i);
      SimTaskRecord t = { .id = 10 - i, .rank = i, .kind = 2, .label = label, .layer = -1,
                          .micro_batch = (gint32) i, .start = i, .end = i + 0.5,
                          .flops = 1e12, .bytes = 4096 };
      sim_recorder_add_task (rec, &t);
    } /* labels freed here: the recorder must own copies */
  CU_ASSERT_EQUAL (sim_recorder_n_tasks (rec), 3);
  for (guint i = 0; i < 3; i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      g_autofree char *label = g_strdup_printf ("task %u", 10 - i);
      CU_ASSERT_EQUAL (t->id, 10 - i);
      CU_ASSERT_EQUAL (t->rank, i);
      CU_ASSERT_STRING_EQUAL (t->label, label);
      CU_ASSERT_EQUAL (t->end, i + 0.5);
      CU_ASSERT_EQUAL (t->layer, -1);
    }
}

static void
test_label_truncated_on_utf8_boundary (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  /* 46 ASCII bytes then "é" (2 bytes) = 48 bytes: byte 47 would split the é, so the kept
   * label is the 46 ASCII bytes. */
  g_autofree char *ascii = g_strnfill (46, 'x');
  g_autofree char *label = g_strconcat (ascii, "\xc3\xa9", NULL);
  SimTaskRecord t = { .label = label };
  sim_recorder_add_task (rec, &t);
  CU_ASSERT_STRING_EQUAL (sim_recorder_task (rec, 0)->label, ascii);
  /* 60 ASCII bytes keep exactly SIM_TASK_LABEL_MAX-1 of them. */
  g_autofree char *long_ascii = g_strnfill (60, 'y');
  t.label = long_ascii;
  sim_recorder_add_task (rec, &t);
  CU_ASSERT_EQUAL (strlen (sim_recorder_task (rec, 1)->label), SIM_TASK_LABEL_MAX - 1);
  CU_ASSERT_TRUE (g_utf8_validate (sim_recorder_task (rec, 0)->label, -1, NULL));
}

static void
test_summary_order_and_replace (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_scalar (rec, "step_time", 1.5, "s");
  sim_recorder_summary_text (rec, "fits", "yes");
  sim_recorder_summary_scalar (rec, "mfu", 0.4, "1");
  sim_recorder_summary_scalar (rec, "step_time", 2.5, "s"); /* replaced in place */
  sim_recorder_summary_text (rec, "mfu", "n/a");            /* scalar becomes text */
  CU_ASSERT_EQUAL (sim_recorder_n_summary (rec), 3);
  const SimSummaryEntry *e0 = sim_recorder_summary_entry (rec, 0);
  const SimSummaryEntry *e2 = sim_recorder_summary_entry (rec, 2);
  CU_ASSERT_STRING_EQUAL (e0->name, "step_time");
  CU_ASSERT_EQUAL (e0->value, 2.5);
  CU_ASSERT_STRING_EQUAL (sim_recorder_summary_entry (rec, 1)->name, "fits");
  CU_ASSERT_STRING_EQUAL (e2->name, "mfu");
  CU_ASSERT_PTR_NULL (e2->unit);
  CU_ASSERT_STRING_EQUAL (e2->text, "n/a");
}

static void
test_summary_get (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_scalar (rec, "peak", 8e10, "B");
  sim_recorder_summary_text (rec, "note", "x");
  double v = 0;
  CU_ASSERT_TRUE (sim_recorder_summary_get (rec, "peak", &v));
  CU_ASSERT_EQUAL (v, 8e10);
  CU_ASSERT_FALSE (sim_recorder_summary_get (rec, "note", &v));
  CU_ASSERT_FALSE (sim_recorder_summary_get (rec, "absent", &v));
}

/* summary_keep: the kept names are recorded as without it (order, value, replace, text), the
 * others not at all; NULL records every name again. */
static void
test_summary_keep (void)
{
  g_autoptr (GHashTable) keep = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_add (keep, (gpointer) "peak");
  g_hash_table_add (keep, (gpointer) "fits");
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_keep (rec, keep);
  sim_recorder_summary_scalar (rec, "step_time", 1.5, "s");
  sim_recorder_summary_scalar (rec, "peak", 8e10, "B");
  sim_recorder_summary_text (rec, "note", "x");
  sim_recorder_summary_text (rec, "fits", "yes");
  sim_recorder_summary_scalar (rec, "peak", 9e10, "B"); /* replaced in place */
  CU_ASSERT_EQUAL (sim_recorder_n_summary (rec), 2);
  CU_ASSERT_STRING_EQUAL (sim_recorder_summary_entry (rec, 0)->name, "peak");
  CU_ASSERT_STRING_EQUAL (sim_recorder_summary_entry (rec, 1)->name, "fits");
  double v = 0;
  CU_ASSERT_TRUE (sim_recorder_summary_get (rec, "peak", &v));
  CU_ASSERT_EQUAL (v, 9e10);
  CU_ASSERT_FALSE (sim_recorder_summary_get (rec, "step_time", &v));
  CU_ASSERT_FALSE (sim_recorder_summary_get (rec, "fits", &v)); /* text, as without keep */
  sim_recorder_summary_keep (rec, NULL);
  sim_recorder_summary_scalar (rec, "step_time", 1.5, "s");
  CU_ASSERT_TRUE (sim_recorder_summary_get (rec, "step_time", &v));
  CU_ASSERT_EQUAL (v, 1.5);
  CU_ASSERT_EQUAL (sim_recorder_n_summary (rec), 3);
}

/* a byte count is stored whole: rounding noise to the whole number, a fraction of a byte
 * rounded up; other units as given */
static void
test_summary_whole_bytes (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_scalar (rec, "noise", 15292743040.000013, "B");
  sim_recorder_summary_scalar (rec, "below", 51809279.99999999, "B");
  sim_recorder_summary_scalar (rec, "share", 9987355492.093908, "B");
  sim_recorder_summary_scalar (rec, "time", 0.25, "s");
  double v = 0;
  CU_ASSERT (sim_recorder_summary_get (rec, "noise", &v) && v == 15292743040.0);
  CU_ASSERT (sim_recorder_summary_get (rec, "below", &v) && v == 51809280.0);
  CU_ASSERT (sim_recorder_summary_get (rec, "share", &v) && v == 9987355493.0);
  CU_ASSERT (sim_recorder_summary_get (rec, "time", &v) && v == 0.25);
}

static const StepsimTest tests[] = {
  { "series keep change points only", test_change_points_only },
  { "first point kept even if zero", test_first_point_kept_even_if_zero },
  { "same-time set replaces", test_same_time_replaces },
  { "same-time replace back to previous drops", test_same_time_replace_back_to_previous_drops },
  { "add accumulates from zero", test_add_accumulates },
  { "empty series: last and max are zero", test_empty_series_last_and_max_are_zero },
  { "series creation order and lookup", test_series_creation_order_and_lookup },
  { "tasks kept in insertion order with copied labels", test_tasks_in_insertion_order },
  { "labels truncated on a UTF-8 boundary", test_label_truncated_on_utf8_boundary },
  { "summary insertion order, same name replaces", test_summary_order_and_replace },
  { "summary_get finds scalars only", test_summary_get },
  { "summary_keep records the kept names only", test_summary_keep },
  { "summary byte counts are whole", test_summary_whole_bytes },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("sim/recorder", tests);
}
