# SPDX-License-Identifier: MIT
# Sourced by the benchmarks' smoke tests (sh): bench_run NAME ARGS... runs
# bench/NAME from the build tree (top_builddir from the environment, else
# .) with ARGS, prints what it said, and fails the test unless it was built
# and exited 0; its output is then in $out and its path in $bench.
# expect_out PATTERN WHAT: fails the test, saying WHAT is missing, unless
# $out matches the grep PATTERN.
bench_run() {
	local name=$1 rc
	shift
	bench=${top_builddir:-.}/bench/$name
	if [ ! -x "$bench" ]; then
		echo "FAIL: $bench not built"
		exit 1
	fi
	out=$("$bench" "$@" 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] || { echo "FAIL: $name exited with $rc"; exit 1; }
}
expect_out() {
	echo "$out" | grep -q "$1" || { echo "FAIL: $2"; exit 1; }
}
