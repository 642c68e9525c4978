# SPDX-License-Identifier: MIT
#
# netpair.sh: sourced by the host-to-host benchmark scripts (run-remote-perf.sh,
# run-gather.sh, run-sig-lat.sh; bash). netpair_up NS1 NS2 IP1 IP2: two network
# namespaces joined by a veth pair (veth1 in NS1 with IP1/24, veth2 in NS2
# with IP2/24, MTU 9000, loopback up), standing for two hosts. Prints what
# failed and returns 1 on the first error; the caller removes the
# namespaces (ip netns del) on exit, made or not.

netpair_up() {
	local ns ifc ip x
	ip netns add "$1" || { echo "cannot create network namespace $1" >&2; return 1; }
	ip netns add "$2" || { echo "cannot create network namespace $2" >&2; return 1; }
	ip link add veth1 netns "$1" type veth peer name veth2 netns "$2" ||
		{ echo "cannot create the veth pair" >&2; return 1; }
	for x in "$1 veth1 $3" "$2 veth2 $4"; do
		read -r ns ifc ip <<EOT
$x
EOT
		ip -n "$ns" link set lo up &&
			ip -n "$ns" link set "$ifc" mtu 9000 &&
			ip -n "$ns" addr add "$ip/24" dev "$ifc" &&
			ip -n "$ns" link set "$ifc" up ||
			{ echo "cannot set up $ifc in $ns" >&2; return 1; }
	done
}

# netpair_down NS1 NS2 [PID...]: for an EXIT trap: stops the processes
# (TERM, then waits for them) and removes both namespaces, made or not.
netpair_down() {
	local ns1=$1 ns2=$2 p
	shift 2
	for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
	ip netns del "$ns1" 2>/dev/null || true
	ip netns del "$ns2" 2>/dev/null || true
}

# netpair_start TAG IP1 IP2: what run-gather.sh, run-retx.sh and
# run-sig-lat.sh begin with. Sets tmp (a temporary directory), NS1 and NS2 (TAG and this
# shell's pid), pids (empty: the caller adds the processes it starts),
# installs the EXIT trap that stops those processes and removes the
# namespaces and tmp, and joins NS1 (IP1) and NS2 (IP2) as netpair_up does.
# Prints what failed and returns 1.
netpair_start() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/uccl-$1.XXXXXX") ||
		{ echo "cannot make a temporary directory" >&2; return 1; }
	NS1=$1$$a NS2=$1$$b
	pids=''
	# shellcheck disable=SC2016 # expanded when the trap runs
	trap 'netpair_down "$NS1" "$NS2" $pids; rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
	netpair_ip1=$2 netpair_ip2=$3
	netpair_up "$NS1" "$NS2" "$2" "$3" || { echo "no namespaces to run in" >&2; return 1; }
}

# netpair_daemons DAEMON LIMIT [LINE]: a fresh pair of daemons after
# netpair_start: node-a in NS1 at IP1:7491 with its engine pinned to CPU 0,
# node-b in NS2 at IP2:7492 on CPU 1, peered, MTU 9000, LINE (if given)
# added to both uccl.conf files, each bounded by timeout(1) at LIMIT
# seconds. Runtime dirs $tmp/ra and $tmp/rb, logs $tmp/a.log and
# $tmp/b.log. Sets pa, pb and pids (the EXIT trap stops them); returns 1 if
# their control sockets did not appear within 10 s. netpair_stop stops
# them.
netpair_daemons() {
	local s ip port cpu
	for s in a b; do
		ip=$netpair_ip1 port=7491 cpu=0
		[ "$s" = b ] && ip=$netpair_ip2 port=7492 cpu=1
		printf 'peer_listen = %s:%s\npeers = node-a=%s:7491, node-b=%s:7492\nhost_name = node-%s\ndata_port = 0\nmtu = 9000\nengine_cpu = %s\n%s\n' \
			"$ip" "$port" "$netpair_ip1" "$netpair_ip2" "$s" "$cpu" "${3:-}" >"$tmp/$s.conf"
		rm -rf "$tmp/r$s"
	done
	ip netns exec "$NS1" timeout "$2" "$1" --config "$tmp/a.conf" --runtime-dir "$tmp/ra" \
		>"$tmp/a.log" 2>&1 &
	pa=$!
	ip netns exec "$NS2" timeout "$2" "$1" --config "$tmp/b.conf" --runtime-dir "$tmp/rb" \
		>"$tmp/b.log" 2>&1 &
	pb=$!
	pids="$pa $pb"
	for _ in $(seq 100); do
		[ -S "$tmp/ra/ucclsvcd.sock" ] && [ -S "$tmp/rb/ucclsvcd.sock" ] && return 0
		sleep 0.1
	done
	return 1
}

netpair_stop() {
	kill -TERM "$pa" "$pb" 2>/dev/null || true
	wait "$pa" "$pb" 2>/dev/null || true
	pids=''
}
