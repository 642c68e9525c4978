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
XF=$B/bin/uccl_xfer
BYTES=${BYTES:-8G}
ROUNDS=${ROUNDS:-3}
# xfer: GB/s of one transfer of BYTES a -> b (FAILED if not verified)
xfer() {
	ip netns exec "$NS2" timeout 300 "$XF" --socket "$SB" --quiet recv s >/dev/null 2>&1 &
	local r=$!
	sleep 0.5
	ip netns exec "$NS1" timeout 300 "$XF" --socket "$SA" --quiet --json --bytes "$BYTES" \
		send node-b/s 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%.2f" % d["gbytes_per_s"] if d["ok"] else "FAILED")'
	wait $r
}
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
