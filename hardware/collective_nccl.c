/* hardware/collective_nccl.c — NCCL's own cost model of a collective: per-(algorithm,
 * protocol) latency, protocol efficiency and bandwidth caps, taken from NCCL's tuner
 * (NVIDIA/nccl master 5067397, src/graph/tuning.cc: ncclTunerConstantsDefaults,
 * nvlsEfficiency, ncclTopoTuneModel, treeCorrectionFactor, ncclTopoGetAlgoTime) and its
 * topology constants (src/graph/topo.h: SM70/SM80/SM90/SM100_NVLINK_BW). The lowering
 * (hardware/collective_lower.c) turns these into flow latencies, wire bytes and per-flow
 * rate bounds; the fluid then adds the links' capacities and sharing.
 *
 * What is taken from NCCL, and how:
 *  - Latency (µs) of a ring of n ranks over m nodes, nsteps = 2(n−1) (all-reduce), n−1
 *    (all-gather, reduce-scatter), n (broadcast): baseLatencies[RING][p]
 *    + (nsteps − nInter)·intraLat + nInter·interLat, nInter = 2(m−1) (all-reduce) or m−1,
 *    intraLat = hwLatencies[NVLINK|PCI][RING][p], raised to the net overhead (1 µs, Intel
 *    CPU; ×3 for Simple) on multi-node rings, interLat = hwLatencies[NET][RING][p] plus the
 *    network's own latency (the net plugin's `latency`, counted twice for Simple: the flush).
 *    Multi-node Simple all-reduce: ×1.4 ("plateau effect of ring", sm80+; ×1.9 before) —
 *    in the estimate NCCL chooses with only. The sum above is the ring's real pipeline
 *    fill: NCCL's ring all-reduce (src/device/all_reduce.h, runRing) moves every chunk
 *    through 2(n−1) dependent steps (send, n−2 recvReduceSend, recvReduceCopySend, n−2
 *    recvCopySend, recv), chunks pipelined behind one another through NCCL_STEPS-deep
 *    FIFOs, so a run costs the per-step latencies once plus the bytes at the links' rate
 *    (the fluid's part). ncclTopoGetAlgoTime's ×1.4 is an empirical correction of that
 *    estimate applied only once the ring is bandwidth-bound (nBytes/(nChannels·nRanks)
 *    ≥ 64), where the bandwidth term is the real cost; charging it as a time adds ≈ 0.3–0.4
 *    ms to every 4-node EFA ring (C6 512 MiB −16 %, 1 GiB −12 % with it). So the AUTO
 *    choice (collective_lower.c) compares NCCL's estimates with it, and the chosen plan is
 *    timed without it. The flush (inter_latency twice on Simple network steps) is a real
 *    per-step operation (the proxy's iflush of GPU-direct receives) and stays.
 *    Tree all-reduce: baseLatencies[TREE][p] + 2((ppn−1)·intraLat + log2(m)·interLat).
 *    NVLS: hwLatencies[NVLINK][NVLS][SIMPLE] = 25 µs.
 *  - Bus bandwidth of the ring's Simple protocol inside a node: nChannels × bwIntra, which
 *    NCCL's search fills up to the GPU's NVLinks at its per-link figure, i.e. links ×
 *    SMxx_NVLINK_BW = nvlink_bandwidth × (NCCL per-link / spec per-link): NVLink 2 (V100)
 *    20.0/25, NVLink 3 (A100) 20.0/25, NVLink 4 (H100/H200) 20.6/25, NVLink 5 (B200)
 *    40.1/50 GB/s — 240, 370.8 and 721.8 GB/s for 8-GPU A100, H100 and B200 nodes, against
 *    measured ring busbw 234.9 (A100), 365.6–367.6 (H200) and 682–741 (B200) (ml-engineering
 *    network/README.md). The generation is read off the GPU's own NVLink bandwidth; a GPU
 *    without NVLink uses the Ampere row (sm80+ consumer parts).
 *  - Protocol efficiency on the wire (ncclTopoTuneModel): LL carries 4 B of data per 8 B
 *    (busBw × 0.5), LL128 120 of 128 B (busBw × 0.92), Simple all of it. A flow of the
 *    protocol therefore puts payload / efficiency bytes on every link it crosses (NVLink and
 *    NIC alike), and its rate bound is the NCCL bus bandwidth over the efficiency.
 *  - LL's absolute cap llMaxBws: one node by GPU generation (87.7 Ampere, 141 Hopper, 282
 *    Blackwell; 39.0 Volta), several nodes by CPU (Intel row: 39.0 for 2 nodes, 20.4 above).
 *  - Tree all-reduce: min(0.92·busBw, ...), LL: /3.8 and ≤ llMaxBw, LL128: ×7/9 (one node)
 *    or ×120/128; algorithm bandwidth ×0.5, times treeCorrectionFactor[p][log2(S/64)].
 *  - NVLS (NVLink SHARP, all-reduce inside one NVSwitch node, Hopper and Blackwell): the
 *    switch reduces and multicasts, so each GPU port moves (n+1)/n·S each way instead of the
 *    ring's 2(n−1)/n·S (NVIDIA, "Upgrading multi-GPU interconnectivity with the third-
 *    generation NVSwitch": N+1 sends instead of 2N); the port runs at the NVLS bandwidth of
 *    ncclTopoTuneModel, bwIntra · nvlsEfficiency (0.85 Hopper, 0.74 Blackwell) · (nCh−1)/nCh
 *    with NCCL's 16 (Hopper) or 24 (Blackwell, one node) NVLS channels (nvls.cc), bwIntra ·
 *    nCh being the ring's bus bandwidth. This gives 8×H100 459 GB/s busbw (measured ≈480,
 *    nccl-tests issue #212; 8×H200 473.1) and 8×B200 796 (measured 846 at 16 GiB). The
 *    tuner's further ×2 ("AllReduce pipelines two operations") is its busBw convention for
 *    choosing; the (n+1)/n port traffic above is what we time.
 *    One rate at every size: NCCL's NVLS chunk per step shrinks with the message
 *    (v2.27.7-1 src/enqueue.cc calcCollChunking: min(NCCL_BUFFSIZE/NCCL_STEPS,
 *    NCCL_NVLS_CHUNKSIZE), then 64, 32, 16 KiB below 64, 8, 2 × nChannels × nHeads × chunk;
 *    aws-ofi-nccl sets 8 MiB and 512 KiB on P5en/P6, src/platform-aws.cpp), and 8×B200's
 *    measured increments (C5) step at those bounds, but NCCL's source gives no per-step cost
 *    to time a chunk size by (ncclTopoGetAlgoTime has no NVLS size term), so that is not
 *    modelled (tests/unit/hardware/test_collective_nccl.c, test_c5_b200_64m).
 *    NVLS is not used across nodes without CollNet (tuning.cc disables it), nor below 5 GPUs
 *    (measured on 8×H200: ring at 4 GPUs, NVLS from 5; the GB200 NVL partition guide: ≤4 GPUs
 *    "will not benefit from multicast", both quoted in ml-engineering network/README.md).
 * Units: s, B, B/s (NCCL's µs and GB/s converted here).
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "hardware/cluster-private.h"
#include "hardware/topology.h"

#include <math.h>

#define US 1e-6
#define GBPS 1e9

typedef enum
{
  ARCH_VOLTA,
  ARCH_AMPERE,
  ARCH_HOPPER,
  ARCH_BLACKWELL,
} NcclArch;

enum { TREE, RING, NVLS }; /* rows of the tables below */
enum { HW_NVLINK, HW_PCI, HW_NET };

/* ncclTunerConstantsDefaults.baseLatencies [Tree, Ring, NVLS][LL, LL128, Simple], µs. */
static const double base_lat[3][HW_N_PROTOCOLS] = {
  { 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 }, { 0, 0, 0 } };
/* ncclTunerConstantsDefaults.hwLatencies [NVLINK, PCI, NET][Tree, Ring, NVLS][p], µs. */
static const double hw_lat[3][3][HW_N_PROTOCOLS] = {
  { { 0.6, 1.25, 4.0 }, { 0.6, 1.9, 3.4 }, { 0, 0, 25 } },
  { { 1.0, 1.9, 4.0 }, { 1.0, 2.5, 5.7 }, { 0, 0, 0 } },
  { { 5.0, 8.5, 14 }, { 2.7, 4.0, 14.0 }, { 0, 0, 18 } },
};
/* llMaxBws [arch or CPU row][nNodes 1, 2, >2], GB/s. */
static const double ll_max_bw[4][3] = {
  { 39.0, 39.0, 20.4 }, { 87.7, 22.5, 19.0 }, { 141.0, 45.0, 35.0 }, { 282.0, 90.0, 70.0 } };
/* nvlsEfficiency by arch. */
static const double nvls_eff[4] = { 0, 0, 0.85, 0.74 };
/* NVLS channels of one node (src/transport/nvls.cc: NVLS_NCHANNELS_SM90 16,
 * NVLS_NCHANNELS_SM100_NVL 24 for one node). */
static const double nvls_channels[4] = { 1, 1, 16, 24 };
/* NCCL's per-NVLink figure over the spec's per-link-per-direction rate (topo.h, file comment). */
static const double nvlink_ratio[4] = { 20.0 / 25, 20.0 / 25, 20.6 / 25, 40.1 / 50 };
/* treeCorrectionFactor [p][log2(bytes/64)], 64 B .. 256 MiB. */
static const double tree_corr[HW_N_PROTOCOLS][24] = {
  { 1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0 },
  { 1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0 },
  { .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9 },
};
static const double net_overhead_us = 1.0; /* getNetOverhead: Intel x86 (DGX, HGX, AWS P5/P6) */

/* The NCCL row of the node's GPU, read off its NVLink bandwidth. AMD CDNA3 (MI300X under
 * RCCL, an NCCL fork whose own tuning constants are not taken here) reads the Ampere row
 * explicitly: no NVLS (Infinity Fabric has no switch to reduce in), ring bus bandwidth 20/25
 * of the link, LL cap 87.7 GB/s, whatever its link figure: an approximation, not validated
 * against an RCCL measurement. */
static NcclArch
arch_of (const HwNodeSpec *node)
{
  if (node->gpu->generation == HW_GPU_GEN_CDNA3)
    return ARCH_AMPERE;
  double nv = node->gpu->nvlink_bandwidth;
  if (nv >= 900 * GBPS)
    return ARCH_BLACKWELL;
  if (nv >= 450 * GBPS)
    return ARCH_HOPPER;
  if (nv >= 300 * GBPS || nv <= 0)
    return ARCH_AMPERE;
  return ARCH_VOLTA;
}

static guint
log2i (guint x)
{
  guint l = 0;
  while (x >>= 1)
    l++;
  return l;
}

double
hw_nccl_wire_efficiency (HwCollectiveProtocol proto)
{
  return proto == HW_PROTO_LL ? 0.5 : proto == HW_PROTO_LL128 ? 0.92 : 1.0;
}

double
hw_nccl_ring_bus_bandwidth (const HwNodeSpec *node)
{
  if (node->intra != HW_INTRA_NVSWITCH || node->nvlink_bandwidth <= 0)
    return INFINITY; /* PCIe nodes: the PCIe links and switches bound it */
  return node->nvlink_bandwidth * nvlink_ratio[arch_of (node)];
}

gboolean
hw_nccl_protocol_enabled (const HwNodeSpec *node, HwCollectiveProtocol proto)
{
  /* LL128 is on by default only when the intra-node path is NVLink (typeIntra <= PATH_NVB). */
  return proto != HW_PROTO_LL128 || node->intra == HW_INTRA_NVSWITCH;
}

gboolean
hw_nccl_nvls_eligible (const HwNodeSpec *node, HwCollectiveKind kind, guint n_ranks,
                       guint n_nodes)
{
  return kind == HW_COLLECTIVE_ALL_REDUCE && n_nodes == 1 && n_ranks > 4
         && node->intra == HW_INTRA_NVSWITCH && nvls_eff[arch_of (node)] > 0;
}

gboolean
hw_collective_algorithm_applies (const HwNodeSpec *node, HwCollectiveKind kind,
                                 HwCollectiveAlgorithm algorithm, const char **why)
{
  g_return_val_if_fail (node != NULL && why != NULL, FALSE);
  *why = NULL;
  if (algorithm == HW_ALGORITHM_AUTO)
    return TRUE;
  if (kind == HW_COLLECTIVE_ALL_TO_ALL || kind == HW_COLLECTIVE_SEND_RECV)
    *why = "NCCL runs all_to_all and send_recv as point-to-point sends, with no algorithm "
           "to choose (use auto)";
  else if (algorithm == HW_ALGORITHM_TREE && kind != HW_COLLECTIVE_ALL_REDUCE)
    *why = "NCCL's tree algorithm is for all_reduce only";
  else if (algorithm == HW_ALGORITHM_NVLS && kind != HW_COLLECTIVE_ALL_REDUCE)
    *why = "nvls is modelled for all_reduce only (NCCL 2.18+ also has NVLS reduce_scatter "
           "and all_gather, not modelled here)";
  else if (algorithm == HW_ALGORITHM_NVLS
           && !(node->intra == HW_INTRA_NVSWITCH && node->gpu != NULL
                && nvls_eff[arch_of (node)] > 0))
    *why = "NVLink SHARP needs an NVSwitch node of Hopper or Blackwell GPUs (third-generation "
           "NVSwitch or later); this node has none";
  return *why == NULL;
}

double
hw_nccl_nvls_port_bandwidth (const HwNodeSpec *node)
{
  NcclArch a = arch_of (node);
  return nvls_eff[a] * (nvls_channels[a] - 1) / nvls_channels[a] * hw_nccl_ring_bus_bandwidth (node);
}

static guint
nsteps_of (HwCollectiveKind kind, guint n)
{
  return kind == HW_COLLECTIVE_ALL_REDUCE                                            ? 2 * (n - 1)
         : kind == HW_COLLECTIVE_ALL_GATHER || kind == HW_COLLECTIVE_REDUCE_SCATTER ? n - 1
                                                                                    : n;
}

double
hw_nccl_ring_latency (const HwNodeSpec *node, HwCollectiveKind kind, HwCollectiveProtocol p,
                      guint n, guint m, double bytes, gboolean choosing)
{
  int intra_hw = node->intra == HW_INTRA_NVSWITCH ? HW_NVLINK : HW_PCI;
  int hw = m == 1 ? intra_hw : HW_NET;
  guint nsteps = nsteps_of (kind, n);
  double lat = base_lat[RING][p];
  if (kind == HW_COLLECTIVE_BROADCAST)
    return (lat + nsteps * hw_lat[hw][p == HW_PROTO_SIMPLE ? TREE : RING][p]) * US;
  double intra = hw_lat[intra_hw][RING][p];
  double inter = 0;
  guint n_inter = 0;
  if (m > 1)
    {
      intra = MAX (intra, net_overhead_us * (p == HW_PROTO_SIMPLE ? 3 : 1));
      /* ppn = 1: tuning.cc uses the tree's network latency */
      inter = hw_lat[HW_NET][n == m ? TREE : RING][p]
              + node->inter_latency / US * (p == HW_PROTO_SIMPLE ? 2 : 1);
      n_inter = kind == HW_COLLECTIVE_ALL_REDUCE ? 2 * (m - 1) : m - 1;
    }
  lat += (nsteps - n_inter) * intra + n_inter * inter;
  /* ncclTopoGetAlgoTime: plateau effect, multi-node Simple all-reduce (sm80+ ×1.4), when
   * each rank's share of a channel is ≥ 64 B (NCCL's 16+ channels assumed). Only when
   * choosing (file comment): the time of a run is the fill above. */
  if (choosing && p == HW_PROTO_SIMPLE && m > 1 && kind == HW_COLLECTIVE_ALL_REDUCE
      && bytes / (16.0 * n) >= 64)
    lat *= arch_of (node) >= ARCH_AMPERE ? 1.4 : 1.9;
  return lat * US;
}

double
hw_nccl_tree_latency (const HwNodeSpec *node, HwCollectiveProtocol p, guint n, guint m)
{
  int intra_hw = node->intra == HW_INTRA_NVSWITCH ? HW_NVLINK : HW_PCI;
  double intra = hw_lat[intra_hw][TREE][p];
  double inter = hw_lat[HW_NET][TREE][p] + node->inter_latency / US * (p == HW_PROTO_SIMPLE ? 2 : 1);
  guint ppn = n / MAX (m, 1u);
  return (base_lat[TREE][p] + 2 * ((ppn - 1) * intra + log2i (m) * inter)) * US;
}

double
hw_nccl_nvls_latency (void)
{
  return (base_lat[NVLS][HW_PROTO_SIMPLE] + hw_lat[HW_NVLINK][NVLS][HW_PROTO_SIMPLE]) * US;
}

/* llMaxBws row and column: one node by GPU generation, several by CPU (Intel row 0). */
static double
ll_cap (const HwNodeSpec *node, guint m)
{
  return ll_max_bw[m == 1 ? arch_of (node) : 0][m <= 2 ? m - 1 : 2] * GBPS;
}

double
hw_nccl_ring_payload_cap (const HwNodeSpec *node, HwCollectiveProtocol p, guint m)
{
  double bus = hw_nccl_ring_bus_bandwidth (node);
  double cap = hw_nccl_wire_efficiency (p) * bus;
  if (p == HW_PROTO_LL)
    cap = MIN (cap, ll_cap (node, m));
  return cap;
}

double
hw_nccl_tree_payload_cap (const HwNodeSpec *node, HwCollectiveProtocol p, guint m, double bytes)
{
  double bus = 0.92 * hw_nccl_ring_bus_bandwidth (node);
  if (p == HW_PROTO_LL)
    bus = MIN (bus / 3.8, ll_cap (node, m));
  else if (p == HW_PROTO_LL128)
    bus *= m == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  guint64 chunks = (guint64) (bytes / 64);
  guint log_size = chunks > 0 ? log2i ((guint) MIN (chunks, (guint64) G_MAXUINT)) : 0;
  if (chunks > 0 && log_size < 23)
    bus *= tree_corr[p][log_size];
  return bus;
}
