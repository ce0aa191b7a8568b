/* hardware/cluster_spec_node.c — [node.NAME] scenario groups → HwNodeSpec (a catalog `base`
 * node or a bare `gpu`, then the figure keys) and node spec validation. The [cluster] group is
 * in hardware/cluster_spec.c; the figure keys and the helpers both groups share in
 * hardware/cluster_spec_keys.c. See cluster_spec.h for the keys and errors.
 *
 * Strictness (DESIGN §7): unknown keys fail with the nearest valid key as a hint; the first
 * bad key in file order is the one reported. Units: B, B/s, s (SI doubles).
 */
#include "config.h"
#include "hardware/cluster_spec.h"

#include <math.h>

#include "hardware/cluster_spec-private.h"
#include "hardware/node_catalog.h"

static const char *const node_keys[] = {
  "base",
  "description",
  "gpu",
  "gpus_per_node",
  "intra_node",
  "nvlink_bandwidth",
  "gpus_per_pcie_switch",
  "pcie_switch_uplink",
  "nics_per_node",
  "nic_bandwidth",
  "rail_optimized",
  "host_memory",
  "intra_latency",
  "inter_latency",
  "collective_overhead",
  "collective_tuner",
  "link_efficiency",
  "cpu_cores",
  "cpu_adam_rate",
  "nvme_drives",
  "nvme_read_bandwidth",
  "nvme_write_bandwidth",
  "nvme_capacity",
  "overhead_power",
  NULL,
};

const char *const *
hw_node_spec_keys (void)
{
  return node_keys;
}

/* ---- [node.NAME] ------------------------------------------------------------------------ */

/* Starts a [node.NAME] spec from its `base` catalog node. */
static gboolean
node_from_base (GKeyFile *kf, const char *group, HwNodeSpec *spec, GError **error)
{
  g_autofree char *name = hw_spec_get_value (kf, group, "base", error);
  if (name == NULL)
    return FALSE;
  g_autofree char *own = g_strdup_printf ("node.%s", name);
  if (g_key_file_has_group (kf, own) && hw_catalog_node (name, NULL) == NULL)
    {
      /* a [node.NAME] of this file is not a base: bases come from the catalog only */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key 'base': '%s' is a group of this file ([%s]); base must name "
                   "a catalog node (stepsim list nodes), not a group: copy the keys of [%s] here",
                   group, name, own, own);
      return FALSE;
    }
  const HwNodeSpec *base = hw_catalog_node (name, error);
  if (base == NULL)
    return g_prefix_error (error, "group [%s], key 'base': ", group), FALSE;
  hw_node_spec_copy_into (spec, base);
  g_free (spec->description);
  spec->description
      = g_strdup_printf ("%s, modified in scenario group [%s]", base->description, group);
  g_free (spec->source);
  spec->source = g_strdup_printf ("scenario group [%s] overrides base %s; base: %s", group,
                                  base->name, base->source);
  return TRUE;
}

/* The starting spec of a [node.NAME] group: its base, or a node around its `gpu`; a `gpu` key
 * with a base replaces the base's GPU (and its NVLink bandwidth, unless given). */
static gboolean
node_start (GKeyFile *kf, const char *group, HwNodeSpec *spec, gboolean *from_gpu, GError **error)
{
  gboolean has_base = g_key_file_has_key (kf, group, "base", NULL);
  gboolean has_gpu = g_key_file_has_key (kf, group, "gpu", NULL);
  *from_gpu = !has_base;
  if (!has_base && !has_gpu)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [%s]: key 'gpu' is required when no 'base' node is given", group);
      return FALSE;
    }
  if (has_base && !node_from_base (kf, group, spec, error))
    return FALSE;
  if (!has_gpu)
    return TRUE;
  g_autoptr (HwGpuSpec) gpu = hw_spec_gpu_from_key (kf, group, "gpu", error);
  if (gpu == NULL)
    return FALSE;
  if (!has_base)
    {
      hw_catalog_node_from_gpu (spec, gpu, 1);
      g_free (spec->source);
      spec->source = g_strdup_printf ("scenario group [%s] around GPU %s; other figures: "
                                      "defaults of hardware/node_catalog.h",
                                      group, gpu->name);
      return TRUE;
    }
  spec->nvlink_bandwidth = gpu->nvlink_bandwidth;
  hw_gpu_spec_free (spec->gpu);
  spec->gpu = g_steal_pointer (&gpu);
  return TRUE;
}

gboolean
hw_node_spec_from_keyfile (GKeyFile *kf, const char *group, HwNodeSpec *out, GError **error)
{
  g_return_val_if_fail (kf != NULL && group != NULL && out != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  g_auto (GStrv) keys = g_key_file_get_keys (kf, group, NULL, error);
  if (keys == NULL || !hw_spec_check_known_keys (keys, group, node_keys, error))
    return FALSE;
  HwNodeSpec spec = { 0 };
  gboolean from_gpu = FALSE;
  if (!node_start (kf, group, &spec, &from_gpu, error)
      || !hw_spec_apply_figures (&spec, kf, group, keys, error))
    goto fail;
  if (from_gpu)
    hw_spec_default_intra_latency (&spec, kf, group);
  g_free (spec.name);
  spec.name = g_strdup (g_str_has_prefix (group, "node.") ? group + 5 : group);
  if (!hw_node_spec_validate (&spec, error))
    {
      g_prefix_error (error, "group [%s]: ", group);
      goto fail;
    }
  *out = spec;
  return TRUE;
fail:
  hw_node_spec_clear (&spec);
  return FALSE;
}

/* ---- validation ------------------------------------------------------------------------- */

static gboolean
bad (const HwNodeSpec *spec, const char *field, double value, const char *why, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "node '%s': %s is %g, must be %s", spec->name ? spec->name : "(unnamed)", field,
               value, why);
  return FALSE;
}

static gboolean
non_negative (const HwNodeSpec *spec, const char *field, double v, GError **error)
{
  return (isfinite (v) && v >= 0) || bad (spec, field, v, "finite and >= 0", error);
}

gboolean
hw_node_spec_validate (const HwNodeSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, FALSE);
  if (spec->gpu == NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "node '%s' has no GPU",
                   spec->name ? spec->name : "(unnamed)");
      return FALSE;
    }
  if (!hw_gpu_spec_validate (spec->gpu, error))
    return FALSE;
  if (spec->n_gpus < 1)
    return bad (spec, "gpus_per_node", spec->n_gpus, ">= 1", error);
  if (!(isfinite (spec->host_memory) && spec->host_memory > 0))
    return bad (spec, "host_memory", spec->host_memory, "finite and > 0", error);
  if (!non_negative (spec, "nvlink_bandwidth", spec->nvlink_bandwidth, error)
      || !non_negative (spec, "pcie_switch_uplink", spec->pcie_switch_uplink, error)
      || !non_negative (spec, "nic_bandwidth", spec->nic_bandwidth, error)
      || !non_negative (spec, "intra_latency", spec->intra_latency, error)
      || !non_negative (spec, "inter_latency", spec->inter_latency, error)
      || !non_negative (spec, "collective_overhead", spec->collective_overhead, error))
    return FALSE;
  if (spec->intra == HW_INTRA_NVSWITCH && spec->n_gpus > 1 && spec->nvlink_bandwidth <= 0)
    return bad (spec, "nvlink_bandwidth", spec->nvlink_bandwidth,
                "> 0 with intra_node = nvswitch (or use intra_node = pcie)", error);
  if (spec->n_nics > 0 && spec->nic_bandwidth <= 0)
    return bad (spec, "nic_bandwidth", spec->nic_bandwidth, "> 0 with nics_per_node > 0", error);
  if (!(spec->link_efficiency >= 0 && spec->link_efficiency <= 1))
    return bad (spec, "link_efficiency", spec->link_efficiency, "in (0, 1]", error);
  if (!non_negative (spec, "cpu_adam_rate", spec->cpu_adam_rate, error)
      || !non_negative (spec, "nvme_read_bandwidth", spec->nvme_read_bandwidth, error)
      || !non_negative (spec, "nvme_write_bandwidth", spec->nvme_write_bandwidth, error)
      || !non_negative (spec, "nvme_capacity", spec->nvme_capacity, error))
    return FALSE;
  if (spec->nvme_drives > 0
      && (spec->nvme_read_bandwidth <= 0 || spec->nvme_write_bandwidth <= 0
          || spec->nvme_capacity <= 0))
    return bad (spec, "nvme_read_bandwidth", spec->nvme_read_bandwidth,
                "> 0, as nvme_write_bandwidth and nvme_capacity, with nvme_drives > 0", error);
  return TRUE;
}
