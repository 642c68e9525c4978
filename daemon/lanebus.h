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

#include "daemon/conf.h"
#include "engine/engine.h"

struct lanemsg {
	struct lanemsg *next;          /* a thread's own lists (waiting, spare) */
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

/* One engine thread's end of the bus (that thread only): parts its engine
 * had no room for yet, messages waiting for queue room (a list per
 * destination, so that one full queue holds back only its own), and one
 * spare message per part it took, so that the part's report never
 * allocates. */
struct lanethr {
	struct lanebus *bus;           /* NULL: no lanes */
	uint32_t index, nthr;
	struct lanemsg *wait, *wait_tail;
	struct lanemsg *ovf[CONF_MAX_ENGINE_THREADS], *ovf_tail[CONF_MAX_ENGINE_THREADS];
	uint32_t n_ovf;                /* messages on all ovf lists */
	struct lanemsg *spare;
};
/* The engine behind it: put is engine_lane_start (0, -EAGAIN: no room yet,
 * or another error: refused, nothing reported), done engine_lane_done. */
struct lanethr_ops {
	int (*put)(void *arg, const struct engine_lane_part *p);
	void (*done)(void *arg, uint64_t cookie, int res);
	void *arg;
};

void lanethr_init(struct lanethr *lt, struct lanebus *bus, uint32_t index);
/* A part of our engine's put to its lane: the thread p->lane after ours.
 * 0, -EINVAL (no such lane), -ENOMEM. */
int lanethr_submit(struct lanethr *lt, const struct engine_lane_part *p);
/* A part our engine ran finished: its report goes back to origin on a
 * spare message. 0, or -ENOSPC without a spare (a caller's bug). */
int lanethr_report(struct lanethr *lt, uint32_t origin, uint64_t cookie, int res);
/* Send what waited for room, hand arriving parts to ops->put and arriving
 * reports to ops->done. Messages moved. */
int lanethr_pass(struct lanethr *lt, const struct lanethr_ops *ops);
/* Nothing waits here nor is queued towards us: the thread may sleep. */
bool lanethr_idle(struct lanethr *lt);
/* Free every message it holds (the thread has stopped). */
void lanethr_clear(struct lanethr *lt);

#endif
