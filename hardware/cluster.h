/* hardware/cluster.h — a cluster of identical nodes of GPUs, instantiated as resources on a
 * SimFluid, and the primitives that use them: kernels on a GPU, copies over its PCIe link.
 *
 * Resources per GPU g (names "gpu<g>.<what>"): compute (capacity 1: the whole GPU per
 * second), hbm (B/s = hbm_bandwidth × hbm_efficiency), pcie.h2d and pcie.d2h (B/s, each
 * direction its own capacity, DESIGN §5); per node its host CPU and NVMe drives
 * (hardware/topology.h).
 * A kernel of F FLOP at dtype t and M HBM bytes is one activity of amount 1 with weight
 * F / (peak_t × compute_efficiency) on compute and M on hbm, so alone it takes
 * kernel_latency + max(F/(peak_t·eff), M/(H·eff_hbm)) — the roofline (Williams et al.,
 * CACM 2009) falling out of max-min sharing; kernels that share a GPU share its capacities.
 * Knows nothing of layers (DESIGN §2). The links between GPUs, switches, NICs and the
 * spine, and the routes over them, are in hardware/topology.h; collectives in collective.h.
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"
#include "hardware/kernel.h"
#include "hardware/rank_shift.h"
#include "sim/fluid.h"

typedef enum
{
  HW_INTRA_NVSWITCH, /* every GPU has nvlink_bandwidth per direction into a non-blocking switch */
  HW_INTRA_PCIE,     /* peer-to-peer through PCIe switches and the host root complex */
} HwIntraConnect;

/* Who picks a collective's algorithm and protocol when the scenario asks for auto
 * (hardware/collective_tuner.c): NCCL's own cost model, or a platform's tuner plugin — AWS's
 * aws-ofi-nccl region tables for P5en and for P6-B200 (NCCL_TUNER_PLUGIN=ofi). */
typedef enum
{
  HW_TUNER_NCCL, /* default: ncclTopoTuneModel's least estimated time */
  HW_TUNER_AWS_OFI_P5EN,
  HW_TUNER_AWS_OFI_P6_B200,
} HwCollectiveTuner;

/* A node: n identical GPUs, how they connect, their NICs and host. */
typedef struct
{
  char *name;                  /* node type ("DGX-A100"); owned; NULL for the node a
                                * [cluster] gpu key builds */
  HwGpuSpec *gpu;              /* owned */
  guint n_gpus;                /* GPUs per node, >= 1 */
  double host_memory;          /* B of host DRAM per node */
  HwIntraConnect intra;
  double nvlink_bandwidth;     /* B/s per GPU per direction (NVSwitch nodes) */
  guint gpus_per_pcie_switch;  /* GPUs (with their NIC and NVMe) behind one PCIe switch; 0 = each GPU alone */
  double pcie_switch_uplink;   /* B/s per direction of a PCIe switch's link to the host; 0 = not a bottleneck */
  guint n_nics;                /* NICs per node (0: single node only) */
  double nic_bandwidth;        /* B/s per NIC per direction */
  gboolean rail_optimized;     /* GPU i uses NIC i mod n_nics on rail i (else NICs are shared round-robin) */
  double intra_latency;        /* s, α of one intra-node hop */
  double inter_latency;        /* s, α of one inter-node hop; in collectives the network's own
                                  latency NCCL adds to each inter-node step (graph latencyInter) */
  double collective_overhead;  /* s from a collective's call to its first byte moving (host
                                  enqueue, kernel launch, rank skew), once per collective */
  HwCollectiveTuner collective_tuner; /* chooses auto collectives' algorithm; 0 = NCCL's */
  char *source;                /* citations; owned, may be NULL */
  double link_efficiency;      /* achievable fraction of nvlink_bandwidth and nic_bandwidth,
                                  (0, 1]; 0 reads as 1 (not derated) */
  char *description;           /* one line for `stepsim list nodes`; owned, may be NULL */
  /* Host CPU and NVMe, for ZeRO-Offload / ZeRO-Infinity (hardware/node_catalog.c sources). */
  guint cpu_cores;             /* host CPU cores per node; 0: no offloaded optimizer step */
  double cpu_adam_rate;        /* parameters/s one core updates in a CPU Adam step */
  guint nvme_drives;           /* NVMe drives per node (0: none) */
  double nvme_read_bandwidth;  /* B/s per drive, sequential read */
  double nvme_write_bandwidth; /* B/s per drive, sequential write */
  double nvme_capacity;        /* B per drive */
  /* W per GPU: the node's power beyond its GPU boards (CPUs, DRAM, NVSwitches, NICs, fans,
   * power-supply losses) at the system's maximum, shared by its GPUs (node_catalog.c);
   * 0 when not known. */
  double overhead_power;
} HwNodeSpec;

void hw_node_spec_clear (HwNodeSpec *spec); /* frees members, not the struct */
void hw_node_spec_copy_into (HwNodeSpec *dst, const HwNodeSpec *src); /* deep copy */

/* The fabric between nodes: leaf–spine with an oversubscription ratio (1 = non-blocking),
 * and above it, for clusters of several pods, a core (super-spine) tier: nodes are grouped in
 * pods of `nodes_per_pod` consecutive nodes (NVIDIA DGX SuperPOD reference architecture: a
 * scalable unit of 32 nodes under its own leaf/spine group, the core switches joining the
 * units), and traffic between pods also crosses the pods' core links, each pod's
 * nodes_per_pod · n_nics · NIC / (spine_oversubscription · pod_oversubscription) per
 * direction (hardware/topology.h). Zero-initialised members keep the one-tier fabric. */
typedef struct
{
  double spine_oversubscription; /* >= 1 */
  guint nodes_per_pod;           /* divides the node count, or is at least it (the cluster
                                  * inside one pod); 0: all nodes one pod (one tier) */
  double pod_oversubscription;   /* spine → core taper, >= 1; 0 reads as 1 */
} HwFabricSpec;

typedef struct _HwCluster HwCluster;
typedef struct _HwTopology HwTopology; /* hardware/topology.h */

typedef enum
{
  HW_COPY_H2D, /* host to device */
  HW_COPY_D2H, /* device to host */
} HwCopyDirection;

typedef enum
{
  HW_NVME_READ,  /* drive to host DRAM */
  HW_NVME_WRITE, /* host DRAM to drive */
} HwNvmeDirection;

/* Instantiates `n_nodes` nodes of `node` (copied) on `fluid` (borrowed, must outlive the
 * cluster). Ranks are numbered node-major: rank = node × n_gpus + local index. */
HwCluster *hw_cluster_new (const HwNodeSpec *node, guint n_nodes, SimFluid *fluid);
/* Same with an explicit fabric (hw_cluster_new uses a non-blocking one, one pod): its
 * oversubscriptions >= 1 and nodes_per_pod 0, dividing n_nodes or >= n_nodes (API misuse otherwise:
 * NULL; hardware/cluster_spec.h reports bad scenario values as errors). */
HwCluster *hw_cluster_new_with_fabric (const HwNodeSpec *node, guint n_nodes,
                                       const HwFabricSpec *fabric, SimFluid *fluid);

/* Stragglers and jitter. A rank's compute slow-down factor (>= 1, default 1) multiplies the
 * compute time of its kernels. With jitter cv > 0, every kernel's compute time is further
 * multiplied by a factor drawn from a seeded GRand: max(least, 1 + cv·N(0,1)) (Box–Muller),
 * so the same seed gives the same run; `least` is 0.5, or more where that would run the
 * FLOPs the kernel computes above the GPU's peak (its efficiency over the slow-down). */
void hw_cluster_set_slowdown (HwCluster *cluster, guint rank, double factor);
void hw_cluster_set_jitter (HwCluster *cluster, double cv, guint32 seed);
void hw_cluster_free (HwCluster *cluster); /* NULL is a no-op */

/* Readies the cluster for another replay on its fluid, which the caller has reset
 * (sim_fluid_reset, then sim_engine_reset): what one run changes goes back to what
 * hw_cluster_new left (no SM held by a collective, no persistent GEMM launched, collective
 * ids from 1 again) and the jitter, if any, is drawn afresh from `seed`, as
 * hw_cluster_set_jitter (cluster, cv, seed) does. Kept: the topology and its fluid
 * resources, the stragglers, the no-host-copies flag, the rank shift and the memos of pure
 * functions (kernel efficiencies, collective lowerings), so the next replay gives what a
 * new cluster configured alike gives, without building a million resources again. */
void hw_cluster_reset (HwCluster *cluster, guint32 seed);

/* Rank classes (models/plan/rank_classes.h). hw_cluster_shift_invariant: whether the rank
 * shift's group (hardware/rank_shift.h; its n the cluster's rank count) maps the cluster
 * onto itself: each generator maps the topology (hw_topology_shift_map) and the stragglers'
 * slow-downs (equal on r and its image) onto themselves, and no kernel jitter (its draws
 * differ per kernel). hw_cluster_set_shift: from now on, the cluster simulates one rank per
 * class (the representatives, hw_rank_shift_is_rep): the fluid folds every resource onto
 * the least resource of its orbit under the group, its weight scaled by m / |orbit|
 * (m = hw_rank_shift_multiplicity; sim_fluid_set_fold), and a collective started on one
 * instance of an orbit of instances (hw_collective_start) runs one flow per orbit of
 * flows. The shift must be invariant (API misuse otherwise); the identity (the default) is
 * the full simulation. hw_cluster_shift returns it (borrowed, the cluster's). */
/* Declares that the run makes no host copy (no offload, no paged states): see
 * hw_topology_set_no_host_copies; a host copy started afterwards is API misuse. */
void hw_cluster_set_no_host_copies (HwCluster *cluster);
gboolean hw_cluster_shift_invariant (const HwCluster *cluster, const HwRankShift *shift);
void hw_cluster_set_shift (HwCluster *cluster, const HwRankShift *shift);
const HwRankShift *hw_cluster_shift (const HwCluster *cluster);

guint hw_cluster_n_ranks (const HwCluster *cluster);
guint hw_cluster_n_nodes (const HwCluster *cluster);
const HwGpuSpec *hw_cluster_gpu (const HwCluster *cluster, guint rank);
const HwNodeSpec *hw_cluster_node_spec (const HwCluster *cluster);
SimFluid *hw_cluster_fluid (const HwCluster *cluster);
/* The fabric the cluster was built with, and its resources and routes (borrowed). */
const HwFabricSpec *hw_cluster_fabric (const HwCluster *cluster);
const HwTopology *hw_cluster_topology (const HwCluster *cluster);

/* Starts a kernel on `rank`: `flops` (FLOP, >= 0) at tensor dtype `dtype` and `bytes`
 * (B, >= 0) of HBM traffic; `done` is called on completion. Returns the activity id. */
SimActivityId hw_cluster_start_kernel (HwCluster *cluster, guint rank, HwDtype dtype,
                                       double flops, double bytes, SimActivityDoneFunc done,
                                       gpointer user_data);

/* As hw_cluster_start_kernel(), with the kernel's shape for the kernel model
 * (hardware/kernel.h): its compute share is hw_kernel_compute_seconds() instead of the flat
 * peak × compute_efficiency. `shape` NULL: the flat rate. */
SimActivityId hw_cluster_start_kernel_shaped (HwCluster *cluster, guint rank, HwDtype dtype,
                                              const HwKernelShape *shape, double flops,
                                              double bytes, SimActivityDoneFunc done,
                                              gpointer user_data);

/* As hw_cluster_start_kernel_shaped(), but the kernel starts sharing `delay` (s, >= 0;
 * negative counts as 0) later: its latency is kernel_latency + delay. The executor passes
 * the time until the host has issued the kernel (models/plan/executor.c). A persistent GEMM
 * (Hopper) whose GPU a collective begins to hold SMs on at the same instant is launched
 * again with the tail that hold gives it: the returned id then names nothing any more, and
 * `done` is called for the relaunched kernel (callers keep `done` and `user_data` only). */
SimActivityId hw_cluster_start_kernel_after (HwCluster *cluster, guint rank, HwDtype dtype,
                                             const HwKernelShape *shape, double flops,
                                             double bytes, double delay,
                                             SimActivityDoneFunc done, gpointer user_data);

/* hw_cluster_start_kernel_after (cluster, rank, dtype, shape, flops, bytes, delay, done,
 * user_data), or, with `off_engine`, when the kernel's whole run would happen with nothing
 * else in the simulation happening meanwhile (no SMs held on `rank`, and the fluid's
 * sim_fluid_run_lone accepts it: an idle fluid, nothing due in the engine before its end),
 * that run at once: the engine's clock moves to its end, *end (s) is set to it, `done` is
 * not called (the caller goes on as its done callback would) and TRUE is returned. The
 * jitter draw is the same either way. FALSE when it was started on the fluid (`done` will
 * be called). `off_engine` only from inside an engine event, as the last thing it does. */
gboolean hw_cluster_run_kernel (HwCluster *cluster, guint rank, HwDtype dtype,
                                const HwKernelShape *shape, double flops, double bytes,
                                double delay, gboolean off_engine, SimActivityDoneFunc done,
                                gpointer user_data, double *end);

/* The seconds `flops` (>= 0) of a kernel of `shape` (NULL: flat) in `dtype` take on one of
 * the cluster's GPUs at its peak × the kernel model's efficiency, before a rank's slow-down
 * and jitter (0 without FLOPs; -1 on bad arguments): a pure function of the cluster's GPU
 * and the arguments, which a caller running the same kernel again may keep
 * (hw_cluster_run_kernel_base). */
double hw_cluster_kernel_base_seconds (const HwCluster *cluster, HwDtype dtype,
                                       const HwKernelShape *shape, double flops);

/* hw_cluster_run_kernel with the kernel's FLOPs given as `base` =
 * hw_cluster_kernel_base_seconds (cluster, dtype, shape, flops): the same run, the same
 * result. */
gboolean hw_cluster_run_kernel_base (HwCluster *cluster, guint rank, HwDtype dtype,
                                     const HwKernelShape *shape, double base, double bytes,
                                     double delay, gboolean off_engine, SimActivityDoneFunc done,
                                     gpointer user_data, double *end);

/* When a kernel that hw_cluster_start_kernel_after (cluster, rank, dtype, shape, flops,
 * bytes, delay, …) would start at `now` (s) ends, if nothing else runs on `rank`'s GPU
 * compute and HBM from its start to its end and no collective holds SMs there: the same
 * jitter draw (the generator advances as for the start), the same fluid uses, and their
 * lone completion time (sim/fluid.h sim_fluid_lone_end), so the same bits as the engine's
 * run. The fluid and the engine are not changed. The caller guarantees that the kernel is
 * alone; SMs held on the rank are API misuse (returns NAN). */
double hw_cluster_kernel_lone_end (HwCluster *cluster, guint rank, HwDtype dtype,
                                   const HwKernelShape *shape, double flops, double bytes,
                                   double delay, double now);

/* Starts a copy of `bytes` B between `rank` and its host over PCIe in direction `dir`. */
SimActivityId hw_cluster_start_copy (HwCluster *cluster, guint rank, HwCopyDirection dir,
                                     double bytes, SimActivityDoneFunc done,
                                     gpointer user_data);

/* Starts a host-CPU step of `params` (> 0) parameter updates on the CPU of `rank`'s node
 * (resource node<n>.cpu, capacity cpu_cores × cpu_adam_rate parameters/s, shared max-min
 * by every rank of the node). Alone it takes params / (cores × rate). The node must have
 * cpu_cores > 0 and cpu_adam_rate > 0 (API misuse otherwise: returns 0). */
SimActivityId hw_cluster_start_host_compute (HwCluster *cluster, guint rank, double params,
                                             SimActivityDoneFunc done, gpointer user_data);

/* Starts an NVMe transfer of `bytes` (> 0) B on the drives of `rank`'s node: a read (drive
 * → host) uses node<n>.nvme.read and node<n>.nvme.total, a write nvme.write and nvme.total.
 * With `via_gpu` the data continues to (read) or comes from (write) the GPU of `rank` over
 * its host route (hardware/topology.h), as ZeRO-Infinity's bounce through pinned host
 * buffers does, so alone it runs at min(PCIe, drive) bandwidth. Latency: HW_NVME_LATENCY.
 * The node must have NVMe drives (API misuse otherwise: returns 0). */
SimActivityId hw_cluster_start_nvme (HwCluster *cluster, guint rank, HwNvmeDirection dir,
                                     gboolean via_gpu, double bytes, SimActivityDoneFunc done,
                                     gpointer user_data);

/* Time (s) the kernel would take alone on an idle GPU (closed form of the above, with the
 * rank's slow-down; jitter, being random, is left out). */
double hw_cluster_kernel_time_alone (const HwCluster *cluster, guint rank, HwDtype dtype,
                                     double flops, double bytes);
/* The same for a kernel of `shape` (NULL: flat), as hw_cluster_start_kernel_shaped(). */
double hw_cluster_kernel_time_alone_shaped (const HwCluster *cluster, guint rank, HwDtype dtype,
                                            const HwKernelShape *shape, double flops,
                                            double bytes);

/* Whether `resource` (of the cluster's fluid) carries traffic between devices — a link
 * direction (NVLink, PCIe, NIC, spine) or an NVMe drive — as opposed to a device's own
 * compute, HBM or host CPU, whose usage changes with every kernel. Link usage is what a
 * run records as load series (B/s). */
gboolean hw_cluster_resource_is_link (const HwCluster *cluster, SimResourceId resource);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (HwCluster, hw_cluster_free)
