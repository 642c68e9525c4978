/* SPDX-License-Identifier: MIT */
/*
 * lanebus: a matrix of cmdq queues, one per ordered pair of engine threads.
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
