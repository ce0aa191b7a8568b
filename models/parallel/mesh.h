/* models/parallel/mesh.h — the device mesh: named parallel dimensions and the rank ↔
 * coordinate map.
 *
 * Dimensions, by default outermost first: pp × dp_replicate × dp_shard × cp × tp —
 * torchtitan's order (torchtitan/distributed/parallel_dims.py, ParallelDims.build_mesh: dims
 * ["pp", "dp_replicate", "dp_shard", "cp", "tp"], a row-major torch DeviceMesh). The rank is
 * the row-major index of its coordinates, tp varying fastest:
 *   rank = (((pp·R + rep)·S + shard)·C + cp)·T + tp
 * so the innermost dimensions take consecutive ranks, which hardware/cluster.h numbers
 * node-major: tp (then cp, then dp_shard) lands on the NVLink/NVSwitch domain of one node.
 * Megatron-LM's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py,
 * initialize_model_parallel's `order`, RankGenerator) is the same with dp = dp_replicate ×
 * dp_shard; a pipeline stage is then the block of ranks [s·G, (s+1)·G), G = size / pp.
 *
 * The order (ModelMeshOrder, [parallel] order) may instead put pp inside dp: Megatron's
 * "tp-cp-ep-pp-dp" (--use-tp-pp-dp-mapping: megatron/training/initialize.py passes that
 * order; RankGenerator reads it innermost first), outermost first dp_replicate × dp_shard ×
 * pp × cp × tp:
 *   rank = (((rep·S + shard)·P + pp)·C + cp)·T + tp
 * so one pipeline's stages take neighbouring ranks (the same node, rack or pod) and the
 * data-parallel replicas lie pp·cp·tp ranks apart. A stage's ranks are then no block:
 * stage s holds the ranks with (rank / (C·T)) mod P = s. Every caller that needs a stage's
 * ranks goes through model_mesh_stage_of / model_mesh_stage_rank.
 *
 * Experts (MoE) are carved as Megatron does: inside one pipeline stage the dp·cp·tp ranks are
 * re-split, innermost first, into etp × ep × edp (expert tensor, expert model and expert data
 * parallel; parallel_state.py builds expert_decoder_rank_generator = RankGenerator(
 * tp=expert_tensor_parallel_size, ep=expert_model_parallel_size, dp=expert_data_parallel_size,
 * cp=1, pp=pp) with expert_data_parallel_size = world / (pp·etp·ep)). ep·etp must divide
 * dp·cp·tp. cp is no dimension of the expert grid: under cp > 1 an EP group may span cp
 * ranks, and the expert-dp group (Megatron's _EXPERT_DATA_PARALLEL_GROUP) holds every rank
 * of the stage with the same etp and ep coordinates, cp ranks included. The carving is over the stage-local index (model_mesh_stage_local), which is
 * Megatron's expert rank under both orders; under tp-cp-ep-pp-dp with pp > 1 Megatron needs
 * etp·ep = cp·tp (model_mesh_validate).
 *
 * The mesh is a plain value (no allocation); degrees are >= 1.
 */
#pragma once

#include <glib.h>
#include "hardware/rank_shift.h"

typedef enum
{
  MODEL_MESH_PP,           /* pipeline stages (outermost by default) */
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

/* How the dimensions are laid out over the ranks; Megatron's order strings, innermost first. */
typedef enum
{
  MODEL_MESH_ORDER_TP_CP_EP_DP_PP, /* default: pp outermost (stages are rank blocks) */
  MODEL_MESH_ORDER_TP_CP_EP_PP_DP, /* --use-tp-pp-dp-mapping: pp inside dp */
  MODEL_MESH_N_ORDERS
} ModelMeshOrder;

typedef struct
{
  guint degree[MODEL_MESH_N_DIMS];
  ModelMeshOrder order; /* the rank layout (model_mesh_init: the default) */
  guint gpus_per_node; /* consecutive ranks on one node's NVLink domain, >= 1 */
  guint ep, etp;       /* expert model / expert tensor parallel degrees, >= 1 */
} ModelMesh;

/* Every degree 1 (one rank), ep = etp = 1, the default order. */
void model_mesh_init (ModelMesh *mesh, guint gpus_per_node);
/* Scenario names: "pp", "dp_replicate", "dp_shard", "cp", "tp". */
const char *model_mesh_dim_name (ModelMeshDim dim);
/* Product of the degrees (ranks in the mesh). */
guint model_mesh_size (const ModelMesh *mesh);
/* The canonical (Megatron, innermost first) spelling of an order: "tp-cp-ep-dp-pp" or
 * "tp-cp-ep-pp-dp". Static string. */
const char *model_mesh_order_name (ModelMeshOrder order);
/* Parses an order: the two canonical spellings, or either without "ep-" and/or "cp-"
 * ("tp-pp-dp", "tp-cp-dp-pp", …: stepsim always places cp just outside tp and carves ep
 * inside a stage, so the short forms name the same layouts). Exact, lower case. Anything
 * else: FALSE + G_KEY_FILE_ERROR_INVALID_VALUE listing what is accepted; the caller adds the
 * file, group and key. */
gboolean model_mesh_order_from_string (const char *text, ModelMeshOrder *order,
                                       GError **error);

/* Checks the product of the degrees against `n_gpus`, the expert carving (ep·etp divides
 * dp·cp·tp) and, under tp-cp-ep-pp-dp with pp > 1 and experts (ep·etp > 1), that
 * ep·etp = cp·tp (Megatron's assertion that the expert and dense pp groups match).
 * FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming the degrees (or "key 'order'"); the caller
 * adds the file and group. */
gboolean model_mesh_validate (const ModelMesh *mesh, guint n_gpus, GError **error);

/* rank → coordinates (coords has MODEL_MESH_N_DIMS entries) and back. rank < size. */
void model_mesh_coords (const ModelMesh *mesh, guint rank, guint *coords);
guint model_mesh_rank (const ModelMesh *mesh, const guint *coords);
/* Rank distance between neighbours along `dim`: the product of the degrees laid out inside
 * it (the order's). */
guint model_mesh_stride (const ModelMesh *mesh, ModelMeshDim dim);
/* Whether every group along `dim` lies inside one node (stride · degree divides
 * gpus_per_node, or the degree is 1): such a dimension's collectives stay on NVLink.
 * (Under either order a group along one dimension spans stride · degree ranks.) */
gboolean model_mesh_intra_node (const ModelMesh *mesh, ModelMeshDim dim);

/* The ranks of `rank`'s group over the dimensions in `dims` (MODEL_MESH_BIT set): the ranks
 * that share every other coordinate, in increasing order (written to `ranks`, capacity
 * model_mesh_size). Returns their count (the product of those degrees) and, in `*index`
 * when not NULL, which of the size/count such groups it is (row-major over the other
 * coordinates in ModelMeshDim's order, whatever the layout: a name, as plan_comm.c's). */
guint model_mesh_group (const ModelMesh *mesh, guint rank, guint dims, guint *ranks,
                        guint *index);

/* Pipeline stages. model_mesh_stage_of: the stage (pp coordinate) of `rank`.
 * model_mesh_stage_size: ranks per stage (size / pp). model_mesh_stage_local: `rank`'s index
 * among its stage's ranks in increasing order (< stage size); model_mesh_stage_rank: the
 * stage's `local`-th rank (local < stage size), its inverse. Under the default order the
 * stage is the block [s·G, (s+1)·G) and local = rank mod G; under tp-cp-ep-pp-dp the stage's
 * ranks come in runs of cp·tp, pp·cp·tp apart. model_mesh_stages_contiguous: whether every
 * stage is such a block (pp = 1 or pp outermost). */
guint model_mesh_stage_of (const ModelMesh *mesh, guint rank);
guint model_mesh_stage_size (const ModelMesh *mesh);
guint model_mesh_stage_local (const ModelMesh *mesh, guint rank);
guint model_mesh_stage_rank (const ModelMesh *mesh, guint stage, guint local);
gboolean model_mesh_stages_contiguous (const ModelMesh *mesh);
/* Whether every generator of `shift` (its n the mesh size) maps each rank into its own
 * pipeline stage — what rank classes need, a rank's plan depending on its stage
 * (models/plan/rank_classes.h). Under the default order any shift inside stage blocks
 * does; under tp-cp-ep-pp-dp a generator by d places in blocks of g does when g divides
 * cp·tp (a run of one stage's ranks) or pp·cp·tp divides d and g (whole pipeline
 * replicas), and otherwise when a walk over the ranks finds no rank leaving its stage
 * (O(n), stopping at the first). */
gboolean model_mesh_shift_keeps_stages (const ModelMesh *mesh, const HwRankShift *shift);

/* Degree of an expert dimension: etp, ep, edp = dp·cp·tp / (ep·etp), or etp·ep. */
guint model_mesh_expert_degree (const ModelMesh *mesh, ModelMeshExpertDim dim);
/* Whether a MoE model's expert tensors have their own data-parallel group, other than the
 * dense tensors' dp·cp: when ep·etp > 1, or when tp > 1 (expert-dp = dp·cp·tp / (ep·etp)
 * then holds tp ranks that routed other tokens to the same replicated experts: Megatron-LM
 * parallel_state.py _EXPERT_DATA_PARALLEL_GROUP, the group of every expert parameter's
 * gradient buffer in distributed_data_parallel.py, whatever ep). A mesh property only: the
 * caller asks it for expert tensors. */
gboolean model_mesh_expert_dp_own (const ModelMesh *mesh);
/* The ranks of `rank`'s expert group along `dim` (inside its pipeline stage; capacity
 * model_mesh_size), in increasing order; returns their count. The tp_ep group is the
 * etp·ep consecutive stage-local ranks holding one copy of every expert shard (consecutive
 * ranks too: under tp-cp-ep-pp-dp etp·ep is a stage's run of cp·tp ranks). */
guint model_mesh_expert_group (const ModelMesh *mesh, guint rank, ModelMeshExpertDim dim,
                               guint *ranks);
