/* SPDX-License-Identifier: MIT */
/*
 * pull: a receiving host's credit pacer for receiver-driven congestion
 * control (EQDS). Every channel of the host is a member; a channel whose
 * peer waits for credit (tpchan_credit_wanted) gets `quantum` bytes of it
 * per turn, round robin, and turns come at the host's line rate counted in
 * wire bytes, so that all the senders together send what the host's link
 * can take and no more. Sans-I/O: the caller runs it with the time and
 * wakes it at pull_deadline().
 *
 * rate 0 means unpaced: every waiting channel is granted at once, up to
 * what tpchan lets run ahead of its arrivals (a receive window, for a
 * daemon that does not know its line rate).
 */
#ifndef UCCL_ENGINE_PULL_H
#define UCCL_ENGINE_PULL_H

#include <stdint.h>

struct tpchan;
struct pull;

struct pull_stats {
	uint64_t grants;               /* turns handed out */
	uint64_t granted_bytes;        /* wire bytes they let in */
	uint32_t members;
};

/* rate in bits per second (0: unpaced); quantum in payload bytes per turn
 * (0: 16 KiB). NULL on allocation failure. */
struct pull *pull_new(uint64_t rate_bps, uint32_t quantum);
struct pull *pull_free(struct pull *p);          /* accepts NULL */
/* Membership: 0, -ENOMEM, -EEXIST. Removing a non-member is a no-op. */
int pull_add(struct pull *p, struct tpchan *c);
void pull_remove(struct pull *p, struct tpchan *c);

/* Hand out the turns due by now_ns. Returns the next time it has work:
 * the next turn if a member waits, else UINT64_MAX (a packet that makes a
 * member wait is a reason to run it again). */
uint64_t pull_run(struct pull *p, uint64_t now_ns);
void pull_get_stats(const struct pull *p, struct pull_stats *out);

#endif
