/* SPDX-License-Identifier: MIT */
/*
 * cmdq: SPSC pointer queue between the main thread and an engine thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/cmdq.h"

struct cmdq {
	uint32_t head __attribute__((aligned(64)));   /* consumer */
	uint32_t tail __attribute__((aligned(64)));   /* producer */
	uint32_t mask;
	int efd;
	void **slots;
};

struct cmdq *cmdq_new(uint32_t capacity)
{
	struct cmdq *q;
	uint32_t n = 2;

	while (n < capacity && n < (1u << 24))
		n <<= 1;
	if (posix_memalign((void **)&q, 64, sizeof(*q)))
		return NULL;
	q->head = q->tail = 0;
	q->mask = n - 1;
	q->slots = calloc(n, sizeof(void *));
	if (!q->slots)
		goto out_q;
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0)
		goto out_slots;
	return q;

out_slots:
	free(q->slots);
out_q:
	free(q);
	return NULL;
}

struct cmdq *cmdq_free(struct cmdq *q)
{
	if (!q)
		return NULL;
	close(q->efd);
	free(q->slots);
	free(q);
	return NULL;
}

int cmdq_push(struct cmdq *q, void *item)
{
	uint32_t t = q->tail;
	uint32_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	if (t - h > q->mask)
		return -EAGAIN;
	q->slots[t & q->mask] = item;
	__atomic_store_n(&q->tail, t + 1, __ATOMIC_RELEASE);
	if (write(q->efd, &one, sizeof(one)) < 0) {
		/* counter saturated: the consumer is awake anyway */
	}
	return 0;
}

bool cmdq_full(struct cmdq *q)
{
	return q->tail - __atomic_load_n(&q->head, __ATOMIC_ACQUIRE) > q->mask;
}

void *cmdq_pop(struct cmdq *q)
{
	uint32_t h = q->head;
	void *item;

	if (h == __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE))
		return NULL;
	item = q->slots[h & q->mask];
	__atomic_store_n(&q->head, h + 1, __ATOMIC_RELEASE);
	return item;
}

bool cmdq_empty(struct cmdq *q)
{
	return q->head == __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
}

int cmdq_fd(const struct cmdq *q)
{
	return q->efd;
}

void cmdq_clear_fd(struct cmdq *q)
{
	uint64_t v;

	if (read(q->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing to clear */
	}
}
