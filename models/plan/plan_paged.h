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
 *  - S lives in the node's host DRAM (category optimizer_state) for the whole step (the
 *    pages of a chunk on the GPU are counted on both sides: at most three chunks);
 *  - the optimizer step updates the resident states first ("optimizer step"), then S in K
 *    chunks ("optimizer step (paged i)"), each after an H2D task ("page in optimizer states
 *    i", op MODEL_OFFLOAD_OP_PAGE_IN) that migrates it to the GPU and before a D2H task
 *    ("page out optimizer states i", MODEL_OFFLOAD_OP_PAGE_OUT) that evicts it again,
 *    freeing its GPU copy at its end. Chunk 0's page-in runs beside the resident update,
 *    chunk i's after the update of chunk i − 2, so the GPU holds at most three chunks of S
 *    (one leaving, one updating, one arriving): bitsandbytes prefetches each paged state
 *    tensor with cudaMemPrefetchAsync before its update (optim/optimizer.py prefetch_state)
 *    and the driver evicts pages under memory pressure, so the step never needs S on the
 *    GPU at once (a spill larger than the GPU still runs). A chunk is the rank's share of
 *    the largest tensor's states in whole UVM blocks (model_stack_largest_tensor_state),
 *    K = ⌈S / chunk⌉ equal parts. The step ends when the last page-out does.
 * Each migration runs over the rank's PCIe route at MODEL_PAGED_MIGRATION_EFFICIENCY of the
 * link's bandwidth, so on an otherwise idle link the K chunks take 2 (K α + S / (e × B)) in
 * all, the page-ins overlapping the updates.
 * Simplification: the spill is paged in and out every step (the driver keeps pages on the
 * GPU while nothing else needs the room); the chunks are equal parts, not tensors.
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
