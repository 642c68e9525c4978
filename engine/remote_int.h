/* SPDX-License-Identifier: MIT */
/*
 * remote_int: what engine/remote.c (channels, sending, the hooks engine.c
 * calls) and engine/rrecv.c (what arrives: puts, signals, sends matched in
 * order, gets answered, voids) share. Private to those two files.
 */
#ifndef UCCL_ENGINE_REMOTE_INT_H
#define UCCL_ENGINE_REMOTE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine_int.h"
#include "engine/wire.h"

#define RREC_BUCKETS     4096u        /* hash of incoming-send records */
#define REFUSED_RING     64u          /* recent refusals per channel, for late packets */
#define REC_PER_CONN_MAX 1024u        /* one connection cannot take every record */

#define RFL_QUEUED  0x01u             /* on its channel's submit queue */
#define RFL_VOID    0x02u             /* abandoned send: a void goes out for its sequence */
#define RFL_SIGWAIT 0x04u             /* on its side's hold list (behind a put held by PUT_WINDOW) */
#define RFL_GET_ACKED 0x08u           /* get: the request was acknowledged */
#define RFL_GET_DATA  0x10u           /* get: every response byte arrived */
#define RFL_EPWAIT    0x20u           /* queued: its endpoint has its bytes in flight */
#define RFL_PUTLIST   0x40u           /* on its side's list of unacknowledged puts */
#define RFL_SIGDONE   0x80u           /* signal acknowledged: completes after earlier puts */

/* Puts of one connection that may be unsettled at once, counted from the
 * oldest the sender has not seen settled (acknowledged, or its void
 * acknowledged): the receiver tracks settled puts in a bitmap this wide. */
#define PUT_WINDOW   1024u
/* Signals a receiving side holds for earlier puts; one more is refused
 * with -ENOBUFS and the sender sends it again later. */
#define SIG_HOLD_MAX 64u

/* Opcode of a get's response on the wire: not a client opcode. */
#define OP_GET_RESP 0x81u
/* A put void: the sender gave up on put number ord (it failed before all of
 * it was written): the receiver counts it settled. Not a client opcode. */
#define OP_PUT_VOID 0x82u
#define GET_REQ_LEN 16u               /* u64 length, u64 get id, little endian */

/* A get's response, snapshotted at the responder until acknowledged. */
struct rjob {
	struct rjob *next;             /* channel's job queue */
	struct rchan *ch;              /* whose budget share it holds */
	struct conn *c;                /* while queued: the side it answers for */
	uint8_t *buf;
	uint64_t len, get_id;
	uint32_t rep, rwire;           /* the requester's endpoint and wire id */
};

enum rrec_state {
	REC_EARLY = 1,     /* buffered, its turn has not come */
	REC_UNMATCHED,     /* buffered, took its turn, no receive yet (on um list) */
	REC_DIRECT,        /* matched on arrival: payload goes straight into the receive */
	REC_MATCHED,       /* buffered, then matched: copied when complete */
	REC_DISCARD,       /* its receive failed or went away: packets are counted only */
	REC_VOID,          /* the sender abandoned this sequence number */
};

/* An incoming send on one connection side, from its first packet until it
 * is received (or discarded). */
struct rrec {
	struct rrec *hnext;            /* hash chain */
	struct rrec *cnext, *cprev;    /* the side's records */
	struct rrec *unext;            /* um list */
	struct conn *c;
	uint64_t seq, msg_id, tag, len, got;
	uint8_t *buf;                  /* EARLY, UNMATCHED, MATCHED */
	struct opq_op *recv;           /* DIRECT, MATCHED */
	int err;                       /* first write error into the receive */
	uint8_t state;
};

struct refusal {
	uint32_t ep, wire;
	uint64_t seq, msg_id;
	int32_t err;
};

struct rchan {
	struct engine *e;
	struct tpchan *tp;
	uint32_t id;
	uint32_t live_pos;
	struct conn *conns;            /* bound sides, through r.ch_next */
	uint32_t nconns;
	uint32_t njobs;                /* get responses held (queued or in flight) */
	struct opq_op *q_head, *q_tail;/* submit queue */
	uint32_t nqueued;
	uint32_t mtu;
	struct refusal *refused;       /* REFUSED_RING, from the first refusal on */
	uint32_t refused_next;
	bool blocked;                  /* the channel's last answer was -EAGAIN and no
					* completion made room since: the queue waits
					* for a completion, not for its ops' times */
	bool failed;                   /* a packet went unacknowledged max_retx times: the
					* peer is out of reach and the psn space has a hole */
	bool failure_told;             /* engine_chan_failures returned it */
	struct rjob *j_head, *j_tail;  /* get responses waiting for channel space */
	uint64_t j_due;                /* when they may go: 0, or after a refusal for memory */
	uint64_t j_wait;               /* the wait after the last such refusal (doubles) */
	uint64_t jbytes;               /* their snapshots' bytes, and those in flight */
	int64_t deficit;               /* deficit round robin: bytes it may still send */
	uint64_t q_due;                /* earliest time a queued op may go (UINT64_MAX: none
					* by time; ops held by room wait for a kick) */
	uint64_t kick_seen;            /* remote.kick when the queue was last walked */
};

struct rslot {
	struct opq_op *op;             /* NULL: forgotten (or free), or a job's */
	struct rjob *job;              /* a get response in flight */
	uint32_t gen;
	uint32_t next_free;
	bool used;
};

struct remote {
	struct rchan **chans;          /* by id */
	struct rchan **live;           /* dense */
	uint32_t max_chans, nlive, rr;
	struct rslot *slots;           /* nalloc of at most nslots, grown on demand */
	uint32_t nslots, nalloc, free_head;
	uint32_t nused;                /* slots taken */
	bool no_slots;                 /* a submission found no free slot */
	uint64_t walks;                /* drain_queue walks so far (ep->r_held_walk) */
	uint64_t kick;                 /* bumped by every completion: room may have come
					* (channel, slots, an endpoint's bytes) */
	uint64_t max_unexp_bytes;
	uint32_t max_unexp_msgs;
	struct rrec *buckets[RREC_BUCKETS];
	/* credit for the peers whose cc is receiver-driven (eqds), paced at
	 * pull_rate_bps across all channels (engine/pull.h) */
	struct pull *pull;
	uint64_t pull_t;               /* when it next has work */
	uint32_t failures_untold;      /* channels failed since engine_chan_failures */
	struct opq_op *linger;         /* split ops waiting for their parts after a reset */
	/* bytes read ahead of a packet from a region the daemon does not map
	 * (cb_read): rd_len of them at rd_off of submission rd_cookie */
	uint8_t *rd_buf;
	uint64_t rd_cookie, rd_off;
	uint32_t rd_len;
};

#define NO_SLOT UINT32_MAX

/* remote.c, for rrecv.c: op (WAITING on a remote side) is done with res. */
void remote_op_finish(struct engine *e, struct opq_op *op, int res);

/* remote.c, for lanes.c: message slots (a split put's parts name its slot
 * by cookie), and held signals going out once nothing holds them. */
uint32_t remote_slot_get(struct remote *rm);
void remote_slot_put(struct remote *rm, uint32_t i);
uint64_t remote_cookie(const struct remote *rm, uint32_t i);
struct rslot *remote_slot_of(struct remote *rm, uint64_t cookie, uint32_t *idx);
void remote_release_signals(struct engine *e, struct conn *c);

/* lanes.c, for remote.c */
/* A put or get about to start on side c: split it over c's lanes if it is
 * long enough (op->len becomes its own part). */
void lanes_split(struct engine *e, struct conn *c, struct opq_op *op);
/* Side c is detached: forget its puts' parts (they report to nobody). */
void lanes_forget(struct engine *e, struct opq_op *op);
/* op's side is being reset with op's parts out: op leaves the side and
 * completes with its last part's report (engine_lane_done). */
void lanes_linger(struct engine *e, struct opq_op *op);

/* A receiving side's state of the peer's puts and the signals waiting for
 * them (allocated with the first put or signal that arrives). */
struct rput;
struct rputs {
	uint64_t done;                 /* every put numbered below it has settled */
	uint64_t map[PUT_WINDOW / 64]; /* settled puts in [done, done + PUT_WINDOW), bit n % W */
	uint64_t sig[PUT_WINDOW / 64]; /* of those, puts that raise the semaphore (WIRE_F_SIGNAL) */
	struct rput *partial;          /* puts of several packets, some arrived */
	uint64_t held[SIG_HOLD_MAX];   /* signals waiting: the puts before each */
	uint32_t nheld;
};

/* rrecv.c, for remote.c */
/* tpchan's deliver callback (arg: the channel). */
int rrecv_deliver(void *arg, const struct wire_data *d);
/* A buffered record meets receive op (posted later). */
void rrecv_match(struct engine *e, struct conn *c, struct rrec *r, struct opq_op *op);
void rrecv_free(struct engine *e, struct rrec *r);
/* Its receive went away: count the rest of its packets, keep nothing. */
void rrecv_discard(struct engine *e, struct rrec *r);
/* The side goes away: free its put state (held signals are dropped: the
 * connection they were for is gone). */
void rrecv_puts_free(struct engine *e, struct conn *c);

#endif
