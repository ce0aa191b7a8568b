#!/bin/sh
# tests/rebuild.sh — the README's test command really tests after set-up command 1 in the
# same tree: configuring with other flags (plain, then --enable-werror --enable-sanitizers)
# changes config.h, which every .c includes first, so objects built plain are rebuilt
# instrumented; configuring again with the same flags rebuilds nothing. Works on a copy of
# the tree (a configured one is `make distclean`ed there), building one object, so it takes
# two configure runs (~30 s): run by .ci/run, not by `make check`. Needs: srcdir (an
# autoreconf'ed tree; default: the directory above this script).
# Prints "stepsim-tests: P passed, F failed".
set -u
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok () { passed=$((passed + 1)); echo "ok   $1"; }
bad () { failed=$((failed + 1)); echo "FAIL $1"; }

cp -a "$srcdir" "$work/src" && cd "$work/src" || exit 1
rm -rf tests/logs
[ -f Makefile ] && make distclean >/dev/null 2>&1
obj=sim/units.o
./configure >conf1.log 2>&1 && make $obj >make1.log 2>&1 || { bad "plain configure and build of $obj"; cat conf1.log make1.log | tail -n 20; }
if nm $obj | grep -q '__asan_'; then bad "plain $obj is not instrumented"; else ok "plain $obj is not instrumented"; fi
cp config.h config.plain
./configure --enable-werror --enable-sanitizers >conf2.log 2>&1 || { bad "configure --enable-werror --enable-sanitizers"; tail -n 20 conf2.log; }
if cmp -s config.h config.plain; then bad "configure with sanitizers changes config.h"; else ok "configure with sanitizers changes config.h"; fi
# (`make -q` cannot tell: config.status is newer than stamp-h1 after any configure run, so
# make reruns it, which leaves an unchanged config.h alone; what counts is the object.)
sleep 1; touch marker1
make $obj >make2.log 2>&1
if [ $obj -nt marker1 ]; then ok "$obj is rebuilt after configuring with sanitizers"; else bad "$obj is rebuilt after configuring with sanitizers"; fi
if nm $obj | grep -q '__asan_' && nm $obj | grep -q '__ubsan_'; then ok "rebuilt $obj is instrumented (ASan and UBSan)"; else bad "rebuilt $obj is instrumented (ASan and UBSan)"; fi
./configure --enable-werror --enable-sanitizers >conf3.log 2>&1
sleep 1; touch marker2
make $obj >make3.log 2>&1
if [ $obj -nt marker2 ]; then bad "the same flags again rebuild nothing"; else ok "the same flags again rebuild nothing"; fi

echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
