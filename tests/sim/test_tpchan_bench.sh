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
. "$(dirname "$0")/bench_smoke.sh"

bench_run tpchan_bench 2048 2 400
expect_out "control path: median [0-9.]* M chunks/s .*2 runs" "no chunks/s figure"
[ "$(echo "$out" | grep -c "^run [12]: .* M chunks/s .*core reference [1-9][0-9]* M rounds/s")" = 2 ] ||
	{ echo "FAIL: not every run has its core reference"; exit 1; }
expect_out "core reference: median [1-9][0-9]* M rounds/s .*; [0-9.]* chunks per 1000 rounds" \
	"no core reference in the summary"
"$bench" 10 0 >/dev/null 2>&1 && { echo "FAIL: zero runs were accepted"; exit 1; }
echo "ok: tpchan_bench smoke test"
