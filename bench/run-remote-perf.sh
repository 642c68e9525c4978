#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-remote-perf.sh: the host-to-host benchmark. Two network namespaces
# joined by a veth pair (MTU 9000) stand for two hosts; ucclsvcd A runs in the
# first and B in the second. For RUNS rounds it measures, side by side on the
# same pair: uccl_rperf goodput per message size and 64 B put+signal latency,
# iperf3 TCP single stream (-C cubic), ucx_perftest over tcp (tag_bw 1 MiB,
# tag_lat 64 B), fi_pingpong (tcp msg and udp;ofi_rxd rdm, 1 MiB and 64 B)
# and sockperf UDP ping-pong (64 B); iperf3 with the system's default
# congestion control once, to name it. Then, with offloads off on the veths
# (so that a rule drops single packets, not GSO bursts), RUNS rounds of
# uccl_rperf 16 MiB goodput and iperf3 cubic goodput at 0%, 0.1% and 1%
# random loss (an nftables rule on TCP and UDP in B's input chain), each as a
# share of its own loss-free figure of the same round. It prints medians,
# min and max as markdown tables, the machine, and the exact commands. Every
# tool run is bounded with timeout(1); namespaces, daemons and servers are
# removed on exit, whatever happens.
#
# Usage: bench/run-remote-perf.sh [BUILDDIR] [RUNS]     (as root)
#   BUILDDIR  build tree with daemon/ucclsvcd and bench/uccl_rperf (default .)
#   RUNS      rounds (default 5)
#   RPERF_ARGS   extra uccl_rperf client arguments, e.g. "--seconds 1"
#   IPERF_SECONDS  iperf3 -t (default 5)
#   DAEMON_MTU     the daemons' mtu setting (default 9000, the veths' MTU)
#   NO_INSTALL=1   do not apt-get missing tools; their rows say "tool missing"
#   KEEP=DIR       copy every tool's raw output to DIR
set -euo pipefail

# Tools only this benchmark uses (not the build's dependencies, which are
# in scripts/deps.sh). Debian package names.
BENCH_DEPS="iperf3 nftables ethtool ucx-utils libfabric-bin sockperf"

builddir=${1:-.}
runs=${2:-5}
rperf_args=${RPERF_ARGS:-}
iperf_secs=${IPERF_SECONDS:-5}
daemon_mtu=${DAEMON_MTU:-9000}

die() { echo "run-remote-perf.sh: $*" >&2; exit 1; }
# shellcheck source=bench/netpair.sh
. "$(dirname "$0")/netpair.sh"
say() { echo "run-remote-perf.sh: $*" >&2; }

case $runs in
''|*[!0-9]*|0) die "RUNS must be a positive integer, not '$runs'" ;;
esac
case $daemon_mtu in
''|*[!0-9]*) die "DAEMON_MTU must be a number, not '$daemon_mtu'" ;;
esac
case $iperf_secs in
''|*[!0-9]*|0) die "IPERF_SECONDS must be a positive integer, not '$iperf_secs'" ;;
esac
[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, veth, nftables, ethtool)"
[ -d "$builddir" ] || die "no build directory '$builddir'"
daemon=$(cd "$builddir" && pwd)/daemon/ucclsvcd
rperf=$(cd "$builddir" && pwd)/bench/uccl_rperf
[ -x "$daemon" ] || die "$daemon not found or not executable (build first, or give BUILDDIR)"
[ -x "$rperf" ] || die "$rperf not found or not executable"
command -v python3 >/dev/null || die "python3 is needed to parse the results"
command -v ip >/dev/null || die "ip (iproute2) is needed for the namespaces"
command -v timeout >/dev/null || die "timeout (coreutils) is needed to bound every run"

# --- tools: install what is missing, or mark its rows ---
declare -A pkg_of=([iperf3]=iperf3 [nft]=nftables [ethtool]=ethtool [ucx_perftest]=ucx-utils
	[fi_pingpong]=libfabric-bin [sockperf]=sockperf [ss]=iproute2)
missing_pkgs=''
for t in "${!pkg_of[@]}"; do
	command -v "$t" >/dev/null || missing_pkgs="$missing_pkgs ${pkg_of[$t]}"
done
if [ -n "$missing_pkgs" ] && [ -z "${NO_INSTALL:-}" ] && command -v apt-get >/dev/null; then
	say "installing$missing_pkgs (bench-only: $BENCH_DEPS)"
	# shellcheck disable=SC2086 # a list of package names
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends \
		$missing_pkgs >&2 || say "apt-get failed; rows of missing tools say so"
fi
have() { command -v "$1" >/dev/null; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uccl-rperf.XXXXXX")
raw=$tmp/raw
mkdir -p "$raw"
NS1=urp$$a NS2=urp$$b
IP1=10.77.0.1 IP2=10.77.0.2
PA=7471 PB=7472
pids=''
ns_made=''
PID_a='' PID_b=''
cleanup() {
	local p
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	if [ -n "$ns_made" ]; then
		ip netns del "$NS1" 2>/dev/null || true
		ip netns del "$NS2" 2>/dev/null || true
	fi
	if [ -n "${KEEP:-}" ] && mkdir -p "$KEEP"; then
		cp -r "$raw/." "$tmp"/*.log "$KEEP"/ 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

loadavg_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- two hosts: ns1 (A, clients) and ns2 (B, servers), veth MTU 9000 ---
in1() { ip netns exec "$NS1" "$@"; }
in2() { ip netns exec "$NS2" "$@"; }
ns_made=1
netpair_up "$NS1" "$NS2" "$IP1" "$IP2" || die "no namespaces to run in"
default_cc=$(in1 sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo unknown)

# wait_port NS tcp|udp PORT: until something listens there (10 s)
wait_port() {
	local flag=-Hlnt
	[ "$2" = udp ] && flag=-Hlnu
	for _ in $(seq 200); do
		[ -n "$(ip netns exec "$1" ss $flag "sport = :$3" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

# --- the daemons ---
write_conf() { # write_conf FILE NAME ADDRESS:PORT
	{
		echo "peer_listen = $3"
		echo "peers = node-a=$IP1:$PA, node-b=$IP2:$PB"
		echo "host_name = $2"
		echo "data_port = 0"
		echo "mtu = $daemon_mtu"
	} >"$1"
}
write_conf "$tmp/a.conf" node-a "$IP1:$PA"
write_conf "$tmp/b.conf" node-b "$IP2:$PB"
SOCK_A=$tmp/ra/ucclsvcd.sock
SOCK_B=$tmp/rb/ucclsvcd.sock
start_daemon() { # start_daemon a|b
	local ns=$NS1 pid
	[ "$1" = b ] && ns=$NS2
	ip netns exec "$ns" "$daemon" --config "$tmp/$1.conf" --runtime-dir "$tmp/r$1" \
		>"$tmp/$1.log" 2>&1 &
	pid=$!
	pids="$pids $pid"
	for _ in $(seq 100); do
		[ -S "$tmp/r$1/ucclsvcd.sock" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -S "$tmp/r$1/ucclsvcd.sock" ] || { cat "$tmp/$1.log" >&2; die "daemon $1 did not start"; }
	if [ "$1" = a ]; then PID_a=$pid; else PID_b=$pid; fi
}
start_daemon a
start_daemon b
for _ in $(seq 100); do
	grep -q 'data channel .* up' "$tmp/a.log" && grep -q 'data channel .* up' "$tmp/b.log" && break
	sleep 0.1
done
grep -q 'data channel .* up' "$tmp/a.log" || { cat "$tmp/a.log" >&2; die "no data channel a->b after 10 s"; }
daemons_alive() {
	kill -0 "$PID_a" 2>/dev/null || { tail -n 20 "$tmp/a.log" >&2; die "daemon A died"; }
	kill -0 "$PID_b" 2>/dev/null || { tail -n 20 "$tmp/b.log" >&2; die "daemon B died"; }
}

# tool_of CMD...: the program a command line runs (past env and VAR=value)
tool_of() {
	while [ "$1" = env ] || case $1 in *=*) true ;; *) false ;; esac; do shift; done
	echo "$1"
}

# frag_creates: IP fragments made in A so far (UDP datagrams over the veth MTU)
frag_creates() {
	# shellcheck disable=SC2016 # awk's own variables
	in1 awk '/^Ip:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "FragCreates") k = i; h = 1 }
		else print $k }' /proc/net/snmp 2>/dev/null || echo 0
}
frags_rperf=0 frags_all0=$(frag_creates)
# rperf_pair NAME CLIENT...: uccl_rperf against a fresh server in B, counting fragments
rperf_pair() {
	local f0
	f0=$(frag_creates)
	run_pair "$1" "$NS2" log listening 300 -- "${RPERF_SRV[@]}" -- "${@:2}"
	frags_rperf=$((frags_rperf + $(frag_creates) - f0))
}

# --- one measurement: run_pair NAME SERVER_NS WAIT CLIENT_TIMEOUT -- SERVER... -- CLIENT...
# WAIT is "tcp PORT", "udp PORT" or "log TEXT" (a line in the server's stderr).
# The client's output goes to raw/NAME.out and its status to raw/NAME.rc
# ("missing" when the tool is not installed, "124" on timeout).
run_pair() {
	local name=$1 sns=$2 wkind=$3 wwhat=$4 ctime=$5 spid rc=0 srv=() cli=()
	shift 5
	[ "$1" = -- ] && shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if ! have "$(tool_of "${cli[@]}")"; then
		echo missing >"$raw/$name.rc"
		return 0
	fi
	timeout $((ctime + 30)) ip netns exec "$sns" "${srv[@]}" >"$raw/$name.srv" 2>&1 &
	spid=$!
	pids="$pids $spid"
	case $wkind in
	tcp|udp) wait_port "$sns" "$wkind" "$wwhat" || true ;;
	log)
		for _ in $(seq 200); do
			grep -q "$wwhat" "$raw/$name.srv" 2>/dev/null && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.05
		done ;;
	esac
	timeout "$ctime" ip netns exec "$NS1" "${cli[@]}" >"$raw/$name.out" 2>"$raw/$name.err" || rc=$?
	# a server left waiting (the client failed) is stopped, not waited for
	for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	echo "$rc" >"$raw/$name.rc"
	if [ "$rc" -ne 0 ]; then
		say "$name: exit status $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')"
		tail -n 5 "$raw/$name.err" >&2 || true
	fi
}

# The commands, as printed at the end (client side; servers listed too).
RPERF_SRV=("$rperf" --socket "$SOCK_B" --timeout 330 server rperf)
# shellcheck disable=SC2206 # RPERF_ARGS is split on purpose
RPERF_CLI=("$rperf" --socket "$SOCK_A" --json $rperf_args client node-b/rperf)
# shellcheck disable=SC2206
RPERF_LOSS=("$rperf" --socket "$SOCK_A" --json $rperf_args --sizes 16M --lat-samples 0 client node-b/rperf)
IPERF_SRV=(iperf3 -s -1 -B "$IP2")
IPERF_CUBIC=(iperf3 -c "$IP2" -t "$iperf_secs" -C cubic --json)
IPERF_DEF=(iperf3 -c "$IP2" -t "$iperf_secs" --json)
UCX_SRV_BW=(env UCX_TLS=tcp UCX_NET_DEVICES=veth2 ucx_perftest -p 13337 -t tag_bw -s 1048576 -n 2000)
UCX_CLI_BW=(env UCX_TLS=tcp UCX_NET_DEVICES=veth1 ucx_perftest "$IP2" -p 13337 -t tag_bw -s 1048576 -n 2000)
UCX_SRV_LAT=(env UCX_TLS=tcp UCX_NET_DEVICES=veth2 ucx_perftest -p 13337 -t tag_lat -s 64 -n 10000)
UCX_CLI_LAT=(env UCX_TLS=tcp UCX_NET_DEVICES=veth1 ucx_perftest "$IP2" -p 13337 -t tag_lat -s 64 -n 10000)
FI_TCP_BW=(fi_pingpong -p tcp -e msg -S 1048576 -I 1000)
FI_TCP_LAT=(fi_pingpong -p tcp -e msg -S 64 -I 10000)
FI_RXD_BW=(fi_pingpong -p 'udp;ofi_rxd' -e rdm -S 1048576 -I 100)
FI_RXD_LAT=(fi_pingpong -p 'udp;ofi_rxd' -e rdm -S 64 -I 10000)
SOCK_SRV=(sockperf sr -i "$IP2" -p 11111 --nonblocked --timeout 0)
SOCK_CLI=(sockperf pp -i "$IP2" -p 11111 -t 3 -m 64 --nonblocked --timeout 0)
ipt=$((iperf_secs + 20))

t_start=$(date +%s)
for i in $(seq "$runs"); do
	say "round $i/$runs: uccl_rperf, iperf3, ucx_perftest, fi_pingpong, sockperf"
	rperf_pair "r$i-rperf" "${RPERF_CLI[@]}"
	daemons_alive
	run_pair "r$i-iperf-cubic" "$NS2" tcp 5201 "$ipt" -- "${IPERF_SRV[@]}" -- "${IPERF_CUBIC[@]}"
	if [ "$i" -eq 1 ]; then
		run_pair "r$i-iperf-default" "$NS2" tcp 5201 "$ipt" -- "${IPERF_SRV[@]}" -- "${IPERF_DEF[@]}"
	fi
	run_pair "r$i-ucx-bw" "$NS2" tcp 13337 30 -- "${UCX_SRV_BW[@]}" -- "${UCX_CLI_BW[@]}"
	run_pair "r$i-ucx-lat" "$NS2" tcp 13337 30 -- "${UCX_SRV_LAT[@]}" -- "${UCX_CLI_LAT[@]}"
	run_pair "r$i-fi-tcp-bw" "$NS2" tcp 47592 30 -- "${FI_TCP_BW[@]}" -- "${FI_TCP_BW[@]}" "$IP2"
	run_pair "r$i-fi-tcp-lat" "$NS2" tcp 47592 30 -- "${FI_TCP_LAT[@]}" -- "${FI_TCP_LAT[@]}" "$IP2"
	run_pair "r$i-fi-rxd-bw" "$NS2" tcp 47592 30 -- "${FI_RXD_BW[@]}" -- "${FI_RXD_BW[@]}" "$IP2"
	run_pair "r$i-fi-rxd-lat" "$NS2" tcp 47592 30 -- "${FI_RXD_LAT[@]}" -- "${FI_RXD_LAT[@]}" "$IP2"
	run_pair "r$i-sockperf" "$NS2" udp 11111 20 -- "${SOCK_SRV[@]}" -- "${SOCK_CLI[@]}"
done

# --- loss: offloads off, so that a rule drops single packets ---
offloads="on (ethtool missing)"
if have ethtool; then
	if in1 ethtool -K veth1 tso off gso off tx-udp-segmentation off gro off >/dev/null 2>&1 &&
		in2 ethtool -K veth2 tso off gso off tx-udp-segmentation off gro off >/dev/null 2>&1; then
		offloads=off
	else
		offloads="partly on (ethtool -K failed)"
	fi
fi
loss_ok=1
if have nft && in2 nft add table inet rperf 2>/dev/null &&
	in2 nft add chain inet rperf in '{ type filter hook input priority 0; }'; then
	:
else
	loss_ok=''
	say "nft missing or not working: the loss rows are not measured"
fi
# set_loss PERMILLE: count TCP+UDP packets into B, and drop PERMILLE/1000 of them
set_loss() {
	in2 nft flush chain inet rperf in
	in2 nft add rule inet rperf in meta l4proto '{ tcp, udp }' counter
	[ "$1" -eq 0 ] && return 0
	in2 nft add rule inet rperf in meta l4proto '{ tcp, udp }' numgen random mod 1000 '<' "$1" counter drop
}
if [ -n "$loss_ok" ]; then
	for i in $(seq "$runs"); do
		say "loss round $i/$runs (offloads $offloads): 0%, 0.1%, 1%"
		for pm in 0 1 10; do
			set_loss "$pm"
			rperf_pair "l$i-$pm-rperf" "${RPERF_LOSS[@]}"
			in2 nft -j list chain inet rperf in >"$raw/l$i-$pm-rperf.nft"
			daemons_alive
			set_loss "$pm"
			run_pair "l$i-$pm-iperf" "$NS2" tcp 5201 "$ipt" -- "${IPERF_SRV[@]}" -- "${IPERF_CUBIC[@]}"
			in2 nft -j list chain inet rperf in >"$raw/l$i-$pm-iperf.nft"
		done
	done
	in2 nft flush chain inet rperf in
fi
t_end=$(date +%s)
loadavg_after=$(cut -d' ' -f1-3 /proc/loadavg)
daemons_alive
"$(dirname "$daemon")/../client/ucclctl" --socket "$SOCK_A" channels >"$tmp/channels-a.txt" 2>&1 || true
frags_all=$(($(frag_creates) - frags_all0))
python3 - "$raw" "$runs" "$default_cc" "$iperf_secs" <<'EOF'
import glob, json, os, re, statistics, sys

raw, runs, default_cc, iperf_secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def status(name):
    try:
        return open(f"{raw}/{name}.rc").read().strip()
    except OSError:
        return "not run"

def text(name, ext="out"):
    try:
        return open(f"{raw}/{name}.{ext}", errors="replace").read()
    except OSError:
        return ""

def rperf(name):
    if status(name) != "0":
        return None
    try:
        return json.loads(text(name))
    except ValueError:
        return None

def iperf(name):
    """Receiver goodput in Gbit/s, seconds, bytes, sender retransmits, CC."""
    if status(name) != "0":
        return None
    try:
        d = json.loads(text(name))
        r = d["end"]["sum_received"]
        s = d["end"]["sum_sent"]
        return (r["bits_per_second"] / 1e9, r["seconds"], r["bytes"], s.get("retransmits"),
                d["end"].get("sender_tcp_congestion", "?"))
    except (ValueError, KeyError):
        return None

def ucx_final(name):
    """(iterations, typical us, avg us, overall us, MB/s avg, MB/s overall) of 'Final:'."""
    if status(name) != "0":
        return None
    m = re.search(r"^Final:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", text(name), re.M)
    return tuple(float(x) for x in m.groups()) if m else None

def fi(name):
    """(bytes per xfer, iterations, seconds, MB/s (1e6), usec/xfer) of fi_pingpong."""
    if status(name) != "0":
        return None
    for line in text(name).splitlines():
        f = line.split()
        if len(f) == 8 and f[0] not in ("bytes",) and f[4].endswith("s"):
            try:
                return (f[0], f[1], float(f[4][:-1]), float(f[5]), float(f[6]))
            except ValueError:
                pass
    return None

def sockperf(name):
    """(p50, p99, observations, seconds) one-way us."""
    if status(name) != "0":
        return None
    t = re.sub(r"\x1b\[[0-9;]*m", "", text(name))
    p50 = re.search(r"percentile 50\.000 =\s*([\d.]+)", t)
    p99 = re.search(r"percentile 99\.000 =\s*([\d.]+)", t)
    obs = re.search(r"Total (\d+) observations", t)
    dur = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec", t)
    if not (p50 and p99 and obs):
        return None
    return (float(p50.group(1)), float(p99.group(1)), int(obs.group(1)),
            float(dur.group(1)) if dur else float("nan"))

def nft_counts(name):
    try:
        d = json.load(open(f"{raw}/{name}.nft"))
    except (OSError, ValueError):
        return None
    counters = []
    for item in d.get("nftables", []):
        rule = item.get("rule")
        if rule:
            for e in rule["expr"]:
                if "counter" in e:
                    counters.append(e["counter"]["packets"])
    if not counters:
        return None
    return counters[0], (counters[1] if len(counters) > 1 else 0)

def why_missing(names):
    st = [status(n) for n in names]
    if all(s == "missing" for s in st):
        return "not measured (tool missing)"
    bad = [s for s in st if s != "0"]
    timeouts = sum(1 for s in bad if s == "124")
    return (f"not measured (failed in {len(bad)} of {len(st)} runs"
            + (f", {timeouts} timed out" if timeouts else "") + ")")

def fmt(v, d=2):
    return f"{v:.{d}f}"

rows = []           # (group, what, param, unit, values, counts text, failures)
def row(what, param, unit, names, getter, count_text, digits=2):
    vals, counts = [], []
    for n in names:
        v = getter(n)
        if v is not None:
            vals.append(v[0])
            counts.append(v[1])
    fails = len(names) - len(vals)
    rows.append((what, param, unit, vals, count_text(counts) if counts else "", fails, names, digits))
    return statistics.median(vals) if vals else None

R = range(1, runs + 1)
def med_int(xs):
    return int(statistics.median(xs))

print("### Goodput (loss-free, offloads on)\n")
print("| tool | what | median | min | max | unit | runs | measured over (median per run) |")
print("|---|---|---:|---:|---:|---|---:|---|")
gp_med = {}
sizes = []
for i in R:
    d = rperf(f"r{i}-rperf")
    if d:
        sizes = [g["size"] for g in d["goodput"]]
        break
def size_name(v):
    for u, n in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if v >= u and v % u == 0:
            return f"{v // u} {n}"
    return f"{v} B"
for k, sz in enumerate(sizes):
    def g(n, k=k):
        d = rperf(n)
        if not d or k >= len(d["goodput"]):
            return None
        x = d["goodput"][k]
        return (x["gbit_per_s"], (x["messages"], x["bytes"], x["seconds"]))
    gp_med[sz] = row("uccl_rperf", f"put goodput, {size_name(sz)} messages", "Gbit/s",
                     [f"r{i}-rperf" for i in R], g,
                     lambda c: f"{med_int([x[0] for x in c])} messages, "
                               f"{statistics.median([x[1] for x in c]) / 2**30:.2f} GiB in "
                               f"{statistics.median([x[2] for x in c]):.2f} s")
if not sizes:
    rows.append(("uccl_rperf", "put goodput", "Gbit/s", [], "", runs, [f"r{i}-rperf" for i in R], 2))
ip_cubic = row("iperf3", "TCP single stream, -C cubic", "Gbit/s", [f"r{i}-iperf-cubic" for i in R],
               lambda n: (lambda v: v and (v[0], v))(iperf(n)),
               lambda c: f"{statistics.median([x[2] for x in c]) / 2**30:.2f} GiB in "
                         f"{statistics.median([x[1] for x in c]):.2f} s, "
                         f"{med_int([x[3] or 0 for x in c])} retransmits")
v = iperf("r1-iperf-default")
row("iperf3", f"TCP single stream, system default CC ({v[4] if v else default_cc}), once",
    "Gbit/s", ["r1-iperf-default"], lambda n: (lambda v: v and (v[0], v))(iperf(n)),
    lambda c: f"{c[0][2] / 2**30:.2f} GiB in {c[0][1]:.2f} s, {c[0][3] or 0} retransmits")
ucx_bw = row("ucx_perftest", "tcp tag_bw 1 MiB", "Gbit/s", [f"r{i}-ucx-bw" for i in R],
             lambda n: (lambda v: v and (v[5] * 2**20 * 8 / 1e9, v))(ucx_final(n)),
             lambda c: f"{med_int([x[0] for x in c])} messages")
row("fi_pingpong", "tcp msg 1 MiB", "Gbit/s", [f"r{i}-fi-tcp-bw" for i in R],
    lambda n: (lambda v: v and (v[3] * 1e6 * 8 / 1e9, v))(fi(n)),
    lambda c: f"{c[0][1]} iterations (2 transfers each) in {statistics.median([x[2] for x in c]):.2f} s")
row("fi_pingpong", "udp;ofi_rxd rdm 1 MiB", "Gbit/s", [f"r{i}-fi-rxd-bw" for i in R],
    lambda n: (lambda v: v and (v[3] * 1e6 * 8 / 1e9, v))(fi(n)),
    lambda c: f"{c[0][1]} iterations (2 transfers each) in {statistics.median([x[2] for x in c]):.2f} s")

def print_rows(rs):
    for what, param, unit, vals, counts, fails, names, digits in rs:
        if not vals:
            print(f"| {what} | {param} | {why_missing(names)} | | | {unit} | 0 | |")
            continue
        note = f" ({fails} failed)" if fails else ""
        print(f"| {what} | {param} | **{fmt(statistics.median(vals), digits)}** | "
              f"{fmt(min(vals), digits)} | {fmt(max(vals), digits)} | {unit} | {len(vals)}{note} | {counts} |")
print_rows(rows)
rows.clear()

print("\n### Latency, 64 B one-way (loss-free)\n")
print("| tool | what | median | min | max | unit | runs | measured over (median per run) |")
print("|---|---|---:|---:|---:|---|---:|---|")
def rl(n, key):
    d = rperf(n)
    if not d or not d.get("latency"):
        return None
    return (d["latency"][key], (d["latency"]["samples"], d["latency"]["seconds"]))
lat_c = lambda c: (f"{med_int([x[0] for x in c])} round trips in "
                   f"{statistics.median([x[1] for x in c]):.2f} s")
rp50 = row("uccl_rperf", "put+signal ping-pong, p50", "us", [f"r{i}-rperf" for i in R],
           lambda n: rl(n, "one_way_p50_us"), lat_c)
row("uccl_rperf", "put+signal ping-pong, p99", "us", [f"r{i}-rperf" for i in R],
    lambda n: rl(n, "one_way_p99_us"), lat_c)
row("sockperf", "UDP ping-pong (--nonblocked), p50", "us", [f"r{i}-sockperf" for i in R],
    lambda n: (lambda v: v and (v[0], v))(sockperf(n)),
    lambda c: f"{med_int([x[2] for x in c])} observations in {statistics.median([x[3] for x in c]):.2f} s")
row("sockperf", "UDP ping-pong (--nonblocked), p99", "us", [f"r{i}-sockperf" for i in R],
    lambda n: (lambda v: v and (v[1], v))(sockperf(n)),
    lambda c: f"{med_int([x[2] for x in c])} observations in {statistics.median([x[3] for x in c]):.2f} s")
ucx_lat = row("ucx_perftest", "tcp tag_lat, p50 (\"typical\")", "us", [f"r{i}-ucx-lat" for i in R],
              lambda n: (lambda v: v and (v[1], v))(ucx_final(n)),
              lambda c: f"{med_int([x[0] for x in c])} iterations")
row("ucx_perftest", "tcp tag_lat, average", "us", [f"r{i}-ucx-lat" for i in R],
    lambda n: (lambda v: v and (v[3], v))(ucx_final(n)),
    lambda c: f"{med_int([x[0] for x in c])} iterations")
row("fi_pingpong", "tcp msg, average", "us", [f"r{i}-fi-tcp-lat" for i in R],
    lambda n: (lambda v: v and (v[4], v))(fi(n)), lambda c: f"{c[0][1]} iterations")
row("fi_pingpong", "udp;ofi_rxd rdm, average", "us", [f"r{i}-fi-rxd-lat" for i in R],
    lambda n: (lambda v: v and (v[4], v))(fi(n)), lambda c: f"{c[0][1]} iterations")
print_rows(rows)
rows.clear()

print("\n### Goodput under random loss (offloads off; rule on TCP+UDP into B)\n")
print("| tool | loss rule | goodput median | min | max | kept: median of per-round ratios | min | max | runs | packets dropped / seen into B (median) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
kept = {}
for tool, suffix in (("uccl_rperf 16 MiB", "rperf"), ("iperf3 cubic", "iperf")):
    def gput(n):
        if suffix == "rperf":
            d = rperf(n)
            return d["goodput"][0]["gbit_per_s"] if d and d["goodput"] else None
        v = iperf(n)
        return v[0] if v else None
    base = {i: gput(f"l{i}-0-{suffix}") for i in R}
    for pm in (0, 1, 10):
        names = [f"l{i}-{pm}-{suffix}" for i in R]
        vals = [(i, gput(n)) for i, n in zip(R, names)]
        good = [v for _, v in vals if v is not None]
        ratios = [v / base[i] for i, v in vals if v is not None and base[i]]
        drops = [nft_counts(n) for n in names]
        drops = [d for d in drops if d]
        dtxt = ""
        if drops:
            dd = statistics.median([d[1] for d in drops])
            ds = statistics.median([d[0] for d in drops])
            dtxt = f"{int(dd)} / {int(ds)} ({100 * dd / ds:.3f}%)" if ds else ""
        label = {0: "none (0%)", 1: "0.1%", 10: "1%"}[pm]
        if not good:
            print(f"| {tool} | {label} | {why_missing(names)} | | | | | | 0 | |")
            continue
        if pm:
            kept[(suffix, pm)] = statistics.median(ratios) if ratios else None
        r = (f"**{100 * statistics.median(ratios):.1f}%** | {100 * min(ratios):.1f}% | "
             f"{100 * max(ratios):.1f}%") if pm and ratios else "| |"
        print(f"| {tool} | {label} | {statistics.median(good):.2f} Gbit/s | {min(good):.2f} | "
              f"{max(good):.2f} | {r} | {len(good)} | {dtxt} |")

print("\n### Targets\n")
def verdict(ok):
    return "met" if ok else "**not met**"
if ip_cubic:
    for sz, m in gp_med.items():
        if m is not None:
            print(f"- goodput >= 1.0x iperf3 cubic: {size_name(sz)} messages "
                  f"{m:.2f} / {ip_cubic:.2f} Gbit/s = {m / ip_cubic:.2f}x: {verdict(m >= ip_cubic)}")
else:
    print("- goodput vs iperf3 cubic: not measured")
for pm, want in ((1, 0.95), (10, 0.80)):
    u = kept.get(("rperf", pm))
    t = kept.get(("iperf", pm))
    if u is None:
        print(f"- kept at {pm / 10:g}% loss >= {want:.0%}: not measured")
    else:
        print(f"- kept at {pm / 10:g}% loss >= {want:.0%}: uccl_rperf {u:.1%}: {verdict(u >= want)}"
              + (f" (iperf3 cubic under the same rule: {t:.1%})" if t is not None else ""))
if rp50 is not None and ucx_lat is not None:
    print(f"- 64 B one-way latency no slower than UCX tcp: uccl_rperf p50 {rp50:.2f} us vs "
          f"ucx_perftest tag_lat p50 {ucx_lat:.2f} us = {rp50 / ucx_lat:.2f}x: {verdict(rp50 <= ucx_lat)}")
else:
    print("- latency vs UCX tcp: not measured")
EOF

q() { printf '%q ' "$@"; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo
echo "Machine: $(uname -srm), $(nproc) CPUs${cpu:+, $cpu}; load average before the run" \
	"$loadavg_before, after $loadavg_after; $((t_end - t_start)) s of measuring."
echo "Offloads during the loss rounds: $offloads. System default TCP congestion control: $default_cc."
echo "IP fragments created in A (kernel FragCreates): $frags_rperf during the uccl_rperf runs," \
	"$((frags_all - frags_rperf)) during the other tools' runs."
echo "Daemon A's channel at the end:"
sed 's/^/    /' "$tmp/channels-a.txt"
echo
echo "Commands (A = namespace $NS1, $IP1, veth1; B = $NS2, $IP2, veth2; MTU 9000; servers in B, clients in A):"
echo
echo "    ip netns exec A $(q "$daemon")--config a.conf --runtime-dir RA &   # B likewise, with b.conf"
sed 's/^/        a.conf: /' "$tmp/a.conf"
echo "        (b.conf: the same with peer_listen = $IP2:$PB, host_name = node-b)"
echo "    ip netns exec B $(q "${RPERF_SRV[@]}")"
echo "    ip netns exec A $(q "${RPERF_CLI[@]}")"
echo "    ip netns exec B $(q "${IPERF_SRV[@]}");  ip netns exec A $(q "${IPERF_CUBIC[@]}")"
echo "    ip netns exec A $(q "${IPERF_DEF[@]}")   # once"
echo "    ip netns exec B $(q "${UCX_SRV_BW[@]}");  ip netns exec A $(q "${UCX_CLI_BW[@]}")"
echo "    ip netns exec B $(q "${UCX_SRV_LAT[@]}");  ip netns exec A $(q "${UCX_CLI_LAT[@]}")"
echo "    ip netns exec B $(q "${FI_TCP_BW[@]}");  ip netns exec A $(q "${FI_TCP_BW[@]}" "$IP2")"
echo "    ip netns exec B $(q "${FI_TCP_LAT[@]}");  ip netns exec A $(q "${FI_TCP_LAT[@]}" "$IP2")"
echo "    ip netns exec B $(q "${FI_RXD_BW[@]}");  ip netns exec A $(q "${FI_RXD_BW[@]}" "$IP2")"
echo "    ip netns exec B $(q "${FI_RXD_LAT[@]}");  ip netns exec A $(q "${FI_RXD_LAT[@]}" "$IP2")"
echo "    ip netns exec B $(q "${SOCK_SRV[@]}");  ip netns exec A $(q "${SOCK_CLI[@]}")"
echo "    # loss rounds: ethtool -K vethN tso off gso off tx-udp-segmentation off gro off (both), then in B:"
echo "    nft add rule inet rperf in meta l4proto '{ tcp, udp }' counter"
echo "    nft add rule inet rperf in meta l4proto '{ tcp, udp }' numgen random mod 1000 '<' PERMILLE counter drop"
echo "    ip netns exec A $(q "${RPERF_LOSS[@]}");  ip netns exec A $(q "${IPERF_CUBIC[@]}")"
echo "    # $runs rounds of each; every server and client under timeout(1)"
# a uccl_rperf failure is a transport failure: say so in the exit status
for f in "$raw"/r*-rperf.rc "$raw"/l*-rperf.rc; do
	[ -e "$f" ] || continue
	[ "$(cat "$f")" = 0 ] || die "at least one uccl_rperf run failed ($(basename "$f" .rc)); see above"
done
