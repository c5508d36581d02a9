#!/usr/bin/env bash
# SQL full scans (issue 24, "Measure"): the reader benchmark's 10-million-record
# trace (bench/reader), then `simpletrace stats` and `simpletrace sql` on it:
# a count per event (SELECT name, count(*) FROM records GROUP BY name), a
# per-event table with a filter, and a GROUP BY that SQLite sorts; records/s,
# max RSS, and each one's speed relative to stats (the target: a third); and a
# ts range (a tenth of the time) on that trace and on the same records
# compressed (compress=zstd), against the query SQLite filters alone (+ts).
# Figures only, never a failure on speed.
#   bench/sql/run.sh [BUILD_DIR] [--records N] [--runs R] [--dir DIR] [--trace FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace bench/reader/bench_reader >/dev/null
exec "$build/bench/reader/bench_reader" --sql --simpletrace "$build/src/cli/simpletrace" \
  --events "$root/bench/reader/trace-events" --shared "$root/../shared" "$@"
