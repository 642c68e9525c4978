#!/bin/sh
# SPDX-License-Identifier: MIT
# Peer authentication (peer_key_file): two daemons on 127.0.0.1 with the
# same key come up authenticated (ucclctl peers) and move a verified
# transfer. A key file others may read stops the daemon at start with the
# fix in the message. With different keys the peer never comes up and the
# side that dials says why; SIGHUP to the right key lets the next attempt
# through. No root needed; all traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer

set -- $(free_ports 2)
PA=$1 PB=$2

head -c 32 /dev/urandom | base64 >"$TMPD/key1"
head -c 32 /dev/urandom | base64 >"$TMPD/key2"
cp "$TMPD/key1" "$TMPD/open.key"
chmod 600 "$TMPD/key1" "$TMPD/key2"
chmod 644 "$TMPD/open.key"

write_conf() { # write_conf FILE NAME PORT KEYFILE
	{
		echo "peer_listen = 127.0.0.1:$3"
		echo "host_name = $2"
		echo "peers = node-a=127.0.0.1:$PA, node-b=127.0.0.1:$PB"
		echo "peer_key_file = $4"
		echo "peer_timeout_ms = 2000"
	} >"$1"
}
write_conf "$TMPD/a.conf" node-a "$PA" "$TMPD/key1"
write_conf "$TMPD/b.conf" node-b "$PB" "$TMPD/key1"
SOCK_A=$TMPD/ra/ucclsvcd.sock
SOCK_B=$TMPD/rb/ucclsvcd.sock

finish_all() {
	if [ "$FAILS" -ne 0 ]; then
		for n in a b o; do echo "--- $n.log ---"; cat "$TMPD/$n.log" 2>/dev/null; done
		exit 1
	fi
	exit 0
}
# peer_field SOCK FIELD: FIELD of the daemon's only peer in ucclctl --json peers
peer_field() {
	ctl_py "$1" peers "d[\"peers\"][0][\"$2\"] if d.get(\"peers\") else None"
}
wait_state() { # wait_state SOCK STATE: up to 5 s
	for _ in $(seq 50); do
		[ "$(peer_field "$1" state)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# 1. a key others can read: the daemon does not start, and says how to fix it
write_conf "$TMPD/o.conf" node-o "$PA" "$TMPD/open.key"
timeout 10 "$UCCLSVCD" --config "$TMPD/o.conf" --runtime-dir "$TMPD/ro" 2>"$TMPD/o.log"
rc=$?
expect "a key file with mode 0644 stops the daemon (rc $rc)" eval '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]'
expect "and the log says chmod 600" grep -q "open.key: mode 0644 lets group or others at it (chmod 600)" "$TMPD/o.log"
"$UCCLSVCD" --check-config "$TMPD/o.conf" >/dev/null 2>"$TMPD/o.check" && fail "--check-config took the open key" ||
	expect "--check-config says the same" grep -q "o.conf: peer_key_file .*open.key: mode 0644" "$TMPD/o.check"
expect "--check-config takes a good key" sh -c "\"$UCCLSVCD\" --check-config \"$TMPD/a.conf\" >/dev/null"

# 2. the same key: up, authenticated, a verified transfer
start_named a
start_named b
PID_B=$STARTED_PID
expect "a and b come up" wait_state "$SOCK_A" up
expect "ucclctl --json peers: authenticated" [ "$(peer_field "$SOCK_A" authenticated)" = True ]
expect "b sees a authenticated too" [ "$(peer_field "$SOCK_B" authenticated)" = True ]
"$UCCLCTL" --socket "$SOCK_A" peers >"$TMPD/peers.txt"
expect "the header says peers must prove the key" grep -q "^this daemon: node-a, listening on 127.0.0.1:$PA; peers must prove the key of peer_key_file$" "$TMPD/peers.txt"
expect "--json peers: key true" [ "$(ctl_py "$SOCK_A" peers 'd["key"]')" = True ]
expect "the table says key" grep -Eq '^node-b +127\.0\.0\.1:[0-9]+ +up +[^ ]+ +out +key ' "$TMPD/peers.txt"
expect "a logged the peer up, authenticated" grep -q "peer node-b (.*): up, we dialed, authenticated" "$TMPD/a.log"
"$XFER" --socket "$SOCK_B" --quiet recv authed >"$TMPD/recv.out" 2>&1 &
RP=$!
wait_ep "$SOCK_B" authed || fail "receiver authed never showed up at b"
"$XFER" --socket "$SOCK_A" --bytes 16M --quiet send node-b/authed >"$TMPD/send.out" 2>&1
rc=$?
wait $RP
rrc=$?
expect "16M moved and verified over the authenticated peers (rc $rc, $rrc)" \
	eval '[ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]'

# 3. b restarts with another key: a's dials are refused, and a says why
kill -TERM "$PID_B"; wait "$PID_B" 2>/dev/null
write_conf "$TMPD/b.conf" node-b "$PB" "$TMPD/key2"
start_named b
PID_B=$STARTED_PID
sleep 1.5
expect "with different keys the peer stays down ($(peer_field "$SOCK_A" state))" \
	[ "$(peer_field "$SOCK_A" state)" != up ]
err=$(peer_field "$SOCK_A" last_error)
expect "a's last_error says the keys differ ($err)" eval 'echo "$err" | grep -q "peer_key_file differs"'

# 4. SIGHUP b back to a's key: the next attempt comes up
write_conf "$TMPD/b.conf" node-b "$PB" "$TMPD/key1"
kill -HUP "$PID_B"
expect "after the reload the peer comes up" wait_state "$SOCK_A" up
expect "authenticated" [ "$(peer_field "$SOCK_A" authenticated)" = True ]
expect "b logged the key taken at reload" grep -q "peer_key_file $TMPD/key1: a new key for new peer connections" "$TMPD/b.log"

# 5. b reloads to no key; a restarts with its key and is refused
write_conf "$TMPD/b.conf" node-b "$PB" none
kill -HUP "$PID_B"
sleep 0.3
expect "b logged authentication off" grep -q "peer_key_file = none: peers are no longer authenticated" "$TMPD/b.log"
# 5b. a reload to a key file that cannot be used is refused whole: taking
# the rest would leave the file named and no key in force (and the next
# start would fail on it)
write_conf "$TMPD/b.conf" node-b "$PB" "$TMPD/missing.key"
kill -HUP "$PID_B"
refused() { for _ in $(seq 50); do grep -q "reload refused, keeping the running configuration: .*missing.key" "$TMPD/b.log" && return 0; sleep 0.1; done; return 1; }
expect "b refuses a reload to a missing key file" refused
expect "... and takes none of it" eval '! grep -q "missing.key.*peers stay unauthenticated" "$TMPD/b.log"'
write_conf "$TMPD/b.conf" node-b "$PB" none
for p in $BG_PIDS; do
	[ "$p" = "$PID_B" ] || kill -TERM "$p" 2>/dev/null
done
sleep 0.3
start_named a
sleep 1.5
err=$(peer_field "$SOCK_A" last_error)
expect "a keyed, b not: a's last_error says b has no key ($err)" eval 'echo "$err" | grep -q "node-b has no key"'
expect "and the peer is not up" [ "$(peer_field "$SOCK_A" state)" != up ]

sanitized "$TMPD/a.log" && sanitized "$TMPD/b.log" || fail "sanitizer report in a daemon log"
finish_all
