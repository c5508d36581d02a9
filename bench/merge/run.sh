#!/usr/bin/env bash
# Several traces read as one (issue 14, "Measure"): `simpletrace stats` and
# `print` on 2, 8 and 64 inputs vs one file of the same records, records/s,
# the ratio many/one and peak RSS (flat as the inputs grow 4x). Figures and
# ratios only, never a failure on speed. Without --records, 200000 records
# per input (`make bench` stays short); the issue's size: --records 1000000.
#   bench/merge/run.sh [BUILD_DIR] [--records N] [--inputs 2,8,64] [--runs R] [--scale S] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" src/cli/simpletrace >/dev/null
records=()
case " $* " in *" --records"*) ;; *) records=(--records 200000) ;; esac
exec python3 "$root/bench/merge/merge_read.py" --simpletrace "$build/src/cli/simpletrace" "${records[@]}" "$@"
