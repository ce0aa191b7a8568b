# Benchmarks: built by `make bench`, never run by `make check` (speed goals are not tests).
EXTRA_PROGRAMS = bench/bench_engine bench/bench_collective bench/bench_step
bench_bench_engine_SOURCES = bench/bench_engine.c
bench_bench_engine_LDADD = $(STEPSIM_ALL_LIBS)
bench_bench_collective_SOURCES = bench/bench_collective.c
bench_bench_collective_LDADD = $(STEPSIM_ALL_LIBS)
bench_bench_step_SOURCES = bench/bench_step.c
bench_bench_step_LDADD = cli/libstepsim_cli.a $(STEPSIM_ALL_LIBS)
EXTRA_DIST += bench/RESULTS.md bench/sweep-1000.ini
EXTRA_DIST += bench/bench_dp.sh bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini bench/llama-3.1-70b-fsdp-64xdgx-h100.ini \
	bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini bench/llama-3.1-405b-tp8-pp16-dp128-2048xdgx-h100.ini
bench: bench/bench_engine$(EXEEXT) bench/bench_collective$(EXEEXT) bench/bench_step$(EXEEXT) stepsim$(EXEEXT)
	$(srcdir)/bench/run.sh $(builddir)
	bench/bench_collective$(EXEEXT)
.PHONY: bench
