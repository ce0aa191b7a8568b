/* tests/unit/models/test_tensor_parallel.c — Megatron-LM tensor and sequence parallelism:
 * the tp layout of the inventory (local shapes, KV heads, vocabulary padding, LoRA, MoE,
 * dp_shard on top), the divisibility errors, the per-layer collectives and the per-rank
 * saved activations against Korthikanti et al. 2022 (arXiv 2205.05198) Table 2.
 *
 * Oracles are derived in the comments from the published architectures (the shipped HF
 * configs), Megatron-LM's source (tensor_parallel.h cites the files) and the paper. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/tensor_parallel.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

#include "tests/unit/models/cost_fixture.h"

static ModelMesh
tp_mesh (guint tp, guint dp_shard)
{
  ModelMesh m;
  model_mesh_init (&m, 8);
  m.degree[MODEL_MESH_TP] = tp;
  m.degree[MODEL_MESH_DP_SHARD] = dp_shard;
  return m;
}

/* The layout entry of the first tensor whose template name is `name`. */
static const ModelTpTensor *
find (const ModelTpLayout *l, const ModelInventory *inv, const char *name)
{
  for (guint i = 0; i < inv->tensors->len; i++)
    if (strcmp (model_inventory_tensor (inv, i)->name, name) == 0)
      return &g_array_index (l->tensors, ModelTpTensor, i);
  g_printerr ("\n  tensor '%s' not found\n", name);
  return NULL;
}

static void
check_local (const ModelTpTensor *x, guint64 d0, guint64 d1, ModelTpStyle style)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (x);
  CU_ASSERT_EQUAL (x->local_shape[0], d0);
  CU_ASSERT_EQUAL (x->local_shape[1], d1);
  CU_ASSERT_EQUAL (x->style, style);
}

/* Megatron's padded vocabulary, ceil(V / (128·tp))·128·tp:
 *   32000 (Llama 2): tp 2: 256·125 = 32000; tp 4: 512·63 = 32256 (32000/512 = 62.5);
 *                    tp 8: 1024·32 = 32768 (31.25); tp 16: 2048·16 = 32768 (15.6)
 *   128256 (Llama 3): tp 2: 256·501 = 128256; tp 4: 512·251 = 128512 (250.5);
 *                     tp 8: 1024·126 = 129024 (125.25); tp 16: 2048·63 = 129024 (62.6)
 *   50257 (GPT-2) at tp 1: 128·393 = 50304 (Megatron pads at tp 1 too). */
static void
test_vocab_padding (void)
{
  const guint tps[] = { 2, 4, 8, 16 };
  const guint64 llama2[] = { 32000, 32256, 32768, 32768 };
  const guint64 llama3[] = { 128256, 128512, 129024, 129024 };
  for (guint j = 0; j < G_N_ELEMENTS (tps); j++)
    {
      CU_ASSERT_EQUAL (model_tp_padded_vocab (32000, tps[j], 128), llama2[j]);
      CU_ASSERT_EQUAL (model_tp_padded_vocab (128256, tps[j], 128), llama3[j]);
    }
  CU_ASSERT_EQUAL (model_tp_padded_vocab (50257, 1, 128), 50304);
}

/* Llama-2-7B (h 4096, a = k = 32, i 11008, V 32000, L 32, untied), bf16, at tp 2/4/8/16:
 *   q/k/v (4096, 4096) column → (4096/t, 4096); o (4096, 4096) row → (4096, 4096/t);
 *   gate/up (11008, 4096) column → (11008/t, 4096) (11008/16 = 688); down (4096, 11008) row →
 *   (4096, 11008/t); embed and lm_head (Vp, 4096) vocab → (Vp/t, 4096) with Vp as above;
 *   norms (4096) replicated; 32/t KV heads per rank, none replicated.
 * Per-rank bytes: 2·[L·(4h² + 3hi)/t + 2·L·h + (2·Vp·h)/t + h] (layer projections split,
 * two norms per layer and the final norm whole, embedding and head split). At t = 1 the
 * bracket is the published 6 738 415 616 parameters. */
static void
test_llama2_7b_layout (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  const double h = 4096, i = 11008, L = 32;
  const guint tps[] = { 1, 2, 4, 8, 16 };
  const guint64 vp[] = { 32000, 32000, 32256, 32768, 32768 };
  for (guint j = 0; j < G_N_ELEMENTS (tps); j++)
    {
      guint t = tps[j];
      ModelMesh m = tp_mesh (t, 1);
      g_autoptr (GError) e = NULL;
      g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, &e);
      CU_ASSERT_PTR_NOT_NULL_FATAL (l);
      CU_ASSERT_EQUAL (l->vocab, vp[j]);
      CU_ASSERT_EQUAL (l->q_heads, 32 / t);
      CU_ASSERT_EQUAL (l->kv_heads, 32 / t);
      CU_ASSERT_EQUAL (l->kv_replicas, 1);
      CU_ASSERT (!l->qkv_gather);
      check_local (find (l, inv, "model.layers.{i}.self_attn.q_proj.weight"), 4096 / t, 4096,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.self_attn.k_proj.weight"), 4096 / t, 4096,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.self_attn.o_proj.weight"), 4096, 4096 / t,
                   MODEL_TP_ROW);
      check_local (find (l, inv, "model.layers.{i}.mlp.gate_proj.weight"), 11008 / t, 4096,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.mlp.up_proj.weight"), 11008 / t, 4096,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.mlp.down_proj.weight"), 4096, 11008 / t,
                   MODEL_TP_ROW);
      check_local (find (l, inv, "model.embed_tokens.weight"), vp[j] / t, 4096, MODEL_TP_VOCAB);
      check_local (find (l, inv, "lm_head.weight"), vp[j] / t, 4096, MODEL_TP_VOCAB);
      const ModelTpTensor *norm = find (l, inv, "model.layers.{i}.input_layernorm.weight");
      CU_ASSERT_PTR_NOT_NULL_FATAL (norm);
      CU_ASSERT_EQUAL (norm->local_shape[0], 4096);
      CU_ASSERT_EQUAL (norm->style, MODEL_TP_REPLICATE);
      CU_ASSERT_EQUAL (norm->copies, 32);
      double params = L * (4 * h * h + 3 * h * i) / t + 2 * L * h + 2 * (double) vp[j] * h / t + h;
      if (t == 1)
        CU_ASSERT_EQUAL (params, 6738415616.0);
      STEPSIM_ASSERT_REL (model_tp_layout_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE, TRUE),
                          2 * params, 0);
    }
}

/* Llama 3.1 70B (h 8192, a 64, k 8, d 128, i 28672, V 128256, L 80):
 *   tp 2/4/8: k_proj (1024, 8192) → (1024/t, 8192), 8/t KV heads per rank, none replicated;
 *   tp 16 > 8 KV heads: Megatron (attention.py) keeps splitting the fused qkv rows evenly,
 *   (64 + 2·8)·128/16 = 640 rows per rank = q 512 + k 64 + v 64 of the even split, so
 *   k_proj is (64, 8192) — no weight is replicated — while the attention holds 1 KV head
 *   per rank, each on 16/8 = 2 ranks, after the qkv output's all-gather. q heads 64/t.
 *   The vocabulary rows are 129024/16 = 8064 at tp 16, 128512/4 = 32128 at tp 4. */
static void
test_llama31_70b_gqa (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-70b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  const guint tps[] = { 2, 4, 8, 16 };
  const guint64 vp[] = { 128256, 128512, 129024, 129024 };
  for (guint j = 0; j < G_N_ELEMENTS (tps); j++)
    {
      guint t = tps[j];
      ModelMesh m = tp_mesh (t, 1);
      g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (l);
      CU_ASSERT_EQUAL (l->q_heads, 64 / t);
      CU_ASSERT_EQUAL (l->kv_heads, t <= 8 ? 8 / t : 1);
      CU_ASSERT_EQUAL (l->kv_replicas, t <= 8 ? 1 : t / 8);
      CU_ASSERT_EQUAL (l->qkv_gather, t > 8);
      check_local (find (l, inv, "model.layers.{i}.self_attn.q_proj.weight"), 8192 / t, 8192,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.self_attn.k_proj.weight"), 1024 / t, 8192,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.self_attn.v_proj.weight"), 1024 / t, 8192,
                   MODEL_TP_COLUMN);
      check_local (find (l, inv, "model.layers.{i}.mlp.down_proj.weight"), 8192, 28672 / t,
                   MODEL_TP_ROW);
      check_local (find (l, inv, "lm_head.weight"), vp[j] / t, 8192, MODEL_TP_VOCAB);
      if (t == 16)
        {
          const ModelTpTensor *q = find (l, inv, "model.layers.{i}.self_attn.q_proj.weight");
          const ModelTpTensor *k = find (l, inv, "model.layers.{i}.self_attn.k_proj.weight");
          const ModelTpTensor *v = find (l, inv, "model.layers.{i}.self_attn.v_proj.weight");
          CU_ASSERT_EQUAL (q->local_shape[0] + k->local_shape[0] + v->local_shape[0], 640);
        }
    }
}

/* TP composed with dp_shard (FSDP/ZeRO over the TP-local tensor): every tensor's per-rank
 * bytes are its tp share / dp_shard, and it is Shard(flat) on dp_shard. Llama 3.1 70B at
 * tp 8, dp_shard 4: q_proj 1024 × 8192 × 2 B = 16 MiB per tp rank, 4 MiB per rank. */
static void
test_tp_with_dp_shard (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-70b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (8, 4);
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  const ModelTpTensor *q = find (l, inv, "model.layers.{i}.self_attn.q_proj.weight");
  CU_ASSERT_EQUAL (q->tp_bytes, 1024.0 * 8192 * 2);
  CU_ASSERT_EQUAL (q->rank_bytes, 1024.0 * 8192 * 2 / 4);
  CU_ASSERT_EQUAL (q->placements.on[MODEL_MESH_DP_SHARD].kind, MODEL_PLACEMENT_SHARD);
  CU_ASSERT_EQUAL (q->placements.on[MODEL_MESH_DP_SHARD].dim, MODEL_PLACEMENT_FLAT);
  CU_ASSERT_EQUAL (q->placements.on[MODEL_MESH_TP].kind, MODEL_PLACEMENT_SHARD);
  CU_ASSERT_EQUAL (q->placements.on[MODEL_MESH_TP].dim, 0);
  const ModelTpTensor *o = find (l, inv, "model.layers.{i}.self_attn.o_proj.weight");
  CU_ASSERT_EQUAL (o->placements.on[MODEL_MESH_TP].dim, 1);
  double tp_total = model_tp_layout_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE, TRUE);
  STEPSIM_ASSERT_REL (model_tp_layout_bytes (l, inv, MODEL_INVENTORY_ALL, TRUE, TRUE),
                      tp_total / 4, 1e-15);
  /* every rank's share, summed over the 8 tp ranks, is the (padded) model:
   * Σ whole = 70 553 706 496 parameters + (129024 − 128256)·8192·2 padded rows */
  double whole = 70553706496.0 + (129024.0 - 128256.0) * 8192 * 2;
  double replicated = (2.0 * 80 + 1) * 8192; /* the norms, on every rank */
  STEPSIM_ASSERT_REL (8 * tp_total / 2, whole + 7 * replicated, 1e-15);
}

/* LoRA on parallel linears (PEFT tp_layer.py LoraParallelLinear), Llama-2-7B r 16 tp 4:
 * q (column): lora_A 16 × 4096 whole, lora_B 4096/4 × 16; o (row): lora_A 16 × 4096/4,
 * lora_B 4096 × 16 whole. GPT-2's Conv1D (in, out): c_attn (768, 2304) column splits dim 1
 * → (768, 576); c_proj (768, 768) row splits dim 0 → (192, 768); c_proj's bias replicated. */
static void
test_lora_and_conv1d (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b");
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, &f, NULL);
  ModelMesh m = tp_mesh (4, 1);
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  guint seen = 0;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      const ModelTpTensor *x = &g_array_index (l->tensors, ModelTpTensor, i);
      if (t->base < 0)
        continue;
      ModelTensorRole br = model_inventory_tensor (inv, (guint) t->base)->role;
      if (br == MODEL_TENSOR_Q && t->role == MODEL_TENSOR_LORA_A)
        check_local (x, 16, 4096, MODEL_TP_REPLICATE), seen++;
      if (br == MODEL_TENSOR_Q && t->role == MODEL_TENSOR_LORA_B)
        check_local (x, 1024, 16, MODEL_TP_COLUMN), seen++;
      if (br == MODEL_TENSOR_ATTN_OUT && t->role == MODEL_TENSOR_LORA_A)
        check_local (x, 16, 1024, MODEL_TP_ROW), seen++;
      if (br == MODEL_TENSOR_ATTN_OUT && t->role == MODEL_TENSOR_LORA_B)
        check_local (x, 4096, 16, MODEL_TP_REPLICATE), seen++;
    }
  CU_ASSERT_EQUAL (seen, 4);

  g_autoptr (ModelArch) gpt2 = shipped ("gpt2");
  g_autoptr (ModelInventory) ginv = model_inventory_new (gpt2, NULL, NULL);
  g_autoptr (ModelTpLayout) gl = model_tp_layout_new (ginv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (gl);
  check_local (find (gl, ginv, "transformer.h.{i}.attn.c_attn.weight"), 768, 576, MODEL_TP_COLUMN);
  check_local (find (gl, ginv, "transformer.h.{i}.attn.c_proj.weight"), 192, 768, MODEL_TP_ROW);
  const ModelTpTensor *cb = find (gl, ginv, "transformer.h.{i}.attn.c_attn.bias");
  CU_ASSERT_PTR_NOT_NULL_FATAL (cb);
  CU_ASSERT_EQUAL (cb->local_shape[0], 576);
  const ModelTpTensor *pb = find (gl, ginv, "transformer.h.{i}.attn.c_proj.bias");
  CU_ASSERT_PTR_NOT_NULL_FATAL (pb);
  CU_ASSERT_EQUAL (pb->local_shape[0], 768);
  CU_ASSERT_EQUAL (pb->style, MODEL_TP_REPLICATE);
  /* learned positions: a plain nn.Embedding in Megatron, replicated */
  const ModelTpTensor *wpe = find (gl, ginv, "transformer.wpe.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (wpe);
  CU_ASSERT_EQUAL (wpe->style, MODEL_TP_REPLICATE);
}

/* Mixtral 8x7B at ep 2, etp 2 (tp 2): an expert's w1 (14336, 4096) splits over etp →
 * (7168, 4096); each rank holds 8/2 = 4 experts of each of the 32 layers: 128 copies; the
 * router (8, 4096) is whole. */
static void
test_moe_experts (void)
{
  g_autoptr (ModelArch) arch = shipped ("mixtral-8x7b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (2, 1);
  m.degree[MODEL_MESH_DP_REPLICATE] = 2;
  m.ep = 2;
  m.etp = 2;
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      const ModelTpTensor *x = &g_array_index (l->tensors, ModelTpTensor, i);
      if (t->role == MODEL_TENSOR_MLP_GATE)
        {
          CU_ASSERT (x->expert);
          check_local (x, 7168, 4096, MODEL_TP_COLUMN);
          CU_ASSERT_EQUAL (x->copies, 128);
        }
      if (t->role == MODEL_TENSOR_ROUTER)
        check_local (x, 8, 4096, MODEL_TP_REPLICATE);
    }
}

/* SP's per-step gradient all-reduce of the sequence-parallel params (finalize_model_grads):
 * Llama-2-7B: two RMSNorm weights per layer and the final norm, 2·32·4096 + 4096 = 266 240;
 * GPT-2 (h 768, L 12, at tp 4): per layer ln_1 and ln_2 weight and bias (4h) and the c_proj biases of
 * attention and MLP (2h), plus ln_f's 2h: 6·12·768 + 2·768 = 56 832. Under LoRA the frozen
 * norms need none. */
static void
test_sp_grad_allreduce (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (8, 1);
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (l, inv), 266240);
  g_autoptr (ModelArch) gpt2 = shipped ("gpt2");
  g_autoptr (ModelInventory) ginv = model_inventory_new (gpt2, NULL, NULL);
  ModelMesh m4 = tp_mesh (4, 1); /* 12 heads: tp 4 */
  g_autoptr (ModelTpLayout) gl = model_tp_layout_new (ginv, &m4, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (gl);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (gl, ginv), 56832);
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) linv = model_inventory_new (arch, &f, NULL);
  g_autoptr (ModelTpLayout) ll = model_tp_layout_new (linv, &m, 2.0, NULL);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (ll, linv), 0);
  ModelMesh one = tp_mesh (1, 1);
  g_autoptr (ModelTpLayout) l1 = model_tp_layout_new (inv, &one, 2.0, NULL);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (l1, inv), 0);
}

static void
expect_error (const ModelArch *arch, guint tp, const char *key)
{
  ModelMesh m = tp_mesh (tp, 1);
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_tp_check (arch, &m, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT (strstr (e->message, key) != NULL);
  CU_ASSERT (strstr (e->message, "[parallel] tp") != NULL);
}

/* Megatron's checks (transformer_config.py): heads 32 over tp 3; KV heads 8 neither a
 * multiple nor a divisor of tp 12 (heads 48 divide); MLP 11000 over tp 16 (11000 = 16·687
 * + 8); and SP over a sequence of 2047 at tp 2. */
static void
test_errors (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b");
  expect_error (arch, 3, "num_attention_heads");
  ModelArch gqa = *arch;
  gqa.n_heads = 48;
  gqa.n_kv_heads = 8;
  expect_error (&gqa, 12, "num_key_value_heads");
  ModelArch mlp = *arch;
  mlp.intermediate_size = 11000;
  expect_error (&mlp, 16, "intermediate_size");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (3, 1);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (model_tp_layout_new (inv, &m, 2.0, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "num_attention_heads") != NULL);

  ModelArch gpt = gpt_like (1024, 16, 1, 1000);
  ModelCostParams p = params (1, 2047, FALSE, 0.1);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&gpt, &p);
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_PTR_NULL (model_tp_shard_graph (g, 2, TRUE, 16, 2047, &e2));
  CU_ASSERT (e2 != NULL && strstr (e2->message, "seq_len") != NULL
             && strstr (e2->message, "[parallel] tp") != NULL);
}

/* Korthikanti Table 2 (GPT: MHA, 4h GELU MLP, dropout, fp16, no flash) for the 22B
 * (h 6144, a 64) and 175B (h 12288, a 96) settings of their Table 1 at t = 8, s = 2048:
 *   TP:                   sbh(10 + 24/t + 5as/(ht)) = 10sbh + 24sbh/t + 5as²b/t
 *   TP + SP:              sbh(34 + 5as/h)/t         = (34sbh + 5as²b)/t
 *   TP + selective:       sbh(10 + 24/t)
 *   TP + SP + selective:  34sbh/t
 * §4.2: the 10sbh outside the parallel regions are the two LayerNorm inputs (4sbh), the QKV
 * and MLP inputs (4sbh) and the two dropout masks (2sbh); the attention (8sbh + 5as²b) and
 * MLP (16sbh) insides are split over t; SP splits the rest along s. Every term is an
 * integer below 2^53 and t = 8 divides it, so equality is exact. The graph reproduces them
 * from its saved tensors (model_tp_shard_graph), not from these formulas. */
static void
test_korthikanti_table2 (void)
{
  const guint64 shapes[][3] = { { 6144, 64, 1 }, { 12288, 96, 1 }, { 6144, 64, 4 } };
  const double t = 8, s = 2048;
  for (gsize j = 0; j < G_N_ELEMENTS (shapes); j++)
    {
      double h = shapes[j][0], a = shapes[j][1], b = shapes[j][2];
      ModelArch arch = gpt_like (shapes[j][0], shapes[j][1], 1, 51200);
      ModelCostParams p = params (shapes[j][2], 2048, FALSE, 0.1);
      g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
      g_autoptr (ModelGraph) tp = model_tp_shard_graph (g, 8, FALSE, arch.n_kv_heads, 2048, NULL);
      g_autoptr (ModelGraph) sp = model_tp_shard_graph (g, 8, TRUE, arch.n_kv_heads, 2048, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (tp);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sp);
      double sbh = s * b * h, as2b = a * s * s * b;
      CU_ASSERT_EQUAL (model_graph_saved (tp, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL),
                       10 * sbh + 24 * sbh / t + 5 * as2b / t);
      CU_ASSERT_EQUAL (model_graph_saved (sp, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL),
                       (34 * sbh + 5 * as2b) / t);
      CU_ASSERT_EQUAL (model_graph_saved (tp, MODEL_GRAPH_KEEP_NON_SELECTIVE, FALSE, NULL, 0, NULL),
                       10 * sbh + 24 * sbh / t);
      CU_ASSERT_EQUAL (model_graph_saved (sp, MODEL_GRAPH_KEEP_NON_SELECTIVE, FALSE, NULL, 0, NULL),
                       34 * sbh / t);
      /* tp = 1 leaves the graph as it is: 34sbh + 5as²b */
      g_autoptr (ModelGraph) one = model_tp_shard_graph (g, 1, TRUE, arch.n_kv_heads, 2048, NULL);
      CU_ASSERT_EQUAL (model_graph_saved (one, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL),
                       34 * sbh + 5 * as2b);
    }
}

/* Every tensor the dense layer graph builds has a tp region, under every framework knob
 * (flash or eager, dropout, autocast, fp32 RMSNorm, GQA repeat, LoRA): a new graph tensor
 * without one fails here. GQA k < tp: Llama 3.1 70B's k and v (8 KV heads) at tp 16 keep
 * one head per rank (÷8), q and the repeated copies ÷16. A MoE layer is refused. */
static void
test_graph_regions (void)
{
  g_autoptr (ModelArch) llama = shipped ("llama-3.1-70b");
  ModelArch gpt = gpt_like (256, 4, 1, 1000);
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_ALL_LINEAR);
  for (guint variant = 0; variant < 6; variant++)
    {
      ModelCostParams p = params (1, 64, variant % 2 == 0, variant >= 2 ? 0.1 : 0);
      p.autocast = variant == 3;
      p.norm_fp32 = variant == 4;
      p.kv_repeat = variant == 5;
      p.softmax_saves_input = variant == 1;
      if (variant == 2)
        p.finetune = f;
      const ModelArch *arch = variant >= 4 || variant == 0 ? llama : &gpt;
      g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, &p);
      g_autoptr (GError) e = NULL;
      g_autoptr (ModelGraph) r = model_tp_shard_graph (g, 2, TRUE, arch->n_kv_heads, 64, &e);
      CU_ASSERT_PTR_NOT_NULL (r);
      if (e != NULL)
        g_printerr ("\n  variant %u: %s\n", variant, e->message);
    }

  ModelCostParams p = params (1, 64, TRUE, 0);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (llama, &p);
  g_autoptr (ModelGraph) r = model_tp_shard_graph (g, 16, FALSE, 8, 64, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const ModelGraphTensor *a = &g_array_index (g->tensors, ModelGraphTensor, i);
      const ModelGraphTensor *b = &g_array_index (r->tensors, ModelGraphTensor, i);
      if (strcmp (a->name, "k") == 0 || strcmp (a->name, "v") == 0)
        CU_ASSERT_EQUAL (b->bytes, a->bytes / 8);
      if (strcmp (a->name, "q") == 0)
        CU_ASSERT_EQUAL (b->bytes, a->bytes / 16);
      if (strcmp (a->name, "input") == 0)
        CU_ASSERT_EQUAL (b->bytes, a->bytes);
    }

  /* a MoE layer: its router's and experts' tensors are of the rank's tokens (÷ tp under
   * SP, Megatron's MoE layer on the sequence-parallel hidden states), while a dense MLP's
   * same-named inner tensors are i/tp features */
  g_autoptr (ModelArch) moe = shipped ("mixtral-8x7b");
  g_autoptr (ModelGraph) mg = model_cost_layer_graph (moe, &p);
  CU_ASSERT (model_tp_graph_is_moe (mg));
  CU_ASSERT (!model_tp_graph_is_moe (g));
  g_autoptr (ModelGraph) ms = model_tp_shard_graph (mg, 2, TRUE, 8, 64, NULL);
  g_autoptr (ModelGraph) mw = model_tp_shard_graph (mg, 2, FALSE, 8, 64, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ms);
  CU_ASSERT_PTR_NOT_NULL_FATAL (mw);
  guint n = 0;
  for (guint i = 0; i < mg->tensors->len; i++)
    {
      const ModelGraphTensor *a = &g_array_index (mg->tensors, ModelGraphTensor, i);
      const ModelGraphTensor *b = &g_array_index (ms->tensors, ModelGraphTensor, i);
      const ModelGraphTensor *c = &g_array_index (mw->tensors, ModelGraphTensor, i);
      if (strcmp (a->name, "routed_tokens") == 0 || strcmp (a->name, "mlp_gate") == 0)
        {
          n++;
          CU_ASSERT_EQUAL (b->bytes, a->bytes / 2);
          CU_ASSERT_EQUAL (c->bytes, a->bytes);
        }
    }
  CU_ASSERT (n >= 2);
}

static double
bus (const GArray *c, guint n)
{
  /* nccl-tests bus volume: all-reduce 2(n−1)/n, all-gather and reduce-scatter (n−1)/n */
  double v = 0;
  for (guint j = 0; j < c->len; j++)
    {
      const ModelTpComm *x = &g_array_index (c, ModelTpComm, j);
      double f = x->kind == HW_COLLECTIVE_ALL_REDUCE ? 2.0 * (n - 1) / n : (double) (n - 1) / n;
      v += f * x->bytes;
    }
  return v;
}

static guint
count_kind (const GArray *c, HwCollectiveKind kind, gboolean overlapped_only)
{
  guint n = 0;
  for (guint j = 0; j < c->len; j++)
    {
      const ModelTpComm *x = &g_array_index (c, ModelTpComm, j);
      n += x->kind == kind && (!overlapped_only || x->overlapped);
      CU_ASSERT_EQUAL (x->dim, MODEL_MESH_TP);
    }
  return n;
}

/* Per-layer tp collectives, GPT 22B (h 6144), b 1, s 2048, bf16, t 8: X = b·s·h·2 =
 * 25 165 824 B. Without SP (Shoeybi §3): 2 all-reduces of X forward, 2 backward. With SP
 * (Korthikanti §4.2.2): forward AG, RS, AG, RS of X — the same bus volume, 2·2(n−1)/n·X;
 * backward the conjugate AG and the dgrad RS per block plus Megatron's re-gather of the
 * saved input shard for the weight gradient (overlapped): 4 AG + 2 RS. Llama 3.1 70B at
 * tp 16 (8 KV heads) adds the fused qkv output's all-gather, b·s·(64 + 16)·128·2 B, and its
 * reduce-scatter in the backward. The head: 3 all-reduces of 4·b·s B (fp32 max, target
 * logit, sum of exponentials); the embedding: all-reduce X, or under SP a reduce-scatter
 * for Llama (no position embeddings) and the all-reduce for GPT (learned positions). */
static void
test_layer_comms (void)
{
  ModelArch gpt = gpt_like (6144, 64, 48, 51200);
  const double X = 2048.0 * 6144 * 2;
  ModelTpCommParams p = { .tp = 8, .sp = FALSE, .micro_batch = 1, .seq_len = 2048,
                          .act_bytes = 2 };
  g_autoptr (GArray) f = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_layer_comms (&gpt, &p, MODEL_TP_FORWARD, f);
  model_tp_layer_comms (&gpt, &p, MODEL_TP_BACKWARD, b);
  CU_ASSERT_EQUAL (f->len, 2);
  CU_ASSERT_EQUAL (b->len, 2);
  CU_ASSERT_EQUAL (count_kind (f, HW_COLLECTIVE_ALL_REDUCE, FALSE), 2);
  CU_ASSERT_EQUAL (count_kind (b, HW_COLLECTIVE_ALL_REDUCE, FALSE), 2);
  for (guint j = 0; j < 2; j++)
    {
      CU_ASSERT_EQUAL (g_array_index (f, ModelTpComm, j).bytes, X);
      CU_ASSERT_EQUAL (g_array_index (b, ModelTpComm, j).bytes, X);
    }
  double ar_bus = bus (f, 8);

  p.sp = TRUE;
  g_autoptr (GArray) fs = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  g_autoptr (GArray) bs = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_layer_comms (&gpt, &p, MODEL_TP_FORWARD, fs);
  model_tp_layer_comms (&gpt, &p, MODEL_TP_BACKWARD, bs);
  CU_ASSERT_EQUAL (fs->len, 4);
  CU_ASSERT_EQUAL (count_kind (fs, HW_COLLECTIVE_ALL_GATHER, FALSE), 2);
  CU_ASSERT_EQUAL (count_kind (fs, HW_COLLECTIVE_REDUCE_SCATTER, FALSE), 2);
  STEPSIM_ASSERT_REL (bus (fs, 8), ar_bus, 1e-15);
  STEPSIM_ASSERT_REL (ar_bus, 2 * 2.0 * 7 / 8 * X, 1e-15);
  CU_ASSERT_EQUAL (bs->len, 6);
  CU_ASSERT_EQUAL (count_kind (bs, HW_COLLECTIVE_ALL_GATHER, FALSE), 4);
  CU_ASSERT_EQUAL (count_kind (bs, HW_COLLECTIVE_REDUCE_SCATTER, FALSE), 2);
  CU_ASSERT_EQUAL (count_kind (bs, HW_COLLECTIVE_ALL_GATHER, TRUE), 2); /* the re-gathers */

  g_autoptr (ModelArch) llama = shipped ("llama-3.1-70b");
  ModelTpCommParams q = { .tp = 16, .sp = FALSE, .micro_batch = 1, .seq_len = 4096,
                          .act_bytes = 2 };
  g_autoptr (GArray) lf = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  g_autoptr (GArray) lb = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_layer_comms (llama, &q, MODEL_TP_FORWARD, lf);
  model_tp_layer_comms (llama, &q, MODEL_TP_BACKWARD, lb);
  CU_ASSERT_EQUAL (lf->len, 3);
  CU_ASSERT_EQUAL (count_kind (lf, HW_COLLECTIVE_ALL_GATHER, FALSE), 1);
  CU_ASSERT_EQUAL (g_array_index (lf, ModelTpComm, 0).bytes, 4096.0 * 80 * 128 * 2);
  CU_ASSERT_EQUAL (count_kind (lb, HW_COLLECTIVE_REDUCE_SCATTER, FALSE), 1);
  q.tp = 8; /* 8 KV heads over 8 ranks: no gather */
  g_autoptr (GArray) l8 = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_layer_comms (llama, &q, MODEL_TP_FORWARD, l8);
  CU_ASSERT_EQUAL (l8->len, 2);

  g_autoptr (GArray) hf = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_head_comms (&gpt, &p, MODEL_TP_FORWARD, hf);
  CU_ASSERT_EQUAL (count_kind (hf, HW_COLLECTIVE_ALL_REDUCE, FALSE), 3);
  for (guint j = 0; j < hf->len; j++)
    if (g_array_index (hf, ModelTpComm, j).kind == HW_COLLECTIVE_ALL_REDUCE)
      CU_ASSERT_EQUAL (g_array_index (hf, ModelTpComm, j).bytes, 4.0 * 2048);

  g_autoptr (GArray) eg = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  g_autoptr (GArray) el = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  q.sp = TRUE;
  model_tp_embedding_comms (&gpt, &p, MODEL_TP_FORWARD, eg);
  model_tp_embedding_comms (llama, &q, MODEL_TP_FORWARD, el);
  CU_ASSERT (eg->len == 1 && g_array_index (eg, ModelTpComm, 0).kind == HW_COLLECTIVE_ALL_REDUCE);
  CU_ASSERT (el->len == 1
             && g_array_index (el, ModelTpComm, 0).kind == HW_COLLECTIVE_REDUCE_SCATTER);

  ModelTpCommParams one = p;
  one.tp = 1;
  g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (ModelTpComm));
  model_tp_layer_comms (&gpt, &one, MODEL_TP_FORWARD, none);
  model_tp_head_comms (&gpt, &one, MODEL_TP_FORWARD, none);
  model_tp_embedding_comms (&gpt, &one, MODEL_TP_FORWARD, none);
  CU_ASSERT_EQUAL (none->len, 0);
}

/* QLoRA's quantization constants shard with their NF4 weight: a rank quantizes the share
 * it holds, ⌈local/64⌉ absmax and ⌈that/256⌉ nested absmax (inventory.h). Llama-2-7B
 * (h 4096, i 11008), double quantization, tp 2: q (column, Shard(0)) 2048 × 4096 =
 * 8,388,608 local → 131,072 uint8 absmax, 512 fp32 nested; o (row) the same count; down
 * (row) 4096 × 5504 = 22,544,384 → 352,256 and 1,376. Every projection splits evenly, so
 * a rank holds half the constants: 102,768,640 / 2 B (test_inventory's total), and with
 * dp_shard 2 on top a quarter. The parameters' bytes leave the constants out: the LoRA
 * layout's minus 1.5 B per NF4 element on the rank (Λ/2 = 3,238,002,688 of them). */
static void
test_qlora_constants (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b");
  ModelFinetune q;
  model_finetune_init_defaults (&q);
  q.method = MODEL_FINETUNE_QLORA;
  q.rank = 16;
  ModelFinetune lo = q;
  lo.method = MODEL_FINETUNE_LORA;
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, &q, NULL);
  g_autoptr (ModelInventory) il = model_inventory_new (arch, &lo, NULL);
  ModelMesh m = tp_mesh (2, 1);
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  g_autoptr (ModelTpLayout) ll = model_tp_layout_new (il, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ll);
  const ModelTpTensor *qa = find (l, inv, "model.layers.{i}.self_attn.q_proj.weight.absmax");
  CU_ASSERT_PTR_NOT_NULL_FATAL (qa);
  CU_ASSERT_EQUAL (qa->style, MODEL_TP_COLUMN);
  CU_ASSERT_EQUAL (qa->tp_dim, 0);
  CU_ASSERT_EQUAL (qa->local_shape[0], 131072);
  CU_ASSERT_EQUAL (qa->element_bytes, 1);
  CU_ASSERT_EQUAL (qa->tp_bytes, 131072);
  CU_ASSERT_EQUAL (qa->placements.on[MODEL_MESH_TP].kind, MODEL_PLACEMENT_SHARD);
  CU_ASSERT_EQUAL (qa->placements.on[MODEL_MESH_TP].dim, 0);
  const ModelTpTensor *qn
    = find (l, inv, "model.layers.{i}.self_attn.q_proj.weight.nested_absmax");
  CU_ASSERT_PTR_NOT_NULL_FATAL (qn);
  CU_ASSERT_EQUAL (qn->local_shape[0], 512);
  CU_ASSERT_EQUAL (qn->tp_bytes, 512 * 4);
  const ModelTpTensor *oa = find (l, inv, "model.layers.{i}.self_attn.o_proj.weight.absmax");
  CU_ASSERT_PTR_NOT_NULL_FATAL (oa);
  CU_ASSERT_EQUAL (oa->style, MODEL_TP_ROW);
  CU_ASSERT_EQUAL (oa->local_shape[0], 131072);
  const ModelTpTensor *dn = find (l, inv, "model.layers.{i}.mlp.down_proj.weight.nested_absmax");
  CU_ASSERT_PTR_NOT_NULL_FATAL (dn);
  CU_ASSERT_EQUAL (dn->local_shape[0], 1376);
  CU_ASSERT_EQUAL (dn->copies, 32);
  CU_ASSERT_DOUBLE_EQUAL (model_tp_layout_constant_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE),
                          102768640.0 / 2, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_tp_layout_constant_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE),
                          model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_ALL) / 2, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_tp_layout_constant_bytes (l, inv, MODEL_INVENTORY_ROOT, FALSE),
                          0, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_tp_layout_bytes (l, inv, MODEL_INVENTORY_ALL, FALSE, TRUE),
                          model_tp_layout_bytes (ll, il, MODEL_INVENTORY_ALL, FALSE, TRUE)
                            - 1.5 * 3238002688.0, 0);
  /* dp_shard 2 on top: a quarter per rank */
  ModelMesh m2 = tp_mesh (2, 2);
  g_autoptr (ModelTpLayout) l2 = model_tp_layout_new (inv, &m2, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l2);
  CU_ASSERT_DOUBLE_EQUAL (model_tp_layout_constant_bytes (l2, inv, MODEL_INVENTORY_ALL, TRUE),
                          102768640.0 / 4, 0);
}

/* The sharded graph keeps the ops' liveness: each op's writes, frees, kernel and flags are
 * the original's, so model_graph_transient_peak reads a rank's forward. small_llama (h 64,
 * a = 4 heads of d 16, k = 2, i 128), b = 2, s = 128, bf16 (e = 2), eager attention, no
 * dropout, fp32 RMSNorm. The tensors no op saves, with their lifetimes (graph_layer.c's
 * frees):
 *   x = e·b·s·h = 32,768          block input, until residual1
 *   scores = e·b·a·s² = 262,144   attn_scores .. softmax (which saves its output)
 *   o_proj out, residual1, mlp_out, residual2: 32,768 each (the residual stream)
 * Live sets: attn_scores/softmax x + scores = 294,912; residual1 x + o + h1 = 98,304;
 * residual2 h1 + mlp + h2 = 98,304: the peak is 294,912, first at attn_scores. tp = 1 is
 * the graph as it is. tp = 2 without SP: the residual stream stays whole on every rank
 * (Megatron's sequence region, split only by SP); scores are a/tp = 2 heads' (head region):
 * x + scores/2 = 32,768 + 131,072 = 163,840 > 98,304, still at attn_scores. A copy without
 * the frees would keep every unsaved tensor to the end: 5·32,768 + 262,144 = 425,984 at
 * tp = 1, 5·32,768 + 131,072 = 294,912 at tp = 2. */
static void
test_shard_graph_liveness (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 128, FALSE, 0);
  p.norm_fp32 = TRUE;
  g_autoptr (ModelGraph) g = model_cost_layer_graph (&arch, &p);
  guint at = 0;
  CU_ASSERT_EQUAL (model_graph_transient_peak (g, FALSE, &at), 32768 + 262144);
  CU_ASSERT_STRING_EQUAL (g_array_index (g->ops, ModelGraphOp, at).name, "attn_scores");

  g_autoptr (ModelGraph) one = model_tp_shard_graph (g, 1, FALSE, arch.n_kv_heads, 128, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (one);
  CU_ASSERT_EQUAL (model_graph_transient_peak (one, FALSE, NULL),
                   model_graph_transient_peak (g, FALSE, NULL));
  g_autoptr (ModelGraph) two = model_tp_shard_graph (g, 2, FALSE, arch.n_kv_heads, 128, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (two);
  CU_ASSERT_EQUAL (model_graph_transient_peak (two, FALSE, &at), 32768 + 262144 / 2);
  CU_ASSERT_STRING_EQUAL (g_array_index (two->ops, ModelGraphOp, at).name, "attn_scores");

  /* op by op, the copy is exact */
  CU_ASSERT_EQUAL_FATAL (two->ops->len, g->ops->len);
  for (guint j = 0; j < g->ops->len; j++)
    {
      const ModelGraphOp *a = &g_array_index (g->ops, ModelGraphOp, j);
      const ModelGraphOp *b = &g_array_index (two->ops, ModelGraphOp, j);
      CU_ASSERT_EQUAL (b->out, a->out);
      CU_ASSERT_EQUAL (b->n_saved, a->n_saved);
      CU_ASSERT_EQUAL_FATAL (b->n_writes, a->n_writes);
      CU_ASSERT_EQUAL_FATAL (b->n_frees, a->n_frees);
      for (guint k = 0; k < a->n_writes; k++)
        CU_ASSERT_EQUAL (b->writes[k], a->writes[k]);
      for (guint k = 0; k < a->n_frees; k++)
        CU_ASSERT_EQUAL (b->frees[k], a->frees[k]);
      CU_ASSERT_EQUAL (b->launches, a->launches);
      CU_ASSERT_EQUAL (b->selective, a->selective);
      CU_ASSERT_EQUAL (b->kernel.flops, a->kernel.flops);
      CU_ASSERT_EQUAL (b->kernel.bytes, a->kernel.bytes);
      CU_ASSERT_EQUAL (b->kernel.name, a->kernel.name);
    }
}

/* A MoE layer's shared expert (Megatron shared_experts.py SharedExpertMLP: an MLP on the tp
 * group). Qwen1.5-MoE-A2.7B (h 2048, 24 layers, shared expert 5632 with its sigmoid gate) at
 * tp 2, ep 4: gate_proj and up_proj (5632, 2048) column-split to (2816, 2048), down_proj
 * (2048, 5632) row-split to (2048, 2816), one copy a layer (no expert); the gate weight
 * (1, 2048) whole. SP's gradient all-reduce takes the gate weight with the norms (Megatron
 * tags it sequence_parallel): 24 · (2 · 2048 + 2048) + 2048 = 149,504. A shared expert of
 * 5633 does not split over tp 2. In the layer graph without SP, the shared expert's fc1
 * outputs and SwiGLU (e·T·S each) are split over tp, its reduce-scattered output, the
 * gate's tensors and the sum with the routed output are whole (the sequence region). */
static void
test_shared_expert (void)
{
  g_autoptr (ModelArch) arch = shipped ("qwen1.5-moe-a2.7b");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (2, 1);
  m.degree[MODEL_MESH_DP_REPLICATE] = 4;
  m.ep = 4;
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  static const char *const names[] = { "model.layers.{i}.mlp.shared_expert.gate_proj.weight",
                                       "model.layers.{i}.mlp.shared_expert.up_proj.weight",
                                       "model.layers.{i}.mlp.shared_expert.down_proj.weight",
                                       "model.layers.{i}.mlp.shared_expert_gate.weight" };
  const ModelTpTensor *x[4];
  for (guint j = 0; j < 4; j++)
    {
      x[j] = find (l, inv, names[j]);
      CU_ASSERT_PTR_NOT_NULL_FATAL (x[j]);
      CU_ASSERT (!x[j]->expert);
      CU_ASSERT_EQUAL (x[j]->copies, 24);
    }
  check_local (x[0], 2816, 2048, MODEL_TP_COLUMN);
  check_local (x[1], 2816, 2048, MODEL_TP_COLUMN);
  check_local (x[2], 2048, 2816, MODEL_TP_ROW);
  check_local (x[3], 1, 2048, MODEL_TP_REPLICATE);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (l, inv), 149504);

  ModelArch odd = *arch;
  odd.shared_expert_size = 5633;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (!model_tp_check (&odd, &m, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "shared_expert_intermediate_size") != NULL
             && strstr (e->message, "[parallel] tp") != NULL);

  ModelCostParams p = params (1, 64, TRUE, 0);
  g_autoptr (ModelGraph) g = model_cost_layer_graph (arch, &p);
  g_autoptr (ModelGraph) r = model_tp_shard_graph (g, 2, FALSE, 16, 64, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  static const char *const split[] = { "shared_gate", "shared_up", "shared_silu",
                                       "shared_product", NULL };
  static const char *const whole[] = { "shared_out", "shared_gate_logit", "shared_gate_sigmoid",
                                       "shared_scaled", "moe_out", NULL };
  guint n_split = 0, n_whole = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const ModelGraphTensor *a = &g_array_index (g->tensors, ModelGraphTensor, i);
      const ModelGraphTensor *b = &g_array_index (r->tensors, ModelGraphTensor, i);
      if (g_strv_contains (split, a->name))
        {
          n_split++;
          CU_ASSERT_EQUAL (b->bytes, a->bytes / 2);
        }
      if (g_strv_contains (whole, a->name))
        {
          n_whole++;
          CU_ASSERT_EQUAL (b->bytes, a->bytes);
        }
    }
  CU_ASSERT_EQUAL (n_split, 4);
  CU_ASSERT_EQUAL (n_whole, 5);
}

/* MLA under tp (Megatron-LM multi_latent_attention.py MLASelfAttention, TE spec):
 * DeepSeek-V2-Lite (h 2048, 27 layers, 16 heads, q_lora_rank null, kv_lora_rank 512,
 * dn 128, dr 64, dv 128) at tp 2: q_proj (16·192, 2048) column-split by heads to
 * (1536, 2048); kv_a_proj_with_mqa (512 + 64, 2048), TELinear 'duplicated', whole;
 * kv_b_proj (16·256, 512) column-split to (2048, 512); o_proj (2048, 16·128) row-split to
 * (2048, 1024); kv_a_layernorm (512) whole. SP's gradient all-reduce takes the duplicated
 * weights (sequence_parallel set on them) and the norms: 27 · (2 · 2048 + 512 + 576 · 2048)
 * + 2048 = 31,976,960. DeepSeek-V3 (q_lora_rank 1536, 128 heads) at tp 8: q_a_proj
 * (1536, 7168) whole, q_b_proj (128·192, 1536) split to (3072, 1536). 16 heads do not split
 * over tp 3. */
static void
test_mla (void)
{
  g_autoptr (ModelArch) arch = shipped ("deepseek-v2-lite");
  g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
  ModelMesh m = tp_mesh (2, 1);
  g_autoptr (ModelTpLayout) l = model_tp_layout_new (inv, &m, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l);
  CU_ASSERT_EQUAL (l->q_heads, 8);
  check_local (find (l, inv, "model.layers.{i}.self_attn.q_proj.weight"), 1536, 2048,
               MODEL_TP_COLUMN);
  check_local (find (l, inv, "model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight"), 576, 2048,
               MODEL_TP_REPLICATE);
  check_local (find (l, inv, "model.layers.{i}.self_attn.kv_b_proj.weight"), 2048, 512,
               MODEL_TP_COLUMN);
  check_local (find (l, inv, "model.layers.{i}.self_attn.o_proj.weight"), 2048, 1024,
               MODEL_TP_ROW);
  const ModelTpTensor *norm = find (l, inv, "model.layers.{i}.self_attn.kv_a_layernorm.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (norm);
  CU_ASSERT_EQUAL (norm->local_shape[0], 512);
  CU_ASSERT_EQUAL (norm->style, MODEL_TP_REPLICATE);
  CU_ASSERT_EQUAL (model_tp_sp_grad_numel (l, inv), 31976960);

  g_autoptr (ModelArch) v3 = shipped ("deepseek-v3");
  g_autoptr (ModelInventory) inv3 = model_inventory_new (v3, NULL, NULL);
  ModelMesh m8 = tp_mesh (8, 1);
  g_autoptr (ModelTpLayout) l3 = model_tp_layout_new (inv3, &m8, 2.0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (l3);
  check_local (find (l3, inv3, "model.layers.{i}.self_attn.q_a_proj.weight"), 1536, 7168,
               MODEL_TP_REPLICATE);
  check_local (find (l3, inv3, "model.layers.{i}.self_attn.q_b_proj.weight"), 3072, 1536,
               MODEL_TP_COLUMN);
  expect_error (arch, 3, "num_attention_heads");
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "Megatron vocabulary padding", test_vocab_padding },
    { "Llama-2-7B tp layout", test_llama2_7b_layout },
    { "Llama 3.1 70B GQA over tp 2..16", test_llama31_70b_gqa },
    { "tp composed with dp_shard", test_tp_with_dp_shard },
    { "QLoRA constants shard with their NF4 weight", test_qlora_constants },
    { "LoRA on parallel linears, GPT-2 Conv1D", test_lora_and_conv1d },
    { "MoE experts over ep and etp", test_moe_experts },
    { "SP's gradient all-reduce of norms and row biases", test_sp_grad_allreduce },
    { "MoE shared expert: a dense MLP over tp, gate replicated", test_shared_expert },
    { "MLA: up projections by heads, down projections duplicated", test_mla },
    { "tp divisibility errors", test_errors },
    { "Korthikanti Table 2 activations", test_korthikanti_table2 },
    { "every graph tensor has a tp region", test_graph_regions },
    { "per-layer tp collectives", test_layer_comms },
    { "sharded graph keeps the ops' liveness", test_shard_graph_liveness },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/tensor_parallel", tests);
}
