/* hardware/cluster_spec.c — the [cluster] scenario group → HwNodeSpec, node count and
 * fabric. What [cluster] and [node.NAME] share (cluster_spec-private.h: the figure keys,
 * unknown-key checks and GPUs by name) is in hardware/cluster_spec_keys.c; [node.NAME]
 * groups and node spec validation are in hardware/cluster_spec_node.c. See cluster_spec.h
 * for the keys and errors.
 *
 * Strictness (DESIGN §7): unknown keys fail with the nearest valid key as a hint; every value
 * is parsed with sim/units.h (dimensioned values need their unit, counts are plain digits,
 * bools are true/false/yes/no/1/0); the first bad key in file order is the one reported.
 * Defaults for a node built around a bare GPU come from hardware/node_catalog.h.
 * Units: B, B/s, s (SI doubles).
 */
#include "config.h"
#include "hardware/cluster_spec.h"

#include <math.h>

#include "hardware/catalog.h"
#include "hardware/cluster_spec-private.h"
#include "hardware/node_catalog.h"
#include "sim/units.h"

#define MAX_NODES HW_MAX_NODES
#define MAX_GPUS HW_MAX_GPUS

static const char *const cluster_keys[] = {
  "node",
  "gpu",
  "gpus_per_node",
  "intra_node",
  "nics_per_node",
  "nic_bandwidth",
  "rail_optimized",
  "nodes",
  "host_memory",
  "spine_oversubscription",
  "nodes_per_pod",
  "pod_oversubscription",
  "cpu_cores",
  "cpu_adam_rate",
  "nvme_drives",
  "nvme_read_bandwidth",
  "nvme_write_bandwidth",
  "nvme_capacity",
  NULL,
};

const char *const *
hw_cluster_spec_keys (void)
{
  return cluster_keys;
}

/* ---- [cluster] -------------------------------------------------------------------------- */

/* The node of [cluster]: `node` (a [node.NAME] group, else the catalog) or `gpu`. */
static gboolean
cluster_start (GKeyFile *kf, HwNodeSpec *spec, GError **error)
{
  gboolean has_node = g_key_file_has_key (kf, "cluster", "node", NULL);
  gboolean has_gpu = g_key_file_has_key (kf, "cluster", "gpu", NULL);
  if (has_node == has_gpu)
    {
      g_set_error (error, G_KEY_FILE_ERROR,
                   has_node ? G_KEY_FILE_ERROR_INVALID_VALUE : G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   has_node ? "group [cluster], key 'gpu': give 'node' or 'gpu', not both (to "
                              "change the GPU of a node, define a [node.NAME] group with "
                              "'base' and 'gpu')"
                            : "group [cluster]: key 'node' or 'gpu' is required");
      return FALSE;
    }
  if (has_gpu)
    {
      g_autoptr (HwGpuSpec) gpu = hw_spec_gpu_from_key (kf, "cluster", "gpu", error);
      if (gpu != NULL)
        hw_catalog_node_from_gpu (spec, gpu, 1);
      /* no type name: the user wrote a GPU, not the catalog's stand-in "custom" node that
       * messages and the summary would otherwise name */
      if (gpu != NULL)
        g_clear_pointer (&spec->name, g_free);
      return gpu != NULL;
    }
  g_autofree char *name = hw_spec_get_value (kf, "cluster", "node", error);
  if (name == NULL)
    return FALSE;
  g_autofree char *group = g_strconcat ("node.", name, NULL);
  if (g_key_file_has_group (kf, group))
    return hw_node_spec_from_keyfile (kf, group, spec, error);
  const HwNodeSpec *node = hw_catalog_node (name, error);
  if (node == NULL)
    return g_prefix_error (error, "group [cluster], key 'node': "), FALSE;
  hw_node_spec_copy_into (spec, node);
  return TRUE;
}

/* Largest oversubscription ratio accepted: fabrics are built 1:1 to a few to one (DGX
 * SuperPOD: non-blocking; cost-reduced clusters 2:1 to 8:1); 1000 leaves room for what-ifs
 * and keeps a step time a number (1e12 gave steps of 10^9 s). */
#define MAX_OVERSUBSCRIPTION 1000.0

/* The number in [1, MAX_OVERSUBSCRIPTION] of [cluster] key `key` into *out, left alone when
 * the key is absent. */
static gboolean
cluster_ratio (GKeyFile *kf, const char *key, double *out, GError **error)
{
  if (!g_key_file_has_key (kf, "cluster", key, NULL))
    return TRUE;
  g_autofree char *text = hw_spec_get_value (kf, "cluster", key, error);
  double v = 0;
  if (text == NULL)
    return FALSE;
  if (!sim_units_parse_number (text, &v, error)
      || (!(v >= 1 && v <= MAX_OVERSUBSCRIPTION)
          && !hw_spec_out_of_range (text, "must be between 1 and 1000", error)))
    return g_prefix_error (error, "group [cluster], key '%s': ", key), FALSE;
  *out = v;
  return TRUE;
}

/* `nodes_per_pod` of [cluster] (default 0: every node, one pod), which must divide `n_nodes`
 * (pods are whole groups of consecutive nodes) or be at least `n_nodes` (a cluster inside one
 * pod: a job on part of a pod). */
static gboolean
cluster_pods (GKeyFile *kf, HwFabricSpec *fabric, GError **error)
{
  fabric->nodes_per_pod = 0;
  if (!g_key_file_has_key (kf, "cluster", "nodes_per_pod", NULL))
    return TRUE;
  g_autofree char *text = hw_spec_get_value (kf, "cluster", "nodes_per_pod", error);
  if (text == NULL)
    return FALSE;
  if (!hw_spec_parse_count (text, 1, MAX_NODES, &fabric->nodes_per_pod, error))
    return g_prefix_error (error, "group [cluster], key 'nodes_per_pod': "), FALSE;
  return TRUE; /* whole pods: hw_cluster_shape_check */
}

/* `nodes`, `spine_oversubscription`, `nodes_per_pod` and `pod_oversubscription` of
 * [cluster], with their defaults 1, 1, every node and 1. */
static gboolean
cluster_scale (GKeyFile *kf, guint *n_nodes, HwFabricSpec *fabric, GError **error)
{
  *n_nodes = 1;
  fabric->spine_oversubscription = 1.0;
  fabric->pod_oversubscription = 1.0;
  if (g_key_file_has_key (kf, "cluster", "nodes", NULL))
    {
      g_autofree char *text = hw_spec_get_value (kf, "cluster", "nodes", error);
      if (text == NULL)
        return FALSE;
      if (!hw_spec_parse_count (text, 1, MAX_NODES, n_nodes, error))
        return g_prefix_error (error, "group [cluster], key 'nodes': "), FALSE;
    }
  return cluster_ratio (kf, "spine_oversubscription", &fabric->spine_oversubscription, error)
         && cluster_pods (kf, fabric, error)
         && cluster_ratio (kf, "pod_oversubscription", &fabric->pod_oversubscription, error);
}

gboolean
hw_cluster_shape_check (const HwNodeSpec *node, guint n_nodes, const HwFabricSpec *fabric,
                        const char **key, GError **error)
{
  g_return_val_if_fail (node != NULL && fabric != NULL && key != NULL, FALSE);
  *key = "nodes_per_pod";
  if (fabric->nodes_per_pod > 0 && n_nodes > fabric->nodes_per_pod
      && n_nodes % fabric->nodes_per_pod != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "nodes = %u is not a multiple of nodes_per_pod = %u (pods are whole groups "
                   "of consecutive nodes; a cluster of at most one pod's nodes sits inside "
                   "one pod)", n_nodes, fabric->nodes_per_pod);
      return FALSE;
    }
  *key = "nodes";
  if ((guint64) n_nodes * node->n_gpus > MAX_GPUS)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%u nodes of %u GPUs is %" G_GUINT64_FORMAT " GPUs; at most %d can be "
                   "simulated (the topology holds every GPU and link, even where rank classes "
                   "replay one rank for many)",
                   n_nodes, node->n_gpus, (guint64) n_nodes * node->n_gpus, MAX_GPUS);
      return FALSE;
    }
  if (n_nodes > 1 && (node->n_nics == 0 || node->nic_bandwidth <= 0))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "nodes = %u needs nics_per_node and nic_bandwidth (NICs to connect the "
                   "nodes)", n_nodes);
      return FALSE;
    }
  return TRUE;
}

gboolean
hw_cluster_spec_from_keyfile (GKeyFile *kf, HwNodeSpec *node_out, guint *n_nodes_out,
                              HwFabricSpec *fabric_out, GError **error)
{
  g_return_val_if_fail (kf != NULL && node_out != NULL && n_nodes_out != NULL, FALSE);
  g_return_val_if_fail (fabric_out != NULL && (error == NULL || *error == NULL), FALSE);
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "cluster", NULL, error);
  if (keys == NULL || !hw_spec_check_known_keys (keys, "cluster", cluster_keys, error))
    return FALSE;
  HwNodeSpec spec = { 0 };
  guint n_nodes = 1;
  HwFabricSpec fabric = { 1.0, 0, 1.0 };
  gboolean bare_gpu = g_key_file_has_key (kf, "cluster", "gpu", NULL);
  if (!cluster_start (kf, &spec, error))
    goto fail;
  guint node_gpus = spec.n_gpus; /* a node's own count, which gpus_per_node may only lower */
  if (!hw_spec_apply_figures (&spec, kf, "cluster", keys, error)
      || !cluster_scale (kf, &n_nodes, &fabric, error))
    goto fail;
  if (!bare_gpu && spec.n_gpus > node_gpus)
    {
      /* QA: 16 GPUs "in 2 x DGX-H100 of 16" were simulated; a node is the machine it names */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [cluster], key 'gpus_per_node': %u is more than the %u GPUs a %s "
                   "has (a node's count can only be lowered; define a [node.NAME] group with "
                   "'base' for another machine)", spec.n_gpus, node_gpus,
                   spec.name != NULL ? spec.name : "node");
      goto fail;
    }
  if (bare_gpu)
    hw_spec_default_intra_latency (&spec, kf, "cluster");
  const char *key = NULL;
  if (!hw_cluster_shape_check (&spec, n_nodes, &fabric, &key, error))
    {
      g_prefix_error (error, "group [cluster], key '%s': ", key);
      goto fail;
    }
  if (!hw_node_spec_validate_group (&spec, kf, "cluster", error))
    goto fail;
  *node_out = spec;
  *n_nodes_out = n_nodes;
  *fabric_out = fabric;
  return TRUE;
fail:
  hw_node_spec_clear (&spec);
  return FALSE;
}
