#!/bin/sh
# SPDX-License-Identifier: MIT
# A configured peer removed and added again by SIGHUP is a new peer: a
# connect that was waiting for the remote listener on the old one's channel
# is bound again to the new channel and succeeds once the listener appears.
# (The new peer used to start its generations at 0 again, so the connect
# took the new channel for the one it was bound to, whose side the engine
# had reset, and failed with ECONNRESET.) node-b is stopped while node-a
# removes it, so that the connect's request to it is in flight then: that
# request used to end the connect with ECANCELED instead of waiting for the
# peer to come back. All traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
set -- $(free_ports 2)
PA=$1 PB=$2
conf() { # conf FILE NAME PORT PEERS
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "peers = $4"
		echo "host_name = $2"
		echo "data_port = 0"
		echo "peer_timeout_ms = 1000"
	} >"$1"
}
BOTH="node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
conf "$TMPD/a.conf" node-a "$PA" "$BOTH"
conf "$TMPD/b.conf" node-b "$PB" "$BOTH"
SOCK_A=$TMPD/ra/ucclsvcd.sock SOCK_B=$TMPD/rb/ucclsvcd.sock
start_named a; PID_A=$STARTED_PID
start_named b; PID_B=$STARTED_PID
expect "channel a->b up" wait_chan "$SOCK_A"
UCCL_SOCKET=$SOCK_A timeout 20 "$ITEST" connect node-b/x 8000 >"$TMPD/conn.out" 2>&1 &
CPID=$!; BG_PIDS="$BG_PIDS $CPID"
sleep 0.5
kill -STOP "$PID_B"; sleep 0.2
conf "$TMPD/a.conf" node-a "$PA" "node-a=127.0.0.1:$PA"
kill -HUP "$PID_A"; sleep 0.3
kill -CONT "$PID_B"
conf "$TMPD/a.conf" node-a "$PA" "$BOTH"
kill -HUP "$PID_A"
expect "channel a->b up again" wait_chan "$SOCK_A"
sleep 0.3
UCCL_SOCKET=$SOCK_B timeout 20 "$ITEST" hold x >"$TMPD/hold.out" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait "$CPID"
cat "$TMPD/conn.out"
expect "connect succeeds once the listener appears" grep -q ": ok" "$TMPD/conn.out"
if [ "$FAILS" -ne 0 ]; then echo "--- a.log ---"; cat "$TMPD/a.log"; exit 1; fi
exit 0
