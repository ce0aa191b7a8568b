/* tests/unit/models/test_cost.c — per-block FLOPs, bytes, workspace and activations.
 *
 * Oracles: hand-derived GEMM sizes for a tiny shape; Korthikanti et al. 2022 (arXiv
 * 2205.05198) Table 2 activations sbh(34 + 5as/h) and its §6 model-FLOPs formula; the
 * measured MFU of Korthikanti Table 5 (GPT 22B).
 */
#include "config.h"
#include "models/ops/cost.h"
#include "tests/testlib.h"

#include <math.h>
#include <string.h>

#include "tests/unit/models/cost_fixture.h"
#include "tests/unit/models/shipped.h"

static const ModelOp *
find_op (const ModelPass *pass, const char *name)
{
  for (guint j = 0; j < pass->n_ops; j++)
    if (strcmp (pass->ops[j].name, name) == 0)
      return &pass->ops[j];
  g_printerr ("\n  op '%s' not found\n", name);
  return NULL;
}

static double
op_flops (const ModelPass *pass, const char *name)
{
  const ModelOp *op = find_op (pass, name);
  return op != NULL ? op->flops : NAN;
}

/* Tiny llama, b = 1, s = 3 (T = 3), flash; separate projections as HF LlamaAttention and
 * LlamaMLP run them (graph_layer.c). GEMM FLOPs = 2·m·n·p:
 *   q_proj   2·T·h·(a·d)         = 2·3·4·4        = 96
 *   k_proj   2·T·h·(k·d)         = 2·3·4·2        = 48 (v_proj the same)
 *   attn_out 2·T·(a·d)·h         = 2·3·4·4        = 96
 *   gate     2·T·h·i             = 2·3·4·8        = 192 (up the same)
 *   down     2·T·i·h             = 2·3·8·4        = 192
 *   flash    4·b·s²·a·d          = 4·1·9·4        = 144;  forward total 1008. */
static void
test_tiny_gemm_flops (void)
{
  ModelArch arch = tiny_llama ();
  ModelCostParams p = params (1, 3, TRUE, 0);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "q_proj"), 96, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "k_proj"), 48, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "v_proj"), 48, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "attn_out"), 96, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "mlp_gate"), 192, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "mlp_up"), 192, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "mlp_down"), 192, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "attention"), 144, 1e-15);
  STEPSIM_ASSERT_REL (c.fwd.flops, 1008, 1e-15);
}

/* Each projection reads the input: bytes = e·T·h (input) + w·h·n (weights) + e·T·n
 * (output) at e = w = 2: q_proj (n = a·d = 4) 24 + 32 + 24 = 80, k_proj and v_proj (n = k·d
 * = 2) 24 + 16 + 12 = 52 each. A GPT-2 layer's fused c_attn (n = 3h) reads it once. */
static void
test_tiny_qkv_bytes (void)
{
  ModelArch arch = tiny_llama ();
  ModelCostParams p = params (1, 3, TRUE, 0);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  const ModelOp *q = find_op (&c.fwd, "q_proj"), *k = find_op (&c.fwd, "k_proj");
  const ModelOp *v = find_op (&c.fwd, "v_proj");
  CU_ASSERT_PTR_NOT_NULL_FATAL (q);
  CU_ASSERT_PTR_NOT_NULL_FATAL (k);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v);
  STEPSIM_ASSERT_REL (q->bytes, 80, 1e-15);
  STEPSIM_ASSERT_REL (k->bytes, 52, 1e-15);
  STEPSIM_ASSERT_REL (v->bytes, 52, 1e-15);
  /* GPT-2 (h = 4, 2 heads, c_attn with bias): one GEMM reading the input once,
   * 2·12 + 2·(4·12 + 12) + 2·3·12 = 24 + 120 + 72 = 216 */
  ModelArch gpt = gpt_like (4, 2, 1, 10);
  ModelBlockCost cg = model_cost_layer (&gpt, &p);
  const ModelOp *f = find_op (&cg.fwd, "qkv");
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  STEPSIM_ASSERT_REL (f->bytes, 216, 1e-15);
}

static void
check_gemm_backward (const ModelArch *arch, const ModelCostParams *p)
{
  ModelBlockCost c = model_cost_layer (arch, p);
  CU_ASSERT_EQUAL (c.bwd.n_ops, c.fwd.n_ops);
  guint n_gemm = 0;
  for (guint j = 0; j < c.fwd.n_ops; j++)
    if (c.fwd.ops[j].op_class == MODEL_OP_GEMM)
      {
        n_gemm++;
        STEPSIM_ASSERT_REL (op_flops (&c.bwd, c.fwd.ops[j].name), 2 * c.fwd.ops[j].flops, 1e-15);
      }
  CU_ASSERT (n_gemm >= 4);
}

/* Every GEMM's backward (grad input + grad weight) is 2× its forward FLOPs (Narayanan et al.
 * 2021 §5.1): eager GPT with dropout, and a MoE layer with a router. */
static void
test_gemm_backward_twice (void)
{
  ModelArch gpt = gpt_like (256, 4, 2, 1000);
  ModelCostParams p = params (2, 64, FALSE, 0.1);
  check_gemm_backward (&gpt, &p);
  ModelArch moe = tiny_llama ();
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  moe.family = MODEL_FAMILY_MIXTRAL;
  ModelCostParams q = params (1, 16, TRUE, 0);
  check_gemm_backward (&moe, &q);
}

/* FlashAttention backward: 5 GEMMs (scores recomputed, dV, dP, dQ, dK) vs 2 forward: 2.5×. */
static void
test_flash_backward (void)
{
  ModelArch arch = gpt_like (256, 4, 2, 1000);
  ModelCostParams p = params (2, 64, TRUE, 0);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  /* 4·b·s²·h = 4·2·64²·256 */
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "attention"), 4.0 * 2 * 64 * 64 * 256, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&c.bwd, "attention"), 2.5 * op_flops (&c.fwd, "attention"), 1e-15);
}

/* Korthikanti Table 2, no parallelism: GPT layer, fp16 activations, dropout, no flash:
 * activations = s·b·h·(34 + 5·a·s/h) bytes. Our terms at k = a, q = h, i = 4h, e = 2:
 * 2sbh + 2sbh + 6sbh (Q,K,V) + 5as²b (softmax 2, mask 1, dropout out 2) + 2sbh (o-proj in)
 * + sbh (mask) + 2sbh + 2sbh (norm2, MLP in) + 16sbh (GELU in and out) + sbh (mask) = 34sbh
 * + 5as²b. All terms are integers below 2^53, so equality is exact. */
static void
test_korthikanti_activations (void)
{
  const guint64 shapes[][4] = { { 1024, 16, 512, 4 }, { 6144, 64, 2048, 1 }, { 768, 12, 1024, 3 } };
  for (gsize j = 0; j < G_N_ELEMENTS (shapes); j++)
    {
      double h = shapes[j][0], a = shapes[j][1], s = shapes[j][2], b = shapes[j][3];
      ModelArch arch = gpt_like (shapes[j][0], shapes[j][1], 1, 1000);
      ModelCostParams p = params (shapes[j][3], shapes[j][2], FALSE, 0.1);
      ModelBlockCost c = model_cost_layer (&arch, &p);
      /* s·b·h·(34 + 5as/h) written as 34·sbh + 5·a·s²·b so no term is a fraction */
      STEPSIM_ASSERT_REL (c.act_saved, 34 * s * b * h + 5 * a * s * s * b, 0);
    }
}

/* Full recompute keeps the layer input only: 2sbh (Korthikanti Table 2). */
static void
test_checkpoint_input_only (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  ModelCostParams p = params (4, 512, FALSE, 0.1);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_checkpoint, 2.0 * 512 * 4 * 1024, 0);
}

/* Flash keeps logsumexp (4·b·a·s, fp32) instead of the s² tensors. Eager − flash:
 * with dropout: e·bas² (softmax) + bas² (mask) + e·bas² (dropout out) − 4bas
 *             = b·a·s·((2e + 1)·s − 4);   without dropout: b·a·s·(e·s − 4). */
static void
test_flash_removes_s2 (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  const double b = 2, a = 16, s = 512, e = 2;
  for (int drop = 0; drop <= 1; drop++)
    {
      ModelCostParams pe = params (2, 512, FALSE, drop ? 0.1 : 0);
      ModelCostParams pf = params (2, 512, TRUE, drop ? 0.1 : 0);
      double diff = model_cost_layer (&arch, &pe).act_saved
                    - model_cost_layer (&arch, &pf).act_saved;
      double expect = drop ? b * a * s * ((2 * e + 1) * s - 4) : b * a * s * (e * s - 4);
      CU_ASSERT_DOUBLE_EQUAL (diff, expect, 0);
    }
}

/* Eager forward materialises the pre-softmax scores e·b·a·s² transiently (from the
 * scores GEMM to the softmax, which frees them); flash does not, and its forward's transient
 * peak is the residual stream's (graph_layer.c frees): the GPT layer's LayerNorms save the
 * block input and the first sum, so what is not saved is the o-projection output (until
 * the first add), the MLP output and the layer output: at the second add the MLP output
 * and the sum coexist, 2·e·T·h = 2·2·1024·1024. Eager backward holds dP and dS
 * (2·e·b·a·s²) at least. */
static void
test_attention_workspace (void)
{
  ModelArch arch = gpt_like (1024, 16, 1, 1000);
  ModelCostParams pe = params (2, 512, FALSE, 0);
  ModelCostParams pf = params (2, 512, TRUE, 0);
  ModelBlockCost ce = model_cost_layer (&arch, &pe);
  ModelBlockCost cf = model_cost_layer (&arch, &pf);
  double scores = 2.0 * 16 * 512 * 512;
  CU_ASSERT_DOUBLE_EQUAL (ce.fwd.workspace, 2 * scores, 0);
  CU_ASSERT_DOUBLE_EQUAL (cf.fwd.workspace, 2.0 * 2 * 1024 * 1024, 0);
  CU_ASSERT (ce.bwd.workspace >= 2 * 2 * scores);
  CU_ASSERT (cf.bwd.workspace < ce.bwd.workspace);
}

/* Step model FLOPs = 3 × forward = 3·(L·(24bsh² + 4bs²h) + 2bshV) for a GPT-like layer
 * (qkv 6bsh², scores + AV 4bs²h, o-proj 2bsh², MLP 16bsh²; head 2bshV; embedding 0)
 * = 72·b·L·s·h²·(1 + s/(6h) + V/(12hL)): Korthikanti §6 with B = b, equal up to rounding. */
static void
test_step_flops_korthikanti (void)
{
  ModelArch arch = gpt_like (2048, 16, 24, 51200);
  for (guint64 b = 1; b <= 4; b += 3)
    {
      ModelCostParams p = params (b, 2048, TRUE, 0);
      STEPSIM_ASSERT_REL (model_cost_step_flops (&arch, &p),
                          model_cost_korthikanti_flops (b, 24, 2048, 2048, 51200), 1e-12);
    }
}

/* Korthikanti Table 5: GPT 22B (L48, h6144, 64 heads, s 2048, V 51200), global batch 4 on
 * 8 A100s (TP8), sequence parallelism + selective recompute: 1.10 s/iteration, MFU 41.5 %.
 * Model FLOPs F = 72·4·48·2048·6144²·(1 + 2048/36864 + 51200/3538944) ≈ 1.1436e15, so
 * MFU = F / (1.10 s · 8 · 312e12 FLOP/s) ≈ 41.65 %. (1.42 s is the full-recompute row, whose
 * MFU is ≈ 32.3 %; its HFU, counting the recomputed forward, 4/3 of that, ≈ 43.0 %.) */
static void
test_t1_mfu (void)
{
  ModelArch arch = gpt_like (6144, 64, 48, 51200);
  ModelCostParams p = params (4, 2048, FALSE, 0);
  double mfu = model_cost_step_flops (&arch, &p) / (1.10 * 8 * 312e12);
  CU_ASSERT (fabs (mfu - 0.415) < 0.005);
}

/* Head: LM-head GEMM 2·T·h·V. Upcast loss (HF ForCausalLMLoss): log_softmax keeps its
 * fp32 result 4·T·V from the forward to the backward, beside the final-norm input and the
 * LM-head input (e·T·h each, LayerNorm: no fp32 copy); the forward holds the e-byte logits
 * and their fp32 copy on top (e·T·V + 4·T·V); the backward nll's and log_softmax's fp32
 * gradients (8·T·V): 12 B a logit at the backward's peak. */
static void
test_head (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  ModelBlockCost c = model_cost_head (&arch, &p);
  double T = 16, V = 1000, h = 64, e = 2;
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "lm_head"), 2 * T * 64 * V, 1e-15);
  STEPSIM_ASSERT_REL (c.fwd.flops, 2 * T * 64 * V, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 2 * e * T * h + 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, e * T * V + 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 8 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved + c.bwd.workspace - 2 * e * T * h, 12 * T * V, 0);
}

/* Megatron's vocab-parallel cross-entropy (loss = vocab_parallel, cost_ends.c): the fp32
 * copy of the logits becomes the softmax in place and is what the loss saves (4·T·V, beside
 * the final-norm and LM-head inputs, e·T·h each); the forward holds the e-byte logits beside
 * it (one tensor e·T·V), the backward the cast's e-byte gradient beside the in-place fp32
 * one (one tensor e·T·V): 6 B a logit at either peak, 4 of them held between the forward
 * and the backward (plain holds 2). Traffic e + 36 B a logit forward, 12 + e backward. */
static void
test_head_vocab_parallel (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  p.loss = MODEL_COST_LOSS_VOCAB_PARALLEL;
  ModelBlockCost c = model_cost_head (&arch, &p);
  double T = 16, V = 1000, h = 64, e = 2;
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 2 * e * T * h + 4 * T * V, 0);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 1);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], e * T * V, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 1);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace_tensors[0], e * T * V, 0);
  STEPSIM_ASSERT_REL (find_op (&c.fwd, "cross_entropy")->bytes, (e + 36) * T * V, 1e-15);
  STEPSIM_ASSERT_REL (find_op (&c.bwd, "cross_entropy")->bytes, (12 + e) * T * V, 1e-12);
}

/* nanotron's sharded cross-entropy (loss = sharded, cost_ends.c): the model returns its
 * logits cast to fp32 and holds them until the loss returns; the loss subtracts the max
 * out of place (a second fp32 buffer), makes it the softmax in place and saves it. Saved
 * as Megatron's (4·T·V beside the norm and head inputs), but the forward's transient is
 * the fp32 logits (4·T·V, where Megatron holds the e-byte ones): 8 B a logit at the
 * forward's peak, e + 4 at the backward's. Traffic as Megatron's (the out-of-place
 * subtraction reads 4 and writes 4, as the in-place one). */
static void
test_head_sharded (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  p.loss = MODEL_COST_LOSS_SHARDED;
  ModelBlockCost c = model_cost_head (&arch, &p);
  double T = 16, V = 1000, h = 64, e = 2;
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 2 * e * T * h + 4 * T * V, 0);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 1);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], 4 * T * V, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 1);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace_tensors[0], e * T * V, 0);
  STEPSIM_ASSERT_REL (find_op (&c.fwd, "cross_entropy")->bytes, (e + 36) * T * V, 1e-15);
  STEPSIM_ASSERT_REL (find_op (&c.bwd, "cross_entropy")->bytes, (12 + e) * T * V, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (find_op (&c.fwd, "cross_entropy")->host_ops, 22, 0);
}

/* Transformer Engine's parallel_cross_entropy (loss = te_parallel, cost_ends.c): the
 * gradient is written over the e-byte logits, which the loss saves (e·T·V beside the
 * final-norm and LM-head inputs, e·T·h each); no copy, so no forward or backward transient.
 * Traffic: the online-softmax pass reads the logits (e), the loss pass reads them and writes
 * the gradient (2e): 3e a logit forward; the backward's in-place multiply reads and writes
 * them, 2e. */
static void
test_head_te_parallel (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  p.loss = MODEL_COST_LOSS_TE_PARALLEL;
  ModelBlockCost c = model_cost_head (&arch, &p);
  double T = 16, V = 1000, h = 64, e = 2;
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 2 * e * T * h + e * T * V, 0);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 0, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 0, 0);
  STEPSIM_ASSERT_REL (find_op (&c.fwd, "cross_entropy")->bytes, 3 * e * T * V, 1e-15);
  STEPSIM_ASSERT_REL (find_op (&c.bwd, "cross_entropy")->bytes, 2 * e * T * V, 1e-12);
  CU_ASSERT_EQUAL (find_op (&c.fwd, "cross_entropy")->host_ops, 4);
}

/* The head under autocast (an fp32 model, or PEFT's kbit preparation: the residual stream
 * is fp32). HF's eager LlamaRMSNorm saves its fp32 input x (pow), rsqrt's result (4·T) and
 * x_normed in the input's dtype, fp32 (mul with the fp32 weight); the LM head saves its
 * e-byte autocast cast of the norm's fp32 output; upcast loss 4·T·V. The norm's fp32
 * output is the model's last hidden state, held with the model outputs until the loss
 * returns: the first forward transient (4·T·h), before the e-byte logits and their fp32
 * copy. Small Llama h 64, V 1000, b 2, s 8 (T = 16). A LayerNorm (GPT) saves its fp32
 * input only: 4·T·h + e·T·h + 4·T·V. */
static void
test_head_autocast (void)
{
  ModelArch arch = small_llama ();
  ModelCostParams p = params (2, 8, TRUE, 0);
  p.autocast = TRUE;
  p.norm_fp32 = TRUE; /* HF's eager RMSNorm (the profiles that run the model code) */
  double T = 16, V = 1000, h = 64, e = 2;
  ModelBlockCost c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 4 * T * h + 4 * T + 4 * T * h + e * T * h + 4 * T * V, 0);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 3);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], 4 * T * h, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[1], e * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 4 * T * h + e * T * V + 4 * T * V, 0);
  ModelArch gpt = gpt_like (64, 4, 1, 1000);
  c = model_cost_head (&gpt, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 4 * T * h + e * T * h + 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], 4 * T * h, 0);
  /* without autocast nothing of it: the e-byte norm input and no hidden-state transient */
  p.autocast = FALSE;
  p.norm_fp32 = FALSE;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 2 * e * T * h + 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], e * T * V, 0);
}

/* The head's workspaces as the tensors PyTorch allocates (cost.h workspace_tensors, in
 * allocation order, Σ = workspace), T = 16, V = 1000, e = 2, T' = b·(s − 1) = 14:
 *   upcast        fwd {e·T·V logits, 4·T·V fp32 copy}, bwd {4·T·V, 4·T·V} (nll's and
 *                 log_softmax's gradients)
 *   upcast_shift  fwd {e·T·V, 4·T·V, 4·T'·V shifted copy}, bwd {4·T'·V, 4·T'·V}
 *   chunked (n = 4, eager) fwd {e·T·V/4 × 4 chunks, 4·T·V/4 one chunk's fp32 copy},
 *                 bwd {4·T·V/4, 4·T·V/4}
 * Past 34 tensors (40 chunks) the last entry takes the rest: 33 chunks + 7 chunks and the
 * copy. */
static void
test_head_workspace_tensors (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  double T = 16, Ts = 14, V = 1000, e = 2;
  ModelBlockCost c = model_cost_head (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 2);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], e * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[1], 4 * T * V, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 2);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace_tensors[0], 4 * T * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace_tensors[1], 4 * T * V, 0);
  p.loss = MODEL_COST_LOSS_UPCAST_SHIFT;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 3);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[2], 4 * Ts * V, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, e * T * V + 4 * T * V + 4 * Ts * V, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 2);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace_tensors[1], 4 * Ts * V, 0);
  p.loss = MODEL_COST_LOSS_CHUNKED;
  p.loss_chunks = 4;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 5);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[3], e * T * V / 4, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[4], T * V, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 2);
  p.loss_chunks = 40;
  c = model_cost_head (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, MODEL_COST_MAX_WORKSPACE_TENSORS);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[32], e * T * V / 40, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[33], 7 * e * T * V / 40 + 4 * T * V / 40,
                          1e-9);
  double sum = 0;
  for (guint i = 0; i < c.fwd.n_workspace_tensors; i++)
    sum += c.fwd.workspace_tensors[i];
  STEPSIM_ASSERT_REL (sum, c.fwd.workspace, 1e-12);
}

/* torchtitan's ChunkedLossWrapper (loss = chunked_head, n = 4 slices), T = 16, V = 1000,
 * h = 64, e = 2: at a slice's peak its e-byte logits, e·T·V/n = 8 000 B, and three fp32
 * T/n × V tensors (log_softmax's result, nll_loss's and log_softmax's gradients of the
 * slice's backward, run at once) of 4·T·V/n = 16 000 B: 56 000 B over the saved; the
 * head's backward keeps no transient. Saved: the fp32 gradient buffer of the hidden states,
 * 4·T·h = 4 096 B, where the upcast loss keeps log_softmax's result 4·T·V = 64 000 B
 * (59 904 B less). No whole logits exist to keep under logits_kept; the GEMM and the
 * loss's FLOPs are the upcast loss's. */
static void
test_head_chunked_head (void)
{
  ModelArch arch = gpt_like (64, 4, 1, 1000);
  ModelCostParams p = params (2, 8, TRUE, 0);
  ModelBlockCost up = model_cost_head (&arch, &p);
  p.loss = MODEL_COST_LOSS_CHUNKED_HEAD;
  p.loss_chunks = 4;
  ModelBlockCost c = model_cost_head (&arch, &p);
  CU_ASSERT_EQUAL (c.fwd.n_workspace_tensors, 4);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[0], 8000, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace_tensors[3], 16000, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.workspace, 56000, 0);
  CU_ASSERT_EQUAL (c.bwd.n_workspace_tensors, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.bwd.workspace, 0, 0);
  CU_ASSERT_DOUBLE_EQUAL (up.act_saved - c.act_saved, 64000 - 4096, 0);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.flops + c.bwd.flops, up.fwd.flops + up.bwd.flops, 0);
  p.logits_kept = TRUE;
  CU_ASSERT_DOUBLE_EQUAL (model_cost_head (&arch, &p).act_saved, c.act_saved, 0);
}

/* Embedding: a gather, no FLOPs; saves only int64 token ids (8·b·s) without dropout. */
static void
test_embedding (void)
{
  ModelArch arch = tiny_llama ();
  ModelCostParams p = params (2, 8, TRUE, 0);
  ModelBlockCost c = model_cost_embedding (&arch, &p);
  CU_ASSERT_DOUBLE_EQUAL (c.fwd.flops + c.bwd.flops, 0, 0);
  CU_ASSERT (c.fwd.bytes > 0 && c.bwd.bytes > 0);
  CU_ASSERT_DOUBLE_EQUAL (c.act_saved, 8.0 * 16, 0);
}

/* MoE, E = 8, top-2: router 2·T·h·E; each token goes through k experts, so expert GEMM
 * FLOPs are k × the dense MLP's. */
static void
test_moe_flops (void)
{
  ModelArch dense = tiny_llama ();
  ModelArch moe = dense;
  moe.family = MODEL_FAMILY_MIXTRAL;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  ModelCostParams p = params (2, 8, TRUE, 0);
  ModelBlockCost cd = model_cost_layer (&dense, &p);
  ModelBlockCost cm = model_cost_layer (&moe, &p);
  STEPSIM_ASSERT_REL (op_flops (&cm.fwd, "router"), 2.0 * 16 * 4 * 8, 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&cm.fwd, "mlp_gate"), 2 * op_flops (&cd.fwd, "mlp_gate"), 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&cm.fwd, "mlp_up"), 2 * op_flops (&cd.fwd, "mlp_up"), 1e-15);
  STEPSIM_ASSERT_REL (op_flops (&cm.fwd, "mlp_down"), 2 * op_flops (&cd.fwd, "mlp_down"), 1e-15);
}

/* Megatron's TEGroupedMLP (experts.py; fused_bias_swiglu.py weighted_bias_swiglu_impl):
 * the routing weights enter the fused SwiGLU, which saves fc1's output (gate and up), so
 * against HF's eager loop (silu saves gate, mul saves silu(gate) and up, combine saves the
 * expert output and the weights) a MoE layer saves neither the SiLU output (e·m·i) nor the
 * experts' output (e·m·h): with b·s = 16 tokens, top-2 (m = 32 rows), h 4, i 8, bf16,
 * 2·32·(8 + 4) = 768 B less. The FLOPs are the same. */
static void
test_moe_grouped_mlp_saves_less (void)
{
  ModelArch moe = tiny_llama ();
  moe.family = MODEL_FAMILY_MIXTRAL;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  ModelCostParams hf = params (2, 8, TRUE, 0);
  ModelCostParams mg = hf;
  mg.moe_grouped_mlp = TRUE;
  ModelBlockCost ch = model_cost_layer (&moe, &hf);
  ModelBlockCost cm = model_cost_layer (&moe, &mg);
  STEPSIM_ASSERT_REL (ch.act_saved - cm.act_saved, 2.0 * 32 * (8 + 4), 1e-12);
  STEPSIM_ASSERT_REL (cm.fwd.flops, ch.fwd.flops, 1e-12);
  /* a dense layer is unchanged */
  ModelArch dense = tiny_llama ();
  STEPSIM_ASSERT_REL (model_cost_layer (&dense, &mg).act_saved,
                      model_cost_layer (&dense, &hf).act_saved, 1e-15);
}

/* Megatron's recompute_modules (transformer_config.py): layernorm drops the two norms'
 * outputs (input_layernorm, pre_mlp_layernorm: e·T·h each, here bf16, T = 16 tokens, h 4:
 * 2·2·16·4 = 256 B) and reruns the two norm kernels; moe_act keeps fc1's output and drops
 * the activation's output and intermediates (Megatron's grouped MLP: the product e·m·i, and
 * under gpt_oss's clamp the clamped copy 2·e·m·i; m = 32 rows, i 8: 512 + 1024 B) and
 * reruns the activation (and the clamp); core_attn alone is the default (flash: its
 * logsumexp). Each is what the selective tensors (act_selective) hold and its rerun what
 * selective_fwd runs. */
static void
test_recompute_modules (void)
{
  ModelArch dense = tiny_llama ();
  ModelCostParams ln = params (2, 8, TRUE, 0);
  ln.recompute_modules = MODEL_RECOMPUTE_LAYERNORM;
  ModelBlockCost c = model_cost_layer (&dense, &ln);
  STEPSIM_ASSERT_REL (c.act_selective, 2.0 * 2 * 16 * 4, 1e-12);
  CU_ASSERT_EQUAL (c.selective_fwd.n_ops, 2);
  CU_ASSERT_PTR_NOT_NULL (find_op (&c.selective_fwd, "norm1"));
  CU_ASSERT_PTR_NOT_NULL (find_op (&c.selective_fwd, "norm2"));
  ModelArch moe = tiny_llama ();
  moe.family = MODEL_FAMILY_MIXTRAL;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  moe.swiglu_limit = 7;
  ModelCostParams act = params (2, 8, TRUE, 0);
  act.moe_grouped_mlp = TRUE;
  act.recompute_modules = MODEL_RECOMPUTE_MOE_ACT;
  ModelBlockCost m = model_cost_layer (&moe, &act);
  STEPSIM_ASSERT_REL (m.act_selective, 2.0 * 32 * 8 + 2.0 * 2 * 32 * 8, 1e-12);
  CU_ASSERT_PTR_NOT_NULL (find_op (&m.selective_fwd, "mlp_act"));
  CU_ASSERT_PTR_NOT_NULL (find_op (&m.selective_fwd, "mlp_clamp"));
  /* Megatron adds the experts' fc2 bias per row in fp32 outside the grouped GEMM: one pass
   * of (24 + 2e) B an output element over the m·h output, and its fp32 bias rows 4·m·h
   * saved; 2·32·4 elements: 28 · 256 B and 4 · 256 B */
  ModelArch biased = moe;
  biased.mlp_bias = TRUE;
  ModelCostParams nb = act;
  nb.recompute_modules = 0;
  ModelBlockCost b0 = model_cost_layer (&moe, &nb), b1 = model_cost_layer (&biased, &nb);
  const ModelOp *bias = find_op (&b1.fwd, "expert_bias");
  CU_ASSERT_PTR_NOT_NULL_FATAL (bias);
  STEPSIM_ASSERT_REL (bias->bytes, 28.0 * 32 * 4, 1e-12);
  STEPSIM_ASSERT_REL (b1.act_saved - b0.act_saved, 4.0 * 32 * 4, 1e-12);
  /* the default (0) is core_attn: the attention kernel, nothing of the above */
  ModelCostParams def = params (2, 8, TRUE, 0);
  ModelBlockCost d0 = model_cost_layer (&dense, &def);
  CU_ASSERT_PTR_NULL (find_op (&d0.selective_fwd, "norm1"));
  def.recompute_modules = MODEL_RECOMPUTE_CORE_ATTN;
  STEPSIM_ASSERT_REL (model_cost_layer (&dense, &def).act_selective, d0.act_selective, 1e-15);
}

/* recompute_modules mlp, moe, shared_experts: the whole MLP block (or the shared experts)
 * checkpointed over its input. Dense (tiny llama: T = 16 tokens, h 4, i 8, bf16, eager
 * SwiGLU): the block saves gate, up, silu(gate) and their product, e·T·i each
 * (derivatives.yaml: silu saves its input, mul both factors, down_proj its input):
 * 4·2·16·8 = 1024 B re-created, and its rerun is the block's three GEMMs, 3·2·T·h·i =
 * 3072 FLOP. MoE (the same layer as Mixtral-style, 8 experts top-2): under moe what the
 * layer keeps (act_saved − act_selective) is what the dense layer keeps under mlp — the
 * attention half and the block's input, the pre-MLP norm output — and the rerun is the MoE
 * block's forward, router and expert GEMMs: its FLOPs exceed the dense rerun's by the
 * MoE forward's excess over the dense one. Shared experts of s = 8 (no gate): 4·e·T·s =
 * 1024 B re-created, the three GEMMs rerun. */
static void
test_recompute_mlp_modules (void)
{
  ModelArch dense = tiny_llama ();
  ModelCostParams none = params (2, 8, TRUE, 0), mlp = none;
  mlp.recompute_modules = MODEL_RECOMPUTE_MLP;
  ModelBlockCost d0 = model_cost_layer (&dense, &none), d1 = model_cost_layer (&dense, &mlp);
  STEPSIM_ASSERT_REL (d1.act_selective, 4.0 * 2 * 16 * 8, 1e-12);
  STEPSIM_ASSERT_REL (d1.act_saved, d0.act_saved, 1e-15);
  STEPSIM_ASSERT_REL (d1.selective_fwd.flops, 3.0 * 2 * 16 * 4 * 8, 1e-12);
  CU_ASSERT_PTR_NOT_NULL (find_op (&d1.selective_fwd, "mlp_down"));
  CU_ASSERT_PTR_NULL (find_op (&d1.selective_fwd, "norm2"));
  ModelArch moe = tiny_llama ();
  moe.family = MODEL_FAMILY_MIXTRAL;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  ModelCostParams mp = params (2, 8, TRUE, 0);
  mp.recompute_modules = MODEL_RECOMPUTE_MOE;
  ModelBlockCost m0 = model_cost_layer (&moe, &none), m1 = model_cost_layer (&moe, &mp);
  STEPSIM_ASSERT_REL (m1.act_saved - m1.act_selective, d1.act_saved - d1.act_selective, 1e-12);
  STEPSIM_ASSERT_REL (m1.selective_fwd.flops - d1.selective_fwd.flops,
                      m0.fwd.flops - d0.fwd.flops, 1e-12);
  CU_ASSERT_PTR_NOT_NULL (find_op (&m1.selective_fwd, "router"));
  /* mlp on a MoE layer and moe on a dense one rerun nothing of the block */
  STEPSIM_ASSERT_REL (model_cost_layer (&moe, &mlp).act_selective, 0, 0);
  STEPSIM_ASSERT_REL (model_cost_layer (&dense, &mp).act_selective, 0, 0);
  ModelArch shared = moe;
  shared.shared_expert_size = 8;
  ModelCostParams sp = params (2, 8, TRUE, 0);
  sp.recompute_modules = MODEL_RECOMPUTE_SHARED_EXPERTS;
  ModelBlockCost s1 = model_cost_layer (&shared, &sp);
  STEPSIM_ASSERT_REL (s1.act_selective, 4.0 * 2 * 16 * 8, 1e-12);
  CU_ASSERT_PTR_NOT_NULL (find_op (&s1.selective_fwd, "shared_down"));
  CU_ASSERT_PTR_NULL (find_op (&s1.selective_fwd, "router"));
}

/* One token, top-2 of 8: only 2 experts' weights are read. gate bytes =
 * e·m·h + w·2·(h·i) + e·m·i with m = 2 routed copies: 2·2·4 + 2·2·32 + 2·2·8 = 176.
 * With 8 tokens (16 ≥ E copies) all 8 experts are read: 2·16·4 + 2·8·32 + 2·16·8 = 896. */
static void
test_moe_touched_experts (void)
{
  ModelArch moe = tiny_llama ();
  moe.family = MODEL_FAMILY_MIXTRAL;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  ModelCostParams one = params (1, 1, TRUE, 0);
  ModelCostParams eight = params (1, 8, TRUE, 0);
  ModelBlockCost c1 = model_cost_layer (&moe, &one);
  ModelBlockCost c8 = model_cost_layer (&moe, &eight);
  const ModelOp *o1 = find_op (&c1.fwd, "mlp_gate");
  const ModelOp *o8 = find_op (&c8.fwd, "mlp_gate");
  CU_ASSERT_PTR_NOT_NULL_FATAL (o1);
  CU_ASSERT_PTR_NOT_NULL_FATAL (o8);
  STEPSIM_ASSERT_REL (o1->bytes, 176, 1e-15);
  STEPSIM_ASSERT_REL (o8->bytes, 896, 1e-15);
}

/* Sliding window w < s: query i scores min(i, w) keys, K(16, 4) = 1 + 2 + 3 + 4 + 12·4 = 58
 * pairs (attention_window.c). In the full-square convention (the causal kernel rated twice
 * as efficient) that is s_kv = 2·58/16 = 7.25 keys: 4·b·s·s_kv·a·d = 4·16·7.25·4 FLOPs, so
 * that the causal halving leaves 4·58·4 — not 4·16·4·4/2, which would have the first w
 * queries' triangle and the band both halved. */
static void
test_sliding_window_flash (void)
{
  ModelArch arch = tiny_llama ();
  arch.sliding_window = 4;
  ModelCostParams p = params (1, 16, TRUE, 0);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  STEPSIM_ASSERT_REL (op_flops (&c.fwd, "attention"), 4.0 * 16 * 7.25 * 4, 1e-15);
  /* A kernel without a window (Triton, FA-1: window_ignored) attends to all s = 16 keys:
   * 4·b·s·s·q, four times the windowed count */
  p.window_ignored = TRUE;
  ModelBlockCost full = model_cost_layer (&arch, &p);
  STEPSIM_ASSERT_REL (op_flops (&full.fwd, "attention"), 4.0 * 16 * 16 * 4, 1e-15);
}

/* Pass totals are the sums of their ops; element-wise ops carry no FLOPs. */
static void
test_pass_sums (void)
{
  ModelArch arch = gpt_like (256, 4, 2, 1000);
  ModelCostParams p = params (2, 64, FALSE, 0.1);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  const ModelPass *passes[] = { &c.fwd, &c.bwd };
  for (gsize k = 0; k < 2; k++)
    {
      double f = 0, by = 0;
      for (guint j = 0; j < passes[k]->n_ops; j++)
        {
          f += passes[k]->ops[j].flops;
          by += passes[k]->ops[j].bytes;
          if (passes[k]->ops[j].op_class == MODEL_OP_ELEMENTWISE)
            CU_ASSERT_DOUBLE_EQUAL (passes[k]->ops[j].flops, 0, 0);
        }
      STEPSIM_ASSERT_REL (passes[k]->flops, f, 1e-15);
      STEPSIM_ASSERT_REL (passes[k]->bytes, by, 1e-15);
    }
}

/* BERT head: pooler GEMM on the b [CLS] tokens, 2·b·h·h FLOPs, and the classifier
 * 2·b·h·n_labels; nothing of size V. b = 4, h = 1024, 2 labels: 2·4·1024·1024 = 8,388,608
 * and 2·4·1024·2 = 16,384. act_saved (e = 2, dropout): the last hidden state kept by the
 * [CLS] view e·T·h = 2·2048·1024 = 4,194,304 + tanh out and classifier input 2·e·b·h =
 * 16,384 + dropout mask b·h = 4,096 → 4,214,784. Workspace: fp32 logits 4·b·2 = 32. */
static void
test_bert_head (void)
{
  ModelArch arch = gpt_like (1024, 16, 24, 30522);
  model_arch_set_family_defaults (&arch, MODEL_FAMILY_BERT);
  arch.max_positions = 512;
  ModelCostParams p = params (4, 512, FALSE, 0.1);
  ModelBlockCost c = model_cost_head (&arch, &p);
  const ModelOp *pool = find_op (&c.fwd, "pooler");
  const ModelOp *cls = find_op (&c.fwd, "classifier");
  CU_ASSERT_PTR_NOT_NULL_FATAL (pool);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cls);
  CU_ASSERT_EQUAL (pool->flops, 8388608);
  CU_ASSERT_EQUAL (cls->flops, 16384);
  CU_ASSERT_EQUAL (c.fwd.flops, 8388608 + 16384);
  CU_ASSERT_PTR_NULL (find_op (&c.fwd, "lm_head"));
  CU_ASSERT_EQUAL (c.act_saved, 4214784);
  CU_ASSERT_EQUAL (c.fwd.workspace, 32);
}

/* BERT embedding adds the token-type ids (8·T), the LayerNorm input e·T·h and its fp32
 * statistics (8·T) to the GPT-like saved bytes: T = 2048, e = 2, h = 1024:
 * 16,384 + 4,194,304 + 16,384 = 4,227,072 more. */
static void
test_bert_embedding (void)
{
  ModelArch gpt = gpt_like (1024, 16, 24, 30522);
  ModelArch bert = gpt;
  model_arch_set_family_defaults (&bert, MODEL_FAMILY_BERT);
  ModelCostParams p = params (4, 512, FALSE, 0.1);
  double d = model_cost_embedding (&bert, &p).act_saved - model_cost_embedding (&gpt, &p).act_saved;
  CU_ASSERT_EQUAL (d, 4227072);
}

/* Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json): h 4096, 32 query heads and 8 key/value
 * heads of d = 128 (q = 4096, c = 8 × 128 = 1024), SwiGLU i = 14336, RMSNorm, no biases,
 * vocabulary 128256. */
static ModelArch
llama31_8b (void)
{
  return llama_like (4096, 32, 32, 8, 128, 14336, 128256, 131072);
}

/* Grouped-query attention saves K and V of c = k·d columns, not q = a·d (Ainslie et al.
 * 2023, arXiv 2305.13245 §2; HF LlamaAttention: k_proj, v_proj out = num_key_value_heads ×
 * head_dim). Llama 3.1 8B layer, pure bf16 (e = 2, no autocast), no dropout, T = b·s:
 *   norm1 in e·T·h + qkv in e·T·h + Q e·T·q + K, V 2·e·T·c + o-proj in e·T·q
 *   + norm2 in e·T·h + MLP in e·T·h + SwiGLU gate, silu(gate), up, product 4·e·T·i (eager:
 *   silu saves the gate, the mul silu(gate) and up, down_proj the product)
 *   = e·T·(4h + 2q + 2c + 4i), plus flash's logsumexp 4·b·a·s or eager's softmax output
 *   e·b·a·s². Under autocast (fp32 weights): the norms save fp32 (4·T·h each), the separate
 *   q, k, v projections three e-byte casts of their input (3·e·T·h), gate and up two
 *   (2·e·T·h); eager's softmax output is fp32 (4·b·a·s²) plus the AV matmul's e-byte copy.
 * Sizing K and V like Q would add 2·e·T·(q − c) = 12,288·T bytes. All terms are integers
 * below 2^53: equality is exact. */
static void
test_gqa_activations (void)
{
  ModelArch arch = llama31_8b ();
  const double h = 4096, a = 32, q = 4096, c = 1024, i = 14336, e = 2;
  const guint64 shapes[][2] = { { 1, 8192 }, { 2, 2048 } };
  for (gsize j = 0; j < G_N_ELEMENTS (shapes); j++)
    for (int flash = 0; flash <= 1; flash++)
      for (int autocast = 0; autocast <= 1; autocast++)
        {
          double b = shapes[j][0], s = shapes[j][1], T = b * s;
          ModelCostParams p = params (shapes[j][0], shapes[j][1], flash, 0);
          p.autocast = autocast;
          double expect = autocast ? 4 * T * h + 3 * e * T * h + e * T * (q + 2 * c) + e * T * q
                                       + 4 * T * h + 2 * e * T * h + 4 * e * T * i
                                   : e * T * (4 * h + 2 * q + 2 * c + 4 * i);
          expect += flash ? 4 * b * a * s : (autocast ? 4 + e : e) * b * a * s * s;
          ModelBlockCost cost = model_cost_layer (&arch, &p);
          CU_ASSERT_DOUBLE_EQUAL (cost.act_saved, expect, 0);
          /* The saved tensors one by one: two of them (K, V) are e·T·c each, and together
           * they are act_saved (no weight copies here). */
          double sizes[MODEL_COST_MAX_TENSORS], sum = 0;
          guint n = model_cost_layer_saved_tensors (&arch, &p, sizes, MODEL_COST_MAX_TENSORS);
          guint kv = 0;
          for (guint k = 0; k < n; k++)
            sum += sizes[k], kv += sizes[k] == e * T * c;
          CU_ASSERT_EQUAL (kv, 2);
          CU_ASSERT_DOUBLE_EQUAL (sum, expect, 0);
        }
}

/* Point-wise backward bytes are what each backward kernel moves, per op (graph_layer.c):
 *   softmax:  _softmax_backward_data reads y and dy, writes dx: 3 tensors against the
 *             forward's 2 (read x, write y) → 1.5×;
 *   GeLU:     gelu_backward reads dy and the saved x, writes dx: 3 against 2 → 1.5×;
 *   dropout:  native_dropout_backward reads dy and the 1-byte mask, writes dx: what the
 *             forward moved (read x, write y, write mask) → 1×.
 * A GPT layer, eager attention, dropout 0.1, so every one of these ops exists. */
static void
test_pointwise_backward_bytes (void)
{
  ModelArch arch = gpt_like (64, 4, 2, 512);
  ModelCostParams p = params (2, 16, FALSE, 0.1);
  ModelBlockCost c = model_cost_layer (&arch, &p);
  const struct { const char *op; double k; } want[] = {
    { "softmax", 1.5 }, { "mlp_act", 1.5 }, { "attn_dropout", 1.0 },
    { "resid_dropout1", 1.0 }, { "resid_dropout2", 1.0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    {
      const ModelOp *f = find_op (&c.fwd, want[i].op), *b = find_op (&c.bwd, want[i].op);
      CU_ASSERT_FATAL (f != NULL && b != NULL);
      CU_ASSERT (f->bytes > 0);
      STEPSIM_ASSERT_REL (b->bytes, want[i].k * f->bytes, 1e-12);
    }
}

/* qwen2_moe's layer runs its shared expert (Qwen2MoeSparseMoeBlock.forward: a Qwen2MoeMLP of
 * shared_expert_intermediate_size s on every token, scaled by sigmoid(shared_expert_gate x),
 * a GEMM h → 1) beside the top-k routed experts. Forward FLOPs of one layer of
 * qwen1.5-moe-a2.7b (h 2048, 16 heads of 128, MHA, E 60 experts of I 1408, top-4, s 5632),
 * b = 2, s_q = 512, T = 1024 tokens, flash:
 *   2·T·(matmul params a token touches) + attention, with
 *   matmul params = q, k, v, o 4·h·h + router h·E + top-k 3·h·I each + shared 3·h·s + gate h
 *   attention      = 2·b·s_q²·nh·(d + d) (QKᵀ and PV, the op graph's causal-free count)
 * The point-wise ops (biases, norms, rotary, silu, the sigmoid and products) add no FLOPs. */
static void
test_qwen2_moe_shared_expert_flops (void)
{
  g_autoptr (ModelArch) a = shipped ("qwen1.5-moe-a2.7b");
  double h = 2048, E = 60, I = 1408, k = 4, sh = 5632, nh = 16, d = 128, b = 2, sq = 512;
  CU_ASSERT_EQUAL (a->shared_expert_size, 5632);
  CU_ASSERT_TRUE (a->shared_expert_gate);
  double T = b * sq;
  double params = 4 * h * h + h * E + k * 3 * h * I + 3 * h * sh + h;
  ModelCostParams p = { .micro_batch = 2, .seq_len = 512, .act_bytes = 2, .weight_bytes = 2,
                        .flash_attention = TRUE };
  ModelBlockCost c = model_cost_layer (a, &p);
  STEPSIM_ASSERT_REL (c.fwd.flops, 2 * T * params + 2 * b * sq * sq * nh * (d + d), 1e-12);
}

/* model_cost_*_to (plan building's in-place form) write every byte of their output: into a
 * struct filled with 0xa5 they give exactly the bytes of the by-value functions, for the
 * layer, the embedding and the head of a Llama-like, a GPT-like and a BERT model, with and
 * without flash attention and dropout. */
static void
test_cost_in_place (void)
{
  ModelArch archs[] = { small_llama (), gpt_like (64, 4, 2, 100), gpt_like (64, 4, 2, 100) };
  model_arch_set_family_defaults (&archs[2], MODEL_FAMILY_BERT); /* its own head */
  archs[2].max_positions = 512;
  ModelCostParams ps[] = { params (2, 16, TRUE, 0), params (1, 8, FALSE, 0.1) };
  static ModelBlockCost got, want;
  for (guint a = 0; a < G_N_ELEMENTS (archs); a++)
    for (guint q = 0; q < G_N_ELEMENTS (ps); q++)
      for (int block = 0; block < 3; block++)
        {
          memset (&got, 0xa5, sizeof got);
          if (block == 0)
            {
              want = model_cost_layer (&archs[a], &ps[q]);
              model_cost_layer_to (&archs[a], &ps[q], &got);
            }
          else if (block == 1)
            {
              want = model_cost_embedding (&archs[a], &ps[q]);
              model_cost_embedding_to (&archs[a], &ps[q], &got);
            }
          else
            {
              want = model_cost_head (&archs[a], &ps[q]);
              model_cost_head_to (&archs[a], &ps[q], &got);
            }
          CU_ASSERT_TRUE (want.fwd.n_ops > 0);
          CU_ASSERT_EQUAL (memcmp (&got, &want, sizeof got), 0);
        }
}

static const StepsimTest tests[] = {
  { "tiny GEMM FLOPs", test_tiny_gemm_flops },
  { "block costs in place = by value, every byte written", test_cost_in_place },
  { "tiny qkv bytes", test_tiny_qkv_bytes },
  { "GEMM backward is 2x forward", test_gemm_backward_twice },
  { "flash backward is 2.5x forward", test_flash_backward },
  { "Korthikanti activations sbh(34 + 5as/h)", test_korthikanti_activations },
  { "GQA activations: K and V of num_key_value_heads (Llama 3.1 8B)", test_gqa_activations },
  { "checkpoint keeps the input", test_checkpoint_input_only },
  { "flash removes the s^2 activations", test_flash_removes_s2 },
  { "attention workspace", test_attention_workspace },
  { "step FLOPs equal Korthikanti's formula", test_step_flops_korthikanti },
  { "T1 GPT-22B MFU 41.5 %", test_t1_mfu },
  { "LM head FLOPs and fp32 logits", test_head },
  { "LM head workspaces as tensors", test_head_workspace_tensors },
  { "loss = chunked_head: one slice's tensors, the fp32 hidden-state gradient saved",
    test_head_chunked_head },
  { "LM head: Megatron's vocab-parallel cross-entropy", test_head_vocab_parallel },
  { "LM head: nanotron's sharded cross-entropy", test_head_sharded },
  { "LM head: Transformer Engine's parallel cross-entropy", test_head_te_parallel },
  { "LM head under autocast: the fp32 stream's final norm", test_head_autocast },
  { "embedding", test_embedding },
  { "MoE FLOPs", test_moe_flops },
  { "recompute_modules: layernorm and moe_act drop and rerun their tensors", test_recompute_modules },
  { "recompute_modules: mlp, moe and shared_experts checkpoint their block", test_recompute_mlp_modules },
  { "MoE: Megatron's grouped MLP saves no SiLU or expert output", test_moe_grouped_mlp_saves_less },
  { "MoE touched experts", test_moe_touched_experts },
  { "sliding window flash FLOPs", test_sliding_window_flash },
  { "pass sums", test_pass_sums },
  { "bert classification head is tiny", test_bert_head },
  { "bert embedding: token types and LayerNorm", test_bert_embedding },
  { "point-wise backward bytes per op", test_pointwise_backward_bytes },
  { "qwen2_moe runs its gated shared expert", test_qwen2_moe_shared_expert_flops },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/cost", tests);
}
