# Tests: CUnit binaries per module plus shell checks, all run by tests/run-tests.sh so that
# `make check` ends with one line "N passed, N failed".
noinst_LIBRARIES += tests/libstepsim_test.a
tests_libstepsim_test_a_SOURCES = tests/testlib.c tests/testlib.h
tests_libstepsim_test_a_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
UNIT_TEST_LIBS = tests/libstepsim_test.a $(STEPSIM_ALL_LIBS) $(CUNIT_LIBS)
UNIT_TEST_FLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)

# Shell checks: each prints "stepsim-tests: P passed, F failed" like the CUnit binaries.
SHELL_CHECKS = tests/layering.sh tests/cli.sh tests/runner.sh tests/cost.sh tests/h5mutate.sh tests/fuzz/fuzz.sh

include tests/unit/sim/local.mk
include tests/unit/sim/io.mk
include tests/unit/hardware/local.mk
include tests/unit/models/local.mk
include tests/unit/models/plan.mk
include tests/unit/models/memory.mk
include tests/unit/models/offload.mk
include tests/unit/cli/local.mk
include tests/unit/cli/batch.mk
include tests/unit/cli/dp.mk
include tests/fuzz/local.mk

EXTRA_DIST += tests/run-tests.sh $(SHELL_CHECKS) tests/rebuild.sh tests/mutation.py

check-local: $(check_PROGRAMS) stepsim$(EXEEXT) $(FUZZ_CHECK_BINS)
	@STEPSIM=$(abs_builddir)/stepsim srcdir=$(abs_srcdir) builddir=$(abs_builddir) \
	  STEPSIM_FUZZ=$(FUZZ_ENABLED) FUZZ_CHECK_TIME=$(FUZZ_CHECK_TIME) \
	  $(SHELL) $(srcdir)/tests/run-tests.sh $(check_PROGRAMS) $(addprefix $(srcdir)/,$(SHELL_CHECKS))
EXTRA_DIST += tests/fixtures/memory.tsv tests/golden/s1-summary.tsv tests/fixtures/measured-sample.tsv \
	tests/validation/measured/base-llama-1gpu.ini

clean-local:
	rm -rf tests/logs

# The validation cases: run by `stepsim validate`, installed for it.
validationdir = $(pkgdatadir)/validation
dist_validation_DATA = $(wildcard $(srcdir)/tests/validation/*.ini)
EXTRA_DIST += $(wildcard $(srcdir)/tests/validation/scale/*.ini) $(srcdir)/tests/validation/scale/README.md
