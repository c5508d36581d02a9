#!/usr/bin/env bash
# `make` and `make install` never change the system: with a tool missing
# (meson, taken off PATH) they stop before building, name it with the Debian
# package that provides it, and never call apt-get or sudo; the set-up
# command `make demo` does install. apt-get, apt, sudo and dpkg-query are
# stubs that record their calls (dpkg-query says nothing is installed, so a
# script that asked dpkg would try to install everything).
# TAP output. Usage: deps_test.sh SOURCE-DIR
set -u
src=$(cd "$1" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }
show() { tail -25 "$@" | sed 's/^/# /'; false; }   # a failed check's evidence; fails

stub=$tmp/stub bin=$tmp/bin calls=$tmp/calls
mkdir -p "$stub" "$bin"
: >"$calls"
for c in apt-get apt sudo dpkg-query; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n%s\n' "$c" "$calls" "$([ $c = dpkg-query ] && echo 'exit 1' || echo 'exit 0')" >"$stub/$c"
  chmod +x "$stub/$c"
done
# Every command of PATH but meson (the first of each name, as PATH finds it).
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    name=${f##*/}
    [ -x "$f" ] && [ ! -d "$f" ] && [ ! -e "$bin/$name" ] && [ "$name" != meson ] && ln -s "$f" "$bin/$name"
  done
done
nomeson=$stub:$bin
check "the test's PATH has no meson but has make and a compiler" \
  '! PATH=$nomeson command -v meson >/dev/null && PATH=$nomeson command -v make >/dev/null && PATH=$nomeson command -v cc >/dev/null'

clean_env=(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u DESTDIR)
"${clean_env[@]}" PATH="$nomeson" make -C "$src" BUILD="$tmp/build" >"$tmp/make.log" 2>&1
rc=$?
check "make fails without meson" '[ $rc -ne 0 ]'
check "  naming it and its Debian package" 'grep -q "missing meson: Debian package meson" "$tmp/make.log" || show "$tmp/make.log"'
check "  before building anything" '[ ! -e "$tmp/build" ]'
check "  without calling apt-get, apt or sudo" '! grep -Eq "^(apt-get|apt|sudo) " "$calls" || show "$calls"'

: >"$calls"
"${clean_env[@]}" PATH="$nomeson" make -C "$src" install INSTALL_BUILD="$tmp/install-build" PREFIX="$tmp/prefix" \
  >"$tmp/install.log" 2>&1
rc=$?
check "make install fails without meson" '[ $rc -ne 0 ]'
check "  naming it and its Debian package" 'grep -q "missing meson: Debian package meson" "$tmp/install.log" || show "$tmp/install.log"'
check "  before building or installing anything" '[ ! -e "$tmp/install-build" ] && [ ! -e "$tmp/prefix" ]'
check "  without calling apt-get, apt or sudo" '! grep -Eq "^(apt-get|apt|sudo) " "$calls" || show "$calls"'

# Tools installed some other way than dpkg count: with everything on PATH,
# the check passes although dpkg-query (the stub) knows no package.
: >"$calls"
"${clean_env[@]}" PATH="$stub:$PATH" bash "$src/scripts/deps.sh" --check install >"$tmp/check.log" 2>&1
rc=$?
check "deps.sh --check install passes when the tools are on PATH, whatever dpkg says" '[ $rc -eq 0 ] || show "$tmp/check.log"'
check "  and asks apt-get nothing" '! grep -Eq "^(apt-get|apt|sudo) " "$calls" || show "$calls"'

# The set-up command still installs what is missing (the stubs install nothing, so it fails after).
: >"$calls"
"${clean_env[@]}" PATH="$nomeson" make -C "$src" demo BUILD="$tmp/demo-build" >"$tmp/demo.log" 2>&1
check "make demo installs the missing packages with apt-get" \
  'grep -Eq "apt-get (-[a-z]+ )*install .*meson" "$calls" || show "$calls" "$tmp/demo.log"'

echo "1..$n"
exit $((fail > 0))
