/* SPDX-License-Identifier: MIT */
/*
 * rtt: the smoothed round-trip time of a channel and the retransmission
 * timeout derived from it, after RFC 6298: the first sample sets srtt = R and
 * rttvar = R/2; later ones move srtt by 1/8 and rttvar by 1/4 of the error;
 * rto = srtt + max(4 rttvar, 1 ns), kept between a floor and a ceiling and
 * doubled for every consecutive timeout. The floor is rto_min until the
 * owner reports timeouts that were spurious: a sender whose ACKs are late
 * by more than rto_min (a descheduled engine thread on a shared core) would
 * otherwise resend what arrived, again and again. Integer nanoseconds, no
 * clock.
 */
#include "config.h"

#include <stdint.h>

#include "engine/rtt.h"

static uint64_t clamp(const struct rtt *r, uint64_t v)
{
	uint64_t lo = r->floor_ns > r->rto_min_ns ? r->floor_ns : r->rto_min_ns;

	if (lo > r->rto_max_ns)
		lo = r->rto_max_ns;
	if (v < lo)
		return lo;
	if (v > r->rto_max_ns)
		return r->rto_max_ns;
	return v;
}

/* srtt + 4 rttvar without overflow; the variance term is at least one unit
 * (RFC 6298's clock granularity G) so that a perfectly steady RTT still gets
 * a timeout above it. */
static uint64_t base_rto(const struct rtt *r)
{
	uint64_t var = r->rttvar_ns > UINT64_MAX / 4 ? UINT64_MAX : r->rttvar_ns * 4;

	if (var == 0)
		var = 1;
	return r->srtt_ns > UINT64_MAX - var ? UINT64_MAX : r->srtt_ns + var;
}

void rtt_init(struct rtt *r, uint64_t rto_init_ns, uint64_t rto_min_ns, uint64_t rto_max_ns)
{
	*r = (struct rtt){ 0 };
	r->rto_min_ns = rto_min_ns;
	/* an inverted range collapses to the floor rather than ignoring it */
	r->rto_max_ns = rto_max_ns < rto_min_ns ? rto_min_ns : rto_max_ns;
	r->floor_ns = rto_min_ns;
	r->rto_ns = clamp(r, rto_init_ns);
}

void rtt_sample(struct rtt *r, uint64_t rtt_ns)
{
	if (rtt_ns == 0)
		rtt_ns = 1;                    /* a sample below the clock's resolution */
	if (r->min_rtt_ns == 0 || rtt_ns < r->min_rtt_ns)
		r->min_rtt_ns = rtt_ns;
	if (r->srtt_ns == 0) {
		r->srtt_ns = rtt_ns;
		r->rttvar_ns = rtt_ns / 2;
	} else {
		uint64_t err = rtt_ns > r->srtt_ns ? rtt_ns - r->srtt_ns : r->srtt_ns - rtt_ns;

		/* rttvar = 3/4 rttvar + 1/4 err; srtt = 7/8 srtt + 1/8 R, each
		 * written so that no intermediate can overflow */
		r->rttvar_ns = r->rttvar_ns - r->rttvar_ns / 4 + err / 4;
		if (rtt_ns >= r->srtt_ns)
			r->srtt_ns += (rtt_ns - r->srtt_ns) / 8;
		else
			r->srtt_ns -= (r->srtt_ns - rtt_ns) / 8;
	}
	r->backoff = 0;
	r->rto_ns = clamp(r, base_rto(r));
}

void rtt_on_timeout(struct rtt *r)
{
	if (r->backoff < UINT32_MAX)
		r->backoff++;
	r->rto_ns = r->rto_ns > r->rto_max_ns / 2 ? r->rto_max_ns : clamp(r, r->rto_ns * 2);
}

uint64_t rtt_rto(const struct rtt *r)
{
	return r->rto_ns;
}

void rtt_timeout_spurious(struct rtt *r, uint64_t now_ns)
{
	uint64_t cap = r->rto_min_ns > r->rto_max_ns / RTT_FLOOR_MAX_MULT ? r->rto_max_ns
		       : r->rto_min_ns * RTT_FLOOR_MAX_MULT;
	uint64_t f = r->floor_ns > r->rto_min_ns ? r->floor_ns : r->rto_min_ns;

	r->floor_ns = f > cap / 2 ? cap : f * 2;
	r->floor_at_ns = now_ns;
	if (r->rto_ns < r->floor_ns)
		r->rto_ns = clamp(r, r->rto_ns);
}

void rtt_timeout_right(struct rtt *r, uint64_t now_ns)
{
	r->floor_ns /= 2;
	if (r->floor_ns < r->rto_min_ns)
		r->floor_ns = r->rto_min_ns;
	r->floor_at_ns = now_ns;
}

void rtt_floor_tick(struct rtt *r, uint64_t now_ns)
{
	if (r->floor_ns > r->rto_min_ns && now_ns >= r->floor_at_ns &&
	    now_ns - r->floor_at_ns >= RTT_FLOOR_HOLD_NS)
		rtt_timeout_right(r, now_ns);
}
