/* models/arch/finetune.h — parameter-efficient fine-tuning: LoRA and QLoRA.
 *
 * LoRA (Hu et al. 2021, arXiv 2106.09685, §4.1): every targeted linear projection
 * W (out × in) is frozen and learns a low-rank update B·A, A r × in and B out × r, so the
 * trainable parameters of one projection are r·(in + out); y = W·x + (α/r)·B·(A·x). Only
 * the adapters have gradients, master weights and optimizer states; the frozen weights stay
 * in the compute dtype, and the backward of a frozen projection computes the input gradient
 * only (no weight-gradient GEMM).
 *
 * QLoRA (Dettmers et al. 2023, arXiv 2305.14314, §3): the frozen weights of every linear
 * layer of the transformer blocks are stored as 4-bit NormalFloat, 0.5 B per weight, with one
 * absmax constant per block of 64 weights: fp32 (32/64 = 0.5 bit per weight) or, with
 * double quantization, 8-bit constants plus one fp32 second-level constant per 256 blocks
 * (8/64 + 32/(64·256) = 0.127 bit per weight). Embeddings, norms, biases and the head stay
 * in the 16-bit compute dtype (bitsandbytes replaces nn.Linear modules only; the LM head is
 * left out). Each forward and backward use of a quantized weight first dequantizes it to a
 * 16-bit buffer (bitsandbytes MatMul4Bit: dequantize_4bit in forward and backward; only
 * the NF4 codes are saved for the backward). The non-quantized parameters take the weight
 * dtype of the precision: 16 bit, or fp32 under bf16_amp/fp16_amp, which is what PEFT's
 * prepare_model_for_kbit_training (cast to fp32) with the HF Trainer's autocast gives.
 *
 * Saved activations are those of full fine-tuning (each projection's input counted as kept:
 * an adapter's A needs its targeted input anyway; for a frozen projection without adapter
 * this is an upper bound) plus each adapter's output A·x, which B's weight gradient needs.
 * lora_dropout is taken as PEFT's default, 0 (an identity: no mask, no copy of x).
 * QLoRA under autocast (the fp32 stream of prepare_model_for_kbit_training) keeps the MLP's
 * projection outputs and activations in fp32, since bitsandbytes' Linear4bit returns its
 * input's dtype (models/ops/graph_layer.c mlp_inner).
 *
 * Targets (PEFT's target_modules): all_linear (PEFT's "all-linear": every nn.Linear of the
 * layers — q, k, v, o, every MLP projection, experts' and the MoE router included; the LM
 * head is not a layer's. QLoRA §4 finds all layers needed to match full fine-tuning), attention (q, k, v, o) or qv (q and v: the LoRA paper's GPT-3 setting and
 * PEFT's default for llama). Where q, k, v are one fused projection (GPT-2 c_attn, MPT
 * Wqkv) the adapter sits on the fused one for attention and qv.
 */
#pragma once

#include <glib.h>
#include "models/arch/arch.h"

typedef enum
{
  MODEL_FINETUNE_NONE,  /* full fine-tuning: every parameter trains */
  MODEL_FINETUNE_LORA,  /* frozen 16-bit (or fp32) base + low-rank adapters */
  MODEL_FINETUNE_QLORA, /* frozen NF4 base + low-rank adapters */
} ModelFinetuneMethod;

typedef enum
{
  MODEL_LORA_ALL_LINEAR,
  MODEL_LORA_ATTENTION,
  MODEL_LORA_QV,
  MODEL_LORA_MODULES, /* the projections ModelFinetune.modules names (PEFT target_modules) */
} ModelLoraTargets;

/* The projections a targets list names (ModelFinetune.modules, a mask of these): PEFT's
 * target_modules by the HF Llama module names, torchtune's lora_attn_modules and
 * apply_lora_to_mlp. q, k and v also name a fused qkv projection (gpt2 c_attn, mpt Wqkv)
 * and MLA's down/up projections (q: q_a, q_b; k and v: kv_a, kv_b); gate, up and down a
 * shared expert's too. */
typedef enum
{
  MODEL_LORA_MODULE_Q = 1u << 0,
  MODEL_LORA_MODULE_K = 1u << 1,
  MODEL_LORA_MODULE_V = 1u << 2,
  MODEL_LORA_MODULE_O = 1u << 3,
  MODEL_LORA_MODULE_GATE = 1u << 4,
  MODEL_LORA_MODULE_UP = 1u << 5,
  MODEL_LORA_MODULE_DOWN = 1u << 6,
  MODEL_LORA_MODULE_ROUTER = 1u << 7,
} ModelLoraModule;

typedef struct
{
  ModelFinetuneMethod method;
  guint64 rank;             /* r >= 1 */
  ModelLoraTargets targets;
  guint modules;            /* MODEL_LORA_MODULES: a non-empty mask of ModelLoraModule */
  gboolean double_quant;    /* QLoRA: quantize the absmax constants too */
  gboolean dequantize;      /* an MXFP4 checkpoint's frozen experts (gpt_oss) upcast to the
                               weight dtype at load (transformers Mxfp4Config(dequantize=True))
                               instead of kept MXFP4 (inventory.h); default FALSE */
} ModelFinetune;

/* Defaults: method none, rank 8 (PEFT LoraConfig's r), all_linear, double quantization on
 * (QLoRA's setting), MXFP4 experts kept (dequantize off). */
void model_finetune_init_defaults (ModelFinetune *f);

/* Name tables: "none", "lora", "qlora". Parsing errors are G_KEY_FILE_ERROR_INVALID_VALUE
 * listing the accepted names. */
const char *model_finetune_method_name (ModelFinetuneMethod m);
gboolean model_finetune_method_from_string (const char *s, ModelFinetuneMethod *out,
                                            GError **error);
/* LoRA targets from text: a preset, "all_linear", "attention" or "qv", or a comma-separated
 * list of projections, each "q", "k", "v", "o", "gate", "up", "down" or "router" (or its HF
 * Llama module name: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, or
 * torchtune's output_proj; blanks around a name ignored), setting f->targets and, for a
 * list, f->modules. Errors (G_KEY_FILE_ERROR_INVALID_VALUE): an unknown name (the message
 * lists the accepted ones), an empty item, a projection named twice (by either name);
 * `f` is unchanged then. */
gboolean model_finetune_targets_from_string (const char *s, ModelFinetune *f, GError **error);
/* f's targets as text, the preset's name or the list in canonical order ("q,v,o,gate,up,
 * down"); newly allocated. */
char *model_finetune_targets_text (const ModelFinetune *f);

/* TRUE for LoRA and QLoRA. */
gboolean model_finetune_active (const ModelFinetune *f);

/* One linear projection of a transformer layer as the HF implementation has it: in and out
 * features, how many per layer (experts), the tokens it sees per token of the batch (1, or
 * top-k for expert MLPs), whether the adapter targets it. */
typedef struct
{
  guint64 in, out, count;
  double tokens_per_token;
  gboolean targeted;
  gboolean attention; /* q, k, v (or fused qkv) and o; else MLP or router */
  gboolean reads_inner; /* o or MLP down: its input is the block's inner features (heads, MLP
                         * inner; Megatron's RowParallelLinear), its output the residual's */
  gboolean kv;          /* k or v: its output is at the KV heads */
} ModelLinear;

/* The linear projections of one layer (q, k, v separate or fused, o; router; MLP per
 * expert), with `targeted` set for `f` (all FALSE when f is not active): a view of the
 * tensor inventory (models/arch/inventory.h, model_inventory_layer_linears()), which also
 * decides what LoRA targets. These folds are in models/arch/finetune_counts.c. New
 * GArray of ModelLinear. */
GArray *model_finetune_layer_linears (const ModelArch *arch, const ModelFinetune *f);

/* Elements of the nn.Linear weight matrices of one layer (Σ in·out·count): what QLoRA
 * stores in NF4. */
guint64 model_finetune_layer_linear_params (const ModelArch *arch);

/* Adapter parameters of one layer: Σ over targeted projections r·(in + out)·count; 0 when
 * f is not active. */
guint64 model_finetune_layer_adapter_params (const ModelArch *arch, const ModelFinetune *f);

/* The largest smaller side, max over the targeted projections of min(in, out): at or above
 * it no adapter is low-rank any more (B·A could be any matrix of every projection). A rank
 * above a small projection's side (the MoE router's 8 outputs) is normal and allowed by
 * PEFT. 0 when f is not active. */
guint64 model_finetune_max_rank (const ModelArch *arch, const ModelFinetune *f);

/* QLoRA storage per quantized weight, B: the NF4 code, 0.5, and the absmax constants,
 * 0.5/8 without double quantization, 0.127/8 with it (QLoRA §3): the continuous rate, what
 * the dequantization kernel reads per weight (models/ops/graph_layer.c). The constants'
 * memory is the inventory's fold over its quantization-constant tensors
 * (inventory.h model_inventory_nf4_constant_bytes(): bitsandbytes' ⌈n/64⌉ and ⌈·/256⌉
 * blocks per tensor), which equals n × this rate when n is a multiple of 64 · 256. */
#define MODEL_NF4_BYTES 0.5
double model_finetune_nf4_constant_bytes (const ModelFinetune *f);
