/* hardware/cluster_spec_keys.c — what the [cluster] (hardware/cluster_spec.c) and
 * [node.NAME] (hardware/cluster_spec_node.c) scenario groups share, declared in
 * cluster_spec-private.h: the figure keys of a node (table, parsing, ranges), unknown-key
 * checks, GPUs by name and the intra-node latency default. A leaf: it calls neither of the
 * two group parsers, which both call it (tests/layering.sh). Errors as cluster_spec.h.
 *
 * Strictness (DESIGN §7): every value is parsed with sim/units.h (dimensioned values need
 * their unit, counts are plain digits, bools are true/false/yes/no/1/0). Units: B, B/s, s
 * (SI doubles).
 */
#include "config.h"
#include "hardware/cluster_spec-private.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "hardware/catalog.h"
#include "hardware/collective.h"
#include "hardware/node_catalog.h"
#include "sim/text.h"
#include "sim/units.h"

#define MAX_GPUS_PER_NODE HW_MAX_GPUS_PER_NODE
#define MAX_NICS 72 /* one per GPU of the largest node (GB200 NVL72) */
#define MAX_CPU_CORES 4096
#define MAX_NVME_DRIVES 256

/* ---- one figure key --------------------------------------------------------------------- */

typedef enum
{
  FIG_COUNT,    /* guint, sim_units_parse_count, within [min, max] */
  FIG_QUANTITY, /* double with unit, within its range (ranges[]) */
  FIG_FRACTION, /* plain number, within its range (ranges[]) */
  FIG_BOOL,     /* gboolean */
  FIG_INTRA,    /* HwIntraConnect: nvswitch | pcie */
  FIG_TEXT,     /* char *, replaced */
  FIG_PARAM_RATE, /* double, parameters/s: "81 Mparam/s" */
  FIG_TUNER,    /* HwCollectiveTuner: nccl | aws-ofi-p5en | aws-ofi-p6-b200 */
} FigureKind;

typedef struct
{
  const char *key;
  FigureKind kind;
  SimDimension dim;  /* FIG_QUANTITY */
  gsize offset;      /* of the member in HwNodeSpec */
  guint64 min, max;  /* FIG_COUNT */
} Figure;

#define OFF(m) offsetof (HwNodeSpec, m)

static const Figure figures[] = {
  { "gpus_per_node", FIG_COUNT, 0, OFF (n_gpus), 1, MAX_GPUS_PER_NODE },
  { "intra_node", FIG_INTRA, 0, OFF (intra), 0, 0 },
  { "nvlink_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvlink_bandwidth), 0, 0 },
  { "gpus_per_pcie_switch", FIG_COUNT, 0, OFF (gpus_per_pcie_switch), 0, MAX_GPUS_PER_NODE },
  { "pcie_switch_uplink", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (pcie_switch_uplink), 0, 0 },
  { "nics_per_node", FIG_COUNT, 0, OFF (n_nics), 0, MAX_NICS },
  { "nic_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nic_bandwidth), 0, 0 },
  { "rail_optimized", FIG_BOOL, 0, OFF (rail_optimized), 0, 0 },
  { "host_memory", FIG_QUANTITY, SIM_DIM_BYTES, OFF (host_memory), 0, 0 },
  { "intra_latency", FIG_QUANTITY, SIM_DIM_TIME, OFF (intra_latency), 0, 0 },
  { "inter_latency", FIG_QUANTITY, SIM_DIM_TIME, OFF (inter_latency), 0, 0 },
  { "collective_overhead", FIG_QUANTITY, SIM_DIM_TIME, OFF (collective_overhead), 0, 0 },
  { "link_efficiency", FIG_FRACTION, 0, OFF (link_efficiency), 0, 0 },
  { "collective_tuner", FIG_TUNER, 0, OFF (collective_tuner), 0, 0 },
  { "description", FIG_TEXT, 0, OFF (description), 0, 0 },
  { "cpu_cores", FIG_COUNT, 0, OFF (cpu_cores), 0, MAX_CPU_CORES },
  { "cpu_adam_rate", FIG_PARAM_RATE, 0, OFF (cpu_adam_rate), 0, 0 },
  { "nvme_drives", FIG_COUNT, 0, OFF (nvme_drives), 0, MAX_NVME_DRIVES },
  { "nvme_read_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvme_read_bandwidth), 0, 0 },
  { "nvme_write_bandwidth", FIG_QUANTITY, SIM_DIM_BANDWIDTH, OFF (nvme_write_bandwidth), 0, 0 },
  { "nvme_capacity", FIG_QUANTITY, SIM_DIM_BYTES, OFF (nvme_capacity), 0, 0 },
  { "overhead_power", FIG_QUANTITY, SIM_DIM_POWER, OFF (overhead_power), 0, 0 },
};

static const Figure *
find_figure (const char *key)
{
  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    if (g_strcmp0 (key, figures[i].key) == 0)
      return &figures[i];
  return NULL;
}

/* ---- ranges: what the reader accepts and the validator checks, in one place ------------ */

/* Links of at least 100 MB/s (below 1 Gbit Ethernet's 125 MB/s), NVMe drives of at least
 * 10 MB/s, and at most HW_GPU_MAX_BANDWIDTH, so that a typo (1e-30 Gbit/s) cannot make a
 * step of 1e31 s; latencies at most HW_GPU_MAX_LATENCY; measured links reach 0.78-0.94 of
 * their rate (node_catalog.c), and an efficiency below a tenth is a typo. `words` says the
 * range as messages state it, in units the reader takes (sim/units.c has no PB/s or EiB);
 * test_cluster_spec.c checks each bound against its words. */
#define LINK_MIN 1e8
#define NVME_MIN 1e7

typedef struct
{
  const char *key;
  gboolean zero_ok; /* 0 accepted (none, or not derated) */
  double lo, hi;    /* a value > 0 is accepted in [lo, hi] (SI) */
  const char *unit; /* SI unit of the validator's message */
  const char *words;
} FigureRange;

static const FigureRange ranges[] = {
  { "nvlink_bandwidth", TRUE, LINK_MIN, HW_GPU_MAX_BANDWIDTH, "B/s",
    "0 (none) or from 100 MB/s to 1000 TB/s" },
  { "pcie_switch_uplink", TRUE, LINK_MIN, HW_GPU_MAX_BANDWIDTH, "B/s",
    "0 (none) or from 100 MB/s to 1000 TB/s" },
  { "nic_bandwidth", TRUE, LINK_MIN, HW_GPU_MAX_BANDWIDTH, "B/s",
    "0 (none) or from 100 MB/s to 1000 TB/s" },
  { "nvme_read_bandwidth", TRUE, NVME_MIN, HW_GPU_MAX_BANDWIDTH, "B/s",
    "0 (none) or from 10 MB/s to 1000 TB/s" },
  { "nvme_write_bandwidth", TRUE, NVME_MIN, HW_GPU_MAX_BANDWIDTH, "B/s",
    "0 (none) or from 10 MB/s to 1000 TB/s" },
  { "nvme_capacity", TRUE, 0, HW_NODE_MAX_NVME, "B", "from 0 (none) to 1024 PiB" },
  { "host_memory", FALSE, 0, HW_NODE_MAX_HOST_MEMORY, "B", "> 0 and at most 1 PiB" },
  { "intra_latency", TRUE, 0, HW_GPU_MAX_LATENCY, "s", "from 0 to 1 s" },
  { "inter_latency", TRUE, 0, HW_GPU_MAX_LATENCY, "s", "from 0 to 1 s" },
  { "collective_overhead", TRUE, 0, HW_GPU_MAX_LATENCY, "s", "from 0 to 1 s" },
  { "overhead_power", TRUE, 0, HW_GPU_MAX_POWER, "W", "from 0 to 100 kW" },
  { "link_efficiency", FALSE, 0.1, 1, "", "from 0.1 to 1" },
};

const char *
hw_spec_figure_range (const char *key, double v, const char **unit)
{
  for (guint i = 0; i < G_N_ELEMENTS (ranges); i++)
    {
      const FigureRange *r = &ranges[i];
      if (strcmp (r->key, key) != 0)
        continue;
      if (unit != NULL)
        *unit = r->unit;
      gboolean ok = v == 0 ? r->zero_ok : isfinite (v) && v > 0 && v >= r->lo && v <= r->hi;
      return ok ? NULL : r->words;
    }
  g_return_val_if_reached (NULL);
}

/* Sets G_KEY_FILE_ERROR "'TEXT' WHY"; FALSE. */
gboolean
hw_spec_out_of_range (const char *text, const char *why, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "'%s' %s", text, why);
  return FALSE;
}

/* A plain count within [min, max] into *out. */
gboolean
hw_spec_parse_count (const char *text, guint64 min, guint64 max, guint *out, GError **error)
{
  guint64 v = 0;
  if (!sim_units_parse_count_in (text, min, max, &v, error)) /* the message gives the range */
    return FALSE;
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
    return hw_spec_out_of_range (text, "is not an intra-node connection (expected nvswitch or pcie)",
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
        if (!(v > 0 && isfinite (v) && v * units[i].scale <= HW_NODE_MAX_CPU_ADAM_RATE))
          return hw_spec_out_of_range (text, "must be > 0 and at most 1000 Gparam/s (per core)",
                                       error);
        *out = v * units[i].scale;
        return TRUE;
      }
  /* "81 M/s" has a unit, just not one of these: say which it is, not that it lacks one */
  if (space != NULL && g_ascii_isalpha (unit[0]))
    g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                 "'%s': '%s' is not a unit of this key: param/s, kparam/s, Mparam/s or "
                 "Gparam/s (e.g. '81 Mparam/s')", text, unit);
  else
    g_set_error (error, SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT,
                 "'%s' needs a unit: param/s, kparam/s, Mparam/s or Gparam/s "
                 "(e.g. '81 Mparam/s')", text);
  return FALSE;
}

/* `v`, parsed from `text`, into *out when the figure's range takes it; else FALSE + "'TEXT'
 * must be RANGE", the value quoted as typed. */
static gboolean
in_range (const Figure *f, const char *text, double v, double *out, GError **error)
{
  const char *words = hw_spec_figure_range (f->key, v, NULL);
  if (words != NULL)
    {
      g_autofree char *why = g_strdup_printf ("must be %s", words);
      return hw_spec_out_of_range (text, why, error);
    }
  *out = v;
  return TRUE;
}

static gboolean
parse_figure (HwNodeSpec *spec, const Figure *f, const char *text, GError **error)
{
  char *field = (char *) spec + f->offset;
  double v = 0;
  switch (f->kind)
    {
    case FIG_COUNT:
      return hw_spec_parse_count (text, f->min, f->max, (guint *) field, error);
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
      if (f->dim == SIM_DIM_BYTES) /* whole bytes ("0.3 TiB"), as every byte count */
        v = floor (v);
      return in_range (f, text, v, (double *) field, error);
    case FIG_PARAM_RATE:
      return parse_param_rate (text, (double *) field, error);
    case FIG_TUNER:
      return hw_collective_tuner_from_string (text, (HwCollectiveTuner *) field, error);
    case FIG_FRACTION:
      if (!sim_units_parse_number (text, &v, error))
        return FALSE;
      return in_range (f, text, v, (double *) field, error);
    }
  g_assert_not_reached ();
}

/* The stripped value of `key` in `group`; NULL + error (prefixed with group and key). */
char *
hw_spec_get_value (GKeyFile *kf, const char *group, const char *key, GError **error)
{
  char *text = sim_text_keyfile_string (kf, group, key, error);
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
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
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
