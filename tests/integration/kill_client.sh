#!/bin/sh
# SPDX-License-Identifier: MIT
# kill -9 of a client: its resources are released, its peer sees ECONNRESET,
# and the daemon keeps serving. A client that closes its endpoint's doorbell
# does not keep the engine thread busy.
. "$(dirname "$0")/lib.sh"
start_daemon
name=hold-$$
"$ITEST" hold "$name" 64 >"$TMPD/hold.out" 2>&1 &
HOLD=$!; BG_PIDS="$BG_PIDS $HOLD"
for _ in $(seq 100); do grep -q listening "$TMPD/hold.out" && break; sleep 0.05; done
"$ITEST" peer "$name" >"$TMPD/peer.out" 2>&1 &
PEER=$!; BG_PIDS="$BG_PIDS $PEER"
for _ in $(seq 100); do grep -q ready "$TMPD/hold.out" && grep -q ready "$TMPD/peer.out" && break; sleep 0.05; done
expect "holder and peer are connected" grep -q ready "$TMPD/peer.out"

"$UCCLCTL" --json clients >"$TMPD/before.json"
expect "ucclctl lists the holder before the kill" python3 -c "
import json,sys; d=json.load(open('$TMPD/before.json'))
sys.exit(0 if any(c['pid']==$HOLD for c in d['clients']) else 1)"
expect "ucclctl shows the holder's 67 regions" python3 -c "
import json,sys; d=json.load(open('$TMPD/before.json'))
c=[c for c in d['clients'] if c['pid']==$HOLD][0]; sys.exit(0 if c['mrs']==67 else 1)"
# one descriptor watches the holder for all 64 of its registered regions
fds_held=$(ls "/proc/$DAEMON_PID/fd" | wc -l)

kill -9 "$HOLD"
rc=0; wait "$PEER" || rc=$?
cat "$TMPD/peer.out"
expect "peer saw its connection reset (rc $rc)" [ "$rc" -eq 0 ]

"$UCCLCTL" --json clients >"$TMPD/after.json"
expect "the killed client is gone" python3 -c "
import json,sys; d=json.load(open('$TMPD/after.json'))
sys.exit(1 if any(c['pid']==$HOLD for c in d['clients']) else 0)"
"$UCCLCTL" --json status >"$TMPD/status.json"
expect "its regions and endpoints are freed" python3 -c "
import json,sys; d=json.load(open('$TMPD/status.json'))
s=d.get('status', d); sys.exit(0 if s['mrs']==0 and s['endpoints']==0 and s['registered_bytes']==0 else 1)"
fds_after=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
expect "the holder and its peer held $((fds_held - fds_after)) of the daemon's descriptors (under 32)" \
	[ $((fds_held - fds_after)) -lt 32 ]
expect "daemon logged the disconnect" grep -q "disconnected; resources released" "$TMPD/daemon.log"
expect "daemon still serves" "$ITEST" backpressure

# engine_ticks: CPU ticks (user + system) the daemon's engine threads used
engine_ticks() {
	local t sum=0 comm
	for t in /proc/"$DAEMON_PID"/task/*; do
		comm=$(cat "$t/comm" 2>/dev/null) || continue
		case $comm in
		uccl-engine*) sum=$((sum + $(awk '{ print $14 + $15 }' "$t/stat"))) ;;
		esac
	done
	echo "$sum"
}
for how in close shut; do
	rm -f "$TMPD/hup.out"           # not the last round's: see daemon_dies.sh
	"$ITEST" hup 5 $([ $how = shut ] && echo shut) >"$TMPD/hup.out" 2>&1 &
	HUP=$!; BG_PIDS="$BG_PIDS $HUP"
	for _ in $(seq 100); do grep -qs closed "$TMPD/hup.out" && break; sleep 0.05; done
	expect "$how: a client closed its endpoint's doorbell" grep -q '^ok.*closed the endpoint' "$TMPD/hup.out"
	expect "... the daemon refused a descriptor passed over it" \
		eval 'grep -q "^ok.*refuses a descriptor" "$TMPD/hup.out" || grep -q "(1 pipe)" "$TMPD/hup.out"'
	sleep 0.3
	t0=$(engine_ticks)
	sleep 2
	ticks=$(( $(engine_ticks) - t0 ))
	# an engine spinning on the doorbell's HUP or EOF takes ~200 of 200
	# ticks; an idle one 0-2
	expect "... the engine sleeps ($ticks ticks of CPU in 2 s)" [ "$ticks" -lt 40 ]
	kill "$HUP" 2>/dev/null; wait "$HUP" 2>/dev/null
done
expect "daemon still serves after it" "$ITEST" backpressure
stop_daemon
finish
