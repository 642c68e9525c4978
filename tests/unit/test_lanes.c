/* SPDX-License-Identifier: MIT */
/*
 * lanes: two hosts of NT engines each, as two daemons with NT engine
 * threads: engine t of A and engine t of B are joined by an in-memory wire
 * (their channel 0; seeded loss, duplication and delay). A's endpoint and
 * B's live on engine 0; engines 1.. hold shadow endpoints with the same ids
 * whose sides are the lanes of that connection. The tests play the daemon:
 * they carry parts from A0's lane_submit to the lane engines and reports
 * back to A0 (a queue each way, as between threads), and the client library
 * (A's rings). They pin what engine/lanes.c promises: the bytes of a split
 * put all land, it completes once with its whole length and the first
 * error, a signal is applied only after every earlier part was written,
 * and reports for a put that went away are ignored.
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

#include "engine/engine.h"
#include "engine/ring.h"
#include "tests/unit/pktheap.h"

#define US 1000ull
#define MS 1000000ull
#define KiB 1024u
#define MiB (1024u * 1024u)

#define NT 3                 /* engines per host: 2 lanes */
#define EP_A 1u
#define EP_B 4u
#define CLIENT_A 7u
#define CLIENT_B 9u
#define KEY_B 0xB1B1B1B1B1B1B1B1ull
#define REG_LEN ((size_t)8 * MiB)
#define SEMS 16
#define RING 256
#define LOG_MAX 512
#define BATCH 64
#define QMAX 4096
#define WIRE(conn, gen) ((uint32_t)(conn) | (uint32_t)(gen) << 16)
#define TOKEN(t, gen, to) (0x1a4e000000000000ull | (uint64_t)(t) << 16 | (uint64_t)(gen) << 8 | (to))
#define SPLIT_MIN ((uint64_t)1 * MiB)

struct done_msg {
	uint32_t origin;
	uint64_t cookie;
	int res;
};

static uint64_t g_ep_inflight;     /* A's max_ep_inflight_bytes for the next fx_open */
static uint32_t g_remote_msgs;     /* every engine's max_remote_msgs for the next (0: default) */
static uint64_t g_b_max_op;        /* B's max_op_bytes for the next fx_open (0: no cap) */

struct fx {
	struct engine *e[2][NT];
	struct engine_mem_ops mem;
	void *region;                 /* A's endpoint: rings and semaphores */
	size_t region_len;
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
	void *bregion;                /* B's */
	struct uccl_shm_hdr bhdr;
	uint64_t *bsems;
	uint8_t *src, *dst;           /* A's region 1, B's region 1 (every engine has them) */
	struct uccl_cqe log[LOG_MAX];
	int nlog;
	uint64_t now, seq, rng;
	uint32_t loss_ppm, dup_ppm;
	uint32_t lane_loss[NT];       /* per wire pair, ppm (1000000: cut) */
	uint64_t lane_delay[NT];      /* per wire pair, added to every packet */
	struct pktheap q;             /* packets on the wires */
	uint8_t *txbuf[BATCH];
	struct engine_txpkt txp[BATCH];
	/* the daemon's queues between threads */
	struct engine_lane_part parts[QMAX];
	int nparts;
	struct done_msg dones[QMAX];
	int ndones;
	int fail_lane;                /* lane_submit refuses this lane (0: none) */
	uint64_t hold_from;           /* parts of source offset >= this stay queued (0: none) */
	int submits;
	int late_dones;               /* engine_lane_done said -ENOENT */
	/* signal watch: B's semaphore on conn 0, and the bytes that must be
	 * in place when it reaches each value */
	uint64_t sem_seen;
	uint64_t want_off[8], want_len[8];
	int nwant;
	int sig_checks;
	/* a put's range by user_data: written when it completes */
	uint64_t put_off[16], put_len[16];
	int put_checks;
};

static int fx_copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		   uint64_t src_off, uint64_t len)
{
	(void)arg;
	if (dst_off > dst->len || len > dst->len - dst_off || src_off > src->len ||
	    len > src->len - src_off)
		fail_msg("copy outside a region");
	memmove((uint8_t *)dst->base + dst_off, (const uint8_t *)src->base + src_off, len);
	return 0;
}

static int lane_submit(void *arg, const struct engine_lane_part *p)
{
	struct fx *f = arg;

	f->submits++;
	if ((int)p->lane == f->fail_lane)
		return -ENOMEM;
	assert_true(p->lane >= 1 && p->lane < NT);
	assert_true(f->nparts < QMAX);
	f->parts[f->nparts] = *p;
	f->parts[f->nparts++].origin = 0;      /* the owner runs on engine 0 */
	return 0;
}

static void lane_done(void *arg, uint32_t origin, uint64_t cookie, int res)
{
	struct fx *f = arg;

	assert_true(f->ndones < QMAX);
	f->dones[f->ndones++] = (struct done_msg){ origin, cookie, res };
}

static uint64_t rnd(struct fx *f)
{
	return xrnd(&f->rng);
}

static bool chance(struct fx *f, uint32_t ppm)
{
	return xchance(&f->rng, ppm);
}

static void wire_put(struct fx *f, int host, int thr, const struct engine_txpkt *p)
{
	struct pkt_ev k = { .len = p->len, .to = (uint8_t)!host, .thr = (uint8_t)thr };

	if (chance(f, f->loss_ppm) || chance(f, f->lane_loss[thr]))
		return;
	k.t = f->now + 10 * US + f->lane_delay[thr] + p->path * 300 + (chance(f, 50000) ? rnd(f) % (5 * US) : 0);
	k.seq = f->seq++;
	k.buf = malloc(p->len);
	assert_non_null(k.buf);
	memcpy(k.buf, p->buf, p->hdr_len && p->payload ? p->hdr_len : p->len);
	if (p->payload)
		memcpy(k.buf + p->hdr_len, p->payload, p->len - p->hdr_len);
	if (chance(f, f->dup_ppm)) {
		struct pkt_ev d = k;

		d.buf = malloc(k.len);
		assert_non_null(d.buf);
		memcpy(d.buf, k.buf, k.len);
		d.t += 1 + rnd(f) % (3 * US);
		d.seq = f->seq++;
		pktheap_push(&f->q, d);
	}
	pktheap_push(&f->q, k);
}

/* A's completions into the log; and the signal check: whenever B's
 * semaphore moves, the bytes promised before that signal are in place. */
static void observe(struct fx *f)
{
	int n = ring_cons_avail(&f->cq);
	uint64_t s;

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		const struct uccl_cqe *c = ring_cons_slot(&f->cq, (uint32_t)i);

		assert_true(f->nlog < LOG_MAX);
		memcpy(&f->log[f->nlog++], c, sizeof(f->log[0]));
		if (c->opcode == UCCL_OP_PUT && c->res == 0 && c->user_data < 16) {
			uint64_t o = f->put_off[c->user_data], l = f->put_len[c->user_data];

			if (memcmp(f->dst + o, f->src + o, l) != 0)
				fail_msg("put %llu completed before all of it was written",
					 (unsigned long long)c->user_data);
			f->put_checks++;
		}
	}
	ring_cons_release(&f->cq, (uint32_t)n);
	s = __atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE);
	while (f->sem_seen < s) {
		int k = (int)f->sem_seen++;

		assert_true(k < f->nwant);
		if (memcmp(f->dst + f->want_off[k], f->src + f->want_off[k], f->want_len[k]) != 0)
			fail_msg("signal %d applied before its puts' bytes were all written", k);
		f->sig_checks++;
	}
}

/* The daemon's part: carry parts to their lanes and reports back. */
static void carry(struct fx *f)
{
	int keep = 0;

	for (int i = 0; i < f->nparts; i++) {
		struct engine_lane_part *p = &f->parts[i];
		int r;

		if (f->hold_from && p->loff >= f->hold_from) {
			f->parts[keep++] = *p;    /* a slow lane thread */
			continue;
		}
		r = engine_lane_start(f->e[0][p->lane], p);
		if (r == -EAGAIN) {
			f->parts[keep++] = *p;
			continue;
		}
		if (r < 0)
			lane_done(f, p->origin, p->cookie, r);
	}
	f->nparts = keep;
	for (int i = 0; i < f->ndones; i++) {
		struct done_msg d = f->dones[i];
		int r = engine_lane_done(f->e[0][d.origin], d.cookie, d.res);

		if (r == -ENOENT)
			f->late_dones++;
		else
			assert_int_equal(r, 0);
	}
	f->ndones = 0;
}

static int step(struct fx *f)
{
	uint64_t t = UINT64_MAX;
	bool busy = false;

	/* a pass may leave descriptors in a ring (its byte budget): that is
	 * work now, which the deadline (engine_tx's) does not show */
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			busy |= engine_poll(f->e[h][k], f->now) > 0;
	carry(f);
	for (int h = 0; h < 2; h++) {
		for (int k = 0; k < NT; k++) {
			int n;

			do {
				n = engine_tx(f->e[h][k], f->now, f->txp, BATCH);
				for (int i = 0; i < n; i++)
					wire_put(f, h, k, &f->txp[i]);
			} while (n == BATCH);
		}
	}
	carry(f);
	observe(f);
	if (f->q.n)
		t = f->q.v[0].t;
	for (int h = 0; h < 2; h++) {
		for (int k = 0; k < NT; k++) {
			uint64_t d = engine_next_deadline(f->e[h][k]);

			if (d < t)
				t = d;
		}
	}
	if ((f->nparts && !f->hold_from) || f->ndones || busy)
		t = f->now;
	if (t == UINT64_MAX)
		return 0;
	if (t > f->now)
		f->now = t;
	while (f->q.n && f->q.v[0].t <= f->now) {
		struct pkt_ev k = pktheap_pop(&f->q);

		engine_rx(f->e[k.to][k.thr], 0, k.buf, k.len, f->now);
		free(k.buf);
		observe(f);
	}
	return 1;
}

static void run_until_cqes(struct fx *f, int n)
{
	uint64_t end = f->now + 5000 * MS;

	while (f->nlog < n) {
		if (f->now > end)
			fail_msg("%d of %d completions after 5 s", f->nlog, n);
		if (step(f) == 0 && f->nlog < n)
			fail_msg("idle with %d of %d completions", f->nlog, n);
	}
}

static struct tpchan_params chan_params(int host, int thr, uint64_t seed)
{
	return (struct tpchan_params){
		.tx_token = TOKEN(thr, 1, !host), .rx_token = TOKEN(thr, 1, host),
		.mtu = 4096, .chunk_bytes = 32768, .npaths = 4,
		.max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 4 << 20, .max_msgs = 256, .crc = true,
		.rto_init_ns = 1 * MS, .rto_min_ns = 200 * US, .rto_max_ns = 20 * MS,
		.max_retx = 12, .ack_delay_ns = 10 * US, .ack_every = 8, .dupthresh = 3,
		.path_loss_hold_ns = 500 * US, .seed = seed * 8 + (uint64_t)(host * NT + thr),
		.idle_release_ns = 100 * US,
	};
}

static void map_region(void **region, size_t *len, struct uccl_shm_hdr *hdr)
{
	*len = ring_region_layout(RING, RING, SEMS, hdr);
	assert_true(*len > 0);
	*region = aligned_alloc(4096, *len);
	assert_non_null(*region);
	memset(*region, 0, *len);
	memcpy(*region, hdr, sizeof(*hdr));
}

static void fx_free(struct fx *f)
{
	if (!f)
		return;
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			engine_free(f->e[h][k]);
	pktheap_free(&f->q);
	for (int i = 0; i < BATCH; i++)
		free(f->txbuf[i]);
	free(f->region);
	free(f->bregion);
	free(f->src);
	free(f->dst);
	free(f);
}

static struct fx *fx_open(void **state, uint64_t seed, uint32_t loss_ppm)
{
	struct fx *f;
	size_t blen;

	fx_free(*state);
	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	f->now = 1 * MS;
	f->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	f->loss_ppm = loss_ppm;
	f->dup_ppm = loss_ppm ? 5000 : 0;
	f->mem = (struct engine_mem_ops){ .copy = fx_copy, .arg = f };
	for (int i = 0; i < BATCH; i++) {
		f->txbuf[i] = malloc(9000);
		assert_non_null(f->txbuf[i]);
		f->txp[i].buf = f->txbuf[i];
	}
	f->src = malloc(REG_LEN);
	f->dst = malloc(REG_LEN);
	assert_non_null(f->src);
	assert_non_null(f->dst);
	for (size_t i = 0; i < REG_LEN; i++)
		f->src[i] = (uint8_t)(rnd(f) >> 56);
	memset(f->dst, 0, REG_LEN);
	map_region(&f->region, &f->region_len, &f->hdr);
	ring_side_init(&f->sq, f->region, f->hdr.sq_ctl_off, f->hdr.sq_off, RING, UCCL_SQE_SIZE);
	ring_side_init(&f->cq, f->region, f->hdr.cq_ctl_off, f->hdr.cq_off, RING, UCCL_CQE_SIZE);
	map_region(&f->bregion, &blen, &f->bhdr);
	f->bsems = (uint64_t *)((uint8_t *)f->bregion + f->bhdr.sem_off);
	for (int h = 0; h < 2; h++) {
		for (int k = 0; k < NT; k++) {
			struct engine_params p = {
				.max_endpoints = 8, .max_mrs = 4, .poll_batch = 64, .mem = &f->mem,
				.max_chans = 1, .lane_min_bytes = SPLIT_MIN,
				.lane_submit = lane_submit, .lane_done = lane_done, .lane_arg = f,
				.max_ep_inflight_bytes = h == 0 && k == 0 ? g_ep_inflight : 0,
				.max_remote_msgs = g_remote_msgs,
				.max_op_bytes = h ? g_b_max_op : 0,
			};
			struct tpchan_params cp = chan_params(h, k, seed);
			struct mr m = { .id = 1, .client_id = h ? CLIENT_B : CLIENT_A,
					.rkey = h ? KEY_B : 0xA1, .len = REG_LEN, .kind = MR_MAPPED,
					.base = h ? f->dst : f->src };
			struct engine *e = engine_new(&p);
			uint32_t ep = h ? EP_B : EP_A, cl = h ? CLIENT_B : CLIENT_A;

			assert_non_null(e);
			f->e[h][k] = e;
			assert_int_equal(engine_chan_add(e, 0, &cp), 0);
			assert_int_equal(engine_mr_add(e, &m), 0);
			if (k == 0) {
				struct engine_ep_params pp = {
					.ep_id = ep, .client_id = cl,
					.region = h ? f->bregion : f->region,
					.region_len = h ? blen : f->region_len,
					.hdr = h ? &f->bhdr : &f->hdr,
					.max_conns = SEMS, .max_outstanding = RING,
				};
				assert_int_equal(engine_ep_add(e, &pp), 0);
			} else {
				assert_int_equal(engine_shadow_add(e, ep, cl, SEMS, RING), 0);
			}
			/* conn 0 of both; lane sides share their owner's wire
			 * id, as the daemon binds them (daemon/lanes.c) */
			assert_int_equal(engine_rconn_add(e, ep, 0, WIRE(0, h + 1), 0), 0);
		}
	}
	for (int k = 0; k < NT; k++) {
		assert_int_equal(engine_rconn_connect(f->e[0][k], EP_A, 0, EP_B, WIRE(0, 2)), 0);
		assert_int_equal(engine_rconn_connect(f->e[1][k], EP_B, 0, EP_A, WIRE(0, 1)), 0);
	}
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 0, NT - 1), 0);
	return f;
}

static int teardown(void **state)
{
	fx_free(*state);
	*state = NULL;
	return 0;
}

static void submit(struct fx *f, struct uccl_sqe s)
{
	assert_true(ring_prod_space(&f->sq) > 0);
	memcpy(ring_prod_slot(&f->sq, 0), &s, sizeof(s));
	ring_prod_publish(&f->sq, 1);
}

static void put(struct fx *f, uint64_t off, uint64_t len, uint64_t ud)
{
	assert_true(ud < 16);
	f->put_off[ud] = off;
	f->put_len[ud] = len;
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_PUT, .conn = 0, .lmr = 1, .loff = off,
				     .rkey = KEY_B, .roff = off, .len = len, .user_data = ud });
}

/* A signal, and the range that must be written when it is applied. */
static void signal_after(struct fx *f, uint64_t off, uint64_t len, uint64_t ud)
{
	assert_true(f->nwant < 8);
	f->want_off[f->nwant] = off;
	f->want_len[f->nwant++] = len;
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_SIGNAL, .conn = 0, .user_data = ud });
}

/* A put that raises the semaphore itself (UCCL_SQE_F_SIGNAL): it and the
 * range before it must be written when that is applied. */
static void put_signal(struct fx *f, uint64_t off, uint64_t len, uint64_t ud)
{
	assert_true(f->nwant < 8 && ud < 16);
	f->want_off[f->nwant] = 0;
	f->want_len[f->nwant++] = off + len;
	f->put_off[ud] = off;
	f->put_len[ud] = len;
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_PUT, .flags = UCCL_SQE_F_SIGNAL, .conn = 0,
				     .lmr = 1, .loff = off, .rkey = KEY_B, .roff = off, .len = len,
				     .user_data = ud });
}

static bool has_cqe(struct fx *f, uint64_t ud)
{
	for (int i = 0; i < f->nlog; i++)
		if (f->log[i].user_data == ud)
			return true;
	return false;
}

static const struct uccl_cqe *cqe(struct fx *f, uint64_t ud)
{
	for (int i = 0; i < f->nlog; i++)
		if (f->log[i].user_data == ud)
			return &f->log[i];
	fail_msg("no completion for %llu", (unsigned long long)ud);
	return NULL;
}

static uint64_t rx_delivered(struct fx *f, int thr)
{
	return engine_stats(f->e[1][thr])->rx_delivered;
}

/* A put over the threshold lands whole, a third through each lane's
 * engines on both hosts; one under it goes alone. */
static void test_split_put(void **state)
{
	struct fx *f = fx_open(state, 1, 0);
	uint64_t len = 6 * MiB + 12345;

	/* the lanes are slower than the owner's own part: the put must
	 * still wait for them */
	f->lane_delay[1] = f->lane_delay[2] = 500 * US;
	put(f, 0, len, 1);
	put(f, 7 * MiB, 512 * KiB, 2);
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 1)->res, 0);
	assert_int_equal(cqe(f, 1)->len, len);
	assert_int_equal(cqe(f, 2)->res, 0);
	assert_int_equal(cqe(f, 2)->len, 512 * KiB);
	assert_memory_equal(f->dst, f->src, len);
	assert_memory_equal(f->dst + 7 * MiB, f->src + 7 * MiB, 512 * KiB);
	assert_int_equal(engine_stats(f->e[0][0])->lane_splits, 1);
	assert_int_equal(engine_stats(f->e[0][0])->lane_parts, NT - 1);
	for (int k = 1; k < NT; k++) {
		/* 2 MiB each, MTU 4096 */
		assert_true(rx_delivered(f, k) >= 2 * MiB / 4096);
		assert_true(engine_stats(f->e[0][k])->bytes >= 2 * MiB);
	}
	assert_int_equal(f->late_dones, 0);
	assert_int_equal(f->put_checks, 2);
}

/* Get len bytes of B's region as op 1, split over every lane: complete
 * and verified. */
static void split_get_1(struct fx *f, uint64_t len)
{
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_GET, .conn = 0, .lmr = 1, .loff = 0,
				     .rkey = KEY_B, .roff = 0, .len = len, .user_data = 1 });
	run_until_cqes(f, 1);
	assert_int_equal(cqe(f, 1)->res, 0);
	assert_int_equal(cqe(f, 1)->len, len);
	assert_memory_equal(f->src, f->dst, len);
	assert_int_equal(engine_stats(f->e[0][0])->lane_parts, NT - 1);
}

/* A get over the threshold is split too: every byte of the peer's region
 * lands, and it completes once, with its whole length. */
static void test_split_get(void **state)
{
	struct fx *f = fx_open(state, 10, 5000);
	uint64_t len = 5 * MiB + 777;

	for (size_t i = 0; i < REG_LEN; i++)
		f->dst[i] = (uint8_t)(i * 7 + 3);
	f->lane_delay[1] = f->lane_delay[2] = 500 * US;   /* the parts come last */
	split_get_1(f, len);
	for (int k = 1; k < NT; k++)
		assert_true(engine_stats(f->e[1][k])->remote_msgs > 0);   /* B's lanes answered */
}

/* The responder checks each request of a split get against its
 * max_op_bytes, not the whole get (uccl_put(3), EMSGSIZE): B's limit is
 * 2 MiB, and a get of 5 MiB split in three (its largest part, the owner's,
 * under 2 MiB) completes in full, while the same get sent unsplit (lanes
 * off here; lanes.c also sends one whole while many ops are in flight) is
 * refused. */
static void test_split_get_checked_per_part(void **state)
{
	struct fx *f;
	uint64_t len = 5 * MiB + 777;

	g_b_max_op = 2 * MiB;
	f = fx_open(state, 14, 0);
	g_b_max_op = 0;
	split_get_1(f, len);
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 0, 0), 0);   /* whole from now */
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_GET, .conn = 0, .lmr = 1, .loff = 0,
				     .rkey = KEY_B, .roff = 0, .len = len, .user_data = 2 });
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 2)->res, -EMSGSIZE);
	assert_int_equal(engine_stats(f->e[0][0])->lane_parts, NT - 1);
}

/* Signals wait at the sender for the parts before them, so the receiver
 * never applies one early; under loss, duplication and reordering. */
static void test_signal_behind_parts(void **state)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct fx *f = fx_open(state, seed, seed % 2 ? 10000 : 0);

		put(f, 0, 3 * MiB, 1);
		signal_after(f, 0, 3 * MiB, 2);
		put(f, 3 * MiB, 2 * MiB + 4096, 3);
		put(f, 5 * MiB + 4096, 64 * KiB, 4);
		signal_after(f, 0, 5 * MiB + 4096 + 64 * KiB, 5);
		run_until_cqes(f, 5);
		for (uint64_t ud = 1; ud <= 5; ud++)
			assert_int_equal(cqe(f, ud)->res, 0);
		assert_int_equal(f->sig_checks, 2);
		assert_int_equal(__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE), 2);
		assert_memory_equal(f->dst, f->src, 5 * MiB + 4096 + 64 * KiB);
	}
}

/* A put that raises the semaphore waits at the sender, as a signal does,
 * for the parts of the puts before it, and is not split itself (its own
 * parts would not be ordered before it). */
static void test_put_with_signal_behind_parts(void **state)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct fx *f = fx_open(state, seed, seed % 2 ? 10000 : 0);

		f->lane_delay[1] = f->lane_delay[2] = 2 * MS;   /* the parts come late */
		put(f, 0, 3 * MiB, 1);
		put_signal(f, 3 * MiB, 64, 2);
		put_signal(f, 3 * MiB + 64, 3 * MiB, 3);
		run_until_cqes(f, 3);
		for (uint64_t ud = 1; ud <= 3; ud++)
			assert_int_equal(cqe(f, ud)->res, 0);
		assert_int_equal(f->sig_checks, 2);
		assert_int_equal(__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE), 2);
		assert_memory_equal(f->dst, f->src, 6 * MiB + 64);
		assert_int_equal(engine_stats(f->e[0][0])->lane_splits, 1);
	}
}

/* A lane that cannot take its part fails the put with that error; the
 * other parts still land, and a later signal still goes. */
static void test_part_refused(void **state)
{
	struct fx *f = fx_open(state, 3, 0);
	uint64_t third = 1 * MiB;

	f->fail_lane = 2;
	put(f, 0, 3 * third, 1);
	signal_after(f, 0, 2 * third, 2);
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 1)->res, -ENOMEM);
	assert_int_equal(cqe(f, 1)->len, 0);
	assert_int_equal(cqe(f, 2)->res, 0);
	assert_memory_equal(f->dst, f->src, 2 * third);
	assert_int_equal(engine_stats(f->e[0][0])->lane_parts, 1);
	/* what moved is counted where it moved, though the put failed */
	assert_int_equal(engine_stats(f->e[0][0])->bytes, third);
	assert_int_equal(engine_stats(f->e[0][1])->bytes, third);
	assert_int_equal(engine_stats(f->e[0][2])->bytes, 0);
}

/* The owner's side is reset while a part is stuck on a cut lane wire: the
 * put waits for that part (its lane may still read the source), through
 * the side's removal, and fails with the reset once the part reported
 * (the lane's side is removed). It used to complete at once. */
static void test_reset_with_parts_out(void **state)
{
	struct fx *f = fx_open(state, 4, 0);

	f->lane_loss[2] = 1000000;
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 400 && engine_stats(f->e[1][1])->rx_delivered < 256; i++)
		step(f);
	assert_int_equal(f->nlog, 0);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	observe(f);
	assert_int_equal(f->nlog, 0);
	assert_int_equal(engine_conn_remove(f->e[0][0], EP_A, 0), 0);
	observe(f);
	assert_int_equal(f->nlog, 0);
	/* the lanes go with the connection: their parts report */
	for (int k = 1; k < NT; k++) {
		assert_int_equal(engine_stats(f->e[0][k])->shadow_eps, 1);
		assert_int_equal(engine_ep_remove(f->e[0][k], EP_A), 0);
		assert_int_equal(engine_stats(f->e[0][k])->shadow_eps, 0);
	}
	carry(f);
	observe(f);
	assert_int_equal(f->nlog, 1);
	assert_int_equal(cqe(f, 1)->res, -ECONNRESET);
	assert_int_equal(cqe(f, 1)->len, 0);
	assert_int_equal(f->late_dones, 0);
	struct engine_ep_stats st = { .outstanding = UINT32_MAX };

	assert_int_equal(engine_ep_stats(f->e[0][0], EP_A, &st), 0);
	assert_int_equal(st.outstanding, 0);   /* back in its pool */
}

/* A signal held behind a split put whose last part to report failed
 * because its lane lost the peer: the peer never raises it (its lane's
 * bytes were not written). The signal was let go as the put's last report
 * came, before the connection was reset for it, and went out on the
 * owner's channel. */
static void test_signal_after_lost_lane_not_raised(void **state)
{
	struct fx *f = fx_open(state, 9, 0);

	f->lane_loss[2] = 1000000;    /* lane 2's channel gives up */
	put(f, 0, 3 * MiB, 1);
	signal_after(f, 0, 3 * MiB, 2);
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 1)->res, -ETIMEDOUT);
	assert_int_equal(cqe(f, 2)->res, -ETIMEDOUT);
	for (int i = 0; i < 4000; i++)
		if (step(f) == 0)
			break;
	observe(f);
	assert_int_equal(__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE) & ~UCCL_SEM_RESET, 0);
}

/* A split get whose side is reset while a lane's part is out completes
 * only once that part reported: nothing writes its target after the
 * client saw it complete. It used to complete at once, and the part,
 * its lane wire back, then wrote the target. */
static void test_reset_get_waits_for_parts(void **state)
{
	struct fx *f = fx_open(state, 23, 0);
	uint8_t *snap = malloc(3 * MiB);

	assert_non_null(snap);
	f->lane_loss[2] = 1000000;    /* lane 2's part stays out */
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_GET, .conn = 0, .lmr = 1, .loff = 0,
				     .rkey = KEY_B, .roff = 0, .len = 3 * MiB, .user_data = 1 });
	for (int i = 0; i < 50; i++)
		step(f);
	assert_int_equal(engine_stats(f->e[0][0])->lane_splits, 1);
	assert_false(has_cqe(f, 1));
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	observe(f);
	assert_false(has_cqe(f, 1));
	f->lane_loss[2] = 0;
	run_until_cqes(f, 1);
	assert_int_equal(cqe(f, 1)->res, -ECONNRESET);
	memcpy(snap, f->src, 3 * MiB);
	for (int i = 0; i < 2000; i++)
		if (step(f) == 0)
			break;
	assert_memory_equal(snap, f->src, 3 * MiB);
	assert_int_equal(f->late_dones, 0);
	free(snap);
}

/* Index of ud's completion in the log. */
static int cqe_at(struct fx *f, uint64_t ud)
{
	for (int i = 0; i < f->nlog; i++)
		if (f->log[i].user_data == ud)
			return i;
	fail_msg("no completion for %llu", (unsigned long long)ud);
	return -1;
}

/* A flush and a strict put behind a split put whose side is reset with a
 * part out complete after it, not before (a flush says every earlier
 * source is free again). A helper's review found them completing at
 * once, with 0, while the put still waited. */
static void test_reset_keeps_order_behind_lingering(void **state)
{
	struct fx *f = fx_open(state, 25, 0);

	f->lane_loss[2] = 1000000;
	put(f, 0, 3 * MiB, 1);
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_FLUSH, .conn = 0, .user_data = 2 });
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_PUT, .conn = 0, .lmr = 1, .loff = 4 * MiB,
				     .rkey = KEY_B, .roff = 4 * MiB, .len = 64 * KiB,
				     .flags = UCCL_SQE_F_STRICT, .user_data = 3 });
	for (int i = 0; i < 200; i++)
		step(f);
	assert_int_equal(f->nlog, 0);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	observe(f);
	assert_int_equal(f->nlog, 0);
	f->lane_loss[2] = 0;
	run_until_cqes(f, 3);
	assert_int_equal(cqe(f, 1)->res, -ECONNRESET);
	assert_true(cqe_at(f, 1) < cqe_at(f, 2));
	assert_true(cqe_at(f, 2) < cqe_at(f, 3));
	struct engine_ep_stats st = { .outstanding = UINT32_MAX };

	assert_int_equal(engine_ep_stats(f->e[0][0], EP_A, &st), 0);
	assert_int_equal(st.outstanding, 0);
}

/* Two split puts reset with parts out: the later one's parts report first,
 * and it still completes after the earlier one. */
static void test_two_lingering_in_order(void **state)
{
	struct fx *f = fx_open(state, 26, 0);

	f->hold_from = 4 * MiB;       /* put 1's parts wait at the lane threads */
	f->lane_loss[2] = 1000000;    /* put 2's part on lane 2 stays out */
	put(f, 4 * MiB, 3 * MiB, 1);
	put(f, 0, 3 * MiB, 2);
	for (int i = 0; i < 200; i++)
		step(f);
	assert_int_equal(f->nlog, 0);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	f->lane_loss[2] = 0;
	for (int i = 0; i < 2000; i++)
		if (step(f) == 0)
			break;
	assert_int_equal(f->nlog, 0); /* 2's parts are in, 1's are not */
	f->hold_from = 0;
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 1)->res, -ECONNRESET);
	assert_int_equal(cqe(f, 2)->res, -ECONNRESET);
	assert_true(cqe_at(f, 1) < cqe_at(f, 2));
	assert_int_equal(f->late_dones, 0);
}

/* A lingering put's region removed: still one error completion, counted
 * once (a helper's review saw it counted as both reset and cancel). */
static void test_linger_counted_once(void **state)
{
	struct fx *f = fx_open(state, 27, 0);
	struct engine_ep_stats es = { .errors = UINT64_MAX };

	f->lane_loss[2] = 1000000;
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 50; i++)
		step(f);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	assert_int_equal(engine_mr_remove(f->e[0][0], CLIENT_A, 1), 0);
	for (int k = 1; k < NT; k++)
		assert_int_equal(engine_ep_remove(f->e[0][k], EP_A), 0);
	carry(f);
	observe(f);
	assert_int_equal(f->nlog, 1);
	assert_int_equal(engine_ep_stats(f->e[0][0], EP_A, &es), 0);
	assert_int_equal(es.errors, 1);
	assert_int_equal(engine_stats(f->e[0][0])->err_reset +
			 engine_stats(f->e[0][0])->err_canceled, 1);
}

/* The endpoint goes while its reset split put waits for a part: the put
 * goes with it, and what waits behind it, no completion, and the parts'
 * late reports find nothing. */
static void test_linger_dropped_with_endpoint(void **state)
{
	struct fx *f = fx_open(state, 24, 0);

	f->lane_loss[2] = 1000000;
	put(f, 0, 3 * MiB, 1);
	/* and behind it a flush and a second split put, blocked by the first */
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_FLUSH, .conn = 0, .user_data = 2 });
	put(f, 4 * MiB, 3 * MiB, 3);
	for (int i = 0; i < 50; i++)
		step(f);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	assert_int_equal(engine_ep_remove(f->e[0][0], EP_A), 0);
	f->lane_loss[2] = 0;
	for (int i = 0; i < 2000; i++)
		if (step(f) == 0)
			break;
	assert_int_equal(f->nlog, 0);
	assert_true(f->late_dones >= 1);
}

/* A lane's region goes away under its part: the part reports -ECANCELED
 * and the put fails with it. */
/* Error completions counted over host A's engines (ucclctl stats adds
 * them up). */
static uint64_t errors_on_a(struct fx *f)
{
	uint64_t n = 0;

	for (int t = 0; t < NT; t++) {
		const struct engine_stats *s = engine_stats(f->e[0][t]);

		n += s->err_inval + s->err_badconn + s->err_access + s->err_fault + s->err_msgsize +
		     s->err_reset + s->err_canceled;
	}
	return n;
}

static void test_region_removed_on_lane(void **state)
{
	struct fx *f = fx_open(state, 5, 0);

	f->lane_loss[1] = 1000000;    /* keeps lane 1's part in flight */
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 50; i++)
		step(f);
	assert_int_equal(f->nparts, 0);
	assert_int_equal(engine_mr_remove(f->e[0][1], CLIENT_A, 1), 0);
	f->lane_loss[1] = 0;
	run_until_cqes(f, 1);
	assert_int_equal(cqe(f, 1)->res, -ECANCELED);
	/* one completion, one error counted: by the owner that posted it,
	 * not again by the lane whose part failed */
	assert_int_equal(errors_on_a(f), 1);
}

/* The region removed on a lane thread before its part runs there (that
 * thread's removal ran before the owner's): the put fails with
 * -ECANCELED, as the owner's cancel says, not -EBADF. */
static void test_region_removed_before_part_runs(void **state)
{
	struct fx *f = fx_open(state, 5, 0);

	f->hold_from = 1;             /* the lanes' parts wait: slow lane threads */
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 50; i++)
		step(f);
	assert_true(f->nparts > 0);
	assert_int_equal(engine_mr_remove(f->e[0][1], CLIENT_A, 1), 0);
	f->hold_from = 0;
	run_until_cqes(f, 1);
	assert_int_equal(cqe(f, 1)->res, -ECANCELED);
}

/* A shadow endpoint removed under a part in flight (its lane thread's
 * removal can run before the owner's): the part reports a failure, so the
 * put fails instead of completing with bytes missing. */
static void test_shadow_removed_under_part(void **state)
{
	struct fx *f = fx_open(state, 7, 0);

	f->lane_loss[1] = 1000000;    /* lane 1's part stays in flight */
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 50; i++)
		step(f);
	assert_int_equal(f->nparts, 0);
	assert_int_equal(engine_ep_remove(f->e[0][1], EP_A), 0);
	run_until_cqes(f, 1);
	assert_int_equal(cqe(f, 1)->res, -ECANCELED);
	assert_int_equal(engine_stats(f->e[0][1])->err_fault, 0);
}

/* A signal held for the parts of a put before it goes once they are in:
 * it does not wait for the parts of puts issued after it. */
static void test_signal_not_held_by_later_parts(void **state)
{
	struct fx *f = fx_open(state, 8, 0);
	uint64_t end = 0;

	put(f, 0, 3 * MiB, 1);
	signal_after(f, 0, 3 * MiB, 2);
	put(f, 4 * MiB, 3 * MiB, 3);
	f->hold_from = 4 * MiB;       /* put 3's parts do not reach their lanes */
	end = f->now + 50 * MS;
	while (__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE) == 0 && f->now < end)
		assert_int_equal(step(f), 1);
	assert_int_equal(__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE), 1);
	assert_int_equal(f->sig_checks, 1);
	f->hold_from = 0;
	run_until_cqes(f, 3);
	for (uint64_t ud = 1; ud <= 3; ud++)
		assert_int_equal(cqe(f, ud)->res, 0);
}

/* A lane whose channel gives up on the peer takes the connection with it:
 * the put fails, and a later signal fails too rather than reporting bytes
 * written that never were. */
static void test_lane_lost_resets_connection(void **state)
{
	struct fx *f = fx_open(state, 9, 0);
	int r;

	f->lane_loss[2] = 1000000;
	put(f, 0, 3 * MiB, 1);
	run_until_cqes(f, 1);
	r = cqe(f, 1)->res;
	assert_true(r == -ETIMEDOUT || r == -ECONNRESET);
	signal_after(f, 0, 0, 2);
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 2)->res, -ECONNRESET);
	assert_int_equal(__atomic_load_n(&f->bsems[0], __ATOMIC_ACQUIRE), 0);
}

/* Split ops hold their cookies' message slots until every part reported,
 * and parts need slots at their lane engines, which split ops of their own
 * too: cookies may take at most half of the table, so that two threads
 * full of cookies, each waiting for the other's parts, cannot be. Twelve
 * puts meet a table of 16 (split before their endpoint's byte limit holds
 * them): at most 8 are split, and all land. */
static void test_split_cookies_take_at_most_half_the_slots(void **state)
{
	struct fx *f;

	g_remote_msgs = 16;
	g_ep_inflight = 64 * KiB;     /* own parts wait without slots: cookies only */
	f = fx_open(state, 12, 0);
	g_remote_msgs = 0;
	g_ep_inflight = 0;
	for (uint64_t ud = 1; ud <= 12; ud++)
		put(f, (ud % 7) * MiB, 1 * MiB, ud);
	run_until_cqes(f, 12);
	for (uint64_t ud = 1; ud <= 12; ud++)
		assert_int_equal(cqe(f, ud)->res, 0);
	assert_memory_equal(f->dst, f->src, 7 * MiB);
	assert_in_range(engine_stats(f->e[0][0])->lane_splits, 1, 8);
}

/* A split get whose own request still waits in its channel's queue (the
 * endpoint's in-flight budget is taken) is cancelled by its region's
 * removal: it completes only once its parts reported, and the endpoint
 * going afterwards leaves no part pointing at it (a helper's review found
 * it returned to its pool at once; ASan saw the late report write there). */
static void test_cancel_queued_split_get(void **state)
{
	struct fx *f;

	g_ep_inflight = 64 * KiB;
	f = fx_open(state, 11, 0);
	g_ep_inflight = 0;
	f->hold_from = 4 * MiB;       /* the get's parts wait at the lane threads */
	put(f, 0, 512 * KiB, 1);      /* not split: in flight, holds the budget */
	submit(f, (struct uccl_sqe){ .opcode = UCCL_OP_GET, .conn = 0, .lmr = 1, .loff = 4 * MiB,
				     .rkey = KEY_B, .roff = 0, .len = 3 * MiB, .user_data = 2 });
	engine_poll(f->e[0][0], f->now);
	assert_int_equal(engine_stats(f->e[0][0])->lane_splits, 1);
	assert_int_equal(engine_mr_remove(f->e[0][0], CLIENT_A, 1), 0);
	observe(f);
	assert_false(has_cqe(f, 2));  /* its parts are out */
	f->hold_from = 0;
	run_until_cqes(f, 2);
	assert_int_equal(cqe(f, 2)->res, -ECANCELED);
	assert_int_equal(engine_ep_remove(f->e[0][0], EP_A), 0);
	for (int i = 0; i < 200; i++)
		step(f);
	assert_int_equal(f->late_dones, 0);
}

/* A split put's parts still queued for their lane threads when the
 * connection is reset, removed and made again under the same conn id: the
 * put failed, and the parts, reaching the new connection's lane sides, are
 * refused, not written at the peer (they carry the old wire id). */
static void test_stale_part_on_reused_conn(void **state)
{
	struct fx *f = fx_open(state, 21, 0);
	bool written = false;

	f->hold_from = 1;             /* both lane parts (loff >= 1 MiB) stay queued */
	put(f, 0, 3 * MiB, 1);
	for (int i = 0; i < 400 && engine_stats(f->e[1][0])->rx_delivered < 256; i++)
		step(f);
	assert_int_equal(engine_conn_reset(f->e[0][0], EP_A, 0), 0);
	observe(f);
	assert_false(has_cqe(f, 1));  /* its parts are out */
	/* the daemon: conn removed on the owner and lanes, the peer's too */
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			assert_int_equal(engine_conn_remove(f->e[h][k], h ? EP_B : EP_A, 0), 0);
	memset(f->dst, 0, REG_LEN);
	/* the client connects again: conn id 0, a new wire generation */
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			assert_int_equal(engine_rconn_add(f->e[h][k], h ? EP_B : EP_A, 0,
							  WIRE(0, 20 + h + 1), 0), 0);
	for (int k = 0; k < NT; k++) {
		assert_int_equal(engine_rconn_connect(f->e[0][k], EP_A, 0, EP_B, WIRE(0, 22)), 0);
		assert_int_equal(engine_rconn_connect(f->e[1][k], EP_B, 0, EP_A, WIRE(0, 21)), 0);
	}
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 0, NT - 1), 0);
	assert_int_equal(f->nparts, 2);
	f->hold_from = 0;             /* the slow lane threads get to them now */
	for (int i = 0; i < 2000; i++)
		if (step(f) == 0)
			break;
	for (size_t i = MiB; i < 3 * MiB && !written; i++)
		written = f->dst[i] != 0;
	assert_false(written);
	/* refused on the new sides, they reported: the put failed */
	assert_int_equal(cqe(f, 1)->res, -ECONNRESET);
}

/* The daemon's close and reconnect of conn 0 on every engine of both
 * hosts, under wire generation gen. */
static void reconnect_all(struct fx *f, uint32_t gen)
{
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			engine_conn_remove(f->e[h][k], h ? EP_B : EP_A, 0);
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < NT; k++)
			assert_int_equal(engine_rconn_add(f->e[h][k], h ? EP_B : EP_A, 0,
							  WIRE(0, gen + h), 0), 0);
	for (int k = 0; k < NT; k++) {
		assert_int_equal(engine_rconn_connect(f->e[0][k], EP_A, 0, EP_B, WIRE(0, gen + 1)), 0);
		assert_int_equal(engine_rconn_connect(f->e[1][k], EP_B, 0, EP_A, WIRE(0, gen)), 0);
	}
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 0, NT - 1), 0);
}

/* Random puts, gets, strict ops and flushes against random resets,
 * reconnects under the same conn id, held parts, cut lane wires and the
 * region's removal and return, over 40 seeds (a helper's review wrote it
 * for the linger list): every op completes exactly once and nothing stays
 * outstanding; after the endpoint's removal (or engine_free) with ops
 * lingering, nothing completes. */
static void test_random_resets_and_parts(void **state)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct fx *f = fx_open(state, 100 + seed, 2000);
		uint64_t r = seed * 7919 + 1;
		int cnt[400] = { 0 };
		int nsub = 0, logged = 0;
		uint32_t gen = 10;
		bool mr_gone = false;
		struct engine_ep_stats es = { .outstanding = UINT32_MAX };

		for (int round = 0; round < 60; round++) {
			int a = (int)(xrnd(&r) % 10);

			if (a < 5 && nsub < 400 && ring_prod_space(&f->sq) > 0) {
				bool big = xrnd(&r) % 2;
				uint64_t len = big ? 3 * MiB : 64 * KiB;
				uint64_t off = (xrnd(&r) % 2) * 4 * MiB;
				uint8_t op = xrnd(&r) % 3 ? UCCL_OP_PUT : UCCL_OP_GET;
				uint8_t fl = xrnd(&r) % 3 == 0 ? UCCL_SQE_F_STRICT : 0;

				if (xrnd(&r) % 8 == 0) {
					op = UCCL_OP_FLUSH;
					submit(f, (struct uccl_sqe){ .opcode = op, .conn = 0,
						   .user_data = 1000 + nsub++ });
				} else {
					submit(f, (struct uccl_sqe){ .opcode = op, .conn = 0, .lmr = 1,
						   .loff = off, .rkey = KEY_B, .roff = off, .len = len,
						   .flags = fl, .user_data = 1000 + nsub++ });
				}
			} else if (a == 5) {
				engine_conn_reset(f->e[0][0], EP_A, 0);
			} else if (a == 6) {
				gen += 2;
				reconnect_all(f, gen);
			} else if (a == 7) {
				f->hold_from = f->hold_from ? 0 : 1;
			} else if (a == 8 && !mr_gone) {
				for (int k = 0; k < NT; k++)
					engine_mr_remove(f->e[0][k], CLIENT_A, 1);
				mr_gone = true;
			} else if (a == 8) {
				struct mr m = { .id = 1, .client_id = CLIENT_A, .rkey = 0xA1,
						.len = REG_LEN, .kind = MR_MAPPED, .base = f->src };

				for (int k = 0; k < NT; k++)
					assert_int_equal(engine_mr_add(f->e[0][k], &m), 0);
				mr_gone = false;
			} else {
				f->lane_loss[1 + xrnd(&r) % 2] = (uint32_t)(xrnd(&r) % 2) * 300000;
			}
			for (int i = 0, n = (int)(xrnd(&r) % 30); i < n; i++)
				step(f);
			if (seed % 3 == 0 && round == 40)
				break;
		}
		if (seed % 3 == 0) {
			/* abrupt: the owner endpoint goes (sometimes not even
			 * that: engine_free) with ops maybe lingering */
			int before;

			engine_conn_reset(f->e[0][0], EP_A, 0);
			observe(f);
			before = f->nlog;
			if (seed % 2)
				assert_int_equal(engine_ep_remove(f->e[0][0], EP_A), 0);
			f->hold_from = 0;
			f->lane_loss[1] = f->lane_loss[2] = 0;
			if (seed % 2) {
				for (int i = 0; i < 200000; i++)
					if (step(f) == 0)
						break;
				assert_int_equal(f->nlog, before);
			}
			continue;
		}
		f->hold_from = 0;
		f->lane_loss[1] = f->lane_loss[2] = 0;
		for (int i = 0; i < 200000; i++)
			if (step(f) == 0)
				break;
		for (int i = 0; i < f->nlog; i++) {
			uint64_t ud = f->log[i].user_data;

			assert_true(ud >= 1000 && ud < 1000 + (uint64_t)nsub);
			if (++cnt[ud - 1000] > 1)
				fail_msg("seed %llu: op %llu completed twice",
					 (unsigned long long)seed, (unsigned long long)ud);
			logged++;
		}
		assert_int_equal(engine_ep_stats(f->e[0][0], EP_A, &es), 0);
		if (es.outstanding != 0 || logged != nsub)
			fail_msg("seed %llu: %d of %d completed, %llu outstanding",
				 (unsigned long long)seed, logged, nsub,
				 (unsigned long long)es.outstanding);
		if (seed % 2)
			assert_int_equal(engine_ep_remove(f->e[0][0], EP_A), 0);
	}
}

/* engine_lane_start checks what a daemon could get wrong. */
static void test_lane_put_checks(void **state)
{
	struct fx *f = fx_open(state, 6, 0);
	struct engine_lane_part p = { .opcode = UCCL_OP_PUT, .lane = 1, .ep = EP_A, .conn = 0,
				      .wire = WIRE(0, 1), .client_id = CLIENT_A, .lmr = 1, .loff = 0,
				      .len = 4096, .rkey = KEY_B };
	struct engine_lane_part q;

	q = p;
	assert_int_equal(engine_lane_start(f->e[0][0], &q), -EINVAL);   /* not a shadow */
	q = p;
	q.conn = 3;
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -ENOTCONN);
	q = p;
	q.wire = WIRE(0, 9);           /* an earlier connection's part */
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -ECONNRESET);
	q = p;
	q.lmr = 2;                     /* not here: deregistered since the split */
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -ECANCELED);
	q = p;
	q.client_id = CLIENT_B;
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -EBADF);
	q = p;
	q.loff = REG_LEN - 100;
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -ERANGE);
	assert_int_equal(engine_lane_start(f->e[0][1], NULL), -EINVAL);
	q = p;
	q.opcode = UCCL_OP_SEND;
	assert_int_equal(engine_lane_start(f->e[0][1], &q), -EINVAL);
	assert_int_equal(engine_lane_done(f->e[0][0], 12345, 0), -ENOENT);
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 0, ENGINE_MAX_LANES + 1), -EINVAL);
	assert_int_equal(engine_rconn_lanes(f->e[0][0], EP_A, 5, 1), -ENOTCONN);
	assert_int_equal(engine_rconn_lanes(f->e[0][1], EP_A, 0, 1), -EINVAL);
	assert_int_equal(engine_shadow_add(f->e[0][1], EP_A, CLIENT_A, SEMS, RING), -EBUSY);
	/* the shadow has no figures of its own to report: its endpoint's
	 * engine answers (ucclctl endpoints showed the shadow's) */
	{
		struct engine_ep_stats es;

		assert_int_equal(engine_ep_stats(f->e[0][1], EP_A, &es), -ENOENT);
		assert_int_equal(engine_ep_stats(f->e[0][0], EP_A, &es), 0);
	}
	/* a shadow left by another endpoint with the id (its removal lost)
	 * is not one the daemon may take as made already */
	assert_int_equal(engine_shadow_add(f->e[0][1], EP_A, CLIENT_B, SEMS, RING), -EEXIST);
	assert_int_equal(engine_shadow_add(f->e[0][1], EP_A, CLIENT_A, SEMS + 1, RING), -EEXIST);
	assert_int_equal(engine_shadow_add(f->e[0][0], EP_A, CLIENT_A, SEMS, RING), -EEXIST);
	assert_int_equal(engine_conn_add(f->e[0][1], EP_A, 5, EP_A, 6), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_split_put, teardown),
		cmocka_unit_test_teardown(test_signal_behind_parts, teardown),
		cmocka_unit_test_teardown(test_signal_after_lost_lane_not_raised, teardown),
		cmocka_unit_test_teardown(test_put_with_signal_behind_parts, teardown),
		cmocka_unit_test_teardown(test_split_get, teardown),
		cmocka_unit_test_teardown(test_split_get_checked_per_part, teardown),
		cmocka_unit_test_teardown(test_part_refused, teardown),
		cmocka_unit_test_teardown(test_reset_with_parts_out, teardown),
		cmocka_unit_test_teardown(test_reset_get_waits_for_parts, teardown),
		cmocka_unit_test_teardown(test_linger_dropped_with_endpoint, teardown),
		cmocka_unit_test_teardown(test_reset_keeps_order_behind_lingering, teardown),
		cmocka_unit_test_teardown(test_two_lingering_in_order, teardown),
		cmocka_unit_test_teardown(test_linger_counted_once, teardown),
		cmocka_unit_test_teardown(test_random_resets_and_parts, teardown),
		cmocka_unit_test_teardown(test_region_removed_on_lane, teardown),
		cmocka_unit_test_teardown(test_region_removed_before_part_runs, teardown),
		cmocka_unit_test_teardown(test_shadow_removed_under_part, teardown),
		cmocka_unit_test_teardown(test_signal_not_held_by_later_parts, teardown),
		cmocka_unit_test_teardown(test_lane_lost_resets_connection, teardown),
		cmocka_unit_test_teardown(test_cancel_queued_split_get, teardown),
		cmocka_unit_test_teardown(test_split_cookies_take_at_most_half_the_slots, teardown),
		cmocka_unit_test_teardown(test_lane_put_checks, teardown),
		cmocka_unit_test_teardown(test_stale_part_on_reused_conn, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
