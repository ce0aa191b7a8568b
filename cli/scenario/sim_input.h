/* cli/scenario/sim_input.h — a loaded scenario as the plan layer's simulation input, and the
 * one call the commands make to simulate it (models/plan/simulate.h does the work). */
#pragma once

#include <glib.h>
#include "cli/scenario/scenario.h"
#include "models/plan/simulate.h"
#include "sim/recorder.h"

/* The input of model_simulate for `sc`: every pointer borrows from `sc`, which must outlive
 * the returned value. Never fails (a loaded scenario is valid). */
ModelSimInput cli_scenario_sim_input (const CliScenario *sc);

/* model_simulate on cli_scenario_sim_input (sc): fills `res` (free its members with
 * model_sim_result_clear) and records into `rec` when not NULL; with a recorder (a `run`'s
 * file) it also collects the kernel time per op (res->op_times) and, when the GPU's memory
 * is short, searches the least memory per GPU that fits (res->fits_from: several more
 * simulations, which studies of many scenarios do not pay). FALSE + error as
 * model_simulate. */
gboolean cli_scenario_simulate (const CliScenario *sc, SimRecorder *rec, ModelSimResult *res,
                                GError **error);
