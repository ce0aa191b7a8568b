#!/bin/sh
# tools/pgo-build.sh [CONFIGURE_ARG]… — the fastest build of this tree: -O3, link-time
# optimization (configure --enable-lto) and GCC's profile-guided optimization, trained on
# the shipped scenarios (scenarios/*.ini, one `stepsim run` each; not the bench cases).
# The 8-GPU bench step (bench/bench_step bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini) takes
# about a fifth less time than with the default -O2 (bench/RESULTS.md, 2026-12-07,
# h-period). The numbers it prints are the same: no flag here changes floating-point
# semantics (no -ffast-math; -std=c11 keeps contractions off).
#
# Run from anywhere, after `autoreconf -fi` (README, set-up command 1). It configures this
# tree twice (the CONFIGURE_ARGs go to both): first instrumented (-fprofile-generate), builds
# stepsim and runs the training set, whose counts GCC writes as .gcda files beside the
# objects; then with -fprofile-use, whose config.h differs, so `make` rebuilds every object
# and program from those counts. A later plain `./configure && make` rebuilds everything
# without them. Needs GCC (gcc-ar for --enable-lto's archives). Exits non-zero on the first
# failing step.
set -eu
cd "$(dirname "$0")/.."
base="-g -O3"
jobs=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/stepsim-pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
# stale counts of an earlier training would be merged into the new ones
find . -name '*.gcda' -exec rm -f {} +
./configure -q --enable-lto CFLAGS="$base -fprofile-generate" "$@"
make -j"$jobs" stepsim
n=0
for f in scenarios/*.ini; do
  ./stepsim run "$f" -q -o "$work/train.h5" >/dev/null
  n=$((n + 1))
done
echo "tools/pgo-build.sh: trained on $n scenarios"
./configure -q --enable-lto \
  CFLAGS="$base -fprofile-use -fprofile-partial-training -Wno-missing-profile" "$@"
make -j"$jobs"
echo "tools/pgo-build.sh: built with $(./stepsim --version | sed -n 's/^built with: //p')"
