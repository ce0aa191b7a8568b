/* cli/cmd_batch.c — `stepsim batch SWEEP.ini [-j N] [-o OUT.h5] [--tsv F] [--csv F]`.
 *
 * Runs every scenario of a sweep (cli/scenario/sweep.h) on a thread pool (cli/study/batch.h), across MPI
 * processes when launched by mpirun (cli/mpi.h: each process runs every N-th job, rank 0
 * gathers and writes), and writes one results row per scenario to HDF5 (and TSV/CSV).
 *
 * Exit status: 0 when every scenario ran (an OOM verdict is a result); 1 when the sweep
 * cannot be loaded, a baseline fails or an output cannot be written (no file is written or
 * left behind), or when any scenario failed — the results are still written, each failed
 * row holds its error, and stderr says "N of M scenarios failed"; 2 usage error (also a
 * --set that is malformed or sets an axis of the sweep). Under mpirun, errors every process
 * shares (usage, sweep, outputs) are printed by rank 0 alone.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/study/batch.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/report/report.h"
#include "cli/scenario/input.h"
#include "cli/scenario/output.h"
#include "cli/scenario/scenario.h"
#include "cli/mpi.h"
#include "cli/scenario/sweep.h"
#include "sim/h5out.h"
#include "sim/tempfiles.h"
#include "sim/variant.h"
#include "sim/text.h"

typedef struct
{
  gint jobs;
  char *output, *tsv, *csv;
  char **sets;
  gboolean quiet;
} BatchOptions;

typedef struct
{
  gboolean tty;
  gboolean quiet;
  guint size, n_points; /* MPI processes, and the scenarios of the batch over all of them */
} Progress;

static void
show_progress (guint done, guint total, double elapsed, gpointer data)
{
  const Progress *p = data;
  if (p->quiet)
    return;
  g_autofree char *text = cli_batch_progress_text (done, total, elapsed, p->tty);
  if (p->size > 1) /* rank 0 counts its own share (QA: "5 of 5" for a sweep of 10) */
    {
      char *more = g_strdup_printf ("%s (rank 0's share of %u over %u MPI processes)", text,
                                    p->n_points, p->size);
      g_free (text);
      text = more;
    }
  if (p->tty)
    fprintf (stderr, "\r%s%s", text, done == total ? "\n" : "");
  else if (done == total || done % MAX (1u, total / 10) == 0)
    fprintf (stderr, "%s\n", text);
}

/* Writes the table as text (sep '\t' or ',') to `path` atomically. */
static gboolean
write_text (const SimTable *t, const char *path, char sep, GError **error)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  if (f == NULL)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "%s", g_strerror (errno));
      return FALSE;
    }
  gboolean ok = sim_table_write_text (t, f, sep, error);
  fclose (f);
  ok = ok && sim_tempfiles_set_contents (path, buf, len, error);
  free (buf);
  return ok;
}

/* Whether `path` (--tsv, --csv) is "-", standard output. */
static gboolean
is_stdout (const char *path)
{
  return path != NULL && strcmp (path, "-") == 0;
}

/* `path` as messages name it: "standard output" for "-". */
static const char *
path_shown (const char *path)
{
  return is_stdout (path) ? "standard output" : path;
}

/* The text table written to standard output (--tsv - or --csv -; the options allow one)
 * instead of the results table. Whether it got there is cli_stdout_flush's to say: a full
 * disk is an error, a reader that stopped early (`| head`, EPIPE) is not. */
static void
write_stdout (const SimTable *t, const BatchOptions *opt)
{
  gboolean tsv = is_stdout (opt->tsv);
  if (tsv || is_stdout (opt->csv))
    sim_table_write_text (t, stdout, tsv ? '\t' : ',', NULL);
}

/* `incomplete`: NULL, or why rows are missing (an interrupted batch), stored as the root
 * attribute "incomplete". The outputs are all or nothing (sim/tempfiles.h SimStaged): each
 * written under a staged name in `staged`, all renamed onto theirs by the caller's
 * sim_staged_commit once the last is complete. A --tsv or --csv of "-" is not written here
 * (write_stdout). */
static gboolean
write_outputs (const CliSweep *sweep, const SimTable *t, const BatchOptions *opt,
               const char *incomplete, SimStaged *staged, GError **error)
{
  const char *attrs[] = { "program", PACKAGE_NAME, "version", PACKAGE_VERSION,
                          "name", cli_sweep_name (sweep), "sweep", cli_sweep_text (sweep),
                          "scenario", cli_sweep_scenario (sweep),
                          incomplete != NULL ? "incomplete" : NULL, incomplete, NULL };
  if (!sim_h5out_write_table (sim_staged_add (staged, opt->output, ".h5"), "/results", t, attrs,
                              error))
    return FALSE;
  if (opt->tsv != NULL && !is_stdout (opt->tsv)
      && !write_text (t, sim_staged_add (staged, opt->tsv, ".tsv"), '\t', error))
    return g_prefix_error (error, "%s: ", opt->tsv), FALSE;
  if (opt->csv != NULL && !is_stdout (opt->csv)
      && !write_text (t, sim_staged_add (staged, opt->csv, ".csv"), ',', error))
    return g_prefix_error (error, "%s: ", opt->csv), FALSE;
  return TRUE;
}

static double
cell (const SimTable *t, guint row, const char *name)
{
  guint c = sim_table_find_column (t, name);
  return c == G_MAXUINT ? 0.0 / 0.0 : sim_table_get_double (t, row, c);
}

/* The label as the table shows it: printable, at most 120 characters (as its errors). */
#define LABEL_MAX_CHARS 120
enum { N_TABLE_COLS = 7 };

/* Prints `text` in `width` characters, left- or right-aligned (printf pads bytes, not
 * characters, and a label may hold any UTF-8). */
static void
print_padded (const char *text, gsize width, gboolean left)
{
  gsize n = (gsize) g_utf8_strlen (text, -1);
  if (left)
    fputs (text, stdout);
  for (; n < width; n++)
    putchar (' ');
  if (!left)
    fputs (text, stdout);
}

/* The cells of row `r`, as printed: label, fits, memory, step, tokens/s, MFU and, when the
 * sweep has a baseline, penalty (else NULL). Caller frees with g_strfreev. */
static char **
table_cells (const SimTable *t, guint r, guint label, gboolean penalty)
{
  const double GiB = 1024.0 * 1024 * 1024;
  char **c = g_new0 (char *, N_TABLE_COLS + 1);
  c[0] = sim_text_printable (sim_table_get_text (t, r, label), LABEL_MAX_CHARS);
  c[1] = g_strdup (cell (t, r, "fits") > 0 ? "FITS" : "OOM");
  c[2] = g_strdup_printf ("%.2f GiB", cell (t, r, "need_device") / GiB);
  c[3] = g_strdup_printf ("%.3f s", cell (t, r, "step_time"));
  c[4] = cli_report_format_rate (cell (t, r, "tokens_per_s"));
  c[5] = g_strdup_printf ("%.1f%%", 100 * cell (t, r, "mfu"));
  if (penalty)
    c[6] = cell (t, r, "fits") == 0            ? g_strdup ("OOM")
           : cell (t, r, "baseline_fits") == 0 ? g_strdup ("baseline OOM")
                                               : g_strdup_printf ("%.1f%%", cell (t, r, "penalty"));
  return c;
}

/* Prints one line of the table: the label and the fits verdict left-aligned, the figures
 * right-aligned, each column `widths` characters wide. */
static void
print_row (char *const *c, const gsize *widths)
{
  for (guint i = 0; i < N_TABLE_COLS && c[i] != NULL; i++)
    {
      if (i > 0)
        fputs ("  ", stdout);
      /* the last column is not padded after its text: no trailing blanks */
      print_padded (c[i], c[i + 1] == NULL && i < 2 ? 0 : widths[i], i < 2);
    }
  putchar ('\n');
}

/* One line per scenario on stdout, each column as wide as its longest entry (a long label
 * or figure does not push the rest out of line); failures on stderr. */
static void
print_table (const SimTable *t, gboolean quiet)
{
  guint label = sim_table_find_column (t, "label"), status = sim_table_find_column (t, "status");
  guint err = sim_table_find_column (t, "error");
  gboolean penalty = sim_table_find_column (t, "penalty") != G_MAXUINT;
  char *head[N_TABLE_COLS + 1] = { "scenario", "fits", "memory", "step", "tokens/s", "MFU",
                                   penalty ? "penalty" : NULL, NULL };
  gsize widths[N_TABLE_COLS] = { 0 };
  g_autoptr (GPtrArray) rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  /* failures: each error once, with the first scenario it came from and how many more (QA:
   * one bad --set printed the same line for each of the sweep's scenarios) */
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal); /* error → count */
  g_autoptr (GPtrArray) order = g_ptr_array_new (); /* row of each error's first scenario */
  for (guint r = 0; r < sim_table_n_rows (t); r++)
    {
      if (strcmp (sim_table_get_text (t, r, status), "ok") != 0)
        {
          const char *e = sim_table_get_text (t, r, err);
          guint n = GPOINTER_TO_UINT (g_hash_table_lookup (seen, e));
          if (n == 0)
            g_ptr_array_add (order, GUINT_TO_POINTER (r));
          g_hash_table_insert (seen, (gpointer) e, GUINT_TO_POINTER (n + 1));
        }
      else if (!quiet)
        g_ptr_array_add (rows, table_cells (t, r, label, penalty));
    }
  for (guint i = 0; i < order->len; i++)
    {
      guint r = GPOINTER_TO_UINT (order->pdata[i]);
      const char *e = sim_table_get_text (t, r, err);
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (seen, e));
      /* the error is printable and short already (batch.c); the label quotes values */
      g_autofree char *shown = sim_text_printable (sim_table_get_text (t, r, label),
                                                   LABEL_MAX_CHARS);
      if (n == 1)
        fprintf (stderr, "stepsim: %s: %s\n", shown, e);
      else
        fprintf (stderr, "stepsim: %s and %u more scenarios: %s\n", shown, n - 1, e);
    }
  if (quiet)
    return;
  for (guint i = 0; i < N_TABLE_COLS && head[i] != NULL; i++)
    {
      widths[i] = (gsize) g_utf8_strlen (head[i], -1);
      for (guint r = 0; r < rows->len; r++)
        widths[i] = MAX (widths[i], (gsize) g_utf8_strlen (((char **) rows->pdata[r])[i], -1));
    }
  print_row (head, widths);
  for (guint r = 0; r < rows->len; r++)
    print_row (rows->pdata[r], widths);
}

/* Prints a usage error (rank 0 only: every process parses the same command line). */
static int
usage_error (guint rank, const char *message)
{
  if (rank == 0)
    cli_error (message);
  return 2;
}

static int
parse_batch_options (int *argc, char ***argv, BatchOptions *opt, guint rank)
{
  GOptionEntry entries[] = {
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &opt->jobs,
      "scenarios run in parallel (default: number of cores)", "N" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opt->output,
      "HDF5 results file (default: SWEEP's name with .h5, in the current directory; a file, "
      "not -: --csv - or --tsv - for standard output)", "OUT.h5" },
    { "tsv", 0, 0, G_OPTION_ARG_FILENAME, &opt->tsv,
      "also write the results as TSV (-: to standard output, instead of the table)", "FILE" },
    { "csv", 0, 0, G_OPTION_ARG_FILENAME, &opt->csv,
      "also write the results as CSV (-: to standard output, instead of the table)", "FILE" },
    { "set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &opt->sets,
      "override a value in every scenario (repeatable; not an axis of the sweep)",
      "GROUP.KEY=VALUE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &opt->quiet, "no progress and no results table", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "SWEEP.ini — run every scenario of a sweep; one results row per scenario");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, argc, argv, &error)
      || !cli_option_check_file_output ("-o", opt->output, "HDF5 needs a file",
                                        "--csv - or --tsv - writes the results to standard "
                                        "output", &error))
    {
      g_autofree char *msg = cli_option_error_message ("batch", error);
      return usage_error (rank, msg);
    }
  if (*argc != 2)
    return usage_error (rank, "batch: expected exactly one sweep file (see stepsim batch --help)");
  if (opt->jobs != G_MININT && opt->jobs < 1)
    return usage_error (rank, "batch: -j must be at least 1");
  if (is_stdout (opt->tsv) && is_stdout (opt->csv))
    return usage_error (rank, "batch: --tsv - and --csv - cannot both write to standard output");
  if (!cli_sweep_check_sets ("--set", (const char *const *) opt->sets, &error))
    return usage_error (rank, error->message);
  cli_sweep_sets_from_cwd (opt->sets);
  if (opt->jobs == G_MININT)
    opt->jobs = (gint) MAX (1u, g_get_num_processors ());
  if (opt->output == NULL)
    {
      g_autofree char *base = cli_file_stem ((*argv)[1]);
      opt->output = g_strconcat (base, ".h5", NULL);
    }
  return 0;
}

/* Gathers every process's results into `batch` on rank 0. */
static gboolean
gather (CliBatch *batch, GError **error)
{
  g_autoptr (GVariant) mine = cli_batch_serialize (batch);
  g_autoptr (GBytes) bytes = g_variant_get_data_as_bytes (mine);
  g_autoptr (GPtrArray) all = cli_mpi_gather (bytes, error);
  if (all == NULL)
    return FALSE;
  for (guint r = 0; r < all->len; r++)
    {
      /* checked, then trusted: merging n rows is O(n), not O(n^2) (sim/variant.h) */
      g_autoptr (GVariant) v = sim_variant_new_checked (G_VARIANT_TYPE ("a(ubsad)"),
                                                        g_ptr_array_index (all, r));
      if (v == NULL)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                       "the results of MPI rank %u are not a well-formed a(ubsad)", r);
          return FALSE;
        }
      if (!cli_batch_merge (batch, v, error))
        return FALSE;
    }
  return TRUE;
}

/* Whether override `set` ("group.key=value") has the key [model] hf_config or [training]
 * deepspeed_config, whatever its value (replaced by a plain one: a value that does not
 * parse does not hide the key). */
static gboolean
key_names_json (const char *set)
{
  const char *eq = strchr (set, '=');
  if (eq == NULL)
    return FALSE; /* not an override: skipped, as cli_scenario_sets_name_json_files does */
  g_autofree char *key = g_strndup (set, (gsize) (eq - set));
  g_autofree char *plain = g_strconcat (key, "=x", NULL);
  const char *one[] = { plain, NULL };
  return cli_scenario_sets_name_json_files (one);
}

/* The files the batch reads: the sweep, its base scenario and every JSON file (hf_config,
 * deepspeed_config) one of its scenarios names (each point and its baseline, with the
 * command-line --set). */
static GPtrArray *
batch_inputs (const char *path, const CliSweep *sweep, const char *const *extra)
{
  GPtrArray *inputs = cli_inputs_new ();
  cli_inputs_add (inputs, path);
  const char *scenario = cli_sweep_scenario (sweep);
  const char *const *base = cli_sweep_baseline (sweep);
  g_auto (GStrv) base_json = NULL;
  gboolean have_base_json = FALSE;
  /* Every point's overrides have the same keys (the [set], one per axis, the --set; only the
   * axis values differ), and so has its baseline's: when none of them names a JSON file,
   * every scenario reads the base scenario's, and the points need not be built one by one
   * (1,000 of them were ~4 ms before any scenario ran). */
  gboolean per_point = FALSE;
  if (cli_sweep_n_points (sweep) > 0)
    {
      g_auto (GStrv) sets = cli_sweep_sets (sweep, 0, extra);
      for (guint i = 0; sets[i] != NULL && !per_point; i++)
        per_point = key_names_json (sets[i]);
      for (guint i = 0; base != NULL && base[i] != NULL && !per_point; i++)
        per_point = key_names_json (base[i]);
    }
  for (guint p = 0; p < cli_sweep_n_points (sweep); p++)
    {
      g_auto (GStrv) sets = per_point ? cli_sweep_sets (sweep, p, extra) : NULL;
      cli_inputs_add_point (inputs, scenario, (const char *const *) sets, &base_json,
                            &have_base_json);
      if (!per_point)
        break; /* the same files for every point and baseline */
      if (base == NULL || base[0] == NULL)
        continue;
      g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
      g_strv_builder_addv (b, (const char **) sets);
      g_strv_builder_addv (b, (const char **) base);
      g_auto (GStrv) with_base = g_strv_builder_end (b);
      cli_inputs_add_point (inputs, scenario, (const char *const *) with_base, &base_json,
                            &have_base_json);
    }
  return inputs;
}

/* A failure every MPI process meets alike (the sweep, its --set, the outputs, MPI not
 * built in): rank 0 keeps the error to print, the others drop theirs, so it is printed
 * once. Returns `rc`. */
static int
failed_alike (guint rank, int rc, GError **error)
{
  if (rank != 0)
    g_clear_error (error);
  return rc;
}

/* A signal arrived while the scenarios ran: the rows finished so far are written, the file
 * marked incomplete (root attribute "incomplete"; the other rows' status is "not run"), one
 * line on stderr says which, and the process ends by the signal. The batch is not freed:
 * abandoned jobs are still running (cli_batch_run). */
static void
interrupted (const CliSweep *sweep, const CliBatch *batch, const BatchOptions *opt)
{
  int signo = cli_interrupt_pending ();
  guint done = cli_batch_n_done (batch), n = cli_batch_n_points (batch);
  g_autofree char *why = g_strdup_printf ("interrupted by %s: %u of %u scenarios ran; the "
                                          "others are 'not run'", cli_interrupt_name (signo),
                                          done, n);
  g_autoptr (SimTable) t = cli_batch_table (batch);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimStaged) staged = sim_staged_new ();
  gboolean written = write_outputs (sweep, t, opt, why, staged, &error);
  if (!written)
    sim_staged_name_paths (staged, error); /* the user's paths, not the staged names */
  if (written)
    write_stdout (t, opt);
  if (written && cli_stdout_flush (&error) && sim_staged_commit (staged, &error))
    fprintf (stderr, "stepsim: %s; their rows are written to %s%s%s%s%s, marked incomplete\n",
             why, opt->output, opt->tsv ? ", " : "", opt->tsv ? path_shown (opt->tsv) : "",
             opt->csv ? ", " : "", opt->csv ? path_shown (opt->csv) : "");
  else
    fprintf (stderr, "stepsim: %s; nothing written: %s\n", why, error->message);
  cli_interrupt_exit (signo);
}

static int
run_batch (const char *path, const BatchOptions *opt, guint rank, guint size, GError **error)
{
  g_autoptr (CliSweep) sweep = cli_sweep_load (path, error);
  if (sweep == NULL)
    return failed_alike (rank, 1, error);
  /* A --set of an axis would silently replace it in every scenario: a usage error. */
  if (!cli_sweep_check_extra_sets (sweep, (const char *const *) opt->sets, error))
    return failed_alike (rank, 2, error);
  /* a --set naming no scenario key: one error, not one for each scenario */
  if (!cli_sweep_check_extra_names (sweep, (const char *const *) opt->sets, error))
    return failed_alike (rank, 1, error);
  /* --set baseline.group.key=value: the baseline's, applied after its [baseline] */
  if (!cli_sweep_add_extra_baseline (sweep, (const char *const *) opt->sets, error))
    return failed_alike (rank, 1, error);
  /* Outputs are checked before anything runs: never an input, never each other. */
  g_autoptr (GPtrArray) inputs = batch_inputs (path, sweep, (const char *const *) opt->sets);
  const char *whats[] = { "-o", "--tsv", "--csv" };
  const char *paths[] = { opt->output, is_stdout (opt->tsv) ? NULL : opt->tsv,
                          is_stdout (opt->csv) ? NULL : opt->csv };
  if (!cli_outputs_check (whats, paths, G_N_ELEMENTS (paths),
                          (const char *const *) inputs->pdata, error))
    return failed_alike (rank, 1, error);
  g_autoptr (CliBatch) batch = cli_batch_new (sweep, (const char *const *) opt->sets);
  Progress p = { isatty (STDERR_FILENO), opt->quiet || rank != 0, size,
                 cli_batch_n_points (batch) };
  /* One process: SIGINT/SIGTERM while the scenarios run writes the rows finished so far
   * (interrupted, below). Under mpirun the others' rows cannot be gathered then: nothing is
   * written (cli/interrupt.h's default). */
  if (size > 1)
    cli_batch_warnings_ahead (batch, rank == 0);
  cli_interrupt_defer (size == 1);
  gboolean complete = cli_batch_run (batch, (guint) opt->jobs, rank, size, show_progress, &p);
  cli_interrupt_defer (FALSE);
  if (!complete || cli_interrupt_pending () != 0)
    interrupted (sweep, batch, opt); /* does not return */
  if (size > 1 && !gather (batch, error))
    return 1;
  if (rank != 0)
    return 0;
  /* A failed baseline fails the batch before anything is written: its penalties would be
   * NaN in rows that say "ok". */
  if (!cli_batch_check_baselines (batch, error))
    return 1;
  g_autoptr (SimTable) t = cli_batch_table (batch);
  g_autoptr (SimStaged) staged = sim_staged_new ();
  if (!write_outputs (sweep, t, opt, NULL, staged, error))
    {
      if (error != NULL)
        sim_staged_name_paths (staged, *error); /* the user's paths, not the staged names */
      return 1;
    }
  /* --tsv - or --csv -: that text is what stdout holds (a reader such as `| cut` would
   * stumble on the table before it); failures are still said on stderr */
  gboolean text_out = is_stdout (opt->tsv) || is_stdout (opt->csv);
  print_table (t, opt->quiet || text_out);
  /* the table reached stdout before the files are committed: exit 1 leaves none */
  write_stdout (t, opt);
  if (!cli_stdout_flush (error) || !sim_staged_commit (staged, error))
    return 1;
  guint failed = cli_batch_n_failed (batch);
  if (failed == 0)
    return 0;
  fprintf (stderr, "stepsim: %u of %u scenarios failed\n", failed, cli_batch_n_points (batch));
  return 1;
}

int
cli_cmd_batch (int argc, char **argv)
{
  BatchOptions opt = { .jobs = G_MININT }; /* -j not given */
  g_autoptr (GError) error = NULL;
  guint launch = cli_mpi_launch_rank (), rank = launch, size = 1;
  cli_interrupt_quiet (launch != 0); /* rank 0 says it once */
  /* Options are parsed before MPI starts (--help exits), printing as rank 0 alone. */
  int rc = parse_batch_options (&argc, &argv, &opt, launch);
  if (rc == 0 && !cli_mpi_start (&rank, &size, &error))
    rc = failed_alike (launch, 1, &error);
  /* every scenario of the sweep reads the same files: each is read (and an hf_config parsed)
   * once (cli/scenario/input.h) */
  cli_input_memo_begin ();
  if (rc == 0)
    rc = run_batch (argv[1], &opt, rank, size, &error);
  cli_input_memo_end ();
  if (error != NULL)
    cli_error (error->message);
  cli_mpi_stop ();
  g_free (opt.output);
  g_free (opt.tsv);
  g_free (opt.csv);
  g_strfreev (opt.sets);
  return rc;
}
