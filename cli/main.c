/* cli/main.c — `stepsim`: dispatch to subcommands, --help and --version. */
#include "config.h"

#include <glib.h>
#include <locale.h>
#ifdef __GLIBC__
#include <signal.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/malloc_tuning.h"
#include "cli/mpi.h"
#include "cli/scenario/output.h"
#include "sim/text.h"

static const char usage[] =
  "Usage: stepsim COMMAND [OPTIONS…]\n"
  "\n"
  "Simulates one optimizer step of LLM training on one GPU or a cluster (DDP, ZeRO, FSDP,\n"
  "tensor, sequence, context, pipeline and expert parallelism, offload, LoRA, QLoRA): peak\n"
  "memory per GPU and what it is made of, step time, tokens/s, MFU, HFU and exposed\n"
  "communication, with memory and link timelines in HDF5 and charts.\n"
  "\n"
  "Commands:\n"
  "  run SCENARIO.ini [-o OUT.h5] [--set group.key=value]… [--plot DIR] [--trace F.json]\n"
  "      [--ops] [-q]\n"
  "                         simulate a scenario, print the summary (--ops: and the kernel\n"
  "                         time of each op), write HDF5 (and a chart)\n"
  "  export FILE.h5 OBJECT [-o OUT.tsv]\n"
  "                         write a dataset or group of FILE.h5 as TSV (e.g. /summary,\n"
  "                         /tasks, /ops, /series/rank0/memory)\n"
  "  compare SCENARIO.ini VARIANT… [--set group.key=value]…\n"
  "                         each variation's change of memory and step time (variation -\n"
  "                         as given), side by side\n"
  "                         (VARIANT: group.key=value[,group.key=value…])\n"
  "  validate [SCENARIO.ini|DIR…] [--measured FILE.tsv] [--factors] [--tsv FILE]\n"
  "                         predicted against published measurements, with tolerances\n"
  "  collective NODE|SCENARIO.ini [--op OP] [--algorithm ALGO] [--nodes N] [--min SIZE]\n"
  "             [--max SIZE]\n"
  "                         nccl-tests-style sweep: time, algbw and busbw per message size\n"
  "  list gpus|nodes|models show the built-in GPU or node catalog, or the shipped model\n"
  "                         configs\n"
  "  batch SWEEP.ini [-j N] [-o OUT.h5] [--tsv F] [--csv F] [--set group.key=value]…\n"
  "                         run every scenario of a sweep in parallel (also under mpirun)\n"
  "  fit SCENARIO.ini --for micro_batch|seq_len|gpus|stack|cost\n"
  "                         search what fits the GPU's memory (cost: the cheapest GPU\n"
  "                         choice that trains by --deadline)\n"
  "  plot memory|gantt|breakdown|steptime|sweep|penalty|cost FILE.h5 -o OUT.png|svg\n"
  "                         draw a chart of a run or a batch\n"
  "\n"
  "Options:\n"
  "  -h, --help             show this help (COMMAND --help or help COMMAND for a command's\n"
  "                         options)\n"
  "  -V, --version          show the version, the sanitizers and the build flags\n"
  "\n"
  "Exit status: 0 ok, 1 input or runtime error, 2 usage error.\n";

/* `filter`: what the command prints is its product (no file of its own to finish), so a
 * reader that stops early ends it quietly by SIGPIPE, as any filter; the others ignore
 * SIGPIPE (cli/interrupt.h) so that their files are written whatever stdout does. */
static const struct
{
  const char *name;
  int (*run) (int argc, char **argv);
  gboolean filter;
} commands[] = {
  { "run", cli_cmd_run, FALSE },         { "export", cli_cmd_export, TRUE },
  { "list", cli_cmd_list, TRUE },        { "collective", cli_cmd_collective, TRUE },
  { "compare", cli_cmd_compare, FALSE }, { "validate", cli_cmd_validate, FALSE },
  { "batch", cli_cmd_batch, FALSE },     { "fit", cli_cmd_fit, FALSE },
  { "plot", cli_cmd_plot, FALSE },
};

int main (int argc, char **argv);

/* One line on stderr, not the whole usage: "stepsim: WHAT 'WORD' (commands: …; stepsim
 * --help)", with the nearest command when `hint`. */
static void
unknown_command (const char *what, const char *word, gboolean hint)
{
  const char *names[G_N_ELEMENTS (commands) + 1];
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    names[i] = commands[i].name;
  names[G_N_ELEMENTS (commands)] = NULL;
  g_autofree char *list = g_strjoinv (", ", (char **) names);
  g_autofree char *printable = sim_text_printable (word, 40);
  char *msg = g_strdup_printf ("stepsim: %s '%s' (commands: %s; stepsim --help)", what,
                               printable, list);
  if (hint)
    msg = sim_text_with_hint (msg, word, names);
  fprintf (stderr, "%s\n", msg);
  g_free (msg);
}

/* What the command printed must reach stdout (cli_stdout_flush): a write that failed (a
 * full disk, `> /dev/full`) is an error even when the command succeeded, said once on stderr,
 * exit status 1 (coreutils' close_stdout does the same). Checked when the command returns
 * (stdout_status: a command that failed has said why already) and, for what exits by
 * itself (GOption's --help), at exit. */
static gboolean stdout_checked;

static void
check_stdout (void)
{
  g_autoptr (GError) error = NULL;
  if (stdout_checked || cli_stdout_flush (&error))
    return;
  const char *prg = g_get_prgname ();
  fprintf (stderr, "%s: %s\n", prg != NULL ? prg : "stepsim", error->message);
  _exit (1);
}

/* The exit status of a command that returned `rc`, stdout checked when it succeeded. */
static int
stdout_status (int rc)
{
  if (rc == 0)
    check_stdout ();
  stdout_checked = TRUE;
  return rc;
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, ""); /* UTF-8 help text; numbers are parsed with g_ascii_strtod */
  cli_stdout_install (); /* a failed write to stdout is said with its reason */
  cli_malloc_tune ();
  atexit (check_stdout);
  cli_interrupt_install (); /* SIGINT/SIGTERM/SIGHUP leave no temporary file behind */
  const char *cmd = argc >= 2 ? argv[1] : "";
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (cmd, commands[i].name) == 0)
      {
        /* "stepsim run": the program name of the command's --help usage line
         * ("stepsim run [OPTION…] SCENARIO.ini") and of its messages. Set once. */
        g_autofree char *prgname = g_strconcat ("stepsim ", cmd, NULL);
        g_set_prgname (prgname);
        if (commands[i].filter)
          signal (SIGPIPE, SIG_DFL);
        return stdout_status (commands[i].run (argc - 1, argv + 1));
      }
  g_set_prgname ("stepsim");
  if (argc < 2)
    {
      fputs (usage, stderr);
      return 2;
    }
  /* "stepsim help CMD" is "stepsim CMD --help" */
  for (guint i = 0; strcmp (cmd, "help") == 0 && argc == 3 && i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[2], commands[i].name) == 0)
      {
        g_autofree char *prgname = g_strconcat ("stepsim ", argv[2], NULL);
        g_set_prgname (prgname);
        char *help_argv[] = { argv[2], (char *) "--help", NULL };
        return stdout_status (commands[i].run (2, help_argv));
      }
  gboolean top = strcmp (cmd, "-h") == 0 || strcmp (cmd, "--help") == 0 || strcmp (cmd, "help") == 0
                 || strcmp (cmd, "-V") == 0 || strcmp (cmd, "--version") == 0;
  if (top && argc > 2)
    {
      if (strcmp (cmd, "help") == 0 && argc == 3)
        unknown_command ("help: unknown command", argv[2], TRUE);
      else
        fprintf (stderr, "stepsim: %s takes no argument (got '%s')\n", cmd, argv[2]);
      return 2;
    }
  if (strcmp (cmd, "-h") == 0 || strcmp (cmd, "--help") == 0 || strcmp (cmd, "help") == 0)
    {
      fputs (usage, stdout);
      return 0;
    }
  if (strcmp (cmd, "-V") == 0 || strcmp (cmd, "--version") == 0)
    {
      printf ("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
      printf ("sanitizers: %s\nbuilt with: %s\n", STEPSIM_SANITIZERS, STEPSIM_BUILD_FLAGS);
      const char *mpi = cli_mpi_module_path ();
      printf ("MPI batches: %s\n", mpi != NULL ? mpi : "no (built without Open MPI)");
      return 0;
    }
  unknown_command (cmd[0] == '-' ? "unknown option" : "unknown command", cmd, cmd[0] != '-');
  return 2;
}
