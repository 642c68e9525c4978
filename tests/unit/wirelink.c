/* SPDX-License-Identifier: MIT */
/*
 * wirelink: the in-memory test wire. Packets in flight are ordered by
 * (arrival time, sequence), so that equal times keep their send order and a
 * run is a pure function of the seed. Most packets arrive in the order they
 * were sent: those go to a FIFO per direction, O(1); a packet that would
 * overtake one already queued (jitter, a shorter path) goes to a binary
 * heap. The next event is the least of the three heads. Packet buffers are
 * recycled through a free list: channels build packets straight into them
 * and nothing is copied except duplicates.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/wirelink.h"

#define BATCH 64

struct ev {
	uint64_t t, seq;
	uint8_t *buf;
	uint32_t len;
	uint8_t to;
};

struct wirelink {
	struct wirelink_params p;
	struct tpchan *ch[2];
	uint32_t loss[2];
	uint64_t now, seq, rng;
	uint64_t free_at[2];           /* the sender's link is busy until then */
	struct ev *heap;
	size_t nheap, capheap;
	struct fifo {
		struct ev *v;
		size_t head, n, cap;       /* ring; cap a power of two */
	} fifo[2];                     /* by destination */
	uint8_t **pool;
	size_t npool, cappool;
	struct tpchan_txpkt txp[BATCH];
	wirelink_tap tap;
	void *tap_arg;
	wirelink_timer timer;
	void *timer_arg;
	struct wirelink_stats st;
};

static uint64_t rnd(struct wirelink *l)
{
	uint64_t x = l->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	l->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static bool chance(struct wirelink *l, uint32_t ppm)
{
	if (!ppm)
		return false;
	return (rnd(l) >> 11) % 1000000 < ppm;
}

static uint8_t *buf_get(struct wirelink *l)
{
	if (l->npool)
		return l->pool[--l->npool];
	return malloc(l->p.mtu);
}

static void buf_put(struct wirelink *l, uint8_t *b)
{
	if (l->npool == l->cappool) {
		size_t n = l->cappool ? 2 * l->cappool : 256;
		uint8_t **p = realloc(l->pool, n * sizeof(*p));

		if (!p) {
			free(b);
			return;
		}
		l->pool = p;
		l->cappool = n;
	}
	l->pool[l->npool++] = b;
}

static bool ev_less(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct wirelink *l, struct ev e)
{
	size_t i;

	if (l->nheap == l->capheap) {
		size_t n = l->capheap ? 2 * l->capheap : 1024;
		struct ev *h = realloc(l->heap, n * sizeof(*h));

		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->capheap = n;
	}
	i = l->nheap++;
	while (i > 0 && ev_less(&e, &l->heap[(i - 1) / 2])) {
		l->heap[i] = l->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	l->heap[i] = e;
	return 0;
}

static struct ev heap_pop(struct wirelink *l)
{
	struct ev top = l->heap[0], last = l->heap[--l->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->nheap)
			break;
		if (c + 1 < l->nheap && ev_less(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!ev_less(&l->heap[c], &last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (l->nheap)
		l->heap[i] = last;
	return top;
}

static int fifo_push(struct fifo *f, struct ev e)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct ev *v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < f->n; k++)
			v[k] = f->v[(f->head + k) & (f->cap - 1)];
		free(f->v);
		f->v = v;
		f->cap = cap;
		f->head = 0;
	}
	f->v[(f->head + f->n++) & (f->cap - 1)] = e;
	return 0;
}

static const struct ev *fifo_last(const struct fifo *f)
{
	return f->n ? &f->v[(f->head + f->n - 1) & (f->cap - 1)] : NULL;
}

static size_t queued(const struct wirelink *l)
{
	return l->nheap + l->fifo[0].n + l->fifo[1].n;
}

/* In send order where that keeps arrival order, else the heap. */
static int wire_push(struct wirelink *l, struct ev e)
{
	struct fifo *f = &l->fifo[e.to];
	const struct ev *last = fifo_last(f);
	int r;

	if (!last || !ev_less(&e, last))
		r = fifo_push(f, e);
	else
		r = heap_push(l, e);
	if (r == 0 && queued(l) > l->st.max_queued)
		l->st.max_queued = queued(l);
	return r;
}

/* The next arrival, NULL if none; *src: 0, 1 (a FIFO) or 2 (the heap). */
static const struct ev *wire_next(const struct wirelink *l, int *src)
{
	const struct ev *best = NULL;

	for (int k = 0; k < 2; k++) {
		const struct fifo *f = &l->fifo[k];

		if (f->n && (!best || ev_less(&f->v[f->head], best))) {
			best = &f->v[f->head];
			*src = k;
		}
	}
	if (l->nheap && (!best || ev_less(&l->heap[0], best))) {
		best = &l->heap[0];
		*src = 2;
	}
	return best;
}

static struct ev wire_pop(struct wirelink *l, int src)
{
	struct fifo *f = &l->fifo[src & 1];
	struct ev e;

	if (src == 2)
		return heap_pop(l);
	e = f->v[f->head];
	f->head = (f->head + 1) & (f->cap - 1);
	f->n--;
	return e;
}

struct wirelink *wirelink_new(const struct wirelink_params *p, struct tpchan *a, struct tpchan *b,
			      uint64_t start_ns)
{
	struct wirelink *l;

	if (!p || !a || !b || p->mtu == 0)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->p = *p;
	l->ch[0] = a;
	l->ch[1] = b;
	l->loss[0] = l->loss[1] = p->loss_ppm;
	l->now = start_ns;
	for (int i = 0; i < BATCH; i++) {
		l->txp[i].buf = malloc(p->mtu);
		if (!l->txp[i].buf) {
			wirelink_free(l);
			return NULL;
		}
	}
	l->rng = p->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	if (!l->rng)
		l->rng = 1;
	return l;
}

struct wirelink *wirelink_free(struct wirelink *l)
{
	if (!l)
		return NULL;
	for (size_t i = 0; i < l->nheap; i++)
		free(l->heap[i].buf);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < l->fifo[k].n; i++)
			free(l->fifo[k].v[(l->fifo[k].head + i) & (l->fifo[k].cap - 1)].buf);
		free(l->fifo[k].v);
	}
	for (size_t i = 0; i < l->npool; i++)
		free(l->pool[i]);
	for (int i = 0; i < BATCH; i++)
		free(l->txp[i].buf);
	free(l->heap);
	free(l->pool);
	free(l);
	return NULL;
}

void wirelink_set_loss(struct wirelink *l, int from, uint32_t ppm)
{
	l->loss[from & 1] = ppm;
}

void wirelink_set_tap(struct wirelink *l, wirelink_tap tap, void *arg)
{
	l->tap = tap;
	l->tap_arg = arg;
}

uint64_t wirelink_now(const struct wirelink *l)
{
	return l->now;
}

/* A packet leaves `from`; the link owns buf from here on. */
static int put(struct wirelink *l, int from, uint8_t *buf, uint32_t len, uint16_t path)
{
	uint64_t depart = l->now, arrive;
	int64_t extra = 0;
	struct ev e;
	int r;

	l->st.sent[from]++;
	if (l->p.rate_gbps) {
		if (l->free_at[from] > depart)
			depart = l->free_at[from];
		depart += (uint64_t)len * 8 / l->p.rate_gbps;
		l->free_at[from] = depart;
	}
	if (l->tap)
		extra = l->tap(l->tap_arg, from, buf, len);
	if (extra < 0 || l->loss[from] >= 1000000 || chance(l, l->loss[from])) {
		l->st.lost[from]++;
		buf_put(l, buf);
		return 0;
	}
	arrive = depart + l->p.delay_ns + path * l->p.path_skew_ns + (uint64_t)extra;
	if (l->p.jitter_ns && chance(l, l->p.reorder_ppm))
		arrive += rnd(l) % l->p.jitter_ns;
	e = (struct ev){ .t = arrive, .seq = l->seq++, .buf = buf, .len = len, .to = (uint8_t)!from };
	if (chance(l, l->p.dup_ppm)) {
		struct ev d = e;

		d.buf = buf_get(l);
		if (d.buf) {
			memcpy(d.buf, buf, len);
			d.t += 1 + (l->p.jitter_ns ? rnd(l) % l->p.jitter_ns : 0);
			d.seq = l->seq++;
			if (wire_push(l, d) < 0)
				free(d.buf);
			else
				l->st.dup[from]++;
		}
	}
	r = wire_push(l, e);
	if (r < 0)
		free(buf);
	return r;
}

/* Let one side send everything it has now. -EDEADLK if it then still
 * claims to be due. The BATCH buffers stay armed between calls; only
 * those a call used are replaced. */
static int drain(struct wirelink *l, int side)
{
	for (;;) {
		int k = tpchan_tx(l->ch[side], l->now, l->txp, BATCH);

		for (int i = 0; i < k; i++) {
			int r;

			/* a gathered packet: the wire, like a NIC, puts the two
			 * parts together as it sends */
			if (l->txp[i].payload) {
				memcpy(l->txp[i].buf + l->txp[i].hdr_len, l->txp[i].payload,
				       l->txp[i].len - l->txp[i].hdr_len);
				l->st.gathered++;
			}
			r = put(l, side, l->txp[i].buf, l->txp[i].len, l->txp[i].path);

			l->txp[i].buf = buf_get(l);
			if (r < 0)
				return r;
			if (!l->txp[i].buf)
				return -ENOMEM;
		}
		if (k < BATCH)
			break;
	}
	if (tpchan_next_deadline(l->ch[side]) <= l->now)
		return -EDEADLK;
	return 0;
}

int wirelink_step(struct wirelink *l)
{
	const struct ev *next;
	uint64_t t = UINT64_MAX;
	int r, src = -1;

	l->st.steps++;
	if (l->timer)
		t = l->timer(l->timer_arg, l->now);
	for (int side = 0; side < 2; side++) {
		r = drain(l, side);
		if (r < 0)
			return r;
	}
	next = wire_next(l, &src);
	/* the timer's wake-up stands if it comes first (a pacer's grant due
	 * before the next arrival) */
	if (next && next->t < t)
		t = next->t;
	for (int side = 0; side < 2; side++) {
		uint64_t d = tpchan_next_deadline(l->ch[side]);

		if (d < t)
			t = d;
	}
	if (t == UINT64_MAX)
		return 0;
	if (t > l->now)
		l->now = t;
	for (; next && next->t <= l->now; next = wire_next(l, &src)) {
		struct ev e = wire_pop(l, src);

		r = tpchan_rx(l->ch[e.to], e.buf, e.len, l->now);
		l->st.delivered[!e.to]++;
		if (r < 0)
			l->st.rx_errors[!e.to]++;
		buf_put(l, e.buf);
	}
	return 1;
}

int wirelink_run(struct wirelink *l, bool (*done)(void *arg), void *arg, uint64_t limit_ns)
{
	for (;;) {
		int r;

		if (done && done(arg))
			return 0;
		if (l->now > limit_ns)
			return -ETIME;
		r = wirelink_step(l);
		if (r < 0)
			return r;
		if (r == 0)
			return done && done(arg) ? 0 : -ENODATA;
	}
}

void wirelink_set_timer(struct wirelink *l, wirelink_timer timer, void *arg)
{
	l->timer = timer;
	l->timer_arg = arg;
}

int wirelink_inject(struct wirelink *l, int to, const void *pkt, size_t len)
{
	return tpchan_rx(l->ch[to & 1], pkt, len, l->now);
}

void wirelink_get_stats(const struct wirelink *l, struct wirelink_stats *out)
{
	*out = l->st;
}
