#!/bin/sh
# tests/runner.sh — checks of tests/run-tests.sh itself: each test binary is named by its
# path below tests/unit (two test_paged in different folders are told apart, in the output
# and in their logs), and the last line stays exactly "N passed, N failed".
# Prints "stepsim-tests: P passed, F failed". Needs: srcdir (the source tree).
set -u
: "${srcdir:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok () { passed=$((passed + 1)); echo "ok   $1"; }
bad () { failed=$((failed + 1)); echo "FAIL $1"; }
check () { name=$1; shift; if "$@" >/dev/null 2>&1; then ok "$name"; else bad "$name"; fi; }

cd "$work" || exit 1
mkdir -p tests/unit/models tests/unit/cli
printf '#!/bin/sh\necho models-log\necho "stepsim-tests: 2 passed, 0 failed"\n' >tests/unit/models/test_paged
printf '#!/bin/sh\necho cli-log\necho "stepsim-tests: 1 passed, 1 failed"\nexit 1\n' >tests/unit/cli/test_paged
chmod +x tests/unit/models/test_paged tests/unit/cli/test_paged
builddir=. sh "$srcdir/tests/run-tests.sh" tests/unit/models/test_paged tests/unit/cli/test_paged \
  >out.txt 2>&1; rc=$?
check "a binary is named by its path below tests/unit" grep -qx 'PASS: models/test_paged (2 passed, 0 failed)' out.txt
check "the other test_paged has its own line" grep -qx 'FAIL: cli/test_paged (1 passed, 1 failed)' out.txt
check "the last line is exactly 'N passed, N failed'" test "$(tail -n 1 out.txt)" = "3 passed, 1 failed"
check "a failure makes the exit status 1" test "$rc" -eq 1
check "each keeps its own log" sh -c "grep -q models-log tests/logs/models/test_paged.log && grep -q cli-log tests/logs/cli/test_paged.log"

# A check that cannot run here (tests/fuzz/fuzz.sh without libFuzzer) shows as SKIP, is
# counted as skipped rather than passed, and the last line says so.
printf '#!/bin/sh\necho "no libFuzzer here"\necho "stepsim-tests: 0 passed, 0 failed, 5 skipped (no libFuzzer)"\n' >skip.sh
builddir=. sh "$srcdir/tests/run-tests.sh" tests/unit/models/test_paged skip.sh >skip.txt 2>&1; rc=$?
check "a skipped check shows as SKIP with its reason" grep -qx 'SKIP: skip.sh (5 skipped: no libFuzzer here)' skip.txt
check "skipped tests are counted on the last line" test "$(tail -n 1 skip.txt)" = "2 passed, 0 failed, 5 skipped"
check "skipping is not a failure" test "$rc" -eq 0

echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
