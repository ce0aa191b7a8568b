/* models/parallel/pipeline_schedule.h — pipeline parallelism (PP): which layers each
 * pipeline stage holds, and the order in which each pipeline rank runs its forward and
 * backward passes of every micro-batch (the schedule), with the dependencies between ranks
 * an event engine replays: the bubble is what the replay leaves idle, never a formula.
 *
 * Vocabulary. p pipeline ranks (mesh.h's pp degree), v model chunks per rank (virtual
 * stages, Megatron-LM's --num-virtual-stages-per-pipeline-rank; 1 without interleaving),
 * S = p·v virtual stages in model order, m micro-batches per step (the step's gradient
 * accumulation: [training] grad_accum). Megatron assigns model chunks to ranks round-robin
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py PipelineParallelLayerLayout:
 * layout[pp_rank][vpp_rank] = stages[vpp_rank·p + pp_rank]): chunk c of rank r is virtual
 * stage k = r + c·p, so activations go 0 → 1 → … → p−1 → 0 (chunk 1) → … on the forward.
 *
 * Partitioning (model_pp_partition_new): even by default (L / S decoder layers per
 * stage; Megatron's get_num_layers_to_build without uneven options), or `layers_per_stage`
 * (S counts, model order), or a Megatron layout string (--pipeline-model-parallel-layout,
 * parsed as PipelineParallelLayerLayout.parse_str_to_list: 'E' embedding, 't' transformer
 * layer, 'm' MTP layer, 'L' loss (the output layer and the loss), '|' stage separator,
 * "(…)*n" and "x*n" repeats, ',' cosmetic; the number of stages a multiple of p, v their
 * quotient). Without a layout the embedding is on stage 0 and the loss head on stage S−1
 * (Megatron's pre_process / post_process).
 *
 * Schedules (model_pp_schedule_new), each the per-rank op order of the framework:
 *   GPIPE        all m forwards, then all m backwards (Huang et al. 2019, GPipe; torch
 *                torch/distributed/pipelining/schedules.py ScheduleGPipe)
 *   1F1B         PipeDream-Flush (Narayanan et al. 2021, arXiv 2104.04473, §2.2.1;
 *                megatron/core/pipeline_parallel/schedules.py
 *                forward_backward_pipelining_without_interleaving): rank r runs
 *                min(p − r − 1, m) warm-up forwards, then pairs (F, B) — one forward, one
 *                backward — and the remaining backwards (cool-down)
 *   INTERLEAVED  interleaved 1F1B (ibid. §2.2.2; schedules.py
 *                forward_backward_pipelining_with_interleaving, get_pp_rank_microbatches,
 *                get_schedule_table): m·v virtual micro-batches in groups of p micro-batches
 *                per chunk (microbatch_group_size_per_vp_stage, default p), warm-up
 *                min((p − r − 1)·2 + (v − 1)·p, m·v), then (F, B) pairs, then cool-down; the
 *                backward of virtual micro-batch k runs chunk v − 1 − chunk(k)
 *   ZB_H1        zero bubble ZB-H1 (Qi et al. 2023, arXiv 2401.10241, §3.1): the backward
 *                split into B (input gradient, on the critical path) and W (weight
 *                gradient, deferrable); 1F1B's order of F and B, rank r deferring its first
 *                r W passes so that the later ranks' B reach the earlier ranks sooner, each
 *                further B followed by the oldest pending W, the pending W after the last B
 *                (torch/distributed/pipelining/schedules.py _get_1f1b_rank_ops with
 *                enable_zero_bubble and num_1f1b_microbatches = rank, as
 *                ScheduleInterleavedZeroBubble with one stage per rank). Every rank holds at
 *                most p micro-batches whose W is pending: 1F1B's peak (the paper's "same
 *                memory as 1F1B")
 * The non-split schedules run one combined backward BW per micro-batch and stage.
 *
 * Units: counts (layers, micro-batches). Errors: G_KEY_FILE_ERROR_INVALID_VALUE naming the
 * [parallel] / [training] keys (MODEL_PP_KEY_*) and the model key num_hidden_layers; the
 * caller adds the file.
 */
#pragma once

#include <glib.h>

/* Scenario keys the messages name; the scenario reader (cli/scenario) is to use the same. */
#define MODEL_PP_KEY_PP "[parallel] pp"
#define MODEL_PP_KEY_VIRTUAL "[parallel] virtual_stages"
#define MODEL_PP_KEY_LAYERS "[parallel] layers_per_stage"
#define MODEL_PP_KEY_LAYOUT "[parallel] pipeline_layout"
#define MODEL_PP_KEY_SCHEDULE "[parallel] pipeline_schedule"
#define MODEL_PP_KEY_MICRO_BATCHES "[training] grad_accum"
#define MODEL_PP_KEY_MTP "[training] mtp_layers"

/* Most virtual stages (p·v) a layers_per_stage list may give (the scenario's bound). */
#define MODEL_PP_MAX_STAGES 256

/* ---- Stage partitioning ----------------------------------------------------------------- */

/* One virtual stage: what it holds. */
typedef struct
{
  guint rank;         /* pipeline rank r = k mod p */
  guint chunk;        /* model chunk c = k div p on that rank */
  guint first_layer;  /* index of its first decoder layer in the model (0-based) */
  guint n_layers;     /* decoder (transformer) layers */
  guint n_mtp;        /* multi-token-prediction layers (DeepSeek-V3's MTP; layout 'm') */
  gboolean embedding; /* holds the input embedding */
  gboolean loss;      /* holds the output layer (LM head) and the loss */
} ModelPpStage;

typedef struct
{
  guint pp;       /* p */
  guint vpp;      /* v */
  GArray *stages; /* ModelPpStage, S = p·v, virtual-stage (model) order: index k = r + c·p */
} ModelPpPartition;

typedef struct
{
  guint n_layers;               /* the model's num_hidden_layers (L), >= 1 */
  guint n_mtp;                  /* MTP layers trained ([training] mtp_layers; 0 for most):
                                 * a layout's 'm' count, else on the last virtual stage */
  guint pp;                     /* p >= 1 */
  guint vpp;                    /* v >= 1; 0: 1, or from the layout */
  const guint *layers_per_stage; /* NULL, or S counts in model order summing to L */
  guint n_layers_per_stage;     /* entries in layers_per_stage */
  const char *layout;           /* NULL, or a Megatron layout string (above) */
} ModelPpPartitionSpec;

/* The stages of a model with spec->n_layers decoder layers over p ranks and v chunks each.
 * At most one of layers_per_stage and layout. Errors (G_KEY_FILE_ERROR_INVALID_VALUE):
 * p, v zero; even split with L not a multiple of p·v (naming [parallel] pp, virtual_stages
 * and num_hidden_layers, and suggesting layers_per_stage or pipeline_layout; Megatron
 * asserts the same in get_num_layers_to_build); a layers_per_stage list not of p·v entries
 * or not summing to L; a layout with an unknown character, an unbalanced or unrepeated
 * parenthesis or a bad repeat count (naming the character and its 1-based position in the
 * string), a stage count not a multiple of p or giving another v than spec->vpp (when not
 * 0), 'E' not the first layer or 'L' not the last (model order) or either not exactly once,
 * a 't' count other than L, an 'm' count other than n_mtp (naming [training] mtp_layers;
 * without a layout the n_mtp MTP layers go on the last virtual stage), an MTP layer before a decoder
 * layer or outside its rank's last chunk (validate_layer_layout). New partition
 * (model_pp_partition_free) or NULL. */
ModelPpPartition *model_pp_partition_new (const ModelPpPartitionSpec *spec, GError **error);
void model_pp_partition_free (ModelPpPartition *part); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelPpPartition, model_pp_partition_free)

/* Virtual stage k (0 <= k < p·v). */
const ModelPpStage *model_pp_partition_stage (const ModelPpPartition *part, guint k);

/* ---- Schedules ------------------------------------------------------------------------- */

typedef enum
{
  MODEL_PP_GPIPE,
  MODEL_PP_1F1B,
  MODEL_PP_INTERLEAVED,
  MODEL_PP_ZB_H1,
} ModelPpScheduleKind;

/* "gpipe", "1f1b", "interleaved", "zb-h1". */
const char *model_pp_schedule_name (ModelPpScheduleKind kind);
/* The kind named `name` (the names above); FALSE if none. */
gboolean model_pp_schedule_from_name (const char *name, ModelPpScheduleKind *out);

typedef enum
{
  MODEL_PP_OP_F,  /* forward of one micro-batch through one virtual stage */
  MODEL_PP_OP_B,  /* backward, input gradient only (zero-bubble split) */
  MODEL_PP_OP_W,  /* backward, weight gradient only (zero-bubble split) */
  MODEL_PP_OP_BW, /* backward, both (every other schedule) */
} ModelPpOpKind;

/* "F", "B", "W", "BW". */
const char *model_pp_op_name (ModelPpOpKind kind);

/* An op another op waits for: op `index` of rank `rank`'s list. */
typedef struct
{
  guint rank;
  guint index;
  gboolean p2p; /* on another rank: a P2P transfer (activation for an F, its gradient for
                 * a B/BW) from that rank's op to this one */
} ModelPpDep;

/* One op of a rank's ordered list. Besides its deps it waits for the op before it on its
 * rank (a rank runs its list in order, one op at a time).
 *   F  stage k mb i:  F of stage k−1 mb i (k > 0; a P2P recv, across ranks)
 *   B/BW stage k mb i: F of stage k mb i (same rank); B/BW of stage k+1 mb i (k < S−1; a
 *                      P2P recv of the output gradient). The last stage's B starts from its
 *                      own loss.
 *   W  stage k mb i:  B of stage k mb i (same rank) */
typedef struct
{
  ModelPpOpKind kind;
  guint mb;          /* micro-batch, 0 .. m−1 */
  guint chunk;       /* model chunk on this rank, 0 .. v−1 */
  guint stage;       /* virtual stage r + chunk·p */
  guint n_deps;      /* 0 .. 2 */
  ModelPpDep deps[2];
  gboolean combined; /* a steady-state F or BW of the combined 1F1B (model_pp_schedule_new_with
                      * with a2a_overlap): an F with the BW after it is one combined step;
                      * never a warm-up or cool-down op */
} ModelPpOp;

typedef struct
{
  ModelPpScheduleKind kind;
  guint pp, vpp, n_micro; /* p, v, m */
  GPtrArray *ranks;       /* p GArray of ModelPpOp, each rank's order */
  GPtrArray *warnings;    /* char *, owned: allowed but poor choices (m < p), for the caller
                           * to print naming the file */
} ModelPpSchedule;

/* The schedule `kind` for p ranks, m micro-batches and v chunks per rank. v must be 1
 * except for INTERLEAVED, which needs v >= 2 and m a multiple of p (Megatron raises for a
 * last micro-batch group of fewer than p micro-batches, which with its default group size p
 * is m mod p != 0). m < p is allowed for GPIPE, and for 1F1B and ZB_H1 with a warning in
 * `warnings`: with equal stages each rank idles (p − 1) of (m + p − 1) micro-batch slots. Errors
 * (G_KEY_FILE_ERROR_INVALID_VALUE): p, m zero; v as above (naming [parallel]
 * virtual_stages and pipeline_schedule); m not a multiple of p (naming [training]
 * grad_accum and [parallel] pp). New schedule (model_pp_schedule_free) or NULL. */
ModelPpSchedule *model_pp_schedule_new (ModelPpScheduleKind kind, guint pp, guint n_micro,
                                        guint vpp, GError **error);
/* The same, for Megatron's combined 1F1B ([moe] a2a_overlap) when `a2a_overlap`: the
 * interleaved schedule's warm-up runs one more forward (schedules.py
 * get_pp_rank_microbatches: "we schedule one extra micro-batch" so that every steady-state
 * forward has a backward to pair with), and each steady-state F, BW pair of a rank's list
 * is one combined step (plan_pp.c). Other kinds are unchanged (the caller refuses them). */
ModelPpSchedule *model_pp_schedule_new_with (ModelPpScheduleKind kind, guint pp, guint n_micro,
                                             guint vpp, gboolean a2a_overlap, GError **error);
void model_pp_schedule_free (ModelPpSchedule *sched); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelPpSchedule, model_pp_schedule_free)

/* Rank r's ops (r < p); borrowed. */
const GArray *model_pp_schedule_rank (const ModelPpSchedule *sched, guint r);
/* Op `index` of rank r. */
const ModelPpOp *model_pp_schedule_op (const ModelPpSchedule *sched, guint r, guint index);

/* ---- Per-rank view for the memory model -------------------------------------------------- */

/* What one pipeline rank holds over the step. In-flight counts walk the rank's own order:
 * an F makes a micro-batch's activations live on that chunk, its B/BW ends the input-grad
 * need, its W (BW for the non-split schedules) frees the rest. They are properties of the
 * order alone (the same whatever the op times). */
typedef struct
{
  guint rank;
  guint n_layers;        /* decoder layers over its chunks */
  guint n_mtp;
  gboolean embedding;    /* one of its chunks holds the embedding */
  gboolean loss;         /* one of its chunks holds the output layer and the loss */
  guint peak_in_flight;  /* max over the order of Σ_chunks (F done − B/BW done): micro-batch
                          * chunks whose backward has not run. 1F1B: min(p − r, m); GPipe:
                          * m; interleaved: min((p − r − 1)·2 + (v − 1)·p + 1, m·v) */
  guint peak_pending_w;  /* max of Σ_chunks (F done − W/BW done): those whose weight
                          * gradient has not run (ZB-H1: min(p, m); others as above) */
  double peak_layer_micro; /* max over the order of Σ_chunks (F − B/BW done)·n_layers(chunk):
                            * decoder-layer micro-batches of saved activations at the rank's
                            * peak (uneven chunks weighted). Even interleaving, first rank:
                            * (v·p + p − 1)·L/(p·v) = (L/p)·p·(1 + (p − 1)/(p·v)), Korthikanti
                            * et al. 2022 (arXiv 2205.05198) §4.2.3's factor with its m the
                            * number of interleaved stages (our v) */
} ModelPpRankMemory;

/* One entry per rank (p), appended to `out` (GArray of ModelPpRankMemory), from `part` and
 * `sched`, which must agree on p and v. */
void model_pp_rank_memory (const ModelPpPartition *part, const ModelPpSchedule *sched,
                           GArray *out);
