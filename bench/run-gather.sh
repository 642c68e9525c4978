#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-gather.sh: put goodput between two daemons with udp_tx_gather (or
# another OPTION) on and off, alternating round by round, against iperf3 TCP cubic on the same kind
# of veth pair. Two network namespaces joined by a veth pair (MTU 9000) stand
# for two hosts; daemon A's engine thread is pinned to CPU 0 and B's to CPU 1
# (engine_cpu), because unpinned runs on a 2-core machine swing 4-21 Gbit/s
# with where the scheduler puts the two spinning engines. Each round:
# uccl_rperf 16 MiB puts for SECONDS with the option on, then off, then one
# iperf3 -C cubic run of SECONDS. Prints every round and the medians. Every
# run is bounded with timeout(1); namespaces and daemons go on exit.
#
# Usage: bench/run-gather.sh [BUILDDIR] [ROUNDS]     (as root)
#   SECONDS_PER_RUN  measuring time of each run (default 3)
#   OPTION           the boolean uccl.conf option switched on and off
#                    (default udp_tx_gather; udp_pack works the same way)
#   SIZE             put size (default 16M; uccl_rperf --sizes syntax)
set -euo pipefail

builddir=${1:-.}
rounds=${2:-6}
secs=${SECONDS_PER_RUN:-3}
opt=${OPTION:-udp_tx_gather}
size=${SIZE:-16M}

die() { echo "run-gather.sh: $*" >&2; exit 1; }
# shellcheck source=bench/netpair.sh
. "$(dirname "$0")/netpair.sh"
case $rounds in ''|*[!0-9]*|0) die "ROUNDS must be a positive integer, not '$rounds'" ;; esac
case $secs in ''|*[!0-9]*|0) die "SECONDS_PER_RUN must be a positive integer, not '$secs'" ;; esac
case $opt in ''|*[!a-z0-9_]*) die "OPTION must be an option name, not '$opt'" ;; esac
case $size in ''|*[!0-9KMG]*) die "SIZE must be a size such as 4K or 16M, not '$size'" ;; esac
[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, veth)"
daemon=$(cd "$builddir" && pwd)/daemon/ucclsvcd
rperf=$(cd "$builddir" && pwd)/bench/uccl_rperf
[ -x "$daemon" ] || die "$daemon not found (build first, or give BUILDDIR)"
[ -x "$rperf" ] || die "$rperf not found"
for t in iperf3 python3 ip timeout; do
	command -v "$t" >/dev/null || die "$t is needed (apt-get install iperf3 python3 iproute2)"
done

netpair_start ugt 10.80.0.1 10.80.0.2 || die "cannot set up the namespaces"

# rperf_run on|off: one uccl_rperf run between fresh daemons; prints Gbit/s
rperf_run() {
	local pa pb g
	netpair_daemons "$daemon" 120 "$opt = $1" || true
	timeout $((secs + 60)) ip netns exec "$NS2" "$rperf" --socket "$tmp/rb/ucclsvcd.sock" \
		--timeout $((secs + 50)) server rperf >"$tmp/srv.out" 2>&1 &
	sleep 0.5
	if timeout $((secs + 50)) ip netns exec "$NS1" "$rperf" --socket "$tmp/ra/ucclsvcd.sock" \
		--json --sizes "$size" --seconds "$secs" --lat-samples 0 client node-b/rperf \
		>"$tmp/cli.out" 2>"$tmp/cli.err"; then
		g=$(python3 -c "import json,sys; print('%.2f' % json.load(open(sys.argv[1]))['goodput'][0]['gbit_per_s'])" "$tmp/cli.out")
	else
		g=failed
	fi
	netpair_stop
	wait 2>/dev/null || true
	echo "$g"
}

iperf_run() {
	local g
	timeout $((secs + 20)) ip netns exec "$NS2" iperf3 -s -1 >/dev/null 2>&1 &
	sleep 0.5
	if g=$(timeout $((secs + 15)) ip netns exec "$NS1" iperf3 -c 10.80.0.2 -C cubic -t "$secs" -J |
		python3 -c "import json,sys; print('%.2f' % (json.load(sys.stdin)['end']['sum_received']['bits_per_second'] / 1e9))"); then
		echo "$g"
	else
		echo failed
	fi
	wait 2>/dev/null || true
}

on='' off='' ip3=''
for i in $(seq "$rounds"); do
	a=$(rperf_run true)
	b=$(rperf_run false)
	c=$(iperf_run)
	echo "round $i: $opt on $a  off $b  iperf3 cubic $c Gbit/s"
	on="$on $a" off="$off $b" ip3="$ip3 $c"
done
python3 - "$on" "$off" "$ip3" "$opt" <<'EOF'
import statistics, sys
def vals(s):
    return [float(x) for x in s.split() if x != 'failed']
on, off, ip3 = (vals(a) for a in sys.argv[1:4])
opt = sys.argv[4]
m = {k: statistics.median(v) if v else float('nan') for k, v in (('on', on), ('off', off), ('ip3', ip3))}
print(f"medians over {len(on)}/{len(off)}/{len(ip3)} runs: {opt} on {m['on']:.2f}, off {m['off']:.2f}, "
      f"iperf3 cubic {m['ip3']:.2f} Gbit/s")
print(f"{opt} on / off {m['on'] / m['off']:.2f}x; on / iperf3 {m['on'] / m['ip3']:.2f}x; "
      f"off / iperf3 {m['off'] / m['ip3']:.2f}x")
EOF
