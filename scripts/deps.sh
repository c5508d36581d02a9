#!/usr/bin/env bash
# The Debian packages a make target needs.
# Usage: deps.sh [--check] build|install|check|bench|cross [TRIPLET...]
#   build    `make`: the whole build, tests and benchmarks included
#   install  `make install`: the libraries and the command only
#   check    build + what the test suite runs (sanitizers, fuzzers, cmake, peers,
#            and real-redis: Redis's tools and what building its source needs)
#   bench    build + the peers the benchmarks compare against (bench/real/redis:
#            Redis's tools and build dependencies, LTTng-UST, USDT's sdt.h)
#   cross    a cross build for each TRIPLET (aarch64-linux-gnu, s390x-linux-gnu,
#            powerpc64le-linux-gnu, riscv64-linux-gnu; README "Cross builds"):
#            Debian's cross compilers and binutils, the target's C library and
#            libzstd (Debian multiarch: the architecture is added to dpkg when
#            installing); `make install CROSS=` checks it, `make check`
#            installs it for aarch64 and s390x (and qemu-user-static, in `check`,
#            to run their tests)
# Without --check, installs what is missing (apt-get, as root or through
# sudo): the set-up commands, `make demo` and `make check` (and `make bench`).
# With --check, installs nothing: names each missing tool or library with the
# Debian package that provides it and fails, for `make` and `make install`,
# which never change the system.
set -uo pipefail
mode=install
foreign=()
if [ "${1:-}" = --check ]; then mode=check; shift; fi
set_name=${1:-build}
case "$set_name" in
  install) want=(meson ninja-build gcc binutils libc6-dev pkg-config libzstd-dev python3 python3-dev libsqlite3-dev) ;;
  build) want=(meson ninja-build gcc g++ binutils libc6-dev pkg-config libzstd-dev python3 python3-dev libsqlite3-dev) ;;
  check) want=(meson ninja-build gcc g++ binutils libc6-dev pkg-config libzstd-dev zstd nodejs npm cmake clang libclang-rt-14-dev python3 groff-base man-db
               uftrace systemtap-sdt-dev liblttng-ust-dev lttng-tools babeltrace2 python3-bt2 protobuf-compiler bpftrace
               systemtap util-linux python3-dev python3-numpy python3-pandas chromium libsqlite3-dev sqlite3 qemu-user-static
               redis-tools dpkg-dev patch libjemalloc-dev) ;;
  bench) want=(meson ninja-build gcc g++ binutils libc6-dev pkg-config libzstd-dev zstd nodejs npm hyperfine wrk liblttng-ust-dev lttng-tools
               babeltrace2 uftrace python3-dev python3-numpy python3-pandas libsqlite3-dev
               redis-tools dpkg-dev patch libjemalloc-dev systemtap-sdt-dev) ;;
  cross)
    shift
    [ $# -gt 0 ] || { echo "usage: deps.sh [--check] cross TRIPLET..." >&2; exit 2; }
    want=(meson ninja-build gcc binutils libc6-dev pkg-config python3)
    foreign=()
    for t in "$@"; do
      case $t in  # Debian's name for the architecture
        aarch64-linux-gnu) arch=arm64 ;; s390x-linux-gnu) arch=s390x ;;
        powerpc64le-linux-gnu) arch=ppc64el ;; riscv64-linux-gnu) arch=riscv64 ;;
        *) echo "deps: no cross toolchain known for '$t' (cross/*.ini lists those there are)" >&2; exit 2 ;;
      esac
      want+=("gcc-$t" "g++-$t" "binutils-$t" "libc6-dev-$arch-cross" "libzstd-dev:$arch")
      foreign+=("$arch")
    done ;;
  *) echo "usage: deps.sh [--check] build|install|check|bench|cross TRIPLET..." >&2; exit 2 ;;
esac

have() { # command... : all of them are on PATH
  local c
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || return 1; done
}
# Whether a package's tools or headers are there. Checked by what it
# provides rather than by asking dpkg, so a tool installed another way (pip's
# meson, a hand-built ninja) counts; the others are asked of dpkg.
present() { # package
  case $1 in
    meson) have meson ;;
    ninja-build) have ninja ;;
    gcc) have cc ;;
    g++) have c++ ;;
    binutils) have ld objcopy ar ;;
    libc6-dev) have cc && printf '#include <stdio.h>\n#include <pthread.h>\n' | cc -E -x c - >/dev/null 2>&1 ;;
    pkg-config) have pkg-config ;;
    libzstd-dev) pkg-config --exists libzstd 2>/dev/null ;;
    zstd) have zstd zstdcat ;;
    nodejs) have node ;;
    npm) have npm ;;
    libsqlite3-dev) have cc && printf '#include <sqlite3.h>\n' | cc -E -x c - >/dev/null 2>&1 ;;
    sqlite3) have sqlite3 ;;
    wrk) have wrk ;;
    cmake) have cmake ;;
    python3) have python3 ;;
    # The Python module is built for, and tested with, Debian's /usr/bin/python3.
    python3-dev) [ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] ;;
    python3-numpy) /usr/bin/python3 -c 'import numpy' 2>/dev/null ;;
    python3-pandas) /usr/bin/python3 -c 'import pandas' 2>/dev/null ;;
    gcc-*-linux-gnu|g++-*-linux-gnu) have "${1#*-}-${1%%-*}" ;;   # gcc-T: T-gcc
    binutils-*-linux-gnu) have "${1#binutils-}-ld" "${1#binutils-}-objcopy" "${1#binutils-}-ar" ;;
    qemu-user-static) have qemu-aarch64-static qemu-s390x-static ;;
    redis-tools) have redis-benchmark redis-cli ;;
    patch) have patch ;;
    dpkg-dev) have dpkg-source dpkg-buildflags ;;
    *) dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' ;;
  esac
}
# What to call a missing package in a message: the tool the build looks for.
what() { # package
  case $1 in
    ninja-build) echo ninja ;; gcc) echo "a C compiler (cc)" ;; g++) echo "a C++ compiler (c++)" ;;
    binutils) echo "ld, objcopy, ar" ;; libc6-dev) echo "the C library headers" ;;
    python3-dev) echo "Python's headers (for the Python module)" ;;
    libsqlite3-dev) echo "SQLite's library and headers (simpletrace sql, the SQLite extension)" ;;
    sqlite3) echo "the sqlite3 shell (the extension's test)" ;;
    redis-tools) echo "redis-benchmark and redis-cli (bench/real/redis, real-redis)" ;;
    libjemalloc-dev) echo "jemalloc's headers (Redis is built with Debian's jemalloc)" ;;
    dpkg-dev) echo "dpkg-source and dpkg-buildflags (apt-get source redis)" ;;
    *) echo "$1" ;;
  esac
}

missing=()
for p in "${want[@]}"; do
  present "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$mode" = check ]; then
  for p in "${missing[@]}"; do
    echo "deps: missing $(what "$p"): Debian package $p" >&2
  done
  sudo="sudo "
  [ "$(id -u)" -eq 0 ] && sudo=""
  add_arch=""
  for arch in ${foreign[@]+"${foreign[@]}"}; do
    dpkg --print-foreign-architectures 2>/dev/null | grep -qx "$arch" ||
      add_arch+="${sudo}dpkg --add-architecture $arch && "
  done
  [ -n "$add_arch" ] && add_arch+="${sudo}apt-get update && "
  echo "deps: install with: $add_arch${sudo}apt-get install ${missing[*]}" >&2
  case " ${foreign[*]-} " in
    *" riscv64 "*) echo "deps: (Debian 12's archive has no riscv64 packages: libzstd-dev:riscv64 comes with Debian 13)" >&2 ;;
  esac
  case "$set_name" in
    build|install) echo "deps: (or run \`make demo\` or \`make check\`: they install what they need)" >&2 ;;
  esac
  exit 1
fi

echo "deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# The target's libraries (PKG:ARCH) come from Debian's archive of that architecture.
for arch in ${foreign[@]+"${foreign[@]}"}; do
  dpkg --print-foreign-architectures | grep -qx "$arch" || $sudo dpkg --add-architecture "$arch" || exit 1
done
$sudo apt-get update -qq || exit 1
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || exit 1
