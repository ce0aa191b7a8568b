/* models/arch/inventory.c — the tensor inventory (inventory.h) and its folds.
 *
 * Module shapes and names are those of HF transformers' modeling_{llama,mistral,mixtral,
 * qwen2,gpt2,bert,mpt}.py (see arch.c for the per-family closed forms and the papers);
 * LoRA adapters are PEFT's (peft/tuners/lora/layer.py: lora_A nn.Linear(in, r), lora_B
 * nn.Linear(r, out), no bias); QLoRA's NF4 storage is bitsandbytes' Linear4bit
 * (Dettmers et al. 2023, arXiv 2305.14314 §3), its constants bitsandbytes' QuantState
 * (functional.py quantize_4bit; names as its state dict: QuantState.as_dict, "absmax",
 * "nested_absmax").
 */
#include "config.h"
#include "models/arch/inventory.h"

#include <string.h>

/* Module paths per naming scheme; "%s" stands for the layer prefix. */
typedef struct
{
  const char *embed, *pos, *type, *embed_norm, *layer, *q, *k, *v, *qkv, *o, *router, *gate,
    *up, *down, *norm1, *norm2, *final_norm, *pooler, *classifier, *head;
  const char *q_norm, *k_norm, *shared_gate, *shared_up, *shared_down, *shared_expert_gate;
  /* deepseek: MLA projections and norms, the dense layers' MLP */
  const char *q_a, *q_a_norm, *q_b, *kv_a, *kv_a_norm, *kv_b, *dense_gate, *dense_up,
    *dense_down;
} Names;

static const Names llama_names = {
  .embed = "model.embed_tokens", .pos = "model.embed_positions", .layer = "model.layers.{i}",
  .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
  .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj", .router = "mlp.router",
  .gate = "mlp.gate_proj", .up = "mlp.up_proj", .down = "mlp.down_proj",
  .norm1 = "input_layernorm", .norm2 = "post_attention_layernorm", .final_norm = "model.norm",
  .head = "lm_head",
};

static const Names mixtral_names = {
  .embed = "model.embed_tokens", .pos = "model.embed_positions", .layer = "model.layers.{i}",
  .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
  .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj", .router = "block_sparse_moe.gate",
  .gate = "block_sparse_moe.experts.{e}.w1", .up = "block_sparse_moe.experts.{e}.w3",
  .down = "block_sparse_moe.experts.{e}.w2", .norm1 = "input_layernorm",
  .norm2 = "post_attention_layernorm", .final_norm = "model.norm", .head = "lm_head",
};

/* Qwen3 (modeling_qwen3.py): llama's names plus self_attn.q_norm / k_norm. */
static const Names qwen3_names = {
  .embed = "model.embed_tokens", .pos = "model.embed_positions", .layer = "model.layers.{i}",
  .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
  .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj", .router = "mlp.router",
  .gate = "mlp.gate_proj", .up = "mlp.up_proj", .down = "mlp.down_proj",
  .norm1 = "input_layernorm", .norm2 = "post_attention_layernorm", .final_norm = "model.norm",
  .head = "lm_head", .q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm",
};

/* Qwen3-MoE / Qwen2-MoE sparse blocks (modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock,
 * modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock): router mlp.gate, experts
 * mlp.experts.{e}.{gate,up,down}_proj, qwen2_moe's mlp.shared_expert.* and
 * mlp.shared_expert_gate (checkpoint names). */
static const Names qwen_moe_names = {
  .embed = "model.embed_tokens", .pos = "model.embed_positions", .layer = "model.layers.{i}",
  .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
  .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj", .router = "mlp.gate",
  .gate = "mlp.experts.{e}.gate_proj", .up = "mlp.experts.{e}.up_proj",
  .down = "mlp.experts.{e}.down_proj", .norm1 = "input_layernorm",
  .norm2 = "post_attention_layernorm", .final_norm = "model.norm", .head = "lm_head",
  .q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm",
  .shared_gate = "mlp.shared_expert.gate_proj", .shared_up = "mlp.shared_expert.up_proj",
  .shared_down = "mlp.shared_expert.down_proj", .shared_expert_gate = "mlp.shared_expert_gate",
};

/* DeepSeek-V2/V3 (modeling_deepseek.py DeepseekV2Attention, DeepseekV2MoE, MoEGate,
 * DeepseekV2MLP; checkpoint names): self_attn.{q_proj | q_a_proj, q_a_layernorm, q_b_proj},
 * kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; MoE layers mlp.gate (weight,
 * e_score_correction_bias), mlp.experts.{e}.*, mlp.shared_experts.*; dense layers mlp.*. */
static const Names deepseek_names = {
  .embed = "model.embed_tokens", .layer = "model.layers.{i}", .q = "self_attn.q_proj",
  .o = "self_attn.o_proj", .router = "mlp.gate", .gate = "mlp.experts.{e}.gate_proj",
  .up = "mlp.experts.{e}.up_proj", .down = "mlp.experts.{e}.down_proj",
  .norm1 = "input_layernorm", .norm2 = "post_attention_layernorm", .final_norm = "model.norm",
  .head = "lm_head", .shared_gate = "mlp.shared_experts.gate_proj",
  .shared_up = "mlp.shared_experts.up_proj", .shared_down = "mlp.shared_experts.down_proj",
  .q_a = "self_attn.q_a_proj", .q_a_norm = "self_attn.q_a_layernorm", .q_b = "self_attn.q_b_proj",
  .kv_a = "self_attn.kv_a_proj_with_mqa", .kv_a_norm = "self_attn.kv_a_layernorm",
  .kv_b = "self_attn.kv_b_proj", .dense_gate = "mlp.gate_proj", .dense_up = "mlp.up_proj",
  .dense_down = "mlp.down_proj",
};

/* gpt_oss (modeling_gpt_oss.py GptOssAttention, GptOssMLP: router, experts). The experts'
 * fused tensors are added by add_gpt_oss_mlp with their HF parameter names. */
static const Names gpt_oss_names = {
  .embed = "model.embed_tokens", .pos = "model.embed_positions", .layer = "model.layers.{i}",
  .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
  .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj", .router = "mlp.router",
  .gate = "mlp.experts", .up = "mlp.experts", .down = "mlp.experts",
  .norm1 = "input_layernorm", .norm2 = "post_attention_layernorm", .final_norm = "model.norm",
  .head = "lm_head",
};

static const Names gpt2_names = {
  .embed = "transformer.wte", .pos = "transformer.wpe", .layer = "transformer.h.{i}",
  .q = "attn.q_proj", .k = "attn.k_proj", .v = "attn.v_proj", .qkv = "attn.c_attn",
  .o = "attn.c_proj", .router = "mlp.router", .gate = "mlp.c_gate", .up = "mlp.c_fc",
  .down = "mlp.c_proj", .norm1 = "ln_1", .norm2 = "ln_2", .final_norm = "transformer.ln_f",
  .head = "lm_head",
};

static const Names bert_names = {
  .embed = "bert.embeddings.word_embeddings", .pos = "bert.embeddings.position_embeddings",
  .type = "bert.embeddings.token_type_embeddings", .embed_norm = "bert.embeddings.LayerNorm",
  .layer = "bert.encoder.layer.{i}", .q = "attention.self.query", .k = "attention.self.key",
  .v = "attention.self.value", .qkv = "attention.self.qkv", .o = "attention.output.dense",
  .router = "router", .gate = "intermediate.gate", .up = "intermediate.dense",
  .down = "output.dense", .norm1 = "attention.output.LayerNorm", .norm2 = "output.LayerNorm",
  .final_norm = "bert.final_norm", .pooler = "bert.pooler.dense", .classifier = "classifier",
  .head = "lm_head",
};

static const Names mpt_names = {
  .embed = "transformer.wte", .pos = "transformer.wpe", .layer = "transformer.blocks.{i}",
  .q = "attn.q_proj", .k = "attn.k_proj", .v = "attn.v_proj", .qkv = "attn.Wqkv",
  .o = "attn.out_proj", .router = "ffn.router", .gate = "ffn.gate_proj", .up = "ffn.up_proj",
  .down = "ffn.down_proj", .norm1 = "norm_1", .norm2 = "norm_2", .final_norm = "transformer.norm_f",
  .head = "lm_head",
};

static const Names *
names_of (ModelFamily f)
{
  switch (f)
    {
    case MODEL_FAMILY_MIXTRAL: return &mixtral_names;
    case MODEL_FAMILY_GPT2: return &gpt2_names;
    case MODEL_FAMILY_BERT: return &bert_names;
    case MODEL_FAMILY_MPT: return &mpt_names;
    case MODEL_FAMILY_QWEN3: return &qwen3_names;
    case MODEL_FAMILY_QWEN3_MOE:
    case MODEL_FAMILY_QWEN2_MOE: return &qwen_moe_names;
    case MODEL_FAMILY_DEEPSEEK_V2:
    case MODEL_FAMILY_DEEPSEEK_V3: return &deepseek_names;
    case MODEL_FAMILY_GPT_OSS: return &gpt_oss_names;
    default: return &llama_names;
    }
}

typedef struct
{
  ModelInventory *inv;
  const Names *n;
  gboolean lora, qlora;
  gboolean after_layers; /* root tensors added now come after the layers */
} Builder;

/* Appends a tensor named `prefix.module.suffix` (prefix NULL: none); returns its index. */
static gint
add (Builder *b, const char *module, gboolean in_layer, const char *suffix, ModelTensorRole role,
     gboolean is_bias, guint ndim, guint64 d0, guint64 d1, guint64 count)
{
  if (d0 == 0 || (ndim > 1 && d1 == 0) || count == 0) /* an absent tensor (size 0) */
    return -1;
  g_autofree char *name = in_layer ? g_strdup_printf ("%s.%s.%s", b->n->layer, module, suffix)
                                   : g_strdup_printf ("%s.%s", module, suffix);
  ModelTensor t = {
    .name = g_string_chunk_insert_const (b->inv->names, name),
    .role = role,
    .is_bias = is_bias,
    .ndim = ndim,
    .shape = { d0, ndim > 1 ? d1 : 1, 1, 1 },
    .layer = in_layer ? MODEL_TENSOR_EACH_LAYER : MODEL_TENSOR_ROOT,
    .after_layers = !in_layer && b->after_layers,
    .count = count,
    .trainable = !b->lora,
    .storage = MODEL_TENSOR_STORAGE_WEIGHT,
    .lora_target = FALSE,
    .base = -1,
  };
  g_array_append_val (b->inv->tensors, t);
  return (gint) b->inv->tensors->len - 1;
}

/* A projection weight of a layer: out × in (nn.Linear), or in × out for GPT-2's Conv1D. NF4
 * under QLoRA (bitsandbytes swaps every nn.Linear / Conv1D-as-Linear of the blocks). */
static gint
add_proj (Builder *b, const char *module, ModelTensorRole role, guint64 in, guint64 out,
          guint64 count)
{
  gboolean conv1d = b->inv->arch->family == MODEL_FAMILY_GPT2;
  gint k = add (b, module, TRUE, "weight", role, FALSE, 2, conv1d ? in : out, conv1d ? out : in,
                count);
  if (b->qlora && k >= 0)
    g_array_index (b->inv->tensors, ModelTensor, k).storage = MODEL_TENSOR_STORAGE_NF4;
  return k;
}

static void
add_norm (Builder *b, const char *module, gboolean in_layer, gboolean bias)
{
  guint64 h = b->inv->arch->hidden_size;
  if (!bias)
    add (b, module, in_layer, "weight", MODEL_TENSOR_NORM, FALSE, 1, h, 1, 1);
  else if (b->inv->arch->norm == MODEL_NORM_LAYER)
    add (b, module, in_layer, "bias", MODEL_TENSOR_NORM, TRUE, 1, h, 1, 1);
}

/* The ModelLoraModule bits that name a projection role in a targets list (finetune.h); 0
 * for a tensor no list names (the shared expert's sigmoid gate, MTP's eh_proj, heads). */
static guint
role_module (ModelTensorRole r)
{
  switch (r)
    {
    case MODEL_TENSOR_Q:
    case MODEL_TENSOR_Q_A:
    case MODEL_TENSOR_Q_B: return MODEL_LORA_MODULE_Q;
    case MODEL_TENSOR_K: return MODEL_LORA_MODULE_K;
    case MODEL_TENSOR_V: return MODEL_LORA_MODULE_V;
    case MODEL_TENSOR_QKV: return MODEL_LORA_MODULE_Q | MODEL_LORA_MODULE_K | MODEL_LORA_MODULE_V;
    case MODEL_TENSOR_KV_A:
    case MODEL_TENSOR_KV_B: return MODEL_LORA_MODULE_K | MODEL_LORA_MODULE_V;
    case MODEL_TENSOR_ATTN_OUT: return MODEL_LORA_MODULE_O;
    case MODEL_TENSOR_MLP_GATE:
    case MODEL_TENSOR_SHARED_GATE: return MODEL_LORA_MODULE_GATE;
    case MODEL_TENSOR_MLP_UP:
    case MODEL_TENSOR_SHARED_UP: return MODEL_LORA_MODULE_UP;
    case MODEL_TENSOR_MLP_DOWN:
    case MODEL_TENSOR_SHARED_DOWN: return MODEL_LORA_MODULE_DOWN;
    case MODEL_TENSOR_ROUTER: return MODEL_LORA_MODULE_ROUTER;
    default: return 0;
    }
}

/* PEFT target_modules for each projection role (finetune.h). */
static gboolean
targeted (ModelTensorRole r, const ModelFinetune *f)
{
  if (!model_finetune_active (f))
    return FALSE;
  switch (f->targets)
    {
    case MODEL_LORA_ALL_LINEAR: return TRUE; /* the MoE router too: an nn.Linear */
    case MODEL_LORA_ATTENTION: return r <= MODEL_TENSOR_ATTN_OUT;
    case MODEL_LORA_QV: return r == MODEL_TENSOR_Q || r == MODEL_TENSOR_V || r == MODEL_TENSOR_QKV;
    case MODEL_LORA_MODULES: return (f->modules & role_module (r)) != 0;
    }
  return FALSE;
}

/* in, out features of a projection weight. */
static void
proj_features (const ModelInventory *inv, const ModelTensor *t, guint64 *in, guint64 *out)
{
  gboolean conv1d = inv->arch->family == MODEL_FAMILY_GPT2;
  *in = conv1d ? t->shape[0] : t->shape[1];
  *out = conv1d ? t->shape[1] : t->shape[0];
}

/* The projection groups of a layer, as consecutive runs of tensor indices: q | k | v | qkv
 * | o | router | gate+up (SwiGLU) | fc | down. A group is one ModelLinear and its adapters
 * are laid out A…A B…B. */
static gboolean
same_group (const ModelTensor *a, const ModelTensor *b)
{
  return (a->role == MODEL_TENSOR_MLP_GATE && b->role == MODEL_TENSOR_MLP_UP)
         || (a->role == MODEL_TENSOR_SHARED_GATE && b->role == MODEL_TENSOR_SHARED_UP);
}

static gboolean
is_proj_weight (const ModelTensor *t)
{
  return t->layer != MODEL_TENSOR_ROOT && !t->is_bias && t->role >= MODEL_TENSOR_Q
         && t->role <= MODEL_TENSOR_ROUTER;
}

static void
add_adapters (Builder *b, guint first, guint last)
{
  GArray *ts = b->inv->tensors;
  guint64 r = b->inv->finetune.rank;
  for (gint side = 0; side < 2; side++)
    for (guint j = first; j <= last; j++)
      {
        ModelTensor base = g_array_index (ts, ModelTensor, j);
        if (!base.lora_target)
          continue;
        guint64 in, out;
        proj_features (b->inv, &base, &in, &out);
        g_autofree char *stem = g_strndup (base.name, strlen (base.name) - strlen (".weight"));
        g_autofree char *name = g_strdup_printf ("%s.%s", stem, side == 0 ? "lora_A.weight"
                                                                          : "lora_B.weight");
        ModelTensor t = {
          .name = g_string_chunk_insert_const (b->inv->names, name),
          .role = side == 0 ? MODEL_TENSOR_LORA_A : MODEL_TENSOR_LORA_B,
          .ndim = 2,
          .shape = { side == 0 ? r : out, side == 0 ? in : r, 1, 1 },
          .layer = base.layer,
          .count = base.count,
          .trainable = TRUE,
          .storage = MODEL_TENSOR_STORAGE_WEIGHT,
          .base = (gint) j,
          .from_layer = base.from_layer,
          .to_layer = base.to_layer,
        };
        g_array_append_val (ts, t);
      }
}

/* bitsandbytes' blocksizes: quantize_4bit's default (Linear4bit's, QLoRA §3) and the one
 * quantize_4bit passes quantize_blockwise for the absmax under compress_statistics. */
#define NF4_BLOCKSIZE 64
#define NF4_NESTED_BLOCKSIZE 256

/* One quantization constant of NF4 weight `j`: `suffix` appended to its name, `n` elements
 * stored as `storage`. */
static void
add_constant (Builder *b, guint j, ModelTensorRole role, const char *suffix, guint64 n,
              ModelTensorStorage storage)
{
  ModelTensor base = g_array_index (b->inv->tensors, ModelTensor, j);
  g_autofree char *name = g_strdup_printf ("%s.%s", base.name, suffix);
  ModelTensor t = {
    .name = g_string_chunk_insert_const (b->inv->names, name),
    .role = role,
    .ndim = 1,
    .shape = { n, 1, 1, 1 },
    .layer = base.layer,
    .after_layers = base.after_layers,
    .count = base.count,
    .trainable = FALSE,
    .storage = storage,
    .base = (gint) j,
    .from_layer = base.from_layer,
    .to_layer = base.to_layer,
  };
  g_array_append_val (b->inv->tensors, t);
}

/* The constants of the NF4 tensors first … last−1 (functional.py quantize_4bit: the
 * kernel's absmax is ⌈n/64⌉ fp32, backends/cuda/ops.py quantize_4bit blocks = −(n // −64);
 * compress_statistics: quantize_blockwise(absmax − offset, blocksize=256) gives a uint8
 * absmax of the same length and a nested fp32 absmax of ⌈b/256⌉). */
static void
add_quant_constants (Builder *b, guint first, guint last)
{
  gboolean dq = b->inv->finetune.double_quant;
  for (guint j = first; j < last; j++)
    {
      const ModelTensor *w = &g_array_index (b->inv->tensors, ModelTensor, j);
      if (w->storage != MODEL_TENSOR_STORAGE_NF4)
        continue;
      guint64 blocks = (model_tensor_numel (w) + NF4_BLOCKSIZE - 1) / NF4_BLOCKSIZE;
      add_constant (b, j, MODEL_TENSOR_QUANT_ABSMAX, "absmax", blocks,
                    dq ? MODEL_TENSOR_STORAGE_UINT8 : MODEL_TENSOR_STORAGE_FP32);
      if (dq)
        add_constant (b, j, MODEL_TENSOR_QUANT_ABSMAX2, "nested_absmax",
                      (blocks + NF4_NESTED_BLOCKSIZE - 1) / NF4_NESTED_BLOCKSIZE,
                      MODEL_TENSOR_STORAGE_FP32);
    }
}

/* gpt_oss's attention sinks, router and experts (inventory.h "gpt_oss"): sinks (a);
 * router weight (E, h) + bias (E); per expert gate_up_proj (2i, h) + bias (2i) and
 * down_proj (h, i) + bias (h). Expert weights MXFP4 when frozen and the checkpoint is mxfp4,
 * else the weight dtype (not NF4 under QLoRA: bitsandbytes swaps nn.Linear only). */
static void
add_gpt_oss_mlp (Builder *b)
{
  const ModelArch *a = b->inv->arch;
  const Names *n = b->n;
  guint64 h = a->hidden_size, i = a->intermediate_size, E = a->n_experts;
  if (a->attn_sinks)
    add (b, "self_attn", TRUE, "sinks", MODEL_TENSOR_ATTN_SINK, FALSE, 1, a->n_heads, 1, 1);
  if (E > 0)
    {
      /* GptOssTopKRouter holds a raw nn.Parameter (F.linear in forward), not an nn.Linear */
      add (b, n->router, TRUE, "weight", MODEL_TENSOR_ROUTER, FALSE, 2, E, h, 1);
      if (a->router_bias)
        add (b, n->router, TRUE, "bias", MODEL_TENSOR_ROUTER, TRUE, 1, E, 1, 1);
    }
  ModelTensorStorage st = b->lora && a->mxfp4_experts && !b->inv->finetune.dequantize
                           ? MODEL_TENSOR_STORAGE_MXFP4 : MODEL_TENSOR_STORAGE_WEIGHT;
  gint gu = add (b, n->up, TRUE, "gate_up_proj", MODEL_TENSOR_MLP_UP, FALSE, 2, 2 * i, h, E ? E : 1);
  gint dn = add (b, n->down, TRUE, "down_proj", MODEL_TENSOR_MLP_DOWN, FALSE, 2, h, i, E ? E : 1);
  if (gu >= 0)
    g_array_index (b->inv->tensors, ModelTensor, gu).storage = st;
  if (dn >= 0)
    g_array_index (b->inv->tensors, ModelTensor, dn).storage = st;
  if (a->mlp_bias)
    {
      add (b, n->up, TRUE, "gate_up_proj_bias", MODEL_TENSOR_MLP_UP, TRUE, 1, 2 * i, 1, E ? E : 1);
      add (b, n->down, TRUE, "down_proj_bias", MODEL_TENSOR_MLP_DOWN, TRUE, 1, h, 1, E ? E : 1);
    }
}

/* Whether a gpt_oss expert or router tensor: raw nn.Parameters in HF, not nn.Linear
 * modules, so PEFT's all-linear leaves them alone. */
static gboolean
fused_expert (const ModelInventory *inv, const ModelTensor *t)
{
  return inv->arch->fused_gate_up
         && (t->role == MODEL_TENSOR_MLP_UP || t->role == MODEL_TENSOR_MLP_DOWN
             || t->role == MODEL_TENSOR_ROUTER);
}

/* Limits the template tensors first … last−1 to layers [from, to) (to 0: n_layers). */
static void
set_layer_range (Builder *b, guint first, guint last, guint64 from, guint64 to)
{
  for (guint j = first; j < last; j++)
    {
      ModelTensor *t = &g_array_index (b->inv->tensors, ModelTensor, j);
      t->from_layer = from;
      t->to_layer = to;
    }
}

/* MLA's projections (DeepSeek-V2 arXiv 2405.04434 §2.1.2-2.1.3, eq. 9-19; HF
 * modeling_deepseek.py DeepseekV2Attention.__init__), no biases: q_proj h → nh·(dn+dr),
 * or q_a_proj h → r_q, q_b_proj r_q → nh·(dn+dr); kv_a_proj_with_mqa h → r_kv + dr;
 * kv_b_proj r_kv → nh·(dn+dv); o_proj nh·dv → h. Then the norms q_a_layernorm (r_q) and
 * kv_a_layernorm (r_kv), with the layer's own norm weights (add_layer). */
static void
add_mla_attention (Builder *b)
{
  const ModelArch *a = b->inv->arch;
  const ModelDeepseek *ds = &a->deepseek;
  const Names *n = b->n;
  guint64 h = a->hidden_size, nh = a->n_heads, dq = ds->qk_nope_head_dim + ds->qk_rope_head_dim;
  if (ds->q_lora_rank > 0)
    {
      add_proj (b, n->q_a, MODEL_TENSOR_Q_A, h, ds->q_lora_rank, 1);
      add_proj (b, n->q_b, MODEL_TENSOR_Q_B, ds->q_lora_rank, nh * dq, 1);
    }
  else
    add_proj (b, n->q, MODEL_TENSOR_Q, h, nh * dq, 1);
  add_proj (b, n->kv_a, MODEL_TENSOR_KV_A, h, ds->kv_lora_rank + ds->qk_rope_head_dim, 1);
  add_proj (b, n->kv_b, MODEL_TENSOR_KV_B, ds->kv_lora_rank,
            nh * (ds->qk_nope_head_dim + ds->v_head_dim), 1);
  add_proj (b, n->o, MODEL_TENSOR_ATTN_OUT, nh * ds->v_head_dim, h, 1);
}

/* DeepSeek's MLP blocks: the dense SwiGLU of layers 0 … k−1 (DeepseekV2MLP of
 * intermediate_size) and, in layers k …, the MoE block (DeepseekV2MoE): router MoEGate
 * h → E (+ e_score_correction_bias E under noaux_tc), E routed experts, the shared
 * experts as one DeepseekV2MLP of n_shared · moe_intermediate_size. */
static void
add_deepseek_mlp (Builder *b)
{
  const ModelArch *a = b->inv->arch;
  const ModelDeepseek *ds = &a->deepseek;
  const Names *n = b->n;
  guint64 h = a->hidden_size, i = a->intermediate_size, E = a->n_experts, k = ds->first_k_dense;
  guint first = b->inv->tensors->len;
  if (k > 0)
    {
      guint64 di = ds->dense_intermediate_size;
      add_proj (b, n->dense_gate, MODEL_TENSOR_MLP_GATE, h, di, 1);
      add_proj (b, n->dense_up, MODEL_TENSOR_MLP_UP, h, di, 1);
      add_proj (b, n->dense_down, MODEL_TENSOR_MLP_DOWN, di, h, 1);
      set_layer_range (b, first, b->inv->tensors->len, 0, k);
    }
  if (k >= a->n_layers)
    return;
  guint moe = b->inv->tensors->len;
  add_proj (b, n->router, MODEL_TENSOR_ROUTER, h, E, 1);
  if (ds->router_bias)
    add (b, n->router, TRUE, "e_score_correction_bias", MODEL_TENSOR_ROUTER, TRUE, 1, E, 1, 1);
  add_proj (b, n->gate, MODEL_TENSOR_MLP_GATE, h, i, E);
  add_proj (b, n->up, MODEL_TENSOR_MLP_UP, h, i, E);
  add_proj (b, n->down, MODEL_TENSOR_MLP_DOWN, i, h, E);
  if (a->shared_expert_size > 0)
    {
      add_proj (b, n->shared_gate, MODEL_TENSOR_SHARED_GATE, h, a->shared_expert_size, 1);
      add_proj (b, n->shared_up, MODEL_TENSOR_SHARED_UP, h, a->shared_expert_size, 1);
      add_proj (b, n->shared_down, MODEL_TENSOR_SHARED_DOWN, a->shared_expert_size, h, 1);
    }
  set_layer_range (b, moe, b->inv->tensors->len, k, 0);
}

/* DeepSeek's layer: MLA, the MLP block, MLA's two norms, the layer's two RMSNorms. */
static void
add_deepseek_layer (Builder *b)
{
  const ModelDeepseek *ds = &b->inv->arch->deepseek;
  add_mla_attention (b);
  add_deepseek_mlp (b);
  if (ds->q_lora_rank > 0)
    add (b, b->n->q_a_norm, TRUE, "weight", MODEL_TENSOR_MLA_NORM, FALSE, 1, ds->q_lora_rank, 1, 1);
  add (b, b->n->kv_a_norm, TRUE, "weight", MODEL_TENSOR_MLA_NORM, FALSE, 1, ds->kv_lora_rank, 1, 1);
  add_norm (b, b->n->norm1, TRUE, FALSE);
  add_norm (b, b->n->norm2, TRUE, FALSE);
}

/* The LoRA targets, adapters and NF4 constants of the layer tensors from `first` on. */
static void
finish_layer (Builder *b, guint first)
{
  GArray *ts = b->inv->tensors;
  guint last = b->inv->tensors->len;
  if (!b->lora)
    return;
  for (guint j = first; j < last; j++)
    {
      ModelTensor *t = &g_array_index (ts, ModelTensor, j);
      t->lora_target = is_proj_weight (t) && targeted (t->role, &b->inv->finetune)
                       && !fused_expert (b->inv, t);
    }
  /* Adapters, group by group (A of each member, then B of each member). */
  for (guint j = first; j < last; j++)
    {
      if (!is_proj_weight (&g_array_index (ts, ModelTensor, j)))
        continue;
      guint end = j;
      while (end + 1 < last && same_group (&g_array_index (ts, ModelTensor, end),
                                           &g_array_index (ts, ModelTensor, end + 1)))
        end++;
      add_adapters (b, j, end);
      j = end;
    }
  if (b->qlora)
    add_quant_constants (b, first, last);
}


static void
add_layer (Builder *b)
{
  const ModelArch *a = b->inv->arch;
  const Names *n = b->n;
  guint64 h = a->hidden_size, q = a->n_heads * a->head_dim, kv = a->n_kv_heads * a->head_dim;
  guint64 i = a->intermediate_size, E = a->n_experts > 0 ? a->n_experts : 1;
  gboolean fused = model_arch_fused_qkv (a), moe = a->n_experts > 0;
  gboolean swiglu = a->mlp == MODEL_MLP_SWIGLU;
  guint first = b->inv->tensors->len;
  if (a->deepseek.mla) /* its own layout; adapters and constants alike */
    {
      add_deepseek_layer (b);
      finish_layer (b, first);
      return;
    }
  if (fused)
    add_proj (b, n->qkv, MODEL_TENSOR_QKV, h, q + 2 * kv, 1);
  else
    {
      add_proj (b, n->q, MODEL_TENSOR_Q, h, q, 1);
      add_proj (b, n->k, MODEL_TENSOR_K, h, kv, 1);
      add_proj (b, n->v, MODEL_TENSOR_V, h, kv, 1);
    }
  add_proj (b, n->o, MODEL_TENSOR_ATTN_OUT, q, h, 1);
  if (a->qkv_bias && fused)
    add (b, n->qkv, TRUE, "bias", MODEL_TENSOR_QKV, TRUE, 1, q + 2 * kv, 1, 1);
  else if (a->qkv_bias)
    {
      add (b, n->q, TRUE, "bias", MODEL_TENSOR_Q, TRUE, 1, q, 1, 1);
      add (b, n->k, TRUE, "bias", MODEL_TENSOR_K, TRUE, 1, kv, 1, 1);
      add (b, n->v, TRUE, "bias", MODEL_TENSOR_V, TRUE, 1, kv, 1, 1);
    }
  if (a->attn_out_bias)
    add (b, n->o, TRUE, "bias", MODEL_TENSOR_ATTN_OUT, TRUE, 1, h, 1, 1);
  if (a->fused_gate_up)
    add_gpt_oss_mlp (b);
  else if (moe)
    add_proj (b, n->router, MODEL_TENSOR_ROUTER, h, a->n_experts, 1); /* no bias */
  if (a->fused_gate_up)
    ; /* the experts are add_gpt_oss_mlp's */
  else if (swiglu)
    add_proj (b, n->gate, MODEL_TENSOR_MLP_GATE, h, i, E);
  if (!a->fused_gate_up)
    {
      add_proj (b, n->up, MODEL_TENSOR_MLP_UP, h, i, E);
      add_proj (b, n->down, MODEL_TENSOR_MLP_DOWN, i, h, E);
    }
  if (a->mlp_bias && !a->fused_gate_up)
    {
      if (swiglu)
        add (b, n->gate, TRUE, "bias", MODEL_TENSOR_MLP_GATE, TRUE, 1, i, 1, E);
      add (b, n->up, TRUE, "bias", MODEL_TENSOR_MLP_UP, TRUE, 1, i, 1, E);
      add (b, n->down, TRUE, "bias", MODEL_TENSOR_MLP_DOWN, TRUE, 1, h, 1, E);
    }
  if (a->shared_expert_size > 0) /* Qwen2MoeMLP(shared_expert_intermediate_size), no biases */
    {
      add_proj (b, n->shared_gate, MODEL_TENSOR_SHARED_GATE, h, a->shared_expert_size, 1);
      add_proj (b, n->shared_up, MODEL_TENSOR_SHARED_UP, h, a->shared_expert_size, 1);
      add_proj (b, n->shared_down, MODEL_TENSOR_SHARED_DOWN, a->shared_expert_size, h, 1);
      if (a->shared_expert_gate) /* nn.Linear(h, 1, bias=False) */
        add_proj (b, n->shared_expert_gate, MODEL_TENSOR_SHARED_EXPERT_GATE, h, 1, 1);
    }
  if (a->qk_norm) /* Qwen3RMSNorm(head_dim): weight only */
    {
      add (b, n->q_norm, TRUE, "weight", MODEL_TENSOR_QK_NORM, FALSE, 1, a->head_dim, 1, 1);
      add (b, n->k_norm, TRUE, "weight", MODEL_TENSOR_QK_NORM, FALSE, 1, a->head_dim, 1, 1);
    }
  add_norm (b, n->norm1, TRUE, FALSE);
  add_norm (b, n->norm2, TRUE, FALSE);
  add_norm (b, n->norm1, TRUE, TRUE);
  add_norm (b, n->norm2, TRUE, TRUE);
  finish_layer (b, first);
}

static gboolean
check_sizes (const ModelArch *a, const ModelFinetune *ft, GError **error)
{
  if (model_finetune_active (ft) && ft->rank == 0)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID,
                   "model '%s': LoRA rank must be at least 1",
                   a->name != NULL ? a->name : "(unnamed)");
      return FALSE;
    }
  /* Π shape of the largest tensor must stay exact in 64 bits: sizes past
   * model_arch_validate()'s bounds are refused rather than wrapped. */
  guint64 big = MAX (MAX (a->vocab_size, a->max_positions), MAX (a->intermediate_size,
                                                                 a->n_heads * a->head_dim));
  if (a->hidden_size > G_MAXUINT32 || big > G_MAXUINT32 || a->n_experts > G_MAXUINT32
      || a->n_layers > G_MAXUINT32)
    {
      g_set_error (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID,
                   "model '%s': sizes too large to count exactly",
                   a->name != NULL ? a->name : "(unnamed)");
      return FALSE;
    }
  return TRUE;
}

static gboolean in_last_layer (const ModelInventory *inv, const ModelTensor *t);

/* DeepSeek-V3's multi-token-prediction modules, after everything else (arch.h
 * model_arch_n_params_mtp; Megatron-LM megatron/core/transformer/multi_token_prediction.py
 * MultiTokenPredictionLayer): depth d is layer L + d of the HF checkpoint
 * (model.layers.{L+d}.…), enorm and hnorm (h each), eh_proj (h × 2h: nn.Linear(2h, h)), a
 * copy of every parameter tensor of the main stack's last layer (the MoE decoder layer),
 * and shared_head.norm (h). The checkpoint's embed_tokens and shared_head.head of that
 * layer duplicate the main model's (shared in training) and are not listed. Each entry is
 * a concrete layer (layer = L + d): in ALL and MTP scope, never in LAYER. Trainable unless
 * an adapter method froze the base (then the copies are frozen and carry no adapters). */
static void
add_mtp (Builder *b, guint n_mtp)
{
  const ModelArch *a = b->inv->arch;
  guint64 h = a->hidden_size, L = b->inv->n_layers;
  guint end = b->inv->tensors->len; /* the template tensors to copy are below it */
  for (guint d = 0; d < n_mtp; d++)
    {
      g_autofree char *l = g_strdup_printf ("%" G_GUINT64_FORMAT, L + d);
      g_auto (GStrv) parts = g_strsplit (b->n->layer, "{i}", -1);
      g_autofree char *prefix = g_strjoinv (l, parts);
      guint first = b->inv->tensors->len;
      add (b, prefix, FALSE, "enorm.weight", MODEL_TENSOR_NORM, FALSE, 1, h, 1, 1);
      add (b, prefix, FALSE, "hnorm.weight", MODEL_TENSOR_NORM, FALSE, 1, h, 1, 1);
      add (b, prefix, FALSE, "eh_proj.weight", MODEL_TENSOR_MTP_EH_PROJ, FALSE, 2, h, 2 * h, 1);
      for (guint k = 0; k < end; k++)
        {
          ModelTensor t = g_array_index (b->inv->tensors, ModelTensor, k);
          if (t.layer != MODEL_TENSOR_EACH_LAYER || !model_tensor_is_parameter (&t)
              || t.role == MODEL_TENSOR_LORA_A || t.role == MODEL_TENSOR_LORA_B
              || t.role == MODEL_TENSOR_DORA_MAGNITUDE || !in_last_layer (b->inv, &t))
            continue;
          g_auto (GStrv) tp = g_strsplit (t.name, "{i}", -1);
          g_autofree char *name = g_strjoinv (l, tp);
          t.name = g_string_chunk_insert_const (b->inv->names, name);
          t.from_layer = t.to_layer = 0;
          t.trainable = !b->lora;
          t.lora_target = FALSE;
          g_array_append_val (b->inv->tensors, t);
        }
      add (b, prefix, FALSE, "shared_head.norm.weight", MODEL_TENSOR_NORM, FALSE, 1, h, 1, 1);
      for (guint k = first; k < b->inv->tensors->len; k++)
        {
          ModelTensor *t = &g_array_index (b->inv->tensors, ModelTensor, k);
          t->layer = (gint) (L + d);
          t->after_layers = FALSE;
        }
    }
}

ModelInventory *
model_inventory_new (const ModelArch *arch, const ModelFinetune *ft, GError **error)
{
  return model_inventory_new_mtp (arch, ft, 0, error);
}

/* ---- the memo ---------------------------------------------------------------------------
 *
 * Parameter counts and state bytes are folds over an inventory, each building its own: one
 * single-GPU scenario of bench/sweep-1000.ini built 58, 17 % of its instructions. Each
 * thread keeps the last MEMO_SIZE inventories it built (GPrivate, freed with the thread;
 * two: the architecture's own full-fine-tuning inventory and the stack's, which
 * alternate) and hands one out again, one more reference, when the same inputs come back:
 * the architecture's bytes but its name, the name as a string, the fine-tuning method's
 * bytes (or NULL again) and n_mtp. Equal bytes are equal inputs, so the memo returns
 * exactly what a build gives; inputs that are equal but differ in padding bytes only cost
 * a build. */
#define MEMO_SIZE 2

typedef struct
{
  ModelInventory *inv; /* one reference, or NULL */
  gboolean ft_null;    /* built with ft NULL */
} MemoEntry;

typedef struct
{
  MemoEntry e[MEMO_SIZE]; /* most recently used first */
} Memo;

static void
memo_free (gpointer p)
{
  Memo *m = p;
  for (guint i = 0; i < MEMO_SIZE; i++)
    model_inventory_free (m->e[i].inv);
  g_free (m);
}

static GPrivate memo_key = G_PRIVATE_INIT (memo_free);

static gboolean
memo_hit (const MemoEntry *m, const ModelArch *arch, const ModelFinetune *ft, guint n_mtp)
{
  const ModelInventory *inv = m->inv;
  const gsize skip = G_STRUCT_OFFSET (ModelArch, family); /* the name pointer first */
  G_STATIC_ASSERT (G_STRUCT_OFFSET (ModelArch, name) == 0);
  return inv != NULL && inv->n_mtp == (arch->n_layers > 0 ? n_mtp : 0)
         && (ft == NULL) == m->ft_null
         && (ft == NULL || memcmp (ft, &inv->finetune, sizeof *ft) == 0)
         && g_strcmp0 (arch->name, inv->arch->name) == 0
         && memcmp ((const char *) arch + skip, (const char *) inv->arch + skip,
                    sizeof *arch - skip) == 0;
}

static ModelInventory *inventory_build (const ModelArch *arch, const ModelFinetune *ft,
                                        guint n_mtp, GError **error);

ModelInventory *
model_inventory_new_mtp (const ModelArch *arch, const ModelFinetune *ft, guint n_mtp,
                         GError **error)
{
  g_return_val_if_fail (arch != NULL, NULL);
  Memo *m = g_private_get (&memo_key);
  if (m == NULL)
    {
      m = g_new0 (Memo, 1);
      g_private_set (&memo_key, m);
    }
  guint i = 0;
  while (i < MEMO_SIZE && !memo_hit (&m->e[i], arch, ft, n_mtp))
    i++;
  MemoEntry hit;
  if (i < MEMO_SIZE)
    hit = m->e[i];
  else
    {
      hit.inv = inventory_build (arch, ft, n_mtp, error);
      if (hit.inv == NULL)
        return NULL;
      hit.ft_null = ft == NULL;
      i = MEMO_SIZE - 1; /* the least recently used goes */
      model_inventory_free (m->e[i].inv);
    }
  memmove (&m->e[1], &m->e[0], i * sizeof m->e[0]);
  m->e[0] = hit;
  g_atomic_int_inc (&hit.inv->ref_count);
  return hit.inv;
}

static ModelInventory *
inventory_build (const ModelArch *arch, const ModelFinetune *ft, guint n_mtp, GError **error)
{
  if (!check_sizes (arch, ft, error))
    return NULL;
  ModelInventory *inv = g_new0 (ModelInventory, 1);
  inv->ref_count = 1;
  inv->arch = model_arch_copy (arch);
  model_finetune_init_defaults (&inv->finetune);
  if (ft != NULL)
    inv->finetune = *ft;
  inv->n_layers = arch->n_layers;
  inv->tensors = g_array_new (FALSE, FALSE, sizeof (ModelTensor));
  inv->names = g_string_chunk_new (1024);
  Builder b = {
    .inv = inv,
    .n = names_of (arch->family),
    .lora = model_finetune_active (ft),
    .qlora = ft != NULL && ft->method == MODEL_FINETUNE_QLORA,
  };
  const Names *n = b.n;
  guint64 h = arch->hidden_size;
  gboolean bert = arch->family == MODEL_FAMILY_BERT;
  add (&b, n->embed, FALSE, "weight", MODEL_TENSOR_EMBEDDING, FALSE, 2, arch->vocab_size, h, 1);
  if (arch->learned_positions && arch->max_positions > 0)
    add (&b, n->pos, FALSE, "weight", MODEL_TENSOR_POSITION, FALSE, 2, arch->max_positions, h, 1);
  if (bert)
    {
      if (arch->type_vocab_size > 0)
        add (&b, n->type, FALSE, "weight", MODEL_TENSOR_TOKEN_TYPE, FALSE, 2,
             arch->type_vocab_size, h, 1);
      add_norm (&b, n->embed_norm, FALSE, FALSE);
      add_norm (&b, n->embed_norm, FALSE, TRUE);
    }
  if (arch->n_layers > 0)
    add_layer (&b);
  b.after_layers = TRUE;
  if (bert) /* BertForSequenceClassification: post-LN, no final norm */
    {
      add (&b, n->pooler, FALSE, "weight", MODEL_TENSOR_POOLER, FALSE, 2, h, h, 1);
      add (&b, n->pooler, FALSE, "bias", MODEL_TENSOR_POOLER, TRUE, 1, h, 1, 1);
      if (arch->num_labels > 0)
        {
          add (&b, n->classifier, FALSE, "weight", MODEL_TENSOR_CLASSIFIER, FALSE, 2,
               arch->num_labels, h, 1);
          add (&b, n->classifier, FALSE, "bias", MODEL_TENSOR_CLASSIFIER, TRUE, 1,
               arch->num_labels, 1, 1);
        }
      return inv;
    }
  add_norm (&b, n->final_norm, FALSE, FALSE);
  add_norm (&b, n->final_norm, FALSE, TRUE);
  if (!arch->tied_embeddings)
    add (&b, n->head, FALSE, "weight", MODEL_TENSOR_HEAD, FALSE, 2, arch->vocab_size, h, 1);
  if (arch->n_layers > 0)
    add_mtp (&b, n_mtp);
  inv->n_mtp = arch->n_layers > 0 ? n_mtp : 0;
  return inv;
}

void
model_inventory_free (ModelInventory *inv)
{
  if (inv == NULL || !g_atomic_int_dec_and_test (&inv->ref_count))
    return;
  model_arch_free (inv->arch);
  g_array_unref (inv->tensors);
  g_string_chunk_free (inv->names);
  g_free (inv);
}

gboolean
model_tensor_is_quant_constant (const ModelTensor *t)
{
  g_return_val_if_fail (t != NULL, FALSE);
  return t->role == MODEL_TENSOR_QUANT_ABSMAX || t->role == MODEL_TENSOR_QUANT_ABSMAX2;
}

gboolean
model_tensor_is_parameter (const ModelTensor *t)
{
  return !model_tensor_is_quant_constant (t);
}

double
model_tensor_storage_bytes (const ModelTensor *t, double weight_bytes)
{
  g_return_val_if_fail (t != NULL, 0);
  switch (t->storage)
    {
    case MODEL_TENSOR_STORAGE_NF4: return MODEL_NF4_BYTES;
    case MODEL_TENSOR_STORAGE_FP32: return 4;
    case MODEL_TENSOR_STORAGE_UINT8: return 1;
    case MODEL_TENSOR_STORAGE_MXFP4: return MODEL_MXFP4_BYTES;
    case MODEL_TENSOR_STORAGE_WEIGHT:
    default: return weight_bytes;
    }
}

guint64
model_tensor_numel (const ModelTensor *t)
{
  g_return_val_if_fail (t != NULL, 0);
  guint64 n = 1;
  for (guint d = 0; d < t->ndim; d++)
    n *= t->shape[d];
  return n;
}

const ModelTensor *
model_inventory_tensor (const ModelInventory *inv, guint i)
{
  g_return_val_if_fail (inv != NULL && i < inv->tensors->len, NULL);
  return &g_array_index (inv->tensors, ModelTensor, i);
}

char *
model_inventory_tensor_name (const ModelTensor *t, guint64 layer, guint64 expert)
{
  g_return_val_if_fail (t != NULL, NULL);
  g_autofree char *l = g_strdup_printf ("%" G_GUINT64_FORMAT, layer);
  g_autofree char *e = g_strdup_printf ("%" G_GUINT64_FORMAT, expert);
  g_auto (GStrv) a = g_strsplit (t->name, "{i}", -1);
  g_autofree char *with_layer = g_strjoinv (l, a);
  g_auto (GStrv) b = g_strsplit (with_layer, "{e}", -1);
  return g_strjoinv (e, b);
}

/* Layers a template tensor is in: n_layers, or its range (from_layer, to_layer). */
static guint64
layer_span (const ModelInventory *inv, const ModelTensor *t)
{
  guint64 to = t->to_layer == 0 ? inv->n_layers : MIN (t->to_layer, inv->n_layers);
  return to > t->from_layer ? to - t->from_layer : 0;
}

/* Whether template tensor `t` is in layer `layer`. */
static gboolean
in_layer (const ModelInventory *inv, const ModelTensor *t, guint64 layer)
{
  guint64 to = t->to_layer == 0 ? inv->n_layers : t->to_layer;
  return layer >= t->from_layer && layer < to;
}

/* Whether template tensor `t` is in the last (representative) layer. */
static gboolean
in_last_layer (const ModelInventory *inv, const ModelTensor *t)
{
  return inv->n_layers == 0 || in_layer (inv, t, inv->n_layers - 1);
}

guint64
model_inventory_copies (const ModelInventory *inv, const ModelTensor *t,
                        ModelInventoryScope scope)
{
  g_return_val_if_fail (inv != NULL && t != NULL, 0);
  gboolean root = t->layer == MODEL_TENSOR_ROOT;
  switch (scope)
    {
    case MODEL_INVENTORY_ROOT:
      return root ? t->count : 0;
    case MODEL_INVENTORY_EMBED:
      return root && !t->after_layers ? t->count : 0;
    case MODEL_INVENTORY_HEAD:
      return root && t->after_layers ? t->count : 0;
    case MODEL_INVENTORY_LAYER:
      return t->layer == MODEL_TENSOR_EACH_LAYER && in_last_layer (inv, t) ? t->count : 0;
    case MODEL_INVENTORY_MTP:
      return t->layer >= 0 && (guint64) t->layer >= inv->n_layers ? t->count : 0;
    case MODEL_INVENTORY_ALL:
    default:
      return t->count * (t->layer == MODEL_TENSOR_EACH_LAYER ? layer_span (inv, t) : 1);
    }
}

guint64
model_inventory_copies_in_layers (const ModelInventory *inv, const ModelTensor *t,
                                  guint64 from_layer, guint64 to_layer)
{
  g_return_val_if_fail (inv != NULL && t != NULL, 0);
  if (t->layer == MODEL_TENSOR_ROOT)
    return 0;
  if (t->layer != MODEL_TENSOR_EACH_LAYER) /* one concrete layer */
    return (guint64) t->layer >= from_layer && (guint64) t->layer < to_layer ? t->count : 0;
  guint64 end = t->to_layer == 0 ? inv->n_layers : MIN (t->to_layer, inv->n_layers);
  guint64 lo = MAX (from_layer, t->from_layer), hi = MIN (to_layer, end);
  return hi > lo ? t->count * (hi - lo) : 0;
}

double
model_inventory_fold (const ModelInventory *inv, ModelInventoryScope scope, ModelTensorFn fn,
                      gpointer data)
{
  g_return_val_if_fail (inv != NULL && fn != NULL, 0);
  double sum = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      guint64 c = model_inventory_copies (inv, t, scope);
      if (c > 0)
        sum += (double) c * fn (t, data);
    }
  return sum;
}

/* Integer folds: Σ copies × numel over the tensors `keep` accepts (exact in 64 bits). */
typedef gboolean (*Keep) (const ModelTensor *t, gconstpointer data);

static guint64
count (const ModelInventory *inv, ModelInventoryScope scope, Keep keep, gconstpointer data)
{
  g_return_val_if_fail (inv != NULL, 0);
  guint64 n = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if (keep (t, data))
        n += model_inventory_copies (inv, t, scope) * model_tensor_numel (t);
    }
  return n;
}

static gboolean
is_adapter (const ModelTensor *t)
{
  return t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B
         || t->role == MODEL_TENSOR_DORA_MAGNITUDE;
}

static gboolean
keep_base (const ModelTensor *t, gconstpointer data)
{
  (void) data;
  return !is_adapter (t) && model_tensor_is_parameter (t);
}

static gboolean
keep_trainable (const ModelTensor *t, gconstpointer data)
{
  (void) data;
  return t->trainable;
}

static gboolean
keep_adapter (const ModelTensor *t, gconstpointer data)
{
  (void) data;
  return is_adapter (t);
}

static gboolean
keep_role (const ModelTensor *t, gconstpointer data)
{
  return t->role == *(const ModelTensorRole *) data;
}

static gboolean
keep_nf4 (const ModelTensor *t, gconstpointer data)
{
  (void) data;
  return t->storage == MODEL_TENSOR_STORAGE_NF4;
}

guint64
model_inventory_n_params (const ModelInventory *inv, ModelInventoryScope scope)
{
  return count (inv, scope, keep_base, NULL);
}

guint64
model_inventory_n_trainable (const ModelInventory *inv, ModelInventoryScope scope)
{
  return count (inv, scope, keep_trainable, NULL);
}

guint64
model_inventory_n_adapter (const ModelInventory *inv, ModelInventoryScope scope)
{
  return count (inv, scope, keep_adapter, NULL);
}

guint64
model_inventory_n_role (const ModelInventory *inv, ModelInventoryScope scope,
                        ModelTensorRole role)
{
  return count (inv, scope, keep_role, &role);
}

guint64
model_inventory_n_nf4 (const ModelInventory *inv, ModelInventoryScope scope)
{
  return count (inv, scope, keep_nf4, NULL);
}

/* A routed expert's tensor: an MLP weight counted n_experts times per layer (deepseek's
 * dense-layer MLP has the same roles, one copy). */
static gboolean
is_expert (const ModelInventory *inv, const ModelTensor *t)
{
  return inv->arch->n_experts > 0 && t->count == inv->arch->n_experts
         && (t->role == MODEL_TENSOR_MLP_GATE || t->role == MODEL_TENSOR_MLP_UP
             || t->role == MODEL_TENSOR_MLP_DOWN);
}

guint64
model_inventory_n_params_of_layer (const ModelInventory *inv, guint64 layer)
{
  g_return_val_if_fail (inv != NULL, 0);
  guint64 n = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      gboolean here = t->layer == MODEL_TENSOR_EACH_LAYER ? in_layer (inv, t, layer)
                                                          : t->layer == (gint) layer;
      if (here && keep_base (t, NULL))
        n += t->count * model_tensor_numel (t);
    }
  return n;
}

guint64
model_inventory_n_active (const ModelInventory *inv)
{
  g_return_val_if_fail (inv != NULL, 0);
  guint64 n = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if (is_adapter (t) || !model_tensor_is_parameter (t))
        continue;
      guint64 c = model_inventory_copies (inv, t, MODEL_INVENTORY_ALL);
      if (is_expert (inv, t)) /* top-k of the E copies per layer */
        c = c / t->count * inv->arch->experts_per_token;
      n += c * model_tensor_numel (t);
    }
  return n;
}

guint64
model_inventory_largest (const ModelInventory *inv, ModelInventoryScope scope,
                         gboolean trainable_only)
{
  g_return_val_if_fail (inv != NULL, 0);
  guint64 m = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if (model_inventory_copies (inv, t, scope) > 0 && model_tensor_is_parameter (t)
          && (t->trainable || !trainable_only))
        m = MAX (m, model_tensor_numel (t));
    }
  return m;
}

double
model_inventory_weight_bytes (const ModelInventory *inv, ModelInventoryScope scope,
                              double weight_bytes, gboolean with_adapters)
{
  g_return_val_if_fail (inv != NULL, 0);
  /* Element counts per storage first, then one product each: exact for any count < 2^53. */
  guint64 dense = 0, nf4 = 0, mxfp4 = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if ((is_adapter (t) && !with_adapters) || !model_tensor_is_parameter (t))
        continue;
      guint64 n = model_inventory_copies (inv, t, scope) * model_tensor_numel (t);
      if (t->storage == MODEL_TENSOR_STORAGE_NF4)
        nf4 += n;
      else if (t->storage == MODEL_TENSOR_STORAGE_MXFP4)
        mxfp4 += n;
      else
        dense += n;
    }
  return MODEL_NF4_BYTES * (double) nf4 + MODEL_MXFP4_BYTES * (double) mxfp4
         + weight_bytes * (double) dense;
}

double
model_inventory_nf4_constant_bytes (const ModelInventory *inv, ModelInventoryScope scope)
{
  g_return_val_if_fail (inv != NULL, 0);
  /* elements per storage first, then one product each: exact for any count < 2^53 */
  guint64 fp32 = 0, uint8 = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if (!model_tensor_is_quant_constant (t))
        continue;
      guint64 n = model_inventory_copies (inv, t, scope) * model_tensor_numel (t);
      if (t->storage == MODEL_TENSOR_STORAGE_UINT8)
        uint8 += n;
      else
        fp32 += n;
    }
  return 4.0 * (double) fp32 + (double) uint8;
}

guint64
model_inventory_n_quant_constant_tensors (const ModelInventory *inv, ModelInventoryScope scope)
{
  g_return_val_if_fail (inv != NULL, 0);
  guint64 n = 0;
  for (guint k = 0; k < inv->tensors->len; k++)
    {
      const ModelTensor *t = &g_array_index (inv->tensors, ModelTensor, k);
      if (model_tensor_is_quant_constant (t))
        n += model_inventory_copies (inv, t, scope);
    }
  return n;
}

GArray *
model_inventory_layer_linears (const ModelInventory *inv)
{
  g_return_val_if_fail (inv != NULL, NULL);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelLinear));
  const ModelArch *a = inv->arch;
  double k = a->n_experts > 0 ? (double) a->experts_per_token / (double) a->n_experts : 1.0;
  GArray *ts = inv->tensors;
  for (guint j = 0; j < ts->len; j++)
    {
      const ModelTensor *t = &g_array_index (ts, ModelTensor, j);
      if (t->layer != MODEL_TENSOR_EACH_LAYER || !is_proj_weight (t) || !in_last_layer (inv, t))
        continue;
      guint64 in, outf;
      proj_features (inv, t, &in, &outf);
      ModelLinear l = {
        .in = in,
        .out = outf,
        .count = t->count,
        .tokens_per_token = is_expert (inv, t) ? k : 1.0,
        .targeted = t->lora_target,
        .attention = t->role <= MODEL_TENSOR_ATTN_OUT,
        .reads_inner = t->role == MODEL_TENSOR_ATTN_OUT || t->role == MODEL_TENSOR_MLP_DOWN
                       || t->role == MODEL_TENSOR_SHARED_DOWN,
        .kv = t->role == MODEL_TENSOR_K || t->role == MODEL_TENSOR_V,
      };
      /* MLA (graph_layer.c mla_attention): kv_b's output is the per-head k_nope and v */
      l.kv = l.kv || t->role == MODEL_TENSOR_KV_B;
      /* A group (SwiGLU gate + up) is one ModelLinear of their summed count. */
      while (j + 1 < ts->len && same_group (&g_array_index (ts, ModelTensor, j),
                                            &g_array_index (ts, ModelTensor, j + 1)))
        l.count += g_array_index (ts, ModelTensor, ++j).count;
      g_array_append_val (out, l);
    }
  return out;
}
