#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cpu-profile.sh: run on a machine with the bundle from make-bundle.sh (as root: it
# makes two network namespaces joined by a veth pair, bench/netpair.sh).
# Measures per-thread CPU of both daemons during 16 MiB and 256 MiB put goodput
# (4 s each), a perf profile of both daemons during 16 MiB puts, and 64 B
# put+signal latency with the clients sleeping and spinning (3 rounds
# each, alternating), then with engines that never sleep.
# Results under OUT (default /tmp/out).
#
#   PERF=1 bench/device/make-bundle.sh build && bench/device/cpu-profile.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
cpu() { # cpu PID...: "pid tid comm ticks" for every thread
	for p in "$@"; do for t in /proc/$p/task/*; do
		read -r _ c rest <"$t/stat" 2>/dev/null || continue
		set -- $rest; echo "$p ${t##*/} $c $(( ${12} + ${13} ))"
	done; done
}
hz=$(getconf CLK_TCK)
start 1
for sz in 16M 256M; do
	srv rperf; cpu $PA $PB $PS >"$tmp/c0"; t0=$(date +%s.%N)
	ip netns exec "$NS1" "$RP" --socket "$SA" --seconds 4 --sizes $sz --lat-samples 0 client node-b/rperf >"$OUT/gp-$sz.txt" 2>&1 &
	PC=$!; sleep 1; cpu $PC >>"$tmp/c0"
	wait $PC; t1=$(date +%s.%N); cpu $PA $PB $PS >"$tmp/c1"
	echo "== goodput $sz: $(tail -1 "$OUT/gp-$sz.txt")" | tee -a "$OUT/summary.txt"
	awk -v hz=$hz -v dt=$(echo "$t1 - $t0" | bc 2>/dev/null || python3 -c "print($t1-$t0)") 'NR==FNR {a[$1" "$2]=$4; n[$1" "$2]=$3; next} ($1" "$2) in a {d=($4-a[$1" "$2])/hz/dt*100; if (d>2) printf "  pid %s tid %s %s: %.0f%% of a core\n", $1, $2, $3, d}' "$tmp/c0" "$tmp/c1" | tee -a "$OUT/summary.txt"
done
# perf profile of daemon A (sender) and B (receiver) during a 16M goodput run
srv rperf
ip netns exec "$NS1" "$RP" --socket "$SA" --seconds 5 --sizes 16M --lat-samples 0 client node-b/rperf >"$OUT/gp-perf.txt" 2>&1 & PC=$!
sleep 1
perf record -g -p $PA -o "$tmp/pa.data" -- sleep 3 >"$OUT/perf-rec-a.err" 2>&1 & PF=$!
perf record -g -p $PB -o "$tmp/pb.data" -- sleep 3 >"$OUT/perf-rec-b.err" 2>&1
wait $PF $PC
perf report -i "$tmp/pa.data" --no-children --percent-limit 1.5 --stdio 2>/dev/null | grep -v "^$" | head -120 >"$OUT/perf-a.txt"
perf report -i "$tmp/pb.data" --no-children --percent-limit 1.5 --stdio 2>/dev/null | grep -v "^$" | head -120 >"$OUT/perf-b.txt"
perf report -i "$tmp/pa.data" --no-children --sort dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -15 >"$OUT/perf-a-dso.txt"
perf report -i "$tmp/pb.data" --no-children --sort dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -15 >"$OUT/perf-b-dso.txt"
# latency, sleeping and spinning, alternating
for r in 1 2 3; do
	for mode in sleep spin; do
		a=""; [ $mode = spin ] && a=--spin
		srv rperf
		ip netns exec "$NS1" "$RP" --socket "$SA" --sizes 64K --seconds 0.3 --lat-samples 20000 $a client node-b/rperf >"$OUT/lat-$mode-$r.txt" 2>&1
		echo "== lat $mode $r: $(grep -iE 'p50|one-way' "$OUT/lat-$mode-$r.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
	done
done
stop
# engines that never sleep (engine_idle_spin_us = 1 s) with spinning clients
start 2 "engine_idle_spin_us = 1000000"
for r in 1 2 3; do
	srv rperf
	ip netns exec "$NS1" "$RP" --socket "$SA" --sizes 64K --seconds 0.3 --lat-samples 20000 --spin client node-b/rperf >"$OUT/lat-allspin-$r.txt" 2>&1
	echo "== lat engines+clients spinning $r: $(grep -iE 'p50|one-way' "$OUT/lat-allspin-$r.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
stop
echo done | tee -a "$OUT/summary.txt"
