#!/bin/sh
# SPDX-License-Identifier: MIT
# Two daemons on 127.0.0.1 peer with each other: hellos cross (ucclctl peers
# shows what each announced, ucclctl channels the data channel they agreed
# on), endpoint lookups and connects are answered, a killed peer is seen
# down (its channel gone) within peer_timeout_ms + 1 s and comes back up
# when restarted, a stopped (silent) one is declared down by the timeout,
# broken or foreign clients of peer_listen are dropped and logged without
# disturbing the peers, and SIGHUP adds and removes peers. All traffic stays
# on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
PROBE=$top_builddir/tests/integration/peer_probe
TIMEOUT_MS=1000

# Three ports nobody listens on now (the kernel picks them; closed at once).
set -- $(free_ports 3)
PA=$1 PB=$2 PZ=$3

write_conf() { # write_conf FILE NAME PORT DATA_PORT PATHS MTU [EXTRA PEER]
	{
		echo "peer_listen = 127.0.0.1:$3"
		# the same list on both hosts; each skips its own entry
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		# fake peers the probe plays: they sort before node-*, so the
		# daemons wait for them and never dial 127.0.0.2
		echo "peers = alpha=127.0.0.1:9, fake=127.0.0.2:9${7:+, $7}"
		echo "host_name = $2"
		echo "data_port = $4"
		echo "data_paths = $5"
		echo "mtu = $6"
		echo "peer_timeout_ms = $TIMEOUT_MS"
		echo "log_level = debug"
	} >"$1"
}
# data ports picked by the kernel (data_port = 0): fixed ones inside the
# ephemeral range could be any other socket's (make -j2 runs tests side
# by side), and then daemon a did not start; the hellos must announce
# what each got (its log says)
write_conf "$TMPD/a.conf" node-a "$PA" 0 8 9000
write_conf "$TMPD/b.conf" node-b "$PB" 0 16 4000
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock
PID_A= PID_B=



now_ms() { echo $(($(date +%s%N) / 1000000)); }

# pq SOCKET PEER FIELD: one field of one peer in ucclctl --json peers
pq() {
	"$UCCLCTL" --socket "$1" --json peers 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("noreply"); sys.exit()
p = [x for x in d["peers"] if x["name"] == sys.argv[1]]
v = p[0][sys.argv[2]] if p else "absent"
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$2" "$3"
}

# wait_state SOCKET PEER STATE MS: poll until PEER is in STATE, at most MS
wait_state() {
	local end=$(($(now_ms) + $4))
	while [ "$(pq "$1" "$2" state)" != "$3" ]; do
		[ "$(now_ms)" -ge "$end" ] && return 1
		sleep 0.05
	done
	return 0
}

is() { [ "$1" = "$2" ] || { echo "  got '$1', want '$2'"; return 1; }; }

# chans SOCKET: "peer/paths/mtu" of each channel in ucclctl --json channels
chans() {
	"$UCCLCTL" --socket "$1" --json channels 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("noreply"); sys.exit()
print(" ".join("%s/%d/%d" % (c["peer"], c["paths"], c["mtu"]) for c in d["channels"]))'
}

# wait_chans SOCKET WANT MS: poll until chans prints WANT, at most MS
wait_chans() {
	local end=$(($(now_ms) + $3))
	while [ "$(chans "$1")" != "$2" ]; do
		[ "$(now_ms)" -ge "$end" ] && { echo "  got '$(chans "$1")', want '$2'"; return 1; }
		sleep 0.05
	done
	return 0
}

start a
start b

# ---- they meet ---------------------------------------------------------------
expect "A sees node-b up" wait_state "$SOCK_A" node-b up 10000
expect "B sees node-a up" wait_state "$SOCK_B" node-a up 10000
DA=$(data_port a) DB=$(data_port b)
expect "A: node-b announced its data port ($DB)" eval '[ -n "$DB" ] && is "$(pq "$SOCK_A" node-b data_port)" "$DB"'
expect "A: node-b announced 16 paths" is "$(pq "$SOCK_A" node-b data_paths)" 16
expect "A: node-b announced mtu 4000" is "$(pq "$SOCK_A" node-b mtu)" 4000
expect "A: node-b announced host name node-b" is "$(pq "$SOCK_A" node-b host_name)" node-b
expect "A: node-b's data address defaults to its peer_listen address" \
	is "$(pq "$SOCK_A" node-b data_address)" 127.0.0.1
expect "B: node-a announced its data port ($DA)" eval '[ -n "$DA" ] && is "$(pq "$SOCK_B" node-a data_port)" "$DA"'
expect "B: node-a announced 8 paths" is "$(pq "$SOCK_B" node-a data_paths)" 8
expect "B: node-a announced mtu 9000" is "$(pq "$SOCK_B" node-a mtu)" 9000
expect "B: node-a announced host name node-a" is "$(pq "$SOCK_B" node-a host_name)" node-a
expect "node-a dials (its name sorts first)" is "$(pq "$SOCK_A" node-b dials)" true
expect "node-b waits for node-a" is "$(pq "$SOCK_B" node-a dials)" false
expect "A holds both tokens" is "$(pq "$SOCK_A" node-b tx_token_set),$(pq "$SOCK_A" node-b rx_token_set)" true,true
expect "B holds both tokens" is "$(pq "$SOCK_B" node-a tx_token_set),$(pq "$SOCK_B" node-a rx_token_set)" true,true
expect "A skips its own entry" is "$(pq "$SOCK_A" node-a state)" absent
expect "fake peers wait for their hello" is "$(pq "$SOCK_A" alpha state)" connecting
# one data channel each way: the smaller side's paths (8) and MTU (4000)
expect "A has one channel, to node-b, 8 paths, mtu 4000" wait_chans "$SOCK_A" node-b/8/4000 2000
expect "B has one channel, to node-a, 8 paths, mtu 4000" wait_chans "$SOCK_B" node-a/8/4000 2000
sleep 1.2   # a keepalive or two
expect "A measured an RTT to node-b" [ "$(pq "$SOCK_A" node-b rtt_us)" != null ]
expect "B measured an RTT to node-a" [ "$(pq "$SOCK_B" node-a rtt_us)" != null ]
"$UCCLCTL" --socket "$SOCK_A" peers >"$TMPD/peers.txt"
expect "text output lists node-b up" grep -Eq '^node-b +127\.0\.0\.1:[0-9]+ +up ' "$TMPD/peers.txt"
"$UCCLCTL" --socket "$SOCK_A" --json peers >"$TMPD/peers.json"
expect "JSON output names no token value" sh -c "! grep -q '\"tx_token\"\|\"rx_token\"\|\"token\"' '$TMPD/peers.json'"

# ---- endpoint lookups ----------------------------------------------------------
UCCL_SOCKET=$SOCK_B "$ITEST" hold svc-b >"$TMPD/hold.out" 2>&1 &
HOLD=$!
BG_PIDS="$BG_PIDS $HOLD"
for _ in $(seq 100); do grep -q listening "$TMPD/hold.out" && break; sleep 0.05; done
"$UCCLCTL" --socket "$SOCK_A" --json lookup node-b svc-b >"$TMPD/lk1.json"
expect "A's lookup at node-b finds svc-b" python3 -c "
import json,sys; d=json.load(open('$TMPD/lk1.json'))['lookup']
sys.exit(0 if d['found'] and isinstance(d['ep_id'], int) else 1)"
"$UCCLCTL" --socket "$SOCK_A" --json lookup node-b no-such-name >"$TMPD/lk2.json"
expect "a lookup of a name nobody listens on is not found" python3 -c "
import json,sys; d=json.load(open('$TMPD/lk2.json'))['lookup']
sys.exit(0 if not d['found'] and d['ep_id'] is None else 1)"
"$UCCLCTL" --socket "$SOCK_A" lookup nobody x 2>"$TMPD/lk3.err" && fail "lookup at an unknown peer succeeded" ||
	expect "a lookup at an unknown peer is refused" grep -q "no peer named 'nobody'" "$TMPD/lk3.err"
# node-a is on the shared peers line: A's own name is not "no peer named"
"$UCCLCTL" --socket "$SOCK_A" lookup node-a x 2>"$TMPD/lk5.err" && fail "lookup at this host succeeded" ||
	expect "a lookup at this host says so ($(cat "$TMPD/lk5.err"))" grep -q "'node-a' is this host" "$TMPD/lk5.err"
"$UCCLCTL" --socket "$SOCK_A" lookup alpha x 2>"$TMPD/lk4.err" && fail "lookup at a peer that is not up succeeded" ||
	expect "a lookup at a peer that is not up is refused" grep -q "peer alpha is not up" "$TMPD/lk4.err"

# ---- broken and foreign clients of peer_listen -----------------------------------
# a silent one is dropped after 5 s; meanwhile the others
"$PROBE" garbage 127.0.0.1 "$PB" silent >"$TMPD/silent.out" &
SILENT=$!
BG_PIDS="$BG_PIDS $SILENT"
T0=$(now_ms)
"$PROBE" garbage 127.0.0.1 "$PB" http >"$TMPD/g1.out"
expect "garbage (bad length) is dropped" grep -q eof "$TMPD/g1.out"
expect "garbage (bad length) is logged" grep -q "closing: bad frame length (limit 65536 bytes)" "$TMPD/b.log"
"$PROBE" garbage 127.0.0.1 "$PB" junk >"$TMPD/g2.out"
expect "undecodable frame is dropped and logged" grep -q "closing: undecodable message" "$TMPD/b.log"
"$PROBE" garbage 127.0.0.1 "$PB" empty >"$TMPD/g3.out"
expect "a message of an unknown kind is dropped and logged" grep -q "closing: message names no operation" "$TMPD/b.log"
"$PROBE" garbage 127.0.0.1 "$PB" early >"$TMPD/g4.out"
expect "a keepalive before the hello is refused" grep -q "^error -71 expected hello, got keepalive" "$TMPD/g4.out"
"$PROBE" hello 127.0.0.1 "$PB" alpha 99 >"$TMPD/v.out"
expect "a hello of another version gets an error naming both versions" \
	grep -q "^error -93 peer speaks peer protocol 99, this daemon speaks 1$" "$TMPD/v.out"
expect "... then the connection is closed" grep -q "^eof" "$TMPD/v.out"
expect "... and it is logged with both versions" grep -q "closing: peer speaks peer protocol 99, this daemon speaks 1" "$TMPD/b.log"
"$PROBE" hello 127.0.0.1 "$PB" mallory 1 >"$TMPD/u1.out"
"$PROBE" hello 127.0.0.1 "$PB" mallory 1 >"$TMPD/u2.out"
expect "an unknown host gets an error" grep -q "^error -13 mallory at 127.0.0.1 is not a configured peer of node-b" "$TMPD/u1.out"
expect "... every time" grep -q "^error -13 mallory" "$TMPD/u2.out"
expect "... logged once per address per minute" is "$(grep -c 'mallory at 127.0.0.1 is not a configured peer' "$TMPD/b.log")" 1
"$PROBE" hello 127.0.0.1 "$PB" fake 1 >"$TMPD/f.out"
expect "a configured name from the wrong address is refused" \
	grep -q "^error -13 hello as fake, which node-b expects from 127.0.0.2:9, not from 127.0.0.1" "$TMPD/f.out"
"$PROBE" hello 127.0.0.1 "$PB" node-z 1 >"$TMPD/z.out"
expect "a name that is not in peers is refused" grep -q "^error -13 node-z at 127.0.0.1 is not a configured peer" "$TMPD/z.out"
"$PROBE" hello 127.0.0.1 "$PB" alpha 1 svc-b >"$TMPD/alpha.out"
expect "a configured peer gets a hello back" grep -q "^hello node-b$" "$TMPD/alpha.out"
expect "... its keepalive is answered" grep -q "^keepalive_ack$" "$TMPD/alpha.out"
expect "... and its lookup found svc-b" grep -q "^found [0-9]" "$TMPD/alpha.out"
# a connect asked by a peer: nothing listens under the name (-ENOENT: the
# daemon's connect handler answered; -EOPNOTSUPP would mean it has none),
# and the connection stays up for what follows
"$PROBE" connect 127.0.0.1 "$PB" alpha no-such-name >"$TMPD/connect.out"
expect "a peer's connect gets an answer: nothing listens" grep -q "^connect_rep -2$" "$TMPD/connect.out"
expect "... a closed connection it names is taken without an answer, and an answer to a connect never asked for is refused" \
	grep -q "^error -71 connect_rep: answers a connect never sent$" "$TMPD/connect.out"
expect "... then the connection is closed" grep -q "^eof" "$TMPD/connect.out"
expect "... and logged" grep -q "peer alpha (127.0.0.1:9): down: connect_rep: answers a connect never sent" "$TMPD/b.log"
expect "B logged alpha up then down" sh -c "grep -q 'peer alpha (127.0.0.1:9): up' '$TMPD/b.log' && grep -q 'peer alpha (127.0.0.1:9): down' '$TMPD/b.log'"
wait "$SILENT"
T1=$(now_ms)
expect "a client that sends nothing is dropped" grep -q eof "$TMPD/silent.out"
expect "... after the 5 s hello deadline ($((T1 - T0)) ms)" [ $((T1 - T0)) -ge 4500 -a $((T1 - T0)) -le 8000 ]
expect "... and logged" grep -q "closing: no hello within 5000 ms" "$TMPD/b.log"
"$PROBE" flood 127.0.0.1 "$PB" 10 >"$TMPD/flood.out"
expect "at most 8 connections wait for a hello" grep -q "^closed 2$" "$TMPD/flood.out"
expect "... the oldest give way to the newest, logged" grep -q "8 connections from peers. hosts wait for a hello already (limit 8): closing the oldest" "$TMPD/b.log"
expect "the established peers were not disturbed (A)" is "$(pq "$SOCK_A" node-b state),$(pq "$SOCK_A" node-b reconnects)" up,0
expect "the established peers were not disturbed (B)" is "$(pq "$SOCK_B" node-a state),$(pq "$SOCK_B" node-a reconnects)" up,0
expect "no token value in any log" sh -c "! grep -qi '0123456789abcdef\|81985529216486895' '$TMPD/a.log' '$TMPD/b.log'"
kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null

# ---- kill -9, restart ----------------------------------------------------------------
T0=$(now_ms)
kill -9 "$PID_B"; wait "$PID_B" 2>/dev/null
expect "A sees node-b down within peer_timeout_ms + 1 s" wait_state "$SOCK_A" node-b down $((TIMEOUT_MS + 1000))
echo "# down after $(($(now_ms) - T0)) ms"
expect "... and its channel is gone" wait_chans "$SOCK_A" "" $((T0 + TIMEOUT_MS + 1000 - $(now_ms)))
expect "... its tokens are dropped" is "$(pq "$SOCK_A" node-b tx_token_set),$(pq "$SOCK_A" node-b rx_token_set)" false,false
start b
expect "A sees node-b up again after its restart" wait_state "$SOCK_A" node-b up 15000
expect "B sees node-a up after its restart" wait_state "$SOCK_B" node-a up 5000
expect "A counts one reconnect" is "$(pq "$SOCK_A" node-b reconnects)" 1

# ---- a silent peer: SIGSTOP the dialer ---------------------------------------------------
T0=$(now_ms)
kill -STOP "$PID_A"
expect "B declares a stopped node-a down within peer_timeout_ms + 1 s" wait_state "$SOCK_B" node-a down $((TIMEOUT_MS + 1000))
echo "# down after $(($(now_ms) - T0)) ms"
expect "... naming the silence" is "$(pq "$SOCK_B" node-a last_error)" "silent for $TIMEOUT_MS ms (peer_timeout_ms)"
kill -CONT "$PID_A"
expect "node-a redials once it runs again (A)" wait_state "$SOCK_A" node-b up 15000
expect "node-a redials once it runs again (B)" wait_state "$SOCK_B" node-a up 5000

# ---- SIGHUP adds and removes peers ----------------------------------------------------------
write_conf "$TMPD/a.conf" node-a "$PA" 0 8 9000 "zed=127.0.0.1:$PZ"
kill -HUP "$PID_A"
for _ in $(seq 50); do grep -q "peer zed (127.0.0.1:$PZ): added" "$TMPD/a.log" && break; sleep 0.1; done
expect "reload adds a peer" is "$(pq "$SOCK_A" zed dials)" true
expect "... which is dialed (nobody listens: connecting)" wait_state "$SOCK_A" zed connecting 1000
sleep 0.5
expect "... with the reason it is not up" is "$(pq "$SOCK_A" zed last_error)" "connect: Connection refused"
write_conf "$TMPD/a.conf" node-a "$PA" 0 8 9000
kill -HUP "$PID_A"
for _ in $(seq 50); do grep -q "peer zed (127.0.0.1:$PZ): removed" "$TMPD/a.log" && break; sleep 0.1; done
expect "reload removes a peer" is "$(pq "$SOCK_A" zed state)" absent
expect "reloads leave node-b up" is "$(pq "$SOCK_A" node-b state),$(pq "$SOCK_A" node-b reconnects)" up,2

# ---- a host that is no peer's address ----------------------------------------------------------------
# daemon c knows one peer, at 127.0.0.2 (which sorts first: c waits, never
# dials it); the probe comes from 127.0.0.1, an address c does not know
# A port picked at the start may have been handed out since as some
# connection's ephemeral port: pick a fresh one, and retry if it is lost.
for try in 1 2 3; do
	PZ=$(python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	{
		echo "peer_listen = 127.0.0.1:$PZ"
		echo "peers = far=127.0.0.2:9"
		echo "host_name = node-c"
		echo "log_level = debug"
	} >"$TMPD/c.conf"
	"$UCCLSVCD" --config "$TMPD/c.conf" --runtime-dir "$TMPD/rc" 2>"$TMPD/c.log" &
	PID_C=$!
	BG_PIDS="$BG_PIDS $PID_C"
	for _ in $(seq 100); do
		[ -S "$TMPD/rc/ucclsvcd.sock" ] && break
		kill -0 "$PID_C" 2>/dev/null || break
		sleep 0.05
	done
	[ -S "$TMPD/rc/ucclsvcd.sock" ] && kill -0 "$PID_C" 2>/dev/null && break
	echo "# daemon c did not start on port $PZ (try $try):"; sed 's/^/#   /' "$TMPD/c.log"
	wait "$PID_C" 2>/dev/null
done
"$PROBE" hello 127.0.0.1 "$PZ" far 1 >"$TMPD/c1.out"
"$PROBE" hello 127.0.0.1 "$PZ" far 1 >"$TMPD/c2.out"
expect "an unknown address is refused with an error" \
	grep -q "^error -13 127.0.0.1 is not the address of a configured peer of node-c$" "$TMPD/c1.out"
expect "... then a clean end of stream" grep -q "^eof$" "$TMPD/c1.out"
expect "... every time" grep -q "^error -13 127.0.0.1 is not the address" "$TMPD/c2.out"
expect "... logged once per address per minute" \
	is "$(grep -c '127.0.0.1 is not the address of a configured peer' "$TMPD/c.log")" 1
"$PROBE" flood 127.0.0.1 "$PZ" 12 >"$TMPD/cflood.out"
expect "... and unknown addresses hold no hello slots" grep -q "^closed 12$" "$TMPD/cflood.out"
stop_named c "$PID_C"

# ---- configuration errors ----------------------------------------------------------------------
printf 'peers = x=127.0.0.1:1\n' >"$TMPD/bad.conf"
"$UCCLSVCD" --check-config "$TMPD/bad.conf" 2>"$TMPD/bad.err" && fail "peers without peer_listen accepted" ||
	expect "peers without peer_listen is refused with FILE:LINE" grep -q "bad.conf:1: peers: needs peer_listen" "$TMPD/bad.err"
printf 'peer_listen = 127.0.0.1:%s\nhost_name = busy\n' "$PA" >"$TMPD/busy.conf"
"$UCCLSVCD" --config "$TMPD/busy.conf" --runtime-dir "$TMPD/rbusy" 2>"$TMPD/busy.err" && fail "a second daemon on a busy peer_listen started" ||
	expect "a busy peer_listen stops the start with a reason" grep -q "peer_listen 127.0.0.1:$PA: Address already in use" "$TMPD/busy.err"

# ---- stop ----------------------------------------------------------------------------------------
finish_pair
