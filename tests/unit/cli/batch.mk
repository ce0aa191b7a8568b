# tests/unit/cli/batch.mk: batches, sweeps, fit search, trace export and the results table.
check_PROGRAMS += tests/unit/sim/test_table
tests_unit_sim_test_table_SOURCES = tests/unit/sim/test_table.c
tests_unit_sim_test_table_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_table_LDADD = $(UNIT_TEST_LIBS)
