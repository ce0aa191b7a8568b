/* hardware/node_catalog.c — built-in node types: NVIDIA DGX A100, DGX H100, DGX H200,
 * HGX B200, GB200 NVL72 (the rack as one node), an 8× AMD MI300X platform, AWS p5en (8×
 * H200, EFA v3) and p6-b200 (8× B200, EFA v4), and an 8× RTX 4090 PCIe box (hw_catalog_node*, declared in node_catalog.h;
 * kept apart from the GPU table of catalog.c to keep each file small).
 *
 * Sources (S: vendor specification, M: measured, A: assumption):
 *  - GPUs, NVLink per GPU per direction (NVLink 3 300 GB/s, NVLink 4 450, NVLink 5 900) and
 *    host links: the GPU catalog (hardware/catalog.c) and hardware.md (S).
 *  - DGX A100 (S, DGX A100 datasheet and user guide): 8× A100 80 GB (the "640 GB" system) on
 *    6 NVSwitches; 8 single-port ConnectX-6 HDR InfiniBand 200 Gbit/s for the compute fabric,
 *    one per GPU (rail-optimised in DGX SuperPOD); 4 PCIe Gen4 switches, each with 2 GPUs and
 *    2 compute NICs; 2 TB system memory in the 640 GB system (the 320 GB system has 1 TB) —
 *    read as 2 TiB (DIMM capacities are binary).
 *  - DGX H100 / H200 (S, datasheets): 8 GPUs on NVSwitch (NVLink 4), 8× ConnectX-7 NDR
 *    400 Gbit/s (hardware.md: 50 GB/s per GPU), 2 TB system memory (read as 2 TiB). The PCIe
 *    layout (4 Gen5 switches of 2 GPUs + 2 NICs) is assumed to mirror DGX A100 (A).
 *  - HGX B200 (S, DGX B200 datasheet): 8 GPUs on NVLink 5, 8× 400 Gbit/s (ConnectX-7), 2 TB
 *    system memory in DGX B200 (up to 4 TB); the same PCIe layout as H100 (A).
 *  - GB200 NVL72 (S, NVIDIA GB200 NVL72 product page, https://www.nvidia.com/en-us/data-
 *    center/gb200-nvl72/, and the GB200 NVL Multi-Node Tuning Guide, docs.nvidia.com/multi-
 *    node-nvlink-systems): 72 Blackwell GPUs and 36 Grace CPUs in one rack, every GPU on
 *    NVLink 5 (900 GB/s per direction) through the rack's NVLink switch trays: one NVLink
 *    domain, which NCCL (MNNVL) treats as one node, so the whole rack is one node of 72
 *    GPUs here (18 compute trays of 4 GPUs are not nodes to NCCL). Compute fabric: one
 *    ConnectX-7 400 Gbit/s per GPU, 72, rail-optimised (S: NVL72 reference architecture;
 *    MLPerf Inference v6.1 Crusoe GB200-NVL72 system description: 4 ConnectX-7 per 4-GPU
 *    tray). No PCIe switch between GPU and host: NVLink-C2C (catalog GB200's host link), so
 *    gpus_per_pcie_switch 0. Host memory 36 × 480 GB LPDDR5X = 17.28 TB ("up to 17 TB", S);
 *    CPU cores 36 × 72 Neoverse V2 = 2592 (S). NVMe: 4 drives per compute tray, 72 in all
 *    (MLPerf Crusoe description, "local NVMe RAID0, 4x drives" per 4-GPU tray; the NVIDIA
 *    page names no drive), at the datacenter Gen4 class (A, as the DGX entries). Power
 *    overhead 0 (not known: NVIDIA's page gives no rack maximum; third-party ~120 kW
 *    figures are not used). link_efficiency 0.94, α and collective_overhead as HGX-B200
 *    (A: same NVLink 5 ports and NICs; no NVL72 measurement in hardware.md).
 *  - MI300X-8 (AMD Instinct MI300X platform, S: AMD's platform brief and the MI300X
 *    datasheet): 8 MI300X on one baseboard, each GPU linked to each of the 7 others by an
 *    Infinity Fabric link of 64 GB/s per direction (128 GB/s bidirectional), a full mesh
 *    without a switch. Modelled as HW_INTRA_NVSWITCH with 7 × 64 = 448 GB/s per GPU per
 *    direction — an approximation: RCCL spreads its channels over all 7 peer links, so a
 *    collective over all 8 GPUs sees the aggregate, but one GPU-to-GPU transfer (or a ring
 *    that uses one link per hop) gets 64 GB/s on the real mesh and up to 448 here; the
 *    2- and 4-GPU groups of TP inside the node are therefore optimistic. 8 × 400 Gbit/s NICs
 *    on rails and the PCIe layout (4 Gen5 switches of 2 GPUs + 2 NICs, 55 GB/s uplinks) as
 *    DGX H100 (A: typical OEM 8-GPU Gen5 servers). Host: 2× AMD EPYC 9374F (64 cores), 1.5 TiB
 *    and 2 data NVMe drives (M: MLPerf Inference v4.1 AMD 8xMI300X system description; read
 *    at the datacenter Gen4 class, A). link_efficiency: the documented default 235/300 (no
 *    MI300X measurement in hardware.md), α and collective_overhead the defaults of a node
 *    around a bare GPU (node_catalog.h), power overhead 0 (not known).
 *  - 8× RTX 4090 box (A throughout): two PCIe Gen4 switches of 4 GPUs (the usual dual-
 *    switch 8-GPU chassis), each with a x16 uplink (25 GB/s, the Gen4 effective figure of
 *    hardware.md) to the host; one 100 Gbit/s NIC; 512 GiB host memory. GPU-to-GPU traffic
 *    is modelled as PCIe P2P through the switch; stock GeForce drivers disable P2P and NCCL
 *    then stages through host memory, which also crosses the uplinks — model that worst case
 *    with gpus_per_pcie_switch = 1 in a [node.NAME] group.
 * Uplinks of the DGX/HGX PCIe switches: Gen4 x16 25 GB/s (A100), Gen5 x16 55 GB/s
 * (H100/H200/B200; M: 8×H200 nvbandwidth host copies) — the host copies of two GPUs behind
 * one switch share it (ZeRO-Offload traffic).
 * Calibration, one factor per node type (`link_efficiency`, applied to NVLink and NIC
 * capacities; hardware.md, M): NVLink 3 all-reduce bus bandwidth ≈ 235 of 300 GB/s → 0.783;
 * 8×H200 GPU-to-GPU copy 396 of 450 GB/s → 0.88 (used for H100 too, same NVLink 4);
 * 8×B200 all-reduce 846 of 900 GB/s at 16 GiB → 0.94; RTX 4090 box: 0.90 (A: TCP/RoCE on
 * 100 GbE reaches ~90 % of line rate; the box has no NVLink). Since a ring all-reduce's
 * bus bandwidth equals its slowest link (nccl-tests identity), these reproduce the
 * measured one-node bus bandwidths for large messages.
 * Latencies (A): α = 2 us per flow start through NVSwitch (NVLink hop ~1 us plus NCCL
 * protocol overhead; NCCL's own tuning model uses ~1–3 us), 5 us through IB (NIC + switch
 * ~1–2 us plus proxy/progress overhead, 3–5 us in nccl-tests small-message runs), 5 us for
 * PCIe P2P, 10 us over the 4090 box's Ethernet NIC.
 * Collective overhead (M, one per hardware type): the time from a collective's call to its
 * first byte (host enqueue through torch/NCCL, kernel launch, rank skew after the barrier of
 * the benchmark) = the measured all-reduce time at 32 KiB on 8 GPUs minus NCCL's own ring/LL
 * estimate (6.6 + 14 × 0.6 = 15 us, tuning.cc, plus 32 KiB × 1.75 / llMaxBw): DGX A100
 * nccl-tests 43.8 us → 28 us; 8×H200 all_reduce_bench.py 40.0 us → 25 us (used for H100);
 * 8×B200 (P6-B200) 47.8 us → 33 us (ml-engineering network/README.md, "Real network
 * throughput" and "Inter-node speed depends on intra-node speed"). Nodes around a bare GPU
 * and the 4090 box take A100's (A).
 * AWS EFA nodes: inter_latency is the 35 us network latency aws-ofi-nccl reports to NCCL
 * (graph latencyInter) on P5en and P6-B200; p5en's 16 × 200 Gbit/s EFA v3 NICs are 8 rails
 * of 400 Gbit/s here (two NICs per GPU; NCCL drives both), p6-b200 has 8 × 400 Gbit/s EFA v4.
 * Their collective_tuner is AWS's region tuner (NCCL_TUNER_PLUGIN=ofi, which those clusters
 * load: ml-engineering network/README.md logs "base Tuner is chosen for platform: p5en.48xlarge"
 * and "... p6-b200.48xlarge"; tables in hardware/collective_tuner.c); every other node NCCL's.
 * Host CPU and NVMe (ZeRO-Offload / ZeRO-Infinity; CPU Adam rate per core in node_catalog.h):
 *  - DGX A100 (S, datasheet): 2× AMD EPYC 7742, 128 cores; 30 TB internal storage as
 *    8× 3.84 TB U.2 NVMe (640 GB system).
 *  - DGX H100 / H200 (S, datasheets): 2× Xeon Platinum 8480C, 112 cores; 8× 3.84 TB U.2
 *    NVMe internal storage. HGX B200 (S, DGX B200 datasheet): 2× Xeon Platinum 8570, 112
 *    cores; 8× 3.84 TB NVMe.
 *  - Drive speed for all of these: the datacenter Gen4 class of hardware.md (~7 GB/s read;
 *    write 3.8 GB/s, A, node_catalog.h), since the datasheets name capacity, not model.
 *  - 8× RTX 4090 box (A): 32 cores; one consumer PCIe 4.0 NVMe of 2 TB at the fio figures
 *    of hardware.md (M): read 2.76 GiB/s, write 1.94 GiB/s.
 *  - A node around a bare GPU: 32 cores and one datacenter Gen4 drive (A).
 * Power beyond the GPU boards (overhead_power, W per GPU; cli/report/training.h): the system's
 * maximum power from its datasheet (S) less its GPUs' board power (catalog.c), divided by
 * its 8 GPUs — an upper bound, as the maximum is a provisioning figure:
 *  - DGX A100: 6.5 kW max (DGX A100 datasheet) − 8 × 400 W = 3.3 kW → 412.5 W per GPU.
 *  - DGX H100 and DGX H200: 10.2 kW max (DGX H100 / H200 datasheets) − 8 × 700 W = 4.6 kW
 *    → 575 W per GPU.
 *  - DGX B200 (for HGX-B200): 14.3 kW max (DGX B200 user guide, power specifications) −
 *    8 × 1000 W = 6.3 kW → 787.5 W per GPU.
 *  - 8× RTX 4090 box and a node around a bare GPU: no system figure, 0 (not known; the
 *    summary says so).
 * Invariant: every entry passes hw_node_spec_validate() (tests/unit/hardware/
 * test_cluster_spec.c). Units: B, B/s, s.
 */
#include "config.h"
#include "hardware/node_catalog.h"

#include "hardware/catalog.h"
#include "sim/text.h"

#define GBPS 1e9 /* B/s */
#define GBITPS (1e9 / 8)
#define TIB (1024.0 * 1024 * 1024 * 1024)
#define US 1e-6
#define GIBPS (1024.0 * 1024 * 1024)
/* DRAM bandwidth of a node's CPUs, B/s, all sockets, theoretical (channels × MT/s × 8 B;
 * the vendors' specifications) — CPU Adam's rate (node_catalog.h HW_CPU_ADAM_RATE_BW):
 * 2× AMD EPYC 7742 (DGX A100): 8 channels DDR4-3200 each, 204.8 GB/s a socket (AMD);
 * 2× Xeon Platinum 8480C (DGX H100/H200) and the Sapphire Rapids of AWS P5en: 8 channels
 * DDR5-4800, 307.2 GB/s a socket (Intel ARK, 8480+); 2× Xeon Platinum 8570 (DGX B200) and
 * the Emerald Rapids of AWS P6-B200: 8 channels DDR5-5600, 358.4 GB/s a socket (Intel ARK);
 * 2× AMD EPYC 9374F (the MI300X box): 12 channels DDR5-4800, 460.8 GB/s a socket (AMD);
 * one Grace CPU (GB200 NVL72): up to 512 GB/s LPDDR5X (NVIDIA GB200 NVL72 specifications:
 * 36 Grace, up to 18.4 TB/s). The 8× RTX 4090 box and a node around a bare GPU name no CPU
 * and keep the per-core figure. */
#define DRAM_EPYC_7742 (2 * 204.8e9)
#define DRAM_XEON_8480C (2 * 307.2e9)
#define DRAM_XEON_8570 (2 * 358.4e9)
#define DRAM_EPYC_9374F (2 * 460.8e9)
#define DRAM_GRACE 512e9
#define DC_NVME(n)                                                                                \
  .nvme_drives = (n), .nvme_read_bandwidth = HW_GEN4_NVME_READ,                                   \
  .nvme_write_bandwidth = HW_GEN4_NVME_WRITE, .nvme_capacity = HW_GEN4_NVME_CAPACITY

typedef struct
{
  const char *gpu; /* catalog GPU name */
  HwNodeSpec spec; /* everything but .gpu */
} NodeEntry;

#define SRC_NVSWITCH_NODE(sys)                                                                     \
  "NVLink per direction and GPU: datasheet via hardware.md (S). " sys " NIC count, NIC "           \
  "rate, rails and system memory: NVIDIA datasheet (S). "
#define SRC_ALPHA "alpha 2 us NVLink, 5 us IB: assumptions (hardware/node_catalog.c). "
#define SRC_OVERHEAD(us, what)                                                                     \
  "collective_overhead " us " us (M: " what " all-reduce at 32 KiB minus NCCL's ring LL latency, " \
  "hardware/node_catalog.c). "
#define SRC_EFA "inter_latency 35 us: the network latency aws-ofi-nccl reports to NCCL on P5en and " \
  "P6-B200 (src/platform-aws.cpp, platform \"p5en/p6-b200\", .latency = 35.0; S). collective_tuner: " \
  "aws-ofi-nccl's region tuner for the instance type (src/tuner/nccl_ofi_regions.cpp; S). "

/* String literals initialise the char * members; entries are only handed out as const. */
static NodeEntry entries[] = {
  { "A100-80GB-SXM",
    { .name = "DGX-A100",
      .cpu_cores = 128, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_EPYC_7742, 128), DC_NVME (8),
      .overhead_power = (6500.0 - 8 * 400.0) / 8,
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 300 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 25 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 200 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 5 * US,
      .collective_overhead = 28 * US,
      .link_efficiency = 235.0 / 300.0,
      .description = "NVIDIA DGX A100 640GB: 8x A100-80GB-SXM, NVSwitch, 8x HDR 200 Gbit/s",
      .source = SRC_NVSWITCH_NODE (
          "DGX A100") "2 TB in the 640 GB system (1 TB in the 320 GB "
                      "one), read as 2 TiB. 4 PCIe Gen4 switches of 2 GPUs + 2 NICs (S, user "
                      "guide), uplink 25 GB/s (Gen4 effective, A). link_efficiency 235/300 (M: "
                      "NVLink 3 all-reduce busbw). " SRC_ALPHA SRC_OVERHEAD ("28", "DGX A100 nccl-tests") } },
  { "H100-SXM",
    { .name = "DGX-H100",
      .cpu_cores = 112, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_XEON_8480C, 112), DC_NVME (8),
      .overhead_power = (10200.0 - 8 * 700.0) / 8,
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 450 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 5 * US,
      .collective_overhead = 25 * US,
      .link_efficiency = 0.88,
      .description = "NVIDIA DGX H100: 8x H100-SXM, NVSwitch (NVLink 4), 8x NDR 400 Gbit/s",
      .source = SRC_NVSWITCH_NODE (
          "DGX H100") "2 TB read as 2 TiB. PCIe: 4 Gen5 switches of "
                      "2 GPUs + 2 NICs, uplink 55 GB/s (A, as DGX A100; M: H200 host copies). "
                      "link_efficiency 0.88 (M: 8xH200 GPU-to-GPU copy 396/450 GB/s, same NVLink "
                      "4). " SRC_ALPHA SRC_OVERHEAD ("25", "8xH200 all_reduce_bench") } },
  { "H200-SXM",
    { .name = "DGX-H200",
      .cpu_cores = 112, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_XEON_8480C, 112), DC_NVME (8),
      .overhead_power = (10200.0 - 8 * 700.0) / 8,
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 450 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 5 * US,
      .collective_overhead = 25 * US,
      .link_efficiency = 0.88,
      .description = "NVIDIA DGX H200: 8x H200-SXM, NVSwitch (NVLink 4), 8x NDR 400 Gbit/s",
      .source = SRC_NVSWITCH_NODE (
          "DGX H200") "2 TB read as 2 TiB. PCIe: 4 Gen5 switches of "
                      "2 GPUs + 2 NICs, uplink 55 GB/s (A; M: H200 host copies 55 GB/s). "
                      "link_efficiency 0.88 (M: 8xH200 GPU-to-GPU copy 396/450 "
                      "GB/s). " SRC_ALPHA SRC_OVERHEAD ("25", "8xH200 all_reduce_bench") } },
  { "B200-SXM",
    { .name = "HGX-B200",
      .cpu_cores = 112, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_XEON_8570, 112), DC_NVME (8),
      .overhead_power = (14300.0 - 8 * 1000.0) / 8,
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 900 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 5 * US,
      .collective_overhead = 33 * US,
      .link_efficiency = 0.94,
      .description = "NVIDIA HGX B200: 8x B200-SXM, NVSwitch (NVLink 5), 8x 400 Gbit/s",
      .source = SRC_NVSWITCH_NODE (
          "DGX B200") "2 TB (DGX B200 base; up to 4 TB) read as 2 "
                      "TiB. PCIe as DGX H100 (A). link_efficiency 0.94 (M: 8xB200 all-reduce busbw "
                      "846/900 GB/s at 16 GiB). " SRC_ALPHA SRC_OVERHEAD ("33", "8xB200 (P6-B200) all_reduce_bench") } },
  { "GB200",
    { .name = "GB200-NVL72",
      .cpu_cores = 36 * 72, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (36 * DRAM_GRACE, 36 * 72),
      DC_NVME (72),
      .overhead_power = 0,
      .n_gpus = 72,
      .host_memory = 36 * 480e9,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 900 * GBPS,
      .gpus_per_pcie_switch = 0,
      .pcie_switch_uplink = 0,
      .n_nics = 72,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 5 * US,
      .collective_overhead = 33 * US,
      .link_efficiency = 0.94,
      .description = "NVIDIA GB200 NVL72 rack as one NVLink domain: 72x GB200, NVLink 5 switch trays, 72x 400 Gbit/s",
      .source = "GB200 NVL72 (S, NVIDIA GB200 NVL72 product page; GB200 NVL Multi-Node Tuning "
                "Guide): 72 GPUs in one NVLink 5 domain (900 GB/s per GPU per direction, NCCL "
                "MNNVL: one node), 36 Grace CPUs x 72 cores, 36 x 480 GB LPDDR5X (17.28 TB), "
                "host link NVLink-C2C (no PCIe switches). 72 ConnectX-7 400 Gbit/s, one per GPU, "
                "rails (S; MLPerf v6.1 Crusoe GB200-NVL72 system: 4 per 4-GPU tray). NVMe 72 "
                "drives, 4 per tray (MLPerf Crusoe description), Gen4 class (A). Power overhead "
                "not known (0). link_efficiency 0.94 as HGX-B200 (A). " SRC_ALPHA
                SRC_OVERHEAD ("33", "8xB200 (P6-B200) all_reduce_bench; A for NVL72") } },
  { "MI300X",
    { .name = "MI300X-8",
      .cpu_cores = 64, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_EPYC_9374F, 64), DC_NVME (2),
      .overhead_power = 0,
      .n_gpus = 8,
      .host_memory = 1.5 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 7 * 64 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = HW_NVLINK_LATENCY,
      .inter_latency = HW_IB_LATENCY,
      .collective_overhead = HW_COLLECTIVE_OVERHEAD,
      .link_efficiency = HW_DEFAULT_LINK_EFFICIENCY,
      .description = "AMD Instinct MI300X platform: 8x MI300X, Infinity Fabric mesh (7 links x 64 GB/s per GPU, modelled as a switch), 8x 400 Gbit/s",
      .source = "AMD Instinct MI300X platform (S): 8 GPUs, Infinity Fabric full mesh of 7 links "
                "x 64 GB/s per direction per GPU, modelled as a non-blocking switch port of "
                "448 GB/s (A, approximation: one peer pair gets 64 GB/s on the mesh). 8 x 400 "
                "Gbit/s NICs on rails, PCIe as DGX H100 (A). Host 2x EPYC 9374F = 64 cores, "
                "1.5 TiB, 2 NVMe (M: MLPerf v4.1 AMD 8xMI300X system). link_efficiency 235/300, "
                "alpha 2/5 us, collective_overhead 28 us: documented defaults (A). Power "
                "overhead not known (0)." } },
  { "RTX-4090",
    { .name = "8x-RTX-4090",
      .cpu_cores = 32, .cpu_adam_rate = HW_CPU_ADAM_RATE, .nvme_drives = 1,
      .nvme_read_bandwidth = 2.76 * GIBPS, .nvme_write_bandwidth = 1.94 * GIBPS,
      .nvme_capacity = 2e12,
      .n_gpus = 8,
      .host_memory = 512.0 * 1024 * 1024 * 1024,
      .intra = HW_INTRA_PCIE,
      .nvlink_bandwidth = 0,
      .gpus_per_pcie_switch = 4,
      .pcie_switch_uplink = 25 * GBPS,
      .n_nics = 1,
      .nic_bandwidth = 100 * GBITPS,
      .rail_optimized = FALSE,
      .intra_latency = 5 * US,
      .inter_latency = 10 * US,
      .collective_overhead = 28 * US,
      .link_efficiency = 0.90,
      .description = "8x GeForce RTX 4090 on two PCIe Gen4 switches, 1x 100 Gbit/s NIC",
      .source = "Assumed build (A): two PCIe Gen4 switches of 4 GPUs, x16 uplinks 25 GB/s "
                "(Gen4 effective, hardware.md), P2P through the switch (stock drivers stage "
                "through host memory instead), one 100 Gbit/s NIC at link_efficiency 0.90, "
                "512 GiB DRAM, alpha 5 us PCIe and 10 us Ethernet, collective_overhead 28 us "
                "(DGX A100's). GPU figures: catalog RTX-4090 (S)." } },
  { "H200-SXM",
    { .name = "AWS-P5en",
      .cpu_cores = 96, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_XEON_8480C, 96), DC_NVME (8),
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 450 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 35 * US,
      .collective_overhead = 25 * US,
      .collective_tuner = HW_TUNER_AWS_OFI_P5EN,
      .link_efficiency = 0.88,
      .description = "AWS p5en.48xlarge: 8x H200-SXM, NVSwitch (NVLink 4), EFA v3 16x 200 Gbit/s modelled as 8 rails of 400 Gbit/s",
      .source = "AWS p5en.48xlarge (S, AWS EC2 accelerated-computing specifications via "
                "ml-engineering network/README.md): 8x H200, 16 EFA v3 interfaces of 200 Gbit/s "
                "(3.2 Tbit/s), modelled as 8 rails of 400 Gbit/s (two NICs per GPU, one rail "
                "each GPU); 192 vCPUs = 96 cores; 2 TiB; 8x 3.84 TB NVMe. 2 GPUs and 2 NICs per "
                "PCIe switch (aws-ofi-nccl src/platform-aws.cpp note on P5en/P6-B200). NVLink and "
                "link_efficiency as DGX-H200. " SRC_EFA SRC_OVERHEAD ("25", "8xH200 all_reduce_bench") } },
  { "B200-SXM",
    { .name = "AWS-P6-B200",
      .cpu_cores = 96, .cpu_adam_rate = HW_CPU_ADAM_RATE_BW (DRAM_XEON_8570, 96), DC_NVME (8),
      .n_gpus = 8,
      .host_memory = 2 * TIB,
      .intra = HW_INTRA_NVSWITCH,
      .nvlink_bandwidth = 900 * GBPS,
      .gpus_per_pcie_switch = 2,
      .pcie_switch_uplink = 55 * GBPS,
      .n_nics = 8,
      .nic_bandwidth = 400 * GBITPS,
      .rail_optimized = TRUE,
      .intra_latency = 2 * US,
      .inter_latency = 35 * US,
      .collective_overhead = 33 * US,
      .collective_tuner = HW_TUNER_AWS_OFI_P6_B200,
      .link_efficiency = 0.94,
      .description = "AWS p6-b200.48xlarge: 8x B200-SXM, NVSwitch (NVLink 5), EFA v4 8x 400 Gbit/s",
      .source = "AWS p6-b200.48xlarge (S, ml-engineering network/README.md: 8 fabric-facing EFA "
                "v4 interfaces at 400 Gbit/s, one per GPU, 3.2 Tbit/s per instance); 192 vCPUs = "
                "96 cores; 2 TiB; 8x 3.84 TB NVMe (A, as DGX B200). 2 GPUs and 2 NICs per PCIe "
                "switch (aws-ofi-nccl src/platform-aws.cpp). NVLink and link_efficiency as "
                "HGX-B200 (the factor is applied to the EFA NICs too). " SRC_EFA
                SRC_OVERHEAD ("33", "8xB200 (P6-B200) all_reduce_bench") } },
};

/* Resolves each entry's GPU once; the pointers are the catalog's own (const in spirit: never
 * freed or modified), so the entries stay allocation-free. */
static void
ensure_gpus (void)
{
  static gsize done = 0;
  if (!g_once_init_enter (&done))
    return;
  for (guint i = 0; i < G_N_ELEMENTS (entries); i++)
    {
      const HwGpuSpec *g = hw_catalog_gpu (entries[i].gpu, NULL);
      g_assert (g != NULL);
      entries[i].spec.gpu = (HwGpuSpec *) g;
    }
  g_once_init_leave (&done, 1);
}

guint
hw_catalog_n_nodes (void)
{
  return G_N_ELEMENTS (entries);
}

const HwNodeSpec *
hw_catalog_node_at (guint i)
{
  g_return_val_if_fail (i < G_N_ELEMENTS (entries), NULL);
  ensure_gpus ();
  return &entries[i].spec;
}

/* HGX names of the DGX baseboards (node_catalog.h). */
static const struct
{
  const char *alias, *name;
} aliases[] = {
  { "HGX-A100", "DGX-A100" }, { "HGX-H100", "DGX-H100" }, { "HGX-H200", "DGX-H200" },
};

guint
hw_catalog_n_node_aliases (void)
{
  return G_N_ELEMENTS (aliases);
}

const char *
hw_catalog_node_alias (guint i, const char **name)
{
  g_return_val_if_fail (i < G_N_ELEMENTS (aliases) && name != NULL, NULL);
  *name = aliases[i].name;
  return aliases[i].alias;
}

const HwNodeSpec *
hw_catalog_node (const char *name, GError **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  for (guint a = 0; a < G_N_ELEMENTS (aliases); a++)
    if (g_ascii_strcasecmp (name, aliases[a].alias) == 0)
      name = aliases[a].name;
  for (guint i = 0; i < G_N_ELEMENTS (entries); i++)
    if (g_ascii_strcasecmp (name, entries[i].spec.name) == 0)
      return hw_catalog_node_at (i);

  const char *names[G_N_ELEMENTS (entries) + 1];
  for (guint i = 0; i < G_N_ELEMENTS (entries); i++)
    names[i] = entries[i].spec.name;
  names[G_N_ELEMENTS (entries)] = NULL;
  char *msg = sim_text_with_hint (g_strdup_printf ("unknown node '%s'", name), name, names);
  g_autofree char *known = g_strjoinv (", ", (char **) names);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s (known nodes: %s)", msg,
               known);
  g_free (msg);
  return NULL;
}

void
hw_catalog_node_from_gpu (HwNodeSpec *out, const HwGpuSpec *gpu, guint n_gpus)
{
  g_return_if_fail (out != NULL && gpu != NULL && n_gpus >= 1);
  gboolean nvswitch = gpu->nvlink_bandwidth > 0;
  *out = (HwNodeSpec){
    .name = g_strdup ("custom"),
    .gpu = hw_gpu_spec_copy (gpu),
    .n_gpus = n_gpus,
    .host_memory = HW_DEFAULT_HOST_MEMORY,
    .intra = nvswitch ? HW_INTRA_NVSWITCH : HW_INTRA_PCIE,
    .nvlink_bandwidth = gpu->nvlink_bandwidth,
    .intra_latency = nvswitch ? HW_NVLINK_LATENCY : HW_PCIE_P2P_LATENCY,
    .inter_latency = HW_IB_LATENCY,
    .collective_overhead = HW_COLLECTIVE_OVERHEAD,
    .link_efficiency = HW_DEFAULT_LINK_EFFICIENCY,
    .cpu_cores = HW_DEFAULT_CPU_CORES,
    .cpu_adam_rate = HW_CPU_ADAM_RATE,
    DC_NVME (1),
    .description = g_strdup_printf ("%s GPUs", gpu->name),
    .source = g_strdup ("node around one catalog GPU: defaults of hardware/node_catalog.h "
                        "(host memory 512 GiB, link_efficiency 235/300, alpha 2/5 us, "
                        "collective_overhead 28 us, 32 CPU cores, one datacenter Gen4 NVMe "
                        "drive)"),
  };
}
