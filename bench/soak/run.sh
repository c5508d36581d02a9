#!/usr/bin/env bash
# Soak benchmark (issue 7): a few minutes of several threads tracing into a
# trace file rotated by size, while this script steers the program from
# outside through `simpletrace ctl` (soak_note off/on every 0.5-1 s, a
# `trace-file flush` and an `info stats` now and then). Then soak_check
# reads every piece and checks the invariants (PASS/FAIL per check), and
# the figures are printed. Exit status 1 when a check failed (the trace is
# then kept and its directory named), 0 otherwise. Not run in CI.
#
# Disk: the pieces go to a temporary directory under SOAK_TMP, removed at
# the end. The default pace, 100000 calls/s per thread in bursts, writes
# about 20 MB/s (3.7 GB in 180 s); SOAK_RATE=0 (flat out) writes what the
# writer and disk take, 130-220 MB/s on the 2-core VM (about 30 GB in
# 180 s). The run is refused when the estimate exceeds 80% of the free
# space.
#
# usage: run.sh BUILD-DIR
# knobs: SOAK_SECONDS (180), SOAK_THREADS (4), SOAK_RATE (calls/s per
#        thread, 0 = flat out; 100000), SOAK_BURST (calls at full speed
#        between sleeps; 16384), SOAK_ROTATE (piece size; 16M),
#        SOAK_BUFSIZE (per-thread buffer; 1M: small enough for bursts to
#        drop now and then), SOAK_TMP (/tmp)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
seconds=${SOAK_SECONDS:-180}
threads=${SOAK_THREADS:-4}
rate=${SOAK_RATE:-100000}
burst=${SOAK_BURST:-16384}
rotate=${SOAK_ROTATE:-16M}
bufsize=${SOAK_BUFSIZE:-1M}
st=$build/src/cli/simpletrace
soak=$build/bench/soak/soak
check=$build/bench/soak/soak_check
events=$root/bench/soak/soak-events

ninja -C "$build" src/cli/simpletrace bench/soak/soak bench/soak/soak_check >/dev/null || exit 1

# refuse_full_disk: false (and why) when the run could fill the disk
refuse_full_disk() {
  local bps free
  if [ "$rate" -eq 0 ]; then bps=250000000; else bps=$((threads * rate * 65)); fi
  free=$(df -P -B1 "${SOAK_TMP:-/tmp}" | awk 'NR == 2 { print $4 }')
  estimate=$((bps * seconds))
  if [ "$estimate" -gt $((free / 10 * 8)) ]; then
    echo "soak: refused: would write about $((estimate / 1000000)) MB, $((free / 1000000)) MB free"
    return 1
  fi
}
refuse_full_disk || exit 1

tmp=$(mktemp -d "${SOAK_TMP:-/tmp}/st-soak.XXXXXX") || exit 1
pid=
keep=false
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" 2>/dev/null; fi
  if $keep; then echo "soak: trace kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }

# ctl KIND CMD...: runs `simpletrace ctl PID CMD...`, timing it under KIND
# (toggle, flush, info); the answer in $answer, false on failure
declare -A ctl_n=() ctl_ns=() ctl_max=()
ctl_errors=0
ctl() {
  local kind=$1 t0 t1 rc
  shift
  t0=$(now_ns)
  answer=$("$st" ctl "$pid" "$@" 2>&1)
  rc=$?
  t1=$(now_ns)
  ctl_n[$kind]=$((${ctl_n[$kind]:-0} + 1)) ctl_ns[$kind]=$((${ctl_ns[$kind]:-0} + t1 - t0))
  [ $((t1 - t0)) -gt "${ctl_max[$kind]:-0}" ] && ctl_max[$kind]=$((t1 - t0))
  if [ $rc -ne 0 ] && kill -0 "$pid" 2>/dev/null; then
    ctl_errors=$((ctl_errors + 1))
    echo "soak: ctl $*: $answer" >&2
  fi
  return $rc
}

# ctl_figure KIND: "mean/max ms over N" of the KIND commands
ctl_figure() {
  awk -v n="${ctl_n[$1]:-0}" -v ns="${ctl_ns[$1]:-0}" -v max="${ctl_max[$1]:-0}" \
    'BEGIN { printf "%.1f/%.1f ms over %d", (n ? ns / n / 1e6 : 0), max / 1e6, n }'
}

# json_field NAME: the number after "NAME": in $answer
json_field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$answer"; }

# progress T: one line of the program's counters, T seconds in
progress() {
  ctl info --json info stats || return
  local pieces
  pieces=$(find "$tmp" -maxdepth 1 -name 'soak*' | wc -l)
  printf '  %4ds  produced %12s  written %12s  dropped %10s  %8.1f MB  %4d pieces\n' "$1" \
    "$(json_field produced)" "$(json_field written)" "$(json_field dropped)" \
    "$(awk -v b="$(json_field bytes_written)" 'BEGIN { print b / 1e6 }')" "$pieces"
}

echo "soak: $threads threads, $seconds s, $( [ "$rate" -eq 0 ] && echo 'flat out' || echo "$rate calls/s per thread in bursts of $burst"), rotate=$rotate, bufsize=$bufsize, in $tmp"
"$soak" -o "$tmp" -t "$threads" -d "$seconds" -r "$rate" -B "$burst" -s "$rotate" -b "$bufsize" \
  >"$tmp/program.out" 2>"$tmp/program.err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^soak-ready' "$tmp/program.out" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
if ! grep -q '^soak-ready' "$tmp/program.out" || ! ctl info info stats; then
  echo "soak: the program did not start:"; cat "$tmp/program.err"; keep=true; exit 1
fi

# Steer until a second before the threads stop, so every off lands while they trace.
start=$(now_ns)
stop=$((start + (seconds - 1) * 1000000000))
state=on off_sent=0 on_sent=0 flushes=0 infos=0 round=0 next_progress=15
while kill -0 "$pid" 2>/dev/null; do
  sleep "0.$((500 + RANDOM % 500))"
  [ "$(now_ns)" -ge "$stop" ] && break
  round=$((round + 1))
  if [ $state = on ]; then
    ctl toggle trace-event soak_note off && off_sent=$((off_sent + 1)) state=off
  else
    ctl toggle trace-event soak_note on && on_sent=$((on_sent + 1)) state=on
  fi
  if [ $((round % 5)) -eq 0 ]; then ctl flush trace-file flush && flushes=$((flushes + 1)); fi
  if [ $((round % 7)) -eq 0 ]; then ctl info info stats >/dev/null && infos=$((infos + 1)); fi
  elapsed=$((($(now_ns) - start) / 1000000000))
  if [ "$elapsed" -ge "$next_progress" ]; then
    progress "$elapsed" && infos=$((infos + 1))
    next_progress=$((next_progress + 15))
  fi
done
wait "$pid"
rc=$?
pid=
if [ $rc -ne 0 ] || ! grep -q '^soak-stats' "$tmp/program.out"; then
  echo "soak: the program failed (exit $rc):"; cat "$tmp/program.err"; keep=true; exit 1
fi

t0=$(now_ns)
"$check" --toggles-off "$off_sent" "$events" "$tmp/program.out" | tee "$tmp/check.out"
check_rc=${PIPESTATUS[0]}
check_s=$(awk -v n=$(($(now_ns) - t0)) 'BEGIN { printf "%.2f", n / 1e9 }')
[ "$check_rc" -eq 0 ] && [ "$ctl_errors" -eq 0 ] || keep=true

# Figures: the program's final st_stats, what the checker counted, the ctl timings.
stats=$(grep '^soak-stats' "$tmp/program.out")
checked=$(grep '^soak-check' "$tmp/check.out")
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
calls=$(awk '/^soak-thread/ { sub(/.* calls=/, ""); sub(/ .*/, ""); n += $0 } END { print n }' "$tmp/program.out")
awk -v calls="$calls" -v el="$(field elapsed "$stats")" -v pr="$(field produced "$stats")" -v wr="$(field written "$stats")" \
  -v dr="$(field dropped "$stats")" -v by="$(field bytes_written "$stats")" -v rss="$(field maxrss_kb "$stats")" \
  -v pieces="$(field pieces "$checked")" -v minfill="$(field min_fill "$checked")" -v th="$threads" \
  -v rot="$rotate" -v off="$off_sent" -v on="$on_sent" -v fl="$flushes" -v inf="$infos" -v cerr="$ctl_errors" \
  -v ctog="$(ctl_figure toggle)" -v cfl="$(ctl_figure flush)" -v cinf="$(ctl_figure info)" -v cs="$check_s" 'BEGIN {
  printf "\nsoak figures\n"
  printf "  %-26s %.1f s, %d threads\n", "duration", el, th
  printf "  %-26s %d (%.2f M/s)\n", "calls", calls, calls / el / 1e6
  printf "  %-26s %d (%.2f M/s; soak_note off: not traced)\n", "events traced", pr, pr / el / 1e6
  printf "  %-26s %d (%.2f M/s)\n", "written", wr, wr / el / 1e6
  printf "  %-26s %d (%.3f%%)\n", "dropped", dr, (pr ? 100 * dr / pr : 0)
  printf "  %-26s %.1f MB (%.1f MB/s)\n", "trace bytes", by / 1e6, by / el / 1e6
  printf "  %-26s %d of %s (smallest but the last: %.1f MB)\n", "pieces", pieces, rot, minfill / 1e6
  printf "  %-26s %d off, %d on; %d flushes, %d info stats\n", "ctl commands", off, on, fl, inf
  printf "  %-26s mean/max: toggle %s; flush %s; info stats %s; %d errors\n", "ctl round trip (with exec)", ctog, cfl, cinf, cerr
  printf "  %-26s %.1f MB\n", "program max RSS", rss / 1024
  printf "  %-26s %s s (%.0f MB/s)\n", "checker time", cs, (cs > 0 ? by / cs / 1e6 : 0)
}'
if $keep; then echo "soak: FAILED"; exit 1; fi
echo "soak: all checks passed"
