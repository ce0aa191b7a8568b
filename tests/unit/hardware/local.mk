# tests/unit/hardware: one CUnit binary per module of hardware/.

check_PROGRAMS += tests/unit/hardware/test_catalog
tests_unit_hardware_test_catalog_SOURCES = tests/unit/hardware/test_catalog.c
tests_unit_hardware_test_catalog_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_catalog_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/hardware/test_topology tests/unit/hardware/test_cluster \
	tests/unit/hardware/test_collective tests/unit/hardware/test_cluster_spec \
	tests/unit/hardware/test_collective_nccl
tests_unit_hardware_test_topology_SOURCES = tests/unit/hardware/test_topology.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_topology_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_topology_LDADD = $(UNIT_TEST_LIBS)
tests_unit_hardware_test_cluster_SOURCES = tests/unit/hardware/test_cluster.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_cluster_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_cluster_LDADD = $(UNIT_TEST_LIBS)
tests_unit_hardware_test_collective_SOURCES = tests/unit/hardware/test_collective.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_collective_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_collective_LDADD = $(UNIT_TEST_LIBS)
tests_unit_hardware_test_cluster_spec_SOURCES = tests/unit/hardware/test_cluster_spec.c
tests_unit_hardware_test_cluster_spec_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_cluster_spec_LDADD = $(UNIT_TEST_LIBS)
tests_unit_hardware_test_collective_nccl_SOURCES = tests/unit/hardware/test_collective_nccl.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_collective_nccl_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_collective_nccl_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/hardware/test_kernel
tests_unit_hardware_test_kernel_SOURCES = tests/unit/hardware/test_kernel.c
tests_unit_hardware_test_kernel_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_kernel_LDADD = $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/hardware/test_collective_tuner
tests_unit_hardware_test_collective_tuner_SOURCES = tests/unit/hardware/test_collective_tuner.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_collective_tuner_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_collective_tuner_LDADD = $(UNIT_TEST_LIBS)
# Rank classes' pieces: fluid fold, topology shift map, one collective instance per orbit.
check_PROGRAMS += tests/unit/hardware/test_symmetry
tests_unit_hardware_test_symmetry_SOURCES = tests/unit/hardware/test_symmetry.c \
	tests/unit/hardware/fixture.h
tests_unit_hardware_test_symmetry_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_hardware_test_symmetry_LDADD = $(UNIT_TEST_LIBS)
