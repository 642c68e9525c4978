#!/bin/bash
# SPDX-License-Identifier: MIT
#
# targets.sh: run on a machine with the bundle from make-bundle.sh (as
# root). Issue #3's two targets that only the 16-core machines decide, with
# enough rounds for a median, in about three minutes:
#   - 64 B one-way latency no slower than UCX tcp: lat.sh, ROUNDS rounds
#     (default 7) of uccl_rperf's put+signal, put-with-signal and
#     send/recv ping-pongs
#     (clients sleeping and spinning) beside UCX tcp tag_lat and sockperf
#     UDP, alternating; then PIN_ROUNDS more (default 5; 0: none) with
#     every program pinned (lat.sh PIN) to the four CPUs that ran a short
#     tpchan_bench's core reference fastest: the clients of every tool on
#     the first two, the engines on the other two;
#   - 1.5 M chunks/s on one core: tpchan_bench 327680 3 400, INVOCATIONS
#     times (default 7), interleaved with the bundle's older builds of it
#     where there are any (tpchan_bench.old from OLD=DIR, .nolto from
#     NOLTO=DIR; make-bundle.sh), so that the machine and the code are told
#     apart. Each invocation also prints a core reference (a fixed integer
#     loop's speed around its runs): chunks per 1000 rounds is the code's
#     figure, the reference the machine's. Then one invocation pinned to
#     each CPU (PERCPU=0 leaves it out).
# The CPU and clock source go first (a clock read that is a system call
# would cost every engine pass), then the daemons' data plane line (with
# "rx hint" when the receive hint is on). Summary with medians and per-round ratios
# in OUT/targets.txt (OUT default /tmp/out); a measurement that is missing
# (a round that timed out, an invocation that failed) is named there and
# makes the exit status 1.
#
#   OLD=old-build bench/device/make-bundle.sh build && bench/device/targets.sh
# shellcheck source=bench/device/bundle.sh
. "$(dirname "$0")/bundle.sh"
cpu_info >"$OUT/targets.txt" 2>&1
ROUNDS=${ROUNDS:-7} INVOCATIONS=${INVOCATIONS:-7}
OUT=$OUT/lat ROUNDS=$ROUNDS timeout 300 bash "$R/bench/device/lat.sh" >/dev/null 2>&1
# the daemons' data plane as they logged it: whether the receive hint was
# on (udp_rx_hint; a kernel that refuses its filter is logged too)
grep -hoE "data plane on udp .*|no receive hint.*" "$OUT/lat/alat.log" "$OUT/lat/blat.log" 2>/dev/null |
	sed 's/^/daemon: /' >>"$OUT/targets.txt"
PIN_ROUNDS=${PIN_ROUNDS:-5}
if [ "$PIN_ROUNDS" != 0 ] && command -v taskset >/dev/null; then
	# shellcheck disable=SC2046
	set -- $(for c in $(seq 0 $(($(nproc) - 1))); do
		r=$(timeout 20 taskset -c "$c" "$B/bin/tpchan_bench" 32768 1 0 2>&1 |
			sed -n 's/^core reference: median \([0-9]*\) M.*/\1/p')
		echo "${r:-0} $c"
	done | sort -rn | head -4 | awk '{print $2}')
	[ $# = 4 ] && OUT=$OUT/latpin ROUNDS=$PIN_ROUNDS PIN="$3 $4 $1 $2" timeout 300 \
		bash "$R/bench/device/lat.sh" >/dev/null 2>&1
fi
for _ in $(seq "$INVOCATIONS"); do
	for v in "" .old .nolto; do
		[ -x "$B/bin/tpchan_bench$v" ] || continue
		# two lines per invocation, named, also when it printed no
		# median: the chunks, and the core reference measured around
		# its runs (a binary from before the reference has none)
		o=$(timeout 60 "$B/bin/tpchan_bench$v" 327680 3 400 2>&1)
		echo "tpchan_bench$v $(echo "$o" | grep "control path: median" || echo FAILED)"
		echo "tpchan_bench$v $(echo "$o" | grep "core reference: median" || echo "core reference: none")"
	done
done >"$OUT/tpchan-runs.txt"
# one invocation pinned to each CPU (PERCPU=0: none): a core that is
# slower every time (a busy sibling, a host thread) shows as such
if [ "${PERCPU:-1}" != 0 ] && command -v taskset >/dev/null; then
	for c in $(seq 0 $(($(nproc) - 1))); do
		o=$(timeout 60 taskset -c "$c" "$B/bin/tpchan_bench" 327680 3 400 2>&1)
		echo "cpu$c $(echo "$o" | grep "control path: median" || echo FAILED)"
		echo "cpu$c $(echo "$o" | grep "core reference: median" || echo "core reference: none")"
	done >"$OUT/tpchan-percpu.txt"
fi
python3 - "$OUT" "$ROUNDS" "$INVOCATIONS" "$PIN_ROUNDS" >>"$OUT/targets.txt" <<'EOF'
import os, re, statistics as st, sys
out, nrounds, ninv, npin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
med = lambda v: "%.2f" % st.median(v) if v else "none"
missing = []

# one lat.sh run's table: per round and median, uccl / UCX tcp per round
def lat_table(sub, title, want):
    rounds = {}
    summary = out + "/" + sub + "/summary.txt"
    for line in open(summary) if os.path.exists(summary) else []:
        if line.startswith("pinned"):
            title += " (" + line.strip() + ")"
        m = re.match(r"round (\d+) (.*?): (.*)", line)
        if not m:
            continue
        r, what, rest = int(m.group(1)), m.group(2), m.group(3)
        if what.startswith("uccl"):
            v = re.search(r"one-way p50 ([\d.]+)", rest)
        elif what.startswith("ucx"):
            v = re.search(r"Final:\s+\d+\s+([\d.]+)", rest)   # typical (median) one-way
        else:
            v = re.search(r"percentile 50.000 = ([\d.]+)", rest)
        if v:
            rounds.setdefault(what, {})[r] = float(v.group(1))
    for what in ("uccl sleep", "uccl spin", "uccl fused sleep", "uccl fused spin", "uccl send sleep",
                 "uccl send spin", "ucx tcp tag_lat", "sockperf udp"):
        got = len(rounds.get(what, {}))
        if got < want:
            missing.append("%s%s: %d of %d rounds" % (sub + " " if sub != "lat" else "", what, got, want))
    ucx = rounds.get("ucx tcp tag_lat", {})
    print(title)
    for what, per in sorted(rounds.items()):
        vals = [per[r] for r in sorted(per)]
        line = "  %-18s %s  median %s" % (what, " ".join("%.2f" % v for v in vals), med(vals))
        if what.startswith("uccl"):
            ratio = [per[r] / ucx[r] for r in sorted(per) if r in ucx]
            line += "  / UCX tcp per round: %s  median %s" % (" ".join("%.2f" % x for x in ratio), med(ratio))
        print(line)

lat_table("lat", "64 B one-way latency, us (p50 per round; UCX tcp tag_lat typical)", nrounds)
if npin:
    lat_table("latpin", "the same, pinned", npin)
chunks, refs, norm = {}, {}, {}
for line in open(out + "/tpchan-runs.txt"):
    m = re.match(r"(\S+) .*median ([\d.]+) M chunks/s", line)
    if m:
        chunks.setdefault(m.group(1), []).append(float(m.group(2)))
    m = re.match(r"(\S+) core reference: median (\d+) M rounds/s.*; ([\d.]+) chunks per 1000", line)
    if m:
        refs.setdefault(m.group(1), []).append(float(m.group(2)))
        norm.setdefault(m.group(1), []).append(float(m.group(3)))
print("control path, tpchan_bench 327680 3 400, M chunks/s (invocations, each a median of 3 runs)")
for name, v in chunks.items():
    print("  %-20s %s  median %s" % (name, " ".join("%.2f" % x for x in v), med(v)))
# the core reference around the same runs: if it swings with the chunks,
# the machine gave the core's time away; chunks per 1000 rounds is the
# code's figure, and 1.5 M chunks/s needs a core that runs the reference
# at 1.5e9 / that many M rounds/s
for name, v in refs.items():
    n = norm[name]
    print("  %-20s core reference %s M rounds/s  median %.0f; chunks per 1000 rounds %s  median %s"
          % (name, " ".join("%.0f" % x for x in v), st.median(v), " ".join("%.2f" % x for x in n), med(n)))
    if st.median(n) > 0:
        print("  %-20s 1.5 M chunks/s needs a core that runs the reference at %.0f M rounds/s or more"
              % (name, 1.5e9 / st.median(n) / 1e6))
pc = out + "/tpchan-percpu.txt"
if os.path.exists(pc):
    print("tpchan_bench pinned to each CPU, one invocation each: M chunks/s (core reference, M rounds/s)")
    cpus = {}
    for line in open(pc):
        m = re.match(r"(cpu\d+) .*median ([\d.]+) M chunks/s", line)
        if m:
            cpus.setdefault(m.group(1), [None, None])[0] = float(m.group(2))
        m = re.match(r"(cpu\d+) core reference: median (\d+) M rounds/s", line)
        if m:
            cpus.setdefault(m.group(1), [None, None])[1] = float(m.group(2))
    print("  " + ", ".join("%s %s (%s)" % (c, "%.2f" % v[0] if v[0] else "-", "%.0f" % v[1] if v[1] else "-")
                           for c, v in cpus.items()))
    v = [x[0] for x in cpus.values() if x[0]]
    if v:
        print("  median %s, min %.2f, max %.2f over %d CPUs" % (med(v), min(v), max(v), len(v)))
got = len(chunks.get("tpchan_bench", []))
if got < ninv:
    missing.append("tpchan_bench: %d of %d invocations" % (got, ninv))
for m in missing:
    print("MISSING: " + m)
sys.exit(1 if missing else 0)
EOF
rc=$?
cat "$OUT/targets.txt"
exit $rc
