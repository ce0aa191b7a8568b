#!/bin/sh
# tests/fuzz/fuzz.sh — the bounded fuzz check of `make check`: each libFuzzer harness of
# tests/fuzz/ runs over its seed corpus and regression inputs (tests/fuzz/corpus/<name>/:
# shipped files, and every input that once crashed) and then mutates for FUZZ_CHECK_TIME
# seconds (default 2); fuzz_h5 only replays its corpus: it reads in-process, where a random
# mutation can crash libhdf5 itself (doc/hdf5-layout.md, "Reading damaged files"), which
# `export` contains in its reader process; tests/h5mutate.sh mutates through `export`
# instead. One test per harness; a crash, sanitizer report, leak, timeout
# (-timeout=60 per input, generous for a loaded machine) or an input over 2 GiB of memory
# fails it, and the input is kept
# as tests/logs/fuzz/<name>-crash-… for `fuzz_<name> FILE` to replay.
# New inputs go to a scratch directory, never into the source tree.
# Without libFuzzer at configure time (STEPSIM_FUZZ=no) it prints a skip line that
# tests/run-tests.sh shows as SKIP, so a build without clang never passes it silently.
set -u
srcdir=${srcdir:-.}
builddir=${builddir:-.}
time=${FUZZ_CHECK_TIME:-2}
names="units hf_config scenario sweep h5"
if [ "${STEPSIM_FUZZ:-no}" != yes ]; then
  echo "fuzz harnesses not built: configure found no C compiler with libFuzzer (apt-get install clang; FUZZ_CC=clang ./configure)"
  echo "stepsim-tests: 0 passed, 0 failed, 5 skipped (no libFuzzer)"
  exit 0
fi
logs="$builddir/tests/logs/fuzz"
mkdir -p "$logs"
passed=0
failed=0
for h in $names; do
  bin="$builddir/tests/fuzz/fuzz_$h"
  corpus="$srcdir/tests/fuzz/corpus/$h"
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/stepsim-fuzz-$h.XXXXXX")
  if [ ! -x "$bin" ]; then
    echo "FAIL fuzz_$h: $bin was not built"
    failed=$((failed + 1))
  elif budget="-max_total_time=$time"; [ "$h" = h5 ] && budget="-runs=0"
    LSAN_OPTIONS="suppressions=$srcdir/tests/fuzz/lsan.supp" "$bin" $budget \
      -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$logs/$h-" \
      "$scratch" "$corpus" >"$logs/$h.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$h.log")
    if [ "$h" = h5 ]; then what="its corpus replayed"; else what="${runs:-?} executions in $time s"; fi
    echo "ok fuzz_$h: $what, $(ls "$corpus" | wc -l) seeds, no finding"
    passed=$((passed + 1))
  else
    echo "FAIL fuzz_$h: a finding (log: $logs/$h.log):"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written|deadly signal' "$logs/$h.log" | head -n 10
    failed=$((failed + 1))
  fi
  rm -rf "$scratch"
done
echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
