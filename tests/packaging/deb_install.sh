#!/usr/bin/env bash
# The .deb packages as a Debian user gets them: installs librespool<major>, respool-dev and respool with
# `apt-get install ./….deb` on this machine, checks what each package holds and declares, builds and runs
# consumers against /usr (find_package with no prefix given; pkg-config with no PKG_CONFIG_PATH; a C
# program that finds librespool.so.<major> through the loader's cache), runs the installed CLI, then
# purges the packages (and anything apt installed with them) and checks that dpkg's list and /usr are
# as they were. Why this machine and not a chroot: docs/05-packaging.md.
# Needs root (or sudo) and Debian's apt. Refuses to run where any of respool's packages is installed.
# Usage: tests/packaging/deb_install.sh [folder with the .deb files]   (default: scripts/package makes them)
set -euo pipefail
export LC_ALL=C  # sort and comm agree on one order
src=$(cd "$(dirname "$0")/../.." && pwd)
start=$SECONDS
fail() { echo "deb_install: FAILED: $*" >&2; exit 1; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ $# -ge 1 ]; then
  debs=$(cd "$1" && pwd)
else
  debs=$("$src/scripts/package" | tail -1)
fi
shopt -s nullglob
files=("$debs"/*.deb)
[ ${#files[@]} -eq 3 ] || fail "expected 3 .deb files in $debs, found ${#files[@]}"
version=$(sed -n 's/^project(respool VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major=${version%%.*}
runtime=librespool$major
packages=()
for deb in "${files[@]}"; do packages+=("$(dpkg-deb -f "$deb" Package)"); done
[ "$(printf '%s\n' "${packages[@]}" | sort | tr '\n' ' ')" = "$runtime respool respool-dev " ] ||
  fail "the packages are ${packages[*]}, not $runtime respool-dev respool"
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$'; then
    fail "$p is installed on this machine already; this test installs and purges respool's packages and leaves an existing install alone (apt-get purge ${packages[*]} to run it)"
  fi
done
for path in /usr/include/respool /usr/bin/respool; do
  [ ! -e "$path" ] || fail "$path exists already (a respool installed without the packages?); not touching it"
done

state() { dpkg-query -W -f='${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' | sort; }
work=$(mktemp -d)
state >"$work/before"
cleanup() {
  local status=$?
  set +e
  state >"$work/during"
  # What the install added: respool's packages and any dependency apt pulled in with them.
  local added
  added=$(comm -13 <(cut -d' ' -f1 "$work/before") <(cut -d' ' -f1 "$work/during") | tr '\n' ' ')
  if [ -n "$added" ]; then
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq -o DPkg::Lock::Timeout=120 $added >/dev/null
  fi
  state >"$work/after"
  if ! diff -u "$work/before" "$work/after" >"$work/state.diff"; then
    echo "deb_install: FAILED: dpkg's package list differs from before the test:" >&2
    cat "$work/state.diff" >&2
    status=1
  fi
  for path in /usr/include/respool /usr/bin/respool /usr/lib/*/cmake/respool /usr/lib/*/pkgconfig/respool*.pc \
    /usr/lib/*/librespool*; do
    [ ! -e "$path" ] || { echo "deb_install: FAILED: $path is left behind" >&2; status=1; }
  done
  rm -rf "$work"
  [ "$status" -eq 0 ] && echo "deb_install: all passed; packages purged, machine as before ($((SECONDS - start)) s)"
  exit "$status"
}
trap cleanup EXIT

echo "--- apt-get install ${files[*]##*/}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o DPkg::Lock::Timeout=120 "${files[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install"; }

echo "--- what each package holds and declares"
dpkg -L "$runtime" | grep -Eq "^/usr/lib/[^/]+/librespool\.so\.$major$" || fail "$runtime lacks librespool.so.$major"
if dpkg -L "$runtime" | grep -E '\.(a|hpp|h|pc|cmake)$|/librespool\.so$'; then fail "$runtime holds development files (above)"; fi
for f in /usr/include/respool/pool.hpp /usr/include/respool/version.h /usr/include/respool/respool.h; do
  dpkg -S "$f" | grep -q '^respool-dev:' || fail "$f is not in respool-dev"
done
for pc in respool respool-cxx respool-cxx-asio-separate respool-pg respool-sqlite respool-http \
  respool-pg-asio-separate respool-sqlite-asio-separate respool-http-asio-separate; do
  pkg-config --exists "$pc" || fail "pkg-config finds no $pc in /usr"
done
[ "$(dpkg -S /usr/bin/respool | cut -d: -f1)" = respool ] || fail "/usr/bin/respool is not in the respool package"
depends() { dpkg-query -W -f='${Depends}' "$1"; }
depends respool-dev | grep -q "$runtime (= $version)" || fail "respool-dev does not depend on $runtime (= $version): $(depends respool-dev)"
for d in libboost libpq-dev libsqlite3-dev; do
  depends respool-dev | grep -q "$d" || fail "respool-dev does not depend on $d: $(depends respool-dev)"
done
for d in libpq5 libsqlite3-0 libstdc++6; do
  depends respool | grep -q "$d" || fail "respool does not depend on $d: $(depends respool)"
done
depends "$runtime" | grep -q libstdc++6 || fail "$runtime does not depend on libstdc++6: $(depends "$runtime")"
echo "$runtime: $(depends "$runtime")"
echo "respool-dev: $(depends respool-dev)"
echo "respool: $(depends respool)"

echo "--- the CLI"
[ "$(respool --version)" = "respool $version" ] || fail "respool --version says '$(respool --version)'"
respool --version

echo "--- find_package(respool) from /usr, no prefix given"
cmake -S "$src/tests/cmake_consumer/find_package" -B "$work/find_package" -DCMAKE_BUILD_TYPE=Release >/dev/null
grep -q '^respool_DIR:PATH=/usr/lib/.*/cmake/respool$' "$work/find_package/CMakeCache.txt" ||
  fail "find_package did not find the package in /usr: $(grep '^respool_DIR' "$work/find_package/CMakeCache.txt")"
cmake --build "$work/find_package" -j "${JOBS:-2}" --target cxx_app db_app >/dev/null
"$work/find_package/cxx_app"
mkdir "$work/db"
"$work/find_package/db_app" "$work/db" || fail "db_app (respool::pg, respool::sqlite) failed"

echo "--- pkg-config from /usr: the C library (found through the loader's cache) and the C++ library"
# shellcheck disable=SC2046
cc "$src/tests/cmake_consumer/app/c_app.c" -o "$work/c_app" $(pkg-config --cflags --libs respool)
"$work/c_app"
# shellcheck disable=SC2046
c++ "$src/tests/cmake_consumer/app/http_app.cpp" -o "$work/http_app" $(pkg-config --cflags --libs respool-http)
"$work/http_app"
