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
#include "sim/units.h"

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
  if (!hw_node_spec_validate_group (&spec, kf, group, error))
    goto fail;
  *out = spec;
  return TRUE;
fail:
  hw_node_spec_clear (&spec);
  return FALSE;
}

/* ---- validation ------------------------------------------------------------------------- */

/* The checks of hw_node_spec_validate; a figure that fails sets "FIELD is V, must be WHY"
 * and c->field (the caller prefixes the node or the group and key); a failure of the GPU
 * leaves c->field NULL (its message names the GPU). */
typedef struct
{
  const char *field;
  GError **error;
} Check;

static gboolean
bad (Check *c, const char *field, double value, const char *why)
{
  c->field = field;
  g_set_error (c->error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s is %g, must be %s", field, value, why);
  return FALSE;
}

/* A figure within the range the reader takes (hw_spec_figure_range): "FIELD is V UNIT,
 * must be RANGE" otherwise. */
static gboolean
figure (Check *c, const char *field, double v)
{
  const char *unit = "";
  const char *words = hw_spec_figure_range (field, v, &unit);
  if (words == NULL)
    return TRUE;
  c->field = field;
  g_set_error (c->error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s is %g%s%s, must be %s", field, v, unit[0] != '\0' ? " " : "", unit, words);
  return FALSE;
}

/* NVSwitch joins the GPUs over NVLink: a node of several needs an NVLink rate. The reason
 * depends on where the 0 came from: the GPU has none, or the node sets none for a GPU that
 * has it. */
static gboolean
nvswitch_needs_nvlink (const HwNodeSpec *spec, Check *c)
{
  g_autofree char *why = NULL;
  if (spec->gpu->nvlink_bandwidth > 0)
    {
      g_autofree char *own = sim_units_format (spec->gpu->nvlink_bandwidth, SIM_DIM_BANDWIDTH, 0);
      why = g_strdup_printf (
          "> 0 with intra_node = nvswitch and %u GPUs (0 means no NVLink, and NVSwitch joins "
          "the GPUs over NVLink: give a rate, GPU %s has %s, or use intra_node = pcie)",
          spec->n_gpus, spec->gpu->name, own);
    }
  else
    why = g_strdup_printf (
        "> 0 with intra_node = nvswitch and %u GPUs (GPU %s has no NVLink figure: give "
        "nvlink_bandwidth, or use intra_node = pcie)", spec->n_gpus, spec->gpu->name);
  return bad (c, "nvlink_bandwidth", spec->nvlink_bandwidth, why);
}

static gboolean
node_check (const HwNodeSpec *spec, Check *c)
{
  GError **error = c->error;
  if (spec->gpu == NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "node '%s' has no GPU",
                   spec->name ? spec->name : "(unnamed)");
      return FALSE;
    }
  if (!hw_gpu_spec_validate (spec->gpu, error))
    return FALSE;
  if (spec->n_gpus < 1)
    return bad (c, "gpus_per_node", spec->n_gpus, ">= 1");
  if (!figure (c, "host_memory", spec->host_memory)
      || !figure (c, "nvlink_bandwidth", spec->nvlink_bandwidth)
      || !figure (c, "pcie_switch_uplink", spec->pcie_switch_uplink)
      || !figure (c, "nic_bandwidth", spec->nic_bandwidth)
      || !figure (c, "intra_latency", spec->intra_latency)
      || !figure (c, "inter_latency", spec->inter_latency)
      || !figure (c, "collective_overhead", spec->collective_overhead))
    return FALSE;
  if (spec->intra == HW_INTRA_NVSWITCH && spec->n_gpus > 1 && spec->nvlink_bandwidth <= 0)
    return nvswitch_needs_nvlink (spec, c);
  if (spec->n_nics > 0 && spec->nic_bandwidth <= 0)
    return bad (c, "nic_bandwidth", spec->nic_bandwidth,
                "from 100 MB/s to 1000 TB/s with nics_per_node > 0 (or set nics_per_node = 0)");
  /* 0: not given (topology.c reads it as 1) */
  if (spec->link_efficiency != 0 && !figure (c, "link_efficiency", spec->link_efficiency))
    return FALSE;
  if (!(spec->cpu_adam_rate >= 0 && spec->cpu_adam_rate <= HW_NODE_MAX_CPU_ADAM_RATE))
    return bad (c, "cpu_adam_rate", spec->cpu_adam_rate, "from 0 to 1000 Gparam/s");
  if (!figure (c, "nvme_read_bandwidth", spec->nvme_read_bandwidth)
      || !figure (c, "nvme_write_bandwidth", spec->nvme_write_bandwidth)
      || !figure (c, "nvme_capacity", spec->nvme_capacity)
      || !figure (c, "overhead_power", spec->overhead_power))
    return FALSE;
  if (spec->nvme_drives > 0
      && (spec->nvme_read_bandwidth <= 0 || spec->nvme_write_bandwidth <= 0
          || spec->nvme_capacity <= 0))
    return bad (c, "nvme_read_bandwidth", spec->nvme_read_bandwidth,
                "> 0, as nvme_write_bandwidth and nvme_capacity, with nvme_drives > 0");
  return TRUE;
}

gboolean
hw_node_spec_validate (const HwNodeSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, FALSE);
  Check c = { NULL, error };
  if (node_check (spec, &c))
    return TRUE;
  if (c.field != NULL)
    g_prefix_error (error, "node '%s': ", spec->name ? spec->name : "(unnamed)");
  return FALSE;
}

/* The key of `group` a failed figure is blamed on: the figure itself when the group sets
 * it, else the first key the group sets that the figure's check depends on (nvswitch needs
 * an NVLink bandwidth: intra_node, gpus_per_node or the GPU), else the figure. */
static const char *
blamed_key (GKeyFile *kf, const char *group, const char *field)
{
  static const struct
  {
    const char *field;
    const char *related[6];
  } deps[] = {
    { "nvlink_bandwidth", { "intra_node", "gpus_per_node", "gpu", "base", "node", NULL } },
    { "nic_bandwidth", { "nics_per_node", "base", "node", NULL } },
    { "nvme_read_bandwidth",
      { "nvme_drives", "nvme_write_bandwidth", "nvme_capacity", "base", "node", NULL } },
  };
  if (g_key_file_has_key (kf, group, field, NULL))
    return field;
  for (guint i = 0; i < G_N_ELEMENTS (deps); i++)
    if (strcmp (deps[i].field, field) == 0)
      for (guint j = 0; deps[i].related[j] != NULL; j++)
        if (g_key_file_has_key (kf, group, deps[i].related[j], NULL))
          return deps[i].related[j];
  return field;
}

gboolean
hw_node_spec_validate_group (const HwNodeSpec *spec, GKeyFile *kf, const char *group,
                             GError **error)
{
  g_return_val_if_fail (spec != NULL && kf != NULL && group != NULL, FALSE);
  Check c = { NULL, error };
  if (node_check (spec, &c))
    return TRUE;
  if (c.field != NULL)
    g_prefix_error (error, "group [%s], key '%s': ", group, blamed_key (kf, group, c.field));
  else
    g_prefix_error (error, "group [%s]: ", group);
  return FALSE;
}
