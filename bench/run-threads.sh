#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-threads.sh: does engine_threads = N help? Two daemons on 127.0.0.1,
# each with engine_threads = N (4 data paths), and two concurrent verified
# transfers of BYTES from a to b, each on its own endpoint pair (placement
# puts them on different threads when N >= 2). Prints each sender's summary
# line and a's channels. No root; everything stays on 127.0.0.1 and is
# bounded by timeout(1).
#
# Usage: bench/run-threads.sh [BUILDDIR] [N] [BYTES]   (defaults: . 2 512M)
set -eu
B=${1:-.}
N=${2:-2}
BYTES=${3:-512M}
. "$(dirname "$0")/loopd.sh"
loopd_start "$B" threads "data_paths = 4\nengine_threads = $N"
timeout 120 "$B/client/uccl_xfer" --socket "$SB" --quiet recv x0 & R0=$!
timeout 120 "$B/client/uccl_xfer" --socket "$SB" --quiet recv x1 & R1=$!
sleep 0.3
timeout 120 "$B/client/uccl_xfer" --socket "$SA" --bytes "$BYTES" send node-b/x0 >"$T/s0" 2>&1 & S0=$!
timeout 120 "$B/client/uccl_xfer" --socket "$SA" --bytes "$BYTES" send node-b/x1 >"$T/s1" 2>&1 & S1=$!
rc=0
for p in $S0 $S1 $R0 $R1; do wait "$p" || rc=1; done
echo "engine_threads = $N, two concurrent $BYTES transfers a -> b:"
grep -h "^transfer:" "$T/s0" "$T/s1"
grep -h "^verified:" "$T/s0" "$T/s1"
"$B/client/ucclctl" --socket "$SA" channels | head -8
[ $rc -eq 0 ] || { echo "run-threads.sh: a transfer failed"; cat "$T/s0" "$T/s1" "$T/a.log" "$T/b.log"; }
loopd_stop
exit $rc
