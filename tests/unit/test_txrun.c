/* SPDX-License-Identifier: MIT */
/*
 * txrun: a send takes the packets up to the first given-up one (length 0,
 * its channel gone), and a peer that refused a send loses its packets in
 * the batch while every other peer's stay.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/nic/txrun.h"

static uint8_t hdr[64], body[64];

static struct nic_pkt pkt(uint32_t peer, uint32_t len)
{
	return (struct nic_pkt){ .buf = hdr, .len = len, .peer = peer, .payload = len ? body : NULL,
				 .hdr_len = len ? 16 : 0 };
}

static void test_a_run_ends_at_a_given_up_packet(void **state)
{
	struct nic_pkt p[5] = { pkt(1, 100), pkt(2, 100), pkt(1, 0), pkt(2, 100), pkt(1, 100) };

	(void)state;
	assert_int_equal(txrun_len(p, 5), 2);
	assert_int_equal(txrun_len(p + 3, 2), 2);
	assert_int_equal(txrun_len(p, 0), 0);
	assert_int_equal(txrun_len(p + 2, 3), 0);
}

static void test_a_refusing_peer_loses_only_its_packets(void **state)
{
	struct nic_pkt p[6] = { pkt(3, 100), pkt(1, 100), pkt(3, 40), pkt(2, 0), pkt(3, 100),
				pkt(2, 100) };

	(void)state;
	assert_int_equal(txrun_drop_peer(p, 6), 3);
	for (int i = 0; i < 6; i++) {
		if (i == 0 || i == 2 || i == 4) {
			assert_int_equal(p[i].len, 0);
			assert_null(p[i].payload);
			assert_int_equal(p[i].hdr_len, 0);
		}
	}
	assert_int_equal(p[1].len, 100);
	assert_int_equal(p[5].len, 100);
	assert_non_null(p[5].payload);
	/* what is left runs from the first other peer's packet */
	assert_int_equal(txrun_len(p + 1, 5), 1);
	assert_int_equal(txrun_drop_peer(p, 0), 0);
	/* a packet given up already (its channel gone) is not counted again */
	{
		struct nic_pkt q[3] = { pkt(5, 100), pkt(5, 0), pkt(5, 100) };

		assert_int_equal(txrun_drop_peer(q, 3), 2);
		assert_int_equal(txrun_len(q, 3), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_run_ends_at_a_given_up_packet),
		cmocka_unit_test(test_a_refusing_peer_loses_only_its_packets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
