/* models/parallel/context_parallel.c — context parallelism: the checks, each rank's
 * attention kernels under causal load balancing, the cp collectives, the attention's
 * workspace and the per-rank saved-tensor graph; see context_parallel.h for the sources
 * (TransformerEngine context_parallel.py, Megatron-LM get_batch_on_this_cp_rank,
 * DeepSpeed deepspeed/sequence/layer.py). */
#include "config.h"
#include "models/parallel/context_parallel.h"
#include "sim/text.h"

#include <string.h>

static const char *const variant_names[MODEL_CP_N_VARIANTS + 1] = { "ring", "all_gather", "ulysses",
                                                                  NULL };

const char *
model_cp_variant_name (ModelCpVariant variant)
{
  g_return_val_if_fail (variant < MODEL_CP_N_VARIANTS, "?");
  return variant_names[variant];
}

gboolean
model_cp_variant_from_string (const char *text, ModelCpVariant *out, GError **error)
{
  int v;
  if (!sim_text_lookup (variant_names, "context-parallel variant", text, &v, error))
    return FALSE;
  *out = (ModelCpVariant) v;
  return TRUE;
}

void
model_cp_params_init (ModelCpParams *p, const ModelArch *arch, const ModelMesh *mesh,
                      ModelCpVariant variant, guint64 micro_batch, guint64 seq_len,
                      double act_bytes)
{
  g_return_if_fail (p != NULL && arch != NULL && mesh != NULL);
  guint tp = MAX (mesh->degree[MODEL_MESH_TP], 1);
  guint64 k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  *p = (ModelCpParams){
    .variant = variant,
    .cp = MAX (mesh->degree[MODEL_MESH_CP], 1),
    .load_balance = variant != MODEL_CP_ULYSSES,
    .causal = arch->family != MODEL_FAMILY_BERT,
    .micro_batch = micro_batch,
    .seq_len = seq_len,
    .window = arch->sliding_window > 0 && arch->sliding_window < seq_len ? arch->sliding_window : 0,
    .q_heads = arch->n_heads / tp,
    .kv_heads = k >= tp ? k / tp : 1, /* tensor_parallel.h: one KV head per rank when k < tp */
    .head_dim = arch->head_dim,
    /* MLA: values of v_head_dim (arch.h ModelDeepseek); else V heads are K's */
    .v_head_dim = arch->deepseek.mla ? arch->deepseek.v_head_dim : arch->head_dim,
    .act_bytes = act_bytes,
  };
}

/* "model key num_attention_heads = 32 (8 per rank at [parallel] tp = 4)" */
static char *
heads_text (const char *key, guint64 total, guint64 local, guint tp)
{
  if (tp <= 1)
    return g_strdup_printf ("model key %s = %" G_GUINT64_FORMAT, key, total);
  return g_strdup_printf ("model key %s = %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT
                          " per tensor-parallel rank at [parallel] tp = %u)", key, total, local, tp);
}

static gboolean
check_ulysses_heads (const ModelArch *arch, const ModelCpParams *p, guint tp, GError **error)
{
  guint64 k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  const char *key = NULL;
  guint64 total = 0, local = 0;
  if (p->q_heads % p->cp != 0)
    key = "num_attention_heads", total = arch->n_heads, local = p->q_heads;
  else if (p->kv_heads % p->cp != 0)
    key = "num_key_value_heads", total = k, local = p->kv_heads;
  if (key == NULL)
    return TRUE;
  g_autofree char *what = heads_text (key, total, local, tp);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "%s is not a multiple of [parallel] cp = %u (Ulysses' all-to-all scatters the "
               "heads over the context-parallel ranks: deepspeed/sequence/layer.py, "
               "TransformerEngine's cp_comm_type='a2a' requires num_heads %% cp_size == 0)",
               what, p->cp);
  return FALSE;
}

guint64
model_cp_seq_multiple (const ModelCpParams *p)
{
  g_return_val_if_fail (p != NULL, 1);
  if (p->cp <= 1)
    return 1;
  return p->load_balance ? 2 * (guint64) p->cp : p->cp;
}

gboolean
model_cp_check (const ModelArch *arch, const ModelMesh *mesh, guint n_gpus,
                const ModelCpParams *p, GError **error)
{
  g_return_val_if_fail (arch != NULL && mesh != NULL && p != NULL, FALSE);
  g_return_val_if_fail (p->cp == MAX (mesh->degree[MODEL_MESH_CP], 1), FALSE);
  if (!model_mesh_validate (mesh, n_gpus, error))
    return FALSE;
  if (p->cp <= 1)
    return TRUE;
  /* Experts need nothing here: a MoE layer routes the rank's own s/cp tokens over expert
   * groups carved from the stage's dp·cp·tp ranks (mesh.h, expert_parallel.h); Multi-head
   * Latent Attention neither: its per-head K (dn + dr) and V (dv) widths are the steps'
   * head_dim and v_head_dim. */
  guint64 chunks = model_cp_seq_multiple (p);
  if (p->seq_len % chunks != 0)
    {
      g_autofree char *what = p->load_balance
                                ? g_strdup_printf ("2·[parallel] cp = 2·%u = %" G_GUINT64_FORMAT,
                                                   p->cp, chunks)
                                : g_strdup_printf ("[parallel] cp = %u", p->cp);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[training] seq_len = %" G_GUINT64_FORMAT " is not a multiple of %s (%s)",
                   p->seq_len, what,
                   p->load_balance
                     ? "causal load balancing cuts the sequence into 2·cp chunks, rank r "
                       "holding chunks r and 2·cp−1−r: Megatron-LM get_batch_on_this_cp_rank"
                     : "every context-parallel rank holds seq_len / cp tokens");
      return FALSE;
    }
  if (p->variant == MODEL_CP_ULYSSES)
    return check_ulysses_heads (arch, p, MAX (mesh->degree[MODEL_MESH_TP], 1), error);
  if (p->window > 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "model key sliding_window = %" G_GUINT64_FORMAT " is shorter than [training] "
                   "seq_len = %" G_GUINT64_FORMAT ": %s context parallelism over a sliding "
                   "window is %s (use the ulysses variant)", p->window, p->seq_len,
                   variant_names[p->variant],
                   p->variant == MODEL_CP_RING
                     ? "refused by TransformerEngine (attn_forward_func_with_cp)"
                     : "not modelled");
      return FALSE;
    }
  return TRUE;
}

/* ---- Attention work ------------------------------------------------------------------ */

/* A step of `q_tiles`×`kv_tiles` blocks of `tile` tokens with n_full whole and n_diag
 * diagonal blocks: its FLOPs from the tiles (context_parallel.h). */
static ModelCpStep
make_step (const ModelCpParams *p, guint index, guint src, guint64 tile, guint64 heads,
           guint64 q_tiles, guint64 kv_tiles, guint n_full, guint n_diag)
{
  ModelCpStep s = { .index = index, .kv_source = src, .tile = tile, .q_len = q_tiles * tile,
                    .kv_len = kv_tiles * tile, .heads = heads, .causal = n_diag > 0,
                    .n_full = n_full, .n_diagonal = n_diag };
  double unit = 2.0 * (double) p->micro_batch * (double) tile * (double) tile * (double) heads
                * (double) (p->head_dim + p->v_head_dim);
  s.exec_flops = ((double) n_full + 0.5 * n_diag) * unit;
  s.flops = s.causal ? 2 * s.exec_flops : s.exec_flops;
  return s;
}

/* The ring step that attends to the K/V of cp rank `src` (TE's three causal sections). */
static ModelCpStep
ring_step (const ModelCpParams *p, guint rank, guint index, guint src)
{
  guint64 chunk = p->seq_len / p->cp, tile = p->load_balance ? chunk / 2 : chunk;
  guint n = p->load_balance ? 2 : 1; /* tiles per rank */
  if (!p->causal)
    return make_step (p, index, src, tile, p->q_heads, n, n, n * n, 0);
  if (src == rank) /* "diagonal": causal over the rank's own chunks */
    return make_step (p, index, src, tile, p->q_heads, n, n, n - 1, n);
  if (!p->load_balance) /* PyTorch _is_causal_behavior: full, or SKIP when src > rank */
    return make_step (p, index, src, tile, p->q_heads, 1, 1, src < rank ? 1 : 0, 0);
  if (src < rank) /* "lower-triangle": both query chunks, the first K/V chunk */
    return make_step (p, index, src, tile, p->q_heads, 2, 1, 2, 0);
  return make_step (p, index, src, tile, p->q_heads, 1, 2, 2, 0); /* "upper-triangle" */
}

static void
ring_steps (const ModelCpParams *p, guint rank, ModelCpPass pass, GArray *out)
{
  for (guint i = 0; i < p->cp; i++)
    {
      guint src = pass == MODEL_CP_FORWARD ? (rank + p->cp - i) % p->cp : (rank + 1 + i) % p->cp;
      ModelCpStep s = ring_step (p, rank, i, src);
      g_array_append_val (out, s);
    }
}

/* Query chunk `chunk` (of `tile` tokens) against the K/V prefix it attends to. */
static ModelCpStep
gather_step (const ModelCpParams *p, guint rank, guint index, guint64 chunk, guint64 tile,
             guint64 n_chunks)
{
  if (!p->causal)
    return make_step (p, index, rank, tile, p->q_heads, 1, n_chunks, (guint) n_chunks, 0);
  return make_step (p, index, rank, tile, p->q_heads, 1, chunk + 1, (guint) chunk, 1);
}

static void
all_gather_steps (const ModelCpParams *p, guint rank, GArray *out)
{
  ModelCpStep s;
  if (!p->load_balance)
    {
      s = gather_step (p, rank, 0, rank, p->seq_len / p->cp, p->cp);
      g_array_append_val (out, s);
      return;
    }
  guint64 tile = p->seq_len / (2 * (guint64) p->cp), n = 2 * (guint64) p->cp;
  s = gather_step (p, rank, 0, rank, tile, n);
  g_array_append_val (out, s);
  s = gather_step (p, rank, 1, n - 1 - rank, tile, n);
  g_array_append_val (out, s);
}

/* Ulysses (and cp = 1): the whole sequence on a/cp heads, counted as the layer graph
 * counts its attention (2·b·s·s_kv·heads·(d + dv), causal halved). */
static void
whole_sequence_step (const ModelCpParams *p, guint rank, GArray *out)
{
  guint64 s = p->seq_len, kv = p->window > 0 && p->window < s ? p->window : s;
  ModelCpStep st = { .index = 0, .kv_source = rank, .tile = s, .q_len = s, .kv_len = kv,
                     .heads = p->q_heads / p->cp, .causal = p->causal,
                     .n_full = p->causal ? 0 : 1, .n_diagonal = p->causal ? 1 : 0 };
  st.flops = 2.0 * (double) p->micro_batch * (double) s * (double) kv * (double) st.heads
             * (double) (p->head_dim + p->v_head_dim);
  st.exec_flops = p->causal ? st.flops / 2 : st.flops;
  g_array_append_val (out, st);
}

guint
model_cp_attention_steps (const ModelCpParams *p, guint rank, ModelCpPass pass, GArray *out)
{
  g_return_val_if_fail (p != NULL && out != NULL && p->cp >= 1 && rank < p->cp, 0);
  guint before = out->len;
  if (p->cp == 1 || p->variant == MODEL_CP_ULYSSES)
    whole_sequence_step (p, rank, out);
  else if (p->variant == MODEL_CP_RING)
    ring_steps (p, rank, pass, out);
  else
    all_gather_steps (p, rank, out);
  return out->len - before;
}

double
model_cp_attention_flops (const ModelCpParams *p, guint rank)
{
  g_autoptr (GArray) steps = g_array_new (FALSE, FALSE, sizeof (ModelCpStep));
  model_cp_attention_steps (p, rank, MODEL_CP_FORWARD, steps);
  double f = 0;
  for (guint i = 0; i < steps->len; i++)
    f += g_array_index (steps, ModelCpStep, i).exec_flops;
  return f;
}

double
model_cp_kv_chunk_bytes (const ModelCpParams *p)
{
  g_return_val_if_fail (p != NULL && p->cp >= 1, 0);
  return (double) p->micro_batch * (double) (p->seq_len / p->cp) * (double) p->kv_heads
         * (double) (p->head_dim + p->v_head_dim) * p->act_bytes;
}

/* ---- Communication ------------------------------------------------------------------- */

static void
comm (GArray *out, const char *name, HwCollectiveKind kind, double bytes, gint step,
      gboolean before)
{
  ModelCpComm c = { name, kind, MODEL_MESH_CP, bytes, step, before };
  g_array_append_val (out, c);
}

static void
ring_comms (const ModelCpParams *p, ModelCpPass pass, GArray *out)
{
  double kv = model_cp_kv_chunk_bytes (p);
  if (pass == MODEL_CP_FORWARD)
    {
      for (guint i = 0; i + 1 < p->cp; i++)
        comm (out, "ring K/V send/recv", HW_COLLECTIVE_SEND_RECV, kv, (gint) i, TRUE);
      return;
    }
  /* backward: K/V first, K/V with the dK/dV so far, the dK/dV home last */
  for (guint i = 0; i < p->cp; i++)
    {
      if (i == 0)
        comm (out, "ring K/V send/recv", HW_COLLECTIVE_SEND_RECV, kv, 0, TRUE);
      else if (i == p->cp - 1)
        comm (out, "ring dK/dV send/recv", HW_COLLECTIVE_SEND_RECV, kv, (gint) i, TRUE);
      else
        comm (out, "ring K/V + dK/dV send/recv", HW_COLLECTIVE_SEND_RECV, 2 * kv, (gint) i, TRUE);
    }
}

/* TE AttnFuncWithCPAndKVAllGather: K and V gathered before the attention (again in the
 * backward, which also reduce-scatters the whole-sequence dK and dV after it). */
static void
all_gather_comms (double k_whole, double v_whole, gboolean fwd, GArray *out)
{
  comm (out, fwd ? "K all-gather" : "K re-gather", HW_COLLECTIVE_ALL_GATHER, k_whole, -1, TRUE);
  comm (out, fwd ? "V all-gather" : "V re-gather", HW_COLLECTIVE_ALL_GATHER, v_whole, -1, TRUE);
  if (fwd)
    return;
  comm (out, "dK reduce-scatter", HW_COLLECTIVE_REDUCE_SCATTER, k_whole, -1, FALSE);
  comm (out, "dV reduce-scatter", HW_COLLECTIVE_REDUCE_SCATTER, v_whole, -1, FALSE);
}

/* deepspeed/sequence/layer.py DistributedAttention.forward: q, k, v in, the output out;
 * _SeqAllToAll.backward: the same all-to-alls of the gradients, dout first. `q_local`,
 * `k_local`, `v_local`, `o_local`: one rank's q, k, v and output (of the values' width). */
static void
ulysses_comms (double q_local, double k_local, double v_local, double o_local, gboolean fwd,
               GArray *out)
{
  comm (out, fwd ? "q all-to-all" : "dout all-to-all", HW_COLLECTIVE_ALL_TO_ALL,
        fwd ? q_local : o_local, -1, TRUE);
  if (fwd)
    {
      comm (out, "k all-to-all", HW_COLLECTIVE_ALL_TO_ALL, k_local, -1, TRUE);
      comm (out, "v all-to-all", HW_COLLECTIVE_ALL_TO_ALL, v_local, -1, TRUE);
      comm (out, "output all-to-all", HW_COLLECTIVE_ALL_TO_ALL, o_local, -1, FALSE);
      return;
    }
  comm (out, "dq all-to-all", HW_COLLECTIVE_ALL_TO_ALL, q_local, -1, FALSE);
  comm (out, "dk all-to-all", HW_COLLECTIVE_ALL_TO_ALL, k_local, -1, FALSE);
  comm (out, "dv all-to-all", HW_COLLECTIVE_ALL_TO_ALL, v_local, -1, FALSE);
}

void
model_cp_layer_comms (const ModelCpParams *p, ModelCpPass pass, GArray *out)
{
  g_return_if_fail (p != NULL && out != NULL);
  if (p->cp <= 1)
    return;
  double bs = (double) p->micro_batch * (double) p->seq_len * p->act_bytes;
  double d = (double) p->head_dim, dv = (double) p->v_head_dim;
  double k_whole = bs * (double) p->kv_heads * d;  /* b·s·k·d·e */
  double v_whole = bs * (double) p->kv_heads * dv; /* b·s·k·dv·e */
  double q_local = bs * (double) p->q_heads * d / p->cp;  /* b·(s/cp)·a·d·e */
  double o_local = bs * (double) p->q_heads * dv / p->cp; /* b·(s/cp)·a·dv·e */
  gboolean fwd = pass == MODEL_CP_FORWARD;
  if (p->variant == MODEL_CP_RING)
    ring_comms (p, pass, out);
  else if (p->variant == MODEL_CP_ALL_GATHER)
    all_gather_comms (k_whole, v_whole, fwd, out);
  else
    ulysses_comms (q_local, k_whole / p->cp, v_whole / p->cp, o_local, fwd, out);
}

double
model_cp_ring_critical_path (const double *compute_s, const double *comm_s, guint n)
{
  g_return_val_if_fail (n == 0 || (compute_s != NULL && comm_s != NULL), 0);
  double t = 0;
  for (guint i = 0; i < n; i++)
    t += MAX (compute_s[i], comm_s[i]);
  return t;
}

/* ---- Memory -------------------------------------------------------------------------- */

/* A step's partial output (e·b·q·a·dv) and logsumexp (fp32 b·a·q), none for an empty step. */
static double
step_output_bytes (const ModelCpParams *p, const ModelCpStep *s)
{
  if (s->n_full + s->n_diagonal == 0)
    return 0;
  double bq = (double) p->micro_batch * (double) s->q_len * (double) p->q_heads;
  return bq * (double) p->v_head_dim * p->act_bytes + 4 * bq;
}

/* A step's dq, dk, dv (the flash backward's outputs for its query and key parts). */
static double
step_grad_bytes (const ModelCpParams *p, const ModelCpStep *s)
{
  if (s->n_full + s->n_diagonal == 0)
    return 0;
  double b = (double) p->micro_batch, d = (double) p->head_dim, e = p->act_bytes;
  double dv = (double) p->v_head_dim;
  return b * e * ((double) s->q_len * (double) p->q_heads * d
                  + (double) s->kv_len * (double) p->kv_heads * (d + dv));
}

double
model_cp_attention_workspace (const ModelCpParams *p, guint rank, ModelCpPass pass)
{
  g_return_val_if_fail (p != NULL && p->cp >= 1 && rank < p->cp, 0);
  if (p->cp == 1)
    return 0;
  double kv = model_cp_kv_chunk_bytes (p);
  double q = (double) p->micro_batch * (double) (p->seq_len / p->cp) * (double) p->q_heads
             * (double) p->head_dim * p->act_bytes;
  if (p->variant == MODEL_CP_ULYSSES)
    return q;
  g_autoptr (GArray) steps = g_array_new (FALSE, FALSE, sizeof (ModelCpStep));
  model_cp_attention_steps (p, rank, pass, steps);
  double sum = 0, largest = 0;
  for (guint i = 0; i < steps->len; i++)
    {
      const ModelCpStep *s = &g_array_index (steps, ModelCpStep, i);
      double x = pass == MODEL_CP_FORWARD ? step_output_bytes (p, s) : step_grad_bytes (p, s);
      sum += x;
      largest = MAX (largest, x);
    }
  if (p->variant == MODEL_CP_RING)
    return pass == MODEL_CP_FORWARD ? p->cp * kv + sum : 4 * kv + q + largest;
  return pass == MODEL_CP_FORWARD ? p->cp * kv + sum : 2 * p->cp * kv + sum;
}

/* ---- Activations --------------------------------------------------------------------- */

static gint
tensor_named (const ModelGraph *g, const char *name)
{
  for (guint i = 0; i < g->tensors->len; i++)
    if (strcmp (g_array_index (g->tensors, ModelGraphTensor, i).name, name) == 0)
      return (gint) i;
  return -1;
}

static void
swap_index (guint *list, guint n, guint from, guint to)
{
  for (guint j = 0; j < n; j++)
    if (list[j] == from)
      list[j] = to;
}

/* The ops of `r` (a copy of the graph), kernels dropped unless `keep_kernels`; with `a2a`
 * >= 0 (ulysses), after the op making attn_out (`o`) an op making its all-to-all'd copy
 * `a2a`, which the later ops read (saves and frees) instead. */
static void
rewrite_ops (ModelGraph *r, gboolean keep_kernels, gint o, gint a2a)
{
  gboolean after = FALSE;
  for (guint i = 0; i < r->ops->len; i++)
    {
      ModelGraphOp *op = &g_array_index (r->ops, ModelGraphOp, i);
      if (!keep_kernels)
        {
          op->launches = FALSE;
          op->kernel.flops = op->kernel.bytes = 0;
        }
      if (after)
        {
          swap_index (op->saved, op->n_saved, (guint) o, (guint) a2a);
          swap_index (op->frees, op->n_frees, (guint) o, (guint) a2a);
        }
      else if (a2a >= 0 && op->out == (guint) o)
        {
          /* the output all-to-all: makes attn_out_a2a, last use of attn_out */
          ModelGraphOp x = { .name = "attn_out_a2a", .out = (guint) a2a, .n_frees = 1 };
          x.frees[0] = (guint) o;
          g_array_insert_val (r->ops, i + 1, x);
          i++; /* past the inserted op, which reads nothing to rewrite */
          after = TRUE;
        }
    }
}

ModelGraph *
model_cp_shard_graph (const ModelGraph *g, const ModelCpParams *p, GError **error)
{
  g_return_val_if_fail (g != NULL && p != NULL && p->cp >= 1, NULL);
  if (p->cp > 1 && p->variant != MODEL_CP_ULYSSES && tensor_named (g, "scores") >= 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[training] attention = eager with [parallel] cp = %u: %s context "
                   "parallelism needs a fused attention kernel (TransformerEngine's CP runs "
                   "in FlashAttention/FusedAttention only; PyTorch's ring attention in the "
                   "SDPA flash/efficient kernels); use flash or sdpa, or the ulysses variant",
                   p->cp, variant_names[p->variant]);
      return NULL;
    }
  g_autofree double *ways = g_new (double, g->tensors->len + 1);
  for (guint i = 0; i < g->tensors->len; i++)
    ways[i] = strcmp (g_array_index (g->tensors, ModelGraphTensor, i).name, "nf4_dequantized")
              == 0 ? 1 : p->cp;
  g_autoptr (ModelGraph) r = model_graph_copy_scaled (g, ways);
  gint o = tensor_named (g, "attn_out"), a2a = -1;
  if (p->cp > 1 && p->variant == MODEL_CP_ULYSSES && o >= 0)
    {
      double bytes = g_array_index (r->tensors, ModelGraphTensor, o).bytes;
      a2a = (gint) model_graph_tensor (r, "attn_out_a2a", bytes, MODEL_TENSOR_ATTENTION, -1);
    }
  rewrite_ops (r, p->cp == 1, o, a2a);
  return g_steal_pointer (&r);
}
