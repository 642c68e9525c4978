/* SPDX-License-Identifier: MIT */
/*
 * rxhint accounting with made-up counts: a receive is skipped only while the
 * filter's count equals what was taken; a datagram counted before it is
 * queued keeps the hint due until it comes; a counted-and-dropped
 * difference is written off only after RXHINT_STUCK_CALLS drained receives
 * in a row, and only what was there after all of them; a taken-uncounted
 * one at once; a long run of skips still gets a receive every
 * RXHINT_SAFETY_SKIPS.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/nic/rxhint.h"

static void test_nothing_counted_means_no_receive(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 10; i++)
		assert_false(rxhint_due(&a, 0));
	assert_int_equal(a.skipped, 10);
	assert_true(rxhint_due(&a, 3));
	rxhint_took(&a, 3, true);
	assert_int_equal(a.seen, 3);
	assert_false(rxhint_due(&a, 3));
	assert_int_equal(a.written_off, 0);
}

/* The filter counts before the kernel queues: the receive right after may
 * come back empty, and the hint must stay due until the datagram is taken. */
static void test_counted_but_not_yet_queued_stays_due(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < RXHINT_STUCK_CALLS - 1; i++) {
		assert_true(rxhint_due(&a, 1));
		rxhint_took(&a, 0, true);
	}
	assert_true(rxhint_due(&a, 1));
	rxhint_took(&a, 1, true);
	assert_int_equal(a.seen, 1);
	assert_int_equal(a.written_off, 0);
	assert_false(rxhint_due(&a, 1));
}

/* A full batch says nothing about what is left: no write-off however long. */
static void test_full_batches_never_write_off(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < 4 * RXHINT_STUCK_CALLS; i++) {
		assert_true(rxhint_due(&a, 100000));
		rxhint_took(&a, 64, false);
	}
	assert_int_equal(a.seen, 4 * RXHINT_STUCK_CALLS * 64);
	assert_int_equal(a.written_off, 0);
}

/* Counted, then dropped at a full buffer: written off after
 * RXHINT_STUCK_CALLS drained receives, not one sooner. */
static void test_counted_and_dropped_is_written_off(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_true(rxhint_due(&a, 10));
	rxhint_took(&a, 7, true);               /* 3 dropped: the first of the run */
	for (uint32_t i = 1; i < RXHINT_STUCK_CALLS - 1; i++) {
		assert_true(rxhint_due(&a, 10));
		rxhint_took(&a, 0, true);
	}
	assert_int_equal(a.written_off, 0);
	assert_true(rxhint_due(&a, 10));
	rxhint_took(&a, 0, true);
	assert_int_equal(a.written_off, 3);
	assert_int_equal(a.seen, 10);
	assert_false(rxhint_due(&a, 10));
	/* and the next datagram is seen at once */
	assert_true(rxhint_due(&a, 11));
	rxhint_took(&a, 1, true);
	assert_false(rxhint_due(&a, 11));
}

/* Taken but never counted: the count is behind, settled at the next look,
 * so that as many new datagrams do not read as an empty socket. */
static void test_taken_uncounted_settles_at_once(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_true(rxhint_due(&a, 5));
	rxhint_took(&a, 7, true);               /* 2 of them uncounted */
	assert_false(rxhint_due(&a, 5));
	assert_int_equal(a.seen, 5);
	assert_int_equal(a.written_off, 2);
	/* request and response: each new datagram is received at once */
	for (uint64_t c = 6; c < 6 + 3 * RXHINT_STUCK_CALLS; c++) {
		assert_true(rxhint_due(&a, c));
		rxhint_took(&a, 1, true);
		assert_false(rxhint_due(&a, c));
	}
	assert_int_equal(a.written_off, 2);
	assert_int_equal(a.skipped, 1 + 3 * RXHINT_STUCK_CALLS);
}

/* A read of the count that predates the last arrivals (counted and queued
 * between the read and the receive) is not an uncounted datagram: nothing
 * is written off, and the next read agrees. */
static void test_a_late_arrival_is_not_uncounted(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_true(rxhint_due(&a, 1));
	rxhint_took(&a, 3, true);               /* 2 more came in meanwhile */
	assert_false(rxhint_due(&a, 3));
	assert_int_equal(a.written_off, 0);
	assert_int_equal(a.seen, 3);
}

/* Dropped at a full buffer, and on the last receive of the run a new
 * datagram is counted but not yet queued: only the dropped ones are
 * written off, and the new one is still received. */
static void test_a_datagram_on_its_way_is_not_written_off(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_true(rxhint_due(&a, 10));
	rxhint_took(&a, 7, true);               /* 3 dropped */
	for (uint32_t i = 1; i < RXHINT_STUCK_CALLS - 1; i++) {
		assert_true(rxhint_due(&a, 10));
		rxhint_took(&a, 0, true);
	}
	assert_true(rxhint_due(&a, 11));        /* X counted, not yet queued */
	rxhint_took(&a, 0, true);
	assert_int_equal(a.written_off, 3);
	assert_int_equal(a.seen, 10);
	assert_true(rxhint_due(&a, 11));        /* X is due */
	rxhint_took(&a, 1, true);
	assert_false(rxhint_due(&a, 11));
	assert_int_equal(a.written_off, 3);
}

/* A run broken by a moment of agreement starts again from nothing. */
static void test_agreement_resets_the_run(void **state)
{
	struct rxhint_acct a;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < RXHINT_STUCK_CALLS - 1; i++) {
		assert_true(rxhint_due(&a, 2));
		rxhint_took(&a, 0, true);
	}
	assert_true(rxhint_due(&a, 2));
	rxhint_took(&a, 2, true);
	assert_false(rxhint_due(&a, 2));
	for (uint32_t i = 0; i < RXHINT_STUCK_CALLS - 1; i++) {
		assert_true(rxhint_due(&a, 3));
		rxhint_took(&a, 0, true);
	}
	assert_int_equal(a.written_off, 0);
	assert_int_equal(a.seen, 2);
}

static void test_a_receive_every_safety_skips(void **state)
{
	struct rxhint_acct a;
	uint32_t due = 0;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < 3 * RXHINT_SAFETY_SKIPS; i++) {
		if (rxhint_due(&a, 0)) {
			due++;
			assert_int_equal((i + 1) % RXHINT_SAFETY_SKIPS, 0);
			rxhint_took(&a, 0, true);
		}
	}
	assert_int_equal(due, 3);
	assert_int_equal(a.skipped, 3 * (RXHINT_SAFETY_SKIPS - 1));
	/* a missed datagram found by the safety receive is taken, and the
	 * difference it makes is settled like any other */
	for (uint32_t i = 0; i < RXHINT_SAFETY_SKIPS - 1; i++)
		assert_false(rxhint_due(&a, 0));
	assert_true(rxhint_due(&a, 0));
	rxhint_took(&a, 1, true);
	assert_int_equal(a.seen, 1);
	assert_false(rxhint_due(&a, 0));
	assert_int_equal(a.seen, 0);
	assert_int_equal(a.written_off, 1);
}

static void test_attach_refuses_bad_arguments(void **state)
{
	struct rxhint *h = NULL;

	(void)state;
	assert_true(rxhint_attach(-1, &h) < 0);
	assert_null(h);
	rxhint_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_counted_means_no_receive),
		cmocka_unit_test(test_counted_but_not_yet_queued_stays_due),
		cmocka_unit_test(test_full_batches_never_write_off),
		cmocka_unit_test(test_counted_and_dropped_is_written_off),
		cmocka_unit_test(test_taken_uncounted_settles_at_once),
		cmocka_unit_test(test_a_late_arrival_is_not_uncounted),
		cmocka_unit_test(test_a_datagram_on_its_way_is_not_written_off),
		cmocka_unit_test(test_agreement_resets_the_run),
		cmocka_unit_test(test_a_receive_every_safety_skips),
		cmocka_unit_test(test_attach_refuses_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
