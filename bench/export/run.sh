#!/usr/bin/env bash
# Export benchmark: builds (if needed) and runs bench_export, which writes a
# trace of at least 5 million records with the runtime (4 threads) and times
# `simpletrace export` to uftrace.data, Chrome JSON, Perfetto's protobuf,
# CTF, folded stacks and Parquet, and `simpletrace print` for reference: records/s, MB/s,
# bytes per record, max RSS, each output's size against Chrome's, Parquet's
# speed and size against Perfetto's. Figures only.
#   bench/export/run.sh [BUILD_DIR] [--records N] [--threads T] [--runs R] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace bench/export/bench_export >/dev/null
exec "$build/bench/export/bench_export" --simpletrace "$build/src/cli/simpletrace" \
  --events "$root/bench/export/trace-events" "$@"
