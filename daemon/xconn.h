/* SPDX-License-Identifier: MIT */
/*
 * xconn: same-host connections between endpoints on different engine
 * threads. One engine cannot join both sides in memory, so each thread keeps
 * a channel (the same tpchan machinery as towards a peer host) to every
 * other thread's data plane over data_address, and the two sides are bound
 * to those channels like the two sides of a remote connection.
 */
#ifndef UCCL_DAEMON_XCONN_H
#define UCCL_DAEMON_XCONN_H

#include <stdint.h>

struct daemon;
struct dep;
struct session;

/* After the engine threads started with their data planes: a channel from
 * every thread to every other. 0, or a negative errno (then same-host
 * connections between threads are refused). */
int xconn_start(struct daemon *d);

/* Join ep's conn ca (s's endpoint, connecting) with listener l's conn cb on
 * another thread; both dconns are set up PENDING and l->backlog_pending
 * counts this one. Replies to s later, as a same-thread connect does. */
void xconn_join(struct session *s, struct dep *ep, uint32_t ca, struct dep *l, uint32_t cb);

/* ep's side of conn closes or goes with ep: the other side, on its
 * thread, is reset a little later (operations it completed still land). */
void xconn_side_closed(struct daemon *d, struct dep *ep, uint32_t conn);

/* Thread i's channel to thread k gave up (reported with tag, the token it
 * was made with): both are made again at once, unless they were already
 * (another tag), so that the next connect between them works. */
void xconn_chan_gave_up(struct daemon *d, uint32_t i, uint32_t k, uint64_t tag);

#endif
