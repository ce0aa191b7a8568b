/* models/plan/plan-private.h — the plan's internals, shared by the files that build it:
 * plan_task.c (primitives), plan.c (construction, accessors), plan_state.c (persistent
 * state), plan_step.c (the per-rank schedule) and plan_comm.c (data-parallel
 * collectives). Not for use outside models/plan*.c. */
#pragma once

#include "models/parallel/expert_parallel.h"
#include "models/plan/plan.h"

/* Megatron tensor parallelism in the plan (plan_tp.c). Fractions: of the whole model's
 * trainable parameters (elements) or stored weight bytes that one tp rank holds, by scope
 * (tensor_parallel.h's layout: column/row/vocab splits, replicated norms and biases, the
 * vocabulary padded to 128·tp, so a fraction may exceed 1/tp); all 1 for tp = 1. */
typedef struct
{
  guint tp;
  gboolean sp;
  ModelArch *arch;        /* one rank's shapes (query heads a/tp, KV heads per rank, MLP
                           * inner i/tp, vocabulary padded/tp): what its kernels run;
                           * NULL for tp = 1 */
  double trainable, trainable_layer, trainable_root, trainable_embed, trainable_mtp;
  double weights, weights_layer, weights_root, weights_embed;
  double trainable_expert, weights_expert; /* the part of trainable, weights that is routed
                           * experts' tensors (n_experts/ep per rank): sharded over
                           * expert-dp rather than dp (plan_state.c); 0 without experts */
  double quant;           /* QLoRA's constants one rank holds, of all (each shards with its
                           * NF4 weight: model_tp_layout_constant_bytes); 1 without */
  double sp_grad_bytes;   /* B of SP's norm/row-bias gradients all-reduced over tp after
                           * the last backward (model_tp_sp_grad_numel); 0 without SP */
  GArray *comms[3][2];    /* ModelTpComm of one micro-batch per block (PLAN_TP_EMBEDDING,
                           * _LAYER, _HEAD) and pass (ModelTpPass); NULL for tp = 1 */
} PlanTp;

/* Context parallelism in the plan (plan_cp.c): the leaf's parameters for one rank of a
 * cp group (heads of one tp rank) and the cp collectives of one layer and micro-batch per
 * pass; comms NULL for cp = 1. */
typedef struct
{
  guint cp;
  ModelCpParams params;
  GArray *comms[2];       /* ModelCpComm per ModelCpPass */
} PlanCp;

/* Which of a layer's cp collectives plan_cp_issue issues. */
typedef enum
{
  PLAN_CP_BEFORE, /* on the critical path before the attention (all-gather K/V, q/k/v
                   * all-to-all): the layer's task waits for them */
  PLAN_CP_RING,   /* the ring's P2P, beside the layer's task */
  PLAN_CP_AFTER,  /* on the critical path after it (output all-to-all, dK/dV scatter) */
} PlanCpWhen;

/* Pipeline parallelism in the plan (plan_pp.c): the stages and the schedule of the
 * pipeline ranks (models/parallel/pipeline_schedule.h), and each pipeline rank's share of
 * the model states; part/sched NULL for pp = 1. */
typedef struct
{
  guint pp, vpp;
  ModelPpPartition *part;
  ModelPpSchedule *sched;
  double *share[4];    /* per pipeline rank, of the whole model (as PlanTp's fractions): the
                        * trainable parameters one rank of its stages holds, not routed
                        * experts' [0] and routed experts' [1] (n_experts/ep per rank),
                        * and the same of the stored weights [2], [3] (with tied embeddings
                        * the last stage's copy of the embedding counts too) */
  double p2p_bytes;    /* B of one micro-batch's activation (or its gradient) between stages */
  double tied_params;  /* tied embeddings: trainable embedding parameters one tp rank holds,
                        * whose gradients the first and last stages all-reduce; 0 otherwise */
  guint *layers;       /* per pipeline rank: the transformer layers (MTP depths included) of
                        * its stages */
} PlanPp;

/* Expert parallelism in the plan (plan_ep.c): one MoE layer's token dispatch on the
 * slowest rank and its collectives per micro-batch and pass; on = FALSE (nothing changes)
 * for a dense model, or for ep = etp = 1 without a capacity factor. */
typedef struct
{
  gboolean on;
  ModelEpParams params;
  ModelEpDispatch dispatch;
  GArray *comms[2];       /* ModelEpComm per ModelEpPass; NULL when off */
  double expert_params_layer; /* trainable expert parameters of one layer a rank holds
                               * (÷ ep·etp); reduced over expert-dp, not dp, under
                               * stages 0 and 1 */
  gboolean edp_reduce;    /* the data-parallel mode is stage 0 or 1 (DDP, the distributed
                           * optimizer): expert gradients are reduced over expert-dp
                           * (plan_ep_reduce_grads) */
  HwCollectiveKind edp_kind; /* all-reduce (stage 0) or reduce-scatter (stage 1) */
  double row_extra[4];    /* B the slowest EP rank's received rows add to one MoE layer's
                           * saved activations over the layer graph's (the mean rank's):
                           * kept under KEEP_ALL, of those re-created by selective recompute,
                           * kept under KEEP_MATMUL, and re-created by op-level selective
                           * (plan_ep_layer_memory) */
  double workspace_extra; /* B the forward's transient peak grows by under etp > 1: the
                           * layer graph's row tensors at the rank's gathered rows (the
                           * experts' output, combine_preprocess's reduce-scatter input, at
                           * etp × the rows × h); 0 at etp 1 */
  double ag_workspace[2]; /* B the all-gather dispatcher's forward and backward transient
                           * peaks (model_ep_acts_megatron: the gathered G tokens × h, the
                           * unpermuted G × h, their gradients); a MoE layer's forward and
                           * backward workspace is at least these; 0 under all-to-all */
} PlanEp;

typedef enum
{
  PLAN_TP_EMBEDDING,
  PLAN_TP_LAYER,
  PLAN_TP_HEAD,
} PlanTpBlock;

struct _ModelPlan
{
  ModelArch *arch;
  ModelStack stack;
  ModelParallel par;
  ModelMesh mesh;      /* model_parallel_mesh (&par) */
  guint n_ranks;
  HwRankShift built;       /* ranks whose tasks exist: its representatives (plan.h
                            * model_plan_built; the identity: every rank) */
  GArray *tasks;       /* ModelTask, index = id */
  GArray *kernels;     /* ModelKernel; tasks running the same kernel sequence share one range
                        * (plan_task_add_pass) */
  GHashTable *kernel_runs; /* KernelRun* (owned keys): the ranges shared so far */
  struct _PlanPassMemo *pass_memo; /* plan_task_add_pass's memo of passes seen (plan_task.c);
                                    * NULL until its first use; owned */
  guint n_copied_mbs;      /* micro-batches built as copies of a template (plan_step.c) */
  struct _PlanRedistMemo *redist_memo; /* plan_redistribute_as's memo of redistributions
                                        * (plan_comm.c); NULL until its first use; owned */
  GArray *deps;        /* guint task ids */
  GArray *effects;     /* ModelMemEffect */
  GStringChunk *labels;
  GArray *handles;     /* ModelMemEffect of each allocation, index = handle (0 unused) */
  GArray *tensor_sizes; /* double, B: the tensors of allocations made of several */
  double initial[MODEL_N_MEM];
  GArray *initial_handles; /* guint, n_ranks × MODEL_N_MEM */
  GArray *creation_tasks;  /* guint, n_ranks × MODEL_N_MEM: model_plan_creation_task */
  GArray *grad_handles;    /* guint, gradients the current rank keeps until its optimizer */
  GArray *collectives;     /* ModelCollective */
  GPtrArray *rank_lists;   /* owned guint arrays behind ModelCollective.ranks */
  GHashTable *groups;      /* PlanGroup* → itself (owned): the mesh and expert groups that
                            * collectives ran on (plan_comm.c); lookup only */
  GHashTable *instances;   /* pipeline pair "key" → collective index + 1 (plan_pp.c); lookup
                            * only */
  double *state_bytes;     /* per rank */
  double model_flops;
  double hardware_flops;
  struct _PlanOffload *offload; /* plan_offload.c's per-rank state; NULL until used */
  guint compute_gate;  /* a task the current rank's next compute-stream task waits for
                        * (plan_task_begin consumes it; G_MAXUINT: none): how a copy the
                        * framework orders before later kernels holds the backward back
                        * (plan_offload.c, gradients) */
  double paged_spill;  /* B of optimizer state per rank paged out to host (plan_paged.c) */
  guint paged_host;    /* the current rank's host-DRAM handle of the spill, held for the
                        * step (0: none) */
  PlanTp tp;
  PlanCp cp;
  PlanPp pp;
  PlanEp ep;
};

/* Per-block costs of one micro-batch and the gradient bytes each block produces. */
typedef struct
{
  ModelBlockCost embedding, layer, head;
  double params_root;   /* trainable parameters of the root unit (embedding + final norm +
                         * LM head; 0 under LoRA) and of one layer (stack.h) */
  double params_layer;
  double params_embedding; /* trainable parameters whose last gradient contribution is the
                            * embedding's backward: the embedding (with a tied LM head, the
                            * shared matrix); 0 under LoRA */
  double weight_root;   /* B of persistent weights of the root unit and of one layer: what a
                         * stage-3 gather moves */
  double weight_layer;
  double weight_embedding; /* B of the embedding's persistent weights (its own FSDP unit
                            * under fsdp_end_units; the head's unit is the root's rest) */
  double grad_embedding, grad_layer, grad_head; /* B of full gradients per block */
  /* DeepSeek-V3 multi-token prediction ([training] mtp_layers > 0; zero otherwise): one
   * depth's block before its decoder layer (model_cost_mtp_proj; its layer is `layer`, its
   * shared head `head`), the trainable parameters of a depth outside its decoder layer
   * (enorm, hnorm, eh_proj, shared_head.norm; a rank's share) and their gradients' B */
  ModelBlockCost mtp_proj;
  double params_mtp;
  double grad_mtp;
  /* model_cost_step_flops of the whole model for the stack's parameters, from the blocks
   * above when they are its own (no tp arch, the whole sequence: plan_costs); < 0 when
   * they are a tp or cp rank's */
  double step_flops;
  /* trainable parameter tensors of the whole model (nn.Parameters: the optimizer's
   * per-tensor loop, model_stack_optimizer_host_ops) and the trainable elements they hold */
  double trainable_tensors;
  double trainable_matrices; /* of them with two or more dimensions (Adafactor factors them) */
  double trainable_params;
} PlanCosts;

/* ---- primitives (plan_task.c) ---- */
/* Appends a task of `rank` on `stream` and makes it current; a compute-stream task also
 * waits for p->compute_gate (then cleared). Returns its id. */
G_GNUC_PRINTF (7, 8)
guint plan_task_begin (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind,
                       gint layer, gint micro_batch, const char *fmt, ...);
ModelTask *plan_current (ModelPlan *p);
void plan_task_add_pass (ModelPlan *p, const ModelPass *pass);
GHashTable *plan_kernel_runs_new (void); /* ModelPlan.kernel_runs, empty */
/* Frees ModelPlan.pass_memo (plan_task.c) and ModelPlan.redist_memo (plan_comm.c); NULL is
 * a no-op. */
void plan_pass_memo_free (struct _PlanPassMemo *memo);
/* Whether the memos are on (plan.h model_plan_set_memo). */
gboolean plan_memo_on (void);
void plan_redist_memo_free (struct _PlanRedistMemo *memo);
void plan_task_dep (ModelPlan *p, guint task); /* no-op for G_MAXUINT */
guint plan_new_handle (ModelPlan *p, ModelMemCategory category, double bytes);
guint plan_task_alloc (ModelPlan *p, ModelMemCategory category, double bytes,
                       ModelEffectWhen when);
/* As plan_task_alloc() (on the compute stream), on CUDA stream `stream`: the caching
 * allocator serves it from that stream's pool (plan_pools.c says where a framework
 * allocates what). */
guint plan_task_alloc_on (ModelPlan *p, ModelMemCategory category, double bytes,
                          ModelEffectWhen when, ModelAllocStream stream);
/* A buffer of n separate tensors (sizes in B, copied); n == 0 allocates nothing. */
guint plan_new_handle_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes,
                               guint n);
guint plan_task_alloc_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes,
                               guint n, ModelEffectWhen when);
void plan_task_free (ModelPlan *p, guint handle, ModelEffectWhen when);
void plan_task_workspace (ModelPlan *p, double bytes);
/* The workspace of `pass` for the current task: its workspace_tensors as one buffer of
 * that many allocator blocks when the pass lists them, else plan_task_workspace() of its
 * workspace; allocated at the task's start, freed at its end. `pass` is borrowed. */
void plan_task_pass_workspace (ModelPlan *p, const ModelPass *pass);
void plan_keep_gradient (ModelPlan *p, guint handle);
/* The last task of `rank` on `stream` built so far (tasks of a rank are contiguous), or
 * G_MAXUINT. */
guint plan_last_on_stream (const ModelPlan *p, guint rank, ModelStream stream);

/* ---- allocation streams (plan_pools.c) ---- */
/* The stream a rank's gathered parameters (plan_step.c gather_block) are allocated on:
 * the all-gather stream under a sharding fsdp_* mode (PyTorch FSDP) and zero3 (DeepSpeed),
 * else the compute stream. */
ModelAllocStream plan_gather_stream (const ModelPlan *p);
/* The stream the gradient shards a reduce-scatter leaves are allocated on: PyTorch FSDP's
 * reduce-scatter stream under a sharding fsdp_* mode, else the compute stream. */
ModelAllocStream plan_grad_shard_stream (const ModelPlan *p);

/* ---- persistent state (plan_state.c) ---- */
/* Fills p->initial[] for every rank (sharding, offload). */
void plan_initial_state (ModelPlan *p);
/* The fraction of a tp-local model state of category `c` one rank keeps in `phase`: the
 * data-parallel mode's (parallel.h model_parallel_local_fraction) for tensors not of routed
 * experts; for routed experts' (expert TRUE) under ep > 1 a sharded state is split over
 * expert-dp instead (1/edp). 1 for categories that are no model state. */
double plan_state_shard_fraction (const ModelPlan *p, ModelMemCategory c, ModelPhase phase,
                                  gboolean expert);
/* Σ of the dense and expert fractions of the whole model (trainable elements, or stored
 * weights for weights and quantization constants) times their shard fractions at rest:
 * the fraction of category `c`'s whole-model bytes a rank holds. */
double plan_state_rank_fraction (const ModelPlan *p, ModelMemCategory c, double trainable_dense,
                                 double trainable_expert, double weights_dense,
                                 double weights_expert);
/* Whether PyTorch FSDP casts fp32 parameters to a 16-bit param_dtype as it gathers them
 * (MixedPrecision: a *_mixed precision under fsdp_full_shard or fsdp_hybrid_shard over
 * more than one GPU, full training, no offload), so that the stored shard is the master
 * copy, no 16-bit copy persists, and the sharded gradient is kept in the parameters' fp32
 * (plan_state.c, where the sources are cited). fsdp_shard_grad_op keeps every unit's
 * 16-bit parameters gathered from its forward to its backward, which stepsim counts as
 * 16-bit weights at rest, so it is not one. */
gboolean plan_fsdp_casts_params (const ModelPlan *p);
/* The tensors the optimizer steps (models/stack/stack.h ModelOptimizerView), as the
 * data-parallel wrapper presents them: DeepSpeed's ZeRO (stages 1–3) flat fp32 partitions;
 * FSDP1 under a sharding strategy over more than one rank, and Megatron's and nanotron's
 * distributed optimizers (ZeRO-1: each parameter's range as a 1-D view,
 * megatron/core/optimizer/distrib_optimizer.py `model_param.view(-1)[param_range.start :
 * param_range.end]`), 1-D shard views, as many as the optimizer state's shard degree;
 * otherwise each parameter in its shape (DDP, NO_SHARD, FSDP2, one rank: FSDP1 falls back
 * to NO_SHARD on a world of one). */
ModelOptimizerView plan_optimizer_view (const ModelPlan *p);
/* DeepSpeed ZeRO-3 steps its fp32 partition in sub-groups of sub_group_size elements
 * (deepspeed/runtime/zero/config.py sub_group_size = pp_int(1e9); stage3.py
 * _create_fp16_sub_groups closes a sub-group at the parameter whose partition takes it to
 * that size or beyond). */
#define PLAN_DS_SUB_GROUP_ELEMENTS 1e9
/* B per parameter of a gradient shard as kept between the reduce-scatter and the
 * optimizer: 4 under plan_fsdp_casts_params, else the stack's gradient dtype. */
double plan_grad_shard_bytes (const ModelPlan *p);
/* Whether the optimizer states are created by the first optimizer step rather than at
 * load (model_plan_creation_task). */
gboolean plan_states_at_first_step (const ModelPlan *p);

/* The tensors (B each, new array, summing to `bytes`; empty when bytes is 0) of the
 * optimizer step's temporaries: foreach AdamW's torch._foreach_sqrt(exp_avg_sqs) is a list
 * of tensors, one like each parameter's second moment (torch/optim/adamw.py
 * _multi_tensor_adamw), so one block per parameter tensor — what the caching allocator
 * sees — or, over flat shards (ZeRO, FSDP), one per unit's shard; other optimizers and
 * implementations: one block. */
GArray *plan_optimizer_workspace_tensors (const ModelPlan *p, double bytes);
/* The tensors (B each, new array) making up the initial allocation of `category`; the
 * weights' last one is the rotary table when the framework keeps one (plan_rope_table_bytes). */
GArray *plan_initial_tensors (const ModelPlan *p, ModelMemCategory category);
/* B of the rotary position tables the framework builds with the model as GPU buffers
 * (ModelFramework.rope_table), counted in the weights, of the whole model: positions ×
 * rotary_dim/2 pairs of 8 B — torchtune's fp32 (cos, sin) pairs over the model's
 * max_position_embeddings, torchtitan's complex64 freqs_cis over the training seq_len —,
 * under `per_layer` one such table over seq_len for each transformer layer (MTP depths
 * included), 16 B a pair for the models torchtitan builds with CosSinRoPE (framework.c
 * cites them); 0 when the model code computes it in each forward (HF) or the model has no
 * rotary positions (model_arch_rotary_dim). Llama 3.2 under torchtune: 131072 × 64 × 8 B =
 * 64 MiB. */
double plan_rope_table_bytes (const ModelPlan *p);
/* B of those tables global `rank` holds: the whole model's, except that under `per_layer` a
 * pipeline rank holds its stages' layers' (PlanPp.layers). */
double plan_rope_table_rank_bytes (const ModelPlan *p, guint rank);
/* B of category c global `rank` holds from time 0: its pipeline stage's share of the
 * plan's initial bytes (plan_pp_state_fraction; all without pp), the weights' rotary
 * tables as the rank holds them (plan_rope_table_rank_bytes). */
double plan_state_rank_initial (const ModelPlan *p, guint rank, ModelMemCategory c);
/* The buffers Transformer Engine's get_dummy_wgrad keeps on global `rank` under a framework
 * with wgrad_dummy (Megatron) and an fp32 main_grad: B of each, one per distinct shape of
 * the weights of the Megatron linears the rank's pipeline stage holds (one tp/etp rank's
 * shard, q/k/v and gate/up fused as Megatron builds them), in the weight dtype. Created by
 * the first backward and never freed. New array (empty otherwise); caller frees. */
GArray *plan_wgrad_dummy_tensors (const ModelPlan *p, guint rank);

/* ---- schedule (plan_step.c) ---- */
void plan_step_rank (ModelPlan *p, guint rank, const PlanCosts *pc);

/* ---- collectives (plan_comm.c) ---- */
/* Starts a collective task of `kind` on the comm stream of `rank` among its group over the
 * mesh dimensions `dims` (MODEL_MESH_BIT set; models/parallel/mesh.h), with `bytes` per
 * the nccl-tests convention; returns its task id (G_MAXUINT when the group has one rank:
 * no task). Dependencies and effects are added by the caller after this. */
guint plan_collective (ModelPlan *p, guint rank, guint dims, HwCollectiveKind kind,
                       double bytes, gint layer, gint micro_batch, const char *what);
/* The collectives moving `bytes` (B, whole) of `state` from phase `from` to `to`
 * (models/parallel/parallel.h's placements), issued in order on `rank`, each after the
 * previous, the first after `after` (NONE: no dependency); the first is named `what`, the
 * next "`what` shard". Returns the first task in *first (G_MAXUINT when none) and the last
 * as the result (G_MAXUINT when none). */
guint plan_redistribute (ModelPlan *p, guint rank, ModelState state, ModelPhase from,
                         ModelPhase to, double bytes, gint layer, gint micro_batch,
                         const char *what, guint after, guint *first);
/* plan_redistribute with the placements of `par` instead of the plan's own (bucket
 * reduction of a sharding mode over a shard group of one: model_parallel_unsharded). */
guint plan_redistribute_as (ModelPlan *p, const ModelParallel *par, guint rank,
                            ModelState state, ModelPhase from, ModelPhase to, double bytes,
                            gint layer, gint micro_batch, const char *what, guint after,
                            guint *first);
/* model_parallel_redistribute (par, state, from, to, bytes) (a new reference: the caller
 * unrefs it and leaves it unchanged), from p's memo when an identical one (the setup bit
 * for bit) was asked of it before (plan.h model_plan_set_memo). */
GArray *plan_parallel_redistribute (ModelPlan *p, const ModelParallel *par, ModelState state,
                                    ModelPhase from, ModelPhase to, double bytes);
/* Bytes per element of gradient reductions. */
double plan_reduce_bytes (const ModelPlan *p);
/* The plan's table of collective groups (ModelPlan.groups), empty: new (g_hash_table_unref). */
GHashTable *plan_groups_new (void);
/* plan_collective on `stream` (the tp collectives' own MODEL_STREAM_TP). */
guint plan_collective_on (ModelPlan *p, guint rank, ModelStream stream, guint dims,
                          HwCollectiveKind kind, double bytes, gint layer, gint micro_batch,
                          const char *what);

/* The instance index of `rank`'s next collective on the mesh group of collective `like`
 * (its dims, kind and bytes), as plan_collective_on takes it: what a copy of a task of
 * collective `like` on `rank` runs (plan_step.c's micro-batch template). Not for expert
 * groups. */
guint plan_collective_instance_like (ModelPlan *p, guint rank, guint like);
/* plan_collective_on over `rank`'s expert group along `dim` (mesh.h
 * model_mesh_expert_group: not a plain mesh group, so the collective's dims are 0). */
guint plan_collective_expert (ModelPlan *p, guint rank, ModelStream stream,
                              ModelMeshExpertDim dim, HwCollectiveKind kind, double bytes,
                              gint layer, gint micro_batch, const char *what);

/* ---- expert parallelism (plan_ep.c) ---- */
/* The leaf's dispatch parameters for one rank of the plan's stack and parallel setup. */
void plan_ep_params (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                     ModelEpParams *out);
/* The checks of [parallel] ep / etp and the [moe] options (model_ep_check on the mesh,
 * model_ep_dispatch's parameter checks; etp > 1 with biased experts refused, as Megatron
 * refuses it).
 * FALSE + G_KEY_FILE_ERROR_INVALID_VALUE "group [G], key 'K': …". */
gboolean plan_ep_validate (const ModelArch *arch, const ModelStack *stack,
                           const ModelParallel *par, GError **error);
/* Fills p->ep (validated plan). */
void plan_ep_init (ModelPlan *p);
void plan_ep_clear (PlanEp *ep);
/* The slowest rank's expert GEMMs in the layer's forward and backward passes (no-op when
 * off). */
void plan_ep_layer_kernels (const ModelPlan *p, ModelBlockCost *layer);
/* Issues one MoE layer's collectives of `pass` (ModelEpPass) on `rank`'s MODEL_STREAM_EP,
 * in order, the first after task `after` (G_MAXUINT: none). Returns the last, `after`
 * when none (off). */
guint plan_ep_issue (ModelPlan *p, guint rank, guint pass, guint after, gint layer,
                     gint micro_batch);
/* Of `params` trainable parameters of one layer's gradients (a rank's), those the
 * data-parallel buckets reduce over dp: all but the experts' under stage 0 with ep > 1. */
double plan_ep_dense_params (const ModelPlan *p, double params);
/* After the optimizer step `after`: the all-gather over expert-dp of the `bytes` (B, the
 * rank's routed-expert weights, whole) its expert optimizer shard updated, when expert
 * states are sharded (ZeRO-1 with ep > 1 and edp > 1); nothing otherwise. */
void plan_ep_gather_params (ModelPlan *p, guint rank, guint after, double bytes);
/* The slowest EP rank's saved activations of a MoE layer: its received rows (a skewed
 * router's hot expert, capacity padding, drops, the etp gather) scale the experts' row
 * tensors of the layer graph (built at the rank's own routed copies, T·k) by
 * slowest_rows / (T·k), the inner-width ones by slowest_rows / (etp·T·k)
 * (PlanEp.row_extra); under etp > 1 the forward's transient peak grows likewise
 * (PlanEp.workspace_extra); under the all-gather dispatcher the forward's and backward's
 * transient peaks are at least its G-token buffers' (PlanEp.ag_workspace); no-op without
 * dispatched experts. */
void plan_ep_layer_memory (const ModelPlan *p, ModelBlockCost *layer);
/* Stages 0–1 with ep > 1: the all-reduce (stage 0) or reduce-scatter (stage 1) of one MoE
 * layer's expert gradients (B at the reduce dtype) over `rank`'s expert-dp group on the
 * comm stream after `ready`, at the last micro-batch (not bucketed: one per layer);
 * nothing when expert-dp is one rank or `layer` is one of deepseek's dense first layers. */
void plan_ep_reduce_grads (ModelPlan *p, guint rank, guint ready, gint layer,
                           gint micro_batch);

/* ---- tensor parallelism (plan_tp.c) ---- */
/* The checks of tp > 1 (model_tp_check; dense layers only; with SP the sequence divisible
 * by tp; the layer graph's saved tensors all of a known tp region). FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE naming the keys. */
gboolean plan_tp_validate (const ModelArch *arch, const ModelStack *stack,
                           const ModelParallel *par, GError **error);
/* Fills p->tp from the plan's arch, stack and mesh (validated). */
void plan_tp_init (ModelPlan *p);
void plan_tp_clear (PlanTp *tp);
/* The arch whose shapes one rank's kernels run: p->tp.arch, or p->arch for tp = 1. */
const ModelArch *plan_cost_arch (const ModelPlan *p);
/* One rank's saved activations of a layer under tp: the memory fields of `layer`
 * (act_saved, act_selective, act_keep_matmul, act_pointwise, act_checkpoint) from the
 * layer graph as model_tp_shard_graph shards it; no-op for tp = 1. */
void plan_tp_layer_memory (const ModelPlan *p, ModelBlockCost *layer);
/* One rank's layer kernels under SP: the point-wise kernels of the sequence region (norms,
 * residual dropouts and adds, in the forward, the backward and op-level selective's
 * recompute) run on the rank's s/t tokens (Korthikanti et al. 2022 §4.2.2: "the
 * non-tensor-parallel regions ... are parallelised along the sequence"); FLOPs and bytes of
 * those ops and of the passes ÷ tp. No-op without SP. */
void plan_tp_layer_kernels (const ModelPlan *p, ModelBlockCost *layer);
/* Issues the tp collectives of `block` in `pass` (ModelTpPass) for one micro-batch on
 * `rank`'s MODEL_STREAM_TP, in order, the first after task `after` (G_MAXUINT: none): all
 * of them (only < 0), or only those Megatron runs beside a GEMM (only = 1) or on the
 * critical path (only = 0; ModelTpComm.overlapped). Returns the last task, `after` when
 * none was issued (tp = 1). */
guint plan_tp_issue (ModelPlan *p, guint rank, PlanTpBlock block, guint pass, gint only,
                     guint after, gint layer, gint micro_batch);
/* Where against a block's compute task a part of its tp collectives runs (plan_tp_overlap.c). */
typedef enum
{
  PLAN_TP_PART_BEFORE, /* on the critical path before the task (which waits for them) */
  PLAN_TP_PART_BESIDE, /* beside the task, from its predecessor on */
  PLAN_TP_PART_AFTER,  /* after the task (the next compute task waits for them) */
} PlanTpPart;
/* Issues the part `part` of the tp collectives of `block` in `pass` (ModelTpPass) for one
 * micro-batch on `rank`'s MODEL_STREAM_TP, in order, the first after task `after`
 * (G_MAXUINT: none), as [parallel] tp_comm_overlap places them (models/parallel/parallel.h;
 * chunked under PIPELINED, userbuffers SM counts under BULK and PIPELINED). Under NONE the
 * forward's collectives are all AFTER, the backward's BEFORE or (ModelTpComm.overlapped)
 * BESIDE, exactly as plan_tp_issue with only = -1, 0, 1. Returns the last task, `after`
 * when none was issued. */
guint plan_tp_overlap_issue (ModelPlan *p, guint rank, PlanTpBlock block, guint pass,
                             PlanTpPart part, guint after, gint layer, gint micro_batch);
/* Which of a layer's saved tensors a list holds: all the eager forward saves
 * (model_cost_layer_saved_tensors), those selective recompute keeps (the graph's
 * MODEL_GRAPH_KEEP_NON_SELECTIVE) or re-creates (model_graph_recreated), those op-level
 * selective keeps (MODEL_GRAPH_KEEP_MATMUL) or re-creates by rerunning the point-wise ops
 * (model_graph_recreated of MODEL_GRAPH_KEEP_MATMUL_SAVED). */
typedef enum
{
  PLAN_SAVED_ALL,
  PLAN_SAVED_SELECTIVE_KEPT,
  PLAN_SAVED_SELECTIVE_RECREATED,
  PLAN_SAVED_MATMUL_KEPT,
  PLAN_SAVED_POINTWISE_RECREATED,
} PlanSavedSet;

/* The saved tensors (B each) of one rank's layer in set `which`, as
 * model_cost_layer_saved_tensors. */
guint plan_tp_saved_tensors (const ModelPlan *p, PlanSavedSet which, double *sizes, guint max);
/* The full-sequence layer op graph as one tp rank holds it (model_tp_shard_graph; at tp 1 an
 * unsharded copy); owned by the caller; NULL + error when it cannot be sharded (heads,
 * sequence). plan_cp.c shards it further over cp. */
/* The fractions of the whole model's trainable parameters (elements; `trainable` FALSE:
 * stored weight bytes) that one rank holds of the decoder layers [from_layer, to_layer)
 * plus the embedding (embed) and head (head) roots: of tensors not of routed experts
 * (*dense) and of routed experts' (*expert, n_experts/ep per rank); *expert 0 and *dense
 * both under ep = 1. A pipeline stage's share (plan_pp.c). */
void plan_tp_stage_fractions (const ModelPlan *p, guint64 from_layer, guint64 to_layer,
                              gboolean embed, gboolean head, gboolean trainable,
                              double *dense, double *expert);
ModelGraph *plan_tp_layer_graph (const ModelArch *arch, const ModelStack *s,
                                 const ModelParallel *par, GError **error);
/* The saved tensors' sizes in set `which` (B, graph order, at most `max` written to `sizes`)
 * of a (sharded) layer graph `sg` under the stack's compile setting; returns how many were
 * written. */
guint plan_graph_saved_tensors (const ModelPlan *p, const ModelGraph *sg, PlanSavedSet which,
                                double *sizes, guint max);

/* ---- pipeline parallelism (plan_pp.c) ---- */
/* The checks of pp > 1: the stage partition and the schedule (pipeline_schedule.h's
 * errors, naming [parallel] pp / virtual_stages / layers_per_stage / pipeline_layout /
 * pipeline_schedule and [training] grad_accum), DeepSpeed's refusal of ZeRO-2/3 with a
 * pipeline, and what is not modelled with one (offload, optimizer in the backward, √L
 * checkpointing, experts). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE. */
gboolean plan_pp_validate (const ModelArch *arch, const ModelStack *stack,
                           const ModelParallel *par, GError **error);
/* Fills p->pp's partition, schedule and P2P size (validated plan; no-op for pp = 1). */
void plan_pp_init (ModelPlan *p);
/* Fills p->pp's per-stage shares of the model states (what one rank of each stage holds:
 * plan_tp_stage_fractions over its layers, MTP depths, embedding and head). */
void plan_pp_fractions (ModelPlan *p);
void plan_pp_clear (PlanPp *pp);
/* The fraction of a rank's bytes of category `c` at rest (p->initial[c]: its whole-model
 * share, tp-local and sharded) that `rank`'s pipeline stage holds: 1 without pp (in
 * plan_state.c, read by plan_step.c). Weights and quantization constants
 * follow the stored weights, the other categories the trainable parameters; a state's
 * dense and routed-expert parts each sharded as plan_state_shard_fraction says. */
double plan_pp_state_fraction (const ModelPlan *p, guint rank, ModelMemCategory c);
/* Its largest value over the pipeline ranks (1 without pp). */
double plan_pp_state_fraction_max (const ModelPlan *p, ModelMemCategory c);
/* The pipeline rank (stage 0 … pp − 1, the mesh's pp coordinate) of global `rank`
 * (in plan_state.c). */
guint plan_pp_rank_of (const ModelPlan *p, guint rank);
/* The trainable parameters (elements) `rank` holds, tp-local and unsharded: those not of
 * routed experts (*dense) and those of routed experts (*expert); its pipeline stage's
 * under pp. */
void plan_pp_stage_params (const ModelPlan *p, guint rank, double *dense, double *expert);
/* `rank`'s step under pp > 1: the schedule's ops of its pipeline rank in order (forward and
 * backward of one model chunk and micro-batch each, plan_step.c), with the P2P receives
 * before and sends after them, then its stage's optimizer step after the flush. */
void plan_pp_step_rank (ModelPlan *p, guint rank, const PlanCosts *pc);

/* ---- context parallelism (plan_cp.c) ---- */
/* The checks of cp > 1 (model_cp_check; dense layers; FlashAttention). FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE naming the keys and numbers. */
gboolean plan_cp_validate (const ModelArch *arch, const ModelStack *stack,
                           const ModelParallel *par, GError **error);
/* Fills p->cp (validated plan). */
void plan_cp_init (ModelPlan *p);
void plan_cp_clear (PlanCp *cp);
/* The multiple of seq_len context parallelism needs under `par` (model_cp_seq_multiple of
 * the parameters plan_cp_validate checks). */
guint64 plan_cp_seq_multiple (const ModelArch *arch, const ModelStack *stack,
                              const ModelParallel *par);

/* Tokens of one micro-batch's sequence a rank computes: seq_len / cp. */
guint64 plan_cp_seq_len (const ModelPlan *p);
/* One cp rank's layer: its attention kernel replaced by the rank's attention steps
 * (model_cp_attention_steps), its saved activations those of the layer graph sharded by
 * model_cp_shard_graph (after model_tp_shard_graph under tp), the attention's transient
 * buffers added to the passes' workspace. `layer` is model_cost_layer at seq_len / cp;
 * no-op for cp = 1. */
void plan_cp_layer (const ModelPlan *p, ModelBlockCost *layer);
/* The saved tensors (B each) of one cp rank's layer in set `which`. */
guint plan_cp_saved_tensors (const ModelPlan *p, PlanSavedSet which, double *sizes, guint max);
/* Issues the cp collectives of one layer in `pass` (ModelCpPass) of `when` on `rank`'s
 * MODEL_STREAM_CP, in order, the first after task `after` (G_MAXUINT: none). Returns the
 * last, `after` when none (cp = 1). */
guint plan_cp_issue (ModelPlan *p, guint rank, guint pass, PlanCpWhen when, guint after,
                     gint layer, gint micro_batch);
/* After layer task `task` in `pass` (ModelCpPass) on `rank`: the ring's P2P sends beside it
 * from `start` (the compute task before it: TE posts step i+1's K/V as step i begins), then
 * the critical-path collectives after the attention (Ulysses's output all-to-all) after
 * the task; `*wait` (the task the next compute task waits for) becomes the last issued,
 * unchanged when none (cp = 1). */
void plan_cp_after (ModelPlan *p, guint rank, guint pass, guint start, guint task, gint layer,
                    gint micro_batch, guint *wait);
