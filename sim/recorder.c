/* sim/recorder.c — piecewise-constant series, task records and summary scalars (see
 * recorder.h).
 *
 * Invariants of a series (what keeps series minimal and h5out's files small):
 *   - times are strictly increasing (one point per time; a set at the time of the last point
 *     replaces its value);
 *   - no two consecutive points have the same value (a set that repeats the last value adds
 *     nothing, and a same-time replacement that makes the last point equal to the one before
 *     removes it). The first point is always kept, even if its value is 0, so a series shows
 *     when it started.
 * Series, tasks and summary entries are stored in GPtrArray/GArray in creation order; the
 * GHashTables map names to indices for lookup only and are never iterated (DESIGN §6).
 * Task labels live in a GStringChunk, whose strings never move, so the records' label
 * pointers stay valid while the task array grows. The summary's names, units and texts live
 * in another (a run's summary is ~100 entries: one chunk, not three heap strings an entry; a
 * replaced entry's old strings stay there until the recorder is freed).
 * Units: times in s; series values in the series' own unit (stored as given).
 */
#include "config.h"
#include "sim/recorder.h"

#include "sim/vec.h"

#include <math.h>
#include <string.h>

typedef struct
{
  char *path;
  char *unit;
  SimVec times;  /* double, s (inline appends: every ledger change sets a point) */
  SimVec values; /* double, series unit */
} Series;

struct _SimRecorder
{
  GPtrArray *series;        /* Series*, creation order */
  GHashTable *series_index; /* path (borrowed from Series) -> index + 1 */
  GArray *tasks;            /* SimTaskRecord; labels point into `labels` */
  GStringChunk *labels;
  GPtrArray *summary;        /* SimSummaryEntry*, insertion order; strings in summary_strings */
  GStringChunk *summary_strings;
  GHashTable *summary_index; /* name (borrowed from entry) -> index + 1 */
  GHashTable *summary_keep;  /* borrowed set of the names recorded; NULL: all */
  GPtrArray *tables;         /* SimTable*, insertion order */
  GPtrArray *table_names;    /* char*, parallel to tables */
};

static void
series_free (gpointer p)
{
  Series *s = p;
  g_free (s->path);
  g_free (s->unit);
  sim_vec_clear (&s->times);
  sim_vec_clear (&s->values);
  g_free (s);
}

/* Forgets an entry's value (its strings stay in summary_strings). */
static void
summary_entry_clear (SimSummaryEntry *e)
{
  e->unit = NULL;
  e->text = NULL;
  e->value = 0.0;
}

SimRecorder *
sim_recorder_new (void)
{
  SimRecorder *rec = g_new0 (SimRecorder, 1);
  rec->series = g_ptr_array_new_with_free_func (series_free);
  rec->series_index = g_hash_table_new (g_str_hash, g_str_equal);
  rec->tasks = g_array_new (FALSE, TRUE, sizeof (SimTaskRecord));
  rec->labels = g_string_chunk_new (4096);
  rec->summary = g_ptr_array_new_with_free_func (g_free);
  rec->summary_strings = g_string_chunk_new (2048);
  rec->summary_index = g_hash_table_new (g_str_hash, g_str_equal);
  rec->tables = g_ptr_array_new_with_free_func ((GDestroyNotify) sim_table_free);
  rec->table_names = g_ptr_array_new_with_free_func (g_free);
  return rec;
}

void
sim_recorder_free (SimRecorder *rec)
{
  if (rec == NULL)
    return;
  g_hash_table_unref (rec->series_index);
  g_ptr_array_unref (rec->series);
  g_array_unref (rec->tasks);
  g_string_chunk_free (rec->labels);
  g_hash_table_unref (rec->summary_index);
  g_ptr_array_unref (rec->summary);
  g_string_chunk_free (rec->summary_strings);
  g_ptr_array_unref (rec->tables);
  g_ptr_array_unref (rec->table_names);
  g_free (rec);
}

/* A path is one or more non-empty components separated by single slashes; "." and ".."
 * are refused because HDF5 would not store them as names. */
static gboolean
series_path_valid (const char *path)
{
  if (path == NULL || *path == '\0')
    return FALSE;
  g_auto (GStrv) parts = g_strsplit (path, "/", -1);
  for (char **p = parts; *p != NULL; p++)
    if (**p == '\0' || strcmp (*p, ".") == 0 || strcmp (*p, "..") == 0)
      return FALSE;
  return TRUE;
}

guint
sim_recorder_series (SimRecorder *rec, const char *path, const char *unit)
{
  g_return_val_if_fail (rec != NULL, G_MAXUINT);
  g_return_val_if_fail (series_path_valid (path), G_MAXUINT);
  if (unit == NULL)
    unit = "";
  gpointer found = g_hash_table_lookup (rec->series_index, path);
  if (found != NULL)
    {
      guint id = GPOINTER_TO_UINT (found) - 1;
      const Series *s = g_ptr_array_index (rec->series, id);
      g_return_val_if_fail (strcmp (s->unit, unit) == 0, id);
      return id;
    }
  Series *s = g_new0 (Series, 1);
  s->path = g_strdup (path);
  s->unit = g_strdup (unit);
  g_ptr_array_add (rec->series, s);
  guint id = rec->series->len - 1;
  g_hash_table_insert (rec->series_index, s->path, GUINT_TO_POINTER (id + 1));
  return id;
}

static Series *
get_series (const SimRecorder *rec, guint series)
{
  g_return_val_if_fail (rec != NULL, NULL);
  g_return_val_if_fail (series < rec->series->len, NULL);
  return g_ptr_array_index (rec->series, series);
}

void
sim_recorder_set (SimRecorder *rec, guint series, double time, double value)
{
  Series *s = get_series (rec, series);
  g_return_if_fail (s != NULL);
  g_return_if_fail (isfinite (time) && !isnan (value));
  guint n = s->times.len;
  double *t = s->times.data;
  double *v = s->values.data;
  if (n > 0)
    {
      g_return_if_fail (time >= t[n - 1]);
      if (time == t[n - 1])
        {
          if (n >= 2 && v[n - 2] == value)
            {
              /* The replaced point would repeat its predecessor: it is no change point. */
              s->times.len = n - 1;
              s->values.len = n - 1;
            }
          else
            v[n - 1] = value;
          return;
        }
      if (v[n - 1] == value)
        return;
    }
  SIM_VEC_PUSH (&s->times, double, time);
  SIM_VEC_PUSH (&s->values, double, value);
}

void
sim_recorder_add (SimRecorder *rec, guint series, double time, double delta)
{
  Series *s = get_series (rec, series);
  g_return_if_fail (s != NULL);
  sim_recorder_set (rec, series, time, sim_recorder_series_last (rec, series) + delta);
}

guint
sim_recorder_n_series (const SimRecorder *rec)
{
  g_return_val_if_fail (rec != NULL, 0);
  return rec->series->len;
}

const char *
sim_recorder_series_path (const SimRecorder *rec, guint series)
{
  const Series *s = get_series (rec, series);
  return s != NULL ? s->path : NULL;
}

const char *
sim_recorder_series_unit (const SimRecorder *rec, guint series)
{
  const Series *s = get_series (rec, series);
  return s != NULL ? s->unit : NULL;
}

guint
sim_recorder_series_points (const SimRecorder *rec, guint series, const double **times,
                            const double **values)
{
  const Series *s = get_series (rec, series);
  g_return_val_if_fail (s != NULL, 0);
  if (times != NULL)
    *times = s->times.data;
  if (values != NULL)
    *values = s->values.data;
  return s->times.len;
}

double
sim_recorder_series_last (const SimRecorder *rec, guint series)
{
  const Series *s = get_series (rec, series);
  g_return_val_if_fail (s != NULL, 0.0);
  guint n = s->values.len;
  return n > 0 ? SIM_VEC_AT (&s->values, double, n - 1) : 0.0;
}

double
sim_recorder_series_max (const SimRecorder *rec, guint series)
{
  const Series *s = get_series (rec, series);
  g_return_val_if_fail (s != NULL, 0.0);
  if (s->values.len == 0)
    return 0.0;
  double m = SIM_VEC_AT (&s->values, double, 0);
  for (guint i = 1; i < s->values.len; i++)
    m = MAX (m, SIM_VEC_AT (&s->values, double, i));
  return m;
}

/* Length of the longest prefix of `label` that fits in SIM_TASK_LABEL_MAX-1 bytes and ends
 * on a UTF-8 character boundary (never splits a multi-byte sequence). */
static gsize
label_cut (const char *label)
{
  gsize len = strlen (label);
  if (len < SIM_TASK_LABEL_MAX)
    return len;
  gsize cut = SIM_TASK_LABEL_MAX - 1;
  /* label[cut] is the first byte dropped; back off while it continues a character. */
  while (cut > 0 && ((guchar) label[cut] & 0xC0) == 0x80)
    cut--;
  return cut;
}

void
sim_recorder_add_task (SimRecorder *rec, const SimTaskRecord *task)
{
  g_return_if_fail (rec != NULL && task != NULL);
  SimTaskRecord copy = *task;
  const char *label = task->label != NULL ? task->label : "";
  copy.label = g_string_chunk_insert_len (rec->labels, label, (gssize) label_cut (label));
  g_array_append_val (rec->tasks, copy);
}

guint
sim_recorder_n_tasks (const SimRecorder *rec)
{
  g_return_val_if_fail (rec != NULL, 0);
  return rec->tasks->len;
}

const SimTaskRecord *
sim_recorder_task (const SimRecorder *rec, guint i)
{
  g_return_val_if_fail (rec != NULL, NULL);
  g_return_val_if_fail (i < rec->tasks->len, NULL);
  return &g_array_index (rec->tasks, SimTaskRecord, i);
}

/* The entry called `name`, cleared for reuse if it existed, else a new one appended. */
static SimSummaryEntry *
summary_slot (SimRecorder *rec, const char *name)
{
  gpointer found = g_hash_table_lookup (rec->summary_index, name);
  if (found != NULL)
    {
      SimSummaryEntry *e = g_ptr_array_index (rec->summary, GPOINTER_TO_UINT (found) - 1);
      summary_entry_clear (e);
      return e;
    }
  SimSummaryEntry *e = g_new0 (SimSummaryEntry, 1);
  e->name = g_string_chunk_insert (rec->summary_strings, name);
  g_ptr_array_add (rec->summary, e);
  g_hash_table_insert (rec->summary_index, e->name, GUINT_TO_POINTER (rec->summary->len));
  return e;
}

void
sim_recorder_summary_scalar (SimRecorder *rec, const char *name, double value, const char *unit)
{
  g_return_if_fail (rec != NULL && name != NULL && *name != '\0');
  if (rec->summary_keep != NULL && !g_hash_table_contains (rec->summary_keep, name))
    return;
  SimSummaryEntry *e = summary_slot (rec, name);
  /* a byte count is whole (README "Output"): one a sum of shares left within rounding noise
   * of a whole number is that number, one with a fraction of a byte (a share of a state its
   * ranks do not divide, a factored optimizer state's bytes a parameter) is rounded up, as
   * the GPU ledger's tensors are (models/memory/ledger.h) */
  if (unit != NULL && strcmp (unit, "B") == 0 && isfinite (value))
    {
      double near = nearbyint (value);
      value = fabs (value - near) <= 1e-12 * fabs (value) ? near : ceil (value);
    }
  e->value = value;
  e->unit = g_string_chunk_insert (rec->summary_strings, unit != NULL ? unit : "");
}

void
sim_recorder_summary_text (SimRecorder *rec, const char *name, const char *text)
{
  g_return_if_fail (rec != NULL && name != NULL && *name != '\0');
  if (rec->summary_keep != NULL && !g_hash_table_contains (rec->summary_keep, name))
    return;
  SimSummaryEntry *e = summary_slot (rec, name);
  e->text = g_string_chunk_insert (rec->summary_strings, text != NULL ? text : "");
}

void
sim_recorder_summary_keep (SimRecorder *rec, GHashTable *names)
{
  g_return_if_fail (rec != NULL);
  rec->summary_keep = names;
}

guint
sim_recorder_n_summary (const SimRecorder *rec)
{
  g_return_val_if_fail (rec != NULL, 0);
  return rec->summary->len;
}

const SimSummaryEntry *
sim_recorder_summary_entry (const SimRecorder *rec, guint i)
{
  g_return_val_if_fail (rec != NULL, NULL);
  g_return_val_if_fail (i < rec->summary->len, NULL);
  return g_ptr_array_index (rec->summary, i);
}

gboolean
sim_recorder_summary_get (const SimRecorder *rec, const char *name, double *value)
{
  g_return_val_if_fail (rec != NULL && name != NULL, FALSE);
  gpointer found = g_hash_table_lookup (rec->summary_index, name);
  if (found == NULL)
    return FALSE;
  const SimSummaryEntry *e = g_ptr_array_index (rec->summary, GPOINTER_TO_UINT (found) - 1);
  if (e->text != NULL)
    return FALSE;
  if (value != NULL)
    *value = e->value;
  return TRUE;
}

/* A table name: one HDF5 path component of letters, digits and '_', not one of the
 * layout's own datasets. */
static gboolean
table_name_valid (const SimRecorder *rec, const char *name)
{
  if (name == NULL || *name == '\0' || g_str_equal (name, "summary")
      || g_str_equal (name, "series") || g_str_equal (name, "tasks"))
    return FALSE;
  for (const char *c = name; *c != '\0'; c++)
    if (!g_ascii_isalnum (*c) && *c != '_')
      return FALSE;
  for (guint i = 0; i < rec->table_names->len; i++)
    if (g_str_equal (g_ptr_array_index (rec->table_names, i), name))
      return FALSE;
  return TRUE;
}

void
sim_recorder_add_table (SimRecorder *rec, const char *name, SimTable *table)
{
  g_return_if_fail (rec != NULL && table != NULL);
  if (!table_name_valid (rec, name))
    {
      g_critical ("sim_recorder_add_table: invalid or repeated table name '%s'",
                  name != NULL ? name : "(null)");
      sim_table_free (table);
      return;
    }
  g_ptr_array_add (rec->tables, table);
  g_ptr_array_add (rec->table_names, g_strdup (name));
}

guint
sim_recorder_n_tables (const SimRecorder *rec)
{
  return rec->tables->len;
}

const SimTable *
sim_recorder_table (const SimRecorder *rec, guint i, const char **name)
{
  g_return_val_if_fail (i < rec->tables->len, NULL);
  if (name != NULL)
    *name = g_ptr_array_index (rec->table_names, i);
  return g_ptr_array_index (rec->tables, i);
}
