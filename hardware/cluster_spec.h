/* hardware/cluster_spec.h — the hardware of a scenario: its [cluster] group and the
 * [node.NAME] / [gpu.NAME] groups it names, parsed strictly into a node spec, a node count
 * and a fabric (DESIGN §7).
 *
 * [cluster] keys: `node` (a catalog node, hardware/node_catalog.h, or a [node.NAME] group of
 * the file) OR `gpu` (a catalog GPU or a [gpu.NAME] group, hardware/catalog.h) with
 * `gpus_per_node` (count >= 1, default 1); the figures `intra_node` (nvswitch | pcie;
 * default nvswitch if the GPU has NVLink, else pcie), `nics_per_node` (count),
 * `nic_bandwidth` ("400 Gbit/s"), `rail_optimized` (bool), `host_memory` ("2 TiB"; default
 * the node's, 512 GiB for a bare GPU); `nodes` (count >= 1, default 1),
 * `spine_oversubscription` (number in [1, 1000], default 1), `nodes_per_pod` (count >= 1
 * dividing `nodes` or at least `nodes`, a cluster inside one pod; default: one pod) and
 * `pod_oversubscription` (number in [1, 1000], default 1: the taper from a pod's spines to
 * the core, hardware/topology.h). Explicit keys override the node's
 * figures (node = DGX-A100 with nic_bandwidth = 100 Gbit/s). A group that names both
 * `node` and `gpu` is an error (change a node's GPU in a [node.NAME] group).
 * [node.NAME] keys: `base` (catalog node to start from; without it `gpu` is required),
 * `description`, `gpu`, `gpus_per_node`, `intra_node`, `nvlink_bandwidth` (default: the
 * GPU's when `gpu` is given), `gpus_per_pcie_switch`, `pcie_switch_uplink` (B/s),
 * `nics_per_node`, `nic_bandwidth`, `rail_optimized`, `host_memory`, `intra_latency`,
 * `inter_latency` ("2 us"), `collective_overhead` ("25 us", once per collective), `collective_tuner` (nccl |
 * aws-ofi-p5en | aws-ofi-p6-b200: who picks auto collectives' algorithm, collective.h),
 * `link_efficiency` (number from 0.1 to 1); host CPU and NVMe, in
 * [node.NAME] and [cluster] alike: `cpu_cores` (count), `cpu_adam_rate` (parameters/s per
 * core, "81 Mparam/s"), `nvme_drives` (count), `nvme_read_bandwidth`,
 * `nvme_write_bandwidth` (per drive, "7 GB/s"), `nvme_capacity` (per drive, "3.84 TB").
 * Errors: G_KEY_FILE_ERROR (GROUP_NOT_FOUND, KEY_NOT_FOUND, INVALID_VALUE: unknown key with
 * the nearest valid one, both node and gpu, a value out of range, nodes > 1 without NICs,
 * nodes not a multiple of nodes_per_pod)
 * or SIM_UNITS_ERROR (a value that does not parse, a missing unit); messages read
 * "group [cluster], key 'nodes': …" (the caller prefixes the file name).
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"

/* Bounds of a cluster: GPUs per node (the largest NVLink domain built, GB200 NVL72), nodes,
 * and GPUs in all (131,072: the largest clusters users plan; what a simulation of them
 * costs is the simulator's to bound, not the cluster description's). */
#define HW_MAX_GPUS_PER_NODE 72
#define HW_MAX_NODES 16384
#define HW_MAX_GPUS 131072
/* Bounds of a node's memory figures (cluster_spec_keys.c, "ranges"): host DRAM at most 1 PiB
 * (a DGX holds 2 TiB), NVMe at most 1 EiB; link and drive rates at most HW_GPU_MAX_BANDWIDTH,
 * latencies at most HW_GPU_MAX_LATENCY (hardware/gpu.h). */
#define HW_NODE_MAX_HOST_MEMORY 1125899906842624.0   /* B, 1 PiB */
#define HW_NODE_MAX_CPU_ADAM_RATE 1e12              /* parameters/s per core, 1000 Gparam/s */
#define HW_NODE_MAX_NVME 1152921504606846976.0       /* B, 1 EiB */

/* Parses the hardware of `kf` (see above). On success fills *node_out (free its members
 * with hw_node_spec_clear()), *n_nodes_out and *fabric_out and returns TRUE; on failure
 * returns FALSE with `error` set and leaves the outputs untouched. */
gboolean hw_cluster_spec_from_keyfile (GKeyFile *kf, HwNodeSpec *node_out, guint *n_nodes_out,
                                       HwFabricSpec *fabric_out, GError **error);

/* Parses the [node.NAME] group `group` of `kf` into *out (same contract as above); the
 * node's name is the part of `group` after "node.". */
gboolean hw_node_spec_from_keyfile (GKeyFile *kf, const char *group, HwNodeSpec *out,
                                    GError **error);

/* Checks a node spec: a valid GPU, n_gpus >= 1, each bandwidth, capacity, latency and
 * power within the range its scenario key takes (cluster_spec_keys.c, "ranges"), NVSwitch
 * with > 1 GPU needs nvlink_bandwidth > 0, NICs need nic_bandwidth > 0, link_efficiency
 * from 0.1 to 1 (or 0: not derated). FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE naming the node and field. */
gboolean hw_node_spec_validate (const HwNodeSpec *spec, GError **error);

/* hw_node_spec_validate for the node a scenario group `group` of `kf` describes: a failed
 * figure is named as the group's key the user wrote, "group [G], key 'K': FIELD is V, must
 * be WHY" (K the figure when the group sets it, else the key it depends on that the group
 * sets: intra_node, gpus_per_node, gpu, …), never by an internal node name such as the
 * "custom" node a [cluster] gpu key builds. */
gboolean hw_node_spec_validate_group (const HwNodeSpec *spec, GKeyFile *kf, const char *group,
                                      GError **error);

/* Checks that `n_nodes` nodes of `node` on `fabric` make a cluster stepsim builds: at most
 * HW_MAX_GPUS GPUs, NICs when there is more than one node, and whole pods (n_nodes a multiple
 * of nodes_per_pod, or at most it). The one check of a scenario's [cluster] (above) and of
 * `stepsim collective --nodes`. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE whose message names
 * no key; *key is set to the [cluster] key it is about ("nodes_per_pod" or "nodes",
 * static) for the caller's prefix. */
gboolean hw_cluster_shape_check (const HwNodeSpec *node, guint n_nodes,
                                 const HwFabricSpec *fabric, const char **key, GError **error);

/* The keys valid in [cluster] and in [node.NAME] groups, NULL-terminated, static. */
const char *const *hw_cluster_spec_keys (void);
const char *const *hw_node_spec_keys (void);
