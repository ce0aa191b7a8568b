/* cli/plot.c — the plots directory, HDF5 export as text, and the memory chart of a run
 * (rendered through cli_charts_render, the one gnuplot runner); see plot.h. */
#include "config.h"
#include "cli/plot.h"

#include <stdio.h>
#include <stdlib.h>
#include "cli/charts.h"
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

char *
cli_plot_export_text (const char *h5path, const char *object, GError **error)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  if (f == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM, "cannot export %s", object);
      return NULL;
    }
  gboolean ok = sim_h5out_export_tsv (h5path, object, f, error);
  fclose (f);
  char *text = ok ? g_strdup (buf) : NULL;
  free (buf);
  return text;
}

gboolean
cli_plot_memory (const char *h5path, guint rank, double capacity, const char *title,
                 const char *out_path, GError **error)
{
  g_autofree char *object = g_strdup_printf ("/series/rank%u/memory", rank);
  g_autofree char *data = cli_plot_export_text (h5path, object, error);
  if (data == NULL)
    return FALSE;
  g_autofree char *cap = g_strdup_printf ("%.6g", capacity / (1024.0 * 1024 * 1024));
  const char *args[] = { cap, title, NULL };
  return cli_charts_render ("memory", data, args, out_path, error);
}
