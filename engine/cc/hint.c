/* SPDX-License-Identifier: MIT */
/*
 * hint: a proportional-hint controller in the spirit of Unified Bus C-AQM
 * (switches stamp how congested they are, the receiver echoes it, the
 * sender changes its window in proportion). Once per RTT ("round") the
 * congestion degree D is the byte-weighted mean of what the round's ACKs
 * reported, and if D > 0 the window shrinks by s/2, s being the signal
 * below; unmarked ACKs grow it (slow start until the first cut, then one
 * chunk per RTT). Losses halve the window at most once per RTT; a timeout
 * drops it to the floor and slow-starts back to half the old window.
 *
 * What the fabric reports decides s:
 * - One ECN bit per ACK (UDP today): D is the fraction of marked bytes,
 *   and s is its EWMA alpha, gain 1/16, as in DCTCP. A bit per packet
 *   says only "above the threshold", so a round's fraction is a noisy
 *   estimate of the queue and the EWMA smooths it, at the price of a few
 *   RTTs of lag.
 * - An in-band degree (cc_ack.hint_ppm, from switches that report their
 *   queue occupancy, C-AQM's hint; tpchan echoes it in ACKs, and today
 *   only the simulator's switches report it, with inband = on): D
 *   is already a measure of the queue, s = D, and the window follows the
 *   queue within one RTT, without the EWMA's lag and without ECN's
 *   quantisation. A richer report would add more still: an increase
 *   request (C-AQM's "I" bit, or the spare bandwidth itself) would let the
 *   window jump toward its share instead of growing a chunk per RTT, and
 *   knowing which hop is congested would tell multipath which paths to
 *   leave. Both need fields cc_ack does not have yet.
 * ACKs that carry no hint fall back to their ECN bit, so a fabric that
 * reports only on some packets still works.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

#define HINT_G_SHIFT   4               /* alpha gain 1/16 (DCTCP's g) */
#define HINT_AI_CHUNKS 1u              /* additive increase per RTT */

struct hint {
	struct cc_bounds b;
	struct cc_rtt rtt;
	uint64_t cwnd;
	uint64_t ssthresh;             /* slow start while cwnd < ssthresh */
	uint64_t ai_acked;
	uint64_t alpha_ppm;            /* EWMA of the rounds' degrees */
	uint64_t degree_ppm;           /* the last closed round's D */
	uint64_t round_ns;             /* when the current round began */
	uint64_t round_bytes;          /* ACKed bytes in the round (weights) */
	uint64_t round_marked;         /* the same, each weighted by its degree */
	uint64_t last_loss_ns;
	uint64_t timeout_ns;           /* the last timeout (timeouts > 0) */
	uint64_t cuts, timeouts, rounds;
	bool round_open;
	bool round_hinted;             /* some ACK of the round carried hint_ppm */
	bool loss_seen;
};

static void cut_to(struct hint *h, uint64_t w)
{
	h->cwnd = cc_clamp(&h->b, w);
	h->ssthresh = h->cwnd;         /* leave slow start for good */
	h->ai_acked = 0;
	h->cuts++;
}

static void close_round(struct hint *h, uint64_t now)
{
	uint64_t d = h->round_bytes ? cc_ratio_ppm(h->round_marked, h->round_bytes) : 0;
	uint64_t s;

	h->rounds++;
	h->degree_ppm = d;
	if (d >= h->alpha_ppm)
		h->alpha_ppm += (d - h->alpha_ppm) >> HINT_G_SHIFT;
	else
		h->alpha_ppm -= (h->alpha_ppm - d) >> HINT_G_SHIFT;
	if (d) {
		s = h->round_hinted ? d : h->alpha_ppm;
		cut_to(h, h->cwnd - cc_scale(h->cwnd, s, 2 * CC_PPM));
	}
	h->round_ns = now;
	h->round_bytes = h->round_marked = 0;
	h->round_hinted = false;
}

static void grow(struct hint *h, uint64_t acked)
{
	if (h->cwnd < h->ssthresh) {
		h->cwnd = cc_min(cc_sat_add(h->cwnd, acked), h->ssthresh);
		return;
	}
	h->cwnd = cc_additive(h->cwnd, &h->ai_acked, acked,
			      cc_scale(h->b.chunk, HINT_AI_CHUNKS, 1), h->b.max_w);
}

static void hint_init(void *st, const struct cc_params *p)
{
	struct hint *h = st;

	*h = (struct hint){ 0 };
	cc_bounds_init(&h->b, p);
	cc_rtt_init(&h->rtt, p->base_rtt_ns);
	h->cwnd = cc_clamp(&h->b, p->init_window);
	h->ssthresh = h->b.max_w;
	/* DCTCP starts alpha at 1: until the EWMA has learnt the path, the
	 * first marks get a full halving rather than a token cut. */
	h->alpha_ppm = CC_PPM;
}

static void hint_on_ack(void *st, const struct cc_ack *a)
{
	struct hint *h = st;
	/* A batch with no new bytes counts with the least weight (tpchan
	 * calls on_ack only for batches that acknowledge something). */
	uint64_t w = a->acked_bytes ? a->acked_bytes : 1;
	uint64_t deg;

	if (a->rtt_ns)
		cc_rtt_sample(&h->rtt, a->rtt_ns);
	/* a mark on data sent before the last timeout (a spurious timeout's
	 * late ACKs; the RTT sample dates the data), which the timeout
	 * answered: not a round's, nor growth */
	if ((a->ecn || a->hint_ppm) && h->timeouts && a->rtt_ns && a->now_ns >= a->rtt_ns &&
	    a->now_ns - a->rtt_ns < h->timeout_ns)
		return;
	if (a->hint_ppm) {
		deg = cc_min(a->hint_ppm, CC_PPM);
		h->round_hinted = true;
	} else {
		deg = a->ecn ? CC_PPM : 0;
	}
	if (!h->round_open) {
		h->round_open = true;
		h->round_ns = a->now_ns;
	}
	h->round_bytes = cc_sat_add(h->round_bytes, w);
	h->round_marked = cc_sat_add(h->round_marked, cc_scale(w, deg, CC_PPM));
	if (!deg)
		grow(h, a->acked_bytes);
	/* A clock that went backwards keeps the round open: never two
	 * decisions on bad input. */
	if (a->now_ns >= h->round_ns && a->now_ns - h->round_ns >= cc_rtt_hold(&h->rtt))
		close_round(h, a->now_ns);
}

static void hint_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct hint *h = st;

	if (timeout) {
		uint64_t half = h->cwnd / 2;

		h->timeouts++;
		h->timeout_ns = now_ns;
		h->cuts++;
		h->ssthresh = cc_max(half, h->b.min_w);
		h->cwnd = h->b.min_w;
		h->ai_acked = 0;
		h->last_loss_ns = now_ns;
		h->loss_seen = true;
		/* The open round's marks are on data sent before the timeout,
		 * which answered them: closed later, they would cut the floor
		 * window and set ssthresh there, ending the slow start. The
		 * next ACK opens a new round. Marks that arrive after the
		 * timeout on data sent before it are left out too (on_ack);
		 * an ACK without an RTT sample cannot be dated and counts. */
		h->round_open = false;
		h->round_bytes = h->round_marked = 0;
		h->round_hinted = false;
		return;
	}
	/* Losses from one window are one congestion event. The open round
	 * of marks stays, so one event can cut twice (the halving, then the
	 * round): ending the round here as a timeout does (DCTCP's one
	 * reduction a window) was tried and not kept: a run of docs/results
	 * experiment 4 with it (2026-11-29, not recorded there) gave hint
	 * less fairness (jain_steady 0.980 -> 0.977) and more drops (127 ->
	 * 155 packets). */
	if (cc_within(h->loss_seen, h->last_loss_ns, now_ns, cc_rtt_hold(&h->rtt)))
		return;
	cut_to(h, h->cwnd / 2);
	h->last_loss_ns = now_ns;
	h->loss_seen = true;
}

static uint64_t hint_window(const void *st)
{
	const struct hint *h = st;

	return h->cwnd;
}

static int hint_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct hint *h = st;
	const char *const k[] = { "cwnd", "ssthresh", "alpha_ppm", "degree_ppm", "srtt_ns",
				  "min_rtt_ns", "rounds", "cuts", "timeouts" };
	const uint64_t v[] = { h->cwnd, h->ssthresh, h->alpha_ppm, h->degree_ppm,
			       h->rtt.srtt_ns, h->rtt.min_ns, h->rounds, h->cuts, h->timeouts };

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_hint_ops = {
	.name       = "hint",
	.state_size = sizeof(struct hint),
	.init       = hint_init,
	.on_ack     = hint_on_ack,
	.on_loss    = hint_on_loss,
	.window     = hint_window,
	.describe   = hint_describe,
};
