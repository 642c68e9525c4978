/* SPDX-License-Identifier: MIT */
/* vpack: words round-trip exactly, small and all-ones words stay short,
 * and short or bad input is refused. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/vpack.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Objects of every length 0..64 with random, small, negative and extreme
 * words come back byte for byte; nothing is left over. */
static void test_round_trip(void **state)
{
	uint8_t obj[64], back[64];
	struct vpack v = { 0 };
	struct vunpack r = { 0 };
	size_t total = 0;

	(void)state;
	for (size_t n = 0; n <= sizeof(obj); n++) {
		for (size_t i = 0; i < n; i += 8) {
			uint64_t w, k = next() % 5;

			w = k == 0 ? next() : k == 1 ? next() % 300 : k == 2 ? (uint64_t)-(int64_t)(next() % 300)
			  : k == 3 ? UINT64_MAX : (uint64_t)INT64_MIN;
			memcpy(obj + i, &w, n - i < 8 ? n - i : 8);
		}
		vpack_words(&v, obj, n);
		assert_false(v.err);
		/* one reader along the whole string, as thaw reads it */
		r.p = v.buf + total;
		r.end = v.buf + v.len;
		memset(back, 0xa5, sizeof(back));
		assert_true(vunpack_words(&r, back, n));
		assert_memory_equal(back, obj, n);
		assert_true(r.p == v.buf + v.len);
		if (n < sizeof(back))
			assert_int_equal(back[n], 0xa5);     /* nothing written past n */
		total = v.len;
	}
	free(v.buf);
}

/* 0 and -1 take a byte each, a 32-bit "none" marker and a full word more. */
static void test_sizes(void **state)
{
	uint64_t w[4] = { 0, UINT64_MAX, UINT32_MAX, 0x0123456789abcdefull };
	size_t want[4] = { 1, 1, 5, 9 };
	struct vpack v = { 0 };

	(void)state;
	for (int i = 0; i < 4; i++) {
		size_t before = v.len;

		vpack_words(&v, &w[i], 8);
		assert_int_equal(v.len - before, want[i]);
	}
	free(v.buf);
}

/* Input cut short, a varint longer than ten bytes, or a tenth byte with
 * bits past 64, is refused. */
static void test_short_and_bad_input(void **state)
{
	uint64_t w[2] = { UINT64_MAX / 3, 7 }, back[2];
	uint8_t bad[11];
	struct vpack v = { 0 };
	struct vunpack r;

	(void)state;
	vpack_words(&v, w, sizeof(w));
	for (size_t cut = 0; cut < v.len; cut++) {
		r = (struct vunpack){ .p = v.buf, .end = v.buf + cut };
		assert_false(vunpack_words(&r, back, sizeof(back)));
		assert_true(r.err);
	}
	memset(bad, 0xff, sizeof(bad));
	r = (struct vunpack){ .p = bad, .end = bad + sizeof(bad) };
	assert_false(vunpack_words(&r, back, 8));
	bad[9] = 0x02;                         /* ten bytes, bit 64 set */
	r = (struct vunpack){ .p = bad, .end = bad + 10 };
	assert_false(vunpack_words(&r, back, 8));
	bad[9] = 0x01;                         /* ten bytes, all 64 bits set */
	r = (struct vunpack){ .p = bad, .end = bad + 10 };
	assert_true(vunpack_words(&r, back, 8));
	assert_true(back[0] == 1ull << 63);    /* zigzag of all ones */
	free(v.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_short_and_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
