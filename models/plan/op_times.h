/* models/plan/op_times.h — where a replayed step's kernel time goes, per op.
 *
 * The executor (models/plan/executor.h, model_executor_set_op_times) adds every kernel it
 * runs: the rank (a replayed representative), the kind of its task (forward, backward,
 * recompute, optimizer), the op (models/ops/graph.h: its static name and class, FLOPs and
 * HBM bytes) and its seconds, from its launch on the stream (the later of the host's issue
 * and the previous kernel's end) to its end: SMs that NCCL kernels hold, HBM shared with
 * transfers and jitter are in it, as a profiler's kernel duration has them. Entries with the
 * same (rank, kind, op name) are summed. A compute task's kernels run back to back, so the
 * seconds of its kernels add up to the task's own time (model_executor_task_time).
 * Collectives and offload transfers run no kernels here (they are not in the table).
 */
#pragma once

#include <glib.h>
#include "models/ops/graph.h"
#include "models/plan/plan.h"

/* One (rank, kind, op) entry: sums over the kernels of that op the rank ran in tasks of
 * that kind. */
typedef struct
{
  guint rank;             /* the replayed rank (a class representative) */
  ModelTaskKind kind;     /* its task's kind */
  const char *op;         /* the op's name (static, models/ops/graph.h ModelOp.name) */
  ModelOpClass op_class;  /* GEMM, attention or element-wise */
  guint64 count;          /* kernels */
  double seconds;         /* s, summed over the kernels */
  double flops;           /* FLOP the kernels compute, summed (model_op_times_executed_flops;
                           * 0 for element-wise ops) */
  double bytes;           /* B of HBM traffic, summed */
  double host_ops;        /* PyTorch ops the host issued for them (model_op_host_ops), summed */
  double host_seconds;    /* s of host time issuing them took (models/plan/executor.c), summed */
} ModelOpTime;

typedef struct _ModelOpTimes ModelOpTimes;

/* FLOP a kernel of `op` computes: its FLOPs, but half for a causal fused attention kernel,
 * which skips the masked half of the s×s square that the model-FLOPs convention (and MFU)
 * counts (hardware/kernel.h); so FLOP / seconds is the kernel's achieved rate. */
double model_op_times_executed_flops (const ModelOp *op);

ModelOpTimes *model_op_times_new (void); /* empty; free with model_op_times_free */
void model_op_times_free (ModelOpTimes *t); /* NULL is a no-op */

/* Adds one kernel of `op` (borrowed; its name must be a static string) that `rank` ran in a
 * task of `kind` for `seconds` (>= 0) s, whose issue took the host `host_seconds` (>= 0) s. */
void model_op_times_add (ModelOpTimes *t, guint rank, ModelTaskKind kind, const ModelOp *op,
                         double seconds, double host_seconds);

/* The entries, in the order their first kernel ended (deterministic: the replay's event
 * order). Index i < model_op_times_n (t); the entry is borrowed, valid until the next add. */
guint model_op_times_n (const ModelOpTimes *t);
const ModelOpTime *model_op_times_get (const ModelOpTimes *t, guint i);

/* Seconds of host time issuing `rank`'s kernels took; *ops (may be NULL) gets the PyTorch
 * ops issued. A step whose host time nears its length is launch-bound. */
double model_op_times_rank_host_seconds (const ModelOpTimes *t, guint rank, double *ops);
/* Seconds `rank` spent in kernels of `op_class` (a negative op_class: in all kernels). */
double model_op_times_rank_seconds (const ModelOpTimes *t, guint rank, int op_class);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelOpTimes, model_op_times_free)
