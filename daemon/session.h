/* SPDX-License-Identifier: MIT */
/*
 * session: one client's control connection and everything it owns (memory
 * regions, endpoints, connections). Requests are handled one at a time per
 * session; those that need the engine thread or wait for a peer complete
 * later, and every one of them gets a reply or a timeout error. Closing a
 * session, for any reason, releases all it owns and resets its peers'
 * connections.
 */
#ifndef UCCL_DAEMON_SESSION_H
#define UCCL_DAEMON_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uccl/shm.h>

#include "daemon/memory.h"
#include "proto/ctlio.h"
#include "proto/frame.h"

struct daemon;
struct event;
struct session;

enum conn_state { CONN_FREE = 0, CONN_PENDING, CONN_OPEN, CONN_RESET, CONN_CLOSING };

struct dconn {
	uint8_t state;
	bool remote;                   /* the peer side is on another host (daemon/rconn.c) */
	uint16_t gen;                  /* bumped each time this conn id is used */
	uint32_t peer_ep;              /* UINT32_MAX once the peer is gone */
	uint32_t peer_conn;            /* remote: the peer's wire id of its side */
	uint32_t chan;                 /* remote: the channel (peer host) */
	uint8_t rthr;                  /* remote: the peer's engine thread of its side */
	bool xthr;                     /* same host, the other side on another engine thread,
					* joined over a channel (daemon/xconn.c); wire is ours */
	uint32_t wire;                 /* remote: ours, conn | gen << 16 */
	uint8_t lanes;                 /* remote: lane sides on other threads (daemon/lanes.h) */
};

/* A daemon-side endpoint. */
struct dep {
	uint32_t id;
	struct session *s;
	struct dep *next;              /* in the session's list */
	struct uccl_shm_hdr hdr;       /* private copy of the layout (engine uses it) */
	void *region;
	size_t region_len;
	int memfd;
	int doorbell_fd, notify_fd;    /* our pipe ends: read / write, non-blocking */
	int doorbell_peer, notify_peer;/* the client's ends, closed once handed over */
	uint32_t max_conns;
	uint32_t n_conns;
	struct dconn *conns;
	char name[65];                 /* listen name, "" if none */
	uint32_t *backlog;             /* queued conn ids waiting for accept */
	uint32_t backlog_cap, backlog_head, backlog_n;
	uint32_t backlog_pending;      /* connects whose CONN_ADD is still queued */
	uint8_t thr;                   /* the engine thread that runs it */
	uint64_t serial;               /* unique per daemon run: ids are reused */
	bool added;                    /* the engine has it */
	bool live;                     /* added and not being destroyed */
};

struct smr {
	uint32_t id;
	struct smr *next;
	int kind;                      /* MR_MAPPED / MR_REMOTE_VA */
	void *base;
	uint64_t len;
	uint64_t addr;
	uint64_t rkey;
	bool live;
};

enum park_kind { PARK_NONE = 0, PARK_CONNECT, PARK_ACCEPT };

struct session {
	struct daemon *d;
	struct session *next, *prev;
	struct session *cnext, *cprev; /* closing, until destroyed (d->closing) */
	uint32_t id;
	int fd;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool allowed, admin;
	bool attached, observer, closing, linked;
	char name[65];
	uint64_t attach_ms;
	struct event *ev_read, *ev_closed, *ev_write, *attach_timer;
	struct ctlio_rx rx;
	uint8_t *out;                  /* a reply the socket did not take yet */
	size_t out_len, out_off;
	int out_fds[CTLIO_MAX_FDS];    /* our dups, sent with its first byte */
	int out_nfds;
	int refs;                      /* 1 while open + one per command in flight */

	bool busy;                     /* a request is being handled */
	uint32_t seq;                  /* its seq */
	const char *req_name;
	enum park_kind park;
	struct event *park_timer;
	struct dep *park_ep;
	char park_name[65];

	struct smr *mrs;
	uint32_t n_mrs;
	/* the process at pid, watched from the connection on (clients of
	 * the daemon's uid, who may register MR_REMOTE_VA regions): one pidfd
	 * for all its regions (with one per region, a client could use up the
	 * daemon's descriptors) */
	struct mem_owner owner;
	uint64_t reg_bytes;
	uint32_t next_mr_id;
	struct dep *eps;
	uint32_t n_eps;
};

/* A new control connection (already accepted, non-blocking). */
int session_open(struct daemon *d, int fd);
/* Start closing: logs reason (NULL for a quiet close), releases everything. */
void session_close(struct session *s, const char *reason, bool bad_input);
/* Handle one decoded frame with its fds (takes ownership of the fds). */
void session_handle(struct session *s, UcclCtl__Request *req, int *fds, int nfds);

/* status.c: replies to ucclctl's queries. */
void status_reply(struct session *s, UcclCtl__Request *req);

/* Reply helpers used by session.c and status.c. */
void session_reply(struct session *s, int status, const char *error, UcclCtl__Reply *body,
		   const int *fds, int nfds);
void session_reply_err(struct session *s, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void session_ref(struct session *s);
void session_unref(struct session *s);

/* Internal to the daemon: engine commands tied to a session (they hold a
 * reference), and the request handlers of sess_mem.c, sess_ep.c and
 * sess_conn.c. */
struct engcmd;
enum engcmd_type;
struct engcmd *session_cmd_new(struct session *s, enum engcmd_type type, void (*done)(struct engcmd *));
void session_cmd_finish(struct engcmd *c);

void sess_mem_reg(struct session *s, UcclCtl__MemRegReq *q, int *fds, int nfds);
void sess_mem_dereg(struct session *s, UcclCtl__MemDeregReq *q);
void sess_mem_release_done(struct engcmd *c);

struct dep *sess_ep_find(struct session *s, uint32_t id);
void sess_ep_create(struct session *s, UcclCtl__EpCreateReq *q);
void sess_ep_destroy(struct session *s, UcclCtl__EpDestroyReq *q);
void sess_ep_release_done(struct engcmd *c);
/* The other sides of ep's connections become RESET and forget ep's id. */
void sess_ep_reset_peers(struct daemon *d, struct dep *ep);

void sess_conn_listen(struct session *s, UcclCtl__ListenReq *q);
void sess_conn_connect(struct session *s, UcclCtl__ConnectReq *q);
void sess_conn_accept(struct session *s, UcclCtl__AcceptReq *q);
void sess_conn_close(struct session *s, UcclCtl__CloseReq *q);
/* A free conn id of ep (-ENOSPC), and a queued connection for its parked accept. */
int sess_conn_alloc(struct dep *ep, uint32_t *id);
void sess_conn_try_accept(struct dep *l);

/* The engine thread of ep. */
#define EP_THR(d, ep) ((d)->thr[(ep)->thr])

#endif
