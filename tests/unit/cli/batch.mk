# tests/unit/cli/batch.mk: batches, sweeps, fit search, trace export and the results table.
check_PROGRAMS += tests/unit/sim/test_table
tests_unit_sim_test_table_SOURCES = tests/unit/sim/test_table.c
tests_unit_sim_test_table_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_table_LDADD = $(UNIT_TEST_LIBS)

BATCH_TESTS = tests/unit/cli/test_sweep tests/unit/cli/test_batch tests/unit/cli/test_fit \
	tests/unit/cli/test_trace tests/unit/cli/test_charts tests/unit/cli/test_results_read
check_PROGRAMS += $(BATCH_TESTS)
tests_unit_cli_test_sweep_SOURCES = tests/unit/cli/test_sweep.c
tests_unit_cli_test_sweep_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_sweep_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_batch_SOURCES = tests/unit/cli/test_batch.c
tests_unit_cli_test_batch_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_batch_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_fit_SOURCES = tests/unit/cli/test_fit.c
tests_unit_cli_test_fit_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_fit_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_trace_SOURCES = tests/unit/cli/test_trace.c
tests_unit_cli_test_trace_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_trace_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_charts_SOURCES = tests/unit/cli/test_charts.c
tests_unit_cli_test_charts_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_charts_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# The typed reader of result files the charts read through (cli/report/results_read.h).
tests_unit_cli_test_results_read_SOURCES = tests/unit/cli/test_results_read.c
tests_unit_cli_test_results_read_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_results_read_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)

# Shell check of the batch, fit, plot and trace commands (also MPI when built with it).
SHELL_CHECKS += tests/batch.sh
EXTRA_DIST += $(wildcard $(srcdir)/scenarios/sweeps/*.ini) $(wildcard $(srcdir)/tests/fixtures/*.tsv)
