/* tests/unit/cli/test_plan_memo.c — the plan's memos of passes and redistributions (plan.h
 * model_plan_set_memo, issue 17) change nothing: every shipped scenario (scenarios/, the
 * llama bench/ cases and tests/validation/) is planned with the memos on and off, and the two
 * plans are the same field by field — every task (its label by text), the kernels,
 * dependencies and memory effects it names, the allocations and their tensors, every
 * collective (its members by value), and every rank's state bytes, initial buffers and
 * their creation tasks. Both the plan a simulation builds (model_rank_classes_plan: the
 * representatives) and, up to 64 GPUs, the full plan (model_plan_new). The memos include
 * the micro-batches copied from a template (plan_step.c); the test checks some plans use it. */
#include "config.h"

#include <string.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "models/plan/rank_classes.h"
#include "sim/fluid.h"
#include "tests/testlib.h"

/* Whether allocations `ha` of a and `hb` of b are the same (both 0: none). */
static gboolean
same_allocation (const ModelPlan *a, guint ha, const ModelPlan *b, guint hb)
{
  if (ha != hb)
    return FALSE;
  if (ha == 0)
    return TRUE;
  const ModelMemEffect *x = model_plan_allocation (a, ha), *y = model_plan_allocation (b, hb);
  if (x->category != y->category || x->when != y->when || x->bytes != y->bytes
      || x->handle != y->handle || x->n_tensors != y->n_tensors || x->where != y->where
      || x->first_tensor != y->first_tensor)
    return FALSE;
  if (x->n_tensors > 1)
    return memcmp (model_plan_tensor_sizes (a, x->first_tensor),
                   model_plan_tensor_sizes (b, y->first_tensor),
                   x->n_tensors * sizeof (double))
           == 0;
  return TRUE;
}

static gboolean
same_task (const ModelPlan *a, const ModelPlan *b, guint id)
{
  const ModelTask *s = model_plan_task (a, id), *t = model_plan_task (b, id);
  if (s->id != t->id || s->rank != t->rank || s->stream != t->stream || s->kind != t->kind
      || strcmp (s->label, t->label) != 0 || s->layer != t->layer
      || s->micro_batch != t->micro_batch || s->first_kernel != t->first_kernel
      || s->n_kernels != t->n_kernels || s->first_dep != t->first_dep
      || s->n_deps != t->n_deps || s->first_effect != t->first_effect
      || s->n_effects != t->n_effects || s->flops != t->flops || s->bytes != t->bytes
      || s->collective != t->collective || s->offload != t->offload
      || s->amount != t->amount || s->host_sync != t->host_sync)
    return FALSE;
  for (guint k = 0; k < s->n_kernels; k++)
    {
      const ModelKernel *x = model_plan_kernel (a, s->first_kernel + k);
      const ModelKernel *y = model_plan_kernel (b, t->first_kernel + k);
      if (!model_kernel_equal (x, y) || x->op.host_ops != y->op.host_ops
          || x->op.addmm != y->op.addmm)
        return FALSE;
    }
  for (guint d = 0; d < s->n_deps; d++)
    if (model_plan_dep (a, s->first_dep + d) != model_plan_dep (b, t->first_dep + d))
      return FALSE;
  for (guint e = 0; e < s->n_effects; e++)
    {
      const ModelMemEffect *x = model_plan_effect (a, s->first_effect + e);
      const ModelMemEffect *y = model_plan_effect (b, t->first_effect + e);
      if (x->category != y->category || x->when != y->when || x->bytes != y->bytes
          || x->handle != y->handle || x->where != y->where
          || !same_allocation (a, x->handle, b, y->handle))
        return FALSE;
    }
  return TRUE;
}

/* Plans a and b are the same (see the top of the file); prints where they differ. */
static gboolean
same_plan (const char *rel, const ModelPlan *a, const ModelPlan *b)
{
  if (model_plan_n_tasks (a) != model_plan_n_tasks (b)
      || model_plan_n_collectives (a) != model_plan_n_collectives (b)
      || model_plan_n_ranks (a) != model_plan_n_ranks (b)
      || model_plan_hardware_flops (a) != model_plan_hardware_flops (b)
      || model_plan_model_flops (a) != model_plan_model_flops (b))
    {
      g_printerr ("%s: the plans' sizes or FLOPs differ\n", rel);
      return FALSE;
    }
  for (guint id = 0; id < model_plan_n_tasks (a); id++)
    if (!same_task (a, b, id))
      {
        g_printerr ("%s: task %u (%s) differs\n", rel, id, model_plan_task (a, id)->label);
        return FALSE;
      }
  for (guint i = 0; i < model_plan_n_collectives (a); i++)
    {
      const ModelCollective *x = model_plan_collective (a, i), *y = model_plan_collective (b, i);
      if (x->kind != y->kind || x->algorithm != y->algorithm || x->bytes != y->bytes
          || x->n_ranks != y->n_ranks || x->dims != y->dims || x->ub_sms != y->ub_sms
          || memcmp (x->ranks, y->ranks, x->n_ranks * sizeof (guint)) != 0)
        {
          g_printerr ("%s: collective %u differs\n", rel, i);
          return FALSE;
        }
    }
  for (guint r = 0; r < model_plan_n_ranks (a); r++)
    {
      if (model_plan_state_bytes (a, r) != model_plan_state_bytes (b, r))
        return FALSE;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        if (model_plan_creation_task (a, r, c) != model_plan_creation_task (b, r, c)
            || !same_allocation (a, model_plan_initial_handle (a, r, c), b,
                                 model_plan_initial_handle (b, r, c)))
          {
            g_printerr ("%s: rank %u's initial %u differs\n", rel, r, c);
            return FALSE;
          }
    }
  return TRUE;
}

/* Plans `rel` with the memos on and off (model_rank_classes_plan, and model_plan_new up to
 * 64 GPUs) and compares them; leaves the memos on. Returns the micro-batches the plan with
 * the memos on copied (model_plan_n_copied_micro_batches; none with them off). */
static guint
check_scenario_with (const char *rel, const char *const *sets)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  if (sc == NULL)
    g_printerr ("%s: %s\n", rel, e->message);
  CU_ASSERT_FATAL (sc != NULL);
  ModelSimInput in = cli_scenario_sim_input (sc);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new_with_fabric (in.node, in.n_nodes, in.fabric,
                                                              fluid);
  ModelPlan *plans[2][2] = { { NULL } };
  guint n_gpus = in.n_nodes * in.node->n_gpus;
  for (guint on = 0; on < 2; on++)
    {
      model_plan_set_memo (on);
      HwRankShift sh = { 0 };
      plans[on][0] = model_rank_classes_plan (in.arch, in.stack, in.par, 0, cluster, &sh, NULL);
      if (n_gpus <= 64)
        plans[on][1] = model_plan_new (in.arch, in.stack, in.par, NULL);
    }
  model_plan_set_memo (TRUE);
  guint copied = plans[1][0] != NULL ? model_plan_n_copied_micro_batches (plans[1][0]) : 0;
  for (guint k = 0; k < 2; k++)
    {
      if (plans[0][k] != NULL)
        CU_ASSERT_EQUAL (model_plan_n_copied_micro_batches (plans[0][k]), 0);
      /* a scenario whose plan is refused is refused either way */
      CU_ASSERT ((plans[0][k] == NULL) == (plans[1][k] == NULL));
      if (plans[0][k] != NULL && plans[1][k] != NULL)
        CU_ASSERT (same_plan (rel, plans[1][k], plans[0][k]));
      model_plan_free (plans[0][k]);
      model_plan_free (plans[1][k]);
    }
  return copied;
}

static guint
check_scenario (const char *rel)
{
  return check_scenario_with (rel, NULL);
}

/* Every .ini of `dir` (relative to the source tree) whose name starts with `prefix`; adds
 * to *copying the scenarios whose plan copied micro-batches. Returns the scenarios. */
static guint
check_dir (const char *dir, const char *prefix, guint *copying)
{
  g_autofree char *abs = stepsim_test_srcpath (dir);
  g_autoptr (GDir) d = g_dir_open (abs, 0, NULL);
  CU_ASSERT_FATAL (d != NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".ini") && g_str_has_prefix (n, prefix))
      g_ptr_array_add (names, g_strdup_printf ("%s/%s", dir, n));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0); /* fixed order */
  for (guint i = 0; i < names->len; i++)
    *copying += check_scenario (g_ptr_array_index (names, i)) > 0;
  return names->len;
}

/* The scenarios, bench cases and validation cases; the 8-GPU bench copies micro-batches 2 … 6
 * of GA 8 (one rank built), and so do some other cases (the comparison is not vacuous). */
static void
test_scenarios (void)
{
  guint copying = 0;
  CU_ASSERT (check_dir ("scenarios", "", &copying) >= 10);
  CU_ASSERT (check_dir ("bench", "llama-", &copying) >= 3);
  CU_ASSERT (copying >= 5);
  g_printerr ("(%u scenarios and bench cases copy micro-batches) ", copying);
  CU_ASSERT (check_scenario ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini") >= 5);
}

static void
test_validation (void)
{
  guint copying = 0;
  CU_ASSERT (check_dir ("tests/validation", "", &copying) >= 40);
  g_printerr ("(%u validation cases copy micro-batches) ", copying);
}

/* The 8-GPU bench case under other data-parallel modes, checkpointing, precisions, loss
 * heads, GA 4 (one copied micro-batch) and 5, two nodes, a tied-embedding model (which
 * copies none) and FSDP's end units (torchtitan; hybrid sharding): each set of --set options
 * planned with the memos on and off. */
static void
test_variants (void)
{
  static const char *const variants[][4] = {
    { "parallel.data_parallel=ddp", NULL },
    { "parallel.data_parallel=zero1", "training.grad_accum=5", NULL },
    { "parallel.data_parallel=zero2", "training.checkpointing=selective", NULL },
    { "parallel.data_parallel=fsdp_full_shard", "training.checkpointing=none", NULL },
    { "parallel.data_parallel=fsdp_hybrid_shard", "cluster.nodes=2", NULL },
    { "training.grad_accum=4", "training.precision=fp16_mixed", NULL },
    { "training.loss=chunked", "training.loss_chunks=8", "training.precision=bf16", NULL },
    { "parallel.data_parallel=zero3", "training.optimizer=adamw_8bit", NULL },
    { "model.hf_config=llama-3.2-1b", "training.grad_accum=6", NULL },
    { "training.framework=torchtitan", "parallel.data_parallel=fsdp_full_shard", NULL },
    { "parallel.data_parallel=fsdp_hybrid_shard", "training.fsdp_end_units=true",
      "cluster.nodes=2", NULL },
  };
  guint copying = 0;
  for (guint i = 0; i < G_N_ELEMENTS (variants); i++)
    copying += check_scenario_with ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini", variants[i]) > 0;
  CU_ASSERT (copying >= 7);
  g_printerr ("(%u of %u settings copy micro-batches) ", copying,
              (guint) G_N_ELEMENTS (variants));
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "memoized = derived: scenarios and bench cases", test_scenarios },
    { "memoized = derived: validation cases", test_validation },
    { "memoized = derived: the 8-GPU bench under other settings", test_variants },
  };
  return STEPSIM_RUN_TESTS ("cli/plan_memo", tests);
}
