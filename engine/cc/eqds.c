/* SPDX-License-Identifier: MIT */
/*
 * eqds: the sender's half of receiver-driven congestion control (EQDS,
 * NSDI 2022, as UCCL-Tran uses it against incast). Congestion is decided
 * where the data arrives: the receiving host's pull pacer (engine/pull.c)
 * hands out credit at its own line rate, round robin across every sender
 * that asks, so N senders into one host together send at that host's rate
 * and the last-hop queue stays short. The sender's side (tpchan's credit
 * mode, selected by CC_F_CREDIT) sends a bounded speculative window when a
 * burst starts with nothing in flight, so short messages need no round trip,
 * and after that only what was granted. All this module decides is that
 * speculative window; the ACK-clocked signals only feed the counters.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

/* Speculative window in chunks: about one bandwidth-delay product of a
 * datacenter path (100 Gbit/s x 5 us = 62 KB), small enough that an incast
 * of many senders mostly fits a switch buffer before the pacer takes over. */
#define EQDS_SPEC_CHUNKS 2u

struct eqds {
	uint64_t spec;
	uint64_t losses, timeouts, ecn;
};

static void eqds_init(void *st, const struct cc_params *p)
{
	struct eqds *s = st;
	struct cc_bounds b;

	cc_bounds_init(&b, p);
	*s = (struct eqds){ .spec = cc_clamp(&b, (uint64_t)EQDS_SPEC_CHUNKS * b.chunk) };
}

static void eqds_on_ack(void *st, const struct cc_ack *a)
{
	struct eqds *s = st;

	if (a->ecn)
		s->ecn++;
}

static void eqds_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct eqds *s = st;

	(void)now_ns;
	if (timeout)
		s->timeouts++;
	else
		s->losses++;
}

static uint64_t eqds_window(const void *st)
{
	const struct eqds *s = st;

	return s->spec;
}

/* cwnd is the speculative window, as the other modules name their window */
static int eqds_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct eqds *s = st;
	const char *const k[] = { "cwnd", "losses", "timeouts", "ecn" };
	const uint64_t v[] = { s->spec, s->losses, s->timeouts, s->ecn };

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_eqds_ops = {
	.name       = "eqds",
	.state_size = sizeof(struct eqds),
	.flags      = CC_F_CREDIT,
	.init       = eqds_init,
	.on_ack     = eqds_on_ack,
	.on_loss    = eqds_on_loss,
	.window     = eqds_window,
	.describe   = eqds_describe,
};
