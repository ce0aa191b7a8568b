/* tests/unit/cli/test_trace.c — the Perfetto / Chrome trace export (cli/report/trace.h), parsed
 * back with json-glib: one process per rank and one thread per stream with names, one "X"
 * event per task at the task's start and duration in µs, "C" memory counters per category,
 * texts escaped. The recorder is S1's simulated step. */
#include "config.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/report/trace.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static SimRecorder *rec;

static JsonArray *
events_of (JsonParser *p, const char *json)
{
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_data (p, json, -1, &error));
  JsonObject *root = json_node_get_object (json_parser_get_root (p));
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (root, "displayTimeUnit"), "ms");
  return json_object_get_array_member (root, "traceEvents");
}

static guint
count (JsonArray *ev, const char *ph, const char *name)
{
  guint n = 0;
  for (guint i = 0; i < json_array_get_length (ev); i++)
    {
      JsonObject *e = json_array_get_object_element (ev, i);
      if (strcmp (json_object_get_string_member (e, "ph"), ph) == 0
          && (name == NULL || strcmp (json_object_get_string_member (e, "name"), name) == 0))
        n++;
    }
  return n;
}

static void
test_tracks_are_named (void)
{
  g_autofree char *json = cli_trace_to_json (rec, "S1");
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonArray *ev = events_of (p, json);
  gboolean process = FALSE, thread = FALSE;
  for (guint i = 0; i < json_array_get_length (ev); i++)
    {
      JsonObject *e = json_array_get_object_element (ev, i);
      if (strcmp (json_object_get_string_member (e, "ph"), "M") != 0)
        continue;
      const char *what = json_object_get_string_member (e, "name");
      const char *name = json_object_get_string_member (json_object_get_object_member (e, "args"), "name");
      process |= strcmp (what, "process_name") == 0 && strcmp (name, "rank 0") == 0
                 && json_object_get_int_member (e, "pid") == 0;
      thread |= strcmp (what, "thread_name") == 0 && strcmp (name, "compute") == 0
                && json_object_get_int_member (e, "tid") == MODEL_STREAM_COMPUTE;
    }
  CU_ASSERT_TRUE (process);
  CU_ASSERT_TRUE (thread);
}

/* Every task is one X event with ts = start × 1e6 and dur = (end − start) × 1e6 (µs). */
static void
test_one_complete_event_per_task (void)
{
  g_autofree char *json = cli_trace_to_json (rec, "S1");
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonArray *ev = events_of (p, json);
  guint n = sim_recorder_n_tasks (rec);
  CU_ASSERT_TRUE_FATAL (n > 10);
  CU_ASSERT_EQUAL (count (ev, "X", NULL), n);
  guint k = 0;
  for (guint i = 0; i < json_array_get_length (ev) && k < n; i++)
    {
      JsonObject *e = json_array_get_object_element (ev, i);
      if (strcmp (json_object_get_string_member (e, "ph"), "X") != 0)
        continue;
      const SimTaskRecord *t = sim_recorder_task (rec, k++);
      CU_ASSERT_STRING_EQUAL (json_object_get_string_member (e, "name"), t->label);
      CU_ASSERT_EQUAL (json_object_get_int_member (e, "pid"), t->rank);
      CU_ASSERT_EQUAL (json_object_get_int_member (e, "tid"), t->stream);
      STEPSIM_ASSERT_REL (json_object_get_double_member (e, "ts"), t->start * 1e6, 1e-12);
      STEPSIM_ASSERT_REL (json_object_get_double_member (e, "dur"), (t->end - t->start) * 1e6, 1e-9);
      CU_ASSERT_STRING_EQUAL (json_object_get_string_member (e, "cat"),
                              model_sim_kind_names ()[t->kind]);
    }
}

/* Counters: one C event per change point of rank 0's weights series, value in MiB. */
static void
test_memory_counters (void)
{
  g_autofree char *json = cli_trace_to_json (rec, "S1");
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonArray *ev = events_of (p, json);
  guint weights = G_MAXUINT;
  for (guint s = 0; s < sim_recorder_n_series (rec); s++)
    if (strcmp (sim_recorder_series_path (rec, s), "rank0/memory/weights") == 0)
      weights = s;
  CU_ASSERT_TRUE_FATAL (weights != G_MAXUINT);
  const double *t = NULL, *v = NULL;
  guint n = sim_recorder_series_points (rec, weights, &t, &v);
  CU_ASSERT_EQUAL (count (ev, "C", "memory weights"), n);
  CU_ASSERT_TRUE (count (ev, "C", "memory activations") > 0);
  for (guint i = 0; i < json_array_get_length (ev); i++)
    {
      JsonObject *e = json_array_get_object_element (ev, i);
      if (strcmp (json_object_get_string_member (e, "name"), "memory weights") == 0)
        {
          JsonObject *args = json_object_get_object_member (e, "args");
          STEPSIM_ASSERT_REL (json_object_get_double_member (args, "MiB"), v[0] / 1048576.0, 1e-12);
          break;
        }
    }
}

static void
test_written_file_parses_with_escaped_title (void)
{
  g_autofree char *dir = g_dir_make_tmp ("stepsim-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.json", NULL);
  const char *title = "S1 \"quoted\"\n\tand tabbed";
  CU_ASSERT_TRUE_FATAL (cli_trace_write (path, rec, title, NULL));
  g_autoptr (JsonParser) p = json_parser_new ();
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_file (p, path, NULL));
  JsonObject *other = json_object_get_object_member (json_node_get_object (json_parser_get_root (p)),
                                                     "otherData");
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (other, "scenario"), title);
  g_unlink (path);
  g_rmdir (dir);
  CU_ASSERT_FALSE (cli_trace_write ("/nonexistent-dir/t.json", rec, "x", NULL));
}

int
main (void)
{
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autoptr (CliScenario) sc = cli_scenario_load (s1, NULL, NULL);
  rec = sim_recorder_new ();
  ModelSimResult res;
  if (sc == NULL || !cli_scenario_simulate (sc, rec, &res, NULL))
    return 1;
  model_sim_result_clear (&res);
  static const StepsimTest tests[] = {
    { "processes and threads are named", test_tracks_are_named },
    { "one complete event per task, µs", test_one_complete_event_per_task },
    { "memory counters per category", test_memory_counters },
    { "written file parses; title escaped", test_written_file_parses_with_escaped_title },
  };
  int rc = STEPSIM_RUN_TESTS ("trace", tests);
  sim_recorder_free (rec);
  return rc;
}
