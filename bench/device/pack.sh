#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pack.sh: run on a machine with the bundle from make-bundle.sh (as root).
# What udp_pack does (wire version 4: short packets to one peer share a
# datagram): 64 B put+signal one-way latency with udp_pack on and off
# (bench/run-sig-lat.sh, ROUNDS rounds of SAMPLES round trips, alternating,
# with sends, packets and datagrams per round trip, each engine's passes
# per round trip and wall time a pass, and UCX tcp tag_lat after each round
# for the ratio), the defaults beside UCX tcp and sockperf
# with the clients sleeping and spinning (lat.sh), and the round trip of a
# 64 B put with no reply (put-rtt.sh, udp_pack off against on), and
# tpchan_bench 327680 3 400 three times under perf stat (cycles,
# instructions and page faults: why this core ran the control path 3x
# slower than the development VM's; the bench now times only after an
# untimed warm-up and prints the faults left in the timed part), and
# engine_turn_bench the same way (the engines' CPU per hop of the 64 B
# ping-pong on this core: how much of the latency is their own work). The
# CPU's model, clock and frequency governor go first (cpu.txt). With a
# bundle made with NOLTO (below), the daemon and both benchmarks built
# without link-time optimisation run beside the default ones, alternating,
# so that what LTO buys on this core is measured (the latency rounds get a
# third entry, ucclsvcd.nolto). Results under OUT (default /tmp/out);
# about 5 minutes, 7 with NOLTO; PUT_RTT=0 leaves out put-rtt.sh (2 minutes).
# Last, a perf profile of one tpchan_bench invocation (tpchan-profile.txt).
#
#   sh scripts/build.sh build-nolto --disable-lto
#   NOLTO=build-nolto bench/device/make-bundle.sh build && bench/device/pack.sh   # BUNDLE=devbundle
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
cpu_info 2>&1 | tee "$OUT/cpu.txt"
d=$B/build/daemon/ucclsvcd
nolto=()
[ -x "$d.nolto" ] && nolto=("$d.nolto")
UCX=1 SAMPLES=${SAMPLES:-20000} timeout 300 bash "$R/bench/run-sig-lat.sh" "$B/build" \
	"${ROUNDS:-5}" "$d" "$d:udp_pack = false" "${nolto[@]}" 2>&1 | tee "$OUT/sig-lat.txt"
OUT=$OUT/lat ROUNDS=3 timeout 100 bash "$R/bench/device/lat.sh" >/dev/null 2>&1
cat "$OUT/lat/summary.txt"
if [ "${PUT_RTT:-1}" = 1 ]; then
	OUT=$OUT/rtt ROUNDS=3 CONFS="udp_pack = false
# defaults" timeout 120 bash "$R/bench/device/put-rtt.sh" >/dev/null 2>&1
	cat "$OUT/rtt/summary.txt"
fi
# the control path on this core, with cycles and instructions: a slower
# clock and fewer instructions per cycle tell different stories
# (with NOLTO, each run of the default build is followed by one without LTO)
bench_runs() { # bench_runs NAME FILE ARGS...: three runs (each build) under perf stat
	local name=$1 file=$2 v
	shift 2
	for i in 1 2 3; do
		for v in "" .nolto; do
			[ -z "$v" ] || [ -x "$B/bin/$name$v" ] || continue
			echo "== $name$v" >>"$OUT/$file"
			perf stat -e task-clock,cycles,instructions,page-faults timeout 60 "$B/bin/$name$v" "$@" \
				>>"$OUT/$file" 2>&1
		done
	done
	grep -E "^== |median|cycles|instructions|task-clock|faults" "$OUT/$file"
}
bench_runs tpchan_bench tpchan.txt 327680 3 400
bench_runs engine_turn_bench turn.txt 100000 3
# where that core spends the control path's cycles (against this VM's
# callgrind counts): the 30 hottest symbols of one invocation
perf record -q -o "$OUT/tpchan.perf" timeout 60 "$B/bin/tpchan_bench" 327680 3 400 >/dev/null 2>&1
perf report -q -i "$OUT/tpchan.perf" --stdio --sort symbol 2>/dev/null | grep -v '^$' | head -30 |
	tee "$OUT/tpchan-profile.txt"
rm -f "$OUT/tpchan.perf"
