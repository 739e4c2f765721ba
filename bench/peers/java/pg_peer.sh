#!/usr/bin/env bash
# HikariCP + pgjdbc as a database bench peer (bench/peers/PROTOCOL.md): builds and starts PgPeerBench.
#
#   bench/peers/java/pg_peer.sh build OUTDIR
#       installs the Debian packages it needs when missing (libhikaricp-java, libpostgresql-jdbc-java,
#       libslf4j-java, openjdk-17-jdk-headless; apt-get as root, else through sudo) and compiles
#       PgPeerBench.java and FailoverPeer.java into OUTDIR.
#   bench/peers/java/pg_peer.sh run OUTDIR --pool N
#       replaces itself with the JVM (exec), so that the PID its starter sees is the JVM's; the server
#       comes from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
#   bench/peers/java/pg_peer.sh failover OUTDIR --name NAME --hosts H:P,H:P --pool N
#       the same for FailoverPeer, the client of bench/failover (PGUSER, PGPASSWORD, PGDATABASE).
set -euo pipefail

PACKAGES=(libhikaricp-java libpostgresql-jdbc-java libslf4j-java openjdk-17-jdk-headless)
# slf4j-nop: HikariCP logs through SLF4J; without a binding SLF4J would warn on standard error.
CLASSPATH_JARS=/usr/share/java/HikariCP.jar:/usr/share/java/postgresql.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar

usage() {
  echo "usage: $0 build OUTDIR | run OUTDIR --pool N | failover OUTDIR --name NAME --hosts H:P,H:P --pool N" >&2
  exit 2
}

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "pg_peer: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

[ $# -ge 2 ] || usage
action=$1 outdir=$2
shift 2
case "$action" in
build)
  [ $# -eq 0 ] || usage
  ensure_packages
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$outdir"
  javac --release 17 -d "$outdir" -cp "$CLASSPATH_JARS" "$here/PgPeerBench.java" "$here/FailoverPeer.java"
  ;;
run)
  [ -f "$outdir/PgPeerBench.class" ] || { echo "pg_peer: no PgPeerBench.class in $outdir (run build first)" >&2; exit 1; }
  exec java -cp "$CLASSPATH_JARS:$outdir" PgPeerBench "$@"
  ;;
failover)
  [ -f "$outdir/FailoverPeer.class" ] || { echo "pg_peer: no FailoverPeer.class in $outdir (run build first)" >&2; exit 1; }
  exec java -cp "$CLASSPATH_JARS:$outdir" FailoverPeer "$@"
  ;;
*)
  usage
  ;;
esac
