#!/bin/sh
# tests/run-tests.sh — runs every test program given as an argument (CUnit binaries and
# shell checks), keeps each one's output in tests/logs/<name>.log, and ends with the line
# "N passed, N failed" counting individual tests (", N skipped" added when a check could not
# run here: it prints "stepsim-tests: 0 passed, 0 failed, N skipped (why)" and shows as SKIP). <name> is a binary's path below
# tests/unit (models/test_paged and cli/test_paged are two tests) or a shell check's file
# name (cli.sh); the closing line is also written to tests/logs/total. A program that crashes or prints no
# "stepsim-tests:" line counts as one failed test. Exit status 1 if anything failed.
set -u
logdir=${builddir:-.}/tests/logs
mkdir -p "$logdir"
passed=0
failed=0
skipped=0
for prog in "$@"; do
  case "$prog" in
    *tests/unit/*) name=${prog##*tests/unit/} ;;
    *) name=$(basename "$prog") ;;
  esac
  log="$logdir/$name.log"
  mkdir -p "$(dirname "$log")"
  case "$prog" in
    *.sh) sh "$prog" >"$log" 2>&1 ;;
    *) "./$prog" >"$log" 2>&1 ;;
  esac
  rc=$?
  line=$(grep '^stepsim-tests: ' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    p=0; f=1
  else
    p=$(echo "$line" | sed 's/^stepsim-tests: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/')
    f=$(echo "$line" | sed 's/^stepsim-tests: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  fi
  s=$(echo "$line" | sed -n 's/^stepsim-tests: [0-9]* passed, [0-9]* failed, \([0-9]*\) skipped.*/\1/p')
  if [ "$f" -ne 0 ]; then status=FAIL
  elif [ -n "$s" ] && [ "$p" -eq 0 ]; then status=SKIP
  else status=PASS; fi
  if [ "$status" = SKIP ]; then
    printf 'SKIP: %s (%s skipped: %s)\n' "$name" "$s" "$(grep -v '^stepsim-tests: ' "$log" | head -n 1)"
    skipped=$((skipped + s))
  else
    printf '%s: %s (%s passed, %s failed)\n' "$status" "$name" "$p" "$f"
  fi
  if [ "$f" -ne 0 ]; then
    grep -E '^FAIL |FAILED|Assertion|error|ERROR|expected|lacks' "$log" | grep -v 'stepsim-tests:' | head -n 20 | sed 's/^/    /'
  fi
  passed=$((passed + p))
  failed=$((failed + f))
done
if [ "$skipped" -gt 0 ]; then
  total="$passed passed, $failed failed, $skipped skipped"
else
  total="$passed passed, $failed failed"
fi
# The closing line, also kept in tests/logs/total (.ci/run repeats it as its own last line).
echo "$total" | tee "$logdir/total"
[ "$failed" -eq 0 ]
