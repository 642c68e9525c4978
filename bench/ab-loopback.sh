#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ab-loopback.sh: put goodput between two daemons on 127.0.0.1, for two or
# more daemon binaries alternating round by round (an A/B of a change
# without root or namespaces). Each run starts a fresh pair of daemons from
# the binary under test, peered on kernel-picked ports, with the lines of
# CONF added to both configurations, and runs uccl_rperf SIZE puts for
# SECONDS; prints every run and each binary's median. Every run is bounded
# with timeout(1); the daemons go at its end. A run that measures nothing
# (the daemons do not peer, or uccl_rperf fails) stops the script with
# exit 1 and keeps its logs, named in the message.
#
# Usage: bench/ab-loopback.sh BUILDDIR ROUNDS DAEMON...
#   BUILDDIR  where bench/uccl_rperf is (the client is the same for all)
#   DAEMON    a ucclsvcd binary; BINARY:LINE adds a uccl.conf line for both
#             daemons of that entry (an A/B of an option with one binary)
#   CONF      uccl.conf lines for both daemons (default "mtu = 1500")
#   SECONDS_PER_RUN, SIZE  as in uccl_rperf --seconds, --sizes (3, 16M)
#   RPERF_ARGS  more uccl_rperf options for both sides (e.g. --vmem)
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 BUILDDIR ROUNDS DAEMON..." >&2; exit 2; }
builddir=$1 rounds=$2
shift 2
conf=${CONF:-mtu = 1500}
secs=${SECONDS_PER_RUN:-3}
size=${SIZE:-16M}
read -r -a rargs <<<"${RPERF_ARGS:-}"
rperf=$(cd "$builddir" && pwd)/bench/uccl_rperf
keep=0                   # 1: a failed run's logs stay for the message that names them
die() { echo "ab-loopback.sh: $*" >&2; exit 1; }
case $rounds in ''|*[!0-9]*|0) die "ROUNDS must be a positive integer, not '$rounds'" ;; esac
[ -x "$rperf" ] || die "$rperf not found (build first)"
for b in "$@"; do [ -x "${b%%:*}" ] || die "${b%%:*} is not an executable daemon"; done

. "$(dirname "$0")/loopd.sh"          # loopd_confs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uccl-ab.XXXXXX")
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; [ "$keep" = 1 ] || rm -rf "$tmp"' EXIT

declare -A got
for r in $(seq "$rounds"); do
	for b in "$@"; do
		d=$tmp/$r-${#pids[@]}-$RANDOM
		mkdir -p "$d"
		extra=''
		case $b in *:*) extra=${b#*:} ;; esac
		loopd_confs "$d" "$conf${extra:+
$extra}"
		for n in a b; do
			timeout $((secs + 60)) "${b%%:*}" --config "$d/$n.conf" --runtime-dir "$d/$n" 2>"$d/$n.log" &
			pids+=($!)
		done
		for _ in $(seq 200); do
			grep -q "data channel .* up" "$d/a.log" && grep -q "data channel .* up" "$d/b.log" && break
			sleep 0.05
		done
		if ! grep -q "data channel .* up" "$d/a.log"; then
			keep=1
			die "$b: the daemons did not peer (logs in $d)"
		fi
		timeout $((secs + 30)) "$rperf" --socket "$d/b/ucclsvcd.sock" --timeout $((secs + 20)) ${rargs[@]+"${rargs[@]}"} server x \
			>/dev/null 2>&1 &
		sp=$!
		sleep 0.2
		out=$(timeout $((secs + 30)) "$rperf" --socket "$d/a/ucclsvcd.sock" --sizes "$size" \
			--seconds "$secs" ${rargs[@]+"${rargs[@]}"} --lat-samples 0 client node-b/x 2>&1) || true
		wait "$sp" 2>/dev/null || true
		g=$(echo "$out" | grep -o "[0-9.]* Gbit/s" | head -n 1 | cut -d' ' -f1)
		if [ -z "$g" ]; then
			echo "$out" >"$d/rperf.out"
			keep=1
			die "round $r $b: uccl_rperf measured nothing (its output and the logs in $d)"
		fi
		echo "round $r $b: $g Gbit/s"
		got[$b]="${got[$b]:-} $g"
		stop
	done
done
for b in "$@"; do
	echo "median $b: $(echo ${got[$b]} | tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}') Gbit/s (${got[$b]# })"
done
