/* cli/study/validate_measured.h — `stepsim validate --measured FILE.tsv`: stepsim's predictions
 * against measurements written by tools/measure_steps.py (single-GPU training steps and
 * per-kernel times on a real GPU).
 *
 * Format (tab-separated, UTF-8; lines starting with '#' are comments; the first other line
 * is the header, which must hold every column below, in any order; more columns are
 * allowed and ignored). One row per measurement, with as many fields as the header and none
 * empty: "-" marks a field that does not apply.
 *   kind        step | gemm | attention
 *   id          row name, printed
 *   gpu         stepsim catalog GPU name (e.g. H100-SXM)
 *   scenario    step: base scenario file, used as given when absolute, else relative to
 *               the TSV's folder
 *   sets        step: ';'-separated group.key=value overrides applied to it ("-": none);
 *               the row's GPU is applied as cluster.gpu=GPU after them
 *   dtype       gemm/attention: fp32 | tf32 | bf16 | fp16 | fp8
 *   m, n, k, batch      gemm: C[m×n] = A[m×k]·B[k×n], batch products
 *   seq, head_dim, heads, causal, pass   attention: FlashAttention shape (batch in `batch`),
 *               causal 0|1, pass fwd|bwd
 *               Every shape field is a whole count from 1 to 2^31 (cuBLAS/FlashAttention take
 *               int32 extents); dtype must be one the row's GPU has (hw_gpu_has_dtype: fp8 on a
 *               V100 or A100 is refused, as a scenario asking for it is)
 *   time_s      step: step time (s, median of the timed steps); kernels: device time (s)
 *   max_memory_allocated_B, max_memory_reserved_B   step: torch.cuda peaks (B); kernels "-"
 *   torch, cuda, driver   versions (printed on one line above the table, each distinct
 *               combination once)
 * A file needs at least one row after its header.
 * Predictions: step rows run the scenario (step_time, peak allocated and reserved); a gemm
 * row is the kernel model's max(compute, HBM bytes e·(mk + kn + mn)·batch at the achieved
 * HBM rate); an attention row the FlashAttention efficiency of hardware/kernel.h on
 * 4·batch·heads·s²·d FLOPs (×2.5 for bwd). Each is printed against the measurement with a
 * 10 % tolerance.
 */
#pragma once

#include <glib.h>

/* Reads `path` and appends to `out` the versions line, the table header and one table row
 * per prediction/measurement pair, counting verdicts into *pass and *miss. FALSE + error
 * naming the file, line and column on bad input; `out` is then untouched (the caller prints
 * nothing), *pass and *miss are meaningless. */
gboolean cli_validate_measured (const char *path, GString *out, guint *pass, guint *miss,
                                GError **error);
