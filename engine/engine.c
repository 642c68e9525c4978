/* SPDX-License-Identifier: MIT */
/*
 * engine: executes the operations that applications write into their
 * submission rings. Every descriptor is copied out of shared memory before it
 * is looked at and validated in one pass; every consumed descriptor has a
 * completion slot reserved before it is consumed, so a completion is never
 * dropped and a full completion ring or too many outstanding operations simply
 * leave descriptors in the submission ring. Operations that cannot finish at
 * once (unmatched sends and receives, anything behind a fence, strict
 * completions behind those) wait in the endpoint's op pools, ordered per
 * connection side by opq. Same-host connections join two endpoints of this
 * engine directly.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <uccl/shm.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/opq.h"
#include "engine/ring.h"

/* ---- completions ---- */

void eng_touch(struct engine *e, struct ep *ep)
{
	if (!ep->touched) {
		ep->touched = true;
		e->touched[e->ntouched++] = ep;
	}
}

/* Count an error completion by its errno. Counted as it is posted, so that
 * err_* count the completions a client gets: not a lane's part (its owner
 * posts the op's one completion), not an op dropped with its endpoint. */
static void count_err(struct engine *e, int res)
{
	switch (res) {
	case -EINVAL:
		e->st.err_inval++;
		break;
	case -ENOTCONN:
		e->st.err_badconn++;
		break;
	case -EBADF:
	case -EACCES:
	case -ERANGE:
		e->st.err_access++;
		break;
	case -ECONNRESET:
		e->st.err_reset++;
		break;
	case -ECANCELED:
		e->st.err_canceled++;
		break;
	case -EMSGSIZE:                /* over max_op_bytes, or a message longer than its receive */
		e->st.err_msgsize++;
		break;
	default:
		e->st.err_fault++;
		break;
	}
}

/* Write one CQE into the slot reserved for it; published later in a batch. */
static void post(struct engine *e, struct ep *ep, uint64_t user_data, uint8_t opcode, int32_t res,
		 uint64_t len, uint64_t tag)
{
	struct uccl_cqe *c;

	if (ep->broken || ep->shadow)
		return;
	c = (struct uccl_cqe *)(ep->cq.slots +
				(size_t)((ep->cq.idx + ep->staged) & ep->cq.mask) * UCCL_CQE_SIZE);
	*c = (struct uccl_cqe){
		.user_data = user_data,
		.len = len,
		.tag = tag,
		.res = res,
		.opcode = opcode,
	};
	ep->staged++;
	ep->st.completed++;
	if (res < 0) {
		ep->st.errors++;
		count_err(e, res);
	}
	e->st.cqes++;
	eng_touch(e, ep);
}

static void post_op(struct engine *e, struct ep *ep, const struct opq_op *op)
{
	if (ep->shadow) {
		/* a lane's part: its owner learns, wherever it runs */
		ep->st.completed++;
		if (op->res < 0)
			ep->st.errors++;
		if (e->lane_done)
			e->lane_done(e->lane_arg, op->rorigin, op->user_data, op->res);
		return;
	}
	post(e, ep, op->user_data, op->opcode, op->res, op->res_len, op->res_tag);
}

/* Publish every touched endpoint's staged CQEs, then wake the sleepers. */
static void flush_cqs(struct engine *e)
{
	for (uint32_t i = 0; i < e->ntouched; i++) {
		struct ep *ep = e->touched[i];

		ep->touched = false;
		if (ep->broken || ep->shadow)
			continue;
		if (ep->staged) {
			ring_prod_publish(&ep->cq, ep->staged);
			ep->staged = 0;
		}
		if (e->notify && ring_prod_needs_wakeup(&ep->cq)) {
			e->notify(e->notify_arg, ep->id);
			e->st.notifies++;
		}
	}
	e->ntouched = 0;
}

/* ---- pending operations ---- */

/* The endpoint's ops live in pools that double its capacity each time one
 * more is needed, up to max_outstanding: an endpoint pays for the ops it
 * has had in flight at once, not for the most it may. Ops never move. */
#define POOL_FIRST 16u

static int pool_grow(struct ep *ep)
{
	uint32_t n = ep->pool_cap ? ep->pool_cap : POOL_FIRST;
	struct opq_pool **t, *p;

	if (n > ep->max_outstanding - ep->pool_cap)
		n = ep->max_outstanding - ep->pool_cap;
	if (n == 0)
		return -ENOBUFS;
	/* every op of the new pool may wait on a match queue at once */
	if (!ep->tags && !(ep->tags = opq_tags_new()))
		return -ENOMEM;
	if (opq_tags_reserve(ep->tags, ep->pool_cap + n) < 0)
		return -ENOMEM;
	t = realloc(ep->pools, (ep->npools + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	ep->pools = t;
	p = opq_pool_new(n);
	if (!p)
		return -ENOMEM;
	ep->pools[ep->npools++] = p;
	ep->pool_cap += n;
	return 0;
}

/* Make sure the endpoint's pools have a free entry for the op about to be
 * issued: 0, or -ENOMEM when growing them failed. Checked before the op
 * runs, so that an op that cannot be kept fails without having run. */
static int pool_reserve(struct ep *ep)
{
	/* outstanding counts the entries in use over all pools */
	if (ep->st.outstanding < ep->pool_cap)
		return 0;
	return pool_grow(ep) == 0 ? 0 : -ENOMEM;
}

/* Move a finished-or-waiting op from the stack into the endpoint's pool. The
 * pools cannot be full: engine_poll consumes at most as many descriptors as
 * there are free entries, and conn_issue reserved the entry. */
static struct opq_op *op_store(struct ep *ep, const struct opq_op *tmp)
{
	struct opq_op *op = NULL;

	/* the newest pool is the largest: look there first */
	for (uint32_t k = ep->npools; k-- > 0 && !op;)
		op = opq_pool_get(ep->pools[k]);
	if (!op && pool_grow(ep) == 0)
		op = opq_pool_get(ep->pools[ep->npools - 1]);
	if (!op)
		return NULL;
	*op = *tmp;
	ep->st.outstanding++;
	return op;
}

static void op_release(struct ep *ep, struct opq_op *op)
{
	uintptr_t a = (uintptr_t)op;

	for (uint32_t k = 0; k < ep->npools; k++) {
		struct opq_pool *p = ep->pools[k];
		uintptr_t lo = (uintptr_t)opq_pool_at(p, 0);

		if (a >= lo && a < lo + opq_pool_size(p) * sizeof(*op)) {
			opq_pool_put(p, op);
			break;
		}
	}
	ep->st.outstanding--;
}

static void work_add(struct engine *e, struct conn *c)
{
	if (!c->queued) {
		c->queued = true;
		c->work_next = e->work;
		e->work = c;
	}
}

/* A WAITING op on side c got its result: post it now or leave it held. */
void eng_op_finish_waiting(struct engine *e, struct conn *c, struct opq_op *op)
{
	if (opq_conn_finished(&c->q, op)) {
		post_op(e, c->ep, op);
		op_release(c->ep, op);
	}
	/* a fence or held completions behind it may be free to go now */
	work_add(e, c);
}

void eng_op_post_free(struct engine *e, struct ep *ep, struct opq_op *op, bool post)
{
	if (post)
		post_op(e, ep, op);
	op_release(ep, op);
}

struct opq_op *eng_op_add_waiting(struct conn *c, const struct opq_op *tmp)
{
	struct opq_op *op;

	if (c->ep->st.outstanding >= c->ep->max_outstanding || pool_reserve(c->ep) < 0)
		return NULL;
	op = op_store(c->ep, tmp);
	if (op)
		opq_conn_add(&c->q, op, OPQ_WAITING);
	return op;
}

/* ---- execution ---- */

int eng_copy(struct engine *e, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		uint64_t src_off, uint64_t len)
{
	if (len == 0)
		return 0;
	return e->mem.copy(e->mem.arg, dst, dst_off, src, src_off, len);
}

static void exec_rdma(struct engine *e, struct conn *c, struct opq_op *op)
{
	const struct mr *rm = mr_table_by_rkey(e->mrs, op->key);
	int r;

	op->res_len = 0;
	/* The key must belong to the client at the other end of this very
	 * connection: a key leaked to a third party is useless to it. */
	if (!rm || rm->client_id != c->peer_ep->client_id) {
		op->res = -EACCES;
	} else if (!mr_range_ok(rm, op->roff, op->len)) {
		op->res = -ERANGE;
	} else {
		if (op->opcode == UCCL_OP_PUT)
			r = eng_copy(e, rm, op->roff, op->lmr, op->loff, op->len);
		else
			r = eng_copy(e, op->lmr, op->loff, rm, op->roff, op->len);
		op->res = r;
		if (r < 0)
			return;
		op->res_len = op->len;
		e->st.bytes += op->len;
		c->ep->st.bytes += op->len;
	}
}

/* Move the message of snd into rcv and give both their results. */
static void match(struct engine *e, struct ep *sep, struct opq_op *snd, struct ep *rep,
		  struct opq_op *rcv)
{
	int r = 0;

	if (snd->len > rcv->len) {
		r = -EMSGSIZE;
	} else {
		r = eng_copy(e, rcv->lmr, rcv->loff, snd->lmr, snd->loff, snd->len);
		if (r == 0) {
			e->st.bytes += snd->len;
			sep->st.bytes += snd->len;
			rep->st.bytes += snd->len;
		}
	}
	snd->res = rcv->res = r;
	/* the receiver learns the message length even when its buffer was too
	 * small, so that it can post a bigger one */
	snd->res_len = rcv->res_len = snd->len;
	snd->res_tag = rcv->res_tag = snd->key;
}

void eng_sem_raise(struct engine *e, struct ep *ep, uint32_t id, uint64_t n)
{
	/* release: the bytes of earlier puts are visible before the count */
	__atomic_fetch_add(&ep->sems[id], n, __ATOMIC_RELEASE);
	eng_touch(e, ep);
}

/* +1 on the peer's semaphore for this connection. */
static void raise_peer(struct engine *e, struct conn *c)
{
	eng_sem_raise(e, c->peer_ep, c->peer_id, 1);
}

/* Start op on side c. Returns true when it finished (op->res set), false
 * when it waits for the peer (the caller queues it). */
static bool op_start(struct engine *e, struct conn *c, struct opq_op *op)
{
	struct opq_op *peer_op;

	/* a remote op waits for the channel; remote_start runs it once it is
	 * stored in the pool (packets and records point at the stored copy) */
	if (c->remote && op->opcode != UCCL_OP_FLUSH)
		return false;
	switch (op->opcode) {
	case UCCL_OP_PUT:
	case UCCL_OP_GET:
		exec_rdma(e, c, op);
		if (op->flags & UCCL_SQE_F_SIGNAL)
			raise_peer(e, c);     /* as a SIGNAL after it: whether or not it wrote */
		return true;
	case UCCL_OP_SIGNAL:
		/* Ops on a side start in issue order and PUTs finish when they
		 * start, so earlier PUTs are visible before this increment. */
		raise_peer(e, c);
		op->res = 0;
		op->res_len = 0;
		return true;
	case UCCL_OP_FLUSH:
		op->res = 0;
		op->res_len = 0;
		return true;
	case UCCL_OP_SEND:
		peer_op = opq_conn_find_recv(&c->peer->q, op->key);
		if (!peer_op)
			return false;
		match(e, c->ep, op, c->peer_ep, peer_op);
		eng_op_finish_waiting(e, c->peer, peer_op);
		return true;
	case UCCL_OP_RECV:
		peer_op = opq_conn_find_send(&c->peer->q, op->key);
		if (!peer_op)
			return false;
		match(e, c->peer_ep, peer_op, c->ep, op);
		eng_op_finish_waiting(e, c->peer, peer_op);
		return true;
	default:
		return true;   /* not reached: validated before */
	}
}

/* Op was canceled while it stalled; its turn came. A put that carries a
 * signal (UCCL_SQE_F_SIGNAL) still raises it, as a SIGNAL behind the put
 * would: here at once; across hosts (false: not done) by the void
 * remote_start sends for it. */
static bool cancelled_start(struct engine *e, struct conn *c, struct opq_op *op)
{
	if (op->opcode != UCCL_OP_PUT || !(op->flags & UCCL_SQE_F_SIGNAL))
		return true;
	if (c->remote)
		return false;
	raise_peer(e, c);
	return true;
}

/* Post what the reorder list allows and start what the fences allow. */
static void conn_progress(struct engine *e, struct conn *c)
{
	struct opq_op *op;
	bool done;

	for (;;) {
		while ((op = opq_conn_pop_done(&c->q))) {
			post_op(e, c->ep, op);
			op_release(c->ep, op);
		}
		op = opq_conn_next_start(&c->q);
		if (!op)
			break;
		/* canceled while stalled (its region went away): result already set */
		done = op->res < 0 ? cancelled_start(e, c, op) : op_start(e, c, op);
		if (opq_conn_started(&c->q, op, done)) {
			post_op(e, c->ep, op);
			op_release(c->ep, op);
		} else if (!done && c->remote) {
			remote_start(e, c, op);
		}
	}
}

static void run_work(struct engine *e)
{
	struct conn *c;

	while ((c = e->work)) {
		e->work = c->work_next;
		c->queued = false;
		conn_progress(e, c);
	}
}

/* A validated op (on the stack) enters its connection side. */
static void conn_issue(struct engine *e, struct conn *c, struct opq_op *tmp)
{
	struct ep *ep = c->ep;
	struct opq_op *op;
	enum opq_state st;

	/* before it runs: a put that wrote, or a send that matched, must not
	 * then be reported failed (nor ahead of earlier strict ops) */
	if (pool_reserve(ep) < 0) {
		post(e, ep, tmp->user_data, tmp->opcode, -ENOMEM, 0, 0);
		return;
	}
	if (!opq_conn_can_start(&c->q, tmp->flags)) {
		st = OPQ_STALLED;
	} else if (!op_start(e, c, tmp)) {
		st = OPQ_WAITING;
	} else if (opq_conn_can_post_new(&c->q, tmp)) {
		post_op(e, ep, tmp);
		return;
	} else {
		st = OPQ_DONE;
		tmp->lmr = NULL;
	}
	op = op_store(ep, tmp);
	if (!op) {
		/* unreachable while the consume limit holds; fail, do not crash */
		post(e, ep, tmp->user_data, tmp->opcode, -ENOBUFS, 0, 0);
		return;
	}
	opq_conn_add(&c->q, op, st);
	if (st == OPQ_WAITING && c->remote)
		remote_start(e, c, op);
}

static const struct opq_op op_zero;

/* Validate one privately copied descriptor and execute or queue it. */
static void sqe_exec(struct engine *e, struct ep *ep, const struct uccl_sqe *s)
{
	const struct mr *m = NULL;
	struct opq_op tmp;
	struct conn *c;
	int res;

	if (s->opcode == 0 || s->opcode >= UCCL_OP_MAX_) {
		res = -EINVAL;
		goto fail;
	}
	e->st.ops[s->opcode]++;
	if ((s->flags & ~UCCL_SQE_F_MASK) | s->rsvd0 | s->rsvd1 | s->rsvd2 ||
	    ((s->flags & UCCL_SQE_F_SIGNAL) && s->opcode != UCCL_OP_PUT)) {
		res = -EINVAL;
		goto fail;
	}
	switch (s->opcode) {
	case UCCL_OP_NOP:
		post(e, ep, s->user_data, s->opcode, 0, 0, 0);
		return;
	case UCCL_OP_SIGNAL:
	case UCCL_OP_FLUSH:
		if (s->len | s->lmr | s->loff | s->rkey | s->roff) {
			res = -EINVAL;
			goto fail;
		}
		break;
	case UCCL_OP_SEND:
	case UCCL_OP_RECV:
		if (s->roff) {
			res = -EINVAL;
			goto fail;
		}
		break;
	default:
		break;
	}
	if (s->conn >= ep->max_conns) {
		res = -ENOTCONN;
		goto fail;
	}
	c = ep_conn(ep, s->conn);
	if (!c || c->state != CONN_UP) {
		res = c && c->state == CONN_RESET ? -ECONNRESET : -ENOTCONN;
		goto fail;
	}
	if (s->opcode != UCCL_OP_SIGNAL && s->opcode != UCCL_OP_FLUSH) {
		m = mr_table_by_id(e->mrs, ep->client_id, s->lmr);
		if (!m) {
			res = -EBADF;
			goto fail;
		}
		if (!mr_range_ok(m, s->loff, s->len)) {
			res = -ERANGE;
			goto fail;
		}
		if (s->len > e->max_op_bytes) {
			res = -EMSGSIZE;
			goto fail;
		}
	}
	/* a copy of a zeroed op, not a compound literal: gcc zeroes those
	 * with rep stos, which costs more than the rest of this function */
	tmp = op_zero;
	tmp.lmr = m;
	tmp.user_data = s->user_data;
	tmp.loff = s->loff;
	tmp.len = s->len;
	tmp.key = s->rkey;
	tmp.roff = s->roff;
	tmp.conn = s->conn;
	tmp.opcode = s->opcode;
	tmp.flags = s->flags;
	tmp.rmsg = OPQ_NO_RMSG;
	conn_issue(e, c, &tmp);
	return;

fail:
	/* A descriptor that is rejected never entered its connection's
	 * queues, so its completion is not ordered with them. */
	post(e, ep, s->user_data, s->opcode, res, 0, 0);
}

/* ---- teardown ---- */

/* Finish every op of side c: DONE ones with their own result, the others
 * with res; with drop, nothing is posted (the endpoint is going away).
 * Except a split op with parts out and the ops after it: their results
 * set, they complete once its last part reports (lanes.c, the linger
 * list), so that no lane touches its buffer after the client saw it
 * complete and a flush or a strict op behind it does not come first. */
static void conn_flush_ops(struct engine *e, struct conn *c, int res, bool drop)
{
	struct opq_op *op, *last = NULL;

	/* a broken endpoint's ring may be garbage: never write to it; a
	 * shadow's parts always report (their owner waits for them), and
	 * as failed: they may not all be written */
	drop = !c->ep->shadow && (drop || c->ep->broken);
	if (c->ep->shadow && res == 0)
		res = -ECANCELED;
	if (c->remote)
		remote_conn_detach(e, c, !drop);   /* without drop, split ops linger */
	while ((op = opq_conn_take(&c->q))) {
		if (!drop && op->state != OPQ_DONE && op->res == 0) {
			op->res = res;
			op->res_len = 0;
			op->res_tag = 0;
		}
		if (op->rlinger || last) {
			last = lanes_linger_follow(last, op);
			continue;
		}
		if (!drop)
			post_op(e, c->ep, op);
		op_release(c->ep, op);
	}
}

static void conn_detach(struct conn *c, enum conn_state st)
{
	c->state = (uint8_t)st;
	c->peer = NULL;
	c->peer_ep = NULL;
	c->peer_id = 0;
}

/* Tell a client waiting on c's semaphore: no signal will come any more. */
static void sem_mark_reset(struct engine *e, struct conn *c)
{
	__atomic_fetch_or(&c->ep->sems[c->id], UCCL_SEM_RESET, __ATOMIC_RELEASE);
	eng_touch(e, c->ep);
}

void eng_conn_reset(struct engine *e, struct conn *c, int err)
{
	conn_flush_ops(e, c, err, false);
	conn_detach(c, CONN_RESET);
	sem_mark_reset(e, c);
}

void eng_settle(struct engine *e)
{
	run_work(e);
	flush_cqs(e);
}

int engine_conn_reset(struct engine *e, uint32_t ep_id, uint32_t conn)
{
	struct ep *ep = eng_ep_get(e, ep_id);
	struct conn *c;

	if (!ep || conn >= ep->max_conns)
		return -EINVAL;
	c = ep_conn(ep, conn);
	if (!c)
		return -ENOTCONN;
	if (c->state == CONN_RESET)
		return 0;
	if (c->state != CONN_UP || !c->remote)
		return -ENOTCONN;
	eng_conn_reset(e, c, -ECONNRESET);
	eng_settle(e);
	return 0;
}

/* The peer of c goes away: its side fails what it holds and stays RESET. */
static void conn_reset_peer(struct engine *e, struct conn *c)
{
	struct conn *p = c->peer;

	conn_detach(p, CONN_RESET);
	conn_flush_ops(e, p, -ECONNRESET, false);
	sem_mark_reset(e, p);
}

static void live_del(struct engine *e, struct ep *ep)
{
	struct ep *last = e->live[--e->nlive];

	e->live[ep->live_pos] = last;
	last->live_pos = ep->live_pos;
}

/* Stop serving ep: its own ops vanish without completions, its peers are
 * reset. The conn sides stay RESET so that engine_conn_remove still works. */
static void ep_shutdown(struct engine *e, struct ep *ep)
{
	if (!ep->broken && !ep->shadow)
		live_del(e, ep);
	ep->broken = true;
	ep->staged = 0;
	if (e->rm)
		lanes_linger_drop(e, ep);
	for (uint32_t i = 0; i < ep->nchunks * CONN_CHUNK; i++) {
		struct conn *c = ep_conn(ep, i);

		if (!c || c->state == CONN_FREE)
			continue;
		if (c->state == CONN_UP && !c->remote)
			conn_reset_peer(e, c);
		conn_flush_ops(e, c, 0, true);
		conn_detach(c, CONN_RESET);
	}
}

/* The client broke one of ep's rings: it is served no more, and told so
 * (a client waiting for a completion or a signal would otherwise wait out
 * its timeout). The CQ ctl is written whatever its indices say. Only live
 * endpoints get here (ep_pass, engine_sleep_arm): never a lane's shadow. */
static void ep_break(struct engine *e, struct ep *ep)
{
	e->st.corrupt_rings++;
	/* completions staged earlier in this pass (other endpoints' work)
	 * still go when the CQ's indices are sane and leave them room:
	 * they were counted */
	if (ep->staged && ring_prod_space_checked(&ep->cq) >= (int)ep->staged) {
		ring_prod_publish(&ep->cq, ep->staged);
		ep->staged = 0;
	}
	ep_shutdown(e, ep);
	ring_prod_stop(&ep->cq, -EBADMSG);
	if (e->notify) {
		e->notify(e->notify_arg, ep->id);
		e->st.notifies++;
	}
}

struct ep *eng_ep_get(const struct engine *e, uint32_t ep_id)
{
	return ep_id < e->max_endpoints ? e->eps[ep_id] : NULL;
}

/* ---- polling ---- */

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The bytes descriptor s may copy inline here: its length on a same-host
 * connection (remote ones go out in chunks over many passes). */
static uint64_t inline_bytes(const struct ep *ep, const struct uccl_sqe *s)
{
	const struct conn *c;

	if (!s->len)
		return 0;              /* NOPs, signals, flushes: no lookup on the ring's hot path */
	c = s->conn < ep->max_conns ? ep_conn(ep, s->conn) : NULL;
	return c && !c->remote ? s->len : 0;
}

/* How many of the n copied descriptors this pass takes: the first, then
 * while the bytes they copy inline fit pass_bytes. Same-host copies run
 * in the pass, so a client's batch of large ones would otherwise hold up
 * every other client for poll_batch x max_op_bytes. */
static uint32_t within_pass_bytes(const struct engine *e, const struct ep *ep, uint32_t n)
{
	uint64_t left = e->pass_bytes, b = inline_bytes(ep, &e->sqebuf[0]);
	uint32_t k = 1;

	left -= b < left ? b : left;
	while (k < n && (b = inline_bytes(ep, &e->sqebuf[k])) <= left) {
		left -= b;
		k++;
	}
	return k;
}

/* One endpoint: consume what can be completed, execute, publish. Returns the
 * number of descriptors consumed, or -1 if the endpoint broke. */
static int ep_pass(struct engine *e, struct ep *ep)
{
	int avail, space;
	int64_t room;
	uint32_t n, first;

	avail = ring_cons_avail(&ep->sq);
	if (avail == 0)
		return 0;
	space = avail < 0 ? avail : ring_prod_space_checked(&ep->cq);
	if (space < 0) {
		ep_break(e, ep);
		return -1;
	}
	/* Every descriptor consumed now has a CQ slot: free space minus
	 * completions already owed (pending ops) and written (staged). */
	room = (int64_t)space - ep->st.outstanding - ep->staged;
	if (room <= 0)
		return 0;
	n = min_u32((uint32_t)avail, e->poll_batch);
	n = min_u32(n, (uint32_t)room);
	n = min_u32(n, ep->max_outstanding - ep->st.outstanding);
	if (n == 0)
		return 0;

	/* Copy out first, then release: the client may rewrite the slots as
	 * soon as it sees them released, and we validate the copies only. */
	first = min_u32(n, ep->sq.entries - (ep->sq.idx & ep->sq.mask));
	memcpy(e->sqebuf, ring_cons_slot(&ep->sq, 0), (size_t)first * UCCL_SQE_SIZE);
	if (n > first)
		memcpy(e->sqebuf + first, ep->sq.slots, (size_t)(n - first) * UCCL_SQE_SIZE);
	/* keep the compiler from re-reading shared memory in place of the copy */
	__asm__ __volatile__("" ::: "memory");
	n = within_pass_bytes(e, ep, n);   /* the rest stay in the ring */
	ring_cons_release(&ep->sq, n);
	ep->st.submitted += n;
	e->st.sqes += n;

	for (uint32_t i = 0; i < n; i++) {
		sqe_exec(e, ep, &e->sqebuf[i]);
		if (e->work)
			run_work(e);
	}
	if (ep->staged) {
		ring_prod_publish(&ep->cq, ep->staged);
		ep->staged = 0;
	}
	return (int)n;
}

int engine_poll(struct engine *e, uint64_t now_ns)
{
	uint64_t cqes0 = e->st.cqes;
	uint64_t consumed = 0;
	uint64_t work;

	e->now = now_ns;
	e->st.polls++;
	for (uint32_t i = 0; i < e->nlive;) {
		int r = ep_pass(e, e->live[i]);

		/* a broken endpoint left the dense array; i now names the next */
		if (r < 0)
			continue;
		consumed += (uint64_t)r;
		i++;
	}
	run_work(e);
	flush_cqs(e);
	work = consumed + (e->st.cqes - cqes0);
	if (work)
		e->st.busy_polls++;
	return work > INT_MAX ? INT_MAX : (int)work;
}

int engine_sleep_arm(struct engine *e)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < e->nlive;) {
		struct ep *ep = e->live[i];
		int r = ring_cons_arm(&ep->sq);
		int space;

		if (r < 0) {
			ep_break(e, ep);
			continue;
		}
		/* Descriptors held back by a full CQ or the outstanding limit are
		 * not work: the client rings the doorbell when it makes room, and
		 * pending ops complete through other endpoints' work. Counting
		 * them would spin the engine for a client that stopped polling. */
		if (r > 0) {
			space = ring_prod_space_checked(&ep->cq);
			if (space < 0) {
				ep_break(e, ep);
				continue;
			}
			int64_t room = (int64_t)space - ep->st.outstanding - ep->staged;
			int64_t lim = (int64_t)ep->max_outstanding - ep->st.outstanding;
			if (room < r)
				r = room < 0 ? 0 : (int)room;
			if (lim < r)
				r = lim < 0 ? 0 : (int)lim;
		}
		total += (uint64_t)r;
		i++;
	}
	run_work(e);
	flush_cqs(e);
	return total > INT_MAX ? INT_MAX : (int)total;
}

void engine_sleep_disarm(struct engine *e)
{
	for (uint32_t i = 0; i < e->nlive; i++)
		ring_cons_disarm(&e->live[i]->sq);
}

/* ---- endpoints ---- */

static struct ep *ep_free(struct ep *ep)
{
	if (!ep)
		return NULL;
	for (uint32_t k = 0; k < ep->npools; k++)
		opq_pool_free(ep->pools[k]);
	free(ep->pools);
	opq_tags_free(ep->tags);
	for (uint32_t k = 0; k < ep->nchunks; k++)
		free(ep->conns[k]);
	free(ep->conns);
	if (ep->shadow)
		free(ep->sems);
	free(ep);
	return NULL;
}

struct conn *eng_conn_make(struct ep *ep, uint32_t id)
{
	uint32_t k = id / CONN_CHUNK, n = ep->nchunks;
	struct conn *chunk;

	if (ep_conn(ep, id))
		return ep_conn(ep, id);
	if (k >= n) {
		struct conn **t;

		n = n ? n : 1;
		while (n <= k)
			n *= 2;
		t = realloc(ep->conns, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + ep->nchunks, 0, (n - ep->nchunks) * sizeof(*t));
		ep->conns = t;
		ep->nchunks = n;
	}
	chunk = calloc(CONN_CHUNK, sizeof(*chunk));
	if (!chunk)
		return NULL;
	for (uint32_t i = 0; i < CONN_CHUNK; i++) {
		opq_conn_init(&chunk[i].q, &ep->tags);
		chunk[i].ep = ep;
		chunk[i].id = k * CONN_CHUNK + i;
	}
	ep->conns[k] = chunk;
	return &chunk[id % CONN_CHUNK];
}

/* A new endpoint's common part, not yet in the engine: *out, or -EINVAL
 * (bounds), -ENOMEM. max_conns is checked against the caller's bound. */
static int ep_new(uint32_t ep_id, uint32_t client_id, uint32_t max_conns, uint32_t conn_bound,
		  uint32_t max_outstanding, struct ep **out)
{
	struct ep *ep;

	if (max_conns == 0 || max_conns > conn_bound || max_outstanding == 0 ||
	    max_outstanding > EP_MAX_OUTSTANDING)
		return -EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->id = ep_id;
	ep->client_id = client_id;
	ep->max_conns = max_conns;
	ep->max_outstanding = max_outstanding;
	*out = ep;
	return 0;
}

int engine_ep_add(struct engine *e, const struct engine_ep_params *p)
{
	const struct uccl_shm_hdr *h;
	struct ep *ep = NULL;
	int r;

	/* the semaphores are u64 atomics: the region must keep them aligned */
	if (!p || !p->hdr || !p->region || (uintptr_t)p->region % sizeof(uint64_t) ||
	    p->ep_id >= e->max_endpoints)
		return -EINVAL;
	if (e->eps[p->ep_id])
		return -EBUSY;
	h = p->hdr;
	/* The header is our own trusted copy; checking it still catches a
	 * caller that pairs the wrong header with a region. */
	r = ring_region_check(h, p->region_len);
	if (r == 0)
		r = ep_new(p->ep_id, p->client_id, p->max_conns, h->sem_count, p->max_outstanding, &ep);
	if (r < 0)
		return r;
	ring_side_init(&ep->sq, p->region, h->sq_ctl_off, h->sq_off, h->sq_entries,
		       h->sq_entry_size);
	ring_side_init(&ep->cq, p->region, h->cq_ctl_off, h->cq_off, h->cq_entries,
		       h->cq_entry_size);
	ep->sems = (uint64_t *)((uint8_t *)p->region + h->sem_off);
	e->eps[p->ep_id] = ep;
	ep->live_pos = e->nlive;
	e->live[e->nlive++] = ep;
	return 0;
}

int engine_shadow_add(struct engine *e, uint32_t ep_id, uint32_t client_id, uint32_t max_conns,
		      uint32_t max_outstanding)
{
	struct ep *ep;
	int r;

	if (ep_id >= e->max_endpoints)
		return -EINVAL;
	/* the same endpoint's shadow, made for an earlier connection, serves;
	 * anything else there (one whose removal was lost) does not */
	ep = e->eps[ep_id];
	if (ep)
		return ep->shadow && ep->client_id == client_id && ep->max_conns == max_conns ? -EBUSY
														: -EEXIST;
	r = ep_new(ep_id, client_id, max_conns, 1u << 16, max_outstanding, &ep);
	if (r < 0)
		return r;
	/* a peer may still send a signal to a lane side: it lands here */
	ep->sems = calloc(max_conns, sizeof(*ep->sems));
	if (!ep->sems) {
		free(ep);
		return -ENOMEM;
	}
	ep->shadow = true;
	ep->live_pos = UINT32_MAX;
	/* off engine.live (nothing to poll); on its own list for
	 * engine_mr_remove */
	ep->shadow_next = e->shadows;
	e->shadows = ep;
	e->st.shadow_eps++;
	e->eps[ep_id] = ep;
	return 0;
}

int engine_ep_remove(struct engine *e, uint32_t ep_id)
{
	struct ep *ep;

	if (ep_id >= e->max_endpoints)
		return -EINVAL;
	ep = e->eps[ep_id];
	if (!ep)
		return -ENOENT;
	ep_shutdown(e, ep);
	run_work(e);
	flush_cqs(e);
	e->eps[ep_id] = NULL;
	for (struct ep **pp = &e->shadows; ep->shadow && *pp; pp = &(*pp)->shadow_next) {
		if (*pp == ep) {
			*pp = ep->shadow_next;
			e->st.shadow_eps--;
			break;
		}
	}
	ep_free(ep);
	return 0;
}

/* ---- connections ---- */

int engine_conn_add(struct engine *e, uint32_t ep_a, uint32_t conn_a, uint32_t ep_b, uint32_t conn_b)
{
	struct ep *a = eng_ep_get(e, ep_a), *b = eng_ep_get(e, ep_b);
	struct conn *ca, *cb;

	if (!a || !b || conn_a >= a->max_conns || conn_b >= b->max_conns)
		return -EINVAL;
	if (ep_a == ep_b && conn_a == conn_b)
		return -EINVAL;
	if (a->shadow || b->shadow)
		return -EINVAL;        /* lane sides only bind to channels */
	if (a->broken || b->broken)
		return -EPIPE;
	ca = eng_conn_make(a, conn_a);
	cb = eng_conn_make(b, conn_b);
	if (!ca || !cb)
		return -ENOMEM;
	if (ca->state != CONN_FREE || cb->state != CONN_FREE)
		return -EBUSY;
	ca->state = cb->state = CONN_UP;
	ca->peer_ep = b;
	ca->peer = cb;
	ca->peer_id = conn_b;
	cb->peer_ep = a;
	cb->peer = ca;
	cb->peer_id = conn_a;
	/* a reused conn id starts counting signals afresh */
	__atomic_store_n(&a->sems[conn_a], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->sems[conn_b], 0, __ATOMIC_RELAXED);
	a->st.conns++;
	b->st.conns++;
	return 0;
}

int engine_conn_remove(struct engine *e, uint32_t ep_id, uint32_t conn)
{
	struct ep *ep = eng_ep_get(e, ep_id);
	struct conn *c;

	if (!ep || conn >= ep->max_conns)
		return -EINVAL;
	c = ep_conn(ep, conn);
	if (!c || c->state == CONN_FREE)
		return -ENOTCONN;
	if (c->state == CONN_UP && !c->remote)
		conn_reset_peer(e, c);
	conn_flush_ops(e, c, -ECANCELED, false);
	/* closed here: a wait on its semaphore (another thread's) ends now,
	 * not at its timeout; a connection made in its place starts at 0 */
	sem_mark_reset(e, c);
	conn_detach(c, CONN_FREE);
	ep->st.conns--;
	run_work(e);
	flush_cqs(e);
	return 0;
}

/* ---- memory regions ---- */

int engine_mr_add(struct engine *e, const struct mr *m)
{
	if (!m)
		return -EINVAL;
	return mr_table_add(e->mrs, m);
}

/* A pending op's local region is going away: it completes with -ECANCELED,
 * or the error it already failed with (in its turn if it is strict), and
 * forgets the region. */
static void op_cancel(struct engine *e, struct ep *ep, struct opq_op *op)
{
	struct conn *c = ep_conn(ep, op->conn);   /* it holds an op: allocated */

	if (op->rparked) {
		op->lmr = NULL;        /* no side holds it, its result is set */
		return;
	}
	/* one that failed already (a peer refused it, and it waits for its
	 * void to be acknowledged) keeps that error */
	if (op->res == 0) {
		op->res = -ECANCELED;
		op->res_len = 0;
		op->res_tag = 0;
	}
	if (op->state == OPQ_WAITING && c->remote) {
		remote_cancel(e, c, op);
		return;
	}
	op->lmr = NULL;
	if (op->state == OPQ_WAITING)
		eng_op_finish_waiting(e, c, op);
	/* a STALLED op keeps its place and completes when it would start */
}

/* Cancel ep's pending ops on region m. */
static void ep_cancel_mr(struct engine *e, struct ep *ep, const struct mr *m)
{
	if (ep->client_id != m->client_id || ep->st.outstanding == 0)
		return;
	for (uint32_t k = 0; k < ep->npools; k++) {
		uint32_t size = opq_pool_size(ep->pools[k]);

		for (uint32_t j = 0; j < size; j++) {
			struct opq_op *op = opq_pool_at(ep->pools[k], j);

			if (op->state != OPQ_FREE && op->lmr == m)
				op_cancel(e, ep, op);
		}
	}
}

int engine_mr_remove(struct engine *e, uint32_t client_id, uint32_t mr_id)
{
	const struct mr *m = mr_table_by_id(e->mrs, client_id, mr_id);

	if (!m)
		return -ENOENT;
	for (uint32_t i = 0; i < e->nlive; i++)
		ep_cancel_mr(e, e->live[i], m);
	for (struct ep *ep = e->shadows; ep; ep = ep->shadow_next)
		ep_cancel_mr(e, ep, m);
	run_work(e);
	flush_cqs(e);
	return mr_table_remove(e->mrs, client_id, mr_id);
}

/* ---- engine ---- */

struct engine *engine_new(const struct engine_params *p)
{
	struct engine *e;

	if (!p || !p->mem || !p->mem->copy || p->max_endpoints == 0 ||
	    p->max_endpoints > ENGINE_MAX_ENDPOINTS || p->poll_batch > ENGINE_MAX_BATCH)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->mem = *p->mem;
	e->notify = p->notify;
	e->notify_arg = p->notify_arg;
	e->max_endpoints = p->max_endpoints;
	e->poll_batch = p->poll_batch ? p->poll_batch : ENGINE_DEFAULT_BATCH;
	e->pass_bytes = p->pass_bytes ? p->pass_bytes : ENGINE_DEFAULT_PASS_BYTES;
	e->max_op_bytes = p->max_op_bytes ? p->max_op_bytes : UINT64_MAX;
	e->max_ep_inflight = p->max_ep_inflight_bytes;
	e->lane_min = p->lane_min_bytes;
	e->lane_submit = p->lane_submit;
	e->lane_done = p->lane_done;
	e->lane_arg = p->lane_arg;
	e->mrs = mr_table_new(p->max_mrs);
	e->eps = calloc(p->max_endpoints, sizeof(*e->eps));
	e->live = calloc(p->max_endpoints, sizeof(*e->live));
	e->touched = calloc(p->max_endpoints, sizeof(*e->touched));
	e->sqebuf = calloc(e->poll_batch, sizeof(*e->sqebuf));
	if (!e->mrs || !e->eps || !e->live || !e->touched || !e->sqebuf)
		return engine_free(e);
	if (p->max_chans) {
		e->rm = remote_new(p);
		if (!e->rm)
			return engine_free(e);
	}
	return e;
}

struct engine *engine_free(struct engine *e)
{
	if (!e)
		return NULL;
	/* channels first: their messages point into endpoints' pools */
	remote_free(e);
	if (e->eps)
		for (uint32_t i = 0; i < e->max_endpoints; i++)
			ep_free(e->eps[i]);
	free(e->eps);
	free(e->live);
	free(e->touched);
	free(e->sqebuf);
	mr_table_free(e->mrs);
	free(e);
	return NULL;
}

const struct engine_stats *engine_stats(const struct engine *e)
{
	return &e->st;
}

int engine_ep_stats(const struct engine *e, uint32_t ep_id, struct engine_ep_stats *out)
{
	struct ep *ep;

	if (ep_id >= e->max_endpoints || !out)
		return -EINVAL;
	ep = e->eps[ep_id];
	/* a lane shadow holds the id of an endpoint on another engine: that
	 * engine answers for it */
	if (!ep || ep->shadow)
		return -ENOENT;
	*out = ep->st;
	/* the counters are still valid; the error says it is no longer served */
	return ep->broken ? -EPIPE : 0;
}

#define STAT(name) { #name, offsetof(struct engine_stats, name) }
#define STAT_OP(name, NAME) \
	{ "op_" #name, offsetof(struct engine_stats, ops) + UCCL_OP_##NAME * sizeof(uint64_t) }

/* Names are part of ucclctl's output: append, never rename. */
static const struct {
	const char *name;
	size_t off;
} stat_names[] = {
	STAT(polls), STAT(busy_polls), STAT(sqes), STAT(cqes),
	STAT_OP(nop, NOP), STAT_OP(put, PUT), STAT_OP(get, GET), STAT_OP(signal, SIGNAL),
	STAT_OP(flush, FLUSH), STAT_OP(send, SEND), STAT_OP(recv, RECV),
	STAT(bytes), STAT(err_inval), STAT(err_badconn), STAT(err_access), STAT(err_fault),
	STAT(err_msgsize), STAT(err_reset), STAT(err_canceled), STAT(corrupt_rings),
	STAT(notifies), STAT(remote_msgs), STAT(remote_queued), STAT(send_retries),
	STAT(rx_delivered), STAT(rx_refused_conn), STAT(rx_refused_access), STAT(rx_refused_range),
	STAT(rx_refused_nobuf), STAT(rx_refused_other), STAT(rx_no_chan), STAT(unexpected_bytes),
	STAT(unexpected_msgs), STAT(rx_signals_held), STAT(put_records),
	STAT(lane_splits), STAT(lane_parts), STAT(shadow_eps),
};

void engine_stats_foreach(const struct engine *e, void (*fn)(void *arg, const char *name, uint64_t v),
			  void *arg)
{
	for (size_t i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)&e->st + stat_names[i].off, sizeof(v));
		fn(arg, stat_names[i].name, v);
	}
}
