#!/bin/sh
# SPDX-License-Identifier: MIT
# Forged DATA packets that pass the token check, from a raw UDP sender that
# read a real packet off the wire (root: a packet socket on lo): puts past
# the end of the target region, with a wrapping offset and with a guessed
# key, and gets past the end, of 2^64-1 bytes and with a guessed key. The
# receiving daemon refuses each and counts it by reason (rx_refused_range,
# rx_refused_access in ucclctl stats); the region is unchanged byte for
# byte, no get is answered, both daemons keep serving, and transfers
# between them work again (the channel may have to be rebuilt first). (The token is not a
# cryptographic authenticator, docs/wire-protocol.md: what stops these is
# the key and range check.) All traffic stays on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: reading packets off lo needs root"
	exit 77
fi
if ! python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW).bind(("lo", 0))' 2>/dev/null; then
	echo "skip: no packet socket on lo here (CAP_NET_RAW?)"
	exit 77
fi
set -- $(free_ports 2)
PA=$1 PB=$2
pair_confs "$PA" "$PB" "data_port = 0"
# a sends one packet a datagram (the sniffer below reads the first one);
# b takes more paths than a, so the forger can speak from a port in a's
# range that a does not use (b knows a's packets by their source port)
echo "udp_pack = false" >>"$TMPD/a.conf"
sed -i 's/^data_paths = 4$/data_paths = 8/' "$TMPD/b.conf"
start_pair
DPA=$(data_port a)
DPB=$(data_port b)
expect "data ports known ($DPA, $DPB)" eval '[ -n "$DPA" ] && [ -n "$DPB" ]'

# the sniffer-forger: reads a->b DATA until the client's put is done, then
# sends forged puts and gets for the same connection, key and token
python3 - "$DPA" "$DPB" "$TMPD/put.done" >"$TMPD/forge.out" 2>&1 <<'EOF' &
import ctypes, os, socket, struct, sys, time
dpa, dpb, done = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
HDR = "<BBBBBBHIIQIIQQQQQQIIQ"       # DATA, docs/wire-protocol.md
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
# only IPv4 UDP to b's port reaches us: other tests may run bulk
# transfers on lo at the same time and would overflow this socket
bpf = [(0x28, 0, 0, 12), (0x15, 0, 8, 0x800),     # ethertype IPv4
       (0x30, 0, 0, 23), (0x15, 0, 6, 17),         # UDP
       (0x28, 0, 0, 20), (0x45, 4, 0, 0x1fff),     # not a fragment
       (0xb1, 0, 0, 14), (0x48, 0, 0, 16),         # destination port
       (0x15, 0, 1, dpb), (0x06, 0, 0, 0x40000), (0x06, 0, 0, 0)]
prog = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in bpf))
raw.setsockopt(socket.SOL_SOCKET, 26, struct.pack("HL", len(bpf), ctypes.addressof(prog)))  # SO_ATTACH_FILTER
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
raw.bind(("lo", 0))
raw.settimeout(0.05)
print("sniffing", flush=True)
put, max_psn, max_msg, t_end = None, None, 0, None
while t_end is None or time.time() < t_end:
    if t_end is None and os.path.exists(done):
        t_end = time.time() + 0.3         # what is still on its way
    try:
        frame, addr = raw.recvfrom(70000)
    except socket.timeout:
        continue
    if addr[2] != socket.PACKET_HOST or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        continue
    ip = 14 + (frame[14] & 15) * 4
    sport, dport = struct.unpack(">HH", frame[ip:ip + 4])
    if dport != dpb or not dpa <= sport < dpa + 4:
        continue
    o = ip + 8
    while len(frame) - o >= 96 and frame[o:o + 3] == b"\x55\x05\x01":  # GSO: DATA (wire version 5) back to back
        h = list(struct.unpack_from(HDR, frame, o))
        psn, plen, msg = h[7], h[8], h[12]
        max_psn = psn if max_psn is None or (psn - max_psn) & 0x80000000 == 0 else max_psn
        max_msg = max(max_msg, msg)
        if h[4] == 2 and plen == 64 and h[16] == 4096:
            put = h
        o += 96 + plen
if put is None:
    print("no put seen"); sys.exit(1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", dpa + 6))
key, bad = put[15], put[15] ^ 0x5a5a5a5a5a5a5a5a
# puts of 64 B: past the end, a wrapping offset, a guessed key; gets
# (a 16-byte request: u64 length, u64 id) past the end, of 2^64-1 bytes,
# with a guessed key
forged = [(2, key, 65536 - 32, 64), (2, key, 2**64 - 8, 64), (2, bad, 0, 64),
          (3, key, 65536 - 32, 64), (3, key, 0, 2**64 - 1), (3, bad, 0, 64)]
nput = 0
for k, (op, rkey, roff, n) in enumerate(forged):
    h = list(put)
    h[4] = op
    h[6] = 6                               # path: the port's index
    h[7] = (max_psn + 1 + k) & 0xffffffff  # next in b's window
    h[12] = max_msg + 1 + k                # a message of its own
    h[15], h[16] = rkey, roff
    if op == 2:
        payload = b"\xee" * n
        h[20] = put[20] + 1 + nput         # the put's number on the connection
        nput += 1
    else:
        payload = struct.pack("<QQ", n, 1000 + k)
        h[20] = 0
    h[8] = h[13] = len(payload)            # payload_len, msg_len
    s.sendto(struct.pack(HDR, *h) + payload, ("127.0.0.1", dpb))
print("forged", len(forged), "puts and gets after psn", max_psn, "for key", hex(key))
EOF
FP=$!
BG_PIDS="$BG_PIDS $FP"
for _ in $(seq 100); do grep -q sniffing "$TMPD/forge.out" && break; sleep 0.05; done

UCCL_SOCKET=$SOCK_B "$ITEST" fserve fk "$TMPD/go" >"$TMPD/fserve.out" 2>&1 &
SVP=$!
BG_PIDS="$BG_PIDS $SVP"
wait_ep "$SOCK_B" fk || fail "server fk never showed up at b"
UCCL_SOCKET=$SOCK_A "$ITEST" fclient node-b/fk "$TMPD/go" >"$TMPD/fclient.out" 2>&1 &
CLP=$!
BG_PIDS="$BG_PIDS $CLP"
for _ in $(seq 200); do grep -q "put done" "$TMPD/fclient.out" && break; sleep 0.05; done
# b's counters once the real traffic is done (the key went b->a as DATA)
rng0=$(eng_stat "$SOCK_B" rx_refused_range)
acc0=$(eng_stat "$SOCK_B" rx_refused_access)
ref0=$(chan_field "$SOCK_B" drop_refused)
dtx0=$(chan_field "$SOCK_B" data_pkts_tx)
touch "$TMPD/put.done"
wait $FP
frc=$?
cat "$TMPD/forge.out"
expect "the forger read a's put off lo and sent its packets (rc $frc)" [ "$frc" -eq 0 ]
# counted once b's engine has taken them
for _ in $(seq 100); do
	[ "$(eng_stat "$SOCK_B" rx_refused_access)" != "$acc0" ] && break
	sleep 0.05
done
rng1=$(eng_stat "$SOCK_B" rx_refused_range)
acc1=$(eng_stat "$SOCK_B" rx_refused_access)
ref1=$(chan_field "$SOCK_B" drop_refused)
dtx1=$(chan_field "$SOCK_B" data_pkts_tx)
expect "two puts and two gets out of the region's range refused ($rng0 -> $rng1)" [ "$rng1" -eq $((rng0 + 4)) ]
expect "a put and a get with a guessed key refused ($acc0 -> $acc1)" [ "$acc1" -eq $((acc0 + 2)) ]
expect "the channel counts six refused packets ($ref0 -> $ref1)" [ "$ref1" -eq $((ref0 + 6)) ]
expect "b sent no data back: no get was answered ($dtx0 -> $dtx1)" [ "$dtx1" -eq "$dtx0" ]
touch "$TMPD/go"
wait $SVP
src=$?
wait $CLP
crc=$?
cat "$TMPD/fserve.out" "$TMPD/fclient.out"
expect "the region holds its own bytes and the real put's, nothing forged (rc $src)" [ "$src" -eq 0 ]
expect "the client's put and signal succeeded (rc $crc)" [ "$crc" -eq 0 ]
expect "daemon b still serving" eval '"$UCCLCTL" --socket "$SOCK_B" status >/dev/null'
expect "daemon a still serving" eval '"$UCCLCTL" --socket "$SOCK_A" status >/dev/null'

# The forged packets took the psns a sends next: b takes those for
# duplicates, a the ACKs for psns it never sent (README, Missing), so the
# next transfer may fail; a's channel then gives up and both sides rebuild
# it with new tokens. A verified transfer a -> b must work again, in a few
# tries (each bounded).
t0=$(date +%s)
ok_try=0
for k in 1 2 3 4 5; do
	if xfer_ok "$SOCK_A" "$SOCK_B" node-b 16M "after$k"; then
		ok_try=$k
		break
	fi
	echo "transfer after the forging, try $k: sender rc $XFER_RC, receiver rc $XFER_RRC:" \
		"$(tail -n 1 "$TMPD/send-after$k.out")"
done
expect "a verified 16M transfer a->b works again (try $ok_try, after $(( $(date +%s) - t0 )) s)" \
	[ "$ok_try" -gt 0 ]
finish_pair
