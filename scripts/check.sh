#!/usr/bin/env bash
# The whole test suite: every test in a plain optimised build (what users run, and
# the fork paths sanitizers cannot follow), the suite again cross-built for aarch64
# and s390x (big-endian) under qemu-user-static with their traces read here
# (scripts/cross-check.sh; ST_CROSS=0 leaves it out), every test again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded tests under
# ThreadSanitizer, and (when CI=true or FUZZ_SECONDS is set) a short real libFuzzer
# run of every parser.
# Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh check || exit 1
# The cross toolchains: cross-install-and-use (plain suite) and the cross suites below use them.
cross=(aarch64-linux-gnu s390x-linux-gnu)
bash scripts/deps.sh cross "${cross[@]}" || exit 1

jobs=$(nproc 2>/dev/null || echo 2)
status=0
results=()
# Tests write in temporary directories and build trees only: what a run adds to the
# source tree (untracked, not ignored) is a test writing where it should not, named at the end.
untracked() { git status --porcelain --untracked-files=normal 2>/dev/null | grep '^??' | sort; }
untracked_before=$(untracked)

run_suite() { # name builddir meson-test-args...
  local name=$1 dir=$2; shift 2
  echo "== $name =="
  if ! ninja -C "$dir" >"$dir.ninja.log" 2>&1; then
    cat "$dir.ninja.log"; echo "$name: build failed"; status=1; return
  fi
  meson test -C "$dir" --num-processes "$jobs" --print-errorlogs "$@" || status=1
  results+=("$dir/meson-logs/testlog.json")
}

setup() { # dir meson-args...
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null
  else meson setup "$dir" "$@" >/dev/null; fi || { echo "meson setup $dir failed"; exit 1; }
}

setup build-plain -Dbuildtype=debugoptimized
run_suite "plain" build-plain

if [ "${ST_CROSS:-1}" != 0 ]; then
  echo "== cross builds under qemu-user-static =="
  bash scripts/cross-check.sh --native build-plain "${cross[@]}" || status=1
  for t in "${cross[@]}"; do results+=("build-cross-$t/meson-logs/testlog.json"); done
  results+=("build-plain/meson-logs/cross-traces.json")
fi

setup build-asan -Dbuildtype=debug -Doptimization=1 -Db_sanitize=address,undefined -Db_lundef=false \
  -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_suite "ASan+UBSan" build-asan

setup build-tsan -Dbuildtype=debug -Doptimization=1 -Db_sanitize=thread -Db_lundef=false
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
run_suite "TSan (threaded runtime tests)" build-tsan --suite threads

if [ "${CI:-}" = true ] || [ -n "${FUZZ_SECONDS:-}" ]; then
  echo "== libFuzzer =="
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}" || status=1
fi

left=$(comm -13 <(printf '%s\n' "$untracked_before") <(untracked) | grep . | sed 's/^?? /  /')
if [ -n "$left" ]; then
  printf 'the test suites left in the source tree (write them in a temporary directory):\n%s\n' "$left"
  status=1
fi

python3 - "${results[@]}" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        for line in open(path):
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"): passed += 1
            elif r == "SKIP": skipped += 1
            else: failed += 1
    except FileNotFoundError:
        failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $status
