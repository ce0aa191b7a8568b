/* cli/study/validate_measured.c — `stepsim validate --measured FILE.tsv`; the format is in
 * validate_measured.h. Rows are parsed strictly: every number with sim_units_parse_number,
 * every name looked up; the first bad field stops the read with "FILE:LINE: column 'C': …".
 */
#include "config.h"
#include "cli/study/validate_measured.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/scenario/input.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "hardware/catalog.h"
#include "hardware/kernel.h"
#include "sim/units.h"

#define TOLERANCE 0.10

static const char *const columns[] = {
  "kind", "id", "gpu", "scenario", "sets", "dtype", "m", "n", "k", "batch", "seq", "head_dim",
  "heads", "causal", "pass", "time_s", "max_memory_allocated_B", "max_memory_reserved_B",
  "torch", "cuda", "driver",
};
#define N_COLUMNS G_N_ELEMENTS (columns)

typedef struct
{
  const char *path;
  char *dir;
  guint line;
  gint index[N_COLUMNS]; /* column of each name in the file */
  guint n_header;        /* cells of the header line */
  char **fields;         /* the current row */
  guint n_fields;
  GString *out;          /* the table, printed by the caller only once the whole file is good */
  GPtrArray *versions;   /* distinct "torch T, CUDA C, driver D" of the rows (owned) */
} Reader;

static gboolean
row_error (const Reader *r, const char *column, GError **error, const char *what)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s:%u: column '%s': %s",
               r->path, r->line, column, what);
  return FALSE;
}

static const char *
field (const Reader *r, const char *column)
{
  for (guint i = 0; i < N_COLUMNS; i++)
    if (strcmp (columns[i], column) == 0)
      return (guint) r->index[i] < r->n_fields ? r->fields[r->index[i]] : "";
  g_assert_not_reached ();
}

/* The largest count a shape column takes: 2^31 elements per dimension, the int32 extents of
 * cuBLAS (cublasGemmEx takes int m, n, k) and of FlashAttention's shape arguments; the
 * kernel model's doubles are exact far beyond it. */
#define MAX_COUNT ((guint64) 1 << 31)

/* A whole count in `column`, 1..MAX_COUNT (0..1 with `flag`), parsed by sim_units_parse_count
 * (no fraction, sign or exponent). */
static gboolean
count (const Reader *r, const char *column, gboolean flag, double *out, GError **error)
{
  g_autoptr (GError) e = NULL;
  guint64 v;
  if (!sim_units_parse_count (field (r, column), &v, &e))
    return row_error (r, column, error, e->message);
  if (flag ? v > 1 : (v == 0 || v > MAX_COUNT))
    return row_error (r, column, error, flag ? "must be 0 or 1"
                                             : "must be a whole number from 1 to 2^31 (2147483648)");
  *out = (double) v;
  return TRUE;
}

/* A number > 0 (or >= 0 with `zero_ok`) in `column`. */
static gboolean
number (const Reader *r, const char *column, gboolean zero_ok, double *out, GError **error)
{
  g_autoptr (GError) e = NULL;
  if (!sim_units_parse_number (field (r, column), out, &e))
    return row_error (r, column, error, e->message);
  if (!isfinite (*out) || *out < 0 || (!zero_ok && *out == 0))
    return row_error (r, column, error, zero_ok ? "must be >= 0" : "must be > 0");
  return TRUE;
}

static gboolean
read_header (Reader *r, char **cells, GError **error)
{
  guint n = g_strv_length (cells);
  r->n_header = n;
  for (guint c = 0; c < N_COLUMNS; c++)
    {
      r->index[c] = -1;
      for (guint i = 0; i < n; i++)
        if (strcmp (g_strstrip (cells[i]), columns[c]) == 0)
          r->index[c] = (gint) i;
      if (r->index[c] < 0)
        return row_error (r, columns[c], error, "missing from the header line");
    }
  return TRUE;
}

static void
print_row (GString *out, const char *id, const char *metric, const char *pred, const char *meas, double p,
           double m, guint *pass, guint *miss)
{
  double err = p / m - 1;
  gboolean ok = fabs (err) <= TOLERANCE;
  g_string_append_printf (out, "%-6s %-22s %14s %14s %+8.1f %% %6.0f %%  %s\n", id, metric, pred,
                          meas, 100 * err, 100 * TOLERANCE, ok ? "PASS" : "MISS");
  ok ? (*pass)++ : (*miss)++;
}

static void
print_time (GString *out, const char *id, const char *metric, double p, double m, guint *pass, guint *miss)
{
  g_autofree char *ps = sim_units_format (p, SIM_DIM_TIME, 3);
  g_autofree char *ms = sim_units_format (m, SIM_DIM_TIME, 3);
  print_row (out, id, metric, ps, ms, p, m, pass, miss);
}

static void
print_bytes (GString *out, const char *id, const char *metric, double p, double m, guint *pass, guint *miss)
{
  g_autofree char *ps = g_strdup_printf ("%.0f MiB", p / (1024.0 * 1024));
  g_autofree char *ms = g_strdup_printf ("%.0f MiB", m / (1024.0 * 1024));
  print_row (out, id, metric, ps, ms, p, m, pass, miss);
}

static gboolean
step_row (Reader *r, const HwGpuSpec *gpu, guint *pass, guint *miss, GError **error)
{
  double t, alloc, reserved;
  if (!number (r, "time_s", FALSE, &t, error)
      || !number (r, "max_memory_allocated_B", FALSE, &alloc, error)
      || !number (r, "max_memory_reserved_B", FALSE, &reserved, error))
    return FALSE;
  const char *sets_text = field (r, "sets");
  g_autoptr (GPtrArray) sets = g_ptr_array_new_with_free_func (g_free);
  if (strcmp (sets_text, "-") != 0)
    {
      g_auto (GStrv) parts = g_strsplit (sets_text, ";", -1);
      for (char **p = parts; *p != NULL; p++)
        if (*g_strstrip (*p) != '\0')
          g_ptr_array_add (sets, g_strdup (*p));
    }
  g_ptr_array_add (sets, g_strdup_printf ("cluster.gpu=%s", gpu->name));
  g_ptr_array_add (sets, NULL);
  const char *given = field (r, "scenario");
  g_autofree char *scenario = g_path_is_absolute (given) ? g_strdup (given)
                                                         : g_build_filename (r->dir, given, NULL);
  g_autoptr (GError) e = NULL;
  CliScenario *sc = cli_scenario_load (scenario, (const char *const *) sets->pdata, &e);
  ModelSimResult res = { 0 };
  gboolean ok = sc != NULL && cli_scenario_simulate (sc, NULL, &res, &e);
  cli_scenario_free (sc);
  if (!ok)
    return row_error (r, "scenario", error, e->message);
  const char *id = field (r, "id");
  print_time (r->out, id, "step_time", res.step_time, t, pass, miss);
  print_bytes (r->out, id, "peak_allocated", res.peak_allocated, alloc, pass, miss);
  print_bytes (r->out, id, "peak_reserved", res.peak_reserved, reserved, pass, miss);
  model_sim_result_clear (&res);
  return TRUE;
}

/* A kernel row's predicted device time: the kernel model's compute time against its HBM
 * bytes, the longer of the two (the roofline of hardware/cluster.h, without the launch
 * latency: the profiler's device time excludes it). */
static gboolean
kernel_row (Reader *r, const HwGpuSpec *gpu, gboolean attention, guint *pass, guint *miss,
            GError **error)
{
  HwDtype dt;
  g_autoptr (GError) e = NULL;
  if (!hw_dtype_from_string (field (r, "dtype"), &dt, &e))
    return row_error (r, "dtype", error, e->message);
  if (!hw_gpu_has_dtype (gpu, dt)) /* the scenarios' test (models/plan/simulate.c): no silent fallback */
    {
      g_autofree char *msg = g_strdup_printf ("%s lacks %s support", gpu->name, hw_dtype_name (dt));
      return row_error (r, "dtype", error, msg);
    }
  double t, batch, flops, bytes, eb = hw_dtype_bytes (dt);
  HwKernelShape s = { 0 };
  if (!number (r, "time_s", FALSE, &t, error) || !count (r, "batch", FALSE, &batch, error))
    return FALSE;
  if (attention)
    {
      double seq, d, heads, causal;
      if (!count (r, "seq", FALSE, &seq, error) || !count (r, "head_dim", FALSE, &d, error)
          || !count (r, "heads", FALSE, &heads, error) || !count (r, "causal", TRUE, &causal, error))
        return FALSE;
      const char *pass_name = field (r, "pass");
      gboolean bwd = strcmp (pass_name, "bwd") == 0;
      if (!bwd && strcmp (pass_name, "fwd") != 0)
        return row_error (r, "pass", error, "must be fwd or bwd");
      s = (HwKernelShape){ .cls = bwd ? HW_KERNEL_FLASH_BWD : HW_KERNEL_FLASH_FWD, .seq = seq,
                           .head_dim = d, .causal = causal == 1 };
      flops = 4 * batch * heads * seq * seq * d * (bwd ? 2.5 : 1.0);
      bytes = eb * batch * seq * heads * d * (bwd ? 8 : 4);
    }
  else
    {
      double m, n, k;
      if (!count (r, "m", FALSE, &m, error) || !count (r, "n", FALSE, &n, error)
          || !count (r, "k", FALSE, &k, error))
        return FALSE;
      s = (HwKernelShape){ .cls = HW_KERNEL_GEMM, .m = m, .n = n, .k = k, .batch = batch };
      flops = 2 * m * n * k * batch;
      bytes = eb * (m * k + k * n + m * n) * batch;
    }
  double tc = hw_kernel_compute_seconds (gpu, dt, &s, flops);
  double tm = bytes / (gpu->hbm_bandwidth * gpu->hbm_efficiency);
  print_time (r->out, field (r, "id"), attention ? "attention_time" : "gemm_time", MAX (tc, tm), t, pass,
              miss);
  return TRUE;
}

static gboolean
data_row (Reader *r, guint *pass, guint *miss, GError **error)
{
  /* a row cut short (or with a tab too many) would be read shifted or with empty fields:
   * "torch , CUDA , driver" was printed for a row without its last columns (QA) */
  if (r->n_fields != r->n_header)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s:%u: %u fields, but the header line has %u (tab-separated, '-' for a "
                   "field that does not apply)", r->path, r->line, r->n_fields, r->n_header);
      return FALSE;
    }
  for (guint c = 0; c < N_COLUMNS; c++)
    if (field (r, columns[c])[0] == '\0')
      return row_error (r, columns[c], error, "empty ('-' for a field that does not apply)");
  g_autoptr (GError) e = NULL;
  const HwGpuSpec *gpu = hw_catalog_gpu (g_strstrip ((char *) field (r, "gpu")), &e);
  if (gpu == NULL)
    return row_error (r, "gpu", error, e->message);
  g_autofree char *v = g_strdup_printf ("torch %s, CUDA %s, driver %s", field (r, "torch"),
                                        field (r, "cuda"), field (r, "driver"));
  if (!g_ptr_array_find_with_equal_func (r->versions, v, g_str_equal, NULL))
    g_ptr_array_add (r->versions, g_steal_pointer (&v));
  const char *kind = field (r, "kind");
  if (strcmp (kind, "step") == 0)
    return step_row (r, gpu, pass, miss, error);
  if (strcmp (kind, "gemm") == 0 || strcmp (kind, "attention") == 0)
    return kernel_row (r, gpu, strcmp (kind, "attention") == 0, pass, miss, error);
  return row_error (r, "kind", error, "must be step, gemm or attention");
}

gboolean
cli_validate_measured (const char *path, GString *out, guint *pass, guint *miss, GError **error)
{
  g_return_val_if_fail (path != NULL && out != NULL && pass != NULL && miss != NULL, FALSE);
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!cli_input_read (path, &text, &length, error))
    return FALSE;
  g_autoptr (GString) rows = g_string_new (NULL);
  g_autoptr (GPtrArray) versions = g_ptr_array_new_with_free_func (g_free);
  Reader r = { .path = path, .dir = g_path_get_dirname (path), .out = rows, .versions = versions };
  guint n_rows = 0;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  gboolean header = FALSE, ok = TRUE;
  for (guint i = 0; ok && lines[i] != NULL; i++)
    {
      r.line = i + 1;
      char *l = lines[i];
      g_strchomp (l); /* a trailing '\r' of CRLF files, and trailing blanks */
      if (l[0] == '\0' || l[0] == '#')
        continue;
      g_auto (GStrv) cells = g_strsplit (l, "\t", -1);
      if (!header)
        {
          ok = read_header (&r, cells, error);
          header = TRUE;
          continue;
        }
      for (char **c = cells; *c != NULL; c++)
        g_strstrip (*c);
      r.fields = cells;
      r.n_fields = g_strv_length (cells);
      ok = data_row (&r, pass, miss, error);
      n_rows++;
    }
  if (ok && !header)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: no header line (expected the columns kind, id, gpu, …)", path);
      ok = FALSE;
    }
  if (ok && n_rows == 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: no measurement rows after the header line", path);
      ok = FALSE;
    }
  g_free (r.dir);
  if (!ok)
    return FALSE;
  g_string_append (out, "measured with ");
  for (guint i = 0; i < versions->len; i++)
    g_string_append_printf (out, "%s%s", i > 0 ? "; " : "", (char *) versions->pdata[i]);
  g_string_append_printf (out, "\n%-6s %-22s %14s %14s %10s %8s  %s\n", "case", "metric",
                          "predicted", "measured", "error", "tol.", "verdict");
  g_string_append_len (out, rows->str, (gssize) rows->len);
  return TRUE;
}
