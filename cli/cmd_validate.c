/* cli/cmd_validate.c — `stepsim validate [SCENARIO.ini…]`: simulate the validation cases
 * and print predicted against measured, with each case's tolerance and verdict
 * (../shared/validation/published.md asks for exactly this report).
 *
 * A validation case is a scenario with a [validation] group:
 *   id = T9                         short name
 *   source = MosaicML llm-foundry …  where the measurement comes from
 *   metric = tokens_per_s_per_gpu   device_used | peak_allocated | peak_reserved |
 *                                   step_time | tokens_per_s_per_gpu | mfu |
 *                                   fit_seq_len (the answer of `stepsim fit --for seq_len`
 *                                   on the scenario: the longest sequence that fits)
 *   measured = 4641                 > 0, with its unit for memory and time ("14949 MiB",
 *                                   "1.42 s"); mfu as a fraction (≤ 1)
 *   tolerance = 0.20                in (0, 1]: |predicted − measured| ≤ tolerance × measured
 *   known_gap = false               true: a documented miss, reported, not a failure …
 *   gap_error = 0.240               … (required with known_gap = true) as long as its error,
 *   gap_margin = 0.02                 predicted / measured − 1, stays within gap_error ±
 *                                     gap_margin (margin in (0, 1]); drifting further is a
 *                                     miss, "GAP DRIFT": a documented gap has a bound
 * id, metric, measured and tolerance are required; every error names the file, the group
 * and the key.
 * Without arguments every scenario with a [validation] group in tests/validation of the
 * source tree (or the installed data) is run. Exit status: 0 when every case without known_gap is within tolerance and every known gap
 * within its bound, 1 otherwise
 * (or on an error), 2 on usage errors. Nothing is written.
 */
#include "config.h"
#include "cli/scenario/input.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/scenario/output.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/study/fit.h"
#include "cli/study/validate_measured.h"
#include "hardware/catalog.h"
#include "hardware/kernel.h"
#include "sim/tempfiles.h"
#include "sim/text.h"
#include "sim/units.h"

typedef struct
{
  char *id, *metric;
  double measured, tolerance;
  gboolean known_gap;
  double gap_error, gap_margin; /* with known_gap: the documented error and its bound */
} Case;

static const struct
{
  const char *name;
  gboolean has_dim;
  SimDimension dim;
} metrics[] = {
  { "device_used", TRUE, SIM_DIM_BYTES },      { "peak_allocated", TRUE, SIM_DIM_BYTES },
  { "peak_reserved", TRUE, SIM_DIM_BYTES },    { "step_time", TRUE, SIM_DIM_TIME },
  { "tokens_per_s_per_gpu", FALSE, 0 },        { "mfu", FALSE, 0 },
  { "fit_seq_len", FALSE, 0 },
};

static double
predicted (const char *metric, const ModelSimResult *r)
{
  if (strcmp (metric, "device_used") == 0)
    return r->device_used;
  if (strcmp (metric, "peak_allocated") == 0)
    return r->peak_allocated;
  if (strcmp (metric, "peak_reserved") == 0)
    return r->peak_reserved;
  if (strcmp (metric, "step_time") == 0)
    return r->step_time;
  if (strcmp (metric, "mfu") == 0)
    return r->mfu;
  return r->tokens_per_s / r->n_ranks;
}

/* The stripped value of [validation] `key`, or NULL: when absent (an error if `required`)
 * or empty (an error). Errors name the file, the group and the key. */
static char *
case_value (GKeyFile *kf, const char *path, const char *key, gboolean required, GError **error)
{
  if (!g_key_file_has_key (kf, "validation", key, NULL))
    {
      if (required)
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                     "%s: group [validation], key '%s': required key is missing", path, key);
      return NULL;
    }
  char *v = g_strstrip (g_key_file_get_value (kf, "validation", key, NULL));
  if (v[0] != '\0')
    return v;
  g_free (v);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s: group [validation], key '%s': empty value", path, key);
  return NULL;
}

static gboolean
case_error (GError **error, const char *path, const char *key, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s: group [validation], key '%s': %s", path, key, what);
  return FALSE;
}

/* measured (with its metric's unit) > 0, finite; an mfu at most 1; tolerance in (0, 1]. */
static gboolean
parse_figures (const char *path, Case *c, guint m, const char *measured, const char *tol,
               GError **error)
{
  gboolean ok = metrics[m].has_dim ? sim_units_parse (measured, metrics[m].dim, &c->measured, error)
                                   : sim_units_parse_number (measured, &c->measured, error);
  if (!ok)
    return g_prefix_error (error, "%s: group [validation], key 'measured': ", path), FALSE;
  if (!(c->measured > 0) || !isfinite (c->measured))
    return case_error (error, path, "measured", "must be positive (a relative error needs it)");
  if (strcmp (c->metric, "mfu") == 0 && c->measured > 1)
    return case_error (error, path, "measured", "mfu is a fraction of peak, at most 1 (e.g. 0.45)");
  if (!sim_units_parse_number (tol, &c->tolerance, error))
    return g_prefix_error (error, "%s: group [validation], key 'tolerance': ", path), FALSE;
  if (!(c->tolerance > 0 && c->tolerance <= 1))
    return case_error (error, path, "tolerance",
                       "must be a fraction in (0, 1], e.g. 0.10 for within 10 %");
  return TRUE;
}

/* gap_error and gap_margin: both required with known_gap = true (a known gap has a bound),
 * an error without it; gap_error a finite fraction in (−1, 10], gap_margin in (0, 1]. */
static gboolean
load_gap_bound (GKeyFile *kf, const char *path, Case *c, GError **error)
{
  const char *keys[] = { "gap_error", "gap_margin" };
  double *into[] = { &c->gap_error, &c->gap_margin };
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
    {
      GError *e = NULL;
      g_autofree char *v = case_value (kf, path, keys[k], FALSE, &e);
      if (e != NULL)
        return g_propagate_error (error, e), FALSE;
      if (v == NULL && c->known_gap)
        return case_error (error, path, keys[k],
                           "required with known_gap = true: a known gap states the error it "
                           "has (gap_error) and how far it may drift (gap_margin)");
      if (v == NULL)
        continue;
      if (!c->known_gap)
        return case_error (error, path, keys[k], "only with known_gap = true");
      if (!sim_units_parse_number (v, into[k], error))
        return g_prefix_error (error, "%s: group [validation], key '%s': ", path, keys[k]),
               FALSE;
    }
  if (!c->known_gap)
    return TRUE;
  if (!(c->gap_error > -1 && c->gap_error <= 10))
    return case_error (error, path, "gap_error",
                       "must be the relative error predicted / measured - 1, in (-1, 10]");
  if (!(c->gap_margin > 0 && c->gap_margin <= 1))
    return case_error (error, path, "gap_margin", "must be a fraction in (0, 1], e.g. 0.02");
  return TRUE;
}

/* Reads the [validation] group of `path` into *c (c->id stays NULL without one). FALSE +
 * error naming the file, the group and the key. */
static gboolean
load_case (const char *path, Case *c, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  /* the scenario's own checks first (a key before any group, a malformed header, …: their
   * messages name the line; GLib's do not) */
  if (!cli_scenario_load_keyfile (kf, path, error))
    return FALSE;
  if (!g_key_file_has_group (kf, "validation"))
    return TRUE; /* not a validation case: c->id stays NULL and the caller skips it */
  g_autofree char *measured = NULL, *tol = NULL, *gap = NULL;
  GError *e = NULL;
  if ((c->id = case_value (kf, path, "id", TRUE, error)) == NULL
      || (c->metric = case_value (kf, path, "metric", TRUE, error)) == NULL
      || (measured = case_value (kf, path, "measured", TRUE, error)) == NULL
      || (tol = case_value (kf, path, "tolerance", TRUE, error)) == NULL)
    return FALSE;
  gap = case_value (kf, path, "known_gap", FALSE, &e);
  if (e != NULL)
    return g_propagate_error (error, e), FALSE;
  if (gap != NULL && !sim_units_parse_bool (gap, &c->known_gap, error))
    return g_prefix_error (error, "%s: group [validation], key 'known_gap': ", path), FALSE;
  if (!load_gap_bound (kf, path, c, error))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (metrics); i++)
    if (strcmp (c->metric, metrics[i].name) == 0)
      return parse_figures (path, c, i, measured, tol, error);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s: group [validation], key 'metric': unknown metric '%s' (device_used, "
               "peak_allocated, peak_reserved, step_time, tokens_per_s_per_gpu, mfu or "
               "fit_seq_len)", path, c->metric);
  return FALSE;
}

static char *
format_metric (const char *metric, double v)
{
  if (strcmp (metric, "device_used") == 0 || strcmp (metric, "peak_allocated") == 0
      || strcmp (metric, "peak_reserved") == 0)
    return g_strdup_printf ("%.0f MiB", v / (1024.0 * 1024));
  if (strcmp (metric, "fit_seq_len") == 0)
    return g_strdup_printf ("%.0f tok", v);
  if (strcmp (metric, "step_time") == 0)
    return sim_units_format (v, SIM_DIM_TIME, 3);
  if (strcmp (metric, "mfu") == 0)
    return g_strdup_printf ("%.1f %%", 100 * v);
  return g_strdup_printf ("%.0f tok/s", v);
}

/* |relative error| of every time or throughput row run so far (for the median). */
static GArray *time_errors;

/* Where the table goes: stdout, or nowhere (NULL) when the TSV goes there (--tsv -). */
static FILE *table_out;

/* printf onto table_out, when there is one. */
static void G_GNUC_PRINTF (1, 2)
table_printf (const char *format, ...)
{
  if (table_out == NULL)
    return;
  va_list ap;
  va_start (ap, format);
  vfprintf (table_out, format, ap);
  va_end (ap);
}

static gboolean
is_time_metric (const char *metric)
{
  return strcmp (metric, "step_time") == 0 || strcmp (metric, "tokens_per_s_per_gpu") == 0
         || strcmp (metric, "mfu") == 0;
}

/* Prints one row (and appends it to `tsv` when not NULL: id, GPU type, metric, predicted,
 * measured, relative error, known gap — the table of cli/report/error_band.h); returns 0 pass,
 * 1 miss (a known gap that drifted out of its bound included), 2 known gap. A run that
 * does not fit in GPU memory fails whatever its figure:
 * the measured job ran (verdict OOM). */
static int
report (const Case *c, const char *gpu, double p, gboolean fits, GString *tsv)
{
  double err = p / c->measured - 1;
  gboolean within = fabs (err) <= c->tolerance && fits;
  if (tsv != NULL)
    {
      char v[3][G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf (tsv, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c->id, gpu, c->metric,
               g_ascii_dtostr (v[0], sizeof v[0], p), g_ascii_dtostr (v[1], sizeof v[1], c->measured),
               g_ascii_dtostr (v[2], sizeof v[2], err), c->known_gap ? 1 : 0);
    }
  gboolean in_gap = c->known_gap && fits && fabs (err - c->gap_error) <= c->gap_margin;
  if (is_time_metric (c->metric) && time_errors != NULL)
    {
      double a = fabs (err);
      g_array_append_val (time_errors, a);
    }
  g_autofree char *ps = format_metric (c->metric, p);
  g_autofree char *ms = format_metric (c->metric, c->measured);
  g_autofree char *drift = c->known_gap && fits && !within && !in_gap
                             ? g_strdup_printf ("GAP DRIFT (documented %+.1f %% +/- %.1f)",
                                                100 * c->gap_error, 100 * c->gap_margin)
                             : NULL;
  table_printf ("%-6s %-22s %14s %14s %+8.1f %% %6.1f %%  %s\n", c->id, c->metric, ps, ms,
                100 * err, 100 * c->tolerance,
                within ? "PASS" : !fits ? (c->known_gap ? "KNOWN GAP (OOM)" : "OOM")
                : in_gap ? "KNOWN GAP" : drift != NULL ? drift : "MISS");
  return within ? 0 : !fits ? (c->known_gap ? 2 : 1) : in_gap ? 2 : 1;
}

/* A fit_seq_len case: `stepsim fit --for seq_len` on the scenario (default options: every
 * length, no multiple); the answer is the prediction. Nothing fitting is an OOM verdict. */
/* A case that could not run: its row in the table (the id, "-" for a file that is no case,
 * "?" when the file could not be read for one) and the message on stderr, as every
 * command's errors, for scripts that keep stdout; not there too when stderr is stdout (a
 * terminal, 2>&1), where it would read twice (QA). */
static void
row_error (const char *id, const char *message)
{
  table_printf ("%-6s error: %s\n", id, message);
  fflush (stdout);
  if (table_out == NULL || !cli_stdout_is_stderr ())
    fprintf (stderr, "stepsim: validate: %s\n", message);
}

static int
run_fit_case (const char *path, const Case *c, const char *gpu, GString *tsv)
{
  CliFitOptions opt;
  cli_fit_options_init (&opt);
  g_autoptr (GError) error = NULL;
  CliFitReport *fit = cli_fit_search (path, NULL, CLI_FIT_SEQ_LEN, &opt, &error);
  if (fit == NULL)
    {
      row_error (c->id, error->message);
      return -1;
    }
  guint64 v = cli_fit_report_value (fit);
  cli_fit_report_free (fit);
  return report (c, gpu, (double) v, v > 0, tsv);
}

/* Runs one case; returns 0 pass, 1 miss, 2 known gap, -1 error (printed: a file named
 * without a [validation] group is one, as it is no case). */
static int
run_case (const char *path, GString *tsv)
{
  Case c = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = NULL;
  ModelSimResult r = { 0 };
  int verdict = -1;
  if (load_case (path, &c, &error) && c.id == NULL)
    {
      g_autofree char *msg = g_strdup_printf (
        "%s: no [validation] group: not a validation case (see stepsim validate --help)", path);
      row_error ("-", msg);
      goto out;
    }
  if (error == NULL && (sc = cli_scenario_load (path, NULL, &error)) != NULL)
    cli_scenario_print_warnings (sc);
  if (error == NULL && sc != NULL && strcmp (c.metric, "fit_seq_len") == 0)
    {
      verdict = run_fit_case (path, &c, sc->node.gpu->name, tsv);
      goto out;
    }
  if (error != NULL || sc == NULL || !cli_scenario_simulate (sc, NULL, &r, &error))
    {
      row_error (c.id ? c.id : "?", error->message);
      goto out;
    }
  verdict = report (&c, sc->node.gpu->name, predicted (c.metric, &r), r.gpu_fits, tsv);
out:
  model_sim_result_clear (&r);
  g_free (c.id);
  g_free (c.metric);
  return verdict;
}

static gint
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The median of `v` (sorted in place); 0 when empty. */
static double
median (GArray *v)
{
  if (v->len == 0)
    return 0;
  g_array_sort (v, compare_doubles);
  guint n = v->len;
  double *d = (double *) v->data;
  return n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
}

/* `--factors`: every catalog GPU's kernel-model factors with their sources. */
static void
print_factors (void)
{
  printf ("kernel-model factors (hardware/kernel.c), per GPU: name, value, source\n");
  for (guint i = 0; i < hw_catalog_n_gpus (); i++)
    {
      const HwGpuSpec *g = hw_catalog_gpu_at (i);
      g_autoptr (GString) f = g_string_new (NULL);
      hw_kernel_describe_factors (g, f);
      printf ("%s\n", g->name);
      g_auto (GStrv) lines = g_strsplit (f->str, "\n", -1);
      for (char **l = lines; *l != NULL && **l != '\0'; l++)
        printf ("  %s\n", *l);
    }
  g_autoptr (GString) host = g_string_new (NULL);
  model_framework_describe_host_factors (host);
  printf ("host-time factors (models/stack/framework.c), every framework profile:\n");
  g_auto (GStrv) lines = g_strsplit (host->str, "\n", -1);
  for (char **l = lines; *l != NULL && **l != '\0'; l++)
    printf ("  %s\n", *l);
  printf ("\n");
}

static gint
compare_paths (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const char *const *) a, *(const char *const *) b);
}

/* Adds the cases of directory `dir` to `files`: its *.ini files with a [validation] group,
 * in name order; how many. */
static guint
cases_in_dir (const char *dir, GPtrArray *files)
{
  g_autoptr (GPtrArray) found = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  for (const char *n; d != NULL && (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".ini"))
      {
        g_autofree char *path = g_build_filename (dir, n, NULL);
        g_autoptr (GKeyFile) kf = g_key_file_new ();
        /* one that does not parse is run too, so its error is reported, not skipped */
        if (!cli_input_load_keyfile (kf, path, NULL)
            || g_key_file_has_group (kf, "validation"))
          g_ptr_array_add (found, g_steal_pointer (&path));
      }
  g_ptr_array_sort (found, compare_paths);
  for (guint i = 0; i < found->len; i++)
    g_ptr_array_add (files, g_strdup (g_ptr_array_index (found, i)));
  return found->len;
}

/* Removes from `files` each case given before (the same real path: as a file and in its
 * directory, by another name, through a link), said once on stderr with the names it was
 * given as; it runs once. A path that cannot be resolved is compared as given (its error
 * comes when it runs). */
static void
drop_repeated_cases (GPtrArray *files)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, free, NULL);
  g_autoptr (GPtrArray) dropped = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < files->len;)
    {
      const char *path = g_ptr_array_index (files, i);
      char *real = realpath (path, NULL);
      if (real == NULL)
        real = strdup (path);
      if (g_hash_table_add (seen, real))
        i++;
      else
        g_ptr_array_add (dropped, g_ptr_array_steal_index (files, i));
    }
  if (dropped->len == 0)
    return;
  g_autoptr (GString) names = g_string_new (NULL);
  for (guint i = 0; i < dropped->len && i < 3; i++)
    {
      g_autofree char *shown = sim_text_printable (g_ptr_array_index (dropped, i), 200);
      g_string_append_printf (names, "%s%s", i > 0 ? ", " : "", shown);
    }
  if (dropped->len > 3)
    g_string_append_printf (names, " and %u more", dropped->len - 3);
  g_autofree char *msg = g_strdup_printf ("a case given again, run once: %s", names->str);
  cli_scenario_warn (msg);
}

/* The shipped cases (tests/validation, or the installed copy). */
static GPtrArray *
default_cases (void)
{
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *src = g_build_filename (STEPSIM_SRCDIR, "tests", "validation", NULL);
  g_autofree char *dir = g_file_test (src, G_FILE_TEST_IS_DIR)
                           ? g_strdup (src)
                           : g_build_filename (STEPSIM_DATADIR, "validation", NULL);
  cases_in_dir (dir, files);
  return files;
}

int
cli_cmd_validate (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "[SCENARIO.ini|DIR…] — predicted against published measurements");
  g_option_context_set_description (
    ctx,
    "A case is a scenario with a [validation] group:\n"
    "  id = M1                       required, the row name\n"
    "  source = …                    where the measurement comes from\n"
    "  metric = device_used          required: device_used | peak_allocated |\n"
    "                                peak_reserved (bytes with a unit), step_time (a time\n"
    "                                with a unit), tokens_per_s_per_gpu (a number), mfu (a\n"
    "                                fraction), fit_seq_len (tokens: the answer of\n"
    "                                `stepsim fit --for seq_len` on the scenario)\n"
    "  measured = 14949 MiB          required, > 0\n"
    "  tolerance = 0.05              required, in (0, 1]\n"
    "  known_gap = false             true: a documented miss, reported, not a failure,\n"
    "  gap_error = 0.24              as long as its error (predicted / measured - 1)\n"
    "  gap_margin = 0.02             stays within gap_error +/- gap_margin (both required\n"
    "                                with known_gap = true; further is GAP DRIFT, a miss)\n"
    "Without arguments the shipped cases (tests/validation) are run; a directory argument\n"
    "stands for the cases in it, and a file named without a [validation] group is an\n"
    "error (exit 1). A time or throughput\n"
    "case whose run does not fit in GPU memory is a miss (OOM). The last line gives the\n"
    "median |error| of the time and throughput cases. --measured FILE.tsv compares against\n"
    "measurements written by tools/measure_steps.py (format: cli/study/validate_measured.h).\n"
    "--tsv FILE also writes the rows as TSV: the error-band table the build installs\n"
    "(--tsv -: the TSV on standard output instead of the table).\n"
    "Exit status: 0 when every case without known_gap is within its tolerance and every\n"
    "known gap within its bound, 1 otherwise, 2 on usage errors.");
  g_autofree char *measured = NULL;
  gboolean factors = FALSE;
  g_autofree char *tsv_path = NULL;
  GOptionEntry entries[] = {
    { "measured", 'm', 0, G_OPTION_ARG_FILENAME, &measured,
      "compare against the measurements in FILE.tsv (tools/measure_steps.py) instead", "FILE.tsv" },
    { "factors", 'f', 0, G_OPTION_ARG_NONE, &factors,
      "first list every GPU's kernel-model factors and the frameworks' host time per op, "
      "with their sources", NULL },
    { "tsv", 0, 0, G_OPTION_ARG_FILENAME, &tsv_path,
      "also write the rows that ran as TSV (id, gpu, metric, predicted, measured, error, "
      "known_gap): the error-band table the build installs (-: to standard output, instead "
      "of the table)", "FILE" },
    { NULL },
  };
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("validate", error);
      return cli_error (msg), 2;
    }
  if (factors)
    print_factors ();
  if (measured != NULL)
    {
      if (argc > 1)
        return cli_error ("validate: --measured takes no scenario arguments"), 2;
      guint mp = 0, mm = 0;
      g_autoptr (GString) table = g_string_new (NULL);
      if (!cli_validate_measured (measured, table, &mp, &mm, &error))
        return cli_error (error->message), 1;
      fputs (table->str, stdout);
      printf ("%u within tolerance, %u miss%s\n", mp, mm, mm == 1 ? "" : "es");
      return mm == 0 ? 0 : 1;
    }
  g_autoptr (GPtrArray) files = g_ptr_array_new_with_free_func (g_free);
  for (int i = 1; i < argc; i++)
    if (!g_file_test (argv[i], G_FILE_TEST_IS_DIR))
      g_ptr_array_add (files, g_strdup (argv[i]));
    else if (cases_in_dir (argv[i], files) == 0)
      {
        /* a directory stands for the cases in it, as the shipped directory does */
        g_autofree char *msg = g_strdup_printf (
            "validate: %s: a directory without a case (no *.ini file with a [validation] "
            "group)", argv[i]);
        return cli_error (msg), 1;
      }
  if (files->len == 0)
    {
      g_ptr_array_unref (files);
      files = default_cases ();
    }
  drop_repeated_cases (files);
  /* the TSV never replaces what the cases read (QA: --tsv CASE.ini overwrote the case) and
   * is written whole at the end, or not at all */
  g_autoptr (GString) tsv = tsv_path != NULL ? g_string_new (NULL) : NULL;
  if (tsv_path != NULL)
    {
      g_autoptr (GPtrArray) inputs = cli_inputs_new ();
      for (guint i = 0; i < files->len; i++)
        cli_inputs_add_scenario (inputs, g_ptr_array_index (files, i), NULL);
      if (strcmp (tsv_path, "-") != 0
          && !cli_output_check ("--tsv", tsv_path, (const char *const *) inputs->pdata, &error))
        return cli_error (error->message), 1;
      g_string_append (tsv, "id\tgpu\tmetric\tpredicted\tmeasured\terror\tknown_gap\n");
    }
  table_out = tsv_path != NULL && strcmp (tsv_path, "-") == 0 ? NULL : stdout;
  table_printf ("%-6s %-22s %14s %14s %10s %8s  %s\n", "case", "metric", "predicted",
                "measured", "error", "tol.", "verdict");
  guint pass = 0, miss = 0, gap = 0, err = 0;
  g_autoptr (GArray) errors = g_array_new (FALSE, FALSE, sizeof (double));
  time_errors = errors;
  for (guint i = 0; i < files->len; i++)
    switch (run_case (g_ptr_array_index (files, i), tsv))
      {
      case 0: pass++; break;
      case 1: miss++; break;
      case 2: gap++; break;
      default: err++; break;
      }
  /* the table reached stdout before the TSV is written: exit 1 leaves none (QA); --tsv -
   * writes it there instead of the table */
  if (table_out == NULL)
    fputs (tsv->str, stdout);
  if (tsv != NULL && (!cli_stdout_flush (&error)
                      || (table_out != NULL
                          && !sim_tempfiles_set_contents (tsv_path, tsv->str, tsv->len, &error))))
    return cli_error (error->message), 1;
  table_printf ("%u within tolerance, %u known gap%s, %u miss%s, %u error%s", pass, gap,
                gap == 1 ? "" : "s", miss, miss == 1 ? "" : "es", err, err == 1 ? "" : "s");
  table_printf ("\n");
  if (errors->len > 0)
    table_printf ("median |error| of %u time/throughput cases: %.1f %%\n", errors->len,
                  100 * median (errors));
  time_errors = NULL;
  return miss == 0 && err == 0 ? 0 : 1;
}
