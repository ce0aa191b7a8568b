# tests/fuzz/: libFuzzer harnesses of every parser that reads user files (README, "Testing").
# They need clang with libFuzzer (configure: FUZZ_CC, AM_CONDITIONAL HAVE_FUZZ), so they are
# built by the rules below rather than as automake programs: every library source is compiled
# again with $(FUZZ_CC) into tests/fuzz/obj/ (coverage, ASan, UBSan) and archived, and each
# harness links against that archive.
#   make check  runs each harness for FUZZ_CHECK_TIME seconds over its seed corpus plus the
#               regression inputs (tests/fuzz/fuzz.sh; SKIP when configure found no libFuzzer)
#   make fuzz   runs each harness for FUZZ_TIME seconds (default 600), corpus growing in
#               tests/fuzz/work/<harness>/, and prints the executions reached.
FUZZ_NAMES = units hf_config scenario sweep h5
FUZZ_BINS = $(addprefix tests/fuzz/fuzz_,$(FUZZ_NAMES))
FUZZ_CHECK_TIME = 2
FUZZ_TIME = 600
# fuzz_h5 reads in-process, where libhdf5 itself crashes or loops on some corrupt metadata
# (doc/hdf5-layout.md, "Reading damaged files"): it runs in fork mode and keeps going, and
# its artifacts are triaged by their stack (ours: a bug to fix; libhdf5's: a regression
# input for tests/fuzz/corpus/h5-libhdf5, which `export` must contain).
FUZZ_MODE_h5 = -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1

EXTRA_DIST += tests/fuzz/fuzz.sh tests/fuzz/fuzz-common.h tests/fuzz/lsan.supp \
	$(addsuffix .c,$(FUZZ_BINS)) $(wildcard $(srcdir)/tests/fuzz/corpus/*/*)
CLEANFILES += $(FUZZ_BINS) tests/fuzz/libfuzz.a

if HAVE_FUZZ
FUZZ_ENABLED = yes
FUZZ_CHECK_BINS = $(FUZZ_BINS)
FUZZ_CFLAGS_ALL = -std=c11 -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	$(GLIB_CFLAGS) $(JSON_GLIB_CFLAGS) $(HDF5_CFLAGS)
FUZZ_CPPFLAGS_ALL = $(DEFS) -I$(top_builddir) $(AM_CPPFLAGS) $(CPPFLAGS)
FUZZ_LIB_SRCS = $(filter %.c,$(sim_libstepsim_sim_a_SOURCES) \
	$(hardware_libstepsim_hw_a_SOURCES) $(models_libstepsim_models_a_SOURCES) \
	$(cli_libstepsim_cli_a_SOURCES))
FUZZ_OBJECTS = $(patsubst %.c,tests/fuzz/obj/%.o,$(FUZZ_LIB_SRCS))

$(FUZZ_OBJECTS): tests/fuzz/obj/%.o: %.c config.h
	@mkdir -p $(@D)
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CPPFLAGS_ALL) $(FUZZ_CFLAGS_ALL) -MMD -MP -c -o $@ $<
-include $(FUZZ_OBJECTS:.o=.d)

tests/fuzz/libfuzz.a: $(FUZZ_OBJECTS)
	$(AM_V_AR)rm -f $@ && $(AR) $(ARFLAGS) $@ $(FUZZ_OBJECTS) && $(RANLIB) $@

$(FUZZ_BINS): tests/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz-common.h tests/fuzz/libfuzz.a
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CPPFLAGS_ALL) $(FUZZ_CFLAGS_ALL) -fsanitize=fuzzer \
	  -o $@ $< tests/fuzz/libfuzz.a $(JSON_GLIB_LIBS) $(HDF5_LIBS) $(GLIB_LIBS) $(LIBS)

fuzz-build: $(FUZZ_BINS)

# The long runs: nice'd, one harness after another, FUZZ_TIME seconds each.
fuzz: $(FUZZ_BINS)
	@for h in $(FUZZ_NAMES); do \
	  mkdir -p tests/fuzz/work/$$h tests/logs/fuzz; \
	  echo "fuzz_$$h: $(FUZZ_TIME) s ..."; \
	  mode=; if [ $$h = h5 ]; then mode="$(FUZZ_MODE_h5)"; fi; \
	  LSAN_OPTIONS=suppressions=$(abs_srcdir)/tests/fuzz/lsan.supp \
	  nice -n 19 tests/fuzz/fuzz_$$h $$mode -max_total_time=$(FUZZ_TIME) -timeout=60 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=tests/logs/fuzz/$$h- \
	    tests/fuzz/work/$$h $(srcdir)/tests/fuzz/corpus/$$h > tests/logs/fuzz/$$h.log 2>&1 \
	    || { echo "fuzz_$$h FAILED: see tests/logs/fuzz/$$h.log"; tail -n 40 tests/logs/fuzz/$$h.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::peak_rss_mb' \
	    tests/logs/fuzz/$$h.log | sed "s/^/  fuzz_$$h /"; \
	  grep -E '^#[0-9]+: cov' tests/logs/fuzz/$$h.log | tail -n 1 | sed "s/^/  fuzz_$$h (fork mode) /"; \
	  ls tests/logs/fuzz/$$h-* 2>/dev/null | sed "s/^/  to triage: /"; \
	done
else
FUZZ_ENABLED = no
FUZZ_CHECK_BINS =
fuzz fuzz-build:
	@echo "make fuzz: configure found no C compiler with libFuzzer (set FUZZ_CC=clang, apt-get install clang)"; exit 1
endif
.PHONY: fuzz fuzz-build

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/obj tests/fuzz/work
.PHONY: clean-fuzz
