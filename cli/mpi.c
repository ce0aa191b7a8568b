/* cli/mpi.c — MPI start, gather and stop for batches; see mpi.h. Compiled with MPI_CFLAGS
 * into its own library (cli/local.mk) so nothing else sees mpi.h. Without HAVE_MPI it is a
 * one-process stand-in.
 *
 * Gather: MPI_Gather of the byte counts (int, so one process's share is < 2 GiB), then
 * MPI_Gatherv of the bytes into one buffer on rank 0, cut back into per-rank GBytes.
 */
#include "config.h"
#include "cli/mpi.h"

#include <string.h>
#ifdef HAVE_MPI
#include <mpi.h>
#endif

static gboolean started;

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

gboolean
cli_mpi_start (guint *rank, guint *size, GError **error)
{
  *rank = 0;
  *size = 1;
  if (!launched_by_mpirun ())
    return TRUE;
#ifdef HAVE_MPI
  int r = 0, s = 1;
  if (MPI_Init (NULL, NULL) != MPI_SUCCESS || MPI_Comm_rank (MPI_COMM_WORLD, &r) != MPI_SUCCESS
      || MPI_Comm_size (MPI_COMM_WORLD, &s) != MPI_SUCCESS)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "MPI_Init failed");
      return FALSE;
    }
  started = TRUE;
  *rank = (guint) r;
  *size = (guint) s;
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
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  if (!started)
    {
      g_ptr_array_add (all, g_bytes_ref (mine));
      return all;
    }
#ifdef HAVE_MPI
  int rank = 0, size = 1;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  gsize n = 0;
  const void *data = g_bytes_get_data (mine, &n);
  int count = (int) n;
  g_autofree int *counts = g_new0 (int, size);
  g_autofree int *displs = g_new0 (int, size);
  g_autofree char *buf = NULL;
  if (n > G_MAXINT
      || MPI_Gather (&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    goto fail;
  gsize total = 0;
  for (int r = 0; r < size; r++)
    {
      displs[r] = (int) total;
      total += (gsize) counts[r];
    }
  buf = g_malloc (MAX (total, (gsize) 1));
  if (MPI_Gatherv (data, count, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD)
      != MPI_SUCCESS)
    goto fail;
  for (int r = 0; rank == 0 && r < size; r++)
    g_ptr_array_add (all, g_bytes_new (buf + displs[r], (gsize) counts[r]));
  return all;
fail:
  g_ptr_array_unref (all);
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "MPI gather of the results failed");
  return NULL;
#else
  (void) error;
  return all;
#endif
}

void
cli_mpi_stop (void)
{
#ifdef HAVE_MPI
  if (started)
    MPI_Finalize ();
#endif
  started = FALSE;
}
