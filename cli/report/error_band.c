/* cli/report/error_band.c — the validation table and its medians; see error_band.h. */
#include "config.h"
#include "cli/report/error_band.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_NAME "validation-band.tsv"

gboolean
cli_error_band_kind_of (const char *metric, CliBandKind *out)
{
  static const char *const time_metrics[] = { "step_time", "tokens_per_s_per_gpu", "mfu", NULL };
  static const char *const memory_metrics[] = { "device_used", "peak_allocated", "peak_reserved",
                                                 NULL };
  if (g_strv_contains (time_metrics, metric))
    return *out = CLI_BAND_STEP_TIME, TRUE;
  if (g_strv_contains (memory_metrics, metric))
    return *out = CLI_BAND_MEMORY, TRUE;
  return FALSE;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Median of n >= 1 values (sorted in place). */
static double
median (double *v, guint n)
{
  qsort (v, n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

gboolean
cli_error_band_from_file (const char *path, const char *gpu, CliBandKind kind,
                          CliErrorBand *out, GError **error)
{
  *out = (CliErrorBand){ .median = NAN, .worst = NAN };
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GArray) errs = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint i = 1; lines[0] != NULL && lines[i] != NULL; i++)
    {
      if (lines[i][0] == '\0')
        continue;
      g_auto (GStrv) f = g_strsplit (lines[i], "\t", -1);
      char *end = NULL;
      double e = g_strv_length (f) == 7 ? g_ascii_strtod (f[5], &end) : NAN;
      if (end == NULL || *end != '\0' || !isfinite (e))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                       "%s: line %u: expected 7 tab-separated fields with a finite error", path,
                       i + 1);
          return FALSE;
        }
      CliBandKind k;
      if (strcmp (f[1], gpu) == 0 && cli_error_band_kind_of (f[2], &k) && k == kind)
        {
          double a = fabs (e);
          g_array_append_val (errs, a);
          if (!(fabs (out->worst) >= a))
            out->worst = e;
        }
    }
  out->table = TRUE;
  out->n_cases = errs->len;
  if (errs->len > 0)
    out->median = median ((double *) errs->data, errs->len);
  return TRUE;
}

const char *
cli_error_band_table_path (void)
{
  static char *path; /* set once, thread-safe (batches report in parallel) */
  if (g_once_init_enter (&path))
    {
      char *p = g_build_filename (STEPSIM_BUILDDIR, TABLE_NAME, NULL);
      if (!g_file_test (p, G_FILE_TEST_IS_REGULAR))
        {
          g_free (p);
          p = g_build_filename (STEPSIM_DATADIR, TABLE_NAME, NULL);
        }
      if (!g_file_test (p, G_FILE_TEST_IS_REGULAR))
        {
          g_free (p);
          p = g_strdup (""); /* g_once needs non-NULL: "" stands for none */
        }
      g_once_init_leave (&path, p);
    }
  return path[0] != '\0' ? path : NULL;
}

/* The build's table does not change under a running process, and a batch asks for the
 * same band once per scenario (reading and splitting the file was 4 % of a single-GPU
 * sweep's instructions): each (kind, GPU) is read once per process. Keys "KIND\tGPU"
 * (owned), values CliErrorBand* (owned); lookups only, never iterated; the lock makes it
 * safe for a batch's threads. */
void
cli_error_band_get (const char *gpu, CliBandKind kind, CliErrorBand *out)
{
  static GMutex lock;
  static GHashTable *memo;
  g_autofree char *key = g_strdup_printf ("%d\t%s", (int) kind, gpu);
  g_mutex_lock (&lock);
  if (memo == NULL)
    memo = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  const CliErrorBand *hit = g_hash_table_lookup (memo, key);
  if (hit != NULL)
    {
      *out = *hit;
      g_mutex_unlock (&lock);
      return;
    }
  const char *path = cli_error_band_table_path ();
  *out = (CliErrorBand){ .median = NAN, .worst = NAN };
  if (path == NULL || !cli_error_band_from_file (path, gpu, kind, out, NULL))
    *out = (CliErrorBand){ .median = NAN, .worst = NAN };
  g_hash_table_insert (memo, g_steal_pointer (&key), g_memdup2 (out, sizeof *out));
  g_mutex_unlock (&lock);
}

char *
cli_error_band_text (const char *gpu, CliBandKind kind)
{
  const char *what = kind == CLI_BAND_STEP_TIME ? "step time" : "memory";
  CliErrorBand b;
  cli_error_band_get (gpu, kind, &b);
  if (!b.table)
    return g_strdup_printf ("%s: not available (no validation table in this build)", what);
  if (b.n_cases == 0)
    return g_strdup_printf ("%s: no validation case on %s; this prediction is unchecked there",
                            what, gpu);
  g_autofree char *worst = b.n_cases > 1 ? g_strdup_printf ("; largest %+.1f %%", 100 * b.worst)
                                          : g_strdup ("");
  return g_strdup_printf ("%s \xc2\xb1%.1f %% (median |error| of %u validation case%s on %s%s)",
                          what, 100 * b.median, b.n_cases, b.n_cases == 1 ? "" : "s", gpu,
                          worst);
}
