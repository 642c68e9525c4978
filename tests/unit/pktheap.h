/* SPDX-License-Identifier: MIT */
/*
 * pktheap: packets in flight on the in-memory wires of the engine tests
 * (test_remote, test_lanes): a min-heap by arrival time, ties broken by a
 * sequence number so that a run is the same for the same seed, and the
 * xorshift generator that decides loss, duplication and extra delay.
 * Include after cmocka.h.
 */
#ifndef UCCL_TESTS_PKTHEAP_H
#define UCCL_TESTS_PKTHEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct pkt_ev {
	uint64_t t, seq;
	uint8_t *buf;
	uint32_t len;
	uint8_t to;                    /* the host it goes to */
	uint8_t thr;                   /* ... and its engine there (test_lanes) */
};

struct pktheap {
	struct pkt_ev *v;
	size_t n, cap;
};

static inline bool pkt_ev_less(const struct pkt_ev *a, const struct pkt_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static inline void pktheap_push(struct pktheap *h, struct pkt_ev e)
{
	size_t i;

	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		h->v = realloc(h->v, h->cap * sizeof(*h->v));
		assert_non_null(h->v);
	}
	i = h->n++;
	while (i > 0 && pkt_ev_less(&e, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = e;
}

static inline struct pkt_ev pktheap_pop(struct pktheap *h)
{
	struct pkt_ev top = h->v[0], last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && pkt_ev_less(&h->v[c + 1], &h->v[c]))
			c++;
		if (!pkt_ev_less(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

/* Frees the packets still in flight and the heap. */
static inline void pktheap_free(struct pktheap *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i].buf);
	free(h->v);
	*h = (struct pktheap){ 0 };
}

static inline uint64_t xrnd(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* true with probability ppm per million */
static inline bool xchance(uint64_t *state, uint32_t ppm)
{
	return ppm && (xrnd(state) >> 11) % 1000000 < ppm;
}

#endif
