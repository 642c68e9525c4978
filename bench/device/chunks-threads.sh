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
R=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUNDLE:-$R/devbundle}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH="$B/bin:$PATH"
. "$R/bench/netpair.sh"
netpair_start dv 10.77.0.1 10.77.0.2 || exit 1
D=$B/build/daemon/ucclsvcd RP=$B/build/bench/uccl_rperf CTL=$B/build/client/ucclctl
conf() { printf 'peer_listen = %s\npeers = node-a=10.77.0.1:7471, node-b=10.77.0.2:7472\nhost_name = %s\ndata_port = 0\nmtu = 9000\n%b\n' "$2" "$3" "$4" >"$1"; }
start() { # start TAG EXTRA_CONF
	conf "$tmp/a$1.conf" 10.77.0.1:7471 node-a "$2"; conf "$tmp/b$1.conf" 10.77.0.2:7472 node-b "$2"
	ip netns exec "$NS1" "$D" --config "$tmp/a$1.conf" --runtime-dir "$tmp/ra$1" >"$OUT/a$1.log" 2>&1 & PA=$!
	ip netns exec "$NS2" "$D" --config "$tmp/b$1.conf" --runtime-dir "$tmp/rb$1" >"$OUT/b$1.log" 2>&1 & PB=$!
	pids="$pids $PA $PB"
	for _ in $(seq 100); do [ "$(grep -c 'data channel .* up' "$OUT/a$1.log")" -ge "${3:-1}" ] && break; sleep 0.1; done
	sleep 0.5
	SA=$tmp/ra$1/ucclsvcd.sock SB=$tmp/rb$1/ucclsvcd.sock
}
srv() { # srv NAME
	: >"$tmp/srv-$1.err"
	ip netns exec "$NS2" "$RP" --socket "$SB" --timeout 100 server "$1" >>"$OUT/srv.log" 2>"$tmp/srv-$1.err" & 
	pids="$pids $!"
	for _ in $(seq 50); do grep -q listening "$tmp/srv-$1.err" && break; sleep 0.1; done
}
stop() { kill $PA $PB 2>/dev/null; wait $PA $PB 2>/dev/null; }
gbps() { awk '$1 ~ /^[0-9]/ && $2 ~ /iB$/ {print $3}' "$1" | tail -1; }
iperf() { # iperf ARGS: Gbit/s
	ip netns exec "$NS2" timeout 20 iperf3 -s -1 -B 10.77.0.2 >/dev/null 2>&1 & s=$!; sleep 0.5
	ip netns exec "$NS1" timeout 20 iperf3 -c 10.77.0.2 -t 4 "$@" -f g 2>&1 | awk '/receiver/ {v=$(NF-2)} END {print v}'
	wait $s
}
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for round in 1 2; do
	for ch in 32K 64K 128K; do
		start c$ch$round "chunk_bytes = $ch"
		for sz in 16M 256M; do
			srv rperf
			ip netns exec "$NS1" "$RP" --socket "$SA" --seconds 4 --sizes $sz --lat-samples 0 client node-b/rperf >"$tmp/gp.txt" 2>&1
			echo "round $round chunk $ch size $sz: $(gbps "$tmp/gp.txt") Gbit/s" | tee -a "$OUT/summary.txt"
		done
		"$CTL" --socket "$SA" channels 2>&1 | grep -E "nic " | sed 's/^/    /' | tee -a "$OUT/summary.txt"
		stop
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
