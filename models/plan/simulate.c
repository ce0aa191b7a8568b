/* models/plan/simulate.c — one step, simulated end to end; see simulate.h. */
#include "config.h"
#include "models/plan/simulate.h"

#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "models/memory/host_ledger.h"
#include "models/plan/plan_offload.h"
#include "models/plan/plan_paged.h"
#include "models/plan/rank_classes.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/units.h"

#include <math.h>

const char *const *
model_sim_kind_names (void)
{
  static const char *names[MODEL_N_TASK_KINDS + 1];
  static gsize done; /* filled once, thread-safe (batches run scenarios in parallel) */
  if (g_once_init_enter (&done))
    {
      for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
        names[k] = model_plan_task_kind_name (k);
      g_once_init_leave (&done, 1);
    }
  return names;
}

const char *const *
model_sim_stream_names (void)
{
  static const char *names[MODEL_N_STREAMS + 1];
  static gsize done; /* filled once, thread-safe (batches run scenarios in parallel) */
  if (g_once_init_enter (&done))
    {
      for (guint s = 0; s < MODEL_N_STREAMS; s++)
        names[s] = model_plan_stream_name (s);
      g_once_init_leave (&done, 1);
    }
  return names;
}

/* Frees the OOM record's strings (the record is refilled or dropped). */
static void
clear_oom (ModelSimResult *res)
{
  g_clear_pointer (&res->oom_task, g_free);
  for (guint i = 0; i < res->oom_n_holders; i++)
    g_clear_pointer ((char **) &res->oom_holders[i].task, g_free);
  res->oom_n_holders = 0;
}

void
model_sim_result_clear (ModelSimResult *res)
{
  g_clear_pointer (&res->peak_task, g_free);
  g_clear_pointer (&res->rank_peak_allocated, g_free);
  g_clear_pointer (&res->rank_device_used, g_free);
  g_clear_pointer (&res->op_times, model_op_times_free);
  clear_oom (res);
}

/* The first OOM of rank w, copied out of the ledger (which the caller frees). */
static void
fill_oom (const ModelLedger *ledger, guint w, ModelSimResult *res)
{
  res->oom = model_ledger_oom (ledger, w);
  if (!res->oom)
    return;
  res->oom_time = model_ledger_oom_time (ledger, w);
  res->oom_task = g_strdup (model_ledger_oom_task (ledger, w));
  res->oom_requested = model_ledger_oom_requested (ledger, w);
  res->oom_category = model_ledger_oom_category (ledger, w);
  res->oom_reserved = model_ledger_oom_reserved (ledger, w);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    res->oom_mix[c] = model_ledger_oom_mix (ledger, w, c);
  res->oom_n_holders = model_ledger_oom_n_holders (ledger, w);
  for (guint i = 0; i < res->oom_n_holders; i++)
    {
      res->oom_holders[i] = *model_ledger_oom_holder (ledger, w, i);
      res->oom_holders[i].task = g_strdup (res->oom_holders[i].task);
    }
}

/* A mixed-precision stack needs its 16-bit format on the GPU (V100 has no bf16). */
static gboolean
check_dtype (const ModelSimInput *in, GError **error)
{
  /* NCCL reduces fp8 only on sm90 and later ("FP8 reduction support begins with sm90 capable
   * devices", 2.24 release notes): a GPU without fp8, and Ada (sm89), which computes in fp8,
   * fail the first gradient reduction (QA: an A100 and 8x RTX-4090 ran reduce_dtype = fp8) */
  const HwGpuSpec *gpu = in->node->gpu;
  if (in->par->reduce_dtype_set && in->par->reduce_dtype == HW_DTYPE_FP8
      && (!hw_gpu_has_dtype (gpu, HW_DTYPE_FP8) || gpu->generation == HW_GPU_GEN_ADA))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'reduce_dtype': NCCL reduces fp8 on sm90 (Hopper) "
                   "and later only; %s %s", gpu->name,
                   gpu->generation == HW_GPU_GEN_ADA ? "is an Ada GPU (sm89)" : "has no fp8");
      return FALSE;
    }
  HwDtype dtype = model_stack_compute_dtype (in->stack);
  if (hw_gpu_has_dtype (in->node->gpu, dtype))
    return TRUE;
  if (dtype == HW_DTYPE_TF32) /* fp32 asked to run on TF32 tensor cores: the key at fault */
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [training], key 'tf32': %s has no TF32 tensor cores", in->node->gpu->name);
  else
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [training], key 'precision': %s needs %s support, which %s lacks",
                 model_stack_precision_name (in->stack->precision), hw_dtype_name (dtype),
                 in->node->gpu->name);
  return FALSE;
}

/* flash-attn 2, the Triton kernel and FA-1 fail at their first call on what they do not
 * support (hardware/kernel.h hw_kernel_attn_supported): so does the run. SDPA falls back to
 * its memory-efficient kernel instead (attention_sdpa). The dtype their inputs have is the
 * compute dtype (fp8 recipes run attention in bf16: plan.c). */
static gboolean
check_attention (const ModelSimInput *in, GError **error)
{
  const ModelStack *s = in->stack;
  /* gpt_oss's attention sinks (a learned logit per head in the softmax's denominator):
   * flash-attn 2 and the Triton and v1 kernels have none; transformers' gpt_oss runs them
   * only eagerly or through kernels with sinks (vllm-flash-attn3, flex attention), and
   * GptOssPreTrainedModel does not offer SDPA (a warning in the scenario loader). Megatron
   * runs them in Transformer Engine's DotProductAttention with softmax_type "learnable"
   * (megatron/core/extensions/transformer_engine.py TEDotProductAttention, TE >= 2.8), which
   * selects its cuDNN fused-attention backend: a fused kernel with sinks, timed here as the
   * flash kernel. */
  if (in->arch->attn_sinks && s->flash_attention && !s->attention_sdpa
      && s->framework.kind != MODEL_FRAMEWORK_MEGATRON)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'attention': %s has no attention sinks, which "
                   "model '%s' needs (use eager)", hw_attn_kernel_name (s->attention_kernel),
                   in->arch->name);
      return FALSE;
    }
  if (!s->flash_attention || s->attention_sdpa
      || hw_kernel_attn_supported (s->attention_kernel, in->node->gpu, in->arch->head_dim,
                                   model_stack_compute_dtype (s), error))
    return TRUE;
  g_prefix_error (error, "group [training], key 'attention': ");
  return FALSE;
}

/* Reads the ledger of the rank that needs the most device memory into res: the figures
 * measured until an OOM (or the end) and the need of the step as planned. */
static void
fill_memory (const ModelSimInput *in, const ModelPlan *plan, const ModelLedger *ledger,
             ModelSimResult *res)
{
  const HwGpuSpec *gpu = in->node->gpu;
  res->capacity = gpu->memory_capacity;
  res->cuda_context = gpu->cuda_context;
  res->rank_peak_allocated = g_new0 (double, res->n_ranks);
  res->rank_device_used = g_new0 (double, res->n_ranks);
  for (guint r = 0; r < res->n_ranks; r++)
    {
      guint q = hw_rank_shift_index (&res->classes, r); /* the row that stands for r */
      gboolean oom = model_ledger_oom (ledger, q);
      double need = model_ledger_peak_reserved (ledger, q) + res->cuda_context;
      res->rank_peak_allocated[r] = oom ? model_ledger_oom_peak_allocated (ledger, q)
                                        : model_ledger_peak (ledger, q);
      res->rank_device_used[r] = oom ? model_ledger_oom_peak_reserved (ledger, q) + res->cuda_context
                                     : need;
      if (r == 0 || need > res->need_device)
        {
          res->worst_rank = r;
          res->need_device = need;
        }
      res->state_bytes = MAX (res->state_bytes, model_plan_state_bytes (plan, r));
    }
  res->load_bytes = model_plan_load_bytes (plan);
  guint w = hw_rank_shift_index (&res->classes, res->worst_rank);
  res->peak_allocated = res->rank_peak_allocated[res->worst_rank];
  res->device_used = res->rank_device_used[res->worst_rank];
  res->peak_reserved = res->device_used - res->cuda_context;
  res->need_allocated = model_ledger_peak (ledger, w);
  res->need_reserved = model_ledger_peak_reserved (ledger, w);
  fill_oom (ledger, w, res);
  res->peak_time = model_ledger_peak_time (ledger, w);
  res->peak_task = g_strdup (model_ledger_peak_task (ledger, w));
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      res->peak_mix[c] = model_ledger_peak_mix (ledger, w, c);
      res->category_peak[c] = model_ledger_category_peak (ledger, w, c);
    }
  res->model_states = res->category_peak[MODEL_MEM_WEIGHTS]
                      + res->category_peak[MODEL_MEM_MASTER_WEIGHTS]
                      + res->category_peak[MODEL_MEM_GRADIENTS]
                      + res->category_peak[MODEL_MEM_OPTIMIZER_STATE]
                      + res->category_peak[MODEL_MEM_LORA];
  res->load_peak = model_plan_load_peak_bytes (plan);
  res->lifetime_allocated = MAX (res->need_allocated, res->load_peak);
  res->lifetime_device = MAX (res->need_device, res->load_peak + res->cuda_context);
  res->gpu_fits = !res->oom && res->lifetime_device <= res->capacity;
  res->fits = res->gpu_fits;
}

/* Host DRAM and NVMe: the worst node's peaks against the node's capacities, and rank 0's
 * offload traffic. */
static void
fill_host (const ModelSimInput *in, const ModelPlan *plan, const ModelHostLedger *host,
           ModelSimResult *res)
{
  res->paged_spill = model_plan_paged_spill (plan);
  res->offloads = model_offload_any (&in->stack->offload) || res->paged_spill > 0;
  guint n = model_host_ledger_worst_node (host, MODEL_MEM_ON_HOST);
  res->host_node = n;
  res->host_peak = model_host_ledger_peak (host, n, MODEL_MEM_ON_HOST);
  res->host_capacity = model_host_ledger_capacity (host, MODEL_MEM_ON_HOST);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    res->host_peak_mix[c] = model_host_ledger_peak_mix (host, n, MODEL_MEM_ON_HOST, c);
  guint v = model_host_ledger_worst_node (host, MODEL_MEM_ON_NVME);
  res->nvme_peak = model_host_ledger_peak (host, v, MODEL_MEM_ON_NVME);
  res->nvme_capacity = model_host_ledger_capacity (host, MODEL_MEM_ON_NVME);
  res->host_fits = res->host_peak <= res->host_capacity;
  res->nvme_fits = res->nvme_peak <= res->nvme_capacity;
  res->fits = res->gpu_fits && res->host_fits && res->nvme_fits;
  double moved[MODEL_N_OFFLOAD_OPS];
  model_plan_offload_amounts (plan, 0, moved);
  res->offload_h2d = moved[MODEL_OFFLOAD_OP_H2D] + moved[MODEL_OFFLOAD_OP_NVME_TO_GPU]
                     + moved[MODEL_OFFLOAD_OP_PAGE_IN];
  res->offload_d2h = moved[MODEL_OFFLOAD_OP_D2H] + moved[MODEL_OFFLOAD_OP_PAGE_OUT];
  res->offload_nvme_read = moved[MODEL_OFFLOAD_OP_NVME_READ]
                           + moved[MODEL_OFFLOAD_OP_NVME_TO_GPU];
  res->offload_nvme_write = moved[MODEL_OFFLOAD_OP_NVME_WRITE];
  res->cpu_step_params = moved[MODEL_OFFLOAD_OP_CPU_STEP];
  res->state_host = MAX (res->state_host,
                         model_plan_offloaded_state_peak (plan, MODEL_MEM_ON_HOST));
  res->state_nvme = MAX (res->state_nvme,
                         model_plan_offloaded_state_peak (plan, MODEL_MEM_ON_NVME));
}

static void
fill_time (const ModelSimInput *in, const ModelPlan *plan, const ModelExecutor *exec,
           ModelSimResult *res)
{
  /* every rank answers as its class's representative (executor.h): the maxima over ranks
   * are those over the representatives, each computed once */
  const HwRankShift *classes = model_executor_shift (exec);
  for (guint i = 0; i < hw_rank_shift_n_reps (classes); i++)
    {
      guint r = hw_rank_shift_rank (classes, i);
      res->step_time = MAX (res->step_time, model_executor_rank_end (exec, r));
      res->exposed_comm = MAX (res->exposed_comm, model_executor_exposed_comm (exec, r));
      res->exposed_all_to_all = MAX (res->exposed_all_to_all,
                                     model_executor_exposed_stream (exec, r, MODEL_STREAM_EP));
      res->offload_stall = MAX (res->offload_stall, model_executor_exposed_offload (exec, r));
    }
  model_plan_ep_load (plan, &res->ep_rows_slowest, &res->ep_rows_mean, &res->ep_rows_least);
  for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
    res->time_by_kind[k] = model_executor_kind_time (exec, 0, k);
  /* the bubble of the rank whose passes are reported, as the step-time chart stacks them */
  if (model_plan_pp_degree (plan) > 1)
    res->pipeline_bubble = model_executor_pipeline_idle (exec, 0);
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->stream == MODEL_STREAM_COMPUTE)
        res->compute_busy += model_executor_task_time (exec, i);
      if (t->rank == 0 && (t->offload == MODEL_OFFLOAD_OP_PAGE_IN
                           || t->offload == MODEL_OFFLOAD_OP_PAGE_OUT))
        res->paged_time += model_executor_task_time (exec, i);
      if (t->rank == 0 && t->offload == MODEL_OFFLOAD_OP_CPU_STEP)
        res->cpu_step_time += model_executor_task_time (exec, i);
    }
  /* busy seconds summed over ranks → mean fraction of the step (a plan built for its
   * representatives holds one rank of each class, standing for n / n_built) */
  res->compute_busy *= (double) res->n_ranks / model_plan_n_built (plan);
  res->compute_busy = res->step_time > 0 ? res->compute_busy / res->n_ranks / res->step_time : 0;
  res->tokens_per_step = model_plan_tokens_per_rank (plan) * res->n_ranks;
  res->model_flops = model_plan_model_flops (plan) * res->n_ranks;
  res->hardware_flops = model_plan_hardware_flops (plan) * res->n_ranks;
  HwDtype dtype = model_stack_compute_dtype (in->stack);
  res->peak_flops = in->node->gpu->peak_flops[dtype];
}

typedef struct
{
  SimRecorder *rec;
  const HwCluster *cluster;
  guint *series; /* per resource: its series, G_MAXUINT until its first change */
  SimFluid *fluid;
  ModelExecutorTrace *trace; /* capture_load's: where the link-load changes go */
} LinkLoad;

#define NOT_A_LINK (G_MAXUINT - 1)

/* Records the load of link directions as series "links/<resource>" (B/s), change points
 * only (sim/fluid.h calls this whenever a resource's usage changes). */
static void
record_link_load (SimFluid *fluid, SimResourceId resource, double time, double usage,
                  gpointer user_data)
{
  LinkLoad *l = user_data;
  if (l->series[resource] == NOT_A_LINK)
    return;
  if (l->series[resource] == G_MAXUINT)
    {
      if (!hw_cluster_resource_is_link (l->cluster, resource))
        {
          l->series[resource] = NOT_A_LINK; /* asked once per resource */
          sim_fluid_quiet_loads (fluid, resource); /* and not called again for it */
          return;
        }
      g_autofree char *path = g_strdup_printf ("links/%s", sim_fluid_resource_name (fluid, resource));
      l->series[resource] = sim_recorder_series (l->rec, path, "B/s");
    }
  sim_recorder_set (l->rec, l->series[resource], time, usage);
}

/* A load change a trace captured (capture_load), recorded as the engine's run would have. */
static void
replay_link_load (guint resource, double time, double usage, gpointer user_data)
{
  LinkLoad *l = user_data;
  record_link_load (l->fluid, resource, time, usage, l);
}

/* The fluid's load changes on links as marks of the trace of `user_data` (a LinkLoad with
 * `trace`), in their place among the tasks' starts and ends. The changes of other resources
 * (GPU compute and HBM: most changes, two a kernel) are left out, since record_link_load
 * ignores them: kept, they made the trace of the 8-GPU bench 1 MB, grown page by page in a
 * one-shot `stepsim run` (450 of its 1,216 page faults). */
static void
capture_load (SimFluid *fluid, SimResourceId resource, double time, double usage,
              gpointer user_data)
{
  LinkLoad *l = user_data;
  if (l->series[resource] == G_MAXUINT) /* asked once per resource */
    l->series[resource] = hw_cluster_resource_is_link (l->cluster, resource) ? 0 : NOT_A_LINK;
  if (l->series[resource] != NOT_A_LINK)
    model_executor_trace_mark (l->trace, resource, time, usage);
  else
    sim_fluid_quiet_loads (fluid, resource); /* not called again for it */
}

/* ---- the process: steps one after another on one caching allocator --------------------------
 *
 * A training process runs its steps on one caching allocator that never gives memory back
 * unless cudaMalloc fails (c10/cuda/CUDACachingAllocator.cpp: DeviceCachingAllocator::malloc
 * tries get_free_block, then alloc_block, and only then release_cached_blocks and
 * alloc_block again; models/memory/allocator.h). The first step differs from the rest: the
 * optimizer's states do not exist yet and are created by its optimizer step
 * (model_plan_creation_task), after the backward has freed the activations and logits into
 * the cache, so best fit places them in those freed blocks, split when the rest is large
 * enough (get_free_block / should_split). The second step starts with the states live
 * where they were placed: a block of the first step that a state tensor split is no longer
 * whole, and a large request of the second step (the logits of a long sequence) that it
 * served may now need a new segment. So the steady state is the second step, replayed on
 * the allocator the first one left (model_ledger_continue), and the process's lifetime
 * peak is the highest over the load and every step replayed. */
typedef struct
{
  ModelLedger *first;   /* ledger of the process's first step (its figures); NULL before */
  ModelLedger *last;    /* ledger of the last step: its allocators and live model states */
  guint *handles;       /* n_ranks × MODEL_N_MEM initial handles of the plan that ran last */
  double bytes[MODEL_N_MEM]; /* B of that plan's initial allocations per rank */
  guint n_steps;
  double allocated;     /* B: the highest allocated need of any step, any rank */
  double reserved;      /* B: the highest reserved need of any step, any rank */
  gboolean oom;         /* some step ran out of memory */
  /* padded batches: the first batch that ran out of memory (PyTorch raises there), its
   * ledger (owned unless it is `first` or `last`), rank classes, index (1-based; 0: none),
   * length (tokens), and the allocated and reserved highs PyTorch reads when it raises (B) */
  ModelLedger *oom_ledger;
  HwRankShift oom_classes;
  guint oom_batch;
  guint64 oom_len;
  double oom_allocated, oom_reserved;
} Process;

static void
process_clear (Process *p)
{
  if (p->oom_ledger != p->first && p->oom_ledger != p->last)
    model_ledger_free (p->oom_ledger);
  if (p->last != p->first)
    model_ledger_free (p->last);
  model_ledger_free (p->first);
  g_free (p->handles);
  *p = (Process){ 0 };
}

static void
process_clear_free (Process *p)
{
  process_clear (p);
  g_free (p);
}

/* The initial handles of `plan` for the ledger rows of the replay's rank classes `classes`
 * (row i: representative hw_rank_shift_rank (classes, i)), rows × MODEL_N_MEM (new array). */
static guint *
initial_handles (const ModelPlan *plan, const HwRankShift *classes)
{
  guint n = hw_rank_shift_n_reps (classes);
  guint *h = g_new0 (guint, n * MODEL_N_MEM);
  for (guint i = 0; i < n; i++)
    for (guint c = 0; c < MODEL_N_MEM; c++)
      h[i * MODEL_N_MEM + c]
          = model_plan_initial_handle (plan, hw_rank_shift_rank (classes, i), c);
  return h;
}

/* Sets `ledger` (new, unused) up as the next step of `proc`: the allocators the last step
 * left, with its model states kept under `plan`'s handles (one plan's states are another's
 * when only the batch's shape differs: the same tensors; any that differ in size are
 * freed and allocated anew). */
static void
process_continue (const Process *proc, const ModelPlan *plan, const HwRankShift *classes,
                  ModelLedger *ledger)
{
  g_autofree guint *to = initial_handles (plan, classes);
  guint n = hw_rank_shift_n_reps (classes);
  for (guint i = 0; i < n * MODEL_N_MEM; i++)
    if (model_plan_initial_bytes (plan, i % MODEL_N_MEM) != proc->bytes[i % MODEL_N_MEM])
      to[i] = 0;
  model_ledger_continue (ledger, proc->last, proc->handles, to, MODEL_N_MEM);
}

/* Adds the step `ledger` (taken) ran with `plan` to `proc`. */
static void
process_add (Process *proc, const ModelPlan *plan, const HwRankShift *classes,
             ModelLedger *ledger)
{
  for (guint r = 0; r < model_ledger_n_ranks (ledger); r++)
    {
      proc->allocated = MAX (proc->allocated, model_ledger_peak (ledger, r));
      proc->reserved = MAX (proc->reserved, model_ledger_peak_reserved (ledger, r));
      proc->oom |= model_ledger_oom (ledger, r);
    }
  if (proc->last != proc->first && proc->last != proc->oom_ledger)
    model_ledger_free (proc->last);
  proc->last = ledger;
  if (proc->first == NULL)
    proc->first = ledger;
  g_free (proc->handles);
  proc->handles = initial_handles (plan, classes);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    proc->bytes[c] = model_plan_initial_bytes (plan, c);
  proc->n_steps++;
}

/* The cluster `in` describes, on `fluid`, with its stragglers and kernel jitter (`seed`). */
static HwCluster *
new_cluster (const ModelSimInput *in, SimFluid *fluid, guint32 seed)
{
  HwCluster *cluster = hw_cluster_new_with_fabric (in->node, in->n_nodes, in->fabric, fluid);
  for (guint i = 0; i < in->n_slowdowns; i++)
    hw_cluster_set_slowdown (cluster, in->slowdowns[i].rank, in->slowdowns[i].factor);
  if (in->kernel_jitter > 0)
    hw_cluster_set_jitter (cluster, in->kernel_jitter, seed);
  /* without offloading or paged states no task copies to or from the host (plan_offload.c,
   * plan_paged.c): the PCIe switches then carry no route, which rank classes can use */
  if (!model_offload_any (&in->stack->offload) && !model_stack_optimizer_is_paged (in->stack))
    hw_cluster_set_no_host_copies (cluster);
  return cluster;
}

/* The engine, fluid and cluster that every replay of one simulation (and its rank-class
 * search) runs on: built once, reset between uses (sim_fluid_reset, sim_engine_reset,
 * hw_cluster_reset), since building a 131,072-GPU cluster's million fluid resources took a
 * third of that run, once per use. Everything the cluster depends on (node, nodes, fabric,
 * stragglers, jitter, host copies: new_cluster) is the same for all the inputs one
 * model_simulate passes down (padded batches change only the stack's seq_len and
 * grad_accum). A reset machine gives the result a new one gives (test_simulate_reuse). */
typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  HwCluster *cluster;
  guint n_alone; /* replays run without the engine (model_executor_run_alone) */
  guint64 n_off_engine; /* kernels run off the engine in engine replays */
} Machine;

static void
machine_clear (Machine *m)
{
  g_clear_pointer (&m->cluster, hw_cluster_free);
  g_clear_pointer (&m->fluid, sim_fluid_free);
  g_clear_pointer (&m->engine, sim_engine_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Machine, machine_clear)

/* m's cluster for a run seeded `seed`, as new_cluster (in, a new fluid, seed) builds it with
 * the rank shift `shift`: built at the first call, reset (clock at 0, idle) at the others. */
static HwCluster *
machine_cluster (Machine *m, const ModelSimInput *in, guint32 seed, const HwRankShift *shift)
{
  if (m->cluster == NULL)
    {
      m->engine = sim_engine_new ();
      m->fluid = sim_fluid_new (m->engine);
      m->cluster = new_cluster (in, m->fluid, seed);
    }
  else
    {
      sim_fluid_reset (m->fluid);
      sim_engine_reset (m->engine);
      hw_cluster_reset (m->cluster, seed);
    }
  if (!hw_rank_shift_equal (hw_cluster_shift (m->cluster), shift))
    hw_cluster_set_shift (m->cluster, shift);
  return m->cluster;
}

/* The plan of one step of `in` under `stack` with `spill` B of paged optimizer states:
 * built for its rank classes' representatives where rank_classes.h can prove them without
 * the other ranks (every rank with all_ranks, or where it cannot), and its rank classes on
 * `in`'s cluster in *classes (found once here; the replays take them). NULL + error as
 * model_plan_new_paged(). */
static ModelPlan *
build_plan (const ModelSimInput *in, const ModelStack *stack, double spill, Machine *m,
            HwRankShift *classes, GError **error)
{
  if (in->all_ranks || in->par == NULL || in->par->degree <= 1)
    {
      *classes = hw_rank_shift_identity (in->par != NULL ? MAX (in->par->degree, 1) : 1);
      return model_plan_new_paged (in->arch, stack, in->par, spill, error);
    }
  HwRankShift identity = hw_rank_shift_identity (in->par->degree);
  HwCluster *cluster = machine_cluster (m, in, in->seed, &identity);
  return model_rank_classes_plan (in->arch, stack, in->par, spill, cluster, classes, error);
}

/* A replay's task starts and ends (models/plan/executor.h ModelExecutorTrace) and the events
 * its engine ran. A later replay of the same plan, seed and rank classes on the same machine
 * starts and ends every task at the same times whatever its ledger holds (the executor's
 * timing never reads memory; a reset machine runs as a new one: test_simulate_reuse), so it
 * runs from the trace: its memory effects in the recorded order and times, without the
 * engine and the fluid (models/plan/executor.h model_executor_run_trace). A replay that
 * records does so only from a trace that captured the fluid's load changes on links (the
 * link-load series; capture_load), as marks in their place among the starts and ends: the
 * recorder then gets every call of the engine's run in the same order. */
typedef struct
{
  ModelExecutorTrace *trace;
  guint64 events;
  gboolean filled; /* a replay recorded it */
  gboolean loads;  /* before: capture the load changes; after: they were captured */
  ModelOpTimes *op_times; /* with ModelSimInput.op_times: the recorded replay's kernel seconds
                           * per op, for a replay from the trace (which runs no kernel); owned */
} StepTrace;

/* Replays the plan once on m's engine, fluid and cluster, reset to a new one's state
 * (machine_cluster); `rec` (may be NULL) records the replay. With `st` (may be NULL) the
 * replay records its trace there, or, when `st` holds one already (with its load changes
 * when `rec` is given), runs from it (StepTrace: the caller passes one only between replays
 * of the same plan, seed and classes). With
 * `res_out` it also fills memory and time figures. With `proc` the replay is the next step
 * of that process (its first step when it has none yet), and is added to it; without, a
 * step on a fresh allocator with every model state allocated at its start. Returns the
 * step time, or < 0 (error set) if the replay did not complete. */
static double
replay (const ModelSimInput *in, const ModelPlan *plan, guint32 seed, SimRecorder *rec,
        ModelSimResult *res_out, Process *proc, Machine *m, const HwRankShift *classes,
        StepTrace *st, GError **error)
{
  guint n = model_plan_n_ranks (plan);
  g_return_val_if_fail (classes->n == n, -1);
  g_autofree guint *link_series = NULL; /* the fluid's load function's until the run ends */
  LinkLoad load = { rec, NULL, NULL, m->fluid, NULL };
  /* a recorded replay stands for the engine's run */
  gboolean from_trace = st != NULL && st->filled && (rec == NULL || st->loads);
  /* rank classes (models/plan/rank_classes.h): found with the plan (build_plan); a replay
   * from a trace leaves the machine as the recorded one left it (its shift is `classes`) */
  HwCluster *cluster = from_trace ? m->cluster : machine_cluster (m, in, seed, classes);
  SimEngine *engine = m->engine;
  SimFluid *fluid = m->fluid;
  load.cluster = cluster;
  gboolean capture = rec == NULL && st != NULL && !from_trace && st->loads;
  if (rec != NULL || capture)
    {
      guint nr = sim_fluid_n_resources (fluid);
      link_series = g_new (guint, nr);
      for (guint i = 0; i < nr; i++)
        link_series[i] = G_MAXUINT;
      load.series = link_series;
    }
  if (rec != NULL && !from_trace)
    sim_fluid_set_load_func (fluid, record_link_load, &load);
  else if (capture)
    {
      load.trace = st->trace;
      sim_fluid_set_load_func (fluid, capture_load, &load);
    }
  /* one ledger row per representative, named by its rank: rank r's figures are those of
   * row hw_rank_shift_index (classes, r) */
  guint n_reps = hw_rank_shift_n_reps (classes);
  g_autofree guint *names = g_new (guint, n_reps);
  for (guint i = 0; i < n_reps; i++)
    names[i] = hw_rank_shift_rank (classes, i);
  g_autoptr (ModelLedger) ledger = model_ledger_new_named (n_reps, names, rec);
  /* cudaMalloc can hand out the GPU's memory less the CUDA context. */
  model_ledger_set_allocator (ledger, in->node->gpu->memory_capacity - in->node->gpu->cuda_context,
                              in->stack->expandable_segments);
  if (proc != NULL && proc->last != NULL)
    process_continue (proc, plan, classes, ledger);
  g_autoptr (ModelHostLedger) host = model_host_ledger_new (
      in->n_nodes, in->node->n_gpus, in->node->host_memory,
      in->node->nvme_drives * in->node->nvme_capacity, rec);
  g_autoptr (ModelExecutor) exec = model_executor_new_classes (plan, cluster, engine, ledger,
                                                               rec, classes);
  model_executor_set_host_ledger (exec, host);
  /* kernel seconds per op (op_times.h): a replay that runs its kernels collects them, for
   * its result or for a later replay from its trace */
  g_autoptr (ModelOpTimes) op_times
    = in->op_times && !from_trace && (res_out != NULL || st != NULL) ? model_op_times_new ()
                                                                     : NULL;
  model_executor_set_op_times (exec, op_times);
  model_executor_set_first_step (exec, proc != NULL && proc->n_steps == 0);
  guint64 events;
  if (from_trace)
    {
      model_executor_run_trace (exec, st->trace, rec != NULL ? replay_link_load : NULL, &load);
      events = st->events;
    }
  else
    {
      if (st != NULL)
        model_executor_keep_trace (exec, st->trace);
      /* a single GPU's tasks one after another: the engine's result without it */
      if (!in->engine_only && model_executor_runs_alone (exec))
        {
          events = model_executor_run_alone (exec);
          m->n_alone++;
        }
      else
        {
          model_executor_set_on_engine (exec, in->engine_only);
          model_executor_start (exec);
          events = sim_engine_run (engine);
          m->n_off_engine += model_executor_n_off_engine (exec);
        }
      sim_fluid_set_load_func (fluid, NULL, NULL); /* `load` ends here, the fluid not */
      if (st != NULL)
        {
          st->events = events;
          st->filled = TRUE;
          st->loads = st->loads && rec == NULL; /* captured (capture_load) */
          if (res_out == NULL && op_times != NULL)
            {
              g_clear_pointer (&st->op_times, model_op_times_free);
              st->op_times = g_steal_pointer (&op_times);
            }
        }
    }
  if (model_executor_n_done (exec) != model_executor_n_expected (exec))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "the step did not complete: %u of %u tasks ran (a dependency cycle in "
                   "the plan)", model_executor_n_done (exec), model_executor_n_expected (exec));
      return -1;
    }
  double step = 0;
  for (guint r = 0; r < n; r++)
    step = MAX (step, model_executor_rank_end (exec, r));
  if (res_out != NULL)
    {
      res_out->n_events = events;
      res_out->classes = *classes;
      fill_memory (in, plan, ledger, res_out);
      fill_host (in, plan, host, res_out);
      fill_time (in, plan, exec, res_out);
      g_clear_pointer (&res_out->op_times, model_op_times_free);
      res_out->op_times = from_trace ? g_steal_pointer (&st->op_times)
                                     : g_steal_pointer (&op_times);
    }
  if (proc != NULL)
    process_add (proc, plan, classes, g_steal_pointer (&ledger));
  return step;
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Step-time distribution over K replays: min, median (lower of the middle two for even K)
 * and p99 (nearest rank, ⌈0.99 K⌉-th smallest). */
static void
fill_distribution (GArray *times, ModelSimResult *res)
{
  g_array_sort (times, compare_doubles);
  guint k = times->len;
  res->steps = k;
  res->step_time_min = g_array_index (times, double, 0);
  res->step_time_median = g_array_index (times, double, (k - 1) / 2);
  guint p99 = (guint) ((99 * (guint64) k + 99) / 100);
  res->step_time_p99 = g_array_index (times, double, MAX (p99, 1) - 1);
  res->step_time = res->step_time_median;
  res->tokens_per_s = res->tokens_per_step / res->step_time;
  double denom = res->step_time * res->n_ranks * res->peak_flops;
  res->mfu = res->model_flops / denom;
  res->hfu = res->hardware_flops / denom;
}

/* Paged optimizer (models/plan/plan_paged.h): how much of the states the GPU pages out.
 * UVM evicts managed pages on demand, as much as the GPU's memory needs, so the spill is the
 * least that lets the run fit, or all the states when none does. The run's steps as
 * reported (steady_step: the first step, then the steady one on its cache) of `plan` (built
 * without spill; taken) give the reserved peak R the worst rank needs; with S
 * optimizer-state bytes per rank and C = GPU memory − CUDA context available to the
 * allocator, everything else peaks at R − S and the states that do not fit are
 * model_stack_paged_spill (S, R − S, C) = R − C, rounded up to whole UVM blocks (the states
 * are one managed block, so evicting k blocks lowers the reserved peak by exactly k blocks).
 * That is a first estimate only: R was reserved against C, where the caching allocator
 * released its cache at each failed cudaMalloc, and a step with less of the states on the
 * GPU can still reserve more than its share (or fail a request with room in total). So while
 * the step with spill s does not fit, s grows by its shortfall (at least a block, doubling
 * each try) up to S. Returns the plan with the spill found, or `plan` itself when it fits
 * unspilled; NULL + error if a replay or a rebuild fails. */
static double steady_step (const ModelSimInput *in, const ModelPlan *plan, SimRecorder *rec,
                           ModelSimResult *res, Machine *m, const HwRankShift *classes,
                           GError **error);

static ModelPlan *
page_states (const ModelSimInput *in, ModelPlan *plan, Machine *m, HwRankShift *classes,
             GError **error)
{
  g_autoptr (ModelPlan) spilled = plan; /* the plan of the last spill tried */
  double state = model_plan_initial_bytes (plan, MODEL_MEM_OPTIMIZER_STATE);
  double capacity = in->node->gpu->memory_capacity - in->node->gpu->cuda_context;
  double spill = 0, step = MODEL_PAGED_GRANULE;
  for (guint k = 0;; k++)
    {
      /* the steps as the run reports them: the first step, then the steady one on its cache */
      ModelSimResult r = { .n_ranks = model_plan_n_ranks (spilled) };
      if (steady_step (in, spilled, NULL, &r, m, classes, error) < 0)
        {
          model_sim_result_clear (&r);
          return NULL;
        }
      double reserved = r.lifetime_device - in->node->gpu->cuda_context;
      gboolean fits = r.gpu_fits;
      model_sim_result_clear (&r);
      if (fits || spill >= state)
        return g_steal_pointer (&spilled);
      double next = k == 0 ? model_stack_paged_spill (state, reserved - state, capacity)
                           : spill + MAX (reserved - capacity, step);
      if (k > 0)
        step *= 2;
      next = model_plan_paged_round (MAX (next, spill + MODEL_PAGED_GRANULE), state);
      g_clear_pointer (&spilled, model_plan_free);
      spilled = build_plan (in, in->stack, next, m, classes, error);
      if (spilled == NULL)
        return NULL;
      spill = next;
    }
}

/* ---- padded batches ([training] padding = longest) ------------------------------------------
 *
 * With every micro-batch padded to its own longest sample, the step's shapes change from
 * batch to batch, and PyTorch's caching allocator never gives memory back on its own: a
 * request that no cached block fits is served by a new cudaMalloc'd segment, and cached
 * blocks are freed only when cudaMalloc fails (c10/cuda/CUDACachingAllocator.cpp, header
 * comment and DeviceCachingAllocator::malloc: get_free_block, then alloc_block, and only if
 * that fails release_available_cached_blocks / release_cached_blocks). So reserved memory
 * (torch.cuda.max_memory_reserved) ends above what one step at the longest shape reserves
 * from an empty cache: segments sized for the shorter batches stay, and blocks of the
 * longest batch's tensors split off earlier for smaller ones no longer fit.
 *
 * The lengths are not an input (the data set's length distribution is unknown to the
 * scenario), so the model replays PADDED_BATCHES micro-batches as the steps of one process
 * ("the process" above: grad_accum 1 each, so the adapters' or model's gradients and the
 * optimizer step come every batch; the first batch creates the optimizer states, the
 * others keep them where they were placed) at lengths drawn uniformly from
 * [max(1, loss_chunks), seq_len] by a GRand seeded from [run] seed, each rounded up to the
 * multiple of the length the parallelism needs (model_sim_padded_lengths), then one at
 * seq_len itself (the run's longest batch); the reported step is that process's next. Most
 * of the growth comes in the first tens of batches and it slows after (Llama-2-7B LoRA,
 * validation row M15, median of five orders: 14.34, 14.43, 14.70 GiB after 50, 100, 200
 * batches, one fresh step 13.60 GiB); it depends more on the order of the lengths than on
 * their range (floors of 1 to seq_len/2 moved M15's median by < 2 %, single orders spread
 * over ±0.4 GiB), so PADDED_SEQUENCES orders are replayed and the one whose reserved peak
 * (its demand, below) is the median is kept; the others
 * give the spread (padded_reserved_min, padded_reserved_max). A fixed, documented sample,
 * not a fit to a measurement: a run's real reserved figure depends on its data and on how
 * long it has run, which is why the spread is reported. A batch that runs out of memory
 * (padded_first_oom: nothing cached fits and no new segment does even after the cache is
 * released) is where PyTorch raises, so the run does not fit when any order runs out (the
 * data order is not the scenario's to choose, and a real run has many more batches), and
 * that order's figure is the reserved high when it raised. */
#define PADDED_BATCHES MODEL_SIM_PADDED_BATCHES
#define PADDED_SEQUENCES MODEL_SIM_PADDED_SEQUENCES

/* One micro-batch at `seq_len`, the next step of `proc`; *classes: its plan's rank classes. */
static gboolean
padded_batch (const ModelSimInput *in, guint64 seq_len, Process *proc, Machine *m,
              GError **error, HwRankShift *classes)
{
  ModelStack st = *in->stack;
  st.seq_len = seq_len;
  st.grad_accum = 1;
  ModelSimInput one = *in;
  one.stack = &st;
  g_autoptr (ModelPlan) plan = build_plan (&one, &st, 0, m, classes, error);
  return plan != NULL
         && replay (&one, plan, in->seed, NULL, NULL, proc, m, classes, NULL, error) >= 0;
}

/* Batch `i` (0-based, `len` tokens, rank classes `classes`) of `proc`, its last, is the
 * first to run out of memory: a request that no cached block served and no new segment
 * fitted even after every free cached segment was released (models/memory/allocator.h
 * "capacity": release_cached_blocks on the failed cudaMalloc). PyTorch raises there and the
 * process ends: the order's figures are then those max_memory_allocated() and
 * max_memory_reserved() read when it raises (model_ledger_oom_peak_*, never above the
 * capacity) beside the batches before (`allocated`, `reserved`). The allocator model grants
 * the request over the capacity so that the replay goes on: the process's own figures
 * (allocated, reserved) go on as the demand of the step as planned. */
static void
padded_first_oom (Process *proc, guint i, guint64 len, const HwRankShift *classes,
                  double allocated, double reserved)
{
  ModelLedger *l = proc->last;
  for (guint r = 0; r < model_ledger_n_ranks (l); r++)
    {
      gboolean oom = model_ledger_oom (l, r);
      allocated = MAX (allocated, oom ? model_ledger_oom_peak_allocated (l, r)
                                      : model_ledger_peak (l, r));
      reserved = MAX (reserved, oom ? model_ledger_oom_peak_reserved (l, r)
                                    : model_ledger_peak_reserved (l, r));
    }
  proc->oom_allocated = allocated;
  proc->oom_reserved = reserved;
  proc->oom_ledger = l;
  proc->oom_classes = *classes;
  proc->oom_batch = i + 1;
  proc->oom_len = len;
}

/* See simulate.h. Each length is drawn uniformly from [lo, seq_len] and rounded up to the
 * least multiple of the length that the parallelism needs (model_plan_seq_len_multiple:
 * seq_len is one, so the rounded length stays at most seq_len): the frameworks that split
 * the sequence pad each batch so, e.g. Megatron-LM's get_padding
 * (megatron/core/models/multimodal/context_parallel.py: tp under sequence parallelism, 2·cp
 * under context parallelism) and the collators' pad_to_multiple_of (transformers
 * DataCollatorWithPadding, torchtune padded_collate_sft). */
void
model_sim_padded_lengths (const ModelSimInput *in, guint k, guint64 *lengths)
{
  g_return_if_fail (in != NULL && in->stack != NULL && lengths != NULL);
  g_autoptr (GRand) rng = g_rand_new_with_seed (in->seed + 7919u * (k + 1));
  guint64 s = in->stack->seq_len;
  guint64 lo = MIN (s, MAX (1, (guint64) in->stack->framework.loss_chunks));
  guint64 mult = model_plan_seq_len_multiple (in->arch, in->stack, in->par);
  for (guint i = 0; i < PADDED_BATCHES; i++)
    {
      /* g_rand_double: [0, 1) → an integer in [lo, s] */
      guint64 len = lo + (guint64) (g_rand_double (rng) * (double) (s - lo + 1));
      len = (MIN (len, s) + mult - 1) / mult * mult; /* (MIN evaluates twice: no draw in it) */
      lengths[i] = MIN (len, s);
    }
  lengths[PADDED_BATCHES] = s;
}

/* Sequence `k` of padded batches, the longest last: a process (new) whose allocators hold
 * the cache the batches leave, NULL + error if a batch cannot be planned. */
static Process *
padded_sequence (const ModelSimInput *in, guint k, Machine *m, GError **error)
{
  Process *proc = g_new0 (Process, 1);
  guint64 lengths[PADDED_BATCHES + 1];
  model_sim_padded_lengths (in, k, lengths);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i <= PADDED_BATCHES; i++)
    {
      double allocated = proc->allocated, reserved = proc->reserved;
      HwRankShift classes;
      ok = padded_batch (in, lengths[i], proc, m, error, &classes);
      if (ok && proc->oom && proc->oom_batch == 0)
        padded_first_oom (proc, i, lengths[i], &classes, allocated, reserved);
    }
  if (ok)
    return proc;
  process_clear_free (proc);
  return NULL;
}

static int
compare_reserved (gconstpointer a, gconstpointer b)
{
  double x = (*(Process *const *) a)->reserved, y = (*(Process *const *) b)->reserved;
  return (x > y) - (x < y);
}

/* Replays PADDED_SEQUENCES sequences; *proc takes the median one, res the spread. */
static gboolean
padded_batches (const ModelSimInput *in, Process *proc, ModelSimResult *res, Machine *m,
                GError **error)
{
  g_autoptr (GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) process_clear_free);
  for (guint k = 0; k < PADDED_SEQUENCES; k++)
    {
      Process *p = padded_sequence (in, k, m, error);
      if (p == NULL)
        return FALSE;
      g_ptr_array_add (runs, p);
    }
  /* the first order (by k) that ran out of memory: the run's OOM, whichever order is kept */
  Process *failed = NULL;
  for (guint k = 0; k < runs->len; k++)
    {
      Process *p = g_ptr_array_index (runs, k);
      res->padded_oom_sequences += p->oom_batch > 0;
      if (failed == NULL && p->oom_batch > 0)
        failed = p;
    }
  /* stable: equal peaks keep sequence order; the kept order is the median by its demand */
  g_ptr_array_sort (runs, compare_reserved);
  res->padded_batches = PADDED_BATCHES;
  res->padded_sequences = PADDED_SEQUENCES;
  /* the spread as PyTorch reports it: an order that ran out, when it raised */
  res->padded_reserved_min = G_MAXDOUBLE;
  for (guint k = 0; k < runs->len; k++)
    {
      const Process *p = g_ptr_array_index (runs, k);
      double r = p->oom_batch > 0 ? p->oom_reserved : p->reserved;
      res->padded_reserved_min = MIN (res->padded_reserved_min, r);
      res->padded_reserved_max = MAX (res->padded_reserved_max, r);
    }
  Process *median = g_ptr_array_steal_index (runs, runs->len / 2);
  if (failed != NULL && failed != median)
    {
      /* the failing batch's ledger moves to the kept process, in place of its own */
      if (median->oom_ledger != median->first && median->oom_ledger != median->last)
        model_ledger_free (median->oom_ledger);
      median->oom_ledger = failed->oom_ledger;
      median->oom_classes = failed->oom_classes;
      median->oom_batch = failed->oom_batch;
      median->oom_len = failed->oom_len;
      median->oom_allocated = failed->oom_allocated;
      median->oom_reserved = failed->oom_reserved;
      /* failed keeps nothing that is the moved ledger */
      if (failed->first == failed->oom_ledger)
        failed->first = NULL;
      if (failed->last == failed->oom_ledger)
        failed->last = NULL;
      failed->oom_ledger = NULL;
    }
  *proc = *median;
  g_free (median);
  return TRUE;
}

/* The measured figures of every rank that ran out of memory in `ledger` (rank r's row:
 * its representative in `classes`) into res->rank_peak_allocated and rank_device_used
 * (their values when each raised), and res's OOM record and measured peaks from the worst
 * rank if it ran out, else the lowest that did. Returns that rank, or G_MAXUINT (res
 * untouched) when none did. */
static guint
take_oom (const ModelLedger *ledger, const HwRankShift *classes, ModelSimResult *res)
{
  guint w = G_MAXUINT;
  for (guint r = 0; r < res->n_ranks; r++)
    {
      guint q = hw_rank_shift_index (classes, r); /* the row that stands for r */
      if (!model_ledger_oom (ledger, q))
        continue;
      if (w == G_MAXUINT || r == res->worst_rank)
        w = r;
      res->rank_peak_allocated[r] = model_ledger_oom_peak_allocated (ledger, q);
      res->rank_device_used[r] = model_ledger_oom_peak_reserved (ledger, q) + res->cuda_context;
    }
  if (w == G_MAXUINT)
    return w;
  clear_oom (res);
  fill_oom (ledger, hw_rank_shift_index (classes, w), res);
  res->worst_rank = w;
  res->peak_allocated = res->rank_peak_allocated[w];
  res->device_used = res->rank_device_used[w];
  res->peak_reserved = res->device_used - res->cuda_context;
  return w;
}

/* A padded batch ran out of memory (padded_first_oom): the run's OOM is that one, as the first
 * step's is (fill_process), with the figures measured when it was raised. */
static void
padded_oom (const Process *proc, ModelSimResult *res)
{
  guint w = take_oom (proc->oom_ledger, &proc->oom_classes, res);
  g_assert (w != G_MAXUINT); /* padded_first_oom: some rank ran out */
  res->oom_padded_batch = proc->oom_batch;
  res->oom_padded_seq_len = proc->oom_len;
}

/* The process's figures beside the steady-state step's (res, filled from the last step):
 * its first step, and the lifetime over the load and every step (simulate.h). */
static void
fill_process (const Process *proc, const ModelPlan *plan, ModelSimResult *res)
{
  res->process_steps = proc->n_steps;
  res->first_step_states
    = model_plan_paged_spill (plan) > 0 ? MODEL_STATES_PAGED
      : model_plan_initial_bytes (plan, MODEL_MEM_OPTIMIZER_STATE) <= 0 ? MODEL_STATES_NOT_ON_GPU
      : model_plan_creation_task (plan, 0, MODEL_MEM_OPTIMIZER_STATE) == G_MAXUINT
        ? MODEL_STATES_FROM_LOAD
        : MODEL_STATES_AT_FIRST_STEP;
  for (guint r = 0; r < model_ledger_n_ranks (proc->first); r++)
    {
      res->first_step_allocated = MAX (res->first_step_allocated,
                                       model_ledger_peak (proc->first, r));
      res->first_step_reserved = MAX (res->first_step_reserved,
                                      model_ledger_peak_reserved (proc->first, r));
      res->first_step_oom |= model_ledger_oom (proc->first, r);
    }
  /* The first OOM of the process is the first step's when it has one: PyTorch raises there,
   * and the steady state is the step as planned beyond it. Measured figures are those when
   * each rank raised; the record is the worst rank's, else the lowest rank's that raised. */
  guint w = proc->first != proc->last ? take_oom (proc->first, &res->classes, res) : G_MAXUINT;
  if (w != G_MAXUINT)
    res->oom_in_first_step = TRUE;
  else if (proc->oom_ledger != NULL)
    padded_oom (proc, res);
  res->lifetime_allocated = MAX (proc->allocated, res->load_peak);
  /* every padded order is part of the run (any may be the data's): its reserved peak too */
  res->lifetime_device = MAX (MAX (proc->reserved, res->padded_reserved_max), res->load_peak)
                         + res->cuda_context;
  res->gpu_fits = !proc->oom && proc->oom_ledger == NULL && res->lifetime_device <= res->capacity;
  res->fits = res->gpu_fits && res->host_fits && res->nvme_fits;
}

/* The reported step (res takes its figures) as the last of a process: without padded
 * batches the process's first step, then this one on its allocator. `rec` records the
 * reported step, or the first step when that one runs out of memory (where the process
 * raises: replayed once more to be recorded, a deterministic replay). */
static double
steady_step (const ModelSimInput *in, const ModelPlan *plan, SimRecorder *rec,
             ModelSimResult *res, Machine *m, const HwRankShift *classes, GError **error)
{
  Process proc = { 0 };
  /* the first step's trace: the reported step is the same plan, seed and classes (with the
   * load changes when it is recorded) */
  g_autoptr (ModelExecutorTrace) trace = model_executor_trace_new ();
  StepTrace st = { trace, 0, FALSE, rec != NULL, NULL };
  gboolean ok = in->stack->pad_to_longest
                  ? padded_batches (in, &proc, res, m, error)
                  : replay (in, plan, in->seed, NULL, NULL, &proc, m, classes, &st, error) >= 0;
  gboolean record_first = ok && rec != NULL && !in->stack->pad_to_longest && proc.oom;
  if (record_first)
    {
      process_clear (&proc);
      ok = replay (in, plan, in->seed, rec, NULL, &proc, m, classes, &st, error) >= 0;
    }
  if (!ok)
    {
      process_clear (&proc);
      g_clear_pointer (&st.op_times, model_op_times_free);
      return -1;
    }
  /* (the padded batches' plans are not this one: st stays empty there) */
  double t = replay (in, plan, in->seed, record_first ? NULL : rec, res, &proc, m, classes,
                     &st, error);
  if (t >= 0)
    fill_process (&proc, plan, res);
  process_clear (&proc);
  g_clear_pointer (&st.op_times, model_op_times_free);
  return t;
}

/* The jitter seed of step k of a run seeded `seed`: step 0 the seed itself (a one-step run
 * draws as it always did), step k > 0 SplitMix64's finalizer (Steele, Lea and Flood 2014,
 * "Fast splittable pseudorandom number generators") of the pair (seed, k), its upper 32
 * bits. seed + k made the runs seeded s and s + 1 share all but one step; mixed, two seeds'
 * steps coincide only by chance (2^-32 a pair). */
static guint32
step_seed (guint32 seed, guint k)
{
  if (k == 0)
    return seed;
  guint64 z = ((guint64) seed << 32 | k) + G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  z ^= z >> 31;
  return (guint32) (z >> 32);
}

/* ---- the least GPU memory that fits (ModelSimResult.fits_from) -----------------------------
 *
 * Whether a run fits is a replay at the GPU's capacity: the caching allocator releases its
 * cached blocks and retries when cudaMalloc fails (allocator.h), and a paged optimizer spills
 * what the capacity leaves no room for (page_states), so what a run reserves depends on the
 * capacity it runs against and its demand on a short GPU is no size that fits (one step
 * demands 89.75 GiB on a 20 GiB GPU and 100.34 GiB on an 89.75 GiB one). The least capacity
 * is found by simulating at others. Fitting is taken as monotone in the capacity (more
 * memory only defers the cache's releases and shrinks the spill), so bisection finds its
 * threshold; whatever the search returns was simulated to fit. */

/* `in` simulated on GPUs of `capacity` B: whether the whole run fits there, what it demands
 * there (lifetime_device) and the request that failed (oom_requested, 0 when none). FALSE +
 * error if the simulation fails. */
static gboolean
fits_at (const ModelSimInput *in, double capacity, gboolean *fits, double *demand,
         double *request, GError **error)
{
  HwGpuSpec gpu = *in->node->gpu; /* shallow copies, borrowed for the call */
  HwNodeSpec node = *in->node;
  gpu.memory_capacity = capacity;
  node.gpu = &gpu;
  ModelSimInput probe = *in;
  probe.node = &node;
  probe.op_times = FALSE;
  probe.find_fits_from = FALSE;
  ModelSimResult r;
  if (!model_simulate (&probe, NULL, &r, error))
    return FALSE;
  *fits = r.gpu_fits;
  *demand = r.lifetime_device;
  *request = r.oom_requested;
  model_sim_result_clear (&r);
  return TRUE;
}

/* The least capacity at or above `bytes` that prints exactly (sim_units_format_up, 2
 * decimals: 0.01 GiB steps above 1 GiB), so the size a verdict prints is the size simulated:
 * the caching allocator's fragmentation can make a GPU a few MiB larger than one that holds
 * the run fall short. In whole bytes, as every byte count (/summary fits_from): the printed
 * size's whole bytes (131.13 GiB is 140799765381.12 B: 140799765381 B, printed 131.13 GiB
 * rounded up), which hold what the exact size holds (requests, reserves and the context are
 * whole bytes); `bytes` itself rounded up where it lies within a byte below the printed size
 * (it prints as that size too). */
static double
printable_up (double bytes)
{
  double whole = ceil (bytes);
  g_autofree char *text = sim_units_format_up (whole, SIM_DIM_BYTES, 2);
  double v = whole;
  /* the parse of a number printed rounded up can land an ulp below it: still that number */
  if (!sim_units_parse (text, SIM_DIM_BYTES, &v, NULL) || v < whole * (1 - 1e-12))
    return whole;
  return MAX (floor (v), whole);
}

/* The threshold above *lo (short) where `in` fits: the upper end starts at *hi, raised while
 * it is short (to the demand there, or by an eighth when the demand fits but a request
 * failed) up to the largest GPU memory a scenario may give (HW_GPU_MAX_MEMORY); then
 * bisection to MODEL_FITS_FROM_TOLERANCE. On return *hi fits and *lo is short, or *found is
 * FALSE (nothing up to HW_GPU_MAX_MEMORY fits; *lo the most tried) with *request the last
 * failing request. FALSE + error only if a simulation fails. */
static gboolean
threshold (const ModelSimInput *in, double *lo, double *hi, gboolean *found, double *request,
           GError **error)
{
  gboolean fits = FALSE;
  double demand = 0;
  *found = FALSE;
  while (!fits)
    {
      if (*hi <= *lo)
        return TRUE;
      if (!fits_at (in, *hi, &fits, &demand, request, error))
        return FALSE;
      if (!fits)
        {
          *lo = *hi;
          *hi = MIN (printable_up (MAX (demand, *hi * 1.125)), HW_GPU_MAX_MEMORY);
        }
    }
  while (*hi - *lo > *hi * MODEL_FITS_FROM_TOLERANCE)
    {
      double mid = printable_up ((*lo + *hi) / 2);
      if (mid >= *hi)
        break;
      if (!fits_at (in, mid, &fits, &demand, request, error))
        return FALSE;
      if (fits)
        *hi = mid;
      else
        *lo = mid;
    }
  *found = TRUE;
  return TRUE;
}

/* res->fits_from for `in`, whose run `res` does not fit its GPU. The search starts between
 * the capacity (short), or just below the tensors' own peak plus the context, which no
 * capacity under it holds (lifetime_device >= lifetime_allocated + context), and the demand.
 * Then, since a user reads "needs X" as "any GPU of at least X" and fragmentation can make a
 * GPU a little larger than one that holds the run fall short (S2: 127.54-128.00 GiB hold it,
 * 128.25-131.00 GiB do not, 131.50 GiB and up do), the sizes 1, 2, 4 and 8 % above the
 * answer are simulated too; where one is short the search goes on above it (at most four
 * times), and the answer it left is kept as fits_from_island. When nothing holds the run,
 * fits_from stays 0 and fits_from_short says how far the search went. */
static gboolean
find_fits_from (const ModelSimInput *in, ModelSimResult *res, GError **error)
{
  double lo = MAX (res->capacity, res->lifetime_allocated + res->cuda_context - 1);
  double hi = MIN (printable_up (MAX (res->lifetime_device, lo + 1)), HW_GPU_MAX_MEMORY);
  double request = res->oom_requested;
  gboolean found = FALSE;
  if (!threshold (in, &lo, &hi, &found, &request, error))
    return FALSE;
  if (!found)
    {
      /* not even the largest GPU memory (what was tried, or the capacity when the tensors
       * alone are over it and nothing was) */
      res->fits_from_short = MAX (MIN (lo, HW_GPU_MAX_MEMORY), res->capacity);
      res->fits_from_request_cap = request > MODEL_ALLOCATOR_MAX_REQUEST;
      return TRUE;
    }
  for (guint round = 0; round < 4; round++)
    {
      double above = 0;
      for (guint k = 0; k < 4 && above == 0; k++)
        {
          double c = MIN (printable_up (hi * (1 + 0.01 * (1 << k))), HW_GPU_MAX_MEMORY);
          gboolean fits = TRUE;
          double demand = 0, r = 0;
          if (c > hi && !fits_at (in, c, &fits, &demand, &r, error))
            return FALSE;
          if (!fits)
            above = c;
        }
      if (above == 0)
        break;
      double lo2 = above, hi2 = MIN (printable_up (above * 1.01), HW_GPU_MAX_MEMORY);
      gboolean found2 = FALSE;
      double r2 = 0;
      if (!threshold (in, &lo2, &hi2, &found2, &r2, error))
        return FALSE;
      if (!found2)
        break; /* nothing above holds it: keep the answer found */
      if (res->fits_from_island == 0)
        {
          res->fits_from_island = hi;
          res->fits_from_island_short = above;
        }
      lo = lo2;
      hi = hi2;
    }
  res->fits_from = hi;
  res->fits_from_short = lo;
  return TRUE;
}

gboolean
model_simulate (const ModelSimInput *in, SimRecorder *rec, ModelSimResult *res, GError **error)
{
  *res = (ModelSimResult){ 0 };
  if (!check_dtype (in, error) || !check_attention (in, error))
    return FALSE;
  res->n_ranks = in->par->degree;
  HwRankShift classes; /* the rank classes, found with the plan */
  g_auto (Machine) m = { 0 };
  g_autoptr (ModelPlan) plan = build_plan (in, in->stack, 0, &m, &classes, error);
  if (plan != NULL && model_stack_optimizer_is_paged (in->stack))
    plan = page_states (in, g_steal_pointer (&plan), &m, &classes, error);
  if (plan == NULL)
    return FALSE;
  /* the step's tasks over all ranks (a plan built for its representatives holds a class's
   * tasks once) */
  res->n_tasks = (guint) ((guint64) model_plan_n_tasks (plan) * res->n_ranks
                          / model_plan_n_built (plan));
  g_autoptr (GArray) times = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint k = 0; k < MAX (in->steps, 1); k++)
    {
      double t = k == 0 ? steady_step (in, plan, rec, res, &m, &classes, error)
                        : replay (in, plan, step_seed (in->seed, k), NULL, NULL, NULL, &m,
                                  &classes, NULL, error);
      if (t < 0)
        {
          model_sim_result_clear (res);
          return FALSE;
        }
      g_array_append_val (times, t);
    }
  fill_distribution (times, res);
  res->n_alone_replays = m.n_alone;
  res->n_off_engine = m.n_off_engine;
  if (in->find_fits_from && !res->gpu_fits && !find_fits_from (in, res, error))
    {
      model_sim_result_clear (res);
      return FALSE;
    }
  return TRUE;
}
