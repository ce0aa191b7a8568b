# cli/: the stepsim command.
STEPSIM_LIBS = models/libstepsim_models.a hardware/libstepsim_hw.a sim/libstepsim_sim.a
STEPSIM_ALL_LIBS = $(STEPSIM_LIBS) $(JSON_GLIB_LIBS) $(HDF5_LIBS) $(GLIB_LIBS) $(LIBS)

noinst_LIBRARIES += cli/libstepsim_cli.a
cli_libstepsim_cli_a_SOURCES = \
	cli/scenario/scenario.c cli/scenario/scenario.h cli/scenario/scenario_private.h cli/scenario/scenario_keys.c cli/scenario/scenario_keys.h cli/scenario/scenario_configs.c cli/scenario/scenario_groups.c cli/scenario/scenario_parallel.c \
	cli/scenario/scenario_memory.c cli/scenario/scenario_framework.c cli/scenario/scenario_offload.c cli/scenario/scenario_finetune.c cli/scenario/scenario_moe.c cli/scenario/scenario_origin.c cli/scenario/scenario_warnings.c \
	cli/scenario/scenario_plan.c cli/report/training.c cli/report/training.h cli/report/error_band.c cli/report/error_band.h \
	cli/scenario/sim_input.c cli/scenario/sim_input.h \
	cli/report/report.c cli/report/report.h cli/report/op_report.c cli/report/op_report.h \
	cli/report/plot.c cli/report/plot.h \
	cli/commands.h cli/cmd_run.c cli/options.c cli/cmd_misc.c \
	cli/interrupt.c cli/interrupt.h cli/malloc_tuning.c cli/malloc_tuning.h \
	cli/scenario/output.c cli/scenario/output.h cli/scenario/input.c cli/scenario/input.h cli/cmd_collective.c cli/cmd_compare.c cli/cmd_validate.c \
	cli/study/validate_measured.c cli/study/validate_measured.h \
	cli/scenario/sweep.c cli/scenario/sweep_points.c cli/scenario/sweep.h cli/scenario/sweep-private.h cli/scenario/sweep_list.c \
	cli/study/batch.c cli/study/batch.h cli/cmd_batch.c \
	cli/study/fit.c cli/study/fit_search.c cli/study/fit_size.c cli/study/fit_gpus.c cli/study/fit_stack.c cli/study/fit.h cli/study/fit-private.h cli/cmd_fit.c cli/study/fit_cost.c cli/study/fit_cost.h cli/report/trace.c cli/report/trace.h \
	cli/report/charts.c cli/report/charts_render.c cli/report/charts.h cli/report/charts-private.h cli/report/charts_table.c cli/report/results_read.c cli/report/results_read.h cli/report/charts_cost.c cli/cmd_plot.c

bin_PROGRAMS += stepsim
stepsim_SOURCES = cli/main.c
stepsim_LDADD = cli/libstepsim_cli.a cli/libstepsim_mpi.a $(STEPSIM_ALL_LIBS) $(GMODULE_LIBS)

# MPI batches (cli/mpi.c): the binary does not link Open MPI (its dynamic loading cost ~4 ms
# in every process). The MPI calls are in the module stepsim-mpi.so (cli/mpi_module.c, the
# only file that sees MPI_CFLAGS), opened with GModule only under mpirun; without MPI,
# cli/mpi.c is a one-process stand-in.
noinst_LIBRARIES += cli/libstepsim_mpi.a
cli_libstepsim_mpi_a_SOURCES = cli/mpi.c cli/mpi.h cli/mpi_module.h
cli_libstepsim_mpi_a_CPPFLAGS = $(AM_CPPFLAGS) -DSTEPSIM_PKGLIBDIR='"$(pkglibdir)"'
cli_libstepsim_mpi_a_CFLAGS = $(AM_CFLAGS) $(GMODULE_CFLAGS)
if HAVE_MPI
mpimoduledir = $(pkglibdir)
mpimodule_PROGRAMS = cli/stepsim-mpi.so
cli_stepsim_mpi_so_SOURCES = cli/mpi_module.c cli/mpi_module.h
cli_stepsim_mpi_so_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -fPIC
cli_stepsim_mpi_so_LDFLAGS = $(AM_LDFLAGS) -shared
cli_stepsim_mpi_so_LDADD = $(MPI_LIBS) $(GLIB_LIBS)
endif

# The error band of every prediction (cli/report/error_band.h): what `stepsim validate` scores on
# the shipped validation cases, per GPU type, computed by this build and installed beside
# the validation cases. A miss (exit 1) still writes its row: the band is the score, good
# or bad; only a table that was not written fails the rule.
pkgdata_DATA = validation-band.tsv
validation-band.tsv: stepsim$(EXEEXT) $(dist_validation_DATA)
	$(AM_V_GEN)rm -f $@.tmp; ./stepsim$(EXEEXT) validate --tsv $@.tmp >/dev/null; \
	  test -s $@.tmp && mv $@.tmp $@
CLEANFILES += validation-band.tsv validation-band.tsv.tmp
