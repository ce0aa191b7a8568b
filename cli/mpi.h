/* cli/mpi.h — the little MPI a batch needs across machines (Open MPI, optional at configure
 * time). `mpirun -np N stepsim batch …` runs N processes; each runs every N-th job and rank 0
 * gathers the results and writes the files.
 *
 * MPI is initialised only when the process was launched by mpirun (OMPI_COMM_WORLD_SIZE or
 * PMI_SIZE/PMIX_RANK in the environment), so the plain binary never needs an MPI runtime:
 * libmpi is linked only into the module stepsim-mpi.so, opened then (cli/mpi_module.h);
 * built without MPI, every process is rank 0 of 1 (and a process launched by mpirun says so
 * on stderr via the returned error).
 */
#pragma once

#include <glib.h>

/* The rank mpirun gave this process (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK), read
 * before MPI starts so that messages every process would print alike (usage errors) are
 * printed by rank 0 alone; 0 when not launched by mpirun. */
guint cli_mpi_launch_rank (void);

/* Path of the MPI module this binary opens under mpirun (static string): $STEPSIM_MPI_MODULE
 * when set, else cli/stepsim-mpi.so of the build tree when it is there, else the installed
 * $(pkglibdir)/stepsim-mpi.so (which may be missing). NULL when built without MPI. */
const char *cli_mpi_module_path (void);

/* Starts MPI when launched by mpirun; sets *rank and *size (0 and 1 otherwise). FALSE +
 * error (G_FILE_ERROR_FAILED) when launched by mpirun but stepsim was built without MPI or
 * MPI_Init fails, or the MPI module (cli/mpi_module.h) cannot be opened. */
gboolean cli_mpi_start (guint *rank, guint *size, GError **error);

/* Collective: every process passes its bytes; on rank 0 returns a new array of the GBytes of
 * ranks 0..size-1 (caller frees), elsewhere an empty array. Without MPI, an array holding
 * `mine`. NULL + error on a communication failure. */
GPtrArray *cli_mpi_gather (GBytes *mine, GError **error);

/* Finalises MPI if cli_mpi_start initialised it. */
void cli_mpi_stop (void);
