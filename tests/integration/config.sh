#!/bin/sh
# SPDX-License-Identifier: MIT
# --check-config accepts good files, names FILE:LINE for bad ones and, as
# the start does, takes an extra argument as a usage error;
# max_clients_per_uid caps one user's attached clients; what a timed-out
# create or connect made in the daemon is undone when its late reply comes.
. "$(dirname "$0")/lib.sh"
expect "shipped example is valid" "$UCCLSVCD" --check-config "$top_srcdir/conf/uccl.conf.example"
printf 'max_clients = 8\n# comment\nlog_level = debug\n' >"$TMPD/good.conf"
expect "a small file is valid" "$UCCLSVCD" --check-config "$TMPD/good.conf"
printf 'max_clients = 8\nno_such_option = 1\n' >"$TMPD/bad1.conf"
"$UCCLSVCD" --check-config "$TMPD/bad1.conf" 2>"$TMPD/err1" && fail "unknown key accepted" || ok "unknown key rejected"
expect "unknown key error names file:line" grep -q "bad1.conf:2:" "$TMPD/err1"
printf 'max_clients = 0\n' >"$TMPD/bad2.conf"
"$UCCLSVCD" --check-config "$TMPD/bad2.conf" 2>"$TMPD/err2" && fail "out of range accepted" || ok "out of range rejected"
expect "range error names file:line" grep -q "bad2.conf:1:" "$TMPD/err2"
"$UCCLSVCD" --config "$TMPD/bad2.conf" --runtime-dir "$TMPD/run" 2>"$TMPD/err3" && fail "daemon started on a bad file" || ok "daemon refuses to start on a bad file"
expect "--version works" "$UCCLSVCD" --version
expect "--help lists -h, --help" eval '"$UCCLSVCD" --help | grep -q -- "-h, --help"'
# an extra argument is a usage error (2) with --check-config as without it
rc=0; "$UCCLSVCD" --check-config "$TMPD/good.conf" extra >/dev/null 2>"$TMPD/extra.err" || rc=$?
expect "--check-config FILE with an extra argument exits 2 (rc $rc)" [ "$rc" -eq 2 ]
expect "... naming it" grep -q "unexpected argument 'extra'" "$TMPD/extra.err"
# --check-config says what the start would say: a key file is read only
# with peering on, and a wildcard data_address is refused with it
printf 'peer_listen = none\npeer_key_file = %s/no.key\n' "$TMPD" >"$TMPD/nokey.conf"
expect "a key file unused without peering does not fail the check" \
	"$UCCLSVCD" --check-config "$TMPD/nokey.conf"
printf 'peer_listen = 127.0.0.1:1\ndata_address = 0.0.0.0\n' >"$TMPD/wild.conf"
"$UCCLSVCD" --check-config "$TMPD/wild.conf" 2>"$TMPD/wild.err" && fail "a wildcard data_address passed the check" ||
	expect "a wildcard data_address with peering fails the check" grep -q "wild.conf:2: data_address: a wildcard" "$TMPD/wild.err"
printf 'max_clients_per_uid = 3\n' >"$TMPD/uidcap.conf"
start_daemon "$TMPD/uidcap.conf"
expect "itest_client uidcap 3" "$ITEST" uidcap 3
expect "the refusal is logged" grep -q "max_clients_per_uid = 3" "$TMPD/daemon.log"
stop_daemon
# a process whose descriptor table is full gets -EMFILE from endpoint
# creation, and what the daemon made for it is undone
printf 'max_endpoints_per_client = 3\n' >"$TMPD/emfile.conf"
start_daemon "$TMPD/emfile.conf"
expect "itest_client emfile 3" "$ITEST" emfile 3
stop_daemon
printf 'max_endpoints_per_client = 4\nmax_mrs_per_client = 2\nmax_conns_per_endpoint = 1\n' \
	>"$TMPD/orphans.conf"
start_daemon "$TMPD/orphans.conf"
expect "itest_client orphans" "$ITEST" orphans "$DAEMON_PID"
stop_daemon

# the runtime dir the daemon makes is 0755 whatever its umask (under 077
# it was 0700, and no other user could reach the 0666 socket in it)
mkdir -p "$TMPD/um"
(umask 077; exec "$UCCLSVCD" --runtime-dir "$TMPD/um/run") 2>"$TMPD/um.log" &
UP=$!
BG_PIDS="$BG_PIDS $UP"
for _ in $(seq 100); do [ -S "$TMPD/um/run/ucclsvcd.sock" ] && break; sleep 0.05; done
mode=$(stat -c %a "$TMPD/um/run" 2>/dev/null)
expect "a runtime dir made under umask 077 is 0755 ($mode)" [ "$mode" = 755 ]
smode=$(stat -c %a "$TMPD/um/run/ucclsvcd.sock" 2>/dev/null)
expect "its socket is 0666 as bound ($smode)" [ "$smode" = 666 ]
kill "$UP"; wait "$UP" 2>/dev/null

# a runtime dir that others could write, or that is a link, is refused:
# whoever can rename in it could make the daemon create or chmod any file
# through a symbolic link in place of its lock or socket
refused_dir() { # refused_dir DIR WHY: the daemon does not start there, saying WHY
	timeout 10 "$UCCLSVCD" --runtime-dir "$1" 2>"$TMPD/rd.log" && return 1
	grep -q "$2" "$TMPD/rd.log" || { cat "$TMPD/rd.log"; return 1; }
}
mkdir -m 0777 "$TMPD/open"
expect "a runtime dir writable by others is refused" refused_dir "$TMPD/open" "writable by group or others"
mkdir -m 0755 "$TMPD/real"
ln -s "$TMPD/real" "$TMPD/link"
expect "a runtime dir that is a symbolic link is refused" refused_dir "$TMPD/link" "not a directory"
expect "... and nothing was made through it" [ ! -e "$TMPD/real/ucclsvcd.lock" ]
if [ "$(id -u)" -eq 0 ]; then
	mkdir -m 0755 "$TMPD/theirs"
	chown 65534 "$TMPD/theirs"
	expect "a runtime dir owned by another user is refused" refused_dir "$TMPD/theirs" "owned by uid 65534"
fi
finish
