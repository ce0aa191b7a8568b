/* models/memory/ledger.h — per-rank memory ledger of live buffers by category (DESIGN §4).
 *
 * Every change is a signed delta in bytes at a simulated time; the ledger keeps the current
 * bytes per category and in total (allocated, PyTorch's term), the peak total, the time and
 * task at the peak and the category mix at that moment. The peak is the first moment the
 * maximum is reached. If a recorder is given, every change is written as change points of
 * the series "rank<r>/memory/<category>" (B) and "rank<r>/allocated" (B).
 * Buffers are tracked individually by handle (a table per rank indexed by handle: a rank's
 * handles are meant to be one run of ids, as a plan's are; its table takes 8 B per handle
 * between the least and the largest it saw, up to twice that), so a free releases exactly
 * what its allocation took.
 *
 * Each rank owns an allocator model (models/memory/allocator.h): every buffer is one or more
 * tensors, each a block of PyTorch's caching allocator, so the ledger also knows reserved
 * bytes (series "rank<r>/reserved", B; never above the capacity: after an OOM the step as
 * planned goes on, its demand shows in the allocated and category series) and whether a
 * request ran out of memory. Without
 * model_ledger_set_allocator() the capacity is unlimited (never an OOM) and segments are
 * not expandable. The first OOM of a rank is remembered with its time, the task that
 * asked, the bytes asked for, the category mix then and the largest live buffers with the
 * labels of the tasks that allocated them (ordered by bytes, then handle: deterministic).
 * Invariant: no category ever goes below zero.
 */
#pragma once

#include <glib.h>
#include "models/memory/allocator.h"
#include "sim/recorder.h"

typedef enum
{
  MODEL_MEM_WEIGHTS,
  MODEL_MEM_MASTER_WEIGHTS,
  MODEL_MEM_GRADIENTS,
  MODEL_MEM_OPTIMIZER_STATE,
  MODEL_MEM_ACTIVATIONS,      /* saved for backward (incl. checkpoints and recomputed) */
  MODEL_MEM_WORKSPACE,        /* transient inside one task */
  MODEL_MEM_COMM_BUFFERS,
  MODEL_MEM_OFFLOAD_STAGING,
  MODEL_MEM_LORA,
  MODEL_MEM_QUANTIZATION,
  MODEL_N_MEM
} ModelMemCategory;

/* "weights", "master_weights", "gradients", "optimizer_state", "activations", "workspace",
 * "comm_buffers", "offload_staging", "lora", "quantization". */
const char *model_ledger_category_name (ModelMemCategory category);

typedef struct _ModelLedger ModelLedger;

/* A ledger for ranks 0..n_ranks-1; `rec` (borrowed, may be NULL) receives the series. */
ModelLedger *model_ledger_new (guint n_ranks, SimRecorder *rec);
/* As model_ledger_new(), its ledger r naming its series "rank<names[r]>/…" (`names`: n_ranks
 * rank numbers, borrowed, read here only; NULL: r): a ledger of rank classes' representatives
 * (models/plan/rank_classes.h) keeps their cluster ranks' names. */
ModelLedger *model_ledger_new_named (guint n_ranks, const guint *names, SimRecorder *rec);
void model_ledger_free (ModelLedger *ledger); /* NULL is a no-op */

/* `bytes` as memory holds them: a whole number. A value within a relative 1e-12 of an
 * integer is that integer (the float error of a rank's share × a total: 28971122687.999996);
 * any other is rounded up, as a shard of n bytes over k ranks that k does not divide holds
 * ceil(n/k): PyTorch's FSDP pads its flat parameter to a multiple of the world size
 * (FlatParamHandle, flat_param.py: the padded unsharded numel) and DeepSpeed pads the ZeRO
 * partitions to equal sizes (stage_1_and_2.py, partition_parameters.py). The ledger's sizes
 * and the plan's state and load byte counts go through it, so /summary's bytes are whole. */
double model_ledger_whole_bytes (double bytes);

/* The CUDA stream a buffer is allocated on, as far as the caching allocator's pools go
 * (models/memory/allocator.h "streams": a freed block serves only its own stream's later
 * requests). The compute stream is the default; the others are the side streams on which
 * a framework allocates (models/plan/plan_pools.c says which buffers, from its source). */
typedef enum
{
  MODEL_ALLOC_STREAM_COMPUTE,        /* the current stream of the forward, backward and step */
  MODEL_ALLOC_STREAM_ALL_GATHER,     /* PyTorch FSDP's all-gather (copy-in / unshard) stream */
  MODEL_ALLOC_STREAM_REDUCE_SCATTER, /* PyTorch FSDP's reduce-scatter (post-backward) stream */
  MODEL_N_ALLOC_STREAMS
} ModelAllocStream;
G_STATIC_ASSERT (MODEL_N_ALLOC_STREAMS <= MODEL_ALLOCATOR_N_STREAMS);

/* Allocates buffer `handle` (> 0, not live on this rank) of `bytes` (> 0) in `category` on
 * `rank` at `time` (s); `task_label` (borrowed, may be NULL) names the task causing it,
 * remembered at the peak. */
void model_ledger_alloc (ModelLedger *ledger, guint rank, ModelMemCategory category,
                         double bytes, guint handle, double time, const char *task_label);

/* As model_ledger_alloc(), for a buffer made of `n_tensors` (≥ 1) tensors of `sizes[i]`
 * bytes each (> 0; each made whole by model_ledger_whole_bytes, the buffer's bytes are their
 * sum), allocated on `stream` (model_ledger_alloc: the compute stream): each tensor is one
 * allocator block of that stream. `sizes` is borrowed. */
void model_ledger_alloc_tensors (ModelLedger *ledger, guint rank, ModelMemCategory category,
                                 const double *sizes, guint n_tensors, ModelAllocStream stream,
                                 guint handle, double time, const char *task_label);

/* Configures every rank's allocator: `capacity` bytes available to it (GPU memory minus
 * the CUDA context; INFINITY for none) and expandable_segments. Only before the first
 * allocation (g_return_if_fail). */
void model_ledger_set_allocator (ModelLedger *ledger, double capacity,
                                 gboolean expandable_segments);

/* Process lifetime across steps of different shapes: releases every buffer still live in
 * `from` (its allocators then hold only cached, free segments, as after the step's tensors
 * and the model states were freed) and moves those allocators into `to`, dropping the ones
 * `to` had; `from` keeps fresh empty allocators. `to` must not have allocated yet
 * (g_return_if_fail) and both must have the same ranks. `to` also takes the capacity. The
 * allocators' reserved high-water marks move with them, so model_ledger_peak_reserved() of
 * `to` is the highest reserved over both (torch.cuda.max_memory_reserved() of the process). */
void model_ledger_inherit_allocators (ModelLedger *to, ModelLedger *from);

/* The next step of the same process (torch.cuda.reset_peak_memory_stats() between the
 * two): on every rank moves the allocator of `from` into `to` with the live buffers of
 * `from` named keep_from[r * n_keep + i] (0 or not live: skipped), which `to` holds under
 * the handle keep_to[r * n_keep + i] (0: not kept) in the same blocks — model states that
 * outlive a step, such as optimizer states created by the first step, stay where they
 * were placed — and releases every other buffer of `from` into the cache first. `to`
 * starts with the kept buffers allocated (its peak, category peaks and series at time 0
 * are theirs; the peak task reads "carried over") and its reserved high-water mark at the
 * reserved bytes it inherits, so its figures are the new step's own; `from` keeps its
 * figures (peak, OOM record, peak_reserved) and gets fresh empty allocators. `to` must not
 * have allocated yet and both must have the same ranks (g_return_if_fail); `to` takes the
 * capacity. keep_* are borrowed arrays of n_ranks × n_keep handles (may be NULL when
 * n_keep is 0). */
void model_ledger_continue (ModelLedger *to, ModelLedger *from, const guint *keep_from,
                            const guint *keep_to, guint n_keep);

/* Whether buffer `handle` is live on `rank`. */
gboolean model_ledger_live (const ModelLedger *ledger, guint rank, guint handle);

/* Frees live buffer `handle` of `rank` at `time`. Freeing a handle that is not live is a
 * bug in the plan (g_assert). */
void model_ledger_release (ModelLedger *ledger, guint rank, guint handle, double time,
                           const char *task_label);

guint model_ledger_n_ranks (const ModelLedger *ledger);
double model_ledger_current (const ModelLedger *ledger, guint rank, ModelMemCategory category);
double model_ledger_current_total (const ModelLedger *ledger, guint rank);
/* Largest value a category ever reached on `rank` (B). */
double model_ledger_category_peak (const ModelLedger *ledger, guint rank,
                                   ModelMemCategory category);
/* Peak allocated bytes of `rank`, its time (s), the task then running (may be NULL) and the
 * bytes of `category` at that moment. */
double model_ledger_peak (const ModelLedger *ledger, guint rank);
double model_ledger_peak_time (const ModelLedger *ledger, guint rank);
const char *model_ledger_peak_task (const ModelLedger *ledger, guint rank);
double model_ledger_peak_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category);

/* Reserved bytes of `rank` now and at their highest (the allocator's segments; the peak is
 * never below the peak allocated, even when a request beyond any GPU was booked smaller). */
double model_ledger_current_reserved (const ModelLedger *ledger, guint rank);
double model_ledger_peak_reserved (const ModelLedger *ledger, guint rank);

/* One live buffer holding memory at the first OOM. */
typedef struct
{
  const char *task;          /* label of the task that allocated it (owned by the ledger) */
  ModelMemCategory category;
  double bytes;
} ModelLedgerHolder;

/* Whether `rank` ran out of memory; if so, when (s), in which task (may be NULL), the
 * request that failed (bytes and category: for a buffer of several tensors, the tensor that
 * did not fit, not the whole buffer), the reserved bytes just before it and their highest
 * value until then (what torch.cuda.max_memory_reserved() reads when the OOM is raised;
 * never above the capacity), the highest allocated bytes until then (max_memory_allocated()
 * then, the granted tensors of the failing buffer included), the allocated bytes of each category then and the largest live
 * buffers then (at most MODEL_LEDGER_MAX_HOLDERS, largest first). The tensors of the failing
 * buffer granted before the one that failed are live: counted in the mix and listed as a
 * holder with their bytes. */
#define MODEL_LEDGER_MAX_HOLDERS 8
gboolean model_ledger_oom (const ModelLedger *ledger, guint rank);
double model_ledger_oom_time (const ModelLedger *ledger, guint rank);
const char *model_ledger_oom_task (const ModelLedger *ledger, guint rank);
double model_ledger_oom_requested (const ModelLedger *ledger, guint rank);
double model_ledger_oom_reserved (const ModelLedger *ledger, guint rank);
double model_ledger_oom_peak_reserved (const ModelLedger *ledger, guint rank);
double model_ledger_oom_peak_allocated (const ModelLedger *ledger, guint rank);
ModelMemCategory model_ledger_oom_category (const ModelLedger *ledger, guint rank);
double model_ledger_oom_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category);
guint model_ledger_oom_n_holders (const ModelLedger *ledger, guint rank);
const ModelLedgerHolder *model_ledger_oom_holder (const ModelLedger *ledger, guint rank, guint i);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelLedger, model_ledger_free)
