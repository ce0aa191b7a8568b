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
 *  - selective (Korthikanti et al. 2022 §5): the attention core's tensors are recomputed;
 *  - op-level selective (torchtitan `ac_mode: selective, selective_ac_option: op`,
 *    torchtitan/models/llama3/infra/parallelize.py _save_list): outputs of matmuls and of
 *    the attention kernel are kept, everything else is recomputed from them and from the
 *    block input. (torchtitan also recomputes every second mm; not modelled.)
 *
 * Units: bytes (B), doubles. Ownership: a ModelGraph owns its arrays; free with
 * model_graph_free (NULL is a no-op).
 */
#pragma once

#include <glib.h>

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
  gboolean attn_core;        /* re-created by Korthikanti's selective recompute */
  gint from;                 /* compile: the tensor it is recomputed from (index), or -1 when
                              * the backward needs it materialized (kept as it is) */
} ModelGraphTensor;

#define MODEL_GRAPH_MAX_SAVED 6

typedef struct
{
  const char *name;          /* static */
  guint out;                 /* tensor it produces */
  guint saved[MODEL_GRAPH_MAX_SAVED]; /* tensors it saves for backward */
  guint n_saved;
} ModelGraphOp;

typedef struct
{
  GArray *tensors;           /* ModelGraphTensor */
  GArray *ops;               /* ModelGraphOp, forward order */
} ModelGraph;

typedef enum
{
  MODEL_GRAPH_KEEP_ALL,       /* no checkpointing */
  MODEL_GRAPH_KEEP_NON_CORE,  /* selective: all but the attention core */
  MODEL_GRAPH_KEEP_MATMUL,    /* op-level selective: block input, GEMM and attention outputs */
  MODEL_GRAPH_KEEP_MATMUL_SAVED, /* of those, the ones eager also saves (what op-level
                                  * selective keeps that no-checkpointing would keep too) */
} ModelGraphPolicy;

ModelGraph *model_graph_new (void);
void model_graph_free (ModelGraph *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelGraph, model_graph_free)

/* Adds a tensor of `bytes` B (index returned). `from` < 0: not recomputable by compile. */
guint model_graph_tensor (ModelGraph *g, const char *name, double bytes,
                          ModelTensorSource source, gint from);
/* Adds an op producing `out` that saves the n tensors of `saved` (n <= MODEL_GRAPH_MAX_SAVED;
 * entries naming no tensor, G_MAXUINT, are skipped). */
void model_graph_op (ModelGraph *g, const char *name, guint out, const guint *saved, guint n);
/* Marks tensor `t` as part of the attention core (selective recompute). */
void model_graph_mark_core (ModelGraph *g, guint t);

/* The tensors kept for the backward under `policy`, each once, in index order: fills
 * `sizes` (B, capacity `max`, may be NULL) with at most `max` and returns their total B.
 * `compile`: rewrite by the partitioner rule above before applying the policy. *n_out
 * (may be NULL) gets the count. Tensors of 0 B are skipped. */
double model_graph_saved (const ModelGraph *g, ModelGraphPolicy policy, gboolean compile,
                          double *sizes, guint max, guint *n_out);
