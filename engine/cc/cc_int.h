/* SPDX-License-Identifier: MIT */
/*
 * cc_int: arithmetic and bookkeeping shared by the congestion controllers,
 * not part of the ops interface. Everything saturates instead of wrapping
 * and no product that could exceed 64 bits is ever formed, so a module stays
 * correct for any window or time the caller hands it; no 128-bit integers,
 * so the engine builds the same on 32-bit targets.
 */
#ifndef UCCL_ENGINE_CC_CC_INT_H
#define UCCL_ENGINE_CC_CC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"

#define CC_PPM       1000000u          /* fractions are parts per million */
#define CC_NS_PER_S  1000000000u

/*
 * RTT samples and base RTTs are capped at 2^32 - 1 ns (4.29 s). No
 * datacenter path has such an RTT; the cap keeps every conversion between
 * a rate and a window (rate x rtt / 1e9, window x 1e9 / rtt) within
 * cc_scale()'s 32-bit factors, so bogus samples cannot overflow anything.
 */
#define CC_RTT_MAX_NS 0xffffffffull

/* Default allowance for the delay a software transport adds to every RTT
 * sample without any network congestion (engine loop turns, ACK
 * coalescing, interrupt moderation); window.c's reasoning for it.
 * cc_params.delay_slack_ns overrides it. */
#define CC_DEFAULT_SLACK_NS 50000u

static inline uint64_t cc_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t cc_sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static inline uint64_t cc_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t cc_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* floor(v * num / den), saturating at UINT64_MAX. num and den must be below
 * 2^32 and den nonzero: then (v % den) * num cannot overflow, and the only
 * product that can is tested before it is formed. */
static inline uint64_t cc_scale(uint64_t v, uint64_t num, uint64_t den)
{
	uint64_t q = v / den, r = v % den;

	if (num && q > UINT64_MAX / num)
		return UINT64_MAX;
	return cc_sat_add(q * num, r * num / den);
}

/* min(a, b) / b in parts per million, for b > 0. Large operands are halved
 * together until b fits 32 bits: the ratio keeps ~31 significant bits,
 * far more than a ppm needs. */
static inline uint64_t cc_ratio_ppm(uint64_t a, uint64_t b)
{
	if (a > b)
		a = b;
	while (b > UINT32_MAX) {
		a >>= 1;
		b >>= 1;
	}
	return cc_scale(a, CC_PPM, b);
}

/* floor(sqrt(v)), bit by bit: exact, no floating point. */
static inline uint64_t cc_isqrt(uint64_t v)
{
	uint64_t r = 0, bit = 1ull << 62;

	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* Time from `last` to `now`, or 0 if the clock appears to have run
 * backwards: bad input must never look like a long quiet period. */
static inline uint64_t cc_elapsed(uint64_t last, uint64_t now)
{
	return now > last ? now - last : 0;
}

/* True if `last` is less than `hold` before now. A clock that appears to
 * run backwards counts as "within": never act twice on bad input. */
static inline bool cc_within(bool seen, uint64_t last, uint64_t now, uint64_t hold)
{
	if (!seen)
		return false;
	return now < last || now - last < hold;
}

/* The window limits every module shares, resolved as window.c does it: the
 * window must always admit one whole chunk, or a sender that waits for a
 * chunk to fit would stall for good. */
struct cc_bounds {
	uint64_t chunk, min_w, max_w;
};

static inline void cc_bounds_init(struct cc_bounds *b, const struct cc_params *p)
{
	b->chunk = p->chunk ? p->chunk : p->mss ? p->mss : 1;
	b->min_w = p->min_window > b->chunk ? p->min_window : b->chunk;
	b->max_w = p->max_window > b->min_w ? p->max_window : b->min_w;
}

static inline uint64_t cc_clamp(const struct cc_bounds *b, uint64_t v)
{
	if (v < b->min_w)
		return b->min_w;
	if (v > b->max_w)
		return b->max_w;
	return v;
}

/* Additive increase of `ai` bytes per window's worth of acknowledged
 * bytes, the remainder carried in *carry so that small ACK batches still
 * add up; never past max_w. cwnd and ai must be nonzero. */
static inline uint64_t cc_additive(uint64_t cwnd, uint64_t *carry, uint64_t acked,
				   uint64_t ai, uint64_t max_w)
{
	uint64_t steps;

	*carry = cc_sat_add(*carry, acked);
	if (*carry < cwnd)
		return cwnd;
	steps = *carry / cwnd;
	*carry %= cwnd;
	if (cwnd >= max_w || steps > (max_w - cwnd) / ai)
		return max_w;
	return cwnd + steps * ai;
}

/* Lowest and smoothed RTT. min_ns starts from the configured base RTT (0:
 * learn it) and follows lower samples; srtt is 0 until the first sample. */
struct cc_rtt {
	uint64_t min_ns, srtt_ns;
};

static inline void cc_rtt_init(struct cc_rtt *r, uint64_t base_rtt_ns)
{
	r->min_ns = cc_min(base_rtt_ns, CC_RTT_MAX_NS);
	r->srtt_ns = 0;
}

/* Feed a nonzero sample; returns it as capped. EWMA gain 1/8 (RFC 6298). */
static inline uint64_t cc_rtt_sample(struct cc_rtt *r, uint64_t rtt)
{
	rtt = cc_min(rtt, CC_RTT_MAX_NS);
	if (r->min_ns == 0 || rtt < r->min_ns)
		r->min_ns = rtt;
	if (r->srtt_ns == 0)
		r->srtt_ns = rtt;
	else if (rtt >= r->srtt_ns)
		r->srtt_ns += (rtt - r->srtt_ns) / 8;
	else
		r->srtt_ns -= (r->srtt_ns - rtt) / 8;
	return rtt;
}

/* "Once per RTT": the smoothed RTT, or before any sample the base RTT; with
 * neither there is no notion of "the same RTT" and every event counts. */
static inline uint64_t cc_rtt_hold(const struct cc_rtt *r)
{
	return r->srtt_ns ? r->srtt_ns : r->min_ns;
}

/*
 * For the rate-based modules (dcqcn, timely), which hand their rate out as
 * a window: the RTT that turns the rate into that window, the smoothed RTT
 * (cc_rtt_hold()) but never more than the lowest RTT plus the delay
 * allowance slack_ns. With the plain smoothed RTT a queue feeds itself: it
 * lengthens the RTT, the longer RTT widens every sender's window at the
 * same rate, and the wider windows lengthen the queue, so a cut in rate
 * barely shrinks what is in flight and, after a timeout, the floor rate
 * times an incast-inflated RTT was a window of megabytes. Capped, the
 * window follows the rate, and the queue a set of senders can build is
 * bounded by their rates. The lowest RTT alone is not used either: one
 * outlier sample far below the path's real RTT (a corrupt or forged echo)
 * would shrink the window by that ratio for good (with rate x min_rtt, a
 * 1 ns sample pinned timely's window at the floor, where additive increase
 * of delta x 1 ns could never lift it). Nonzero once r has a sample or a
 * base RTT; at most CC_RTT_MAX_NS.
 */
static inline uint64_t cc_window_rtt(const struct cc_rtt *r, uint64_t slack_ns)
{
	return cc_min(cc_rtt_hold(r), cc_sat_add(r->min_ns, slack_ns));
}

/* The rates (bytes per second) whose windows over rtt_ns (a nonzero
 * cc_window_rtt()) are b's min_w and max_w: outside them the window is
 * clamped anyway, and a rate that drifted past them would take that much
 * longer to come back. The lower one is at least 1: a rate of 0 means no
 * RTT yet. */
static inline uint64_t cc_rate_min(const struct cc_bounds *b, uint64_t rtt_ns)
{
	return cc_max(cc_scale(b->min_w, CC_NS_PER_S, rtt_ns), 1);
}

static inline uint64_t cc_rate_max(const struct cc_bounds *b, uint64_t rtt_ns)
{
	return cc_scale(b->max_w, CC_NS_PER_S, rtt_ns);
}

/* describe(): copy up to n of the count (name, value) pairs. */
static inline int cc_describe_pairs(const char **names, uint64_t *values, int n,
				    const char *const *k, const uint64_t *v, int count)
{
	int i;

	if (!names || !values)
		return 0;
	for (i = 0; i < n && i < count; i++) {
		names[i] = k[i];
		values[i] = v[i];
	}
	return i;
}

#endif
