#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke test of bench/tpchan_bench, so that it cannot rot: a short run must
# exit 0 (every message completed), report its chunks per CPU second with
# the core reference measured around its runs, and refuse a bad run count.
# Not a performance test: no figure is compared with anything. Run by
# `make check` (top_builddir from the environment) or by hand from the
# build tree.
set -u

builddir=${top_builddir:-.}
bench=$builddir/bench/tpchan_bench

if [ ! -x "$bench" ]; then
	echo "FAIL: $bench not built"
	exit 1
fi
out=$("$bench" 2048 2 400 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: tpchan_bench exited with $rc"; exit 1; }
echo "$out" | grep -q "control path: median [0-9.]* M chunks/s .*2 runs" ||
	{ echo "FAIL: no chunks/s figure"; exit 1; }
[ "$(echo "$out" | grep -c "^run [12]: .* M chunks/s .*core reference [1-9][0-9]* M rounds/s")" = 2 ] ||
	{ echo "FAIL: not every run has its core reference"; exit 1; }
echo "$out" | grep -q "core reference: median [1-9][0-9]* M rounds/s .*; [0-9.]* chunks per 1000 rounds" ||
	{ echo "FAIL: no core reference in the summary"; exit 1; }
"$bench" 10 0 >/dev/null 2>&1 && { echo "FAIL: zero runs were accepted"; exit 1; }
echo "ok: tpchan_bench smoke test"
