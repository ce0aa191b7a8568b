/* cli/run.c — one scenario, simulated end to end; see run.h. */
#include "config.h"
#include "cli/run.h"

#include "hardware/cluster.h"
#include "models/executor.h"
#include "sim/engine.h"
#include "sim/fluid.h"

const char *const *
cli_run_kind_names (void)
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
cli_run_stream_names (void)
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

void
cli_run_result_clear (CliRunResult *res)
{
  g_clear_pointer (&res->peak_task, g_free);
}

static gboolean
check_single_gpu (const CliScenario *sc, GError **error)
{
  guint n = sc->node.n_gpus * sc->n_nodes;
  if (n == 1)
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [cluster]: %u GPUs requested, but multi-GPU plans (data, tensor, "
               "pipeline parallelism) are not modelled yet; set gpus_per_node = 1 and "
               "nodes = 1", n);
  return FALSE;
}

/* Reads the ledger of the rank with the highest peak into res. */
static void
fill_memory (const CliScenario *sc, const ModelLedger *ledger, CliRunResult *res)
{
  const HwGpuSpec *gpu = sc->node.gpu;
  res->capacity = gpu->memory_capacity;
  res->cuda_context = gpu->cuda_context;
  for (guint r = 0; r < res->n_ranks; r++)
    if (r == 0 || model_ledger_peak (ledger, r) > res->peak_allocated)
      {
        res->worst_rank = r;
        res->peak_allocated = model_ledger_peak (ledger, r);
      }
  guint w = res->worst_rank;
  res->peak_reserved = res->peak_allocated;
  res->device_used = res->peak_reserved + res->cuda_context;
  res->peak_time = model_ledger_peak_time (ledger, w);
  res->peak_task = g_strdup (model_ledger_peak_task (ledger, w));
  for (guint c = 0; c < MODEL_N_MEM; c++)
    res->peak_mix[c] = model_ledger_peak_mix (ledger, w, c);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    res->category_peak[c] = model_ledger_category_peak (ledger, w, c);
  res->model_states = res->category_peak[MODEL_MEM_WEIGHTS]
                      + res->category_peak[MODEL_MEM_MASTER_WEIGHTS]
                      + res->category_peak[MODEL_MEM_GRADIENTS]
                      + res->category_peak[MODEL_MEM_OPTIMIZER_STATE];
  res->fits = res->device_used <= res->capacity;
}

static void
fill_time (const CliScenario *sc, const ModelPlan *plan, const ModelExecutor *exec,
           CliRunResult *res)
{
  for (guint r = 0; r < res->n_ranks; r++)
    res->step_time = MAX (res->step_time, model_executor_rank_end (exec, r));
  for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
    res->time_by_kind[k] = model_executor_kind_time (exec, 0, k);
  res->tokens_per_step = model_plan_tokens_per_rank (plan) * res->n_ranks;
  res->tokens_per_s = res->tokens_per_step / res->step_time;
  res->model_flops = model_plan_model_flops (plan) * res->n_ranks;
  res->hardware_flops = model_plan_hardware_flops (plan) * res->n_ranks;
  HwDtype dtype = model_stack_compute_dtype (&sc->stack);
  res->peak_flops = sc->node.gpu->peak_flops[dtype];
  if (res->peak_flops <= 0)
    res->peak_flops = sc->node.gpu->peak_flops[HW_DTYPE_FP32];
  double denom = res->step_time * res->n_ranks * res->peak_flops;
  res->mfu = res->model_flops / denom;
  res->hfu = res->hardware_flops / denom;
}

/* A mixed-precision stack needs its 16-bit format on the GPU (V100 has no bf16). */
static gboolean
check_dtype (const CliScenario *sc, GError **error)
{
  HwDtype dtype = model_stack_compute_dtype (&sc->stack);
  if (sc->node.gpu->peak_flops[dtype] > 0)
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [training], key 'precision': %s needs %s support, which %s lacks",
               model_stack_precision_name (sc->stack.precision), hw_dtype_name (dtype),
               sc->node.gpu->name);
  return FALSE;
}

gboolean
cli_run_simulate (const CliScenario *sc, SimRecorder *rec, CliRunResult *res, GError **error)
{
  *res = (CliRunResult){ 0 };
  if (!check_single_gpu (sc, error) || !check_dtype (sc, error))
    return FALSE;
  res->n_ranks = sc->node.n_gpus * sc->n_nodes;
  g_autoptr (ModelPlan) plan = model_plan_new (sc->arch, &sc->stack, res->n_ranks, error);
  if (plan == NULL)
    return FALSE;
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new (&sc->node, sc->n_nodes, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (res->n_ranks, rec);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, rec);
  model_executor_start (exec);
  res->n_events = sim_engine_run (engine);
  res->n_tasks = model_plan_n_tasks (plan);
  if (model_executor_n_done (exec) != res->n_tasks)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "the step did not complete: %u of %u tasks ran (a dependency cycle in "
                   "the plan)", model_executor_n_done (exec), res->n_tasks);
      return FALSE;
    }
  fill_memory (sc, ledger, res);
  fill_time (sc, plan, exec, res);
  return TRUE;
}
