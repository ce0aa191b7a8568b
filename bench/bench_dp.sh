#!/bin/sh
# bench/bench_dp.sh BUILDDIR — wall time to simulate data-parallel steps (HDF5 writing
# included), printed as TSV lines "name<TAB>value<TAB>unit" like bench/run.sh:
#   (a) Llama-3.1-8B ZeRO-3, GA 8, one DGX H100 (8 GPUs): best of 3 runs;
#   (b) Llama-3.1-70B FSDP full shard, 64 DGX H100 (512 GPUs), GA 2: one run;
#   (c) Llama-3.1-70B TP8 (+ SP) x DP16 (ZeRO-1), 16 DGX H100 (128 GPUs), GA 4: one run
#       (issue 14's "under a second" goal);
#   (d) Llama-3.1-405B TP8 x PP16 x DP128 (ZeRO-1), 2,048 DGX H100 (16,384 GPUs), GA 16, and
#       the same at 131,072 GPUs (DP 1024): user CPU, wall and peak RSS of one run each
#       (issue 17's 1 s / 1 GiB and 2 s goals).
# Also the tasks each plan holds (read back from the HDF5 file), for time per task.
# Benchmarks, not tests: nothing here passes or fails on speed.
set -eu
build=${1:-.}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wall NAME RUNS SCENARIO: best wall time of RUNS runs of SCENARIO.
wall () {
  best=""
  i=0
  while [ "$i" -lt "$2" ]; do
    t0=$(date +%s.%N)
    "$build/stepsim" run "$3" -o "$tmp/$1.h5" -q
    t1=$(date +%s.%N)
    best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { t = b - a; print (best == "" || t < best) ? t : best }')
    i=$((i + 1))
  done
  printf '%s_wall_time\t%.3f\ts\n' "$1" "$best"
  if command -v h5ls >/dev/null 2>&1; then
    n=$(h5ls "$tmp/$1.h5/tasks" | sed -n 's/.*{\([0-9]*\)\/.*/\1/p')
    printf '%s_tasks\t%s\ttasks\n' "$1" "$n"
  fi
}

wall dp_8gpu_zero3_ga8 3 "$src/bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini"
wall dp_512gpu_fsdp_ga2 1 "$src/bench/llama-3.1-70b-fsdp-64xdgx-h100.ini"
wall tp8_dp16_128gpu_ga4 1 "$src/bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini"

# (d): pipeline stages, rank classes inside each stage
for nodes in 2048 16384; do
  /usr/bin/time -f '%U %e %M' -o "$tmp/cost" "$build/stepsim" run \
    "$src/bench/llama-3.1-405b-tp8-pp16-dp128-2048xdgx-h100.ini" --set cluster.nodes=$nodes \
    -o "$tmp/pp.h5" -q >/dev/null
  read -r user wall_s rss_kb < "$tmp/cost"
  g=$((nodes * 8))
  printf 'pp16_%sgpu_user_cpu\t%s\ts\npp16_%sgpu_wall_time\t%s\ts\npp16_%sgpu_peak_rss\t%s\tKiB\n' \
    "$g" "$user" "$g" "$wall_s" "$g" "$rss_kb"
done

# Scaling of a symmetric job with the GPU count: (c) at 16, 64, 256, 1024 and 2048 nodes
# (128 to 16,384 GPUs), user CPU seconds of one run each (wall times depend on the load), and
# the exponent b of a least-squares fit cpu = a · gpus^b (b < 1: sub-linear).
fit=""
for nodes in 16 64 256 1024 2048; do
  /usr/bin/time -f '%U' -o "$tmp/cpu" "$build/stepsim" run \
    "$src/bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini" --set cluster.nodes=$nodes \
    -o "$tmp/scale.h5" -q >/dev/null
  cpu=$(tail -n 1 "$tmp/cpu")
  printf 'tp8_scale_%sgpu_user_cpu\t%s\ts\n' $((nodes * 8)) "$cpu"
  fit="$fit $((nodes * 8)) $cpu"
done
echo "$fit" | awk '{ n = 0; for (i = 1; i < NF; i += 2) { if ($(i + 1) <= 0) continue;
  x = log($i); y = log($(i + 1)); sx += x; sy += y; sxx += x * x; sxy += x * y; n++ }
  printf "tp8_scale_cpu_exponent\t%.2f\t1\n", (n * sxy - sx * sy) / (n * sxx - sx * sx) }'
