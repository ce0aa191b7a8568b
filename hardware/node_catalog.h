/* hardware/node_catalog.h — the built-in node catalog (DGX/HGX systems and a PCIe box) and
 * the default node built around a single catalog GPU. Each entry's `source` string cites its
 * figures (NVIDIA DGX datasheets and user guides, ../shared/reference/hardware.md) and states
 * every assumption. The figures and calibration factors are documented in node_catalog.c.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"

/* α defaults (s per flow start; hardware/topology.h): assumptions, see node_catalog.c. */
#define HW_NVLINK_LATENCY 2e-6   /* one hop GPU → NVSwitch → GPU */
#define HW_PCIE_P2P_LATENCY 5e-6 /* GPU → PCIe switch/host → GPU */
#define HW_IB_LATENCY 5e-6       /* GPU → NIC → leaf/spine → NIC → GPU (InfiniBand, RoCE) */
/* Achievable fraction of NVLink and NIC bandwidth for a node defined around a bare GPU
 * (no measurement of its own): the NVLink 3 all-reduce figure of hardware.md, 235/300. */
#define HW_DEFAULT_LINK_EFFICIENCY (235.0 / 300.0)
/* Host DRAM of a node defined around a bare GPU (B): 512 GiB, as scenarios had before. */
#define HW_DEFAULT_HOST_MEMORY (512.0 * 1024 * 1024 * 1024)

/* Number of built-in node types and the i-th (creation order, borrowed; never freed or
 * modified; copy with hw_node_spec_copy_into() to own one). */
guint hw_catalog_n_nodes (void);
const HwNodeSpec *hw_catalog_node_at (guint i);

/* Looks a node type up by name, case-insensitively ("dgx-a100"). NULL +
 * G_KEY_FILE_ERROR_INVALID_VALUE if unknown; the message names the nearest name and lists
 * the known ones. */
const HwNodeSpec *hw_catalog_node (const char *name, GError **error);

/* Fills `out` (overwritten, not freed first; free with hw_node_spec_clear()) with a node of
 * `n_gpus` >= 1 copies of `gpu` (copied): NVSwitch at the GPU's nvlink_bandwidth if it has
 * one, else PCIe with every GPU alone on the root complex; no NICs; host memory
 * HW_DEFAULT_HOST_MEMORY; α and link efficiency from the defaults above; name "custom". */
void hw_catalog_node_from_gpu (HwNodeSpec *out, const HwGpuSpec *gpu, guint n_gpus);
