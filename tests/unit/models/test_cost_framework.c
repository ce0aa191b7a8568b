/* tests/unit/models/test_cost_framework.c — what the framework adds to the cost model's saved
 * activations: autocast's fp32 ops, cast copies and cached weight casts, and PyTorch <= 1.10
 * keeping softmax's input. Closed-form differences, derivations in the comments. */
#include "config.h"
#include "models/ops/cost.h"
#include "tests/testlib.h"
#include "tests/unit/models/cost_fixture.h"

/* Autocast (e = 2) keeps in fp32 what it runs in fp32. Eager, with dropout:
 *   plain:    softmax e·S + mask S + dropout output e·S              = (2e + 1)·S
 *   autocast: softmax 4·S + mask S + the AV matmul's cast copy e·S    = (5 + e)·S
 * so +(4 − e)·S = 2S, S = b·a·s²; the two norm inputs go from e·T·h to 4·T·h: +2·(4 − e)·T·h
 * = 4·T·h, T = b·s. The saved tensors still sum to act_saved. The workspace peaks at the
 * softmax: its e-byte input (the scores GEMM's output, in the compute dtype under autocast)
 * beside the fp32 copy ATen's softmax converts it to: (e + 4)·S = 6·S. */
static void
test_autocast_fp32_ops (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  const double b = 2, a = 16, s = 512, h = 1024, S = b * a * s * s, T = b * s;
  ModelCostParams plain = params (2, 512, FALSE, 0.1);
  ModelCostParams amp = plain;
  amp.autocast = TRUE;
  ModelBlockCost cp = model_cost_layer (&arch, &plain), ca = model_cost_layer (&arch, &amp);
  CU_ASSERT_DOUBLE_EQUAL (ca.act_saved - cp.act_saved, 2 * S + 4 * T * h, 0);
  CU_ASSERT_DOUBLE_EQUAL (ca.fwd.workspace, 6 * S, 0);
  double sizes[MODEL_COST_MAX_TENSORS], sum = 0;
  guint n = model_cost_layer_saved_tensors (&arch, &amp, sizes, MODEL_COST_MAX_TENSORS);
  for (guint i = 0; i < n; i++)
    sum += sizes[i];
  CU_ASSERT_DOUBLE_EQUAL (sum, ca.act_saved, 1e-6 * ca.act_saved);
}

/* Autocast's weight casts: weight_cache_bytes × (attention + MLP parameters) more saved per
 * layer. GPT-like h = 64, i = 256: attention 4·(64² + 64) = 16,640, MLP 2·64·256 + 256 + 64
 * = 33,088; at 2 B: 99,456 B. */
static void
test_weight_cache (void)
{
  ModelArch arch = gpt_like (64, 4, 2, 100);
  ModelCostParams p = params (1, 32, TRUE, 0);
  double base = model_cost_layer (&arch, &p).act_saved;
  p.weight_cache_bytes = 2;
  CU_ASSERT_EQUAL (model_cost_layer (&arch, &p).act_saved - base, 99456);
}

static double
sum_saved_tensors (const ModelArch *arch, const ModelCostParams *p)
{
  double sizes[MODEL_COST_MAX_TENSORS], sum = 0;
  guint n = model_cost_layer_saved_tensors (arch, p, sizes, MODEL_COST_MAX_TENSORS);
  for (guint i = 0; i < n; i++)
    sum += sizes[i];
  return sum;
}

/* PyTorch <= 1.10 softmax keeps its input, the masked scores, S = b·a·s² elements in the
 * dtype they were computed in: e = 2 → +2·S per layer; autocast (fp32 scores, the fp32
 * mask's add promotes) → +4·S; flash has no score tensor → +0. The attention core that
 * selective checkpointing drops grows by the same amount. The loss's log_softmax keeps
 * the fp32 logits too, from the forward to the backward: the head saves 4·T·V more. */
static void
test_softmax_saves_input (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  const double S = 2.0 * 16 * 512 * 512, T = 2.0 * 512, V = 1000;
  for (int amp = 0; amp <= 1; amp++)
    for (int flash = 0; flash <= 1; flash++)
      {
        ModelCostParams p = params (2, 512, flash, 0.1);
        p.autocast = amp;
        ModelCostParams old = p;
        old.softmax_saves_input = TRUE;
        ModelBlockCost c = model_cost_layer (&arch, &p), o = model_cost_layer (&arch, &old);
        double expect = flash ? 0 : amp ? 4 * S : 2 * S;
        CU_ASSERT_DOUBLE_EQUAL (o.act_saved - c.act_saved, expect, 0);
        CU_ASSERT_DOUBLE_EQUAL (o.act_selective - c.act_selective, expect, 0);
        CU_ASSERT_DOUBLE_EQUAL (sum_saved_tensors (&arch, &old), o.act_saved, 0);
        ModelBlockCost hc = model_cost_head (&arch, &p), ho = model_cost_head (&arch, &old);
        CU_ASSERT_DOUBLE_EQUAL (ho.act_saved - hc.act_saved, 4 * T * V, 0);
        CU_ASSERT_DOUBLE_EQUAL (ho.fwd.workspace, hc.fwd.workspace, 0);
        CU_ASSERT_DOUBLE_EQUAL (ho.bwd.workspace, hc.bwd.workspace, 0);
      }
}

/* logits_kept (torchtune < 0.3: the recipe's `logits` still bound at loss.backward()): the
 * head keeps, from its forward to its backward, the tensor the loss was given, T = b·s,
 * e = 2: upcast (the model returns self.output(h).float()): the fp32 logits, 4·T·V; plain
 * and chunked: the e-byte logits, 2·T·V; fused: no logits exist, 0. The loss's own
 * transients (fwd / bwd workspace) do not change. */
static void
test_logits_kept (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  arch.family = MODEL_FAMILY_LLAMA;
  arch.mlp = MODEL_MLP_SWIGLU;
  const double T = 2.0 * 512, V = 1000;
  const struct { ModelCostLoss loss; double per_tv; } cases[] = {
    { MODEL_COST_LOSS_UPCAST, 4 }, { MODEL_COST_LOSS_PLAIN, 2 },
    { MODEL_COST_LOSS_CHUNKED, 2 }, { MODEL_COST_LOSS_FUSED, 0 },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      ModelCostParams p = params (2, 512, TRUE, 0);
      p.loss = cases[k].loss;
      p.loss_chunks = cases[k].loss == MODEL_COST_LOSS_UPCAST ? 1 : 8;
      ModelCostParams kept = p;
      kept.logits_kept = TRUE;
      ModelBlockCost c = model_cost_head (&arch, &p), o = model_cost_head (&arch, &kept);
      CU_ASSERT_DOUBLE_EQUAL (o.act_saved - c.act_saved, cases[k].per_tv * T * V, 0);
      CU_ASSERT_DOUBLE_EQUAL (o.fwd.workspace, c.fwd.workspace, 0);
      CU_ASSERT_DOUBLE_EQUAL (o.bwd.workspace, c.bwd.workspace, 0);
    }
}

/* Autocast casts an activation at every op call (only leaf weights are cached), so each
 * separate projection saves its own e-byte copy of its fp32 input. With flash and no
 * dropout (no s² terms), e = 2, T = b·s, autocast − plain:
 *   every family      two norm inputs e → 4 B:          2·(4 − 2)·T·h = 4·T·h
 *   separate q, k, v  two more copies of the QKV input:  2·2·T·h       = 4·T·h
 *   SwiGLU gate, up   one more copy of the MLP input:    2·T·h
 * GPT-2 (fused c_attn, GELU): 4·T·h; BERT (separate, GELU): 8·T·h; llama: 10·T·h. */
static void
test_autocast_separate_projections (void)
{
  const struct { ModelFamily family; ModelMlpKind mlp; double per_th; } cases[] = {
    { MODEL_FAMILY_GPT2, MODEL_MLP_GELU, 4 },
    { MODEL_FAMILY_MPT, MODEL_MLP_GELU, 4 },
    { MODEL_FAMILY_BERT, MODEL_MLP_GELU, 8 },
    { MODEL_FAMILY_LLAMA, MODEL_MLP_SWIGLU, 10 },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      ModelArch arch = gpt_like (256, 4, 1, 1000);
      arch.family = cases[k].family;
      arch.mlp = cases[k].mlp;
      ModelCostParams p = params (2, 64, TRUE, 0);
      ModelCostParams amp = p;
      amp.autocast = TRUE;
      double diff = model_cost_layer (&arch, &amp).act_saved - model_cost_layer (&arch, &p).act_saved;
      CU_ASSERT_DOUBLE_EQUAL (diff, cases[k].per_th * 2 * 64 * 256, 0);
      CU_ASSERT_DOUBLE_EQUAL (sum_saved_tensors (&arch, &amp),
                              model_cost_layer (&arch, &amp).act_saved, 0);
    }
}

static const StepsimTest tests[] = {
  { "softmax keeps its input under PyTorch <= 1.10", test_softmax_saves_input },
  { "logits kept through the backward (torchtune < 0.3)", test_logits_kept },
  { "autocast: a cast input per separate projection", test_autocast_separate_projections },
  { "autocast keeps fp32 what it runs in fp32", test_autocast_fp32_ops },
  { "autocast weight casts saved per layer", test_weight_cache },
};

int main (void);

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/cost_framework", tests);
}
