#!/bin/sh
# SPDX-License-Identifier: MIT
# Two client processes use every primitive through one daemon, with data checks.
# Without peering, ucclctl channels lists no channel and succeeds, and
# set-cc says peering is off. Two threads failing on one context each read
# their own uccl_last_error.
. "$(dirname "$0")/lib.sh"
start_daemon
rc=0; "$UCCLCTL" channels >"$TMPD/channels.txt" || rc=$?
expect "channels without peering exits 0 (rc $rc)" [ "$rc" -eq 0 ]
expect "... and lists none" grep -qx '(none)' "$TMPD/channels.txt"
# ENOTCONN, not "no peer named": with peering off no peers line can exist
"$UCCLCTL" set-cc node-b swift 2>"$TMPD/cc.err" && fail "set-cc without peering succeeded" ||
	expect "set-cc without peering says peering is off ($(cat "$TMPD/cc.err"))" \
		grep -q "peering is off" "$TMPD/cc.err"
# an empty --socket is no socket given, as in the library ($UCCL_SOCKET)
expect "ucclctl --socket '' takes \$UCCL_SOCKET" "$UCCLCTL" --socket '' status
expect "itest_client primitives" "$ITEST" primitives
expect "itest_client lasterror" "$ITEST" lasterror
stop_daemon
finish
