#!/bin/sh
# SPDX-License-Identifier: MIT
# Dynamic peers cannot leave a configured peer without a data channel. With
# dynamic_peers = 64 at a, 64 strangers from 127.0.0.2 (each a host name of
# its own, a data port of its own) come up as dynamic peers; then
# configured node-b comes up, gets its channel and takes a verified
# transfer from a. The channel table had 64 slots for the peer table's 128
# entries: node-b came up on the control connection only ("no free data
# channel") and every connect to it failed until it reconnected. All
# traffic stays on 127.0.0.0/8.
. "$(dirname "$0")/lib.sh"
PROBE=$top_builddir/tests/integration/peer_probe
N=64
set -- $(free_ports 2)
PA=$1 PB=$2
pair_confs "$PA" "$PB" "dynamic_peers = $N" "data_port = 0"
SOCK_A=$TMPD/ra/ucclsvcd.sock SOCK_B=$TMPD/rb/ucclsvcd.sock
start a
# up_dynamic: how many peers a has up besides node-b
up_dynamic() {
	ctl_py "$SOCK_A" peers "sum(1 for p in d['peers'] if p['state'] == 'up' and p['name'] != 'node-b')"
}
i=1
while [ $i -le $N ]; do
	"$PROBE" squat 127.0.0.1 "$PA" "zz-$i" $((40000 + i)) 20000 127.0.0.2 >"$TMPD/sq$i.out" 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	i=$((i + 1))
done
got=0
for _ in $(seq 100); do
	got=$(up_dynamic)
	[ "$got" = "$N" ] && break
	sleep 0.1
done
expect "$N strangers are dynamic peers of a ($got)" [ "$got" = "$N" ]
start b
# b_chan: whether a has a data channel to node-b
b_chan() {
	[ "$(ctl_py "$SOCK_A" channels "any(c['peer'] == 'node-b' for c in d['channels'])")" = True ]
}
ok_chan=1
for _ in $(seq 100); do
	b_chan && ok_chan=0 && break
	sleep 0.05
done
expect "a has a data channel to node-b beside $N dynamic peers" [ $ok_chan -eq 0 ]
expect "a found a channel slot for every peer" eval '! grep -q "no free data channel" "$TMPD/a.log"'
expect "a transfer from a to node-b" xfer_ok "$SOCK_A" "$SOCK_B" node-b 16M x1
if [ "$FAILS" -ne 0 ]; then
	cat "$TMPD/send-x1.out" "$TMPD/sq1.out"
	for n in a b; do echo "--- $n.log ---"; tail -n 40 "$TMPD/$n.log"; done
	exit 1
fi
exit 0
