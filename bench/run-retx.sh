#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-retx.sh: retransmissions that were not needed, and goodput, of two
# daemon builds side by side. Two network namespaces joined by a veth pair
# (MTU 9000) stand for two hosts; daemon A's engine thread is pinned to
# CPU 0 and B's to CPU 1. Each round runs uccl_rperf 16 MiB puts for SECONDS
# with the first daemon build, then the second (fresh daemons each run),
# and prints per run: goodput, packets the sender resent, how many of them
# the receiver already had (dup_pkts_rx), retransmission timeouts, and
# those found spurious (rto_spurious; 0 for a build without it). LOSS=N
# drops N per mille of UDP packets into B (nftables numgen random, with
# segmentation offloads off so single packets drop). Every run is bounded
# with timeout(1); namespaces and daemons go on exit.
#
# Usage: bench/run-retx.sh DAEMON1 DAEMON2 [ROUNDS]     (as root)
#   BUILDDIR         where bench/uccl_rperf and client/ucclctl are (default .)
#   SECONDS_PER_RUN  measuring time of each run (default 5)
#   LOSS             per mille dropped into B (default 0)
#   EXTRA            one more uccl.conf line for both daemons (both builds)
set -euo pipefail

d1=${1:-}
d2=${2:-}
rounds=${3:-4}
builddir=${BUILDDIR:-.}
secs=${SECONDS_PER_RUN:-5}
loss=${LOSS:-0}

die() { echo "run-retx.sh: $*" >&2; exit 1; }
# shellcheck source=bench/netpair.sh
. "$(dirname "$0")/netpair.sh"
if [ -z "$d1" ] || [ -z "$d2" ]; then die "usage: run-retx.sh DAEMON1 DAEMON2 [ROUNDS]"; fi
for d in "$d1" "$d2"; do [ -x "$d" ] || die "$d is not an executable"; done
case $rounds in ''|*[!0-9]*|0) die "ROUNDS must be a positive integer, not '$rounds'" ;; esac
case $secs in ''|*[!0-9]*|0) die "SECONDS_PER_RUN must be a positive integer, not '$secs'" ;; esac
case $loss in ''|*[!0-9]*) die "LOSS must be a whole number of per mille, not '$loss'" ;; esac
[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, veth, nftables)"
rperf=$(cd "$builddir" && pwd)/bench/uccl_rperf
ctl=$(cd "$builddir" && pwd)/client/ucclctl
[ -x "$rperf" ] || die "$rperf not found (build first, or set BUILDDIR)"
[ -x "$ctl" ] || die "$ctl not found"
for t in python3 ip timeout; do
	command -v "$t" >/dev/null || die "$t is needed (apt-get install python3 iproute2)"
done
if [ "$loss" -gt 0 ]; then
	for t in nft ethtool; do
		command -v "$t" >/dev/null || die "$t is needed for LOSS (apt-get install nftables ethtool)"
	done
fi

netpair_start urx 10.82.0.1 10.82.0.2 || die "cannot set up the namespaces"
if [ "$loss" -gt 0 ]; then
	ip netns exec "$NS1" ethtool -K veth1 tso off gso off tx-udp-segmentation off >/dev/null
	ip netns exec "$NS2" ethtool -K veth2 tso off gso off tx-udp-segmentation off >/dev/null
	ip netns exec "$NS2" nft add table inet urx
	ip netns exec "$NS2" nft add chain inet urx in '{ type filter hook input priority 0; }'
	ip netns exec "$NS2" nft add rule inet urx in meta l4proto udp numgen random mod 1000 '<' "$loss" drop
fi

# one_run DAEMON: fresh daemons, one uccl_rperf run; prints one line
one_run() {
	local pa pb
	netpair_daemons "$1" $((secs + 90)) "${EXTRA:-}" || true
	timeout $((secs + 60)) ip netns exec "$NS2" "$rperf" --socket "$tmp/rb/ucclsvcd.sock" \
		--timeout $((secs + 50)) server rperf >"$tmp/srv.out" 2>&1 &
	sleep 0.5
	timeout $((secs + 50)) ip netns exec "$NS1" "$rperf" --socket "$tmp/ra/ucclsvcd.sock" \
		--json --sizes 16M --seconds "$secs" --lat-samples 0 client node-b/rperf \
		>"$tmp/cli.out" 2>"$tmp/cli.err" || true
	ip netns exec "$NS1" "$ctl" --socket "$tmp/ra/ucclsvcd.sock" --json channels >"$tmp/cha.json" 2>&1 || true
	ip netns exec "$NS2" "$ctl" --socket "$tmp/rb/ucclsvcd.sock" --json channels >"$tmp/chb.json" 2>&1 || true
	netpair_stop
	wait 2>/dev/null || true
	python3 - "$tmp/cli.out" "$tmp/cha.json" "$tmp/chb.json" <<'PY'
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
c, a, b = (load(p) for p in sys.argv[1:4])
g = "%.2f" % c["goodput"][0]["gbit_per_s"] if c else "failed"
a = [x for x in (a or {}).get("channels", []) if x.get("peer") == "node-b"]
b = [x for x in (b or {}).get("channels", []) if x.get("peer") == "node-a"]
retx = sum(x["retx_pkts"] for x in a)
dup = sum(x["dup_pkts_rx"] for x in b)
to = sum(x["retx_timeouts"] for x in a)
sp = sum(x.get("rto_spurious", 0) for x in a)
print("%s %d %d %d %d" % (g, retx, dup, to, sp))
PY
}

r1='' r2=''
echo "run: goodput Gbit/s, resent packets, of them the receiver had, timeouts, spurious"
for i in $(seq "$rounds"); do
	x=$(one_run "$d1")
	y=$(one_run "$d2")
	echo "round $i: 1: $x | 2: $y"
	r1="$r1;$x" r2="$r2;$y"
done
python3 - "$r1" "$r2" <<'EOF'
import statistics, sys
for n, s in enumerate(sys.argv[1:3], 1):
    rows = [r.split() for r in s.split(";") if r.strip()]
    def med(k):
        v = [float(r[k]) for r in rows if r[k] != "failed"]
        return statistics.median(v) if v else float("nan")
    print("build %d medians over %d runs: goodput %.2f Gbit/s, resent %.0f, already there %.0f, "
          "timeouts %.0f" % (n, len(rows), med(0), med(1), med(2), med(3)))
EOF
