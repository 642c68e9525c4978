#!/bin/sh
# SPDX-License-Identifier: MIT
# A peer that closes a connection while our engine still finishes connecting
# it: the peer daemon (the probe, as alpha) answers our ConnectReq and
# closes the side it made in the same write, so that the daemon reads the
# ConnClose after the ConnectRep but before its engine has finished the
# connect (the side is still pending). The close must not be lost: the
# connect succeeds (the peer did accept), and a receive posted on the
# connection fails with -ECONNRESET within the close's grace, while the
# peer stays up. (The close used to be dropped for a pending side, which
# then opened with nothing behind it: the receive waited for ever, or
# until the peer went down.) All traffic stays on 127.0.0.1; nothing
# answers on the data port the probe announces.
. "$(dirname "$0")/lib.sh"
PROBE=$top_builddir/tests/integration/peer_probe
PB=$(free_ports 1)
{
	echo "peer_listen = 127.0.0.1:$PB"
	# alpha sorts before node-b: the daemon waits for it to dial
	echo "peers = alpha=127.0.0.1:9"
	echo "host_name = node-b"
	echo "data_port = 0"
	echo "log_level = debug"
} >"$TMPD/b.conf"
start_daemon "$TMPD/b.conf"

# peer_state NAME: the daemon's peer NAME's state
peer_state() { ctl_py "$UCCL_SOCKET" peers "[p['state'] for p in d['peers'] if p['name'] == '$1'][0]"; }

# the probe stays up longer than the client waits: the peer going down
# would reset the connection too, and hide a lost close
"$PROBE" closeearly 127.0.0.1 "$PB" alpha 6000 >"$TMPD/probe.out" 2>&1 &
PROBE_PID=$!
BG_PIDS="$BG_PIDS $PROBE_PID"
expect "the probe is peer alpha, its data channel up" wait_chan "$UCCL_SOCKET"

T0=$(($(date +%s%N) / 1000000))
timeout 15 "$ITEST" closedearly alpha/svc 3000 >"$TMPD/client.out" 2>&1
rc=$?
T1=$(($(date +%s%N) / 1000000))
sed 's/^/# client: /' "$TMPD/client.out"
expect "the daemon asked alpha to connect to svc" grep -q "^connect_req svc " "$TMPD/probe.out"
expect "alpha accepted and closed the side in one write" grep -q "^closed " "$TMPD/probe.out"
expect "the connect succeeds (alpha accepted)" grep -q "^connected$" "$TMPD/client.out"
expect "a recv posted on it fails with -ECONNRESET, not waits (rc $rc, $((T1 - T0)) ms)" \
	grep -q "^recv res -104 " "$TMPD/client.out"
expect "the daemon took alpha's close" grep -q "peer alpha closed its side of endpoint" "$TMPD/daemon.log"
expect "... not alpha going down: it is still up" eval '[ "$(peer_state alpha)" = up ] && kill -0 "$PROBE_PID"'

kill "$PROBE_PID" 2>/dev/null
wait "$PROBE_PID" 2>/dev/null
sed 's/^/# probe: /' "$TMPD/probe.out"
stop_daemon
finish
