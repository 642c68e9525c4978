/* SPDX-License-Identifier: MIT */
/*
 * ring: the endpoint region layout, the header check a client runs before it
 * trusts any offset, and the SPSC ring protocol seen from both ends: entries
 * arrive in order across wraps, a full ring refuses more, staged entries stay
 * invisible until flushed, corrupt peer indices are caught, and the
 * NEED_WAKEUP flag travels from consumer to producer.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/ring.h"

struct region {
	struct uccl_shm_hdr hdr;
	size_t len;
	void *mem;
	struct ring_side prod;   /* SQ as the client writes it */
	struct ring_side cons;   /* SQ as the daemon reads it */
};

static int setup(void **state)
{
	struct region *r = calloc(1, sizeof(*r));

	r->len = ring_region_layout(16, 32, 4, &r->hdr);
	assert_true(r->len > 0);
	r->mem = aligned_alloc(4096, r->len);
	memset(r->mem, 0, r->len);
	ring_side_init(&r->prod, r->mem, r->hdr.sq_ctl_off, r->hdr.sq_off, 16, UCCL_SQE_SIZE);
	ring_side_init(&r->cons, r->mem, r->hdr.sq_ctl_off, r->hdr.sq_off, 16, UCCL_SQE_SIZE);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct region *r = *state;

	free(r->mem);
	free(r);
	return 0;
}

static void put_u64(struct ring_side *s, uint32_t n, uint64_t v)
{
	memcpy(ring_prod_slot(s, n), &v, sizeof(v));
}

static uint64_t get_u64(struct ring_side *s, uint32_t n)
{
	uint64_t v;

	memcpy(&v, ring_cons_slot(s, n), sizeof(v));
	return v;
}

/* ---- layout ---- */

static void test_layout_aligns_every_piece_and_rounds_to_a_page(void **state)
{
	struct uccl_shm_hdr h;
	size_t len = ring_region_layout(1024, 2048, 100, &h);
	uint64_t offs[] = { h.sq_ctl_off, h.sq_off, h.cq_ctl_off, h.cq_off, h.sem_off };

	assert_int_equal(len % 4096, 0);
	assert_int_equal(h.total_size, len);
	assert_int_equal(h.magic, UCCL_SHM_MAGIC);
	assert_int_equal(h.abi_version, UCCL_SHM_ABI_VERSION);
	assert_int_equal(h.hdr_size, sizeof(h));
	assert_int_equal(h.sq_entry_size, UCCL_SQE_SIZE);
	assert_int_equal(h.cq_entry_size, UCCL_CQE_SIZE);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(offs[i] % UCCL_CACHELINE, 0);
	assert_true(h.sq_ctl_off >= sizeof(h));
	assert_true(h.sq_off >= h.sq_ctl_off + sizeof(struct uccl_ring_ctl));
	assert_true(h.cq_ctl_off >= h.sq_off + 1024 * UCCL_SQE_SIZE);
	assert_true(h.cq_off >= h.cq_ctl_off + sizeof(struct uccl_ring_ctl));
	assert_true(h.sem_off >= h.cq_off + 2048 * UCCL_CQE_SIZE);
	assert_true(h.sem_off + 100 * sizeof(uint64_t) <= len);
	assert_int_equal(ring_region_check(&h, len), 0);
}

static void test_layout_refuses_bad_sizes(void **state)
{
	struct uccl_shm_hdr h;

	assert_int_equal(ring_region_layout(8, 16, 1, &h), 0);        /* too small */
	assert_int_equal(ring_region_layout(16, 24, 1, &h), 0);       /* not a power of two */
	assert_int_equal(ring_region_layout(131072, 16, 1, &h), 0);   /* too big */
	assert_int_equal(ring_region_layout(16, 16, 0, &h), 0);
	assert_int_equal(ring_region_layout(16, 16, 65537, &h), 0);
	assert_true(ring_region_layout(65536, 65536, 65536, &h) > 0);
	assert_true(ring_region_layout(16, 16, 1, &h) > 0);
}

/* ---- header check ---- */

static void test_region_check_rejects_bad_headers(void **state)
{
	struct uccl_shm_hdr good, h;
	size_t len = ring_region_layout(64, 64, 8, &good);

#define EXPECT(field_change, err)                                         \
	do {                                                              \
		h = good;                                                 \
		field_change;                                             \
		assert_int_equal(ring_region_check(&h, len), (err));      \
	} while (0)

	assert_int_equal(ring_region_check(&good, len), 0);
	assert_int_equal(ring_region_check(&good, len - 1), -EBADMSG);
	EXPECT(h.magic ^= 1, -EBADMSG);
	EXPECT(h.abi_version = UCCL_SHM_ABI_VERSION + 1, -EPROTONOSUPPORT);
	EXPECT(h.abi_version = 1, -EPROTONOSUPPORT);   /* before UCCL_SEM_RESET */
	EXPECT(h.hdr_size = 8, -EBADMSG);
	EXPECT(h.sq_entry_size = UCCL_SQE16_SIZE, -EOPNOTSUPP);
	EXPECT(h.sq_entry_size = 128, -EBADMSG);
	EXPECT(h.cq_entry_size = 64, -EBADMSG);
	EXPECT(h.sq_entries = 48, -EBADMSG);
	EXPECT(h.cq_entries = 1u << 20, -EBADMSG);
	EXPECT(h.sem_count = 0, -EBADMSG);
	EXPECT(h.sem_count = 1000000, -EBADMSG);
	EXPECT(h.total_size = len + 4096, -EBADMSG);
	EXPECT(h.sq_off = len, -EBADMSG);                        /* past the end */
	EXPECT(h.cq_off = UINT64_MAX - 63, -EBADMSG);            /* off + size wraps */
	EXPECT((h.sem_off = len - 64, h.sem_count = 9), -EBADMSG); /* sems run off the end */
	EXPECT(h.sem_off = good.sem_off + 8, -EBADMSG);          /* misaligned */
	EXPECT(h.cq_ctl_off = good.sq_off, -EBADMSG);            /* overlaps the SQ */
	EXPECT(h.sq_ctl_off = 0, -EBADMSG);                      /* overlaps the header */
	EXPECT(h.sq_entries = 128, -EBADMSG);                    /* SQ grows into the CQ ctl */
#undef EXPECT
}

/* ---- ring protocol ---- */

static void test_entries_arrive_in_order(void **state)
{
	struct region *r = *state;

	assert_int_equal(ring_cons_avail(&r->cons), 0);
	for (uint32_t i = 0; i < 5; i++)
		put_u64(&r->prod, i, 100 + i);
	ring_prod_publish(&r->prod, 5);
	assert_int_equal(ring_cons_avail(&r->cons), 5);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(get_u64(&r->cons, i), 100 + i);
	ring_cons_release(&r->cons, 5);
	assert_int_equal(ring_cons_avail(&r->cons), 0);
	assert_int_equal(ring_prod_space(&r->prod), 16);
}

static void test_wraparound_keeps_order_across_slots_and_u32_indices(void **state)
{
	struct region *r = *state;
	uint64_t next_put = 0, next_get = 0;

	/* start just short of the u32 wrap on both sides */
	r->prod.idx = r->cons.idx = UINT32_MAX - 40;
	r->prod.ctl->prod = r->prod.ctl->cons = UINT32_MAX - 40;
	while (next_get < 200) {
		uint32_t space = ring_prod_space(&r->prod);
		uint32_t n = space < 7 ? space : 7;
		int avail;

		for (uint32_t i = 0; i < n; i++)
			put_u64(&r->prod, i, next_put++);
		ring_prod_publish(&r->prod, n);
		avail = ring_cons_avail(&r->cons);
		assert_true(avail >= 0 && avail <= 16);
		for (int i = 0; i < avail; i++)
			assert_int_equal(get_u64(&r->cons, (uint32_t)i), next_get++);
		ring_cons_release(&r->cons, (uint32_t)avail);
	}
	assert_true(r->cons.idx < 1000);   /* the index did wrap */
}

static void test_full_ring_has_no_space_until_released(void **state)
{
	struct region *r = *state;

	ring_prod_publish(&r->prod, 16);
	assert_int_equal(ring_prod_space(&r->prod), 0);
	assert_int_equal(ring_prod_space_checked(&r->prod), 0);
	assert_int_equal(ring_cons_avail(&r->cons), 16);
	ring_cons_release(&r->cons, 3);
	assert_int_equal(ring_prod_space(&r->prod), 3);
	assert_int_equal(ring_prod_space_checked(&r->prod), 3);
}

static void test_staged_entries_are_invisible_until_flushed(void **state)
{
	struct region *r = *state;

	put_u64(&r->prod, 0, 1);
	ring_prod_stage(&r->prod, 1);
	put_u64(&r->prod, 0, 2);
	ring_prod_stage(&r->prod, 1);
	put_u64(&r->prod, 0, 3);
	ring_prod_stage(&r->prod, 1);
	assert_int_equal(ring_cons_avail(&r->cons), 0);
	assert_int_equal(ring_prod_space(&r->prod), 13);
	assert_int_equal(ring_prod_flush(&r->prod), 3);
	assert_int_equal(ring_cons_avail(&r->cons), 3);
	assert_int_equal(get_u64(&r->cons, 2), 3);
	assert_int_equal(ring_prod_flush(&r->prod), 0);
	/* the count comes from the producer's own copy: a shared word
	 * written by someone else does not change it */
	ring_prod_stage(&r->prod, 1);
	r->prod.ctl->prod = 1000;
	assert_int_equal(ring_prod_flush(&r->prod), 1);
	assert_int_equal(r->prod.ctl->prod, 4);
}

static void test_corrupt_producer_index_is_ebadmsg(void **state)
{
	struct region *r = *state;

	r->cons.ctl->prod = 17;                   /* more than entries ahead */
	assert_int_equal(ring_cons_avail(&r->cons), -EBADMSG);
	r->cons.ctl->prod = UINT32_MAX;           /* behind us */
	assert_int_equal(ring_cons_avail(&r->cons), -EBADMSG);
	r->cons.ctl->prod = 16;                   /* exactly full is fine */
	assert_int_equal(ring_cons_avail(&r->cons), 16);
	assert_int_equal(ring_cons_arm(&r->cons), 16);
	r->cons.ctl->prod = 1u << 31;
	assert_int_equal(ring_cons_arm(&r->cons), -EBADMSG);
}

static void test_corrupt_consumer_index_is_ebadmsg(void **state)
{
	struct region *r = *state;

	ring_prod_publish(&r->prod, 4);
	r->prod.ctl->cons = 5;                    /* ahead of the producer */
	assert_int_equal(ring_prod_space_checked(&r->prod), -EBADMSG);
	assert_int_equal(ring_prod_space(&r->prod), 0);
	r->prod.idx = 40;
	r->prod.ctl->cons = 23;                   /* 17 behind: more than entries */
	assert_int_equal(ring_prod_space_checked(&r->prod), -EBADMSG);
	r->prod.ctl->cons = 24;                   /* 16 behind: full, fine */
	assert_int_equal(ring_prod_space_checked(&r->prod), 0);
	r->prod.ctl->cons = 40;
	assert_int_equal(ring_prod_space_checked(&r->prod), 16);
}

static void test_arm_sets_need_wakeup_and_disarm_clears_it(void **state)
{
	struct region *r = *state;

	assert_false(ring_prod_needs_wakeup(&r->prod));
	assert_int_equal(ring_cons_arm(&r->cons), 0);      /* empty: safe to sleep */
	assert_true(ring_prod_needs_wakeup(&r->prod));
	ring_cons_disarm(&r->cons);
	assert_false(ring_prod_needs_wakeup(&r->prod));

	ring_prod_publish(&r->prod, 2);
	assert_int_equal(ring_cons_arm(&r->cons), 2);      /* work arrived: do not sleep */
	ring_cons_disarm(&r->cons);
}

static void test_slots_stay_inside_the_ring(void **state)
{
	struct region *r = *state;
	uint8_t *lo = (uint8_t *)r->mem + r->hdr.sq_off;
	uint8_t *hi = lo + 16 * UCCL_SQE_SIZE;

	r->prod.idx = 0xdeadbeef;
	for (uint32_t n = 0; n < 40; n++) {
		uint8_t *p = ring_prod_slot(&r->prod, n);
		assert_true(p >= lo && p + UCCL_SQE_SIZE <= hi);
	}
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_aligns_every_piece_and_rounds_to_a_page),
		cmocka_unit_test(test_layout_refuses_bad_sizes),
		cmocka_unit_test(test_region_check_rejects_bad_headers),
		T(test_entries_arrive_in_order),
		T(test_wraparound_keeps_order_across_slots_and_u32_indices),
		T(test_full_ring_has_no_space_until_released),
		T(test_staged_entries_are_invisible_until_flushed),
		T(test_corrupt_producer_index_is_ebadmsg),
		T(test_corrupt_consumer_index_is_ebadmsg),
		T(test_arm_sets_need_wakeup_and_disarm_clears_it),
		T(test_slots_stay_inside_the_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
