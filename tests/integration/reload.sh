#!/bin/sh
# SPDX-License-Identifier: MIT
# SIGHUP applies reloadable options, logs each change, keeps the rest.
. "$(dirname "$0")/lib.sh"
printf 'log_level = info\nmax_clients = 8\nring_depth = 1024\n' >"$TMPD/u.conf"
start_daemon "$TMPD/u.conf"
printf 'log_level = debug\nmax_clients = 9\nring_depth = 2048\n' >"$TMPD/u.conf"
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do grep -q "reloaded" "$TMPD/daemon.log" && break; sleep 0.1; done
expect "reload logged" grep -q "reloaded" "$TMPD/daemon.log"
expect "max_clients change logged" grep -q "max_clients: 8 -> 9" "$TMPD/daemon.log"
expect "non-reloadable change reported" grep -q "ring_depth.*restart" "$TMPD/daemon.log"
"$UCCLCTL" --json status >"$TMPD/st.json"
expect "new max_clients in effect" python3 -c "
import json,sys; d=json.load(open('$TMPD/st.json')); s=d.get('status', d); sys.exit(0 if s['max_clients']==9 else 1)"
printf 'log_level = bogus\n' >"$TMPD/u.conf"
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do grep -q "reload failed" "$TMPD/daemon.log" && break; sleep 0.1; done
expect "a bad file on reload is reported and the daemon keeps running" grep -q "reload failed" "$TMPD/daemon.log"
expect "still serving" "$UCCLCTL" status
stop_daemon
finish
