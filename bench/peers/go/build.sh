#!/usr/bin/env bash
# Builds the Go peers of bench/compare (bench/peers/PROTOCOL.md) into <out dir>:
#   <out dir>/pgxbench   the pgxpool v4 database peer
#   <out dir>/kvservice  the net/http + pgxpool v4 service
#   <out dir>/failoverpeer  the pgxpool v4 client of bench/failover
#
#   bench/peers/go/build.sh <out dir>
#
# Offline, from Debian 12's packages only: golang-go (Go 1.19) and golang-github-jackc-pgx-v4-dev
# (pgx v4 and its dependencies under /usr/share/gocode), installed first when missing (as root).
# GOPATH mode, so no module is ever downloaded; GOPATH and GOCACHE are temporary folders.
set -euo pipefail

die() {
  echo "bench/peers/go/build.sh: $*" >&2
  exit 1
}

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 <out dir>" >&2
  exit 2
fi
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1" || die "cannot create the output folder $1"
out=$(cd "$1" && pwd)

packages=(golang-go golang-github-jackc-pgx-v4-dev)
missing=()
for p in "${packages[@]}"; do
  # "install ok installed" only: a package removed but not purged still has a dpkg entry.
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages (${missing[*]}): install them as root, or run this as root"
  echo "installing ${missing[*]}" >&2
  # A fresh machine may have no package lists yet.
  apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    die "could not install ${missing[*]}"
fi

gocode=/usr/share/gocode
[ -d "$gocode/src/github.com/jackc/pgx/v4/pgxpool" ] || die "pgx v4 is not under $gocode (golang-github-jackc-pgx-v4-dev)"
command -v go >/dev/null || die "no go command on PATH (golang-go)"

tmp=$(mktemp -d /tmp/respool-go-peers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# GOPATH mode with the Debian sources second; GOPROXY=off and GOTOOLCHAIN=local forbid any download.
# CGO_ENABLED=0: pure-Go binaries, so no C compiler is needed (golang-go only recommends gcc).
export GO111MODULE=off GOPATH="$tmp/gopath:$gocode" GOCACHE="$tmp/cache" GOPROXY=off GOFLAGS="" \
  GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$tmp/gopath"
cd "$src"
for cmd in pgxbench kvservice failoverpeer; do
  go build -trimpath -o "$out/$cmd" "./$cmd" || die "building $cmd failed"
done
echo "built $out/pgxbench, $out/kvservice and $out/failoverpeer ($(go version))" >&2
