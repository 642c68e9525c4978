#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-client-syscalls.sh: the system calls a client makes for a 64 B
# put+signal ping-pong, counted with strace -f -c, against each daemon
# binary given (the same client library from BUILDDIR every time): two
# daemons on 127.0.0.1 (bench/loopd.sh), a uccl_rperf server on one, the
# client on the other, SAMPLES round trips (and uccl_rperf's warm-up).
# Deterministic where latency on a small VM is not: a system call saved
# per round trip shows here whatever the scheduler does. Prints the total
# and the five most frequent calls per daemon. No root; 127.0.0.1 only.
#
# Usage: bench/run-client-syscalls.sh BUILDDIR DAEMON...   (SAMPLES, default 2000)
set -eu
B=$(cd "${1:?usage: run-client-syscalls.sh BUILDDIR DAEMON...}" && pwd)
shift
SAMPLES=${SAMPLES:-2000}
command -v strace >/dev/null || { echo "strace is needed (apt-get install strace)" >&2; exit 1; }
. "$(dirname "$0")/loopd.sh"
for d in "$@"; do
	W=$(mktemp -d "${TMPDIR:-/tmp}/uccl-sc.XXXXXX")
	mkdir -p "$W/daemon"
	ln -s "$(cd "$(dirname "$d")" && pwd)/$(basename "$d")" "$W/daemon/ucclsvcd"
	loopd_start "$W" sc ""
	timeout 60 "$B/bench/uccl_rperf" --socket "$SB" --timeout 30 server rperf >/dev/null 2>&1 &
	sleep 0.5
	timeout 120 strace -f -c -o "$W/strace.out" "$B/bench/uccl_rperf" --socket "$SA" --sizes none \
		--lat-samples "$SAMPLES" client node-b/rperf >/dev/null 2>&1
	printf '%s: ' "$d"
	awk 'NR > 2 && $NF ~ /^[a-z_0-9]+$/ { print $4, $NF }' "$W/strace.out" | sort -rn | head -6 |
		tr '\n' ' '
	echo
	loopd_stop
	rm -rf "$W" "$T"
done
