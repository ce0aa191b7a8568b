/* cli/mpi_module.h — the interface between the stepsim binary (cli/mpi.c) and its MPI module
 * (cli/mpi_module.c, built as $(pkglibdir)/stepsim-mpi.so when Open MPI is found). Only the
 * module links libmpi: the binary opens it with GModule when a batch runs under mpirun, so
 * every other process is spared loading Open MPI (~4 ms of dynamic linking per process).
 */
#pragma once

#include <glib.h>

/* The module's file name, in cli/ of the build tree and in $(pkglibdir) once installed. */
#define CLI_MPI_MODULE_FILE "stepsim-mpi.so"
/* The module's one exported symbol: a function returning its static table. */
#define CLI_MPI_MODULE_ENTRY "stepsim_mpi_module"
/* Bumped when the table changes, so that a stale installed module is refused. */
#define CLI_MPI_MODULE_ABI 1

typedef struct
{
  guint abi; /* CLI_MPI_MODULE_ABI of the module's build */
  /* MPI_Init, then this process's rank and the number of processes. FALSE + error
   * (G_FILE_ERROR_FAILED) when MPI_Init or the queries fail. */
  gboolean (*start) (guint *rank, guint *size, GError **error);
  /* Collective gather of every rank's bytes; see cli_mpi_gather (cli/mpi.h). */
  GPtrArray *(*gather) (GBytes *mine, GError **error);
  /* MPI_Finalize. */
  void (*stop) (void);
} CliMpiModule;

typedef const CliMpiModule *(*CliMpiModuleEntry) (void);
