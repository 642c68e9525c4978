/* SPDX-License-Identifier: MIT */
/*
 * cc modules: swift, timely, dcqcn, hint and none, each driven one event at
 * a time with made-up times: how each reacts to ECN marks, to delay above
 * or below its target (or to the RTT gradient), to losses and timeouts;
 * growth when nothing is congested; a clock that steps back. Then, for
 * every registered module: the window stays within [min, max] under random
 * and absurd inputs, two instances fed the same events agree bit for bit,
 * and describe() behaves. And the registry: each name is found and listed.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/cc/cc.h"
#include "engine/engine.h"

#define CHUNK   32768u
#define US      1000ull
#define BASE    (10 * US)              /* unloaded RTT in most tests */
#define SLACK   (50 * US)              /* the modules' default delay allowance */
#define PPM     1000000ull

/* Every registered module, in registry order. */
static const struct {
	const char *name;
	const struct cc_ops *ops;
} modules[] = {
	{ "window", &cc_window_ops },
	{ "swift",  &cc_swift_ops },
	{ "timely", &cc_timely_ops },
	{ "dcqcn",  &cc_dcqcn_ops },
	{ "hint",   &cc_hint_ops },
	{ "eqds",   &cc_eqds_ops },
	{ "none",   &cc_none_ops },
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

static struct cc_params params(void)
{
	return (struct cc_params){
		.mss = 4096,
		.chunk = CHUNK,
		.init_window = 4 * CHUNK,
		.min_window = CHUNK,
		.max_window = 1024 * CHUNK,
		.base_rtt_ns = BASE,
	};
}

static void *cc_new_fill(const struct cc_ops *o, const struct cc_params *p, int fill)
{
	void *st = malloc(o->state_size);

	assert_non_null(st);
	memset(st, fill, o->state_size);               /* init must set everything */
	o->init(st, p);
	return st;
}

static void *cc_new(const struct cc_ops *o, const struct cc_params *p)
{
	return cc_new_fill(o, p, 0xa5);
}

static uint64_t W(const struct cc_ops *o, const void *st)
{
	return o->window(st);
}

static void ack_full(const struct cc_ops *o, void *st, uint64_t now, uint64_t acked,
		     uint64_t rtt, bool ecn, uint32_t hint)
{
	struct cc_ack a = { .now_ns = now, .acked_bytes = acked, .rtt_ns = rtt, .ecn = ecn,
			    .hint_ppm = hint };

	o->on_ack(st, &a);
}

static void ack(const struct cc_ops *o, void *st, uint64_t now, uint64_t acked, uint64_t rtt,
		bool ecn)
{
	ack_full(o, st, now, acked, rtt, ecn, 0);
}

static uint64_t described(const struct cc_ops *o, const void *st, const char *name)
{
	const char *names[32];
	uint64_t values[32];
	int n = o->describe(st, names, values, 32);

	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	fail_msg("%s: describe() has no \"%s\"", o->name, name);
	return 0;
}

/* --- registry ----------------------------------------------------------- */

static void test_find_each_module(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;

		assert_ptr_equal(cc_find(modules[i].name), o);
		assert_string_equal(o->name, modules[i].name);
		assert_true(o->state_size > 0);
		assert_non_null(o->init);
		assert_non_null(o->on_ack);
		assert_non_null(o->on_loss);
		assert_non_null(o->window);
		assert_non_null(o->describe);
	}
}

/* cc_names() lists exactly the registered modules, each once. */
static void test_names_lists_each_module(void **state)
{
	char buf[256];
	char *save = NULL;
	int seen[NMODULES] = { 0 };
	size_t count = 0;

	assert_true(strlen(cc_names()) < sizeof(buf));
	strcpy(buf, cc_names());
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < NMODULES; i++)
			if (strcmp(t, modules[i].name) == 0)
				break;
		if (i == NMODULES)
			fail_msg("cc_names() lists \"%s\", which this test does not know", t);
		assert_ptr_equal(cc_find(t), modules[i].ops);
		seen[i]++;
		count++;
	}
	assert_int_equal(count, NMODULES);
	for (size_t i = 0; i < NMODULES; i++)
		assert_int_equal(seen[i], 1);
}

static void test_unknown_is_null(void **state)
{
	assert_null(cc_find("EQDS"));
	assert_null(cc_find("Swift"));
	assert_null(cc_find("swift "));
	assert_null(cc_find("dcqcn,hint"));
	assert_null(cc_find(""));
	assert_null(cc_find(NULL));
}

/* The hint field took the padding after ecn: the ACK record did not grow
 * and every older field kept its place. */
static void test_cc_ack_layout_unchanged(void **state)
{
	assert_int_equal(offsetof(struct cc_ack, ecn), 32);
	assert_true(offsetof(struct cc_ack, hint_ppm) > offsetof(struct cc_ack, ecn));
	assert_int_equal(sizeof(struct cc_ack), 40);
}

/* --- swift -------------------------------------------------------------- */

static const struct cc_ops *const swift = &cc_swift_ops;

/* Below the target, one chunk per window of acknowledged bytes, carried
 * across small batches; no slow start. */
static void test_swift_grows_by_a_chunk_per_rtt_below_target(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(swift, &p);
	uint64_t now = 1000 * US, w = W(swift, st);

	assert_int_equal(w, 4 * CHUNK);
	for (uint64_t acked = 0; acked + CHUNK / 4 <= w; acked += CHUNK / 4)
		ack(swift, st, now += 1 * US, CHUNK / 4, 20 * US, false);
	assert_int_equal(W(swift, st), w + CHUNK);
	/* a huge batch adds chunks, not the batch */
	w = W(swift, st);
	ack(swift, st, now += 1 * US, 3 * w, 20 * US, false);
	assert_int_equal(W(swift, st), w + 3 * CHUNK);
	/* an ACK batch without a sample keeps the last verdict: still growing */
	w = W(swift, st);
	ack(swift, st, now += 1 * US, w, 0, false);
	assert_int_equal(W(swift, st), w + CHUNK);
	assert_int_equal(described(swift, st, "cuts"), 0);
	free(st);
}

/* target = min RTT + allowance + flow scaling: the whole fs_range (twice
 * the allowance) at the minimum window (one chunk), nothing from four
 * chunks up, and decreasing in between. (Until the late-comer fix the
 * curve ended at 100 packets.) */
static void test_swift_target_scales_with_window(void **state)
{
	struct cc_params p = params();
	uint64_t prev = UINT64_MAX;
	void *st;

	p.init_window = CHUNK;
	st = cc_new(swift, &p);
	assert_int_equal(described(swift, st, "target_ns"), BASE + SLACK + 2 * SLACK);
	free(st);
	p.init_window = 4 * CHUNK;
	st = cc_new(swift, &p);
	assert_int_equal(described(swift, st, "target_ns"), BASE + SLACK);
	free(st);
	for (uint64_t w = CHUNK; w <= 5 * CHUNK; w += CHUNK / 4) {
		uint64_t t;

		p.init_window = w;
		st = cc_new(swift, &p);
		t = described(swift, st, "target_ns");
		assert_true(t >= BASE + SLACK && t <= BASE + 3 * SLACK);
		if (w > CHUNK && w <= 4 * CHUNK)
			assert_true(t < prev);
		else if (w > 4 * CHUNK)
			assert_int_equal(t, BASE + SLACK);
		prev = t;
		free(st);
	}
	/* steep where competing flows' windows sit: two chunks already give
	 * up more than half of the range */
	p.init_window = 2 * CHUNK;
	st = cc_new(swift, &p);
	assert_true(described(swift, st, "target_ns") < BASE + SLACK + SLACK);
	free(st);
	/* the caller's allowance replaces the default */
	p.init_window = 64 * CHUNK;
	p.delay_slack_ns = 5 * US;
	st = cc_new(swift, &p);
	assert_int_equal(described(swift, st, "target_ns"), BASE + 5 * US);
	free(st);
}

/*
 * Late-comers (docs/results e4): a flow that starts into a standing queue
 * learns a lowest RTT inflated by that queue; with 7 flows at the one-chunk
 * floor on a 100G link that is about as much as the whole flow-scaling
 * range (2 x 5 us here). Its target must still come down to an incumbent's
 * (one that saw the true base and sits at the floor) by the time it holds
 * a few chunks, or it keeps growing while the incumbents cut: before the fix
 * it had to reach 100 packets (13 chunks) for that, and took 40+ of 100
 * Gbit/s. From there both see the same delay and react the same way.
 */
static void test_swift_late_comer_target_comes_down(void **state)
{
	struct cc_params p = params();
	const uint64_t fs_range = 10 * US, q0 = fs_range;
	void *inc, *late;
	uint64_t t_inc, now = 1000 * US, wi, wl;

	p.base_rtt_ns = 0;                             /* learned, as in the daemon */
	p.delay_slack_ns = 5 * US;
	p.init_window = CHUNK;
	inc = cc_new(swift, &p);
	p.init_window = 4 * CHUNK;
	late = cc_new(swift, &p);
	ack(swift, inc, now, 0, BASE, false);
	ack(swift, late, now, 0, BASE + q0, false);
	assert_int_equal(described(swift, late, "min_rtt_ns"), BASE + q0);
	t_inc = described(swift, inc, "target_ns");
	assert_int_equal(t_inc, BASE + 5 * US + fs_range);
	assert_true(described(swift, late, "target_ns") <= t_inc);
	/* a delay both exceed: both cut, the larger window by more bytes */
	wi = W(swift, inc);
	wl = W(swift, late);
	ack(swift, inc, now + 100 * US, 0, t_inc + 20 * US, false);
	ack(swift, late, now + 100 * US, 0, t_inc + 20 * US, false);
	assert_int_equal(described(swift, late, "cuts"), 1);
	assert_true(W(swift, late) < wl);
	assert_true(wl - W(swift, late) > wi - W(swift, inc));
	free(inc);
	free(late);
}

/* Above the target: cwnd *= 1 - 0.8 * (delay - target) / delay, at most a
 * halving, at most once per smoothed RTT; no growth meanwhile. */
static void test_swift_decrease_is_proportional_once_per_rtt(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;                   /* past flow scaling: target 60 us */
	void *st = cc_new(swift, &p);
	uint64_t t = 1000 * US, w0 = 100 * (uint64_t)CHUNK, w1;

	ack(swift, st, t, CHUNK, 120 * US, false);     /* excess 60/120: x(1 - 0.4) */
	w1 = w0 * 6 / 10;
	assert_int_equal(W(swift, st), w1);
	assert_int_equal(described(swift, st, "delay_ns"), 120 * US);
	assert_int_equal(described(swift, st, "target_ns"), BASE + SLACK);
	/* within one srtt (120 us): neither a second cut nor growth */
	ack(swift, st, t + 1 * US, 10 * w1, 120 * US, false);
	ack(swift, st, t + 120 * US - 1, CHUNK, 120 * US, false);
	assert_int_equal(W(swift, st), w1);
	/* one srtt later, cut again */
	ack(swift, st, t + 120 * US, CHUNK, 120 * US, false);
	assert_int_equal(W(swift, st), w1 * 6 / 10);
	assert_int_equal(described(swift, st, "cuts"), 2);
	free(st);
}

static void test_swift_cut_size_follows_the_excess(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	const uint64_t w0 = 100 * (uint64_t)CHUNK;
	void *st;

	/* 1 us over a 60 us target: a cut of about 1.3% */
	st = cc_new(swift, &p);
	ack(swift, st, 1000 * US, 0, 61 * US, false);
	assert_true(W(swift, st) < w0);
	assert_true(W(swift, st) > w0 - w0 / 50);
	free(st);
	/* at the target exactly: no cut, and growth */
	st = cc_new(swift, &p);
	ack(swift, st, 1000 * US, w0, 60 * US, false);
	assert_int_equal(W(swift, st), w0 + CHUNK);
	free(st);
	/* 10 ms: the proportional cut (~80%) is bounded at max_mdf, a halving */
	st = cc_new(swift, &p);
	ack(swift, st, 1000 * US, 0, 10000 * US, false);
	assert_int_equal(W(swift, st), w0 / 2);
	free(st);
}

/* Swift is delay-only: marks change nothing. */
static void test_swift_ignores_ecn(void **state)
{
	struct cc_params p = params();
	void *a = cc_new(swift, &p), *b = cc_new(swift, &p);
	uint64_t now = 1000 * US;

	for (int i = 0; i < 50; i++) {
		now += 5 * US;
		ack(swift, a, now, CHUNK, 20 * US, true);
		ack(swift, b, now, CHUNK, 20 * US, false);
		assert_int_equal(W(swift, a), W(swift, b));
	}
	assert_true(W(swift, a) > 4 * CHUNK);
	assert_int_equal(described(swift, a, "cuts"), 0);
	free(a);
	free(b);
}

/* A loss or timeout cuts by max_mdf once per RTT; five timeouts with no
 * ACK between them drop to the floor; an ACK resets that count. */
static void test_swift_loss_and_timeouts(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(swift, &p);
	uint64_t t = 1000 * US;

	ack(swift, st, t, 0, BASE, false);             /* srtt 10 us */
	swift->on_loss(st, t, false);
	assert_int_equal(W(swift, st), 50 * CHUNK);
	swift->on_loss(st, t + BASE - 1, false);
	assert_int_equal(W(swift, st), 50 * CHUNK);
	swift->on_loss(st, t + BASE, false);
	assert_int_equal(W(swift, st), 25 * CHUNK);

	/* timeouts in a burst: the first cuts, the fifth floors */
	t += 100 * US;
	swift->on_loss(st, t, true);
	assert_int_equal(W(swift, st), 25 * CHUNK / 2);
	for (int i = 0; i < 3; i++)
		swift->on_loss(st, t + 1, true);
	assert_int_equal(W(swift, st), 25 * CHUNK / 2);
	swift->on_loss(st, t + 2, true);
	assert_int_equal(W(swift, st), CHUNK);
	assert_int_equal(described(swift, st, "timeouts"), 5);

	/* an ACK between timeouts restarts the count */
	p.init_window = 100 * CHUNK;
	free(st);
	st = cc_new(swift, &p);
	for (int i = 0; i < 4; i++)
		swift->on_loss(st, t + i * 1000 * US, true);
	ack(swift, st, t + 4000 * US, 0, 0, false);
	swift->on_loss(st, t + 5000 * US, true);
	assert_true(W(swift, st) > CHUNK);
	free(st);
}

static void test_swift_clock_stepping_back(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(swift, &p);
	uint64_t t = 1000 * US, w;

	ack(swift, st, t, 0, 120 * US, false);
	w = W(swift, st);
	assert_true(w < 100 * CHUNK);
	ack(swift, st, t - 500 * US, 0, 120 * US, false);
	swift->on_loss(st, t - 1, false);
	swift->on_loss(st, 0, true);
	assert_int_equal(W(swift, st), w);
	ack(swift, st, t + 120 * US, 0, 120 * US, false);
	assert_true(W(swift, st) < w);
	free(st);
}

static void test_swift_huge_values(void **state)
{
	const uint64_t max = 1ull << 40;
	struct cc_params p = params();
	p.max_window = max;
	p.init_window = max;
	void *st = cc_new(swift, &p);

	ack(swift, st, 1000 * US, UINT64_MAX, BASE, false);
	assert_int_equal(W(swift, st), max);
	/* an absurd sample is capped, and the cut bounded at a halving */
	ack(swift, st, 2000 * US, UINT64_MAX, UINT64_MAX, false);
	assert_int_equal(W(swift, st), max / 2);
	assert_int_equal(described(swift, st, "delay_ns"), 0xffffffffull);
	swift->on_loss(st, UINT64_MAX - 1, false);
	assert_int_equal(W(swift, st), max / 4);
	swift->on_loss(st, UINT64_MAX, true);         /* same RTT: no second cut */
	assert_int_equal(W(swift, st), max / 4);
	free(st);
}

/* --- timely ------------------------------------------------------------- */

static const struct cc_ops *const timely = &cc_timely_ops;
/* init_window / base RTT: 4 chunks per 10 us */
#define T_RATE0  (4ull * CHUNK * 1000000000ull / BASE)
#define T_DELTA  1250000ull                    /* 10 Mb/s */

/* The window is rate x lowest RTT; the first sample only primes the
 * gradient. */
static void test_timely_window_is_rate_times_min_rtt(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);

	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0);
	assert_int_equal(W(timely, st), 4 * CHUNK);
	assert_int_equal(described(timely, st, "t_low_ns"), BASE + SLACK);
	assert_int_equal(described(timely, st, "t_high_ns"), BASE + 10 * SLACK);
	ack(timely, st, 1000 * US, CHUNK, 300 * US, false);
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0);
	free(st);
}

/* Below T_low: + delta per sample, whatever the gradient. */
static void test_timely_below_t_low_adds_delta(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);

	ack(timely, st, 1000 * US, CHUNK, 20 * US, false);
	ack(timely, st, 1001 * US, CHUNK, 20 * US, false);
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 + T_DELTA);
	ack(timely, st, 1002 * US, CHUNK, 59 * US, false);   /* rising, still below */
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 + 2 * T_DELTA);
	/* the window is rate x srtt (20 us + 39 us / 8), capped at min + slack */
	assert_int_equal(W(timely, st), (T_RATE0 + 2 * T_DELTA) * 24875 / 1000000000ull);
	free(st);
}

/* Above T_high: x (1 - 0.8 (1 - T_high / rtt)). */
static void test_timely_above_t_high_cuts(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);

	ack(timely, st, 1000 * US, CHUNK, 1020 * US, false);
	ack(timely, st, 1001 * US, CHUNK, 1020 * US, false);  /* T_high 510: x0.6 */
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 * 6 / 10);
	assert_int_equal(described(timely, st, "cuts"), 1);
	free(st);
}

/* Between the thresholds: a rising RTT cuts by beta x gradient; flat or
 * falling adds delta, then 5 delta from the fifth such sample on. */
static void test_timely_gradient_band(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);
	uint64_t now = 1000 * US, r;

	ack(timely, st, now, CHUNK, 100 * US, false);
	for (int i = 1; i <= 4; i++) {
		ack(timely, st, now += US, CHUNK, 100 * US, false);
		assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 + i * T_DELTA);
	}
	ack(timely, st, now += US, CHUNK, 100 * US, false);
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 + 9 * T_DELTA);
	ack(timely, st, now += US, CHUNK, 100 * US, false);
	r = T_RATE0 + 14 * T_DELTA;
	assert_int_equal(described(timely, st, "rate_Bps"), r);
	assert_int_equal(described(timely, st, "falling"), 6);

	/* +1 us: diff EWMA 875 ns, gradient 875/10000 = 87500 ppm, cut 7% */
	ack(timely, st, now += US, CHUNK, 101 * US, false);
	assert_int_equal(described(timely, st, "grad_up_ppm"), 87500);
	assert_int_equal(described(timely, st, "falling"), 0);
	r = r / PPM * 930000 + r % PPM * 930000 / PPM;
	assert_int_equal(described(timely, st, "rate_Bps"), r);

	/* falling again: back to single delta */
	ack(timely, st, now += US, CHUNK, 100 * US, false);
	assert_true(described(timely, st, "grad_down_ppm") > 0);
	assert_int_equal(described(timely, st, "rate_Bps"), r + T_DELTA);
	free(st);
}

/* One outlier RTT sample far below the path's (a corrupt or forged tsecr
 * echoing nearly "now") must not pin the window at the floor for good:
 * with the window as rate x min_rtt, min_rtt = 1 ns made it rate / 1e9,
 * and 10 s of clean ACKs at a steady, uncongested 20 us RTT added
 * delta x 1 ns per sample, nothing. */
static void test_timely_recovers_from_outlier_min_rtt(void **state)
{
	struct cc_params p = params();
	void *st;
	uint64_t now = 1000 * US;

	p.base_rtt_ns = 0;
	p.max_window = 1024 * CHUNK;
	st = cc_new(timely, &p);
	for (int i = 0; i < 1000; i++)
		ack(timely, st, now += 20 * US, CHUNK, 20 * US, false);
	ack(timely, st, now += 20 * US, CHUNK, 1, false);         /* the outlier */
	for (int i = 0; i < 500000; i++)
		ack(timely, st, now += 20 * US, CHUNK, 20 * US, false);
	assert_true(W(timely, st) >= 64 * CHUNK);
	free(st);
}

/* A steep rise is cut at most in half per sample. */
static void test_timely_gradient_cut_is_bounded(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);

	ack(timely, st, 1000 * US, CHUNK, 100 * US, false);
	ack(timely, st, 1001 * US, CHUNK, 400 * US, false);   /* gradient 26 */
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 / 2);
	free(st);
}

static void test_timely_ignores_ecn(void **state)
{
	struct cc_params p = params();
	void *a = cc_new(timely, &p), *b = cc_new(timely, &p);
	uint64_t now = 1000 * US;

	for (int i = 0; i < 50; i++) {
		uint64_t rtt = (20 + (uint64_t)(i * 37 % 600)) * US;

		now += 5 * US;
		ack(timely, a, now, CHUNK, rtt, true);
		ack(timely, b, now, CHUNK, rtt, false);
		assert_int_equal(W(timely, a), W(timely, b));
	}
	free(a);
	free(b);
}

/* Not in the paper (lossless fabric): a loss halves the rate once per RTT,
 * a timeout drops it to the floor. */
static void test_timely_loss_and_timeout(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(timely, &p);
	uint64_t t = 1000 * US;

	ack(timely, st, t, 0, BASE, false);            /* srtt 10 us */
	timely->on_loss(st, t, false);
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 / 2);
	timely->on_loss(st, t + BASE - 1, false);
	timely->on_loss(st, t - 1, false);             /* clock stepped back */
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 / 2);
	timely->on_loss(st, t + BASE, false);
	assert_int_equal(described(timely, st, "rate_Bps"), T_RATE0 / 4);
	timely->on_loss(st, t + BASE + 1, true);
	assert_int_equal(W(timely, st), CHUNK);
	assert_int_equal(described(timely, st, "timeouts"), 1);
	free(st);
}

/* With no base RTT and no sample, the window is the initial one (cut by
 * losses); the first sample turns it into a rate. */
static void test_timely_before_any_rtt(void **state)
{
	struct cc_params p = params();
	p.base_rtt_ns = 0;
	void *st = cc_new(timely, &p);

	assert_int_equal(W(timely, st), 4 * CHUNK);
	assert_int_equal(described(timely, st, "rate_Bps"), 0);
	timely->on_loss(st, 1, false);
	assert_int_equal(W(timely, st), 2 * CHUNK);
	ack(timely, st, 2, CHUNK, 0, true);            /* nothing to measure */
	assert_int_equal(W(timely, st), 2 * CHUNK);
	ack(timely, st, 3, CHUNK, 20 * US, false);
	assert_int_equal(described(timely, st, "rate_Bps"), 2ull * CHUNK * 1000000000ull / (20 * US));
	assert_int_equal(W(timely, st), 2 * CHUNK);
	free(st);
}

/* The rate stops where the window does, at both ends. */
static void test_timely_rate_is_bounded_by_the_window(void **state)
{
	struct cc_params p = params();
	p.max_window = 8 * CHUNK;
	void *st = cc_new(timely, &p);
	uint64_t now = 1000 * US;

	for (int i = 0; i < 20000; i++) {
		ack(timely, st, now += US, CHUNK, 20 * US, false);
		assert_true(W(timely, st) <= 8 * CHUNK);
	}
	assert_int_equal(W(timely, st), 8 * CHUNK);
	assert_int_equal(described(timely, st, "rate_Bps"), 8ull * CHUNK * 1000000000ull / (20 * US));
	for (int i = 0; i < 200; i++) {
		ack(timely, st, now += US, CHUNK, 5000 * US, false);
		assert_true(W(timely, st) >= CHUNK);
	}
	assert_int_equal(W(timely, st), CHUNK);
	/* srtt far above: the conversion RTT stops at min + slack */
	assert_int_equal(described(timely, st, "rate_Bps"), 1ull * CHUNK * 1000000000ull / (BASE + SLACK));
	free(st);
}

/* --- dcqcn -------------------------------------------------------------- */

static const struct cc_ops *const dcqcn = &cc_dcqcn_ops;
#define D_RATE0 T_RATE0
#define D_RAI   5000000ull
#define D_RHAI  50000000ull
#define D_T     (55 * US)
#define D_B     (10ull * 1024 * 1024)

/* The first mark halves (alpha starts at 1): the old rate becomes the
 * target, the window is rate x srtt. */
static void test_dcqcn_mark_cuts_by_alpha_half(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t t = 1000 * US;

	assert_int_equal(W(dcqcn, st), 4 * CHUNK);
	ack(dcqcn, st, t, 0, BASE, true);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 / 2);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), D_RATE0);
	assert_int_equal(described(dcqcn, st, "alpha_ppm"), PPM);
	assert_int_equal(W(dcqcn, st), 2 * CHUNK);
	/* marks within 50 us are the same CNP */
	ack(dcqcn, st, t + 1 * US, 0, BASE, true);
	ack(dcqcn, st, t + 50 * US - 1, 0, BASE, true);
	assert_int_equal(described(dcqcn, st, "cnps"), 1);
	ack(dcqcn, st, t + 50 * US, 0, BASE, true);
	assert_int_equal(described(dcqcn, st, "cnps"), 2);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 / 4);
	free(st);
}

/* Without marks alpha decays by (1 - 1/256) per 55 us, and later cuts are
 * gentler. */
static void test_dcqcn_alpha_decays_and_softens_cuts(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t t = 1000 * US, a, r;

	ack(dcqcn, st, t, 0, BASE, true);
	ack(dcqcn, st, t + 256 * D_T, 0, BASE, false);      /* (255/256)^256 ~ 0.37 */
	a = described(dcqcn, st, "alpha_ppm");
	assert_true(a > 360000 && a < 375000);
	r = described(dcqcn, st, "rate_Bps");
	ack(dcqcn, st, t + 256 * D_T + 1, 0, BASE, true);
	/* cut by about alpha / 2 ~ 18% rather than 50% */
	assert_true(described(dcqcn, st, "rate_Bps") > r * 80 / 100);
	assert_true(described(dcqcn, st, "rate_Bps") < r * 83 / 100);
	assert_true(described(dcqcn, st, "alpha_ppm") > a);
	free(st);
}

/* Recovery from now_ns alone: four timer periods of fast recovery halve
 * the distance to the target each; the fifth raises the target by R_AI. */
static void test_dcqcn_timer_recovery(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t t = 1000 * US;

	ack(dcqcn, st, t, 0, BASE, true);
	ack(dcqcn, st, t + D_T - 1, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 / 2);
	ack(dcqcn, st, t + D_T, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 * 3 / 4);
	ack(dcqcn, st, t + 4 * D_T, 0, BASE, false);       /* three more at once */
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 - D_RATE0 / 32);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), D_RATE0);
	ack(dcqcn, st, t + 5 * D_T, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), D_RATE0 + D_RAI);
	assert_int_equal(described(dcqcn, st, "rate_Bps"),
			 (D_RATE0 - D_RATE0 / 32 + D_RATE0 + D_RAI) / 2);
	free(st);
}

/* Once both the timer and the byte counter pass F, hyper increase. */
static void test_dcqcn_byte_counter_and_hyper_increase(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t t = 1000 * US;

	ack(dcqcn, st, t, 0, BASE, true);
	/* 5 timer events (4 fast, 1 additive), then 5 byte events: 4
	 * additive (the timer is past F) and 1 hyper (both are) */
	ack(dcqcn, st, t + 5 * D_T, 5 * D_B, BASE, false);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"),
			 D_RATE0 + 5 * D_RAI + D_RHAI);
	/* bytes carry across batches */
	ack(dcqcn, st, t + 5 * D_T + 1, D_B - 1, BASE, false);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"),
			 D_RATE0 + 5 * D_RAI + D_RHAI);
	/* the timer is still at F: i = min(counters) - F + 1 = 1 */
	ack(dcqcn, st, t + 5 * D_T + 2, 1, BASE, false);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"),
			 D_RATE0 + 5 * D_RAI + 2 * D_RHAI);
	/* one more timer period: i = 2 */
	ack(dcqcn, st, t + 6 * D_T, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"),
			 D_RATE0 + 5 * D_RAI + 4 * D_RHAI);
	free(st);
}

/* Without congestion the rate keeps climbing from the initial one, up to
 * what max_window allows, never past it. */
static void test_dcqcn_grows_to_the_cap(void **state)
{
	struct cc_params p = params();
	p.max_window = 8 * CHUNK;
	void *st = cc_new(dcqcn, &p);
	uint64_t now = 1000 * US, prev = W(dcqcn, st);

	for (int i = 0; i < 200; i++) {
		ack(dcqcn, st, now += D_T, D_B, BASE, false);
		assert_true(W(dcqcn, st) >= prev);
		assert_true(W(dcqcn, st) <= 8 * CHUNK);
		prev = W(dcqcn, st);
	}
	assert_int_equal(W(dcqcn, st), 8 * CHUNK);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"),
			 8ull * CHUNK * 1000000000ull / BASE);
	free(st);
}

/* Marks 50 us apart halve the rate down to the floor: one chunk per RTT. */
static void test_dcqcn_floor(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t now = 1000 * US;

	for (int i = 0; i < 40; i++) {
		ack(dcqcn, st, now += 50 * US, 0, BASE, true);
		assert_true(W(dcqcn, st) >= CHUNK);
	}
	assert_int_equal(W(dcqcn, st), CHUNK);
	free(st);
}

/* A loss is a strong cut (half, once per RTT, alpha untouched); a timeout
 * drops to the floor and recovers toward half the old rate. */
static void test_dcqcn_loss_and_timeout(void **state)
{
	struct cc_params p = params();
	p.init_window = 16 * CHUNK;
	void *st = cc_new(dcqcn, &p);
	const uint64_t r0 = 4 * D_RATE0;
	uint64_t t = 1000 * US;

	ack(dcqcn, st, t, 0, BASE, false);
	dcqcn->on_loss(st, t, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), r0 / 2);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), r0);
	assert_int_equal(described(dcqcn, st, "alpha_ppm"), PPM);
	dcqcn->on_loss(st, t + BASE - 1, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), r0 / 2);
	dcqcn->on_loss(st, t + BASE, true);
	assert_int_equal(W(dcqcn, st), CHUNK);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), r0 / 4);
	ack(dcqcn, st, t + BASE + 4 * D_T, 0, BASE, false);
	assert_true(W(dcqcn, st) > CHUNK);
	assert_true(W(dcqcn, st) < 4 * CHUNK);
	assert_int_equal(described(dcqcn, st, "timeouts"), 1);
	free(st);
}

/* A clock that steps back replays no timer periods and sends no CNP; a
 * long quiet gap replays a bounded number. */
static void test_dcqcn_clock_stepping_back_and_long_gaps(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(dcqcn, &p);
	uint64_t t = 1000 * US;

	ack(dcqcn, st, t, 0, BASE, true);
	ack(dcqcn, st, t - 900 * US, 0, BASE, true);
	ack(dcqcn, st, 0, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 / 2);
	assert_int_equal(described(dcqcn, st, "cnps"), 1);
	ack(dcqcn, st, t + D_T, 0, BASE, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), D_RATE0 * 3 / 4);
	/* an hour later: recovered past the old rate, bounded by the cap */
	ack(dcqcn, st, t + 3600ull * 1000000000ull, 0, BASE, false);
	assert_true(described(dcqcn, st, "rate_Bps") > D_RATE0);
	assert_true(W(dcqcn, st) <= 1024 * CHUNK);
	assert_int_equal(described(dcqcn, st, "alpha_ppm"), 0);
	free(st);
}

/* Marks before any RTT is known still cut (the provisional window). */
static void test_dcqcn_before_any_rtt(void **state)
{
	struct cc_params p = params();
	p.base_rtt_ns = 0;
	void *st = cc_new(dcqcn, &p);

	ack(dcqcn, st, 1000 * US, CHUNK, 0, true);
	assert_int_equal(W(dcqcn, st), 2 * CHUNK);
	ack(dcqcn, st, 1001 * US, CHUNK, 20 * US, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), 2ull * CHUNK * 1000000000ull / (20 * US));
	assert_int_equal(W(dcqcn, st), 2 * CHUNK);
	free(st);
}

/* With the line rate known a flow starts at it, as the NIC does (not at
 * init_window per RTT), a mark cuts from there, and recovery never passes
 * it. */
static void test_dcqcn_starts_at_line_rate(void **state)
{
	struct cc_params p = params();
	const uint64_t line = 100000000000ull / 8;     /* 100 Gbit/s in bytes/s */
	uint64_t now = 1000 * US;
	void *st;

	p.line_rate_bps = 100000000000ull;
	p.init_window = 16 * CHUNK;                    /* 4x the BDP: ignored */
	st = cc_new(dcqcn, &p);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), line);
	assert_int_equal(W(dcqcn, st), line * BASE / 1000000000ull);   /* one BDP */
	ack(dcqcn, st, now, 0, BASE, true);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), line / 2);
	assert_int_equal(described(dcqcn, st, "target_rate_Bps"), line);
	for (int i = 0; i < 200; i++) {
		ack(dcqcn, st, now += D_T, D_B, BASE, false);
		assert_true(described(dcqcn, st, "rate_Bps") <= line);
		assert_true(described(dcqcn, st, "target_rate_Bps") <= line);
	}
	assert_int_equal(described(dcqcn, st, "rate_Bps"), line);
	free(st);

	/* learned RTT: line rate from the first sample on */
	p.base_rtt_ns = 0;
	st = cc_new(dcqcn, &p);
	assert_int_equal(W(dcqcn, st), 16 * CHUNK);    /* no RTT yet */
	ack(dcqcn, st, now, CHUNK, 20 * US, false);
	assert_int_equal(described(dcqcn, st, "rate_Bps"), line);
	assert_int_equal(W(dcqcn, st), line * 20 * US / 1000000000ull);
	free(st);

	/* unknown (0): the old start, init_window per RTT */
	p.line_rate_bps = 0;
	p.base_rtt_ns = BASE;
	st = cc_new(dcqcn, &p);
	assert_int_equal(W(dcqcn, st), 16 * CHUNK);
	free(st);
}

/* A standing queue (200 us over a 5 us lowest RTT) marked every 60 us
 * for 120 ms, then a timeout: the window ends at min_window. The rate's
 * limits were taken at the lowest RTT and the window made with up to the
 * lowest RTT plus the allowance, so the floor was 11 chunks here; and one
 * 1 ns sample (a zero RTT counts as 1) made the least rate a window of
 * max_window, so that marks and timeouts changed nothing. */
static void test_dcqcn_floor_is_min_window_whatever_the_lowest_rtt(void **state)
{
	const uint64_t firsts[] = { 5 * US, 1 };

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		struct cc_params p = params();
		uint64_t now = 1000 * US;
		void *st;

		p.base_rtt_ns = 0;
		st = cc_new(dcqcn, &p);
		ack(dcqcn, st, now, CHUNK, firsts[k], false);
		for (int i = 0; i < 2000; i++)
			ack(dcqcn, st, now += 60 * US, CHUNK, 200 * US, true);
		assert_int_equal(W(dcqcn, st), CHUNK);
		dcqcn->on_loss(st, now + 1, true);
		assert_int_equal(W(dcqcn, st), CHUNK);
		free(st);
	}
}

/* The window is rate x smoothed RTT, but the RTT counts for at most the
 * lowest RTT plus the delay allowance: a queue cannot widen the window at a
 * given rate. Before, after a timeout under incast the floor rate (one
 * chunk per lowest RTT) times a 500 us smoothed RTT was a 50-chunk window,
 * and one channel lost a packet 12 times (docs/results e1). */
static void test_dcqcn_window_ignores_queueing_past_the_allowance(void **state)
{
	struct cc_params p = params();
	void *st;
	uint64_t now = 1000 * US;

	p.delay_slack_ns = 5 * US;
	st = cc_new(dcqcn, &p);
	for (int i = 0; i < 100; i++)
		ack(dcqcn, st, now += US, 0, 500 * US, false);
	assert_true(described(dcqcn, st, "srtt_ns") > 400 * US);
	assert_int_equal(W(dcqcn, st), D_RATE0 * (BASE + 5 * US) / 1000000000ull);
	dcqcn->on_loss(st, now, true);
	/* the floor is min_window itself: the rate's limits are taken at the
	 * RTT the window is made with (it was 1.5 chunks here, 11 with the
	 * default allowance and a 5 us lowest RTT) */
	assert_int_equal(W(dcqcn, st), CHUNK);
	/* below the allowance the smoothed RTT is used as before */
	free(st);
	st = cc_new(dcqcn, &p);
	for (int i = 0; i < 100; i++)
		ack(dcqcn, st, now += US, 0, BASE + 2 * US, false);
	assert_int_equal(W(dcqcn, st), D_RATE0 * described(dcqcn, st, "srtt_ns") / 1000000000ull);
	free(st);
}

/* --- hint --------------------------------------------------------------- */

static const struct cc_ops *const hint = &cc_hint_ops;

static void test_hint_slow_start_when_unmarked(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(hint, &p);
	uint64_t now = 1000 * US;

	for (int i = 1; i <= 8; i++) {
		ack(hint, st, now += 3 * US, CHUNK, BASE, false);
		assert_int_equal(W(hint, st), (4 + i) * (uint64_t)CHUNK);
	}
	assert_int_equal(described(hint, st, "cuts"), 0);
	free(st);
}

/* One ECN bit per ACK: D is the round's marked-byte fraction, alpha its
 * EWMA (gain 1/16, starting at 1), and the cut is alpha / 2, once per RTT. */
static void test_hint_ecn_fraction_drives_a_dctcp_cut(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(hint, &p);
	uint64_t t = 1000 * US, w1, w2;

	/* round 1: everything marked: D = 1, alpha = 1, halve */
	ack(hint, st, t, 1000000, BASE, true);
	assert_int_equal(W(hint, st), 100 * CHUNK);     /* not before the round ends */
	ack(hint, st, t + BASE, 1000000, BASE, true);
	w1 = 50 * (uint64_t)CHUNK;
	assert_int_equal(W(hint, st), w1);
	assert_int_equal(described(hint, st, "degree_ppm"), PPM);
	assert_int_equal(described(hint, st, "alpha_ppm"), PPM);
	/* round 2: half the bytes marked: alpha 1 - 0.5/16 = 0.96875 */
	ack(hint, st, t + BASE + 1, 1000000, BASE, true);
	ack(hint, st, t + 2 * BASE, 1000000, BASE, false);
	assert_int_equal(described(hint, st, "degree_ppm"), PPM / 2);
	assert_int_equal(described(hint, st, "alpha_ppm"), 968750);
	w2 = w1 - w1 * 968750 / (2 * PPM);
	assert_int_equal(W(hint, st), w2);
	/* round 3: clean: alpha decays, no cut, additive growth */
	ack(hint, st, t + 3 * BASE, 1000000, BASE, false);
	assert_int_equal(described(hint, st, "degree_ppm"), 0);
	assert_int_equal(described(hint, st, "alpha_ppm"), 968750 - (968750 >> 4));
	assert_int_equal(W(hint, st), w2 + CHUNK);
	assert_int_equal(described(hint, st, "cuts"), 2);
	free(st);
}

/* With an in-band degree the cut is D / 2 of this round, no EWMA: the
 * window follows the reported congestion in proportion. */
static void test_hint_in_band_degree_is_proportional(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	const uint64_t w0 = 100 * (uint64_t)CHUNK;
	const uint32_t degrees[] = { 200000, 600000, 1000000, 4000000 };
	const uint64_t expect[] = { w0 - w0 / 10, w0 - w0 * 3 / 10, w0 / 2, w0 / 2 };

	for (size_t i = 0; i < sizeof(degrees) / sizeof(degrees[0]); i++) {
		void *st = cc_new(hint, &p);

		ack_full(hint, st, 1000 * US, 1000000, BASE, false, degrees[i]);
		ack_full(hint, st, 1000 * US + BASE, 1000000, BASE, false, degrees[i]);
		assert_int_equal(W(hint, st), expect[i]);
		assert_int_equal(described(hint, st, "degree_ppm"),
				 degrees[i] < PPM ? degrees[i] : PPM);
		free(st);
	}
}

/* ACKs without a hint fall back to their ECN bit in the same round. */
static void test_hint_mixes_hints_and_marks(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(hint, &p);

	ack_full(hint, st, 1000 * US, 1000000, BASE, false, 200000);
	ack_full(hint, st, 1000 * US + 1, 1000000, BASE, true, 0);
	ack_full(hint, st, 1000 * US + BASE, 2000000, BASE, false, 0);
	/* (0.2 + 1 + 0) / 4 MB */
	assert_int_equal(described(hint, st, "degree_ppm"), 300000);
	assert_int_equal(described(hint, st, "cuts"), 1);
	free(st);
}

static void test_hint_loss_and_timeout(void **state)
{
	struct cc_params p = params();
	p.init_window = 64 * CHUNK;
	void *st = cc_new(hint, &p);
	uint64_t t = 1000 * US;

	ack(hint, st, t, 0, BASE, false);              /* srtt 10 us */
	hint->on_loss(st, t, false);
	assert_int_equal(W(hint, st), 32 * CHUNK);
	hint->on_loss(st, t + BASE - 1, false);
	hint->on_loss(st, t - 1, false);               /* clock stepped back */
	assert_int_equal(W(hint, st), 32 * CHUNK);
	hint->on_loss(st, t + BASE, true);
	assert_int_equal(W(hint, st), CHUNK);
	assert_int_equal(described(hint, st, "ssthresh"), 16 * CHUNK);
	/* slow start back to half the old window */
	for (int i = 0; i < 20; i++)
		ack(hint, st, t + BASE + 1 + i, CHUNK, BASE, false);
	assert_int_equal(W(hint, st), 16 * CHUNK);
	free(st);
}

/* Marks in the round a timeout interrupts were answered by the timeout:
 * the first ACK after it must not close that round with a cut that ends
 * the slow start back to half the old window. */
static void test_hint_timeout_drops_the_marked_round(void **state)
{
	struct cc_params p = params();
	p.init_window = 64 * CHUNK;
	void *st = cc_new(hint, &p);
	uint64_t t = 1000 * US;

	ack(hint, st, t, CHUNK, BASE, true);           /* srtt 10 us, round marked */
	hint->on_loss(st, t + 1, true);
	assert_int_equal(W(hint, st), CHUNK);
	assert_int_equal(described(hint, st, "ssthresh"), 32 * CHUNK);
	/* the resend's ACK, an RTO later, unmarked */
	for (int i = 0; i < 40; i++)
		ack(hint, st, t + 1000 * US + i, CHUNK, BASE, false);
	assert_int_equal(described(hint, st, "ssthresh"), 32 * CHUNK);
	assert_int_equal(W(hint, st), 32 * CHUNK);
	free(st);
}

/* After a spurious timeout the originals' ACKs come late, some marked:
 * their RTT samples date the data before the timeout, which answered
 * those marks, so they cut nothing and the slow start goes on; a mark on
 * data sent after it cuts. */
static void test_hint_marks_from_before_a_timeout_are_answered(void **state)
{
	struct cc_params p = params();
	p.init_window = 64 * CHUNK;
	void *st = cc_new(hint, &p);
	uint64_t t = 1000 * US, late = t + 100 * US;

	ack(hint, st, t, 0, BASE, false);              /* srtt 10 us */
	hint->on_loss(st, t + 1, true);
	assert_int_equal(described(hint, st, "ssthresh"), 32 * CHUNK);
	for (int i = 0; i < 40; i++)                   /* sent at t, marked */
		ack(hint, st, late + (uint64_t)i * BASE, CHUNK, late + (uint64_t)i * BASE - t, true);
	/* an unmarked ACK well past any round those could have opened */
	ack(hint, st, t + 5000 * US, CHUNK, BASE, false);
	assert_int_equal(described(hint, st, "ssthresh"), 32 * CHUNK);
	assert_int_equal(described(hint, st, "cuts"), 1);
	ack(hint, st, t + 10000 * US, CHUNK, BASE, true);   /* closes its round, marked */
	assert_int_equal(described(hint, st, "cuts"), 2);
	free(st);
}

/* A clock that steps back keeps the round open: no second decision. */
static void test_hint_clock_stepping_back(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(hint, &p);
	uint64_t t = 1000 * US;

	ack(hint, st, t, 1000000, BASE, true);
	ack(hint, st, t + BASE, 1000000, BASE, true);
	assert_int_equal(described(hint, st, "cuts"), 1);
	ack(hint, st, t - 500 * US, 1000000, BASE, true);
	ack(hint, st, 0, 1000000, BASE, true);
	assert_int_equal(described(hint, st, "cuts"), 1);
	ack(hint, st, t + 2 * BASE, 1000000, BASE, true);
	assert_int_equal(described(hint, st, "cuts"), 2);
	free(st);
}

/* --- none --------------------------------------------------------------- */

static void test_none_is_max_window_always(void **state)
{
	const struct cc_ops *o = &cc_none_ops;
	struct cc_params p = params();
	void *st = cc_new(o, &p);

	assert_int_equal(W(o, st), 1024 * CHUNK);
	ack(o, st, 1, CHUNK, 10000 * US, true);
	ack_full(o, st, 2, CHUNK, 0, false, 1000000);
	o->on_loss(st, 3, false);
	o->on_loss(st, 4, true);
	assert_int_equal(W(o, st), 1024 * CHUNK);
	assert_int_equal(described(o, st, "losses"), 1);
	assert_int_equal(described(o, st, "timeouts"), 1);
	free(st);
}

/* --- eqds ---------------------------------------------------------------- */

/* The sender's half of EQDS only sizes the speculative burst: two chunks,
 * within the bounds, whatever the signals; it counts what it sees. */
static void test_eqds_speculates_two_chunks_and_ignores_signals(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(&cc_eqds_ops, &p);
	uint64_t now = 1000 * US;

	assert_true(cc_eqds_ops.flags & CC_F_CREDIT);
	assert_int_equal(W(&cc_eqds_ops, st), 2 * CHUNK);
	ack(&cc_eqds_ops, st, now += BASE, CHUNK, 40 * BASE, true);
	cc_eqds_ops.on_loss(st, now, false);
	cc_eqds_ops.on_loss(st, now, true);
	assert_int_equal(W(&cc_eqds_ops, st), 2 * CHUNK);
	assert_int_equal(described(&cc_eqds_ops, st, "cwnd"), 2 * CHUNK);
	assert_int_equal(described(&cc_eqds_ops, st, "ecn"), 1);
	assert_int_equal(described(&cc_eqds_ops, st, "losses"), 1);
	assert_int_equal(described(&cc_eqds_ops, st, "timeouts"), 1);
	free(st);
	/* a max_window below two chunks bounds it */
	p.max_window = CHUNK;
	st = cc_new(&cc_eqds_ops, &p);
	assert_int_equal(W(&cc_eqds_ops, st), CHUNK);
	free(st);
}

/* --- every module: growth, bounds, overflow, determinism ---------------- */

/* Clean ACKs at the base RTT, a window's worth per RTT: every controller
 * but none (already at max) grows. */
static void test_all_grow_when_uncongested(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;
		struct cc_params p = params();
		void *st = cc_new(o, &p);
		uint64_t now = 1000 * US, w0 = W(o, st);

		for (int k = 0; k < 1000; k++)
			ack(o, st, now += BASE, W(o, st), BASE, false);
		if (o == &cc_none_ops)
			assert_int_equal(W(o, st), p.max_window);
		else if (o->flags & CC_F_CREDIT)       /* the speculative window is fixed */
			assert_int_equal(W(o, st), w0);
		else if (W(o, st) <= w0)
			fail_msg("%s did not grow: %llu -> %llu", o->name,
				 (unsigned long long)w0, (unsigned long long)W(o, st));
		free(st);
	}
}

/* A timeout never leaves the window larger, and for every controller
 * but none it is a decrease. */
static void test_all_timeout_shrinks(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;
		struct cc_params p = params();
		p.init_window = 64 * CHUNK;
		void *st = cc_new(o, &p);
		uint64_t w;

		ack(o, st, 1000 * US, 0, BASE, false);
		w = W(o, st);
		o->on_loss(st, 2000 * US, true);
		if (o == &cc_none_ops || (o->flags & CC_F_CREDIT))
			assert_int_equal(W(o, st), w);
		else if (W(o, st) >= w)
			fail_msg("%s: timeout left %llu -> %llu", o->name,
				 (unsigned long long)w, (unsigned long long)W(o, st));
		free(st);
	}
}

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return r->s >> 17;
}

/* Values chosen to hit edges: zero, one, small, typical, huge, the end. */
static uint64_t pick(struct rng *r, uint64_t typical)
{
	switch (rnd(r) % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return UINT64_MAX;
	case 3: return UINT64_MAX - rnd(r) % 1000;
	case 4: return rnd(r) << 17 | rnd(r);
	default: return typical ? rnd(r) % typical : 0;
	}
}

struct ev {
	int kind;                      /* 0: ack, 1: loss, 2: timeout */
	uint64_t now;
	struct cc_ack a;
};

static struct ev gen(struct rng *r, uint64_t *now, bool wild)
{
	struct ev e = { 0 };
	uint64_t x = rnd(r);

	if (x % 50 == 0)
		*now -= *now < 200 * US ? *now : rnd(r) % (200 * US);   /* backwards */
	else if (wild && x % 500 == 1)
		*now = UINT64_MAX - rnd(r) % (100 * US);                /* end of the clock */
	else if (*now < UINT64_MAX - 100 * US)
		*now += rnd(r) % (30 * US);
	e.now = *now;
	x = rnd(r) % 20;
	e.kind = x == 0 ? 1 : x == 1 ? 2 : 0;
	e.a.now_ns = *now;
	if (wild) {
		e.a.acked_bytes = pick(r, 4 * CHUNK);
		e.a.rtt_ns = pick(r, 600 * US);
		e.a.inflight_bytes = pick(r, 64 * CHUNK);
		e.a.hint_ppm = rnd(r) % 4 ? 0 : (uint32_t)pick(r, 2000000);
	} else {
		e.a.acked_bytes = rnd(r) % (4 * CHUNK);
		e.a.rtt_ns = rnd(r) % 4 ? BASE + rnd(r) % (300 * US) : 0;
		e.a.inflight_bytes = rnd(r) % (64 * CHUNK);
		e.a.hint_ppm = rnd(r) % 4 ? 0 : (uint32_t)(rnd(r) % 1000001);
	}
	e.a.ecn = rnd(r) % 5 == 0;
	return e;
}

static void apply(const struct cc_ops *o, void *st, const struct ev *e)
{
	if (e->kind == 0)
		o->on_ack(st, &e->a);
	else
		o->on_loss(st, e->now, e->kind == 2);
}

static void check_bounds(const struct cc_ops *o, const void *st, uint64_t lo, uint64_t hi,
			 int step)
{
	uint64_t w = W(o, st);

	if (w < lo || w > hi)
		fail_msg("%s: step %d: window %llu outside [%llu, %llu]", o->name, step,
			 (unsigned long long)w, (unsigned long long)lo, (unsigned long long)hi);
	assert_int_equal(described(o, st, "cwnd"), w);
}

static const struct cc_params bound_cases[] = {
	{ .mss = 4096, .chunk = CHUNK, .init_window = 4 * CHUNK, .min_window = CHUNK,
	  .max_window = 64 * CHUNK, .base_rtt_ns = BASE },
	{ .mss = 4096, .chunk = CHUNK, .init_window = 4 * CHUNK, .min_window = CHUNK,
	  .max_window = 64 * CHUNK },                  /* learn the RTT */
	{ .mss = 1500, .chunk = 1500, .init_window = 0, .min_window = 0,
	  .max_window = 1500, .delay_slack_ns = 1 },   /* min == max */
	{ .mss = 0, .chunk = 0, .init_window = UINT64_MAX, .min_window = 0,
	  .max_window = UINT64_MAX, .base_rtt_ns = UINT64_MAX,
	  .delay_slack_ns = UINT64_MAX },              /* everything absurd */
	{ .mss = 9000, .chunk = UINT32_MAX, .init_window = 1ull << 40, .min_window = 1ull << 33,
	  .max_window = 1ull << 50, .base_rtt_ns = 1 },
};

/* Under random events, sane and absurd, every window stays within
 * [min, max] as resolved (min at least a chunk, max at least min). */
static void test_all_stay_within_bounds(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		for (size_t c = 0; c < sizeof(bound_cases) / sizeof(bound_cases[0]); c++) {
			const struct cc_ops *o = modules[i].ops;
			const struct cc_params *p = &bound_cases[c];
			uint64_t chunk = p->chunk ? p->chunk : p->mss ? p->mss : 1;
			uint64_t lo = p->min_window > chunk ? p->min_window : chunk;
			uint64_t hi = p->max_window > lo ? p->max_window : lo;
			struct rng r = { 0x5eed0000 + c };
			void *st = cc_new(o, p);
			uint64_t now = 1000 * US;

			check_bounds(o, st, lo, hi, -1);
			for (int k = 0; k < 20000; k++) {
				struct ev e = gen(&r, &now, k % 2);

				apply(o, st, &e);
				check_bounds(o, st, lo, hi, k);
			}
			free(st);
		}
	}
}

/* Maximal inputs at every entry point: saturate, never wrap to a small
 * window. */
static void test_all_survive_maximal_inputs(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;
		struct cc_params p = params();
		const uint64_t max = 1ull << 40;
		void *st;

		p.max_window = max;
		p.init_window = max;
		st = cc_new(o, &p);
		ack_full(o, st, UINT64_MAX, UINT64_MAX, BASE, false, 0);
		ack_full(o, st, UINT64_MAX, UINT64_MAX, 0, false, 0);
		check_bounds(o, st, CHUNK, max, 0);
		/* timely: an RTT sample at BASE is its T_low band; eqds: a fixed
		 * speculative window whatever the inputs */
		if (o != &cc_timely_ops && !(o->flags & CC_F_CREDIT))
			assert_true(W(o, st) >= max / 2);
		ack_full(o, st, UINT64_MAX, UINT64_MAX, UINT64_MAX, true, UINT32_MAX);
		check_bounds(o, st, CHUNK, max, 1);
		o->on_loss(st, UINT64_MAX, false);
		o->on_loss(st, UINT64_MAX, true);
		check_bounds(o, st, CHUNK, max, 2);
		for (int k = 0; k < 100; k++)
			ack_full(o, st, UINT64_MAX, UINT64_MAX, UINT64_MAX, k & 1, UINT32_MAX);
		check_bounds(o, st, CHUNK, max, 3);
		free(st);
	}
}

/* Same parameters, same events: same windows and same descriptions, bit
 * for bit, whatever the memory held before init. */
static void test_all_deterministic(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;
		struct cc_params p = params();
		void *a = cc_new_fill(o, &p, 0xa5), *b = cc_new_fill(o, &p, 0x5a);
		struct rng r = { 42 };
		uint64_t now = 1000 * US;

		for (int k = 0; k < 5000; k++) {
			struct ev e = gen(&r, &now, k % 7 == 0);
			const char *na[32], *nb[32];
			uint64_t va[32], vb[32];
			int ca, cb;

			apply(o, a, &e);
			apply(o, b, &e);
			assert_int_equal(W(o, a), W(o, b));
			ca = o->describe(a, na, va, 32);
			cb = o->describe(b, nb, vb, 32);
			assert_int_equal(ca, cb);
			for (int j = 0; j < ca; j++) {
				assert_string_equal(na[j], nb[j]);
				assert_int_equal(va[j], vb[j]);
			}
		}
		free(a);
		free(b);
	}
}

/* describe(): "cwnd" first and equal to window(); a short buffer gets a
 * prefix and nothing past it; no buffer, nothing. */
static void test_all_describe(void **state)
{
	for (size_t i = 0; i < NMODULES; i++) {
		const struct cc_ops *o = modules[i].ops;
		struct cc_params p = params();
		void *st = cc_new(o, &p);
		const char *names[32];
		uint64_t values[32];
		int n;

		ack(o, st, 1000 * US, CHUNK, 20 * US, false);
		n = o->describe(st, names, values, 32);
		/* all of it must fit what ucclctl channels carries */
		assert_true(n >= 1 && n <= ENGINE_CC_VARS);
		assert_string_equal(names[0], "cwnd");
		assert_int_equal(values[0], W(o, st));
		for (int j = 0; j < n; j++)
			for (int k = j + 1; k < n; k++)
				assert_string_not_equal(names[j], names[k]);
		names[1] = "sentinel";
		assert_int_equal(o->describe(st, names, values, 1), 1);
		assert_string_equal(names[1], "sentinel");
		assert_int_equal(o->describe(st, names, values, 0), 0);
		assert_int_equal(o->describe(st, names, values, -1), 0);
		assert_int_equal(o->describe(st, NULL, values, 32), 0);
		free(st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_each_module),
		cmocka_unit_test(test_names_lists_each_module),
		cmocka_unit_test(test_unknown_is_null),
		cmocka_unit_test(test_cc_ack_layout_unchanged),
		cmocka_unit_test(test_swift_grows_by_a_chunk_per_rtt_below_target),
		cmocka_unit_test(test_swift_target_scales_with_window),
		cmocka_unit_test(test_swift_late_comer_target_comes_down),
		cmocka_unit_test(test_swift_decrease_is_proportional_once_per_rtt),
		cmocka_unit_test(test_swift_cut_size_follows_the_excess),
		cmocka_unit_test(test_swift_ignores_ecn),
		cmocka_unit_test(test_swift_loss_and_timeouts),
		cmocka_unit_test(test_swift_clock_stepping_back),
		cmocka_unit_test(test_swift_huge_values),
		cmocka_unit_test(test_timely_window_is_rate_times_min_rtt),
		cmocka_unit_test(test_timely_below_t_low_adds_delta),
		cmocka_unit_test(test_timely_recovers_from_outlier_min_rtt),
		cmocka_unit_test(test_timely_above_t_high_cuts),
		cmocka_unit_test(test_timely_gradient_band),
		cmocka_unit_test(test_timely_gradient_cut_is_bounded),
		cmocka_unit_test(test_timely_ignores_ecn),
		cmocka_unit_test(test_timely_loss_and_timeout),
		cmocka_unit_test(test_timely_before_any_rtt),
		cmocka_unit_test(test_timely_rate_is_bounded_by_the_window),
		cmocka_unit_test(test_dcqcn_mark_cuts_by_alpha_half),
		cmocka_unit_test(test_dcqcn_alpha_decays_and_softens_cuts),
		cmocka_unit_test(test_dcqcn_timer_recovery),
		cmocka_unit_test(test_dcqcn_byte_counter_and_hyper_increase),
		cmocka_unit_test(test_dcqcn_grows_to_the_cap),
		cmocka_unit_test(test_dcqcn_floor),
		cmocka_unit_test(test_dcqcn_loss_and_timeout),
		cmocka_unit_test(test_dcqcn_clock_stepping_back_and_long_gaps),
		cmocka_unit_test(test_dcqcn_before_any_rtt),
		cmocka_unit_test(test_dcqcn_starts_at_line_rate),
		cmocka_unit_test(test_dcqcn_window_ignores_queueing_past_the_allowance),
		cmocka_unit_test(test_dcqcn_floor_is_min_window_whatever_the_lowest_rtt),
		cmocka_unit_test(test_hint_slow_start_when_unmarked),
		cmocka_unit_test(test_hint_ecn_fraction_drives_a_dctcp_cut),
		cmocka_unit_test(test_hint_in_band_degree_is_proportional),
		cmocka_unit_test(test_hint_mixes_hints_and_marks),
		cmocka_unit_test(test_hint_loss_and_timeout),
		cmocka_unit_test(test_hint_timeout_drops_the_marked_round),
		cmocka_unit_test(test_hint_marks_from_before_a_timeout_are_answered),
		cmocka_unit_test(test_hint_clock_stepping_back),
		cmocka_unit_test(test_none_is_max_window_always),
		cmocka_unit_test(test_eqds_speculates_two_chunks_and_ignores_signals),
		cmocka_unit_test(test_all_grow_when_uncongested),
		cmocka_unit_test(test_all_timeout_shrinks),
		cmocka_unit_test(test_all_stay_within_bounds),
		cmocka_unit_test(test_all_survive_maximal_inputs),
		cmocka_unit_test(test_all_deterministic),
		cmocka_unit_test(test_all_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
