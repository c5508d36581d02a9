#!/usr/bin/env bash
# Function-call tracing cost, side by side: the same 10 million calls of a
# tiny leaf, untraced, traced by libsimpletrace-func, and under
# `uftrace record`. Figures only, never pass/fail.
#   run.sh BUILD_DIR     (knobs: FT_CALLS=N, FT_RUNS=N best-of)
set -uo pipefail
build=${1:-build}
bin=$build/bench/functrace
calls=${FT_CALLS:-10000000}
runs=${FT_RUNS:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }

# best_of NAME CMD...: runs CMD $runs times; sets loop_ns and wall_ns (minimum of each).
best_of() {
  local name=$1; shift
  loop_ns=; wall_ns=
  for _ in $(seq "$runs"); do
    rm -rf "$tmp/data"
    local t0 t1 out
    t0=$(now)
    out=$("$@" 2>"$tmp/$name.err") || { echo "$name: failed: $(head -3 "$tmp/$name.err")"; loop_ns=; return 1; }
    t1=$(now)
    local l=${out##*loop_ns }
    local w=$((t1 - t0))
    if [ -z "$loop_ns" ] || [ "$l" -lt "$loop_ns" ]; then loop_ns=$l; fi
    if [ -z "$wall_ns" ] || [ "$w" -lt "$wall_ns" ]; then wall_ns=$w; fi
  done
}

per_call() { awk -v t="$1" -v n="$calls" 'BEGIN { printf "%.1f", t / n }'; }

declare -A loop wall
row() { # name: loop and wall ns/call
  printf "  %-34s %10s %12s\n" "$1" "$(per_call "${loop[$1]}")" "$(per_call "${wall[$1]}")"
}

echo "calls: $calls (entry + exit per call), best of $runs runs; $(nproc) CPUs"
best_of plain "$bin/bench_calls_plain" "$calls" && loop[plain]=$loop_ns wall[plain]=$wall_ns
best_of fi "$bin/bench_calls_fi" "$calls" && loop[fi]=$loop_ns wall[fi]=$wall_ns
best_of ours env SIMPLETRACE_FUNC_DIR="$tmp/data" "$bin/bench_calls_ours" "$calls" &&
  loop[ours]=$loop_ns wall[ours]=$wall_ns
best_of ours_mono env SIMPLETRACE_FUNC_DIR="$tmp/data" SIMPLETRACE_FUNC_CLOCK=monotonic \
  "$bin/bench_calls_ours" "$calls" && loop[ours_mono]=$loop_ns wall[ours_mono]=$wall_ns
have_uftrace=false
if command -v uftrace >/dev/null; then
  have_uftrace=true
  best_of uftrace_fi uftrace record -d "$tmp/data" "$bin/bench_calls_fi" "$calls" &&
    loop[uftrace_fi]=$loop_ns wall[uftrace_fi]=$wall_ns
  if [ -x "$bin/bench_calls_pg" ]; then
    best_of uftrace_pg uftrace record -d "$tmp/data" "$bin/bench_calls_pg" "$calls" &&
      loop[uftrace_pg]=$loop_ns wall[uftrace_pg]=$wall_ns
  fi
fi

printf "  %-34s %10s %12s\n" "" "ns/call" "ns/call"
printf "  %-34s %10s %12s\n" "variant" "(in loop)" "(whole run)"
for k in plain fi ours ours_mono uftrace_fi uftrace_pg; do
  [ -n "${loop[$k]:-}" ] || continue
  case $k in
    plain) name="untraced (no instrumentation)" ;;
    fi) name="-finstrument-functions, no tracer" ;;
    ours) name="simpletrace-func (TSC clock)" ;;
    ours_mono) name="simpletrace-func (clock_gettime)" ;;
    uftrace_fi) name="uftrace record, -finstrument-functions" ;;
    uftrace_pg) name="uftrace record, -pg" ;;
  esac
  loop[$name]=${loop[$k]} wall[$name]=${wall[$k]}
  row "$name"
done
if [ -n "${loop[ours]:-}" ] && [ -n "${loop[plain]:-}" ]; then
  ours_net=$((loop[ours] - loop[plain]))
  echo "  tracing cost, simpletrace-func: $(per_call $ours_net) ns/call over the untraced loop"
  if $have_uftrace && [ -n "${loop[uftrace_fi]:-}" ]; then
    uft_net=$((loop[uftrace_fi] - loop[plain]))
    awk -v u="$uft_net" -v o="$ours_net" -v uw="${wall[uftrace_fi]}" -v ow="${wall[ours]}" 'BEGIN {
      printf "  uftrace record / simpletrace-func: %.1fx in the loop, %.1fx whole run\n", u / o, uw / ow }'
  fi
fi
$have_uftrace || echo "  uftrace not installed: no comparison"
