#!/usr/bin/env bash
# Typed output (issue 13), on typed/typed_app: one run with the simple and
# log backends, then
#   - print --format=log of its trace is the log backend's stderr, byte for
#     byte, but for the NULL string (recorded as "", printed "(null)");
#   - print --format=json writes each declared type as README says
#     (negative numbers, true/false, char objects, "0x..." pointers, exact
#     64-bit edges), every line valid JSON;
#   - the default text is still simpletrace.py's (integers as 0x%x).
#
# usage: typed_test.sh TYPED-APP SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../backends/tap.sh"
app=$1 st=$2 events=$3
require_program "$app"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

SIMPLETRACE="enable=ty_*,file=$tmp/t.trace" "$app" 2>"$tmp/log" >"$tmp/out"
check "the program exits 0" test $? -eq 0
check "the log backend printed one line per event (20)" test "$(wc -l <"$tmp/log")" -eq 20
"$st" print --format=log "$events" "$tmp/t.trace" >"$tmp/printed" 2>"$tmp/err"
check "print --format=log exits 0, nothing on stderr" test $? -eq 0 -a ! -s "$tmp/err"

# The one line the trace cannot give back: a NULL string.
check "log backend: NULL string printed (null)" grep -qxF 'ty_null s [(null)]' "$tmp/log"
check "print --format=log: NULL string printed as the empty string it was recorded as" \
  grep -qxF 'ty_null s []' "$tmp/printed"
grep -v '^ty_null ' "$tmp/log" >"$tmp/log.cmp"
grep -v '^ty_null ' "$tmp/printed" >"$tmp/printed.cmp"
check "every other line identical, byte for byte" cmp "$tmp/log.cmp" "$tmp/printed.cmp"
cmp "$tmp/log.cmp" "$tmp/printed.cmp" >/dev/null || diag "$(diff "$tmp/log.cmp" "$tmp/printed.cmp" | head -20)"
# What the comparison covers, said independently of the log backend.
line() { grep "^$1 " "$tmp/printed"; }
check "signed and unsigned 8-bit, %#x" test "$(line ty_int8)" = "ty_int8 lo -128 hi 127 u 0xff"
check "PRIi32, PRIX32, %x of a negative int" test "$(line ty_int32)" = "ty_int32 s -2147483648 u FFFFFFFF neg ffffffff"
check "64-bit edges" test "$(line ty_int64)" = \
  "ty_int64 min -9223372036854775808 max 9223372036854775807 umax 18446744073709551615"
check "flags and widths" test "$(line ty_flags)" = "ty_flags 0000beef|-12  |+5|0XABC|       tru| 3|+0    |"
check "PRI macros with flags and widths, %%" test "$(line ty_pri)" = \
  "ty_pri fedcba9876543210 010    42 -9223372036854775808   100%"
check "'*' width and precision, a negative '*' width" test "$(line ty_star)" = "ty_star [      ab] [77    ]"
check "hh and h cut the value" test "$(line ty_narrow)" = "ty_narrow 2c 127 1170"
check "%p of NULL, a width on %p" test "$(line ty_ptrs | cut -c1-28)" = "ty_ptrs p 0x1234 null (nil) "
check "escapes in the format" test "$(line ty_escape)" = "$(printf 'ty_escape tab\there AA quote" backslash\\ x 1')"
check "a PRI macro outside a conversion prints its expansion" test "$(line ty_pri_text)" = "ty_pri_text lit lu and x"
check "an event without a format prints its name" grep -qxF ty_nofmt "$tmp/printed"
check "a line longer than PIPE_BUF is cut to end in ..." \
  test "$(grep '^ty_wide' "$tmp/printed" | wc -c)" -eq 4096 -a "$(grep '^ty_long' "$tmp/printed" | tail -c 4)" = "..."

"$st" print --format=json "$events" "$tmp/t.trace" >"$tmp/json" 2>"$tmp/err"
check "print --format=json exits 0" test $? -eq 0 -a ! -s "$tmp/err"
check "every JSON line parses" python3 -c '
import json, sys
for line in open(sys.argv[1]):
    json.loads(line)' "$tmp/json"
args() { grep "\"name\":\"$1\"" "$tmp/json" | sed 's/.*"args":{\(.*\)}}$/\1/'; }
check "json: signed 8-bit negative, unsigned 255" test "$(args ty_int8)" = '"lo":-128,"hi":127,"u":255'
check "json: int16" test "$(args ty_int16)" = '"s":-32768,"u":65535'
check "json: int32 edges, int -1" test "$(args ty_int32)" = '"s":-2147483648,"u":4294967295,"neg":-1'
check "json: INT64_MIN, INT64_MAX, 2^64-1 exact" test "$(args ty_int64)" = \
  '"min":-9223372036854775808,"max":9223372036854775807,"umax":18446744073709551615'
check "json: int unsigned long long short" test "$(args ty_c_types)" = \
  '"i":-7,"u":8,"l":-2,"ul":3735928559,"ll":-3,"ull":18446744073709551615,"sh":-300,"us":65000'
check "json: size_t unsigned, ssize_t ptrdiff_t signed negative, uintptr_t unsigned" test "$(args ty_sizes)" = \
  '"sz":18446744073709551615,"ss":-1,"up":281474976710655,"pd":-42,"s":-9'
check "json: bool true/false, char objects" test "$(args ty_bool_char)" = \
  '"yes":true,"no":false,"c":{"value":65,"char":"A"},"nl":{"value":10,"char":null},"uc":{"value":200,"char":null},"sc":{"value":-56,"char":null}'
check "json: pointers as \"0x...\" strings" \
  grep -qE '"args":\{"p":"0x1234","null":"0x0","ip":"0x[0-9a-f]+","pp":"0x[0-9a-f]+"\}' "$tmp/json"
check "json: strings, the empty one, escaped quotes" test "$(args ty_strings)" = \
  '"s":"hello","empty":"","mut":"mutable","quote":"it'"'"'s \"quoted\""'
check "json: a NULL string is the empty string" test "$(args ty_null)" = '"s":""'

"$st" print "$events" "$tmp/t.trace" >"$tmp/text"
check "default text unchanged: integers as unsigned 64-bit hex" \
  grep -qE '^ty_int64 [0-9.]+ pid=[0-9]+ min=0x8000000000000000 max=0x7fffffffffffffff umax=0xffffffffffffffff$' "$tmp/text"
check "default text unchanged: int -1 as its stored u64" grep -qE ' neg=0xffffffffffffffff$' "$tmp/text"
finish
