/* models/parallel/mesh.h — the device mesh: named parallel dimensions and the rank ↔
 * coordinate map.
 *
 * Dimensions, outermost first: pp × dp_replicate × dp_shard × cp × tp — torchtitan's order
 * (torchtitan/distributed/parallel_dims.py, ParallelDims.build_mesh: dims
 * ["pp", "dp_replicate", "dp_shard", "cp", "tp"], a row-major torch DeviceMesh). The rank is
 * the row-major index of its coordinates, tp varying fastest:
 *   rank = (((pp·R + rep)·S + shard)·C + cp)·T + tp
 * so the innermost dimensions take consecutive ranks, which hardware/cluster.h numbers
 * node-major: tp (then cp, then dp_shard) lands on the NVLink/NVSwitch domain of one node.
 * Megatron-LM's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py,
 * initialize_model_parallel, RankGenerator) is the same with dp = dp_replicate × dp_shard.
 *
 * Experts (MoE) are carved as Megatron does: inside one pipeline stage the dp·cp·tp ranks are
 * re-split, innermost first, into etp × ep × edp (expert tensor, expert model and expert data
 * parallel; parallel_state.py builds expert_decoder_rank_generator = RankGenerator(
 * tp=expert_tensor_parallel_size, ep=expert_model_parallel_size, dp=expert_data_parallel_size,
 * cp=1, pp=pp) with expert_data_parallel_size = world / (pp·etp·ep)). ep·etp must divide
 * dp·cp·tp.
 *
 * The mesh is a plain value (no allocation); degrees are >= 1.
 */
#pragma once

#include <glib.h>

typedef enum
{
  MODEL_MESH_PP,           /* pipeline stages (outermost) */
  MODEL_MESH_DP_REPLICATE, /* data-parallel replicas (DDP, HSDP's replicate dimension) */
  MODEL_MESH_DP_SHARD,     /* data-parallel ranks that shard model states (ZeRO, FSDP) */
  MODEL_MESH_CP,           /* context (sequence) parallel */
  MODEL_MESH_TP,           /* tensor parallel (innermost) */
  MODEL_MESH_N_DIMS
} ModelMeshDim;

/* A set of mesh dimensions, bit (1 << dim) each. */
#define MODEL_MESH_BIT(dim) (1u << (dim))
#define MODEL_MESH_DP (MODEL_MESH_BIT (MODEL_MESH_DP_REPLICATE) | MODEL_MESH_BIT (MODEL_MESH_DP_SHARD))

typedef enum
{
  MODEL_MESH_EXPERT_TP, /* etp: ranks splitting one expert's weights (innermost) */
  MODEL_MESH_EXPERT_EP, /* ep: ranks holding different experts */
  MODEL_MESH_EXPERT_DP, /* edp: ranks holding the same expert shard */
  MODEL_MESH_EXPERT_TP_EP, /* etp·ep together: Megatron's tp_ep group (parallel_state.py
                            * expert_decoder_rank_generator.get_ranks('tp-ep'), the
                            * dispatcher's token-count all-gather) */
  MODEL_MESH_N_EXPERT_DIMS
} ModelMeshExpertDim;

typedef struct
{
  guint degree[MODEL_MESH_N_DIMS];
  guint gpus_per_node; /* consecutive ranks on one node's NVLink domain, >= 1 */
  guint ep, etp;       /* expert model / expert tensor parallel degrees, >= 1 */
} ModelMesh;

/* Every degree 1 (one rank), ep = etp = 1. */
void model_mesh_init (ModelMesh *mesh, guint gpus_per_node);
/* Scenario names: "pp", "dp_replicate", "dp_shard", "cp", "tp". */
const char *model_mesh_dim_name (ModelMeshDim dim);
/* Product of the degrees (ranks in the mesh). */
guint model_mesh_size (const ModelMesh *mesh);
/* Checks the product of the degrees against `n_gpus` and the expert carving (ep·etp divides
 * dp·cp·tp). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming the degrees; the caller adds the
 * file and group. */
gboolean model_mesh_validate (const ModelMesh *mesh, guint n_gpus, GError **error);

/* rank → coordinates (coords has MODEL_MESH_N_DIMS entries) and back. rank < size. */
void model_mesh_coords (const ModelMesh *mesh, guint rank, guint *coords);
guint model_mesh_rank (const ModelMesh *mesh, const guint *coords);
/* Rank distance between neighbours along `dim`: the product of the inner degrees. */
guint model_mesh_stride (const ModelMesh *mesh, ModelMeshDim dim);
/* Whether every group along `dim` lies inside one node (stride · degree divides
 * gpus_per_node, or the degree is 1): such a dimension's collectives stay on NVLink. */
gboolean model_mesh_intra_node (const ModelMesh *mesh, ModelMeshDim dim);

/* The ranks of `rank`'s group over the dimensions in `dims` (MODEL_MESH_BIT set): the ranks
 * that share every other coordinate, in increasing order (written to `ranks`, capacity
 * model_mesh_size). Returns their count (the product of those degrees) and, in `*index`
 * when not NULL, which of the size/count such groups it is (row-major over the other
 * coordinates). */
guint model_mesh_group (const ModelMesh *mesh, guint rank, guint dims, guint *ranks,
                        guint *index);

/* Degree of an expert dimension: etp, ep, edp = dp·cp·tp / (ep·etp), or etp·ep. */
guint model_mesh_expert_degree (const ModelMesh *mesh, ModelMeshExpertDim dim);
/* The ranks of `rank`'s expert group along `dim` (inside its pipeline stage; capacity
 * model_mesh_size), in increasing order; returns their count. The tp_ep group is the
 * etp·ep consecutive stage-local ranks holding one copy of every expert shard. */
guint model_mesh_expert_group (const ModelMesh *mesh, guint rank, ModelMeshExpertDim dim,
                               guint *ranks);
