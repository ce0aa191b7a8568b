/* models/plan/plan.h — the per-step plan: a task graph per rank with memory effects.
 *
 * A plan expands one optimizer step of `arch` under `stack` into tasks: for every
 * micro-batch the embedding, each layer's forward, the head (final norm, LM head, loss),
 * then the head's and every layer's backward in reverse (preceded, under full activation
 * checkpointing, by the layer's recomputed forward), the embedding's backward; finally the
 * optimizer step (Narayanan et al. 2021 §2 for the schedule of one data-parallel replica).
 * Data parallelism (models/parallel/parallel.h) adds collective tasks on each rank's comm stream:
 * DDP gradient buckets all-reduced as soon as their gradients exist (Li et al. 2020,
 * "PyTorch Distributed", VLDB, §3.2.3), overlapping the backward; under stage 2–3 a
 * reduce-scatter per layer; under stage 3 an all-gather of each layer's parameters before
 * its forward and again before its backward, `prefetch` layers ahead; under stages 1–2 an
 * all-gather of the updated parameters after the optimizer step.
 *
 * Tasks refer to each other by integer id (DESIGN §6); a task runs after every task listed
 * in its dependencies and after the previous task of its own (rank, stream) queue, which is
 * the order of creation (CUDA stream semantics). Each task is a sequence of kernels (ops,
 * from models/ops/cost.h) run back to back, and a list of memory effects applied to the rank's
 * ledger at its start or end. Persistent state (weights, master weights, optimizer states)
 * is allocated at time 0 by the plan's initial effects.
 *
 * Memory timeline (PyTorch semantics): gradients are allocated by the first backward that
 * produces them (micro-batch 0) and freed by the optimizer step (zero_grad(set_to_none));
 * activations saved for backward live from their forward's start to their backward's end;
 * workspace lives inside one task.
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"
#include "models/arch/arch.h"
#include "models/ops/cost.h"
#include "hardware/collective.h"
#include "hardware/rank_shift.h"
#include "models/memory/ledger.h"
#include "models/parallel/parallel.h"
#include "models/stack/stack.h"

typedef enum
{
  MODEL_TASK_KIND_FORWARD,
  MODEL_TASK_KIND_BACKWARD,
  MODEL_TASK_KIND_RECOMPUTE,
  MODEL_TASK_KIND_OPTIMIZER,
  MODEL_TASK_KIND_COLLECTIVE,
  MODEL_TASK_KIND_OFFLOAD,
  MODEL_N_TASK_KINDS
} ModelTaskKind;

typedef enum
{
  MODEL_STREAM_COMPUTE,
  MODEL_STREAM_COMM,
  MODEL_STREAM_H2D,
  MODEL_STREAM_D2H,
  MODEL_STREAM_CPU,        /* host CPU optimizer steps (models/plan/plan_offload.h) */
  MODEL_STREAM_NVME_READ,  /* NVMe swap-in (ZeRO-Infinity) */
  MODEL_STREAM_NVME_WRITE, /* NVMe swap-out */
  MODEL_STREAM_TP,         /* tensor-parallel collectives (models/plan/plan_tp.c) */
  MODEL_STREAM_CP,         /* context-parallel P2P and collectives (models/plan/plan_cp.c) */
  /* Pipeline-parallel P2P (models/plan/plan_pp.c), one stream per directed channel so that
   * each carries one FIFO sequence of transfers: activations sent to / received from the
   * next / previous stage, output gradients sent to / received from the previous / next. */
  MODEL_STREAM_PP_FWD_SEND,
  MODEL_STREAM_PP_FWD_RECV,
  MODEL_STREAM_PP_BWD_SEND,
  MODEL_STREAM_PP_BWD_RECV,
  MODEL_STREAM_EP,         /* expert-parallel token dispatch/combine (models/plan/plan_ep.c) */
  MODEL_N_STREAMS
} ModelStream;

typedef enum
{
  MODEL_EFFECT_AT_START,
  MODEL_EFFECT_AT_END,
} ModelEffectWhen;

/* One allocation or free. Every allocation has a handle (unique in the plan, > 0); a free
 * names the handle it releases and carries minus its bytes, so the ledger and the
 * allocator model see individual buffers. 32 bytes (the two enums side by side, `where` and
 * `stream` in 16 bits each: 40 with a hole each before `bytes` and at the end; a plan holds
 * two per allocation, and a one-shot `stepsim run` of the 8-GPU bench took 58 page faults
 * fewer). */
typedef struct
{
  ModelMemCategory category;
  ModelEffectWhen when;
  double bytes; /* > 0 allocates `handle`, < 0 frees it */
  guint handle;
  guint first_tensor; /* allocations: the tensors making up the buffer, each one allocator */
  guint n_tensors;    /* block (model_plan_tensor_sizes); 0: a single block of `bytes` */
  guint16 where;      /* ModelMemPlace: GPU (the rank's ledger), or its node's host DRAM or
                       * NVMe */
  guint16 stream;     /* ModelAllocStream (ledger.h): the CUDA stream a GPU allocation is
                       * made on, whose caching-allocator pool serves it (compute: 0) */
} ModelMemEffect;
G_STATIC_ASSERT (sizeof (ModelMemEffect) == 32);

/* One kernel of a task; dtype is the tensor dtype its FLOPs run at. */
typedef struct
{
  ModelOp op;
  HwDtype dtype;
} ModelKernel;

typedef struct
{
  guint id;
  guint rank;
  ModelStream stream;
  ModelTaskKind kind;
  const char *label;  /* owned by the plan */
  gint layer;         /* transformer layer index, -1 for embedding/head/optimizer */
  gint micro_batch;   /* -1 for per-step tasks */
  guint first_kernel, n_kernels;
  guint first_dep, n_deps;
  guint first_effect, n_effects;
  double flops;       /* Σ kernel FLOPs */
  double bytes;       /* Σ kernel HBM bytes, or the collective's bytes */
  gint collective;    /* index of the collective this task takes part in, or -1 */
  ModelOffloadOp offload; /* an offload transfer or host step (models/plan/plan_offload.h), or NONE */
  double amount;      /* offload tasks: B moved, or parameters a host step updates */
  gboolean host_sync; /* the host waits, before issuing this task, until every earlier task
                       * of its rank (plan order) has ended: a `.item()` or a Python `if` on
                       * a GPU tensor (models/plan/executor.c) */
} ModelTask;

/* One collective instance: every rank in `ranks` has one task referring to it, and it
 * starts when all of them are ready (NCCL semantics: a collective completes on no rank
 * before every rank has launched it). */
typedef struct
{
  HwCollectiveKind kind;
  HwCollectiveAlgorithm algorithm;
  double bytes;        /* nccl-tests size convention (hardware/collective.h) */
  const guint *ranks;  /* owned by the plan */
  guint n_ranks;
  guint dims;          /* the mesh group's dimensions (MODEL_MESH_BIT set, mesh.h) whose
                        * members these are, in model_mesh_group's order; for a two-rank
                        * pipeline instance (P2P, tied embeddings) the pp bit: two members
                        * of one pp group, each its rank's peer at a given stage; an expert
                        * group (models/parallel/mesh.h model_mesh_expert_group):
                        * MODEL_COLLECTIVE_EXPERT (its ModelMeshExpertDim) */
  double ub_sms;       /* > 0: SMs its kernels hold per GPU (Transformer Engine userbuffers,
                        * models/plan/plan_tp_overlap.c); 0: the GPU's NCCL comm_sm_fraction */
} ModelCollective;

/* ModelCollective.dims of an expert group along ModelMeshExpertDim `dim`: a bit above every
 * mesh dimension's, so no mesh group's dims equal it. */
#define MODEL_COLLECTIVE_EXPERT_BIT (1u << 31)
#define MODEL_COLLECTIVE_EXPERT(dim) (MODEL_COLLECTIVE_EXPERT_BIT | (guint) (dim))
G_STATIC_ASSERT (MODEL_MESH_N_DIMS < 31);

typedef struct _ModelPlan ModelPlan;

/* Builds the plan of one step on par->degree data-parallel ranks (`par` NULL: one rank).
 * `arch`, `stack` and `par` are copied. NULL + error (G_KEY_FILE_ERROR_INVALID_VALUE) if
 * the stack or the parallel configuration is inconsistent with the arch. */
/* The checks model_plan_new() makes of its inputs: the architecture, the stack (sizes,
 * positions, dropout, LoRA/QLoRA combinations), the data-parallel and offload settings, and
 * their combination (√L checkpointing under re-gathered stage-3 parameters is not
 * modelled). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE; stack errors read "group [G], key 'K':
 * …" with the other side of a conflict as "[G] K", so a scenario loader reports them as
 * they are. */
gboolean model_plan_validate (const ModelArch *arch, const ModelStack *stack,
                              const ModelParallel *par, GError **error);

/* The least multiple of [training] seq_len (tokens) the parallelism of `par` (NULL: none)
 * needs for `arch`: the least common multiple of the rules model_plan_validate checks
 * (tensor_parallel.h model_tp_seq_multiple under sequence parallelism, context_parallel.h
 * model_cp_seq_multiple, expert_parallel.h model_ep_seq_multiple for a mixture of
 * experts, loss_chunks × cp under torchtitan's chunked_head loss); 1 when nothing
 * constrains it. A valid seq_len is a multiple of it. `stack`
 * gives only what the rules read besides `par` (not its seq_len). */
/* Whether FSDP's embedding and head are units of their own (ModelFramework.fsdp_end_units),
 * or why not: the framework does not ask (OFF), the data-parallel mode gathers no unit
 * around its use (DDP, ZeRO, NO_SHARD, and SHARD_GRAD_OP, whose parameters stepsim keeps
 * gathered as ZeRO-2's: NO_FSDP), one matrix is both (a tied model: TIED), or MTP depths
 * share the head (Megatron's, not FSDP's: MTP). The plan applies it where parameters are
 * gathered at all (a shard group of > 1 ranks, or parameter offload). */
typedef enum
{
  MODEL_END_UNITS_ON,
  MODEL_END_UNITS_OFF,
  MODEL_END_UNITS_NO_FSDP,
  MODEL_END_UNITS_TIED,
  MODEL_END_UNITS_MTP,
} ModelEndUnits;
ModelEndUnits model_plan_end_units (const ModelArch *arch, const ModelStack *stack,
                                    const ModelParallel *par);

guint64 model_plan_seq_len_multiple (const ModelArch *arch, const ModelStack *stack,
                                     const ModelParallel *par);

ModelPlan *model_plan_new (const ModelArch *arch, const ModelStack *stack,
                           const ModelParallel *par, GError **error);
/* As model_plan_new(), with `paged_spill` B (>= 0) of each rank's optimizer states paged
 * out to host DRAM and migrated around the optimizer step (models/plan/plan_paged.h); more than
 * the rank's states is clamped to them. A spill > 0 needs a paged optimizer (API misuse:
 * NULL). */
ModelPlan *model_plan_new_paged (const ModelArch *arch, const ModelStack *stack,
                                 const ModelParallel *par, double paged_spill, GError **error);
/* As model_plan_new_paged(), with the tasks of the representatives of `built` only
 * (hardware/rank_shift.h; its n the rank count; NULL: every rank): the plan of a run whose rank classes
 * (rank_classes.h) are the orbits of that shift, each rank standing for its class's
 * representative. Collective instances keep their whole member lists; per-rank queries
 * (initial handles, creation tasks, state bytes, offload amounts) of any rank answer for
 * its representative. The identity builds every rank; otherwise the shift must keep every
 * rank in its pipeline stage (model_mesh_shift_keeps_stages: under the default order its
 * blocks divide a stage's rank count / pp), the plans depending on the rank only
 * through its stage and its collective groups (rank_classes.h). API misuse: NULL.
 * More than MODEL_PLAN_MAX_TASKS tasks: NULL + G_KEY_FILE_ERROR_INVALID_VALUE naming
 * [parallel] pp (pipeline stages) or [run] rank_classes. The other constructors build every
 * rank, under the same bound. */
/* The most tasks one plan holds, estimated from its first rank's times the built ranks:
 * 0.6–1 KB of memory and 20–100 us of CPU a task on the 2026-12 build machine (T8, GPT
 * 1008B on 3,072 GPUs, 384 ranks built: 5.3 million tasks, 3.0 GB, 110 s; Llama-3.1-8B FSDP
 * on 51,200 GPUs, 6,400 built: 5.5 GB, 560 s, the per-rank work growing with the cluster),
 * so up to about 6 GB and ten minutes. Larger plans are refused, naming what builds so many
 * ranks. */
#define MODEL_PLAN_MAX_TASKS 6e6

ModelPlan *model_plan_new_representatives (const ModelArch *arch, const ModelStack *stack,
                                           const ModelParallel *par, double paged_spill,
                                           const HwRankShift *built, GError **error);
void model_plan_free (ModelPlan *plan); /* NULL is a no-op */
/* Whether plans built from now on reuse what the same plan derived before (on by default):
 * a pass whose ops are bit for bit those of a pass added before from the same address gets
 * that pass's kernel range without the range's hash and lookup; a redistribution of the
 * same setup, state, phases and bytes gets the same collectives without deriving them; and
 * micro-batches 2 … GA − 2 of a rank are copied from micro-batch 1 where it is a template
 * (plan_step.c). Off, everything is derived anew; the plans are the same either way
 * (tests/unit/cli/test_plan_memo). Process-wide, for tests: not to be changed while another
 * thread builds a plan. */
void model_plan_set_memo (gboolean on);
/* Micro-batches of the plan's built ranks that were built as copies of an earlier one
 * (plan_step.c: micro-batches 2 … GA − 2 of micro-batch 1, with the memos on); 0 when every
 * micro-batch was derived. For tests and reports. */
guint model_plan_n_copied_micro_batches (const ModelPlan *plan);

const ModelArch *model_plan_arch (const ModelPlan *plan);
const ModelStack *model_plan_stack (const ModelPlan *plan);
const ModelParallel *model_plan_parallel (const ModelPlan *plan);
guint model_plan_n_collectives (const ModelPlan *plan);
const ModelCollective *model_plan_collective (const ModelPlan *plan, guint index);
guint model_plan_n_ranks (const ModelPlan *plan);
/* Ranks whose tasks the plan holds (model_plan_new_representatives); the rank count for
 * model_plan_new() and model_plan_new_paged(). */
guint model_plan_n_built (const ModelPlan *plan);
/* The shift whose representatives the plan holds (borrowed; the identity: every rank). */
const HwRankShift *model_plan_built (const ModelPlan *plan);
guint model_plan_n_tasks (const ModelPlan *plan);
const ModelTask *model_plan_task (const ModelPlan *plan, guint id);
const ModelKernel *model_plan_kernel (const ModelPlan *plan, guint index);
/* Whether two kernels are the same (op, dtype, shape; field by field). Tasks whose kernel
 * sequences are equal may share one range of the plan's kernels (the same first_kernel). */
gboolean model_kernel_equal (const ModelKernel *a, const ModelKernel *b);
guint model_plan_dep (const ModelPlan *plan, guint index);
const ModelMemEffect *model_plan_effect (const ModelPlan *plan, guint index);

/* Bytes allocated at time 0 on every rank for `category` (weights, master weights,
 * optimizer state), and the handle of that allocation on `rank` (0 when none). */
double model_plan_initial_bytes (const ModelPlan *plan, ModelMemCategory category);
guint model_plan_initial_handle (const ModelPlan *plan, guint rank, ModelMemCategory category);

/* The task whose start creates the initial allocation of `category` on `rank` in the
 * process's first step, or G_MAXUINT when it exists from the load (and in every later
 * step from the step's start). PyTorch optimizers create their states lazily, at the first
 * optimizer.step(), after the first backward (torch/optim/adamw.py _init_group:
 * exp_avg = torch.zeros_like(p) when the parameter's state is empty; the same in
 * torch/optim/sgd.py, transformers' Adafactor and AdamW, and bitsandbytes'
 * Optimizer8bit.init_state): their creation task is the rank's optimizer step. DeepSpeed's
 * ZeRO creates them at construction (model_plan_load_bytes), bitsandbytes' paged states
 * are CUDA managed memory outside the caching allocator, and under optimizer_in_backward
 * each parameter's hook creates its own during the first backward: those three are
 * modelled as present from the load (G_MAXUINT), as are gradients kept across steps
 * (zero_grad(set_to_none=False), stage 2's), though autograd makes them in the first
 * backward. */
guint model_plan_creation_task (const ModelPlan *plan, guint rank, ModelMemCategory category);

/* The allocation of `handle` (category, bytes, tensors). */
const ModelMemEffect *model_plan_allocation (const ModelPlan *plan, guint handle);
/* Sizes (B) of tensors first_tensor … of an allocation, borrowed. */
const double *model_plan_tensor_sizes (const ModelPlan *plan, guint first_tensor);

/* Model-state bytes a rank keeps through the step (weights or their shard, master weights,
 * optimizer states, and gradients or their shard as they stand at the optimizer step): the
 * quantity of the ZeRO paper's Figure 1, summed from the plan's own allocations. */
double model_plan_state_bytes (const ModelPlan *plan, guint rank);

/* B allocated on every rank's GPU right after model load and initialisation, before the
 * first forward (torch.cuda.memory_allocated() then): the weights (or their stage-3 shard),
 * LoRA adapters and QLoRA's quantization constants, master weights, DDP's gradient buckets (the
 * Reducer allocates them when it wraps the model: Li et al. 2020 §3.2.3) and, under
 * DeepSpeed's ZeRO (zero1/2/3), the optimizer states, which its optimizer wrapper creates
 * at construction (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
 * initialize_optimizer_states: a step on zero gradients). PyTorch optimizers (DDP, FSDP,
 * one GPU) create their states lazily at the first step; gradients appear in the first
 * backward, and with them ZeRO-1/2's reduce bucket (stage 3's comes with its optimizer).
 * What is offloaded or paged out is not on the GPU. */
double model_plan_load_bytes (const ModelPlan *plan);

/* B allocated at the peak of model loading on a rank: model_plan_load_bytes() plus the
 * largest transient of the load, which the steady-state step never sees. QLoRA: the 16-bit
 * copy of the largest base matrix while bitsandbytes quantizes it on the GPU and, under an
 * autocast precision, the 16-bit original of the largest non-quantized tensor while PEFT's
 * prepare_model_for_kbit_training casts it to fp32 (models/plan/plan_state.c cites both).
 * Other stacks load tensor by tensor into their final dtype: no transient, the load
 * bytes. */
double model_plan_load_peak_bytes (const ModelPlan *plan);

/* FLOPs of one step on one rank: model FLOPs (3 × forward, no recompute; the MFU
 * numerator, Korthikanti et al. 2022 §6: the whole model's FLOPs of a data-parallel
 * replica / tp, so × ranks / (ranks · peak) is Korthikanti's MFU) and hardware FLOPs (the
 * rank's kernels, counting recompute: HFU). */
double model_plan_model_flops (const ModelPlan *plan);
double model_plan_hardware_flops (const ModelPlan *plan);
/* A rank's share of the tokens processed per step: micro_batch × seq_len × grad_accum /
 * (tp·cp·pp) (the tp, cp and pp ranks of a data-parallel replica run the same tokens), so
 * × ranks = the step's tokens. */
double model_plan_tokens_per_rank (const ModelPlan *plan);

/* Pipeline stages (pp, 1 without pipeline parallelism) and the pipeline rank (0 .. pp−1,
 * the mesh's pp coordinate, model_mesh_stage_of) of global rank `rank`. */
guint model_plan_pp_degree (const ModelPlan *plan);
guint model_plan_pp_rank (const ModelPlan *plan, guint rank);
/* The device mesh the plan's ranks are laid out on (borrowed, the plan's). */
const ModelMesh *model_plan_mesh (const ModelPlan *plan);

/* Expert parallelism's routing load (models/parallel/expert_parallel.h model_ep_dispatch):
 * the routed token rows one MoE layer and micro-batch gives the slowest expert-parallel
 * rank (*slowest, the one holding the hottest expert), the mean rank (*mean, its local
 * experts' mean rows) and the least loaded rank (*least; may be NULL); TRUE. FALSE with all
 * 0 for a dense model, or one whose experts are not dispatched (ep = etp = 1 without a
 * capacity factor). */
gboolean model_plan_ep_load (const ModelPlan *plan, double *slowest, double *mean,
                             double *least);

const char *model_plan_task_kind_name (ModelTaskKind kind);
const char *model_plan_stream_name (ModelStream stream);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelPlan, model_plan_free)
