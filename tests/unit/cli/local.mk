# tests/unit/cli: scenario loading (bad input) and the seed validation cases.
check_PROGRAMS += tests/unit/cli/test_scenario tests/unit/cli/test_validation
check_PROGRAMS += tests/unit/cli/test_ep_scenario
# [parallel] order: the rank order on pods, bad values.
check_PROGRAMS += tests/unit/cli/test_order_scenario
tests_unit_cli_test_order_scenario_SOURCES = tests/unit/cli/test_order_scenario.c tests/unit/cli/simulate.h
tests_unit_cli_test_order_scenario_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_order_scenario_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_ep_scenario_SOURCES = tests/unit/cli/test_ep_scenario.c
tests_unit_cli_test_ep_scenario_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_ep_scenario_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_scenario_SOURCES = tests/unit/cli/test_scenario.c
tests_unit_cli_test_scenario_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_scenario_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_validation_SOURCES = tests/unit/cli/test_validation.c tests/unit/cli/simulate.h
tests_unit_cli_test_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# LoRA / QLoRA against the seeds (S4, S7, S8) and the [finetune] group.
check_PROGRAMS += tests/unit/cli/test_finetune_validation
tests_unit_cli_test_finetune_validation_SOURCES = tests/unit/cli/test_finetune_validation.c tests/unit/cli/simulate.h tests/unit/models/cost_fixture.h
tests_unit_cli_test_finetune_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_finetune_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# Input files (cli/scenario/input.h): limits, binary files, printable messages.
check_PROGRAMS += tests/unit/cli/test_input
tests_unit_cli_test_input_SOURCES = tests/unit/cli/test_input.c
tests_unit_cli_test_input_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_input_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# [plan] and [cost]: the training-run estimate, the error band, the cost chart's data.
check_PROGRAMS += tests/unit/cli/test_training
tests_unit_cli_test_training_SOURCES = tests/unit/cli/test_training.c
tests_unit_cli_test_training_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_training_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# [training] framework, its overrides and deepspeed_config (cli/scenario/scenario_framework.c).
check_PROGRAMS += tests/unit/cli/test_framework_scenario
tests_unit_cli_test_framework_scenario_SOURCES = tests/unit/cli/test_framework_scenario.c
tests_unit_cli_test_framework_scenario_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_framework_scenario_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)

check_PROGRAMS += tests/unit/cli/test_mtp_scenario
tests_unit_cli_test_mtp_scenario_SOURCES = tests/unit/cli/test_mtp_scenario.c
tests_unit_cli_test_mtp_scenario_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_mtp_scenario_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# The least GPU memory at which a run fits (ModelSimResult.fits_from), on shipped scenarios.
check_PROGRAMS += tests/unit/cli/test_fits_from
tests_unit_cli_test_fits_from_SOURCES = tests/unit/cli/test_fits_from.c tests/unit/cli/simulate.h
tests_unit_cli_test_fits_from_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_fits_from_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# The process allocator's settings (cli/malloc_tuning.h): the heap in huge pages.
check_PROGRAMS += tests/unit/cli/test_malloc_tuning
tests_unit_cli_test_malloc_tuning_SOURCES = tests/unit/cli/test_malloc_tuning.c
tests_unit_cli_test_malloc_tuning_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_malloc_tuning_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
