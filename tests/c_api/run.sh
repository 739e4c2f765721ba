#!/usr/bin/env bash
# Installs the build into a private prefix, then builds and runs the C consumers the way a user
# would: through pkg-config and the installed library (and, for the second, dlopen of it).
# Args: <cmake build dir> <source dir> <C compiler> [sanitizer flags]
set -euo pipefail
build=$1 src=$2 cc=$3 san=${4:-}
prefix="$build/c_api_install"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags respool)
libs=$(pkg-config --libs respool)
libdir=$(pkg-config --variable=libdir respool)
strict="-std=c11 -Wall -Wextra -pedantic -Werror"
# shellcheck disable=SC2086
"$cc" $strict $san $cflags "$src/tests/c_api/c_api_test.c" -o "$build/c_api_test" $libs -lpthread \
  -Wl,-rpath,"$libdir"
"$build/c_api_test"
# shellcheck disable=SC2086
"$cc" $strict $san $cflags "$src/tests/c_api/dlopen_consumer.c" -o "$build/dlopen_consumer" -ldl
"$build/dlopen_consumer" "$libdir/librespool.so"
# The v2 part of the ABI (options by id, create2, hooks2/stats2 sizes, last error)
# shellcheck disable=SC2086
"$cc" $strict $san $cflags "$src/tests/c_api/c_api_v2_test.c" -o "$build/c_api_v2_test" $libs -lpthread \
  -Wl,-rpath,"$libdir"
"$build/c_api_v2_test"
# v1 callers keep working: the same v1 test and dlopen consumer, compiled against the frozen v1 header
# (tests/c_api/v1/respool/respool.h, as released in 0.1.0), run against this library.
# shellcheck disable=SC2086
"$cc" $strict $san -I"$src/tests/c_api/v1" "$src/tests/c_api/c_api_test.c" -o "$build/c_api_test_v1_header" \
  -L"$libdir" -lrespool -lpthread -Wl,-rpath,"$libdir"
"$build/c_api_test_v1_header"
# shellcheck disable=SC2086
"$cc" $strict $san -I"$src/tests/c_api/v1" "$src/tests/c_api/dlopen_consumer.c" -o "$build/dlopen_consumer_v1_header" -ldl
"$build/dlopen_consumer_v1_header" "$libdir/librespool.so"
# The C example of docs/04-c-api.md
# shellcheck disable=SC2086
"$cc" $strict $san $cflags "$src/examples/c/pool_example.c" -o "$build/c_pool_example" $libs -lpthread \
  -Wl,-rpath,"$libdir"
"$build/c_pool_example"
