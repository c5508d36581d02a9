# A private LTTng session daemon, for a script already running in a mount
# namespace of its own (unshare -m): /run bound to a fresh directory (a root
# session daemon keeps its sockets in /run/lttng) and LTTNG_HOME under it, so
# it shares nothing with any other daemon on the machine. Sourced by
# bench/race/run.sh, bench/real/redis/run.sh and tests/backends/ust_test.sh.

lttng_private_pid=
lttng_private_mounted=

# lttng_private_start DIR: starts the daemon, its files and log
# (DIR/sessiond.log) in DIR; false when it did not start.
lttng_private_start() {
  mkdir -p "$1/run" "$1/home" || return 1
  mount --bind "$1/run" /run || return 1
  lttng_private_mounted=1
  export LTTNG_HOME=$1/home
  lttng-sessiond --daemonize --no-kernel --pidfile="$1/sessiond.pid" >"$1/sessiond.log" 2>&1 || return 1
  for _ in $(seq 50); do [ -s "$1/sessiond.pid" ] && break; sleep 0.1; done
  lttng_private_pid=$(cat "$1/sessiond.pid" 2>/dev/null)
  [ -n "$lttng_private_pid" ]
}

# lttng_private_stop: every session destroyed, the daemon stopped (killed
# after 5 s), /run given back; nothing when none was started.
lttng_private_stop() {
  if [ -n "$lttng_private_pid" ]; then
    lttng destroy --all >/dev/null 2>&1
    kill "$lttng_private_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$lttng_private_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$lttng_private_pid" 2>/dev/null
    lttng_private_pid=
  fi
  [ -n "$lttng_private_mounted" ] && umount /run 2>/dev/null
  lttng_private_mounted=
}
