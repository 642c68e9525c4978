# SPDX-License-Identifier: MIT
#
# loopd.sh: sourced by the loopback benchmark scripts (run-threads.sh,
# run-streams.sh, run-lanes.sh, run-client-syscalls.sh, ab-loopback.sh,
# idle-cpu.sh, soak.sh; sh). loopd_start BUILDDIR NAME CONF_LINES: two daemons
# node-a and node-b on 127.0.0.1 (ports the kernel picks), peered, each
# with CONF_LINES (printf %b: \n separates lines) added; sets T (a
# temporary directory, removed on exit with the daemons stopped), SA and SB
# (their sockets); returns when both sockets are there and the peers had a
# second to meet. Everything stays on 127.0.0.1.
#
# loopd_confs DIR CONF_LINES: only the configurations, DIR/a.conf and
# DIR/b.conf (for scripts that start the daemons themselves).

loopd_confs() {
	local n p pa pb
	set -- "$1" "$2" $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
	pa=$3 pb=$4
	for n in a b; do
		if [ $n = a ]; then p=$pa; else p=$pb; fi
		printf 'peer_listen = 127.0.0.1:%s\npeers = node-a=127.0.0.1:%s, node-b=127.0.0.1:%s\nhost_name = node-%s\n%b\n' \
			"$p" "$pa" "$pb" "$n" "$2" >"$1/$n.conf"
	done
}

loopd_start() {
	local n
	T=$(mktemp -d "${TMPDIR:-/tmp}/uccl-$2.XXXXXX") ||
		{ echo "$2: cannot make a temporary directory" >&2; return 1; }
	LOOPD_PIDS=
	trap 'kill $LOOPD_PIDS 2>/dev/null || true; rm -rf "$T"' EXIT
	loopd_confs "$T" "$3"
	for n in a b; do
		"$1/daemon/ucclsvcd" --config "$T/$n.conf" --runtime-dir "$T/r$n" >/dev/null 2>"$T/$n.log" &
		LOOPD_PIDS="$LOOPD_PIDS $!"
	done
	SA=$T/ra/ucclsvcd.sock SB=$T/rb/ucclsvcd.sock
	for _ in $(seq 100); do
		[ -S "$SA" ] && [ -S "$SB" ] && break
		sleep 0.05
	done
	sleep 1        # peers meet
}

# loopd_stop: both daemons, waited for
loopd_stop() {
	local p
	kill $LOOPD_PIDS 2>/dev/null || true
	for p in $LOOPD_PIDS; do wait "$p" 2>/dev/null || true; done
	LOOPD_PIDS=
}

# loopd_wait_ep BUILDDIR SOCK NAME [COUNT [CONNS]]: until SOCK's daemon has
# COUNT (default 1) receivers listening under NAME, or NAME.0, NAME.1 ...
# as uccl_xfer --streams names them, each with at least CONNS (default 0)
# connections; at most 5 s, 1 if they never came
loopd_wait_ep() {
	local _
	for _ in $(seq 100); do
		timeout 10 "$1/client/ucclctl" --socket "$2" --json endpoints 2>/dev/null |
			python3 -c 'import json, re, sys
n = sum(bool(re.fullmatch(re.escape(sys.argv[1]) + r"(\.\d+)?", e["name"])) and
        e["conns"] >= int(sys.argv[3]) for e in json.load(sys.stdin)["endpoints"])
sys.exit(0 if n >= int(sys.argv[2]) else 1)' "$3" "${4:-1}" "${5:-0}" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# loopd_xfer_between FROM_SOCK TO_SOCK TO_HOST BUILDDIR BYTES ARGS...: one
# verified uccl_xfer transfer of BYTES from FROM_SOCK's daemon to host
# TO_HOST (whose daemon is TO_SOCK's), uccl_xfer ARGS on both sides;
# prints its GB/s (the sender's summary), or FAILED, also when the
# receiver failed or never listened (the sender starts once it does).
# Their standard errors go to $T/send.err and $T/recv.err.
loopd_xfer_between() {
	local from=$1 to=$2 host=$3 b=$4 bytes=$5 r out streams=1 a prev=
	shift 5
	for a in "$@"; do [ "$prev" = --streams ] && streams=$a; prev=$a; done
	timeout 120 "$b/client/uccl_xfer" --socket "$to" --quiet "$@" recv s >/dev/null \
		2>"$T/recv.err" &
	r=$!
	if ! loopd_wait_ep "$b" "$to" s "$streams"; then
		kill "$r" 2>/dev/null
		wait "$r" 2>/dev/null
		echo "loopd_xfer: receiver s never showed up" >"$T/send.err"
		echo FAILED
		return
	fi
	out=$(timeout 120 "$b/client/uccl_xfer" --socket "$from" --quiet --json --bytes "$bytes" "$@" \
		send "$host/s" 2>"$T/send.err" | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    print("%.3f" % d["gbytes_per_s"] if d["ok"] else "FAILED")
except ValueError:
    print("FAILED")')
	wait $r || out=FAILED
	echo "$out"
}

# loopd_xfer BUILDDIR BYTES ARGS...: the same from node-a to node-b
loopd_xfer() { loopd_xfer_between "$SA" "$SB" node-b "$@"; }

# med: the median of the numbers on standard input, one a line
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
