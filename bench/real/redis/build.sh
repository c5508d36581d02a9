#!/usr/bin/env bash
# Builds Redis from Debian's source package, as Debian builds it
# (dpkg-buildflags, USE_SYSTEM_JEMALLOC), in one or more variants:
#   plain    the source as Debian ships it: no instrumentation
#   simple   redis.patch's trace points, trace-events generated for the simple backend
#   ust      the same points through LTTng-UST (liblttng-ust-dev)
#   dtrace   the same points as USDT probes (systemtap-sdt-dev)
# The instrumented variants are built against the installed simpletrace that
# pkg-config finds (README "Installing": PKG_CONFIG_PATH, PATH for
# `simpletrace gen`), with its library directory recorded in the program
# (rpath). Prints one line per variant: VARIANT PATH-OF-redis-server.
#
# Everything is kept in a cache outside the source tree, REDIS_CACHE
# (default ${XDG_CACHE_HOME:-$HOME/.cache}/simpletrace-redis): the source
# package (src/VERSION/), and each build under REDIS_BUILDS (default
# REDIS_CACHE/build) named by a hash of what makes it (the package version,
# the variant, the patch, the generated trace code, the simpletrace it links,
# the compiler and flags), so a repeated run builds nothing; only the newest
# build of each variant is kept.
#
# The source comes from `apt-get source redis`; when the machine's apt has
# no deb-src entry, one is added for the Debian suite it runs (the deb
# entries naming that suite, of /etc/apt/sources.list.d/*.sources and of
# sources.list and *.list, as deb-src in
# /etc/apt/sources.list.d/simpletrace-deb-src.sources and .list; root or
# sudo), and apt-get update run. Without network the newest source already
# in the cache is used.
#
# usage: build.sh VARIANT...      knobs: REDIS_CACHE, REDIS_BUILDS, JOBS (default: nproc)
#        build.sh --fetch         only the source: prints its version and directory
# exit status: 0 built; 1 an error (a line on stderr says which); 3 the
# source package cannot be fetched and none is cached (stderr says why).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${REDIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/simpletrace-redis}
builds=${REDIS_BUILDS:-$cache/build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
die() { echo "redis build: $*" >&2; exit 1; }
unavailable() { echo "redis build: cannot fetch Redis's source package: $*" >&2; exit 3; }
[ $# -gt 0 ] || { echo "usage: build.sh plain|simple|ust|dtrace... | --fetch" >&2; exit 2; }
fetch_only=false
[ "$1" = --fetch ] && { fetch_only=true; shift; }
for v in "$@"; do
  case $v in plain|simple|ust|dtrace) ;; *) echo "build.sh: unknown variant '$v' (plain, simple, ust, dtrace)" >&2; exit 2 ;; esac
done
mkdir -p "$cache/src" "$builds" || die "cannot make the cache directories $cache, $builds"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo -n"

# The deb entries naming the running suite, as deb-src: deb822 stanzas
# (*.sources) on stdout, one-line entries (sources.list, *.list) in the file $2.
deb_src_entries() { # codename list-output
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$1" '
      function flush() {
        if (is_deb && has_suite) printf "%s\n", stanza
        stanza = ""; is_deb = has_suite = 0
      }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      /^Types:/ { is_deb = ($0 ~ /[ \t]deb([ \t]|$)/); stanza = stanza "Types: deb-src\n"; next }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite || index($i, suite "-") == 1) has_suite = 1 }
      /^Enabled:[ \t]*no/ { is_deb = 0 }
      { stanza = stanza $0 "\n" }
      END { flush() }' "$f"
  done
  : >"$2"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [OPTIONS] URI SUITE COMPONENT...
    awk -v suite="$1" '$1 == "deb" {
        i = 2
        if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        s = $(i + 1)
        if (s == suite || index(s, suite "-") == 1) { sub(/^deb/, "deb-src"); print }
      }' "$f" >>"$2"
  done
}

# Makes apt able to fetch sources: a deb-src entry for the running suite when there is none.
ensure_deb_src() {
  local out codename entries lines=$cache/deb-src.list
  out=$(apt-get source --print-uris redis 2>&1) && return 0
  case $out in
    *"deb-src"*) ;;
    *) unavailable "$(printf '%s\n' "$out" | grep '^E:' | head -1)" ;;
  esac
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || unavailable "apt has no deb-src entry and /etc/os-release names no suite"
  entries=$(deb_src_entries "$codename" "$lines")
  [ -n "$entries" ] || [ -s "$lines" ] ||
    unavailable "apt has no deb-src entry, and no deb entry names the suite $codename to make one from"
  if [ -n "$sudo" ] && ! sudo -n true 2>/dev/null; then
    unavailable "apt has no deb-src entry and adding one needs root (sudo): add a deb-src line for $codename"
  fi
  local added=/etc/apt/sources.list.d/simpletrace-deb-src
  echo "redis build: apt has no deb-src entry: adding those of $codename's deb entries ($added.*)" >&2
  if [ -n "$entries" ]; then
    printf '# Added by simpletrace bench/real/redis/build.sh, for apt-get source.\n%s\n' "$entries" |
      $sudo tee "$added.sources" >/dev/null || unavailable "cannot write $added.sources"
  fi
  if [ -s "$lines" ]; then
    $sudo cp "$lines" "$added.list" || unavailable "cannot write $added.list"
  fi
  $sudo apt-get update -qq >"$cache/apt-update.log" 2>&1 ||
    unavailable "apt-get update failed: $(grep -m1 -E '^(E|W):' "$cache/apt-update.log")"
  out=$(apt-get source --print-uris redis 2>&1) ||
    unavailable "$(printf '%s\n' "$out" | grep '^E:' | head -1)"
}

# Sets $version and $tree: the source package unpacked (with Debian's patches) in the cache.
fetch_source() {
  local uris tmp
  if ! (ensure_deb_src) 2>"$cache/fetch.err"; then
    tree=$(ls -d "$cache"/src/*/tree 2>/dev/null | sort -V | tail -1)
    if [ -n "$tree" ]; then
      version=$(basename "$(dirname "$tree")")
      echo "redis build: $(tail -1 "$cache/fetch.err" | sed 's/^redis build: //'); using the cached source $version" >&2
      return 0
    fi
    cat "$cache/fetch.err" >&2; exit 3
  fi
  cat "$cache/fetch.err" >&2
  uris=$(apt-get source --print-uris redis 2>/dev/null)
  version=$(printf '%s\n' "$uris" | sed -n "s/^'[^']*' redis_\([^ ]*\)\.dsc .*/\1/p" | head -1)
  [ -n "$version" ] || die "apt-get source --print-uris redis names no .dsc"
  tree=$cache/src/$version/tree
  [ -f "$cache/src/$version/ok" ] && return 0
  command -v dpkg-source >/dev/null || die "dpkg-source missing: install dpkg-dev (scripts/deps.sh bench)"
  rm -rf "$cache/src/$version"
  tmp=$cache/src/$version.tmp
  rm -rf "$tmp"; mkdir -p "$tmp" && chmod 755 "$tmp"
  echo "redis build: fetching redis $version (apt-get source)" >&2
  (cd "$tmp" && apt-get source -qq redis) >"$tmp.log" 2>&1 ||
    unavailable "apt-get source redis failed: $(grep -m1 -E '^(E|W):|error' "$tmp.log")"
  local unpacked
  unpacked=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'redis-*' | head -1)
  [ -n "$unpacked" ] && [ -f "$unpacked/src/server.c" ] || die "apt-get source unpacked no redis-*/src/server.c in $tmp"
  mkdir -p "$cache/src/$version" && mv "$unpacked" "$tree" || die "cannot move the source into $cache/src/$version"
  rm -rf "$tmp" "$tmp.log"
  touch "$cache/src/$version/ok"
}

# The build flags Debian's packages are built with, and the make variables of debian/rules.
deb_flags() {
  CFLAGS=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-g -O2")
  CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS 2>/dev/null)
  LDFLAGS=$(dpkg-buildflags --get LDFLAGS 2>/dev/null)
  # -ffile-prefix-map names the current directory: it would change every build's key
  CFLAGS=$(printf '%s' "$CFLAGS" | sed 's/-ffile-prefix-map=[^ ]*//')
}

# gen_trace VARIANT DIR: the trace code of a variant into DIR (the flags of make in DIR/make-vars)
gen_trace() {
  local v=$1 d=$2 backends=$1 events=$here/trace-events
  command -v simpletrace >/dev/null || die "simpletrace is not on PATH (an installed simpletrace: README \"Installing\")"
  pkg-config --exists simpletrace 2>/dev/null ||
    die "pkg-config finds no simpletrace (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig: README \"Installing\")"
  simpletrace gen --format=h --backends="$backends" --group=redis -o "$d/redis_trace.h" "$events" &&
    simpletrace gen --format=c --backends="$backends" --group=redis -o "$d/redis_trace.c" "$events" ||
    die "simpletrace gen failed on $events"
  local obj="redis_trace.o" libs cflags
  cflags=$(pkg-config --cflags simpletrace)
  libs=$(pkg-config --libs simpletrace)
  case $v in
    ust)
      pkg-config --exists lttng-ust || die "the ust variant needs LTTng-UST's headers: install liblttng-ust-dev"
      simpletrace gen --format=ust-events-h --group=redis -o "$d/redis-ust.h" "$events" &&
        simpletrace gen --format=ust-events-c --group=redis -o "$d/redis-ust.c" "$events" || die "simpletrace gen failed (ust)"
      obj="$obj redis-ust.o"
      cflags="$cflags -I."   # LTTng includes the provider header again by its name
      libs="$libs $(pkg-config --libs lttng-ust) -ldl" ;;
    dtrace)
      printf '#include <sys/sdt.h>\n' | cc -E -x c - >/dev/null 2>&1 ||
        die "the dtrace variant needs <sys/sdt.h>: install systemtap-sdt-dev" ;;
  esac
  # the installed headers (the inline fast path is in them): a change rebuilds
  cat "$(pkg-config --variable=includedir simpletrace)"/simpletrace/*.h | sha256sum >"$d/headers.sha256"
  printf 'SIMPLETRACE_OBJ=%s\nSIMPLETRACE_CFLAGS=%s\nSIMPLETRACE_LIBS=%s -Wl,-rpath,%s\n' \
    "$obj" "$cflags" "$libs" "$(pkg-config --variable=libdir simpletrace)" >"$d/make-vars"
}

# build VARIANT: prints "VARIANT PATH"
build() {
  local v=$1 stage key dir
  stage=$(mktemp -d "$builds/stage.XXXXXX") || die "cannot make a directory in $builds"
  if [ "$v" != plain ]; then gen_trace "$v" "$stage"; else : >"$stage/make-vars"; fi
  key=$( { echo "$version $v"; cc --version | head -1; echo "$CFLAGS $CPPFLAGS $LDFLAGS"
           [ "$v" = plain ] || cat "$here/redis.patch" "$stage"/*; } | sha256sum | cut -c1-16)
  dir=$builds/$v-$key
  if [ -x "$dir/src/redis-server" ] && [ -f "$dir/ok" ]; then
    rm -rf "$stage"; echo "$v $dir/src/redis-server"; return
  fi
  rm -rf "$dir"
  cp -a "$tree" "$dir" || die "cannot copy the source into $dir"
  if [ "$v" != plain ]; then
    if ! (cd "$dir" && patch -p1 --dry-run --batch <"$here/redis.patch") >"$dir.patch.log" 2>&1; then
      sed 's/^/  /' "$dir.patch.log" >&2
      die "bench/real/redis/redis.patch does not apply to Debian's redis $version (above: patch's words); the patch's context lines need updating for this version"
    fi
    (cd "$dir" && patch -p1 --batch --quiet <"$here/redis.patch") || die "patch failed on $dir"
    cp "$stage"/redis_trace.[ch] "$dir/src/"
    [ "$v" = ust ] && cp "$stage"/redis-ust.[ch] "$dir/src/"
  fi
  local vars=()
  while IFS= read -r line; do vars+=("$line"); done <"$stage/make-vars"
  rm -rf "$stage"
  echo "redis build: building $v (redis $version) in $dir" >&2
  if ! make -C "$dir/src" -j"$jobs" redis-server USE_SYSTEM_JEMALLOC=yes \
        CFLAGS="$CFLAGS" CPPFLAGS="$CPPFLAGS" LDFLAGS="$LDFLAGS" ${vars[@]+"${vars[@]}"} >"$dir.log" 2>&1; then
    tail -30 "$dir.log" >&2
    die "building the $v variant failed (log: $dir.log)"
  fi
  [ -x "$dir/src/redis-server" ] || die "no redis-server after building $v (log: $dir.log)"
  touch "$dir/ok"
  # Only the newest build of a variant is kept.
  local old
  for old in "$builds/$v"-*; do
    case $old in "$dir"|"$dir".*) ;; *) rm -rf "$old" ;; esac
  done
  echo "$v $dir/src/redis-server"
}

command -v apt-get >/dev/null || unavailable "apt-get missing (a Debian system is needed)"
fetch_source
if $fetch_only; then echo "$version $tree"; exit 0; fi
[ -f /usr/include/jemalloc/jemalloc.h ] || die "Debian's jemalloc headers are missing: install libjemalloc-dev (scripts/deps.sh bench)"
deb_flags
for v in "$@"; do build "$v"; done
