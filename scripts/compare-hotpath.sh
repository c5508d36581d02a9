#!/usr/bin/env bash
# The tracing hot path of this tree against another revision, side by side
# in one run (figures only, never pass/fail):
#   - the instructions of a generated trace_NAME() call (a function calling
#     it, as compiled into a program: the guard and the calls into the
#     runtime) and of st__simple_begin/st__simple_commit, from objdump;
#   - bench/runtime's hot-path figures, the two builds run alternately.
# Usage: scripts/compare-hotpath.sh BASE_REV [ROUNDS]   (release builds under build-compare/)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: compare-hotpath.sh BASE_REV [ROUNDS]} rounds=${2:-3}
work=$PWD/build-compare
mkdir -p "$work"
rm -rf "$work/base-src"
git worktree remove --force "$work/base-src" 2>/dev/null || true
git worktree add --detach "$work/base-src" "$base" >/dev/null

build() { # name srcdir
  local dir=$work/$1
  [ -f "$dir/build.ninja" ] || meson setup "$dir" "$2" -Dbuildtype=release -Db_ndebug=true >/dev/null
  ninja -C "$dir" src/cli/simpletrace bench/runtime/bench_runtime >/dev/null
}
build base "$work/base-src"
build this "$PWD"

# A translation unit that calls one generated event, as a program would.
cat > "$work/call.c" <<'C'
#include <stdint.h>
#include "call-trace.h"
void call_event(uint64_t a, uint64_t b, const char *s);
void call_event(uint64_t a, uint64_t b, const char *s)
{
    trace_bench_event(a, b, s);
}
C
disasm() { # name srcdir -> the instructions of call_event, st__simple_begin, st__simple_commit
  local dir=$work/$1 src=$2
  "$dir/src/cli/simpletrace" gen --format=h --backends=simple --group=call -o "$dir/call-trace.h" bench/runtime/trace-events
  cc -O2 -I"$src/include" -I"$dir/include" -I"$dir" -c "$work/call.c" -o "$dir/call.o"
  objdump -d --no-show-raw-insn "$dir/call.o" > "$dir/call.dis"
  objdump -d --no-show-raw-insn "$dir/src/runtime/libsimpletrace.so" > "$dir/lib.dis"
  awk -v f="<call_event>:" '$2 == f {on=1; next} on && /^$/ {exit} on' "$dir/call.dis" > "$dir/call_event.s"
  for f in st__simple_begin st__simple_commit; do
    awk -v f="<$f>:" '$2 == f {on=1; next} on && /^$/ {exit} on' "$dir/lib.dis" > "$dir/$f.s"
  done
}
disasm base "$work/base-src"
disasm this "$PWD"
echo "== instructions (objdump), base $base vs this tree"
printf '%-22s %8s %8s\n' function base this
for f in call_event st__simple_begin st__simple_commit; do
  printf '%-22s %8s %8s\n' "$f" "$(grep -c . "$work/base/$f.s")" "$(grep -c . "$work/this/$f.s")"
done
echo "(fast path of st__simple_begin up to its first return, and the full listings: $work/{base,this}/*.s)"
# Compared without addresses and PC-relative offsets, which move whenever anything else in the file does.
norm() { sed -E 's/^ *[0-9a-f]+:\t//; s/[0-9a-f]+ <[^>]*>/ADDR/g; s/0x[0-9a-f]+\(%rip\)/RIP/g; s/ *# .*//; s/^cs //; s/[[:space:]]+/ /g' "$1"; }
for f in st__simple_begin st__simple_commit call_event; do
  if diff <(norm "$work/base/$f.s") <(norm "$work/this/$f.s") >/dev/null; then
    echo "$f: the same instructions"
  else
    echo "$f: differs (besides addresses):"
    diff <(norm "$work/base/$f.s") <(norm "$work/this/$f.s") | sed "s/^/    /" | head -40 || true
  fi
done
echo
echo "== bench/runtime --only hot, alternating, $rounds rounds each"
for r in $(seq "$rounds"); do
  for b in base this; do
    "$work/$b/bench/runtime/bench_runtime" --only hot > "$work/$b.hot.$r" 2>&1
  done
done
printf '%-46s %12s %12s\n' figure base this
for key in 'rdtsc' 'disabled event' 'nop backend event' 'enabled event, 1 thread' 'enabled event, 2 threads' \
           'writer drain to /dev/null, 1 buffer' 'writer drain to /dev/null, 2 interleaved'; do
  vals=()
  for b in base this; do
    v=$(for r in $(seq "$rounds"); do grep -m1 "^$key " "$work/$b.hot.$r" | awk '{for (i=1;i<=NF;i++) if ($i=="ns") {print $(i-1); exit}}'; done |
        sort -g | head -1)
    vals+=("${v:-?} ns")
  done
  printf '%-46s %12s %12s\n' "$key (best)" "${vals[0]}" "${vals[1]}"
done
git worktree remove --force "$work/base-src"
