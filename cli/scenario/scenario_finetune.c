/* cli/scenario/scenario_finetune.c — the [finetune] group: LoRA and QLoRA (models/arch/finetune.h).
 *
 *   [finetune] method       = none | lora | qlora     (default none: full fine-tuning)
 *              rank         = 16                      LoRA rank r (default 8, PEFT's)
 *              targets      = all_linear | attention | qv   (default all_linear), or a
 *                             comma-separated list of q, k, v, o, gate, up, down, router
 *                             (PEFT's target_modules; HF names q_proj … down_proj too)
 *              double_quant = true | false            QLoRA only (default true)
 *              dequantize   = true | false            MXFP4 checkpoints (gpt_oss): upcast the
 *                                                     frozen experts to the weight dtype at load
 *                                                     (transformers Mxfp4Config(dequantize=True));
 *                                                     default false: kept MXFP4, 4.25 bits a weight
 *
 * rank, targets or double_quant in a group without a method is an error, not silently
 * ignored; an explicit method (none included: how --set and compare switch LoRA off)
 * makes the others apply where they mean something (double_quant to qlora). A combination
 * the model does not cover (with the precision or the offload) is refused once every group
 * is loaded, by model_plan_validate (cli/scenario/scenario.c). Load after [model]. Errors name the
 * group and key (the caller prefixes the file).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

static gboolean
fail_key (const char *key, char *msg, GError **error)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [finetune], key '%s': %s", key, msg);
  g_free (msg);
  return FALSE;
}

/* The optional method and targets; TRUE when absent. */
static gboolean
get_method (GKeyFile *kf, ModelFinetuneMethod *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "finetune", "method", FALSE, NULL);
  if (v != NULL && !model_finetune_method_from_string (v, out, error))
    return PREFIX_KEY (error, "finetune", "method"), FALSE;
  return TRUE;
}

static gboolean
get_targets (GKeyFile *kf, ModelFinetune *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "finetune", "targets", FALSE, NULL);
  if (v != NULL && !model_finetune_targets_from_string (v, out, error))
    return PREFIX_KEY (error, "finetune", "targets"), FALSE;
  return TRUE;
}

gboolean
cli_scenario_load_finetune (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelFinetune *f = &sc->stack.finetune;
  model_finetune_init_defaults (f);
  if (!g_key_file_has_group (kf, "finetune"))
    return TRUE;
  if (!get_method (kf, &f->method, error) || !get_targets (kf, f, error))
    return FALSE;
  if (model_finetune_active (f) && f->targets == MODEL_LORA_MODULES
      && model_finetune_layer_adapter_params (sc->arch, f) == 0)
    {
      g_autofree char *t = model_finetune_targets_text (f);
      return fail_key ("targets",
                       g_strdup_printf ("'%s' names no projection of model '%s'", t,
                                        sc->arch->name),
                       error);
    }
  /* a rank below the largest smaller side of a targeted projection (else no adapter would
   * be low-rank); without an active method, any rank a hidden size could take */
  guint64 max = model_finetune_max_rank (sc->arch, f);
  gboolean active = model_finetune_active (f);
  GError *e = NULL;
  if (!cli_scenario_get_count (kf, "finetune", "rank", FALSE,
                               active ? MAX (max, 2) - 1 : 1u << 20, &f->rank, &e))
    {
      if (!active)
        return g_propagate_error (error, e), FALSE;
      g_set_error (error, e->domain, e->code, "%s; a rank stays below %" G_GUINT64_FORMAT
                   ", the largest smaller side of a targeted projection (else no adapter "
                   "would be low-rank)", e->message, max);
      g_error_free (e);
      return FALSE;
    }
  g_autofree char *dq = cli_scenario_get_raw (kf, "finetune", "double_quant", FALSE, NULL);
  if (dq != NULL && !sim_units_parse_bool (dq, &f->double_quant, error))
    return PREFIX_KEY (error, "finetune", "double_quant"), FALSE;
  g_autofree char *dqz = cli_scenario_get_raw (kf, "finetune", "dequantize", FALSE, NULL);
  if (dqz != NULL && !sim_units_parse_bool (dqz, &f->dequantize, error))
    return PREFIX_KEY (error, "finetune", "dequantize"), FALSE;
  const char *const extra[] = { "rank", "targets", "double_quant", "dequantize", NULL };
  gboolean has_method = g_key_file_has_key (kf, "finetune", "method", NULL);
  for (guint i = 0; !has_method && extra[i] != NULL; i++)
    if (g_key_file_has_key (kf, "finetune", extra[i], NULL))
      return fail_key (extra[i], g_strdup ("needs method = lora or qlora (or none) in the group"),
                       error);
  return TRUE;
}
