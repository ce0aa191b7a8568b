# tests/unit/models: stack, ledger, plan and executor (the integrator's modules).
check_PROGRAMS += tests/unit/models/test_stack tests/unit/models/test_ledger \
	tests/unit/models/test_plan tests/unit/models/test_executor tests/unit/models/test_parallel
tests_unit_models_test_stack_SOURCES = tests/unit/models/test_stack.c
tests_unit_models_test_stack_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_stack_LDADD = $(UNIT_TEST_LIBS)
tests_unit_models_test_ledger_SOURCES = tests/unit/models/test_ledger.c
tests_unit_models_test_ledger_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_ledger_LDADD = $(UNIT_TEST_LIBS)
tests_unit_models_test_plan_SOURCES = tests/unit/models/test_plan.c tests/unit/models/tiny.h
tests_unit_models_test_plan_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_plan_LDADD = $(UNIT_TEST_LIBS)
tests_unit_models_test_executor_SOURCES = tests/unit/models/test_executor.c tests/unit/models/tiny.h
tests_unit_models_test_executor_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_executor_LDADD = $(UNIT_TEST_LIBS)
tests_unit_models_test_parallel_SOURCES = tests/unit/models/test_parallel.c tests/unit/models/tiny.h
tests_unit_models_test_parallel_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_parallel_LDADD = $(UNIT_TEST_LIBS)
# The one simulation call of the plan layer (models/plan/simulate.h) on the tiny fixtures.
check_PROGRAMS += tests/unit/models/test_simulate
tests_unit_models_test_simulate_SOURCES = tests/unit/models/test_simulate.c tests/unit/models/tiny.h
tests_unit_models_test_simulate_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_simulate_LDADD = $(UNIT_TEST_LIBS)
# Framework profiles and the DeepSpeed ds_config reader (models/stack/framework.h, ds_config.h).
check_PROGRAMS += tests/unit/models/test_framework tests/unit/models/test_ds_config
tests_unit_models_test_framework_SOURCES = tests/unit/models/test_framework.c tests/unit/models/tiny.h
tests_unit_models_test_framework_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_framework_LDADD = $(UNIT_TEST_LIBS)
tests_unit_models_test_ds_config_SOURCES = tests/unit/models/test_ds_config.c
tests_unit_models_test_ds_config_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_ds_config_LDADD = $(UNIT_TEST_LIBS)
