#!/bin/sh
# SPDX-License-Identifier: MIT
# Clients cannot reach each other's memory without the right key and peer.
# With connect_same_user, a local connect reaches only the connecting
# user's listeners (uid 0: any); checked as root with other uids, as is
# the bound on connections a uid that is not allowed may leave unattached.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client isolation" "$ITEST" isolation
stop_daemon
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	printf 'connect_same_user = true\n' >"$TMPD/same.conf"
	start_daemon "$TMPD/same.conf"
	name=same-$$
	setpriv --reuid=65534 --regid=65534 --clear-groups "$ITEST" hold "$name" \
		>"$TMPD/hold.out" 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	for _ in $(seq 100); do grep -q listening "$TMPD/hold.out" && break; sleep 0.05; done
	expect "uid 65534 listens on $name" grep -q listening "$TMPD/hold.out"
	out=$(setpriv --reuid=65533 --regid=65533 --clear-groups "$ITEST" connect "$name" 1000 2>&1)
	case $out in
	*"listened on by another user"*) ok "another user's connect is refused ($out)" ;;
	*) fail "another user's connect is refused ($out)" ;;
	esac
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ITEST" connect "$name" 1000 2>&1)
	case $out in
	*": ok "*) ok "the listener's own user connects ($out)" ;;
	*) fail "the listener's own user connects ($out)" ;;
	esac
	out=$("$ITEST" connect "$name" 1000 2>&1)
	case $out in
	*": ok "*) ok "uid 0 connects to any listener ($out)" ;;
	*) fail "uid 0 connects to any listener ($out)" ;;
	esac
	stop_daemon

	# a uid uccl.conf does not allow holds at most 4 connections that never
	# attach (it would be refused at attach anyway); an allowed one 32
	printf 'allow_all = false\n' >"$TMPD/deny.conf"
	start_daemon "$TMPD/deny.conf"
	chmod 755 "$TMPD/run"
	python3 - "$UCCL_SOCKET" 6 >"$TMPD/deny.out" 2>&1 <<'PY' &
import os, socket, sys, time
os.setgid(65533)
os.setuid(65533)
keep = []
for _ in range(int(sys.argv[2])):
    keep.append(socket.socket(socket.AF_UNIX))
    keep[-1].connect(sys.argv[1])
time.sleep(1.5)
PY
	DPID=$!
	sleep 0.7
	n=$(grep -c "too many unattached connections from that uid" "$TMPD/daemon.log")
	expect "a uid that is not allowed holds 4 unattached connections, 2 refused ($n)" [ "$n" = 2 ]
	wait $DPID
	stop_daemon
else
	ok "# skip connect_same_user (needs root to run clients as other users)"
fi
finish
