#!/bin/sh
# tests/layering.sh — arrows point one way (DESIGN §2): sim/ includes neither hardware/,
# models/ nor cli/; hardware/ neither models/ nor cli/; models/ not cli/; only
# sim/h5out*.c include hdf5.h; only models/ and cli/trace.c include json-glib. Each rule is one test.
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
rule "models/ includes no cli/" "$(grep -nE '#include "cli/' models/*.[ch])"
rule "only sim/h5out*.c includes hdf5.h" "$(grep -lE '#include [<"]hdf5' sim/*.[ch] hardware/*.[ch] models/*.[ch] cli/*.[ch] | grep -v '^sim/h5out[^/]*\.c$')"
rule "only models/ and cli/trace.c include json-glib" "$(grep -lE '#include [<"]json-glib' sim/*.[ch] hardware/*.[ch] cli/*.[ch] | grep -v '^cli/trace\.c$')"
# config.h carries the configure flags: an object that does not include it is not rebuilt
# when they change (--enable-sanitizers after a plain build; tests/rebuild.sh).
rule "every .c includes config.h first" "$(for f in sim/*.c hardware/*.c models/*.c cli/*.c tests/*.c tests/unit/*/*.c; do [ -e "$f" ] || continue; first=$(grep -m1 '^#include' "$f"); [ "$first" = '#include "config.h"' ] || echo "$f"; done)"
echo "stepsim-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
