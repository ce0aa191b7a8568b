/* hardware/catalog.c — the built-in GPU catalog (a static table) and GPUs defined in a
 * scenario's [gpu.NAME] group.
 *
 * Sources. Peaks (dense, no sparsity), HBM bandwidth, NVLink and host-link generation are
 * NVIDIA datasheet figures (S) as collected in ../shared/reference/hardware.md; measured
 * figures (M) come from the same file (ml-engineering matmul and nvbandwidth runs, HF docs).
 * Every entry's `source` string says which figure is which and states each assumption.
 *
 * Conventions chosen here (all entries):
 *  - memory_capacity is the total the driver reports (nvidia-smi memory.total, MiB), since
 *    that is what a job's device-used memory is compared against. Where we have seen that
 *    number in public nvidia-smi logs it is used; otherwise the marketed size is read as GiB
 *    (NVIDIA's "80 GB" HBM is 80 GiB of chips; the driver reports within ~1 % of it).
 *  - compute_efficiency is the best-case measured BF16 GEMM over the dense peak where
 *    hardware.md has one; otherwise DEFAULT_COMPUTE_EFFICIENCY.
 *  - All other efficiency/latency figures are documented defaults (below), not measurements.
 * Invariant: every entry passes hw_gpu_spec_validate() (tests/unit/hardware/test_catalog.c).
 */
#include "config.h"
#include "hardware/catalog.h"

#include <math.h>
#include <stddef.h>

#include "sim/text.h"
#include "sim/units.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)
#define GBPS 1e9  /* B/s */
#define TBPS 1e12 /* B/s */
#define TFLOPS 1e12
#define US 1e-6

/* Assumption: best-case GEMMs reach 78–87 % of the dense BF16 peak on the GPUs measured in
 * hardware.md (A100 0.87, H100/H200 0.80, B200 0.78); 0.80 is used where none is measured. */
#define DEFAULT_COMPUTE_EFFICIENCY 0.80
/* Assumption: streaming (copy/triad-like) kernels reach ~80–90 % of the HBM peak; 0.85 is
 * the midpoint. Not measured in hardware.md. */
#define DEFAULT_HBM_EFFICIENCY 0.85
/* M: 1,343 "MB" of CUDA context + PyTorch kernels on a V100 (HF transformers docs, "model
 * memory anatomy"; their helper divides NVML bytes by 1024², so the unit is MiB). */
#define CONTEXT_V100 (1343 * MIB)
/* Assumption for Ampere and newer: CUDA ≥ 11.7 lazy module loading (PyTorch's default since
 * 2.x) leaves ~0.3–0.6 GiB; eager loading of cuBLAS/cuDNN can exceed 1 GiB. 1 GiB errs on
 * the side of not fitting. */
#define CONTEXT_LAZY (1.0 * GIB)
/* Effective host-link bandwidth per direction, x16: Gen3 ~12 GB/s and Gen4 ~25 GB/s typical
 * (hardware.md, unmeasured), Gen5 55 GB/s (M: 8×H200 nvbandwidth, 55.4 H2D / 55.1 D2H). */
#define PCIE_GEN3 (12 * GBPS)
#define PCIE_GEN4 (25 * GBPS)
#define PCIE_GEN5 (55 * GBPS)
/* Assumption: ~2 us setup per host↔device copy (driver call + DMA start). */
#define PCIE_LATENCY (2 * US)
/* Assumption: ~4 us launch overhead per kernel (typical 3–5 us for an empty kernel launched
 * from PyTorch's eager mode; a full launch queue hides part of it). */
#define KERNEL_LATENCY (4 * US)

/* host_dispatch (HwGpuSpec) is 0 in every entry: the CPU cost of issuing a kernel belongs to
 * the framework and the host, not the GPU: the framework profile's host time per PyTorch op
 * (models/stack/framework.c host_op_time, host_backward_op_time) times the ops each kernel
 * stands for (ModelOp.host_ops). A [gpu.NAME] group may add a per-kernel cost. */

/* One-line sources of compute_efficiency (hw_kernel_describe_factors()). */
#define SRC_EFF_V_DEFAULT "assumption 0.80 (no measured GEMM in hardware.md)"
/* A100: the best-shape matmul (271 of 312 TFLOP/s, hardware.md, M) at the clock the GPU holds
 * under sustained load, ~1200 of its 1410 MHz boost (M: liangan1/GPU_travel
 * performance/flash-attn/README.md, kernels.md §2, a third-party note: weak). 271 TFLOP/s
 * needs >= 1225 MHz at full tensor-core use, so that sweep ran near boost; a training run's
 * back-to-back GEMMs do not (as Hopper's TE figure, below, is 0.90 of its sweep's best). */
#define A100_SUSTAINED (271.0 / 312.0 * 1200.0 / 1410.0)
#define SRC_EFF_A100 "M: A100 best BF16 matmul 271/312 (hardware.md) x sustained clock 1200/1410 MHz (liangan1/GPU_travel, kernels.md §2; weak)"
#define SRC_EFF_B200 "M: B200 best BF16 matmul 1745 of 2250 TFLOP/s (hardware.md)"
/* Hopper: the sustained rate of a training layer's GEMMs, not the best shape of a sweep.
 * TE gemm_profiling (kernels.md §1, M): 6.39 TFLOP of per-layer forward GEMMs (M = 15,872,
 * K/N 4096–16384, all tile-aligned) in 10.653 ms on an H200 NVL = 600 TFLOP/s, over its
 * dense BF16 peak of 835 TFLOP/s (NVIDIA H200 NVL datasheet: 1,671 with sparsity) = 0.718;
 * the same GH100 die's fraction is taken for H100/H200 SXM and H100 PCIe. The best-shape
 * figure (795/989 = 0.80, hardware.md) is a sweep's maximum at boost clock. */
#define HOPPER_SUSTAINED (600.0 / 835.0)
#define SRC_EFF_HOPPER "M: TE gemm_profiling H200 NVL BF16 layer GEMMs 600 of 835 TFLOP/s (kernels.md §1)"

#define SRC_DEFAULTS                                                                           \
  "hbm_efficiency 0.85, pcie_latency 2 us, kernel_latency 4 us: documented assumptions "      \
  "(hardware/catalog.c)."
#define SRC_CTX_LAZY "cuda_context 1 GiB: assumption (lazy module loading, conservative). "
#define SRC_EFF_DEFAULT "compute_efficiency 0.80: assumption (no measured GEMM in hardware.md). "
#define SRC_GEN3 "PCIe Gen3 x16, 12 GB/s effective (typical, unmeasured). "
#define SRC_GEN4 "PCIe Gen4 x16, 25 GB/s effective (typical, unmeasured). "
#define SRC_GEN5 "PCIe Gen5 x16, 55 GB/s (M: 8xH200 nvbandwidth). "
#define SRC_PEAKS "Peaks, HBM bandwidth, NVLink: NVIDIA datasheet via hardware.md (S). "

#define PEAKS(fp32, tf32, bf16, fp16, fp8)                                                     \
  {                                                                                            \
    [HW_DTYPE_FP32] = (fp32) * TFLOPS, [HW_DTYPE_TF32] = (tf32) * TFLOPS,                      \
    [HW_DTYPE_BF16] = (bf16) * TFLOPS, [HW_DTYPE_FP16] = (fp16) * TFLOPS,                      \
    [HW_DTYPE_FP8] = (fp8) * TFLOPS,                                                           \
  }

/* String literals are char[] in C, so they initialise the char * fields; entries are never
 * freed or modified (they are only handed out as const or copied). */
/* Collectives run as CUDA kernels that hold SMs for their whole duration: an NCCL
 * all-gather launches 24 CTAs on an H100 (132 SMs), measured with Nsight Systems (NVIDIA
 * developer forum, "Compute-communication overlap causes severe GEMM performance
 * degradation", 2025). We assume the same 24 CTAs on every GPU and divide by each GPU's SM
 * count (datasheets: V100 80, A100 108, H100 SXM 132, H100 PCIe 114, H200 132, B200 148,
 * RTX 3090 82, RTX 4090 128). The wave-quantisation tail effect reported there comes on
 * top and is not modelled. */
#define NCCL_CTAS 24.0

/* Board power under load (W): the datasheet maximum, "Max thermal design power (TDP)" or
 * "max power consumption" (S): V100 SXM2 300 W (Tesla V100 datasheet); A100 SXM4 400 W and
 * A100 80GB PCIe 300 W (A100 datasheet); H100 SXM5 up to 700 W and H100 PCIe 350 W (H100
 * datasheet, configurable, the maximum taken); H200 SXM up to 700 W (H200 datasheet); B200
 * 1000 W (DGX B200 / HGX B200 specifications, per GPU); RTX 3090 350 W and RTX 4090 450 W
 * ("graphics card power" / "total graphics power", GeForce specification pages). Training
 * kernels hold the board at or near its power limit, so this is the default draw under load
 * (an upper bound for memory-bound phases). NVIDIA's datasheets give no idle power for these
 * parts, so idle_power is 0 (not given) for all of them: the draw is then board_power for
 * the whole step, and a scenario can give idle_power in a [gpu.NAME] group to make it
 * follow the compute-busy fraction (cli/report/training.h). */
#define POWER(w) .board_power = (w), .idle_power = 0
#define SRC_POWER(w) "power " w " W: datasheet maximum board power (S); no idle figure. "

static const HwGpuSpec catalog[] = {
  { .name = "V100-16GB-SXM2", .description = "NVIDIA V100 SXM2 16 GB (Volta, NVLink 2)",
    .memory_capacity = 16 * GIB, .hbm_bandwidth = 0.9 * TBPS,
    /* Volta tensor cores do FP16 only: no BF16, TF32 or FP8. */
    .peak_flops = PEAKS (15.7, 0, 0, 125, 0), .compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_V100,
    .pcie_bandwidth = PCIE_GEN3, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 150 * GBPS,
    POWER (300), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 80.0,
    .sm_count = 80, .generation = HW_GPU_GEN_VOLTA,
    .efficiency_source = SRC_EFF_V_DEFAULT,
    .source = SRC_POWER ("300") SRC_PEAKS "Memory: 16 GiB (marketed size read as GiB; driver reports ~16,130-"
              "16,160 MiB). bf16/tf32/fp8 0: unsupported on Volta (fp16 125). cuda_context "
              "1343 MiB (M: HF docs, V100 + PyTorch). " SRC_EFF_DEFAULT SRC_GEN3 SRC_DEFAULTS },
  { .name = "V100-32GB-SXM2", .description = "NVIDIA V100 SXM2 32 GB (Volta, NVLink 2)",
    .memory_capacity = 32 * GIB, .hbm_bandwidth = 0.9 * TBPS,
    .peak_flops = PEAKS (15.7, 0, 0, 125, 0), .compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_V100,
    .pcie_bandwidth = PCIE_GEN3, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 150 * GBPS,
    POWER (300), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 80.0,
    .sm_count = 80, .generation = HW_GPU_GEN_VOLTA,
    .efficiency_source = SRC_EFF_V_DEFAULT,
    .source = SRC_POWER ("300") SRC_PEAKS "Memory: 32 GiB (marketed size read as GiB; unverified against "
              "nvidia-smi). bf16/tf32/fp8 0: unsupported on Volta (fp16 125). cuda_context "
              "1343 MiB (M: HF docs, V100 + PyTorch). " SRC_EFF_DEFAULT SRC_GEN3 SRC_DEFAULTS },
  { .name = "A100-40GB-SXM", .description = "NVIDIA A100 SXM4 40 GB (Ampere, NVLink 3)",
    .memory_capacity = 40536 * MIB, .hbm_bandwidth = 1.555 * TBPS,
    .peak_flops = PEAKS (19.5, 156, 312, 312, 0), .compute_efficiency = A100_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN4, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 300 * GBPS,
    POWER (400), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 108.0,
    .sm_count = 108, .generation = HW_GPU_GEN_AMPERE,
    .efficiency_source = SRC_EFF_A100,
    .source = SRC_POWER ("400") SRC_PEAKS "Memory: 40,536 MiB (M: nvidia-smi memory.total, recent drivers; "
              "older ones show 40,960). fp8 0: unsupported on Ampere. compute_efficiency "
              "271/312 (M: A100 SXM best BF16 matmul, same die as the 80 GB). " SRC_CTX_LAZY
              SRC_GEN4 SRC_DEFAULTS },
  { .name = "A100-80GB-SXM", .description = "NVIDIA A100 SXM4 80 GB (Ampere, NVLink 3)",
    .memory_capacity = 81920 * MIB, .hbm_bandwidth = 2.039 * TBPS,
    .peak_flops = PEAKS (19.5, 156, 312, 312, 0), .compute_efficiency = A100_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN4, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 300 * GBPS,
    POWER (400), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 108.0,
    .sm_count = 108, .generation = HW_GPU_GEN_AMPERE,
    .efficiency_source = SRC_EFF_A100,
    .source = SRC_POWER ("400") SRC_PEAKS "Memory: 81,920 MiB = 80 GiB (M: nvidia-smi memory.total). fp8 0: "
              "unsupported on Ampere. compute_efficiency 271/312 x 1200/1410 (M: best BF16 matmul at the "
              "sustained clock). "
              SRC_CTX_LAZY SRC_GEN4 SRC_DEFAULTS },
  { .name = "A100-80GB-PCIE", .description = "NVIDIA A100 PCIe 80 GB (Ampere, no NVSwitch)",
    .memory_capacity = 81920 * MIB, .hbm_bandwidth = 1.935 * TBPS,
    .peak_flops = PEAKS (19.5, 156, 312, 312, 0), .compute_efficiency = A100_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN4, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 0,
    POWER (300), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 108.0,
    .sm_count = 108, .generation = HW_GPU_GEN_AMPERE,
    .efficiency_source = SRC_EFF_A100,
    .source = SRC_POWER ("300") SRC_PEAKS "HBM 1,935 GB/s (datasheet; hardware.md rounds to 1.94 TB/s). Memory "
              "80 GiB as the SXM part (assumption). nvlink 0: the optional 2-card bridge is "
              "not modelled (set nvlink_bandwidth in a [gpu.*] group). compute_efficiency "
              "271/312 x 1200/1410 from the SXM part (assumption: 300 W cap may clock lower). fp8 0. "
              SRC_CTX_LAZY SRC_GEN4 SRC_DEFAULTS },
  { .name = "H100-SXM", .description = "NVIDIA H100 SXM5 80 GB HBM3 (Hopper, NVLink 4)",
    .memory_capacity = 81559 * MIB, .hbm_bandwidth = 3.35 * TBPS,
    .peak_flops = PEAKS (67, 494.5, 989, 989, 1979), .compute_efficiency = HOPPER_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN5, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 450 * GBPS,
    POWER (700), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 132.0,
    .sm_count = 132, .generation = HW_GPU_GEN_HOPPER,
    .efficiency_source = SRC_EFF_HOPPER,
    .source = SRC_POWER ("700") SRC_PEAKS "Memory: 81,559 MiB (M: nvidia-smi memory.total). compute_efficiency "
              "600/835 (M: TE layer GEMMs, H200 NVL; best-shape sweep 795/989). " SRC_CTX_LAZY SRC_GEN5 SRC_DEFAULTS },
  { .name = "H100-PCIE", .description = "NVIDIA H100 PCIe 80 GB (Hopper, no NVSwitch)",
    .memory_capacity = 81559 * MIB, .hbm_bandwidth = 2.0 * TBPS,
    .peak_flops = PEAKS (51, 378, 756, 756, 1513), .compute_efficiency = HOPPER_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN5, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 0,
    POWER (350), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 114.0,
    .sm_count = 114, .generation = HW_GPU_GEN_HOPPER,
    .efficiency_source = SRC_EFF_HOPPER,
    .source = SRC_POWER ("350") SRC_PEAKS "Memory 81,559 MiB as the SXM part (assumption). nvlink 0: the "
              "optional 2-card bridge is not modelled. compute_efficiency 600/835 from the "
              "SXM part (assumption). " SRC_CTX_LAZY SRC_GEN5 SRC_DEFAULTS },
  { .name = "H200-SXM", .description = "NVIDIA H200 SXM 141 GB HBM3e (Hopper, NVLink 4)",
    .memory_capacity = 143771 * MIB, .hbm_bandwidth = 4.8 * TBPS,
    .peak_flops = PEAKS (67, 494.5, 989, 989, 1979), .compute_efficiency = HOPPER_SUSTAINED,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN5, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 450 * GBPS,
    POWER (700), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 132.0,
    .sm_count = 132, .generation = HW_GPU_GEN_HOPPER,
    .efficiency_source = SRC_EFF_HOPPER,
    .source = SRC_POWER ("700") SRC_PEAKS "Memory: 143,771 MiB = 140.4 GiB (M: nvidia-smi memory.total; the "
              "marketed 141 GB is binary-ish, not 141e9). compute_efficiency 600/835 (M: "
              "TE layer GEMMs on H200 NVL). " SRC_CTX_LAZY SRC_GEN5 SRC_DEFAULTS },
  { .name = "B200-SXM", .description = "NVIDIA B200 SXM 180 GB HBM3e (Blackwell, NVLink 5)",
    .memory_capacity = 183359 * MIB, .hbm_bandwidth = 8.0 * TBPS,
    .peak_flops = PEAKS (80, 1125, 2250, 2250, 4500), .compute_efficiency = 1745.0 / 2250.0,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN5, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 900 * GBPS,
    POWER (1000), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 148.0,
    .sm_count = 148, .generation = HW_GPU_GEN_BLACKWELL,
    .efficiency_source = SRC_EFF_B200,
    .source = SRC_POWER ("1000") SRC_PEAKS "Memory: 183,359 MiB = 179.1 GiB (M: nvidia-smi memory.total). "
              "compute_efficiency 1745/2250 (M: best BF16 matmul). PCIe Gen5 bandwidth "
              "taken from H200 (assumption). " SRC_CTX_LAZY SRC_GEN5 SRC_DEFAULTS },
  /* GB200: one Blackwell GPU of a GB200 superchip (two GPUs and a Grace CPU). The same
   * die as B200 at a higher power limit (higher dense peaks, 2500 vs 2250 BF16), so every
   * measured or assumed factor is B200's: no GB200 GEMM sweep, context or launch figure is
   * published in hardware.md. Host link: NVLink-C2C, 900 GB/s total between the Grace CPU
   * and its GPUs = 450 GB/s per direction (S: NVIDIA GB200 NVL72 page and Grace Blackwell
   * datasheet via hardware.md's "NVLink-C2C" and 900 GB/s); taken as each GPU's own link
   * to host memory (assumption: the two GPUs of a superchip share one Grace's C2C, whose
   * figure NVIDIA gives per superchip; host copies of both GPUs at once would then see half;
   * not modelled). */
  { .name = "GB200", .description = "NVIDIA GB200 (one Blackwell GPU of a Grace Blackwell superchip) 186 GB HBM3e, NVLink 5, NVLink-C2C host link",
    .memory_capacity = 186 * GIB, .hbm_bandwidth = 8.0 * TBPS,
    .peak_flops = PEAKS (80, 1250, 2500, 2500, 5000), .compute_efficiency = 1745.0 / 2250.0,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = 450 * GBPS, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 900 * GBPS,
    POWER (0), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 148.0,
    .sm_count = 148, .generation = HW_GPU_GEN_BLACKWELL,
    .efficiency_source = SRC_EFF_B200 " (assumed for GB200: same die)",
    .source = "power 0: not known (NVIDIA gives the GB200 superchip's and the rack's power, "
              "not one GPU board's). " SRC_PEAKS "Peaks: GB200 NVL72 per-GPU figures "
              "(hardware.md: FP32 80, TF32 1250, BF16/FP16 2500, FP8 5000 TFLOP/s dense; "
              "8.0 TB/s; NVLink 5 900 GB/s per direction). Memory: 186 GB read as GiB (no "
              "nvidia-smi figure seen). compute_efficiency 1745/2250 (M: B200 best BF16 matmul, "
              "same die; A for GB200). Host link: NVLink-C2C 900 GB/s total, 450 GB/s per "
              "direction (S: NVIDIA GB200 NVL72 product page, https://www.nvidia.com/en-us/"
              "data-center/gb200-nvl72/), taken per GPU (A: the superchip's two GPUs share it). "
              "SM count 148 as B200 (A). " SRC_CTX_LAZY SRC_DEFAULTS },
  /* MI300X (S: AMD Instinct MI300X datasheet, amd.com; the same figures in the MI300X-vs-
   * H200 study's methodology, github.com/alpharomercoma/MI300X-vs-H200, and MLPerf Inference
   * v4.1 AMD 8xMI300X system description: "MI300X-NPS1-SPX-192GB-750W", PCIe Gen5 x16, XGMI):
   * 192 GB HBM3 at 5.3 TB/s, dense matrix peaks FP32 163.4, TF32 653.7, BF16/FP16 1307.4,
   * FP8 2614.9 TFLOP/s (no sparsity), 750 W, 304 CUs (ROCm docs, "MI300 series
   * microarchitecture": 8 XCDs of 38 active CUs). Peer links: 7 Infinity Fabric links of 64
   * GB/s per direction, modelled as one 448 GB/s port per GPU in node MI300X-8
   * (node_catalog.c). No measured GEMM, context or launch figure in hardware.md: the
   * documented defaults (DEFAULT_COMPUTE_EFFICIENCY 0.80 is likely optimistic for ROCm's
   * 2024 libraries, not corrected without a measurement). */
  { .name = "MI300X", .description = "AMD Instinct MI300X 192 GB HBM3 (CDNA 3, Infinity Fabric)",
    .memory_capacity = 192 * GIB, .hbm_bandwidth = 5.3 * TBPS,
    .peak_flops = PEAKS (163.4, 653.7, 1307.4, 1307.4, 2614.9),
    .compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN5, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 448 * GBPS,
    POWER (750), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 304.0,
    .sm_count = 304, .generation = HW_GPU_GEN_CDNA3,
    .efficiency_source = SRC_EFF_V_DEFAULT,
    .source = SRC_POWER ("750") "Peaks (dense matrix FP32 163.4, TF32 653.7, BF16/FP16 "
              "1307.4, FP8 2614.9 TFLOP/s), 192 GB HBM3, 5.3 TB/s, 750 W, PCIe Gen5 x16: AMD "
              "Instinct MI300X datasheet (S). Memory 192 GB read as GiB. 304 CUs (S: ROCm MI300 "
              "microarchitecture). nvlink_bandwidth 448 GB/s: the 7 Infinity Fabric peer links "
              "x 64 GB/s per direction as one aggregate port (A, approximation: node_catalog.c "
              "MI300X-8). comm_sm_fraction 24 CTAs / 304 CUs (A: NCCL's H100 figure for RCCL). "
              "cuda_context 1 GiB as NVIDIA's (A, HIP context). " SRC_EFF_DEFAULT SRC_GEN5
              SRC_DEFAULTS },
  { .name = "RTX-3090", .description = "NVIDIA GeForce RTX 3090 24 GB GDDR6X (Ampere)",
    .memory_capacity = 24 * GIB, .hbm_bandwidth = 0.936 * TBPS,
    /* Tensor-core figures with FP32 accumulate (what PyTorch uses for training). */
    .peak_flops = PEAKS (35.6, 35.6, 71, 71, 0), .compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN4, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 0,
    POWER (350), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 82.0,
    .sm_count = 82, .generation = HW_GPU_GEN_AMPERE,
    .efficiency_source = SRC_EFF_V_DEFAULT,
    .source = SRC_POWER ("350") SRC_PEAKS "Memory 24 GiB (24,576 MiB). bf16/fp16 71: tensor cores with FP32 "
              "accumulate. nvlink 0: the optional 2-card bridge (56.25 GB/s per direction) "
              "is not modelled. fp8 0. " SRC_EFF_DEFAULT SRC_CTX_LAZY SRC_GEN4 SRC_DEFAULTS },
  { .name = "RTX-4090", .description = "NVIDIA GeForce RTX 4090 24 GB GDDR6X (Ada)",
    .memory_capacity = 24 * GIB, .hbm_bandwidth = 1.008 * TBPS,
    .peak_flops = PEAKS (82.6, 82.6, 165, 165, 330),
    .compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY,
    .hbm_efficiency = DEFAULT_HBM_EFFICIENCY, .cuda_context = CONTEXT_LAZY,
    .pcie_bandwidth = PCIE_GEN4, .pcie_latency = PCIE_LATENCY, .nvlink_bandwidth = 0,
    POWER (450), .kernel_latency = KERNEL_LATENCY,
    .comm_sm_fraction = NCCL_CTAS / 128.0,
    .sm_count = 128, .generation = HW_GPU_GEN_ADA,
    .efficiency_source = SRC_EFF_V_DEFAULT,
    .source = SRC_POWER ("450") SRC_PEAKS "Memory 24 GiB. bf16/fp16 165, fp8 330: tensor cores with FP32 "
              "accumulate. No NVLink. " SRC_EFF_DEFAULT SRC_CTX_LAZY SRC_GEN4 SRC_DEFAULTS },
};

guint
hw_catalog_n_gpus (void)
{
  return G_N_ELEMENTS (catalog);
}

const HwGpuSpec *
hw_catalog_gpu_at (guint i)
{
  g_return_val_if_fail (i < G_N_ELEMENTS (catalog), NULL);
  return &catalog[i];
}

const HwGpuSpec *
hw_catalog_gpu (const char *name, GError **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (catalog); i++)
    if (g_ascii_strcasecmp (name, catalog[i].name) == 0)
      return &catalog[i];

  const char *names[G_N_ELEMENTS (catalog) + 1];
  for (guint i = 0; i < G_N_ELEMENTS (catalog); i++)
    names[i] = catalog[i].name;
  names[G_N_ELEMENTS (catalog)] = NULL;
  char *msg = sim_text_with_hint (g_strdup_printf ("unknown GPU '%s'", name), name, names);
  g_autofree char *known = g_strjoinv (", ", (char **) names);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s (known GPUs: %s)",
               msg, known);
  g_free (msg);
  return NULL;
}

/* ---- [gpu.NAME] groups -------------------------------------------------------------- */

typedef enum
{
  KEY_BASE,        /* catalog name to start from */
  KEY_DESCRIPTION, /* free text */
  KEY_QUANTITY,    /* dimensioned double, parsed with sim_units_parse() */
  KEY_FRACTION,    /* dimensionless double in (0, 1] */
  KEY_SHARE,       /* dimensionless double in [0, 1) (a share of the SMs taken away) */
  KEY_COUNT,       /* dimensionless double, a whole number >= 0 (sm_count) */
  KEY_GENERATION,  /* an architecture name (hw_gpu_generation_from_string) */
} KeyKind;

typedef struct
{
  const char *key;
  KeyKind kind;
  SimDimension dim; /* KEY_QUANTITY only */
  gsize offset;     /* of the double in HwGpuSpec; KEY_QUANTITY, KEY_FRACTION, KEY_SHARE */
  /* KEY_QUANTITY: the accepted range [min, max] in SI units, and whether 0 ("not
   * supported": a dtype without tensor cores, no NVLink) is allowed below min. The same
   * bounds as hw_gpu_spec_validate (hardware/gpu.c), checked here to name the key. */
  double min, max;
  gboolean zero_ok;
} GpuKey;

/* Upper bounds: far above any GPU (B200: 8 TB/s HBM, 4.5 PFLOP/s dense fp8, 1.2 kW), low
 * enough that a typo (1e30) is caught rather than simulated as a step of zero time. */
#define MAX_RATE HW_GPU_MAX_FLOP_RATE
#define MAX_BW HW_GPU_MAX_BANDWIDTH
#define MAX_TIME HW_GPU_MAX_LATENCY
#define MAX_POWER HW_GPU_MAX_POWER
#define MAX_MEM HW_GPU_MAX_MEMORY

#define PEAK_OFFSET(dtype) (offsetof (HwGpuSpec, peak_flops) + (dtype) * sizeof (double))

static const GpuKey gpu_keys[] = {
  { "base", KEY_BASE, 0, 0, 0, 0, FALSE },
  { "description", KEY_DESCRIPTION, 0, 0, 0, 0, FALSE },
  { "memory", KEY_QUANTITY, SIM_DIM_BYTES, offsetof (HwGpuSpec, memory_capacity), 1048576.0,
    MAX_MEM, FALSE },
  { "hbm_bandwidth", KEY_QUANTITY, SIM_DIM_BANDWIDTH, offsetof (HwGpuSpec, hbm_bandwidth), 1e9,
    MAX_BW, FALSE },
  /* fp32 is needed by every GPU: element-wise kernels run there */
  { "fp32", KEY_QUANTITY, SIM_DIM_FLOP_RATE, PEAK_OFFSET (HW_DTYPE_FP32), 1e9, MAX_RATE, FALSE },
  { "tf32", KEY_QUANTITY, SIM_DIM_FLOP_RATE, PEAK_OFFSET (HW_DTYPE_TF32), 1e9, MAX_RATE, TRUE },
  { "bf16", KEY_QUANTITY, SIM_DIM_FLOP_RATE, PEAK_OFFSET (HW_DTYPE_BF16), 1e9, MAX_RATE, TRUE },
  { "fp16", KEY_QUANTITY, SIM_DIM_FLOP_RATE, PEAK_OFFSET (HW_DTYPE_FP16), 1e9, MAX_RATE, TRUE },
  { "fp8", KEY_QUANTITY, SIM_DIM_FLOP_RATE, PEAK_OFFSET (HW_DTYPE_FP8), 1e9, MAX_RATE, TRUE },
  { "compute_efficiency", KEY_FRACTION, 0, offsetof (HwGpuSpec, compute_efficiency), 0, 0,
    FALSE },
  { "hbm_efficiency", KEY_FRACTION, 0, offsetof (HwGpuSpec, hbm_efficiency), 0, 0, FALSE },
  { "cuda_context", KEY_QUANTITY, SIM_DIM_BYTES, offsetof (HwGpuSpec, cuda_context), 0, MAX_MEM,
    TRUE },
  { "pcie_bandwidth", KEY_QUANTITY, SIM_DIM_BANDWIDTH, offsetof (HwGpuSpec, pcie_bandwidth), 1e8,
    MAX_BW, FALSE },
  { "pcie_latency", KEY_QUANTITY, SIM_DIM_TIME, offsetof (HwGpuSpec, pcie_latency), 0, MAX_TIME,
    TRUE },
  { "nvlink_bandwidth", KEY_QUANTITY, SIM_DIM_BANDWIDTH, offsetof (HwGpuSpec, nvlink_bandwidth),
    0, MAX_BW, TRUE },
  { "kernel_latency", KEY_QUANTITY, SIM_DIM_TIME, offsetof (HwGpuSpec, kernel_latency), 0,
    MAX_TIME, TRUE },
  { "host_dispatch", KEY_QUANTITY, SIM_DIM_TIME, offsetof (HwGpuSpec, host_dispatch), 0,
    MAX_TIME, TRUE },
  { "comm_sm_fraction", KEY_SHARE, 0, offsetof (HwGpuSpec, comm_sm_fraction), 0, 0, FALSE },
  { "sm_count", KEY_COUNT, 0, offsetof (HwGpuSpec, sm_count), 0, 0, FALSE },
  { "generation", KEY_GENERATION, 0, 0, 0, 0, FALSE },
  { "power", KEY_QUANTITY, SIM_DIM_POWER, offsetof (HwGpuSpec, board_power), 0, MAX_POWER, TRUE },
  { "idle_power", KEY_QUANTITY, SIM_DIM_POWER, offsetof (HwGpuSpec, idle_power), 0, MAX_POWER,
    TRUE },
};

static const char *const gpu_key_names[G_N_ELEMENTS (gpu_keys) + 1] = {
  "base", "description", "memory", "hbm_bandwidth", "fp32", "tf32", "bf16", "fp16", "fp8",
  "compute_efficiency", "hbm_efficiency", "cuda_context", "pcie_bandwidth", "pcie_latency",
  "nvlink_bandwidth", "kernel_latency", "host_dispatch", "comm_sm_fraction", "sm_count", "generation", "power",
  "idle_power", NULL,
};

const char *const *
hw_catalog_gpu_keys (void)
{
  return gpu_key_names;
}

static const GpuKey *
find_key (const char *key)
{
  for (guint i = 0; i < G_N_ELEMENTS (gpu_keys); i++)
    if (g_strcmp0 (key, gpu_keys[i].key) == 0)
      return &gpu_keys[i];
  return NULL;
}

/* Fails on the first key of `group` not in gpu_keys, naming the nearest valid key. */
static gboolean
check_known_keys (char **keys, const char *group, GError **error)
{
  for (char **k = keys; *k != NULL; k++)
    {
      if (find_key (*k) != NULL)
        continue;
      char *msg = g_strdup_printf ("group [%s], key '%s': unknown key", group, *k);
      msg = sim_text_with_hint (msg, *k, gpu_key_names);
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
      g_free (msg);
      return FALSE;
    }
  return TRUE;
}

/* A GPU defined without `base` gives the keys no default stands for; checked after the keys
 * it gives were read, so a bad one is named first (QA: "memory = 80", no unit, was reported
 * as hbm_bandwidth missing). */
static gboolean
check_required (GKeyFile *kf, const char *group, GError **error)
{
  /* fp32 is needed by every GPU: element-wise kernels and the optimizer run on the CUDA
   * cores (models/plan/plan.c). */
  static const char *const required[] = { "memory", "hbm_bandwidth", "fp32" };
  for (guint i = 0; i < G_N_ELEMENTS (required); i++)
    if (!g_key_file_has_key (kf, group, required[i], NULL))
      {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                     "group [%s]: key '%s' is required when no 'base' GPU is given", group,
                     required[i]);
        return FALSE;
      }
  return TRUE;
}

/* Defaults for a GPU defined without `base`: only the required keys (check_required) are
 * then known; the rest take the documented catalog defaults (no fp8/tf32/fp16 unless given,
 * no NVLink). */
static HwGpuSpec *
spec_from_defaults (const char *group)
{
  HwGpuSpec *spec = g_new0 (HwGpuSpec, 1);
  spec->compute_efficiency = DEFAULT_COMPUTE_EFFICIENCY;
  spec->hbm_efficiency = DEFAULT_HBM_EFFICIENCY;
  spec->cuda_context = CONTEXT_LAZY;
  spec->pcie_bandwidth = PCIE_GEN4;
  spec->pcie_latency = PCIE_LATENCY;
  spec->kernel_latency = KERNEL_LATENCY;
  spec->description = g_strdup_printf ("GPU defined in scenario group [%s]", group);
  spec->source = g_strdup_printf ("scenario group [%s]; figures not given there: "
                                  "compute_efficiency 0.80, cuda_context 1 GiB, pcie_bandwidth "
                                  "25 GB/s (Gen4), other peaks 0, nvlink 0; " SRC_DEFAULTS,
                                  group);
  return spec;
}

/* The starting spec: a copy of the `base` catalog GPU, or the defaults. */
static HwGpuSpec *
spec_start (GKeyFile *kf, const char *group, GError **error)
{
  if (!g_key_file_has_key (kf, group, "base", NULL))
    return spec_from_defaults (group);
  g_autofree char *base_name = sim_text_keyfile_string (kf, group, "base", error);
  if (base_name == NULL)
    {
      g_prefix_error (error, "group [%s], key 'base': ", group);
      return NULL;
    }
  g_autofree char *own = g_strdup_printf ("gpu.%s", g_strstrip (base_name));
  if (g_key_file_has_group (kf, own) && hw_catalog_gpu (base_name, NULL) == NULL)
    {
      /* a [gpu.NAME] of this file is not a base: bases come from the catalog only */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key 'base': '%s' is a group of this file ([%s]); base must name "
                   "a catalog GPU (stepsim list gpus), not a group: copy the keys of [%s] here",
                   group, base_name, own, own);
      return NULL;
    }
  const HwGpuSpec *base = hw_catalog_gpu (base_name, error);
  if (base == NULL)
    {
      g_prefix_error (error, "group [%s], key 'base': ", group);
      return NULL;
    }
  HwGpuSpec *spec = hw_gpu_spec_copy (base);
  g_free (spec->description);
  spec->description = g_strdup_printf ("%s, modified in scenario group [%s]",
                                       base->description, group);
  g_free (spec->source);
  spec->source = g_strdup_printf ("scenario group [%s] overrides base %s; base: %s", group,
                                  base->name, base->source);
  return spec;
}

/* A bound of a figure's range as printed figures are (sim_units_format: "1 GB/s",
 * "0.001 TFLOP/s"), with the fewest decimals that give it back exactly. Caller frees. */
static char *
range_bound (double v, SimDimension dim)
{
  for (int digits = 0; digits <= 9; digits++)
    {
      char *text = sim_units_format (v, dim, digits);
      double back = 0;
      if (sim_units_parse (text, dim, &back, NULL) && fabs (back - v) <= 1e-9 * fabs (v))
        return text;
      g_free (text);
    }
  return g_strdup_printf ("%g %s", v, sim_units_si_name (dim));
}

/* Parses the value of one non-base key into `spec`. */
static gboolean
apply_key (HwGpuSpec *spec, GKeyFile *kf, const char *group, const GpuKey *key, GError **error)
{
  g_autofree char *text = sim_text_keyfile_string (kf, group, key->key, error);
  if (text == NULL)
    goto fail;
  if (key->kind == KEY_DESCRIPTION)
    {
      g_free (spec->description);
      spec->description = g_strdup (g_strstrip (text));
      return TRUE;
    }
  if (key->kind == KEY_GENERATION)
    {
      if (!hw_gpu_generation_from_string (g_strstrip (text), &spec->generation, error))
        goto fail;
      return TRUE;
    }
  double value = 0;
  double *field = (double *) ((char *) spec + key->offset);
  if (key->kind == KEY_QUANTITY)
    {
      if (!sim_units_parse (text, key->dim, &value, error))
        goto fail;
      if (key->dim == SIM_DIM_BYTES) /* whole bytes ("20.3 GiB"), as every byte count */
        value = floor (value);
      if (!(value >= key->min && value <= key->max) && !(key->zero_ok && value == 0))
        {
          /* bytes in binary units (1 MiB, 1 PiB), the others in the units they are printed
           * in (QA: "[1e+09, 1e+15] B/s" where 1 GB/s was meant) */
          gboolean bytes = key->dim == SIM_DIM_BYTES;
          g_autofree char *lo = range_bound (key->min, key->dim);
          g_autofree char *hi = range_bound (key->max, key->dim);
          g_autofree char *range = bytes
            ? g_strdup_printf ("[%s, 1 PiB]", key->min > 0 ? "1 MiB" : "0")
            : g_strdup_printf ("[%s, %s]", lo, hi);
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "'%s' is outside %s%s", g_strstrip (text), range,
                       key->zero_ok && key->min > 0 ? " (or 0: not supported)" : "");
          goto fail;
        }
    }
  else if (key->kind == KEY_COUNT)
    {
      if (!sim_units_parse_number (text, &value, error))
        goto fail;
      if (!(value >= 0 && value <= 1e4 && value == floor (value)))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "'%s' is not a whole number in [0, 10000]", g_strstrip (text));
          goto fail;
        }
    }
  else
    {
      if (!sim_units_parse_number (text, &value, error))
        goto fail;
      gboolean share = key->kind == KEY_SHARE;
      if (share ? !(value >= 0 && value < 1) : !(value > 0 && value <= 1))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "'%s' is outside %s", g_strstrip (text), share ? "[0, 1)" : "(0, 1]");
          goto fail;
        }
    }
  *field = value;
  if (key->offset == offsetof (HwGpuSpec, compute_efficiency))
    {
      g_free (spec->efficiency_source);
      spec->efficiency_source = g_strdup_printf ("scenario group [%s]", group);
    }
  return TRUE;
fail:
  g_prefix_error (error, "group [%s], key '%s': ", group, key->key);
  return FALSE;
}

HwGpuSpec *
hw_catalog_gpu_from_keyfile (GKeyFile *kf, const char *group, GError **error)
{
  g_return_val_if_fail (kf != NULL, NULL);
  g_return_val_if_fail (group != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_auto (GStrv) keys = g_key_file_get_keys (kf, group, NULL, error);
  if (keys == NULL || !check_known_keys (keys, group, error))
    return NULL;
  g_autoptr (HwGpuSpec) spec = spec_start (kf, group, error);
  if (spec == NULL)
    return NULL;
  g_free (spec->name);
  spec->name = g_strdup (g_str_has_prefix (group, "gpu.") ? group + 4 : group);

  /* File order, so the first bad key in the file is the one reported. */
  for (char **k = keys; *k != NULL; k++)
    {
      const GpuKey *key = find_key (*k);
      if (key->kind != KEY_BASE && !apply_key (spec, kf, group, key, error))
        return NULL;
    }
  if (!g_key_file_has_key (kf, group, "base", NULL) && !check_required (kf, group, error))
    return NULL;
  /* The checks between two keys, naming the one this group gives (the other may be the
   * base's). Each key's own range was checked as it was read. */
  if (spec->cuda_context >= spec->memory_capacity)
    {
      const char *k = g_key_file_has_key (kf, group, "cuda_context", NULL) ? "cuda_context"
                                                                            : "memory";
      g_autofree char *ctx = sim_units_format (spec->cuda_context, SIM_DIM_BYTES, 2);
      g_autofree char *mem = sim_units_format (spec->memory_capacity, SIM_DIM_BYTES, 2);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key '%s': the CUDA context (cuda_context %s) must be below the "
                   "memory (%s)", group, k, ctx, mem);
      return NULL;
    }
  if (spec->idle_power > 0 && spec->idle_power > spec->board_power)
    {
      const char *k = g_key_file_has_key (kf, group, "idle_power", NULL) ? "idle_power"
                                                                          : "power";
      g_autofree char *idle = sim_units_format (spec->idle_power, SIM_DIM_POWER, 2);
      g_autofree char *board = sim_units_format (spec->board_power, SIM_DIM_POWER, 2);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [%s], key '%s': idle_power %s must be at most the board power "
                   "(power %s)", group, k, idle, board);
      return NULL;
    }
  if (!hw_gpu_spec_validate (spec, error))
    {
      g_prefix_error (error, "group [%s]: ", group);
      return NULL;
    }
  return g_steal_pointer (&spec);
}
