/* SPDX-License-Identifier: MIT */
/*
 * remote: the engine's connections to endpoints on other hosts. One channel
 * (tpchan) per remote host carries every connection to it; packets name the
 * destination endpoint and connection.
 *
 * Sending: a waiting op becomes a channel message whose cookie names a slot
 * pointing back at the op, so an op that goes away early (connection reset,
 * endpoint removed) is forgotten rather than dereferenced. A full channel
 * leaves ops in the channel's submit queue, in order. Puts and signals carry
 * a per-connection put number (ord): a signal goes out at once, behind its
 * earlier puts in issue order, and the receiver holds it until those puts
 * have settled there (rrecv.c), whatever paths they were sprayed over. A put
 * that fails here (its source went away, refused) is followed by a put
 * void, so that the receiver never waits for it; a connection keeps at most
 * PUT_WINDOW puts unsettled, later ones wait on its hold list. A signal
 * completes once acknowledged and its earlier puts completed.
 *
 * What arrives is engine/rrecv.c's: puts written in place, signals,
 * sends matched to receives in the sender's issue order (buffered within
 * max_unexpected_bytes, else refused with -ENOBUFS and sent again later
 * with the same sequence number: backpressure, nothing dropped), voids that
 * retire a send the sender had to abandon, get requests and responses.
 * Channels take turns in deficit round robin (bytes); one endpoint's bytes
 * in flight are bounded (max_ep_inflight_bytes) without holding up others.
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
#include "engine/remote_int.h"
#include "engine/pull.h"

#define RETRY_MIN_NS     50000ull     /* resend of a send the receiver had no room for */
#define RETRY_MAX_NS     10000000ull
#define DEF_REMOTE_MSGS  65536u
#define DEF_UNEXP_BYTES  (64ull << 20)
#define DEF_UNEXP_MSGS   16384u
#define MAX_REMOTE_MSGS  (1u << 22)
#define FIRST_SLOTS      16u           /* the slot table doubles from this to nslots */
#define TX_CHUNK         64
#define DRR_QUANTUM      (64u * 1024)  /* bytes a busy channel earns per turn */

/* ---- message slots ---- */

/* Double the slot table (up to nslots): it is reached by index only, never
 * by a pointer kept across a call that may submit, so it may move. */
static void slots_grow(struct remote *rm)
{
	uint32_t n = rm->nalloc ? rm->nalloc * 2 : FIRST_SLOTS;
	struct rslot *t;

	if (n > rm->nslots)
		n = rm->nslots;
	if (n <= rm->nalloc)
		return;
	t = realloc(rm->slots, n * sizeof(*t));
	if (!t)
		return;                /* as if full: no_slots, the queue waits */
	memset(t + rm->nalloc, 0, (n - rm->nalloc) * sizeof(*t));
	for (uint32_t i = rm->nalloc; i < n; i++)
		t[i].next_free = i + 1 < n ? i + 1 : rm->free_head;
	rm->free_head = rm->nalloc;
	rm->slots = t;
	rm->nalloc = n;
}

uint32_t remote_slot_get(struct remote *rm)
{
	uint32_t i;

	if (rm->free_head == NO_SLOT)
		slots_grow(rm);
	i = rm->free_head;
	if (i == NO_SLOT)
		return NO_SLOT;
	rm->free_head = rm->slots[i].next_free;
	rm->nused++;
	rm->slots[i].used = true;
	rm->slots[i].op = NULL;
	rm->slots[i].job = NULL;
	return i;
}

void remote_slot_put(struct remote *rm, uint32_t i)
{
	rm->nused--;
	rm->slots[i].used = false;
	rm->slots[i].op = NULL;
	rm->slots[i].gen++;
	/* the read-ahead is keyed by cookie; a generation can come round
	 * again (refused submits count too), so the data goes with the slot */
	if (rm->rd_len && (uint32_t)rm->rd_cookie == i)
		rm->rd_len = 0;
	rm->slots[i].next_free = rm->free_head;
	rm->free_head = i;
	/* a queue that stopped for want of a slot is walked again, whoever
	 * gave one back (lane parts too, with no completion of ours) */
	if (rm->no_slots) {
		rm->no_slots = false;
		rm->kick++;
	}
}

uint64_t remote_cookie(const struct remote *rm, uint32_t i)
{
	return (uint64_t)rm->slots[i].gen << 32 | i;
}

struct rslot *remote_slot_of(struct remote *rm, uint64_t cookie, uint32_t *idx)
{
	uint32_t i = (uint32_t)cookie;

	if (i >= rm->nalloc || !rm->slots[i].used || rm->slots[i].gen != (uint32_t)(cookie >> 32))
		return NULL;
	*idx = i;
	return &rm->slots[i];
}

/* ---- submit queue ---- */

/* The retry wait after one of wait (0: the first): RETRY_MIN_NS, doubling
 * up to RETRY_MAX_NS. */
static uint64_t backoff_next(uint64_t wait)
{
	return !wait ? RETRY_MIN_NS : wait * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : wait * 2;
}

/* Take op, which follows prev (NULL: op is the head), out of the queue. */
static void queue_unlink(struct rchan *ch, struct opq_op *prev, struct opq_op *op)
{
	if (prev)
		prev->rnext = op->rnext;
	else
		ch->q_head = op->rnext;
	if (ch->q_tail == op)
		ch->q_tail = prev;
	ch->nqueued--;
	op->rflags &= (uint8_t)~RFL_QUEUED;
	op->rnext = NULL;
}

/* Put op back right after prev (NULL: at the head). */
static void queue_relink(struct rchan *ch, struct opq_op *prev, struct opq_op *op)
{
	struct opq_op **at = prev ? &prev->rnext : &ch->q_head;

	op->rnext = *at;
	*at = op;
	if (!op->rnext)
		ch->q_tail = op;
	ch->nqueued++;
	op->rflags |= RFL_QUEUED;
}

static void queue_push(struct rchan *ch, struct opq_op *op)
{
	if (op->rdue < ch->q_due)
		ch->q_due = op->rdue;
	queue_relink(ch, ch->q_tail, op);
}

static void queue_del(struct rchan *ch, struct opq_op *op)
{
	struct opq_op *prev = NULL;

	for (struct opq_op *o = ch->q_head; o; prev = o, o = o->rnext) {
		if (o == op) {
			queue_unlink(ch, prev, op);
			return;
		}
	}
	op->rflags &= (uint8_t)~RFL_QUEUED;
	op->rnext = NULL;
}

/* ---- sending ---- */

/* The side's puts not settled at the receiver yet (acknowledged, or their
 * void acknowledged), in issue order: they bound PUT_WINDOW, and a signal's
 * completion waits for those before it. */
static void puts_add(struct conn *c, struct opq_op *op)
{
	op->pnext = NULL;
	op->pprev = c->r.puts_tail;
	if (c->r.puts_tail)
		c->r.puts_tail->pnext = op;
	else
		c->r.puts_head = op;
	c->r.puts_tail = op;
	op->rflags |= RFL_PUTLIST;
}

static void puts_del(struct conn *c, struct opq_op *op)
{
	if (!(op->rflags & RFL_PUTLIST))
		return;
	if (op->pprev)
		op->pprev->pnext = op->pnext;
	else
		c->r.puts_head = op->pnext;
	if (op->pnext)
		op->pnext->pprev = op->pprev;
	else
		c->r.puts_tail = op->pprev;
	op->pnext = op->pprev = NULL;
	op->rflags &= (uint8_t)~RFL_PUTLIST;
}

static void release_signals(struct engine *e, struct conn *c);

/* A put's or get's bytes on this engine arrived: res is its transport
 * result; a cancelled op's void carries none; a get whose response could
 * not be written holds its error already (it may also be a lane's: then
 * its own part is not counted, never one too many) */
static bool own_moved(const struct opq_op *op, int res)
{
	return res == 0 && op->lmr && !(op->rflags & RFL_VOID) &&
	       (op->opcode == UCCL_OP_PUT || (op->opcode == UCCL_OP_GET && op->res == 0));
}

void remote_op_finish(struct engine *e, struct opq_op *op, int res)
{
	struct conn *c = op->rside;
	bool sig = op->rsig;
	uint64_t whole = op->rsplit ? op->rsplit : op->len;

	puts_del(c, op);
	if (op->rlanes) {
		/* its own part is in; its parts on lanes are not: it
		 * finishes with the last of them (engine_lane_done) */
		if (own_moved(op, res))
			e->st.bytes += op->len;        /* moved, whatever the lanes do */
		if (op->res == 0 && res < 0)
			op->res = res;
		op->rown_done = true;
		return;
	}
	if (sig) {
		op->rsig = 0;
		c->r.sigs_out--;
	}
	if (c->r.get_last == op)
		c->r.get_last = NULL;  /* op may go back to the pool below */
	if (op->res == 0)
		op->res = res;
	op->res_len = op->res == 0 && op->opcode != UCCL_OP_SIGNAL ? whole : 0;
	op->res_tag = op->opcode == UCCL_OP_SEND && op->res == 0 ? op->key : 0;
	/* this engine's own part, if it moved and was not counted above (the
	 * lanes' engines count their parts; a send is counted where it is
	 * received) */
	if (own_moved(op, res) && !op->rown_done)
		e->st.bytes += op->len;
	/* the endpoint's bytes are those of its ops that succeeded, sends
	 * too, as on one host */
	if (op->res == 0 && (op->opcode == UCCL_OP_PUT || op->opcode == UCCL_OP_GET ||
			     op->opcode == UCCL_OP_SEND))
		c->ep->st.bytes += whole;
	eng_op_finish_waiting(e, c, op);
	/* a signal's slot at the peer is free: held ones may go */
	if (sig && c->r.sig_head && !c->r.releasing)
		release_signals(e, c);
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
		.flags = (op->flags & UCCL_SQE_F_SIGNAL) ? WIRE_F_SIGNAL : 0,   /* a void too */
	};
	uint32_t i;
	int r;

	/* one op always goes, however large: the limit bounds what is added
	 * to bytes already in flight (which that op may have taken past the
	 * limit). Bare ops carry no bytes and are never held. */
	if (e->max_ep_inflight && ep->r_inflight && bytes &&
	    (ep->r_inflight >= e->max_ep_inflight || bytes > e->max_ep_inflight - ep->r_inflight)) {
		op->rflags |= RFL_EPWAIT;
		return -EBUSY;
	}
	i = remote_slot_get(rm);
	if (i == NO_SLOT) {
		rm->no_slots = true;
		return -EAGAIN;
	}
	op->rflags &= (uint8_t)~RFL_EPWAIT;
	if (op->opcode == UCCL_OP_SEND)
		m.roff = op->rseq;
	if (op->opcode == UCCL_OP_GET)
		m.len = GET_REQ_LEN;   /* the request; the data comes back */
	if (op->opcode == UCCL_OP_PUT || op->opcode == UCCL_OP_SIGNAL)
		m.ord = op->rseq;
	if (op->rflags & RFL_VOID) {
		m.opcode = op->opcode == UCCL_OP_PUT ? OP_PUT_VOID : UCCL_OP_NOP;
		m.rkey = 0;
		m.len = 0;
	}
	m.cookie = remote_cookie(rm, i);
	r = tpchan_submit(ch->tp, &m);
	/* the full mark is what the channel last said: a walk that offers it
	 * nothing (ops held by their endpoints' limits, or backing off) keeps
	 * a refusal seen before it, a get response's; cleared, the engine's
	 * deadline would say "now" with nothing to send until an ACK */
	ch->blocked = r == -EAGAIN;
	if (r < 0) {
		remote_slot_put(rm, i);
		if (r == -EAGAIN)
			return r;
		if ((op->opcode == UCCL_OP_PUT || op->opcode == UCCL_OP_SEND) &&
		    !(op->rflags & RFL_VOID)) {
			/* a signal may already count on its number, or the
			 * peer's later sends wait for it: it goes out as a
			 * void, at the next walk of the queue */
			op->res = r;
			op->rflags |= RFL_VOID;
			ch->q_due = 0;
			return -EAGAIN;
		}
		if ((op->rflags & RFL_VOID) && r == -ENOMEM) {
			/* a void must get there (the peer's later sends, or
			 * signals, wait for its number): again after a while */
			op->rdue = e->now + RETRY_MIN_NS;
			return -ENOMEM;
		}
		remote_op_finish(e, op, r);
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
 * a retry time are stepped over. An op is out of the queue while it is
 * submitted: a submit that fails it at once completes it, and that can
 * start held signals, which join this queue's tail. */
static void drain_queue(struct engine *e, struct rchan *ch, uint64_t now)
{
	struct opq_op *prev = NULL, *op = ch->q_head;
	/* endpoints found at their limit in this walk carry its number */
	uint64_t walk = ++e->rm->walks;
	int r;

	ch->kick_seen = e->rm->kick;
	ch->q_due = UINT64_MAX;        /* recomputed from what stays */
	while (op) {
		bool skip = op->rdue > now;

		/* an endpoint's later ops do not overtake one held by its
		 * limit; they wait for the same completions */
		if (!skip && ((const struct conn *)op->rside)->ep->r_held_walk == walk) {
			skip = true;
			op->rflags |= RFL_EPWAIT;
		}
		if (!skip) {
			queue_unlink(ch, prev, op);
			r = submit_one(e, ch, op);
			if (r == 0) {          /* gone: in flight, or done */
				op = prev ? prev->rnext : ch->q_head;
				continue;
			}
			queue_relink(ch, prev, op);
			if (r == -EAGAIN)
				return;
			if (r == -EBUSY)
				((struct conn *)op->rside)->ep->r_held_walk = walk;
			/* -EBUSY, or -ENOMEM: a void, for later */
		}
		if (op->rdue > now && op->rdue < ch->q_due)
			ch->q_due = op->rdue;
		prev = op;
		op = op->rnext;
	}
}

static void job_free(struct engine *e, struct rjob *j)
{
	e->st.unexpected_bytes -= j->len;
	e->st.unexpected_msgs--;       /* a job counts as one buffered message */
	j->ch->jbytes -= j->len;
	j->ch->njobs--;
	free(j->buf);
	free(j);
}

/* Send queued get responses while the channel takes them. One refused for
 * memory is kept and tried again later, ever less often while that lasts:
 * the requester's get, acknowledged, has no other way to its data (or to
 * an end short of its connection's). */
static void drain_jobs(struct engine *e, struct rchan *ch)
{
	struct remote *rm = e->rm;
	struct rjob *j;

	while ((j = ch->j_head)) {
		struct tpchan_msg m = { .opcode = OP_GET_RESP, .dst_ep = j->rep, .dst_conn = j->rwire,
					.rkey = j->get_id, .len = j->len };
		uint32_t i = remote_slot_get(rm);
		int r;

		if (i == NO_SLOT) {
			rm->no_slots = true;
			return;
		}
		m.cookie = remote_cookie(rm, i);
		r = tpchan_submit(ch->tp, &m);
		ch->blocked = r == -EAGAIN;    /* as in submit_one */
		if (r == -EAGAIN || r == -ENOMEM) {
			remote_slot_put(rm, i);
			if (r == -ENOMEM) {
				ch->j_wait = backoff_next(ch->j_wait);
				ch->j_due = e->now + ch->j_wait;
			}
			return;
		}
		ch->j_due = 0;
		ch->j_wait = 0;
		ch->j_head = j->next;
		if (!ch->j_head)
			ch->j_tail = NULL;
		j->next = NULL;
		j->c = NULL;
		if (r < 0) {
			remote_slot_put(rm, i);
			job_free(e, j);    /* -ESHUTDOWN: the channel is going (-EINVAL:
					    * checked at the request, never) */
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

/* The put sequence of the first put still waiting, or UINT64_MAX. */
static uint64_t first_waiting_put(const struct conn *c)
{
	return c->r.puts_head ? c->r.puts_head->rseq : UINT64_MAX;
}

/* Put or signal op waits on its side's hold list (a put ahead of it is
 * past PUT_WINDOW, or it is). */
static void hold_add(struct conn *c, struct opq_op *op)
{
	op->rflags |= RFL_SIGWAIT;
	op->rnext = NULL;
	if (c->r.sig_tail)
		c->r.sig_tail->rnext = op;
	else
		c->r.sig_head = op;
	c->r.sig_tail = op;
}

static bool put_in_window(const struct conn *c, const struct opq_op *op)
{
	return op->rseq - first_waiting_put(c) < PUT_WINDOW;
}

/* A put that raises the peer's semaphore (UCCL_SQE_F_SIGNAL). */
static bool signals(const struct opq_op *op)
{
	return op->opcode == UCCL_OP_PUT && (op->flags & UCCL_SQE_F_SIGNAL);
}

/* Put op may go: inside the window, and one that raises the peer's
 * semaphore (UCCL_SQE_F_SIGNAL) not while parts of an earlier put are out
 * on lanes, as for a signal (sig_room). */
static bool put_may_go(const struct conn *c, const struct opq_op *op)
{
	return put_in_window(c, op) &&
	       (!signals(op) || !c->r.lput_head || c->r.lput_head->rseq >= op->rseq);
}

/* Signal op may go while fewer than SIG_HOLD_MAX of the side's signals are
 * out: the peer holds at most that many for the puts before them, so it
 * never has to turn one away (and its resends, DATA above a lost put's
 * hole, never pile up). Nor while parts of a put issued before it are out
 * on lanes: the peer orders it behind this side's puts only. */
static bool sig_room(const struct conn *c, const struct opq_op *op)
{
	return c->r.sigs_out < SIG_HOLD_MAX &&
	       (!c->r.lput_head || c->r.lput_head->rseq >= op->rseq);
}

static void sig_start(struct engine *e, struct conn *c, struct opq_op *op)
{
	op->rsig = 1;
	c->r.sigs_out++;
	start_send(e, c->r.ch, op);
}

/* A put settled or a signal finished: held ops go out in order while the
 * put window and the signal bound allow, and acknowledged signals with no
 * earlier put left complete (which frees signal slots: again). */
static void release_signals(struct engine *e, struct conn *c)
{
	struct opq_op *op, **pp;
	bool again;

	c->r.releasing = true;
	do {
		again = false;
		while ((op = c->r.sig_head) &&
		       (op->opcode == UCCL_OP_PUT ? put_may_go(c, op) : sig_room(c, op))) {
			c->r.sig_head = op->rnext;
			if (!c->r.sig_head)
				c->r.sig_tail = NULL;
			op->rflags &= (uint8_t)~RFL_SIGWAIT;
			op->rnext = NULL;
			if (op->opcode == UCCL_OP_PUT)
				start_send(e, c->r.ch, op);
			else
				sig_start(e, c, op);
		}
		for (pp = &c->r.sdone_head; (op = *pp);) {
			if (first_waiting_put(c) < op->rseq) {
				pp = &op->rnext;
				continue;
			}
			*pp = op->rnext;
			op->rnext = NULL;
			op->rflags &= (uint8_t)~RFL_SIGDONE;
			/* a put before it failed because the connection went:
			 * the receiver may have dropped it unapplied */
			remote_op_finish(e, op, c->r.put_reset_err);
			/* a put leaving the waiting ones may let others go */
			again = c->r.sig_head != NULL || c->r.sdone_head != NULL;
		}
	} while (again);
	c->r.releasing = false;
}

void remote_release_signals(struct engine *e, struct conn *c)
{
	if (!c->r.releasing)
		release_signals(e, c);
}

/* Queue op to go out again: after a growing backoff when the receiver had
 * no room (nobuf), at once otherwise (a void). */
static void retry_later(struct engine *e, struct opq_op *op, bool nobuf)
{
	struct conn *c = op->rside;
	uint64_t backoff = op->rbackoff_us ? (uint64_t)op->rbackoff_us * 1000 : RETRY_MIN_NS;

	op->rdue = e->now + (nobuf ? backoff : 0);
	if (nobuf)
		backoff = backoff_next(backoff);
	op->rbackoff_us = (uint32_t)(backoff / 1000);
	queue_push(c->r.ch, op);
	e->st.send_retries++;
}

/* Before the completions of what it failed: their operations must not go
 * back to this channel. A peer's refusal carrying -ETIMEDOUT is not this. */
static void cb_gave_up(void *arg)
{
	struct rchan *ch = arg;

	if (!ch->failed) {
		ch->failed = true;
		ch->e->rm->failures_untold++;
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
	bool put;

	ch->blocked = false;           /* a message left the channel: room for the queue */
	rm->kick++;
	s = remote_slot_of(rm, cookie, &i);
	if (!s)
		return;
	op = s->op;
	if (s->job)
		job_free(e, s->job);   /* a get response: done either way */
	remote_slot_put(rm, i);
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
				remote_op_finish(e, op, 0);
			return;
		}
		/* the responder had no room for a snapshot: ask again later */
		retry_later(e, op, true);
		return;
	}
	if (op->opcode == UCCL_OP_SEND && res < 0 && res != -ECONNRESET && res != -ETIMEDOUT) {
		bool abandoned = !op->lmr || res == -ECANCELED;

		/* The receiver had no room: the same message (or its void)
		 * again later, with its sequence number, so that order
		 * holds. A message we could not finish sending (abandoned,
		 * or its source could not be read) leaves a partial record
		 * there, or none: a void retires its sequence number. Only
		 * -EMSGSIZE means the receiver retired it itself. */
		if (res == -ENOBUFS) {
			retry_later(e, op, true);
			return;
		}
		if (res != -EMSGSIZE && !(op->rflags & RFL_VOID)) {
			if (!abandoned && op->res == 0)
				op->res = res;
			op->rflags |= RFL_VOID;
			op->rbackoff_us = 0;
			retry_later(e, op, false);
			return;
		}
	}
	if (op->opcode == UCCL_OP_PUT && (op->rflags & RFL_VOID) && res == -ENOBUFS) {
		/* the receiver had no memory to settle its number: the void
		 * must get there, or it and we disagree on settled puts */
		retry_later(e, op, true);
		return;
	}
	if (op->opcode == UCCL_OP_PUT && (res == -ECONNRESET || res == -ETIMEDOUT)) {
		/* the side is going: no void; a signal behind it may have
		 * been dropped unapplied, void or not */
		c->r.put_reset_err = res;
	} else if (op->opcode == UCCL_OP_PUT && res < 0 && !(op->rflags & RFL_VOID)) {
		/* refused, or its source went away: the receiver learns that
		 * its number is settled from a void; the put completes, with
		 * res, when that is acknowledged */
		if (op->res == 0)          /* a cancel set its own */
			op->res = res;
		op->rflags |= RFL_VOID;
		op->rbackoff_us = 0;
		retry_later(e, op, false);
		return;
	}
	if (op->opcode == UCCL_OP_SIGNAL && res == -ENOBUFS) {
		retry_later(e, op, true);  /* the receiver holds too many */
		return;
	}
	/* a signal, or a put that carries one, completes once its signal
	 * took effect: every earlier put completed too (it is first among
	 * the side's waiting puts, or there are none before it) */
	if ((op->opcode == UCCL_OP_SIGNAL || signals(op)) && res == 0 &&
	    first_waiting_put(c) < op->rseq) {
		op->rflags |= RFL_SIGDONE;
		op->rnext = c->r.sdone_head;
		c->r.sdone_head = op;
		return;
	}
	if (op->rflags & RFL_VOID)
		res = -ECANCELED;
	/* acknowledged, but an earlier put went with the connection: the
	 * receiver may hold it unapplied and drop it (as release_signals) */
	if ((op->opcode == UCCL_OP_SIGNAL || signals(op)) && res == 0)
		res = c->r.put_reset_err;
	/* finish may post op and return it to the pool: look at it first */
	put = op->opcode == UCCL_OP_PUT;
	remote_op_finish(e, op, res);
	if (put && (c->r.sig_head || c->r.sdone_head))
		release_signals(e, c);
}

/* A put's or send's bytes from memory the daemon reaches only through the
 * client's process (uccl_mem_reg): each copy is a system call, one a
 * packet (44 for 64 KiB at MTU 1500), so the bytes after the packet's, up
 * to RD_AHEAD of the message, come in the same call and the next packets
 * take them from here. The client may not change a source before its
 * completion, so reading early changes nothing it can see; a cookie names
 * one submission (the slot's generation), so no later one reads them. */
#define RD_AHEAD (64u << 10)

static int read_ahead(struct remote *rm, struct engine *e, const struct opq_op *op, uint64_t cookie,
		      uint64_t off, void *dst, uint32_t len)
{
	struct mr tmp = { .kind = MR_MAPPED, .base = dst, .len = len };
	uint64_t n;
	int r;

	if (rm->rd_len && rm->rd_cookie == cookie && off >= rm->rd_off &&
	    off - rm->rd_off + len <= rm->rd_len) {
		memcpy(dst, rm->rd_buf + (off - rm->rd_off), len);
		return 0;
	}
	/* a resend behind the window reads just itself: the window holds
	 * what goes next */
	if ((rm->rd_len && rm->rd_cookie == cookie && off < rm->rd_off) ||
	    (!rm->rd_buf && !(rm->rd_buf = malloc(RD_AHEAD))))
		return eng_copy(e, &tmp, 0, op->lmr, op->loff + off, len);
	n = op->len - off < RD_AHEAD ? op->len - off : RD_AHEAD;
	if (n < len)                   /* beyond the message: not ours to widen */
		return eng_copy(e, &tmp, 0, op->lmr, op->loff + off, len);
	tmp.base = rm->rd_buf;
	tmp.len = n;
	rm->rd_len = 0;
	r = eng_copy(e, &tmp, 0, op->lmr, op->loff + off, n);
	if (r < 0)
		return r;
	rm->rd_cookie = cookie;
	rm->rd_off = off;
	rm->rd_len = (uint32_t)n;
	memcpy(dst, rm->rd_buf, len);
	return 0;
}

static int cb_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	struct rchan *ch = arg;
	struct engine *e = ch->e;
	struct opq_op *op;
	struct rslot *s;
	struct mr tmp = { .kind = MR_MAPPED, .base = dst, .len = len };
	uint32_t i;

	s = remote_slot_of(e->rm, cookie, &i);
	if (s && s->job) {
		memcpy(dst, s->job->buf + off, len);
		return 0;
	}
	op = s ? s->op : NULL;
	if (op && op->opcode == UCCL_OP_GET) {
		uint8_t req[GET_REQ_LEN];

		wire_put64(req, op->len);
		wire_put64(req + 8, op->rseq);
		memcpy(dst, req + off, len);
		return 0;
	}
	if (!op || !op->lmr)
		return -ECANCELED;
	if (op->lmr->kind == MR_MAPPED)
		return eng_copy(e, &tmp, 0, op->lmr, op->loff + off, len);
	return read_ahead(e->rm, e, op, cookie, off, dst, len);
}

/* tx_gather: a put's or send's bytes where the daemon maps the region;
 * NULL (copy through cb_read) for anything else: memory reached only
 * through another process, and a get response's snapshot, which a channel
 * reset inside the same engine_tx call may free. */
static const void *cb_map(void *arg, uint64_t cookie, uint64_t off, uint32_t len)
{
	struct rchan *ch = arg;
	struct opq_op *op;
	struct rslot *s;
	uint32_t i;

	s = remote_slot_of(ch->e->rm, cookie, &i);
	op = s && !s->job ? s->op : NULL;
	if (!op || op->opcode == UCCL_OP_GET || !op->lmr || op->lmr->kind != MR_MAPPED ||
	    !mr_range_ok(op->lmr, op->loff + off, len))
		return NULL;
	return (const uint8_t *)op->lmr->base + op->loff + off;
}

static const struct tpchan_cb remote_cb = {
	.read = cb_read,
	.map = cb_map,
	.deliver = rrecv_deliver,
	.complete = cb_complete,
	.gave_up = cb_gave_up,
};

/* ---- from engine.c ---- */

void remote_start(struct engine *e, struct conn *c, struct opq_op *op)
{
	struct rrec *r;

	op->rside = c;
	op->rmsg = OPQ_NO_RMSG;
	op->rsig = 0;
	/* a put with a signal that was canceled while it stalled: only its
	 * void goes, so that the signal it carries still takes effect */
	if (op->res < 0)
		op->rflags |= RFL_VOID;
	if (c->r.rep == UINT32_MAX) {
		remote_op_finish(e, op, -ENOTCONN);
		return;
	}
	switch (op->opcode) {
	case UCCL_OP_PUT:
		op->rseq = c->r.put_seq++;
		if (c->r.nlanes)
			lanes_split(e, c, op);
		puts_add(c, op);       /* before it can finish, on submission failure too */
		if (c->r.sig_head || !put_may_go(c, op)) {
			hold_add(c, op);
			break;
		}
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_SIGNAL:
		op->rseq = c->r.put_seq;       /* puts before this one */
		if (c->r.sig_head || !sig_room(c, op)) {
			hold_add(c, op);       /* behind a held op, in issue order */
			break;
		}
		sig_start(e, c, op);
		break;
	case UCCL_OP_SEND:
		op->rseq = c->r.send_seq++;
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_GET:
		op->rseq = c->r.get_seq++;     /* the get id its response carries */
		op->rgot = 0;
		if (c->r.nlanes)
			lanes_split(e, c, op);
		start_send(e, c->r.ch, op);
		break;
	case UCCL_OP_RECV:
		for (r = c->r.um_head; r; r = r->unext) {
			if (op->key == UCCL_TAG_ANY || op->key == r->tag) {
				rrecv_match(e, c, r, op);
				return;
			}
		}
		break;                         /* waits on the receive queue */
	default:
		remote_op_finish(e, op, -EOPNOTSUPP);
		break;
	}
}

void remote_cancel(struct engine *e, struct conn *c, struct opq_op *op)
{
	op->lmr = NULL;
	switch (op->opcode) {
	case UCCL_OP_RECV:
		if (op->rrec)
			rrecv_discard(e, op->rrec);
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
			c->r.ch->q_due = 0;
		}
		break;
	case UCCL_OP_PUT:
		/* its number must still be settled at the receiver: queued or
		 * held, it goes out as a void; in flight, its read fails and
		 * then one does (cb_complete) */
		if (op->rflags & (RFL_QUEUED | RFL_SIGWAIT))
			op->rflags |= RFL_VOID;
		if (op->rflags & RFL_QUEUED) {
			op->rdue = 0;
			c->r.ch->q_due = 0;
		}
		break;
	case UCCL_OP_GET:
		/* queued: never asked, done now; in flight: its response is
		 * dropped on arrival (lmr is gone) and it completes with its
		 * acknowledgement */
		if (op->rflags & RFL_QUEUED) {
			queue_del(c->r.ch, op);
			remote_op_finish(e, op, -ECANCELED);   /* waits for its lane parts */
		}
		break;
	default:
		if (op->rflags & RFL_QUEUED) {
			queue_del(c->r.ch, op);
			eng_op_finish_waiting(e, c, op);
		}
		/* in flight: the read fails, the message completes with it */
		break;
	}
}

void remote_conn_detach(struct engine *e, struct conn *c, bool keep_parts)
{
	struct rchan *ch = c->r.ch;

	if (!c->remote)
		return;
	for (struct opq_op *op = c->q.order.head; op; op = op->onext) {
		op_uncharge(op);
		if (keep_parts && op->rlslot && op->rlanes)
			lanes_linger(e, op);
		else
			lanes_forget(e, op);
		if (op->rmsg != OPQ_NO_RMSG) {
			e->rm->slots[op->rmsg].op = NULL;
			op->rmsg = OPQ_NO_RMSG;
		}
		if (op->rflags & RFL_QUEUED)
			queue_del(ch, op);
		op->rflags = 0;
		op->rsig = 0;
		op->rrec = NULL;
	}
	c->r.sig_head = c->r.sig_tail = NULL;
	c->r.sdone_head = NULL;
	c->r.sigs_out = 0;
	rrecv_puts_free(e, c);            /* signals held for its peer's puts go too */
	e->rm->kick++;                 /* its bytes left the endpoint's count */
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
		rrecv_free(e, c->r.recs);
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
	rm->free_head = NO_SLOT;
	/* the first slots now: a growth that fails later only makes the
	 * queue wait for a slot to come back, but with none in use none
	 * would, and the queue would wait for ever */
	slots_grow(rm);
	rm->pull = pull_new(p->pull_rate_bps, p->pull_quantum);
	rm->pull_t = UINT64_MAX;
	if (!rm->chans || !rm->live || !rm->pull || !rm->nalloc)
		goto fail;
	return rm;
fail:
	pull_free(rm->pull);
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
	pull_remove(rm->pull, ch->tp);
	/* every side was detached: completions find forgotten slots only
	 * (and free the get responses in flight) */
	tpchan_free(ch->tp);
	while (ch->j_head) {
		struct rjob *j = ch->j_head;

		ch->j_head = j->next;
		job_free(e, j);
	}
	free(ch->refused);
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
			remote_conn_detach(e, ch->conns, false);
		chan_free(e, ch);
	}
	pull_free(rm->pull);
	free(rm->chans);
	free(rm->live);
	free(rm->slots);
	free(rm->rd_buf);
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
	ch->q_due = UINT64_MAX;
	ch->tp = tpchan_new(&tp);
	if (!ch->tp) {
		free(ch);
		return -EINVAL;
	}
	if (pull_add(rm->pull, ch->tp) < 0) {
		tpchan_free(ch->tp);
		free(ch);
		return -ENOMEM;
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
	c = eng_conn_make(ep, conn);
	if (!c)
		return -ENOMEM;
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
	c = ep_conn(ep, conn);
	if (!c)
		return -EINVAL;        /* never bound: as a free side */
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
	const uint8_t *p = pkt;
	size_t off = 0;
	bool others = false;           /* the first walk left packets for a second */
	int r = 0;

	if (!ch) {
		e->st.rx_no_chan++;
		return -ENOENT;
	}
	e->now = now_ns;
	/* packets that share the datagram go each on its own: one refused
	 * does not take its neighbours with it. DATA first, then the rest:
	 * the put and the signal a client waits for land before an ACK's
	 * completions are posted (a spinning client sees them that much
	 * sooner), and no packet depends on another of its datagram. A
	 * datagram of DATA alone (bulk) is walked once. */
	for (int pass = 0; pass < 2 && (pass == 0 || others); pass++) {
		off = 0;
		do {
			size_t l = wire_first_len(p + off, len - off);
			/* what cannot be a packet goes in the second pass,
			 * so, once */
			bool data = wire_peek_type(p + off, l) == WIRE_DATA;

			others |= !data;

			if (data == (pass == 0)) {
				int r1 = tpchan_rx_ce(ch->tp, p + off, l, now_ns, ce);

				if (r == 0)
					r = r1;
			}
			off += l;
		} while (off < len);
	}
	if (tpchan_credit_wanted(ch->tp))
		e->rm->pull_t = 0;     /* the pacer decides at the next engine_tx */
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
	/* credit first: a grant is a packet for the loop below */
	if (rm->pull_t <= now_ns)
		rm->pull_t = pull_run(rm->pull, now_ns);
	nlive = rm->nlive;
	/* Deficit round robin over channels, in bytes: each turn a channel
	 * earns DRR_QUANTUM and sends whole packets while its deficit lasts
	 * (at least one: a packet is never split); a channel with nothing to
	 * send keeps no credit. The starting channel rotates per call. */
	for (uint32_t k = 0; k < nlive && n < max; k++) {
		struct rchan *ch = rm->live[(rm->rr + k) % nlive];
		bool again = false;

turn:
		if (ch->j_head && ch->j_due <= now_ns)
			drain_jobs(e, ch);
		/* the queue is walked when something may go: a time came, a
		 * completion made room since the last walk, or the channel was
		 * full (tpchan frees a refused message's slot when its last
		 * fillers are acknowledged, with no completion to tell) */
		if (ch->q_head && (ch->blocked || ch->q_due <= now_ns || ch->kick_seen != rm->kick))
			drain_queue(e, ch, now_ns);
		ch->deficit += DRR_QUANTUM;
		while (n < max && ch->deficit > 0) {
			int want = max - n, r;
			uint32_t fit = (uint32_t)(ch->deficit / ch->mtu) + 1;

			if ((uint32_t)want > fit)
				want = (int)fit;
			if (want > TX_CHUNK)
				want = TX_CHUNK;
			/* nothing due: skip handing out the buffers (an idle
			 * engine asks every live channel on every poll) */
			if (!tpchan_tx_ready(ch->tp, now_ns)) {
				ch->deficit = 0;
				break;
			}
			for (int i = 0; i < want; i++)
				tp[i].buf = out[n + i].buf;
			r = tpchan_tx(ch->tp, now_ns, tp, want);
			for (int i = 0; i < r; i++) {
				out[n + i].len = tp[i].len;
				out[n + i].path = tp[i].path;
				out[n + i].payload = tp[i].payload;
				out[n + i].hdr_len = tp[i].hdr_len;
				out[n + i].any_path = tp[i].any_path;
				out[n + i].dgram_max = ch->mtu;
				out[n + i].chan = ch->id;
				ch->deficit -= tp[i].len;
			}
			n += r;
			if (r < want) {
				ch->deficit = 0;   /* idle: no banking of credit */
				break;
			}
		}
		/* a message failed while its packets were built (its source
		 * could not be read) and its void was queued for now: one more
		 * turn sends it in this call, not in a call that seemed to
		 * have nothing due */
		if (!again && n < max && ch->q_head && ch->q_due <= now_ns && !ch->blocked) {
			again = true;
			goto turn;
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
	d = rm->pull_t;
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
		if (ch->j_head && ch->j_due < d)
			d = ch->j_due; /* get responses go at once, or after a refusal */
		/* an op held by its endpoint's limit goes when one of that
		 * endpoint's completes: input, not time (q_due leaves it out) */
		if (ch->q_head && ch->kick_seen != rm->kick)
			d = 0;         /* a completion since the last walk */
		else if (ch->q_head && ch->q_due < d)
			d = ch->q_due;
	}
	return d;
}

int engine_chan_failures(struct engine *e, uint32_t *chans, int max)
{
	struct remote *rm = e->rm;
	int n = 0;

	if (!rm || !rm->failures_untold || max <= 0)
		return 0;
	for (uint32_t i = 0; i < rm->nlive && n < max; i++) {
		struct rchan *ch = rm->live[i];

		if (ch->failed && !ch->failure_told) {
			ch->failure_told = true;
			chans[n++] = ch->id;
		}
	}
	/* what did not fit is told next time; one removed meanwhile never */
	rm->failures_untold = n < max ? 0 : rm->failures_untold;
	return n;
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

int engine_chan_paths(const struct engine *e, uint32_t chan, struct paths_stat *out, uint32_t max)
{
	const struct rchan *ch = chan_get(e, chan);

	if (!ch || !out)
		return -ENOENT;
	return (int)tpchan_path_stats(ch->tp, out, max);
}

int engine_chan_set_cc(struct engine *e, uint32_t chan, const struct cc_ops *ops)
{
	struct rchan *ch = chan_get(e, chan);

	if (!ch)
		return -ENOENT;
	return tpchan_set_cc(ch->tp, ops);
}
