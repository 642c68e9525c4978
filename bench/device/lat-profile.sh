#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lat-profile.sh: run on a machine with the bundle from make-bundle.sh (as root: it
# makes two network namespaces joined by a veth pair, bench/netpair.sh).
# Measures where a spinning 64 B put+signal ping-pong spends its time: perf
# profiles of both daemons and their system calls per second.
# Results under OUT (default /tmp/out).
#
#   PERF=1 bench/device/make-bundle.sh build && bench/device/lat-profile.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
start 1
srv rperf
ip netns exec "$NS1" "$RP" --socket "$SA" --sizes 64K --seconds 0.3 --lat-samples 300000 --spin client node-b/rperf >"$OUT/lat.txt" 2>&1 & PC=$!
sleep 1.5
perf record -g -p $PA -o "$tmp/pa.data" -- sleep 2 >/dev/null 2>&1 & P1=$!
perf record -g -p $PB -o "$tmp/pb.data" -- sleep 2 >/dev/null 2>&1 & P2=$!
perf stat -e 'syscalls:sys_enter_*' -p $PA -- sleep 1 2>"$OUT/stat-a.txt" >/dev/null & P3=$!
perf stat -e 'raw_syscalls:sys_enter' -p $PB -- sleep 1 2>"$OUT/stat-b.txt" >/dev/null
wait $P1 $P2 $P3 $PC
grep -E "one-way" "$OUT/lat.txt"
for s in a b; do
	perf report -i "$tmp/p$s.data" --no-children --percent-limit 1 --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -40 >"$OUT/perf-$s.txt"
done
echo "--- daemon A (client side), top symbols"; cat "$OUT/perf-a.txt"
echo "--- daemon B (server side), top symbols"; cat "$OUT/perf-b.txt"
echo "--- syscalls A"; grep -vE "^ +0 " "$OUT/stat-a.txt" | grep -E "syscalls|elapsed" | sort -rn | head -15
echo "--- syscalls B"; cat "$OUT/stat-b.txt" | grep -E "raw_sys|elapsed"
