#!/bin/sh
# SPDX-License-Identifier: MIT
# Peers with different data_paths: a and c run 8 paths, b 4, so b knows a
# by the first 4 of a's data ports only. While a sends to c on all 8 of
# its paths, b sends to a, and a's ACKs to b (packets that may leave on
# any path, to ride with their neighbours) must still leave on a port b
# knows: both transfers verified, and b's NIC counts no datagram from an
# unknown sender. No root needed; all traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"

set -- $(free_ports 3)
PA=$1 PB=$2 PC=$3

write_conf() { # write_conf NAME PORT PATHS
	{
		echo "peer_listen = 127.0.0.1:$2"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB, node-c=127.0.0.1:$PC"
		echo "host_name = node-$1"
		echo "data_paths = $3"
		echo "mtu = 9000"
	} >"$TMPD/$1.conf"
}
write_conf a "$PA" 8
write_conf b "$PB" 4
write_conf c "$PC" 8
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
SOCK_C=$TMPD/rc/ucclsvcd.sock

finish_all() {
	for n in a b c; do
		eval "p=\${PID_$n}"
		[ -z "$p" ] || stop_named "$n" "$p"
	done
	if [ "$FAILS" -ne 0 ]; then
		for n in a b c; do echo "--- $n.log ---"; cat "$TMPD/$n.log"; done
		exit 1
	fi
	exit 0
}
# paths_to SOCK PEER: the path count of SOCK's channel to PEER
paths_to() { ctl_py "$1" channels "[c['paths'] for c in d['channels'] if c['peer'] == '$2']"; }
wait_paths() { # wait_paths SOCK PEER N
	for _ in $(seq 100); do
		[ "$(paths_to "$1" "$2")" = "[$3]" ] && return 0
		sleep 0.05
	done
	return 1
}
unknown_b() { ctl_py "$SOCK_B" channels "d['nic']['rx_unknown_peer']"; }

start_named a
PID_a=$STARTED_PID
start_named b
PID_b=$STARTED_PID
start_named c
PID_c=$STARTED_PID
expect "a's channel to b has b's 4 paths" wait_paths "$SOCK_A" node-b 4
expect "a's channel to c has 8 paths" wait_paths "$SOCK_A" node-c 8
expect "b's NIC has heard from no unknown sender yet ($(unknown_b))" [ "$(unknown_b)" = 0 ]

# both at once: a's DATA to c on paths 0-7, a's ACKs to b beside them
xfer_ok "$SOCK_A" "$SOCK_C" node-c 512M ac &
ac=$!
xfer_ok "$SOCK_B" "$SOCK_A" node-a 512M ba
rc_ba=$?
wait $ac
rc_ac=$?
cat "$TMPD/send-ac.out" "$TMPD/send-ba.out"
expect "512M from a to c verified (rc $rc_ac)" [ "$rc_ac" -eq 0 ]
expect "512M from b to a verified (rc $rc_ba)" [ "$rc_ba" -eq 0 ]
u=$(unknown_b)
expect "b's NIC took every datagram from a as a's ($u from unknown senders)" [ "$u" = 0 ]
finish_all
