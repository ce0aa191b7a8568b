/* cli/report/report.h — the human summary of a run and its /summary entries in the HDF5 file. */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "models/plan/simulate.h"
#include "cli/scenario/scenario.h"
#include "sim/recorder.h"

/* Prints the summary of `res` for `sc` to `out`: model, hardware, stack; peak allocated,
 * reserved and device-used memory with the category mix at the peak, fits or OOM against
 * the GPU's capacity (after an OOM: what the step as planned needs and how far short the GPU
 * is, then the failing request and the figures when it was raised); step time, tokens/s,
 * MFU, HFU and time by task kind (marked as the step as planned after an OOM). Units: GiB
 * for memory (as PyTorch and nvidia-smi count), s/ms for time. `ops_listed`: the per-op
 * table follows (run --ops), so the kernels block does not point to it. */
void cli_report_print (FILE *out, const CliScenario *sc, const ModelSimResult *res,
                       gboolean ops_listed);

/* One line, the verdict (`run -q`): "NAME: FITS, 24.71 GiB of 80.00 GiB per GPU, step
 * 1.321 s, 1551 tokens/s" or "NAME: OOM, needs 127.95 GiB of 80.00 GiB per GPU (47.95 GiB
 * short)". */
void cli_report_print_verdict (FILE *out, const CliScenario *sc, const ModelSimResult *res);

/* A throughput in tokens/s as the summary, the verdict and the tables print it: whole
 * ("1551") from 1 up, three significant digits below ("0.0123"), "nan" for NaN. Caller
 * frees. */
char *cli_report_format_rate (double tokens_per_s);

/* Adds every summary figure to `rec` as /summary scalars in SI units with their unit
 * ("s", "B", "1" for fractions, "token/s", "FLOP", "FLOP/s") and texts. */
void cli_report_fill_summary (SimRecorder *rec, const CliScenario *sc, const ModelSimResult *res);
