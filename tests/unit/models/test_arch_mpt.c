/* tests/unit/models/test_arch_mpt.c — the MPT family (MosaicML; HF model_type "mpt"): its
 * config keys, parameter counts and per-layer costs.
 *
 * Oracles: MPT-7B's published parameter count (6,649,286,656; HF model card "6.7B",
 * derived by hand below) and hand counts for small shapes; the layer FLOPs of a GELU MLP
 * transformer without biases (Narayanan et al. 2021, arXiv 2104.04473, §5.1).
 */
#include "config.h"
#include "models/arch/arch.h"
#include "models/arch/inventory.h"
#include "models/ops/cost.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

static ModelArch *
load_text (const char *json, GError **error)
{
  return model_arch_load_hf_json (json, "test/mpt.json", error);
}

/* models/configs/mpt-7b.json (mosaicml/mpt-7b): d_model h = 4096, n_layers 32, n_heads 32,
 * expansion_ratio 4 (i = 16384), vocab V = 50432, no_bias, ALiBi, tied embeddings.
 *   wte           V·h = 50432 · 4096                         =   206,569,472
 *   per layer     Wqkv h·3h = 50,331,648, out_proj h·h = 16,777,216,
 *                 up_proj h·4h + down_proj 4h·h = 134,217,728,
 *                 norm_1 + norm_2 weight only 2h = 8,192      =   201,334,784
 *   32 layers                                                 = 6,442,713,088
 *   norm_f        h                                           =         4,096
 *   LM head       tied                                        =             0
 *   total                                                     = 6,649,286,656 */
static void
test_mpt_7b_count (void)
{
  g_autofree char *path = stepsim_test_srcpath ("models/configs/mpt-7b.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) a = model_arch_load_hf_config (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->family, MODEL_FAMILY_MPT);
  CU_ASSERT_STRING_EQUAL (model_arch_family_name (a->family), "mpt");
  CU_ASSERT_EQUAL (a->hidden_size, 4096);
  CU_ASSERT_EQUAL (a->n_layers, 32);
  CU_ASSERT_EQUAL (a->n_heads, 32);
  CU_ASSERT_EQUAL (a->n_kv_heads, 32);
  CU_ASSERT_EQUAL (a->intermediate_size, 16384);
  CU_ASSERT_EQUAL (a->max_positions, 2048);
  CU_ASSERT_EQUAL (a->mlp, MODEL_MLP_GELU);
  CU_ASSERT_FALSE (a->learned_positions);
  CU_ASSERT (a->tied_embeddings);
  CU_ASSERT_EQUAL (model_arch_n_params_embedding (a), 206569472ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_layer (a), 201334784ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_final_norm (a), 4096ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_lm_head (a), 0ULL);
  CU_ASSERT_EQUAL (model_arch_n_params (a), 6649286656ULL);
}

/* The family from a name gets MPT's released defaults (no_bias, ALiBi, tied), so a
 * scenario's `family = mpt` counts as the config does: MPT-7B's sizes with V = 50432. */
static void
test_family_defaults (void)
{
  ModelFamily f;
  CU_ASSERT_FATAL (model_arch_family_from_string ("mpt", &f, NULL));
  ModelArch a = { 0 };
  model_arch_set_family_defaults (&a, f);
  a.hidden_size = 4096, a.n_layers = 32, a.n_heads = a.n_kv_heads = 32, a.head_dim = 128;
  a.intermediate_size = 16384, a.vocab_size = 50432, a.max_positions = 2048;
  CU_ASSERT (model_arch_validate (&a, NULL));
  CU_ASSERT_EQUAL (model_arch_n_params (&a), 6649286656ULL);
}

/* Small shape, h = 8, L = 2, a = 2, V = 10, expansion_ratio 2.5 → i = 20 (int(2.5·8)).
 * no_bias true: per layer Wqkv 3h² + out h² + up h·i + down i·h + 2 norms h
 *   = 192 + 64 + 160 + 160 + 16 = 592; total V·h + 2·592 + h = 80 + 1184 + 8 = 1272.
 * no_bias false: + Wqkv bias 3h + out bias h + up bias i + down bias h + norm biases 2h
 *   = 24 + 8 + 20 + 8 + 16 = 76 per layer, + norm_f bias h:
 *   80 + 2·668 + 16 = 1432. */
static void
test_no_bias_and_ratio (void)
{
  const char *base = "{\"model_type\": \"mpt\", \"d_model\": 8, \"n_layers\": 2, \"n_heads\": 2,"
                     " \"vocab_size\": 10, \"max_seq_len\": 16, \"expansion_ratio\": 2.5";
  g_autofree char *with = g_strconcat (base, ", \"no_bias\": true}", NULL);
  g_autofree char *without = g_strconcat (base, ", \"no_bias\": false}", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) a = load_text (with, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->intermediate_size, 20);
  CU_ASSERT_EQUAL (model_arch_n_params (a), 1272ULL);
  g_autoptr (ModelArch) b = load_text (without, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_EQUAL (b->norm, MODEL_NORM_LAYER);
  CU_ASSERT (b->qkv_bias && b->attn_out_bias && b->mlp_bias);
  CU_ASSERT_EQUAL (model_arch_n_params (b), 1432ULL);
}

/* attn_config.alibi = false with learned_pos_emb (default true): a max_seq_len × h table,
 * + 16·8 = 128 on top of 1272 (same shape as above, no_bias default true). kv_n_heads in
 * attn_config (llm-foundry GQA) gives k = 1: Wqkv (h + 2·d)·h with d = 4 → 128, one layer
 * 128 + 64 + 160 + 160 + 16 = 528 → 80 + 1056 + 8 = 1144. A ratio of the wrong type is
 * a FIELD error naming the key. */
static void
test_attn_config (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) a = load_text (
    "{\"model_type\": \"mpt\", \"d_model\": 8, \"n_layers\": 2, \"n_heads\": 2, \"vocab_size\": 10,"
    " \"max_seq_len\": 16, \"expansion_ratio\": 2.5, \"attn_config\": {\"alibi\": false}}",
    &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT (a->learned_positions);
  CU_ASSERT_EQUAL (model_arch_n_params (a), 1272ULL + 128ULL);
  g_autoptr (ModelArch) g = load_text (
    "{\"model_type\": \"mpt\", \"d_model\": 8, \"n_layers\": 2, \"n_heads\": 2, \"vocab_size\": 10,"
    " \"max_seq_len\": 16, \"expansion_ratio\": 2.5, \"attn_config\": {\"kv_n_heads\": 1}}",
    &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_EQUAL (g->n_kv_heads, 1);
  CU_ASSERT_EQUAL (model_arch_n_params (g), 1144ULL);
  g_autoptr (ModelArch) bad = load_text (
    "{\"model_type\": \"mpt\", \"d_model\": 8, \"n_layers\": 2, \"n_heads\": 2, \"vocab_size\": 10,"
    " \"expansion_ratio\": \"4\"}",
    &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD));
  CU_ASSERT (error != NULL && strstr (error->message, "expansion_ratio") != NULL);
}

/* Tensors as HF stores them: one fused Wqkv (3h × h) per layer, no separate q/k/v; the sum
 * of the shapes is the parameter count. */
static void
test_tensors (void)
{
  g_autofree char *path = stepsim_test_srcpath ("models/configs/mpt-7b.json");
  g_autoptr (ModelArch) a = model_arch_load_hf_config (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
  guint64 sum = 0, wqkv = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *x = model_inventory_tensor (inv, k);
      guint64 copies = model_inventory_copies (inv, x, MODEL_INVENTORY_ALL);
      sum += model_tensor_numel (x) * copies;
      if (x->ndim == 2 && x->shape[0] == 3 * 4096 && x->shape[1] == 4096)
        {
          wqkv += copies;
          CU_ASSERT_EQUAL (x->role, MODEL_TENSOR_QKV);
          CU_ASSERT_STRING_EQUAL (x->name, "transformer.blocks.{i}.attn.Wqkv.weight");
        }
    }
  CU_ASSERT_EQUAL (sum, model_arch_n_params (a));
  CU_ASSERT_EQUAL (wqkv, 32);
  CU_ASSERT_EQUAL (model_inventory_largest (inv, MODEL_INVENTORY_ALL, FALSE), 50432ULL * 4096ULL);
}

/* Layer forward FLOPs of a bias-free GELU transformer with i = 4h (MHA), T = b·s tokens:
 * QKV 2·T·h·3h + scores and A·V 2 × 2·b·s²·h + out 2·T·h² + MLP 2 × 2·T·h·4h
 * = 24·T·h² + 4·b·s²·h (Narayanan §5.1). No rotary op (ALiBi); under eager attention an
 * "alibi" pass over the scores adds 2·e·b·a·s² bytes and no FLOPs; flash fuses it. */
static void
test_layer_cost (void)
{
  ModelArch a = { 0 };
  model_arch_set_family_defaults (&a, MODEL_FAMILY_MPT);
  a.hidden_size = 256, a.n_layers = 2, a.n_heads = a.n_kv_heads = 4, a.head_dim = 64;
  a.intermediate_size = 1024, a.vocab_size = 1000, a.max_positions = 128;
  ModelCostParams p = { .micro_batch = 2, .seq_len = 128, .act_bytes = 2, .weight_bytes = 2,
                        .flash_attention = TRUE };
  double T = 256, h = 256, b = 2, s = 128;
  ModelBlockCost flash = model_cost_layer (&a, &p);
  STEPSIM_ASSERT_REL (flash.fwd.flops, 24 * T * h * h + 4 * b * s * s * h, 1e-12);
  gboolean rotary = FALSE, alibi = FALSE;
  for (guint j = 0; j < flash.fwd.n_ops; j++)
    rotary |= strcmp (flash.fwd.ops[j].name, "rotary") == 0;
  CU_ASSERT_FALSE (rotary);
  p.flash_attention = FALSE;
  ModelBlockCost eager = model_cost_layer (&a, &p);
  STEPSIM_ASSERT_REL (eager.fwd.flops, 24 * T * h * h + 4 * b * s * s * h, 1e-12);
  for (guint j = 0; j < eager.fwd.n_ops; j++)
    if (strcmp (eager.fwd.ops[j].name, "alibi") == 0)
      {
        alibi = TRUE;
        CU_ASSERT_EQUAL (eager.fwd.ops[j].flops, 0.0);
        STEPSIM_ASSERT_REL (eager.fwd.ops[j].bytes, 2 * 2 * b * 4 * s * s, 1e-12);
      }
  CU_ASSERT (alibi);
}

/* The head of MPT as llm-foundry trains it: ComposerMPTCausalLM's default loss is
 * flash-attn's fused CrossEntropyLoss on the e-byte logits, no fp32 copy: forward holds
 * the logits e·T·V, backward them and their e-byte gradient 2·e·T·V (HF's fp32 path holds
 * 4·T·V and 8·T·V; tests/unit/models/test_cost.c). The loss reads the logits once. */
static void
test_head_fused_loss (void)
{
  ModelArch a = { 0 };
  model_arch_set_family_defaults (&a, MODEL_FAMILY_MPT);
  a.hidden_size = 256, a.n_layers = 2, a.n_heads = a.n_kv_heads = 4, a.head_dim = 64;
  a.intermediate_size = 1024, a.vocab_size = 1000, a.max_positions = 128;
  ModelCostParams p = { .micro_batch = 2, .seq_len = 128, .act_bytes = 2, .weight_bytes = 2,
                        .flash_attention = TRUE };
  double TV = 256.0 * 1000.0;
  ModelBlockCost c = model_cost_head (&a, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 2 * TV, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 2 * 2 * TV, 0);
  for (guint j = 0; j < c.fwd.n_ops; j++)
    if (strcmp (c.fwd.ops[j].name, "cross_entropy") == 0)
      CU_ASSERT_DOUBLE_EQUAL (c.fwd.ops[j].bytes, 2 * TV, 0);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "MPT-7B config: 6,649,286,656 parameters", test_mpt_7b_count },
    { "family mpt defaults count as the config", test_family_defaults },
    { "no_bias and a fractional expansion_ratio", test_no_bias_and_ratio },
    { "attn_config: alibi off, kv_n_heads, bad ratio", test_attn_config },
    { "fused Wqkv tensors sum to the count", test_tensors },
    { "layer FLOPs bias-free GELU, no rotary, ALiBi pass", test_layer_cost },
    { "head: llm-foundry's fused cross-entropy keeps e-byte logits", test_head_fused_loss },
  };
  return STEPSIM_RUN_TESTS ("models/arch_mpt", tests);
}
