#!/bin/sh
# SPDX-License-Identifier: MIT
# A get whose responder gives up: b gets 16M from a's region, and a's
# responses never reach b (nftables drops every large datagram to b's data
# port; acknowledgements still pass). a's channel gives up on b, but b's,
# with nothing left to send, stays fine: b's get would wait for ever. a's
# engine tells its daemon, which restarts the peer (both rebuild their
# channels), and b's get completes with an error within seconds; a's log
# says why. Needs root for nftables (exit 77 otherwise). All traffic stays
# on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
nft_ok || { echo "SKIP: needs root and nft (a table could not be added)"; exit 77; }
NT=uccl_getgu_$$
trap 'nft delete table inet "$NT" 2>/dev/null; cleanup' EXIT

set -- $(free_ports 2)
pair_confs "$1" "$2" "peer_timeout_ms = 3000"
start_pair
BP=$(data_port b)
expect "b's data port is known ($BP)" [ -n "$BP" ]

UCCL_SOCKET=$SOCK_A "$ITEST" gserve gg 16777216 "$TMPD/done" >"$TMPD/gserve.out" 2>&1 &
GS=$!
BG_PIDS="$BG_PIDS $GS"
expect "the server listens" wait_ep "$SOCK_A" gg
UCCL_SOCKET=$SOCK_B "$ITEST" gclient node-a/gg 16777216 "$TMPD/go" >"$TMPD/gclient.out" 2>&1 &
GC=$!
BG_PIDS="$BG_PIDS $GC"
keyed() { for _ in $(seq 100); do grep -q "^keyed" "$TMPD/gclient.out" && return 0; sleep 0.05; done; return 1; }
expect "the client has the region's key" keyed
nft add table inet "$NT" &&
	nft add chain inet "$NT" out '{ type filter hook output priority 0; }' &&
	nft add rule inet "$NT" out ip daddr 127.0.0.1 udp dport "$BP" udp length \> 1200 drop
expect "large datagrams to b are dropped from now on" [ $? -eq 0 ]
touch "$TMPD/go"
wait "$GC"
rc=$?
cat "$TMPD/gclient.out"
expect "b's get completed (rc $rc)" [ "$rc" -eq 0 ]
res=$(sed -n 's/^get res \(-*[0-9]*\) after \([0-9]*\) ms$/\1/p' "$TMPD/gclient.out")
ms=$(sed -n 's/^get res -*[0-9]* after \([0-9]*\) ms$/\1/p' "$TMPD/gclient.out")
expect "... with an error ($res)" [ -n "$res" ] && [ "$res" -lt 0 ]
expect "... within 15 s (${ms:-?} ms)" [ -n "$ms" ] && [ "$ms" -lt 15000 ]
expect "a says its channel gave up and restarted the peer" \
	grep -q "peer node-b: a data channel gave up while the peer stayed connected; restarting the peer" \
	"$TMPD/a.log"
nft delete table inet "$NT"
touch "$TMPD/done"
wait "$GS"
grc=$?
expect "a's server ended when told (rc $grc)" [ "$grc" -eq 0 ]
# and the pair works again
expect "the channel is back up" wait_chan "$SOCK_B" 200
xfer "$SOCK_A" "$SOCK_B" node-b 16M again
finish_pair
