/* cli/report/charts_render.c — running the gnuplot scripts of plots/ on the charts' data
 * (charts.h): where the scripts are, temporary TSV, one gnuplot process, its errors reduced
 * to one line. A leaf: it calls nothing of cli/ (plot.c and cmd_plot.c call it). */
#include "config.h"
#include "cli/report/charts.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include "sim/tempfiles.h"

/* `"DIR/sweep.gp" line 31: MESSAGE` → "sweep.gp line 31: MESSAGE"; NULL if `line` is not
 * a gnuplot error line. */
static char *
gnuplot_error_line (const char *line)
{
  const char *end = line[0] == '"' ? strchr (line + 1, '"') : NULL;
  if (end == NULL || !g_str_has_prefix (end, "\" line "))
    return NULL;
  g_autofree char *script = g_strndup (line + 1, (gsize) (end - line - 1));
  g_autofree char *base = g_path_get_basename (script);
  return g_strdup_printf ("%s%s", base, end + 1);
}

char *
cli_charts_gnuplot_error (const char *stderr_text)
{
  g_auto (GStrv) lines = g_strsplit (stderr_text != NULL ? stderr_text : "", "\n", -1);
  char *found = NULL, *warning = NULL;
  const char *last = NULL;
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char *l = g_strstrip (lines[i]);
      if (l[0] == '\0' || strspn (l, "^ ") == strlen (l))
        continue; /* the caret under the offending command */
      last = l;
      char *e = gnuplot_error_line (l);
      if (e == NULL)
        continue;
      char **slot = strstr (e, ": warning:") != NULL ? &warning : &found;
      g_free (*slot);
      *slot = e;
    }
  if (found != NULL)
    return g_free (warning), found;
  if (warning != NULL)
    return warning;
  return g_strdup (last != NULL ? last : "no message");
}

/* In the child before exec: gnuplot ends when stepsim does (SIGINT/SIGTERM, cli/interrupt.h),
 * so it cannot write its chart after stepsim removed the temporaries (Linux prctl(2)). */
static void
die_with_parent (gpointer data)
{
  (void) data;
#ifdef __linux__
  prctl (PR_SET_PDEATHSIG, SIGTERM);
#endif
}

static gboolean
run_gnuplot (const char *const *argv, const char *out_path, GError **error)
{
  g_autofree char *err_text = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, die_with_parent,
                     NULL, NULL, &err_text, &status, error))
    return g_prefix_error (error, "cannot run gnuplot: "), FALSE;
  if (g_spawn_check_wait_status (status, NULL))
    return TRUE;
  g_autofree char *why = cli_charts_gnuplot_error (err_text);
  g_set_error (error, G_SPAWN_EXIT_ERROR, 1, "%s: gnuplot could not draw the chart: %s",
               out_path, why);
  return FALSE;
}

/* Whether the chart gnuplot wrote at `path` is whole: a PNG ends with its IEND chunk, an
 * SVG with </svg>. gnuplot exits 0 when its writes fail (a full disk, a file size limit):
 * the file is then cut short, or empty. */
static gboolean
chart_complete (const char *path, gboolean svg, gsize *size)
{
  static const char iend[] = "\0\0\0\0IEND\xae\x42\x60\x82";
  g_autofree char *data = NULL;
  gsize len = 0;
  *size = 0;
  if (!g_file_get_contents (path, &data, &len, NULL))
    return FALSE;
  *size = len;
  if (!svg)
    return len >= 8 + 12 && memcmp (data, "\x89PNG\r\n\x1a\n", 8) == 0
           && memcmp (data + len - 12, iend, 12) == 0;
  while (len > 0 && g_ascii_isspace (data[len - 1]))
    len--;
  return len >= 6 && memcmp (data + len - 6, "</svg>", 6) == 0;
}

/* Why a chart of `size` bytes in the directory of `path` was cut short, as far as can be
 * told after gnuplot: the file size limit reached (EFBIG), no space left (ENOSPC). */
static const char *
cut_short_reason (const char *path, gsize size)
{
  struct rlimit lim;
  if (getrlimit (RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
      && size >= lim.rlim_cur)
    return g_strerror (EFBIG);
  g_autofree char *dir = g_path_get_dirname (path);
  struct statvfs fs;
  if (statvfs (dir, &fs) == 0 && fs.f_bavail == 0)
    return g_strerror (ENOSPC);
  return "gnuplot's write failed";
}

const char *
cli_charts_dir (void)
{
  static char *dir; /* set once, thread-safe */
  if (g_once_init_enter (&dir))
    {
      char *src = g_build_filename (STEPSIM_SRCDIR, "plots", NULL);
      if (!g_file_test (src, G_FILE_TEST_IS_DIR))
        {
          g_free (src);
          src = g_build_filename (STEPSIM_DATADIR, "plots", NULL);
        }
      g_once_init_leave (&dir, src);
    }
  return dir;
}

gboolean
cli_charts_path_is_svg (const char *path)
{
  g_autofree char *lower = g_ascii_strdown (path, -1);
  return g_str_has_suffix (lower, ".svg");
}

gboolean
cli_charts_render (const char *figure, const char *data, const char *const *args,
                   const char *out_path, GError **error)
{
  /* g_file_open_tmp's, g_file_set_contents' messages would be GLib's ("Failed to create
   * file “…”"): the temporary's directory and the reason, as the other files are named */
  g_autofree char *tsv = g_build_filename (g_get_tmp_dir (), "stepsim-chart-XXXXXX.tsv", NULL);
  int fd = g_mkstemp (tsv);
  if (fd < 0)
    {
      int err = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
                   "%s: cannot create the chart's data file in the temporary directory %s "
                   "(TMPDIR): %s", out_path, g_get_tmp_dir (), g_strerror (err));
      return FALSE;
    }
  close (fd);
  sim_tempfiles_add (tsv); /* removed on SIGINT/SIGTERM too (cli/interrupt.h) */
  if (!sim_tempfiles_set_contents (tsv, data, strlen (data), error))
    return g_unlink (tsv), sim_tempfiles_forget (tsv), FALSE;
  g_autofree char *file = g_strconcat (figure, ".gp", NULL);
  g_autofree char *script = g_build_filename (cli_charts_dir (), file, NULL);
  const char *ext = cli_charts_path_is_svg (out_path) ? ".svg" : ".png";
  g_autofree char *tmp = sim_tempfiles_new_path (out_path, ext);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *fixed[] = { STEPSIM_GNUPLOT, "-c", script, tsv, tmp };
  for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (argv, (gpointer) fixed[i]);
  for (guint i = 0; args != NULL && args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  gboolean ok = run_gnuplot ((const char *const *) argv->pdata, out_path, error);
  gsize size = 0;
  if (ok && !chart_complete (tmp, cli_charts_path_is_svg (out_path), &size))
    {
      /* never a chart cut short, exit 0 (QA: a full disk left an empty PNG) */
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO,
                   "%s: cannot write the chart: %s (gnuplot wrote %" G_GSIZE_FORMAT
                   " bytes of it)", out_path, cut_short_reason (tmp, size), size);
      ok = FALSE;
    }
  if (ok && g_rename (tmp, out_path) != 0)
    {
      int err = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
                   "cannot rename %s to %s: %s", tmp, out_path, g_strerror (err));
      ok = FALSE;
    }
  if (!ok)
    g_unlink (tmp);
  g_unlink (tsv);
  sim_tempfiles_forget (tmp);
  sim_tempfiles_forget (tsv);
  return ok;
}

char *
cli_charts_title (const char *title)
{
  g_return_val_if_fail (title != NULL, NULL);
  g_auto (GStrv) words = g_strsplit (title, " ", -1);
  GString *out = g_string_new (NULL);
  glong line = 0;
  for (guint i = 0; words[i] != NULL; i++)
    {
      glong n = g_utf8_strlen (words[i], -1);
      if (line > 0 && line + 1 + n > CLI_CHART_TITLE_COLS)
        {
          g_string_append_c (out, '\n');
          line = 0;
        }
      else if (i > 0)
        {
          g_string_append_c (out, ' ');
          line++;
        }
      g_string_append (out, words[i]);
      line += n;
    }
  return g_string_free (out, FALSE);
}
