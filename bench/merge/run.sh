#!/usr/bin/env bash
# Several traces read as one (issue 14, "Measure"): `simpletrace stats` and
# `print` on 2, 8 and 64 inputs vs one file of the same records, records/s,
# the ratio many/one and peak RSS (flat as the inputs shrink 4x). Figures
# and ratios only, never a failure on speed. The issue's size, 1M records
# per input: 64 inputs take 7.2 GB of temporary files (--dir DIR puts them
# elsewhere) and a few minutes. --burst B: runs of B records per input
# instead of round robin (the worst case).
#   bench/merge/run.sh [BUILD_DIR] [--records N] [--inputs 2,8,64] [--runs R] [--scale S] [--burst B] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace >/dev/null
exec python3 "$root/bench/merge/merge_read.py" --simpletrace "$build/src/cli/simpletrace" "$@"
