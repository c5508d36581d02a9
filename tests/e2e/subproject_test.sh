#!/usr/bin/env bash
# simpletrace as a Meson subproject: examples/meson, copied into a temporary
# directory with this source tree as its subprojects/simpletrace, configured
# so that the fallback is taken even where pkg-config would find an installed
# simpletrace. The parent names no variable of ours: dependency('simpletrace')
# and find_program('simpletrace') are overridden by the subproject, which
# builds no tests, benchmarks or examples. Built shared and static, run
# traced, read back with the simpletrace the subproject built.
# TAP output. Usage: subproject_test.sh SOURCE-DIR
set -u
src=$(cd "$1" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }
show() { tail -25 "$@" | sed 's/^/# /'; false; }   # a failed check's evidence; fails

parent=$tmp/parent
cp -r "$src/examples/meson" "$parent"
mkdir -p "$parent/subprojects"
ln -s "$src" "$parent/subprojects/simpletrace"
cd "$parent"
# No C++ compiler either: simpletrace needs one only for its tests.
env -u PKG_CONFIG_PATH -u CFLAGS -u LDFLAGS -u CXX CXX=/nonexistent/c++ \
  meson setup build --force-fallback-for=simpletrace >"$tmp/setup.log" 2>&1
rc=$?
check "a parent project configures with simpletrace as a subproject (and no C++ compiler)" \
  '[ $rc -eq 0 ] || show "$tmp/setup.log"'
check "dependency('simpletrace') is the subproject's override, with its version" \
  'grep -Eq "^Dependency simpletrace found: YES [0-9.]+ \(overridden\)" "$tmp/setup.log" || show "$tmp/setup.log"'
check "find_program('simpletrace') is the subproject's command" \
  'grep -q "^Program simpletrace found: YES (overridden)" "$tmp/setup.log" || show "$tmp/setup.log"'
meson introspect --targets build >"$tmp/targets.json" 2>"$tmp/introspect.log"
check "the subproject builds no tests, benchmarks or examples" \
  'python3 - "$tmp/targets.json" "$parent/subprojects/simpletrace" <<"PY" || show "$tmp/introspect.log"
import json, os, sys
targets = json.load(open(sys.argv[1]))
extra = [t["name"] for t in targets
         if os.path.relpath(t["defined_in"], sys.argv[2]).split(os.sep)[0] in ("tests", "bench", "examples")]
print("# built anyway:", " ".join(extra)) if extra else None
sys.exit(1 if extra or len(targets) < 2 else 0)
PY'
ninja -C build >"$tmp/build.log" 2>&1
check "the parent builds" '[ -x build/wc ] || show "$tmp/build.log"'
# The command the subproject built, wherever meson put it.
st=$(python3 -c 'import json, sys
print(next(f for t in json.load(open(sys.argv[1])) if t["name"] == "simpletrace" and t["type"] == "executable"
           for f in t["filename"]))' "$tmp/targets.json" 2>/dev/null)
check "the subproject built the simpletrace command" '[ -x "$st" ]'

for kind in shared static; do
  if [ $kind = static ]; then
    meson configure build -Dstatic=true >"$tmp/configure.log" 2>&1 && ninja -C build >"$tmp/build-static.log" 2>&1
    rc=$?
    check "the parent builds with dependency('simpletrace', static : true)" \
      '[ $rc -eq 0 ] || show "$tmp/configure.log" "$tmp/build-static.log"'
  fi
  rm -f wc.trace
  env -u LD_LIBRARY_PATH SIMPLETRACE='enable=wc_*,file=wc.trace' build/wc meson.build >"$tmp/run.log" 2>&1
  "$st" print trace-events wc.trace >"$tmp/print.txt" 2>&1
  lines=$(wc -l < meson.build)
  check "  ($kind) runs traced and simpletrace print reads its records" \
    '[ "$(grep -c "^wc_line " "$tmp/print.txt")" -eq "$lines" ] && grep -q "^wc_file .* path=b'"'"'meson.build'"'"'$" "$tmp/print.txt" ||
     show "$tmp/print.txt" "$tmp/run.log"'
  readelf -d build/wc >"$tmp/wc.dyn" 2>&1
  if [ $kind = shared ]; then
    check "  (shared) loads libsimpletrace.so.0" 'grep -q "NEEDED.*libsimpletrace.so.0" "$tmp/wc.dyn"'
  else
    check "  (static) does not load libsimpletrace.so" 'grep -q NEEDED "$tmp/wc.dyn" && ! grep -q "NEEDED.*libsimpletrace" "$tmp/wc.dyn"'
  fi
done

echo "1..$n"
exit $((fail > 0))
