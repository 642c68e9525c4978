/* SPDX-License-Identifier: MIT */
/*
 * window: the default congestion controller, a byte window. It slow-starts
 * until the first back-off, then grows by about one chunk per window of
 * acknowledged bytes. It shrinks on four signals: an RTT well above the
 * lowest RTT seen, or an ECN mark (x0.8); a SACK-detected loss (x0.5, or
 * x0.9 while the smoothed RTT shows no queue: then the drop was most likely
 * random, not congestion); each at most once per smoothed RTT; a
 * retransmission timeout drops it to the floor and slow-starts again up to
 * half the old window. Integer arithmetic
 * only, and no intermediate product can overflow, whatever the window size.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

/*
 * Delay signal: back off when rtt > min_rtt * WND_DELAY_MULT +
 * CC_DEFAULT_SLACK_NS. The factor 2 lets about one bandwidth-delay product of
 * queue stand at the bottleneck before reacting, and tolerates the spread of
 * path lengths across ECMP paths (min_rtt is the fastest path's). The 50 us
 * slack absorbs the delay a software transport adds to every sample whatever
 * the network does (engine loop turns, ACK coalescing, interrupt
 * moderation): at datacenter base RTTs of a few microseconds a pure ratio
 * would read that noise as congestion.
 */
#define WND_DELAY_MULT     2u

/* Decrease factors as num/den. */
#define WND_DELAY_NUM 4u               /* x0.8 on delay or ECN */
#define WND_DELAY_DEN 5u
#define WND_LOSS_NUM  1u               /* x0.5 on a SACK-detected loss */
#define WND_LOSS_DEN  2u
#define WND_RLOSS_NUM 9u               /* x0.9 on one while the RTT sits at its floor */
#define WND_RLOSS_DEN 10u

struct wnd {
	uint64_t cwnd;
	uint64_t ssthresh;             /* slow start while cwnd < ssthresh */
	uint64_t min_w, max_w;
	uint64_t chunk;
	uint64_t ai_acked;             /* acked bytes toward the next additive step */
	uint64_t min_rtt_ns;           /* base_rtt_ns or lowest sample; 0 = unknown */
	uint64_t slack_ns;             /* CC_DEFAULT_SLACK_NS or the caller's */
	uint64_t srtt_ns;              /* 0 until the first sample */
	uint64_t last_cut_ns;          /* last decrease of any kind, timeout included */
	uint64_t last_loss_cut_ns;     /* last decrease caused by a loss or timeout */
	uint64_t cuts;                 /* multiplicative decreases */
	uint64_t timeouts;
	bool cut_seen, loss_cut_seen;
	bool cut_was_timeout;
};

static uint64_t clamp(const struct wnd *w, uint64_t v)
{
	if (v < w->min_w)
		return w->min_w;
	if (v > w->max_w)
		return w->max_w;
	return v;
}

static uint64_t delay_threshold(uint64_t min_rtt_ns, uint64_t slack_ns)
{
	if (slack_ns > UINT64_MAX / 2 || min_rtt_ns > (UINT64_MAX - slack_ns) / WND_DELAY_MULT)
		return UINT64_MAX;
	return min_rtt_ns * WND_DELAY_MULT + slack_ns;
}

/* Before the first RTT sample, the configured base RTT stands in for srtt;
 * with neither, there is no notion of "the same RTT" and every event counts. */
static uint64_t hold_ns(const struct wnd *w)
{
	return w->srtt_ns ? w->srtt_ns : w->min_rtt_ns;
}

/* True if `last` is less than one smoothed RTT before now. A clock that
 * appears to run backwards counts as "within": never cut twice on bad input. */
static bool within_rtt(const struct wnd *w, bool seen, uint64_t last, uint64_t now)
{
	if (!seen)
		return false;
	return now < last || now - last < hold_ns(w);
}

static void rtt_sample(struct wnd *w, uint64_t rtt)
{
	if (w->min_rtt_ns == 0 || rtt < w->min_rtt_ns)
		w->min_rtt_ns = rtt;
	if (w->srtt_ns == 0)
		w->srtt_ns = rtt;
	else if (rtt >= w->srtt_ns)
		w->srtt_ns += (rtt - w->srtt_ns) / 8;
	else
		w->srtt_ns -= (w->srtt_ns - rtt) / 8;
}

static void cut(struct wnd *w, uint64_t num, uint64_t den, uint64_t now)
{
	w->cwnd = clamp(w, cc_scale(w->cwnd, num, den));
	w->ssthresh = w->cwnd;         /* leave slow start for good */
	w->ai_acked = 0;
	w->last_cut_ns = now;
	w->cut_seen = true;
	w->cut_was_timeout = false;
	w->cuts++;
}

static void grow(struct wnd *w, uint64_t acked)
{
	if (w->cwnd < w->ssthresh) {
		w->cwnd = cc_sat_add(w->cwnd, acked);
		if (w->cwnd > w->ssthresh)
			w->cwnd = w->ssthresh;
		return;
	}
	/* Additive increase: one chunk per cwnd bytes acknowledged, with the
	 * remainder carried so that small ACK batches still add up. */
	w->ai_acked = cc_sat_add(w->ai_acked, acked);
	if (w->ai_acked < w->cwnd)
		return;
	uint64_t steps = w->ai_acked / w->cwnd;
	w->ai_acked %= w->cwnd;
	if (w->cwnd >= w->max_w || steps > (w->max_w - w->cwnd) / w->chunk)
		w->cwnd = w->max_w;
	else
		w->cwnd += steps * w->chunk;
}

static void wnd_init(void *st, const struct cc_params *p)
{
	struct wnd *w = st;

	*w = (struct wnd){ 0 };
	/* The window must always admit one whole chunk, or a sender that waits
	 * for a chunk to fit would stall for good. */
	w->chunk = p->chunk ? p->chunk : p->mss ? p->mss : 1;
	w->min_w = p->min_window > w->chunk ? p->min_window : w->chunk;
	w->max_w = p->max_window > w->min_w ? p->max_window : w->min_w;
	w->cwnd = clamp(w, p->init_window);
	w->ssthresh = w->max_w;
	w->min_rtt_ns = p->base_rtt_ns;
	w->slack_ns = p->delay_slack_ns ? p->delay_slack_ns : CC_DEFAULT_SLACK_NS;
}

static void wnd_on_ack(void *st, const struct cc_ack *a)
{
	struct wnd *w = st;
	bool congested = a->ecn;

	if (a->rtt_ns) {
		rtt_sample(w, a->rtt_ns);
		if (a->rtt_ns > delay_threshold(w->min_rtt_ns, w->slack_ns))
			congested = true;
	}
	if (congested) {
		if (!within_rtt(w, w->cut_seen, w->last_cut_ns, a->now_ns))
			cut(w, WND_DELAY_NUM, WND_DELAY_DEN, a->now_ns);
		return;                /* never grow on a congestion signal */
	}
	/* For one RTT after a decrease, ACKs report on data sent under the
	 * old window: no growth until the cut has had its effect. A timeout
	 * is different: what comes back is the retransmission, sent at the
	 * floor, and slow start should begin at once. */
	if (!w->cut_was_timeout && within_rtt(w, w->cut_seen, w->last_cut_ns, a->now_ns))
		return;
	grow(w, a->acked_bytes);
}

static void wnd_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct wnd *w = st;

	if (timeout) {
		uint64_t half = w->cwnd / 2;

		w->ssthresh = half > w->min_w ? half : w->min_w;
		w->cwnd = w->min_w;
		w->ai_acked = 0;
		w->last_cut_ns = now_ns;
		w->last_loss_cut_ns = now_ns;
		w->cut_seen = w->loss_cut_seen = true;
		w->cut_was_timeout = true;
		w->timeouts++;
		return;
	}
	/* Losses from one window are one congestion event. Checked against
	 * loss cuts only: a delay cut earlier in the RTT does not excuse a
	 * loss, the stronger signal. */
	if (within_rtt(w, w->loss_cut_seen, w->last_loss_cut_ns, now_ns))
		return;
	/* A drop while the RTT shows no queue (at most the delay threshold)
	 * is most likely random (corruption, a flapping link), not a full
	 * buffer: halving for it would give away goodput a lossy fabric can
	 * keep. A full queue inflates the RTT first, and gets the halving. */
	if (w->srtt_ns && w->min_rtt_ns &&
	    w->srtt_ns <= delay_threshold(w->min_rtt_ns, w->slack_ns))
		cut(w, WND_RLOSS_NUM, WND_RLOSS_DEN, now_ns);
	else
		cut(w, WND_LOSS_NUM, WND_LOSS_DEN, now_ns);
	w->last_loss_cut_ns = now_ns;
	w->loss_cut_seen = true;
}

static uint64_t wnd_window(const void *st)
{
	const struct wnd *w = st;

	return w->cwnd;
}

static int wnd_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct wnd *w = st;
	const char *const k[] = { "cwnd", "ssthresh", "min_rtt_ns", "srtt_ns", "cuts", "timeouts" };
	const uint64_t v[] = { w->cwnd, w->ssthresh, w->min_rtt_ns, w->srtt_ns, w->cuts, w->timeouts };
	int i;

	if (!names || !values)
		return 0;
	for (i = 0; i < n && i < (int)(sizeof(k) / sizeof(k[0])); i++) {
		names[i] = k[i];
		values[i] = v[i];
	}
	return i;
}

const struct cc_ops cc_window_ops = {
	.name       = "window",
	.state_size = sizeof(struct wnd),
	.init       = wnd_init,
	.on_ack     = wnd_on_ack,
	.on_loss    = wnd_on_loss,
	.window     = wnd_window,
	.describe   = wnd_describe,
};
