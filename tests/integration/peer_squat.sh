#!/bin/sh
# SPDX-License-Identifier: MIT
# A peer cannot take another peer's data packets by announcing a data port
# inside that peer's ports at the same address (our NIC knows a peer's
# packets by their source port): b refuses "alpha", a configured peer whose
# hello names a port inside node-a's, closes its connection saying why, and
# transfers from a to b go on. (It used to take alpha up, and a's transfer
# to b failed: its packets went to alpha's channel and were dropped there.)
# All traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
PROBE=$top_builddir/tests/integration/peer_probe
XFER=$top_builddir/client/uccl_xfer
set -- $(free_ports 2)
PA=$1 PB=$2
for n in a b; do
	{
		[ $n = a ] && echo "peer_listen = 127.0.0.1:$PA" || echo "peer_listen = 127.0.0.1:$PB"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB, alpha=127.0.0.1:9"
		echo "host_name = node-$n"
		echo "data_port = 0"
		echo "data_paths = 4"
		echo "peer_timeout_ms = 1000"
	} >"$TMPD/$n.conf"
done
start_named a
start_named b
SOCK_A=$TMPD/ra/ucclsvcd.sock SOCK_B=$TMPD/rb/ucclsvcd.sock
expect "channel a->b up" wait_chan "$SOCK_A"
DA=$(sed -n 's/.*data plane on udp 127.0.0.1:\([0-9]*\) .*/\1/p' "$TMPD/a.log" | head -n 1)
expect "a's data port is logged ($DA)" [ -n "$DA" ]

xfer() { # xfer NAME: 64 MiB from a to b, verified
	"$XFER" --socket "$SOCK_B" --quiet recv "$1" >/dev/null 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	wait_ep "$SOCK_B" "$1" || fail "receiver $1 never showed up at b"
	timeout 20 "$XFER" --socket "$SOCK_A" --bytes 64M --quiet send "node-b/$1" >"$TMPD/$1.out" 2>&1
}
xfer x1
expect "a transfer from a to b" [ $? -eq 0 ]
"$PROBE" squat 127.0.0.1 "$PB" alpha $((DA + 1)) 5000 >"$TMPD/squat.out" 2>&1 &
SQ=$!
BG_PIDS="$BG_PIDS $SQ"
sleep 1
xfer x2
rc=$?
expect "a transfer from a to b while alpha announces a port inside a's (rc $rc)" [ $rc -eq 0 ]
expect "b refuses alpha and says why" \
	grep -q "peer alpha: its data ports $((DA + 1))-$((DA + 1)) overlap those of peer node-a ($DA-$((DA + 3))) at the same address; closing its connection" "$TMPD/b.log"
wait "$SQ"
expect "b stays up with a" eval '[ "$(chan_field "$SOCK_B" peer)" = node-a ]'
if [ "$FAILS" -ne 0 ]; then
	cat "$TMPD/x2.out" "$TMPD/squat.out"
	for n in a b; do echo "--- $n.log ---"; cat "$TMPD/$n.log"; done
	exit 1
fi
exit 0
