/* cli/cmd_misc.c — `stepsim export` and `stepsim list`. */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/report/results_read.h"
#include "cli/scenario/output.h"
#include "cli/scenario/scenario.h"
#include "hardware/catalog.h"
#include "hardware/kernel.h"
#include "hardware/node_catalog.h"
#include "models/arch/arch.h"
#include "sim/h5out.h"
#include "sim/tempfiles.h"
#include "sim/text.h"
#include "sim/units.h"

int
cli_cmd_export (int argc, char **argv)
{
  g_autofree char *output = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "write to OUT.tsv instead of stdout ('-': stdout, as without -o)", "OUT.tsv" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "FILE.h5 OBJECT — write a dataset or group as TSV (e.g. /summary, /tasks, /ops, "
    "/series/rank0/memory)");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("export", error);
      return cli_error (msg), 2;
    }
  if (argc != 3)
    return cli_error ("export: expected FILE.h5 and OBJECT (see stepsim export --help)"), 2;
  /* a malformed path is said as such before the file is opened (QA: "" got HDF5's "name
   * parameter cannot be an empty string", /ops//x "no such object") */
  if (argv[2][0] == '\0')
    return cli_error ("export: OBJECT is an empty path: name a dataset or group such as "
                      "/summary (see stepsim export --help)"), 2;
  if (strstr (argv[2], "//") != NULL)
    {
      g_autofree char *msg = g_strdup_printf ("export: OBJECT '%s' is a malformed path: an "
                                              "empty component between two '/' (see stepsim "
                                              "export --help)", argv[2]);
      return cli_error (msg), 2;
    }
  FILE *out = stdout;
  g_autofree char *tmp = NULL;
  if (g_strcmp0 (output, "-") == 0) /* stdout, as batch --csv - (QA: a file named '-') */
    g_clear_pointer (&output, g_free);
  const char *inputs[] = { argv[1], NULL };
  if (output != NULL && !cli_output_check ("-o", output, inputs, &error))
    return cli_error (error->message), 1;
  if (output != NULL)
    {
      tmp = sim_tempfiles_new_path (output, NULL);
      if ((out = fopen (tmp, "w")) == NULL)
        {
          g_autofree char *msg = g_strdup_printf ("cannot write %s: %s", output, g_strerror (errno));
          return cli_error (msg), 1;
        }
    }
  gboolean ok = sim_h5out_export_tsv (argv[1], argv[2], out, &error);
  guint rank;
  if (!ok && g_error_matches (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND)
      && sscanf (argv[2], "/series/rank%u", &rank) == 1)
    {
      /* a rank a run with rank classes did not replay: say so (as `stepsim plot` does) */
      g_autoptr (CliSummary) summary = cli_read_summary (argv[1], NULL);
      g_autoptr (GError) absent = NULL;
      g_autoptr (SimH5Timeline) memory = summary != NULL ? cli_read_memory (argv[1], rank, &absent)
                                                         : NULL;
      gboolean no_rank = g_error_matches (absent, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND);
      g_autofree char *folded = no_rank ? cli_summary_folded_rank (summary, rank) : NULL;
      if (folded != NULL)
        {
          g_autofree char *shown = sim_text_printable (argv[2], 80);
          g_clear_error (&error);
          g_set_error (&error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "%s: %s", shown,
                       folded);
        }
    }
  if (output != NULL)
    {
      /* a failed close (the last of the data, on a full disk) or rename: with its errno */
      int err = fclose (out) != 0 ? errno : 0;
      if (ok && (err != 0 || (g_rename (tmp, output) != 0 && (err = errno) != 0)))
        {
          g_set_error (&error, G_FILE_ERROR, g_file_error_from_errno (err),
                       "cannot write %s: %s", output, g_strerror (err));
          ok = FALSE;
        }
      if (!ok)
        g_unlink (tmp);
      sim_tempfiles_forget (tmp);
    }
  if (!ok)
    {
      cli_error (error ? error->message : "export failed");
      return 1;
    }
  return 0;
}

/* The catalog table, then each GPU's kernel-model factors with their sources
 * (hw_kernel_describe_factors()). */
static void
list_gpus (void)
{
  printf ("%-16s %10s %12s %12s %12s %5s %14s  %s\n", "name", "memory", "HBM", "bf16", "fp32",
          "SMs", "bf16 sustained", "description");
  for (guint i = 0; i < hw_catalog_n_gpus (); i++)
    {
      const HwGpuSpec *g = hw_catalog_gpu_at (i);
      g_autofree char *mem = sim_units_format (g->memory_capacity, SIM_DIM_BYTES, 1);
      g_autofree char *bw = sim_units_format (g->hbm_bandwidth, SIM_DIM_BANDWIDTH, 0);
      g_autofree char *bf = sim_units_format (g->peak_flops[HW_DTYPE_BF16], SIM_DIM_FLOP_RATE, 0);
      g_autofree char *fp = sim_units_format (g->peak_flops[HW_DTYPE_FP32], SIM_DIM_FLOP_RATE, 1);
      g_autofree char *sus = sim_units_format (hw_kernel_sustained_rate (g, HW_DTYPE_BF16),
                                               SIM_DIM_FLOP_RATE, 0);
      printf ("%-16s %10s %12s %12s %12s %5.0f %14s  %s\n", g->name, mem, bw,
              g->peak_flops[HW_DTYPE_BF16] > 0 ? bf : "-", fp, g->sm_count,
              g->peak_flops[HW_DTYPE_BF16] > 0 ? sus : "-", g->description ? g->description : "");
    }
  printf ("\nkernel-model factors (hardware/kernel.c): name, value, source\n");
  for (guint i = 0; i < hw_catalog_n_gpus (); i++)
    {
      const HwGpuSpec *g = hw_catalog_gpu_at (i);
      g_autoptr (GString) f = g_string_new (NULL);
      hw_kernel_describe_factors (g, f);
      printf ("%s (%s)\n", g->name, hw_gpu_generation_name (g->generation));
      g_auto (GStrv) lines = g_strsplit (f->str, "\n", -1);
      for (char **l = lines; *l != NULL && **l != '\0'; l++)
        printf ("  %s\n", *l);
    }
}


static void
list_nodes (void)
{
  /* Adam/core: the host CPU's optimizer-offload rate, Mparam/s per core (cpu_adam_rate) */
  printf ("%-14s %5s %-16s %10s %11s %5s %6s %9s %10s %6s  %s\n", "name", "GPUs", "GPU",
          "NVLink", "NIC", "NICs", "cores", "Adam/core", "host", "NVMe", "description");
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    {
      const HwNodeSpec *n = hw_catalog_node_at (i);
      g_autofree char *nv = sim_units_format (n->nvlink_bandwidth, SIM_DIM_BANDWIDTH, 0);
      g_autofree char *nic = sim_units_format (n->nic_bandwidth, SIM_DIM_BANDWIDTH, 1);
      g_autofree char *host = sim_units_format (n->host_memory, SIM_DIM_BYTES, 0);
      g_autofree char *adam = g_strdup_printf ("%.0f M/s", n->cpu_adam_rate / 1e6);
      printf ("%-14s %5u %-16s %10s %11s %5u %6u %9s %10s %6u  %s\n", n->name, n->n_gpus,
              n->gpu->name, n->intra == HW_INTRA_NVSWITCH ? nv : "PCIe", nic, n->n_nics,
              n->cpu_cores, adam, host, n->nvme_drives, n->description ? n->description : "");
    }
  printf ("aliases:");
  for (guint i = 0; i < hw_catalog_n_node_aliases (); i++)
    {
      const char *name = NULL, *alias = hw_catalog_node_alias (i, &name);
      printf ("%s %s = %s", i > 0 ? "," : "", alias, name);
    }
  printf (" (the same baseboards; the DGX host figures come with them)\n");
}

static int
list_models (void)
{
  const char *dir = cli_scenario_models_dir ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) names = cli_scenario_shipped_models ();
  if (names[0] == NULL)
    return cli_error ("list: no shipped model configs found"), 1;
  printf ("%-18s %-11s %18s %7s %7s %7s  (use as [model] hf_config = NAME)\n", "name", "family",
          "parameters", "layers", "hidden", "vocab");
  for (guint i = 0; names[i] != NULL; i++)
    {
      const char *name = names[i];
      g_autofree char *file = g_strconcat (name, ".json", NULL);
      g_autofree char *path = g_build_filename (dir, file, NULL);
      g_autoptr (ModelArch) a = model_arch_load_hf_config (path, &error);
      if (a == NULL)
        return cli_error (error->message), 1;
      g_autofree char *params = sim_text_group_digits (model_arch_n_params (a));
      printf ("%-18s %-11s %18s %7" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT
              "\n", name, model_arch_family_name (a->family), params, a->n_layers,
              a->hidden_size, a->vocab_size);
    }
  return 0;
}

int
cli_cmd_list (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new ("gpus|nodes|models — show the GPU or node catalog, or the shipped model configs");
  static const GOptionEntry entries[] = { { NULL } };
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("list", error);
      return cli_error (msg), 2;
    }
  if (argc == 2 && strcmp (argv[1], "gpus") == 0)
    return list_gpus (), 0;
  if (argc == 2 && strcmp (argv[1], "models") == 0)
    return list_models ();
  if (argc == 2 && strcmp (argv[1], "nodes") == 0)
    return list_nodes (), 0;
  cli_error ("list: expected 'gpus', 'models' or 'nodes'");
  return 2;
}
