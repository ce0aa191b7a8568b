/* cli/mpi_module.c — the MPI module (see mpi_module.h): MPI start, gather and stop for
 * batches, compiled with MPI_CFLAGS and linked with MPI_LIBS into the shared object
 * stepsim-mpi.so (cli/local.mk), which cli/mpi.c opens only under mpirun.
 *
 * Gather: MPI_Gather of the byte counts (int, so one process's share is < 2 GiB), then
 * MPI_Gatherv of the bytes into one buffer on rank 0, cut back into per-rank GBytes.
 */
#include "config.h"
#include "cli/mpi_module.h"

#include <mpi.h>

static gboolean
module_start (guint *rank, guint *size, GError **error)
{
  int r = 0, s = 1;
  if (MPI_Init (NULL, NULL) != MPI_SUCCESS || MPI_Comm_rank (MPI_COMM_WORLD, &r) != MPI_SUCCESS
      || MPI_Comm_size (MPI_COMM_WORLD, &s) != MPI_SUCCESS)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "MPI_Init failed");
      return FALSE;
    }
  *rank = (guint) r;
  *size = (guint) s;
  return TRUE;
}

static GPtrArray *
module_gather (GBytes *mine, GError **error)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
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
}

static void
module_stop (void)
{
  MPI_Finalize ();
}

/* The module's entry (CLI_MPI_MODULE_ENTRY): its table, static. */
const CliMpiModule *stepsim_mpi_module (void);

const CliMpiModule *
stepsim_mpi_module (void)
{
  static const CliMpiModule table = {
    .abi = CLI_MPI_MODULE_ABI,
    .start = module_start,
    .gather = module_gather,
    .stop = module_stop,
  };
  return &table;
}
