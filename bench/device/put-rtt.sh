#!/bin/bash
# SPDX-License-Identifier: MIT
#
# put-rtt.sh: run on a machine with the bundle from make-bundle.sh (as
# root: two network namespaces joined by a veth pair, bench/netpair.sh).
# The round trip of a 64 B put whose sender waits for its completion, with
# no reply (uccl_xfer's latency test after a verified transfer of BYTES,
# default 256M: 2000 puts, spinning), for each uccl.conf line in CONFS
# (default: "ack_hold_us = 0" and the defaults), ROUNDS times (default 3)
# alternating. What ack_hold_us must not slow. Results under OUT (default
# /tmp/out), summary in OUT/summary.txt.
#
#   bench/device/make-bundle.sh build && bench/device/put-rtt.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-3}
mapfile -t confs < <(printf '%s\n' "${CONFS:-ack_hold_us = 0
# defaults}")
for r in $(seq "$ROUNDS"); do
	i=0
	for c in "${confs[@]}"; do
		i=$((i + 1))
		start "p$r$i" "$c"
		ip netns exec "$NS2" timeout 120 "$B/bin/uccl_xfer" --socket "$SB" --quiet recv s >/dev/null 2>&1 &
		rv=$!
		sleep 0.5
		ip netns exec "$NS1" timeout 120 "$B/bin/uccl_xfer" --socket "$SA" --quiet --json \
			--bytes "${BYTES:-256M}" send node-b/s 2>/dev/null >"$tmp/x.json"
		wait $rv
		echo "round $r, $c: $(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print("put64 rtt p50 %s us, p99 %s us (transfer ok %s)" % (d["put64_rtt_p50_us"], d["put64_rtt_p99_us"], d["ok"]))
except (ValueError, KeyError, OSError):
    print("FAILED")' "$tmp/x.json")" | tee -a "$OUT/summary.txt"
		stop
	done
done
