#!/usr/bin/env bash
# The ust backend against a real LTTng 2.13: a private session daemon, a
# session recording the provider's events, the example program built with
# --backends=ust (and with simple,ust,dtrace at once), the trace read back
# with babeltrace2: event names, field values, field types and counts.
#
# Runs in a private mount namespace whose /run is a fresh directory (the
# root session daemon's sockets live in /run/lttng) and with LTTNG_HOME in a
# temporary directory, so it collides with no other session daemon. What it
# starts is stopped on every exit path. TAP output.
#
# usage: ust_test.sh UST-PROGRAM ALL-PROGRAM SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
ust=$1 all=$2 st=$3 events=$4

require_tool unshare util-linux
if [ "$(id -u)" -ne 0 ]; then check "runs as root (the test mounts a private /run)" false; finish; fi
if [ -z "${ST_UST_IN_NS:-}" ]; then
  exec unshare -m --propagation private env ST_UST_IN_NS=1 bash "$0" "$@"
fi
require_tool lttng-sessiond lttng-tools
require_tool lttng lttng-tools
require_tool babeltrace2 babeltrace2
require_program "$ust"
require_program "$all"

tmp=$(mktemp -d)
. "$here/../../scripts/lttng_private.sh"
cleanup() {
  lttng_private_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
lttng_private_start "$tmp/lttng"
check "lttng-sessiond started (private /run, LTTNG_HOME)" test -n "$lttng_private_pid"
[ -n "$lttng_private_pid" ] || { diag "$(cat "$tmp/lttng/sessiond.log")"; finish; }

# record NAME PATTERN COMMAND...: runs the command in a session recording PATTERN; text in $tmp/NAME.txt
record() {
  local name=$1 pattern=$2; shift 2
  lttng create "$name" --output="$tmp/$name" >/dev/null &&
    lttng enable-event --userspace "$pattern" >/dev/null &&
    lttng start >/dev/null || return 1
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$?
  lttng stop >/dev/null && lttng destroy "$name" >/dev/null || return 1
  babeltrace2 "$tmp/$name" >"$tmp/$name.txt" 2>"$tmp/$name.bterr" || return 1
  babeltrace2 -o ctf-metadata "$tmp/$name"/ust/uid/*/64-bit >"$tmp/$name.meta" 2>/dev/null
  return $rc
}
# field EVENT: the payload of the first EVENT record in a text trace
field() { sed -n "s/.* backends:$1: { cpu_id = [0-9]* }, \(.*\)$/\1/p" "$2" | head -1; }

# --- the ust backend alone ---------------------------------------------------
check "ust program traced in a session, trace read by babeltrace2" record ust 'backends:*' "$ust" 5
t=$tmp/ust.txt
check "10 events recorded" count_is 10 ' backends:' "$t"
check "names in program order" test "$(sed -n 's/.* backends:\([a-z_]*\):.*/\1/p' "$t" | tr '\n' ' ')" = \
  "be_start be_tick be_tick be_tick be_tick be_tick be_values be_null_string be_long_line be_stop "
check "the compiled-out event is not a tracepoint" count_is 0 'be_debug' "$t"
check "be_start: int and string" test "$(field be_start "$t")" = '{ count = 5, mode = "example" }'
check "be_tick: i = 0..4 in order" test "$(grep -o 'be_tick: .*' "$t" | sed 's/.*i = //; s/ }//' | tr '\n' ' ')" = "0 1 2 3 4 "
check "be_values: every integer as declared, pointer in hex, string" test "$(field be_values "$t")" = \
  '{ i8 = -5, u16 = 65535, i32 = -100000, u64 = 18364758544493064720, l = -2, flag = 1, p = 0x1234, s = "hello" }'
check "be_null_string: a NULL string is recorded as \"(null)\"" test "$(field be_null_string "$t")" = '{ s = "(null)" }'
check "be_long_line: the 700-byte string whole" test "$(field be_long_line "$t")" = "{ text = \"$(printf 'x%.0s' $(seq 700))\" }"
check "be_stop: no fields" test "$(field be_stop "$t")" = '{ }'
m=$tmp/ust.meta
int_field() { grep -E "integer \{ size = $1; align = [0-9]+; signed = $2; encoding = none; base = $3; \} _$4;" "$m" >/dev/null; }
check "field types: int8 signed, uint16, int32 signed, uint64, long int64 signed" \
  eval 'int_field 8 1 10 i8 && int_field 16 0 10 u16 && int_field 32 1 10 i32 && int_field 64 0 10 u64 && int_field 64 1 10 l'
check "field types: bool uint8, pointer 64-bit hexadecimal, string" \
  eval 'int_field 8 0 10 flag && int_field 64 0 16 p && grep -q "string _s;" "$m"'
check "nothing on the program's stderr" test ! -s "$tmp/ust.err"

# --- self-gated: LTTng's switch decides, per event ---------------------------
check "only the enabled tracepoint fires (session records backends:be_tick)" record ticks 'backends:be_tick' "$ust" 7
check "7 be_tick events and nothing else" eval 'count_is 7 " backends:be_tick:" "$tmp/ticks.txt" && count_is 7 " backends:" "$tmp/ticks.txt"'

# --- simple, ust and dtrace in one program ----------------------------------
export SIMPLETRACE="enable=be_*,file=$tmp/all.trace"
check "simple,ust,dtrace program traced by LTTng and simpletrace at once" record all 'backends:*' "$all" 4
unset SIMPLETRACE
check "LTTng got the 9 events" count_is 9 ' backends:' "$tmp/all.txt"
"$st" print "$events" "$tmp/all.trace" >"$tmp/all.st" 2>"$tmp/all.sterr"
check "simpletrace print reads the simple backend's file" test $? -eq 0
check "simpletrace got the same 9 events" eval 'count_is 9 "^be_" "$tmp/all.st" && count_is 4 "^be_tick " "$tmp/all.st"'
check "simple and ust agree on be_values" eval 'grep -q "^be_values .* i8=0xfffffffffffffffb u16=0xffff .* s=b.hello.$" "$tmp/all.st" &&
  test "$(field be_values "$tmp/all.txt")" = "$(field be_values "$t")"'
finish
