#!/bin/sh
# tests/batch.sh — end-to-end checks of `stepsim batch`, `fit`, `plot` and `run --trace`:
# exit codes and messages, results equal to single runs, -j 1 = -j 2 = mpirun -np 2 (byte
# for byte, when built with MPI), TSV/CSV export, a failing scenario, every chart kind from
# real files and every plot script from its fixture (PNG and SVG).
# Prints "stepsim-tests: P passed, F failed". Needs: STEPSIM (the binary), srcdir.
set -u
: "${STEPSIM:?}" "${srcdir:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok () { passed=$((passed + 1)); echo "ok   $1"; }
bad () { failed=$((failed + 1)); echo "FAIL $1"; }
check () { name=$1; shift; if "$@" >/dev/null 2>&1; then ok "$name"; else bad "$name"; fi; }
# A check that needs h5dump (hdf5-tools, in the set-up command) fails without it, never passes.
h5check () { if command -v h5dump >/dev/null 2>&1; then check "$@"; else bad "$1 (h5dump not found: apt-get install hdf5-tools)"; fi; }
expect_rc () { want=$1; name=$2; shift 2; "$@" >/dev/null 2>&1; rc=$?; [ "$rc" -eq "$want" ] && ok "$name" || bad "$name (exit $rc, wanted $want)"; }
is_png () { head -c 8 "$1" | od -c | grep -q 'P   N   G'; }
is_svg () { grep -q '<svg' "$1"; }

s1="$srcdir/scenarios/s1-llama-3.2-1b-fp32.ini"
cd "$work" || exit 1
cat > mb.ini <<EOF
[sweep]
scenario = $s1
name = S1 micro-batch
[axes]
training.micro_batch = 1:2
[baseline]
training.checkpointing = none
EOF
cat > fail.ini <<EOF
[sweep]
scenario = $s1
[axes]
training.precision = fp32, fp13
EOF
cat > typo.ini <<EOF
[sweep]
scenario = $s1
[axes]
training.micro_bach = 1, 2
EOF

# --- usage -----------------------------------------------------------------------------------
check "--help lists batch, fit and plot" sh -c "'$STEPSIM' --help | grep -q 'batch SWEEP.ini' && '$STEPSIM' --help | grep -q 'fit SCENARIO.ini' && '$STEPSIM' --help | grep -q 'plot memory'"
check "batch --help documents -j" sh -c "'$STEPSIM' batch --help | grep -q -- '--jobs'"
check "run --help documents --trace" sh -c "'$STEPSIM' run --help | grep -q -- '--trace'"
expect_rc 2 "batch without a sweep: exit 2" "$STEPSIM" batch
expect_rc 2 "batch -j 0: usage error" "$STEPSIM" batch mb.ini -j 0 -q -o j0.h5
expect_rc 2 "fit without --for: exit 2" "$STEPSIM" fit "$s1"
expect_rc 2 "fit --for nonsense: exit 2" "$STEPSIM" fit "$s1" --for colour
# fit limits: 0 and negatives alike, above the loader's caps, or given to another search
for args in "micro_batch --max-micro-batch 0" "micro_batch --max-micro-batch -5" \
            "micro_batch --max-micro-batch 65537" "seq_len --multiple-of 0" \
            "seq_len --max-seq-len 0" "seq_len --max-seq-len 99999999999" \
            "seq_len --max-seq-len 16777217" "seq_len --max-seq-len 64 --multiple-of 128" \
            "gpus --max-nodes 0" "gpus --max-gpus-per-node 0" "gpus --max-nodes 16385" "gpus --max-gpus-per-node 73" \
            "micro_batch --all" "seq_len --all" "gpus --all" "gpus --allow-finetune" \
            "micro_batch --max-nodes 2" "stack --max-seq-len 4096" "gpus --multiple-of 8"; do
  # shellcheck disable=SC2086
  "$STEPSIM" fit "$s1" --for $args >/dev/null 2>fitu.err; rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <fitu.err)" -eq 1 ]; then ok "fit --for $args: usage error"; else bad "fit --for $args: usage error (exit $rc)"; cat fitu.err; fi
done
# --for cost's own options given to another search say whose they are (QA: "unknown option")
for args in "stack --deadline 30d" "gpus --gpus H100-SXM" "micro_batch --max-gpus=4"; do
  # shellcheck disable=SC2086
  "$STEPSIM" fit "$s1" --for $args >/dev/null 2>fitu.err; rc=$?
  opt=${args#* }; opt=${opt%%[ =]*}
  if [ $rc -eq 2 ] && grep -qx "stepsim: fit: $opt applies to --for cost only" fitu.err; then
    ok "fit --for $args: cost's option named"; else bad "fit --for $args: cost's option named (exit $rc)"; cat fitu.err; fi
done
# ... and the other searches' options given to --for cost say whose they are
for args in "--all:stack" "--max-nodes=4:gpus" "--multiple-of 8:seq_len"; do
  opt=${args%%:*}; search=${args##*:}; name=${opt%%[ =]*}
  # shellcheck disable=SC2086
  "$STEPSIM" fit "$s1" --for cost --deadline 30d $opt >/dev/null 2>fitu.err; rc=$?
  if [ $rc -eq 2 ] && grep -qx "stepsim: fit: $name applies to --for $search only" fitu.err; then
    ok "fit --for cost $opt: the other search named"; else bad "fit --for cost $opt: the other search named (exit $rc)"; cat fitu.err; fi
done
expect_rc 2 "plot of an unknown kind: exit 2" "$STEPSIM" plot pie x.h5 -o x.png

"$STEPSIM" fit "$srcdir/scenarios/s4-llama-2-70b-lora-zero3-8xa100.ini" --for stack --allow-finetune --all \
  --set finetune.method=none --set offload.parameters=cpu >ftoff.out 2>&1
check "fit: LoRA candidates drop parameter offload (not modelled with LoRA) instead of failing" \
  sh -c "grep -q '^ *FITS *LoRA r 16' ftoff.out && grep -q '^ *FITS *QLoRA r 16' ftoff.out"
"$STEPSIM" fit "$s1" --for micro_batch --set cluster.node=DGX-A100 >/dev/null 2>fitset.err
check "fit: an error from --set names it as such" grep -qF "(with --set cluster.node=DGX-A100)" fitset.err

# --- batch -------------------------------------------------------------------------------------
if "$STEPSIM" batch mb.ini -j 2 -o mb.h5 --tsv mb.tsv --csv mb.csv >mb.out 2>mb.err; then ok "batch runs"; else bad "batch runs"; cat mb.err; fi
check "batch prints a results table with the penalty" grep -q 'penalty' mb.out
check "batch writes HDF5, TSV and CSV" test -s mb.h5 -a -s mb.tsv -a -s mb.csv
# a short option's value attached to it, as getopt reads it (QA: -j2 took the next argument,
# "-o", as its value): the same batch, the same table
"$STEPSIM" batch mb.ini -j2 -omb2.h5 >mb2.out 2>mb2.err; rc=$?
check "batch -j2 -oFILE: values attached to short options" \
  sh -c "[ $rc -eq 0 ] && test -s mb2.h5 && cmp -s mb.out mb2.out"
# The table's columns line up whatever their entries' lengths: a label past 40 characters, a
# two-digit step time and "baseline OOM" beside short ones (every line as long as the
# header, the figures right-aligned, "GiB" in one column).
cat > wide.ini <<EOF
[sweep]
scenario = $s1
[axes]
scenario.description = short, a description long enough to push the label past forty columns
training.micro_batch = 1, 16
[baseline]
training.checkpointing = none
EOF
"$STEPSIM" batch wide.ini -j 2 -o wide.h5 >wide.out 2>wide.err
check "batch table: columns line up with long labels and values" \
  awk 'NR == 1 { w = length($0); next }
     { n++; g = index($0, " GiB "); if (length($0) != w || (n > 1 && g != gib)) bad = 1; gib = g }
     END { exit bad || n != 4 || !gib || !w }' wide.out
check "batch table: 'baseline OOM' beside a penalty" \
  sh -c "grep -q 'baseline OOM\$' wide.out && grep -q ' [0-9.]*%\$' wide.out"
# a row out of memory has no penalty either: the table says OOM, /results holds NaN (QA: an
# OOM row showed 83 % while the chart said OOM). Micro-batch 16 without checkpointing is OOM.
printf '[sweep]\nscenario = %s\n[axes]\ntraining.micro_batch = 1, 16\n[baseline]\ntraining.micro_batch = 1\n' "$s1" >ownoom.ini
"$STEPSIM" batch ownoom.ini -o ownoom.h5 --set training.checkpointing=none >ownoom.out 2>/dev/null
"$STEPSIM" export ownoom.h5 /results >ownoom.tsv 2>/dev/null
check "batch: an OOM row's penalty is 'OOM' in the table and NaN in /results" \
  sh -c "grep -q 'micro_batch=16 *OOM .* OOM\$' ownoom.out && awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if (\$i == \"penalty\") c = i; next } /micro_batch=16/ { v = \$c } END { exit !(c && (v == \"nan\" || v == \"NaN\" || v == \"\")) }' ownoom.tsv"
# The results' pipeline_bubble is the run's (rank 0 waiting on other stages), not a 0 with
# pipeline stages; 0 without.
cat > ppb.ini <<EOF
[sweep]
scenario = $s1
[set]
cluster.gpus_per_node = 2
training.grad_accum = 4
[axes]
parallel.pp = 1, 2
EOF
"$STEPSIM" batch ppb.ini -j 2 -o ppb.h5 --tsv ppb.tsv >ppb.out 2>ppb.err
check "batch: pipeline_bubble 0 without pipeline stages, above 0 with pp = 2" \
  awk -F '\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
     { b[$c["parallel.pp"]] = $c["pipeline_bubble"] }
     END { exit !(c["pipeline_bubble"] && b[1] == 0 && b[2] > 0) }' ppb.tsv
check "plain progress lines when stderr is not a terminal" grep -q '^batch: 4 of 4 simulations done (100%), ETA' mb.err
h5check "h5dump reads the results table" sh -c "h5dump -H mb.h5 | grep -q 'DATASET \"results\"'"
h5check "sweep text stored in the file" sh -c "h5dump -a /sweep mb.h5 | grep -q micro_batch"
"$STEPSIM" export mb.h5 /results >export.tsv 2>/dev/null
check "--tsv equals the export of /results" cmp export.tsv mb.tsv
check "CSV has the same header, comma-separated" sh -c "[ \"\$(head -n 1 mb.csv | tr ',' '\t')\" = \"\$(head -n 1 mb.tsv)\" ]"
check "one row per scenario" test "$(wc -l <mb.tsv)" -eq 3
"$STEPSIM" batch mb.ini -j 1 -o j1.h5 -q 2>/dev/null
check "-j 1 and -j 2 write identical bytes" cmp j1.h5 mb.h5

# A key whose values have ':' in them takes its items as written, in [axes] and [zip]; ';'
# separates the stragglers of one value, as in a scenario (QA: '3:1.25' was refused as "not
# a range", "0:2, 5:7" ran ranks 0 to 7 without a factor, each scenario failing).
fsdp="$srcdir/scenarios/llama-3.1-8b-fsdp-2xdgx-h100.ini"
for g in axes zip; do
  printf '[sweep]\nscenario = %s\n[%s]\nrun.stragglers = 3:1.25, 0:1.1; 7:1.5\n' \
    "$fsdp" "$g" > strag-$g.ini
  "$STEPSIM" batch strag-$g.ini -q -o strag-$g.h5 --tsv strag-$g.tsv 2>strag-$g.err
  check "batch [$g]: run.stragglers items with ':' are values, two ok rows" awk -F'\t' '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { label[NR - 1] = $col["label"]; st = st $col["status"] " " }
    END { exit !(NR == 3 && label[1] == "stragglers=3:1.25" &&
                 label[2] == "stragglers=0:1.1; 7:1.5" && st == "ok ok ") }' strag-$g.tsv
done

# The shipped fine-tuning sweep: on the RTX 4090, full fine-tuning runs out of memory,
# LoRA and QLoRA fit, QLoRA in less memory.
if "$STEPSIM" batch "$srcdir/scenarios/sweeps/finetune-methods-by-gpu.ini" -q -o ft.h5 --tsv ft.tsv 2>ft.err; then ok "finetune sweep runs"; else bad "finetune sweep runs"; cat ft.err; fi
check "finetune sweep: 12 rows" test "$(wc -l <ft.tsv)" -eq 13
check "finetune sweep on RTX-4090: none OOM, lora and qlora fit, qlora smaller" awk -F'\t' '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["cluster.gpu"] == "RTX-4090" { fit[$col["finetune.method"]] = $col["fits"]; used[$col["finetune.method"]] = $col["device_used"] }
  END { exit !(fit["none"] == 0 && fit["lora"] == 1 && fit["qlora"] == 1 && used["qlora"] + 0 < used["lora"] + 0) }' ft.tsv

# The row of micro_batch 2 equals `stepsim run --set training.micro_batch=2` (same %.17g text).
"$STEPSIM" run "$s1" --set training.micro_batch=2 -o r2.h5 -q 2>/dev/null
"$STEPSIM" export r2.h5 /summary >r2.tsv 2>/dev/null
same=1
for m in step_time tokens_per_s device_used peak_allocated mfu peak_activations time_backward; do
  a=$(awk -F '\t' -v m="$m" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["training.micro_batch"] == 2 { print $c[m] }' mb.tsv)
  b=$(awk -F '\t' -v m="$m" '$1 == m { print $2 }' r2.tsv)
  [ -n "$a" ] && [ "$a" = "$b" ] || { same=0; echo "  $m: batch '$a' vs run '$b'"; }
done
[ $same -eq 1 ] && ok "batch row equals the single run" || bad "batch row equals the single run"

"$STEPSIM" batch fail.ini -o fail.h5 -q >fail.out 2>fail.err; rc=$?
[ $rc -eq 1 ] && ok "a failing scenario: exit 1" || bad "a failing scenario: exit 1 (got $rc)"
check "a failing scenario: 'N of M scenarios failed'" grep -q '^stepsim: 1 of 2 scenarios failed$' fail.err
check "a failing scenario: results still written" test -s fail.h5
# one error every scenario meets (a bad --set) is printed once, with the count (QA: once a
# scenario)
"$STEPSIM" batch mb.ini --set training.seq_len=0 -o allfail.h5 -q >/dev/null 2>allfail.err; rc=$?
check "a --set every scenario fails on: one line for the error, with the count" \
  sh -c "[ $rc -eq 1 ] && [ \$(grep -c \"key 'seq_len': '0' is outside\" allfail.err) -eq 1 ] && grep -q 'micro_batch=1 and 1 more scenarios: ' allfail.err && grep -q '^stepsim: 2 of 2 scenarios failed\$' allfail.err"
check "a failing scenario: its row holds the error" sh -c "'$STEPSIM' export fail.h5 /results | grep 'failed' | grep -q 'precision'"
check "a failing scenario: the other row ran" sh -c "'$STEPSIM' export fail.h5 /results | awk -F '\t' '\$3 == \"ok\"' | grep -q fp32"

check "a failing scenario: stderr names it and its key" grep -q "^stepsim: precision=fp13: .*key 'precision'" fail.err

# SIGTERM/SIGINT while the scenarios run: the rows finished so far are written, marked
# incomplete (status 'not run', root attribute 'incomplete', one line on stderr), no
# temporary file, the status of the signal. `env --default-signal` undoes the SIG_IGN a
# script gives its background jobs. 64 scenarios of ~15 ms each (an uninstrumented build,
# 2026-12-06): the signal, sent ~20 ms after the first row, must land while rows remain
# (with 8 rows, ~100 ms in all, a loaded machine could finish them first).
cat > long.ini <<EOF
[sweep]
scenario = $srcdir/scenarios/s3-llama-2-7b-zero3-8xa100.ini
[axes]
training.micro_batch = 1:8
training.seq_len = 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096
EOF
for sig in TERM INT; do
  # int.err is emptied here, not only by the background job's redirection: the loop below
  # may run before that job starts, and must not see the previous signal's progress lines.
  rm -rf int && mkdir int && : >int.err
  env --default-signal=INT,TERM "$STEPSIM" batch long.ini -j 1 -o int/long.h5 --tsv int/long.tsv >/dev/null 2>int.err & pid=$!
  n=0
  while [ $n -lt 3000 ] && ! grep -q '^batch: [1-9]' int.err; do n=$((n + 1)); sleep 0.02; done
  kill -s $sig $pid; wait $pid; rc=$?
  case $sig in TERM) want=143 ;; INT) want=130 ;; esac
  ran=$(awk -F '\t' '$3 == "ok"' int/long.tsv 2>/dev/null | wc -l)
  notrun=$(awk -F '\t' '$3 == "not run"' int/long.tsv 2>/dev/null | wc -l)
  if [ $rc -eq $want ] && [ "$ran" -ge 1 ] && [ "$notrun" -ge 1 ] && [ $((ran + notrun)) -eq 64 ] \
     && [ "$(ls -A int)" = "$(printf 'long.h5\nlong.tsv')" ] \
     && grep -q "^stepsim: interrupted by SIG$sig: $ran of 64 scenarios ran; the others are 'not run'; their rows are written to int/long.h5, int/long.tsv, marked incomplete\$" int.err
  then ok "SIG$sig during a batch: finished rows written, the others 'not run', exit $want"
  else bad "SIG$sig during a batch: finished rows written, the others 'not run', exit $want (exit $rc, $ran ok, $notrun not run, files: $(ls -A int))"; cat int.err; fi
  h5check "SIG$sig during a batch: the HDF5 file is marked incomplete" sh -c "h5dump -a /incomplete int/long.h5 | grep -q 'interrupted by SIG$sig: $ran of 64'"
done
"$STEPSIM" batch typo.ini -o typo.h5 >/dev/null 2>typo.err; rc=$?
[ $rc -eq 1 ] && ok "unknown axis key: exit 1" || bad "unknown axis key: exit 1 (got $rc)"
check "unknown axis key: message names file, group, key and hint" sh -c "grep -q \"typo.ini: group \\[axes\\], key 'training.micro_bach'.*micro_batch\" typo.err"
# a range bound that is no finite number is refused naming file, group and key, nothing
# written (QA: nan:3 was taken as a value)
printf '[sweep]\nscenario = %s\n[axes]\ntraining.micro_batch = nan:3\n' "$s1" >nanr.ini
"$STEPSIM" batch nanr.ini -q -o nanr.h5 >/dev/null 2>nanr.err; rc=$?
check "a range 'nan:3': refused naming file, group, key and the bound, no file" \
  sh -c "[ $rc -eq 1 ] && ! test -e nanr.h5 && grep -q \"nanr.ini: group \\[axes\\], key 'training.micro_batch': range 'nan:3': FIRST 'nan' is not a finite number\" nanr.err"
check "unknown axis key: nothing written" test ! -e typo.h5

# Outputs never replace an input: the sweep, its base scenario, an hf_config JSON a scenario
# names (base, axis, baseline or --set).
cp "$s1" base.ini
cp "$srcdir/models/configs/llama-3.2-1b.json" cfg.json
cp cfg.json cfg.orig
cp base.ini base.orig
printf '[sweep]\nscenario = base.ini\n[axes]\ntraining.micro_batch = 1, 2\n' >in-sweep.ini
printf '[sweep]\nscenario = base.ini\n[axes]\nmodel.hf_config = llama-3.2-1b, cfg.json\n' >in-axis.ini
printf '[sweep]\nscenario = base.ini\n[axes]\ntraining.micro_batch = 1, 2\n[baseline]\nmodel.hf_config = cfg.json\n' >in-base.ini
for args in "in-sweep.ini -o base.ini" "in-sweep.ini --tsv base.ini" "in-sweep.ini --csv ./base.ini" \
            "in-sweep.ini -o in-sweep.ini" "in-axis.ini -o cfg.json" "in-base.ini --tsv cfg.json" \
            "in-sweep.ini --csv cfg.json --set model.hf_config=cfg.json"; do
  # shellcheck disable=SC2086
  "$STEPSIM" batch -q -o in.h5 $args >/dev/null 2>in.err; rc=$?
  if [ $rc -eq 1 ] && grep -q 'is the input' in.err && cmp -s base.ini base.orig && cmp -s cfg.json cfg.orig; then
    ok "batch output onto an input refused: $args"
  else bad "batch output onto an input refused: $args (exit $rc)"; cp base.orig base.ini; cp cfg.orig cfg.json; fi
done
check "batch output onto an input: nothing written" test ! -e in.h5

# --- sweeps that cannot run as written: one error naming file, group and key; nothing written ---
cat > twice.ini <<EOF
[sweep]
scenario = $s1
[axes]
training.micro_batch = 1, 2
[zip]
training.micro_batch = 4, 8
EOF
cat > setaxis.ini <<EOF
[sweep]
scenario = $s1
[set]
training.seq_len = 1024
[axes]
training.seq_len = 512, 2048
EOF
cat > badbase.ini <<EOF
[sweep]
scenario = $s1
[axes]
training.checkpointing = none, full
[baseline]
training.micro_batch = 0
EOF
expect_nothing () {  # want-rc name needle command…: exit, one line naming `needle`, no file, no CRITICAL
  want=$1; name=$2; needle=$3; shift 3
  rm -f nw.h5 nw.tsv
  "$@" -o nw.h5 --tsv nw.tsv >/dev/null 2>nw.err; rc=$?
  if [ "$rc" -eq "$want" ] && [ "$(wc -l <nw.err)" -eq 1 ] && grep -qF -- "$needle" nw.err \
     && ! grep -q CRITICAL nw.err && ! test -e nw.h5 && ! test -e nw.tsv; then ok "$name"
  else bad "$name (exit $rc, wanted $want)"; cat nw.err; fi
}
expect_nothing 1 "batch /dev/zero: refused at once" "/dev/zero: not a regular file of at most 16 MiB" timeout 60 "$STEPSIM" batch /dev/zero
expect_nothing 1 "a key in [axes] and [zip]: exit 1" "twice.ini: group [zip], key 'training.micro_batch': already given in group [axes]" "$STEPSIM" batch twice.ini
expect_nothing 1 "a key in [set] and [axes]: exit 1" "setaxis.ini: group [axes], key 'training.seq_len': already given in group [set]" "$STEPSIM" batch setaxis.ini
expect_nothing 1 "a failing baseline: exit 1 before writing" "badbase.ini [baseline]: the baseline of scenario 'checkpointing=none' failed: " "$STEPSIM" batch badbase.ini -q
check "a failing baseline: its error is named" grep -qF "(with badbase.ini [baseline] training.micro_batch=0): group [training], key 'micro_batch'" nw.err
# --set baseline.group.key=value is the baseline's (README), applied after its [baseline]:
# mb.ini's baseline turns checkpointing off; set back to S1's full, the baseline of each
# point is the point itself, so its throughput column equals the point's (penalty 0), and
# without the --set it does not.
tok_cols='NR==1{for(i=1;i<=NF;i++){if($i=="tokens_per_s")a=i;if($i=="baseline_tokens_per_s")b=i}}'
"$STEPSIM" batch mb.ini -q -o bl0.h5 --tsv bl0.tsv >/dev/null 2>&1
"$STEPSIM" batch mb.ini -q -o bl1.h5 --tsv bl1.tsv --set baseline.training.checkpointing=full >/dev/null 2>&1
check "--set baseline.*: the baseline's, after [baseline]" awk -F'\t' "$tok_cols"' NR>1{if($a!=$b)exit 1;n++} END{exit n!=2}' bl1.tsv
check "--set baseline.*: without it the sweep's [baseline] holds" awk -F'\t' "$tok_cols"' NR>1{if($a==$b)exit 1;n++} END{exit n!=2}' bl0.tsv
expect_nothing 1 "--set baseline.* naming no key: one error, nothing written" "--set baseline.bogus.tp=3: group [baseline], key 'bogus.tp': unknown group" "$STEPSIM" batch mb.ini -q --set baseline.bogus.tp=3
expect_nothing 1 "--set naming no scenario key: one error for the batch, nothing written" "(with --set training.micro_bach=2): group [training], key 'micro_bach': unknown key" "$STEPSIM" batch mb.ini -q --set training.micro_bach=2
expect_nothing 1 "--set baseline.baseline.*: one error, nothing written" "a baseline override names a scenario key, not one of [baseline] itself" "$STEPSIM" batch mb.ini -q --set baseline.baseline.training.micro_batch=2
printf '[sweep]\nscenario = %s\n[axes]\ntraining.micro_batch = 1, 2\n[baseline]\nbaseline.training.micro_batch = 2\n' "$s1" >nested.ini
expect_nothing 1 "a sweep's [baseline] naming [baseline]: refused (it was ignored)" "nested.ini: group [baseline], key 'baseline.training.micro_batch': a baseline override names" "$STEPSIM" batch nested.ini -q
expect_nothing 1 "--set of a misspelt [gpu.NAME] key: one error for the batch" "group [gpu.NEW], key 'memoryx': unknown key" "$STEPSIM" batch mb.ini -q --set gpu.NEW.memoryx=1
# --set that together define a [gpu.NAME] (base, memory) are one group, judged together as
# run judges them (QA: batch checked each alone, "key 'hbm_bandwidth' is required"), also
# when the sweep's [set] begins the group; one that is incomplete is still refused, by both
gx="--set gpu.X.base=A100-80GB-SXM --set cluster.gpu=X"
# shellcheck disable=SC2086
"$STEPSIM" batch mb.ini -q $gx --set "gpu.X.memory=40 GiB" -o gx.h5 --tsv gx.tsv 2>gx.err; rc=$?
cap='NR==1{for(i=1;i<=NF;i++)if($i=="capacity")c=i} NR>1{if($c!=42949672960)exit 1;n++} END{exit n!=2}'
check "batch: --set gpu.X.base + gpu.X.memory + cluster.gpu=X: runs on the 40 GiB X" \
  sh -c "[ $rc -eq 0 ] && [ ! -s gx.err ] && awk -F'\t' '$cap' gx.tsv"
# shellcheck disable=SC2086
"$STEPSIM" run "$s1" -q $gx --set "gpu.X.memory=40 GiB" -o gxr.h5 >/dev/null 2>gxr.err; rc=$?
check "run: the same --set run" sh -c "[ $rc -eq 0 ] && [ ! -s gxr.err ]"
printf '[sweep]\nscenario = %s\n[set]\ngpu.X.base = A100-80GB-SXM\n[axes]\ntraining.micro_batch = 1, 2\n' "$s1" >gxset.ini
"$STEPSIM" batch gxset.ini -q --set "gpu.X.memory=40 GiB" --set cluster.gpu=X -o gxs.h5 --tsv gxs.tsv 2>gxs.err; rc=$?
check "batch: a --set completing the sweep's [set] gpu.X.base: runs" \
  sh -c "[ $rc -eq 0 ] && [ ! -s gxs.err ] && awk -F'\t' '$cap' gxs.tsv"
gxmiss="(with --set gpu.X.memory=40 GiB): group [gpu.X]: key 'hbm_bandwidth' is required when no 'base' GPU is given"
expect_nothing 1 "batch: an incomplete [gpu.X] of --set: one error naming group and key" "$gxmiss" \
  "$STEPSIM" batch mb.ini -q --set "gpu.X.memory=40 GiB" --set cluster.gpu=X
"$STEPSIM" run "$s1" -q --set "gpu.X.memory=40 GiB" --set cluster.gpu=X -o gxr2.h5 >/dev/null 2>gxr2.err; rc=$?
check "run: an incomplete [gpu.X] of --set: exit 1, one error naming group and key" \
  sh -c "[ $rc -eq 1 ] && [ \$(wc -l <gxr2.err) -eq 1 ] && grep -qF \"$gxmiss\" gxr2.err && [ ! -e gxr2.h5 ]"
expect_rc 1 "run: a [baseline] key of no group is refused (not ignored)" "$STEPSIM" run "$s1" -q -o rb.h5 --set baseline.bogus.tp=3
expect_rc 1 "run: a [baseline] key misspelt is refused" "$STEPSIM" run "$s1" -q -o rb.h5 --set baseline.training.micro_bach=2
check "fit --for stack: --set baseline.* is the baseline" sh -c "'$STEPSIM' fit '$s1' --for stack --set baseline.training.checkpointing=none | grep -q 'vs baseline'"
# the searches other than stack run no baseline: a baseline.* set is said to do nothing (QA)
"$STEPSIM" fit "$s1" --for micro_batch --set baseline.training.micro_batch=0 >/dev/null 2>fitnb.err
check "fit --for micro_batch --set baseline.*: warned, no effect" grep -q "stepsim fit: warning: --set baseline.training.micro_batch=0: has no effect here" fitnb.err
# a baseline that cannot run is bad input, as under batch (README; QA: micro_batch=0 was a
# note and exit 0)
"$STEPSIM" fit "$s1" --for stack --set baseline.parallel.tp=3 >/dev/null 2>fitbl.err; rc=$?
check "fit --for stack: a [baseline] that cannot run: exit 1, one message naming it" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <fitbl.err) -eq 1 ] && grep -q 'the baseline cannot run: .*(with \[baseline\] and --set baseline.\* parallel.tp=3)' fitbl.err"
expect_nothing 2 "batch --set of an axis: exit 2" "--set 'training.micro_batch=3': training.micro_batch is an axis of mb.ini ([axes])" "$STEPSIM" batch mb.ini --set training.micro_batch=3
expect_nothing 2 "batch --set with a bad key: exit 2" "--set 'training.micro[batch=2': key 'micro[batch'" "$STEPSIM" batch mb.ini --set "training.micro[batch=2"
if "$STEPSIM" batch mb.ini -q -o sp.h5 --set "training.grad_accum = 2" 2>sp.err; then ok "batch --set with spaces runs"; else bad "batch --set with spaces runs"; cat sp.err; fi

# --- MPI (when stepsim is built with Open MPI and mpirun is here) ----------------------------
# The binary does not link Open MPI: its module (--version names it) is opened under mpirun
# alone, so a plain run does not pay for loading libmpi.
mpimod=$("$STEPSIM" --version | sed -n 's|^MPI batches: \(/.*\)|\1|p')
check "stepsim does not link libmpi" sh -c "! ldd '$STEPSIM' | grep -q libmpi"
if [ -n "$mpimod" ]; then
  check "--version names an MPI module that links libmpi" sh -c "ldd '$mpimod' | grep -q libmpi"
  # launched by mpirun (its variables, faked) without a loadable module: exit 1, one
  # message naming the module, no output written, MPI never started
  OMPI_COMM_WORLD_SIZE=1 STEPSIM_MPI_MODULE="$PWD/nomodule.so" "$STEPSIM" batch mb.ini -o nomod.h5 -q >/dev/null 2>nomod.err; rc=$?
  check "under mpirun, a missing MPI module: exit 1, one message naming it, no file" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <nomod.err) -eq 1 ] && grep -q 'MPI module cannot be loaded: .*nomodule.so' nomod.err && [ ! -e nomod.h5 ]"
  libz=$(ldd "$STEPSIM" | awk '/libz\.so/ { print $3; exit }')
  OMPI_COMM_WORLD_SIZE=1 STEPSIM_MPI_MODULE="$libz" "$STEPSIM" batch mb.ini -o nomod.h5 -q >/dev/null 2>notmod.err; rc=$?
  check "under mpirun, a library that is not the MPI module: exit 1, named" sh -c "[ $rc -eq 1 ] && grep -qF '$libz is not this stepsim' notmod.err && [ ! -e nomod.h5 ]"
fi
if command -v mpirun >/dev/null 2>&1 && [ -n "$mpimod" ] && [ -f "$mpimod" ]; then
  if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp \
     ASAN_OPTIONS=detect_leaks=0 mpirun -np 2 --oversubscribe "$STEPSIM" batch mb.ini -j 1 -o mpi.h5 -q >mpi.out 2>&1; then
    ok "mpirun -np 2 batch runs"
  else
    bad "mpirun -np 2 batch runs"; tail -n 20 mpi.out
  fi
  check "mpirun -np 2 writes the same bytes as -j 1" cmp mpi.h5 j1.h5
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp \
    ASAN_OPTIONS=detect_leaks=0 mpirun -np 2 --oversubscribe "$STEPSIM" batch typo.ini -o mpityp.h5 -q >/dev/null 2>mpityp.err
  check "mpirun -np 2: a sweep error is printed once" test "$(grep -c "typo.ini: group \[axes\]" mpityp.err)" -eq 1
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp \
    ASAN_OPTIONS=detect_leaks=0 mpirun -np 2 --oversubscribe "$STEPSIM" batch mb.ini -j -1 >/dev/null 2>mpiusage.err
  check "mpirun -np 2: a usage error is printed once" test "$(grep -c "^stepsim: batch: -j" mpiusage.err)" -eq 1
  # a scenario warning is printed once, not once a process (QA), and rank 0's progress says
  # it is its share
  printf '[sweep]\nscenario = %s\n[axes]\ntraining.micro_batch = 1, 2\n[baseline]\ntraining.host_sync_micro_batch = true\n' "$s1" >mpiwarn.ini
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp \
    ASAN_OPTIONS=detect_leaks=0 mpirun -np 2 --oversubscribe "$STEPSIM" batch mpiwarn.ini -o mpiwarn.h5 >/dev/null 2>mpiwarn.err
  check "mpirun -np 2: a scenario warning is printed once" test "$(grep -c "key 'host_sync_micro_batch': has no effect" mpiwarn.err)" -eq 1
  check "mpirun -np 2: progress names rank 0's share" grep -q "rank 0's share of 2 over 2 MPI processes" mpiwarn.err
else
  echo "skip MPI checks (stepsim built without MPI, or no mpirun)"
fi

# --- fit -----------------------------------------------------------------------------------------
"$STEPSIM" fit "$s1" --for micro_batch --set gpu.Small.base=A100-80GB-SXM --set "gpu.Small.memory=30 GiB" --set cluster.gpu=Small >fit.out 2>fit.err; rc=$?
[ $rc -eq 0 ] && ok "fit --for micro_batch runs" || { bad "fit --for micro_batch runs (exit $rc)"; cat fit.err; }
check "fit names the answer" grep -q '^answer: largest micro_batch that fits = [0-9]' fit.out
check "fit says why a candidate was rejected" grep -q 'OOM by .*largest category at the peak' fit.out
"$STEPSIM" fit "$srcdir/scenarios/llama-3.1-8b-bf16-h100.ini" --for stack --all --allow-finetune >stack.out 2>&1; rc=$?
[ $rc -eq 0 ] && ok "fit --for stack runs" || { bad "fit --for stack runs (exit $rc)"; cat stack.out; }
check "fit --for stack --allow-finetune tries LoRA and QLoRA" sh -c "grep -q '^ *[A-Z]* *LoRA r 16' stack.out && grep -q '^ *[A-Z]* *QLoRA r 16' stack.out && ! grep -q 'not feasible' stack.out"
check "fit --for stack on one GPU tries no ZeRO stage (they shard over ranks)" sh -c "! grep -q '+ ZeRO-' stack.out"
check "fit --for stack shows throughput relative to the scenario as given (as given: x1.00)" sh -c "grep -q 'saves (vs as given)  throughput' stack.out && grep -q '^ *[A-Z]* *as given .* x1\\.00 *+0 %\$' stack.out"
"$STEPSIM" fit "$s1" --for gpus --set training.micro_batch=64 --max-nodes 2 >gpus.out 2>&1; rc=$?
[ $rc -eq 0 ] && ok "fit --for gpus runs" || bad "fit --for gpus runs (exit $rc)"
check "fit --for gpus treats multi-GPU as not feasible" grep -q 'not feasible' gpus.out

# --- trace ---------------------------------------------------------------------------------------
if "$STEPSIM" run "$s1" -o tr.h5 -q --trace tr.json 2>tr.err; then ok "run --trace writes"; else bad "run --trace writes"; cat tr.err; fi
check "trace has events, rank track and memory counters" sh -c "grep -q '\"traceEvents\"' tr.json && grep -q '\"rank 0\"' tr.json && grep -q '\"memory weights\"' tr.json"
expect_rc 1 "trace to an unwritable path: exit 1" "$STEPSIM" run "$s1" -o tr2.h5 -q --trace /nonexistent-dir/t.json

# --- charts from real files ------------------------------------------------------------------------
for k in memory gantt breakdown steptime; do
  if "$STEPSIM" plot $k tr.h5 -o run-$k.png 2>err.txt && is_png run-$k.png; then ok "plot $k of a run (PNG)"; else bad "plot $k of a run (PNG)"; cat err.txt; fi
done
# Recompute tasks (s1 checkpoints fully) have a legend entry and a colour of their own.
"$STEPSIM" plot gantt tr.h5 -o run-gantt.svg 2>/dev/null
check "gantt: recompute has its own legend entry and colour" \
  awk '/<title>/ { k = $0; sub(/.*<title>/, "", k); sub(/<\/title>.*/, "", k); next }
     k != "" && /fill = .rgb/ { f = $0; sub(/.*fill = ./, "", f); sub(/. fill-opacity.*/, "", f)
                                col[k] = f; k = "" }
     END { if (!("recompute" in col) || !("backward" in col)) exit 1
           for (x in col) if (x != "recompute" && col[x] == col["recompute"]) exit 1 }' \
  run-gantt.svg
for k in breakdown steptime penalty; do
  if "$STEPSIM" plot $k mb.h5 -o batch-$k.svg 2>err.txt && is_svg batch-$k.svg; then ok "plot $k of a batch (SVG)"; else bad "plot $k of a batch (SVG)"; cat err.txt; fi
done
if "$STEPSIM" plot sweep mb.h5 --x training.micro_batch --y device_used -o sweep.png 2>err.txt && is_png sweep.png; then ok "plot sweep of a batch"; else bad "plot sweep of a batch"; cat err.txt; fi
# batch checks stdout before it commits its files: exit 1 leaves none (QA: they were kept)
if [ -w /dev/full ]; then
  rm -f full.h5
  "$STEPSIM" batch mb.ini -o full.h5 >/dev/full 2>full.err; rc=$?
  check "batch > /dev/full: exit 1, one 'cannot write to standard output', no file" sh -c "[ $rc -eq 1 ] && grep -c 'cannot write to standard output' full.err | grep -qx 1 && ! test -e full.h5"
fi
# export of what a batch file lacks names what it holds (QA: "/: group holds no series")
"$STEPSIM" export mb.h5 / >/dev/null 2>exroot.err; rc=$?
check "export BATCH.h5 /: exit 1, names /results" sh -c "[ $rc -eq 1 ] && grep -q 'export one of its objects (/results)\$' exroot.err"
"$STEPSIM" export mb.h5 /summary >/dev/null 2>exroot.err; rc=$?
check "export BATCH.h5 /summary: no such object, the file holds /results" sh -c "[ $rc -eq 1 ] && grep -q '/summary: no such object (the file holds /results)' exroot.err"
# a title is printed text: a control character is a usage error (QA: drawn as giant glyphs)
"$STEPSIM" plot sweep mb.h5 --x micro_batch --y device_used -o ctl.png --title "$(printf 'a\001b')" >/dev/null 2>ctl.err; rc=$?
check "plot --title with a control character: exit 2, one message" sh -c "[ $rc -eq 2 ] && grep -q 'plot: --title contains a control character (U+0001)' ctl.err && ! test -e ctl.png"
# an axis of whole numbers gets whole-number ticks (QA: micro-batch 1.5 was drawn): the x
# tick labels (text-anchor middle in gnuplot's SVG) of micro_batch 1:2 are whole numbers
if "$STEPSIM" plot sweep mb.h5 --x micro_batch --y device_used -o xticks.svg 2>err.txt \
   && grep -A1 'text-anchor="middle"' xticks.svg | sed -n 's/.*<tspan[^>]*> *\([-0-9.]*\)<.*/\1/p' >xticks.txt \
   && grep -qx 1 xticks.txt && grep -qx 2 xticks.txt && ! grep -q '\.' xticks.txt; then
  ok "plot sweep: whole-number ticks on an axis of whole numbers"
else bad "plot sweep: whole-number ticks on an axis of whole numbers"; cat err.txt xticks.txt; fi
expect_rc 1 "plot sweep of an unknown metric: exit 1" "$STEPSIM" plot sweep mb.h5 --x training.micro_batch --y nope -o no.png
if "$STEPSIM" plot sweep mb.h5 --x micro_batch --y device_used -o short.png 2>err.txt && is_png short.png; then ok "plot sweep: --x key without its group"; else bad "plot sweep: --x key without its group"; cat err.txt; fi
expect_rc 1 "plot penalty without a baseline: exit 1" "$STEPSIM" plot penalty fail.h5 -o no.png
# rows not drawn are said in the title, the user's --title too (QA)
"$STEPSIM" plot steptime fail.h5 -o failst.svg >/dev/null 2>&1
check "plot of a batch with a failed row: the title says 1 of 2 not drawn" grep -q "(1 of 2 scenarios not drawn: failed or not run)" failst.svg
"$STEPSIM" plot steptime fail.h5 -o failst2.svg --title "My chart" >/dev/null 2>&1
check "plot --title: the note follows the user's title" grep -q "My chart (1 of 2 scenarios not drawn" failst2.svg
"$STEPSIM" run "$s1" -q -o runonly.h5 2>/dev/null
"$STEPSIM" plot penalty runonly.h5 -o no.png 2>pen.err; rc=$?
check "plot penalty of a run file: says a batch file is needed (exit 1)" sh -c "[ $rc -eq 1 ] && grep -q 'not a batch file' pen.err"
"$STEPSIM" plot cost runonly.h5 -o no.png 2>pen.err; rc=$?
check "plot cost of a run file: the message names cost among the batch charts" sh -c "[ $rc -eq 1 ] && grep -q 'sweep, penalty and cost charts' pen.err"
# plot options: malformed or misplaced ones are usage errors (2), a rank the file lacks is an
# error (1), each one line; nothing written.
for args in "memory --rank -1" "gantt --ranks abc" "gantt --ranks 0,,1" "gantt --ranks=" \
            "gantt --ranks -1" "breakdown --rank 0" "memory --ranks 0" "steptime --x micro_batch" \
            "gantt --by micro_batch" "sweep --x micro_batch"; do
  # shellcheck disable=SC2086
  "$STEPSIM" plot $args tr.h5 -o no.png >/dev/null 2>plot.err; rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <plot.err)" -eq 1 ]; then ok "plot $args: usage error"; else bad "plot $args: usage error (exit $rc)"; cat plot.err; fi
done
"$STEPSIM" plot steptime tr.h5 -o no.jpg >/dev/null 2>plot.err; rc=$?
check "plot -o of a format not drawn (.jpg): usage error, one line" sh -c "[ $rc -eq 2 ] && [ \$(wc -l <plot.err) -eq 1 ] && grep -q 'png or .svg' plot.err && test ! -e no.jpg"
for args in "memory --rank 99" "gantt --ranks 0,99"; do
  # shellcheck disable=SC2086
  "$STEPSIM" plot $args tr.h5 -o no.png >/dev/null 2>plot.err; rc=$?
  if [ $rc -eq 1 ] && grep -q 'tr.h5 has no rank 99' plot.err && [ "$(wc -l <plot.err)" -eq 1 ]; then ok "plot $args: no such rank, exit 1"; else bad "plot $args: no such rank, exit 1 (exit $rc)"; cat plot.err; fi
done
"$STEPSIM" plot sweep mb.h5 --x micro_batch --y label -o no.png >/dev/null 2>plot.err; rc=$?
check "plot sweep --y of a text column: one clear line, exit 1" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <plot.err) -eq 1 ] && grep -q \"column 'label' has no numbers\" plot.err"
if "$STEPSIM" plot gantt tr.h5 --ranks " 0" -o UPPER.PNG 2>err.txt && is_png UPPER.PNG; then ok "plot -o with .PNG in capitals"; else bad "plot -o with .PNG in capitals"; cat err.txt; fi
if "$STEPSIM" plot memory tr.h5 -o UPPER.Svg 2>err.txt && is_svg UPPER.Svg; then ok "plot -o with .Svg in mixed case"; else bad "plot -o with .Svg in mixed case"; cat err.txt; fi
check "no chart written on failure" test ! -e no.png
check "no temporary files left" sh -c "! ls -a | grep -q tmp"

# --- every plot script renders its fixture -----------------------------------------------------------
for f in gantt breakdown steptime sweep penalty; do
  check "plots/$f.gp renders its fixture to PNG" sh -c "gnuplot -c '$srcdir/plots/$f.gp' '$srcdir/tests/fixtures/$f.tsv' fx-$f.png 'fixture $f' && head -c 8 fx-$f.png | od -c | grep -q 'P   N   G'"
  check "plots/$f.gp renders its fixture to SVG" sh -c "gnuplot -c '$srcdir/plots/$f.gp' '$srcdir/tests/fixtures/$f.tsv' fx-$f.svg 'fixture $f' && grep -q '<svg' fx-$f.svg"
done

# --- charts on paths that break shell or awk quoting (issue 11 item 5) -------------------------
# A directory whose name has spaces, single and double quotes and a 240+-character absolute
# path holds the scripts (ARG0), the data (ARG1), the output and TMPDIR (the TSV that
# `stepsim plot` hands to gnuplot): every chart must still draw.
odd="$work/dir with 'single' and \"double\" quotes"
while [ ${#odd} -lt 240 ]; do odd="$odd/and a long name"; done
mkdir -p "$odd/plots" "$odd/tmp"
cp "$srcdir"/plots/*.gp "$odd/plots/"
cp tr.h5 "$odd/run's file.h5"; cp mb.h5 "$odd/batch \"file\".h5"
for f in memory gantt breakdown steptime sweep penalty; do
  fx="$srcdir/tests/fixtures/$f.tsv"
  cp "$fx" "$odd/$f data.tsv"
  title="fixture $f"; cap=""
  [ $f = memory ] && cap=20  # memory.gp: IN OUT CAPACITY_GIB TITLE
  # shellcheck disable=SC2086
  if gnuplot -c "$odd/plots/$f.gp" "$odd/$f data.tsv" "$odd/$f 'out'.svg" $cap "$title" >/dev/null 2>err.txt \
     && is_svg "$odd/$f 'out'.svg"; then ok "plots/$f.gp by hand on a long path with quotes and spaces"
  else bad "plots/$f.gp by hand on a long path with quotes and spaces"; cat err.txt; fi
done
check "gantt.gp on that path still names its lanes" grep -q 'rank 0 compute' "$odd/gantt 'out'.svg"
for args in "memory" "gantt" "breakdown"; do
  # shellcheck disable=SC2086
  if TMPDIR="$odd/tmp" "$STEPSIM" plot $args "$odd/run's file.h5" -o "$odd/run $args.png" 2>err.txt \
     && is_png "$odd/run $args.png"; then ok "plot $args: long path with quotes, TMPDIR there too"
  else bad "plot $args: long path with quotes, TMPDIR there too"; cat err.txt; fi
done
for args in "breakdown" "steptime" "penalty" "sweep --x micro_batch --y device_used"; do
  # shellcheck disable=SC2086
  if TMPDIR="$odd/tmp" "$STEPSIM" plot $args "$odd/batch \"file\".h5" -o "$odd/batch ${args%% *}.svg" 2>err.txt \
     && is_svg "$odd/batch ${args%% *}.svg"; then ok "plot ${args%% *} of a batch: long path with quotes"
  else bad "plot ${args%% *} of a batch: long path with quotes"; cat err.txt; fi
done

# --- messages that name the real cause (issue 11 item 18) --------------------------------------
mkdir -p adir
printf '[sweep]\nscenario = adir\n[axes]\ntraining.micro_batch = 1, 2\n' >dirsweep.ini
"$STEPSIM" batch dirsweep.ini -o ds.h5 >/dev/null 2>ds.err; rc=$?
check "a sweep whose scenario is a directory says so" sh -c "[ $rc -eq 1 ] && grep -q \"key 'scenario': .*adir: is a directory, not a file\" ds.err"
printf '[sweep]\nscenario = selfsweep.ini\n[axes]\ntraining.micro_batch = 1, 2\n' >selfsweep.ini
"$STEPSIM" batch selfsweep.ini -o ss.h5 >/dev/null 2>ss.err; rc=$?
check "a sweep naming itself as its scenario: one error, no output" \
  sh -c "[ $rc -eq 1 ] && [ \$(wc -l <ss.err) -eq 1 ] && grep -q \"group \[sweep\], key 'scenario': .*selfsweep.ini is this sweep file itself\" ss.err && [ ! -e ss.h5 ]"
"$STEPSIM" plot gantt mb.h5 -o no.png >/dev/null 2>gb.err; rc=$?
check "plot gantt of a batch file: not a run file" sh -c "[ $rc -eq 1 ] && grep -q 'mb.h5: not a run file (a batch file, with /results): the gantt chart' gb.err && ! grep -q 'no such object' gb.err"
# A 420-character checkout: a row's error caps the paths, never the override or the key.
deep="$work/checkout"; while [ ${#deep} -lt 420 ]; do deep="$deep/checkout-dir"; done
mkdir -p "$deep" && cp "$s1" "$deep/s1.ini"
printf '[sweep]\nscenario = s1.ini\n[axes]\ntraining.precision = fp32, fp13\n' >"$deep/sw.ini"
"$STEPSIM" batch "$deep/sw.ini" -o deep.h5 -q >/dev/null 2>deep.err
check "a row error in a long checkout names the file, its override and the key" \
  sh -c "grep -q 's1.ini (with .*sw.ini \[axes\] training.precision=fp13): group \[training\], key .precision.' deep.err"

# --- bar-chart labels are never clipped (issue 11 item 11) ------------------------------------
# Variant names of ~150 characters: every rotated tic label of the SVG must end inside the
# canvas (its far end estimated at 6.6 px per character; Helvetica 12 px averages ~6.2 px).
cat >svgclip.awk <<'AWK'
/viewBox=/ { match($0, /viewBox="0 0 [0-9]+ [0-9]+"/); split(substr($0, RSTART + 9, RLENGTH - 10), v, " "); W = v[3]; H = v[4] }
/<g transform="translate\([-0-9.]+,[-0-9.]+\) rotate\(-(25|90)\)".*text-anchor="end"/ {
  match($0, /translate\([-0-9.]+,[-0-9.]+\)/); split(substr($0, RSTART + 10, RLENGTH - 11), p, ",")
  match($0, /rotate\(-[0-9]+\)/); r = substr($0, RSTART + 8, RLENGTH - 9) + 0; pending = 1; next }
pending == 1 && /<text>/ { t = $0; sub(/.*<text>/, "", t); sub(/<\/text>.*/, "", t); L = length(t) * 6.6
  if (r == 25) { x = p[1] - 0.906 * L; y = p[2] + 0.423 * L } else { x = p[1]; y = p[2] + L }
  if (x < 0 || y > H) { print "clipped: " t " (" x ", " y " on " W "x" H ")"; bad = 1 }
  n++; pending = 0 }
/<g transform="translate\([-0-9.]+,[-0-9.]+\)" .*text-anchor="start"/ {
  match($0, /translate\([-0-9.]+,[-0-9.]+\)/); split(substr($0, RSTART + 10, RLENGTH - 11), p, ",")
  r = 0; pending = 2; next }
pending == 2 && /<text>/ { t = $0; sub(/.*<text>/, "", t); sub(/<\/text>.*/, "", t)
  if (p[1] < 0 || p[1] + length(t) * 6.6 > W) { print "clipped: " t " (" p[1] " on " W ")"; bad = 1 }
  n++; pending = 0 }
END { exit bad || n == 0 }
AWK
long=variant-with-a-very-long-descriptive-name; long="$long-$long-$long"
printf '[sweep]\nscenario = %s\n[axes]\nscenario.description = %s-A, %s-B\ntraining.micro_batch = 1, 2\n[baseline]\ntraining.micro_batch = 1\n' \
  "$s1" "$long" "$long" >longnames.ini
"$STEPSIM" batch longnames.ini -o longnames.h5 -q >/dev/null 2>&1
for k in breakdown steptime penalty; do
  if "$STEPSIM" plot $k longnames.h5 -o long-$k.svg 2>err.txt && awk -f svgclip.awk long-$k.svg >clip.txt; then
    ok "plot $k: ~150-character labels inside the canvas"
  else bad "plot $k: ~150-character labels inside the canvas"; cat err.txt clip.txt; fi
  if "$STEPSIM" plot $k mb.h5 -o short-$k.svg 2>err.txt && awk -f svgclip.awk short-$k.svg >clip.txt; then
    ok "plot $k: short labels inside the canvas"
  else bad "plot $k: short labels inside the canvas"; cat err.txt clip.txt; fi
done
# plot sweep: line titles (the --by values) of ~150 characters stay inside the canvas
if "$STEPSIM" plot sweep longnames.h5 --x micro_batch --y step_time --by description -o long-sweep.svg 2>err.txt \
   && grep -q "description=$long-A" long-sweep.svg && awk -f svgclip.awk long-sweep.svg >clip.txt; then
  ok "plot sweep: ~150-character line titles inside the canvas"
else bad "plot sweep: ~150-character line titles inside the canvas"; cat err.txt clip.txt; fi

# a scenario given where a sweep is expected: said so, exit 1
"$STEPSIM" batch "$srcdir/scenarios/s1-llama-3.2-1b-fp32.ini" >/dev/null 2>nosweep.err; rc=$?
check "batch on a scenario file: exit 1, 'this is a scenario, not a sweep'" \
  sh -c "[ $rc -eq 1 ] && grep -q 'no \[sweep\] group: this is a scenario, not a sweep' nosweep.err"
# a sweep over expert parallelism carries the all-to-alls exposed and the slowest EP rank's rows
printf '[sweep]\nscenario = %s\n[axes]\nparallel.ep = 4, 8\n' "$srcdir/scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini" >epsweep.ini
"$STEPSIM" batch epsweep.ini -j 1 --tsv ep.tsv -o ep.h5 >/dev/null 2>&1
check "batch over ep: rows carry exposed_all_to_all > 0 and ep_rows_slowest" \
  awk -F '\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n++; if (!(c["exposed_all_to_all"] && $c["exposed_all_to_all"] > 0 && $c["ep_rows_slowest"] > 0)) bad = 1 }
    END { exit (bad || n != 2) }' ep.tsv
# a double-quoted item is one value, commas included: two expert-load histograms swept
printf '[sweep]\nscenario = %s\n[axes]\nmoe.expert_load = "8, 3, 5, 1, 1, 1, 1, 1", "1, 1, 1, 1, 1, 1, 1, 1"\n' \
  "$srcdir/scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini" >hist.ini
"$STEPSIM" batch hist.ini -j 1 --tsv hist.tsv -o hist.h5 >/dev/null 2>hist.err; rc=$?
check "batch: quoted histograms are two scenarios, both run" \
  sh -c "[ $rc -eq 0 ] && [ \$(wc -l <hist.tsv) -eq 3 ] && grep -q '8, 3, 5, 1, 1, 1, 1, 1' hist.tsv"
echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
