# SPDX-License-Identifier: MIT
#
# common.sh: sourced by the device probe scripts (bash). Uses the bundle
# (BUNDLE, default ./devbundle from make-bundle.sh) and writes under OUT
# (default /tmp/out). Makes two namespaces joined by a veth pair
# (bench/netpair.sh; removed on exit) and defines:
#   start TAG [EXTRA_CONF [NCHAN]]  daemons a (10.77.0.1) and b (10.77.0.2),
#                                   both with EXTRA_CONF lines, and a with
#                                   CONF_A's, b with CONF_B's; PA, PB, SA, SB;
#                                   waits for NCHAN data channels (1) at a
#   srv NAME                        a uccl_rperf server in b, listening, run
#                                   under RUN_B (e.g. "taskset -c 5"); PS
#   stop                            both daemons
#   gbps FILE                       the Gbit/s of uccl_rperf's last size line
#   xfer ARGS...                    GB/s of one verified uccl_xfer transfer of
#                                   BYTES a -> b, ARGS on both sides (FAILED)
#   iperf ARGS...                   iperf3 a -> b for 4 s: receiver Gbit/s
#   goodput_set TAG LABEL SECONDS CONF  fresh daemons with CONF, 16 MiB and
#                                   256 MiB puts for SECONDS each, then the
#                                   NIC's line (GSO sends): to summary.txt
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
# shellcheck source=bench/netpair.sh
. "$R/bench/netpair.sh"
netpair_start dv 10.77.0.1 10.77.0.2 || exit 1
D=$B/build/daemon/ucclsvcd RP=$B/build/bench/uccl_rperf CTL=$B/build/client/ucclctl
conf() {
	printf 'peer_listen = %s\npeers = node-a=10.77.0.1:7471, node-b=10.77.0.2:7472\nhost_name = %s\ndata_port = 0\nmtu = 9000\n%b\n' \
		"$2" "$3" "$4" >"$1"
}
start() {
	conf "$tmp/a$1.conf" 10.77.0.1:7471 node-a "${2:-}\n${CONF_A:-}"
	conf "$tmp/b$1.conf" 10.77.0.2:7472 node-b "${2:-}\n${CONF_B:-}"
	ip netns exec "$NS1" "$D" --config "$tmp/a$1.conf" --runtime-dir "$tmp/ra$1" >"$OUT/a$1.log" 2>&1 &
	PA=$!
	ip netns exec "$NS2" "$D" --config "$tmp/b$1.conf" --runtime-dir "$tmp/rb$1" >"$OUT/b$1.log" 2>&1 &
	PB=$!
	pids="$pids $PA $PB"
	for _ in $(seq 100); do
		[ "$(grep -c 'data channel .* up' "$OUT/a$1.log")" -ge "${3:-1}" ] && break
		sleep 0.1
	done
	sleep 0.5
	SA=$tmp/ra$1/ucclsvcd.sock SB=$tmp/rb$1/ucclsvcd.sock
}
srv() {
	: >"$tmp/srv-$1.err"
	# shellcheck disable=SC2086
	ip netns exec "$NS2" ${RUN_B:-} "$RP" --socket "$SB" --timeout 100 server "$1" >>"$OUT/srv.log" 2>"$tmp/srv-$1.err" &
	PS=$!
	pids="$pids $PS"
	for _ in $(seq 50); do grep -q listening "$tmp/srv-$1.err" && break; sleep 0.1; done
}
stop() { kill "$PA" "$PB" 2>/dev/null; wait "$PA" "$PB" 2>/dev/null; }
xfer() {
	ip netns exec "$NS2" timeout 300 "$B/bin/uccl_xfer" --socket "$SB" --quiet "$@" recv s >/dev/null 2>&1 &
	local r=$!
	sleep 0.5
	ip netns exec "$NS1" timeout 300 "$B/bin/uccl_xfer" --socket "$SA" --quiet --json \
		--bytes "${BYTES:-8G}" "$@" send node-b/s 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    print("%.2f" % d["gbytes_per_s"] if d["ok"] else "FAILED")
except ValueError:
    print("FAILED")'
	wait $r
}
gbps() { awk '$1 ~ /^[0-9]/ && $2 ~ /iB$/ {print $3}' "$1" | tail -1; }
iperf() {
	ip netns exec "$NS2" timeout 20 iperf3 -s -1 -B 10.77.0.2 >/dev/null 2>&1 &
	local s=$!
	sleep 0.5
	ip netns exec "$NS1" timeout 20 iperf3 -c 10.77.0.2 -t 4 "$@" -f g 2>&1 |
		awk '/receiver/ {v=$(NF-2)} END {print v}'
	wait $s
}
goodput_set() {
	local sz
	start "$1" "$4"
	for sz in 16M 256M; do
		srv rperf
		ip netns exec "$NS1" "$RP" --socket "$SA" --seconds "$3" --sizes $sz --lat-samples 0 \
			client node-b/rperf >"$tmp/gp.txt" 2>&1
		echo "$2 size $sz: $(gbps "$tmp/gp.txt") Gbit/s" | tee -a "$OUT/summary.txt"
	done
	"$CTL" --socket "$SA" channels 2>&1 | grep -E "nic " | sed 's/^/    /' | tee -a "$OUT/summary.txt"
	stop
}
