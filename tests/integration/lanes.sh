#!/bin/sh
# SPDX-License-Identifier: MIT
# Lanes: two daemons on 127.0.0.1 with engine_threads = 2 and lanes = 1.
# One endpoint pair, both endpoints on thread 0, moves verified data and
# its large puts are split: sub-channel 1>1 carries half of them (the lane
# sides on thread 1 of both daemons) while no endpoint runs there; the
# accepting daemon's side splits too (a transfer the other way), and every
# primitive (itest_client's) passes with its puts and get split; as root,
# 64M stay intact at 1% loss (nftables on loopback). A sender
# killed in the middle leaves both daemons serving, and a later transfer
# splits again. With lanes = 0 on one daemon nothing is split and data
# still moves. lanes must be below engine_threads (--check-config). No
# root needed.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer

set -- $(free_ports 2)
PA=$1 PB=$2

write_conf() { # write_conf FILE NAME PORT LANES
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		echo "host_name = $2"
		echo "data_paths = 2"
		echo "engine_threads = 2"
		echo "lanes = $4"
		echo "peer_timeout_ms = 1000"
	} >"$1"
}
write_conf "$TMPD/a.conf" node-a "$PA" 1
write_conf "$TMPD/b.conf" node-b "$PB" 1
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
PID_A= PID_B=

# tx SOCK I J [FIELD]: data packets sent (or FIELD) so far on sub-channel (our I, its J)
tx() {
	ctl_py "$1" channels "sum(c['${4:-data_pkts_tx}'] for c in d['channels'] \
if c['peer'] != '(self)' and c['thread'] == $2 and c['remote_thread'] == $3)"
}

printf 'engine_threads = 2\nlanes = 2\n' >"$TMPD/bad.conf"
expect "lanes = 2 with engine_threads = 2 is refused" \
	eval '! "$UCCLSVCD" --check-config "$TMPD/bad.conf" >"$TMPD/check.out" 2>&1'
expect "... saying why" grep -q "lanes = 2 needs engine_threads >= 3" "$TMPD/check.out"

start a
start b
expect "a: 2 x 2 sub-channels up" wait_nchans "$SOCK_A" 4
expect "b: 2 x 2 sub-channels up" wait_nchans "$SOCK_B" 4
expect "ucclctl status shows lanes 1" [ "$(ctl_py "$SOCK_A" status "d['status']['lanes']")" = 1 ]
expect "... in its text too" eval '"$UCCLCTL" --socket "$SOCK_A" status | grep -q "^lanes: *1$"'

# 1. a -> b, one endpoint pair (each on thread 0: the first endpoint of
# its daemon): puts of 1 MiB split in two
p0=$(eng_stat "$SOCK_A" lane_parts) t11=$(tx "$SOCK_A" 1 1) b0=$(tx "$SOCK_B" 1 1 data_pkts_rx)
expect "a -> b: 64M verified with lanes" xfer_ok "$SOCK_A" "$SOCK_B" node-b 64M l1
p1=$(eng_stat "$SOCK_A" lane_parts) u11=$(tx "$SOCK_A" 1 1)
expect "a split its puts (lane parts $p0 -> $p1)" [ "$p1" -ge $((p0 + 64)) ]
expect "sub-channel 1>1 carried the parts ($t11 -> $u11 data packets)" [ "$u11" -gt "$t11" ]
b1=$(tx "$SOCK_B" 1 1 data_pkts_rx)
expect "b's thread 1 received them ($b0 -> $b1 data packets)" [ "$b1" -gt "$b0" ]

# 2. b -> a: the daemon that accepted the connection splits too
q0=$(eng_stat "$SOCK_B" lane_parts)
expect "b -> a: 32M verified with lanes" xfer_ok "$SOCK_B" "$SOCK_A" node-a 32M l2
q1=$(eng_stat "$SOCK_B" lane_parts)
expect "b split its puts (lane parts $q0 -> $q1)" [ "$q1" -gt "$q0" ]

# 2b. every primitive between them (itest_client pserve/pclient, as in
# remote.sh): its 1 MiB puts and get are split, into and out of memfd and
# registered memory, beside its signals, flush, sends and strict order
g0=$(eng_stat "$SOCK_A" lane_parts) h0=$(eng_stat "$SOCK_B" lane_parts)
UCCL_SOCKET=$SOCK_B "$ITEST" pserve prims >"$TMPD/pserve.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" prims
UCCL_SOCKET=$SOCK_A "$ITEST" pclient node-b/prims >"$TMPD/pclient.out" 2>&1
rc=$?
wait $SP
src=$?
expect "every primitive across the lanes: client passed (rc $rc)" [ "$rc" -eq 0 ]
expect "... server passed (rc $src)" [ "$src" -eq 0 ]
[ "$rc" -eq 0 ] && [ "$src" -eq 0 ] || cat "$TMPD/pclient.out" "$TMPD/pserve.out"
g1=$(eng_stat "$SOCK_A" lane_parts) h1=$(eng_stat "$SOCK_B" lane_parts)
expect "both sides split puts or gets ($g0 -> $g1, $h0 -> $h1)" \
	eval '[ "$g1" -gt "$g0" ] && [ "$h1" -gt "$h0" ]'

# 2c. as root with nft: 1% of the packets to b's data planes (both
# threads) dropped on loopback (whole GSO bursts at a time): the owner's
# part and the lane's recover their losses, and the data is intact
if [ "$(id -u)" -eq 0 ] && command -v nft >/dev/null; then
	NT=uccl_lanes_$$
	trap 'nft delete table inet "$NT" 2>/dev/null; cleanup' EXIT
	BP0=$(sed -n 's/.*data plane on udp 127.0.0.1:\([0-9]*\) .*/\1/p' "$TMPD/b.log" | tail -n 1)
	BP1=$(sed -n 's/.*data plane of engine thread 1 on udp port \([0-9]*\).*/\1/p' "$TMPD/b.log" |
		tail -n 1)
	r0=$(tx "$SOCK_A" 1 1 retx_pkts) o0=$(tx "$SOCK_A" 0 0 retx_pkts)
	if nft add table inet "$NT" &&
	   nft add chain inet "$NT" out '{ type filter hook output priority 0; }' &&
	   nft add rule inet "$NT" out ip daddr 127.0.0.1 udp dport "{ $BP0, $BP1 }" \
		numgen random mod 100 \< 1 drop; then
		expect "a -> b at 1% loss: 64M verified with lanes" xfer_ok "$SOCK_A" "$SOCK_B" node-b 64M lloss
		nft delete table inet "$NT"
		r1=$(tx "$SOCK_A" 1 1 retx_pkts) o1=$(tx "$SOCK_A" 0 0 retx_pkts)
		expect "... the lane resent what it lost ($r0 -> $r1), as did the owner ($o0 -> $o1)" \
			eval '[ "$r1" -gt "$r0" ] && [ "$o1" -gt "$o0" ]'
	else
		nft delete table inet "$NT" 2>/dev/null
		echo "# skip: nftables rules could not be added"
	fi
else
	echo "# skip: the loss case needs root and nft"
fi

# 3. a sender killed mid-transfer: its endpoint, connection and lanes go;
# both daemons keep serving and split again
"$XFER" --socket "$SOCK_B" --bytes 4G --quiet recv l3 >/dev/null 2>&1 &
RP=$!
BG_PIDS="$BG_PIDS $RP"
wait_ep "$SOCK_B" l3
"$XFER" --socket "$SOCK_A" --bytes 4G --quiet send node-b/l3 >/dev/null 2>&1 &
SP=$!
for _ in $(seq 100); do
	[ "$(eng_stat "$SOCK_A" lane_parts)" -gt $((p1 + 16)) ] 2>/dev/null && break
	sleep 0.05
done
kill -9 $SP
wait $SP 2>/dev/null
kill -9 $RP
wait $RP 2>/dev/null
expect "a still answers" eval '"$UCCLCTL" --socket "$SOCK_A" status >/dev/null'
expect "b still answers" eval '"$UCCLCTL" --socket "$SOCK_B" status >/dev/null'
r0=$(eng_stat "$SOCK_A" lane_parts)
expect "a -> b after the kill: 32M verified" xfer_ok "$SOCK_A" "$SOCK_B" node-b 32M l4
r1=$(eng_stat "$SOCK_A" lane_parts)
expect "... split again ($r0 -> $r1)" [ "$r1" -gt "$r0" ]
# every client is gone: so are the shadow endpoints of its lanes
no_shadows() {
	for _ in $(seq 100); do
		[ "$(eng_stat "$SOCK_A" shadow_eps)" = 0 ] && [ "$(eng_stat "$SOCK_B" shadow_eps)" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}
expect "no shadow endpoint is left on either daemon" no_shadows

# 4. b restarted with lanes = 0: connections get no lanes, data still moves
stop_named b "$PID_B"
write_conf "$TMPD/b.conf" node-b "$PB" 0
start b
expect "a: 2 x 2 sub-channels up again" wait_nchans "$SOCK_A" 4
s0=$(eng_stat "$SOCK_A" lane_parts)
expect "a -> b (lanes = 0 there): 32M verified" xfer_ok "$SOCK_A" "$SOCK_B" node-b 32M l5
s1=$(eng_stat "$SOCK_A" lane_parts)
expect "... without splitting ($s0 -> $s1)" [ "$s1" = "$s0" ]

finish_pair
