#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-lanes.sh: one transfer on one endpoint pair, two daemons on
# 127.0.0.1 with engine_threads = N, lanes = 0 against lanes = N - 1 (each
# put of at least lane_min_bytes split over N threads of both daemons).
# ROUNDS rounds, the two cases alternating (the daemons restart for each);
# prints each round's GB/s (the sender's summary, bytes generated and
# checked included) and both daemons' CPU time during it (ms, from
# /proc/PID/stat), and the medians. No root; everything stays on
# 127.0.0.1 and is bounded by timeout(1).
#
# Usage: bench/run-lanes.sh [BUILDDIR] [N] [BYTES] [ROUNDS]   (defaults: . 2 1G 5)
set -eu
B=${1:-.}
N=${2:-2}
BYTES=${3:-1G}
ROUNDS=${4:-5}
. "$(dirname "$0")/loopd.sh"

# cpu_ms: user + system time of both daemons so far
cpu_ms() {
	local t=0 p
	for p in $LOOPD_PIDS; do
		set -- $(cut -d' ' -f14,15 "/proc/$p/stat")
		t=$((t + $1 + $2))
	done
	echo $((t * 1000 / $(getconf CLK_TCK)))
}
# one LANES: a verified transfer of BYTES with that many lanes; "GB/s CPU_MS"
one() {
	local c0 g
	loopd_start "$B" lanes "engine_threads = $N\nmtu = 9000\nlanes = $1${EXTRA:+\n$EXTRA}"
	c0=$(cpu_ms)
	g=$(loopd_xfer "$B" "$BYTES")
	echo "$g $(($(cpu_ms) - c0))"
	loopd_stop
	rm -rf "$T"
}
R=$(mktemp -d "${TMPDIR:-/tmp}/uccl-lanes-res.XXXXXX")
echo "engine_threads = $N, $BYTES per transfer, $ROUNDS rounds alternating (GB/s)"
for i in $(seq "$ROUNDS"); do
	a=$(one 0) b=$(one $((N - 1)))
	echo "round $i: lanes 0 ${a% *} GB/s (daemons ${a#* } ms CPU), lanes $((N - 1)) ${b% *} GB/s (${b#* } ms)"
	echo "${a% *}" >>"$R/plain"; echo "${a#* }" >>"$R/plain_cpu"
	echo "${b% *}" >>"$R/lanes"; echo "${b#* }" >>"$R/lanes_cpu"
done
echo "median: lanes 0 $(med <"$R/plain") GB/s, $(med <"$R/plain_cpu") ms CPU;" \
	"lanes $((N - 1)) $(med <"$R/lanes") GB/s, $(med <"$R/lanes_cpu") ms CPU"
rm -rf "$R"
