/* SPDX-License-Identifier: MIT */
/*
 * opq: where operations wait. Each endpoint keeps its pending operations in
 * pools that it adds as more are pending at once (engine.c: 16, 16, 32, 64...)
 * up to its max_outstanding, so a client can hold at most that many and the
 * data path allocates only when an endpoint needs more than it ever had; a
 * pool never moves. Each connection side owns two kinds of
 * queue: the completion reorder list, which keeps every unfinished or held
 * operation in issue order and implements STRICT (hold a completion until all
 * earlier ones are posted) and FENCE (do not start until all earlier ones
 * finished); and the match queues of waiting sends and posted receives for
 * tag matching. The engine decides what an operation does; opq only keeps the
 * order. (The transport-sequence reorder buffer is a different thing and will
 * live with the transport channel.)
 */
#ifndef UCCL_ENGINE_OPQ_H
#define UCCL_ENGINE_OPQ_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/mr.h"

enum opq_state {
	OPQ_FREE = 0,      /* in the pool's free list */
	OPQ_STALLED,       /* issued behind a fence that has not cleared; not started */
	OPQ_WAITING,       /* started, waits for a peer (unmatched send or receive) */
	OPQ_DONE,          /* result known, completion held for ordering */
};

/* A pending operation: a private copy of what the engine needs from its
 * descriptor plus its result. Never points into shared memory. */
struct opq_op {
	struct opq_op *onext, *oprev;   /* completion reorder list */
	struct opq_op *mnext, *mprev;   /* match queue (SEND, RECV); mnext is also the free
					 * list; a split PUT's place on its side's lane list */
	const struct mr *lmr;           /* local region; NULL once done or canceled */
	uint64_t user_data;
	uint64_t loff;
	uint64_t len;
	uint64_t key;                   /* PUT/GET: rkey; SEND/RECV: tag */
	uint64_t roff;
	uint64_t res_len;               /* completion's len and tag */
	uint64_t res_tag;
	int32_t res;                    /* <0 also on a STALLED op canceled before it started */
	uint32_t conn;
	uint8_t opcode;
	uint8_t flags;
	uint8_t state;                  /* enum opq_state */
	uint8_t in_mq;                  /* on its match queue */
	/* remote operations (engine/remote.c); rmsg is OPQ_NO_RMSG otherwise */
	uint8_t rflags;
	uint8_t rsig;                   /* SIGNAL: counted in its side's sigs_out */
	uint32_t rmsg;                  /* in-flight message slot */
	uint32_t rbackoff_us;           /* SEND refused for lack of buffer: next retry delay */
	uint64_t rseq;                  /* SEND: sequence number on its connection */
	uint64_t rdue;                  /* retry time */
	uint64_t rgot;                  /* GET: response bytes arrived */
	uint64_t rcharged;              /* bytes it counts in its endpoint's r_inflight */
	struct opq_op *rnext;           /* channel's submit queue */
	struct opq_op *pnext, *pprev;   /* PUT: its side's unacknowledged puts */
	void *rside;                    /* its connection side (struct conn) */
	void *rrec;                     /* RECV: the incoming message it was matched to */
	/* tag index (struct opq_tags): the FIFO of its side's waiting ops of
	 * its kind and tag, and when it joined its match queue */
	struct opq_op *tnext, *tprev;
	uint32_t tb;                    /* its bucket */
	uint64_t mseq;
	/* lanes (engine/lanes.c). A put split over lanes: its parts' slot
	 * + 1 (0: not split), parts still out, its whole length (len is its
	 * own first part), and its own part's result is in. A lane's part:
	 * where to report it (user_data is the owner's cookie). After a
	 * reset (engine/lanes.c, the linger list): rparked, it left its side
	 * and waits, its result set, for a split op's parts; rlinger, it is
	 * that split op, on the engine's linger list through mnext/mprev,
	 * and the ops that complete after it follow from tnext to tprev
	 * (through onext); rblocked, an earlier one has not completed. */
	uint32_t rlslot;
	uint32_t rlanes;
	uint64_t rsplit;
	bool rown_done;
	bool rlinger;
	bool rparked;
	bool rblocked;
	uint32_t rorigin;
};
#define OPQ_NO_RMSG UINT32_MAX

/* The pool. */
struct opq_pool;

struct opq_pool *opq_pool_new(uint32_t size);
struct opq_pool *opq_pool_free(struct opq_pool *p);      /* accepts NULL, returns NULL */
/* A free op (contents undefined), or NULL when all are in use. */
struct opq_op *opq_pool_get(struct opq_pool *p);
void opq_pool_put(struct opq_pool *p, struct opq_op *op);
uint32_t opq_pool_used(const struct opq_pool *p);
uint32_t opq_pool_size(const struct opq_pool *p);
/* The i-th op of the pool (i < size), in use or not: for scans. */
struct opq_op *opq_pool_at(struct opq_pool *p, uint32_t i);

/*
 * The completion reorder list of one connection side. Invariants: ops are in
 * issue order; the STALLED ones form a suffix that starts at `stall`; only the
 * first STALLED op can be a fence that blocks, later ones merely queue behind
 * it so that operations on a connection start in order.
 */
struct opq_creorder {
	struct opq_op *head, *tail;
	struct opq_op *stall;           /* first op not started, or NULL */
	uint32_t nwaiting;              /* ops in state OPQ_WAITING */
	uint32_t count;
};

/*
 * The tag index of one endpoint: for every connection side, kind (waiting
 * sends, posted receives) and tag that has ops waiting, a FIFO of those ops,
 * so that matching a tag is a hash lookup, not a scan of the side's whole
 * match queue. A receive of UCCL_TAG_ANY sits in the bucket of that tag;
 * finding the receive for a send compares the heads of its tag's bucket and
 * of the ANY bucket by join order (mseq). Buckets come from a table that
 * opq_tags_reserve sizes for the most ops that can wait at once (the
 * endpoint's pool), so joining a queue never allocates. Sides made with no
 * index (NULL), or an index that ran out of buckets, scan as before.
 */
struct opq_tags;

/* An empty index (no buckets until the first reserve), or NULL. */
struct opq_tags *opq_tags_new(void);
struct opq_tags *opq_tags_free(struct opq_tags *t);      /* accepts NULL, returns NULL */
/* Whether it ran out of buckets (a reserve was skipped) and scans now. */
bool opq_tags_broken(const struct opq_tags *t);
/* Room for n ops waiting at once: 0, or -ENOMEM with the index unchanged. */
int opq_tags_reserve(struct opq_tags *t, uint32_t n);
size_t opq_tags_bytes(const struct opq_tags *t);         /* heap bytes held */

/* A match queue (FIFO) of waiting sends or of posted receives. */
struct opq_mq {
	struct opq_op *head, *tail;
};

/* Everything one connection side holds. Every op of the side that has not
 * posted its completion is on `order`; WAITING ones are also on a match queue. */
struct opq_conn {
	struct opq_creorder order;
	struct opq_mq sends;
	struct opq_mq recvs;
	/* where its endpoint keeps its index (made when the first op is
	 * stored, so an endpoint that never had one holds none); NULL, or
	 * NULL there: scan */
	struct opq_tags *const *tags;
};

void opq_conn_init(struct opq_conn *qc, struct opq_tags *const *tags);
/* Whether the completion of op must wait for earlier ones (STRICT, FLUSH). */
bool opq_op_held(const struct opq_op *op);
/* Whether a new op with these flags may start now rather than stall. */
bool opq_conn_can_start(const struct opq_conn *qc, uint8_t flags);
/* Whether a new op that finished at once may post its completion now. */
bool opq_conn_can_post_new(const struct opq_conn *qc, const struct opq_op *op);
/* Append a new op as STALLED, WAITING (joins its match queue too) or DONE. */
void opq_conn_add(struct opq_conn *qc, struct opq_op *op, enum opq_state state);
/* These two return true when the caller must post op's completion now (op
 * is then off every list), false when op stays queued.
 * opq_conn_started: a STALLED op was just started; done says whether it
 * finished (else it now waits for a peer).
 * opq_conn_finished: a WAITING op got its result (op->res set by the caller). */
bool opq_conn_started(struct opq_conn *qc, struct opq_op *op, bool done);
bool opq_conn_finished(struct opq_conn *qc, struct opq_op *op);
/* The head, removed, if its completion may be posted now; else NULL. */
struct opq_op *opq_conn_pop_done(struct opq_conn *qc);
/* The next STALLED op that the fences let start, taken off the stalled
 * suffix (the caller starts it and reports with opq_conn_started), or NULL. */
struct opq_op *opq_conn_next_start(struct opq_conn *qc);
/* Teardown: the oldest op, removed from every list, or NULL when empty. */
struct opq_op *opq_conn_take(struct opq_conn *qc);
/* Take a WAITING op off its match queue (it stays WAITING in order): a
 * remote receive that was matched to an incoming message. */
void opq_conn_unmatch(struct opq_conn *qc, struct opq_op *op);
/* First posted receive that accepts a send with this tag. */
struct opq_op *opq_conn_find_recv(const struct opq_conn *qc, uint64_t tag);
/* First waiting send that a receive with this tag (maybe UCCL_TAG_ANY) accepts. */
struct opq_op *opq_conn_find_send(const struct opq_conn *qc, uint64_t tag);

#endif
