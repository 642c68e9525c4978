#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke test of bench/pass_stall_bench, so that it cannot rot: a short run
# must exit 0 (the other client's NOP completed in the poll each time) and
# print both medians; bad arguments are refused. Not a performance test:
# no figure is compared with anything. Run by `make check` (top_builddir
# from the environment) or by hand from the build tree.
set -u

builddir=${top_builddir:-.}
bench=$builddir/bench/pass_stall_bench

if [ ! -x "$bench" ]; then
	echo "FAIL: $bench not built"
	exit 1
fi
out=$("$bench" 2 4 1 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: pass_stall_bench exited with $rc"; exit 1; }
echo "$out" | grep -q "behind 4 puts of 1 MiB .*median [0-9.]* s with the pass byte budget .*, [0-9.]* s without .*2 runs" ||
	{ echo "FAIL: no medians"; exit 1; }
"$bench" 0 >/dev/null 2>&1 && { echo "FAIL: zero runs were accepted"; exit 1; }
echo "ok: pass_stall_bench smoke test"
