# tests/unit/models: the memory stack — allocator model (ledger, stack, arch and cost are in
# local.mk / plan.mk) and the BERT memory validation M1–M5.
check_PROGRAMS += tests/unit/models/test_allocator
tests_unit_models_test_allocator_SOURCES = tests/unit/models/test_allocator.c
tests_unit_models_test_allocator_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_allocator_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/cli/test_memory_validation
tests_unit_cli_test_memory_validation_SOURCES = tests/unit/cli/test_memory_validation.c
tests_unit_cli_test_memory_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_memory_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
EXTRA_DIST += $(wildcard $(srcdir)/tests/validation/*.ini)
