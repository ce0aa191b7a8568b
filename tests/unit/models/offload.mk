# tests/unit/models: CPU/NVMe offload — plan volumes, host/NVMe ledgers, host CPU and NVMe
# resources (test_offload), and the offload validation cases S6, S10, M7, M8 with the
# [offload] scenario group (test_offload_validation).
check_PROGRAMS += tests/unit/models/test_offload tests/unit/cli/test_offload_validation
tests_unit_models_test_offload_SOURCES = tests/unit/models/test_offload.c tests/unit/models/replay.h tests/unit/models/tiny.h
tests_unit_models_test_offload_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_offload_LDADD = $(UNIT_TEST_LIBS)
tests_unit_cli_test_offload_validation_SOURCES = tests/unit/cli/test_offload_validation.c
tests_unit_cli_test_offload_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_offload_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)

# Paged optimizer states (models/plan/plan_paged.h): placement, migration time and the two-pass
# spill of models/plan/simulate.c on tests/validation/paged-llama-3.2-1b.ini.
check_PROGRAMS += tests/unit/models/test_paged tests/unit/cli/test_paged
tests_unit_models_test_paged_SOURCES = tests/unit/models/test_paged.c tests/unit/models/tiny.h
tests_unit_models_test_paged_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_paged_LDADD = $(UNIT_TEST_LIBS)
tests_unit_cli_test_paged_SOURCES = tests/unit/cli/test_paged.c
tests_unit_cli_test_paged_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_paged_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
