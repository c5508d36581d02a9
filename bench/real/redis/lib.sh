# Running Redis as it is run (daemonize yes, a pid file, a working directory
# of its own), for run.sh and tests/real/redis_test.sh. Sourced, not run.

# free_port: a TCP port nothing listens on (the kernel's choice)
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# redis_start BIN PORT DIR [redis.conf lines...]: a daemon serving 127.0.0.1:PORT, its pid
# file DIR/redis.pid, log DIR/redis.log, data in DIR/data; the environment
# (SIMPLETRACE, LD_PRELOAD) is the caller's. Sets $redis_pid; false (and the
# log's end on stderr) if it does not answer within 10 s.
redis_start() {
  local bin=$1 port=$2 dir=$3 i
  shift 3
  mkdir -p "$dir/data"
  rm -f "$dir/redis.pid"
  {
    echo "daemonize yes"
    echo "pidfile $dir/redis.pid"
    echo "logfile $dir/redis.log"
    echo "dir $dir/data"
    echo "bind 127.0.0.1"
    echo "port $port"
    echo 'save ""'
    echo "appendonly no"
    printf '%s\n' "$@"
  } >"$dir/redis.conf"
  "$bin" "$dir/redis.conf" || { tail -5 "$dir/redis.log" >&2; return 1; }
  for i in $(seq 100); do
    if [ -s "$dir/redis.pid" ] && redis-cli -p "$port" ping >/dev/null 2>&1; then
      redis_pid=$(cat "$dir/redis.pid")
      return 0
    fi
    sleep 0.1
  done
  echo "redis did not answer on port $port within 10 s:" >&2
  tail -5 "$dir/redis.log" >&2
  return 1
}

# redis_stop PORT PID: SIGTERM (Redis shuts down and exits normally), waited for up to 20 s
redis_stop() {
  local pid=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "redis $pid did not exit within 20 s of SIGTERM; killed" >&2
  kill -9 "$pid" 2>/dev/null
  return 1
}

# redis_calls PORT: the commands Redis counted (INFO commandstats), "NAME CALLS" per line
redis_calls() {
  redis-cli -p "$1" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p'
}

# cpu_ns PID [TID]: nanoseconds on a CPU so far of the process's threads (or of thread TID),
# from the scheduler's own count (/proc/.../schedstat), not clock ticks
cpu_ns() {
  if [ -n "${2:-}" ]; then awk '{ print $1 }' "/proc/$1/task/$2/schedstat" 2>/dev/null
  else cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; fi
}
