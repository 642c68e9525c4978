#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Issue #4 experiments 1-4 on the simulated fabric (docs/sim.md): writes the
# scenario files to docs/results/scenarios/, runs each with uccl-sim for
# seeds 1..5 into $OUT (default /tmp/uccl-results), then summarises
# (summarize.py: medians over the seeds, CSVs in docs/results/data/) and
# draws PNGs with gnuplot when it is installed (plots.gp).
#
#   cd docs/results && SIM=/work/build/tools/uccl-sim ./run-sim.sh
#
# Results are virtual-time: they do not depend on the machine's load.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
SIM=${SIM:-$here/../../../build/tools/uccl-sim}
OUT=${OUT:-/tmp/uccl-results}
SEEDS=${SEEDS:-"1 2 3 4 5"}
scn=$here/scenarios
mkdir -p "$scn" "$OUT" "$here/data"
# a uccl-sim older than the sources it is built from gives another
# commit's numbers: refuse it (FORCE=1 runs it anyway)
[ -x "$SIM" ] || { echo "run-sim.sh: no uccl-sim at $SIM (set SIM=)" >&2; exit 1; }
newer=$(find "$here/../../engine" "$here/../../tools" -name '*.[ch]' -newer "$SIM" | head -n 1)
if [ -n "$newer" ] && [ "${FORCE:-0}" != 1 ]; then
	echo "run-sim.sh: $SIM is older than $newer: rebuild it (or FORCE=1)" >&2
	exit 1
fi

# A cc name may carry a variant: "hint+inband" is cc hint with the
# switches' in-band queue reports (inband = on), "window+adaptive" is cc
# window with adaptive_chunk = on (docs/sim.md).
ccline() { # cc[+variant]
	case $1 in
	*+inband) echo "cc = ${1%+inband}"; echo "inband = on" ;;
	*+adaptive) echo "cc = ${1%+adaptive}"; echo "adaptive_chunk = on" ;;
	*) echo "cc = $1" ;;
	esac
}

# ---- experiment 1: 15-to-1 incast + permutation on a 16-host star ----
# e1 CC RECOVERY [pfc]: with pfc, the InfiniBand-like baseline: a lossless
# fabric. 512 KiB per port becomes the ingress buffer; headroom above xoff
# must hold what is in flight when PAUSE leaves: 2 x 1 us x 100 Gbit/s
# (25 KB) + 2 x 4 KiB MTU = 33 KB; 64 KiB leaves room for the PAUSE frame
# waiting behind a packet on the reverse link. xon 8 MTU below xoff: some
# hysteresis, and far above the 25 KB the link needs to refill after RESUME.
e1() { # cc recovery [pfc]
	cat <<EOT
# Experiment 1 (issue #4): 15-to-1 incast co-located with permutation
# traffic on a 16-host star (one switch, 100G links, 512 KiB drop-tail port
# buffers, RED-like ECN). Every 2 ms, hosts 1..15 each send a 1 MiB message
# to host 0 (incast) and every host sends a 1 MiB message to another host
# (permutation, a new derangement each round); 10 rounds, 310 flows. Flows
# 31k..31k+14 are incast, 31k+15..31k+30 permutation. cc $1, recovery $2.${3:+
# Lossless (PFC): xoff 448 KiB, xon 416 KiB per ingress port (run-sim.sh).}
topology = star
hosts = 16
host_rate = 100G
delay = 1us
queue = 512KiB
ecn = red 32KiB 256KiB 20%
$(ccline $1)
recovery = $2
cc_delay_slack = 5us
rto_min = 100us
sample = 0ns
time_limit = 5s
EOT
	[ -n "${3:-}" ] && echo "pfc = on 448KiB 416KiB"
	for i in 0 1 2 3 4 5 6 7 8 9; do
		echo "incast = 15 1MiB to 0 at $((2 * i))ms"
		echo "permutation = 1MiB at $((2 * i))ms"
	done
}
for cc in window swift timely dcqcn hint eqds none hint+inband window+adaptive; do
	e1 $cc sack >"$scn/e1-incast-$cc-sack.scn"
done
e1 dcqcn gbn >"$scn/e1-incast-dcqcn-gbn.scn"
for cc in dcqcn none; do
	e1 $cc gbn pfc >"$scn/e1-incast-$cc-gbn-pfc.scn"
done
# The same traffic on a two-tier fabric (4 leaves x 4 hosts, 4 spines, 1:1),
# where a pause can spread from host 0's leaf to the spines and on to other
# leaves. Written here, run by hand (e1-incast.md, "On a leaf-spine"): the
# run loop below takes e[1-4]-* only.
e1ls() { # cc recovery [pfc]
	e1 "$@" | sed -e 's/^topology = star$/topology = leafspine\nleaves = 4\nspines = 4\nhosts_per_leaf = 4/' \
		-e '/^hosts = 16$/d' -e 's/on a 16-host star (one switch,/on a 4x4 leaf-spine (4 spines,/'
}
e1ls eqds sack >"$scn/e1ls-incast-eqds-sack.scn"
e1ls dcqcn gbn >"$scn/e1ls-incast-dcqcn-gbn.scn"
for cc in dcqcn none; do
	e1ls $cc gbn pfc >"$scn/e1ls-incast-$cc-gbn-pfc.scn"
done

# ---- experiment 2: loss sweep on a pair ----
e2() { # recovery cc loss(%|none)
	if [ "$3" = none ]; then loss="loss = none"; else loss="loss = random $3%"; fi
	cat <<EOT
# Experiment 2 (issue #4): one 64 MiB flow over one 100G cable with 10 us
# one-way delay, random loss $3 (%) on every packet in both directions.
# recovery $1, cc $2.
topology = pair
host_rate = 100G
delay = 10us
$loss
recovery = $1
$(ccline $2)
cc_delay_slack = 5us
rto_min = 100us
sample = 0ns
flow = 0 1 64MiB
EOT
}
for rec in sack gbn; do
	for cc in window none window+adaptive; do
		for l in none 0.01 0.02 0.05 0.1 0.2 0.5 1; do
			e2 $rec $cc $l >"$scn/e2-loss-$rec-$cc-$(echo $l | tr . p).scn"
		done
	done
done

# ---- experiment 3: ECMP collisions on a leaf-spine ----
e3() { # spines paths dupthresh cc [chunk [spray]]
	cat <<EOT
# Experiment 3 (issue #4): permutation traffic (8 MiB per host, always to
# another leaf) on 8 leaves x 8 hosts, $1 spines, 100G everywhere
# (oversubscription 8/$1). $2 path(s) per connection, dupthresh $3, cc $4.
topology = leafspine
leaves = 8
spines = $1
hosts_per_leaf = 8
host_rate = 100G
uplink_rate = 100G
delay = 1us
queue = 512KiB
ecn = red 32KiB 256KiB 20%
cc = $4
cc_delay_slack = 5us
rto_min = 100us
dupthresh = $3
paths = $2
chunk = ${5:-32KiB}
spray = ${6:-chunk}
sample = 0ns
time_limit = 5s
permutation = 8MiB
EOT
}
for sp in 8 4; do
	for p in 1 256; do
		for d in 3 64; do
			for cc in window none; do
				e3 $sp $p $d $cc >"$scn/e3-ecmp-s$sp-p$p-d$d-$cc.scn"
			done
		done
		# a path decision per packet: 4 KiB chunks are one packet at MTU 4096
		e3 $sp $p 64 window 4KiB >"$scn/e3-ecmp-s$sp-p$p-d64-window-c4k.scn"
	done
	# a path decision per packet with 32 KiB chunks (spray = packet): the
	# window still moves a chunk at a time; one path needs no such rows
	for d in 3 64; do
		e3 $sp 256 $d window 32KiB packet >"$scn/e3-ecmp-s$sp-p256-d$d-window-pp.scn"
	done
done
# a path per run of chunks (spray = run: the daemon's path_run_bytes, which
# batches more per GSO send): what coarser path decisions cost the fabric
for r in 64KiB 128KiB; do
	e3 8 256 3 window 32KiB "run $r" >"$scn/e3-ecmp-s8-p256-d3-window-r$r.scn"
done

# ---- experiment 4: flows starting one by one ----
e4() { # cc [base-rtt line]
	cat <<EOT
# Experiment 4 (issue #4): convergence and fairness. 8 senders on a 9-host
# star, 64 MiB each, to host 0, sender k starting at k * 2 ms; 500 us
# throughput samples; jain_steady is Jain's index over the later half of
# the samples in which all 8 are active. cc $1. The fabric's unloaded RTT
# (4.7 us: two 1 us links and a 4 KiB packet's serialisation each way, the
# ACK back) is given to the controllers as an operator would (Swift's
# configured base delay); the -learned scenarios leave it to each flow's
# lowest RTT seen.
topology = star
hosts = 9
host_rate = 100G
delay = 1us
queue = 512KiB
ecn = red 32KiB 256KiB 20%
$(ccline $1)
cc_delay_slack = 5us
$2
rto_min = 100us
sample = 500us
time_limit = 5s
stagger = 8 64MiB every 2ms to 0
EOT
}
for cc in window swift timely dcqcn hint eqds none hint+inband; do
	e4 $cc "cc_base_rtt = 5us" >"$scn/e4-fair-$cc.scn"
	e4 $cc "" >"$scn/e4-fair-$cc-learned.scn"
done

# ---- run ----
total=$(ls "$scn"/e[1-4]-*.scn | wc -l) done_n=0
for f in "$scn"/e[1-4]-*.scn; do
	name=$(basename "$f" .scn)
	done_n=$((done_n + 1))
	# progress on stderr: the whole run takes a couple of minutes
	printf 'run-sim.sh: [%d/%d] %s, seeds %s\n' "$done_n" "$total" "$name" "$SEEDS" >&2
	for s in $SEEDS; do
		d=$OUT/$name/s$s
		mkdir -p "$d"
		# exit status 1 = some flow failed or did not finish: recorded, not fatal
		"$SIM" "$f" --seed "$s" --out "$d" >"$d/summary.txt" 2>"$d/stderr.txt" || true
	done
done
python3 "$here/summarize.py" "$OUT" "$here/data"
if command -v gnuplot >/dev/null 2>&1; then
	(cd "$here" && gnuplot plots.gp)
fi
