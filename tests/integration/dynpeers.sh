#!/bin/sh
# SPDX-License-Identifier: MIT
# Peers named at connect time (dynamic_peers): two daemons on 127.0.0.1
# that do not list each other. A client of a connects to
# 127.0.0.1:PORT/name; a dials b's peer_listen, b takes the unlisted
# daemon as a peer for as long as the connection lasts, and a verified
# transfer goes through. Clear errors: dynamic_peers = 0 on either side,
# the limit reached, this daemon's own address. Once the transfer is over
# and the peer connection gone, both forget the other after
# peer_timeout_ms. A connect whose address lost its place to another
# client's still says why its dial failed. No root needed; all traffic
# stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
TIMEOUT_MS=1500

set -- $(free_ports 3)
PA=$1 PB=$2 PC=$3

write_conf() { # write_conf FILE NAME PORT DYNAMIC
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "host_name = $2"
		echo "dynamic_peers = $4"
		echo "peer_timeout_ms = $TIMEOUT_MS"
		echo "mtu = 9000"
	} >"$1"
}
write_conf "$TMPD/a.conf" node-a "$PA" 1
write_conf "$TMPD/b.conf" node-b "$PB" 2
write_conf "$TMPD/c.conf" node-c "$PC" 0
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock

finish_all() {
	if [ "$FAILS" -ne 0 ]; then
		for n in a b c e f; do echo "--- $n.log ---"; cat "$TMPD/$n.log" 2>/dev/null; done
		exit 1
	fi
	exit 0
}
# peers_of SOCK: the daemon's peers as "name:state name:state ..."
peers_of() {
	ctl_py "$1" peers '" ".join("%s:%s" % (p["name"], p["state"]) for p in d.get("peers", []))'
}

start_named a
start_named b
PID_B=$STARTED_PID
start_named c
expect "no peers configured: a lists none" [ -z "$(peers_of "$SOCK_A")" ]

# 1. a verified transfer to b, named by address
xfer "$SOCK_A" "$SOCK_B" "127.0.0.1:$PB" 64M dyn
pa=$(peers_of "$SOCK_A") pb=$(peers_of "$SOCK_B")
expect "a names b by its address ($pa)" eval 'echo "$pa" | grep -q "127.0.0.1:$PB:"'
dyn=$(ctl_py "$SOCK_A" peers '" ".join(str(p["dynamic"]) for p in d["peers"])')
expect "ucclctl peers --json says it is dynamic ($dyn)" [ "$dyn" = True ]
expect "b took a as a peer by its host name ($pb)" eval 'echo "$pb" | grep -q "node-a:"'
expect "a logged the peer added at run time" grep -q "127.0.0.1:$PB (127.0.0.1:$PB): added at run time" "$TMPD/a.log"
expect "b logged the peer added at run time" grep -q "peer node-a (.*): added at run time (it dialed us" "$TMPD/b.log"

# 1b. b's client names a by address: b uses the peer it has (a dialed it),
# no second peer connection
xfer "$SOCK_B" "$SOCK_A" "127.0.0.1:$PA" 16M back
pa=$(peers_of "$SOCK_A") pb=$(peers_of "$SOCK_B")
expect "still one peer each way ($pa | $pb)" \
	eval '[ "$(echo "$pa" | wc -w)" -eq 1 ] && [ "$(echo "$pb" | wc -w)" -eq 1 ]'

# 2. clear errors
out=$("$XFER" --socket "$SOCK_A" --bytes 1M send "127.0.0.1:$PC/x" 2>&1)
expect "a's limit (dynamic_peers = 1) reached: EUSERS ($out)" \
	eval 'echo "$out" | grep -q "dynamic_peers = 1 peers were added at run time already"'
out=$("$XFER" --socket "$SOCK_A" --bytes 1M send "127.0.0.1:$PA/x" 2>&1)
expect "a's own address: a clear error ($out)" eval 'echo "$out" | grep -q "is this daemon"'
out=$("$XFER" --socket "$TMPD/rc/ucclsvcd.sock" --bytes 1M send "127.0.0.1:$PB/dyn" 2>&1)
expect "dynamic_peers = 0 on c: refused at once ($out)" \
	eval 'echo "$out" | grep -q "dynamic_peers = 0"'
out=$(UCCL_SOCKET=$SOCK_B "$ITEST" connect "127.0.0.1:$PC/x" 1500 2>&1)
expect "c does not take unlisted daemons: b's connect fails, saying why ($out)" \
	eval 'echo "$out" | grep -q "configured peer of node-c"'
out=$("$XFER" --socket "$SOCK_A" --bytes 1M send "999.0.0.1:1/x" 2>&1)
expect "not an address nor a peer: clear error ($out)" eval 'echo "$out" | grep -q "no peer named"'

# 2b. two more daemons that name each other by address at the same time,
# each allowed one dynamic peer: both transfers go through, over one peer
# connection (the dial that gives way frees its slot for the other's)
set -- $(free_ports 2)
PE=$1 PF=$2
write_conf "$TMPD/e.conf" node-e "$PE" 1
write_conf "$TMPD/f.conf" node-f "$PF" 1
start_named e
start_named f
SOCK_E=$TMPD/re/ucclsvcd.sock SOCK_F=$TMPD/rf/ucclsvcd.sock
"$XFER" --socket "$SOCK_E" --quiet recv toe >/dev/null 2>&1 &
R1=$!
"$XFER" --socket "$SOCK_F" --quiet recv tof >/dev/null 2>&1 &
R2=$!
wait_ep "$SOCK_E" toe || fail "receiver toe never showed up at e"
wait_ep "$SOCK_F" tof || fail "receiver tof never showed up at f"
"$XFER" --socket "$SOCK_E" --bytes 16M --quiet send "127.0.0.1:$PF/tof" >"$TMPD/s1.out" 2>&1 &
S1=$!
"$XFER" --socket "$SOCK_F" --bytes 16M --quiet send "127.0.0.1:$PE/toe" >"$TMPD/s2.out" 2>&1 &
S2=$!
for p in $S1 $S2 $R1 $R2; do wait "$p" || fail "simultaneous transfers: process $p failed"; done
cat "$TMPD/s1.out" "$TMPD/s2.out"
pe=$(peers_of "$SOCK_E") pf=$(peers_of "$SOCK_F")
expect "simultaneous connects by address: one peer each, up ($pe | $pf)" \
	eval 'echo "$pe" | grep -q ":up" && echo "$pf" | grep -q ":up" &&
	      [ "$(echo "$pe" | wc -w)" -eq 1 ] && [ "$(echo "$pf" | wc -w)" -eq 1 ]'

# 2c. a reload that lists a dynamic peer in peers makes it a configured
# one: it stays known after its daemon stops, and takes it back when it
# restarts listing this one too (f had node-e as a dynamic peer, or e had
# f by address)
case $(peers_of "$SOCK_F") in
*node-e*) X=f XSOCK=$SOCK_F XNAME=node-f XPORT=$PF Y=e YNAME=node-e YPORT=$PE ;;
*) X=e XSOCK=$SOCK_E XNAME=node-e XPORT=$PE Y=f YNAME=node-f YPORT=$PF ;;
esac
pid_of() { sed -n 's/^ucclsvcd\[\([0-9]*\)\].*ready on.*/\1/p' "$TMPD/$1.log" | tail -n 1; }
echo "peers = $YNAME=127.0.0.1:$YPORT" >>"$TMPD/$X.conf"
kill -HUP "$(pid_of "$X")"
sleep 0.5
kill -TERM "$(pid_of "$Y")"
sleep 1.5
px=$(peers_of "$XSOCK")
expect "after the reload $YNAME is configured on $X: still listed once its daemon stopped ($px)" \
	eval 'echo "$px" | grep -q "$YNAME:"'
echo "peers = $XNAME=127.0.0.1:$XPORT" >>"$TMPD/$Y.conf"
start_named "$Y"
up=no
for _ in $(seq 100); do
	case $(peers_of "$XSOCK") in *"$YNAME:up"*) up=yes; break ;; esac
	sleep 0.1
done
expect "the configured $YNAME comes back up when its daemon restarts ($(peers_of "$XSOCK"))" [ "$up" = yes ]

# 3. stopping b ends the peer connection; a forgets b after peer_timeout_ms
kill -TERM "$PID_B"
gone=no
for _ in $(seq 60); do
	case $(peers_of "$SOCK_A") in *"127.0.0.1:$PB"*) sleep 0.1 ;; *) gone=yes; break ;; esac
done
expect "a removed the dynamic peer once b went away" [ "$gone" = yes ]
expect "a logged the removal" grep -q "removed (added at run time; its connection is gone)" "$TMPD/a.log"

# 4. a connect whose run-time peer lost its place to another client's
# address, and could not get it back before its timeout, still says why
# that address was never reached
set -- $(free_ports 3)
PG=$1 DEAD1=$2 DEAD2=$3
write_conf "$TMPD/g.conf" node-g "$PG" 1
start_named g
SOCK_G=$TMPD/rg/ucclsvcd.sock
UCCL_SOCKET=$SOCK_G "$ITEST" connect "127.0.0.1:$DEAD1/x" 2000 >"$TMPD/c1.out" 2>&1 &
C1=$!
for _ in $(seq 100); do
	grep -q "127.0.0.1:$DEAD1): connect: Connection refused" "$TMPD/g.log" && break
	sleep 0.02
done
# its first dial failed over a second ago: its place may go, and the
# second address keeps it for a second, past the first connect's timeout
sleep 1.2
UCCL_SOCKET=$SOCK_G "$ITEST" connect "127.0.0.1:$DEAD2/y" 1500 >"$TMPD/c2.out" 2>&1 &
C2=$!
wait "$C1"
wait "$C2"
out=$(cat "$TMPD/c1.out")
expect "g gave the first address's place to the second" \
	grep -q "127.0.0.1:$DEAD1 (127.0.0.1:$DEAD1): removed (added at run time and never reached" "$TMPD/g.log"
expect "the first connect fails EHOSTUNREACH, saying its dial was refused ($out)" \
	eval 'echo "$out" | grep -q "EHOSTUNREACH.*Connection refused"'
finish_all
