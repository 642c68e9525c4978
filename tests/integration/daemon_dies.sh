#!/bin/sh
# SPDX-License-Identifier: MIT
# The daemon is killed under an attached client: its waits end at once with
# ECONNRESET (they used to spin at full CPU until their timeout, on a
# notify pipe that reports HUP for good), and a submission that rings the
# dead engine's doorbell does not kill it with SIGPIPE: on the socket pair
# daemons hand out now, and on the pipe older ones did.
. "$(dirname "$0")/lib.sh"
for mode in socket pipe; do
	start_daemon
	# gone before the client starts: its shell truncates the file only
	# once forked, and the poll below must not read the last round's
	rm -f "$TMPD/dies.out"
	"$ITEST" daemondies $([ $mode = pipe ] && echo pipe) >"$TMPD/dies.out" 2>&1 &
	CPID=$!
	BG_PIDS="$BG_PIDS $CPID"
	for _ in $(seq 400); do grep -qs ready "$TMPD/dies.out" && break; sleep 0.05; done
	expect "$mode doorbell: the client is attached" grep -q ready "$TMPD/dies.out"
	sleep 0.5                       # the engine goes to sleep, asking for doorbells
	kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	# its socket stays behind: start_daemon would take it for the next
	# daemon's and the client would meet a refused connect
	rm -f "$TMPD/run/ucclsvcd.sock"
	wait "$CPID"
	rc=$?
	cat "$TMPD/dies.out"
	expect "... the client ends by itself, not by a signal (rc $rc)" [ "$rc" -eq 0 ]
	expect "... after all three waits" grep -q "^done" "$TMPD/dies.out"
done
finish
