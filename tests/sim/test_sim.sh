#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The simulated fabric end to end: runs the scenarios in tests/sim with
# uccl-sim and checks their outcome. Every flow completes and every byte
# arrives in every scenario; the same seed gives bit-identical output; with
# 0.1% loss selective retransmission keeps more goodput than Go-Back-N; on
# the leaf-spine, spraying over 64 paths beats one path per connection (and
# a path per packet beats a path per chunk); in
# the incast, receiver-driven eqds has a lower p99 FCT than the baseline
# (Go-Back-N + dcqcn) and drops fewer packets than the window CC; with PFC
# the incast drops nothing, pauses its senders, and a victim flow of a
# paused sender to an idle host finishes later than without PFC;
# scenario errors name FILE:LINE. Run by `make check` (top_builddir and
# top_srcdir come from the environment) or by hand from the build tree.
set -u

builddir=${top_builddir:-.}
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
sim=$builddir/tools/uccl-sim
scn=$srcdir/tests/sim
work=$(mktemp -d "${TMPDIR:-/tmp}/uccl-sim-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

# run NAME [ARGS...]: run tests/sim/NAME.scn into $work/NAME, summary in
# $work/NAME.txt; the exit status must be 0 (all flows done, nothing lost)
run() {
	name=$1
	shift
	"$sim" "$scn/$name.scn" --out "$work/$name" "$@" >"$work/$name.txt" 2>"$work/$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: uccl-sim exited with $rc ($(cat "$work/$name.err"))"
		cat "$work/$name.txt"
		return 1
	fi
	return 0
}

# value NAME KEY: a number from a summary
value() {
	awk -v k="$2" '$1 == k { print $2 }' "$work/$1.txt"
}

for name in loss-sack loss-gbn incast8 incast8-eqds incast8-baseline leafspine-1path \
	leafspine-64path incast8-pfc; do
	run "$name" || continue
	[ "$(value "$name" unfinished)" = 0 ] || fail "$name: unfinished flows"
	[ "$(value "$name" failed)" = 0 ] || fail "$name: failed flows"
	[ "$(value "$name" bytes_lost)" = 0 ] || fail "$name: bytes lost"
	flows=$(value "$name" flows)
	rows=$(($(wc -l <"$work/$name/fct.csv") - 1))
	[ "$rows" = "$flows" ] || fail "$name: fct.csv has $rows rows for $flows flows"
	if grep -q unfinished "$work/$name/fct.csv"; then
		fail "$name: fct.csv lists an unfinished flow"
	fi
	echo "ok: $name: $flows flows done, goodput $(value "$name" goodput_gbps) Gbit/s," \
		"FCT p50 $(value "$name" fct_p50_us) us p99 $(value "$name" fct_p99_us) us"
done

# the same seed: bit-identical summary and CSVs
for name in incast8 leafspine-64path incast8-pfc; do
	mv "$work/$name" "$work/$name.a"
	mv "$work/$name.txt" "$work/$name.a.txt"
	run "$name" || continue
	same=yes
	for f in fct.csv throughput.csv queue.csv ports.csv; do
		if ! cmp -s "$work/$name/$f" "$work/$name.a/$f"; then
			fail "$name: $f differs between runs with the same seed"
			same=no
		fi
	done
	if ! cmp -s "$work/$name.txt" "$work/$name.a.txt"; then
		fail "$name: summary differs between runs with the same seed"
		same=no
	fi
	[ $same = yes ] && echo "ok: $name: two runs with the same seed are bit-identical"
done
# the seed matters where something is random (permutation, ECMP hashing)
if "$sim" "$scn/leafspine-1path.scn" --seed 7 --out "$work/seed7" >/dev/null 2>&1; then
	if cmp -s "$work/seed7/fct.csv" "$work/leafspine-1path/fct.csv"; then
		fail "leafspine-1path: --seed 7 gave the same fct.csv as seed 1"
	else
		echo "ok: leafspine-1path: another seed, another run"
	fi
else
	fail "leafspine-1path --seed 7: a flow did not complete"
fi

# gt A B: A > B * FACTOR (floating point, in awk)
gt() {
	awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { exit !(a > b * f) }'
}

sack=$(value loss-sack goodput_gbps)
gbn=$(value loss-gbn goodput_gbps)
if gt "${sack:-0}" "${gbn:-0}" 1.0; then
	echo "ok: 0.1% loss: SACK keeps $sack Gbit/s, Go-Back-N $gbn Gbit/s"
else
	fail "0.1% loss: SACK $sack Gbit/s is not above Go-Back-N $gbn Gbit/s"
fi
one=$(value leafspine-1path goodput_gbps)
many=$(value leafspine-64path.a goodput_gbps)
if gt "${many:-0}" "${one:-0}" 1.2; then
	echo "ok: leaf-spine permutation: 64 paths $many Gbit/s, 1 path $one Gbit/s"
else
	fail "leaf-spine permutation: 64 paths $many Gbit/s is not 1.2x 1 path $one Gbit/s"
fi

ep99=$(value incast8-eqds fct_p99_us)
bp99=$(value incast8-baseline fct_p99_us)
if gt "${bp99:-0}" "${ep99:-1000000}" 1.0; then
	echo "ok: incast: eqds p99 $ep99 us, Go-Back-N + dcqcn p99 $bp99 us"
else
	fail "incast: eqds p99 $ep99 us is not below Go-Back-N + dcqcn $bp99 us"
fi
edrop=$(value incast8-eqds queue_drops)
wdrop=$(value incast8 queue_drops)
if gt "${wdrop:-0}" "${edrop:-1000000}" 1.0; then
	echo "ok: incast: eqds drops $edrop packets, window $wdrop"
else
	fail "incast: eqds drops $edrop packets, not fewer than window's $wdrop"
fi
# variant NAME BASE KEY=VALUE...: tests/sim/BASE.scn with keys replaced or
# added, run like run(); the name is $work/NAME.scn
variant() {
	name=$1
	base=$2
	shift 2
	cp "$scn/$base.scn" "$work/$name.scn"
	for kv in "$@"; do
		k=${kv%%=*}
		sed -i "/^$k = /d" "$work/$name.scn"
		echo "$k = ${kv#*=}" >>"$work/$name.scn"
	done
	"$sim" "$work/$name.scn" --out "$work/$name" >"$work/$name.txt" 2>"$work/$name.err" ||
		{ fail "$name: uccl-sim exited with $? ($(cat "$work/$name.err"))"; return 1; }
	[ "$(value "$name" bytes_lost)" = 0 ] || fail "$name: bytes lost"
}

# in-band queue reports reach cc hint: the same incast runs differently
# with them (the stamps change its cuts), and completes either way. 4 MiB
# flows: 512 KiB ones fit in the initial window and never meet the CC.
if variant hint-ecn incast8 cc=hint "incast=8 4MiB to 0" &&
   variant hint-inband incast8 cc=hint "incast=8 4MiB to 0" inband=on; then
	if grep -q ', inband' "$work/hint-inband.txt" &&
	   ! cmp -s "$work/hint-ecn/fct.csv" "$work/hint-inband/fct.csv"; then
		echo "ok: incast8 cc hint: FCT p99 $(value hint-ecn fct_p99_us) us with ECN," \
			"$(value hint-inband fct_p99_us) us with in-band reports"
	else
		fail "incast8 cc hint: inband = on changed nothing"
	fi
fi
# adaptive chunk: a window capped at 2 chunks cuts small chunks; off, none
if variant chunk-on incast8 max_inflight=64KiB adaptive_chunk=on &&
   variant chunk-off incast8 max_inflight=64KiB; then
	on=$(value chunk-on small_chunks)
	off=$(value chunk-off small_chunks)
	if [ "${on:-0}" -gt 0 ] && [ "$off" = 0 ]; then
		echo "ok: incast8, 64 KiB window: $on small chunks with adaptive_chunk, 0 without"
	else
		fail "incast8 adaptive_chunk: small_chunks on=$on off=$off"
	fi
fi

# spray = packet: a path per packet, not per chunk, spreads the same
# permutation more evenly over the spines: more goodput than per chunk
if variant spray-packet leafspine-64path spray=packet; then
	per_chunk=$(value leafspine-64path.a goodput_gbps)
	per_pkt=$(value spray-packet goodput_gbps)
	if grep -q '(a path per packet)' "$work/spray-packet.txt" &&
	   gt "${per_pkt:-0}" "${per_chunk:-0}" 1.0; then
		echo "ok: leaf-spine, 64 paths: $per_pkt Gbit/s with a path per packet, $per_chunk per chunk"
	else
		fail "spray = packet: $per_pkt Gbit/s, not above $per_chunk with a path per chunk"
	fi
fi

# PFC: lossless (no drop, no buffer overrun), the senders get paused, and
# host 1's flow to the idle host 9 (fct.csv's last row) waits behind its
# paused incast flow: later than with the same scenario lossy.
pdrop=$(value incast8-pfc.a queue_drops)
pover=$(value incast8-pfc.a pfc_overflow)
pnum=$(value incast8-pfc.a pfc_pauses)
if [ "$pdrop" = 0 ] && [ "$pover" = 0 ] && [ "${pnum:-0}" -gt 0 ]; then
	echo "ok: incast8-pfc: $pnum pauses, 0 drops, 0 overflow," \
		"$(value incast8-pfc.a pfc_paused_us) us paused in all"
else
	fail "incast8-pfc: drops=$pdrop overflow=$pover pauses=$pnum"
fi
if variant pfc-off incast8-pfc pfc=off; then
	von=$(tail -n 1 "$work/incast8-pfc.a/fct.csv" | cut -d, -f7)
	voff=$(tail -n 1 "$work/pfc-off/fct.csv" | cut -d, -f7)
	if [ "$(value pfc-off queue_drops)" -gt 0 ] && gt "${von:-0}" "${voff:-1000000}" 1.5; then
		echo "ok: incast8 victim flow 1->9: $von us with PFC, $voff us without"
	else
		fail "incast8 victim flow 1->9: $von us with PFC is not 1.5x $voff us without"
	fi
fi
# pause spreads switch to switch: an incast on the leaf-spine with no CC
# gets spine and leaf output ports paused, still without a drop
if variant pfc-ls leafspine-1path cc=none "pfc=on 192KiB 160KiB" "incast=6 1MiB to 0"; then
	sw=$(awk -F, '$1 ~ /^(leaf|spine)[0-9]*>(leaf|spine)/ && $9 > 0' \
		"$work/pfc-ls/ports.csv" | wc -l)
	if [ "$sw" -gt 0 ] && [ "$(value pfc-ls queue_drops)" = 0 ] &&
	   [ "$(value pfc-ls pfc_overflow)" = 0 ]; then
		echo "ok: leaf-spine incast with PFC: $sw switch-to-switch ports paused, 0 drops"
	else
		fail "leaf-spine incast with PFC: $sw switch ports paused," \
			"drops $(value pfc-ls queue_drops), overflow $(value pfc-ls pfc_overflow)"
	fi
fi

# a scenario error names the file and the line
printf 'topology = star\nhosts = 4\nflow = 0 9 1MiB\n' >"$work/bad.scn"
"$sim" "$work/bad.scn" --out "$work/bad" >/dev/null 2>"$work/bad.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "bad.scn:3: flow: host out of range" "$work/bad.err"; then
	echo "ok: scenario errors name FILE:LINE"
else
	fail "bad scenario: exit $rc, message: $(cat "$work/bad.err")"
fi

# --plot on two hosts on a cable: no switch, so no queue plot (gnuplot
# failed on queue.csv's lone time column, and uccl-sim with it)
if command -v gnuplot >/dev/null; then
	if run loss-sack --plot && [ -s "$work/loss-sack/throughput.png" ] &&
	   [ ! -e "$work/loss-sack/queue.png" ]; then
		echo "ok: --plot without a switch draws no queue plot"
	else
		fail "--plot without a switch: $(ls "$work/loss-sack" | tr '\n' ' ')"
	fi
	if run incast8 --plot && [ -s "$work/incast8/queue.png" ]; then
		echo "ok: --plot with switches draws queue.png"
	else
		fail "--plot with switches: no queue.png"
	fi
else
	echo "skip: --plot (no gnuplot)"
fi

[ $failed -eq 0 ]
