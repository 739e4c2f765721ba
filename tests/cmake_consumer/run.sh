#!/usr/bin/env bash
# respool as a package, consumed the three ways users consume it, each building and running a small
# coroutine program with its own Asio (tests/cmake_consumer/app/):
#   1. find_package on the installed tree (header-only Asio), plus a C program on respool::c and a
#      program on respool::pg and respool::sqlite (their libpq and SQLite come with the package) and one
#      on respool::http; the same database and HTTP programs again with Asio compiled by the program, on
#      respool::pg_asio_separate, respool::sqlite_asio_separate and respool::http_asio_separate;
#   2. add_subdirectory of the source tree (Asio compiled once by the program: BOOST_ASIO_SEPARATE_COMPILATION);
#   3. pkg-config, with no -std of our own (the .pc files carry -std=c++20): respool-cxx, respool-pg,
#      respool-sqlite, respool-http, and their -asio-separate twins;
#   4. the installed CLI, bin/respool.
# Then what must not work: a program compiling Asio separately against the header-only library fails to
# link with a message naming the Asio build, and so does one linked against a layer of the other build;
# find_package(respool 0.3) is refused. Last, the installed
# libraries' symbols: librespool.so exports the respool_* C API only; the static C++ libraries define no
# strong Asio symbol (respool bundles no Asio implementation), and the _asio_separate ones hold no
# header-only Asio code.
# The install also carries the license (share/doc/respool/LICENSE).
# Args: <cmake build dir of respool> <respool source dir>
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work="$build/cmake_consumer"
prefix="$work/install"
jobs="${JOBS:-2}"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
fail() { echo "cmake_consumer: $*" >&2; exit 1; }

echo "--- the license is installed with the package"
grep -q "Boost Software License - Version 1.0" "$prefix/share/doc/respool/LICENSE" ||
  fail "no Boost Software License at $prefix/share/doc/respool/LICENSE"

echo "--- 1. find_package(respool 0.2 CONFIG REQUIRED) on the installed tree"
cmake -S "$src/tests/cmake_consumer/find_package" -B "$work/find_package" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/find_package" -j "$jobs" >/dev/null
"$work/find_package/cxx_app"
"$work/find_package/c_app"
"$work/find_package/http_app" || fail "http_app (respool::http) failed"
db_dir=$(mktemp -d)
"$work/find_package/db_app" "$db_dir" || { rm -rf "$db_dir"; fail "db_app (respool::pg, respool::sqlite) failed"; }
rm -rf "$db_dir"/*
"$work/find_package/db_app_asio_separate" "$db_dir" ||
  { rm -rf "$db_dir"; fail "db_app_asio_separate (respool::pg_asio_separate, respool::sqlite_asio_separate) failed"; }
rm -rf "$db_dir"
"$work/find_package/http_app_asio_separate" || fail "http_app_asio_separate (respool::http_asio_separate) failed"
if [ -f "$prefix/lib/librespool_prometheus.a" ]; then  # built when prometheus-cpp was found
  "$work/find_package/prometheus_app" || fail "prometheus_app (respool::prometheus) failed"
fi

echo "--- 2. add_subdirectory of the source tree, Asio compiled by the program"
cmake -S "$src/tests/cmake_consumer/subdirectory" -B "$work/subdirectory" -DCMAKE_BUILD_TYPE=Debug \
  -DRESPOOL_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/subdirectory" -j "$jobs" >/dev/null
"$work/subdirectory/cxx_app"

echo "--- 3. pkg-config --cflags --libs: respool-cxx, the layers, both Asio builds (no -std given here)"
app="$src/tests/cmake_consumer/app"
pkg_build() {  # output, pkg-config modules (space-separated), sources...
  local out=$1 modules=$2
  shift 2
  local flags
  flags=$(pkg-config --cflags --libs $modules) || fail "pkg-config knows no $modules"
  # shellcheck disable=SC2086
  c++ "$@" -o "$work/$out" $flags || fail "$out did not build with pkg-config --cflags --libs $modules"
}
pkg_build pkg_config_app respool-cxx "$app/main.cpp"
"$work/pkg_config_app"
pkg_build pkg_config_db_app "respool-pg respool-sqlite" "$app/db_app.cpp"
pkg_build pkg_config_http_app respool-http "$app/http_app.cpp"
pkg_build pkg_config_separate_app respool-cxx-asio-separate "$app/main.cpp" "$app/asio_impl.cpp"
pkg_build pkg_config_separate_db_app "respool-pg-asio-separate respool-sqlite-asio-separate" \
  "$app/db_app.cpp" "$app/asio_impl.cpp"
pkg_build pkg_config_separate_http_app respool-http-asio-separate "$app/http_app.cpp" "$app/asio_impl.cpp"
db_dir=$(mktemp -d)
for a in pkg_config_db_app pkg_config_separate_db_app; do
  "$work/$a" "$db_dir" || { rm -rf "$db_dir"; fail "$a failed"; }
  rm -rf "$db_dir"/*
done
rm -rf "$db_dir"
for a in pkg_config_http_app pkg_config_separate_app pkg_config_separate_http_app; do
  "$work/$a" || fail "$a failed"
done

echo "--- 4. the CLI: cmake --install puts it in bin/"
[ -x "$prefix/bin/respool" ] || fail "cmake --install did not install bin/respool"
"$prefix/bin/respool" --version

echo "--- a separately compiled Asio against the header-only library: refused at link time"
if c++ -std=c++20 -DBOOST_ASIO_SEPARATE_COMPILATION "$src/tests/cmake_consumer/app/main.cpp" \
  "$src/tests/cmake_consumer/app/asio_impl.cpp" -o "$work/mixed_app" $(pkg-config --cflags --libs respool-cxx) \
  2>"$work/mixed.log"; then
  fail "a program with BOOST_ASIO_SEPARATE_COMPILATION linked against librespool_cxx.a (header-only Asio)"
fi
grep -q "asio_separate_compilation::make_pool_impl" "$work/mixed.log" ||
  fail "the link error does not name the Asio build: $(head -c 600 "$work/mixed.log")"
echo "refused: undefined respool::detail::asio_separate_compilation::make_pool_impl"

echo "--- a separately compiled Asio against the header-only layers: refused at link time"
# (The other way round cannot happen through respool's files: the -asio-separate .pc files and the
# _asio_separate targets add BOOST_ASIO_SEPARATE_COMPILATION to the program.)
if c++ -DBOOST_ASIO_SEPARATE_COMPILATION "$app/db_app.cpp" "$app/asio_impl.cpp" -o "$work/mixed_db_app" \
  $(pkg-config --cflags --libs respool-pg respool-sqlite) 2>"$work/mixed_db.log"; then
  fail "a program with BOOST_ASIO_SEPARATE_COMPILATION linked against librespool_pg.a and librespool_sqlite.a (header-only Asio)"
fi
for layer in pg sqlite; do
  grep -q "respool::$layer::detail::asio_separate_compilation::asio_build_tag" "$work/mixed_db.log" ||
    fail "the link error does not name $layer's Asio build: $(head -c 600 "$work/mixed_db.log")"
done
echo "refused: undefined respool::pg::detail::asio_separate_compilation::asio_build_tag (and sqlite's)"

echo "--- find_package(respool 0.3) is refused (0.x: same minor version only)"
mkdir -p "$work/too_new"
cat >"$work/too_new/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(too_new LANGUAGES CXX)
find_package(respool 0.3 CONFIG REQUIRED)
EOF
if cmake -S "$work/too_new" -B "$work/too_new/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/too_new.log" 2>&1; then
  fail "find_package(respool 0.3) accepted version $(grep -o '[0-9.]*' "$prefix/lib/cmake/respool/respoolConfigVersion.cmake" | head -1)"
fi
grep -q "compatible with requested version" "$work/too_new.log" || fail "0.3 refused for another reason: $(cat "$work/too_new.log")"

echo "--- exported symbols"
extra=$(nm -D --defined-only "$prefix/lib/librespool.so" | awk '{print $3}' | grep -v '^respool_' || true)
[ -z "$extra" ] || fail "librespool.so exports more than the C API: $(echo "$extra" | head -5)"
echo "librespool.so: $(nm -D --defined-only "$prefix/lib/librespool.so" | wc -l) symbols, all respool_*"
readelf -d "$prefix/lib/librespool.so" | grep -q NODELETE ||
  fail "librespool.so lacks -z nodelete: a dlclose would unmap code its timer thread still runs"
for path in "$prefix"/lib/librespool_*.a; do
  lib=$(basename "$path")
  strong=$(nm -C --defined-only "$path" 2>/dev/null | grep -E ' [TDBR] boost::asio' || true)
  [ -z "$strong" ] || fail "$lib defines Asio's own functions: $(echo "$strong" | head -3)"
  # Compiled for a program's own Asio build: none of the inline copies of Asio's out-of-line functions
  # that a header-only build leaves in every object (the scheduler's, for one).
  if [[ $lib == *_asio_separate.a ]]; then
    inline=$(nm -C --defined-only "$path" 2>/dev/null | grep -E ' W boost::asio::detail::scheduler::' || true)
    [ -z "$inline" ] || fail "$lib was compiled for header-only Asio: $(echo "$inline" | head -2)"
  fi
done
echo "static C++ libraries: no Asio implementation inside; the _asio_separate ones built for a separate Asio"
echo "cmake_consumer: all passed"
