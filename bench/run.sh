#!/bin/sh
# bench/run.sh BUILDDIR — runs the benchmarks and prints their results as TSV lines
# "name<TAB>value<TAB>unit", headed by the machine and date. Record them in bench/RESULTS.md.
# Benchmarks, not tests: nothing here passes or fails on speed.
set -eu
build=${1:-.}
src=$(cd "$(dirname "$0")/.." && pwd)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$build/bench/bench_engine"
# Wall time of the default scenario, best of 5 runs (HDF5 writing included).
tmp=$(mktemp -d)
best=""
for i in 1 2 3 4 5; do
  t0=$(date +%s.%N)
  "$build/stepsim" run "$src/scenarios/s1-llama-3.2-1b-fp32.ini" -o "$tmp/s1.h5" -q
  t1=$(date +%s.%N)
  best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { t = b - a; print (best == "" || t < best) ? t : best }')
done
rm -rf "$tmp"
printf 'default_scenario_wall_time\t%.4f\ts\n' "$best"
# Start-up alone: `stepsim --version`, best of 10 (dynamic loading and relocation of the
# shared libraries; configure.ac links libhdf5 statically for it).
best=""
for i in 1 2 3 4 5 6 7 8 9 10; do
  t0=$(date +%s.%N)
  "$build/stepsim" --version >/dev/null
  t1=$(date +%s.%N)
  best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { t = b - a; print (best == "" || t < best) ? t : best }')
done
printf 'startup_wall_time\t%.4f\ts\n' "$best"
# In-process medians of one step (bench/bench_step.c): the default scenario and the 8-GPU
# ZeRO-3 bench case (issue 17: <= 2 ms of simulation in-process).
"$build/bench/bench_step" "$src/scenarios/s1-llama-3.2-1b-fp32.ini" 50 | sed 's/^step_/s1_step_/'
"$build/bench/bench_step" "$src/bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini" 30 \
  | sed 's/^step_/dp8_step_/'
# Batch throughput: the 1,000-scenario sweep bench/sweep-1000.ini with -j 2, best of 3
# (loading, simulating, the HDF5 results file).
tmp=$(mktemp -d)
best=""
for i in 1 2 3; do
  t0=$(date +%s.%N)
  "$build/stepsim" batch "$src/bench/sweep-1000.ini" -j 2 -o "$tmp/b.h5" -q
  t1=$(date +%s.%N)
  best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { t = b - a; print (best == "" || t < best) ? t : best }')
done
printf 'batch_1000_wall_time_j2\t%.4f\ts\n' "$best"
awk -v t="$best" 'BEGIN { printf "batch_scenarios_per_second_j2\t%.0f\tscenario/s\n", 1000 / t }'
# The same sweep on one thread: user CPU of one run (robust to other work on the machine,
# which the wall times above are not), and the scenarios per CPU-second it implies.
/usr/bin/time -f '%U' -o "$tmp/cpu" "$build/stepsim" batch "$src/bench/sweep-1000.ini" -j 1 \
  -o "$tmp/b1.h5" -q
cpu=$(tail -n 1 "$tmp/cpu")
rm -rf "$tmp"
printf 'batch_1000_user_cpu_j1\t%s\ts\n' "$cpu"
awk -v t="$cpu" 'BEGIN { if (t > 0) printf "batch_scenarios_per_cpu_second\t%.0f\tscenario/s\n", 1000 / t }'
"$src/bench/bench_dp.sh" "$build"
