/* cli/report.h — the human summary of a run and its /summary entries in the HDF5 file. */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "cli/run.h"
#include "cli/scenario.h"
#include "sim/recorder.h"

/* Prints the summary of `res` for `sc` to `out`: model, hardware, stack; peak allocated,
 * reserved and device-used memory with the category mix at the peak, fits or OOM against
 * the GPU's capacity; step time, tokens/s, MFU, HFU and time by task kind. Units: GiB for
 * memory (as PyTorch and nvidia-smi count), s/ms for time. */
void cli_report_print (FILE *out, const CliScenario *sc, const CliRunResult *res);

/* Adds every summary figure to `rec` as /summary scalars in SI units with their unit
 * ("s", "B", "1" for fractions, "token/s", "FLOP", "FLOP/s") and texts. */
void cli_report_fill_summary (SimRecorder *rec, const CliScenario *sc, const CliRunResult *res);
