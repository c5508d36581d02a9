#!/usr/bin/env bash
# The test suite of a cross build, under user-mode emulation: for each
# TRIPLET, simpletrace built with cross/TRIPLET.ini in build-cross-TRIPLET
# (plain optimised build, no benchmarks) and every test run under Debian's
# qemu-user-static, but those tests/emulation.txt lists (each with the
# emulator's failure it hits; they run in the native suites).
# Test programs run through meson's exe_wrapper; the programs the test
# scripts start (the traced programs, the `simpletrace` command) through the
# kernel's binfmt_misc, registered here from Debian's
# /usr/lib/binfmt.d/qemu-ARCH.conf when it is not already.
# With --native DIR (a native build of this tree), then the test
# cross-traces of DIR: the cross builds' traces read on this machine
# (tests/e2e/cross_traces_test.py), its log DIR/meson-logs/cross-traces.json.
# Installs what it needs (scripts/deps.sh cross), as `make check` does.
# Usage: cross-check.sh [--native DIR] TRIPLET...   (scripts/check.sh runs it for aarch64 and s390x)
set -uo pipefail
cd "$(dirname "$0")/.."
native=
if [ "${1:-}" = --native ]; then native=${2:?usage: cross-check.sh [--native DIR] TRIPLET...}; shift 2; fi
[ $# -gt 0 ] || { echo "usage: cross-check.sh [--native DIR] TRIPLET..." >&2; exit 2; }
bash scripts/deps.sh cross "$@" || exit 1
command -v qemu-aarch64-static >/dev/null 2>&1 || bash scripts/deps.sh check || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
status=0
built=()

# binfmt_misc: mounted (a fresh VM or container may not have it), then one entry per architecture.
binfmt=/proc/sys/fs/binfmt_misc
register() { # qemu-name
  local conf=/usr/lib/binfmt.d/$1.conf
  [ -e "$binfmt/$1" ] && return 0
  [ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null ||
    { echo "cross-check: cannot mount binfmt_misc at $binfmt (needs root)" >&2; return 1; }
  [ -e "$binfmt/$1" ] && return 0
  [ -f "$conf" ] || { echo "cross-check: no $conf (Debian package qemu-user-static)" >&2; return 1; }
  cat "$conf" >"$binfmt/register" 2>/dev/null ||
    { echo "cross-check: cannot register $1 with binfmt_misc (needs root)" >&2; return 1; }
}

# The tests left out, by name: the first word of each line of tests/emulation.txt.
skipped=$(sed -e 's/#.*//' tests/emulation.txt | awk 'NF {print $1}' | sort -u)

for triplet in "$@"; do
  cpu=${triplet%%-*}
  case $cpu in powerpc64le) cpu=ppc64le ;; esac
  dir=build-cross-$triplet
  echo "== $triplet under qemu-$cpu-static =="
  register "qemu-$cpu" || { status=1; continue; }
  args=(--cross-file "cross/$triplet.ini" -Dbuildtype=debugoptimized -Dbenchmarks=disabled)
  if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "${args[@]}" >"$dir.setup.log" 2>&1
  else meson setup "$dir" "${args[@]}" >"$dir.setup.log" 2>&1; fi || { cat "$dir.setup.log"; status=1; continue; }
  if ! ninja -C "$dir" >"$dir.ninja.log" 2>&1; then
    tail -40 "$dir.ninja.log"; echo "$triplet: build failed"; status=1; continue
  fi
  mapfile -t all < <(meson test -C "$dir" --no-rebuild --list 2>/dev/null | grep " / " | sed 's/^.* \/ //')
  run=()
  for t in "${all[@]}"; do grep -qx -- "$t" <<<"$skipped" || run+=("$t"); done
  echo "$triplet: ${#run[@]} of ${#all[@]} tests (tests/emulation.txt leaves out $(( ${#all[@]} - ${#run[@]} )))"
  # Emulated code runs several times slower: thrice the timeouts.
  meson test -C "$dir" --no-rebuild --num-processes "$jobs" --timeout-multiplier 3 --print-errorlogs "${run[@]}" ||
    status=1
  built+=("$triplet=$PWD/$dir")
done

if [ -n "$native" ]; then
  echo "== the cross builds' traces read here (cross-traces) =="
  ST_CROSS_BUILDS="${built[*]}" meson test -C "$native" --no-rebuild --logbase cross-traces --print-errorlogs \
    cross-traces || status=1
fi
exit $status
