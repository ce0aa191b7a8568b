/* tests/unit/models/test_plan.c — structure, memory effects and FLOPs of the step plan. */
#include "config.h"

#include <string.h>

#include <math.h>
#include "models/ops/cost.h"
#include "models/ops/graph.h"
#include "models/plan/plan.h"
#include "tests/testlib.h"
#include "tests/unit/models/tiny.h"

static guint
count_kind (const ModelPlan *p, ModelTaskKind kind)
{
  guint n = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    n += model_plan_task (p, i)->kind == kind;
  return n;
}

/* Per micro-batch: embedding + L layers + head forward, head + L layers + embedding
 * backward (+ L recomputes under full checkpointing); one optimizer step per rank. */
static void
test_task_counts (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 3;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_EQUAL (count_kind (p, MODEL_TASK_KIND_FORWARD), 3 * (4 + 2));
  CU_ASSERT_EQUAL (count_kind (p, MODEL_TASK_KIND_BACKWARD), 3 * (4 + 2));
  CU_ASSERT_EQUAL (count_kind (p, MODEL_TASK_KIND_RECOMPUTE), 0);
  CU_ASSERT_EQUAL (count_kind (p, MODEL_TASK_KIND_OPTIMIZER), 1);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = 2;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_EQUAL (count_kind (q, MODEL_TASK_KIND_RECOMPUTE), 2 * 3 * 4);
  CU_ASSERT_EQUAL (count_kind (q, MODEL_TASK_KIND_OPTIMIZER), 2);
}

/* Sums the effects of one category over all tasks of rank 0. */
static double
net_effect (const ModelPlan *p, ModelMemCategory c, gboolean positive_only)
{
  double sum = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
          if (t->rank == 0 && m->category == c && (!positive_only || m->bytes > 0))
            sum += m->bytes;
        }
    }
  return sum;
}

/* The first allocation in `category` of rank 0's first task of `kind` (MODEL_N_TASK_KINDS:
 * any) labelled `label` (NULL: any label); NULL if none. */
static const ModelMemEffect *
first_alloc (const ModelPlan *p, ModelTaskKind kind, const char *label,
             ModelMemCategory category)
{
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank != 0 || (kind != MODEL_N_TASK_KINDS && t->kind != kind)
          || (label != NULL && strcmp (t->label, label) != 0))
        continue;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
          if (m->category == category && m->bytes > 0)
            return m;
        }
    }
  return NULL;
}

/* The first workspace allocation of rank 0's first task of `kind` (NULL if none). */
static const ModelMemEffect *
first_workspace (const ModelPlan *p, ModelTaskKind kind)
{
  return first_alloc (p, kind, NULL, MODEL_MEM_WORKSPACE);
}

/* Workspaces booked as the tensors PyTorch allocates (allocator.h, "the loss head"):
 * foreach AdamW's temporaries are one tensor per trainable parameter tensor (inventory
 * order, copies included), each numel × the same bytes per element, summing to
 * model_stack_optimizer_workspace(); the per-tensor loop books one block. The head's
 * forward under the upcast loss: the e-byte logits and their fp32 copy, two blocks. */
static void
test_workspace_tensors (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_ADAMW;
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_FOREACH;
  s.framework.loss = MODEL_LOSS_UPCAST;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  const ModelMemEffect *w = first_workspace (p, MODEL_TASK_KIND_OPTIMIZER);
  CU_ASSERT_FATAL (w != NULL);
  g_autoptr (ModelInventory) inv = model_stack_inventory (&s, a);
  guint n = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if (t->trainable)
        n += (guint) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL);
    }
  CU_ASSERT_EQUAL (w->n_tensors, n);
  STEPSIM_ASSERT_REL (w->bytes, model_stack_optimizer_workspace (&s, a, NULL), 1e-12);
  const double *sizes = model_plan_tensor_sizes (p, w->first_tensor);
  const ModelTensor *t0 = model_inventory_tensor (inv, 0);
  double per_elem = w->bytes / (double) model_inventory_n_trainable (inv, MODEL_INVENTORY_ALL);
  STEPSIM_ASSERT_REL (sizes[0], per_elem * (double) model_tensor_numel (t0), 1e-12);
  const ModelMemEffect *h = NULL;
  for (guint i = 0; i < model_plan_n_tasks (p) && h == NULL; i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->kind == MODEL_TASK_KIND_FORWARD && strncmp (t->label, "fwd head", 8) == 0)
        for (guint e = 0; e < t->n_effects; e++)
          {
            const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
            if (m->category == MODEL_MEM_WORKSPACE && m->bytes > 0)
              h = m;
          }
    }
  CU_ASSERT_FATAL (h != NULL);
  CU_ASSERT_EQUAL (h->n_tensors, 2);
  s.framework.optimizer_impl = MODEL_OPTIMIZER_IMPL_PER_TENSOR;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, NULL, NULL);
  w = first_workspace (q, MODEL_TASK_KIND_OPTIMIZER);
  CU_ASSERT_FATAL (w != NULL);
  CU_ASSERT_EQUAL (w->n_tensors, 0);
}

/* The positive activations effect of rank 0's task labelled `label` (NULL if none). */
static const ModelMemEffect *
activations_of (const ModelPlan *p, const char *label)
{
  return first_alloc (p, MODEL_N_TASK_KINDS, label, MODEL_MEM_ACTIVATIONS);
}

/* Asserts that effect m books exactly the n tensors of `want` (B), in order. */
static void
assert_tensors (const ModelPlan *p, const ModelMemEffect *m, const double *want, guint n)
{
  CU_ASSERT_FATAL (m != NULL && n > 1);
  CU_ASSERT_EQUAL_FATAL (m->n_tensors, n);
  const double *sizes = model_plan_tensor_sizes (p, m->first_tensor);
  for (guint i = 0; i < n; i++)
    STEPSIM_ASSERT_REL (sizes[i], want[i], 1e-12);
}

/* Selective recompute books what a layer's forward keeps and what its recompute re-creates
 * tensor by tensor, as PyTorch allocates them (each its own caching-allocator block), not
 * as one block each: the layer graph's saved tensors under KEEP_NON_SELECTIVE, and those of
 * KEEP_ALL it drops (eager attention: the scores, softmax and dropout tensors); likewise
 * op-level selective. One lump per layer made S1's reserved memory under selective 3.9 GiB
 * above no checkpointing's (selective_op's 1 GiB): after the first step's optimizer states
 * split the cached lumps, the second step's lumps fitted no hole and took new segments. */
static void
test_selective_tensors (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.flash_attention = FALSE; /* eager: several tensors re-created */
  s.attention_sdpa = FALSE;
  s.checkpointing = MODEL_CHECKPOINTING_SELECTIVE;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  ModelCostParams cp = model_stack_cost_params (&s);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (a, &cp);
  double kept[MODEL_COST_MAX_TENSORS], rerun[MODEL_COST_MAX_TENSORS];
  guint n_kept = 0, n_rerun = 0;
  double kb = model_graph_saved (g, MODEL_GRAPH_KEEP_NON_SELECTIVE, cp.compile, kept,
                                 MODEL_COST_MAX_TENSORS, &n_kept);
  double rb = model_graph_recreated (g, MODEL_GRAPH_KEEP_NON_SELECTIVE, cp.compile, rerun,
                                     MODEL_COST_MAX_TENSORS, &n_rerun);
  ModelBlockCost lc = model_cost_layer (a, &cp);
  STEPSIM_ASSERT_REL (rb, lc.act_selective, 1e-12);
  STEPSIM_ASSERT_REL (kb, lc.act_saved - lc.act_selective, 1e-12);
  assert_tensors (p, activations_of (p, "fwd L1 mb0"), kept, n_kept);
  assert_tensors (p, activations_of (p, "recompute selective L1 mb0"), rerun, n_rerun);
  /* op-level selective: the block input, matmul and attention outputs kept (KEEP_MATMUL),
   * the point-wise ops' saved outputs re-created (those KEEP_MATMUL_SAVED drops) */
  s.checkpointing = MODEL_CHECKPOINTING_SELECTIVE_OP;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, NULL, NULL);
  kb = model_graph_saved (g, MODEL_GRAPH_KEEP_MATMUL, cp.compile, kept, MODEL_COST_MAX_TENSORS,
                          &n_kept);
  rb = model_graph_recreated (g, MODEL_GRAPH_KEEP_MATMUL_SAVED, cp.compile, rerun,
                              MODEL_COST_MAX_TENSORS, &n_rerun);
  STEPSIM_ASSERT_REL (kb, lc.act_keep_matmul, 1e-12);
  STEPSIM_ASSERT_REL (rb, lc.act_pointwise, 1e-12);
  assert_tensors (q, activations_of (q, "fwd L1 mb0"), kept, n_kept);
  assert_tensors (q, activations_of (q, "recompute pointwise L1 mb0"), rerun, n_rerun);
}

/* Everything a step allocates it frees: activations, workspace and gradients net to zero;
 * gradients allocated once (micro-batch 0) total Ψ × gradient bytes. */
static void
test_effects_balance (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  for (int ckpt = 0; ckpt <= 1; ckpt++)
    {
      ModelStack s = tiny_stack ();
      s.grad_accum = 2;
      s.checkpointing = ckpt ? MODEL_CHECKPOINTING_FULL : MODEL_CHECKPOINTING_NONE;
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
      CU_ASSERT (fabs (net_effect (p, MODEL_MEM_ACTIVATIONS, FALSE)) < 1e-3);
      CU_ASSERT (fabs (net_effect (p, MODEL_MEM_WORKSPACE, FALSE)) < 1e-3);
      CU_ASSERT (fabs (net_effect (p, MODEL_MEM_GRADIENTS, FALSE)) < 1e-3);
      double psi = (double) model_arch_n_params (a);
      STEPSIM_ASSERT_REL (net_effect (p, MODEL_MEM_GRADIENTS, TRUE),
                          psi * model_stack_gradient_bytes (&s), 1e-12);
    }
}

/* B of rank 0's task `label`'s effects in `category` taking effect `when` (any when < 0),
 * allocations (sign +1) or frees (sign −1); `largest` (may be NULL) the largest one's (each
 * with its sign). */
static double
task_effects (const ModelPlan *p, const char *label, ModelMemCategory category, gint when,
              double sign, double *largest)
{
  double sum = 0, big = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      if (t->rank != 0 || strcmp (t->label, label) != 0)
        continue;
      for (guint e = 0; e < t->n_effects; e++)
        {
          const ModelMemEffect *m = model_plan_effect (p, t->first_effect + e);
          if (m->category == category && (when < 0 || (gint) m->when == when)
              && sign * m->bytes > 0)
            {
              sum += m->bytes;
              if (fabs (m->bytes) > fabs (big))
                big = m->bytes;
            }
        }
    }
  if (largest != NULL)
    *largest = big;
  return sum;
}

/* Activation bytes rank 0's task `label` allocates (sign +1) or frees (sign −1). */
static double
task_activations (const ModelPlan *p, const char *label, double sign)
{
  return task_effects (p, label, MODEL_MEM_ACTIVATIONS, -1, sign, NULL);
}

/* Autocast's weight cache under full checkpointing (models/plan/plan_ckpt.c): a
 * checkpointed layer's forward keeps its input (act_checkpoint) and leaves its fp16 weight
 * copies in autocast's cache — 2 B × the layer's attention and MLP parameters (what
 * F.linear casts; norms run in fp32) — and the head's forward, the end of the autocast
 * region, frees all L of them. Without checkpointing the copies are among the layer's
 * saved tensors and the head frees nothing of the layers'. In fp32 nothing is cached. */
static void
test_autocast_cache_under_checkpointing (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.precision = MODEL_PRECISION_FP16_AMP;
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double copies = 2.0 * (double) (model_arch_n_params_attention (a) + model_arch_n_params_mlp (a));
  double input = 4.0 * 2 * 128 * 256; /* b·s·h fp32 elements */
  STEPSIM_ASSERT_REL (task_activations (p, "fwd L1 mb0", 1), input + copies, 1e-12);
  STEPSIM_ASSERT_REL (task_activations (p, "fwd head mb0", -1), -4 * copies, 1e-12);
  s.checkpointing = MODEL_CHECKPOINTING_NONE;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_EQUAL (task_activations (q, "fwd head mb0", -1), 0);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  s.precision = MODEL_PRECISION_FP32;
  g_autoptr (ModelPlan) r = model_plan_new (a, &s, NULL, NULL);
  STEPSIM_ASSERT_REL (task_activations (r, "fwd L1 mb0", 1), input, 1e-12);
}

/* The head's 16-bit weight copy under autocast (plan_ckpt.c plan_step_head_cast_bytes):
 * 2 B × vocab × hidden (the tiny model's untied head, or the tied embedding matrix),
 * allocated by the head's forward and freed by its backward; nothing in bf16_mixed, whose
 * weights are already 16-bit. */
static void
test_autocast_head_cast (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  double copy = 2.0 * 1000 * 256;
  for (int amp = 0; amp <= 1; amp++)
    {
      s.precision = amp ? MODEL_PRECISION_BF16_AMP : MODEL_PRECISION_BF16_MIXED;
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      ModelCostParams cp = model_stack_cost_params (&s);
      double saved = model_cost_head (a, &cp).act_saved; /* the head's own tensors */
      double fwd = task_activations (p, "fwd head mb0", 1);
      STEPSIM_ASSERT_REL (fwd, saved + (amp ? copy : 0), 1e-12);
      STEPSIM_ASSERT_REL (task_activations (p, "bwd head mb0", -1), -fwd, 1e-12);
    }
}

/* The compiled chunked cross-entropy at the head's backward (models/ops/cost_ends.c
 * loss_memory), LoRA (the tied head frozen: no weight-gradient piece): autograd runs all
 * n chunks' CompiledFunctionBackward before the head's mm backwards (the engine pops the
 * highest sequence_nr first; the loss's nodes were made after the model's), and the first
 * writes its chunk's gradient while all n saved e-byte chunks are alive (it frees its own
 * saved chunk only after the kernel that reads it; Inductor never writes an output into a
 * graph input). So "bwd head" allocates one chunk's gradient, e·T·V/n, at its start, and
 * frees the head's saved tensors, the n chunks among them, at its end, not before. Tiny
 * model, bf16, b·s = 256 tokens, V = 1000, n = 8: 64,000 B beside 512,000 B of chunks. */
static void
test_compiled_chunked_head_backward (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.precision = MODEL_PRECISION_BF16;
  s.framework.loss = MODEL_LOSS_CHUNKED;
  s.framework.loss_chunks = 8;
  s.framework.compile = TRUE;
  s.finetune.method = MODEL_FINETUNE_LORA;
  s.finetune.rank = 8;
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, &error);
  g_assert_no_error (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  double chunks = 2.0 * 256 * 1000, largest;
  ModelCostParams cp = model_stack_cost_params (&s);
  double saved = model_cost_head (a, &cp).act_saved;
  CU_ASSERT_TRUE (saved >= chunks);
  /* the gradient: the task's only workspace, one chunk, from its start */
  STEPSIM_ASSERT_REL (task_effects (p, "bwd head mb0", MODEL_MEM_WORKSPACE, MODEL_EFFECT_AT_START,
                                    1, &largest), chunks / 8, 1e-12);
  /* the saved chunks: freed at the task's end only */
  STEPSIM_ASSERT_REL (task_effects (p, "bwd head mb0", MODEL_MEM_ACTIVATIONS, MODEL_EFFECT_AT_END,
                                    -1, &largest), -saved, 1e-12);
  CU_ASSERT_EQUAL (task_effects (p, "bwd head mb0", MODEL_MEM_ACTIVATIONS, MODEL_EFFECT_AT_START,
                                 -1, &largest), 0);
}

/* The load's peak (plan_state.c model_plan_load_peak_bytes). The tiny model's largest
 * layer matrix is the MLP's 688 × 256 = 176,128 elements, its largest root tensor the
 * untied 1000 × 256 = 256,000 head (or embedding). QLoRA in bf16: the 16-bit copy of the
 * largest base matrix while it is quantized, 2 × 176,128 B above the load bytes; QLoRA
 * under bf16_amp also casts the non-quantized tensors to fp32, the 16-bit original of the
 * largest alive meanwhile: max(…, 2 × 256,000). Full fine-tuning: no transient. */
static void
test_load_peak (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.precision = MODEL_PRECISION_BF16;
  g_autoptr (ModelPlan) full = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (full);
  CU_ASSERT_EQUAL (model_plan_load_peak_bytes (full), model_plan_load_bytes (full));
  s.finetune.method = MODEL_FINETUNE_QLORA;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  STEPSIM_ASSERT_REL (model_plan_load_peak_bytes (q) - model_plan_load_bytes (q), 2.0 * 176128,
                      1e-12);
  s.precision = MODEL_PRECISION_BF16_AMP;
  g_autoptr (ModelPlan) amp = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (amp);
  STEPSIM_ASSERT_REL (model_plan_load_peak_bytes (amp) - model_plan_load_bytes (amp),
                      2.0 * 256000, 1e-12);
}

/* Initial state: Ψ × (weights, master, optimizer) bytes of the stack. */
static void
test_initial_state (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  double psi = (double) model_arch_n_params (a);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_WEIGHTS), 2 * psi);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_MASTER_WEIGHTS), 4 * psi);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE), 8 * psi);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_ACTIVATIONS), 0);
}

/* Who creates the optimizer states (plan.h model_plan_creation_task): torch.optim's AdamW
 * makes them at the first optimizer.step() (_init_group), so their creation task is the
 * rank's "optimizer step"; every other initial allocation (weights, master weights) exists
 * from the load. bitsandbytes' paged states (managed memory) and DeepSpeed's ZeRO (states
 * made by its optimizer's constructor) are modelled from the load: G_MAXUINT. */
static void
test_state_creation_task (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  guint t = model_plan_creation_task (p, 0, MODEL_MEM_OPTIMIZER_STATE);
  CU_ASSERT_NOT_EQUAL_FATAL (t, G_MAXUINT);
  CU_ASSERT_EQUAL (model_plan_task (p, t)->kind, MODEL_TASK_KIND_OPTIMIZER);
  CU_ASSERT_STRING_EQUAL (model_plan_task (p, t)->label, "optimizer step");
  CU_ASSERT_EQUAL (model_plan_creation_task (p, 0, MODEL_MEM_WEIGHTS), G_MAXUINT);
  CU_ASSERT_EQUAL (model_plan_creation_task (p, 0, MODEL_MEM_MASTER_WEIGHTS), G_MAXUINT);
  s.optimizer = MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
  g_autoptr (ModelPlan) paged = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_EQUAL (model_plan_creation_task (paged, 0, MODEL_MEM_OPTIMIZER_STATE), G_MAXUINT);
  s.optimizer = MODEL_OPTIMIZER_ADAMW;
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.mode = MODEL_DP_ZERO1;
  g_autoptr (ModelPlan) zero = model_plan_new (a, &s, &par, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (zero);
  CU_ASSERT_EQUAL (model_plan_creation_task (zero, 0, MODEL_MEM_OPTIMIZER_STATE), G_MAXUINT);
}

/* Model FLOPs = GA × 3 × Σ forward FLOPs (model_cost_step_flops per micro-batch);
 * hardware FLOPs add one more forward of every layer under full checkpointing. */
static void
test_flops (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.grad_accum = 2;
  ModelCostParams cp = { .micro_batch = s.micro_batch, .seq_len = s.seq_len, .act_bytes = 2,
                         .weight_bytes = 2, .flash_attention = s.flash_attention };
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  STEPSIM_ASSERT_REL (model_plan_model_flops (p), 2 * model_cost_step_flops (a, &cp), 1e-12);
  STEPSIM_ASSERT_REL (model_plan_hardware_flops (p), model_plan_model_flops (p), 1e-12);
  s.checkpointing = MODEL_CHECKPOINTING_FULL;
  g_autoptr (ModelPlan) q = model_plan_new (a, &s, NULL, NULL);
  ModelBlockCost layer = model_cost_layer (a, &cp);
  STEPSIM_ASSERT_REL (model_plan_hardware_flops (q),
                      model_plan_model_flops (q) + 2 * 4 * layer.fwd.flops, 1e-12);
  CU_ASSERT_EQUAL (model_plan_tokens_per_rank (q), 2 * 2 * 128);
}

/* Tasks of a rank sit on the compute stream in schedule order: forward layers ascending,
 * backward layers descending, optimizer last. */
static void
test_order (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  guint n = model_plan_n_tasks (p);
  CU_ASSERT_EQUAL (model_plan_task (p, 1)->layer, 0);
  CU_ASSERT_EQUAL (model_plan_task (p, 4)->layer, 3);
  CU_ASSERT_EQUAL (model_plan_task (p, 7)->layer, 3);
  CU_ASSERT_EQUAL (model_plan_task (p, 7)->kind, MODEL_TASK_KIND_BACKWARD);
  CU_ASSERT_EQUAL (model_plan_task (p, n - 1)->kind, MODEL_TASK_KIND_OPTIMIZER);
  CU_ASSERT_STRING_EQUAL (model_plan_task (p, 2)->label, "fwd L1 mb0");
}

static void
test_rejects_bad_stack (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  a->learned_positions = TRUE;
  a->max_positions = 64;
  ModelStack s = tiny_stack ();
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (model_plan_new (a, &s, NULL, &e));
  CU_ASSERT_PTR_NOT_NULL (e);
}

int main (void);

/* The stack's attention kernel (attention = triton) reaches every flash kernel of the plan,
 * forward and backward, and no other kernel: plan.c copies it into the kernel's shape. */
static void
test_attention_kernel_reaches_flash (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = tiny_stack ();
  s.flash_attention = TRUE;
  s.attention_kernel = HW_ATTN_TRITON;
  g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint fwd = 0, bwd = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    {
      const ModelTask *t = model_plan_task (p, i);
      for (guint k = 0; k < t->n_kernels; k++)
        {
          const HwKernelShape *sh = &model_plan_kernel (p, t->first_kernel + k)->op.shape;
          gboolean flash = sh->cls == HW_KERNEL_FLASH_FWD || sh->cls == HW_KERNEL_FLASH_BWD;
          CU_ASSERT_EQUAL (sh->attn, flash ? HW_ATTN_TRITON : HW_ATTN_FA2);
          fwd += sh->cls == HW_KERNEL_FLASH_FWD;
          bwd += sh->cls == HW_KERNEL_FLASH_BWD;
        }
    }
  CU_ASSERT_TRUE (fwd > 0 && bwd > 0);
}

/* Under fp8_mixed only the linear layers' GEMMs run in fp8: Transformer Engine leaves the
 * attention core in bf16 (fp8_dpa off by default), so the flash kernel (and eager
 * attention's matmuls) run at bf16, the projections at fp8, element-wise ops at fp32. */
static void
test_fp8_attention_bf16 (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  gboolean flash_modes[2] = { TRUE, FALSE };
  for (guint f = 0; f < 2; f++)
    {
      ModelStack s = tiny_stack ();
      s.precision = MODEL_PRECISION_FP8_MIXED;
      s.flash_attention = flash_modes[f];
      g_autoptr (ModelPlan) p = model_plan_new (a, &s, NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (p);
      guint core = 0, fp8 = 0;
      for (guint i = 0; i < model_plan_n_tasks (p); i++)
        {
          const ModelTask *t = model_plan_task (p, i);
          for (guint k = 0; k < t->n_kernels; k++)
            {
              const ModelKernel *kk = model_plan_kernel (p, t->first_kernel + k);
              gboolean is_core = kk->op.op_class == MODEL_OP_ATTENTION
                                 || strcmp (kk->op.name, "attn_scores") == 0
                                 || strcmp (kk->op.name, "attn_av") == 0;
              if (is_core)
                {
                  CU_ASSERT_EQUAL (kk->dtype, HW_DTYPE_BF16);
                  core++;
                }
              else if (kk->op.op_class == MODEL_OP_GEMM)
                {
                  CU_ASSERT_EQUAL (kk->dtype, HW_DTYPE_FP8);
                  fp8++;
                }
            }
        }
      CU_ASSERT_TRUE (core > 0 && fp8 > 0);
    }
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "task counts per micro-batch", test_task_counts },
    { "fp8_mixed: attention core at bf16, projections at fp8", test_fp8_attention_bf16 },
    { "attention = triton reaches every flash kernel, fwd and bwd", test_attention_kernel_reaches_flash },
    { "memory effects balance", test_effects_balance },
    { "workspaces as tensors: foreach AdamW, loss head", test_workspace_tensors },
    { "(op-level) selective recompute: kept and re-created activations as tensors",
      test_selective_tensors },
    { "initial model states", test_initial_state },
    { "optimizer states created by the first optimizer step", test_state_creation_task },
    { "load peak: QLoRA's quantization and fp32-cast transients", test_load_peak },
    { "autocast weight cache under checkpointing", test_autocast_cache_under_checkpointing },
    { "autocast: the head's cast weight lives to the head's backward", test_autocast_head_cast },
    { "compiled chunked loss: one chunk's gradient beside all saved chunks",
      test_compiled_chunked_head_backward },
    { "model and hardware FLOPs", test_flops },
    { "schedule order", test_order },
    { "inconsistent stack rejected", test_rejects_bad_stack },
  };
  return STEPSIM_RUN_TESTS ("models/plan", tests);
}
