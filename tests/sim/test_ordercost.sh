#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke test of bench/uccl_ordercost (issue #4, experiment 6), so that it
# cannot rot: a short run with half the ops STRICT and half FENCE over a
# lossy, reordering wire must exit 0 and report completed ops; the same run
# twice must print the same numbers (virtual time, seeded); and a run whose
# received bytes are corrupted on purpose must fail rather than report.
# Run by `make check` (top_builddir from the environment) or by hand from
# the build tree.
set -u

builddir=${top_builddir:-.}
bench=$builddir/bench/uccl_ordercost
failed=0
args="--frac 50 --seeds 1 --loss 1000 --skew 1000 --warmup 100 --duration 500"

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

if [ ! -x "$bench" ]; then
	echo "FAIL: $bench not built"
	exit 1
fi

# shellcheck disable=SC2086
out=$("$bench" $args --csv)
rc=$?
[ $rc -eq 0 ] || fail "uccl_ordercost exited with $rc"
echo "$out"
# median rows: conns,loss,skew,flag,frac,"median",ops_per_s,...
for flag in strict fence; do
	ops=$(echo "$out" | awk -F, -v f="$flag" '$4 == f && $6 == "median" { print $7 }')
	case $ops in
	'' | 0) fail "$flag: no completed ops reported ('$ops')" ;;
	esac
done

# shellcheck disable=SC2086
again=$("$bench" $args --csv)
[ "$out" = "$again" ] || fail "the same seed gave different output"

# shellcheck disable=SC2086
err=$("$bench" $args --corrupt 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] || fail "a corrupted run exited with $rc, not 1"
case $err in
*"differ from the source"*) ;;
*) fail "a corrupted run did not report the data mismatch: $err" ;;
esac

[ $failed -eq 0 ] || exit 1
echo "ok: uccl_ordercost smoke test"
