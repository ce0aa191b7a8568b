/* cli/plot.c — gnuplot invocation for charts; see plot.h. */
#include "config.h"
#include "cli/plot.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <stdio.h>
#include "sim/h5out.h"

const char *
cli_plot_dir (void)
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

/* Exports `object` of the HDF5 file to a new temporary TSV file whose path is returned. */
static char *
export_to_temp (const char *h5path, const char *object, GError **error)
{
  char *tsv = NULL;
  int fd = g_file_open_tmp ("stepsim-XXXXXX.tsv", &tsv, error);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen (fd, "w");
  gboolean ok = f != NULL && sim_h5out_export_tsv (h5path, object, f, error);
  if (f != NULL && fclose (f) != 0 && ok)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO, "cannot write %s", tsv);
      ok = FALSE;
    }
  if (!ok)
    {
      g_unlink (tsv);
      g_free (tsv);
      return NULL;
    }
  return tsv;
}

static gboolean
run_gnuplot (const char *script, const char *tsv, const char *out, const char *capacity,
             const char *title, GError **error)
{
  const char *argv[] = { STEPSIM_GNUPLOT, "-c", script, tsv, out, capacity, title, NULL };
  g_autofree char *err_text = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                     &err_text, &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status (status, error))
    {
      g_prefix_error (error, "gnuplot %s failed (%s): ", script, g_strstrip (err_text));
      return FALSE;
    }
  return TRUE;
}

gboolean
cli_plot_memory (const char *h5path, guint rank, double capacity, const char *title,
                 const char *out_path, GError **error)
{
  g_autofree char *object = g_strdup_printf ("/series/rank%u/memory", rank);
  g_autofree char *tsv = export_to_temp (h5path, object, error);
  if (tsv == NULL)
    return FALSE;
  g_autofree char *script = g_build_filename (cli_plot_dir (), "memory.gp", NULL);
  g_autofree char *cap = g_strdup_printf ("%.6g", capacity / (1024.0 * 1024 * 1024));
  /* Same extension as the target so style.gp picks the terminal. */
  const char *ext = g_str_has_suffix (out_path, ".svg") ? ".svg" : ".png";
  g_autofree char *tmp = g_strdup_printf ("%s.tmp.%d%s", out_path, (int) getpid (), ext);
  gboolean ok = run_gnuplot (script, tsv, tmp, cap, title, error);
  if (ok && g_rename (tmp, out_path) != 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot rename %s to %s",
                   tmp, out_path);
      ok = FALSE;
    }
  if (!ok)
    g_unlink (tmp);
  g_unlink (tsv);
  return ok;
}
