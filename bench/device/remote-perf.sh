#!/bin/bash
# SPDX-License-Identifier: MIT
#
# remote-perf.sh: run on a machine with the bundle from make-bundle.sh (as root: it
# makes two network namespaces joined by a veth pair, bench/netpair.sh).
# Runs bench/run-remote-perf.sh with the bundled tools (BUNDLE/bin first in PATH):
# machine facts to OUT/facts.txt, the tables to OUT/perf.md, raw output to
# OUT/raw. RUNS (3), IPERF_SECONDS (5), LIMIT (520 s, under the 600 s a
# device command may run).
# Results under OUT (default /tmp/out).
#
#   bench/device/make-bundle.sh build && bench/device/remote-perf.sh   # BUNDLE=devbundle
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
{
	date -u; uname -a; nproc; id; cat /etc/os-release 2>/dev/null | head -3
	lscpu 2>/dev/null | grep -E "Model name|Socket|Thread|NUMA node\(s\)|MHz" | head
	free -g | head -2
	command -v python3 && python3 --version
	ip netns add probe$$ && echo netns-ok && ip netns del probe$$
	sysctl net.ipv4.tcp_congestion_control net.ipv4.tcp_available_congestion_control 2>&1
	lsmod 2>/dev/null | grep -E "veth|nf_tables|tcp_" | head
} >"$OUT/facts.txt" 2>&1
cat "$OUT/facts.txt"
mkdir -p "$OUT/raw"
cd "$R" && NO_INSTALL=1 KEEP="$OUT/raw" IPERF_SECONDS=${IPERF_SECONDS:-5} \
	timeout ${LIMIT:-520} bash bench/run-remote-perf.sh "$B/build" "${RUNS:-3}" >"$OUT/perf.md" 2>"$OUT/perf.err"
echo "rc=$?" >>"$OUT/perf.err"
tail -5 "$OUT/perf.err"
cat "$OUT/perf.md"
