/* tests/unit/models/test_arch_deepseek.c — the DeepSeek-V2/V3 families (HF model_type
 * deepseek_v2, deepseek_v3): config keys, exact parameter counts, MLA tensor roles, the
 * MTP count, refused values and the MLA layer's forward FLOPs.
 *
 * Oracles: the counts of ../shared/models/README.md (computed there from the formulas of
 * DeepSeek-V2 arXiv 2405.04434 §2.1 and HF modeling_deepseek.py; they match the published
 * 15.7B / 2.4B and 671B / 36.6B + 11.5B MTP); the per-tensor shapes derived by hand below.
 */
#include "config.h"
#include "models/arch/arch.h"
#include "models/arch/inventory.h"
#include "models/ops/cost.h"
#include "models/parallel/expert_parallel.h"
#include "models/parallel/tensor_parallel.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

#include <string.h>

/* DeepSeek-V2-Lite (h 2048, L 27, nh 16, dn 128, dr 64, dv 128, r_kv 512, no q LoRA,
 * V 102400, untied; layer 0 dense of 10944, layers 1-26 MoE: 64 experts of 1408, top-6,
 * 2 shared):
 *   attention  q_proj 2048·16·192 = 6,291,456; kv_a 2048·576 = 1,179,648; kv_a_layernorm
 *              512; kv_b 512·16·256 = 2,097,152; o 16·128·2048 = 4,194,304 → 13,763,072
 *   layer 0    + dense 3·2048·10944 = 67,239,936 + 2 norms 4,096 = 81,007,104
 *   MoE layer  + router 2048·64 = 131,072 + 64·3·2048·1408 = 553,648,128 + shared
 *              3·2048·2816 = 17,301,504 + 4,096 = 584,847,872
 *   total      2·102400·2048 + 2048 + 81,007,104 + 26·584,847,872 = 15,706,484,224.
 * Active (README: excluding the input embedding, including the head) replaces 64 by 6
 * experts per MoE layer: 15,706,484,224 − 26·58·3·2048·1408 − 209,715,200 =
 * 2,451,435,008; model_arch_n_params_active() counts the embedding too (the qwen
 * convention of test_arch.c): 2,661,150,208. */
static void
test_v2_lite_counts (void)
{
  g_autoptr (ModelArch) a = shipped ("deepseek-v2-lite");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->family, MODEL_FAMILY_DEEPSEEK_V2);
  CU_ASSERT_EQUAL (model_arch_n_params (a), 15706484224ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_active (a), 2661150208ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_active (a) - model_arch_n_params_embedding (a),
                   2451435008ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_of_layer (a, 0), 81007104ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_of_layer (a, 1), 584847872ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_of_layer (a, 26), 584847872ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_layer (a), 584847872ULL); /* the representative */
  CU_ASSERT_EQUAL (model_arch_n_params_attention (a), 13763072ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_expert (a), 3ULL * 2048 * 1408);
  CU_ASSERT_EQUAL (model_arch_n_params_mtp (a), 0);
  /* stored fields */
  CU_ASSERT_EQUAL (a->head_dim, 192);
  CU_ASSERT_EQUAL (a->n_kv_heads, 16);
  CU_ASSERT_EQUAL (a->intermediate_size, 1408);
  CU_ASSERT_EQUAL (a->shared_expert_size, 2816);
  CU_ASSERT_FALSE (a->shared_expert_gate);
  CU_ASSERT (a->deepseek.mla);
  CU_ASSERT_EQUAL (a->deepseek.q_lora_rank, 0);
  CU_ASSERT_EQUAL (a->deepseek.first_k_dense, 1);
  CU_ASSERT_EQUAL (a->deepseek.dense_intermediate_size, 10944);
  CU_ASSERT_EQUAL (a->deepseek.n_shared_experts, 2);
  CU_ASSERT_EQUAL (a->deepseek.topk_method, MODEL_TOPK_GREEDY);
  CU_ASSERT_EQUAL (a->deepseek.scoring, MODEL_SCORING_SOFTMAX);
  CU_ASSERT_FALSE (a->deepseek.router_bias);
  CU_ASSERT_EQUAL (a->deepseek.n_group, 1);
  CU_ASSERT_FALSE (a->deepseek.norm_topk_prob);
}

/* DeepSeek-V3 (h 7168, L 61, nh 128, r_q 1536, r_kv 512, dn 128, dr 64, dv 128,
 * V 129280; layers 0-2 dense of 18432, 58 MoE layers of 256 experts of 2048, top-8,
 * 1 shared, noaux_tc): README totals 671,026,419,200 (MTP excluded), active
 * 36,625,618,432 without the input embedding (926,679,040); MoE layer 11,507,286,272 and
 * MTP 11,610,068,224 = 11,507,286,272 + eh_proj 2·7168² + 3 norms of 7168.
 * Attention: q_a 7168·1536 + 1536 + q_b 1536·128·192 + kv_a 7168·576 + 512 + kv_b
 * 512·128·256 + o 128·128·7168 = 187,107,328. Router 7168·256 + bias 256. */
static void
test_v3_counts (void)
{
  g_autoptr (ModelArch) a = shipped ("deepseek-v3");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->family, MODEL_FAMILY_DEEPSEEK_V3);
  CU_ASSERT_EQUAL (model_arch_n_params (a), 671026419200ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_embedding (a), 926679040ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_active (a) - model_arch_n_params_embedding (a),
                   36625618432ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_layer (a), 11507286272ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_mtp (a), 11610068224ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_mtp (a),
                   11507286272ULL + 2ULL * 7168 * 7168 + 3ULL * 7168);
  CU_ASSERT_EQUAL (model_arch_n_params_attention (a), 187107328ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_of_layer (a, 2),
                   187107328ULL + 3ULL * 7168 * 18432 + 2ULL * 7168);
  CU_ASSERT_EQUAL (a->deepseek.q_lora_rank, 1536);
  CU_ASSERT_EQUAL (a->deepseek.first_k_dense, 3);
  CU_ASSERT_EQUAL (a->deepseek.topk_method, MODEL_TOPK_NOAUX_TC);
  CU_ASSERT_EQUAL (a->deepseek.scoring, MODEL_SCORING_SIGMOID);
  CU_ASSERT (a->deepseek.router_bias);
  CU_ASSERT_EQUAL (a->deepseek.n_group, 8);
  CU_ASSERT_EQUAL (a->deepseek.topk_group, 4);
  CU_ASSERT_DOUBLE_EQUAL (a->deepseek.routed_scaling_factor, 2.5, 0);
  CU_ASSERT (a->deepseek.norm_topk_prob);
  CU_ASSERT_EQUAL (a->deepseek.n_mtp_layers, 1);
}

/* The MLA tensors carry their roles and HF names, shapes (out, in) as nn.Linear. */
static void
test_mla_roles (void)
{
  g_autoptr (ModelArch) v2 = shipped ("deepseek-v2-lite");
  g_autoptr (ModelArch) v3 = shipped ("deepseek-v3");
  CU_ASSERT_PTR_NOT_NULL_FATAL (v2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v3);
  g_autoptr (ModelInventory) i2 = model_inventory_new (v2, NULL, NULL);
  g_autoptr (ModelInventory) i3 = model_inventory_new (v3, NULL, NULL);
  const ModelInventoryScope L = MODEL_INVENTORY_LAYER;
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_Q), 2048ULL * 16 * 192);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_Q_A), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_KV_A), 2048ULL * 576);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_KV_B), 512ULL * 16 * 256);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_ATTN_OUT), 2048ULL * 2048);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_MLA_NORM), 512);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, L, MODEL_TENSOR_ROUTER), 2048ULL * 64);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, L, MODEL_TENSOR_Q), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, L, MODEL_TENSOR_Q_A), 7168ULL * 1536);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, L, MODEL_TENSOR_Q_B), 1536ULL * 128 * 192);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, L, MODEL_TENSOR_MLA_NORM), 1536 + 512);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, L, MODEL_TENSOR_ROUTER), 7168ULL * 256 + 256);
  /* the dense layers' MLP is outside LAYER (the MoE layer) and inside ALL, 3 copies */
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, MODEL_INVENTORY_ALL, MODEL_TENSOR_SHARED_UP),
                   58ULL * 7168 * 2048);
  gboolean kv_b = FALSE, dense = FALSE;
  for (guint j = 0; j < i3->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (i3, j);
      if (t->role == MODEL_TENSOR_KV_B)
        {
          kv_b = TRUE;
          g_autofree char *name = model_inventory_tensor_name (t, 5, 0);
          CU_ASSERT_STRING_EQUAL (name, "model.layers.5.self_attn.kv_b_proj.weight");
          CU_ASSERT_EQUAL (t->shape[0], 128ULL * 256);
          CU_ASSERT_EQUAL (t->shape[1], 512);
        }
      if (t->role == MODEL_TENSOR_MLP_UP && t->count == 1)
        {
          dense = TRUE;
          CU_ASSERT_STRING_EQUAL (t->name, "model.layers.{i}.mlp.up_proj.weight");
          CU_ASSERT_EQUAL (model_inventory_copies (i3, t, MODEL_INVENTORY_ALL), 3);
          CU_ASSERT_EQUAL (model_inventory_copies (i3, t, MODEL_INVENTORY_LAYER), 0);
        }
    }
  CU_ASSERT (kv_b);
  CU_ASSERT (dense);
}

/* Unsupported or inconsistent values are refused, naming the file and the key. */
static void
test_refused (void)
{
  const char *base = "{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, "
                     "\"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"vocab_size\": 100, "
                     "\"intermediate_size\": 96, \"moe_intermediate_size\": 32, "
                     "\"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
                     "\"q_lora_rank\": null, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, "
                     "\"v_head_dim\": 16, \"first_k_dense_replace\": 1";
  const struct { const char *tail, *key; } bad[] = {
    { ", \"kv_lora_rank\": 32, \"topk_method\": \"random\"}", "topk_method" },
    { ", \"kv_lora_rank\": 32, \"scoring_func\": \"tanh\"}", "scoring_func" },
    { ", \"kv_lora_rank\": 32, \"moe_layer_freq\": 2}", "moe_layer_freq" },
    { ", \"kv_lora_rank\": 32, \"attention_bias\": true}", "attention_bias" },
    { ", \"kv_lora_rank\": 32, \"n_group\": 3}", "n_group" },
    { ", \"kv_lora_rank\": 32, \"q_lora_rank\": 0}", "q_lora_rank" },
    { ", \"kv_lora_rank\": 32, \"routed_scaling_factor\": 1e999}", "routed_scaling_factor" },
    { ", \"kv_lora_rank\": 32, \"routed_scaling_factor\": -2.5}", "routed_scaling_factor" },
    { "}", "kv_lora_rank" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *json = g_strconcat (base, bad[i].tail, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelArch) arch = model_arch_load_hf_json (json, "test/ds.json", &error);
      CU_ASSERT_PTR_NULL (arch);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "test/ds.json"));
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, bad[i].key));
    }
  g_autofree char *ok = g_strconcat (base, ", \"kv_lora_rank\": 32}", NULL);
  g_autoptr (ModelArch) arch = model_arch_load_hf_json (ok, "test/ds.json", NULL);
  CU_ASSERT_PTR_NOT_NULL (arch);
}

/* The MoE layer's forward FLOPs (model_cost_layer, the op graph of graph_layer.c): every
 * GEMM is 2·tokens·in·out, so their sum is 2·T·(active matmul parameters of the layer:
 * MLA projections, router, top-k experts on T·k tokens, shared experts), norms and the
 * router bias aside; attention (FlashAttention's full square; eager: Q·Kᵀ and P·V) adds
 * 2·b·s²·nh·(dn+dr) for the scores and 2·b·s²·nh·dv for the values (V2 §2.1.3: the
 * score head is dn + dr, the value head dv). V2-Lite: 2048·3072 + 2048·576 + 512·4096 +
 * 2048·2048 + 2048·64 + 6·3·2048·1408 + 3·2048·2816; V3 replaces q_proj by
 * 7168·1536 + 1536·24576. */
static void
test_layer_flops (void)
{
  const char *stems[] = { "deepseek-v2-lite", "deepseek-v3" };
  for (gsize i = 0; i < G_N_ELEMENTS (stems); i++)
    {
      g_autoptr (ModelArch) a = shipped (stems[i]);
      CU_ASSERT_PTR_NOT_NULL_FATAL (a);
      const ModelDeepseek *ds = &a->deepseek;
      double h = (double) a->hidden_size, nh = (double) a->n_heads;
      double dq = (double) (ds->qk_nope_head_dim + ds->qk_rope_head_dim);
      double dv = (double) ds->v_head_dim, rkv = (double) ds->kv_lora_rank;
      double rq = (double) ds->q_lora_rank, I = (double) a->intermediate_size;
      double q = rq > 0 ? h * rq + rq * nh * dq : h * nh * dq;
      double attn = q + h * (rkv + ds->qk_rope_head_dim) + rkv * nh * (ds->qk_nope_head_dim + dv)
                    + nh * dv * h;
      double moe = h * (double) a->n_experts + (double) a->experts_per_token * 3 * h * I
                   + 3 * h * (double) a->shared_expert_size;
      double b = 2, s = 512, T = b * s;
      for (int flash = 0; flash < 2; flash++)
        {
          ModelCostParams p = { .micro_batch = 2, .seq_len = 512, .act_bytes = 2,
                                .weight_bytes = 2, .flash_attention = flash };
          ModelBlockCost c = model_cost_layer (a, &p);
          double expected = 2 * T * (attn + moe) + 2 * b * s * s * nh * (dq + dv);
          STEPSIM_ASSERT_REL (c.fwd.flops, expected, 1e-12);
        }
    }
}

/* recompute_modules mla_up_proj (multi_latent_attention.py: qkv_up_proj_and_rope_apply
 * under CheckpointWithoutOutput, its outputs discarded after the core attention): with
 * FlashAttention the layer stops keeping what the attention saved of the up-projections —
 * query_states (e·T·nh·(dn+dr)), key_states (the same) and kv_b's output, whose value slice
 * it reads (e·T·nh·(dn+dv)) — and reruns q_b_proj (V2-Lite: q_proj, no q LoRA rank) and
 * kv_b_proj, 2·T·(q_up + rkv·nh·(dn+dv)) FLOP, with the rotary and the two assemblies. */
static void
test_mla_up_proj_recompute (void)
{
  const char *stems[] = { "deepseek-v2-lite", "deepseek-v3" };
  for (gsize i = 0; i < G_N_ELEMENTS (stems); i++)
    {
      g_autoptr (ModelArch) a = shipped (stems[i]);
      CU_ASSERT_PTR_NOT_NULL_FATAL (a);
      const ModelDeepseek *ds = &a->deepseek;
      double h = (double) a->hidden_size, nh = (double) a->n_heads;
      double dn = (double) ds->qk_nope_head_dim, dq = dn + (double) ds->qk_rope_head_dim;
      double dv = (double) ds->v_head_dim, rkv = (double) ds->kv_lora_rank;
      double rq = (double) ds->q_lora_rank, e = 2, T = 2 * 512;
      ModelCostParams p = { .micro_batch = 2, .seq_len = 512, .act_bytes = 2, .weight_bytes = 2,
                            .flash_attention = TRUE,
                            .recompute_modules = MODEL_RECOMPUTE_MLA_UP_PROJ };
      ModelBlockCost c = model_cost_layer (a, &p);
      STEPSIM_ASSERT_REL (c.act_selective, e * T * (2 * nh * dq + nh * (dn + dv)), 1e-12);
      double q_up = rq > 0 ? rq * nh * dq : h * nh * dq;
      STEPSIM_ASSERT_REL (c.selective_fwd.flops, 2 * T * (q_up + rkv * nh * (dn + dv)), 1e-12);
    }
}

/* MLA splits over tp as Megatron's MLASelfAttention (q_b / kv_b by heads, q_a / kv_a
 * duplicated, o by rows: test_tensor_parallel.c test_mla): tp 2 passes, tp 3 is refused
 * for the 16 heads; the dense first layers' MLP (one copy) is no expert for expert
 * parallelism, the routed experts (n_experts copies) are. */
static void
test_parallel (void)
{
  g_autoptr (ModelArch) a = shipped ("deepseek-v2-lite");
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_TP] = 2;
  CU_ASSERT (model_tp_check (a, &m, NULL));
  m.degree[MODEL_MESH_TP] = 3;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_tp_check (a, &m, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "num_attention_heads"));
  m.degree[MODEL_MESH_TP] = 1;
  CU_ASSERT (model_tp_check (a, &m, NULL));
  g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
  guint experts = 0, dense = 0;
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      if (t->role != MODEL_TENSOR_MLP_UP)
        continue;
      gboolean expert = model_ep_tensor_is_expert (inv, t);
      experts += expert ? 1 : 0;
      dense += expert ? 0 : 1;
      CU_ASSERT_EQUAL (expert ? t->count : t->to_layer, expert ? 64 : 1);
    }
  CU_ASSERT_EQUAL (experts, 1);
  CU_ASSERT_EQUAL (dense, 1);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "DeepSeek-V2-Lite: 15,706,484,224 total, 2,451,435,008 active", test_v2_lite_counts },
    { "DeepSeek-V3: 671,026,419,200 total, 36,625,618,432 active, MTP", test_v3_counts },
    { "MLA tensor roles, names and shapes; dense layers' MLP", test_mla_roles },
    { "unsupported values refused naming file and key", test_refused },
    { "MLA splits over tp 2, not 3; dense-layer MLP is no expert", test_parallel },
    { "MoE layer forward FLOPs: 2·active matmul params·T + MLA attention", test_layer_flops },
    { "recompute_modules mla_up_proj: q/k/v up-projections rerun, not kept",
      test_mla_up_proj_recompute },
  };
  return STEPSIM_RUN_TESTS ("models/arch_deepseek", tests);
}
