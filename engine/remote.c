/* SPDX-License-Identifier: MIT */
/*
 * remote: the engine's connections to endpoints on other hosts. One channel
 * (tpchan) per remote host carries every connection to it; packets name the
 * destination endpoint and connection.
 *
 * Sending: a waiting op becomes a channel message whose cookie names a slot
 * pointing back at the op, so an op that goes away early (connection reset,
 * endpoint removed) is forgotten rather than dereferenced. A full channel
 * leaves ops in the channel's submit queue, in order. A signal goes out only
 * once every earlier put on its connection was acknowledged, i.e. written at
 * the receiver, whatever paths the puts were sprayed over.
 *
 * Receiving: put payloads are written at their final place after the key,
 * owner and bounds checks; signals bump the semaphore. Sends are matched to
 * receives in the sender's issue order (a per-connection sequence number in
 * the packet's roff): a send whose turn has come and that finds a posted
 * receive is written straight into it; otherwise it is buffered, within
 * max_unexpected_bytes. Past that its packets are refused with -ENOBUFS and
 * the sender sends the message again later with the same sequence number
 * (backpressure: nothing is dropped, memory stays bounded). A send the sender
 * had to abandon (its region went away) is replaced by a "void" (a NOP
 * message with the same sequence), so that later sends still take their turn.
 *
 * Get: the requester sends a 16-byte request (length, get id) to the
 * region's host; that host checks key, owner and range, copies the range
 * into a buffer (within the same budget as buffered sends, else -ENOBUFS and
 * the requester asks again later) and sends it back as a GET_RESP message
 * carrying the get id, which the requester writes at its final place. The
 * get completes when its request was acknowledged and every response byte
 * arrived.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_int.h"

#define RREC_BUCKETS     4096u        /* hash of incoming-send records */
#define REFUSED_RING     64u          /* recent refusals per channel, for late packets */
#define RETRY_MIN_NS     50000ull     /* resend of a send the receiver had no room for */
#define RETRY_MAX_NS     10000000ull
#define DEF_REMOTE_MSGS  65536u
#define DEF_UNEXP_BYTES  (64ull << 20)
#define DEF_UNEXP_MSGS   16384u
#define REC_PER_CONN_MAX 1024u        /* one connection cannot take every record */
#define MAX_REMOTE_MSGS  (1u << 22)
#define TX_CHUNK         64
#define DRR_QUANTUM      (64u * 1024)  /* bytes a busy channel earns per turn */

#define RFL_QUEUED  0x01u             /* on its channel's submit queue */
#define RFL_VOID    0x02u             /* abandoned send: a void goes out for its sequence */
#define RFL_SIGWAIT 0x04u             /* signal waiting for earlier puts */
#define RFL_GET_ACKED 0x08u           /* get: the request was acknowledged */
#define RFL_GET_DATA  0x10u           /* get: every response byte arrived */
#define RFL_EPWAIT    0x20u           /* queued: its endpoint has its bytes in flight */

/* Opcode of a get's response on the wire: not a client opcode. */
#define OP_GET_RESP 0x81u
#define GET_REQ_LEN 16u               /* u64 length, u64 get id, little endian */

/* A get's response, snapshotted at the responder until acknowledged. */
struct rjob {
	struct rjob *next;             /* channel's job queue */
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
	struct opq_op *q_head, *q_tail;/* submit queue */
	uint32_t nqueued;
	bool blocked;                  /* refused a message (-EAGAIN): the queue waits
					* for a completion, not for its ops' times */
	struct refusal refused[REFUSED_RING];
	uint32_t refused_next;
	bool failed;                   /* a packet went unacknowledged max_retx times: the
					* peer is out of reach and the psn space has a hole */
	struct rjob *j_head, *j_tail;  /* get responses waiting for channel space */
	uint32_t mtu;
	int64_t deficit;               /* deficit round robin: bytes it may still send */
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
	struct rslot *slots;
	uint32_t nslots, free_head;
	bool no_slots;                 /* a submission found no free slot */
	uint64_t max_unexp_bytes;
	uint32_t max_unexp_msgs;
	struct rrec *buckets[RREC_BUCKETS];
};

#define NO_SLOT UINT32_MAX

/* ---- message slots ---- */

static uint32_t slot_get(struct remote *rm)
{
	uint32_t i = rm->free_head;

	if (i == NO_SLOT)
		return NO_SLOT;
	rm->free_head = rm->slots[i].next_free;
	rm->slots[i].used = true;
	rm->slots[i].op = NULL;
	rm->slots[i].job = NULL;
	return i;
}

static void slot_put(struct remote *rm, uint32_t i)
{
	rm->slots[i].used = false;
	rm->slots[i].op = NULL;
	rm->slots[i].gen++;
	rm->slots[i].next_free = rm->free_head;
	rm->free_head = i;
	rm->no_slots = false;
}

static uint64_t cookie_of(const struct remote *rm, uint32_t i)
{
	return (uint64_t)rm->slots[i].gen << 32 | i;
}

static struct rslot *slot_of(struct remote *rm, uint64_t cookie, uint32_t *idx)
{
	uint32_t i = (uint32_t)cookie;

	if (i >= rm->nslots || !rm->slots[i].used || rm->slots[i].gen != (uint32_t)(cookie >> 32))
		return NULL;
	*idx = i;
	return &rm->slots[i];
}

/* ---- submit queue ---- */

static void queue_push(struct rchan *ch, struct opq_op *op)
{
	op->rflags |= RFL_QUEUED;
	op->rnext = NULL;
	if (ch->q_tail)
		ch->q_tail->rnext = op;
	else
		ch->q_head = op;
	ch->q_tail = op;
	ch->nqueued++;
}

static void queue_del(struct rchan *ch, struct opq_op *op)
{
	struct opq_op *prev = NULL;

	for (struct opq_op *o = ch->q_head; o; prev = o, o = o->rnext) {
		if (o != op)
			continue;
		if (prev)
			prev->rnext = o->rnext;
		else
			ch->q_head = o->rnext;
		if (ch->q_tail == o)
			ch->q_tail = prev;
		ch->nqueued--;
		break;
	}
	op->rflags &= (uint8_t)~RFL_QUEUED;
	op->rnext = NULL;
}

/* ---- sending ---- */

static void finish(struct engine *e, struct opq_op *op, int res)
{
	struct conn *c = op->rside;

	if (op->res == 0) {
		op->res = res;
		if (res < 0)
			eng_count_err(e, res);
	}
	op->res_len = op->res == 0 && op->opcode != UCCL_OP_SIGNAL ? op->len : 0;
	op->res_tag = op->opcode == UCCL_OP_SEND && op->res == 0 ? op->key : 0;
	if (op->res == 0 && (op->opcode == UCCL_OP_PUT || op->opcode == UCCL_OP_GET)) {
		e->st.bytes += op->len;
		c->ep->st.bytes += op->len;
	}
	eng_op_finish_waiting(e, c, op);
}

/* Bytes an op puts on the wire or asks back (a void carries none). */
static uint64_t op_bytes(const struct opq_op *op)
{
	return (op->rflags & RFL_VOID) ? 0 : op->len;
}

/* Its completion, reset or detach gives the endpoint's bytes back. */
static void op_uncharge(struct opq_op *op)
{
	struct conn *c = op->rside;

	if (op->rcharged && c) {
		c->ep->r_inflight -= op->rcharged;
		op->rcharged = 0;
	}
}

/* Hand op to its channel: 0 (in flight, or failed and settled), -EAGAIN
 * (no room in the channel: the caller keeps it, and the queue behind it,
 * waiting), -EBUSY (its endpoint has max_ep_inflight_bytes in flight: only
 * this op waits; other endpoints' ops go past it). */
static int submit_one(struct engine *e, struct rchan *ch, struct opq_op *op)
{
	struct remote *rm = e->rm;
	struct conn *c = op->rside;
	struct ep *ep = c->ep;
	uint64_t bytes = op_bytes(op);
	struct tpchan_msg m = {
		.opcode = op->opcode,
		.dst_ep = c->r.rep,
		.dst_conn = c->r.rconn_wire,
		.rkey = op->key,
		.roff = op->roff,
		.len = op->len,
	};
	uint32_t i;
	int r;

	/* one op always goes, however large: the limit bounds what is added
	 * to bytes already in flight */
	if (e->max_ep_inflight && ep->r_inflight && bytes > e->max_ep_inflight - ep->r_inflight) {
		op->rflags |= RFL_EPWAIT;
		return -EBUSY;
	}
	i = slot_get(rm);
	if (i == NO_SLOT) {
		rm->no_slots = true;
		return -EAGAIN;
	}
	op->rflags &= (uint8_t)~RFL_EPWAIT;
	if (op->opcode == UCCL_OP_SEND)
		m.roff = op->rseq;
	if (op->opcode == UCCL_OP_GET)
		m.len = GET_REQ_LEN;   /* the request; the data comes back */
	if (op->rflags & RFL_VOID) {
		m.opcode = UCCL_OP_NOP;
		m.rkey = 0;
		m.len = 0;
	}
	m.cookie = cookie_of(rm, i);
	r = tpchan_submit(ch->tp, &m);
	if (r < 0) {
		slot_put(rm, i);
		if (r == -EAGAIN) {
			ch->blocked = true;
			return r;
		}
		finish(e, op, r);
		return 0;
	}
	rm->slots[i].op = op;
	op->rmsg = i;
	op->rcharged = bytes;
	ep->r_inflight += bytes;
	e->st.remote_msgs++;
	return 0;
}

/* Submit queued ops in order while the channel takes them; ops waiting for
 * a retry time are stepped over. */
static void drain_queue(struct engine *e, struct rchan *ch, uint64_t now)
{
	struct opq_op *prev = NULL, *op = ch->q_head, *next;
	const struct ep *held[8];      /* endpoints at their limit in this pass */
	uint32_t nheld = 0;
	int r;

	ch->blocked = false;           /* until submit_one finds it full again */
	while (op) {
		bool skip = op->rdue > now;

		next = op->rnext;
		/* an endpoint's later ops do not overtake one held by its
		 * limit; they wait for the same completions */
		for (uint32_t k = 0; k < nheld && !skip; k++) {
			skip = held[k] == ((const struct conn *)op->rside)->ep;
			if (skip)
				op->rflags |= RFL_EPWAIT;
		}
		if (!skip) {
			r = submit_one(e, ch, op);
			if (r == -EAGAIN)
				return;
			if (r == -EBUSY) {
				if (nheld == sizeof(held) / sizeof(held[0]))
					return;
				held[nheld++] = ((const struct conn *)op->rside)->ep;
				skip = true;
			}
		}
		if (skip) {
			prev = op;
			op = next;
			continue;
		}
		if (prev)
			prev->rnext = next;
		else
			ch->q_head = next;
		if (ch->q_tail == op)
			ch->q_tail = prev;
		ch->nqueued--;
		op->rflags &= (uint8_t)~RFL_QUEUED;
		op->rnext = NULL;
		op = next;
	}
}

static void job_free(struct engine *e, struct rjob *j)
{
	e->st.unexpected_bytes -= j->len;
	free(j->buf);
	free(j);
}

/* Send queued get responses while the channel takes them. */
static void drain_jobs(struct engine *e, struct rchan *ch)
{
	struct remote *rm = e->rm;
	struct rjob *j;

	while ((j = ch->j_head)) {
		struct tpchan_msg m = { .opcode = OP_GET_RESP, .dst_ep = j->rep, .dst_conn = j->rwire,
					.rkey = j->get_id, .len = j->len };
		uint32_t i = slot_get(rm);
		int r;

		if (i == NO_SLOT) {
			rm->no_slots = true;
			return;
		}
		m.cookie = cookie_of(rm, i);
		r = tpchan_submit(ch->tp, &m);
		if (r == -EAGAIN) {
			slot_put(rm, i);
			ch->blocked = true;
			return;
		}
		ch->j_head = j->next;
		if (!ch->j_head)
			ch->j_tail = NULL;
		j->next = NULL;
		j->c = NULL;
		if (r < 0) {
			slot_put(rm, i);
			job_free(e, j);    /* the requester's get then waits for its connection */
			continue;
		}
		rm->slots[i].job = j;
		e->st.remote_msgs++;
	}
}

static void start_send(struct engine *e, struct rchan *ch, struct opq_op *op)
{
	op->rdue = 0;
	/* behind others already waiting, to keep the order */
	if (ch->q_head || submit_one(e, ch, op) < 0) {
		queue_push(ch, op);
		e->st.remote_queued++;
	}
}

/* The put sequence of the first earlier put still waiting, or UINT64_MAX:
 * the reorder list holds a side's unposted ops in issue order. */
static uint64_t first_waiting_put(const struct conn *c)
{
	for (const struct opq_op *op = c->q.order.head; op; op = op->onext)
		if (op->state == OPQ_WAITING && op->opcode == UCCL_OP_PUT)
			return op->rseq;
	return UINT64_MAX;
}

/* Signals whose earlier puts are all written go out, in order. */
static void release_signals(struct engine *e, struct conn *c)
{
	struct opq_op *op;

	while ((op = c->r.sig_head) && first_waiting_put(c) >= op->rseq) {
		c->r.sig_head = op->rnext;
		if (!c->r.sig_head)
			c->r.sig_tail = NULL;
		op->rflags &= (uint8_t)~RFL_SIGWAIT;
		op->rnext = NULL;
		start_send(e, c->r.ch, op);
	}
}

static void cb_complete(void *arg, uint64_t cookie, int res)
{
	struct rchan *ch = arg;
	struct engine *e = ch->e;
	struct remote *rm = e->rm;
	struct opq_op *op;
	struct rslot *s;
	struct conn *c;
	uint32_t i;
	uint64_t backoff;
	bool put;

	ch->blocked = false;           /* a message left the channel: room for the queue */
	if (res == -ETIMEDOUT)
		ch->failed = true;     /* only tpchan's own give-up reports it */
	s = slot_of(rm, cookie, &i);
	if (!s)
		return;
	op = s->op;
	if (s->job)
		job_free(e, s->job);   /* a get response: done either way */
	slot_put(rm, i);
	if (!op)
		return;                /* its side went away meanwhile */
	op->rmsg = OPQ_NO_RMSG;
	op_uncharge(op);
	c = op->rside;
	if (op->opcode == UCCL_OP_GET && (res == 0 || (res == -ENOBUFS && op->lmr))) {
		if (res == 0) {
			/* the response may have arrived before this ack */
			op->rflags |= RFL_GET_ACKED;
			if (op->rflags & RFL_GET_DATA)
				finish(e, op, 0);
			return;
		}
		/* the responder had no room for a snapshot: ask again later */
		backoff = op->rbackoff_us ? (uint64_t)op->rbackoff_us * 1000 : RETRY_MIN_NS;
		op->rdue = e->now + backoff;
		backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
		op->rbackoff_us = (uint32_t)(backoff / 1000);
		queue_push(c->r.ch, op);
		e->st.send_retries++;
		return;
	}
	if (op->opcode == UCCL_OP_SEND && res < 0 && res != -ECONNRESET && res != -ETIMEDOUT) {
		bool abandoned = !op->lmr || res == -ECANCELED;

		/* The receiver had no room: the same message again later,
		 * with its sequence number, so that order holds. A message
		 * we could not finish sending leaves a partial record there:
		 * a void retires its sequence number. */
		if ((res == -ENOBUFS && !abandoned) ||
		    ((op->rflags & RFL_VOID) && res == -ENOBUFS) ||
		    (abandoned && !(op->rflags & RFL_VOID))) {
			if (abandoned && !(op->rflags & RFL_VOID)) {
				op->rflags |= RFL_VOID;
				op->rbackoff_us = 0;
			}
			backoff = op->rbackoff_us ? (uint64_t)op->rbackoff_us * 1000 : RETRY_MIN_NS;
			if (res != -ENOBUFS)
				backoff = 0;
			op->rdue = e->now + backoff;
			backoff = backoff ? backoff * 2 : RETRY_MIN_NS;
			if (backoff > RETRY_MAX_NS)
				backoff = RETRY_MAX_NS;
			op->rbackoff_us = (uint32_t)(backoff / 1000);
			queue_push(c->r.ch, op);
			e->st.send_retries++;
			return;
		}
	}
	if (op->rflags & RFL_VOID)
		res = -ECANCELED;
	/* finish may post op and return it to the pool: look at it first */
	put = op->opcode == UCCL_OP_PUT;
	finish(e, op, res);
	if (put && c->r.sig_head)
		release_signals(e, c);
}

static int cb_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	struct rchan *ch = arg;
	struct engine *e = ch->e;
	struct opq_op *op;
	struct rslot *s;
	struct mr tmp = { .kind = MR_MAPPED, .base = dst, .len = len };
	uint32_t i;

	s = slot_of(e->rm, cookie, &i);
	if (s && s->job) {
		memcpy(dst, s->job->buf + off, len);
		return 0;
	}
	op = s ? s->op : NULL;
	if (op && op->opcode == UCCL_OP_GET) {
		uint8_t req[GET_REQ_LEN];

		for (int k = 0; k < 8; k++) {
			req[k] = (uint8_t)(op->len >> (8 * k));
			req[8 + k] = (uint8_t)(op->rseq >> (8 * k));
		}
		memcpy(dst, req + off, len);
		return 0;
	}
	if (!op || !op->lmr)
		return -ECANCELED;
	return eng_copy(e, &tmp, 0, op->lmr, op->loff + off, len);
}

void remote_start(struct engine *e, struct conn *c, struct opq_op *op);

/* ---- incoming sends ---- */

static struct rrec **bucket(struct remote *rm, const struct conn *c, uint64_t seq)
{
	uint64_t h = (uint64_t)(uintptr_t)c * 0x9e3779b97f4a7c15ull ^ seq * 0xc2b2ae3d27d4eb4full;

	return &rm->buckets[(h >> 32) & (RREC_BUCKETS - 1)];
}

static struct rrec *rec_find(struct remote *rm, const struct conn *c, uint64_t seq)
{
	for (struct rrec *r = *bucket(rm, c, seq); r; r = r->hnext)
		if (r->c == c && r->seq == seq)
			return r;
	return NULL;
}

static struct rrec *rec_new(struct engine *e, struct conn *c, const struct wire_data *d, uint8_t state)
{
	struct remote *rm = e->rm;
	struct rrec *r = calloc(1, sizeof(*r)), **b;

	if (!r)
		return NULL;
	r->c = c;
	r->seq = d->roff;
	r->msg_id = d->msg_id;
	r->tag = d->rkey;
	r->len = d->msg_len;
	r->state = state;
	b = bucket(rm, c, r->seq);
	r->hnext = *b;
	*b = r;
	r->cnext = c->r.recs;
	if (c->r.recs)
		c->r.recs->cprev = r;
	c->r.recs = r;
	c->r.nrecs++;
	e->st.unexpected_msgs++;
	return r;
}

static void um_del(struct conn *c, struct rrec *r)
{
	struct rrec *prev = NULL;

	for (struct rrec *x = c->r.um_head; x; prev = x, x = x->unext) {
		if (x != r)
			continue;
		if (prev)
			prev->unext = x->unext;
		else
			c->r.um_head = x->unext;
		if (c->r.um_tail == x)
			c->r.um_tail = prev;
		break;
	}
	r->unext = NULL;
}

static void um_add(struct conn *c, struct rrec *r)
{
	r->state = REC_UNMATCHED;
	r->unext = NULL;
	if (c->r.um_tail)
		c->r.um_tail->unext = r;
	else
		c->r.um_head = r;
	c->r.um_tail = r;
}

static void buf_release(struct engine *e, struct rrec *r)
{
	if (r->buf) {
		free(r->buf);
		r->buf = NULL;
		e->st.unexpected_bytes -= r->len;
	}
}

static void rec_free(struct engine *e, struct rrec *r)
{
	struct rrec **pp = bucket(e->rm, r->c, r->seq);
	struct conn *c = r->c;

	while (*pp != r)
		pp = &(*pp)->hnext;
	*pp = r->hnext;
	if (r->cprev)
		r->cprev->cnext = r->cnext;
	else
		c->r.recs = r->cnext;
	if (r->cnext)
		r->cnext->cprev = r->cprev;
	if (r->state == REC_UNMATCHED)
		um_del(c, r);
	if (r->recv)
		r->recv->rrec = NULL;
	buf_release(e, r);
	e->st.unexpected_msgs--;
	c->r.nrecs--;
	free(r);
}

/* Its receive is gone or failed: count the rest of its packets, keep nothing. */
static void rec_discard(struct engine *e, struct rrec *r)
{
	if (r->state == REC_UNMATCHED)
		um_del(r->c, r);
	r->state = REC_DISCARD;
	if (r->recv)
		r->recv->rrec = NULL;
	r->recv = NULL;
	buf_release(e, r);
	if (r->got == r->len)
		rec_free(e, r);
}

static void recv_finish(struct engine *e, struct conn *c, struct opq_op *op, int res, uint64_t len,
			uint64_t tag)
{
	op->res = res;
	op->res_len = len;
	op->res_tag = tag;
	op->rrec = NULL;
	if (res < 0) {
		if (res == -EMSGSIZE)
			e->st.err_msgsize++;
		else
			eng_count_err(e, res);
	} else {
		e->st.bytes += len;
		c->ep->st.bytes += len;
	}
	eng_op_finish_waiting(e, c, op);
}

/* A record that was buffered meets receive op (its turn came, or op was
 * posted later). */
static void match_rec(struct engine *e, struct conn *c, struct rrec *r, struct opq_op *op)
{
	struct mr tmp;
	int res;

	opq_conn_unmatch(&c->q, op);
	if (r->state == REC_UNMATCHED)
		um_del(c, r);
	if (r->len > op->len) {
		/* as on one host: the receiver learns the length it needs */
		recv_finish(e, c, op, -EMSGSIZE, r->len, r->tag);
		rec_discard(e, r);
		return;
	}
	if (r->got == r->len) {
		tmp = (struct mr){ .kind = MR_MAPPED, .base = r->buf, .len = r->len };
		res = eng_copy(e, op->lmr, op->loff, &tmp, 0, r->len);
		recv_finish(e, c, op, res, r->len, r->tag);
		rec_free(e, r);
		return;
	}
	r->state = REC_MATCHED;
	r->recv = op;
	op->rrec = r;
}

/* Every packet of r arrived. */
static void rec_complete(struct engine *e, struct rrec *r)
{
	struct mr tmp;
	int res;

	switch (r->state) {
	case REC_DIRECT:
		recv_finish(e, r->c, r->recv, r->err, r->len, r->tag);
		r->recv = NULL;
		rec_free(e, r);
		break;
	case REC_MATCHED:
		tmp = (struct mr){ .kind = MR_MAPPED, .base = r->buf, .len = r->len };
		res = eng_copy(e, r->recv->lmr, r->recv->loff, &tmp, 0, r->len);
		recv_finish(e, r->c, r->recv, res, r->len, r->tag);
		r->recv = NULL;
		rec_free(e, r);
		break;
	case REC_DISCARD:
		rec_free(e, r);
		break;
	default:
		break;                 /* buffered: waits for a receive */
	}
}

/* Let sends whose turn has come take it: match the first posted receive
 * that takes its tag, else queue up unmatched. A receive still waiting was
 * checked against every unmatched message when it was posted and when each
 * took its turn, so matching it to this later one keeps the order. */
static void order_advance(struct engine *e, struct conn *c)
{
	struct rrec *r;
	struct opq_op *op;

	while ((r = rec_find(e->rm, c, c->r.next_seq))) {
		if (r->state == REC_VOID) {
			c->r.next_seq++;
			rec_free(e, r);
			continue;
		}
		if (r->state != REC_EARLY)
			break;
		c->r.next_seq++;
		op = opq_conn_find_recv(&c->q, r->tag);
		if (op)
			match_rec(e, c, r, op);
		else
			um_add(c, r);
	}
}

static void remember_refusal(struct rchan *ch, const struct conn *c, const struct wire_data *d, int err)
{
	struct refusal *f = &ch->refused[ch->refused_next++ % REFUSED_RING];

	*f = (struct refusal){ .ep = c->ep->id, .wire = c->r.wire_id, .seq = d->roff,
			       .msg_id = d->msg_id, .err = err };
}

static int recall_refusal(const struct rchan *ch, const struct conn *c, const struct wire_data *d)
{
	for (uint32_t i = 0; i < REFUSED_RING; i++) {
		const struct refusal *f = &ch->refused[i];

		if (f->err && f->ep == c->ep->id && f->wire == c->r.wire_id && f->seq == d->roff &&
		    f->msg_id == d->msg_id)
			return f->err;
	}
	return -ESTALE;
}

/* The first packet of a send we have no record of. Returns the record, or
 * NULL with *err (the packet is refused). */
static struct rrec *rx_send_new(struct engine *e, struct rchan *ch, struct conn *c,
				const struct wire_data *d, int *err)
{
	struct remote *rm = e->rm;
	struct opq_op *op = NULL;
	struct rrec *r;

	if (d->roff < c->r.next_seq) {
		*err = recall_refusal(ch, c, d);   /* a late packet of a settled send */
		return NULL;
	}
	if (d->roff == c->r.next_seq)
		op = opq_conn_find_recv(&c->q, d->rkey);
	/* After a refusal for lack of room, later sends of the connection are
	 * refused too until the refused one got in: else they would fill the
	 * room it waits for and never be able to take their turn before it. */
	if (!op && d->roff > c->r.blocked_seq)
		goto nobuf;
	if (c->r.nrecs >= REC_PER_CONN_MAX)
		goto nobuf;
	if (op) {
		if (d->msg_len > op->len) {
			opq_conn_unmatch(&c->q, op);
			recv_finish(e, c, op, -EMSGSIZE, d->msg_len, d->rkey);
			c->r.next_seq++;
			remember_refusal(ch, c, d, -EMSGSIZE);
			order_advance(e, c);
			*err = -EMSGSIZE;
			return NULL;
		}
		if (e->st.unexpected_msgs >= rm->max_unexp_msgs)
			goto nobuf;
		r = rec_new(e, c, d, REC_DIRECT);
		if (!r)
			goto nobuf;
		if (d->roff == c->r.blocked_seq)
			c->r.blocked_seq = UINT64_MAX;
		opq_conn_unmatch(&c->q, op);
		r->recv = op;
		op->rrec = r;
		c->r.next_seq++;
		return r;
	}
	if (e->st.unexpected_msgs >= rm->max_unexp_msgs ||
	    d->msg_len > rm->max_unexp_bytes - e->st.unexpected_bytes)
		goto nobuf;
	r = rec_new(e, c, d, REC_EARLY);
	if (!r)
		goto nobuf;
	/* zeroed: a hostile sender that overlaps its packets leaves holes,
	 * which must not show another message's old bytes */
	r->buf = calloc(1, d->msg_len ? d->msg_len : 1);
	if (!r->buf) {
		rec_free(e, r);
		goto nobuf;
	}
	e->st.unexpected_bytes += d->msg_len;
	if (d->roff == c->r.blocked_seq)
		c->r.blocked_seq = UINT64_MAX;
	return r;
nobuf:
	e->st.rx_refused_nobuf++;
	if (d->roff < c->r.blocked_seq)
		c->r.blocked_seq = d->roff;
	*err = -ENOBUFS;
	return NULL;
}

static int rx_send(struct engine *e, struct rchan *ch, struct conn *c, const struct wire_data *d)
{
	struct rrec *r = rec_find(e->rm, c, d->roff);
	struct mr tmp = { .kind = MR_MAPPED, .base = (void *)d->payload, .len = d->payload_len };
	int err = 0;

	/* every packet of a message must name the length and tag its first
	 * one did: r's buffer (or the receive it goes to) was sized by it,
	 * and the payload's range was checked against this packet's length */
	if (r && r->msg_id == d->msg_id && (d->msg_len != r->len || d->rkey != r->tag))
		return -EBADMSG;
	if (r && r->msg_id != d->msg_id) {
		/* the sender gave up on r's message and sent it again (newer
		 * id): same sequence, same length and tag, start over */
		if (d->msg_id < r->msg_id || r->state == REC_VOID || d->msg_len != r->len ||
		    d->rkey != r->tag)
			return -ESTALE;
		r->msg_id = d->msg_id;
		r->got = 0;
		r->err = 0;
	}
	if (!r) {
		r = rx_send_new(e, ch, c, d, &err);
		if (!r)
			return err;
	}
	switch (r->state) {
	case REC_DIRECT:
		if (!r->err)
			r->err = eng_copy(e, r->recv->lmr, r->recv->loff + d->msg_off, &tmp, 0,
					  d->payload_len);
		break;
	case REC_EARLY:
	case REC_UNMATCHED:
	case REC_MATCHED:
		memcpy(r->buf + d->msg_off, d->payload, d->payload_len);
		break;
	default:
		break;
	}
	/* an honest sender never overlaps packets of one message */
	if (d->payload_len > r->len - r->got)
		return -EBADMSG;
	r->got += d->payload_len;
	if (r->got == r->len)
		rec_complete(e, r);
	order_advance(e, c);
	return 0;
}

/* The sender abandoned sequence roff: retire it. */
static int rx_void(struct engine *e, struct conn *c, const struct wire_data *d)
{
	struct rrec *r = rec_find(e->rm, c, d->roff);

	if (r) {
		if (d->msg_id < r->msg_id)
			return 0;
		switch (r->state) {
		case REC_DIRECT:
		case REC_MATCHED:
			recv_finish(e, c, r->recv, -ECANCELED, 0, 0);
			r->recv = NULL;
			rec_free(e, r);
			break;
		case REC_EARLY:
			buf_release(e, r);
			r->state = REC_VOID;
			r->msg_id = d->msg_id;
			break;
		case REC_VOID:
			break;
		default:
			rec_free(e, r);
			break;
		}
	} else if (d->roff >= c->r.next_seq) {
		if (e->st.unexpected_msgs >= e->rm->max_unexp_msgs || c->r.nrecs >= REC_PER_CONN_MAX) {
			e->st.rx_refused_nobuf++;
			return -ENOBUFS;
		}
		if (!rec_new(e, c, d, REC_VOID)) {
			e->st.rx_refused_nobuf++;
			return -ENOBUFS;
		}
	}
	order_advance(e, c);
	return 0;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int k = 7; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

/* A get request for a region of the client that owns c: snapshot the range
 * and queue the response (sent from the transmit side, not from inside
 * the channel's receive path). */
static int rx_get_req(struct engine *e, struct rchan *ch, struct conn *c, const struct wire_data *d)
{
	const struct mr *m = mr_table_by_rkey(e->mrs, d->rkey);
	struct mr tmp;
	struct rjob *j;
	uint64_t len, id;
	int r;

	if (d->msg_len != GET_REQ_LEN || d->payload_len != GET_REQ_LEN)
		return -EBADMSG;
	len = le64(d->payload);
	id = le64(d->payload + 8);
	if (!m || m->client_id != c->ep->client_id) {
		e->st.rx_refused_access++;
		return -EACCES;
	}
	if (!mr_range_ok(m, d->roff, len)) {
		e->st.rx_refused_range++;
		return -ERANGE;
	}
	if (len > e->max_op_bytes)
		return -EMSGSIZE;
	if (c->r.rep == UINT32_MAX)
		return -ENOTCONN;
	if (len > e->rm->max_unexp_bytes - e->st.unexpected_bytes) {
		e->st.rx_refused_nobuf++;
		return -ENOBUFS;
	}
	j = calloc(1, sizeof(*j));
	if (j)
		j->buf = malloc(len ? len : 1);
	if (!j || !j->buf) {
		if (j)
			free(j);
		e->st.rx_refused_nobuf++;
		return -ENOBUFS;
	}
	tmp = (struct mr){ .kind = MR_MAPPED, .base = j->buf, .len = len };
	r = eng_copy(e, &tmp, 0, m, d->roff, len);
	if (r < 0) {
		free(j->buf);
		free(j);
		return r;
	}
	*j = (struct rjob){ .c = c, .buf = j->buf, .len = len, .get_id = id, .rep = c->r.rep,
			    .rwire = c->r.rconn_wire };
	e->st.unexpected_bytes += len;
	if (ch->j_tail)
		ch->j_tail->next = j;
	else
		ch->j_head = j;
	ch->j_tail = j;
	e->st.bytes += len;
	c->ep->st.bytes += len;
	return 0;
}

/* Our get's response: written at its final place. */
static int rx_get_resp(struct engine *e, struct conn *c, const struct wire_data *d)
{
	struct opq_op *op = NULL;
	struct mr tmp = { .kind = MR_MAPPED, .base = (void *)d->payload, .len = d->payload_len };
	int r = 0;

	for (struct opq_op *o = c->q.order.head; o; o = o->onext) {
		if (o->state == OPQ_WAITING && o->opcode == UCCL_OP_GET && o->rseq == d->rkey) {
			op = o;
			break;
		}
	}
	if (!op || (op->rflags & RFL_GET_DATA))
		return -ESTALE;
	if (d->msg_len != op->len)
		return -EBADMSG;
	if (op->lmr && d->payload_len)
		r = eng_copy(e, op->lmr, op->loff + d->msg_off, &tmp, 0, d->payload_len);
	if (r < 0 && op->res == 0)
		op->res = r;
	op->rgot += d->payload_len;
	if (op->rgot == op->len) {
		op->rflags |= RFL_GET_DATA;
		if (op->rflags & RFL_GET_ACKED)
			finish(e, op, 0);
	}
	return 0;
}

static int rx_put(struct engine *e, struct conn *c, const struct wire_data *d)
{
	const struct mr *m = mr_table_by_rkey(e->mrs, d->rkey);
	struct mr tmp = { .kind = MR_MAPPED, .base = (void *)d->payload, .len = d->payload_len };
	uint64_t off = d->roff + d->msg_off;

	/* the key must belong to the client that owns this connection */
	if (!m || m->client_id != c->ep->client_id) {
		e->st.rx_refused_access++;
		return -EACCES;
	}
	/* the whole put must fit, as on one host: one that does not is
	 * refused in every packet, so none of it is written (the wire
	 * format keeps [msg_off, msg_off + payload_len) inside msg_len) */
	if (!mr_range_ok(m, d->roff, d->msg_len)) {
		e->st.rx_refused_range++;
		return -ERANGE;
	}
	return eng_copy(e, m, off, &tmp, 0, d->payload_len);
}

/* tpchan hands over a new DATA packet (right token, good crc). */
static int cb_deliver(void *arg, const struct wire_data *d)
{
	struct rchan *ch = arg;
	struct engine *e = ch->e;
	struct ep *ep = eng_ep_get(e, d->dst_ep);
	uint32_t id = d->dst_conn & 0xffffu;
	struct conn *c;
	int r;

	if (!ep || ep->broken || id >= ep->max_conns)
		goto noconn;
	c = &ep->conns[id];
	if (!c->remote || c->state != CONN_UP || c->r.ch != ch || c->r.wire_id != d->dst_conn)
		goto noconn;
	switch (d->opcode) {
	case UCCL_OP_PUT:
		r = rx_put(e, c, d);
		break;
	case UCCL_OP_SIGNAL:
		if (d->msg_len) {
			r = -EBADMSG;
			break;
		}
		__atomic_fetch_add(&ep->sems[id], 1, __ATOMIC_RELEASE);
		eng_touch(e, ep);
		r = 0;
		break;
	case UCCL_OP_SEND:
		r = rx_send(e, ch, c, d);
		break;
	case UCCL_OP_NOP:
		r = d->msg_len ? -EBADMSG : rx_void(e, c, d);
		break;
	case UCCL_OP_GET:
		r = rx_get_req(e, ch, c, d);
		break;
	case OP_GET_RESP:
		r = rx_get_resp(e, c, d);
		break;
	default:
		r = -EOPNOTSUPP;
		break;
	}
	if (r == 0) {
		e->st.rx_delivered++;
		if (d->opcode == UCCL_OP_PUT) {
			e->st.bytes += d->payload_len;
			ep->st.bytes += d->payload_len;
		}
	} else if (r != -EACCES && r != -ERANGE && r != -ENOBUFS) {
		e->st.rx_refused_other++;
	}
	return r;
noconn:
	e->st.rx_refused_conn++;
	return -ECONNRESET;
}

static const struct tpchan_cb remote_cb = {
	.read = cb_read,
	.deliver = cb_deliver,
	.complete = cb_complete,
};

/* ---- from engine.c ---- */

void remote_start(struct engine *e, struct conn *c, struct opq_op *op)
{
	struct rrec *r;

	op->rside = c;
	op->rmsg = OPQ_NO_RMSG;
	if (c->r.rep == UINT32_MAX) {
		finish(e, op, -ENOTCONN);
		return;
	}
	switch (op->opcode) {
	case UCCL_OP_PUT:
		op->rseq = c->r.put_seq++;
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_SIGNAL:
		op->rseq = c->r.put_seq;       /* puts before this one */
		if (c->r.sig_head || first_waiting_put(c) < op->rseq) {
			op->rflags |= RFL_SIGWAIT;
			op->rnext = NULL;
			if (c->r.sig_tail)
				c->r.sig_tail->rnext = op;
			else
				c->r.sig_head = op;
			c->r.sig_tail = op;
			break;
		}
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_SEND:
		op->rseq = c->r.send_seq++;
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_GET:
		op->rseq = c->r.get_seq++;     /* the get id its response carries */
		op->rgot = 0;
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_RECV:
		for (r = c->r.um_head; r; r = r->unext) {
			if (op->key == UCCL_TAG_ANY || op->key == r->tag) {
				match_rec(e, c, r, op);
				return;
			}
		}
		break;                         /* waits on the receive queue */
	default:
		finish(e, op, -EOPNOTSUPP);
		break;
	}
}

void remote_cancel(struct engine *e, struct conn *c, struct opq_op *op)
{
	op->lmr = NULL;
	switch (op->opcode) {
	case UCCL_OP_RECV:
		if (op->rrec)
			rec_discard(e, op->rrec);
		op->rrec = NULL;
		eng_op_finish_waiting(e, c, op);
		break;
	case UCCL_OP_SEND:
		/* its sequence number must still be retired: a queued send
		 * goes out as a void, one in flight fails its read and then
		 * does (cb_complete) */
		if (op->rflags & RFL_QUEUED) {
			op->rflags |= RFL_VOID;
			op->rdue = 0;
		}
		break;
	case UCCL_OP_GET:
		/* queued: never asked, done now; in flight: its response is
		 * dropped on arrival (lmr is gone) and it completes with its
		 * acknowledgement */
		if (op->rflags & RFL_QUEUED) {
			queue_del(c->r.ch, op);
			eng_op_finish_waiting(e, c, op);
		}
		break;
	default:
		if (op->rflags & RFL_QUEUED) {
			bool put = op->opcode == UCCL_OP_PUT;

			queue_del(c->r.ch, op);
			eng_op_finish_waiting(e, c, op);
			/* a signal may have waited for this put alone */
			if (put && c->r.sig_head)
				release_signals(e, c);
		}
		/* in flight: the read fails, the message completes with it */
		break;
	}
}

void remote_conn_detach(struct engine *e, struct conn *c)
{
	struct rchan *ch = c->r.ch;

	if (!c->remote)
		return;
	for (struct opq_op *op = c->q.order.head; op; op = op->onext) {
		op_uncharge(op);
		if (op->rmsg != OPQ_NO_RMSG) {
			e->rm->slots[op->rmsg].op = NULL;
			op->rmsg = OPQ_NO_RMSG;
		}
		if (op->rflags & RFL_QUEUED)
			queue_del(ch, op);
		op->rflags = 0;
		op->rrec = NULL;
	}
	c->r.sig_head = c->r.sig_tail = NULL;
	/* responses not sent yet answer for this side: drop them (those in
	 * flight no longer refer to it) */
	for (struct rjob **pj = &ch->j_head, *j; (j = *pj);) {
		if (j->c != c) {
			pj = &j->next;
			continue;
		}
		*pj = j->next;
		job_free(e, j);
	}
	ch->j_tail = NULL;
	for (struct rjob *j = ch->j_head; j; j = j->next)
		ch->j_tail = j;
	while (c->r.recs) {
		c->r.recs->recv = NULL;
		if (c->r.recs->state == REC_UNMATCHED)
			c->r.recs->state = REC_EARLY;   /* the um list goes with the side */
		rec_free(e, c->r.recs);
	}
	if (c->r.ch_prev)
		c->r.ch_prev->r.ch_next = c->r.ch_next;
	else
		ch->conns = c->r.ch_next;
	if (c->r.ch_next)
		c->r.ch_next->r.ch_prev = c->r.ch_prev;
	ch->nconns--;
	c->remote = false;
	memset(&c->r, 0, sizeof(c->r));
}

/* ---- channels ---- */

struct remote *remote_new(const struct engine_params *p)
{
	struct remote *rm = calloc(1, sizeof(*rm));

	if (!rm)
		return NULL;
	rm->max_chans = p->max_chans;
	rm->nslots = p->max_remote_msgs ? p->max_remote_msgs : DEF_REMOTE_MSGS;
	rm->max_unexp_bytes = p->max_unexpected_bytes ? p->max_unexpected_bytes : DEF_UNEXP_BYTES;
	rm->max_unexp_msgs = p->max_unexpected_msgs ? p->max_unexpected_msgs : DEF_UNEXP_MSGS;
	if (rm->nslots > MAX_REMOTE_MSGS || p->max_chans > (1u << 16))
		goto fail;
	rm->chans = calloc(p->max_chans, sizeof(*rm->chans));
	rm->live = calloc(p->max_chans, sizeof(*rm->live));
	rm->slots = calloc(rm->nslots, sizeof(*rm->slots));
	if (!rm->chans || !rm->live || !rm->slots)
		goto fail;
	for (uint32_t i = 0; i < rm->nslots; i++)
		rm->slots[i].next_free = i + 1 < rm->nslots ? i + 1 : NO_SLOT;
	rm->free_head = 0;
	return rm;
fail:
	free(rm->chans);
	free(rm->live);
	free(rm->slots);
	free(rm);
	return NULL;
}

static void chan_free(struct engine *e, struct rchan *ch)
{
	struct remote *rm = e->rm;
	struct rchan *last = rm->live[--rm->nlive];

	rm->live[ch->live_pos] = last;
	last->live_pos = ch->live_pos;
	rm->chans[ch->id] = NULL;
	/* every side was detached: completions find forgotten slots only
	 * (and free the get responses in flight) */
	tpchan_free(ch->tp);
	while (ch->j_head) {
		struct rjob *j = ch->j_head;

		ch->j_head = j->next;
		job_free(e, j);
	}
	free(ch);
}

void remote_free(struct engine *e)
{
	struct remote *rm = e->rm;

	if (!rm)
		return;
	for (uint32_t i = 0; i < rm->max_chans; i++) {
		struct rchan *ch = rm->chans[i];

		if (!ch)
			continue;
		while (ch->conns)
			remote_conn_detach(e, ch->conns);
		chan_free(e, ch);
	}
	free(rm->chans);
	free(rm->live);
	free(rm->slots);
	free(rm);
	e->rm = NULL;
}

static struct rchan *chan_get(const struct engine *e, uint32_t chan)
{
	return e->rm && chan < e->rm->max_chans ? e->rm->chans[chan] : NULL;
}

int engine_chan_add(struct engine *e, uint32_t chan, const struct tpchan_params *p)
{
	struct remote *rm = e->rm;
	struct tpchan_params tp;
	struct rchan *ch;

	if (!rm || !p || chan >= rm->max_chans)
		return -EINVAL;
	if (rm->chans[chan])
		return -EBUSY;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	tp = *p;
	tp.cb = &remote_cb;
	tp.cb_arg = ch;
	ch->e = e;
	ch->id = chan;
	ch->mtu = p->mtu ? p->mtu : 1500;
	ch->tp = tpchan_new(&tp);
	if (!ch->tp) {
		free(ch);
		return -EINVAL;
	}
	rm->chans[chan] = ch;
	ch->live_pos = rm->nlive;
	rm->live[rm->nlive++] = ch;
	return 0;
}

int engine_chan_remove(struct engine *e, uint32_t chan, int err)
{
	struct rchan *ch = chan_get(e, chan);

	if (!ch)
		return -ENOENT;
	if (err >= 0)
		err = -ECONNRESET;
	while (ch->conns)
		eng_conn_reset(e, ch->conns, err);
	chan_free(e, ch);
	eng_settle(e);
	return 0;
}

int engine_rconn_add(struct engine *e, uint32_t ep_id, uint32_t conn, uint32_t wire_id, uint32_t chan)
{
	struct ep *ep = eng_ep_get(e, ep_id);
	struct rchan *ch = chan_get(e, chan);
	struct conn *c;

	if (!ep || !ch || conn >= ep->max_conns || (wire_id & 0xffffu) != conn)
		return -EINVAL;
	if (ep->broken)
		return -EPIPE;
	if (ch->failed)
		return -ENETRESET;
	c = &ep->conns[conn];
	if (c->state != CONN_FREE)
		return -EBUSY;
	c->state = CONN_UP;
	c->remote = true;
	memset(&c->r, 0, sizeof(c->r));
	c->r.ch = ch;
	c->r.wire_id = wire_id;
	c->r.rep = UINT32_MAX;
	c->r.blocked_seq = UINT64_MAX;
	c->r.ch_next = ch->conns;
	if (ch->conns)
		ch->conns->r.ch_prev = c;
	ch->conns = c;
	ch->nconns++;
	__atomic_store_n(&ep->sems[conn], 0, __ATOMIC_RELAXED);
	ep->st.conns++;
	return 0;
}

int engine_rconn_connect(struct engine *e, uint32_t ep_id, uint32_t conn, uint32_t rep,
			 uint32_t rconn_wire)
{
	struct ep *ep = eng_ep_get(e, ep_id);
	struct conn *c;

	if (!ep || conn >= ep->max_conns || rep == UINT32_MAX)
		return -EINVAL;
	c = &ep->conns[conn];
	if (c->state == CONN_RESET)
		return -ECONNRESET;
	if (!c->remote || c->state != CONN_UP || c->r.rep != UINT32_MAX)
		return -EINVAL;
	c->r.rep = rep;
	c->r.rconn_wire = rconn_wire;
	return 0;
}

/* A failed channel resets every connection over it (their operations
 * already failed with -ETIMEDOUT); new ones are refused until the daemon
 * replaces the channel. */
static void chan_check_failed(struct engine *e, struct rchan *ch)
{
	if (ch->failed)
		while (ch->conns)
			eng_conn_reset(e, ch->conns, -ETIMEDOUT);
}

int engine_rx(struct engine *e, uint32_t chan, const void *pkt, size_t len, uint64_t now_ns)
{
	return engine_rx_ce(e, chan, pkt, len, now_ns, false);
}

int engine_rx_ce(struct engine *e, uint32_t chan, const void *pkt, size_t len, uint64_t now_ns,
		 bool ce)
{
	struct rchan *ch = chan_get(e, chan);
	int r;

	if (!ch) {
		e->st.rx_no_chan++;
		return -ENOENT;
	}
	e->now = now_ns;
	r = tpchan_rx_ce(ch->tp, pkt, len, now_ns, ce);
	chan_check_failed(e, ch);
	eng_settle(e);
	return r;
}

int engine_tx(struct engine *e, uint64_t now_ns, struct engine_txpkt *out, int max)
{
	struct remote *rm = e->rm;
	struct tpchan_txpkt tp[TX_CHUNK];
	uint32_t nlive;
	int n = 0;

	if (!rm || rm->nlive == 0 || max <= 0)
		return 0;
	e->now = now_ns;
	nlive = rm->nlive;
	/* Deficit round robin over channels, in bytes: each turn a channel
	 * earns DRR_QUANTUM and sends whole packets while its deficit lasts
	 * (at least one: a packet is never split); a channel with nothing to
	 * send keeps no credit. The starting channel rotates per call. */
	for (uint32_t k = 0; k < nlive && n < max; k++) {
		struct rchan *ch = rm->live[(rm->rr + k) % nlive];

		if (ch->j_head)
			drain_jobs(e, ch);
		if (ch->q_head)
			drain_queue(e, ch, now_ns);
		ch->deficit += DRR_QUANTUM;
		while (n < max && ch->deficit > 0) {
			int want = max - n, r;
			uint32_t fit = (uint32_t)(ch->deficit / ch->mtu) + 1;

			if ((uint32_t)want > fit)
				want = (int)fit;
			if (want > TX_CHUNK)
				want = TX_CHUNK;
			for (int i = 0; i < want; i++)
				tp[i].buf = out[n + i].buf;
			r = tpchan_tx(ch->tp, now_ns, tp, want);
			for (int i = 0; i < r; i++) {
				out[n + i].len = tp[i].len;
				out[n + i].path = tp[i].path;
				out[n + i].chan = ch->id;
				ch->deficit -= tp[i].len;
			}
			n += r;
			if (r < want) {
				ch->deficit = 0;   /* idle: no banking of credit */
				break;
			}
		}
		if (ch->deficit > (int64_t)DRR_QUANTUM)
			ch->deficit = DRR_QUANTUM;    /* cut short by max: bounded carry */
		chan_check_failed(e, ch);
	}
	rm->rr = nlive ? (rm->rr + 1) % nlive : 0;
	eng_settle(e);
	return n;
}

uint64_t engine_next_deadline(const struct engine *e)
{
	const struct remote *rm = e->rm;
	uint64_t d = UINT64_MAX;

	if (!rm)
		return d;
	for (uint32_t i = 0; i < rm->nlive; i++) {
		const struct rchan *ch = rm->live[i];
		uint64_t t = tpchan_next_deadline(ch->tp);

		if (t < d)
			d = t;
		/* Queued ops go when their time comes (0: now), unless the
		 * channel (or the slot table) is full: then a completion,
		 * which comes with input or the channel's own deadline,
		 * makes room. Reporting them due would make a caller that
		 * sleeps by this deadline spin until then. */
		if (ch->blocked || rm->no_slots)
			continue;
		if (ch->j_head)
			d = 0;         /* get responses go at once */
		/* an op held by its endpoint's limit goes when one of that
		 * endpoint's completes: input, not time */
		for (const struct opq_op *op = ch->q_head; op; op = op->rnext)
			if (op->rdue < d && !(op->rflags & RFL_EPWAIT))
				d = op->rdue;
	}
	return d;
}

int engine_chan_stats(const struct engine *e, uint32_t chan, struct engine_chan_stats *out)
{
	const struct rchan *ch = chan_get(e, chan);

	if (!ch || !out)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	tpchan_get_stats(ch->tp, &out->tp);
	out->conns = ch->nconns;
	out->queued_ops = ch->nqueued;
	out->failed = ch->failed;
	out->cc = tpchan_cc_name(ch->tp);
	out->n_cc = tpchan_cc_describe(ch->tp, out->cc_names, out->cc_values, ENGINE_CC_VARS);
	if (out->n_cc < 0)
		out->n_cc = 0;
	return 0;
}
