/* SPDX-License-Identifier: MIT */
/*
 * engine_int: the engine's private structures and helpers, shared by
 * engine.c (rings, same-host operations, ordering) and remote.c (channels to
 * other hosts). Nothing outside engine/engine.c and engine/remote.c includes
 * it; the public interface is engine.h.
 */
#ifndef UCCL_ENGINE_ENGINE_INT_H
#define UCCL_ENGINE_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uccl/shm.h>

#include "engine/engine.h"
#include "engine/opq.h"
#include "engine/ring.h"

#define ENGINE_MAX_ENDPOINTS   (1u << 20)
#define ENGINE_MAX_BATCH       4096u
#define ENGINE_DEFAULT_BATCH   64u
#define ENGINE_DEFAULT_PASS_BYTES (1ull << 20)
#define EP_MAX_OUTSTANDING     (1u << 20)
/* Connection sides are allocated this many at a time, when first bound:
 * an endpoint pays for the ids it uses, not for max_conns. Sides never
 * move (ops, channels and records point at them). */
#define CONN_CHUNK             16u

enum conn_state {
	CONN_FREE = 0,
	CONN_UP,         /* joined to a live peer side (same host) or bound to a channel */
	CONN_RESET,      /* the peer side went away; ops fail until this side is removed */
};

struct rchan;
struct rrec;
struct rputs;

/* The remote half of a connection side whose peer is on another host. */
struct rconn {
	struct rchan *ch;
	struct conn *ch_next, *ch_prev;   /* the channel's connection sides */
	uint32_t wire_id;          /* ours: packets to us name it in dst_conn */
	uint32_t rep;              /* the peer's endpoint id; UINT32_MAX until known */
	uint32_t rconn_wire;       /* the peer's wire id for its side */
	uint32_t nrecs;            /* receive: records in recs */
	uint64_t send_seq;         /* next SEND sequence number */
	uint64_t put_seq;          /* next PUT number, carried by puts and signals (ord) */
	uint64_t get_seq;          /* next get id */
	struct opq_op *get_last;   /* the get the last response packet was for, or NULL */
	struct opq_op *sig_head, *sig_tail; /* held: puts past PUT_WINDOW, ops behind them */
	struct opq_op *sdone_head;  /* acknowledged signals waiting for earlier puts (rnext) */
	uint32_t sigs_out;         /* signals started, not finished: at most SIG_HOLD_MAX,
				    * all the peer may hold for us */
	bool releasing;            /* in release_signals: finishing ops must not re-enter */
	struct opq_op *puts_head, *puts_tail; /* puts not settled yet, in issue order */
	int put_reset_err;         /* a put failed for the connection's reset: later signals too */
	struct rputs *rputs;       /* receive: the peer's puts settled, signals held */
	uint64_t put_done;         /* receive: puts below it settled, while rputs is released */
	uint64_t next_seq;         /* receive: next incoming SEND to take its turn */
	struct rrec *recs;         /* every incoming-message record of this side */
	uint64_t ubytes;           /* receive: bytes its records hold buffered */
	uint64_t blocked_seq;      /* lowest send refused for lack of room, or UINT64_MAX */
	struct rrec *um_head, *um_tail; /* took their turn, no receive matched yet */
	uint32_t nlanes;           /* lanes its large puts split over (engine/lanes.c) */
	/* its split puts with parts still out, in issue order (through
	 * mnext/mprev): a signal waits for those issued before it */
	struct opq_op *lput_head, *lput_tail;
};

/* One side of a connection, owned by its endpoint. */
struct conn {
	struct opq_conn q;         /* its ops: completion reorder list, match queues */
	struct ep *ep;             /* owner */
	struct ep *peer_ep;        /* CONN_UP, same host only */
	struct conn *peer;         /* CONN_UP, same host only */
	struct conn *work_next;    /* engine worklist */
	uint32_t id;
	uint32_t peer_id;
	uint8_t state;
	bool queued;
	bool remote;               /* r is valid: the peer is on another host */
	struct rconn r;
};

struct ep {
	struct ring_side sq;       /* engine consumes */
	struct ring_side cq;       /* engine produces */
	uint64_t *sems;            /* shared, indexed by this endpoint's conn id */
	struct conn **conns;       /* nchunks chunks of CONN_CHUNK sides, or NULL */
	struct opq_pool **pools;   /* op pools of 16, 16, 32, 64...: max_outstanding in all */
	struct opq_tags *tags;     /* its sides' tag index, made and sized with the pools */
	uint32_t nchunks;          /* grows by doubling */
	uint32_t npools;
	uint32_t pool_cap;         /* ops in the pools so far */
	uint32_t id;
	uint32_t client_id;
	uint32_t max_conns;
	uint32_t max_outstanding;
	uint32_t staged;           /* CQEs written but not yet published */
	uint32_t live_pos;         /* index in engine.live while not broken */
	bool broken;               /* ring corrupt or being removed: not served */
	bool touched;              /* on engine.touched */
	bool shadow;               /* lane sides only: no rings, finished ops go to
				    * lane_done, never on engine.live; sems are its own */
	struct ep *shadow_next;    /* engine.shadows */
	uint64_t r_inflight;       /* bytes of its remote ops in channels */
	uint64_t r_held_walk;      /* the queue walk that found it at its limit */
	struct engine_ep_stats st;
};

struct remote;                     /* remote.c's state */

struct engine {
	struct engine_mem_ops mem;
	void (*notify)(void *arg, uint32_t ep_id);
	void *notify_arg;
	uint32_t max_endpoints;
	uint32_t poll_batch;
	uint64_t max_op_bytes;
	uint64_t pass_bytes;
	uint64_t max_ep_inflight;  /* 0: no limit */
	struct mr_table *mrs;
	struct ep **eps;           /* by id */
	struct ep **live;          /* served endpoints, dense */
	uint32_t nlive;
	struct ep *shadows;        /* shadow endpoints, through shadow_next */
	struct ep **touched;       /* got CQEs or a semaphore bump since the last flush */
	uint32_t ntouched;
	struct conn *work;         /* conn sides whose reorder list may move */
	struct uccl_sqe *sqebuf;   /* private copies of one batch */
	struct remote *rm;         /* NULL when max_chans is 0 */
	uint64_t now;              /* time of the current engine call */
	uint64_t lane_min;         /* engine_params.lane_min_bytes */
	int (*lane_submit)(void *arg, const struct engine_lane_part *p);
	void (*lane_done)(void *arg, uint32_t origin, uint64_t cookie, int res);
	void *lane_arg;
	struct engine_stats st;
};

/* Side id of ep (id < max_conns), or NULL if its chunk was never
 * allocated: such a side is CONN_FREE. */
static inline struct conn *ep_conn(const struct ep *ep, uint32_t id)
{
	uint32_t k = id / CONN_CHUNK;

	return k < ep->nchunks && ep->conns[k] ? &ep->conns[k][id % CONN_CHUNK] : NULL;
}

/* engine.c, for remote.c */
/* Side id of ep, allocated (with the op pool) if need be; NULL: no memory. */
struct conn *eng_conn_make(struct ep *ep, uint32_t id);
void eng_touch(struct engine *e, struct ep *ep);
/* +n on ep's semaphore for its connection id, and its client told. */
void eng_sem_raise(struct engine *e, struct ep *ep, uint32_t id, uint64_t n);
/* A WAITING op on side c got its result (op->res set): post or hold it. */
void eng_op_finish_waiting(struct engine *e, struct conn *c, struct opq_op *op);
int eng_copy(struct engine *e, const struct mr *dst, uint64_t dst_off, const struct mr *src,
	     uint64_t src_off, uint64_t len);
struct ep *eng_ep_get(const struct engine *e, uint32_t ep_id);
/* Side c's peer is gone: its ops complete with err, it stays RESET. */
void eng_conn_reset(struct engine *e, struct conn *c, int err);
/* Run the worklist and publish completions. */
void eng_settle(struct engine *e);
/* A new WAITING op on side c, a copy of tmp, in its endpoint's pool and
 * order list (not started); NULL: the pool has no room. */
struct opq_op *eng_op_add_waiting(struct conn *c, const struct opq_op *tmp);
/* An op no side holds (a lingering split op): post its completion unless
 * !post, and give it back to ep's pool. */
void eng_op_post_free(struct engine *e, struct ep *ep, struct opq_op *op, bool post);

/* remote.c, for engine.c */
struct remote *remote_new(const struct engine_params *p);
void remote_free(struct engine *e);
/* A WAITING op (already in its endpoint's pool) starts on a remote side. */
void remote_start(struct engine *e, struct conn *c, struct opq_op *op);
/* Its local region went away under a pending op: settle or mark it. */
void remote_cancel(struct engine *e, struct conn *c, struct opq_op *op);
/* Side c stops being remote: forget its in-flight messages, queued
 * submissions and incoming records (its ops are flushed by the caller).
 * keep_parts: its split ops with parts out linger (lanes_linger) rather
 * than forget them, as the caller will complete the side's ops. */
void remote_conn_detach(struct engine *e, struct conn *c, bool keep_parts);

/* lanes.c, for engine.c: op comes after `last` (NULL: none) on a side
 * being reset (op's result set): it completes after last, and a lingering
 * op after everything before it. Returns the side's last lingering op. */
struct opq_op *lanes_linger_follow(struct opq_op *last, struct opq_op *op);
/* ep goes: its ops waiting on the linger list are freed without
 * completions. */
void lanes_linger_drop(struct engine *e, struct ep *ep);

#endif
