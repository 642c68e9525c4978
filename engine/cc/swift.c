/* SPDX-License-Identifier: MIT */
/*
 * swift: delay-based congestion control after Swift (Kumar et al., SIGCOMM
 * 2020). Each RTT sample is compared with a target delay: below it the
 * window grows by one chunk per RTT; above it the window shrinks in
 * proportion to how far the delay overshoots, (1 - beta * (delay - target)
 * / delay), never by more than max_mdf and at most once per RTT. The
 * target is the lowest RTT seen plus a base allowance plus a flow-scaling
 * term that grows as the window shrinks, so that many small flows sharing
 * a bottleneck tolerate a little more queue instead of all cutting. Losses
 * and timeouts cut by max_mdf (once per RTT); repeated timeouts drop the
 * window to the floor. ECN marks are ignored: delay is the whole signal.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

/*
 * Additive increase per RTT, in chunks. The paper's unit is a packet; ours
 * is the chunk because that is the unit the transport decides in (control
 * coalescing), and one MTU per RTT would take thousands of RTTs to fill a
 * 400 Gb/s pipe.
 */
#define SWIFT_AI_CHUNKS    1u
#define SWIFT_BETA_PPM     800000u     /* beta: MD gain on the relative excess */
#define SWIFT_MAX_MDF_PPM  500000u     /* at most halve per decision */
/* Consecutive timeouts (without an ACK between them) after which the
 * window drops to the floor instead of the max_mdf cut. */
#define SWIFT_RETX_RESET   5u

/*
 * Flow scaling: target += fs_range * (1/sqrt(cwnd) - 1/sqrt(fs_max)) /
 * (1/sqrt(fs_min) - 1/sqrt(fs_max)), bounded to [0, fs_range]. The paper's
 * curve spans 0.1 to 100 packets because Swift paces below one packet, so
 * the fair share of a many-flow bottleneck sits inside it. Our window never
 * goes below min_window (a chunk, 8 packets at the defaults), and that
 * floor is where many flows sharing a link end up: with 8 flows on a 100G
 * link of 8 us RTT the fair window (12 KB) is below the floor. The curve
 * therefore runs from min_window (the whole fs_range) to SWIFT_FS_SPAN
 * times min_window (nothing): steep where the windows of competing flows
 * are, so that a flow holding a few chunks more than its neighbours sees a
 * target several microseconds lower than theirs and yields. This is what
 * undoes the late-comer's advantage: a flow that starts into a standing
 * queue learns a lowest RTT inflated by that queue, and only the window
 * term can pull its target back down. fs_range is SWIFT_FS_RANGE_MULT
 * times the base allowance. Tuning, measured in the simulator (docs/results
 * e4): a span of 4 gave Jain 0.95-0.98 with 8 staggered flows; the old
 * 100-packet end (the curve flat near the floor) 0.33-0.69; a span of 2
 * 0.52-0.99 (bimodal); 8, 0.49-0.79; a range of 4x or 8x raised queueing
 * and drops without helping.
 */
#define SWIFT_FS_SPAN       4u
#define SWIFT_FS_RANGE_MULT 2u
/* 1/sqrt(w) is computed as SWIFT_FS_K / isqrt(w): below 2^32 for any
 * w >= 1, as cc_scale() needs, with ample resolution for windows up to
 * terabytes. */
#define SWIFT_FS_K          (1ull << 31)

/*
 * Hop scaling (the paper's per-hop term in the target) is left out: an
 * ACK here does not carry the path's hop count. Where the fabric reports
 * it, target += hops * per_hop_ns is the place to add it (swift_target()).
 * Likewise the paper separates fabric delay from endpoint delay with NIC
 * timestamps; we have only the whole RTT, and the base allowance
 * (delay_slack_ns) absorbs the endpoint's share.
 *
 * The paper's base delay is configured for the fabric; here it is
 * cc_params.base_rtt_ns when given, else the lowest RTT the flow has seen.
 * A windowed minimum (one that expires, so that incumbents re-learn the
 * standing queue a late-comer sees) was tried and rejected: every flow then
 * takes the standing queue as its base, aims above it, and the queue
 * ratchets up until the buffer overflows (5-11 k drops in docs/results e4
 * instead of about 100, and a worse index with 16 flows).
 */

struct swift {
	struct cc_bounds b;
	struct cc_rtt rtt;
	uint64_t cwnd;
	uint64_t ai_acked;             /* acked bytes toward the next additive step */
	uint64_t base_ns;              /* base allowance above the lowest RTT */
	uint64_t fs_range_ns;
	uint64_t fs_min_w, fs_max_w;   /* flow-scaling curve ends, bytes */
	uint64_t fs_u_min, fs_u_max;   /* SWIFT_FS_K / isqrt() of the ends */
	uint64_t delay_ns;             /* last sample, capped; 0 before any */
	uint64_t last_cut_ns;
	uint64_t cuts, timeouts;
	uint32_t retx_cnt;             /* timeouts since the last ACK */
	bool cut_seen;
};

static uint64_t fs_u(uint64_t w)
{
	uint64_t r = cc_isqrt(w);

	return SWIFT_FS_K / (r ? r : 1);
}

/* The flow-scaling term for the current window. */
static uint64_t flow_scaling(const struct swift *s)
{
	if (s->cwnd <= s->fs_min_w)
		return s->fs_range_ns;
	if (s->cwnd >= s->fs_max_w || s->fs_u_min <= s->fs_u_max)
		return 0;
	return cc_scale(s->fs_range_ns, cc_sat_sub(fs_u(s->cwnd), s->fs_u_max),
			s->fs_u_min - s->fs_u_max);
}

static uint64_t swift_target(const struct swift *s)
{
	return cc_sat_add(cc_sat_add(s->rtt.min_ns, s->base_ns), flow_scaling(s));
}

static bool can_decrease(const struct swift *s, uint64_t now)
{
	return !cc_within(s->cut_seen, s->last_cut_ns, now, cc_rtt_hold(&s->rtt));
}

/* Shrink by `ppm` of the window (at most max_mdf) and start the RTT hold. */
static void cut(struct swift *s, uint64_t ppm, uint64_t now)
{
	ppm = cc_min(ppm, SWIFT_MAX_MDF_PPM);
	s->cwnd = cc_clamp(&s->b, cc_scale(s->cwnd, CC_PPM - ppm, CC_PPM));
	s->ai_acked = 0;
	s->last_cut_ns = now;
	s->cut_seen = true;
	s->cuts++;
}

static void swift_init(void *st, const struct cc_params *p)
{
	struct swift *s = st;
	*s = (struct swift){ 0 };
	cc_bounds_init(&s->b, p);
	cc_rtt_init(&s->rtt, p->base_rtt_ns);
	/* The paper allows windows below one packet and paces them; this
	 * transport cannot send less than a chunk, so the window is clamped
	 * at min_window (at least a chunk) instead: under a very wide incast
	 * the queue is bounded by N chunks rather than paced away. */
	s->cwnd = cc_clamp(&s->b, p->init_window);
	s->base_ns = cc_min(p->delay_slack_ns ? p->delay_slack_ns : CC_DEFAULT_SLACK_NS,
			    CC_RTT_MAX_NS);
	s->fs_range_ns = s->base_ns * SWIFT_FS_RANGE_MULT;
	s->fs_min_w = s->b.min_w;
	s->fs_max_w = cc_scale(s->b.min_w, SWIFT_FS_SPAN, 1);
	s->fs_u_min = fs_u(s->fs_min_w);
	s->fs_u_max = fs_u(s->fs_max_w);
}

static void swift_on_ack(void *st, const struct cc_ack *a)
{
	struct swift *s = st;
	uint64_t target;

	s->retx_cnt = 0;
	if (a->rtt_ns)
		s->delay_ns = cc_rtt_sample(&s->rtt, a->rtt_ns);
	target = swift_target(s);          /* after the sample: it may lower min RTT */
	/* An ACK batch without a sample is judged by the last sample; before
	 * any sample there is nothing to judge, and the window grows. */
	if (s->delay_ns > target) {
		if (can_decrease(s, a->now_ns))
			cut(s, cc_scale(cc_ratio_ppm(s->delay_ns - target, s->delay_ns),
					SWIFT_BETA_PPM, CC_PPM), a->now_ns);
		return;                /* never grow above the target */
	}
	s->cwnd = cc_additive(s->cwnd, &s->ai_acked, a->acked_bytes,
			      cc_scale(s->b.chunk, SWIFT_AI_CHUNKS, 1), s->b.max_w);
}

static void swift_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct swift *s = st;

	if (timeout) {
		s->timeouts++;
		if (s->retx_cnt < UINT32_MAX)
			s->retx_cnt++;
		if (s->retx_cnt >= SWIFT_RETX_RESET) {
			s->cwnd = s->b.min_w;
			s->ai_acked = 0;
			s->last_cut_ns = now_ns;
			s->cut_seen = true;
			s->cuts++;
			return;
		}
	} else {
		s->retx_cnt = 0;
	}
	if (can_decrease(s, now_ns))
		cut(s, SWIFT_MAX_MDF_PPM, now_ns);
}

static uint64_t swift_window(const void *st)
{
	const struct swift *s = st;

	return s->cwnd;
}

static int swift_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct swift *s = st;
	const char *const k[] = { "cwnd", "target_ns", "delay_ns", "min_rtt_ns", "srtt_ns",
				  "cuts", "timeouts" };
	const uint64_t v[] = { s->cwnd, swift_target(s), s->delay_ns, s->rtt.min_ns,
			       s->rtt.srtt_ns, s->cuts, s->timeouts };

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_swift_ops = {
	.name       = "swift",
	.state_size = sizeof(struct swift),
	.init       = swift_init,
	.on_ack     = swift_on_ack,
	.on_loss    = swift_on_loss,
	.window     = swift_window,
	.describe   = swift_describe,
};
