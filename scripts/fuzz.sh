#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and fuzzes each for N seconds,
# starting from the checked-in corpus. Crashes are saved under build-fuzz/.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if [ -f build-fuzz/build.ninja ]; then meson setup --reconfigure build-fuzz -Dfuzz=true >/dev/null
else CC=clang meson setup build-fuzz -Dfuzz=true -Dbuildtype=debugoptimized \
      -Db_sanitize=address,undefined -Db_lundef=false >/dev/null; fi || exit 1
ninja -C build-fuzz >/dev/null || { ninja -C build-fuzz; exit 1; }
status=0
for t in build-fuzz/tests/fuzz/fuzz_*; do
  [ -f "$t" ] && [ -x "$t" ] || continue
  name=$(basename "$t")
  corpus=tests/fuzz/corpus/${name#fuzz_}
  work=build-fuzz/corpus-${name#fuzz_}
  mkdir -p "$work"
  echo "fuzz: $name for ${secs}s"
  if ! "$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix=build-fuzz/"$name"- "$work" "$corpus" >build-fuzz/"$name".log 2>&1; then
    tail -40 build-fuzz/"$name".log; echo "fuzz: $name FAILED"; status=1
  else
    grep -E '^(Done|#[0-9]+.*DONE)' build-fuzz/"$name".log | tail -1
  fi
done
exit $status
