#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke test of bench/engine_turn_bench, so that it cannot rot: a short
# run must exit 0 (every hop's bytes checked), report a CPU figure, and
# show each hop's ACK, put and signal in one datagram (3.00 packets in 1.00
# datagrams), which is what the daemon's defaults (ack_hold_us, packing)
# promise for a ping-pong; and the puts that follow, waiting for their
# completion with no reply, are not held back for one. Run by `make check` (top_builddir from the
# environment) or by hand from the build tree.
set -u
. "$(dirname "$0")/bench_smoke.sh"

bench_run engine_turn_bench 2000 1
expect_out "median [0-9][0-9]* ns of CPU per one-way hop" \
	"no per-hop figure"
expect_out "core reference: median [1-9][0-9]* M rounds/s .*; a hop costs [1-9][0-9]* rounds" \
	"no core reference beside the per-hop figure"
expect_out "3.00 packets in 1.00 datagrams a hop" \
	"a hop did not go as one datagram of 3 packets"
# puts that wait and get no reply: the receiver holds the ACK at most once
# (the hold that finds no reply ends ping-pong), so the median round trip
# is 2 x 3000 ns and no more than one is longer
expect_out "median 6000 ns, .*; [01] longer than 2 x delay" \
	"put-and-wait ACKs were held for replies that never came"
"$bench" 10 1 0 >/dev/null 2>&1 && { echo "FAIL: a zero delay was accepted"; exit 1; }
echo "ok: engine_turn_bench smoke test"
