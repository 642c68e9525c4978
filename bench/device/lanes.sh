#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lanes.sh: run on a machine with the bundle from make-bundle.sh (as root:
# two network namespaces joined by a veth pair, bench/netpair.sh). One
# verified transfer of BYTES (default 8G) on one endpoint pair, with
# engine_threads = K and lanes = 0 against lanes = K - 1 (the daemons split
# each put over K threads), for K = 2 and 4, ROUNDS times (default 3)
# alternating (the daemons restart for each case), beside iperf3 cubic with
# 1 stream. Results under OUT (default /tmp/out), summary in OUT/summary.txt.
#
#   bench/device/make-bundle.sh build && bench/device/lanes.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
BYTES=${BYTES:-8G}
ROUNDS=${ROUNDS:-3}
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for k in 2 4; do
	for round in $(seq "$ROUNDS"); do
		start p$k$round "engine_threads = $k"
		plain=$(xfer)
		stop
		start l$k$round "engine_threads = $k
lanes = $((k - 1))"
		lanes=$(xfer)
		"$CTL" --socket "$SA" channels 2>&1 | head -$((k * k + 2)) | sed 's/^/    /' >>"$OUT/summary.txt"
		stop
		echo "engine_threads $k round $round: one pair $plain GB/s, lanes $((k - 1)) $lanes GB/s" |
			tee -a "$OUT/summary.txt"
	done
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
