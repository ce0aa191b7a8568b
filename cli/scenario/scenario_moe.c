/* cli/scenario/scenario_moe.c — expert parallelism and MoE token dispatch: [parallel] ep,
 * etp and the [moe] group (models/parallel/expert_parallel.h, models/plan/plan_ep.c).
 *
 *   [parallel] ep   = 8       expert model parallel degree (default 1; Megatron-LM
 *                             --expert-model-parallel-size), carved with etp out of the
 *                             dp·cp·tp ranks of a pipeline stage (models/parallel/mesh.h)
 *              etp  = 1       expert tensor parallel degree (default 1, not Megatron's
 *                             default of tp; --expert-tensor-parallel-size): each expert's
 *                             fc1/fc2 split over etp ranks, carved innermost with ep from
 *                             the stage's ranks (any etp with ep·etp dividing them, tp = 1
 *                             included; plan_ep.c)
 *   [moe] capacity_factor = 1.25   token copies an expert accepts per source rank
 *                                  ceil(c·T·k/E), the rest dropped (absent: dropless;
 *                                  --moe-expert-capacity-factor)
 *         load_imbalance  = 2      r = max/mean token load per expert, in [1, E/k]
 *                                  (default 1: uniform routing)
 *         pad_to_capacity = true   every expert's input padded to its capacity (default
 *                                  false; --moe-pad-expert-input-to-capacity; needs a
 *                                  capacity_factor)
 *         a2a_overlap     = true   the combined 1F1B schedule that hides the dispatch and
 *                                  combine all-to-alls of one micro-batch behind the
 *                                  compute of another (default false;
 *                                  --overlap-moe-expert-parallel-comm, Megatron-Bridge's
 *                                  moe_a2a_overlap; models/plan/plan_step.c, with pp > 1
 *                                  under the interleaved schedule, plan_pp.c)
 *         expert_load = zipf:1.1   the experts' shares of the routed tokens instead of
 *                                  load_imbalance: zipf:S (popularity ∝ (q+1)^−S, experts
 *                                  in a seeded random order) or E relative loads in expert
 *                                  order (a measured histogram); model_ep_expert_shares
 *         dispatcher = allgather   alltoall | allgather (default alltoall;
 *                                  --moe-token-dispatcher-type, whose TransformerConfig
 *                                  default is allgather): allgather gathers the whole
 *                                  ep·etp group's tokens to every rank and reduce-scatters
 *                                  the experts' output (MoEAllGatherTokenDispatcher,
 *                                  expert_parallel.h); 'flex' (DeepEP, HybridEP) refused,
 *                                  not modelled
 *
 * Load after [parallel]. Any [moe] key on a dense model (no experts) is an error here, even
 * one that restates a default. Values are parsed strictly here; their checks against the model
 * and the mesh (ep dividing the experts and the stage's ranks, a dense model with ep > 1 or
 * [moe] keys, capacity_factor ≤ 0, r outside [1, E/k], allgather with padding = longest)
 * are model_plan_validate's
 * (plan_ep_validate), which names group and key; the caller prefixes the file.
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

gboolean
cli_scenario_load_moe (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  /* every [moe] key is about routed experts: on a dense model, even one that restates a
   * default (dispatcher = alltoall), it is an error naming the key, not silently ignored */
  g_auto (GStrv) moe_keys = g_key_file_get_keys (kf, "moe", NULL, NULL);
  if (sc->arch->n_experts == 0 && moe_keys != NULL && moe_keys[0] != NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [moe], key '%s': model '%s' has no experts (num_local_experts absent "
                   "or 0): [moe] applies to MoE models only", moe_keys[0], sc->arch->name);
      return FALSE;
    }
  guint64 ep = 1, etp = 1;
  if (!cli_scenario_get_count (kf, "parallel", "ep", FALSE, par->degree, &ep, error)
      || !cli_scenario_get_count (kf, "parallel", "etp", FALSE, par->degree, &etp, error))
    return FALSE;
  par->ep = (guint) ep;
  par->etp = (guint) etp;
  g_autofree char *cf = cli_scenario_get_raw (kf, "moe", "capacity_factor", FALSE, NULL);
  g_autofree char *r = cli_scenario_get_raw (kf, "moe", "load_imbalance", FALSE, NULL);
  g_autofree char *pad = cli_scenario_get_raw (kf, "moe", "pad_to_capacity", FALSE, NULL);
  if (cf != NULL)
    {
      if (!sim_units_parse_number (cf, &par->moe_capacity_factor, error))
        return PREFIX_KEY (error, "moe", "capacity_factor"), FALSE;
      par->moe_drop = TRUE;
    }
  g_autofree char *load = cli_scenario_get_raw (kf, "moe", "expert_load", FALSE, NULL);
  if (load != NULL && r != NULL)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [moe], key 'expert_load': give it or load_imbalance, not both (both "
                   "set how the routed tokens spread over the experts)");
      return FALSE;
    }
  /* the spec's syntax and its count against the experts: model_ep_expert_shares, when the
   * plan is validated (plan_ep_validate names the key) */
  if (load != NULL)
    par->moe_expert_load = g_intern_string (g_strstrip (load));
  if (r != NULL && !sim_units_parse_number (r, &par->moe_imbalance, error))
    return PREFIX_KEY (error, "moe", "load_imbalance"), FALSE;
  if (r != NULL && !(par->moe_imbalance >= 1))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [moe], key 'load_imbalance': %s must be at least 1 (max/mean token "
                   "load per expert; 1 is uniform routing)", r);
      return FALSE;
    }
  if (pad != NULL && !sim_units_parse_bool (pad, &par->moe_pad, error))
    return PREFIX_KEY (error, "moe", "pad_to_capacity"), FALSE;
  g_autofree char *overlap = cli_scenario_get_raw (kf, "moe", "a2a_overlap", FALSE, NULL);
  if (overlap != NULL && !sim_units_parse_bool (overlap, &par->moe_a2a_overlap, error))
    return PREFIX_KEY (error, "moe", "a2a_overlap"), FALSE;
  g_autofree char *dispatcher = cli_scenario_get_raw (kf, "moe", "dispatcher", FALSE, NULL);
  if (dispatcher != NULL
      && !model_ep_dispatcher_from_string (g_strstrip (dispatcher), &par->moe_dispatcher, error))
    return PREFIX_KEY (error, "moe", "dispatcher"), FALSE;
  return TRUE;
}
