#!/bin/bash
# SPDX-License-Identifier: MIT
#
# streams.sh: run on a machine with the bundle from make-bundle.sh (as root:
# two network namespaces joined by a veth pair, bench/netpair.sh). One
# verified transfer of BYTES (default 8G) on one endpoint pair against the
# same bytes split over K pairs (uccl_xfer --streams K, stream i on engine
# thread i of both daemons) with engine_threads = K, for K = 2 and 4, each
# ROUNDS times (default 3) alternating, beside iperf3 cubic with 1 stream.
# Results under OUT (default /tmp/out), summary in OUT/summary.txt.
#
#   bench/device/make-bundle.sh build && bench/device/streams.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
BYTES=${BYTES:-8G}
ROUNDS=${ROUNDS:-3}
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for k in 2 4; do
	start s$k "engine_threads = $k"
	for round in $(seq "$ROUNDS"); do
		one=$(xfer) split=$(xfer --streams $k)
		echo "engine_threads $k round $round: one pair $one GB/s, $k streams $split GB/s" |
			tee -a "$OUT/summary.txt"
	done
	"$CTL" --socket "$SA" channels 2>&1 | head -8 | sed 's/^/    /' >>"$OUT/summary.txt"
	stop
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
echo done | tee -a "$OUT/summary.txt"
