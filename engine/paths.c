/* SPDX-License-Identifier: MIT */
/*
 * paths: the per-path table of a channel and the choice of a path per chunk.
 * Power of two choices: draw two distinct paths, keep the one without a
 * recent loss, else the lower smoothed RTT (an unsampled path counts as 0 so
 * that new paths get tried; now and then a stale estimate loses to a fresh
 * one, so that a path slow once is tried again). Two random draws spread load over every path
 * while steering away from slow or lossy ones, at O(1) per chunk. If both
 * draws lost recently, any path that did not is taken (a scan, rare and
 * cached), and only if every path lost, the older loss of the two. The
 * random numbers come from xorshift64* seeded by the caller: same seed, same
 * picks.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/paths.h"
#include "engine/vpack.h"

struct path {
	struct paths_stat st;
	bool lost;                     /* last_loss_ns is meaningful */
	uint64_t renewed;              /* paths.picks at its last RTT sample, or probe */
};

/* A path's smoothed RTT changes only by its own samples, and a path that
 * loses every choice is not sent on: one slow spell (a descheduled
 * receiver, a queue on one route) would keep it out for good. So a drawn
 * path whose estimate was not renewed for STALE_PICKS picks per path of
 * the channel (a path the choice shuns; one it takes is renewed about
 * every n picks), against one whose estimate was, is tried once more (one
 * chunk, which renews it), and its next sample says whether it is still
 * slow. A channel tries such a path at most once in PROBE_GAP picks per
 * path, so that the choice stays steered. */
#define STALE_PICKS 16u
#define PROBE_GAP 4u

struct paths {
	uint32_t n;
	uint64_t rng;                  /* xorshift64* state, never 0 */
	uint64_t loss_hold_ns;
	/* Set when a scan found every path held out by a recent loss: before
	 * this time no path can become eligible, so picks skip the O(n) scan
	 * while the whole table is lossy. A new loss only pushes that time
	 * later, unless it is stamped earlier than the path's last one. */
	uint64_t all_lost_until_ns;
	bool all_lost;
	bool load_first;               /* paths_set_load_first */
	uint64_t picks;                /* choices made, the clock of staleness */
	uint64_t last_probe;           /* picks when a stale path was last tried */
	struct path *p;                /* n entries, or NULL (released: defaults) */
};

/* splitmix64 finaliser: turns nearby seeds (0, 1, 2...) into unrelated
 * states, and xorshift must not start from 0. */
static uint64_t seed_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 0x9e3779b97f4a7c15ull;
}

static uint64_t rng_next(struct paths *p)
{
	uint64_t x = p->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	p->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, bound): multiply-shift on the high 32 bits, which are the
 * strong ones in xorshift64* output. Bias is below 2^-24 for bound <= 256. */
static uint32_t rng_below(struct paths *p, uint32_t bound)
{
	return (uint32_t)(((rng_next(p) >> 32) * bound) >> 32);
}

struct paths *paths_new(uint32_t n, uint64_t seed, uint64_t loss_hold_ns)
{
	struct paths *p;

	if (n < 1 || n > PATHS_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->p = calloc(n, sizeof(p->p[0]));
	if (!p->p) {
		free(p);
		return NULL;
	}
	p->n = n;
	p->rng = seed_mix(seed);
	p->loss_hold_ns = loss_hold_ns;
	return p;
}

struct paths *paths_free(struct paths *p)
{
	if (p)
		free(p->p);
	free(p);
	return NULL;
}

void paths_release(struct paths *p)
{
	free(p->p);
	p->p = NULL;
	p->all_lost = false;           /* no path remembers a loss now */
}

int paths_pack(const struct paths *p, struct vpack *v)
{
	if (p->p)
		return -EBUSY;
	vpack_words(v, p, sizeof(*p));
	return v->err ? -ENOMEM : 0;
}

struct paths *paths_unpack(struct vunpack *r)
{
	struct paths *p = calloc(1, sizeof(*p));

	if (p && (!vunpack_words(r, p, sizeof(*p)) || p->p || p->n < 1 || p->n > PATHS_MAX)) {
		free(p);
		return NULL;
	}
	return p;
}

size_t paths_bytes(const struct paths *p)
{
	return sizeof(*p) + (p->p ? p->n * sizeof(p->p[0]) : 0);
}

/* The table, allocated again after a release; NULL if that fails. */
static struct path *table(struct paths *p)
{
	if (!p->p)
		p->p = calloc(p->n, sizeof(p->p[0]));
	return p->p;
}

/* A clock that appears to run backwards keeps the loss recent. */
static bool recently_lost(const struct paths *p, const struct path *x, uint64_t now)
{
	if (!x->lost)
		return false;
	return now < x->st.last_loss_ns || now - x->st.last_loss_ns < p->loss_hold_ns;
}

/* Both drawn paths lost recently: take any path that did not, scanning from
 * a random start so that no path is favoured; UINT32_MAX if there is none. */
static uint32_t scan_eligible(struct paths *p, uint64_t now)
{
	uint64_t until = UINT64_MAX;
	uint32_t start;

	if (p->all_lost && now >= p->all_lost_until_ns)
		p->all_lost = false;
	if (p->all_lost)
		return UINT32_MAX;
	start = rng_below(p, p->n);
	for (uint32_t k = 0; k < p->n; k++) {
		uint32_t i = (start + k) % p->n;
		const struct path *x = &p->p[i];
		uint64_t end;

		if (!recently_lost(p, x, now))
			return i;
		end = x->st.last_loss_ns > UINT64_MAX - p->loss_hold_ns ?
		      UINT64_MAX : x->st.last_loss_ns + p->loss_hold_ns;
		if (end < until)
			until = end;
	}
	p->all_lost = true;
	p->all_lost_until_ns = until;
	return UINT32_MAX;
}

/* The estimate was not renewed for STALE_PICKS picks per path. */
static bool stale(const struct paths *p, const struct path *x)
{
	return x->st.srtt_ns && p->picks - x->renewed > (uint64_t)STALE_PICKS * p->n;
}

uint16_t paths_pick(struct paths *p, uint64_t now_ns)
{
	uint32_t a, b, pick;
	bool la, lb;

	if (!table(p))
		return (uint16_t)rng_below(p, p->n);   /* no memory: no preference */
	if (p->n == 1) {
		p->p[0].st.sent_chunks++;
		return 0;
	}
	p->picks++;
	a = rng_below(p, p->n);
	b = rng_below(p, p->n - 1);
	if (b >= a)
		b++;                   /* distinct from a, still uniform */
	la = recently_lost(p, &p->p[a], now_ns);
	lb = recently_lost(p, &p->p[b], now_ns);
	if (la && lb) {
		pick = scan_eligible(p, now_ns);
		if (pick == UINT32_MAX)
			pick = p->p[b].st.last_loss_ns < p->p[a].st.last_loss_ns ? b : a;
	} else if (la) {
		pick = b;
	} else if (lb) {
		pick = a;
	} else if (p->load_first && p->p[a].st.inflight != p->p[b].st.inflight) {
		pick = p->p[b].st.inflight < p->p[a].st.inflight ? b : a;
	} else {
		bool sa = stale(p, &p->p[a]), sb = stale(p, &p->p[b]);

		if (sa != sb && p->picks - p->last_probe >= (uint64_t)PROBE_GAP * p->n) {
			pick = sa ? a : b;             /* tried again */
			p->p[pick].renewed = p->picks;
			p->last_probe = p->picks;
		} else {
			/* Ties go to a, itself uniform: equal paths share load evenly. */
			pick = p->p[b].st.srtt_ns < p->p[a].st.srtt_ns ? b : a;
		}
	}
	p->p[pick].st.sent_chunks++;
	return (uint16_t)pick;
}

void paths_set_load_first(struct paths *p, bool on)
{
	p->load_first = on;
}

void paths_on_send(struct paths *p, uint16_t path)
{
	if (path < p->n && table(p) && p->p[path].st.inflight < UINT32_MAX)
		p->p[path].st.inflight++;
}

void paths_on_done(struct paths *p, uint16_t path)
{
	/* a released table knows of nothing in flight */
	if (path < p->n && p->p && p->p[path].st.inflight)
		p->p[path].st.inflight--;
}

uint64_t paths_load(const struct paths *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; p->p && i < p->n; i++)
		n += p->p[i].st.inflight;
	return n;
}

void paths_clear_load(struct paths *p)
{
	for (uint32_t i = 0; p->p && i < p->n; i++)
		p->p[i].st.inflight = 0;
}

void paths_on_rtt(struct paths *p, uint16_t path, uint64_t rtt_ns)
{
	struct paths_stat *s;

	/* A zero sample would read as "unsampled" and is no measurement. */
	if (path >= p->n || rtt_ns == 0 || !table(p))
		return;
	p->p[path].renewed = p->picks;
	s = &p->p[path].st;
	if (s->srtt_ns == 0)
		s->srtt_ns = rtt_ns;
	else if (rtt_ns >= s->srtt_ns)
		s->srtt_ns += (rtt_ns - s->srtt_ns) / 8;
	else
		s->srtt_ns -= (s->srtt_ns - rtt_ns) / 8;
}

void paths_on_loss(struct paths *p, uint16_t path, uint64_t now_ns)
{
	struct path *x;

	if (path >= p->n || !table(p))
		return;
	x = &p->p[path];
	if (x->lost && now_ns < x->st.last_loss_ns)
		p->all_lost = false;   /* this hold may now end sooner */
	x->st.losses++;
	x->st.last_loss_ns = now_ns;
	x->lost = true;
}

uint32_t paths_count(const struct paths *p)
{
	return p ? p->n : 0;
}

bool paths_live(const struct paths *p)
{
	return p && p->p;
}

int paths_stat(const struct paths *p, uint16_t path, struct paths_stat *out)
{
	if (!p || !out || path >= p->n)
		return -EINVAL;
	*out = p->p ? p->p[path].st : (struct paths_stat){ 0 };
	return 0;
}
