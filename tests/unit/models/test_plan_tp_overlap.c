/* tests/unit/models/test_plan_tp_overlap.c — [parallel] tp_comm_overlap through the plan and
 * the simulation (models/plan/plan_tp_overlap.c): NONE issues today's tp collectives; BULK
 * runs the backward's bulk overlaps on Transformer Engine's 16 SMs; PIPELINED chunks the
 * forward all-gathers (tp chunks) and reduce-scatters (4 chunks) beside the layer's task,
 * which exposes less tp communication. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/catalog.h"
#include "models/plan/plan.h"
#include "models/plan/simulate.h"
#include "tests/testlib.h"
#include "tests/unit/models/cost_fixture.h"

static ModelParallel
tp8_par (ModelTpCommOverlap overlap)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 8;
  par.gpus_per_node = 8;
  par.tp = 8;
  par.sequence_parallel = TRUE;
  par.tp_comm_overlap = overlap;
  return par;
}

static ModelStack
bf16_stack (void)
{
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.flash_attention = TRUE;
  st.micro_batch = 1;
  st.seq_len = 2048;
  return st;
}

/* Rank 0's tp collectives of layer 1, micro-batch 0, forward (before the layer's backward
 * task) or backward: count, Σ bytes, and how many hold `sms` SMs (ModelCollective.ub_sms). */
static void
layer_tp_tasks (const ModelPlan *p, gboolean backward, guint *n, double *bytes, double sms,
                guint *n_sms)
{
  *n = 0, *bytes = 0, *n_sms = 0;
  gboolean in_bwd = FALSE;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0)
        continue;
      if (t->kind == MODEL_TASK_KIND_BACKWARD)
        in_bwd = TRUE;
      if (t->stream != MODEL_STREAM_TP || t->layer != 1 || t->micro_batch != 0)
        continue;
      /* the backward's collectives are issued from the layer's backward on: its critical
       * ones just before the backward task of layer 1, after layer 2's */
      gboolean bwd_phase = in_bwd || strstr (t->label, "grad") != NULL
                           || strstr (t->label, "re-gather") != NULL;
      if (bwd_phase != backward)
        continue;
      const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
      (*n)++;
      *bytes += t->bytes;
      if (c->ub_sms == sms)
        (*n_sms)++;
    }
}

/* GPT (h 2048, a 16, 4 layers) at tp 8 + SP, b 1, s 2048, bf16: X = b·s·h·2 = 8 MiB. The
 * forward's four SP collectives (AG, RS, AG, RS of X; tensor_parallel.h) are 4 tasks under
 * NONE and BULK, NCCL's (ub_sms 0); under PIPELINED 8 + 4 + 8 + 4 = 24 chunks (ring exchange
 * num_splits = tp, pipeline 4; TE base.py get_default_config) of the same 4X in all, the
 * all-gathers' 16 chunks on 1 SM, the reduce-scatters' 8 on 16. The backward's six (AG of
 * the output gradient, re-gather, RS per block): under BULK the four bulk ones on 16 SMs,
 * the two output-gradient AGs whole on NCCL; under PIPELINED those two in 8 chunks each on 1
 * SM: 4 + 16 = 20 tasks, 6X. */
static void
test_plan_chunks (void)
{
  ModelArch gpt = gpt_like (2048, 16, 4, 32768);
  ModelStack st = bf16_stack ();
  const double x = 1.0 * 2048 * 2048 * 2;
  const struct
  {
    ModelTpCommOverlap mode;
    guint fwd, fwd_ring, fwd_16, bwd, bwd_ring, bwd_16;
  } cases[] = {
    { MODEL_TP_OVERLAP_NONE, 4, 0, 0, 6, 0, 0 },
    { MODEL_TP_OVERLAP_BULK, 4, 0, 0, 6, 0, 4 },
    { MODEL_TP_OVERLAP_PIPELINED, 24, 16, 8, 20, 16, 4 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelParallel par = tp8_par (cases[i].mode);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint n, n1, n16, n0;
      double bytes;
      layer_tp_tasks (p, FALSE, &n, &bytes, 1, &n1);
      layer_tp_tasks (p, FALSE, &n, &bytes, 16, &n16);
      layer_tp_tasks (p, FALSE, &n, &bytes, 0, &n0);
      CU_ASSERT_EQUAL (n, cases[i].fwd);
      CU_ASSERT_EQUAL (n1, cases[i].fwd_ring);
      CU_ASSERT_EQUAL (n16, cases[i].fwd_16);
      CU_ASSERT_EQUAL (n0, n - n1 - n16);
      STEPSIM_ASSERT_REL (bytes, 4 * x, 1e-12);
      layer_tp_tasks (p, TRUE, &n, &bytes, 1, &n1);
      layer_tp_tasks (p, TRUE, &n, &bytes, 16, &n16);
      CU_ASSERT_EQUAL (n, cases[i].bwd);
      CU_ASSERT_EQUAL (n1, cases[i].bwd_ring);
      CU_ASSERT_EQUAL (n16, cases[i].bwd_16);
      STEPSIM_ASSERT_REL (bytes, 6 * x, 1e-12);
    }
}

/* One step of the GPT above on 8 H100-SXM (132 SMs) over NVSwitch at `nvlink` B/s. */
static void
simulate (ModelTpCommOverlap mode, double nvlink, ModelSimResult *r)
{
  ModelArch gpt = gpt_like (8192, 64, 2, 32768);
  ModelStack st = bf16_stack ();
  st.micro_batch = 2;
  ModelParallel par = tp8_par (mode);
  HwNodeSpec node = { .gpu = hw_gpu_spec_copy (hw_catalog_gpu ("H100-SXM", NULL)), .n_gpus = 8,
                      .host_memory = 1e12, .intra = HW_INTRA_NVSWITCH,
                      .nvlink_bandwidth = nvlink, .intra_latency = 1e-6 };
  HwFabricSpec fabric = { .spine_oversubscription = 1.0 };
  ModelSimInput in = { .arch = &gpt, .stack = &st, .par = &par, .node = &node, .n_nodes = 1,
                       .fabric = &fabric, .steps = 1 };
  g_autoptr (GError) e = NULL;
  gboolean ok = model_simulate (&in, NULL, r, &e);
  CU_ASSERT_FATAL (ok);
  hw_node_spec_clear (&node);
}

/* tp 8 at 400 GB/s NVLink (about a DGX H100's), where NONE exposes over 15 % of the step
 * in tp collectives: BULK's bulk overlaps hold 16 SMs instead of NCCL's 24, so its step is
 * no longer than NONE's; PIPELINED hides most of the forward's collectives beside the layer
 * tasks: it exposes under 60 % of NONE's communication and its step is shorter. (On a tiny
 * model the chunks' latencies outweigh what they hide: the gain needs GEMMs of some size.) */
static void
test_overlap_step_times (void)
{
  ModelSimResult none, bulk, pipe;
  simulate (MODEL_TP_OVERLAP_NONE, 400e9, &none);
  simulate (MODEL_TP_OVERLAP_BULK, 400e9, &bulk);
  simulate (MODEL_TP_OVERLAP_PIPELINED, 400e9, &pipe);
  CU_ASSERT (none.exposed_comm > 0.15 * none.step_time);
  CU_ASSERT (bulk.step_time <= none.step_time);
  CU_ASSERT (pipe.exposed_comm < 0.6 * none.exposed_comm);
  CU_ASSERT (pipe.step_time < none.step_time);
  model_sim_result_clear (&none);
  model_sim_result_clear (&bulk);
  model_sim_result_clear (&pipe);
}

/* The SM share. At 20 GB/s the backward's bulk collectives (re-gather, input-gradient
 * reduce-scatter) outlast the backward tasks they run beside, so every backward kernel
 * overlaps one. Under NONE they are NCCL's, holding 24 of 132 SMs (and on Hopper making a
 * full-width persistent GEMM wait for a tail, hardware/cluster.c); under BULK TE's, holding
 * 16 with the GEMMs sized to the rest: its compute-bound kernels run at 116/132 instead of
 * 108/132 of the GPU, so rank 0's backward time is shorter; the HBM holds are the same.
 * Equal if the userbuffers SM count were dropped (both NCCL's); the exact ratio on one
 * kernel is hardware/test_collective's "userbuffers collectives hold their own SM count". */
static void
test_bulk_sm_share (void)
{
  ModelSimResult none, bulk;
  simulate (MODEL_TP_OVERLAP_NONE, 20e9, &none);
  simulate (MODEL_TP_OVERLAP_BULK, 20e9, &bulk);
  double tn = none.time_by_kind[MODEL_TASK_KIND_BACKWARD];
  double tb = bulk.time_by_kind[MODEL_TASK_KIND_BACKWARD];
  CU_ASSERT (tb < tn);
  model_sim_result_clear (&none);
  model_sim_result_clear (&bulk);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "tp_comm_overlap: chunk tasks, bytes and SM counts", test_plan_chunks },
    { "tp_comm_overlap: bulk <= none, pipelined exposes less", test_overlap_step_times },
    { "tp_comm_overlap: bulk's backward on TE's SM share", test_bulk_sm_share },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_tp_overlap", tests);
}
