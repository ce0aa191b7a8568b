/* cli/report/trace.c — Chrome / Perfetto trace-event JSON of a recorded step; see trace.h.
 * The JSON is built with json-glib (JsonBuilder, JsonGenerator), never by hand, so texts
 * are escaped correctly. Times: the recorder's seconds × 1e6 = µs, as the format requires.
 * The only cli/ file allowed to include json-glib (tests/layering.sh).
 */
#include "config.h"
#include "cli/report/trace.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>
#include "models/plan/simulate.h"
#include "models/plan/plan.h"
#include "sim/tempfiles.h"

static void
add_meta (JsonBuilder *b, const char *what, guint pid, guint tid, const char *name)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "ph");
  json_builder_add_string_value (b, "M");
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, what);
  json_builder_set_member_name (b, "pid");
  json_builder_add_int_value (b, pid);
  json_builder_set_member_name (b, "tid");
  json_builder_add_int_value (b, tid);
  json_builder_set_member_name (b, "args");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, name);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
add_common (JsonBuilder *b, const char *ph, const char *name, guint pid, guint tid, double ts)
{
  json_builder_set_member_name (b, "ph");
  json_builder_add_string_value (b, ph);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, name);
  json_builder_set_member_name (b, "pid");
  json_builder_add_int_value (b, pid);
  json_builder_set_member_name (b, "tid");
  json_builder_add_int_value (b, tid);
  json_builder_set_member_name (b, "ts");
  json_builder_add_double_value (b, ts * 1e6);
}

static void
add_task (JsonBuilder *b, const SimTaskRecord *t)
{
  const char *const *kinds = model_sim_kind_names ();
  json_builder_begin_object (b);
  add_common (b, "X", t->label, t->rank, t->stream, t->start);
  json_builder_set_member_name (b, "dur");
  json_builder_add_double_value (b, (t->end - t->start) * 1e6);
  json_builder_set_member_name (b, "cat");
  json_builder_add_string_value (b, t->kind < MODEL_N_TASK_KINDS ? kinds[t->kind] : "task");
  json_builder_set_member_name (b, "args");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "flops");
  json_builder_add_double_value (b, t->flops);
  json_builder_set_member_name (b, "bytes");
  json_builder_add_double_value (b, t->bytes);
  json_builder_set_member_name (b, "layer");
  json_builder_add_int_value (b, t->layer);
  json_builder_set_member_name (b, "micro_batch");
  json_builder_add_int_value (b, t->micro_batch);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

/* Counter events of series "rank<r>/<rest>" (others are not per rank and are skipped). */
static void
add_series (JsonBuilder *b, const SimRecorder *rec, guint s)
{
  const char *path = sim_recorder_series_path (rec, s);
  char *end = NULL;
  if (!g_str_has_prefix (path, "rank"))
    return;
  guint64 rank = g_ascii_strtoull (path + 4, &end, 10);
  if (end == path + 4 || *end != '/')
    return;
  g_autofree char *name = g_strdelimit (g_strdup (end + 1), "/", ' ');
  gboolean bytes = g_strcmp0 (sim_recorder_series_unit (rec, s), "B") == 0;
  const double *t = NULL, *v = NULL;
  guint n = sim_recorder_series_points (rec, s, &t, &v);
  for (guint i = 0; i < n; i++)
    {
      json_builder_begin_object (b);
      add_common (b, "C", name, (guint) rank, 0, t[i]);
      json_builder_set_member_name (b, "args");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, bytes ? "MiB" : "value");
      json_builder_add_double_value (b, bytes ? v[i] / (1024.0 * 1024.0) : v[i]);
      json_builder_end_object (b);
      json_builder_end_object (b);
    }
}

/* Metadata: a name per rank and per (rank, stream) that has tasks, in first-seen order. */
static void
add_names (JsonBuilder *b, const SimRecorder *rec)
{
  const char *const *streams = model_sim_stream_names ();
  g_autoptr (GArray) seen = g_array_new (FALSE, TRUE, sizeof (guint8)); /* rank*S+stream */
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      guint slot = t->rank * (MODEL_N_STREAMS + 1), ss = slot + 1 + MIN (t->stream, MODEL_N_STREAMS - 1u);
      if (seen->len <= ss)
        g_array_set_size (seen, slot + MODEL_N_STREAMS + 1);
      if (!g_array_index (seen, guint8, slot))
        {
          g_autofree char *rn = g_strdup_printf ("rank %u", t->rank);
          add_meta (b, "process_name", t->rank, 0, rn);
          g_array_index (seen, guint8, slot) = 1;
        }
      if (!g_array_index (seen, guint8, ss))
        {
          add_meta (b, "thread_name", t->rank, t->stream,
                    t->stream < MODEL_N_STREAMS ? streams[t->stream] : "stream");
          g_array_index (seen, guint8, ss) = 1;
        }
    }
}

char *
cli_trace_to_json (const SimRecorder *rec, const char *title)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "traceEvents");
  json_builder_begin_array (b);
  add_names (b, rec);
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    add_task (b, sim_recorder_task (rec, i));
  for (guint s = 0; s < sim_recorder_n_series (rec); s++)
    add_series (b, rec, s);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "displayTimeUnit");
  json_builder_add_string_value (b, "ms");
  json_builder_set_member_name (b, "otherData");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "program");
  json_builder_add_string_value (b, PACKAGE_NAME " " PACKAGE_VERSION);
  json_builder_set_member_name (b, "scenario");
  json_builder_add_string_value (b, title != NULL ? title : "");
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, root);
  return json_generator_to_data (gen, NULL);
}

gboolean
cli_trace_write (const char *path, const SimRecorder *rec, const char *title, GError **error)
{
  g_autofree char *json = cli_trace_to_json (rec, title);
  if (!sim_tempfiles_set_contents (path, json, strlen (json), error))
    {
      g_prefix_error (error, "writing the trace: ");
      return FALSE;
    }
  return TRUE;
}
