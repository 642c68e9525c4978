#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-sig-lat.sh: only the 64 B put+signal latency of run-remote-perf.sh,
# for comparing two daemon binaries in one session. The same two network
# namespaces joined by a veth pair (MTU 9000) stand for two hosts; for each
# round and each daemon binary given, a fresh pair of daemons is started and
# uccl_rperf runs its ping-pong alone (1000 warm-up + SAMPLES round trips).
# The binaries alternate round by round so that both see the same machine
# load. Prints one line per run (with each daemon's send system calls,
# packets and datagrams per round trip, from `ucclctl channels`: NIC totals over the
# daemon's life, so keepalives count too; and each daemon's engine passes
# per round trip, with the wall time of a pass, from `ucclctl stats`' polls
# over the client's run: an engine that spins takes a posted descriptor or
# an arrived datagram about half a pass after it got there) and the median
# of the runs' p50 per binary. Every run is bounded with timeout(1); namespaces and daemons
# go on exit.
#
# Usage: bench/run-sig-lat.sh BUILDDIR RUNS DAEMON...     (as root)
#   BUILDDIR  build tree with bench/uccl_rperf and client/ucclctl (used with
#             every daemon: the client protocol is the same)
#   DAEMON    ucclsvcd binaries to compare, e.g. an old copy and BUILDDIR's;
#             BINARY:LINE adds a uccl.conf line for both daemons of that
#             entry (build/daemon/ucclsvcd:'ack_hold_us = 3')
#   SAMPLES   ping-pong samples (default 10000)
#   SPIN=1    the clients spin instead of sleeping in uccl_wait (--spin)
#   UCX=1     after each round also UCX tcp tag_lat (64 B, 10,000
#             iterations, its one-way 50th percentile) on the same pair,
#             and at the end each binary's median against UCX's
set -euo pipefail

die() { echo "run-sig-lat.sh: $*" >&2; exit 1; }
# shellcheck source=bench/netpair.sh
. "$(dirname "$0")/netpair.sh"
[ $# -ge 3 ] || die "usage: $0 BUILDDIR RUNS DAEMON..."
builddir=$1 runs=$2
shift 2
daemons=("$@")
samples=${SAMPLES:-10000}
[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, veth)"
rperf=$(cd "$builddir" && pwd)/bench/uccl_rperf
ctl=$(cd "$builddir" && pwd)/client/ucclctl
[ -x "$rperf" ] || die "$rperf not found"
[ -x "$ctl" ] || die "$ctl not found"
for d in "${daemons[@]}"; do [ -x "${d%%:*}" ] || die "${d%%:*} not found"; done

IP1=10.78.0.1 IP2=10.78.0.2
netpair_start usl "$IP1" "$IP2" || die "cannot set up the namespaces"

# one_run DAEMON TAG: a fresh daemon pair, one uccl_rperf client; prints p50
# p99 and, per daemon, send calls and packets per round trip
one_run() {
	local daemon=${1%%:*} extra='' tag=$2 pa pb ps
	case $1 in *:*) extra=${1#*:} ;; esac
	for h in a b; do
		ip=$IP1; [ $h = b ] && ip=$IP2
		printf 'peer_listen = %s:747%s\npeers = node-a=%s:7471, node-b=%s:7472\nhost_name = node-%s\ndata_port = 0\nmtu = 9000\n' \
			"$ip" "$([ $h = a ] && echo 1 || echo 2)" "$IP1" "$IP2" $h >"$tmp/$h.conf"
		[ -z "$extra" ] || echo "$extra" >>"$tmp/$h.conf"
		rm -rf "$tmp/r$h"
	done
	timeout 120 ip netns exec "$NS1" "$daemon" --config "$tmp/a.conf" --runtime-dir "$tmp/ra" \
		>"$tmp/a.log" 2>&1 & pa=$!
	timeout 120 ip netns exec "$NS2" "$daemon" --config "$tmp/b.conf" --runtime-dir "$tmp/rb" \
		>"$tmp/b.log" 2>&1 & pb=$!
	pids="$pa $pb"
	for _ in $(seq 100); do
		grep -q 'data channel .* up' "$tmp/a.log" 2>/dev/null &&
			grep -q 'data channel .* up' "$tmp/b.log" 2>/dev/null && break
		sleep 0.1
	done
	grep -q 'data channel .* up' "$tmp/a.log" || { cat "$tmp/a.log" >&2; die "no channel"; }
	timeout 60 ip netns exec "$NS2" "$rperf" --socket "$tmp/rb/ucclsvcd.sock" --timeout 50 \
		server rperf >"$tmp/srv.log" 2>&1 & ps=$!
	for _ in $(seq 100); do grep -q listening "$tmp/srv.log" && break; sleep 0.05; done
	"$ctl" --socket "$tmp/ra/ucclsvcd.sock" --json stats >"$tmp/$tag.a0.json"
	"$ctl" --socket "$tmp/rb/ucclsvcd.sock" --json stats >"$tmp/$tag.b0.json"
	t0=$(date +%s%N)
	timeout 60 ip netns exec "$NS1" "$rperf" --socket "$tmp/ra/ucclsvcd.sock" --json \
		--sizes none --lat-samples "$samples" ${SPIN:+--spin} client node-b/rperf >"$tmp/$tag.json" \
		2>"$tmp/cli.err" || { tail -n 5 "$tmp/cli.err" >&2; die "$tag: uccl_rperf failed"; }
	echo $(($(date +%s%N) - t0)) >"$tmp/$tag.ns"
	"$ctl" --socket "$tmp/ra/ucclsvcd.sock" --json stats >"$tmp/$tag.a1.json"
	"$ctl" --socket "$tmp/rb/ucclsvcd.sock" --json stats >"$tmp/$tag.b1.json"
	wait "$ps" 2>/dev/null || true
	"$ctl" --socket "$tmp/ra/ucclsvcd.sock" --json channels >"$tmp/$tag.a.json"
	"$ctl" --socket "$tmp/rb/ucclsvcd.sock" --json channels >"$tmp/$tag.b.json"
	kill -TERM "$pa" "$pb" 2>/dev/null || true
	wait "$pa" "$pb" 2>/dev/null || true
	pids=''
	python3 - "$tmp/$tag" <<'EOF'
import json, sys
t = sys.argv[1]
l = json.load(open(t + ".json"))["latency"]
rt = l["warmup"] + l["samples"]
nic = [json.load(open(t + f))["nic"] for f in (".a.json", ".b.json")]
ns = int(open(t + ".ns").read())
def polls(f):
    return {c["name"]: c["value"] for c in json.load(open(t + f))["stats"]
            if c["name"] in ("polls", "busy_polls")}
eng = []
for h in "ab":
    p0, p1 = polls("." + h + "0.json"), polls("." + h + "1.json")
    n = p1["polls"] - p0["polls"]
    eng.append("%.1f %.1f %.0f" % (n / rt, (p1["busy_polls"] - p0["busy_polls"]) / rt,
                                   ns / n if n else 0))
print(l["one_way_p50_us"], l["one_way_p99_us"],
      *("%.2f %.2f %.2f" % (n["tx_calls"] / rt, n["tx_pkts"] / rt,
                            n.get("tx_dgrams", n["tx_pkts"]) / rt) for n in nic), *eng)
EOF
}

# ucx_run: one UCX tcp tag_lat between the namespaces; prints the typical
# one-way latency in us, or "failed"
ucx_run() {
	local s v
	ip netns exec "$NS2" timeout 30 env UCX_TLS=tcp UCX_NET_DEVICES=veth2 ucx_perftest -p 13338 \
		-t tag_lat -s 64 -n 10000 >/dev/null 2>&1 & s=$!
	sleep 1
	v=$(ip netns exec "$NS1" timeout 30 env UCX_TLS=tcp UCX_NET_DEVICES=veth1 ucx_perftest \
		"$IP2" -p 13338 -t tag_lat -s 64 -n 10000 2>/dev/null |
		awk '/Final:/ { print $3; exit }') || true
	wait "$s" 2>/dev/null || true
	echo "${v:-failed}"
}

declare -A p50s
ucxs=''
for i in $(seq "$runs"); do
	k=0
	for d in "${daemons[@]}"; do
		k=$((k + 1))
		read -r p50 p99 ca pa da cb pb db na wa ta nb wb tb < <(one_run "$d" "r$i-d$k")
		echo "round $i daemon $k ($d): one-way p50 $p50 us, p99 $p99 us;" \
			"per round trip: a $ca sends ($pa packets in $da datagrams)," \
			"b $cb sends ($pb packets in $db datagrams);" \
			"engine passes: a $na ($wa with work, $ta ns a pass), b $nb ($wb, $tb ns)"
		p50s[$k]="${p50s[$k]:-} $p50"
	done
	if [ "${UCX:-0}" = 1 ]; then
		u=$(ucx_run)
		echo "round $i UCX tcp tag_lat: one-way p50 $u us"
		[ "$u" = failed ] || ucxs="$ucxs $u"
	fi
done
median() { printf '%s\n' "$@" | sort -g |
	awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086 # a list of numbers
[ -z "$ucxs" ] || echo "UCX tcp tag_lat: median of $(echo $ucxs | wc -w) runs: $(median $ucxs) us"
k=0
for d in "${daemons[@]}"; do
	k=$((k + 1))
	# shellcheck disable=SC2086 # a list of numbers
	m=$(median ${p50s[$k]})
	r=''
	[ -z "$ucxs" ] || r=$(python3 -c "import sys; print(', %.2fx UCX tcp' % (float(sys.argv[1]) / float(sys.argv[2])))" "$m" "$(median $ucxs)")
	echo "daemon $k ($d): median of $runs runs' p50: $m us$r"
done
