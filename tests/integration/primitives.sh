#!/bin/sh
# SPDX-License-Identifier: MIT
# Two client processes use every primitive through one daemon, with data checks.
# Without peering, ucclctl channels lists no channel and succeeds, and
# set-cc says peering is off. Two threads failing on one context each read
# their own uccl_last_error. ucclctl --help/--version fail when they cannot
# write. ucclctl's sessions are left out of the
# daemon_attaches/detaches/disconnects counters.
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
# --help and --version that cannot write say so and fail, as commands do
for o in --help --version; do
	"$UCCLCTL" $o >/dev/full 2>"$TMPD/full.err" && fail "ucclctl $o to a full disk exits 0" ||
		expect "ucclctl $o to a full disk says why" grep -q "writing output" "$TMPD/full.err"
done
expect "itest_client primitives" "$ITEST" primitives
expect "itest_client lasterror" "$ITEST" lasterror
# the clients are gone: attaches = detaches + disconnects, ucclctl's own
# (observer) sessions counted in none of them
balanced() { [ $# -eq 3 ] && [ "$1" -gt 0 ] && [ "$1" -eq $(($2 + $3)) ]; }
for _ in $(seq 40); do   # a client's disconnect may still be on its way
	ads=$(ctl_py "$UCCL_SOCKET" stats "' '.join(str(s['value']) for s in d['stats'] if s['name'] in
		('daemon_attaches', 'daemon_detaches', 'daemon_disconnects'))")
	# shellcheck disable=SC2086 # three numbers, split on purpose
	balanced $ads && break
	sleep 0.05
done
# shellcheck disable=SC2086
expect "daemon_attaches = detaches + disconnects, observers left out ($ads)" balanced $ads
stop_daemon
finish
