/* SPDX-License-Identifier: MIT */
/*
 * lanebus: a matrix of cmdq queues, one per ordered pair of engine
 * threads, and each thread's end of it (struct lanethr): the lists that
 * keep parts and reports moving when a queue or a shadow endpoint is full.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/cmdq.h"
#include "daemon/conf.h"
#include "daemon/lanebus.h"

struct lanebus {
	uint32_t n;
	struct cmdq *q[CONF_MAX_ENGINE_THREADS][CONF_MAX_ENGINE_THREADS];   /* [from][to] */
};

struct lanebus *lanebus_new(uint32_t nthr, uint32_t cap)
{
	struct lanebus *b;

	if (nthr < 2 || nthr > CONF_MAX_ENGINE_THREADS)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->n = nthr;
	for (uint32_t i = 0; i < nthr; i++) {
		for (uint32_t j = 0; j < nthr; j++) {
			if (i != j && !(b->q[i][j] = cmdq_new(cap)))
				return lanebus_free(b);
		}
	}
	return b;
}

struct lanebus *lanebus_free(struct lanebus *b)
{
	struct lanemsg *m;

	if (!b)
		return NULL;
	for (uint32_t i = 0; i < b->n; i++) {
		for (uint32_t j = 0; j < b->n; j++) {
			if (!b->q[i][j])
				continue;
			while ((m = cmdq_pop(b->q[i][j])))
				free(m);
			cmdq_free(b->q[i][j]);
		}
	}
	free(b);
	return NULL;
}

uint32_t lanebus_threads(const struct lanebus *b)
{
	return b->n;
}

int lanebus_send(struct lanebus *b, uint32_t from, uint32_t to, struct lanemsg *m)
{
	if (from >= b->n || to >= b->n || from == to)
		return -EINVAL;
	return cmdq_push(b->q[from][to], m);
}

struct lanemsg *lanebus_recv(struct lanebus *b, uint32_t from, uint32_t to)
{
	return cmdq_pop(b->q[from][to]);
}

int lanebus_fd(const struct lanebus *b, uint32_t from, uint32_t to)
{
	return cmdq_fd(b->q[from][to]);
}

bool lanebus_idle(struct lanebus *b, uint32_t to)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (i != to && !cmdq_empty(b->q[i][to]))
			return false;
	return true;
}

/* ---- one thread's end ---- */

void lanethr_init(struct lanethr *lt, struct lanebus *bus, uint32_t index)
{
	*lt = (struct lanethr){ .bus = bus, .index = index, .nthr = bus ? bus->n : 1 };
}

static void lt_send(struct lanethr *lt, uint32_t to, struct lanemsg *m)
{
	if (lt->ovf[to] || lanebus_send(lt->bus, lt->index, to, m) < 0) {
		/* the queue is full: after the ones already waiting for it
		 * (a tail, not a walk: a backlog would cost its square) */
		m->next = NULL;
		if (lt->ovf[to])
			lt->ovf_tail[to]->next = m;
		else
			lt->ovf[to] = m;
		lt->ovf_tail[to] = m;
		lt->n_ovf++;
	}
}

/* Send what waited for room in the queue to `to`, until it is full again. */
static int lt_flush(struct lanethr *lt, uint32_t to)
{
	struct lanemsg *m;
	int n = 0;

	while ((m = lt->ovf[to])) {
		/* once sent, m is the other thread's: it may be freed or
		 * relinked before this line would read m->next */
		struct lanemsg *next = m->next;

		if (lanebus_send(lt->bus, lt->index, to, m) < 0)
			break;
		lt->ovf[to] = next;
		if (!next)
			lt->ovf_tail[to] = NULL;
		lt->n_ovf--;
		n++;
	}
	return n;
}

int lanethr_submit(struct lanethr *lt, const struct engine_lane_part *p)
{
	struct lanemsg *m;

	if (!lt->bus || p->lane == 0 || p->lane >= lt->nthr)
		return -EINVAL;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = (struct lanemsg){ .part = *p };
	m->part.origin = lt->index;
	lt_send(lt, (lt->index + p->lane) % lt->nthr, m);
	return 0;
}

int lanethr_report(struct lanethr *lt, uint32_t origin, uint64_t cookie, int res)
{
	struct lanemsg *m = lt->spare;

	if (!m)
		return -ENOSPC;
	lt->spare = m->next;
	*m = (struct lanemsg){ .report = true, .res = res };
	m->part.origin = origin;
	m->part.cookie = cookie;
	lt_send(lt, origin, m);
	return 0;
}

/* A part for our engine: taken (0; its message is a spare, put there
 * before the engine could report), kept for later (1: no room yet, m
 * untouched), or refused (0; m goes back as its report). */
static int lt_take(struct lanethr *lt, struct lanemsg *m, const struct lanethr_ops *ops)
{
	struct lanemsg *next = m->next;
	int r;

	m->next = lt->spare;
	lt->spare = m;
	r = ops->put(ops->arg, &m->part);
	if (r == 0)
		return 0;
	/* not started: nothing was reported, m is still the first spare */
	lt->spare = m->next;
	m->next = next;
	if (r == -EAGAIN)
		return 1;
	m->report = true;
	m->res = r;
	lt_send(lt, m->part.origin, m);
	return 0;
}

static void lt_wait_add(struct lanethr *lt, struct lanemsg *m)
{
	m->next = NULL;
	if (lt->wait_tail)
		lt->wait_tail->next = m;
	else
		lt->wait = m;
	lt->wait_tail = m;
}

int lanethr_pass(struct lanethr *lt, const struct lanethr_ops *ops)
{
	struct lanemsg *m;
	int n = 0;

	for (uint32_t j = 0; j < lt->nthr && lt->n_ovf; j++)
		n += lt_flush(lt, j);
	while ((m = lt->wait)) {
		struct lanemsg *next = m->next;   /* lt_take reuses m->next */

		if (lt_take(lt, m, ops) == 1)
			break;
		lt->wait = next;
		if (!next)
			lt->wait_tail = NULL;
		n++;
	}
	for (uint32_t j = 0; j < lt->nthr; j++) {
		if (j == lt->index)
			continue;
		while ((m = lanebus_recv(lt->bus, j, lt->index))) {
			n++;
			if (m->report) {
				ops->done(ops->arg, m->part.cookie, m->res);
				free(m);
			} else if (lt->wait || lt_take(lt, m, ops) == 1) {
				lt_wait_add(lt, m);     /* behind those already waiting */
			}
		}
	}
	return n;
}

bool lanethr_idle(struct lanethr *lt)
{
	return !lt->bus || (!lt->wait && !lt->n_ovf && lanebus_idle(lt->bus, lt->index));
}

static void free_list(struct lanemsg *m)
{
	while (m) {
		struct lanemsg *next = m->next;

		free(m);
		m = next;
	}
}

void lanethr_clear(struct lanethr *lt)
{
	free_list(lt->wait);
	free_list(lt->spare);
	for (uint32_t j = 0; j < CONF_MAX_ENGINE_THREADS; j++)
		free_list(lt->ovf[j]);
	*lt = (struct lanethr){ .bus = lt->bus, .index = lt->index, .nthr = lt->nthr };
}
