/* SPDX-License-Identifier: MIT */
/*
 * lanebus: the queues between engine threads and each thread's end of
 * them (daemon/lanebus.h), driven by hand with a fake engine: every part
 * is handed to the engine exactly once and in order, also when the engine
 * has no room for a while; every part taken gets exactly one report back
 * to its origin, also when the engine reports from inside the put; full
 * queues hold messages back without losing them.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>

#include "daemon/lanebus.h"

#define NPUT 64

/* A fake engine behind thread 1: records the parts it is given. */
struct fake {
	struct lanethr *lt;           /* its thread's end, to report synchronously */
	uint64_t put[NPUT];
	int nput;
	int eagain;                   /* say -EAGAIN to this many calls */
	int refuse;                   /* say this error to the next call (0: none) */
	bool report_inside;           /* report each part from inside put, with res 0 */
	uint64_t done[NPUT];          /* reports seen at the origin (thread 0) */
	int done_res[NPUT];
	int ndone;
};

static int fake_put(void *arg, const struct engine_lane_part *p)
{
	struct fake *f = arg;
	int r;

	if (f->eagain) {
		f->eagain--;
		return -EAGAIN;
	}
	if (f->refuse) {
		r = f->refuse;
		f->refuse = 0;
		return r;
	}
	assert_true(f->nput < NPUT);
	f->put[f->nput++] = p->cookie;
	if (f->report_inside)
		assert_int_equal(lanethr_report(f->lt, p->origin, p->cookie, 0), 0);
	return 0;
}

static void fake_done(void *arg, uint64_t cookie, int res)
{
	struct fake *f = arg;

	assert_true(f->ndone < NPUT);
	f->done[f->ndone] = cookie;
	f->done_res[f->ndone++] = res;
}

struct fx {
	struct lanebus *bus;
	struct lanethr t0, t1;
	struct fake f;
	struct lanethr_ops ops;
};

static struct fx *fx_new(uint32_t cap)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->bus = lanebus_new(2, cap);
	assert_non_null(x->bus);
	lanethr_init(&x->t0, x->bus, 0);
	lanethr_init(&x->t1, x->bus, 1);
	x->f.lt = &x->t1;
	x->ops = (struct lanethr_ops){ .put = fake_put, .done = fake_done, .arg = &x->f };
	return x;
}

static void fx_free(struct fx *x)
{
	lanethr_clear(&x->t0);
	lanethr_clear(&x->t1);
	lanebus_free(x->bus);
	free(x);
}

/* thread 0's engine splits: part `cookie` to lane 1 (thread 1) */
static void submit(struct fx *x, uint64_t cookie)
{
	struct engine_lane_part p = { .lane = 1, .cookie = cookie, .len = 4096 };

	assert_int_equal(lanethr_submit(&x->t0, &p), 0);
}

/* thread 1's engine finished every part it took, in the order taken */
static void report_all(struct fx *x, int from, int res)
{
	for (int i = from; i < x->f.nput; i++)
		assert_int_equal(lanethr_report(&x->t1, 0, x->f.put[i], res), 0);
}

/* Parts reach the lane's engine once each, in order; their reports reach
 * the origin; then both ends are idle and hold only spares. */
static void test_round_trip(void **state)
{
	struct fx *x = fx_new(16);

	(void)state;
	for (uint64_t c = 1; c <= 5; c++)
		submit(x, c);
	assert_false(lanethr_idle(&x->t1));
	assert_int_equal(lanethr_pass(&x->t1, &x->ops), 5);
	assert_int_equal(x->f.nput, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(x->f.put[i], (uint64_t)i + 1);
	report_all(x, 0, 0);
	assert_int_equal(lanethr_report(&x->t1, 0, 99, 0), -ENOSPC);   /* no part left */
	assert_int_equal(lanethr_pass(&x->t0, &x->ops), 5);
	assert_int_equal(x->f.ndone, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(x->f.done[i], (uint64_t)i + 1);
	assert_true(lanethr_idle(&x->t0));
	assert_true(lanethr_idle(&x->t1));
	fx_free(x);
}

/* An engine without room takes nothing; the parts wait in order and each
 * is put exactly once later, also with spares from earlier parts about
 * (walking the waiting list must not follow a message that became one). */
static void test_no_room_then_room(void **state)
{
	struct fx *x = fx_new(16);

	(void)state;
	submit(x, 1);
	submit(x, 2);
	lanethr_pass(&x->t1, &x->ops);     /* two spares now */
	x->f.eagain = 1;
	submit(x, 3);
	submit(x, 4);
	submit(x, 5);
	lanethr_pass(&x->t1, &x->ops);     /* 3 refused for room: 3, 4, 5 wait */
	assert_int_equal(x->f.nput, 2);
	assert_false(lanethr_idle(&x->t1));
	lanethr_pass(&x->t1, &x->ops);
	lanethr_pass(&x->t1, &x->ops);
	assert_int_equal(x->f.nput, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(x->f.put[i], (uint64_t)i + 1);
	assert_true(lanethr_idle(&x->t1));
	report_all(x, 0, 0);
	lanethr_pass(&x->t0, &x->ops);
	assert_int_equal(x->f.ndone, 5);
	fx_free(x);
}

/* A part the engine refuses goes back at once as a failed report; one it
 * reports from inside the put finds its spare already there. */
static void test_refused_and_inside(void **state)
{
	struct fx *x = fx_new(16);

	(void)state;
	x->f.refuse = -ENOTCONN;
	submit(x, 1);
	x->f.report_inside = true;
	submit(x, 2);
	submit(x, 3);
	lanethr_pass(&x->t1, &x->ops);
	assert_int_equal(x->f.nput, 2);
	lanethr_pass(&x->t0, &x->ops);
	assert_int_equal(x->f.ndone, 3);
	assert_int_equal(x->f.done[0], 1);
	assert_int_equal(x->f.done_res[0], -ENOTCONN);
	assert_int_equal(x->f.done[1], 2);
	assert_int_equal(x->f.done_res[1], 0);
	assert_int_equal(x->f.done[2], 3);
	fx_free(x);
}

/* Queues 2 deep: what does not fit waits at the sender, in order, and the
 * sender is not idle until it went. */
static void test_full_queue(void **state)
{
	struct fx *x = fx_new(2);
	int rounds = 0;

	(void)state;
	for (uint64_t c = 1; c <= 7; c++)
		submit(x, c);
	assert_false(lanethr_idle(&x->t0));
	while (x->f.nput < 7 && rounds++ < 20) {
		lanethr_pass(&x->t0, &x->ops);
		lanethr_pass(&x->t1, &x->ops);
	}
	assert_int_equal(x->f.nput, 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(x->f.put[i], (uint64_t)i + 1);
	assert_true(lanethr_idle(&x->t0));
	report_all(x, 0, -ECANCELED);
	rounds = 0;
	while (x->f.ndone < 7 && rounds++ < 20) {
		lanethr_pass(&x->t1, &x->ops);
		lanethr_pass(&x->t0, &x->ops);
	}
	assert_int_equal(x->f.ndone, 7);
	assert_int_equal(x->f.done_res[6], -ECANCELED);
	fx_free(x);
}

/* A full queue to one thread holds back only what goes there: parts to a
 * third thread pass while thread 1 takes nothing. */
static void test_full_queue_alone(void **state)
{
	struct lanebus *bus = lanebus_new(3, 2);
	struct lanethr t[3];
	struct fake f1 = { 0 }, f2 = { 0 };
	const struct lanethr_ops ops2 = { .put = fake_put, .done = fake_done, .arg = &f2 };
	const struct lanethr_ops ops1 = { .put = fake_put, .done = fake_done, .arg = &f1 };

	(void)state;
	assert_non_null(bus);
	for (uint32_t i = 0; i < 3; i++)
		lanethr_init(&t[i], bus, i);
	f1.lt = &t[1];
	f2.lt = &t[2];
	/* parts 1..5 to lane 1, then 11..13 to lane 2 */
	for (uint64_t c = 1; c <= 13; c = c == 5 ? 11 : c + 1) {
		struct engine_lane_part p = { .lane = c < 11 ? 1 : 2, .cookie = c, .len = 4096 };

		assert_int_equal(lanethr_submit(&t[0], &p), 0);
	}
	for (int i = 0; i < 3; i++) {
		lanethr_pass(&t[0], &ops1);
		lanethr_pass(&t[2], &ops2);
	}
	assert_int_equal(f2.nput, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(f2.put[i], (uint64_t)i + 11);
	assert_int_equal(f1.nput, 0);
	assert_false(lanethr_idle(&t[0]));   /* three still wait for thread 1 */
	for (int i = 0; i < 4; i++) {
		lanethr_pass(&t[1], &ops1);
		lanethr_pass(&t[0], &ops1);
	}
	assert_int_equal(f1.nput, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f1.put[i], (uint64_t)i + 1);
	assert_true(lanethr_idle(&t[0]));
	for (uint32_t i = 0; i < 3; i++)
		lanethr_clear(&t[i]);
	lanebus_free(bus);
}

/* Two real threads through 2-deep queues: everything waits in the
 * senders' overflow lists most of the time, and every part still gets
 * exactly one report (a message handed to the queue is the other
 * thread's at once: the sender must not read it again). */
#define STRESS_N 20000

struct stress {
	struct lanethr *lt;
	uint8_t *seen;                 /* thread 0: reports per cookie */
	int reports;
	bool done;
};

static int stress_put(void *arg, const struct engine_lane_part *p)
{
	struct stress *s = arg;

	return lanethr_report(s->lt, p->origin, p->cookie, 0) == 0 ? 0 : -EIO;
}

static void stress_done(void *arg, uint64_t cookie, int res)
{
	struct stress *s = arg;

	if (res == 0 && cookie < STRESS_N)
		s->seen[cookie]++;
	s->reports++;
}

static void *stress_lane(void *arg)
{
	struct stress *s = arg;
	const struct lanethr_ops ops = { .put = stress_put, .done = stress_done, .arg = s };

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
		lanethr_pass(s->lt, &ops);
	return NULL;
}

static void test_two_threads(void **state)
{
	struct fx *x = fx_new(2);
	struct stress s0 = { .lt = &x->t0 }, s1 = { .lt = &x->t1 };
	const struct lanethr_ops ops = { .put = stress_put, .done = stress_done, .arg = &s0 };
	pthread_t t;

	(void)state;
	s0.seen = calloc(STRESS_N, 1);
	assert_non_null(s0.seen);
	assert_int_equal(pthread_create(&t, NULL, stress_lane, &s1), 0);
	for (uint64_t c = 0; c < STRESS_N; c++) {
		submit(x, c);
		if (c % 64 == 0)
			lanethr_pass(&x->t0, &ops);
	}
	for (time_t end = time(NULL) + 30; s0.reports < STRESS_N && time(NULL) < end;)
		lanethr_pass(&x->t0, &ops);     /* a lost report would wait for ever */
	__atomic_store_n(&s1.done, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	for (uint64_t c = 0; c < STRESS_N; c++)
		if (s0.seen[c] != 1)
			fail_msg("part %llu reported %u times", (unsigned long long)c, s0.seen[c]);
	assert_int_equal(s0.reports, STRESS_N);
	free(s0.seen);
	fx_free(x);
}

static void test_bad_lane(void **state)
{
	struct fx *x = fx_new(4);
	struct engine_lane_part p = { .lane = 0 };
	struct lanethr none;

	(void)state;
	assert_int_equal(lanethr_submit(&x->t0, &p), -EINVAL);
	p.lane = 2;                    /* two threads: lane 1 only */
	assert_int_equal(lanethr_submit(&x->t0, &p), -EINVAL);
	lanethr_init(&none, NULL, 0);
	p.lane = 1;
	assert_int_equal(lanethr_submit(&none, &p), -EINVAL);
	assert_true(lanethr_idle(&none));
	assert_null(lanebus_new(1, 4));
	assert_null(lanebus_new(17, 4));
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_no_room_then_room),
		cmocka_unit_test(test_refused_and_inside),
		cmocka_unit_test(test_full_queue),
		cmocka_unit_test(test_full_queue_alone),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_bad_lane),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
