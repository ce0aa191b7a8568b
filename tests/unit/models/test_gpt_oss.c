/* tests/unit/models/test_gpt_oss.c — gpt_oss: config loading (models/arch/hf_config.c
 * read_gpt_oss), tensor inventory and exact counts (inventory.c add_gpt_oss_mlp), MXFP4
 * expert storage, sliding/full attention layers (attention_window.c) and refused keys.
 *
 * Oracles: the model card's parameter table (OpenAI, gpt-oss-120b & gpt-oss-20b Model Card,
 * arXiv 2508.10925, table 1), reproduced exactly in ../shared/models/README.md:
 *   gpt-oss-20b  total 20,914,757,184 = MLP 19,119,145,728 + attention 637,203,456
 *                + embed & unembed 1,158,266,880 + norms 141,120; active 3,608,307,264
 *   gpt-oss-120b total 116,829,156,672 = MLP 114,714,874,368 + attention 955,805,184
 *                + embed & unembed 1,158,266,880 + norms 210,240; active 5,132,849,472
 * OpenAI's "active" leaves the input-embedding lookup out and keeps the unembedding;
 * model_arch_n_params_active() counts every weight a token touches, the embedding row
 * included (Qwen's convention, test_arch.c test_qwen_moe_active), so the card's figure is
 * active − embedding. Shapes (h 2880, a 64, k 8, d 64, i 2880, V 201088):
 *   attention per layer  2880·4096 + 4096 + 2·(2880·512 + 512) + 4096·2880 + 2880 + 64
 *                        = 26,550,144;   × 24 = 637,203,456, × 36 = 955,805,184
 *   expert               2880·5760 + 5760 + 2880·2880 + 2880 = 24,891,840
 *   router               2880·E + E (E = 32: 92,192; E = 128: 368,768)
 *   MLP per layer (20b)  32 · 24,891,840 + 92,192 = 796,631,072; × 24 = 19,119,145,728
 *   active (20b)         total − embedding 579,133,440 − 24·(32 − 4)·24,891,840.
 */
#include "config.h"
#include "models/arch/arch.h"
#include "models/arch/inventory.h"
#include "models/ops/cost.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

#include <math.h>
#include <string.h>

static const struct
{
  const char *stem;
  guint64 total, mlp, attention, embed_unembed, active, layers, experts;
} card[] = {
  { "gpt-oss-20b", 20914757184ULL, 19119145728ULL, 637203456ULL, 1158266880ULL, 3608307264ULL,
    24, 32 },
  { "gpt-oss-120b", 116829156672ULL, 114714874368ULL, 955805184ULL, 1158266880ULL,
    5132849472ULL, 36, 128 },
};

/* Every component of the card's table, exactly. */
static void
test_card_counts (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (card); i++)
    {
      g_autoptr (ModelArch) a = shipped (card[i].stem);
      CU_ASSERT_PTR_NOT_NULL_FATAL (a);
      CU_ASSERT_EQUAL (a->family, MODEL_FAMILY_GPT_OSS);
      CU_ASSERT_EQUAL (a->n_layers, card[i].layers);
      CU_ASSERT_EQUAL (a->n_experts, card[i].experts);
      CU_ASSERT_EQUAL (model_arch_n_params (a), card[i].total);
      CU_ASSERT_EQUAL (a->n_layers * model_arch_n_params_mlp (a), card[i].mlp);
      CU_ASSERT_EQUAL (a->n_layers * model_arch_n_params_attention (a), card[i].attention);
      CU_ASSERT_EQUAL (model_arch_n_params_embedding (a) + model_arch_n_params_lm_head (a),
                       card[i].embed_unembed);
      CU_ASSERT_EQUAL (model_arch_n_params_active (a) - model_arch_n_params_embedding (a),
                       card[i].active);
      CU_ASSERT_EQUAL (model_arch_n_params_expert (a), 24891840ULL);
      CU_ASSERT_STRING_EQUAL (a->name, card[i].stem);
    }
}

/* The layer template's gpt_oss tensors: sinks a = 64, router 2880·32 + 32, fused experts
 * under their HF names, the config's layer_types (12 of 24 full), window 128, MXFP4. */
static void
test_roles_and_flags (void)
{
  g_autoptr (ModelArch) a = shipped ("gpt-oss-20b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->sliding_window, 128);
  CU_ASSERT_EQUAL (a->n_full_attention_layers, 12);
  CU_ASSERT (a->mxfp4_experts);
  CU_ASSERT (a->qkv_bias && a->attn_out_bias && a->mlp_bias && a->attn_sinks && a->router_bias);
  CU_ASSERT_EQUAL (a->head_dim, 64);
  g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_ATTN_SINK), 64);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_ROUTER),
                   2880 * 32 + 32);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_MLP_GATE), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_MLP_UP),
                   32ULL * (2880 * 5760 + 5760));
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_MLP_DOWN),
                   32ULL * (2880 * 2880 + 2880));
  gboolean seen_gate_up = FALSE, seen_sinks = FALSE;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, k);
      seen_gate_up |= strcmp (t->name, "model.layers.{i}.mlp.experts.gate_up_proj") == 0
                      && t->count == 32 && t->shape[0] == 5760 && t->shape[1] == 2880;
      seen_sinks |= strcmp (t->name, "model.layers.{i}.self_attn.sinks") == 0;
      CU_ASSERT_EQUAL (t->storage, MODEL_TENSOR_STORAGE_WEIGHT); /* full fine-tuning */
    }
  CU_ASSERT (seen_gate_up);
  CU_ASSERT (seen_sinks);
  g_autoptr (ModelArch) big = shipped ("gpt-oss-120b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (big);
  CU_ASSERT_EQUAL (big->n_full_attention_layers, 18);
}

/* A frozen base (LoRA) stores the expert weight matrices MXFP4, 4.25 bits each (OCP MX
 * v1.0: 32 E2M1 values + one E8M0 scale byte): gpt-oss-20b's are 24·32·(2880·5760 +
 * 2880·2880) = 19,110,297,600 elements = 10,152,345,600 B (12,740,198,400 B had they been
 * 4-bit without scales, 38,220,595,200 B in bf16); the other 1,804,459,584 parameters
 * (attention, sinks, router, every bias, norms, embedding, head) stay 2 B. PEFT's
 * all-linear adapts q/k/v/o only: the router and experts are raw nn.Parameters. */
static void
test_mxfp4_lora_bytes (void)
{
  g_autoptr (ModelArch) a = shipped ("gpt-oss-20b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  ModelFinetune ft;
  model_finetune_init_defaults (&ft);
  ft.method = MODEL_FINETUNE_LORA;
  ft.rank = 8;
  ft.targets = MODEL_LORA_ALL_LINEAR;
  g_autoptr (ModelInventory) inv = model_inventory_new (a, &ft, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
  guint64 expert_w = 24ULL * 32 * (2880ULL * 5760 + 2880ULL * 2880);
  CU_ASSERT_EQUAL (expert_w, 19110297600ULL);
  double bytes = model_inventory_weight_bytes (inv, MODEL_INVENTORY_ALL, 2.0, FALSE);
  STEPSIM_ASSERT_REL (bytes, 10152345600.0 + 2.0 * (20914757184.0 - 19110297600.0), 1e-15);
  STEPSIM_ASSERT_REL (MODEL_MXFP4_BYTES * (double) expert_w, 10152345600.0, 1e-15);
  /* adapters: q (2880 → 4096), k, v (2880 → 512), o (4096 → 2880), r = 8, per layer */
  guint64 per_layer = 8 * ((2880 + 4096) + 2 * (2880 + 512) + (4096 + 2880));
  CU_ASSERT_EQUAL (model_inventory_n_adapter (inv, MODEL_INVENTORY_ALL), 24 * per_layer);
  /* dequantize (Mxfp4Config(dequantize=True)): the frozen experts at the weight dtype */
  ft.dequantize = TRUE;
  g_autoptr (ModelInventory) up = model_inventory_new (a, &ft, NULL);
  STEPSIM_ASSERT_REL (model_inventory_weight_bytes (up, MODEL_INVENTORY_ALL, 2.0, FALSE),
                      2.0 * 20914757184.0, 1e-15);
  /* full fine-tuning trains dequantized weights: everything at the weight dtype */
  g_autoptr (ModelInventory) full = model_inventory_new (a, NULL, NULL);
  STEPSIM_ASSERT_REL (model_inventory_weight_bytes (full, MODEL_INVENTORY_ALL, 2.0, FALSE),
                      2.0 * 20914757184.0, 1e-15);
}

static ModelArch *
load_text (const char *json, GError **error)
{
  return model_arch_load_hf_json (json, "test/oss.json", error);
}

#define OSS_BASE "{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_hidden_layers\": 4, " \
  "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, " \
  "\"intermediate_size\": 32, \"vocab_size\": 100, \"num_local_experts\": 4, " \
  "\"num_experts_per_tok\": 2"

/* Without layer_types, GptOssConfig's default (sliding at even indices: 2 of 4 full) and
 * window 128; a window of null makes every layer full; experts listed in
 * modules_to_not_convert stay in the weight dtype. */
static void
test_defaults (void)
{
  g_autoptr (ModelArch) a = load_text (OSS_BASE "}", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->n_full_attention_layers, 2);
  CU_ASSERT_EQUAL (a->sliding_window, 128);
  CU_ASSERT (!a->mxfp4_experts);
  g_autoptr (ModelArch) b = load_text (OSS_BASE ", \"sliding_window\": null}", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_EQUAL (b->n_full_attention_layers, 4);
  g_autoptr (ModelArch) c = load_text (OSS_BASE ", \"quantization_config\": {\"quant_method\": "
                                       "\"mxfp4\", \"modules_to_not_convert\": "
                                       "[\"model.layers.*.mlp.experts\"]}}", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT (!c->mxfp4_experts);
  g_autoptr (ModelArch) d = load_text (OSS_BASE ", \"attention_bias\": false}", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  CU_ASSERT (!d->qkv_bias && !d->attn_out_bias && d->attn_sinks);
}

/* Unsupported values: one error naming the file and the key. */
static void
test_refused (void)
{
  const struct { const char *tail, *key; } bad[] = {
    { ", \"layer_types\": [\"sliding_attention\", \"full_attention\", \"chunked_attention\", "
      "\"full_attention\"]}", "key 'layer_types': entry 2 is \"chunked_attention\"" },
    { ", \"layer_types\": [\"full_attention\"]}", "key 'layer_types': has 1 entry" },
    { ", \"layer_types\": \"full_attention\"}", "key 'layer_types'" },
    { ", \"quantization_config\": {\"quant_method\": \"gptq\"}}",
      "key 'quantization_config.quant_method': \"gptq\"" },
    { ", \"quantization_config\": {\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": 3}}",
      "key 'quantization_config.modules_to_not_convert'" },
    { ", \"experts_per_token\": 3}", "key 'experts_per_token'" },
    { ", \"hidden_act\": \"gelu\"}", "key 'hidden_act'" },
    { ", \"swiglu_limit\": -1}", "key 'swiglu_limit'" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *json = g_strconcat (OSS_BASE, bad[i].tail, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelArch) arch = load_text (json, &error);
      CU_ASSERT_PTR_NULL (arch);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      if (strstr (error->message, bad[i].key) == NULL)
        g_printerr ("\n  %s\n", error->message);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, bad[i].key));
      CU_ASSERT (g_str_has_prefix (error->message, "test/oss.json: "));
    }
}

/* K(s, w) = Σ_{i=1..s} min(i, w) (attention_window.c): s = 16, w = 4: 1 + 2 + 3 + 4 + 12·4
 * = 58; w ≥ s: the triangle, 16·17/2 = 136; w = 0: no window. */
static void
test_causal_pairs (void)
{
  CU_ASSERT_DOUBLE_EQUAL (model_arch_causal_pairs (16, 4), 58, 0);
  guint64 brute = 0;
  for (guint64 i = 1; i <= 1000; i++)
    brute += MIN (i, 128);
  CU_ASSERT_DOUBLE_EQUAL (model_arch_causal_pairs (1000, 128), (double) brute, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_arch_causal_pairs (16, 16), 136, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_arch_causal_pairs (16, 100), 136, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_arch_causal_pairs (16, 0), 136, 0);
}

/* gpt-oss-20b at s = 4096: 12 windowed layers at 2·K(4096, 128)/4096 = 2·(128·129/2 +
 * 3968·128)/4096 = 252.03125 keys, 12 full at 4096: mean 2174.015625; the flash op of the
 * layer template is 4·b·s·s_kv·a·d = 4·1·4096·2174.015625·4096 FLOPs. At s ≤ 128 the window
 * changes nothing. */
static void
test_attention_flops (void)
{
  g_autoptr (ModelArch) a = shipped ("gpt-oss-20b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  STEPSIM_ASSERT_REL (model_arch_attention_keys (a, 4096, TRUE), 2174.015625, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL (model_arch_attention_keys (a, 128, TRUE), 128, 0);
  ModelCostParams p = { .micro_batch = 1, .seq_len = 4096, .act_bytes = 2.0,
                        .weight_bytes = 2.0, .flash_attention = TRUE };
  ModelBlockCost c = model_cost_layer (a, &p);
  double f = NAN;
  for (guint j = 0; j < c.fwd.n_ops; j++)
    if (strcmp (c.fwd.ops[j].name, "attention") == 0)
      f = c.fwd.ops[j].flops;
  STEPSIM_ASSERT_REL (f, 4.0 * 4096 * 2174.015625 * 4096, 1e-12);
}

static const StepsimTest tests[] = {
  { "gpt-oss-20b / -120b: the card's total, MLP, attention, embedding and active counts",
    test_card_counts },
  { "gpt_oss tensors, layer_types and flags", test_roles_and_flags },
  { "MXFP4 experts under LoRA: 4.25 bits per weight (or dequantized); adapters on q/k/v/o only",
    test_mxfp4_lora_bytes },
  { "gpt_oss defaults: layer_types, window, modules_to_not_convert, attention_bias",
    test_defaults },
  { "gpt_oss unsupported values name the file and key", test_refused },
  { "causal sliding-window pairs closed form", test_causal_pairs },
  { "alternating sliding/full attention FLOPs", test_attention_flops },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/gpt_oss", tests);
}
