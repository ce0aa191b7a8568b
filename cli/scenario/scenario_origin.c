/* cli/scenario/scenario_origin.c — where a scenario's overrides come from, for messages (scenario.h):
 * "s1.ini (with --set cluster.node=DGX-A100): group [cluster], key 'gpu': …". */
#include "config.h"
#include "cli/scenario/scenario.h"

#include <string.h>
#include "cli/scenario/sweep.h"
#include "sim/text.h"

char **
cli_scenario_origins (const char *const *sets, const char *origin)
{
  guint n = sets != NULL ? g_strv_length ((char **) sets) : 0;
  char **o = g_new0 (char *, n + 1);
  for (guint i = 0; i < n; i++)
    o[i] = g_strdup (origin);
  return o;
}

/* Whether `word` occurs in `text` as a whole word (not inside a longer identifier). */
static gboolean
has_word (const char *text, const char *word)
{
  gsize n = strlen (word);
  for (const char *at = strstr (text, word); at != NULL; at = strstr (at + 1, word))
    {
      gboolean start = at == text || (!g_ascii_isalnum (at[-1]) && at[-1] != '_');
      gboolean end = !g_ascii_isalnum (at[n]) && at[n] != '_';
      if (start && end)
        return TRUE;
    }
  return FALSE;
}

/* TRUE when `message` names a model key as the models/ layers write one: "model key K"
 * (models/parallel/, the other side of a parallel key's conflict) or "the model's K"; with
 * `key` NULL, any model key (which an hf_config override supplies). */
static gboolean
names_model_key (const char *message, const char *key)
{
  static const char *const forms[] = { "model key ", "the model's " };
  for (guint i = 0; i < G_N_ELEMENTS (forms); i++)
    {
      if (key == NULL && strstr (message, forms[i]) != NULL)
        return TRUE;
      g_autofree char *named = key != NULL ? g_strconcat (forms[i], key, NULL) : NULL;
      if (named != NULL && has_word (message, named))
        return TRUE;
    }
  return FALSE;
}

/* TRUE when override `set` (group.key) may be what `message` is about. `strong`: the message
 * names its group and its key — "group [G], key 'K'", "[G] K" (the other side of a
 * conflict, as models/plan/plan.h writes them), or "[G]" and K as a word elsewhere (an error
 * about key 'dp_replicate' that says "dp_replicate 2 × dp_shard 2" is about the dp_shard
 * override too); a [model] override also when the message names its key as a model key
 * ("model key num_hidden_layers = 30 is not a multiple of [parallel] pp = 4"), and
 * model.hf_config when it names any model key (the config gives them); else it names its
 * group, or quotes its key. */
static gboolean
set_concerns (const char *set, const char *message, gboolean strong)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  if (!cli_sweep_parse_set (set, &g, &k, &v, NULL))
    return FALSE;
  g_autofree char *bracketed = g_strdup_printf ("[%s]", g);
  g_autofree char *quoted = g_strdup_printf ("'%s'", k);
  if (strong)
    {
      g_autofree char *side = g_strdup_printf ("[%s] %s", g, k);
      if (strcmp (g, "model") == 0
          && names_model_key (message, strcmp (k, "hf_config") == 0 ? NULL : k))
        return TRUE;
      return has_word (message, side) || (strstr (message, bracketed) != NULL
                                          && has_word (message, k));
    }
  return strstr (message, bracketed) != NULL || strstr (message, quoted) != NULL;
}

/* TRUE if a later override of `sets` sets the same group.key as sets[i] (then sets[i] has no
 * effect and is not named). */
static gboolean
overridden_later (const char *const *sets, guint i)
{
  g_autofree char *a = cli_sweep_normalize_set (sets[i], NULL);
  const char *eq = a ? strchr (a, '=') : NULL;
  for (guint j = i + 1; eq != NULL && sets[j] != NULL; j++)
    {
      g_autofree char *b = cli_sweep_normalize_set (sets[j], NULL);
      if (b != NULL && strncmp (a, b, (gsize) (eq - a) + 1) == 0)
        return TRUE;
    }
  return FALSE;
}

char *
cli_scenario_error_source (const char *path, const char *const *sets,
                           const char *const *origins, const char *message)
{
  /* Paths are capped here, never the message: a long checkout path shortened in its middle
   * keeps the file name, the override and the group and key it is about (a cap of the whole
   * line could cut any of them). */
  g_autofree char *short_path = sim_text_printable (path, CLI_SCENARIO_PATH_MAX);
  GString *s = g_string_new (short_path);
  /* The overrides named stop before the prefix passes half of CLI_SCENARIO_MESSAGE_MAX (the
   * head sim_text_printable keeps of a long line), so that the group and key after it are
   * never cut; the rest are counted ("and 2 more"). */
  const gsize prefix_max = CLI_SCENARIO_MESSAGE_MAX / 2 - 64;
  guint n = 0, more = 0;
  for (int strong = 1; strong >= 0 && n == 0; strong--)
    for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
      {
        if (overridden_later (sets, i) || !set_concerns (sets[i], message, strong))
          continue;
        g_autofree char *norm = cli_sweep_normalize_set (sets[i], NULL);
        g_autofree char *shown = sim_text_printable (norm, 80);
        const char *origin = origins != NULL && origins[i] != NULL ? origins[i] : NULL;
        /* "SWEEP [axes]": the path part shortened, the group kept (the tail survives) */
        g_autofree char *o = origin ? sim_text_printable (origin, CLI_SCENARIO_PATH_MAX) : NULL;
        g_autofree char *item = g_strdup_printf ("%s%s%s", o ? o : "", o ? " " : "", shown);
        if (n > 0 && s->len + strlen (item) + 2 > prefix_max)
          {
            more++;
            continue;
          }
        g_string_append_printf (s, "%s%s", n++ == 0 ? " (with " : ", ", item);
      }
  if (more > 0)
    g_string_append_printf (s, " and %u more", more);
  if (n > 0)
    g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}
