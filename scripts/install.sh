#!/usr/bin/env bash
# `make install`: configure a build directory of its own with only what is
# installed (no tests, benchmarks or examples), build it, install it.
# Libraries go to PREFIX/lib rather than Debian's multiarch
# lib/x86_64-linux-gnu: for the default prefix that is /usr/local/lib, which
# Debian's pkg-config, loader and CMake search as they are, and for any
# other prefix PREFIX/lib/pkgconfig is the one pkg-config path to give.
# With CROSS=TRIPLET, the tree is for another machine (cross/TRIPLET.ini):
# nothing here is run or set up for this one.
# Usage: install.sh BUILD-DIR PREFIX   (DESTDIR in the environment stages the tree)
set -uo pipefail
build=${1:?usage: install.sh BUILD-DIR PREFIX} prefix=${2:?usage: install.sh BUILD-DIR PREFIX}
cd "$(dirname "$0")/.."
die() { echo "install: $*" >&2; exit 1; }

opts=(-Dprefix="$prefix" -Dlibdir=lib -Dtests=disabled -Dbenchmarks=disabled -Dexamples=disabled)
cross=${CROSS:-}
if [ -n "$cross" ]; then
  [ -f "cross/$cross.ini" ] ||
    die "no cross file cross/$cross.ini (there are: $(cd cross && ls *.ini | sed 's/\.ini$//' | tr '\n' ' '))"
  opts+=(--cross-file "cross/$cross.ini")
fi
reconfigure=()
[ -f "$build/build.ninja" ] && reconfigure=(--reconfigure)
# Meson's configure report only when it fails (its errors are in it).
if ! out=$(meson setup "${reconfigure[@]}" "$build" "${opts[@]}" 2>&1); then
  printf '%s\n' "$out" >&2
  die "meson setup $build failed"
fi
ninja -C "$build" || die "the build failed"
meson install -C "$build" --no-rebuild || die "meson install failed"

# Staged (DESTDIR): whoever moves the tree in place sets it up.
[ -n "${DESTDIR:-}" ] && exit 0

# Another machine's tree: how to use it from here, nothing to set up.
if [ -n "$cross" ]; then
  echo
  echo "Installed for $cross into $prefix (README \"Cross builds\"). Copy it to the target, or build"
  echo "programs for the target here:"
  echo "    export PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig:/usr/lib/$cross/pkgconfig"
  echo "    $cross-gcc ... \$(pkg-config --cflags --libs simpletrace)"
  echo "with trace code made by this machine's own \`simpletrace gen\` (the same for every target)."
  exit 0
fi

# What a user needs for this prefix, so a program finds what was installed.
libdir=$prefix/lib
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
hints=()
case ":$PATH:" in *":$prefix/bin:"*) ;; *) hints+=("export PATH=$prefix/bin:\$PATH") ;; esac
case ":$(pkg-config --variable pc_path pkg-config 2>/dev/null):" in
  *":$libdir/pkgconfig:"*) ;;
  *) hints+=("export PKG_CONFIG_PATH=$libdir/pkgconfig") ;;
esac
# The loader finds libsimpletrace.so in a directory of /etc/ld.so.conf once
# its cache knows it (ldconfig, as root); anywhere else only if told.
if "$ldconfig" -v -N 2>/dev/null | awk -F: -v dir="$libdir" '$1 == dir {found = 1} END {exit !found}'; then
  if [ "$(id -u)" -eq 0 ]; then
    "$ldconfig" || die "ldconfig failed"
  else
    hints+=("sudo ldconfig        # once, so the loader finds the new libraries")
  fi
else
  hints+=("export LD_LIBRARY_PATH=$libdir     # or link with -Wl,-rpath,$libdir, or statically")
fi
# The Python module: the interpreter it was built for searches its directory, or is told.
pydir=$(meson introspect --installed "$build" 2>/dev/null | python3 -c '
import json, os, sys
dirs = [os.path.dirname(os.path.dirname(d)) for d in json.load(sys.stdin).values()
        if d.endswith(os.sep + os.path.join("simpletrace", "__init__.py"))]
print(dirs[0] if dirs else "")')
pyexe=$(meson introspect --buildoptions "$build" 2>/dev/null | python3 -c '
import json, sys
print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "python_interpreter"), ""))')
if [ -n "$pydir" ] && ! "$pyexe" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$pydir" 2>/dev/null; then
  hints+=("export PYTHONPATH=$pydir     # for $pyexe: import simpletrace")
fi
if [ ${#hints[@]} -gt 0 ]; then
  echo
  echo "Installed into $prefix. To use it from this shell (README \"Installing\"):"
  printf '    %s\n' "${hints[@]}"
fi
