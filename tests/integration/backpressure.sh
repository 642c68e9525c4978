#!/bin/sh
# SPDX-License-Identifier: MIT
# A full ring is -EAGAIN; nothing is lost; outstanding receives are bounded.
# And uccl_xfer lives with rings of 16 and thousands of tiny chunks: it
# retries only what was refused and reads completions meanwhile (it used
# to put a chunk twice, and to spin without reading them until the daemon
# stopped taking descriptors for good; and to post its last messages into
# a ring still full of the transfer's completions, failing at once).
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client backpressure" "$ITEST" backpressure
stop_daemon
printf 'ring_depth = 16\n' >"$TMPD/small.conf"
start_daemon "$TMPD/small.conf"
xfer_pair tiny "" "" --bytes 1M --chunk 64 --slots 1024
expect "16384 chunks of 64 B through rings of 16 (rc $rc/$rrc)" [ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]
expect "... each put once: 0 failed of 2 x 16384 + 2000" grep -q "0 failed operations of 34768" "$TMPD/tiny.send"
# Posts refused (eagain_shim): each is tried again, none posted twice.
# ASan wants its runtime first among the libraries; the shim comes first
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
EAGAIN=$top_builddir/tests/integration/.libs/libeagain_shim.so
xfer_pair refused "$EAGAIN" "$EAGAIN" --bytes 256K --chunk 1K --slots 8
expect "posts refused: the transfer still ends (rc $rc/$rrc)" [ "$rc" -eq 0 ] && [ "$rrc" -eq 0 ]
expect "... each put once: 0 failed of 2 x 256 + 2000" grep -q "0 failed operations of 2512" "$TMPD/refused.send"
stop_daemon
finish
