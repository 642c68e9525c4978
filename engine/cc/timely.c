/* SPDX-License-Identifier: MIT */
/*
 * timely: RTT-gradient congestion control after TIMELY (Mittal et al.,
 * SIGCOMM 2015). Each RTT sample updates an EWMA of the difference between
 * successive samples; divided by the lowest RTT it is the normalised
 * gradient. Below T_low the rate grows by delta; above T_high it shrinks by
 * beta * (1 - T_high / rtt); in between a rising RTT (positive gradient)
 * shrinks the rate by beta * gradient and a flat or falling one grows it by
 * delta, or by N * delta (hyper-active increase) after N falling samples in
 * a row. The paper updates on each completion of a 16-64 KB segment; an
 * ACK of a chunk (32 KB by default) is the same event here. TIMELY is
 * rate-based; the ops table is window-based, so the rate
 * is handed out as rate x smoothed RTT, the RTT counted only up to the
 * lowest RTT plus the delay allowance (conv_rtt()). The cap keeps queueing
 * delay, the very signal TIMELY reacts to, from inflating the window (a
 * positive feedback); the window is then conservative while a queue
 * stands, which is when it should be. The lowest RTT alone is not used:
 * one outlier sample would shrink the window by its ratio for good.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

/* The paper's parameters: EWMA gain alpha 0.875 on the newest difference,
 * beta 0.8, delta 10 Mb/s, HAI after 5 falling samples with N = 5. */
#define TIMELY_EWMA_NEW    7           /* alpha = 7/8 */
#define TIMELY_EWMA_DEN    8
#define TIMELY_BETA_PPM    800000u
#define TIMELY_DELTA_BPS   1250000u    /* 10 Mb/s in bytes per second */
#define TIMELY_HAI_AFTER   5u
#define TIMELY_HAI_N       5u
/*
 * The paper's gradient cut is unbounded (beta * gradient may exceed 1);
 * bounded here at one half per sample so that one outlier cannot drive the
 * rate to the floor. Losses are not in the paper (it assumes a lossless
 * fabric): a SACK-detected loss halves the rate at most once per RTT and a
 * timeout drops it to the floor.
 */
#define TIMELY_MAX_CUT_PPM 500000u
/*
 * Thresholds relative to the lowest RTT: T_low = min_rtt + slack and
 * T_high = min_rtt + TIMELY_THIGH_MULT * slack. With the default 50 us
 * slack and a small base RTT these are the paper's 50 us and 500 us; the
 * slack is the delay noise a software transport adds to every sample, the
 * same role T_low plays for NIC offload bursts in the paper.
 */
#define TIMELY_THIGH_MULT  10u

struct timely {
	struct cc_bounds b;
	struct cc_rtt rtt;
	uint64_t rate;                 /* bytes per second; 0 until an RTT is known */
	uint64_t pre_win;              /* the window before any RTT is known */
	uint64_t slack_ns;
	uint64_t prev_rtt_ns;          /* 0 until the first sample */
	int64_t rtt_diff_ns;           /* EWMA of successive differences */
	int64_t gradient_ppm;          /* of the last sample in the gradient band */
	uint64_t last_loss_ns;
	uint64_t cuts, timeouts;
	uint32_t neg_count;            /* falling gradients in a row */
	bool loss_seen;
};

/* The RTT that turns the rate into a window: cc_window_rtt(), which says
 * why it is capped at the lowest RTT plus the delay allowance. */
static uint64_t conv_rtt(const struct timely *t)
{
	return cc_window_rtt(&t->rtt, t->slack_ns);
}

/* Keep the rate where the window can follow it (cc_rate_min(),
 * cc_rate_max()). */
static void set_rate(struct timely *t, uint64_t r)
{
	uint64_t rtt = conv_rtt(t);
	uint64_t lo = cc_rate_min(&t->b, rtt), hi = cc_rate_max(&t->b, rtt);

	t->rate = r < lo ? lo : r > hi ? hi : r;
}

static uint64_t t_low(const struct timely *t)
{
	return t->rtt.min_ns + t->slack_ns;
}

static uint64_t t_high(const struct timely *t)
{
	return t->rtt.min_ns + t->slack_ns * TIMELY_THIGH_MULT;
}

/* Shrink by `ppm` of the rate (or of the provisional window). */
static void shrink(struct timely *t, uint64_t ppm)
{
	if (t->rate)
		set_rate(t, cc_scale(t->rate, CC_PPM - ppm, CC_PPM));
	else
		t->pre_win = cc_clamp(&t->b, cc_scale(t->pre_win, CC_PPM - ppm, CC_PPM));
	t->cuts++;
}

static void timely_init(void *st, const struct cc_params *p)
{
	struct timely *t = st;

	*t = (struct timely){ 0 };
	cc_bounds_init(&t->b, p);
	cc_rtt_init(&t->rtt, p->base_rtt_ns);
	t->pre_win = cc_clamp(&t->b, p->init_window);
	t->slack_ns = cc_min(p->delay_slack_ns ? p->delay_slack_ns : CC_DEFAULT_SLACK_NS,
			     CC_RTT_MAX_NS);
	if (t->rtt.min_ns)
		set_rate(t, cc_scale(t->pre_win, CC_NS_PER_S, conv_rtt(t)));
}

static void gradient_step(struct timely *t, uint64_t rtt)
{
	/* All RTTs are capped at 2^32 ns: the differences, their EWMA and
	 * the gradient in ppm (< 2^52) all fit an int64_t. */
	int64_t diff = (int64_t)rtt - (int64_t)t->prev_rtt_ns;

	t->prev_rtt_ns = rtt;
	t->rtt_diff_ns = (t->rtt_diff_ns * (TIMELY_EWMA_DEN - TIMELY_EWMA_NEW) +
			  diff * TIMELY_EWMA_NEW) / TIMELY_EWMA_DEN;
	if (rtt < t_low(t)) {
		set_rate(t, cc_sat_add(t->rate, TIMELY_DELTA_BPS));
		return;
	}
	if (rtt > t_high(t)) {
		t->neg_count = 0;
		shrink(t, cc_scale(cc_ratio_ppm(rtt - t_high(t), rtt), TIMELY_BETA_PPM, CC_PPM));
		return;
	}
	t->gradient_ppm = t->rtt_diff_ns * (int64_t)CC_PPM / (int64_t)t->rtt.min_ns;
	if (t->gradient_ppm <= 0) {
		uint64_t n;

		if (t->neg_count < UINT32_MAX)
			t->neg_count++;
		n = t->neg_count >= TIMELY_HAI_AFTER ? TIMELY_HAI_N : 1;
		set_rate(t, cc_sat_add(t->rate, n * TIMELY_DELTA_BPS));
		return;
	}
	t->neg_count = 0;
	shrink(t, cc_min(cc_scale((uint64_t)t->gradient_ppm, TIMELY_BETA_PPM, CC_PPM),
			 TIMELY_MAX_CUT_PPM));
}

static void timely_on_ack(void *st, const struct cc_ack *a)
{
	struct timely *t = st;
	uint64_t rtt;

	/* TIMELY reads the RTT and nothing else: ECN marks and ACKs without
	 * a sample leave the rate alone. */
	if (!a->rtt_ns)
		return;
	rtt = cc_rtt_sample(&t->rtt, a->rtt_ns);
	if (!t->rate)
		set_rate(t, cc_scale(t->pre_win, CC_NS_PER_S, conv_rtt(t)));
	if (!t->prev_rtt_ns) {
		t->prev_rtt_ns = rtt;  /* a gradient needs two samples */
		return;
	}
	gradient_step(t, rtt);
}

static void timely_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct timely *t = st;

	t->neg_count = 0;
	if (timeout) {
		t->timeouts++;
		t->cuts++;
		if (t->rate)
			t->rate = cc_rate_min(&t->b, conv_rtt(t));
		else
			t->pre_win = t->b.min_w;
		t->last_loss_ns = now_ns;
		t->loss_seen = true;
		return;
	}
	if (cc_within(t->loss_seen, t->last_loss_ns, now_ns, cc_rtt_hold(&t->rtt)))
		return;
	shrink(t, CC_PPM / 2);
	t->last_loss_ns = now_ns;
	t->loss_seen = true;
}

static uint64_t timely_window(const void *st)
{
	const struct timely *t = st;

	if (!t->rate)
		return t->pre_win;
	return cc_clamp(&t->b, cc_scale(t->rate, conv_rtt(t), CC_NS_PER_S));
}

static int timely_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct timely *t = st;
	/* describe() values are unsigned: the signed gradient is reported as
	 * its rising and falling magnitudes, one of them 0. */
	const char *const k[] = { "cwnd", "rate_Bps", "min_rtt_ns", "t_low_ns", "t_high_ns",
				  "grad_up_ppm", "grad_down_ppm", "falling", "cuts", "timeouts" };
	const uint64_t v[] = {
		timely_window(t), t->rate, t->rtt.min_ns, t_low(t), t_high(t),
		t->gradient_ppm > 0 ? (uint64_t)t->gradient_ppm : 0,
		t->gradient_ppm < 0 ? (uint64_t)-t->gradient_ppm : 0,
		t->neg_count, t->cuts, t->timeouts,
	};

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_timely_ops = {
	.name       = "timely",
	.state_size = sizeof(struct timely),
	.init       = timely_init,
	.on_ack     = timely_on_ack,
	.on_loss    = timely_on_loss,
	.window     = timely_window,
	.describe   = timely_describe,
};
