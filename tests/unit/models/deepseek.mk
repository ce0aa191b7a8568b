# The DeepSeek-V2/V3 families (MLA, DeepSeekMoE, MTP count).
check_PROGRAMS += tests/unit/models/test_arch_deepseek
tests_unit_models_test_arch_deepseek_SOURCES = tests/unit/models/test_arch_deepseek.c
tests_unit_models_test_arch_deepseek_CFLAGS = $(UNIT_TEST_FLAGS)
tests_unit_models_test_arch_deepseek_LDADD = $(UNIT_TEST_LIBS)
