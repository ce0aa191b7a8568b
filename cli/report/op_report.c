/* cli/report/op_report.c — kernel time per class and per op; see op_report.h. */
#include "config.h"
#include "cli/report/op_report.h"

#include "sim/units.h"

/* Names of ModelOpClass values: in the /ops table, and as printed. */
static const char *const class_names[] = { "gemm", "attention", "elementwise" };
static const char *const class_titles[] = { "GEMM", "attention", "element-wise" };
G_STATIC_ASSERT (G_N_ELEMENTS (class_names) == MODEL_OP_ELEMENTWISE + 1);

guint
cli_report_ops_busiest_rank (const ModelSimResult *res)
{
  const ModelOpTimes *t = res->op_times;
  guint best = 0;
  double most = -1;
  for (guint i = 0; i < hw_rank_shift_n_reps (&res->classes); i++)
    {
      guint r = hw_rank_shift_rank (&res->classes, i);
      double s = model_op_times_rank_seconds (t, r, -1);
      if (s > most)
        {
          most = s;
          best = r;
        }
    }
  return best;
}

/* `amount` of `unit` per `seconds` with a decimal prefix, 3 significant digits: "612
 * TFLOP/s", "1.93 TB/s", "30.0 GB/s"; "-" when `seconds` is not positive. */
static char *
rate (double amount, double seconds, const char *unit)
{
  if (seconds <= 0)
    return g_strdup ("-");
  double v = amount / seconds;
  static const char *const prefix[] = { "", "k", "M", "G", "T", "P" };
  guint p = 0;
  while (v >= 999.5 && p + 1 < G_N_ELEMENTS (prefix)) /* 999.7 G: "1 T", not "1e+03 G" */
    {
      v /= 1000;
      p++;
    }
  /* 3 significant digits with their zeros, so a column reads alike (QA: "30 GB/s" under
   * "29.7 GB/s") */
  int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  return g_strdup_printf ("%.*f %s%s/s", decimals, v, prefix[p], unit);
}

void
cli_report_print_kernel_classes (FILE *out, const ModelSimResult *res, gboolean ops_listed)
{
  if (model_op_times_n (res->op_times) == 0)
    return;
  guint rank = cli_report_ops_busiest_rank (res);
  double total = model_op_times_rank_seconds (res->op_times, rank, -1);
  double sec[G_N_ELEMENTS (class_names)] = { 0 }, flops[G_N_ELEMENTS (class_names)] = { 0 };
  double bytes[G_N_ELEMENTS (class_names)] = { 0 };
  for (guint i = 0; i < model_op_times_n (res->op_times); i++)
    {
      const ModelOpTime *e = model_op_times_get (res->op_times, i);
      if (e->rank != rank)
        continue;
      sec[e->op_class] += e->seconds;
      flops[e->op_class] += e->flops;
      bytes[e->op_class] += e->bytes;
    }
  g_autofree char *all = sim_units_format (total, SIM_DIM_TIME, 2);
  /* after an OOM, as the time block: the step as planned, which would not run */
  fprintf (out, "kernels (%srank %u%s, the most kernel time: %s%s)\n",
           res->gpu_fits ? "" : "of the step as planned: ", rank,
           res->steps > 1 ? ", step 1" : "", all,
           ops_listed ? "" : "; `run --ops` lists each op");
  for (guint c = 0; c < G_N_ELEMENTS (class_names); c++)
    {
      if (sec[c] <= 0)
        continue;
      g_autofree char *s = sim_units_format (sec[c], SIM_DIM_TIME, 2);
      g_autofree char *r = c == MODEL_OP_ELEMENTWISE ? rate (bytes[c], sec[c], "B")
                                                     : rate (flops[c], sec[c], "FLOP");
      fprintf (out, "  %-22s %14s %6.1f %%  %s%s\n", class_titles[c], s,
               total > 0 ? 100 * sec[c] / total : 0, r,
               c == MODEL_OP_ELEMENTWISE ? " of HBM traffic" : "");
    }
  /* the host's side: the CPU time issuing those kernels (models/plan/executor.c); near the
   * step time, the GPU waits for the host (launch-bound) */
  double ops = 0, host = model_op_times_rank_host_seconds (res->op_times, rank, &ops);
  if (host > 0)
    {
      g_autofree char *h = sim_units_format (host, SIM_DIM_TIME, 2);
      gboolean bound = res->step_time > 0 && host >= 0.8 * res->step_time;
      fprintf (out, "  %-22s %14s %6.1f %%  of the step, issuing %.0f PyTorch ops%s\n",
               "host (CPU)", h, res->step_time > 0 ? 100 * host / res->step_time : 0, ops,
               bound ? ": launch-bound" : "");
    }
}

static gint
by_seconds_desc (gconstpointer a, gconstpointer b)
{
  const ModelOpTime *x = *(const ModelOpTime *const *) a, *y = *(const ModelOpTime *const *) b;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->seconds != y->seconds)
    return x->seconds > y->seconds ? -1 : 1;
  return g_strcmp0 (x->op, y->op);
}

void
cli_report_print_ops (FILE *out, const ModelSimResult *res)
{
  if (model_op_times_n (res->op_times) == 0)
    {
      fprintf (out, "ops: no kernel ran\n");
      return;
    }
  guint rank = cli_report_ops_busiest_rank (res);
  double total = model_op_times_rank_seconds (res->op_times, rank, -1);
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  for (guint i = 0; i < model_op_times_n (res->op_times); i++)
    {
      const ModelOpTime *e = model_op_times_get (res->op_times, i);
      if (e->rank == rank)
        g_ptr_array_add (rows, (gpointer) e);
    }
  g_ptr_array_sort (rows, by_seconds_desc);
  fprintf (out, "ops (%srank %u; time from each kernel's launch on its stream to its end)\n",
           res->gpu_fits ? "" : "of the step as planned: ", rank);
  fprintf (out, "  %-10s %-22s %-12s %9s %12s %7s %12s %12s %9s %12s\n", "pass", "op",
           "class", "kernels", "time", "share", "compute", "HBM", "host ops", "host time");
  for (guint i = 0; i < rows->len; i++)
    {
      const ModelOpTime *e = g_ptr_array_index (rows, i);
      g_autofree char *s = sim_units_format (e->seconds, SIM_DIM_TIME, 2);
      g_autofree char *f = e->flops > 0 ? rate (e->flops, e->seconds, "FLOP") : g_strdup ("-");
      g_autofree char *b = rate (e->bytes, e->seconds, "B");
      g_autofree char *h = sim_units_format (e->host_seconds, SIM_DIM_TIME, 2);
      fprintf (out,
               "  %-10s %-22s %-12s %9" G_GUINT64_FORMAT " %12s %6.1f%% %12s %12s %9.0f %12s\n",
               model_plan_task_kind_name (e->kind), e->op, class_titles[e->op_class],
               e->count, s, total > 0 ? 100 * e->seconds / total : 0, f, b, e->host_ops, h);
    }
}

SimTable *
cli_report_ops_table (const ModelSimResult *res)
{
  if (model_op_times_n (res->op_times) == 0)
    return NULL;
  SimTable *t = sim_table_new ();
  guint c_rank = sim_table_add_column (t, "rank", SIM_TABLE_DOUBLE, "1");
  guint c_pass = sim_table_add_column (t, "pass", SIM_TABLE_TEXT, NULL);
  guint c_op = sim_table_add_column (t, "op", SIM_TABLE_TEXT, NULL);
  guint c_class = sim_table_add_column (t, "class", SIM_TABLE_TEXT, NULL);
  guint c_n = sim_table_add_column (t, "kernels", SIM_TABLE_DOUBLE, "1");
  guint c_time = sim_table_add_column (t, "time", SIM_TABLE_DOUBLE, "s");
  guint c_flops = sim_table_add_column (t, "flops", SIM_TABLE_DOUBLE, "FLOP");
  guint c_bytes = sim_table_add_column (t, "bytes", SIM_TABLE_DOUBLE, "B");
  guint c_hops = sim_table_add_column (t, "host_ops", SIM_TABLE_DOUBLE, "1");
  guint c_htime = sim_table_add_column (t, "host_time", SIM_TABLE_DOUBLE, "s");
  for (guint i = 0; i < model_op_times_n (res->op_times); i++)
    {
      const ModelOpTime *e = model_op_times_get (res->op_times, i);
      guint row = sim_table_add_row (t);
      sim_table_set_double (t, row, c_rank, e->rank);
      sim_table_set_text (t, row, c_pass, model_plan_task_kind_name (e->kind));
      sim_table_set_text (t, row, c_op, e->op);
      sim_table_set_text (t, row, c_class, class_names[e->op_class]);
      sim_table_set_double (t, row, c_n, (double) e->count);
      sim_table_set_double (t, row, c_time, e->seconds);
      sim_table_set_double (t, row, c_flops, e->flops);
      sim_table_set_double (t, row, c_bytes, e->bytes);
      sim_table_set_double (t, row, c_hops, e->host_ops);
      sim_table_set_double (t, row, c_htime, e->host_seconds);
    }
  return t;
}

void
cli_report_fill_ops (SimRecorder *rec, const ModelSimResult *res)
{
  SimTable *table = cli_report_ops_table (res);
  if (table == NULL)
    return;
  guint rank = cli_report_ops_busiest_rank (res);
  sim_recorder_summary_scalar (rec, "kernel_rank", rank, "1");
  sim_recorder_summary_scalar (rec, "kernel_time",
                               model_op_times_rank_seconds (res->op_times, rank, -1), "s");
  for (guint c = 0; c < G_N_ELEMENTS (class_names); c++)
    {
      g_autofree char *name = g_strdup_printf ("kernel_time_%s", class_names[c]);
      sim_recorder_summary_scalar (
        rec, name, model_op_times_rank_seconds (res->op_times, rank, (int) c), "s");
    }
  double ops = 0;
  sim_recorder_summary_scalar (rec, "host_time",
                               model_op_times_rank_host_seconds (res->op_times, rank, &ops), "s");
  sim_recorder_summary_scalar (rec, "host_ops", ops, "1");
  sim_recorder_add_table (rec, "ops", table);
}
