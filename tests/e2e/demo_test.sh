#!/usr/bin/env bash
# The example program traced with the simple backend and read back with
# `simpletrace print`: counts, values and per-thread order must all agree
# with what the program did.  TAP output.
set -u
demo=$1 st=$2 events=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }

jobs=3000 workers=4
SIMPLETRACE="enable=*,bufsize=16M,file=$tmp/demo.trace" "$demo" --workers $workers --jobs $jobs \
  > "$tmp/out" 2> "$tmp/err" &
pid=$!
wait $pid; rc=$?
check "demo exits 0" '[ $rc -eq 0 ]'
check "demo writes nothing on stderr" '[ ! -s "$tmp/err" ]'
read -r produced written dropped < <(sed -n 's/.*records produced \([0-9]*\), written \([0-9]*\), dropped \([0-9]*\).*/\1 \2 \3/p' "$tmp/out")
check "runtime counters: produced == written + dropped ($produced = $written + $dropped)" \
  '[ -n "$produced" ] && [ "$produced" -eq $((written + dropped)) ]'
check "no drops with 16 MiB buffers" '[ "$dropped" -eq 0 ]'

"$st" print "$events" "$tmp/demo.trace" > "$tmp/txt" 2> "$tmp/perr"; prc=$?
check "simpletrace print exits 0" '[ $prc -eq 0 ] && [ ! -s "$tmp/perr" ]'
lines=$(wc -l < "$tmp/txt")
check "one line per written record ($lines)" '[ "$lines" -eq "$written" ]'
count() { grep -c "^$1 " "$tmp/txt"; }
check "every job submitted, started and done once" \
  '[ "$(count job_submit)" -eq $jobs ] && [ "$(count job_start)" -eq $jobs ] && [ "$(count job_done)" -eq $jobs ]'
check "each job id appears in exactly one job_done" \
  '[ "$(grep "^job_done " "$tmp/txt" | sed "s/.* job=\(0x[0-9a-f]*\).*/\1/" | sort -u | wc -l)" -eq $jobs ]'
check "cache lookups: one per job" '[ "$(count cache_lookup)" -eq $jobs ]'
check "the compiled-out event never appears" '! grep -q "^debug_checksum" "$tmp/txt"'
check "demo_start comes first and carries the main thread id (= process id $pid)" \
  'head -1 "$tmp/txt" | grep -qx "demo_start 0.000 pid=$pid workers=0x4 jobs=0x$(printf %x $jobs) mode=b'"'"'threads'"'"'"'
check "every argument kind is recorded as declared" \
  'grep -q "^all_kinds [0-9.-]* pid=$pid i8=0xffffffffffffff80 u8=0xff i16=0xffffffffffff8000 u16=0xffff i32=0xffffffff80000000 u32=0xffffffff i64=0x8000000000000000 u64=0xffffffffffffffff c=0x78 s=b'"'"'every kind'"'"'$" "$tmp/txt"'
check "C integer types sign- and zero-extend" \
  'grep -q "^c_types [0-9.-]* pid=$pid sh=0xffffffffffffffff ush=0xffff l=0xfffffffffffffffe ul=0x3 ll=0xfffffffffffffffc sz=0x5 ssz=0xfffffffffffffffa up=0x[0-9a-f]* pd=0xfffffffffffffff9$" "$tmp/txt"'
check "a NULL string is recorded with length 0" 'grep -q "^pointers .* maybe_null=b'"''"'$" "$tmp/txt"'
check "zero-argument event ends with a space" 'grep -qx "demo_stop [0-9.-]* pid=$pid " "$tmp/txt"'
tids=$(grep "^job_start " "$tmp/txt" | sed 's/.* pid=\([0-9]*\) .*/\1/' | sort -u | wc -l)
check "worker events carry thread ids, not the process id ($tids threads)" \
  '[ "$tids" -ge 1 ] && [ "$tids" -le $workers ] && ! grep "^job_start " "$tmp/txt" | grep -q " pid=$pid "'
# Rebuild absolute times from the deltas (exact: microseconds with 3 decimals)
# and check that each thread's records are in time order.
check "timestamps never go backwards within a thread" \
  'awk "{ d=\$2; sub(/\\./, \"\", d); t += d; split(\$3, p, \"=\"); if ((p[2] in last) && t < last[p[2]]) bad++; last[p[2]] = t } END { exit bad > 0 }" "$tmp/txt"'

echo "1..$n"
exit $((fail > 0))
