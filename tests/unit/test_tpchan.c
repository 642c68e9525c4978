/* SPDX-License-Identifier: MIT */
/*
 * tpchan: two channels joined by the in-memory wire, in virtual time. A
 * 64 MiB message set crosses at 0%, 0.1%, 1% and 5% loss with reordering
 * and duplication, and arrives byte for byte, every byte written once, every
 * message completed once; SACK recovery resends far less than Go-Back-N;
 * more than 1024 packets fly with a long, fat wire; path_per_packet spreads
 * a chunk's packets over paths, and without it a chunk keeps one;
 * path_run_bytes keeps a path over whole-packet chunks; ACKs are coalesced yet
 * prompt around holes; forged and damaged packets are dropped and counted;
 * a refusal at the receiver fails the message at the sender, and a refused
 * message never completes as a success whatever the wire loses, reorders or
 * duplicates (NACKs lost for a while, the refusal ring full, both
 * directions refusing at once); a vanished peer fails everything with
 * -ETIMEDOUT in bounded time; a spurious timeout (ACKs stalled) resends
 * what the timer found lost and no more (Go-Back-N: one flight); reset and free complete what is left; submit
 * pushes back at max_msgs; the congestion controller can be switched in the
 * middle of a transfer without losing data or the window; and a run is the
 * same run every time for the same seed. An idle channel releases its
 * per-packet state at the hold's deadline and picks up where it was (old
 * duplicates, out-of-order first packets, bursts on a rough wire), and a
 * failed allocation costs a resend.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uccl/shm.h>

#include "engine/crc32c.h"
#include "engine/tpchan.h"
#include "engine/wire.h"
#include "tests/unit/wirelink.h"

#define US 1000ull
#define MS 1000000ull

#define TOKEN_A 0x1111222233334444ull  /* what a expects on packets to it */
#define TOKEN_B 0x5555666677778888ull
/* payload bytes of one packet at the tests' mtu of 1500 */
#define MSS1500 (1500u - WIRE_DATA_HDR_LEN)

/* ---- the application on each end ---- */

struct msgd {
	uint64_t off, len;             /* in src and, as roff, in dst */
	uint32_t ep;
	int done, res;
};

struct world {
	struct tpchan *a, *b;          /* a sends, b receives */
	struct wirelink *link;
	uint8_t *src, *dst;
	uint64_t total;
	struct msgd *msgs;
	uint32_t nmsgs, next;
	uint32_t completed, failed;
	uint64_t delivered_bytes, delivered_pkts, bad_deliveries;
	bool refuse;
	uint32_t refuse_ep;
	int refuse_err;
	uint32_t range_ep;             /* b refuses bytes past range_end of these (-ERANGE) */
	uint64_t range_end;
	uint64_t peak_inflight;
	int read_fail_at;              /* message index whose read() fails, or -1 */
	uint64_t reads_after_done;     /* read() for a message already completed */
	uint64_t last_complete_ns;
	int read_submits;              /* submit message next from read(), this often */
	int read_submit_res[4];
	uint64_t maps;                 /* a_map calls */
	uint32_t gave_up;              /* a_gave_up calls */
	uint32_t failed_at_give_up;    /* messages failed before the last one */
};

static int a_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	struct world *w = arg;
	const struct msgd *m;

	if (cookie >= w->nmsgs)
		return -EFAULT;
	m = &w->msgs[cookie];
	if (m->done)
		w->reads_after_done++;
	if (off + len > m->len)
		return -EFAULT;
	if ((int)cookie == w->read_fail_at && off > 0)
		return -EIO;
	if (w->read_submits > 0) {
		struct tpchan_msg nm = {
			.cookie = w->next, .opcode = 2, .dst_ep = w->msgs[w->next].ep, .dst_conn = 9,
			.rkey = 0xabc, .roff = w->msgs[w->next].off, .len = w->msgs[w->next].len,
		};
		int r = tpchan_submit(w->a, &nm);

		w->read_submit_res[--w->read_submits] = r;
		if (r == 0)
			w->next++;
	}
	memcpy(dst, w->src + m->off + off, len);
	return 0;
}

static void a_complete(void *arg, uint64_t cookie, int res)
{
	struct world *w = arg;
	struct msgd *m = &w->msgs[cookie];

	m->done++;
	m->res = res;
	if (w->link)
		w->last_complete_ns = wirelink_now(w->link);
	if (res == 0)
		w->completed++;
	else
		w->failed++;
}

static void a_gave_up(void *arg)
{
	struct world *w = arg;

	w->gave_up++;
	w->failed_at_give_up = w->failed;
}

static int b_deliver(void *arg, const struct wire_data *d)
{
	struct world *w = arg;

	if (w->refuse && d->dst_ep == w->refuse_ep)
		return w->refuse_err;
	if (w->range_ep && d->dst_ep == w->range_ep && d->msg_off + d->payload_len > w->range_end)
		return -ERANGE;
	if (d->roff > w->total || d->msg_len > w->total - d->roff ||
	    d->msg_off + d->payload_len > d->msg_len || d->rkey != 0xabc) {
		w->bad_deliveries++;
		return -EINVAL;
	}
	memcpy(w->dst + d->roff + d->msg_off, d->payload, d->payload_len);
	w->delivered_bytes += d->payload_len;
	w->delivered_pkts++;
	return 0;
}

/* a receives no data and b sends none */
static int a_deliver(void *arg, const struct wire_data *d)
{
	fail_msg("a was handed DATA");
	return -EINVAL;
}

static int b_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	fail_msg("b was asked for data");
	return -EINVAL;
}

static void b_complete(void *arg, uint64_t cookie, int res)
{
	fail_msg("b completed a message");
}

/* tx_gather: where the payload lies; the test's reads stay countable */
static const void *a_map(void *arg, uint64_t cookie, uint64_t off, uint32_t len)
{
	struct world *w = arg;
	const struct msgd *m;

	if (cookie >= w->nmsgs || off + len > w->msgs[cookie].len)
		return NULL;
	m = &w->msgs[cookie];
	w->maps++;
	return w->src + m->off + off;
}

static const struct tpchan_cb a_cb = {
	.read = a_read, .deliver = a_deliver, .complete = a_complete, .gave_up = a_gave_up,
};
static const struct tpchan_cb a_map_cb = {
	.read = a_read, .map = a_map, .deliver = a_deliver, .complete = a_complete,
	.gave_up = a_gave_up,
};
static const struct tpchan_cb b_cb = { .read = b_read, .deliver = b_deliver, .complete = b_complete };

/* ---- set-up ---- */

static struct tpchan_params chan_params(bool gbn)
{
	return (struct tpchan_params){
		.mtu = 1500, .chunk_bytes = 32768, .npaths = 4,
		.max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 4 << 20, .max_msgs = 256,
		.go_back_n = gbn, .crc = true,
		.rto_init_ns = 1 * MS, .rto_min_ns = 200 * US, .rto_max_ns = 20 * MS,
		.max_retx = 10, .ack_delay_ns = 10 * US, .ack_every = 8, .dupthresh = 3,
		.path_loss_hold_ns = 500 * US,
	};
}

static struct wirelink_params link_params(uint32_t loss_ppm, uint64_t seed)
{
	return (struct wirelink_params){
		.seed = seed, .mtu = 9000, .rate_gbps = 100, .delay_ns = 10 * US,
		.path_skew_ns = 50, .loss_ppm = loss_ppm, .dup_ppm = 1000,
		.reorder_ppm = 5000, .jitter_ns = 2 * US,
	};
}

static uint8_t *g_src, *g_dst;
static uint64_t g_cap;

static void fill_random(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (uint64_t i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* n32k messages of 32 KiB, then the odd sizes (some empty). */
static void world_init(struct world *w, uint32_t n32k, bool odd)
{
	static const uint64_t odd_sizes[] = { 0, 1, 7, MSS1500 - 1, MSS1500, MSS1500 + 1, 32767, 32769,
					       65539, 100000, 0, 250001, 2824, 0 };
	uint32_t nodd = odd ? sizeof(odd_sizes) / sizeof(odd_sizes[0]) : 0;
	uint64_t off = 0;

	memset(w, 0, sizeof(*w));
	w->nmsgs = n32k + nodd;
	w->msgs = calloc(w->nmsgs, sizeof(*w->msgs));
	assert_non_null(w->msgs);
	for (uint32_t i = 0; i < w->nmsgs; i++) {
		/* odd sizes spread through the set, not all at the end */
		uint64_t len = 32768;

		if (nodd && i % (w->nmsgs / nodd) == 0 && i / (w->nmsgs / nodd) < nodd)
			len = odd_sizes[i / (w->nmsgs / nodd)];
		w->msgs[i] = (struct msgd){ .off = off, .len = len, .ep = 1 + i % 3 };
		off += len;
	}
	w->total = off;
	assert_true(w->total <= g_cap);
	w->src = g_src;
	w->dst = g_dst;
	fill_random(w->src, w->total, 0x1234 + n32k);
	for (uint64_t i = 0; i < w->total; i++)   /* every byte differs from src */
		w->dst[i] = (uint8_t)~w->src[i];
	w->read_fail_at = -1;
}

static void world_chans(struct world *w, const struct tpchan_params *pa,
			const struct tpchan_params *pb, const struct wirelink_params *lp)
{
	struct tpchan_params a = *pa, b = *pb;

	a.tx_token = TOKEN_B;
	a.rx_token = TOKEN_A;
	a.cb = a.tx_gather ? &a_map_cb : &a_cb;
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
	w->link = wirelink_new(lp, w->a, w->b, 1000);
	assert_non_null(w->link);
}

static void world_fini(struct world *w)
{
	/* channels first: failing what is still pending calls back into the
	 * world, which reads the link's clock */
	tpchan_free(w->a);
	tpchan_free(w->b);
	wirelink_free(w->link);
	free(w->msgs);
}

static struct tpchan_msg msg_of(const struct world *w, uint32_t i)
{
	return (struct tpchan_msg){
		.cookie = i, .opcode = 2 /* PUT */, .dst_ep = w->msgs[i].ep, .dst_conn = 9,
		.rkey = 0xabc, .roff = w->msgs[i].off, .len = w->msgs[i].len,
	};
}

/* Called before every step: keeps the sender fed, samples the flight. */
static bool pump(void *arg)
{
	struct world *w = arg;
	struct tpchan_stats s;

	while (w->next < w->nmsgs) {
		struct tpchan_msg m = msg_of(w, w->next);
		int r = tpchan_submit(w->a, &m);

		if (r == -EAGAIN)
			break;
		assert_int_equal(r, 0);
		w->next++;
	}
	tpchan_get_stats(w->a, &s);
	if (s.inflight_pkts > w->peak_inflight)
		w->peak_inflight = s.inflight_pkts;
	return w->completed + w->failed == w->nmsgs;
}

static bool all_done_1(void *arg)
{
	struct world *w = arg;

	return w->completed + w->failed >= 1;
}
/* Every message once, with 0; every byte in place, written once. */
static void check_transfer(const struct world *w)
{
	for (uint32_t i = 0; i < w->nmsgs; i++) {
		assert_int_equal(w->msgs[i].done, 1);
		assert_int_equal(w->msgs[i].res, 0);
	}
	assert_int_equal(w->bad_deliveries, 0);
	/* all bytes differ from the start, so a byte written twice would mean
	 * one never written: equal sums and equal contents rule out both */
	assert_int_equal(w->delivered_bytes, w->total);
	assert_memory_equal(w->src, w->dst, w->total);
}

static uint64_t g_max_load, g_peak_bytes;

/* pump, noting the most packets the path table counted in flight and the
 * most payload bytes a had in flight */
static bool pump_peaks(void *arg)
{
	struct world *w = arg;
	struct tpchan_stats s;
	bool done = pump(arg);

	tpchan_get_stats(w->a, &s);
	if (s.path_load_pkts > g_max_load)
		g_max_load = s.path_load_pkts;
	if (s.inflight_bytes > g_peak_bytes)
		g_peak_bytes = s.inflight_bytes;
	return done;
}

/* A long fat pipe at MTU 1500 (100 Gbit/s, 4 ms round trip: 50 MB in
 * flight to fill it), no congestion control: with the scoreboard at the
 * old fixed 4096 packets no more than 4096 full packets (5.5 MiB) are ever
 * in flight, short of max_inflight_bytes (16M); sized by
 * tpchan_inflight_pkts the window reaches past that, and the same 64 MiB
 * take less time. */
static void test_the_byte_limit_not_the_packet_count_caps_a_long_pipe(void **state)
{
	uint64_t peak[2], took[2];

	for (int sized = 0; sized <= 1; sized++) {
		struct world w;
		struct tpchan_params p = chan_params(false);
		struct wirelink_params lp = link_params(0, 77);

		lp.rate_gbps = 100;
		lp.delay_ns = 2 * MS;
		lp.dup_ppm = lp.reorder_ppm = 0;
		lp.jitter_ns = 0;
		p.crc = false;
		p.cc = &cc_none_ops;           /* no CC: flow control alone bounds the window */
		p.max_inflight_bytes = 16 << 20;
		p.max_msgs = 1024;             /* 32 MiB of messages: not the bound */
		p.max_inflight_pkts = p.rx_window_pkts =
			sized ? tpchan_inflight_pkts(p.max_inflight_bytes, p.mtu) : 4096;
		g_peak_bytes = 0;
		world_init(&w, 2048, false);
		world_chans(&w, &p, &p, &lp);
		assert_int_equal(wirelink_run(w.link, pump_peaks, &w, 30000 * MS), 0);
		check_transfer(&w);
		peak[sized] = g_peak_bytes;
		took[sized] = wirelink_now(w.link);
		world_fini(&w);
	}
	assert_true(peak[0] <= 4096ull * MSS1500);
	assert_true(peak[1] >= 12u << 20);         /* near the byte limit ... */
	assert_true(peak[1] <= 16u << 20);         /* ... and not past it */
	assert_true(took[1] < took[0]);
	(void)state;
}

struct outcome {
	struct tpchan_stats a, b;
	struct wirelink_stats l;
	uint64_t end_ns, peak_inflight;
};

static void transfer_from(uint32_t n32k, bool odd, uint32_t loss_ppm, bool gbn, uint64_t seed,
			  uint32_t first_psn, struct outcome *o)
{
	struct world w;
	struct tpchan_params pa = chan_params(gbn), pb = chan_params(gbn);
	struct wirelink_params lp = link_params(loss_ppm, seed);

	pa.first_psn = pb.first_psn = first_psn;

	world_init(&w, n32k, odd);
	world_chans(&w, &pa, &pb, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 30000 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &o->a);
	tpchan_get_stats(w.b, &o->b);
	wirelink_get_stats(w.link, &o->l);
	o->end_ns = wirelink_now(w.link);
	o->peak_inflight = w.peak_inflight;
	/* accounting that must hold on any wire */
	assert_int_equal(o->a.msgs_submitted, w.nmsgs);
	assert_int_equal(o->a.msgs_completed, w.nmsgs);
	assert_int_equal(o->a.msgs_failed, 0);
	assert_int_equal(o->a.inflight_pkts, 0);
	assert_int_equal(o->a.inflight_bytes, 0);
	assert_int_equal(o->a.queued_msgs, 0);
	assert_int_equal(o->b.data_bytes_rx, w.total);
	assert_int_equal(o->a.data_pkts_tx, o->l.sent[0] - o->a.acks_tx - o->a.nacks_tx);
	assert_int_equal(o->b.acks_tx + o->b.nacks_tx, o->l.sent[1]);
	assert_int_equal(o->b.drop_token + o->b.drop_crc + o->b.drop_malformed, 0);
	assert_int_equal(o->a.drop_malformed, 0);
	assert_int_equal(o->a.acks_rx, o->l.delivered[1] - o->a.nacks_rx);
	assert_true(o->b.data_pkts_rx + o->b.dup_pkts_rx + o->b.drop_window == o->l.delivered[0]);
	world_fini(&w);
}

static void transfer(uint32_t n32k, bool odd, uint32_t loss_ppm, bool gbn, uint64_t seed,
		     struct outcome *o)
{
	transfer_from(n32k, odd, loss_ppm, gbn, seed, 0, o);
}

/* Packet sequence numbers are 32 bits and wrap (every 38 TB at MTU 9000,
 * under an hour at 100 Gbit/s): a lossy, reordering, duplicating transfer
 * that crosses 2^31 or 2^32 runs exactly as one that starts at 0, every
 * count the same, SACK and Go-Back-N. */
static void test_sequence_numbers_wrap_without_a_trace(void **state)
{
	static const uint32_t firsts[] = { 0xfffff000u, 0x7ffff000u, 0xffffffffu };
	static struct outcome o0, o1;

	(void)state;
	for (int gbn = 0; gbn < 2; gbn++) {
		transfer_from(256, true, 10000, gbn, 77, 0, &o0);
		for (size_t k = 0; k < sizeof(firsts) / sizeof(firsts[0]); k++) {
			transfer_from(256, true, 10000, gbn, 77, firsts[k], &o1);
			assert_memory_equal(&o0.a, &o1.a, sizeof(o0.a));
			assert_memory_equal(&o0.b, &o1.b, sizeof(o0.b));
			assert_memory_equal(&o0.l, &o1.l, sizeof(o0.l));
			assert_int_equal(o0.end_ns, o1.end_ns);
		}
	}
}

/* ---- the big transfers ---- */

static void test_64mib_without_loss(void **state)
{
	struct outcome o;

	transfer(2048, true, 0, false, 1, &o);
	print_message("  0%%: %llu pkts, %llu retx (%llu fast, %llu rto), %llu acks, %llu dup rx, %.2f ms\n",
		      (unsigned long long)o.a.data_pkts_tx, (unsigned long long)o.a.retx_pkts,
		      (unsigned long long)o.a.fast_retx, (unsigned long long)o.a.retx_timeouts,
		      (unsigned long long)o.b.acks_tx, (unsigned long long)o.b.dup_pkts_rx,
		      (double)o.end_ns / MS);
	assert_int_equal(o.a.retx_timeouts, 0);
	/* coalesced: well under one ACK per DATA packet */
	assert_true(o.b.acks_tx < o.b.data_pkts_rx / 4);
	/* duplicates from the wire reach b and are suppressed */
	assert_true(o.b.dup_pkts_rx > 0);
	/* every duplicate at b is a wire duplicate or a needless resend */
	assert_true(o.b.dup_pkts_rx <= o.l.dup[0] + o.a.retx_pkts);
}

static void test_64mib_at_0_1_percent_loss(void **state)
{
	struct outcome o;

	transfer(2048, true, 1000, false, 2, &o);
	print_message("0.1%%: %llu pkts, %llu retx (%llu fast, %llu rto), %.2f ms\n",
		      (unsigned long long)o.a.data_pkts_tx, (unsigned long long)o.a.retx_pkts,
		      (unsigned long long)o.a.fast_retx, (unsigned long long)o.a.retx_timeouts,
		      (double)o.end_ns / MS);
	assert_true(o.a.retx_pkts > 0);
	assert_true(o.a.fast_retx > 0);
}

static void test_64mib_at_1_percent_loss(void **state)
{
	struct outcome o;

	transfer(2048, true, 10000, false, 3, &o);
	print_message("  1%%: %llu pkts, %llu retx (%llu fast, %llu rto), %.2f ms\n",
		      (unsigned long long)o.a.data_pkts_tx, (unsigned long long)o.a.retx_pkts,
		      (unsigned long long)o.a.fast_retx, (unsigned long long)o.a.retx_timeouts,
		      (double)o.end_ns / MS);
	/* selective: about one resend per loss, not a window per loss */
	assert_true(o.a.retx_pkts < o.a.data_pkts_tx / 20);
}

/* tx_gather: DATA points at the sender's memory instead of carrying a copy;
 * the bytes that arrive are the same, under loss, duplication and reorder
 * (resends map again). With crc the payload is copied (the sum is taken
 * over the copy) and map() is never asked. */
static void gather_run(bool crc, uint32_t loss_ppm, uint64_t *maps, uint64_t *gathered)
{
	struct world w;
	struct tpchan_params pa = chan_params(false), pb = chan_params(false);
	struct wirelink_params lp = link_params(loss_ppm, 7);
	struct wirelink_stats ls;
	struct tpchan_stats sa;

	pa.crc = pb.crc = crc;
	pa.tx_gather = true;
	world_init(&w, 256, true);
	world_chans(&w, &pa, &pb, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 30000 * MS), 0);
	check_transfer(&w);
	wirelink_get_stats(w.link, &ls);
	tpchan_get_stats(w.a, &sa);
	*maps = w.maps;
	*gathered = ls.gathered;
	if (!crc) {
		/* every DATA packet with a payload was gathered, resends too */
		assert_true(sa.retx_pkts > 0 || loss_ppm == 0);
		assert_int_equal(w.maps, ls.gathered);
	}
	world_fini(&w);
}

static void test_gathered_payloads_arrive_byte_exact(void **state)
{
	uint64_t maps, gathered;

	(void)state;
	gather_run(false, 0, &maps, &gathered);
	assert_true(gathered > 256 * 20);      /* 256 x 32 KiB at 1,412 B a packet */
	gather_run(false, 10000, &maps, &gathered);
	assert_true(gathered > 256 * 20);
	gather_run(true, 10000, &maps, &gathered);
	assert_int_equal(maps, 0);
	assert_int_equal(gathered, 0);
}

static void test_64mib_at_5_percent_loss(void **state)
{
	struct outcome o;

	transfer(2048, true, 50000, false, 4, &o);
	print_message("  5%%: %llu pkts, %llu retx (%llu fast, %llu rto), %.2f ms\n",
		      (unsigned long long)o.a.data_pkts_tx, (unsigned long long)o.a.retx_pkts,
		      (unsigned long long)o.a.fast_retx, (unsigned long long)o.a.retx_timeouts,
		      (double)o.end_ns / MS);
	assert_true(o.a.retx_pkts < o.a.data_pkts_tx / 5);
}

static void test_sack_resends_far_less_than_go_back_n(void **state)
{
	struct outcome sack, gbn;

	transfer(256, true, 10000, false, 5, &sack);
	transfer(256, true, 10000, true, 5, &gbn);
	print_message("1%% over 8 MiB: SACK %llu retx, %.2f ms; GBN %llu retx (%llu rto, %llu dropped "
		      "out of order), %.2f ms\n",
		      (unsigned long long)sack.a.retx_pkts, (double)sack.end_ns / MS,
		      (unsigned long long)gbn.a.retx_pkts, (unsigned long long)gbn.a.retx_timeouts,
		      (unsigned long long)gbn.b.drop_window, (double)gbn.end_ns / MS);
	assert_true(sack.a.retx_pkts > 0);
	assert_true(gbn.a.retx_pkts >= 3 * sack.a.retx_pkts);
	/* the Go-Back-N receiver takes only the next psn and counts the rest */
	assert_true(gbn.b.drop_window > 0);
	assert_int_equal(sack.b.drop_window, 0);
}

/* A clean wire: one path, no loss, duplication or reordering. */
static struct wirelink_params clean_link(void)
{
	return (struct wirelink_params){ .seed = 1, .mtu = 9000, .rate_gbps = 100,
					 .delay_ns = 10 * US };
}

/* Records the paths each 32 KiB chunk of a's DATA went on (first sends). */
struct pathtap {
	uint64_t seen[64][4];          /* chunk -> bitmap of 256 paths */
};

static int64_t tap_paths(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct pathtap *t = arg;
	struct wire_pkt w;
	uint64_t chunk;

	if (from != 0 || wire_parse(pkt, len, &w) < 0 || w.type != WIRE_DATA ||
	    (w.data.flags & WIRE_F_RETX))
		return 0;
	chunk = w.data.roff + w.data.msg_off;       /* 32 KiB messages: one chunk each */
	chunk /= 32768;
	assert_true(chunk < 64 && w.data.path < 256);
	t->seen[chunk][w.data.path / 64] |= 1ull << (w.data.path % 64);
	return 0;
}

static uint32_t paths_of(const struct pathtap *t, uint32_t chunk)
{
	uint32_t n = 0;

	for (int i = 0; i < 4; i++)
		n += (uint32_t)__builtin_popcountll(t->seen[chunk][i]);
	return n;
}

/* path_per_packet: a chunk's packets are spread over paths; without it the
 * chunk keeps one. Either way every byte arrives. */
static void test_path_per_packet_sprays_a_chunk(void **state)
{
	for (int per_pkt = 0; per_pkt <= 1; per_pkt++) {
		struct world w;
		struct tpchan_params p = chan_params(false);
		struct wirelink_params lp = clean_link();
		struct pathtap t = { 0 };
		uint32_t spread = 0;

		p.npaths = 256;
		p.path_per_packet = per_pkt;
		world_init(&w, 64, false);
		world_chans(&w, &p, &p, &lp);
		wirelink_set_tap(w.link, tap_paths, &t);
		assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
		check_transfer(&w);
		for (uint32_t c = 0; c < 64; c++) {
			assert_true(paths_of(&t, c) >= 1);
			if (!per_pkt)
				assert_int_equal(paths_of(&t, c), 1);
			else if (paths_of(&t, c) > 4)
				spread++;
		}
		/* 23 packets a chunk over 256 paths: nearly all distinct */
		if (per_pkt)
			assert_int_equal(spread, 64);
		world_fini(&w);
	}
	(void)state;
}

/* The path table's count of packets in flight follows every send, ACK and
 * resend: with loss, reordering and duplicates it rises during a transfer
 * and is back at 0 once everything is acknowledged, with a path per packet
 * (where it steers the choice) and per chunk. */
static void test_path_load_returns_to_zero_after_a_lossy_transfer(void **state)
{
	for (int per_pkt = 0; per_pkt <= 1; per_pkt++) {
		struct world w;
		struct tpchan_params p = chan_params(false);
		struct wirelink_params lp = link_params(10000, 21 + (uint64_t)per_pkt);
		struct tpchan_stats a;

		p.npaths = 64;
		p.path_per_packet = per_pkt;
		g_max_load = 0;
		world_init(&w, 256, false);
		world_chans(&w, &p, &p, &lp);
		assert_int_equal(wirelink_run(w.link, pump_peaks, &w, 1000 * MS), 0);
		check_transfer(&w);
		tpchan_get_stats(w.a, &a);
		assert_true(a.retx_pkts > 0);
		assert_true(g_max_load > 64);
		assert_int_equal(a.path_load_pkts, 0);
		world_fini(&w);
	}
	(void)state;
}

/* Records the path and payload size of a's first sends, in psn order. */
struct runtap {
	uint16_t path[1024];
	uint32_t len[1024];
	uint32_t n;
};

static int64_t tap_runs(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct runtap *t = arg;
	struct wire_pkt w;

	if (from != 0 || wire_parse(pkt, len, &w) < 0 || w.type != WIRE_DATA ||
	    (w.data.flags & WIRE_F_RETX))
		return 0;
	assert_true(w.data.psn < 1024);
	t->path[w.data.psn] = w.data.path;
	t->len[w.data.psn] = w.data.payload_len;
	if (w.data.psn + 1 > t->n)
		t->n = w.data.psn + 1;
	return 0;
}

/* path_run_bytes: chunks keep their path for a run of that many bytes and
 * are cut at whole packets, so every packet but the message's last is
 * full; without it every chunk picks a path and ends short. */
static void test_path_run_keeps_a_path_over_chunks(void **state)
{
	uint32_t switches[2];

	for (int run = 0; run <= 1; run++) {
		struct world w;
		struct tpchan_params p = chan_params(false);
		struct wirelink_params lp = clean_link();
		struct runtap t = { .n = 0 };
		uint32_t short_pkts = 0;

		p.npaths = 256;
		p.path_run_bytes = run ? 4 * 32768 : 0;
		world_init(&w, 16, false);
		w.nmsgs = 1;                   /* one 512 KiB message */
		w.msgs[0].len = w.total;
		world_chans(&w, &p, &p, &lp);
		wirelink_set_tap(w.link, tap_runs, &t);
		assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
		check_transfer(&w);
		switches[run] = 0;
		for (uint32_t i = 0; i + 1 < t.n; i++) {
			switches[run] += t.path[i + 1] != t.path[i];
			short_pkts += t.len[i] != MSS1500;
		}
		if (run)
			assert_int_equal(short_pkts, 0);       /* the last one aside */
		else
			assert_true(short_pkts >= 15);         /* each chunk's end */
		world_fini(&w);
	}
	/* 16 chunks: about 15 switches one path a chunk, at most 4 a run of 4 */
	assert_true(switches[0] >= 12);
	assert_true(switches[1] <= 4);
	(void)state;
}

/* Short messages (under a packet) cut in one tpchan_tx call share a path,
 * up to a chunk's worth, so a small put and the signal behind it leave in
 * one system call; a full chunk still picks its own. Only DATA names its
 * path for certain: ACKs may ride on any. */
static void test_short_messages_cut_together_share_a_path(void **state)
{
	static const uint64_t sizes[] = { 64, 0, 64, 32768, 64, 0 };
	enum { NSIZED = 6, NSMALL = 30, NMSG = NSIZED + NSMALL, SMALL = 1000 };
	static uint8_t bufs[64][1500];
	struct tpchan_txpkt out[64];
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct wire_pkt pk;
	uint16_t path_of[NMSG];
	uint64_t off = 0, now = 1000000;
	uint32_t small_paths = 0;
	int n;

	(void)state;
	p.npaths = 256;
	world_init(&w, NMSG, false);
	for (uint32_t i = 0; i < NMSG; i++) {
		/* 30 messages of 1000 B after the six: 30000 B, under a chunk */
		w.msgs[i].len = i < NSIZED ? sizes[i] : SMALL;
		w.msgs[i].off = off;
		off += w.msgs[i].len;
	}
	w.total = off;
	world_chans(&w, &p, &p, &lp);
	for (int i = 0; i < 64; i++)
		out[i].buf = bufs[i];
	for (uint32_t i = 0; i < NMSG; i++) {
		struct tpchan_msg m = msg_of(&w, i);

		assert_int_equal(tpchan_submit(w.a, &m), 0);
	}
	n = tpchan_tx(w.a, now, out, 64);
	assert_int_equal(n, 3 + 24 + 2 + NSMALL);  /* 32768 B: 23 full packets and a short one */
	for (int i = 0; i < n; i++) {
		assert_int_equal(wire_parse(out[i].buf, out[i].len, &pk), 0);
		assert_int_equal(pk.type, WIRE_DATA);
		assert_false(out[i].any_path);
		assert_int_equal(pk.data.path, out[i].path);
		path_of[(pk.data.msg_id >> 24) - 1] = out[i].path;  /* its last packet's */
	}
	assert_int_equal(path_of[1], path_of[0]);
	assert_int_equal(path_of[2], path_of[0]);
	assert_int_equal(path_of[5], path_of[4]);
	assert_int_not_equal(path_of[3], path_of[2]);  /* a chunk picks (seeded) */
	for (uint32_t i = NSIZED + 1; i < NMSG; i++)
		small_paths += path_of[i] != path_of[i - 1];
	assert_int_equal(small_paths, 0);
	/* the receiver's ACK may go on any path */
	for (int i = 0; i < n; i++)
		assert_int_equal(tpchan_rx(w.b, out[i].buf, out[i].len, now + 10000), 0);
	assert_int_equal(tpchan_tx(w.b, now + 10000, out, 64), 1);
	assert_int_equal(wire_parse(out[0].buf, out[0].len, &pk), 0);
	assert_int_equal(pk.type, WIRE_ACK);
	assert_true(out[0].any_path);
	/* it acknowledges everything: nothing is left for world_fini to fail */
	assert_int_equal(tpchan_rx(w.a, out[0].buf, out[0].len, now + 20000), 0);
	assert_int_equal(w.completed, NMSG);
	world_fini(&w);
}

static void test_more_than_1024_packets_in_flight_on_a_long_fat_wire(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();

	p.max_inflight_bytes = 16 << 20;
	p.max_msgs = 512;
	lp.delay_ns = 200 * US;                /* 100 Gbit/s x 400 us: ~3500 packets */
	world_init(&w, 1024, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 10000 * MS), 0);
	check_transfer(&w);
	print_message("peak in flight: %llu packets\n", (unsigned long long)w.peak_inflight);
	assert_true(w.peak_inflight >= 1024);
	world_fini(&w);
}

static bool all_done(void *arg)
{
	struct world *w = arg;

	return w->completed + w->failed == w->nmsgs;
}


/* Holds back a's DATA psn 1 by 50 us; notes when b sends ACKs. */
struct acktap {
	struct wirelink *link;
	uint64_t ack_ns[4];
	int acks;
};

static int64_t hold_psn1(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct acktap *t = arg;
	struct wire_pkt w;

	if (wire_parse(pkt, len, &w) < 0)
		return 0;
	if (from == 1 && w.type == WIRE_ACK && t->acks < 4)
		t->ack_ns[t->acks++] = wirelink_now(t->link);
	if (from == 0 && w.type == WIRE_DATA && w.data.psn == 1)
		return 50 * US;
	return 0;
}

static void test_ack_waits_at_most_ack_delay_or_ack_every_packets(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats b;
	struct tpchan_msg m;
	struct acktap t = { 0 };

	p.npaths = 1;
	/* a message's last packet is acknowledged at once: its sender
	 * completes it on that ACK */
	world_init(&w, 1, false);
	w.msgs[0].len = 100;
	w.total = 100;
	world_chans(&w, &p, &p, &lp);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	/* 10 us there, 10 us back, ~10 ns of serialisation */
	assert_true(w.last_complete_ns - 1000 >= 20 * US);
	assert_true(w.last_complete_ns - 1000 < 20 * US + 100);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.acks_tx, 1);
	world_fini(&w);

	/* a packet that does not end its message: the ACK waits for
	 * ack_delay_ns, then goes (the message's second packet comes 50 us
	 * late and is acknowledged at once) */
	world_init(&w, 1, false);
	w.msgs[0].len = 2 * MSS1500;
	w.total = 2 * MSS1500;
	world_chans(&w, &p, &p, &lp);
	t.link = w.link;
	wirelink_set_tap(w.link, hold_psn1, &t);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	assert_int_equal(t.acks, 2);
	/* psn 0 lands at ~10 us and waits 10 us */
	assert_true(t.ack_ns[0] - 1000 >= 20 * US);
	assert_true(t.ack_ns[0] - 1000 < 20 * US + 200);    /* + serialisation */
	/* psn 1 lands at ~60 us: no wait */
	assert_true(t.ack_ns[1] - 1000 < 60 * US + 400);
	check_transfer(&w);
	world_fini(&w);

	/* ack_every packets in a row: acknowledged as the last one lands */
	world_init(&w, 1, false);
	w.msgs[0].len = 8 * MSS1500;
	w.total = 8 * MSS1500;
	world_chans(&w, &p, &p, &lp);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	assert_true(w.last_complete_ns - 1000 < 21 * US);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.acks_tx, 1);
	check_transfer(&w);
	world_fini(&w);
}

/* ---- ack_hold_ns: a reply carries the ACK ---- */

/* Both sides send: 100 B messages of a fixed pattern, delivered anywhere. */
static int two_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	memset(dst, 0x5a, len);
	return 0;
}

static int two_deliver(void *arg, const struct wire_data *d)
{
	(*(int *)arg)++;
	return 0;
}

static void two_complete(void *arg, uint64_t cookie, int res)
{
	/* freeing a channel cancels what it still has in flight */
	assert_true(res == 0 || res == -ECANCELED);
}

static const struct tpchan_cb two_cb = {
	.read = two_read, .deliver = two_deliver, .complete = two_complete,
};

/* What tpchan_tx gives at now, at most max packets: the count of DATA and
 * of ACK packets and the type of the first (-1: none; first may be NULL),
 * handed to the peer (if any) at the same time. */
static void two_tx_max(struct tpchan *from, struct tpchan *to, uint64_t now, int max, int *data,
		       int *acks, int *first_type)
{
	static uint8_t bufs[8][1500];
	struct tpchan_txpkt out[8];
	int n;

	for (int i = 0; i < 8; i++)
		out[i] = (struct tpchan_txpkt){ .buf = bufs[i] };
	n = tpchan_tx(from, now, out, max);
	assert_true(n >= 0 && n <= max);
	*data = *acks = 0;
	if (first_type)
		*first_type = -1;
	for (int i = 0; i < n; i++) {
		struct wire_pkt w;

		assert_true(wire_parse(out[i].buf, out[i].len, &w) >= 0);
		if (i == 0 && first_type)
			*first_type = w.type;
		*data += w.type == WIRE_DATA;
		*acks += w.type == WIRE_ACK;
		if (to)
			assert_int_equal(tpchan_rx(to, out[i].buf, out[i].len, now), 0);
	}
}

static void two_tx(struct tpchan *from, struct tpchan *to, uint64_t now, int *data, int *acks)
{
	two_tx_max(from, to, now, 8, data, acks, NULL);
}

/* a and b from base on one path without CRC, each with its tokens and
 * its own counter as cb_arg */
static void two_chans_from(struct tpchan_params p, struct tpchan **a, struct tpchan **b, int *got_a,
			   int *got_b)
{
	p.npaths = 1;
	p.crc = false;
	p.tx_token = TOKEN_B;
	p.rx_token = TOKEN_A;
	p.cb_arg = got_a;
	*a = tpchan_new(&p);
	p.tx_token = TOKEN_A;
	p.rx_token = TOKEN_B;
	p.cb_arg = got_b;
	*b = tpchan_new(&p);
	assert_non_null(*a);
	assert_non_null(*b);
}

static void two_chans(uint64_t hold, struct tpchan **a, struct tpchan **b, int *got_a, int *got_b)
{
	struct tpchan_params p = chan_params(false);

	p.ack_hold_ns = hold;
	p.cb = &two_cb;
	two_chans_from(p, a, b, got_a, got_b);
}

static void test_ack_hold_lets_a_reply_carry_the_ack(void **state)
{
	struct tpchan_msg m = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc, .len = 100 };
	struct tpchan *a, *b;
	struct tpchan_stats s;
	int got_a = 0, got_b = 0, data, acks;
	uint64_t t = 1 * MS;

	/* without a hold the message's last packet is acknowledged at once:
	 * b's reply a moment later is a second send */
	two_chans(0, &a, &b, &got_a, &got_b);
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	assert_int_equal(data, 1);
	assert_int_equal(got_b, 1);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data, 0);
	assert_int_equal(acks, 1);
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, t + 1 * US, &data, &acks);
	assert_int_equal(data, 1);
	assert_int_equal(acks, 0);
	tpchan_free(a);
	tpchan_free(b);

	/* held 5 us. The first message's end is acknowledged at once (no
	 * reply seen yet); b's reply 1 us later shows the exchange */
	got_a = got_b = 0;
	two_chans(5 * US, &a, &b, &got_a, &got_b);
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data, 0);
	assert_int_equal(acks, 1);
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, t + 1 * US, &data, &acks);
	assert_int_equal(data, 1);
	assert_int_equal(acks, 0);
	/* a sends again 2 us after b's reply came: a sees the exchange too.
	 * b holds the ACK of a's message for its reply, which takes it
	 * along, and a's message completes on it */
	t += 3 * US;
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	assert_int_equal(data, 1);
	assert_int_equal(acks, 1);
	assert_int_equal(tpchan_next_deadline(b), t + 5 * US);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data + acks, 0);
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, t + 1 * US, &data, &acks);
	assert_int_equal(data, 1);
	assert_int_equal(acks, 1);
	assert_int_equal(got_a, 2);
	tpchan_get_stats(a, &s);
	assert_int_equal(s.inflight_pkts, 0);
	assert_int_equal(s.msgs_completed, 2);
	tpchan_get_stats(b, &s);
	assert_int_equal(s.acks_held, 1);
	assert_int_equal(s.acks_with_data, 1);
	assert_int_equal(s.ack_holds_expired, 0);

	/* no reply: the ACK goes when the hold runs out, not before */
	assert_int_equal(tpchan_next_deadline(a), t + 1 * US + 5 * US);
	two_tx(a, b, t + 5 * US, &data, &acks);
	assert_int_equal(data + acks, 0);
	two_tx(a, b, t + 6 * US, &data, &acks);
	assert_int_equal(data, 0);
	assert_int_equal(acks, 1);
	tpchan_get_stats(b, &s);
	assert_int_equal(s.inflight_pkts, 0);
	tpchan_get_stats(a, &s);
	assert_int_equal(s.acks_held, 1);
	assert_int_equal(s.ack_holds_expired, 1);

	/* and the exchange is over: b's next message is acknowledged at once */
	t += 100 * US;
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data, 1);
	two_tx(a, b, t, &data, &acks);
	assert_int_equal(data, 0);
	assert_int_equal(acks, 1);
	tpchan_free(a);
	tpchan_free(b);
}

/* One exchange that puts both sides in ping-pong mode (as in the test
 * above): a's message, b's reply 1 us later, a's next message 2 us after
 * that with b's reply 1 us later. Leaves a holding its ACK of that reply. */
static void two_pingpong(struct tpchan *a, struct tpchan *b, uint64_t *t)
{
	struct tpchan_msg m = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc, .len = 100 };
	int data, acks;

	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, *t, &data, &acks);
	two_tx(b, a, *t, &data, &acks);
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, *t + 1 * US, &data, &acks);
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, *t + 3 * US, &data, &acks);
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx(b, a, *t + 4 * US, &data, &acks);
	assert_int_equal(acks, 1);             /* b held, its reply led by the ACK */
	*t += 4 * US;
}

static void test_ack_hold_ends_when_the_delay_comes_first_and_leads_a_full_batch(void **state)
{
	struct tpchan_msg big = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc,
				  .len = 2 * MSS1500 };
	struct tpchan_msg m = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc, .len = 100 };
	struct tpchan *a, *b;
	struct tpchan_stats s;
	int got_a = 0, got_b = 0, data, acks, first;
	uint64_t t = 1 * MS;

	/* a hold of 10 us, as long as ack_delay: a two-packet message whose
	 * first packet came 3 us before its last. The ACK goes when the
	 * first packet has waited 10 us, before the hold runs out; no reply
	 * came, so b stops holding: a's next message is acknowledged at once */
	two_chans(10 * US, &a, &b, &got_a, &got_b);
	two_pingpong(a, b, &t);
	t += 2 * US;
	assert_int_equal(tpchan_submit(a, &big), 0);
	two_tx_max(a, b, t, 2, &data, &acks, &first);
	assert_int_equal(data, 1);             /* led by a's held ACK of b's reply */
	assert_int_equal(first, WIRE_ACK);
	two_tx_max(a, b, t + 3 * US, 1, &data, &acks, &first);
	assert_int_equal(data, 1);
	assert_int_equal(tpchan_next_deadline(b), t + 10 * US);
	two_tx_max(b, a, t + 10 * US, 8, &data, &acks, &first);
	assert_int_equal(acks, 1);
	tpchan_get_stats(b, &s);
	assert_int_equal(s.ack_holds_expired, 1);
	t += 100 * US;
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(acks, 1);             /* at once */
	tpchan_free(a);
	tpchan_free(b);

	/* the reply fills its batch: the held ACK takes the first place,
	 * the DATA follows in the next call, and ping-pong goes on */
	two_chans(5 * US, &a, &b, &got_a, &got_b);
	two_pingpong(a, b, &t);
	t += 2 * US;
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data + acks, 0);      /* held */
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx_max(b, a, t + 1 * US, 1, &data, &acks, &first);
	assert_int_equal(acks, 1);
	assert_int_equal(first, WIRE_ACK);
	two_tx_max(b, a, t + 1 * US, 1, &data, &acks, &first);
	assert_int_equal(data, 1);
	tpchan_get_stats(b, &s);
	assert_int_equal(s.acks_with_data, 2);
	assert_int_equal(s.ack_holds_expired, 0);
	/* in a batch with room the ACK is first too */
	t += 3 * US;
	assert_int_equal(tpchan_submit(a, &m), 0);
	two_tx(a, b, t, &data, &acks);
	two_tx(b, a, t, &data, &acks);
	assert_int_equal(data + acks, 0);      /* still holding */
	assert_int_equal(tpchan_submit(b, &m), 0);
	two_tx_max(b, a, t + 1 * US, 8, &data, &acks, &first);
	assert_int_equal(data, 1);
	assert_int_equal(acks, 1);
	assert_int_equal(first, WIRE_ACK);
	tpchan_free(a);
	tpchan_free(b);
}

/* Drops the first transmission of one DATA psn from a (the first `times`,
 * when set). */
struct dropper {
	uint32_t psn;
	int times;                     /* 0: once */
	int dropped;
	int fillers;                   /* resends of that psn without payload */
	int retx_seen;
};

static int64_t drop_once(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct dropper *d = arg;
	struct wire_pkt w;

	if (from != 0 || wire_parse(pkt, len, &w) < 0 || w.type != WIRE_DATA || w.data.psn != d->psn)
		return 0;
	if (w.data.flags & WIRE_F_RETX) {
		d->retx_seen++;
		if (w.data.payload_len == 0 && w.data.msg_len > 0)
			d->fillers++;
	}
	if (d->dropped >= (d->times ? d->times : 1))
		return 0;
	d->dropped++;
	return -1;
}

static void test_hole_is_acknowledged_at_once_and_fast_retransmitted(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct dropper d = { .psn = 2 };
	struct tpchan_stats a;
	struct tpchan_msg m;

	p.npaths = 1;
	world_init(&w, 1, false);
	w.msgs[0].len = 12 * MSS1500;
	w.total = 12 * MSS1500;
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, drop_once, &d);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(d.dropped, 1);
	assert_int_equal(a.fast_retx, 1);
	assert_int_equal(a.retx_pkts, 1);
	assert_int_equal(a.retx_timeouts, 0);
	/* far below the 1 ms initial RTO: recovered within about two RTTs */
	assert_true(w.last_complete_ns - 1000 < 60 * US);
	world_fini(&w);
}

/* The last packet of a message lost once: the tail loss probe resends it
 * two RTTs after it went, long before the RTO. (A first message gives the
 * RTT sample a probe timeout needs.) */
static void test_lost_tail_is_probed_before_the_rto(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct dropper d = { .psn = 12 };          /* psn 0: the first message */
	struct tpchan_stats a;
	struct tpchan_msg m;
	uint64_t t0;

	p.npaths = 1;
	world_init(&w, 2, false);
	w.msgs[0].len = 100;
	w.msgs[1].off = 100;
	w.msgs[1].len = 12 * MSS1500;
	w.total = 100 + 12 * MSS1500;
	world_chans(&w, &p, &p, &lp);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done_1, &w, 100 * MS), 0);
	wirelink_set_tap(w.link, drop_once, &d);
	t0 = wirelink_now(w.link);
	m = msg_of(&w, 1);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(d.dropped, 1);
	assert_int_equal(a.tlp_probes, 1);
	assert_int_equal(a.retx_pkts, 1);
	assert_int_equal(a.retx_timeouts, 0);
	/* 20 us RTT: sent by ~2 us, probed 2 RTTs + 10 us later, acked 20 us
	 * after that: about 75 us, against a 200 us RTO */
	assert_true(w.last_complete_ns - t0 < 90 * US);
	world_fini(&w);
}

/* Adds `extra` ns to every packet b sends (its ACKs) while set. */
static int64_t late_acks(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	(void)pkt;
	(void)len;
	return from == 1 ? *(const int64_t *)arg : 0;
}

/* Send message i of w alone and run until it completed. */
static void send_one(struct world *w, uint32_t i)
{
	struct tpchan_msg m = msg_of(w, i);

	assert_int_equal(tpchan_submit(w->a, &m), 0);
	w->next = i + 1;
	while (w->completed + w->failed < i + 1)
		assert_int_equal(wirelink_step(w->link), 1);
}

/* A timeout whose packet had arrived (its ACK was late by 1 ms, five RTOs
 * of 200 us) is found spurious: the floor doubles, so once the RTT is back
 * to 20 us the timeout is 400 us, not 200. A timeout that was right (the
 * packet and its tail probe lost) halves it back. */
static void test_a_spurious_timeout_raises_the_floor_a_right_one_lowers_it(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct dropper d = { .psn = 32, .times = 2 };
	struct tpchan_stats a;
	int64_t extra = 0;

	(void)state;
	p.npaths = 1;
	world_init(&w, 42, false);
	for (uint32_t i = 0; i < w.nmsgs; i++) {   /* one packet each: message i is psn i */
		w.msgs[i].off = i * 100;
		w.msgs[i].len = 100;
	}
	w.total = w.nmsgs * 100;
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, late_acks, &extra);
	send_one(&w, 0);
	extra = 1 * MS;
	send_one(&w, 1);
	tpchan_get_stats(w.a, &a);
	assert_true(a.retx_timeouts >= 1);
	assert_int_equal(a.rto_spurious, 1);
	extra = 0;
	for (uint32_t i = 2; i < 32; i++)
		send_one(&w, i);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.rto_ns, 400 * US);

	wirelink_set_tap(w.link, drop_once, &d);
	send_one(&w, 32);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(d.dropped, 2);
	assert_int_equal(a.rto_spurious, 1);
	for (uint32_t i = 33; i < w.nmsgs; i++)
		send_one(&w, i);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.rto_ns, 200 * US);
	check_transfer(&w);
	world_fini(&w);
}

/* Stalls what b sends (its ACKs) from `from` to `until`, as a receiving
 * engine thread that was descheduled: held, and let go in order from until
 * on, spread over (until - from) / spread (all at once when spread is 0);
 * what b sends meanwhile waits behind them. */
struct stall {
	struct wirelink *link;
	uint64_t from, until, busy;
	uint32_t spread;
};

static int64_t stall_acks(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct stall *s = arg;
	uint64_t now = wirelink_now(s->link);

	(void)pkt;
	(void)len;
	if (from != 1 || now < s->from)
		return 0;
	if (now < s->until)
		s->busy = s->until + (s->spread ? (now - s->from) / s->spread : 0);
	return now < s->busy ? (int64_t)(s->busy - now) : 0;
}

static bool fifty_completed(void *arg)
{
	struct world *w = arg;

	pump(w);
	return w->completed >= 50;
}

/* 16 MiB over one path with b's ACKs stalled for 250 us in the middle of
 * it (a little over the 200 us RTO): a's stats and b's. */
static void stalled_transfer(bool gbn, uint32_t spread, struct tpchan_stats *a,
			     struct tpchan_stats *b)
{
	struct world w;
	struct tpchan_params p = chan_params(gbn);
	struct wirelink_params lp = clean_link();
	struct stall s = { .spread = spread };

	p.npaths = 1;
	world_init(&w, 512, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, fifty_completed, &w, 100 * MS), 0);
	s.link = w.link;
	s.from = wirelink_now(w.link);
	s.until = s.from + 250 * US;
	wirelink_set_tap(w.link, stall_acks, &s);
	assert_int_equal(wirelink_run(w.link, pump, &w, 1000 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, a);
	tpchan_get_stats(w.b, b);
	print_message("%s, ACKs let go %s: %llu resent (%llu of them copies b had), %llu timeouts, "
		      "%llu lost by ACKs\n", gbn ? "Go-Back-N" : "SACK", spread ? "spread" : "at once",
		      (unsigned long long)a->retx_pkts, (unsigned long long)b->dup_pkts_rx,
		      (unsigned long long)a->retx_timeouts, (unsigned long long)a->fast_retx);
	world_fini(&w);
}

/* Go-Back-N: the stall times out once (spuriously) and resends what was
 * in flight, which b already had. Its copies come back as duplicate ACKs
 * while new data is in flight; counted as a hole at the new cumulative
 * point they made another go-back of packets that had arrived, whose
 * copies made the next, to the end of the transfer (11008 resends, not
 * 1480). */
static void test_go_back_n_resends_a_spurious_timeout_once(void **state)
{
	struct tpchan_stats a, b;

	(void)state;
	stalled_transfer(true, 0, &a, &b);
	assert_int_equal(a.retx_timeouts, 1);
	assert_int_equal(a.fast_retx, 0);          /* no go-back from duplicate ACKs */
	assert_int_equal(a.retx_pkts, b.dup_pkts_rx);
	/* one flight at most: max_inflight_bytes of packets */
	assert_true(a.retx_pkts <= (4u << 20) / MSS1500);
}

/* SACK: the same stall, its ACKs let go over 60 us as a thread that wakes
 * drains its backlog. The timeout resends what was sent an RTO before it,
 * and the first ACKs after the stall acknowledge those resends, but they
 * echo the originals: the resends are not what arrived. Taken as delivered
 * (acknowledged a round trip after they went), the newest transmissions
 * delivered, they made the reordering window declare everything sent
 * before them lost: the whole flight resent (1480 packets, not 16). */
static void test_a_spurious_timeout_resends_only_what_it_found_lost(void **state)
{
	struct tpchan_stats a, b;

	(void)state;
	stalled_transfer(false, 4, &a, &b);
	assert_int_equal(a.retx_timeouts, 1);
	assert_int_equal(a.rto_spurious, 1);
	assert_int_equal(a.fast_retx, 0);
	assert_true(a.retx_pkts < 64);
}

/* Go-Back-N on one path with no congestion control: a sends its one
 * message's first flight one packet a call, 100 ns apart, as a NIC paces
 * them out, into out[] (buffers bufs); acks[] get buffers abufs for b's
 * ACKs. Returns how many packets went. */
static int gbn_paced_flight(struct world *w, struct tpchan_txpkt out[64], uint8_t bufs[64][1500],
			    struct tpchan_txpkt acks[8], uint8_t abufs[8][1500], uint64_t now)
{
	struct tpchan_params p = chan_params(true);
	struct wirelink_params lp = clean_link();
	int n = 0;

	p.npaths = 1;
	p.cc = &cc_none_ops;
	world_init(w, 1, false);               /* one message, one flight */
	world_chans(w, &p, &p, &lp);
	for (int i = 0; i < 64; i++)
		out[i] = (struct tpchan_txpkt){ .buf = bufs[i] };
	for (int i = 0; i < 8; i++)
		acks[i] = (struct tpchan_txpkt){ .buf = abufs[i] };
	pump(w);
	while (n < 64 && tpchan_tx(w->a, now + (uint64_t)n * 100, out + n, 1) == 1)
		n++;
	return n;
}

/* Go-Back-N, the last packets of a flight in one receive batch, as an
 * engine thread reads a burst (recvmmsg) before it sends: packets before
 * the hole and the 3 (dupthresh) after it, the flight's tail. b owes one
 * ACK that moves a's cumulative point to the hole and echoes the batch's
 * first arrival (sent before the hole), and 3 more copies, duplicates at
 * the hole that echo the newest packet dropped out of order: a goes back at
 * once. When every copy echoed the first arrival, the duplicates were taken
 * for answers to older copies (86c1862's rule); when only 3 copies went,
 * the first was no duplicate: either way the hole waited for the RTO (found
 * by reviews). */
static void test_go_back_n_counts_the_copies_of_a_batched_duplicate_ack(void **state)
{
	static uint8_t bufs[64][1500], abufs[8][1500];
	struct tpchan_txpkt out[64], acks[8];
	struct world w;
	struct tpchan_stats s;
	uint64_t now = 1000000;
	uint32_t psn[64], hole;
	int n, na = 0;

	(void)state;
	n = gbn_paced_flight(&w, out, bufs, acks, abufs, now);
	assert_true(n >= 10);
	for (int i = 0; i < n; i++) {
		struct wire_pkt pk;

		assert_int_equal(wire_parse(out[i].buf, out[i].len, &pk), 0);
		assert_int_equal(pk.type, WIRE_DATA);
		psn[i] = pk.data.psn;
	}
	hole = (uint32_t)n - 4;                /* lost; the 3 after it are the flight's tail */
	for (int i = 0; i < n; i++)
		if ((uint32_t)i != hole)
			(void)tpchan_rx(w.b, out[i].buf, out[i].len, now + 10 * US);
	na = tpchan_tx(w.b, now + 10 * US, acks, 8);
	assert_int_equal(na, 4);               /* the ACK and dupthresh duplicates */
	for (int i = 0; i < na; i++)
		assert_int_equal(tpchan_rx(w.a, acks[i].buf, acks[i].len, now + 20 * US), 0);
	tpchan_get_stats(w.a, &s);
	print_message("gbn batched: hole psn %u, fast_retx %llu, next deadline +%lld ns\n",
		      psn[hole], (unsigned long long)s.fast_retx,
		      (long long)(tpchan_next_deadline(w.a) - (now + 20 * US)));
	/* three duplicates at the hole: it goes back now, one round trip */
	assert_true(s.fast_retx > 0);
	n = tpchan_tx(w.a, now + 20 * US, out, 64);
	assert_true(n >= 4);                   /* the hole and the 3 after it again */
	world_fini(&w);
}

/* Go-Back-N, a duplicate ACK's copies split over two tpchan_tx calls (a
 * batch of one, as the simulator's NIC asks): the first copy goes, the
 * resend of the missing packet arrives and fills the hole, then the rest
 * go. What is left is a new ACK (it moves cum_psn): it echoes the resend,
 * as any ACK that a new resend fills a hole for does, not the newest
 * packet dropped out of order before it (an original sent before the
 * go-back: the sender's RTT sample would span the wait for the go-back,
 * or, from a faster path, undercut the resend's round trip). */
static void test_go_back_n_split_copies_echo_a_resend_that_arrived_between(void **state)
{
	static uint8_t bufs[64][1500], rbufs[64][1500], abufs[8][1500];
	struct tpchan_txpkt out[64], rout[64], acks[8];
	struct world w;
	struct tpchan_stats s;
	struct wire_pkt pk, resend = { 0 };
	uint64_t now = 1000000, dropped_tsval = 0;
	uint32_t hole = 5;
	int n, nr, na, found = 0;

	(void)state;
	for (int i = 0; i < 64; i++)
		rout[i] = (struct tpchan_txpkt){ .buf = rbufs[i] };
	n = gbn_paced_flight(&w, out, bufs, acks, abufs, now);
	assert_true(n >= 12);
	/* everything before the hole, acknowledged */
	for (uint32_t i = 0; i < hole; i++)
		(void)tpchan_rx(w.b, out[i].buf, out[i].len, now + 10 * US);
	na = tpchan_tx(w.b, now + 21 * US, acks, 8);       /* after ack_delay_ns */
	assert_int_equal(na, 1);
	assert_int_equal(tpchan_rx(w.a, acks[0].buf, acks[0].len, now + 31 * US), 0);
	/* three after it: dupthresh copies, and a goes back */
	for (uint32_t i = hole + 1; i < hole + 4; i++)
		(void)tpchan_rx(w.b, out[i].buf, out[i].len, now + 21 * US);
	na = tpchan_tx(w.b, now + 21 * US, acks, 8);
	assert_int_equal(na, 3);
	for (int i = 0; i < na; i++)
		assert_int_equal(tpchan_rx(w.a, acks[i].buf, acks[i].len, now + 31 * US), 0);
	tpchan_get_stats(w.a, &s);
	assert_true(s.fast_retx > 0);
	nr = tpchan_tx(w.a, now + 31 * US, rout, 64);
	assert_true(nr >= 1);
	assert_int_equal(wire_parse(rout[0].buf, rout[0].len, &resend), 0);
	assert_int_equal(resend.type, WIRE_DATA);
	assert_true(resend.data.flags & WIRE_F_RETX);
	/* the originals sent before the go-back, still on the wire, then the
	 * resend of the hole right behind them; b's NIC takes one ACK in
	 * between */
	for (uint32_t i = hole + 4; i < hole + 7; i++) {
		assert_int_equal(wire_parse(out[i].buf, out[i].len, &pk), 0);
		dropped_tsval = pk.data.tsval;
		(void)tpchan_rx(w.b, out[i].buf, out[i].len, now + 41 * US);
	}
	na = tpchan_tx(w.b, now + 41 * US, acks, 1);
	assert_int_equal(na, 1);
	assert_int_equal(wire_parse(acks[0].buf, acks[0].len, &pk), 0);
	assert_int_equal(pk.ack.cum_psn, resend.data.psn);      /* a duplicate */
	assert_int_equal(tpchan_rx(w.b, rout[0].buf, rout[0].len, now + 41 * US), 0);
	na = tpchan_tx(w.b, now + 41 * US, acks, 8);
	assert_true(na >= 1);
	for (int i = 0; i < na; i++) {
		assert_int_equal(wire_parse(acks[i].buf, acks[i].len, &pk), 0);
		assert_int_equal(pk.type, WIRE_ACK);
		assert_int_equal(pk.ack.cum_psn, resend.data.psn + 1);
		if (i > 0)
			continue;
		print_message("gbn split: new ACK echoes %llu; resend %llu, newest dropped %llu\n",
			      (unsigned long long)pk.ack.tsecr,
			      (unsigned long long)resend.data.tsval,
			      (unsigned long long)dropped_tsval);
		assert_int_equal(pk.ack.tsecr, resend.data.tsval);
		found++;
	}
	assert_int_equal(found, 1);
	world_fini(&w);
}

/* An ACK due when tpchan_tx has no room left for it (a refusal record
 * took the only slot, send_refusals runs first) goes once, next call. It
 * went twice (found by review): it left dupacks_owed = 1 (send_acks' `copies` leftover) though no copy went and
 * nothing was dropped; the next call then reads it as owed duplicates and,
 * since cum_psn moved past ack_cum_sent, adds ce96f24's extra copy: two
 * ACKs, in SACK mode too. In Go-Back-N the second is a duplicate at the
 * sender that echoes a packet sent in the same call as the one at its new
 * cumulative point (same tsval): counted, and with dupthresh 1 a go-back
 * of packets that all arrived. */
static int rv_deliver(void *arg, const struct wire_data *d)
{
	(*(int *)arg)++;
	return d->rkey == 0xbad ? -EACCES : 0;
}

static void rv_complete(void *arg, uint64_t cookie, int res)
{
	(void)arg;
	(void)cookie;
	(void)res;
}

static const struct tpchan_cb rv_cb = {
	.read = two_read, .deliver = rv_deliver, .complete = rv_complete,
};

/* two_chans with no congestion control and rv_cb; dupthresh 0: chan_params' own */
static void rv_pair(bool gbn, uint32_t dupthresh, int *got_a, int *got_b, struct tpchan **a,
		    struct tpchan **b)
{
	struct tpchan_params p = chan_params(gbn);

	if (dupthresh)
		p.dupthresh = dupthresh;
	p.cc = &cc_none_ops;
	p.cb = &rv_cb;
	two_chans_from(p, a, b, got_a, got_b);
}

/* a sends a message b refuses (psn 0) and a good one of 3 packets, all
 * four in one call (one tsval), into out[8] */
static void rv_flight(struct tpchan *a, struct tpchan_txpkt out[8], uint64_t t)
{
	struct tpchan_msg bad = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xbad, .len = 100 };
	struct tpchan_msg good = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc,
				   .len = 3 * MSS1500 };
	static uint8_t bufs[8][1500];

	assert_int_equal(tpchan_submit(a, &bad), 0);
	assert_int_equal(tpchan_submit(a, &good), 0);
	for (int i = 0; i < 8; i++)
		out[i] = (struct tpchan_txpkt){ .buf = bufs[i] };
	assert_int_equal(tpchan_tx(a, t, out, 8), 4);
}

static void rv_no_room_run(bool gbn, uint32_t dupthresh, int *acks_out, uint64_t *fast_retx)
{
	struct tpchan_txpkt out[8];
	struct tpchan *a, *b;
	struct tpchan_stats s;
	int got_a = 0, got_b = 0, data, acks, first;
	uint64_t t = 1 * MS;

	rv_pair(gbn, dupthresh, &got_a, &got_b, &a, &b);
	rv_flight(a, out, t);
	/* b takes the refused one (psn 0) only, for now */
	assert_int_equal(tpchan_rx(b, out[0].buf, out[0].len, t + 5 * US), 0);
	/* a NIC batch of one: the NACK goes, the ACK has no room */
	two_tx_max(b, a, t + 5 * US, 1, &data, &acks, &first);
	assert_int_equal(first, WIRE_NACK);
	/* the ACK, alone: nothing was dropped */
	two_tx_max(b, a, t + 6 * US, 8, &data, &acks, NULL);
	*acks_out = acks;
	tpchan_get_stats(a, &s);
	*fast_retx = s.fast_retx;
	tpchan_free(a);
	tpchan_free(b);
}

static void test_an_ack_without_room_goes_once(void **state)
{
	int acks_sack, acks_gbn, acks_gbn1;
	uint64_t fr, fr1;

	(void)state;
	rv_no_room_run(false, 3, &acks_sack, &fr);
	rv_no_room_run(true, 3, &acks_gbn, &fr);
	rv_no_room_run(true, 1, &acks_gbn1, &fr1);
	print_message("sack: %d ACKs after the NACK; gbn: %d; gbn dupthresh 1: %d, fast_retx %llu\n",
		      acks_sack, acks_gbn, acks_gbn1, (unsigned long long)fr1);
	assert_int_equal(acks_sack, 1);
	assert_int_equal(acks_gbn, 1);
	assert_int_equal(fr1, 0);              /* nothing was lost: no go-back */
}

/* The same ACK without room when it owes duplicates and moves cum_psn
 * adds its extra copy once. It was added twice (found by review): the
 * copies left (dupacks_owed + ce96f24's extra) are stored in
 * dupacks_owed, and the next call adds the extra again (ack_copy_sent is
 * still false): 2 packets dropped out of order earn 3 duplicates, not 2,
 * and the sender goes back at dupthresh 3. */
static void test_an_ack_without_room_adds_its_extra_copy_once(void **state)
{
	struct tpchan_txpkt out[8];
	struct tpchan *a, *b;
	struct tpchan_stats s;
	int got_a = 0, got_b = 0, data, acks, first;
	uint64_t t = 1 * MS;

	(void)state;
	rv_pair(true, 0, &got_a, &got_b, &a, &b);
	rv_flight(a, out, t);
	/* psn 0 (refused: a NACK), psn 1 late, psns 2 and 3 dropped */
	assert_int_equal(tpchan_rx(b, out[0].buf, out[0].len, t + 5 * US), 0);
	(void)tpchan_rx(b, out[2].buf, out[2].len, t + 5 * US);
	(void)tpchan_rx(b, out[3].buf, out[3].len, t + 5 * US);
	two_tx_max(b, a, t + 5 * US, 1, &data, &acks, &first);
	assert_int_equal(first, WIRE_NACK);
	two_tx_max(b, a, t + 6 * US, 8, &data, &acks, NULL);
	tpchan_get_stats(a, &s);
	print_message("gbn, 2 dropped, ACK without room: %d ACKs, fast_retx %llu\n", acks,
		      (unsigned long long)s.fast_retx);
	assert_int_equal(acks, 3);             /* the ACK that moves cum_psn and 2 duplicates */
	assert_int_equal(s.fast_retx, 0);      /* 2 < dupthresh */
	tpchan_free(a);
	tpchan_free(b);
}

/* Go-Back-N, a packet dropped out of order (owed a duplicate) that
 * arrives again (a network duplicate, or a resend) and is taken before the
 * ACK goes owes no duplicate: nothing is missing any more. Before the fix
 * (found by review) dupacks_owed still said 1 and
 * cum_psn moved, so ce96f24 adds a copy: a duplicate at the new cumulative
 * point that echoes the dropped copy, sent in the same call (same tsval)
 * as the packet there, so the sender counts it; at dupthresh 1 it goes
 * back over packets still on their way. Before ce96f24 one ACK went. */
static void rv_redelivered_run(uint32_t dupthresh, int *acks_out, uint64_t *fast_retx)
{
	struct tpchan_msg good = { .opcode = 2, .dst_ep = 1, .dst_conn = 9, .rkey = 0xabc,
				   .len = 4 * MSS1500 };
	static uint8_t bufs[8][1500];
	struct tpchan_txpkt out[8];
	struct tpchan *a, *b;
	struct tpchan_stats s;
	int got_a = 0, got_b = 0, n, data, acks;
	uint64_t t = 1 * MS;

	rv_pair(true, dupthresh, &got_a, &got_b, &a, &b);
	assert_int_equal(tpchan_submit(a, &good), 0);
	for (int i = 0; i < 8; i++)
		out[i] = (struct tpchan_txpkt){ .buf = bufs[i] };
	n = tpchan_tx(a, t, out, 8);
	assert_int_equal(n, 4);
	/* one receive batch: psn 1 (dropped), psn 0, psn 1 again (taken) */
	(void)tpchan_rx(b, out[1].buf, out[1].len, t + 5 * US);
	assert_int_equal(tpchan_rx(b, out[0].buf, out[0].len, t + 5 * US), 0);
	assert_int_equal(tpchan_rx(b, out[1].buf, out[1].len, t + 5 * US), 0);
	two_tx_max(b, a, t + 5 * US, 8, &data, &acks, NULL);
	*acks_out = acks;
	tpchan_get_stats(a, &s);
	*fast_retx = s.fast_retx;
	tpchan_free(a);
	tpchan_free(b);
}

static void test_a_drop_taken_again_owes_no_duplicate(void **state)
{
	int acks3, acks1;
	uint64_t fr3, fr1;

	(void)state;
	rv_redelivered_run(3, &acks3, &fr3);
	rv_redelivered_run(1, &acks1, &fr1);
	print_message("gbn drop taken again: %d ACKs; dupthresh 1: %d ACKs, fast_retx %llu\n",
		      acks3, acks1, (unsigned long long)fr1);
	assert_int_equal(acks3, 1);
	assert_int_equal(fr1, 0);
}

/* Takes every DATA packet a sends (up to 4): none reaches b. */
struct grab {
	uint8_t pkt[4][9000];
	uint32_t len[4];
	int n;
};

static int64_t grab_data(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct grab *g = arg;
	struct wire_pkt w;

	if (from != 0 || wire_parse(pkt, len, &w) < 0 || w.type != WIRE_DATA)
		return 0;
	if (g->n < 4) {
		memcpy(g->pkt[g->n], pkt, len);
		g->len[g->n++] = len;
	}
	return -1;
}

/* Two DATA packets from a to b on one path, taken off the wire (d0, d1 in
 * psn order) for the test to hand b as it likes (echo_inject). */
static void echo_setup(struct world *w, struct grab *g, struct wire_pkt *d0, struct wire_pkt *d1)
{
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_msg m;

	memset(g, 0, sizeof(*g));
	p.npaths = 1;
	world_init(w, 1, false);
	w->msgs[0].len = 2 * MSS1500;
	w->total = 2 * MSS1500;
	world_chans(w, &p, &p, &lp);
	wirelink_set_tap(w->link, grab_data, g);
	m = msg_of(w, 0);
	assert_int_equal(tpchan_submit(w->a, &m), 0);
	assert_int_equal(wirelink_step(w->link), 1);
	assert_int_equal(g->n, 2);
	assert_int_equal(wire_parse(g->pkt[0], g->len[0], d0), 0);
	assert_int_equal(wire_parse(g->pkt[1], g->len[1], d1), 0);
	assert_int_equal(d1->data.psn, d0->data.psn + 1);
}

/* x (its flags and tsval as the test set them) arrives at b. */
static void echo_inject(struct world *w, const struct wire_pkt *x)
{
	uint8_t buf[9000];
	int n = wire_write_data(buf, sizeof(buf), &x->data);

	assert_true(n > 0);
	assert_int_equal(wirelink_inject(w->link, 1, buf, (size_t)n), 0);
}

/* b's one ACK now: its tsecr, after checking it acknowledges up to cum. */
static uint64_t echo_of_ack(struct world *w, uint32_t cum)
{
	struct tpchan_txpkt out[8];
	uint8_t bufs[8][9000];
	struct wire_pkt ack;
	uint64_t tsecr = 0;
	int n, found = 0;

	for (int i = 0; i < 8; i++)
		out[i].buf = bufs[i];
	n = tpchan_tx(w->b, wirelink_now(w->link), out, 8);
	for (int i = 0; i < n; i++) {
		if (wire_parse(out[i].buf, out[i].len, &ack) < 0 || ack.type != WIRE_ACK)
			continue;
		assert_int_equal(ack.ack.cum_psn, cum);
		tsecr = ack.ack.tsecr;
		found++;
	}
	assert_int_equal(found, 1);
	return tsecr;
}

/* b gets psn 1 (sent at T1), then, before it answers, the resend of the
 * lost psn 0 (sent at T2, later): the ACK echoes the resend, so the
 * sender can see its timeout was right (an echo of T1 read as "the
 * original arrived"). */
static void test_an_ack_echoes_a_resend_that_filled_a_hole(void **state)
{
	static struct grab g;
	struct wire_pkt d0, d1;
	struct world w;

	(void)state;
	echo_setup(&w, &g, &d0, &d1);
	d0.data.flags |= WIRE_F_RETX;
	d0.data.tsval = d1.data.tsval + 500 * US;
	echo_inject(&w, &d1);
	echo_inject(&w, &d0);
	assert_int_equal(echo_of_ack(&w, d1.data.psn + 1), d0.data.tsval);
	world_fini(&w);
}

/* Two resends in one ACK's interval, the newer first: the ACK echoes the
 * newer. Echoing the later arrival would give the time of a fast
 * retransmit sent before a timeout whose own resend arrived first, and
 * the sender would judge that right timeout spurious. */
static void test_an_ack_echoes_the_newest_resend(void **state)
{
	static struct grab g;
	struct wire_pkt d0, d1;
	struct world w;

	(void)state;
	echo_setup(&w, &g, &d0, &d1);
	d0.data.flags |= WIRE_F_RETX;
	d0.data.tsval = d1.data.tsval + 100 * US;      /* the older resend */
	d1.data.flags |= WIRE_F_RETX;
	d1.data.tsval = d1.data.tsval + 500 * US;      /* the newer one */
	echo_inject(&w, &d1);
	echo_inject(&w, &d0);
	assert_int_equal(echo_of_ack(&w, d1.data.psn + 1), d1.data.tsval);
	world_fini(&w);
}

/* One packet lost again and again while the rest of the transfer flows: its
 * losses are found by SACKs and the reordering window, the peer answers
 * all along, so resends past max_retx do not fail the channel; only the
 * retransmission timer's findings count toward max_retx. */
static void test_resends_acks_call_for_do_not_count_toward_max_retx(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct dropper d = { .psn = 20, .times = 6 };
	struct tpchan_stats a;

	p.max_retx = 2;
	p.max_inflight_bytes = 256 << 10;      /* new data keeps going out after each resend */
	world_init(&w, 128, false);
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, drop_once, &d);
	assert_int_equal(wirelink_run(w.link, pump, &w, 1000 * MS), 0);
	tpchan_get_stats(w.a, &a);
	check_transfer(&w);
	print_message("psn 20 dropped %d times; %llu resends, %llu timeouts\n", d.dropped,
		      (unsigned long long)a.retx_pkts, (unsigned long long)a.retx_timeouts);
	assert_int_equal(d.dropped, 6);
	assert_true(a.retx_pkts > (uint64_t)p.max_retx);
	assert_true(a.retx_timeouts <= p.max_retx);
	assert_int_equal(a.msgs_failed, 0);
	world_fini(&w);
}

/* Drops the first copy of one psn and notes when each copy of it left. */
struct drop_timer {
	struct dropper d;
	struct wirelink *link;
	uint64_t sent_ns, resent_ns;
};

static int64_t drop_once_timed(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct drop_timer *t = arg;
	struct wire_pkt w;

	if (from == 0 && wire_parse(pkt, len, &w) == 0 && w.type == WIRE_DATA &&
	    w.data.psn == t->d.psn) {
		if (w.data.flags & WIRE_F_RETX)
			t->resent_ns = wirelink_now(t->link);
		else
			t->sent_ns = wirelink_now(t->link);
	}
	return drop_once(&t->d, from, pkt, len);
}

/* One message for an RTT sample (20 us), then 12 packets with the third
 * lost: the SACKs of the other nine all land within a few us and then stop,
 * so the resend is the reorder timer's doing (sent + rtt + reo_wnd, with
 * reo_wnd = min_rtt/4 = 5 us), long before the 200 us RTO. Without the
 * window, dupthresh makes it go as the third SACK lands, ~20 us. */
static uint64_t lost_resent_after(bool rack_off, struct tpchan_stats *a)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct drop_timer t = { .d = { .psn = 3 } };
	struct tpchan_msg m;

	p.npaths = 1;
	p.rack_off = rack_off;
	world_init(&w, 2, false);
	w.msgs[0].len = 100;
	w.msgs[1].off = 100;
	w.msgs[1].len = 12 * MSS1500;
	w.total = 100 + 12 * MSS1500;
	world_chans(&w, &p, &p, &lp);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done_1, &w, 100 * MS), 0);
	t.link = w.link;
	wirelink_set_tap(w.link, drop_once_timed, &t);
	m = msg_of(&w, 1);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, a);
	assert_int_equal(t.d.dropped, 1);
	assert_int_equal(t.d.retx_seen, 1);
	world_fini(&w);
	return t.resent_ns - t.sent_ns;
}

static void test_lost_packet_is_resent_when_its_reorder_timer_runs_out(void **state)
{
	struct tpchan_stats a;
	uint64_t on = lost_resent_after(false, &a), off;

	(void)state;
	print_message("resent %llu ns after the original (rack on)\n", (unsigned long long)on);
	assert_int_equal(a.fast_retx, 1);
	assert_int_equal(a.retx_timeouts, 0);
	assert_int_equal(a.spurious_retx, 0);
	assert_true(on >= 25 * US);
	assert_true(on < 35 * US);
	off = lost_resent_after(true, &a);
	print_message("resent %llu ns after the original (rack off)\n", (unsigned long long)off);
	assert_int_equal(a.fast_retx, 1);
	assert_true(off < 25 * US);
}

/* ---- the hostile wire ---- */

struct capture {
	uint8_t data[9000], ack[9000];
	uint32_t data_len, ack_len;
};

static int64_t capture_first(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct capture *c = arg;

	if (from == 0 && !c->data_len && pkt[2] == WIRE_DATA) {
		memcpy(c->data, pkt, len);
		c->data_len = len;
	}
	if (from == 1 && !c->ack_len && pkt[2] == WIRE_ACK) {
		memcpy(c->ack, pkt, len);
		c->ack_len = len;
	}
	return 0;
}

static uint64_t drops(const struct tpchan_stats *s)
{
	return s->drop_malformed + s->drop_version + s->drop_token + s->drop_crc + s->drop_window +
	       s->drop_refused;
}

static void test_forged_and_damaged_packets_are_dropped_and_counted(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 8);
	struct capture cap = { 0 };
	struct tpchan_stats a0, b0, a1, b1;
	uint8_t buf[9000];
	uint64_t x = 99, delivered;
	struct wire_ack bogus = { .token = TOKEN_A, .cum_psn = 1000000 };
	int n;

	world_init(&w, 4, false);
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, capture_first, &cap);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	assert_true(cap.data_len > WIRE_DATA_HDR_LEN + 100 && cap.ack_len >= WIRE_ACK_HDR_LEN);
	tpchan_get_stats(w.a, &a0);
	tpchan_get_stats(w.b, &b0);
	delivered = w.delivered_pkts;

	/* wrong token, to each side */
	memcpy(buf, cap.data, cap.data_len);
	buf[16] ^= 1;
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len), -EACCES);
	memcpy(buf, cap.ack, cap.ack_len);
	buf[8] ^= 0x80;
	assert_int_equal(wirelink_inject(w.link, 0, buf, cap.ack_len), -EACCES);
	/* truncated, and one byte too long */
	assert_int_equal(wirelink_inject(w.link, 1, cap.data, cap.data_len - 1), -EBADMSG);
	memcpy(buf, cap.data, cap.data_len);
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len + 1), -EBADMSG);
	/* damaged payload: the crc says so */
	memcpy(buf, cap.data, cap.data_len);
	buf[cap.data_len - 1] ^= 0x40;
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len), -EILSEQ);
	/* intact, but without its crc: a crc channel takes none such */
	memcpy(buf, cap.data, cap.data_len);
	assert_true(buf[3] & WIRE_F_CRC);
	buf[3] &= (uint8_t)~WIRE_F_CRC;
	memset(buf + 80, 0, 4);
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len), -EILSEQ);
	/* unknown version */
	memcpy(buf, cap.data, cap.data_len);
	buf[1] = WIRE_VERSION + 1;
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len), -EPROTO);
	/* an ACK for psns never sent, with the right token */
	n = wire_write_ack(buf, sizeof(buf), &bogus);
	assert_true(n > 0);
	assert_int_equal(wirelink_inject(w.link, 0, buf, (size_t)n), -EBADMSG);

	tpchan_get_stats(w.a, &a1);
	tpchan_get_stats(w.b, &b1);
	assert_int_equal(b1.drop_token - b0.drop_token, 1);
	assert_int_equal(a1.drop_token - a0.drop_token, 1);
	assert_int_equal(b1.drop_malformed - b0.drop_malformed, 2);
	assert_int_equal(b1.drop_crc - b0.drop_crc, 2);
	assert_int_equal(b1.drop_version - b0.drop_version, 1);
	assert_int_equal(a1.drop_malformed - a0.drop_malformed, 1);
	assert_int_equal(a1.acks_rx, a0.acks_rx);

	/* random bytes, some with a plausible prefix */
	for (int i = 0; i < 3000; i++) {
		uint32_t len;

		for (int k = 0; k < 40; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(buf + 8 * k, &x, 8);
		}
		len = (uint32_t)(x % 320);
		if (i % 2) {
			buf[0] = WIRE_MAGIC;
			buf[1] = WIRE_VERSION;
			buf[2] = (uint8_t)(1 + i % 3);
		}
		assert_true(wirelink_inject(w.link, i % 4 ? 1 : 0, buf, len) < 0);
	}
	tpchan_get_stats(w.a, &a0);
	tpchan_get_stats(w.b, &b0);
	assert_int_equal(drops(&a0) + drops(&b0) - drops(&a1) - drops(&b1), 3000);

	/* a replayed genuine packet is a duplicate: acknowledged, not delivered */
	assert_int_equal(wirelink_inject(w.link, 1, cap.data, cap.data_len), 0);
	tpchan_get_stats(w.b, &b1);
	assert_int_equal(b1.dup_pkts_rx - b0.dup_pkts_rx, 1);

	assert_int_equal(w.delivered_pkts, delivered);
	assert_int_equal(w.bad_deliveries, 0);
	assert_memory_equal(w.src, w.dst, w.total);
	world_fini(&w);
}

/* Refusal counters that no honest peer can send are dropped as malformed:
 * a NACK numbered past what the peer's ring allows, an ACK reporting more
 * refusals than that, DATA or an ACK claiming to have seen refusals never
 * issued. A SYNC ACK with honest counters is taken. */
static void test_forged_refusal_counters_are_dropped(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 8);
	struct capture cap = { 0 };
	struct tpchan_stats a0, b0, a1, b1;
	uint8_t buf[9000];
	struct wire_nack nk = { .token = TOKEN_A, .seq = 257, .psn = 1, .msg_id = 1, .err = -EIO };
	struct wire_ack ack = { .token = TOKEN_A, .nacks_issued = 257 };
	struct wire_ack sync = { .flags = WIRE_F_SYNC, .token = TOKEN_A };
	int n;

	world_init(&w, 4, false);
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, capture_first, &cap);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a0);
	tpchan_get_stats(w.b, &b0);

	n = wire_write_nack(buf, sizeof(buf), &nk);
	assert_int_equal(wirelink_inject(w.link, 0, buf, (size_t)n), -EBADMSG);
	/* an old cumulative point, harmless in itself: the count is not */
	n = wire_write_ack(buf, sizeof(buf), &ack);
	assert_int_equal(wirelink_inject(w.link, 0, buf, (size_t)n), -EBADMSG);
	/* b issued no refusals: nobody can have seen one */
	memcpy(buf, cap.data, cap.data_len);
	buf[84] = 1;
	assert_int_equal(wirelink_inject(w.link, 1, buf, cap.data_len), -EBADMSG);
	sync.token = TOKEN_B;
	sync.nacks_seen = 1;
	n = wire_write_ack(buf, sizeof(buf), &sync);
	assert_int_equal(wirelink_inject(w.link, 1, buf, (size_t)n), -EBADMSG);
	sync.nacks_seen = 0;
	n = wire_write_ack(buf, sizeof(buf), &sync);
	assert_int_equal(wirelink_inject(w.link, 1, buf, (size_t)n), 0);

	tpchan_get_stats(w.a, &a1);
	tpchan_get_stats(w.b, &b1);
	assert_int_equal(a1.drop_malformed - a0.drop_malformed, 2);
	assert_int_equal(b1.drop_malformed - b0.drop_malformed, 2);
	assert_int_equal(a1.nacks_rx, a0.nacks_rx);
	assert_int_equal(a1.acks_rx, a0.acks_rx);
	assert_int_equal(b1.acks_rx - b0.acks_rx, 1);
	assert_int_equal(b1.dup_pkts_rx, b0.dup_pkts_rx);
	world_fini(&w);
}

/* ---- failures ---- */

static void refusal_run(uint32_t loss_ppm, bool small_too)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(loss_ppm, 9);
	struct tpchan_stats a, b;
	uint32_t refused = 0;

	world_init(&w, 40, false);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		if (i % 4 == 0)
			w.msgs[i].ep = 7;
		if (small_too && i % 2 == 0)
			w.msgs[i].len = 100;     /* offsets stay apart: len <= 32 KiB */
	}
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -EACCES;
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 1000 * MS), 0);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		const struct msgd *m = &w.msgs[i];

		assert_int_equal(m->done, 1);
		if (m->ep == 7) {
			assert_int_equal(m->res, -EACCES);
			refused++;
		} else {
			assert_int_equal(m->res, 0);
			assert_memory_equal(w.src + m->off, w.dst + m->off, m->len);
		}
	}
	assert_int_equal(w.reads_after_done, 0);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.msgs_failed, refused);
	assert_int_equal(a.msgs_completed, w.nmsgs - refused);
	assert_true(a.nacks_rx >= refused);
	assert_true(b.nacks_tx >= refused);
	assert_true(b.drop_refused >= refused);
	assert_int_equal(a.inflight_pkts, 0);
	world_fini(&w);
}

static void test_refused_delivery_fails_the_message_at_the_sender(void **state)
{
	refusal_run(0, true);                  /* reordering and duplicates */
	refusal_run(10000, false);             /* and 1% loss, many-packet messages */
}

/* Slows every NACK down by `delay` ns on its way back. */
static int64_t slow_nacks(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	return from == 1 && len >= 3 && pkt[2] == WIRE_NACK ? *(const int64_t *)arg : 0;
}

/* The ACK goes at once and the NACK arrives 50 us after it: the sender
 * sees every packet acknowledged first, and still fails the message. */
static void test_an_ack_that_overtakes_the_nack_does_not_complete_the_message(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false), pb;
	struct wirelink_params lp = clean_link();
	int64_t lag = 50 * US;
	struct tpchan_stats a, b;
	struct tpchan_msg m;

	p.npaths = 1;
	pb = p;
	pb.ack_every = 1;                      /* b acknowledges at once */
	world_init(&w, 1, false);
	w.msgs[0].len = 100;                   /* one packet: one ACK settles it */
	w.msgs[0].ep = 7;
	w.total = 100;
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -EACCES;
	world_chans(&w, &p, &pb, &lp);
	wirelink_set_tap(w.link, slow_nacks, &lag);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	assert_int_equal(w.msgs[0].done, 1);
	assert_int_equal(w.msgs[0].res, -EACCES);
	/* 10 us there, 10 us back, 50 us of NACK lag */
	assert_true(w.last_complete_ns - 1000 >= 70 * US);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.msgs_completed, 0);
	assert_int_equal(a.msgs_failed, 1);
	/* and the wire goes quiet: a confirmed the record, b stopped sending it */
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 100 * MS), -ENODATA);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.nacks_pending, 0);
	assert_int_equal(b.nacks_tx, 1);
	world_fini(&w);
}

/* A wire that is hard on refusals: much reordering (ACKs overtake NACKs),
 * duplicates, and loss in both directions. */
static struct wirelink_params rough_link(uint32_t loss_ppm, uint64_t seed)
{
	struct wirelink_params lp = link_params(loss_ppm, seed);

	lp.reorder_ppm = 200000;
	lp.jitter_ns = 30 * US;
	lp.dup_ppm = 20000;
	return lp;
}

/* Every refused message completed once with the refusal's error (those
 * refused only past range_end too: some of their packets were delivered),
 * every other once with 0 and its bytes in place. */
static uint32_t check_refusals(const struct world *w, uint32_t refused_ep, int err)
{
	uint32_t refused = 0;

	for (uint32_t i = 0; i < w->nmsgs; i++) {
		const struct msgd *m = &w->msgs[i];

		assert_int_equal(m->done, 1);
		if (m->ep == refused_ep) {
			assert_int_equal(m->res, err);
			refused++;
		} else if (w->range_ep && m->ep == w->range_ep && m->len > w->range_end) {
			assert_int_equal(m->res, -ERANGE);
			refused++;
		} else {
			assert_int_equal(m->res, 0);
			assert_memory_equal(w->src + m->off, w->dst + m->off, m->len);
		}
	}
	assert_int_equal(w->reads_after_done, 0);
	assert_int_equal(w->bad_deliveries, 0);
	return refused;
}

struct refusal_totals {
	uint64_t runs, refused, held, nacks_tx, nacks_retx;
};

/* 120 messages, half of them one packet long; a third refused whole, and
 * the long ones of another third refused past their first 20000 bytes; run
 * to the end, then on until the wire is idle: no record may stay
 * unconfirmed. */
static void refusals_on(struct wirelink_params lp, bool gbn, struct refusal_totals *t)
{
	struct world w;
	struct tpchan_params p = chan_params(gbn);
	struct tpchan_stats a, b;
	uint32_t refused;

	world_init(&w, 120, false);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		if (i % 3 == 0)
			w.msgs[i].ep = 7;
		if (i % 3 == 1)
			w.msgs[i].ep = 8;
		if (i % 2 == 0)
			w.msgs[i].len = 1 + i * 11;       /* one packet; offsets stay apart */
	}
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -EACCES;
	w.range_ep = 8;
	w.range_end = 20000;
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 10000 * MS), 0);
	refused = check_refusals(&w, 7, -EACCES);
	assert_int_equal(refused, 40 + 20);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 10000 * MS), -ENODATA);
	check_refusals(&w, 7, -EACCES);        /* nothing completed twice */
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.msgs_failed, refused);
	assert_int_equal(a.msgs_completed, w.nmsgs - refused);
	assert_int_equal(a.inflight_pkts, 0);
	assert_int_equal(b.nacks_pending, 0);
	assert_true(b.nacks_tx >= refused);
	assert_int_equal(a.drop_malformed + b.drop_malformed, 0);
	t->runs++;
	t->refused += refused;
	t->held += a.msgs_held;
	t->nacks_tx += b.nacks_tx;
	t->nacks_retx += b.nacks_retx;
	world_fini(&w);
}

static void refusals_at(uint32_t loss_ppm, bool gbn)
{
	struct refusal_totals t = { 0 };

	/* 12 seeds: whether a lost record needs a resend at 1% is luck of
	 * timing; 6 runs had none once the reordering window changed when
	 * packets go */
	for (uint64_t seed = 1; seed <= 12; seed++)
		refusals_on(rough_link(loss_ppm, 100 + seed), gbn, &t);
	print_message("%5.1f%% loss%s: %llu runs, %llu refused, %llu completions held, "
		      "%llu NACKs sent (%llu again)\n", loss_ppm / 1e4, gbn ? " (GBN)" : "",
		      (unsigned long long)t.runs, (unsigned long long)t.refused,
		      (unsigned long long)t.held, (unsigned long long)t.nacks_tx,
		      (unsigned long long)t.nacks_retx);
	if (loss_ppm)
		assert_true(t.nacks_retx > 0);    /* lost records were sent again */
}

static void test_refusals_never_complete_as_success_without_loss(void **state)
{
	refusals_at(0, false);
}

static void test_refusals_never_complete_as_success_at_1_percent_loss(void **state)
{
	refusals_at(10000, false);
	refusals_at(10000, true);
}

static void test_refusals_never_complete_as_success_at_5_percent_loss(void **state)
{
	refusals_at(50000, false);
}

/* Drops every NACK (b to a) and every SYNC ACK (a to b) until `until`. */
struct nack_gate {
	struct wirelink *link;
	uint64_t until;
	uint64_t nacks_dropped, syncs_dropped;
	uint64_t refused_done_in_blackout;
	const struct world *w;
};

static int64_t gate_nacks(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct nack_gate *g = arg;
	struct wire_pkt wp;

	if (wirelink_now(g->link) >= g->until || wire_parse(pkt, len, &wp) < 0)
		return 0;
	if (from == 1 && wp.type == WIRE_NACK) {
		g->nacks_dropped++;
		return -1;
	}
	if (from == 0 && wp.type == WIRE_ACK && (wp.ack.flags & WIRE_F_SYNC)) {
		g->syncs_dropped++;
		return -1;
	}
	return 0;
}

static bool pump_watching_gate(void *arg)
{
	struct nack_gate *g = arg;
	struct world *w = (struct world *)g->w;

	if (wirelink_now(g->link) < g->until)
		for (uint32_t i = 0; i < w->nmsgs; i++)
			if (w->msgs[i].done && w->msgs[i].ep == 7)
				g->refused_done_in_blackout++;
	return pump(w);
}

/* For 3 ms every NACK is lost, and every confirmation: no refused message
 * may complete meanwhile (with 0 or at all), completions wait, and once the
 * wire lets NACKs through again everything settles. */
static void test_refusals_survive_a_wire_that_drops_every_nack_for_a_while(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 21);
	struct nack_gate g = { .until = 1000 + 3 * MS, .w = &w };
	struct tpchan_stats a, b;

	world_init(&w, 64, false);
	for (uint32_t i = 0; i < w.nmsgs; i++)
		if (i % 4 == 1)
			w.msgs[i].ep = 7;
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -ENOENT;
	world_chans(&w, &p, &p, &lp);
	g.link = w.link;
	wirelink_set_tap(w.link, gate_nacks, &g);
	assert_int_equal(wirelink_run(w.link, pump_watching_gate, &g, 1000 * MS), 0);
	assert_int_equal(check_refusals(&w, 7, -ENOENT), 16);
	assert_int_equal(g.refused_done_in_blackout, 0);
	assert_true(g.nacks_dropped > 16);     /* first copies and resends */
	assert_true(w.last_complete_ns > g.until);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 1000 * MS), -ENODATA);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	print_message("NACK blackout: %llu NACKs and %llu SYNCs dropped, %llu completions held, "
		      "%llu records resent\n", (unsigned long long)g.nacks_dropped,
		      (unsigned long long)g.syncs_dropped, (unsigned long long)a.msgs_held,
		      (unsigned long long)b.nacks_retx);
	assert_true(a.msgs_held > 0);
	assert_true(b.nacks_retx > 0);
	assert_int_equal(b.nacks_pending, 0);
	assert_int_equal(a.msgs_failed, 16);
	assert_int_equal(a.msgs_completed, 48);
	world_fini(&w);
}

/* More refusals outstanding than the receiver can keep records of: it turns
 * DATA away (unacknowledged, so resent) until the sender confirms. */
static void test_a_full_refusal_ring_turns_data_away_until_confirmed(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 22);
	struct nack_gate g = { .until = 1000 + 2 * MS, .w = &w };
	struct tpchan_stats a, b;

	p.max_msgs = 512;
	world_init(&w, 400, false);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		w.msgs[i].len = 100;               /* one packet each */
		if (i % 4 != 3)
			w.msgs[i].ep = 7;          /* 300 refusals: more than the ring */
	}
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -EACCES;
	world_chans(&w, &p, &p, &lp);
	g.link = w.link;
	wirelink_set_tap(w.link, gate_nacks, &g);
	assert_int_equal(wirelink_run(w.link, pump_watching_gate, &g, 1000 * MS), 0);
	assert_int_equal(check_refusals(&w, 7, -EACCES), 300);
	assert_int_equal(g.refused_done_in_blackout, 0);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 1000 * MS), -ENODATA);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_true(b.drop_window > 0);        /* turned away while full */
	assert_int_equal(b.drop_refused, 300); /* each refused packet once */
	assert_int_equal(b.nacks_pending, 0);
	assert_int_equal(a.msgs_failed, 300);
	assert_int_equal(a.msgs_completed, 100);
	world_fini(&w);
}

static void test_failed_message_is_never_read_again_and_resent_as_filler(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct dropper d = { .psn = 10 };
	struct tpchan_stats a, b;
	struct tpchan_msg m;

	p.npaths = 1;
	world_init(&w, 1, false);
	w.msgs[0].len = 20 * MSS1500;
	w.msgs[0].ep = 7;
	w.total = w.msgs[0].len;
	w.refuse = true;
	w.refuse_ep = 7;
	w.refuse_err = -EPERM;
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, drop_once, &d);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	/* run to the end: the slot is held until psn 10 is filled */
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 100 * MS), -ENODATA);
	assert_int_equal(w.msgs[0].done, 1);
	assert_int_equal(w.msgs[0].res, -EPERM);
	assert_int_equal(d.retx_seen, 1);
	assert_int_equal(d.fillers, 1);       /* the resend carried no bytes */
	assert_int_equal(w.reads_after_done, 0);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.drop_refused, 19);  /* the filler was not delivered */
	assert_int_equal(b.data_pkts_rx, 20);
	assert_int_equal(a.inflight_pkts, 0);
	assert_int_equal(a.msgs_failed, 1);
	/* and the slot is free again: max_msgs messages fit */
	for (uint32_t i = 0; i < p.max_msgs; i++)
		assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(tpchan_submit(w.a, &m), -EAGAIN);
	tpchan_reset(w.a, -ECONNABORTED);
	world_fini(&w);
}

static void test_read_error_fails_only_that_message(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 10);
	struct tpchan_stats a;

	world_init(&w, 8, false);
	w.read_fail_at = 3;                    /* its first packet goes, the second fails */
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		assert_int_equal(w.msgs[i].done, 1);
		assert_int_equal(w.msgs[i].res, i == 3 ? -EIO : 0);
	}
	assert_int_equal(w.reads_after_done, 0);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.msgs_failed, 1);
	assert_int_equal(a.msgs_completed, 7);
	assert_int_equal(w.delivered_bytes, 7 * 32768 + MSS1500);
	world_fini(&w);
}

static bool ten_completed(void *arg)
{
	struct world *w = arg;

	pump(w);
	return w->completed >= 10;
}

static void vanish_run(bool gbn)
{
	struct world w;
	struct tpchan_params p = chan_params(gbn);
	struct wirelink_params lp = link_params(0, 11);
	struct tpchan_stats a;
	uint64_t t0;
	uint32_t ok = 0;

	p.rto_min_ns = 100 * US;
	p.rto_max_ns = 2 * MS;
	p.max_retx = 6;
	lp.rate_gbps = 10;                     /* slow enough to be caught mid-flight */
	world_init(&w, 64, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, ten_completed, &w, 100 * MS), 0);
	wirelink_set_loss(w.link, 0, 1000000);
	wirelink_set_loss(w.link, 1, 1000000);
	t0 = wirelink_now(w.link);
	assert_int_equal(wirelink_run(w.link, pump, &w, t0 + 1000 * MS), 0);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		assert_int_equal(w.msgs[i].done, 1);
		if (w.msgs[i].res == 0)
			ok++;
		else
			assert_int_equal(w.msgs[i].res, -ETIMEDOUT);
	}
	assert_true(ok >= 10 && ok < w.nmsgs);
	/* said once, before the messages it failed completed */
	assert_int_equal(w.gave_up, 1);
	assert_int_equal(w.failed_at_give_up, 0);
	/* max_retx + 1 timeouts, each at most rto_max */
	print_message("failed %u messages %.2f ms after the peer vanished\n", w.nmsgs - ok,
		      (double)(w.last_complete_ns - t0) / MS);
	assert_true(w.last_complete_ns - t0 <= (p.max_retx + 1) * p.rto_max_ns);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.msgs_failed, w.nmsgs - ok);
	assert_true(a.retx_timeouts >= p.max_retx);
	assert_int_equal(a.inflight_pkts, 0);
	assert_int_equal(a.queued_msgs, 0);
	world_fini(&w);
}

static void test_vanished_peer_fails_everything_with_etimedout(void **state)
{
	vanish_run(false);
	vanish_run(true);
}

static void test_reset_fails_queued_and_inflight_once(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 12);
	struct tpchan_stats a;
	uint32_t ok = 0;

	p.max_msgs = 100;
	lp.rate_gbps = 10;
	world_init(&w, 100, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, ten_completed, &w, 100 * MS), 0);
	tpchan_get_stats(w.a, &a);
	assert_true(a.inflight_pkts > 0 && a.queued_msgs > 0);
	tpchan_reset(w.a, -ENOTCONN);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		assert_int_equal(w.msgs[i].done, 1);
		if (w.msgs[i].res == 0)
			ok++;
		else
			assert_int_equal(w.msgs[i].res, -ENOTCONN);
	}
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.msgs_failed, w.nmsgs - ok);
	assert_int_equal(a.inflight_pkts, 0);
	assert_int_equal(a.inflight_bytes, 0);
	assert_int_equal(a.queued_msgs, 0);
	/* what is still on the wire changes nothing */
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 1000 * MS), -ENODATA);
	for (uint32_t i = 0; i < w.nmsgs; i++)
		assert_int_equal(w.msgs[i].done, 1);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.drop_malformed, 0);
	world_fini(&w);
}

static void test_free_cancels_what_is_left(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 13);
	uint32_t cancelled = 0;

	lp.rate_gbps = 10;
	world_init(&w, 50, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, ten_completed, &w, 100 * MS), 0);
	w.a = tpchan_free(w.a);
	for (uint32_t i = 0; i < w.nmsgs; i++) {
		assert_int_equal(w.msgs[i].done, 1);
		if (w.msgs[i].res) {
			assert_int_equal(w.msgs[i].res, -ECANCELED);
			cancelled++;
		}
	}
	assert_true(cancelled > 0);
	assert_null(tpchan_free(NULL));
	wirelink_free(w.link);
	w.link = NULL;
	world_fini(&w);
}

static void test_submit_pushes_back_at_max_msgs(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(0, 14);
	struct tpchan_stats a;
	struct tpchan_msg m;

	p.max_msgs = 8;
	world_init(&w, 12, false);
	world_chans(&w, &p, &p, &lp);
	for (uint32_t i = 0; i < 8; i++) {
		m = msg_of(&w, i);
		assert_int_equal(tpchan_submit(w.a, &m), 0);
	}
	m = msg_of(&w, 8);
	assert_int_equal(tpchan_submit(w.a, &m), -EAGAIN);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.queued_msgs, 8);
	assert_int_equal(a.msgs_submitted, 8);
	w.next = 8;
	while (w.completed == 0)
		assert_int_equal(wirelink_step(w.link), 1);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	w.next = 9;
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	/* bad messages */
	m.len = 1ull << 40;
	assert_int_equal(tpchan_submit(w.a, &m), -EINVAL);
	assert_int_equal(tpchan_submit(w.a, NULL), -EINVAL);
	world_fini(&w);
}

/* A DATA packet that arrived CE-marked is acknowledged at once with ECE, and
 * the sender's congestion controller backs off. */
static void test_ce_mark_comes_back_as_ece_and_cuts_the_window(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	static uint8_t bufs[4][1500];
	struct tpchan_txpkt out[4];
	struct tpchan_stats a0, a1;
	struct tpchan_msg m;
	struct wire_pkt pk;
	uint64_t now = 1000000;

	(void)state;
	world_init(&w, 1, false);
	w.msgs[0].len = 100;
	w.total = 100;
	world_chans(&w, &p, &p, &lp);
	for (int i = 0; i < 4; i++)
		out[i].buf = bufs[i];
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	tpchan_get_stats(w.a, &a0);
	assert_int_equal(tpchan_tx(w.a, now, out, 4), 1);
	now += 10000;
	assert_int_equal(tpchan_rx_ce(w.b, out[0].buf, out[0].len, now, true), 0);
	/* at the same instant: no coalescing wait for congestion news */
	assert_int_equal(tpchan_tx(w.b, now, out, 4), 1);
	assert_int_equal(wire_parse(out[0].buf, out[0].len, &pk), 0);
	assert_int_equal(pk.type, WIRE_ACK);
	assert_true(pk.ack.flags & WIRE_F_ECE);
	now += 10000;
	assert_int_equal(tpchan_rx(w.a, out[0].buf, out[0].len, now), 0);
	tpchan_get_stats(w.a, &a1);
	assert_true(a1.cwnd_bytes < a0.cwnd_bytes);
	assert_int_equal(a1.msgs_completed, 1);
	world_fini(&w);
}

/* ---- switching the congestion controller mid-transfer ---- */

#define NSWITCH 3

struct switch_run {
	struct world w;                /* first: the callbacks' cb_arg is &w */
	const struct cc_ops *to[NSWITCH];
	uint32_t at[NSWITCH];          /* switch once this many messages completed */
	int done;
	uint64_t before[NSWITCH], after[NSWITCH], inflight[NSWITCH];
	int n_before[NSWITCH], n_after[NSWITCH];
	const char *names_before[NSWITCH][8], *names_after[NSWITCH][8];
};

static bool pump_switching(void *arg)
{
	struct switch_run *r = arg;
	struct tpchan_stats s;
	uint64_t v[8];
	int k = r->done;

	if (k < NSWITCH && r->w.completed >= r->at[k]) {
		tpchan_get_stats(r->w.a, &s);
		r->before[k] = s.cwnd_bytes;
		r->inflight[k] = s.inflight_bytes;
		r->n_before[k] = tpchan_cc_describe(r->w.a, r->names_before[k], v, 8);
		assert_int_equal(tpchan_set_cc(r->w.a, r->to[k]), 0);
		assert_string_equal(tpchan_cc_name(r->w.a), r->to[k]->name);
		tpchan_get_stats(r->w.a, &s);
		r->after[k] = s.cwnd_bytes;
		r->n_after[k] = tpchan_cc_describe(r->w.a, r->names_after[k], v, 8);
		r->done++;
	}
	return pump(&r->w);
}

static bool same_names(const char **a, int na, const char **b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* Switching a busy channel's CC (window -> swift -> hint -> window) loses
 * nothing: every byte arrives once, every message completes with 0; each
 * new controller starts from the window the old one had, not from the
 * initial window; the name and the described state follow the switch. */
static void test_cc_switch_mid_transfer_delivers_everything(void **state)
{
	static struct switch_run r;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(1000, 7);
	struct tpchan_stats a;

	(void)state;
	memset(&r, 0, sizeof(r));
	world_init(&r.w, 1024, true);
	world_chans(&r.w, &p, &p, &lp);
	assert_string_equal(tpchan_cc_name(r.w.a), "window");
	r.to[0] = &cc_swift_ops;
	r.to[1] = &cc_hint_ops;
	r.to[2] = &cc_window_ops;
	r.at[0] = 100;
	r.at[1] = 400;
	r.at[2] = 700;
	assert_int_equal(wirelink_run(r.w.link, pump_switching, &r, 30000 * MS), 0);
	assert_int_equal(r.done, NSWITCH);
	check_transfer(&r.w);
	tpchan_get_stats(r.w.a, &a);
	assert_int_equal(a.msgs_completed, r.w.nmsgs);
	assert_int_equal(a.msgs_failed, 0);
	assert_string_equal(tpchan_cc_name(r.w.a), "window");
	for (int k = 0; k < NSWITCH; k++) {
		uint64_t want = r.before[k];

		if (want < p.chunk_bytes)
			want = p.chunk_bytes;
		if (want > p.max_inflight_bytes)
			want = p.max_inflight_bytes;
		/* the switch happened with data in flight, and kept the window */
		assert_true(r.inflight[k] > 0);
		assert_int_equal(r.after[k], want);
		assert_true(r.n_before[k] > 0 && r.n_after[k] > 0);
		assert_false(same_names(r.names_before[k], r.n_before[k], r.names_after[k],
					r.n_after[k]));
	}
	world_fini(&r.w);
}

/* An incomplete ops table is refused and the old controller stays. */
static void test_cc_switch_refuses_bad_ops(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct cc_ops no_window = cc_swift_ops, no_state = cc_swift_ops;
	struct tpchan_stats s0, s1;

	(void)state;
	world_init(&w, 1, false);
	world_chans(&w, &p, &p, &lp);
	no_window.window = NULL;
	no_state.state_size = 0;
	tpchan_get_stats(w.a, &s0);
	assert_int_equal(tpchan_set_cc(w.a, NULL), -EINVAL);
	assert_int_equal(tpchan_set_cc(w.a, &no_window), -EINVAL);
	assert_int_equal(tpchan_set_cc(w.a, &no_state), -EINVAL);
	assert_int_equal(tpchan_set_cc(NULL, &cc_swift_ops), -EINVAL);
	assert_string_equal(tpchan_cc_name(w.a), "window");
	tpchan_get_stats(w.a, &s1);
	assert_int_equal(s1.cwnd_bytes, s0.cwnd_bytes);
	/* a good one after the refusals works */
	assert_int_equal(tpchan_set_cc(w.a, &cc_none_ops), 0);
	assert_string_equal(tpchan_cc_name(w.a), "none");
	world_fini(&w);
}

/* tpchan_params_ok says what tpchan_new does, callbacks aside */
static void assert_refused(const struct tpchan_params *q)
{
	assert_false(tpchan_params_ok(q));
	assert_null(tpchan_new(q));
}

static void test_bad_parameters_are_refused(void **state)
{
	struct tpchan_params p = chan_params(false), q;
	struct tpchan *c;

	assert_null(tpchan_new(NULL));
	assert_false(tpchan_params_ok(NULL));
	p.cb = &a_cb;
	assert_true(tpchan_params_ok(&p));
	q = p;
	q.cb = NULL;
	assert_true(tpchan_params_ok(&q));
	assert_null(tpchan_new(&q));
	q = p;
	q.mtu = WIRE_DATA_HDR_LEN;
	assert_refused(&q);
	q = p;
	q.mtu = TPCHAN_MTU_MAX + 1;               /* past the caller's packet buffers */
	assert_refused(&q);
	q = p;
	q.mtu = 0u - 28u;                         /* an mtu less the headers, wrapped */
	assert_refused(&q);
	q = p;
	q.mtu = TPCHAN_MTU_MAX;
	assert_true(tpchan_params_ok(&q));
	q = p;
	q.max_inflight_pkts = 1000;
	assert_refused(&q);
	q = p;
	q.max_inflight_pkts = 6144;               /* not a power of two */
	q.rx_window_pkts = 8192;
	assert_refused(&q);
	q = p;
	q.dupthresh = 8192;                       /* past the scoreboard */
	assert_refused(&q);
	q = p;
	q.rx_window_pkts = 2048;
	assert_refused(&q);
	q = p;
	q.npaths = 257;
	assert_refused(&q);
	q = p;
	q.path_run_bytes = TPCHAN_MAX_PATH_RUN + 1;
	assert_refused(&q);
	q.path_run_bytes = TPCHAN_MAX_PATH_RUN;
	assert_true(tpchan_params_ok(&q));
	c = tpchan_new(&q);
	assert_non_null(c);
	tpchan_free(c);
	q = p;
	q.max_inflight_bytes = 1000;
	assert_refused(&q);
	q = p;
	q.rto_min_ns = 5 * MS;
	q.rto_max_ns = 1 * MS;
	assert_refused(&q);
	/* zeros take the defaults */
	q = (struct tpchan_params){ .mtu = 9000, .cb = &a_cb };
	assert_true(tpchan_params_ok(&q));
	c = tpchan_new(&q);
	assert_non_null(c);
	assert_true(tpchan_next_deadline(c) == UINT64_MAX);
	assert_false(tpchan_tx_ready(c, UINT64_MAX - 1));
	tpchan_free(c);
}

/* The scoreboard size for a byte limit holds it in full packets, so that
 * max_inflight_bytes and not a fixed packet count is what caps the window. */
static void test_inflight_pkts_cover_the_byte_limit(void **state)
{
	uint32_t mss1500 = 1500 - WIRE_DATA_HDR_LEN, mss9000 = 9000 - WIRE_DATA_HDR_LEN;
	struct tpchan_params q = chan_params(false);

	assert_int_equal(tpchan_inflight_pkts(64 << 10, 1500), 4096);       /* the floor */
	assert_int_equal(tpchan_inflight_pkts(16 << 20, 9000), 4096);
	assert_int_equal(tpchan_inflight_pkts(4096ull * mss1500, 1500), 4096);
	assert_int_equal(tpchan_inflight_pkts(4096ull * mss1500 + 1, 1500), 8192);
	assert_int_equal(tpchan_inflight_pkts(16 << 20, 1500), 16384);
	assert_int_equal(tpchan_inflight_pkts(1ull << 30, 1500), 1u << 20);
	assert_int_equal(tpchan_inflight_pkts(1ull << 30, 9000), 131072);
	assert_true(131072ull * mss9000 >= 1ull << 30 && 65536ull * mss9000 < 1ull << 30);
	assert_int_equal(tpchan_inflight_pkts(UINT64_MAX / 2, 576), 1u << 30);  /* the ceiling */
	/* and a channel takes what it gives */
	q.cb = &a_cb;
	q.max_inflight_bytes = 1ull << 30;
	q.max_inflight_pkts = q.rx_window_pkts = tpchan_inflight_pkts(q.max_inflight_bytes, q.mtu);
	assert_true(tpchan_params_ok(&q));
	(void)state;
}

/* ---- both ways at once ---- */

#define BIDI_MSGS 200

struct peer {
	struct tpchan *ch;
	int side;
	uint64_t rx[BIDI_MSGS];        /* bytes received per message of the other side */
	int done[BIDI_MSGS], res[BIDI_MSGS];
	uint32_t finished;
	uint64_t bad;
	bool refuse;                   /* refuse the other side's messages i % 5 == 2 */
};

static bool bidi_refused(uint64_t i)
{
	return i % 5 == 2;
}

static uint64_t bidi_len(uint32_t i)
{
	return (uint64_t)i * 997 % 70001;
}

static uint8_t pattern(int side, uint64_t msg, uint64_t off)
{
	return (uint8_t)(msg * 31 + off * 7 + (uint64_t)side * 101);
}

static int p_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	struct peer *p = arg;

	for (uint32_t k = 0; k < len; k++)
		((uint8_t *)dst)[k] = pattern(p->side, cookie, off + k);
	return 0;
}

static int p_deliver(void *arg, const struct wire_data *d)
{
	struct peer *p = arg;

	if (d->rkey >= BIDI_MSGS || d->msg_len != bidi_len((uint32_t)d->rkey)) {
		p->bad++;
		return -EINVAL;
	}
	if (p->refuse && bidi_refused(d->rkey))
		return -EPERM;
	for (uint32_t k = 0; k < d->payload_len; k++)
		if (d->payload[k] != pattern(!p->side, d->rkey, d->msg_off + k))
			p->bad++;
	p->rx[d->rkey] += d->payload_len;
	return 0;
}

static void p_complete(void *arg, uint64_t cookie, int res)
{
	struct peer *p = arg;

	p->done[cookie]++;
	p->res[cookie] = res;
	p->finished++;
}

static const struct tpchan_cb p_cb = { .read = p_read, .deliver = p_deliver, .complete = p_complete };

static bool both_finished(void *arg)
{
	struct peer *p = arg;

	return p[0].finished == BIDI_MSGS && p[1].finished == BIDI_MSGS;
}

static void bidi_run(bool refuse, uint32_t loss_ppm, uint64_t seed)
{
	struct peer *p = calloc(2, sizeof(*p));
	struct tpchan_params cp = chan_params(false);
	struct wirelink_params lp = refuse ? rough_link(loss_ppm, seed) : link_params(loss_ppm, seed);
	struct wirelink *l;

	for (int s = 0; s < 2; s++) {
		struct tpchan_params q = cp;

		q.tx_token = s ? TOKEN_A : TOKEN_B;
		q.rx_token = s ? TOKEN_B : TOKEN_A;
		q.cb = &p_cb;
		q.cb_arg = &p[s];
		q.seed = 20 + (uint64_t)s;
		p[s].side = s;
		p[s].refuse = refuse;
		p[s].ch = tpchan_new(&q);
		assert_non_null(p[s].ch);
	}
	l = wirelink_new(&lp, p[0].ch, p[1].ch, 1000);
	for (int s = 0; s < 2; s++)
		for (uint32_t i = 0; i < BIDI_MSGS; i++) {
			struct tpchan_msg m = { .cookie = i, .opcode = 6, .dst_ep = 1, .rkey = i,
						.len = bidi_len(i) };

			assert_int_equal(tpchan_submit(p[s].ch, &m), 0);
		}
	assert_int_equal(wirelink_run(l, both_finished, p, 10000 * MS), 0);
	for (int s = 0; s < 2; s++) {
		struct tpchan_stats st;

		assert_int_equal(p[s].bad, 0);
		for (uint32_t i = 0; i < BIDI_MSGS; i++) {
			/* an empty message carries no packet to refuse */
			bool refused = refuse && bidi_refused(i) && bidi_len(i) > 0;

			assert_int_equal(p[s].done[i], 1);
			assert_int_equal(p[s].res[i], refused ? -EPERM : 0);
			if (!refused)
				assert_int_equal(p[!s].rx[i], bidi_len(i));   /* each byte once */
		}
		tpchan_get_stats(p[s].ch, &st);
		assert_true(st.retx_pkts > 0);
		assert_true(st.acks_tx > 0 && st.acks_rx > 0);
	}
	/* and both sides settle: every record confirmed */
	assert_int_equal(wirelink_run(l, NULL, NULL, wirelink_now(l) + 10000 * MS), -ENODATA);
	for (int s = 0; s < 2; s++) {
		struct tpchan_stats st;

		tpchan_get_stats(p[s].ch, &st);
		assert_int_equal(st.nacks_pending, 0);
		assert_int_equal(st.drop_malformed, 0);
		if (refuse)
			print_message("side %d: %llu refused, %llu held, %llu NACKs (%llu again)\n", s,
				      (unsigned long long)st.msgs_failed,
				      (unsigned long long)st.msgs_held,
				      (unsigned long long)st.nacks_tx, (unsigned long long)st.nacks_retx);
	}
	wirelink_free(l);
	tpchan_free(p[0].ch);
	tpchan_free(p[1].ch);
	free(p);
}

static void test_both_directions_at_once(void **state)
{
	bidi_run(false, 10000, 17);
}

/* Each side refuses some of the other's messages: counters ride in DATA and
 * ACKs both ways. */
static void test_refusals_both_directions_at_once(void **state)
{
	bidi_run(true, 10000, 18);
	bidi_run(true, 50000, 19);
}

static void test_same_seed_same_run(void **state)
{
	struct outcome x, y, z;

	transfer(128, true, 10000, false, 15, &x);
	transfer(128, true, 10000, false, 15, &y);
	assert_memory_equal(&x.a, &y.a, sizeof(x.a));
	assert_memory_equal(&x.b, &y.b, sizeof(x.b));
	assert_memory_equal(&x.l, &y.l, sizeof(x.l));
	assert_int_equal(x.end_ns, y.end_ns);
	transfer(128, true, 10000, false, 16, &z);     /* and the seed matters */
	assert_true(memcmp(&x.l, &z.l, sizeof(x.l)) != 0);
}

/* ---- state at scale: allocated on use, released when idle ---- */

/* Allocation failure on demand (wirelink grows its queues with realloc
 * only, so g_calloc_only spares it). */
#include "tests/unit/failalloc.h"

/* Phase 1 sends the first half of the messages, the link goes idle until
 * both channels release their state at the hold's deadline, phase 2 sends
 * the rest through the same channels: the psns carried on. */
static void test_idle_channel_releases_state_and_comes_back(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct capture cap = { 0 };
	struct dropper d = { 0 };
	struct tpchan_stats a0, b0, a, b;
	uint32_t half = 40;

	p.idle_release_ns = 1 * MS;
	world_init(&w, 2 * half, false);
	world_chans(&w, &p, &p, &lp);
	tpchan_get_stats(w.a, &a0);
	tpchan_get_stats(w.b, &b0);
	print_message("idle channel: %llu bytes\n", (unsigned long long)a0.state_bytes);
	/* the fixed part (parameters, counters, CC, sequence state; no
	 * per-packet or per-path state), packed from creation on */
	assert_true(a0.state_bytes < 512);
	assert_int_equal(a0.state_bytes, b0.state_bytes);
	assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	assert_int_equal(tpchan_next_deadline(w.b), UINT64_MAX);

	wirelink_set_tap(w.link, capture_first, &cap);
	w.nmsgs = half;
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_true(a.state_bytes > a0.state_bytes + 4096);  /* a message table, a ring */
	assert_true(b.state_bytes > b0.state_bytes);
	assert_int_equal(a.state_releases + b.state_releases, 0);
	/* the sender's hold starts with the ACK that completed its last
	 * message, and nothing else happens: the link idles until then */
	assert_int_equal(tpchan_next_deadline(w.a), w.last_complete_ns + p.idle_release_ns);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 200 * MS), -ENODATA);
	assert_int_equal(wirelink_now(w.link), w.last_complete_ns + p.idle_release_ns);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.state_releases, 1);
	assert_int_equal(b.state_releases, 1);
	/* frozen again: the fixed part packed, a little longer now that
	 * counters and the RTT hold more than zeros */
	assert_in_range(a.state_bytes, a0.state_bytes, a0.state_bytes + 128);
	assert_in_range(b.state_bytes, b0.state_bytes, b0.state_bytes + 128);
	assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	assert_int_equal(tpchan_next_deadline(w.b), UINT64_MAX);
	assert_true(a.srtt_ns > 0);            /* the RTT estimate stayed */

	/* an old DATA packet resent late: a duplicate, acknowledged at once
	 * with the kept cumulative point, which the sender takes calmly */
	assert_true(cap.data_len > 0);
	assert_int_equal(wirelink_inject(w.link, 1, cap.data, cap.data_len), 0);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.dup_pkts_rx, 1);
	assert_int_equal(b.data_pkts_rx, a.data_pkts_tx);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 300 * MS), -ENODATA);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.drop_malformed, 0);
	/* an ACK needs no state: a froze again at once, not counted */
	assert_in_range(a.state_bytes, a0.state_bytes, a0.state_bytes + 128);
	assert_int_equal(a.state_releases, 1);
	assert_int_equal(b.state_releases, 2);
	assert_in_range(b.state_bytes, b0.state_bytes, b0.state_bytes + 128);

	/* phase 2: its first packet is lost, so the receiver meets the second
	 * (out of order) first, on released state */
	d.psn = (uint32_t)a.data_pkts_tx;      /* no resends so far: the next psn */
	wirelink_set_tap(w.link, drop_once, &d);
	w.nmsgs = 2 * half;
	assert_int_equal(wirelink_run(w.link, pump, &w, 400 * MS), 0);
	check_transfer(&w);
	assert_int_equal(d.dropped, 1);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.msgs_completed, 2 * half);
	assert_int_equal(a.retx_pkts, 1);
	assert_int_equal(b.dup_pkts_rx, 1);
	assert_int_equal(a.drop_malformed + b.drop_malformed + b.drop_window, 0);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 500 * MS), -ENODATA);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(a.state_releases, 2);
	assert_int_equal(b.state_releases, 3);
	assert_in_range(a.state_bytes, a0.state_bytes, a0.state_bytes + 128);
	world_fini(&w);
}

/* Bytes that are no packet of a frozen channel (too short, another
 * version, another channel's token) are counted without unpacking it, as
 * the live channel would count them; its first real packet unpacks it with
 * those counts added, and the transfer goes on. */
static void test_frozen_channel_drops_strangers_without_waking(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct capture cap = { 0 };
	struct tpchan_stats b0, b;
	uint8_t junk[64] = { 1, 2, 3 }, forged[1500];

	p.idle_release_ns = 1 * MS;
	world_init(&w, 4, false);
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, capture_first, &cap);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 200 * MS), -ENODATA);
	tpchan_get_stats(w.b, &b0);
	assert_true(b0.state_bytes < 512);            /* frozen */
	assert_true(cap.data_len > 0);
	memcpy(forged, cap.data, cap.data_len);
	forged[16] ^= 0x5a;                           /* a byte of the token (DATA: offset 16) */
#ifndef __SANITIZE_ADDRESS__
	/* no memory at all: were it unpacked, each would be -ENOMEM */
	g_fail_min = 1;
#endif
	assert_int_equal(tpchan_rx(w.b, junk, 3, wirelink_now(w.link)), -EBADMSG);
	assert_int_equal(tpchan_rx(w.b, forged, cap.data_len, wirelink_now(w.link)), -EACCES);
	junk[0] = 99;                                 /* another wire version */
	assert_int_equal(tpchan_rx(w.b, junk, sizeof(junk), wirelink_now(w.link)), -EPROTO);
#ifndef __SANITIZE_ADDRESS__
	g_fail_min = 0;
#endif
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.drop_nomem, b0.drop_nomem);
	assert_int_equal(b.state_bytes, b0.state_bytes);   /* still frozen, untouched */
	assert_int_equal(b.drop_malformed, b0.drop_malformed + 1);
	assert_int_equal(b.drop_token, b0.drop_token + 1);
	assert_int_equal(b.drop_version, b0.drop_version + 1);
	/* the real old packet wakes it (a duplicate, acknowledged at once) */
	assert_int_equal(wirelink_inject(w.link, 1, cap.data, cap.data_len), 0);
	tpchan_get_stats(w.b, &b);
	assert_int_equal(b.dup_pkts_rx, b0.dup_pkts_rx + 1);
	assert_int_equal(b.drop_malformed, b0.drop_malformed + 1);
	assert_int_equal(b.drop_token, b0.drop_token + 1);
	assert_int_equal(b.drop_version, b0.drop_version + 1);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 400 * MS), -ENODATA);
	tpchan_get_stats(w.b, &b);
	assert_true(b.state_bytes < 512);             /* frozen again */
	assert_int_equal(b.drop_token, b0.drop_token + 1);
	world_fini(&w);
}

/* A controller of another state size, set on a frozen channel and on a
 * live one: both freeze again (the fixed part's size follows the new
 * state), and an idle channel does not wake for nothing. */
static void test_set_cc_of_another_size_freezes_again(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats a0, a, b;
	const struct cc_ops *swift = cc_find("swift"), *window = cc_find("window");

	assert_true(swift->state_size != window->state_size);
	p.idle_release_ns = 1 * MS;
	world_init(&w, 4, false);
	world_chans(&w, &p, &p, &lp);
	tpchan_get_stats(w.a, &a0);
	assert_true(a0.state_bytes < 512);
	/* frozen: set_cc unpacks, switches and packs again at once */
	assert_int_equal(tpchan_set_cc(w.a, swift), 0);
	assert_string_equal(tpchan_cc_name(w.a), "swift");
	tpchan_get_stats(w.a, &a);
	assert_true(a.state_bytes < 512);
	assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	/* live: traffic, then back to window while the state is held */
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	assert_int_equal(tpchan_set_cc(w.b, swift), 0);
	assert_int_equal(tpchan_set_cc(w.a, window), 0);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 200 * MS), -ENODATA);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a);
	tpchan_get_stats(w.b, &b);
	assert_true(a.state_bytes < 512);
	assert_true(b.state_bytes < 512);
	assert_int_equal(a.state_releases, 1);   /* one idle period, one release */
	assert_int_equal(b.state_releases, 1);
	assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	assert_int_equal(tpchan_next_deadline(w.b), UINT64_MAX);
	world_fini(&w);
}

/* The message table starts at 16 entries and doubles as messages queue;
 * a submit from inside read() cannot move it (the sender holds an entry
 * across read()) and is pushed back, one that fits is taken. */
static void test_message_table_grows_but_not_under_read(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats a0, a;
	struct tpchan_msg m;

	p.max_msgs = 64;
	world_init(&w, 40, false);
	world_chans(&w, &p, &p, &lp);
	tpchan_get_stats(w.a, &a0);
	for (uint32_t i = 0; i < 16; i++) {
		m = msg_of(&w, i);
		assert_int_equal(tpchan_submit(w.a, &m), 0);
	}
	w.next = 16;
	w.read_submits = 1;                    /* table full at 16: pushed back */
	assert_int_equal(wirelink_step(w.link), 1);
	assert_int_equal(w.read_submits, 0);
	assert_int_equal(w.read_submit_res[0], -EAGAIN);
	assert_int_equal(w.next, 16);
	m = msg_of(&w, 16);                    /* outside read(): it grows */
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	w.next = 17;
	w.read_submits = 1;                    /* 17 of 32 used: fits */
	while (w.read_submits)
		assert_int_equal(wirelink_step(w.link), 1);
	assert_int_equal(w.read_submit_res[0], 0);
	assert_int_equal(w.next, 18);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.msgs_completed, 40);
	assert_true(a.state_bytes > a0.state_bytes + 40 * 80);  /* 64 entries by now */
	world_fini(&w);
}

/* idle_release_ns 0: the state, once allocated, stays; no deadline for it. */
static void test_idle_release_zero_keeps_state(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats a0, a;

	world_init(&w, 4, false);
	world_chans(&w, &p, &p, &lp);
	tpchan_get_stats(w.a, &a0);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	assert_int_equal(wirelink_run(w.link, NULL, NULL, 200 * MS), -ENODATA);
	assert_true(wirelink_now(w.link) < w.last_complete_ns + 1 * MS);
	assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	tpchan_get_stats(w.a, &a);
	assert_int_equal(a.state_releases, 0);
	assert_true(a.state_bytes > a0.state_bytes);
	world_fini(&w);
}

/* No memory for the state: submit says -ENOMEM, a DATA packet is dropped
 * unacknowledged and counted; once memory is back the peer's resend gets
 * through and everything completes. */
static void test_state_allocation_failure(void **state)
{
#ifdef __SANITIZE_ADDRESS__
	skip();
#else
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats a, b;
	struct tpchan_msg m;

	p.idle_release_ns = 1 * MS;
	world_init(&w, 8, false);
	world_chans(&w, &p, &p, &lp);
	m = msg_of(&w, 0);
	g_fail_min = 1024;                     /* the ring, the tables; not small things */
	assert_int_equal(tpchan_submit(w.a, &m), -ENOMEM);
	g_fail_min = 0;
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	w.next = 1;
	/* a's packets go; b cannot take them until the memory returns (its
	 * first refusal records are 128 bytes; a, short of memory too, picks
	 * paths without its table and keeps its ring as it is) */
	g_fail_min = 64;
	g_calloc_only = true;
	for (int i = 0; i < 3; i++)
		assert_int_equal(wirelink_step(w.link), 1);
	g_fail_min = 0;
	g_calloc_only = false;
	tpchan_get_stats(w.b, &b);
	assert_true(b.drop_nomem > 0);
	assert_int_equal(b.data_pkts_rx, 0);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	check_transfer(&w);
	tpchan_get_stats(w.a, &a);
	assert_true(a.retx_pkts > 0);          /* what b dropped came again */
	world_fini(&w);
#endif
}

/* Bursts with the state released between them, on a wire that loses,
 * duplicates and reorders (so that late copies meet released state): every
 * byte arrives once, every message completes once. */
static void test_release_between_bursts_on_a_rough_wire(void **state)
{
	struct world w;
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = link_params(10000, 21);
	struct tpchan_stats a, b;
	uint32_t bursts = 24, all;

	p.idle_release_ns = 20 * US;
	lp.dup_ppm = 20000;
	world_init(&w, 3 * bursts, true);
	world_chans(&w, &p, &p, &lp);
	all = w.nmsgs;                         /* 3 a burst, the last one takes the rest */
	for (uint32_t k = 1; k <= bursts; k++) {
		w.nmsgs = k == bursts ? all : 3 * k;
		assert_int_equal(wirelink_run(w.link, pump, &w, wirelink_now(w.link) + 1000 * MS), 0);
		assert_int_equal(wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 1000 * MS),
				 -ENODATA);
		tpchan_get_stats(w.a, &a);
		tpchan_get_stats(w.b, &b);
		assert_int_equal(a.state_releases, k);
		assert_true(b.state_releases >= k);
		assert_int_equal(tpchan_next_deadline(w.a), UINT64_MAX);
	}
	check_transfer(&w);
	print_message("%u bursts: %llu resends, %llu duplicates received, %llu releases at b\n",
		      bursts, (unsigned long long)a.retx_pkts, (unsigned long long)b.dup_pkts_rx,
		      (unsigned long long)b.state_releases);
	assert_true(a.retx_pkts > 0 && b.dup_pkts_rx > 0);
	assert_int_equal(a.drop_malformed + b.drop_malformed, 0);
	world_fini(&w);
}

/* Every packet either way, hashed in order with its send time (FNV-1a). */
struct wire_hash {
	struct wirelink *l;
	uint64_t h;
	uint64_t pkts;
};

static int64_t hash_packets(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct wire_hash *x = arg;
	uint64_t now = wirelink_now(x->l);
	uint64_t h = x->h ^ (uint64_t)from;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ pkt[i]) * 0x100000001b3ull;
	for (int i = 0; i < 8; i++)
		h = (h ^ (uint8_t)(now >> (8 * i))) * 0x100000001b3ull;
	x->h = h;
	x->pkts++;
	return 0;
}

/* Bursts with idle gaps on a rough wire (so that late copies and ACKs meet
 * frozen channels), with or without freezing. */
static void bursts_with_gaps(bool gbn, const char *cc, bool freeze_off, struct wire_hash *hx,
			     struct tpchan_stats *a, struct tpchan_stats *b)
{
	struct world w;
	struct tpchan_params p = chan_params(gbn);
	struct wirelink_params lp = link_params(10000, 33);
	uint32_t bursts = 12, all;

	p.idle_release_ns = 20 * US;
	p.freeze_off = freeze_off;
	p.cc = cc_find(cc);
	assert_non_null(p.cc);
	lp.dup_ppm = 20000;
	world_init(&w, 3 * bursts, true);
	world_chans(&w, &p, &p, &lp);
	*hx = (struct wire_hash){ .l = w.link, .h = 0xcbf29ce484222325ull };
	wirelink_set_tap(w.link, hash_packets, hx);
	all = w.nmsgs;
	for (uint32_t k = 1; k <= bursts; k++) {
		w.nmsgs = k == bursts ? all : 3 * k;
		assert_int_equal(wirelink_run(w.link, pump, &w, wirelink_now(w.link) + 1000 * MS), 0);
		assert_int_equal(wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 1000 * MS),
				 -ENODATA);
	}
	check_transfer(&w);
	tpchan_get_stats(w.a, a);
	tpchan_get_stats(w.b, b);
	world_fini(&w);
}

/* Freezing packs an idle channel and thaws it exactly: the same traffic
 * puts the same packets on the wire at the same times, with the same
 * counters at the end, as channels that never freeze; only state_bytes
 * differs. SACK and Go-Back-N, and controllers with times in their state. */
static void test_frozen_channels_behave_exactly_as_live_ones(void **state)
{
	static const struct { bool gbn; const char *cc; } runs[] = {
		{ false, "window" }, { true, "window" }, { false, "swift" }, { false, "dcqcn" },
		{ false, "timely" },
	};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct wire_hash h0, h1;
		struct tpchan_stats a0, b0, a1, b1;

		bursts_with_gaps(runs[i].gbn, runs[i].cc, true, &h0, &a0, &b0);
		bursts_with_gaps(runs[i].gbn, runs[i].cc, false, &h1, &a1, &b1);
		print_message("%s %s: %llu packets; idle state %llu bytes live, %llu frozen\n",
			      runs[i].gbn ? "gbn" : "sack", runs[i].cc, (unsigned long long)h0.pkts,
			      (unsigned long long)a0.state_bytes, (unsigned long long)a1.state_bytes);
		assert_true(a1.retx_pkts > 0 && b1.dup_pkts_rx > 0);   /* the wire was rough */
		assert_int_equal(h0.pkts, h1.pkts);
		assert_true(h0.h == h1.h);
		assert_true(a1.state_bytes * 2 < a0.state_bytes);
		assert_true(a1.state_releases >= 12);                 /* froze after every burst */
		a0.state_bytes = a1.state_bytes;
		b0.state_bytes = b1.state_bytes;
		assert_memory_equal(&a0, &a1, sizeof(a0));
		assert_memory_equal(&b0, &b1, sizeof(b0));
	}
}

/* The tail of one message lost (first sends of psn 2800 on, of 3000, with
 * 256 KiB in flight): the timer fires once for what was sent an RTO ago,
 * and not again at once for the next batch sent microseconds later, even
 * though an ACK of new data (the tail probe's) takes the backoff back;
 * each extra timeout cut the window again (4 timeouts before, ssthresh at
 * its floor). */
struct tail_drop { uint32_t from_psn; uint64_t drops; };

static int64_t drop_tail(void *arg, int from, const uint8_t *pkt, uint32_t len)
{
	struct tail_drop *t = arg;
	struct wire_pkt w;

	if (from == 0 && wire_parse(pkt, len, &w) == 0 && w.type == WIRE_DATA &&
	    !(w.data.flags & WIRE_F_RETX) && w.data.psn >= t->from_psn) {
		t->drops++;
		return -1;
	}
	return 0;
}

static void test_one_lost_tail_one_timeout_per_rto(void **state)
{
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tail_drop t = { .from_psn = 2800 };
	struct tpchan_stats a;
	struct tpchan_msg m;
	struct world w;

	(void)state;
	p.npaths = 1;
	p.max_inflight_bytes = 256 * 1024;
	p.cc = cc_find("window");
	lp.rate_gbps = 100;
	world_init(&w, 1, false);
	w.msgs[0].len = 3000ull * MSS1500;
	w.total = w.msgs[0].len;
	world_chans(&w, &p, &p, &lp);
	wirelink_set_tap(w.link, drop_tail, &t);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 1000 * MS), 0);
	tpchan_get_stats(w.a, &a);
	print_message("tail of 200 lost: %llu dropped, %llu timeouts, %llu fast resends\n",
		      (unsigned long long)t.drops, (unsigned long long)a.retx_timeouts,
		      (unsigned long long)a.fast_retx);
	assert_true(t.drops >= 200);
	assert_true(a.retx_timeouts <= 2);
	check_transfer(&w);
	world_fini(&w);
}

/* The test wire itself: a step wakes for its timer (what drives a credit
 * pacer) when that comes before the next arrival, not at the arrival. */
struct wake { uint64_t at[4]; int n; };

static uint64_t wake_1us_later(void *arg, uint64_t now)
{
	struct wake *k = arg;

	if (k->n < 4)
		k->at[k->n] = now;
	return k->n++ == 0 ? now + US : UINT64_MAX;
}

static void test_wire_wakes_for_a_timer_before_the_next_arrival(void **state)
{
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct wake k = { .n = 0 };
	struct tpchan_msg m;
	struct world w;

	(void)state;
	world_init(&w, 1, false);
	world_chans(&w, &p, &p, &lp);
	wirelink_set_timer(w.link, wake_1us_later, &k);
	m = msg_of(&w, 0);
	assert_int_equal(tpchan_submit(w.a, &m), 0);
	assert_int_equal(wirelink_step(w.link), 1);    /* sends; the DATA lands 10 us on */
	assert_int_equal(wirelink_step(w.link), 1);
	assert_int_equal(k.n, 2);
	assert_int_equal(k.at[1], k.at[0] + US);
	assert_int_equal(wirelink_run(w.link, all_done, &w, 100 * MS), 0);
	check_transfer(&w);
	world_fini(&w);
}

/* A stranger's ACK (a wrong token) is turned away and must change nothing
 * but drop_token: it restarted a live channel's idle hold, so that one
 * every half hold kept the per-packet state allocated (and the channel
 * unfrozen) for as long as they came. */
struct forger { struct wirelink *l; uint64_t every, next, until; uint32_t sent; };

static uint64_t forge_ack(void *arg, uint64_t now)
{
	struct forger *f = arg;
	struct wire_ack a = { .token = 0xdeadbeefull, .cum_psn = 0 };
	uint8_t buf[256];
	int n;

	if (now >= f->until)
		return UINT64_MAX;
	if (now >= f->next) {
		n = wire_write_ack(buf, sizeof(buf), &a);
		assert_true(n > 0);
		assert_int_equal(wirelink_inject(f->l, 0, buf, (size_t)n), -EACCES);
		f->sent++;
		f->next = now + f->every;
	}
	return f->next;
}

static void test_strangers_acks_do_not_keep_a_channel_from_releasing(void **state)
{
	struct tpchan_params p = chan_params(false);
	struct wirelink_params lp = clean_link();
	struct tpchan_stats a;
	struct forger f;
	struct world w;

	(void)state;
	p.idle_release_ns = 1 * MS;
	world_init(&w, 8, false);
	world_chans(&w, &p, &p, &lp);
	assert_int_equal(wirelink_run(w.link, pump, &w, 100 * MS), 0);
	f = (struct forger){ .l = w.link, .every = p.idle_release_ns / 2,
			     .next = wirelink_now(w.link), .until = wirelink_now(w.link) + 50 * MS };
	wirelink_set_timer(w.link, forge_ack, &f);
	(void)wirelink_run(w.link, NULL, NULL, wirelink_now(w.link) + 40 * MS);
	tpchan_get_stats(w.a, &a);
	assert_true(f.sent > 20);
	assert_int_equal(a.drop_token, f.sent);
	assert_int_equal(a.state_releases, 1);
	check_transfer(&w);
	world_fini(&w);
}

/* ---- one channel fed by hand: the receiver's credit cap, a timeout's verdict ---- */

/* Side a of two_chans (a's callbacks, and its tokens), with no peer: the
 * test hands it every packet. */
static struct tpchan *rv_chan_with(const struct tpchan_cb *cb)
{
	static int delivered;
	struct tpchan_params p = chan_params(false);
	struct tpchan *c;

	p.npaths = 1;
	p.tx_token = TOKEN_B;
	p.rx_token = TOKEN_A;
	p.cb = cb;
	p.cb_arg = &delivered;
	c = tpchan_new(&p);
	assert_non_null(c);
	return c;
}

static struct tpchan *rv_chan(void)
{
	return rv_chan_with(&two_cb);
}

/* The GRANT a receiver sends (its psn), or -1. */
static int64_t rv_grant_psn(struct tpchan *c, uint64_t now)
{
	uint8_t pk[1500];
	struct tpchan_txpkt out = { .buf = pk };
	struct wire_pkt w;

	if (tpchan_tx(c, now, &out, 1) != 1 || wire_parse(pk, out.len, &w) < 0 || w.type != WIRE_CREDIT ||
	    !(w.credit.flags & WIRE_F_GRANT))
		return -1;
	return w.credit.psn;
}

/* docs/wire-protocol.md "Credit": the pacer grants "at most 32 chunks past
 * the highest psn received". 32 chunks of 32768 B at mss 1404 = 747 pkts. */
static void test_grants_stay_within_32_chunks_of_what_arrived(void **state)
{
	const uint32_t ahead = (32u * 32768 + MSS1500 - 1) / MSS1500;   /* 747 */
	uint64_t quanta[] = { 16384, 700ull * MSS1500 };

	(void)state;
	for (int q = 1; q >= 0; q--) {
		struct tpchan *c = rv_chan();
		struct wire_credit req = { .flags = WIRE_F_REQ, .token = TOKEN_A };
		uint8_t buf[WIRE_CREDIT_LEN];
		int64_t g;

		assert_int_equal(wire_write_credit(buf, sizeof(buf), &req), WIRE_CREDIT_LEN);
		assert_int_equal(tpchan_rx(c, buf, sizeof(buf), 0), 0);   /* nothing arrived: rx_high 0 */
		while (tpchan_credit_wanted(c))                           /* an unpaced pacer */
			tpchan_credit_grant(c, quanta[q]);
		g = rv_grant_psn(c, 0);
		assert_true(g >= 0 && g <= ahead);
		tpchan_free(c);
	}
}

/* A grant is priced at the size of the packets that arrived lately (the
 * pacer's accounting, pull.c): after 2,000 one-packet messages of 8 bytes,
 * 64 full packets of a bulk put make it about a full packet; the mean
 * since the start (about 98 bytes) let the pacer grant 15x its rate. */
static void test_a_grant_is_priced_at_the_recent_packet_size(void **state)
{
	static uint8_t payload[MSS1500];
	struct tpchan *c = rv_chan();
	struct wire_data d = { .opcode = UCCL_OP_PUT, .token = TOKEN_A, .rkey = 0xabc,
			       .payload = payload };
	uint8_t buf[1600];
	uint64_t bytes;
	uint32_t psn = 0;

	(void)state;
	for (uint64_t i = 0; i < 2064; i++, psn++) {
		d.psn = psn;
		d.msg_id = i;
		d.payload_len = i < 2000 ? 8 : MSS1500;
		d.msg_len = d.payload_len;
		/* a credit sender with more queued, on a crc channel */
		d.flags = WIRE_F_MORE | WIRE_F_CRC;
		d.crc = crc32c(0, payload, d.payload_len);
		int n = wire_write_data(buf, sizeof(buf), &d);

		assert_true(n > 0);
		assert_int_equal(tpchan_rx(c, buf, (size_t)n, 1000 * i), 0);
	}
	assert_true(tpchan_credit_wanted(c));
	bytes = tpchan_credit_grant(c, 10 * MSS1500);
	assert_in_range(bytes, 10 * 1300, 10 * (MSS1500 + WIRE_DATA_HDR_LEN));
	tpchan_free(c);
}

static void rv_ack(struct tpchan *c, uint32_t cum, uint64_t sack0, uint64_t tsecr, uint64_t now)
{
	struct wire_ack a = { .token = TOKEN_A, .cum_psn = cum, .tsecr = tsecr,
			      .sack_words = sack0 ? 1 : 0, .sack = { sack0 } };
	uint8_t buf[256];
	int n = wire_write_ack(buf, sizeof(buf), &a);

	assert_true(n > 0);
	assert_int_equal(tpchan_rx(c, buf, (size_t)n, now), 0);
}

/* Send what is due at now; return the psns sent (bitmask) and RETX ones. */
static uint32_t rv_tx(struct tpchan *c, uint64_t now, uint32_t *retx)
{
	uint8_t pk[8][1500];
	struct tpchan_txpkt out[8];
	uint32_t sent = 0;
	int n;

	for (int i = 0; i < 8; i++)
		out[i] = (struct tpchan_txpkt){ .buf = pk[i] };
	n = tpchan_tx(c, now, out, 8);
	*retx = 0;
	for (int i = 0; i < n; i++) {
		struct wire_pkt w;

		if (wire_parse(pk[i], out[i].len, &w) < 0 || w.type != WIRE_DATA)
			continue;
		sent |= 1u << w.data.psn;
		if (w.data.flags & WIRE_F_RETX)
			*retx |= 1u << w.data.psn;
	}
	return sent;
}

/* A tail probe goes on a late ACK, not on evidence of a loss: its path is
 * not held out, and the original's ACK arriving just after it does not
 * make the probe a spurious resend (which widens the reorder window). */
static void test_a_tail_probe_is_not_a_loss(void **state)
{
	struct tpchan *c = rv_chan();
	struct tpchan_msg m1 = { .cookie = 1, .opcode = 2, .rkey = 0xabc, .len = 100 };
	struct tpchan_msg m2 = { .cookie = 2, .opcode = 2, .rkey = 0xabc, .roff = 100, .len = 100 };
	struct tpchan_stats st;
	struct paths_stat ps = { 0 };
	uint64_t now = 100 * US, probe_at = 0;
	uint32_t retx;

	(void)state;
	assert_int_equal(tpchan_submit(c, &m1), 0);
	assert_int_equal(rv_tx(c, 0, &retx), 0x1);
	rv_ack(c, 1, 0, 0, 20 * US);                        /* srtt 20 us */
	assert_int_equal(tpchan_submit(c, &m2), 0);
	assert_int_equal(rv_tx(c, now, &retx), 0x2);        /* psn 1 at 100 us */
	/* its ACK is late: the probe resends psn 1 */
	for (int i = 0; i < 100 && !probe_at && now < 300 * US; i++) {
		uint64_t d = tpchan_next_deadline(c);

		now = d > now ? d : now;
		if (rv_tx(c, now, &retx) & retx & 0x2)
			probe_at = now;
	}
	tpchan_get_stats(c, &st);
	assert_true(probe_at > 100 * US && probe_at < 300 * US);
	assert_int_equal(st.tlp_probes, 1);
	assert_int_equal(st.retx_timeouts, 0);
	/* the original's ACK, 5 us after the probe went */
	rv_ack(c, 2, 0, 100 * US, probe_at + 5 * US);
	tpchan_get_stats(c, &st);
	assert_int_equal(st.spurious_retx, 0);
	assert_int_equal(tpchan_path_stats(c, &ps, 1), 1);
	assert_int_equal(ps.losses, 0);
	tpchan_free(c);
}

/* The hand-fed channel's completions and give-ups. */
static int gu_calls, gu_completes, gu_timeouts, gu_completes_at_give_up;

static void gu_complete(void *arg, uint64_t cookie, int res)
{
	gu_completes++;
	gu_timeouts += res == -ETIMEDOUT;
}

static void gu_gave_up(void *arg)
{
	gu_calls++;
	gu_completes_at_give_up = gu_completes;
}

/* The peer refuses a message (its NACK arrives, the ACKs of its packets do
 * not), then goes silent: the channel gives up on packets of a message
 * that already failed, with no live one left to fail with -ETIMEDOUT, and
 * still says so: the layer above learns of a give-up only this way. */
static void test_a_give_up_is_told_without_a_live_message(void **state)
{
	static const struct tpchan_cb cb = {
		.read = two_read, .deliver = two_deliver, .complete = gu_complete,
		.gave_up = gu_gave_up,
	};
	struct tpchan_msg m = { .cookie = 7, .opcode = 2, .rkey = 0xabc, .len = 4 * MSS1500 };
	uint8_t pk[8][1500], nb[256];
	struct tpchan_txpkt out[8];
	struct wire_nack nk = { .seq = 1, .token = TOKEN_A, .err = -EACCES };
	struct tpchan_stats st;
	struct wire_pkt w;
	uint64_t now = 0;
	struct tpchan *c;
	int n;

	(void)state;
	gu_calls = gu_completes = gu_timeouts = 0;
	c = rv_chan_with(&cb);
	assert_int_equal(tpchan_submit(c, &m), 0);
	for (int i = 0; i < 8; i++)
		out[i] = (struct tpchan_txpkt){ .buf = pk[i] };
	n = tpchan_tx(c, 0, out, 8);
	assert_int_equal(n, 4);
	assert_int_equal(wire_parse(pk[0], out[0].len, &w), 0);
	assert_int_equal(w.type, WIRE_DATA);
	nk.psn = w.data.psn;
	nk.msg_id = w.data.msg_id;
	n = wire_write_nack(nb, sizeof(nb), &nk);
	assert_true(n > 0);
	assert_int_equal(tpchan_rx(c, nb, (size_t)n, 10 * US), 0);
	assert_int_equal(gu_completes, 1);                  /* -EACCES */
	for (int i = 0; i < 100000 && now < 10000 * MS; i++) {
		uint64_t d = tpchan_next_deadline(c);
		uint32_t retx;

		if (d == UINT64_MAX)
			break;
		now = d > now ? d : now;
		rv_tx(c, now, &retx);
	}
	tpchan_get_stats(c, &st);
	assert_int_equal(st.inflight_pkts, 0);
	assert_int_equal(gu_calls, 1);
	assert_int_equal(gu_completes_at_give_up, 1);
	assert_int_equal(gu_completes, 1);
	assert_int_equal(gu_timeouts, 0);
	tpchan_free(c);
}

/* RFC 3522: a timeout is spurious when the original of what it resent was
 * acknowledged. Here the timeout resends psn 4 (truly lost); psn 0, the
 * una it records, was fast-retransmitted before the timeout and not resent
 * by it; that fast retransmit arrives late and an ACK echoes it: before
 * the resend of 4 (cum 4), or after it (4 SACKed first, then cum 5). */
static void timeout_judged_by_what_it_resent(bool resend_first)
{
	struct tpchan *c = rv_chan();
	struct tpchan_msg m1 = { .cookie = 1, .opcode = 2, .rkey = 0xabc, .len = 4 * MSS1500 };
	struct tpchan_msg m2 = { .cookie = 2, .opcode = 2, .rkey = 0xabc, .roff = 4 * MSS1500, .len = 100 };
	struct tpchan_stats st;
	uint32_t sent, retx;

	assert_int_equal(tpchan_submit(c, &m1), 0);
	sent = rv_tx(c, 0, &retx);
	assert_int_equal(sent, 0xf);                        /* psns 0..3 at t=0 */
	assert_int_equal(tpchan_submit(c, &m2), 0);
	sent = rv_tx(c, 5 * US, &retx);
	assert_int_equal(sent, 0x10);                       /* psn 4 at t=5us */
	/* 0 lost: 1,2,3 SACKed at 20us (an RTT sample of 20 us: rto 200 us) */
	rv_ack(c, 0, 0x7, 0, 20 * US);
	sent = rv_tx(c, 20 * US, &retx);
	assert_int_equal(retx, 0x1);                        /* fast retransmit of 0 at 20us */
	/* psn 4 was lost: the timer fires at 5 + 200 us and resends 4 alone */
	sent = rv_tx(c, 205 * US, &retx);
	tpchan_get_stats(c, &st);
	assert_int_equal(st.retx_timeouts, 1);
	assert_int_equal(retx, 0x10);
	if (resend_first) {
		/* the resend of 4 arrives first: SACKed (cum 0, 1..4), echo 205 us */
		rv_ack(c, 0, 0xf, 205 * US, 230 * US);
		/* then the fast retransmit of 0: cum 5, echo 20 us */
		rv_ack(c, 5, 0, 20 * US, 240 * US);
	} else {
		/* the fast retransmit of 0 (sent 20 us) arrives late: cum 4, echo 20 us */
		rv_ack(c, 4, 0, 20 * US, 230 * US);
		/* the resend of 4 fills it: echo 205 us */
		rv_ack(c, 5, 0, 205 * US, 240 * US);
	}
	tpchan_get_stats(c, &st);
	assert_int_equal(st.rto_spurious, 0);
	tpchan_free(c);
}

static void test_a_timeout_is_judged_by_what_it_resent(void **state)
{
	(void)state;
	timeout_judged_by_what_it_resent(false);
	timeout_judged_by_what_it_resent(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_64mib_without_loss),
		cmocka_unit_test(test_sequence_numbers_wrap_without_a_trace),
		cmocka_unit_test(test_64mib_at_0_1_percent_loss),
		cmocka_unit_test(test_64mib_at_1_percent_loss),
		cmocka_unit_test(test_64mib_at_5_percent_loss),
		cmocka_unit_test(test_gathered_payloads_arrive_byte_exact),
		cmocka_unit_test(test_sack_resends_far_less_than_go_back_n),
		cmocka_unit_test(test_more_than_1024_packets_in_flight_on_a_long_fat_wire),
		cmocka_unit_test(test_path_per_packet_sprays_a_chunk),
		cmocka_unit_test(test_path_load_returns_to_zero_after_a_lossy_transfer),
		cmocka_unit_test(test_path_run_keeps_a_path_over_chunks),
		cmocka_unit_test(test_short_messages_cut_together_share_a_path),
		cmocka_unit_test(test_ack_waits_at_most_ack_delay_or_ack_every_packets),
		cmocka_unit_test(test_ack_hold_lets_a_reply_carry_the_ack),
		cmocka_unit_test(test_ack_hold_ends_when_the_delay_comes_first_and_leads_a_full_batch),
		cmocka_unit_test(test_hole_is_acknowledged_at_once_and_fast_retransmitted),
		cmocka_unit_test(test_lost_packet_is_resent_when_its_reorder_timer_runs_out),
		cmocka_unit_test(test_lost_tail_is_probed_before_the_rto),
		cmocka_unit_test(test_a_tail_probe_is_not_a_loss),
		cmocka_unit_test(test_a_spurious_timeout_raises_the_floor_a_right_one_lowers_it),
		cmocka_unit_test(test_go_back_n_resends_a_spurious_timeout_once),
		cmocka_unit_test(test_a_spurious_timeout_resends_only_what_it_found_lost),
		cmocka_unit_test(test_go_back_n_counts_the_copies_of_a_batched_duplicate_ack),
		cmocka_unit_test(test_go_back_n_split_copies_echo_a_resend_that_arrived_between),
		cmocka_unit_test(test_an_ack_without_room_goes_once),
		cmocka_unit_test(test_an_ack_without_room_adds_its_extra_copy_once),
		cmocka_unit_test(test_a_drop_taken_again_owes_no_duplicate),
		cmocka_unit_test(test_grants_stay_within_32_chunks_of_what_arrived),
		cmocka_unit_test(test_a_grant_is_priced_at_the_recent_packet_size),
		cmocka_unit_test(test_a_timeout_is_judged_by_what_it_resent),
		cmocka_unit_test(test_an_ack_echoes_a_resend_that_filled_a_hole),
		cmocka_unit_test(test_an_ack_echoes_the_newest_resend),
		cmocka_unit_test(test_forged_and_damaged_packets_are_dropped_and_counted),
		cmocka_unit_test(test_forged_refusal_counters_are_dropped),
		cmocka_unit_test(test_refused_delivery_fails_the_message_at_the_sender),
		cmocka_unit_test(test_an_ack_that_overtakes_the_nack_does_not_complete_the_message),
		cmocka_unit_test(test_refusals_never_complete_as_success_without_loss),
		cmocka_unit_test(test_refusals_never_complete_as_success_at_1_percent_loss),
		cmocka_unit_test(test_refusals_never_complete_as_success_at_5_percent_loss),
		cmocka_unit_test(test_refusals_survive_a_wire_that_drops_every_nack_for_a_while),
		cmocka_unit_test(test_a_full_refusal_ring_turns_data_away_until_confirmed),
		cmocka_unit_test(test_failed_message_is_never_read_again_and_resent_as_filler),
		cmocka_unit_test(test_read_error_fails_only_that_message),
		cmocka_unit_test(test_vanished_peer_fails_everything_with_etimedout),
		cmocka_unit_test(test_a_give_up_is_told_without_a_live_message),
		cmocka_unit_test(test_reset_fails_queued_and_inflight_once),
		cmocka_unit_test(test_free_cancels_what_is_left),
		cmocka_unit_test(test_submit_pushes_back_at_max_msgs),
		cmocka_unit_test(test_ce_mark_comes_back_as_ece_and_cuts_the_window),
		cmocka_unit_test(test_bad_parameters_are_refused),
		cmocka_unit_test(test_inflight_pkts_cover_the_byte_limit),
		cmocka_unit_test(test_the_byte_limit_not_the_packet_count_caps_a_long_pipe),
		cmocka_unit_test(test_cc_switch_mid_transfer_delivers_everything),
		cmocka_unit_test(test_cc_switch_refuses_bad_ops),
		cmocka_unit_test(test_both_directions_at_once),
		cmocka_unit_test(test_refusals_both_directions_at_once),
		cmocka_unit_test(test_same_seed_same_run),
		cmocka_unit_test(test_idle_channel_releases_state_and_comes_back),
		cmocka_unit_test(test_idle_release_zero_keeps_state),
		cmocka_unit_test(test_frozen_channels_behave_exactly_as_live_ones),
		cmocka_unit_test(test_set_cc_of_another_size_freezes_again),
		cmocka_unit_test(test_frozen_channel_drops_strangers_without_waking),
		cmocka_unit_test(test_resends_acks_call_for_do_not_count_toward_max_retx),
		cmocka_unit_test(test_message_table_grows_but_not_under_read),
		cmocka_unit_test(test_release_between_bursts_on_a_rough_wire),
		cmocka_unit_test(test_state_allocation_failure),
		cmocka_unit_test(test_one_lost_tail_one_timeout_per_rto),
		cmocka_unit_test(test_wire_wakes_for_a_timer_before_the_next_arrival),
		cmocka_unit_test(test_strangers_acks_do_not_keep_a_channel_from_releasing),
	};
	int r;

	g_cap = 80ull << 20;
	g_src = malloc(g_cap);
	g_dst = malloc(g_cap);
	if (!g_src || !g_dst)
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	free(g_src);
	free(g_dst);
	return r;
}
