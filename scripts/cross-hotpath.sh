#!/usr/bin/env bash
# The tracing hot path's instructions on each architecture, side by side
# (figures only, never pass/fail): a generated trace_bench_event() call as
# compiled into a program (call_event: the guard and the calls into the
# runtime) and the runtime's st__simple_begin/st__simple_commit, from the
# objdump of each build's libsimpletrace.so; the fast path of
# st__simple_begin is its instructions up to its first return. The builds
# are optimised as the tree builds them (check.sh's: -O2).
# Usage: scripts/cross-hotpath.sh NATIVE-BUILD [TRIPLET=CROSS-BUILD...]
#   e.g. scripts/cross-hotpath.sh build-plain aarch64-linux-gnu=build-cross-aarch64-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/.."
native=${1:?usage: cross-hotpath.sh NATIVE-BUILD [TRIPLET=CROSS-BUILD...]}
shift
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

"$native/src/cli/simpletrace" gen --format=h --backends=simple --group=call -o "$work/call-trace.h" \
  bench/runtime/trace-events
cat > "$work/call.c" <<'C'
#include <stdint.h>
#include "call-trace.h"
void call_event(uint64_t a, uint64_t b, const char *s);
void call_event(uint64_t a, uint64_t b, const char *s)
{
    trace_bench_event(a, b, s);
}
C

# function FILE.dis -> its instructions, one a line
body() { awk -v f="<$1>:" '$2 == f {on=1; next} on && /^$/ {exit} on' "$2" | grep -v '^\s*\.\.\.$' || true; }
rows=()
for spec in "x86_64=$native" "$@"; do
  name=${spec%%=*} dir=${spec#*=}
  case $name in x86_64) prefix="" ;; *) prefix="$name-" ;; esac
  arch=${name%%-*}
  "${prefix}gcc" -O2 -std=c11 -Iinclude -I"$work" -c "$work/call.c" -o "$work/$arch.o"
  "${prefix}objdump" -d --no-show-raw-insn "$work/$arch.o" > "$work/$arch.call.dis"
  "${prefix}objdump" -d --no-show-raw-insn "$dir/src/runtime/libsimpletrace.so" > "$work/$arch.lib.dis"
  body call_event "$work/$arch.call.dis" > "$work/$arch.call_event"
  for f in st__simple_begin st__simple_commit; do body "$f" "$work/$arch.lib.dis" > "$work/$arch.$f"; done
  # The fast path: up to the first return (x86-64 ret, aarch64 ret, s390x br %r14).
  awk '{print} /\tret|\tbr\t%r14/ {exit}' "$work/$arch.st__simple_begin" > "$work/$arch.fast"
  clock=$(grep -Eo 'rdtsc|mrs\t[^,]*, cntvct_el0|isb|clock_gettime[^>]*' "$work/$arch.fast" "$work/$arch.st__simple_begin" |
          sed 's/^[^:]*://; s/\t/ /' | sort -u | tr '\n' ' ')
  rows+=("$(printf '%-10s %10s %16s %10s %17s   %s' "$arch" "$(grep -c . "$work/$arch.call_event")" \
    "$(grep -c . "$work/$arch.st__simple_begin")" "$(grep -c . "$work/$arch.fast")" \
    "$(grep -c . "$work/$arch.st__simple_commit")" "${clock:-(no clock read inline)}")")
  echo "== $arch: call_event"; sed 's/^/    /' "$work/$arch.call_event"
  echo "== $arch: st__simple_begin up to its first return"; sed 's/^/    /' "$work/$arch.fast"
done
echo
printf '%-10s %10s %16s %10s %17s   %s\n' arch call_event st__simple_begin "fast path" st__simple_commit "clock read"
printf '%s\n' "${rows[@]}"
