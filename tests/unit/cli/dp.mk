# Data-parallel validation (published.md T9–T12, S3, S10), DP properties and the MPT family.
check_PROGRAMS += tests/unit/cli/test_dp_validation tests/unit/cli/test_dp_properties \
	tests/unit/models/test_arch_mpt
tests_unit_cli_test_dp_validation_SOURCES = tests/unit/cli/test_dp_validation.c
tests_unit_cli_test_dp_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_dp_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_cli_test_dp_properties_SOURCES = tests/unit/cli/test_dp_properties.c
tests_unit_cli_test_dp_properties_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_dp_properties_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
tests_unit_models_test_arch_mpt_SOURCES = tests/unit/models/test_arch_mpt.c
tests_unit_models_test_arch_mpt_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_arch_mpt_LDADD = $(UNIT_TEST_LIBS)
EXTRA_DIST += tests/validation/t9-mpt-7b-fsdp-8xa100.ini tests/validation/t10-mpt-13b-fsdp-8xa100.ini \
	tests/validation/t11-mpt-1b-fsdp-8xa100.ini tests/validation/t12-mpt-30b-fsdp-ckpt-8xa100.ini \
	tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini
# Tensor-parallel validation (published.md T3, Korthikanti's MFU formula).
check_PROGRAMS += tests/unit/cli/test_tp_validation
tests_unit_cli_test_tp_validation_SOURCES = tests/unit/cli/test_tp_validation.c
tests_unit_cli_test_tp_validation_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_tp_validation_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# Rank classes change no figure (issue 17): collapsed against full on the shipped scenarios.
check_PROGRAMS += tests/unit/cli/test_rank_classes
tests_unit_cli_test_rank_classes_SOURCES = tests/unit/cli/test_rank_classes.c
tests_unit_cli_test_rank_classes_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_rank_classes_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
# The plan's memos of passes and redistributions change no plan (issue 17).
check_PROGRAMS += tests/unit/cli/test_plan_memo
tests_unit_cli_test_plan_memo_SOURCES = tests/unit/cli/test_plan_memo.c
tests_unit_cli_test_plan_memo_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_cli_test_plan_memo_LDADD = cli/libstepsim_cli.a $(UNIT_TEST_LIBS)
