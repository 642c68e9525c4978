#!/bin/sh
# SPDX-License-Identifier: MIT
# The library against a daemon that answers badly (a fake one, in Python):
# a reply that does not decode, or one that answers a request not yet
# sent, fails the call (or, arriving late for a call that timed out, the
# next call) and closes the control connection, so that the
# daemon frees with the session whatever the request made (it cannot be
# named to undo it); the next call fails at once with EPIPE. No root
# needed.
. "$(dirname "$0")/lib.sh"

# fake_daemon SOCKET KIND: answers the attach, then the next request with
# KIND (garbage: bytes that do not decode; ahead: a reply to a later
# request; late: garbage 0.6 s later, after the client's 300 ms timeout),
# then prints whether the client closed its end within 5 s
fake_daemon() {
	PYTHONPATH=$top_srcdir/tests/integration python3 - "$1" "$2" <<'PY' &
import socket, struct, sys, select, time
from ctlproto import field
def frame(b): return struct.pack('<I', len(b)) + b
def read_frame(c):
    h = b''
    while len(h) < 4:
        d = c.recv(4 - len(h))
        if not d: raise EOFError
        h += d
    n = struct.unpack('<I', h)[0]; b = b''
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d: raise EOFError
        b += d
    return b
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
read_frame(c)
attach = field(1, 0, 1) + field(2, 0, 7) + field(3, 2, 'fake')
c.sendall(frame(field(1, 0, 1) + field(2, 0, 0) + field(10, 2, attach)))
read_frame(c)
if sys.argv[2] == 'late':
    time.sleep(0.6)
if sys.argv[2] in ('garbage', 'late'):
    c.sendall(frame(b'\x0a\xff'))      # a field 255 bytes long in 1: does not decode
else:
    c.sendall(frame(field(1, 0, 9) + field(2, 0, 0)))
r, _, _ = select.select([c], [], [], 5)
print('eof' if r and c.recv(4096) == b'' else 'no eof', flush=True)
PY
}

for kind in garbage ahead late; do
	sock=$TMPD/fake-$kind.sock
	fake_daemon "$sock" "$kind" >"$TMPD/fake-$kind.out" 2>&1
	fpid=$!
	BG_PIDS="$BG_PIDS $fpid"
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
	expect "itest_client badreply ($kind)" "$ITEST" badreply "$sock" "$kind"
	wait "$fpid"
	expect "the client closed the control connection ($kind: $(cat "$TMPD/fake-$kind.out"))" \
		grep -qx eof "$TMPD/fake-$kind.out"
done
finish
