/* tests/unit/models/test_plan_mtp.c — DeepSeek-V3's multi-token-prediction layers in the plan
 * ([training] mtp_layers; models/plan/plan_step.c, plan_pp.c, models/ops/cost_ends.c): the
 * inventory's MTP modules, the model FLOPs one depth adds, the model states it adds to the
 * rank holding the loss (one rank, and the last pipeline stage with its embedding copy), the
 * M17 layout with its 'm' now building, the tasks and collectives of the MTP stage, and the
 * refusals. The model is DeepSeek-V3's shipped config cut small (4 layers, 16 experts). */
#include "config.h"

#include <string.h>
#include "models/arch/inventory.h"
#include "models/ops/cost.h"
#include "models/plan/plan.h"
#include "tests/testlib.h"
#include "tests/unit/models/refusal.h"
#include "tests/unit/models/shipped.h"

/* DeepSeek-V3 with `layers` layers, the first `dense` of them dense, and 16 routed experts
 * (top-8, 8 groups of 2, 4 kept: the config's routing with fewer experts). */
static ModelArch *
v3_cut (guint64 layers, guint64 dense)
{
  ModelArch *a = shipped ("deepseek-v3");
  a->n_layers = layers;
  a->deepseek.first_k_dense = dense;
  a->n_experts = 16;
  return a;
}

static ModelStack
stack (guint mtp, guint64 ga)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  s.micro_batch = 1;
  s.seq_len = 512;
  s.grad_accum = ga;
  s.mtp_layers = mtp;
  return s;
}

static ModelPlan *
plan (const ModelArch *a, const ModelStack *s, const ModelParallel *par)
{
  g_autoptr (GError) e = NULL;
  ModelPlan *p = model_plan_new (a, s, par, &e);
  if (p == NULL)
    g_printerr ("\n  %s\n", e->message);
  return p;
}

/* The MTP modules of the inventory: per depth 3h + 2h² + one layer's parameters (the last
 * layer, MoE), in the MTP scope and ALL, never in LAYER or ROOT; named model.layers.{L+d}. */
static void
test_inventory (void)
{
  g_autoptr (ModelArch) a = v3_cut (4, 1);
  g_autoptr (ModelInventory) base = model_inventory_new (a, NULL, NULL);
  g_autoptr (ModelInventory) inv = model_inventory_new_mtp (a, NULL, 2, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
  guint64 h = a->hidden_size, layer = model_inventory_n_params_of_layer (base, 3);
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_MTP),
                   2 * (3 * h + 2 * h * h + layer));
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL),
                   model_inventory_n_params (base, MODEL_INVENTORY_ALL)
                     + model_inventory_n_params (inv, MODEL_INVENTORY_MTP));
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_LAYER),
                   model_inventory_n_params (base, MODEL_INVENTORY_LAYER));
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ROOT),
                   model_inventory_n_params (base, MODEL_INVENTORY_ROOT));
  CU_ASSERT_EQUAL (model_inventory_n_params (base, MODEL_INVENTORY_MTP), 0);
  CU_ASSERT_EQUAL (model_inventory_n_params_of_layer (inv, 5), 3 * h + 2 * h * h + layer);
  gboolean eh = FALSE;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if (t->role == MODEL_TENSOR_MTP_EH_PROJ && t->layer == 4)
        eh = strcmp (t->name, "model.layers.4.eh_proj.weight") == 0 && t->shape[0] == h
             && t->shape[1] == 2 * h;
    }
  CU_ASSERT (eh);
  /* the published split stays: the main count excludes them, model_arch_n_params_mtp
   * counts them (README: 671,026,419,200 + 11,610,068,224 for the whole V3) */
  g_autoptr (ModelArch) v3 = shipped ("deepseek-v3");
  CU_ASSERT_EQUAL (model_arch_n_params (v3), 671026419200ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_mtp (v3), 11610068224ULL);
}

/* One MTP depth adds, per micro-batch of T = b·s tokens (forward + backward model FLOPs,
 * backward = 2 × forward; Narayanan et al. 2021 §5.1):
 *   its decoder layer    = what one more layer adds to the main model: F(L+1) − F(L),
 *                          F = model_cost_step_flops (Megatron: one more MoE layer)
 *   eh_proj              3 · 2·T·(2h)·h = 12·T·h²       (Megatron: 6 · 2h² a token)
 *   shared head + loss   3 · 2·T·h·V    = 6·T·h·V       (Megatron: the logit term × 2)
 *   gather, enorm, hnorm, concat, final norm, cross-entropy: memory-bound, no FLOPs.
 * On one GPU with GA 2 the plan's model FLOPs grow by 2 × that. */
static void
test_model_flops (void)
{
  g_autoptr (ModelArch) a = v3_cut (4, 1);
  g_autoptr (ModelArch) a5 = v3_cut (5, 1);
  ModelStack s0 = stack (0, 2), s1 = stack (1, 2);
  g_autoptr (ModelPlan) p0 = plan (a, &s0, NULL);
  g_autoptr (ModelPlan) p1 = plan (a, &s1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p1);
  ModelCostParams cp = model_stack_cost_params (&s0);
  double T = 512, h = (double) a->hidden_size, V = (double) a->vocab_size;
  double layer = model_cost_step_flops (a5, &cp) - model_cost_step_flops (a, &cp);
  double depth = layer + 12 * T * h * h + 6 * T * h * V;
  STEPSIM_ASSERT_REL (model_plan_model_flops (p1) - model_plan_model_flops (p0), 2 * depth, 1e-9);
  STEPSIM_ASSERT_REL (model_cost_mtp_flops (a, &cp, 1), depth, 1e-9);
  CU_ASSERT_EQUAL (model_cost_mtp_flops (a, &cp, 0), 0);
}

/* One GPU: mtp_layers = 1 raises the model states by the MTP module's parameters × the
 * state bytes a parameter (bf16 weights 2 + fp32 master 4 + bf16 gradients 2 + AdamW 8 =
 * 16 B): every decoder layer's gradients are the MoE layer's, the MTP layer's too. */
static void
test_states_one_rank (void)
{
  g_autoptr (ModelArch) a = v3_cut (4, 1);
  ModelStack s0 = stack (0, 1), s1 = stack (1, 1);
  g_autoptr (ModelPlan) p0 = plan (a, &s0, NULL);
  g_autoptr (ModelPlan) p1 = plan (a, &s1, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p1);
  ModelArch one = *a;
  one.deepseek.n_mtp_layers = 1;
  double mtp = (double) model_arch_n_params_mtp (&one);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_state_bytes (&s1), 16, 0);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (p1, 0) - model_plan_state_bytes (p0, 0),
                      mtp * model_stack_state_bytes (&s1), 1e-12);
}

static ModelParallel
pp_par (guint pp, const char *layout, ModelPpScheduleKind kind)
{
  ModelParallel par;
  model_parallel_init_defaults (&par);
  par.degree = pp;
  par.pp = pp;
  par.pp_layout = layout;
  par.pp_schedule = kind;
  return par;
}

/* Two pipeline stages (layers 0–1 | 2–3), every layer MoE so that the stages' shares are
 * exact: the last stage gains the MTP module and a copy of the embedding (V·h), each at
 * 16 B a parameter; the first stage is unchanged; ranks 0 and 1 all-reduce the two
 * embedding copies' gradients (V·h elements at the bf16 reduce dtype), which without MTP
 * (untied V3) they do not. */
static void
test_states_last_stage (void)
{
  g_autoptr (ModelArch) a = v3_cut (4, 0);
  ModelStack s0 = stack (0, 2), s1 = stack (1, 2);
  ModelParallel par = pp_par (2, NULL, MODEL_PP_1F1B);
  g_autoptr (ModelPlan) p0 = plan (a, &s0, &par);
  g_autoptr (ModelPlan) p1 = plan (a, &s1, &par);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p1);
  ModelArch one = *a;
  one.deepseek.n_mtp_layers = 1;
  double mtp = (double) model_arch_n_params_mtp (&one);
  double emb = (double) model_arch_n_params_embedding (a);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (p1, 1) - model_plan_state_bytes (p0, 1),
                      (mtp + emb) * 16, 1e-12);
  STEPSIM_ASSERT_REL (model_plan_state_bytes (p1, 0), model_plan_state_bytes (p0, 0), 1e-12);
  guint tied[2] = { 0, 0 };
  for (guint i = 0; i < 2; i++)
    {
      const ModelPlan *p = i == 0 ? p0 : p1;
      for (guint k = 0; k < model_plan_n_tasks (p); k++)
        {
          const ModelTask *t = model_plan_task (p, k);
          if (strstr (t->label, "tied embedding") == NULL)
            continue;
          const ModelCollective *c = model_plan_collective (p, (guint) t->collective);
          CU_ASSERT (c->n_ranks == 2 && c->ranks[0] == 0 && c->ranks[1] == 1);
          STEPSIM_ASSERT_REL (c->bytes, emb * 2, 1e-12);
          tied[i]++;
        }
    }
  CU_ASSERT_EQUAL (tied[0], 0);
  CU_ASSERT_EQUAL (tied[1], 2);
}

/* M17's layout Ett|(tt|)*6mL on a 14-layer cut (pp 4, virtual stages from the layout,
 * interleaved): refused without mtp_layers (the 'm' count), built with mtp_layers = 1; only
 * the last pipeline rank runs MTP tasks, once per micro-batch each of the forward's proj,
 * layer and head and the backward's head, layer and proj, and never more than once per
 * (task, micro-batch). Without a layout the MTP layer also goes on the last stage. */
static void
test_m17_layout (void)
{
  g_autoptr (ModelArch) a = v3_cut (14, 3);
  const char *layout = "Ett|(tt|)*6mL";
  ModelStack s0 = stack (0, 4), s1 = stack (1, 4);
  ModelParallel par = pp_par (4, layout, MODEL_PP_INTERLEAVED);
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) refused = model_plan_new (a, &s0, &par, &e);
  CU_ASSERT_PTR_NULL (refused);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT (strstr (e->message, "group [parallel], key 'pipeline_layout'") != NULL
             && strstr (e->message, "[training] mtp_layers = 0") != NULL);
  g_autoptr (ModelPlan) p = plan (a, &s1, &par);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint n[4] = { 0, 0, 0, 0 };
  for (guint k = 0; k < model_plan_n_tasks (p); k++)
    {
      const ModelTask *t = model_plan_task (p, k);
      if (strstr (t->label, "mtp0") != NULL && t->stream == MODEL_STREAM_COMPUTE)
        n[t->rank]++;
    }
  CU_ASSERT (n[0] == 0 && n[1] == 0 && n[2] == 0);
  CU_ASSERT_EQUAL (n[3], 4 * 6);
  ModelParallel even = pp_par (2, NULL, MODEL_PP_1F1B);
  g_autoptr (ModelArch) a4 = v3_cut (4, 1);
  g_autoptr (ModelPlan) q = plan (a4, &s1, &even);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  gboolean last_only = TRUE;
  guint on_last = 0;
  for (guint k = 0; k < model_plan_n_tasks (q); k++)
    {
      const ModelTask *t = model_plan_task (q, k);
      if (strstr (t->label, "mtp0") != NULL && t->stream == MODEL_STREAM_COMPUTE)
        last_only = last_only && t->rank == 1, on_last++;
    }
  CU_ASSERT (last_only && on_last == 4 * 6);
}


/* Refusals naming [training] mtp_layers (or the layout): a model without MTP modules
 * (DeepSeek-V2-Lite), more depths than the config has, LoRA, sqrt checkpointing; a layout
 * whose 'm' count is not mtp_layers; 'm' on a stage without 'L'. */
static void
test_refusals (void)
{
  g_autoptr (ModelArch) v2 = shipped ("deepseek-v2-lite");
  g_autoptr (ModelArch) a = v3_cut (4, 1);
  ModelStack s1 = stack (1, 2), s2 = stack (2, 2);
  expect_refusal (v2, &s1, NULL, "group [training], key 'mtp_layers'", "has 0");
  expect_refusal (a, &s2, NULL, "group [training], key 'mtp_layers'", "num_nextn_predict_layers");
  ModelStack lora = s1;
  lora.finetune = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_ALL_LINEAR);
  expect_refusal (a, &lora, NULL, "group [training], key 'mtp_layers'", "not modelled");
  ModelStack sq = s1;
  sq.checkpointing = MODEL_CHECKPOINTING_SQRT;
  expect_refusal (a, &sq, NULL, "group [training], key 'mtp_layers'", "sqrt");
  ModelParallel none = pp_par (2, "Ett|ttL", MODEL_PP_1F1B);
  expect_refusal (a, &s1, &none, "group [parallel], key 'pipeline_layout'",
          "[training] mtp_layers = 1");
  ModelParallel two = pp_par (2, "Ett|ttmmL", MODEL_PP_1F1B);
  expect_refusal (a, &s1, &two, "group [parallel], key 'pipeline_layout'", "places 2 MTP layers");
  ModelParallel early = pp_par (2, "Ett|tt|m|L", MODEL_PP_INTERLEAVED);
  expect_refusal (a, &s1, &early, "group [parallel], key 'pipeline_layout'", "without the loss");
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "inventory: MTP modules in their own scope, published counts unchanged", test_inventory },
    { "one MTP depth adds layer + 12·T·h² + 6·T·h·V model FLOPs", test_model_flops },
    { "one rank: states grow by the MTP parameters × 16 B", test_states_one_rank },
    { "pp: the last stage gains MTP + an embedding copy; tied all-reduce", test_states_last_stage },
    { "M17's layout Ett|(tt|)*6mL builds with mtp_layers = 1; MTP on the last rank",
      test_m17_layout },
    { "refusals name mtp_layers or the layout", test_refusals },
  };
  return STEPSIM_RUN_TESTS ("models/plan/mtp", tests);
}
