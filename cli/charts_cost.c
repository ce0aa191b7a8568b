/* cli/charts_cost.c — the data of `stepsim plot cost`: cost against time to train for every
 * row of a batch that has both (cli/training.h), with its Pareto front. See charts.h. */
#include "config.h"
#include "cli/charts.h"
#include "cli/charts-private.h"

#include <math.h>
#include <string.h>

typedef struct
{
  double days, cost;
  guint row;
  gboolean front;
} CostPoint;

static gint
by_time_then_cost (gconstpointer a, gconstpointer b)
{
  const CostPoint *x = a, *y = b;
  if (x->days != y->days)
    return (x->days > y->days) - (x->days < y->days);
  return (x->cost > y->cost) - (x->cost < y->cost);
}

char *
cli_charts_cost_data (const char *results_tsv, char **caption, GError **error)
{
  g_autoptr (Tsv) t = cli_tsv_parse (results_tsv);
  gint ct = cli_tsv_col (t, "train_time"), cc = cli_tsv_col (t, "train_cost");
  gint cf = cli_tsv_col (t, "fits"), cl = cli_tsv_col (t, "label");
  if (ct < 0 || cc < 0 || cf < 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "no column train_time/train_cost: the batch predates [plan] and [cost]");
      return NULL;
    }
  g_autoptr (GArray) pts = g_array_new (FALSE, FALSE, sizeof (CostPoint));
  guint oom = 0, failed = 0, unpriced = 0;
  for (guint r = 0; r < t->rows->len; r++)
    {
      if (!cli_tsv_row_ok (t, r))
        {
          failed++;
          continue;
        }
      if (cli_tsv_num (t, r, cf) != 1)
        {
          oom++;
          continue;
        }
      CostPoint p = { cli_tsv_num (t, r, ct) / 86400, cli_tsv_num (t, r, cc), r, FALSE };
      if (!isfinite (p.days) || !isfinite (p.cost))
        {
          unpriced++;
          continue;
        }
      g_array_append_val (pts, p);
    }
  if (pts->len == 0)
    return cli_charts_nothing_to_draw (error, "no row fits with a [plan] and a [cost] price");
  /* Pareto front (faster and cheaper is better): in time order, a point is on the front
   * when it is cheaper than every point at least as fast. */
  g_array_sort (pts, by_time_then_cost);
  double best = INFINITY;
  for (guint i = 0; i < pts->len; i++)
    {
      CostPoint *p = &g_array_index (pts, CostPoint, i);
      p->front = p->cost < best;
      best = MIN (best, p->cost);
    }
  GString *out = g_string_new ("days\tcost\tfront\tnumber\tlabel\n");
  for (guint i = 0; i < pts->len; i++)
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      g_string_append_printf (out, "%.6g\t%.6g\t%d\t%u\t", p->days, p->cost, p->front ? 1 : 0,
                              i + 1);
      cli_tsv_put_label (out, cl >= 0 ? cli_tsv_get (t, p->row, cl) : "");
      g_string_append_c (out, '\n');
    }
  /* the front again as a second block (gnuplot `index 1`), so its line joins only it */
  g_string_append (out, "\n\ndays\tcost\tfront\tnumber\tlabel\n");
  for (guint i = 0; i < pts->len; i++)
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      if (p->front)
        g_string_append_printf (out, "%.6g\t%.6g\t1\t%u\t-\n", p->days, p->cost, i + 1);
    }
  GString *cap = g_string_new (NULL);
  g_string_append_printf (cap, "%u plans drawn (* in the list: on the Pareto front)", pts->len);
  if (oom > 0)
    g_string_append_printf (cap, "; %u out of memory (OOM) left out", oom);
  if (unpriced > 0)
    g_string_append_printf (cap, "; %u without a price or plan left out", unpriced);
  if (failed > 0)
    g_string_append_printf (cap, "; %u failed", failed);
  *caption = g_string_free (cap, FALSE);
  return g_string_free (out, FALSE);
}
