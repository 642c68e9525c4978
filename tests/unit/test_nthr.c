/* SPDX-License-Identifier: MIT */
/* nthr: endpoint placement, port ranges, CPU choice, sub-channel ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/nthr.h"

static void test_pick_least(void **state)
{
	uint32_t load[4] = { 0, 0, 0, 0 };
	uint32_t got[8];

	(void)state;
	/* endpoints created one after another spread evenly */
	for (int i = 0; i < 8; i++) {
		got[i] = nthr_pick(load, 4);
		load[got[i]]++;
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal(got[i], (uint32_t)(i % 4));
	/* a thread whose endpoints went away is refilled first */
	load[2] = 0;
	assert_int_equal(nthr_pick(load, 4), 2);
	load[2] = 5;
	load[3] = 1;
	assert_int_equal(nthr_pick(load, 4), 3);
	/* one thread: always 0 */
	assert_int_equal(nthr_pick(load, 1), 0);
}

static void test_ports(void **state)
{
	(void)state;
	assert_int_equal(nthr_port(40000, 4, 0), 40000);
	assert_int_equal(nthr_port(40000, 4, 1), 40004);
	assert_int_equal(nthr_port(40000, 64, 3), 40192);
	/* 0: each thread's ports are the kernel's choice */
	assert_int_equal(nthr_port(0, 4, 2), 0);
}

static void test_cpus(void **state)
{
	struct conf c;

	(void)state;
	conf_defaults(&c);
	assert_int_equal(nthr_cpu(&c, 0), -1);
	c.engine_cpu = 3;
	assert_int_equal(nthr_cpu(&c, 0), 3);
	c.engine_cpu = -1;
	c.engine_threads = 3;
	c.n_engine_cpus = 3;
	c.engine_cpus[0] = 5;
	c.engine_cpus[1] = 1;
	c.engine_cpus[2] = 9;
	assert_int_equal(nthr_cpu(&c, 0), 5);
	assert_int_equal(nthr_cpu(&c, 1), 1);
	assert_int_equal(nthr_cpu(&c, 2), 9);
	c.n_engine_cpus = 0;
	assert_int_equal(nthr_cpu(&c, 1), -1);
}

static void test_chan_ids(void **state)
{
	(void)state;
	/* remote thread 0 keeps the one-thread numbering; others are disjoint */
	assert_int_equal(nthr_chan(5, 0, 64), 5);
	assert_int_equal(nthr_chan(5, 1, 64), 69);
	assert_int_equal(nthr_chan(63, 15, 64), 1023);
	/* channels between our own threads come after all of them */
	assert_int_equal(nthr_self_chan(0, 64), 1024);
	assert_int_equal(nthr_self_chan(15, 64), 1039);
	for (uint32_t a = 0; a < 64; a++)
		for (uint32_t j = 0; j < 16; j++) {
			uint32_t id = nthr_chan(a, j, 64), slot = 99, k = 99;

			assert_int_equal(id % 64, a);
			assert_int_equal(id / 64, j);
			assert_false(nthr_chan_of(id, 64, &slot, &k));
			assert_int_equal(slot, a);
		}
	for (uint32_t t = 0; t < 16; t++) {
		uint32_t slot = 99, k = 99;

		assert_true(nthr_chan_of(nthr_self_chan(t, 64), 64, &slot, &k));
		assert_int_equal(k, t);
	}
}

static void test_lanes(void **state)
{
	(void)state;
	/* the smallest setting, bounded by both thread counts */
	assert_int_equal(nthr_lanes(1, 2, 1, 2), 1);
	assert_int_equal(nthr_lanes(3, 4, 1, 4), 1);
	assert_int_equal(nthr_lanes(3, 4, 3, 2), 1);
	assert_int_equal(nthr_lanes(3, 2, 3, 4), 1);
	assert_int_equal(nthr_lanes(0, 4, 3, 4), 0);
	assert_int_equal(nthr_lanes(3, 4, 0, 4), 0);
	assert_int_equal(nthr_lanes(15, 16, 15, 16), 15);
	assert_int_equal(nthr_lanes(3, 1, 3, 4), 0);
	assert_int_equal(nthr_lanes(3, 4, 3, 0), 0);
	/* both daemons compute the same, whichever side they are */
	for (uint32_t a = 0; a < 16; a++)
		for (uint32_t n = 1; n <= 16; n++)
			for (uint32_t b = 0; b < 16; b++)
				for (uint32_t m = 1; m <= 16; m++)
					assert_int_equal(nthr_lanes(a, n, b, m), nthr_lanes(b, m, a, n));
	/* lane k of a side on thread t: the k-th thread after it, wrapping */
	assert_int_equal(nthr_lane_thr(0, 1, 2), 1);
	assert_int_equal(nthr_lane_thr(1, 1, 2), 0);
	assert_int_equal(nthr_lane_thr(3, 2, 4), 1);
	for (uint32_t t = 0; t < 4; t++) {
		uint32_t seen = 1u << t;

		for (uint32_t k = 1; k < 4; k++)
			seen |= 1u << nthr_lane_thr(t, k, 4);
		assert_int_equal(seen, 0xf);    /* every thread once */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_least),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_cpus),
		cmocka_unit_test(test_chan_ids),
		cmocka_unit_test(test_lanes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
