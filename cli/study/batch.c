/* cli/study/batch.c — the batch runner; see batch.h.
 *
 * Threads: workers claim jobs from a shared counter, only read the sweep and write their own
 * Job; the calling thread polls the list of finished job indices, marks them done and reports
 * progress. Everything else (the table, HDF5) happens in the calling thread after the workers
 * are joined (HDF5 is not thread-safe).
 * Units: metrics are the SI values of /summary (s, B, token/s, fractions).
 */
#include "config.h"
#include "cli/study/batch.h"

#include <math.h>
#include "cli/interrupt.h"
#include <string.h>
#include "cli/report/report.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "models/memory/ledger.h"
#include "models/plan/plan.h"
#include "sim/text.h"

typedef struct
{
  const char *name; /* /summary name */
  const char *unit;
  gboolean zero_if_absent; /* fields that later models add (0 until they exist) */
} Metric;

static const Metric head_metrics[] = {
  { "fits", "1", FALSE },           { "peak_allocated", "B", FALSE },
  { "peak_reserved", "B", FALSE },  { "device_used", "B", FALSE },
  { "capacity", "B", FALSE },       { "cuda_context", "B", FALSE },
  { "need_allocated", "B", FALSE }, { "need_reserved", "B", FALSE },
  { "need_device", "B", FALSE },    { "shortfall", "B", FALSE },
  { "step_time", "s", FALSE },      { "tokens_per_s", "token/s", FALSE },
  { "mfu", "1", FALSE },            { "hfu", "1", FALSE },
  { "exposed_communication", "s", TRUE },
};
static const Metric tail_metrics[] = {
  { "offload_stall", "s", TRUE },
  { "pipeline_bubble", "s", TRUE },
  /* expert parallelism (0 without): the all-to-alls exposed, the slowest EP rank's rows */
  { "exposed_all_to_all", "s", TRUE },
  { "ep_rows_slowest", "1", TRUE },
  /* the training run of [plan]/[cost] (cli/report/training.h): NaN when not estimated (no plan,
   * OOM, no price, no power figure) */
  { "train_time", "s", FALSE },
  { "train_gpu_time", "s", FALSE },
  { "train_cost", "currency", FALSE },
  { "train_energy", "J", FALSE },
  { "train_emissions", "kg", FALSE },
};

typedef struct
{
  /* The overrides (NULL for a point until its worker runs it: point_sets) and where each
   * comes from (cli_sweep_set_origins), for messages. */
  char **sets;
  char **origins;
  gint baseline;  /* job index of the baseline, -1 for none */
  gboolean done, ok; /* done: its result was handed to the calling thread (or merged) */
  char *error;
  double *metrics; /* n_metrics */
} Job;

struct _CliBatch
{
  const CliSweep *sweep;
  char **extra;     /* the command-line --set (owned copy; NULL for none) */
  GArray *metrics;  /* Metric, with owned names for the generated ones in `names` */
  GPtrArray *names; /* owned generated names */
  GHashTable *metric_names; /* the set of the metrics' names (borrowed from `metrics`) */
  GPtrArray *jobs;  /* Job *: points first, then baselines */
  guint n_points;
  gint tokens_metric;
  gint fits_metric;
  gboolean warned_ahead; /* cli_batch_warnings_ahead: the jobs print no warnings */
};

static void
job_free (gpointer p)
{
  Job *j = p;
  g_strfreev (j->sets);
  g_strfreev (j->origins);
  g_free (j->error);
  g_free (j->metrics);
  g_free (j);
}

/* head metrics, peak_<category>, time_<kind>, tail metrics (report.c's names). */
static void
build_metrics (CliBatch *b)
{
  b->metrics = g_array_new (FALSE, FALSE, sizeof (Metric));
  b->names = g_ptr_array_new_with_free_func (g_free);
  g_array_append_vals (b->metrics, head_metrics, G_N_ELEMENTS (head_metrics));
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      char *n = g_strdup_printf ("peak_%s", model_ledger_category_name (c));
      g_ptr_array_add (b->names, n);
      Metric m = { n, "B", FALSE };
      g_array_append_val (b->metrics, m);
    }
  for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
    {
      char *n = g_strdup_printf ("time_%s", model_plan_task_kind_name (k));
      g_ptr_array_add (b->names, n);
      Metric m = { n, "s", FALSE };
      g_array_append_val (b->metrics, m);
    }
  g_array_append_vals (b->metrics, tail_metrics, G_N_ELEMENTS (tail_metrics));
  for (guint i = 0; i < b->metrics->len; i++)
    if (strcmp (g_array_index (b->metrics, Metric, i).name, "tokens_per_s") == 0)
      b->tokens_metric = (gint) i;
    else if (strcmp (g_array_index (b->metrics, Metric, i).name, "fits") == 0)
      b->fits_metric = (gint) i;
  b->metric_names = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < b->metrics->len; i++)
    g_hash_table_add (b->metric_names, (gpointer) g_array_index (b->metrics, Metric, i).name);
}

static Job *
job_new (CliBatch *b, char **sets, char **origins)
{
  Job *j = g_new0 (Job, 1);
  j->sets = sets;
  j->origins = origins;
  j->baseline = -1;
  j->metrics = g_new (double, b->metrics->len);
  for (guint m = 0; m < b->metrics->len; m++)
    j->metrics[m] = NAN;
  g_ptr_array_add (b->jobs, j);
  return j;
}

static gint
cmp_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The effective overrides of `sets` (later ones win), sorted by group.key and joined: two
 * lists with the same key give the same scenario. */
static char *
canonical_key (char **sets)
{
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; sets[i] != NULL; i++)
    {
      const char *eq = strchr (sets[i], '=');
      gsize klen = eq ? (gsize) (eq - sets[i]) : strlen (sets[i]);
      for (guint k = 0; k < keys->len; k++)
        if (strncmp (g_ptr_array_index (keys, k), sets[i], klen + 1) == 0)
          g_ptr_array_remove_index (keys, k--);
      g_ptr_array_add (keys, g_strdup (sets[i]));
    }
  g_ptr_array_sort (keys, cmp_strings);
  g_ptr_array_add (keys, NULL);
  return g_strjoinv ("\n", (char **) keys->pdata);
}

/* One baseline job per distinct baseline scenario; a baseline equal to a point reuses the
 * point's job (lookups only, never iterated). */
static void
add_baselines (CliBatch *b)
{
  const char *const *base = cli_sweep_baseline (b->sweep);
  if (base == NULL || base[0] == NULL)
    return;
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint p = 0; p < b->n_points; p++)
    {
      Job *point = g_ptr_array_index (b->jobs, p);
      g_hash_table_insert (seen, canonical_key (point->sets), GINT_TO_POINTER (p));
    }
  for (guint p = 0; p < b->n_points; p++)
    {
      Job *point = g_ptr_array_index (b->jobs, p);
      g_autoptr (GStrvBuilder) sb = g_strv_builder_new ();
      g_strv_builder_addv (sb, (const char **) point->sets);
      g_strv_builder_addv (sb, (const char **) base);
      char **sets = g_strv_builder_end (sb);
      char *key = canonical_key (sets);
      gpointer index = NULL;
      if (g_hash_table_lookup_extended (seen, key, NULL, &index))
        {
          point->baseline = GPOINTER_TO_INT (index);
          g_free (key);
          g_strfreev (sets);
          continue;
        }
      point->baseline = (gint) b->jobs->len;
      g_hash_table_insert (seen, key, GINT_TO_POINTER (point->baseline));
      g_autoptr (GStrvBuilder) ob = g_strv_builder_new ();
      g_strv_builder_addv (ob, (const char **) point->origins);
      for (guint i = 0; base[i] != NULL; i++)
        g_strv_builder_add (ob, cli_sweep_baseline_origin (b->sweep));
      job_new (b, sets, g_strv_builder_end (ob));
    }
}

CliBatch *
cli_batch_new (const CliSweep *sweep, const char *const *extra_sets)
{
  g_return_val_if_fail (sweep != NULL, NULL);
  CliBatch *b = g_new0 (CliBatch, 1);
  b->sweep = sweep;
  b->tokens_metric = b->fits_metric = -1;
  build_metrics (b);
  b->jobs = g_ptr_array_new_with_free_func (job_free);
  b->n_points = cli_sweep_n_points (sweep);
  b->extra = g_strdupv ((char **) extra_sets);
  /* A point's overrides are made by the worker that runs it (point_sets): 1,000 points' were
   * ~2.5 ms of the calling thread before any scenario ran. The baselines are found from them
   * here, so with a baseline they are made now. */
  gboolean base = cli_sweep_baseline (sweep) != NULL && cli_sweep_baseline (sweep)[0] != NULL;
  for (guint p = 0; p < b->n_points; p++)
    job_new (b, base ? cli_sweep_sets (sweep, p, extra_sets) : NULL,
             base ? cli_sweep_set_origins (sweep, extra_sets) : NULL);
  add_baselines (b);
  return b;
}

void
cli_batch_free (CliBatch *batch)
{
  if (batch == NULL)
    return;
  g_ptr_array_unref (batch->jobs);
  g_strfreev (batch->extra);
  g_hash_table_unref (batch->metric_names);
  g_array_unref (batch->metrics);
  g_ptr_array_unref (batch->names);
  g_free (batch);
}

guint
cli_batch_n_jobs (const CliBatch *batch)
{
  return batch->jobs->len;
}

guint
cli_batch_n_points (const CliBatch *batch)
{
  return batch->n_points;
}

/* ---- running ------------------------------------------------------------------------------ */

/* Makes the overrides of point job j (index p) if cli_batch_new left them to its worker. */
static void
point_sets (const CliBatch *b, Job *j, guint p)
{
  if (j->sets != NULL)
    return;
  j->sets = cli_sweep_sets (b->sweep, p, (const char *const *) b->extra);
  j->origins = cli_sweep_set_origins (b->sweep, (const char *const *) b->extra);
}

static gboolean
simulate_job (const CliBatch *b, Job *j, GError **error)
{
  const char *const *sets = (const char *const *) j->sets;
  const char *const *origins = (const char *const *) j->origins;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (cli_sweep_scenario (b->sweep), sets,
                                                          origins, error);
  if (sc == NULL)
    return FALSE;
  if (!b->warned_ahead)
    cli_scenario_print_warnings (sc);
  ModelSimResult res = { 0 };
  if (!cli_scenario_simulate (sc, NULL, &res, error))
    {
      g_autofree char *source = cli_scenario_error_source (sc->path, sets, origins,
                                                           (*error)->message);
      g_prefix_error (error, "%s: ", source);
      return FALSE;
    }
  /* the report's summary, of which only the metrics are kept: the same numbers as a run
   * file's /summary, without the cost of recording the rest */
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  sim_recorder_summary_keep (rec, b->metric_names);
  cli_report_fill_summary (rec, sc, &res);
  model_sim_result_clear (&res);
  for (guint m = 0; m < b->metrics->len; m++)
    {
      const Metric *mt = &g_array_index (b->metrics, Metric, m);
      double v;
      j->metrics[m] = sim_recorder_summary_get (rec, mt->name, &v) ? v
                      : mt->zero_if_absent                         ? 0.0
                                                                   : NAN;
    }
  return TRUE;
}

void
cli_batch_warnings_ahead (CliBatch *batch, gboolean print)
{
  g_return_if_fail (batch != NULL);
  batch->warned_ahead = TRUE;
  for (guint i = 0; print && i < batch->jobs->len; i++)
    {
      Job *j = g_ptr_array_index (batch->jobs, i);
      if (i < batch->n_points)
        point_sets (batch, j, i);
      /* a scenario that fails to load says so when its job runs */
      g_autoptr (CliScenario) sc = cli_scenario_load_origins (
        cli_sweep_scenario (batch->sweep), (const char *const *) j->sets,
        (const char *const *) j->origins, NULL);
      if (sc != NULL)
        cli_scenario_print_warnings (sc);
    }
}

/* One cli_batch_run: its jobs are offset + k × stride for k < n. Shared by the workers and
 * the calling thread; an interrupted run abandons it to the workers still running (never
 * freed then, see cli_batch_run). */
typedef struct
{
  CliBatch *batch;
  guint offset, stride, n;
  gint next;     /* atomic: the next k to claim */
  gint stop;     /* atomic: set when the run is abandoned; workers claim no more jobs */
  GMutex lock;   /* guards `finished` and `n_live` */
  GCond cond;    /* signalled when the last worker ends */
  GArray *finished; /* guint job indices in the order they finished, not yet taken by the
                     * calling thread */
  guint n_live;  /* workers still running */
} Run;

/* How often the calling thread looks at the finished jobs (µs): progress is shown and a
 * signal deferred by the caller (cli_interrupt_defer) noticed within this time. The workers
 * never wake it for a single job: a wake-up per job (a futex call and a context switch on
 * cores the workers keep busy) made 2,417 context switches of the 1,000-scenario sweep at
 * -j 2, 118 without (bench/RESULTS.md, 2026-12-07, second h-sweep session). */
#define POLL_US 50000

/* A worker: claims jobs one at a time (an atomic counter, no queue between threads) until
 * none is left or the run is abandoned. */
static gpointer
run_jobs (gpointer data)
{
  Run *run = data;
  cli_interrupt_block_here (); /* signals go to the calling thread (cli/interrupt.h) */
  for (;;)
    {
      guint k = (guint) g_atomic_int_add (&run->next, 1);
      if (k >= run->n || g_atomic_int_get (&run->stop))
        break;
      guint index = run->offset + k * run->stride;
      Job *j = g_ptr_array_index (run->batch->jobs, index);
      point_sets (run->batch, j, index); /* points come first: index p is point p */
      GError *error = NULL;
      j->ok = simulate_job (run->batch, j, &error);
      if (!j->ok)
        {
          /* printable and short: it goes to the terminal and into the results */
          j->error = sim_text_printable (error->message, CLI_SCENARIO_MESSAGE_MAX);
          g_error_free (error);
        }
      g_mutex_lock (&run->lock); /* the calling thread marks it done */
      g_array_append_val (run->finished, index);
      g_mutex_unlock (&run->lock);
    }
  g_mutex_lock (&run->lock);
  if (--run->n_live == 0)
    g_cond_signal (&run->cond);
  g_mutex_unlock (&run->lock);
  return NULL;
}

gboolean
cli_batch_run (CliBatch *batch, guint n_threads, guint offset, guint stride,
               CliBatchProgress progress, gpointer data)
{
  g_return_val_if_fail (batch != NULL && n_threads >= 1 && stride >= 1, FALSE);
  Run *run = g_new0 (Run, 1);
  run->batch = batch;
  run->offset = offset;
  run->stride = stride;
  for (guint i = offset; i < batch->jobs->len; i += stride)
    run->n++;
  g_mutex_init (&run->lock);
  g_cond_init (&run->cond);
  run->finished = g_array_new (FALSE, FALSE, sizeof (guint));
  guint n_workers = MIN (n_threads, MAX (run->n, 1u));
  run->n_live = n_workers;
  GThread **workers = g_new (GThread *, n_workers);
  for (guint w = 0; w < n_workers; w++)
    workers[w] = g_thread_new ("batch", run_jobs, run);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GArray) taken = g_array_new (FALSE, FALSE, sizeof (guint));
  guint done = 0;
  g_mutex_lock (&run->lock);
  for (;;)
    {
      /* take the indices finished since the last look, then mark and report them unlocked */
      g_array_append_vals (taken, run->finished->data, run->finished->len);
      g_array_set_size (run->finished, 0);
      gboolean ended = run->n_live == 0;
      g_mutex_unlock (&run->lock);
      for (guint i = 0; i < taken->len; i++)
        {
          Job *j = g_ptr_array_index (batch->jobs, g_array_index (taken, guint, i));
          j->done = TRUE;
          done++;
          if (progress != NULL)
            progress (done, run->n, (g_get_monotonic_time () - t0) / 1e6, data);
        }
      g_array_set_size (taken, 0);
      if (ended)
        break;
      if (cli_interrupt_pending () != 0)
        {
          /* Interrupted: the jobs still running go on writing their own Job and the run, so
           * neither is freed (nor the workers joined); the caller writes what is done and
           * ends the process. */
          g_atomic_int_set (&run->stop, 1);
          g_free (workers);
          return FALSE;
        }
      g_mutex_lock (&run->lock);
      if (run->n_live > 0 && run->finished->len == 0)
        g_cond_wait_until (&run->cond, &run->lock, g_get_monotonic_time () + POLL_US);
    }
  for (guint w = 0; w < n_workers; w++)
    g_thread_join (workers[w]);
  g_free (workers);
  g_assert (done == run->n); /* every worker ended after the last job it claimed */
  g_array_unref (run->finished);
  g_mutex_clear (&run->lock);
  g_cond_clear (&run->cond);
  g_free (run);
  return TRUE;
}

/* ---- gathering ---------------------------------------------------------------------------- */

GVariant *
cli_batch_serialize (const CliBatch *batch)
{
  GVariantBuilder vb;
  g_variant_builder_init (&vb, G_VARIANT_TYPE ("a(ubsad)"));
  for (guint i = 0; i < batch->jobs->len; i++)
    {
      const Job *j = g_ptr_array_index (batch->jobs, i);
      if (!j->done)
        continue;
      GVariant *m = g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, j->metrics,
                                               batch->metrics->len, sizeof (double));
      g_variant_builder_add (&vb, "(ubs@ad)", i, j->ok, j->error ? j->error : "", m);
    }
  return g_variant_ref_sink (g_variant_builder_end (&vb));
}

gboolean
cli_batch_merge (CliBatch *batch, GVariant *results, GError **error)
{
  if (!g_variant_is_of_type (results, G_VARIANT_TYPE ("a(ubsad)")))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "results of type %s, not a(ubsad)",
                   g_variant_get_type_string (results));
      return FALSE;
    }
  for (gsize r = 0; r < g_variant_n_children (results); r++)
    {
      g_autoptr (GVariant) row = g_variant_get_child_value (results, r);
      guint32 i;
      gboolean ok;
      const char *msg;
      g_autoptr (GVariant) m = NULL;
      g_variant_get (row, "(ub&s@ad)", &i, &ok, &msg, &m);
      gsize n = 0;
      const double *v = g_variant_get_fixed_array (m, &n, sizeof (double));
      if (i >= batch->jobs->len || n != batch->metrics->len)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                       "result row %" G_GSIZE_FORMAT ": job %u of %u, %" G_GSIZE_FORMAT
                       " metrics of %u", r, i, batch->jobs->len, n, batch->metrics->len);
          return FALSE;
        }
      Job *j = g_ptr_array_index (batch->jobs, i);
      j->done = TRUE;
      j->ok = ok;
      g_free (j->error);
      j->error = ok ? NULL : g_strdup (msg);
      memcpy (j->metrics, v, n * sizeof (double));
    }
  return TRUE;
}

guint
cli_batch_n_failed (const CliBatch *batch)
{
  guint n = 0;
  for (guint p = 0; p < batch->n_points; p++)
    {
      const Job *j = g_ptr_array_index (batch->jobs, p);
      n += j->done && !j->ok;
    }
  return n;
}

guint
cli_batch_n_done (const CliBatch *batch)
{
  guint n = 0;
  for (guint p = 0; p < batch->n_points; p++)
    {
      const Job *j = g_ptr_array_index (batch->jobs, p);
      n += j->done;
    }
  return n;
}

gboolean
cli_batch_check_baselines (const CliBatch *batch, GError **error)
{
  for (guint p = 0; p < batch->n_points; p++)
    {
      const Job *j = g_ptr_array_index (batch->jobs, p);
      if (!j->done || !j->ok || j->baseline < 0)
        continue; /* a failed point is its own row's error */
      const Job *base = g_ptr_array_index (batch->jobs, j->baseline);
      if (base->done && base->ok)
        continue;
      g_autofree char *label = cli_sweep_label (batch->sweep, p);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: the baseline of scenario '%s' %s: %s",
                   cli_sweep_baseline_origin (batch->sweep), label,
                   base->done ? "failed" : "did not run",
                   base->error != NULL ? base->error : "no result");
      return FALSE;
    }
  return TRUE;
}

/* ---- the table ---------------------------------------------------------------------------- */

static gboolean
has_baseline (const CliBatch *b)
{
  const char *const *base = cli_sweep_baseline (b->sweep);
  return base != NULL && base[0] != NULL;
}

static void
table_columns (const CliBatch *b, SimTable *t)
{
  sim_table_add_column (t, "index", SIM_TABLE_DOUBLE, "1");
  sim_table_add_column (t, "label", SIM_TABLE_TEXT, NULL);
  sim_table_add_column (t, "status", SIM_TABLE_TEXT, NULL);
  sim_table_add_column (t, "error", SIM_TABLE_TEXT, NULL);
  for (guint a = 0; a < cli_sweep_n_axes (b->sweep); a++)
    sim_table_add_column (t, cli_sweep_axis_key (b->sweep, a),
                          cli_sweep_axis_numeric (b->sweep, a) ? SIM_TABLE_DOUBLE : SIM_TABLE_TEXT,
                          "");
  for (guint m = 0; m < b->metrics->len; m++)
    {
      const Metric *mt = &g_array_index (b->metrics, Metric, m);
      sim_table_add_column (t, mt->name, SIM_TABLE_DOUBLE, mt->unit);
    }
  if (has_baseline (b))
    {
      sim_table_add_column (t, "baseline_tokens_per_s", SIM_TABLE_DOUBLE, "token/s");
      sim_table_add_column (t, "baseline_fits", SIM_TABLE_DOUBLE, "1");
      sim_table_add_column (t, "penalty", SIM_TABLE_DOUBLE, "%");
    }
}

static void
table_baseline (const CliBatch *b, const Job *j, SimTable *t, guint row, guint *col)
{
  if (!has_baseline (b))
    return;
  const Job *base = j->baseline >= 0 ? g_ptr_array_index (b->jobs, j->baseline) : NULL;
  /* only jobs marked done are read: an interrupted batch's others may still be running */
  double bt = base != NULL && base->done && base->ok ? base->metrics[b->tokens_metric] : NAN;
  double mine = j->done && j->ok ? j->metrics[b->tokens_metric] : NAN;
  double bfits = base != NULL && base->done && base->ok ? base->metrics[b->fits_metric] : NAN;
  double fits = j->done && j->ok ? j->metrics[b->fits_metric] : NAN;
  sim_table_set_double (t, row, (*col)++, bt);
  sim_table_set_double (t, row, (*col)++, bfits);
  /* a step that does not fit cannot run: its throughput is that of a step as planned, so
   * neither a row out of memory nor one against a baseline that is has a penalty (NaN; the
   * table and the chart say "OOM" or "baseline OOM"; QA: OOM rows showed 83 %) */
  sim_table_set_double (t, row, (*col)++,
                        fits == 0 || bfits == 0 ? NAN : 100.0 * (1.0 - mine / bt));
}

SimTable *
cli_batch_table (const CliBatch *batch)
{
  SimTable *t = sim_table_new ();
  table_columns (batch, t);
  for (guint p = 0; p < batch->n_points; p++)
    {
      const Job *j = g_ptr_array_index (batch->jobs, p);
      guint row = sim_table_add_row (t), col = 0;
      g_autofree char *label = cli_sweep_label (batch->sweep, p);
      sim_table_set_double (t, row, col++, p);
      sim_table_set_text (t, row, col++, label);
      sim_table_set_text (t, row, col++, !j->done ? "not run" : j->ok ? "ok" : "failed");
      sim_table_set_text (t, row, col++, j->done ? j->error : NULL);
      for (guint a = 0; a < cli_sweep_n_axes (batch->sweep); a++, col++)
        {
          const char *v = cli_sweep_value (batch->sweep, p, a);
          if (cli_sweep_axis_numeric (batch->sweep, a))
            sim_table_set_double (t, row, col, g_ascii_strtod (v, NULL));
          else
            sim_table_set_text (t, row, col, v);
        }
      for (guint m = 0; m < batch->metrics->len; m++)
        sim_table_set_double (t, row, col++, j->done ? j->metrics[m] : NAN);
      table_baseline (batch, j, t, row, &col);
    }
  return t;
}

/* ---- progress ----------------------------------------------------------------------------- */

char *
cli_batch_progress_text (guint done, guint total, double elapsed, gboolean tty)
{
  double frac = total > 0 ? (double) done / total : 1.0;
  double eta = done > 0 ? elapsed / done * (total - done) : 0.0;
  guint pct = (guint) (100 * frac);
  if (!tty)
    return g_strdup_printf ("batch: %u of %u simulations done (%u%%), ETA %.0f s", done, total,
                            pct, eta);
  enum { WIDTH = 30 };
  char bar[WIDTH + 1];
  guint filled = (guint) (WIDTH * frac);
  for (guint i = 0; i < WIDTH; i++)
    bar[i] = i < filled ? '#' : '-';
  bar[WIDTH] = '\0';
  guint s = (guint) (eta + 0.5);
  return g_strdup_printf ("[%s] %u/%u %3u%%  ETA %u:%02u", bar, done, total, pct, s / 60,
                          s % 60);
}
