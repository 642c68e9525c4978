#!/bin/sh
# SPDX-License-Identifier: MIT
# Strangers cannot keep a configured peer away. With dynamic_peers on, any
# address may connect to peer_listen and wait up to 5 s for its hello; 10
# connections from 127.0.0.2 (no peer's host) that send nothing fill the
# 8 slots of other hosts at b (2 closed), and a (which dials b) killed
# and restarted meanwhile comes back up at once (it used to be refused
# until the strangers' slots freed). The same when the stranger said hello
# first and is a dynamic peer (its host took the peers' slots before). A
# stranger announcing its data plane at another address is refused. Nor
# can idle connections from a peer's own host. All traffic stays on
# 127.0.0.0/8.
. "$(dirname "$0")/lib.sh"
PROBE=$top_builddir/tests/integration/peer_probe
set -- $(free_ports 2)
PA=$1 PB=$2
for n in a b; do
	{
		[ $n = a ] && echo "peer_listen = 127.0.0.1:$PA" || echo "peer_listen = 127.0.0.1:$PB"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		echo "host_name = node-$n"
		echo "dynamic_peers = 4"
		echo "peer_timeout_ms = 500"
		echo "data_port = 0"
	} >"$TMPD/$n.conf"
done
SOCK_A=$TMPD/ra/ucclsvcd.sock SOCK_B=$TMPD/rb/ucclsvcd.sock
# state SOCK: node-? state and reconnects of the one peer
state() { ctl_py "$1" peers "'%s,%s' % (d['peers'][0]['state'], d['peers'][0]['reconnects'])"; }
wait_up() { # wait_up SOCK RECONNECTS TENTHS
	for _ in $(seq "$3"); do
		[ "$(state "$1")" = "up,$2" ] && return 0
		sleep 0.1
	done
	return 1
}
start_named a; PID_A=$STARTED_PID
start_named b; PID_B=$STARTED_PID
expect "the peers come up" wait_up "$SOCK_A" 0 50

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# restart_under_flood TAG RECONNECTS WHO [FROM]: 10 idle connections from
# FROM (127.0.0.2) to b for 4 s while a is killed and restarted; a must be
# up at b again (its RECONNECTS-th time) within them, 8 waiting and 2
# closed. node-a sorts first and dials: the strangers wait at b, which
# accepts.
restart_under_flood() {
	local t0 t1 fb
	t0=$(now_ms)
	"$PROBE" flood 127.0.0.1 "$PB" 10 "${4:-127.0.0.2}" 4000 >"$TMPD/$1.out" &
	fb=$!
	BG_PIDS="$BG_PIDS $fb"
	sleep 0.5
	kill -9 "$PID_A"; wait "$PID_A" 2>/dev/null
	start_named a; PID_A=$STARTED_PID
	expect "the restarted peer is up again while $3 wait" wait_up "$SOCK_B" "$2" 30
	t1=$(now_ms)
	echo "# up again $((t1 - t0)) ms after the strangers came"
	expect "... within their 4 s" [ $((t1 - t0)) -lt 4000 ]
	wait "$fb"
	[ -n "${4:-}" ] && return    # from a's own host: a's dial closes one more
	expect "8 of the $3 waited at b, 2 were closed" grep -q "^closed 2$" "$TMPD/$1.out"
}
restart_under_flood fb 1 "strangers' connections"
expect "... and logged" grep -q "8 connections from hosts that are no peer's wait for a hello already (limit 8): closing the oldest from the host with the most" "$TMPD/b.log"

# A stranger that says hello becomes a dynamic peer, but its host is still
# no configured peer's: its idle connections wait among the strangers', and
# a restarted a is up again at once. And a stranger may not announce a data
# plane anywhere but where it talks from (it could take another peer's
# ports: the first one up keeps them).
"$PROBE" squat 127.0.0.1 "$PB" zz-far 50000 500 127.0.0.2 127.0.0.1 >"$TMPD/far.out" 2>&1
expect "a stranger announcing its data plane elsewhere is refused" grep -q "^refused" "$TMPD/far.out"
expect "... saying why" grep -q "zz-far announces its data plane at 127.0.0.1, not at 127.0.0.2" "$TMPD/far.out"
"$PROBE" squat 127.0.0.1 "$PB" zz-near 50000 6000 127.0.0.2 >"$TMPD/near.out" 2>&1 &
NEAR=$!
BG_PIDS="$BG_PIDS $NEAR"
wait_near() { for _ in $(seq 50); do grep -q "^hello node-b" "$TMPD/near.out" && return 0; sleep 0.1; done; return 1; }
expect "a stranger at its own address becomes b's dynamic peer" wait_near
restart_under_flood fb2 2 "dynamic peer's host's connections"
wait "$NEAR"
# Idle connections from a peer's own host (a user there, not its daemon)
# fill the peers' 8 slots; a restarted a still comes back: each newcomer
# closes the oldest waiting one of the host with the most (it was refused
# until they went, however long they reconnected; with a key too).
restart_under_flood fb3 3 "connections from a's own host" 127.0.0.1
expect "... and logged" grep -q "8 connections from peers' hosts wait for a hello already (limit 8): closing the oldest" "$TMPD/b.log"
if [ "$FAILS" -ne 0 ]; then
	for n in a b; do echo "--- $n.log ---"; cat "$TMPD/$n.log"; done
	exit 1
fi
exit 0
