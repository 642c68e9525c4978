# SPDX-License-Identifier: MIT
"""ctlproto: a minimal client of the control protocol (hand-rolled protobuf,
docs/control-protocol.md) for integration tests that must do what
libucclclient never does, e.g. send requests without reading replies."""
import os, socket, struct, array, time, select
def varint(n):
    out = b''
    while True:
        b, n = n & 0x7f, n >> 7
        if not n: return out + bytes([b])
        out += bytes([b | 0x80])
def field(num, wt, v):
    if isinstance(v, str): v = v.encode()
    return varint(num << 3 | wt) + (varint(v) if wt == 0 else varint(len(v)) + v)
def rdv(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1; r |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return r, i
def decode(b):
    i, out = 0, {}
    while i < len(b):
        k, i = rdv(b, i); f, wt = k >> 3, k & 7
        if wt == 0: v, i = rdv(b, i)
        elif wt == 2:
            l, i = rdv(b, i); v = b[i:i+l]; i += l
        elif wt == 1: v = b[i:i+8]; i += 8
        elif wt == 5: v = b[i:i+4]; i += 4
        out.setdefault(f, v)
    return out
def zz(v): return (v >> 1) ^ -(v & 1)
class C:
    def __init__(self, path, name='py'):
        self.s = socket.socket(socket.AF_UNIX); self.s.connect(path); self.seq = 0; self.buf = b''
        r = self.call(10, field(1, 0, 1) + field(2, 2, name))
        assert r['status'] == 0, r
    def send(self, body_num, body):
        self.seq += 1
        req = field(1, 0, self.seq) + field(body_num, 2, body)
        self.s.sendall(struct.pack('<I', len(req)) + req)
        return self.seq
    def recv(self, timeout=None):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack('<I', self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    m, self.buf = self.buf[4:4+n], self.buf[4+n:]
                    d = decode(m)
                    r = {'seq': d.get(1), 'status': zz(d.get(2, 0)), 'error': d.get(3, b'').decode(errors='replace'), 'raw': d}
                    return r
            if timeout is not None:
                rl, _, _ = select.select([self.s], [], [], timeout)
                if not rl: return None
            fds = array.array('i')
            data, anc, fl, _ = self.s.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
            for lvl, typ, cd in anc:
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fds.frombytes(cd[:len(cd) - len(cd) % 4])
            for f in fds: os.close(f)
            if not data: raise EOFError
            self.buf += data
    def call(self, body_num, body, timeout=None):
        self.send(body_num, body)
        return self.recv(timeout)
    def ep_create(self, thread=None):
        b = b'' if thread is None else field(4, 0, thread)
        r = self.call(14, b)
        assert r['status'] == 0, r
        d = decode(r['raw'][14])
        return d[1], d.get(3)
    def ep_destroy(self, ep): return self.call(15, field(1, 0, ep))
    def listen(self, ep, name): return self.call(16, field(1, 0, ep) + field(2, 2, name))
    def connect_req(self, ep, name, tmo=None):
        b = field(1, 0, ep) + field(2, 2, name)
        if tmo is not None: b += field(3, 0, tmo)
        return self.send(17, b)
    def accept_req(self, ep, tmo=None):
        b = field(1, 0, ep)
        if tmo is not None: b += field(2, 0, tmo)
        return self.send(18, b)
    def close_conn(self, ep, conn): return self.call(19, field(1, 0, ep) + field(2, 0, conn))
    def conn_of(self, r, num):
        if r['status'] != 0: return None
        return decode(r['raw'][num]).get(1, 0)
