#!/usr/bin/env bash
# The ftrace backend against a stand-in trace_marker: SIMPLETRACE_FTRACE_MARKER
# points the runtime at a file the test owns (the real marker is the same
# kind of write-only file: one write(2) per line). Lines written, one per
# enabled event, "NAME FORMAT"; a line longer than 512 bytes cut and marked;
# events not enabled cost nothing; an unusable marker said once on stderr; a
# program closing every descriptor after start-up gets no line in its own files.
#
# usage: ftrace_test.sh FTRACE-PROGRAM SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
ft=$1
require_program "$ft"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

: >"$tmp/marker"
SIMPLETRACE_FTRACE_MARKER=$tmp/marker SIMPLETRACE='enable=be_*' "$ft" 5 >"$tmp/out" 2>"$tmp/err"
check "program exits 0" test $? -eq 0
check "nothing on stderr" test ! -s "$tmp/err"
m=$tmp/marker
check "one line per enabled event (10)" test "$(wc -l <"$m")" -eq 10
check "be_start line" test "$(sed -n 1p "$m")" = "be_start count 5 mode example"
check "be_tick lines in order" test "$(sed -n 2,6p "$m" | tr '\n' '|')" = "be_tick tick 0|be_tick tick 1|be_tick tick 2|be_tick tick 3|be_tick tick 4|"
check "be_values: every argument formatted as declared" test "$(sed -n 7p "$m")" = \
  "be_values i8 -5 u16 65535 i32 -100000 u64 0xfedcba9876543210 l -2 flag 1 p 0x1234 s hello"
check "a NULL string prints (null)" test "$(sed -n 8p "$m")" = "be_null_string s (null)"
long=$(sed -n 9p "$m")
check "a long line is cut to 512 bytes with its newline, ending in ..." \
  test "${#long}" -eq 511 -a "${long:0:10}" = "be_long_li" -a "${long: -3}" = "..."
check "be_stop line last" test "$(sed -n 10p "$m")" = "be_stop stopped"
check "the compiled-out event never writes" count_is 0 be_debug "$m"

: >"$m"
SIMPLETRACE_FTRACE_MARKER=$m SIMPLETRACE='enable=be_tick' "$ft" 3 2>"$tmp/err"
check "only the events enabled in SIMPLETRACE are written" test "$(tr '\n' '|' <"$m")" = "be_tick tick 0|be_tick tick 1|be_tick tick 2|"

: >"$m"
SIMPLETRACE_FTRACE_MARKER=$m "$ft" 3 2>"$tmp/err"
check "no event enabled: nothing written" test ! -s "$m"

# A daemon closing every descriptor at start-up, after the marker was opened, then opening its own
# file on the marker's number: no ftrace line goes into it; the marker is opened again.
: >"$m"
SIMPLETRACE_FTRACE_MARKER=$m SIMPLETRACE='enable=be_*' "$ft" --close-fds "$tmp/own" 5 >"$tmp/out" 2>"$tmp/err"
check "closed descriptors: the program exits 0" test $? -eq 0
check "closed descriptors: its own file holds its lines only" test "$(tr '\n' '|' <"$tmp/own")" = \
  "the program's first line|the program's last line|"
check "closed descriptors: the marker was opened again and has every line" test "$(wc -l <"$m")" -eq 10
check "closed descriptors: nothing said" test ! -s "$tmp/err"

SIMPLETRACE_FTRACE_MARKER=$tmp/no/such/dir/trace_marker SIMPLETRACE='enable=be_*' "$ft" 50 >"$tmp/out" 2>"$tmp/err"
check "unusable marker: the program still runs and exits 0" test $? -eq 0
check "unusable marker: exactly one message on stderr, naming the path and the reason" test "$(cat "$tmp/err")" = \
  "simpletrace: ftrace backend off: cannot open $tmp/no/such/dir/trace_marker: No such file or directory"
SIMPLETRACE_FTRACE_MARKER=$tmp/no/such/dir/trace_marker "$ft" 0 >"$tmp/out" 2>"$tmp/err"
check "unusable marker: said at start-up even when no event fires" test "$(wc -l <"$tmp/err")" -eq 1
finish
