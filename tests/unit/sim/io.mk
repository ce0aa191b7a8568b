# tests/unit/sim/io.mk: CUnit binaries of sim/units, sim/recorder, sim/h5out and sim/tempfiles.
check_PROGRAMS += tests/unit/sim/test_units
tests_unit_sim_test_units_SOURCES = tests/unit/sim/test_units.c
tests_unit_sim_test_units_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_units_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/sim/test_recorder
tests_unit_sim_test_recorder_SOURCES = tests/unit/sim/test_recorder.c
tests_unit_sim_test_recorder_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_recorder_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/sim/test_h5out
tests_unit_sim_test_h5out_SOURCES = tests/unit/sim/test_h5out.c
tests_unit_sim_test_h5out_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_h5out_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/sim/test_h5read
tests_unit_sim_test_h5read_SOURCES = tests/unit/sim/test_h5read.c
tests_unit_sim_test_h5read_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_h5read_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/sim/test_tempfiles
tests_unit_sim_test_tempfiles_SOURCES = tests/unit/sim/test_tempfiles.c
tests_unit_sim_test_tempfiles_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_tempfiles_LDADD = $(UNIT_TEST_LIBS)
