# SPDX-License-Identifier: MIT
# Shared helpers for the integration tests: a private ucclsvcd in a temporary
# runtime dir, cleaned up on exit, and TAP-ish reporting.
set -u
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
UCCLSVCD=$top_builddir/daemon/ucclsvcd
UCCLCTL=$top_builddir/client/ucclctl
ITEST=$top_builddir/tests/integration/itest_client
# libtool wrappers run the uninstalled binaries with the right library path
TMPD=$(mktemp -d /tmp/uccl-itest.XXXXXX)
chmod 755 "$TMPD"   # tests run clients as other users too
# Debian's python3 first: a pyenv shim ahead of it on PATH takes 0.35-0.7 s
# to start, longer than some of the transfers the tests poll during
if [ -x /usr/bin/python3 ]; then
	mkdir "$TMPD/bin" && ln -s /usr/bin/python3 "$TMPD/bin/python3" && PATH=$TMPD/bin:$PATH
fi
DAEMON_PID=
FAILS=0
BG_PIDS=

cleanup() {
	# children first: a job run under timeout(1) is the timeout's pid,
	# and SIGKILL on it would leave its client running (orphaned, for
	# ever if it holds a connection)
	for p in $BG_PIDS; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	if [ -n "$DAEMON_PID" ]; then kill -9 "$DAEMON_PID" 2>/dev/null; fi
	rm -rf "$TMPD"
}
trap cleanup EXIT

ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; FAILS=$((FAILS + 1)); }
expect() { # expect DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}

# as_others_ok: root with setpriv, and uid 65534 can run this build's
# programs (a build tree under /root, mode 0700 on Debian, keeps it out)
as_others_ok() {
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
			'[ -r "$1" ] && [ -x "$1" ] && [ -x "$2" ]' sh "$ITEST" "$UCCLCTL"
}

# nft_ok: root with nft, and the kernel lets it add a table (an
# unprivileged container's root may not)
nft_ok() {
	[ "$(id -u)" -eq 0 ] && command -v nft >/dev/null &&
		nft add table inet "uccl_probe_$$" 2>/dev/null &&
		nft delete table inet "uccl_probe_$$"
}

# start_daemon [CONFIG]: runs ucclsvcd, waits for its socket, sets UCCL_SOCKET
# (a socket left by a killed daemon is removed first, as in start_named)
start_daemon() {
	local conf=${1:-}
	rm -f "$TMPD/run/ucclsvcd.sock"
	if [ -n "$conf" ]; then
		"$UCCLSVCD" --config "$conf" --runtime-dir "$TMPD/run" 2>"$TMPD/daemon.log" &
	else
		"$UCCLSVCD" --runtime-dir "$TMPD/run" 2>"$TMPD/daemon.log" &
	fi
	DAEMON_PID=$!
	for _ in $(seq 100); do
		[ -S "$TMPD/run/ucclsvcd.sock" ] && break
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -S "$TMPD/run/ucclsvcd.sock" ]; then
		echo "daemon did not start:"; cat "$TMPD/daemon.log"; exit 1
	fi
	export UCCL_SOCKET=$TMPD/run/ucclsvcd.sock
}

# sanitized LOG: no sanitizer report in LOG (the caller fails the test)
sanitized() { ! grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$1"; }

# stop_daemon: SIGTERM must drain and exit 0; sanitizer reports fail the test
stop_daemon() {
	local rc=0
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=
	expect "daemon exits 0 on SIGTERM (rc $rc)" [ "$rc" -eq 0 ]
	sanitized "$TMPD/daemon.log" || { fail "sanitizer report in the daemon log"; cat "$TMPD/daemon.log"; }
}

finish() {
	if [ "$FAILS" -ne 0 ]; then
		echo "--- daemon log ---"; cat "$TMPD/daemon.log" 2>/dev/null
		exit 1
	fi
	exit 0
}

# ---- two daemons (peers.sh, remote.sh, netns.sh) ----
# start_named NAME [PREFIX...]: (re)starts the daemon configured by
# $TMPD/NAME.conf, runtime dir $TMPD/rNAME, appending to $TMPD/NAME.log,
# run through PREFIX (e.g. ip netns exec NS); waits for its socket; the pid
# is in STARTED_PID. The previous instance must be gone: the socket a
# killed one left is removed first, else the wait below could take it for
# the new one's (and then see it vanish as the daemon replaces it).
start_named() {
	local name=$1 dir=$TMPD/r$1 pid
	shift
	rm -f "$dir/ucclsvcd.sock"
	"$@" "$UCCLSVCD" --config "$TMPD/$name.conf" --runtime-dir "$dir" 2>>"$TMPD/$name.log" &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	for _ in $(seq 100); do
		[ -S "$dir/ucclsvcd.sock" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -S "$dir/ucclsvcd.sock" ]; then
		echo "daemon $name did not start:"; cat "$TMPD/$name.log"; exit 1
	fi
	STARTED_PID=$pid
}

# data_port NAME: the data port daemon NAME's log announced last
data_port() { sed -n 's/.*data plane on udp [0-9.]*:\([0-9]*\) .*/\1/p' "$TMPD/$1.log" | tail -n 1; }

# stop_named NAME PID: SIGTERM daemon NAME (pid PID); it must exit 0 and
# its log ($TMPD/NAME.log) hold no sanitizer report
stop_named() {
	local rc=0
	kill -TERM "$2"
	wait "$2" || rc=$?
	expect "daemon $1 exits 0 on SIGTERM (rc $rc)" [ "$rc" -eq 0 ]
	sanitized "$TMPD/$1.log" || fail "sanitizer report in daemon $1's log"
}

# finish_pair: stops daemons a and b (PID_A, PID_B) with stop_named and
# exits as finish does, printing both logs on a failure
finish_pair() {
	[ -z "${PID_A:-}" ] || stop_named a "$PID_A"
	[ -z "${PID_B:-}" ] || stop_named b "$PID_B"
	PID_A= PID_B=
	if [ "$FAILS" -ne 0 ]; then
		for n in a b; do echo "--- $n.log ---"; cat "$TMPD/$n.log"; done
		exit 1
	fi
	exit 0
}

# start a|b: start_named for daemon a or b, its pid in PID_A or PID_B
start() {
	start_named "$1"
	if [ "$1" = a ]; then PID_A=$STARTED_PID; else PID_B=$STARTED_PID; fi
}

# free_ports N: N TCP ports on 127.0.0.1 nobody listens on now (the kernel
# picks them; closed at once)
free_ports() {
	python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

# ctl_py SOCK COMMAND EXPR: the Python expression EXPR over d, the daemon's
# answer to ucclctl --json COMMAND (words: "paths node-b"), printed;
# "noreply" if it did not answer
ctl_py() {
	# shellcheck disable=SC2086 # COMMAND is split into its words on purpose
	timeout 10 "$UCCLCTL" --socket "$1" --json $2 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("noreply"); sys.exit()
print(eval(sys.argv[1]))' "$3"
}

# snap_while PID SOCK COMMAND EXPR WANT: while PID runs (up to 400 times),
# save `ucclctl --json COMMAND` of SOCK every 20 ms; then print EXPR (as in
# ctl_py, over d) of the first snapshot where it equals WANT, else of the
# last ("none" without one). ucclctl alone in the loop: python3 may take
# most of a second to start (a pyenv shim), longer than what is watched.
snap_while() {
	local n=0 i=0 files=
	while kill -0 "$1" 2>/dev/null && [ $n -lt 400 ]; do
		# shellcheck disable=SC2086 # COMMAND is split into its words on purpose
		timeout 10 "$UCCLCTL" --socket "$2" --json $3 >"$TMPD/snap.$n.json" 2>/dev/null
		n=$((n + 1))
		sleep 0.02
	done
	while [ $i -lt $n ]; do files="$files $TMPD/snap.$i.json"; i=$((i + 1)); done
	# shellcheck disable=SC2086 # one file name each
	python3 -c '
import json, sys
seen = "none"
for f in sys.argv[3:]:
    try:
        d = json.load(open(f))
    except ValueError:
        continue
    seen = str(eval(sys.argv[1]))
    if seen == sys.argv[2]:
        break
print(seen)' "$4" "$5" $files
	rm -f $files
}

# wait_nchans SOCK N: until exactly N channels to peers (sub-channels,
# one per pair of engine threads) are up (100 x 50 ms)
wait_nchans() {
	for _ in $(seq 100); do
		[ "$(ctl_py "$1" channels "len([c for c in d['channels'] if c['peer'] != '(self)'])")" = "$2" ] &&
			return 0
		sleep 0.05
	done
	return 1
}

# eng_stat SOCK NAME: the engine counter NAME (ucclctl stats: summed over
# the engine threads)
eng_stat() { ctl_py "$1" stats "[s['value'] for s in d['stats'] if s['name'] == '$2'][0]"; }

# chan_field SOCK FIELD: FIELD of the only channel in ucclctl --json channels,
# "none" without a channel, "noreply" if the daemon did not answer
chan_field() {
	ctl_py "$1" channels "d['channels'][0]['$2'] if d['channels'] else 'none'"
}

# pair_confs PA PB [LINE...]: $TMPD/a.conf and $TMPD/b.conf for daemons
# node-a and node-b peering on 127.0.0.1:PA and 127.0.0.1:PB with 4 data
# paths, each LINE added to both
pair_confs() {
	local pa=$1 pb=$2 n me port l
	shift 2
	for n in a b; do
		if [ $n = a ]; then me=node-a port=$pa; else me=node-b port=$pb; fi
		{
			echo "peer_listen = 127.0.0.1:$port"
			echo "peers = node-a=127.0.0.1:$pa, node-b=127.0.0.1:$pb"
			echo "host_name = $me"
			echo "data_paths = 4"
			for l in "$@"; do echo "$l"; done
		} >"$TMPD/$n.conf"
	done
}

# start_pair: starts daemons a and b (after pair_confs), their sockets in
# SOCK_A and SOCK_B, pids in PID_A and PID_B, and expects the channel up
# both ways
start_pair() {
	SOCK_A=$TMPD/ra/ucclsvcd.sock
	SOCK_B=$TMPD/rb/ucclsvcd.sock
	start a
	start b
	expect "channel a->b up" wait_chan "$SOCK_A"
	expect "channel b->a up" wait_chan "$SOCK_B"
}

# ep_thread SOCK NAME: the engine thread of SOCK's endpoint NAME; empty if
# there is none, "noreply" if the daemon did not answer
ep_thread() {
	ctl_py "$1" endpoints "[e['thread'] for e in d['endpoints'] if e['name'] == '$2'] or ''" |
		tr -d '[]'
}

# wait_ep SOCK NAME: until SOCK's daemon has an endpoint NAME (5 s at most)
wait_ep() {
	for _ in $(seq 100); do
		case $(ep_thread "$1" "$2") in [0-9]*) return 0 ;; esac
		sleep 0.05
	done
	return 1
}

# xfer_ok FROM_SOCK TO_SOCK TO_NAME BYTES TAG: uccl_xfer moves BYTES from the
# daemon at FROM_SOCK to a receiver TAG at TO_NAME (the daemon at TO_SOCK),
# which checks every byte; 0 if both exit 0 (their exit statuses in
# XFER_RC and XFER_RRC), each side bounded to 120 s. The sender starts
# once the receiver's endpoint is there. The sender's summary is in
# $TMPD/send-TAG.out.
xfer_ok() {
	local x=$top_builddir/client/uccl_xfer rp
	timeout 120 "$x" --socket "$2" --quiet recv "$5" >"$TMPD/recv-$5.out" 2>&1 &
	rp=$!
	if ! wait_ep "$2" "$5"; then
		kill "$rp" 2>/dev/null
		wait "$rp"
		XFER_RC=-1 XFER_RRC=$?
		echo "xfer_ok: receiver $5 never showed up at $2" >>"$TMPD/send-$5.out"
		return 1
	fi
	timeout 120 "$x" --socket "$1" --bytes "$4" send "$3/$5" >"$TMPD/send-$5.out" 2>&1
	XFER_RC=$?
	wait $rp
	XFER_RRC=$?
	[ "$XFER_RC" -eq 0 ] && [ "$XFER_RRC" -eq 0 ]
}

# xfer_pair NAME SEND_PRELOAD RECV_PRELOAD ARGS...: a receiver and a sender
# of uccl_xfer ARGS on endpoint NAME of the daemon at UCCL_SOCKET, the
# sender run with LD_PRELOAD=SEND_PRELOAD and the receiver with
# LD_PRELOAD=RECV_PRELOAD ("" for none), each bounded to 60 s; their exit
# statuses in rc and rrc, their output in $TMPD/NAME.send and
# $TMPD/NAME.recv, both printed
xfer_pair() {
	local x=$top_builddir/client/uccl_xfer name=$1 spre=$2 rpre=$3 rp
	shift 3
	timeout 60 env LD_PRELOAD="$rpre" "$x" "$@" --quiet recv "$name" \
		>"$TMPD/$name.recv" 2>&1 &
	rp=$!
	expect "the receiver listens" wait_ep "$UCCL_SOCKET" "$name"
	timeout 60 env LD_PRELOAD="$spre" "$x" "$@" send "$name" >"$TMPD/$name.send" 2>&1
	rc=$?
	wait $rp
	rrc=$?
	cat "$TMPD/$name.send" "$TMPD/$name.recv"
}

# xfer FROM_SOCK TO_SOCK TO_NAME BYTES TAG: xfer_ok, its summary printed and
# expected to pass
xfer() {
	xfer_ok "$@"
	cat "$TMPD/send-$5.out"
	expect "$4 moved to $3 and verified (sender rc $XFER_RC, receiver rc $XFER_RRC)" \
		[ "$XFER_RC" -eq 0 -a "$XFER_RRC" -eq 0 ]
}

# wait_flowing SOCK FROM: until the daemon at SOCK has received 1000 data
# packets past FROM (its only channel's data_pkts_rx), at most 10 s
wait_flowing() {
	for _ in $(seq 200); do
		[ "$(chan_field "$1" data_pkts_rx)" -gt $(($2 + 1000)) ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_chan SOCK [TRIES]: until a channel is up (TRIES x 50 ms, default 100)
wait_chan() {
	local p
	for _ in $(seq "${2:-100}"); do
		p=$(chan_field "$1" peer)
		[ "$p" != none ] && [ "$p" != noreply ] && return 0
		sleep 0.05
	done
	return 1
}
