/* SPDX-License-Identifier: MIT */
/*
 * units: byte counts written exactly in the largest binary unit that fits,
 * one formatter for the tools that print sizes their tests parse.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "client/units.h"

const char *units_size_str(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB" };
	int u = 0;

	while (u < 3 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, unit[u]);
	return buf;
}
