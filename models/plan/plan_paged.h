/* models/plan/plan_paged.h — paged optimizer states (bitsandbytes paged optimizers) in a plan:
 * how much of the states is paged out to host DRAM, and what moving it costs.
 *
 * bitsandbytes' paged optimizers (Dettmers et al. 2023, QLoRA, arXiv 2305.14314, §2 "Paged
 * Optimizers") allocate the optimizer states in CUDA unified memory: when the GPU runs out
 * of memory their pages are evicted to CPU RAM, and they are paged back in when the
 * optimizer step needs them (bitsandbytes prefetches each paged state tensor with
 * cudaMemPrefetchAsync before its update). A plan built with model_plan_new_paged() and a
 * spill S > 0 (B per rank) models that:
 *  - the GPU holds the states less S from time 0 (one managed block: the states do not go
 *    through PyTorch's caching allocator, so they are not split into per-tensor blocks);
 *  - S lives in the node's host DRAM (category optimizer_state) until it is paged in;
 *  - before the optimizer step an H2D task ("page in optimizer states", op
 *    MODEL_OFFLOAD_OP_PAGE_IN) migrates S to the GPU after the last backward (and the last
 *    collective): the optimizer step waits for it, the pages occupy GPU memory from its
 *    start;
 *  - after the step a D2H task ("page out optimizer states", MODEL_OFFLOAD_OP_PAGE_OUT)
 *    evicts S again, as the next step's activations need the room, and frees the GPU copy
 *    at its end. The step ends when it does.
 * Each migration runs over the rank's PCIe route at MODEL_PAGED_MIGRATION_EFFICIENCY of the
 * link's bandwidth, so on an otherwise idle link the two take 2 (α + S / (e × B)).
 * Simplification: the whole spill is paged in before the update (bitsandbytes interleaves
 * the prefetch of tensor i + 1 with the update of tensor i), so the transfer is fully
 * exposed; this is an upper bound of the cost.
 *
 * How large S is comes from the run (models/plan/simulate.c): a first replay without spill gives the
 * peak of everything else; S = model_stack_paged_spill(), rounded up to whole UVM blocks
 * (model_plan_paged_round()).
 * Units: B, s.
 */
#pragma once

#include <glib.h>
#include "models/plan/plan.h"

/* Fraction of the PCIe bandwidth a unified-memory migration reaches (assumption). UVM moves
 * pages in 2 MiB blocks with driver work per block (page-table updates, TLB invalidation,
 * fault batches for eviction), which keeps it below cudaMemcpy: Sakharnykh, "Maximizing
 * Unified Memory Performance in CUDA" (NVIDIA developer blog, 2017) shows fault-driven
 * migration well under the memcpy bandwidth and prefetching approaching it; Allen & Ge,
 * "Demystifying GPU UVM Cost with Deep Runtime and Workload Analysis" (IPDPS 2021) attribute
 * the gap to the driver's per-block fault and eviction handling. 0.5 (prefetched page-in,
 * pressure-driven eviction) is an uncalibrated middle of that range, like
 * HW_PAGEABLE_COPY_EFFICIENCY for pageable copies. */
#define MODEL_PAGED_MIGRATION_EFFICIENCY 0.5

/* Granule of UVM migration and eviction: a 2 MiB virtual-address block (the NVIDIA UVM
 * driver's UVM_VA_BLOCK_SIZE, open-gpu-kernel-modules kernel-open/nvidia-uvm). B. */
#define MODEL_PAGED_GRANULE (2.0 * 1024 * 1024)

/* Bytes of optimizer state per rank that `plan` pages out to host (0: none; never more
 * than the rank's states). */
double model_plan_paged_spill (const ModelPlan *plan);

/* `spill` (B, >= 0) rounded up to whole MODEL_PAGED_GRANULE blocks, at most `state_bytes`:
 * evicting whole blocks frees at least `spill` of the GPU's reserved memory. */
double model_plan_paged_round (double spill, double state_bytes);
