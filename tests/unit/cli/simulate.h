/* tests/unit/cli/simulate.h — load a shipped scenario (source-tree path) with --set
 * overrides and simulate it; shared by the validation tests. Header-only. */
#pragma once

#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "tests/testlib.h"

/* On success *sc_out (free with cli_scenario_free) and *res (model_sim_result_clear) are
 * filled; on failure the error is printed and FALSE returned. */
static inline gboolean
simulate (const char *file, const char *const *sets, CliScenario **sc_out, ModelSimResult *res)
{
  g_autofree char *path = stepsim_test_srcpath (file);
  g_autoptr (GError) e = NULL;
  CliScenario *sc = cli_scenario_load (path, sets, &e);
  ModelSimInput in = sc != NULL ? cli_scenario_sim_input (sc) : (ModelSimInput){ 0 };
  if (sc == NULL || !model_simulate (&in, NULL, res, &e))
    {
      g_printerr ("\n  %s: %s\n", file, e ? e->message : "?");
      cli_scenario_free (sc);
      return FALSE;
    }
  *sc_out = sc;
  return TRUE;
}
