/* tests/unit/models/test_plan_ep_allgather.c — Megatron's all-gather token dispatcher
 * ([moe] dispatcher = allgather; token_dispatcher.py MoEAllGatherTokenDispatcher) through
 * the plan (models/plan/plan_ep.c): its collectives over the tp_ep group (kinds, groups,
 * bytes), the hidden-state all-gather's time on one NVSwitch node against the ring's
 * closed form, the step against the all-to-all dispatcher's, the permutation kernels and
 * the transients of the gathered tokens, and the refusals. The expert parallelism shared
 * with the all-to-all dispatcher is test_plan_ep.c's. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/expert_parallel.h"
#include "models/plan/executor.h"
#include "models/plan/plan.h"
#include "tests/testlib.h"
#include "tests/unit/models/moe_fixture.h"
#include "tests/unit/hardware/fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/refusal.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

static ModelParallel
ag_par (guint ep, ModelEpDispatcher dispatcher)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 8;
  par.gpus_per_node = 8;
  par.ep = ep;
  par.moe_dispatcher = dispatcher;
  return par;
}



typedef struct
{
  double step;     /* s, rank 0's end */
  double gather;   /* s, rank 0's first "dispatch all-gather (ep·etp)" task */
  double ep_bytes; /* Σ bytes of rank 0's ep-stream collectives */
  guint n_a2a;     /* rank 0's all-to-all tasks */
} AgRun;

/* Replays `plan` on one node `node` and reads rank 0's tasks. */
static AgRun
replay (const ModelPlan *plan, const HwNodeSpec *node)
{
  AgRun o = { 0 };
  MoeReplay r;
  moe_replay_run (plan, node, &r);
  ModelExecutor *exec = r.exec;
  CU_ASSERT_EQUAL (model_executor_n_done (exec), model_plan_n_tasks (plan));
  o.step = model_executor_rank_end (exec, 0);
  for (guint i = 0; i < model_plan_n_tasks (plan); i++)
    {
      const ModelTask *t = model_plan_task (plan, i);
      if (t->rank != 0 || t->stream != MODEL_STREAM_EP)
        continue;
      o.ep_bytes += t->bytes;
      o.n_a2a += strstr (t->label, "all_to_all") != NULL;
      if (o.gather == 0 && strstr (t->label, "dispatch all-gather (ep·etp)") != NULL)
        o.gather = model_executor_task_time (exec, i);
    }
  moe_replay_clear (&r);
  return o;
}

/* Mixtral 8x7B, tp 2 (sequence parallel), ep 4, etp 2, s = 512, bf16, dropless: a rank
 * routes T = 512/2 = 256 tokens; the tp_ep group is all 8 ranks (ep·etp = 8; mesh.h),
 * which gather G = 8·256 = 2048 tokens. Rank 0's layer 0, micro-batch 0, in order:
 * forward the routing map's all-gather G·E·1 B = 16 384, the probabilities' G·E·2 =
 * 32 768, the hidden states' G·h·e = 2048·4096·2 = 16 777 216, the combine's
 * reduce-scatter (input G·h in bf16) 16 777 216; backward its all-gather 16 777 216, the
 * probabilities' reduce-scatter 32 768 and the hidden states' 16 777 216. No all-to-all,
 * no etp-only collective, no token-count gather (the all-to-all dispatcher's). */
static void
test_collectives (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  a->n_layers = 2;
  ModelStack st = bf16_stack (512);
  ModelParallel par = ag_par (4, MODEL_EP_DISPATCHER_ALLGATHER);
  par.etp = 2, par.tp = 2, par.sequence_parallel = TRUE;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const struct
  {
    HwCollectiveKind kind;
    double bytes;
  } want[] = {
    { HW_COLLECTIVE_ALL_GATHER, 16384 },        { HW_COLLECTIVE_ALL_GATHER, 32768 },
    { HW_COLLECTIVE_ALL_GATHER, 16777216 },     { HW_COLLECTIVE_REDUCE_SCATTER, 16777216 },
    { HW_COLLECTIVE_ALL_GATHER, 16777216 },     { HW_COLLECTIVE_REDUCE_SCATTER, 32768 },
    { HW_COLLECTIVE_REDUCE_SCATTER, 16777216 },
  };
  guint n = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->stream != MODEL_STREAM_EP || t->layer != 0 || t->micro_batch != 0)
        continue;
      CU_ASSERT_FATAL (n < G_N_ELEMENTS (want));
      const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
      CU_ASSERT_EQUAL (c->kind, want[n].kind);
      STEPSIM_ASSERT_REL (t->bytes, want[n].bytes, 1e-12);
      CU_ASSERT_EQUAL_FATAL (c->n_ranks, 8);
      for (guint i = 0; i < c->n_ranks; i++)
        CU_ASSERT_EQUAL (c->ranks[i], i);
      n++;
    }
  CU_ASSERT_EQUAL (n, G_N_ELEMENTS (want));
}

/* The hidden states' all-gather on one 8-GPU NVSwitch node (the hardware tests' fixture:
 * NVSwitch 100 GB/s, NCCL's ring bus cap on its A100s CAP = 80 GB/s, no collective
 * overhead), ring algorithm: test_collective.c's closed form T = 8.4 + (p − 1)·3.4 µs +
 * (p − 1)/p · S/CAP, with S its output G·h·e: the tiny MoE (h 256) at ep 8, s = 4096:
 * G = 8·4096 = 32 768 tokens, S = 32 768·256·2 = 16 777 216 B, of which each GPU receives
 * (p − 1)/p·S = 14 680 064 B. Against the all-to-all dispatcher on the same node: a rank's
 * ep-stream bytes per layer and micro-batch, routing map and probabilities included, are
 * forward 2·G·h·e + G·E·(1 + e) and backward 2·G·h·e + G·E·e, against all-to-all's
 * 4·T·k·h·e + 2·T·k·e + E·8·ep (tokens and combine forward and backward, probabilities
 * both ways, counts): each gather moves G/(T·k) = ep/k = 4× the routed copies' bytes, so
 * the step is longer. */
static void
test_gather_closed_form (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (4096);
  HwNodeSpec node = fixture_nvswitch_node (8);
  double step[2], bytes[2];
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = ag_par (8, c == 0 ? MODEL_EP_DISPATCHER_ALLTOALL
                                            : MODEL_EP_DISPATCHER_ALLGATHER);
      par.algorithm = HW_ALGORITHM_RING;
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      AgRun r = replay (p, &node);
      step[c] = r.step, bytes[c] = r.ep_bytes;
      if (c == 0)
        {
          CU_ASSERT (r.n_a2a > 0 && r.gather == 0);
          continue;
        }
      CU_ASSERT_EQUAL (r.n_a2a, 0);
      double S = 32768.0 * 256 * 2, n = 8, cap = 0.8 * 100 * GBPS;
      STEPSIM_ASSERT_REL (r.gather, (8.4 + (n - 1) * 3.4) * US + (n - 1) / n * S / cap, 1e-9);
    }
  double G = 32768, T = 4096, k = 2, h = 256, E = 8, e = 2, layers = 4;
  double ag = layers * (4 * G * h * e + G * E * (1 + 2 * e));
  double a2a = layers * (4 * T * k * h * e + 2 * T * k * e + E * 8 * 8);
  STEPSIM_ASSERT_REL (bytes[1], ag, 1e-12);
  STEPSIM_ASSERT_REL (bytes[0], a2a, 1e-12);
  CU_ASSERT (step[1] > step[0]);
  hw_node_spec_clear (&node);
}

/* Memory and kernels of rank 0's first layer, the tiny MoE (h 256) at ep 8, s = 4096, bf16
 * (T = 4096 tokens, N = T·k = 8192 rows a rank, G = 32 768 gathered): the saved
 * activations are the all-to-all dispatcher's (nothing of the gathers is saved); the
 * forward's workspace is at least the dispatcher's combine pair, fc2's output e·N·h beside
 * the unpermuted e·G·h: 2·256·(8192 + 32 768) = 20 971 520 B (model_ep_acts_megatron), and
 * the backward's too (the gradient's all-gather beside the unpermute's backward, the same
 * bytes): MAX of the all-to-all plan's and that (the backward's larger than the pair here,
 * so checked again at ep 32, where it is not). The permutation kernels read and write
 * the gathered tokens: moe_dispatch and moe_combine e·(G + N)·h = 20 971 520 B each
 * forward, twice that backward (all-to-all: e·(T + N)·h = 6 291 456). Under Megatron's
 * profile at ep 4 (two local experts) the all-to-all dispatcher's sort_chunks kernels are
 * gone: the permute groups the rows by expert itself. */
static void
test_memory_and_kernels (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  ModelStack st = bf16_stack (4096);
  double saved[2], ws_fwd[2], ws_bwd[2], permute[2];
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = ag_par (8, c == 0 ? MODEL_EP_DISPATCHER_ALLTOALL
                                            : MODEL_EP_DISPATCHER_ALLGATHER);
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      saved[c] = plan_scan_layer_activations (p);
      ws_fwd[c] = plan_scan_allocated (p, 0, "fwd L0 mb0", MODEL_MEM_WORKSPACE);
      ws_bwd[c] = plan_scan_allocated (p, 0, "bwd L0 mb0", MODEL_MEM_WORKSPACE);
      const ModelOp *ops[4];
      guint n = plan_scan_kernels (p, "fwd L0 mb0", "moe_dispatch", ops, 4);
      CU_ASSERT_EQUAL_FATAL (n, 1);
      permute[c] = ops[0]->bytes;
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, "fwd L0 mb0", "moe_combine", ops, 4), 1);
      CU_ASSERT_EQUAL (ops[0]->bytes, permute[c]);
      CU_ASSERT_EQUAL_FATAL (plan_scan_kernels (p, "bwd L0 mb0", "moe_dispatch", ops, 4), 1);
      CU_ASSERT_EQUAL (ops[0]->bytes, 2 * permute[c]);
    }
  double pair = 2.0 * 256 * (8192 + 32768);
  CU_ASSERT_EQUAL (saved[1], saved[0]);
  CU_ASSERT_EQUAL (ws_fwd[1], MAX (ws_fwd[0], pair));
  CU_ASSERT_EQUAL (ws_bwd[1], MAX (ws_bwd[0], pair));
  CU_ASSERT (ws_fwd[1] > ws_fwd[0]);
  CU_ASSERT_EQUAL (permute[0], 2.0 * 256 * (4096 + 8192));
  CU_ASSERT_EQUAL (permute[1], pair);

  /* the backward's pair outgrows the layer graph's backward workspace (42 MB here) once
   * G does: 32 experts at ep 32 on 32 GPUs gather G = 32·4096 = 131 072 tokens, 2·256·
   * (8192 + 131 072) = 71 303 168 B */
  a->n_experts = 32;
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = ag_par (32, c == 0 ? MODEL_EP_DISPATCHER_ALLTOALL
                                             : MODEL_EP_DISPATCHER_ALLGATHER);
      par.degree = 32;
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      ws_bwd[c] = plan_scan_allocated (p, 0, "bwd L0 mb0", MODEL_MEM_WORKSPACE);
    }
  CU_ASSERT_EQUAL (ws_bwd[1], MAX (ws_bwd[0], 71303168.0));
  CU_ASSERT (ws_bwd[1] > ws_bwd[0]);
  a->n_experts = 8;

  model_framework_apply_profile (&st.framework, MODEL_FRAMEWORK_MEGATRON);
  for (guint c = 0; c < 2; c++)
    {
      ModelParallel par = ag_par (4, c == 0 ? MODEL_EP_DISPATCHER_ALLTOALL
                                            : MODEL_EP_DISPATCHER_ALLGATHER);
      g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      const ModelOp *ops[4];
      CU_ASSERT_EQUAL (plan_scan_kernels (p, "fwd L0 mb0", "moe_sort_chunks", ops, 4),
                       c == 0 ? 1u : 0u);
    }
}

/* Refused, naming [moe] dispatcher: on a dense model (nothing to dispatch); with [training]
 * padding = longest (transformer_config.py: the allgather dispatcher does not support
 * variable sequence length). The all-to-all dispatcher takes the latter. */
static void
test_refusals (void)
{
  g_autoptr (ModelArch) a = tiny_moe ();
  g_autoptr (ModelArch) dense = tiny_arch ();
  ModelStack st = bf16_stack (512);
  ModelParallel par = ag_par (1, MODEL_EP_DISPATCHER_ALLGATHER);
  expect_refusal (dense, &st, &par, "group [moe], key 'dispatcher'", "no experts");
  par = ag_par (8, MODEL_EP_DISPATCHER_ALLGATHER);
  st.pad_to_longest = TRUE;
  expect_refusal (a, &st, &par, "group [moe], key 'dispatcher'", "variable sequence length");
  par.moe_dispatcher = MODEL_EP_DISPATCHER_ALLTOALL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL (p);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "all-gather dispatcher: tp_ep all-gathers and reduce-scatters, groups and bytes",
      test_collectives },
    { "all-gather dispatcher: the hidden gather = ring closed form; 4x the all-to-all bytes",
      test_gather_closed_form },
    { "all-gather dispatcher: saved as all-to-all, G-token transients and permutations",
      test_memory_and_kernels },
    { "all-gather dispatcher: refused on dense models and with padding = longest",
      test_refusals },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_ep_allgather", tests);
}
