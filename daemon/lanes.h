/* SPDX-License-Identifier: MIT */
/*
 * lanes: the daemon's half of engine/lanes.c. A connection to a peer that
 * also runs lanes (conf `lanes`, announced in the peering hello) gets
 * n = min(both lanes, both engine_threads - 1) lanes: lane k of a side
 * whose endpoint runs on our thread t is a side with the same endpoint,
 * connection and wire ids on thread (t + k) % engine_threads (a shadow
 * endpoint there), bound to the sub-channel towards the peer's thread
 * (rt + k) % its threads, where rt runs the peer's side. Both daemons
 * compute the same n and threads from what they know, so nothing more is
 * exchanged: each binds its lanes before its side can be used (the
 * accepting side before it answers, the connecting side before it asks),
 * so a part never reaches a lane that is not there.
 */
#ifndef UCCL_DAEMON_LANES_H
#define UCCL_DAEMON_LANES_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct dep;
struct session;

/* Lanes of a connection to a peer with rlanes lanes and rthreads threads. */
uint32_t lanes_count(const struct daemon *d, uint32_t rlanes, uint32_t rthreads);

typedef void (*lanes_done_fn)(void *arg, int err);

/* Bind lane sides 1..n of ep's conn (our wire id `wire`) to the
 * sub-channels of peer slot `slot` whose side runs on its thread rthr of
 * rthreads (shadow endpoints made where missing); with rep !=
 * UINT32_MAX also name the peer's side (rep, rwire) and then tell the
 * owner side its n lanes. done(arg, first error) runs once every command
 * finished. 0, or -ENOMEM with nothing submitted (done not called). */
int lanes_bind(struct session *s, struct dep *ep, uint32_t conn, uint32_t n, uint32_t slot,
	       uint32_t rthr, uint32_t rthreads, uint32_t wire, uint32_t rep, uint32_t rwire,
	       lanes_done_fn done, void *arg);
/* Lanes bound without the peer's side: name it (rep, rwire), then tell
 * the owner side n. As lanes_bind. */
int lanes_connect(struct session *s, struct dep *ep, uint32_t conn, uint32_t n, uint32_t rep,
		  uint32_t rwire, lanes_done_fn done, void *arg);
/* The engines forget conn's n lanes (queued behind earlier commands, so a
 * later use of the id comes after). */
void lanes_unbind(struct daemon *d, const struct dep *ep, uint32_t conn, uint32_t n);
/* The peer closed: conn's lanes are reset like its own side. */
void lanes_reset(struct daemon *d, const struct dep *ep, uint32_t conn, uint32_t n);
/* ep went (its own thread removed it; its id is about to be released):
 * its shadow endpoints on every other thread go too. */
void lanes_ep_gone(struct daemon *d, const struct dep *ep);

#endif
