#!/bin/sh
# SPDX-License-Identifier: MIT
# Transport settings from uccl.conf reach the channels: two daemons on
# 127.0.0.1 with go_back_n, a 64K chunk_bytes and different
# max_inflight_bytes, one past what 4096 packets of MTU 1500 hold; data_crc
# on a only, which b hears in a's hello. Each logs its channel's recovery
# mode and checksum (both directions carry one), hears the other's
# max_inflight_bytes (the window it takes packets in), and a transfer each
# way is verified byte for byte with no packet refused for its checksum.
# No root needed.
. "$(dirname "$0")/lib.sh"

set -- $(free_ports 2)
PA=$1 PB=$2
pair_confs "$PA" "$PB" "mtu = 1500" "go_back_n = true" "chunk_bytes = 64K"
echo "max_inflight_bytes = 32M" >>"$TMPD/a.conf"
echo "data_crc = true" >>"$TMPD/a.conf"
echo "max_inflight_bytes = 8M" >>"$TMPD/b.conf"
expect "the settings pass --check-config" "$UCCLSVCD" --check-config "$TMPD/a.conf"
start_pair
for n in a b; do
	expect "$n's channel runs go-back-n with crc32c (its log says)" \
		grep -q "data channel .* up (mtu 1500, 4 paths, go-back-n recovery, cc window, crc32c)" \
		"$TMPD/$n.log"
done

# each announces the window it takes packets in (the other sends no more)
peer_window() { ctl_py "$1" peers "[p['max_inflight_bytes'] for p in d['peers'] if p['name'] == '$2'][0]"; }
expect "a hears b's max_inflight_bytes (8M)" [ "$(peer_window "$SOCK_A" node-b)" = 8388608 ]
expect "b hears a's max_inflight_bytes (32M)" [ "$(peer_window "$SOCK_B" node-a)" = 33554432 ]

xfer "$SOCK_A" "$SOCK_B" node-b 128M one
xfer "$SOCK_B" "$SOCK_A" node-a 32M two
expect "both channels say they carry a crc (ucclctl channels)" \
	eval '[ "$(chan_field "$SOCK_A" crc)" = True ] && [ "$(chan_field "$SOCK_B" crc)" = True ]'
expect "no packet was dropped for its checksum (b sent one with each)" \
	eval '[ "$(chan_field "$SOCK_A" drop_crc)" -eq 0 ] && [ "$(chan_field "$SOCK_B" drop_crc)" -eq 0 ]'
expect "b received a's data (data_pkts_rx)" [ "$(chan_field "$SOCK_B" data_pkts_rx)" -gt 90000 ]

finish_pair
