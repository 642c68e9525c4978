/* SPDX-License-Identifier: MIT */
/* clientid: ids wrap, skip 0, and skip ids still held. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon/clientid.h"

struct held {
	uint32_t ids[8];
	int n;
	int asked;
};

static bool taken(void *arg, uint32_t id)
{
	struct held *h = arg;

	h->asked++;
	for (int i = 0; i < h->n; i++)
		if (h->ids[i] == id)
			return true;
	return false;
}

static void test_ids_count_up(void **state)
{
	struct held h = { .n = 0 };
	uint32_t last = 0;

	(void)state;
	assert_int_equal(clientid_next(&last, taken, &h), 1);
	assert_int_equal(clientid_next(&last, taken, &h), 2);
	assert_int_equal(last, 2);
}

/* After UINT32_MAX comes 1, not 0; held ids are stepped over, so a client
 * that came round again never shares an id with one still there. */
static void test_wrap_skips_zero_and_held_ids(void **state)
{
	struct held h = { .ids = { 1, 2, 4 }, .n = 3 };
	uint32_t last = UINT32_MAX - 1;

	(void)state;
	assert_int_equal(clientid_next(&last, taken, &h), UINT32_MAX);
	assert_int_equal(clientid_next(&last, taken, &h), 3);
	assert_int_equal(clientid_next(&last, taken, &h), 5);
	h.ids[h.n++] = UINT32_MAX;
	last = UINT32_MAX - 1;
	assert_int_equal(clientid_next(&last, taken, &h), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_count_up),
		cmocka_unit_test(test_wrap_skips_zero_and_held_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
