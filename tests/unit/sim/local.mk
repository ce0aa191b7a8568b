# tests/unit/sim: one CUnit binary per module of sim/.
check_PROGRAMS += tests/unit/sim/test_engine
tests_unit_sim_test_engine_SOURCES = tests/unit/sim/test_engine.c
tests_unit_sim_test_engine_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_engine_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/sim/test_fluid
tests_unit_sim_test_fluid_SOURCES = tests/unit/sim/test_fluid.c tests/unit/sim/fluid_fixture.h
tests_unit_sim_test_fluid_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_fluid_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/sim/test_fluid_properties
tests_unit_sim_test_fluid_properties_SOURCES = tests/unit/sim/test_fluid_properties.c
tests_unit_sim_test_fluid_properties_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_fluid_properties_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/sim/test_text
tests_unit_sim_test_text_SOURCES = tests/unit/sim/test_text.c
tests_unit_sim_test_text_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_sim_test_text_LDADD = $(UNIT_TEST_LIBS)
