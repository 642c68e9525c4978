#!/bin/sh
# SPDX-License-Identifier: MIT
# A full ring is -EAGAIN; nothing is lost; outstanding receives are bounded.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client backpressure" "$ITEST" backpressure
stop_daemon
finish
