#!/bin/sh
# tests/h5mutate.sh — reading a damaged HDF5 file never crashes or hangs (README, "Testing").
# Makes H5MUTATE_FILES (default 256) single-byte mutations of a run file stepsim wrote
# (tests/fuzz/corpus/h5/run-gpt2-1layer.h5: `stepsim run scenarios/gpt2-small-eager-rtx4090.ini
# --set training.grad_accum=1 --set model.num_hidden_layers=1`: /summary and /series as tables;
# run-gpt2-1layer-v0.h5 is the same run in the former layout, one object per series and
# entry, read among the regression inputs below), deterministic: mutation k
# XORs the byte at offset (k * 7919 + 13) mod size with 0xFF, 0x01, 0x80 or 0x10 (k mod 4),
# and exports one object of it (k mod 3: /summary, /tasks, /series; H5MUTATE_ALL=1: each
# of the three) with `stepsim export`. Every export must exit 0, or exit 1 with one
# "stepsim: FILE: …" message; a signal, another status, a sanitizer report from stepsim's
# own code or more than H5MUTATE_TIMEOUT seconds (default 60; the reader's own deadline is
# 10 s) fails the check. A sanitizer report whose first frame lies in libhdf5 comes from
# the reader process libhdf5 crashed in (sim/h5out_guard.c): it is counted, not failed,
# when the export still ended with its one message.
# Then every regression input of tests/fuzz/corpus/h5 and h5-libhdf5 is exported as
# /summary, /tasks, /series and /results under the same rules.
# Prints the counts and "stepsim-tests: P passed, F failed" (one test per file).
# Needs: STEPSIM (the binary), srcdir.
set -u
: "${STEPSIM:?}" "${srcdir:?}"
seed="$srcdir/tests/fuzz/corpus/h5/run-gpt2-1layer.h5"
files=${H5MUTATE_FILES:-256}
limit=${H5MUTATE_TIMEOUT:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/stepsim-h5mutate.XXXXXX")
trap 'rm -rf "$work"' EXIT
size=$(wc -c <"$seed" | tr -d ' ')
passed=0
failed=0
n_read=0
n_refused=0
n_contained=0
objects="/summary /tasks /series"

# check_file FILE LABEL OBJECTS…: exports each object; counts a pass or prints why it failed.
check_file () {
  f=$1; label=$2; shift 2
  verdict=ok
  for o in "$@"; do
    timeout -k 5 "$limit" "$STEPSIM" export "$f" "$o" >/dev/null 2>"$work/err"
    rc=$?
    san=$(grep -c -E 'Sanitizer|runtime error' "$work/err")
    last=$(tail -n 1 "$work/err")
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      verdict="hang (over $limit s)"
    elif [ "$rc" -gt 1 ]; then
      verdict="exit status $rc"
    elif [ "$san" -gt 0 ]; then
      # The first frame outside the sanitizer runtime and libc (named by its .so or, when
      # symbolized, by glibc's source folders) decides whose fault it is: libhdf5's when in
      # its shared object or, linked statically (configure.ac), in one of its functions,
      # all named H5* (stepsim's own are sim_h5_*).
      first=$(grep -E '^ *#[0-9]+ ' "$work/err" | grep -v -E 'asan|ubsan|sanitizer|interceptor|libc\.so|libc-start|sysdeps/|/string/|/malloc/' | head -n 1)
      case "$first" in
        *libhdf5* | *" in H5"*)
          case "$last" in
            "stepsim: $f: "*) n_contained=$((n_contained + 1)) ;;
            *) verdict="libhdf5 fault without a message" ;;
          esac ;;
        *) verdict="sanitizer report: $first" ;;
      esac
    elif [ "$rc" -eq 1 ]; then
      case "$last" in
        "stepsim: $f: "*) n_refused=$((n_refused + 1)) ;;
        *) verdict="exit 1 without one message naming the file" ;;
      esac
    else
      n_read=$((n_read + 1))
    fi
    [ "$verdict" = ok ] || break
  done
  if [ "$verdict" = ok ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $label ($o): $verdict"
    sed 's/^/    /' "$work/err" | head -n 8
    mkdir -p "${builddir:-.}/tests/logs/h5mutate"
    cp "$f" "${builddir:-.}/tests/logs/h5mutate/$(basename "$f")"
  fi
}

k=0
while [ "$k" -lt "$files" ]; do
  off=$(( (k * 7919 + 13) % size ))
  case $((k % 4)) in 0) x=255 ;; 1) x=1 ;; 2) x=128 ;; *) x=16 ;; esac
  old=$(od -An -tu1 -j "$off" -N 1 "$seed" | tr -d ' ')
  new=$(( old ^ x ))
  f="$work/m$k.h5"
  cp "$seed" "$f"
  printf "\\$(printf '%03o' "$new")" | dd of="$f" bs=1 seek="$off" conv=notrunc 2>/dev/null
  if [ "${H5MUTATE_ALL:-0}" = 1 ]; then
    check_file "$f" "mutation $k (offset $off, $old -> $new)" $objects
  else
    set -- $objects
    shift $((k % 3))
    check_file "$f" "mutation $k (offset $off, $old -> $new)" "$1"
  fi
  rm -f "$f"
  k=$((k + 1))
done
# The regression inputs: files that once crashed the reader or libhdf5 (tests/fuzz/corpus/).
n_regress=0
for f in "$srcdir"/tests/fuzz/corpus/h5/* "$srcdir"/tests/fuzz/corpus/h5-libhdf5/*; do
  [ -f "$f" ] || continue
  check_file "$f" "regression input $(basename "$f")" $objects /results
  n_regress=$((n_regress + 1))
done
echo "$files mutated files of $size bytes and $n_regress regression inputs: $n_read exports read, $n_refused refused with a message, $n_contained libhdf5 faults contained in the reader process, $failed files failed"
echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
