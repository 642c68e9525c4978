#!/bin/sh
# SPDX-License-Identifier: MIT
# Clients cannot reach each other's memory without the right key and peer.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client isolation" "$ITEST" isolation
stop_daemon
finish
