/* cli/scenario/scenario_offload.c — the [offload] group: what lives off the GPU (models/memory/offload.h).
 *
 *   [offload] optimizer   = none | cpu | nvme   (default none) ZeRO-Offload / ZeRO-Infinity
 *             parameters  = none | cpu | nvme   (default none) needs zero3 / fsdp_full_shard
 *             activations = none | cpu          (default none)
 *             pin_memory  = true | false        (default true)
 *
 * Checked against [parallel] (the ZeRO stage, model_offload_validate) and [cluster] (a CPU
 * for the optimizer step, NVMe drives for nvme), so load it after both. Errors name the
 * group and key (the caller prefixes the file).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

static gboolean
get_target (GKeyFile *kf, const char *key, ModelOffloadTarget *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "offload", key, FALSE, NULL);
  if (v == NULL)
    return TRUE;
  if (!model_offload_target_from_string (v, out, error))
    return PREFIX_KEY (error, "offload", key), FALSE;
  return TRUE;
}

/* Sets "group [offload], key 'KEY': MSG" (takes ownership of msg). */
static gboolean
fail_key (const char *key, char *msg, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [offload], key '%s': %s", key, msg);
  g_free (msg);
  return FALSE;
}

/* The node must have what the choices use: CPU figures, NVMe drives. A node built around
 * [cluster] gpu has no type name: it is called so. */
static gboolean
check_hardware (const ModelOffload *o, const HwNodeSpec *node, GError **error)
{
  g_autofree char *which = node->name ? g_strdup_printf ("node '%s'", node->name)
                                      : g_strdup ("the node of [cluster] gpu");
  if (o->optimizer != MODEL_OFFLOAD_NONE && (node->cpu_cores == 0 || node->cpu_adam_rate <= 0))
    return fail_key ("optimizer",
                     g_strdup_printf ("the optimizer step on the host needs [cluster] "
                                      "cpu_cores and cpu_adam_rate > 0 on %s", which),
                     error);
  const char *nvme_key = o->optimizer == MODEL_OFFLOAD_NVME    ? "optimizer"
                         : o->parameters == MODEL_OFFLOAD_NVME ? "parameters"
                                                               : NULL;
  if (nvme_key != NULL && node->nvme_drives == 0)
    return fail_key (nvme_key,
                     g_strdup_printf ("nvme needs NVMe drives (nvme_drives > 0) on %s",
                                      which),
                     error);
  return TRUE;
}

gboolean
cli_scenario_load_offload (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelOffload *o = &sc->stack.offload;
  model_offload_init_defaults (o);
  if (!g_key_file_has_group (kf, "offload"))
    return TRUE;
  if (!get_target (kf, "optimizer", &o->optimizer, error)
      || !get_target (kf, "parameters", &o->parameters, error)
      || !get_target (kf, "activations", &o->activations, error))
    return FALSE;
  g_autofree char *pin = cli_scenario_get_raw (kf, "offload", "pin_memory", FALSE, NULL);
  gboolean pinned = TRUE;
  if (pin != NULL && !sim_units_parse_bool (pin, &pinned, error))
    return PREFIX_KEY (error, "offload", "pin_memory"), FALSE;
  o->pageable = !pinned;
  return check_hardware (o, &sc->node, error);
}

gboolean
cli_scenario_check_offload (const CliScenario *sc, GError **error)
{
  GError *e = NULL;
  if (model_offload_validate (&sc->stack.offload, &sc->par, &e))
    return TRUE;
  const char *key = g_str_has_prefix (e->message, "optimizer")    ? "optimizer"
                    : g_str_has_prefix (e->message, "parameters") ? "parameters"
                                                                  : "activations";
  g_propagate_prefixed_error (error, e, "group [offload], key '%s': ", key);
  return FALSE;
}
