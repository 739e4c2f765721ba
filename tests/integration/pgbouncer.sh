#!/usr/bin/env bash
# A throwaway PgBouncer in transaction pooling mode in front of the test server (ctest fixture
# pgbouncer, which requires pg_cluster): the pooler tier runs respool's tests through it.
#
# `start <state dir> <server conninfo file>` reads the host and port of the server from the conninfo
# file the pg_cluster fixture wrote (tests/integration/pg_cluster.sh), and starts its own pgbouncer
# process on a free loopback port, with a socket folder, pidfile and logfile of its own in a new
# temporary folder (the system service Debian's package ships is never used). It writes into <state dir>:
#   conninfo  the libpq connection string of PgBouncer, in the same form as the server's
#   bouncer   the temporary folder (pgbouncer.ini, userlist.txt, pgbouncer.pid, pgbouncer.log, socket/)
#   log       the PgBouncer log
# `stop <state dir>` stops that process (SIGTERM, then SIGKILL after 10 s) and removes the folder; it
# runs even when the tests failed (FIXTURES_CLEANUP).
#
# The database respool_single is the server's postgres database through a pool of one server
# connection: every client's transactions run on the same backend, one after the other, which makes
# what one client leaves on a server connection visible to the next (tests/integration/pg_pooler_test.cpp).
#
# pool_mode=transaction: a client has a server connection for one transaction only, so nothing of a
# session outlives it for the client (named prepared statements, SET, LISTEN, advisory locks). Clients
# log in with scram-sha-256 against a userlist holding the fixture's password, which PgBouncer also uses
# to log in to the server. pgbouncer refuses to run as root: it runs as the postgres user then.
set -euo pipefail
usage() {
  echo "usage: $0 start <state dir> <server conninfo file> | stop <state dir>" >&2
  exit 2
}
[ $# -ge 2 ] || usage
action=$1 state=$2

as_postgres() {  # pgbouncer refuses to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The value of `key` in a key=value conninfo line (the form pg_cluster.sh writes).
conninfo_value() {
  local key=$1 line=$2 word
  for word in $line; do
    [ "${word%%=*}" = "$key" ] && { echo "${word#*=}"; return 0; }
  done
  return 1
}

stop_bouncer() {
  local dir=$1 pid
  [ -f "$dir/pgbouncer.pid" ] || return 0
  pid=$(cat "$dir/pgbouncer.pid")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do  # at most 10 s
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

case "$action" in
start)
  [ $# -eq 3 ] || usage
  server_file=$3
  command -v pgbouncer >/dev/null || { echo "pgbouncer: not installed (run scripts/bootstrap)" >&2; exit 1; }
  [ -s "$server_file" ] || { echo "pgbouncer: no server conninfo in $server_file (pg_cluster start first)" >&2; exit 1; }
  server=$(head -1 "$server_file")
  server_host=$(conninfo_value host "$server") && server_port=$(conninfo_value port "$server") ||
    { echo "pgbouncer: no host and port in $server_file" >&2; exit 1; }
  mkdir -p "$state"
  "$0" stop "$state" 2>/dev/null || true  # a pgbouncer left by an interrupted run
  dir=$(mktemp -d /tmp/respool-pgbouncer.XXXXXX)
  echo "$dir" >"$state/bouncer"
  mkdir -p "$dir/socket"
  touch "$dir/pgbouncer.log"  # before the chown: pgbouncer (as postgres) appends to it
  echo '"respool" "respool-test-secret"' >"$dir/userlist.txt"
  chmod 600 "$dir/userlist.txt"
  started=0
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # in use
    # default_pool_size stays well under the server's max_connections (100), which the other tests
    # of the pg_cluster fixture share; clients beyond it wait in PgBouncer for a server connection.
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$server_host port=$server_port
respool_single = host=$server_host port=$server_port dbname=postgres pool_size=1
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir/socket
pidfile = $dir/pgbouncer.pid
logfile = $dir/pgbouncer.log
auth_type = scram-sha-256
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
admin_users = respool
EOF
    [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$dir"
    rm -f "$dir/pgbouncer.pid"
    as_postgres pgbouncer -d "$dir/pgbouncer.ini" 2>>"$dir/pgbouncer.log" || continue
    # -d returns once the process has forked; wait (at most 10 s) for it to listen, or to die. A port
    # that another socket holds (bound, not listening: the probe above cannot see it) does not stop
    # pgbouncer, which then listens on its unix socket alone: its log says so, and the next port is tried.
    for _ in $(seq 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        started=1
        break
      fi
      grep -q "cannot listen on 127.0.0.1:$port" "$dir/pgbouncer.log" && break
      [ -f "$dir/pgbouncer.pid" ] && ! kill -0 "$(cat "$dir/pgbouncer.pid")" 2>/dev/null && break
      sleep 0.1
    done
    [ "$started" -eq 1 ] && break
    stop_bouncer "$dir"
  done
  [ "$started" -eq 1 ] || { cat "$dir/pgbouncer.log" >&2; exit 1; }
  echo "$dir/pgbouncer.log" >"$state/log"
  echo "host=127.0.0.1 port=$port dbname=postgres user=respool password=respool-test-secret" >"$state/conninfo"
  echo "pgbouncer: PgBouncer $(pgbouncer --version | awk 'NR==1{print $2}') (transaction mode) on 127.0.0.1:$port -> $server_host:$server_port ($dir)"
  ;;
stop)
  [ -f "$state/bouncer" ] || exit 0
  dir=$(cat "$state/bouncer")
  stop_bouncer "$dir"
  rm -rf "$dir"
  rm -f "$state/bouncer" "$state/conninfo" "$state/log"
  ;;
*)
  usage
  ;;
esac
