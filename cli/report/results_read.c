/* cli/report/results_read.c — the typed reader of result files for the charts; see
 * results_read.h. The HDF5 side (guarded child process, bounds) is sim/h5out_read.c; this file
 * gives the charts' view of it: summary lookups, task rows, results rows, with errors naming
 * file, object and entry or field.
 */
#include "config.h"
#include "cli/report/results_read.h"

#include <math.h>
#include <string.h>
#include "models/plan/simulate.h"
#include "sim/text.h"

/* ---- /summary ----------------------------------------------------------------------------- */

void
cli_summary_free (CliSummary *s)
{
  if (s == NULL)
    return;
  g_free (s->file);
  g_clear_pointer (&s->entries, g_ptr_array_unref);
  g_free (s);
}

CliSummary *
cli_read_summary (const char *h5, GError **error)
{
  GPtrArray *entries = sim_h5out_read_summary (h5, error);
  if (entries == NULL)
    return NULL;
  CliSummary *s = g_new0 (CliSummary, 1);
  s->file = g_strdup (h5);
  s->entries = entries;
  return s;
}

const SimSummaryEntry *
cli_summary_find (const CliSummary *s, const char *name)
{
  for (guint i = 0; i < s->entries->len; i++)
    {
      const SimSummaryEntry *e = g_ptr_array_index (s->entries, i);
      if (strcmp (e->name, name) == 0)
        return e;
    }
  return NULL;
}

/* The entry `name`, of the kind asked for (a text when `text`); NULL + error otherwise. */
static const SimSummaryEntry *
summary_need (const CliSummary *s, const char *name, gboolean text, GError **error)
{
  const SimSummaryEntry *e = cli_summary_find (s, name);
  if (e == NULL)
    g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                 "%s: /summary/%s: no such entry", s->file, name);
  else if ((e->text != NULL) != text)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT, "%s: /summary/%s: %s",
                   s->file, name, text ? "a number, not a text" : "a text, not a number");
      e = NULL;
    }
  return e;
}

gboolean
cli_summary_number (const CliSummary *s, const char *name, double *value, GError **error)
{
  const SimSummaryEntry *e = summary_need (s, name, FALSE, error);
  if (e != NULL)
    *value = e->value;
  return e != NULL;
}

const char *
cli_summary_text (const CliSummary *s, const char *name, GError **error)
{
  const SimSummaryEntry *e = summary_need (s, name, TRUE, error);
  return e != NULL ? e->text : NULL;
}

guint
cli_summary_n_ranks (const CliSummary *s)
{
  guint n = 0;
  for (guint i = 0; i < s->entries->len; i++)
    {
      const SimSummaryEntry *e = g_ptr_array_index (s->entries, i);
      n += g_str_has_prefix (e->name, "ranks/rank") && g_str_has_suffix (e->name, "/device_used");
    }
  return n;
}

char *
cli_summary_folded_rank (const CliSummary *s, guint rank)
{
  double replayed = 0;
  guint n = cli_summary_n_ranks (s);
  if (rank >= n || !cli_summary_number (s, "ranks_replayed", &replayed, NULL) || replayed >= n)
    return NULL;
  return g_strdup_printf ("%s replayed %.0f of its %u ranks, one for each class of equivalent "
                          "ranks, and rank %u is not one of them: its class's replayed rank "
                          "stands for it (stepsim export %s /series lists the replayed ranks; "
                          "[run] rank_classes = off replays every rank)",
                          s->file, replayed, n, rank, s->file);
}

/* A name a SimTable column can take (sim/table.h): not empty, no tab, newline or comma. */
static gboolean
column_name_ok (const SimTable *t, const char *name)
{
  return name[0] != '\0' && strpbrk (name, "\t\n\r,") == NULL
         && sim_table_find_column (t, name) == G_MAXUINT;
}

SimTable *
cli_summary_as_row (const CliSummary *s)
{
  SimTable *t = sim_table_new ();
  guint row = sim_table_add_row (t);
  const SimSummaryEntry *scenario = cli_summary_find (s, "scenario");
  guint label = sim_table_add_column (t, "label", SIM_TABLE_TEXT, NULL);
  sim_table_set_text (t, row, label,
                      scenario != NULL && scenario->text != NULL ? scenario->text : "scenario");
  for (guint i = 0; i < s->entries->len; i++)
    {
      const SimSummaryEntry *e = g_ptr_array_index (s->entries, i);
      if (!column_name_ok (t, e->name)) /* "label" itself; no stepsim entry is otherwise */
        continue;
      if (e->text != NULL)
        sim_table_set_text (t, row, sim_table_add_column (t, e->name, SIM_TABLE_TEXT, NULL),
                            e->text);
      else
        sim_table_set_double (t, row, sim_table_add_column (t, e->name, SIM_TABLE_DOUBLE, e->unit),
                              e->value);
    }
  return t;
}

/* ---- /tasks ------------------------------------------------------------------------------- */

enum
{
  F_ID,
  F_RANK,
  F_STREAM,
  F_KIND,
  F_LABEL,
  F_LAYER,
  F_MICRO_BATCH,
  F_START,
  F_END,
  F_FLOPS,
  F_BYTES,
  N_FIELDS
};

static const struct
{
  const char *name;
  SimTableKind kind;
  double lo, hi; /* integer fields: the range; lo > hi: any number */
} task_fields[N_FIELDS] = {
  [F_ID] = { "id", SIM_TABLE_DOUBLE, 0, G_MAXUINT32 },
  [F_RANK] = { "rank", SIM_TABLE_DOUBLE, 0, G_MAXUINT32 },
  [F_STREAM] = { "stream", SIM_TABLE_TEXT, 1, 0 },
  [F_KIND] = { "kind", SIM_TABLE_TEXT, 1, 0 },
  [F_LABEL] = { "label", SIM_TABLE_TEXT, 1, 0 },
  [F_LAYER] = { "layer", SIM_TABLE_DOUBLE, G_MININT32, G_MAXINT32 },
  [F_MICRO_BATCH] = { "micro_batch", SIM_TABLE_DOUBLE, G_MININT32, G_MAXINT32 },
  [F_START] = { "start", SIM_TABLE_DOUBLE, 1, 0 },
  [F_END] = { "end", SIM_TABLE_DOUBLE, 1, 0 },
  [F_FLOPS] = { "flops", SIM_TABLE_DOUBLE, 1, 0 },
  [F_BYTES] = { "bytes", SIM_TABLE_DOUBLE, 1, 0 },
};

static void
clear_task (gpointer p)
{
  g_free (((CliTask *) p)->label);
}

static gint
name_index (const char *const *names, guint n, const char *name)
{
  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (names[i], name) == 0)
      return (gint) i;
  return -1;
}

/* The columns of the layout's fields in `t`; FALSE + error naming a missing or mistyped one. */
static gboolean
task_columns (const SimTable *t, const char *h5, guint *col, GError **error)
{
  for (guint f = 0; f < N_FIELDS; f++)
    {
      col[f] = sim_table_find_column (t, task_fields[f].name);
      if (col[f] == G_MAXUINT)
        {
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "%s: /tasks: no field '%s' (doc/hdf5-layout.md)", h5,
                       task_fields[f].name);
          return FALSE;
        }
      if (sim_table_column_kind (t, col[f]) != task_fields[f].kind)
        {
          gboolean text = task_fields[f].kind == SIM_TABLE_TEXT;
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "%s: /tasks: field '%s' holds %s", h5, task_fields[f].name,
                       text ? "numbers, not names" : "texts, not numbers");
          return FALSE;
        }
    }
  return TRUE;
}

/* The integer field `f` of `row`; FALSE + error when it is not an integer of its range. */
static gboolean
task_integer (const SimTable *t, const char *h5, const guint *col, guint row, guint f,
              double *v, GError **error)
{
  *v = sim_table_get_double (t, row, col[f]);
  if (*v == floor (*v) && *v >= task_fields[f].lo && *v <= task_fields[f].hi)
    return TRUE;
  g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
               "%s: /tasks: row %u: field '%s' = %g is not an integer from %.0f to %.0f", h5,
               row, task_fields[f].name, *v, task_fields[f].lo, task_fields[f].hi);
  return FALSE;
}

GArray *
cli_read_tasks (const char *h5, GError **error)
{
  g_autoptr (SimTable) t = sim_h5out_read_table (h5, "/tasks", error);
  guint col[N_FIELDS];
  if (t == NULL || !task_columns (t, h5, col, error))
    return NULL;
  const char *const *streams = model_sim_stream_names (), *const *kinds = model_sim_kind_names ();
  g_autoptr (GArray) tasks = g_array_sized_new (FALSE, TRUE, sizeof (CliTask),
                                                sim_table_n_rows (t));
  g_array_set_clear_func (tasks, clear_task);
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      double id, rank, layer, mb;
      if (!task_integer (t, h5, col, r, F_ID, &id, error)
          || !task_integer (t, h5, col, r, F_RANK, &rank, error)
          || !task_integer (t, h5, col, r, F_LAYER, &layer, error)
          || !task_integer (t, h5, col, r, F_MICRO_BATCH, &mb, error))
        return NULL;
      CliTask k = {
        .id = (guint32) id,
        .rank = (guint32) rank,
        .stream = name_index (streams, MODEL_N_STREAMS, sim_table_get_text (t, r, col[F_STREAM])),
        .kind = name_index (kinds, MODEL_N_TASK_KINDS, sim_table_get_text (t, r, col[F_KIND])),
        .label = g_strdup (sim_table_get_text (t, r, col[F_LABEL])),
        .layer = (gint32) layer,
        .micro_batch = (gint32) mb,
        .start = sim_table_get_double (t, r, col[F_START]),
        .end = sim_table_get_double (t, r, col[F_END]),
        .flops = sim_table_get_double (t, r, col[F_FLOPS]),
        .bytes = sim_table_get_double (t, r, col[F_BYTES]),
      };
      g_array_append_val (tasks, k);
    }
  return g_steal_pointer (&tasks);
}

/* ---- results rows ------------------------------------------------------------------------- */

void
cli_results_free (CliResults *r)
{
  if (r == NULL)
    return;
  g_free (r->file);
  g_free (r->object);
  g_free (r->name);
  sim_table_free (r->table);
  g_free (r);
}

CliResults *
cli_read_results (const char *h5, gboolean batch_only, GError **error)
{
  GError *e = NULL;
  SimTable *table = sim_h5out_read_table (h5, "/results", &e);
  CliResults *r = NULL;
  if (table != NULL)
    {
      r = g_new0 (CliResults, 1);
      r->object = g_strdup ("/results");
      r->table = table;
      r->name = sim_h5out_read_text_attr (h5, "/", "name", NULL);
      if (r->name == NULL)
        r->name = g_path_get_basename (h5);
    }
  else if (!g_error_matches (e, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND))
    g_propagate_error (error, g_steal_pointer (&e));
  else if (batch_only)
    g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                 "%s: not a batch file (no /results): sweep, penalty and cost charts draw "
                 "the results of stepsim batch", h5);
  else
    {
      g_autoptr (CliSummary) s = cli_read_summary (h5, error);
      if (s != NULL)
        {
          r = g_new0 (CliResults, 1);
          r->object = g_strdup ("/summary");
          r->table = cli_summary_as_row (s);
          const SimSummaryEntry *name = cli_summary_find (s, "scenario");
          r->name = g_strdup (name != NULL && name->text != NULL ? name->text : "");
        }
    }
  g_clear_error (&e);
  if (r != NULL)
    r->file = g_strdup (h5);
  return r;
}

/* ---- series ------------------------------------------------------------------------------- */

SimH5Timeline *
cli_read_memory (const char *h5, guint rank, GError **error)
{
  g_autofree char *group = g_strdup_printf ("/series/rank%u/memory", rank);
  return sim_h5out_read_timeline (h5, group, error);
}
