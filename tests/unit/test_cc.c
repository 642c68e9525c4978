/* SPDX-License-Identifier: MIT */
/*
 * cc: the registry and the default "window" controller, driven one event at
 * a time with made-up times: slow start then additive increase, one halving
 * per RTT of losses, a timeout's collapse and recovery, delay and ECN
 * back-off at most once per RTT, the window's clamps, no overflow at 2^40,
 * and what describe() reports.
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

#define CHUNK   32768u
#define US      1000ull
#define BASE    (10 * US)              /* unloaded RTT in most tests */
#define THRESH  (2 * BASE + 50 * US)   /* the documented delay threshold */

static struct cc_params params(void)
{
	return (struct cc_params){
		.mss = 4096,
		.chunk = CHUNK,
		.init_window = 4 * CHUNK,
		.min_window = CHUNK,
		.max_window = 1024 * CHUNK,
		.base_rtt_ns = 0,
	};
}

static void *cc_new(const struct cc_params *p)
{
	void *st = malloc(cc_window_ops.state_size);

	assert_non_null(st);
	memset(st, 0xa5, cc_window_ops.state_size);  /* init must set everything */
	cc_window_ops.init(st, p);
	return st;
}

static uint64_t W(const void *st)
{
	return cc_window_ops.window(st);
}

static void ack(void *st, uint64_t now, uint64_t acked, uint64_t rtt, bool ecn)
{
	struct cc_ack a = { .now_ns = now, .acked_bytes = acked, .rtt_ns = rtt, .ecn = ecn };

	cc_window_ops.on_ack(st, &a);
}

static uint64_t described(const void *st, const char *name)
{
	const char *names[16];
	uint64_t values[16];
	int n = cc_window_ops.describe(st, names, values, 16);

	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	fail_msg("describe() has no \"%s\"", name);
	return 0;
}

/* --- registry ----------------------------------------------------------- */

static void test_find_window_by_name(void **state)
{
	assert_ptr_equal(cc_find("window"), &cc_window_ops);
	assert_string_equal(cc_window_ops.name, "window");
}

static void test_find_unknown_or_null_is_null(void **state)
{
	assert_null(cc_find("swift-ish"));
	assert_null(cc_find("Window"));
	assert_null(cc_find(""));
	assert_null(cc_find(NULL));
}

/* Every name in the list resolves, and the default is in it. */
static void test_names_list_resolves(void **state)
{
	char buf[256];
	char *save = NULL;
	int count = 0;
	bool has_window = false;

	assert_true(strlen(cc_names()) < sizeof(buf));
	strcpy(buf, cc_names());
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const struct cc_ops *o = cc_find(t);

		assert_non_null(o);
		assert_string_equal(o->name, t);
		has_window |= strcmp(t, "window") == 0;
		count++;
	}
	assert_true(count >= 1);
	assert_true(has_window);
}

static void test_ops_table_is_complete(void **state)
{
	const struct cc_ops *o = &cc_window_ops;

	assert_true(o->state_size > 0);
	assert_non_null(o->init);
	assert_non_null(o->on_ack);
	assert_non_null(o->on_loss);
	assert_non_null(o->window);
	assert_non_null(o->describe);
}

/* --- growth ------------------------------------------------------------- */

static void test_starts_at_init_window(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(&p);

	assert_int_equal(W(st), 4 * CHUNK);
	free(st);
}

/* Before any back-off, each acked byte adds a byte: the window doubles per
 * round trip. */
static void test_slow_start_grows_by_acked_bytes(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(&p);
	uint64_t now = 0;

	for (int i = 0; i < 8; i++) {
		now += BASE;
		ack(st, now, CHUNK, BASE, false);
		assert_int_equal(W(st), (4 + i + 1) * (uint64_t)CHUNK);
	}
	/* an ACK batch with no RTT sample still grows */
	ack(st, now + 1, 3 * CHUNK, 0, false);
	assert_int_equal(W(st), 15 * (uint64_t)CHUNK);
	free(st);
}

/* After the first back-off: one chunk per window's worth of acked bytes,
 * carried across small batches. */
/* x0.9, as the module computes it without overflow */
static uint64_t x09(uint64_t w)
{
	return w / 10 * 9 + w % 10 * 9 / 10;
}

static void test_after_loss_growth_is_linear(void **state)
{
	struct cc_params p = params();
	p.init_window = 64 * CHUNK;
	void *st = cc_new(&p);
	uint64_t now = 0, w;

	ack(st, now += BASE, CHUNK, BASE, false);      /* srtt = BASE */
	cc_window_ops.on_loss(st, now += 1, false);    /* RTT at its floor: x0.9 */
	w = W(st);
	assert_int_equal(w, x09(65 * (uint64_t)CHUNK));

	now += 2 * BASE;                               /* past the post-cut hold */
	/* one window of acks in 1/4-chunk pieces: exactly one chunk more */
	for (uint64_t acked = 0; acked + CHUNK / 4 <= w; acked += CHUNK / 4)
		ack(st, now += 1, CHUNK / 4, BASE, false);
	assert_int_equal(W(st), w + CHUNK);

	/* acking 4 windows' worth at once adds about 4 chunks, not 4 windows */
	w = W(st);
	ack(st, now += 1, 4 * w, BASE, false);
	assert_true(W(st) >= w + 3 * CHUNK);
	assert_true(W(st) <= w + 4 * CHUNK);

	/* the part of a batch past a step counts toward the next one */
	w = W(st);
	ack(st, now += 1, w + w / 2, BASE, false);    /* one step, w/2 left over */
	assert_int_equal(W(st), w + CHUNK);
	ack(st, now += 1, w - w / 2 + CHUNK, BASE, false);
	assert_int_equal(W(st), w + 2 * CHUNK);
	free(st);
}

/* --- loss --------------------------------------------------------------- */

static void test_several_losses_in_one_rtt_cut_once(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(&p);
	uint64_t t;

	ack(st, 1000 * US, CHUNK, BASE, false);        /* srtt = 10 us, at its floor */
	t = 1001 * US;
	cc_window_ops.on_loss(st, t, false);
	assert_int_equal(W(st), x09(101 * (uint64_t)CHUNK));
	cc_window_ops.on_loss(st, t + 1 * US, false);
	cc_window_ops.on_loss(st, t + 5 * US, false);
	cc_window_ops.on_loss(st, t + BASE - 1, false);
	assert_int_equal(W(st), x09(101 * (uint64_t)CHUNK));
	/* a loss one srtt later is a new event */
	cc_window_ops.on_loss(st, t + BASE, false);
	assert_int_equal(W(st), x09(x09(101 * (uint64_t)CHUNK)));
	assert_int_equal(described(st, "cuts"), 2);
	free(st);
}

/* A loss while the RTT shows a queue is congestion: the window halves. With
 * the RTT at its floor the same loss is taken as random: x0.9. */
static void test_loss_with_a_queue_halves_without_one_backs_off_gently(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US, w;

	ack(st, t, 0, BASE, false);                    /* min RTT and srtt: BASE */
	/* srtt climbs past the threshold (the delay cut comes with it) */
	for (int i = 0; i < 40; i++)
		ack(st, t += 1 * US, 0, 10 * THRESH, false);
	assert_true(described(st, "srtt_ns") > THRESH);
	w = W(st);
	cc_window_ops.on_loss(st, t += 1 * US, false);
	assert_int_equal(W(st), w / 2);
	free(st);
}

/* Before any RTT sample, the configured base RTT is the hold. */
static void test_base_rtt_is_the_hold_before_any_sample(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);

	cc_window_ops.on_loss(st, 1000 * US, false);
	cc_window_ops.on_loss(st, 1000 * US + BASE - 1, false);
	assert_int_equal(W(st), 50 * CHUNK);
	cc_window_ops.on_loss(st, 1000 * US + BASE, false);
	assert_int_equal(W(st), 25 * CHUNK);
	free(st);
}

/* A timeout drops to the floor, slow-starts (doubling) up to half the old
 * window, then grows by a chunk per window. */
static void test_timeout_collapses_then_slow_starts_to_ssthresh(void **state)
{
	struct cc_params p = params();
	p.init_window = 64 * CHUNK;
	void *st = cc_new(&p);
	uint64_t now = 1000 * US;

	ack(st, now, CHUNK, BASE, false);              /* 65 chunks, srtt 10 us */
	cc_window_ops.on_loss(st, now += 1, true);
	assert_int_equal(W(st), CHUNK);
	assert_int_equal(described(st, "ssthresh"), 65 * (uint64_t)CHUNK / 2);
	assert_int_equal(described(st, "timeouts"), 1);

	/* slow start begins at once, within the same RTT */
	ack(st, now += 1, CHUNK, BASE, false);
	assert_int_equal(W(st), 2 * CHUNK);
	/* a loss from the same episode does not cut ssthresh again */
	cc_window_ops.on_loss(st, now += 1, false);
	assert_int_equal(W(st), 2 * CHUNK);
	for (int i = 0; i < 5; i++)                   /* 2, 4, 8, 16, 32, 32.5 */
		ack(st, now += 1, W(st), BASE, false);
	assert_int_equal(W(st), 65 * (uint64_t)CHUNK / 2);  /* capped at ssthresh */
	/* from there on, linear */
	ack(st, now += 1, W(st), BASE, false);
	assert_int_equal(W(st), 65 * (uint64_t)CHUNK / 2 + CHUNK);
	free(st);
}

/* A second timeout with the window already at the floor keeps it there. */
static void test_repeated_timeouts_stay_at_min(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(&p);

	cc_window_ops.on_loss(st, 1, true);
	cc_window_ops.on_loss(st, 2, true);
	assert_int_equal(W(st), CHUNK);
	assert_int_equal(described(st, "ssthresh"), CHUNK);
	ack(st, 3, CHUNK, BASE, false);
	assert_int_equal(W(st), 2 * CHUNK);            /* AI from the floor now */
	free(st);
}

/* Events stamped earlier than the last cut (a caller's clock stepping back)
 * are inside that cut's RTT: no second cut. */
static void test_clock_stepping_back_does_not_cut_twice(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US;

	ack(st, t, 0, BASE, false);
	cc_window_ops.on_loss(st, t, false);
	cc_window_ops.on_loss(st, t - 100 * US, false);
	ack(st, t - 100 * US, 0, 0, true);
	assert_int_equal(W(st), x09(100 * (uint64_t)CHUNK));   /* RTT at its floor */
	assert_int_equal(described(st, "cuts"), 1);
	free(st);
}

/* --- delay -------------------------------------------------------------- */

static void test_rtt_at_base_never_backs_off(void **state)
{
	struct cc_params p = params();
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t now = 0;

	for (int i = 0; i < 20; i++)
		ack(st, now += BASE, CHUNK, BASE, false);
	/* exactly at the threshold is not over it */
	ack(st, now += BASE, CHUNK, THRESH, false);
	assert_int_equal(W(st), 25 * (uint64_t)CHUNK);
	assert_int_equal(described(st, "cuts"), 0);
	free(st);
}

static void test_delay_inflation_backs_off_once_per_rtt(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US, w0 = 100 * (uint64_t)CHUNK, w1, srtt;

	ack(st, t, 0, THRESH + 1, false);
	w1 = w0 - w0 / 5;
	assert_int_equal(W(st), w1);                   /* x0.8 */
	srtt = described(st, "srtt_ns");
	assert_int_equal(srtt, THRESH + 1);            /* first sample sets srtt */
	/* more inflated samples within one srtt: no further cut, no growth */
	ack(st, t + 1 * US, CHUNK, 2 * THRESH, false);
	srtt = described(st, "srtt_ns");
	ack(st, t + srtt - 1, CHUNK, srtt, false);     /* a sample at srtt keeps it */
	assert_int_equal(W(st), w1);
	assert_int_equal(described(st, "srtt_ns"), srtt);
	/* one srtt after the cut: cut again */
	ack(st, t + srtt, CHUNK, srtt, false);
	assert_int_equal(W(st), w1 - w1 / 5);
	assert_int_equal(described(st, "cuts"), 2);
	free(st);
}

/* The caller's slack replaces the default 50 us: a rise within it is noise. */
static void test_delay_slack_is_the_callers(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	p.delay_slack_ns = 500 * US;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US;

	ack(st, t, 0, 2 * BASE + 500 * US, false);     /* at the threshold: no cut */
	assert_int_equal(described(st, "cuts"), 0);
	ack(st, t + 10000 * US, 0, 2 * BASE + 500 * US + 1, false);
	assert_int_equal(described(st, "cuts"), 1);
	free(st);
	(void)state;
}

/* With no configured base, the lowest sample is the reference. */
static void test_delay_reference_is_lowest_sample(void **state)
{
	struct cc_params p = params();
	void *st = cc_new(&p);
	uint64_t now = 0;

	ack(st, now += 1000 * US, CHUNK, 40 * US, false);  /* min 40: threshold 130 */
	ack(st, now += 1000 * US, CHUNK, 120 * US, false);
	assert_int_equal(described(st, "cuts"), 0);
	ack(st, now += 1000 * US, CHUNK, 10 * US, false);  /* min 10: threshold 70 */
	assert_int_equal(described(st, "min_rtt_ns"), 10 * US);
	ack(st, now += 1000 * US, CHUNK, 100 * US, false);
	assert_int_equal(described(st, "cuts"), 1);
	free(st);
}

/* For one RTT after a cut, clean ACKs (from data sent under the old
 * window) do not grow the window back. */
static void test_no_growth_within_rtt_of_a_cut(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US, w;

	ack(st, t, 0, BASE, false);                    /* srtt = 10 us */
	cc_window_ops.on_loss(st, t, false);
	w = W(st);
	ack(st, t + BASE - 1, 10 * w, BASE, false);
	assert_int_equal(W(st), w);
	ack(st, t + BASE, w, BASE, false);
	assert_int_equal(W(st), w + CHUNK);
	free(st);
}

/* --- ECN ---------------------------------------------------------------- */

static void test_ecn_backs_off_once_per_rtt(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US, w0 = 100 * (uint64_t)CHUNK, w1;

	ack(st, t, 0, BASE, false);                    /* srtt = 10 us */
	ack(st, t + 1, CHUNK, BASE, true);
	w1 = w0 - w0 / 5;
	assert_int_equal(W(st), w1);
	ack(st, t + 2, CHUNK, 0, true);                /* marks without an RTT sample */
	ack(st, t + BASE, CHUNK, BASE, true);
	assert_int_equal(W(st), w1);
	ack(st, t + 1 + BASE, CHUNK, BASE, true);
	assert_int_equal(W(st), w1 - w1 / 5);
	free(st);
}

/* Delay and ECN are one signal: a mark right after a delay cut is not
 * a second cut. */
static void test_ecn_and_delay_share_the_rtt_hold(void **state)
{
	struct cc_params p = params();
	p.init_window = 100 * CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	uint64_t t = 1000 * US;

	ack(st, t, 0, THRESH + 1, false);
	ack(st, t + 1, CHUNK, 0, true);
	assert_int_equal(described(st, "cuts"), 1);
	free(st);
}

/* --- clamps and overflow ------------------------------------------------ */

static void test_init_window_is_clamped(void **state)
{
	struct cc_params p = params();
	void *st;

	p.init_window = 1;
	st = cc_new(&p);
	assert_int_equal(W(st), CHUNK);
	free(st);
	p.init_window = UINT64_MAX;
	st = cc_new(&p);
	assert_int_equal(W(st), 1024 * (uint64_t)CHUNK);
	free(st);
}

static void test_window_stays_within_min_and_max(void **state)
{
	struct cc_params p = params();
	p.init_window = 2 * CHUNK;
	p.max_window = 8 * CHUNK;
	void *st = cc_new(&p);
	uint64_t now = 0;

	for (int i = 0; i < 10; i++) {
		ack(st, now += 1000 * US, 4 * CHUNK, BASE, false);
		assert_true(W(st) <= 8 * CHUNK);
	}
	assert_int_equal(W(st), 8 * CHUNK);
	for (int i = 0; i < 10; i++) {
		cc_window_ops.on_loss(st, now += 1000 * US, false);
		ack(st, now += 1000 * US, 0, 1000 * US, true);
		assert_true(W(st) >= CHUNK);
	}
	assert_int_equal(W(st), CHUNK);
	free(st);
}

/* A floor below one chunk is raised to one chunk: the window must admit a
 * whole chunk or the sender stalls. */
static void test_min_window_is_at_least_one_chunk(void **state)
{
	struct cc_params p = params();
	p.min_window = 0;
	p.init_window = 0;
	void *st = cc_new(&p);

	assert_int_equal(W(st), CHUNK);
	cc_window_ops.on_loss(st, 1, true);
	assert_int_equal(W(st), CHUNK);
	free(st);
}

static void test_no_overflow_near_2_pow_40(void **state)
{
	const uint64_t max = 1ull << 40;
	struct cc_params p = params();
	p.max_window = max;
	p.init_window = max - CHUNK;
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	const uint64_t m1 = max * 4 / 5;              /* floor, as the module rounds */

	/* a huge batch in slow start saturates at max, no wrap */
	ack(st, 1000 * US, UINT64_MAX, 0, false);
	assert_int_equal(W(st), max);
	/* an absurd RTT sample: a plain x0.8 cut */
	ack(st, 2000 * US, 0, UINT64_MAX, false);
	assert_int_equal(W(st), m1);
	/* times at the end of the clock */
	cc_window_ops.on_loss(st, UINT64_MAX - 1, false);
	assert_int_equal(W(st), m1 / 2);
	cc_window_ops.on_loss(st, UINT64_MAX, true);
	assert_int_equal(W(st), CHUNK);
	assert_int_equal(described(st, "ssthresh"), m1 / 4);
	/* slow start, then additive increase, both from huge batches */
	ack(st, UINT64_MAX, UINT64_MAX, 0, false);
	assert_int_equal(W(st), m1 / 4);
	ack(st, UINT64_MAX, UINT64_MAX, 0, false);
	assert_int_equal(W(st), max);
	ack(st, UINT64_MAX, UINT64_MAX, 0, false);
	assert_int_equal(W(st), max);
	free(st);
}

/* min_rtt * 2 + slack saturates instead of wrapping to a tiny threshold. */
static void test_delay_threshold_saturates(void **state)
{
	struct cc_params p = params();
	p.base_rtt_ns = 1ull << 63;
	void *st = cc_new(&p);

	ack(st, 1, CHUNK, (1ull << 63) + 1, false);
	ack(st, 2, CHUNK, UINT64_MAX, false);
	assert_int_equal(described(st, "cuts"), 0);
	assert_int_equal(W(st), 6 * CHUNK);
	free(st);
}

/* Additive increase carries acked bytes across batches: at a window of
 * 2^39, batches far smaller than the window still add a chunk in the end. */
static void test_additive_increase_carries_small_batches(void **state)
{
	const uint64_t max = 1ull << 41;
	struct cc_params p = params();
	p.max_window = max;
	p.init_window = 1ull << 40;
	void *st = cc_new(&p);

	cc_window_ops.on_loss(st, 1, false);           /* leave slow start: 2^39 */
	ack(st, 2, (1ull << 39) - 1, 0, false);
	assert_int_equal(W(st), 1ull << 39);
	ack(st, 3, 1, 0, false);
	assert_int_equal(W(st), (1ull << 39) + CHUNK);
	free(st);
}

/* --- describe ----------------------------------------------------------- */

static void test_describe_reports_state(void **state)
{
	struct cc_params p = params();
	p.base_rtt_ns = BASE;
	void *st = cc_new(&p);
	const char *names[16];
	uint64_t values[16];
	int n;

	ack(st, 1000 * US, CHUNK, 12 * US, false);
	ack(st, 1001 * US, CHUNK, 20 * US, false);
	assert_int_equal(described(st, "cwnd"), 6 * CHUNK);
	assert_int_equal(described(st, "cwnd"), W(st));
	assert_int_equal(described(st, "ssthresh"), 1024 * (uint64_t)CHUNK);
	assert_int_equal(described(st, "min_rtt_ns"), BASE);
	assert_int_equal(described(st, "srtt_ns"), 12 * US + (8 * US) / 8);
	assert_int_equal(described(st, "cuts"), 0);
	assert_int_equal(described(st, "timeouts"), 0);

	n = cc_window_ops.describe(st, names, values, 16);
	assert_int_equal(n, 6);
	assert_string_equal(names[0], "cwnd");
	/* a short buffer gets a prefix, nothing written past it */
	names[2] = "sentinel";
	assert_int_equal(cc_window_ops.describe(st, names, values, 2), 2);
	assert_string_equal(names[1], "ssthresh");
	assert_string_equal(names[2], "sentinel");
	assert_int_equal(cc_window_ops.describe(st, names, values, 0), 0);
	assert_int_equal(cc_window_ops.describe(st, names, values, -1), 0);
	free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_window_by_name),
		cmocka_unit_test(test_find_unknown_or_null_is_null),
		cmocka_unit_test(test_names_list_resolves),
		cmocka_unit_test(test_ops_table_is_complete),
		cmocka_unit_test(test_starts_at_init_window),
		cmocka_unit_test(test_slow_start_grows_by_acked_bytes),
		cmocka_unit_test(test_after_loss_growth_is_linear),
		cmocka_unit_test(test_several_losses_in_one_rtt_cut_once),
		cmocka_unit_test(test_loss_with_a_queue_halves_without_one_backs_off_gently),
		cmocka_unit_test(test_base_rtt_is_the_hold_before_any_sample),
		cmocka_unit_test(test_timeout_collapses_then_slow_starts_to_ssthresh),
		cmocka_unit_test(test_repeated_timeouts_stay_at_min),
		cmocka_unit_test(test_clock_stepping_back_does_not_cut_twice),
		cmocka_unit_test(test_rtt_at_base_never_backs_off),
		cmocka_unit_test(test_delay_inflation_backs_off_once_per_rtt),
		cmocka_unit_test(test_delay_reference_is_lowest_sample),
		cmocka_unit_test(test_delay_slack_is_the_callers),
		cmocka_unit_test(test_no_growth_within_rtt_of_a_cut),
		cmocka_unit_test(test_ecn_backs_off_once_per_rtt),
		cmocka_unit_test(test_ecn_and_delay_share_the_rtt_hold),
		cmocka_unit_test(test_init_window_is_clamped),
		cmocka_unit_test(test_window_stays_within_min_and_max),
		cmocka_unit_test(test_min_window_is_at_least_one_chunk),
		cmocka_unit_test(test_no_overflow_near_2_pow_40),
		cmocka_unit_test(test_delay_threshold_saturates),
		cmocka_unit_test(test_additive_increase_carries_small_batches),
		cmocka_unit_test(test_describe_reports_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
