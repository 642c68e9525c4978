/* SPDX-License-Identifier: MIT */
/*
 * units: byte counts in words for the summaries of uccl_xfer and
 * bench/uccl_rperf, whose scripts and tests read them back. Not part of
 * libucclclient: each tool links this file itself.
 */
#ifndef UCCL_CLIENT_UNITS_H
#define UCCL_CLIENT_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* BYTES in the largest of GiB, MiB and KiB that divides it evenly, else in
 * bytes: "64 KiB", "1500 KiB", "1 GiB", "1000 B". A size cut down to whole
 * units would misreport it (1500K is not "1 MiB", 100 bytes not "0 KiB").
 * Returns buf. */
const char *units_size_str(char *buf, size_t len, uint64_t bytes);

#endif
