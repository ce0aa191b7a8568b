/* cli/study/fit_search.c — cli_fit_search (fit.h): loads the scenario and hands it to the
 * search of the target (fit_size.c, fit_gpus.c, fit_stack.c), which share cli/study/fit.c.
 * The one place that calls the searches, so the arrows between the fit files point one
 * way. */
#include "config.h"
#include "cli/study/fit-private.h"

#include "cli/scenario/scenario.h"

CliFitReport *
cli_fit_search (const char *path, const char *const *sets, CliFitTarget target,
                const CliFitOptions *opt, GError **error)
{
  g_return_val_if_fail (path != NULL && opt != NULL, NULL);
  g_auto (GStrv) origins = cli_scenario_origins (sets, "--set");
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (path, sets,
                                                          (const char *const *) origins, error);
  if (sc == NULL)
    return NULL;
  cli_scenario_print_warnings (sc); /* of the scenario as given, not of each candidate */
  if (target != CLI_FIT_STACK) /* only the stack search runs a baseline (QA: dropped silently) */
    cli_scenario_warn_baseline_sets (sets, NULL);
  CliFitReport *r = cli_fit_report_new ();
  g_autoptr (GHashTable) memo = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  Ctx ctx = { path, sets, r, memo };
  switch (target)
    {
    case CLI_FIT_MICRO_BATCH:
    case CLI_FIT_SEQ_LEN: cli_fit_search_size (&ctx, sc, target, opt); break;
    case CLI_FIT_GPUS: cli_fit_search_gpus (&ctx, sc, opt); break;
    case CLI_FIT_STACK: cli_fit_search_stack (&ctx, sc, opt); break;
    }
  if (r->notes.baseline != NULL) /* a [baseline] that cannot run is bad input */
    {
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                           r->notes.baseline);
      cli_fit_report_free (r);
      return NULL;
    }
  return r;
}
