/* cli/report/error_band.h — how well stepsim has done on cases like this one: the median
 * |relative error| of the validation cases (tests/validation, `stepsim validate`) run on the
 * same GPU type, per kind of metric.
 *
 * The table is written at build time by `stepsim validate --tsv` (the make rule of
 * cli/local.mk: validation-band.tsv in the build tree, installed in $(pkgdatadir)), so the
 * band always is what the current simulator scores, never a typed-in number. Columns (TSV,
 * header line first): id, gpu, metric, predicted, measured, error (predicted ÷ measured −
 * 1), known_gap (0/1). Kinds: step time (metrics step_time, tokens_per_s_per_gpu and mfu:
 * each is the step time's error seen from one side) and memory (device_used,
 * peak_allocated). Median: the middle value of the sorted |error|s, the mean of the middle
 * two for an even count; beside it the largest |error|, with its sign.
 */
#pragma once

#include <glib.h>

typedef enum
{
  CLI_BAND_STEP_TIME,
  CLI_BAND_MEMORY,
} CliBandKind;

typedef struct
{
  gboolean table;  /* the table was found and read */
  guint n_cases;   /* matching rows (0: no case on this GPU type) */
  double median;   /* median |error| of those rows (fraction); NaN when n_cases is 0 */
  double worst;    /* the error (signed fraction) of the row with the largest |error|; NaN
                    * when n_cases is 0 */
} CliErrorBand;

/* The kind of a validation metric name ("step_time" → CLI_BAND_STEP_TIME); FALSE when the
 * metric belongs to neither kind. */
gboolean cli_error_band_kind_of (const char *metric, CliBandKind *out);

/* Reads the table at `path` and fills *out for GPU type `gpu` (exact catalog name) and
 * `kind`. FALSE + G_FILE_ERROR / G_KEY_FILE_ERROR_PARSE (naming the file and line) when
 * the file cannot be read or a row is malformed. */
gboolean cli_error_band_from_file (const char *path, const char *gpu, CliBandKind kind,
                                   CliErrorBand *out, GError **error);

/* The table of this build (the build tree's, else the installed one), read once; its path
 * (static string) or NULL when neither exists. */
const char *cli_error_band_table_path (void);

/* As cli_error_band_from_file on the build's table (out->table FALSE without one), read
 * once per process for each (gpu, kind) and remembered (thread-safe). */
void cli_error_band_get (const char *gpu, CliBandKind kind, CliErrorBand *out);

/* One line: "step time ±12.3 % (median |error| of 4 validation cases on A100-80GB-SXM;
 * largest +40.1 %)" (the largest only with two cases or more: the tail a median hides),
 * "step time: no validation case on H100-SXM; this prediction is unchecked there", or
 * "…: not available (no validation table in this build)". Caller frees. */
char *cli_error_band_text (const char *gpu, CliBandKind kind);
