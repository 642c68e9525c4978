#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-perf.sh: start a private ucclsvcd from a build tree (built-in defaults,
# runtime dir in a fresh temporary directory), run `uccl_perf --json` against
# it RUNS times, and print the median of every figure over the runs as a
# markdown table, with the spread and the exact commands used. The daemon is
# stopped on exit, whatever happens.
#
# Usage: bench/run-perf.sh [BUILDDIR] [RUNS]
#   BUILDDIR  build tree with daemon/ucclsvcd and bench/uccl_perf (default .)
#   RUNS      how many uccl_perf runs (default 5)
#   PERF_ARGS extra uccl_perf arguments, e.g. PERF_ARGS="--seconds 1"
set -euo pipefail

builddir=${1:-.}
runs=${2:-5}
perf_args=${PERF_ARGS:-}

die() { echo "run-perf.sh: $*" >&2; exit 1; }

case $runs in
''|*[!0-9]*|0) die "RUNS must be a positive integer, not '$runs'" ;;
esac
daemon=$builddir/daemon/ucclsvcd
perf=$builddir/bench/uccl_perf
[ -x "$daemon" ] || die "$daemon not found or not executable (build first, or give BUILDDIR)"
[ -x "$perf" ] || die "$perf not found or not executable"
command -v python3 >/dev/null || die "python3 is needed to take the medians"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uccl-perf.XXXXXX")
dpid=''
cleanup() {
	if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
		kill "$dpid" 2>/dev/null || true
		wait "$dpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sock=$tmp/ucclsvcd.sock
# /dev/null as the configuration: built-in defaults even where /etc/uccl.conf exists
daemon_cmd=("$daemon" --config /dev/null --runtime-dir "$tmp")
"${daemon_cmd[@]}" >"$tmp/daemon.log" 2>&1 &
dpid=$!

# the socket appears once the daemon listens; 10 s is generous
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	if ! kill -0 "$dpid" 2>/dev/null; then
		cat "$tmp/daemon.log" >&2
		die "ucclsvcd exited before creating $sock"
	fi
	sleep 0.1
done
[ -S "$sock" ] || { cat "$tmp/daemon.log" >&2; die "no $sock after 10 s"; }
export UCCL_SOCKET=$sock

# shellcheck disable=SC2206 # PERF_ARGS is split on purpose
perf_cmd=("$perf" --json $perf_args)
for i in $(seq "$runs"); do
	echo "run-perf.sh: run $i/$runs" >&2
	if ! "${perf_cmd[@]}" >"$tmp/run$i.json" 2>"$tmp/run$i.err"; then
		cat "$tmp/run$i.err" >&2
		echo "--- daemon log:" >&2
		tail -n 20 "$tmp/daemon.log" >&2
		die "uccl_perf failed on run $i"
	fi
	kill -0 "$dpid" 2>/dev/null || die "ucclsvcd died during run $i"
done

python3 - "$runs" "$tmp" <<'EOF'
import json, statistics, sys

runs, tmp = int(sys.argv[1]), sys.argv[2]
order, values, units = [], {}, {}
for i in range(1, runs + 1):
    with open(f"{tmp}/run{i}.json") as f:
        doc = json.load(f)
    for r in doc["results"]:
        key = (r["case"], r["param"], r["metric"])
        if key not in values:
            order.append(key)
            values[key] = []
            units[key] = r["unit"]
        if r["value"] is not None:
            values[key].append(r["value"])

print(f"| case | size/batch | metric | median | unit | min | max | runs |")
print(f"|---|---|---|---:|---|---:|---:|---:|")
for key in order:
    v = values[key]
    if not v:
        continue
    print(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(v):.3f} | {units[key]} "
          f"| {min(v):.3f} | {max(v):.3f} | {len(v)} |")
EOF

q() { printf '%q ' "$@"; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo
echo "Machine: $(uname -srm), $(nproc) CPUs${cpu:+, $cpu}"
echo
echo "Commands:"
echo
echo "    $(q "${daemon_cmd[@]}")&"
echo "    UCCL_SOCKET=$(q "$sock")$(q "${perf_cmd[@]}")  # $runs times"
