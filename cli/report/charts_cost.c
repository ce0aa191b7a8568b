/* cli/report/charts_cost.c — the data of `stepsim plot cost`: cost against time to train for every
 * row of a batch that has both (cli/report/training.h), with its Pareto front. See charts.h. */
#include "config.h"
#include "cli/report/charts.h"
#include "cli/report/charts-private.h"

#include <math.h>
#include <string.h>

typedef struct
{
  double days, cost;
  guint row;
  gboolean front;
  double lx, ly; /* where its number goes, in data coordinates */
} CostPoint;

/* Label placement. plots/cost.gp draws both axes on log scales over [min / 1.6, max × 1.6]
 * in a plot area of about CHARS_X × CHARS_Y characters of its number font; in those
 * character units each number (a box of its digits × 0.6 by 1) goes at the first of a few
 * offsets around its point that overlaps no point and no number placed before it, or else
 * the one that overlaps least (greedy, in time order). */
#define RANGE_PAD 1.6
#define CHARS_X 110.0
#define CHARS_Y 45.0

typedef struct
{
  double x, y, w; /* centre and width, character units; height 1 */
} Box;

static double
to_chars (double v, double lo, double hi, double span)
{
  return log (v / lo) / log (hi / lo) * span;
}

static double
from_chars (double c, double lo, double hi, double span)
{
  return lo * exp (c / span * log (hi / lo));
}

static double
overlap (const Box *a, const Box *b)
{
  double ox = (a->w + b->w) / 2 - fabs (a->x - b->x);
  double oy = 1.0 - fabs (a->y - b->y);
  return ox > 0 && oy > 0 ? ox * oy : 0;
}

static void
place_labels (GArray *pts)
{
  static const double offsets[][2] = {
    { 1.3, 0.8 }, { -1.3, 0.8 }, { 1.3, -0.8 }, { -1.3, -0.8 }, { 0, 1.2 }, { 0, -1.2 },
    { 1.9, 0 },   { -1.9, 0 },   { 2.4, 1.6 },  { -2.4, 1.6 },  { 2.4, -1.6 }, { -2.4, -1.6 },
    { 0, 2.2 },   { 0, -2.2 },
  };
  double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
  for (guint i = 0; i < pts->len; i++)
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      xlo = MIN (xlo, p->days), xhi = MAX (xhi, p->days);
      ylo = MIN (ylo, p->cost), yhi = MAX (yhi, p->cost);
    }
  xlo /= RANGE_PAD, xhi *= RANGE_PAD, ylo /= RANGE_PAD, yhi *= RANGE_PAD;
  g_autoptr (GArray) boxes = g_array_new (FALSE, FALSE, sizeof (Box));
  for (guint i = 0; i < pts->len; i++) /* the points themselves are obstacles */
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      Box b = { to_chars (p->days, xlo, xhi, CHARS_X), to_chars (p->cost, ylo, yhi, CHARS_Y), 1 };
      g_array_append_val (boxes, b);
    }
  for (guint i = 0; i < pts->len; i++)
    {
      CostPoint *p = &g_array_index (pts, CostPoint, i);
      const Box *me = &g_array_index (boxes, Box, i);
      double w = 0.6 * (i + 1 >= 10 ? 2 : 1) + 0.2, best = INFINITY;
      Box pick = *me;
      for (guint k = 0; k < G_N_ELEMENTS (offsets) && best > 0; k++)
        {
          Box b = { me->x + offsets[k][0], me->y + offsets[k][1], w };
          double hit = 0;
          for (guint j = 0; j < boxes->len; j++)
            if (j != i)
              hit += overlap (&b, &g_array_index (boxes, Box, j));
          if (hit < best)
            best = hit, pick = b;
        }
      g_array_append_val (boxes, pick);
      p->lx = from_chars (pick.x, xlo, xhi, CHARS_X);
      p->ly = from_chars (pick.y, ylo, yhi, CHARS_Y);
    }
}

static gint
by_time_then_cost (gconstpointer a, gconstpointer b)
{
  const CostPoint *x = a, *y = b;
  if (x->days != y->days)
    return (x->days > y->days) - (x->days < y->days);
  return (x->cost > y->cost) - (x->cost < y->cost);
}

char *
cli_charts_cost_data (const SimTable *t, char **caption, const char **time_unit,
                      GError **error)
{
    gint ct = cli_table_col (t, "train_time"), cc = cli_table_col (t, "train_cost");
  gint cf = cli_table_col (t, "fits"), cl = cli_table_col (t, "label");
  if (ct < 0 || cc < 0 || cf < 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "no column train_time/train_cost: the batch predates [plan] and [cost]");
      return NULL;
    }
  g_autoptr (GArray) pts = g_array_new (FALSE, FALSE, sizeof (CostPoint));
  guint oom = 0, failed = 0, unpriced = 0;
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      if (!cli_table_row_ok (t, r))
        {
          failed++;
          continue;
        }
      if (cli_table_num (t, r, cf) != 1)
        {
          oom++;
          continue;
        }
      CostPoint p = { cli_table_num (t, r, ct) / 86400, cli_table_num (t, r, cc), r, FALSE, 0, 0 };
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
  /* hours when every run is shorter than two days */
  gboolean hours = g_array_index (pts, CostPoint, pts->len - 1).days < 2;
  *time_unit = hours ? "hours" : "days";
  for (guint i = 0; hours && i < pts->len; i++)
    g_array_index (pts, CostPoint, i).days *= 24;
  double best = INFINITY;
  for (guint i = 0; i < pts->len; i++)
    {
      CostPoint *p = &g_array_index (pts, CostPoint, i);
      p->front = p->cost < best;
      best = MIN (best, p->cost);
    }
  place_labels (pts);
  GString *out = g_string_new ("time\tcost\tfront\tnumber\tlabel\tlabel_x\tlabel_y\n");
  for (guint i = 0; i < pts->len; i++)
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      g_string_append_printf (out, "%.6g\t%.6g\t%d\t%u\t", p->days, p->cost, p->front ? 1 : 0,
                              i + 1);
      g_autofree char *label = cli_table_text (t, p->row, cl);
      cli_tsv_put_label (out, label);
      g_string_append_printf (out, "\t%.6g\t%.6g\n", p->lx, p->ly);
    }
  /* the front again as a second block (gnuplot `index 1`), so its line joins only it */
  g_string_append (out, "\n\ntime\tcost\tfront\tnumber\tlabel\tlabel_x\tlabel_y\n");
  for (guint i = 0; i < pts->len; i++)
    {
      const CostPoint *p = &g_array_index (pts, CostPoint, i);
      if (p->front)
        g_string_append_printf (out, "%.6g\t%.6g\t1\t%u\t-\t%.6g\t%.6g\n", p->days, p->cost,
                                i + 1, p->lx, p->ly);
    }
  GString *cap = g_string_new (NULL);
  g_string_append_printf (cap, "%u plan%s drawn (* in the list: on the Pareto front)", pts->len,
                          pts->len == 1 ? "" : "s");
  if (oom > 0)
    g_string_append_printf (cap, "; %u out of memory (OOM) left out", oom);
  if (unpriced > 0)
    g_string_append_printf (cap, "; %u without a price or plan left out", unpriced);
  if (failed > 0)
    g_string_append_printf (cap, "; %u failed", failed);
  *caption = g_string_free (cap, FALSE);
  return g_string_free (out, FALSE);
}
