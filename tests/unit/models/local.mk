# tests/unit/models: one CUnit binary per module of models/.
check_PROGRAMS += tests/unit/models/test_arch
tests_unit_models_test_arch_SOURCES = tests/unit/models/test_arch.c
tests_unit_models_test_arch_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_arch_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/models/test_cost
tests_unit_models_test_cost_SOURCES = tests/unit/models/test_cost.c tests/unit/models/cost_fixture.h
tests_unit_models_test_cost_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_cost_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/models/test_finetune
tests_unit_models_test_finetune_SOURCES = tests/unit/models/test_finetune.c tests/unit/models/cost_fixture.h
tests_unit_models_test_finetune_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_finetune_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += tests/unit/models/test_cost_framework
tests_unit_models_test_cost_framework_SOURCES = tests/unit/models/test_cost_framework.c tests/unit/models/cost_fixture.h
tests_unit_models_test_cost_framework_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_cost_framework_LDADD = $(UNIT_TEST_LIBS)
