# SPDX-License-Identifier: MIT
#
# loopd.sh: sourced by the loopback benchmark scripts (run-threads.sh,
# run-streams.sh; sh). loopd_start BUILDDIR NAME CONF_LINES: two daemons
# node-a and node-b on 127.0.0.1 (ports the kernel picks), peered, each
# with CONF_LINES (printf %b: \n separates lines) added; sets T (a
# temporary directory, removed on exit with the daemons stopped), SA and SB
# (their sockets); returns when both sockets are there and the peers had a
# second to meet. Everything stays on 127.0.0.1.

loopd_start() {
	local x n p pa pb
	T=$(mktemp -d "${TMPDIR:-/tmp}/uccl-$2.XXXXXX") ||
		{ echo "$2: cannot make a temporary directory" >&2; return 1; }
	LOOPD_PIDS=
	trap 'kill $LOOPD_PIDS 2>/dev/null || true; rm -rf "$T"' EXIT
	set -- "$1" "$2" "$3" $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
	pa=$4 pb=$5
	for x in a:$pa b:$pb; do
		n=${x%%:*} p=${x##*:}
		printf 'peer_listen = 127.0.0.1:%s\npeers = node-a=127.0.0.1:%s, node-b=127.0.0.1:%s\nhost_name = node-%s\n%b\n' \
			"$p" "$pa" "$pb" "$n" "$3" >"$T/$n.conf"
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
