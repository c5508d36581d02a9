#!/usr/bin/env bash
# The ABI of each shared library, as the linker sees it (TAP):
#  - `readelf -d` shows a versioned SONAME (lib....so.0);
#  - the exported symbols (nm -D) are exactly those of LIB.symbols beside
#    this script: a new export is a deliberate change to that list;
#  - the installed static library defines exactly the same global symbols
#    (everything else was made local when it was prelinked);
#  - a loadable module (after --modules: the SQLite extension) exports
#    exactly MODULE.symbols too.
# Usage: exports_test.sh NM READELF EXPECTED_DIR SOVERSION LIB.so LIB.a ... [--modules MODULE.so...]
set -u
nm=$1 readelf=$2 dir=$3 soversion=$4; shift 4
n=0 fail=0
# Symbols a sanitizer build adds beside ours (ASan's ODR indicators of exported data) are not ours.
ours() { grep -v -E '^__(odr_asan|asan|ubsan|tsan|sanitizer)' || true; }
check() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=$((fail+1)); fi; }
while [ $# -ge 2 ] && [ "$1" != --modules ]; do
  so=$1 ar=$2; shift 2
  name=$(basename "$so"); name=${name%%.so*}
  soname=$("$readelf" -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
  [ "$soname" = "$name.so.$soversion" ]; check $? "$name: SONAME is $name.so.$soversion (got '$soname')"
  got=$("$nm" -D --defined-only "$so" | awk '{print $3}' | ours | sort)
  want=$(sort "$dir/$name.symbols")
  [ "$got" = "$want" ]; check $? "$name.so exports exactly $name.symbols"
  if [ "$got" != "$want" ]; then diff <(echo "$want") <(echo "$got") | sed 's/^/# /'; fi
  got_a=$("$nm" --defined-only -g "$ar" 2>/dev/null | awk 'NF == 3 {print $3}' | ours | sort)
  [ "$got_a" = "$want" ]; check $? "$name.a defines exactly the same global symbols"
  if [ "$got_a" != "$want" ]; then diff <(echo "$want") <(echo "$got_a") | sed 's/^/# /' | head -20; fi
done
[ "${1:-}" = --modules ] && shift
for so in "$@"; do
  name=$(basename "$so"); name=${name%%.so*}
  got=$("$nm" -D --defined-only "$so" | awk '{print $3}' | ours | sort)
  want=$(sort "$dir/$name.symbols")
  [ "$got" = "$want" ]; check $? "$name.so (a module) exports exactly $name.symbols"
  if [ "$got" != "$want" ]; then diff <(echo "$want") <(echo "$got") | sed 's/^/# /' | head -20; fi
done
echo "1..$n"
exit $((fail > 0))
