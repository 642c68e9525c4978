/* SPDX-License-Identifier: MIT */
/*
 * lanes: one connection's large puts and gets spread over several engines. One
 * engine thread bounds what one endpoint pair moves (on a 16-core machine
 * both daemons' engine threads ran at 93-97% of a core at 27-30 Gbit/s,
 * docs/PERFORMANCE.md), and more threads scale when the traffic is spread
 * over endpoint pairs. A lane is a connection side with the owner's
 * endpoint and connection ids on a shadow endpoint of another engine, bound
 * to that engine's own channel to the peer host; the peer has the same
 * lanes on its side, so both hosts' threads share the work.
 *
 * The owner cuts a put or get into nlanes + 1 parts of equal, 4 KiB-
 * aligned length (its own first part takes the remainder), keeps the first
 * and hands the others to the lanes. Each part is an ordinary put or get
 * on its lane (its own put numbers, voids, retransmissions, get ids); the
 * owner's op waits for its own part and every lane's report and completes
 * with the first error.
 * The parts' reports name the owner's op through a message slot. An op
 * whose side is reset waits for them off its side (the linger list), so
 * that no lane touches its buffer after it completed; one that comes after
 * the op went (its endpoint removed) is ignored. A signal on
 * the owner side waits while parts of a put issued before it are out
 * (remote.c sig_room; the side's split puts with parts out are a list in
 * issue order): the receiver holds a signal only behind the puts of the
 * same side. A part that failed because its lane lost the peer (reset, or
 * its channel gave up) resets the owner side too: the connection is one.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/remote_int.h"

#define LANE_ALIGN 4096ull            /* lane parts are whole pages long (the owner keeps the rest) */

/* Split puts with parts out, in issue order (rseq): through mnext/mprev,
 * which only sends and receives use otherwise. */
static void lput_add(struct conn *c, struct opq_op *op)
{
	op->mnext = NULL;
	op->mprev = c->r.lput_tail;
	if (c->r.lput_tail)
		c->r.lput_tail->mnext = op;
	else
		c->r.lput_head = op;
	c->r.lput_tail = op;
}

static void lput_del(struct conn *c, struct opq_op *op)
{
	if (op->mprev)
		op->mprev->mnext = op->mnext;
	else
		c->r.lput_head = op->mnext;
	if (op->mnext)
		op->mnext->mprev = op->mprev;
	else
		c->r.lput_tail = op->mprev;
	op->mnext = op->mprev = NULL;
}

void lanes_split(struct engine *e, struct conn *c, struct opq_op *op)
{
	struct remote *rm = e->rm;
	uint32_t n = c->r.nlanes, i;
	uint64_t part, own;

	/* a put that raises the semaphore goes whole: its parts on the lanes'
	 * channels would not be ordered before it */
	if (!n || !e->lane_min || !e->lane_submit || op->len < e->lane_min || !op->lmr ||
	    (op->rflags & RFL_VOID) || (op->flags & UCCL_SQE_F_SIGNAL))
		return;
	part = op->len / (n + 1) & ~(LANE_ALIGN - 1);
	if (part == 0)
		return;
	/* a split op holds its cookie's slot until every part reported, and
	 * parts need slots on their lane engines, which split too: with the
	 * tables full of cookies on two threads, each waiting for the
	 * other's parts, nothing would move. Cookies take at most half. */
	if (rm->nused >= rm->nslots / 2)
		return;                /* it goes whole */
	i = remote_slot_get(rm);
	if (i == NO_SLOT)
		return;                /* no slot for the cookie: it goes whole */
	own = op->len - part * n;
	rm->slots[i].op = op;
	op->rlslot = i + 1;
	op->rsplit = op->len;
	op->rlanes = 0;
	op->rown_done = false;
	for (uint32_t k = 1; k <= n; k++) {
		struct engine_lane_part p = {
			.opcode = op->opcode,
			.lane = k,
			.ep = c->ep->id,
			.conn = c->id,
			.wire = c->r.wire_id,
			.client_id = op->lmr->client_id,
			.lmr = op->lmr->id,
			.loff = op->loff + own + (k - 1) * part,
			.len = part,
			.rkey = op->key,
			.roff = op->roff + own + (k - 1) * part,
			.cookie = remote_cookie(rm, i),
		};
		int r = e->lane_submit(e->lane_arg, &p);

		if (r < 0) {
			/* that range is not written: the put fails, the
			 * rest still goes (its parts report either way) */
			if (op->res == 0)
				op->res = r;
			continue;
		}
		op->rlanes++;
		e->st.lane_parts++;
	}
	op->len = own;
	if (op->rlanes == 0) {
		remote_slot_put(rm, i);
		op->rlslot = 0;
		return;
	}
	if (op->opcode == UCCL_OP_PUT)
		lput_add(c, op);       /* signals wait for puts only */
	e->st.lane_splits++;
}

void lanes_forget(struct engine *e, struct opq_op *op)
{
	if (!op->rlslot)
		return;
	if (op->rlanes && op->opcode == UCCL_OP_PUT)
		lput_del(op->rside, op);
	remote_slot_put(e->rm, op->rlslot - 1);
	op->rlslot = 0;
	op->rlanes = 0;
	op->rown_done = false;
}

/* The linger list: split ops whose side was reset while their parts were
 * out. Completing such an op at once would tell the client its buffer is
 * free while a lane thread still reads it (a put) or writes it (a get);
 * every part reports exactly once (the lane bus reports a refused part
 * too), so the op completes, with the reset's error, once the last did.
 * It leaves its side, which may be removed and made again meanwhile, and
 * takes along the side's later ops (lanes_linger_follow): a flush or a
 * strict op behind it must not complete before it. */
void lanes_linger(struct engine *e, struct opq_op *op)
{
	struct remote *rm = e->rm;

	if (op->opcode == UCCL_OP_PUT)
		lput_del(op->rside, op);
	op->rlinger = true;
	op->rparked = true;
	op->rblocked = false;
	op->tnext = op->tprev = NULL;
	op->mprev = NULL;
	op->mnext = rm->linger;
	if (rm->linger)
		rm->linger->mprev = op;
	rm->linger = op;
}

struct opq_op *lanes_linger_follow(struct opq_op *last, struct opq_op *op)
{
	op->rparked = true;
	if (last) {
		op->onext = NULL;
		if (last->tprev)
			last->tprev->onext = op;
		else
			last->tnext = op;
		last->tprev = op;
		op->rblocked = op->rlinger;    /* it waits for last too */
	}
	return op->rlinger ? op : last;
}

/* Its parts all reported (or its endpoint goes): off the list. */
static void linger_del(struct remote *rm, struct opq_op *op)
{
	if (op->mprev)
		op->mprev->mnext = op->mnext;
	else
		rm->linger = op->mnext;
	if (op->mnext)
		op->mnext->mprev = op->mprev;
	op->mnext = op->mprev = NULL;
	op->rlinger = false;
	remote_slot_put(rm, op->rlslot - 1);   /* a later report finds nothing */
	op->rlslot = 0;
	op->rlanes = 0;
}

/* l (done, nothing before it waiting) and the ops after it go back to
 * ep's pool, completed when post: up to a lingering op that still waits
 * for its parts, which is then no longer blocked. */
static void linger_release(struct engine *e, struct ep *ep, struct opq_op *l, bool post)
{
	while (l) {
		struct opq_op *f = l->tnext, *next = NULL;

		eng_op_post_free(e, ep, l, post);
		for (struct opq_op *n; f; f = n) {
			n = f->onext;
			if (f->rblocked) {     /* a lingering op: always the last */
				f->rblocked = false;
				if (!f->rlinger)
					next = f;   /* its parts are in: it goes too */
				break;
			}
			eng_op_post_free(e, ep, f, post);
		}
		l = next;
	}
}

void lanes_linger_drop(struct engine *e, struct ep *ep)
{
	struct remote *rm = e->rm;
	struct opq_op *op = rm->linger;

	/* from each unblocked one, with those blocked behind it */
	while (op) {
		if (((struct conn *)op->rside)->ep != ep || op->rblocked) {
			op = op->mnext;
			continue;
		}
		/* all off the list first, so that the release goes through */
		for (struct opq_op *l = op; l; l = l->tprev && l->tprev->rblocked ? l->tprev : NULL)
			if (l->rlinger)
				linger_del(rm, l);
		linger_release(e, ep, op, false);
		op = rm->linger;       /* the list changed: from the start */
	}
}

int engine_rconn_lanes(struct engine *e, uint32_t ep_id, uint32_t conn, uint32_t nlanes)
{
	struct ep *ep = eng_ep_get(e, ep_id);
	struct conn *c;

	if (!ep || ep->shadow || conn >= ep->max_conns || nlanes > ENGINE_MAX_LANES)
		return -EINVAL;
	c = ep_conn(ep, conn);
	if (!c || !c->remote || c->state != CONN_UP)
		return -ENOTCONN;
	c->r.nlanes = nlanes;
	return 0;
}

int engine_lane_start(struct engine *e, const struct engine_lane_part *p)
{
	struct ep *ep = p ? eng_ep_get(e, p->ep) : NULL;
	const struct mr *m;
	struct opq_op tmp, *op;
	struct conn *c;

	if (!ep || !ep->shadow || !e->rm || p->conn >= ep->max_conns)
		return -EINVAL;
	c = ep_conn(ep, p->conn);
	/* before its peer side is named it could not send: fail it here,
	 * not through a report from inside this call */
	if (!c || c->state != CONN_UP || !c->remote || c->r.rep == UINT32_MAX)
		return c && c->state == CONN_RESET ? -ECONNRESET : -ENOTCONN;
	/* queued across a close and a reconnect under the same conn id: its
	 * put failed already, and its bytes must not land on the new one */
	if (c->r.wire_id != p->wire)
		return -ECONNRESET;
	if (p->client_id != ep->client_id)
		return -EBADF;
	/* the owner had the region when it split the op: gone here, it was
	 * deregistered meanwhile (this thread's removal ran first), which the
	 * owner's own cancel reports as -ECANCELED */
	m = mr_table_by_id(e->mrs, ep->client_id, p->lmr);
	if (!m)
		return -ECANCELED;
	if (p->len == 0 || !mr_range_ok(m, p->loff, p->len))
		return -ERANGE;
	if (p->opcode != UCCL_OP_PUT && p->opcode != UCCL_OP_GET)
		return -EINVAL;
	tmp = (struct opq_op){
		.lmr = m,
		.user_data = p->cookie,
		.loff = p->loff,
		.len = p->len,
		.key = p->rkey,
		.roff = p->roff,
		.conn = p->conn,
		.opcode = p->opcode,
		.rmsg = OPQ_NO_RMSG,
		.rorigin = p->origin,
	};
	op = eng_op_add_waiting(c, &tmp);
	if (!op)
		return -EAGAIN;
	ep->st.submitted++;
	remote_start(e, c, op);
	eng_settle(e);
	return 0;
}

int engine_lane_done(struct engine *e, uint64_t cookie, int res)
{
	struct opq_op *op;
	struct rslot *s;
	struct conn *c;
	uint32_t i;

	if (!e->rm)
		return -EINVAL;
	s = remote_slot_of(e->rm, cookie, &i);
	op = s ? s->op : NULL;
	if (!op || !op->rlanes || op->rlslot != i + 1)
		return -ENOENT;
	c = op->rside;
	op->rlanes--;
	if (res < 0 && op->res == 0)
		op->res = res;
	if (op->rlinger) {
		/* its side is gone (and may be another connection now) */
		if (op->rlanes == 0) {
			linger_del(e->rm, op);
			if (!op->rblocked)
				linger_release(e, c->ep, op, true);
			eng_settle(e);
		}
		return 0;
	}
	if (op->rlanes == 0) {
		if (op->opcode == UCCL_OP_PUT)
			lput_del(c, op);
		remote_slot_put(e->rm, i);
		op->rlslot = 0;
		if (op->rown_done)
			remote_op_finish(e, op, 0);    /* may hand op back to its pool */
	}
	/* the lane lost the peer: so did the connection (a signal after
	 * this put must not report it written). Reset before a held signal
	 * is let go: released first, it went out on the owner's healthy
	 * channel, and the peer, having the owner's part, raised it. */
	if ((res == -ECONNRESET || res == -ETIMEDOUT) && c->state == CONN_UP)
		eng_conn_reset(e, c, res);
	else if (c->r.sig_head)
		remote_release_signals(e, c);
	eng_settle(e);
	return 0;
}
