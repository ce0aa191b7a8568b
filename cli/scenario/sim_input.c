/* cli/scenario/sim_input.c — scenario → simulation input; see sim_input.h. */
#include "config.h"
#include "cli/scenario/sim_input.h"

ModelSimInput
cli_scenario_sim_input (const CliScenario *sc)
{
  return (ModelSimInput){
    .arch = sc->arch,
    .stack = &sc->stack,
    .par = &sc->par,
    .node = &sc->node,
    .n_nodes = sc->n_nodes,
    .fabric = &sc->fabric,
    .steps = sc->steps,
    .seed = sc->seed,
    .kernel_jitter = sc->kernel_jitter,
    .all_ranks = sc->all_ranks,
    .slowdowns = sc->slowdowns != NULL ? (const ModelSimSlowdown *) sc->slowdowns->data : NULL,
    .n_slowdowns = sc->slowdowns != NULL ? sc->slowdowns->len : 0,
  };
}

gboolean
cli_scenario_simulate (const CliScenario *sc, SimRecorder *rec, ModelSimResult *res,
                       GError **error)
{
  ModelSimInput in = cli_scenario_sim_input (sc);
  in.op_times = rec != NULL; /* a run file's /ops table and summary (cli/report/op_report.h) */
  in.find_fits_from = rec != NULL;
  return model_simulate (&in, rec, res, error);
}
