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

/* TRUE when override `set` (group.key) may be what `message` is about: the message names
 * its group ("[G]": "group [G], key 'K'", or "[G] K" as models/plan/plan.h writes the other
 * side of a conflict), or quotes its key ("'K'"). Every such override is listed, not only
 * the one whose key the message names: an error about key 'dp_replicate' comes from the
 * dp_shard given with it too. Overrides of other groups are left out, so that a warning
 * about a key the overrides do not touch reads the same for every sweep point (and is
 * printed once, cli_scenario_print_warnings). */
static gboolean
set_concerns (const char *set, const char *message)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  if (!cli_sweep_parse_set (set, &g, &k, &v, NULL))
    return FALSE;
  g_autofree char *bracketed = g_strdup_printf ("[%s]", g);
  g_autofree char *quoted = g_strdup_printf ("'%s'", k);
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
  guint n = 0;
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    {
      if (overridden_later (sets, i) || !set_concerns (sets[i], message))
        continue;
      g_autofree char *norm = cli_sweep_normalize_set (sets[i], NULL);
      g_autofree char *shown = sim_text_printable (norm, 80);
      const char *origin = origins != NULL && origins[i] != NULL ? origins[i] : NULL;
      /* "SWEEP [axes]": the path part shortened, the group kept (the tail survives) */
      g_autofree char *o = origin ? sim_text_printable (origin, CLI_SCENARIO_PATH_MAX) : NULL;
      g_string_append_printf (s, "%s%s%s%s", n++ == 0 ? " (with " : ", ", o ? o : "",
                              o ? " " : "", shown);
    }
  if (n > 0)
    g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}
