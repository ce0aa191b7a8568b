/* cli/report/charts.c — data of the planning charts; see charts.h. The table helpers they
 * share are in cli/report/charts_table.c (charts-private.h), the rendering in charts_render.c.
 *
 * Input is typed: task rows and results tables read by cli/report/results_read.h. Output
 * is the TSV gnuplot reads, numbers with %.6g (display precision). Lanes, kinds and
 * categories keep the order of the name tables (model_sim_stream_names, model_sim_kind_names,
 * the ledger's categories), never a hash table's.
 */
#include "config.h"
#include "cli/report/charts.h"

#include <math.h>
#include <string.h>
#include "cli/report/charts-private.h"
#include "cli/report/results_read.h"
#include "models/plan/simulate.h"
#include "models/memory/ledger.h"

static const double GiB = 1024.0 * 1024.0 * 1024.0;

/* ---- Gantt -------------------------------------------------------------------------------- */

/* Whether `rank` is among `ranks` (canonical numbers as text; NULL: all). */
static gboolean
rank_selected (const char *const *ranks, guint32 rank)
{
  char text[16];
  g_snprintf (text, sizeof text, "%" G_GUINT32_FORMAT, rank);
  return ranks == NULL || g_strv_contains (ranks, text);
}

typedef struct
{
  guint max_rank;
  double end;                     /* s, last task end */
  gint *lane;                     /* (rank × streams + stream) → lane + 1, 0 when empty */
  gint n_lanes;
  gint dense[MODEL_N_TASK_KINDS]; /* kind → index among the kinds present */
  GString *kinds;                 /* names of the kinds present */
} GanttLayout;

/* Lanes (rank, stream) with tasks, rank-major in stream-table order, and the kinds present
 * in kind-table order. */
static void
gantt_layout (const GArray *tasks, const char *const *ranks, GanttLayout *g)
{
  const char *const *knames = model_sim_kind_names ();
  gboolean kind_used[MODEL_N_TASK_KINDS] = { FALSE };
  for (guint r = 0; r < tasks->len; r++)
    {
      const CliTask *k = &g_array_index (tasks, CliTask, r);
      if (!rank_selected (ranks, k->rank))
        continue;
      g->max_rank = MAX (g->max_rank, k->rank);
      g->end = MAX (g->end, k->end);
      if (k->kind >= 0)
        kind_used[k->kind] = TRUE;
    }
  guint slots = (g->max_rank + 1) * MODEL_N_STREAMS;
  g->lane = g_new0 (gint, slots);
  for (guint r = 0; r < tasks->len; r++)
    {
      const CliTask *k = &g_array_index (tasks, CliTask, r);
      if (rank_selected (ranks, k->rank) && k->stream >= 0)
        g->lane[k->rank * MODEL_N_STREAMS + (guint) k->stream] = 1;
    }
  for (guint i = 0; i < slots; i++)
    if (g->lane[i] != 0)
      g->lane[i] = ++g->n_lanes;
  g->kinds = g_string_new (NULL);
  for (guint k = 0, n = 0; k < MODEL_N_TASK_KINDS; k++)
    if (kind_used[k])
      {
        g_string_append_printf (g->kinds, "%s%s", n > 0 ? " " : "", knames[k]);
        g->dense[k] = (gint) n++;
      }
}

char *
cli_charts_gantt_data (const GArray *tasks, const char *const *ranks, char **kinds,
                       const char **unit, GError **error)
{
  GanttLayout g = { 0 };
  gantt_layout (tasks, ranks, &g);
  g_autofree gint *lane = g.lane;
  g_autoptr (GString) names = g.kinds;
  if (g.n_lanes == 0)
    return cli_charts_nothing_to_draw (error, "no tasks on the selected ranks");
  const char *const *streams = model_sim_stream_names ();
  double scale = g.end < 2 ? 1e3 : 1;
  *unit = g.end < 2 ? "ms" : "s";
  GString *out = g_string_new ("start\tend\tlane\tkind\tlane_name\n");
  for (guint r = 0; r < tasks->len; r++)
    {
      const CliTask *k = &g_array_index (tasks, CliTask, r);
      if (!rank_selected (ranks, k->rank) || k->stream < 0 || k->kind < 0)
        continue;
      cli_tsv_put_num (out, k->start * scale);
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out, k->end * scale);
      /* lane 0 at the bottom, so rank 0's compute stream is on top */
      g_string_append_printf (out, "\t%d\t%d\trank %" G_GUINT32_FORMAT " %s\n",
                              g.n_lanes - lane[k->rank * MODEL_N_STREAMS + (guint) k->stream],
                              g.dense[k->kind], k->rank, streams[k->stream]);
    }
  *kinds = g_strdup (names->str);
  return g_string_free (out, FALSE);
}

/* ---- memory and time breakdowns ----------------------------------------------------------- */

/* A row's label: its "label" cell ("scenario" without one), " (OOM)" after it when the row
 * ran out of memory (its figures are the step as planned, which cannot run). Caller frees. */
static char *
row_label (const SimTable *t, guint r)
{
  gint label = cli_table_col (t, "label");
  g_autofree char *text = label >= 0 ? cli_table_text (t, r, label) : g_strdup ("scenario");
  return g_strdup_printf ("%s%s", text, cli_table_row_oom (t, r) ? " (OOM)" : "");
}

/* Appends "label<TAB>v1<TAB>…" for every ok row; `cols` index t, `scale` divides. */
static void
put_rows (GString *out, const SimTable *t, const gint *cols, guint n, double scale)
{
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      if (!cli_table_row_ok (t, r))
        continue;
      g_autofree char *text = row_label (t, r);
      cli_tsv_put_label (out, text);
      for (guint i = 0; i < n; i++)
        {
          g_string_append_c (out, '\t');
          cli_tsv_put_num (out, cols[i] >= 0 ? cli_table_num (t, r, cols[i]) / scale : 0.0);
        }
      g_string_append_c (out, '\n');
    }
}

char *
cli_charts_breakdown_data (const SimTable *t, GError **error)
{
    gint cols[MODEL_N_MEM + 2], n = 0, alloc, reserved, ctx, cap;
  /* the step as planned (need_*: above the capacity after an OOM), as the category bars are;
   * files written before need_* existed have only the peak_* figures */
  if (cli_table_col (t, "need_allocated") >= 0)
    {
      alloc = cli_table_col (t, "need_allocated");
      reserved = cli_table_col (t, "need_reserved");
    }
  else if (!cli_table_need_col (t, "peak_allocated", &alloc, error)
           || !cli_table_need_col (t, "peak_reserved", &reserved, error))
    return NULL;
  if (reserved < 0 && !cli_table_need_col (t, "need_reserved", &reserved, error))
    return NULL;
  if (!cli_table_need_col (t, "cuda_context", &ctx, error)
      || !cli_table_need_col (t, "capacity", &cap, error))
    return NULL;
  GString *out = g_string_new ("label");
  for (guint c = 0; c < MODEL_N_MEM; c++) /* all, so each keeps its colour (style.gp) */
    {
      g_autofree char *name = g_strdup_printf ("peak_%s", model_ledger_category_name (c));
      cols[n++] = cli_table_col (t, name);
      g_string_append_printf (out, "\t%s", model_ledger_category_name (c));
    }
  g_string_append (out, "\tallocator cache\tCUDA context\tcapacity\n");
  guint rows = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      if (!cli_table_row_ok (t, r))
        continue;
      rows++;
      /* an OOM row's bar is what the step as planned needs at its peak: above the capacity */
      g_autofree char *name = row_label (t, r);
      cli_tsv_put_label (out, name);
      for (gint i = 0; i < n; i++)
        {
          g_string_append_c (out, '\t');
          cli_tsv_put_num (out, cols[i] >= 0 ? cli_table_num (t, r, cols[i]) / GiB : 0.0);
        }
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out,
                       MAX (0.0, cli_table_num (t, r, reserved) - cli_table_num (t, r, alloc)) / GiB);
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out, cli_table_num (t, r, ctx) / GiB);
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out, cli_table_num (t, r, cap) / GiB);
      g_string_append_c (out, '\n');
    }
  if (rows == 0)
    {
      g_string_free (out, TRUE);
      return cli_charts_nothing_to_draw (error, "no scenario ran");
    }
  return g_string_free (out, FALSE);
}

char *
cli_charts_steptime_data (const SimTable *t, const char **unit, GError **error)
{
  static const char *const names[] = { "time_forward", "time_backward", "time_recompute",
                                       "time_optimizer", "exposed_communication",
                                       "offload_stall", "pipeline_bubble", "step_time" };
  static const char *const titles[] = { "forward", "backward", "recompute", "optimizer",
                                        "exposed communication", "exposed offload",
                                        "pipeline bubble", "step time" };
    gint cols[G_N_ELEMENTS (names)], step;
  if (!cli_table_need_col (t, "step_time", &step, error))
    return NULL;
  double longest = 0;
  guint rows = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    if (cli_table_row_ok (t, r))
      {
        longest = MAX (longest, cli_table_num (t, r, step));
        rows++;
      }
  if (rows == 0)
    return cli_charts_nothing_to_draw (error, "no scenario ran");
  GString *out = g_string_new ("label");
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      cols[i] = cli_table_col (t, names[i]); /* absent: 0 until the model has it */
      g_string_append_printf (out, "\t%s", titles[i]);
    }
  g_string_append_c (out, '\n');
  *unit = longest < 2 ? "ms" : "s";
  put_rows (out, t, cols, G_N_ELEMENTS (names), longest < 2 ? 1e-3 : 1);
  return g_string_free (out, FALSE);
}

char *
cli_charts_penalty_data (const SimTable *t, GError **error)
{
    gint col = cli_table_col (t, "penalty");
  if (col < 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "the batch has no baseline, so no penalty (add a [baseline] group to the "
                   "sweep or its scenario)");
      return NULL;
    }
  /* A row out of memory has no throughput, and neither has a baseline that is: their bars
   * are 0 and say why in a "note" column ("OOM", "baseline OOM", else "-": the chart prints
   * it instead of the figure), which is there only when a row needs it. */
  gint bfits = cli_table_col (t, "baseline_fits");
  gboolean notes = FALSE;
  guint rows = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    if (cli_table_row_ok (t, r))
      {
        rows++;
        notes |= cli_table_row_oom (t, r) || cli_table_num (t, r, bfits) == 0;
      }
  if (rows == 0)
    return cli_charts_nothing_to_draw (error, "no scenario ran");
  GString *out = g_string_new (notes ? "label\tpenalty\tnote\n" : "label\tpenalty\n");
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      if (!cli_table_row_ok (t, r))
        continue;
      gboolean oom = cli_table_row_oom (t, r), base_oom = cli_table_num (t, r, bfits) == 0;
      g_autofree char *text = row_label (t, r);
      cli_tsv_put_label (out, text);
      if (!oom && base_oom)
        g_string_append (out, " (baseline OOM)");
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out, oom || base_oom ? 0.0 : cli_table_num (t, r, col));
      if (notes)
        g_string_append (out, oom ? "\tOOM" : base_oom ? "\tbaseline OOM" : "\t-");
      g_string_append_c (out, '\n');
    }
  return g_string_free (out, FALSE);
}

/* ---- sweep lines -------------------------------------------------------------------------- */

typedef struct
{
  double x, y;
  gboolean oom;
} Point;

static gint
cmp_point (gconstpointer a, gconstpointer b)
{
  double x = ((const Point *) a)->x, y = ((const Point *) b)->x;
  return (x > y) - (x < y);
}

/* Display scale and unit of a column: bytes in GiB, MFU/HFU in %, others as stored. */
static double
display_scale (const char *name, const char *unit, const char **shown)
{
  if (g_strcmp0 (unit, "B") == 0)
    return *shown = "GiB", 1 / GiB;
  if (g_strcmp0 (unit, "1") == 0 && (g_strcmp0 (name, "mfu") == 0 || g_strcmp0 (name, "hfu") == 0))
    return *shown = "%", 100;
  *shown = unit != NULL && unit[0] != '\0' ? unit : NULL;
  return 1;
}

/* One block: header, then the ok rows whose `by` column (by_text: its text per row) equals
 * `group` (all when NULL); with `oom`, a third column "OOM" is 1 on rows out of memory
 * (their figures are the step as planned: sweep.gp marks them). */
static void
put_block (GString *out, const SimTable *t, gint cx, gint cy, GPtrArray *by_text,
           const char *by, const char *group, const char *y, double scale, gboolean oom)
{
  g_autoptr (GArray) pts = g_array_new (FALSE, FALSE, sizeof (Point));
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    if (cli_table_row_ok (t, r)
        && (group == NULL || strcmp (g_ptr_array_index (by_text, r), group) == 0))
      {
        Point p = { cli_table_num (t, r, cx), cli_table_num (t, r, cy) * scale,
                    cli_table_row_oom (t, r) };
        if (!isnan (p.x) && !isnan (p.y))
          g_array_append_val (pts, p);
      }
  g_array_sort (pts, cmp_point);
  if (out->len > 0)
    g_string_append (out, "\n\n");
  if (group != NULL)
    {
      const char *dot = strrchr (by, '.');
      g_string_append_printf (out, "x\t%s=%s", dot ? dot + 1 : by, group);
    }
  else
    g_string_append_printf (out, "x\t%s", y);
  g_string_append (out, oom ? "\tOOM\n" : "\n");
  for (guint i = 0; i < pts->len; i++)
    {
      const Point *p = &g_array_index (pts, Point, i);
      cli_tsv_put_num (out, p->x);
      g_string_append_c (out, '\t');
      cli_tsv_put_num (out, p->y);
      if (oom)
        g_string_append (out, p->oom ? "\t1" : "\t0");
      g_string_append_c (out, '\n');
    }
}

char *
cli_charts_sweep_data (const SimTable *t, const char *x, const char *y, const char *by,
                       char **label, GError **error)
{
  gint cx, cy, cby = -1;
  if (!cli_table_need_col (t, x, &cx, error) || !cli_table_need_col (t, y, &cy, error)
      || (by != NULL && !cli_table_need_col (t, by, &cby, error)))
    return NULL;
  const struct
  {
    gint col;
    const char *name, *axis;
  } axes[] = { { cx, x, "x" }, { cy, y, "y" } };
  guint ran = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    ran += cli_table_row_ok (t, r);
  if (ran == 0)
    return cli_charts_nothing_to_draw (error, "no scenario ran");
  for (guint a = 0; a < G_N_ELEMENTS (axes); a++)
    {
      guint numeric = 0;
      for (guint r = 0; r < sim_table_n_rows (t); r++)
        numeric += cli_table_row_ok (t, r) && !isnan (cli_table_num (t, r, axes[a].col));
      if (numeric == 0)
        {
          gboolean text = sim_table_column_kind (t, (guint) axes[a].col) == SIM_TABLE_TEXT;
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "column '%s' has no numbers to put on the %s axis (%s)", axes[a].name,
                       axes[a].axis, text ? "a text column" : "none in the rows that ran");
          return NULL;
        }
    }
  const char *shown = NULL;
  double scale = display_scale (y, sim_table_column_unit (t, (guint) cy), &shown);
  *label = shown ? g_strdup_printf ("%s (%s)", y, shown) : g_strdup (y);
  GString *out = g_string_new (NULL);
  g_autoptr (GPtrArray) groups = g_ptr_array_new (); /* distinct `by` values, first-seen order */
  g_autoptr (GPtrArray) by_text = g_ptr_array_new_with_free_func (g_free); /* per row */
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    g_ptr_array_add (by_text, cli_table_text (t, r, cby));
  for (guint r = 0; cby >= 0 && r < sim_table_n_rows (t); r++)
    if (cli_table_row_ok (t, r) && !g_ptr_array_find_with_equal_func (
          groups, g_ptr_array_index (by_text, r), g_str_equal, NULL))
      g_ptr_array_add (groups, g_ptr_array_index (by_text, r));
  gboolean oom = FALSE;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    oom |= cli_table_row_ok (t, r) && cli_table_row_oom (t, r);
  if (cby < 0)
    put_block (out, t, cx, cy, by_text, by, NULL, y, scale, oom);
  for (guint g = 0; g < groups->len; g++)
    put_block (out, t, cx, cy, by_text, by, g_ptr_array_index (groups, g), y, scale, oom);
  return g_string_free (out, FALSE);
}

char *
cli_charts_axis_label (const char *axis)
{
  static const char *const units[][2] = {
    { "micro_batch", "sequences" }, { "seq_len", "tokens" },     { "grad_accum", "micro-batches" },
    { "gpus_per_node", "GPUs" },    { "nodes", "nodes" },        { "dropout", "probability" },
  };
  const char *dot = strrchr (axis, '.');
  const char *key = dot ? dot + 1 : axis;
  for (guint i = 0; i < G_N_ELEMENTS (units); i++)
    if (strcmp (key, units[i][0]) == 0)
      return g_strdup_printf ("%s (%s)", axis, units[i][1]);
  return g_strdup (axis);
}
