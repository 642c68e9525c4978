/* SPDX-License-Identifier: MIT */
/*
 * opq's tag index: matching through the index finds exactly what a scan of
 * the match queues finds. A random mix of posted receives (some of
 * UCCL_TAG_ANY) and waiting sends on two sides sharing one index is mirrored
 * on two sides without one, and every lookup and every removal agrees,
 * across the index growing while ops wait. An index that was never given
 * room falls back to scanning and stays correct.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <uccl/shm.h>

#include "engine/opq.h"

#define NOPS 512u
#define NTAGS_FEW 6u                   /* many ops share a tag */
#define NTAGS_MANY 600u                /* most ops alone: hash chains collide */

struct mirror {
	struct opq_tags *tags;
	struct opq_conn ix[2], scan[2];    /* same ops, with and without the index */
	struct opq_op a[NOPS], b[NOPS];    /* a[i] on ix, b[i] on scan */
	int side[NOPS];                    /* -1: not waiting */
	uint32_t ntags;
	uint64_t rng;
};

static uint32_t rnd(struct mirror *m, uint32_t n)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return (uint32_t)((m->rng >> 32) % n);
}

static uint64_t some_tag(struct mirror *m, bool any_ok)
{
	uint32_t t = rnd(m, m->ntags + (any_ok ? 1 : 0));

	return t == m->ntags ? UCCL_TAG_ANY : 100 + t;
}

static struct mirror *mirror_new(uint32_t reserve, uint64_t seed, uint32_t ntags)
{
	struct mirror *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->ntags = ntags;
	m->tags = opq_tags_new();
	assert_non_null(m->tags);
	if (reserve)
		assert_int_equal(opq_tags_reserve(m->tags, reserve), 0);
	for (int s = 0; s < 2; s++) {
		opq_conn_init(&m->ix[s], &m->tags);
		opq_conn_init(&m->scan[s], NULL);
	}
	for (uint32_t i = 0; i < NOPS; i++)
		m->side[i] = -1;
	m->rng = seed | 1;
	return m;
}

static void mirror_free(struct mirror *m)
{
	opq_tags_free(m->tags);
	free(m);
}

/* The op of a found in ix, as an index, compared with the one found in scan. */
static void same(const struct mirror *m, const struct opq_op *x, const struct opq_op *y)
{
	if (!x || !y) {
		assert_null(x);
		assert_null(y);
		return;
	}
	assert_int_equal(x - m->a, y - m->b);
}

static void add(struct mirror *m, uint32_t i, int s, uint8_t opcode, uint64_t tag)
{
	m->a[i] = (struct opq_op){ .opcode = opcode, .key = tag };
	m->b[i] = m->a[i];
	opq_conn_add(&m->ix[s], &m->a[i], OPQ_WAITING);
	opq_conn_add(&m->scan[s], &m->b[i], OPQ_WAITING);
	m->side[i] = s;
}

/* A waiting op leaves both sides, as a matched or canceled op does. */
static void finish(struct mirror *m, uint32_t i)
{
	int s = m->side[i];

	if (rnd(m, 2)) {
		m->a[i].res = m->b[i].res = 0;
		opq_conn_finished(&m->ix[s], &m->a[i]);
		opq_conn_finished(&m->scan[s], &m->b[i]);
		/* finished ops keep their turn only when held: these are not */
	} else {
		/* matched remotely: off the match queue first, then finished */
		opq_conn_unmatch(&m->ix[s], &m->a[i]);
		opq_conn_unmatch(&m->scan[s], &m->b[i]);
		opq_conn_finished(&m->ix[s], &m->a[i]);
		opq_conn_finished(&m->scan[s], &m->b[i]);
	}
	m->side[i] = -1;
}

static void run_mix(struct mirror *m, uint32_t steps, bool grow)
{
	uint32_t checks = 0;

	for (uint32_t k = 0; k < steps; k++) {
		uint32_t i = rnd(m, NOPS);
		int s = (int)rnd(m, 2);

		/* grow the index while ops wait: the rehash keeps every bucket */
		if (grow && k == steps / 2)
			assert_int_equal(opq_tags_reserve(m->tags, 4 * NOPS), 0);
		if (m->side[i] < 0) {
			if (rnd(m, 2))
				add(m, i, s, UCCL_OP_RECV, some_tag(m, true));
			else
				add(m, i, s, UCCL_OP_SEND, some_tag(m, false));
		} else {
			finish(m, i);
		}
		/* lookups of (up to 16) tags, ANY included, on both sides */
		for (uint32_t j = 0; j <= 16 && j <= m->ntags; j++) {
			uint64_t tag = j == 16 || j == m->ntags ? UCCL_TAG_ANY : some_tag(m, false);

			for (int q = 0; q < 2; q++) {
				same(m, opq_conn_find_recv(&m->ix[q], tag), opq_conn_find_recv(&m->scan[q], tag));
				same(m, opq_conn_find_send(&m->ix[q], tag), opq_conn_find_send(&m->scan[q], tag));
				checks++;
			}
		}
		/* a tag nobody used */
		same(m, opq_conn_find_recv(&m->ix[s], 7), opq_conn_find_recv(&m->scan[s], 7));
	}
	assert_true(checks > 0);
	/* drain: every op leaves, and then nothing is found */
	for (uint32_t i = 0; i < NOPS; i++)
		if (m->side[i] >= 0)
			finish(m, i);
	for (int q = 0; q < 2; q++) {
		assert_null(opq_conn_find_recv(&m->ix[q], UCCL_TAG_ANY));
		assert_null(opq_conn_find_send(&m->ix[q], 100));
	}
}

static void test_index_finds_what_a_scan_finds(void **state)
{
	struct mirror *m = mirror_new(NOPS, 0x1234, NTAGS_FEW);

	(void)state;
	run_mix(m, 20000, false);
	assert_false(opq_tags_broken(m->tags));
	/* all buckets back on the free list: a second mix runs the same,
	 * now with tags that rarely repeat */
	m->ntags = NTAGS_MANY;
	run_mix(m, 50000, false);
	assert_false(opq_tags_broken(m->tags));
	assert_true(opq_tags_bytes(m->tags) > 0);
	mirror_free(m);
}

static void test_index_grown_while_ops_wait(void **state)
{
	struct mirror *m = mirror_new(NOPS, 0x9876, NTAGS_FEW);

	(void)state;
	run_mix(m, 20000, true);
	m->ntags = NTAGS_MANY;
	run_mix(m, 20000, true);
	assert_false(opq_tags_broken(m->tags));
	mirror_free(m);
}

/* An index with no room (its owner never reserved) scans, still right. */
static void test_index_without_room_falls_back_to_scanning(void **state)
{
	struct mirror *m = mirror_new(0, 0x55, NTAGS_FEW);

	(void)state;
	run_mix(m, 5000, false);
	assert_true(opq_tags_broken(m->tags));
	mirror_free(m);
}

/* The receive for a send is the oldest of its tag's and the ANY ones. */
static void test_any_receive_posted_between_takes_its_turn(void **state)
{
	struct mirror *m = mirror_new(NOPS, 1, NTAGS_FEW);

	(void)state;
	add(m, 0, 0, UCCL_OP_RECV, 100);
	add(m, 1, 0, UCCL_OP_RECV, UCCL_TAG_ANY);
	add(m, 2, 0, UCCL_OP_RECV, 100);
	assert_ptr_equal(opq_conn_find_recv(&m->ix[0], 100), &m->a[0]);
	assert_ptr_equal(opq_conn_find_recv(&m->ix[0], 101), &m->a[1]);
	opq_conn_finished(&m->ix[0], &m->a[0]);
	assert_ptr_equal(opq_conn_find_recv(&m->ix[0], 100), &m->a[1]);
	opq_conn_finished(&m->ix[0], &m->a[1]);
	assert_ptr_equal(opq_conn_find_recv(&m->ix[0], 100), &m->a[2]);
	assert_null(opq_conn_find_recv(&m->ix[0], 101));
	/* the other side shares the index, not the ops */
	assert_null(opq_conn_find_recv(&m->ix[1], 100));
	mirror_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_finds_what_a_scan_finds),
		cmocka_unit_test(test_index_grown_while_ops_wait),
		cmocka_unit_test(test_index_without_room_falls_back_to_scanning),
		cmocka_unit_test(test_any_receive_posted_between_takes_its_turn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
