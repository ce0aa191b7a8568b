/* tests/unit/models/test_executor.c — replaying a plan: step time and memory timeline
 * against closed forms. */
#include "config.h"

#include <math.h>
#include "hardware/cluster.h"
#include "models/executor.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/tiny.h"

typedef struct
{
  double step_time;
  double act_peak, grad_peak, ws_peak, total_peak;
  double end_total;
  guint n_done, n_tasks;
} Outcome;

static Outcome
replay (const ModelArch *a, const ModelStack *s, guint n_ranks, double *sum_alone)
{
  Outcome o = { 0 };
  g_autoptr (ModelPlan) plan = model_plan_new (a, s, n_ranks, NULL);
  g_assert (plan != NULL);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = n_ranks, .host_memory = 1e12 };
  g_autoptr (HwCluster) cluster = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  g_autoptr (ModelLedger) ledger = model_ledger_new (n_ranks, NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  model_executor_start (exec);
  sim_engine_run (engine);
  o.n_done = model_executor_n_done (exec);
  o.n_tasks = model_plan_n_tasks (plan);
  o.step_time = model_executor_rank_end (exec, 0);
  o.act_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_ACTIVATIONS);
  o.grad_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_GRADIENTS);
  o.ws_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_WORKSPACE);
  o.total_peak = model_ledger_peak (ledger, 0);
  o.end_total = model_ledger_current_total (ledger, 0);
  if (sum_alone != NULL)
    {
      /* One stream, one task at a time, kernels back to back, nothing else on the GPU:
       * the step is the sum of every kernel's time alone, latency + max(F/C, M/H). */
      *sum_alone = 0;
      for (guint i = 0; i < model_plan_n_tasks (plan); i++)
        {
          const ModelTask *t = model_plan_task (plan, i);
          for (guint k = 0; t->rank == 0 && k < t->n_kernels; k++)
            {
              const ModelKernel *kk = model_plan_kernel (plan, t->first_kernel + k);
              *sum_alone += hw_cluster_kernel_time_alone (cluster, 0, kk->dtype, kk->op.flops,
                                                          kk->op.bytes);
            }
        }
    }
  return o;
}

static void
test_step_time_is_sum_of_kernels (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  double expected;
  Outcome o = replay (a, &s, 1, &expected);
  CU_ASSERT_EQUAL (o.n_done, o.n_tasks);
  STEPSIM_ASSERT_REL (o.step_time, expected, 1e-9);
}

static ModelCostParams
params (const ModelStack *s)
{
  return (ModelCostParams){ s->micro_batch, s->seq_len, model_stack_activation_bytes (s),
                            model_stack_weight_bytes (s), s->flash_attention, s->dropout };
}

/* Without checkpointing every layer's saved activations coexist at the end of the forward:
 * peak = embedding + L × layer + head activations. */
static void
test_activation_peak_no_checkpointing (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  ModelCostParams cp = params (&s);
  Outcome o = replay (a, &s, 1, NULL);
  double expected = model_cost_embedding (a, &cp).act_saved
                    + 4 * model_cost_layer (a, &cp).act_saved + model_cost_head (a, &cp).act_saved;
  STEPSIM_ASSERT_REL (o.act_peak, expected, 1e-12);
}

/* Full checkpointing keeps L layer inputs; the largest moment is either the head's forward
 * (inputs + head activations) or the last layer's recompute (inputs + one layer's
 * activations, the head's already freed): embedding + L × e·sbh + max(head, layer). */
static void
test_activation_peak_full_checkpointing (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  ModelCostParams cp = params (&s);
  Outcome o = replay (a, &s, 1, NULL);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  double expected = model_cost_embedding (a, &cp).act_saved + 4 * layer.act_checkpoint
                    + MAX (model_cost_head (a, &cp).act_saved, layer.act_saved);
  STEPSIM_ASSERT_REL (o.act_peak, expected, 1e-12);
  CU_ASSERT (layer.act_checkpoint < layer.act_saved);
}

/* Gradients reach Ψ × gradient bytes and are released by the optimizer step; at the end
 * only the persistent state (weights, master, optimizer) remains. */
static void
test_gradients_and_end_state (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 3;
  Outcome o = replay (a, &s, 1, NULL);
  double psi = (double) model_arch_n_params (a);
  STEPSIM_ASSERT_REL (o.grad_peak, psi * model_stack_gradient_bytes (&s), 1e-12);
  STEPSIM_ASSERT_REL (o.end_total, psi * (model_stack_state_bytes (&s)
                                          - model_stack_gradient_bytes (&s)), 1e-12);
}

/* Checkpointing trades memory for time: lower activation peak, longer step. */
static void
test_checkpointing_tradeoff (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome none = replay (a, &s, 1, NULL);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  Outcome full = replay (a, &s, 1, NULL);
  CU_ASSERT (full.act_peak < none.act_peak);
  CU_ASSERT (full.step_time > none.step_time);
}

/* Ranks without communication use disjoint resources: each takes the single-GPU time. */
static void
test_ranks_independent_and_deterministic (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome one = replay (a, &s, 1, NULL);
  Outcome two = replay (a, &s, 2, NULL);
  Outcome again = replay (a, &s, 1, NULL);
  CU_ASSERT_EQUAL (one.step_time, two.step_time);
  CU_ASSERT_EQUAL (one.total_peak, two.total_peak);
  CU_ASSERT_EQUAL (one.step_time, again.step_time);
  CU_ASSERT_EQUAL (one.total_peak, again.total_peak);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "step time = sum of kernel times alone", test_step_time_is_sum_of_kernels },
    { "activation peak without checkpointing", test_activation_peak_no_checkpointing },
    { "activation peak with full checkpointing", test_activation_peak_full_checkpointing },
    { "gradients and end state", test_gradients_and_end_state },
    { "checkpointing trades memory for time", test_checkpointing_tradeoff },
    { "independent ranks, deterministic", test_ranks_independent_and_deterministic },
  };
  return STEPSIM_RUN_TESTS ("models/executor", tests);
}
