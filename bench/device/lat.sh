#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lat.sh: run on a machine with the bundle from make-bundle.sh (as root:
# two network namespaces joined by a veth pair, bench/netpair.sh). 64 B
# one-way latency, ROUNDS times (default 3) alternating: uccl_rperf's
# put+signal, put-with-signal ("fused": UCCL_SQE_F_SIGNAL) and send/recv
# ping-pongs with the clients sleeping and spinning (20,000 samples each), UCX tcp tag_lat (10,000 iterations) and sockperf UDP ping-pong
# (3 s) on the same veth pair; LAT_CONF: extra uccl.conf lines for both
# daemons. PIN="EA EB CA CB": a's engine on CPU EA, b's on EB (engine_cpu),
# the clients and servers of every tool on a's side on CA and on b's side
# on CB (taskset). Results under OUT (default /tmp/out), summary in
# OUT/summary.txt.
#
#   bench/device/make-bundle.sh build && bench/device/lat.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-3}
RUN_A="" RUN_B=""
if [ -n "${PIN:-}" ]; then
	# shellcheck disable=SC2086
	set -- $PIN
	CONF_A="engine_cpu = $1" CONF_B="engine_cpu = $2" RUN_A="taskset -c $3" RUN_B="taskset -c $4"
	echo "pinned: engines a $1, b $2; clients a $3, b $4" | tee -a "$OUT/summary.txt"
fi
# p50 and p99 of uccl_rperf's one-way line
ulat() { grep -iE 'one-way' "$1" | head -1; }
start lat "${LAT_CONF:-}"
for r in $(seq "$ROUNDS"); do
	# send/recv: one message a hop into a posted receive, as tag_lat
	for op in put put-signal send; do
		for mode in sleep spin; do
			a="--lat-op $op"; [ $mode = spin ] && a="$a --spin"
			n=$mode; [ $op = send ] && n="send $mode"; [ $op = put-signal ] && n="fused $mode"
			srv rperf
			ip netns exec "$NS1" $RUN_A timeout 60 "$RP" --socket "$SA" --sizes none --lat-samples 20000 $a \
				client node-b/rperf >"$OUT/lat-$op-$mode-$r.txt" 2>&1
			echo "round $r uccl $n: $(ulat "$OUT/lat-$op-$mode-$r.txt")" | tee -a "$OUT/summary.txt"
		done
	done
	ip netns exec "$NS2" $RUN_B timeout 30 env UCX_TLS=tcp UCX_NET_DEVICES=veth2 ucx_perftest -p 13337 \
		-t tag_lat -s 64 -n 10000 >/dev/null 2>&1 &
	s=$!
	sleep 1
	ip netns exec "$NS1" $RUN_A timeout 30 env UCX_TLS=tcp UCX_NET_DEVICES=veth1 ucx_perftest 10.77.0.2 \
		-p 13337 -t tag_lat -s 64 -n 10000 >"$OUT/ucx-$r.txt" 2>&1
	wait $s
	# ucx_perftest's final line: ... typical(us) average(us) overall(us) ...
	echo "round $r ucx tcp tag_lat: $(grep -E '^ *Final:' "$OUT/ucx-$r.txt" | head -1)" | tee -a "$OUT/summary.txt"
	ip netns exec "$NS2" $RUN_B timeout 20 sockperf sr -i 10.77.0.2 -p 11111 --nonblocked >/dev/null 2>&1 &
	s=$!
	sleep 1
	ip netns exec "$NS1" $RUN_A timeout 20 sockperf pp -i 10.77.0.2 -p 11111 -t 3 -m 64 --nonblocked \
		>"$OUT/sockperf-$r.txt" 2>&1
	kill $s 2>/dev/null; wait $s 2>/dev/null
	echo "round $r sockperf udp: $(grep -E 'percentile 50.000|avg-latency' "$OUT/sockperf-$r.txt" | tr -s ' ' | tr '\n' ' ')" |
		tee -a "$OUT/summary.txt"
done
stop
echo done | tee -a "$OUT/summary.txt"
