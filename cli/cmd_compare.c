/* cli/cmd_compare.c — `stepsim compare`: one scenario and variations of it side by side,
 * each technique's memory saved and step time added against the scenario as given.
 *
 *   stepsim compare SCENARIO.ini "training.checkpointing=full" \
 *     "training.precision=bf16_mixed,training.checkpointing=full" …
 *
 * A variation is a comma-separated list of --set overrides applied on top of the scenario.
 * A variation that fails to load or simulate gets its error in its row; the exit status is
 * 1 if any did. Nothing is written but the table. */
#include "config.h"

#include <stdio.h>
#include "cli/commands.h"
#include "cli/run.h"
#include "cli/scenario.h"
#include "sim/units.h"

typedef struct
{
  gboolean ok;
  char *error;
  CliRunResult res;
} Row;

static void
simulate (const char *path, const char *variant, Row *row)
{
  g_auto (GStrv) sets = variant ? g_strsplit (variant, ",", -1) : NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, (const char *const *) sets, &error);
  row->ok = sc != NULL && cli_run_simulate (sc, NULL, &row->res, &error);
  if (!row->ok)
    row->error = g_strdup (error ? error->message : "failed");
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
