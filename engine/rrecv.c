/* SPDX-License-Identifier: MIT */
/*
 * rrecv: what arrives on a channel for this engine's connection sides
 * (tpchan's deliver callback), after the token and crc checks. Puts are
 * written at their final place after the key, owner and range checks, and
 * counted per connection once settled (every byte written, or refused, or
 * voided by the sender); a signal bumps the semaphore once the puts issued
 * before it (its ord) have all settled, and is held until then; sends are matched to receives in the sender's
 * issue order (a per-connection sequence number), written straight into a
 * posted receive when their turn has come, else buffered within
 * max_unexpected_bytes (a connection its share, see room_for), else refused
 * with -ENOBUFS for the sender to resend;
 * voids retire abandoned sequence numbers; get requests are snapshotted and
 * queued for an answer, get responses written at their place. Every refusal
 * goes back to the sender as a NACK carrying its reason.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/remote_int.h"


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

/* The engine's budget for what peers make it hold (buffered sends, their
 * records, get snapshots) is shared by holders: a connection holds its
 * records, a channel the get responses it has to send. A holder may take
 * more only while it would then hold no more than is free (a dynamic
 * threshold with factor 1, as switches share a buffer): one that never lets
 * go stops at half the budget, n of them at 1/(n+1) each, and the rest
 * stays free for everyone else. One holding nothing meets the old rule:
 * whatever is free. Bytes and records are shared alike. */
static bool room_for(const struct engine *e, uint64_t held_bytes, uint32_t held_msgs, uint64_t len)
{
	const struct remote *rm = e->rm;
	uint64_t free_b, free_n;

	if (e->st.unexpected_msgs >= rm->max_unexp_msgs || e->st.unexpected_bytes > rm->max_unexp_bytes)
		return false;
	free_b = rm->max_unexp_bytes - e->st.unexpected_bytes;
	free_n = rm->max_unexp_msgs - e->st.unexpected_msgs;
	if (held_msgs >= free_n)
		return false;
	/* a record that buffers nothing (a void, a send going straight into
	 * its receive) is held back by the count alone */
	if (len == 0 || (held_bytes == 0 && len <= free_b))
		return true;
	/* held + len <= free - len: what it would hold, against what would
	 * be left (records: held < free, which also stops a hog at half) */
	return len <= free_b / 2 && held_bytes <= free_b - 2 * len;
}

/* Sends that arrive before their turn may not take the last eighth of the
 * budget: it is kept for sends whose turn has come. Early records wait for
 * those; without the reserve, early records of a few connections could
 * fill the budget and every connection wait for a turn that never gets
 * in. */
static bool reserve_kept(const struct engine *e, uint64_t len)
{
	const struct remote *rm = e->rm;
	uint64_t free_b = rm->max_unexp_bytes - e->st.unexpected_bytes;   /* room_for checked */
	uint64_t free_n = rm->max_unexp_msgs - e->st.unexpected_msgs;

	return free_n > rm->max_unexp_msgs / 8 && free_b - len >= rm->max_unexp_bytes / 8;
}

/* Room for a record of c's incoming send number seq, buffering len bytes.
 * The send whose turn has come does not count c's records of later sends
 * (they arrived first, over other paths): those wait for it, and counted
 * they could keep it out for ever. One that buffers nothing (a send into
 * its posted receive, a void) does not count earlier sends nobody has
 * received either: the receiver may take them only after it, and refused
 * it would be resent for ever. Sends going straight in still count, so
 * one connection cannot take every record that way. */
static bool send_room(const struct engine *e, const struct conn *c, uint64_t seq, uint64_t len)
{
	uint64_t bytes = c->r.ubytes;
	uint32_t n = c->r.nrecs;

	if (n < REC_PER_CONN_MAX && room_for(e, bytes, n, len))
		return seq == c->r.next_seq || reserve_kept(e, len);
	if (seq != c->r.next_seq)
		return false;
	for (const struct rrec *r = c->r.recs; r; r = r->cnext) {
		if (r->seq <= seq && !(len == 0 && r->state == REC_UNMATCHED))
			continue;
		n--;
		if (r->buf)
			bytes -= r->len;
	}
	return n < REC_PER_CONN_MAX && room_for(e, bytes, n, len);
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
		r->c->r.ubytes -= r->len;
	}
}

void rrecv_free(struct engine *e, struct rrec *r)
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
void rrecv_discard(struct engine *e, struct rrec *r)
{
	if (r->state == REC_UNMATCHED)
		um_del(r->c, r);
	r->state = REC_DISCARD;
	if (r->recv)
		r->recv->rrec = NULL;
	r->recv = NULL;
	buf_release(e, r);
	if (r->got == r->len)
		rrecv_free(e, r);
}

static void recv_finish(struct engine *e, struct conn *c, struct opq_op *op, int res, uint64_t len,
			uint64_t tag)
{
	op->res = res;
	op->res_len = len;
	op->res_tag = tag;
	op->rrec = NULL;
	if (res >= 0) {
		e->st.bytes += len;
		c->ep->st.bytes += len;
	}
	eng_op_finish_waiting(e, c, op);
}

/* A record that was buffered meets receive op (its turn came, or op was
 * posted later). */
void rrecv_match(struct engine *e, struct conn *c, struct rrec *r, struct opq_op *op)
{
	struct mr tmp;
	int res;

	opq_conn_unmatch(&c->q, op);
	if (r->state == REC_UNMATCHED)
		um_del(c, r);
	if (r->len > op->len) {
		/* as on one host: the receiver learns the length it needs */
		recv_finish(e, c, op, -EMSGSIZE, r->len, r->tag);
		rrecv_discard(e, r);
		return;
	}
	if (r->got == r->len) {
		tmp = (struct mr){ .kind = MR_MAPPED, .base = r->buf, .len = r->len };
		res = eng_copy(e, op->lmr, op->loff, &tmp, 0, r->len);
		recv_finish(e, c, op, res, r->len, r->tag);
		rrecv_free(e, r);
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
		rrecv_free(e, r);
		break;
	case REC_MATCHED:
		tmp = (struct mr){ .kind = MR_MAPPED, .base = r->buf, .len = r->len };
		res = eng_copy(e, r->recv->lmr, r->recv->loff, &tmp, 0, r->len);
		recv_finish(e, r->c, r->recv, res, r->len, r->tag);
		r->recv = NULL;
		rrecv_free(e, r);
		break;
	case REC_DISCARD:
		rrecv_free(e, r);
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
			rrecv_free(e, r);
			continue;
		}
		if (r->state != REC_EARLY)
			break;
		c->r.next_seq++;
		op = opq_conn_find_recv(&c->q, r->tag);
		if (op)
			rrecv_match(e, c, r, op);
		else
			um_add(c, r);
	}
}

static void remember_refusal(struct rchan *ch, const struct conn *c, const struct wire_data *d, int err)
{
	struct refusal *f;

	/* without memory the late packets still fail, as -ESTALE */
	if (!ch->refused && !(ch->refused = calloc(REFUSED_RING, sizeof(*ch->refused))))
		return;
	f = &ch->refused[ch->refused_next++ % REFUSED_RING];
	*f = (struct refusal){ .ep = c->ep->id, .wire = c->r.wire_id, .seq = d->roff,
			       .msg_id = d->msg_id, .err = err };
}

/* Message id a was sent before b: ids grow with each message of a channel
 * and wrap (after 2^40 messages), so by the sign of the difference. */
static bool id_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* A send number names one send of the connection: a newer message id
 * with it is that send again (its sender completed an earlier attempt on a
 * refusal for room that came first, and resent it), and is told the same
 * (-EMSGSIZE) rather than -ESTALE. An older one is a late packet of an
 * attempt its sender has settled. */
static int recall_refusal(const struct rchan *ch, const struct conn *c, const struct wire_data *d)
{
	for (uint32_t i = 0; ch->refused && i < REFUSED_RING; i++) {
		const struct refusal *f = &ch->refused[i];

		if (f->err && f->ep == c->ep->id && f->wire == c->r.wire_id && f->seq == d->roff &&
		    !id_before(d->msg_id, f->msg_id))
			return f->err;
	}
	return -ESTALE;
}

/* The first packet of a send we have no record of. Returns the record, or
 * NULL with *err (the packet is refused). */
static struct rrec *rx_send_new(struct engine *e, struct rchan *ch, struct conn *c,
				const struct wire_data *d, int *err)
{
	struct opq_op *op = NULL;
	struct rrec *r;

	if (d->roff < c->r.next_seq) {
		*err = recall_refusal(ch, c, d);   /* a late packet of a settled send */
		return NULL;
	}
	/* the blocking send no longer blocks once it has a record (below)
	 * or is retired: behind next_seq (-EMSGSIZE, its void's turn) */
	if (c->r.blocked_seq < c->r.next_seq)
		c->r.blocked_seq = UINT64_MAX;
	if (d->roff == c->r.next_seq)
		op = opq_conn_find_recv(&c->q, d->rkey);
	/* After a refusal for lack of room, later sends of the connection are
	 * refused too until the refused one got in: else they would fill the
	 * room it waits for and never be able to take their turn before it. */
	if (!op && d->roff > c->r.blocked_seq)
		goto nobuf;
	if (!send_room(e, c, d->roff, op ? 0 : d->msg_len))
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
	r = rec_new(e, c, d, REC_EARLY);
	if (!r)
		goto nobuf;
	/* zeroed: a hostile sender that overlaps its packets leaves holes,
	 * which must not show another message's old bytes */
	r->buf = calloc(1, d->msg_len ? d->msg_len : 1);
	if (!r->buf) {
		rrecv_free(e, r);
		goto nobuf;
	}
	e->st.unexpected_bytes += d->msg_len;
	c->r.ubytes += d->msg_len;
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
		if (id_before(d->msg_id, r->msg_id) || r->state == REC_VOID || d->msg_len != r->len ||
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
	/* an honest sender never overlaps packets of one message; one that
	 * does is refused before it overwrites bytes already in place */
	if (d->payload_len > r->len - r->got)
		return -EBADMSG;
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
		if (id_before(d->msg_id, r->msg_id))
			return 0;
		switch (r->state) {
		case REC_DIRECT:
		case REC_MATCHED:
			recv_finish(e, c, r->recv, -ECANCELED, 0, 0);
			r->recv = NULL;
			rrecv_free(e, r);
			break;
		case REC_EARLY:
			buf_release(e, r);
			r->state = REC_VOID;
			r->msg_id = d->msg_id;
			break;
		case REC_VOID:
			break;
		default:
			rrecv_free(e, r);
			break;
		}
	} else if (d->roff >= c->r.next_seq) {
		if (!send_room(e, c, d->roff, 0)) {
			e->st.rx_refused_nobuf++;
			return -ENOBUFS;
		}
		if (!rec_new(e, c, d, REC_VOID)) {
			e->st.rx_refused_nobuf++;
			return -ENOBUFS;
		}
	}
	/* a send refused for room and then abandoned: later ones need not
	 * wait for room to be kept for it */
	if (d->roff == c->r.blocked_seq)
		c->r.blocked_seq = UINT64_MAX;
	order_advance(e, c);
	return 0;
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
	len = wire_get64(d->payload);
	id = wire_get64(d->payload + 8);
	if (!m || m->client_id != c->ep->client_id) {
		e->st.rx_refused_access++;
		return -EACCES;
	}
	if (!mr_range_ok(m, d->roff, len)) {
		e->st.rx_refused_range++;
		return -ERANGE;
	}
	/* a snapshot larger than the whole budget would never find room */
	if (len > e->max_op_bytes || len > e->rm->max_unexp_bytes)
		return -EMSGSIZE;
	/* our side does not know the asker's yet (its daemon's answer is on
	 * the way), so the response has nowhere to go: asked again later,
	 * as for a lack of room, while a put in the same window goes in */
	if (c->r.rep == UINT32_MAX)
		return -ENOBUFS;
	/* every job counts as a buffered message, zero-length ones too */
	if (!room_for(e, ch->jbytes, ch->njobs, len)) {
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
	*j = (struct rjob){ .c = c, .ch = ch, .buf = j->buf, .len = len, .get_id = id,
			    .rep = c->r.rep, .rwire = c->r.rconn_wire };
	e->st.unexpected_bytes += len;
	e->st.unexpected_msgs++;
	ch->jbytes += len;
	ch->njobs++;
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
	struct opq_op *op = c->r.get_last;
	struct mr tmp = { .kind = MR_MAPPED, .base = (void *)d->payload, .len = d->payload_len };
	int r = 0;

	/* a response comes as a run of packets: the get found for the last
	 * one is checked first, the side's pending ops only on a change */
	if (!op || op->rseq != d->rkey) {
		op = NULL;
		for (struct opq_op *o = c->q.order.head; o; o = o->onext) {
			if (o->state == OPQ_WAITING && o->opcode == UCCL_OP_GET && o->rseq == d->rkey) {
				op = o;
				break;
			}
		}
		c->r.get_last = op;
	}
	if (!op || (op->rflags & RFL_GET_DATA))
		return -ESTALE;
	/* an honest responder answers with the get's length and never
	 * overlaps the packets of a response: the get would wait for ever
	 * (for bytes refused, or counted twice). It fails instead. */
	if (d->msg_len != op->len || d->payload_len > op->len - op->rgot) {
		if (op->res == 0)
			op->res = -EBADMSG;
		op->rgot = op->len;
		r = -EBADMSG;
	} else {
		if (op->lmr && d->payload_len)
			r = eng_copy(e, op->lmr, op->loff + d->msg_off, &tmp, 0, d->payload_len);
		if (r < 0 && op->res == 0)
			op->res = r;
		op->rgot += d->payload_len;
		r = 0;
	}
	if (op->rgot == op->len) {
		op->rflags |= RFL_GET_DATA;
		if (op->rflags & RFL_GET_ACKED)
			remote_op_finish(e, op, 0);
	}
	return r;
}

/* ---- puts counted for the signals behind them ---- */

/* A put of several packets, some of which arrived. */
struct rput {
	struct rput *next;
	uint64_t n, got;
};

static struct rputs *rputs_of(struct engine *e, struct conn *c)
{
	if (!c->r.rputs && (c->r.rputs = calloc(1, sizeof(*c->r.rputs)))) {
		c->r.rputs->done = c->r.put_done;
		e->st.put_records++;
	}
	return c->r.rputs;
}

/* Nothing partial, held or settled out of order: the record is only its
 * count, which the connection keeps (an idle connection holds 8 bytes for
 * its peer's puts, not the ~660 of the record). */
static void rputs_trim(struct engine *e, struct conn *c, struct rputs *p)
{
	if (p->partial || p->nheld)
		return;
	for (uint32_t i = 0; i < PUT_WINDOW / 64; i++)
		if (p->map[i])
			return;
	c->r.put_done = p->done;
	free(p);
	c->r.rputs = NULL;
	e->st.put_records--;
}

void rrecv_puts_free(struct engine *e, struct conn *c)
{
	struct rputs *p = c->r.rputs;

	c->r.put_done = 0;
	if (!p)
		return;
	e->st.put_records--;
	while (p->partial) {
		struct rput *x = p->partial;

		p->partial = x->next;
		free(x);
	}
	free(p);
	c->r.rputs = NULL;
}

static bool put_settled(const struct rputs *p, uint64_t n)
{
	return n < p->done ||
	       (n - p->done < PUT_WINDOW && (p->map[n % PUT_WINDOW / 64] >> (n % 64) & 1));
}

/* Past the window: an honest sender never goes there (PUT_WINDOW). */
static bool put_beyond(const struct rputs *p, uint64_t n)
{
	return n >= p->done && n - p->done >= PUT_WINDOW;
}

/* The held signals whose earlier puts have all settled take effect, and so
 * do the settled puts that carried one (fused) below done: fused counts
 * those. */
static void signals_release(struct engine *e, struct conn *c, struct rputs *p, uint64_t fused)
{
	uint32_t j = 0;
	uint64_t n = fused;

	for (uint32_t k = 0; k < p->nheld; k++) {
		if (p->held[k] <= p->done)
			n++;
		else
			p->held[j++] = p->held[k];
	}
	p->nheld = j;
	if (n)
		eng_sem_raise(e, c->ep, c->id, n);
}

/* Put n settled (all of it written, refused or voided): counted once,
 * however many packets, duplicates or voids say so. sig: it raises the
 * semaphore (WIRE_F_SIGNAL), once it and every put before it settled. */
static void put_settle(struct engine *e, struct conn *c, struct rputs *p, uint64_t n, bool sig)
{
	uint64_t old = p->done, fused = 0;

	/* settled already: a void of a put its refusal settled, a duplicate.
	 * The record goes as on every other path once nothing is left in it
	 * (the void made it anew) */
	if (put_settled(p, n) || put_beyond(p, n)) {
		rputs_trim(e, c, p);          /* p may be gone now */
		return;
	}
	p->map[n % PUT_WINDOW / 64] |= 1ull << (n % 64);
	if (sig) {
		p->sig[n % PUT_WINDOW / 64] |= 1ull << (n % 64);
		if (n != p->done)
			e->st.rx_signals_held++;   /* an earlier put is not in yet */
	}
	for (struct rput **pp = &p->partial, *x; (x = *pp); pp = &x->next) {
		if (x->n == n) {
			*pp = x->next;
			free(x);
			break;
		}
	}
	while (p->map[p->done % PUT_WINDOW / 64] >> (p->done % 64) & 1) {
		uint64_t bit = 1ull << (p->done % 64);

		p->map[p->done % PUT_WINDOW / 64] &= ~bit;
		if (p->sig[p->done % PUT_WINDOW / 64] & bit) {
			p->sig[p->done % PUT_WINDOW / 64] &= ~bit;
			fused++;
		}
		p->done++;
	}
	if (p->done != old && (p->nheld || fused))
		signals_release(e, c, p, fused);
	rputs_trim(e, c, p);              /* p may be gone now */
}

/* The partial record of put n, made on its first packet; NULL: no memory. */
static struct rput *partial_get(struct rputs *p, uint64_t n)
{
	struct rput **pp, *x;

	for (pp = &p->partial; (x = *pp); pp = &x->next) {
		if (x->n != n)
			continue;
		*pp = x->next;         /* to the front: its next packet comes soon */
		break;
	}
	if (!x && !(x = calloc(1, sizeof(*x))))
		return NULL;
	x->n = n;
	x->next = p->partial;
	p->partial = x;
	return x;
}

static int rx_put(struct engine *e, struct conn *c, const struct wire_data *d)
{
	const struct mr *m = mr_table_by_rkey(e->mrs, d->rkey);
	struct mr tmp = { .kind = MR_MAPPED, .base = (void *)d->payload, .len = d->payload_len };
	uint64_t off = d->roff + d->msg_off;
	struct rputs *p = c->r.rputs;
	struct rput *x = NULL;
	/* the common case needs no record: a one-packet put, next in order,
	 * no signal held */
	bool fast = !p && d->payload_len == d->msg_len && d->ord == c->r.put_done;
	bool counted = false;
	int r = 0;

	if (!fast && !(p = rputs_of(e, c))) {
		e->st.rx_refused_nobuf++;
		return -ENOBUFS;       /* the sender voids it */
	}
	if (p && put_beyond(p, d->ord)) {
		rputs_trim(e, c, p);
		return -EBADMSG;
	}
	if (p)
		counted = put_settled(p, d->ord);   /* a late packet of a settled put */
	/* the key must belong to the client that owns this connection */
	if (!m || m->client_id != c->ep->client_id) {
		e->st.rx_refused_access++;
		r = -EACCES;
	/* the whole put must fit, as on one host: one that does not is
	 * refused in every packet, so none of it is written (the wire
	 * format keeps [msg_off, msg_off + payload_len) inside msg_len) */
	} else if (!mr_range_ok(m, d->roff, d->msg_len)) {
		e->st.rx_refused_range++;
		r = -ERANGE;
	} else if (!counted && d->payload_len < d->msg_len && !(x = partial_get(p, d->ord))) {
		e->st.rx_refused_nobuf++;
		r = -ENOBUFS;
	}
	/* a settled put's late packet is not written: its signal may have
	 * taken effect, and a later put may have written the range since */
	if (r == 0 && !counted)
		r = eng_copy(e, m, off, &tmp, 0, d->payload_len);
	if (fast) {
		c->r.put_done++;       /* settled, written or refused */
		if (d->flags & WIRE_F_SIGNAL)
			eng_sem_raise(e, c->ep, c->id, 1);   /* every put before it settled too */
		return r;
	}
	if (counted) {
		rputs_trim(e, c, p);
		return r;
	}
	/* a refused packet settles its put: the put fails at the sender, and
	 * a signal behind it takes effect as it did when the sender sent the
	 * signal only after the put's failure (docs/wire-protocol.md) */
	if (x && r == 0) {
		x->got += d->payload_len;
		if (x->got < d->msg_len)
			return 0;
	}
	put_settle(e, c, p, d->ord, d->flags & WIRE_F_SIGNAL);
	return r;
}

/* The sender gave up on put number ord. */
static int rx_put_void(struct engine *e, struct conn *c, const struct wire_data *d)
{
	struct rputs *p;

	if (d->msg_len)
		return -EBADMSG;
	if (!(p = rputs_of(e, c))) {
		e->st.rx_refused_nobuf++;
		return -ENOBUFS;
	}
	if (put_beyond(p, d->ord)) {
		rputs_trim(e, c, p);
		return -EBADMSG;
	}
	put_settle(e, c, p, d->ord, d->flags & WIRE_F_SIGNAL);
	return 0;
}

/* A signal takes effect once the ord puts before it on the connection have
 * settled; until then it is held (SIG_HOLD_MAX, then -ENOBUFS: the sender
 * sends it again later). */
static int rx_signal(struct engine *e, struct conn *c, const struct wire_data *d)
{
	struct rputs *p = c->r.rputs;

	if (d->msg_len)
		return -EBADMSG;
	if (d->ord <= (p ? p->done : c->r.put_done)) {
		eng_sem_raise(e, c->ep, c->id, 1);
		return 0;
	}
	if (!(p = rputs_of(e, c)) || p->nheld == SIG_HOLD_MAX) {
		e->st.rx_refused_nobuf++;
		return -ENOBUFS;
	}
	if (d->ord - p->done > PUT_WINDOW) {
		rputs_trim(e, c, p);
		return -EBADMSG;
	}
	p->held[p->nheld++] = d->ord;
	e->st.rx_signals_held++;
	return 0;
}

/* tpchan hands over a new DATA packet (right token, good crc). */
int rrecv_deliver(void *arg, const struct wire_data *d)
{
	struct rchan *ch = arg;
	struct engine *e = ch->e;
	struct ep *ep = eng_ep_get(e, d->dst_ep);
	uint32_t id = d->dst_conn & 0xffffu;
	struct conn *c;
	int r;

	if (!ep || ep->broken || id >= ep->max_conns)
		goto noconn;
	c = ep_conn(ep, id);
	if (!c || !c->remote || c->state != CONN_UP || c->r.ch != ch || c->r.wire_id != d->dst_conn)
		goto noconn;
	if ((d->flags & WIRE_F_SIGNAL) && d->opcode != UCCL_OP_PUT && d->opcode != OP_PUT_VOID) {
		e->st.rx_refused_other++;      /* only a put raises the semaphore */
		return -EBADMSG;
	}
	switch (d->opcode) {
	case UCCL_OP_PUT:
		r = rx_put(e, c, d);
		break;
	case UCCL_OP_SIGNAL:
		r = rx_signal(e, c, d);
		break;
	case OP_PUT_VOID:
		r = rx_put_void(e, c, d);
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
