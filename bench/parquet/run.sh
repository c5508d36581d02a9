#!/usr/bin/env bash
# Parquet export (issue 24, "Measure"): the reader benchmark's 10-million-record
# trace (bench/reader), exported to Perfetto's protobuf and to Parquet, runs
# alternating: records/s (wall and CPU), bytes per record, max RSS, and
# Parquet against Perfetto (the target: smaller, and at least 10 M records/s).
# Figures only, never a failure on speed.
#   bench/parquet/run.sh [BUILD_DIR] [--records N] [--runs R] [--dir DIR] [--trace FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace bench/reader/bench_reader >/dev/null
exec "$build/bench/reader/bench_reader" --parquet --simpletrace "$build/src/cli/simpletrace" \
  --events "$root/bench/reader/trace-events" "$@"
