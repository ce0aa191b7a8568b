/* cli/cmd_collective.c — `stepsim collective`: an nccl-tests-style sweep of one collective
 * over message sizes on a simulated cluster, reporting time, algorithm bandwidth and bus
 * bandwidth exactly as nccl-tests defines them (doc/PERFORMANCE.md of nccl-tests:
 * algbw = size / time, busbw = algbw × factor(op, n)). Each size runs alone on an idle
 * cluster, as nccl-tests measures. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/scenario/input.h"
#include "cli/scenario/scenario.h"
#include "hardware/cluster_spec.h"
#include "hardware/collective.h"
#include "hardware/node_catalog.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/units.h"

typedef struct
{
  char *op, *algorithm, *min, *max;
  gint nodes;
} CollOptions;

static gboolean
parse_kind (const char *text, HwCollectiveKind *out, GError **error)
{
  for (guint k = 0; k < HW_N_COLLECTIVES; k++)
    if (g_strcmp0 (text, hw_collective_kind_name (k)) == 0)
      {
        *out = k;
        return TRUE;
      }
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "--op '%s': expected all_reduce, all_gather, reduce_scatter, broadcast, "
               "all_to_all or send_recv", text);
  return FALSE;
}

/* The cluster: a catalog node name, or the [cluster] group of a scenario file. */
static gboolean
load_cluster (const char *what, gint nodes, HwNodeSpec *node, guint *n_nodes,
              HwFabricSpec *fabric, GError **error)
{
  *fabric = (HwFabricSpec){ .spine_oversubscription = 1 };
  if (g_str_has_suffix (what, ".ini"))
    {
      g_autoptr (GKeyFile) kf = g_key_file_new ();
      /* the scenario's syntax checks (a key given twice, a repeated group) and names */
      if (!cli_scenario_load_keyfile (kf, what, error)) /* its message names the file */
        return FALSE;
      /* the whole file's names, as every command checks them; the cluster's values */
      if (!cli_scenario_check_names (kf, error)
          || !hw_cluster_spec_from_keyfile (kf, node, n_nodes, fabric, error))
        return g_prefix_error (error, "%s: ", what), FALSE;
    }
  else if (g_file_test (what, G_FILE_TEST_EXISTS))
    {
      /* a path that is no scenario (QA: "unknown node '/tmp'") */
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: %s, not a catalog node or a SCENARIO.ini", what,
                   g_file_test (what, G_FILE_TEST_IS_DIR) ? "is a directory"
                                                          : "a scenario file ends in .ini");
      return FALSE;
    }
  else
    {
      const HwNodeSpec *spec = hw_catalog_node (what, error);
      if (spec == NULL)
        return FALSE;
      hw_node_spec_copy_into (node, spec);
      *n_nodes = 1;
    }
  if (nodes > 0)
    *n_nodes = (guint) nodes;
  /* the scenario's own rules (hardware/cluster_spec.h), on the --nodes given */
  const char *key = NULL;
  if (!hw_cluster_shape_check (node, *n_nodes, fabric, &key, error))
    return g_prefix_error (error, "%s: --nodes %u: ", what, *n_nodes), FALSE;
  return TRUE;
}

static void
on_done (gpointer user_data)
{
  (void) user_data;
}

static double
time_one (const HwNodeSpec *node, guint n_nodes, const HwFabricSpec *fabric,
          HwCollectiveKind kind, HwCollectiveAlgorithm algo, double bytes)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new_with_fabric (node, n_nodes, fabric, fluid);
  guint n = hw_cluster_n_ranks (cluster);
  g_autofree guint *ranks = g_new (guint, n);
  for (guint i = 0; i < n; i++)
    ranks[i] = i;
  hw_collective_start (cluster, kind, algo, ranks, kind == HW_COLLECTIVE_SEND_RECV ? 2 : n,
                       bytes, on_done, NULL);
  sim_engine_run (engine);
  return sim_engine_now (engine);
}

static int
sweep (const char *what, const CollOptions *o, GError **error)
{
  HwNodeSpec node = { 0 };
  guint n_nodes = 1;
  HwFabricSpec fabric;
  HwCollectiveKind kind = HW_COLLECTIVE_ALL_REDUCE;
  HwCollectiveAlgorithm algo = HW_ALGORITHM_AUTO;
  double lo = 8, hi = 8.0 * 1024 * 1024 * 1024;
  /* the options are command-line usage (exit 2), the node or scenario is input (exit 1) */
  if (o->op && !parse_kind (o->op, &kind, error))
    return g_prefix_error (error, "collective: "), 2; /* names --op itself */
  if (o->algorithm && !hw_collective_algorithm_from_string (o->algorithm, &algo, error))
    return g_prefix_error (error, "collective: --algorithm: "), 2;
  if (o->min && !sim_units_parse (o->min, SIM_DIM_BYTES, &lo, error))
    return g_prefix_error (error, "collective: --min: "), 2;
  if (o->max && !sim_units_parse (o->max, SIM_DIM_BYTES, &hi, error))
    return g_prefix_error (error, "collective: --max: "), 2;
  /* sizes are whole bytes from 1 B to 1 TiB (beyond any GPU's memory: a bound, not a
   * model limit), so a typo such as 1e30GiB is caught rather than printed */
  const double max_size = 1024.0 * 1024 * 1024 * 1024;
  const char *opt[2] = { "--min", "--max" }, *txt[2] = { o->min, o->max };
  double val[2] = { lo, hi };
  for (guint i = 0; i < 2; i++)
    if (txt[i] && !(val[i] >= 1 && val[i] <= max_size && floor (val[i]) == val[i]))
      {
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                     "collective: %s %s: a message size is a whole number of bytes from 1 B "
                     "to 1 TiB", opt[i], txt[i]);
        return 2;
      }
  if (!(lo <= hi))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "collective: --min %s is above --max %s", o->min, o->max);
      return 2;
    }
  if (!load_cluster (what, o->nodes, &node, &n_nodes, &fabric, error))
    {
      hw_node_spec_clear (&node);
      return 1;
    }
  const char *why;
  if (!hw_collective_algorithm_applies (&node, kind, algo, &why))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "collective: --algorithm %s with --op %s on %s: %s",
                   hw_collective_algorithm_name (algo), hw_collective_kind_name (kind),
                   node.name ? node.name : what, why);
      hw_node_spec_clear (&node);
      return 2;
    }
  guint n = node.n_gpus * n_nodes;
  if (n < 2)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: a collective needs at least 2 GPUs, the cluster has 1 (give a node of "
                   "several GPUs, or --nodes with a node that has NICs)", what);
      hw_node_spec_clear (&node);
      return 1;
    }
  printf ("# %s, %s, %u GPUs (%u node%s of %s), simulated on an idle cluster\n",
          hw_collective_kind_name (kind), hw_collective_algorithm_name (algo), n, n_nodes,
          n_nodes > 1 ? "s" : "", node.name ? node.name : node.gpu->name);
  printf ("# %14s %12s %12s %12s\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)");
  for (double b = MAX (lo, 1); b <= hi * (1 + 1e-12); b *= 2)
    {
      double t = time_one (&node, n_nodes, &fabric, kind, algo, b);
      printf ("  %14.0f %12.2f %12.2f %12.2f\n", b, t * 1e6, hw_collective_algbw (b, t) / 1e9,
              hw_collective_busbw (kind, kind == HW_COLLECTIVE_SEND_RECV ? 2 : n, b, t) / 1e9);
      fflush (stdout); /* a row as it is done: thousands of nodes take seconds a size */
    }
  hw_node_spec_clear (&node);
  return 0;
}

int
cli_cmd_collective (int argc, char **argv)
{
  CollOptions o = { .nodes = G_MININT }; /* not given */
  GOptionEntry entries[] = {
    { "op", 0, 0, G_OPTION_ARG_STRING, &o.op,
      "all_reduce (default), all_gather, reduce_scatter, broadcast, all_to_all, send_recv", "OP" },
    { "algorithm", 0, 0, G_OPTION_ARG_STRING, &o.algorithm, "auto (default: NCCL's choice by size), ring, tree (all_reduce), hierarchical, nvls (all_reduce on a Hopper/Blackwell NVSwitch node); all_to_all and send_recv take auto", "ALGO" },
    { "nodes", 0, 0, G_OPTION_ARG_INT, &o.nodes, "number of nodes, 1 to 16384 and at most 131072 GPUs (default: 1, or the scenario's; "
      "whole pods of a scenario's nodes_per_pod); each size takes about a second per thousand "
      "8-GPU nodes, about 50 ms per 72-GPU rack", "N" },
    { "min", 0, 0, G_OPTION_ARG_STRING, &o.min, "smallest message, whole bytes, 1 B to 1 TiB (default 8 B)", "SIZE" },
    { "max", 0, 0, G_OPTION_ARG_STRING, &o.max, "largest message, whole bytes, 1 B to 1 TiB (default 8 GiB)", "SIZE" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "NODE|SCENARIO.ini — nccl-tests-style bandwidth sweep of one collective");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  int rc;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("collective", error);
      rc = (cli_error (msg), 2);
    }
  else if (argc != 2)
    rc = (cli_error ("collective: expected one node name or scenario (see stepsim collective --help)"), 2);
  else if (o.nodes != G_MININT && (o.nodes < 1 || o.nodes > HW_MAX_NODES))
    {
      /* the bound a scenario's [cluster] nodes has (cluster_spec.h) */
      g_autofree char *msg = g_strdup_printf ("collective: --nodes must be between 1 and %d",
                                              HW_MAX_NODES);
      rc = (cli_error (msg), 2);
    }
  else if ((rc = sweep (argv[1], &o, &error)) != 0)
    cli_error (error->message);
  g_free (o.op);
  g_free (o.algorithm);
  g_free (o.min);
  g_free (o.max);
  return rc;
}
