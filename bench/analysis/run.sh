#!/usr/bin/env bash
# Answers from a trace (issue 23, "Measure"): `simpletrace latency` against
# `simpletrace stats` on the same input, records/s, their ratio (target:
# latency at least half as fast) and peak RSS: (a) the merge benchmark's 64
# inputs of 1M records (bench/merge's generator; 3.6 GB of temporary files,
# --dir DIR puts them elsewhere, --records N makes them smaller), (b) a 10M-record
# trace with 1M keys open at once under a keyed --pair, (c) `compare` on two
# 10M-record traces when the command is built. Figures and ratios only,
# never a failure on speed.
#   bench/analysis/run.sh [BUILD_DIR] [--records N] [--inputs K] [--keyed-records R] [--keys K] [--runs R]
#                         [--dir DIR] [--only a,b,c]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace >/dev/null
exec python3 "$root/bench/analysis/latency_bench.py" --simpletrace "$build/src/cli/simpletrace" "$@"
