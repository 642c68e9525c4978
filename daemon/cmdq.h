/* SPDX-License-Identifier: MIT */
/*
 * cmdq: a bounded lock-free single-producer / single-consumer queue of
 * pointers, with an eventfd the producer writes so that a sleeping consumer
 * wakes. The main thread and an engine thread talk through two of these (one
 * each way) and never share a lock.
 */
#ifndef UCCL_DAEMON_CMDQ_H
#define UCCL_DAEMON_CMDQ_H

#include <stdbool.h>
#include <stdint.h>

struct cmdq;

struct cmdq *cmdq_new(uint32_t capacity);      /* capacity rounded up to a power of two */
struct cmdq *cmdq_free(struct cmdq *q);        /* accepts NULL */
/* -EAGAIN when full. Writes the eventfd. */
int cmdq_push(struct cmdq *q, void *item);
/* The producer's view: a push now would fail (the consumer may make room
 * at any time; the producer alone can take it away). */
bool cmdq_full(struct cmdq *q);
void *cmdq_pop(struct cmdq *q);               /* NULL when empty */
bool cmdq_empty(struct cmdq *q);
int cmdq_fd(const struct cmdq *q);             /* readable after a push */
void cmdq_clear_fd(struct cmdq *q);            /* consume the eventfd count */

#endif
