/* models/ops/graph.h — the saved-tensor graph of one block (a transformer layer): the ops of
 * its forward, the tensors they produce and the tensors each saves for backward, by
 * identity, so that a tensor two ops save (the norm output the q, k and v projections all
 * read) is held once.
 *
 * What an op saves follows PyTorch's autograd formulas (tools/autograd/derivatives.yaml):
 * mm/addmm save their input (and the weight) for the gradients; pow(x, 2) saves x;
 * rsqrt saves its result; mul(a, b) saves b when a requires grad and a when b does;
 * silu/gelu save their input; _softmax and _log_softmax their result; native_dropout its
 * mask; the SDPA flash/efficient kernels q, k, v, the output and the logsumexp. A cast
 * (`.float()`, `.to()`), a view, an add save nothing.
 *
 * Each tensor states how it is produced (its recompute class): by a GEMM, by an attention
 * kernel, by a point-wise or reduction kernel, or it is the block's input. Three readings of
 * the same graph are the checkpointing policies and torch.compile:
 *  - eager: the union of what the ops save (model_graph_saved);
 *  - torch.compile (AOTAutograd's min-cut partitioner, torch/_functorch/partitioners.py
 *    min_cut_rematerialization_partition): a saved tensor made by a fusible point-wise
 *    op that the backward uses only in fusible formulas is recomputed from the tensor it was
 *    computed from (`from`), which is saved instead; what a backward GEMM or attention
 *    kernel reads is "materialized in the backward" (ban_recompute_materialized_backward) and
 *    stays saved, as do reduction outputs (ban_recompute_reductions);
 *  - selective (Korthikanti et al. 2022 §5): the attention core's tensors are recomputed,
 *    or the modules of Megatron's recompute_modules (cost.h MODEL_RECOMPUTE_*: the norms'
 *    outputs, the MoE experts' activation), as the graph's builder marked them;
 *  - op-level selective (torchtitan `ac_mode: selective, selective_ac_option: op`): the
 *    outputs of the attention kernel, of batched, grouped and biased GEMMs (bmm, _grouped_mm,
 *    addmm: PyTorch's compute-intensive ops, torch/_functorch/partitioners.py
 *    get_default_op_list) and of every odd-numbered plain matrix multiply of the block's
 *    forward are kept, everything else is recomputed
 *    from them and from the block input. torchtitan's policy (torchtitan/distributed/
 *    activation_checkpoint.py SelectiveAC._wrap_block wrapped_policy, and the same rule in
 *    its 2024-12 parallelize_llama.py _custom_policy) counts each aten.mm (a linear without
 *    bias) in call order in a counter created afresh for each checkpointed forward and
 *    returns PREFER_RECOMPUTE for every second one ("Saves output of all compute ops, except
 *    every second mm"): in a Llama layer wq, wv, w1 and w2 are kept and wk, wo and w3
 *    rerun. The count is ModelGraphOp.mm_call, numbered as the GEMMs are added; LoRA's
 *    lora_a and lora_b are numbered where the graph places them (after the block's base
 *    projections), not after each base projection as PEFT calls them.
 *
 * Each op also states the kernel it launches (ModelOp: its class — GEMM with its M, N, K
 * shape, the fused attention kernel, or a memory-bound element-wise/norm/softmax kernel —,
 * FLOPs, HBM bytes and how its backward scales), whether selective recompute reruns it
 * (the attention core), and the tensors it frees: its inputs whose last forward use it is.
 * Time is a fold over the ops' kernels (models/ops/cost.c: forward, the mirrored backward,
 * the recompute of a policy = the ops whose outputs the policy does not keep); the
 * transient (non-saved) memory peak of the forward is a fold over the liveness the births
 * and frees give (model_graph_transient_peak). An op without a kernel (a view, a cast the
 * time model leaves out, a mask's bookkeeping) launches nothing.
 *
 * Units: bytes (B), FLOP, doubles. Ownership: a ModelGraph owns its arrays; free with
 * model_graph_free (NULL is a no-op).
 */
#pragma once

#include <glib.h>
#include "hardware/kernel.h"

typedef enum
{
  MODEL_OP_GEMM,        /* tensor-core matrix multiply */
  MODEL_OP_ATTENTION,   /* fused attention core (FlashAttention) */
  MODEL_OP_ELEMENTWISE, /* norms, rotary, activations, softmax, residual adds, loss */
} ModelOpClass;

/* One kernel: what the executor runs as a roofline activity max(F/C, M/H). */
typedef struct
{
  const char *name;     /* static: "qkv", "attn_scores", "softmax", "mlp_fc", … */
  ModelOpClass op_class;
  double flops;         /* FLOP; 0 for MODEL_OP_ELEMENTWISE (memory-bound, not model FLOPs) */
  double bytes;         /* HBM bytes read + written */
  double bwd_factor;    /* its backward's FLOPs and bytes as a multiple of its own, when not
                         * the default (0: 2×, FlashAttention 2.5× FLOPs): 1 for a GEMM with
                         * LoRA's frozen weights (input gradient only) and QLoRA's
                         * dequantization (redone once); 0.4 for LoRA's scale-and-add;
                         * 1 for dropout and the residual add, 1.5 for softmax and GELU
                         * (graph_layer.c) */
  HwKernelShape shape;  /* for the kernel model (hardware/kernel.h): a GEMM's m×n (inner k)
                         * × batch, flash attention's sequence, head dim and mask; PLAIN
                         * for element-wise ops */
  double host_ops;      /* PyTorch ops the host issues for this kernel (each a call through
                         * the dispatcher and a launch; models/plan/executor.c charges the
                         * framework's host time for each): an eager op chain that stepsim
                         * times as one kernel counts each op (HF's RMSNorm: 8); 0: one */
  gboolean addmm;       /* a GEMM adding a bias in the same call: a biased nn.Linear, which
                         * ATen runs as aten.addmm (aten/src/ATen/native/Linear.cpp linear:
                         * addmm for a 2-D or contiguous 3-D input with a bias), not aten.mm */
} ModelOp;

/* The PyTorch ops the host issues for `op` (op->host_ops, at least 1). */
double model_op_host_ops (const ModelOp *op);

typedef enum
{
  MODEL_TENSOR_INPUT,     /* the block's input (kept by the previous block or the caller) */
  MODEL_TENSOR_GEMM,      /* a matrix product's output */
  MODEL_TENSOR_ATTENTION, /* the attention kernel's output or logsumexp */
  MODEL_TENSOR_POINTWISE, /* point-wise or reduction kernels (norms, activations, softmax) */
} ModelTensorSource;

typedef struct
{
  const char *name;          /* static */
  double bytes;              /* B */
  ModelTensorSource source;  /* its recompute class */
  gboolean selective;        /* re-created by selective recompute (the attention core, or a
                              * module of cost.h's recompute_modules) */
  gint from;                 /* compile: the tensor it is recomputed from (index), or -1 when
                              * the backward needs it materialized (kept as it is) */
} ModelGraphTensor;

#define MODEL_GRAPH_MAX_SAVED 6
#define MODEL_GRAPH_MAX_FREES 4

typedef struct
{
  const char *name;          /* static */
  guint out;                 /* tensor it produces */
  guint saved[MODEL_GRAPH_MAX_SAVED]; /* tensors it saves for backward */
  guint n_saved;
  guint writes[MODEL_GRAPH_MAX_SAVED]; /* further tensors it produces (a fused QKV's k and
                                        * v, a norm's fp32 copy and rstd, the logsumexp) */
  guint n_writes;
  guint frees[MODEL_GRAPH_MAX_FREES]; /* tensors whose last forward use it is: released
                                       * after it unless saved */
  guint n_frees;
  gboolean launches;         /* runs `kernel`; FALSE: a view, a mask, a cast left out */
  ModelOp kernel;
  gboolean selective;        /* rerun by selective recompute (Korthikanti et al. 2022 §5;
                              * Megatron's recompute_modules) */
  guint mm_call;             /* 1-based position of its kernel among the block forward's
                              * plain matrix multiplies (a GEMM of batch 1 without a bias:
                              * aten.mm), as model_graph_op_kernel numbers them; 0 for any
                              * other op */
} ModelGraphOp;

typedef struct
{
  GArray *tensors;           /* ModelGraphTensor */
  GArray *ops;               /* ModelGraphOp, forward order */
  guint n_mm;                /* plain matrix multiplies numbered so far (mm_call) */
} ModelGraph;

typedef enum
{
  MODEL_GRAPH_KEEP_ALL,       /* no checkpointing */
  MODEL_GRAPH_KEEP_NON_SELECTIVE, /* selective: all but the tensors marked selective */
  MODEL_GRAPH_KEEP_MATMUL,    /* op-level selective: block input, attention outputs and the
                               * GEMM outputs but those of even-numbered plain mms */
  MODEL_GRAPH_KEEP_MATMUL_SAVED, /* of those, the ones eager also saves (what op-level
                                  * selective keeps that no-checkpointing would keep too) */
} ModelGraphPolicy;

ModelGraph *model_graph_new (void);
void model_graph_free (ModelGraph *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelGraph, model_graph_free)

/* A copy of `g` whose tensor i holds `bytes` / divisors[i] B (divisors: g->tensors->len
 * entries, each > 0; NULL: every tensor unchanged), everything else as it is — the
 * tensors' names, sources, `from` and attention-core marks, and each op exactly: its out,
 * saved, writes, frees, kernel, `launches` and `selective`. The sharders
 * (model_tp_shard_graph, model_cp_shard_graph) build a rank's graph with it, so the
 * liveness model_graph_transient_peak folds over is the original's. New graph (caller
 * frees); NULL only on a programming error (g NULL, a divisor <= 0). */
ModelGraph *model_graph_copy_scaled (const ModelGraph *g, const double *divisors);

/* Adds a tensor of `bytes` B (index returned). `from` < 0: not recomputable by compile. */
guint model_graph_tensor (ModelGraph *g, const char *name, double bytes,
                          ModelTensorSource source, gint from);
/* Adds an op producing `out` that saves the n tensors of `saved` (n <= MODEL_GRAPH_MAX_SAVED;
 * entries naming no tensor, G_MAXUINT, are skipped). */
void model_graph_op (ModelGraph *g, const char *name, guint out, const guint *saved, guint n);
/* Marks tensor `t` re-created by selective recompute (the attention core's, or a recompute
 * module's). */
void model_graph_mark_selective (ModelGraph *g, guint t);
/* The last op added launches `kernel` (copied). A GEMM kernel of batch <= 1 without a bias
 * (not addmm) is the block's next plain matrix multiply: the op's mm_call is set to its
 * 1-based count. */
void model_graph_op_kernel (ModelGraph *g, const ModelOp *kernel);
/* The last op added also produces the n tensors of `t` (n <= MODEL_GRAPH_MAX_SAVED;
 * G_MAXUINT entries skipped). */
void model_graph_op_writes (ModelGraph *g, const guint *t, guint n);
/* The last op added is the last forward use of the n tensors of `t` (n <=
 * MODEL_GRAPH_MAX_FREES; G_MAXUINT entries skipped): each is released after it unless a
 * policy keeps it for the backward. A tensor nothing frees lives to the end of the block
 * (the block's output). */
void model_graph_op_frees (ModelGraph *g, const guint *t, guint n);
/* The last op added is rerun by selective recompute. */
void model_graph_op_selective (ModelGraph *g);
/* Every tensor from index `first_tensor` and every op from `first_op` on (those a block
 * added since: a checkpointed module) re-created and rerun by selective recompute. */
void model_graph_mark_block_selective (ModelGraph *g, guint first_tensor, guint first_op);

/* TRUE when op `j` is rerun before the backward under `policy`: KEEP_ALL none; NON_SELECTIVE the
 * attention-core ops; KEEP_MATMUL(_SAVED) the ops whose output is made by a point-wise or
 * reduction kernel and the even-numbered plain mms (the attention kernel's outputs and the
 * other GEMMs' are kept). */
gboolean model_graph_op_reruns (const ModelGraph *g, guint j, ModelGraphPolicy policy);

/* The forward's transient peak, B: the largest sum, over the ops in order, of the tensors
 * live at that op (born at the first op naming them, or at the start for the block input;
 * alive through the op that frees them, or to the end) that the eager forward does not
 * save (model_graph_saved's KEEP_ALL set, compile-rewritten when `compile`). *at_op (may be
 * NULL) gets the index of the first op reaching it (0 for an empty graph). */
double model_graph_transient_peak (const ModelGraph *g, gboolean compile, guint *at_op);

/* The B of the tensors model_graph_saved keeps under `policy` whose name is one of `names`
 * (NULL-terminated). */
double model_graph_saved_named (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                                const char *const *names);

/* The tensors kept for the backward under `policy`, each once, in index order: fills
 * `sizes` (B, capacity `max`, may be NULL) with at most `max` and returns their total B.
 * `compile`: rewrite by the partitioner rule above before applying the policy. *n_out
 * (may be NULL) gets the count. Tensors of 0 B are skipped. */
double model_graph_saved (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                          double *sizes, guint max, guint *n_out);

/* The tensors the eager forward saves (KEEP_ALL's set) that `policy` does not keep, each
 * once, in index order: what the policy's recompute re-creates (NON_SELECTIVE: the
 * selective ones; KEEP_MATMUL_SAVED: the point-wise ones and the even mms'). Fills `sizes` as
 * model_graph_saved; returns their total B, model_graph_saved (KEEP_ALL) − model_graph_saved
 * (`policy`) for a policy keeping only saved tensors (not KEEP_MATMUL, which keeps unsaved
 * ones too). Each of these tensors is its own allocation in PyTorch, as the kept ones are. */
double model_graph_recreated (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                              double *sizes, guint max, guint *n_out);
