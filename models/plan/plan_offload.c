/* models/plan/plan_offload.c — the offload schedule (models/memory/offload.h) woven into a rank's step
 * through the hooks of plan_offload-private.h, and the executor's entry for offload tasks
 * (models/plan/plan_offload.h).
 *
 * Schedule, per rank with Ψ/N parameters in its shard (N = shard group size):
 *  - time 0: a CPU-stream task allocates what lives off the GPU (host DRAM: master weights
 *    4 B, optimizer states K B, fp32 gradients 4 B per parameter; NVMe instead for master
 *    and states under optimizer = nvme, with host swap buffers; the w-byte parameter shard
 *    under parameter offload).
 *  - backward: every block's gradient (its shard after the reduce-scatter, or the full
 *    block on one rank) moves D2H once reduced, on the d2h stream, and is freed on the GPU
 *    (ZeRO-Offload §4.1: the copy overlaps the rest of the backward). The copies hold the
 *    backward back: each flush waits for the previous copy, or, under DeepSpeed stages 1–2
 *    without overlap_comm, the compute stream waits for each copy (grad_copy_order below).
 *    DeepSpeed's engine copies fp32 (4 B a parameter). With grad_accum > 1 this happens
 *    every micro-batch (DeepSpeed accumulates into the host fp32 partition; at stages 1–2
 *    the 16-bit sum goes up and down again each micro-batch, plan_offload_gradients).
 *  - step: once the last gradient is on the host, the CPU runs the optimizer one block
 *    (chunk) at a time, in layer order, the root block (embedding, final norm, head) last;
 *    after chunk i its updated w-byte parameters go H2D (stage 1–3 without parameter
 *    offload) or, with parameters on NVMe, to the drive, so copies overlap later chunks as
 *    DeepSpeed's tiled CPU-Adam does. Under optimizer = nvme each chunk's master weights and
 *    states ((4 + K) B/param) are read from NVMe before its CPU step and written back after
 *    (ZeRO-Infinity §5: states read and written once per step), reads at most 3 chunks ahead
 *    of the writes (the swap buffers). Stages 1–2 then all-gather the updated parameters.
 *  - parameter offload: before each stage-3 all-gather (forward and backward) the rank's
 *    shard is copied host→GPU (NVMe→GPU through a host bounce buffer).
 *  - activation offload: a layer's saved activations move D2H after its forward and H2D
 *    before its backward, one layer ahead of the backward; a layer's forward waits for the
 *    copy of the layer two before it (double buffering), so GPU activations stay bounded.
 * Closed forms (tests/unit/models/test_offload.c): with GA 1 a rank moves gΨ/N B of
 * gradients D2H and wΨ/N B of parameters H2D per step (ZeRO-Offload: 2Ψ + 2Ψ with 16-bit
 * w = g = 2 on one GPU); optimizer = nvme reads and writes (4 + K)Ψ/N B each.
 * Invariants: every offload task has amount > 0; host and NVMe allocations are effects with
 * `where` set, freed only by this file. Units: B, parameters.
 */
#include "config.h"
#include "models/plan/plan_offload-private.h"
#include "models/plan/plan_paged.h"
#include "models/plan/plan_offload.h"

#include "hardware/node_catalog.h"

#define NONE G_MAXUINT
/* DeepSpeed's swap buffer counts (ZeRO config docs: offload_optimizer.buffer_count 4,
 * offload_param.buffer_count 5); each buffer holds one chunk here. */
#define OPT_SWAP_BUFFERS 4
#define PARAM_SWAP_BUFFERS 5

struct _PlanOffload
{
  guint L;
  guint *act_d2h;     /* per layer: D2H task of the current micro-batch, NONE if not saved */
  guint *act_host;    /* host handle of the saved activations */
  guint *act_h2d;     /* H2D task bringing them back, NONE until issued */
  guint *act_gpu;     /* GPU handle the H2D allocates */
  guint grad_copy;    /* the current rank's last gradient copy to the host, NONE before */
};

void
plan_offload_free (PlanOffload *o)
{
  if (o == NULL)
    return;
  g_free (o->act_d2h);
  g_free (o);
}

static PlanOffload *
state (ModelPlan *p)
{
  if (p->offload == NULL)
    {
      guint L = (guint) p->arch->n_layers;
      PlanOffload *o = g_new0 (PlanOffload, 1);
      o->L = L;
      o->act_d2h = g_new (guint, 4 * (gsize) L);
      o->act_host = o->act_d2h + L;
      o->act_h2d = o->act_d2h + 2 * L;
      o->act_gpu = o->act_d2h + 3 * L;
      for (guint i = 0; i < 4 * L; i++)
        o->act_d2h[i] = i < 3 * L ? NONE : 0;
      p->offload = o;
    }
  return p->offload;
}

static const ModelOffload *
cfg (const ModelPlan *p)
{
  return &p->stack.offload;
}

gboolean
plan_offloads_optimizer (const ModelPlan *p)
{
  return cfg (p)->optimizer != MODEL_OFFLOAD_NONE;
}

gboolean
plan_offloads_parameters (const ModelPlan *p)
{
  return cfg (p)->parameters != MODEL_OFFLOAD_NONE;
}

/* ---- primitives: host/NVMe allocations and offload tasks ------------------------------- */

/* Allocates `bytes` of `category` in `where` in the current task (a handle of the plan). */
static guint
place_alloc (ModelPlan *p, ModelMemPlace where, ModelMemCategory category, double bytes,
             ModelEffectWhen when)
{
  /* whole bytes, as the GPU ledger's tensors (a factored or 8-bit state's bytes a
   * parameter times a share left 9987355492.09 B of NVMe staging) */
  guint h = plan_task_alloc (p, category, model_ledger_whole_bytes (bytes), when);
  if (h == 0)
    return 0;
  g_array_index (p->handles, ModelMemEffect, h).where = where;
  g_array_index (p->effects, ModelMemEffect, p->effects->len - 1).where = where;
  return h;
}

static guint
offload_task (ModelPlan *p, guint rank, ModelStream stream, ModelTaskKind kind, ModelOffloadOp op,
              double amount, gint layer, gint mb, const char *label)
{
  g_assert (amount > 0);
  guint id = plan_task_begin (p, rank, stream, kind, layer, mb, "%s", label);
  ModelTask *t = plan_current (p);
  t->offload = op;
  t->amount = amount;
  t->bytes = op == MODEL_OFFLOAD_OP_CPU_STEP ? 0 : amount;
  return id;
}

/* Optimizer-state bytes per parameter, shapes included (Adafactor, 8-bit Adam). */
static double
state_per_param (const ModelPlan *p)
{
  ModelOptimizerView view = plan_optimizer_view (p);
  return model_stack_optimizer_state_total (&p->stack, p->arch, &view)
         / model_stack_trainable_params (&p->stack, p->arch);
}

/* Master weights (4) + optimizer states (K) per parameter: what the CPU step reads and
 * writes besides the gradients. CPU Adam keeps an fp32 master copy whatever the precision. */
static double
swap_per_param (const ModelPlan *p)
{
  return 4.0 + state_per_param (p);
}

/* ---- initial state ---------------------------------------------------------------------- */

double
plan_offload_ds_grad_buffer (const ModelPlan *p)
{
  if (!p->stack.framework.deepspeed_engine || model_parallel_stage (&p->par) > 2
      || !plan_offloads_optimizer (p))
    return 0;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
  double largest = (double) model_inventory_largest (inv, MODEL_INVENTORY_ALL, TRUE);
  return largest * model_stack_gradient_bytes (&p->stack);
}

void
plan_offload_initial_state (ModelPlan *p)
{
  if (plan_offloads_optimizer (p))
    {
      p->initial[MODEL_MEM_MASTER_WEIGHTS] = 0;
      p->initial[MODEL_MEM_OPTIMIZER_STATE] = 0;
      p->initial[MODEL_MEM_GRADIENTS] = 0; /* gradients leave the GPU as they are reduced */
    }
  if (plan_offloads_parameters (p))
    p->initial[MODEL_MEM_WEIGHTS] = 0;
}

static double
largest_block (const PlanCosts *pc)
{
  return MAX (pc->params_layer, pc->params_root);
}

void
plan_offload_begin_rank (ModelPlan *p, guint rank, const PlanCosts *pc)
{
  const ModelOffload *o = cfg (p);
  if (o->optimizer == MODEL_OFFLOAD_NONE && o->parameters == MODEL_OFFLOAD_NONE)
    return;
  state (p)->grad_copy = NONE;
  p->compute_gate = NONE;
  /* This rank's partition of the optimizer's parameters (their placement at the step): of
   * its tp rank's TP-local parameters (plan_tp.c), as plan_initial_state shards the GPU's. */
  double n = model_stack_trainable_params (&p->stack, p->arch) * p->tp.trainable;
  double part = model_parallel_local_bytes (&p->par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP, n);
  double chunk = model_parallel_local_bytes (&p->par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP,
                                             largest_block (pc));
  double w = model_stack_weight_bytes (&p->stack);
  plan_task_begin (p, rank, MODEL_STREAM_CPU, MODEL_TASK_KIND_OFFLOAD, -1, -1,
                   "offloaded state");
  if (o->optimizer != MODEL_OFFLOAD_NONE)
    {
      ModelMemPlace states = o->optimizer == MODEL_OFFLOAD_NVME ? MODEL_MEM_ON_NVME
                                                                : MODEL_MEM_ON_HOST;
      place_alloc (p, states, MODEL_MEM_MASTER_WEIGHTS, 4 * part, MODEL_EFFECT_AT_START);
      place_alloc (p, states, MODEL_MEM_OPTIMIZER_STATE, state_per_param (p) * part,
                   MODEL_EFFECT_AT_START);
      place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_GRADIENTS, 4 * part, MODEL_EFFECT_AT_START);
      /* DeepSpeed also keeps the gradients' 16-bit sums in host memory: stage 3 always
       * (stage3.py grad_partitions_flat_buffer on the offload device), stages 1–2 when they
       * accumulate (stage_1_and_2.py accumulated_grads_in_cpu, a pinned buffer per
       * parameter of the partition, async_accumulate_grad_in_cpu_via_gpu) */
      if (p->stack.framework.deepspeed_engine
          && (model_parallel_stage (&p->par) >= 3 || p->stack.grad_accum > 1))
        place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_GRADIENTS,
                     model_stack_gradient_bytes (&p->stack) * part, MODEL_EFFECT_AT_START);
      if (o->optimizer == MODEL_OFFLOAD_NVME)
        place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_OFFLOAD_STAGING,
                     OPT_SWAP_BUFFERS * swap_per_param (p) * MIN (chunk, part),
                     MODEL_EFFECT_AT_START);
      double staging = plan_offload_ds_grad_buffer (p); /* its host twin */
      if (staging > 0)
        place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_OFFLOAD_STAGING, staging,
                     MODEL_EFFECT_AT_START);
    }
  if (o->parameters == MODEL_OFFLOAD_CPU)
    place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_WEIGHTS, w * part, MODEL_EFFECT_AT_START);
  else if (o->parameters == MODEL_OFFLOAD_NVME)
    {
      place_alloc (p, MODEL_MEM_ON_NVME, MODEL_MEM_WEIGHTS, w * part, MODEL_EFFECT_AT_START);
      place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_OFFLOAD_STAGING,
                   PARAM_SWAP_BUFFERS * w * MIN (chunk, part), MODEL_EFFECT_AT_START);
    }
}

/* ---- parameters --------------------------------------------------------------------------- */

guint
plan_offload_fetch_params (ModelPlan *p, guint rank, double bytes, gint layer, gint mb,
                           guint after, const char *what, guint *handle)
{
  *handle = 0;
  if (!plan_offloads_parameters (p) || bytes <= 0)
    return NONE;
  gboolean nvme = cfg (p)->parameters == MODEL_OFFLOAD_NVME;
  g_autofree char *label = g_strdup_printf ("fetch %s", what);
  guint id = offload_task (p, rank, MODEL_STREAM_H2D, MODEL_TASK_KIND_OFFLOAD,
                           nvme ? MODEL_OFFLOAD_OP_NVME_TO_GPU : MODEL_OFFLOAD_OP_H2D, bytes,
                           layer, mb, label);
  plan_task_dep (p, after);
  *handle = plan_task_alloc (p, MODEL_MEM_COMM_BUFFERS, bytes, MODEL_EFFECT_AT_START);
  return id;
}

/* ---- activations -------------------------------------------------------------------------- */

void
plan_offload_save_activation (ModelPlan *p, guint rank, guint fwd_task, guint layer, gint mb,
                              guint *handle)
{
  if (cfg (p)->activations == MODEL_OFFLOAD_NONE)
    return;
  PlanOffload *o = state (p);
  g_return_if_fail (layer < o->L);
  o->act_d2h[layer] = o->act_h2d[layer] = NONE;
  /* Double buffering (vDNN §3.2; DeepSpeed copies synchronously): the layer's forward waits
   * for the copy of the layer two before it, so at most two layers' activations sit on the
   * GPU waiting to go down. */
  if (layer >= 2 && plan_current (p)->id == fwd_task)
    plan_task_dep (p, o->act_d2h[layer - 2]);
  if (*handle == 0)
    return;
  double bytes = g_array_index (p->handles, ModelMemEffect, *handle).bytes;
  g_autofree char *label = g_strdup_printf ("act L%u to host mb%d", layer, mb);
  o->act_d2h[layer] = offload_task (p, rank, MODEL_STREAM_D2H, MODEL_TASK_KIND_OFFLOAD,
                                    MODEL_OFFLOAD_OP_D2H, bytes, (gint) layer, mb, label);
  plan_task_dep (p, fwd_task);
  o->act_host[layer] = place_alloc (p, MODEL_MEM_ON_HOST, MODEL_MEM_ACTIVATIONS, bytes,
                                    MODEL_EFFECT_AT_START);
  plan_task_free (p, *handle, MODEL_EFFECT_AT_END);
  *handle = 0;
}

static void
restore (ModelPlan *p, PlanOffload *o, guint rank, guint layer, gint mb, guint after)
{
  double bytes = g_array_index (p->handles, ModelMemEffect, o->act_host[layer]).bytes;
  g_autofree char *label = g_strdup_printf ("act L%u to gpu mb%d", layer, mb);
  o->act_h2d[layer] = offload_task (p, rank, MODEL_STREAM_H2D, MODEL_TASK_KIND_OFFLOAD,
                                    MODEL_OFFLOAD_OP_H2D, bytes, (gint) layer, mb, label);
  plan_task_dep (p, o->act_d2h[layer]);
  plan_task_dep (p, after);
  o->act_gpu[layer] = plan_task_alloc (p, MODEL_MEM_ACTIVATIONS, bytes, MODEL_EFFECT_AT_START);
  plan_task_free (p, o->act_host[layer], MODEL_EFFECT_AT_END);
}

guint
plan_offload_restore_activation (ModelPlan *p, guint rank, guint layer, gint mb, guint after,
                                 guint *handle)
{
  if (cfg (p)->activations == MODEL_OFFLOAD_NONE)
    return NONE;
  PlanOffload *o = state (p);
  g_return_val_if_fail (layer < o->L, NONE);
  if (o->act_d2h[layer] == NONE)
    return NONE;
  if (o->act_h2d[layer] == NONE)
    restore (p, o, rank, layer, mb, after);
  guint id = o->act_h2d[layer];
  *handle = o->act_gpu[layer];
  if (layer >= 1 && o->act_d2h[layer - 1] != NONE && o->act_h2d[layer - 1] == NONE)
    restore (p, o, rank, layer - 1, mb, after);
  return id;
}

/* ---- gradients and the optimizer step --------------------------------------------------- */

/* How a rank's gradient copies to the host hold its backward back. The copies leave from
 * a bounded set of GPU buffers, so the backward cannot run ahead of them without limit:
 *  - DeepSpeed stages 1–2 without overlap_comm (its default there): the copies are issued
 *    on the compute stream (stage_1_and_2.py reduce_ipg_grads: "copy_grad_stream is
 *    disabled because of race with reduce", stream = current_stream()), so the kernels
 *    after a flush wait for its copy: GRAD_COPY_SERIAL;
 *  - otherwise the copies run beside the backward, and each flush first waits for the
 *    previous one: DeepSpeed with overlap_comm (average_tensor:
 *    current_stream().wait_stream(reduction_stream) before the next bucket's reduction;
 *    stage 3 the same with its reduce_and_partition_stream), FSDP2's CPU offload (the next
 *    post-backward waits for the previous reduce-scatter state's event,
 *    torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py post_backward) and the
 *    ZeRO-Offload paper's design (§4.1, the copy overlaps the rest of the backward):
 *    GRAD_COPY_OVERLAP.
 * A flush here is one reduction unit of the plan (a layer, or the root unit); DeepSpeed's
 * flushes every reduce_bucket_size elements instead. */
typedef enum
{
  GRAD_COPY_SERIAL,
  GRAD_COPY_OVERLAP,
} GradCopyOrder;

static GradCopyOrder
grad_copy_order (const ModelPlan *p)
{
  const ModelFramework *fw = &p->stack.framework;
  return fw->deepspeed_engine && model_parallel_stage (&p->par) <= 2 && !fw->ds_overlap_comm
           ? GRAD_COPY_SERIAL
           : GRAD_COPY_OVERLAP;
}

guint
plan_offload_gradients (ModelPlan *p, guint rank, guint after, double bytes, guint h1, guint h2,
                        gint layer, gint mb)
{
  if (!plan_offloads_optimizer (p) || bytes <= 0)
    return NONE;
  PlanOffload *o = state (p);
  const ModelFramework *fw = &p->stack.framework;
  /* DeepSpeed casts each gradient to the fp32 master dtype on the GPU before the copy
   * (stage_1_and_2.py async_inplace_copy_grad_to_fp32_buffer_from_gpu:
   * src_tensor.to(master_weights_and_grads_dtype), then copy_(non_blocking=True); stage3.py
   * _offload_grad_partition_at_boundary likewise), so 4 B a parameter cross PCIe, not the 16-bit
   * gradient's 2 (the ZeRO-Offload paper's 2Ψ) */
  double wire = fw->deepspeed_engine ? bytes * 4.0 / model_stack_gradient_bytes (&p->stack)
                                     : bytes;
  /* DeepSpeed accumulates over micro-batches in a 16-bit host buffer through the GPU
   * (stage_1_and_2.py copy_grads_in_partition → async_accumulate_grad_in_cpu_via_gpu, with
   * gradient_accumulation_steps > 1): the sum so far comes up (from the second micro-batch
   * on), is added on the GPU and goes down again, the boundary's too (DeepSpeed's tree from
   * #7981, 2026-04, to 2026-08; earlier releases differ: before #6550, 2024-09, the boundary
   * sent only the fp32 copy, "at the boundary we will send 32bit directly"); stage 3 keeps every micro-batch's sum in
   * its host grad_partitions_flat_buffer (gradient_accumulation_dtype, the model's 16-bit
   * dtype by default: engine.py get_data_types) and brings it back up as its CUDA working
   * copy each micro-batch, the first included (stage3.py partition_grads: copy_ then
   * .to(device)). The boundary's micro-batch then also sends the fp32 copy above. */
  gboolean boundary = (guint64) (mb + 1) == p->stack.grad_accum;
  gboolean stage3 = model_parallel_stage (&p->par) >= 3;
  gboolean via_gpu = fw->deepspeed_engine && (stage3 || p->stack.grad_accum > 1);
  guint up = NONE;
  if (via_gpu && (mb > 0 || stage3))
    {
      g_autofree char *l_up = layer >= 0
                                ? g_strdup_printf ("grads L%d from host mb%d", layer, mb)
                                : g_strdup_printf ("grads root from host mb%d", mb);
      up = offload_task (p, rank, MODEL_STREAM_H2D, MODEL_TASK_KIND_OFFLOAD,
                         MODEL_OFFLOAD_OP_H2D, bytes, layer, mb, l_up);
      plan_task_dep (p, after);
    }
  if (via_gpu)
    wire = bytes + (boundary ? wire : 0);
  /* DeepSpeed's contiguous gradients are copied into its reduce bucket (counted from time 0,
   * plan_state.c) as they are produced and the gradient tensor is freed then
   * (reduce_independent_p_g_buckets_and_remove_grads); the copy reads the bucket. Without
   * the bucket the copy reads the gradient itself, held until the copy ends. */
  ModelEffectWhen freed = fw->deepspeed_engine && fw->reduce_bucket_elements > 0
                            ? MODEL_EFFECT_AT_START
                            : MODEL_EFFECT_AT_END;
  g_autofree char *label = layer >= 0 ? g_strdup_printf ("grads L%d to host mb%d", layer, mb)
                                      : g_strdup_printf ("grads root to host mb%d", mb);
  guint id = offload_task (p, rank, MODEL_STREAM_D2H, MODEL_TASK_KIND_OFFLOAD,
                           MODEL_OFFLOAD_OP_D2H, wire, layer, mb, label);
  plan_task_dep (p, up != NONE ? up : after);
  plan_task_free (p, h1, freed);
  plan_task_free (p, h2, freed);
  p->compute_gate = grad_copy_order (p) == GRAD_COPY_SERIAL ? id : o->grad_copy;
  o->grad_copy = id;
  return id;
}

/* The last task of `rank` on `stream` so far (NONE if none). */

typedef struct
{
  guint ready;   /* the last gradient copy: every gradient is on the host after it */
  guint comm;    /* the rank's last collective (hybrid replicas' all-reduce) */
  guint *write;  /* NVMe write task per chunk (NONE without) */
  guint last_copy;
} StepState;

/* One chunk of the host step: read its states (NVMe), update on the CPU, write them back
 * (NVMe), send the updated parameters where they live. */
static void
step_chunk (ModelPlan *p, guint rank, guint i, double params, gint layer, StepState *s)
{
  const ModelOffload *o = cfg (p);
  s->write[i] = NONE;
  if (params <= 0) /* nothing trains here (LoRA's root unit) */
    return;
  gboolean nvme = o->optimizer == MODEL_OFFLOAD_NVME;
  double swap = swap_per_param (p) * params;
  g_autofree char *what = layer >= 0 ? g_strdup_printf ("L%d", layer) : g_strdup ("root");
  g_autofree char *l_read = g_strdup_printf ("swap in %s", what);
  g_autofree char *l_step = g_strdup_printf ("cpu step %s", what);
  g_autofree char *l_write = g_strdup_printf ("swap out %s", what);
  g_autofree char *l_param = g_strdup_printf ("params %s to %s", what,
                                              o->parameters == MODEL_OFFLOAD_NVME ? "nvme" : "gpu");
  guint read = NONE;
  if (nvme)
    {
      read = offload_task (p, rank, MODEL_STREAM_NVME_READ, MODEL_TASK_KIND_OFFLOAD,
                           MODEL_OFFLOAD_OP_NVME_READ, swap, layer, -1, l_read);
      plan_task_dep (p, s->ready);
      plan_task_dep (p, s->comm);
      plan_task_dep (p, i >= OPT_SWAP_BUFFERS - 1 ? s->write[i - (OPT_SWAP_BUFFERS - 1)] : NONE);
    }
  guint step = offload_task (p, rank, MODEL_STREAM_CPU, MODEL_TASK_KIND_OPTIMIZER,
                             MODEL_OFFLOAD_OP_CPU_STEP, params, layer, -1, l_step);
  plan_task_dep (p, s->ready);
  plan_task_dep (p, s->comm);
  plan_task_dep (p, read);
  s->write[i] = NONE;
  if (nvme)
    {
      s->write[i] = offload_task (p, rank, MODEL_STREAM_NVME_WRITE, MODEL_TASK_KIND_OFFLOAD,
                                  MODEL_OFFLOAD_OP_NVME_WRITE, swap, layer, -1, l_write);
      plan_task_dep (p, step);
    }
  double w = model_stack_weight_bytes (&p->stack) * params;
  if (o->parameters == MODEL_OFFLOAD_CPU)
    return; /* the CPU updates the host copy the next fetch reads */
  gboolean to_nvme = o->parameters == MODEL_OFFLOAD_NVME;
  s->last_copy = offload_task (p, rank, to_nvme ? MODEL_STREAM_NVME_WRITE : MODEL_STREAM_H2D,
                               MODEL_TASK_KIND_OFFLOAD,
                               to_nvme ? MODEL_OFFLOAD_OP_NVME_WRITE : MODEL_OFFLOAD_OP_H2D, w,
                               layer, -1, l_param);
  plan_task_dep (p, step);
}

gboolean
plan_offload_optimizer (ModelPlan *p, guint rank, const PlanCosts *pc)
{
  if (!plan_offloads_optimizer (p))
    return FALSE;
  guint L = (guint) p->arch->n_layers;
  g_autofree guint *write = g_new (guint, L + 1);
  StepState s = { .ready = plan_last_on_stream (p, rank, MODEL_STREAM_D2H),
                  .comm = plan_last_on_stream (p, rank, MODEL_STREAM_COMM),
                  .write = write, .last_copy = NONE };
  for (guint l = 0; l < L; l++)
    step_chunk (p, rank, l,
                model_parallel_local_bytes (&p->par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP,
                                            pc->params_layer),
                (gint) l, &s);
  step_chunk (p, rank, L,
              model_parallel_local_bytes (&p->par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP,
                                          pc->params_root),
              -1, &s);
  /* GPU model states left at the step: what plan_initial_state kept there, and any gradient
   * still held (none: every one left by D2H). */
  double state = 0;
  for (guint m = MODEL_MEM_WEIGHTS; m <= MODEL_MEM_OPTIMIZER_STATE; m++)
    state += p->initial[m];
  state += p->initial[MODEL_MEM_LORA]; /* the adapters' weights */
  for (guint i = 0; i < p->grad_handles->len; i++)
    {
      guint h = g_array_index (p->grad_handles, guint, i);
      state += g_array_index (p->handles, ModelMemEffect, h).bytes;
      plan_task_free (p, h, MODEL_EFFECT_AT_END);
    }
  g_array_set_size (p->grad_handles, 0);
  p->state_bytes[rank] = model_ledger_whole_bytes (state);
  /* Weights step → rest: the stage 1–2 all-gather of the updated partitions (parallel.h). */
  guint first;
  plan_redistribute (p, rank, MODEL_STATE_WEIGHTS, MODEL_PHASE_STEP, MODEL_PHASE_REST,
                     model_stack_trainable_params (&p->stack, p->arch) * p->tp.trainable
                       * model_stack_weight_bytes (&p->stack),
                     -1, -1, "updated params", s.last_copy, &first);
  return TRUE;
}

/* ---- queries and the executor's entry ------------------------------------------------------ */

double
model_plan_offload_amount (const ModelPlan *plan, guint rank, ModelOffloadOp op)
{
  g_return_val_if_fail (plan != NULL && op < MODEL_N_OFFLOAD_OPS, 0);
  double moved[MODEL_N_OFFLOAD_OPS];
  model_plan_offload_amounts (plan, rank, moved);
  return moved[op];
}

void
model_plan_offload_amounts (const ModelPlan *plan, guint rank, double *out)
{
  g_return_if_fail (plan != NULL && out != NULL);
  rank = hw_rank_shift_rep (&plan->built, rank); /* a representative stands for its class */
  for (guint op = 0; op < MODEL_N_OFFLOAD_OPS; op++)
    out[op] = 0;
  for (guint i = 0; i < plan->tasks->len; i++)
    {
      const ModelTask *t = &g_array_index (plan->tasks, ModelTask, i);
      if (t->rank == rank && t->offload < MODEL_N_OFFLOAD_OPS)
        out[t->offload] += t->amount;
    }
}

/* B of model states that `t`'s effects keep at `where` if t is a rank's "offloaded state"
 * task (CPU stream, offload kind, no copy), else 0; summed in effect order. */
static double
offloaded_state_of_task (const ModelPlan *plan, const ModelTask *t, ModelMemPlace where)
{
  if (t->stream != MODEL_STREAM_CPU || t->kind != MODEL_TASK_KIND_OFFLOAD
      || t->offload != MODEL_OFFLOAD_OP_NONE) /* the "offloaded state" task */
    return 0;
  double sum = 0;
  for (guint k = 0; k < t->n_effects; k++)
    {
      const ModelMemEffect *e = &g_array_index (plan->effects, ModelMemEffect,
                                                t->first_effect + k);
      if (e->where == where && where != MODEL_MEM_ON_GPU && e->bytes > 0
          && e->category != MODEL_MEM_OFFLOAD_STAGING)
        sum += e->bytes;
    }
  return sum;
}

double
model_plan_offloaded_state_bytes (const ModelPlan *plan, guint rank, ModelMemPlace where)
{
  g_return_val_if_fail (plan != NULL, 0);
  rank = hw_rank_shift_rep (&plan->built, rank); /* a representative stands for its class */
  double sum = 0;
  for (guint i = 0; i < plan->tasks->len; i++)
    {
      const ModelTask *t = &g_array_index (plan->tasks, ModelTask, i);
      if (t->rank == rank)
        sum += offloaded_state_of_task (plan, t, where);
    }
  return sum;
}

/* One pass over the tasks with a sum per rank, each accumulated in the same (task, effect)
 * order as model_plan_offloaded_state_bytes, so the result is bit-identical to the maximum of
 * that function over the ranks (which costs ranks × tasks: 32 % of a 512-GPU run). */
double
model_plan_offloaded_state_peak (const ModelPlan *plan, ModelMemPlace where)
{
  g_return_val_if_fail (plan != NULL, 0);
  g_autofree double *sum = g_new0 (double, plan->n_ranks);
  for (guint i = 0; i < plan->tasks->len; i++)
    {
      const ModelTask *t = &g_array_index (plan->tasks, ModelTask, i);
      g_assert (t->rank < plan->n_ranks);
      sum[t->rank] += offloaded_state_of_task (plan, t, where);
    }
  double peak = 0;
  for (guint r = 0; r < plan->n_ranks; r++)
    peak = MAX (peak, sum[r]);
  return peak;
}

SimActivityId
model_plan_offload_start (const ModelPlan *plan, HwCluster *cluster, const ModelTask *task,
                          SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (plan != NULL && cluster != NULL && task != NULL, 0);
  g_return_val_if_fail (task->offload != MODEL_OFFLOAD_OP_NONE && task->amount > 0, 0);
  /* Pageable host memory: the same bytes at a fraction of the bandwidth, i.e. more work. */
  double pcie = plan->stack.offload.pageable ? task->amount / HW_PAGEABLE_COPY_EFFICIENCY
                                             : task->amount;
  guint r = task->rank;
  switch (task->offload)
    {
    case MODEL_OFFLOAD_OP_H2D:
      return hw_cluster_start_copy (cluster, r, HW_COPY_H2D, pcie, done, user_data);
    case MODEL_OFFLOAD_OP_D2H:
      return hw_cluster_start_copy (cluster, r, HW_COPY_D2H, pcie, done, user_data);
    case MODEL_OFFLOAD_OP_NVME_READ:
      return hw_cluster_start_nvme (cluster, r, HW_NVME_READ, FALSE, task->amount, done,
                                    user_data);
    case MODEL_OFFLOAD_OP_NVME_WRITE:
      return hw_cluster_start_nvme (cluster, r, HW_NVME_WRITE, FALSE, task->amount, done,
                                    user_data);
    case MODEL_OFFLOAD_OP_NVME_TO_GPU:
      return hw_cluster_start_nvme (cluster, r, HW_NVME_READ, TRUE, task->amount, done,
                                    user_data);
    case MODEL_OFFLOAD_OP_CPU_STEP:
      return hw_cluster_start_host_compute (cluster, r, task->amount, done, user_data);
    case MODEL_OFFLOAD_OP_PAGE_IN: /* unified-memory migration (models/plan/plan_paged.h) */
      return hw_cluster_start_copy (cluster, r, HW_COPY_H2D,
                                    task->amount / MODEL_PAGED_MIGRATION_EFFICIENCY, done, user_data);
    case MODEL_OFFLOAD_OP_PAGE_OUT:
      return hw_cluster_start_copy (cluster, r, HW_COPY_D2H,
                                    task->amount / MODEL_PAGED_MIGRATION_EFFICIENCY, done, user_data);
    case MODEL_OFFLOAD_OP_NONE:
    case MODEL_N_OFFLOAD_OPS:
    default:
      break;
    }
  g_assert_not_reached ();
}
