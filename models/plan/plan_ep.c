/* models/plan/plan_ep.c — expert parallelism (EP) and expert tensor parallelism (ETP) in the
 * plan: what one expert-parallel rank of a mixture-of-experts model runs, from
 * models/parallel/expert_parallel.h.
 *
 *   model states  expert weights, gradients and optimizer states ÷ (etp·ep), the rest
 *                 replicated (÷ tp): tensor_parallel.h's layout reads mesh.ep
 *                 (model_parallel_mesh sets it), plan_tp.c folds it into its fractions
 *                 (C14's three buckets, Megatron-LM #4050)
 *   kernels       the expert GEMMs of the slowest rank, the one holding the hottest expert
 *                 (model_ep_dispatch: hot_rows on that expert, rest_rows on each of its
 *                 L − 1 other local experts; model_ep_expert_gemm's shapes), so a skewed
 *                 router (load_imbalance r > 1) stretches every MoE layer by the leaf's
 *                 slowdown and capacity drops shrink it
 *   collectives   per MoE layer and micro-batch the dispatch and combine
 *                 (model_ep_layer_comms; under the all-to-all dispatcher, the default:
 *                 token-count all-gather over tp_ep, tokens' and
 *                 probabilities' all-to-all over ep, under etp > 1 their all-gather over
 *                 etp and the combine's reduce-scatter over etp, combine all-to-all) on
 *                 the expert groups (plan_collective_expert), on MODEL_STREAM_EP.
 *                 Megatron's default MoEAlltoAllTokenDispatcher runs them in line with the compute
 *                 (token_dispatcher.py: no overlap without --moe-shared-expert-overlap /
 *                 the 1F1B A2A overlap), so the next compute task waits for them
 *                 (plan_step.c: c->tp_wait, the critical-path collective the next compute
 *                 task waits for); the backward's conjugates come before the layer's
 *                 backward task.
 * Approximate: a layer is one task, so the forward's dispatch and combine both follow the
 * layer's compute (the same critical-path sum as router → dispatch → experts → combine);
 * the backward's both precede it. The MoE layer's point-wise kernels (permutation,
 * SwiGLU, combine) stay the mean rank's (the layer graph's at T·k rows); its saved
 * activations are the slowest rank's (plan_ep_layer_memory: the experts' row tensors
 * scaled by its received rows over T·k; fewer rows under drops shrink the layer's tensors
 * in proportion); a layer's full recompute re-issues its forward dispatch and combine
 * (plan_ckpt.c, as Megatron's CheckpointFunction reruns the layer); LoRA adapters of experts run
 * at the mean rank's rows. DeepSeek's leading dense layers (first_k_dense_replace) get no
 * dispatch, but their kernels are the plan's one layer cost (a MoE layer's). Every rank runs the slowest rank's expert GEMMs (the
 * all-to-alls pace the others to it; their own FLOPs and energy are overstated).
 *   gradients     under DDP (stage 0) a layer's expert gradients leave the dp buckets and
 *                 are all-reduced over expert-dp (one all-reduce per layer at the last
 *                 micro-batch, not bucketed; none when expert-dp is one rank), as
 *                 Megatron's expert_data_parallel_group. Under ZeRO-1 (Megatron's
 *                 distributed optimizer) they are reduce-scattered over expert-dp instead,
 *                 the expert optimizer states and master weights are sharded over
 *                 expert-dp (plan_state_shard_fraction), and the updated expert weights
 *                 all-gathered over it after the step (plan_ep_gather_params). All this
 *                 whenever expert-dp is not the dense dp·cp group: ep·etp > 1, or tp > 1
 *                 (its ranks route other tokens to the same experts;
 *                 model_mesh_expert_dp_own). ZeRO-2/3, FSDP and hybrid sharding are
 *                 refused there where a sharded state would hold expert tensors.
 * With context parallelism (cp > 1) a MoE layer on a cp rank routes the rank's own share of
 * the sequence, T = b·s/cp tokens (÷ tp under SP; Megatron's MoE layer sees the [s/cp, b, h]
 * hidden states get_batch_on_this_cp_rank left it): model_ep_dispatch's rows, the expert
 * GEMMs and the dispatch/combine bytes are those of cp = 1 with s/cp, the rows' extra
 * activations (PlanEp.row_extra, from the full-sequence layer graph) ÷ cp. The expert grid
 * is carved from the stage's dp·cp·tp ranks, cp among them (parallel_state.py
 * expert_decoder_rank_generator has cp = 1 and dp = world / (etp·ep·pp)), so an EP group may
 * span cp ranks and the expert-dp group (_EXPERT_DATA_PARALLEL_GROUP) holds the cp ranks
 * that share an expert shard; the dense gradients reduce over dp·cp and the attention runs
 * its cp collectives (plan_cp.c) as in a dense model.
 * With pipeline stages each stage's dp·cp·tp ranks carve their own expert grid (mesh.h
 * model_mesh_expert_group, Megatron's expert_decoder_rank_generator under the mesh's
 * order; with pp inside dp, tp-cp-ep-pp-dp, etp·ep must be cp·tp, as Megatron asserts): a
 * stage's dispatch, combine and expert-gradient reductions never leave it.
 * Expert tensor parallelism (etp > 1; Megatron's expert_tensor_parallel_size, carved
 * innermost from any of the stage's ranks, tensor- or data-parallel: nothing in Megatron
 * ties it to tp): each expert's fc1 column- and fc2 row-parallel over etp (experts.py
 * TEGroupedMLP), so a rank holds 1/(ep·etp) of the expert weights; after the ep all-to-all
 * the rank all-gathers its etp group's received rows (dispatch_postprocess), runs its
 * local experts on etp × the rows at the inner width i/etp (model_ep_dispatch's rows count
 * every source rank of the tp_ep group; a rank's expert FLOPs equal etp 1's at the same
 * ep·etp), keeps fc1's input at those rows × h and the inner tensors at rows × i/etp
 * (PlanEp.row_extra), and reduce-scatters the experts' output over etp before the combine
 * (combine_preprocess, in the probabilities' dtype); the forward's transient peak holds
 * the experts' output (the reduce-scatter's input, saved by nothing) at the gathered rows
 * (PlanEp.workspace_extra). Refused: etp > 1 with biased experts (Megatron's
 * transformer_config.py allows expert biases only at ETP == 1). Approximate under etp: the
 * variable split sizes of the etp gathers are the mean rank's; the all-gather's output
 * alive beside the all-to-all's (the layer graph has no such pair) and the backward's
 * gathered gradients are not booked as transients; LoRA adapters of experts run at the
 * mean rank's rows and whole width.
 * All-gather dispatcher ([moe] dispatcher = allgather; token_dispatcher.py
 * MoEAllGatherTokenDispatcher, expert_parallel.h): with ep·etp > 1 the layer's EP-stream
 * collectives are the routing map's, probabilities' and hidden states' all-gathers and
 * the combine's reduce-scatter over the tp_ep group (MODEL_MESH_EXPERT_TP_EP), the
 * backward their conjugates (model_ep_layer_comms), in line as the all-to-alls are; the
 * rank computes the same rows (hot expert, capacity, etp), so the expert GEMMs and the
 * saved activations are the all-to-all path's; the permutation kernels read and write
 * the gathered tokens (allgather_permutes; no sort_chunks: the permute groups the rows
 * by local expert itself); the forward's and backward's transient peaks are at least the
 * dispatcher's G-token buffers (PlanEp.ag_workspace). Approximate: Megatron gathers the
 * hidden states into its persistent global "mpu" buffer (reused by every layer, sized by
 * the largest request), booked here as the layer forward's workspace; the G-token buffers
 * are compared with the layer graph's transient peak (the larger counts), not added to
 * what else is alive then; the routing-map and probability slices (G × local experts)
 * and the tokens-per-expert device-to-host copy are left out. */
#include "config.h"
#include "models/plan/plan-private.h"

#include <string.h>

void
plan_ep_params (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                ModelEpParams *out)
{
  (void) arch;
  model_ep_params_init (out);
  out->micro_batch = stack->micro_batch;
  out->seq_len = stack->seq_len;
  out->tp = MAX (par->tp, 1);
  out->cp = MAX (par->cp, 1);
  out->sp = par->sequence_parallel;
  out->ep = MAX (par->ep, 1);
  out->etp = MAX (par->etp, 1);
  out->act_bytes = model_stack_activation_bytes (stack);
  out->prob_bytes = out->act_bytes; /* Megatron's --moe-router-dtype default: the params' */
  out->drop = par->moe_drop;
  out->capacity_factor = par->moe_capacity_factor;
  out->pad = par->moe_pad;
  out->imbalance = par->moe_imbalance > 0 ? par->moe_imbalance : 1.0;
  out->expert_load = par->moe_expert_load;
  out->dispatcher = par->moe_dispatcher;
}

/* Which scenario key a leaf message is about (the leaf names them in its text). */
static const char *
key_of (const char *message)
{
  static const char *const keys[][2] = {
    { "[moe] capacity_factor", "group [moe], key 'capacity_factor': " },
    { "[moe] pad_to_capacity", "group [moe], key 'pad_to_capacity': " },
    { "[moe] load_imbalance", "group [moe], key 'load_imbalance': " },
    { "[moe] expert_load", "group [moe], key 'expert_load': " },
    { "[moe] dispatcher", "group [moe], key 'dispatcher': " },
    { "[training] seq_len", "group [training], key 'seq_len': " },
    { "[parallel] etp", "group [parallel], key 'etp': " },
  };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (strstr (message, keys[i][0]) != NULL)
      return keys[i][1];
  return "group [parallel], key 'ep': ";
}

/* The leaf's message without a leading "[group] " its key prefix already names:
 * "[moe] capacity_factor = 0 must be > 0 (…)" → "capacity_factor = 0 must be > 0 (…)";
 * borrowed from `message`. */
static const char *
without_group (const char *message)
{
  const char *close = message[0] == '[' ? strstr (message, "] ") : NULL;
  return close != NULL && strchr (message, ' ') > close ? close + 2 : message;
}

static gboolean
fail (GError **error, const char *key, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static gboolean
fail (GError **error, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s%s", key, msg);
  return FALSE;
}

/* [moe] a2a_overlap against Megatron's own asserts (transformer_config.py __post_init__,
 * "overlap_moe_expert_parallel_comm ...": ep > 1, no full recompute, a 16-bit model, at
 * most one MTP layer, virtual pipeline stages when pp > 1) and what the combined schedule
 * here models (plan_step.c, plan_pp.c): tp = cp = 1 (the tensor- and context-parallel
 * collectives of two interleaved micro-batches are not modelled; Megatron's arguments.py
 * advises against them on Hopper). */
static gboolean
a2a_overlap_check (const ModelStack *stack, const ModelParallel *par, GError **error)
{
  const char *key = "group [moe], key 'a2a_overlap': ";
  if (MAX (par->ep, 1) <= 1)
    return fail (error, key, "the all-to-all overlap needs ep > 1 (Megatron-LM: "
                             "overlap_moe_expert_parallel_comm is only supported with expert "
                             "model parallelism)");
  if (stack->checkpointing == MODEL_CHECKPOINTING_SELECTIVE_OP)
    return fail (error, key, "the all-to-all overlap with checkpointing = selective_op is not "
                             "modelled (op-level selective checkpointing is torchtitan's; "
                             "Megatron's combined 1F1B runs with none or selective)");
  if (stack->checkpointing != MODEL_CHECKPOINTING_NONE
      && stack->checkpointing != MODEL_CHECKPOINTING_SELECTIVE)
    return fail (error, key, "the all-to-all overlap with checkpointing = %s is refused by "
                             "Megatron-LM (disable full recomputation when enabling "
                             "overlap_moe_expert_parallel_comm); use none or selective",
                 model_stack_checkpointing_name (stack->checkpointing));
  /* the combined schedule's two micro-batches in flight per layer: the activation
   * offload's per-layer save/restore pairs (plan_offload.c) assume one */
  if (stack->offload.activations != MODEL_OFFLOAD_NONE)
    return fail (error, key, "the all-to-all overlap with activations offloaded ([offload] "
                             "activations or [training] activation_offload) is not modelled "
                             "yet");
  ModelPrecision pr = stack->precision;
  if (pr != MODEL_PRECISION_BF16_MIXED && pr != MODEL_PRECISION_FP16_MIXED
      && pr != MODEL_PRECISION_BF16)
    return fail (error, key, "the all-to-all overlap with precision %s is refused by "
                             "Megatron-LM (only supported with a bf16 or fp16 model)",
                 model_stack_precision_name (pr));
  if (stack->checkpointing == MODEL_CHECKPOINTING_SELECTIVE
      && (stack->recompute_modules & MODEL_RECOMPUTE_MOE))
    return fail (error, key, "the all-to-all overlap with recompute_modules moe is refused by "
                             "Megatron-LM (disable moe in recompute_modules when enabling "
                             "overlap_moe_expert_parallel_comm)");
  if (par->moe_dispatcher != MODEL_EP_DISPATCHER_ALLTOALL)
    return fail (error, key, "the all-to-all overlap with dispatcher = %s is refused by "
                             "Megatron-LM (overlap_moe_expert_parallel_comm is supported with "
                             "the alltoall/flex token dispatcher)",
                 model_ep_dispatcher_name (par->moe_dispatcher));
  if (stack->mtp_layers > 1)
    return fail (error, key, "the all-to-all overlap with mtp_layers = %u is refused by "
                             "Megatron-LM (MTP supports at most one layer when enabling "
                             "overlap_moe_expert_parallel_comm)", stack->mtp_layers);
  if (MAX (par->pp, 1) > 1 && par->pp_schedule != MODEL_PP_INTERLEAVED)
    return fail (error, key, "the all-to-all overlap with pp = %u and pipeline_schedule = %s "
                             "is refused by Megatron-LM (if enabling EP A2A overlap, "
                             "virtual_pipeline_model_parallel_size must be specified when "
                             "pipeline_model_parallel_size > 1): use pipeline_schedule = "
                             "interleaved", par->pp, model_pp_schedule_name (par->pp_schedule));
  if (MAX (par->tp, 1) > 1 || MAX (par->cp, 1) > 1)
    return fail (error, key, "the all-to-all overlap with %s = %u is not modelled yet (the "
                             "combined schedule here interleaves expert-parallel collectives "
                             "only)", par->tp > 1 ? "tp" : "cp", par->tp > 1 ? par->tp : par->cp);
  return TRUE;
}

gboolean
plan_ep_validate (const ModelArch *arch, const ModelStack *stack, const ModelParallel *par,
                  GError **error)
{
  guint ep = MAX (par->ep, 1), etp = MAX (par->etp, 1);
  gboolean allgather = par->moe_dispatcher == MODEL_EP_DISPATCHER_ALLGATHER;
  gboolean options = par->moe_drop || par->moe_pad || allgather || par->moe_a2a_overlap
                     || par->moe_expert_load != NULL
                     || (par->moe_imbalance > 0 && par->moe_imbalance != 1.0);
  if (arch->n_experts == 0 && options)
    return fail (error, par->moe_drop  ? "group [moe], key 'capacity_factor': "
                        : par->moe_pad ? "group [moe], key 'pad_to_capacity': "
                        : allgather    ? "group [moe], key 'dispatcher': "
                        : par->moe_a2a_overlap ? "group [moe], key 'a2a_overlap': "
                        : par->moe_expert_load != NULL ? "group [moe], key 'expert_load': "
                                       : "group [moe], key 'load_imbalance': ",
                 "model '%s' has no experts (num_local_experts absent or 0)", arch->name);
  /* transformer_config.py __post_init__: "Token dispatcher type: allgather does not support
   * variable sequence length, please use alltoall dispatcher instead" */
  if (arch->n_experts > 0 && allgather && stack->pad_to_longest)
    return fail (error, "group [moe], key 'dispatcher': ",
                 "allgather with [training] padding = longest (sequence lengths varying from "
                 "batch to batch) is refused by Megatron-LM (transformer_config.py: the "
                 "allgather dispatcher does not support variable sequence length); use "
                 "alltoall");
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  g_autoptr (GError) e = NULL;
  if (!model_ep_check (arch, &mesh, &e)) /* a dense model given only etp: name etp */
    return fail (error, arch->n_experts == 0 && ep <= 1 ? "group [parallel], key 'etp': "
                                                        : key_of (e->message),
                 "%s", without_group (e->message));
  if (arch->n_experts == 0)
    return TRUE;
  /* the order's expert carving (mesh.h: with pp inside dp, etp·ep must be cp·tp) */
  GError *order_error = NULL;
  if (!model_mesh_validate (&mesh, par->degree, &order_error))
    {
      g_propagate_prefixed_error (error, order_error, "group [parallel], ");
      return FALSE;
    }
  /* transformer_config.py __post_init__: "Bias in Moe is only supported when ETP==1" */
  if (etp > 1 && arch->mlp_bias)
    return fail (error, "group [parallel], key 'etp': ",
                 "etp = %u with the biased experts of model '%s' is refused by Megatron-LM "
                 "(transformer_config.py: bias in MoE is only supported when ETP == 1); use "
                 "etp = 1", etp, arch->name);
  guint stage = model_parallel_stage (par);
  if (model_mesh_expert_dp_own (&mesh) && stage > 0)
    {
      /* Megatron's distributed optimizer (ZeRO-1) shards expert states over expert-dp,
       * dense ones over dp (plan_state_shard_fraction); gradients sharded as they
       * accumulate (stage 2) and weights at rest (stage 3) would need expert-dp shards of
       * those too, and hybrid sharding a replica group of expert shards: not modelled, so
       * refused where a sharded state would hold expert tensors (stage 3 shards the
       * weights, frozen experts included) */
      g_autoptr (ModelInventory) inv = model_stack_inventory (stack, arch);
      gboolean trainable_experts = model_ep_trains_experts (inv);
      if (stage == 3
          || (trainable_experts
              && (stage == 2 || mesh.degree[MODEL_MESH_DP_REPLICATE] > 1)))
        return fail (error, "group [parallel], key 'data_parallel': ",
                     "%s with ep = %u, etp = %u, tp = %u is not modelled yet (expert %s would "
                     "shard over the expert-data-parallel ranks, GPUs / (ep · etp · pp), not "
                     "over the data-parallel group); use zero1 (Megatron's distributed "
                     "optimizer: expert states shard over expert-dp) or ddp, or train no "
                     "expert tensors",
                     model_parallel_mode_name (par->mode), ep, etp, MAX (par->tp, 1),
                     stage == 3 ? "weights and states" : "gradients");
    }
  if (par->moe_a2a_overlap && !a2a_overlap_check (stack, par, error))
    return FALSE;
  ModelEpParams params;
  ModelEpDispatch d;
  plan_ep_params (arch, stack, par, &params);
  if (!model_ep_dispatch (arch, &params, &d, &e))
    return fail (error, key_of (e->message), "%s", without_group (e->message));
  return TRUE;
}

/* The saved bytes of graph `g`'s tensors named in `names` under the four policies of
 * PlanEp.row_extra: kept under KEEP_ALL, re-created by selective recompute, kept under
 * KEEP_MATMUL, re-created by op-level selective recompute. */
static void
row_bytes (const ModelGraph *g, gboolean compile, const char *const *names, double out[4])
{
  double all = model_graph_saved_named (g, MODEL_GRAPH_KEEP_ALL, compile, names);
  out[0] = all;
  out[1] = all - model_graph_saved_named (g, MODEL_GRAPH_KEEP_NON_SELECTIVE, compile, names);
  out[2] = model_graph_saved_named (g, MODEL_GRAPH_KEEP_MATMUL, compile, names);
  out[3] = all - model_graph_saved_named (g, MODEL_GRAPH_KEEP_MATMUL_SAVED, compile, names);
}

/* How much the forward transient peak of `g` grows when its hidden-width row tensors hold
 * 1 + `wide` times their rows and its inner ones 1 + `inner` times (a copy scaled so, its
 * liveness unchanged: model_graph_copy_scaled). Under etp the experts' output — fc2's,
 * which combine_preprocess reduce-scatters over etp and nothing saves (the gather and the
 * reduce-scatter autograd functions save no tensor, mappings.py) — is etp × the rows × h
 * while it lives. */
static double
row_transients (const ModelGraph *g, gboolean compile, double wide, double inner)
{
  g_autofree double *div = g_new (double, g->tensors->len + 1);
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const char *name = g_array_index (g->tensors, ModelGraphTensor, i).name;
      div[i] = g_strv_contains (model_cost_moe_inner_row_tensors, name) ? 1 / (1 + inner)
               : g_strv_contains (model_cost_moe_row_tensors, name)     ? 1 / (1 + wide)
                                                                         : 1;
    }
  g_autoptr (ModelGraph) scaled = model_graph_copy_scaled (g, div);
  return model_graph_transient_peak (scaled, compile, NULL)
         - model_graph_transient_peak (g, compile, NULL);
}

/* Fills p->ep.row_extra and workspace_extra. */
static void
init_rows (ModelPlan *p)
{
  /* the experts' row tensors (graph_layer.c: the rows a rank's experts receive, from the
   * routed copies to the expert output) scale with the received rows; the router's and the
   * tokens' own (per local token) do not. The graph's rows are the rank's own routed
   * copies, T·k, which balanced routing without padding or drops also makes the rows it
   * receives at etp 1. Under etp > 1 the rank's experts run on the rows gathered over etp
   * (slowest_rows counts them: etp × the all-to-all's), whose hidden-width tensors (fc1's
   * saved input, the experts' output) grow by slowest_rows / T·k, while the inner ones
   * (fc1's output, fc2's input: i/etp a row, experts.py TEGroupedMLP) grow by
   * slowest_rows / (etp·T·k): 1 for balanced routing */
  PlanEp *ep = &p->ep;
  const ModelEpDispatch *dp = &ep->dispatch;
  double wide = dp->routed > 0 ? dp->slowest_rows / dp->routed - 1 : 0;
  double inner = dp->routed > 0 ? dp->slowest_rows / (dp->routed * ep->params.etp) - 1 : 0;
  if (wide != 0 || inner != 0)
    {
      g_autoptr (GError) e = NULL;
      g_autoptr (ModelGraph) g = plan_tp_layer_graph (p->arch, &p->stack, &p->par, &e);
      g_assert (g != NULL); /* plan_tp_validate */
      gboolean compile = p->stack.framework.compile;
      double all[4], in[4];
      row_bytes (g, compile, model_cost_moe_row_tensors, all);
      row_bytes (g, compile, model_cost_moe_inner_row_tensors, in);
      double cp = MAX (p->par.cp, 1); /* a cp rank's sequence share (plan_cp.c) */
      for (guint j = 0; j < 4; j++)
        ep->row_extra[j] = (wide * (all[j] - in[j]) + inner * in[j]) / cp;
      if (ep->params.etp > 1)
        ep->workspace_extra = row_transients (g, compile, wide, inner) / cp;
    }
}

void
plan_ep_init (ModelPlan *p)
{
  PlanEp *ep = &p->ep;
  *ep = (PlanEp){ 0 };
  /* under tp (with sequence parallelism) a rank routes its s/tp tokens: the dispatch model
   * gives its experts' rows even at ep 1 */
  if (p->arch->n_experts == 0 || (MAX (p->par.ep, 1) * MAX (p->par.etp, 1) <= 1
                                  && !p->par.moe_drop && MAX (p->par.tp, 1) <= 1))
    return;
  plan_ep_params (p->arch, &p->stack, &p->par, &ep->params);
  g_autoptr (GError) error = NULL;
  gboolean ok = model_ep_dispatch (p->arch, &ep->params, &ep->dispatch, &error);
  g_assert (ok); /* plan_ep_validate */
  ep->on = TRUE;
  guint stage = model_parallel_stage (&p->par);
  if (model_mesh_expert_dp_own (&p->mesh) && stage <= 1)
    {
      /* Megatron-LM reduces expert gradients over the expert-data-parallel group
       * (distributed_data_parallel.py: expert_parallel_buffers on
       * expert_data_parallel_group), the dense ones over dp (with cp): all-reduced under
       * DDP, reduce-scattered under the distributed optimizer (ZeRO-1); a rank holds
       * 1/ep of the experts and 1/etp of each (experts.py TEGroupedMLP: fc1 column-, fc2
       * row-parallel over expt_tp; their biases, which etp would leave whole, are refused
       * with etp > 1 by plan_ep_validate) */
      g_autoptr (ModelInventory) inv = model_stack_inventory (&p->stack, p->arch);
      for (guint i = 0; i < inv->tensors->len; i++)
        {
          const ModelTensor *t = model_inventory_tensor (inv, i);
          if (t->trainable && model_tensor_is_parameter (t)
              && model_ep_tensor_is_expert (inv, t))
            ep->expert_params_layer
              += (double) model_inventory_copies (inv, t, MODEL_INVENTORY_LAYER)
                 / (ep->params.ep * ep->params.etp) * (double) model_tensor_numel (t);
        }
      ep->edp_reduce = ep->expert_params_layer > 0;
      ep->edp_kind = stage == 0 ? HW_COLLECTIVE_ALL_REDUCE : HW_COLLECTIVE_REDUCE_SCATTER;
    }
  init_rows (p);
  if (ep->params.dispatcher == MODEL_EP_DISPATCHER_ALLGATHER && ep->dispatch.group > 1)
    {
      ModelEpActs a;
      model_ep_acts_megatron (p->arch, &ep->params, &ep->dispatch, &a);
      ep->ag_workspace[0] = a.transient;
      ep->ag_workspace[1] = a.transient_bwd;
    }
  for (guint d = 0; d < 2; d++)
    {
      ep->comms[d] = g_array_new (FALSE, FALSE, sizeof (ModelEpComm));
      model_ep_layer_comms (p->arch, &ep->params, &ep->dispatch,
                            d == 0 ? MODEL_EP_FORWARD : MODEL_EP_BACKWARD, ep->comms[d]);
    }
}

void
plan_ep_clear (PlanEp *ep)
{
  for (guint d = 0; d < 2; d++)
    g_clear_pointer (&ep->comms[d], g_array_unref);
}

/* Whether op `name` is one of the MoE layer's expert GEMMs (graph_layer.c expert_gemm:
 * gate/up or fc, down or proj) and which: fc2 (the down projection) or fc1. */
static gboolean
expert_op (const char *name, gboolean *fc2)
{
  static const char *const fc1[] = { "mlp_gate", "mlp_up", "mlp_fc" };
  static const char *const fc2s[] = { "mlp_down", "mlp_proj" };
  for (guint i = 0; i < G_N_ELEMENTS (fc1); i++)
    if (g_strcmp0 (name, fc1[i]) == 0)
      return *fc2 = FALSE, TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (fc2s); i++)
    if (g_strcmp0 (name, fc2s[i]) == 0)
      return *fc2 = TRUE, TRUE;
  return FALSE;
}

/* A GEMM op like `op` (its pass factor: forward 1, backward 2, frozen dgrad 1 — the
 * ratio of its FLOPs to the forward FLOPs of its shape) on `rows` rows of `count` experts,
 * shape (n, k) from model_ep_expert_gemm at expert tensor parallel degree `etp` (the
 * inner width i/etp; each of SwiGLU's separate gate and up projections is half of fc1),
 * cost_gemm_op's bytes (input e·m·k, weights w·n·k, output e·m·n per expert). */
static ModelOp
reshape (const ModelOp *op, const ModelArch *arch, guint etp, gboolean fc2, double rows,
         double count, double e, double w)
{
  const HwKernelShape *o = &op->shape;
  double fwd = 2 * o->m * o->n * o->k * MAX (o->batch, 1);
  double factor = fwd > 0 ? op->flops / fwd : 1;
  HwKernelShape sh = model_ep_expert_gemm (arch, etp, fc2, rows, count);
  if (!fc2 && arch->mlp == MODEL_MLP_SWIGLU)
    sh.n /= 2;
  sh.cls = o->cls;
  ModelOp out = *op;
  out.shape = sh;
  out.flops = factor * 2 * rows * sh.n * sh.k * count;
  out.bytes = factor * count * (e * rows * sh.k + w * sh.n * sh.k + e * rows * sh.n);
  return out;
}

/* The router GEMM `op` (m tokens × h → E) on m/tp tokens: FLOPs and the activation traffic
 * ÷ tp, the weights read whole (its pass factor kept, as reshape's). */
static ModelOp
router_shard (const ModelOp *op, guint tp, double e, double w)
{
  const HwKernelShape *o = &op->shape;
  double fwd = 2 * o->m * o->n * o->k * MAX (o->batch, 1);
  double factor = fwd > 0 ? op->flops / fwd : 1;
  ModelOp out = *op;
  out.shape.m = o->m / tp;
  out.flops = op->flops / tp;
  out.bytes = factor * (e * out.shape.m * o->k + w * o->k * o->n + e * out.shape.m * o->n);
  return out;
}

/* Rewrites the expert GEMMs of `pass` as the slowest rank's: the hot expert's GEMM and the
 * grouped GEMM of the L − 1 others (one op each); model FLOPs those of the mean rank
 * (L experts on mean_rows each: the work the step accomplishes, so MFU does not count the
 * straggler's extra rows twice), and straggler_flops what the slowest rank runs beyond the
 * mean one (so neither does HFU: every rank is replayed as the slowest). Under etp the rows are those gathered over etp (the
 * dispatch's hot_rows, rest_rows and mean_rows count every source rank of the tp_ep group)
 * at the inner width i/etp, so a rank's expert FLOPs are those of etp = 1 at the same
 * ep·etp (L·mean_rows·i/etp = (E/ep)·(ep·etp·T·k/E)·i/etp = T·k·i). */
static void
rewrite_pass (const ModelPlan *p, ModelPass *pass, double e, double w)
{
  const ModelEpDispatch *d = &p->ep.dispatch;
  double L = d->n_local_experts;
  ModelPass out = *pass;
  out.n_ops = 0;
  out.flops = out.bytes = 0;
  out.model_flops = pass->model_flops;
  for (guint i = 0; i < pass->n_ops; i++)
    {
      const ModelOp *op = &pass->ops[i];
      gboolean fc2;
      gboolean gemm = op->shape.cls == HW_KERNEL_GEMM || op->shape.cls == HW_KERNEL_GEMM_BACKWARD
                      || op->shape.cls == HW_KERNEL_GEMM_DGRAD;
      if (gemm && g_strcmp0 (op->name, "router") == 0 && p->ep.params.sp && p->ep.params.tp > 1)
        {
          /* the router reads the rank's sequence shard (the layer graph's is the whole) */
          ModelOp r = router_shard (op, p->ep.params.tp, e, w);
          g_assert (out.n_ops < MODEL_COST_MAX_OPS);
          out.ops[out.n_ops++] = r;
          out.flops += r.flops;
          out.bytes += r.bytes;
          out.model_flops += r.flops - op->flops;
          continue;
        }
      if (!gemm || !expert_op (op->name, &fc2))
        {
          g_assert (out.n_ops < MODEL_COST_MAX_OPS);
          out.ops[out.n_ops++] = *op;
          out.flops += op->flops;
          out.bytes += op->bytes;
          continue;
        }
      guint etp = p->ep.params.etp;
      ModelOp mean = reshape (op, p->arch, etp, fc2, d->mean_rows, L, e, w);
      out.model_flops += mean.flops - op->flops;
      ModelOp parts[2] = { reshape (op, p->arch, etp, fc2, d->hot_rows, 1, e, w),
                           reshape (op, p->arch, etp, fc2, d->rest_rows, L - 1, e, w) };
      double rank_flops = 0;
      for (guint k = 0; k < (L > 1 ? 2u : 1u); k++)
        {
          g_assert (out.n_ops < MODEL_COST_MAX_OPS);
          out.ops[out.n_ops++] = parts[k];
          out.flops += parts[k].flops;
          out.bytes += parts[k].bytes;
          rank_flops += parts[k].flops;
        }
      out.straggler_flops += MAX (rank_flops - mean.flops, 0.0);
    }
  *pass = out;
}

void
plan_ep_layer_memory (const ModelPlan *p, ModelBlockCost *layer)
{
  if (!p->ep.on)
    return;
  layer->act_saved += p->ep.row_extra[0];
  layer->act_selective += p->ep.row_extra[1];
  layer->act_keep_matmul += p->ep.row_extra[2];
  layer->act_pointwise += p->ep.row_extra[3];
  layer->fwd.workspace += p->ep.workspace_extra;
  layer->selective_fwd.workspace += p->ep.workspace_extra;
  /* the all-gather dispatcher's G-token buffers live while the MoE part of the layer runs,
   * when the layer graph's other transients (attention's) are gone: the pass's peak is the
   * larger of the two */
  layer->fwd.workspace = MAX (layer->fwd.workspace, p->ep.ag_workspace[0]);
  layer->selective_fwd.workspace = MAX (layer->selective_fwd.workspace, p->ep.ag_workspace[0]);
  layer->bwd.workspace = MAX (layer->bwd.workspace, p->ep.ag_workspace[1]);
}

/* Appends a memory-bound op of `bytes` to `pass`. */
static void
add_elementwise (ModelPass *pass, const char *name, double bytes)
{
  g_assert (pass->n_ops < MODEL_COST_MAX_OPS);
  pass->ops[pass->n_ops++] = (ModelOp){ .name = name, .op_class = MODEL_OP_ELEMENTWISE,
                                        .bytes = bytes, .shape = { HW_KERNEL_PLAIN } };
  pass->bytes += bytes;
}

/* Under the all-gather dispatcher with ep·etp > 1 the layer graph's permutation kernels
 * (graph_layer.c moe_dispatch, moe_combine: e·(T + m)·h, read the tokens and write their
 * m routed copies, and back; cost_mirror_backward's element-wise backward 2×) run on the
 * gathered tokens instead: permute's index_select picks the rank's N = slowest_rows rows
 * out of the G = gathered_tokens, unpermute scatters them into a zeroed G × h
 * (moe_utils.py permute / unpermute; token_dispatcher.py MoEAllGatherTokenDispatcher
 * dispatch_postprocess, combine_preprocess): e·(G + N)·h each, × `factor` (1 forward, 2
 * backward). */
static void
allgather_permutes (const ModelPlan *p, ModelPass *pass, double e, double factor)
{
  const ModelEpDispatch *d = &p->ep.dispatch;
  if (d->group <= 1)
    return;
  double bytes = factor * e * (d->gathered_tokens + d->slowest_rows)
                 * (double) p->arch->hidden_size;
  for (guint i = 0; i < pass->n_ops; i++)
    {
      ModelOp *op = &pass->ops[i];
      if (g_strcmp0 (op->name, "moe_dispatch") != 0 && g_strcmp0 (op->name, "moe_combine") != 0)
        continue;
      pass->bytes += bytes - op->bytes;
      op->bytes = bytes;
    }
}

void
plan_ep_layer_kernels (const ModelPlan *p, ModelBlockCost *layer)
{
  if (!p->ep.on)
    return;
  ModelCostParams cp = model_stack_cost_params (&p->stack);
  rewrite_pass (p, &layer->fwd, cp.act_bytes, cp.weight_bytes);
  rewrite_pass (p, &layer->bwd, cp.act_bytes, cp.weight_bytes);
  /* recompute_modules moe reruns the experts' GEMMs (graph_layer.c mlp): the slowest
   * rank's, as the forward's */
  gboolean moe_rerun = p->stack.checkpointing == MODEL_CHECKPOINTING_SELECTIVE
                       && (p->stack.recompute_modules & MODEL_RECOMPUTE_MOE);
  if (moe_rerun)
    rewrite_pass (p, &layer->selective_fwd, cp.act_bytes, cp.weight_bytes);
  const ModelEpDispatch *d = &p->ep.dispatch;
  if (p->ep.params.dispatcher == MODEL_EP_DISPATCHER_ALLGATHER)
    {
      allgather_permutes (p, &layer->fwd, cp.act_bytes, 1);
      allgather_permutes (p, &layer->bwd, cp.act_bytes, 2);
      if (moe_rerun)
        allgather_permutes (p, &layer->selective_fwd, cp.act_bytes, 1);
      return;
    }
  if (p->stack.framework.kind == MODEL_FRAMEWORK_MEGATRON
      && p->ep.params.ep * p->ep.params.etp > 1 && d->n_local_experts > 1)
    {
      /* Megatron's all-to-all dispatcher permutes twice each way: after the all-to-all (and
       * under etp > 1 the all-gather over etp) the received rows, grouped by source rank,
       * are sorted by local expert, and before the combine (and the etp reduce-scatter)
       * sorted back (token_dispatcher.py MoEAlltoAllTokenDispatcher dispatch_postprocess /
       * combine_preprocess: sort_chunks_by_idxs whenever num_local_experts > 1), each
       * reading and writing the rank's rows × h, the gathered ones: slowest_rows; the
       * backward runs the inverse permutations on the gradients. */
      double rows = d->slowest_rows;
      double bytes = 2 * cp.act_bytes * rows * (double) p->arch->hidden_size;
      add_elementwise (&layer->fwd, "moe_sort_chunks", bytes);
      add_elementwise (&layer->fwd, "moe_unsort_chunks", bytes);
      if (moe_rerun)
        {
          add_elementwise (&layer->selective_fwd, "moe_sort_chunks", bytes);
          add_elementwise (&layer->selective_fwd, "moe_unsort_chunks", bytes);
        }
      add_elementwise (&layer->bwd, "moe_sort_chunks", bytes);
      add_elementwise (&layer->bwd, "moe_unsort_chunks", bytes);
    }
}

/* Whether `layer` has experts: DeepSeek's first_k_dense_replace layers have a dense MLP
 * (no dispatch, no expert gradients); -1 (an MTP depth's or a block's) counts as MoE. */
static gboolean
moe_layer (const ModelPlan *p, gint layer)
{
  return layer < 0 || (guint64) layer >= p->arch->deepseek.first_k_dense;
}

guint
plan_ep_issue (ModelPlan *p, guint rank, guint pass, guint after, gint layer, gint micro_batch)
{
  const GArray *comms = p->ep.on && moe_layer (p, layer) ? p->ep.comms[pass] : NULL;
  guint last = after;
  for (guint i = 0; comms != NULL && i < comms->len; i++)
    {
      const ModelEpComm *m = &g_array_index (comms, ModelEpComm, i);
      guint id = plan_collective_expert (p, rank, MODEL_STREAM_EP, m->dim, m->kind, m->bytes,
                                         layer, micro_batch, m->name);
      if (id == G_MAXUINT)
        continue;
      plan_task_dep (p, last);
      last = id;
    }
  return last;
}

double
plan_ep_dense_params (const ModelPlan *p, double params)
{
  return p->ep.edp_reduce ? MAX (params - p->ep.expert_params_layer, 0) : params;
}

void
plan_ep_reduce_grads (ModelPlan *p, guint rank, guint ready, gint layer, gint micro_batch)
{
  if (!p->ep.edp_reduce || !moe_layer (p, layer))
    return;
  double bytes = p->ep.expert_params_layer * plan_reduce_bytes (p);
  g_autofree char *what = g_strdup_printf ("expert grads L%d (edp)", layer);
  guint id = plan_collective_expert (p, rank, MODEL_STREAM_COMM, MODEL_MESH_EXPERT_DP,
                                     p->ep.edp_kind, bytes, layer, micro_batch, what);
  if (id != G_MAXUINT)
    plan_task_dep (p, ready);
}

void
plan_ep_gather_params (ModelPlan *p, guint rank, guint after, double bytes)
{
  /* the distributed optimizer's param all-gather of the expert buffers over expert-dp
   * (distributed_data_parallel.py start_param_sync on expert_parallel_bucket_groups) */
  if (bytes <= 0 || !model_mesh_expert_dp_own (&p->mesh)
      || plan_state_shard_fraction (p, MODEL_MEM_OPTIMIZER_STATE, MODEL_PHASE_STEP, TRUE) >= 1)
    return;
  guint id = plan_collective_expert (p, rank, MODEL_STREAM_COMM, MODEL_MESH_EXPERT_DP,
                                     HW_COLLECTIVE_ALL_GATHER, bytes, -1, -1,
                                     "updated expert params (edp)");
  if (id != G_MAXUINT)
    plan_task_dep (p, after);
}
