#!/usr/bin/env bash
# The dtrace backend against the real tools: the USDT probes in the ELF
# notes (readelf -n: provider, names, argument counts and sizes), their
# semaphores (symbols in .probes, zero in the file, set only while a tool is
# attached), bpftrace listing and attaching to them, Debian's dtrace reading
# the .d file, and SystemTap parsing the three .stp scripts (stap -p1) and
# resolving them against the binary's probes (stap -p2).
#
# stap needs the running kernel's build tree even for -p1/-p2, and this
# kind of machine has none: the test gives it a stand-in tree (the kernel
# release, a .config with uprobes, an empty Module.symvers) with -r, which
# is enough for the parser and the probe resolver (pass 2). No pass runs
# a script. bpftrace checks are skipped (TAP # SKIP) only when bpftrace
# cannot run BPF programs here; the readelf checks always run.
#
# usage: dtrace_test.sh DTRACE-PROGRAM ALL-PROGRAM SIMPLETRACE TRACE-EVENTS
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
dt=$1 all=$2 st=$3 events=$4
require_tool readelf binutils
require_tool bpftrace bpftrace
require_tool stap systemtap
require_tool dtrace systemtap-sdt-dev
require_program "$dt"
require_program "$all"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# probes BINARY: "provider name nargs sizes semaphore" per stapsdt note
probes() {
  readelf -n "$1" | awk '
    /Provider:/ { p = $2 }
    /Name:/ { n = $2 }
    /Semaphore:/ { s = $NF }
    /Arguments:/ { sizes = ""; for (i = 2; i <= NF; i++) { split($i, a, "@"); sizes = sizes (i > 2 ? "," : "") a[1] }
                   print p, n, NF - 1, (NF > 1 ? sizes : "-"), s }' | sort
}
want="backends be_long_line 1 8
backends be_null_string 1 8
backends be_start 2 -4,8
backends be_stop 0 -
backends be_tick 1 8
backends be_values 8 -1,2,-4,8,-8,1,8,8"

for prog in "$dt" "$all"; do
  label=$(basename "$prog")
  probes "$prog" >"$tmp/probes"
  check "$label: readelf -n: 6 probes of provider backends, names, argument counts and sizes" \
    test "$(cut -d' ' -f1-4 "$tmp/probes")" = "$want"
  [ "$(cut -d' ' -f1-4 "$tmp/probes")" = "$want" ] || diag "$(cat "$tmp/probes")"
  # .probes: address range; every semaphore in the notes lies in it and is named by a symbol there
  read -r pidx paddr psize < <(readelf -SW "$prog" | sed -n 's/^ *\[ *\([0-9]*\)\] \.probes *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2 \3/p')
  check "$label: a .probes section" test -n "${pidx:-}"
  in_probes() { # every semaphore address of the notes lies in .probes and has its symbol there
    local prov name n sizes sem
    while read -r prov name n sizes sem; do
      (( sem >= 0x$paddr && sem < 0x$paddr + 0x$psize )) || return 1
      readelf -sW "$prog" | grep -qE "^ *[0-9]+: 0*${sem#0x0*} +2 OBJECT +GLOBAL +HIDDEN +$pidx ${prov}_${name}_semaphore$" || return 1
    done <"$tmp/probes"
  }
  check "$label: each probe's semaphore is PROVIDER_NAME_semaphore, 2 bytes in .probes" in_probes
  check "$label: semaphores are zero in the file" \
    test -z "$(readelf -x .probes "$prog" | sed -n 's/^ *0x[0-9a-f]* \(.*\)/\1/p' | cut -c1-35 | tr -d ' 0.')"
done

# --- bpftrace ---------------------------------------------------------------
bpftrace -l "usdt:$dt:*" 2>/dev/null | sort >"$tmp/bpf-list"
check "bpftrace -l lists the 6 probes as usdt:BINARY:backends:NAME" test "$(sed "s|^usdt:$dt:||" "$tmp/bpf-list" | tr '\n' ' ')" = \
  "backends:be_long_line backends:be_null_string backends:be_start backends:be_stop backends:be_tick backends:be_values "
out=$("$dt" --wait-probe 0)
check "no tool attached: the probe's switch is off" test "$out" = "$(printf 'not enabled before attach\nnot attached')"
if bpftrace -e 'BEGIN { exit(); }' >"$tmp/bpf-probe" 2>&1; then
  p="usdt:$dt:backends"
  timeout 60 bpftrace -e "$p:be_start { printf(\"start %d %s\n\", arg0, str(arg1)); }
    $p:be_tick { printf(\"tick %d\n\", arg0); }
    $p:be_values { printf(\"values %d %d %d %lx %d %d\n\", arg0, arg1, arg2, arg3, arg4, arg5); }
    $p:be_null_string { printf(\"null %lx\n\", arg0); }
    $p:be_stop { printf(\"stop\n\"); exit(); }" -c "$dt --wait-probe 20" >"$tmp/bpf-out" 2>"$tmp/bpf-err"
  check "bpftrace attached: the program saw its semaphore set" grep -qx 'attached' "$tmp/bpf-out"
  check "bpftrace read every probe's arguments" test "$(grep -vE '^(Attaching|enabled|attached|$)' "$tmp/bpf-out" | tr '\n' '|')" = \
    "start 3 example|tick 0|tick 1|tick 2|values -5 65535 -100000 fedcba9876543210 -2 1|null 0|stop|"
  grep -q stop "$tmp/bpf-out" || diag "$(cat "$tmp/bpf-out" "$tmp/bpf-err")"
else
  skip "bpftrace attaches to the probes and reads their arguments" "bpftrace cannot run BPF programs here: $(head -1 "$tmp/bpf-probe")"
  skip "bpftrace read every probe's arguments" "bpftrace cannot run BPF programs here"
fi

# --- the .d provider file, read by Debian's dtrace -------------------------
"$st" gen --format=d --backends=dtrace --group=backends -o "$tmp/backends.d" "$events"
check "--format=d generated" test -s "$tmp/backends.d"
(cd "$tmp" && dtrace -h -s backends.d -o backends-dtrace.h >"$tmp/dtrace-h.err" 2>&1)
check "dtrace -h reads it" test $? -eq 0
check "dtrace -h: a macro per probe with its argument count" test "$(grep -oE "^#define BACKENDS_[A-Z_]+\([a-z0-9, ]*\)" "$tmp/backends-dtrace.h" | grep -v _ENABLED | sort | tr '\n' '|')" = \
  "#define BACKENDS_BE_LONG_LINE(arg1)|#define BACKENDS_BE_NULL_STRING(arg1)|#define BACKENDS_BE_START(arg1, arg2)|#define BACKENDS_BE_STOP()|#define BACKENDS_BE_TICK(arg1)|#define BACKENDS_BE_VALUES(arg1, arg2, arg3, arg4, arg5, arg6, arg7, arg8)|"
(cd "$tmp" && dtrace -G -s backends.d -o backends-dtrace.o >"$tmp/dtrace-g.err" 2>&1)
check "dtrace -G builds its semaphore object (same semaphore names as ours)" eval \
  'nm "$tmp/backends-dtrace.o" | grep -c "backends_be_[a-z_]*_semaphore$" | grep -qx 6'

# --- SystemTap ----------------------------------------------------------------
mkdir -p "$tmp/tapset" "$tmp/kernel/include/config"
for f in stp log-stp simpletrace-stp; do
  "$st" gen --format=$f --backends=dtrace --group=backends --binary="$dt" -o "$tmp/tapset/backends-$f.stp" "$events"
done
uname -r >"$tmp/kernel/include/config/kernel.release"
printf 'CONFIG_UPROBES=y\nCONFIG_ARCH_SUPPORTS_UPROBES=y\nCONFIG_TRACEPOINTS=y\n' >"$tmp/kernel/.config"
: >"$tmp/kernel/Module.symvers"
for f in stp log-stp simpletrace-stp; do
  stap -r "$tmp/kernel" -p1 "$tmp/tapset/backends-$f.stp" >"$tmp/p1.out" 2>"$tmp/p1.err"
  check "stap -p1 parses --format=$f" test $? -eq 0
  grep -q 'parse error' "$tmp/p1.err" && diag "$(cat "$tmp/p1.err")"
done
stap -r "$tmp/kernel" -p2 -I "$tmp/tapset" -e 'probe backends.log.*, backends.simpletrace.* {}' >"$tmp/p2.out" 2>"$tmp/p2.err"
check "stap -p2 resolves every log and simpletrace probe against the binary's marks and \$argN" test $? -eq 0
grep -q '^process(' "$tmp/p2.out" || diag "$(cat "$tmp/p2.err")"
check "stap -p2: 12 probe points, all in the binary" \
  test "$(grep -c "^process(\"$dt\")" "$tmp/p2.out")" -eq 12
printf 'probe process("%s").provider("backends").mark("be_stop") { println($arg1) }\n' "$dt" >"$tmp/bad.stp"
stap -r "$tmp/kernel" -p2 "$tmp/bad.stp" >/dev/null 2>&1
check "stap -p2 rejects an argument the probe does not have (be_stop has none)" test $? -ne 0

# The simpletrace script's shape: header from `begin`, a mapping record at
# first use, one record per event whose fields match the declared kinds.
s=$tmp/tapset/backends-simpletrace-stp.stp
check "simpletrace-stp: begin probe writes the v4 header" \
  grep -q 'printf("%8b%8b%8b", 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4)' "$s"
check "simpletrace-stp: mapping record (type 0, id, length, name) at first use" \
  grep -q 'printf("%8b%8b%4b%s", 0, st__next_id, strlen(name), name)' "$s"
check "simpletrace-stp: be_values record: type 1, id, time, length, tid, 7 u64 and a string" \
  grep -q 'printf("%8b%8b%8b%4b%4b%8b%8b%8b%8b%8b%8b%8b%4b%.\*s",' "$s"
check "simpletrace-stp: be_values length = 24 + 7 * 8 + 4 + string" grep -q '1, st__id, gettimeofday_ns(), 84 + st__len_s, tid()' "$s"
check "simpletrace-stp: the description after the header (ID 0xffffffffffffff00, realtime anchor)" \
  grep -q 'printf("%8b%8b%4b%s", 0, 0xffffffffffffff00, strlen(st__desc), st__desc)' "$s"
check "simpletrace-stp: a declaration right after each mapping (ID 0xfffffffe00000000 + id)" \
  grep -q 'printf("%8b%8b%4b%s", 0, 0xfffffffe00000000 + st__next_id, strlen(decl), decl)' "$s"
check "simpletrace-stp: be_values's declaration is its trace-events line" \
  grep -q 'st__map_event("be_values", "be_values(' "$s"
finish
