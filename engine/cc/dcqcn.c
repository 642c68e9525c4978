/* SPDX-License-Identifier: MIT */
/*
 * dcqcn: a DCQCN-like rate controller (Zhu et al., SIGCOMM 2015), the
 * congestion control RoCE NICs run, kept as the hardware baseline. An ECN
 * echo stands for a congestion notification packet (CNP): the current rate
 * is cut by alpha/2 and remembered as the target, and alpha (an EWMA of how
 * often CNPs come) rises. Without CNPs alpha decays every K, and the rate
 * recovers in increase events, one per timer period T and one per B bytes
 * acknowledged: the first F events of each kind halve the distance to the
 * target (fast recovery), then the target itself rises by R_AI per event
 * (additive), and once both kinds have passed F by i * R_HAI (hyper). The
 * module has no timers of its own: the time elapsed between events
 * (now_ns) replays the timer periods that have passed. The window is rate x
 * smoothed RTT, the in-flight amount that sustains the rate (Little's law),
 * with the RTT counted up to the lowest RTT plus the delay allowance.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

/* The paper's parameters. R_HAI is not fixed there; 10 x R_AI is the
 * ratio NIC firmware defaults use (5 and 50 Mb/s), a tuning choice. */
#define DCQCN_ALPHA_ONE (1u << 20)     /* alpha in Q20 fixed point */
#define DCQCN_G_SHIFT   8              /* g = 1/256 */
#define DCQCN_K_NS      55000u         /* alpha decay period */
#define DCQCN_T_NS      55000u         /* rate-increase timer period */
#define DCQCN_B_BYTES   (10u * 1024 * 1024)  /* byte counter period */
#define DCQCN_F         5u             /* fast-recovery events */
#define DCQCN_RAI_BPS   5000000u       /* 40 Mb/s in bytes per second */
#define DCQCN_RHAI_BPS  50000000u      /* 400 Mb/s */
/* The notification point sends at most one CNP per 50 us per flow, however
 * many marked packets arrive; marks closer together are one CNP. */
#define DCQCN_CNP_GAP_NS 50000u
/* A long quiet gap replays at most this many increase events of each kind:
 * bounded work per event. By then the rate has long converged on the
 * target; only the additive and hyper phases are cut short. */
#define DCQCN_MAX_EVENTS 64u

/*
 * Departures. Hardware starts every flow at line rate and never exceeds it;
 * so does this module when cc_params.line_rate_bps is given (the simulator
 * gives it). Where it is unknown (0, the daemon) the caller's init_window
 * stands for it (rate = init_window / RTT). The rate is also kept within
 * what the window can express, [min_window, max_window] / window_rtt().
 * The transport is window-limited, not paced, so the rate becomes a window
 * (see window_rtt()). Losses, which the paper's lossless fabric never has,
 * cut the rate in half (at most once per RTT) and a timeout drops it to the
 * floor.
 */

struct dcqcn {
	struct cc_bounds b;
	struct cc_rtt rtt;
	uint64_t line_Bps;             /* line rate in bytes/s; 0 = unknown */
	uint64_t slack_ns;             /* delay allowance in the window conversion */
	uint64_t rc, rt;               /* current and target rate, bytes/s; 0 = no RTT yet */
	uint64_t pre_win;              /* the window before any RTT is known */
	uint64_t alpha;                /* Q20, 0..DCQCN_ALPHA_ONE */
	uint64_t alpha_ns;             /* start of the current alpha decay period */
	uint64_t tick_ns;              /* start of the current timer period */
	uint64_t bytes;                /* acked bytes toward the byte counter */
	uint64_t last_cnp_ns;
	uint64_t last_loss_ns;
	uint64_t cnps, cuts, timeouts;
	uint32_t t_cnt, bc_cnt;        /* increase events since the last cut */
	bool clock_set;                /* alpha_ns and tick_ns are meaningful */
	bool cnp_seen, loss_seen;
};

/* The RTT that turns the rate into a window: cc_window_rtt(), which says
 * why it is capped at the lowest RTT plus the delay allowance. */
static uint64_t window_rtt(const struct dcqcn *d)
{
	return cc_window_rtt(&d->rtt, d->slack_ns);
}

/* r within what the window can express and, where the line rate is known,
 * not above it (unless the window's floor needs more). */
static uint64_t rate_clamp(const struct dcqcn *d, uint64_t r)
{
	uint64_t rtt = window_rtt(d);
	uint64_t lo = cc_rate_min(&d->b, rtt), hi = cc_rate_max(&d->b, rtt);

	if (d->line_Bps)
		hi = cc_min(hi, cc_max(d->line_Bps, lo));
	return r < lo ? lo : r > hi ? hi : r;
}

/* The first rate, once an RTT is known: line rate as in the NIC, else the
 * caller's init_window per window_rtt(). */
static uint64_t start_rate(const struct dcqcn *d)
{
	if (d->line_Bps)
		return rate_clamp(d, d->line_Bps);
	return rate_clamp(d, cc_scale(d->pre_win, CC_NS_PER_S, window_rtt(d)));
}

/* (1 - g)^n in Q20 by repeated squaring: O(log n) for any gap. */
static uint64_t decay_pow(uint64_t n)
{
	uint64_t base = DCQCN_ALPHA_ONE - (DCQCN_ALPHA_ONE >> DCQCN_G_SHIFT);
	uint64_t r = DCQCN_ALPHA_ONE;

	while (n && r) {
		if (n & 1)
			r = r * base >> 20;
		base = base * base >> 20;
		n >>= 1;
	}
	return r;
}

/* A new phase after a cut: counters and both periods restart now. */
static void restart(struct dcqcn *d, uint64_t now)
{
	d->t_cnt = d->bc_cnt = 0;
	d->bytes = 0;
	d->tick_ns = d->alpha_ns = now;
	d->clock_set = true;
}

static void increase(struct dcqcn *d, bool timer)
{
	uint32_t *c = timer ? &d->t_cnt : &d->bc_cnt;
	uint32_t lo, hi;

	if (*c < UINT32_MAX)
		(*c)++;
	lo = d->t_cnt < d->bc_cnt ? d->t_cnt : d->bc_cnt;
	hi = d->t_cnt < d->bc_cnt ? d->bc_cnt : d->t_cnt;
	if (hi >= DCQCN_F) {
		if (lo >= DCQCN_F)     /* hyper: i = stages past F on both counters */
			d->rt = cc_sat_add(d->rt, cc_scale(DCQCN_RHAI_BPS, lo - DCQCN_F + 1, 1));
		else                   /* additive */
			d->rt = cc_sat_add(d->rt, DCQCN_RAI_BPS);
		d->rt = rate_clamp(d, d->rt);
	}
	/* rc = (rt + rc) / 2 without the sum, rounding toward rt so that
	 * a gap of one byte/s still closes */
	if (d->rc <= d->rt)
		d->rc += (d->rt - d->rc) / 2 + ((d->rt - d->rc) & 1);
	else
		d->rc -= (d->rc - d->rt) / 2 + ((d->rc - d->rt) & 1);
}

/* Replay the alpha decay and timer periods that ended before now. A clock
 * that went backwards replays nothing. */
static void advance(struct dcqcn *d, uint64_t now)
{
	uint64_t n;

	n = cc_elapsed(d->alpha_ns, now) / DCQCN_K_NS;
	if (n) {
		d->alpha = d->alpha * decay_pow(n) >> 20;
		d->alpha_ns += n * DCQCN_K_NS;  /* <= now: no overflow */
	}
	n = cc_elapsed(d->tick_ns, now) / DCQCN_T_NS;
	if (n)
		d->tick_ns += n * DCQCN_T_NS;
	for (n = cc_min(n, DCQCN_MAX_EVENTS); n; n--)
		increase(d, true);
}

static void cnp(struct dcqcn *d, uint64_t now)
{
	d->cnps++;
	d->cuts++;
	if (d->rc) {
		d->rt = d->rc;
		d->rc = rate_clamp(d, d->rc - cc_scale(d->rc, d->alpha, 2 * DCQCN_ALPHA_ONE));
	} else {
		d->pre_win = cc_clamp(&d->b, d->pre_win -
				      cc_scale(d->pre_win, d->alpha, 2 * DCQCN_ALPHA_ONE));
	}
	/* alpha = (1 - g) alpha + g, after the cut as in the paper */
	d->alpha = d->alpha - (d->alpha >> DCQCN_G_SHIFT) + (DCQCN_ALPHA_ONE >> DCQCN_G_SHIFT);
	d->last_cnp_ns = now;
	d->cnp_seen = true;
	restart(d, now);
}

static void dcqcn_init(void *st, const struct cc_params *p)
{
	struct dcqcn *d = st;

	*d = (struct dcqcn){ 0 };
	cc_bounds_init(&d->b, p);
	cc_rtt_init(&d->rtt, p->base_rtt_ns);
	d->pre_win = cc_clamp(&d->b, p->init_window);
	d->line_Bps = p->line_rate_bps / 8;
	d->slack_ns = cc_min(p->delay_slack_ns ? p->delay_slack_ns : CC_DEFAULT_SLACK_NS,
			     CC_RTT_MAX_NS);
	d->alpha = DCQCN_ALPHA_ONE;    /* the paper's initial alpha: the first CNP halves */
	if (d->rtt.min_ns)
		d->rc = d->rt = start_rate(d);
}

static void dcqcn_on_ack(void *st, const struct cc_ack *a)
{
	struct dcqcn *d = st;
	uint64_t n;

	if (a->rtt_ns) {
		cc_rtt_sample(&d->rtt, a->rtt_ns);
		if (!d->rc)
			d->rc = d->rt = start_rate(d);
	}
	if (!d->clock_set)
		restart(d, a->now_ns);
	if (d->rc) {
		advance(d, a->now_ns);
		/* the byte counter, over acknowledged rather than sent bytes:
		 * the module sees only ACKs */
		d->bytes = cc_sat_add(d->bytes, a->acked_bytes);
		n = d->bytes / DCQCN_B_BYTES;
		d->bytes %= DCQCN_B_BYTES;
		for (n = cc_min(n, DCQCN_MAX_EVENTS); n; n--)
			increase(d, false);
	}
	if (a->ecn && !cc_within(d->cnp_seen, d->last_cnp_ns, a->now_ns, DCQCN_CNP_GAP_NS))
		cnp(d, a->now_ns);
}

static void dcqcn_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct dcqcn *d = st;

	if (timeout) {
		d->timeouts++;
	} else if (cc_within(d->loss_seen, d->last_loss_ns, now_ns, cc_rtt_hold(&d->rtt))) {
		return;                /* losses from one window are one event */
	}
	d->cuts++;
	if (d->rc) {
		/* recover toward half the old rate after a timeout, toward the
		 * old rate after a loss */
		d->rt = timeout ? rate_clamp(d, d->rc / 2) : d->rc;
		d->rc = timeout ? cc_rate_min(&d->b, window_rtt(d)) : rate_clamp(d, d->rc / 2);
	} else {
		d->pre_win = timeout ? d->b.min_w : cc_clamp(&d->b, d->pre_win / 2);
	}
	d->last_loss_ns = now_ns;
	d->loss_seen = true;
	restart(d, now_ns);
}

static uint64_t dcqcn_window(const void *st)
{
	const struct dcqcn *d = st;

	if (!d->rc)
		return d->pre_win;
	return cc_clamp(&d->b, cc_scale(d->rc, window_rtt(d), CC_NS_PER_S));
}

static int dcqcn_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct dcqcn *d = st;
	const char *const k[] = { "cwnd", "rate_Bps", "target_rate_Bps", "alpha_ppm",
				  "srtt_ns", "min_rtt_ns", "cnps", "cuts", "timeouts" };
	const uint64_t v[] = {
		dcqcn_window(d), d->rc, d->rt,
		cc_scale(d->alpha, CC_PPM, DCQCN_ALPHA_ONE),
		d->rtt.srtt_ns, d->rtt.min_ns, d->cnps, d->cuts, d->timeouts,
	};

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_dcqcn_ops = {
	.name       = "dcqcn",
	.state_size = sizeof(struct dcqcn),
	.init       = dcqcn_init,
	.on_ack     = dcqcn_on_ack,
	.on_loss    = dcqcn_on_loss,
	.window     = dcqcn_window,
	.describe   = dcqcn_describe,
};
