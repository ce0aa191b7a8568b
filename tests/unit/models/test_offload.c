/* tests/unit/models/test_offload.c — CPU/NVMe offload (models/memory/offload.h, plan_offload.c,
 * host_ledger.c) and its hardware (hardware/cluster.h host CPU and NVMe) against closed
 * forms. Ψ is the tiny model's parameter count; bf16 mixed AdamW: w = g = 2 B, master 4 B,
 * K = 8 B per parameter. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "hardware/node_catalog.h"
#include "models/plan/executor.h"
#include "models/memory/host_ledger.h"
#include "models/plan/plan_offload.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/recorder.h"
#include "tests/testlib.h"
#include "tests/unit/models/replay.h"
#include "tests/unit/models/tiny.h"

#define CORES 4
#define ADAM_RATE 1e8   /* param/s per core */
#define NVME_READ 2e9   /* B/s */
#define NVME_WRITE 1e9  /* B/s */

static ModelPlan *
plan_for (const ModelArch *a, const ModelStack *s, ModelDataParallel mode, guint degree,
          GError **error)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = mode;
  par.degree = degree;
  return model_plan_new (a, s, &par, error);
}

static ModelStack
offload_stack (ModelOffloadTarget opt, ModelOffloadTarget params, ModelOffloadTarget act)
{
  ModelStack s = tiny_stack ();
  s.offload.optimizer = opt;
  s.offload.parameters = params;
  s.offload.activations = act;
  return s;
}

static HwNodeSpec
tiny_node (guint n_gpus)
{
  return (HwNodeSpec){ .gpu = tiny_gpu (), .n_gpus = n_gpus, .host_memory = 1e12,
                       .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 100e9,
                       .intra_latency = 2e-6, .cpu_cores = CORES, .cpu_adam_rate = ADAM_RATE,
                       .nvme_drives = 1, .nvme_read_bandwidth = NVME_READ,
                       .nvme_write_bandwidth = NVME_WRITE, .nvme_capacity = 1e12 };
}


/* Replays `plan` on one tiny node of its ranks, host DRAM 1 TB, one NVMe drive. */
static Run
replay (const ModelPlan *plan)
{
  Run r = { 0 };
  guint n = model_plan_n_ranks (plan);
  r.engine = sim_engine_new ();
  r.fluid = sim_fluid_new (r.engine);
  HwNodeSpec node = tiny_node (n);
  r.cluster = hw_cluster_new (&node, 1, r.fluid);
  r.rec = sim_recorder_new ();
  r.ledger = model_ledger_new (n, NULL);
  r.host = model_host_ledger_new (1, n, node.host_memory, node.nvme_capacity, r.rec);
  hw_node_spec_clear (&node);
  r.exec = model_executor_new (plan, r.cluster, r.engine, r.ledger, r.rec);
  model_executor_set_host_ledger (r.exec, r.host);
  model_executor_start (r.exec);
  sim_engine_run (r.engine);
  g_assert (model_executor_n_done (r.exec) == model_plan_n_tasks (plan));
  return r;
}

static double
psi (const ModelArch *a)
{
  return (double) model_arch_n_params (a);
}

/* ---- configuration --------------------------------------------------------------------- */

static void
test_validation_rules (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  struct
  {
    ModelOffloadTarget opt, params, act;
    ModelDataParallel mode;
    const char *key; /* NULL: accepted */
  } cases[] = {
    { MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_DP_DDP, "optimizer" },
    { MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_DP_ZERO1, "optimizer" },
    { MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_DP_ZERO2, "parameters" },
    { MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_DP_ZERO3, "parameters" },
    { MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NVME, MODEL_DP_DDP, "activations" },
    { MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_DP_ZERO2, NULL },
    { MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_CPU, MODEL_DP_ZERO3, NULL },
    { MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_CPU, MODEL_DP_DDP, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelStack s = offload_stack (cases[i].opt, cases[i].params, cases[i].act);
      g_autoptr (GError) e = NULL;
      g_autoptr (ModelPlan) p = plan_for (a, &s, cases[i].mode, 1, &e);
      if (cases[i].key == NULL)
        {
          CU_ASSERT_PTR_NOT_NULL (p);
        }
      else
        {
          CU_ASSERT_PTR_NULL (p);
          CU_ASSERT (e != NULL && g_str_has_prefix (e->message, cases[i].key));
        }
    }
  /* optimizer offload under zero1: DeepSpeed runs it (stage_1_and_2.py), stepsim does not
   * model it, and the message says that, not that DeepSpeed needs stage 2 */
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO1, 1, &e);
  CU_ASSERT_PTR_NULL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "data_parallel = zero1"));
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "is not modelled"));
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "DeepSpeed also runs it with ZeRO stage 1"));
  CU_ASSERT_PTR_NULL (strstr (e->message, "as DeepSpeed's"));
}

/* ---- transfer volumes: closed forms --------------------------------------------------- */

/* ZeRO-Offload on one GPU (Ren et al. 2021 §4.1, Figure 2): per step gΨ = 2Ψ B of 16-bit
 * gradients GPU → host and wΨ = 2Ψ B of updated 16-bit parameters host → GPU; the CPU
 * updates Ψ parameters. With GA micro-batches the gradients go down every micro-batch
 * (GA · 2Ψ), the parameters still come up once. */
static void
test_zero_offload_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  for (guint64 ga = 1; ga <= 3; ga += 2)
    {
      ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      s.grad_accum = ga;
      g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_D2H),
                          2.0 * psi (a) * ga, 1e-12);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_H2D), 2.0 * psi (a),
                          1e-12);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_CPU_STEP), psi (a),
                          1e-12);
    }
}

/* DeepSpeed casts every gradient to fp32 on the GPU before its copy to the host
 * (stage_1_and_2.py async_inplace_copy_grad_to_fp32_buffer_from_gpu), so at GA 1 its engine
 * moves 4Ψ B down where the paper's design moves gΨ = 2Ψ; the parameters still come up as
 * 16-bit wΨ = 2Ψ. With GA micro-batches (async_accumulate_grad_in_cpu_via_gpu) every
 * micro-batch sends its 16-bit sum down (2Ψ), each from the second on first brings the sum
 * so far up (2Ψ), and the last also sends the fp32 copy (4Ψ): at GA 3, down 3·2Ψ + 4Ψ =
 * 10Ψ, up 2·2Ψ + 2Ψ (parameters) = 6Ψ. */
static void
test_deepspeed_gradient_copies_fp32 (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  const struct
  {
    guint64 ga;
    double down, up; /* × Ψ */
    ModelDataParallel mode;
  } cases[] = { { 1, 4, 2, MODEL_DP_ZERO2 }, { 3, 10, 6, MODEL_DP_ZERO2 },
                /* stage 3 (stage3.py partition_grads): every micro-batch's 16-bit partition
                 * goes down into the host buffer and comes back up as the CUDA working copy
                 * (2Ψ each way), the boundary's fp32 copy goes down (4Ψ); the parameters
                 * come up after the host step (2Ψ): GA 1 down 6Ψ, up 4Ψ; GA 3 down 10Ψ,
                 * up 8Ψ */
                { 1, 6, 4, MODEL_DP_ZERO3 }, { 3, 10, 8, MODEL_DP_ZERO3 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      s.grad_accum = cases[i].ga;
      s.framework.deepspeed_engine = TRUE;
      g_autoptr (ModelPlan) p = plan_for (a, &s, cases[i].mode, 1, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_D2H),
                          cases[i].down * psi (a), 1e-12);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_H2D),
                          cases[i].up * psi (a), 1e-12);
    }
}

/* DeepSpeed stages 1-2 with the optimizer offloaded hold a GPU buffer of the largest
 * trainable parameter's numel in the 16-bit dtype for the run (stage_1_and_2.py __init__
 * temp_grad_buffer_for_gpu_offload): the tiny model's largest tensor is its embedding,
 * vocab × hidden, so comm_buffers grow by 2 · vocab · hidden B over the same plan without
 * DeepSpeed's engine; none at stage 3. */
static void
test_deepspeed_offload_gradient_buffer (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  double b[2][2]; /* [stage 2, stage 3][engine off, on] */
  for (guint z = 0; z < 2; z++)
    for (guint ds = 0; ds < 2; ds++)
      {
        ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
        s.framework.deepspeed_engine = ds;
        g_autoptr (ModelPlan) p = plan_for (a, &s, z ? MODEL_DP_ZERO3 : MODEL_DP_ZERO2, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL (p);
        b[z][ds] = model_plan_initial_bytes (p, MODEL_MEM_COMM_BUFFERS);
      }
  STEPSIM_ASSERT_REL (b[0][1] - b[0][0],
                      2.0 * (double) a->vocab_size * (double) a->hidden_size, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (b[1][1], b[1][0], 0);
}

/* Whether task `t` of `p` lists `dep` among its dependencies. */
static gboolean
depends_on (const ModelPlan *p, guint t, guint dep)
{
  const ModelTask *k = model_plan_task (p, t);
  for (guint i = 0; i < k->n_deps; i++)
    if (model_plan_dep (p, k->first_dep + i) == dep)
      return TRUE;
  return FALSE;
}

/* How the backward meets the gradient copies (plan_offload.c grad_copy_order). DeepSpeed
 * stages 1-2 without overlap_comm issue the copies on the compute stream, so the first
 * compute task after copy i waits for copy i; with overlap_comm (and outside DeepSpeed's
 * engine: the ZeRO-Offload paper's overlapped design, FSDP2) each flush waits for the
 * previous one, so that task waits for copy i - 1 (the first copy holds nothing back). */
static void
test_gradient_copy_order (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  struct
  {
    gboolean ds, overlap;
    guint lag; /* 0: the task waits for the copy just made; 1: for the one before */
  } cases[] = { { TRUE, FALSE, 0 }, { TRUE, TRUE, 1 }, { FALSE, FALSE, 1 } };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      s.grad_accum = 2;
      s.framework.deepspeed_engine = cases[c].ds;
      s.framework.ds_overlap_comm = cases[c].overlap;
      g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      g_autoptr (GArray) copies = g_array_new (FALSE, FALSE, sizeof (guint));
      guint checked = 0;
      gboolean after_copy = FALSE; /* a copy was made since the last compute task */
      for (guint t = 0; t < model_plan_n_tasks (p); t++)
        {
          const ModelTask *k = model_plan_task (p, t);
          if (k->stream == MODEL_STREAM_D2H && k->kind == MODEL_TASK_KIND_OFFLOAD)
            g_array_append_val (copies, t), after_copy = TRUE;
          else if (k->stream == MODEL_STREAM_COMPUTE && after_copy)
            {
              after_copy = FALSE;
              if (copies->len <= cases[c].lag)
                continue;
              guint want = g_array_index (copies, guint, copies->len - 1 - cases[c].lag);
              CU_ASSERT_TRUE (depends_on (p, t, want));
              checked++;
            }
        }
      /* every copy but the last has a compute task after it (the next layer's backward or
       * the next micro-batch's forward) */
      CU_ASSERT_EQUAL (checked, copies->len - 1 - cases[c].lag);
    }
}

/* Where a gradient copy frees the GPU's gradients: with DeepSpeed's reduce bucket
 * (contiguous gradients) each gradient is copied into the bucket as it is produced and freed
 * then, so the copy's frees are at its start; without the bucket (or outside DeepSpeed's
 * engine) the copy reads the gradient itself, freed at its end. */
static void
test_gradient_copy_frees (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  for (guint bucket = 0; bucket < 2; bucket++)
    {
      ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      s.framework.deepspeed_engine = TRUE;
      s.framework.reduce_bucket_elements = bucket ? 1e5 : 0;
      g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint frees = 0;
      for (guint t = 0; t < model_plan_n_tasks (p); t++)
        {
          const ModelTask *k = model_plan_task (p, t);
          if (k->stream != MODEL_STREAM_D2H || k->kind != MODEL_TASK_KIND_OFFLOAD)
            continue;
          for (guint e = 0; e < k->n_effects; e++)
            {
              const ModelMemEffect *m = model_plan_effect (p, k->first_effect + e);
              if (m->bytes >= 0 || m->category != MODEL_MEM_GRADIENTS)
                continue;
              frees++;
              CU_ASSERT_EQUAL (m->when, bucket ? MODEL_EFFECT_AT_START : MODEL_EFFECT_AT_END);
            }
        }
      CU_ASSERT (frees >= a->n_layers);
    }
}

/* The serial order replayed: with DeepSpeed's copies on the compute stream no backward
 * kernel runs while a gradient copy is in flight. */
static void
test_serial_copies_hold_the_backward (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  s.framework.deepspeed_engine = TRUE;
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
  Run r = replay (p);
  guint n = sim_recorder_n_tasks (r.rec), overlaps = 0, copies = 0;
  for (guint i = 0; i < n; i++)
    {
      const SimTaskRecord *c = sim_recorder_task (r.rec, i);
      if (c->stream != MODEL_STREAM_D2H || c->kind != MODEL_TASK_KIND_OFFLOAD)
        continue;
      copies++;
      for (guint j = 0; j < n; j++)
        {
          const SimTaskRecord *k = sim_recorder_task (r.rec, j);
          if (k->stream == MODEL_STREAM_COMPUTE && k->start < c->end - 1e-12
              && k->end > c->start + 1e-12)
            overlaps++;
        }
    }
  CU_ASSERT_EQUAL (copies, a->n_layers + 1);
  CU_ASSERT_EQUAL (overlaps, 0);
  run_clear (&r);
}

/* ZeRO-2 over N = 4 ranks: each moves only its shard, 2Ψ/4 B each way, and updates Ψ/4. */
static void
test_sharded_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 4, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  for (guint r = 0; r < 4; r++)
    {
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, r, MODEL_OFFLOAD_OP_D2H), psi (a) / 2,
                          1e-12);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, r, MODEL_OFFLOAD_OP_H2D), psi (a) / 2,
                          1e-12);
      STEPSIM_ASSERT_REL (model_plan_offload_amount (p, r, MODEL_OFFLOAD_OP_CPU_STEP),
                          psi (a) / 4, 1e-12);
    }
}

/* ZeRO-Infinity, optimizer on NVMe (Rajbhandari et al. 2021 §5): master weights and Adam
 * states, (4 + 8) B/param, are read from the drive and written back once per step:
 * 12Ψ B each way; gradients and parameters cross PCIe as with CPU offload. */
static void
test_nvme_optimizer_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_NVME_READ),
                      12 * psi (a), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_NVME_WRITE),
                      12 * psi (a), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_H2D), 2 * psi (a),
                      1e-12);
}

/* ZeRO-3 parameter offload on one GPU: the root block (embedding, norm, head: Ψ_root) is
 * fetched once per micro-batch and kept, each of the L layers twice (forward, and again
 * for the backward): w (Ψ_root + 2 L Ψ_layer) = w (Ψ + L Ψ_layer) B host → GPU. Updated
 * parameters stay where they live: nothing more comes up (cpu), or wΨ B go to the drive
 * (nvme). */
static void
test_parameter_offload_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  double layer = (double) model_arch_n_params_layer (a), L = (double) a->n_layers;
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO3, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_H2D),
                      2 * (psi (a) + L * layer), 1e-12);
  ModelStack n = offload_stack (MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) q = plan_for (a, &n, MODEL_DP_ZERO3, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (q, 0, MODEL_OFFLOAD_OP_NVME_TO_GPU),
                      2 * (psi (a) + L * layer), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (q, 0, MODEL_OFFLOAD_OP_NVME_WRITE),
                      12 * psi (a) + 2 * psi (a), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (q, 0, MODEL_OFFLOAD_OP_H2D), 0, 1e-12);
}

/* ---- ledgers ------------------------------------------------------------------------------ */

/* With the optimizer on the host, the GPU holds no master weights or optimizer states and
 * its model states are the 16-bit weights (wΨ); the host holds master 4Ψ + Adam 8Ψ + fp32
 * gradients 4Ψ = 16Ψ (DeepSpeed's estimator "16"); adding parameter offload (stage 3) moves
 * the weights there too: 18Ψ on the host, none on the GPU. */
static void
test_host_ledger_states (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  Run r = replay (p);
  CU_ASSERT_EQUAL (model_ledger_category_peak (r.ledger, 0, MODEL_MEM_MASTER_WEIGHTS), 0);
  CU_ASSERT_EQUAL (model_ledger_category_peak (r.ledger, 0, MODEL_MEM_OPTIMIZER_STATE), 0);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (p, 0), 2 * psi (a), 1e-12);
  STEPSIM_ASSERT_REL (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_HOST), 16 * psi (a), 1e-12);
  CU_ASSERT_EQUAL (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_NVME), 0);
  CU_ASSERT (sim_recorder_n_series (r.rec) >= 3); /* node0/host/<category> */
  run_clear (&r);

  ModelStack t = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) q = plan_for (a, &t, MODEL_DP_ZERO3, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  Run u = replay (q);
  CU_ASSERT_EQUAL (model_ledger_category_peak (u.ledger, 0, MODEL_MEM_WEIGHTS), 0);
  CU_ASSERT_EQUAL (model_plan_state_bytes (q, 0), 0);
  STEPSIM_ASSERT_REL (model_host_ledger_peak (u.host, 0, MODEL_MEM_ON_HOST), 18 * psi (a), 1e-12);
  run_clear (&u);

  /* DeepSpeed's stage 3 also holds the 16-bit gradient partitions on the host
   * (grad_partitions_flat_buffer): 18Ψ + 2Ψ; its stage 2 only when it accumulates
   * (accumulated_grads_in_cpu): 16Ψ at GA 1, 16Ψ + 2Ψ at GA 2, and at stage 2 the pinned
   * staging buffer of the largest parameter (temp_grad_buffer_for_cpu_offload: the tiny
   * model's embedding, 2 · vocab · hidden B) */
  const struct
  {
    ModelDataParallel mode;
    guint64 ga;
    double host; /* × Ψ */
  } ds[] = { { MODEL_DP_ZERO2, 1, 16 }, { MODEL_DP_ZERO2, 2, 18 }, { MODEL_DP_ZERO3, 1, 20 } };
  for (guint i = 0; i < G_N_ELEMENTS (ds); i++)
    {
      ModelStack d = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE);
      if (ds[i].mode == MODEL_DP_ZERO2)
        d.offload.parameters = MODEL_OFFLOAD_NONE;
      d.framework.deepspeed_engine = TRUE;
      d.grad_accum = ds[i].ga;
      g_autoptr (ModelPlan) dp = plan_for (a, &d, ds[i].mode, 1, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (dp);
      Run v = replay (dp);
      double staging = ds[i].mode == MODEL_DP_ZERO2
                         ? 2.0 * (double) a->vocab_size * (double) a->hidden_size : 0;
      STEPSIM_ASSERT_REL (model_host_ledger_peak (v.host, 0, MODEL_MEM_ON_HOST),
                          ds[i].host * psi (a) + staging, 1e-12);
      run_clear (&v);
    }
}

/* Optimizer on NVMe: the drive holds master + states, 12Ψ; the host the fp32 gradients 4Ψ
 * and 4 swap buffers of the largest chunk's 12 B/param (the root block here). */
static void
test_nvme_ledger (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_NVME, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  Run r = replay (p);
  double root = psi (a) - a->n_layers * (double) model_arch_n_params_layer (a);
  double chunk = MAX (root, (double) model_arch_n_params_layer (a));
  STEPSIM_ASSERT_REL (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_NVME), 12 * psi (a), 1e-12);
  STEPSIM_ASSERT_REL (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_HOST),
                      4 * psi (a) + 4 * 12 * chunk, 1e-12);
  run_clear (&r);
}

/* ---- time: closed forms ------------------------------------------------------------------ */

/* Sum of the durations of rank 0's recorded tasks on `stream` of `kind`. */
static double
stream_time (const SimRecorder *rec, ModelStream stream, ModelTaskKind kind, guint *count)
{
  double t = 0;
  *count = 0;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *k = sim_recorder_task (rec, i);
      if (k->rank == 0 && k->stream == stream && k->kind == kind)
        t += k->end - k->start, (*count)++;
    }
  return t;
}

/* The CPU step runs its chunks one after another alone on the host CPU: Σ n_i / (cores ×
 * rate) = Ψ / (cores × rate) (ZeRO-Offload §4.2: CPU-Adam throughput). */
static void
test_cpu_step_time (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
  Run r = replay (p);
  guint n = 0;
  double t = stream_time (r.rec, MODEL_STREAM_CPU, MODEL_TASK_KIND_OPTIMIZER, &n);
  CU_ASSERT_EQUAL (n, a->n_layers + 1);
  STEPSIM_ASSERT_REL (t, psi (a) / (CORES * ADAM_RATE), 1e-9);
  run_clear (&r);
}

/* Gradient copies run one at a time on the d2h stream with nothing else on the PCIe d2h
 * direction: each takes latency + bytes / B, so Σ = count × latency + 2Ψ / B; pageable
 * memory halves B (HW_PAGEABLE_COPY_EFFICIENCY). */
static void
test_gradient_copy_time (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  g_autoptr (HwGpuSpec) g = tiny_gpu ();
  for (int pageable = 0; pageable <= 1; pageable++)
    {
      ModelStack s = offload_stack (MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      s.offload.pageable = pageable;
      g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 1, NULL);
      Run r = replay (p);
      guint n = 0;
      double t = stream_time (r.rec, MODEL_STREAM_D2H, MODEL_TASK_KIND_OFFLOAD, &n);
      double bw = g->pcie_bandwidth * (pageable ? HW_PAGEABLE_COPY_EFFICIENCY : 1.0);
      STEPSIM_ASSERT_REL (t, n * g->pcie_latency + 2 * psi (a) / bw, 1e-9);
      run_clear (&r);
    }
}

/* Activation offload (no checkpointing): every layer's saved activations go down after its
 * forward and come back before its backward, GA × L × act_saved B each way; the GPU then
 * never holds more than two layers' activations (the one in backward and the prefetched
 * one) besides the embedding's and the head's, where without offload it held all L. */
static void
test_activation_offload (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_CPU);
  s.grad_accum = 2;
  ModelCostParams cp = model_stack_cost_params (&s);
  double layer = model_cost_layer (a, &cp).act_saved;
  double emb = model_cost_embedding (a, &cp).act_saved, head = model_cost_head (a, &cp).act_saved;
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_DDP, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_D2H),
                      2 * a->n_layers * layer, 1e-12);
  STEPSIM_ASSERT_REL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_H2D),
                      2 * a->n_layers * layer, 1e-12);
  Run r = replay (p);
  double peak = model_ledger_category_peak (r.ledger, 0, MODEL_MEM_ACTIVATIONS);
  CU_ASSERT (peak <= emb + head + 2 * layer + 1e-6);
  CU_ASSERT (peak < emb + head + a->n_layers * layer);
  CU_ASSERT (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_HOST) > 0);
  CU_ASSERT_EQUAL (model_host_ledger_current (r.host, 0, MODEL_MEM_ON_HOST,
                                              MODEL_MEM_ACTIVATIONS), 0);
  run_clear (&r);
}

/* Offloaded activations come back when the backward reaches them (torchtune's
 * OffloadActivations unpacks a layer's tensors as autograd needs them and prefetches the
 * next layer's then): the top layer's restore, and the next one's with it, wait for the
 * head's backward (they went back during the head's forward, holding two layers' tensors
 * beside the logits). */
static void
test_activation_restore_after_head (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = offload_stack (MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_CPU);
  g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_DDP, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint head = G_MAXUINT, found = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    if (strcmp (model_plan_task (p, i)->label, "bwd head mb0") == 0)
      head = model_plan_task (p, i)->id;
  CU_ASSERT_FATAL (head != G_MAXUINT);
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (strcmp (t->label, "act L3 to gpu mb0") != 0
          && strcmp (t->label, "act L2 to gpu mb0") != 0)
        continue;
      found++;
      gboolean waits = FALSE;
      for (guint k = 0; k < t->n_deps; k++)
        waits = waits || model_plan_dep (p, t->first_dep + k) == head;
      CU_ASSERT_TRUE (waits);
    }
  CU_ASSERT_EQUAL (found, 2);
}

/* ---- hardware: host CPU and NVMe resources -------------------------------------------- */

typedef struct
{
  SimEngine *engine;
  double end[4];
  guint n;
} Ends;

static void
record_end (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) id;
  (void) fluid;
  Ends *e = user_data;
  e->end[e->n++] = sim_engine_now (e->engine);
}

/* NVMe → GPU alone runs at min(PCIe, drive read): latency + B / min(25, 2) GB/s; a write
 * to the drive alone at its write bandwidth; a read and a write together share the drive's
 * total (= read) capacity max-min: each gets 1 GB/s, the read then finishing alone at 2. */
static void
test_nvme_bandwidth (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  HwNodeSpec node = tiny_node (1);
  double pcie_latency = node.gpu->pcie_latency;
  g_autoptr (HwCluster) c = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  Ends e = { engine, { 0 }, 0 };
  hw_cluster_start_nvme (c, 0, HW_NVME_READ, TRUE, 4e9, record_end, &e);
  sim_engine_run (engine);
  STEPSIM_ASSERT_REL (e.end[0], HW_NVME_LATENCY + pcie_latency + 4e9 / NVME_READ, 1e-9);
  double t0 = sim_engine_now (engine);
  e.n = 0;
  hw_cluster_start_nvme (c, 0, HW_NVME_WRITE, FALSE, 1e9, record_end, &e);
  sim_engine_run (engine);
  STEPSIM_ASSERT_REL (e.end[0] - t0, HW_NVME_LATENCY + 1e9 / NVME_WRITE, 1e-9);
  t0 = sim_engine_now (engine);
  e.n = 0;
  hw_cluster_start_nvme (c, 0, HW_NVME_READ, FALSE, 3e9, record_end, &e);
  hw_cluster_start_nvme (c, 0, HW_NVME_WRITE, FALSE, 1e9, record_end, &e);
  sim_engine_run (engine);
  /* both at 1 GB/s until the write's 1e9 B are done (1 s), then the read's last 2e9 B at
   * 2 GB/s (1 s) */
  CU_ASSERT_EQUAL (e.n, 2);
  STEPSIM_ASSERT_REL (e.end[0] - t0, HW_NVME_LATENCY + 1.0, 1e-9);
  STEPSIM_ASSERT_REL (e.end[1] - t0, HW_NVME_LATENCY + 2.0, 1e-9);
}

/* Two ranks of a node share its CPU: each of two equal steps takes twice its time alone. */
static void
test_cpu_shared_by_node (void)
{
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  HwNodeSpec node = tiny_node (2);
  g_autoptr (HwCluster) c = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  Ends e = { engine, { 0 }, 0 };
  hw_cluster_start_host_compute (c, 0, 4e8, record_end, &e);
  hw_cluster_start_host_compute (c, 1, 4e8, record_end, &e);
  sim_engine_run (engine);
  CU_ASSERT_EQUAL (e.n, 2);
  STEPSIM_ASSERT_REL (e.end[1], 2 * 4e8 / (CORES * ADAM_RATE), 1e-9);
}

/* Every catalog node carries host CPU and NVMe figures (their sources: node_catalog.c). */
static void
test_catalog_host_figures (void)
{
  for (guint i = 0; i < hw_catalog_n_nodes (); i++)
    {
      const HwNodeSpec *n = hw_catalog_node_at (i);
      CU_ASSERT (n->cpu_cores > 0 && n->cpu_adam_rate > 0);
      CU_ASSERT (n->nvme_drives > 0 && n->nvme_read_bandwidth > 0 && n->nvme_capacity > 0);
    }
  const HwNodeSpec *a100 = hw_catalog_node ("DGX-A100", NULL);
  CU_ASSERT_EQUAL (a100->cpu_cores, 128); /* 2x EPYC 7742 (datasheet) */
  CU_ASSERT_EQUAL (a100->nvme_drives, 8); /* 8x 3.84 TB U.2 (datasheet) */
}

/* The one-pass peak over ranks equals the maximum of the per-rank sums exactly (same
 * summation order), with offloaded states on host DRAM (ZeRO-2 CPU optimizer, 4 ranks: each
 * keeps its shard, master + states + fp32 gradients 16Ψ/4) and on NVMe; 0 without offload
 * and for the GPU. */
static void
test_offloaded_state_peak (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelOffloadTarget targets[] = { MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_CPU, MODEL_OFFLOAD_NVME };
  for (guint i = 0; i < G_N_ELEMENTS (targets); i++)
    {
      ModelStack s = offload_stack (targets[i], MODEL_OFFLOAD_NONE, MODEL_OFFLOAD_NONE);
      g_autoptr (ModelPlan) p = plan_for (a, &s, MODEL_DP_ZERO2, 4, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      ModelMemPlace places[] = { MODEL_MEM_ON_GPU, MODEL_MEM_ON_HOST, MODEL_MEM_ON_NVME };
      for (guint w = 0; w < G_N_ELEMENTS (places); w++)
        {
          double max = 0;
          for (guint r = 0; r < 4; r++)
            max = MAX (max, model_plan_offloaded_state_bytes (p, r, places[w]));
          CU_ASSERT_EQUAL (model_plan_offloaded_state_peak (p, places[w]), max);
          if (places[w] == MODEL_MEM_ON_GPU || targets[i] == MODEL_OFFLOAD_NONE)
            CU_ASSERT_EQUAL (max, 0);
        }
      if (targets[i] == MODEL_OFFLOAD_CPU)
        STEPSIM_ASSERT_REL (model_plan_offloaded_state_peak (p, MODEL_MEM_ON_HOST),
                            16 * psi (a) / 4, 1e-12);
      if (targets[i] == MODEL_OFFLOAD_NVME)
        CU_ASSERT (model_plan_offloaded_state_peak (p, MODEL_MEM_ON_NVME) > 0);
    }
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "offload needs the right ZeRO stage", test_validation_rules },
    { "ZeRO-Offload: 2Ψ down, 2Ψ up per step", test_zero_offload_volumes },
    { "ZeRO-2 offload: each rank moves its shard", test_sharded_volumes },
    { "DeepSpeed's gradient copies: fp32, via the GPU under GA",
      test_deepspeed_gradient_copies_fp32 },
    { "DeepSpeed's offloaded-gradient GPU buffer", test_deepspeed_offload_gradient_buffer },
    { "gradient copies hold the backward back", test_gradient_copy_order },
    { "serial copies: no backward kernel beside one", test_serial_copies_hold_the_backward },
    { "gradient copies free at start with the bucket", test_gradient_copy_frees },
    { "NVMe optimizer: 12Ψ read and written per step", test_nvme_optimizer_volumes },
    { "ZeRO-3 parameter offload fetch volume", test_parameter_offload_volumes },
    { "host ledger: 16Ψ, 18Ψ with parameters", test_host_ledger_states },
    { "NVMe ledger and swap buffers", test_nvme_ledger },
    { "CPU step time = Ψ / (cores × rate)", test_cpu_step_time },
    { "gradient copies at PCIe bandwidth, pageable half", test_gradient_copy_time },
    { "activation offload volumes and GPU peak", test_activation_offload },
    { "offloaded activations return after the head's backward",
      test_activation_restore_after_head },
    { "NVMe at min(PCIe, drive); read+write share total", test_nvme_bandwidth },
    { "ranks of a node share its CPU", test_cpu_shared_by_node },
    { "catalog nodes have CPU and NVMe figures", test_catalog_host_figures },
    { "offloaded-state peak over ranks in one pass", test_offloaded_state_peak },
  };
  return STEPSIM_RUN_TESTS ("models/offload", tests);
}
