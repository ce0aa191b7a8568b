# tests/unit/hardware: one CUnit binary per module of hardware/.

check_PROGRAMS += tests/unit/hardware/test_catalog
tests_unit_hardware_test_catalog_SOURCES = tests/unit/hardware/test_catalog.c
tests_unit_hardware_test_catalog_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_catalog_LDADD = $(UNIT_TEST_LIBS)
