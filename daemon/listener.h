/* SPDX-License-Identifier: MIT */
/*
 * listener: a listening socket's accept loop on libevent, for the control
 * socket and peer_listen: at most 64 connections a wakeup, and a pause,
 * not a spin, when descriptors or memory run out (the backlog stays
 * readable), logged once a streak.
 */
#ifndef UCCL_DAEMON_LISTENER_H
#define UCCL_DAEMON_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct event;

/* A connection accepted: fd (non-blocking, close-on-exec) is the callee's. */
typedef void (*listener_cb)(void *arg, int fd, const struct sockaddr_storage *ss);

struct listener {
	struct event *ev, *resume_ev;
	const char *what;              /* in log lines: "control socket", "peer_listen" */
	uint32_t pause_ms;
	bool paused;
	listener_cb cb;
	void *arg;
};

/* Listen for connections on fd (the caller's: it closes it after
 * listener_close). 0 or -ENOMEM. */
int listener_open(struct listener *l, struct event_base *base, int fd, const char *what,
		  uint32_t pause_ms, listener_cb cb, void *arg);
void listener_close(struct listener *l);   /* accepts a zeroed or closed one */

#endif
