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
/* Collective call-to-first-byte overhead of a node around a bare GPU (s): DGX A100's
 * measured 28 us (node_catalog.c). */
#define HW_COLLECTIVE_OVERHEAD 28e-6
/* Host DRAM of a node defined around a bare GPU (B): 512 GiB, as scenarios had before. */
#define HW_DEFAULT_HOST_MEMORY (512.0 * 1024 * 1024 * 1024)

/* Host CPU and NVMe (ZeRO-Offload / ZeRO-Infinity; sources in node_catalog.c).
 * CPU Adam throughput: DeepSpeed's CPU-Adam (Ren et al. 2021, ZeRO-Offload, arXiv
 * 2101.06840, §4.2 and Table 3) updates 10 B parameters in about 2.57 s on the DGX-2 host,
 * 2× Xeon Platinum 8168 = 48 cores (M, as reported there): 81 M parameters/s per core. The
 * step streams the fp32 parameters, gradients and both moments through DRAM (tens of B a
 * parameter, a few FLOPs each), so it is bound by the host's memory bandwidth, not its
 * cores: a catalog node whose CPUs are known gets the DGX-2 rate scaled by its DRAM
 * bandwidth over the DGX-2's (each 8168: 6 channels of DDR4-2666, 128 GB/s; Intel ARK),
 * expressed per core (HW_CPU_ADAM_RATE_BW); the others keep 81 M a core. Every catalog node
 * carries its own cpu_cores and cpu_adam_rate (node_catalog.c; `stepsim list nodes` shows
 * them); a [node.NAME] or [cluster] cpu_adam_rate sets a host's own. */
#define HW_CPU_ADAM_RATE 81e6            /* parameters/s per core (DGX-2: 10e9 / 2.57 / 48) */
#define HW_CPU_ADAM_DGX2_RATE (10e9 / 2.57)   /* parameters/s of the DGX-2 host */
#define HW_CPU_ADAM_DGX2_DRAM (2 * 6 * 21.328e9) /* B/s: 2 sockets × 6 × DDR4-2666 */
/* Parameters/s per core of a host of `cores` cores and `dram` B/s of DRAM bandwidth (all
 * sockets, theoretical: channels × transfer rate × 8 B). */
#define HW_CPU_ADAM_RATE_BW(dram, cores) \
  (HW_CPU_ADAM_DGX2_RATE * (dram) / HW_CPU_ADAM_DGX2_DRAM / (cores))
#define HW_DEFAULT_CPU_CORES 32          /* host of a node around a bare GPU (A) */
/* A datacenter PCIe Gen4 NVMe drive (hardware.md: ~7 GB/s sequential read, datasheet
 * class; write 3.8 GB/s and 3.84 TB as the Samsung PM1733 3.84 TB datasheet, A). */
#define HW_GEN4_NVME_READ 7e9            /* B/s */
#define HW_GEN4_NVME_WRITE 3.8e9         /* B/s */
#define HW_GEN4_NVME_CAPACITY 3.84e12    /* B */
/* Start latency of an NVMe transfer (s): ~100 us, a large-block read's completion latency
 * on datacenter drives (A; irrelevant for the GB-sized swaps of offloading). */
#define HW_NVME_LATENCY 100e-6
/* Effective fraction of the PCIe bandwidth a copy from or to pageable (not pinned) host
 * memory reaches: the driver stages it through a pinned bounce buffer, one CPU memcpy more
 * per byte; 0.5 is an assumption (NVIDIA, "How to Optimize Data Transfers in CUDA C/C++":
 * pageable copies reach roughly half the pinned bandwidth on the systems measured there). */
#define HW_PAGEABLE_COPY_EFFICIENCY 0.5

/* Number of built-in node types and the i-th (creation order, borrowed; never freed or
 * modified; copy with hw_node_spec_copy_into() to own one). */
guint hw_catalog_n_nodes (void);
const HwNodeSpec *hw_catalog_node_at (guint i);

/* Looks a node type up by name, case-insensitively ("dgx-a100"). The HGX names users type
 * for the same 8-GPU baseboards, HGX-A100, HGX-H100 and HGX-H200, are aliases of the DGX
 * entries (DGX-A100, DGX-H100, DGX-H200: the DGX host figures come with them; an OEM
 * server's CPU, memory and power differ, so give them in [cluster] or a [node.NAME] group);
 * the entry returned is the DGX one, with its name. NULL + G_KEY_FILE_ERROR_INVALID_VALUE if
 * unknown; the message names the nearest name and lists the known ones. */
const HwNodeSpec *hw_catalog_node (const char *name, GError **error);
/* The aliases hw_catalog_node accepts: how many, and the i-th (static string, i below the
 * count) with the catalog entry it names in *name (static). */
guint hw_catalog_n_node_aliases (void);
const char *hw_catalog_node_alias (guint i, const char **name);

/* Fills `out` (overwritten, not freed first; free with hw_node_spec_clear()) with a node of
 * `n_gpus` >= 1 copies of `gpu` (copied): NVSwitch at the GPU's nvlink_bandwidth if it has
 * one, else PCIe with every GPU alone on the root complex; no NICs; host memory
 * HW_DEFAULT_HOST_MEMORY; α and link efficiency from the defaults above; name "custom". */
void hw_catalog_node_from_gpu (HwNodeSpec *out, const HwGpuSpec *gpu, guint n_gpus);
