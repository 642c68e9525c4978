#!/bin/sh
# SPDX-License-Identifier: MIT
# uccl_xfer checks every byte: the last chunk of an odd size has bytes past
# its last whole 8-byte word, and one of them corrupted fails the transfer
# (they used to be neither filled nor checked). The summary gives sizes
# whole (1500K is not "1 MiB", 100 bytes not "0 KiB") and a tiny
# transfer's rate not as 0.00. A run whose puts fail (chunks over the
# daemon's max_op_bytes) says why and quotes no rate. Errors say what
# failed in words, not as the C call; demo takes no argument.
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
rc=0; "$XFER" --socket "$TMPD/none.sock" send x 2>"$TMPD/none.err" || rc=$?
expect "no daemon: fails (rc $rc)" [ "$rc" -eq 1 ]
expect "... saying it was attaching ($(cat "$TMPD/none.err"))" \
	grep -q '^uccl_xfer: attaching to the daemon: ' "$TMPD/none.err"
rc=0; "$XFER" --socket "$TMPD/none.sock" demo extra 2>/dev/null || rc=$?
expect "demo with an argument is a usage error (rc $rc)" [ "$rc" -eq 2 ]
# ASan wants its runtime first among the libraries; the shim comes first
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
start_daemon
xfer_pair odd "" "" --bytes 100005 --chunk 1K --json
expect "100005 bytes in chunks of 1K verify (rc $rc/$rrc)" [ "$rc/$rrc" = 0/0 ]
TAIL=$top_builddir/tests/integration/.libs/libtail_shim.so
xfer_pair tail "$TAIL" "" --bytes 100005 --chunk 1K --json
expect "a corrupted byte past the last word fails the transfer (rc $rc/$rrc)" \
	[ "$rc/$rrc" = 1/1 ]
expect "... as one bad chunk" grep -q '"verified_chunks":97,"bad_chunks":1,' "$TMPD/tail.send"
expect "... and no rate in its JSON (a verified run has one)" \
	sh -c "grep -q '\"gbytes_per_s\":null,' '$TMPD/tail.send' && grep -q '\"gbytes_per_s\":[0-9]' '$TMPD/odd.send'"
xfer_pair tiny "$TAIL" "" --bytes 7 --json
expect "7 bytes, the last one corrupted, fail too (rc $rc/$rrc)" [ "$rc/$rrc" = 1/1 ]
"$XFER" --quiet --bytes 1500K demo >"$TMPD/1500k.out" 2>&1
expect "1500K: the summary says 1500 KiB ($(head -n 1 "$TMPD/1500k.out"))" \
	grep -q '^transfer:  1500 KiB in ' "$TMPD/1500k.out"
"$XFER" --quiet --bytes 100 demo >"$TMPD/100.out" 2>&1
expect "100 bytes: the summary says 100 B, at a rate above 0 ($(head -n 1 "$TMPD/100.out"))" \
	grep -Eq '^transfer:  100 B in .* = 0\.[0-9]*[1-9][0-9]* GB/s' "$TMPD/100.out"
stop_daemon
printf 'max_op_bytes = 1M\n' >"$TMPD/small.conf"
start_daemon "$TMPD/small.conf"
# a failed completion reaped between posts is counted for the summary; one
# reaped while waiting ends the run at once, with the reason. Try for a
# run that gets to its summary (about half do here; under ASan it may be
# none): either way it fails and says why
for i in $(seq 20); do
	rc=0
	"$XFER" --quiet --chunk 2M --bytes 8M demo >"$TMPD/big.out" 2>&1 || rc=$?
	grep -q '^errors:' "$TMPD/big.out" && break
done
cat "$TMPD/big.out"
expect "chunks over max_op_bytes fail the run (rc $rc, try $i)" [ "$rc" -eq 1 ]
if grep -q '^errors:' "$TMPD/big.out"; then
	expect "... the summary says FAILED, no rate" grep -q '^transfer:  8 MiB in .*: FAILED,' "$TMPD/big.out"
	expect "... and why the operations failed" \
		grep -q '^errors: .*; the first: message too long' "$TMPD/big.out"
else
	expect "... and why, ending at once (no run got to its summary)" \
		grep -q '^uccl_xfer: operation failed: message too long' "$TMPD/big.out"
fi
stop_daemon
finish
