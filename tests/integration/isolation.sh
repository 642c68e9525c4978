#!/bin/sh
# SPDX-License-Identifier: MIT
# Clients cannot reach each other's memory without the right key and peer.
# With connect_same_user, a local connect reaches only the connecting
# user's listeners (uid 0: any); checked as root with other uids, as are
# the bound on connections a uid that is not allowed may leave unattached,
# the bounds on observers of users without the admin role, the room kept
# for admins past every user's connections, and what ucclctl says when its
# user may not reach the socket.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client isolation" "$ITEST" isolation
stop_daemon
if as_others_ok; then
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
	for _ in $(seq 100); do
		n=$(grep -c "too many unattached connections from that uid" "$TMPD/daemon.log")
		[ "$n" -ge 2 ] && break
		sleep 0.05
	done
	n=$(grep -c "too many unattached connections from that uid" "$TMPD/daemon.log")
	expect "a uid that is not allowed holds 4 unattached connections, 2 refused ($n)" [ "$n" = 2 ]
	wait $DPID
	stop_daemon

	# allow_gids and admin_gid look at the groups the process holds
	# (SO_PEERGROUPS), not at a name service's member lists: uid 65534
	# is in neither group in /etc/group
	printf 'allow_all = false\nallow_gids = 4242\nadmin_gid = 4243\n' >"$TMPD/groups.conf"
	start_daemon "$TMPD/groups.conf"
	chmod 755 "$TMPD/run"
	as_nobody() { setpriv --reuid=65534 --regid=65534 "$@" >/dev/null 2>&1; }
	expect "a process holding group 4242 attaches (allow_gids)" \
		as_nobody --groups=4242 "$UCCLCTL" --socket "$UCCL_SOCKET" status
	expect "... the same uid without the group is refused" \
		eval '! as_nobody --clear-groups "$UCCLCTL" --socket "$UCCL_SOCKET" status'
	setpriv --reuid=65534 --regid=65534 --groups=4242 "$UCCLCTL" --socket "$UCCL_SOCKET" stats \
		>/dev/null 2>"$TMPD/adm.err" && fail "uid 65534 without admin_gid read stats" ||
		ok "... and has no admin role without admin_gid"
	# who has it, as set-cc's refusal says
	expect "... the refusal names uid 0, the daemon's own user and admin_gid" \
		grep -q "uid 0, the daemon's own user, or admin_gid" "$TMPD/adm.err"
	many=$(seq -s, 1000 1099)
	expect "a process with 102 groups, admin_gid last, has the admin role" \
		as_nobody --groups="4242,$many,4243" "$UCCLCTL" --socket "$UCCL_SOCKET" stats
	expect "... and without admin_gid among them it has not" \
		eval '! as_nobody --groups="4242,$many" "$UCCLCTL" --socket "$UCCL_SOCKET" stats'
	# a socket this user may not reach is not "is ucclsvcd running?"
	chmod 700 "$TMPD/run"
	setpriv --reuid=65534 --regid=65534 --groups=4242 "$UCCLCTL" --socket "$UCCL_SOCKET" status \
		>/dev/null 2>"$TMPD/acc.err" && fail "ucclctl reached a socket in root's 0700 dir" ||
		expect "ucclctl says a socket in a 0700 dir is not accessible ($(cat "$TMPD/acc.err"))" \
			grep -q "not accessible to this user" "$TMPD/acc.err"
	chmod 755 "$TMPD/run"
	stop_daemon

	# observers (ucclctl) never time out: a uid without the admin role
	# holds at most 2, such uids together 12, and root still gets in
	start_daemon
	cat >"$TMPD/obs.py" <<'PY'
import os, socket, struct, sys, time
def varint(n):
    out = b''
    while True:
        b, n = n & 0x7f, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])
def field(num, wt, v):
    return varint(num << 3 | wt) + (varint(v) if wt == 0 else varint(len(v)) + v)
uid, n = int(sys.argv[2]), int(sys.argv[3])
os.setgid(uid)
os.setuid(uid)
keep, res = [], []
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    att = field(1, 0, 1) + field(2, 2, b'obs') + field(3, 0, 1)   # AttachReq, observer
    req = field(1, 0, 1) + field(10, 2, att)                      # Request.attach
    s.sendall(struct.pack('<I', len(req)) + req)
    rep = s.recv(4096)
    st = rep[4 + 2 + 1]                       # Reply: seq (2 bytes), then status's key
    res.append('ok' if st == 0 else 'refused')
    keep.append(s)
print(uid, ' '.join(res), flush=True)
time.sleep(float(sys.argv[4]))
PY
	for u in 65530 65531 65532 65533 65534 65535; do
		python3 "$TMPD/obs.py" "$UCCL_SOCKET" $u 2 4 >"$TMPD/obs-$u.out" 2>&1 &
		BG_PIDS="$BG_PIDS $!"
	done
	# each prints its line once its observers are attached
	for _ in $(seq 200); do
		[ "$(cat "$TMPD"/obs-6553?.out 2>/dev/null | grep -c .)" -ge 6 ] && break
		sleep 0.05
	done
	python3 "$TMPD/obs.py" "$UCCL_SOCKET" 65529 3 0 >"$TMPD/obs-more.out" 2>&1
	held=$(cat "$TMPD"/obs-6553?.out | grep -o ok | wc -l)
	expect "6 uids hold 2 observers each ($held)" [ "$held" = 12 ]
	expect "a 7th uid is refused: the rest is kept for admins ($(cat "$TMPD/obs-more.out"))" \
		grep -q "^65529 refused refused refused$" "$TMPD/obs-more.out"
	expect "... and says so" grep -q "the last 4 are kept for admins" "$TMPD/daemon.log"
	expect "root's ucclctl still gets in" "$UCCLCTL" --socket "$UCCL_SOCKET" status
	stop_daemon
	start_daemon
	python3 "$TMPD/obs.py" "$UCCL_SOCKET" 65534 3 0 >"$TMPD/obs-uid.out" 2>&1
	expect "one uid holds at most 2 observers ($(cat "$TMPD/obs-uid.out"))" \
		grep -q "^65534 ok ok refused$" "$TMPD/obs-uid.out"
	expect "... and says so" grep -q "too many observers of uid 65534 (2; admins may hold more)" "$TMPD/daemon.log"
	stop_daemon
	# Two allowed uids hold 32 unattached connections each (opened again
	# as the attach deadline closes them): past max_clients + 16 + 32
	# connections (49 with max_clients = 1) only admins get in, so root's
	# ucclctl still does (it was refused: the cap came before the creds).
	cat >"$TMPD/idle.py" <<'PY'
import os, socket, sys, time
uid, n, secs = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
os.setgid(uid)
os.setuid(uid)
held, end = [], time.time() + secs
while time.time() < end:
    held = [s for s in held if s.fileno() >= 0]
    while len(held) < n:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(sys.argv[1])
        except OSError:
            s.close()
            break
        held.append(s)
    print(len(held), flush=True)
    time.sleep(0.2)
PY
	printf 'max_clients = 1\n' >"$TMPD/one.conf"
	start_daemon "$TMPD/one.conf"
	for u in 65532 65533; do
		python3 "$TMPD/idle.py" "$UCCL_SOCKET" $u 32 6 >"$TMPD/idle-$u.out" 2>&1 &
		BG_PIDS="$BG_PIDS $!"
	done
	for _ in $(seq 100); do
		grep -q "too many connections" "$TMPD/daemon.log" && break
		sleep 0.05
	done
	expect "ordinary users' idle connections reach the cap" grep -q "too many connections" "$TMPD/daemon.log"
	expect "root's ucclctl still gets in past it" "$UCCLCTL" --socket "$UCCL_SOCKET" status
	stop_daemon
else
	ok "# skip connect_same_user (needs root, and a build tree uid 65534 can read, to run clients as other users)"
fi
finish
