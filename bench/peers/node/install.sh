#!/usr/bin/env bash
# Installs the node-postgres peers' dependencies (package-lock.json, exactly) into node_modules/ beside
# this script. Idempotent: nothing is done when node_modules/ is there and not older than the lock.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

die() { echo "bench/peers/node/install.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || die "node is not installed (Node.js 18 or newer is needed)"
command -v npm >/dev/null 2>&1 || die "npm is not installed"
[ -f package-lock.json ] || die "package-lock.json is missing in $here"

# npm ci stamps node_modules/.package-lock.json; its absence means an interrupted or foreign install.
if [ -d node_modules ] && [ -f node_modules/.package-lock.json ] && [ ! node_modules/.package-lock.json -ot package-lock.json ]; then
    exit 0
fi

echo "bench/peers/node/install.sh: npm ci in $here" >&2
if ! npm ci --no-audit --no-fund --omit=dev >&2; then
    die "npm ci failed (is the npm registry reachable?); see npm's messages above"
fi
[ -f node_modules/pg/package.json ] || die "npm ci finished but node_modules/pg is missing"
touch node_modules/.package-lock.json
