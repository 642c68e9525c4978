#!/bin/sh
# SPDX-License-Identifier: MIT
# Two daemons on 127.0.0.1 with different ports move data between their
# clients: every primitive across hosts (with its data checked), a 64 B
# ping-pong whose replies share datagrams (udp_pack), a verified transfer
# of XFER_BYTES (default 1 GiB) with ucclctl paths read while it runs and
# one of 256 MiB from memory the clients registered (uccl_mem_reg),
# clear errors for an unknown peer and a name nobody listens on, forged
# UDP packets (random bytes, a truncated header, a wrong token) dropped and
# counted while a transfer stays intact, a daemon killed mid-transfer (the
# sender fails within a bounded time, the other daemon keeps serving and
# fails a connect to it with EHOSTUNREACH after the connect's timeout),
# restarted and connected to again, and the sender's daemon killed too (the
# receiver fails within a bounded time).
# Daemon a picks a path per packet (path_per_packet), b one per chunk.
# The congestion controller of a live channel is switched with ucclctl
# set-cc (also in the middle of a verified transfer), with the library call,
# and by a reload of peer_cc; unknown controllers and peers are refused with
# a clear error, as (when run as root) is a caller without the admin role;
# a setting for a peer that is down applies when its channel comes up.
# No root needed; all traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
RPERF=$top_builddir/bench/uccl_rperf
XFER_BYTES=${XFER_BYTES:-1G}
TIMEOUT_MS=1000

# Four free ports (TCP listeners and UDP data bases, picked by the kernel).
set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
us = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s in us: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss + us))')
PA=$1 PB=$2 DA=$3 DB=$4

write_conf() { # write_conf FILE NAME PORT DATA_PORT PATHS MTU
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		echo "host_name = $2"
		echo "data_port = $4"
		echo "data_paths = $5"
		echo "mtu = $6"
		echo "peer_timeout_ms = $TIMEOUT_MS"
	} >"$1"
}
# a uses fewer paths than b: b accepts a's source ports up to its own
# count, so the forger below can speak from a's address range. The
# channel takes the smaller MTU: 1500 here (netns.sh runs 9000).
write_conf "$TMPD/a.conf" node-a "$PA" 0 4 1500
echo "cc = swift" >>"$TMPD/a.conf"     # b keeps the default, window
# a sprays every packet over its paths (b picks one per chunk): the
# transfers a->b below check that the data arrives intact that way too
echo "path_per_packet = true" >>"$TMPD/a.conf"
write_conf "$TMPD/b.conf" node-b "$PB" 0 8 9000
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
PID_A= PID_B=

start a
start b
expect "channel a->b up" wait_chan "$SOCK_A"
expect "channel b->a up" wait_chan "$SOCK_B"
expect "channel uses the smaller path count (4)" [ "$(chan_field "$SOCK_A" paths)" = 4 ]
expect "channel uses the smaller MTU (1500)" [ "$(chan_field "$SOCK_B" mtu)" = 1500 ]
expect "each side runs its configured CC (swift/window)" \
	eval '[ "$(chan_field "$SOCK_A" cc)" = swift ] && [ "$(chan_field "$SOCK_B" cc)" = window ]'

# 1. every primitive across hosts
UCCL_SOCKET=$SOCK_B "$ITEST" pserve prims >"$TMPD/pserve.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" prims || fail "server prims never showed up at b"
UCCL_SOCKET=$SOCK_A "$ITEST" pclient node-b/prims >"$TMPD/pclient.out" 2>&1
rc=$?
wait $SP
src=$?
cat "$TMPD/pclient.out" "$TMPD/pserve.out"
expect "primitives across daemons: client passed" [ "$rc" -eq 0 ]
expect "primitives across daemons: server passed" [ "$src" -eq 0 ]

# 1b. a 64 B put+signal ping-pong: b's reply (put, signal and the ACK
# held for it) shares datagrams (udp_pack; a sends its put and signal on
# different paths, path_per_packet, so only b is counted)
nic_b() { ctl_py "$SOCK_B" channels "'%d %d' % (d['nic']['tx_pkts'], d['nic']['tx_dgrams'])"; }
n0=$(nic_b)
"$RPERF" --socket "$SOCK_B" --timeout 30 server pp >"$TMPD/pp.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" pp || fail "server pp never showed up at b"
"$RPERF" --socket "$SOCK_A" --sizes none --lat-samples 500 client node-b/pp >>"$TMPD/pp.out" 2>&1
rc=$?
wait $SP
n1=$(nic_b)
grep -i "one-way" "$TMPD/pp.out"
pk=$(( ${n1% *} - ${n0% *} )) dg=$(( ${n1#* } - ${n0#* } ))
expect "ping-pong ran (rc $rc)" [ "$rc" -eq 0 ]
# 3 packets a turn in 1 or 2 datagrams; unpacked it would be 3 (slack
# for turns whose put and signal an engine poll split)
expect "b's replies shared datagrams: $pk packets in $dg datagrams" [ $((dg * 10)) -lt $((pk * 9)) ]
# the same ping-pong by send/recv (--lat-op send), spinning: each pong a
# message into a receive posted before its ping went, and every payload
# checked at both ends (uccl_rperf fails on a wrong or short one)
"$RPERF" --socket "$SOCK_B" --timeout 30 server pps >"$TMPD/pps.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" pps || fail "server pps never showed up at b"
"$RPERF" --socket "$SOCK_A" --sizes none --lat-samples 500 --lat-op send --spin \
	client node-b/pps >>"$TMPD/pps.out" 2>&1
rc=$?
wait $SP
grep -i "one-way" "$TMPD/pps.out"
expect "send/recv ping-pong ran (rc $rc)" [ "$rc" -eq 0 ]
expect "and said so" grep -q "64 B send/recv ping-pong, spinning" "$TMPD/pps.out"
# without --spin the client waits in uccl_cq_wait, and says that
"$RPERF" --socket "$SOCK_B" --timeout 30 server ppw >"$TMPD/ppw.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" ppw || fail "server ppw never showed up at b"
"$RPERF" --socket "$SOCK_A" --sizes none --lat-samples 100 --lat-op send --json \
	client node-b/ppw >>"$TMPD/ppw.out" 2>&1
rc=$?
wait $SP
expect "send/recv ping-pong, waiting, ran (rc $rc)" [ "$rc" -eq 0 ]
expect "... and says it waited in uccl_cq_wait" \
	grep -q '"op": "send/recv", "wait": "uccl_cq_wait"' "$TMPD/ppw.out"
# and by puts that raise the semaphore themselves (UCCL_SQE_F_SIGNAL):
# one packet a way, each pong's payload checked when its count moves
n0=$(nic_b)
"$RPERF" --socket "$SOCK_B" --timeout 30 server ppf >"$TMPD/ppf.out" 2>&1 &
SP=$!
wait_ep "$SOCK_B" ppf || fail "server ppf never showed up at b"
"$RPERF" --socket "$SOCK_A" --sizes none --lat-samples 500 --lat-op put-signal \
	client node-b/ppf >>"$TMPD/ppf.out" 2>&1
rc=$?
wait $SP
n1=$(nic_b)
grep -i "one-way" "$TMPD/ppf.out"
pk=$(( ${n1% *} - ${n0% *} ))
expect "put-with-signal ping-pong ran (rc $rc)" [ "$rc" -eq 0 ]
# 1500 turns and the control messages: 2 packets a turn (ACK, put), not 3
expect "b sent about 2 packets a turn, not 3 ($pk for 1500 turns)" [ "$pk" -lt 3750 ]

# 1c. the receive hint (udp_rx_hint, on by default; root may load its
# socket filter, unless a container keeps BPF from it: b then says so):
# b's engine skipped the receives that would have found its socket empty,
# and ucclctl says so
if [ "$(id -u)" = 0 ] && ! grep -q "no receive hint" "$TMPD/b.log"; then
	set -- $(ctl_py "$SOCK_B" channels \
		"'%d %d %d' % (d['nic']['rx_hint'], d['nic']['rx_skipped'], d['nic']['rx_calls'])") 0 0 0
	expect "b's receive hint is on and skipped receives (on $1, skipped $2, made $3)" \
		[ "$1" -ge 1 -a "$2" -gt 0 -a "$3" -gt 0 ]
	"$UCCLCTL" --socket "$SOCK_B" channels >"$TMPD/chan-b.out" 2>&1
	expect "ucclctl channels shows the skipped receives" grep -q "skipped by the hint" "$TMPD/chan-b.out"
elif [ "$(id -u)" = 0 ]; then
	ok "# skip the receive hint: b says it is off (its socket filter was refused)"
fi

# 2. a verified transfer, with a's channel to b looked at path by path
#    while it runs (paths that carried chunks, paths with an RTT sample)
"$XFER" --socket "$SOCK_B" --quiet recv big >"$TMPD/recv.out" 2>&1 &
RP=$!
wait_ep "$SOCK_B" big || fail "receiver big never showed up at b"
"$XFER" --socket "$SOCK_A" --bytes "$XFER_BYTES" send node-b/big >"$TMPD/send.out" 2>&1 &
SP=$!
# (as "4 2+ 1+": 4 paths, chunks on >= 2, an RTT on >= 1)
seen=$(snap_while $SP "$SOCK_A" "paths node-b" "(lambda ps: '%d %s %s' % (len(ps),
	'2+' if sum(p['sent_chunks'] > 0 for p in ps) >= 2 else 'few',
	'1+' if any(p['srtt_us'] > 0 for p in ps) else 'none'))(
	[p for c in d['channels'] for p in c['path_stats']])" "4 2+ 1+")
"$UCCLCTL" --socket "$SOCK_A" paths node-b >"$TMPD/paths.out" 2>&1
wait $SP
rc=$?
wait $RP
rrc=$?
cat "$TMPD/send.out" "$TMPD/paths.out"
expect "$XFER_BYTES moved a->b and verified (sender rc $rc)" [ "$rc" -eq 0 ]
expect "receiver verified every chunk (rc $rrc)" [ "$rrc" -eq 0 ]
expect "sender reports every chunk intact" grep -q "verified: .* chunks intact" "$TMPD/send.out"
expect "ucclctl paths during the transfer: 4 paths, chunks on >= 2, an RTT on >= 1 ($seen)" \
	[ "$seen" = "4 2+ 1+" ]
for _ in $(seq 40); do
	"$UCCLCTL" --socket "$SOCK_A" paths node-b 2>&1 | grep -q "idle (per-path state" && break
	sleep 0.05
done
expect "... and once idle it says the per-path state went" \
	eval '"$UCCLCTL" --socket "$SOCK_A" paths node-b | grep -q "idle (per-path state"'
out=$("$UCCLCTL" --socket "$SOCK_A" paths nowhere 2>&1)
expect "paths of a peer with no channel: exit 1, clear error ($out)" \
	eval '! "$UCCLCTL" --socket "$SOCK_A" paths nowhere >/dev/null 2>&1 &&
	      echo "$out" | grep -q "no data channel to .nowhere."'

# 2a. the same from memory each process registered (uccl_mem_reg): the
# daemons copy it with process_vm_readv/writev, the sender's read ahead
"$XFER" --socket "$SOCK_B" --quiet --vmem recv vbig >"$TMPD/vrecv.out" 2>&1 &
RP=$!
wait_ep "$SOCK_B" vbig || fail "receiver vbig never showed up at b"
rc=0; timeout 120 "$XFER" --socket "$SOCK_A" --vmem --bytes 256M send node-b/vbig \
	>"$TMPD/vsend.out" 2>&1 || rc=$?
wait $RP
rrc=$?
expect "256M from registered memory moved a->b and verified (rc $rc/$rrc)" \
	eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ] && grep -q "verified: .* chunks intact" "$TMPD/vsend.out"'

# 2b. the congestion controller of a live channel, at run time
out=$("$UCCLCTL" --socket "$SOCK_A" set-cc node-b dcqcn 2>&1)
expect "set-cc on a live channel ($out)" eval 'echo "$out" | grep -q "node-b: congestion control is now dcqcn"'
expect "channels shows the new CC on a, b keeps its own" \
	eval '[ "$(chan_field "$SOCK_A" cc)" = dcqcn ] && [ "$(chan_field "$SOCK_B" cc)" = window ]'
"$XFER" --socket "$SOCK_B" --quiet recv bigcc >/dev/null 2>&1 &
RP=$!
wait_ep "$SOCK_B" bigcc || fail "receiver bigcc never showed up at b"
"$XFER" --socket "$SOCK_A" --bytes 256M --quiet send node-b/bigcc >"$TMPD/sendcc.out" 2>&1 &
SP=$!
sleep 0.3
out=$("$UCCLCTL" --socket "$SOCK_A" set-cc node-b hint 2>&1)
expect "set-cc in the middle of a transfer ($out)" eval 'echo "$out" | grep -q "now hint"'
wait $SP
rc=$?
wait $RP
rrc=$?
expect "transfer across the switch verified (rc $rc/$rrc)" eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]'
expect "channel runs hint after the switch" [ "$(chan_field "$SOCK_A" cc)" = hint ]
"$UCCLCTL" --socket "$SOCK_A" set-cc node-b cubic >/dev/null 2>"$TMPD/cc.err" && fail "unknown CC accepted" ||
	expect "unknown CC: clear error naming the known ones ($(cat "$TMPD/cc.err"))" \
		grep -q "unknown congestion controller 'cubic' (known: window,swift,timely,dcqcn,hint,eqds,none)" "$TMPD/cc.err"
"$UCCLCTL" --socket "$SOCK_A" set-cc nowhere swift >/dev/null 2>"$TMPD/cc.err" && fail "unknown peer accepted" ||
	expect "unknown peer: clear error ($(cat "$TMPD/cc.err"))" grep -q "no peer named 'nowhere'" "$TMPD/cc.err"
if as_others_ok; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$UCCLCTL" --socket "$SOCK_A" set-cc node-b swift \
		>/dev/null 2>"$TMPD/cc.err" && fail "set-cc by uid 65534 accepted" ||
		expect "set-cc without the admin role is refused ($(cat "$TMPD/cc.err"))" \
			grep -q "needs the admin role" "$TMPD/cc.err"
	expect "... and changed nothing" [ "$(chan_field "$SOCK_A" cc)" = hint ]
else
	ok "# skip set-cc by a user without the admin role (needs root, and a build tree uid 65534 can read)"
fi
# the library call (through ctypes; a sanitizer build of the library needs
# its runtime loaded first into python)
preload=
if ldd "$top_builddir/client/.libs/libucclclient.so" 2>/dev/null | grep -q libasan; then
	preload=$(${CC:-gcc} -print-file-name=libasan.so)
fi
out=$(LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0 \
	python3 - "$top_builddir/client/.libs/libucclclient.so" "$SOCK_A" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.uccl_last_error.restype = ctypes.c_char_p
ctx = ctypes.c_void_p()
assert lib.uccl_attach(sys.argv[2].encode(), b"setcc", ctypes.byref(ctx)) == 0
r1 = lib.uccl_set_channel_cc(ctx, b"node-b", b"timely")
r2 = lib.uccl_set_channel_cc(ctx, b"node-b", b"reno")
print(r1, r2, lib.uccl_last_error(ctx).decode())
lib.uccl_detach(ctx)
EOF
)
expect "uccl_set_channel_cc: 0, then -EINVAL with the known names ($out)" \
	eval 'echo "$out" | grep -q "^0 -22 unknown congestion controller .reno. (known: window,"'
expect "channel runs timely after the library call" [ "$(chan_field "$SOCK_A" cc)" = timely ]
# a reload that gives node-b a peer_cc entry switches the live channel
echo "peer_cc = node-b=dcqcn" >>"$TMPD/a.conf"
kill -HUP "$PID_A"
for _ in $(seq 40); do [ "$(chan_field "$SOCK_A" cc)" = dcqcn ] && break; sleep 0.05; done
expect "reload of peer_cc switched the live channel to dcqcn" [ "$(chan_field "$SOCK_A" cc)" = dcqcn ]

# 3. clear errors
out=$("$XFER" --socket "$SOCK_A" --bytes 1M send nowhere/x 2>&1)
expect "unknown peer: clear error ($out)" eval 'echo "$out" | grep -q "no peer named .nowhere."'
t0=$(date +%s%N)
out=$(UCCL_SOCKET=$SOCK_A "$ITEST" connect node-b/nobody 500 2>&1)
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
expect "nobody listening: ECONNREFUSED after the timeout ($out, $ms ms)" \
	eval 'echo "$out" | grep -q "ECONNREFUSED" && [ "$ms" -ge 400 ] && [ "$ms" -lt 5000 ]'

# 4. forged packets towards b, from a port in a's range that a does not use
#    (one datagram carries two: each is judged on its own)
DPB=$(data_port b)
DPA=$(data_port a)
expect "data ports known ($DPA, $DPB)" eval '[ -n "$DPA" ] && [ -n "$DPB" ]'
mal0=$(chan_field "$SOCK_B" drop_malformed)
tok0=$(chan_field "$SOCK_B" drop_token)
"$XFER" --socket "$SOCK_B" --quiet recv big2 >"$TMPD/recv2.out" 2>&1 &
RP=$!
wait_ep "$SOCK_B" big2 || fail "receiver big2 never showed up at b"
"$XFER" --socket "$SOCK_A" --bytes 256M --quiet send node-b/big2 >"$TMPD/send2.out" 2>&1 &
SP=$!
python3 - "$DPA" "$DPB" <<'EOF'
import os, socket, struct, sys, time
src, dst = int(sys.argv[1]) + 6, int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", src))
def data(token, payload=b"x" * 64, ep=0, conn=0):
    h = struct.pack("<BBBBBBHIIQIIQQQQQQIIQ", 0x55, 5, 1, 0, 2, 0, 0, 1, len(payload), token,
                    ep, conn, 1, len(payload), 0, 0, 0, 0, 0, 0, 0)
    return h + payload
deadline = time.time() + 1.0
n = 0
while time.time() < deadline:
    s.sendto(os.urandom(200), ("127.0.0.1", dst))          # random bytes
    s.sendto(bytes([0x55, 5, 1, 0]) + b"\0" * 20, ("127.0.0.1", dst))  # truncated header
    s.sendto(data(int.from_bytes(os.urandom(8), "little")), ("127.0.0.1", dst))  # wrong token
    # one datagram of two packets: a wrong token, then a truncated one
    s.sendto(data(int.from_bytes(os.urandom(8), "little")) + bytes([0x55, 5, 2, 0]) + b"\0" * 9,
             ("127.0.0.1", dst))
    n += 5
    time.sleep(0.001)
print("forged", n, "packets")
EOF
wait $SP
rc=$?
wait $RP
rrc=$?
expect "transfer during forged traffic verified (rc $rc/$rrc)" eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]'
mal1=$(chan_field "$SOCK_B" drop_malformed)
tok1=$(chan_field "$SOCK_B" drop_token)
expect "malformed packets counted ($mal0 -> $mal1)" [ "$mal1" -gt "$mal0" ]
expect "wrong-token packets counted ($tok0 -> $tok1)" [ "$tok1" -gt "$tok0" ]
expect "daemon b still serving" "$UCCLCTL" --socket "$SOCK_B" status

# kill_midway VICTIM NAME: a 64G transfer of NAME from a to b; once data
# flows, daemon VICTIM (a or b) is killed. The client on the other side
# (the sender when b dies, the receiver when a dies) must then fail: its
# exit status in mid_rc, how long it took in mid_ms (its output printed);
# the killed side's client goes too.
kill_midway() {
	"$XFER" --socket "$SOCK_B" --quiet recv "$2" >"$TMPD/$2.recv" 2>&1 &
	RP=$!
	wait_ep "$SOCK_B" "$2" || fail "receiver $2 never showed up at b"
	rx0=$(chan_field "$SOCK_B" data_pkts_rx)
	"$XFER" --socket "$SOCK_A" --bytes 64G --quiet send "node-b/$2" >"$TMPD/$2.send" 2>&1 &
	SP=$!
	expect "data flows a->b before $1 is killed" wait_flowing "$SOCK_B" "$rx0"
	if [ "$1" = b ]; then
		kill -9 "$PID_B"
		waited=$SP other=$RP out=send
	else
		kill -9 "$PID_A"
		waited=$RP other=$SP out=recv
	fi
	t0=$(date +%s%N)
	wait "$waited"
	mid_rc=$?
	mid_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	kill -9 "$other" 2>/dev/null
	wait "$other" 2>/dev/null
	cat "$TMPD/$2.$out"
}

# 4c. a connect with timeout 0 to a listener that is there succeeds even
# when the other daemon is slow to answer (it was given 1 ms and failed)
UCCL_SOCKET=$SOCK_B "$ITEST" hold late0 >"$TMPD/late0.out" 2>&1 &
HP=$!
BG_PIDS="$BG_PIDS $HP"
expect "b: a listener on late0" wait_ep "$SOCK_B" late0
kill -STOP "$PID_B"
UCCL_SOCKET=$SOCK_A "$ITEST" connect node-b/late0 0 >"$TMPD/late0c.out" 2>&1 &
CP=$!
sleep 0.3
kill -CONT "$PID_B"
wait "$CP"
expect "connect with timeout 0 waits for b's answer ($(cat "$TMPD/late0c.out"))" \
	grep -q "late0: ok" "$TMPD/late0c.out"
kill "$HP" 2>/dev/null
wait "$HP" 2>/dev/null

# 5. kill b mid-transfer: the sender fails in bounded time, a keeps going
kill_midway b big3
rc=$mid_rc ms=$mid_ms
expect "sender failed after b died (rc $rc) in $ms ms (bound 15000)" eval '[ "$rc" -ne 0 ] && [ "$ms" -lt 15000 ]'
expect "daemon a still serving" "$UCCLCTL" --socket "$SOCK_A" status
for _ in $(seq 60); do [ "$(chan_field "$SOCK_A" peer)" = none ] && break; sleep 0.1; done
expect "a dropped the channel to b" [ "$(chan_field "$SOCK_A" peer)" = none ]
# a configured peer that is down: the connect waits out its timeout for
# the peer to come back, then fails saying so
t0=$(date +%s%N)
out=$(UCCL_SOCKET=$SOCK_A "$ITEST" connect node-b/x 500 2>&1)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect "connect to node-b while it is down: EHOSTUNREACH after its 500 ms timeout ($ms ms; $out)" \
	eval 'echo "$out" | grep -q "EHOSTUNREACH.*peer node-b is not connected" &&
	      [ "$ms" -ge 250 ] && [ "$ms" -lt 5000 ]'
out=$("$UCCLCTL" --socket "$SOCK_A" set-cc node-b window 2>&1)
expect "set-cc for a peer that is down is remembered ($out)" \
	eval 'echo "$out" | grep -q "node-b: not up; its channel will start with window"'

# 6. restart b and connect again
start b
expect "channel a->b up again" wait_chan "$SOCK_A"
expect "... running the CC set while it was down" [ "$(chan_field "$SOCK_A" cc)" = window ]
"$XFER" --socket "$SOCK_B" --quiet recv big4 >/dev/null 2>&1 &
RP=$!
wait_ep "$SOCK_B" big4 || fail "receiver big4 never showed up at b"
"$XFER" --socket "$SOCK_A" --bytes 64M --quiet send node-b/big4 >"$TMPD/send4.out" 2>&1
rc=$?
wait $RP
rrc=$?
expect "transfer to the restarted b verified (rc $rc/$rrc)" eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]'

# 7. kill a, the sender's daemon, mid-transfer: the receiver on b fails in
#    bounded time, b keeps serving, and a comes back (data flowing: the
#    receiver is past its accept and waits for chunks)
kill_midway a big5
rrc=$mid_rc ms=$mid_ms
expect "receiver on b failed after a died (rc $rrc) in $ms ms (bound 15000)" \
	eval '[ "$rrc" -ne 0 ] && [ "$ms" -lt 15000 ]'
expect "daemon b still serving" "$UCCLCTL" --socket "$SOCK_B" status
start a
expect "channel b->a up again" wait_chan "$SOCK_B"

finish_pair
