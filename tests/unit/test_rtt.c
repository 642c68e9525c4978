/* SPDX-License-Identifier: MIT */
/*
 * rtt: the RFC 6298 estimator as the channel uses it: the first sample sets
 * srtt and rttvar, later ones smooth by 1/8 and 1/4, the timeout stays inside
 * its floor and ceiling, doubles on every consecutive timeout up to the
 * ceiling, and a fresh sample ends the backoff.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/rtt.h"

#define US 1000ull
#define MS 1000000ull

static void test_before_any_sample_the_initial_rto_applies(void **state)
{
	struct rtt r;

	rtt_init(&r, 3 * MS, 200 * US, 1000 * MS);
	assert_int_equal(rtt_rto(&r), 3 * MS);
	assert_int_equal(r.srtt_ns, 0);
	assert_int_equal(r.min_rtt_ns, 0);
	assert_int_equal(r.backoff, 0);

	rtt_init(&r, 10 * US, 200 * US, 1000 * MS);   /* initial value is clamped too */
	assert_int_equal(rtt_rto(&r), 200 * US);
}

static void test_first_sample_sets_srtt_and_half_variance(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 1 * US, 1000 * MS);
	rtt_sample(&r, 100 * US);
	assert_int_equal(r.srtt_ns, 100 * US);
	assert_int_equal(r.rttvar_ns, 50 * US);
	assert_int_equal(r.min_rtt_ns, 100 * US);
	assert_int_equal(rtt_rto(&r), 100 * US + 4 * 50 * US);
}

static void test_later_samples_are_smoothed(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 1 * US, 1000 * MS);
	rtt_sample(&r, 800 * US);             /* srtt 800, var 400 */
	rtt_sample(&r, 400 * US);             /* err 400: var 300+100, srtt 800-50 */
	assert_int_equal(r.rttvar_ns, 400 * US);
	assert_int_equal(r.srtt_ns, 750 * US);
	assert_int_equal(r.min_rtt_ns, 400 * US);
	assert_int_equal(rtt_rto(&r), 750 * US + 1600 * US);

	rtt_sample(&r, 1150 * US);            /* err 400: var 300+100, srtt 750+50 */
	assert_int_equal(r.srtt_ns, 800 * US);
	assert_int_equal(r.rttvar_ns, 400 * US);
	assert_int_equal(r.min_rtt_ns, 400 * US);
}

static void test_steady_rtt_converges(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 1, 1000 * MS);
	rtt_sample(&r, 10 * MS);
	for (int i = 0; i < 200; i++)
		rtt_sample(&r, 20 * US);
	assert_true(r.srtt_ns >= 20 * US && r.srtt_ns < 21 * US);
	assert_true(r.rttvar_ns < 1 * US);
	assert_true(rtt_rto(&r) > r.srtt_ns);   /* never equal to the RTT itself */
}

static void test_rto_is_kept_between_floor_and_ceiling(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 200 * US, 10 * MS);
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 200 * US);
	rtt_init(&r, 1 * MS, 200 * US, 10 * MS);
	rtt_sample(&r, 8 * MS);               /* 8 + 4*4 ms = 24 ms */
	assert_int_equal(rtt_rto(&r), 10 * MS);
}

static void test_timeouts_double_up_to_the_ceiling(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 100 * US, 5 * MS);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 2 * MS);
	assert_int_equal(r.backoff, 1);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 4 * MS);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 5 * MS);
	for (int i = 0; i < 100; i++)
		rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 5 * MS);
	assert_int_equal(r.backoff, 103);
}

static void test_a_sample_ends_the_backoff(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 10 * US, 1000 * MS);
	rtt_sample(&r, 100 * US);              /* rto 300 us */
	rtt_on_timeout(&r);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 1200 * US);
	assert_int_equal(r.backoff, 2);
	rtt_sample(&r, 100 * US);              /* err 0: var 37.5 us, rto 250 us */
	assert_int_equal(r.backoff, 0);
	assert_int_equal(rtt_rto(&r), 100 * US + 4 * (50 * US - 50 * US / 4));
}

/* Spurious timeouts double the floor up to 16 x rto_min (and never past the
 * ceiling); right ones halve it back to rto_min. */
static void test_spurious_timeouts_raise_the_floor(void **state)
{
	struct rtt r;

	rtt_init(&r, 1 * MS, 100 * US, 10 * MS);
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 100 * US);
	rtt_timeout_spurious(&r, 0);
	assert_int_equal(rtt_rto(&r), 200 * US);      /* takes effect at once */
	for (int i = 0; i < 10; i++)
		rtt_timeout_spurious(&r, 0);
	assert_int_equal(r.floor_ns, 1600 * US);       /* 16 x rto_min */
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 1600 * US);
	rtt_timeout_right(&r, 0);
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 800 * US);
	for (int i = 0; i < 10; i++)
		rtt_timeout_right(&r, 0);
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 100 * US);

	/* with neither verdict for RTT_FLOOR_HOLD_NS, the floor halves */
	rtt_init(&r, 1 * MS, 100 * US, 10 * MS);
	rtt_timeout_spurious(&r, 5 * MS);
	rtt_timeout_spurious(&r, 6 * MS);               /* 400 us since 6 ms */
	rtt_floor_tick(&r, 6 * MS + RTT_FLOOR_HOLD_NS - 1);
	assert_int_equal(r.floor_ns, 400 * US);
	rtt_floor_tick(&r, 6 * MS + RTT_FLOOR_HOLD_NS);
	assert_int_equal(r.floor_ns, 200 * US);
	rtt_floor_tick(&r, 6 * MS + RTT_FLOOR_HOLD_NS + 1);
	assert_int_equal(r.floor_ns, 200 * US);         /* the next hold starts now */
	rtt_floor_tick(&r, 6 * MS + 3 * RTT_FLOOR_HOLD_NS);
	assert_int_equal(r.floor_ns, 100 * US);
	rtt_floor_tick(&r, 6 * MS + 9 * RTT_FLOOR_HOLD_NS);
	assert_int_equal(r.floor_ns, 100 * US);         /* never below rto_min */

	rtt_init(&r, 1 * MS, 1 * MS, 4 * MS);          /* the ceiling caps the floor */
	for (int i = 0; i < 10; i++)
		rtt_timeout_spurious(&r, 0);
	rtt_sample(&r, 5 * US);
	assert_int_equal(rtt_rto(&r), 4 * MS);
}

static void test_extreme_values_do_not_overflow(void **state)
{
	struct rtt r;

	rtt_init(&r, UINT64_MAX, 1, UINT64_MAX);
	assert_int_equal(rtt_rto(&r), UINT64_MAX);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), UINT64_MAX);
	rtt_sample(&r, UINT64_MAX / 2);
	assert_int_equal(rtt_rto(&r), UINT64_MAX);
	rtt_sample(&r, 0);                     /* below resolution: counts as 1 ns */
	assert_int_equal(r.min_rtt_ns, 1);
	rtt_init(&r, 5, 10, 3);                /* ceiling below floor: floor wins */
	assert_int_equal(rtt_rto(&r), 10);
	rtt_on_timeout(&r);
	assert_int_equal(rtt_rto(&r), 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_any_sample_the_initial_rto_applies),
		cmocka_unit_test(test_first_sample_sets_srtt_and_half_variance),
		cmocka_unit_test(test_later_samples_are_smoothed),
		cmocka_unit_test(test_steady_rtt_converges),
		cmocka_unit_test(test_rto_is_kept_between_floor_and_ceiling),
		cmocka_unit_test(test_timeouts_double_up_to_the_ceiling),
		cmocka_unit_test(test_a_sample_ends_the_backoff),
		cmocka_unit_test(test_spurious_timeouts_raise_the_floor),
		cmocka_unit_test(test_extreme_values_do_not_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
