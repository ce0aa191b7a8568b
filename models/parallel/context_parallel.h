/* models/parallel/context_parallel.h — context parallelism (CP): the sequence of every
 * micro-batch split over the cp ranks of the mesh, and what the attention then computes,
 * sends and holds on each of them.
 *
 * Variants (TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py, which Megatron-LM's cp_comm_type "p2p" / "all_gather" / "a2a" selects,
 * megatron/core/transformer/transformer_config.py):
 *   ring        AttnFuncWithCPAndKVP2P: each rank keeps its query chunks and passes its K/V
 *               chunk around the ring, cp steps, the P2P of step i+1's K/V on a second
 *               stream beside step i's attention (Liu et al. 2023, Ring Attention); partial
 *               outputs merged by their logsumexp. PyTorch's ring attention
 *               (torch.distributed.tensor.experimental._attention, torchtitan's
 *               context_parallel) computes the same steps; its default _RotateMethod is
 *               ALL_GATHER, whose traffic is the all-gather variant's.
 *   all_gather  AttnFuncWithCPAndKVAllGather (Llama 3, Dubey et al. 2024 §3.3.2): K and V
 *               all-gathered over cp before the attention, each local query chunk against
 *               the K/V prefix it attends to (two chunks on two streams).
 *   ulysses     DeepSpeed-Ulysses (Jacobs et al. 2023; deepspeed/sequence/layer.py
 *               DistributedAttention) and TE's AttnFuncWithCPAndQKVOA2A: all-to-all q, k, v
 *               from sequence-sharded to head-sharded, the whole-sequence attention on
 *               heads/cp, all-to-all of the output back.
 *
 * Causal load balancing (megatron/core/utils.py get_batch_on_this_cp_rank; PyTorch
 * _cp_options.enable_load_balance, default True): the sequence is cut into 2·cp chunks of
 * c = s/(2·cp) tokens and rank r holds chunks r and 2·cp−1−r, so every rank's queries see
 * the same causal work. A c×c tile (query chunk i, key chunk j) is full for j < i, diagonal
 * (half: the causal mask) for j = i, empty for j > i. Rank r's queries meet r + (2cp−1−r) =
 * 2cp−1 full and 2 diagonal tiles: 2cp tile-units of the (2cp)²/2 = 2cp² in the causal
 * square, exactly 1/cp of the work on every rank. Without balancing (contiguous chunks of
 * s/cp) rank r meets r full and 1 diagonal tile and rank cp−1 sets the pace.
 *
 * Ring steps (context_parallel.py AttnFuncWithCPAndKVP2P.forward, causal): step i uses
 * the K/V of cp rank (r − i) mod cp; step 0 the rank's own, a causal 2c × 2c kernel (1 full
 * + 2 diagonal tiles, "diagonal"); steps i <= r all local queries against the first K/V
 * chunk (2 full tiles, "lower-triangle"); steps i > r the second query chunk against both
 * K/V chunks (2 full tiles, "upper-triangle"). Every step is 2 tile-units. The backward
 * (…backward) reverses the ring (send to r − 1, receive from r + 1), starting from the K/V
 * saved by the forward's last step: step i uses the K/V of rank (r + 1 + i) mod cp, the
 * diagonal last.
 *
 * Bytes, with e the activation element size, k the KV heads and a the query heads of one
 * tensor-parallel rank, d the head dimension of q and k, dv that of v (d but under DeepSeek's
 * Multi-head Latent Attention: q·k heads of qk_nope + qk_rope = 192, v heads of v_head_dim =
 * 128; TE's p2p path sends MLA's K and V flattened into one buffer, context_parallel.py
 * `enable_mla`), b the micro-batch:
 *   KV chunk (one rank's K and V, torch.cat'ed into one P2P buffer): b·(s/cp)·k·(d + dv)·e
 *   ring forward: cp − 1 sends of one KV chunk (to rank r + 1), each beside one step
 *   ring backward: step 0 sends KV, steps 1 … cp−2 send KV and the dKV accumulated so far
 *                  (one [2, …] buffer, same dtype), step cp−1 sends dKV only: 2·(cp−1) KV
 *                  chunks in all (the i == 0 / i == cp_size − 1 branches of the backward)
 *   all_gather: forward all-gather K and all-gather V (b·s·k·d·e and b·s·k·dv·e); backward
 *               the same two again (TE saves the local K/V only and re-gathers) and a
 *               reduce-scatter each of the whole-sequence dK and dV
 *   ulysses: forward all-to-all q (b·(s/cp)·a·d·e per rank), k (b·(s/cp)·k·d·e), v
 *            (b·(s/cp)·k·dv·e), and after the attention the output (b·(s/cp)·a·dv·e);
 *            backward the conjugates in
 *            reverse: dout, then dq, dk, dv (_SeqAllToAll.backward applies the same
 *            all-to-all with scatter and gather swapped)
 * (hardware/collective.h's size convention: the message for send/recv, the gathered size
 * for all-gather, the input for reduce-scatter, the per-rank send buffer for all-to-all.)
 *
 * Overlap (ring): TE runs step i's attention on stream i % 2 and, at the step's start,
 * posts the isend/irecv of the next step's K/V (batch_isend_irecv); step i+1's kernel waits
 * for that receive and for step i's kernel. So step i's compute and P2P start together
 * once both of step i−1 are done, and one step lasts max(compute_i, comm_i):
 *   ring time = Σ_i max(compute_i, comm_i), exposed communication = Σ_i max(0, comm_i −
 *   compute_i)
 * (model_cp_ring_critical_path). Per step the compute is 2 tile-units (a tile-unit
 * 2·b·c²·a·(d + dv) FLOP: Q·Kᵀ over d, P·V over dv), 8·b·c²·a·d FLOP when dv = d,
 * against 4·b·c·k·d·e B of K/V: the P2P hides when the link moves the bytes faster than
 * the GPU does the FLOPs, 2·c·a/(k·e) FLOP per byte (Llama 3.1 8B at 128K and cp 8: c =
 * 8192, a/k = 4, e = 2 → 32 768 FLOP/B, so even a 25 GB/s link hides it from an 800
 * TFLOP/s GPU). The SMs NCCL's P2P kernels take from the attention are not modelled. The
 * all-gather and Ulysses collectives run on the compute stream's critical path (TE calls
 * gather_along_first_dim and flash_attn_a2a_communicate synchronously; DeepSpeed's
 * sp_overlap_comm is not modelled).
 *
 * FLOPs convention (graph.h, hardware/kernel.h): a step's `flops` are what the kernel
 * model is given — a causal kernel counted at twice what it executes (the full square of a
 * square mask), so its causal-table efficiency gives the executed time; `exec_flops` are
 * what the tiles execute. The model-FLOPs (MFU) count per rank stays the graph's
 * full-square attention FLOPs / cp.
 *
 * Units: B, FLOP, tokens; doubles for bytes and FLOPs. Errors: G_KEY_FILE_ERROR_INVALID_VALUE
 * naming the scenario key ([training] seq_len, [training] attention, [parallel] cp) or the
 * model key (num_attention_heads, num_key_value_heads, sliding_window) and the numbers; the
 * caller adds the file.
 */
#pragma once

#include <glib.h>
#include "hardware/collective.h"
#include "models/arch/arch.h"
#include "models/ops/graph.h"
#include "models/parallel/mesh.h"

typedef enum
{
  MODEL_CP_RING,       /* TE AttnFuncWithCPAndKVP2P, Megatron cp_comm_type "p2p" */
  MODEL_CP_ALL_GATHER, /* TE AttnFuncWithCPAndKVAllGather, "all_gather" (Llama 3) */
  MODEL_CP_ULYSSES,    /* DeepSpeed-Ulysses, TE AttnFuncWithCPAndQKVOA2A, "a2a" */
  MODEL_CP_N_VARIANTS
} ModelCpVariant;

/* "ring", "all_gather", "ulysses". */
const char *model_cp_variant_name (ModelCpVariant variant);
/* Parses one of those names. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE listing them. */
gboolean model_cp_variant_from_string (const char *text, ModelCpVariant *out, GError **error);

typedef struct
{
  ModelCpVariant variant;
  guint cp;               /* >= 1; 1: no context parallelism */
  gboolean load_balance;  /* 2·cp chunks, rank r holding r and 2·cp−1−r (see above) */
  gboolean causal;        /* causal mask (decoders; BERT attends both ways) */
  guint64 micro_batch;    /* b */
  guint64 seq_len;        /* s, the whole sequence */
  guint64 window;         /* sliding window (keys per query), 0: none (ulysses only) */
  guint64 q_heads;        /* a: query heads of one tensor-parallel rank */
  guint64 kv_heads;       /* k: KV heads of one tensor-parallel rank */
  guint64 head_dim;       /* d: of a query and a key head */
  guint64 v_head_dim;     /* dv: of a value head (MLA's v_head_dim; d otherwise) */
  double act_bytes;       /* e: B per activation element */
} ModelCpParams;

/* Fills `p` for `arch` on `mesh` (cp and tp read): heads per tensor-parallel rank as
 * tensor_parallel.h lays them out (a/tp; k/tp, or 1 when k < tp), causal unless BERT,
 * the model's sliding window when it is shorter than the sequence, load balancing on for
 * ring and all_gather (Megatron and PyTorch always balance a causal mask) and off for
 * ulysses (DeepSpeed splits the sequence contiguously; the attention sees all of it). */
void model_cp_params_init (ModelCpParams *p, const ModelArch *arch, const ModelMesh *mesh,
                           ModelCpVariant variant, guint64 micro_batch, guint64 seq_len,
                           double act_bytes);

/* The multiple of the sequence length (tokens) that context parallelism needs: 2·cp under
 * load balancing (Megatron-LM get_batch_on_this_cp_rank cuts the sequence into 2·cp
 * chunks), cp otherwise (every rank the same number of tokens); 1 for cp = 1. */
guint64 model_cp_seq_multiple (const ModelCpParams *p);

/* Checks a context-parallel setting: the mesh against `n_gpus` (model_mesh_validate:
 * pp·dp·cp·tp = GPUs); seq_len a multiple of 2·cp under load balancing, of cp otherwise
 * (every rank the same number of tokens) (a mixture of experts needs nothing more, its
 * layers routing the rank's s/cp tokens: expert_parallel.h); for ulysses the query and KV
 * heads of one tp rank multiples of cp (TE: "cp_comm_type='a2a' requires num_heads % cp_size == 0"); no sliding
 * window shorter than the sequence for ring (TE attn_forward_func_with_cp refuses it) or
 * all_gather (its windowed steps are not modelled). `p` from model_cp_params_init on the
 * same `mesh`; cp = 1 checks the mesh only. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming
 * the keys and numbers. */
gboolean model_cp_check (const ModelArch *arch, const ModelMesh *mesh, guint n_gpus,
                         const ModelCpParams *p, GError **error);

/* ---- Attention work ---------------------------------------------------------------- */

typedef enum
{
  MODEL_CP_FORWARD,
  MODEL_CP_BACKWARD,
} ModelCpPass;

/* One attention kernel of one rank: a ring step, an all-gather query chunk, or Ulysses's
 * whole-sequence attention on its heads. */
typedef struct
{
  guint index;            /* step, in the order it runs */
  guint kv_source;        /* cp rank whose K/V it attends to (ring); the rank itself else */
  guint64 tile;           /* tokens per chunk: s/(2·cp) balanced, s/cp not; s for ulysses */
  guint64 q_len;          /* query tokens the kernel computes */
  guint64 kv_len;         /* key tokens it reads */
  guint64 heads;          /* query heads it computes (a, or a/cp for ulysses) */
  gboolean causal;        /* runs with the causal mask (the diagonal tiles) */
  guint n_full;           /* tile × tile blocks computed whole */
  guint n_diagonal;       /* tile × tile blocks on the diagonal (half computed) */
  double exec_flops;      /* forward FLOP executed: (n_full + n_diagonal/2)·4·b·tile²·heads·d
                           * (ulysses with a window: 4·b·s·window·heads·d, halved when
                           * causal, as the layer graph counts it) */
  double flops;           /* forward FLOP for the kernel model: 2·exec_flops when causal */
} ModelCpStep;

/* Appends to `out` (GArray of ModelCpStep) the attention kernels cp rank `rank` (< cp)
 * runs for one layer and micro-batch in `pass`, in order; returns how many. The backward's
 * steps carry the forward's FLOPs (the planner applies FlashAttention's backward factor,
 * graph.h). Ring: cp steps as above (forward: source (r − i) mod cp; backward: (r + 1 + i)
 * mod cp). all_gather: balanced, chunk r against keys [0, (r+1)·c) and chunk 2cp−1−r
 * against [0, (2cp−r)·c), each causal; unbalanced, one chunk against [0, (r+1)·s/cp).
 * ulysses: one kernel, s × s on a/cp heads. Non-causal: every tile full. cp = 1: the
 * plain attention (one step). */
guint model_cp_attention_steps (const ModelCpParams *p, guint rank, ModelCpPass pass,
                                GArray *out);

/* Σ exec_flops of `rank`'s forward steps: one layer's executed attention FLOP. Balanced
 * (and for ulysses) every rank gets the causal total 2·b·s²·a·d / cp. */
double model_cp_attention_flops (const ModelCpParams *p, guint rank);

/* One rank's K and V chunk, the ring's P2P message: b·(s/cp)·k·(d + dv)·e B. */
double model_cp_kv_chunk_bytes (const ModelCpParams *p);

/* ---- Communication ------------------------------------------------------------------ */

typedef struct
{
  const char *name;       /* static, e.g. "ring K/V send/recv" */
  HwCollectiveKind kind;  /* SEND_RECV (to the next ring rank), ALL_GATHER, REDUCE_SCATTER,
                           * ALL_TO_ALL */
  ModelMeshDim dim;       /* MODEL_MESH_CP */
  double bytes;           /* B, hardware/collective.h's convention */
  gint step;              /* ring: the step whose kernel it runs beside (its data feeds step
                           * + 1); -1: on the critical path, in list order around the
                           * kernels (all_gather and ulysses: the first ones before the
                           * attention, the rest after) */
  gboolean before_attention; /* -1 steps: issued before the attention kernels */
} ModelCpComm;

/* The cp collectives of one layer's attention for one micro-batch in `pass`, appended to
 * `out` (GArray of ModelCpComm) in issue order; the same on every cp rank. Sizes as in the
 * file comment. Nothing for cp = 1. */
void model_cp_layer_comms (const ModelCpParams *p, ModelCpPass pass, GArray *out);

/* The ring's duration, Σ_i max(compute_i, comm_i) over n steps (s; comm_i 0 where the
 * step sends nothing): see Overlap above. The exposed communication is this minus
 * Σ compute_i. */
double model_cp_ring_critical_path (const double *compute_s, const double *comm_s, guint n);

/* ---- Memory ------------------------------------------------------------------------- */

/* B the attention of `rank` holds beyond its graph tensors while it runs (transient,
 * released when the op returns; the saved tensors are the sharded graph's):
 *   ring forward: every step's K/V buffer (TE keeps the cp P2P buffers, the first a copy
 *                 of the rank's own, in a list until the forward returns) cp·KV, plus
 *                 every step's partial output e·b·q_len·a·dv and logsumexp 4·b·a·q_len
 *                 (out_per_step, softmax_lse_per_step, merged after the loop): rank cp−1's
 *                 steps all cover both query chunks, so its outputs sum to the whole
 *                 sequence's
 *   ring backward: two [K/V, dK/dV] P2P buffers 4·KV, the dq accumulator (q's size) and
 *                  the largest step's dq, dk, dv
 *   all_gather forward: the gathered K and V (cp·KV) and the two chunks' partial outputs
 *                       and logsumexp; backward: the re-gathered K/V, the whole-sequence
 *                       dK/dV accumulators (cp·KV) and the two chunks' dq, dk, dv
 *   ulysses: the all-to-all's contiguous staging copy of q (or the output), one rank's q
 * The chunk reorders' momentary index_select copies are not counted. 0 for cp = 1. */
double model_cp_attention_workspace (const ModelCpParams *p, guint rank, ModelCpPass pass);

/* The layer graph `g` (graph.h) as one cp rank holds it: every tensor's bytes / cp — each
 * is per token, split along the sequence, or (ulysses, inside the attention) per head,
 * split over heads with the whole sequence, the same bytes — except a dequantized NF4
 * weight (QLoRA's nf4_dequantized), which is whole. Ulysses adds the output's all-to-all:
 * a tensor attn_out_a2a (the o-projection's input, b·(s/cp)·a·d·e) after the attention,
 * which the ops after it read instead of attn_out, so a flash attention's saved output and
 * the o-projection's saved input are two tensors (TE's a2a saves out_part before the
 * all-to-all; DeepSpeed's local attention saves its output too). Nothing gathered is
 * saved: the ring saves the last step's received K/V in place of the rank's own
 * (kv = p2p_comm_buffers[-1], the same bytes), all_gather the local q, k, v and output
 * (f16_tensors = (q, k, v, out_f16)) and re-gathers K/V in the backward. The ops keep their saves,
 * writes and frees; their kernels are dropped (launches FALSE): a rank's kernels are the
 * graph's at seq_len/cp with the attention replaced by model_cp_attention_steps.
 * Errors (G_KEY_FILE_ERROR_INVALID_VALUE): ring or all_gather over an eager attention core
 * (TE's UnfusedDotProductAttention and PyTorch's ring attention need a fused kernel:
 * [training] attention and [parallel] cp named). New graph or NULL; cp = 1 copies. */
ModelGraph *model_cp_shard_graph (const ModelGraph *g, const ModelCpParams *p, GError **error);
