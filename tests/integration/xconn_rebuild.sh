#!/bin/sh
# SPDX-License-Identifier: MIT
# The channel between two engine threads of one daemon gives up (its
# packets are dropped, as if a thread had stalled for seconds: nftables on
# loopback, root only, exit 77 otherwise): the transfer over it fails, and
# the daemon, told by the engine thread, makes the channel again at once,
# so that the next connect between those threads works (it used to fail
# with ENETRESET until a restart, and later the first connect after a
# give-up still failed, having the channel made again).
. "$(dirname "$0")/lib.sh"
XFER=$top_builddir/client/uccl_xfer
if ! nft_ok; then
	echo "# skip: needs root and nft (a table could not be added)"
	exit 77
fi
T=uccl_xr_$$
trap 'nft delete table inet '"$T"' 2>/dev/null; cleanup' EXIT
printf 'engine_threads = 2\nrto_min_us = 1000\n' >"$TMPD/c.conf"
start_daemon "$TMPD/c.conf"
P0=$(sed -n 's/.*data plane on udp 127.0.0.1:\([0-9]*\) .*/\1/p' "$TMPD/daemon.log" | head -n 1)
P1=$(sed -n 's/.*data plane of engine thread 1 on udp port \([0-9]*\).*/\1/p' "$TMPD/daemon.log" | head -n 1)
expect "the threads' data ports are logged ($P0, $P1)" [ -n "$P0" -a -n "$P1" ]

xfer() { # xfer NAME: 16 MiB from an endpoint on thread 1 to one on thread 0
	local r s
	# placement takes the thread with the fewest endpoints: the receiver
	# (first) goes to 0, the sender to 1, as long as none is left over
	"$XFER" --quiet --bytes 16M recv "$1" >"$TMPD/$1.recv" 2>&1 &
	r=$!
	BG_PIDS="$BG_PIDS $r"
	wait_ep "$UCCL_SOCKET" "$1" || fail "receiver $1 never showed up"
	timeout 30 "$XFER" --quiet --bytes 16M send "$1" >"$TMPD/$1.send" 2>&1
	s=$?
	kill "$r" 2>/dev/null
	wait "$r" 2>/dev/null
	sleep 0.2
	return $s
}
nft add table inet "$T"
nft add chain inet "$T" out '{ type filter hook output priority 0; }'
nft add rule inet "$T" out ip daddr 127.0.0.1 udp dport "{ $P0, $P1 }" drop
xfer x1
rc=$?
expect "a transfer while the threads cannot hear each other fails (rc $rc)" [ "$rc" -ne 0 ]
nft delete table inet "$T"
remade() {
	for _ in $(seq 100); do
		grep -q "engine threads [01] and [01]: the channel between them gave up; made again" \
			"$TMPD/daemon.log" && return 0
		sleep 0.05
	done
	return 1
}
expect "the daemon made the channel again on its own, before any connect" remade
xfer x2
rc=$?
[ "$rc" -eq 0 ] || cat "$TMPD/x2.send"
expect "the next transfer between the threads works (rc $rc)" [ "$rc" -eq 0 ]
stop_daemon
finish
