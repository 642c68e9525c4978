#!/bin/sh
# SPDX-License-Identifier: MIT
# A short soak (bench/soak.sh for SOAK_SECONDS, 30 by default): two
# daemons on 127.0.0.1 serve verified transfers round after round from
# fresh client processes, both ways, 4 KiB to 256 MiB over 1 to 4 endpoint
# pairs, while b is killed (-9) and restarted every 4 rounds and every 7th
# round's sender is killed (-9) mid-transfer. Every transfer outside a
# restart's round must pass; a killed sender's receiver must exit and
# both daemons let go of their clients within 10 s; a's descriptors and
# threads must come back to where they were with no client or endpoint
# left; both daemons must stop cleanly on SIGTERM with no sanitizer report
# in their logs. No root needed.
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
command -v bash >/dev/null || { echo "SKIP: no bash"; exit 77; }
exec bash "$top_srcdir/bench/soak.sh" "$top_builddir" "${SOAK_SECONDS:-30}" 4
