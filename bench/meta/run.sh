#!/usr/bin/env bash
# What a trace saying about itself costs (issue 13, "Measure"): the bytes of
# the description and declarations for the demo and a 900-event program,
# their share of a one-second trace, and `simpletrace print` with and
# without them. Figures only, never a failure on speed or size.
#   bench/meta/run.sh [BUILD_DIR] [--records N] [--reader-records M] [--jobs J] [--runs R] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace examples/demo bench/meta/bench_meta_prog >/dev/null
exec python3 "$root/bench/meta/meta_size.py" --simpletrace "$build/src/cli/simpletrace" \
  --demo "$build/examples/demo" --demo-events "$root/examples/demo/trace-events" \
  --prog "$build/bench/meta/bench_meta_prog" --prog-events "$build/bench/meta/bench-meta-900.trace-events" "$@"
