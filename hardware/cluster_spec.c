/* hardware/cluster_spec.c — the [cluster] scenario group → HwNodeSpec, node count and
 * fabric, plus what [cluster] and [node.NAME] share (cluster_spec-private.h): the figure keys,
 * unknown-key checks and GPUs by name. [node.NAME] groups and node spec validation are in
 * hardware/cluster_spec_node.c. See cluster_spec.h for the keys and errors.
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
#include <stddef.h>

#include "hardware/catalog.h"
#include "hardware/cluster_spec-private.h"
#include "hardware/node_catalog.h"
#include "sim/text.h"
#include "sim/units.h"

#define MAX_GPUS_PER_NODE HW_MAX_GPUS_PER_NODE
#define MAX_NODES HW_MAX_NODES
#define MAX_GPUS HW_MAX_GPUS
#define MAX_NICS 64
#define MAX_CPU_CORES 4096
#define MAX_NVME_DRIVES 256

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

/* ---- one figure key --------------------------------------------------------------------- */

typedef enum
{
  FIG_COUNT,    /* guint, sim_units_parse_count, within [min, max] */
  FIG_QUANTITY, /* double with unit, >= 0 (> 0 if `positive`) */
  FIG_FRACTION, /* double in (0, 1] */
  FIG_BOOL,     /* gboolean */
  FIG_INTRA,    /* HwIntraConnect: nvswitch | pcie */
  FIG_TEXT,     /* char *, replaced */
  FIG_PARAM_RATE, /* double, parameters/s: "81 Mparam/s" */
} FigureKind;

typedef struct
{
  const char *key;
  FigureKind kind;
  SimDimension dim;  /* FIG_QUANTITY */
  gsize offset;      /* of the member in HwNodeSpec */
  gboolean positive; /* FIG_QUANTITY: > 0 */
  guint64 min, max;  /* FIG_COUNT */
} Figure;

#define OFF(m) offsetof (HwNodeSpec, m)

static const Figure figures[] = {
  { "gpus_per_node", FIG_COUNT, 0, OFF (n_gpus), FALSE, 1, MAX_GPUS_PER_NODE },
  { "intra_node", FIG_INTRA, 0, OFF (intra), FALSE, 0, 0 },
  { "nvlink_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvlink_bandwidth), FALSE, 0, 0 },
  { "gpus_per_pcie_switch", FIG_COUNT, 0, OFF (gpus_per_pcie_switch), FALSE, 0, MAX_GPUS_PER_NODE },
  { "pcie_switch_uplink", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (pcie_switch_uplink), FALSE, 0, 0 },
  { "nics_per_node", FIG_COUNT, 0, OFF (n_nics), FALSE, 0, MAX_NICS },
  { "nic_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nic_bandwidth), TRUE, 0, 0 },
  { "rail_optimized", FIG_BOOL, 0, OFF (rail_optimized), FALSE, 0, 0 },
  { "host_memory", FIG_QUANTITY, SIM_DIM_BYTES, OFF (host_memory), TRUE, 0, 0 },
  { "intra_latency", FIG_QUANTITY, SIM_DIM_TIME, OFF (intra_latency), FALSE, 0, 0 },
  { "inter_latency", FIG_QUANTITY, SIM_DIM_TIME, OFF (inter_latency), FALSE, 0, 0 },
  { "collective_overhead", FIG_QUANTITY, SIM_DIM_TIME, OFF (collective_overhead), FALSE, 0, 0 },
  { "link_efficiency", FIG_FRACTION, 0, OFF (link_efficiency), FALSE, 0, 0 },
  { "description", FIG_TEXT, 0, OFF (description), FALSE, 0, 0 },
  { "cpu_cores", FIG_COUNT, 0, OFF (cpu_cores), FALSE, 0, MAX_CPU_CORES },
  { "cpu_adam_rate", FIG_PARAM_RATE, 0, OFF (cpu_adam_rate), FALSE, 0, 0 },
  { "nvme_drives", FIG_COUNT, 0, OFF (nvme_drives), FALSE, 0, MAX_NVME_DRIVES },
  { "nvme_read_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvme_read_bandwidth), TRUE, 0, 0 },
  { "nvme_write_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvme_write_bandwidth), TRUE, 0, 0 },
  { "nvme_capacity", FIG_QUANTITY, SIM_DIM_BYTES, OFF (nvme_capacity), TRUE, 0, 0 },
  { "overhead_power", FIG_QUANTITY, SIM_DIM_POWER, OFF (overhead_power), FALSE, 0, 0 },
};

static const Figure *
find_figure (const char *key)
{
  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    if (g_strcmp0 (key, figures[i].key) == 0)
      return &figures[i];
  return NULL;
}

static gboolean
out_of_range (const char *text, const char *why, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "'%s' %s", text, why);
  return FALSE;
}

static gboolean
parse_count (const Figure *f, const char *text, guint *out, GError **error)
{
  guint64 v = 0;
  if (!sim_units_parse_count (text, &v, error))
    return FALSE;
  if (v < f->min || v > f->max)
    {
      g_autofree char *why = g_strdup_printf (
          "is outside [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]", f->min, f->max);
      return out_of_range (text, why, error);
    }
  *out = (guint) v;
  return TRUE;
}

static gboolean
parse_intra (const char *text, HwIntraConnect *out, GError **error)
{
  if (g_strcmp0 (text, "nvswitch") == 0)
    *out = HW_INTRA_NVSWITCH;
  else if (g_strcmp0 (text, "pcie") == 0)
    *out = HW_INTRA_PCIE;
  else
    return out_of_range (text, "is not an intra-node connection (expected nvswitch or pcie)",
                         error);
  return TRUE;
}

/* A rate of parameter updates: a number, spaces, then param/s with an optional decimal
 * prefix k, M or G ("81 Mparam/s"); > 0. */
static gboolean
parse_param_rate (const char *text, double *out, GError **error)
{
  static const struct { const char *unit; double scale; } units[] = {
    { "param/s", 1 }, { "kparam/s", 1e3 }, { "Mparam/s", 1e6 }, { "Gparam/s", 1e9 },
  };
  g_autofree char *copy = g_strstrip (g_strdup (text));
  char *space = strrchr (copy, ' ');
  const char *unit = space != NULL ? space + 1 : "";
  for (guint i = 0; i < G_N_ELEMENTS (units); i++)
    if (space != NULL && g_strcmp0 (unit, units[i].unit) == 0)
      {
        *space = '\0';
        double v = 0;
        if (!sim_units_parse_number (copy, &v, error))
          return FALSE;
        if (!(v > 0 && isfinite (v)))
          return out_of_range (text, "must be > 0", error);
        *out = v * units[i].scale;
        return TRUE;
      }
  g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
               "'%s' needs a unit: param/s, kparam/s, Mparam/s or Gparam/s (e.g. '81 Mparam/s')",
               text);
  return FALSE;
}

static gboolean
parse_figure (HwNodeSpec *spec, const Figure *f, const char *text, GError **error)
{
  char *field = (char *) spec + f->offset;
  double v = 0;
  switch (f->kind)
    {
    case FIG_COUNT:
      return parse_count (f, text, (guint *) field, error);
    case FIG_INTRA:
      return parse_intra (text, (HwIntraConnect *) field, error);
    case FIG_BOOL:
      return sim_units_parse_bool (text, (gboolean *) field, error);
    case FIG_TEXT:
      g_free (*(char **) field);
      *(char **) field = g_strdup (text);
      return TRUE;
    case FIG_QUANTITY:
      if (!sim_units_parse (text, f->dim, &v, error))
        return FALSE;
      if (!(v >= 0) || (f->positive && v <= 0))
        return out_of_range (text, f->positive ? "must be > 0" : "must be >= 0", error);
      *(double *) field = v;
      return TRUE;
    case FIG_PARAM_RATE:
      return parse_param_rate (text, (double *) field, error);
    case FIG_FRACTION:
      if (!sim_units_parse_number (text, &v, error))
        return FALSE;
      if (!(v > 0 && v <= 1))
        return out_of_range (text, "is outside (0, 1]", error);
      *(double *) field = v;
      return TRUE;
    }
  g_assert_not_reached ();
}

/* The stripped value of `key` in `group`; NULL + error (prefixed with group and key). */
char *
hw_spec_get_value (GKeyFile *kf, const char *group, const char *key, GError **error)
{
  char *text = g_key_file_get_string (kf, group, key, error);
  if (text == NULL)
    g_prefix_error (error, "group [%s], key '%s': ", group, key);
  return text != NULL ? g_strstrip (text) : NULL;
}

/* Applies every figure key of `group` to `spec`, in file order. */
gboolean
hw_spec_apply_figures (HwNodeSpec *spec, GKeyFile *kf, const char *group, char **keys,
                       GError **error)
{
  for (char **k = keys; *k != NULL; k++)
    {
      const Figure *f = find_figure (*k);
      if (f == NULL)
        continue; /* a structural key (node, gpu, base, nodes, …), handled by the caller */
      g_autofree char *text = hw_spec_get_value (kf, group, *k, error);
      if (text == NULL)
        return FALSE;
      if (!parse_figure (spec, f, text, error))
        return g_prefix_error (error, "group [%s], key '%s': ", group, *k), FALSE;
    }
  return TRUE;
}

/* Fails on the first key of `group` not in `valid`, naming the nearest valid one. */
gboolean
hw_spec_check_known_keys (char **keys, const char *group, const char *const *valid,
                          GError **error)
{
  for (char **k = keys; *k != NULL; k++)
    {
      if (g_strv_contains (valid, *k))
        continue;
      char *msg = g_strdup_printf ("group [%s], key '%s': unknown key", group, *k);
      msg = sim_text_with_hint (msg, *k, valid);
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, msg);
      g_free (msg);
      return FALSE;
    }
  return TRUE;
}

/* ---- GPUs by name, node defaults -------------------------------------------------------- */

/* A [gpu.NAME] group of the file, else a catalog GPU; new spec or NULL + error. */
static HwGpuSpec *
resolve_gpu (GKeyFile *kf, const char *name, GError **error)
{
  g_autofree char *group = g_strconcat ("gpu.", name, NULL);
  if (g_key_file_has_group (kf, group))
    return hw_catalog_gpu_from_keyfile (kf, group, error);
  const HwGpuSpec *g = hw_catalog_gpu (name, error);
  return g != NULL ? hw_gpu_spec_copy (g) : NULL;
}

/* The GPU named by `key` of `group`; errors prefixed with group and key. */
HwGpuSpec *
hw_spec_gpu_from_key (GKeyFile *kf, const char *group, const char *key, GError **error)
{
  g_autofree char *name = hw_spec_get_value (kf, group, key, error);
  if (name == NULL)
    return NULL;
  HwGpuSpec *g = resolve_gpu (kf, name, error);
  if (g == NULL && error != NULL && !g_str_has_prefix ((*error)->message, "group ["))
    g_prefix_error (error, "group [%s], key '%s': ", group, key);
  return g;
}

/* A node built around a bare GPU takes the α of its final intra-node connection unless the
 * group set intra_latency itself. */
void
hw_spec_default_intra_latency (HwNodeSpec *spec, GKeyFile *kf, const char *group)
{
  if (!g_key_file_has_key (kf, group, "intra_latency", NULL))
    spec->intra_latency
        = spec->intra == HW_INTRA_NVSWITCH ? HW_NVLINK_LATENCY : HW_PCIE_P2P_LATENCY;
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

/* `nodes` and `spine_oversubscription` of [cluster], with their defaults 1. */
static gboolean
cluster_scale (GKeyFile *kf, guint *n_nodes, HwFabricSpec *fabric, GError **error)
{
  static const Figure nodes_key = { "nodes", FIG_COUNT, 0, 0, FALSE, 1, MAX_NODES };
  *n_nodes = 1;
  fabric->spine_oversubscription = 1.0;
  if (g_key_file_has_key (kf, "cluster", "nodes", NULL))
    {
      g_autofree char *text = hw_spec_get_value (kf, "cluster", "nodes", error);
      if (text == NULL)
        return FALSE;
      if (!parse_count (&nodes_key, text, n_nodes, error))
        return g_prefix_error (error, "group [cluster], key 'nodes': "), FALSE;
    }
  if (g_key_file_has_key (kf, "cluster", "spine_oversubscription", NULL))
    {
      const char *key = "spine_oversubscription";
      g_autofree char *text = hw_spec_get_value (kf, "cluster", key, error);
      double v = 0;
      if (text == NULL)
        return FALSE;
      if (!sim_units_parse_number (text, &v, error)
          || (!(v >= 1 && isfinite (v)) && !out_of_range (text, "must be >= 1", error)))
        return g_prefix_error (error, "group [cluster], key '%s': ", key), FALSE;
      fabric->spine_oversubscription = v;
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
  HwFabricSpec fabric = { 1.0 };
  gboolean bare_gpu = g_key_file_has_key (kf, "cluster", "gpu", NULL);
  if (!cluster_start (kf, &spec, error)
      || !hw_spec_apply_figures (&spec, kf, "cluster", keys, error)
      || !cluster_scale (kf, &n_nodes, &fabric, error))
    goto fail;
  if (bare_gpu)
    hw_spec_default_intra_latency (&spec, kf, "cluster");
  if ((guint64) n_nodes * spec.n_gpus > MAX_GPUS)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [cluster], key 'nodes': %u nodes of %u GPUs is %" G_GUINT64_FORMAT
                   " GPUs; at most %d can be simulated (every rank is)",
                   n_nodes, spec.n_gpus, (guint64) n_nodes * spec.n_gpus, MAX_GPUS);
      goto fail;
    }
  if (n_nodes > 1 && (spec.n_nics == 0 || spec.nic_bandwidth <= 0))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [cluster], key 'nodes': nodes = %u needs nics_per_node and "
                   "nic_bandwidth",
                   n_nodes);
      goto fail;
    }
  if (!hw_node_spec_validate (&spec, error))
    {
      g_prefix_error (error, "group [cluster]: ");
      goto fail;
    }
  *node_out = spec;
  *n_nodes_out = n_nodes;
  *fabric_out = fabric;
  return TRUE;
fail:
  hw_node_spec_clear (&spec);
  return FALSE;
}
