/* SPDX-License-Identifier: MIT */
/*
 * mr: bounds checks that cannot be fooled by wrapping arithmetic, and the
 * region table: lookups by remote key and by (client, id), duplicates,
 * capacity, growth on demand with pointers that stay put, no memory, and a
 * long random add/remove churn checked against a plain array so that
 * deletion from the open-addressing indexes never loses an entry.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "engine/mr.h"

#include "failalloc.h"

static struct mr region(uint32_t client, uint32_t id, uint64_t rkey, uint64_t len)
{
	static char backing;

	return (struct mr){ .id = id, .client_id = client, .rkey = rkey, .len = len,
			    .kind = MR_MAPPED, .base = &backing };
}

/* ---- bounds ---- */

static void test_range_inside_and_at_the_edges(void **state)
{
	struct mr m = region(1, 1, 9, 100);

	assert_true(mr_range_ok(&m, 0, 100));
	assert_true(mr_range_ok(&m, 99, 1));
	assert_true(mr_range_ok(&m, 100, 0));     /* empty range at the end */
	assert_false(mr_range_ok(&m, 100, 1));
	assert_false(mr_range_ok(&m, 101, 0));
	assert_false(mr_range_ok(&m, 0, 101));
	assert_false(mr_range_ok(&m, 50, 51));
}

static void test_range_that_wraps_is_refused(void **state)
{
	struct mr m = region(1, 1, 9, 100);
	struct mr huge = region(1, 2, 10, UINT64_MAX);

	assert_false(mr_range_ok(&m, 8, UINT64_MAX - 4));   /* 8 + len wraps to 3 */
	assert_false(mr_range_ok(&m, UINT64_MAX, 2));
	assert_false(mr_range_ok(&m, UINT64_MAX, 0));
	assert_true(mr_range_ok(&huge, UINT64_MAX - 1, 1));
	assert_false(mr_range_ok(&huge, UINT64_MAX - 1, 2));
	assert_true(mr_range_ok(&huge, 0, UINT64_MAX));
}

/* ---- table ---- */

static void test_add_then_lookup_by_key_and_by_id(void **state)
{
	struct mr_table *t = mr_table_new(8);
	struct mr a = region(1, 7, 0x1111, 64);
	struct mr b = region(2, 7, 0x2222, 128);
	const struct mr *m;

	assert_int_equal(mr_table_add(t, &a), 0);
	assert_int_equal(mr_table_add(t, &b), 0);   /* same id, other client */
	assert_int_equal(mr_table_count(t), 2);

	m = mr_table_by_rkey(t, 0x2222);
	assert_non_null(m);
	assert_int_equal(m->client_id, 2);
	assert_int_equal(m->len, 128);
	m = mr_table_by_id(t, 1, 7);
	assert_non_null(m);
	assert_int_equal(m->rkey, 0x1111);
	assert_null(mr_table_by_id(t, 3, 7));
	assert_null(mr_table_by_id(t, 1, 8));
	assert_null(mr_table_by_rkey(t, 0x3333));
	assert_null(mr_table_by_rkey(t, 0));
	mr_table_free(t);
}

static void test_remove_makes_both_lookups_fail(void **state)
{
	struct mr_table *t = mr_table_new(4);
	struct mr a = region(1, 1, 0xAAAA, 64);

	assert_int_equal(mr_table_add(t, &a), 0);
	assert_int_equal(mr_table_remove(t, 1, 1), 0);
	assert_null(mr_table_by_id(t, 1, 1));
	assert_null(mr_table_by_rkey(t, 0xAAAA));
	assert_int_equal(mr_table_count(t), 0);
	assert_int_equal(mr_table_remove(t, 1, 1), -ENOENT);
	assert_int_equal(mr_table_add(t, &a), 0);   /* and it can come back */
	assert_non_null(mr_table_by_rkey(t, 0xAAAA));
	mr_table_free(t);
}

static void test_duplicates_are_eexist(void **state)
{
	struct mr_table *t = mr_table_new(4);
	struct mr a = region(1, 1, 0xAAAA, 64);
	struct mr same_key = region(2, 5, 0xAAAA, 64);
	struct mr same_id = region(1, 1, 0xBBBB, 64);

	assert_int_equal(mr_table_add(t, &a), 0);
	assert_int_equal(mr_table_add(t, &same_key), -EEXIST);
	assert_int_equal(mr_table_add(t, &same_id), -EEXIST);
	assert_int_equal(mr_table_count(t), 1);
	assert_int_equal(mr_table_by_rkey(t, 0xAAAA)->client_id, 1);
	mr_table_free(t);
}

static void test_invalid_regions_are_einval(void **state)
{
	struct mr_table *t = mr_table_new(4);
	struct mr zero_key = region(1, 1, 0, 64);
	struct mr bad_kind = region(1, 2, 5, 64);
	struct mr no_base = region(1, 3, 6, 64);

	bad_kind.kind = 0;
	no_base.base = NULL;
	assert_int_equal(mr_table_add(t, &zero_key), -EINVAL);
	assert_int_equal(mr_table_add(t, &bad_kind), -EINVAL);
	assert_int_equal(mr_table_add(t, &no_base), -EINVAL);
	assert_int_equal(mr_table_count(t), 0);
	mr_table_free(t);
}

static void test_capacity_is_enforced(void **state)
{
	struct mr_table *t = mr_table_new(3);

	for (uint32_t i = 0; i < 3; i++) {
		struct mr m = region(1, i, 100 + i, 8);
		assert_int_equal(mr_table_add(t, &m), 0);
	}
	struct mr extra = region(1, 9, 999, 8);
	assert_int_equal(mr_table_add(t, &extra), -ENOSPC);
	assert_int_equal(mr_table_remove(t, 1, 1), 0);
	assert_int_equal(mr_table_add(t, &extra), 0);
	assert_int_equal(mr_table_count(t), 3);
	assert_null(mr_table_new(0));
	assert_null(mr_table_free(t));
	assert_null(mr_table_free(NULL));
}

/* A table sized for a million regions that holds a few thousand: a pointer
 * from a lookup stays put while the table grows (slot blocks never move;
 * the indexes are rebuilt); without memory an add fails with -ENOMEM and
 * changes nothing; removing never needs memory. */
static void test_grows_on_demand_and_pointers_stay(void **state)
{
	struct mr_table *t = mr_table_new(1u << 20);
	struct mr m = region(1, 0, 100, 8);
	const struct mr *p0;
	uint32_t n = 5000;

	(void)state;
	assert_non_null(t);
	assert_int_equal(mr_table_add(t, &m), 0);
	p0 = mr_table_by_id(t, 1, 0);
	assert_non_null(p0);
	for (uint32_t i = 1; i < n; i++) {
		m = region(1, i, 100 + i, 8);
		assert_int_equal(mr_table_add(t, &m), 0);
	}
	assert_ptr_equal(mr_table_by_id(t, 1, 0), p0);
	assert_ptr_equal(mr_table_by_rkey(t, 100), p0);
	assert_int_equal(p0->rkey, 100);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(mr_table_by_id(t, 1, i)->rkey, 100 + i);
#ifndef __SANITIZE_ADDRESS__
	/* the next block (every 64 slots) or index doubling needs memory */
	g_fail_min = 1;
	for (uint32_t i = n;; i++) {
		int r;

		m = region(1, i, 100 + i, 8);
		r = mr_table_add(t, &m);
		if (r == -ENOMEM) {
			assert_null(mr_table_by_id(t, 1, i));
			assert_null(mr_table_by_rkey(t, 100 + i));
			break;
		}
		assert_int_equal(r, 0);
		n++;
		assert_true(i < 5000 + 64);
	}
	assert_int_equal(mr_table_count(t), n);
	for (uint32_t i = 1; i < n; i++)     /* no memory needed to remove */
		assert_int_equal(mr_table_remove(t, 1, i), 0);
	g_fail_min = 0;
	assert_int_equal(mr_table_count(t), 1);
	assert_ptr_equal(mr_table_by_rkey(t, 100), p0);
	m = region(2, 7, 7777, 8);
	assert_int_equal(mr_table_add(t, &m), 0);  /* a released slot again */
	assert_int_equal(mr_table_by_rkey(t, 7777)->id, 7);
#endif
	mr_table_free(t);
}

/* At half load the indexes have many probe chains; regions added and removed
 * at random must be found exactly when the reference model says they exist. */
static void test_random_churn_matches_a_reference_model(void **state)
{
	enum { CAP = 64, KEYS = 200, STEPS = 20000 };
	struct mr_table *t = mr_table_new(CAP);
	bool present[KEYS] = { false };
	uint32_t count = 0;
	uint64_t rng = 12345;

	for (int step = 0; step < STEPS; step++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t k = (uint32_t)(rng >> 33) % KEYS;
		/* client k%3, id k, key a multiple of a large power of two */
		struct mr m = region(k % 3, k, (uint64_t)(k + 1) << 40, k);

		if (present[k]) {
			assert_int_equal(mr_table_remove(t, k % 3, k), 0);
			present[k] = false;
			count--;
		} else {
			int r = mr_table_add(t, &m);
			if (count == CAP) {
				assert_int_equal(r, -ENOSPC);
			} else {
				assert_int_equal(r, 0);
				present[k] = true;
				count++;
			}
		}
		if (step % 97 == 0) {
			for (uint32_t j = 0; j < KEYS; j++) {
				const struct mr *a = mr_table_by_rkey(t, (uint64_t)(j + 1) << 40);
				const struct mr *b = mr_table_by_id(t, j % 3, j);
				assert_int_equal(a != NULL, present[j]);
				assert_ptr_equal(a, b);
				if (a)
					assert_int_equal(a->len, j);
			}
			assert_int_equal(mr_table_count(t), count);
		}
	}
	mr_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_inside_and_at_the_edges),
		cmocka_unit_test(test_range_that_wraps_is_refused),
		cmocka_unit_test(test_add_then_lookup_by_key_and_by_id),
		cmocka_unit_test(test_remove_makes_both_lookups_fail),
		cmocka_unit_test(test_duplicates_are_eexist),
		cmocka_unit_test(test_invalid_regions_are_einval),
		cmocka_unit_test(test_capacity_is_enforced),
		cmocka_unit_test(test_grows_on_demand_and_pointers_stay),
		cmocka_unit_test(test_random_churn_matches_a_reference_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
