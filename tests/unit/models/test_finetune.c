/* tests/unit/models/test_finetune.c — LoRA / QLoRA parameter accounting, stored bytes and
 * the frozen backward (models/arch/finetune.h, models/stack/stack.h, models/ops/cost.h).
 *
 * Oracles: trainable-parameter counts PEFT prints for Llama-2-7B (print_trainable_parameters,
 * the counts every PEFT tutorial shows); the LoRA paper's Table 4 GPT-3 175B counts; the
 * QLoRA paper's 0.127 bit per weight of double-quantized constants; hand-derived byte and
 * FLOP sums, derivations in the comments. */
#include "config.h"
#include "models/ops/cost.h"
#include "models/stack/stack.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"
#include "tests/unit/models/cost_fixture.h"

#include <string.h>

/* PEFT on Llama-2-7B: r = 16 on q, k, v, o, gate, up, down: 32 layers × 16 × (4·(4096 +
 * 4096) + 3·(4096 + 11008)) = 32 × 16 × 78,080 = 39,976,960 ("trainable params: 39,976,960
 * || all params: 6,778,392,576 || trainable%: 0.5898"); r = 8 on q and v (PEFT's default
 * targets for llama): 32 × 8 × 2 × 8192 = 4,194,304. */
static void
test_peft_llama2_counts (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelFinetune all = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  ModelFinetune qv = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_QV);
  CU_ASSERT_EQUAL (a->n_layers * model_finetune_layer_adapter_params (a, &all), 39976960);
  CU_ASSERT_EQUAL (a->n_layers * model_finetune_layer_adapter_params (a, &qv), 4194304);
  CU_ASSERT_EQUAL (model_arch_n_params (a) + 39976960, 6778392576ULL);
  ModelFinetune none = ft (MODEL_FINETUNE_NONE, 16, MODEL_LORA_ALL_LINEAR);
  CU_ASSERT_EQUAL (model_finetune_layer_adapter_params (a, &none), 0);
}

/* Mixtral-8x7B, r 16 on all linear layers (PEFT's all-linear takes the router, an
 * nn.Linear, too): per layer q 4096+4096, k and v 4096+1024, o 4096+4096 = 26,624; router
 * 4096+8 = 4,104; 8 experts × (w1, w3: 4096+14336; w2: 14336+4096) = 442,368; 473,096 × 16
 * × 32 layers = 242,225,152. The largest smaller side among the targets is 4096 (q, o, the
 * experts); with q and v only too (q: 4096 × 4096). */
static void
test_mixtral_counts (void)
{
  g_autoptr (ModelArch) a = shipped ("mixtral-8x7b");
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  CU_ASSERT_EQUAL (a->n_layers * model_finetune_layer_adapter_params (a, &f), 242225152);
  CU_ASSERT_EQUAL (model_finetune_max_rank (a, &f), 4096);
  ModelFinetune qv = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_QV);
  CU_ASSERT_EQUAL (model_finetune_max_rank (a, &qv), 4096);
}

/* A targets list (PEFT's target_modules): torchtune's Llama 3.2 3B LoRA recipe
 * (3B_lora_single_device.yaml: lora_attn_modules q_proj, v_proj, output_proj;
 * apply_lora_to_mlp) at r 64, h 3072, 24 q and 8 kv heads of 128, i 8192: per layer q
 * 3072+3072, v 3072+1024, o 3072+3072, gate and up 3072+8192, down 8192+3072 = 50,176,
 * × 64 × 28 layers = 89,915,392 (all_linear's 97,255,424 less k's 28 × 64 × (3072+1024)).
 * The presets as lists: "q_proj, v_proj" is qv and q,k,v,o,gate,up,down all_linear on a
 * dense Llama (PEFT 4,194,304 and 39,976,960 on Llama-2-7B, above); on Mixtral the list
 * without router is all_linear less the router's 32 × 16 × (4096+8). The text is
 * canonical whatever the order; bad lists are refused and leave the settings alone. */
static void
test_targets_list (void)
{
  g_autoptr (ModelArch) l3 = shipped ("llama-3.2-3b");
  g_autoptr (ModelArch) l2 = shipped ("llama-2-7b");
  g_autoptr (ModelArch) mx = shipped ("mixtral-8x7b");
  ModelFinetune f = ft (MODEL_FINETUNE_LORA, 64, MODEL_LORA_ALL_LINEAR);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("down_proj, q, v,o , gate,up", &f, &e));
  CU_ASSERT_EQUAL (f.targets, MODEL_LORA_MODULES);
  CU_ASSERT_EQUAL (l3->n_layers * model_finetune_layer_adapter_params (l3, &f), 89915392);
  g_autofree char *text = model_finetune_targets_text (&f);
  CU_ASSERT_STRING_EQUAL (text, "q,v,o,gate,up,down");
  f.rank = 8;
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("q_proj, v_proj", &f, &e));
  CU_ASSERT_EQUAL (l2->n_layers * model_finetune_layer_adapter_params (l2, &f), 4194304);
  f.rank = 16;
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("q,k,v,o,gate,up,down", &f, &e));
  CU_ASSERT_EQUAL (l2->n_layers * model_finetune_layer_adapter_params (l2, &f), 39976960);
  CU_ASSERT_EQUAL (mx->n_layers * model_finetune_layer_adapter_params (mx, &f),
                   242225152 - 32 * 16 * (4096 + 8));
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("router", &f, &e));
  CU_ASSERT_EQUAL (model_finetune_layer_adapter_params (l2, &f), 0);
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("qv", &f, &e));
  CU_ASSERT_EQUAL (f.targets, MODEL_LORA_QV);
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("q_proj, v_proj, output_proj", &f, &e));
  CU_ASSERT_EQUAL (f.modules, MODEL_LORA_MODULE_Q | MODEL_LORA_MODULE_V | MODEL_LORA_MODULE_O);
  CU_ASSERT_TRUE (model_finetune_targets_from_string ("qv", &f, &e));
  const char *bad[] = { "q,,v", "q, q_proj", "q, query", "qq", "q," };
  const char *why[] = { "empty item", "names the q projection twice", "query", "qq",
                        "empty item" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_clear_error (&e);
      CU_ASSERT_FALSE (model_finetune_targets_from_string (bad[i], &f, &e));
      CU_ASSERT_TRUE (e != NULL && strstr (e->message, why[i]) != NULL);
      CU_ASSERT_EQUAL (f.targets, MODEL_LORA_QV);
    }
}

/* LoRA paper (Hu et al. 2021) Table 4: GPT-3 175B with adapters on W_q and W_v, 4.7M
 * trainable parameters at r = 1 and 37.7M at r = 8: 96 layers × r × 2 × (12288 + 12288) =
 * 4,718,592·r. GPT-2-style models fuse q, k, v (c_attn, h → 3h): the adapter on the fused
 * projection has r·(h + 3h), the same 4hr. */
static void
test_lora_paper_gpt3_counts (void)
{
  ModelArch a = gpt3_175b ();
  ModelFinetune r1 = ft (MODEL_FINETUNE_LORA, 1, MODEL_LORA_QV);
  ModelFinetune r8 = ft (MODEL_FINETUNE_LORA, 8, MODEL_LORA_QV);
  CU_ASSERT_EQUAL (a.n_layers * model_finetune_layer_adapter_params (&a, &r1), 4718592);
  CU_ASSERT_EQUAL (a.n_layers * model_finetune_layer_adapter_params (&a, &r8), 37748736);
}

/* The linear weights QLoRA quantizes are a layer's matrices: Σ in·out over the projections
 * equals the elements of the layer's 2-D parameter tensors (models/arch/arch.h's own list), for
 * every shipped family (dense, GQA, fused QKV, MoE with its router). */
static void
test_linear_params_are_the_matrices (void)
{
  const char *names[] = { "llama-2-7b", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b", "gpt2",
                          "mpt-7b", "bert-large-uncased" };
  for (gsize k = 0; k < G_N_ELEMENTS (names); k++)
    {
      g_autoptr (ModelArch) a = shipped (names[k]);
      g_autoptr (ModelInventory) inv = model_inventory_new (a, NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
      guint64 matrices = 0;
      for (guint i = 0; i < inv->tensors->len; i++)
        {
          const ModelTensor *x = model_inventory_tensor (inv, i);
          if (x->ndim == 2)
            matrices += model_tensor_numel (x) * model_inventory_copies (inv, x, MODEL_INVENTORY_LAYER);
        }
      CU_ASSERT_EQUAL (model_finetune_layer_linear_params (a), matrices);
    }
}

/* QLoRA §3: fp32 absmax per 64 weights = 32/64 = 0.5 bit; double quantization 8/64 +
 * 32/(64·256) = 0.126953125 bit ("0.127 bits per parameter"). Bytes: /8. */
static void
test_nf4_constants (void)
{
  ModelFinetune f = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
  CU_ASSERT_DOUBLE_EQUAL (model_finetune_nf4_constant_bytes (&f), 0.126953125 / 8, 0);
  f.double_quant = FALSE;
  CU_ASSERT_DOUBLE_EQUAL (model_finetune_nf4_constant_bytes (&f), 0.0625, 0);
}

/* Stored bytes, Llama-2-7B, bf16 mixed AdamW, gradients kept (zero_grad_to_none FALSE),
 * Ψ = 6,738,415,616, A = 39,976,960 adapters (r 16, all linear):
 *   LoRA   weights 2Ψ (the frozen base in bf16, no master), lora 2A (the adapters),
 *          master 4A, gradients 2A, AdamW states 8A;
 *   QLoRA  weights 0.5·Λ + 2·(Ψ − Λ) with Λ = 32 × 202,375,168 linear weights, lora 2A,
 *          quantization Λ·0.126953125/8 (constants). */
static void
test_stored_bytes (void)
{
  g_autoptr (ModelArch) a = shipped ("llama-2-7b");
  ModelStack s;
  model_stack_init_defaults (&s);
  s.zero_grad_to_none = FALSE;
  s.finetune = ft (MODEL_FINETUNE_LORA, 16, MODEL_LORA_ALL_LINEAR);
  const double psi = 6738415616.0, A = 39976960.0;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_params (&s, a), A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_WEIGHTS), 2 * psi, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_LORA), 2 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_MASTER_WEIGHTS), 4 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_GRADIENTS), 2 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_OPTIMIZER_STATE), 8 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_root_params (&s, a), 0, 0);
  double lin = 32.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
  CU_ASSERT_DOUBLE_EQUAL (32.0 * (double) model_finetune_layer_linear_params (a), lin, 0);
  s.finetune.method = MODEL_FINETUNE_QLORA;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_WEIGHTS),
                          0.5 * lin + 2 * (psi - lin), 1e-3);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_LORA), 2 * A, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_QUANTIZATION),
                          lin * 0.126953125 / 8, 1e-3);
  /* the tensors the allocator sees sum to the same bytes */
  g_autoptr (GArray) w = model_stack_weight_tensor_bytes (&s, a);
  double sum = 0;
  for (guint i = 0; i < w->len; i++)
    sum += g_array_index (w, double, i);
  CU_ASSERT_DOUBLE_EQUAL (sum, model_stack_weights_total (&s, a) - 2 * A, 1e-3);
  /* full fine-tuning is unchanged: 2Ψ of weights, every parameter trains, no lora */
  s.finetune.method = MODEL_FINETUNE_NONE;
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_WEIGHTS), 2 * psi, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_initial_bytes (&s, a, MODEL_MEM_LORA), 0, 0);
  CU_ASSERT_DOUBLE_EQUAL (model_stack_trainable_params (&s, a), psi, 0);
}

/* The frozen backward, tiny llama (h 4, 2 heads, 1 kv head, d 2, i 8), b 1, s 3 (T = 3),
 * flash, r 1 on all linear projections (q 4→4, k 4→2, v 4→2, o 4→4, gate and up 4→8,
 * down 8→4):
 *   base GEMMs   qkv 192 + o 96 + gate_up 384 + down 192 = 864 FLOP forward; frozen: 864 in
 *                backward (input gradients only) instead of 1728;
 *   attention    flash 144 forward, 360 in backward (2.5×), 288 of it model FLOPs;
 *   adapters     A: 2·T·r·Σin = 2·3·1·(4+4+4+4+4+4+8) = 192, B: 2·T·r·Σout =
 *                2·3·1·(4+2+2+4+8+8+4) = 192; trainable: 768 in backward.
 * Forward 864 + 144 + 384 = 1392; backward 864 + 360 + 768 = 1992, model 1920. */
static void
test_frozen_backward_flops (void)
{
  ModelArch a = tiny_llama ();
  ModelCostParams p = params (1, 3, TRUE, 0);
  p.finetune = ft (MODEL_FINETUNE_LORA, 1, MODEL_LORA_ALL_LINEAR);
  ModelBlockCost c = model_cost_layer (&a, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.flops, 1392, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.flops, 1992, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.model_flops, 1920, 1e-9);
  /* without LoRA the same layer is 1008 forward, 2016 + 216 backward (model 2016) */
  p.finetune.method = MODEL_FINETUNE_NONE;
  ModelBlockCost f = model_cost_layer (&a, &p);
  CU_ASSERT_DOUBLE_EQUAL (f.fwd.flops, 1008, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (f.bwd.model_flops, 2016, 1e-9);
  /* a frozen embedding has no backward at all */
  p.finetune.method = MODEL_FINETUNE_LORA;
  CU_ASSERT_EQUAL (model_cost_embedding (&a, &p).bwd.n_ops, 0);
}

/* Adapter outputs A·x are saved for B's weight gradient: e·T·r per targeted projection;
 * QLoRA adds its dequantization (read 0.5 + constants, write 2 B per linear weight) to the
 * forward and, once, to the backward, and the largest dequantized projection to both
 * passes' workspace. Tiny llama above, e = 2, T = 3, r = 1: 7 projections → 42 B saved. */
static void
test_adapter_activations_and_dequant (void)
{
  ModelArch a = tiny_llama ();
  ModelCostParams p = params (1, 3, TRUE, 0);
  double base = model_cost_layer (&a, &p).act_saved;
  p.finetune = ft (MODEL_FINETUNE_LORA, 1, MODEL_LORA_ALL_LINEAR);
  ModelBlockCost l = model_cost_layer (&a, &p);
  CU_ASSERT_DOUBLE_EQUAL (l.act_saved - base, 42, 1e-9);
  p.finetune.method = MODEL_FINETUNE_QLORA;
  ModelBlockCost q = model_cost_layer (&a, &p);
  double lin = 4 * 4 + 2 * 4 * 2 + 4 * 4 + 3 * 4 * 8; /* 144 linear weights */
  double deq = lin * (0.5 + 0.126953125 / 8 + 2);
  CU_ASSERT_DOUBLE_EQUAL (q.fwd.bytes - l.fwd.bytes, deq, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (q.bwd.bytes - l.bwd.bytes, deq, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (q.fwd.workspace - l.fwd.workspace, 2 * 32, 1e-9);
}

/* What the model covers: QLoRA computes in 16 bit (not fp32); neither takes fp8 or parameter
 * offload. */
static void
test_validate (void)
{
  ModelStack s;
  model_stack_init_defaults (&s);
  CU_ASSERT_TRUE (model_stack_validate_finetune (&s, NULL));
  s.finetune = ft (MODEL_FINETUNE_QLORA, 16, MODEL_LORA_ALL_LINEAR);
  CU_ASSERT_TRUE (model_stack_validate_finetune (&s, NULL));
  s.precision = MODEL_PRECISION_FP32;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (model_stack_validate_finetune (&s, &e));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "16 bit") : NULL);
  /* the QLoRA recipe's autocast on an fp32 model (HF Trainer bf16=True) is 16-bit compute;
   * its NF4 weights keep no 16-bit copy for the backward, LoRA's frozen fp32 base does (the
   * cast that autograd saves for the input gradient) */
  s.precision = MODEL_PRECISION_BF16_AMP;
  CU_ASSERT_TRUE (model_stack_validate_finetune (&s, NULL));
  CU_ASSERT_EQUAL (model_stack_cost_params (&s).weight_cache_bytes, 0);
  s.finetune.method = MODEL_FINETUNE_LORA;
  CU_ASSERT_EQUAL (model_stack_cost_params (&s).weight_cache_bytes, 2);
  s.precision = MODEL_PRECISION_FP32;
  CU_ASSERT_TRUE (model_stack_validate_finetune (&s, NULL));
  s.precision = MODEL_PRECISION_FP8_MIXED;
  CU_ASSERT_FALSE (model_stack_validate_finetune (&s, NULL));
  s.precision = MODEL_PRECISION_BF16_MIXED;
  s.offload.parameters = MODEL_OFFLOAD_CPU;
  CU_ASSERT_FALSE (model_stack_validate_finetune (&s, NULL));
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "PEFT's Llama-2-7B trainable counts", test_peft_llama2_counts },
    { "LoRA paper GPT-3 175B counts (Table 4)", test_lora_paper_gpt3_counts },
    { "Mixtral: router included, rank bound", test_mixtral_counts },
    { "targets as a list of projections (PEFT target_modules)", test_targets_list },
    { "QLoRA quantizes exactly the layer matrices", test_linear_params_are_the_matrices },
    { "NF4 constants 0.5 and 0.127 bit", test_nf4_constants },
    { "stored bytes: frozen base, adapter states", test_stored_bytes },
    { "frozen backward: input gradients only", test_frozen_backward_flops },
    { "adapter activations and NF4 dequantization", test_adapter_activations_and_dequant },
    { "combinations modelled", test_validate },
  };
  return STEPSIM_RUN_TESTS ("models/finetune", tests);
}
