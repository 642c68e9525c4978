#!/bin/sh
# SPDX-License-Identifier: MIT
# Two daemons on 127.0.0.1 with engine_threads = 2 each (data ports picked
# by the kernel, per thread). Endpoints are placed on the thread with the
# fewest; verified transfers run between every pair (thread of a, thread
# of b) and each of a's four sub-channels is seen carrying them; one
# transfer split over two endpoint pairs (uccl_xfer --streams 2, the
# endpoints asked onto threads 0 and 1) uses sub-channels 0>0 and 1>1; ucclctl
# shows 2 threads and the 2 x 2 sub-channels, and ucclctl paths the two
# busy ones path by path while it runs; same-host connections move
# verified data between threads (over the channel between them) and within
# a thread, and kill -9 of one side resets the other; kill -9 of b fails
# a's pending transfer in bounded time, a restarted b is reached again on
# every sub-channel, and so is a b restarted with one thread. Without
# peering, a daemon with two threads opens a loopback data plane for the
# channels between them and a connection between threads moves verified
# data; engine_cpus pins each thread. No root needed.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
TIMEOUT_MS=1000

set -- $(free_ports 2)
PA=$1 PB=$2

write_conf() { # write_conf FILE NAME PORT
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		echo "host_name = $2"
		echo "data_paths = 2"
		echo "engine_threads = 2"
		echo "peer_timeout_ms = $TIMEOUT_MS"
	} >"$1"
}
write_conf "$TMPD/a.conf" node-a "$PA"
write_conf "$TMPD/b.conf" node-b "$PB"
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
PID_A= PID_B=


# chans SOCK: "thread>remote_thread:data_pkts_tx" of every sub-channel, sorted
chans() {
	timeout 10 "$UCCLCTL" --socket "$1" --json channels 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted("%d>%d:%d" % (c["thread"], c["remote_thread"], c["data_pkts_tx"])
                      for c in d["channels"] if c["peer"] != "(self)")))'
}
# tx SOCK I J: data packets sent so far on sub-channel (our I, its J)
tx() { chans "$1" | tr ' ' '\n' | sed -n "s/^$2>$3://p"; }
# xtx SOCK I K: data packets sent on the channel from our thread I to our K
xtx() {
	timeout 10 "$UCCLCTL" --socket "$1" --json channels 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(c["data_pkts_tx"] for c in d["channels"]
          if c["peer"] == "(self)" and c["thread"] == int(sys.argv[1])
          and c["remote_thread"] == int(sys.argv[2])))' "$2" "$3"
}
# nep SOCK: endpoints of the daemon
nep() {
	"$UCCLCTL" --socket "$1" --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d.get("status", d)["endpoints"])'
}

start a
start b
expect "a: 2 x 2 sub-channels up" wait_nchans "$SOCK_A" 4
expect "b: 2 x 2 sub-channels up" wait_nchans "$SOCK_B" 4
n=$("$UCCLCTL" --socket "$SOCK_A" --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d.get("status", d)["engine_threads"])')
expect "status shows 2 engine threads ($n)" [ "$n" = 2 ]
expect "status text shows them" eval '"$UCCLCTL" --socket "$SOCK_A" status | grep -q "engine threads: *2"'
expect "channels table has THR and PEER THR columns" \
	eval '"$UCCLCTL" --socket "$SOCK_A" channels | head -n 1 | grep -q "CHAN *THR *PEER *PEER THR"'
# stats gathers every thread's counters and asks for no endpoint's (its
# arrays were NULL, copied with length 0: a UBSan runtime error killed the
# sanitizer build's daemon here)
expect "stats answers with 2 engine threads" \
	eval '"$UCCLCTL" --socket "$SOCK_A" --json stats | python3 -c "import json, sys; json.load(sys.stdin)"'
expect "... and the daemon still serves" eval '"$UCCLCTL" --socket "$SOCK_A" status >/dev/null'

# 1. four listeners on b, placed 0,1,0,1
RPIDS=
for k in 0 1 2 3; do
	"$XFER" --socket "$SOCK_B" --quiet recv "r$k" >"$TMPD/recv$k.out" 2>&1 &
	RPIDS="$RPIDS $!"
	expect "b: listener r$k is up" wait_ep "$SOCK_B" "r$k"
done
t=$(for k in 0 1 2 3; do ep_thread "$SOCK_B" "r$k"; done | tr -d '\n')
expect "b: endpoints spread over the threads, fewest first (0101: $t)" [ "$t" = 0101 ]

# 2. a sender on each thread of a to a listener on each thread of b. With
# no endpoint on a the sender runs on thread 0; with the anchor (a local
# listener, thread 0) it runs on thread 1.
xfer_to() { # xfer_to NAME I J: a verified transfer; sub-channel (I, J) carried it
	local before after rc
	before=$(tx "$SOCK_A" "$2" "$3")
	"$XFER" --socket "$SOCK_A" --bytes 32M --quiet send "node-b/$1" >"$TMPD/send-$1.out" 2>&1
	rc=$?
	after=$(tx "$SOCK_A" "$2" "$3")
	expect "a thread $2 -> b thread $3 ($1): 32M verified (rc $rc)" [ "$rc" -eq 0 ]
	expect "... over sub-channel $2>$3 ($before -> $after data packets)" [ "$after" -gt "$before" ]
}
xfer_to r0 0 0
xfer_to r1 0 1
"$XFER" --socket "$SOCK_A" --quiet recv anchor >"$TMPD/anchor.out" 2>&1 &
APID=$!
expect "a: anchor listener up" wait_ep "$SOCK_A" anchor
expect "a: anchor on thread 0" [ "$(ep_thread "$SOCK_A" anchor)" = 0 ]
xfer_to r2 1 0
xfer_to r3 1 1
for p in $RPIDS; do
	wait "$p"
	expect "b: receiver $p verified every chunk" [ "$?" -eq 0 ]
done
echo "sub-channels of a after the transfers: $(chans "$SOCK_A")"
echo "sub-channels of b after the transfers: $(chans "$SOCK_B")"

# 2b. one transfer split over two endpoint pairs (uccl_xfer --streams 2):
# stream i's endpoints run on thread i of both daemons (UCCL_EP_THREAD,
# whatever the placement by count would say: the anchor holds thread 0 of
# a), so sub-channels 0>0 and 1>1 both carry it
"$XFER" --socket "$SOCK_B" --quiet --streams 2 recv split >"$TMPD/srecv.out" 2>&1 &
SRP=$!
expect "b: split listeners up" eval 'wait_ep "$SOCK_B" split.0 && wait_ep "$SOCK_B" split.1'
expect "b: split.1 on thread 1" [ "$(ep_thread "$SOCK_B" split.1)" = 1 ]
b00=$(tx "$SOCK_A" 0 0) b11=$(tx "$SOCK_A" 1 1)
"$XFER" --socket "$SOCK_A" --bytes 1G --streams 2 send node-b/split >"$TMPD/ssend.out" 2>&1 &
SSP=$!
# meanwhile ucclctl paths: one row per sub-channel, each thread's engine
# filling its own rows (those that carry chunks show their 2 paths)
seen=$(snap_while $SSP "$SOCK_A" "paths node-b" "'%d %d %s' % (len(d['channels']),
	sum(len(c['path_stats']) not in (0, c['paths']) for c in d['channels']),
	','.join(sorted('%d>%d' % (c['thread'], c['remote_thread']) for c in d['channels']
			if any(p['sent_chunks'] for p in c['path_stats']))) or '-')" "4 0 0>0,1>1")
wait $SSP
rc=$?
wait $SRP
rrc=$?
cat "$TMPD/ssend.out"
expect "ucclctl paths while it runs: 4 rows, 0>0 and 1>1 busy ($seen)" [ "$seen" = "4 0 0>0,1>1" ]
a00=$(tx "$SOCK_A" 0 0) a11=$(tx "$SOCK_A" 1 1)
expect "1G split over 2 streams, verified (rc $rc/$rrc)" eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]'
expect "the sender reports stream 1 on engine thread 1" grep -q "^stream  1: 512 MiB .* engine thread 1$" "$TMPD/ssend.out"
expect "sub-channel 0>0 carried it ($b00 -> $a00)" [ "$a00" -gt "$b00" ]
expect "sub-channel 1>1 carried it ($b11 -> $a11)" [ "$a11" -gt "$b11" ]

# 3. same host: across threads over the channels between them, within a
# thread joined in memory; both verified
before=$(xtx "$SOCK_A" 1 0)
"$XFER" --socket "$SOCK_A" --bytes 32M --quiet send anchor >"$TMPD/xlocal.out" 2>&1
rc=$?
wait $APID
arc=$?
after=$(xtx "$SOCK_A" 1 0)
cat "$TMPD/xlocal.out"
expect "local connection thread 1 -> thread 0: 32M verified (rc $rc/$arc)" eval '[ "$rc" -eq 0 ] && [ "$arc" -eq 0 ]'
expect "... over the channel between them ($before -> $after data packets)" [ "$after" -gt "$before" ]
"$XFER" --socket "$SOCK_A" --quiet recv anchor >"$TMPD/anchor.out" 2>&1 &
APID=$!
expect "a: anchor listener up again" wait_ep "$SOCK_A" anchor
expect "a: ... on thread 0" [ "$(ep_thread "$SOCK_A" anchor)" = 0 ]
"$XFER" --socket "$SOCK_A" --quiet recv pad >/dev/null 2>&1 &
PADPID=$!
expect "a: second listener up" wait_ep "$SOCK_A" pad
expect "a: ... on thread 1" [ "$(ep_thread "$SOCK_A" pad)" = 1 ]
"$XFER" --socket "$SOCK_A" --bytes 16M --quiet send anchor >"$TMPD/local.out" 2>&1
rc=$?
wait $APID
arc=$?
expect "local connection within thread 0: 16M verified (rc $rc/$arc)" eval '[ "$rc" -eq 0 ] && [ "$arc" -eq 0 ]'
kill $PADPID 2>/dev/null
wait $PADPID 2>/dev/null

# 3b. kill -9 of one side of a connection between threads: the other
# side's pending receive fails with ECONNRESET
for _ in $(seq 100); do [ "$(nep "$SOCK_A")" = 0 ] && break; sleep 0.05; done
UCCL_SOCKET=$SOCK_A "$ITEST" hold xh >"$TMPD/hold.out" 2>&1 &
HP=$!
expect "a: holder up" wait_ep "$SOCK_A" xh
expect "a: holder on thread 0" [ "$(ep_thread "$SOCK_A" xh)" = 0 ]
UCCL_SOCKET=$SOCK_A "$ITEST" peer xh >"$TMPD/peer.out" 2>&1 &
PP=$!
for _ in $(seq 100); do grep -q ready "$TMPD/hold.out" && grep -q ready "$TMPD/peer.out" && break; sleep 0.05; done
expect "holder (thread 0) and peer (thread 1) connected" eval 'grep -q ready "$TMPD/hold.out" && grep -q ready "$TMPD/peer.out"'
kill -9 $HP
wait $HP 2>/dev/null
wait $PP
rc=$?
cat "$TMPD/peer.out"
expect "peer's pending recv failed with ECONNRESET after the holder died (rc $rc)" [ "$rc" -eq 0 ]

# 4. kill -9 b mid-transfer: a's sender fails in bounded time
"$XFER" --socket "$SOCK_B" --quiet recv big >/dev/null 2>&1 &
RP=$!
expect "b: listener big up" wait_ep "$SOCK_B" big
"$XFER" --socket "$SOCK_A" --bytes 64G --quiet send node-b/big >"$TMPD/send-big.out" 2>&1 &
SP=$!
sleep 1
kill -9 "$PID_B"
t0=$(date +%s%N)
wait $SP
rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
kill -9 $RP 2>/dev/null
wait $RP 2>/dev/null
expect "sender failed after b died (rc $rc) in $ms ms (bound 15000)" eval '[ "$rc" -ne 0 ] && [ "$ms" -lt 15000 ]'
expect "a dropped every sub-channel to b" wait_nchans "$SOCK_A" 0
expect "daemon a still serving" eval '"$UCCLCTL" --socket "$SOCK_A" status >/dev/null'

# 5. restart b: all four sub-channels again, a transfer to each thread of b
start b
expect "a: 2 x 2 sub-channels up again" wait_nchans "$SOCK_A" 4
for k in 0 1; do
	"$XFER" --socket "$SOCK_B" --quiet recv "again$k" >/dev/null 2>&1 &
	eval "RP$k=\$!"
	expect "b: listener again$k up" wait_ep "$SOCK_B" "again$k"
done
xfer_to again0 0 0
xfer_to again1 0 1
wait $RP0; r0=$?
wait $RP1; r1=$?
expect "restarted b's receivers verified (rc $r0/$r1)" eval '[ "$r0" -eq 0 ] && [ "$r1" -eq 0 ]'

# 6. b back with one engine thread: a keeps 2 x 1 sub-channels, both of
# a's threads reach b's only one
kill -TERM "$PID_B"
wait "$PID_B"
expect "a dropped the sub-channels to b" wait_nchans "$SOCK_A" 0
sed -i 's/^engine_threads = 2$/engine_threads = 1/' "$TMPD/b.conf"
start b
expect "a: 2 x 1 sub-channels to the one-thread b" wait_nchans "$SOCK_A" 2
expect "b: 1 x 2 sub-channels to a" wait_nchans "$SOCK_B" 2
"$XFER" --socket "$SOCK_B" --quiet recv one0 >/dev/null 2>&1 &
RP0=$!
expect "b: listener one0 up" wait_ep "$SOCK_B" one0
xfer_to one0 0 0
"$XFER" --socket "$SOCK_A" --quiet recv anchor2 >/dev/null 2>&1 &
APID=$!
expect "a: anchor2 up" wait_ep "$SOCK_A" anchor2
"$XFER" --socket "$SOCK_B" --quiet recv one1 >/dev/null 2>&1 &
RP1=$!
expect "b: listener one1 up" wait_ep "$SOCK_B" one1
xfer_to one1 1 0
wait $RP0; r0=$?
wait $RP1; r1=$?
expect "one-thread b's receivers verified (rc $r0/$r1)" eval '[ "$r0" -eq 0 ] && [ "$r1" -eq 0 ]'
kill $APID 2>/dev/null
wait $APID 2>/dev/null

# 7. without peering, two threads still get a data plane (loopback, for
# the channels between them): a connection between threads moves verified
# data (and the threads are pinned as engine_cpus says, in reverse order)
echo "engine_threads = 2" >"$TMPD/c.conf"
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] && echo "engine_cpus = 1, 0" >>"$TMPD/c.conf"
start_named c
PID_C=$STARTED_PID
SOCK_C=$TMPD/rc/ucclsvcd.sock
# cpus NAME: the CPUs the daemon's thread NAME may run on
cpus() {
	for t in /proc/$PID_C/task/*; do
		[ "$(cat "$t/comm")" = "$1" ] && sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status"
	done
}
if [ "$NCPU" -ge 2 ]; then
	expect "c: uccl-engine pinned to cpu 1 ($(cpus uccl-engine))" [ "$(cpus uccl-engine)" = 1 ]
	expect "c: uccl-engine1 pinned to cpu 0 ($(cpus uccl-engine1))" [ "$(cpus uccl-engine1)" = 0 ]
else
	ok "# skip engine_cpus pinning (one CPU)"
fi
expect "c: loopback data plane, no peering" \
	grep -q "data plane on udp 127.0.0.1:.*no peering: between this daemon's threads only" "$TMPD/c.log"
"$XFER" --socket "$SOCK_C" --quiet recv cx >"$TMPD/cx.out" 2>&1 &
CX=$!
expect "c: listener up" wait_ep "$SOCK_C" cx
expect "c: listener on thread 0" [ "$(ep_thread "$SOCK_C" cx)" = 0 ]
"$XFER" --socket "$SOCK_C" --bytes 32M --quiet send cx >"$TMPD/cx-send.out" 2>&1
rc=$?
wait $CX
rcx=$?
expect "c: thread 1 -> thread 0 without peering: 32M verified (rc $rc/$rcx; $(tail -n 1 "$TMPD/cx-send.out"))" \
	eval '[ "$rc" -eq 0 ] && [ "$rcx" -eq 0 ]'
n=$(xtx "$SOCK_C" 1 0)
expect "c: the channel from thread 1 to thread 0 carried it ($n data packets)" [ "${n:-0}" -gt 0 ]
stop_named c "$PID_C"

# 16 threads on both sides: 16 x 16 sub-channels to the peer and 16 x 15
# between our own threads, more than the 256 rows a reply lists: the rest
# are counted, not silently left out
set -- $(free_ports 2)
PD=$1 PE=$2
for n in d e; do
	{
		echo "peer_listen = 127.0.0.1:$([ $n = d ] && echo "$PD" || echo "$PE")"
		echo "peers = node-d=127.0.0.1:$PD, node-e=127.0.0.1:$PE"
		echo "host_name = node-$n"
		echo "data_paths = 2"
		echo "engine_threads = 16"
	} >"$TMPD/$n.conf"
done
start_named d
PID_D=$STARTED_PID
start_named e
PID_E=$STARTED_PID
SOCK_D=$TMPD/rd/ucclsvcd.sock
rows() { ctl_py "$SOCK_D" channels "'%d %d' % (len(d['channels']), d['left_out'])"; }
for _ in $(seq 200); do [ "$(rows)" = "256 240" ] && break; sleep 0.1; done
expect "d: 496 sub-channels, 256 listed and 240 counted ($(rows))" [ "$(rows)" = "256 240" ]
expect "... and the text says so" \
	eval '"$UCCLCTL" --socket "$SOCK_D" channels | grep -q "^(240 more sub-channels not listed"'
stop_named d "$PID_D"
stop_named e "$PID_E"
finish_pair
