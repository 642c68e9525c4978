/* SPDX-License-Identifier: MIT */
/*
 * opq: the pending-operation pool of an endpoint and the per-connection
 * queues that order those operations (completion reorder list, tag match
 * queues). Intrusive doubly linked lists over pool entries: no allocation
 * after the pool is made, O(1) removal from the middle when a receive deep in
 * a queue is matched or canceled.
 */
#include "config.h"

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

/* ---- match queues ---- */

static void mq_push(struct opq_mq *q, struct opq_op *op)
{
	if (!q)
		return;
	op->in_mq = 1;
	op->mnext = NULL;
	op->mprev = q->tail;
	if (q->tail)
		q->tail->mnext = op;
	else
		q->head = op;
	q->tail = op;
}

static void mq_del(struct opq_mq *q, struct opq_op *op)
{
	if (!q || !op->in_mq)
		return;
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
	mq_del(mq_of(qc, op), op);
}

/* ---- connection side ---- */

void opq_conn_init(struct opq_conn *qc)
{
	qc->order = (struct opq_creorder){ 0 };
	qc->sends = qc->recvs = (struct opq_mq){ 0 };
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
		mq_push(mq_of(qc, op), op);
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
	mq_push(mq_of(qc, op), op);
	return false;
}

bool opq_conn_finished(struct opq_conn *qc, struct opq_op *op)
{
	mq_del(mq_of(qc, op), op);
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
		mq_del(mq_of(qc, op), op);
	creorder_del(&qc->order, op);
	return op;
}

struct opq_op *opq_conn_find_recv(const struct opq_conn *qc, uint64_t tag)
{
	for (struct opq_op *op = qc->recvs.head; op; op = op->mnext)
		if (op->key == tag || op->key == UCCL_TAG_ANY)
			return op;
	return NULL;
}

struct opq_op *opq_conn_find_send(const struct opq_conn *qc, uint64_t tag)
{
	for (struct opq_op *op = qc->sends.head; op; op = op->mnext)
		if (tag == UCCL_TAG_ANY || op->key == tag)
			return op;
	return NULL;
}
