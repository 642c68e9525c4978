/* SPDX-License-Identifier: MIT */
/*
 * scoreboard: the sender retires packets cumulatively and by SACK (each
 * reported once), declares a hole lost once dupthresh SACKed packets lie
 * above it and only once, expires old packets on a timeout, hands lost
 * packets back oldest psn first, refuses ACKs for psns never sent, keeps
 * working across the 2^32 psn wrap and when full; Go-Back-N goes back once
 * per hole. The receiver accepts, suppresses duplicates, refuses psns past
 * its window and describes its holes in SACK words. A random lossy run ties
 * both halves together: every psn is acknowledged exactly once.
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

#include "engine/scoreboard.h"


#define NREC 8192

struct rec {                           /* what acked()/dropped() saw */
	int n;
	uint32_t psn[NREC];
	uint64_t cookie[NREC];
};

static void record(void *arg, uint32_t psn, const struct sb_pkt *p)
{
	struct rec *r = arg;

	assert_true(r->n < NREC);
	r->psn[r->n] = psn;
	r->cookie[r->n] = p->cookie;
	r->n++;
}

static uint32_t push(struct sb_tx *s, uint64_t cookie, uint32_t bytes, uint64_t now)
{
	struct sb_pkt p = { .cookie = cookie, .sent_ns = now, .bytes = bytes, .path = 1 };

	assert_false(sb_tx_full(s));
	return sb_tx_push(s, &p);
}

/* SACK words for the given psns, relative to cum (bit 0 = cum + 1). */
static uint32_t sack_of(uint32_t cum, const uint32_t *psns, int n, uint64_t *w)
{
	uint32_t words = 0;

	memset(w, 0, 16 * sizeof(*w));
	for (int i = 0; i < n; i++) {
		uint32_t pos = psns[i] - cum - 1;

		assert_true(pos < 16 * 64);
		w[pos / 64] |= 1ull << (pos % 64);
		if (pos / 64 + 1 > words)
			words = pos / 64 + 1;
	}
	return words;
}

static int sack(struct sb_tx *s, uint32_t cum, const uint32_t *psns, int n, struct rec *r)
{
	uint64_t w[16];
	uint32_t words = sack_of(cum, psns, n, w);

	return sb_tx_ack(s, cum, w, words, record, r);
}

/* ---- sender ---- */

static void test_cumulative_ack_retires_in_order(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };

	for (int i = 0; i < 10; i++)
		assert_int_equal(push(s, 100 + i, 1000, 5), i);
	assert_int_equal(sb_tx_inflight(s), 10);
	assert_int_equal(sb_tx_inflight_bytes(s), 10000);

	assert_int_equal(sb_tx_ack(s, 4, NULL, 0, record, &r), 4);
	assert_int_equal(r.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r.psn[i], i);
		assert_int_equal(r.cookie[i], 100 + i);
	}
	assert_int_equal(sb_tx_inflight(s), 6);
	assert_int_equal(sb_tx_inflight_bytes(s), 6000);

	/* the same ACK again, and an older one: nothing new */
	assert_int_equal(sb_tx_ack(s, 4, NULL, 0, record, &r), 0);
	assert_int_equal(sb_tx_ack(s, 2, NULL, 0, record, &r), 0);
	assert_int_equal(sb_tx_ack(s, 10, NULL, 0, record, &r), 6);
	assert_int_equal(r.n, 10);
	assert_int_equal(sb_tx_inflight(s), 0);
	assert_int_equal(sb_tx_inflight_bytes(s), 0);
	assert_int_equal(sb_tx_oldest_sent(s), UINT64_MAX);
	sb_tx_free(s);
}

static void test_sack_out_of_order_is_reported_once(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint32_t some[] = { 2, 3, 7 };
	uint32_t more[] = { 2, 3, 7, 8 };

	for (int i = 0; i < 10; i++)
		push(s, i, 100, 1);
	assert_int_equal(sack(s, 0, some, 3, &r), 3);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.psn[0], 2);
	assert_int_equal(r.psn[2], 7);
	assert_int_equal(sb_tx_inflight(s), 7);
	assert_int_equal(sb_tx_inflight_bytes(s), 700);
	/* unacked below the highest SACKed (7): 0, 1, 4, 5, 6 */
	assert_int_equal(sb_tx_holes(s), 5);

	assert_int_equal(sack(s, 0, more, 4, &r), 1);    /* only 8 is new */
	assert_int_equal(r.psn[3], 8);

	/* cum passes the SACKed ones without reporting them again */
	assert_int_equal(sb_tx_ack(s, 9, NULL, 0, record, &r), 5);   /* 0 1 4 5 6 */
	assert_int_equal(r.n, 9);
	for (int i = 4; i < 9; i++)
		assert_true(r.psn[i] != 2 && r.psn[i] != 3 && r.psn[i] != 7 && r.psn[i] != 8);
	assert_int_equal(sb_tx_holes(s), 0);
	assert_int_equal(sb_tx_inflight(s), 1);
	sb_tx_free(s);
}

static void test_fast_retransmit_after_dupthresh_sacks_marks_once(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t two[] = { 1, 2 }, three[] = { 1, 2, 3 }, five[] = { 1, 2, 3, 4, 5 };

	for (int i = 0; i < 10; i++)
		push(s, i, 100, 10 + i);
	sack(s, 0, two, 2, &r);
	assert_int_equal(sb_tx_lost_pending(s), 0);      /* two above the hole */
	sack(s, 0, three, 3, &r);
	assert_int_equal(sb_tx_lost_pending(s), 1);      /* three: psn 0 is lost */
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	assert_int_equal(p.cookie, 0);
	sb_tx_retransmitted(s, 0, 2, 100);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 0);

	/* more SACKs above the same hole: its retransmission is not lost again */
	sack(s, 0, five, 5, &r);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_inflight(s), 5);          /* 0, 6..9 */
	sb_tx_free(s);
}

static void test_fast_retransmit_judges_each_hole_by_what_lies_above(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t a[] = { 1, 3, 4 }, b[] = { 1, 3, 4, 5 };

	for (int i = 0; i < 10; i++)
		push(s, i, 100, 10);
	sack(s, 0, a, 3, &r);             /* above 0: 1,3,4; above 2: 3,4 */
	assert_int_equal(sb_tx_lost_pending(s), 1);
	assert_int_equal(sb_tx_holes(s), 2);
	sack(s, 0, b, 4, &r);             /* above 2: 3,4,5 */
	assert_int_equal(sb_tx_lost_pending(s), 2);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	sb_tx_retransmitted(s, psn, 0, 20);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 2);
	sb_tx_free(s);
}

static void test_hole_resent_after_the_sacks_were_sent_is_left_to_the_timer(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint32_t above[] = { 1, 2, 3 };

	for (int i = 0; i < 4; i++)
		push(s, i, 100, 10);
	assert_int_equal(sb_tx_timeout(s, 10), 4);
	sb_tx_retransmitted(s, 0, 0, 50);  /* psn 0 resent after 1..3 were sent */
	sb_tx_retransmitted(s, 1, 0, 50);
	sb_tx_retransmitted(s, 2, 0, 50);
	sb_tx_retransmitted(s, 3, 0, 50);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	/* 1..3 acknowledged through copies sent at 10 would say nothing about
	 * psn 0's copy of 50; here all were resent together, so it is judged */
	sack(s, 0, above, 3, &r);
	assert_int_equal(sb_tx_lost_pending(s), 1);
	sb_tx_free(s);

	s = sb_tx_new(1024, 3);
	for (int i = 0; i < 4; i++)
		push(s, i, 100, 10);
	sb_tx_timeout(s, 10);
	sb_tx_retransmitted(s, 1, 0, 50);
	sb_tx_retransmitted(s, 2, 0, 50);
	sb_tx_retransmitted(s, 3, 0, 50);
	sb_tx_retransmitted(s, 0, 0, 60);  /* newer than 1..3's copies */
	sack(s, 0, above, 3, &r);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_oldest_sent(s), 60);
	sb_tx_free(s);
}

static void test_lost_resend_is_caught_by_packets_sent_after_it(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t old[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

	for (int i = 0; i < 10; i++)
		push(s, i, 100, 10);
	sack(s, 0, old, 9, &r);                       /* all but psn 0 */
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	sb_tx_retransmitted(s, 0, 0, 20);
	for (int i = 10; i < 13; i++)                 /* new data after the resend */
		push(s, i, 100, 30);
	sack(s, 0, old, 11, &r);                      /* 10, 11 */
	assert_int_equal(sb_tx_lost_pending(s), 0);   /* two sent after it: not yet */
	sack(s, 0, old, 12, &r);                      /* 12 */
	assert_int_equal(sb_tx_lost_pending(s), 1);   /* three: the resend is lost */
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	assert_int_equal(p.retx, 1);
	sb_tx_retransmitted(s, 0, 0, 40);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_oldest_sent(s), 40);
	sb_tx_free(s);
}

/* The same rule with deliveries reported out of transmission order. */
static void test_lost_resend_detection_counts_out_of_order_deliveries(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t old[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	uint32_t a[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15 };
	uint32_t b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 11 };
	uint32_t c[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 11, 14 };

	for (int i = 0; i < 10; i++)
		push(s, i, 100, 10);
	sack(s, 0, old, 9, &r);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	sb_tx_retransmitted(s, 0, 0, 20);            /* sent after 0..9, before 10.. */
	for (int i = 10; i < 16; i++)
		push(s, i, 100, 30);
	sack(s, 0, a, 10, &r);
	sack(s, 0, b, 11, &r);
	assert_int_equal(sb_tx_lost_pending(s), 0);  /* two delivered after the resend */
	sack(s, 0, c, 12, &r);
	/* 15, 11, 14: three sent after psn 0's resend (reported out of
	 * order); by psn, 10 has three SACKed above it, 12 and 13 two */
	assert_int_equal(sb_tx_lost_pending(s), 2);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	sb_tx_retransmitted(s, 0, 0, 40);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 10);                   /* 11, 14, 15 above it */
	sb_tx_free(s);
}

static void test_timeout_marks_packets_sent_before_the_cutoff(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct sb_pkt p;
	uint32_t psn;

	push(s, 0, 100, 100);
	push(s, 1, 100, 200);
	push(s, 2, 100, 300);
	assert_int_equal(sb_tx_oldest_sent(s), 100);
	assert_int_equal(sb_tx_timeout(s, 99), 0);
	assert_int_equal(sb_tx_timeout(s, 200), 2);
	assert_int_equal(sb_tx_lost_pending(s), 2);
	assert_int_equal(sb_tx_oldest_sent(s), 300);     /* lost ones are not timed */
	assert_int_equal(sb_tx_inflight(s), 3);          /* but still unacknowledged */
	assert_int_equal(sb_tx_inflight_bytes(s), 300);
	assert_int_equal(sb_tx_timeout(s, 250), 0);      /* not marked twice */

	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	sb_tx_retransmitted(s, 0, 3, 400);
	assert_int_equal(sb_tx_oldest_sent(s), 300);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 1);
	sb_tx_retransmitted(s, 1, 3, 500);
	assert_int_equal(sb_tx_timeout(s, 350), 1);      /* psn 2 only */
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 2);
	sb_tx_free(s);
}

/* sb_tx_rtos counts the timer's findings only: a loss SACKs show leaves it
 * as it is, each timeout that finds the packet again adds one, and a psn
 * not in flight (acknowledged, or never sent) reads 0. (sb_tx_push starts
 * every entry at 0.) */
static void test_rtos_counts_only_the_timers_findings(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn, above[] = { 1, 2, 3 };

	(void)state;
	for (int i = 0; i < 4; i++)
		push(s, (uint64_t)i, 100, 10);
	sack(s, 0, above, 3, &r);                       /* 0 lost by SACKs */
	assert_int_equal(sb_tx_lost_pending(s), 1);
	assert_int_equal(sb_tx_rtos(s, 0), 0);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	sb_tx_retransmitted(s, 0, 0, 20);
	assert_int_equal(sb_tx_timeout(s, 20), 1);      /* the timer finds it */
	assert_int_equal(sb_tx_rtos(s, 0), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	sb_tx_retransmitted(s, 0, 0, 30);
	assert_int_equal(sb_tx_timeout(s, 30), 1);
	assert_int_equal(sb_tx_rtos(s, 0), 2);
	assert_int_equal(sb_tx_rtos(s, 5), 0);          /* never sent */
	sack(s, 4, NULL, 0, &r);                        /* all acknowledged */
	assert_int_equal(sb_tx_rtos(s, 0), 0);
	sb_tx_free(s);
}

static void test_next_lost_is_oldest_psn_first(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 1);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn, got[8];
	int n = 0;
	uint32_t hi[] = { 301 };

	for (int i = 0; i < 302; i++)
		push(s, i, 10, i < 200 ? 1 : 1000);
	sack(s, 0, hi, 1, &r);             /* dupthresh 1: 0..300 sent at/before 301 */
	assert_int_equal(sb_tx_lost_pending(s), 301);
	/* resend them all, then a timeout takes back the old ones */
	while (sb_tx_next_lost(s, &psn, &p)) {
		if (n < 8)
			got[n] = psn;
		n++;
		sb_tx_retransmitted(s, psn, 0, psn >= 250 ? 5000 : 2000);
	}
	assert_int_equal(n, 301);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[7], 7);
	assert_int_equal(sb_tx_timeout(s, 2000), 250);
	n = 0;
	while (sb_tx_next_lost(s, &psn, &p)) {
		assert_int_equal(psn, (uint32_t)n);
		sb_tx_retransmitted(s, psn, 0, 6000);
		n++;
	}
	assert_int_equal(n, 250);
	sb_tx_free(s);
}

static void test_retransmitted_updates_the_packet(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct sb_pkt p;
	uint32_t psn;

	push(s, 77, 1234, 10);
	push(s, 78, 1000, 10);
	sb_tx_timeout(s, 10);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(p.retx, 0);
	assert_int_equal(p.path, 1);
	sb_tx_retransmitted(s, psn, 9, 40);
	sb_tx_timeout(s, 40);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);                 /* psn kept on resend */
	assert_int_equal(p.cookie, 77);
	assert_int_equal(p.bytes, 1234);
	assert_int_equal(p.retx, 1);
	assert_int_equal(p.path, 9);
	assert_int_equal(p.sent_ns, 40);
	sb_tx_retransmitted(s, psn, 4, 90);
	assert_int_equal(sb_tx_inflight(s), 2);
	assert_int_equal(sb_tx_inflight_bytes(s), 2234);
	assert_int_equal(sb_tx_lost_pending(s), 1);       /* psn 1 */
	/* an acknowledged psn, or one never sent, is not "retransmitted" */
	sb_tx_retransmitted(s, 5, 0, 100);
	assert_int_equal(sb_tx_inflight(s), 2);
	sb_tx_free(s);
}

static void test_lost_then_acknowledged_leaves_the_lost_set(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t late[] = { 1 };

	push(s, 0, 10, 1);
	push(s, 1, 10, 1);
	push(s, 2, 10, 1);
	sb_tx_timeout(s, 1);
	assert_int_equal(sb_tx_lost_pending(s), 3);
	assert_int_equal(sack(s, 0, late, 1, &r), 1);     /* it was only late */
	assert_int_equal(sb_tx_lost_pending(s), 2);
	assert_int_equal(sb_tx_ack(s, 1, NULL, 0, record, &r), 1);
	assert_int_equal(sb_tx_lost_pending(s), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 2);
	sb_tx_free(s);
}

static void test_bogus_ack_beyond_what_was_sent_is_refused(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint64_t w[16] = { 0 };
	uint32_t ok[] = { 4 };

	for (int i = 0; i < 5; i++)
		push(s, i, 10, 1);
	assert_int_equal(sb_tx_ack(s, 6, NULL, 0, record, &r), -EINVAL);
	assert_int_equal(sb_tx_ack(s, 0x7fffffffu, NULL, 0, record, &r), -EINVAL);
	w[0] = 1ull << 4;                 /* psn 5: never sent */
	assert_int_equal(sb_tx_ack(s, 0, w, 1, record, &r), -EINVAL);
	w[0] = 0;
	w[3] = 1;
	assert_int_equal(sb_tx_ack(s, 0, w, 4, record, &r), -EINVAL);
	w[3] = 0;
	assert_int_equal(sb_tx_ack(s, 5, w, 1, record, &r), 5);   /* zero words fine */
	assert_int_equal(r.n, 5);
	push(s, 5, 10, 1);
	w[0] = 1;                         /* cum 5, psn 6: never sent */
	assert_int_equal(sb_tx_ack(s, 5, w, 1, record, &r), -EINVAL);
	assert_int_equal(sb_tx_inflight(s), 1);
	/* the highest legal bit is fine */
	push(s, 6, 10, 1);
	push(s, 7, 10, 1);
	push(s, 8, 10, 1);
	push(s, 9, 10, 1);
	assert_int_equal(sack(s, 5, ok + 0, 0, &r), 0);
	ok[0] = 9;
	assert_int_equal(sack(s, 5, ok, 1, &r), 1);
	assert_int_equal(r.n, 6);
	sb_tx_free(s);
}

static void test_stale_ack_still_applies_its_sack_bits(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint32_t above[] = { 1, 2, 6 };

	for (int i = 0; i < 8; i++)
		push(s, i, 10, 1);
	sb_tx_ack(s, 3, NULL, 0, record, &r);
	assert_int_equal(r.n, 3);
	/* an older ACK (cum 0) reordered behind: its bit for 6 is news */
	assert_int_equal(sack(s, 0, above, 3, &r), 1);
	assert_int_equal(r.psn[3], 6);
	assert_int_equal(sb_tx_inflight(s), 4);
	sb_tx_free(s);
}

static void test_capacity_full_and_freed_by_acks(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint32_t top[] = { 1023 };

	assert_null(sb_tx_new(1000, 3));          /* not a power of two */
	assert_null(sb_tx_new(512, 3));           /* below 1024 */
	assert_null(sb_tx_new(1024, 0));
	for (int i = 0; i < 1024; i++)
		push(s, i, 1, 1);
	assert_true(sb_tx_full(s));
	/* a SACK does not free the ring: slots are held from una */
	sack(s, 0, top, 1, &r);
	assert_true(sb_tx_full(s));
	assert_int_equal(sb_tx_inflight(s), 1023);
	sb_tx_ack(s, 1, NULL, 0, record, &r);
	assert_false(sb_tx_full(s));
	assert_int_equal(push(s, 1024, 1, 2), 1024);
	assert_true(sb_tx_full(s));
	sb_tx_ack(s, 1025, NULL, 0, record, &r);
	assert_int_equal(r.n, 1025);              /* 0..1024, 1023 once */
	assert_int_equal(sb_tx_inflight(s), 0);
	sb_tx_free(s);
}

static void test_psn_wraps_across_2_32(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	uint32_t base = 0xfffffff0u;
	uint32_t above[] = { base + 17, base + 18, base + 19 };     /* 1, 2, 3 */

	assert_int_equal(sb_tx_start_at(s, base), 0);
	for (int i = 0; i < 40; i++)
		assert_int_equal(push(s, i, 10, 1), base + i);
	assert_int_equal(sb_tx_start_at(s, 5), -EBUSY);
	/* cum at 0x00000000, SACKs of 1..3 across the wrap: 0 is lost */
	assert_int_equal(sack(s, 0, above, 3, &r), 16 + 3);
	assert_int_equal(sb_tx_lost_pending(s), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	assert_int_equal(p.cookie, 16);
	assert_int_equal(sb_tx_ack(s, base + 50, NULL, 0, record, &r), -EINVAL);
	assert_int_equal(sb_tx_ack(s, base + 40, NULL, 0, record, &r), 40 - 19);
	assert_int_equal(sb_tx_inflight(s), 0);
	sb_tx_free(s);
}

static void test_clear_reports_every_unacknowledged_packet(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 }, dropped = { 0 };
	uint32_t above[] = { 3, 4 };

	for (int i = 0; i < 6; i++)
		push(s, 10 + i, 10, 1);
	sb_tx_ack(s, 1, NULL, 0, record, &r);
	sack(s, 1, above, 2, &r);
	sb_tx_timeout(s, 1);
	sb_tx_clear(s, record, &dropped);
	assert_int_equal(dropped.n, 3);           /* 1, 2, 5 */
	assert_int_equal(dropped.cookie[0], 11);
	assert_int_equal(dropped.cookie[1], 12);
	assert_int_equal(dropped.cookie[2], 15);
	assert_int_equal(sb_tx_inflight(s), 0);
	assert_int_equal(sb_tx_inflight_bytes(s), 0);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_holes(s), 0);
	assert_int_equal(sb_tx_oldest_sent(s), UINT64_MAX);
	assert_int_equal(push(s, 99, 10, 2), 6);  /* numbering continues */
	assert_int_equal(sb_tx_ack(s, 7, NULL, 0, record, &r), 1);
	sb_tx_free(s);
	sb_tx_free(NULL);
}

static void test_go_back_n_goes_back_once_per_hole(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	struct sb_pkt p;
	uint32_t psn;
	int n;

	for (int i = 0; i < 10; i++)
		push(s, i, 10, 1);
	assert_int_equal(sb_tx_ack_gbn(s, 3, record, &r), 3);
	assert_int_equal(sb_tx_ack_gbn(s, 3, record, &r), 0);     /* dup 1 */
	assert_int_equal(sb_tx_ack_gbn(s, 3, record, &r), 0);     /* dup 2 */
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_ack_gbn(s, 3, record, &r), 0);     /* dup 3 */
	assert_int_equal(sb_tx_lost_pending(s), 7);               /* 3..9 */
	n = 0;
	while (sb_tx_next_lost(s, &psn, &p)) {
		assert_int_equal(psn, 3 + n++);
		sb_tx_retransmitted(s, psn, 0, 5);
	}
	assert_int_equal(n, 7);
	for (int i = 0; i < 10; i++)      /* echoes of the first round */
		sb_tx_ack_gbn(s, 3, record, &r);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	/* a new hole at 6: go back from there */
	assert_int_equal(sb_tx_ack_gbn(s, 6, record, &r), 3);
	for (int i = 0; i < 3; i++)
		sb_tx_ack_gbn(s, 6, record, &r);
	assert_int_equal(sb_tx_lost_pending(s), 4);
	/* SACK words are not part of GBN; old ACKs are ignored; bogus refused */
	assert_int_equal(sb_tx_ack_gbn(s, 2, record, &r), 0);
	assert_int_equal(sb_tx_ack_gbn(s, 11, record, &r), -EINVAL);
	assert_int_equal(sb_tx_ack_gbn(s, 10, record, &r), 4);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(r.n, 10);
	sb_tx_free(s);
}

/* ---- receiver ---- */

static void test_rx_accepts_suppresses_duplicates_and_refuses_past_window(void **state)
{
	struct sb_rx *s = sb_rx_new(100);

	assert_null(sb_rx_new(0));
	assert_int_equal(sb_rx_accept(s, 0), 1);
	assert_int_equal(sb_rx_accept(s, 0), 0);
	assert_int_equal(sb_rx_cum(s), 1);
	assert_false(sb_rx_has_holes(s));
	assert_int_equal(sb_rx_accept(s, 100), 1);     /* cum + 99: last in window */
	assert_int_equal(sb_rx_accept(s, 101), -ERANGE);
	assert_int_equal(sb_rx_accept(s, 100), 0);
	assert_true(sb_rx_has_holes(s));
	assert_int_equal(sb_rx_accept(s, 0xffffff00u), 0);   /* long ago */
	for (uint32_t p = 1; p < 100; p++)
		assert_int_equal(sb_rx_accept(s, p), 1);
	assert_int_equal(sb_rx_cum(s), 101);
	assert_false(sb_rx_has_holes(s));
	assert_int_equal(sb_rx_accept(s, 200), 1);
	assert_int_equal(sb_rx_accept(s, 201), -ERANGE);
	sb_rx_free(s);
	sb_rx_free(NULL);
}

static void test_rx_sack_words_describe_the_holes(void **state)
{
	struct sb_rx *s = sb_rx_new(1024);
	uint64_t w[16];

	assert_int_equal(sb_rx_sack(s, w, 16), 0);
	sb_rx_accept(s, 0);
	sb_rx_accept(s, 2);               /* bit 0 of word 0 is psn cum+1 = 2 */
	sb_rx_accept(s, 4);
	sb_rx_accept(s, 65);              /* bit 63 */
	sb_rx_accept(s, 66);              /* word 1, bit 0 */
	sb_rx_accept(s, 1 + 64 * 5 + 7);  /* word 5, bit 6 */
	assert_int_equal(sb_rx_cum(s), 1);
	assert_int_equal(sb_rx_sack(s, w, 16), 6);
	assert_int_equal(w[0], 1ull | 1ull << 2 | 1ull << 63);
	assert_int_equal(w[1], 1);
	assert_int_equal(w[2] | w[3] | w[4], 0);
	assert_int_equal(w[5], 1ull << 6);
	assert_int_equal(sb_rx_sack(s, w, 2), 2);       /* truncated */

	sb_rx_accept(s, 1);               /* fills 1 and 2 */
	assert_int_equal(sb_rx_cum(s), 3);
	assert_int_equal(sb_rx_sack(s, w, 16), 6);
	assert_int_equal(w[0], 1ull | 1ull << 61 | 1ull << 62);   /* 4, 65, 66 */
	sb_rx_free(s);
}

static void test_rx_window_of_one_is_go_back_n(void **state)
{
	struct sb_rx *s = sb_rx_new(1);
	uint64_t w[16];

	assert_int_equal(sb_rx_accept(s, 0), 1);
	assert_int_equal(sb_rx_accept(s, 2), -ERANGE);
	assert_int_equal(sb_rx_accept(s, 1), 1);
	assert_int_equal(sb_rx_accept(s, 1), 0);
	assert_int_equal(sb_rx_cum(s), 2);
	assert_false(sb_rx_has_holes(s));
	assert_int_equal(sb_rx_sack(s, w, 16), 0);
	sb_rx_free(s);
}

static void test_rx_wraps_across_2_32(void **state)
{
	struct sb_rx *s = sb_rx_new(256);
	uint64_t w[16];

	assert_int_equal(sb_rx_start_at(s, 0xfffffffeu), 0);
	assert_int_equal(sb_rx_accept(s, 1), 1);        /* cum + 3 */
	assert_int_equal(sb_rx_start_at(s, 5), -EBUSY);
	assert_int_equal(sb_rx_accept(s, 0xfffffffdu), 0);
	assert_int_equal(sb_rx_sack(s, w, 16), 1);
	assert_int_equal(w[0], 1ull << 2);
	assert_int_equal(sb_rx_accept(s, 0xfffffffeu), 1);
	assert_int_equal(sb_rx_accept(s, 0xffffffffu), 1);
	assert_int_equal(sb_rx_cum(s), 0);
	assert_int_equal(sb_rx_accept(s, 0), 1);
	assert_int_equal(sb_rx_cum(s), 2);
	assert_int_equal(sb_rx_accept(s, 2 + 256), -ERANGE);
	assert_false(sb_rx_has_holes(s));
	sb_rx_free(s);
}

/* ---- both halves ---- */

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

struct lossy {
	uint8_t seen[20000];
	int acked;
};

static void once(void *arg, uint32_t psn, const struct sb_pkt *p)
{
	struct lossy *l = arg;

	assert_true(p->cookie < 20000);
	assert_int_equal(l->seen[p->cookie], 0);
	l->seen[p->cookie] = 1;
	l->acked++;
}

/* Random loss both ways, ACKs from the receiver's own state, starting just
 * below the wrap: every packet is acknowledged exactly once. */
static void run_lossy(bool gbn)
{
	struct sb_tx *tx = sb_tx_new(1024, 3);
	struct sb_rx *rx = sb_rx_new(gbn ? 1 : 1024);
	struct lossy *l = calloc(1, sizeof(*l));
	uint64_t seed = 0x9e3779b97f4a7c15ull, now = 1;
	uint32_t next = 0, total = 20000;
	uint32_t wire[256];
	int nwire;

	sb_tx_start_at(tx, 0xffffff00u);
	sb_rx_start_at(rx, 0xffffff00u);
	while (l->acked < (int)total) {
		struct sb_pkt p;
		uint32_t psn;
		uint64_t w[16];
		uint32_t words;
		int r;

		assert_true(now < 2000000);
		now++;
		nwire = 0;
		while (nwire < 256 && sb_tx_next_lost(tx, &psn, &p)) {
			sb_tx_retransmitted(tx, psn, 0, now);
			wire[nwire++] = psn;
		}
		while (nwire < 256 && next < total && !sb_tx_full(tx) && sb_tx_inflight(tx) < 600) {
			p = (struct sb_pkt){ .cookie = next++, .sent_ns = now, .bytes = 1 };
			wire[nwire++] = sb_tx_push(tx, &p);
		}
		/* shuffle a little: swap neighbours */
		for (int i = 1; i < nwire; i++)
			if (rng(&seed) % 8 == 0) {
				uint32_t t = wire[i];
				wire[i] = wire[i - 1];
				wire[i - 1] = t;
			}
		for (int i = 0; i < nwire; i++)
			if (rng(&seed) % 100 >= 3)
				sb_rx_accept(rx, wire[i]);
		if (rng(&seed) % 100 < 3)
			continue;          /* the ACK is lost */
		if (gbn) {
			r = sb_tx_ack_gbn(tx, sb_rx_cum(rx), once, l);
			/* duplicates for the hole, as a GBN receiver would send */
			for (int i = 0; i < 3 && nwire; i++)
				r = sb_tx_ack_gbn(tx, sb_rx_cum(rx), once, l);
		} else {
			words = sb_rx_sack(rx, w, 16);
			r = sb_tx_ack(tx, sb_rx_cum(rx), w, words, once, l);
		}
		assert_true(r >= 0);
		if (sb_tx_oldest_sent(tx) + 20 < now)
			sb_tx_timeout(tx, now - 20);
	}
	assert_int_equal(sb_rx_cum(rx), 0xffffff00u + total);
	assert_int_equal(sb_tx_inflight(tx), 0);
	assert_int_equal(sb_tx_lost_pending(tx), 0);
	free(l);
	sb_rx_free(rx);
	sb_tx_free(tx);
}

static void test_lossy_run_acknowledges_everything_once_sack(void **state)
{
	run_lossy(false);
}

static void test_lossy_run_acknowledges_everything_once_gbn(void **state)
{
	run_lossy(true);
}

/* ---- releasing the ring of an empty scoreboard ---- */

static void test_tx_release_only_when_empty_and_psns_carry_on(void **state)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	struct rec r = { 0 };
	uint64_t w[16];
	uint32_t above[] = { 5 };
	size_t small;

	for (int i = 0; i < 5; i++)
		push(s, i, 10, 1);
	assert_false(sb_tx_release(s));        /* packets out: kept */
	assert_int_equal(sb_tx_ack(s, 5, NULL, 0, record, &r), 5);
	assert_true(sb_tx_release(s));
	small = sb_tx_bytes(s);
	assert_true(small < 256);
	/* everything but push works without the ring: a stale ACK (with a SACK
	 * bit for a psn that was acknowledged), a bogus one, a timeout */
	memset(w, 0, sizeof(w));
	w[0] = 1ull << 2;                       /* psn 3 relative to cum 0 */
	assert_int_equal(sb_tx_ack(s, 0, w, 1, record, &r), 0);
	assert_int_equal(sack(s, 5, above, 0, &r), 0);
	assert_int_equal(sb_tx_ack(s, 6, NULL, 0, record, &r), -EINVAL);
	assert_int_equal(sb_tx_ack_gbn(s, 5, record, &r), 0);
	assert_int_equal(sb_tx_timeout(s, UINT64_MAX), 0);
	sb_tx_retransmitted(s, 4, 0, 9);
	sb_tx_clear(s, record, &r);
	assert_int_equal(r.n, 5);
	assert_int_equal(sb_tx_bytes(s), small);
	/* back with the ring: numbering continues at 5 */
	assert_int_equal(sb_tx_reserve(s), 0);
	assert_true(sb_tx_bytes(s) > small);
	assert_int_equal(push(s, 9, 10, 2), 5);
	assert_int_equal(push(s, 9, 10, 2), 6);
	assert_int_equal(sack(s, 5, (uint32_t[]){ 6 }, 1, &r), 1);
	assert_int_equal(sb_tx_holes(s), 1);
	assert_int_equal(sb_tx_ack(s, 7, NULL, 0, record, &r), 1);
	assert_int_equal(r.psn[r.n - 1], 5);
	sb_tx_free(s);
}

/* The ring starts small and doubles while packets fly: SACKed, lost and
 * in-flight entries, their send times and the time order survive the moves,
 * across the psn wrap too. */
static void test_ring_grows_keeping_every_entry(void **state)
{
	struct sb_tx *s = sb_tx_new(4096, 3);
	struct rec r = { 0 };
	uint32_t base = UINT32_MAX - 40, sacked[10], psn;
	struct sb_pkt p;
	size_t b0;
	bool seen[260] = { false };

	assert_int_equal(sb_tx_start_at(s, base), 0);
	b0 = sb_tx_bytes(s);
	for (uint32_t i = 0; i < 60; i++)
		assert_int_equal(push(s, i, 10, i), base + i);
	for (uint32_t i = 0; i < 10; i++)
		sacked[i] = base + 10 + i;
	assert_int_equal(sack(s, base, sacked, 10, &r), 10);
	assert_int_equal(sb_tx_lost_pending(s), 10);      /* base .. base + 9 */
	for (uint32_t i = 60; i < 260; i++)               /* 64 -> 128 -> 256 -> 512 */
		assert_int_equal(push(s, i, 10, i), base + i);
	assert_true(sb_tx_bytes(s) > b0 + 256 * 40);
	assert_false(sb_tx_full(s));
	assert_int_equal(sb_tx_lost_pending(s), 10);
	assert_int_equal(sb_tx_holes(s), 10);
	assert_int_equal(sb_tx_inflight(s), 250);
	assert_int_equal(sb_tx_inflight_bytes(s), 2500);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, base);
	assert_int_equal(p.cookie, 0);
	/* the time list still runs oldest first: 20 .. 30 time out */
	assert_int_equal(sb_tx_oldest_sent(s), 20);
	assert_int_equal(sb_tx_timeout(s, 30), 11);
	assert_int_equal(sb_tx_oldest_sent(s), 31);
	assert_int_equal(sb_tx_lost_pending(s), 21);
	assert_int_equal(sb_tx_ack(s, base + 5, NULL, 0, record, &r), 5);
	assert_int_equal(sb_tx_ack(s, base + 260, NULL, 0, record, &r), 245);
	assert_int_equal(r.n, 260);
	for (int i = 0; i < r.n; i++) {
		uint32_t k = r.psn[i] - base;

		assert_true(k < 260);
		assert_false(seen[k]);
		assert_int_equal(r.cookie[i], k);
		seen[k] = true;
	}
	assert_int_equal(sb_tx_inflight(s), 0);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_true(sb_tx_release(s));
	sb_tx_free(s);
}

static void test_rx_bitmap_only_while_out_of_order(void **state)
{
	struct sb_rx *s = sb_rx_new(4096);
	uint64_t w[4];
	size_t small;

	assert_true(sb_rx_release(s));
	small = sb_rx_bytes(s);
	for (uint32_t psn = 0; psn < 100; psn++)
		assert_int_equal(sb_rx_accept(s, psn), 1);
	assert_int_equal(sb_rx_bytes(s), small);   /* in order: no bitmap */
	assert_int_equal(sb_rx_accept(s, 50), 0);
	assert_int_equal(sb_rx_accept(s, 102), 1); /* a hole: the bitmap comes */
	assert_true(sb_rx_bytes(s) > small);
	assert_false(sb_rx_release(s));
	assert_int_equal(sb_rx_sack(s, w, 4), 1);
	assert_int_equal(w[0], 2);
	assert_int_equal(sb_rx_accept(s, 102), 0);
	assert_int_equal(sb_rx_accept(s, 100), 1);
	assert_int_equal(sb_rx_accept(s, 101), 1);
	assert_int_equal(sb_rx_cum(s), 103);
	assert_true(sb_rx_release(s));
	assert_int_equal(sb_rx_bytes(s), small);
	assert_int_equal(sb_rx_accept(s, 102), 0);  /* old: still a duplicate */
	assert_int_equal(sb_rx_accept(s, 103 + 4096), -ERANGE);
	assert_int_equal(sb_rx_accept(s, 104), 1);
	assert_int_equal(sb_rx_accept(s, 103), 1);
	assert_int_equal(sb_rx_cum(s), 105);
	sb_rx_free(s);
}

/* ---- reordering window (RACK) ---- */

#define US 1000ull

/* An ACK at `now` with the given SACKed psns, tsecr and RTT estimates of
 * 40 us (reo_wnd min_rtt/4 = 10 us at first). */
static int sack_at(struct sb_tx *s, uint32_t cum, const uint32_t *psns, int n, uint64_t now,
		   uint64_t tsecr, struct rec *r)
{
	uint64_t w[16];
	uint32_t words = sack_of(cum, psns, n, w);
	struct sb_ack_time t = { .now_ns = now, .tsecr_ns = tsecr,
				 .min_rtt_ns = 40 * US, .srtt_ns = 40 * US };

	return sb_tx_ack_at(s, cum, w, words, &t, record, r);
}

/* psns 0..9 sent 1 us apart; 1..9 SACKed at 50 us: psn 0 has a reorder
 * timer of sent 0 + rack_rtt (50 - 9 = 41 us) + reo_wnd 10 us = 51 us. */
static struct sb_tx *rack_setup(bool rack, struct rec *r)
{
	struct sb_tx *s = sb_tx_new(1024, 3);
	const uint32_t above[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

	sb_tx_set_rack(s, rack);
	for (int i = 0; i < 10; i++)
		push(s, (uint64_t)i, 1000, (uint64_t)i * US);
	assert_int_equal(sack_at(s, 0, above, 9, 50 * US, 9 * US, r), 9);
	return s;
}

/* Reordered by less than reo_wnd: not lost, and the late original closes
 * the hole without a resend. The same ACKs without the window make it a
 * fast retransmit (9 SACKed > dupthresh 3). */
static void test_rack_reordered_within_window_is_not_retransmitted(void **state)
{
	struct rec r = { 0 };
	struct sb_tx *s = rack_setup(true, &r), *off;
	uint32_t psn;
	struct sb_pkt p;

	(void)state;
	assert_int_equal(sb_tx_reo_wnd(s), 10 * US);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_rack_deadline(s), 51 * US);
	assert_int_equal(sack_at(s, 10, NULL, 0, 50500, 0, &r), 1);  /* the original */
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 0);
	assert_int_equal(sb_tx_rack_deadline(s), UINT64_MAX);
	assert_int_equal(sb_tx_rack_expire(s, 100 * US), 0);
	sb_tx_free(s);

	memset(&r, 0, sizeof(r));
	off = rack_setup(false, &r);
	assert_int_equal(sb_tx_lost_pending(off), 1);
	sb_tx_free(off);
}

/* A real loss is declared when its reorder timer runs out, not earlier,
 * and without waiting for another ACK. */
static void test_rack_lost_packet_is_lost_when_its_timer_expires(void **state)
{
	struct rec r = { 0 };
	struct sb_tx *s = rack_setup(true, &r);
	uint32_t psn;
	struct sb_pkt p;

	(void)state;
	assert_int_equal(sb_tx_rack_expire(s, 51 * US - 1), 0);
	assert_int_equal(sb_tx_lost_pending(s), 0);
	assert_int_equal(sb_tx_rack_expire(s, 51 * US), 1);
	assert_int_equal(sb_tx_lost_pending(s), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	assert_int_equal(psn, 0);
	assert_int_equal(sb_tx_rack_deadline(s), UINT64_MAX);
	sb_tx_free(s);
}

/* Holes already judged by fast retransmit whose resends went out together:
 * when one resend is lost again, only the other resends were delivered
 * after it. Such deliveries acknowledged at least min_rtt after they went,
 * by an ACK that echoes no older copy, count toward dupthresh (RFC 8985,
 * 6.2: the resend is taken to be what arrived) and catch it; sooner, the
 * original may be what arrived, and they do not. Reordering window off:
 * dupthresh alone decides. */
static void lost_resend_among_resends(uint64_t ack_ns, uint64_t tsecr, int want_lost)
{
	struct rec r = { 0 };
	struct sb_tx *s = sb_tx_new(1024, 3);
	const uint32_t first[] = { 4, 5, 6 }, then[] = { 1, 2, 3, 4, 5, 6 };
	uint32_t psn;
	struct sb_pkt p;

	sb_tx_set_rack(s, false);
	for (int i = 0; i < 7; i++)
		push(s, (uint64_t)i, 1000, 0);
	/* 4, 5, 6 arrive: 0..3 are lost, judged once */
	assert_int_equal(sack_at(s, 0, first, 3, 50 * US, 0, &r), 3);
	assert_int_equal(sb_tx_lost_pending(s), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
		assert_int_equal(psn, i);
		sb_tx_retransmitted(s, psn, 1, (60 + i) * US);
	}
	/* the resends of 1, 2 and 3 arrive; 0's is lost again */
	assert_int_equal(sack_at(s, 0, then, 6, ack_ns, tsecr, &r), 3);
	assert_int_equal(sb_tx_lost_pending(s), want_lost);
	if (want_lost) {
		assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
		assert_int_equal(psn, 0);
		assert_int_equal(p.retx, 1);
	}
	sb_tx_free(s);
}

static void test_resends_delivered_a_round_trip_later_count_toward_dupthresh(void **state)
{
	(void)state;
	/* the ACK echoes the newest resend that arrived new
	 * (docs/wire-protocol.md) */
	lost_resend_among_resends(110 * US, 63 * US, 1);   /* 47..50 us after the resends: theirs */
	lost_resend_among_resends(90 * US, 63 * US, 0);    /* 27..30 us: maybe the originals */
	/* a round trip later, but echoing an original (sent at 0): the
	 * originals arrived late (a spurious timeout's resends, when the ACKs
	 * were held up), and what became of the resends is not known */
	lost_resend_among_resends(110 * US, 0, 0);
}

/* A resend acknowledged within a round trip by an ACK echoing a copy sent
 * before it (tsecr older than the resend) was spurious: the window grows by
 * min_rtt/4, up to srtt. A resend acknowledged by its own copy is not, nor
 * one acknowledged a round trip later by a coalesced ACK echoing an older
 * packet. */
/* Psns base..base+9 sent 1 us apart from t0, all but base SACKed 50 us
 * later; base's reorder timer runs out and it is resent at t0 + 100 us.
 * Returns the psn resent. */
static uint32_t resend_first_of_ten(struct sb_tx *s, uint32_t base, uint64_t t0, struct rec *r)
{
	uint32_t above[9], psn;
	struct sb_pkt p;

	for (int i = 0; i < 10; i++)
		push(s, (uint64_t)i, 1000, t0 + (uint64_t)i * US);
	for (uint32_t i = 0; i < 9; i++)
		above[i] = base + 1 + i;
	assert_int_equal(sack_at(s, base, above, 9, t0 + 50 * US, t0 + 9 * US, r), 9);
	assert_int_equal(sb_tx_rack_expire(s, t0 + 100 * US), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	sb_tx_retransmitted(s, psn, 2, t0 + 100 * US);
	return psn;
}

static void test_rack_window_grows_after_spurious_retransmission(void **state)
{
	struct rec r = { 0 };
	struct sb_tx *s = rack_setup(true, &r);
	uint32_t psn;
	struct sb_pkt p;

	(void)state;
	assert_int_equal(sb_tx_rack_expire(s, 51 * US), 1);
	assert_int_equal(sb_tx_next_lost(s, &psn, &p), 1);
	sb_tx_retransmitted(s, psn, 2, 52 * US);
	/* the original arrives after all: the ACK echoes its send time, 0 */
	assert_int_equal(sack_at(s, 10, NULL, 0, 60 * US, 0, &r), 1);
	assert_int_equal(sb_tx_spurious(s), 1);
	assert_int_equal(sb_tx_reo_wnd(s), 20 * US);

	/* a needed resend (acknowledged by an ACK its own copy triggered)
	 * leaves the window as it is */
	assert_int_equal(resend_first_of_ten(s, 10, 100 * US, &r), 10);
	assert_int_equal(sack_at(s, 20, NULL, 0, 240 * US, 200 * US, &r), 1);
	assert_int_equal(sb_tx_spurious(s), 1);
	assert_int_equal(sb_tx_reo_wnd(s), 20 * US);

	/* nor one acknowledged a round trip after it went, by a coalesced
	 * ACK echoing a packet sent before it */
	assert_int_equal(resend_first_of_ten(s, 20, 300 * US, &r), 20);
	assert_int_equal(sack_at(s, 30, NULL, 0, 445 * US, 390 * US, &r), 1);
	assert_int_equal(sb_tx_spurious(s), 1);
	assert_int_equal(sb_tx_reo_wnd(s), 20 * US);
	sb_tx_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cumulative_ack_retires_in_order),
		cmocka_unit_test(test_sack_out_of_order_is_reported_once),
		cmocka_unit_test(test_fast_retransmit_after_dupthresh_sacks_marks_once),
		cmocka_unit_test(test_fast_retransmit_judges_each_hole_by_what_lies_above),
		cmocka_unit_test(test_hole_resent_after_the_sacks_were_sent_is_left_to_the_timer),
		cmocka_unit_test(test_lost_resend_is_caught_by_packets_sent_after_it),
		cmocka_unit_test(test_lost_resend_detection_counts_out_of_order_deliveries),
		cmocka_unit_test(test_timeout_marks_packets_sent_before_the_cutoff),
		cmocka_unit_test(test_rtos_counts_only_the_timers_findings),
		cmocka_unit_test(test_next_lost_is_oldest_psn_first),
		cmocka_unit_test(test_retransmitted_updates_the_packet),
		cmocka_unit_test(test_lost_then_acknowledged_leaves_the_lost_set),
		cmocka_unit_test(test_bogus_ack_beyond_what_was_sent_is_refused),
		cmocka_unit_test(test_stale_ack_still_applies_its_sack_bits),
		cmocka_unit_test(test_capacity_full_and_freed_by_acks),
		cmocka_unit_test(test_psn_wraps_across_2_32),
		cmocka_unit_test(test_clear_reports_every_unacknowledged_packet),
		cmocka_unit_test(test_go_back_n_goes_back_once_per_hole),
		cmocka_unit_test(test_rx_accepts_suppresses_duplicates_and_refuses_past_window),
		cmocka_unit_test(test_rx_sack_words_describe_the_holes),
		cmocka_unit_test(test_rx_window_of_one_is_go_back_n),
		cmocka_unit_test(test_rx_wraps_across_2_32),
		cmocka_unit_test(test_lossy_run_acknowledges_everything_once_sack),
		cmocka_unit_test(test_lossy_run_acknowledges_everything_once_gbn),
		cmocka_unit_test(test_tx_release_only_when_empty_and_psns_carry_on),
		cmocka_unit_test(test_ring_grows_keeping_every_entry),
		cmocka_unit_test(test_rx_bitmap_only_while_out_of_order),
		cmocka_unit_test(test_rack_reordered_within_window_is_not_retransmitted),
		cmocka_unit_test(test_rack_lost_packet_is_lost_when_its_timer_expires),
		cmocka_unit_test(test_rack_window_grows_after_spurious_retransmission),
		cmocka_unit_test(test_resends_delivered_a_round_trip_later_count_toward_dupthresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
