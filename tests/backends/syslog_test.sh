#!/usr/bin/env bash
# The syslog backend through the C library's real syslog(): the program runs
# in a private mount namespace whose /dev holds only a datagram socket the
# test owns (syslog_sink) as /dev/log, so every message it sends is captured
# and nothing reaches the machine's logger. Checks the messages' priority
# (LOG_DAEMON | LOG_INFO = <30>), ident and pid (openlog(NULL, LOG_PID, ...)),
# and text "NAME FORMAT", one per enabled event.
#
# usage: syslog_test.sh SYSLOG-PROGRAM SYSLOG-SINK SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
sl=$1 sink=$2
require_tool unshare util-linux
require_program "$sl"
require_program "$sink"
if [ "$(id -u)" -ne 0 ]; then check "runs as root (the test mounts a private /dev)" false; finish; fi
tmp=$(mktemp -d)
sink_pid=
cleanup() {
  [ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/dev"

# run_logged N ARGS...: the program under SIMPLETRACE=$enable with /dev/log captured; messages in $tmp/log
run_logged() {
  local count=$1; shift
  rm -f "$tmp/dev/log" # the last run's socket: the wait below is for this sink's
  "$sink" "$tmp/dev/log" "$count" >"$tmp/log" 2>"$tmp/sink.err" &
  sink_pid=$!
  # Until the sink listens (or died: the checks then say what is missing); no time limit of our
  # own, a loaded machine may start it late: meson's timeout ends a real hang.
  while [ ! -S "$tmp/dev/log" ] && kill -0 "$sink_pid" 2>/dev/null; do sleep 0.05; done
  SIMPLETRACE=$enable unshare -m --propagation private \
    sh -c 'mount --bind "$1" /dev && shift && exec "$@"' sh "$tmp/dev" "$sl" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  # The program is gone, every message it sent is queued at the sink: it prints them and ends.
  kill -TERM "$sink_pid" 2>/dev/null
  wait "$sink_pid"
  sink_pid=
  return $rc
}

enable='enable=be_*'
run_logged 10 5
check "program exits 0 with /dev/log captured" test $? -eq 0
check "nothing on stderr" test ! -s "$tmp/err"
check "10 messages, one per enabled event" test "$(wc -l <"$tmp/log")" -eq 10
prog=$(basename "$sl")
check "every message: <30> (daemon.info), the program's name and pid" \
  count_is 10 "^<30>[A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} $prog\[[0-9]+\]: be_" "$tmp/log"
msg() { sed -n "${1}p" "$tmp/log" | sed 's/^<30>[A-Z][a-z]* *[0-9]* [0-9:]* [^ ]*: //'; }
check "be_start message" test "$(msg 1)" = "be_start count 5 mode example"
check "be_tick messages in order" test "$(for i in 2 3 4 5 6; do msg $i; done | tr '\n' '|')" = \
  "be_tick tick 0|be_tick tick 1|be_tick tick 2|be_tick tick 3|be_tick tick 4|"
check "be_values: every argument formatted as declared" test "$(msg 7)" = \
  "be_values i8 -5 u16 65535 i32 -100000 u64 0xfedcba9876543210 l -2 flag 1 p 0x1234 s hello"
check "a NULL string prints (null)" test "$(msg 8)" = "be_null_string s (null)"
check "the long string whole" test "$(msg 9)" = "be_long_line text $(printf 'x%.0s' $(seq 700))"
check "be_stop last" test "$(msg 10)" = "be_stop stopped"
check "one pid in all messages" test "$(grep -o "$prog\[[0-9]*\]" "$tmp/log" | sort -u | wc -l)" -eq 1

enable='enable=be_tick'
run_logged 10 2
check "only events enabled in SIMPLETRACE are logged" test "$(wc -l <"$tmp/log") $(msg 1)|$(msg 2)" = "2 be_tick tick 0|be_tick tick 1"
finish
