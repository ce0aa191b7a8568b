/* cli/cmd_run.c — `stepsim run`: simulate, print the summary, write HDF5, draw the chart.
 *
 * Output discipline: the whole simulation runs in memory first; only when it succeeded are
 * the HDF5 file, the chart and the trace written, each under a staged name
 * ("<path>.tmp.<pid><ext>", registered in sim/tempfiles.h) and renamed onto its path only
 * once all of them are complete (all or nothing). A failing scenario, a failing output or
 * SIGINT/SIGTERM (cli/interrupt.h) leaves no new file behind (nor the --plot directory it
 * created), and an earlier file of the same name stays as it was until a complete new one
 * replaces it.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/scenario/output.h"
#include "cli/report/plot.h"
#include "cli/report/op_report.h"
#include "cli/report/report.h"
#include "cli/report/results_read.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep.h"
#include "cli/report/trace.h"
#include "sim/h5out.h"
#include "sim/tempfiles.h"
#include "sim/text.h"

void
cli_error (const char *message)
{
  /* Messages quote input (values, GLib's copy of a bad line): printable, one line, short. */
  g_autofree char *shown = sim_text_printable (message, CLI_SCENARIO_MESSAGE_MAX);
  fprintf (stderr, "stepsim: %s\n", shown);
}

/* DIR/<scenario stem>-memory.png, the chart --plot writes. Caller frees. */
static char *
chart_path (const char *scenario_path, const char *dir)
{
  g_autofree char *base = cli_file_stem (scenario_path);
  g_autofree char *file = g_strconcat (base, "-memory.png", NULL);
  return g_build_filename (dir, file, NULL);
}

typedef struct
{
  char *output;
  char **sets;
  char *plot_dir;
  char *trace;
  gboolean quiet;
  gboolean ops;
} RunOptions;

static char *
default_output (const char *scenario_path)
{
  g_autofree char *base = cli_file_stem (scenario_path);
  return g_strconcat (base, ".h5", NULL);
}

/* Writes the HDF5 file, the chart (--plot) and the trace (--trace) under staged names added
 * to `staged`, in that order. FALSE + error on the first that fails. `*made_dir`: the --plot
 * directory when this call created it (registered in sim/tempfiles.h; the caller removes it
 * when the outputs are not committed), else NULL. */
static gboolean
write_outputs (const CliScenario *sc, const SimRecorder *rec, const ModelSimResult *res,
               const RunOptions *opt, SimStaged *staged, char **made_dir, GError **error)
{
  *made_dir = NULL;
  g_autofree char *text = cli_scenario_text (sc);
  SimH5Meta meta = {
    .program = PACKAGE_NAME,
    .version = PACKAGE_VERSION,
    .scenario_text = text,
    .kind_names = model_sim_kind_names (),
    .n_kind_names = MODEL_N_TASK_KINDS,
    .stream_names = model_sim_stream_names (),
    .n_stream_names = MODEL_N_STREAMS,
  };
  const char *h5 = sim_staged_add (staged, opt->output, ".h5");
  if (!sim_h5out_write (h5, rec, &meta, error))
    return FALSE;
  if (opt->plot_dir != NULL)
    {
      if (!g_file_test (opt->plot_dir, G_FILE_TEST_IS_DIR))
        {
          *made_dir = g_strdup (opt->plot_dir);
          sim_tempfiles_add (*made_dir); /* an interruption removes it too */
        }
      if (g_mkdir_with_parents (opt->plot_dir, 0755) != 0)
        {
          int err = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
                       "--plot %s: cannot create directory: %s", opt->plot_dir,
                       g_strerror (err));
          return FALSE;
        }
      g_autofree char *png = chart_path (sc->path, opt->plot_dir);
      g_autofree char *title = g_strdup_printf ("%s — memory of rank %u over one step",
                                                sc->name, res->worst_rank);
      if (!cli_output_check ("--plot", png, NULL, error))
        return FALSE;
      const char *staged_png = sim_staged_add (staged, png, ".png");
      g_autoptr (CliSummary) summary = cli_read_summary (h5, error);
      if (summary == NULL
          || !cli_plot_memory (h5, summary, res->worst_rank, res->capacity, title, staged_png,
                               error))
        return FALSE;
    }
  if (opt->trace != NULL
      && !cli_trace_write (sim_staged_add (staged, opt->trace, ".json"), rec, sc->name, error))
    return FALSE;
  return TRUE;
}

static int
parse_run_options (int *argc, char ***argv, RunOptions *opt)
{
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opt->output,
      "HDF5 file to write (default: SCENARIO's name with .h5, in the current directory; a "
      "file, not -)", "OUT.h5" },
    { "set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &opt->sets,
      "override a scenario value, e.g. --set training.micro_batch=4 (repeatable; the group ends "
      "at the first dot, at the last for gpu.NAME and node.NAME: --set "
      "'cost.gpu_hour.H100-SXM=2 USD/h', --set 'gpu.MyGPU.memory=80 GiB'; quote a value "
      "with spaces; an empty value, --set cluster.gpu=, removes the key)", "GROUP.KEY=VALUE" },
    { "plot", 'p', 0, G_OPTION_ARG_FILENAME, &opt->plot_dir,
      "also draw the memory timeline as DIR/<scenario>-memory.png (DIR is created if missing; "
      "its parent must exist)", "DIR" },
    { "trace", 't', 0, G_OPTION_ARG_FILENAME, &opt->trace,
      "also write the step as Perfetto / Chrome trace-event JSON (ui.perfetto.dev)", "OUT.json" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &opt->quiet, "print the one-line verdict, not the summary (and the ops table when --ops is given)", NULL },
    { "ops", 0, 0, G_OPTION_ARG_NONE, &opt->ops, "also list the kernel time of each op (forward, backward, recompute, optimizer) of the rank with the most kernel time (after the summary, or after the verdict with -q)", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SCENARIO.ini — simulate one training step");
  g_option_context_set_description (
    ctx, "The framework the run uses: [training] framework = custom | hf_trainer |\n"
         "accelerate_fsdp | torchtune | torchtitan | megatron | deepspeed | nanotron sets its\n"
         "defaults (loss, loss_chunks, norm_fp32, compile, kv_repeat, kv_repeat_sdpa,\n"
         "softmax_fp32, logits_kept, main_grad_fp32, optimizer_impl, optimizer_in_backward,\n"
         "activation_offload, host_op_time, host_backward_op_time, host_sync_micro_batch,\n"
         "rope_table, fsdp_end_units, fsdp_version, DeepSpeed bucket sizes in elements),\n"
         "each overridable by its own [training] key; [training] deepspeed_config =\n"
         "ds.json reads a DeepSpeed config (README.md, \"Framework profiles\"): its values\n"
         "must agree with the scenario's keys, train_batch_size with micro_batch x\n"
         "grad_accum x data-parallel ranks (GPUs / (tp x cp x pp)), no key given twice; a\n"
         "stage-3 prefetch bucket or max_live of 0 prefetches nothing; refused under\n"
         "torchtune, torchtitan, nanotron and accelerate_fsdp (no DeepSpeed engine there);\n"
         "under DeepSpeed's engine an fsdp_* [parallel] data_parallel is refused.\n"
         "[training] attention defaults to sdpa (PyTorch's scaled_dot_product_attention:\n"
         "flash where FlashAttention-2 runs, the memory-efficient kernel otherwise); flash\n"
         "is the flash-attn 2 package: sm80+, fp16/bf16 inputs, head_dim <= 256, else an error.\n"
         "attention = triton | flash1: fp16/bf16 inputs and head_dim <= 128 only (flash1:\n"
         "no Volta, Blackwell or MI300X, head_dim a multiple of 8, > 64 not on Ada);\n"
         "neither applies a sliding window (warned).\n"
         "[training] padding = longest: batches padded to their own longest sample; the\n"
         "allocator replays shorter ones before the step.\n"
         "A run that does not fit its GPU's memory is simulated again at other sizes to find\n"
         "the least memory per GPU that holds it, within 0.4 % (several more simulations):\n"
         "the verdict's \"needs X\" and the summary's \"fits from\" (README.md, \"What the\n"
         "summary means\").");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, argc, argv, &error)
      || !cli_option_check_file_output ("-o", opt->output, "HDF5 needs a file",
                                        "the summary goes to standard output", &error)
      || !cli_option_check_file_output ("--trace", opt->trace, "the trace is written to a file",
                                        "the summary goes to standard output", &error))
    {
      g_autofree char *msg = cli_option_error_message ("run", error);
      cli_error (msg);
      return 2;
    }
  if (*argc != 2)
    {
      cli_error ("run: expected exactly one scenario file (see stepsim run --help)");
      return 2;
    }
  if (!cli_sweep_check_sets ("--set", (const char *const *) opt->sets, &error))
    {
      cli_error (error->message);
      return 2;
    }
  cli_sweep_sets_from_cwd (opt->sets);
  return 0;
}

int
cli_cmd_run (int argc, char **argv)
{
  RunOptions opt = { 0 };
  int rc = parse_run_options (&argc, &argv, &opt);
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = NULL;
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  ModelSimResult res = { 0 };
  g_autofree char *chart = NULL;
  g_autoptr (GPtrArray) inputs = cli_inputs_new ();
  g_auto (GStrv) origins = NULL;
  g_autoptr (SimStaged) staged = NULL; /* the outputs being written; the ones not renamed
                                        * onto their paths are removed when it is freed */
  g_autofree char *made_dir = NULL; /* the --plot directory this run created */
  if (rc != 0)
    goto out;
  if (opt.output == NULL)
    opt.output = default_output (argv[1]);
  rc = 1;
  /* The input first: a scenario that is missing or malformed is what to fix, whatever the
   * outputs (QA: a missing file in a directory the user cannot write reported the default
   * output's directory); the outputs are checked before anything runs. */
  origins = cli_scenario_origins ((const char *const *) opt.sets, "--set");
  sc = cli_scenario_load_origins (argv[1], (const char *const *) opt.sets,
                                  (const char *const *) origins, &error);
  if (sc != NULL)
    {
      /* Outputs never replace what the run reads: the scenario and its hf_config JSON. */
      cli_inputs_add_scenario (inputs, argv[1], (const char *const *) opt.sets);
      /* The chart's directory may not exist yet (it is created on success); then nothing
       * can be in the chart's way. */
      if (opt.plot_dir != NULL && g_file_test (opt.plot_dir, G_FILE_TEST_IS_DIR))
        chart = chart_path (argv[1], opt.plot_dir);
      else if (opt.plot_dir != NULL) /* its name can be judged already */
        {
          g_autofree char *later = chart_path (argv[1], opt.plot_dir);
          if (!cli_output_check_name ("--plot", later, &error))
            goto out;
        }
      const char *whats[] = { "-o", "--trace", "--plot" };
      const char *paths[] = { opt.output, opt.trace, chart };
      /* the chart's directory is no file of the others (QA: -o r.h5 --plot r.h5 ran, then
       * could not rename its file onto the directory it had made) */
      g_autofree char *plot_canon
        = opt.plot_dir != NULL ? g_canonicalize_filename (opt.plot_dir, NULL) : NULL;
      for (guint i = 0; plot_canon != NULL && i < 2; i++)
        {
          g_autofree char *other
            = paths[i] != NULL ? g_canonicalize_filename (paths[i], NULL) : NULL;
          if (g_strcmp0 (other, plot_canon) == 0)
            {
              g_set_error (&error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                           "--plot %s: the same name as %s; choose different outputs",
                           opt.plot_dir, whats[i]);
              goto out;
            }
        }
      if ((opt.plot_dir != NULL && !cli_output_check_dir ("--plot", opt.plot_dir, &error))
          || !cli_outputs_check (whats, paths, G_N_ELEMENTS (paths),
                                 (const char *const *) inputs->pdata, &error))
        goto out;
      cli_scenario_print_warnings (sc);
      cli_scenario_warn_baseline_sets ((const char *const *) opt.sets, NULL);
    }
  if (sc == NULL || !cli_scenario_simulate (sc, rec, &res, &error))
    {
      if (sc != NULL)
        {
          g_autofree char *source = cli_scenario_error_source (
            argv[1], (const char *const *) opt.sets, (const char *const *) origins,
            error->message);
          g_prefix_error (&error, "%s: ", source);
        }
      goto out;
    }
  cli_report_fill_summary (rec, sc, &res);
  if (!opt.quiet)
    cli_report_print (stdout, sc, &res, opt.ops);
  else
    cli_report_print_verdict (stdout, sc, &res);
  if (opt.ops)
    cli_report_print_ops (stdout, &res);
  staged = sim_staged_new ();
  /* the summary reached stdout before the files are committed: exit 1 leaves none */
  gboolean written = write_outputs (sc, rec, &res, &opt, staged, &made_dir, &error);
  if (!written)
    sim_staged_name_paths (staged, error); /* the user's paths, not the staged names */
  if (written && cli_stdout_flush (&error) && sim_staged_commit (staged, &error))
    {
      rc = 0;
      if (!opt.quiet) /* staged in order: the HDF5 file, then the chart (--plot) */
        {
          /* a name with a line break or an escape sequence: shown as messages show it */
          g_autofree char *shown = sim_text_printable (opt.output, 0);
          printf ("output     %s\n", shown);
          if (opt.plot_dir != NULL)
            {
              g_autofree char *png = sim_text_printable (sim_staged_path (staged, 1), 0);
              printf ("chart      %s\n", png);
            }
        }
    }
out:
  /* a failure leaves no new file: the staged ones removed, then the --plot directory this
   * run created (QA: `run --plot DIR > /dev/full` left an empty DIR) */
  g_clear_pointer (&staged, sim_staged_free);
  if (rc != 0 && made_dir != NULL)
    g_rmdir (made_dir);
  sim_tempfiles_forget_all (); /* the outputs are complete, or were removed */
  if (error != NULL)
    cli_error (error->message);
  model_sim_result_clear (&res);
  g_free (opt.output);
  g_strfreev (opt.sets);
  g_free (opt.plot_dir);
  g_free (opt.trace);
  return rc;
}
