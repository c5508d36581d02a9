#!/usr/bin/env bash
# The race: the same program and event (race.c, trace-events), generated
# once for the simple backend and once for LTTng-UST, run side by side in
# this one invocation. For each: ns per traced call on 1 and 2 threads at
# full speed, events lost, bytes per event in the trace (trace size /
# events recorded), then the ratios; and the losses of both at one same
# paced rate. Figures only: never fails a build.
#
# LTTng runs under a session daemon this script starts and stops itself, in
# a private mount namespace (its own /run, LTTNG_HOME in a temporary
# directory), so it shares nothing with another daemon. Needs root for the
# namespace, lttng-tools, babeltrace2 and the race_ust program (built when
# liblttng-ust-dev is installed); without them only the simple side runs.
#
# usage: run.sh BUILD-DIR     knobs: RACE_EVENTS (per thread, default 2000000),
#                              RACE_RATES (events/s per thread of the paced runs, default "1000000 4000000")
set -u
build=$(cd "${1:-build}" && pwd)
dir=$build/bench/race
events=${RACE_EVENTS:-2000000}
rates=${RACE_RATES:-1000000 4000000}

if [ -z "${ST_RACE_IN_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  exec unshare -m --propagation private env ST_RACE_IN_NS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
sessiond_pid=
cleanup() {
  if [ -n "$sessiond_pid" ]; then
    lttng destroy --all >/dev/null 2>&1
    kill "$sessiond_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$sessiond_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$sessiond_pid" 2>/dev/null
    umount /run 2>/dev/null
  fi
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
  mkdir -p "$tmp/run" "$tmp/home"
  mount --bind "$tmp/run" /run || return 1
  export LTTNG_HOME=$tmp/home
  lttng-sessiond --daemonize --no-kernel --pidfile="$tmp/sessiond.pid" >/dev/null 2>&1 || return 1
  sessiond_pid=$(cat "$tmp/sessiond.pid")
}

# field NAME LINE: the value after NAME in a race output line
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<"$2"; }

# run_simple THREADS [RATE]: "ns lost bytes_per_event"
run_simple() {
  rm -f "$tmp/simple.trace"
  local out
  out=$(SIMPLETRACE="enable=race_*,file=$tmp/simple.trace" "$dir/race_simple" "$1" "$events" ${2:-})
  local written dropped size
  written=$(field written "$out") dropped=$(field dropped "$out")
  size=$(stat -c %s "$tmp/simple.trace")
  echo "$(field ns_per_event "$out") $dropped $(awk -v s="$size" -v n="$written" 'BEGIN { printf "%.1f", n ? s / n : 0 }')"
}

# run_ust THREADS [RATE]: "ns lost bytes_per_event" from a fresh session
run_ust() {
  rm -rf "$tmp/ust"
  lttng create race --output="$tmp/ust" >/dev/null && lttng enable-event -u 'race:*' >/dev/null &&
    lttng start >/dev/null || return 1
  local out
  out=$("$dir/race_ust" "$1" "$events" ${2:-})
  lttng stop >/dev/null && lttng destroy race >/dev/null
  local recorded size
  recorded=$(babeltrace2 "$tmp/ust" 2>/dev/null | grep -c ' race:race_tick:')
  size=$(find "$tmp/ust" -type f -name 'channel*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  echo "$(field ns_per_event "$out") $(( $1 * events - recorded )) $(awk -v s="$size" -v n="$recorded" 'BEGIN { printf "%.1f", n ? s / n : 0 }')"
}

printf 'events per thread: %s (RACE_EVENTS), paced rates: %s events/s per thread (RACE_RATES)\n' "$events" "$rates"
ust_ok=false
start_lttng && ust_ok=true
printf '%-28s %12s %12s %14s %14s %12s\n' run ns/event lost lost% bytes/event ratio
for t in 1 2; do
  read -r sns slost sbpe < <(run_simple $t)
  printf '%-28s %12s %12s %13.2f%% %14s\n' "simple, $t thread(s)" "$sns" "$slost" "$(awk -v l="$slost" -v n=$((t * events)) 'BEGIN { print 100 * l / n }')" "$sbpe"
  if $ust_ok; then
    read -r uns ulost ubpe < <(run_ust $t)
    printf '%-28s %12s %12s %13.2f%% %14s %11sx\n' "ust, $t thread(s)" "$uns" "$ulost" "$(awk -v l="$ulost" -v n=$((t * events)) 'BEGIN { print 100 * l / n }')" "$ubpe" \
      "$(awk -v u="$uns" -v s="$sns" 'BEGIN { printf "%.2f", (s > 0 ? u / s : 0) }')"
  fi
done
for rate in $rates; do
  read -r sns slost sbpe < <(run_simple 2 "$rate")
  printf '%-28s %12s %12s %13.2f%% %14s\n' "simple, 2 threads, ${rate}/s" "$sns" "$slost" "$(awk -v l="$slost" -v n=$((2 * events)) 'BEGIN { print 100 * l / n }')" "$sbpe"
  if $ust_ok; then
    read -r uns ulost ubpe < <(run_ust 2 "$rate")
    printf '%-28s %12s %12s %13.2f%% %14s\n' "ust, 2 threads, ${rate}/s" "$uns" "$ulost" "$(awk -v l="$ulost" -v n=$((2 * events)) 'BEGIN { print 100 * l / n }')" "$ubpe"
  fi
done
echo "ratio = ust ns/event / simple ns/event (above 1: simple is faster); at full speed a dropped"
echo "event is cheaper than a recorded one, so read ns/event with the lost column; the paced runs"
echo "compare losses at one same rate (their ns/event is the pacing)"
