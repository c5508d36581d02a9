#!/usr/bin/env bash
# The Python module vs QEMU's scripts/simpletrace.py (issue 15, "Measure"):
# an Analyzer2 that counts, the bare call loop, plain iteration, numpy
# columns, text output and peak RSS, with the interpreter the module was
# built for on both sides. QEMU_SCRIPTS=DIR (a QEMU tree's scripts/) adds
# QEMU's side. Figures and ratios only, never a failure on speed.
#   bench/python/run.sh [BUILD_DIR] [--records N] [--runs R] [--scale S] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" >/dev/null
if [ ! -f "$build/src/python/simpletrace/__init__.py" ]; then
  echo "bench/python: the Python module is not built (Python's headers missing: Debian python3-dev)"
  exit 0
fi
python=$(meson introspect --buildoptions "$build" | python3 -c '
import json, sys
print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "python_interpreter"))')
exec "$python" "$root/bench/python/bench_python.py" --pythonpath "$build/src/python" --python "$python" "$@"
