#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lanes-sizes.sh: run on a machine with the bundle from make-bundle.sh (as
# root: two network namespaces joined by a veth pair, bench/netpair.sh).
# uccl_rperf put goodput of one endpoint pair for 64K, 1M, 16M, 256M and 1G
# messages (SECONDS each, default 2) with engine_threads = 4 and lanes = 0,
# lanes = 3, and lanes = 3 with lane_min_bytes = 64K, ROUNDS times (default
# 2) alternating (fresh daemons for each case), beside iperf3 cubic with 1
# stream before and after. EXTRA: uccl.conf lines added to every case;
# CASES: which cases to run, by number (default "1 2 3"). Results under
# OUT (default /tmp/out), summary in OUT/summary.txt.
#
#   bench/device/make-bundle.sh build && bench/device/lanes-sizes.sh   # BUNDLE=devbundle
. "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-2}
SECONDS_PER=${SECONDS_PER:-2}
cases=([1]="lanes 0|engine_threads = 4" [2]="lanes 3|engine_threads = 4\nlanes = 3"
	[3]="lanes 3, min 64K|engine_threads = 4\nlanes = 3\nlane_min_bytes = 64K")
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
for round in $(seq "$ROUNDS"); do
	for n in ${CASES:-1 2 3}; do
		c=${cases[$n]}
		label=${c%%|*}
		start "z$round$(echo "$label" | tr -dc '0-9a-zA-Z')" "${c#*|}${EXTRA:+\n$EXTRA}"
		srv rperf
		ip netns exec "$NS1" timeout 60 "$RP" --socket "$SA" --seconds "$SECONDS_PER" \
			--sizes 64K,1M,16M,256M,1G --lat-samples 0 client node-b/rperf >"$tmp/z.txt" 2>&1
		echo "round $round, $label${EXTRA:+, $EXTRA}: $(awk '$1 ~ /^[0-9]/ && $2 ~ /iB$/ {printf "%s%s %s  ", $1, $2, $3}' "$tmp/z.txt")Gbit/s" |
			tee -a "$OUT/summary.txt"
		"$CTL" --socket "$SA" stats 2>&1 | grep -E "lane_(splits|parts)" | tr -s ' ' | tr '\n' ' ' >>"$OUT/summary.txt"
		echo >>"$OUT/summary.txt"
		stop
	done
done
echo "iperf3 cubic 1 stream: $(iperf -C cubic) Gbit/s" | tee -a "$OUT/summary.txt"
