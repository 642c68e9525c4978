/* SPDX-License-Identifier: MIT */
/*
 * Receiver-driven credit (cc "eqds", engine/pull): the CREDIT packet's
 * codec; a sender in credit mode sends one speculative burst and then
 * nothing without grants; a receiver's pull pacer, unpaced or paced,
 * carries a transfer byte for byte, paced at the pacer's rate rather than
 * the wire's; grants and requests lost on the wire are repaired; the
 * pacer takes its members in turn at its rate and does not save up idle
 * time.
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

#include "engine/cc/cc.h"
#include "engine/pull.h"
#include "engine/tpchan.h"
#include "engine/wire.h"
#include "tests/unit/wirelink.h"

#define US 1000ull
#define MS 1000000ull
#define TOKEN_A 0x1111222233334444ull
#define TOKEN_B 0x5555666677778888ull
/* payload bytes of one packet at mtu 1500 */
#define MSS1500 (1500u - WIRE_DATA_HDR_LEN)
#define MSG     (256u * 1024)
#define NMSG    32u

struct world {
	struct tpchan *a, *b;          /* a sends, b receives */
	struct wirelink *link;
	struct pull *pull;             /* b's pacer, or NULL */
	uint8_t *src, *dst;
	uint32_t next, completed, failed;
	uint64_t delivered;
	uint32_t drop_credit_until_ms; /* the tap drops CREDIT packets until then */
	uint64_t credits_dropped;
};

static int a_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	struct world *w = arg;

	memcpy(dst, w->src + cookie * MSG + off, len);
	return 0;
}

static void a_complete(void *arg, uint64_t cookie, int res)
{
	struct world *w = arg;

	(void)cookie;
	if (res == 0)
		w->completed++;
	else
		w->failed++;
}

static int b_deliver(void *arg, const struct wire_data *d)
{
	struct world *w = arg;

	if (d->roff + d->msg_off + d->payload_len > (uint64_t)NMSG * MSG)
		return -ERANGE;
	memcpy(w->dst + d->roff + d->msg_off, d->payload, d->payload_len);
	w->delivered += d->payload_len;
	return 0;
}

static int no_deliver(void *arg, const struct wire_data *d)
{
	(void)arg;
	(void)d;
	fail_msg("a was handed DATA");
	return -EINVAL;
}

static int no_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	fail_msg("b was asked for data");
	return -EINVAL;
}

static void no_complete(void *arg, uint64_t cookie, int res)
{
	fail_msg("b completed a message");
}

static const struct tpchan_cb a_cb = { .read = a_read, .deliver = no_deliver, .complete = a_complete };
static const struct tpchan_cb b_cb = { .read = no_read, .deliver = b_deliver, .complete = no_complete };

/* Idle hold and freezing of every channel world_new makes (0: none). */
static uint64_t g_idle_release_ns;
static bool g_freeze_off;

static struct tpchan_params params(const struct cc_ops *cc)
{
	return (struct tpchan_params){
		.mtu = 1500, .chunk_bytes = 32768, .npaths = 4, .max_inflight_pkts = 4096,
		.max_inflight_bytes = 4 << 20, .max_msgs = 256, .crc = true,
		.rto_init_ns = 1 * MS, .rto_min_ns = 200 * US, .rto_max_ns = 20 * MS,
		.max_retx = 10, .cc = cc,
		.idle_release_ns = g_idle_release_ns, .freeze_off = g_freeze_off,
	};
}

static uint64_t pacer(void *arg, uint64_t now)
{
	struct world *w = arg;

	return w->pull ? pull_run(w->pull, now) : UINT64_MAX;
}

static int64_t tap(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct world *w = arg;

	if (len > 2 && pkt[2] == WIRE_CREDIT &&
	    wirelink_now(w->link) < w->drop_credit_until_ms * MS) {
		w->credits_dropped++;
		return -1;
	}
	return 0;
}

static void world_new(struct world *w, const struct cc_ops *cc, uint64_t pull_bps,
		      uint32_t rate_gbps, uint32_t loss_ppm)
{
	struct tpchan_params a = params(cc), b = params(NULL);
	struct wirelink_params lp = {
		.seed = 7, .mtu = 1500, .rate_gbps = rate_gbps, .delay_ns = 5 * US,
		.path_skew_ns = 50, .loss_ppm = loss_ppm,
	};

	memset(w, 0, sizeof(*w));
	w->src = malloc((size_t)NMSG * MSG);
	w->dst = calloc(NMSG, MSG);
	assert_non_null(w->src);
	assert_non_null(w->dst);
	for (size_t i = 0; i < (size_t)NMSG * MSG; i++)
		w->src[i] = (uint8_t)(i * 131 + (i >> 12) + 1);
	a.tx_token = TOKEN_B, a.rx_token = TOKEN_A, a.cb = &a_cb, a.cb_arg = w, a.seed = 1;
	b.tx_token = TOKEN_A, b.rx_token = TOKEN_B, b.cb = &b_cb, b.cb_arg = w, b.seed = 2;
	w->a = tpchan_new(&a);
	w->b = tpchan_new(&b);
	assert_non_null(w->a);
	assert_non_null(w->b);
	w->link = wirelink_new(&lp, w->a, w->b, 1000);
	assert_non_null(w->link);
	if (pull_bps != UINT64_MAX) {
		w->pull = pull_new(pull_bps, 0);
		assert_non_null(w->pull);
		assert_int_equal(pull_add(w->pull, w->b), 0);
		assert_int_equal(pull_add(w->pull, w->b), -EEXIST);
	}
	wirelink_set_timer(w->link, pacer, w);
	wirelink_set_tap(w->link, tap, w);
}

static void world_free(struct world *w)
{
	wirelink_free(w->link);
	pull_free(w->pull);
	tpchan_free(w->a);
	tpchan_free(w->b);
	free(w->src);
	free(w->dst);
}

static bool pump(void *arg)
{
	struct world *w = arg;

	while (w->next < NMSG) {
		struct tpchan_msg m = { .cookie = w->next, .opcode = 2, .dst_ep = 1, .dst_conn = 1,
					.rkey = 1, .roff = (uint64_t)w->next * MSG, .len = MSG };

		if (tpchan_submit(w->a, &m) < 0)
			break;
		w->next++;
	}
	return w->completed + w->failed == NMSG;
}

static void check_all_arrived(const struct world *w)
{
	assert_int_equal(w->completed, NMSG);
	assert_int_equal(w->failed, 0);
	assert_memory_equal(w->src, w->dst, (size_t)NMSG * MSG);
}

/* ---- the codec ---- */

static void test_credit_packet_round_trips_and_bad_ones_are_refused(void **state)
{
	uint8_t buf[64];
	struct wire_credit c = { .flags = WIRE_F_GRANT | WIRE_F_REQ, .psn = 0xfffffff0u,
				 .token = 0x0102030405060708ull };
	struct wire_pkt p;

	(void)state;
	assert_int_equal(wire_write_credit(buf, sizeof(buf), &c), WIRE_CREDIT_LEN);
	assert_int_equal(wire_parse(buf, WIRE_CREDIT_LEN, &p), 0);
	assert_int_equal(p.type, WIRE_CREDIT);
	assert_int_equal(p.credit.flags, c.flags);
	assert_int_equal(p.credit.psn, c.psn);
	assert_int_equal(p.credit.token, c.token);
	/* truncated, padded, no flag, an unknown flag */
	assert_int_equal(wire_parse(buf, WIRE_CREDIT_LEN - 1, &p), -EBADMSG);
	assert_int_equal(wire_parse(buf, WIRE_CREDIT_LEN + 1, &p), -EBADMSG);
	buf[3] = 0;
	assert_int_equal(wire_parse(buf, WIRE_CREDIT_LEN, &p), -EBADMSG);
	buf[3] = 0x04;
	assert_int_equal(wire_parse(buf, WIRE_CREDIT_LEN, &p), -EBADMSG);
	c.flags = 0;
	assert_int_equal(wire_write_credit(buf, sizeof(buf), &c), -EINVAL);
	c.flags = WIRE_F_GRANT;
	assert_int_equal(wire_write_credit(buf, WIRE_CREDIT_LEN - 1, &c), -ENOSPC);
}

/* ---- the sender ---- */

static void test_without_credit_a_sender_sends_one_speculative_burst(void **state)
{
	struct world w;
	struct tpchan_stats sa, sb;
	uint32_t spec;

	(void)state;
	world_new(&w, &cc_eqds_ops, UINT64_MAX, 100, 0);   /* b runs no pacer */
	assert_int_equal(wirelink_run(w.link, pump, &w, 50 * MS), -ETIME);
	tpchan_get_stats(w.a, &sa);
	tpchan_get_stats(w.b, &sb);
	/* eqds speculates two chunks: 65536 bytes in MSS1500-byte payloads */
	spec = (2 * 32768 + MSS1500 - 1) / MSS1500;
	assert_int_equal(sa.data_pkts_tx, spec);
	assert_int_equal(sb.data_pkts_rx, spec);
	assert_int_equal(w.completed, 0);
	/* it told b it waits: b would grant if it had a pacer */
	assert_true(tpchan_credit_wanted(w.b));
	/* and it asks again, the RTO (200 us here) doubling up to 64x: about
	 * nine times in 50 ms, not in a loop */
	assert_true(sa.credit_reqs_tx >= 5);
	assert_true(sa.credit_reqs_tx <= 15);
	assert_int_equal(sb.credits_tx, 0);
	world_free(&w);
}

static void test_unpaced_credit_carries_a_transfer(void **state)
{
	struct world w;
	struct tpchan_stats sa, sb;

	(void)state;
	world_new(&w, &cc_eqds_ops, 0, 100, 0);
	assert_int_equal(wirelink_run(w.link, pump, &w, 2000 * MS), 0);
	check_all_arrived(&w);
	tpchan_get_stats(w.a, &sa);
	tpchan_get_stats(w.b, &sb);
	assert_true(sb.credits_tx > 0);
	assert_true(sa.credits_rx > 0);
	assert_true(sb.credit_granted_pkts >= sa.data_pkts_tx - (2 * 32768 + MSS1500 - 1) / MSS1500);
	world_free(&w);
}

/* 8 MiB at a 10 Gbit/s pacer over a 100 Gbit/s wire: the pacer sets the
 * pace (6.7 ms of wire bytes at 10G), where the window cc takes ~1 ms */
static void test_paced_credit_holds_the_pacer_rate(void **state)
{
	struct world w;
	struct pull_stats ps;
	uint64_t t_eqds, t_window, bits = (uint64_t)NMSG * MSG * 8;

	(void)state;
	world_new(&w, &cc_eqds_ops, 10000000000ull, 100, 0);
	assert_int_equal(wirelink_run(w.link, pump, &w, 2000 * MS), 0);
	check_all_arrived(&w);
	t_eqds = wirelink_now(w.link) - 1000;
	pull_get_stats(w.pull, &ps);
	assert_int_equal(ps.members, 1);
	assert_true(ps.grants > 0);
	world_free(&w);

	world_new(&w, &cc_window_ops, 10000000000ull, 100, 0);
	assert_int_equal(wirelink_run(w.link, pump, &w, 2000 * MS), 0);
	check_all_arrived(&w);
	t_window = wirelink_now(w.link) - 1000;
	world_free(&w);

	/* payload at 10G is bits / 10 ns; headers add ~7% */
	assert_true(t_eqds >= bits / 10);
	assert_true(t_eqds <= bits / 10 * 13 / 10);
	assert_true(t_window * 3 < t_eqds);
}

static void test_lost_grants_and_requests_are_repaired(void **state)
{
	struct world w;

	(void)state;
	world_new(&w, &cc_eqds_ops, 20000000000ull, 100, 0);
	w.drop_credit_until_ms = 5;                      /* every CREDIT, both ways */
	assert_int_equal(wirelink_run(w.link, pump, &w, 5000 * MS), 0);
	check_all_arrived(&w);
	assert_true(w.credits_dropped > 0);
	world_free(&w);
}

static void test_credit_survives_random_loss(void **state)
{
	struct world w;

	(void)state;
	world_new(&w, &cc_eqds_ops, 20000000000ull, 100, 10000);   /* 1% */
	assert_int_equal(wirelink_run(w.link, pump, &w, 5000 * MS), 0);
	check_all_arrived(&w);
	world_free(&w);
}

/* A channel switched to eqds mid-transfer asks for credit and goes on;
 * switched back, it sends without. */
static bool switch_midway(void *arg)
{
	struct world *w = arg;

	if (w->completed == NMSG / 3 && strcmp(tpchan_cc_name(w->a), "window") == 0)
		assert_int_equal(tpchan_set_cc(w->a, &cc_eqds_ops), 0);
	if (w->completed == 2 * NMSG / 3 && strcmp(tpchan_cc_name(w->a), "eqds") == 0)
		assert_int_equal(tpchan_set_cc(w->a, &cc_window_ops), 0);
	return pump(arg);
}

static void test_switching_to_and_from_eqds_mid_transfer(void **state)
{
	struct world w;
	struct tpchan_stats sa;

	(void)state;
	world_new(&w, &cc_window_ops, 20000000000ull, 100, 1000);
	assert_int_equal(wirelink_run(w.link, switch_midway, &w, 5000 * MS), 0);
	check_all_arrived(&w);
	assert_string_equal(tpchan_cc_name(w.a), "window");
	tpchan_get_stats(w.a, &sa);
	assert_true(sa.credits_rx > 0);
	world_free(&w);
}

/* The sender goes away after its first packet said MORE: the receiver
 * grants up to its limit, resends a few times with backoff, then forgets
 * it: a bounded number of CREDIT packets, and the channel can go idle. */
static int64_t a_vanishes(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct world *w = arg;

	(void)pkt;
	(void)len;
	if (from != 0)
		return 0;
	return w->credits_dropped++ ? -1 : 0;            /* counts a's packets */
}

static bool pump_forever(void *arg)
{
	pump(arg);
	return false;
}

static void test_a_vanished_sender_costs_a_bounded_number_of_grants(void **state)
{
	struct world w;
	struct tpchan_stats sb;

	(void)state;
	world_new(&w, &cc_eqds_ops, 0, 100, 0);
	wirelink_set_tap(w.link, a_vanishes, &w);
	/* 10 s of virtual time: a's REQs never arrive, b hears one MORE */
	assert_int_equal(wirelink_run(w.link, pump_forever, &w, 10000 * MS), -ENODATA);
	tpchan_get_stats(w.b, &sb);
	assert_int_equal(sb.data_pkts_rx, 1);
	assert_false(tpchan_credit_wanted(w.b));
	/* grants up to 32 chunks ahead in 16 KiB turns (~70), then 8 resends */
	assert_true(sb.credits_tx > 8);
	assert_true(sb.credits_tx < 100);
	world_free(&w);
}

/* Channels that freeze when idle behave as ones that do not, credit
 * included: a transfer at 1% loss with a short idle hold, and a receiver
 * whose sender vanished (it keeps granting for a while, then goes idle
 * with credit asked for): the same counters on both sides but for
 * state_bytes, releases of per-packet state included. */
static void credit_run(bool freeze_off, bool vanish, struct tpchan_stats *a, struct tpchan_stats *b)
{
	struct world w;

	g_idle_release_ns = 20 * US;
	g_freeze_off = freeze_off;
	world_new(&w, &cc_eqds_ops, vanish ? 0 : 20000000000ull, 100, vanish ? 0 : 10000);
	g_idle_release_ns = 0;
	g_freeze_off = false;
	if (vanish) {
		wirelink_set_tap(w.link, a_vanishes, &w);
		assert_int_equal(wirelink_run(w.link, pump_forever, &w, 10000 * MS), -ENODATA);
	} else {
		assert_int_equal(wirelink_run(w.link, pump, &w, 5000 * MS), 0);
		check_all_arrived(&w);
		assert_int_equal(wirelink_run(w.link, NULL, NULL, 6000 * MS), -ENODATA);
	}
	tpchan_get_stats(w.a, a);
	tpchan_get_stats(w.b, b);
	world_free(&w);
}

static void test_frozen_credit_channels_behave_as_live_ones(void **state)
{
	(void)state;
	for (int vanish = 0; vanish < 2; vanish++) {
		struct tpchan_stats a0, b0, a1, b1;

		credit_run(true, vanish, &a0, &b0);
		credit_run(false, vanish, &a1, &b1);
		print_message("%s: releases %llu/%llu; idle state %llu live, %llu frozen\n",
			      vanish ? "vanished sender" : "1% loss",
			      (unsigned long long)a1.state_releases, (unsigned long long)b1.state_releases,
			      (unsigned long long)b0.state_bytes, (unsigned long long)b1.state_bytes);
		assert_true(b1.state_bytes * 2 < b0.state_bytes);      /* b froze */
		a0.state_bytes = a1.state_bytes;
		b0.state_bytes = b1.state_bytes;
		assert_memory_equal(&a0, &a1, sizeof(a0));
		assert_memory_equal(&b0, &b1, sizeof(b0));
	}
}

/* A receiver whose GRANT resend is held back by a full batch (here: its own
 * DATA to the peer takes the only slot of every call) counts that resend
 * once, not once per call: the peer, still asking, is not forgotten. (It
 * was: in the simulated 15-to-1 incast, host 0 sending its own flow gave
 * 8 "resends" in as many calls and stalled senders until they failed.) */
static int zero_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	(void)arg; (void)cookie; (void)off;
	memset(dst, 0, len);
	return 0;
}

static void count_complete(void *arg, uint64_t cookie, int res)
{
	(void)arg; (void)cookie; (void)res;
}

static void test_a_held_back_grant_resend_is_counted_once(void **state)
{
	static const struct tpchan_cb cb = {
		.read = zero_read, .deliver = b_deliver, .complete = count_complete,
	};
	struct tpchan_params p = params(&cc_none_ops);      /* DATA never waits */
	struct wire_credit req = { .flags = WIRE_F_REQ, .token = 0x77 };
	struct tpchan_msg m = { .cookie = 1, .opcode = 2, .len = 4 << 20 };
	uint8_t buf[WIRE_CREDIT_LEN], pk[1500];
	struct tpchan_txpkt out = { .buf = pk };
	struct tpchan_stats st;
	struct tpchan *c;
	uint64_t now = 0;

	(void)state;
	p.tx_token = 0x76;
	p.rx_token = 0x77;
	p.cb = &cb;
	c = tpchan_new(&p);
	assert_non_null(c);
	assert_int_equal(wire_write_credit(buf, sizeof(buf), &req), WIRE_CREDIT_LEN);
	assert_int_equal(tpchan_rx(c, buf, sizeof(buf), now), 0);
	tpchan_credit_grant(c, 64 * 1024);
	assert_int_equal(tpchan_tx(c, now, &out, 1), 1);          /* the GRANT */
	assert_int_equal(out.buf[2], WIRE_CREDIT);
	/* now c has DATA of its own: every one-packet call sends DATA, and
	 * the resends the GRANT earns wait behind it */
	assert_int_equal(tpchan_submit(c, &m), 0);
	now = 100 * MS;              /* past every backed-off resend time */
	for (int i = 0; i < 40; i++) {
		now += 50 * US;
		assert_int_equal(tpchan_tx(c, now, &out, 1), 1);
		assert_int_equal(out.buf[2], WIRE_DATA);
	}
	assert_true(tpchan_credit_wanted(c));
	tpchan_get_stats(c, &st);
	assert_int_equal(st.credits_tx, 1);
	tpchan_free(c);
}

/* ---- the pacer ---- */

/* Two receiving channels whose peers ask (a REQ injected into each). */
static struct tpchan *asking_chan(uint64_t token)
{
	struct tpchan_params p = params(NULL);
	struct wire_credit req = { .flags = WIRE_F_REQ, .token = token };
	uint8_t buf[WIRE_CREDIT_LEN];
	struct tpchan *c;

	p.tx_token = token ^ 1;
	p.rx_token = token;
	p.cb = &b_cb;
	c = tpchan_new(&p);
	assert_non_null(c);
	assert_false(tpchan_credit_wanted(c));
	assert_int_equal(wire_write_credit(buf, sizeof(buf), &req), WIRE_CREDIT_LEN);
	assert_int_equal(tpchan_rx(c, buf, sizeof(buf), 0), 0);
	assert_true(tpchan_credit_wanted(c));
	return c;
}

static uint32_t granted(struct tpchan *c)
{
	struct tpchan_stats s;

	tpchan_get_stats(c, &s);
	return (uint32_t)s.credit_granted_pkts;
}

static void test_pacer_takes_members_in_turn_at_its_rate(void **state)
{
	struct tpchan *x = asking_chan(0x10), *y = asking_chan(0x20);
	struct pull *p = pull_new(1000000000ull, 10 * MSS1500);  /* 1 Gbit/s, 10 packets a turn */
	struct pull_stats st;
	uint64_t t, gap = 10 * 1500 * 8;                  /* ns per turn at 1G */

	(void)state;
	assert_non_null(p);
	assert_int_equal(pull_add(p, x), 0);
	assert_int_equal(pull_add(p, y), 0);
	t = pull_run(p, 1000000);
	assert_int_equal(t, 1000000 + gap);               /* one turn now, the next later */
	assert_int_equal(granted(x) + granted(y), 10);
	t = pull_run(p, t);
	assert_int_equal(granted(x), 10);
	assert_int_equal(granted(y), 10);
	/* run late: it catches up a few turns, not the whole gap */
	t = pull_run(p, t + 100 * gap);
	assert_true(granted(x) + granted(y) <= 20 + 10 * 5);
	assert_true(granted(x) + granted(y) >= 20 + 10 * 4);
	/* grants run ahead of arrivals only so far: then nobody waits */
	for (int i = 0; i < 1000 && t != UINT64_MAX; i++)
		t = pull_run(p, t);
	assert_int_equal(t, UINT64_MAX);
	assert_false(tpchan_credit_wanted(x));
	assert_int_equal(granted(x), granted(y));
	pull_get_stats(p, &st);
	assert_int_equal(st.members, 2);
	pull_remove(p, x);
	pull_remove(p, x);
	pull_get_stats(p, &st);
	assert_int_equal(st.members, 1);
	pull_free(p);
	tpchan_free(x);
	tpchan_free(y);
}

/* A rate that is not a whole number of Mbit/s, as one engine thread's share
 * of pull_rate_mbps is (main.c divides it by the threads), spaces the turns
 * at that rate: 1.5 Mbit/s and 0.5 Mbit/s are not paced as 1 Mbit/s. */
static void test_pacer_keeps_a_rate_below_or_between_whole_megabits(void **state)
{
	static const uint64_t bps[] = { 1500000, 500000 };
	uint64_t bits = 10 * 1500 * 8;                    /* one turn of 10 packets */

	(void)state;
	for (size_t k = 0; k < sizeof(bps) / sizeof(bps[0]); k++) {
		struct tpchan *x = asking_chan(0x30);
		struct pull *p = pull_new(bps[k], 10 * MSS1500);
		uint64_t t;

		assert_non_null(p);
		assert_int_equal(pull_add(p, x), 0);
		t = pull_run(p, 1000000);
		assert_int_equal(granted(x), 10);
		assert_int_equal(t - 1000000, bits * 1000000000ull / bps[k]);
		pull_free(p);
		tpchan_free(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credit_packet_round_trips_and_bad_ones_are_refused),
		cmocka_unit_test(test_without_credit_a_sender_sends_one_speculative_burst),
		cmocka_unit_test(test_unpaced_credit_carries_a_transfer),
		cmocka_unit_test(test_paced_credit_holds_the_pacer_rate),
		cmocka_unit_test(test_lost_grants_and_requests_are_repaired),
		cmocka_unit_test(test_credit_survives_random_loss),
		cmocka_unit_test(test_switching_to_and_from_eqds_mid_transfer),
		cmocka_unit_test(test_a_vanished_sender_costs_a_bounded_number_of_grants),
		cmocka_unit_test(test_a_held_back_grant_resend_is_counted_once),
		cmocka_unit_test(test_frozen_credit_channels_behave_as_live_ones),
		cmocka_unit_test(test_pacer_takes_members_in_turn_at_its_rate),
		cmocka_unit_test(test_pacer_keeps_a_rate_below_or_between_whole_megabits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
