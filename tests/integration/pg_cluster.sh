#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the integration tests (a ctest fixture: pg_cluster_start /
# pg_cluster_stop). `start <state dir>` runs initdb in a new temporary folder as the postgres user,
# starts the server on a free loopback port with a socket folder of its own, and writes
# <state dir>/conninfo (the libpq connection string the tests read) and <state dir>/cluster (the
# temporary folder). `stop <state dir>` stops the server and removes the folder; it runs even when the
# tests failed (FIXTURES_CLEANUP). Only 127.0.0.1 is listened on; scram-sha-256 over TCP, so a wrong
# password is a real authentication failure.
set -euo pipefail
action=$1 state=$2
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/initdb" ] || { echo "pg_cluster: no PostgreSQL server (run scripts/bootstrap)" >&2; exit 1; }

as_postgres() {  # initdb and the server refuse to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
start)
  mkdir -p "$state"
  "$0" stop "$state" 2>/dev/null || true  # a cluster left by an interrupted run
  dir=$(mktemp -d /tmp/respool-pg.XXXXXX)
  echo "$dir" >"$state/cluster"
  mkdir -p "$dir/data" "$dir/socket"
  echo "respool-test-secret" >"$dir/password"
  [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$dir"
  as_postgres "$bindir/initdb" -D "$dir/data" -U respool --pwfile="$dir/password" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  # A free loopback port: a random one nothing answers on (bash's /dev/tcp probe); should another
  # process take it first, the start fails and the next candidate is tried.
  started=0
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # in use
    if as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-p $port -k $dir/socket -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off" >/dev/null; then
      started=1
      break
    fi
  done
  [ "$started" -eq 1 ] || { cat "$dir/server.log" >&2; exit 1; }
  echo "host=127.0.0.1 port=$port dbname=postgres user=respool password=respool-test-secret" >"$state/conninfo"
  echo "$bindir" >"$state/bindir"
  echo "pg_cluster: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($dir)"
  ;;
stop)
  [ -f "$state/cluster" ] || exit 0
  dir=$(cat "$state/cluster")
  if [ -d "$dir/data" ]; then
    as_postgres "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir" "$state/cluster" "$state/conninfo"
  ;;
*)
  echo "usage: $0 start|stop <state dir>" >&2
  exit 2
  ;;
esac
