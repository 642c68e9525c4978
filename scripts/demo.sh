#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job: install, build, start two ucclsvcd daemons ("node-a" and
# "node-b") on the built-in defaults plus the peering lines they need and
# mtu = 9000,
# move BYTES (default 1 GiB) from an application on node-a to one on node-b
# through both daemons with every byte verified, and show what the
# transport saw (ucclctl peers and channels: RTT, window, retransmissions).
#
# By default both daemons run on 127.0.0.1 with different ports. As root,
# DEMO_NETNS=1 puts each daemon in its own network namespace joined by a
# veth pair (10.79.0.1 and 10.79.0.2, MTU 9000), like two hosts.
# DEMO_PORT_A and DEMO_PORT_B (default 47471, 47472) are their peering ports.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BYTES=${BYTES:-1G}
NETNS=${DEMO_NETNS:-0}
# uccl_xfer's --bytes syntax, checked before anything starts: a size it
# refuses would otherwise leave the receiver waiting out its accept
case $BYTES in
''|[!0-9]*|*[!0-9kKmMgG]*|*[kKmMgG]?*) ok=0 ;;
*) case ${BYTES%[kKmMgG]} in *[!0]*) ok=1 ;; *) ok=0 ;; esac ;;
esac
if [ "$ok" = 0 ]; then
	echo "demo.sh: bad BYTES '$BYTES' (a number above 0, with an optional K, M or G)" >&2
	exit 2
fi
echo "== installing dependencies and building (first run takes a minute)"
sh scripts/deps.sh
sh scripts/build.sh "$top/build"
B=$top/build
RUN=$(mktemp -d /tmp/uccl-demo.XXXXXX)
chmod 755 "$RUN"
NS1= NS2=
PA= PB= RP= SP=
cleanup() {
	for p in $SP $RP $PA $PB; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -z "$NS1" ] || ip netns del "$NS1" 2>/dev/null || true
	[ -z "$NS2" ] || ip netns del "$NS2" 2>/dev/null || true
	rm -rf "$RUN"
}
# a signal ends the script (through the EXIT trap), not just the step it
# interrupted: the rest would run on without daemons or files
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Addresses and the command prefix that runs a process "on" each host.
if [ "$NETNS" = 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "DEMO_NETNS=1 needs root (network namespaces)" >&2
		exit 1
	fi
	NS1=uccl-demo-a-$$ NS2=uccl-demo-b-$$
	ip netns add "$NS1"
	ip netns add "$NS2"
	ip link add "ud$$a" type veth peer name "ud$$b"
	ip link set "ud$$a" netns "$NS1"
	ip link set "ud$$b" netns "$NS2"
	ip -n "$NS1" addr add 10.79.0.1/24 dev "ud$$a"
	ip -n "$NS2" addr add 10.79.0.2/24 dev "ud$$b"
	for n in "$NS1:ud$$a" "$NS2:ud$$b"; do
		ip -n "${n%%:*}" link set lo up
		ip -n "${n%%:*}" link set "${n#*:}" mtu 9000 up
	done
	ADDR_A=10.79.0.1 ADDR_B=10.79.0.2 MTU=9000
	ON_A="ip netns exec $NS1" ON_B="ip netns exec $NS2"
	WHERE="two network namespaces joined by a veth pair (MTU 9000)"
else
	ADDR_A=127.0.0.1 ADDR_B=127.0.0.1 MTU=9000
	ON_A= ON_B=
	WHERE="127.0.0.1 (two daemons, different ports; DEMO_NETNS=1 as root for namespaces)"
fi
PORT_A=${DEMO_PORT_A:-47471} PORT_B=${DEMO_PORT_B:-47472}
for h in a b; do
	if [ $h = a ]; then me=node-a addr=$ADDR_A port=$PORT_A; else me=node-b addr=$ADDR_B port=$PORT_B; fi
	cat >"$RUN/$h.conf" <<EOF
# built-in defaults, plus what peering needs
peer_listen = $addr:$port
peers = node-a=$ADDR_A:$PORT_A, node-b=$ADDR_B:$PORT_B
host_name = $me
mtu = $MTU
EOF
done

start() { # start a|b: runs the daemon on its host, waits for its socket
	local on pid
	if [ "$1" = a ]; then on=$ON_A; else on=$ON_B; fi
	$on "$B/daemon/ucclsvcd" --config "$RUN/$1.conf" --runtime-dir "$RUN/$1" 2>"$RUN/$1.log" &
	pid=$!
	# known before the wait: a daemon slow to start is stopped on exit too
	if [ "$1" = a ]; then PA=$pid; else PB=$pid; fi
	for _ in $(seq 100); do [ -S "$RUN/$1/ucclsvcd.sock" ] && break; sleep 0.05; done
	if [ ! -S "$RUN/$1/ucclsvcd.sock" ]; then
		echo "ucclsvcd on node-$1 did not start:"; cat "$RUN/$1.log"; exit 1
	fi
}
echo "== starting ucclsvcd node-a and node-b on $WHERE"
start a
start b
SA=$RUN/a/ucclsvcd.sock SB=$RUN/b/ucclsvcd.sock
for _ in $(seq 100); do
	"$B/client/ucclctl" --socket "$SA" --json channels 2>/dev/null | grep -q 'node-b' && break
	sleep 0.05
done
"$B/client/ucclctl" --socket "$SA" peers || true
echo
echo "== transferring $BYTES from an application on node-a to one on node-b"
$ON_B "$B/client/uccl_xfer" --socket "$SB" --quiet recv demo &
RP=$!
sleep 0.2
rc=0
# in the background: the shell takes a signal while it waits, not only
# when a foreground command ends
$ON_A "$B/client/uccl_xfer" --socket "$SA" --bytes "$BYTES" send node-b/demo &
SP=$!
wait "$SP" || rc=$?
SP=
# a sender that failed before connecting leaves the receiver in accept
[ "$rc" -eq 0 ] || kill -TERM "$RP" 2>/dev/null || true
wait "$RP" || rc=$?
RP=
echo
echo "== ucclctl channels on node-a (sender) and node-b (receiver)"
# a daemon that died shows below in its log, not by ending the script here
dead=0
"$B/client/ucclctl" --socket "$SA" channels || dead=1
echo
"$B/client/ucclctl" --socket "$SB" channels || dead=1
echo
# Resends that the receiver already had were not needed: on a busy machine
# the ACKs come later than the retransmission timer, nothing was lost.
if command -v python3 >/dev/null; then
	"$B/client/ucclctl" --socket "$SA" --json channels >"$RUN/cha.json" 2>/dev/null &&
	"$B/client/ucclctl" --socket "$SB" --json channels >"$RUN/chb.json" 2>/dev/null &&
	python3 - "$RUN/cha.json" "$RUN/chb.json" <<'EOF' || true
import json, sys
a = [c for c in json.load(open(sys.argv[1]))["channels"] if c["peer"] == "node-b"]
b = [c for c in json.load(open(sys.argv[2]))["channels"] if c["peer"] == "node-a"]
retx = sum(c["retx_pkts"] for c in a)
dup = sum(c["dup_pkts_rx"] for c in b)
to = sum(c["retx_timeouts"] for c in a)
spur = sum(c.get("rto_spurious", 0) for c in a)
if retx:
    print("retransmissions node-a -> node-b: %d packets, %d of them arrived twice "
          "(resent before their ACK came back, not lost)" % (retx, min(dup, retx)))
    print("retransmission timeouts: %d, %d of them spurious (each raises the "
          "channel's timeout floor)" % (to, spur))
else:
    print("retransmissions node-a -> node-b: none")
EOF
	echo
fi
echo "== daemon logs"
for p in $PA $PB; do kill -TERM "$p" 2>/dev/null || dead=1; done
wait "$PA" || true
wait "$PB" || true
PA= PB=
for h in a b; do sed "s/^/node-$h: /" "$RUN/$h.log"; done
echo
if [ "$rc" -ne 0 ]; then
	echo "FAILED: the transfer did not complete verified (see above)"
	exit 1
fi
if [ "$dead" -ne 0 ]; then
	echo "FAILED: a daemon went away during the demo (see its log above)"
	exit 1
fi
echo "OK: $BYTES moved between two daemons and verified byte for byte."
