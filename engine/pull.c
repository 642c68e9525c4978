/* SPDX-License-Identifier: MIT */
/*
 * pull: see pull.h. Turns are spaced by the wire time of what each grant
 * lets in; a pacer that is run late may catch up by at most PULL_BURST
 * turns (an engine thread wakes tens of microseconds late; idle time must
 * not become a burst of credit).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "engine/pull.h"
#include "engine/tpchan.h"

#define PULL_DEF_QUANTUM 16384u
#define PULL_BURST 4u

struct pull {
	uint64_t rate_bps;
	uint32_t quantum;
	uint64_t next_ns;              /* the next turn */
	uint64_t last_gap_ns;          /* spacing of the last turn */
	struct tpchan **ch;
	uint32_t n, cap, rr;
	struct pull_stats st;
};

struct pull *pull_new(uint64_t rate_bps, uint32_t quantum)
{
	struct pull *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->rate_bps = rate_bps;
	p->quantum = quantum ? quantum : PULL_DEF_QUANTUM;
	return p;
}

struct pull *pull_free(struct pull *p)
{
	if (p) {
		free(p->ch);
		free(p);
	}
	return NULL;
}

int pull_add(struct pull *p, struct tpchan *c)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (p->ch[i] == c)
			return -EEXIST;
	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 8;
		struct tpchan **v = realloc(p->ch, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->ch = v;
		p->cap = cap;
	}
	p->ch[p->n++] = c;
	p->st.members = p->n;
	return 0;
}

void pull_remove(struct pull *p, struct tpchan *c)
{
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->ch[i] != c)
			continue;
		p->ch[i] = p->ch[--p->n];
		if (p->rr >= p->n)
			p->rr = 0;
		p->st.members = p->n;
		return;
	}
}

/* The next member that waits, from the round-robin position; -1 if none. */
static int64_t next_waiting(const struct pull *p)
{
	for (uint32_t k = 0; k < p->n; k++) {
		uint32_t i = (p->rr + k) % p->n;

		if (tpchan_credit_wanted(p->ch[i]))
			return i;
	}
	return -1;
}

/* Wire time of `bytes` at the rate, at least 1 ns. In bit/s, not whole
 * Mbit/s: an engine thread's share of pull_rate_mbps need not be whole
 * (1.5 was paced as 1, 0.5 as 1). The product takes 128 bits: bytes * 8e9
 * passes 2^64 from 2.3 GB. */
static uint64_t gap_ns(const struct pull *p, uint64_t bytes)
{
	uint64_t ns = (uint64_t)((unsigned __int128)bytes * 8 * 1000000000u / p->rate_bps);

	return ns ? ns : 1;
}

uint64_t pull_run(struct pull *p, uint64_t now_ns)
{
	int64_t i;

	if (p->rate_bps) {
		uint64_t floor = now_ns - (now_ns > PULL_BURST * p->last_gap_ns ?
					   PULL_BURST * p->last_gap_ns : now_ns);

		if (p->next_ns < floor)
			p->next_ns = floor;
	}
	while ((i = next_waiting(p)) >= 0) {
		uint64_t bytes;

		if (p->rate_bps && p->next_ns > now_ns)
			return p->next_ns;
		bytes = tpchan_credit_grant(p->ch[i], p->quantum);
		p->rr = (uint32_t)i + 1 < p->n ? (uint32_t)i + 1 : 0;
		p->st.grants++;
		p->st.granted_bytes += bytes;
		if (p->rate_bps) {
			p->last_gap_ns = gap_ns(p, bytes);
			p->next_ns += p->last_gap_ns;
		}
	}
	/* nobody waits: idle time is not saved up as credit */
	if (p->rate_bps && p->next_ns < now_ns)
		p->next_ns = now_ns;
	return UINT64_MAX;
}

void pull_get_stats(const struct pull *p, struct pull_stats *out)
{
	*out = p->st;
}
