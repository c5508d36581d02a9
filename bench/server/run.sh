#!/usr/bin/env bash
# A single-threaded epoll server traced with every event (issue 26): what
# tracing costs it, writer= by writer=. server.c (one thread, five events
# per request, ~17 us of CPU each) on loopback, driven by wrk (Debian's
# package; one wrk thread, SERVER_CONNS keep-alive connections), in rounds
# that take the variants in turn (each round in another order), so a busy
# machine weighs on all alike:
#
#   plain        the server built without simpletrace
#   idle-thread  the same with one more thread that only sleeps: what a
#                tracer's own thread costs a single-threaded program
#   thread       every event enabled, writer=thread (the writeout thread)
#   auto         every event enabled, the default writer (no thread: the
#                server's thread writes at its drain points)
#   monitor      auto with monitor=PATH (the monitor's thread; auto then has the writeout
#                thread write too: the fast paths are gone anyway)
#
# For each: requests/s and wrk's p99.9 latency (medians over the rounds),
# their ratios to plain, and the server's own service time of a request
# (read to write, on its thread: where an inline pass lands) at p99.9, and
# its CPU time per request (its thread's, which bounds its throughput, and
# the process's): on a machine shared with other work, requests/s and
# latency follow the machine's load, CPU time per request far less.
# Then request_loop: the same request without the network, one after the
# other, its CPU time (the most exact figure on a shared machine); and
# pass_latency: what one drain pass on the tracing thread costs the call
# that runs it, and the bytes it writes, without the thread and with.
# Where an inline pass's time goes: in a build configured with
# `meson setup B -Dpass_stages=true`, a program traced in the default mode
# prints at exit one line of the medians of each stage of its passes, e.g.
#   SIMPLETRACE='srv_*,file=/tmp/l.trace' B/bench/server/request_loop 200000 8192
# Figures only: never fails a build.
#
# usage: run.sh BUILD-DIR
# knobs: SERVER_ROUNDS (5), SERVER_SECONDS (5), SERVER_CONNS (16), SERVER_WORK (bytes hashed per request, 8192)
set -u
build=$(cd "${1:-build}" && pwd)
dir=$build/bench/server
rounds=${SERVER_ROUNDS:-5}
seconds=${SERVER_SECONDS:-5}
conns=${SERVER_CONNS:-16}
work=${SERVER_WORK:-8192}
if ! command -v wrk >/dev/null; then
  echo "bench/server: wrk is missing (Debian package wrk; make bench installs it)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/p999.lua" <<'EOF'
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.1f\n", summary.requests / (summary.duration / 1e6),
                         latency:percentile(99.9)))
end
EOF

variants=(plain idle-thread thread auto monitor)
# run VARIANT: one server under wrk; appends "rps p999_us service_p999_us" to $tmp/VARIANT
run() {
  local v=$1 exe=$dir/server_traced cfg="" port pid line svc cpu
  local args=(--work "$work")
  case $v in
    plain) exe=$dir/server_plain ;;
    idle-thread) exe=$dir/server_plain; args+=(--idle-thread) ;;
    thread) cfg="*,writer=thread,file=$tmp/t.trace" ;;
    auto) cfg="*,file=$tmp/t.trace" ;;
    monitor) cfg="*,file=$tmp/t.trace,monitor=$tmp/m.sock" ;;
  esac
  SIMPLETRACE=$cfg SIMPLETRACE_WRITER= "$exe" "${args[@]}" >"$tmp/port" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  port=$(head -1 "$tmp/port")
  line=$(wrk -t1 -c"$conns" -d"${seconds}s" -s "$tmp/p999.lua" "http://127.0.0.1:$port/" 2>/dev/null | grep '^RESULT')
  kill -TERM "$pid"
  wait "$pid"
  if [ -z "$line" ]; then
    echo "bench/server: $v: wrk gave no result (port '$port'); this run is left out" >&2
    rm -f "$tmp"/t.trace*
    return
  fi
  svc=$(sed -n 's/.* p99.9 \([0-9.]*\) .*/\1/p' "$tmp/err")
  cpu=$(sed -n 's/.* cpu_ns_thread \([0-9.]*\) cpu_ns_process \([0-9.]*\).*/\1 \2/p' "$tmp/err")
  echo "${line#RESULT } ${svc:-0} ${cpu:-0 0}" >>"$tmp/$v"
  rm -f "$tmp"/t.trace*
}

echo "single-threaded epoll server, $work bytes of work per request, 5 events per request, $conns connections, $rounds rounds of ${seconds} s per variant (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq "$rounds"); do
  n=${#variants[@]}
  for i in $(seq 0 $((n - 1))); do
    run "${variants[$(((i + r) % n))]}"
  done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
base_rps=$(cut -d' ' -f1 "$tmp/plain" | median)
base_lat=$(cut -d' ' -f2 "$tmp/plain" | median)
base_cpu=$(cut -d' ' -f4 "$tmp/plain" | median)
printf '%-12s %11s %7s %11s %7s %10s %14s %7s %14s\n' variant requests/s ratio "p99.9 us" ratio "service" "CPU/req ns" ratio "process ns"
for v in "${variants[@]}"; do
  rps=$(cut -d' ' -f1 "$tmp/$v" | median)
  lat=$(cut -d' ' -f2 "$tmp/$v" | median)
  svc=$(cut -d' ' -f3 "$tmp/$v" | median)
  cpu=$(cut -d' ' -f4 "$tmp/$v" | median)
  pcpu=$(cut -d' ' -f5 "$tmp/$v" | median)
  awk -v v="$v" -v r="$rps" -v l="$lat" -v s="$svc" -v c="$cpu" -v pc="$pcpu" -v br="$base_rps" -v bl="$base_lat" \
    -v bc="$base_cpu" 'BEGIN {printf "%-12s %11.0f %6.3fx %11.0f %6.3fx %7.1f us %14.0f %6.3fx %14.0f\n",
                              v, r, r / br, l, l / bl, s, c, c / bc, pc}'
done
echo "(medians; service: the server's own p99.9 service time of a request; CPU/req: its thread's CPU time"
echo " per request, what bounds its throughput, and ratio to plain; process: all its threads')"

echo
echo "the same request without the network (request_loop: $work bytes of work, five events, 200000 requests;"
echo " CPU ns per request, medians of $rounds alternating rounds; base: events disabled):"
loop() { # variant: "thread_ns process_ns"
  local e="" a=()
  case $1 in
    idle-thread) a=(--idle-thread) ;;
    thread) e="srv_*,writer=thread,file=$tmp/l.trace" ;;
    auto) e="srv_*,file=$tmp/l.trace" ;;
  esac
  SIMPLETRACE=$e SIMPLETRACE_WRITER= "$dir/request_loop" 200000 "$work" "${a[@]}" | awk '{print $2, $4}'
  rm -f "$tmp"/l.trace*
}
lv=(base idle-thread thread auto)
for r in $(seq "$rounds"); do
  for i in $(seq 0 3); do v=${lv[$(((i + r) % 4))]}; loop "$v" >>"$tmp/loop-$v"; done
done
lb=$(cut -d' ' -f1 "$tmp/loop-base" | median)
for v in "${lv[@]}"; do
  t=$(cut -d' ' -f1 "$tmp/loop-$v" | median)
  p=$(cut -d' ' -f2 "$tmp/loop-$v" | median)
  awk -v v="$v" -v t="$t" -v p="$p" -v b="$lb" \
    'BEGIN {printf "  %-12s thread %8.0f ns %6.3fx  process %8.0f ns %6.3fx\n", v, t, t / b, p, p / b}'
done

echo
echo "one drain pass, the call that runs it (pass_latency, 2M records of 40 bytes flat out):"
for w in auto thread; do
  SIMPLETRACE="srv_*,writer=$w,file=$tmp/p.trace,drop-report=off" SIMPLETRACE_WRITER= "$dir/pass_latency" 2000000 |
    sed "s/^/  writer=$w: /"
  rm -f "$tmp/p.trace"
done
