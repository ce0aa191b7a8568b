/* models/ops/cost_ends.c — the blocks around the layers (cost.h): the embedding lookup, the head
 * (LM head and loss, or BERT's pooler and classifier), and the step totals. Notation and
 * byte conventions as in models/ops/cost.c. */
#include "config.h"
#include "models/ops/cost-private.h"

#include <math.h>
#include <string.h>

void
model_cost_embedding_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *cost)
{
  memset (cost, 0, sizeof *cost);
  g_return_if_fail (cost_params_ok (arch, p));
  Dims d = cost_dims_of (arch, p);
  /* Gather: read int64 ids and T rows of the table, write e·T·h. Backward (2×) reads the
   * gradient and ids and scatter-adds into at most T rows of the embedding gradient. */
  ModelOp gather = cost_elementwise_op ("embed_gather",
                                        8 * d.T + d.w * d.T * d.h + d.e * d.T * d.h);
  /* with HF's eager rotary the model's forward also makes the cos/sin tables once
   * (transformers >= 4.45 LlamaRotaryEmbedding.forward: the expands, the matmul, transpose,
   * cat, cos, sin, their scalings and casts: 10 small ops) */
  gather.host_ops = 1 + (d.rotary && d.eager ? 10 : 0);
  cost_add_kernel (&cost->fwd, &gather);
  if (arch->learned_positions) /* + wpe rows 0..s−1, broadcast over the batch */
    cost_add_elementwise (&cost->fwd, "pos_embed", d.w * d.s * d.h + 2 * d.e * d.T * d.h);
  gboolean bert = arch->family == MODEL_FAMILY_BERT;
  if (bert) /* + token-type rows, then LayerNorm (cost->h) */
    {
      cost_add_elementwise (&cost->fwd, "type_embed",
                            8 * d.T + d.w * 2 * d.h + 2 * d.e * d.T * d.h);
      cost_add_elementwise (&cost->fwd, "embed_norm", 2 * d.e * d.T * d.h + d.w * d.norm_w);
    }
  if (d.drop > 0)
    cost_add_elementwise (&cost->fwd, "embed_dropout", 2 * d.e * d.T * d.h + d.T * d.h);
  if (!d.frozen) /* a frozen embedding needs no gradient, nor does anything before it */
    cost_mirror_backward (&cost->fwd, &cost->bwd, 0);
  cost->act_saved = 8 * d.T + d.drop * d.T * d.h; /* token ids (int64), dropout mask */
  if (bert) /* type ids, LayerNorm input, its fp32 mean and rstd */
    cost->act_saved += 8 * d.T + d.e * d.T * d.h + 8 * d.T;
  cost->act_checkpoint = 8 * d.T;
}

ModelBlockCost
model_cost_embedding (const ModelArch *arch, const ModelCostParams *p)
{
  ModelBlockCost cost;
  model_cost_embedding_to (arch, p, &cost);
  return cost;
}

/* BertPooler (dense h×h + tanh on the [CLS] token) + dropout + classifier + loss; cost.h. */
static ModelBlockCost
bert_head (const ModelArch *arch, const Dims *d)
{
  ModelBlockCost cost;
  memset (&cost, 0, sizeof cost);
  double n = (double) arch->num_labels, B = d->b;
  cost_add_gemm (&cost.fwd, d, "pooler", B, d->h, d->h, d->h * d->h + d->h);
  cost_add_elementwise (&cost.fwd, "pooler_tanh", 2 * d->e * B * d->h);
  cost_add_gemm (&cost.fwd, d, "classifier", B, d->h, n, d->h * n + n);
  cost_add_elementwise (&cost.fwd, "cross_entropy", d->e * B * n + 2 * 4 * B * n);
  cost_mirror_backward (&cost.fwd, &cost.bwd, 0);
  cost.fwd.workspace = 4 * B * n;
  cost.bwd.workspace = 2 * 4 * B * n;
  cost.act_saved = d->e * d->T * d->h + 2 * d->e * B * d->h + d->drop * B * d->h
                   + d->sm_in * 4 * B * n; /* log_softmax's input, PyTorch <= 1.10 */
  cost.act_checkpoint = d->e * d->T * d->h;
  return cost;
}

/* What the loss keeps and its transient peaks, B, for T·V logits (cost.h): `saved` from the
 * forward to the backward, `fwd` and `bwd` on top of it inside each pass, and the tensors
 * those peaks are made of (allocation order; Σ fwd_t = fwd, Σ bwd_t = bwd): PyTorch
 * allocates each on its own, and the caching allocator reuses the forward's freed blocks
 * for the backward's tensors one by one (ModelPass.workspace_tensors). `traffic`: the
 * forward's HBM bytes; `bwd_traffic` the backward's, 0 where it mirrors the forward's
 * (cost_mirror_backward's default). */
typedef struct
{
  double saved, fwd, bwd, traffic, bwd_traffic;
  double fwd_t[MODEL_COST_MAX_WORKSPACE_TENSORS], bwd_t[MODEL_COST_MAX_WORKSPACE_TENSORS];
  guint n_fwd, n_bwd;
} LossMemory;

/* Appends `copies` tensors of `bytes` (> 0) to list `t` of `*n` entries, adding `bytes` to
 * the running total `*sum`; past MODEL_COST_MAX_WORKSPACE_TENSORS the last entry takes the
 * rest (a chunked loss of more than 32 chunks: its chunk list then ends in one block). */
static void
loss_push (double *t, guint *n, double *sum, double bytes, guint copies)
{
  for (guint i = 0; i < copies && bytes > 0; i++)
    {
      if (*n < MODEL_COST_MAX_WORKSPACE_TENSORS)
        t[(*n)++] = bytes;
      else
        t[*n - 1] += bytes;
      *sum += bytes;
    }
}

/* The PyTorch ops the host issues for the loss (ModelOp.host_ops): vocab_parallel the 22 of
 * Megatron's _VocabParallelCrossEntropy.forward at tp 1 (the cast, max, three all-reduces,
 * the target mask's three comparisons, clone, subtractions, two index_puts, arange, the
 * gather, clone, exp, sum, log, div_; nanotron's _ShardedCrossEntropy.forward, the same
 * code of 2020, issues the same ops); upcast `logits.float()`,
 * log_softmax and nll_loss (F.cross_entropy's two); upcast_shift also the contiguous
 * shifted logits and labels (transformers 4.46 loss_utils.py ForCausalLMLoss); plain the
 * cross-entropy's two; chunked those three per chunk (torchtune CEWithChunkedOutputLoss);
 * fused one kernel per chunk; MPT's flash-attn cross-entropy one; te_parallel the four of
 * Transformer Engine 2.9 triton/cross_entropy.py cross_entropy_forward (two torch.zeros, the
 * online_softmax_kernel and cross_entropy_kernel launches); chunked_head (torchtitan
 * ChunkedLossWrapper.__call__) eight a chunk from Python (the chunk's lm_head mm beyond the
 * head GEMM's one, `.float()`, log_softmax, nll_loss, the division by the valid tokens,
 * detach, the add into total_loss, GradAccumulator.add's copy) and two zeros (total_loss,
 * the accumulator's buffer): 8·n + 1; the chunks' backward ops run from C++. */
static double
loss_host_ops (const ModelCostParams *p, gboolean mpt)
{
  double chunks = MAX (p->loss_chunks, 1);
  switch (p->loss)
    {
    case MODEL_COST_LOSS_UPCAST:
      return mpt ? 1 : 3;
    case MODEL_COST_LOSS_UPCAST_SHIFT:
      return 5;
    case MODEL_COST_LOSS_PLAIN:
      return 2;
    case MODEL_COST_LOSS_VOCAB_PARALLEL:
    case MODEL_COST_LOSS_SHARDED:
      return 22;
    case MODEL_COST_LOSS_TE_PARALLEL:
      return 4;
    case MODEL_COST_LOSS_CHUNKED:
      return 3 * chunks;
    case MODEL_COST_LOSS_FUSED:
      return chunks;
    case MODEL_COST_LOSS_CHUNKED_HEAD:
      return 8 * chunks + 1;
    }
  return 1;
}

/* A LossMemory of `saved` and `traffic`, no transients yet (loss_fwd / loss_bwd add them). */
static LossMemory
loss_new (double saved, double traffic)
{
  LossMemory m;
  memset (&m, 0, sizeof m);
  m.saved = saved;
  m.traffic = traffic;
  return m;
}

static void
loss_fwd (LossMemory *m, double bytes, guint copies)
{
  loss_push (m->fwd_t, &m->n_fwd, &m->fwd, bytes, copies);
}

static void
loss_bwd (LossMemory *m, double bytes, guint copies)
{
  loss_push (m->bwd_t, &m->n_bwd, &m->bwd, bytes, copies);
}

/* Σ B of every tensor of `g` (graph.h). */
static double
graph_bytes (const ModelGraph *g)
{
  double sum = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    sum += g_array_index (g->tensors, ModelGraphTensor, i).bytes;
  return sum;
}

/* HF transformers v4.46.0–v4.48.x: LlamaForCausalLM.forward (and every *ForCausalLM that
 * calls self.loss_function) returns `logits = self.lm_head(hidden_states[:,
 * -num_logits_to_keep:, :])` in the compute dtype and calls loss/loss_utils.py
 * ForCausalLMLoss(logits, labels, vocab_size):
 *   logits = logits.float()                          fp32 copy, 4·T·V (_to_copy saves nothing)
 *   shift_logits = logits[..., :-1, :].contiguous()  a slice is a view; contiguous() copies
 *                                                    its b·(s−1) rows: 4·T'·V, T' = b·(s−1)
 *   fixed_cross_entropy → F.cross_entropy(shift_logits.view(-1, V), shift_labels)
 *                                                    _log_softmax saves its result 4·T'·V
 *                                                    (derivatives.yaml: result); nll_loss
 *                                                    saves its input, the same tensor
 * The saved tensors are read by identity (model_graph_saved: the log-probabilities once).
 * Forward peak: the fp32 copy and the shifted copy are locals of ForCausalLMLoss, alive
 * until it returns, and the model output (CausalLMOutputWithPast.logits) holds the e-byte
 * logits until Trainer.compute_loss returns, so when nll_loss runs all four tensors of
 * the graph are allocated: e·T·V + 4·T·V + 4·T'·V + 4·T'·V (14 B a logit in bf16).
 * Backward (the engine frees a node's saved tensors once it has run): nll_loss_backward's
 * gradient (zeros + scatter, 4·T'·V) and _log_softmax_backward_data's output (4·T'·V)
 * beside the saved result: 12·T'·V; then SliceBackward0 (slice_backward: zeros of the full
 * 4·T·V, the shifted gradient copied in) beside the shifted gradient: 4·T·V + 4·T'·V;
 * then ToCopyBackward0's e-byte gradient beside it: 4·T·V + e·T·V. transformers 4.49
 * (PR #35646) pads the labels instead and copies no logits: the upcast loss. PyTorch <=
 * 1.10 log_softmax also keeps its input (d->sm_in), the shifted copy. */
static LossMemory
hf_shift_loss_memory (const Dims *d)
{
  double e = d->e, V = d->V, T = d->T, Ts = d->b * (d->s - 1);
  g_autoptr (ModelGraph) g = model_graph_new ();
  /* the head GEMM's own saved tensors (its input, the cast weight) are the head's, below */
  guint logits = model_graph_tensor (g, "logits", e * T * V, MODEL_TENSOR_GEMM, -1);
  model_graph_op (g, "lm_head", logits, NULL, 0);
  guint f32 = model_graph_tensor (g, "logits_fp32", 4 * T * V, MODEL_TENSOR_POINTWISE, -1);
  model_graph_op (g, "to_fp32", f32, NULL, 0);
  guint shift = model_graph_tensor (g, "shift_logits", 4 * Ts * V, MODEL_TENSOR_POINTWISE, -1);
  model_graph_op (g, "contiguous", shift, NULL, 0);
  guint lp = model_graph_tensor (g, "log_probs", 4 * Ts * V, MODEL_TENSOR_POINTWISE, -1);
  guint ls_saved[2] = { lp, d->sm_in > 0 ? shift : G_MAXUINT };
  model_graph_op (g, "log_softmax", lp, ls_saved, 2);
  guint loss = model_graph_tensor (g, "loss", 0, MODEL_TENSOR_POINTWISE, -1);
  model_graph_op (g, "nll_loss", loss, &lp, 1);
  double saved = model_graph_saved (g, MODEL_GRAPH_KEEP_ALL, FALSE, NULL, 0, NULL);
  double fwd_peak = graph_bytes (g);
  double bwd_peak = MAX (saved + 2 * 4 * Ts * V, MAX (4 * T * V + 4 * Ts * V,
                                                      4 * T * V + e * T * V));
  /* traffic: the upcast's (read e, write 4, log_softmax's read) plus the copy's read + write */
  LossMemory m = loss_new (saved, e * T * V + 2 * 4 * T * V + 2 * 4 * Ts * V);
  /* forward transients in allocation order: the e-byte logits, the fp32 copy, the shifted
   * copy unless log_softmax saves it (d->sm_in); backward at its peak: nll_loss_backward's
   * gradient, then _log_softmax_backward_data's output. When a later phase is the peak
   * (sequences of 1 or 2 tokens: the saved result is freed by then), one block of the
   * peak above `saved`. */
  loss_fwd (&m, e * T * V, 1);
  loss_fwd (&m, 4 * T * V, 1);
  loss_fwd (&m, d->sm_in > 0 ? 0 : 4 * Ts * V, 1);
  if (bwd_peak == saved + 2 * 4 * Ts * V)
    loss_bwd (&m, 4 * Ts * V, 2);
  else
    loss_bwd (&m, bwd_peak - saved, 1);
  g_assert (fabs (m.fwd - (fwd_peak - saved)) <= 1e-9 * fwd_peak
            && fabs (m.bwd - (bwd_peak - saved)) <= 1e-9 * bwd_peak);
  return m;
}

static LossMemory
loss_memory (const Dims *d, const ModelCostParams *p, gboolean mpt)
{
  double TV = d->T * d->V, e = d->e, n = p->loss_chunks > 1 ? (double) p->loss_chunks : 1.0;
  guint chunks = p->loss_chunks > 1 ? p->loss_chunks : 1;
  LossMemory m;
  switch (p->loss)
    {
    case MODEL_COST_LOSS_PLAIN:
      /* F.cross_entropy on e-byte logits: log_softmax keeps its e-byte result; backward
       * holds nll's gradient and log_softmax's, e bytes each. */
      m = loss_new (e * TV, 3 * e * TV);
      loss_fwd (&m, e * TV, 1);
      loss_bwd (&m, e * TV, 2);
      return m;
    case MODEL_COST_LOSS_CHUNKED:
      /* torchtune CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py): the
       * model returns n e-byte logit chunks (TransformerDecoder.chunked_output), each
       * upcast and cross-entropied on its own. Eager, every chunk's log_softmax keeps its
       * fp32 result (4·T·V in all) and the transients are one chunk's (its fp32 copy in the
       * forward; nll's and log_softmax's gradients in the backward) with the e-byte chunks
       * the list holds through the forward (n tensors: `[self.output(chunk) for chunk in
       * h.chunk(n, dim=1)]`). Compiled (the recipe compiles compute_cross_entropy,
       * training/_compile.py compile_loss), `F.cross_entropy(logits.float(), …)` is
       * decomposed (log_softmax: amax, exp-sum-log, subtract; nll_loss: a gather) and
       * Inductor fuses it: two reductions read the e-byte chunk, the gather inlines the
       * point-wise log-probability, so the forward writes no T·V/n buffer; the
       * partitioner saves the e-byte input chunk (the upcast is recomputable) and the
       * reductions' per-token outputs (ban_recompute_reductions), and the backward's one
       * point-wise kernel writes the chunk's gradient in the chunk's dtype (the cast's
       * backward fused in): e·T·V/n. That gradient is made beside all n saved chunks:
       * autograd's engine pops the ready node of highest sequence_nr first (torch/csrc/
       * autograd/engine.h ReadyQueue), and the loss's nodes were made after the model's,
       * so every chunk's CompiledFunctionBackward runs before the head's first mm
       * backward, the last chunk's first; AOTAutograd clears the node's saved tensors and
       * steals its argument list (runtime_wrappers.py: ctx.maybe_clear_saved_tensors(),
       * call_func_at_runtime_with_args(..., steal_args=True)), so the chunk dies inside
       * the compiled backward, but after the kernel that reads it; Inductor writes no
       * output into a graph input (wrapper.py can_reuse), and a donated buffer
       * (functorch config donated_buffer, 2.6) is a saved tensor aliasing no forward
       * input, which the chunk is not. Measured, torchtune's README table (Llama 3.2 3B,
       * 8,192 tokens, compiled chunked loss under checkpointing and activation offload):
       * LoRA 8.5 GiB and QLoRA 4.6 GiB peak active, each the model states plus the e-byte
       * chunks (1.96 GiB) within 0.05 GiB: no fp32 chunk beside them, nor, it seems, the
       * chunk's gradient; that gap is open (doc/held-out-memory.md, M14g). */
      if (p->compile)
        {
          m = loss_new (e * TV + 4 * d->T, e * TV + 2 * e * TV);
          loss_bwd (&m, e * TV / n, 1);
          return m;
        }
      m = loss_new (4 * TV, e * TV + 2 * 4 * TV);
      loss_fwd (&m, e * TV / n, chunks);
      loss_fwd (&m, 4 * TV / n, 1);
      loss_bwd (&m, 4 * TV / n, 2);
      return m;
    case MODEL_COST_LOSS_FUSED:
      /* fused linear + cross-entropy (Liger LigerFusedLinearCrossEntropyLoss; Megatron's
       * fused path): logits exist one chunk at a time in fp32, the loss keeps a logsumexp */
      m = loss_new (4 * d->T, 2 * 4 * TV);
      loss_fwd (&m, 4 * TV / n, 1);
      loss_bwd (&m, 4 * TV / n, 2);
      return m;
    case MODEL_COST_LOSS_CHUNKED_HEAD:
      /* torchtitan components/loss.py ChunkedLossWrapper.__call__ (default num_chunks 8;
       * since 786e26f8e, 2026-04-27, "ChunkedCELoss", renamed in 9530a874d): the model
       * returns the final norm's hidden states (_skip_lm_head), split into n slices of T/n
       * tokens (views), each detached into a leaf; GradAccumulator(hidden_states,
       * dtype=torch.float32) allocates the hidden states' gradient, 4·T·h, filled slice by
       * slice and handed to hidden_states.backward() once the loop ends: it lives through
       * the head's backward, counted here as saved. Each slice: `logits = lm_head(h_chunk)`
       * (e·T·V/n, bound until the next slice), cross_entropy_loss's `pred.float()` (4·T·V/n,
       * freed when F.cross_entropy returns) and log_softmax's saved result (4·T·V/n); then
       * `chunk_loss.backward()` at once: nll_loss_backward's gradient and
       * _log_softmax_backward_data's output (4·T·V/n each) beside the saved result and the
       * logits, the slice's peak, 12 + e B a logit of T/n tokens; the cast's and the mm's
       * backward follow with less. Nothing of a slice outlives it (its weight gradient is
       * added into lm_head's .grad: plan_step.c head_grad_piece), so no logits are saved
       * across the step; the head's backward here has no transient of its own. Traffic
       * as the upcast loss's, slice by slice. */
      m = loss_new (4 * d->T * d->h, e * TV + 2 * 4 * TV);
      loss_fwd (&m, e * TV / n, 1);
      loss_fwd (&m, 4 * TV / n, 3);
      return m;
    case MODEL_COST_LOSS_UPCAST_SHIFT:
      return hf_shift_loss_memory (d);
    case MODEL_COST_LOSS_VOCAB_PARALLEL:
      /* Megatron-LM megatron/core/tensor_parallel/cross_entropy.py
       * _VocabParallelCrossEntropy: calculate_logits_max upcasts the logits (.float(), a new
       * 4·T·V), calculate_predicted_logits subtracts the max in place and exponentiates in
       * place (torch.exp(x, out=x)), calculate_cross_entropy_loss divides in place, and
       * that buffer is what ctx.save_for_backward keeps: 4·T·V saved, the only copy. The
       * e-byte logits are alive beside it until the loss returns (GPTModel._postprocess
       * holds them; no autograd node saves them): fwd e·T·V. Backward: the gradient is
       * the saved softmax modified in place (prepare_gradient_calculation_operands,
       * calculate_gradients: grad_2d[...] -= ..., grad_input.mul_) and the cast's backward
       * (ToCopyBackward0) writes its e-byte copy beside it: bwd e·T·V. Traffic, eager
       * (--cross-entropy-loss-fusion off, Megatron's default): the cast reads e and
       * writes 4, max reads 4, the in-place subtract, exp and divide read and write 4
       * each, the sum reads 4 (e + 36 a logit); backward the in-place multiply (8) and the
       * cast (4 + e). */
      m = loss_new (4 * TV, (e + 36) * TV);
      m.bwd_traffic = (12 + e) * TV;
      loss_fwd (&m, e * TV, 1);
      loss_bwd (&m, e * TV, 1);
      return m;
    case MODEL_COST_LOSS_SHARDED:
      /* nanotron (src/nanotron/models/llama.py LlamaModel.forward_with_hidden_states: the
       * model returns cast_to_fp32(logits), its e-byte logits die with the forward's frame;
       * LlamaForTraining.forward holds the fp32 logits until the loss returns; Loss.forward
       * -> parallel/tensor_parallel/functional.py sharded_cross_entropy, whose .to(float)
       * is then a no-op): _ShardedCrossEntropy.forward subtracts the max out of place
       * (`sharded_logits = sharded_logits - logits_max.unsqueeze(-1)`, a new 4·T·V), then
       * torch.exp(x, out=x) and exp_logits.div_ in place, and saves that buffer: 4·T·V
       * saved, the fp32 logits beside it (fwd 4·T·V). Backward as Megatron's: the saved
       * softmax is the gradient in place, the cast's backward writes its e-byte copy (bwd
       * e·T·V). Traffic as vocab_parallel's: the subtraction reads 4 and writes 4 where
       * Megatron's in-place one does the same. */
      m = loss_new (4 * TV, (e + 36) * TV);
      m.bwd_traffic = (12 + e) * TV;
      loss_fwd (&m, 4 * TV, 1);
      loss_bwd (&m, e * TV, 1);
      return m;
    case MODEL_COST_LOSS_TE_PARALLEL:
      /* Transformer Engine's parallel_cross_entropy, which Megatron runs under
       * cross_entropy_loss_fusion with cross_entropy_fusion_impl "te" (Megatron-LM
       * language_module.py compute_language_model_loss; Megatron-Bridge's performance
       * scripts set both, scripts/performance/utils/overrides.py
       * _set_common_perf_overrides). TE 2.9 pytorch/triton/cross_entropy.py:
       * cross_entropy_forward's online_softmax_kernel reads the e-byte logits once (a row's
       * max, sum and target logit, 3 fp32 a row), cross_entropy_kernel reads them again and
       * writes the gradient over them in place; CrossEntropyFunction.forward saves that
       * buffer (ctx.save_for_backward(_input)): the logits themselves, e·T·V saved, no
       * copy, no transient. Backward: element_mul_kernel scales it by the per-token
       * gradient in place (Megatron's loss is per token, so torch.equal(grad_output, 1.0)
       * is false and the multiply runs) and returns it as the logits' gradient: no new
       * tensor. Traffic 3e a logit forward, 2e backward (the rows' 3·4 B are below it). */
      m = loss_new (e * TV, 3 * e * TV);
      m.bwd_traffic = 2 * e * TV;
      return m;
    case MODEL_COST_LOSS_UPCAST:
    default:
      if (mpt)
        {
          /* MPT as llm-foundry trains it: ComposerMPTCausalLM's default loss_fn
           * 'fused_crossentropy' is flash-attn's CrossEntropyLoss (flash_attn/losses/
           * cross_entropy.py, a Triton kernel on the e-byte logits: reads them once, keeps
           * a per-row logsumexp, writes an e-byte gradient in backward) — no fp32 copy. */
          m = loss_new (0, e * TV);
          loss_fwd (&m, e * TV, 1);
          loss_bwd (&m, e * TV, 2);
          return m;
        }
      /* HF ForCausalLMLoss (transformers loss/loss_utils.py) and torchtune's model output
       * (`self.output(h).float()`) with nn.CrossEntropyLoss: logits.float() saves nothing
       * (a cast), log_softmax keeps its fp32 result (4·T·V) for the backward
       * (derivatives.yaml _log_softmax: result), the fp32 logits themselves are freed once
       * the loss holds only that. Forward peak: the fp32 logits beside the result, and in HF
       * the e-byte logits the model output still holds (e·T·V + 4·T·V on top; allocated
       * e-byte first). Backward: nll_loss_backward's fp32 gradient (zeros + scatter) and
       * _log_softmax_backward_data's output coexist with the result: 8·T·V on top, 12 B
       * a logit in all; two tensors of 4·T·V, so the forward's freed fp32 copy serves the
       * first (allocator.h, "the loss head"). */
      m = loss_new (4 * TV, e * TV + 2 * 4 * TV);
      loss_fwd (&m, e * TV, 1);
      loss_fwd (&m, 4 * TV, 1);
      loss_bwd (&m, 4 * TV, 2);
      return m;
    }
}

/* Bytes of the logits the training loop passed to the loss, when it still holds them while
 * loss.backward() runs (p->logits_kept). torchtune before v0.3
 * (recipes/lora_finetune_single_device.py train() of v0.1.0: `logits = self._model(..)`,
 * the model returning `self.output(h).float()`, torchtune/modules/transformer.py; then
 * `logits = logits[..., :-1, :].contiguous()` and `logits = logits.transpose(1, 2)`, passed
 * to nn.CrossEntropyLoss and still bound at `loss.backward()`): the shifted fp32 copy,
 * 4·T·V (b·(s−1)·V exactly; the one-token difference is below the allocator's rounding).
 * pytorch/torchtune#1235 added `del logits` before the backward ("free logits otherwise
 * it peaks backward memory"). Upcast loss: the fp32 logits, which otherwise die once
 * log_softmax holds its result; plain, chunked or vocab_parallel: the e-byte logits (the
 * chunk list; vocab_parallel's fp32 copy is the loss's own saved buffer); sharded: the fp32
 * logits (nanotron's model output); fused: there are no logits; te_parallel: they are the
 * loss's saved buffer already. They live from the head's forward to the end of its backward
 * (the variable is rebound after the next forward; that forward's peak is below the head's).
 * MPT's upcast loss (flash-attn's cross-entropy, loss_memory) takes the e-byte logits. */
static double
kept_logits (const Dims *d, const ModelCostParams *p, gboolean mpt)
{
  if (!p->logits_kept)
    return 0;
  switch (p->loss)
    {
    case MODEL_COST_LOSS_FUSED:
    case MODEL_COST_LOSS_CHUNKED_HEAD: /* one slice's logits at a time, within the loss */
    case MODEL_COST_LOSS_TE_PARALLEL: /* the saved buffer is the logits (loss_memory) */
      return 0;
    case MODEL_COST_LOSS_PLAIN:
    case MODEL_COST_LOSS_CHUNKED:
    case MODEL_COST_LOSS_VOCAB_PARALLEL:
      return d->e * d->T * d->V;
    case MODEL_COST_LOSS_SHARDED:
      return 4 * d->T * d->V;
    case MODEL_COST_LOSS_UPCAST:
    case MODEL_COST_LOSS_UPCAST_SHIFT:
    default:
      return (mpt ? d->e : 4) * d->T * d->V;
    }
}

void
model_cost_head_to (const ModelArch *arch, const ModelCostParams *p, ModelBlockCost *cost)
{
  memset (cost, 0, sizeof *cost);
  g_return_if_fail (cost_params_ok (arch, p));
  Dims d = cost_dims_of (arch, p);
  if (arch->family == MODEL_FAMILY_BERT)
    {
      *cost = bert_head (arch, &d);
      return;
    }
  LossMemory lm = loss_memory (&d, p, arch->family == MODEL_FAMILY_MPT);
  ModelOp fn = cost_norm_op (&d, "final_norm", d.norm_fp32 ? d.e : d.ea);
  cost_add_kernel (&cost->fwd, &fn);
  ModelOp cast; /* autocast: the fp32 head weight and the final norm's fp32 output */
  if (cost_autocast_cast_op (&d, d.V * d.h, 1, 1, &cast))
    cost_add_kernel (&cost->fwd, &cast);
  /* The head GEMM reads the V×h matrix whether or not it is tied to the embedding. */
  cost_add_gemm (&cost->fwd, &d, "lm_head", d.T, d.h, d.V, d.V * d.h);
  ModelOp ce = cost_elementwise_op ("cross_entropy", lm.traffic);
  ce.host_ops = loss_host_ops (p, arch->family == MODEL_FAMILY_MPT);
  if (lm.bwd_traffic > 0 && lm.traffic > 0) /* a backward that does not mirror (loss_memory) */
    ce.bwd_factor = lm.bwd_traffic / lm.traffic;
  cost_add_kernel (&cost->fwd, &ce);
  cost_mirror_backward (&cost->fwd, &cost->bwd, 0);
  cost->bwd.workspace = lm.bwd;
  memcpy (cost->bwd.workspace_tensors, lm.bwd_t, lm.n_bwd * sizeof (double));
  cost->bwd.n_workspace_tensors = lm.n_bwd;
  /* The final norm's saved tensors (as a layer's norm, graph_layer.c: its input, or the
   * fp32 copy, rstd and normalized tensor of an upcasting RMSNorm; compiled, its input and
   * rstd) and the LM head's input; PyTorch <= 1.10: log_softmax also keeps its input, the
   * fp32 logits. */
  double Th = d.T * d.h, norm = cost_norm_saved (&d);
  /* Under autocast the residual stream is fp32 (plan_ckpt.c checkpoint_bytes): the final
   * norm saves its fp32 input (cost_norm_saved), and its fp32 output, the model's last
   * hidden state, stays alive beside the logits until the loss returns
   * (LlamaForCausalLM.forward holds `outputs` and `hidden_states = outputs[0]` while it
   * calls self.loss_function); the head GEMM saves its e-byte cast (below). */
  double head_out = d.autocast ? d.ea * Th : 0;
  /* (the shifting loss counts log_softmax's kept input in lm.saved: the shifted copy) */
  double sm_input = p->loss == MODEL_COST_LOSS_UPCAST_SHIFT ? 0 : d.sm_in * 4 * d.T * d.V;
  cost->act_saved = norm + d.e * Th + lm.saved + sm_input
                   + kept_logits (&d, p, arch->family == MODEL_FAMILY_MPT);
  /* The forward's transients in allocation order: the final hidden state the model's
   * outputs hold (autocast: fp32, head_out), then the loss's. */
  LossMemory fwd = loss_new (0, 0);
  loss_fwd (&fwd, head_out, 1);
  for (guint i = 0; i < lm.n_fwd; i++)
    loss_fwd (&fwd, lm.fwd_t[i], 1);
  cost->fwd.workspace = fwd.fwd;
  memcpy (cost->fwd.workspace_tensors, fwd.fwd_t, fwd.n_fwd * sizeof (double));
  cost->fwd.n_workspace_tensors = fwd.n_fwd;
  cost->act_checkpoint = d.e * d.T * d.h;
}

ModelBlockCost
model_cost_head (const ModelArch *arch, const ModelCostParams *p)
{
  ModelBlockCost cost;
  model_cost_head_to (arch, p, &cost);
  return cost;
}

double
model_cost_step_flops (const ModelArch *arch, const ModelCostParams *p)
{
  g_return_val_if_fail (cost_params_ok (arch, p), 0.0);
  ModelBlockCost layer = model_cost_layer (arch, p);
  ModelBlockCost emb = model_cost_embedding (arch, p);
  ModelBlockCost head = model_cost_head (arch, p);
  return model_cost_step_flops_of (arch, &layer, &emb, &head);
}

double
model_cost_step_flops_of (const ModelArch *arch, const ModelBlockCost *layer,
                          const ModelBlockCost *embedding, const ModelBlockCost *head)
{
  /* Model FLOPs: forward once, backward as 2× forward (Narayanan et al. 2021 §5.1), the
   * frozen GEMMs' backward 1× (cost_mirror_backward). */
  return (double) arch->n_layers * (layer->fwd.flops + layer->bwd.model_flops)
         + embedding->fwd.flops + embedding->bwd.model_flops + head->fwd.flops
         + head->bwd.model_flops;
}

/* DeepSeek-V3's MTP depth before its decoder layer (Megatron-LM megatron/core/transformer/
 * multi_token_prediction.py MultiTokenPredictionLayer: _get_embeddings, _concat_embeddings;
 * cost.h). The rolled ids through the shared embedding (the embedding's gather), enorm of
 * that embedding, hnorm of the previous depth's hidden states, their concatenation and
 * eh_proj (T × 2h by 2h × h). Saved: the rolled ids (int64), enorm's input (or, as the
 * head's final norm under norm_fp32, its fp32 copy, rstd and output), hnorm's beyond its
 * input — that input is the tensor the previous head's GEMM keeps (the main head's, or the
 * previous depth's shared head's), counted there — and eh_proj's input, the e·T·2h
 * concatenation. */
ModelBlockCost
model_cost_mtp_proj (const ModelArch *arch, const ModelCostParams *p)
{
  ModelBlockCost cost;
  memset (&cost, 0, sizeof cost);
  g_return_val_if_fail (cost_params_ok (arch, p), cost);
  Dims d = cost_dims_of (arch, p);
  double Th = d.T * d.h;
  cost_add_elementwise (&cost.fwd, "mtp_embed_gather", 8 * d.T + d.w * Th + d.e * Th);
  cost_add_elementwise (&cost.fwd, "mtp_enorm", 2 * d.e * Th + d.w * d.h);
  cost_add_elementwise (&cost.fwd, "mtp_hnorm", 2 * d.e * Th + d.w * d.h);
  cost_add_elementwise (&cost.fwd, "mtp_concat", 4 * d.e * Th);
  cost_add_gemm (&cost.fwd, &d, "mtp_eh_proj", d.T, 2 * d.h, d.h, 2 * d.h * d.h);
  cost_mirror_backward (&cost.fwd, &cost.bwd, 0);
  double norm = cost_norm_saved (&d);
  cost.act_saved = 8 * d.T + norm + (norm - d.e * Th) + 2 * d.e * Th;
  return cost;
}

double
model_cost_mtp_flops (const ModelArch *arch, const ModelCostParams *p, guint n_mtp)
{
  g_return_val_if_fail (cost_params_ok (arch, p), 0.0);
  if (n_mtp == 0)
    return 0;
  ModelBlockCost layer = model_cost_layer (arch, p);
  ModelBlockCost proj = model_cost_mtp_proj (arch, p);
  ModelBlockCost head = model_cost_head (arch, p);
  return (double) n_mtp * (layer.fwd.flops + layer.bwd.model_flops + proj.fwd.flops
                           + proj.bwd.model_flops + head.fwd.flops + head.bwd.model_flops);
}

double
model_cost_korthikanti_flops (guint64 batch, guint64 n_layers, guint64 seq_len, guint64 hidden,
                              guint64 vocab)
{
  /* Korthikanti et al. 2022 (arXiv 2205.05198) §6: 72·B·L·s·h²·(1 + s/(6h) + V/(12hL)),
   * i.e. 3 × (L·(24·B·s·h² + 4·B·s²·h) + 2·B·s·h·V). */
  double B = (double) batch, L = (double) n_layers, s = (double) seq_len;
  double h = (double) hidden, V = (double) vocab;
  return 72.0 * B * L * s * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * L));
}
