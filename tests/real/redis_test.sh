#!/usr/bin/env bash
# real-redis: Redis, a server nobody wrote for our tests, traced as it is run
# (bench/real/redis/: Debian's source package, redis.patch's trace points,
# built against a fresh `make install`), and every record accounted for:
#   1. daemonize yes, a pid file, dir=, monitor=on, crash=: a few seconds of
#      redis-benchmark, BGSAVE and BGREWRITEAOF, SIGTERM. The command_end
#      records of each command equal what Redis's own INFO commandstats
#      counted (plus the INFO call itself, counted after its reply), or, when
#      records were dropped, the records plus the dropped count cover it;
#      each fork child wrote its own trace and left no ring file or socket
#      (it ends with _exit(), after st_trace_finish()); latency by command
#      name and a Perfetto export read the directory.
#   2. under load: `simpletrace ctl` lists the daemon and turns the command
#      events off and on; then, with writes paused (CLIENT PAUSE WRITE) and
#      LLEN read, `kill -9`: the trace plus what `simpletrace recover`
#      rebuilds from crash= hold exactly LLEN LPUSH commands.
# Skipped, saying why, when Debian's source package cannot be fetched (no
# network, no deb-src entry and no root). Runs in the plain build only.
# TAP output. Usage: redis_test.sh SOURCE-DIR
set -u
src=$(cd "$1" && pwd)
rdir=$src/bench/real/redis
tmp=$(mktemp -d)
n=0 fail=0
pids=()
cleanup() {
  local p
  for p in ${pids[@]+"${pids[@]}"}; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }
skip() { n=$((n+1)); echo "ok $n - $1 # SKIP $2"; }
show() { tail -25 "$@" | sed 's/^/# /'; false; }   # a failed check's evidence; fails
bail() { echo "Bail out! $*"; exit 1; }

for t in redis-benchmark redis-cli; do
  command -v $t >/dev/null || bail "$t missing: install Debian's redis-tools (scripts/deps.sh check)"
done
export REDIS_CACHE=${REDIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/simpletrace-redis}
out=$(bash "$rdir/build.sh" --fetch 2>"$tmp/fetch.err")
case $? in
  0) ;;
  3) echo "1..0 # SKIP $(tail -1 "$tmp/fetch.err" | sed 's/^redis build: //')"; exit 0 ;;
  *) cat "$tmp/fetch.err" | sed 's/^/# /'; bail "fetching Redis's source failed" ;;
esac
echo "# Debian's redis ${out%% *}"

# --- simpletrace installed as README "Installing" says, Redis built against it
prefix=$tmp/prefix
bash "$src/scripts/install.sh" "$tmp/st-build" "$prefix" >"$tmp/install.log" 2>&1
check "simpletrace installs into a prefix (scripts/install.sh, make install PREFIX=)" \
  '[ -x "$prefix/bin/simpletrace" ] || show "$tmp/install.log"'
export PATH=$prefix/bin:$PATH PKG_CONFIG_PATH=$prefix/lib/pkgconfig
out=$(REDIS_BUILDS=$tmp/builds JOBS=${JOBS:-2} bash "$rdir/build.sh" simple 2>"$tmp/build.err")
bin=${out#simple }
check "Redis builds with redis.patch and the generated trace code (simple backend)" \
  '[ -x "$bin" ] || show "$tmp/build.err"'
[ -x "$bin" ] || { echo "1..$n"; exit 1; }
. "$rdir/lib.sh"
# The monitors' sockets (monitor=on) in a directory of the test's own
export XDG_RUNTIME_DIR=$tmp/xdg
mkdir -m 0700 "$XDG_RUNTIME_DIR"

# count_ends SQL-WHERE FILE...: command_end records per name, "NAME COUNT" lines
count_ends() {
  local where=$1; shift
  simpletrace sql "$@" -e "SELECT name, count(*) FROM command_end $where GROUP BY name" 2>"$tmp/sql.err" | tail -n +3
}

# --- 1. as Redis is run, every record accounted for
run1=$tmp/run1 port=$(free_port)
SIMPLETRACE="enable=*,dir=$run1/traces,monitor=on,crash=$run1/crash" redis_start "$bin" "$port" "$run1" 2>"$tmp/start1.err"
pid=${redis_pid:-}
[ -n "$pid" ] && pids+=("$pid")
check "the instrumented Redis daemonizes and answers (daemonize yes, pidfile)" '[ -n "$pid" ] || show "$tmp/start1.err"'
[ -n "$pid" ] || { echo "1..$n"; exit 1; }
simpletrace ctl list >"$tmp/list1" 2>&1
check "simpletrace ctl list names the daemon ($pid), daemonize()'s fork child" 'grep -q "^$pid " "$tmp/list1" || show "$tmp/list1"'
redis-benchmark -p "$port" -P 16 -c 20 -n 100000 -t get,set,incr,lpush -q >"$tmp/bench1" 2>&1
check "redis-benchmark runs (GET, SET, INCR, LPUSH, -P 16)" '[ "$(grep -c "requests per second" "$tmp/bench1")" -eq 4 ] || show "$tmp/bench1"'

# wait_info FIELD VALUE: up to 30 s for INFO persistence's FIELD to read VALUE
wait_info() {
  local i
  for i in $(seq 300); do
    redis-cli -p "$port" info persistence | tr -d '\r' | grep -qx "$1:$2" && return 0
    sleep 0.1
  done
  return 1
}
redis-cli -p "$port" bgsave >/dev/null
check "BGSAVE's child ends, saved" 'wait_info rdb_bgsave_in_progress 0 && wait_info rdb_last_bgsave_status ok'
redis-cli -p "$port" bgrewriteaof >/dev/null
check "BGREWRITEAOF's child ends, rewritten" 'wait_info aof_rewrite_in_progress 0 && wait_info aof_last_bgrewrite_status ok'
redis_calls "$port" >"$tmp/calls1"
redis_stop "$port" "$pid"
check "SIGTERM: the daemon exits" '! kill -0 "$pid" 2>/dev/null'

tr1=$run1/traces/redis-server-$pid.trace
ls "$run1/traces" >"$tmp/files1" 2>&1
check "dir= holds the daemon's trace, its parent's (daemonize) and one per fork child: 4 files" \
  '[ -f "$tr1" ] && [ "$(grep -c "^redis-server-[0-9]*\.trace$" "$tmp/files1")" -eq 4 ] || show "$tmp/files1"'
simpletrace stats "$run1/traces" >"$tmp/stats1" 2>&1
lost=$(sed -n 's/^dropped.*, \([0-9]*\) events lost.*/\1/p' "$tmp/stats1")
check "simpletrace stats reads the directory (drops: ${lost:-?} events)" '[ -n "$lost" ] || show "$tmp/stats1"'
count_ends "" "$run1/traces" >"$tmp/ends1"
# INFO's own call is counted by Redis after its reply: the trace has it, INFO's count not.
expected=$(awk '{ print $1, $2 + ($1 == "info") }' "$tmp/calls1" | sort)
got=$(awk '{ print $1, $2 }' "$tmp/ends1" | sort)
total_expected=$(awk '{ s += $2 } END { print s + 0 }' <<<"$expected")
total_got=$(awk '{ s += $2 } END { print s + 0 }' <<<"$got")
echo "# commands: Redis counted $total_expected, the trace has $total_got command_end records, $lost events dropped"
if [ "${lost:-1}" = 0 ]; then
  check "command_end records per command name = INFO commandstats (no drops)" \
    '[ "$expected" = "$got" ] || { diff <(echo "$expected") <(echo "$got") | sed "s/^/# /"; false; }'
else
  check "command_end records + dropped cover INFO commandstats ($lost dropped)" \
    '[ "$total_got" -le "$total_expected" ] && [ $((total_got + lost)) -ge "$total_expected" ]'
fi
begins=$(simpletrace sql "$run1/traces" -e "SELECT count(*) FROM command_begin" 2>/dev/null | tail -1 | tr -d ' ')
check "as many command_begin as command_end records" '[ "$begins" = "$total_got" ]'
simpletrace print --events=fork_parent,child_done "$tr1" >"$tmp/forks" 2>&1
check "the daemon's trace: fork_parent and child_done (exit 0) for BGSAVE and BGREWRITEAOF" \
  '[ "$(grep -c "^fork_parent " "$tmp/forks")" -eq 2 ] && [ "$(grep -c "^child_done .* exitcode=0x0 bysignal=0x0" "$tmp/forks")" -eq 2 ] ||
   show "$tmp/forks"'
children=$(sed -n "s/^fork_parent .* child=0x\([0-9a-f]*\) .*/\1/p" "$tmp/forks")
for c in $children; do
  c=$((16#$c))
  simpletrace print "$run1/traces/redis-server-$c.trace" >"$tmp/child-$c" 2>&1
  check "fork child $c wrote its own trace: fork_child, a save begun and ended ok, child_exit status 0" \
    'grep -q "^fork_child " "$tmp/child-$c" && grep -Eq "^(rdb_save|aof_rewrite)_begin " "$tmp/child-$c" &&
     grep -Eq "^(rdb_save|aof_rewrite)_end .* ok=0x1$" "$tmp/child-$c" && grep -q "^child_exit .* status=0x0$" "$tmp/child-$c" ||
     show "$tmp/child-$c"'
done
ls "$run1/crash" >"$tmp/crash1" 2>&1
check "crash=: no ring file is left once every process ended (the children end with _exit)" \
  '[ ! -s "$tmp/crash1" ] || show "$tmp/crash1"'
ls "$XDG_RUNTIME_DIR/simpletrace" >"$tmp/socks1" 2>&1
check "no monitor socket is left (the children's were removed by st_trace_finish())" '[ ! -s "$tmp/socks1" ] || show "$tmp/socks1"'
simpletrace latency --by=name --format=json "$run1/traces" >"$tmp/latency1.json" 2>"$tmp/latency1.err"
check "simpletrace latency --by=name: a span per command, counted as Redis counted" \
  'python3 - "$tmp/latency1.json" "$tmp/ends1" <<"PY" || show "$tmp/latency1.err"
import json, sys
doc = json.load(open(sys.argv[1]))
ends = dict(l.split() for l in open(sys.argv[2]) if l.strip())
spans = {s["group"]: s["count"] for s in doc["spans"] if s["name"] == "command"}
sys.exit(0 if spans == {k: int(v) for k, v in ends.items()} else 1)
PY'
simpletrace export -o "$tmp/redis.pftrace" "$run1/traces" >"$tmp/export1" 2>&1
check "simpletrace export: a Perfetto trace of the directory, a call per command" \
  '[ -s "$tmp/redis.pftrace" ] && calls=$(sed -n "s/.*: [0-9]* records, [0-9]* threads: \([0-9]*\) calls.*/\1/p" "$tmp/export1") &&
   [ "${calls:-0}" -ge "$total_got" ] || show "$tmp/export1"'

# --- 2. under load: the monitor, then kill -9 and recover
run2=$tmp/run2 port=$(free_port) redis_pid=
SIMPLETRACE="enable=*,dir=$run2/traces,monitor=on,crash=$run2/crash" redis_start "$bin" "$port" "$run2" 2>"$tmp/start2.err"
pid=${redis_pid:-}
[ -n "$pid" ] && pids+=("$pid")
check "a second daemon (monitor=on, crash=) answers" '[ -n "$pid" ] || show "$tmp/start2.err"'
[ -n "$pid" ] || { echo "1..$n"; exit 1; }
redis-benchmark -p "$port" -P 16 -c 10 -n 1000000000 -t incr -q >/dev/null 2>&1 &
load=$!; pids+=("$load")
sleep 1
simpletrace ctl "$pid" trace-event 'command_*' off >"$tmp/off" 2>&1
check "under load, ctl turns the command events off" 'grep -qx "disabled 2 events matching \"command_\*\"" "$tmp/off" || show "$tmp/off"'
sleep 0.5
simpletrace ctl "$pid" trace-event 'command_*' on >"$tmp/on" 2>&1
check "  and on again" 'grep -qx "enabled 2 events matching \"command_\*\"" "$tmp/on" || show "$tmp/on"'
sleep 0.5
kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
incrs=$(redis-cli -p "$port" get counter:__rand_int__)
redis-benchmark -p "$port" -P 16 -c 10 -n 1000000000 -t lpush -q >/dev/null 2>&1 &
load=$!; pids+=("$load")
sleep 1
paused=$(redis-cli -p "$port" client pause 30000 write)
llen=$(redis-cli -p "$port" llen mylist)
kill -9 "$pid"
kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
check "under LPUSH load, writes paused ($paused) with $llen LPUSHes done, kill -9" '[ "$paused" = OK ] && [ "${llen:-0}" -gt 0 ]'
tr2=$run2/traces/redis-server-$pid.trace
simpletrace recover --trace "$tr2" "$run2/crash" -o "$tmp/recovered.trace" >"$tmp/recover.out" 2>&1
check "simpletrace recover rebuilds what the file lacked" '[ -s "$tmp/recovered.trace" ] || show "$tmp/recover.out"'
in_file=$(count_ends "WHERE name = 'lpush'" "$tr2" | awk '{ print $2 + 0 }')
recovered=$(count_ends "WHERE name = 'lpush'" "$tmp/recovered.trace" | awk '{ print $2 + 0 }')
echo "# LPUSH: LLEN $llen; command_end in the file ${in_file:-0}, recovered ${recovered:-0}"
check "the file's LPUSH command_end records plus the recovered ones = LLEN ($llen)" \
  '[ $(( ${in_file:-0} + ${recovered:-0} )) -eq "$llen" ] && [ "${recovered:-0}" -gt 0 ]'
traced_incrs=$(count_ends "WHERE name = 'incr'" "$tr2" "$tmp/recovered.trace" | awk '{ print $2 + 0 }')
gap=$(simpletrace sql "$tr2" -e "SELECT max(gap) FROM (SELECT ts - lag(ts) OVER (ORDER BY ts) AS gap FROM command_end WHERE name = 'incr')" 2>/dev/null | tail -1 | tr -d ' ')
check "the INCRs while the events were off are not in the trace ($traced_incrs of $incrs), a gap of ${gap:-?} ns" \
  '[ "${traced_incrs:-0}" -gt 0 ] && [ "$traced_incrs" -lt "$incrs" ] && [ "${gap:-0}" -ge 400000000 ]'

echo "1..$n"
exit $((fail > 0))
