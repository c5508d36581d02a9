#!/usr/bin/env bash
# A program built with the log backend only: its events go to stderr, and no
# trace file is left behind, neither the one file= names nor the default
# trace-<pid> (nothing could be written to it but a header). The simple
# build of the same program, traced the same way, does leave its file.
#
# usage: log_test.sh LOG-PROGRAM SIMPLE-PROGRAM SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
lg=$1 simple=$2
require_program "$lg"
require_program "$simple"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run" "$tmp/default" "$tmp/simple"

(cd "$tmp/run" && SIMPLETRACE='enable=be_*,file=log.trace' "$lg" 3 >"$tmp/out" 2>"$tmp/err")
check "log only, file=log.trace: program exits 0" test $? -eq 0
check "the events are lines on stderr" grep -q '^be_tick tick 2$' "$tmp/err"
check "stderr holds nothing but the events' lines" test "$(grep -vc '^be_' "$tmp/err")" -eq 0
check "no trace file is left: the directory is empty" test -z "$(ls -A "$tmp/run")"

(cd "$tmp/default" && SIMPLETRACE='enable=be_*' "$lg" 3 >"$tmp/out" 2>"$tmp/err")
check "log only, no file= (the default trace-<pid>): no trace file either" test -z "$(ls -A "$tmp/default")"

(cd "$tmp/default" && SIMPLETRACE='file=none.trace' "$lg" 3 >"$tmp/out" 2>"$tmp/err")
check "log only, nothing enabled: no file and no 'holds no events' message" \
  test -z "$(ls -A "$tmp/default")" -a ! -s "$tmp/err"

(cd "$tmp/simple" && SIMPLETRACE='enable=be_*,file=simple.trace' "$simple" 3 >"$tmp/out" 2>"$tmp/err")
check "the simple build of the same program writes its file" test -s "$tmp/simple/simple.trace"
finish
