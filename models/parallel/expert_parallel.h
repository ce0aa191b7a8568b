/* models/parallel/expert_parallel.h — mixture of experts under expert parallelism (EP) and
 * expert tensor parallelism (ETP), as Megatron-LM runs them: the degree checks, a rank's
 * expert parameters, one MoE layer's token dispatch (routing load, capacity and dropped
 * tokens, all-to-all volumes, the per-expert GEMM shapes of the slowest rank) and its
 * activation memory, Megatron's grouped GEMM against Hugging Face's eager expert loop.
 * Wired into the plan by models/plan/plan_ep.c ([parallel] ep, etp; [moe]).
 *
 * Carving (megatron/core/parallel_state.py initialize_model_parallel): the expert grid is a
 * second RankGenerator over the same world, tp = expert_tensor_parallel_size (default: the
 * dense tp), ep = expert_model_parallel_size, dp = world / (etp·ep·pp), cp = 1; world must
 * be divisible by etp·ep·pp, i.e. etp·ep must divide the dp·cp·tp ranks of a pipeline stage
 * (mesh.h). Every MoE layer holds num_moe_experts / ep experts (moe_layer.py MoELayer.
 * __init__: assert num_moe_experts % ep_size == 0); an expert's fc1 (gate‖up) and fc2
 * (down) split over etp as column- and row-parallel linears (experts.py TEGroupedMLP), so
 * intermediate_size must be a multiple of etp. The router (router.py TopKRouter: a plain
 * num_experts × h weight) is whole on every rank.
 *
 * Routing and capacity. The router of each rank scores the T tokens it holds (T = b·s / cp,
 * the cp rank's share of the sequence, and / tp under sequence parallelism, which Megatron
 * requires with ep > 1 and tp > 1: model_parallel_config.py warns otherwise) and picks top-k
 * experts each: T·k token copies. Under cp the EP group may span cp ranks (the carving
 * above); nothing else in the dispatch depends on cp. Under a capacity factor c each expert accepts at most
 *   C = ceil(c · T·k / E)
 * copies from that rank (Megatron moe_utils.py get_capacity(num_tokens = T·k, E, c), called
 * by apply_router_token_dropping on the router's local probabilities; DeepSpeed
 * deepspeed/moe/sharded_moe.py _capacity(gates, c·k) = ceil(S/E · c·k) with S the local
 * tokens in top1gating/top2gating/topkgating): the capacity is per source rank, so an
 * expert receives at most ep·etp·C copies. Drops ("probs" policy) remove the copies past C;
 * with moe_pad_expert_input_to_capacity (and always in DeepSpeed, whose einsum dispatch
 * builds an [E, C, h] tensor) every expert gets exactly C rows, padding included.
 *
 * Expert load from a histogram or a Zipf skew (`expert_load`, model_ep_expert_shares): each
 * source rank sends T·k·f_e copies to expert e (the same shares on every rank: a globally
 * popular expert), capacity clips each at C; EP rank j (experts jL … jL + L − 1, Megatron's
 * contiguous placement) computes group · Σ its experts' kept copies; the rank with the most
 * rows is the slowest and its most loaded expert is the "hot" one (hot_rows), its other
 * L − 1 experts' mean the "rest" (rest_rows: the grouped GEMM of the rest at their mean
 * rows, an approximation for unequal loads). `imbalance` r is then unused.
 *
 * Load imbalance (a model, not a measurement): `imbalance` r = max / mean load per expert.
 * The hottest expert receives r·μ copies from every source rank (μ = T·k/E; the same
 * expert hot on every rank, the worst case of a globally popular expert), the E − 1 others
 * share the remaining T·k − r·μ evenly. r = 1 is uniform routing; r ≤ E/k since a token
 * picks an expert at most once (r·μ ≤ T). The rank holding the hottest expert processes
 * the most rows and sets the layer's time; its expert GEMM rows / the mean rank's is the
 * slowdown. Capacity clips the hot expert at C and drops max(0, r·μ − C) copies per rank.
 *
 * Dispatch (token_dispatcher.py MoEAlltoAllTokenDispatcher): preprocess all-gathers the
 * per-expert token counts over the ep·etp group (E int64 per rank; skipped when padded to
 * capacity, whose splits are static); permutation 1 groups the rank's kept copies by
 * expert (moe_utils.py permute: index_select, which saves only the indices); the tokens
 * and their probabilities are all-to-all'ed over ep; under etp > 1 the received tokens are
 * all-gathered over etp (gather_from_sequence_parallel_region); permutation 2 sorts them by
 * local expert (sort_chunks_by_idxs) when a rank holds more than one. Combine is the
 * inverse: unsort, reduce-scatter over etp, all-to-all over ep, unpermute (scatter_add,
 * indices saved; the probabilities were already applied inside the experts' activation,
 * experts.py bias_act_func / weighted_bias_swiglu_impl). Under uniform destinations the
 * fraction (ep − 1)/ep of the all-to-all's send buffer leaves the rank.
 *
 * All-gather dispatch ([moe] dispatcher = allgather; token_dispatcher.py
 * MoEAllGatherTokenDispatcher, Megatron's --moe-token-dispatcher-type allgather, the
 * TransformerConfig default): when ep > 1 or etp > 1 every rank gathers the whole tp_ep
 * group's tokens, G = ep·etp·T (every one, whatever its route; dropped copies are only
 * absent from the routing map), with gather_from_sequence_parallel_region over tp_ep_group:
 * the routing map (bool, 1 B a token and expert, under no_grad), the probabilities
 * (prob_bytes) and the hidden states (G·h·e, into Megatron's global "mpu" memory buffer,
 * use_global_buffer=True). dispatch_postprocess slices the map and probabilities to the
 * rank's local experts and permutes the copies routed to them out of the G tokens (moe_
 * utils.py permute: index_select, indices saved): the same rows as the all-to-all path
 * delivers (group · the per-source load of each local expert), no sort_chunks. The experts
 * run as under all-to-all; combine_preprocess unpermutes their rows into a zeroed G × h
 * tensor (unpermute: scatter_add, indices saved; the probabilities were applied inside the
 * experts), and token_combine reduce-scatters it over tp_ep in the probabilities' dtype,
 * which both sums the etp partial sums and returns each rank its T tokens. Backward:
 * the reduce-scatter's conjugate all-gather (G·h·prob_bytes) and the gathers' conjugate
 * reduce-scatters (hidden G·h·e, probabilities G·E·prob_bytes; the routing map has none).
 * Nothing the dispatcher allocates is saved for backward (the gathers save nothing,
 * mappings.py; index_select and scatter_add keep indices), so a rank's saved activations
 * equal the all-to-all path's; its transients hold G-row tensors instead (acts_megatron).
 * The volume is fixed by G, not by the routing: a skewed router or capacity drops change
 * the rows a rank computes, not what it gathers.
 *
 * Units: tokens and rows as doubles (expected counts, fractional under the imbalance
 * model), bytes B (doubles), capacity an integer. Errors: G_KEY_FILE_ERROR_INVALID_VALUE
 * naming the model key or the scenario's group and key ([parallel] ep, etp; [moe]
 * capacity_factor, load_imbalance, dispatcher; [training] seq_len); the caller adds the
 * file.
 */
#pragma once

#include <glib.h>
#include "hardware/collective.h"
#include "hardware/kernel.h"
#include "models/arch/inventory.h"
#include "models/parallel/mesh.h"

/* Megatron-LM's token dispatchers (moe_layer.py MoELayer.__init__ by
 * --moe-token-dispatcher-type). 'flex' (MoEFlexTokenDispatcher: DeepEP, HybridEP, NCCL EP
 * kernels) is not modelled. */
typedef enum
{
  MODEL_EP_DISPATCHER_ALLTOALL,  /* MoEAlltoAllTokenDispatcher (stepsim's default) */
  MODEL_EP_DISPATCHER_ALLGATHER, /* MoEAllGatherTokenDispatcher */
  MODEL_EP_N_DISPATCHERS
} ModelEpDispatcher;

/* "alltoall" or "allgather" (static). */
const char *model_ep_dispatcher_name (ModelEpDispatcher dispatcher);
/* Parses Megatron's --moe-token-dispatcher-type value: alltoall or allgather (`text`
 * stripped by the caller). FALSE + G_KEY_FILE_ERROR_INVALID_VALUE: "flex" with why it is
 * refused (not modelled), anything else listing the names; the caller prefixes the
 * group and key. */
gboolean model_ep_dispatcher_from_string (const char *text, ModelEpDispatcher *out,
                                          GError **error);

/* Checks that `arch` runs on the expert degrees of `mesh` as Megatron requires: with
 * ep > 1 or etp > 1 the model has experts (num_local_experts > 0); num_local_experts a
 * multiple of ep; intermediate_size a multiple of etp; num_experts_per_tok ≤
 * num_local_experts; etp·ep dividing the dp·cp·tp ranks of a pipeline stage. FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE naming the model key and [parallel] ep / etp with the
 * numbers. A dense model at ep = etp = 1 passes. */
gboolean model_ep_check (const ModelArch *arch, const ModelMesh *mesh, GError **error);

/* ---- Parameters --------------------------------------------------------------------- */

/* Whether inventory tensor `t` is a routed expert's (the MLP weights and biases of a MoE
 * layer, count = n_experts copies per layer) or a LoRA adapter of one. */
gboolean model_ep_tensor_is_expert (const ModelInventory *inv, const ModelTensor *t);
/* Whether any trainable tensor of `inv` is an expert's (model_ep_tensor_is_expert): FALSE
 * when the experts are frozen (LoRA on the attention only), so no expert gradient or
 * optimizer state exists. */
gboolean model_ep_trains_experts (const ModelInventory *inv);

typedef struct
{
  guint n_local_experts;  /* E / ep per MoE layer */
  guint64 expert_numel;   /* elements of expert tensors one rank holds, whole model:
                           * Σ copies/ep × numel/etp (C14's third bucket) */
  guint64 expert_total;   /* elements of all experts, whole model (ep = etp = 1) */
  guint64 router_numel;   /* router elements, whole model: replicated on every rank */
} ModelEpParamSplit;

/* A rank's share of the expert and router tensors of `inv` on `mesh` (ep, etp read), base
 * tensors only (adapters excluded: what the published counts count), folded over the
 * inventory (model_inventory_fold). Runs model_ep_check; FALSE + its error. */
gboolean model_ep_param_split (const ModelInventory *inv, const ModelMesh *mesh,
                               ModelEpParamSplit *out, GError **error);

/* ---- Token dispatch ----------------------------------------------------------------- */

typedef struct
{
  guint64 micro_batch;     /* b */
  guint64 seq_len;         /* s, the whole sequence */
  guint tp, cp;            /* dense tensor and context degrees, >= 1 */
  gboolean sp;             /* sequence parallelism: the router's tokens are split over tp */
  guint ep, etp;           /* expert degrees, >= 1 */
  double act_bytes;        /* e: B per token element (2 for bf16) */
  double prob_bytes;       /* B per routing probability (e; 4 under --moe-router-dtype fp32) */
  gboolean drop;           /* a capacity factor is set (Megatron --moe-expert-capacity-factor) */
  double capacity_factor;  /* c > 0 when `drop` */
  gboolean pad;            /* pad every expert to C rows (--moe-pad-expert-input-to-capacity;
                            * DeepSpeed's dispatch); needs `drop` */
  double imbalance;        /* r = max/mean load per expert, 1 ≤ r ≤ E/k; 1 = uniform */
  const char *expert_load; /* the experts' shares of the routed copies as
                            * model_ep_expert_shares reads them, or NULL (then `imbalance`);
                            * borrowed */
  ModelEpDispatcher dispatcher; /* all-to-all (default) or all-gather dispatch */
} ModelEpParams;

/* b = s = 1, every degree 1, e = prob_bytes = 2, dropless, r = 1, all-to-all. */
void model_ep_params_init (ModelEpParams *p);

/* The share f[e] of the routed token copies each of the E experts receives (f ≥ 0,
 * Σ f = 1; `f` holds E doubles, the caller's) from `spec` ([moe] expert_load):
 *   "zipf:S"         the popularity ranks q = 0 … E − 1 take shares ∝ (q + 1)^−S (S ≥ 0;
 *                    0 is uniform), placed on the experts in a pseudo-random order (a
 *                    Fisher-Yates shuffle by GLib's GRand seeded 1: reproducible), since a
 *                    router's popular experts are not the consecutive ones Megatron
 *                    places on one expert-parallel rank (moe_layer.py local_expert_indices)
 *   "a, b, c, …"     E non-negative relative loads in expert order (a measured histogram,
 *                    e.g. Megatron's tokens-per-expert log; any scale), normalised.
 * Each share must be at most 1/k (k = top-k): a token picks an expert at most once, so an
 * expert receives at most every token. Errors (G_KEY_FILE_ERROR_INVALID_VALUE, messages
 * starting "[moe] expert_load"): a malformed spec, a count other than E, a negative, NaN
 * or infinite value, all zero, S negative or not finite, a share above 1/k. */
gboolean model_ep_expert_shares (const char *spec, guint64 n_experts, guint64 top_k, double *f,
                                 GError **error);

typedef struct
{
  guint n_local_experts;   /* L = E / ep */
  guint group;             /* source ranks an expert's rows come from: ep · etp */
  double tokens;           /* T: tokens the router of one rank scores */
  double routed;           /* T·k token copies */
  double mean_load;        /* μ = T·k/E: copies one rank sends one expert, mean */
  double hot_load;         /* r·μ: to the most loaded expert, before capacity */
  double rest_load;        /* (T·k − r·μ)/(E − 1): to each other expert (0 if E = 1) */
  guint64 capacity;        /* C = ceil(c·T·k/E) per source rank; 0 when dropless */
  double dropped;          /* copies dropped per source rank: Σ max(0, load − C) */
  double kept;             /* routed − dropped */
  double send_rows;        /* rows of the dispatch all-to-all's send buffer: kept, or E·C
                            * padded */
  double a2a_bytes;        /* send_rows·h·e: the dispatch all-to-all's per-rank send buffer
                            * (hardware/collective.h's size); the combine's is the same */
  double a2a_remote_bytes; /* its (ep − 1)/ep that leaves the rank */
  double a2a_recv_max_bytes; /* what the rank holding the hot expert receives:
                              * slowest_rows/etp · h · e */
  double probs_a2a_bytes;  /* send_rows · prob_bytes */
  double gathered_tokens;  /* G = group · T: the tokens the all-gather dispatcher gathers
                            * over tp_ep (all of them, routed anywhere or dropped) */
  double ag_bytes;         /* G·h·e: its hidden-state all-gather's output (hardware/
                            * collective.h's size), B; per rank (G − T)·h·e arrive */
  double hot_rows;         /* rows of the hot expert's GEMMs on the slowest rank:
                            * group · min(r·μ, C) (C when padded) */
  double rest_rows;        /* rows of each other local expert there */
  double mean_rows;        /* rows per local expert on the mean rank: group·kept/E */
  double slowest_rows;     /* hot_rows + (L − 1)·rest_rows */
  double slowdown;         /* slowest_rows / (L · mean_rows): the expert GEMMs' stretch */
  double least_rows;       /* rows of the least loaded EP rank (all its experts) */
} ModelEpDispatch;

/* The multiple of the sequence length (tokens) the router needs: cp, times tp under
 * sequence parallelism (its tokens are the rank's share of the sequence). */
guint model_ep_seq_multiple (const ModelEpParams *p);

/* The multiple of the sequence length (tokens) the router needs: cp, times tp under
 * sequence parallelism (its tokens are the rank's share of the sequence). */
guint model_ep_seq_multiple (const ModelEpParams *p);

/* One MoE layer's dispatch for one micro-batch on `arch` under `p`. Errors (FALSE +
 * G_KEY_FILE_ERROR_INVALID_VALUE): a dense model ("[parallel] ep: … no experts"); E not a
 * multiple of ep ([parallel] ep, model key num_local_experts); `drop` with c ≤ 0 or not
 * finite ([moe] capacity_factor); `pad` without `drop` ([moe] pad_to_capacity); r outside
 * [1, E/k] ([moe] load_imbalance); s not a multiple of cp (· tp under SP) ([training]
 * seq_len). */
gboolean model_ep_dispatch (const ModelArch *arch, const ModelEpParams *p, ModelEpDispatch *out,
                            GError **error);

/* The GEMM of one expert linear for `rows` rows on each of `count` local experts (one
 * grouped GEMM, TEGroupedMLP / GroupedMLP): fc1 (gate‖up under SwiGLU: n = 2·i/etp; GELU
 * n = i/etp; k = h) or fc2 (n = h, k = i/etp). HW_KERNEL_GEMM, m = rows, batch = count:
 * few tokens per expert make skinny GEMMs, which the kernel model prices as such. */
HwKernelShape model_ep_expert_gemm (const ModelArch *arch, guint etp, gboolean fc2, double rows,
                                    double count);

/* One collective of the dispatch or combine. */
typedef struct
{
  const char *name;        /* static, e.g. "dispatch all-to-all (ep)" */
  HwCollectiveKind kind;
  ModelMeshExpertDim dim;  /* EP, TP (etp), or TP_EP for the ep·etp count all-gather */
  guint ranks;             /* group size */
  double bytes;            /* hardware/collective.h's convention, mean rank */
} ModelEpComm;

typedef enum
{
  MODEL_EP_FORWARD,
  MODEL_EP_BACKWARD,
} ModelEpPass;

/* The collectives of one MoE layer's forward or backward, appended to `out` (GArray of
 * ModelEpComm) in order. All-to-all dispatcher (p->dispatcher): forward: the token-count all-gather over the tp_ep group (E·8 B
 * per rank; not when padded), the tokens' and probabilities' all-to-all over ep, under
 * etp > 1 their all-gather over etp (output: the mean rank's rows, etp × the all-to-all's),
 * then the combine's reduce-scatter over etp (input: those rows × h in the probabilities'
 * dtype, prob_bytes, as combine_preprocess casts) and all-to-all over ep. Backward: each
 * differentiable one's conjugate in reverse order (all-to-all ↔ all-to-all, all-gather ↔
 * reduce-scatter; the count gather has none).
 * All-gather dispatcher, every one over the tp_ep group (MODEL_MESH_EXPERT_TP_EP, ep·etp
 * ranks), G = d->gathered_tokens: forward the routing map's all-gather (output G·E·1 B,
 * bool), the probabilities' (G·E·prob_bytes) and the hidden states' (G·h·e), then the
 * combine's reduce-scatter (input G·h·prob_bytes); backward the combine's conjugate
 * all-gather (G·h·prob_bytes), the probabilities' and the hidden states' conjugate
 * reduce-scatters (the routing map, gathered under no_grad, has none).
 * Nothing for ep = etp = 1. `d` from model_ep_dispatch with the same `p`. */
void model_ep_layer_comms (const ModelArch *arch, const ModelEpParams *p,
                           const ModelEpDispatch *d, ModelEpPass pass, GArray *out);

/* ---- Activations -------------------------------------------------------------------- */

/* One MoE layer's activation memory on one rank (the slowest: its rows), B. */
typedef struct
{
  double router_in;        /* the router linear's saved input e·T·h (the pre-MLP norm
                            * output) */
  double router_probs;     /* the router's saved scores and top-k weights */
  double expert_in;        /* the experts' saved input rows × h */
  double expert_inner;     /* the experts' saved inner tensors (rows × i/etp each) */
  double expert_out;       /* expert outputs saved for the routing-weight gradient */
  double weights;          /* the per-row routing weights saved by the experts */
  double saved;            /* Σ of the above: kept for backward */
  double transient;        /* peak of the forward's unsaved buffers alive together
                            * (permutation and communication buffers) */
  double transient_bwd;    /* the backward's, all-gather dispatcher only (0 under
                            * all-to-all: not modelled here) */
} ModelEpActs;

/* Megatron-LM's grouped GEMM path (MoEAlltoAllTokenDispatcher + TEGroupedMLP, fused
 * weighted SwiGLU) for N = slowest_rows rows: saved router input e·T·h and scores
 * prob_bytes·T·E (the softmax output, moe_utils.py topk_routing_with_score_function);
 * fc1's input e·N·h (TE GroupedLinear saves it); SwiGLU: fc1's output e·N·2i/etp (saved
 * by weighted_bias_swiglu_impl with the probabilities prob_bytes·N) and fc2's input
 * e·N·i/etp; GELU: fc1's output and the activation's, e·N·i/etp each. Nothing of the
 * permutation or the all-to-alls is saved (index_select and scatter_add keep indices,
 * all_to_all and the etp gathers nothing), nor fc2's output (the probabilities are applied
 * inside the activation). Transient: the largest adjacent pair along the forward's buffer
 * chain — permuted send buffer, all-to-all output, etp all-gather output, sorted rows
 * (fc1's saved input: the last of these present), then fc2's output, unsorted, etp
 * reduce-scatter output, combine all-to-all output, the unpermuted layer output e·T·h.
 * All-gather dispatcher with ep·etp > 1 (the saved terms the same; G = gathered_tokens,
 * pb = prob_bytes): forward transient the largest adjacent pair along gathered (hidden
 * e·G·h, routing map and probabilities G·E·(1 + pb), alive together at the permute) →
 * permuted rows (fc1's saved input), then fc2's output e·N·h → unpermuted e·G·h → (under
 * pb ≠ e its cast pb·G·h) → the reduce-scatter's output pb·T·h (→ e·T·h); backward
 * (transient_bwd) along the output gradient e·T·h → its all-gather pb·G·h (→ e·G·h) →
 * fc2's output gradient e·N·h, and fc1's input gradient e·N·h → the permute's backward
 * (zeros + index_add) e·G·h → its reduce-scatter's output e·T·h. The gathered hidden states
 * sit in Megatron's persistent global buffer, counted here as a forward transient. */
void model_ep_acts_megatron (const ModelArch *arch, const ModelEpParams *p,
                             const ModelEpDispatch *d, ModelEpActs *out);

/* Hugging Face's eager loop (modeling_mixtral.py MixtralSparseMoeBlock.forward: no
 * expert parallelism, no drops; m = T·k rows in all): the gate linear saves its input
 * e·T·h; softmax(dtype=float) saves its fp32 output 4·T·E, the in-place renormalisation
 * of the top-k weights its operands 4·T·k + 4·T; per expert the gathered rows (saved once
 * by w1 and w3) e·m·h, w1's output, silu's output, w3's output and their product (w2's
 * input) 4·e·m·i (GELU experts: 2·e·m·i), the expert's output e·m·h and its routing-weight
 * slice e·m, both saved by the multiplication. Transient: the e·T·h accumulator of
 * index_add_ and one expert's weighted output e·(m/E)·h. Reads p->micro_batch, seq_len,
 * tp, cp, sp, act_bytes; ep and etp must be 1 (HF has neither). */
void model_ep_acts_hf_eager (const ModelArch *arch, const ModelEpParams *p, ModelEpActs *out);
