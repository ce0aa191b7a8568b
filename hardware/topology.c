/* hardware/topology.c — links of a cluster as fluid resources, and routes; see topology.h.
 *
 * Invariants: every id in gpus[], nodes[] and pods[] is a resource of `fluid`, or G_MAXUINT
 * where the node has no such link (documented per field); pods[] exists only with >= 2 pods
 * and a route never holds G_MAXUINT. Units: B/s.
 * References: NVIDIA DGX A100 / H100 user guides (PCIe switch, NIC and rail layout), NVIDIA
 * DGX SuperPOD reference architecture (rail-optimised leaf–spine fabric inside a scalable
 * unit of 32 nodes, core switches between units: the pods), NVIDIA GPUDirect RDMA
 * documentation (GPU → NIC through the shared PCIe switch).
 */
#include "config.h"
#include "hardware/topology.h"

#define NONE G_MAXUINT

typedef struct
{
  SimResourceId id[HW_N_GPU_RESOURCES];
} GpuLinks;

typedef struct
{
  SimResourceId *sw_up;   /* n_switches, or NULL without uplinks */
  SimResourceId *sw_down; /* host → switch */
  SimResourceId *nic_tx;  /* n_nics, or NULL on a single-node cluster */
  SimResourceId *nic_rx;
  SimResourceId spine_up; /* NONE on a single-node cluster */
  SimResourceId spine_down;
  SimResourceId host[HW_N_NODE_RESOURCES]; /* CPU and NVMe, NONE where absent */
} NodeLinks;

typedef struct
{
  SimResourceId core_up;   /* the pod's spine → core links */
  SimResourceId core_down; /* core → the pod's spines */
} PodLinks;

typedef struct _Names Names; /* the resources' names (below) */

struct _HwTopology
{
  SimFluid *fluid;
  guint n_nodes;
  guint n_gpus;         /* per node */
  guint per_switch;     /* GPUs per PCIe switch; 0: each GPU alone, no switch links */
  guint n_switches;     /* per node, >= 1 */
  guint n_nics;         /* per node */
  gboolean nvswitch;    /* GPU-to-GPU traffic inside a node over NVLink */
  gboolean rail;        /* rail-optimised NIC choice */
  double intra_latency; /* s */
  double inter_latency; /* s */
  GpuLinks *gpus;       /* n_nodes × n_gpus */
  NodeLinks *nodes;     /* n_nodes */
  guint nodes_per_pod;  /* divides n_nodes; n_nodes: one pod, no core links */
  guint n_pods;         /* n_nodes / nodes_per_pod */
  PodLinks *pods;       /* n_pods when n_pods > 1, else NULL */
  Names *names;         /* the resources' tags; the fluid owns them once built */
  gboolean no_host;     /* no host copy will run (hw_topology_set_no_host_copies) */
  gboolean idle_sw;     /* no route crosses a PCIe switch uplink (set with no_host) */
};

/* ---- resources and their names ------------------------------------------------------------
 *
 * A cluster of 131,072 GPUs has about a million resources, and a run asks a few of their
 * names (link-load series). Each resource is added unnamed with a tag (what it is, the GPU
 * rank or node, the switch or NIC), and the fluid names it from the tag on demand
 * (sim_fluid_set_namer): "gpu3.hbm", "node1.nic2.tx", … */
typedef enum
{
  RES_GPU_COMPUTE, RES_GPU_HBM, RES_GPU_H2D, RES_GPU_D2H, RES_GPU_NVLINK_TX, RES_GPU_NVLINK_RX,
  RES_SW_UP, RES_SW_DOWN, RES_NIC_TX, RES_NIC_RX, RES_SPINE_UP, RES_SPINE_DOWN, RES_CPU,
  RES_NVME_READ, RES_NVME_WRITE, RES_NVME_TOTAL, RES_CORE_UP, RES_CORE_DOWN
} ResKind;

typedef struct
{
  guint32 index; /* GPU rank, node, or pod */
  guint16 sub;   /* PCIe switch or NIC of the node */
  guint8 kind;   /* ResKind */
} ResTag;

struct _Names
{
  SimResourceId base; /* the first resource the topology added */
  GArray *tags;       /* ResTag, resource base + i at i */
};

static void
names_free (gpointer data)
{
  Names *n = data;
  g_array_unref (n->tags);
  g_free (n);
}

static char *
name_resource (SimResourceId id, gconstpointer data)
{
  const Names *n = data;
  g_return_val_if_fail (id >= n->base && id - n->base < n->tags->len, g_strdup ("?"));
  const ResTag *t = &g_array_index (n->tags, ResTag, id - n->base);
  guint i = t->index, k = t->sub;
  switch ((ResKind) t->kind)
    {
    case RES_GPU_COMPUTE: return g_strdup_printf ("gpu%u.compute", i);
    case RES_GPU_HBM: return g_strdup_printf ("gpu%u.hbm", i);
    case RES_GPU_H2D: return g_strdup_printf ("gpu%u.pcie.h2d", i);
    case RES_GPU_D2H: return g_strdup_printf ("gpu%u.pcie.d2h", i);
    case RES_GPU_NVLINK_TX: return g_strdup_printf ("gpu%u.nvlink.tx", i);
    case RES_GPU_NVLINK_RX: return g_strdup_printf ("gpu%u.nvlink.rx", i);
    case RES_SW_UP: return g_strdup_printf ("node%u.pcie_sw%u.up", i, k);
    case RES_SW_DOWN: return g_strdup_printf ("node%u.pcie_sw%u.down", i, k);
    case RES_NIC_TX: return g_strdup_printf ("node%u.nic%u.tx", i, k);
    case RES_NIC_RX: return g_strdup_printf ("node%u.nic%u.rx", i, k);
    case RES_SPINE_UP: return g_strdup_printf ("node%u.spine.up", i);
    case RES_SPINE_DOWN: return g_strdup_printf ("node%u.spine.down", i);
    case RES_CPU: return g_strdup_printf ("node%u.cpu", i);
    case RES_NVME_READ: return g_strdup_printf ("node%u.nvme.read", i);
    case RES_NVME_WRITE: return g_strdup_printf ("node%u.nvme.write", i);
    case RES_NVME_TOTAL: return g_strdup_printf ("node%u.nvme.total", i);
    case RES_CORE_UP: return g_strdup_printf ("pod%u.core.up", i);
    case RES_CORE_DOWN: return g_strdup_printf ("pod%u.core.down", i);
    }
  g_return_val_if_reached (g_strdup ("?"));
}

/* Adds resource `kind` of GPU rank, node or pod `index` (`sub`: its switch or NIC). */
static SimResourceId
add (HwTopology *t, double capacity, ResKind kind, guint index, guint sub)
{
  SimResourceId id = sim_fluid_add_resource_unnamed (t->fluid, capacity);
  ResTag tag = { index, (guint16) sub, (guint8) kind };
  g_assert (id == t->names->base + t->names->tags->len && sub <= G_MAXUINT16);
  g_array_append_val (t->names->tags, tag);
  return id;
}

static double
link_efficiency (const HwNodeSpec *node)
{
  return node->link_efficiency > 0 ? node->link_efficiency : 1.0;
}

static void
add_gpu_links (HwTopology *t, const HwNodeSpec *node, guint rank)
{
  const HwGpuSpec *g = node->gpu;
  GpuLinks *l = &t->gpus[rank];
  l->id[HW_GPU_COMPUTE] = add (t, 1.0, RES_GPU_COMPUTE, rank, 0);
  l->id[HW_GPU_HBM]
      = add (t, g->hbm_bandwidth * g->hbm_efficiency, RES_GPU_HBM, rank, 0);
  l->id[HW_GPU_PCIE_H2D]
      = add (t, g->pcie_bandwidth, RES_GPU_H2D, rank, 0);
  l->id[HW_GPU_PCIE_D2H]
      = add (t, g->pcie_bandwidth, RES_GPU_D2H, rank, 0);
  l->id[HW_GPU_NVLINK_TX] = l->id[HW_GPU_NVLINK_RX] = NONE;
  if (t->nvswitch)
    {
      double b = node->nvlink_bandwidth * link_efficiency (node);
      l->id[HW_GPU_NVLINK_TX] = add (t, b, RES_GPU_NVLINK_TX, rank, 0);
      l->id[HW_GPU_NVLINK_RX] = add (t, b, RES_GPU_NVLINK_RX, rank, 0);
    }
}

static void
add_node_links (HwTopology *t, const HwNodeSpec *node, const HwFabricSpec *fabric, guint n)
{
  NodeLinks *l = &t->nodes[n];
  l->spine_up = l->spine_down = NONE;
  if (t->per_switch > 0 && node->pcie_switch_uplink > 0)
    {
      l->sw_up = g_new (SimResourceId, t->n_switches);
      l->sw_down = g_new (SimResourceId, t->n_switches);
      for (guint s = 0; s < t->n_switches; s++)
        {
          l->sw_up[s] = add (t, node->pcie_switch_uplink, RES_SW_UP, n, s);
          l->sw_down[s] = add (t, node->pcie_switch_uplink, RES_SW_DOWN, n, s);
        }
    }
  if (t->n_nodes == 1)
    return;
  double nic = node->nic_bandwidth * link_efficiency (node);
  l->nic_tx = g_new (SimResourceId, t->n_nics);
  l->nic_rx = g_new (SimResourceId, t->n_nics);
  for (guint i = 0; i < t->n_nics; i++)
    {
      l->nic_tx[i] = add (t, nic, RES_NIC_TX, n, i);
      l->nic_rx[i] = add (t, nic, RES_NIC_RX, n, i);
    }
  /* Leaf–spine: the node's leaf switch has n_nics × nic of downlinks and 1/oversubscription
   * of that towards the spine (a 2:1 oversubscribed leaf has half the uplink capacity). */
  double spine = t->n_nics * nic / MAX (1.0, fabric->spine_oversubscription);
  l->spine_up = add (t, spine, RES_SPINE_UP, n, 0);
  l->spine_down = add (t, spine, RES_SPINE_DOWN, n, 0);
}

/* Host CPU and NVMe drives of node n (ZeRO-Offload / ZeRO-Infinity resources). */
static void
add_host_resources (HwTopology *t, const HwNodeSpec *node, guint n)
{
  NodeLinks *l = &t->nodes[n];
  for (guint i = 0; i < HW_N_NODE_RESOURCES; i++)
    l->host[i] = NONE;
  if (node->cpu_cores > 0 && node->cpu_adam_rate > 0)
    l->host[HW_NODE_CPU] = add (t, node->cpu_cores * node->cpu_adam_rate, RES_CPU, n, 0);
  if (node->nvme_drives == 0)
    return;
  double d = node->nvme_drives;
  l->host[HW_NODE_NVME_READ] = add (t, d * node->nvme_read_bandwidth, RES_NVME_READ, n, 0);
  l->host[HW_NODE_NVME_WRITE] = add (t, d * node->nvme_write_bandwidth, RES_NVME_WRITE, n, 0);
  l->host[HW_NODE_NVME_TOTAL] = add (t, d * node->nvme_read_bandwidth, RES_NVME_TOTAL, n, 0);
}

/* The core links of every pod, when there are several: a pod's spine switches have the
 * uplinks of its nodes' leaves (nodes_per_pod × the node's spine link) and 1 /
 * pod_oversubscription of that towards the core. Added after every node's resources, so a
 * one-pod cluster has the ids it had before pods existed. */
static void
add_pod_links (HwTopology *t, const HwNodeSpec *node, const HwFabricSpec *fabric)
{
  if (t->n_pods <= 1)
    return;
  double nic = node->nic_bandwidth * link_efficiency (node);
  double core = t->nodes_per_pod * t->n_nics * nic / MAX (1.0, fabric->spine_oversubscription)
                / MAX (1.0, fabric->pod_oversubscription);
  t->pods = g_new (PodLinks, t->n_pods);
  for (guint p = 0; p < t->n_pods; p++)
    {
      t->pods[p].core_up = add (t, core, RES_CORE_UP, p, 0);
      t->pods[p].core_down = add (t, core, RES_CORE_DOWN, p, 0);
    }
}

HwTopology *
hw_topology_new (const HwNodeSpec *node, guint n_nodes, const HwFabricSpec *fabric, SimFluid *fluid)
{
  g_return_val_if_fail (node != NULL && node->gpu != NULL && node->n_gpus > 0, NULL);
  g_return_val_if_fail (n_nodes > 0 && fabric != NULL && fluid != NULL, NULL);
  g_return_val_if_fail (n_nodes == 1 || (node->n_nics > 0 && node->nic_bandwidth > 0), NULL);
  g_return_val_if_fail (fabric->nodes_per_pod == 0 || n_nodes % fabric->nodes_per_pod == 0
                            || n_nodes <= fabric->nodes_per_pod,
                        NULL);
  HwTopology *t = g_new0 (HwTopology, 1);
  t->fluid = fluid;
  t->n_nodes = n_nodes;
  t->n_gpus = node->n_gpus;
  t->per_switch = node->gpus_per_pcie_switch;
  t->n_switches = t->per_switch > 0 ? (t->n_gpus + t->per_switch - 1) / t->per_switch : 1;
  t->n_nics = node->n_nics;
  t->nvswitch = node->intra == HW_INTRA_NVSWITCH && node->nvlink_bandwidth > 0 && t->n_gpus > 1;
  t->rail = node->rail_optimized;
  t->intra_latency = node->intra_latency;
  t->inter_latency = node->inter_latency;
  t->gpus = g_new0 (GpuLinks, (gsize) n_nodes * t->n_gpus);
  t->nodes = g_new0 (NodeLinks, n_nodes);
  /* 0, or a pod at least as large as the cluster: one pod of every node */
  t->nodes_per_pod = fabric->nodes_per_pod > 0 ? MIN (fabric->nodes_per_pod, n_nodes) : n_nodes;
  t->n_pods = n_nodes / t->nodes_per_pod;
  t->names = g_new0 (Names, 1);
  t->names->base = sim_fluid_n_resources (fluid);
  t->names->tags = g_array_new (FALSE, FALSE, sizeof (ResTag));
  sim_fluid_set_namer (fluid, name_resource, t->names, names_free); /* the fluid owns them */
  for (guint r = 0; r < n_nodes * t->n_gpus; r++)
    add_gpu_links (t, node, r);
  for (guint n = 0; n < n_nodes; n++)
    add_node_links (t, node, fabric, n);
  for (guint n = 0; n < n_nodes; n++)
    add_host_resources (t, node, n);
  add_pod_links (t, node, fabric);
  return t;
}

void
hw_topology_free (HwTopology *topo)
{
  if (topo == NULL)
    return;
  for (guint n = 0; n < topo->n_nodes; n++)
    {
      g_free (topo->nodes[n].sw_up);
      g_free (topo->nodes[n].sw_down);
      g_free (topo->nodes[n].nic_tx);
      g_free (topo->nodes[n].nic_rx);
    }
  g_free (topo->nodes);
  g_free (topo->pods);
  g_free (topo->gpus);
  g_free (topo);
}

guint
hw_topology_n_ranks (const HwTopology *topo)
{
  return topo->n_nodes * topo->n_gpus;
}

guint
hw_topology_node_of (const HwTopology *topo, guint rank)
{
  g_return_val_if_fail (rank < hw_topology_n_ranks (topo), 0);
  return rank / topo->n_gpus;
}

SimResourceId
hw_topology_gpu_resource (const HwTopology *topo, guint rank, HwGpuResource what)
{
  g_return_val_if_fail (rank < hw_topology_n_ranks (topo) && what < HW_N_GPU_RESOURCES, NONE);
  return topo->gpus[rank].id[what];
}

SimResourceId
hw_topology_node_resource (const HwTopology *topo, guint node, HwNodeResource what)
{
  g_return_val_if_fail (node < topo->n_nodes && what < HW_N_NODE_RESOURCES, NONE);
  return topo->nodes[node].host[what];
}

/* PCIe switch of local GPU index `local` (0 when GPUs sit alone on the root complex). */
static guint
switch_of_gpu (const HwTopology *t, guint local)
{
  return t->per_switch > 0 ? local / t->per_switch : 0;
}

/* NICs are spread evenly over the switches: NIC j sits on switch ⌊j · n_switches / n_nics⌋. */
static guint
switch_of_nic (const HwTopology *t, guint nic)
{
  return (guint) (((guint64) nic * t->n_switches) / t->n_nics);
}

guint
hw_topology_nic_of (const HwTopology *topo, guint rank)
{
  g_return_val_if_fail (rank < hw_topology_n_ranks (topo), NONE);
  if (topo->n_nics == 0)
    return NONE;
  guint local = rank % topo->n_gpus;
  if (topo->rail || topo->per_switch == 0)
    return local % topo->n_nics;
  /* The NICs on this GPU's switch, round-robin by the GPU's index on the switch; a switch
   * without a NIC uses the NIC placed nearest below it. */
  guint sw = switch_of_gpu (topo, local), first = NONE, count = 0;
  for (guint j = 0; j < topo->n_nics; j++)
    if (switch_of_nic (topo, j) == sw)
      {
        first = MIN (first, j);
        count++;
      }
  if (count == 0)
    return (guint) (((guint64) sw * topo->n_nics) / topo->n_switches);
  return first + (local % topo->per_switch) % count;
}

/* Appends the uplink hops between switches `from` and `to` of node `n`, if they differ and
 * the node has uplinks: up from `from` to the host, down from the host to `to`. */
static guint
add_uplink_hops (const HwTopology *t, guint n, guint from, guint to, SimResourceId *out, guint k)
{
  const NodeLinks *l = &t->nodes[n];
  if (from == to || l->sw_up == NULL)
    return k;
  out[k++] = l->sw_up[from];
  out[k++] = l->sw_down[to];
  return k;
}

guint
hw_topology_route (const HwTopology *topo, guint src, guint dst, SimResourceId out[HW_ROUTE_MAX],
                   double *latency)
{
  guint n_ranks = hw_topology_n_ranks (topo);
  g_return_val_if_fail (src < n_ranks && dst < n_ranks && src != dst, 0);
  const HwTopology *t = topo;
  guint ns = src / t->n_gpus, nd = dst / t->n_gpus;
  guint ls = src % t->n_gpus, ld = dst % t->n_gpus;
  guint k = 0;
  if (ns == nd && t->nvswitch)
    {
      out[k++] = t->gpus[src].id[HW_GPU_NVLINK_TX];
      out[k++] = t->gpus[dst].id[HW_GPU_NVLINK_RX];
    }
  else if (ns == nd)
    {
      out[k++] = t->gpus[src].id[HW_GPU_PCIE_D2H];
      k = add_uplink_hops (t, ns, switch_of_gpu (t, ls), switch_of_gpu (t, ld), out, k);
      out[k++] = t->gpus[dst].id[HW_GPU_PCIE_H2D];
    }
  else
    {
      guint nic_s = hw_topology_nic_of (t, src), nic_d = hw_topology_nic_of (t, dst);
      out[k++] = t->gpus[src].id[HW_GPU_PCIE_D2H];
      k = add_uplink_hops (t, ns, switch_of_gpu (t, ls), switch_of_nic (t, nic_s), out, k);
      out[k++] = t->nodes[ns].nic_tx[nic_s];
      out[k++] = t->nodes[ns].spine_up;
      if (ns / t->nodes_per_pod != nd / t->nodes_per_pod)
        {
          out[k++] = t->pods[ns / t->nodes_per_pod].core_up;
          out[k++] = t->pods[nd / t->nodes_per_pod].core_down;
        }
      out[k++] = t->nodes[nd].spine_down;
      out[k++] = t->nodes[nd].nic_rx[nic_d];
      k = add_uplink_hops (t, nd, switch_of_nic (t, nic_d), switch_of_gpu (t, ld), out, k);
      out[k++] = t->gpus[dst].id[HW_GPU_PCIE_H2D];
    }
  g_assert (k <= HW_ROUTE_MAX);
  if (latency != NULL)
    *latency = ns == nd ? t->intra_latency : t->inter_latency;
  return k;
}

guint
hw_topology_host_route (const HwTopology *topo, guint rank, HwCopyDirection dir,
                        SimResourceId out[HW_ROUTE_MAX])
{
  g_return_val_if_fail (rank < hw_topology_n_ranks (topo), 0);
  g_return_val_if_fail (!topo->no_host, 0); /* declared: no host copy runs */
  const NodeLinks *l = &topo->nodes[rank / topo->n_gpus];
  guint sw = switch_of_gpu (topo, rank % topo->n_gpus);
  gboolean h2d = dir == HW_COPY_H2D;
  guint k = 0;
  out[k++] = topo->gpus[rank].id[h2d ? HW_GPU_PCIE_H2D : HW_GPU_PCIE_D2H];
  if (l->sw_up != NULL)
    out[k++] = h2d ? l->sw_down[sw] : l->sw_up[sw];
  return k;
}

/* ---- translation symmetry (rank classes) ---------------------------------------------------
 *
 * A shift σ (hardware/rank_shift.h) is an automorphism of the topology in two cases.
 * Whole nodes: d and the block whole nodes. Every node is the same and inside a pod the
 * leaf–spine fabric treats every pair of nodes alike (node<n>.spine.up / .down per node), so
 * with one pod any permutation of the nodes is an automorphism: node a's resources map onto
 * those of the node holding σ(a's first rank), local indices, NICs and PCIe switches kept.
 * With several pods a route between pods also crosses pod<p>.core.up / .down, so the
 * permutation must map pods onto pods: either d and the block are whole pods (pod p goes to
 * the pod of σ(p's first rank)), or the block lies inside one pod (it divides a pod's ranks:
 * every pod maps onto itself and its core links stay put). A block of 3 nodes in pods of 2,
 * or a shift by half a pod inside blocks of two pods, would move a same-pod pair of nodes
 * onto a cross-pod pair and is no automorphism.
 * Inside each node: blocks of a node's ranks (the block divides the GPUs per node; on one
 * node every shift is of this kind). Rotating the local index by d inside each block maps
 * NVSwitch ports onto each other (the switch is non-blocking), PCIe switch k onto the switch
 * holding σ(k's first GPU) when d and the block are whole switches (or onto itself when the
 * block lies inside one switch), and NIC j onto the NIC
 * of the image of the GPUs using j (hw_topology_nic_of): that must be one NIC on the image
 * switch, the same for every GPU using j, and one-to-one; the node's spine links, CPU and
 * NVMe stay put. */
/* Declared without host copies, no route can cross a PCIe switch uplink when GPU-to-GPU
 * traffic in a node goes over NVLink and every GPU's NIC sits on its own switch
 * (hw_topology_route's uplink hops then never happen). Such switches carry nothing, and a
 * shift need not keep them whole. */
void
hw_topology_set_no_host_copies (HwTopology *topo)
{
  g_return_if_fail (topo != NULL);
  topo->no_host = TRUE;
  topo->idle_sw = topo->nvswitch;
  for (guint l = 0; topo->n_nodes > 1 && topo->per_switch > 0 && l < topo->n_gpus; l++)
    if (switch_of_nic (topo, hw_topology_nic_of (topo, l)) != switch_of_gpu (topo, l))
      topo->idle_sw = FALSE;
}

gboolean
hw_topology_shift_valid (const HwTopology *t, const HwRankShift *sh)
{
  g_return_val_if_fail (t != NULL && sh != NULL, FALSE);
  if (sh->n != hw_topology_n_ranks (t) || !hw_rank_shift_valid (sh)
      || !hw_rank_shift_is_plain (sh))
    return FALSE;
  guint pod = t->nodes_per_pod * t->n_gpus; /* ranks per pod */
  guint block = sh->level[0].block, d = sh->level[0].d;
  if (block % t->n_gpus == 0 && d % t->n_gpus == 0)
    return (block % pod == 0 && d % pod == 0) /* whole pods */
           || pod % block == 0;                   /* inside one pod (one pod: always) */
  if (t->n_gpus % block != 0)
    return FALSE;
  return t->per_switch == 0 || t->idle_sw
         || t->per_switch % block == 0 /* inside one switch */
         || (d % t->per_switch == 0 && block % t->per_switch == 0
             && t->n_gpus % t->per_switch == 0);
}

/* The local index of σ(node 0's local GPU `local`). */
static guint
local_image (const HwTopology *t, const HwRankShift *sh, guint local)
{
  return hw_rank_shift_image (sh, local) % t->n_gpus;
}

/* The switch holding σ(switch k's first GPU) (per_switch > 0). */
static guint
switch_image (const HwTopology *t, const HwRankShift *sh, guint k)
{
  return switch_of_gpu (t, local_image (t, sh, k * t->per_switch));
}

/* Inside each node: the NIC permutation `nic` (n_nics) the local rotation induces, FALSE
 * when there is none (see above). Whole nodes: the identity. */
static gboolean
nic_map (const HwTopology *t, const HwRankShift *sh, guint *nic)
{
  for (guint j = 0; j < t->n_nics; j++)
    nic[j] = NONE;
  g_autofree guint8 *hit = g_new0 (guint8, MAX (t->n_nics, 1));
  for (guint l = 0; t->n_nodes > 1 && l < t->n_gpus; l++)
    {
      guint a = hw_topology_nic_of (t, l), b = hw_topology_nic_of (t, local_image (t, sh, l));
      if (nic[a] != NONE && nic[a] != b)
        return FALSE;
      if (nic[a] == NONE && hit[b]++)
        return FALSE; /* two NICs onto one */
      nic[a] = b;
      if (t->per_switch > 0 && !t->idle_sw
          && switch_of_nic (t, b) != switch_image (t, sh, switch_of_nic (t, a)))
        return FALSE; /* the NIC must sit on the image of its switch */
    }
  for (guint j = 0; j < t->n_nics; j++) /* NICs no GPU uses stay put */
    if (nic[j] == NONE)
      {
        if (hit[j]++)
          return FALSE;
        nic[j] = j;
      }
  return TRUE;
}

gboolean
hw_topology_shift_map (const HwTopology *topo, const HwRankShift *shift, SimResourceId *perm)
{
  g_return_val_if_fail (topo != NULL && shift != NULL && perm != NULL, FALSE);
  const HwTopology *t = topo;
  if (!hw_topology_shift_valid (t, shift))
    return FALSE;
  g_autofree guint *nic = g_new (guint, MAX (t->n_nics, 1));
  if (!nic_map (t, shift, nic))
    return FALSE;
  guint n = hw_topology_n_ranks (t), nr = sim_fluid_n_resources (t->fluid);
  for (guint i = 0; i < nr; i++)
    perm[i] = i; /* resources outside the topology (none today) stay put */
  for (guint r = 0; r < n; r++)
    for (guint w = 0; w < HW_N_GPU_RESOURCES; w++)
      if (t->gpus[r].id[w] != NONE)
        perm[t->gpus[r].id[w]] = t->gpus[hw_rank_shift_image (shift, r)].id[w];
  for (guint a = 0; a < t->n_nodes; a++)
    {
      guint b = hw_rank_shift_image (shift, a * t->n_gpus) / t->n_gpus;
      const NodeLinks *x = &t->nodes[a], *y = &t->nodes[b];
      for (guint k = 0; x->sw_up != NULL && k < t->n_switches; k++)
        {
          /* switch k's GPUs move to those of the switch of σ(its first GPU) */
          /* idle switches (no route crosses them) stay put */
          guint m = t->per_switch > 0 && !t->idle_sw ? switch_image (t, shift, k) : k;
          perm[x->sw_up[k]] = y->sw_up[m];
          perm[x->sw_down[k]] = y->sw_down[m];
        }
      for (guint k = 0; x->nic_tx != NULL && k < t->n_nics; k++)
        {
          perm[x->nic_tx[k]] = y->nic_tx[nic[k]];
          perm[x->nic_rx[k]] = y->nic_rx[nic[k]];
        }
      if (x->spine_up != NONE)
        {
          perm[x->spine_up] = y->spine_up;
          perm[x->spine_down] = y->spine_down;
        }
      for (guint k = 0; k < HW_N_NODE_RESOURCES; k++)
        if (x->host[k] != NONE)
          perm[x->host[k]] = y->host[k];
    }
  guint pod = t->nodes_per_pod * t->n_gpus;
  for (guint p = 0; t->pods != NULL && p < t->n_pods; p++)
    {
      /* pod p's ranks go to the pod of σ(its first rank) (itself for a block inside a pod) */
      guint q = hw_rank_shift_image (shift, p * pod) / pod;
      perm[t->pods[p].core_up] = t->pods[q].core_up;
      perm[t->pods[p].core_down] = t->pods[q].core_down;
    }
  return TRUE;
}
