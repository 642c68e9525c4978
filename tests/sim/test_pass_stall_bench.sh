#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke test of bench/pass_stall_bench, so that it cannot rot: a short run
# must exit 0 (the other client's NOP completed in the poll each time) and
# print both medians; bad arguments are refused. Not a performance test:
# no figure is compared with anything. Run by `make check` (top_builddir
# from the environment) or by hand from the build tree.
set -u
. "$(dirname "$0")/bench_smoke.sh"

bench_run pass_stall_bench 2 4 1
expect_out "behind 4 puts of 1 MiB .*median [0-9.]* s with the pass byte budget .*, [0-9.]* s without .*2 runs" \
	"no medians"
"$bench" 0 >/dev/null 2>&1 && { echo "FAIL: zero runs were accepted"; exit 1; }
echo "ok: pass_stall_bench smoke test"
