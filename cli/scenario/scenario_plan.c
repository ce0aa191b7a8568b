/* cli/scenario/scenario_plan.c — the [plan] and [cost] groups: the training run a simulated step is
 * part of, and what it costs (cli/report/training.h turns them into days, GPU-hours, money and
 * energy).
 *
 *   [plan]  tokens = 1.5e12          tokens to train (a plain number > 0), OR
 *           train_steps = 10000      optimizer steps (a count >= 1); not both
 *   [cost]  gpu_hour = 2.49 USD/h    price per GPU and hour (any time unit: USD/min …)
 *           gpu_hour.H100-SXM = …    price for one GPU type (a catalog GPU or a [gpu.NAME]
 *                                    group of the file); wins over gpu_hour for that type,
 *                                    so one sweep can price several GPU types
 *           node_hour[.TYPE] = …     price per node instead (not with gpu_hour at the same
 *                                    level: one of them prices a scenario)
 *           fixed = 1000 USD         fixed costs added once (>= 0)
 *           pue = 1.2                power usage effectiveness in [1, 5] (default 1: the
 *                                    energy of the IT equipment alone)
 *           carbon_intensity = 400 gCO2/kWh   grid intensity (>= 0), for emissions
 * Strictness: unknown keys (with a hint), a price without currency or time unit, a zero or
 * negative price, two currencies in one file, [cost] without [plan], [plan] without either
 * key or with both: errors naming the group and key (the caller prefixes the file).
 * Bounds (so that no estimate overflows or prints as a 300-digit number): tokens at most
 * 1e18 (some 25 000 times the largest published pre-training run), train_steps at most 1e12,
 * a price at most 1e7 of its currency per hour (per GPU or node: room for KRW and JPY), fixed
 * at most 1e15, carbon_intensity at most 10 000 gCO2/kWh (coal is about 1 000).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

#include <string.h>
#include "hardware/catalog.h"
#include "hardware/node_catalog.h"
#include "sim/text.h"

#define MAX_TOKENS 1e18
#define MAX_TRAIN_STEPS G_GUINT64_CONSTANT (1000000000000)
#define MAX_PRICE_PER_HOUR 1e7
#define MAX_FIXED 1e15
#define MAX_CARBON_G_PER_KWH 1e4

static const char *const plan_keys[] = { "tokens", "train_steps", NULL };
static const char *const cost_keys[] = { "gpu_hour", "node_hour", "fixed", "pue",
                                         "carbon_intensity", "gpu_hour.TYPE", "node_hour.TYPE",
                                         NULL };

static gboolean
fail_key (GError **error, const char *group, const char *key, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [%s], key '%s': %s", group, key, what);
  return FALSE;
}

static gboolean
unknown_key (GError **error, const char *group, const char *key, const char *const *valid)
{
  char *msg = g_strdup_printf ("group [%s], key '%s': unknown key", group, key);
  msg = sim_text_with_hint (msg, key, valid);
  g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND, msg);
  g_free (msg);
  return FALSE;
}

static gboolean
load_plan_group (GKeyFile *kf, CliTrainingInputs *p, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "plan", NULL, NULL);
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    if (!g_strv_contains (plan_keys, keys[i]))
      return unknown_key (error, "plan", keys[i], plan_keys);
  gboolean has_tokens = g_key_file_has_key (kf, "plan", "tokens", NULL);
  gboolean has_steps = g_key_file_has_key (kf, "plan", "train_steps", NULL);
  if (has_tokens && has_steps)
    return fail_key (error, "plan", "train_steps",
                     "give tokens or train_steps, not both (one sets the other)");
  if (!has_tokens && !has_steps)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                   "group [plan]: key 'tokens' or 'train_steps' is required");
      return FALSE;
    }
  p->given = TRUE;
  if (has_steps)
    {
      return cli_scenario_get_count (kf, "plan", "train_steps", TRUE, MAX_TRAIN_STEPS,
                                     &p->train_steps, error);
    }
  g_autofree char *v = cli_scenario_get_raw (kf, "plan", "tokens", TRUE, error);
  if (v == NULL)
    return FALSE;
  if (!sim_units_parse_number (v, &p->tokens, error))
    return PREFIX_KEY (error, "plan", "tokens"), FALSE;
  if (!(p->tokens >= 1 && p->tokens <= MAX_TOKENS))
    {
      /* the value quoted, as every other bad value is (QA) */
      g_autofree char *why = g_strdup_printf (
          "'%s' is outside [1, 1e18] (tokens to train, e.g. 1.5e12)", v);
      return fail_key (error, "plan", "tokens", why);
    }
  return TRUE;
}

/* A money value of [cost] `key` into *out, its currency checked against p->currency (the
 * first key read sets it). */
static gboolean
money_key (GKeyFile *kf, const char *key, gboolean per_time, CliTrainingInputs *p, double *out,
           GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "cost", key, TRUE, error);
  char code[4];
  if (v == NULL)
    return FALSE;
  if (!sim_units_parse_money (v, per_time, out, code, error))
    return PREFIX_KEY (error, "cost", key), FALSE;
  if (per_time && !(*out > 0))
    {
      g_autofree char *why = g_strdup_printf ("'%s': a price must be positive", v);
      return fail_key (error, "cost", key, why);
    }
  if (per_time && !(*out * 3600 <= MAX_PRICE_PER_HOUR))
    {
      g_autofree char *why = g_strdup_printf ("'%s': a price must be at most %.0f %s/h",
                                              v, MAX_PRICE_PER_HOUR, code);
      return fail_key (error, "cost", key, why);
    }
  if (!per_time && !(*out <= MAX_FIXED))
    {
      g_autofree char *why = g_strdup_printf ("'%s': must be at most 1e15 %s", v, code);
      return fail_key (error, "cost", key, why);
    }
  if (p->currency[0] != '\0' && strcmp (p->currency, code) != 0)
    {
      g_autofree char *why = g_strdup_printf (
          "currency %s, where key '%s' is in %s: every price in [cost] is in one currency "
          "(stepsim does not convert)", code, p->currency_key, p->currency);
      return fail_key (error, "cost", key, why);
    }
  if (p->currency[0] == '\0')
    g_strlcpy (p->currency_key, key, sizeof p->currency_key);
  memcpy (p->currency, code, sizeof code);
  return TRUE;
}

/* `key` is "gpu_hour.TYPE" or "node_hour.TYPE": TYPE must be a GPU the file can use. */
static gboolean
check_type (GKeyFile *kf, const char *key, const char *type, GError **error)
{
  g_autofree char *group = g_strconcat ("gpu.", type, NULL);
  if (type[0] != '\0' && (g_key_file_has_group (kf, group) || hw_catalog_gpu (type, NULL) != NULL))
    return TRUE;
  /* node_hour.TYPE prices a node by the type of its GPUs: a node's name is no type, and
   * the error says which type the node holds */
  const char *kind = g_str_has_prefix (key, "node_hour") ? "node_hour" : "gpu_hour";
  const HwNodeSpec *node = type[0] != '\0' ? hw_catalog_node (type, NULL) : NULL;
  if (node != NULL)
    {
      g_autofree char *why = g_strdup_printf ("'%s' is a node, not a GPU type: %s.TYPE takes "
                                              "a GPU type, here %s.%s (%s's GPU)",
                                              type, kind, kind, node->gpu->name, type);
      return fail_key (error, "cost", key, why);
    }
  g_autoptr (GError) e = NULL;
  hw_catalog_gpu (type, &e);
  g_autofree char *why = g_strdup_printf ("names no GPU type (%s.TYPE takes a GPU type): %s",
                                          kind, e != NULL ? e->message : "empty name");
  return fail_key (error, "cost", key, why);
}

/* One price key: parsed (all are, so a typo anywhere is an error) and, when it applies to
 * the scenario's GPU at a more specific level than what *p holds, taken. */
static gboolean
price_key (GKeyFile *kf, const char *key, const char *gpu, CliTrainingInputs *p,
           const char **seen, GError **error)
{
  gboolean per_node = g_str_has_prefix (key, "node_hour");
  const char *dot = strchr (key, '.');
  if (dot != NULL && !check_type (kf, key, dot + 1, error))
    return FALSE;
  double price = 0;
  if (!money_key (kf, key, TRUE, p, &price, error))
    return FALSE;
  gboolean typed = dot != NULL;
  if (typed && g_ascii_strcasecmp (dot + 1, gpu) != 0)
    return TRUE;
  /* seen[typed]: the key whose price at that level already applies; a second is ambiguous */
  if (seen[typed] != NULL)
    {
      g_autofree char *why
          = typed ? g_strdup_printf ("GPU type %s already has a price in key '%s' (one "
                                     "gpu_hour.TYPE or node_hour.TYPE per type, the type in "
                                     "any case)", dot + 1, seen[typed])
                  : g_strdup_printf ("key '%s' already gives the price: give gpu_hour or "
                                     "node_hour, not both", seen[typed]);
      return fail_key (error, "cost", key, why);
    }
  seen[typed] = key;
  if (typed || !p->price_for_type)
    {
      p->has_price = TRUE;
      p->price = price;
      p->price_per_node = per_node;
      p->price_for_type = typed;
    }
  return TRUE;
}

static gboolean
load_cost_group (GKeyFile *kf, const char *gpu, CliTrainingInputs *p, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "cost", NULL, NULL);
  const char *seen[2] = { NULL, NULL };
  for (guint i = 0; keys != NULL && keys[i] != NULL; i++)
    {
      const char *k = keys[i];
      if (strcmp (k, "gpu_hour") == 0 || strcmp (k, "node_hour") == 0
          || g_str_has_prefix (k, "gpu_hour.") || g_str_has_prefix (k, "node_hour."))
        {
          if (!price_key (kf, k, gpu, p, seen, error))
            return FALSE;
        }
      else if (strcmp (k, "fixed") == 0)
        {
          if (!money_key (kf, k, FALSE, p, &p->fixed, error))
            return FALSE;
        }
      else if (strcmp (k, "pue") == 0)
        {
          g_autofree char *v = cli_scenario_get_raw (kf, "cost", k, TRUE, error);
          if (v == NULL || !sim_units_parse_number (v, &p->pue, error))
            return PREFIX_KEY (error, "cost", k), FALSE;
          if (!(p->pue >= 1 && p->pue <= 5))
            {
              /* the value quoted, as every other bad value is (QA) */
              g_autofree char *why = g_strdup_printf (
                  "'%s' is outside [1, 5] (facility energy / IT energy, e.g. 1.2)", v);
              return fail_key (error, "cost", k, why);
            }
        }
      else if (strcmp (k, "carbon_intensity") == 0)
        {
          g_autofree char *v = cli_scenario_get_raw (kf, "cost", k, TRUE, error);
          if (v == NULL
              || !sim_units_parse (v, SIM_DIM_CARBON_INTENSITY, &p->carbon_intensity, error))
            return PREFIX_KEY (error, "cost", k), FALSE;
          if (!(p->carbon_intensity * 3.6e9 <= MAX_CARBON_G_PER_KWH))
            {
              g_autofree char *why = g_strdup_printf (
                  "'%s': must be at most 10000 gCO2/kWh (coal-fired power is about 1000)", v);
              return fail_key (error, "cost", k, why);
            }
          p->has_carbon = TRUE;
        }
      else
        return unknown_key (error, "cost", k, cost_keys);
    }
  return TRUE;
}

gboolean
cli_scenario_load_plan (GKeyFile *kf, CliScenario *sc, GError **error)
{
  CliTrainingInputs *p = &sc->plan;
  *p = (CliTrainingInputs){ .pue = 1.0 };
  if (g_key_file_has_group (kf, "plan") && !load_plan_group (kf, p, error))
    return FALSE;
  if (!g_key_file_has_group (kf, "cost"))
    return TRUE;
  if (!load_cost_group (kf, sc->node.gpu->name, p, error))
    return FALSE;
  if (!p->given)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                   "group [cost]: prices need a training run to price: add [plan] tokens or "
                   "train_steps");
      return FALSE;
    }
  return TRUE;
}
