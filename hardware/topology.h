/* hardware/topology.h — the links of a cluster as fluid resources, and routes over them.
 *
 * Every link direction is its own SimFluid resource (DESIGN §5), so traffic in one direction
 * never slows the other. Resources, by name (r: global rank, n: node, s: PCIe switch of the
 * node, i: NIC of the node):
 *   gpu<r>.compute, gpu<r>.hbm          kernels (hardware/cluster.h)
 *   gpu<r>.pcie.h2d, gpu<r>.pcie.d2h    GPU ↔ its PCIe switch (or root complex), B/s =
 *                                       gpu->pcie_bandwidth
 *   gpu<r>.nvlink.tx, gpu<r>.nvlink.rx  NVSwitch nodes with > 1 GPU: GPU ↔ the switch,
 *                                       nvlink_bandwidth × link_efficiency; the switch itself
 *                                       is non-blocking (NVIDIA NVSwitch whitepaper)
 *   node<n>.pcie_sw<s>.up / .down       PCIe switch → host / host → switch, pcie_switch_uplink
 *                                       (only when gpus_per_pcie_switch > 0 and the uplink > 0)
 *   node<n>.nic<i>.tx / .rx             nic_bandwidth × link_efficiency (multi-node only)
 *   node<n>.spine.up / .down            leaf → spine / spine → leaf of the node's leaf switch,
 *                                       n_nics × nic_bandwidth × link_efficiency /
 *                                       spine_oversubscription (multi-node only)
 *   pod<p>.core.up / .down              a pod's spines → the core (super-spine) / back, with
 *                                       pods of nodes_per_pod consecutive nodes (only when
 *                                       there are >= 2 pods): nodes_per_pod × n_nics ×
 *                                       nic_bandwidth × link_efficiency /
 *                                       (spine_oversubscription × pod_oversubscription)
 *   node<n>.cpu                         host CPU, cpu_cores × cpu_adam_rate parameters/s
 *                                       (only when both > 0)
 *   node<n>.nvme.read / .write          the node's NVMe drives, nvme_drives × the per-drive
 *                                       read / write bandwidth (only with nvme_drives > 0)
 *   node<n>.nvme.total                  their combined traffic, nvme_drives × read bandwidth
 *                                       (assumption: mixed read/write load does not exceed a
 *                                       drive's sequential-read peak)
 * Routes (ordered resource lists; a flow uses each with weight 1, so it shares every
 * direction it crosses with all other traffic, max-min):
 *   same node, NVSwitch: g.nvlink.tx, h.nvlink.rx; latency intra_latency.
 *   same node, PCIe: g.pcie.d2h, [sw(g).up, sw(h).down when the switches differ and have an
 *     uplink], h.pcie.h2d; latency intra_latency. Consumer GPUs without P2P stage through host
 *     memory, which crosses the same directions, so the route holds for them too.
 *   other node: g.pcie.d2h (GPUDirect RDMA: the GPU → NIC hop is on g's PCIe link), [g's
 *     switch uplink to the NIC's switch if they differ], NIC tx, spine up of g's node, [core
 *     up of g's pod, core down of h's pod when the pods differ], spine down of h's node, NIC
 *     rx, [uplink hop on h's side], h.pcie.h2d; latency inter_latency (the same across pods:
 *     the node's inter-node α stands for the whole network, and the two more switch hops,
 *     under a microsecond, are not modelled apart).
 * NIC choice: rail-optimised nodes (DGX SuperPOD reference architecture) use NIC
 * local index mod n_nics; otherwise a NIC on the GPU's own PCIe switch (NIC j sits on switch
 * ⌊j · n_switches / n_nics⌋), round-robin among that switch's NICs.
 * Units: B/s capacities, s latencies. Invariant: resource ids are created in a fixed order
 * (per GPU, then per node, then the host CPU and NVMe of every node, then per pod), so the
 * same cluster gives the same ids (determinism, DESIGN §6), and a one-pod cluster the ids it
 * had before pods existed.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "hardware/rank_shift.h"
#include "sim/fluid.h"

/* The longest route: d2h, 2 uplink hops, NIC tx, spine up, core up, core down, spine down,
 * NIC rx, 2 uplink hops, h2d. */
#define HW_ROUTE_MAX 12

typedef enum
{
  HW_GPU_COMPUTE,
  HW_GPU_HBM,
  HW_GPU_PCIE_H2D,
  HW_GPU_PCIE_D2H,
  HW_GPU_NVLINK_TX, /* absent (G_MAXUINT) on nodes without NVSwitch routes */
  HW_GPU_NVLINK_RX,
  HW_N_GPU_RESOURCES
} HwGpuResource;

typedef enum
{
  HW_NODE_CPU,        /* absent (G_MAXUINT) without cpu_cores and cpu_adam_rate */
  HW_NODE_NVME_READ,  /* absent without NVMe drives, as the two below */
  HW_NODE_NVME_WRITE,
  HW_NODE_NVME_TOTAL,
  HW_N_NODE_RESOURCES
} HwNodeResource;

/* Creates every resource of `n_nodes` nodes of `node` behind `fabric` on `fluid` (all
 * borrowed; `node` and `fluid` must outlive the topology). node->n_gpus >= 1; n_nodes > 1
 * needs n_nics >= 1 and nic_bandwidth > 0; fabric->nodes_per_pod is 0 (one pod) or divides
 * n_nodes (API misuse otherwise: NULL). An NVSwitch node
 * whose nvlink_bandwidth is 0 routes GPU-to-GPU traffic over PCIe. */
HwTopology *hw_topology_new (const HwNodeSpec *node, guint n_nodes, const HwFabricSpec *fabric,
                             SimFluid *fluid);
void hw_topology_free (HwTopology *topo); /* NULL is a no-op */

guint hw_topology_n_ranks (const HwTopology *topo);
guint hw_topology_node_of (const HwTopology *topo, guint rank);

/* A GPU's resource `what`; G_MAXUINT when the node has none of that kind. */
SimResourceId hw_topology_gpu_resource (const HwTopology *topo, guint rank, HwGpuResource what);

/* A node's host resource `what`; G_MAXUINT when the node has none. */
SimResourceId hw_topology_node_resource (const HwTopology *topo, guint node, HwNodeResource what);

/* The route from rank `src` to rank `dst` (distinct, < n_ranks): writes up to HW_ROUTE_MAX
 * resource ids into `out` in path order, the flow's start latency (s) into *latency (may be
 * NULL), and returns how many ids were written (>= 2). */
guint hw_topology_route (const HwTopology *topo, guint src, guint dst,
                         SimResourceId out[HW_ROUTE_MAX], double *latency);

/* The route of a host copy of `rank` in direction `dir`: the GPU's PCIe direction and, behind a
 * PCIe switch with an uplink, the uplink direction. Returns the number of ids (1 or 2). */
guint hw_topology_host_route (const HwTopology *topo, guint rank, HwCopyDirection dir,
                              SimResourceId out[HW_ROUTE_MAX]);

/* The NIC index (< n_nics) rank `rank` sends and receives inter-node traffic through;
 * G_MAXUINT on a node without NICs. */
guint hw_topology_nic_of (const HwTopology *topo, guint rank);

/* Translation symmetry of the topology (rank classes, models/plan/rank_classes.h): whether
 * the plain rank shift σ (hardware/rank_shift.h: d places forward inside blocks of `block`
 * ranks) maps the topology onto itself, and if so the resource permutation it induces, written
 * into `perm` (sim_fluid_n_resources entries): perm[u] is the resource u becomes, with
 * hw_topology_route (σr, σq) equal to perm applied to hw_topology_route (r, q) for every
 * pair, and the same for host routes and every GPU, node and pod resource. Either d and the
 * block are whole nodes (the nodes of a block permute) and, with several pods, d and the
 * block whole pods or the block inside one pod (pods map onto pods), or the block divides a
 * node's GPUs
 * (the local index rotates inside its block, in every node alike): behind PCIe switches d
 * and the block whole switches, and the GPUs using one NIC must move to the GPUs of one NIC
 * on the image switch. FALSE (perm untouched) otherwise, or when the shift is not valid for
 * the topology's rank count. */
gboolean hw_topology_shift_map (const HwTopology *topo, const HwRankShift *shift,
                                SimResourceId *perm);
/* The conditions on the shift alone that hw_topology_shift_map asks before building the
 * permutation (whole nodes mapping pods onto pods, or blocks inside a node fitting its PCIe
 * switches); the NIC map
 * is checked there. FALSE for a shift that is not plain. */
gboolean hw_topology_shift_valid (const HwTopology *topo, const HwRankShift *shift);

/* Declares that no host copy (hw_topology_host_route: offload, paged states) will run on
 * this topology; asking a host route afterwards is API misuse (0 hops). With NVLink inside
 * nodes and each GPU's NIC on its own PCIe switch no route then crosses a switch uplink, and
 * hw_topology_shift_map lets shifts rotate GPUs across switches (the idle switch links stay
 * put). */
void hw_topology_set_no_host_copies (HwTopology *topo);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (HwTopology, hw_topology_free)
