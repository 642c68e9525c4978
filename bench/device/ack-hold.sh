#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ack-hold.sh: run on a machine with the bundle from make-bundle.sh (as
# root). What ack_hold_us does: 64 B put+signal one-way latency with
# ack_hold_us = 0, 2, 5 and 10 (bench/run-sig-lat.sh, ROUNDS rounds of
# SAMPLES round trips, alternating, with sends per round trip), the same
# beside UCX tcp tag_lat and sockperf (lat.sh, HOLD), and put goodput per
# message size with and without HOLD (lanes-sizes.sh, cases 1 and 3,
# alternating). Results under OUT (default /tmp/out).
#
#   bench/device/make-bundle.sh build && bench/device/ack-hold.sh   # BUNDLE=devbundle
R=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUNDLE:-$R/devbundle}
OUT=${OUT:-/tmp/out}
HOLD=${HOLD:-5}
mkdir -p "$OUT"
export PATH="$B/bin:$PATH"
d=$B/build/daemon/ucclsvcd
SAMPLES=${SAMPLES:-20000} timeout 200 bash "$R/bench/run-sig-lat.sh" "$B/build" "${ROUNDS:-5}" \
	"$d" "$d:ack_hold_us = 2" "$d:ack_hold_us = 5" "$d:ack_hold_us = 10" 2>&1 | tee "$OUT/sig-lat.txt"
OUT=$OUT/lat ROUNDS=3 LAT_CONF="ack_hold_us = $HOLD" timeout 90 bash "$R/bench/device/lat.sh" >/dev/null 2>&1
cat "$OUT/lat/summary.txt"
for r in 1 2; do
	for x in "" "ack_hold_us = $HOLD"; do
		OUT=$OUT/gp EXTRA=$x CASES="1 3" ROUNDS=1 timeout 100 bash "$R/bench/device/lanes-sizes.sh" >/dev/null 2>&1
	done
done
grep -v "^lane_" "$OUT/gp/summary.txt"
