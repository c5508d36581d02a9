#!/usr/bin/env bash
# A new user's first hour, as the README tells it, against a fresh install:
#   - the README's install lines (`make install PREFIX=$HOME/...` and its
#     exports), run verbatim with $HOME a temporary directory;
#   - what was installed where, and that `make install` built nothing else;
#   - the tutorial, its files and commands taken from README.md and run
#     verbatim, its trace printed as the README shows it;
#   - the README's other link lines (rpath, static), each program run
#     without LD_LIBRARY_PATH;
#   - the example projects of examples/ built against the installed tree
#     with make, CMake and Meson, run traced, and read back with the
#     installed `simpletrace print`; every target of the CMake package.
# The README marks its tested blocks `<!-- test: TAG -->` (readme_blocks.awk).
# TAP output. Usage: install_test.sh SOURCE-DIR
set -u
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"   # what the programs leave behind (uftrace.data of the function tracer) goes away with it
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }
skip() { n=$((n+1)); echo "ok $n - $1 # SKIP $2"; }
show() { tail -25 "$@" | sed 's/^/# /'; false; }   # a failed check's evidence; fails
# The tutorial's printed trace with what changes from run to run masked:
# the time since the previous record, the thread id, pointers.
mask() { sed -E 's/^([A-Za-z_][A-Za-z0-9_]*) [0-9]+\.[0-9]+ pid=[0-9]+/\1 T pid=P/; s/0x[0-9a-f]{5,}/PTR/g' "$@"; }

# --- The README's tested blocks, in order: DIR/NN and "NN TAG ARG" in DIR/index.
blocks=$tmp/blocks
mkdir -p "$blocks"
awk -v dir="$blocks" -f "$here/readme_blocks.awk" "$src/README.md" >"$tmp/awk.log" 2>&1
rc=$?
check "README.md's tested blocks are well formed" '[ $rc -eq 0 ] || show "$tmp/awk.log"'
first_command() { sed -n '1{s/ *#.*//;p}' "$1" 2>/dev/null; }   # a block's first line, for messages
tagged() { awk -v t="$1" '$2 == t {print $1}' "$blocks/index" 2>/dev/null; }
install_blocks=$(tagged install) link_blocks=$(tagged link)
check "README.md has install, link, tutorial file, run and output blocks" \
  '[ -n "$install_blocks" ] && [ -n "$link_blocks" ] && [ -n "$(tagged file)" ] && [ -n "$(tagged run)" ] && [ -n "$(tagged output)" ]'

# --- One shell session, as a user types it: the install lines in the source
# tree, then the tutorial in an empty directory, then the link lines there
# without LD_LIBRARY_PATH. Each block is sourced (exports carry over) with its
# output kept; `set -e` ends the session at the first failing command, so
# the blocks after it have no .ok file.
home=$tmp/home work=$tmp/tutorial out=$tmp/out
mkdir -p "$home" "$work" "$out"
prefix=$home/simpletrace
{
  echo 'set -e'
  echo "cd '$src'"
  for b in $install_blocks; do
    echo ". '$blocks/$b' >'$out/$b' 2>&1; touch '$out/$b.ok'"
  done
  echo "cd '$work'"
  while read -r b tag arg; do
    case $tag in
      file) echo "cp '$blocks/$b' '$arg'; touch '$out/$b.ok'" ;;
      run) echo ". '$blocks/$b' >'$out/$b' 2>&1; touch '$out/$b.ok'" ;;
    esac
  done <"$blocks/index"
  echo 'unset LD_LIBRARY_PATH'
  i=0
  for b in $link_blocks; do
    while IFS= read -r line; do
      case $line in ''|'#'*) continue ;; esac
      i=$((i+1))
      printf '%s\n' "$line" >"$blocks/link$i"
      echo "rm -f app; . '$blocks/link$i' >'$out/link$i' 2>&1; touch '$out/link$i.ok'"
      echo "readelf -d app >'$out/link$i.dyn' 2>&1 || true"
      echo "SIMPLETRACE='enable=*,file=link$i.trace' ./app >>'$out/link$i' 2>&1"
      echo "simpletrace print trace-events link$i.trace >'$out/link$i.print' 2>>'$out/link$i'"
    done <"$blocks/$b"
  done
  echo "touch '$out/session.ok'"
} >"$tmp/session.sh"
links=$i
# A clean environment: nothing of the caller's pkg-config, loader or make
# settings; `make install` builds in a temporary directory, and BUILD points
# where `make` would build, which must stay untouched.
env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u CFLAGS -u LDFLAGS -u SIMPLETRACE \
    -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u DESTDIR \
    HOME="$home" INSTALL_BUILD="$tmp/build" BUILD="$tmp/no-build" \
    bash "$tmp/session.sh" >"$tmp/session.log" 2>&1

# --- Installing
first=${install_blocks%% *}
check "README: $(first_command "$blocks/$first") succeeds" '[ -f "$out/$first.ok" ] || show "$out/$first"'
check "it prints the lines to use a custom prefix" 'grep -q "export PKG_CONFIG_PATH=$prefix/lib/pkgconfig" "$out/$first"'
check "the command is installed" '[ -x "$prefix/bin/simpletrace" ]'
check "public headers are under include/simpletrace/" \
  '(for h in api.h version.h simpletrace.h trace.h reader.h functrace.h; do [ -f "$prefix/include/simpletrace/$h" ] || exit 1; done)'
check "libraries go to PREFIX/lib, shared (lib*.so.0 too) and static" \
  '(for l in simpletrace simpletrace-read simpletrace-func; do
     [ -f "$prefix/lib/lib$l.a" ] && [ -e "$prefix/lib/lib$l.so" ] && [ -e "$prefix/lib/lib$l.so.0" ] || exit 1
   done)'
check "pkg-config files go to PREFIX/lib/pkgconfig" \
  '[ -f "$prefix/lib/pkgconfig/simpletrace.pc" ] && [ -f "$prefix/lib/pkgconfig/simpletrace-read.pc" ] && [ -f "$prefix/lib/pkgconfig/simpletrace-func.pc" ]'
check "the CMake package goes to PREFIX/lib/cmake/simpletrace" \
  '[ -f "$prefix/lib/cmake/simpletrace/simpletraceConfig.cmake" ] && [ -f "$prefix/lib/cmake/simpletrace/simpletraceConfigVersion.cmake" ]'
check "man pages go to PREFIX/share/man: simpletrace(1), one per subcommand, simpletrace(3)" \
  '(for p in man1/simpletrace.1 man3/simpletrace.3; do [ -f "$prefix/share/man/$p" ] || exit 1; done
    for c in gen print stats export ctl recover; do [ -f "$prefix/share/man/man1/simpletrace-$c.1" ] || exit 1; done)'
check "man finds the installed page by name with MANPATH=PREFIX/share/man" \
  'MANPATH="$prefix/share/man" man -w simpletrace-print 2>/dev/null | grep -qx "$prefix/share/man/man1/simpletrace-print.1"'
check "nothing under PREFIX/lib/x86_64-linux-gnu or another multiarch directory" \
  '[ -z "$(find "$prefix/lib" -mindepth 1 -maxdepth 1 -type d ! -name pkgconfig ! -name cmake ! -name python3)" ]'
check "make install leaves the build directory of make alone" '[ ! -e "$tmp/no-build" ]'
# What the install build contains: the targets meson knows, by folder.
meson introspect --targets "$tmp/build" >"$tmp/targets.json" 2>"$tmp/introspect.log"
check "make install builds no tests, benchmarks or examples" \
  'python3 - "$tmp/targets.json" "$src" <<"PY" || show "$tmp/introspect.log"
import json, os, sys
targets = json.load(open(sys.argv[1]))
extra = [t["name"] for t in targets
         if os.path.relpath(t["defined_in"], sys.argv[2]).split(os.sep)[0] in ("tests", "bench", "examples")]
print("# built anyway:", " ".join(extra)) if extra else None
sys.exit(1 if extra or not targets else 0)
PY'
steps=$(ninja -C "$tmp/build" -t commands 2>/dev/null | wc -l)
echo "# make install: $steps build commands"

# --- The tutorial
while read -r b tag arg; do
  case $tag in
    file) check "tutorial: $arg written from README.md" '[ -f "$out/$b.ok" ] && cmp -s "$blocks/$b" "$work/$arg"' ;;
    run) check "tutorial: $(first_command "$blocks/$b") succeeds" '[ -f "$out/$b.ok" ] || show "$out/$b"'
         last_run=$b ;;
    output) check "tutorial: the output of \`$(first_command "$blocks/${last_run:-none}")\` is the README's" \
              'diff <(mask "$blocks/$b") <(mask "$out/${last_run:-none}") >"$tmp/diff.$b" 2>&1 || show "$tmp/diff.$b"'
            expected=$blocks/$b ;;
  esac
done <"$blocks/index"

# --- The Python module, as the README's install block says (PYTHONPATH, no LD_LIBRARY_PATH)
pymod=$prefix/lib/python3/site-packages
if [ -f "$pymod/simpletrace/__init__.py" ]; then
  check "the install lines name the Python module's directory" 'grep -q "export PYTHONPATH=$pymod" "$out/$first"'
  (cd "$work" && env -u LD_LIBRARY_PATH PYTHONPATH="$pymod" /usr/bin/python3 -m simpletrace trace-events app.trace) \
    >"$tmp/python.txt" 2>&1
  check "python3 -m simpletrace (installed) prints the tutorial's trace as simpletrace print does" \
    'diff <("$prefix/bin/simpletrace" print "$work/trace-events" "$work/app.trace") "$tmp/python.txt" >"$tmp/python.diff" ||
     show "$tmp/python.diff"'
else
  skip "the Python module" "not installed: Python's headers are missing (make check installs python3-dev)"
fi

# --- The SQLite extension: installed with the libraries, loaded by sqlite3 and by simpletrace.sql()
check "the SQLite extension goes to PREFIX/lib" '[ -f "$prefix/lib/libsimpletrace_sqlite.so" ]'
if command -v sqlite3 >/dev/null; then
  (cd "$work" && sqlite3 -csv :memory: ".load $prefix/lib/libsimpletrace_sqlite" \
     "CREATE VIRTUAL TABLE r USING simpletrace('app.trace')" 'SELECT count(*) FROM r') >"$tmp/sqlite.txt" 2>&1
  check "  sqlite3 loads it and counts the tutorial's records as print does" \
    '[ "$(cat "$tmp/sqlite.txt")" = "$("$prefix/bin/simpletrace" print "$work/app.trace" | wc -l)" ] || show "$tmp/sqlite.txt"'
else
  skip "sqlite3 loading the extension" "sqlite3 is not installed (make check installs it)"
fi
if [ -f "$pymod/simpletrace/__init__.py" ]; then
  (cd "$work" && env -u LD_LIBRARY_PATH PYTHONPATH="$pymod" /usr/bin/python3 -c \
     'import simpletrace; print(simpletrace.sql("app.trace", "SELECT count(*) FROM job_start")[0][0])') >"$tmp/pysql.txt" 2>&1
  check "  simpletrace.sql() (installed) finds it" '[ "$(cat "$tmp/pysql.txt")" = 3 ] || show "$tmp/pysql.txt"'
fi

# --- Linking without LD_LIBRARY_PATH: rpath, the static library, -static
for i in $(seq "$links"); do
  line=$(cat "$blocks/link$i")
  check "README: $line builds" '[ -f "$out/link$i.ok" ] || show "$out/link$i"'
  check "  and the program runs without LD_LIBRARY_PATH, its trace as the README shows" \
    'diff <(mask "${expected:-/dev/null}") <(mask "$out/link$i.print") >"$tmp/diff.link$i" 2>&1 || show "$tmp/diff.link$i" "$out/link$i"'
  case $line in
    *-static*) check "  and it is a static program" 'grep -q "no dynamic section" "$out/link$i.dyn" || show "$out/link$i.dyn"' ;;
    *libsimpletrace.a*) check "  and it does not load libsimpletrace.so" \
                          'grep -q NEEDED "$out/link$i.dyn" && ! grep -q "NEEDED.*libsimpletrace" "$out/link$i.dyn" || show "$out/link$i.dyn"' ;;
    *rpath*) check "  and it records PREFIX/lib as its run path" \
               'grep -Eq "(RUNPATH|RPATH).*\[$prefix/lib\]" "$out/link$i.dyn" || show "$out/link$i.dyn"' ;;
  esac
done

# --- As the README says for a custom prefix, for everything below.
user() {
  env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH -u CFLAGS -u LDFLAGS -u MAKEFLAGS -u MAKELEVEL -u MFLAGS \
    PATH="$prefix/bin:$PATH" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib" "$@"
}
st=$prefix/bin/simpletrace

# The function tracer, through pkg-config simpletrace-func.
mkdir -p "$tmp/calls"
cat > "$tmp/calls/calls.c" <<'C'
static int leaf(int x) { return x * 2; }
static int twice(int x) { return leaf(x) + leaf(x + 1); }
int main(void)
{
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += twice(i);
    return s == 200 ? 0 : 1;
}
C
(cd "$tmp/calls" && user sh -c 'cc -std=c11 -O0 -finstrument-functions -o calls calls.c $(pkg-config --cflags --libs simpletrace-func)') \
  >"$tmp/calls.log" 2>&1
check "a -finstrument-functions program builds with pkg-config simpletrace-func" '[ -x "$tmp/calls/calls" ] || show "$tmp/calls.log"'
(cd "$tmp/calls" && user env SIMPLETRACE_FUNC_DIR="$tmp/calls.data" ./calls)
check "it runs and writes uftrace.data (info, task.txt, a .dat per thread)" \
  '[ -f "$tmp/calls.data/info" ] && [ -f "$tmp/calls.data/task.txt" ] && ls "$tmp/calls.data"/*.dat >/dev/null 2>&1'

# examples/make: a plain Makefile with pkg-config.
cp -r "$src/examples/make" "$tmp/ex-make"
(cd "$tmp/ex-make" && user make) >"$tmp/ex-make.log" 2>&1
check "examples/make builds with make" '[ -x "$tmp/ex-make/greet" ] || show "$tmp/ex-make.log"'
(cd "$tmp/ex-make" && user env SIMPLETRACE='enable=greet_*,file=greet.trace' ./greet Ada Linus) >>"$tmp/ex-make.log" 2>&1
"$st" print "$tmp/ex-make/trace-events" "$tmp/ex-make/greet.trace" >"$tmp/ex-make.txt" 2>&1
check "  runs traced and simpletrace print reads its records" \
  '[ "$(cut -d" " -f1 "$tmp/ex-make.txt" | tr "\n" " ")" = "greet_start greet_name greet_name " ] &&
   grep -q "name=b'"'"'Linus'"'"'$" "$tmp/ex-make.txt" || show "$tmp/ex-make.txt"'

# examples/cmake: find_package(simpletrace) and simpletrace_generate().
if command -v cmake >/dev/null 2>&1; then
  cp -r "$src/examples/cmake" "$tmp/ex-cmake"
  # CMake finds the package through PATH (PREFIX/bin), as the README says.
  (cd "$tmp/ex-cmake" && user cmake -S . -B build && user cmake --build build) >"$tmp/ex-cmake.log" 2>&1
  check "examples/cmake builds with CMake" '[ -x "$tmp/ex-cmake/build/primes" ] || show "$tmp/ex-cmake.log"'
  check "  with the package of the installed tree" \
    'grep -qx "simpletrace_DIR:PATH=$prefix/lib/cmake/simpletrace" "$tmp/ex-cmake/build/CMakeCache.txt"'
  # Run from the build tree: CMake's build rpath finds the library.
  (cd "$tmp/ex-cmake" && env -u LD_LIBRARY_PATH SIMPLETRACE='enable=primes_*,file=primes.trace' build/primes 30) \
    >>"$tmp/ex-cmake.log" 2>&1
  "$st" print "$tmp/ex-cmake/trace-events" "$tmp/ex-cmake/primes.trace" >"$tmp/ex-cmake.txt" 2>&1
  check "  runs traced and simpletrace print reads its records" \
    '[ "$(grep -c "^primes_found " "$tmp/ex-cmake.txt")" -eq 10 ] && grep -q "^primes_done .* count=0xa$" "$tmp/ex-cmake.txt" ||
     show "$tmp/ex-cmake.txt" "$tmp/ex-cmake.log"'
  echo 'primes_extra(int x) "added later %d"' >> "$tmp/ex-cmake/trace-events"
  (cd "$tmp/ex-cmake" && user cmake --build build) >"$tmp/ex-cmake2.log" 2>&1
  check "  a changed trace-events file regenerates trace.h at the next build" \
    'grep -q trace_primes_extra "$tmp/ex-cmake/build/simpletrace/primes/trace.h" || show "$tmp/ex-cmake2.log"'

  cp -r "$here/cmake_targets" "$tmp/cmake-targets"
  (cd "$tmp/cmake-targets" && user cmake -S . -B build && user cmake --build build) >"$tmp/cmake-targets.log" 2>&1
  check "every target of the CMake package links (tests/e2e/cmake_targets)" \
    '[ -x "$tmp/cmake-targets/build/use_all_static" ] || show "$tmp/cmake-targets.log"'
  version=$(user pkg-config --modversion simpletrace)
  programs="use_simpletrace use_read use_func use_simpletrace_static use_read_static use_func_static use_all_static"
  check "  and every program runs, printing the version ${version:-(none)}" \
    '[ -n "$version" ] && (for p in $programs; do
       [ "$(env -u LD_LIBRARY_PATH "$tmp/cmake-targets/build/$p")" = "$version" ] || exit 1
     done)'
  check "  the static targets do not load the shared libraries" \
    '(for p in $programs; do
       case $p in *static) readelf -d "$tmp/cmake-targets/build/$p" >"$tmp/$p.dyn" &&
                           ! grep -q "NEEDED.*libsimpletrace" "$tmp/$p.dyn" || exit 1 ;; esac
     done)'
else
  skip "examples/cmake and the CMake package" "cmake is not installed (make check installs it)"
fi

# examples/meson, with the installed simpletrace (the subproject case is subproject_test.sh).
for kind in shared static; do
  d=$tmp/ex-meson-$kind
  cp -r "$src/examples/meson" "$d"
  (cd "$d" && user meson setup build --wrap-mode=nofallback -Dstatic=$([ $kind = static ] && echo true || echo false) &&
   user ninja -C build) >"$d.log" 2>&1
  check "examples/meson builds with Meson against the installed tree ($kind)" '[ -x "$d/build/wc" ] || show "$d.log"'
  (cd "$d" && user env SIMPLETRACE='enable=wc_*,file=wc.trace' build/wc meson.build) >>"$d.log" 2>&1
  "$st" print "$d/trace-events" "$d/wc.trace" >"$d.txt" 2>&1
  lines=$(wc -l < "$d/meson.build")
  check "  runs traced and simpletrace print reads its records" \
    '[ "$(grep -c "^wc_line " "$d.txt")" -eq "$lines" ] && grep -q "^wc_total .* lines=$(printf "0x%x" "$lines") " "$d.txt" ||
     show "$d.txt" "$d.log"'
done
check "  the static build does not load libsimpletrace.so" \
  'readelf -d "$tmp/ex-meson-static/build/wc" >"$tmp/wc.dyn" && ! grep -q "NEEDED.*libsimpletrace" "$tmp/wc.dyn"'

echo "1..$n"
exit $((fail > 0))
