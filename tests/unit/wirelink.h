/* SPDX-License-Identifier: MIT */
/*
 * wirelink: an in-memory wire between two tpchans, for tests, in virtual
 * time. Each direction has a serialisation rate, a one-way delay (plus a
 * per-path skew, so that paths reorder against each other), and seeded
 * random loss, duplication and extra delay (reordering). wirelink_step()
 * lets both channels send what they can, then moves time to the next event
 * (a packet arriving or a channel's deadline) and delivers what is due.
 * Same seed, same run.
 */
#ifndef UCCL_TESTS_WIRELINK_H
#define UCCL_TESTS_WIRELINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tpchan.h"

struct wirelink;

struct wirelink_params {
	uint64_t seed;
	uint32_t mtu;                  /* largest packet either channel sends */
	uint32_t rate_gbps;            /* per direction; 0: no serialisation delay */
	uint64_t delay_ns;             /* one way */
	uint64_t path_skew_ns;         /* path p adds p * path_skew_ns */
	uint32_t loss_ppm;             /* per packet, both directions */
	uint32_t dup_ppm;              /* delivered twice */
	uint32_t reorder_ppm;          /* delayed by a further [0, jitter_ns) */
	uint64_t jitter_ns;
};

struct wirelink_stats {
	uint64_t sent[2];              /* [0]: a to b, [1]: b to a */
	uint64_t lost[2], dup[2], delivered[2];
	uint64_t rx_errors[2];         /* deliveries tpchan_rx refused */
	uint64_t max_queued;           /* most packets on the wire at once */
	uint64_t steps;
	uint64_t gathered;              /* packets sent as header + mapped payload */
};

/* Tap: sees every packet as it is sent (from 0 = a, 1 = b) and returns the
 * extra delay it gets in ns (0: none), or a negative number to drop it. */
typedef int64_t (*wirelink_tap)(void *arg, int from, const uint8_t *pkt, uint32_t len);

/* Timer: runs at the start of every step with the time (before the
 * channels send) and returns when it next wants to run, UINT64_MAX for
 * never; stepping wakes for it. For what drives channels from outside,
 * such as a credit pacer. */
typedef uint64_t (*wirelink_timer)(void *arg, uint64_t now_ns);

struct wirelink *wirelink_new(const struct wirelink_params *p, struct tpchan *a, struct tpchan *b,
			      uint64_t start_ns);
struct wirelink *wirelink_free(struct wirelink *l);    /* accepts NULL */

/* Loss for one direction (0: a to b, 1: b to a); 1000000 drops everything. */
void wirelink_set_loss(struct wirelink *l, int from, uint32_t ppm);
void wirelink_set_tap(struct wirelink *l, wirelink_tap tap, void *arg);
void wirelink_set_timer(struct wirelink *l, wirelink_timer timer, void *arg);
uint64_t wirelink_now(const struct wirelink *l);

/* One event. 1: time moved or packets moved; 0: nothing will ever happen
 * again (idle); -EDEADLK: a channel said it was due but sent nothing. */
int wirelink_step(struct wirelink *l);

/* Step until done(arg) holds (checked before each step), the link is idle
 * (-ENODATA unless done), virtual time passes limit_ns (-ETIME), or a
 * step fails. */
int wirelink_run(struct wirelink *l, bool (*done)(void *arg), void *arg, uint64_t limit_ns);

/* Hand raw bytes to a channel (to: 0 = a, 1 = b) now; tpchan_rx's answer. */
int wirelink_inject(struct wirelink *l, int to, const void *pkt, size_t len);

void wirelink_get_stats(const struct wirelink *l, struct wirelink_stats *out);

#endif
