#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the integration tests (ctest fixtures: pg_cluster_start /
# pg_cluster_stop, and pg_cluster_faults_* for the tests that stop the server).
#
# `start <state dir>` runs initdb in a new temporary folder as the postgres user, starts the server on
# a free loopback port with a socket folder of its own, and writes into <state dir>:
#   conninfo  the libpq connection string the tests read
#   cluster   the temporary folder (data/, socket/, server.log)
#   bindir    the PostgreSQL programs used
#   options   the server options of this start, so that server-start reuses exactly them
#   log       the server log (log_connections=on: one "connection received" line per attempt)
# `stop <state dir>` stops the server (if it runs) and removes the folder; it runs even when the
# tests failed (FIXTURES_CLEANUP), and after server-stop.
#
# Fault tests stop and start the same server: the port, socket folder and data folder stay the same,
# so connection strings taken before remain valid.
#   server-stop <state dir> [fast|immediate]     pg_ctl stop -m MODE (fast by default)
#   server-start <state dir>                     start again with the options of `start`
#   server-restart <state dir> [fast|immediate]  server-stop then server-start
# pg_ctl waits for each (-w) and gives up after 60 s (-t 60), so no action hangs.
#
# RESPOOL_PG_MAX_CONNECTIONS (default 100) sets the server's max_connections at `start` (the shared
# connection budget's test runs a server with few).
#
# Only 127.0.0.1 is listened on; scram-sha-256 over TCP, so a wrong password is a real
# authentication failure.
#
# `start-tls <state dir>` starts a cluster that takes TLS connections only: a throwaway CA and a server
# certificate for the name localhost (no IP address in it) made with openssl in the cluster folder,
# ssl=on, and pg_hba.conf lines `hostssl ... scram-sha-256` and `hostnossl ... reject`. It also writes
#   tls       the folder with ca.crt (the root that verifies the server)
# and the conninfo says sslmode=require.
set -euo pipefail
usage() {
  echo "usage: $0 start|start-tls|stop|server-start <state dir> | server-stop|server-restart <state dir> [fast|immediate]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
action=$1 state=$2 mode=${3:-fast}
case "$mode" in fast | immediate) ;; *) usage ;; esac
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/initdb" ] || { echo "pg_cluster: no PostgreSQL server (run scripts/bootstrap)" >&2; exit 1; }

as_postgres() {  # initdb and the server refuse to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cluster_dir() {  # the folder of a started cluster, or a failure naming the state folder
  [ -f "$state/cluster" ] && [ -f "$state/options" ] ||
    { echo "pg_cluster: no cluster in $state (run start first)" >&2; exit 1; }
  cat "$state/cluster"
}

server_start() {
  local dir=$1 opts=$2
  as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$opts"
}
server_stop() {
  local dir=$1
  as_postgres "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop
}

# A CA and a certificate for localhost signed by it, in $1 (the server's key readable by it alone).
make_certificates() {
  local tls=$1
  mkdir -p "$tls"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$tls/ca.key" -out "$tls/ca.crt" -days 2 \
    -subj "/CN=respool test CA" -addext basicConstraints=critical,CA:TRUE 2>/dev/null
  openssl req "${ec[@]}" -keyout "$tls/server.key" -out "$tls/server.csr" -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' >"$tls/server.ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/server.crt" -days 2 -extfile "$tls/server.ext" 2>/dev/null
  chmod 600 "$tls/server.key"
}

case "$action" in
start | start-tls)
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
  tls_opts="" conninfo_extra=""
  if [ "$action" = start-tls ]; then
    make_certificates "$dir/tls"
    [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$dir/tls"
    printf '%s\n' "local all all trust" "hostssl all all 127.0.0.1/32 scram-sha-256" \
      "hostnossl all all 127.0.0.1/32 reject" >"$dir/data/pg_hba.conf"
    tls_opts=" -c ssl=on -c ssl_cert_file=$dir/tls/server.crt -c ssl_key_file=$dir/tls/server.key"
    conninfo_extra=" sslmode=require"
    echo "$dir/tls" >"$state/tls"
  fi
  # A free loopback port: a random one nothing answers on (bash's /dev/tcp probe); should another
  # process take it first, the start fails and the next candidate is tried.
  started=0
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # in use
    opts="-p $port -k $dir/socket -c listen_addresses=127.0.0.1 -c max_connections=${RESPOOL_PG_MAX_CONNECTIONS:-100} -c fsync=off"
    opts+=" -c log_connections=on$tls_opts"
    if server_start "$dir" "$opts" >/dev/null; then
      started=1
      break
    fi
  done
  [ "$started" -eq 1 ] || { cat "$dir/server.log" >&2; exit 1; }
  echo "$opts" >"$state/options"
  echo "$dir/server.log" >"$state/log"
  echo "host=127.0.0.1 port=$port dbname=postgres user=respool password=respool-test-secret$conninfo_extra" >"$state/conninfo"
  echo "$bindir" >"$state/bindir"
  echo "pg_cluster: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($dir)"
  ;;
stop)
  [ -f "$state/cluster" ] || exit 0
  dir=$(cat "$state/cluster")
  if [ -d "$dir/data" ]; then  # not running after server-stop: pg_ctl fails, which is fine here
    as_postgres "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  rm -f "$state/cluster" "$state/conninfo" "$state/options" "$state/log" "$state/tls"
  ;;
server-stop)
  dir=$(cluster_dir)  # an assignment, so that set -e stops here when there is no cluster
  server_stop "$dir"
  ;;
server-start)
  dir=$(cluster_dir)
  server_start "$dir" "$(cat "$state/options")"
  ;;
server-restart)
  dir=$(cluster_dir)
  server_stop "$dir"
  server_start "$dir" "$(cat "$state/options")"
  ;;
*)
  usage
  ;;
esac
