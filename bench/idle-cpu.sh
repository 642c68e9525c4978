#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idle-cpu.sh: how much CPU an idle ucclsvcd burns. Starts a private daemon
# from a build tree, lets it settle, attaches a client that creates two
# connected endpoints and then sleeps (`uccl_perf --case idle`), so that the
# engine has rings to watch but no work; then samples the daemon's
# utime+stime from /proc/PID/stat over SECONDS. The design says an idle
# daemon must not burn a core: more than 1% of one core fails.
#
# With PEERED=1 the daemon peers with a second one on 127.0.0.1 first, so
# that its engine also watches its UDP data plane and the channel's timers
# and the peer connection sends keepalives; the second daemon is sampled
# too.
#
# Usage: [PEERED=1] bench/idle-cpu.sh [BUILDDIR] [SECONDS]
#   BUILDDIR  build tree with daemon/ucclsvcd and bench/uccl_perf (default .)
#   SECONDS   measuring window (default 10)
# Exit: 0 at or under 1%, 1 over 1%, 2 if it could not measure.
set -euo pipefail

builddir=${1:-.}
secs=${2:-10}            # not $SECONDS: bash gives that name a meaning
limit_pct=1

die() { echo "idle-cpu.sh: $*" >&2; exit 2; }

case $secs in
''|*[!0-9]*|0) die "SECONDS must be a positive integer, not '$secs'" ;;
esac
daemon=$builddir/daemon/ucclsvcd
perf=$builddir/bench/uccl_perf
[ -x "$daemon" ] || die "$daemon not found or not executable (build first, or give BUILDDIR)"
[ -x "$perf" ] || die "$perf not found or not executable"
hz=$(getconf CLK_TCK)

peered=${PEERED:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uccl-idle.XXXXXX")
dpid='' cpid='' bpid=''
cleanup() {
	for p in $cpid $dpid $bpid; do
		if kill -0 "$p" 2>/dev/null; then
			kill "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# utime + stime of a whole process (all threads), in clock ticks. The
# command name in field 2 may hold spaces, so split after its ')'.
cpu_ticks() {
	local stat rest
	stat=$(cat "/proc/$1/stat") || return 1
	rest=${stat##*) }
	# shellcheck disable=SC2086 # split into fields on purpose
	set -- $rest
	echo $(( ${12} + ${13} ))
}

sock=$tmp/ucclsvcd.sock
# /dev/null as the configuration: built-in defaults even where /etc/uccl.conf
# exists; peered, the defaults plus the lines peering needs
conf_a=/dev/null
if [ "$peered" = 1 ]; then
	. "$(dirname "$0")/loopd.sh"      # loopd_confs
	loopd_confs "$tmp" ""
	conf_a=$tmp/a.conf
	mkdir -p "$tmp/b"
	"$daemon" --config "$tmp/b.conf" --runtime-dir "$tmp/b" >"$tmp/b.log" 2>&1 &
	bpid=$!
fi
"$daemon" --config "$conf_a" --runtime-dir "$tmp" >"$tmp/daemon.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	kill -0 "$dpid" 2>/dev/null || { cat "$tmp/daemon.log" >&2; die "ucclsvcd exited early"; }
	sleep 0.1
done
[ -S "$sock" ] || die "no $sock after 10 s"
if [ "$peered" = 1 ]; then
	for _ in $(seq 100); do
		grep -q "data channel .* up" "$tmp/daemon.log" && break
		sleep 0.1
	done
	grep -q "data channel .* up" "$tmp/daemon.log" || die "the two daemons did not peer in 10 s"
fi
sleep 1

# the client outlives the window by a margin; it says "idle:" once its
# endpoints exist
UCCL_SOCKET=$sock "$perf" --case idle --seconds $((secs + 10)) 2>"$tmp/client.err" &
cpid=$!
for _ in $(seq 100); do
	grep -q '^idle:' "$tmp/client.err" && break
	kill -0 "$cpid" 2>/dev/null || { cat "$tmp/client.err" >&2; die "the idle client exited"; }
	sleep 0.1
done
grep -q '^idle:' "$tmp/client.err" || die "the idle client did not get ready in 10 s"
sleep 1                  # let the engine finish the attach work and back off

t0=$(date +%s%N)
c0=$(cpu_ticks "$dpid") || die "cannot read /proc/$dpid/stat"
b0=0 b1=0
[ -z "$bpid" ] || b0=$(cpu_ticks "$bpid") || die "cannot read /proc/$bpid/stat"
sleep "$secs"
c1=$(cpu_ticks "$dpid") || die "ucclsvcd exited during the window"
[ -z "$bpid" ] || b1=$(cpu_ticks "$bpid") || die "the second ucclsvcd exited during the window"
t1=$(date +%s%N)
kill -0 "$cpid" 2>/dev/null || die "the idle client exited during the window"

over=0
report() { # report LABEL TICKS PID
	local pct
	pct=$(awk -v t="$2" -v hz="$hz" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.2f", t / hz / (ns / 1e9) * 100 }')
	echo "idle CPU$1: ${pct}% of one core over ${secs} s ($2 ticks of 1/${hz} s; daemon pid $3)"
	if awk -v p="$pct" -v l="$limit_pct" 'BEGIN { exit !(p > l) }'; then
		echo "idle-cpu.sh: over ${limit_pct}%: the engine does not back off when idle" >&2
		over=1
	fi
}
if [ -n "$bpid" ]; then
	report " (peered, with the client)" $((c1 - c0)) "$dpid"
	report " (its peer)" $((b1 - b0)) "$bpid"
else
	report "" $((c1 - c0)) "$dpid"
fi
exit $over
