#!/bin/bash
# SPDX-License-Identifier: MIT
#
# chunks-threads.sh: run on a machine with the bundle from make-bundle.sh (as root: it
# makes two network namespaces joined by a veth pair, bench/netpair.sh).
# Measures put goodput with chunk_bytes 32K, 64K and 128K (2 rounds; the UDP
# GSO batch is one chunk, since each chunk picks its own path), and the
# aggregate of N endpoint pairs in parallel with engine_threads = N
# (N = 2, 4), beside iperf3 cubic with 1, 2 and 4 streams.
# Results under OUT (default /tmp/out).
#
#   bench/device/make-bundle.sh build && bench/device/chunks-threads.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for round in 1 2; do
	for ch in 32K 64K 128K; do
		goodput_set "c$ch$round" "round $round chunk $ch" 4 "chunk_bytes = $ch"
	done
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for n in 2 4; do
	echo "iperf3 cubic -P $n: $(iperf -C cubic -P $n | tail -1) Gbit/s" | tee -a "$OUT/summary.txt"
	start t$n "engine_threads = $n" $n
	for k in $(seq $n); do srv rp$k; done
	for k in $(seq $n); do
		ip netns exec "$NS1" "$RP" --socket "$SA" --seconds 4 --sizes 256M --lat-samples 0 client node-b/rp$k >"$tmp/gp$k.txt" 2>&1 &
	done
	wait $(jobs -p | tail -n $n) 2>/dev/null; sleep 0.5
	tot=0; for k in $(seq $n); do g=$(gbps "$tmp/gp$k.txt"); echo "  threads $n pair $k: $g Gbit/s" | tee -a "$OUT/summary.txt"; tot=$(awk -v a=$tot -v b=${g:-0} 'BEGIN{print a+b}'); done
	echo "engine_threads $n, $n pairs, 256M: total $tot Gbit/s" | tee -a "$OUT/summary.txt"
	"$CTL" --socket "$SA" channels 2>&1 | head -8 | sed 's/^/    /' >>"$OUT/summary.txt"
	stop
done
echo done | tee -a "$OUT/summary.txt"
