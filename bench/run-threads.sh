#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-threads.sh: does engine_threads = N help? Two daemons on 127.0.0.1,
# each with engine_threads = N (4 data paths), and two concurrent verified
# transfers of BYTES from a to b, each on its own endpoint pair (placement
# puts them on different threads when N >= 2). Prints each sender's summary
# line and a's channels. No root; everything stays on 127.0.0.1 and is
# bounded by timeout(1).
#
# Usage: bench/run-threads.sh [BUILDDIR] [N] [BYTES]   (defaults: . 2 512M)
set -eu
B=${1:-.}
N=${2:-2}
BYTES=${3:-512M}
T=$(mktemp -d "${TMPDIR:-/tmp}/uccl-threads.XXXXXX") ||
	{ echo "run-threads.sh: cannot make a temporary directory" >&2; exit 1; }
PIDS=
trap 'kill $PIDS 2>/dev/null || true; rm -rf "$T"' EXIT
set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
PA=$1 PB=$2
for x in a:$PA b:$PB; do
	n=${x%%:*} p=${x##*:}
	printf 'peer_listen = 127.0.0.1:%s\npeers = node-a=127.0.0.1:%s, node-b=127.0.0.1:%s\nhost_name = node-%s\ndata_paths = 4\nengine_threads = %s\n' \
		"$p" "$PA" "$PB" "$n" "$N" >"$T/$n.conf"
	"$B/daemon/ucclsvcd" --config "$T/$n.conf" --runtime-dir "$T/r$n" >/dev/null 2>"$T/$n.log" &
	PIDS="$PIDS $!"
done
for _ in $(seq 100); do
	[ -S "$T/ra/ucclsvcd.sock" ] && [ -S "$T/rb/ucclsvcd.sock" ] && break
	sleep 0.05
done
sleep 1        # peers meet
timeout 120 "$B/client/uccl_xfer" --socket "$T/rb/ucclsvcd.sock" --quiet recv x0 & R0=$!
timeout 120 "$B/client/uccl_xfer" --socket "$T/rb/ucclsvcd.sock" --quiet recv x1 & R1=$!
sleep 0.3
timeout 120 "$B/client/uccl_xfer" --socket "$T/ra/ucclsvcd.sock" --bytes "$BYTES" send node-b/x0 >"$T/s0" 2>&1 & S0=$!
timeout 120 "$B/client/uccl_xfer" --socket "$T/ra/ucclsvcd.sock" --bytes "$BYTES" send node-b/x1 >"$T/s1" 2>&1 & S1=$!
rc=0
for p in $S0 $S1 $R0 $R1; do wait "$p" || rc=1; done
echo "engine_threads = $N, two concurrent $BYTES transfers a -> b:"
grep -h "^transfer:" "$T/s0" "$T/s1"
grep -h "^verified:" "$T/s0" "$T/s1"
"$B/client/ucclctl" --socket "$T/ra/ucclsvcd.sock" channels | head -8
[ $rc -eq 0 ] || { echo "run-threads.sh: a transfer failed"; cat "$T/s0" "$T/s1" "$T/a.log" "$T/b.log"; }
kill $PIDS 2>/dev/null || true
for p in $PIDS; do wait "$p" 2>/dev/null || true; done
PIDS=
exit $rc
