#!/usr/bin/env bash
# Redis under redis-benchmark, built and run six ways, side by side in this
# one invocation. Figures only: never fails a build.
#
#   plain   Debian's Redis source, no instrumentation (build.sh plain)
#   idle    plain with one extra thread that never runs (idle_thread.c,
#           LD_PRELOAD): the control for a writeout thread's mere existence
#   off     instrumented (redis.patch, simple backend), every event disabled
#   on      instrumented, every event enabled, dir= on the cache's disk, the
#           default writer=auto (Redis runs threads of its own before it
#           traces: the writeout thread writes)
#   on-thr  the same with writer=thread (not by default: the same as on since
#           writer=auto takes the thread in a process that has threads)
#   ust     the same trace points through LTTng-UST, a session recording them
#           (a session daemon of its own in a private mount namespace, as
#           bench/race does; liblttng-ust-fork preloaded: Redis daemonizes)
#   usdt    the same trace points as USDT probes, nothing attached
#
# Each round runs every configuration once, the order rotated from round to
# round, each a fresh daemon (daemonize yes, a pid file) on loopback under
# `redis-benchmark -P 16` (pipelining: the server's own cost dominates)
# with GET, SET, INCR and LPUSH. Printed: each configuration's median
# requests/s per command and over all four (total requests / total time of
# the round), and the server's CPU time per command from the scheduler's
# count (every thread of the process: the writeout thread's too; its main
# thread alone; LTTng's consumer daemon is another process and is not
# counted), each with its ratio to plain: the median over the rounds of the
# round's ratio, so that a machine busier in one round than in the next
# weighs on both sides. Then the trace's bytes per command and the records
# dropped at that rate, for simple and LTTng.
#
# simpletrace is installed from this source tree into the cache
# (scripts/install.sh, as `make install PREFIX=` does; a prefix per source
# tree), Redis built against it by build.sh (cached: a repeated run builds
# nothing).
#
# usage: run.sh [BUILD-DIR]   (make bench passes its build directory; not used)
# knobs: REDIS_REQUESTS (per command per round, default 500000), REDIS_ROUNDS (7),
#        REDIS_PIPELINE (16), REDIS_CLIENTS (50), REDIS_CACHE (build.sh), REDIS_CONFIGS
#        (default "plain idle off on ust usdt"; on-thr too on request)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
requests=${REDIS_REQUESTS:-500000}
rounds=${REDIS_ROUNDS:-7}
pipeline=${REDIS_PIPELINE:-16}
clients=${REDIS_CLIENTS:-50}
configs=(${REDIS_CONFIGS:-plain idle off on ust usdt})
tests=(SET GET INCR LPUSH)
export REDIS_CACHE=${REDIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/simpletrace-redis}
cache=$REDIS_CACHE

# LTTng's session daemon in a private /run (as bench/race): root and unshare
if [ -z "${ST_REDIS_IN_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  exec unshare -m --propagation private env ST_REDIS_IN_NS=1 bash "$0" "$@"
fi
. "$here/lib.sh"
skip() { echo "redis: skipped: $*"; exit 0; }
for t in redis-benchmark redis-cli; do
  command -v $t >/dev/null || skip "$t missing (Debian package redis-tools: scripts/deps.sh bench)"
done
mkdir -p "$cache" || skip "cannot make $cache"
tmp=$(mktemp -d "$cache/run.XXXXXX")   # on the cache's disk: the traces are real files
. "$src/scripts/lttng_private.sh"
cleanup() {
  [ -n "${redis_pid:-}" ] && kill -9 "$redis_pid" 2>/dev/null
  lttng_private_stop
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- simpletrace installed from this tree, Redis built against it; a build directory and
# prefix per source tree (a Meson build directory belongs to the tree it was set up from)
tree=$(printf '%s' "$src" | sha256sum | cut -c1-12)
prefix=$cache/prefix-$tree
if ! bash "$src/scripts/install.sh" "$cache/st-build-$tree" "$prefix" >"$tmp/install.log" 2>&1; then
  tail -20 "$tmp/install.log"; skip "installing simpletrace into $prefix failed"
fi
export PATH=$prefix/bin:$PATH PKG_CONFIG_PATH=$prefix/lib/pkgconfig
declare -A bin
want=()
for c in "${configs[@]}"; do
  case $c in plain|idle) want+=(plain) ;; off|on|on-thr) want+=(simple) ;; ust) want+=(ust) ;; usdt) want+=(dtrace) ;; esac
done
for v in $(printf '%s\n' "${want[@]}" | sort -u); do
  out=$(bash "$here/build.sh" "$v" 2>"$tmp/build-$v.log")
  case $? in
    0) bin[$v]=${out#* } ;;
    3) skip "$(tail -1 "$tmp/build-$v.log")" ;;
    *) echo "redis: the $v build failed:"; tail -5 "$tmp/build-$v.log" | sed 's/^/  /' ;;
  esac
done
[ -n "${bin[plain]:-}" ] || skip "no uninstrumented build to compare with"
idle_so=$cache/idle_thread.so
cc -O2 -shared -fPIC -o "$idle_so" "$here/idle_thread.c" -pthread || { echo "redis: idle_thread.so failed to build"; idle_so=; }

# --- LTTng: the private session daemon; false (and why on stdout) when it cannot run
ust_fork=
start_lttng() {
  if [ -z "${ST_REDIS_IN_NS:-}" ]; then echo "redis: ust left out: needs root and unshare (private /run)"; return 1; fi
  for t in lttng lttng-sessiond; do
    command -v $t >/dev/null || { echo "redis: ust left out: $t missing (lttng-tools)"; return 1; }
  done
  ust_fork=$(ls /usr/lib/*/liblttng-ust-fork.so.1 2>/dev/null | head -1)
  [ -n "$ust_fork" ] || { echo "redis: ust left out: liblttng-ust-fork.so.1 missing (liblttng-ust1)"; return 1; }
  lttng_private_start "$tmp/lttng"
}
keep=()
for c in "${configs[@]}"; do
  case $c in
    idle) [ -n "$idle_so" ] && keep+=("$c") ;;
    off|on|on-thr) [ -n "${bin[simple]:-}" ] && keep+=("$c") ;;
    ust) [ -n "${bin[ust]:-}" ] && start_lttng && keep+=("$c") ;;
    usdt) [ -n "${bin[dtrace]:-}" ] && keep+=("$c") ;;
    *) keep+=("$c") ;;
  esac
done
configs=("${keep[@]}")

# run_one CONFIG ROUND: one daemon under the benchmark; appends to $tmp/results:
# "CONFIG ROUND TEST RPS" lines and "CONFIG ROUND cpu NS-PER-COMMAND", plus the
# trace's "bytes PER-COMMAND" and "lost N EVENTS" for on and ust
run_one() {
  local c=$1 r=$2 dir=$tmp/$1-$2 port b env=() t0 t1 out calls
  port=$(free_port)
  case $c in
    plain) b=${bin[plain]} ;;
    idle) b=${bin[plain]}; env=(LD_PRELOAD="$idle_so") ;;
    off) b=${bin[simple]} ;;
    on) b=${bin[simple]}; env=(SIMPLETRACE="enable=*,dir=$dir/traces") ;;
    on-thr) b=${bin[simple]}; env=(SIMPLETRACE="enable=*,dir=$dir/traces,writer=thread") ;;
    ust) b=${bin[ust]}; env=(LD_PRELOAD="$ust_fork")
         lttng create "redis-$r" --output="$dir/ust" >/dev/null && lttng enable-event -u 'redis:*' >/dev/null &&
           lttng start >/dev/null || { echo "redis: lttng session failed"; return 1; } ;;
    usdt) b=${bin[dtrace]} ;;
  esac
  mkdir -p "$dir"
  if ! env -u SIMPLETRACE ${env[@]+"${env[@]}"} bash -c '. "$1"; redis_start "$2" "$3" "$4" && echo "$redis_pid" >"$4/pid"' \
        _ "$here/lib.sh" "$b" "$port" "$dir" 2>"$dir/start.err"; then
    echo "redis: $c did not start: $(head -3 "$dir/start.err")"; return 1
  fi
  redis_pid=$(cat "$dir/pid")
  t0=$(cpu_ns "$redis_pid") m0=$(cpu_ns "$redis_pid" "$redis_pid")
  out=$(redis-benchmark -p "$port" -P "$pipeline" -c "$clients" -n "$requests" -t "$(IFS=,; echo "${tests[*]}")" --csv 2>/dev/null)
  t1=$(cpu_ns "$redis_pid") m1=$(cpu_ns "$redis_pid" "$redis_pid")
  calls=$(redis_calls "$port" | awk '{ s += $2 } END { print s + 0 }')
  redis_stop "$port" "$redis_pid"; redis_pid=
  printf '%s\n' "$out" | awk -F'"' -v c="$c" -v r="$r" 'NR > 1 && $4 > 0 { print c, r, $2, $4 }' >>"$tmp/results"
  awk -v c="$c" -v r="$r" -v t=$((t1 - t0)) -v m=$((m1 - m0)) -v n="$calls" \
    'BEGIN { if (n > 0) printf "%s %s cpu %.1f\n%s %s main %.1f\n", c, r, t / n, c, r, m / n }' >>"$tmp/results"
  case $c in
    on|on-thr)
      local bytes lost
      bytes=$(du -sb "$dir/traces" | cut -f1)
      lost=$(simpletrace stats "$dir/traces" 2>/dev/null | sed -n 's/^dropped.*, \([0-9]*\) events lost.*/\1/p')
      echo "$c $r bytes $(awk -v b="$bytes" -v n="$calls" 'BEGIN { printf "%.1f", n ? b / n : 0 }')" >>"$tmp/results"
      echo "$c $r lost ${lost:-?} $(simpletrace stats "$dir/traces" 2>/dev/null | sed -n 's/^records *[0-9]* = \([0-9]*\) events.*/\1/p')" >>"$tmp/results"
      # GET's span (command_begin to command_end) at p99.9 and its max: where the passes a traced
      # thread writes itself (writer=auto) land
      simpletrace latency --by=name --slowest=0 --format=json "$dir/traces" 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["spans"]:
    if s["name"] == "command" and s["group"] == "get":
        print(sys.argv[1], sys.argv[2], "get_span", s["p999_ns"], s["max_ns"])' "$c" "$r" >>"$tmp/results" ;;
    ust)
      local stop discarded
      stop=$( { lttng stop "redis-$r" && lttng list "redis-$r"; lttng destroy "redis-$r"; } 2>&1)
      discarded=$(printf '%s\n' "$stop" | sed -n 's/^ *Discarded events: *\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
      bytes=$(find "$dir/ust" -type f -name 'channel*' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
      echo "$c $r bytes $(awk -v b="$bytes" -v n="$calls" 'BEGIN { printf "%.1f", n ? b / n : 0 }')" >>"$tmp/results"
      echo "$c $r lost ${discarded:-0} ?" >>"$tmp/results" ;;
  esac
  rm -rf "$dir"
}

echo "$("${bin[plain]}" --version | cut -d' ' -f1-3) (Debian's source package), redis-benchmark -P $pipeline -c $clients,\
 $requests requests per command per round (REDIS_REQUESTS), $rounds rounds (REDIS_ROUNDS)"
echo "configurations: ${configs[*]} (order rotated each round)"
: >"$tmp/results"
n=${#configs[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    run_one "${configs[$(( (i + r - 1) % n ))]}" "$r"
  done
  printf 'round %d of %d done\n' "$r" "$rounds"
done

# --- the figures: medians over rounds
python3 - "$tmp/results" "${configs[@]}" <<'PY'
import statistics, sys
path, configs = sys.argv[1], sys.argv[2:]
tests = ["SET", "GET", "INCR", "LPUSH"]
rps, cpu, main, bpc, lost, span = {}, {}, {}, {}, {}, {}   # CONFIG -> ROUND -> value (rps: -> TEST -> value)
for line in open(path):
    f = line.split()
    c, r, what = f[0], int(f[1]), f[2]
    if what == "cpu": cpu.setdefault(c, {})[r] = float(f[3])
    elif what == "main": main.setdefault(c, {})[r] = float(f[3])
    elif what == "bytes": bpc.setdefault(c, []).append(float(f[3]))
    elif what == "lost": lost.setdefault(c, []).append((f[3], f[4]))
    elif what == "get_span": span.setdefault(c, []).append((float(f[3]), float(f[4])))
    else: rps.setdefault(c, {}).setdefault(r, {})[what] = float(f[3])
def med(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")
def total(t):   # requests over time, every command of a round: n / sum(n / rps)
    return len(t) / sum(1 / t[k] for k in t) if all(k in t for k in tests) else None
def paired(a, b):   # per-round ratios a[r] / b[r] of the rounds both have
    return [a[r] / b[r] for r in a if r in b and a[r] and b[r]]
if "plain" not in rps:
    print("redis: no figures for plain"); sys.exit(0)
tot = {c: {r: total(t) for r, t in rounds.items() if total(t)} for c, rounds in rps.items()}
print()
print("%-6s" % "config" + "".join("%9s" % k for k in tests) + "%9s %7s %11s %7s %12s %7s" % (
    "all", "ratio", "cpu ns/cmd", "ratio", "main ns/cmd", "ratio"))
ratio = {}
for c in configs:
    if c not in rps: continue
    row = [med(t[k] for t in rps[c].values() if k in t) for k in tests]
    ratio[c] = med(paired(tot[c], tot["plain"]))
    cr = med(paired(cpu.get(c, {}), cpu.get("plain", {})))
    mr = med(paired(main.get(c, {}), main.get("plain", {})))
    print("%-6s" % c + "".join("%9.0f" % v for v in row) + "%9.0f %6.3fx %11.0f %6.3fx %12.0f %6.3fx" % (
        med(tot[c].values()), ratio[c], med(cpu.get(c, {}).values()), cr, med(main.get(c, {}).values()), mr))
print("(requests/s and ns of CPU per command: medians over the rounds; each ratio: the median over the rounds of")
print(" the configuration's figure over plain's in the same round. cpu: every thread of the process, the writeout")
print(" thread's too; main: its main thread alone; LTTng's consumer daemon is another process, not counted)")
print()
for c, name in (("on", "simple"), ("on-thr", "simple, writer=thread"), ("ust", "LTTng-UST")):
    if c in bpc:
        ls = lost.get(c, [])
        print("%s: trace bytes per command %.1f (median); records lost per round: %s" % (
            name, med(bpc[c]), ", ".join("%s of %s" % (a, b) if b != "?" else a for a, b in ls)))
        if c in span:
            print("  GET's span (command_begin to command_end): p99.9 %.0f ns, max %.1f us (medians over the rounds)" % (
                med(p for p, m in span[c]), med(m for p, m in span[c]) / 1e3))
if "on" in ratio:
    cost = (1 - ratio["on"]) * 100
    line = "events enabled (simple, writer=auto): %.1f%% of throughput (target: at most 2%%)" % cost
    if "on-thr" in ratio:
        line += "; writer=thread: %.1f%%" % ((1 - ratio["on-thr"]) * 100)
    if "ust" in ratio:
        ucost = (1 - ratio["ust"]) * 100
        line += "; LTTng-UST at the same points: %.1f%% (%.1f points more)" % (ucost, ucost - cost)
    print(line)
others = [("off", "events disabled"), ("usdt", "USDT, nothing attached"), ("idle", "one idle extra thread (control)")]
print("; ".join("%s: %.1f%%" % (name, (1 - ratio[c]) * 100) for c, name in others if c in ratio))
PY
