/* tests/unit/models/test_plan_ep_cp.c — context parallelism with a mixture of experts
 * (models/plan/plan_ep.c with plan_cp.c), as Megatron-LM runs it: the MoE layer of a cp rank
 * routes its own s/cp tokens (× micro-batch) over an expert grid carved from the stage's
 * dp·cp·tp ranks (parallel_state.py expert_decoder_rank_generator, cp = 1 in it), so an EP
 * group may span cp ranks; expert gradients reduce over expert-dp, dense ones over dp·cp;
 * the attention's cp ring is the dense model's. Each oracle is a closed form or the cp = 1
 * plan with half the sequence. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "hardware/node_catalog.h"
#include "models/plan/executor.h"
#include "models/plan/plan.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/moe_fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/refusal.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

static ModelParallel
moe_par (guint gpus, guint cp, guint ep)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.cp = cp;
  par.cp_variant = MODEL_CP_RING;
  par.ep = ep;
  return par;
}



static ModelPlan *
plan_or_fail (const ModelArch *a, const ModelStack *st, const ModelParallel *par)
{
  g_autoptr (GError) error = NULL;
  ModelPlan *p = model_plan_new (a, st, par, &error);
  if (p == NULL)
    g_printerr ("\n  %s\n", error->message);
  return p;
}

/* Rows of the expert GEMMs. A cp rank's router scores T = b·s/cp tokens (Megatron: the MoE
 * layer's hidden states on a cp rank are [s/cp, b, h], get_batch_on_this_cp_rank), sends
 * T·k copies, and under uniform routing each of an EP rank's L = E/ep local experts gets
 * ep · T·k/E rows (model_ep_dispatch: group · send_rows / E). Tiny MoE, 8 GPUs, ep 4,
 * s = 1024, cp 2: T = 512, 4 · 512 · 2 / 8 = 512 rows; the plan splits the grouped GEMM into
 * the hot expert's (1 expert) and the others' (L − 1 = 1), both at 512 rows here, so rank 0's
 * first forward holds two mlp_gate GEMMs of m = 512 (as many mlp_up, mlp_down). At cp 1
 * with s = 512 the same T and so the same ops, FLOPs and bytes; at cp 1 with s = 1024,
 * twice the rows. A cp that did not divide the router's tokens fails all three. */
static void
test_expert_rows_per_cp_rank (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack s2 = bf16_stack (1024), s1 = bf16_stack (512);
  ModelParallel cp2 = moe_par (8, 2, 4), cp1 = moe_par (8, 1, 4);
  g_autoptr (ModelPlan) p = plan_or_fail (a, &s2, &cp2);
  g_autoptr (ModelPlan) q = plan_or_fail (a, &s1, &cp1);
  g_autoptr (ModelPlan) whole = plan_or_fail (a, &s2, &cp1);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  CU_ASSERT_PTR_NOT_NULL_FATAL (whole);
  const char *const names[] = { "mlp_gate", "mlp_up", "mlp_down" };
  for (guint n = 0; n < G_N_ELEMENTS (names); n++)
    {
      const ModelOp *op[8], *oq[8], *ow[8];
      guint k = plan_scan_kernels (p, "fwd L0 mb0", names[n], op, 8);
      CU_ASSERT_EQUAL_FATAL (k, 2);
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (q, "fwd L0 mb0", names[n], oq, 8), 2);
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (whole, "fwd L0 mb0", names[n], ow, 8), 2);
      for (guint i = 0; i < k; i++)
        {
          CU_ASSERT_DOUBLE_EQUAL (op[i]->shape.m, 512, 0);
          CU_ASSERT_DOUBLE_EQUAL (op[i]->shape.batch, 1, 0);
          CU_ASSERT_DOUBLE_EQUAL (op[i]->flops, oq[i]->flops, 0);
          CU_ASSERT_DOUBLE_EQUAL (op[i]->bytes, oq[i]->bytes, 0);
          CU_ASSERT_DOUBLE_EQUAL (ow[i]->shape.m, 1024, 0);
        }
    }
}

/* The dispatch all-to-all's per-rank send buffer is the rank's routed copies × h × e =
 * T·k·h·e (model_ep_dispatch a2a_bytes; hardware/collective.h's size): with s = 1024 at
 * cp 2, T = 512 and 512 · 2 · 256 · 2 B = 524,288 B, half of cp 1's at the same s; the
 * combine's is the same. Rank 0's forward of layer 0 issues one of each. */
static void
test_dispatch_bytes_halve (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (1024);
  double bytes[2] = { 0, 0 };
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = moe_par (8, c + 1, 4);
      g_autoptr (ModelPlan) p = plan_or_fail (a, &st, &par);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint n = 0;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (t->rank == 0 && t->layer == 0 && t->micro_batch == 0
              && strstr (t->label, "dispatch all-to-all (ep)") != NULL && n++ == 0)
            bytes[c] = t->bytes;
        }
      CU_ASSERT (n >= 1);
    }
  CU_ASSERT_DOUBLE_EQUAL (bytes[1], 512.0 * 2 * 256 * 2, 0);
  CU_ASSERT_DOUBLE_EQUAL (bytes[0], 2 * bytes[1], 0);
}

/* The groups on 8 GPUs, tp 1 × cp 2 × dp 4, ep 4, DDP. Dense ranks by Megatron's order
 * tp-cp-ep-dp-pp (innermost first): rank = cp + 2·dp, so rank 0's cp ring is {0, 1} and its
 * dense gradients all-reduce over dp·cp, all 8 (the dense grad buffers' data_parallel_group
 * with_context_parallel). The expert generator (tp = etp 1, ep 4, dp = edp 8 / 4 = 2,
 * cp = 1): rank = ep + 4·edp, so the EP group of rank 0 is {0, 1, 2, 3} — cp ranks 0 and 1
 * of dp 0 and 1 — and its expert-dp group, _EXPERT_DATA_PARALLEL_GROUP, is {0, 4}; each of
 * the 4 layers all-reduces there its 8 · 3 · 256 · 688 / 4 expert parameters' gradients,
 * 2 B each (bf16 mixed: gradients in the parameters' dtype). */
static void
test_groups_over_cp (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (1024);
  ModelParallel par = moe_par (8, 2, 4);
  g_autoptr (ModelPlan) p = plan_or_fail (a, &st, &par);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint n_a2a = 0, n_ring = 0, n_bucket = 0, n_expert = 0;
  double expert = 0;
  gboolean ok = TRUE;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_COLLECTIVE)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      if (strstr (t->label, "dispatch all-to-all (ep)") != NULL)
        {
          n_a2a++;
          ok = ok && col->n_ranks == 4;
          for (guint i = 0; ok && i < 4; i++)
            ok = col->ranks[i] == i;
        }
      else if (strstr (t->label, "ring K/V") != NULL)
        {
          n_ring++;
          ok = ok && col->n_ranks == 2 && col->ranks[0] == 0 && col->ranks[1] == 1;
        }
      else if (strstr (t->label, "grads bucket") != NULL)
        {
          n_bucket++;
          ok = ok && col->n_ranks == 8;
        }
      else if (strstr (t->label, "expert grads") != NULL)
        {
          n_expert++;
          ok = ok && col->kind == HW_COLLECTIVE_ALL_REDUCE && col->n_ranks == 2
               && col->ranks[0] == 0 && col->ranks[1] == 4;
          expert += t->bytes;
        }
    }
  CU_ASSERT (ok);
  CU_ASSERT (n_a2a > 0 && n_ring > 0 && n_bucket > 0);
  CU_ASSERT_EQUAL (n_expert, 4);
  STEPSIM_ASSERT_REL (expert, 4 * 8 * 3 * 256 * 688 / 4.0 * model_stack_gradient_bytes (&st),
                      1e-12);
}

/* Memory: every tensor a FlashAttention layer saves is per token, so a cp rank holding
 * s/cp tokens saves what one rank at cp 1 with s/cp tokens saves (test_plan_cp.c); a MoE
 * layer's too, its router, permutation and expert tensors being per routed copy of the
 * rank's tokens. With a skewed router (load_imbalance 2, ep 4: the hot expert's rank
 * holds more rows, PlanEp.row_extra) the same: rank 0's layer-0 activations at cp 2,
 * s = 1024 equal those at cp 1, s = 512, and are half of cp 1's at s = 1024. Sizes are
 * powers of two times the tiny dims: exact to rounding. */
static void
test_activations_per_cp_rank (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack s2 = bf16_stack (1024), s1 = bf16_stack (512);
  ModelParallel cp2 = moe_par (8, 2, 4), cp1 = moe_par (8, 1, 4);
  cp2.moe_imbalance = cp1.moe_imbalance = 2;
  g_autoptr (ModelPlan) p = plan_or_fail (a, &s2, &cp2);
  g_autoptr (ModelPlan) q = plan_or_fail (a, &s1, &cp1);
  g_autoptr (ModelPlan) whole = plan_or_fail (a, &s2, &cp1);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  CU_ASSERT_PTR_NOT_NULL_FATAL (whole);
  double act = plan_scan_layer_activations (p);
  CU_ASSERT (act > 0);
  STEPSIM_ASSERT_REL (act, plan_scan_layer_activations (q), 1e-12);
  STEPSIM_ASSERT_REL (2 * act, plan_scan_layer_activations (whole), 1e-12);
}

/* A MoE model with cp 2 runs end to end: Mixtral 8x7B cut to 2 layers, cp 2 × ep 4 on one
 * DGX H100 (dp 4), s = 4096, replayed to the last task; the step is positive and finite,
 * and rank 0's compute FLOPs lie between cp 1's at s = 2048 (the same token share: equal
 * GEMMs) and cp 1's at s = 4096 (twice the tokens). */
static double
replay_flops (const ModelPlan *plan, double *step)
{
  const HwNodeSpec *node = hw_catalog_node ("DGX-H100", NULL);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new (node, 1, fluid);
  g_autoptr (ModelLedger) ledger = model_ledger_new (model_plan_n_ranks (plan), NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  model_executor_start (exec);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (model_executor_n_done (exec), model_plan_n_tasks (plan));
  *step = model_executor_rank_end (exec, 0);
  double flops = 0;
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->rank == 0 && t->stream == MODEL_STREAM_COMPUTE)
        flops += t->flops;
    }
  return flops;
}

/* `model` cut to 2 layers: cp 2 × ep 4 against cp 1 at s = 2048 and 4096 (see above). */
static void
check_cp_runs (const char *model)
{
  g_autoptr (ModelArch) a = shipped (model);
  a->n_layers = 2;
  ModelStack s4 = bf16_stack (4096), s2 = bf16_stack (2048);
  ModelParallel cp2 = moe_par (8, 2, 4), cp1 = moe_par (8, 1, 4);
  g_autoptr (ModelPlan) p = plan_or_fail (a, &s4, &cp2);
  g_autoptr (ModelPlan) half = plan_or_fail (a, &s2, &cp1);
  g_autoptr (ModelPlan) whole = plan_or_fail (a, &s4, &cp1);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (half);
  CU_ASSERT_PTR_NOT_NULL_FATAL (whole);
  double step, s_half, s_whole;
  double f = replay_flops (p, &step);
  double f_half = replay_flops (half, &s_half), f_whole = replay_flops (whole, &s_whole);
  CU_ASSERT (isfinite (step) && step > 0);
  CU_ASSERT (f > f_half && f < f_whole);
  CU_ASSERT (step > s_half && step < s_whole);
}

static void
test_mixtral_cp_runs (void)
{
  check_cp_runs ("mixtral-8x7b");
}

/* Bad input still names its group and key: ep 8 not dividing the dp·cp·tp = 4 ranks of 4
 * GPUs at cp 2 (the expert carving is [parallel] ep's, even though cp's check meets the
 * mesh first); s = 1026 not a multiple of 2·cp = 4 ([parallel] cp, causal load balancing);
 * ep 3 not dividing the 8 experts; ep 4 at cp 2 under
 * tp-cp-ep-pp-dp with pp 2 (Megatron asserts etp·ep = cp·tp there: [parallel] order). */
static void
test_refusals (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (1024);
  ModelParallel par = moe_par (4, 2, 8);
  expect_refusal (a, &st, &par, "group [parallel], key 'ep'", "dp·cp·tp = 4");
  par = moe_par (8, 2, 4);
  ModelStack odd = bf16_stack (1026);
  expect_refusal (a, &odd, &par, "group [parallel], key 'cp'", "seq_len = 1026");
  par = moe_par (6, 2, 3);
  expect_refusal (a, &st, &par, "group [parallel], key 'ep'", "num_local_experts");
  /* pp inside dp (tp-cp-ep-pp-dp) with pp 2 needs etp·ep = cp·tp = 2: ep 4 is the order's
   * fault, named once ("key 'order'", not under key 'cp') */
  par = moe_par (16, 2, 4);
  par.pp = 2;
  par.order = MODEL_MESH_ORDER_TP_CP_EP_PP_DP;
  st.grad_accum = 2;
  expect_refusal (a, &st, &par, "group [parallel], key 'order'", "ep × etp = cp × tp");
}

/* DeepSeek-V2-Lite (MLA: q·k heads of 192, v heads of 128; 64 experts), as Mixtral above. */
static void
test_mla_cp_runs (void)
{
  check_cp_runs ("deepseek-v2-lite");
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "cp 2: expert GEMM rows = cp 1's with half the sequence (closed form)",
      test_expert_rows_per_cp_rank },
    { "cp 2: dispatch all-to-all bytes per rank halve", test_dispatch_bytes_halve },
    { "cp 2 × ep 4: EP group spans cp ranks, expert grads over expert-dp, dense over dp·cp",
      test_groups_over_cp },
    { "cp 2: a MoE layer's saved activations = cp 1's with half the sequence",
      test_activations_per_cp_rank },
    { "Mixtral cp 2 × ep 4 replays end to end", test_mixtral_cp_runs },
    { "DeepSeek-V2-Lite (MLA) cp 2 × ep 4 replays end to end", test_mla_cp_runs },
    { "bad cp / ep settings with experts name group and key", test_refusals },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_ep_cp", tests);
}
