#!/bin/sh
# SPDX-License-Identifier: MIT
# An accept answered while the listener's client does not read (its reply
# waits in the daemon's output buffer) must not take the next connection
# too: that one's reply was dropped, the connection half made (the
# connecting side open, the listener never told) and its slot held for
# good. The listener fills its socket with status replies, parks an
# accept, another client connects twice; then the listener reads: the
# first accept has conn 0 and the second accept conn 1.
. "$(dirname "$0")/lib.sh"
printf 'engine_threads = 2\nmax_conns_per_endpoint = 4\nmax_listen_backlog = 4\n' >"$TMPD/c.conf"
start_daemon "$TMPD/c.conf"
PYTHONPATH=$top_srcdir/tests/integration timeout 60 python3 - "$UCCL_SOCKET" >"$TMPD/held.out" 2>&1 <<'PY'
import socket, struct, sys, time
import ctlproto as uc
p = sys.argv[1]
def status_reqs(c, n):
    blob = b''
    for _ in range(n):
        c.seq += 1
        req = uc.field(1, 0, c.seq) + uc.field(30, 2, b'')
        blob += struct.pack('<I', len(req)) + req
    return blob
def frames_queued(c):
    data = c.s.recv(1 << 24, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    i = n = 0
    while i + 4 <= len(data):
        l = struct.unpack('<I', data[i:i + 4])[0]
        if i + 4 + l > len(data):
            break
        i += 4 + l
        n += 1
    return n
# how many status replies fill the daemon's socket to a client that reads nothing
cal = uc.C(p, 'cal')
cal.s.setblocking(False)
try:
    cal.s.send(status_reqs(cal, 3000))
except BlockingIOError:
    pass
cal.s.setblocking(True)
time.sleep(1.0)
k = frames_queued(cal)
cal.s.close()
time.sleep(0.2)
a = uc.C(p, 'lis')
la, _ = a.ep_create(0)
assert a.listen(la, 'L')['status'] == 0
a.s.sendall(status_reqs(a, k))     # k replies fill the socket ...
a.accept_req(la, 5000)              # ... and the accept parks
time.sleep(0.5)
b = uc.C(p, 'con')
lb, _ = b.ep_create(1)
for i in range(2):
    b.connect_req(lb, 'L')
    r = b.recv(5)
    print('connect', i, r['status'])
    time.sleep(0.1)
time.sleep(0.2)
got = []
while True:
    r = a.recv(1.0)
    if r is None:
        break
    got.append(r)
acc = [a.conn_of(r, 18) for r in got if 18 in r['raw']]
print('first accept', acc)
a.accept_req(la, 300)
r = a.recv(5)
print('second accept', r['status'], a.conn_of(r, 18) if r['status'] == 0 else None)
PY
rc=$?
cat "$TMPD/held.out"
expect "the script ran (rc $rc)" [ "$rc" -eq 0 ]
expect "both connects succeed" eval '[ "$(grep -c "^connect [01] 0$" "$TMPD/held.out")" = 2 ]'
expect "the parked accept got conn 0" grep -q "^first accept \[0\]$" "$TMPD/held.out"
expect "the next accept gets conn 1, not a timeout" grep -q "^second accept 0 1$" "$TMPD/held.out"
stop_daemon
finish
