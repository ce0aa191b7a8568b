/* tests/unit/models/test_inventory.c — the tensor inventory (models/arch/inventory.h): per-role
 * counts against closed forms, trainable counts under LoRA, NF4 bytes, and that every fold
 * (the inventory's own, arch.h's counts, stack.h's bytes) equals the sum over the tensors.
 *
 * Oracles: the module shapes of HF modeling_llama.py / modeling_gpt2.py /
 * modeling_mixtral.py written as closed forms in the configs' sizes (derivations in the
 * comments), PEFT's lora_A r × in and lora_B out × r, QLoRA §3's 0.5 B per NF4 weight and
 * 0.127 bit of double-quantized constants. */
#include "config.h"
#include "models/arch/inventory.h"
#include "models/stack/stack.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/tiny.h"

#include <math.h>
#include <string.h>

static ModelInventory *
inventory (const ModelArch *a, const ModelFinetune *f)
{
  g_autoptr (GError) error = NULL;
  ModelInventory *inv = model_inventory_new (a, f, &error);
  g_assert_no_error (error);
  return inv;
}

/* Llama-3.1-8B (h 4096, L 32, a 32, k 8, d 128, i 14336, V 128256, untied), as
 * LlamaForCausalLM: embed_tokens V·h; per layer q h·(a·d), k and v h·(k·d), o (a·d)·h, gate
 * and up i·h, down h·i, two RMSNorm weights h; final norm h; lm_head V·h. */
static void
test_llama_roles (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-3.1-8b");
  g_autoptr (ModelInventory) inv = inventory (a, NULL);
  const guint64 h = 4096, L = 32, q = 32 * 128, kv = 8 * 128, i = 14336, V = 128256;
  const struct
  {
    ModelTensorRole role;
    guint64 n;
  } want[] = {
    { MODEL_TENSOR_EMBEDDING, V * h },    { MODEL_TENSOR_Q, L * h * q },
    { MODEL_TENSOR_K, L * h * kv },       { MODEL_TENSOR_V, L * h * kv },
    { MODEL_TENSOR_ATTN_OUT, L * q * h }, { MODEL_TENSOR_MLP_GATE, L * i * h },
    { MODEL_TENSOR_MLP_UP, L * i * h },   { MODEL_TENSOR_MLP_DOWN, L * h * i },
    { MODEL_TENSOR_NORM, 2 * L * h + h }, { MODEL_TENSOR_HEAD, V * h },
    { MODEL_TENSOR_QKV, 0 },              { MODEL_TENSOR_ROUTER, 0 },
    { MODEL_TENSOR_POSITION, 0 },
  };
  guint64 sum = 0;
  for (gsize k = 0; k < G_N_ELEMENTS (want); k++)
    {
      CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, want[k].role), want[k].n);
      sum += want[k].n;
    }
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL), sum);
  CU_ASSERT_EQUAL (model_arch_n_params (a), sum); /* 8,030,261,248 (Meta's model card: 8.03B) */
  CU_ASSERT_EQUAL (sum, 8030261248ULL);
  /* shapes: nn.Linear (out, in) */
  const ModelTensor *k_proj = NULL;
  for (guint j = 0; j < inv->tensors->len; j++)
    if (model_inventory_tensor (inv, j)->role == MODEL_TENSOR_K)
      k_proj = model_inventory_tensor (inv, j);
  CU_ASSERT_PTR_NOT_NULL_FATAL (k_proj);
  CU_ASSERT_EQUAL (k_proj->ndim, 2);
  CU_ASSERT_EQUAL (k_proj->shape[0], kv);
  CU_ASSERT_EQUAL (k_proj->shape[1], h);
  CU_ASSERT_EQUAL (k_proj->layer, MODEL_TENSOR_EACH_LAYER);
  CU_ASSERT_STRING_EQUAL (k_proj->name, "model.layers.{i}.self_attn.k_proj.weight");
  g_autofree char *name = model_inventory_tensor_name (k_proj, 31, 0);
  CU_ASSERT_STRING_EQUAL (name, "model.layers.31.self_attn.k_proj.weight");
}

/* GPT-2 small (h 768, L 12, V 50257, P 1024, i 3072, tied), GPT2LMHeadModel: wte V·h, wpe
 * P·h; per layer ln_1, ln_2 (weight + bias, 2h each), c_attn Conv1D h × 3h + 3h, c_proj
 * h × h + h, c_fc h × 4h + 4h, mlp.c_proj 4h × h + h; ln_f 2h; head tied (0). */
static void
test_gpt2_roles (void)
{
  g_autoptr (ModelArch) a = shipped ("gpt2");
  g_autoptr (ModelInventory) inv = inventory (a, NULL);
  const guint64 h = 768, L = 12, V = 50257, P = 1024, i = 3072;
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_EMBEDDING), V * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_POSITION), P * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_QKV),
                   L * (h * 3 * h + 3 * h));
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_ATTN_OUT),
                   L * (h * h + h));
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_MLP_UP),
                   L * (h * i + i));
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_MLP_DOWN),
                   L * (i * h + h));
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_NORM),
                   L * 4 * h + 2 * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_HEAD), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_MLP_GATE), 0);
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL), 124439808ULL);
  /* c_attn is a Conv1D: weight stored (in, out) = (h, 3h) */
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      if (t->role == MODEL_TENSOR_QKV && !t->is_bias)
        {
          CU_ASSERT_EQUAL (t->shape[0], h);
          CU_ASSERT_EQUAL (t->shape[1], 3 * h);
          CU_ASSERT_STRING_EQUAL (t->name, "transformer.h.{i}.attn.c_attn.weight");
        }
    }
}

/* Mixtral-8x7B (h 4096, L 32, E 8, top-2, i 14336): per layer a router E × h and E copies of
 * w1, w3 (i × h) and w2 (h × i), named per expert; active parameters count 2 of the 8. */
static void
test_mixtral_experts (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  g_autoptr (ModelInventory) inv = inventory (a, NULL);
  const guint64 h = 4096, L = 32, E = 8, i = 14336;
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_ROUTER), L * E * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_MLP_GATE),
                   L * E * i * h);
  guint64 experts = 3 * L * E * i * h, active_experts = 3 * L * 2 * i * h;
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL)
                     - model_inventory_n_active (inv),
                   experts - active_experts);
  CU_ASSERT_EQUAL (model_arch_n_params_active (a), model_inventory_n_active (inv));
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      if (t->role == MODEL_TENSOR_MLP_DOWN)
        {
          CU_ASSERT_EQUAL (t->count, E);
          g_autofree char *n = model_inventory_tensor_name (t, 2, 5);
          CU_ASSERT_STRING_EQUAL (n, "model.layers.2.block_sparse_moe.experts.5.w2.weight");
        }
    }
}

/* LoRA r on Llama-2-7B (h 4096, i 11008, L 32): qv trains q and v, r·(h + h) each, 32 ×
 * 16 × 2 × 8192 = 8,388,608; all_linear adds k, o (r·2h) and gate, up, down (r·(h + i)):
 * 32 × 16 × (4·8192 + 3·15104) = 39,976,960 (PEFT's print_trainable_parameters). Nothing
 * else trains; the base is frozen and unchanged. GPT-2 with qv: one adapter on the fused
 * c_attn, r·(h + 3h) per layer. Mixtral with all_linear: the router (E = 8 outputs) too,
 * r·(h + 8) per layer; attention leaves it out. */
static void
test_lora_trainable (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelFinetune qv = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_QV);
  ModelFinetune all = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) iqv = inventory (a, &qv);
  g_autoptr (ModelInventory) iall = inventory (a, &all);
  CU_ASSERT_EQUAL (model_inventory_n_trainable (iqv, MODEL_INVENTORY_ALL), 8388608);
  CU_ASSERT_EQUAL (model_inventory_n_trainable (iall, MODEL_INVENTORY_ALL), 39976960);
  CU_ASSERT_EQUAL (model_inventory_n_trainable (iall, MODEL_INVENTORY_ROOT), 0);
  CU_ASSERT_EQUAL (model_inventory_n_adapter (iall, MODEL_INVENTORY_ALL), 39976960);
  CU_ASSERT_EQUAL (model_inventory_n_params (iall, MODEL_INVENTORY_ALL), model_arch_n_params (a));
  for (guint j = 0; j < iqv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (iqv, j);
      gboolean adapter = t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B;
      CU_ASSERT_EQUAL (t->trainable, adapter);
      if (t->role == MODEL_TENSOR_LORA_A)
        {
          const ModelTensor *base = model_inventory_tensor (iqv, (guint) t->base);
          CU_ASSERT (base->role == MODEL_TENSOR_Q || base->role == MODEL_TENSOR_V);
          CU_ASSERT (base->lora_target);
          CU_ASSERT_EQUAL (t->shape[0], 16);
          CU_ASSERT_EQUAL (t->shape[1], 4096);
        }
    }
  g_autoptr (ModelArch) g = shipped ("gpt2");
  g_autoptr (ModelInventory) igpt = inventory (g, &qv);
  CU_ASSERT_EQUAL (model_inventory_n_trainable (igpt, MODEL_INVENTORY_LAYER), 16 * (768 + 3 * 768));
  g_autoptr (ModelArch) m = shipped ("mixtral-8x7b");
  ModelFinetune att = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ATTENTION);
  g_autoptr (ModelInventory) imall = inventory (m, &all);
  g_autoptr (ModelInventory) imatt = inventory (m, &att);
  guint64 h = 4096, i = 14336, kv = 1024;
  guint64 attn = 16 * ((h + h) + 2 * (h + kv) + (h + h));
  CU_ASSERT_EQUAL (model_inventory_n_trainable (imatt, MODEL_INVENTORY_LAYER), attn);
  CU_ASSERT_EQUAL (model_inventory_n_trainable (imall, MODEL_INVENTORY_LAYER),
                   attn + 16 * (h + 8) + 8 * 3 * 16 * (h + i));
  /* rank 0 is refused */
  ModelFinetune zero = ft (MODEL_FINETUNE_LORA, 0, MODEL_LORA_QV);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (model_inventory_new (a, &zero, &error));
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID));
}

/* QLoRA on Llama-2-7B: the layers' projection weights Λ = 32 × (4h² + 3hi) are NF4 (0.5 B),
 * the rest of Ψ in the 2-byte weight dtype, the adapters 2 B; constants Λ × (8/64 +
 * 32/(64·256)) / 8 B with double quantization, Λ × (32/64) / 8 without. */
static void
test_nf4_bytes (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelFinetune q = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) inv = inventory (a, &q);
  const double h = 4096, i = 11008, psi = 6738415616.0, A = 39976960.0;
  const double lambda = 32 * (4 * h * h + 3 * h * i);
  CU_ASSERT_DOUBLE_EQUAL ((double) model_inventory_n_nf4 (inv, MODEL_INVENTORY_ALL), lambda, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_weight_bytes (inv, MODEL_INVENTORY_ALL, 2, FALSE),
                          0.5 * lambda + 2 * (psi - lambda), 0);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_weight_bytes (inv, MODEL_INVENTORY_ALL, 2, TRUE),
                          0.5 * lambda + 2 * (psi - lambda) + 2 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_ALL),
                          lambda * (8.0 / 64 + 32.0 / (64 * 256)) / 8, 1e-6);
  q.double_quant = FALSE;
  g_autoptr (ModelInventory) single = inventory (a, &q);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (single, MODEL_INVENTORY_ALL),
                          lambda * 0.5 / 8, 1e-6);
  /* no NF4 under plain LoRA */
  ModelFinetune l = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) plain = inventory (a, &l);
  CU_ASSERT_EQUAL (model_inventory_n_nf4 (plain, MODEL_INVENTORY_ALL), 0);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (plain, MODEL_INVENTORY_ALL), 0, 0);
}

/* Qwen2.5-7B (h 3584, L 28, a 28, k 4, d 128): q, k, v carry biases (Qwen2Attention
 * bias=True), o does not: q role L·(h·q + q), k and v L·(h·kv + kv) each, o L·q·h.
 * MPT-7B (h 4096, L 32, no_bias): fused Wqkv 3h × h, LayerNorm weights only — norms
 * (2L + 1)·h —, no bias tensor anywhere; head tied. */
static void
test_qwen2_bias_mpt_no_bias (void)
{
  g_autoptr (ModelArch) q2 = shipped ("qwen2.5-7b");
  g_autoptr (ModelInventory) iq = inventory (q2, NULL);
  const guint64 h = 3584, L = 28, q = 28 * 128, kv = 4 * 128;
  CU_ASSERT_EQUAL (model_inventory_n_role (iq, MODEL_INVENTORY_ALL, MODEL_TENSOR_Q), L * (h * q + q));
  CU_ASSERT_EQUAL (model_inventory_n_role (iq, MODEL_INVENTORY_ALL, MODEL_TENSOR_K),
                   L * (h * kv + kv));
  CU_ASSERT_EQUAL (model_inventory_n_role (iq, MODEL_INVENTORY_ALL, MODEL_TENSOR_ATTN_OUT), L * q * h);
  g_autoptr (ModelArch) m = shipped ("mpt-7b");
  g_autoptr (ModelInventory) im = inventory (m, NULL);
  const guint64 hm = 4096, Lm = 32;
  CU_ASSERT_EQUAL (model_inventory_n_role (im, MODEL_INVENTORY_ALL, MODEL_TENSOR_NORM),
                   (2 * Lm + 1) * hm);
  CU_ASSERT_EQUAL (model_inventory_n_role (im, MODEL_INVENTORY_ALL, MODEL_TENSOR_QKV),
                   Lm * 3 * hm * hm);
  CU_ASSERT_EQUAL (model_inventory_n_role (im, MODEL_INVENTORY_ALL, MODEL_TENSOR_HEAD), 0);
  for (guint j = 0; j < im->tensors->len; j++)
    CU_ASSERT_FALSE (model_inventory_tensor (im, j)->is_bias);
}

/* Σ copies × fn(t) over the tensors, written out here without the inventory's folds. */
static double
manual (const ModelInventory *inv, ModelInventoryScope scope, gboolean trainable_only,
        gboolean base_only)
{
  double sum = 0;
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      gboolean adapter = t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B;
      gboolean constant = t->role == MODEL_TENSOR_QUANT_ABSMAX
                          || t->role == MODEL_TENSOR_QUANT_ABSMAX2; /* no parameter */
      if ((trainable_only && !t->trainable) || (base_only && adapter) || constant)
        continue;
      gboolean root = t->layer == MODEL_TENSOR_ROOT;
      guint64 copies = 0;
      switch (scope)
        {
        case MODEL_INVENTORY_ALL: copies = root ? t->count : t->count * inv->n_layers; break;
        case MODEL_INVENTORY_ROOT: copies = root ? t->count : 0; break;
        case MODEL_INVENTORY_LAYER: copies = root ? 0 : t->count; break;
        case MODEL_INVENTORY_EMBED: copies = root && !t->after_layers ? t->count : 0; break;
        case MODEL_INVENTORY_HEAD: copies = root && t->after_layers ? t->count : 0; break;
        case MODEL_INVENTORY_MTP: /* MTP depths are concrete layers L + d */
          copies = t->layer >= 0 && (guint64) t->layer >= inv->n_layers ? t->count : 0;
          break;
        }
      sum += (double) copies * (double) model_tensor_numel (t);
    }
  return sum;
}

static double
numel_fn (const ModelTensor *t, gpointer data)
{
  (void) data;
  return model_tensor_is_parameter (t) ? (double) model_tensor_numel (t) : 0;
}

/* Adafactor's state of one trainable tensor: r + c for a matrix, n for a vector (Shazeer &
 * Stern 2018 §3), fp32. */
static double
adafactor_fn (const ModelTensor *t, gpointer data)
{
  (void) data;
  if (!t->trainable)
    return 0;
  return 4.0 * (t->ndim == 2 ? (double) (t->shape[0] + t->shape[1]) : (double) t->shape[0]);
}

/* For every shipped config and every method: the inventory's folds, arch.h's counts and
 * stack.h's bytes are sums over the tensor list. */
static void
test_folds_are_sums (void)
{
  const char *names[] = { "llama-2-7b", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b", "gpt2",
                          "mpt-7b", "bert-large-uncased", "mistral-7b-v0.1", "llama-3.2-1b" };
  const ModelFinetune methods[] = {
    ft (MODEL_FINETUNE_NONE, 8, MODEL_LORA_ALL_LINEAR),
    ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_QV),
    ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ATTENTION),
    ft (MODEL_FINETUNE_QLORA, 64, MODEL_LORA_ALL_LINEAR),
  };
  const ModelInventoryScope scopes[] = { MODEL_INVENTORY_ALL, MODEL_INVENTORY_ROOT,
                                         MODEL_INVENTORY_LAYER, MODEL_INVENTORY_EMBED,
                                         MODEL_INVENTORY_HEAD };
  for (gsize n = 0; n < G_N_ELEMENTS (names); n++)
    for (gsize m = 0; m < G_N_ELEMENTS (methods); m++)
      {
        g_autoptr (ModelArch) a = shipped (names[n]);
        g_autoptr (ModelInventory) inv = inventory (a, &methods[m]);
        for (gsize s = 0; s < G_N_ELEMENTS (scopes); s++)
          {
            ModelInventoryScope sc = scopes[s];
            CU_ASSERT_DOUBLE_EQUAL ((double) model_inventory_n_params (inv, sc),
                                    manual (inv, sc, FALSE, TRUE), 0);
            CU_ASSERT_DOUBLE_EQUAL ((double) model_inventory_n_trainable (inv, sc),
                                    manual (inv, sc, TRUE, FALSE), 0);
            CU_ASSERT_DOUBLE_EQUAL ((double) model_inventory_n_params (inv, sc)
                                      + (double) model_inventory_n_adapter (inv, sc),
                                    model_inventory_fold (inv, sc, numel_fn, NULL), 0);
          }
        /* whole = root + L × layer, root = embed + head; arch.h's parts add up */
        CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ROOT),
                         model_inventory_n_params (inv, MODEL_INVENTORY_EMBED)
                           + model_inventory_n_params (inv, MODEL_INVENTORY_HEAD));
        CU_ASSERT_EQUAL (model_arch_n_params_embedding (a),
                         model_inventory_n_params (inv, MODEL_INVENTORY_EMBED));
        CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL),
                         model_inventory_n_params (inv, MODEL_INVENTORY_ROOT)
                           + a->n_layers * model_inventory_n_params (inv, MODEL_INVENTORY_LAYER));
        CU_ASSERT_EQUAL (model_arch_n_params (a), model_inventory_n_params (inv, MODEL_INVENTORY_ALL));
        CU_ASSERT_EQUAL (model_arch_n_params_layer (a),
                         model_arch_n_params_attention (a) + model_arch_n_params_mlp (a)
                           + (model_inventory_n_role (inv, MODEL_INVENTORY_LAYER, MODEL_TENSOR_NORM)));
        CU_ASSERT_EQUAL (model_arch_n_params (a),
                         model_arch_n_params_embedding (a) + a->n_layers * model_arch_n_params_layer (a)
                           + model_arch_n_params_final_norm (a) + model_arch_n_params_lm_head (a));
        /* stack.h's per-category bytes are folds over the same list */
        ModelStack st;
        model_stack_init_defaults (&st);
        st.zero_grad_to_none = FALSE;
        st.finetune = methods[m];
        double trainable = manual (inv, MODEL_INVENTORY_ALL, TRUE, FALSE);
        CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_params (&st, a), trainable, 0);
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_MASTER_WEIGHTS),
                                4 * trainable, 0);
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_GRADIENTS),
                                2 * trainable, 0);
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_OPTIMIZER_STATE),
                                8 * trainable, 0);
        double nf4 = 0, dense = 0;
        for (guint j = 0; j < inv->tensors->len; j++)
          {
            const ModelTensor *t = model_inventory_tensor (inv, j);
            double e = (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL)
                       * (double) model_tensor_numel (t);
            if (t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B
                || t->role == MODEL_TENSOR_QUANT_ABSMAX || t->role == MODEL_TENSOR_QUANT_ABSMAX2)
              continue;
            if (t->storage == MODEL_TENSOR_STORAGE_NF4)
              nf4 += e;
            else
              dense += e;
          }
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_WEIGHTS),
                                0.5 * nf4 + 2 * dense, 0);
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_LORA),
                                2 * (double) model_inventory_n_adapter (inv, MODEL_INVENTORY_ALL), 0);
        g_autoptr (GArray) w = model_stack_weight_tensor_bytes (&st, a);
        double wsum = 0;
        for (guint j = 0; j < w->len; j++)
          wsum += g_array_index (w, double, j);
        CU_ASSERT_DOUBLE_EQUAL (wsum, 0.5 * nf4 + 2 * dense, 0);
        st.optimizer = MODEL_OPTIMIZER_ADAFACTOR;
        CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_state_total (&st, a, NULL),
                                model_inventory_fold (inv, MODEL_INVENTORY_ALL, adafactor_fn, NULL),
                                0);
      }
}

/* 8-bit Adam's small-tensor rule (bitsandbytes min_8bit_size 4096) per tensor: on GPT-2
 * every bias and norm (≤ 3h = 2304 elements) keeps 2 fp32 states (8 B/element), every
 * matrix 2 × (n + 4·⌈n/256⌉) (one fp32 absmax per 256-element block and state,
 * bitsandbytes >= 0.44). */
static void
test_8bit_small_tensors (void)
{
  g_autoptr (ModelArch) a = shipped ("gpt2");
  g_autoptr (ModelInventory) inv = inventory (a, NULL);
  double want = 0;
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      double n = (double) model_tensor_numel (t);
      double one = t->ndim == 1 ? 8 * n : 2 * (n + 4 * ceil (n / 256));
      want += (double) model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) * one;
    }
  ModelStack s;
  model_stack_init_defaults (&s);
  s.optimizer = MODEL_OPTIMIZER_ADAMW_8BIT;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_optimizer_state_total (&s, a, NULL), want, 0);
}

/* bert-large-uncased, BertForSequenceClassification with 2 labels: token types 2 × h,
 * embedding LayerNorm 2h, no final norm, pooler h·h + h, classifier 2h + 2. */
static void
test_bert_roles (void)
{
  g_autoptr (ModelArch) a = shipped ("bert-large-uncased");
  g_autoptr (ModelInventory) inv = inventory (a, NULL);
  const guint64 h = 1024;
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_TOKEN_TYPE), 2 * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ROOT, MODEL_TENSOR_NORM), 2 * h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_POOLER), h * h + h);
  CU_ASSERT_EQUAL (model_inventory_n_role (inv, MODEL_INVENTORY_ALL, MODEL_TENSOR_CLASSIFIER),
                   2 * h + 2);
  CU_ASSERT_EQUAL (model_arch_n_params_final_norm (a), 0);
  CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL), 335143938ULL);
}

/* Σ over the quantization constants of `inv` of copies × numel × storage bytes, and their
 * tensor copies: the fold written out. */
static double
constant_sum (const ModelInventory *inv, guint64 *tensors)
{
  double sum = 0;
  *tensors = 0;
  for (guint j = 0; j < inv->tensors->len; j++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, j);
      if (!model_tensor_is_quant_constant (t))
        continue;
      guint64 c = model_inventory_copies (inv, t, MODEL_INVENTORY_ALL);
      *tensors += c;
      sum += (double) c * (double) model_tensor_numel (t)
             * (t->storage == MODEL_TENSOR_STORAGE_UINT8 ? 1.0 : 4.0);
    }
  return sum;
}

/* QLoRA's constants as bitsandbytes stores them (functional.py quantize_4bit, blocksize
 * 64; compress_statistics: quantize_blockwise(absmax − mean, blocksize=256)), on
 * Llama-2-7B (h 4096, i 11008, L 32): 7 NF4 weights per layer, 224 in all — q, k, v, o of
 * h² = 16,777,216 elements (262,144 blocks of 64), gate, up, down of h·i = 45,088,768
 * (704,512 blocks).
 *   without double quantization: one fp32 absmax per weight, 224 tensors;
 *     per layer 4·(4·262,144 + 3·704,512) = 4·3,162,112 = 12,648,448 B; × 32 = 404,750,336 B
 *     = Λ/16 (Λ = 32·(4h² + 3hi) = 6,476,005,376 NF4 weights; QLoRA §3's 0.5 bit/weight);
 *   with it: a uint8 absmax and an fp32 nested absmax of ⌈blocks/256⌉ per weight (1,024 for
 *     h², 2,752 for h·i), 448 tensors; per layer 3,162,112 + 4·(4·1,024 + 3·2,752) =
 *     3,162,112 + 49,408 = 3,211,520 B; × 32 = 102,768,640 B = Λ·(1/64 + 1/4096), the old
 *     per-weight formula (8/64 + 32/(64·256) bit).
 * The constants are frozen, not parameters (the parameter count is the published one, as
 * without QLoRA), and sit in the layer template beside their weight (`base`). */
static void
test_quant_constants_llama2_7b (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  const double lambda = 6476005376.0;
  for (int dq = 0; dq < 2; dq++)
    {
      ModelFinetune q = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
      q.double_quant = dq;
      g_autoptr (ModelInventory) inv = inventory (a, &q);
      guint64 n = 0;
      double bytes = constant_sum (inv, &n);
      CU_ASSERT_EQUAL (n, dq ? 448 : 224);
      CU_ASSERT_EQUAL (model_inventory_n_quant_constant_tensors (inv, MODEL_INVENTORY_ALL), n);
      CU_ASSERT_EQUAL (model_inventory_n_quant_constant_tensors (inv, MODEL_INVENTORY_LAYER),
                       n / 32);
      CU_ASSERT_EQUAL (model_inventory_n_quant_constant_tensors (inv, MODEL_INVENTORY_ROOT), 0);
      CU_ASSERT_DOUBLE_EQUAL (bytes, dq ? 102768640.0 : 404750336.0, 0);
      CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_ALL),
                              bytes, 0);
      CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (inv, MODEL_INVENTORY_LAYER),
                              bytes / 32, 0);
      /* the fold equals the old per-weight formula: Λ is a multiple of 64·256 per tensor */
      CU_ASSERT_DOUBLE_EQUAL (bytes, lambda * model_finetune_nf4_constant_bytes (&q), 0);
      /* not parameters: the counts are those without QLoRA */
      CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL), model_arch_n_params (a));
      CU_ASSERT_EQUAL (model_inventory_n_params (inv, MODEL_INVENTORY_ALL), 6738415616ULL);
      CU_ASSERT_EQUAL (model_inventory_n_trainable (inv, MODEL_INVENTORY_ALL), 39976960);
      CU_ASSERT_EQUAL (model_inventory_n_active (inv), model_arch_n_params (a));
      for (guint j = 0; j < inv->tensors->len; j++)
        {
          const ModelTensor *t = model_inventory_tensor (inv, j);
          if (!model_tensor_is_quant_constant (t))
            continue;
          CU_ASSERT_FALSE (model_tensor_is_parameter (t));
          CU_ASSERT_FALSE (t->trainable);
          CU_ASSERT_EQUAL (t->ndim, 1);
          CU_ASSERT_FATAL (t->base >= 0 && (guint) t->base < j);
          const ModelTensor *w = model_inventory_tensor (inv, (guint) t->base);
          CU_ASSERT_EQUAL (w->storage, MODEL_TENSOR_STORAGE_NF4);
          CU_ASSERT_EQUAL (t->layer, w->layer);
          CU_ASSERT_EQUAL (t->count, w->count);
          guint64 blocks = model_tensor_numel (w) / 64;
          g_autofree char *absmax = g_strconcat (w->name, ".absmax", NULL);
          g_autofree char *nested = g_strconcat (w->name, ".nested_absmax", NULL);
          if (t->role == MODEL_TENSOR_QUANT_ABSMAX)
            {
              CU_ASSERT_EQUAL (t->shape[0], blocks);
              CU_ASSERT_EQUAL (t->storage, dq ? MODEL_TENSOR_STORAGE_UINT8
                                              : MODEL_TENSOR_STORAGE_FP32);
              CU_ASSERT_STRING_EQUAL (t->name, absmax);
            }
          else
            {
              CU_ASSERT_TRUE (dq);
              CU_ASSERT_EQUAL (t->role, MODEL_TENSOR_QUANT_ABSMAX2);
              CU_ASSERT_EQUAL (t->shape[0], blocks / 256);
              CU_ASSERT_EQUAL (t->storage, MODEL_TENSOR_STORAGE_FP32);
              CU_ASSERT_STRING_EQUAL (t->name, nested);
            }
        }
      /* the q_proj's: 262,144 constants in blocks of 64 of its 4096 × 4096 */
      const ModelTensor *qa = NULL;
      for (guint j = 0; j < inv->tensors->len; j++)
        if (strcmp (model_inventory_tensor (inv, j)->name,
                    "model.layers.{i}.self_attn.q_proj.weight.absmax") == 0)
          qa = model_inventory_tensor (inv, j);
      CU_ASSERT_PTR_NOT_NULL_FATAL (qa);
      CU_ASSERT_EQUAL (qa->shape[0], 262144);
    }
  /* none under plain LoRA */
  ModelFinetune l = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  g_autoptr (ModelInventory) plain = inventory (a, &l);
  CU_ASSERT_EQUAL (model_inventory_n_quant_constant_tensors (plain, MODEL_INVENTORY_ALL), 0);
}

/* Sizes that are no multiple of 64 or 64·256: bitsandbytes rounds the blocks up
 * (backends/cuda/ops.py quantize_4bit: blocks = −(n // −64); the nested state likewise
 * per 256), where the old per-weight rate is a continuous approximation. Tiny llama (h 256,
 * 8 heads × 32, 2 KV heads, i 688, L 4) with hidden_size set to 255 (the projections keep
 * q = 256 outputs): per layer q 256×255 = 65,280 (1,020 blocks), k, v 64×255 = 16,320
 * (255 blocks), o 255×256 = 65,280 (1,020), gate, up 688×255 = 175,440 (⌈2741.25⌉ = 2,742),
 * down 255×688 = 175,440 (2,742). Blocks per layer 2·1,020 + 2·255 + 3·2,742 = 10,776;
 * without double quantization 4 · 10,776 = 43,104 B per layer. Nested: ⌈1020/256⌉ = 4,
 * ⌈255/256⌉ = 1, ⌈2742/256⌉ = 11: 2·4 + 2·1 + 3·11 = 43 fp32; with double quantization
 * 10,776 + 4·43 = 10,948 B per layer. */
static void
test_quant_constants_round_up (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  a->hidden_size = 255;
  ModelFinetune q = ft (MODEL_FINETUNE_QLORA, 8, MODEL_LORA_ALL_LINEAR);
  q.double_quant = FALSE;
  g_autoptr (ModelInventory) single = inventory (a, &q);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (single, MODEL_INVENTORY_LAYER),
                          43104, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (single, MODEL_INVENTORY_ALL),
                          4 * 43104, 0);
  q.double_quant = TRUE;
  g_autoptr (ModelInventory) dq = inventory (a, &q);
  CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (dq, MODEL_INVENTORY_LAYER),
                          10948, 0);
  CU_ASSERT_EQUAL (model_inventory_n_quant_constant_tensors (dq, MODEL_INVENTORY_LAYER), 14);
  /* above the continuous rate: n_nf4 · (1/64 + 1/4096) per layer = 689,520 · 0.015869… */
  double rate = (double) model_inventory_n_nf4 (dq, MODEL_INVENTORY_LAYER)
                * model_finetune_nf4_constant_bytes (&q);
  CU_ASSERT (model_inventory_nf4_constant_bytes (dq, MODEL_INVENTORY_LAYER) > rate);
}

/* For every shipped config under QLoRA, with and without double quantization: the
 * constant bytes are the fold over the constant tensors, the parameter counts and the
 * weight bytes are those of LoRA with the same targets (the constants are no parameters
 * and no weights), and the stack's quantization category is the fold. */
static void
test_quant_constants_not_parameters (void)
{
  const char *names[] = { "llama-2-7b", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b", "gpt2",
                          "mpt-7b", "bert-large-uncased", "mistral-7b-v0.1", "llama-3.2-1b" };
  for (gsize n = 0; n < G_N_ELEMENTS (names); n++)
    for (int dq = 0; dq < 2; dq++)
      {
        g_autoptr (ModelArch) a = shipped (names[n]);
        ModelFinetune q = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
        q.double_quant = dq;
        ModelFinetune l = q;
        l.method = MODEL_FINETUNE_LORA;
        g_autoptr (ModelInventory) iq = inventory (a, &q);
        g_autoptr (ModelInventory) il = inventory (a, &l);
        guint64 tensors = 0;
        double sum = constant_sum (iq, &tensors);
        CU_ASSERT (tensors > 0);
        CU_ASSERT_DOUBLE_EQUAL (model_inventory_nf4_constant_bytes (iq, MODEL_INVENTORY_ALL), sum, 0);
        CU_ASSERT_EQUAL (model_inventory_n_params (iq, MODEL_INVENTORY_ALL),
                         model_inventory_n_params (il, MODEL_INVENTORY_ALL));
        CU_ASSERT_EQUAL (model_inventory_n_trainable (iq, MODEL_INVENTORY_ALL),
                         model_inventory_n_trainable (il, MODEL_INVENTORY_ALL));
        CU_ASSERT_EQUAL (model_inventory_n_active (iq), model_inventory_n_active (il));
        CU_ASSERT_EQUAL (model_inventory_largest (iq, MODEL_INVENTORY_ALL, FALSE),
                         model_inventory_largest (il, MODEL_INVENTORY_ALL, FALSE));
        /* weights: the same elements, NF4 at 0.5 B instead of 2 */
        double nf4 = (double) model_inventory_n_nf4 (iq, MODEL_INVENTORY_ALL);
        CU_ASSERT_DOUBLE_EQUAL (model_inventory_weight_bytes (iq, MODEL_INVENTORY_ALL, 2, TRUE),
                                model_inventory_weight_bytes (il, MODEL_INVENTORY_ALL, 2, TRUE)
                                  - 1.5 * nf4, 0);
        ModelStack st;
        model_stack_init_defaults (&st);
        st.finetune = q;
        CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&st, a, MODEL_MEM_QUANTIZATION), sum, 0);
      }
}

int main (void);

/* ---- the per-thread memo (inventory.c) ------------------------------------------------- */

typedef struct
{
  const ModelArch *arch;
  const ModelFinetune *ft;
  guint n_mtp;
  ModelInventory *inv;
} FreshBuild;

/* A thread's first inventory is built, never taken from a memo. */
static gpointer
fresh_build (gpointer p)
{
  FreshBuild *f = p;
  f->inv = model_inventory_new_mtp (f->arch, f->ft, f->n_mtp, NULL);
  return NULL;
}

static ModelInventory *
fresh (const ModelArch *arch, const ModelFinetune *ft, guint n_mtp)
{
  FreshBuild f = { arch, ft, n_mtp, NULL };
  g_thread_join (g_thread_new ("fresh", fresh_build, &f));
  return f.inv;
}

static void
assert_same_inventory (const ModelInventory *a, const ModelInventory *b)
{
  CU_ASSERT_EQUAL_FATAL (a->tensors->len, b->tensors->len);
  CU_ASSERT_EQUAL (a->n_mtp, b->n_mtp);
  CU_ASSERT_EQUAL (a->finetune.method, b->finetune.method);
  CU_ASSERT_EQUAL (a->finetune.rank, b->finetune.rank);
  for (guint i = 0; i < a->tensors->len; i++)
    {
      ModelTensor x = *model_inventory_tensor (a, i), y = *model_inventory_tensor (b, i);
      CU_ASSERT_STRING_EQUAL (x.name, y.name);
      x.name = y.name = NULL;
      CU_ASSERT (memcmp (&x, &y, sizeof x) == 0);
    }
}

/* The same inputs give one of the thread's last two inventories again (one more
 * reference, freed apart); any other architecture field, name, fine-tuning setting or MTP depth gives a
 * new one; each is the inventory a fresh thread builds, tensor by tensor. */
static void
test_memo_same_inputs_only (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-3.1-8b");
  g_autoptr (ModelArch) wider = model_arch_copy (a);
  wider->intermediate_size += 256;
  g_autoptr (ModelArch) renamed = model_arch_copy (a);
  g_free (renamed->name);
  renamed->name = g_strdup ("other");
  ModelFinetune lora = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  ModelFinetune lora8 = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_ALL_LINEAR);
  ModelInventory *one = model_inventory_new (a, NULL, NULL);
  ModelInventory *two = model_inventory_new (a, NULL, NULL);
  CU_ASSERT_PTR_EQUAL (one, two);
  model_inventory_free (one);
  const struct
  {
    const ModelArch *arch;
    const ModelFinetune *ft;
    guint n_mtp;
  } inputs[] = { /* each differs from the one before in one input */
                 { wider, NULL, 0 }, { a, NULL, 0 },  { a, NULL, 1 },     { renamed, NULL, 1 },
                 { a, NULL, 1 },     { a, &lora, 1 }, { a, &lora8, 1 },   { a, NULL, 0 } };
  ModelInventory *prev = two;
  for (guint k = 0; k < G_N_ELEMENTS (inputs); k++)
    {
      ModelInventory *inv = model_inventory_new_mtp (inputs[k].arch, inputs[k].ft,
                                                     inputs[k].n_mtp, NULL);
      CU_ASSERT_PTR_NOT_EQUAL (inv, prev);
      ModelInventory *ref = fresh (inputs[k].arch, inputs[k].ft, inputs[k].n_mtp);
      assert_same_inventory (inv, ref);
      model_inventory_free (ref);
      model_inventory_free (prev);
      prev = inv;
    }
  CU_ASSERT_EQUAL (model_inventory_n_params (prev, MODEL_INVENTORY_ALL), 8030261248u);
  model_inventory_free (prev);
  /* two kept: the architecture's and the stack's inventories alternate without a build */
  ModelInventory *x = model_inventory_new (a, NULL, NULL), *y = model_inventory_new (a, &lora, NULL);
  ModelInventory *x2 = model_inventory_new (a, NULL, NULL), *y2 = model_inventory_new (a, &lora, NULL);
  CU_ASSERT_PTR_EQUAL (x, x2);
  CU_ASSERT_PTR_EQUAL (y, y2);
  CU_ASSERT_PTR_NOT_EQUAL (x, y);
  model_inventory_free (x);
  model_inventory_free (y);
  model_inventory_free (x2);
  model_inventory_free (y2);
}

int
main (void)
{

  static const StepsimTest tests[] = {
    { "Llama-3.1-8B per-role counts (GQA)", test_llama_roles },
    { "GPT-2 per-role counts (fused c_attn, tied)", test_gpt2_roles },
    { "Mixtral experts, router, active", test_mixtral_experts },
    { "LoRA trainable counts: qv, attention, all_linear", test_lora_trainable },
    { "QLoRA NF4 and constant bytes", test_nf4_bytes },
    { "every fold is the sum over the tensors", test_folds_are_sums },
    { "8-bit Adam small-tensor rule per tensor", test_8bit_small_tensors },
    { "bert token types, pooler, classifier", test_bert_roles },
    { "qwen2 q/k/v biases, mpt no_bias", test_qwen2_bias_mpt_no_bias },
    { "QLoRA constants of Llama-2-7B, with and without double quant", test_quant_constants_llama2_7b },
    { "QLoRA constants round blocks up", test_quant_constants_round_up },
    { "QLoRA constants are no parameters", test_quant_constants_not_parameters },
    { "memo: the same inputs only, as built", test_memo_same_inputs_only },
  };
  return STEPSIM_RUN_TESTS ("models/inventory", tests);
}
