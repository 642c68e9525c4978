#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rxhint.sh: run on a machine with the bundle from make-bundle.sh (as root).
# What the receive hint (udp_rx_hint: a socket filter counts queued
# datagrams, so an engine skips the recvmmsg that would find its socket
# empty) does on this machine's cores:
#   - the cost of an empty receive with recvmmsg and with the hint
#     (udp_nic_bench; it also says when the kernel refuses the filter, and
#     then the rest measures nothing new);
#   - 64 B put+signal one-way latency, hint off against on, alternating
#     (bench/run-sig-lat.sh, ROUNDS rounds, default 5, of SAMPLES round
#     trips, default 20000), with the clients spinning and then sleeping,
#     each with UCX tcp tag_lat after every round for the ratio, and each
#     engine's passes per round trip and wall time a pass.
# The CPU, clock source and kernel go first. Results under OUT (default
# /tmp/out); about 4 minutes.
#
#   bench/device/make-bundle.sh build && bench/device/rxhint.sh   # BUNDLE=devbundle
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
cpu_info 2>&1 | tee "$OUT/cpu.txt"
timeout 60 udp_nic_bench 0.5 2>&1 | tee "$OUT/nic.txt"
d=$B/build/daemon/ucclsvcd
for spin in 1 0; do
	SPIN=$spin UCX=1 SAMPLES=${SAMPLES:-20000} timeout 280 bash "$R/bench/run-sig-lat.sh" "$B/build" \
		"${ROUNDS:-5}" "$d:udp_rx_hint = false" "$d" 2>&1 | tee "$OUT/sig-lat-spin$spin.txt"
done
