#!/bin/sh
# tests/cost.sh — training runs priced end to end: the summary's training-run block, the
# error band against the build's validation table (the median recomputed here from the
# table's rows), `fit --for cost` (an answer, "no plan meets it" with the fastest and the
# cheapest, usage errors), the shipped cost sweep and its chart.
# Prints "stepsim-tests: P passed, F failed". Needs: STEPSIM, srcdir, builddir.
set -u
: "${STEPSIM:?}" "${srcdir:?}" "${builddir:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok () { passed=$((passed + 1)); echo "ok   $1"; }
bad () { failed=$((failed + 1)); echo "FAIL $1"; }
check () { name=$1; shift; if "$@" >/dev/null 2>&1; then ok "$name"; else bad "$name"; fi; }
cd "$work" || exit 1

cat > small.ini <<EOF2
[model]
hf_config = llama-3.2-1b
[cluster]
node = DGX-A100
gpus_per_node = 2
[training]
micro_batch = 1
seq_len = 1024
precision = bf16_mixed
[plan]
tokens = 1e9
[cost]
gpu_hour = 2 USD/h
gpu_hour.H100-SXM = 3 USD/h
EOF2
"$STEPSIM" run small.ini -o small.h5 >small.out 2>&1
check "run: the summary has the training run" sh -c "grep -q '^training run' small.out && grep -q 'time to train' small.out && grep -q 'GPU-hours' small.out && grep -q 'cost .* USD' small.out && grep -q 'energy .* MWh' small.out"
"$STEPSIM" export small.h5 /summary >small.tsv 2>/dev/null
# A tiny run prints its GPU-hours, cost, days and energy with significant digits (whole
# numbers printed 1 token's 3e-8 GPU-hours as 0).
"$STEPSIM" run small.ini --set plan.tokens=1 -o tiny.h5 >tiny.out 2>&1
check "plan.tokens = 1: GPU-hours, cost, days and energy are not printed as 0" \
  sh -c "grep -Eq '^  GPU-hours +[0-9.]+e-[0-9]+\$' tiny.out && grep -Eq '^  cost +[0-9.]+e-[0-9]+ USD ' tiny.out && grep -Eq '^  time to train +[0-9.]+e-[0-9]+ d ' tiny.out && grep -Eq '^  energy +[0-9.]+e-[0-9]+ MWh ' tiny.out"
check "plan.tokens = 1e9: GPU-hours with three significant digits" \
  sh -c "grep -Eq '^  GPU-hours +[0-9]{2}\.[0-9]\$' small.out"
# A per-type price set from the command line: the group ends at the first dot (the last
# dot once made the group "cost.gpu_hour", an unknown group).
"$STEPSIM" run small.ini --set cluster.node=DGX-H100 --set "cost.gpu_hour.H100-SXM=4 USD/h" \
  -o typed-set.h5 >typed-set.out 2>&1; rc=$?
check "--set cost.gpu_hour.TYPE=…: prices that GPU type" \
  sh -c "[ $rc -eq 0 ] && grep -q 'cost .* USD  (4 USD/h per GPU)' typed-set.out"
# Every price is in one currency: a --set in another names the key it disagrees with and
# its currency (it once blamed the file's keys for the override's currency).
"$STEPSIM" run "$srcdir/scenarios/cost-llama-3.1-8b-dgx-h100.ini" -q -o cur.h5 \
  --set "cost.gpu_hour=2 EUR/h" >cur.out 2>cur.err; rc=$?
check "[cost]: a price in another currency names the key that set the first, exit 1" \
  sh -c "[ $rc -eq 1 ] && grep -q \"currency USD, where key 'gpu_hour' is in EUR\" cur.err && [ ! -e cur.h5 ]"
check "/summary: train_cost in USD, train_energy in J" sh -c "grep -q '^train_cost	.*	USD$' small.tsv && grep -q '^train_energy	.*	J$' small.tsv"

# Error band: the median |error| of the table's A100-80GB-SXM rows of step-time metrics.
table="$builddir/validation-band.tsv"
if [ -s "$table" ]; then
  want=$(awk -F'\t' 'NR > 1 && $2 == "A100-80GB-SXM" && ($3 == "step_time" || $3 == "tokens_per_s_per_gpu" || $3 == "mfu") { e = $6 < 0 ? -$6 : $6; printf "%.17g\n", e }' "$table" | sort -g |
         awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) printf "%.12g\n", v[(NR + 1) / 2]; else printf "%.12g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  got=$(awk -F'\t' '$1 == "band_step_time" { printf "%.12g\n", $2 }' small.tsv)
  n=$(awk -F'\t' 'NR > 1 && $2 == "A100-80GB-SXM" && ($3 == "step_time" || $3 == "tokens_per_s_per_gpu" || $3 == "mfu")' "$table" | wc -l)
  if [ "$want" = "$got" ] && [ "$n" -gt 0 ]; then ok "error band = median of the $n A100 validation rows ($got)"; else bad "error band: got $got, median of the rows $want"; fi
  check "the summary states the band with its case count" grep -q "step time ±.*median |error| of $n validation cases on A100-80GB-SXM" small.out
  # and the largest |error| among those rows, signed, in the text and /summary
  worst=$(awk -F'\t' 'NR > 1 && $2 == "A100-80GB-SXM" && ($3 == "step_time" || $3 == "tokens_per_s_per_gpu" || $3 == "mfu") { a = $6 < 0 ? -$6 : $6; if (a > m) { m = a; w = $6 } } END { printf "%.12g\n", w }' "$table")
  got_w=$(awk -F'\t' '$1 == "band_step_time_largest" { printf "%.12g\n", $2 }' small.tsv)
  [ "$worst" = "$got_w" ] && ok "band's largest error = the rows' largest |error|, signed ($got_w)" || bad "band largest: got $got_w, rows $worst"
  check "the summary names the largest error" grep -q "step time ±.*A100-80GB-SXM; largest [+-][0-9.]* %)" small.out
  "$STEPSIM" run small.ini --set cluster.node=HGX-B200 -q -o h.h5 >/dev/null 2>&1
  "$STEPSIM" run small.ini --set cluster.node=HGX-B200 -o h2.h5 >h.out 2>&1
  check "no case on a GPU type: said plainly" grep -q 'no validation case on B200-SXM' h.out
else
  bad "the build has a validation table ($table)"
fi

# OOM: nothing estimated.
"$STEPSIM" run small.ini --set model.hf_config=llama-3.1-70b --set training.precision=fp32 -o oom.h5 >oom.out 2>&1
check "OOM: the training run is not estimated" grep -q 'not estimated: the step does not fit' oom.out
"$STEPSIM" export oom.h5 /summary >oom.tsv 2>/dev/null
check "OOM: no train_cost in /summary" sh -c "! grep -q '^train_cost' oom.tsv"

# fit --for cost: an empty --gpus list is a usage error, not an empty search (QA: exit 0)
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus "" >empty.out 2>&1; rc=$?
check "fit --for cost --gpus '': usage error naming the option" \
  sh -c "[ $rc -eq 2 ] && grep -q 'fit: --gpus: an empty list' empty.out"
# fit --for cost: an answer, and a deadline nobody meets.
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus A100-80GB-SXM,H100-SXM --max-gpus 8 >fit.out 2>&1; rc=$?
check "fit --for cost: exit 0 with an answer" sh -c "[ $rc -eq 0 ] && grep -q '^answer: cheapest plan that meets 30 d = ' fit.out"
# -fcost (the value attached, as getopt reads it) is --for cost
"$STEPSIM" fit small.ini -fcost --deadline 30d --gpus A100-80GB-SXM,H100-SXM --max-gpus 8 \
  >fitf.out 2>&1
check "fit -fcost: the value attached is --for cost" cmp -s fit.out fitf.out
check "fit --for cost: says why candidates lost" sh -c "grep -q 'more than the answer' fit.out"
check "fit --for cost: the answer states its error band" grep -q '^  error band: step time' fit.out
# small.ini prices H100-SXM itself and everything else at gpu_hour: A100 is named as priced by
# the fallback, H100 is not
check "fit --for cost: names the types priced by the scenario's gpu_hour, not their own" \
  sh -c "grep -q '^  priced at the scenario.s gpu_hour or node_hour (no gpu_hour.TYPE for them): A100-80GB-SXM\$' fit.out"
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus A100-80GB-SXM --max-gpus 2 --set model.hf_config=llama-3.1-8b --set training.precision=fp32 >fitoom.out 2>&1; rc=$?
check "fit --for cost: an OOM candidate gives the need and the shortfall, as run does" \
  sh -c "[ $rc -eq 0 ] && grep -q 'OOM by [0-9.]* GiB: demands [0-9.]* GiB > capacity 80.00 GiB' fitoom.out && ! grep -q 'device-used of' fitoom.out"
"$STEPSIM" fit small.ini --for cost --deadline 1min --gpus A100-80GB-SXM,H100-SXM --max-gpus 4 >late.out 2>&1; rc=$?
check "fit --for cost: no plan meets it, with the fastest and the cheapest" sh -c "[ $rc -eq 0 ] && grep -q '^answer: no plan meets the deadline' late.out && grep -q '^  fastest: ' late.out && grep -q '^  cheapest: ' late.out && grep -q 'misses the deadline' late.out"
# counts and durations are printed as digits, not %g ("4.883e+05 steps", "3.65e+04 d"); the
# steps as computed: 1e9 tokens / 2048 a step is 488281.25 (QA: printed 488281, as if whole),
# train_steps whole
check "run: the training run's steps are digits, their fraction kept" \
  grep -q '^  tokens  *1,000,000,000  (488281.25 steps of 2048 tokens)$' small.out
"$STEPSIM" run small.ini --set plan.tokens= --set plan.train_steps=1000 -o ts.h5 >ts.out 2>&1
check "run: train_steps = 1000 prints 1000 steps" grep -q '(1000 steps of 2048 tokens)$' ts.out
"$STEPSIM" fit small.ini --for cost --deadline 36500d --gpus H100-SXM --max-gpus 1 --set plan.tokens=1e18 >late100y.out 2>&1
check "fit --for cost: a 36500 d deadline is echoed as 36500 d" \
  grep -q '^answer: no plan meets the deadline of 36500 d$' late100y.out
# a deadline below a minute is echoed in seconds (1s read "0.0167 min")
"$STEPSIM" fit small.ini --for cost --deadline 1s --gpus H100-SXM --max-gpus 1 >late1s.out 2>&1
check "fit --for cost: a 1 s deadline is echoed as 1 s" \
  sh -c "grep -q '^answer: no plan meets the deadline of 1 s\$' late1s.out && grep -q '> 1 s\$' late1s.out"
# Cost is not monotone in the GPU count, so every count is tried. Priced per node
# (node_hour), 1 to 8 GPUs of one DGX A100 all pay for the whole node: cost(n) = node_hour x
# time(n), which falls as n GPUs share the tokens, so one GPU (the smallest count that meets
# the deadline, where a search assuming GPU-hours grow with the count stops) costs about 8x
# the full node. Oracle: `run` at each allowed count (1, 2, 4, 8, 16) of the scenario as
# given; the answer (which may use another stack) costs at most the cheapest of them.
sed -e 's|^gpu_hour = 2 USD/h$|node_hour = 20 USD/h|' -e '/^gpu_hour.H100-SXM/d' small.ini >nodeprice.ini
best=""
for n in 1 2 4 8 16; do
  g=$n; [ "$g" -gt 8 ] && g=8
  "$STEPSIM" run nodeprice.ini -q -o np$n.h5 --set cluster.gpus_per_node=$g \
    --set cluster.nodes=$((n / g)) >/dev/null 2>&1
  c=$("$STEPSIM" export np$n.h5 /summary 2>/dev/null | awk -F'\t' '$1 == "train_cost" { print $2 }')
  best=$(awk -v b="${best:-inf}" -v c="${c:-inf}" 'BEGIN { print (c + 0 < b + 0 ? c : b) }')
done
"$STEPSIM" fit nodeprice.ini --for cost --deadline 30d --gpus A100-80GB-SXM --max-gpus 16 >np.out 2>&1
got=$(sed -n 's/^answer: cheapest plan that meets 30 d = .*, \([0-9.]*\) USD$/\1/p' np.out)
check "fit --for cost: every count is tried (node_hour: the full node beats 1 GPU; $got <= $best USD)" \
  awk -v g="${got:-inf}" -v b="${best:-0}" 'BEGIN { exit !(b > 0 && g + 0 <= b + 0.5) }'
# A node that is not a power of two GPUs: a GB200 NVL72 rack is tried whole (72 GPUs).
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus GB200 --max-gpus 144 >nvl.out 2>&1
check "fit --for cost: a 72-GPU rack is a count (x72, x144), not only powers of two" \
  sh -c "grep -q ' GB200 x72, as given ' nvl.out && grep -q ' GB200 x144, as given ' nvl.out"
# A layout whose unit is not a power of two (QA): tp 2 x pp 3 runs on multiples of 6 GPUs; the
# counts were 1, 2, 4, 8, none of which can run it, so "nothing fits" though 6 GPUs do; above
# --max-gpus the one line says which multiple the layout needs.
pp3="--set cluster.gpus_per_node=6 --set parallel.tp=2 --set parallel.pp=3 --set training.grad_accum=3"
# shellcheck disable=SC2086
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus A100-80GB-SXM --max-gpus 8 $pp3 \
  --set "parallel.layers_per_stage=6, 5, 5" >pp3.out 2>&1; rc=$?
check "fit --for cost with tp 2 x pp 3: counts are multiples of 6, the scenario's 6 GPUs the answer" \
  sh -c "[ $rc -eq 0 ] && ! grep -q 'does not divide' pp3.out && \
    grep -q '^answer: cheapest plan that meets 30 d = A100-80GB-SXM x6, as given: ' pp3.out"
# shellcheck disable=SC2086
"$STEPSIM" fit small.ini --for cost --deadline 30d --gpus A100-80GB-SXM --max-gpus 4 $pp3 \
  --set "parallel.layers_per_stage=6, 5, 5" >pp3b.out 2>&1; rc=$?
check "fit --for cost with a layout unit above --max-gpus: one line naming the multiple needed" \
  sh -c "[ $rc -eq 0 ] && grep -q 'needs a multiple of 6 GPUs (pp · lcm(tp·cp·dp_shard·dp_replicate, ep·etp)): none within --max-gpus 4' pp3b.out"
for args in "--deadline 30" "--deadline 30d --gpus X100" "" "--deadline 30d --max-gpus 0" \
            "--deadline 30d --gpus A100-80GB-SXM,H100-SXM,a100-80gb-sxm"; do
  # shellcheck disable=SC2086
  "$STEPSIM" fit small.ini --for cost $args >u.out 2>u.err; rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <u.err)" -eq 1 ]; then ok "fit --for cost $args: one usage error"; else bad "fit --for cost $args: usage error (exit $rc)"; cat u.err; fi
done
check "--deadline without a unit names the option" sh -c "'$STEPSIM' fit small.ini --for cost --deadline 30 2>&1 | grep -q -- '--deadline'"
check "a --gpus type given twice is named" sh -c "'$STEPSIM' fit small.ini --for cost --deadline 30d --gpus A100-80GB-SXM,a100-80gb-sxm 2>&1 | grep -q -- \"--gpus: 'a100-80gb-sxm' is in the list twice (as A100-80GB-SXM)\""
check "an unknown --gpus type names the option and the nearest" sh -c "'$STEPSIM' fit small.ini --for cost --deadline 30d --gpus B200 2>&1 | grep -q -- '--gpus.*B200-SXM'"
check "fit --help documents --for cost" sh -c "'$STEPSIM' fit --help | grep -q -- '--for cost'"
check "plot --help documents cost" sh -c "'$STEPSIM' plot --help | grep -q 'cost'"

# Cost and plan amounts are bounded: one error naming the key and its maximum, exit 1, no
# output file (1e300 used to print a 300-digit cost); the value is quoted (QA: tokens and pue
# were not).
for case in "cost.gpu_hour=1e8 USD/h|'gpu_hour'.*at most 10000000 USD/h" \
            "cost.fixed=1e300 USD|'fixed'.*at most 1e15 USD" \
            "cost.carbon_intensity=1e300 gCO2/kWh|'carbon_intensity'.*at most 10000 gCO2/kWh" \
            "plan.tokens=1e300|'tokens': '1e300' is outside .1, 1e18." \
            "cost.pue=9|'pue': '9' is outside .1, 5."; do
  set_arg=${case%%|*}; want=${case#*|}
  rm -f big.h5
  "$STEPSIM" run small.ini -o big.h5 --set "$set_arg" >big.out 2>big.err; rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l <big.err)" -eq 1 ] && grep -q "$want" big.err && [ ! -e big.h5 ]; then
    ok "bounded: $set_arg"
  else
    bad "bounded: $set_arg (exit $rc)"; cat big.err
  fi
done
sed 's|^gpu_hour = 2 USD/h$|node_hour = 1e300 USD/h|' small.ini >node.ini
check "bounded: node_hour" sh -c "'$STEPSIM' run node.ini -o s.h5 2>&1 | grep -q \"'node_hour'.*at most 10000000 USD/h\"; [ ! -e s.h5 ]"
sed 's|^gpu_hour.H100-SXM = 3 USD/h$|gpu_hour.H100-SXM = 2e7 USD/h|' small.ini >typed.ini
check "bounded: gpu_hour.TYPE (even for another type)" sh -c "'$STEPSIM' run typed.ini -o s.h5 2>&1 | grep -q \"'gpu_hour.H100-SXM'.*at most 10000000 USD/h\"; [ ! -e s.h5 ]"
sed 's/^tokens = 1e9$/train_steps = 1000000000001/' small.ini >steps.ini
check "bounded: train_steps above 1e12" sh -c "'$STEPSIM' run steps.ini -o s.h5 2>&1 | grep -q \"'train_steps': '1000000000001' is outside .1, 1000000000000.\"; [ ! -e s.h5 ]"
printf '[node.Big]\nbase = DGX-A100\noverhead_power = 1e300 W\n' >>small.ini
check "bounded: overhead_power above 100 kW" sh -c "'$STEPSIM' run small.ini -o s.h5 --set cluster.node=Big 2>&1 | grep -q \"group \\[node.Big\\], key 'overhead_power': '1e300 W' must be from 0 to 100 kW\""
sed -i '/^\[node.Big\]$/,$d' small.ini
"$STEPSIM" fit small.ini --for cost --deadline 1e300d >u.out 2>u.err; rc=$?
check "bounded: --deadline above 100 years is a usage error" sh -c "[ $rc -eq 2 ] && grep -q 'at most 36500 d' u.err"
"$STEPSIM" run small.ini -o huge.h5 --set plan.tokens=1e18 --set "cost.gpu_hour=1e7 USD/h" >huge.out 2>&1
check "the largest amounts print in exponent form, not as walls of digits" sh -c "grep -q '^  cost  *[0-9.]*e+[0-9]* USD' huge.out && ! grep -q '[0-9]\\{16\\}' huge.out"

# The shipped sweep and its chart (PNG and SVG).
sweep="$srcdir/scenarios/sweeps/cost-llama-by-gpu.ini"
if "$STEPSIM" batch "$sweep" -q -o cost.h5 --tsv cost.tsv 2>cost.err; then ok "cost sweep runs"; else bad "cost sweep runs"; cat cost.err; fi
check "cost sweep: 36 rows, the 70B OOMs somewhere, every fitting row priced" awk -F'\t' '
  NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { n++; if ($c["fits"] == 0) oom++; else if ($c["train_cost"] == "nan" || $c["train_cost"] + 0 <= 0) bad++ }
  END { exit !(n == 36 && oom > 0 && bad == 0) }' cost.tsv
"$STEPSIM" plot cost cost.h5 -o cost.png 2>plot.err; rc=$?
check "plot cost renders a PNG" sh -c "[ $rc -eq 0 ] && head -c 8 cost.png | od -c | grep -q 'P   N   G'"
"$STEPSIM" plot cost cost.h5 -o cost.svg 2>>plot.err
check "plot cost renders an SVG with the caption counting OOM rows" sh -c "grep -q '<svg' cost.svg && grep -q 'out of memory (OOM) left out' cost.svg"
"$STEPSIM" run small.ini -q -o run.h5 >/dev/null 2>&1
check "plot cost of a run file: exit 1 (a batch is needed)" sh -c "'$STEPSIM' plot cost run.h5 -o x.png; [ \$? -eq 1 ]"

echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
