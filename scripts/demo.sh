#!/usr/bin/env bash
# The main job on the bundled example: trace a multi-threaded program, then
# print, summarise and convert its trace (JSON lines, Chrome JSON, uftrace.data).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
st=$build/src/cli/simpletrace
out=$build/demo
events=examples/demo/trace-events
mkdir -p "$out"
rm -f "$out"/demo.trace

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. run the example with tracing on"
echo "\$ SIMPLETRACE='enable=*,file=$out/demo.trace' $build/examples/demo --workers 4 --jobs 20000"
SIMPLETRACE="enable=*,file=$out/demo.trace" "$build"/examples/demo --workers 4 --jobs 20000

step "2. print it (the same text as QEMU's simpletrace.py)"
echo "\$ $st print $events $out/demo.trace | head -15"
"$st" print "$events" "$out/demo.trace" > "$out/demo.txt"
head -15 "$out/demo.txt"
echo "... ($(wc -l < "$out/demo.txt") lines in $out/demo.txt)"

step "3. per-event statistics"
echo "\$ $st stats $events $out/demo.trace"
"$st" stats "$events" "$out/demo.trace"

step "4. convert it: JSON lines for scripts"
echo "\$ $st print --format=json $events $out/demo.trace > $out/demo.jsonl"
"$st" print --format=json "$events" "$out/demo.trace" > "$out/demo.jsonl"
head -3 "$out/demo.jsonl"
echo "... ($(wc -l < "$out/demo.jsonl") records in $out/demo.jsonl)"

step "5. export it: a timeline for Perfetto UI / chrome://tracing, and for uftrace"
# job_start/job_done pair by the built-in *_start:*_done rule into calls of
# "job" on each worker's track; the other events become instant events.
echo "\$ $st export -o $out/demo.json $events $out/demo.trace"
"$st" export -o "$out/demo.json" "$events" "$out/demo.trace"
echo "(open $out/demo.json in https://ui.perfetto.dev or chrome://tracing)"
echo "\$ $st export --format=uftrace -o $out/demo.data $events $out/demo.trace"
"$st" export --format=uftrace -o "$out/demo.data" "$events" "$out/demo.trace"
if command -v uftrace >/dev/null 2>&1; then
  echo "\$ uftrace replay -d $out/demo.data | head -15"
  uftrace replay -d "$out/demo.data" > "$out/demo.replay.txt"   # whole, then head: no SIGPIPE under pipefail
  head -15 "$out/demo.replay.txt"
  echo "\$ uftrace report -d $out/demo.data"
  uftrace report -d "$out/demo.data"
else
  echo "(uftrace is not installed: apt-get install uftrace, then uftrace replay -d $out/demo.data)"
fi

step "6. where the time goes: latency of the jobs (job_start/job_done), and of each job end to end"
# job_submit (main thread) and job_done (a worker) pair by the job's number: a keyed span across threads.
echo "\$ $st latency --slowest=2 $events $out/demo.trace"
"$st" latency --slowest=2 "$events" "$out/demo.trace" > "$out/demo.latency.txt"
head -4 "$out/demo.latency.txt"
echo "... (histogram and slowest jobs in $out/demo.latency.txt)"
echo "\$ $st latency --pair='job_submit:job_done=queued_and_run@job' --no-default-pairs --slowest=1 $events $out/demo.trace"
"$st" latency --pair='job_submit:job_done=queued_and_run@job' --no-default-pairs --slowest=1 "$events" "$out/demo.trace"
