#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run every libFuzzer target built in BUILDDIR/tests/fuzz (configure with
# CC=clang --enable-fuzz) for SECONDS each, seeded from tests/fuzz/corpus/NAME.
# The corpus is copied to a temporary directory so that the repository is
# never modified; on a crash that directory is kept and named. One line per
# target; exits non-zero if any target crashed, leaked, timed out or ran out
# of memory.
set -u

usage() {
	echo "usage: $0 BUILDDIR SECONDS" >&2
	exit 2
}

[ $# -eq 2 ] || usage
builddir=$1
seconds=$2
case $seconds in '' | *[!0-9]*) usage ;; esac
[ "$seconds" -gt 0 ] || usage

srcdir=$(cd "$(dirname "$0")" && pwd)
found=0
failed=0

# Longest input per target: a few frames of the control protocol, a config
# file with a line past the 4096-character limit, a batch of 64-byte SQEs,
# a few peer-protocol frames (the largest frame is 64 KiB; the checks are on
# small messages, so short inputs find more).
max_len_of() {
	case $1 in
	fuzz_ctl) echo 8192 ;;
	fuzz_conf) echo 16384 ;;
	fuzz_sqe) echo 4096 ;;
	fuzz_wire) echo 66000 ;;
	fuzz_peer) echo 8192 ;;
	fuzz_peerconn) echo 8192 ;;
	fuzz_remote) echo 8192 ;;
	fuzz_simconf) echo 4096 ;;
	*) echo 4096 ;;
	esac
}

# Option names for the config fuzzer, so that mutations reach past the
# "unknown option" check quickly: read from the option table in
# daemon/conf.c, so that a new option is in the dictionary too.
write_conf_dict() {
	for k in $(sed -n 's/^[[:space:]]*{ "\([a-z_0-9]*\)", OT_.*/\1/p' "$srcdir/../../daemon/conf.c"); do
		printf '"%s = "\n' "$k"
	done
	for v in true false none auto root debug 4K 1M 1G 1T -1 65536 ',' \
		'127.0.0.1:7000' '[::1]:7000' 'a=10.0.0.1:1' 'fd00::1'; do
		printf '"%s"\n' "$v"
	done
}

# Keys and words of simulator scenarios (docs/sim.md).
write_simconf_dict() {
	for k in topology hosts leaves spines hosts_per_leaf host_rate uplink_rate delay \
		queue ecn loss mtu chunk cc recovery paths max_inflight cc_delay_slack rto_min \
		dupthresh rack cc_base_rtt sample time_limit seed flow incast permutation stagger inband adaptive_chunk \
		pfc spray; do
		printf '"%s = "\n' "$k"
	done
	for v in pair star leafspine none step red random bursty sack gbn window eqds on off to at packet run \
		every 100G 1us 64KiB 1MiB 0.1% 10ppm; do
		printf '"%s"\n' "$v"
	done
}

for name in fuzz_ctl fuzz_ctlio fuzz_conf fuzz_sqe fuzz_wire fuzz_peer fuzz_peerconn fuzz_remote fuzz_simconf; do
	bin=$builddir/tests/fuzz/$name
	[ -x "$bin" ] || continue
	found=$((found + 1))

	work=$(mktemp -d "${TMPDIR:-/tmp}/uccl-$name.XXXXXX") || exit 2
	mkdir -p "$work/corpus" "$work/artifacts"
	if [ -d "$srcdir/corpus/${name#fuzz_}" ]; then
		cp -R "$srcdir/corpus/${name#fuzz_}/." "$work/corpus/"
	fi
	dict=
	if [ "$name" = fuzz_conf ]; then
		write_conf_dict >"$work/conf.dict"
		dict=-dict=$work/conf.dict
	fi
	if [ "$name" = fuzz_simconf ]; then
		write_simconf_dict >"$work/simconf.dict"
		dict=-dict=$work/simconf.dict
	fi

	# shellcheck disable=SC2086  # $dict is empty or one word
	"$bin" -max_total_time="$seconds" -max_len="$(max_len_of "$name")" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/" $dict \
		"$work/corpus" >"$work/log" 2>&1
	rc=$?

	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	if [ $rc -eq 0 ]; then
		echo "$name: ok, ${runs:-?} runs in ${seconds}s"
		rm -rf "$work"
	else
		echo "$name: FAILED (exit $rc); log and artifacts in $work"
		failed=$((failed + 1))
	fi
done

if [ $found -eq 0 ]; then
	echo "no fuzz targets in $builddir/tests/fuzz (configure with CC=clang --enable-fuzz)" >&2
	exit 2
fi
[ $failed -eq 0 ]
