#!/bin/sh
# SPDX-License-Identifier: MIT
# Receiver-driven congestion control between two daemons on 127.0.0.1: both
# send with cc = eqds and grant credit at pull_rate_mbps. A verified transfer
# each way, the channel shows its controller and the credit the sender
# holds, and the receiver's pacing bounds the rate (an upper bound only: a
# slow machine can only make it slower). No root needed.
. "$(dirname "$0")/lib.sh"
RATE_MBPS=2000

set -- $(free_ports 2)
PA=$1 PB=$2
pair_confs "$PA" "$PB" "cc = eqds" "pull_rate_mbps = $RATE_MBPS"
start_pair
expect "both channels run eqds" \
	eval '[ "$(chan_field "$SOCK_A" cc)" = eqds ] && [ "$(chan_field "$SOCK_B" cc)" = eqds ]'

xfer "$SOCK_A" "$SOCK_B" node-b 256M one
xfer "$SOCK_B" "$SOCK_A" node-a 64M two

# paced at 2000 Mbit/s of wire bytes: the payload rate cannot be above it
gbps=$(sed -n 's/.*(\([0-9.]*\) Gbit\/s).*/\1/p' "$TMPD/send-one.out")
expect "the receiver's pacing bounds the rate ($gbps Gbit/s <= 2.2)" \
	python3 -c "import sys; sys.exit(0 if 0 < float('$gbps') <= 2.2 else 1)"
expect "b granted credit and a received it (--json credits_tx/credits_rx)" \
	eval '[ "$(chan_field "$SOCK_B" credits_tx)" -gt 0 ] && [ "$(chan_field "$SOCK_A" credits_rx)" -gt 0 ]'
expect "the channel reports the memory it holds (state_bytes)" \
	eval '[ "$(chan_field "$SOCK_A" state_bytes)" -gt 0 ]'
expect "credit went both ways" \
	eval '[ "$("$UCCLCTL" --socket "$SOCK_A" channels | grep -c credit_pkts)" -ge 1 ]'

finish_pair
