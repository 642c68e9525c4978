/* SPDX-License-Identifier: MIT */
/*
 * sim_core: a binary min-heap of events keyed on (time, sequence). The
 * sequence number makes events at the same nanosecond pop in the order they
 * were pushed, so the simulation never depends on the heap's shape.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "engine/sim/sim_core.h"

struct sim_evq {
	struct sim_ev *v;
	size_t n, cap;
	uint64_t seq;
};

struct sim_evq *sim_evq_new(void)
{
	return calloc(1, sizeof(struct sim_evq));
}

struct sim_evq *sim_evq_free(struct sim_evq *q)
{
	if (!q)
		return NULL;
	free(q->v);
	free(q);
	return NULL;
}

static bool ev_less(const struct sim_ev *a, const struct sim_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int sim_evq_push(struct sim_evq *q, uint64_t t, uint32_t kind, uint32_t id, void *p)
{
	struct sim_ev e = { .t = t, .seq = q->seq++, .kind = kind, .id = id, .p = p };
	size_t i;

	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 1024;
		struct sim_ev *v = realloc(q->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	i = q->n++;
	while (i > 0 && ev_less(&e, &q->v[(i - 1) / 2])) {
		q->v[i] = q->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->v[i] = e;
	return 0;
}

bool sim_evq_pop(struct sim_evq *q, struct sim_ev *out)
{
	struct sim_ev last;
	size_t i = 0;

	if (!q->n)
		return false;
	*out = q->v[0];
	last = q->v[--q->n];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && ev_less(&q->v[c + 1], &q->v[c]))
			c++;
		if (!ev_less(&q->v[c], &last))
			break;
		q->v[i] = q->v[c];
		i = c;
	}
	if (q->n)
		q->v[i] = last;
	return true;
}

size_t sim_evq_len(const struct sim_evq *q)
{
	return q->n;
}

const struct sim_ev *sim_evq_at(const struct sim_evq *q, size_t i)
{
	return i < q->n ? &q->v[i] : NULL;
}

uint64_t sim_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t sim_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return sim_mix(*state);
}

bool sim_chance(uint64_t *state, uint32_t ppm)
{
	if (!ppm)
		return false;
	if (ppm >= 1000000)
		return true;
	return sim_rand(state) % 1000000 < ppm;
}
