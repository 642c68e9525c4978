#!/bin/sh
# SPDX-License-Identifier: MIT
# Two client processes use every primitive through one daemon, with data checks.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client primitives" "$ITEST" primitives
stop_daemon
finish
