/* SPDX-License-Identifier: MIT */
/*
 * opq: the pending-operation pool of an endpoint and the per-connection
 * queues that order those operations (completion reorder list, tag match
 * queues). Intrusive doubly linked lists over pool entries: no allocation
 * after the pool is made, O(1) removal from the middle when a receive deep in
 * a queue is matched or canceled. The tag index (opq.h) keeps a second FIFO
 * per (side, kind, tag) through the same ops, found by open hashing with
 * chains of bucket numbers.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <uccl/shm.h>

#include "engine/opq.h"

struct opq_pool {
	struct opq_op *ops;
	struct opq_op *free;           /* singly linked through mnext */
	uint32_t size;
	uint32_t used;
};

struct opq_pool *opq_pool_new(uint32_t size)
{
	struct opq_pool *p;

	if (size == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ops = calloc(size, sizeof(*p->ops));
	if (!p->ops) {
		free(p);
		return NULL;
	}
	p->size = size;
	for (uint32_t i = size; i-- > 0;) {
		p->ops[i].mnext = p->free;
		p->free = &p->ops[i];
	}
	return p;
}

struct opq_pool *opq_pool_free(struct opq_pool *p)
{
	if (!p)
		return NULL;
	free(p->ops);
	free(p);
	return NULL;
}

struct opq_op *opq_pool_get(struct opq_pool *p)
{
	struct opq_op *op = p->free;

	if (!op)
		return NULL;
	p->free = op->mnext;
	p->used++;
	return op;
}

void opq_pool_put(struct opq_pool *p, struct opq_op *op)
{
	op->state = OPQ_FREE;
	op->lmr = NULL;
	op->onext = op->oprev = op->mprev = NULL;
	op->mnext = p->free;
	p->free = op;
	p->used--;
}

uint32_t opq_pool_used(const struct opq_pool *p)
{
	return p->used;
}

uint32_t opq_pool_size(const struct opq_pool *p)
{
	return p->size;
}

struct opq_op *opq_pool_at(struct opq_pool *p, uint32_t i)
{
	return &p->ops[i];
}

/* ---- completion reorder list ---- */

static void creorder_push(struct opq_creorder *q, struct opq_op *op, enum opq_state state)
{
	op->state = (uint8_t)state;
	op->onext = NULL;
	op->oprev = q->tail;
	if (q->tail)
		q->tail->onext = op;
	else
		q->head = op;
	q->tail = op;
	q->count++;
	if (state == OPQ_STALLED && !q->stall)
		q->stall = op;
	else if (state == OPQ_WAITING)
		q->nwaiting++;
}

static void creorder_del(struct opq_creorder *q, struct opq_op *op)
{
	if (op->oprev)
		op->oprev->onext = op->onext;
	else
		q->head = op->onext;
	if (op->onext)
		op->onext->oprev = op->oprev;
	else
		q->tail = op->oprev;
	if (q->stall == op)
		q->stall = op->onext;
	if (op->state == OPQ_WAITING)
		q->nwaiting--;
	op->onext = op->oprev = NULL;
	q->count--;
}

/* ---- tag index ---- */

#define TB_NONE UINT32_MAX

enum { K_SEND = 0, K_RECV = 1 };

struct opq_tagb {
	const struct opq_conn *qc;      /* NULL: free */
	uint64_t tag;
	struct opq_op *head, *tail;     /* through tnext / tprev */
	uint32_t next;                  /* hash chain, or free list */
	uint8_t kind;
};

struct opq_tags {
	struct opq_tagb *b;             /* cap buckets, NULL until the first reserve */
	uint32_t cap, free;
	uint32_t *idx;                  /* mask + 1 chain heads */
	uint32_t mask;
	bool broken;                    /* ran out of buckets: every side scans */
	uint64_t seq;                   /* join order, endpoint-wide */
};

struct opq_tags *opq_tags_new(void)
{
	struct opq_tags *t = calloc(1, sizeof(*t));

	if (t)
		t->free = TB_NONE;
	return t;
}

struct opq_tags *opq_tags_free(struct opq_tags *t)
{
	if (t) {
		free(t->b);
		free(t->idx);
	}
	free(t);
	return NULL;
}

bool opq_tags_broken(const struct opq_tags *t)
{
	return t->broken;
}

size_t opq_tags_bytes(const struct opq_tags *t)
{
	return sizeof(*t) + t->cap * sizeof(t->b[0]) +
	       (t->idx ? (t->mask + 1) * sizeof(t->idx[0]) : 0);
}

static uint32_t tag_hash(const struct opq_tags *t, const struct opq_conn *qc, uint8_t kind,
			 uint64_t tag)
{
	uint64_t x = (uint64_t)(uintptr_t)qc ^ (tag * 0x9e3779b97f4a7c15ull) ^ kind;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & t->mask;
}

int opq_tags_reserve(struct opq_tags *t, uint32_t n)
{
	uint32_t cap, nidx = 16, *idx;
	struct opq_tagb *b;

	if (n <= t->cap)
		return 0;
	cap = t->cap * 2 > n ? t->cap * 2 : n;
	while (nidx < 2 * cap)
		nidx *= 2;
	idx = malloc(nidx * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	b = realloc(t->b, cap * sizeof(*b));
	if (!b) {
		free(idx);
		return -ENOMEM;
	}
	/* new buckets onto the free list; chains rebuilt for the new size */
	for (uint32_t i = cap; i-- > t->cap;) {
		b[i] = (struct opq_tagb){ .next = t->free };
		t->free = i;
	}
	for (uint32_t i = 0; i < nidx; i++)
		idx[i] = TB_NONE;
	free(t->idx);
	t->b = b;
	t->idx = idx;
	t->mask = nidx - 1;
	for (uint32_t i = 0; i < t->cap; i++) {
		uint32_t h;

		if (!b[i].qc)
			continue;
		h = tag_hash(t, b[i].qc, b[i].kind, b[i].tag);
		b[i].next = idx[h];
		idx[h] = i;
	}
	t->cap = cap;
	return 0;
}

/* The bucket of (qc, kind, tag) in chain h (its tag_hash), or NULL. */
static struct opq_tagb *tag_find_in(const struct opq_tags *t, uint32_t h,
				    const struct opq_conn *qc, uint8_t kind, uint64_t tag)
{
	for (uint32_t i = t->idx[h]; i != TB_NONE; i = t->b[i].next) {
		struct opq_tagb *x = &t->b[i];

		if (x->qc == qc && x->kind == kind && x->tag == tag)
			return x;
	}
	return NULL;
}

static struct opq_tagb *tag_find(const struct opq_tags *t, const struct opq_conn *qc,
				 uint8_t kind, uint64_t tag)
{
	return t->idx ? tag_find_in(t, tag_hash(t, qc, kind, tag), qc, kind, tag) : NULL;
}

static void tag_join(struct opq_tags *t, const struct opq_conn *qc, uint8_t kind,
		     struct opq_op *op)
{
	struct opq_tagb *x;
	uint32_t h;

	op->mseq = t->seq++;
	if (t->broken)
		return;
	if (!t->idx) {
		t->broken = true;      /* the reserve was skipped: scan from now on */
		return;
	}
	h = tag_hash(t, qc, kind, op->key);
	x = tag_find_in(t, h, qc, kind, op->key);
	if (!x) {
		uint32_t i = t->free;

		if (i == TB_NONE || i >= t->cap) {
			t->broken = true;      /* likewise */
			return;
		}
		x = &t->b[i];
		t->free = x->next;
		*x = (struct opq_tagb){ .qc = qc, .tag = op->key, .kind = kind };
		x->next = t->idx[h];
		t->idx[h] = i;
	}
	op->tb = (uint32_t)(x - t->b);
	op->tnext = NULL;
	op->tprev = x->tail;
	if (x->tail)
		x->tail->tnext = op;
	else
		x->head = op;
	x->tail = op;
}

static void tag_leave(struct opq_tags *t, struct opq_op *op)
{
	struct opq_tagb *x;

	if (t->broken)
		return;
	x = &t->b[op->tb];
	if (op->tprev)
		op->tprev->tnext = op->tnext;
	else
		x->head = op->tnext;
	if (op->tnext)
		op->tnext->tprev = op->tprev;
	else
		x->tail = op->tprev;
	op->tnext = op->tprev = NULL;
	if (!x->head) {
		/* empty: off its chain, onto the free list */
		uint32_t i = op->tb, *pp = &t->idx[tag_hash(t, x->qc, x->kind, x->tag)];

		while (*pp != i)
			pp = &t->b[*pp].next;
		*pp = x->next;
		x->qc = NULL;
		x->next = t->free;
		t->free = i;
	}
}

static struct opq_tags *tags_of(const struct opq_conn *qc)
{
	return qc->tags ? *qc->tags : NULL;
}

static bool tags_on(const struct opq_conn *qc)
{
	return tags_of(qc) && !tags_of(qc)->broken;
}

/* ---- match queues ---- */

static void mq_push(struct opq_conn *qc, struct opq_mq *q, struct opq_op *op)
{
	if (!q)
		return;
	if (tags_of(qc))
		tag_join(tags_of(qc), qc, q == &qc->recvs ? K_RECV : K_SEND, op);
	op->in_mq = 1;
	op->mnext = NULL;
	op->mprev = q->tail;
	if (q->tail)
		q->tail->mnext = op;
	else
		q->head = op;
	q->tail = op;
}

static void mq_del(struct opq_conn *qc, struct opq_mq *q, struct opq_op *op)
{
	if (!q || !op->in_mq)
		return;
	if (tags_of(qc))
		tag_leave(tags_of(qc), op);
	op->in_mq = 0;
	if (op->mprev)
		op->mprev->mnext = op->mnext;
	else
		q->head = op->mnext;
	if (op->mnext)
		op->mnext->mprev = op->mprev;
	else
		q->tail = op->mprev;
	op->mnext = op->mprev = NULL;
}

/* Only sends and receives are matched; a waiting remote put or signal is on
 * no match queue. */
static struct opq_mq *mq_of(struct opq_conn *qc, const struct opq_op *op)
{
	if (op->opcode == UCCL_OP_SEND)
		return &qc->sends;
	return op->opcode == UCCL_OP_RECV ? &qc->recvs : NULL;
}

void opq_conn_unmatch(struct opq_conn *qc, struct opq_op *op)
{
	mq_del(qc, mq_of(qc, op), op);
}

/* ---- connection side ---- */

void opq_conn_init(struct opq_conn *qc, struct opq_tags *const *tags)
{
	qc->order = (struct opq_creorder){ 0 };
	qc->sends = qc->recvs = (struct opq_mq){ 0 };
	qc->tags = tags;
}

bool opq_op_held(const struct opq_op *op)
{
	/* FLUSH is defined as "after everything before it", i.e. strict */
	return (op->flags & UCCL_SQE_F_STRICT) || op->opcode == UCCL_OP_FLUSH;
}

bool opq_conn_can_start(const struct opq_conn *qc, uint8_t flags)
{
	/* Behind a stalled op everything waits, so that ops start in issue
	 * order (a SIGNAL must not overtake a fenced PUT). */
	if (qc->order.stall)
		return false;
	return !(flags & UCCL_SQE_F_FENCE) || qc->order.nwaiting == 0;
}

bool opq_conn_can_post_new(const struct opq_conn *qc, const struct opq_op *op)
{
	return !opq_op_held(op) || qc->order.head == NULL;
}

void opq_conn_add(struct opq_conn *qc, struct opq_op *op, enum opq_state state)
{
	creorder_push(&qc->order, op, state);
	if (state == OPQ_WAITING)
		mq_push(qc, mq_of(qc, op), op);
}

/* done: settle as DONE, leaving the list at once unless it must keep its turn */
static bool settle_done(struct opq_conn *qc, struct opq_op *op)
{
	op->state = OPQ_DONE;
	op->lmr = NULL;
	if (opq_op_held(op) && qc->order.head != op)
		return false;
	creorder_del(&qc->order, op);
	return true;
}

bool opq_conn_started(struct opq_conn *qc, struct opq_op *op, bool done)
{
	if (done)
		return settle_done(qc, op);
	op->state = OPQ_WAITING;
	qc->order.nwaiting++;
	mq_push(qc, mq_of(qc, op), op);
	return false;
}

bool opq_conn_finished(struct opq_conn *qc, struct opq_op *op)
{
	mq_del(qc, mq_of(qc, op), op);
	qc->order.nwaiting--;
	return settle_done(qc, op);
}

struct opq_op *opq_conn_pop_done(struct opq_conn *qc)
{
	struct opq_op *op = qc->order.head;

	if (!op || op->state != OPQ_DONE)
		return NULL;
	creorder_del(&qc->order, op);
	return op;
}

struct opq_op *opq_conn_next_start(struct opq_conn *qc)
{
	struct opq_op *op = qc->order.stall;

	if (!op)
		return NULL;
	if ((op->flags & UCCL_SQE_F_FENCE) && qc->order.nwaiting > 0)
		return NULL;
	qc->order.stall = op->onext;
	return op;
}

struct opq_op *opq_conn_take(struct opq_conn *qc)
{
	struct opq_op *op = qc->order.head;

	if (!op)
		return NULL;
	if (op->state == OPQ_WAITING)
		mq_del(qc, mq_of(qc, op), op);
	creorder_del(&qc->order, op);
	return op;
}

struct opq_op *opq_conn_find_recv(const struct opq_conn *qc, uint64_t tag)
{
	struct opq_tagb *x, *any;
	struct opq_op *a, *b;

	if (!tags_on(qc)) {
		for (struct opq_op *op = qc->recvs.head; op; op = op->mnext)
			if (op->key == tag || op->key == UCCL_TAG_ANY)
				return op;
		return NULL;
	}
	/* the oldest of its tag's first and the first that takes any tag */
	x = tag_find(tags_of(qc), qc, K_RECV, tag);
	any = tag == UCCL_TAG_ANY ? NULL : tag_find(tags_of(qc), qc, K_RECV, UCCL_TAG_ANY);
	a = x ? x->head : NULL;
	b = any ? any->head : NULL;
	if (!a || (b && b->mseq < a->mseq))
		return b;
	return a;
}

struct opq_op *opq_conn_find_send(const struct opq_conn *qc, uint64_t tag)
{
	struct opq_tagb *x;

	if (tag == UCCL_TAG_ANY)
		return qc->sends.head;         /* the oldest of any tag */
	if (!tags_on(qc)) {
		for (struct opq_op *op = qc->sends.head; op; op = op->mnext)
			if (op->key == tag)
				return op;
		return NULL;
	}
	x = tag_find(tags_of(qc), qc, K_SEND, tag);
	return x ? x->head : NULL;
}
