#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ack-hold.sh: run on a machine with the bundle from make-bundle.sh (as
# root). What ack_hold_us does: 64 B put+signal one-way latency with
# ack_hold_us = each of HOLDS (default "0 2 5 10"; bench/run-sig-lat.sh,
# ROUNDS rounds of SAMPLES round trips, alternating, with sends per round
# trip), the same beside UCX tcp tag_lat and sockperf (lat.sh, ack_hold_us
# = HOLD), the round trip of a 64 B put with no reply (put-rtt.sh, 0
# against HOLD), and unless GOODPUT=0 put goodput per message size with and
# without HOLD (lanes-sizes.sh, cases 1 and 3, alternating). Results under
# OUT (default /tmp/out).
#
#   bench/device/make-bundle.sh build && bench/device/ack-hold.sh   # BUNDLE=devbundle
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
HOLD=${HOLD:-5}
d=$B/build/daemon/ucclsvcd
variants=()
for h in ${HOLDS:-0 2 5 10}; do variants+=("$d:ack_hold_us = $h"); done
SAMPLES=${SAMPLES:-20000} timeout 200 bash "$R/bench/run-sig-lat.sh" "$B/build" "${ROUNDS:-5}" \
	"${variants[@]}" 2>&1 | tee "$OUT/sig-lat.txt"
OUT=$OUT/lat ROUNDS=3 LAT_CONF="ack_hold_us = $HOLD" timeout 90 bash "$R/bench/device/lat.sh" >/dev/null 2>&1
cat "$OUT/lat/summary.txt"
OUT=$OUT/rtt ROUNDS=3 CONFS="ack_hold_us = 0
ack_hold_us = $HOLD" timeout 120 bash "$R/bench/device/put-rtt.sh" >/dev/null 2>&1
cat "$OUT/rtt/summary.txt"
[ "${GOODPUT:-1}" = 0 ] && exit 0
for r in 1 2; do
	for x in "" "ack_hold_us = $HOLD"; do
		OUT=$OUT/gp EXTRA=$x CASES="1 3" ROUNDS=1 timeout 100 bash "$R/bench/device/lanes-sizes.sh" >/dev/null 2>&1
	done
done
grep -v "^lane_" "$OUT/gp/summary.txt"
