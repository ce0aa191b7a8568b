# cli/: the stepsim command.
STEPSIM_LIBS = models/libstepsim_models.a hardware/libstepsim_hw.a sim/libstepsim_sim.a
STEPSIM_ALL_LIBS = $(STEPSIM_LIBS) $(JSON_GLIB_LIBS) $(HDF5_LIBS) $(GLIB_LIBS) $(LIBS)

noinst_LIBRARIES += cli/libstepsim_cli.a
cli_libstepsim_cli_a_SOURCES = \
	cli/scenario.c cli/scenario.h cli/scenario_private.h cli/scenario_groups.c cli/scenario_parallel.c \
	cli/scenario_memory.c cli/scenario_offload.c cli/scenario_finetune.c cli/scenario_origin.c cli/scenario_warnings.c \
	cli/scenario_plan.c cli/training.c cli/training.h cli/error_band.c cli/error_band.h \
	cli/run.c cli/run.h \
	cli/report.c cli/report.h \
	cli/plot.c cli/plot.h \
	cli/commands.h cli/cmd_run.c cli/cmd_misc.c \
	cli/interrupt.c cli/interrupt.h \
	cli/output.c cli/output.h cli/input.c cli/input.h cli/cmd_collective.c cli/cmd_compare.c cli/cmd_validate.c \
	cli/validate_measured.c cli/validate_measured.h \
	cli/sweep.c cli/sweep_points.c cli/sweep.h cli/sweep-private.h cli/sweep_list.c \
	cli/batch.c cli/batch.h cli/cmd_batch.c \
	cli/fit.c cli/fit_size.c cli/fit_gpus.c cli/fit_stack.c cli/fit.h cli/fit-private.h cli/cmd_fit.c cli/fit_cost.c cli/fit_cost.h cli/trace.c cli/trace.h \
	cli/charts.c cli/charts_render.c cli/charts.h cli/charts-private.h cli/charts_tsv.c cli/charts_cost.c cli/cmd_plot.c

bin_PROGRAMS += stepsim
stepsim_SOURCES = cli/main.c
stepsim_LDADD = cli/libstepsim_cli.a cli/libstepsim_mpi.a $(STEPSIM_ALL_LIBS) $(MPI_LIBS)

# MPI batches (cli/mpi.c): its own library so only it sees MPI_CFLAGS; a stub without MPI.
noinst_LIBRARIES += cli/libstepsim_mpi.a
cli_libstepsim_mpi_a_SOURCES = cli/mpi.c cli/mpi.h
cli_libstepsim_mpi_a_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)

# The error band of every prediction (cli/error_band.h): what `stepsim validate` scores on
# the shipped validation cases, per GPU type, computed by this build and installed beside
# the validation cases. A miss (exit 1) still writes its row: the band is the score, good
# or bad; only a table that was not written fails the rule.
pkgdata_DATA = validation-band.tsv
validation-band.tsv: stepsim$(EXEEXT) $(dist_validation_DATA)
	$(AM_V_GEN)rm -f $@.tmp; ./stepsim$(EXEEXT) validate --tsv $@.tmp >/dev/null; \
	  test -s $@.tmp && mv $@.tmp $@
CLEANFILES += validation-band.tsv validation-band.tsv.tmp
