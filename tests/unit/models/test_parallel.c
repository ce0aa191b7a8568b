/* tests/unit/models/test_parallel.c — data-parallel plans: model-state bytes per ZeRO
 * stage, the collectives each mode issues, and their consistency across ranks. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/plan/plan.h"
#include "tests/testlib.h"
#include "tests/unit/models/tiny.h"

static ModelPlan *
dp_plan (const ModelArch *a, ModelStack *s, ModelDataParallel mode, guint degree, guint per_node)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = mode;
  par.degree = degree;
  par.gpus_per_node = per_node;
  ModelPlan *p = model_plan_new (a, s, &par, NULL);
  g_assert (p != NULL);
  return p;
}

/* ZeRO (arXiv 1910.02054) Figure 1, mixed-precision Adam (weights 2, gradients 2, K = 12:
 * fp32 master 4 + moments 8), N_d ranks:
 *   DP (2 + 2 + K)Ψ;  P_os (2 + 2 + K/N)Ψ;  P_os+g (2 + (2 + K)/N)Ψ;  P_os+g+p (2 + 2 + K)Ψ/N.
 * DeepSpeed's ZeRO-1/2 step adds what the figure leaves out: the fp32 copy of the rank's
 * gradient partition, 4Ψ/N, attached to the fp32 master for the optimizer step
 * (deepspeed/runtime/zero/stage_1_and_2.py step(); as its estimate_zero2_model_states_mem_needs
 * counts 16Ψ/N = master 4 + Adam 8 + fp32 gradients 4). So stage 1: (2 + 2 + 16/N)Ψ, stage 2:
 * (2 + 18/N)Ψ; stages 0 and 3 as the figure. Summed from the plan's own allocations for the
 * tiny model, then scaled to the paper's Ψ = 7.5e9, N = 64, less that 4Ψ/N: 120 / 31.4 /
 * 16.6 / 1.9 GB (the paper rounds to three digits). */
static void
test_zero_state_bytes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = (double) model_arch_n_params (a);
  const guint N = 64;
  const ModelDataParallel modes[] = { MODEL_DP_DDP, MODEL_DP_ZERO1, MODEL_DP_ZERO2, MODEL_DP_ZERO3 };
  const double fp32_grads[] = { 0, 4.0 / N, 4.0 / N, 0 };
  const double per_param[] = { 16, 4 + 16.0 / N, 2 + 18.0 / N, 16.0 / N };
  const double paper_gb[] = { 120, 31.4, 16.6, 1.9 };
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      g_autoptr (ModelPlan) p = dp_plan (a, &s, modes[i], N, 8);
      for (guint r = 0; r < N; r += 21)
        STEPSIM_ASSERT_REL (model_plan_state_bytes (p, r), per_param[i] * psi, 1e-9);
      double scaled = (model_plan_state_bytes (p, 0) / psi - fp32_grads[i]) * 7.5e9 / 1e9;
      CU_ASSERT (fabs (scaled - paper_gb[i]) <= 0.05 + 0.005 * paper_gb[i]);
    }
}

/* Memory right after model load and initialisation (model_plan_load_bytes), tiny model, Ψ
 * parameters, 8 ranks in shard groups of 8 (one of 4 under hybrid), bf16 mixed AdamW:
 *   one GPU, fp32:  weights 4Ψ (the optimizer's states are created at the first step)
 *   one GPU:        weights 2Ψ + master 4Ψ
 *   DDP:            2Ψ + 4Ψ + the Reducer's bucket copies 2Ψ (bf16 gradients) = 8Ψ
 *   ZeRO-1, -2:     2Ψ + (4 + 8)Ψ/N (DeepSpeed creates the states at construction)
 *   ZeRO-3:         (2 + 4 + 8)Ψ/N
 *   FSDP SHARD_GRAD_OP: 2Ψ + 4Ψ/N;  FULL_SHARD: 4Ψ/N (PyTorch optimizers: lazily; FSDP's
 *   MixedPrecision stores the fp32 shard alone and casts it to bf16 only into each
 *   all-gather, models/plan/plan_state.c plan_fsdp_casts_params). */
static void
test_load_bytes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  double psi = (double) model_arch_n_params (a);
  const double N = 8;
  const struct
  {
    ModelPrecision precision;
    ModelDataParallel mode;
    guint degree;
    double per_param;
  } cases[] = {
    { MODEL_PRECISION_FP32, MODEL_DP_DDP, 1, 4 },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_DDP, 1, 6 },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_DDP, 8, 8 },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_ZERO1, 8, 2 + 12 / N },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_ZERO2, 8, 2 + 12 / N },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_ZERO3, 8, 14 / N },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_FSDP_SHARD_GRAD_OP, 8, 2 + 4 / N },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_FSDP_FULL_SHARD, 8, 4 / N },
    { MODEL_PRECISION_BF16_MIXED, MODEL_DP_FSDP_HYBRID_SHARD, 8, 4 / N }, /* a node of 8 */
    { MODEL_PRECISION_BF16, MODEL_DP_FSDP_FULL_SHARD, 8, 2 / N },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelStack s = tiny_stack ();
      s.precision = cases[i].precision;
      g_autoptr (ModelPlan) p = dp_plan (a, &s, cases[i].mode, cases[i].degree, 8);
      STEPSIM_ASSERT_REL (model_plan_load_bytes (p), cases[i].per_param * psi, 1e-12);
    }
}

/* FSDP modes share the machinery: FULL_SHARD = stage 3, SHARD_GRAD_OP = stage 2, NO_SHARD
 * = DDP; HYBRID_SHARD shards over the 4 GPUs of a node. The state at the step under
 * bf16_mixed: FULL_SHARD and HYBRID_SHARD the fp32 parameter shard, its fp32 gradient
 * (FSDP casts the reduced gradient back to the parameter's dtype) and Adam's two moments,
 * (4 + 4 + 8)Ψ/N; SHARD_GRAD_OP the gathered bf16 parameters beside the same shards,
 * 2Ψ + (4 + 2 + 8)Ψ/N (its gradient shard as reduced, bf16); NO_SHARD (2 + 2 + 12)Ψ. */
static void
test_fsdp_modes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = (double) model_arch_n_params (a);
  g_autoptr (ModelPlan) full = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, 8, 4);
  g_autoptr (ModelPlan) sgo = dp_plan (a, &s, MODEL_DP_FSDP_SHARD_GRAD_OP, 8, 4);
  g_autoptr (ModelPlan) none = dp_plan (a, &s, MODEL_DP_FSDP_NO_SHARD, 8, 4);
  g_autoptr (ModelPlan) hyb = dp_plan (a, &s, MODEL_DP_FSDP_HYBRID_SHARD, 8, 4);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (full, 3), 16 * psi / 8, 1e-9);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (sgo, 3), (2 + 14.0 / 8) * psi, 1e-9);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (none, 3), 16 * psi, 1e-9);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (hyb, 5), 16 * psi / 4, 1e-9);
  /* of which the gradient shard: fp32 under FULL_SHARD, bf16 as reduced under SHARD_GRAD_OP;
   * FULL_SHARD keeps no 16-bit weights at rest */
  CU_ASSERT_EQUAL (model_plan_initial_bytes (full, MODEL_MEM_WEIGHTS), 0);
  double full_grads = model_plan_state_bytes (full, 3)
                      - model_plan_initial_bytes (full, MODEL_MEM_MASTER_WEIGHTS)
                      - model_plan_initial_bytes (full, MODEL_MEM_OPTIMIZER_STATE);
  STEPSIM_ASSERT_REL (full_grads, 4 * psi / 8, 1e-9);
  double sgo_grads = model_plan_state_bytes (sgo, 3)
                     - model_plan_initial_bytes (sgo, MODEL_MEM_WEIGHTS)
                     - model_plan_initial_bytes (sgo, MODEL_MEM_MASTER_WEIGHTS)
                     - model_plan_initial_bytes (sgo, MODEL_MEM_OPTIMIZER_STATE);
  STEPSIM_ASSERT_REL (sgo_grads, 2 * psi / 8, 1e-9);
}

/* Rank 0's tasks whose label begins with `prefix`: how many, the first's id (G_MAXUINT:
 * none) and their bytes summed. */
static guint
tasks_labelled (const ModelPlan *p, const char *prefix, guint *first, double *bytes)
{
  guint n = 0;
  *first = G_MAXUINT;
  *bytes = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank != 0 || !g_str_has_prefix (t->label, prefix))
        continue;
      if (n++ == 0)
        *first = i;
      *bytes += t->bytes;
    }
  return n;
}

/* Counts rank 0's GPU allocations by (category, stream), over every task; `other` counts
 * those neither comm_buffers nor gradients that are not on the compute stream. */
static void
alloc_streams (const ModelPlan *p, guint gathers[MODEL_N_ALLOC_STREAMS],
               guint grads[MODEL_N_ALLOC_STREAMS], guint *other)
{
  memset (gathers, 0, MODEL_N_ALLOC_STREAMS * sizeof (guint));
  memset (grads, 0, MODEL_N_ALLOC_STREAMS * sizeof (guint));
  *other = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      for (guint k = 0; t->rank == 0 && k < t->n_effects; k++)
        {
          const ModelMemEffect *e = model_plan_effect (p, t->first_effect + k);
          if (e->bytes <= 0 || e->where != MODEL_MEM_ON_GPU)
            continue;
          g_assert (e->stream < MODEL_N_ALLOC_STREAMS);
          if (e->category == MODEL_MEM_COMM_BUFFERS)
            gathers[e->stream]++;
          else if (e->category == MODEL_MEM_GRADIENTS)
            grads[e->stream]++;
          else if (e->stream != MODEL_ALLOC_STREAM_COMPUTE)
            (*other)++;
        }
    }
}

/* PyTorch FSDP allocates the gathered parameters on its all-gather stream and the kept
 * gradient shards on its reduce-scatter stream (models/plan/plan_pools.c); the layers'
 * own gradients and everything else on the compute stream. DeepSpeed's ZeRO-3 gathers on
 * its all-gather stream too, and reduces into partitions made at initialization (on the
 * compute stream). Tiny model, 8 ranks, bf16_mixed, GA 1: every gather's buffer on the
 * all-gather stream; of the gradients, the full ones the backward makes on the compute
 * stream and FSDP's kept shards (one a unit) on the reduce-scatter one. */
static void
test_fsdp_alloc_streams (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.precision = MODEL_PRECISION_BF16_MIXED;
  g_autoptr (ModelPlan) fsdp = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, 8, 8);
  g_autoptr (ModelPlan) zero3 = dp_plan (a, &s, MODEL_DP_ZERO3, 8, 8);
  guint gathers[MODEL_N_ALLOC_STREAMS], grads[MODEL_N_ALLOC_STREAMS], other;
  alloc_streams (fsdp, gathers, grads, &other);
  CU_ASSERT (gathers[MODEL_ALLOC_STREAM_ALL_GATHER] > 0);
  CU_ASSERT_EQUAL (gathers[MODEL_ALLOC_STREAM_COMPUTE], 0);
  CU_ASSERT_EQUAL (gathers[MODEL_ALLOC_STREAM_REDUCE_SCATTER], 0);
  guint id;
  double b;
  /* one kept shard per reduce-scatter of micro-batch 0 (GA 1: every reduce-scatter) */
  guint n_rs = tasks_labelled (fsdp, "reduce_scatter grads", &id, &b);
  CU_ASSERT (n_rs > 0);
  CU_ASSERT_EQUAL (grads[MODEL_ALLOC_STREAM_REDUCE_SCATTER], n_rs);
  CU_ASSERT (grads[MODEL_ALLOC_STREAM_COMPUTE] > 0);
  CU_ASSERT_EQUAL (grads[MODEL_ALLOC_STREAM_ALL_GATHER], 0);
  CU_ASSERT_EQUAL (other, 0);
  alloc_streams (zero3, gathers, grads, &other);
  CU_ASSERT (gathers[MODEL_ALLOC_STREAM_ALL_GATHER] > 0);
  CU_ASSERT_EQUAL (gathers[MODEL_ALLOC_STREAM_COMPUTE], 0);
  CU_ASSERT_EQUAL (grads[MODEL_ALLOC_STREAM_REDUCE_SCATTER], 0);
  CU_ASSERT_EQUAL (other, 0);
  /* ZeRO-2 gathers nothing and allocates on the compute stream only */
  g_autoptr (ModelPlan) zero2 = dp_plan (a, &s, MODEL_DP_ZERO2, 8, 8);
  alloc_streams (zero2, gathers, grads, &other);
  CU_ASSERT_EQUAL (gathers[MODEL_ALLOC_STREAM_ALL_GATHER], 0);
  CU_ASSERT_EQUAL (grads[MODEL_ALLOC_STREAM_REDUCE_SCATTER], 0);
  CU_ASSERT_EQUAL (other, 0);
}

/* The handle task `id` allocates (its first allocation; 0: none). */
static guint
allocated_by (const ModelPlan *p, guint id)
{
  const ModelTask *t = model_plan_task (p, id);
  for (guint i = 0; i < t->n_effects; i++)
    {
      const ModelMemEffect *e = model_plan_effect (p, t->first_effect + i);
      if (e->bytes > 0)
        return e->handle;
    }
  return 0;
}

/* Whether task `id` frees `handle` at its end. */
static gboolean
frees_at_end (const ModelPlan *p, guint id, guint handle)
{
  const ModelTask *t = model_plan_task (p, id);
  for (guint i = 0; i < t->n_effects; i++)
    {
      const ModelMemEffect *e = model_plan_effect (p, t->first_effect + i);
      if (e->bytes < 0 && e->handle == handle && e->when == MODEL_EFFECT_AT_END)
        return TRUE;
    }
  return FALSE;
}

/* fsdp_end_units (torchtitan's apply_fsdp_to_decoder, torchtune's custom_sharded_layers):
 * under FULL_SHARD over 8 ranks, GA 2, the root unit's one gather a micro-batch (held from
 * the forward to the end of the backward) becomes the embedding's own unit, gathered for
 * its forward and again for its backward, and the head's (with the final norm), gathered
 * for its forward and held to its backward; the two units move the root's bytes between
 * them (the embedding's freed by its forward, the head's by its backward). The head's
 * gradients are reduce-scattered after its backward, before any layer's
 * (FSDP2's post-backward hook), the embedding's after its own backward; without the units
 * one "grads root" reduce-scatter follows the embedding's backward. A tied model keeps one
 * unit. */
static void
test_fsdp_end_units (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  s.precision = MODEL_PRECISION_BF16_MIXED;
  g_autoptr (ModelPlan) root = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, 8, 8);
  s.framework.fsdp_end_units = TRUE;
  g_autoptr (ModelPlan) ends = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, 8, 8);
  guint id, id2, id3;
  double b_root, b_embed, b_embed_bwd, b_head, b;
  CU_ASSERT_EQUAL (tasks_labelled (root, "all_gather params root", &id, &b_root), 2);
  CU_ASSERT_EQUAL (tasks_labelled (root, "all_gather params embed", &id, &b), 0);
  CU_ASSERT_EQUAL (tasks_labelled (root, "reduce_scatter grads root", &id, &b), 2);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "all_gather params root", &id, &b), 0);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "all_gather params embed (bwd)", &id, &b_embed_bwd), 2);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "all_gather params embed", &id, &b_embed), 4);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "all_gather params head", &id, &b_head), 2);
  STEPSIM_ASSERT_REL (b_embed - b_embed_bwd + b_head, b_root, 1e-12);
  STEPSIM_ASSERT_REL (b_embed_bwd, b_embed - b_embed_bwd, 1e-12);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "reduce_scatter grads root", &id, &b), 0);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "reduce_scatter grads embed", &id, &b), 2);
  /* micro-batch 0's head reduce-scatter after the head's backward, before its top layer's */
  CU_ASSERT_EQUAL (tasks_labelled (ends, "bwd head", &id, &b), 2);
  CU_ASSERT_EQUAL (tasks_labelled (ends, "reduce_scatter grads head", &id2, &b), 2);
  CU_ASSERT_EQUAL_FATAL (tasks_labelled (ends, "reduce_scatter grads L3", &id3, &b), 2);
  CU_ASSERT (id < id2 && id2 < id3);
  /* the embedding's gathered weights freed by its forward (resharded), the head's by its
   * backward */
  guint fe, fh;
  tasks_labelled (ends, "all_gather params embed", &id, &b);
  tasks_labelled (ends, "fwd embed mb0", &fe, &b);
  CU_ASSERT (frees_at_end (ends, fe, allocated_by (ends, id)));
  tasks_labelled (ends, "all_gather params head", &id, &b);
  tasks_labelled (ends, "bwd head mb0", &fh, &b);
  CU_ASSERT (frees_at_end (ends, fh, allocated_by (ends, id)));
  CU_ASSERT (allocated_by (ends, id) != 0);
  /* tied: one unit, as the root */
  a->tied_embeddings = TRUE;
  g_autoptr (ModelPlan) tied = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, 8, 8);
  CU_ASSERT_EQUAL (tasks_labelled (tied, "all_gather params root", &id, &b), 2);
  CU_ASSERT_EQUAL (tasks_labelled (tied, "all_gather params head", &id, &b), 0);
}

typedef struct
{
  double bytes[HW_N_COLLECTIVES]; /* Σ bytes of rank 0's collective tasks per kind */
  guint count[HW_N_COLLECTIVES];
} CommTotals;

static CommTotals
rank0_comm (const ModelPlan *p)
{
  CommTotals t = { 0 };
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *task = model_plan_task (p, i);
      if (task->rank != 0 || task->collective < 0)
        continue;
      const ModelCollective *c = model_plan_collective (p, (guint) task->collective);
      t.bytes[c->kind] += c->bytes;
      t.count[c->kind]++;
    }
  return t;
}

/* DDP all-reduces every gradient once per step, at the last micro-batch (no_sync before):
 * Σ bucket bytes = Ψ × 2 B (bf16 gradients), in buckets of at most 25 MiB … except the
 * tiny model fits one bucket. ZeRO-1 reduce-scatters the same bytes then all-gathers Ψ × 2
 * B of updated parameters. */
static void
test_ddp_and_zero1_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 3;
  double psi = (double) model_arch_n_params (a);
  g_autoptr (ModelPlan) ddp = dp_plan (a, &s, MODEL_DP_DDP, 4, 4);
  CommTotals d = rank0_comm (ddp);
  STEPSIM_ASSERT_REL (d.bytes[HW_COLLECTIVE_ALL_REDUCE], 2 * psi, 1e-12);
  CU_ASSERT_EQUAL (d.count[HW_COLLECTIVE_REDUCE_SCATTER] + d.count[HW_COLLECTIVE_ALL_GATHER], 0);
  g_autoptr (ModelPlan) z1 = dp_plan (a, &s, MODEL_DP_ZERO1, 4, 4);
  CommTotals z = rank0_comm (z1);
  STEPSIM_ASSERT_REL (z.bytes[HW_COLLECTIVE_REDUCE_SCATTER], 2 * psi, 1e-12);
  STEPSIM_ASSERT_REL (z.bytes[HW_COLLECTIVE_ALL_GATHER], 2 * psi, 1e-12);
  CU_ASSERT_EQUAL (z.count[HW_COLLECTIVE_ALL_GATHER], 1);
}

/* Buckets: with 100 KiB buckets the all-reduces are ⌈2Ψ / 100 KiB⌉ buckets' worth, each
 * collective carrying whole buckets except the last remainder. */
static void
test_ddp_buckets (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  par.bucket_size = 100 * 1024;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, NULL);
  CommTotals t = rank0_comm (p);
  double psi = (double) model_arch_n_params (a);
  STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_REDUCE], 2 * psi, 1e-12);
  CU_ASSERT (t.count[HW_COLLECTIVE_ALL_REDUCE] >= 2);
  CU_ASSERT (t.count[HW_COLLECTIVE_ALL_REDUCE] <= (guint) ceil (2 * psi / (100 * 1024)));
}

/* reduce_dtype sets the element size of every gradient reduction, whatever the gradients'
 * own dtype (FSDP MixedPrecision(reduce_dtype=…); DeepSpeed communication_data_type), and
 * nothing else: the updated-parameter all-gather moves weights. Per the nccl-tests size
 * convention each reduction carries (its parameters) × (reduce bytes):
 *   bf16 gradients (bf16_mixed, 2 B) reduced in fp32 (4 B): DDP AR 4Ψ; ZeRO-1 RS 4Ψ then
 *     AG 2Ψ (bf16 weights); ZeRO-3 RS 4Ψ per micro-batch (GA 2: 8Ψ); hybrid (4 GPUs a
 *     shard, 8 in all): RS 4Ψ + replica AR 4Ψ/4;
 *   fp32 gradients (fp32, 4 B) reduced in bf16 (2 B): DDP AR 2Ψ; ZeRO-1 RS 2Ψ, AG 4Ψ. */
static void
test_reduce_dtype_sizes_reductions (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  double psi = (double) model_arch_n_params (a);
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  const struct
  {
    ModelPrecision precision;
    HwDtype reduce;
    ModelDataParallel mode;
    double ar, rs, ag; /* × Ψ */
  } cases[] = {
    { MODEL_PRECISION_BF16_MIXED, HW_DTYPE_FP32, MODEL_DP_DDP, 4, 0, 0 },
    { MODEL_PRECISION_BF16_MIXED, HW_DTYPE_FP32, MODEL_DP_ZERO1, 0, 4, 2 },
    { MODEL_PRECISION_BF16_MIXED, HW_DTYPE_FP32, MODEL_DP_ZERO3, 0, 8, -1 },
    { MODEL_PRECISION_BF16_MIXED, HW_DTYPE_FP32, MODEL_DP_FSDP_HYBRID_SHARD, 2 * 4.0 / 4, 8, -1 },
    { MODEL_PRECISION_FP32, HW_DTYPE_BF16, MODEL_DP_DDP, 2, 0, 0 },
    { MODEL_PRECISION_FP32, HW_DTYPE_BF16, MODEL_DP_ZERO1, 0, 2, 4 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      s.precision = cases[i].precision;
      ModelParallel par;
      model_parallel_init_defaults (&par);
      par.mode = cases[i].mode;
      par.degree = 8;
      par.gpus_per_node = 4;
      par.reduce_dtype_set = TRUE;
      par.reduce_dtype = cases[i].reduce;
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, NULL);
      g_assert (p != NULL);
      CommTotals t = rank0_comm (p);
      STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_REDUCE], cases[i].ar * psi, 1e-12);
      STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_REDUCE_SCATTER], cases[i].rs * psi, 1e-12);
      if (cases[i].ag >= 0) /* stage 3's per-layer gathers are weights (test_zero3_volumes) */
        STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_GATHER], cases[i].ag * psi, 1e-12);
    }
}

/* ZeRO-3 per micro-batch: the root unit gathered once, every layer gathered for the
 * forward and again for the backward (FSDP FULL_SHARD), gradients reduce-scattered per
 * layer and root: AG bytes = (Ψ_root + 2 L Ψ_layer) × 2 B, RS bytes = Ψ × 2 B, per
 * micro-batch. SHARD_GRAD_OP gathers each layer once. */
static void
test_zero3_volumes (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  double psi = (double) model_arch_n_params (a);
  double layer = (double) model_arch_n_params_layer (a), root = psi - 4 * layer;
  g_autoptr (ModelPlan) z3 = dp_plan (a, &s, MODEL_DP_ZERO3, 4, 4);
  CommTotals t = rank0_comm (z3);
  STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_GATHER], 2 * 2 * (root + 2 * 4 * layer), 1e-12);
  STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_REDUCE_SCATTER], 2 * 2 * psi, 1e-12);
  CU_ASSERT_EQUAL (t.count[HW_COLLECTIVE_ALL_REDUCE], 0);
  g_autoptr (ModelPlan) sgo = dp_plan (a, &s, MODEL_DP_FSDP_SHARD_GRAD_OP, 4, 4);
  CommTotals u = rank0_comm (sgo);
  /* stage 2 gathers nothing per layer; it all-gathers the updated parameters once. */
  STEPSIM_ASSERT_REL (u.bytes[HW_COLLECTIVE_ALL_GATHER], 2 * psi, 1e-12);
}

/* Hybrid sharding all-reduces each reduce-scattered shard across the replicas: Ψ × 2 B / 4
 * per micro-batch over groups of D/N = 2 ranks. */
static void
test_hybrid_replica_allreduce (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = (double) model_arch_n_params (a);
  g_autoptr (ModelPlan) p = dp_plan (a, &s, MODEL_DP_FSDP_HYBRID_SHARD, 8, 4);
  CommTotals t = rank0_comm (p);
  STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_REDUCE], 2 * psi / 4, 1e-12);
  for (guint i = 0; i < model_plan_n_collectives (p); i++)
    {
      const ModelCollective *c = model_plan_collective (p, i);
      CU_ASSERT_EQUAL (c->n_ranks, c->kind == HW_COLLECTIVE_ALL_REDUCE ? 2 : 4);
    }
}

/* HSDP from the mesh keys: ZeRO-3 and ZeRO-1 on 8 ranks (8 per node) with dp_replicate = 2,
 * so dp_shard = 4 (parallel.h). The plan's collectives come from the placement changes:
 * gathers and reduce-scatters within the 4 consecutive ranks of a shard group, the
 * all-reduce of the gradient shard (2Ψ/4 B on rank 0, bf16 gradients) between the two
 * ranks r and r + 4 holding the same shard. ZeRO-3 model states (2 + 2 + 12)Ψ/4 = 4Ψ per
 * rank (ZeRO Fig. 1 with N = 4). */
static void
test_hsdp_from_mesh_keys (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = (double) model_arch_n_params (a);
  const ModelDataParallel modes[] = { MODEL_DP_ZERO3, MODEL_DP_ZERO1 };
  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      ModelParallel par;
      model_parallel_init_defaults (&par);
      par.mode = modes[m];
      par.degree = 8;
      par.gpus_per_node = 8;
      par.dp_replicate = 2;
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, NULL);
      CU_ASSERT_FATAL (p != NULL);
      CommTotals t = rank0_comm (p);
      STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_REDUCE], 2 * psi / 4, 1e-12);
      for (guint i = 0; i < model_plan_n_collectives (p); i++)
        {
          const ModelCollective *c = model_plan_collective (p, i);
          gboolean pair = c->n_ranks == 2 && c->ranks[1] == c->ranks[0] + 4;
          gboolean group = c->n_ranks == 4 && c->ranks[0] % 4 == 0 && c->ranks[3] == c->ranks[0] + 3;
          CU_ASSERT (c->kind == HW_COLLECTIVE_ALL_REDUCE ? pair : group);
        }
      if (modes[m] == MODEL_DP_ZERO3)
        STEPSIM_ASSERT_REL (model_plan_state_bytes (p, 5), 4 * psi, 1e-9);
    }
}

/* Every mode over shard groups of one rank (dp_shard = 1, dp_replicate = 4 on 4 ranks)
 * shards nothing, yet every rank must reduce its gradients with the other three: the plan
 * is DDP's, the whole gradient set all-reduced once per step over the 4 replicas (GA 2: at
 * the last micro-batch), rank 0's all-reduce bytes = Ψ × 2 B (bf16 gradients) and no
 * reduce-scatter or all-gather (QA report item 2: the reduction was skipped). The same when
 * the mesh comes from dp_replicate alone and from hybrid's default (1 GPU per node). */
static void
test_shard_group_of_one_reduces (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  double psi = (double) model_arch_n_params (a);
  for (guint m = 0; m < MODEL_N_DP_MODES; m++)
    for (guint how = 0; how < 3; how++)
      {
        ModelParallel par;
        model_parallel_init_defaults (&par);
        par.mode = (ModelDataParallel) m;
        par.degree = 4;
        par.gpus_per_node = 1;
        if (how == 0)
          par.dp_shard = 1;
        else if (how == 1)
          par.dp_replicate = 4;
        else if (par.mode != MODEL_DP_FSDP_HYBRID_SHARD)
          continue; /* hybrid's default shard group: the node's 1 GPU */
        g_autoptr (GError) error = NULL;
        g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, &error);
        CU_ASSERT_FATAL (p != NULL);
        CommTotals t = rank0_comm (p);
        STEPSIM_ASSERT_REL (t.bytes[HW_COLLECTIVE_ALL_REDUCE], 2 * psi, 1e-12);
        CU_ASSERT_EQUAL (t.count[HW_COLLECTIVE_REDUCE_SCATTER] + t.count[HW_COLLECTIVE_ALL_GATHER], 0);
        CU_ASSERT (model_plan_n_collectives (p) > 0);
        for (guint i = 0; i < model_plan_n_collectives (p); i++)
          CU_ASSERT_EQUAL (model_plan_collective (p, i)->n_ranks, 4);
      }
}

/* ddp with dp_replicate = 2 on 16 GPUs leaves shard groups of 8: the error names
 * dp_replicate and what it must be (the GPU count), not dp_shard (QA report item 12b). */
static void
test_unsharded_mesh_error_names_the_key (void)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 16;
  par.gpus_per_node = 8;
  par.dp_replicate = 2;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (model_parallel_validate (&par, &error));
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_str_has_prefix (error->message, "key 'dp_replicate': "));
  CU_ASSERT (strstr (error->message, "dp_replicate must be the data-parallel degree 16") != NULL);
  CU_ASSERT (strstr (error->message, "dp_shard must be") == NULL);
  g_clear_error (&error);
  par.dp_replicate = 0;
  par.dp_shard = 2;
  CU_ASSERT_FALSE (model_parallel_validate (&par, &error));
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_str_has_prefix (error->message, "key 'dp_shard': "));
  CU_ASSERT (strstr (error->message, "dp_shard must be 1 (here 2)") != NULL);
}

/* Every collective instance has exactly one task on each of its ranks, and each task's
 * rank is one of its instance's members (the group's name, from the rank's coordinates,
 * and its member list, from the first rank to reach it, agree: plan_comm.c); the
 * instances of one group (its dimensions and first member) share one member list, listed
 * once a group (a list a collective cost 64 KB each at 16,384 ranks). */
static void
test_instances_consistent (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  const ModelDataParallel modes[] = { MODEL_DP_DDP, MODEL_DP_ZERO2, MODEL_DP_ZERO3,
                                      MODEL_DP_FSDP_HYBRID_SHARD };
  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      g_autoptr (ModelPlan) p = dp_plan (a, &s, modes[m], 8, 4);
      guint n = model_plan_n_collectives (p);
      g_autofree guint *seen = g_new0 (guint, n);
      for (guint i = 0; i < model_plan_n_tasks (p); i++)
        {
          const ModelTask *t = model_plan_task (p, i);
          if (t->collective < 0)
            continue;
          seen[t->collective]++;
          const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
          gboolean member = FALSE;
          for (guint k = 0; k < c->n_ranks; k++)
            member = member || c->ranks[k] == t->rank;
          CU_ASSERT (member);
        }
      for (guint i = 0; i < n; i++)
        CU_ASSERT_EQUAL (seen[i], model_plan_collective (p, i)->n_ranks);
      for (guint i = 0; i < n; i++)
        for (guint j = i + 1; j < n; j++)
          {
            const ModelCollective *x = model_plan_collective (p, i);
            const ModelCollective *y = model_plan_collective (p, j);
            if (x->dims == y->dims && x->ranks[0] == y->ranks[0])
              CU_ASSERT_PTR_EQUAL (x->ranks, y->ranks);
          }
    }
}

/* rank 0's optimizer-step workspace (B; 0 if none) */
static double
step_workspace (const ModelPlan *p)
{
  double sum = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank != 0 || t->kind != MODEL_TASK_KIND_OPTIMIZER)
        continue;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
          if (m->category == MODEL_MEM_WORKSPACE && m->bytes > 0)
            sum += m->bytes;
        }
    }
  return sum;
}

/* The tensors the optimizer steps, by data-parallel wrapper (plan_optimizer_view), seen
 * through Adafactor's state, which factors only what it sees as a matrix (transformers
 * Adafactor._get_options): DeepSpeed's ZeRO (any stage) steps flat fp32 partitions, FSDP1
 * (the custom profile's FullyShardedDataParallel) 1-D shard views, Megatron's distributed
 * optimizer (zero1) 1-D ranges: all unfactored, 4 B × Ψ / N a rank. DDP, FSDP NO_SHARD
 * (use_orig_params views unflattened), FSDP2 (torchtune's fully_shard, or fsdp2 set) and
 * FSDP1 on one rank (its NO_SHARD fallback) step the parameters in their shapes: the
 * factored total, / N where sharded. */
static void
test_optimizer_view_by_wrapper (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  const guint N = 8;
  const struct
  {
    ModelDataParallel mode;
    ModelFrameworkKind fw;
    guint degree;
    gboolean flat, sharded;
  } cases[] = {
    { MODEL_DP_DDP, MODEL_FRAMEWORK_CUSTOM, N, FALSE, FALSE },
    { MODEL_DP_ZERO1, MODEL_FRAMEWORK_CUSTOM, N, TRUE, TRUE },
    { MODEL_DP_ZERO3, MODEL_FRAMEWORK_DEEPSPEED, N, TRUE, TRUE },
    { MODEL_DP_ZERO1, MODEL_FRAMEWORK_DEEPSPEED, 1, TRUE, FALSE },
    { MODEL_DP_ZERO1, MODEL_FRAMEWORK_MEGATRON, N, TRUE, TRUE },
    { MODEL_DP_FSDP_FULL_SHARD, MODEL_FRAMEWORK_CUSTOM, N, TRUE, TRUE },
    { MODEL_DP_FSDP_SHARD_GRAD_OP, MODEL_FRAMEWORK_ACCELERATE_FSDP, N, TRUE, TRUE },
    { MODEL_DP_FSDP_FULL_SHARD, MODEL_FRAMEWORK_TORCHTUNE, N, FALSE, TRUE },
    { MODEL_DP_FSDP_NO_SHARD, MODEL_FRAMEWORK_CUSTOM, N, FALSE, FALSE },
    { MODEL_DP_FSDP_FULL_SHARD, MODEL_FRAMEWORK_CUSTOM, 1, FALSE, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ModelStack s = tiny_stack ();
      model_framework_apply_profile (&s.framework, cases[i].fw);
      s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
      g_autoptr (ModelPlan) p = dp_plan (a, &s, cases[i].mode, cases[i].degree, 8);
      double factored = model_stack_optimizer_state_total (&s, a, NULL);
      double whole = cases[i].flat ? 4 * model_stack_trainable_params (&s, a) : factored;
      double want = whole / (cases[i].sharded ? cases[i].degree : 1);
      STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE), want, 1e-12);
    }
  /* the FSDP version by its own key: FSDP2 under the custom profile steps DTensors */
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  s.framework.fsdp2 = TRUE;
  g_autoptr (ModelPlan) p2 = dp_plan (a, &s, MODEL_DP_FSDP_FULL_SHARD, N, 8);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p2, MODEL_MEM_OPTIMIZER_STATE),
                      model_stack_optimizer_state_total (&s, a, NULL) / N, 1e-12);
}

/* rank 0's optimizer-step task (the first; NULL if none) */
static const ModelTask *
step_task (const ModelPlan *p)
{
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank == 0 && t->kind == MODEL_TASK_KIND_OPTIMIZER)
        return t;
    }
  return NULL;
}

/* The optimizer step's work as the wrapper presents the tensors (plan_step.c optimizer_pass),
 * Adafactor over the tiny model's T trainable tensors, M of them matrices, Ψ parameters,
 * 8 ranks:
 *   DDP steps every parameter in its shape: the host ops of T tensors, M matrices
 *     (model_stack_optimizer_host_ops), Ψ × the step bytes as parameters;
 *   ZeRO-2 steps two flat partitions (the matrices' group and the rest's), no matrix:
 *     the host ops of 2 vectors, Ψ/8 × the step bytes as flattened (its unfactored second
 *     moment read and written);
 *   FSDP1 full shard steps each parameter's 1-D view in the rank's shard: ceil(T/8) tensors,
 *     no matrix, Ψ/8 × the flattened step bytes. */
static void
test_optimizer_step_by_wrapper (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  g_autoptr (ModelInventory) inv = model_stack_inventory (&s, a);
  double tensors = 0, matrices = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      double copies = (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL);
      tensors += t->trainable ? copies : 0;
      matrices += t->trainable && t->ndim >= 2 ? copies : 0;
    }
  CU_ASSERT_FATAL (matrices > 0 && tensors > matrices);
  double psi = model_stack_trainable_params (&s, a);
  const ModelOptimizerView flat = { MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS, 1 };
  const struct
  {
    ModelDataParallel mode;
    double tensors, matrices, params;
    const ModelOptimizerView *view;
  } cases[] = {
    { MODEL_DP_DDP, tensors, matrices, psi, NULL },
    { MODEL_DP_ZERO2, 2, 0, psi / 8, &flat },
    { MODEL_DP_FSDP_FULL_SHARD, ceil (tensors / 8), 0, psi / 8, &flat },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (ModelPlan) p = dp_plan (a, &s, cases[c].mode, 8, 8);
      const ModelTask *t = step_task (p);
      CU_ASSERT_FATAL (t != NULL && t->n_kernels >= 1);
      double ops = 0;
      for (guint k = 0; k < t->n_kernels; k++)
        ops += model_op_host_ops (&model_plan_kernel (p, t->first_kernel + k)->op);
      CU_ASSERT_DOUBLE_EQUAL (ops, model_stack_optimizer_host_ops (&s, cases[c].tensors,
                                                                   cases[c].matrices), 0);
      STEPSIM_ASSERT_REL (t->bytes,
                          cases[c].params * model_stack_optimizer_step_bytes (&s, cases[c].view),
                          1e-12);
    }
}

/* Adafactor's temporaries under ZeRO (2 × 4 B × the largest tensor it steps): the rank's
 * partition of the matrices' group, 2 × 4 × M / N (M: the trainable matrices' elements,
 * model_stack_largest_stepped); ZeRO-3 steps one sub-group at a time, which closes at the
 * parameter that takes it to 1e9 elements or beyond, so with M / N above 1e9 + L / N (a
 * 5,000,000-word vocabulary: two matrices of L = 1.28e9 elements, M ≈ 2.56e9; N = 1) the
 * temporaries are 2 × 4 × (1e9 + L) B, not 2 × 4 × M; over N = 2 (M / 2 < 1e9 + L / 2)
 * the whole partition's, 2 × 4 × M / 2. */
static void
test_adafactor_partition_workspace (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  a->vocab_size = 5000000;
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
  const ModelOptimizerView flat = { MODEL_OPTIMIZER_SEES_FLAT_PARTITIONS, 1 };
  double m = model_stack_largest_stepped (&s, a, &flat);
  double l = model_stack_largest_stepped (&s, a, NULL);
  CU_ASSERT_FATAL (m > 1e9 + l && m / 2 < 1e9 + l / 2);
  g_autoptr (ModelPlan) z2 = dp_plan (a, &s, MODEL_DP_ZERO2, 1, 8);
  STEPSIM_ASSERT_REL (step_workspace (z2), 2 * 4 * m, 1e-9);
  g_autoptr (ModelPlan) z3 = dp_plan (a, &s, MODEL_DP_ZERO3, 1, 8);
  STEPSIM_ASSERT_REL (step_workspace (z3), 2 * 4 * (1e9 + l), 1e-9);
  g_autoptr (ModelPlan) z3_2 = dp_plan (a, &s, MODEL_DP_ZERO3, 2, 8);
  STEPSIM_ASSERT_REL (step_workspace (z3_2), 2 * 4 * m / 2, 1e-9);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "ZeRO model-state bytes per stage (paper Fig. 1)", test_zero_state_bytes },
    { "FSDP modes map onto ZeRO stages", test_fsdp_modes },
    { "FSDP's embedding and head as units of their own", test_fsdp_end_units },
    { "FSDP allocates gathers and gradient shards on its streams", test_fsdp_alloc_streams },
    { "memory after model load and initialisation", test_load_bytes },
    { "DDP and ZeRO-1 communication volumes", test_ddp_and_zero1_volumes },
    { "DDP gradient buckets", test_ddp_buckets },
    { "reduce_dtype sizes every gradient reduction", test_reduce_dtype_sizes_reductions },
    { "ZeRO-3 gathers and reduce-scatters", test_zero3_volumes },
    { "hybrid sharding replica all-reduce", test_hybrid_replica_allreduce },
    { "collective instances consistent across ranks", test_instances_consistent },
    { "HSDP from the mesh keys: groups and bytes", test_hsdp_from_mesh_keys },
    { "shard groups of one still all-reduce over the replicas", test_shard_group_of_one_reduces },
    { "unsharded mode's mesh error names the given key", test_unsharded_mesh_error_names_the_key },
    { "the optimizer steps what the wrapper presents (Adafactor)", test_optimizer_view_by_wrapper },
    { "Adafactor's temporaries: a ZeRO partition, a ZeRO-3 sub-group", test_adafactor_partition_workspace },
    { "the optimizer step's host ops and bytes by wrapper (Adafactor)", test_optimizer_step_by_wrapper },
  };
  return STEPSIM_RUN_TESTS ("models/parallel", tests);
}
