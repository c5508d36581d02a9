#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when they are missing.
# Usage: deps.sh build|check|bench
set -euo pipefail
want=(meson ninja-build gcc g++ binutils pkg-config)
case "${1:-build}" in
  check) want+=(clang libclang-rt-14-dev g++ python3 uftrace systemtap-sdt-dev liblttng-ust-dev lttng-tools babeltrace2 bpftrace systemtap binutils util-linux) ;;
  bench) want+=(hyperfine g++ liblttng-ust-dev lttng-tools babeltrace2 uftrace) ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
