#!/bin/sh
# SPDX-License-Identifier: MIT
# The test command: installs dependencies, builds with -Werror, runs the unit
# and integration tests, runs them again under ASan+UBSan, builds the fuzz
# targets and runs each briefly, checks that the man pages render, and runs
# make distcheck. Ends with "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
pass=0 fail=0 skip=0
step() { echo; echo "=== $*"; }
tally() { # tally BUILDDIR: add the automake test-suite.log results
	local log=$1/test-suite.log
	[ -f "$log" ] || return 0
	local p f s
	p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
	s=$(sed -n 's/^# SKIP: *//p' "$log"); e=$(sed -n 's/^# ERROR: *//p' "$log")
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${e:-0})); skip=$((skip + ${s:-0}))
}
result() { # result NAME RC
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $1"; fi
}
checked() { # checked BUILDDIR RC: make check's results; a failed make check
	# that counted no failed test (a test program did not build) is one
	local before=$fail
	grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$1/check.out"; tally "$1"
	[ "$2" -eq 0 ] && return 0
	if [ -f "$1/test-suite.log" ]; then cat "$1/test-suite.log"; else tail -30 "$1/check.out"; fi
	[ "$fail" -gt "$before" ] || result "make check in $1" 1
}

step "dependencies"
sh scripts/deps.sh || { echo "dependencies could not be installed"; exit 1; }
step "autoreconf"
autoreconf -fi >/dev/null 2>&1 || { echo "autoreconf failed"; exit 1; }

step "build (-Werror) and make check"
rm -rf build-ci && mkdir build-ci
(cd build-ci && ../configure --quiet --enable-werror && make -j2 >/dev/null) || { echo "build failed"; exit 1; }
(cd build-ci && make -j2 check >check.out 2>&1); checked build-ci $?

step "ASan + UBSan build and make check"
rm -rf build-asan && mkdir build-asan
(cd build-asan && ../configure --quiet --enable-werror --enable-asan --enable-ubsan && make -j2 >/dev/null) || { echo "asan build failed"; exit 1; }
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 make -j2 check >check.out 2>&1); checked build-asan $?

step "fuzz targets (${FUZZ_SECONDS}s each)"
rm -rf build-fuzz && mkdir build-fuzz
if (cd build-fuzz && CC=clang ../configure --quiet --enable-fuzz && make -j2 >/dev/null); then
	sh tests/fuzz/run.sh build-fuzz "$FUZZ_SECONDS"; result fuzz $?
else
	result "fuzz build" 1
fi

step "man pages render"
mrc=0
for m in man/*.[1-8]; do
	if head -1 "$m" | grep -q '^\.so '; then continue; fi
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
	if [ -n "$out" ]; then echo "$m: $out"; mrc=1; fi
done
result "man pages" $mrc

step "make distcheck"
(cd build-ci && make -j2 distcheck >distcheck.log 2>&1); rc=$?
[ $rc -eq 0 ] || tail -40 build-ci/distcheck.log
result distcheck $rc

echo
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
