/* models/parallel/parallel.h — data parallelism: DDP, ZeRO stages and FSDP sharding strategies.
 *
 * Every mode maps onto one machinery: a shard group of N ranks that split model states,
 * and a stage saying which states are split (Rajbhandari et al. 2020, ZeRO, arXiv
 * 1910.02054, §5): stage 0 none (DDP, FSDP NO_SHARD), 1 optimizer states and master
 * weights, 2 also gradients (reduce-scatter instead of all-reduce), 3 also parameters
 * (all-gathered per layer before use, released after). FSDP (Zhao et al. 2023, PyTorch
 * FSDP, arXiv 2304.11277, §3.2): FULL_SHARD = stage 3, re-gathering parameters for the
 * backward; SHARD_GRAD_OP = stage 2 with parameters gathered in the forward kept until the
 * backward; HYBRID_SHARD = FULL_SHARD inside a node, replicated across nodes (gradient
 * shards all-reduced between replicas).
 *
 * Per-rank model-state bytes, Ψ parameters, K optimizer bytes per parameter (incl. master):
 *   stage 0: (w + g + K)Ψ; 1: (w + g)Ψ + KΨ/N; 2: wΨ + (g + K)Ψ/N; 3: (w + g + K)Ψ/N
 * — the ZeRO paper's (2 + 2 + K)Ψ, (2 + 2 + K/N)Ψ, (2 + (2 + K)/N)Ψ, (2 + 2 + K)Ψ/N with
 * w = g = 2 (Figure 1). DeepSpeed's ZeRO-1/2 (zero1, zero2; not FSDP's SHARD_GRAD_OP) adds,
 * with 16-bit gradients and an fp32 master, the fp32 copy of the rank's gradient partition
 * that its optimizer step creates and drops (4Ψ/N, deepspeed/runtime/zero/stage_1_and_2.py
 * step()): a model state, category gradients (models/plan/plan_step.c).
 *
 * Placements (placement.h) on the data-parallel mesh dimensions (mesh.h): every mode is a
 * table of where each model state lies in each phase of the step; the stage, the shard
 * group and every collective of data parallelism are read from it. DDP and FSDP NO_SHARD
 * run on dp_replicate = D; ZeRO and FSDP FULL_SHARD / SHARD_GRAD_OP on dp_shard = D;
 * HYBRID_SHARD on dp_shard = gpus_per_node × dp_replicate = D / gpus_per_node (torchtitan
 * HSDP, parallel_dims.py; FSDP's HYBRID_SHARD shards inside a node), S = Shard(flat) on
 * dp_shard, R elsewhere unless said:
 *                 weights (rest/compute/step)   gradients (compute/accum./step)  master, opt.
 *   DDP/NO_SHARD  R / R / R                      P / P / R                         R
 *   ZeRO-1        R / R / S                      P / P / S                         S
 *   ZeRO-2, SGO   R / R / S                      P / S / S                         S
 *   ZeRO-3, FULL  S / R / S                      P / S / S                         S
 *   HYBRID        as FULL; gradients Partial on dp_replicate become Replicate at accum.
 *   activations   Shard(0) (the batch) on dp_replicate and dp_shard: data parallelism.
 * Gradient reduction is the change compute → accumulate (every micro-batch: reduce-scatter,
 * then HSDP's all-reduce across replicas) and accumulate → step (last micro-batch, in DDP's
 * buckets: all-reduce, or ZeRO-1's reduce-scatter); gathering parameters is weights rest →
 * compute (stage-3 all-gather) and step → rest (stages 1–2: all-gather of the updated
 * partitions, ZeRO §5.1).
 */
#pragma once

#include <glib.h>
#include "hardware/collective.h"
#include "hardware/gpu.h"
#include "models/parallel/context_parallel.h"
#include "models/parallel/expert_parallel.h"
#include "models/parallel/pipeline_schedule.h"
#include "models/parallel/placement.h"

typedef enum
{
  MODEL_DP_DDP,
  MODEL_DP_ZERO1,
  MODEL_DP_ZERO2,
  MODEL_DP_ZERO3,
  MODEL_DP_FSDP_FULL_SHARD,
  MODEL_DP_FSDP_SHARD_GRAD_OP,
  MODEL_DP_FSDP_NO_SHARD,
  MODEL_DP_FSDP_HYBRID_SHARD,
  MODEL_N_DP_MODES
} ModelDataParallel;

/* Whether `m` is one of DeepSpeed's ZeRO stages (zero1–zero3), or one of PyTorch FSDP's
 * sharding strategies (fsdp_*). */
static inline gboolean
model_parallel_is_zero (ModelDataParallel m)
{
  return m == MODEL_DP_ZERO1 || m == MODEL_DP_ZERO2 || m == MODEL_DP_ZERO3;
}

static inline gboolean
model_parallel_is_fsdp (ModelDataParallel m)
{
  return m == MODEL_DP_FSDP_FULL_SHARD || m == MODEL_DP_FSDP_SHARD_GRAD_OP
         || m == MODEL_DP_FSDP_NO_SHARD || m == MODEL_DP_FSDP_HYBRID_SHARD;
}

/* How the tp collectives of a layer meet its GEMMs ([parallel] tp_comm_overlap).
 * NONE (default; Megatron without --tp-comm-overlap): the forward's all-reduces /
 * all-gathers / reduce-scatters are on the critical path, the backward's input-gradient
 * all-reduce (or SP's re-gather and reduce-scatter) is issued async beside the
 * weight-gradient GEMM (layers.py LinearWithGradAccumulationAndAsyncCommunication).
 * BULK: Transformer Engine userbuffers' bulk overlaps only (initialize_ub with the
 * ring-exchange and pipeline methods off): the backward re-gather and reduce-scatter stay
 * beside the backward GEMMs, run by TE's kernels on num_sm = 16 SMs instead of NCCL's.
 * PIPELINED: TE's default --tp-comm-overlap: as BULK, and the forward all-gathers /
 * reduce-scatters and the backward output-gradient all-gathers are split into chunks
 * overlapped with the chunked GEMM (ring_exchange, pipeline). BULK and PIPELINED need
 * sequence_parallel (Megatron validate_args). models/plan/plan_tp_overlap.c schedules them. */
typedef enum
{
  MODEL_TP_OVERLAP_NONE,
  MODEL_TP_OVERLAP_BULK,
  MODEL_TP_OVERLAP_PIPELINED,
} ModelTpCommOverlap;

typedef struct
{
  ModelDataParallel mode;
  guint degree;              /* data-parallel ranks (all GPUs), >= 1 */
  guint gpus_per_node;       /* for HYBRID_SHARD's shard group */
  double bucket_size;        /* B of gradients per DDP all-reduce bucket (PyTorch: 25 MiB) */
  guint prefetch;            /* layers all-gathered ahead under stage 3 (FSDP: 1) */
  HwCollectiveAlgorithm algorithm;
  gboolean reduce_dtype_set; /* FALSE: reduce gradients in their own dtype */
  HwDtype reduce_dtype;      /* FSDP MixedPrecision(reduce_dtype=…) */
  guint dp_replicate;        /* mesh degrees given by the scenario; 0: from the mode */
  guint dp_shard;
  /* Megatron tensor parallelism (tensor_parallel.h): the mesh's innermost dimension. The
   * data-parallel degree is degree / tp; every rank of a tp group runs the same micro-batch
   * on its shard of every layer. */
  guint tp;                  /* >= 1 */
  gboolean sequence_parallel; /* Megatron --sequence-parallel (needs tp > 1) */
  ModelTpCommOverlap tp_comm_overlap;
  /* Context parallelism (context_parallel.h): the mesh dimension just outside tp; every
   * rank of a cp group runs 1/cp of each micro-batch's sequence, the weights replicated
   * over cp, so gradients are Partial over dp·cp and the sharded states (ZeRO, FSDP)
   * split over dp_shard·cp (Megatron's data_parallel_group with_context_parallel=True,
   * megatron/core/parallel_state.py; torchtitan's dp_shard_cp mesh). The data-parallel
   * degree is degree / (tp·cp). */
  guint cp;                  /* >= 1 (0 reads 1) */
  ModelCpVariant cp_variant; /* ring (default), all_gather, ulysses */
  /* Pipeline parallelism (pipeline_schedule.h): by default the mesh's outermost dimension,
   * as Megatron's "tp-cp-ep-dp-pp" (parallel_state.py RankGenerator) and torchtitan's
   * ["pp", ...]: stage s holds ranks [s·G, (s+1)·G) of G = degree / pp, so a stage's
   * tp/cp/dp groups stay together and consecutive stages are G ranks apart (across nodes
   * once G fills one); under order tp-cp-ep-pp-dp, consecutive stages are cp·tp ranks apart
   * and a stage's ranks are the mesh's (model_mesh_stage_of).
   * The data-parallel degree is degree / (tp·cp·pp); every model state is split over the
   * stages by layer (each rank holds only its stage's layers). */
  guint pp;                  /* >= 1 (0 reads 1) */
  ModelMeshOrder order;      /* the mesh's rank layout (mesh.h; default tp-cp-ep-dp-pp) */
  ModelPpScheduleKind pp_schedule; /* 1F1B by default, INTERLEAVED with pp_virtual > 1 */
  guint pp_virtual;          /* model chunks per rank v (0: 1, or the layout's) */
  guint pp_layers_per_stage[MODEL_PP_MAX_STAGES]; /* p·v counts in model order, or none */
  guint pp_n_layers_per_stage;                   /* entries used (0: even split) */
  const char *pp_layout;     /* Megatron layout string, interned (g_intern_string); NULL */
  /* Expert parallelism (expert_parallel.h, models/plan/plan_ep.c): the expert grid carved
   * out of a stage's dp·cp·tp ranks (mesh.h), and the MoE token dispatch's options. */
  guint ep;                  /* expert model parallel degree, >= 1 (0 reads 1) */
  guint etp;                 /* expert tensor parallel degree, >= 1 (0 reads 1) */
  gboolean moe_drop;         /* a capacity factor is set (otherwise dropless) */
  double moe_capacity_factor; /* c > 0 when moe_drop */
  gboolean moe_pad;          /* pad every expert's input to its capacity */
  double moe_imbalance;      /* r = max/mean load per expert, >= 1 (0 reads 1) */
  gboolean moe_a2a_overlap;  /* Megatron's --overlap-moe-expert-parallel-comm: each
                              * micro-batch's forward runs layer by layer beside the
                              * previous one's backward, hiding one's all-to-alls behind
                              * the other's compute (plan_step.c, combined 1F1B) */
  ModelEpDispatcher moe_dispatcher; /* all-to-all (default, 0) or all-gather token dispatch */
  const char *moe_expert_load; /* [moe] expert_load, interned (g_intern_string): "zipf:S" or
                                * the experts' relative loads; NULL: moe_imbalance's model
                                * (expert_parallel.h model_ep_expert_shares) */
} ModelParallel;

/* Model states whose placement the mode decides. */
typedef enum
{
  MODEL_STATE_WEIGHTS,   /* the (16-bit) parameters the layers use */
  MODEL_STATE_GRADIENTS,
  MODEL_STATE_MASTER,    /* fp32 master weights */
  MODEL_STATE_OPTIMIZER, /* optimizer states (Adam's moments) */
  MODEL_STATE_ACTIVATIONS, /* [batch, seq, hidden] tensors of the forward: each rank its own
                            * micro-batch, Shard(0) on every dp dimension in every phase */
  MODEL_N_STATES
} ModelState;

/* Phases of a step. */
typedef enum
{
  MODEL_PHASE_REST,       /* as kept between steps (gradients: as kept allocated) */
  MODEL_PHASE_COMPUTE,    /* as a layer's forward/backward uses or produces it */
  MODEL_PHASE_ACCUMULATE, /* as held across micro-batches */
  MODEL_PHASE_STEP,       /* as the optimizer step reads and writes it */
  MODEL_N_PHASES
} ModelPhase;

/* Single-rank defaults: DDP of degree 1, 25 MiB buckets, prefetch 1, AUTO algorithm. */
void model_parallel_init_defaults (ModelParallel *par);

/* Names as in scenarios: "ddp", "zero1", "zero2", "zero3", "fsdp_full_shard",
 * "fsdp_shard_grad_op", "fsdp_no_shard", "fsdp_hybrid_shard". */
const char *model_parallel_mode_name (ModelDataParallel mode);
/* The scenario name of a tp_comm_overlap mode: "none", "bulk", "pipelined" (static). */
const char *model_parallel_tp_overlap_name (ModelTpCommOverlap overlap);
gboolean model_parallel_mode_from_string (const char *text, ModelDataParallel *out,
                                          GError **error);

/* The mesh: tp innermost, then cp, dp_replicate × dp_shard = degree / (tp·cp) (the
 * scenario's, or from the mode as above: "every GPU" reads "every data-parallel rank", a
 * node's GPUs for hybrid reads a node's / (tp·cp), / (pp·cp·tp) under tp-cp-ep-pp-dp so
 * that the shard group stays on the node), pp outermost (or, under par->order
 * tp-cp-ep-pp-dp, just outside cp); the expert degrees mesh.ep, mesh.etp from par->ep,
 * par->etp. */
void model_parallel_mesh (const ModelParallel *par, ModelMesh *mesh);
/* Where `state` lies in `phase` under the mode (table above). */
ModelPlacements model_parallel_placements (const ModelParallel *par, ModelState state,
                                           ModelPhase phase);
/* Whether `state` is split into flat shards in `phase` (whatever the degree). */
gboolean model_parallel_state_sharded (const ModelParallel *par, ModelState state,
                                       ModelPhase phase);
/* A rank's share of `bytes` (B) of `state` in `phase`: placement.h's local bytes. */
double model_parallel_local_bytes (const ModelParallel *par, ModelState state,
                                   ModelPhase phase, double bytes);
/* The same share as a fraction of the whole. */
double model_parallel_local_fraction (const ModelParallel *par, ModelState state,
                                      ModelPhase phase);
/* The collectives (GArray of ModelPlacementComm, caller frees) moving `bytes` (B, whole)
 * of `state` from phase `from` to `to` on the mode's mesh. */
GArray *model_parallel_redistribute (const ModelParallel *par, ModelState state,
                                     ModelPhase from, ModelPhase to, double bytes);

/* ZeRO stage the placements amount to (0–3): 3 when weights rest sharded, 2 when gradients
 * accumulate sharded, 1 when optimizer states are, else 0. For reports, advice and
 * DeepSpeed's per-stage code paths; a rank's share of a state, or whether it is sharded,
 * is model_parallel_local_bytes/_fraction() or model_parallel_state_sharded(). */
guint model_parallel_stage (const ModelParallel *par);
/* Ranks sharing one copy of the sharded states (the optimizer states' ways): dp_shard·cp,
 * 1 when nothing is sharded. */
guint model_parallel_shard_size (const ModelParallel *par);
/* Data-parallel ranks: degree / (tp·cp·pp). */
guint model_parallel_dp_degree (const ModelParallel *par);
/* Replicas of each shard: dp degree · cp / shard size (> 1 only for hybrid). */
guint model_parallel_replicas (const ModelParallel *par);
/* The unsharded equivalent of `par` (a copy): DDP on the same mesh (dp_shard 1 and
 * dp_replicate = the degree over the shard size), whose gradients accumulate as Partial on
 * every dimension and are all-reduced over dp_replicate at the last micro-batch. What a
 * sharding mode runs as when its shard group is one rank: FSDP clamps such a unit to
 * NO_SHARD (torch/distributed/fsdp/_init_utils.py, _init_core_state) and ZeRO's partitions
 * are whole, yet every data-parallel rank still reduces its gradients with the others. */
ModelParallel model_parallel_unsharded (const ModelParallel *par);
/* Whether parameters gathered for the forward are kept until the backward (SHARD_GRAD_OP)
 * instead of being released and gathered again. */
gboolean model_parallel_keeps_gathered (const ModelParallel *par);
/* Whether gradients are reduced after every micro-batch (stages 2–3) rather than only at
 * the last (DDP no_sync, ZeRO-1). */
gboolean model_parallel_reduces_every_micro_batch (const ModelParallel *par);

/* Checks the configuration (degree divisible by gpus_per_node for hybrid, bucket > 0;
 * dp_replicate × dp_shard = degree, dp_shard 1 for ddp and fsdp_no_shard). FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE naming the key. */
gboolean model_parallel_validate (const ModelParallel *par, GError **error);
