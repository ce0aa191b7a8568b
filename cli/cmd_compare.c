/* cli/cmd_compare.c — `stepsim compare`: one scenario and variations of it side by side,
 * each technique's memory saved and step time added against the scenario as given.
 *
 *   stepsim compare SCENARIO.ini "training.checkpointing=full" \
 *     "training.precision=bf16_mixed,training.checkpointing=full" …
 *
 * A variation is a comma-separated list of --set overrides applied on top of the scenario.
 * A variation that fails to load or simulate gets its error in its row (naming the
 * variation's overrides the error is about); the exit status is 1 if any did. A variation
 * that is not a list of group.key=value (cli_sweep_parse_set) is a usage error: exit 2
 * before anything runs. Nothing is written but the table. */
#include "config.h"

#include <stdio.h>
#include "cli/commands.h"
#include "cli/run.h"
#include "cli/scenario.h"
#include "cli/sweep.h"
#include "sim/text.h"
#include "sim/units.h"

typedef struct
{
  gboolean ok;
  char *error;
  CliRunResult res;
} Row;

/* The overrides of a variation and their origin ("variation") for messages. */
static void
split_variant (const char *variant, char ***sets, char ***origins)
{
  *sets = variant ? g_strsplit (variant, ",", -1) : NULL;
  *origins = cli_scenario_origins ((const char *const *) *sets, "variation");
}

static void
simulate (const char *path, const char *variant, Row *row)
{
  g_auto (GStrv) sets = NULL;
  g_auto (GStrv) origins = NULL;
  split_variant (variant, &sets, &origins);
  const char *const *s = (const char *const *) sets, *const *o = (const char *const *) origins;
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (path, s, o, &error);
  if (sc != NULL)
    cli_scenario_print_warnings (sc);
  row->ok = sc != NULL && cli_run_simulate (sc, NULL, &row->res, &error);
  if (!row->ok && sc != NULL)
    {
      g_autofree char *source = cli_scenario_error_source (path, s, o, error->message);
      g_prefix_error (&error, "%s: ", source);
    }
  if (!row->ok)
    row->error = sim_text_printable (error ? error->message : "failed",
                                     CLI_SCENARIO_MESSAGE_MAX);
}

/* Every variation must be a list of group.key=value, each key once (a usage error otherwise:
 * exit 2; "a=1,a=2" would silently keep the last). */
static gboolean
check_variants (int argc, char **argv, GError **error)
{
  for (int i = 2; i < argc; i++)
    {
      g_auto (GStrv) sets = g_strsplit (argv[i], ",", -1);
      g_autofree char *shown = sim_text_printable (argv[i], 80);
      g_autofree char *what = g_strdup_printf ("compare: variation '%s':", shown);
      if (!cli_sweep_check_sets (what, (const char *const *) sets, error))
        return FALSE;
      g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (guint j = 0; sets[j] != NULL; j++)
        {
          g_autofree char *g = NULL, *k = NULL, *v = NULL;
          cli_sweep_parse_set (sets[j], &g, &k, &v, NULL); /* checked above */
          char *key = g_strdup_printf ("%s.%s", g, k);
          if (!g_hash_table_add (seen, key))
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "%s %s is given twice", what, key);
              return FALSE;
            }
        }
    }
  return TRUE;
}

static void
print_row (const char *name, const Row *r, const Row *base)
{
  if (!r->ok)
    {
      printf ("%-44s  error: %s\n", name, r->error);
      return;
    }
  g_autofree char *mem = sim_units_format (r->res.device_used, SIM_DIM_BYTES, 2);
  g_autofree char *step = sim_units_format (r->res.step_time, SIM_DIM_TIME, 3);
  g_autofree char *saved = NULL;
  char added[32] = "-";
  if (base->ok && r != base)
    {
      double d = base->res.device_used - r->res.device_used;
      g_autofree char *abs = sim_units_format (ABS (d), SIM_DIM_BYTES, 2);
      saved = g_strdup_printf ("%s%s", d < 0 ? "-" : "", abs);
      g_snprintf (added, sizeof added, "%+.1f %%",
                  100 * (r->res.step_time / base->res.step_time - 1));
    }
  /* A long variation gets a line of its own, so the columns stay aligned. */
  if (g_utf8_strlen (name, -1) > 44)
    {
      printf ("%s\n", name);
      name = "";
    }
  printf ("%-44s %12s %12s %12s %10s %10.0f  %s\n", name, mem, saved ? saved : "-", step, added,
          r->res.tokens_per_s, r->res.fits ? "fits" : "OOM");
}

int
cli_cmd_compare (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "SCENARIO.ini VARIANT… — memory saved and step time added per variation "
    "(VARIANT: group.key=value[,group.key=value…])");
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return cli_error (error->message), 2;
  if (argc < 3)
    return cli_error ("compare: expected a scenario and at least one variation "
                      "(see stepsim compare --help)"), 2;
  if (!check_variants (argc, argv, &error))
    return cli_error (error->message), 2;
  guint n = (guint) argc - 1;
  g_autofree Row *rows = g_new0 (Row, n);
  simulate (argv[1], NULL, &rows[0]);
  for (guint i = 1; i < n; i++)
    simulate (argv[1], argv[i + 1], &rows[i]);
  printf ("%-44s %12s %12s %12s %10s %10s  %s\n", "variation", "device-used", "mem. saved",
          "step time", "time added", "tokens/s", "verdict");
  int rc = 0;
  for (guint i = 0; i < n; i++)
    {
      print_row (i == 0 ? "(as given)" : argv[i + 1], &rows[i], &rows[0]);
      rc |= !rows[i].ok;
      g_free (rows[i].error);
      cli_run_result_clear (&rows[i].res);
    }
  return rc;
}
