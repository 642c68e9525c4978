#!/bin/sh
# SPDX-License-Identifier: MIT
# Two daemons in two network namespaces joined by a veth pair (MTU 9000):
# verified transfers of XFER_BYTES (default 1 GiB) a->b under 0%, 0.1% and
# 1% random packet loss (an nftables numgen rule in b's input chain; at 1%
# a's input drops 0.1% of b's acknowledgements too), each checked to have
# really lost packets and repaired them; then daemon b killed mid-transfer
# (the sender fails within a bounded time), restarted, and connected to
# again; then b's data plane cut off alone until a's channel gives up, and a
# new connection made over rebuilt channels (and the same with a's data
# plane cut off while b sends, and a connecting); then a's veth MTU cut
# below the channel's, so that the kernel refuses a's GSO sends: the data
# still arrives and ucclctl says so. Offloads are turned off on the
# veths (when ethtool exists) so that nftables drops single packets, not
# whole GSO bursts.
# Needs root, ip netns and nft; exits 77 otherwise.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
XFER_BYTES=${XFER_BYTES:-1G}
XFER_LIMIT=${XFER_LIMIT:-120}  # seconds one transfer may take
KILL_BOUND_MS=15000

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null 2>&1 && ip netns list >/dev/null 2>&1 || skip "no 'ip netns'"
command -v nft >/dev/null 2>&1 || skip "no nft (nftables) for the loss rules"

# Names unique to this run; the subnet is not 10.77.0.0/24 (benchmarks').
NS1=uccl-$$-a NS2=uccl-$$-b
V1=uccla$$ V2=ucclb$$
NET=10.78.$(($$ % 250))
IP1=$NET.1 IP2=$NET.2
PA=7471 PB=7472

CLIENT_PIDS=
netns_cleanup() {
	# clients run under timeout(1), which passes SIGTERM on to them
	for p in $CLIENT_PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done
	ip netns del "$NS1" 2>/dev/null
	ip netns del "$NS2" 2>/dev/null
	cleanup
}
trap netns_cleanup EXIT
trap 'exit 1' HUP INT TERM

nsx() { timeout 10 ip netns exec "$@"; }   # nsx NS CMD...: a short command in NS

ip netns add "$NS1" 2>/dev/null || skip "cannot create a network namespace"
ip netns add "$NS2" 2>/dev/null || skip "cannot create a second network namespace"
ip link add "$V1" netns "$NS1" type veth peer name "$V2" netns "$NS2" || skip "cannot create a veth pair"
for x in "$NS1 $V1 $IP1" "$NS2 $V2 $IP2"; do
	set -- $x
	ip -n "$1" link set lo up &&
		ip -n "$1" link set "$2" mtu 9000 &&
		ip -n "$1" addr add "$3/24" dev "$2" &&
		ip -n "$1" link set "$2" up || skip "cannot configure $2 in $1"
done
if command -v ethtool >/dev/null 2>&1; then
	if nsx "$NS1" ethtool -K "$V1" tso off gso off tx-udp-segmentation off gro off &&
		nsx "$NS2" ethtool -K "$V2" tso off gso off tx-udp-segmentation off gro off; then
		echo "offloads off on $V1/$V2: nft drops single packets"
	else
		echo "ethtool -K failed: some offloads may stay on; nft may drop whole GSO bursts"
	fi
else
	echo "no ethtool: offloads stay on; nft drops whole GSO bursts"
fi
for ns in "$NS1" "$NS2"; do
	nsx "$ns" nft add table inet uccl &&
		nsx "$ns" nft add chain inet uccl in '{ type filter hook input priority 0; }' ||
		skip "nftables does not work in a network namespace"
done

write_conf() { # write_conf FILE NAME ADDRESS:PORT
	{
		echo "peer_listen = $3"
		echo "peers = node-a=$IP1:$PA, node-b=$IP2:$PB"
		echo "host_name = $2"
		echo "data_port = 0"
		echo "mtu = 9000"
		echo "peer_timeout_ms = 2000"
	} >"$1"
}
write_conf "$TMPD/a.conf" node-a "$IP1:$PA"
write_conf "$TMPD/b.conf" node-b "$IP2:$PB"
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
PID_A= PID_B=


start() { # start a|b: the daemon inside its namespace (ucclctl reaches its
	# socket from anywhere: it is a path)
	local ns=$NS1
	[ "$1" = b ] && ns=$NS2
	start_named "$1" ip netns exec "$ns"
	if [ "$1" = a ]; then PID_A=$STARTED_PID; else PID_B=$STARTED_PID; fi
}
snap() { timeout 10 "$UCCLCTL" --socket "$1" --json channels >"$2" 2>/dev/null; } # snap SOCK FILE
delta() { # delta OLD NEW FIELD...: how much each FIELD of the channel grew
	python3 - "$@" <<'EOF'
import json, sys
def chan(f):
    try:
        c = json.load(open(f))["channels"]
    except (OSError, ValueError, KeyError):
        return {}
    return c[0] if c else {}
old, new = chan(sys.argv[1]), chan(sys.argv[2])
fields = sys.argv[3:]
if len(fields) == 1:
    print(new.get(fields[0], 0) - old.get(fields[0], 0))
else:
    print(", ".join("%s +%d" % (f, new.get(f, 0) - old.get(f, 0)) for f in fields))
EOF
}

# set_loss NS PERMILLE: the only rule in NS's input chain drops PERMILLE/1000
# of UDP packets at random (0: no rule; 1000: every one; "big": every one
# over 1200 bytes, that is data packets, not acknowledgements)
set_loss() {
	nsx "$1" nft flush chain inet uccl in || fail "nft flush in $1"
	if [ "$2" = big ]; then
		nsx "$1" nft add rule inet uccl in meta l4proto udp meta length gt 1200 counter drop ||
			fail "nft rule in $1"
		return
	fi
	[ "$2" -eq 0 ] && return 0
	if [ "$2" -ge 1000 ]; then
		nsx "$1" nft add rule inet uccl in meta l4proto udp counter drop || fail "nft rule in $1"
		return
	fi
	nsx "$1" nft add rule inet uccl in meta l4proto udp numgen random mod 1000 '<' "$2" counter drop ||
		fail "nft rule in $1"
}
dropped() { # dropped NS: packets the rule in NS dropped
	local n
	n=$(nsx "$1" nft list chain inet uccl in | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | head -n 1)
	echo "${n:-0}"
}

# run_xfer NAME BYTES [--quiet]: a->b verified transfer, clients inside their
# daemons' namespaces; sets XRC (sender) and XRRC (receiver)
run_xfer() {
	local rp
	timeout $((XFER_LIMIT + 40)) ip netns exec "$NS2" "$XFER" --socket "$SOCK_B" recv "$1" \
		>"$TMPD/recv-$1.out" 2>&1 &
	rp=$!
	CLIENT_PIDS="$CLIENT_PIDS $rp"
	for _ in $(seq 100); do
		grep -q listening "$TMPD/recv-$1.out" && break
		sleep 0.05
	done
	timeout "$XFER_LIMIT" ip netns exec "$NS1" "$XFER" --socket "$SOCK_A" --bytes "$2" ${3:-} \
		send "node-b/$1" >"$TMPD/send-$1.out" 2>&1
	XRC=$?
	wait $rp
	XRRC=$?
}

# start_endless NAME [b2a]: a 64 GiB a->b (or b->a) transfer in the
# background, running for a second already (RP: receiver's pid, SP:
# sender's); bounded at 60 s
start_endless() {
	local rns=$NS2 rsock=$SOCK_B sns=$NS1 ssock=$SOCK_A to=node-b

	if [ "${2:-}" = b2a ]; then
		rns=$NS1 rsock=$SOCK_A sns=$NS2 ssock=$SOCK_B to=node-a
	fi
	timeout 60 ip netns exec "$rns" "$XFER" --socket "$rsock" recv "$1" >"$TMPD/recv-$1.out" 2>&1 &
	RP=$!
	CLIENT_PIDS="$CLIENT_PIDS $RP"
	for _ in $(seq 100); do grep -q listening "$TMPD/recv-$1.out" && break; sleep 0.05; done
	timeout 60 ip netns exec "$sns" "$XFER" --socket "$ssock" --bytes 64G --quiet send "$to/$1" \
		>"$TMPD/send-$1.out" 2>&1 &
	SP=$!
	CLIENT_PIDS="$CLIENT_PIDS $SP"
	sleep 1
}

# cut_data NS WHO [big|1000 [wait]]: drop every UDP packet into NS (or every
# data packet: big) until the endless transfer's sender (WHO's) fails (10 s
# at most) and, with wait, until either daemon's log says a channel gave up
# (10 s more at most), then let them through again and stop the receiver
# gaveup: how many times the daemons' logs say a channel gave up
gaveup() { cat "$TMPD/a.log" "$TMPD/b.log" | grep -c "a data channel gave up while the peer stayed connected"; }
cut_data() {
	local t0 rc ms g0
	g0=$(gaveup)
	set_loss "$1" "${3:-1000}"
	t0=$(date +%s%N)
	for _ in $(seq 200); do kill -0 "$SP" 2>/dev/null || break; sleep 0.05; done
	wait $SP
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	# wait: keep the cut until a daemon's channel gave up (its log says so
	# as it restarts the peer), not only until the transfer ended, which
	# it may do first by a reset from the other side
	if [ -n "${4:-}" ]; then
		for _ in $(seq 100); do
			[ "$(gaveup)" -gt "$g0" ] && break
			sleep 0.1
		done
	fi
	set_loss "$1" 0
	kill -TERM $RP 2>/dev/null
	wait $RP 2>/dev/null
	expect "$2's transfer failed when the data plane went away (rc $rc) in $ms ms (bound 10000)" \
		eval '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$ms" -lt 10000 ]'
}

# stop DAEMON PID: SIGTERM must make it exit 0 within 10 s
stop() {
	local rc=0 i
	kill -TERM "$2"
	for i in $(seq 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$2" 2>/dev/null; then
		fail "daemon $1 still running 10 s after SIGTERM"; kill -9 "$2"
	fi
	wait "$2" || rc=$?
	expect "daemon $1 exits 0 on SIGTERM (rc $rc)" [ "$rc" -eq 0 ]
}

finish_both() {
	if [ "$FAILS" -ne 0 ]; then
		echo "--- a.log ---"; cat "$TMPD/a.log"; echo "--- b.log ---"; cat "$TMPD/b.log"
		exit 1
	fi
	exit 0
}

start a
start b
expect "channel a->b up over the veth" wait_chan "$SOCK_A" 200
expect "channel b->a up over the veth" wait_chan "$SOCK_B" 200
expect "channel MTU 9000 ($(chan_field "$SOCK_A" mtu))" [ "$(chan_field "$SOCK_A" mtu)" = 9000 ]

# 1. transfers under 0%, 0.1% and 1% loss towards b (at 1%, 0.1% of the
# acknowledgements towards a as well)
for permille in 0 1 10; do
	pct=$(echo "$permille" | awk '{ printf "%g%%", $1 / 10 }')
	set_loss "$NS2" "$permille"
	if [ "$permille" -eq 10 ]; then set_loss "$NS1" 1; else set_loss "$NS1" 0; fi
	snap "$SOCK_A" "$TMPD/a0.json"
	snap "$SOCK_B" "$TMPD/b0.json"
	t0=$(date +%s%N)
	run_xfer "loss$permille" "$XFER_BYTES"
	t1=$(date +%s%N)
	grep '^transfer:' "$TMPD/send-loss$permille.out"
	expect "loss $pct: $XFER_BYTES a->b verified by the sender (rc $XRC, $(( (t1 - t0) / 1000000 )) ms)" \
		[ "$XRC" -eq 0 ]
	expect "loss $pct: the receiver verified every chunk (rc $XRRC)" [ "$XRRC" -eq 0 ]
	if [ "$XRC" -ne 0 ] || [ "$XRRC" -ne 0 ]; then
		cat "$TMPD/send-loss$permille.out" "$TMPD/recv-loss$permille.out"
	fi
	snap "$SOCK_A" "$TMPD/a1.json"
	snap "$SOCK_B" "$TMPD/b1.json"
	drop_b=$(dropped "$NS2")
	drop_a=$(dropped "$NS1")
	retx=$(delta "$TMPD/a0.json" "$TMPD/a1.json" retx_pkts)
	dup=$(delta "$TMPD/b0.json" "$TMPD/b1.json" dup_pkts_rx)
	echo "loss $pct: nft dropped $drop_b packets towards b and $drop_a towards a"
	echo "  a: $(delta "$TMPD/a0.json" "$TMPD/a1.json" data_pkts_tx retx_pkts retx_timeouts fast_retx acks_rx nacks_rx)"
	echo "  b: $(delta "$TMPD/b0.json" "$TMPD/b1.json" data_pkts_rx dup_pkts_rx acks_tx nacks_tx)"
	# a retransmission that b had already received arrives as a duplicate;
	# the others replaced packets that were lost
	echo "  retransmissions that repaired a loss: $((retx - dup))"
	if [ "$permille" -gt 0 ]; then
		expect "loss $pct: packets were dropped ($drop_b)" [ "$drop_b" -gt 0 ]
		expect "loss $pct: a retransmitted ($retx packets)" [ "$retx" -gt 0 ]
		expect "loss $pct: retransmissions repaired losses ($((retx - dup)))" [ $((retx - dup)) -gt 0 ]
	fi
	if [ "$permille" -eq 10 ]; then
		expect "loss $pct: acknowledgements were dropped too ($drop_a)" [ "$drop_a" -gt 0 ]
	fi
done
set_loss "$NS1" 0
set_loss "$NS2" 0

# 2. kill b mid-transfer: the sender fails in bounded time
start_endless big
t0=$(date +%s%N)
kill -9 "$PID_B"
wait "$PID_B" 2>/dev/null
wait $SP
rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
kill -TERM $RP 2>/dev/null
wait $RP 2>/dev/null
expect "sender failed after b died (rc $rc) in $ms ms (bound $KILL_BOUND_MS)" \
	eval '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$ms" -lt "$KILL_BOUND_MS" ]'
cat "$TMPD/send-big.out"
expect "daemon a still serving" eval 'timeout 10 "$UCCLCTL" --socket "$SOCK_A" status >/dev/null'
for _ in $(seq 100); do [ "$(chan_field "$SOCK_A" peer)" = none ] && break; sleep 0.1; done
expect "a dropped the channel to b" [ "$(chan_field "$SOCK_A" peer)" = none ]

# 3. restart b in its namespace and move data again
start b
expect "channel a->b up again" wait_chan "$SOCK_A" 200
run_xfer again 64M --quiet
expect "transfer to the restarted b verified (rc $XRC/$XRRC)" eval '[ "$XRC" -eq 0 ] && [ "$XRRC" -eq 0 ]'

# 4. the data plane alone goes away (every UDP packet into b dropped; the
# peers' TCP control connection stays up) for longer than the channels keep
# retransmitting: the transfer fails, and the first daemon whose channel
# gives up restarts the peer on its own (a, whose data is lost, or b, whose
# slot signals go unacknowledged: whichever is first), so that the other's
# sides are reset too (one could be waiting for data that will not come);
# the next connection is made over the rebuilt channels (a failed channel
# once refused every new connection for as long as the control connection
# lasted)
g0=$(gaveup)
start_endless cut
cut_data "$NS2" a 1000 wait
cat "$TMPD/send-cut.out"
expect "a daemon restarted the peer on its own when its channel gave up ($g0 -> $(gaveup))" \
	[ "$(gaveup)" -gt "$g0" ]
expect "channel a->b up again" wait_chan "$SOCK_A" 200
run_xfer after-cut 64M --quiet
expect "transfer over the rebuilt channels verified (rc $XRC/$XRRC)" \
	eval '[ "$XRC" -eq 0 ] && [ "$XRRC" -eq 0 ]'
expect "a's rebuilt channel is not failed" [ "$(chan_field "$SOCK_A" failed)" = False ]
[ "$XRC" -eq 0 ] || cat "$TMPD/send-after-cut.out"

# 5. the same with b sending and only b's data packets dropped (a's
# acknowledgements and a's own packets go through), so that b's channel is
# the only one to fail: b restarts the peer on its own, and a's next
# connect to b goes through over the rebuilt channels within its timeout
gaveup_of() { grep -c "a data channel gave up while the peer stayed connected" "$TMPD/$1.log"; }
ga=$(gaveup_of a) gb=$(gaveup_of b)
start_endless cutb b2a
cut_data "$NS1" b big wait
expect "a's channel did not give up ($ga -> $(gaveup_of a) times)" [ "$(gaveup_of a)" = "$ga" ]
expect "b restarted the peer on its own when its channel gave up ($gb -> $(gaveup_of b) times)" \
	[ "$(gaveup_of b)" -gt "$gb" ]
expect "channel a->b up again" wait_chan "$SOCK_A" 200
run_xfer after-cutb 64M --quiet
expect "a's connect to b, whose channel had failed, verified (rc $XRC/$XRRC)" \
	eval '[ "$XRC" -eq 0 ] && [ "$XRRC" -eq 0 ]'
[ "$XRC" -eq 0 ] || cat "$TMPD/send-after-cutb.out"

# 6. a's veth MTU cut to 1500 under the channel's 9000: the kernel refuses
# a's GSO sends (segments over the path MTU), a's NIC turns GSO off and
# sends the same packets plainly (the kernel fragments them), the transfer
# still arrives whole, and ucclctl says GSO was refused
if nsx "$NS1" ip link set "$V1" mtu 1500; then
	run_xfer small-mtu 64M --quiet
	expect "transfer with GSO refused verified (rc $XRC/$XRRC)" eval '[ "$XRC" -eq 0 ] && [ "$XRRC" -eq 0 ]'
	[ "$XRC" -eq 0 ] || cat "$TMPD/send-small-mtu.out"
	nic_line=$(timeout 10 "$UCCLCTL" --socket "$SOCK_A" channels | grep '^nic ')
	echo "$nic_line"
	expect "ucclctl channels says a's GSO was refused" \
		eval 'echo "$nic_line" | grep -q "GSO refused by the kernel (off on 1 nic)"'
	expect "and b's was not" eval '! timeout 10 "$UCCLCTL" --socket "$SOCK_B" channels | grep -q "GSO refused"'
	nsx "$NS1" ip link set "$V1" mtu 9000 || true
else
	echo "cannot set $V1's MTU: GSO refusal not checked"
fi

stop a "$PID_A"
stop b "$PID_B"
PID_A= PID_B=
sanitized "$TMPD/a.log" && sanitized "$TMPD/b.log" || fail "sanitizer report in a daemon log"
finish_both
