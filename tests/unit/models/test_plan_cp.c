/* tests/unit/models/test_plan_cp.c — context parallelism through the plan
 * (models/plan/plan_cp.c): a rank's saved activations, the ring's P2P tasks per layer, the
 * ring's overlap with compute, the gradient reduction's dp·cp group and the MFU
 * numerator. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/plan/plan.h"
#include "models/plan/simulate.h"
#include "tests/testlib.h"
#include "tests/unit/models/cost_fixture.h"
#include "tests/unit/models/plan_scan.h"
#include "tests/unit/models/tiny.h"

static ModelParallel
cp_par (guint gpus, guint cp, ModelCpVariant variant)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = gpus;
  par.gpus_per_node = 8;
  par.cp = cp;
  par.cp_variant = variant;
  return par;
}

static ModelStack
flash_stack (guint64 b, guint64 s)
{
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.flash_attention = TRUE;
  st.micro_batch = b;
  st.seq_len = s;
  return st;
}

/* Every tensor a FlashAttention layer saves is per token (b·s·x: the inputs of the norms
 * and projections, q, k, v, the output, the logsumexp b·a·s·4, dropout-free), so a cp
 * rank holding s/cp tokens of each saves exactly 1/cp of the single GPU's layer:
 * model_cp_shard_graph divides every tensor by cp (ring; Ulysses's head split of the
 * attention's tensors is the same bytes, plus the output all-to-all's attn_out_a2a, one
 * b·(s/cp)·a·d·e tensor more). Sizes are powers of two: exact. */
static void
test_activations_over_cp (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = flash_stack (1, 512);
  g_autoptr (ModelPlan) one = model_plan_new (&gpt, &st, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (one);
  const guint cps[] = { 2, 4, 8 };
  for (gsize c = 0; c < G_N_ELEMENTS (cps); c++)
    {
      ModelParallel par = cp_par (cps[c], cps[c], MODEL_CP_RING);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      CU_ASSERT_EQUAL (plan_scan_layer_activations (p) * cps[c], plan_scan_layer_activations (one));
    }
  ModelParallel par = cp_par (4, 4, MODEL_CP_ULYSSES);
  g_autoptr (ModelPlan) u = model_plan_new (&gpt, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (u);
  double a2a = 1.0 * (512 / 4) * 4 * 64 * 2; /* b·(s/cp)·a·d·e */
  CU_ASSERT_EQUAL (plan_scan_layer_activations (u), plan_scan_layer_activations (one) / 4 + a2a);
}

/* Rank 0's ring P2P tasks of layer 1, micro-batch 0, on the cp stream: the forward posts
 * cp − 1 sends of one K/V chunk 2·b·(s/cp)·k·d·e (steps 0 … cp−2; the last step's K/V is
 * not passed on), the backward 2·(cp − 1) chunks in all (K/V at step 0, K/V + dK/dV at
 * steps 1 … cp−2, dK/dV at step cp−1: TE AttnFuncWithCPAndKVP2P.backward), each a
 * SEND_RECV ring shift over the cp group's cp ranks. b 1, s 512, k = a = 4, d 64, e 2,
 * cp 4: chunk 2·1·128·4·64·2 = 131072 B. */
static void
test_ring_p2p_per_layer (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = flash_stack (1, 512);
  ModelParallel par = cp_par (4, 4, MODEL_CP_RING);
  g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  const double kv = 2.0 * 1 * 128 * 4 * 64 * 2, cp = 4;
  guint bwd_task = G_MAXUINT, n_fwd = 0, n_bwd = 0;
  double fwd_bytes = 0, bwd_bytes = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    if (model_plan_task (p, k)->rank == 0
        && strcmp (model_plan_task (p, k)->label, "bwd L1 mb0") == 0)
      bwd_task = k;
  CU_ASSERT_FATAL (bwd_task != G_MAXUINT);
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->stream != MODEL_STREAM_CP || t->layer != 1 || t->micro_batch != 0)
        continue;
      CU_ASSERT_FATAL (t->collective >= 0);
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      CU_ASSERT_EQUAL (col->kind, HW_COLLECTIVE_SEND_RECV);
      CU_ASSERT_EQUAL (col->n_ranks, 4);
      if (k < bwd_task)
        {
          n_fwd++;
          fwd_bytes += t->bytes;
          CU_ASSERT_EQUAL (t->bytes, kv);
        }
      else
        {
          n_bwd++;
          bwd_bytes += t->bytes;
        }
    }
  CU_ASSERT_EQUAL (n_fwd, cp - 1);
  CU_ASSERT_EQUAL (fwd_bytes, (cp - 1) * kv);
  CU_ASSERT_EQUAL (n_bwd, cp);
  CU_ASSERT_EQUAL (bwd_bytes, 2 * (cp - 1) * kv);
}

/* Rank 0's cp collectives of layer 1, micro-batch 0 (GA 1): those issued before the
 * rank's first backward task (the forward's) in n[0], bytes[0], the rest in n[1],
 * bytes[1]. */
static void
cp_tasks_of_layer1 (const ModelPlan *p, guint n[2], double bytes[2])
{
  guint first_bwd = G_MAXUINT;
  n[0] = n[1] = 0;
  bytes[0] = bytes[1] = 0;
  for (guint k = 0; k < model_plan_n_tasks (p) && first_bwd == G_MAXUINT; k++)
    if (model_plan_task (p, k)->rank == 0
        && model_plan_task (p, k)->kind == MODEL_TASK_KIND_BACKWARD)
      first_bwd = k;
  CU_ASSERT_FATAL (first_bwd != G_MAXUINT);
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->rank != 0 || t->stream != MODEL_STREAM_CP || t->layer != 1 || t->micro_batch != 0)
        continue;
      n[k > first_bwd]++;
      bytes[k > first_bwd] += t->bytes;
    }
}

/* Under full recompute Megatron's CheckpointFunction reruns the layer's forward before its
 * backward, and under selective recompute (core_attn, Megatron's default) the attention
 * core; TE's context-parallel attention inside either runs its cp collectives again, so a
 * layer's cp collectives after the forward are the backward's plus the forward's once
 * more: ring cp − 1 = 3 K/V sends of 2·b·(s/cp)·k·d·e = 131072 B in the forward, cp = 4
 * sends of 2·(cp − 1)·131072 B in the backward (test_ring_p2p_per_layer), 3 + 4 = 7 after
 * the forward; Ulysses the q, k, v and output all-to-alls (4), the backward's dout, dq, dk
 * and dv (4): 8. A selective recompute of the layernorms alone reruns no attention: the
 * backward's only. gpt_like (h 256, a = k = 4, d 64), b 1, s 512, cp 4, bf16. */
static void
test_recompute_reissues_cp (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  const ModelCpVariant variants[] = { MODEL_CP_RING, MODEL_CP_ULYSSES };
  const guint fwd_n[] = { 3, 4 }, bwd_n[] = { 4, 4 };
  const double kv = 2.0 * 1 * 128 * 4 * 64 * 2;
  for (gsize v = 0; v < G_N_ELEMENTS (variants); v++)
    {
      ModelParallel par = cp_par (4, 4, variants[v]);
      ModelStack st = flash_stack (1, 512);
      g_autoptr (ModelPlan) none = model_plan_new (&gpt, &st, &par, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (none);
      guint nn[2];
      double bn[2];
      cp_tasks_of_layer1 (none, nn, bn);
      CU_ASSERT_EQUAL (nn[0], fwd_n[v]);
      CU_ASSERT_EQUAL (nn[1], bwd_n[v]);
      if (variants[v] == MODEL_CP_RING)
        CU_ASSERT_EQUAL (bn[0], 3 * kv);
      const ModelCheckpointing ck[] = { MODEL_CHECKPOINTING_FULL, MODEL_CHECKPOINTING_SELECTIVE,
                                        MODEL_CHECKPOINTING_SELECTIVE };
      const guint modules[] = { 0, 0, MODEL_RECOMPUTE_LAYERNORM };
      for (gsize k = 0; k < G_N_ELEMENTS (ck); k++)
        {
          st.checkpointing = ck[k];
          st.recompute_modules = modules[k];
          g_autoptr (ModelPlan) rec = model_plan_new (&gpt, &st, &par, NULL);
          CU_ASSERT_PTR_NOT_NULL_FATAL (rec);
          guint nr[2];
          double br[2];
          cp_tasks_of_layer1 (rec, nr, br);
          gboolean attn = modules[k] == 0; /* the attention rerun */
          CU_ASSERT_EQUAL (nr[0], fwd_n[v]);
          CU_ASSERT_EQUAL (nr[1], (attn ? fwd_n[v] : 0) + bwd_n[v]);
          CU_ASSERT_EQUAL (br[1], (attn ? bn[0] : 0) + bn[1]);
          if (variants[v] == MODEL_CP_RING && attn)
            CU_ASSERT_EQUAL (br[1], 3 * kv + 6 * kv);
        }
    }
}

/* The ring's P2P beside the layer on the tiny GPU (100 TFLOP/s, 1 TB/s HBM), 4 ranks on
 * NVSwitch, tiny llama (a 8, k 2, d 32) at b 1, s 4096, cp 4: a K/V chunk is
 * 2·1·1024·2·32·2 = 262144 B. At 1 TB/s per link a send takes 1 µs latency + 0.26 µs
 * while one ring step's attention alone is 2 tile-units 8·b·c²·a·d = 8·512²·8·32 =
 * 5.4e8 FLOP, over 10 µs: the sends hide and the rank's exposed communication is at most
 * the gradient all-reduce's tail (< 2 % of the step). At 10 MB/s a send takes 26 ms, the
 * layer's forward well under 1 ms: the forward's 3 sends per layer alone, 4 layers × 3 ×
 * 26 ms, cannot hide (plan_cp.c: the window is the layer's task), so at least 90 % of
 * that is exposed. */
static void
test_ring_overlap (void)
{
  const double kv = 2.0 * 1 * 1024 * 2 * 32 * 2;
  const double bws[] = { 1e12, 1e7 };
  double exposed[2], step[2];
  for (guint i = 0; i < 2; i++)
    {
      g_autoptr (ModelArch) arch = tiny_arch ();
      ModelStack st = flash_stack (1, 4096);
      ModelParallel par = cp_par (4, 4, MODEL_CP_RING);
      HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = 4, .host_memory = 1e12,
                          .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = bws[i],
                          .intra_latency = 1e-6 };
      HwFabricSpec fabric = { .spine_oversubscription = 1.0 };
      ModelSimInput in = { .arch = arch, .stack = &st, .par = &par, .node = &node,
                           .n_nodes = 1, .fabric = &fabric, .steps = 1 };
      ModelSimResult r;
      g_autoptr (GError) e = NULL;
      CU_ASSERT_FATAL (model_simulate (&in, NULL, &r, &e));
      exposed[i] = r.exposed_comm;
      step[i] = r.step_time;
      model_sim_result_clear (&r);
      hw_node_spec_clear (&node);
    }
  CU_ASSERT (exposed[0] < 0.02 * step[0]);
  CU_ASSERT (exposed[1] > 0.9 * 4 * 3 * kv / bws[1]);
}

/* cp 2 × dp 2 on 4 GPUs (DDP): the weights are replicated over cp, so the gradient
 * all-reduce spans all four ranks (the dp·cp group, Megatron with_context_parallel=True),
 * and the ring's P2P the cp pairs {0, 1}, {2, 3} (cp just outside tp, mesh.h). */
static void
test_grad_group_spans_cp (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = flash_stack (1, 512);
  ModelParallel par = cp_par (4, 2, MODEL_CP_RING);
  g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint grads = 0, p2p = 0;
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (t->collective < 0)
        continue;
      const ModelCollective *col = model_plan_collective (p, (guint) t->collective);
      if (t->stream == MODEL_STREAM_CP)
        {
          CU_ASSERT_EQUAL (col->n_ranks, 2);
          CU_ASSERT_EQUAL (col->ranks[1] - col->ranks[0], 1u);
          p2p++;
        }
      else if (col->kind == HW_COLLECTIVE_ALL_REDUCE)
        {
          CU_ASSERT_EQUAL (col->n_ranks, 4);
          grads++;
        }
    }
  CU_ASSERT (grads > 0);
  CU_ASSERT (p2p > 0);
  /* ZeRO-1 over the same mesh: the optimizer states split 4 ways (dp_shard 2 × cp 2). */
  par.mode = MODEL_DP_ZERO1;
  CU_ASSERT_EQUAL (model_parallel_shard_size (&par), 4);
}

/* MFU's numerator: a rank's model FLOPs are the whole model's / (tp·cp), the attention at
 * its full square, so the cp = 4 plan on 4 GPUs carries in all the single GPU's model
 * FLOPs; its tokens per rank are s/cp. */
static void
test_model_flops (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = flash_stack (1, 512);
  ModelParallel par = cp_par (4, 4, MODEL_CP_RING);
  g_autoptr (ModelPlan) p = model_plan_new (&gpt, &st, &par, NULL);
  g_autoptr (ModelPlan) one = model_plan_new (&gpt, &st, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (one);
  STEPSIM_ASSERT_REL (4 * model_plan_model_flops (p), model_plan_model_flops (one), 1e-12);
  STEPSIM_ASSERT_REL (4 * model_plan_tokens_per_rank (p), model_plan_tokens_per_rank (one), 1e-12);
}

/* Bad settings: s not a multiple of 2·cp (ring's load balancing), Ulysses's heads (4) not
 * a multiple of cp (8), tp·cp not dividing the GPUs. */
static void
test_bad_settings (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1024);
  ModelStack st = flash_stack (1, 500);
  ModelParallel par = cp_par (4, 4, MODEL_CP_RING);
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
  CU_ASSERT_PTR_NULL (model_plan_new (&gpt, &st, &par, &e1));
  CU_ASSERT (e1 != NULL && strstr (e1->message, "seq_len") != NULL);
  st.seq_len = 512;
  par = cp_par (8, 8, MODEL_CP_ULYSSES);
  CU_ASSERT_PTR_NULL (model_plan_new (&gpt, &st, &par, &e2));
  CU_ASSERT (e2 != NULL && strstr (e2->message, "heads") != NULL);
  par = cp_par (6, 4, MODEL_CP_RING);
  CU_ASSERT_PTR_NULL (model_plan_new (&gpt, &st, &par, &e3));
  CU_ASSERT (e3 != NULL && strstr (e3->message, "cp") != NULL);
}

/* Ulysses's backward all-to-all of the output gradient before a layer's backward
 * (plan_step.c cp_before) moves the gradient a pipeline stage receives, so on a stage's
 * last layer it waits for that receive (tiny llama, pp 2 × cp 2 Ulysses on 4 GPUs, GA 4:
 * stage 0 holds layers 0-1; rank 0's first cp collective of layer 1's backward of
 * micro-batch 0 follows its "recv grad"). */
static void
test_ulysses_backward_waits_for_grad (void)
{
  g_autoptr (ModelArch) arch = tiny_arch ();
  ModelStack st = flash_stack (1, 4096);
  st.grad_accum = 4;
  ModelParallel par = cp_par (4, 2, MODEL_CP_ULYSSES);
  par.pp = 2;
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (arch, &st, &par, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT (plan_scan_waits_for_grad (p, 0, MODEL_STREAM_CP, 1, 0));
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "pp: Ulysses's backward all-to-all waits for the stage's output gradient",
      test_ulysses_backward_waits_for_grad },
    { "layer activations per rank = 1/cp", test_activations_over_cp },
    { "ring P2P tasks per layer: count and bytes", test_ring_p2p_per_layer },
    { "full and selective recompute re-issue the attention's cp collectives",
      test_recompute_reissues_cp },
    { "ring P2P hidden on a fast link, exposed on a slow one", test_ring_overlap },
    { "gradient reduction over dp·cp", test_grad_group_spans_cp },
    { "model FLOPs: the whole model over the ranks", test_model_flops },
    { "bad cp settings", test_bad_settings },
  };
  return STEPSIM_RUN_TESTS ("models/plan/plan_cp", tests);
}
