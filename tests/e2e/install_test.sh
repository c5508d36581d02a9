#!/usr/bin/env bash
# `make install PREFIX=DIR` into a temporary prefix, then a user's build that
# knows nothing but the prefix: the installed `simpletrace gen`, headers and
# pkg-config files build a traced program, and the installed `simpletrace
# print` reads its trace.  TAP output.
set -u
src=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }

prefix=$tmp/prefix
# A plain build of its own, so the installed libraries carry no sanitizer.
env -u CFLAGS -u LDFLAGS make -C "$src" install BUILD="$tmp/build" PREFIX="$prefix" >"$tmp/install.log" 2>&1
rc=$?
check "make install PREFIX=DIR succeeds" '[ $rc -eq 0 ] || { tail -20 "$tmp/install.log" | sed "s/^/# /"; false; }'
check "the command is installed" '[ -x "$prefix/bin/simpletrace" ]'
check "public headers are under include/simpletrace/" \
  '[ -f "$prefix/include/simpletrace/simpletrace.h" ] && [ -f "$prefix/include/simpletrace/trace.h" ] && [ -f "$prefix/include/simpletrace/reader.h" ]'
pcdir=$(dirname "$(find "$prefix" -name simpletrace.pc | head -1)")
check "simpletrace.pc is installed" '[ -f "$pcdir/simpletrace.pc" ]'
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir simpletrace)
check "static and shared libraries are installed" '[ -f "$libdir/libsimpletrace.a" ] && [ -e "$libdir/libsimpletrace.so" ]'
check "shared libraries carry their SONAME: lib*.so.0 is installed" \
  '[ -e "$libdir/libsimpletrace.so.0" ] && [ -e "$libdir/libsimpletrace-read.so.0" ] && [ -e "$libdir/libsimpletrace-func.so.0" ]'
check "api.h and version.h are installed with the other headers" \
  '[ -f "$prefix/include/simpletrace/api.h" ] && [ -f "$prefix/include/simpletrace/version.h" ]'

mkdir -p "$tmp/user"
cat > "$tmp/user/trace-events" <<'EV'
user_hello(int n, const char *who) "n %d who %s"
EV
cat > "$tmp/user/main.c" <<'C'
#include "trace.h"
int main(void)
{
    for (int i = 0; i < 100; i++)
        trace_user_hello(i, "world");
    return 0;
}
C
cd "$tmp/user"
"$prefix/bin/simpletrace" gen --format=h -o trace.h trace-events &&
"$prefix/bin/simpletrace" gen --format=c -o trace.c trace-events
check "installed simpletrace gen generates code" '[ -s trace.h ] && [ -s trace.c ]'
PKG_CONFIG_PATH=$pcdir cc -std=c11 -Wall -Wextra -Werror -o user main.c trace.c \
  $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs simpletrace) 2>"$tmp/cc.log"
check "a user program builds with pkg-config simpletrace" '[ -x user ] || { sed "s/^/# /" "$tmp/cc.log"; false; }'
SIMPLETRACE="enable=user_*,file=$tmp/user.trace" LD_LIBRARY_PATH=$libdir ./user
check "the traced program writes its trace" '[ -s "$tmp/user.trace" ]'
"$prefix/bin/simpletrace" print trace-events "$tmp/user.trace" > out.txt 2>&1
check "installed simpletrace print reads all 100 records" '[ "$(grep -c "^user_hello .* who=b'"'"'world'"'"'$" out.txt)" -eq 100 ]'

# The function tracer as a user gets it: pkg-config simpletrace-func.
check "simpletrace-func.pc, its libraries and header are installed" \
  '[ -f "$pcdir/simpletrace-func.pc" ] && [ -f "$libdir/libsimpletrace-func.a" ] && [ -e "$libdir/libsimpletrace-func.so" ] && [ -f "$prefix/include/simpletrace/functrace.h" ]'
cat > "$tmp/user/calls.c" <<'C'
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
PKG_CONFIG_PATH=$pcdir cc -std=c11 -O0 -finstrument-functions -o calls calls.c \
  $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs simpletrace-func) 2>"$tmp/cc2.log"
check "a -finstrument-functions program builds with pkg-config simpletrace-func" '[ -x calls ] || { sed "s/^/# /" "$tmp/cc2.log"; false; }'
SIMPLETRACE_FUNC_DIR=$tmp/calls.data LD_LIBRARY_PATH=$libdir ./calls
check "it runs and writes uftrace.data (info, task.txt, a .dat per thread)" \
  '[ -f "$tmp/calls.data/info" ] && [ -f "$tmp/calls.data/task.txt" ] && ls "$tmp/calls.data"/*.dat >/dev/null 2>&1'
echo "1..$n"
exit $((fail > 0))
