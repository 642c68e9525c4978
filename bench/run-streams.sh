#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-streams.sh: one transfer on one endpoint pair against the same bytes
# split over N pairs on N engine threads (uccl_xfer --streams N). Two
# daemons on 127.0.0.1 with engine_threads = N; ROUNDS rounds, the two
# cases alternating; prints each round's GB/s (the sender's summary, bytes
# generated and checked included) and the medians. No root; everything
# stays on 127.0.0.1 and is bounded by timeout(1).
#
# Usage: bench/run-streams.sh [BUILDDIR] [N] [BYTES] [ROUNDS]   (defaults: . 2 1G 5)
set -eu
B=${1:-.}
N=${2:-2}
BYTES=${3:-1G}
ROUNDS=${4:-5}
. "$(dirname "$0")/loopd.sh"
loopd_start "$B" streams "engine_threads = $N\nmtu = 9000"

# one ARGS...: a verified transfer of BYTES with uccl_xfer ARGS; its GB/s
one() { loopd_xfer "$B" "$BYTES" "$@"; }

echo "engine_threads = $N, $BYTES per transfer, $ROUNDS rounds alternating (GB/s)"
: >"$T/one" ; : >"$T/split"
for i in $(seq "$ROUNDS"); do
	a=$(one) b=$(one --streams "$N")
	echo "round $i: one pair $a, $N streams $b"
	echo "$a" >>"$T/one"
	echo "$b" >>"$T/split"
done
echo "median: one pair $(med <"$T/one"), $N streams $(med <"$T/split")"
