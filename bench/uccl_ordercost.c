/* SPDX-License-Identifier: MIT */
/*
 * uccl_ordercost: what per-operation ordering costs (issue #4, experiment
 * 6). Two engines in one process, one endpoint each, several connections
 * over one channel, joined by a wire model in virtual time: per-direction
 * serialisation at a line rate, a propagation delay plus a per-path skew
 * (path p arrives p * skew later, so sprayed chunks reorder), seeded random
 * loss in both directions. Host A keeps `depth` PUTs outstanding on every
 * connection (closed loop); a fraction f of them carries UCCL_SQE_F_STRICT
 * or UCCL_SQE_F_FENCE. Reports completed ops/s, goodput and completion
 * latency over a fixed virtual duration after a warm-up, median over seeds.
 *
 * Nothing reads a clock: the engines are sans-I/O and the time is the
 * wire's, so a seed gives the same numbers on any machine. Every completion
 * is checked (result, length, the target bytes equal the source, STRICT and
 * FENCE ops complete after every earlier op on their connection); any error
 * exits 1 rather than print a number. See docs/results/e6-ordering.md.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/ring.h"

#define US 1000ull
#define MS 1000000ull
#define BATCH 64
#define MAX_SEEDS 64
#define MAX_FRACS 16
#define EP_A 0u
#define EP_B 1u
#define CLIENT_A 1u
#define CLIENT_B 2u
#define KEY_B 0xB1B1B1B1B1B1B1B1ull
#define KEY_A 0xA1A1A1A1A1A1A1A1ull
#define TOKEN(to) (0x0dce000000000000ull | (uint64_t)(to))

struct opts {
	double rate_gbps;
	uint64_t prop_ns, skew_ns, warm_ns, dur_ns, size, slack_ns;
	uint32_t loss_ppm, npaths, mtu, conns, depth, dupthresh;
	uint32_t fracs[MAX_FRACS], nfracs;
	uint64_t seeds[MAX_SEEDS];
	uint32_t nseeds;
	int flags[2], nflags;          /* UCCL_SQE_F_STRICT and/or _FENCE */
	bool csv;
	bool corrupt;                  /* flip a target byte once: the check must catch it */
};

struct ev {
	uint64_t t, seq;
	uint8_t *buf;
	uint32_t len;
	uint8_t to;
};

/* One outstanding PUT of the closed loop: connection c, slot s. */
struct slot {
	uint64_t seq;                  /* issue order on its connection */
	uint64_t id;                   /* global, names the data pattern */
	uint64_t t_submit;
	uint8_t flags;
	bool busy;
};

struct side {
	struct engine *e;
	struct engine_mem_ops mem;
	void *region;
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
	uint8_t *buf;                  /* A: sources, B: targets */
};

struct bench {
	const struct opts *o;
	uint32_t frac;                 /* percent of ops flagged */
	int flag;
	uint64_t seed, rng, now, evseq, next_id;
	uint64_t free_ps[2];           /* a direction's link is busy until then (ps) */
	struct side h[2];
	struct ev *heap;
	size_t nheap, capheap;
	uint8_t *txbuf[BATCH];
	struct engine_txpkt txp[BATCH];
	struct slot *slots;            /* conns x depth */
	uint64_t *next_seq;            /* per connection */
	uint64_t *nissued;             /* per connection: flag decision counter */
	uint64_t *lat;                 /* measured completions' latency (ns) */
	size_t nlat, caplat;
	uint64_t pkts[2], lost[2];
	uint64_t ooo;                  /* measured completions that overtook an earlier op */
	const char *err;               /* first error, or NULL */
	char errbuf[256];
};

/* doubles, so that medians take any field alike */
struct result {
	double ops_s, gbps, p50_us, p99_us, mean_us;
	double retx, timeouts;
	double ooo_pct;                /* completions that overtook an earlier op, % */
};

/* ---- errors: record the first, stop the run ---- */

static void fail(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	if (b->err)
		return;
	va_start(ap, fmt);
	vsnprintf(b->errbuf, sizeof(b->errbuf), fmt, ap);
	va_end(ap);
	b->err = b->errbuf;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p) {
		fprintf(stderr, "uccl_ordercost: out of memory\n");
		exit(2);
	}
	return p;
}

/* ---- randomness (xorshift*, seeded) ---- */

static uint64_t rnd(struct bench *b)
{
	uint64_t x = b->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	b->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static bool chance(struct bench *b, uint32_t ppm)
{
	return ppm && (rnd(b) >> 11) % 1000000 < ppm;
}

/* ---- event heap (arrivals by time, then by send order) ---- */

static bool ev_less(const struct ev *x, const struct ev *y)
{
	return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static void heap_push(struct bench *b, struct ev e)
{
	size_t i;

	if (b->nheap == b->capheap) {
		b->capheap = b->capheap ? 2 * b->capheap : 4096;
		b->heap = realloc(b->heap, b->capheap * sizeof(*b->heap));
		if (!b->heap) {
			fprintf(stderr, "uccl_ordercost: out of memory\n");
			exit(2);
		}
	}
	i = b->nheap++;
	while (i > 0 && ev_less(&e, &b->heap[(i - 1) / 2])) {
		b->heap[i] = b->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	b->heap[i] = e;
}

static struct ev heap_pop(struct bench *b)
{
	struct ev top = b->heap[0], last = b->heap[--b->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= b->nheap)
			break;
		if (c + 1 < b->nheap && ev_less(&b->heap[c + 1], &b->heap[c]))
			c++;
		if (!ev_less(&b->heap[c], &last))
			break;
		b->heap[i] = b->heap[c];
		i = c;
	}
	if (b->nheap)
		b->heap[i] = last;
	return top;
}

/* ---- the wire ---- */

/* A packet leaves host `from` on `path`: it waits for the link (FIFO),
 * takes len * 8 / rate to serialise (UDP payload bytes; no header
 * overhead is modelled), may be lost, and arrives prop + path * skew
 * after its last bit left. */
static void wire_put(struct bench *b, int from, const uint8_t *pkt, uint32_t len, uint16_t path)
{
	const struct opts *o = b->o;
	uint64_t start = b->now * 1000 > b->free_ps[from] ? b->now * 1000 : b->free_ps[from];
	struct ev e = { .len = len, .to = (uint8_t)!from };

	b->free_ps[from] = start + (uint64_t)((double)len * 8 * 1000 / o->rate_gbps + 0.5);
	b->pkts[from]++;
	if (chance(b, o->loss_ppm)) {
		b->lost[from]++;
		return;
	}
	e.t = (b->free_ps[from] + 999) / 1000 + o->prop_ns + path * o->skew_ns;
	e.seq = b->evseq++;
	e.buf = malloc(len);
	if (!e.buf) {
		fprintf(stderr, "uccl_ordercost: out of memory\n");
		exit(2);
	}
	memcpy(e.buf, pkt, len);
	heap_push(b, e);
}

/* Host `s` sends everything it may now. */
static void drain(struct bench *b, int s)
{
	struct engine *e = b->h[s].e;

	for (;;) {
		int k, sent = 0;

		do {
			k = engine_tx(e, b->now, b->txp, BATCH);
			for (int i = 0; i < k; i++) {
				if (b->txp[i].len > b->o->mtu)
					fail(b, "host %d: packet of %u bytes over the mtu", s, b->txp[i].len);
				wire_put(b, s, b->txp[i].buf, b->txp[i].len, b->txp[i].path);
			}
			sent += k;
		} while (k == BATCH);
		if (engine_next_deadline(e) > b->now)
			return;
		if (!sent) {
			/* a deadline that stays due with nothing to send would spin */
			fail(b, "host %d: deadline %" PRIu64 " stays due at %" PRIu64 " with nothing to send",
			     s, engine_next_deadline(e), b->now);
			return;
		}
	}
}

/* ---- memory and hosts ---- */

static int mem_copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		    uint64_t src_off, uint64_t len)
{
	struct bench *b = arg;

	/* the engine promises checked ranges: a bench run that breaks it is void */
	if (dst_off > dst->len || len > dst->len - dst_off || src_off > src->len ||
	    len > src->len - src_off) {
		fail(b, "engine copy outside a region");
		return -EFAULT;
	}
	memcpy((uint8_t *)dst->base + dst_off, (const uint8_t *)src->base + src_off, len);
	return 0;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static int side_open(struct bench *b, int s)
{
	const struct opts *o = b->o;
	struct side *h = &b->h[s];
	/* 64: above the ring's minimum size */
	uint32_t ring = pow2_at_least(o->conns * o->depth + 64);
	uint64_t buflen = (uint64_t)o->conns * o->depth * o->size;
	struct engine_params ep = {
		.max_endpoints = 2, .max_mrs = 2, .poll_batch = 64, .mem = &h->mem,
		.max_chans = 1,
	};
	/* the daemon's channel defaults (daemon/rconn.c, conf.c) except the
	 * mtu and rto_min, which are those of docs/results' experiments */
	struct tpchan_params cp = {
		.tx_token = TOKEN(!s), .rx_token = TOKEN(s),
		.mtu = o->mtu, .chunk_bytes = 32768, .npaths = o->npaths,
		.max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 16ull << 20, .max_msgs = 1024,
		.rto_min_ns = 100 * US, .rto_init_ns = 400 * US,
		.dupthresh = o->dupthresh, .cc_delay_slack_ns = o->slack_ns,
		.seed = b->seed * 2 + (uint64_t)s,
	};
	struct engine_ep_params pp;
	struct mr m = { .id = 1, .client_id = s ? CLIENT_B : CLIENT_A, .rkey = s ? KEY_B : KEY_A,
			.len = buflen, .kind = MR_MAPPED };
	size_t len;
	int r;

	h->mem = (struct engine_mem_ops){ .copy = mem_copy, .arg = b };
	h->e = engine_new(&ep);
	if (!h->e)
		return -ENOMEM;
	len = ring_region_layout(ring, ring, o->conns, &h->hdr);
	if (!len)
		return -EINVAL;
	h->region = aligned_alloc(4096, len);
	h->buf = calloc(1, buflen);
	if (!h->region || !h->buf)
		return -ENOMEM;
	memset(h->region, 0, len);
	memcpy(h->region, &h->hdr, sizeof(h->hdr));
	ring_side_init(&h->sq, h->region, h->hdr.sq_ctl_off, h->hdr.sq_off, ring, UCCL_SQE_SIZE);
	ring_side_init(&h->cq, h->region, h->hdr.cq_ctl_off, h->hdr.cq_off, ring, UCCL_CQE_SIZE);
	pp = (struct engine_ep_params){
		.ep_id = s ? EP_B : EP_A, .client_id = m.client_id, .region = h->region,
		.region_len = len, .hdr = &h->hdr, .max_conns = o->conns, .max_outstanding = ring,
	};
	r = engine_ep_add(h->e, &pp);
	if (r == 0)
		r = engine_chan_add(h->e, 0, &cp);
	m.base = h->buf;
	if (r == 0)
		r = engine_mr_add(h->e, &m);
	return r;
}

static int bench_open(struct bench *b)
{
	const struct opts *o = b->o;
	int r;

	b->rng = b->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	b->now = 1 * MS;
	for (int i = 0; i < BATCH; i++) {
		b->txbuf[i] = xcalloc(1, o->mtu);
		b->txp[i].buf = b->txbuf[i];
	}
	b->slots = xcalloc((size_t)o->conns * o->depth, sizeof(*b->slots));
	b->next_seq = xcalloc(o->conns, sizeof(uint64_t));
	b->nissued = xcalloc(o->conns, sizeof(uint64_t));
	for (int s = 0; s < 2; s++) {
		r = side_open(b, s);
		if (r < 0)
			return r;
	}
	/* connection c is conn c on both sides; wire ids carry a generation */
	for (uint32_t c = 0; c < o->conns; c++) {
		uint32_t wa = c | 1u << 16, wb = c | 2u << 16;

		if ((r = engine_rconn_add(b->h[0].e, EP_A, c, wa, 0)) < 0 ||
		    (r = engine_rconn_add(b->h[1].e, EP_B, c, wb, 0)) < 0 ||
		    (r = engine_rconn_connect(b->h[0].e, EP_A, c, EP_B, wb)) < 0 ||
		    (r = engine_rconn_connect(b->h[1].e, EP_B, c, EP_A, wa)) < 0)
			return r;
	}
	return 0;
}

static void bench_close(struct bench *b)
{
	for (int s = 0; s < 2; s++) {
		engine_free(b->h[s].e);
		free(b->h[s].region);
		free(b->h[s].buf);
	}
	for (size_t i = 0; i < b->nheap; i++)
		free(b->heap[i].buf);
	free(b->heap);
	for (int i = 0; i < BATCH; i++)
		free(b->txbuf[i]);
	free(b->slots);
	free(b->next_seq);
	free(b->nissued);
	free(b->lat);
}

/* ---- the closed loop ---- */

/* Word i of op id's data: differs from every other op's in every word, so
 * a target left with an earlier op's bytes (or zeros) is caught. */
static uint64_t pattern_word(uint64_t id, uint64_t i)
{
	uint64_t x = (id + 1) * 0x9e3779b97f4a7c15ull ^ (i + 1) * 0xbf58476d1ce4e5b9ull;

	return x ^ x >> 31;
}

static void fill(uint8_t *p, uint64_t len, uint64_t id)
{
	uint64_t w, i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = pattern_word(id, i / 8);
		memcpy(p + i, &w, 8);
	}
	w = pattern_word(id, i / 8);
	memcpy(p + i, &w, len - i);
}

/* Exactly frac% of each connection's ops are flagged, spread evenly. */
static uint8_t pick_flags(struct bench *b, uint32_t c)
{
	uint64_t n = b->nissued[c]++;

	return (n + 1) * b->frac / 100 > n * b->frac / 100 ? (uint8_t)b->flag : 0;
}

static void submit(struct bench *b, uint32_t c, uint32_t s)
{
	const struct opts *o = b->o;
	struct side *a = &b->h[0];
	uint32_t idx = c * o->depth + s;
	struct slot *sl = &b->slots[idx];
	uint64_t off = (uint64_t)idx * o->size;
	struct uccl_sqe q = {
		.opcode = UCCL_OP_PUT, .conn = c, .user_data = idx, .lmr = 1,
		.loff = off, .rkey = KEY_B, .roff = off, .len = o->size,
	};

	if (ring_prod_space(&a->sq) == 0) {
		fail(b, "submission ring full");
		return;
	}
	sl->id = b->next_id++;
	sl->seq = b->next_seq[c]++;
	sl->flags = pick_flags(b, c);
	sl->t_submit = b->now;
	sl->busy = true;
	q.flags = sl->flags;
	fill(a->buf + off, o->size, sl->id);
	memcpy(ring_prod_slot(&a->sq, 0), &q, sizeof(q));
	ring_prod_publish(&a->sq, 1);
}

static void record_latency(struct bench *b, uint64_t ns)
{
	if (b->nlat == b->caplat) {
		b->caplat = b->caplat ? 2 * b->caplat : 65536;
		b->lat = realloc(b->lat, b->caplat * sizeof(*b->lat));
		if (!b->lat) {
			fprintf(stderr, "uccl_ordercost: out of memory\n");
			exit(2);
		}
	}
	b->lat[b->nlat++] = ns;
}

/* Check one completion and put the next op in its place. */
static void complete(struct bench *b, const struct uccl_cqe *q)
{
	const struct opts *o = b->o;
	uint64_t idx = q->user_data;
	struct slot *sl;
	uint32_t c;
	uint64_t off;
	bool overtook = false;

	if (idx >= (uint64_t)o->conns * o->depth || !b->slots[idx].busy) {
		fail(b, "completion for unknown op %" PRIu64, idx);
		return;
	}
	sl = &b->slots[idx];
	c = (uint32_t)(idx / o->depth);
	off = idx * o->size;
	if (q->res != 0 || q->opcode != UCCL_OP_PUT || q->len != o->size) {
		fail(b, "conn %u op %" PRIu64 ": res %d opcode %u len %" PRIu64, c, sl->seq, q->res,
		     q->opcode, q->len);
		return;
	}
	if (o->corrupt && b->next_id == (uint64_t)o->conns * o->depth + 10)
		b->h[1].buf[off + o->size / 2] ^= 1;
	if (memcmp(b->h[1].buf + off, b->h[0].buf + off, o->size) != 0) {
		fail(b, "conn %u op %" PRIu64 ": target bytes differ from the source", c, sl->seq);
		return;
	}
	/* STRICT completes, FENCE starts (hence completes) after every earlier
	 * op; a relaxed op may overtake (counted: what STRICT would hold back) */
	for (uint32_t k = 0; k < o->depth; k++) {
		const struct slot *e = &b->slots[c * o->depth + k];

		if (!e->busy || e->seq >= sl->seq)
			continue;
		if (sl->flags) {
			fail(b, "conn %u: %s op %" PRIu64 " completed before op %" PRIu64, c,
			     sl->flags & UCCL_SQE_F_STRICT ? "strict" : "fenced", sl->seq, e->seq);
			return;
		}
		overtook = true;
	}
	sl->busy = false;
	if (b->now >= b->o->warm_ns + 1 * MS && b->now < b->o->warm_ns + b->o->dur_ns + 1 * MS) {
		record_latency(b, b->now - sl->t_submit);
		b->ooo += overtook;
	}
	submit(b, c, (uint32_t)(idx % o->depth));
}

/* Reap A's completions (B, only a target, has none). Returns how many. */
static int reap(struct bench *b)
{
	struct side *h;
	int n, total = 0;

	for (int s = 0; s < 2; s++) {
		h = &b->h[s];
		n = ring_cons_avail(&h->cq);
		if (n < 0) {
			fail(b, "host %d: completion ring corrupt", s);
			return 0;
		}
		for (int i = 0; i < n; i++) {
			struct uccl_cqe q;

			memcpy(&q, ring_cons_slot(&h->cq, (uint32_t)i), sizeof(q));
			if (s == 1)
				fail(b, "host B got a completion");
			else
				complete(b, &q);
		}
		ring_cons_release(&h->cq, (uint32_t)n);
		total += n;
	}
	return total;
}

static void run(struct bench *b)
{
	uint64_t end = b->o->warm_ns + b->o->dur_ns + 1 * MS;

	for (uint32_t c = 0; c < b->o->conns; c++)
		for (uint32_t s = 0; s < b->o->depth; s++)
			submit(b, c, s);
	while (!b->err && b->now < end) {
		uint64_t t = UINT64_MAX;
		int busy;

		/* at this instant: take submissions, post completions, refill,
		 * send; until nothing more happens */
		do {
			busy = 0;
			for (int s = 0; s < 2; s++)
				busy += engine_poll(b->h[s].e, b->now) > 0;
			busy += reap(b);
			for (int s = 0; s < 2; s++)
				drain(b, s);
			busy += reap(b);   /* building packets can complete ops too */
		} while (busy && !b->err);
		if (b->nheap)
			t = b->heap[0].t;
		for (int s = 0; s < 2; s++) {
			uint64_t d = engine_next_deadline(b->h[s].e);

			if (d < t)
				t = d;
		}
		if (t == UINT64_MAX) {
			fail(b, "idle with ops outstanding at %" PRIu64 " ns", b->now);
			break;
		}
		if (t > b->now)
			b->now = t;
		while (b->nheap && b->heap[0].t <= b->now) {
			struct ev e = heap_pop(b);

			/* a refused packet is the engine's business (counted there) */
			(void)engine_rx(b->h[e.to].e, 0, e.buf, e.len, b->now);
			free(e.buf);
		}
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

/* Nearest-rank percentile of sorted v. */
static uint64_t pct(const uint64_t *v, size_t n, unsigned p)
{
	size_t k = (n * p + 99) / 100;

	return n ? v[k ? k - 1 : 0] : 0;
}

static int run_one(const struct opts *o, int flag, uint32_t frac, uint64_t seed, struct result *res)
{
	struct bench b = { .o = o, .flag = flag, .frac = frac, .seed = seed };
	struct engine_chan_stats cs;
	double sum = 0;
	int r = bench_open(&b);

	if (r < 0) {
		fprintf(stderr, "uccl_ordercost: setup failed: %s\n", strerror(-r));
		bench_close(&b);
		return -1;
	}
	run(&b);
	if (!b.err && engine_stats(b.h[0].e)->err_fault + engine_stats(b.h[1].e)->err_fault)
		fail(&b, "memory copies failed");
	if (!b.err && b.nlat == 0)
		fail(&b, "no op completed in the measured interval");
	if (b.err) {
		fprintf(stderr, "uccl_ordercost: %s f=%u%% seed %" PRIu64 ": %s\n",
			flag == UCCL_SQE_F_FENCE ? "fence" : "strict", frac, seed, b.err);
		bench_close(&b);
		return -1;
	}
	qsort(b.lat, b.nlat, sizeof(*b.lat), cmp_u64);
	for (size_t i = 0; i < b.nlat; i++)
		sum += (double)b.lat[i];
	*res = (struct result){
		.ops_s = (double)b.nlat * 1e9 / (double)o->dur_ns,
		.gbps = (double)b.nlat * (double)o->size * 8 / (double)o->dur_ns,
		.p50_us = (double)pct(b.lat, b.nlat, 50) / 1000,
		.p99_us = (double)pct(b.lat, b.nlat, 99) / 1000,
		.mean_us = sum / (double)b.nlat / 1000,
		.ooo_pct = (double)b.ooo * 100 / (double)b.nlat,
	};
	engine_chan_stats(b.h[0].e, 0, &cs);
	res->retx = (double)cs.tp.retx_pkts;
	res->timeouts = (double)cs.tp.retx_timeouts;
	bench_close(&b);
	return 0;
}

/* ---- medians and output ---- */

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;

	return a < c ? -1 : a > c;
}

/* Median of n values (mean of the middle two when n is even). */
static double median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double med_field(const struct result *r, uint32_t n, size_t off)
{
	double v[MAX_SEEDS];

	for (uint32_t i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&r[i] + off, sizeof(double));
	return median(v, n);
}

#define MED(field) med_field(r, n, offsetof(struct result, field))

static void print_row(const struct opts *o, const char *flag, uint32_t frac, const struct result *r,
		      uint32_t n)
{
	double ops = MED(ops_s), gbps = MED(gbps), p50 = MED(p50_us), p99 = MED(p99_us);
	double mean = MED(mean_us);
	double retx = MED(retx), tmo = MED(timeouts), ooo = MED(ooo_pct);

	if (o->csv) {
		for (uint32_t i = 0; i < n; i++)
			printf("%u,%u,%" PRIu64 ",%s,%u,%" PRIu64 ",%.0f,%.2f,%.2f,%.2f,%.2f,%.0f,%.0f,"
			       "%.2f\n", o->conns, o->loss_ppm, o->skew_ns, flag, frac, o->seeds[i],
			       r[i].ops_s, r[i].gbps, r[i].p50_us, r[i].p99_us, r[i].mean_us, r[i].retx,
			       r[i].timeouts, r[i].ooo_pct);
		printf("%u,%u,%" PRIu64 ",%s,%u,median,%.0f,%.2f,%.2f,%.2f,%.2f,%.0f,%.0f,%.2f\n",
		       o->conns, o->loss_ppm, o->skew_ns, flag, frac, ops, gbps, p50, p99, mean, retx,
		       tmo, ooo);
		return;
	}
	printf("%-6s %4u%% %10.0f %8.2f %9.2f %9.2f %9.2f %8.0f %6.0f %7.2f\n", flag, frac, ops, gbps,
	       p50, p99, mean, retx, tmo, ooo);
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uccl_ordercost [options]\n"
		"  --flag strict|fence|both  which ordering flag the fraction carries (both)\n"
		"  --frac LIST      percent of ops flagged, comma separated (0,25,50,75,100)\n"
		"  --seeds A-B|LIST seeds; the table shows medians over them (1-5)\n"
		"  --loss PPM       random loss per packet, both directions (0)\n"
		"  --skew NS        path p arrives p*NS later (0: no reordering)\n"
		"  --paths N        paths the channel sprays chunks over (8)\n"
		"  --rate GBPS      line rate per direction (100)\n"
		"  --prop NS        propagation delay (1000)\n"
		"  --conns N        connections over the one channel (4)\n"
		"  --depth N        PUTs outstanding per connection (4)\n"
		"  --size BYTES     PUT size (65536)\n"
		"  --mtu BYTES      channel mtu (4096)\n"
		"  --dupthresh N    channel dupthresh (3)\n"
		"  --cc-slack US    window CC's cc_delay_slack (500, the daemon's)\n"
		"  --warmup US      virtual warm-up, not measured (1000)\n"
		"  --duration US    virtual time measured (10000)\n"
		"  --csv            per-seed and median rows as CSV\n"
		"  --corrupt        flip one received byte (checks the data check; exits 1)\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, max, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_fracs(const char *s, struct opts *o)
{
	char buf[256], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	o->nfracs = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nfracs == MAX_FRACS || parse_u32(tok, 100, &o->fracs[o->nfracs]) < 0)
			return -1;
		o->nfracs++;
	}
	return o->nfracs ? 0 : -1;
}

static int parse_seeds(const char *s, struct opts *o)
{
	char buf[256], *tok, *save = NULL, *dash;
	uint64_t a, z;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	o->nseeds = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		dash = strchr(tok, '-');
		if (dash)
			*dash = 0;
		if (parse_u64(tok, UINT32_MAX, &a) < 0)
			return -1;
		z = a;
		if (dash && parse_u64(dash + 1, UINT32_MAX, &z) < 0)
			return -1;
		if (z < a || z - a >= MAX_SEEDS)
			return -1;
		for (uint64_t v = a; v <= z; v++) {
			if (o->nseeds == MAX_SEEDS)
				return -1;
			o->seeds[o->nseeds++] = v;
		}
	}
	return o->nseeds ? 0 : -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "flag", 1, 0, 'f' }, { "frac", 1, 0, 'F' }, { "seeds", 1, 0, 's' },
		{ "loss", 1, 0, 'l' }, { "skew", 1, 0, 'k' }, { "paths", 1, 0, 'p' },
		{ "rate", 1, 0, 'r' }, { "prop", 1, 0, 'P' }, { "conns", 1, 0, 'c' },
		{ "depth", 1, 0, 'd' }, { "size", 1, 0, 'z' }, { "mtu", 1, 0, 'm' },
		{ "dupthresh", 1, 0, 'D' }, { "warmup", 1, 0, 'w' }, { "duration", 1, 0, 't' },
		{ "cc-slack", 1, 0, 'S' }, { "csv", 0, 0, 'C' }, { "help", 0, 0, 'h' }, { "corrupt", 0, 0, 'X' }, { 0, 0, 0, 0 },
	};
	uint64_t v;
	char *end;
	int ch, bad = 0;

	*o = (struct opts){
		.rate_gbps = 100, .prop_ns = 1000, .warm_ns = 1 * MS, .dur_ns = 10 * MS,
		.size = 65536, .npaths = 8, .mtu = 4096, .conns = 4, .depth = 4, .dupthresh = 3,
		.slack_ns = 500 * US, .fracs = { 0, 25, 50, 75, 100 }, .nfracs = 5, .seeds = { 1, 2, 3, 4, 5 }, .nseeds = 5,
		.flags = { UCCL_SQE_F_STRICT, UCCL_SQE_F_FENCE }, .nflags = 2,
	};
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (!strcmp(optarg, "strict"))
				o->flags[0] = UCCL_SQE_F_STRICT, o->nflags = 1;
			else if (!strcmp(optarg, "fence"))
				o->flags[0] = UCCL_SQE_F_FENCE, o->nflags = 1;
			else if (strcmp(optarg, "both"))
				bad = 1;
			break;
		case 'F': bad |= parse_fracs(optarg, o) < 0; break;
		case 's': bad |= parse_seeds(optarg, o) < 0; break;
		case 'l': bad |= parse_u32(optarg, 1000000, &o->loss_ppm) < 0; break;
		case 'k': bad |= parse_u64(optarg, 1000 * MS, &o->skew_ns) < 0; break;
		case 'p': bad |= parse_u32(optarg, 256, &o->npaths) < 0 || !o->npaths; break;
		case 'r':
			o->rate_gbps = strtod(optarg, &end);
			bad |= *end || !(o->rate_gbps >= 0.001 && o->rate_gbps <= 10000);
			break;
		case 'P': bad |= parse_u64(optarg, 1000 * MS, &o->prop_ns) < 0; break;
		case 'c': bad |= parse_u32(optarg, 1024, &o->conns) < 0 || !o->conns; break;
		case 'd': bad |= parse_u32(optarg, 1024, &o->depth) < 0 || !o->depth; break;
		case 'z': bad |= parse_u64(optarg, 64ull << 20, &o->size) < 0 || !o->size; break;
		case 'm': bad |= parse_u32(optarg, 9000, &o->mtu) < 0 || o->mtu < 576; break;
		case 'D': bad |= parse_u32(optarg, 1024, &o->dupthresh) < 0 || !o->dupthresh; break;
		case 'w':
			bad |= parse_u64(optarg, 10000000, &v) < 0;
			o->warm_ns = v * US;
			break;
		case 't':
			bad |= parse_u64(optarg, 10000000, &v) < 0 || !v;
			o->dur_ns = v * US;
			break;
		case 'S':
			bad |= parse_u64(optarg, 10000000, &v) < 0 || !v;
			o->slack_ns = v * US;
			break;
		case 'C': o->csv = true; break;
		case 'X': o->corrupt = true; break;
		case 'h': usage(stdout); exit(0);
		default: bad = 1;
		}
	}
	if (optind < argc)
		bad = 1;
	/* the connections' regions share one allocation per side */
	if (!bad && (uint64_t)o->conns * o->depth * o->size > (1ull << 30)) {
		fprintf(stderr, "uccl_ordercost: conns x depth x size over 1 GiB\n");
		bad = 1;
	}
	if (!bad && o->conns * o->depth > 65536)
		bad = 1;
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct result r[MAX_SEEDS];

	if (parse_opts(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (o.csv)
		printf("conns,loss_ppm,skew_ns,flag,frac_pct,seed,ops_per_s,goodput_gbps,p50_us,p99_us,"
		       "mean_us,retx_pkts,timeouts,overtook_pct\n");
	else
		printf("# %u conns x %u PUTs of %" PRIu64 " B, %.0f Gbit/s, prop %" PRIu64
		       " ns, %u paths skew %" PRIu64 " ns, loss %u ppm, mtu %u, %" PRIu64
		       " us measured after %" PRIu64 " us, median of %u seeds\n"
		       "%-6s %5s %10s %8s %9s %9s %9s %8s %6s %7s\n",
		       o.conns, o.depth, o.size, o.rate_gbps, o.prop_ns, o.npaths, o.skew_ns,
		       o.loss_ppm, o.mtu, (uint64_t)(o.dur_ns / US), (uint64_t)(o.warm_ns / US), o.nseeds, "flag", "f",
		       "ops/s", "Gbit/s", "p50_us", "p99_us", "mean_us", "retx", "rto",
		       "ovtk%");
	for (int fi = 0; fi < o.nflags; fi++) {
		const char *name = o.flags[fi] == UCCL_SQE_F_FENCE ? "fence" : "strict";

		for (uint32_t k = 0; k < o.nfracs; k++) {
			for (uint32_t i = 0; i < o.nseeds; i++)
				if (run_one(&o, o.flags[fi], o.fracs[k], o.seeds[i], &r[i]) < 0)
					return 1;
			print_row(&o, name, o.fracs[k], r, o.nseeds);
			fflush(stdout);
		}
	}
	return 0;
}
