/* SPDX-License-Identifier: MIT */
/*
 * tpchan's congestion-control inputs and chunking (issue #4): an in-band
 * congestion degree handed to the receiver (tpchan_rx_ext) comes back in
 * the next ACK as the highest since the previous ACK, and the sender's
 * congestion controller receives it as cc_ack.hint_ppm; with
 * adaptive_chunk, a window under 4 chunks or heavy loss makes chunks
 * smaller (and they are back to full size when the loss clears), while
 * the transfer stays byte for byte at 1% loss; without it, nothing changes.
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
#include "engine/tpchan.h"
#include "engine/wire.h"
#include "tests/unit/wirelink.h"

#define US 1000ull
#define MS 1000000ull
#define TOKEN_A 0x1111222233334444ull
#define TOKEN_B 0x5555666677778888ull
#define MSG     32768u
#define NMSG_MAX 256u
#define MTU     1500u
#define MSS     (MTU - WIRE_DATA_HDR_LEN)

/* ---- a controller that records what it is told ---- */

struct rec_cc {
	uint64_t window;
	uint32_t acks, last_hint, max_hint;
	uint32_t hints[64];
};

static void rec_init(void *st, const struct cc_params *p)
{
	struct rec_cc *r = st;

	*r = (struct rec_cc){ .window = p->max_window };
}

static void rec_on_ack(void *st, const struct cc_ack *a)
{
	struct rec_cc *r = st;

	if (r->acks < 64)
		r->hints[r->acks] = a->hint_ppm;
	r->acks++;
	r->last_hint = a->hint_ppm;
	if (a->hint_ppm > r->max_hint)
		r->max_hint = a->hint_ppm;
}

static void rec_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	(void)st;
	(void)now_ns;
	(void)timeout;
}

static uint64_t rec_window(const void *st)
{
	return ((const struct rec_cc *)st)->window;
}

/* The only instance: describe() hands the test its state. */
static const struct rec_cc *g_rec;

static int rec_describe(const void *st, const char **names, uint64_t *values, int n)
{
	(void)names;
	(void)values;
	(void)n;
	g_rec = st;
	return 0;
}

static const struct cc_ops rec_ops = {
	.name = "rec", .state_size = sizeof(struct rec_cc), .init = rec_init,
	.on_ack = rec_on_ack, .on_loss = rec_on_loss, .window = rec_window,
	.describe = rec_describe,
};

/* ---- the application on each end ---- */

struct world {
	struct tpchan *a, *b;          /* a sends, b receives */
	struct wirelink *link;
	uint8_t *src, *dst;
	uint32_t nmsgs, next, completed, failed;
	uint64_t delivered;
	/* adaptive chunk, sampled before every step */
	uint64_t small_at_last_high;   /* small_chunks while loss_ppm was still high */
	uint32_t msgs_at_last_high;
	bool was_high;
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

	if (d->roff + d->msg_off + d->payload_len > (uint64_t)w->nmsgs * MSG)
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
	(void)arg;
	(void)cookie;
	(void)off;
	(void)dst;
	(void)len;
	fail_msg("b was asked for data");
	return -EINVAL;
}

static void no_complete(void *arg, uint64_t cookie, int res)
{
	(void)arg;
	(void)cookie;
	(void)res;
	fail_msg("b completed a message");
}

static const struct tpchan_cb a_cb = { .read = a_read, .deliver = no_deliver, .complete = a_complete };
static const struct tpchan_cb b_cb = { .read = no_read, .deliver = b_deliver, .complete = no_complete };

static struct tpchan_params params(const struct cc_ops *cc, uint64_t max_inflight, bool adaptive)
{
	return (struct tpchan_params){
		.mtu = MTU, .chunk_bytes = MSG, .npaths = 4, .max_inflight_pkts = 4096,
		.max_inflight_bytes = max_inflight, .max_msgs = 256, .crc = true,
		.rto_init_ns = 1 * MS, .rto_min_ns = 200 * US, .rto_max_ns = 20 * MS,
		.max_retx = 20, .ack_delay_ns = 10 * US, .ack_every = 8, .cc = cc,
		.adaptive_chunk = adaptive,
	};
}

static void world_new(struct world *w, const struct tpchan_params *pa, uint32_t nmsgs,
		      uint32_t loss_ppm)
{
	struct tpchan_params a = *pa, b = params(NULL, 4 << 20, false);
	struct wirelink_params lp = {
		.seed = 11, .mtu = MTU, .rate_gbps = 100, .delay_ns = 5 * US,
		.path_skew_ns = 50, .loss_ppm = loss_ppm,
	};

	memset(w, 0, sizeof(*w));
	w->nmsgs = nmsgs;
	w->src = malloc((size_t)nmsgs * MSG);
	w->dst = calloc(nmsgs, MSG);
	assert_non_null(w->src);
	assert_non_null(w->dst);
	for (size_t i = 0; i < (size_t)nmsgs * MSG; i++)
		w->src[i] = (uint8_t)(i * 131 + i / 977 + 1);
	a.tx_token = TOKEN_B;
	a.rx_token = TOKEN_A;
	a.cb = &a_cb;
	a.cb_arg = w;
	a.seed = 1;
	b.tx_token = TOKEN_A;
	b.rx_token = TOKEN_B;
	b.cb = &b_cb;
	b.cb_arg = w;
	b.seed = 2;
	w->a = tpchan_new(&a);
	w->b = tpchan_new(&b);
	assert_non_null(w->a);
	assert_non_null(w->b);
	w->link = wirelink_new(&lp, w->a, w->b, 1000);
	assert_non_null(w->link);
}

static void world_free(struct world *w)
{
	wirelink_free(w->link);
	tpchan_free(w->a);
	tpchan_free(w->b);
	free(w->src);
	free(w->dst);
}

/* Before every step: keep a fed up to `upto` messages; note the adaptive
 * chunk state. */
static uint32_t g_upto;

static bool pump(void *arg)
{
	struct world *w = arg;
	struct tpchan_stats s;

	while (w->next < g_upto) {
		struct tpchan_msg m = {
			.cookie = w->next, .opcode = 2 /* PUT */, .dst_ep = 1,
			.rkey = 1, .roff = (uint64_t)w->next * MSG, .len = MSG,
		};
		int r = tpchan_submit(w->a, &m);

		if (r == -EAGAIN)
			break;
		assert_int_equal(r, 0);
		w->next++;
	}
	tpchan_get_stats(w->a, &s);
	if (s.loss_ppm > 10000) {
		w->was_high = true;
		w->small_at_last_high = s.small_chunks;
		w->msgs_at_last_high = w->completed;
	}
	return w->completed + w->failed == g_upto;
}

static void run_to(struct world *w, uint32_t upto)
{
	g_upto = upto;
	assert_int_equal(wirelink_run(w->link, pump, w, wirelink_now(w->link) + 30000 * MS), 0);
	assert_int_equal(w->failed, 0);
	assert_int_equal(w->completed, upto);
}

static void check_bytes(const struct world *w)
{
	assert_int_equal(w->delivered, (uint64_t)w->nmsgs * MSG);
	assert_memory_equal(w->src, w->dst, (size_t)w->nmsgs * MSG);
}

/* ---- in-band congestion degree ---- */

/* The receiver keeps the highest degree since its last ACK, puts it in the
 * ACK, and starts again from 0; the sender's CC gets it as hint_ppm. */
static void test_ack_echoes_the_highest_hint_and_the_cc_receives_it(void **state)
{
	struct tpchan_params pa = params(&rec_ops, 4 << 20, false);
	static uint8_t bufs[16][MTU];
	struct tpchan_txpkt out[16], ack[4];
	static uint8_t abufs[4][MTU];
	static const uint32_t hints[8] = { 300000, 0, 700000, 100000, 0, 0, 0, 0 };
	struct world w;
	struct wire_pkt pk;
	uint64_t now = 2000000;
	int n;

	(void)state;
	world_new(&w, &pa, 2, 0);
	for (int i = 0; i < 16; i++)
		out[i].buf = bufs[i];
	for (int i = 0; i < 4; i++)
		ack[i].buf = abufs[i];
	g_upto = 2;
	pump(&w);
	n = tpchan_tx(w.a, now, out, 16);
	assert_true(n >= 12);
	now += 5000;
	/* eight packets: ack_every, so one ACK covers them all */
	for (int i = 0; i < 8; i++)
		assert_int_equal(tpchan_rx_ext(w.b, out[i].buf, out[i].len, now, false, hints[i]), 0);
	assert_int_equal(tpchan_tx(w.b, now, ack, 4), 1);
	assert_int_equal(wire_parse(ack[0].buf, ack[0].len, &pk), 0);
	assert_int_equal(pk.type, WIRE_ACK);
	assert_int_equal(pk.ack.hint_ppm, 700000);
	assert_false(pk.ack.flags & WIRE_F_ECE);   /* a degree is not a CE mark */
	now += 5000;
	assert_int_equal(tpchan_rx(w.a, ack[0].buf, ack[0].len, now), 0);
	tpchan_cc_describe(w.a, NULL, NULL, 0);
	assert_non_null(g_rec);
	assert_int_equal(g_rec->acks, 1);
	assert_int_equal(g_rec->last_hint, 700000);

	/* the next ACK starts from 0: packets without a degree give 0 ... */
	assert_int_equal(tpchan_rx(w.b, out[8].buf, out[8].len, now), 0);
	assert_int_equal(tpchan_rx_ce(w.b, out[9].buf, out[9].len, now, false), 0);
	assert_int_equal(tpchan_tx(w.b, now + 10 * US, ack, 4), 1);
	assert_int_equal(wire_parse(ack[0].buf, ack[0].len, &pk), 0);
	assert_int_equal(pk.ack.hint_ppm, 0);
	assert_int_equal(tpchan_rx(w.a, ack[0].buf, ack[0].len, now + 20 * US), 0);
	assert_int_equal(g_rec->acks, 2);
	assert_int_equal(g_rec->last_hint, 0);

	/* ... and one above the ppm range goes through as it came (the CC
	 * clamps), even on a duplicate (it arrived, so it is reported) */
	assert_int_equal(tpchan_rx_ext(w.b, out[10].buf, out[10].len, now, false, 5), 0);
	assert_int_equal(tpchan_rx_ext(w.b, out[10].buf, out[10].len, now, false, 2000000), 0);
	assert_int_equal(tpchan_tx(w.b, now + 20 * US, ack, 4), 1);
	assert_int_equal(wire_parse(ack[0].buf, ack[0].len, &pk), 0);
	assert_int_equal(pk.ack.hint_ppm, 2000000);
	assert_int_equal(tpchan_rx(w.a, ack[0].buf, ack[0].len, now + 30 * US), 0);
	assert_int_equal(g_rec->acks, 3);
	assert_int_equal(g_rec->last_hint, 2000000);
	world_free(&w);
}

/* Over a lossy, reordering wire that reports no degree (wirelink hands
 * packets to tpchan_rx), every ACK the CC sees carries 0: nothing invents
 * a degree, across resends, duplicates and coalescing. */
static void test_hints_survive_a_lossy_transfer(void **state)
{
	struct tpchan_params pa = params(&rec_ops, 4 << 20, false);
	struct world w;

	(void)state;
	world_new(&w, &pa, 64, 10000);
	run_to(&w, 64);
	check_bytes(&w);
	tpchan_cc_describe(w.a, NULL, NULL, 0);
	assert_true(g_rec->acks > 0);
	assert_int_equal(g_rec->max_hint, 0);
	world_free(&w);
}

/* ---- adaptive chunk size ---- */

/* cc none with a flow-control cap of two chunks: the window is under 4
 * chunks, so chunks are cut to window / 4 in whole packets (11 packets,
 * 15532 bytes): each 32 KiB message becomes two small chunks and a tail.
 * Without adaptive_chunk, nothing is cut small. */
static void test_small_window_cuts_small_chunks(void **state)
{
	struct tpchan_params on = params(&cc_none_ops, 2 * MSG, true);
	struct tpchan_params off = params(&cc_none_ops, 2 * MSG, false);
	struct tpchan_stats s;
	struct world w;

	(void)state;
	world_new(&w, &on, 32, 0);
	run_to(&w, 32);
	check_bytes(&w);
	tpchan_get_stats(w.a, &s);
	assert_int_equal(s.small_chunks, 2 * 32);
	assert_int_equal(s.loss_ppm, 0);
	world_free(&w);

	world_new(&w, &off, 32, 0);
	run_to(&w, 32);
	check_bytes(&w);
	tpchan_get_stats(w.a, &s);
	assert_int_equal(s.small_chunks, 0);
	world_free(&w);

	/* a window of 4 chunks or more leaves chunks alone */
	on.max_inflight_bytes = 4 * MSG;
	world_new(&w, &on, 32, 0);
	run_to(&w, 32);
	tpchan_get_stats(w.a, &s);
	assert_int_equal(s.small_chunks, 0);
	world_free(&w);
}

/* Path decisions follow chunks: with small chunks a message's packets are
 * spread over more (chunk, path) decisions. Counted on the wire: new DATA
 * packets of one message whose path differs from the previous packet's. */
struct pathcount {
	uint64_t msg_id;
	uint16_t path;
	uint64_t changes, pkts;
};

static struct pathcount g_pc;

static int64_t count_paths(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct wire_pkt p;

	(void)arg;
	if (from != 0 || wire_parse(pkt, len, &p) < 0 || p.type != WIRE_DATA ||
	    (p.data.flags & WIRE_F_RETX))
		return 0;
	if (p.data.msg_id == g_pc.msg_id && p.data.path != g_pc.path)
		g_pc.changes++;
	g_pc.msg_id = p.data.msg_id;
	g_pc.path = p.data.path;
	g_pc.pkts++;
	return 0;
}

static void test_small_chunks_mean_more_path_decisions(void **state)
{
	uint64_t changes[2];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct tpchan_params p = params(&cc_none_ops, 2 * MSG, k == 1);
		struct world w;

		world_new(&w, &p, 64, 0);
		memset(&g_pc, 0, sizeof(g_pc));
		wirelink_set_tap(w.link, count_paths, NULL);
		run_to(&w, 64);
		check_bytes(&w);
		changes[k] = g_pc.changes;
		world_free(&w);
	}
	/* one chunk per message: the path never changes inside one */
	assert_int_equal(changes[0], 0);
	/* three chunks per message, four paths: of the 128 chunk starts
	 * inside messages, a good share move (paths_pick favours the path
	 * with the lowest RTT, so not three quarters) */
	assert_true(changes[1] > 32);
}

/* Heavy loss (5%) cuts chunks to a quarter; when the loss stops, the
 * estimate decays and chunks are full again; the bytes arrive exactly.
 * A cap of 32 chunks keeps the window out of it and the first burst short
 * (chunks cut before any loss is seen are full). */
static void test_heavy_loss_cuts_chunks_until_it_clears(void **state)
{
	struct tpchan_params p = params(&cc_none_ops, 32 * MSG, true);
	struct tpchan_stats s;
	struct world w;

	(void)state;
	world_new(&w, &p, 384, 50000);
	run_to(&w, 128);
	tpchan_get_stats(w.a, &s);
	assert_true(w.was_high);
	assert_true(s.small_chunks > 64);
	wirelink_set_loss(w.link, 0, 0);
	wirelink_set_loss(w.link, 1, 0);
	run_to(&w, 384);
	check_bytes(&w);
	tpchan_get_stats(w.a, &s);
	assert_true(s.loss_ppm < 10000);
	/* after the estimate fell below 1% no chunk was cut small (one tx
	 * call may cut a few while it decays), and plenty were sent since */
	assert_true(s.small_chunks - w.small_at_last_high <= 2);
	assert_true(w.msgs_at_last_high < 384 - 128);
	world_free(&w);
}

/* The same cap of two chunks at 1% loss: byte for byte, with small chunks. */
static void test_adaptive_chunk_at_1_percent_loss_is_exact(void **state)
{
	struct tpchan_params p = params(&cc_window_ops, 2 * MSG, true);
	struct tpchan_stats s;
	struct world w;

	(void)state;
	world_new(&w, &p, 128, 10000);
	run_to(&w, 128);
	check_bytes(&w);
	tpchan_get_stats(w.a, &s);
	assert_true(s.small_chunks >= 2 * 128);
	assert_true(s.retx_pkts > 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ack_echoes_the_highest_hint_and_the_cc_receives_it),
		cmocka_unit_test(test_hints_survive_a_lossy_transfer),
		cmocka_unit_test(test_small_window_cuts_small_chunks),
		cmocka_unit_test(test_small_chunks_mean_more_path_decisions),
		cmocka_unit_test(test_heavy_loss_cuts_chunks_until_it_clears),
		cmocka_unit_test(test_adaptive_chunk_at_1_percent_loss_is_exact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
