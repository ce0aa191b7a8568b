/* tests/unit/models/test_framework.c — framework profiles (models/stack/framework.h): the
 * profile table, names, and the memory effect of each knob this layer owns against a
 * closed form (main_grad_fp32, optimizer_impl, optimizer_in_backward, activation_offload,
 * DeepSpeed's reduce buckets, stage-3 persistence and prefetch). */
#include "config.h"

#include <math.h>
#include <string.h>
#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "models/stack/framework.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

typedef struct
{
  double grad_peak, act_peak, total_peak, step_time;
} Outcome;

static Outcome
replay (const ModelArch *a, const ModelStack *s, const ModelParallel *par)
{
  Outcome o = { 0 };
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) plan = model_plan_new (a, s, par, &e);
  if (plan == NULL)
    g_printerr ("\n  plan refused: %s\n", e->message);
  g_assert (plan != NULL);
  guint n = par != NULL ? par->degree : 1;
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = n, .host_memory = 1e12,
                      .intra = HW_INTRA_NVSWITCH, .nvlink_bandwidth = 100e9,
                      .intra_latency = 2e-6 };
  g_autoptr (HwCluster) cluster = hw_cluster_new (&node, 1, fluid);
  hw_node_spec_clear (&node);
  g_autoptr (ModelLedger) ledger = model_ledger_new (n, NULL);
  g_autoptr (ModelExecutor) exec = model_executor_new (plan, cluster, engine, ledger, NULL);
  model_executor_start (exec);
  sim_engine_run (engine);
  o.grad_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_GRADIENTS);
  o.act_peak = model_ledger_category_peak (ledger, 0, MODEL_MEM_ACTIVATIONS);
  o.total_peak = model_ledger_peak (ledger, 0);
  o.step_time = model_executor_rank_end (exec, 0);
  return o;
}

/* Each profile's values, as the cited sources set them (framework.c's table):
 * transformers ForCausalLMLoss upcasts; torchtune CEWithChunkedOutputLoss 8 chunks, fused
 * AdamW; torchtitan ChunkedLossWrapper 8 chunks, nn.RMSNorm (no fp32 save), fused; Megatron
 * fp32 main_grad, in-place fp32 softmax CE ("plain"), FusedAdam; DeepSpeed FusedAdam and
 * ZeRO's element defaults (5e8, 5e8, 5e7, 1e5, 1e9); nanotron FP32GradientAccumulator,
 * in-place CE, fused. */
static void
test_profile_table (void)
{
  const struct
  {
    ModelFrameworkKind kind;
    ModelLossImpl loss;
    guint chunks;
    gboolean norm_fp32, main_grad;
    ModelOptimizerImpl impl;
    double reduce, allgather, prefetch, persist, live;
  } want[] = {
    { MODEL_FRAMEWORK_CUSTOM, MODEL_LOSS_UPCAST, 1, TRUE, FALSE, MODEL_OPTIMIZER_IMPL_FOREACH,
      0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_HF_TRAINER, MODEL_LOSS_UPCAST, 1, TRUE, FALSE,
      MODEL_OPTIMIZER_IMPL_FUSED, 0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_ACCELERATE_FSDP, MODEL_LOSS_UPCAST, 1, TRUE, FALSE,
      MODEL_OPTIMIZER_IMPL_FOREACH, 0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_TORCHTUNE, MODEL_LOSS_CHUNKED, 8, TRUE, FALSE, MODEL_OPTIMIZER_IMPL_FUSED,
      0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_TORCHTITAN, MODEL_LOSS_CHUNKED_HEAD, 8, FALSE, FALSE,
      MODEL_OPTIMIZER_IMPL_FUSED, 0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_MEGATRON, MODEL_LOSS_VOCAB_PARALLEL, 1, FALSE, TRUE,
      MODEL_OPTIMIZER_IMPL_FUSED,
      0, 0, 0, 0, 0 },
    { MODEL_FRAMEWORK_DEEPSPEED, MODEL_LOSS_UPCAST, 1, TRUE, FALSE, MODEL_OPTIMIZER_IMPL_FUSED,
      5e8, 5e8, 5e7, 1e5, 1e9 },
    { MODEL_FRAMEWORK_NANOTRON, MODEL_LOSS_SHARDED, 1, FALSE, TRUE, MODEL_OPTIMIZER_IMPL_FUSED,
      0, 0, 0, 0, 0 },
  };
  G_STATIC_ASSERT (G_N_ELEMENTS (want) == MODEL_N_FRAMEWORKS);
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    {
      ModelFramework fw;
      model_framework_apply_profile (&fw, want[i].kind);
      CU_ASSERT_EQUAL (fw.kind, want[i].kind);
      CU_ASSERT_EQUAL (fw.loss, want[i].loss);
      CU_ASSERT_EQUAL (fw.loss_chunks, want[i].chunks);
      CU_ASSERT_EQUAL (fw.norm_fp32, want[i].norm_fp32);
      CU_ASSERT_FALSE (fw.compile); /* every framework's default: torch.compile off */
      /* Only torchtune expands GQA k/v to the query heads before any attention kernel
       * (torchtune/modules/attention.py); the others call a kernel that takes GQA as is. */
      CU_ASSERT_EQUAL (fw.kv_repeat, want[i].kind == MODEL_FRAMEWORK_TORCHTUNE);
      /* HF's model code since transformers PR #39412 (2025-07) passes enable_gqa to SDPA
       * for an unpadded causal batch (hf_trainer, accelerate_fsdp, deepspeed, custom);
       * 4.46–4.48's repeat_kv before SDPA is the key's (test_hf_sdpa_gqa) */
      CU_ASSERT_FALSE (fw.kv_repeat_sdpa);
      /* The HF model code's eager attention computes softmax in fp32 (custom, hf_trainer,
       * accelerate_fsdp, deepspeed); torchtune and torchtitan call SDPA, Megatron and
       * nanotron fused softmax kernels */
      CU_ASSERT_EQUAL (fw.softmax_fp32, want[i].kind == MODEL_FRAMEWORK_CUSTOM
                                          || want[i].kind == MODEL_FRAMEWORK_HF_TRAINER
                                          || want[i].kind == MODEL_FRAMEWORK_ACCELERATE_FSDP
                                          || want[i].kind == MODEL_FRAMEWORK_DEEPSPEED);
      /* No profile's loop keeps the logits through the backward: the profiles describe
       * torchtune after pytorch/torchtune#1235 (`del logits`), and the others' loss
       * functions take the logits as locals */
      CU_ASSERT_FALSE (fw.logits_kept);
      CU_ASSERT_EQUAL (fw.main_grad_fp32, want[i].main_grad);
      /* only Megatron fuses the weight-gradient accumulation into main_grad and hands
       * autograd Transformer Engine's cached dummy gradients */
      CU_ASSERT_EQUAL (fw.wgrad_dummy, want[i].kind == MODEL_FRAMEWORK_MEGATRON);
      CU_ASSERT_EQUAL (fw.optimizer_impl, want[i].impl);
      CU_ASSERT_FALSE (fw.optimizer_in_backward);
      CU_ASSERT_FALSE (fw.activation_offload);
      /* the rotary table a GPU buffer: torchtune's cache over max_seq_len, torchtitan's
       * caches over the training seq_len, one in each attention layer; the HF model code
       * computes it per forward */
      CU_ASSERT_EQUAL (fw.rope_table, want[i].kind == MODEL_FRAMEWORK_TORCHTUNE
                                        ? MODEL_ROPE_TABLE_MAX_POSITIONS
                                      : want[i].kind == MODEL_FRAMEWORK_TORCHTITAN
                                        ? MODEL_ROPE_TABLE_PER_LAYER
                                        : MODEL_ROPE_TABLE_NONE);
      /* the embedding and the head FSDP units of their own: torchtitan's apply_fsdp */
      CU_ASSERT_EQUAL (fw.fsdp_end_units, want[i].kind == MODEL_FRAMEWORK_TORCHTITAN);
      CU_ASSERT_EQUAL (fw.reduce_bucket_elements, want[i].reduce);
      CU_ASSERT_EQUAL (fw.allgather_bucket_elements, want[i].allgather);
      /* the stage-3 prefetch budgets: NAN (none) outside DeepSpeed, whose 0 means "no
       * prefetch" */
      gboolean ds = want[i].kind == MODEL_FRAMEWORK_DEEPSPEED;
      CU_ASSERT (ds ? fw.stage3_prefetch_bucket_elements == want[i].prefetch
                    : isnan (fw.stage3_prefetch_bucket_elements));
      CU_ASSERT_EQUAL (fw.stage3_param_persistence_threshold, want[i].persist);
      CU_ASSERT (ds ? fw.stage3_max_live_parameters == want[i].live
                    : isnan (fw.stage3_max_live_parameters));
    }
  /* The stack's defaults are the custom profile. */
  ModelStack s;
  model_stack_init_defaults (&s);
  ModelFramework custom;
  model_framework_apply_profile (&custom, MODEL_FRAMEWORK_CUSTOM);
  CU_ASSERT_EQUAL (memcmp (&s.framework, &custom, sizeof custom), 0);
}

/* The HF model code's loss as transformers computes it since v4.49 (loss_utils.py
 * ForCausalLMLoss, PR #35646: the labels padded and shifted, the fp32 logits only viewed):
 * hf_trainer, accelerate_fsdp and deepspeed run it. On the tiny model in pure bf16 (e = 2,
 * no autocast, so no fp32 hidden state among the head's transients), T = b·s = 2·128 = 256
 * tokens, V = 1000, the head's forward holds beside its saved tensors the e-byte logits and
 * their fp32 copy: e·T·V + 4·T·V = 512 000 + 1 024 000 = 1 536 000 B in two tensors. The
 * loss of transformers 4.46–4.48 (upcast_shift) adds the shifted contiguous fp32 copy,
 * 4·b·(s−1)·V = 4·254·1000 = 1 016 000 B, a third tensor. */
static void
test_hf_loss (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  const ModelFrameworkKind hf[] = { MODEL_FRAMEWORK_HF_TRAINER, MODEL_FRAMEWORK_ACCELERATE_FSDP,
                                    MODEL_FRAMEWORK_DEEPSPEED };
  for (guint i = 0; i < G_N_ELEMENTS (hf); i++)
    {
      ModelStack s = tiny_stack ();
      s.precision = MODEL_PRECISION_BF16;
      model_framework_apply_profile (&s.framework, hf[i]);
      ModelCostParams p = model_stack_cost_params (&s);
      ModelBlockCost c = model_cost_head (a, &p);
      CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 2);
      CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 1536000.0, 0);
      /* the older transformers, by its key */
      s.framework.loss = MODEL_LOSS_UPCAST_SHIFT;
      p = model_stack_cost_params (&s);
      c = model_cost_head (a, &p);
      CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 3);
      CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 1536000.0 + 1016000.0, 0);
    }
}

/* The HF Trainer's default optimizer with torch >= 2.8 is "adamw_torch_fused"
 * (training_args.py, transformers PR #37358): torch's _fused_adamw_ reads and writes each
 * state once and makes no whole-state temporary, where foreach's _foreach_sqrt of the
 * second moment makes one fp32 tensor per parameter: 4Ψ (test_optimizer_impl). On the
 * tiny model under bf16_mixed AdamW the hf_trainer profile's step workspace is 0; the key
 * optimizer_impl = foreach (torch < 2.8) gives 4Ψ back. */
static void
test_hf_trainer_fused_adamw (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  model_framework_apply_profile (&s.framework, MODEL_FRAMEWORK_HF_TRAINER);
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 0);
  double psi = model_stack_trainable_params (&s, a);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  STEPSIM_ASSERT_REL (model_stack_optimizer_workspace (&s, a, NULL), 4 * psi, 1e-12);
}

/* HF's SDPA path since transformers PR #39412 (integrations/sdpa_attention.py
 * sdpa_attention_forward: enable_gqa, no repeat_kv, when the mask is None, as for an
 * unpadded causal batch): under attention = sdpa the HF profiles save k and v at their kv
 * heads. The tiny layer (T = b·s = 256 tokens, 8 query heads and 2 kv heads of 32: q = 256,
 * c = 64 columns; bf16_mixed, e = 2) with repeat_kv saves the expanded copies instead, q
 * columns each: 2·e·T·(q − c) = 2·2·256·192 = 196 608 B more a layer. */
static void
test_hf_sdpa_gqa (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  const ModelFrameworkKind hf[] = { MODEL_FRAMEWORK_HF_TRAINER, MODEL_FRAMEWORK_ACCELERATE_FSDP,
                                    MODEL_FRAMEWORK_DEEPSPEED };
  for (guint i = 0; i < G_N_ELEMENTS (hf); i++)
    {
      ModelStack s = tiny_stack ();
      model_framework_apply_profile (&s.framework, hf[i]);
      s.flash_attention = TRUE, s.attention_sdpa = TRUE; /* attention = sdpa */
      ModelCostParams p = model_stack_cost_params (&s);
      CU_ASSERT_FALSE (p.kv_repeat);
      double gqa = model_cost_layer (a, &p).act_saved;
      s.framework.kv_repeat_sdpa = TRUE; /* the transformers of 4.46–4.48 */
      p = model_stack_cost_params (&s);
      CU_ASSERT_TRUE (p.kv_repeat);
      CU_ASSERT_DOUBLE_EQUAL (model_cost_layer (a, &p).act_saved - gqa, 196608.0, 0);
    }
}

static void
test_names (void)
{
  for (guint k = 0; k < MODEL_N_FRAMEWORKS; k++)
    {
      ModelFrameworkKind back;
      CU_ASSERT_TRUE (model_framework_from_string (model_framework_name (k), &back, NULL));
      CU_ASSERT_EQUAL (back, k);
    }
  for (guint k = 0; k < MODEL_N_OPTIMIZER_IMPLS; k++)
    {
      ModelOptimizerImpl back;
      CU_ASSERT_TRUE (model_framework_optimizer_impl_from_string (
        model_framework_optimizer_impl_name (k), &back, NULL));
      CU_ASSERT_EQUAL (back, k);
    }
  for (guint k = 0; k < MODEL_N_LOSSES; k++)
    {
      ModelLossImpl back;
      CU_ASSERT_TRUE (model_framework_loss_from_string (model_framework_loss_name (k), &back,
                                                        NULL));
      CU_ASSERT_EQUAL (back, k);
    }
  for (guint k = 0; k < MODEL_N_ROPE_TABLES; k++)
    {
      ModelRopeTable back;
      CU_ASSERT_TRUE (model_framework_rope_table_from_string (
        model_framework_rope_table_name (k), &back, NULL));
      CU_ASSERT_EQUAL (back, k);
    }
  g_autoptr (GError) e = NULL;
  ModelFrameworkKind k;
  CU_ASSERT_FALSE (model_framework_from_string ("jax", &k, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "jax"));
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "torchtune")); /* lists the accepted names */
}

/* main_grad_fp32 under bf16 mixed: gradients are 4 B instead of 2 and allocated at time 0.
 * Oracle: Ψ trainable parameters → initial gradients 4Ψ, and the gradient peak rises from
 * 2Ψ (the 16-bit .grad, allocated at micro-batch 0) to 4Ψ. */
static void
test_main_grad_fp32 (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = model_stack_trainable_params (&s, a);
  CU_ASSERT_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_GRADIENTS), 0);
  Outcome plain = replay (a, &s, NULL);
  s.framework.main_grad_fp32 = TRUE;
  CU_ASSERT_EQUAL (model_stack_gradient_bytes (&s), 4);
  CU_ASSERT_TRUE (model_stack_gradients_persistent (&s));
  STEPSIM_ASSERT_REL (model_stack_initial_bytes (&s, a, MODEL_MEM_GRADIENTS), 4 * psi, 1e-12);
  Outcome main = replay (a, &s, NULL);
  STEPSIM_ASSERT_REL (plain.grad_peak, 2 * psi, 1e-12);
  STEPSIM_ASSERT_REL (main.grad_peak, 4 * psi, 1e-12);
  /* under fp32 the gradients are fp32 already: the key changes nothing */
  ModelStack f32 = tiny_stack ();
  f32.precision = MODEL_PRECISION_FP32;
  Outcome f32_plain = replay (a, &f32, NULL);
  f32.framework.main_grad_fp32 = TRUE;
  CU_ASSERT_FALSE (model_stack_main_grad_fp32 (&f32));
  CU_ASSERT_FALSE (model_stack_gradients_persistent (&f32));
  Outcome f32_main = replay (a, &f32, NULL);
  CU_ASSERT_EQUAL (f32_main.total_peak, f32_plain.total_peak);
  CU_ASSERT_EQUAL (f32_main.grad_peak, f32_plain.grad_peak);
  /* not with sharded gradients */
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  par.mode = MODEL_DP_ZERO2;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_stack_validate_framework (&s, &par, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "key 'main_grad_fp32'") : NULL);
  par.mode = MODEL_DP_ZERO1; /* Megatron's distributed optimizer */
  CU_ASSERT_TRUE (model_stack_validate_framework (&s, &par, NULL));
}

/* DDP's gradient buckets. PyTorch DDP (gradient_as_bucket_view=False, its default) copies
 * the gradients into bucket tensors: comm_buffers = Ψ × the gradient's bytes, here
 * Ψ × 4 B with main_grad_fp32. Megatron's buckets are views of its one fp32 grad buffer
 * (param_and_grad_buffer.py), so the same step holds the 4Ψ fp32 gradients and no bucket
 * copies: comm_buffers = 0, gradients unchanged. */
static void
test_megatron_grad_buckets (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.framework.main_grad_fp32 = TRUE;
  double psi = model_stack_trainable_params (&s, a);
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  par.mode = MODEL_DP_DDP;
  g_autoptr (ModelPlan) ddp = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ddp);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (ddp, MODEL_MEM_COMM_BUFFERS), 4 * psi, 1e-12);
  ModelStack m = tiny_stack ();
  model_framework_apply_profile (&m.framework, MODEL_FRAMEWORK_MEGATRON);
  CU_ASSERT_TRUE (m.framework.grad_buffer_buckets);
  g_autoptr (ModelPlan) meg = model_plan_new (a, &m, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (meg);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (meg, MODEL_MEM_COMM_BUFFERS), 0);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (meg, MODEL_MEM_GRADIENTS), 4 * psi, 1e-12);
  /* FSDP's NO_SHARD all-reduces each unit's flat gradient in place
   * (_runtime_utils.py _reduce_grad_no_shard): the same replicated gradients as DDP, no
   * bucket copies */
  par.mode = MODEL_DP_FSDP_NO_SHARD;
  g_autoptr (ModelPlan) ns = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ns);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (ns, MODEL_MEM_COMM_BUFFERS), 0);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (ns, MODEL_MEM_GRADIENTS),
                   model_plan_initial_bytes (ddp, MODEL_MEM_GRADIENTS));
}

/* AdamW step temporaries by implementation (fp32 states, 4 B/element): foreach 4Ψ (the
 * whole _foreach_sqrt of the second moment), per-tensor 4 × the largest tensor, fused and
 * cpu_adam 0. The largest tensor of the tiny model is the embedding (or head), 1000 × 256. */
static void
test_optimizer_impl (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double psi = model_stack_trainable_params (&s, a);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  STEPSIM_ASSERT_REL (model_stack_optimizer_workspace (&s, a, NULL), 4 * psi, 1e-12);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  STEPSIM_ASSERT_REL (model_stack_optimizer_workspace (&s, a, NULL), 4 * 1000.0 * 256, 1e-12);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FUSED;
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 0);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_CPU_ADAM;
  CU_ASSERT_EQUAL (model_stack_optimizer_workspace (&s, a, NULL), 0);
  /* cpu_adam is the host step: refused without an offloaded optimizer */
  ModelParallel par;
  model_parallel_init_defaults (&par);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_stack_validate_framework (&s, &par, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "key 'optimizer_impl'") : NULL);
  s.offload.optimizer = MODEL_OFFLOAD_CPU;
  CU_ASSERT_TRUE (model_stack_validate_framework (&s, &par, NULL));
}

/* Σ kernel FLOPs of rank 0's tasks of `kind` (or of every kind with MODEL_N_TASK_KINDS). */
static double
kernel_flops (const ModelPlan *p, guint kind)
{
  double sum = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank != 0 || (kind != MODEL_N_TASK_KINDS && t->kind != kind))
        continue;
      for (guint k = 0; k < t->n_kernels; k++)
        sum += model_plan_kernel (p, t->first_kernel + k)->op.flops;
    }
  return sum;
}

/* optimizer_in_backward: each block's gradients are freed after its step, so the gradient
 * peak is the largest block's, not the model's. Tiny llama layer (h 256, 8 heads of 32, 2
 * KV heads, MLP 688): q 256·256 + k, v 2·256·64 + o 256·256 + MLP 3·256·688 + 2 norms · 256
 * = 65 536 + 32 768 + 65 536 + 528 384 + 512 = 692 736 parameters, above the embedding's
 * and the head's 256 000: peak 2 B × 692 736. Without it: 2Ψ. */
static void
test_optimizer_in_backward (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  CU_ASSERT_EQUAL (model_stack_trainable_layer_params (&s, a), 692736);
  g_autoptr (ModelPlan) p0 = model_plan_new (a, &s, NULL, NULL);
  s.framework.optimizer_in_backward = TRUE;
  Outcome o = replay (a, &s, NULL);
  STEPSIM_ASSERT_REL (o.grad_peak, 2 * 692736.0, 1e-12);
  /* the step's work moves into the backward tasks: none left in the optimizer task, the
   * same total (12 FLOPs per parameter of AdamW, once) */
  g_autoptr (ModelPlan) p1 = model_plan_new (a, &s, NULL, NULL);
  double psi = model_stack_trainable_params (&s, a);
  STEPSIM_ASSERT_REL (kernel_flops (p0, MODEL_TASK_KIND_OPTIMIZER), 12 * psi, 1e-12);
  CU_ASSERT_EQUAL (kernel_flops (p1, MODEL_TASK_KIND_OPTIMIZER), 0);
  STEPSIM_ASSERT_REL (kernel_flops (p1, MODEL_N_TASK_KINDS), kernel_flops (p0, MODEL_N_TASK_KINDS),
                      1e-12);
  /* refused: GA > 1 (torchtune's own check), more than one data-parallel rank */
  ModelParallel par;
  model_parallel_init_defaults (&par);
  s.grad_accum = 2;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_stack_validate_framework (&s, &par, &e));
  CU_ASSERT_PTR_NOT_NULL (e != NULL ? strstr (e->message, "grad_accum") : NULL);
  s.grad_accum = 1;
  par.degree = 2;
  CU_ASSERT_FALSE (model_stack_validate_framework (&s, &par, NULL));
}

/* The id of rank 0's task labelled `label` in `p` (G_MAXUINT: none). */
static guint
task_id (const ModelPlan *p, const char *label)
{
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank == 0 && strcmp (t->label, label) == 0)
        return t->id;
    }
  return G_MAXUINT;
}

/* Σ B that task `id` allocates (sign +1) or frees (sign -1) in `category`. */
static double
task_effect (const ModelPlan *p, guint id, ModelMemCategory category, int sign)
{
  const ModelTask *t = model_plan_task (p, id);
  double sum = 0;
  for (guint k = 0; k < t->n_effects; k++)
    {
      const ModelMemEffect *e = model_plan_effect (p, t->first_effect + k);
      if (e->category == category && e->bytes * sign > 0)
        sum += e->bytes * sign;
    }
  return sum;
}

/* The head matrix's gradient arriving in pieces (plan_step.c head_grad_piece, and
 * head_grad_accumulating from the second micro-batch): autograd adds
 * each later piece in place into the first, so the piece, a whole V×h gradient (bf16 here:
 * 2 × 1000 × 256 = 512 000 B), is a transient of the task that makes it:
 *  - a chunked loss of 8 chunks (chunked, chunked_head): the head's backward (one mm per
 *    chunk), not a plain loss;
 *  - tied embeddings: the embedding's backward (embedding_dense_backward's gradient added
 *    to the head's), not an untied model's;
 *  - tied embeddings under optimizer_in_backward: the head's gradient (allocated by the
 *    head's backward) is held to the embedding's backward, which frees it after stepping
 *    it (the shared matrix's AccumulateGrad runs once, after both contributions). */
static void
test_head_gradient_pieces (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double piece = 2.0 * 1000 * 256;
  s.framework.loss = MODEL_LOSS_CHUNKED;
  s.framework.loss_chunks = 8;
  g_autoptr (ModelPlan) chunked = model_plan_new (a, &s, NULL, NULL);
  ModelStack s1 = s;
  s1.framework.loss_chunks = 1;
  g_autoptr (ModelPlan) one = model_plan_new (a, &s1, NULL, NULL);
  double ws8 = task_effect (chunked, task_id (chunked, "bwd head mb0"), MODEL_MEM_WORKSPACE, 1);
  double ws1 = task_effect (one, task_id (one, "bwd head mb0"), MODEL_MEM_WORKSPACE, 1);
  /* the loss's own chunk transients differ between 8 chunks and 1: compare the heads'
   * workspace less the loss's (the head cost's backward workspace) */
  ModelCostParams c8 = model_stack_cost_params (&s), c1 = model_stack_cost_params (&s1);
  STEPSIM_ASSERT_REL (ws8 - model_cost_head (a, &c8).bwd.workspace, piece, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (ws1 - model_cost_head (a, &c1).bwd.workspace, 0, 1e-6);
  /* torchtitan's ChunkedLossWrapper (chunked_head): one mm backward a slice, the same piece */
  ModelStack sh = s;
  sh.framework.loss = MODEL_LOSS_CHUNKED_HEAD;
  g_autoptr (ModelPlan) sliced = model_plan_new (a, &sh, NULL, NULL);
  ModelCostParams ch = model_stack_cost_params (&sh);
  STEPSIM_ASSERT_REL (task_effect (sliced, task_id (sliced, "bwd head mb0"), MODEL_MEM_WORKSPACE,
                                   1) - model_cost_head (a, &ch).bwd.workspace, piece, 1e-12);
  /* tied: at the embedding's backward */
  ModelStack t = tiny_stack ();
  a->tied_embeddings = TRUE;
  g_autoptr (ModelPlan) tied = model_plan_new (a, &t, NULL, NULL);
  STEPSIM_ASSERT_REL (task_effect (tied, task_id (tied, "bwd embed mb0"), MODEL_MEM_WORKSPACE, 1),
                      piece, 1e-12);
  a->tied_embeddings = FALSE;
  g_autoptr (ModelPlan) untied = model_plan_new (a, &t, NULL, NULL);
  CU_ASSERT_EQUAL (task_effect (untied, task_id (untied, "bwd embed mb0"), MODEL_MEM_WORKSPACE,
                                1), 0);
  /* tied under optimizer_in_backward: held from the head's backward to the embedding's */
  a->tied_embeddings = TRUE;
  t.framework.optimizer_in_backward = TRUE;
  g_autoptr (ModelPlan) held = model_plan_new (a, &t, NULL, NULL);
  guint head = task_id (held, "bwd head mb0"), emb = task_id (held, "bwd embed mb0");
  double head_grad = task_effect (held, head, MODEL_MEM_GRADIENTS, 1);
  CU_ASSERT (head_grad >= piece);
  CU_ASSERT_EQUAL (task_effect (held, head, MODEL_MEM_GRADIENTS, -1), 0);
  CU_ASSERT_EQUAL (task_effect (held, emb, MODEL_MEM_GRADIENTS, -1), head_grad);
  /* gradient accumulation (GA 2, gradients kept): micro-batch 1's new head gradient beside
   * .grad until AccumulateGrad adds it: a transient of the head's backward when untied;
   * tied, held in the shared matrix's input buffer to the embedding's backward */
  ModelStack ga = tiny_stack ();
  ga.grad_accum = 2;
  a->tied_embeddings = FALSE;
  g_autoptr (ModelPlan) acc = model_plan_new (a, &ga, NULL, NULL);
  ModelCostParams cg = model_stack_cost_params (&ga);
  double loss_ws = model_cost_head (a, &cg).bwd.workspace;
  STEPSIM_ASSERT_REL (task_effect (acc, task_id (acc, "bwd head mb1"), MODEL_MEM_WORKSPACE, 1)
                        - loss_ws, piece, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (task_effect (acc, task_id (acc, "bwd head mb0"), MODEL_MEM_WORKSPACE, 1)
                            - loss_ws, 0, 1e-6);
  /* a layer's: its largest weight's new gradient, one at a time (the MLP's 256 × 688) */
  STEPSIM_ASSERT_REL (task_effect (acc, task_id (acc, "bwd L0 mb1"), MODEL_MEM_WORKSPACE, 1)
                        - task_effect (acc, task_id (acc, "bwd L0 mb0"), MODEL_MEM_WORKSPACE,
                                       1), 2.0 * 256 * 688, 1e-12);
  a->tied_embeddings = TRUE;
  g_autoptr (ModelPlan) tacc = model_plan_new (a, &ga, NULL, NULL);
  guint h1 = task_id (tacc, "bwd head mb1"), e1 = task_id (tacc, "bwd embed mb1");
  double in_head = task_effect (tacc, h1, MODEL_MEM_WORKSPACE, 1)
                   - task_effect (tacc, h1, MODEL_MEM_WORKSPACE, -1);
  STEPSIM_ASSERT_REL (in_head, piece, 1e-12); /* allocated there, not freed there */
  /* the embedding's backward frees it and its own piece: 2 pieces freed, 1 allocated */
  STEPSIM_ASSERT_REL (task_effect (tacc, e1, MODEL_MEM_WORKSPACE, -1)
                        - task_effect (tacc, e1, MODEL_MEM_WORKSPACE, 1), piece, 1e-12);
}

/* activation_offload is [offload] activations = cpu: the same plan, the same peaks. */
static void
test_activation_offload (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  Outcome none = replay (a, &s, NULL);
  s.framework.activation_offload = TRUE;
  Outcome fw = replay (a, &s, NULL);
  ModelStack t = tiny_stack ();
  t.offload.activations = MODEL_OFFLOAD_CPU;
  Outcome off = replay (a, &t, NULL);
  CU_ASSERT_EQUAL (fw.act_peak, off.act_peak);
  CU_ASSERT_EQUAL (fw.total_peak, off.total_peak);
  CU_ASSERT_EQUAL (fw.step_time, off.step_time);
  CU_ASSERT (fw.act_peak < none.act_peak);
  model_stack_resolve_framework (&s);
  CU_ASSERT_EQUAL (s.offload.activations, MODEL_OFFLOAD_CPU);
}

/* DeepSpeed's reduce bucket: reduce_bucket_size elements × the gradient's 2 B, two under
 * stage 1–2 with overlap_comm, one under stage 3, none at stage 0 or without a size. */
static void
test_ds_reduce_buffer (void)
{
  ModelFramework fw;
  model_framework_apply_profile (&fw, MODEL_FRAMEWORK_DEEPSPEED);
  CU_ASSERT_EQUAL (model_framework_ds_reduce_buffer_bytes (&fw, 0, 2), 0);
  CU_ASSERT_EQUAL (model_framework_ds_reduce_buffer_bytes (&fw, 2, 2), 1e9);
  fw.ds_overlap_comm = TRUE;
  CU_ASSERT_EQUAL (model_framework_ds_reduce_buffer_bytes (&fw, 1, 2), 2e9);
  CU_ASSERT_EQUAL (model_framework_ds_reduce_buffer_bytes (&fw, 3, 2), 1e9);
  ModelFramework custom;
  model_framework_apply_profile (&custom, MODEL_FRAMEWORK_CUSTOM);
  CU_ASSERT_EQUAL (model_framework_ds_reduce_buffer_bytes (&custom, 2, 2), 0);

  /* In the plan: ZeRO-2 on 2 ranks, a 1e5-element bucket = 2e5 B of comm buffers at time 0
   * more than the custom profile's (which has none under stage 2). */
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  par.mode = MODEL_DP_ZERO2;
  g_autoptr (ModelPlan) p0 = model_plan_new (a, &s, &par, NULL);
  s.framework.reduce_bucket_elements = 1e5;
  g_autoptr (ModelPlan) p1 = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p0, MODEL_MEM_COMM_BUFFERS), 0);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p1, MODEL_MEM_COMM_BUFFERS), 2e5);
  /* made by the first backward under ZeRO-2, with the optimizer under ZeRO-3 */
  CU_ASSERT_EQUAL (model_plan_load_bytes (p1), model_plan_load_bytes (p0));
  par.mode = MODEL_DP_ZERO3;
  g_autoptr (ModelPlan) p3 = model_plan_new (a, &s, &par, NULL);
  s.framework.reduce_bucket_elements = 0;
  g_autoptr (ModelPlan) p30 = model_plan_new (a, &s, &par, NULL);
  STEPSIM_ASSERT_REL (model_plan_load_bytes (p3) - model_plan_load_bytes (p30), 2e5, 1e-9);
  par.mode = MODEL_DP_ZERO2;
  s.framework.reduce_bucket_elements = 1e5;
  Outcome o0 = replay (a, &s, &par);
  s.framework.reduce_bucket_elements = 0;
  Outcome o1 = replay (a, &s, &par);
  STEPSIM_ASSERT_REL (o0.total_peak - o1.total_peak, 2e5, 1e-9);
}

/* Stage-3 persistence: tensors of at most the threshold stay whole on every rank. Tiny
 * llama, threshold 1e5: per layer q and o (65 536 each), k and v (16 384 each), two norms
 * (256 each) = 164 352, four layers 657 408, plus the final norm 256 = 657 664 elements;
 * the MLP matrices (176 128) and the embedding/head (256 000) are partitioned. On 4 ranks
 * each holds (1 − 1/4) × 2 B × 657 664 more weights than its shard. */
static void
test_ds_persistence (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelFramework fw;
  model_framework_apply_profile (&fw, MODEL_FRAMEWORK_DEEPSPEED);
  g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
  CU_ASSERT_EQUAL (model_framework_ds_persistent_elements (&fw, inv), 657664);
  fw.stage3_param_persistence_threshold = 0;
  CU_ASSERT_EQUAL (model_framework_ds_persistent_elements (&fw, inv), 0);

  ModelStack s = tiny_stack ();
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 4;
  par.mode = MODEL_DP_ZERO3;
  g_autoptr (ModelPlan) p0 = model_plan_new (a, &s, &par, NULL);
  s.framework.stage3_param_persistence_threshold = 1e5;
  g_autoptr (ModelPlan) p1 = model_plan_new (a, &s, &par, NULL);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p1, MODEL_MEM_WEIGHTS)
                        - model_plan_initial_bytes (p0, MODEL_MEM_WEIGHTS),
                      0.75 * 2 * 657664, 1e-12);
}

/* Stage-3 prefetch in layers: ⌈bucket / layer⌉ capped by ⌊max_live / layer⌋ − 1, in
 * [1, L]. Layer 1e6 parameters, L 4: bucket 5e7 → 50 → 4; max_live 3e6 → 2;
 * bucket 1 → 1. A bucket or max_live of 0 prefetches nothing (fetch_sub_module: "if
 * prefetch_bucket_sz > 0", min(max_live − available, bucket) <= 0): 0 layers ahead, each
 * gathered on demand. No budget (NAN, the profiles other than DeepSpeed's): G_MAXUINT. */
static void
test_ds_prefetch (void)
{
  ModelFramework fw;
  model_framework_apply_profile (&fw, MODEL_FRAMEWORK_CUSTOM);
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), G_MAXUINT);
  fw.stage3_prefetch_bucket_elements = 0;
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), 0);
  fw.stage3_prefetch_bucket_elements = 5e7;
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), 4);
  fw.stage3_max_live_parameters = 0;
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), 0);
  fw.stage3_max_live_parameters = 3e6;
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), 2);
  fw.stage3_prefetch_bucket_elements = 1;
  CU_ASSERT_EQUAL (model_framework_ds_prefetch_layers (&fw, 1e6, 4), 1);
  /* In the plan, under zero3: the tiny layer (692 736 weights) with a 1.5e6 bucket → 3. */
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.framework.stage3_prefetch_bucket_elements = 1.5e6;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  par.mode = MODEL_DP_ZERO3;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_EQUAL (model_plan_parallel (p)->prefetch, 3);
  /* DeepSpeed's 0: no layer gathered ahead, each layer's gather waits for the previous
   * layer's compute (plan_step.c forward: gather of l + 0 after fwd L(l − 1)) */
  s.framework.stage3_prefetch_bucket_elements = 0;
  g_autoptr (ModelPlan) none = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_EQUAL (model_plan_parallel (none)->prefetch, 0);
}

/* rope_table: the rotary table in the weights, whole (one buffer) on the rank, positions ×
 * rotary_dim/2 × 8 B. torchtune's fp32 (cos, sin) cache over max_position_embeddings:
 * Llama 3.2 3B 131072 × 128/2 × 8 = 67,108,864 B; Llama 2 7B 4096 × 64 × 8 = 2,097,152;
 * DeepSeek-V2-Lite (MLA: only the 64 qk_rope channels rotate) 163840 × 32 × 8 =
 * 41,943,040; GPT-2 (learned positions) none. torchtitan's complex64 freqs_cis over the
 * training seq_len 4096: 4096 × 64 × 8 = 2,097,152 for Llama 3.2 3B; its per-layer caches
 * (since 2026-06): 28 layers × 2,097,152 = 58,720,256 for Llama 3.2 3B (ComplexRoPE), and
 * for Qwen3-8B (CosSinRoPE: cos and sin over all 128 rotary channels, 16 B a pair) 36 ×
 * 4096 × 64 × 16 = 150,994,944. none: nothing. */
static double
rope_weights_delta (const char *model, ModelRopeTable table)
{
  g_autoptr (ModelArch) a = shipped (model);
  ModelStack s;
  model_stack_init_defaults (&s);
  s.precision = MODEL_PRECISION_BF16;
  s.seq_len = MIN (4096, a->max_positions);
  double w[2];
  for (guint i = 0; i < 2; i++)
    {
      s.framework.rope_table = i == 0 ? MODEL_ROPE_TABLE_NONE : table;
      g_autoptr (GError) e = NULL;
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, &e);
      g_assert_no_error (e);
      w[i] = model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS);
    }
  return w[1] - w[0];
}

static void
test_rope_table (void)
{
  CU_ASSERT_EQUAL (rope_weights_delta ("llama-3.2-3b", MODEL_ROPE_TABLE_MAX_POSITIONS),
                   67108864.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("llama-2-7b", MODEL_ROPE_TABLE_MAX_POSITIONS),
                   2097152.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("deepseek-v2-lite", MODEL_ROPE_TABLE_MAX_POSITIONS),
                   41943040.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("gpt2", MODEL_ROPE_TABLE_MAX_POSITIONS), 0.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("llama-3.2-3b", MODEL_ROPE_TABLE_SEQ_LEN), 2097152.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("llama-3.2-3b", MODEL_ROPE_TABLE_PER_LAYER),
                   58720256.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("qwen3-8b", MODEL_ROPE_TABLE_PER_LAYER), 150994944.0);
  CU_ASSERT_EQUAL (rope_weights_delta ("llama-3.2-3b", MODEL_ROPE_TABLE_NONE), 0.0);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "each profile's defaults", test_profile_table },
    { "HF profiles: transformers >= 4.49's loss, no shifted logits copy", test_hf_loss },
    { "hf_trainer: adamw_torch_fused, the Trainer's default with torch >= 2.8",
      test_hf_trainer_fused_adamw },
    { "HF profiles: SDPA with enable_gqa, no repeat_kv", test_hf_sdpa_gqa },
    { "names round-trip; unknown framework lists the names", test_names },
    { "main_grad_fp32: fp32 gradients from time 0", test_main_grad_fp32 },
    { "Megatron's DDP buckets are views of its grad buffer; FSDP NO_SHARD has none",
      test_megatron_grad_buckets },
    { "optimizer_impl: step temporaries", test_optimizer_impl },
    { "optimizer_in_backward: one block's gradients live", test_optimizer_in_backward },
    { "head gradient pieces: chunks, tied embeddings", test_head_gradient_pieces },
    { "activation_offload is [offload] activations = cpu", test_activation_offload },
    { "DeepSpeed reduce bucket bytes", test_ds_reduce_buffer },
    { "DeepSpeed stage-3 persistent parameters", test_ds_persistence },
    { "DeepSpeed stage-3 prefetch in layers", test_ds_prefetch },
    { "rope_table: the rotary table in the weights", test_rope_table },
  };
  return STEPSIM_RUN_TESTS ("models/framework", tests);
}
