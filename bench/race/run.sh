#!/usr/bin/env bash
# The race: the same program and event (race.c, trace-events), generated
# once for the simple backend and once for LTTng-UST, run side by side in
# this one invocation. For each: ns per traced call on 1 and 2 threads at
# full speed, events lost, bytes per event in the trace (trace size /
# events recorded), then the ratios; and the losses of both at one same
# paced rate. The simple backend runs twice, writing plain v4 and with
# compress=zstd (its default level; RACE_COMPRESS=zstd:1 another). Then,
# side by side:
#   - bytes per event on disk of plain v4, compress=zstd and LTTng's CTF,
#     from runs that lose nothing (paced at RACE_BYTES_RATE per thread), and
#     in the same runs the CPU time spent writing the trace per event (simple:
#     the process's less its tracing threads'; LTTng: its consumer daemons'),
#     which, unlike rates, hardly depends on the machine's other load;
#   - the highest paced rate per thread at which each loses nothing, for 1
#     and 2 threads, every trace written to a real file (a temporary
#     directory of the file system TMPDIR is on): doubling from
#     RACE_SEARCH_FROM until a run loses events, then RACE_SEARCH_STEPS
#     bisections, each run long enough that no buffer holds it all; and the
#     ratios to LTTng-UST's.
# Figures only: never fails a build.
#
# LTTng runs under a session daemon this script starts and stops itself, in
# a private mount namespace (its own /run, LTTNG_HOME in a temporary
# directory), so it shares nothing with another daemon. Needs root for the
# namespace, lttng-tools, babeltrace2 and the race_ust program (built when
# liblttng-ust-dev is installed); without them only the simple side runs.
#
# usage: run.sh BUILD-DIR     knobs: RACE_EVENTS (per thread, default 2000000),
#                              RACE_RATES (events/s per thread of the paced runs, default "1000000 4000000"),
#                              RACE_BYTES_RATE (default 250000), RACE_SEARCH_FROM (default 500000),
#                              RACE_SEARCH_STEPS (default 3), RACE_SEARCH_SECONDS (default 1) and
#                              RACE_SEARCH_EVENTS (at least, default 2000000) per run and thread,
#                              RACE_SEARCH=0 leaves the search out, RACE_COMPRESS (default zstd)
set -u
build=$(cd "${1:-build}" && pwd)
dir=$build/bench/race
events=${RACE_EVENTS:-2000000}
rates=${RACE_RATES:-1000000 4000000}
bytes_rate=${RACE_BYTES_RATE:-250000}
search_from=${RACE_SEARCH_FROM:-500000}
search_steps=${RACE_SEARCH_STEPS:-3}
search_seconds=${RACE_SEARCH_SECONDS:-1}
search_events=${RACE_SEARCH_EVENTS:-2000000}
search=${RACE_SEARCH:-1}
compress=${RACE_COMPRESS:-zstd}

if [ -z "${ST_RACE_IN_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  exec unshare -m --propagation private env ST_RACE_IN_NS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
. "$(dirname "$0")/../../scripts/lttng_private.sh"
cleanup() {
  lttng_private_stop
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_lttng: the private session daemon; false (and why on stdout) when it cannot run
start_lttng() {
  if [ -z "${ST_RACE_IN_NS:-}" ]; then echo "race: ust side skipped: needs root and unshare (private /run)"; return 1; fi
  for t in lttng lttng-sessiond babeltrace2; do
    command -v $t >/dev/null || { echo "race: ust side skipped: $t missing (lttng-tools, babeltrace2)"; return 1; }
  done
  [ -x "$dir/race_ust" ] || { echo "race: ust side skipped: race_ust not built (liblttng-ust-dev)"; return 1; }
  lttng_private_start "$tmp/lttng"
}

# field NAME LINE: the value after NAME in a race output line
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<"$2"; }

# run_simple THREADS [RATE [EVENTS [EXTRA]]]: "ns lost bytes_per_event drain_cpu_ns fast_frames/frames";
# EXTRA: more configuration (",compress=zstd")
run_simple() {
  rm -f "$tmp/simple.trace"
  local out n=${3:-$events}
  out=$(SIMPLETRACE="enable=race_*,file=$tmp/simple.trace${4:-}" "$dir/race_simple" "$1" "$n" ${2:-} 2>/dev/null)
  local written dropped size
  written=$(field written "$out") dropped=$(field dropped "$out")
  size=$(stat -c %s "$tmp/simple.trace")
  echo "$(field ns_per_event "$out") $dropped $(awk -v s="$size" -v n="$written" 'BEGIN { printf "%.2f", n ? s / n : 0 }')" \
    "$(field drain_cpu_ns_per_event "$out") $(field zstd_fast_frames "$out")/$(field zstd_frames "$out")"
}

# run_zstd THREADS [RATE [EVENTS]]: run_simple with compress=$compress
run_zstd() { run_simple "$1" "${2:-}" "${3:-}" ",compress=$compress"; }

# consumer_cpu: CPU ticks (utime + stime) of the session daemon's children, its consumer daemons
consumer_cpu() {
  local p t=0
  for p in $(ps -o pid= --ppid "$lttng_private_pid" 2>/dev/null); do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# run_ust THREADS [RATE [EVENTS]]: "ns lost bytes_per_event drain_cpu_ns -" from a fresh session
# (drain_cpu_ns: the consumer daemons' CPU time per event recorded, at the kernel's tick resolution)
run_ust() {
  rm -rf "$tmp/ust"
  lttng create race --output="$tmp/ust" >/dev/null && lttng enable-event -u 'race:*' >/dev/null &&
    lttng start >/dev/null || return 1
  local out n=${3:-$events} c0 c1
  c0=$(consumer_cpu)
  out=$("$dir/race_ust" "$1" "$n" ${2:-})
  lttng stop >/dev/null && lttng destroy race >/dev/null
  c1=$(consumer_cpu)
  local recorded size
  # babeltrace2's counter sink counts the event messages (it prints as it goes: the last count is the total)
  recorded=$(babeltrace2 "$tmp/ust" -c sink.utils.counter 2>/dev/null | awk '/Event messages/ { n = $1 } END { print n + 0 }')
  size=$(find "$tmp/ust" -type f -name 'channel*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  echo "$(field ns_per_event "$out") $(( $1 * n - recorded )) $(awk -v s="$size" -v n="$recorded" 'BEGIN { printf "%.2f", n ? s / n : 0 }')" \
    "$(awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="$recorded" 'BEGIN { printf "%.1f", n ? c * 1e9 / hz / n : 0 }') -"
}

# search_run RUNNER THREADS RATE: "ns lost bpe" of a run long enough that no buffer holds it all
# (RATE x RACE_SEARCH_SECONDS events per thread, RACE_SEARCH_EVENTS at least)
search_run() {
  local n
  n=$(awk -v r="$3" -v s="$search_seconds" -v m="$search_events" 'BEGIN { n = r * s; printf "%d", (n > m ? n : m) }')
  $1 "$2" "$3" "$n"
}

# max_rate RUNNER THREADS: the highest paced rate per thread at which RUNNER lost nothing ("0": none found;
# ">=R": it lost nothing running as fast as it could, at R; pacing could ask no more)
max_rate() {
  local runner=$1 t=$2 rate=$search_from lo=0 hi=0 ns lost bpe
  while :; do
    read -r ns lost bpe _ < <(search_run "$runner" "$t" "$rate") || return 1
    if [ "${lost:-1}" != 0 ]; then hi=$rate; break; fi
    lo=$rate
    # a run slower than asked (by a tenth) was not held back by pacing: no faster rate exists
    if awk -v ns="$ns" -v r="$rate" 'BEGIN { exit !(ns > 0 && 1e9 / ns < 0.9 * r) }'; then
      echo ">=$(awk -v ns="$ns" 'BEGIN { printf "%d", 1e9 / ns }')"
      return
    fi
    rate=$((rate * 2))
  done
  for _ in $(seq "$search_steps"); do
    [ "$lo" = 0 ] && break # lost at the first rate already
    rate=$(((lo + hi) / 2))
    read -r ns lost bpe _ < <(search_run "$runner" "$t" "$rate") || return 1
    if [ "${lost:-1}" = 0 ]; then lo=$rate; else hi=$rate; fi
  done
  echo "$lo"
}

# ratio A B: A / B to 2 decimals, "-" when either is unknown (a ">=" bound compares as its bound)
ratio() { awk -v a="${1#>=}" -v b="${2#>=}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }'; }

printf 'events per thread: %s (RACE_EVENTS), paced rates: %s events/s per thread (RACE_RATES)\n' "$events" "$rates"
ust_ok=false
start_lttng && ust_ok=true
printf 'files in %s (%s)\n' "$tmp" "$(stat -f -c %T "$tmp")"
printf '%-28s %12s %12s %14s %14s %12s %12s %12s\n' run ns/event lost lost% bytes/event ratio drain-cpu-ns fast-frames
# row LABEL THREADS "ns lost bpe drain_cpu_ns fast/frames" [RATIO]
row() {
  local ns lost bpe dcpu fast
  read -r ns lost bpe dcpu fast <<<"$3"
  printf '%-28s %12s %12s %13.2f%% %14s %12s %12s %12s\n' "$1" "$ns" "$lost" \
    "$(awk -v l="$lost" -v n=$(($2 * events)) 'BEGIN { print n ? 100 * l / n : 0 }')" "$bpe" "${4:-}" "$dcpu" "$fast"
}
for t in 1 2; do
  s_out=$(run_simple $t)
  row "simple, $t thread(s)" $t "$s_out"
  row "simple zstd, $t thread(s)" $t "$(run_zstd $t)"
  if $ust_ok; then
    u_out=$(run_ust $t)
    row "ust, $t thread(s)" $t "$u_out" "$(ratio "${u_out%% *}" "${s_out%% *}")x"
  fi
done
for rate in $rates; do
  row "simple, 2 threads, ${rate}/s" 2 "$(run_simple 2 "$rate")"
  row "simple zstd, 2 thr, ${rate}/s" 2 "$(run_zstd 2 "$rate")"
  $ust_ok && row "ust, 2 threads, ${rate}/s" 2 "$(run_ust 2 "$rate")"
done
echo "ratio = ust ns/event / simple ns/event (above 1: simple is faster); at full speed a dropped"
echo "event is cheaper than a recorded one, so read ns/event with the lost column; the paced runs"
echo "compare losses at one same rate (their ns/event is the pacing); drain-cpu-ns: CPU time spent writing"
echo "the trace per event written (simple: the process's less the tracing threads'; ust: its consumer"
echo "daemons', at 10 ms resolution); fast-frames: compress=zstd frames made at a faster level (backlog)"

# Bytes per event on disk, from runs that lose nothing.
echo
printf 'bytes per event on disk (1 thread paced at %s events/s, %s events; lossless runs only):\n' "$bytes_rate" "$events"
read -r _ plost pbpe pcpu _ < <(run_simple 1 "$bytes_rate")
read -r _ zlost zbpe zcpu zfast < <(run_zstd 1 "$bytes_rate")
ulost=- ubpe=- ucpu=-
$ust_ok && read -r _ ulost ubpe ucpu _ < <(run_ust 1 "$bytes_rate")
lossless() { [ "$1" = 0 ] && echo "$2" || echo "- (lost $1)"; }
printf "  plain v4 %s, compress=$compress %s, LTTng CTF %s\\n" "$(lossless "$plost" "$pbpe")" "$(lossless "$zlost" "$zbpe")" \
  "$(lossless "$ulost" "$ubpe")"
printf "  ratios: plain/zstd %sx, CTF/zstd %sx, CTF/plain %sx (target: compress=zstd under 10 bytes/event)\\n" \
  "$(ratio "$pbpe" "$zbpe")" "$(ratio "$ubpe" "$zbpe")" "$(ratio "$ubpe" "$pbpe")"
# CPU time, unlike the rate search below, hardly depends on what else the machine runs.
printf '  CPU time writing the trace per event (same runs): plain %s ns, compress=%s %s ns (frames made faster: %s), LTTng consumer %s ns\n' \
  "$pcpu" "$compress" "$zcpu" "$zfast" "$ucpu"
printf '  events/s one core could write at that cost: plain %s, compress=%s %s, LTTng %s; compress=%s/LTTng %sx\n' \
  "$(awk -v c="$pcpu" 'BEGIN { if (c > 0) printf "%.0f", 1e9 / c; else printf "-" }')" "$compress" \
  "$(awk -v c="$zcpu" 'BEGIN { if (c > 0) printf "%.0f", 1e9 / c; else printf "-" }')" \
  "$(awk -v c="$ucpu" 'BEGIN { if (c > 0) printf "%.0f", 1e9 / c; else printf "-" }')" "$compress" "$(ratio "$ucpu" "$zcpu")"

[ "$search" = 0 ] && exit 0
echo
printf 'highest paced rate per thread losing nothing (from %s/s doubling, then %s bisections; a run: %s s, %s events per thread at least):\n' \
  "$search_from" "$search_steps" "$search_seconds" "$search_events"
printf '%-10s %16s %16s %16s %14s %14s\n' threads simple "simple zstd" ust simple/ust zstd/ust
for t in 1 2; do
  sr=$(max_rate run_simple $t) zr=$(max_rate run_zstd $t) ur=-
  $ust_ok && ur=$(max_rate run_ust $t)
  printf '%-10s %16s %16s %16s %13sx %13sx\n' "$t" "$sr" "$zr" "$ur" "$(ratio "$sr" "$ur")" "$(ratio "$zr" "$ur")"
done
echo "(target: twice LTTng-UST's rate; '>=R': lost nothing running as fast as it could, R events/s per thread)"
