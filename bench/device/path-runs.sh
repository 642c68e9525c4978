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
		goodput_set "r$k$round" "round $round [${set:-default}]" 3 "$set"
	done
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
echo done | tee -a "$OUT/summary.txt"
