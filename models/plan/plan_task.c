/* models/plan/plan_task.c — the primitives a plan is built with (plan-private.h): start a
 * task on a rank's stream, add its kernels, dependencies and memory effects (allocations,
 * frees, workspace), the gradients a rank keeps until its optimizer step. Every file of
 * the plan calls these; they call nothing of the plan above them. */
#include "config.h"
#include "models/plan/plan-private.h"
#include "sim/text.h"

#include <stdarg.h>
#include <string.h>

guint
plan_task_begin (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind, gint layer,
                 gint micro_batch, const char *fmt, ...)
{
  /* the label formatted on the stack, else by GLib (sim_text_vlabel) */
  char buf[256];
  g_autofree char *slow = NULL;
  va_list ap;
  va_start (ap, fmt);
  const char *label = sim_text_vlabel (buf, sizeof buf, &slow, fmt, ap);
  va_end (ap);
  gssize len = (gssize) strlen (label);
  ModelTask t = {
    .id = p->tasks->len,
    .rank = rank,
    .stream = stream,
    .kind = kind,
    .label = g_string_chunk_insert_len (p->labels, label, len),
    .layer = layer,
    .micro_batch = micro_batch,
    .first_kernel = p->kernels->len,
    .first_dep = p->deps->len,
    .first_effect = p->effects->len,
    .collective = -1,
  };
  g_array_append_val (p->tasks, t);
  if (stream == MODEL_STREAM_COMPUTE && p->compute_gate != G_MAXUINT)
    {
      plan_task_dep (p, p->compute_gate);
      p->compute_gate = G_MAXUINT;
    }
  return t.id;
}

ModelTask *
plan_current (ModelPlan *p)
{
  return &g_array_index (p->tasks, ModelTask, p->tasks->len - 1);
}

/* GEMM and attention FLOPs run at the stack's tensor dtype; element-wise kernels on the
 * CUDA cores (fp32). Under fp8 only the linear layers' GEMMs run in fp8: Transformer
 * Engine's fp8_autocast leaves attention's core in bf16 unless fp8_dpa is set (TE
 * `DelayedScaling.fp8_dpa`, default False), so eager attention's matmuls and the flash
 * kernel run at bf16. */
/* ---- shared kernel ranges -------------------------------------------------------------
 *
 * Every rank of a data-parallel job, and every layer of one rank, runs the same few kernel
 * sequences: a 512-rank 70B plan held 10^7 kernel copies (1 GB, most of the time spent
 * building it). A pass whose kernels equal a range already in the plan points its task at
 * that range instead (ranges are never modified once written: a task that adds a second
 * pass behind a shared range copies its range to the end first). */
typedef struct
{
  GArray *kernels;           /* the plan's kernels, or NULL for a probe */
  const ModelKernel *probe;  /* a probe's kernels */
  guint first, n;
  guint hash;
} KernelRun;

static const ModelKernel *
run_kernels (const KernelRun *r)
{
  return r->kernels != NULL ? &g_array_index (r->kernels, ModelKernel, r->first) : r->probe;
}

static guint
run_hash (gconstpointer key)
{
  return ((const KernelRun *) key)->hash;
}

static gboolean
run_equal (gconstpointer a, gconstpointer b)
{
  const KernelRun *x = a, *y = b;
  if (x->hash != y->hash || x->n != y->n)
    return FALSE;
  const ModelKernel *p = run_kernels (x), *q = run_kernels (y);
  for (guint i = 0; i < x->n; i++)
    if (!model_kernel_equal (&p[i], &q[i]))
      return FALSE;
  return TRUE;
}

GHashTable *
plan_kernel_runs_new (void)
{
  return g_hash_table_new_full (run_hash, run_equal, g_free, NULL);
}

/* ---- passes seen before -----------------------------------------------------------------
 *
 * A plan adds the same few passes over and over (a layer's forward, backward and recompute
 * for every layer of every micro-batch: ~1,600 tasks of the 8-GPU ZeRO-3 bench, GA 8), and
 * each derived its kernels, hashed them and looked the range up again (~2,500 instructions
 * a pass). The memo keeps, per pass address, a copy of the ops it last saw there and the
 * range they gave: a pass at that address whose ops are bit for bit the copy (with the same
 * compute dtype and attention kernel) derives the same kernels, which the lookup finds in
 * that range (a range is added only when no equal one exists, and ranges never change), so
 * it takes the range directly. A pass elsewhere or changed in place (a pass built on the
 * stack) misses and is derived. Kernels not equal to themselves (a NaN) are never memoized:
 * their lookup never finds a range. */
#define PASS_MEMO_SLOTS 8
#define PASS_MEMO_OPS 32

typedef struct
{
  const ModelPass *pass; /* NULL: empty */
  guint n_ops;
  guint first;           /* the range of the plan's kernels its ops gave */
  HwDtype tensor;        /* the compute dtype and attention kernel they were derived under */
  gint attn;
  ModelOp ops[PASS_MEMO_OPS];
} PassMemoSlot;

struct _PlanPassMemo
{
  PassMemoSlot slots[PASS_MEMO_SLOTS];
  guint next;            /* the slot the next new pass takes (round robin) */
};

static gboolean memo_off; /* model_plan_set_memo (FALSE) */

void
model_plan_set_memo (gboolean on)
{
  memo_off = !on;
}

/* Whether the memos are on (plan_comm.c reads it too). */
gboolean
plan_memo_on (void)
{
  return !memo_off;
}

void
plan_pass_memo_free (struct _PlanPassMemo *memo)
{
  g_free (memo);
}

/* The slot of p's memo holding `pass` as it is now (derived under `tensor`), or NULL. */
static const PassMemoSlot *
pass_memo_find (const ModelPlan *p, const ModelPass *pass, HwDtype tensor)
{
  if (p->pass_memo == NULL || pass->n_ops > PASS_MEMO_OPS)
    return NULL;
  for (guint i = 0; i < PASS_MEMO_SLOTS; i++)
    {
      const PassMemoSlot *m = &p->pass_memo->slots[i];
      if (m->pass == pass && m->n_ops == pass->n_ops && m->tensor == tensor
          && m->attn == (gint) p->stack.attention_kernel
          && memcmp (m->ops, pass->ops, pass->n_ops * sizeof (ModelOp)) == 0)
        return m;
    }
  return NULL;
}

/* Remembers that `pass` (its ops `ks` as derived under `tensor`) gave the range at `first`. */
static void
pass_memo_store (ModelPlan *p, const ModelPass *pass, HwDtype tensor, const ModelKernel *ks,
                 guint first)
{
  if (memo_off || pass->n_ops > PASS_MEMO_OPS)
    return;
  for (guint i = 0; i < pass->n_ops; i++)
    if (!model_kernel_equal (&ks[i], &ks[i]))
      return;
  if (p->pass_memo == NULL)
    p->pass_memo = g_new0 (struct _PlanPassMemo, 1);
  PassMemoSlot *m = NULL;
  for (guint i = 0; i < PASS_MEMO_SLOTS && m == NULL; i++)
    if (p->pass_memo->slots[i].pass == pass)
      m = &p->pass_memo->slots[i]; /* the same address, other ops: replaced */
  if (m == NULL)
    {
      m = &p->pass_memo->slots[p->pass_memo->next];
      p->pass_memo->next = (p->pass_memo->next + 1) % PASS_MEMO_SLOTS;
    }
  m->pass = pass;
  m->n_ops = pass->n_ops;
  m->first = first;
  m->tensor = tensor;
  m->attn = (gint) p->stack.attention_kernel;
  memcpy (m->ops, pass->ops, pass->n_ops * sizeof (ModelOp));
}

gboolean
model_kernel_equal (const ModelKernel *a, const ModelKernel *b)
{
  const HwKernelShape *s = &a->op.shape, *t = &b->op.shape;
  return a->dtype == b->dtype && a->op.name == b->op.name && a->op.op_class == b->op.op_class
         && a->op.flops == b->op.flops && a->op.bytes == b->op.bytes
         && a->op.bwd_factor == b->op.bwd_factor && s->cls == t->cls && s->m == t->m
         && s->n == t->n && s->k == t->k && s->batch == t->batch && s->seq == t->seq
         && s->head_dim == t->head_dim && s->causal == t->causal && s->attn == t->attn;
}

static guint
hash_double (guint h, double x)
{
  x += 0.0; /* -0 → +0 */
  return h * 1000003u ^ g_double_hash (&x);
}

static guint
kernels_hash (const ModelKernel *k, guint n)
{
  guint h = n;
  for (guint i = 0; i < n; i++)
    {
      h = h * 31u + g_direct_hash (k[i].op.name) + (guint) k[i].dtype;
      h = hash_double (hash_double (h, k[i].op.flops), k[i].op.bytes);
    }
  return h;
}

/* Attention's core (the FlashAttention kernel, or eager attention's scores and
 * probabilities × V), which stays in bf16 under fp8 (asked only then: two string
 * comparisons per op were 1 % of a single-GPU scenario). */
static gboolean
attention_core (const ModelOp *op)
{
  return op->op_class == MODEL_OP_ATTENTION || g_str_has_prefix (op->name, "attn_scores")
         || g_str_has_prefix (op->name, "attn_av");
}

/* GEMM and attention FLOPs run at the stack's tensor dtype; element-wise kernels on the
 * CUDA cores (fp32). Under fp8 only the linear layers' GEMMs run in fp8: Transformer
 * Engine's fp8_autocast leaves attention's core in bf16 unless fp8_dpa is set (TE
 * `DelayedScaling.fp8_dpa`, default False), so eager attention's matmuls and the flash
 * kernel run at bf16. */
void
plan_task_add_pass (ModelPlan *p, const ModelPass *pass)
{
  HwDtype tensor = model_stack_compute_dtype (&p->stack);
  ModelTask *t = plan_current (p);
  if (pass->n_ops == 0)
    return;
  const PassMemoSlot *seen = t->n_kernels == 0 && !memo_off
                               ? pass_memo_find (p, pass, tensor) : NULL;
  if (seen != NULL)
    {
      /* the sums as the derivation below makes them, in the same order */
      for (guint i = 0; i < pass->n_ops; i++)
        {
          t->flops += pass->ops[i].flops;
          t->bytes += pass->ops[i].bytes;
        }
      t->n_kernels = pass->n_ops;
      t->first_kernel = seen->first;
      return;
    }
  /* the pass's kernels, zeroed as g_new0 would (their padding is copied into the plan), on
   * the stack for the usual few (a layer's pass has about a dozen ops) */
  ModelKernel stack_ks[32];
  g_autofree ModelKernel *heap_ks = NULL;
  ModelKernel *ks = pass->n_ops <= G_N_ELEMENTS (stack_ks)
                        ? stack_ks
                        : (heap_ks = g_new (ModelKernel, pass->n_ops));
  memset (ks, 0, pass->n_ops * sizeof *ks);
  for (guint i = 0; i < pass->n_ops; i++)
    {
      const ModelOp *op = &pass->ops[i];
      HwDtype dt = op->op_class == MODEL_OP_ELEMENTWISE             ? HW_DTYPE_FP32
                   : tensor == HW_DTYPE_FP8 && attention_core (op) ? HW_DTYPE_BF16
                                                                   : tensor;
      ks[i] = (ModelKernel){ *op, dt };
      if (ks[i].op.shape.cls == HW_KERNEL_FLASH_FWD || ks[i].op.shape.cls == HW_KERNEL_FLASH_BWD)
        ks[i].op.shape.attn = p->stack.attention_kernel; /* the stack's kernel, for its speed */
      t->flops += ks[i].op.flops;
      t->bytes += ks[i].op.bytes;
    }
  KernelRun probe = { NULL, ks, 0, pass->n_ops, kernels_hash (ks, pass->n_ops) };
  if (t->n_kernels == 0)
    {
      const KernelRun *found = g_hash_table_lookup (p->kernel_runs, &probe);
      t->n_kernels = pass->n_ops;
      if (found != NULL)
        {
          t->first_kernel = found->first;
          pass_memo_store (p, pass, tensor, ks, t->first_kernel);
          return;
        }
      t->first_kernel = p->kernels->len;
      g_array_append_vals (p->kernels, ks, pass->n_ops);
      KernelRun *run = g_new (KernelRun, 1);
      *run = (KernelRun){ p->kernels, NULL, t->first_kernel, pass->n_ops, probe.hash };
      g_hash_table_add (p->kernel_runs, run);
      pass_memo_store (p, pass, tensor, ks, t->first_kernel);
      return;
    }
  if (t->first_kernel + t->n_kernels != p->kernels->len)
    {
      /* behind a shared range: this task's kernels move to the end, contiguous */
      guint first = p->kernels->len;
      g_array_set_size (p->kernels, first + t->n_kernels);
      memcpy (&g_array_index (p->kernels, ModelKernel, first),
              &g_array_index (p->kernels, ModelKernel, t->first_kernel),
              t->n_kernels * sizeof (ModelKernel));
      t->first_kernel = first;
    }
  g_array_append_vals (p->kernels, ks, pass->n_ops);
  t->n_kernels += pass->n_ops;
}

void
plan_task_dep (ModelPlan *p, guint task)
{
  if (task == G_MAXUINT)
    return;
  g_assert (task < plan_current (p)->id);
  g_array_append_val (p->deps, task);
  plan_current (p)->n_deps++;
}

guint
plan_new_handle (ModelPlan *p, ModelMemCategory category, double bytes)
{
  if (bytes <= 0)
    return 0;
  ModelMemEffect e = { .category = category, .when = MODEL_EFFECT_AT_START, .bytes = bytes,
                       .handle = p->handles->len, .where = MODEL_MEM_ON_GPU };
  g_array_append_val (p->handles, e);
  return e.handle;
}

guint
plan_new_handle_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes, guint n)
{
  double bytes = 0;
  for (guint i = 0; i < n; i++)
    bytes += sizes[i];
  guint h = plan_new_handle (p, category, bytes);
  if (h == 0 || n <= 1)
    return h;
  ModelMemEffect *e = &g_array_index (p->handles, ModelMemEffect, h);
  e->first_tensor = p->tensor_sizes->len;
  e->n_tensors = n;
  g_array_append_vals (p->tensor_sizes, sizes, n);
  return h;
}

guint
plan_task_alloc_tensors (ModelPlan *p, ModelMemCategory category, const double *sizes, guint n,
                         ModelEffectWhen when)
{
  guint h = plan_new_handle_tensors (p, category, sizes, n);
  if (h == 0)
    return 0;
  ModelMemEffect e = g_array_index (p->handles, ModelMemEffect, h);
  e.when = when;
  g_array_append_val (p->effects, e);
  plan_current (p)->n_effects++;
  return h;
}

guint
plan_task_alloc_on (ModelPlan *p, ModelMemCategory category, double bytes,
                    ModelEffectWhen when, ModelAllocStream stream)
{
  guint h = plan_new_handle (p, category, bytes);
  if (h == 0)
    return 0;
  ModelMemEffect e = { .category = category, .when = when, .bytes = bytes, .handle = h,
                       .where = MODEL_MEM_ON_GPU, .stream = stream };
  g_array_index (p->handles, ModelMemEffect, h).stream = stream;
  g_array_append_val (p->effects, e);
  plan_current (p)->n_effects++;
  return h;
}

guint
plan_task_alloc (ModelPlan *p, ModelMemCategory category, double bytes, ModelEffectWhen when)
{
  return plan_task_alloc_on (p, category, bytes, when, MODEL_ALLOC_STREAM_COMPUTE);
}

void
plan_task_free (ModelPlan *p, guint handle, ModelEffectWhen when)
{
  if (handle == 0)
    return;
  const ModelMemEffect *a = &g_array_index (p->handles, ModelMemEffect, handle);
  ModelMemEffect e = { .category = a->category, .when = when, .bytes = -a->bytes,
                       .handle = handle, .where = a->where };
  g_array_append_val (p->effects, e);
  plan_current (p)->n_effects++;
}

void
plan_task_workspace (ModelPlan *p, double bytes)
{
  plan_task_free (p, plan_task_alloc (p, MODEL_MEM_WORKSPACE, bytes, MODEL_EFFECT_AT_START),
                  MODEL_EFFECT_AT_END);
}

void
plan_task_pass_workspace (ModelPlan *p, const ModelPass *pass)
{
  if (pass->n_workspace_tensors == 0)
    {
      plan_task_workspace (p, pass->workspace);
      return;
    }
  guint h = plan_task_alloc_tensors (p, MODEL_MEM_WORKSPACE, pass->workspace_tensors,
                                     pass->n_workspace_tensors, MODEL_EFFECT_AT_START);
  plan_task_free (p, h, MODEL_EFFECT_AT_END);
}

guint
plan_last_on_stream (const ModelPlan *p, guint rank, ModelStream stream)
{
  for (guint i = p->tasks->len; i-- > 0;)
    {
      const ModelTask *t = &g_array_index (p->tasks, ModelTask, i);
      if (t->rank != rank)
        break;
      if (t->stream == stream)
        return t->id;
    }
  return G_MAXUINT;
}

void
plan_keep_gradient (ModelPlan *p, guint handle)
{
  if (handle != 0)
    g_array_append_val (p->grad_handles, handle);
}
