/* models/parallel/tensor_parallel.c — Megatron-LM tensor and sequence parallelism: the tp
 * layout of the inventory, the layer's tp collectives and the per-rank saved-tensor graph;
 * see tensor_parallel.h for the sources. */
#include "config.h"
#include "models/parallel/tensor_parallel.h"

#include <string.h>
#include "models/ops/cost.h"

const char *
model_tp_style_name (ModelTpStyle style)
{
  switch (style)
    {
    case MODEL_TP_COLUMN: return "column";
    case MODEL_TP_ROW: return "row";
    case MODEL_TP_VOCAB: return "vocab";
    case MODEL_TP_REPLICATE:
    default: return "replicate";
    }
}

guint64
model_tp_padded_vocab (guint64 vocab, guint tp, guint divisible_by)
{
  g_return_val_if_fail (tp >= 1 && divisible_by >= 1, vocab);
  guint64 multiple = (guint64) divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

static gboolean
not_multiple (GError **error, const char *key, guint64 value, const char *par_key, guint degree,
              const char *why)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "model key %s = %" G_GUINT64_FORMAT " is not a multiple of [parallel] %s = %u (%s)",
               key, value, par_key, degree, why);
  return FALSE;
}

gboolean
model_tp_check (const ModelArch *arch, const ModelMesh *mesh, GError **error)
{
  guint tp = mesh->degree[MODEL_MESH_TP];
  guint64 a = arch->n_heads, k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  if (tp <= 1 && mesh->ep <= 1 && mesh->etp <= 1)
    return TRUE;
  /* megatron/core/transformer/transformer_config.py __post_init__ */
  if (a % tp != 0)
    return not_multiple (error, "num_attention_heads", a, "tp", tp,
                         "Megatron-LM splits the query heads evenly over the tensor-parallel "
                         "ranks");
  if (k % tp != 0 && tp % k != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "model key num_key_value_heads = %" G_GUINT64_FORMAT " is neither a multiple "
                   "nor a divisor of [parallel] tp = %u (Megatron-LM splits the KV heads over "
                   "the tensor-parallel ranks, or gives each rank one when tp exceeds them)",
                   k, tp);
      return FALSE;
    }
  /* k < tp: the fused qkv's (a + 2k)·d rows split evenly (ColumnParallelLinear's divide) */
  guint64 qkv_rows = (a + 2 * k) * arch->head_dim;
  if (k < tp && qkv_rows % tp != 0)
    return not_multiple (error, "(num_attention_heads + 2·num_key_value_heads)·head_dim",
                         qkv_rows, "tp", tp, "rows of the fused qkv weight split evenly");
  /* DeepSeek's leading dense layers: a dense MLP over tp */
  if (arch->deepseek.first_k_dense > 0 && arch->deepseek.dense_intermediate_size % tp != 0)
    return not_multiple (error, "intermediate_size (the dense layers')",
                         arch->deepseek.dense_intermediate_size, "tp", tp,
                         "the dense MLP's column- and row-parallel linears split it evenly");
  if (arch->n_experts == 0)
    {
      if (arch->intermediate_size % tp != 0)
        return not_multiple (error, "intermediate_size", arch->intermediate_size, "tp", tp,
                             "the MLP's column- and row-parallel linears split it evenly");
    }
  else
    {
      /* the shared expert is a dense MLP over tp (shared_experts.py SharedExpertMLP(MLP):
       * fc1 column-, fc2 row-parallel on the tp group) */
      if (arch->shared_expert_size % tp != 0)
        return not_multiple (error, "shared_expert_intermediate_size",
                             arch->shared_expert_size, "tp", tp,
                             "the shared expert's column- and row-parallel linears split it "
                             "evenly");
      if (arch->n_experts % mesh->ep != 0)
        return not_multiple (error, "num_local_experts", arch->n_experts, "ep", mesh->ep,
                             "each expert-parallel rank holds n_experts / ep experts");
      if (arch->intermediate_size % mesh->etp != 0)
        return not_multiple (error, "intermediate_size", arch->intermediate_size, "etp",
                             mesh->etp, "an expert's linears split over the expert "
                             "tensor-parallel ranks");
    }
  return TRUE;
}

/* ---- Layout ---------------------------------------------------------------------------- */

static gboolean
is_expert (const ModelInventory *inv, const ModelTensor *t)
{
  if (t->base >= 0)
    t = model_inventory_tensor (inv, (guint) t->base);
  return t->count > 1;
}

/* The style of a projection weight or bias (layers.py) and the tensor dimension it splits:
 * nn.Linear weight (out, in), GPT-2's Conv1D (in, out), a bias (out). */
static ModelTpStyle
proj_style (const ModelInventory *inv, const ModelTensor *t, gint *dim)
{
  gboolean conv1d = inv->arch->family == MODEL_FAMILY_GPT2;
  switch (t->role)
    {
    case MODEL_TENSOR_Q:
    case MODEL_TENSOR_K:
    case MODEL_TENSOR_V:
    case MODEL_TENSOR_QKV:
    case MODEL_TENSOR_Q_B:  /* MLA linear_q_up_proj, column-parallel over the heads */
    case MODEL_TENSOR_KV_B: /* MLA linear_kv_up_proj, likewise (multi_latent_attention.py);
                             * q_a / kv_a, TELinear 'duplicated', stay whole */
    case MODEL_TENSOR_MLP_GATE:
    case MODEL_TENSOR_MLP_UP:
    case MODEL_TENSOR_SHARED_GATE: /* qwen2_moe shared expert: a dense SwiGLU MLP */
    case MODEL_TENSOR_SHARED_UP:
    case MODEL_TENSOR_MTP_EH_PROJ: /* Megatron multi_token_prediction.py: column-parallel,
                                    * gather_output=False, then gathered */
      *dim = t->is_bias || !conv1d ? 0 : 1;
      return MODEL_TP_COLUMN;
    case MODEL_TENSOR_ATTN_OUT:
    case MODEL_TENSOR_MLP_DOWN:
    case MODEL_TENSOR_SHARED_DOWN:
      if (t->is_bias)
        break; /* added after the reduction: whole on every rank */
      *dim = conv1d ? 0 : 1;
      return MODEL_TP_ROW;
    case MODEL_TENSOR_EMBEDDING:
    case MODEL_TENSOR_HEAD:
      *dim = 0;
      return MODEL_TP_VOCAB;
    default:
      break;
    }
  *dim = -1;
  return MODEL_TP_REPLICATE;
}

/* Style and split dimension of `t` (adapters after their base; PEFT tp_layer.py). */
static ModelTpStyle
tensor_style (const ModelInventory *inv, const ModelTensor *t, gint *dim)
{
  if (t->base < 0 || t->role == MODEL_TENSOR_DORA_MAGNITUDE)
    {
      if (t->role == MODEL_TENSOR_DORA_MAGNITUDE && t->base >= 0)
        {
          /* a magnitude per output feature: split with a column-parallel base */
          gint bd;
          ModelTpStyle bs = proj_style (inv, model_inventory_tensor (inv, (guint) t->base), &bd);
          *dim = bs == MODEL_TP_COLUMN ? 0 : -1;
          return bs == MODEL_TP_COLUMN ? MODEL_TP_COLUMN : MODEL_TP_REPLICATE;
        }
      return proj_style (inv, t, dim);
    }
  gint bd;
  ModelTpStyle bs = proj_style (inv, model_inventory_tensor (inv, (guint) t->base), &bd);
  if (t->role == MODEL_TENSOR_LORA_B && bs == MODEL_TP_COLUMN)
    {
      *dim = 0; /* B: out × r, rows split as the base's outputs */
      return MODEL_TP_COLUMN;
    }
  if (t->role == MODEL_TENSOR_LORA_A && bs == MODEL_TP_ROW)
    {
      *dim = 1; /* A: r × in, columns split as the base's inputs */
      return MODEL_TP_ROW;
    }
  *dim = -1;
  return MODEL_TP_REPLICATE;
}

/* A quantization constant of an NF4 weight, laid out after its base `x`'s entry (a lower
 * index): a rank quantizes the shard it holds (bitsandbytes quantizes whatever tensor
 * Params4bit holds, functional.py quantize_4bit), so its absmax has ⌈local numel / 64⌉
 * elements and the nested absmax ⌈that / 256⌉ — inventory.c's formulas on the base's
 * local share. A constant of a split base is Shard(0) on tp (etp for an expert's), one of
 * a whole base is replicated. */
static void
quant_constant (const ModelTpLayout *l, const ModelInventory *inv, const ModelTensor *t,
                ModelTpTensor *x)
{
  g_assert (t->base >= 0 && (guint) t->base < l->tensors->len); /* the base comes first */
  const ModelTpTensor *b = &g_array_index (l->tensors, ModelTpTensor, t->base);
  const ModelTensor *w = model_inventory_tensor (inv, (guint) t->base);
  guint64 local = 1, whole = model_tensor_numel (w);
  for (guint d = 0; d < w->ndim; d++)
    local *= b->local_shape[d];
  guint64 n = t->shape[0];
  if (local != whole) /* blocks of the local share, as inventory.c builds them */
    {
      n = (local + 63) / 64;
      if (t->role == MODEL_TENSOR_QUANT_ABSMAX2)
        n = (n + 255) / 256;
    }
  x->style = b->style;
  x->expert = b->expert;
  x->tp_dim = b->tp_dim >= 0 ? 0 : -1;
  x->ndim = 1;
  x->shape[0] = t->shape[0];
  x->local_shape[0] = n;
  for (guint d = 1; d < 4; d++)
    x->shape[d] = x->local_shape[d] = 1;
  x->placements = model_placements_replicate ();
  if (l->dp_shard > 1)
    x->placements.on[MODEL_MESH_DP_SHARD] = (ModelPlacement){ MODEL_PLACEMENT_SHARD,
                                                              MODEL_PLACEMENT_FLAT };
  if (!b->expert && x->tp_dim >= 0)
    x->placements.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 0 };
  x->copies = model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) / (x->expert ? l->ep : 1);
  x->element_bytes = model_tensor_storage_bytes (t, 1);
  x->tp_bytes = (double) n * x->element_bytes;
  x->rank_bytes = x->tp_bytes / l->dp_shard;
}

ModelTpLayout *
model_tp_layout_new (const ModelInventory *inv, const ModelMesh *mesh, double weight_bytes,
                     GError **error)
{
  g_return_val_if_fail (inv != NULL && mesh != NULL && weight_bytes > 0, NULL);
  const ModelArch *arch = inv->arch;
  if (!model_tp_check (arch, mesh, error))
    return NULL;
  g_autoptr (ModelTpLayout) l = g_new0 (ModelTpLayout, 1);
  l->tp = mesh->degree[MODEL_MESH_TP];
  l->dp_shard = mesh->degree[MODEL_MESH_DP_SHARD];
  l->ep = MAX (mesh->ep, 1);
  l->etp = MAX (mesh->etp, 1);
  l->vocab = model_tp_padded_vocab (arch->vocab_size, l->tp, MODEL_TP_VOCAB_DIVISIBLE_BY);
  guint64 k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  l->q_heads = arch->n_heads / l->tp;
  l->kv_heads = k >= l->tp ? k / l->tp : 1;
  l->kv_replicas = k >= l->tp ? 1 : l->tp / (guint) k;
  l->qkv_gather = k < l->tp;
  l->tensors = g_array_sized_new (FALSE, TRUE, sizeof (ModelTpTensor), inv->tensors->len);

  /* the tp dimension alone: the one mesh degree placement.h divides by here */
  ModelMesh tp_mesh;
  model_mesh_init (&tp_mesh, mesh->gpus_per_node);
  tp_mesh.degree[MODEL_MESH_TP] = l->tp;
  for (guint i = 0; i < inv->tensors->len; i++)
    {
      const ModelTensor *t = model_inventory_tensor (inv, i);
      ModelTpTensor x = { .index = i, .ndim = t->ndim };
      if (model_tensor_is_quant_constant (t))
        {
          quant_constant (l, inv, t, &x);
          g_array_append_val (l->tensors, x);
          continue;
        }
      x.style = tensor_style (inv, t, &x.tp_dim);
      x.expert = is_expert (inv, t);
      memcpy (x.shape, t->shape, sizeof x.shape);
      if (x.style == MODEL_TP_VOCAB)
        x.shape[0] = l->vocab;
      x.placements = model_placements_replicate ();
      if (l->dp_shard > 1)
        x.placements.on[MODEL_MESH_DP_SHARD] = (ModelPlacement){ MODEL_PLACEMENT_SHARD,
                                                                 MODEL_PLACEMENT_FLAT };
      if (x.expert)
        {
          /* split over etp, which is no mesh dimension (mesh.h's expert carving): the
           * placement on tp stays Replicate, the shape is divided here */
          memcpy (x.local_shape, x.shape, sizeof x.shape);
          if (x.tp_dim >= 0)
            {
              if (x.shape[x.tp_dim] % l->etp != 0)
                {
                  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                               "tensor %s: dim %d of size %" G_GUINT64_FORMAT " does not "
                               "divide over etp of degree %u", t->name, x.tp_dim,
                               x.shape[x.tp_dim], l->etp);
                  return NULL;
                }
              x.local_shape[x.tp_dim] /= l->etp;
            }
        }
      else
        {
          ModelPlacements tp_pl = model_placements_replicate ();
          if (x.tp_dim >= 0)
            {
              tp_pl.on[MODEL_MESH_TP] = (ModelPlacement){ MODEL_PLACEMENT_SHARD, x.tp_dim };
              x.placements.on[MODEL_MESH_TP] = tp_pl.on[MODEL_MESH_TP];
            }
          guint n = 0;
          for (guint d = 0; d < 4; d++)
            x.local_shape[d] = 1;
          GError *e = NULL;
          if (!model_placement_local_shape (&tp_pl, &tp_mesh, x.shape, t->ndim, x.local_shape,
                                            &n, &e))
            {
              g_propagate_prefixed_error (error, e, "tensor %s: ", t->name);
              return NULL;
            }
        }
      x.copies = model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) / (x.expert ? l->ep : 1);
      x.element_bytes = model_tensor_storage_bytes (t, weight_bytes);
      double numel = 1;
      for (guint d = 0; d < t->ndim; d++)
        numel *= (double) x.local_shape[d];
      x.tp_bytes = numel * x.element_bytes;
      x.rank_bytes = x.tp_bytes / l->dp_shard;
      g_array_append_val (l->tensors, x);
    }
  return g_steal_pointer (&l);
}

void
model_tp_layout_free (ModelTpLayout *layout)
{
  if (layout == NULL)
    return;
  if (layout->tensors != NULL)
    g_array_unref (layout->tensors);
  g_free (layout);
}

static double
layout_bytes (const ModelTpLayout *layout, const ModelInventory *inv, ModelInventoryScope scope,
              gboolean dp_sharded, gboolean with_adapters, gboolean constants)
{
  g_return_val_if_fail (layout != NULL && inv != NULL
                        && layout->tensors->len == inv->tensors->len, 0);
  double sum = 0;
  for (guint i = 0; i < layout->tensors->len; i++)
    {
      const ModelTpTensor *x = &g_array_index (layout->tensors, ModelTpTensor, i);
      const ModelTensor *t = model_inventory_tensor (inv, i);
      gboolean adapter = t->role == MODEL_TENSOR_LORA_A || t->role == MODEL_TENSOR_LORA_B
                         || t->role == MODEL_TENSOR_DORA_MAGNITUDE;
      if ((adapter && !with_adapters) || model_tensor_is_quant_constant (t) != constants)
        continue;
      double copies = (double) model_inventory_copies (inv, t, scope) / (x->expert ? layout->ep : 1);
      sum += copies * (dp_sharded ? x->rank_bytes : x->tp_bytes);
    }
  return sum;
}

double
model_tp_layout_bytes (const ModelTpLayout *layout, const ModelInventory *inv,
                       ModelInventoryScope scope, gboolean dp_sharded, gboolean with_adapters)
{
  return layout_bytes (layout, inv, scope, dp_sharded, with_adapters, FALSE);
}

double
model_tp_layout_constant_bytes (const ModelTpLayout *layout, const ModelInventory *inv,
                                ModelInventoryScope scope, gboolean dp_sharded)
{
  return layout_bytes (layout, inv, scope, dp_sharded, FALSE, TRUE);
}

guint64
model_tp_sp_grad_numel (const ModelTpLayout *layout, const ModelInventory *inv)
{
  g_return_val_if_fail (layout != NULL && inv != NULL
                        && layout->tensors->len == inv->tensors->len, 0);
  if (layout->tp <= 1)
    return 0;
  guint64 n = 0;
  for (guint i = 0; i < layout->tensors->len; i++)
    {
      const ModelTpTensor *x = &g_array_index (layout->tensors, ModelTpTensor, i);
      const ModelTensor *t = model_inventory_tensor (inv, i);
      /* q_norm / k_norm act on each rank's own heads: partial gradients too */
      /* the shared expert's sigmoid gate weight scores the rank's sequence shard
       * (shared_experts.py: setattr(gate_weight, 'sequence_parallel', ...)) */
      /* and MLA's q_a_layernorm and kv_a_layernorm (on the sequence shard) and its
       * down projections, TELinear parallel_mode 'duplicated' on the sequence shard
       * (transformer_engine.py TELinear: sequence_parallel set on a duplicated weight) */
      gboolean tagged = t->role == MODEL_TENSOR_NORM || t->role == MODEL_TENSOR_QK_NORM
                        || t->role == MODEL_TENSOR_SHARED_EXPERT_GATE
                        || t->role == MODEL_TENSOR_MLA_NORM || t->role == MODEL_TENSOR_Q_A
                        || t->role == MODEL_TENSOR_KV_A
                        || (t->is_bias && (t->role == MODEL_TENSOR_ATTN_OUT
                                           || t->role == MODEL_TENSOR_MLP_DOWN));
      if (t->trainable && tagged && !x->expert)
        n += model_inventory_copies (inv, t, MODEL_INVENTORY_ALL) * model_tensor_numel (t);
    }
  return n;
}

/* ---- Communication --------------------------------------------------------------------- */

static void
comm_ub (GArray *out, const char *name, HwCollectiveKind kind, double bytes, gboolean overlapped,
         ModelTpUb ub)
{
  ModelTpComm c = { name, kind, MODEL_MESH_TP, bytes, overlapped, ub };
  g_array_append_val (out, c);
}

static void
comm (GArray *out, const char *name, HwCollectiveKind kind, double bytes, gboolean overlapped)
{
  comm_ub (out, name, kind, bytes, overlapped, MODEL_TP_UB_NONE);
}

/* X = b·s·h·e: one [s, b, h] activation, whole. */
static double
bsh (const ModelArch *arch, const ModelTpCommParams *p)
{
  return (double) p->micro_batch * (double) p->seq_len * (double) arch->hidden_size * p->act_bytes;
}

/* The backward of a column-parallel linear's input under SP (layers.py
 * LinearWithGradAccumulationAndAsyncCommunication.backward): the saved sequence shard is
 * all-gathered again for the weight gradient, beside the dgrad GEMM; the input gradient is
 * reduce-scattered beside the wgrad GEMM. Without SP: the input gradient's all-reduce
 * (allreduce_dgrad, the f operator's conjugate), beside the wgrad GEMM. */
static void
column_input_backward (GArray *out, const ModelTpCommParams *p, double x, const char *regather,
                       const char *rs, const char *ar, ModelTpUb ub)
{
  if (p->sp)
    {
      comm_ub (out, regather, HW_COLLECTIVE_ALL_GATHER, x, TRUE, ub);
      comm_ub (out, rs, HW_COLLECTIVE_REDUCE_SCATTER, x, TRUE, ub);
    }
  else
    comm (out, ar, HW_COLLECTIVE_ALL_REDUCE, x, TRUE);
}

/* The names of one MLP block's collectives: the dense MLP's or a MoE layer's shared
 * expert's (which runs its own: shared_experts.py SharedExpertMLP is an MLP on the tp group,
 * its linear_fc1 all-gathering the sequence shard it reads and its linear_fc2
 * reduce-scattering its output; the router and routed experts read the shard itself). */
typedef struct
{
  const char *in_ag, *down_rs, *down_ar;             /* forward */
  const char *down_grad_ag, *regather, *in_rs, *in_ar; /* backward */
} MlpCommNames;

static const MlpCommNames dense_mlp_names = {
  "mlp_in all-gather (SP)", "mlp_down reduce-scatter (SP)", "mlp_down all-reduce (g)",
  "mlp_down grad all-gather (SP)", "mlp_in re-gather for wgrad (SP)",
  "mlp_in grad reduce-scatter (SP)", "mlp_in grad all-reduce (f)",
};
static const MlpCommNames shared_mlp_names = {
  "shared_fc1_in all-gather (SP)", "shared_fc2 reduce-scatter (SP)",
  "shared_fc2 all-reduce (g)", "shared_fc2 grad all-gather (SP)",
  "shared_fc1_in re-gather for wgrad (SP)", "shared_fc1_in grad reduce-scatter (SP)",
  "shared_fc1_in grad all-reduce (f)",
};

/* One MLP block's collectives of X B in `pass` (the shared expert's linears are
 * TEColumnParallelLinear / TERowParallelLinear with the dense MLP's fc1 / fc2 userbuffers,
 * so the same overlap methods under tp_comm_overlap). */
static void
mlp_comms (GArray *out, const ModelTpCommParams *p, double x, ModelTpPass pass,
           const MlpCommNames *n)
{
  if (pass == MODEL_TP_FORWARD)
    {
      if (p->sp)
        {
          comm_ub (out, n->in_ag, HW_COLLECTIVE_ALL_GATHER, x, FALSE, MODEL_TP_UB_RING);
          comm_ub (out, n->down_rs, HW_COLLECTIVE_REDUCE_SCATTER, x, FALSE,
                   MODEL_TP_UB_PIPELINE);
        }
      else
        comm (out, n->down_ar, HW_COLLECTIVE_ALL_REDUCE, x, FALSE);
      return;
    }
  /* the g operator's conjugate is the identity without SP */
  if (p->sp)
    comm_ub (out, n->down_grad_ag, HW_COLLECTIVE_ALL_GATHER, x, FALSE, MODEL_TP_UB_RING);
  column_input_backward (out, p, x, n->regather, n->in_rs, n->in_ar, MODEL_TP_UB_BULK);
}

/* B·s·`width`·e: one [s, b, width] activation, whole. */
static double
bs_width (const ModelTpCommParams *p, double width)
{
  return (double) p->micro_batch * (double) p->seq_len * width * p->act_bytes;
}

/* MLA's attention collectives (megatron/core/transformer/multi_latent_attention.py
 * MLASelfAttention with the TE spec, gpt_layer_specs.py: linear_q_down_proj and
 * linear_kv_down_proj TELinear parallel_mode 'duplicated', linear_q_up_proj /
 * linear_kv_up_proj / linear_q_proj column-parallel, linear_proj row-parallel). Under SP the
 * duplicated down projections read the rank's sequence shard (no gather of the layer
 * input); get_query_key_value_tensors all-gathers k_pos_emb (b·s·dr) over the sequence;
 * the up projections' column-parallel linears all-gather the normed latents they read
 * (b·s·r_q, b·s·r_kv; q_proj the hidden states b·s·h when q_lora_rank is null); the output
 * projection reduce-scatters X. Backward: the output gradient's all-gather X, per up
 * projection the input re-gather and the input gradient's reduce-scatter (async, as
 * column_input_backward), k_pos_emb's reduce-scatter. Without SP the down projections run
 * on every token (nothing gathered), the output all-reduced and the up projections' input
 * gradients all-reduced. Userbuffers: none (Megatron's tp_comm_buffer_name q_up_proj,
 * kv_up_proj are not among TE's default overlap methods), but linear_proj's. */
static void
mla_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass, GArray *out)
{
  const ModelDeepseek *ds = &arch->deepseek;
  double x = bsh (arch, p);
  double q_in = ds->q_lora_rank > 0 ? bs_width (p, (double) ds->q_lora_rank) : x;
  double kv_in = bs_width (p, (double) ds->kv_lora_rank);
  double k_pe = bs_width (p, (double) ds->qk_rope_head_dim);
  if (pass == MODEL_TP_FORWARD)
    {
      if (p->sp)
        {
          comm (out, "k_pe all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, k_pe, FALSE);
          comm (out, "q_up_in all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, q_in, FALSE);
          comm (out, "kv_up_in all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, kv_in, FALSE);
          comm_ub (out, "attn_out reduce-scatter (SP)", HW_COLLECTIVE_REDUCE_SCATTER, x, FALSE,
                   MODEL_TP_UB_PIPELINE);
        }
      else
        comm (out, "attn_out all-reduce (g)", HW_COLLECTIVE_ALL_REDUCE, x, FALSE);
      return;
    }
  if (p->sp)
    comm_ub (out, "attn_out grad all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, x, FALSE,
             MODEL_TP_UB_RING);
  column_input_backward (out, p, kv_in, "kv_up_in re-gather for wgrad (SP)",
                         "kv_up_in grad reduce-scatter (SP)", "kv_up_in grad all-reduce (f)",
                         MODEL_TP_UB_NONE);
  column_input_backward (out, p, q_in, "q_up_in re-gather for wgrad (SP)",
                         "q_up_in grad reduce-scatter (SP)", "q_up_in grad all-reduce (f)",
                         MODEL_TP_UB_NONE);
  if (p->sp)
    comm (out, "k_pe grad reduce-scatter (SP)", HW_COLLECTIVE_REDUCE_SCATTER, k_pe, FALSE);
}

void
model_tp_layer_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass,
                      GArray *out)
{
  g_return_if_fail (arch != NULL && p != NULL && out != NULL);
  if (p->tp <= 1)
    return;
  double x = bsh (arch, p);
  guint64 k = arch->n_kv_heads ? arch->n_kv_heads : arch->n_heads;
  gboolean gather_qkv = k < p->tp;
  double qkv = (double) p->micro_batch * (double) p->seq_len
               * (double) ((arch->n_heads + 2 * k) * arch->head_dim) * p->act_bytes;
  /* MoE layers: the routed experts' token dispatch is plan_ep.c's (over ep/etp, not tp);
   * the attention's and the shared expert's collectives are these. */
  const MlpCommNames *mlp = arch->n_experts == 0 ? &dense_mlp_names
                            : arch->shared_expert_size > 0 ? &shared_mlp_names
                                                           : NULL;
  if (arch->deepseek.mla)
    {
      if (pass == MODEL_TP_FORWARD)
        mla_comms (arch, p, pass, out);
      if (mlp != NULL)
        mlp_comms (out, p, x, pass, mlp);
      if (pass == MODEL_TP_BACKWARD)
        mla_comms (arch, p, pass, out);
      return;
    }
  if (pass == MODEL_TP_FORWARD)
    {
      if (p->sp)
        comm_ub (out, "qkv_in all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, x, FALSE,
                 MODEL_TP_UB_RING);
      if (gather_qkv)
        comm (out, "qkv_out all-gather (kv heads < tp)", HW_COLLECTIVE_ALL_GATHER, qkv, FALSE);
      if (p->sp)
        comm_ub (out, "attn_out reduce-scatter (SP)", HW_COLLECTIVE_REDUCE_SCATTER, x, FALSE,
                 MODEL_TP_UB_PIPELINE);
      else
        comm (out, "attn_out all-reduce (g)", HW_COLLECTIVE_ALL_REDUCE, x, FALSE);
      if (mlp != NULL)
        mlp_comms (out, p, x, pass, mlp);
      return;
    }
  /* backward, MLP first */
  if (mlp != NULL)
    mlp_comms (out, p, x, pass, mlp);
  if (p->sp)
    comm_ub (out, "attn_out grad all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, x, FALSE,
             MODEL_TP_UB_RING);
  if (gather_qkv)
    comm (out, "qkv_out grad reduce-scatter (kv heads < tp)", HW_COLLECTIVE_REDUCE_SCATTER, qkv,
          FALSE);
  column_input_backward (out, p, x, "qkv_in re-gather for wgrad (SP)",
                         "qkv_in grad reduce-scatter (SP)", "qkv_in grad all-reduce (f)",
                         MODEL_TP_UB_BULK);
}

void
model_tp_embedding_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass,
                          GArray *out)
{
  g_return_if_fail (arch != NULL && p != NULL && out != NULL);
  if (p->tp <= 1)
    return;
  double x = bsh (arch, p);
  /* language_model_embedding.py: reduce_scatter_embeddings needs no position or
   * token-type embedding to add after the lookup */
  gboolean rs = p->sp && !arch->learned_positions && arch->type_vocab_size == 0;
  if (pass == MODEL_TP_FORWARD)
    {
      if (rs)
        comm (out, "embedding reduce-scatter (SP)", HW_COLLECTIVE_REDUCE_SCATTER, x, FALSE);
      else
        comm (out, "embedding all-reduce", HW_COLLECTIVE_ALL_REDUCE, x, FALSE);
    }
  else if (p->sp)
    comm (out, "embedding grad all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, x, FALSE);
}

void
model_tp_head_comms (const ModelArch *arch, const ModelTpCommParams *p, ModelTpPass pass,
                     GArray *out)
{
  g_return_if_fail (arch != NULL && p != NULL && out != NULL);
  if (p->tp <= 1)
    return;
  double x = bsh (arch, p);
  double bs32 = 4.0 * (double) p->micro_batch * (double) p->seq_len;
  if (pass == MODEL_TP_FORWARD)
    {
      if (p->sp)
        comm (out, "head_in all-gather (SP)", HW_COLLECTIVE_ALL_GATHER, x, FALSE);
      comm (out, "cross-entropy logits max all-reduce", HW_COLLECTIVE_ALL_REDUCE, bs32, FALSE);
      comm (out, "cross-entropy target logit all-reduce", HW_COLLECTIVE_ALL_REDUCE, bs32, FALSE);
      comm (out, "cross-entropy sum-exp all-reduce", HW_COLLECTIVE_ALL_REDUCE, bs32, FALSE);
      return;
    }
  column_input_backward (out, p, x, "head_in re-gather for wgrad (SP)",
                         "head_in grad reduce-scatter (SP)", "head_in grad all-reduce (f)",
                         MODEL_TP_UB_NONE);
}

/* ---- Activations ----------------------------------------------------------------------- */

static const struct
{
  const char *name;
  ModelTpActRegion region;
} act_regions[] = {
  /* outside the parallel regions: [b, s, h] (norm_rstd [b, s]) */
  { "input", MODEL_TP_ACT_SEQUENCE },
  { "norm_x_fp32", MODEL_TP_ACT_SEQUENCE },
  { "norm_rstd", MODEL_TP_ACT_SEQUENCE },
  { "norm_x_normed", MODEL_TP_ACT_SEQUENCE },
  { "norm1_out", MODEL_TP_ACT_SEQUENCE },
  { "norm2_out", MODEL_TP_ACT_SEQUENCE },
  { "cast", MODEL_TP_ACT_SEQUENCE },       /* a projection's cast input */
  { "o_proj_out", MODEL_TP_ACT_SEQUENCE }, /* reduced (or reduce-scattered) */
  { "mlp_out", MODEL_TP_ACT_SEQUENCE },
  { "resid_dropout1", MODEL_TP_ACT_SEQUENCE },
  { "resid_dropout2", MODEL_TP_ACT_SEQUENCE },
  { "residual1", MODEL_TP_ACT_SEQUENCE },
  { "residual2", MODEL_TP_ACT_SEQUENCE },
  { "dropped", MODEL_TP_ACT_SEQUENCE },  /* a residual branch after dropout */
  { "in_place", MODEL_TP_ACT_WHOLE },    /* 0 B: an in-place op's output */
  /* inside attention: a/tp query heads */
  { "q", MODEL_TP_ACT_HEADS },
  { "k_repeated", MODEL_TP_ACT_HEADS },
  { "v_repeated", MODEL_TP_ACT_HEADS },
  { "scores", MODEL_TP_ACT_HEADS },
  { "masked_scores", MODEL_TP_ACT_HEADS },
  { "scores_fp32", MODEL_TP_ACT_HEADS },
  { "softmax", MODEL_TP_ACT_HEADS },
  { "attn_dropout_mask", MODEL_TP_ACT_HEADS },
  { "attn_dropout", MODEL_TP_ACT_HEADS },
  { "attn_av_cast", MODEL_TP_ACT_HEADS },
  { "attn_out", MODEL_TP_ACT_HEADS },
  { "alibi_scores", MODEL_TP_ACT_HEADS },
  { "logsumexp", MODEL_TP_ACT_HEADS },
  /* MLA (graph_layer.c mla_qkv; multi_latent_attention.py): the duplicated down
   * projections' outputs and the latent norms on the rank's tokens (the sequence shard
   * under SP); the up projections' outputs and the assembled per-head q and k over nh/tp
   * heads */
  { "q_a", MODEL_TP_ACT_SEQUENCE },
  { "q_a_layernorm", MODEL_TP_ACT_SEQUENCE },
  { "kv_a", MODEL_TP_ACT_SEQUENCE },
  { "kv_a_layernorm", MODEL_TP_ACT_SEQUENCE },
  { "kv_b", MODEL_TP_ACT_HEADS },
  { "query_states", MODEL_TP_ACT_HEADS },
  { "key_states", MODEL_TP_ACT_HEADS },
  /* KV heads */
  { "k", MODEL_TP_ACT_KV },
  { "v", MODEL_TP_ACT_KV },
  /* inside the MLP: i/tp features */
  { "mlp_gate", MODEL_TP_ACT_HEADS },
  { "mlp_up", MODEL_TP_ACT_HEADS },
  { "mlp_silu", MODEL_TP_ACT_HEADS },
  { "mlp_product", MODEL_TP_ACT_HEADS },
  { "mlp_fc", MODEL_TP_ACT_HEADS },
  { "mlp_act", MODEL_TP_ACT_HEADS },
  { "mlp_down_cast", MODEL_TP_ACT_HEADS },
  /* a MoE layer's shared expert (graph_layer.c shared_experts; Megatron shared_experts.py
   * SharedExpertMLP, an MLP on the tp group): fc1's gate and up outputs, the SwiGLU and
   * fc2's input over s/tp features of every token (fc1 reads the all-gathered sequence);
   * fc2's output reduce-scattered to the rank's sequence shard, which the sigmoid gate
   * (gate_weight on the shard the layer got, replicated) scales and the routed output
   * joins (moe_layer.py postprocess) */
  { "shared_gate", MODEL_TP_ACT_HEADS },
  { "shared_up", MODEL_TP_ACT_HEADS },
  { "shared_silu", MODEL_TP_ACT_HEADS },
  { "shared_product", MODEL_TP_ACT_HEADS },
  { "shared_out", MODEL_TP_ACT_SEQUENCE },
  { "shared_gate_logit", MODEL_TP_ACT_SEQUENCE },
  { "shared_gate_sigmoid", MODEL_TP_ACT_SEQUENCE },
  { "shared_scaled", MODEL_TP_ACT_SEQUENCE },
  { "moe_out", MODEL_TP_ACT_SEQUENCE },
  /* QLoRA's dequantized 16-bit weight: the rank's shard of the largest projection */
  { "nf4_dequantized", MODEL_TP_ACT_HEADS },
  /* LoRA */
  /* LoRA on a column-parallel base (q, k, v, gate, up): lora_A is whole and reads the
   * (all-gathered) input, so A·x is [b, s, r] on every rank; lora_B is split with the base's
   * output features (tensor_style: PEFT tp_layer.py, Megatron-core LoRA), so B·(A·x) is
   * the rank's output shard, at the query/MLP-inner or the KV features. */
  { "lora_ax", MODEL_TP_ACT_WHOLE },
  { "lora_bx", MODEL_TP_ACT_HEADS },
  { "lora_bx_kv", MODEL_TP_ACT_KV },
  /* On a row-parallel base (o, down): lora_A is split with the base's input features and
   * its partial A·x reduced over tp as the base's output is (reduce-scattered to the
   * sequence shard under SP); lora_B is whole, so both are of the residual stream's tokens. */
  { "lora_ax_row", MODEL_TP_ACT_SEQUENCE },
  { "lora_bx_row", MODEL_TP_ACT_SEQUENCE },
};

/* A MoE layer's tensors of tokens (these) or routed rows (model_cost_moe_row_tensors): under
 * sequence parallelism its router and experts see the rank's s/tp tokens (Megatron-LM
 * moe_layer.py takes the sequence-parallel hidden states; the expert-tp gather that follows
 * the dispatch under etp > 1 is plan_ep.c's row scaling), so they are of the sequence
 * region; a dense MLP's same-named inner tensors are i/tp features. */
static const char *const moe_token_tensors[] = { "router_logits", "router_probs", "moe_combine",
                                                NULL };

gboolean
model_tp_graph_is_moe (const ModelGraph *g)
{
  g_return_val_if_fail (g != NULL, FALSE);
  for (guint i = 0; i < g->tensors->len; i++)
    if (strcmp (g_array_index (g->tensors, ModelGraphTensor, i).name, "routed_tokens") == 0)
      return TRUE;
  return FALSE;
}

gboolean
model_tp_act_region_of (const char *name, gboolean moe, ModelTpActRegion *out)
{
  if (moe && (g_strv_contains (moe_token_tensors, name)
              || g_strv_contains (model_cost_moe_row_tensors, name)))
    {
      *out = MODEL_TP_ACT_SEQUENCE;
      return TRUE;
    }
  return model_tp_act_region (name, out);
}

gboolean
model_tp_act_region (const char *name, ModelTpActRegion *out)
{
  for (gsize j = 0; j < G_N_ELEMENTS (act_regions); j++)
    if (strcmp (act_regions[j].name, name) == 0)
      {
        *out = act_regions[j].region;
        return TRUE;
      }
  return FALSE;
}

guint
model_tp_seq_multiple (guint tp, gboolean sp)
{
  return sp ? MAX (tp, 1) : 1;
}

ModelGraph *
model_tp_shard_graph (const ModelGraph *g, guint tp, gboolean sp, guint64 n_kv_heads,
                      guint64 seq_len, GError **error)
{
  g_return_val_if_fail (g != NULL && tp >= 1, NULL);
  if (seq_len % model_tp_seq_multiple (tp, sp) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[training] seq_len = %" G_GUINT64_FORMAT " is not a multiple of [parallel] "
                   "tp = %u (sequence parallelism splits the sequence evenly over the "
                   "tensor-parallel ranks)", seq_len, tp);
      return NULL;
    }
  guint kv_ways = n_kv_heads > 0 && n_kv_heads < tp ? (guint) n_kv_heads : tp;
  gboolean moe = model_tp_graph_is_moe (g);
  g_autofree double *ways = g_new (double, g->tensors->len + 1);
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const ModelGraphTensor *t = &g_array_index (g->tensors, ModelGraphTensor, i);
      ways[i] = 1;
      if (tp <= 1)
        continue;
      ModelTpActRegion region;
      if (!model_tp_act_region_of (t->name, moe, &region))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "[parallel] tp = %u: the layer's saved tensor '%s' has no "
                       "tensor-parallel placement", tp, t->name);
          return NULL;
        }
      switch (region)
        {
        case MODEL_TP_ACT_SEQUENCE: ways[i] = sp ? tp : 1; break;
        case MODEL_TP_ACT_HEADS: ways[i] = tp; break;
        case MODEL_TP_ACT_KV: ways[i] = kv_ways; break;
        case MODEL_TP_ACT_WHOLE: ways[i] = 1; break;
        }
    }
  /* the ops as they are: their writes and frees give the rank's forward liveness */
  return model_graph_copy_scaled (g, ways);
}
