/* tests/unit/hardware/test_cluster_spec.c — hardware/node_catalog.c and
 * hardware/cluster_spec.c: the built-in nodes (datasheet figures, ../shared/reference/
 * hardware.md), and [cluster] / [node.NAME] groups parsed strictly (units, counts, hints,
 * overrides, multi-node without NICs).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "hardware/cluster_spec.h"
#include "hardware/node_catalog.h"
#include "sim/units.h"
#include "tests/testlib.h"

#define GIB (1024.0 * 1024 * 1024)
#define TIB (1024.0 * GIB)

static GKeyFile *
load (const char *text)
{
  GKeyFile *kf = g_key_file_new ();
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FATAL (g_key_file_load_from_data (kf, text, (gsize) -1, G_KEY_FILE_NONE, &error));
  return kf;
}

typedef struct
{
  HwNodeSpec node;
  guint n_nodes;
  HwFabricSpec fabric;
} Parsed;

/* Parses `text`, asserting success. Clear with hw_node_spec_clear (&p.node). */
static Parsed
parse_ok (const char *text)
{
  g_autoptr (GKeyFile) kf = load (text);
  g_autoptr (GError) error = NULL;
  Parsed p = { { 0 }, 0, { .spine_oversubscription = 0 } };
  gboolean ok = hw_cluster_spec_from_keyfile (kf, &p.node, &p.n_nodes, &p.fabric, &error);
  if (!ok)
    g_printerr ("\n  unexpected error: %s\n", error->message);
  CU_ASSERT_FATAL (ok);
  return p;
}

/* Parses `text`, asserting failure with `domain`/`code` and outputs untouched; returns the
 * message (caller frees). */
static char *
parse_error (const char *text, GQuark domain, int code)
{
  g_autoptr (GKeyFile) kf = load (text);
  g_autoptr (GError) error = NULL;
  HwNodeSpec node = { 0 };
  guint n = 77;
  HwFabricSpec fabric = { .spine_oversubscription = 9 };
  CU_ASSERT_FALSE (hw_cluster_spec_from_keyfile (kf, &node, &n, &fabric, &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  if (error->domain != domain || error->code != code)
    g_printerr ("\n  error: %s\n", error->message);
  CU_ASSERT_EQUAL (error->domain, domain);
  CU_ASSERT_EQUAL (error->code, code);
  CU_ASSERT_PTR_NULL (node.gpu);
  CU_ASSERT_EQUAL (n, 77);
  CU_ASSERT_EQUAL (fabric.spine_oversubscription, 9);
  return g_strdup (error->message);
}

#define ASSERT_CONTAINS(hay, needle)                                                               \
  do                                                                                               \
    {                                                                                              \
      gboolean _found = strstr ((hay), (needle)) != NULL;                                          \
      if (!_found)                                                                                 \
        g_printerr ("\n  '%s' lacks '%s'\n", (hay), (needle));                                     \
      CU_ASSERT_TRUE (_found);                                                                     \
    }                                                                                              \
  while (0)

static void
test_catalog_nodes_valid (void)
{
  static const char *const required[]
      = { "DGX-A100", "DGX-H100",    "DGX-H200",    "HGX-B200",
          "GB200-NVL72", "MI300X-8",    "8x-RTX-4090", "AWS-P5en", "AWS-P6-B200" };
  CU_ASSERT_EQUAL (hw_catalog_n_nodes (), G_N_ELEMENTS (required));
  for (guint i = 0; i < G_N_ELEMENTS (required); i++)
    CU_ASSERT_PTR_NOT_NULL (hw_catalog_node (required[i], NULL));
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    {
      const HwNodeSpec *n = hw_catalog_node_at (i);
      g_autoptr (GError) error = NULL;
      CU_ASSERT_TRUE (hw_node_spec_validate (n, &error));
      CU_ASSERT_TRUE (n->source != NULL && strlen (n->source) > 40);
      CU_ASSERT_TRUE (n->description != NULL && n->description[0] != '\0');
      CU_ASSERT_TRUE (n->link_efficiency > 0 && n->link_efficiency <= 1);
      CU_ASSERT_TRUE (n->n_nics >= 1 && n->nic_bandwidth > 0); /* all can scale out */
      CU_ASSERT_PTR_EQUAL (hw_catalog_node (n->name, NULL), n);
    }
  CU_ASSERT_PTR_EQUAL (hw_catalog_node ("dgx-a100", NULL), hw_catalog_node ("DGX-A100", NULL));
  /* HGX names are aliases of the DGX entries */
  CU_ASSERT_PTR_EQUAL (hw_catalog_node ("HGX-A100", NULL), hw_catalog_node ("DGX-A100", NULL));
  CU_ASSERT_PTR_EQUAL (hw_catalog_node ("hgx-h100", NULL), hw_catalog_node ("DGX-H100", NULL));
  CU_ASSERT_PTR_EQUAL (hw_catalog_node ("HGX-H200", NULL), hw_catalog_node ("DGX-H200", NULL));
}

static void
test_catalog_unknown_node (void)
{
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (hw_catalog_node ("DGX-A10", &error));
  CU_ASSERT_TRUE (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  ASSERT_CONTAINS (error->message, "did you mean 'DGX-A100'?");
  ASSERT_CONTAINS (error->message, "HGX-B200");
}

/* DGX A100 640GB datasheet (S): 8× A100 80GB, NVLink 3 300 GB/s per GPU per direction,
 * 8× HDR 200 Gbit/s = 25 GB/s, 2 TB; DGX H100: NVLink 4 450 GB/s, 8× NDR 400 Gbit/s =
 * 50 GB/s; HGX B200: NVLink 5 900 GB/s. Calibration (M, hardware.md): 235/300, 396/450,
 * 846/900. */
static void
test_catalog_datasheet_figures (void)
{
  const HwNodeSpec *a = hw_catalog_node ("DGX-A100", NULL);
  CU_ASSERT_STRING_EQUAL (a->gpu->name, "A100-80GB-SXM");
  CU_ASSERT_EQUAL (a->n_gpus, 8);
  CU_ASSERT_EQUAL (a->intra, HW_INTRA_NVSWITCH);
  STEPSIM_ASSERT_REL (a->nvlink_bandwidth, 300e9, 1e-12);
  CU_ASSERT_EQUAL (a->n_nics, 8);
  STEPSIM_ASSERT_REL (a->nic_bandwidth, 25e9, 1e-12);
  CU_ASSERT_TRUE (a->rail_optimized);
  STEPSIM_ASSERT_REL (a->host_memory, 2 * TIB, 1e-12);
  CU_ASSERT_EQUAL (a->gpus_per_pcie_switch, 2);
  STEPSIM_ASSERT_REL (a->link_efficiency, 235.0 / 300.0, 1e-12);
  const HwNodeSpec *h = hw_catalog_node ("DGX-H100", NULL);
  STEPSIM_ASSERT_REL (h->nvlink_bandwidth, 450e9, 1e-12);
  STEPSIM_ASSERT_REL (h->nic_bandwidth, 50e9, 1e-12);
  STEPSIM_ASSERT_REL (h->link_efficiency, 396.0 / 450.0, 1e-12);
  CU_ASSERT_STRING_EQUAL (hw_catalog_node ("DGX-H200", NULL)->gpu->name, "H200-SXM");
  const HwNodeSpec *b = hw_catalog_node ("HGX-B200", NULL);
  STEPSIM_ASSERT_REL (b->nvlink_bandwidth, 900e9, 1e-12);
  STEPSIM_ASSERT_REL (b->link_efficiency, 846.0 / 900.0, 1e-12);
  /* AWS (ml-engineering network/README.md; aws-ofi-nccl src/platform-aws.cpp): p5en 8× H200
   * with 16 × 200 Gbit/s EFA v3 = 8 rails of 400 Gbit/s (50 GB/s); p6-b200 8× B200 with 8 ×
   * 400 Gbit/s EFA v4; both report a 35 us network latency to NCCL. Collective overheads (M):
   * A100 28 us, H100/H200 25, B200 33. */
  const HwNodeSpec *p5 = hw_catalog_node ("AWS-P5en", NULL), *p6 = hw_catalog_node ("AWS-P6-B200", NULL);
  CU_ASSERT_STRING_EQUAL (p5->gpu->name, "H200-SXM");
  CU_ASSERT_STRING_EQUAL (p6->gpu->name, "B200-SXM");
  CU_ASSERT_TRUE (p5->n_nics == 8 && p6->n_nics == 8);
  STEPSIM_ASSERT_REL (p5->nic_bandwidth, 50e9, 1e-12);
  STEPSIM_ASSERT_REL (p6->nic_bandwidth, 50e9, 1e-12);
  STEPSIM_ASSERT_REL (p5->inter_latency, 35e-6, 1e-12);
  STEPSIM_ASSERT_REL (p6->inter_latency, 35e-6, 1e-12);
  STEPSIM_ASSERT_REL (a->collective_overhead, 28e-6, 1e-12);
  STEPSIM_ASSERT_REL (h->collective_overhead, 25e-6, 1e-12);
  STEPSIM_ASSERT_REL (p6->collective_overhead, 33e-6, 1e-12);
  /* CPU Adam (node_catalog.h): the DGX-2's 10e9 parameters in 2.57 s on 2 × 6 channels of
   * DDR4-2666 (2 × 6 × 21.328 GB/s), scaled by the host's DRAM bandwidth: the whole DGX A100
   * (2 × 8 channels DDR4-3200 = 409.6 GB/s) updates 10e9 / 2.57 × 409.6 / 255.936 ≈ 6.23 G
   * parameters/s, DGX H100 (2 × 8 DDR5-4800 = 614.4 GB/s) ≈ 9.34 G; a box naming no CPU
   * keeps the DGX-2's 81 M a core */
  double zo = 10e9 / 2.57, dgx2 = 2 * 6 * 21.328e9;
  STEPSIM_ASSERT_REL (a->cpu_cores * a->cpu_adam_rate, zo * 409.6e9 / dgx2, 1e-12);
  STEPSIM_ASSERT_REL (h->cpu_cores * h->cpu_adam_rate, zo * 614.4e9 / dgx2, 1e-12);
  const HwNodeSpec *r = hw_catalog_node ("8x-RTX-4090", NULL);
  STEPSIM_ASSERT_REL (r->cpu_adam_rate, 81e6, 1e-12);
  CU_ASSERT_EQUAL (r->intra, HW_INTRA_PCIE);
  CU_ASSERT_EQUAL (r->gpus_per_pcie_switch, 4);
  STEPSIM_ASSERT_REL (r->pcie_switch_uplink, 25e9, 1e-12);
}

/* A bare GPU: one GPU per node, one node, 512 GiB, NVSwitch when the GPU has NVLink (A100:
 * 300 GB/s) with α 2 us; a GPU without NVLink gets PCIe and α 5 us. */
static void
test_cluster_bare_gpu (void)
{
  Parsed p = parse_ok ("[cluster]\ngpu = A100-80GB-SXM\ngpus_per_node = 8\n");
  CU_ASSERT_STRING_EQUAL (p.node.gpu->name, "A100-80GB-SXM");
  CU_ASSERT_EQUAL (p.node.n_gpus, 8);
  CU_ASSERT_EQUAL (p.n_nodes, 1);
  CU_ASSERT_EQUAL (p.fabric.spine_oversubscription, 1);
  CU_ASSERT_EQUAL (p.node.intra, HW_INTRA_NVSWITCH);
  STEPSIM_ASSERT_REL (p.node.nvlink_bandwidth, 300e9, 1e-12);
  STEPSIM_ASSERT_REL (p.node.host_memory, 512 * GIB, 1e-12);
  STEPSIM_ASSERT_REL (p.node.intra_latency, 2e-6, 1e-12);
  CU_ASSERT_EQUAL (p.node.n_nics, 0);
  hw_node_spec_clear (&p.node);
  p = parse_ok ("[cluster]\ngpu = rtx-4090\n");
  CU_ASSERT_EQUAL (p.node.n_gpus, 1);
  CU_ASSERT_EQUAL (p.node.intra, HW_INTRA_PCIE);
  STEPSIM_ASSERT_REL (p.node.intra_latency, 5e-6, 1e-12);
  hw_node_spec_clear (&p.node);
}

/* Every [cluster] figure key with its unit, on a bare GPU. */
static void
test_cluster_every_key (void)
{
  Parsed p = parse_ok ("[cluster]\ngpu = H100-SXM\ngpus_per_node = 4\nintra_node = pcie\n"
                       "nics_per_node = 2\nnic_bandwidth = 400 Gbit/s\nrail_optimized = true\n"
                       "nodes = 3\nhost_memory = 1 TiB\nspine_oversubscription = 1.5\n");
  CU_ASSERT_EQUAL (p.node.n_gpus, 4);
  CU_ASSERT_EQUAL (p.node.intra, HW_INTRA_PCIE);
  STEPSIM_ASSERT_REL (p.node.intra_latency, 5e-6, 1e-12); /* follows the final intra_node */
  CU_ASSERT_EQUAL (p.node.n_nics, 2);
  STEPSIM_ASSERT_REL (p.node.nic_bandwidth, 50e9, 1e-12);
  CU_ASSERT_TRUE (p.node.rail_optimized);
  CU_ASSERT_EQUAL (p.n_nodes, 3);
  STEPSIM_ASSERT_REL (p.node.host_memory, TIB, 1e-12);
  STEPSIM_ASSERT_REL (p.fabric.spine_oversubscription, 1.5, 1e-12);
  CU_ASSERT_EQUAL (p.fabric.nodes_per_pod, 0); /* default: one pod of every node */
  STEPSIM_ASSERT_REL (p.fabric.pod_oversubscription, 1, 1e-12);
  hw_node_spec_clear (&p.node);
}

/* Pods: nodes_per_pod and pod_oversubscription are read; nodes must be a multiple of
 * nodes_per_pod or at most it (inside one pod), nodes_per_pod a count >= 1 and pod_oversubscription a number >= 1, each
 * error naming the group and key (the scenario loader adds the file); a misspelt key names
 * the nearest. */
static void
test_cluster_pods (void)
{
  Parsed p = parse_ok ("[cluster]\nnode = DGX-H100\nnodes = 64\nnodes_per_pod = 32\n"
                       "pod_oversubscription = 2\n");
  CU_ASSERT_EQUAL (p.n_nodes, 64);
  CU_ASSERT_EQUAL (p.fabric.nodes_per_pod, 32);
  STEPSIM_ASSERT_REL (p.fabric.pod_oversubscription, 2, 1e-12);
  STEPSIM_ASSERT_REL (p.fabric.spine_oversubscription, 1, 1e-12);
  hw_node_spec_clear (&p.node);
  /* a job on part of a pod: nodes at most nodes_per_pod sit inside one pod */
  Parsed part = parse_ok ("[cluster]\nnode = DGX-H100\nnodes = 8\nnodes_per_pod = 32\n");
  CU_ASSERT_EQUAL (part.n_nodes, 8);
  CU_ASSERT_EQUAL (part.fabric.nodes_per_pod, 32);
  hw_node_spec_clear (&part.node);
  g_autofree char *m1 = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 48\n"
                                     "nodes_per_pod = 32\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m1, "group [cluster], key 'nodes_per_pod': nodes = 48 is not a multiple of "
                       "nodes_per_pod = 32");
  g_autofree char *m2 = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 4\nnodes_per_pod = 0\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE);
  ASSERT_CONTAINS (m2, "group [cluster], key 'nodes_per_pod': '0' is outside [1, 16384]");
  g_autofree char *m3 = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 4\nnodes_per_pod = 2\n"
                                     "pod_oversubscription = 0.5\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m3, "group [cluster], key 'pod_oversubscription': '0.5' must be between 1 "
                       "and 1000");
  /* bounded above too: a 1e12 taper made steps of 10^9 s */
  g_autofree char *m3b = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 4\nnodes_per_pod = 2\n"
                                      "pod_oversubscription = 1e12\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m3b, "key 'pod_oversubscription': '1e12' must be between 1 and 1000");
  g_autofree char *m4 = parse_error ("[cluster]\nnode = DGX-H100\npod_oversubscription = 2:1\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX);
  ASSERT_CONTAINS (m4, "group [cluster], key 'pod_oversubscription': ");
  g_autofree char *m5 = parse_error ("[cluster]\nnode = DGX-H100\nnodes_per_pods = 2\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (m5, "group [cluster], key 'nodes_per_pods': unknown key");
  ASSERT_CONTAINS (m5, "did you mean 'nodes_per_pod'?");
}

/* A catalog node with explicit overrides: only the named figures change. */
static void
test_cluster_node_overrides (void)
{
  Parsed p = parse_ok ("[cluster]\nnode = DGX-A100\nnodes = 8\nnic_bandwidth = 100 Gbit/s\n");
  const HwNodeSpec *a = hw_catalog_node ("DGX-A100", NULL);
  CU_ASSERT_EQUAL (p.n_nodes, 8);
  STEPSIM_ASSERT_REL (p.node.nic_bandwidth, 12.5e9, 1e-12);
  CU_ASSERT_EQUAL (p.node.n_nics, a->n_nics);
  CU_ASSERT_EQUAL (p.node.nvlink_bandwidth, a->nvlink_bandwidth);
  CU_ASSERT_EQUAL (p.node.host_memory, a->host_memory);
  CU_ASSERT_STRING_EQUAL (p.node.name, "DGX-A100");
  CU_ASSERT_PTR_NOT_EQUAL (p.node.gpu, a->gpu); /* a copy */
  hw_node_spec_clear (&p.node);
}

/* A custom [node.NAME] from a base with a different GPU (its NVLink follows the GPU: the
 * A100 40GB has 300 GB/s) and from a bare scenario GPU. */
static void
test_custom_node_groups (void)
{
  Parsed p = parse_ok ("[cluster]\nnode = MyBox\nnodes = 2\n"
                       "[node.MyBox]\nbase = DGX-H100\ngpu = A100-40GB-SXM\n"
                       "link_efficiency = 0.5\ninter_latency = 7 us\n"
                       "collective_overhead = 12 us\npcie_switch_uplink = 0 GB/s\n");
  CU_ASSERT_STRING_EQUAL (p.node.name, "MyBox");
  CU_ASSERT_STRING_EQUAL (p.node.gpu->name, "A100-40GB-SXM");
  STEPSIM_ASSERT_REL (p.node.nvlink_bandwidth, 300e9, 1e-12);
  STEPSIM_ASSERT_REL (p.node.nic_bandwidth, 50e9, 1e-12); /* from the base */
  STEPSIM_ASSERT_REL (p.node.link_efficiency, 0.5, 1e-12);
  STEPSIM_ASSERT_REL (p.node.inter_latency, 7e-6, 1e-12);
  STEPSIM_ASSERT_REL (p.node.collective_overhead, 12e-6, 1e-12);
  CU_ASSERT_EQUAL (p.node.pcie_switch_uplink, 0);
  ASSERT_CONTAINS (p.node.source, "[node.MyBox]");
  hw_node_spec_clear (&p.node);

  p = parse_ok ("[cluster]\nnode = Rig\n"
                "[node.Rig]\ngpu = Fast\ngpus_per_node = 4\nintra_node = pcie\n"
                "gpus_per_pcie_switch = 2\npcie_switch_uplink = 16 GB/s\n"
                "description = my rig\n"
                "[gpu.Fast]\nbase = RTX-4090\nmemory = 48 GiB\n");
  CU_ASSERT_STRING_EQUAL (p.node.gpu->name, "Fast");
  STEPSIM_ASSERT_REL (p.node.gpu->memory_capacity, 48 * GIB, 1e-12);
  CU_ASSERT_EQUAL (p.node.n_gpus, 4);
  CU_ASSERT_EQUAL (p.node.gpus_per_pcie_switch, 2);
  STEPSIM_ASSERT_REL (p.node.pcie_switch_uplink, 16e9, 1e-12);
  CU_ASSERT_STRING_EQUAL (p.node.description, "my rig");
  hw_node_spec_clear (&p.node);
}

static void
test_unknown_key_hint (void)
{
  g_autofree char *m1 = parse_error ("[cluster]\nnode = DGX-A100\nnodess = 2\n", G_KEY_FILE_ERROR,
                                     G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (m1, "group [cluster], key 'nodess': unknown key");
  ASSERT_CONTAINS (m1, "did you mean 'nodes'?");
  g_autofree char *m2 = parse_error ("[cluster]\nnode = X\n[node.X]\nbase = DGX-A100\n"
                                     "nvlink_bandwith = 1 GB/s\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (m2, "group [node.X], key 'nvlink_bandwith'");
  ASSERT_CONTAINS (m2, "did you mean 'nvlink_bandwidth'?");
  /* A [node.NAME]-only key is unknown in [cluster]. */
  g_autofree char *m3 = parse_error ("[cluster]\ngpu = H100-SXM\nintra_latency = 1 us\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (m3, "key 'intra_latency': unknown key");
}

static void
test_strict_values (void)
{
  g_autofree char *m1 = parse_error ("[cluster]\nnode = DGX-H100\nnic_bandwidth = 400\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT);
  ASSERT_CONTAINS (m1, "group [cluster], key 'nic_bandwidth': ");
  g_autofree char *m2 = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 2.5\n", SIM_UNITS_ERROR,
                                     SIM_UNITS_ERROR_RANGE);
  ASSERT_CONTAINS (m2, "group [cluster], key 'nodes': ");
  g_autofree char *m3 = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 0\n", SIM_UNITS_ERROR,
                                     SIM_UNITS_ERROR_RANGE);
  ASSERT_CONTAINS (m3, "group [cluster], key 'nodes': '0' is outside [1, 16384]");
  /* an exponent-form count gives the range too (it said "a whole number >= 0") */
  g_autofree char *m_exp = parse_error ("[cluster]\nnode = DGX-H100\nnodes = 1e30\n",
                                        SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE);
  ASSERT_CONTAINS (m_exp,
                   "group [cluster], key 'nodes': '1e30' is not a whole number in [1, 16384]");
  /* a node holds at most an NVL72 domain; a run at most 16384 nodes and 131072 GPUs */
  g_autofree char *mg = parse_error ("[cluster]\ngpu = H100-SXM\ngpus_per_node = 73\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_RANGE);
  ASSERT_CONTAINS (mg, "group [cluster], key 'gpus_per_node': '73' is outside [1, 72]");
  g_autofree char *mn = parse_error ("[cluster]\ngpu = H100-SXM\ngpus_per_node = 72\n"
                                     "nodes = 1821\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (mn, "group [cluster], key 'nodes': 1821 nodes of 72 GPUs is 131112 GPUs");
  Parsed p = parse_ok ("[cluster]\nnode = DGX-H100\nnodes = 16384\n");
  CU_ASSERT_EQUAL (p.n_nodes, 16384);
  hw_node_spec_clear (&p.node);
  /* a node's GPUs can be lowered, never raised (QA: "2 x DGX-H100 of 16" ran) */
  g_autofree char *m_more = parse_error ("[cluster]\nnode = DGX-H100\ngpus_per_node = 16\n",
                                         G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m_more, "group [cluster], key 'gpus_per_node': 16 is more than the 8 GPUs a "
                           "DGX-H100 has");
  Parsed fewer = parse_ok ("[cluster]\nnode = DGX-H100\ngpus_per_node = 4\n");
  CU_ASSERT_EQUAL (fewer.node.n_gpus, 4);
  hw_node_spec_clear (&fewer.node);
  g_autofree char *m4 = parse_error ("[cluster]\nnode = DGX-H100\nspine_oversubscription = "
                                     "0.5\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m4, "key 'spine_oversubscription': '0.5' must be between 1 and 1000");
  g_autofree char *m5 = parse_error ("[cluster]\ngpu = H100-SXM\nintra_node = nvlink\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m5, "key 'intra_node': 'nvlink' is not an intra-node connection");
  g_autofree char *m6 = parse_error ("[cluster]\ngpu = H100-SXM\nrail_optimized = maybe\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_SYNTAX);
  ASSERT_CONTAINS (m6, "key 'rail_optimized'");
  g_autofree char *m7 = parse_error ("[cluster]\nnode = N\n[node.N]\nbase = DGX-A100\n"
                                     "link_efficiency = 1.2\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m7, "group [node.N], key 'link_efficiency'");
  /* a node's link, latency and memory figures are bounded as a GPU's are: a typo (1e-30
   * Gbit/s, 1e30 s, 1e30 TiB, an efficiency of 1e-9) gave a step of 1e31 s, exit 0 */
  static const struct
  {
    const char *line, *key, *why;
  } bounded[] = {
    { "nic_bandwidth = 1e-30 Gbit/s", "nic_bandwidth",
      "'1e-30 Gbit/s' must be 0 (none) or from 100 MB/s to 1000 TB/s" },
    { "nvlink_bandwidth = 1e-30 GB/s", "nvlink_bandwidth",
      "'1e-30 GB/s' must be 0 (none) or from 100 MB/s to 1000 TB/s" },
    { "inter_latency = 1e30 s", "inter_latency", "'1e30 s' must be from 0 to 1 s" },
    { "collective_overhead = 2 s", "collective_overhead", "'2 s' must be from 0 to 1 s" },
    { "link_efficiency = 1e-9", "link_efficiency", "'1e-9' must be from 0.1 to 1" },
    { "host_memory = 1e30 TiB", "host_memory", "'1e30 TiB' must be > 0 and at most 1 PiB" },
    { "cpu_adam_rate = 1e20 param/s", "cpu_adam_rate",
      "'1e20 param/s' must be > 0 and at most 1000 Gparam/s (per core)" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bounded); i++)
    {
      g_autofree char *text = g_strdup_printf ("[cluster]\nnode = N\nnodes = 2\n[node.N]\n"
                                               "base = DGX-H100\n%s\n", bounded[i].line);
      g_autofree char *m = parse_error (text, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
      g_autofree char *where = g_strdup_printf ("group [node.N], key '%s'", bounded[i].key);
      ASSERT_CONTAINS (m, where);
      ASSERT_CONTAINS (m, bounded[i].why);
    }
  /* a rate with a unit that is not a parameter rate: said so, and the units it takes (it
   * said "needs a unit") */
  g_autofree char *mu = parse_error ("[cluster]\nnode = DGX-H100\ncpu_adam_rate = 81 M/s\n",
                                     SIM_UNITS_ERROR, SIM_UNITS_ERROR_MISSING_UNIT);
  ASSERT_CONTAINS (mu, "key 'cpu_adam_rate': '81 M/s': 'M/s' is not a unit of this key: "
                       "param/s, kparam/s, Mparam/s or Gparam/s");
  Parsed top = parse_ok ("[cluster]\nnode = DGX-H100\ncpu_adam_rate = 1000 Gparam/s\n");
  STEPSIM_ASSERT_REL (top.node.cpu_adam_rate, 1e12, 1e-15);
  hw_node_spec_clear (&top.node);
  /* the bounds are wide: the catalog's nodes and a 1 Gbit/s network are in them */
  Parsed slow = parse_ok ("[cluster]\nnode = N\nnodes = 2\n[node.N]\nbase = DGX-H100\n"
                          "nic_bandwidth = 1 Gbit/s\ninter_latency = 50 us\n");
  CU_ASSERT_EQUAL (slow.n_nodes, 2);
  hw_node_spec_clear (&slow.node);
}

/* Each bounded figure of a node: its message states the range the reader takes, quoting
 * the value as typed, and each edge of that range is where the reader's acceptance turns
 * (nic_bandwidth = 0 said "must be > 0" where the README said 0 is none; link_efficiency
 * said "outside (0, 1]" on reading and "in [0.1, 1]" on checking). `ctx` makes 0 (none)
 * meaningful: no NVSwitch, no NICs, no NVMe drives. */
static void
test_figure_ranges (void)
{
  static const struct
  {
    const char *key, *ctx, *words;
    const char *ok[3], *bad[3];
  } rows[] = {
    { "nvlink_bandwidth", "intra_node = pcie\n", "0 (none) or from 100 MB/s to 1000 TB/s",
      { "0 GB/s", "100 MB/s", "1000 TB/s" }, { "99 MB/s", "1001 TB/s", "1e-30 GB/s" } },
    { "pcie_switch_uplink", "", "0 (none) or from 100 MB/s to 1000 TB/s",
      { "0 GB/s", "100 MB/s", "1000 TB/s" }, { "99 MB/s", "1001 TB/s", "1e-30 GB/s" } },
    { "nic_bandwidth", "nics_per_node = 0\n", "0 (none) or from 100 MB/s to 1000 TB/s",
      { "0 Gbit/s", "800 Mbit/s", "1000 TB/s" }, { "799 Mbit/s", "1001 TB/s", "1e-30 Gbit/s" } },
    { "nvme_read_bandwidth", "nvme_drives = 0\n", "0 (none) or from 10 MB/s to 1000 TB/s",
      { "0 GB/s", "10 MB/s", "1000 TB/s" }, { "9 MB/s", "1001 TB/s", "1e-30 GB/s" } },
    { "nvme_write_bandwidth", "nvme_drives = 0\n", "0 (none) or from 10 MB/s to 1000 TB/s",
      { "0 GB/s", "10 MB/s", "1000 TB/s" }, { "9 MB/s", "1001 TB/s", "1e-30 GB/s" } },
    { "nvme_capacity", "nvme_drives = 0\n", "from 0 (none) to 1024 PiB",
      { "0 TB", "1 B", "1024 PiB" }, { "1025 PiB", "2000 PiB", "1e30 TB" } },
    { "host_memory", "", "> 0 and at most 1 PiB",
      { "1 GiB", "2 TiB", "1 PiB" }, { "0 GiB", "1025 TiB", "1e30 GiB" } },
    { "inter_latency", "", "from 0 to 1 s", { "0 s", "5 us", "1 s" },
      { "1001 ms", "2 s", "1e30 s" } },
    { "overhead_power", "", "from 0 to 100 kW", { "0 W", "500 W", "100 kW" },
      { "100001 W", "1 MW", "1e30 W" } },
    { "link_efficiency", "", "from 0.1 to 1", { "0.1", "0.9", "1" }, { "0", "0.099", "1.001" } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    for (guint j = 0; j < 3; j++)
      {
        g_autofree char *ok = g_strdup_printf ("[cluster]\nnode = N\n[node.N]\nbase = DGX-H100\n"
                                               "%s%s = %s\n", rows[i].ctx, rows[i].key,
                                               rows[i].ok[j]);
        Parsed p = parse_ok (ok);
        hw_node_spec_clear (&p.node);
        g_autofree char *bad = g_strdup_printf ("[cluster]\nnode = N\n[node.N]\nbase = DGX-H100\n"
                                                "%s%s = %s\n", rows[i].ctx, rows[i].key,
                                                rows[i].bad[j]);
        g_autofree char *m = parse_error (bad, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
        g_autofree char *want = g_strdup_printf ("group [node.N], key '%s': '%s' must be %s",
                                                 rows[i].key, rows[i].bad[j], rows[i].words);
        ASSERT_CONTAINS (m, want);
      }
}

/* Several nodes need a network: the message names the key and what is missing. */
static void
test_multi_node_needs_nics (void)
{
  g_autofree char *m = parse_error ("[cluster]\ngpu = A100-80GB-SXM\nnodes = 4\n", G_KEY_FILE_ERROR,
                                    G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m, "group [cluster], key 'nodes': nodes = 4 needs nics_per_node and "
                      "nic_bandwidth");
  /* NICs without a bandwidth fail validation. */
  g_autofree char *m2 = parse_error ("[cluster]\ngpu = A100-80GB-SXM\nnics_per_node = 1\n",
                                     G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (m2, "nic_bandwidth");
  /* With both, four nodes are fine. */
  Parsed p = parse_ok ("[cluster]\ngpu = A100-80GB-SXM\nnodes = 4\nnics_per_node = 1\n"
                       "nic_bandwidth = 100 Gbit/s\n");
  CU_ASSERT_EQUAL (p.n_nodes, 4);
  hw_node_spec_clear (&p.node);
}

static void
test_node_and_gpu_rules (void)
{
  g_autofree char *both = parse_error ("[cluster]\nnode = DGX-A100\ngpu = H100-SXM\n",
                                       G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (both, "not both");
  g_autofree char *none
      = parse_error ("[cluster]\nnodes = 1\n", G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (none, "'node' or 'gpu' is required");
  g_autofree char *unknown = parse_error ("[cluster]\nnode = DGX-H10\n", G_KEY_FILE_ERROR,
                                          G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (unknown, "group [cluster], key 'node': unknown node 'DGX-H10'");
  g_autofree char *nogpu = parse_error ("[cluster]\nnode = N\n[node.N]\ngpus_per_node = 2\n",
                                        G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND);
  ASSERT_CONTAINS (nogpu, "group [node.N]: key 'gpu' is required");
  /* NVSwitch with a GPU without NVLink cannot connect several GPUs. */
  g_autofree char *nvs = parse_error ("[cluster]\ngpu = RTX-4090\ngpus_per_node = 2\n"
                                      "intra_node = nvswitch\n",
                                      G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (nvs, "nvlink_bandwidth");
  /* ... named by the group and key the user wrote, never by the internal node 'custom' a
   * [cluster] gpu key builds; in a [node.NAME] group too, and the figure itself when given */
  ASSERT_CONTAINS (nvs, "group [cluster], key 'intra_node': nvlink_bandwidth is 0");
  ASSERT_CONTAINS (nvs, "GPU RTX-4090 has no NVLink figure");
  CU_ASSERT_PTR_NULL (strstr (nvs, "custom"));
  g_autofree char *nvs_node = parse_error ("[cluster]\nnode = N\n[node.N]\ngpu = RTX-4090\n"
                                           "gpus_per_node = 2\nintra_node = nvswitch\n",
                                           G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (nvs_node, "group [node.N], key 'intra_node': nvlink_bandwidth is 0");
  g_autofree char *nvs_key = parse_error ("[cluster]\nnode = N\n[node.N]\nbase = DGX-A100\n"
                                          "nvlink_bandwidth = 0 GB/s\n",
                                          G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  ASSERT_CONTAINS (nvs_key, "group [node.N], key 'nvlink_bandwidth': nvlink_bandwidth is 0");
  /* the A100 has NVLink: the 0 is the group's, not a missing figure of the GPU */
  ASSERT_CONTAINS (nvs_key, "0 means no NVLink, and NVSwitch joins the GPUs over NVLink: give "
                            "a rate, GPU A100-80GB-SXM has 300 GB/s, or use intra_node = pcie");
  CU_ASSERT_PTR_NULL (strstr (nvs_key, "has no NVLink figure"));
  CU_ASSERT_PTR_NULL (strstr (nvs_key, "node '"));
  g_autofree char *missing
      = parse_error ("[model]\nx = 1\n", G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND);
  ASSERT_CONTAINS (missing, "cluster");
}

static void
test_key_lists (void)
{
  const char *const *ck = hw_cluster_spec_keys ();
  CU_ASSERT_EQUAL (g_strv_length ((char **) ck), 18); /* 12 + host CPU and NVMe figures */
  CU_ASSERT_TRUE (g_strv_contains (ck, "nodes_per_pod"));
  CU_ASSERT_TRUE (g_strv_contains (ck, "pod_oversubscription"));
  CU_ASSERT_TRUE (g_strv_contains (ck, "nvme_drives"));
  CU_ASSERT_TRUE (g_strv_contains (ck, "spine_oversubscription"));
  CU_ASSERT_TRUE (g_strv_contains (ck, "node"));
  CU_ASSERT_FALSE (g_strv_contains (ck, "base"));
  const char *const *nk = hw_node_spec_keys ();
  CU_ASSERT_TRUE (g_strv_contains (nk, "base"));
  CU_ASSERT_TRUE (g_strv_contains (nk, "link_efficiency"));
  CU_ASSERT_FALSE (g_strv_contains (nk, "nodes"));
}

static const StepsimTest tests[] = {
  { "catalog nodes validate, cite sources, are found", test_catalog_nodes_valid },
  { "unknown catalog node names the nearest", test_catalog_unknown_node },
  { "catalog nodes: datasheet figures and calibration", test_catalog_datasheet_figures },
  { "[cluster] with a bare GPU: defaults", test_cluster_bare_gpu },
  { "[cluster]: every key with units", test_cluster_every_key },
  { "[cluster]: catalog node + overrides", test_cluster_node_overrides },
  { "[node.NAME] with base or bare GPU", test_custom_node_groups },
  { "unknown key names group, key and hint", test_unknown_key_hint },
  { "strict units, counts, ranges, enums, bools", test_strict_values },
  { "node figures: each range stated as read, edges where reading turns", test_figure_ranges },
  { "nodes > 1 without NICs is an error", test_multi_node_needs_nics },
  { "node xor gpu; unknown node; gpu-less node", test_node_and_gpu_rules },
  { "key lists for the schema check", test_key_lists },
  { "pods: nodes_per_pod, pod_oversubscription and their errors", test_cluster_pods },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("hardware/cluster_spec", tests);
}
