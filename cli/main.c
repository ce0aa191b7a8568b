/* cli/main.c — `stepsim`: dispatch to subcommands, --help and --version. */
#include "config.h"

#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"

static const char usage[] =
  "Usage: stepsim COMMAND [OPTIONS…]\n"
  "\n"
  "Simulates one optimizer step of LLM training on one GPU or a cluster (DDP, ZeRO, FSDP,\n"
  "offload, LoRA, QLoRA): peak memory per GPU and what it is made of, step time, tokens/s,\n"
  "MFU, HFU and exposed communication, with memory and link timelines in HDF5 and charts.\n"
  "\n"
  "Commands:\n"
  "  run SCENARIO.ini [-o OUT.h5] [--set group.key=value]… [--plot DIR] [--trace F.json]\n"
  "                         simulate a scenario, print the summary, write HDF5 (and a chart)\n"
  "  export FILE.h5 OBJECT [-o OUT.tsv]\n"
  "                         write a dataset or group of FILE.h5 as TSV (e.g. /summary,\n"
  "                         /tasks, /series/rank0/memory)\n"
  "  compare SCENARIO.ini VARIANT…\n"
  "                         memory saved and step time added per variation, side by side\n"
  "                         (VARIANT: group.key=value[,group.key=value…])\n"
  "  validate [SCENARIO.ini…]\n"
  "                         predicted against published measurements, with tolerances\n"
  "  collective NODE|SCENARIO.ini [--op OP] [--nodes N] [--min SIZE] [--max SIZE]\n"
  "                         nccl-tests-style sweep: time, algbw and busbw per message size\n"
  "  list gpus|nodes|models show the built-in GPU and node catalogs or the shipped model\n"
  "                         configs\n"
  "  batch SWEEP.ini [-j N] [-o OUT.h5] [--tsv F] [--csv F] [--set group.key=value]…\n"
  "                         run every scenario of a sweep in parallel (also under mpirun)\n"
  "  fit SCENARIO.ini --for micro_batch|seq_len|gpus|stack\n"
  "                         search what fits the GPU's memory\n"
  "  plot memory|gantt|breakdown|steptime|sweep|penalty FILE.h5 -o OUT.png|svg\n"
  "                         draw a chart of a run or a batch\n"
  "\n"
  "Options:\n"
  "  -h, --help             show this help (COMMAND --help for a command's options)\n"
  "  -V, --version          show the version\n"
  "\n"
  "Exit status: 0 ok, 1 input or runtime error, 2 usage error.\n";

int main (int argc, char **argv);

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, ""); /* UTF-8 help text; numbers are parsed with g_ascii_strtod */
  g_set_prgname ("stepsim");
  if (argc < 2)
    {
      fputs (usage, stderr);
      return 2;
    }
  const char *cmd = argv[1];
  if (strcmp (cmd, "-h") == 0 || strcmp (cmd, "--help") == 0 || strcmp (cmd, "help") == 0)
    {
      fputs (usage, stdout);
      return 0;
    }
  if (strcmp (cmd, "-V") == 0 || strcmp (cmd, "--version") == 0)
    {
      printf ("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
      return 0;
    }
  if (strcmp (cmd, "run") == 0)
    return cli_cmd_run (argc - 1, argv + 1);
  if (strcmp (cmd, "export") == 0)
    return cli_cmd_export (argc - 1, argv + 1);
  if (strcmp (cmd, "list") == 0)
    return cli_cmd_list (argc - 1, argv + 1);
  if (strcmp (cmd, "collective") == 0)
    return cli_cmd_collective (argc - 1, argv + 1);
  if (strcmp (cmd, "compare") == 0)
    return cli_cmd_compare (argc - 1, argv + 1);
  if (strcmp (cmd, "validate") == 0)
    return cli_cmd_validate (argc - 1, argv + 1);
  if (strcmp (cmd, "batch") == 0)
    return cli_cmd_batch (argc - 1, argv + 1);
  if (strcmp (cmd, "fit") == 0)
    return cli_cmd_fit (argc - 1, argv + 1);
  if (strcmp (cmd, "plot") == 0)
    return cli_cmd_plot (argc - 1, argv + 1);
  if (cmd[0] == '-')
    fprintf (stderr, "stepsim: unknown option '%s'\n\n%s", cmd, usage);
  else
    fprintf (stderr, "stepsim: unknown command '%s'\n\n%s", cmd, usage);
  return 2;
}
