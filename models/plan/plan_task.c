/* models/plan/plan_task.c — the primitives a plan is built with (plan-private.h): start a
 * task on a rank's stream, add its kernels, dependencies and memory effects (allocations,
 * frees, workspace), the gradients a rank keeps until its optimizer step. Every file of
 * the plan calls these; they call nothing of the plan above them. */
#include "config.h"
#include "models/plan/plan-private.h"

#include <stdarg.h>

guint
plan_task_begin (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind, gint layer,
                 gint micro_batch, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *label = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  ModelTask t = {
    .id = p->tasks->len,
    .rank = rank,
    .stream = stream,
    .kind = kind,
    .label = g_string_chunk_insert (p->labels, label),
    .layer = layer,
    .micro_batch = micro_batch,
    .first_kernel = p->kernels->len,
    .first_dep = p->deps->len,
    .first_effect = p->effects->len,
    .collective = -1,
  };
  g_array_append_val (p->tasks, t);
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
void
plan_task_add_pass (ModelPlan *p, const ModelPass *pass)
{
  HwDtype tensor = model_stack_compute_dtype (&p->stack);
  ModelTask *t = plan_current (p);
  for (guint i = 0; i < pass->n_ops; i++)
    {
      const ModelOp *op = &pass->ops[i];
      gboolean core = op->op_class == MODEL_OP_ATTENTION || g_str_has_prefix (op->name, "attn_scores")
                      || g_str_has_prefix (op->name, "attn_av");
      HwDtype dt = op->op_class == MODEL_OP_ELEMENTWISE ? HW_DTYPE_FP32
                   : tensor == HW_DTYPE_FP8 && core  ? HW_DTYPE_BF16
                                                     : tensor;
      ModelKernel k = { *op, dt };
      if (k.op.shape.cls == HW_KERNEL_FLASH_FWD || k.op.shape.cls == HW_KERNEL_FLASH_BWD)
        k.op.shape.attn = p->stack.attention_kernel; /* the stack's kernel, for its speed */
      g_array_append_val (p->kernels, k);
      t->n_kernels++;
      t->flops += k.op.flops;
      t->bytes += k.op.bytes;
    }
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
  ModelMemEffect e = { category, bytes, MODEL_EFFECT_AT_START, p->handles->len, 0, 0,
                       MODEL_MEM_ON_GPU };
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
plan_task_alloc (ModelPlan *p, ModelMemCategory category, double bytes, ModelEffectWhen when)
{
  guint h = plan_new_handle (p, category, bytes);
  if (h == 0)
    return 0;
  ModelMemEffect e = { category, bytes, when, h, 0, 0, MODEL_MEM_ON_GPU };
  g_array_append_val (p->effects, e);
  plan_current (p)->n_effects++;
  return h;
}

void
plan_task_free (ModelPlan *p, guint handle, ModelEffectWhen when)
{
  if (handle == 0)
    return;
  const ModelMemEffect *a = &g_array_index (p->handles, ModelMemEffect, handle);
  ModelMemEffect e = { a->category, -a->bytes, when, handle, 0, 0, a->where };
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

/* ---- pipeline stage shares (plan_pp.c fills them; here so that plan_step.c and
 * plan_state.c read them without calling plan_pp.c, which calls plan_step.c) ---- */

double
plan_pp_state_fraction (const ModelPlan *p, guint rank, gboolean weights)
{
  if (p->pp.pp == 1 || p->pp.trainable == NULL)
    return 1;
  guint coords[MODEL_MESH_N_DIMS];
  model_mesh_coords (&p->mesh, rank, coords);
  guint s = coords[MODEL_MESH_PP];
  return weights ? p->pp.weights[s] : p->pp.trainable[s];
}

double
plan_pp_state_fraction_max (const ModelPlan *p, gboolean weights)
{
  if (p->pp.pp == 1 || p->pp.trainable == NULL)
    return 1;
  double m = 0;
  for (guint s = 0; s < p->pp.pp; s++)
    m = MAX (m, weights ? p->pp.weights[s] : p->pp.trainable[s]);
  return m;
}
