/* cli/mpi.c — MPI start, gather and stop for batches; see mpi.h. The MPI calls live in the
 * module stepsim-mpi.so (cli/mpi_module.c), the one object that links Open MPI: it is opened
 * here with GModule only when the process was launched by mpirun, so every other process
 * starts without loading libmpi and its dependencies. Without HAVE_MPI (no module built) it
 * is a one-process stand-in.
 */
#include "config.h"
#include "cli/mpi.h"

#include "cli/mpi_module.h"

#include <gmodule.h>

static const CliMpiModule *module; /* set by cli_mpi_start once MPI is initialised */

static gboolean
launched_by_mpirun (void)
{
  return g_getenv ("OMPI_COMM_WORLD_SIZE") != NULL || g_getenv ("PMI_SIZE") != NULL
         || g_getenv ("PMIX_RANK") != NULL;
}

guint
cli_mpi_launch_rank (void)
{
  const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
  for (guint i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      const char *v = g_getenv (vars[i]);
      guint64 r;
      if (v != NULL && g_ascii_string_to_unsigned (v, 10, 0, G_MAXUINT, &r, NULL))
        return (guint) r;
    }
  return 0;
}

const char *
cli_mpi_module_path (void)
{
#ifdef HAVE_MPI
  static char *path; /* found once */
  if (g_once_init_enter (&path))
    {
      const char *env = g_getenv ("STEPSIM_MPI_MODULE");
      char *p = env != NULL && env[0] != '\0'
                    ? g_strdup (env)
                    : g_build_filename (STEPSIM_BUILDDIR, "cli", CLI_MPI_MODULE_FILE, NULL);
      if (env == NULL || env[0] == '\0')
        if (!g_file_test (p, G_FILE_TEST_IS_REGULAR))
          {
            g_free (p);
            p = g_build_filename (STEPSIM_PKGLIBDIR, CLI_MPI_MODULE_FILE, NULL);
          }
      g_once_init_leave (&path, p);
    }
  return path;
#else
  return NULL;
#endif
}

#ifdef HAVE_MPI
/* Opens the module (global symbols: Open MPI's own components look up libmpi's) and returns
 * its table; NULL + error naming the file when it cannot be opened or is not stepsim's. The
 * module stays open for the life of the process. */
static const CliMpiModule *
load_module (GError **error)
{
  const char *path = cli_mpi_module_path ();
  GModule *m = g_module_open (path, 0);
  if (m == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                   "launched by mpirun, but the MPI module cannot be loaded: %s "
                   "(set STEPSIM_MPI_MODULE to its path, or run `make install` again)",
                   g_module_error ());
      return NULL;
    }
  CliMpiModuleEntry entry = NULL;
  const CliMpiModule *table = NULL;
  if (g_module_symbol (m, CLI_MPI_MODULE_ENTRY, (gpointer *) &entry) && entry != NULL)
    table = entry ();
  if (table == NULL || table->abi != CLI_MPI_MODULE_ABI)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                   "launched by mpirun, but %s is not this stepsim's MPI module "
                   "(run `make install` again)", path);
      g_module_close (m);
      return NULL;
    }
  g_module_make_resident (m);
  return table;
}
#endif

gboolean
cli_mpi_start (guint *rank, guint *size, GError **error)
{
  *rank = 0;
  *size = 1;
  if (!launched_by_mpirun ())
    return TRUE;
#ifdef HAVE_MPI
  const CliMpiModule *m = load_module (error);
  if (m == NULL || !m->start (rank, size, error))
    return FALSE;
  module = m;
  return TRUE;
#else
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
               "launched by mpirun, but this stepsim was built without MPI (install Open MPI, "
               "e.g. libopenmpi-dev, and run ./configure again)");
  return FALSE;
#endif
}

GPtrArray *
cli_mpi_gather (GBytes *mine, GError **error)
{
  if (module != NULL)
    return module->gather (mine, error);
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_ptr_array_add (all, g_bytes_ref (mine));
  return all;
}

void
cli_mpi_stop (void)
{
  if (module != NULL)
    module->stop ();
  module = NULL;
}
