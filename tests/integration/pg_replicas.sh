#!/usr/bin/env bash
# A throwaway replicated PostgreSQL cluster on loopback for the tests of pg::cluster and the failover
# benchmark: real servers the tests start themselves, never mocked. ctest fixtures (tests/CMakeLists.txt):
# pg_replicas (asynchronous: node0 the primary, node1 and node2 its standbys) and pg_replicas_sync
# (synchronous: node0 and node1); test::pg_replica_set (tests/integration/pg_replica_set.hpp) drives
# them from C++, and its restore_layout() puts back "node0 primary, the others its standbys".
#
#   start STATE [--standbys N] [--sync]   node0 the primary, node1..N (N = 1 or 2) its streaming
#                                         standbys; returns once node0 streams to all of them
#   stop STATE                            every node stopped (immediate) and removed; idempotent, works
#                                         after any fault
#   promote STATE I                       pg_ctl promote of node I; returns once it takes writes (and
#                                         no later: failover timings measure from there)
#   crash STATE I                         a power loss: SIGKILL to node I's postmaster and all its
#                                         children (stopped first, so that none starts meanwhile; the
#                                         children die first, so that none has a last word)
#   stop-node STATE I [fast|immediate]    pg_ctl stop -m MODE (fast by default)
#   start-node STATE I                    pg_ctl start with the options of `start` (after a crash too)
#   rejoin STATE I J                      node I (running, stopped or crashed, e.g. an old primary)
#                                         becomes a standby of node J: stopped, pg_rewind from J,
#                                         standby.signal, primary_conninfo, a slot on J (its own slots
#                                         dropped); returns once it streams from J
#   delay STATE I DURATION                recovery_min_apply_delay of standby I (ALTER SYSTEM + reload),
#                                         e.g. 2s or 500ms, 0 turns it off; returns once it is in effect
# Promoting a standby while the old primary runs gives two primaries at once: the split-brain fault.
#
# Every node is a cluster of its own in a temporary folder: node0 by initdb as the postgres user (user
# respool, password respool-test-secret, scram-sha-256 over TCP, replication allowed from 127.0.0.1),
# the others by pg_basebackup -X stream -R from node0 through the physical slot slot_nodeI (both
# without fsync: the cluster is thrown away). Each has a free random loopback port (one nothing
# answers on, below the kernel's ephemeral ports, as pg_cluster.sh picks them) and a socket folder of
# its own, and listens on 127.0.0.1 only. Server options, the same on every node and on the command
# line, so that pg_rewind (which copies its source's configuration files) cannot change them:
# fsync=off, max_connections=100, log_connections=on, shared_buffers=32MB, wal_level=replica,
# max_wal_senders=10, max_replication_slots=10, wal_keep_size=256MB, hot_standby=on, wal_log_hints=on
# (pg_rewind needs it), wal_retrieve_retry_interval=1s (a standby whose primary went away tries again
# after 1 s, not 5: failover tests wait less).
# With --sync: synchronous_commit=on and synchronous_standby_names naming the other nodes, 'ANY 1
# (node1,node2)' on node0 ('node1' with one standby) and likewise on each standby, so that after a
# failover the new primary waits for one of the others (its commits hang until one streams from it);
# being on the command line, ALTER SYSTEM cannot change them. Without --sync, replication is
# asynchronous (synchronous_commit stays on: a commit is on the primary's disk before it returns,
# then streams). A standby's primary_conninfo carries application_name=nodeI, its name in
# pg_stat_replication; its recovery settings (primary_conninfo, primary_slot_name,
# recovery_min_apply_delay) live in its postgresql.auto.conf.
#
# Files `start` writes into STATE (the C++ side and the benchmarks read them):
#   nodes                 the number of nodes (standbys + 1)
#   bindir                the PostgreSQL programs used
#   root                  the temporary folder holding every node
#   conninfo              libpq keywords over every node: host=127.0.0.1,127.0.0.1 port=P0,P1 dbname=...
#   url                   the same as a URL: postgresql://respool:...@127.0.0.1:P0,127.0.0.1:P1/postgres
#   nodeI/port            node I's port (the same for the cluster's lifetime, whatever its role)
#   nodeI/dir             node I's data folder (PGDATA; its socket folder is ../socket)
#   nodeI/conninfo        libpq keywords for node I alone
#   nodeI/log             the path of node I's server log (kept across restarts and rejoins)
#   nodeI/options         the server options of node I (start-node reuses them)
# Every pg_ctl waits (-w) at most 60 s (-t 60); every other wait is bounded too. On failure the script
# says what it waited for and prints the tail of every node's log.
set -euo pipefail
secret=respool-test-secret
usage() {
  cat >&2 <<EOF
usage: $0 start STATE [--standbys 1|2] [--sync] | stop STATE | promote|crash|start-node STATE I
       | stop-node STATE I [fast|immediate] | rejoin STATE I J | delay STATE I DURATION
EOF
  exit 2
}
[ $# -ge 2 ] || usage
action=$1 state=$2
shift 2
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/initdb" ] || { echo "pg_replicas: no PostgreSQL server (run scripts/bootstrap)" >&2; exit 1; }

as_postgres() {  # initdb, pg_basebackup, pg_rewind and the server refuse to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# What `start` wrote.
nodes() {
  [ -f "$state/nodes" ] || { echo "pg_replicas: no cluster in $state (run start first)" >&2; exit 1; }
  cat "$state/nodes"
}
check_node() {  # $1 is the index of a node of the cluster
  local n
  n=$(nodes)
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -lt "$n" ] ||
    { echo "pg_replicas: no node '$1' (the cluster has nodes 0..$((n - 1)))" >&2; exit 2; }
}
node_value() { cat "$state/node$1/$2"; }
datadir() { node_value "$1" dir; }

# Connection string of node $1 for the script's own statements, named like test::pg_server's admin
# connections, which the tests' backend counts leave out.
node_conninfo() { echo "$(node_value "$1" conninfo) connect_timeout=10 application_name=respool_test_admin"; }
# Runs SQL on node $1 and prints the rows (unaligned, tuples only); fails when the node does not answer.
sql() {
  local i=$1
  shift
  local args=()
  for statement in "$@"; do args+=(-c "$statement"); done
  "$bindir/psql" -X -A -t -q -v ON_ERROR_STOP=1 -d "$(node_conninfo "$i")" "${args[@]}"
}

log_tails() {  # the end of every node's log, for a failure's message
  local i
  for ((i = 0; i < ${nodes_count:-$(cat "$state/nodes" 2>/dev/null || echo 0)}; i++)); do
    [ -f "$state/node$i/log" ] || continue
    echo "---- node$i ($(cat "$state/node$i/log")), last lines:" >&2
    tail -n 30 "$(cat "$state/node$i/log")" >&2 2>/dev/null || true
  done
}
fail() {
  echo "pg_replicas: $*" >&2
  log_tails
  exit 1
}

# Polls "$@" every 0.2 s until it succeeds; fails after $1 seconds naming $2.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

# The pid of the postmaster running on data folder $1 (none: fails). The pid postmaster.pid names
# must be a live process (not a zombie) started with that folder: after a crash the file stays, and
# its pid may since belong to another program, which must never be signalled.
postmaster_of() {
  local pm
  pm=$(head -n 1 "$1/postmaster.pid" 2>/dev/null) || return 1
  [[ "$pm" =~ ^[0-9]+$ ]] && ! gone "$pm" || return 1
  tr '\0' '\n' <"/proc/$pm/cmdline" 2>/dev/null | grep -Fx -- "$1" >/dev/null || return 1
  echo "$pm"
}

# Removes node $1's lock files (postmaster.pid, the socket's .s.PGSQL.PORT.lock) when no postmaster
# runs on it: after a crash its process may stay a zombie for a while (PID 1 of a container may reap
# late), or its pid be taken by another program, and the server and pg_ctl take either for a running
# postmaster ("lock file already exists").
clear_stale_pidfile() {
  postmaster_of "$(datadir "$1")" >/dev/null && return 0
  rm -f "$(datadir "$1")/postmaster.pid" "$(dirname "$(datadir "$1")")"/socket/.s.PGSQL.*.lock
}
pg_ctl_start() {
  clear_stale_pidfile "$1"
  as_postgres "$bindir/pg_ctl" -D "$(datadir "$1")" -l "$(node_value "$1" log)" -w -t 60 start \
    -o "$(node_value "$1" options)" >/dev/null
}
is_running() {
  clear_stale_pidfile "$1"
  as_postgres "$bindir/pg_ctl" -D "$(datadir "$1")" status >/dev/null 2>&1
}

# Node $1's options: the same everywhere but for the port and socket folder, and (with --sync) the
# standby names of the other nodes.
node_options() {
  local i=$1 port=$2 socket=$3 sync=$4 n=$5
  local opts="-p $port -k $socket -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off"
  opts+=" -c log_connections=on -c shared_buffers=32MB -c wal_level=replica -c max_wal_senders=10"
  opts+=" -c max_replication_slots=10 -c wal_keep_size=256MB -c hot_standby=on -c wal_log_hints=on"
  opts+=" -c wal_retrieve_retry_interval=1s"
  if [ "$sync" -eq 1 ]; then
    local others=() j
    for ((j = 0; j < n; j++)); do [ "$j" -eq "$i" ] || others+=("node$j"); done
    local names
    if [ "${#others[@]}" -eq 1 ]; then names=${others[0]}; else names="ANY 1 ($(IFS=,; echo "${others[*]}"))"; fi
    opts+=" -c \"synchronous_standby_names=$names\" -c synchronous_commit=on"
  fi
  echo "$opts"
}

# Starts the new node $1 (data folder made) on a free random loopback port: one nothing answers on
# (bash's /dev/tcp probe), below the kernel's range of ephemeral ports when there is room (a port some
# client connection uses locally cannot be listened on either); should another process take it
# first, the start fails and the next candidate is tried. Writes nodeI/{port,options,conninfo}.
start_new_node() {
  local i=$1 sync=$2 n=$3 port dir low=60000
  dir=$(dirname "$(datadir "$i")")
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 22000 ] && [ "$low" -le 60000 ] || low=60000
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % (low - 20000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # in use
    node_options "$i" "$port" "$dir/socket" "$sync" "$n" >"$state/node$i/options"
    if pg_ctl_start "$i" 2>/dev/null; then
      echo "$port" >"$state/node$i/port"
      echo "host=127.0.0.1 port=$port dbname=postgres user=respool password=$secret" >"$state/node$i/conninfo"
      return 0
    fi
    echo "pg_replicas: node$i did not start on port $port (taken?), trying another" >&2
  done
  fail "node$i did not start (5 ports tried)"
}

# Makes node $1 a standby of node $2 in its configuration: standby.signal, and in postgresql.auto.conf
# primary_conninfo (application_name=node$1) and primary_slot_name, replacing what was there (what
# pg_basebackup -R or pg_rewind wrote), and no apply delay.
configure_standby() {
  local i=$1 j=$2 data
  data=$(datadir "$i")
  local auto="$data/postgresql.auto.conf" kept
  kept=$(grep -Ev '^[[:space:]]*(primary_conninfo|primary_slot_name|recovery_min_apply_delay)[[:space:]]*=' "$auto" || true)
  {
    echo "$kept"
    echo "primary_conninfo = 'host=127.0.0.1 port=$(node_value "$j" port) user=respool password=$secret application_name=node$i'"
    echo "primary_slot_name = 'slot_node$i'"
  } >"$auto"  # an existing file: its owner (postgres) stays
  as_postgres touch "$data/standby.signal"
}

create_slot() {  # slot_node$2 on node $1, unless it exists
  sql "$1" "SELECT pg_create_physical_replication_slot('slot_node$2') WHERE NOT EXISTS
            (SELECT FROM pg_replication_slots WHERE slot_name = 'slot_node$2')" >/dev/null
}

# True when node $1 streams to $2 standbys (pg_stat_replication rows in state streaming), or, with $3,
# to the standby named $3.
streams_to() {
  local filter=""
  [ $# -lt 3 ] || filter=" AND application_name = '$3'"
  [ "$(sql "$1" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'$filter")" -ge "$2" ]
}

# True when none of the processes $@ runs any more (a zombie, ended but not yet reaped, counts as gone:
# PID 1 of a container may reap late).
gone() {
  local pid
  for pid in "$@"; do
    [ -e "/proc/$pid" ] || continue
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] || return 1
  done
}

case "$action" in
start)
  standbys=1 sync=0
  while [ $# -gt 0 ]; do
    case "$1" in
    --standbys) [ $# -ge 2 ] || usage; standbys=$2; shift 2 ;;
    --sync) sync=1; shift ;;
    *) usage ;;
    esac
  done
  case "$standbys" in 1 | 2) ;; *) echo "pg_replicas: --standbys must be 1 or 2, not '$standbys'" >&2; exit 2 ;; esac
  n=$((standbys + 1))
  mkdir -p "$state"
  "$0" stop "$state" 2>/dev/null || true  # a cluster left by an interrupted run
  root=$(mktemp -d /tmp/respool-pgrep.XXXXXX)
  echo "$root" >"$state/root"
  echo "$bindir" >"$state/bindir"
  echo "$n" >"$state/nodes"
  nodes_count=$n
  for ((i = 0; i < n; i++)); do
    mkdir -p "$state/node$i" "$root/node$i/socket"
    echo "$root/node$i/data" >"$state/node$i/dir"
    echo "$root/node$i/server.log" >"$state/node$i/log"
  done
  echo "$secret" >"$root/password"
  [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$root"

  mkdir "$root/node0/data"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$root/node0/data"
  as_postgres "$bindir/initdb" -D "$root/node0/data" -U respool --pwfile="$root/password" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 --no-sync >"$root/initdb.log" 2>&1 ||
    { cat "$root/initdb.log" >&2; exit 1; }
  printf '%s\n' "local all all trust" "local replication all trust" \
    "host all all 127.0.0.1/32 scram-sha-256" "host replication all 127.0.0.1/32 scram-sha-256" \
    >"$root/node0/data/pg_hba.conf"
  start_new_node 0 "$sync" "$n"
  for ((i = 1; i < n; i++)); do
    create_slot 0 "$i"
    as_postgres "$bindir/pg_basebackup" -d "host=127.0.0.1 port=$(node_value 0 port) user=respool password=$secret" \
      -D "$root/node$i/data" -X stream -R -S "slot_node$i" --checkpoint=fast --no-sync >"$root/node$i/basebackup.log" 2>&1 ||
      { cat "$root/node$i/basebackup.log" >&2; fail "pg_basebackup of node$i failed"; }
    configure_standby "$i" 0
    start_new_node "$i" "$sync" "$n"
  done
  wait_for 60 "node0 to stream to $standbys standbys" streams_to 0 "$standbys"

  hosts="" ports="" url_hosts=""
  for ((i = 0; i < n; i++)); do
    p=$(node_value "$i" port)
    hosts+="${hosts:+,}127.0.0.1" ports+="${ports:+,}$p" url_hosts+="${url_hosts:+,}127.0.0.1:$p"
  done
  echo "host=$hosts port=$ports dbname=postgres user=respool password=$secret" >"$state/conninfo"
  echo "postgresql://respool:$secret@$url_hosts/postgres" >"$state/url"
  mode=asynchronous
  [ "$sync" -eq 0 ] || mode=synchronous
  echo "pg_replicas: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'), primary on 127.0.0.1:$(node_value 0 port)," \
    "$standbys $mode standby(s) on ${ports#*,} ($root)"
  ;;
stop)
  [ $# -eq 0 ] || usage
  [ -f "$state/root" ] || exit 0
  root=$(cat "$state/root")
  for data in "$root"/node*/data; do
    [ -d "$data" ] || continue
    if ! pm=$(postmaster_of "$data"); then
      rm -f "$data/postmaster.pid"  # crashed or stopped: nothing to stop
      continue
    fi
    kill -CONT "$pm" 2>/dev/null || true  # a crash interrupted after its SIGSTOP
    as_postgres "$bindir/pg_ctl" -D "$data" -m immediate -w -t 60 stop >/dev/null 2>&1 ||
      kill -KILL $(pgrep -P "$pm") "$pm" 2>/dev/null || true  # pg_ctl could not: killed, children first
  done
  rm -rf "$root"
  rm -rf "$state"/node* "$state/root" "$state/nodes" "$state/conninfo" "$state/url" "$state/bindir"
  ;;
promote)
  [ $# -eq 1 ] || usage
  check_node "$1"
  as_postgres "$bindir/pg_ctl" -D "$(datadir "$1")" -w -t 60 promote >/dev/null || fail "promote of node$1 failed"
  ;;
crash)
  [ $# -eq 1 ] || usage
  check_node "$1"
  pm=$(postmaster_of "$(datadir "$1")") || { echo "pg_replicas: node$1 is not running" >&2; exit 1; }
  # Stopped first, the postmaster cannot start a child between the listing and the kill. The children
  # die before it: none may outlive it for a moment, see it gone and have a last word ("terminating
  # connection due to unexpected postmaster exit" to its client) as after a postmaster-only kill.
  kill -STOP "$pm"
  children=$(pgrep -P "$pm" || true)
  # shellcheck disable=SC2086
  [ -z "$children" ] || kill -KILL $children 2>/dev/null || true  # one may have ended since the listing
  kill -KILL "$pm"
  wait_for 10 "node$1's processes to end after SIGKILL" gone "$pm" $children
  ;;
stop-node)
  [ $# -ge 1 ] && [ $# -le 2 ] || usage
  check_node "$1"
  mode=${2:-fast}
  case "$mode" in fast | immediate) ;; *) usage ;; esac
  clear_stale_pidfile "$1"
  as_postgres "$bindir/pg_ctl" -D "$(datadir "$1")" -m "$mode" -w -t 60 stop >/dev/null
  ;;
start-node)
  [ $# -eq 1 ] || usage
  check_node "$1"
  pg_ctl_start "$1" || fail "node$1 did not start"
  ;;
rejoin)
  [ $# -eq 2 ] || usage
  check_node "$1"
  check_node "$2"
  i=$1 j=$2
  [ "$i" -ne "$j" ] || { echo "pg_replicas: node$i cannot follow itself" >&2; exit 2; }
  # pg_rewind wants a target shut down cleanly. One that crashed (or was stopped immediately) is
  # started and stopped first: pg_rewind's own remedy, crash recovery in single-user mode, refuses a
  # standby ("standby mode is not supported by single-user servers").
  if ! is_running "$i" && ! as_postgres "$bindir/pg_controldata" -D "$(datadir "$i")" |
    grep -Eq '^Database cluster state: +shut down'; then
    pg_ctl_start "$i" || fail "node$i (not shut down cleanly) did not start before its rewind"
  fi
  if is_running "$i"; then
    as_postgres "$bindir/pg_ctl" -D "$(datadir "$i")" -m fast -w -t 60 stop >/dev/null ||
      fail "node$i did not stop before its rewind"
  fi
  # pg_rewind says "no rewind required" when the target has not diverged from the source.
  rewind_log="$(dirname "$(datadir "$i")")/rewind.log"
  # pg_rewind reads the source's timeline from its pg_control, where a promotion's new timeline lands
  # only with the checkpoint the promotion requested: until then it would say "no rewind required".
  sql "$j" "CHECKPOINT" >/dev/null
  as_postgres "$bindir/pg_rewind" --target-pgdata="$(datadir "$i")" \
    --source-server="$(node_value "$j" conninfo) connect_timeout=10" >"$rewind_log" 2>&1 ||
    { cat "$rewind_log" >&2; fail "pg_rewind of node$i from node$j failed"; }
  # A standby keeps no replication slot of its time as a primary: an unused slot would hold back the
  # removal of its WAL for ever. Should it be promoted again, rejoin creates the slots it serves.
  find "$(datadir "$i")/pg_replslot" -mindepth 1 -delete
  create_slot "$j" "$i"
  configure_standby "$i" "$j"
  pg_ctl_start "$i" || fail "node$i did not start as a standby of node$j"
  wait_for 60 "node$i to stream from node$j" streams_to "$j" 1 "node$i"
  ;;
delay)
  [ $# -eq 2 ] || usage
  check_node "$1"
  duration=$2
  [[ "$duration" =~ ^[0-9]+$ ]] && duration="${duration}ms"  # a bare number is milliseconds
  [[ "$duration" =~ ^[0-9]+(ms|s|min|h|d)$ ]] ||
    { echo "pg_replicas: delay '$2' is not a duration like 2s, 500ms or 0" >&2; exit 2; }
  [ "$(sql "$1" "SELECT pg_is_in_recovery()")" = t ] || { echo "pg_replicas: node$1 is not a standby" >&2; exit 1; }
  sql "$1" "ALTER SYSTEM SET recovery_min_apply_delay = '$duration'" "SELECT pg_reload_conf()" >/dev/null
  # In effect once a new session sees it (the postmaster has reloaded and signalled the startup process).
  in_effect() {
    [ "$(sql "$1" "SELECT setting::bigint = extract(epoch FROM interval '$duration') * 1000
                   FROM pg_settings WHERE name = 'recovery_min_apply_delay'")" = t ]
  }
  wait_for 10 "recovery_min_apply_delay = $duration on node$1" in_effect "$1"
  ;;
*)
  usage
  ;;
esac
