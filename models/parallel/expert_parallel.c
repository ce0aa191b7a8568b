/* models/parallel/expert_parallel.c — expert parallelism: the degree checks, a rank's
 * expert parameters, one MoE layer's dispatch, collectives and activations; see
 * expert_parallel.h for the sources. */
#include "config.h"
#include "models/parallel/expert_parallel.h"

#include <math.h>
#include <string.h>
#include "models/parallel/tensor_parallel.h"
#include "sim/text.h"

static gboolean
fail (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

static gboolean
fail (GError **error, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, msg);
  return FALSE;
}

/* The checks that need only the expert degrees (model_ep_check adds the mesh's carving). */
static gboolean
check_degrees (const ModelArch *arch, guint ep, guint etp, GError **error)
{
  if (ep < 1 || etp < 1)
    return fail (error, "[parallel] ep = %u and etp = %u must be >= 1", ep, etp);
  if (arch->n_experts == 0)
    {
      if (ep > 1 || etp > 1)
        return fail (error, "[parallel] ep = %u, etp = %u: the model has no experts "
                     "(num_local_experts absent or 0), so there is nothing to split over "
                     "expert-parallel ranks", ep, etp);
      return TRUE;
    }
  /* moe_layer.py MoELayer.__init__: assert num_moe_experts % ep_size == 0 */
  if (arch->n_experts % ep != 0)
    return fail (error, "model key num_local_experts = %" G_GUINT64_FORMAT " is not a multiple "
                 "of [parallel] ep = %u (each expert-parallel rank holds num_local_experts / ep "
                 "experts)", arch->n_experts, ep);
  if (arch->intermediate_size % etp != 0)
    return fail (error, "model key intermediate_size = %" G_GUINT64_FORMAT " is not a multiple "
                 "of [parallel] etp = %u (an expert's fc1 and fc2 split it over the expert "
                 "tensor-parallel ranks)", arch->intermediate_size, etp);
  if (arch->experts_per_token < 1 || arch->experts_per_token > arch->n_experts)
    return fail (error, "model key num_experts_per_tok = %" G_GUINT64_FORMAT " must be between "
                 "1 and num_local_experts = %" G_GUINT64_FORMAT, arch->experts_per_token,
                 arch->n_experts);
  return TRUE;
}

gboolean
model_ep_check (const ModelArch *arch, const ModelMesh *mesh, GError **error)
{
  g_return_val_if_fail (arch != NULL && mesh != NULL, FALSE);
  if (!check_degrees (arch, mesh->ep, mesh->etp, error))
    return FALSE;
  /* parallel_state.py: world % (etp·ep·pp) == 0, expert dp = world / (etp·ep·pp) */
  guint stage = model_mesh_size (mesh) / MAX (mesh->degree[MODEL_MESH_PP], 1);
  if (stage % (mesh->ep * mesh->etp) != 0)
    return fail (error, "[parallel] ep = %u × etp = %u does not divide the dp·cp·tp = %u rank%s "
                 "of a pipeline stage (Megatron-LM carves the expert grid etp × ep × expert-dp "
                 "out of %s)", mesh->ep, mesh->etp, stage, stage == 1 ? "" : "s",
                 stage == 1 ? "it" : "them");
  return TRUE;
}

static const char *const dispatcher_names[MODEL_EP_N_DISPATCHERS + 1] = { "alltoall",
                                                                          "allgather", NULL };

const char *
model_ep_dispatcher_name (ModelEpDispatcher dispatcher)
{
  g_return_val_if_fail (dispatcher < MODEL_EP_N_DISPATCHERS, "?");
  return dispatcher_names[dispatcher];
}

gboolean
model_ep_dispatcher_from_string (const char *text, ModelEpDispatcher *out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  /* transformer_config.py: moe_token_dispatcher_type is one of allgather, alltoall, flex */
  if (text != NULL && strcmp (text, "flex") == 0)
    return fail (error, "'flex' (Megatron-LM's MoEFlexTokenDispatcher over DeepEP, HybridEP "
                 "or NCCL EP kernels) is not modelled; use alltoall or allgather");
  int v;
  if (!sim_text_lookup (dispatcher_names, "token dispatcher", text, &v, error))
    return FALSE;
  *out = (ModelEpDispatcher) v;
  return TRUE;
}

/* ---- Parameters ------------------------------------------------------------------------ */

static gboolean
is_adapter (const ModelTensor *t)
{
  return t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B
         || t->role == MODEL_TENSOR_DORA_MAGNITUDE;
}

gboolean
model_ep_tensor_is_expert (const ModelInventory *inv, const ModelTensor *t)
{
  g_return_val_if_fail (inv != NULL && t != NULL, FALSE);
  if (inv->arch->n_experts == 0)
    return FALSE;
  if (t->base >= 0)
    t = model_inventory_tensor (inv, (guint) t->base);
  /* an expert's tensor is counted n_experts times; deepseek's dense first layers have an
   * MLP of the same roles, one copy, which is no expert */
  return (t->role == MODEL_TENSOR_MLP_GATE || t->role == MODEL_TENSOR_MLP_UP
          || t->role == MODEL_TENSOR_MLP_DOWN)
         && t->count == inv->arch->n_experts;
}

gboolean
model_ep_trains_experts (const ModelInventory *inv)
{
  g_return_val_if_fail (inv != NULL, FALSE);
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      if (t->trainable && model_ep_tensor_is_expert (inv, t))
        return TRUE;
    }
  return FALSE;
}

typedef struct
{
  const ModelInventory *inv;
  guint etp;
  int which; /* 0 experts split over etp, 1 experts whole, 2 router */
} FoldData;

/* Elements of one copy of `t` in the requested bucket; 0 outside it. An expert's linear
 * splits one dimension over etp (column: out features, row: in features; a row-parallel
 * bias, fc2's, is whole, as tensor_parallel.h says), so its elements divide by etp except
 * that bias. */
static double
bucket_numel (const ModelTensor *t, gpointer data)
{
  const FoldData *f = data;
  if (is_adapter (t) || !model_tensor_is_parameter (t))
    return 0;
  if (f->which == 2)
    return t->role == MODEL_TENSOR_ROUTER ? (double) model_tensor_numel (t) : 0;
  if (!model_ep_tensor_is_expert (f->inv, t))
    return 0;
  double n = (double) model_tensor_numel (t);
  gboolean whole = t->is_bias && t->role == MODEL_TENSOR_MLP_DOWN;
  return f->which == 0 && !whole ? n / f->etp : n;
}

gboolean
model_ep_param_split (const ModelInventory *inv, const ModelMesh *mesh, ModelEpParamSplit *out,
                      GError **error)
{
  g_return_val_if_fail (inv != NULL && mesh != NULL && out != NULL, FALSE);
  if (!model_ep_check (inv->arch, mesh, error))
    return FALSE;
  FoldData f = { inv, mesh->etp, 0 };
  /* fold: Σ copies × numel; copies = n_experts × n_layers for an expert tensor, of which a
   * rank holds 1/ep */
  double split = model_inventory_fold (inv, MODEL_INVENTORY_ALL, bucket_numel, &f);
  f.which = 1;
  double total = model_inventory_fold (inv, MODEL_INVENTORY_ALL, bucket_numel, &f);
  f.which = 2;
  double router = model_inventory_fold (inv, MODEL_INVENTORY_ALL, bucket_numel, &f);
  *out = (ModelEpParamSplit){
    .n_local_experts = inv->arch->n_experts > 0 ? (guint) (inv->arch->n_experts / mesh->ep) : 0,
    .expert_numel = (guint64) llround (split / mesh->ep),
    .expert_total = (guint64) llround (total),
    .router_numel = (guint64) llround (router),
  };
  return TRUE;
}

/* ---- Dispatch -------------------------------------------------------------------------- */

void
model_ep_params_init (ModelEpParams *p)
{
  g_return_if_fail (p != NULL);
  *p = (ModelEpParams){ .micro_batch = 1, .seq_len = 1, .tp = 1, .cp = 1, .ep = 1, .etp = 1,
                        .act_bytes = 2, .prob_bytes = 2, .capacity_factor = 1,
                        .imbalance = 1 };
}

gboolean
model_ep_expert_shares (const char *spec, guint64 n_experts, guint64 top_k, double *f,
                        GError **error)
{
  g_return_val_if_fail (spec != NULL && n_experts > 0 && f != NULL, FALSE);
  guint E = (guint) n_experts;
  g_autofree char *text = g_strstrip (g_strdup (spec));
  if (g_str_has_prefix (text, "zipf:"))
    {
      double S;
      char *end = NULL;
      const char *num = text + strlen ("zipf:");
      S = g_ascii_strtod (num, &end);
      if (end == num || *g_strchug (end) != '\0' || !isfinite (S) || S < 0)
        return fail (error, "[moe] expert_load = %s: zipf:S needs an exponent S >= 0 (0 is "
                     "uniform; e.g. zipf:1.1)", spec);
      double sum = 0;
      for (guint q = 0; q < E; q++)
        sum += pow (q + 1.0, -S);
      /* popularity rank q on expert perm[q]: Fisher-Yates with GRand seeded 1 */
      g_autofree guint *perm = g_new (guint, E);
      for (guint e = 0; e < E; e++)
        perm[e] = e;
      g_autoptr (GRand) rand = g_rand_new_with_seed (1);
      for (guint e = E; e-- > 1;)
        {
          guint j = (guint) g_rand_int_range (rand, 0, (gint32) e + 1);
          guint t = perm[e];
          perm[e] = perm[j], perm[j] = t;
        }
      for (guint q = 0; q < E; q++)
        f[perm[q]] = pow (q + 1.0, -S) / sum;
    }
  else
    {
      g_auto (GStrv) parts = g_strsplit (text, ",", -1);
      guint n = g_strv_length (parts);
      if (n > 1 && *g_strstrip (parts[n - 1]) == '\0') /* a trailing comma */
        n--;
      char *end = NULL;
      if (n == 1 && E > 1 && (g_ascii_strtod (parts[0], &end), *g_strchug (end) != '\0'))
        return fail (error, "[moe] expert_load = %s: not zipf:S nor a number; give the %u "
                     "experts' relative loads separated by commas (e.g. 8, 3, 5, …) or zipf:S",
                     spec, E);
      if (n != E)
        return fail (error, "[moe] expert_load: %u value%s for the model's %u experts (give "
                     "one relative load per expert, in expert order, or zipf:S)", n,
                     n == 1 ? "" : "s", E);
      double top = 0, sum = 0;
      for (guint e = 0; e < E; e++)
        {
          const char *v = g_strstrip (parts[e]);
          f[e] = g_ascii_strtod (v, &end);
          if (end == v || *end != '\0' || !isfinite (f[e]) || f[e] < 0)
            return fail (error, "[moe] expert_load: value %u '%s' is not a non-negative "
                         "number (relative loads, e.g. tokens per expert)", e + 1, v);
          top = MAX (top, f[e]);
        }
      if (!(top > 0))
        return fail (error, "[moe] expert_load: every load is 0 (no expert receives a "
                     "token)");
      /* scaled by the largest first: a sum of values near DBL_MAX would overflow */
      for (guint e = 0; e < E; e++)
        sum += f[e] /= top;
      for (guint e = 0; e < E; e++)
        f[e] /= sum;
    }
  for (guint e = 0; e < E; e++)
    if (f[e] * (double) top_k > 1 + 1e-12)
      return fail (error, "[moe] expert_load = %s gives expert %u a share %.4g of the routed "
                   "copies, above 1 / num_experts_per_tok = %.4g (a token picks an expert at "
                   "most once, so an expert receives at most every token)", spec, e,
                   f[e], 1.0 / (double) top_k);
  return TRUE;
}

/* The dispatch's rows under per-expert shares f (model_ep_expert_shares, or load_imbalance's
 * one hot expert): each source rank's copies T·k·f_e per expert, clipped at the capacity
 * (or padded to it); the EP rank with the most rows is the slowest, its most loaded expert
 * the hot one. Fills d's loads, drops and rows; d->n_local_experts, group, routed and
 * capacity are set. */
static void
dispatch_shares (const ModelEpParams *p, const double *f, guint E, ModelEpDispatch *d)
{
  guint L = d->n_local_experts;
  double C = (double) d->capacity, max_load = 0;
  d->dropped = 0;
  double slowest = -1, least = G_MAXDOUBLE, hot = 0;
  for (guint j = 0; j < E / L; j++)
    {
      double rows = 0, top = 0;
      for (guint e = j * L; e < (j + 1) * L; e++)
        {
          double load = d->routed * f[e], kept = load;
          max_load = MAX (max_load, load);
          if (p->drop)
            {
              d->dropped += MAX (0, load - C);
              kept = p->pad ? C : MIN (load, C);
            }
          rows += kept;
          top = MAX (top, kept);
        }
      if (rows > slowest)
        slowest = rows, hot = top;
      least = MIN (least, rows);
    }
  d->hot_load = max_load;
  d->rest_load = E > 1 ? (d->routed - max_load) / (E - 1) : 0;
  d->hot_rows = d->group * hot;
  d->rest_rows = L > 1 ? d->group * (slowest - hot) / (L - 1) : 0;
  d->least_rows = d->group * least;
}

guint
model_ep_seq_multiple (const ModelEpParams *p)
{
  g_return_val_if_fail (p != NULL, 1);
  return MAX (p->cp, 1) * model_tp_seq_multiple (p->tp, p->sp);
}

gboolean
model_ep_dispatch (const ModelArch *arch, const ModelEpParams *p, ModelEpDispatch *out,
                   GError **error)
{
  g_return_val_if_fail (arch != NULL && p != NULL && out != NULL, FALSE);
  if (arch->n_experts == 0)
    return fail (error, "[parallel] ep: the model has no experts (num_local_experts absent "
                 "or 0), so it has no token dispatch");
  if (!check_degrees (arch, p->ep, p->etp, error))
    return FALSE;
  if (p->drop && !(isfinite (p->capacity_factor) && p->capacity_factor > 0))
    return fail (error, "[moe] capacity_factor = %g must be > 0 (each expert accepts "
                 "ceil(capacity_factor · tokens·top-k / experts) token copies per rank)",
                 p->capacity_factor);
  /* at capacity_factor = experts one expert may take every routed copy: a larger one drops
   * nothing more and only pads, to absurd sizes */
  if (p->drop && p->capacity_factor > (double) arch->n_experts)
    return fail (error, "[moe] capacity_factor = %g must be at most num_local_experts = %"
                 G_GUINT64_FORMAT " (a capacity of every routed copy: one expert taking all "
                 "drops nothing)", p->capacity_factor, arch->n_experts);
  if (p->pad && !p->drop)
    return fail (error, "[moe] pad_to_capacity needs a capacity_factor (Megatron-LM: "
                 "moe_pad_expert_input_to_capacity requires moe_expert_capacity_factor)");
  double E = (double) arch->n_experts, k = (double) arch->experts_per_token;
  g_autofree double *shares = g_new (double, arch->n_experts);
  if (p->expert_load != NULL)
    {
      if (!model_ep_expert_shares (p->expert_load, arch->n_experts, arch->experts_per_token,
                                   shares, error))
        return FALSE;
    }
  else if (!(isfinite (p->imbalance) && p->imbalance >= 1 && p->imbalance <= E / k))
    return fail (error, "[moe] load_imbalance = %g must be between 1 (uniform routing) and "
                 "num_local_experts / num_experts_per_tok = %g (the most loaded expert cannot "
                 "receive more copies than there are tokens)", p->imbalance, E / k);
  guint split = model_ep_seq_multiple (p);
  if (p->seq_len % split != 0)
    return fail (error, "[training] seq_len = %" G_GUINT64_FORMAT " is not a multiple of %u "
                 "([parallel] cp%s: the router's tokens are the rank's share of the sequence)",
                 p->seq_len, split, p->sp ? " · tp under sequence parallelism" : "");

  ModelEpDispatch d = { 0 };
  d.n_local_experts = (guint) (arch->n_experts / p->ep);
  d.group = p->ep * p->etp;
  d.tokens = (double) p->micro_batch * (double) (p->seq_len / split);
  d.routed = d.tokens * k;
  d.mean_load = d.routed / E;
  /* moe_utils.py get_capacity: ceil((num_tokens / num_experts) · capacity_factor) with
   * num_tokens = T·k; the product is formed as there, then rounded up */
  if (p->drop)
    d.capacity = (guint64) ceil (d.routed / E * p->capacity_factor);
  /* load_imbalance r as shares: expert 0 (on EP rank 0) r/E, the E − 1 others the rest
   * evenly */
  if (p->expert_load == NULL)
    for (guint e = 0; e < arch->n_experts; e++)
      shares[e] = e == 0 ? p->imbalance / E : E > 1 ? (1 - p->imbalance / E) / (E - 1) : 0;
  dispatch_shares (p, shares, (guint) arch->n_experts, &d);
  d.kept = d.routed - d.dropped;
  d.send_rows = p->pad ? E * (double) d.capacity : d.kept;
  double h = (double) arch->hidden_size;
  d.a2a_bytes = d.send_rows * h * p->act_bytes;
  d.a2a_remote_bytes = d.a2a_bytes * (double) (p->ep - 1) / (double) p->ep;
  d.probs_a2a_bytes = d.send_rows * p->prob_bytes;
  /* MoEAllGatherTokenDispatcher.token_dispatch: [(S/TP)·B, H] → [(S/TP)·B·(TP·EP), H] over
   * tp_ep_group (its TP is the expert tp, etp) */
  d.gathered_tokens = d.group * d.tokens;
  d.ag_bytes = d.gathered_tokens * h * p->act_bytes;
  d.mean_rows = d.group * d.send_rows / E;
  d.slowest_rows = d.hot_rows + (d.n_local_experts - 1) * d.rest_rows;
  d.a2a_recv_max_bytes = d.slowest_rows / p->etp * h * p->act_bytes;
  d.slowdown = d.mean_rows > 0 ? d.slowest_rows / (d.n_local_experts * d.mean_rows) : 1;
  *out = d;
  return TRUE;
}

HwKernelShape
model_ep_expert_gemm (const ModelArch *arch, guint etp, gboolean fc2, double rows, double count)
{
  double h = (double) arch->hidden_size, i = (double) arch->intermediate_size / MAX (etp, 1);
  double fc1_n = arch->mlp == MODEL_MLP_SWIGLU ? 2 * i : i;
  return (HwKernelShape){ .cls = HW_KERNEL_GEMM, .m = rows, .n = fc2 ? h : fc1_n,
                          .k = fc2 ? i : h, .batch = count };
}

static void
comm (GArray *out, const char *name, HwCollectiveKind kind, ModelMeshExpertDim dim, guint ranks,
      double bytes)
{
  ModelEpComm c = { name, kind, dim, ranks, bytes };
  g_array_append_val (out, c);
}

/* MoEAllGatherTokenDispatcher's collectives (model_ep_layer_comms). */
static void
allgather_comms (const ModelArch *arch, const ModelEpParams *p, const ModelEpDispatch *d,
                 ModelEpPass pass, GArray *out)
{
  double G = d->gathered_tokens, h = (double) arch->hidden_size, E = (double) arch->n_experts;
  double pb = p->prob_bytes;
  ModelMeshExpertDim dim = MODEL_MESH_EXPERT_TP_EP;
  if (pass == MODEL_EP_FORWARD)
    {
      /* token_dispatch: the routing map (torch.bool, under no_grad), the probabilities and
       * the hidden states, each gather_from_sequence_parallel_region over tp_ep_group */
      comm (out, "routing map all-gather (ep·etp)", HW_COLLECTIVE_ALL_GATHER, dim, d->group,
            G * E);
      comm (out, "dispatch probs all-gather (ep·etp)", HW_COLLECTIVE_ALL_GATHER, dim, d->group,
            G * E * pb);
      comm (out, "dispatch all-gather (ep·etp)", HW_COLLECTIVE_ALL_GATHER, dim, d->group,
            d->ag_bytes);
      /* token_combine: reduce_scatter_to_sequence_parallel_region of hidden_states.to(
       * local_probs.dtype) over tp_ep_group */
      comm (out, "combine reduce-scatter (ep·etp)", HW_COLLECTIVE_REDUCE_SCATTER, dim, d->group,
            G * h * pb);
      return;
    }
  /* _ReduceScatterToSequenceParallelRegion.backward gathers, _GatherFromSequenceParallel
   * Region.backward (tensor_parallel_output_grad) reduce-scatters */
  comm (out, "combine grad all-gather (ep·etp)", HW_COLLECTIVE_ALL_GATHER, dim, d->group,
        G * h * pb);
  comm (out, "dispatch probs grad reduce-scatter (ep·etp)", HW_COLLECTIVE_REDUCE_SCATTER, dim,
        d->group, G * E * pb);
  comm (out, "dispatch grad reduce-scatter (ep·etp)", HW_COLLECTIVE_REDUCE_SCATTER, dim,
        d->group, d->ag_bytes);
}

void
model_ep_layer_comms (const ModelArch *arch, const ModelEpParams *p, const ModelEpDispatch *d,
                      ModelEpPass pass, GArray *out)
{
  g_return_if_fail (arch != NULL && p != NULL && d != NULL && out != NULL);
  /* both dispatchers skip their communication on one rank (token_dispatch: "if
   * self.tp_size > 1 or self.ep_size > 1") */
  if (p->ep <= 1 && p->etp <= 1)
    return;
  if (p->dispatcher == MODEL_EP_DISPATCHER_ALLGATHER)
    {
      allgather_comms (arch, p, d, pass, out);
      return;
    }
  double h = (double) arch->hidden_size, e = p->act_bytes;
  /* An uneven all_to_all_single ends when its most loaded receiver has its rows: the rank
   * holding the hottest experts receives slowest_rows/etp rows where a balanced rank
   * receives send_rows (a2a_recv_max_bytes against a2a_bytes). Its collectives are timed
   * at that volume (every rank's, as every rank runs the slowest rank's kernels: on a
   * switch the hot receiver's inbound link sets the time either way); 1 when balanced. */
  double skew = d->a2a_bytes > 0 ? MAX (1.0, d->a2a_recv_max_bytes / d->a2a_bytes) : 1.0;
  /* the etp gather's output: every row the rank's local experts process (the slowest
   * rank's), etp × the rows the all-to-all delivered (dispatch_postprocess: gather_from_
   * sequence_parallel_region over tp_group = expt_tp with output_split_sizes =
   * output_splits_tp) */
  double gathered = MAX (d->slowest_rows, d->n_local_experts * d->mean_rows);
  double a2a_bytes = skew * d->a2a_bytes, probs_bytes = skew * d->probs_a2a_bytes;
  /* combine_preprocess reduce-scatters hidden_states.to(self.probs.dtype) (the router's
   * dtype, --moe-router-dtype) and casts back; its backward all-gathers that dtype too */
  double rs = p->prob_bytes;
  gboolean a2a = p->ep > 1, ag = p->etp > 1;
  if (pass == MODEL_EP_FORWARD)
    {
      /* token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess: the [E] int64 counts
       * gathered over tp_ep_group (gather_from_sequence_parallel_region: output
       * ep·etp·E·8 B); none when padded to capacity (static splits) */
      if (!p->pad)
        comm (out, "tokens-per-expert all-gather (ep·etp)", HW_COLLECTIVE_ALL_GATHER,
              MODEL_MESH_EXPERT_TP_EP, d->group, 8.0 * (double) arch->n_experts * d->group);
      if (a2a)
        {
          comm (out, "dispatch all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP,
                p->ep, a2a_bytes);
          comm (out, "dispatch probs all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL,
                MODEL_MESH_EXPERT_EP, p->ep, probs_bytes);
        }
      if (ag)
        {
          comm (out, "dispatch all-gather (etp)", HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_TP,
                p->etp, gathered * h * e);
          comm (out, "dispatch probs all-gather (etp)", HW_COLLECTIVE_ALL_GATHER,
                MODEL_MESH_EXPERT_TP, p->etp, gathered * p->prob_bytes);
          comm (out, "combine reduce-scatter (etp)", HW_COLLECTIVE_REDUCE_SCATTER,
                MODEL_MESH_EXPERT_TP, p->etp, gathered * h * rs);
        }
      if (a2a)
        comm (out, "combine all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP,
              p->ep, a2a_bytes);
      return;
    }
  /* backward: the conjugates in reverse (all_to_all's backward swaps the splits; the
   * sequence-parallel gather's backward is a reduce-scatter and vice versa) */
  if (a2a)
    comm (out, "combine grad all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP,
          p->ep, a2a_bytes);
  if (ag)
    {
      comm (out, "combine grad all-gather (etp)", HW_COLLECTIVE_ALL_GATHER, MODEL_MESH_EXPERT_TP,
            p->etp, gathered * h * rs);
      comm (out, "dispatch probs grad reduce-scatter (etp)", HW_COLLECTIVE_REDUCE_SCATTER,
            MODEL_MESH_EXPERT_TP, p->etp, gathered * p->prob_bytes);
      comm (out, "dispatch grad reduce-scatter (etp)", HW_COLLECTIVE_REDUCE_SCATTER,
            MODEL_MESH_EXPERT_TP, p->etp, gathered * h * e);
    }
  if (a2a)
    {
      comm (out, "dispatch probs grad all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL,
            MODEL_MESH_EXPERT_EP, p->ep, probs_bytes);
      comm (out, "dispatch grad all-to-all (ep)", HW_COLLECTIVE_ALL_TO_ALL, MODEL_MESH_EXPERT_EP,
            p->ep, a2a_bytes);
    }
}

/* ---- Activations ----------------------------------------------------------------------- */

/* A buffer of the forward's chain: `bytes`, and whether backward keeps it (then it is
 * counted in `saved`, not in the transient peak). */
typedef struct
{
  double bytes;
  gboolean saved;
} Buf;

/* The largest sum of the unsaved bytes of two adjacent buffers (each op reads one and
 * writes the next, the input freed after). */
static double
chain_peak (const Buf *chain, guint n)
{
  double peak = 0;
  for (guint j = 0; j < n; j++)
    {
      double a = chain[j].saved ? 0 : chain[j].bytes;
      double b = j + 1 < n && !chain[j + 1].saved ? chain[j + 1].bytes : 0;
      peak = MAX (peak, a + b);
    }
  return peak;
}

/* MoEAllGatherTokenDispatcher's forward and backward transient peaks for N rows
 * (model_ep_acts_megatron). */
static void
allgather_transients (const ModelArch *arch, const ModelEpParams *p, const ModelEpDispatch *d,
                      double N, ModelEpActs *a)
{
  double e = p->act_bytes, pb = p->prob_bytes, h = (double) arch->hidden_size;
  double E = (double) arch->n_experts, G = d->gathered_tokens, T = d->tokens;
  gboolean cast = pb != e;
  Buf chain[8];
  guint n = 0;
  chain[n++] = (Buf){ e * G * h + G * E * (1 + pb), FALSE }; /* gathered map, probs, hidden */
  chain[n++] = (Buf){ e * N * h, TRUE };                     /* permuted: fc1's input */
  guint combine = n;
  chain[n++] = (Buf){ e * N * h, FALSE };                    /* fc2 output */
  chain[n++] = (Buf){ e * G * h, FALSE };                    /* unpermuted into G × h */
  if (cast)
    chain[n++] = (Buf){ pb * G * h, FALSE };                 /* .to(local_probs.dtype) */
  chain[n++] = (Buf){ pb * T * h, FALSE };                   /* reduce-scatter output */
  if (cast)
    chain[n++] = (Buf){ e * T * h, FALSE };                  /* .to(hidden dtype) */
  a->transient = MAX (chain_peak (chain, combine), chain_peak (chain + combine, n - combine));

  /* backward: the combine's gradient, then the dispatch's (the experts' own backward
   * between them is the layer graph's) */
  n = 0;
  chain[n++] = (Buf){ e * T * h, FALSE };                    /* the layer output's gradient */
  if (cast)
    chain[n++] = (Buf){ pb * T * h, FALSE };
  chain[n++] = (Buf){ pb * G * h, FALSE };                   /* its all-gather */
  if (cast)
    chain[n++] = (Buf){ e * G * h, FALSE };
  chain[n++] = (Buf){ e * N * h, FALSE };                    /* unpermute's backward */
  guint dispatch = n;
  chain[n++] = (Buf){ e * N * h, FALSE };                    /* fc1's input gradient */
  chain[n++] = (Buf){ e * G * h, FALSE };                    /* permute's backward */
  chain[n++] = (Buf){ e * T * h, FALSE };                    /* its reduce-scatter */
  a->transient_bwd
    = MAX (chain_peak (chain, dispatch), chain_peak (chain + dispatch, n - dispatch));
}

void
model_ep_acts_megatron (const ModelArch *arch, const ModelEpParams *p, const ModelEpDispatch *d,
                        ModelEpActs *out)
{
  g_return_if_fail (arch != NULL && p != NULL && d != NULL && out != NULL);
  double e = p->act_bytes, h = (double) arch->hidden_size, E = (double) arch->n_experts;
  double i = (double) arch->intermediate_size / p->etp, N = d->slowest_rows, T = d->tokens;
  ModelEpActs a = { 0 };
  a.router_in = e * T * h;
  a.router_probs = p->prob_bytes * T * E;
  a.expert_in = e * N * h;
  a.expert_inner = arch->mlp == MODEL_MLP_SWIGLU ? e * N * 3 * i : e * N * 2 * i;
  a.weights = p->prob_bytes * N;
  a.saved = a.router_in + a.router_probs + a.expert_in + a.expert_inner + a.weights;
  if (p->dispatcher == MODEL_EP_DISPATCHER_ALLGATHER && d->group > 1)
    {
      allgather_transients (arch, p, d, N, &a);
      *out = a;
      return;
    }

  /* the forward's chain (token_dispatcher.py, experts.py); fc1's input is the last of the
   * dispatch buffers present, and saved */
  gboolean ag = p->etp > 1, sort = d->n_local_experts > 1;
  Buf chain[10];
  guint n = 0;
  chain[n++] = (Buf){ d->a2a_bytes, FALSE };                  /* permuted send buffer */
  chain[n++] = (Buf){ N / p->etp * h * e, !ag && !sort };     /* all-to-all output */
  if (ag)
    chain[n++] = (Buf){ N * h * e, !sort };                   /* etp all-gather output */
  if (sort)
    chain[n++] = (Buf){ N * h * e, TRUE };                    /* sorted by local expert */
  /* fc1 → activation → fc2: their tensors are the saved ones above; fc2's output starts
   * the combine chain */
  guint combine = n;
  chain[n++] = (Buf){ N * h * e, FALSE };                     /* fc2 output */
  if (sort)
    chain[n++] = (Buf){ N * h * e, FALSE };                   /* unsorted */
  if (ag)
    chain[n++] = (Buf){ N / p->etp * h * e, FALSE };          /* etp reduce-scatter output */
  chain[n++] = (Buf){ d->a2a_bytes, FALSE };                  /* combine all-to-all output */
  chain[n++] = (Buf){ e * T * h, FALSE };                     /* unpermuted layer output */
  a.transient = MAX (chain_peak (chain, combine), chain_peak (chain + combine, n - combine));
  *out = a;
}

void
model_ep_acts_hf_eager (const ModelArch *arch, const ModelEpParams *p, ModelEpActs *out)
{
  g_return_if_fail (arch != NULL && p != NULL && out != NULL);
  g_return_if_fail (p->ep <= 1 && p->etp <= 1);
  double e = p->act_bytes, h = (double) arch->hidden_size, E = (double) arch->n_experts;
  double k = (double) arch->experts_per_token, i = (double) arch->intermediate_size;
  guint split = model_ep_seq_multiple (p);
  double T = (double) p->micro_batch * (double) (p->seq_len / split), m = T * k;
  ModelEpActs a = { 0 };
  a.router_in = e * T * h;
  a.router_probs = 4 * T * E + 4 * T * k + 4 * T;
  a.expert_in = e * m * h;
  a.expert_inner = (arch->mlp == MODEL_MLP_SWIGLU ? 4 : 2) * e * m * i;
  a.expert_out = e * m * h;
  a.weights = e * m;
  a.saved = a.router_in + a.router_probs + a.expert_in + a.expert_inner + a.expert_out
            + a.weights;
  a.transient = e * T * h + (E > 0 ? e * (m / E) * h : 0);
  *out = a;
}
