#!/bin/bash
# SPDX-License-Identifier: MIT
#
# soak.sh: does a daemon that runs for a long time keep its resources?
# Two peered daemons on 127.0.0.1 serve round after round of verified
# uccl_xfer transfers, each from fresh client processes, alternating
# a -> b and b -> a and cycling through sizes and stream counts. Every
# RESTART rounds daemon b is killed with SIGKILL and started again, so a
# sees a peer die and come back. Every KILL rounds (SOAK_KILL, default 7;
# 0: never) the round's sender is killed with SIGKILL half a second into a
# 1G transfer instead, so both daemons clean up after a client that died
# mid-transfer and fail its receiver's wait. After each round, once the
# clients are gone, it samples each daemon's resident memory, descriptors
# and threads (/proc) and a's own accounting (`ucclctl status --json`:
# clients, endpoints; `ucclctl channels --json`: channel state bytes) and
# prints one line; at the end a summary and a verdict.
#
# Usage: bench/soak.sh [BUILDDIR] [SECONDS] [RESTART]   (defaults: . 600 10)
#        SOAK_SIZES="4K 1M" SOAK_STREAMS="1 2" bench/soak.sh ...   (the cycle)
#        SOAK_CONF="lanes = 3" bench/soak.sh ...   (lines added to both uccl.conf)
#        SOAK_THREADS=1 SOAK_PATHS=64 bench/soak.sh ...   (engine_threads, data_paths; 4, 8)
#        LOSS=N bench/soak.sh ...   (root, nft: drop N per mille of the
#                                    packets sent to either daemon's data ports)
#
# No root without LOSS. Everything stays on 127.0.0.1; every transfer is
# bounded by timeout(1) and the run by SECONDS (plus the round under way);
# the loss rule is an nftables table of its own (uccl_soak), on the data
# ports only, removed on exit.
#
# Exit status 0 when every transfer outside a restart's round passed, the
# receiver of every killed sender exited and no client was left within
# 10 s each, a's descriptors and threads came back to their first-cycle
# sample, nothing was left attached at the end, both daemons stopped
# cleanly on SIGTERM and their logs hold no sanitizer report; 1 otherwise.
set -u
B=${1:-.}
SECONDS_TOTAL=${2:-600}
RESTART=${3:-10}
KILL=${SOAK_KILL:-7}
# the rounds cycle through these (SOAK_SIZES, SOAK_STREAMS: as many words each)
read -ra SIZES <<<"${SOAK_SIZES:-1M 16M 64M 4K 256M}"
read -ra STREAMS <<<"${SOAK_STREAMS:-1 1 2 1 4}"
[ ${#SIZES[@]} -eq ${#STREAMS[@]} ] || { echo "soak.sh: SOAK_SIZES and SOAK_STREAMS differ in length" >&2; exit 2; }

LOSS=${LOSS:-0}
THREADS=${SOAK_THREADS:-4} PATHS=${SOAK_PATHS:-8}

. "$(dirname "$0")/loopd.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/uccl-soak.XXXXXX") ||
	{ echo "soak.sh: cannot make a temporary directory" >&2; exit 1; }
PA= PB=
trap 'kill -9 $PA $PB 2>/dev/null; [ "$LOSS" = 0 ] || nft delete table inet uccl_soak 2>/dev/null; rm -rf "$T"' EXIT
# data ports: two runs of THREADS x PATHS free UDP ports on 127.0.0.1, so
# that a loss rule can name them (b restarts on the same ones)
set -- $(python3 -c '
import socket, sys
n, found, base = int(sys.argv[1]), [], 40000
while len(found) < 2 and base + n < 60000:
    ss = []
    try:
        for p in range(base, base + n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            ss.append(s)
            s.bind(("127.0.0.1", p))
        found.append(base)
    except OSError:
        pass
    for s in ss:
        s.close()
    base += n
print(*found)' $((THREADS * PATHS)))
[ $# -eq 2 ] || { echo "soak.sh: no free UDP port ranges" >&2; exit 1; }
DA=$1 DB=$2
loopd_confs "$T" "engine_threads = $THREADS\ndata_paths = $PATHS\n${SOAK_CONF:-}"
echo "data_port = $DA" >>"$T/a.conf"
echo "data_port = $DB" >>"$T/b.conf"
if [ "$LOSS" != 0 ]; then
	nft add table inet uccl_soak &&
	nft add chain inet uccl_soak out '{ type filter hook output priority 0; }' &&
	nft add rule inet uccl_soak out ip daddr 127.0.0.1 udp dport \
		"{ $DA-$((DA + THREADS * PATHS - 1)), $DB-$((DB + THREADS * PATHS - 1)) }" \
		numgen random mod 1000 "< $LOSS" counter drop ||
		{ echo "soak.sh: LOSS needs root and nft" >&2; exit 1; }
fi
SA=$T/ra/ucclsvcd.sock SB=$T/rb/ucclsvcd.sock

start() { # start a|b: the daemon, waited for until its socket is there
	rm -f "$T/r$1/ucclsvcd.sock"
	"$B/daemon/ucclsvcd" --config "$T/$1.conf" --runtime-dir "$T/r$1" >/dev/null 2>>"$T/$1.log" &
	if [ "$1" = a ]; then PA=$!; else PB=$!; fi
	for _ in $(seq 200); do
		[ -S "$T/r$1/ucclsvcd.sock" ] && return 0
		sleep 0.05
	done
	echo "soak.sh: daemon $1 did not start" >&2
	cat "$T/$1.log" >&2
	exit 1
}

# peers_up SOCK: wait (up to 10 s) until SOCK's daemon has its peer up
peers_up() {
	for _ in $(seq 100); do
		"$B/client/ucclctl" --socket "$1" --json peers 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["peers"] and all(p["state"] == "up" for p in d["peers"]) else 1)' && return 0
		sleep 0.1
	done
	return 1
}

# sample PID SOCK: "rss_kib fds threads clients endpoints reg_bytes chan_state_bytes"
sample() {
	local rss fds thr acct
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	fds=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
	thr=$(awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	acct=$( { "$B/client/ucclctl" --socket "$2" --json status; \
		  "$B/client/ucclctl" --socket "$2" --json channels; } 2>/dev/null | python3 -c '
import json, sys
text, dec, docs, i = sys.stdin.read(), json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    d, i = dec.raw_decode(text, i)
    docs.append(d)
s = docs[0]["status"]
ch = docs[1]["channels"] if len(docs) > 1 else []
print(s["clients"], s["endpoints"], s["registered_bytes"],
      sum(c["state_bytes"] for c in ch))' 2>/dev/null)
	echo "${rss:-?} ${fds:-?} ${thr:-?} ${acct:-? ? ? ?}"
}

# xfer FROM_SOCK TO_SOCK TO_HOST BYTES STREAMS: one verified transfer; "ok GB/s" or "FAILED"
xfer() {
	local g

	g=$(loopd_xfer_between "$1" "$2" "$3" "$B" "$4" --streams "$5")
	if [ "$g" = FAILED ]; then echo FAILED; else echo "ok $g"; fi
}

# clients SOCK: how many clients SOCK's daemon has attached
clients() {
	"$B/client/ucclctl" --socket "$1" --json status 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["status"]["clients"])' 2>/dev/null
}

# xfer_killed FROM_SOCK TO_SOCK TO_HOST STREAMS: a 1G transfer whose sender
# (with --streams, all its processes: setsid makes them a group) is killed
# with SIGKILL half a second after every stream connected; "killed" once
# the receiver has exited (its connection reset) and neither daemon has a
# client left, each within 10 s; else "STUCK" or "LEFT" ("NORECV": the
# receiver never listened, "NOCONN": the sender never connected within 5 s)
xfer_killed() {
	local r s t
	timeout 120 "$B/client/uccl_xfer" --socket "$2" --quiet --streams "$4" recv soak \
		>/dev/null 2>&1 &
	r=$!
	loopd_wait_ep "$B" "$2" soak "$4" || { kill "$r" 2>/dev/null; wait "$r" 2>/dev/null; echo NORECV; return; }
	setsid "$B/client/uccl_xfer" --socket "$1" --quiet --streams "$4" --bytes 1G \
		send "$3/soak" >/dev/null 2>&1 &
	s=$!
	# killed before it connected, the receiver would wait out its accept (30 s)
	if ! loopd_wait_ep "$B" "$2" soak "$4" 1; then
		kill -9 -- -"$s" 2>/dev/null || kill -9 "$s" 2>/dev/null
		kill "$r" 2>/dev/null
		wait "$s" "$r" 2>/dev/null
		echo NOCONN
		return
	fi
	sleep 0.5
	kill -9 -- -"$s" 2>/dev/null || kill -9 "$s" 2>/dev/null
	wait "$s" 2>/dev/null
	t=$(date +%s)
	wait "$r" 2>/dev/null      # fails: its peer went away
	[ $(( $(date +%s) - t )) -le 10 ] || { echo STUCK; return; }
	for _ in $(seq 100); do
		[ "$(clients "$1")" = 0 ] && [ "$(clients "$2")" = 0 ] && { echo killed; return; }
		sleep 0.1
	done
	echo LEFT
}

start a
start b
peers_up "$SA" || { echo "soak.sh: the daemons did not meet" >&2; cat "$T/a.log" "$T/b.log" >&2; exit 1; }
echo "soak: two daemons on 127.0.0.1 (engine_threads = $THREADS, data_paths = $PATHS), ${SECONDS_TOTAL}s," \
	"b killed (-9) and restarted every $RESTART rounds, a sender killed (-9) every $KILL, loss $LOSS per mille${SOAK_CONF:+, $(printf %b "$SOAK_CONF" | paste -sd ';')}"
echo "round  time  transfer               result     | a: rss KiB  fds thr cl ep  chan_state | b: rss KiB  fds"
t0=$(date +%s)
round=0 ok=0 failed=0 restart_failed=0 restarts=0 moved=0 killed=0
first_a= last_a= max_rss=0 min_rss=
after_restart=false
while [ $(( $(date +%s) - t0 )) -lt "$SECONDS_TOTAL" ]; do
	i=$((round % ${#SIZES[@]}))
	size=${SIZES[$i]} streams=${STREAMS[$i]}
	if [ "$KILL" -gt 0 ] && [ $((round % KILL)) -eq $((KILL - 1)) ]; then
		size=1G
		if [ $((round % 2)) -eq 0 ]; then
			dir="a->b" res=$(xfer_killed "$SA" "$SB" node-b "$streams")
		else
			dir="b->a" res=$(xfer_killed "$SB" "$SA" node-a "$streams")
		fi
	elif [ $((round % 2)) -eq 0 ]; then
		dir="a->b" res=$(xfer "$SA" "$SB" node-b "$size" "$streams")
	else
		dir="b->a" res=$(xfer "$SB" "$SA" node-a "$size" "$streams")
	fi
	if [ "$res" = killed ]; then
		killed=$((killed + 1))
	elif [ "$res" = LEFT ] || [ "$res" = STUCK ] || [ "$res" = NORECV ] || [ "$res" = NOCONN ]; then
		failed=$((failed + 1))
		echo "round $round: $res in a round whose sender is killed (STUCK: the receiver took" \
			"over 10 s to exit; LEFT: a client was still attached 10 s later; NORECV: the" \
			"receiver never listened; NOCONN: the sender never connected)"
	elif [ "${res%% *}" = ok ]; then
		ok=$((ok + 1))
		moved=$((moved + $(numfmt --from=iec "$size")))
	elif $after_restart; then
		restart_failed=$((restart_failed + 1))
	else
		failed=$((failed + 1))
		echo "round $round: $dir $size failed:"; tail -n 3 "$T/send.err" "$T/recv.err"
	fi
	after_restart=false
	# the clients are gone; let the daemons see it before counting descriptors
	for _ in $(seq 50); do
		[ "$(clients "$SA")" = 0 ] && [ "$(clients "$SB")" = 0 ] && break
		sleep 0.1
	done
	read -r rss fds thr cl ep reg cst <<<"$(sample "$PA" "$SA")"
	read -r brss bfds _ <<<"$(sample "$PB" "$SB")"
	printf '%5d %5ds  %s %4s x%d  %-10s | %10s %4s %3s %2s %2s %10s | %10s %4s\n' \
		"$round" $(( $(date +%s) - t0 )) "$dir" "$size" "$streams" "$res" \
		"$rss" "$fds" "$thr" "$cl" "$ep" "$cst" "$brss" "$bfds"
	# the reference sample: after every size has run once each way (or
	# the first round's, in a run shorter than that)
	if [ "$round" -eq 0 ] || [ "$round" -eq $((${#SIZES[@]} * 2 - 1)) ]; then
		first_a="$rss $fds $thr" first_round=$round max_rss=0 min_rss=
	fi
	if [ -n "$first_a" ]; then
		[ "$rss" -gt "$max_rss" ] 2>/dev/null && max_rss=$rss
		{ [ -z "$min_rss" ] || [ "$rss" -lt "$min_rss" ]; } 2>/dev/null && min_rss=$rss
	fi
	last_a="$rss $fds $thr $cl $ep"
	round=$((round + 1))
	if [ $((round % RESTART)) -eq 0 ]; then
		kill -9 "$PB"; wait "$PB" 2>/dev/null
		start b
		restarts=$((restarts + 1))
		peers_up "$SA" && peers_up "$SB" || echo "round $round: peers not up again within 10 s"
		after_restart=true
	fi
done
[ "$LOSS" = 0 ] || echo "nft dropped: $(nft list table inet uccl_soak | grep -o 'packets [0-9]*')"
read -r frss ffds fthr <<<"${first_a:-? ? ?}"
read -r lrss lfds lthr lcl lep <<<"$last_a"
echo
echo "summary: $round rounds in $(( $(date +%s) - t0 )) s, $ok transfers verified ($(numfmt --to=iec $moved)B), $failed failed," \
	"$restart_failed failed in the round after one of $restarts restarts of b, $killed senders killed"
echo "daemon a: rss $frss KiB at round $first_round, min $min_rss, max $max_rss, last $lrss;" \
	"fds $ffds -> $lfds; threads $fthr -> $lthr; clients left $lcl, endpoints left $lep"
rc=0
[ "$failed" -eq 0 ] || { echo "verdict: FAILED ($failed transfers failed)"; rc=1; }
[ "$lfds" = "$ffds" ] || { echo "verdict: FAILED (a's descriptors went from $ffds to $lfds)"; rc=1; }
[ "$lthr" = "$fthr" ] || { echo "verdict: FAILED (a's threads went from $fthr to $lthr)"; rc=1; }
[ "$lcl" = 0 ] && [ "$lep" = 0 ] || { echo "verdict: FAILED (clients or endpoints left on a)"; rc=1; }
kill "$PA" "$PB" 2>/dev/null
wait "$PA"; ra=$?
wait "$PB"; rb=$?
[ $ra -eq 0 ] && [ $rb -eq 0 ] || { echo "verdict: FAILED (SIGTERM: a exited $ra, b $rb)"; rc=1; }
if grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T/a.log" "$T/b.log"; then
	echo "verdict: FAILED (a sanitizer report in a daemon's log:)"
	grep -hE -A 12 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T/a.log" "$T/b.log" | head -40
	rc=1
fi
PA= PB=
[ $rc -eq 0 ] && echo "verdict: ok (descriptors, threads and clients back where they were; rss as above)"
exit $rc
