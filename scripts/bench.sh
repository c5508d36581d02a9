#!/usr/bin/env bash
# `make bench`: an optimised build of its own, then every benchmark in bench/
# (`make soak`, i.e. `bench.sh soak`: only the soak, at full length).
# Figures and ratios only; nothing here passes or fails a build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-bench
if [ -f $dir/build.ninja ]; then meson setup --reconfigure $dir >/dev/null
else meson setup $dir -Dbuildtype=release -Db_ndebug=true >/dev/null; fi
ninja -C $dir >/dev/null
if [ "${1:-}" = soak ]; then
  exec bash bench/soak/run.sh $dir
fi
# The soak is minutes long on its own (`make soak`); here a short run.
export SOAK_SECONDS=${SOAK_SECONDS:-20}
echo "== runtime (bench/runtime) =="
$dir/bench/runtime/bench_runtime ${BENCH_RUNTIME_ARGS:-}
# bench/real/*: real programs (Redis), built from their sources against an installed simpletrace.
for script in bench/*/run.sh bench/real/*/run.sh; do
  [ -f "$script" ] || continue
  echo; echo "== $(dirname "$script") =="
  bash "$script" "$dir"
done
