# SPDX-License-Identifier: MIT
#
# bundle.sh: sourced first by the device scripts (bash). Sets R (the source
# tree), B (the bundle from make-bundle.sh: BUNDLE, default R/devbundle;
# its programs come first in PATH) and OUT (default /tmp/out, made), and
# defines cpu_info: the CPU's model and clock, the frequency governor,
# whether there is a hypervisor, the clock source and the kernel, which is
# what moves figures between the lent machines.
R=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUNDLE:-$R/devbundle}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH="$B/bin:$PATH"

cpu_info() {
	grep -m1 "model name" /proc/cpuinfo
	grep "cpu MHz" /proc/cpuinfo | sort | uniq -c | sort -rn | head -3
	for f in scaling_governor scaling_cur_freq scaling_max_freq; do
		printf '%s: %s\n' "$f" "$(cat /sys/devices/system/cpu/cpu0/cpufreq/$f 2>/dev/null || echo none)"
	done
	grep -o "hypervisor" /proc/cpuinfo | head -1
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	echo "kernel: $(uname -r)"
}
