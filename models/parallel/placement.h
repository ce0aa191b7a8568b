/* models/parallel/placement.h — how a tensor lies on the device mesh, and the collectives a
 * change of placement implies.
 *
 * As PyTorch DTensor (torch/distributed/tensor/placement_types.py): on each mesh dimension
 * a tensor is Replicate (every rank of the group holds all of it), Shard(d) (tensor
 * dimension d split evenly over the group) or Partial (every rank holds a full-size
 * partial sum; the value is the sum over the group). Shard on MODEL_PLACEMENT_FLAT splits
 * the flattened tensor (or a flat concatenation of tensors): ZeRO's partitions and FSDP's
 * FlatParameter shards (Rajbhandari et al. 2020 §5; Zhao et al. 2023 §3.2).
 *
 * A size that does not divide. A flat shard never fails: the frameworks pad the flat
 * buffer to a multiple of the group and give each rank ⌈n / N⌉ elements — FSDP
 * (torch/distributed/fsdp/_flat_param.py FlatParamHandle._get_shard: flatten().chunk(N),
 * numel_to_pad), ZeRO-3 (deepspeed/runtime/zero/partition_parameters.py _aligned_size =
 * ds_numel + _padding_size, partition_size = aligned // N, per parameter), ZeRO-1/2
 * (stage_1_and_2.py: the flat group aligned to nccl_start_alignment_factor 2 × N).
 * model_placement_local_shape gives that padded shard; the byte folds
 * (model_placement_local_bytes) divide exactly, leaving out the padding: at most N − 1
 * elements per flat unit (ZeRO-3 over 8 ranks: ≤ 7 per parameter tensor, under 4 KiB of
 * bf16 for a 7B model's 291 tensors), far below the allocator's rounding. A Shard(d) on a
 * tensor dimension that the degree does not divide is an error, as in Megatron (megatron/
 * core/utils.py divide → ensure_divisibility: heads, FFN width and the padded vocabulary
 * must divide by the TP degree).
 *
 * A rank's share of a tensor is model_placement_local_bytes / _local_shape — the one place
 * that divides by a degree.
 *
 * Redistribution (DTensor's redistribute, torch/distributed/tensor/_redistribute.py), per
 * mesh dimension of degree n > 1, `b` the rank's local bytes before the change:
 *   Partial → Replicate   all-reduce      bytes b
 *   Partial → Shard       reduce-scatter  bytes b (input), then b/n
 *   Shard   → Replicate   all-gather      bytes n·b (output)
 *   Shard(a) → Shard(b)   all-to-all      bytes b (per-rank send buffer)
 *   Replicate → Shard     none (each rank keeps its slice), b/n
 *   Replicate → Partial   none (ranks but one contribute zeros)
 *   Shard → Partial       not supported (DTensor neither)
 * Sizes follow hardware/collective.h (nccl-tests). Dimensions are changed innermost first
 * (tp … pp), so a reduction scatters on the NVLink dimension before it crosses nodes —
 * what HSDP does (reduce-scatter inside the shard group, then all-reduce of the shard across
 * replicas; torch/distributed/fsdp/_runtime_utils.py, _reduce_grad).
 * The cp dimension's change merges with the next data-parallel dimension of degree > 1
 * (dp_shard, or dp_replicate) when both make the same collective: one collective over
 * the combined group, as Megatron reduces gradients and gathers its distributed
 * optimizer's parameters over one dp·cp process group (parallel_state.py
 * get_data_parallel_group(with_context_parallel=True)); its bytes are the first change's
 * for an all-reduce or reduce-scatter (the input), the second's for an all-gather (the
 * output).
 */
#pragma once

#include <glib.h>
#include "hardware/collective.h"
#include "models/parallel/mesh.h"

typedef enum
{
  MODEL_PLACEMENT_REPLICATE,
  MODEL_PLACEMENT_SHARD,
  MODEL_PLACEMENT_PARTIAL,
} ModelPlacementKind;

#define MODEL_PLACEMENT_FLAT (-1) /* Shard of the flattened tensor */

typedef struct
{
  ModelPlacementKind kind;
  gint dim; /* tensor dimension of a Shard, or MODEL_PLACEMENT_FLAT */
} ModelPlacement;

/* One placement per mesh dimension. */
typedef struct
{
  ModelPlacement on[MODEL_MESH_N_DIMS];
} ModelPlacements;

/* One collective of a redistribution. */
typedef struct
{
  HwCollectiveKind kind;
  ModelMeshDim dim; /* the (innermost) mesh dimension whose groups run it */
  guint dims;       /* MODEL_MESH_BIT of every dimension of its group: dim, and the next
                     * one when a cp change merges with it (below) */
  double bytes;     /* B, hardware/collective.h's convention */
} ModelPlacementComm;

/* Replicate on every dimension. */
ModelPlacements model_placements_replicate (void);
/* Short text such as "[S(flat) on dp_shard, P on dp_replicate]" listing the non-Replicate
 * dimensions ("[R]" when none). Caller frees. */
char *model_placements_to_string (const ModelPlacements *pl);

/* Whether some dimension of degree > 1 holds a Shard (a rank keeps less than the whole). */
gboolean model_placements_sharded (const ModelPlacements *pl, const ModelMesh *mesh);
/* Whether some dimension holds a Shard at all, whatever its degree. */
gboolean model_placements_any_shard (const ModelPlacements *pl);

/* Ranks over which one copy is split: the product of the degrees of the Shard dimensions. */
guint model_placement_ways (const ModelPlacements *pl, const ModelMesh *mesh);
/* A rank's share of `bytes` (B, the whole tensor or set of flat-sharded tensors): bytes
 * divided by model_placement_ways. Partial and Replicate hold full size. */
double model_placement_local_bytes (const ModelPlacements *pl, const ModelMesh *mesh,
                                    double bytes);
/* The same share as a fraction, 1 / model_placement_ways. */
double model_placement_local_fraction (const ModelPlacements *pl, const ModelMesh *mesh);
/* A rank's local shape of a tensor of `ndim` dimensions `shape` (elements; ndim <= 8):
 * Shard(d) divides shape[d] by the degree, Shard(flat) first flattens to one dimension
 * (*out_ndim = 1) and gives ⌈numel / degree⌉, the padded flat shard (above). FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE when a degree does not divide a Shard(d) dimension
 * ("tensor dim 1 of size 4095 does not divide over tp of degree 2") or d is out of range;
 * the caller adds the tensor's name, file, group and key. */
gboolean model_placement_local_shape (const ModelPlacements *pl, const ModelMesh *mesh,
                                      const guint64 *shape, guint ndim, guint64 *out,
                                      guint *out_ndim, GError **error);

/* The collectives taking a tensor of `bytes` (B, whole) from placement `from` to `to`, in
 * the order they run (innermost dimension first), appended to `out` (GArray of
 * ModelPlacementComm). Dimensions of degree 1 need none. FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE for Shard → Partial. */
gboolean model_placement_redistribute (const ModelPlacements *from, const ModelPlacements *to,
                                       const ModelMesh *mesh, double bytes, GArray *out,
                                       GError **error);
