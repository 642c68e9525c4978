#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad control input closes only the offending client, with a logged reason.
. "$(dirname "$0")/lib.sh"
start_daemon
expect "itest_client badinput" "$ITEST" badinput "$UCCL_SOCKET"
expect "oversized frame logged" grep -q "bad frame length" "$TMPD/daemon.log"
expect "version mismatch logged with both versions" grep -q "protocol 99, daemon speaks 1" "$TMPD/daemon.log"
expect "request before attach logged" grep -q "request before attach" "$TMPD/daemon.log"
expect "undecodable request logged" grep -qE "undecodable request|names no operation" "$TMPD/daemon.log"
expect "unexpected fd logged" grep -q "file descriptor" "$TMPD/daemon.log"
expect "attach deadline logged" grep -q "no attach request in time" "$TMPD/daemon.log"
stop_daemon
finish
