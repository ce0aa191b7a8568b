/* cli/report/op_report.h — where the step's kernel time goes: per kernel class in the run
 * summary, per op with `stepsim run --ops`, and the /ops table of the run file.
 *
 * The figures are ModelSimResult.op_times (models/plan/op_times.h): every kernel of the
 * reported step, per replayed rank, task kind and op. The summary and --ops show the rank
 * with the most kernel time (the pipeline stage or straggler that sets the pace); /ops
 * holds every replayed rank (doc/hdf5-layout.md).
 */
#pragma once

#include <stdio.h>
#include "models/plan/simulate.h"
#include "sim/recorder.h"
#include "sim/table.h"

/* The replayed rank with the most kernel seconds (the lowest such rank on a tie); 0 without
 * op times. */
guint cli_report_ops_busiest_rank (const ModelSimResult *res);

/* Prints "kernels (rank R, …)" and one line per kernel class (GEMM, attention,
 * element-wise) of the busiest rank: seconds, share of its kernel time and the achieved
 * rate (TFLOP/s for GEMM and attention, TB/s of HBM traffic for element-wise ops). Prints
 * nothing without op times. The header points to `run --ops` unless `ops_listed` (the
 * per-op table is printed after it). */
void cli_report_print_kernel_classes (FILE *out, const ModelSimResult *res,
                                      gboolean ops_listed);

/* Prints every op of the busiest rank, by pass (forward, backward, recompute, optimizer),
 * longest first: kernels, seconds, share of the rank's kernel time, TFLOP/s and GB/s of HBM
 * traffic. Prints a note without op times. */
void cli_report_print_ops (FILE *out, const ModelSimResult *res);

/* Adds to `rec` the busiest rank's kernel seconds as /summary scalars kernel_rank ("1"),
 * kernel_time and kernel_time_<class> (gemm, attention, elementwise; "s"), and the /ops
 * table (cli_report_ops_table). Adds nothing without op times. */
void cli_report_fill_ops (SimRecorder *rec, const ModelSimResult *res);

/* The /ops table (caller frees): a row per (replayed rank, pass, op) in the replay's order,
 * columns rank, pass, op, class, kernels (1), time (s), flops (FLOP), bytes (B). NULL without
 * op times. */
SimTable *cli_report_ops_table (const ModelSimResult *res);
