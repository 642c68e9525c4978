#!/bin/sh
# SPDX-License-Identifier: MIT
# Build into a directory: scripts/build.sh BUILDDIR [configure options...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=$1; shift
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi >/dev/null 2>&1)
mkdir -p "$b"
cd "$b"
[ -f Makefile ] || "$top/configure" --quiet "$@"
make -j"$(nproc)" >/dev/null
