#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what building, testing and running ucclsvcd needs on Debian 12.
# Idempotent: does nothing when everything is present.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config
 libevent-dev libprotobuf-c-dev protobuf-c-compiler libsystemd-dev libcmocka-dev
 libibverbs-dev clang libclang-rt-14-dev python3 man-db groff-base iproute2 procps
 nftables ethtool"
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: not root; run as root or install:$missing" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
