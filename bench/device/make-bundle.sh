#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make-bundle.sh BUILDDIR [OUT]: a self-contained copy of the daemon, the
# benchmark clients, tpchan_bench, engine_turn_bench, udp_nic_bench and the
# reference tools (iperf3, sockperf, ucx_perftest,
# nft, ethtool, ip, ss; perf with PERF=1) with every shared library they load, the
# dynamic loader included, for a machine that cannot install packages (the
# GPU machines lent to sessions: Ubuntu, no network). Each program runs
# through a wrapper in OUT/bin that starts it with the bundled loader, so the
# other machine's libc does not matter. OUT/build mimics a build tree for
# bench/run-remote-perf.sh. OUT defaults to ./devbundle (git-ignored there
# with .git/info/exclude); about 56 MB. With NOLTO=DIR (a --disable-lto
# build of the same tree) its daemon and engine benchmarks come too; with
# OLD=DIR (a build of an earlier commit) its tpchan_bench.
set -eu
build=$(cd "${1:?usage: make-bundle.sh BUILDDIR [OUT]}" && pwd)
out=${2:-devbundle}
inst=$(mktemp -d)
trap 'rm -rf "$inst"' EXIT
make -C "$build" install DESTDIR="$inst" >/dev/null
rm -rf "$out"
mkdir -p "$out/bin" "$out/libexec" "$out/lib" "$out/build/daemon" "$out/build/bench" "$out/build/client"
p=$inst/usr/local
for b in "$p/sbin/ucclsvcd" "$p/bin/uccl_rperf" "$p/bin/ucclctl" "$p/bin/uccl_xfer"; do
	cp -L "$b" "$out/libexec/"
done
# not installed (noinst): the control-path, per-hop and UDP backend
# benchmarks, linked statically against the engine
cp -L "$build/bench/tpchan_bench" "$build/bench/engine_turn_bench" "$build/bench/udp_nic_bench" \
	"$out/libexec/"
# NOLTO=DIR: a build of the same tree configured with --disable-lto; its
# daemon and those two benchmarks come along as NAME.nolto, for an A/B of
# link-time optimisation on the other machine's core (pack.sh runs it)
if [ -n "${NOLTO:-}" ]; then
	for x in daemon/ucclsvcd bench/tpchan_bench bench/engine_turn_bench; do
		[ -f "$NOLTO/$x" ] || { echo "make-bundle.sh: $NOLTO/$x not built" >&2; exit 1; }
		cp -L "$NOLTO/$x" "$out/libexec/$(basename "$x").nolto"
	done
fi
# OLD=DIR: a build of an earlier commit; its tpchan_bench comes along as
# tpchan_bench.old, so that targets.sh tells the machine and the code apart
if [ -n "${OLD:-}" ]; then
	[ -f "$OLD/bench/tpchan_bench" ] || { echo "make-bundle.sh: $OLD/bench/tpchan_bench not built" >&2; exit 1; }
	cp -L "$OLD/bench/tpchan_bench" "$out/libexec/tpchan_bench.old"
fi
# perf and the libraries it loads (python, perl: 20 MB) only with PERF=1
# (cpu-profile.sh, lat-profile.sh): with them, the bundle and the source
# tree together pass the 64 MiB that a device call carries
tools="iperf3 sockperf ucx_perftest nft ethtool ip ss timeout taskset"
[ "${PERF:-0}" = 0 ] || tools="$tools perf"
for t in $tools; do
	b=$(command -v "$t") || { echo "make-bundle.sh: $t not installed, left out" >&2; continue; }
	cp -L "$b" "$out/libexec/"
done
for b in "$out"/libexec/*; do
	LD_LIBRARY_PATH=$p/lib ldd "$b" | awk '/=>/ && $3 ~ /^\// {print $3}'
done | sort -u | while read -r l; do cp -L "$l" "$out/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/"
for f in "$out"/libexec/*; do
	n=$(basename "$f")
	printf '#!/bin/sh\nB=$(cd "$(dirname "$0")/.." && pwd)\nexec "$B/lib/ld-linux-x86-64.so.2" --library-path "$B/lib" "$B/libexec/%s" "$@"\n' \
		"$n" >"$out/bin/$n"
	chmod +x "$out/bin/$n"
done
wrapped="daemon/ucclsvcd bench/uccl_rperf client/ucclctl"
[ -z "${NOLTO:-}" ] || wrapped="$wrapped daemon/ucclsvcd.nolto"
for x in $wrapped; do
	printf '#!/bin/sh\nB=$(cd "$(dirname "$0")/../.." && pwd)\nexec "$B/bin/%s" "$@"\n' "$(basename "$x")" >"$out/build/$x"
	chmod +x "$out/build/$x"
done
du -sh "$out"
