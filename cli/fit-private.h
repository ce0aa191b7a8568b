/* cli/fit-private.h — what cli/fit.c (the report, the candidate memo, the size and GPU
 * searches) and cli/fit_stack.c (the technique-stack search) share. Not a public header. */
#pragma once

#include "cli/fit.h"
#include "cli/scenario.h"

struct _CliFitReport
{
  GPtrArray *candidates; /* CliFitCandidate * */
  gint best;
  guint64 value;
  double baseline_tokens;
};

typedef struct
{
  const char *path;
  const char *const *sets;
  CliFitReport *report;
  GHashTable *memo; /* joined overrides → index + 1 */
} Ctx;

/* Loads the scenario with the context's --set and the candidate's overrides, simulates it
 * and fills c's figures, status and reason. */
void cli_fit_simulate (const Ctx *ctx, CliFitCandidate *c);
/* The candidate `sets` (taken), simulated once (memo); returns its index. */
guint cli_fit_evaluate (Ctx *ctx, const char *label, char **sets);
/* Whether candidate i fits. */
gboolean cli_fit_fits_at (Ctx *ctx, guint i);
/* The stack search (fit.h): fills the report's candidates, best and baseline. */
void cli_fit_search_stack (Ctx *ctx, const CliScenario *sc, const CliFitOptions *opt);
