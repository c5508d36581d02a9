#!/usr/bin/env bash
# Reader benchmark: builds (if needed) and runs bench_reader, which writes a
# 10-million-record trace with the runtime and times `simpletrace print` on
# it and on the largest QEMU fixture. Figures only, never a failure on speed.
#   bench/reader/run.sh [BUILD_DIR] [--records N] [--runs R] [--dir DIR]
# SIMPLETRACE_PY=/path/to/qemu/scripts/simpletrace.py adds QEMU's reader side by side.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace bench/reader/bench_reader >/dev/null
exec "$build/bench/reader/bench_reader" --simpletrace "$build/src/cli/simpletrace" \
  --events "$root/bench/reader/trace-events" --shared "$root/../shared" "$@"
