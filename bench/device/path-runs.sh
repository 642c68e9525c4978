#!/bin/bash
# SPDX-License-Identifier: MIT
#
# path-runs.sh: run on a machine with the bundle from make-bundle.sh (as root:
# it makes two network namespaces joined by a veth pair, bench/netpair.sh).
# Measures put goodput (16 MiB and 256 MiB, 3 s each, 3 rounds alternating)
# with the daemon defaults (a path per 32 KiB chunk), path_run_bytes = 64K
# and 128K (chunks keep a path over a run, cut at whole packets), and
# chunk_bytes = 128K, with the GSO sends each made; iperf3 cubic before and
# after. Results under OUT (default /tmp/out).
#
#   bench/device/make-bundle.sh build && bench/device/path-runs.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for round in 1 2 3; do
	k=0
	for set in "" "path_run_bytes = 64K" "path_run_bytes = 128K" "chunk_bytes = 128K"; do
		k=$((k+1))
		start r$k$round "$set"
		for sz in 16M 256M; do
			srv rperf
			ip netns exec "$NS1" "$RP" --socket "$SA" --seconds 3 --sizes $sz --lat-samples 0 client node-b/rperf >"$tmp/gp.txt" 2>&1
			echo "round $round [${set:-default}] size $sz: $(gbps "$tmp/gp.txt") Gbit/s" | tee -a "$OUT/summary.txt"
		done
		"$CTL" --socket "$SA" channels 2>&1 | grep -E "nic " | sed 's/^/    /' | tee -a "$OUT/summary.txt"
		stop
	done
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
echo done | tee -a "$OUT/summary.txt"
