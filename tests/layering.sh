#!/bin/sh
# tests/layering.sh — arrows point one way (DESIGN §2): sim/ includes neither hardware/,
# models/ nor cli/; hardware/ neither models/ nor cli/; models/ not cli/; only
# sim/h5out*.c include hdf5.h; only models/ and cli/report/trace.c include json-glib. Each rule is one test;
# the last reads the objects of the build with nm: no two files call each other.
set -u
: "${srcdir:?}"
cd "$srcdir" || exit 1
passed=0
failed=0
rule () {
  name=$1; hits=$2
  if [ -z "$hits" ]; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; echo "$hits"; fi
}
rule "sim/ includes no upper layer" "$(grep -nE '#include "(hardware|models|cli)/' sim/*.[ch])"
rule "hardware/ includes no models/ or cli/" "$(grep -nE '#include "(models|cli)/' hardware/*.[ch])"
rule "models/ includes no cli/" "$(grep -nE '#include "cli/' models/*/*.[ch])"
rule "only sim/h5out*.c includes hdf5.h" "$(grep -lE '#include [<"]hdf5' sim/*.[ch] hardware/*.[ch] models/*/*.[ch] cli/*.[ch] cli/*/*.[ch] | grep -v '^sim/h5out[^/]*\.c$')"
rule "only models/ and cli/report/trace.c include json-glib" "$(grep -lE '#include [<"]json-glib' sim/*.[ch] hardware/*.[ch] cli/*.[ch] cli/*/*.[ch] | grep -v '^cli/report/trace\.c$')"
# config.h carries the configure flags: an object that does not include it is not rebuilt
# when they change (--enable-sanitizers after a plain build; tests/rebuild.sh).
rule "every .c includes config.h first" "$(for f in sim/*.c hardware/*.c models/*/*.c cli/*.c cli/*/*.c tests/*.c tests/unit/*/*.c; do [ -e "$f" ] || continue; first=$(grep -m1 '^#include' "$f"); [ "$first" = '#include "config.h"' ] || echo "$f"; done)"
# models/ and cli/ are cut into subfolders by concern (DESIGN §2); within each, a subfolder
# includes only itself and those before it in this order, so the arrows stay one way.
order_rule () {
  top=$1; shift
  seen=""
  for d in "$@"; do
    later=""; past=0
    for e in "$@"; do [ "$past" = 1 ] && later="$later $e"; [ "$e" = "$d" ] && past=1; done
    hits=""
    for e in $later; do hits="$hits$(grep -nE "#include \"$top/$e/" "$top/$d"/*.[ch])"; done
    [ -n "$later" ] && rule "$top/$d/ includes none of$later" "$hits"
    seen="$seen $d"
  done
}
order_rule models arch ops parallel memory stack plan
order_rule cli scenario report study
# Physics tests live beside the physics: a models test includes no cli/ header and its binary
# does not link the command's library (the plan layer's model_simulate runs a step).
rule "tests/unit/models/ includes no cli/" "$(grep -nE '#include "cli/' tests/unit/models/*.[ch])"
rule "no tests/unit/models binary links cli/" "$(grep -nE '^tests_unit_models_[A-Za-z0-9_]+_LDADD.*cli/' tests/*.mk tests/unit/*/*.mk)"
rule "models/ has no file outside its subfolders" "$(ls models/*.[ch] 2>/dev/null)"
# The top level of cli/ is main.c and one file per subcommand (+ the signal handling every
# study shares): subfolders include none of the subcommands.
rule "cli/ subfolders include no subcommand" "$(grep -nE '#include "cli/commands\.h"' cli/*/*.[ch])"
# Split files by concern, never by line count: no two objects call each other (A calls a
# function B defines and B one A defines), so a split-off file is a leaf. Read with nm from
# the objects of this build (skipped, not counted, without $builddir or nm). No pair is
# allowed: every file that was cut in two calls the other one way. Objects whose source is
# gone (a stale build) are not read.
if [ -n "${builddir:-}" ] && command -v nm >/dev/null 2>&1 && [ -e "$builddir/sim/engine.o" ]; then
  pairs=$(cd "$builddir" && for o in sim/*.o hardware/*.o models/*/*.o cli/*.o cli/*/*.o; do
      [ -e "$o" ] && [ -e "$srcdir/${o%.o}.c" ] && nm "$o" | awk -v o="$o" 'NF == 3 && $2 ~ /^[TDBR]$/ { print "D", o, $3 } NF == 2 && $1 == "U" { print "U", o, $2 }'
    done | awk '$1 == "D" { def[$3] = $2; next } { use[n++] = $2 " " $3 }
      END { for (i = 0; i < n; i++) { split (use[i], u, " "); b = def[u[2]]; if (b != "" && b != u[1]) e[u[1] " " b] = 1 }
            for (k in e) { split (k, p, " "); if ((p[2] " " p[1]) in e && p[1] < p[2]) print k } }' | sort)
  rule "no two objects call each other" "$pairs"
else
  echo "skip no two objects call each other (no \$builddir objects or no nm)"
fi
echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
