/* SPDX-License-Identifier: MIT */
/*
 * lanebus: the queues between engine threads that carry lane traffic
 * (engine/lanes.c): parts of a split put from the owner's thread to a
 * lane's, and each part's report back. One single-producer single-consumer
 * queue per ordered pair of threads, each with an eventfd that wakes a
 * sleeping receiver; no locks.
 */
#ifndef UCCL_DAEMON_LANEBUS_H
#define UCCL_DAEMON_LANEBUS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

struct lanemsg {
	struct lanemsg *next;          /* a thread's own lists (waiting, spare) */
	uint32_t to;                   /* while it waits for queue room */
	bool report;                   /* a part's result, back at its origin */
	int res;
	struct engine_lane_part part;  /* a report: origin and cookie */
};

struct lanebus;

/* Queues for nthr threads (2..CONF_MAX_ENGINE_THREADS), each cap deep. */
struct lanebus *lanebus_new(uint32_t nthr, uint32_t cap);
struct lanebus *lanebus_free(struct lanebus *b);       /* accepts NULL; frees queued messages */
uint32_t lanebus_threads(const struct lanebus *b);
/* Only thread `from` sends on (from, to), only thread `to` receives.
 * 0, or -EAGAIN when that queue is full. */
int lanebus_send(struct lanebus *b, uint32_t from, uint32_t to, struct lanemsg *m);
struct lanemsg *lanebus_recv(struct lanebus *b, uint32_t from, uint32_t to);   /* NULL: empty */
/* Readable after a send on (from, to). */
int lanebus_fd(const struct lanebus *b, uint32_t from, uint32_t to);
/* Nothing queued towards thread `to` from any other. */
bool lanebus_idle(struct lanebus *b, uint32_t to);

#endif
