#!/usr/bin/env bash
# The C ABI (src/c) stands on the library's public API alone: its files include public headers
# (<respool/...>, Boost, the standard library) and their own neighbours, never a private header of
# another layer (src/asio, src/core, ...), and name nothing in respool::detail.
# Args: <source dir>
set -euo pipefail
src=$1
files=("$src"/src/c/*.cpp "$src"/src/c/*.hpp)
status=0
# A quoted include with a directory in it reaches outside src/c.
if out=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "${files[@]}"); then
  echo "src/c includes a header outside src/c (use the public headers):" >&2
  echo "$out" >&2
  status=1
fi
if out=$(grep -nE '\bdetail::' "${files[@]}"); then
  echo "src/c uses the library's private respool::detail names:" >&2
  echo "$out" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "src/c: public headers only (${#files[@]} files)"
exit "$status"
