/* SPDX-License-Identifier: MIT */
/*
 * peer: the daemons of other hosts. Listens on peer_listen (TCP), keeps one
 * control connection to each configured peer (the daemon whose host_name
 * sorts first dials, the other accepts), exchanges hellos (protocol version,
 * host name, data-plane address/port/paths/MTU, a fresh token per
 * connection), keeps it alive with keepalives, declares a silent peer down
 * after peer_timeout_ms, redials with backoff, answers endpoint lookups and
 * carries the requests that connect endpoints across hosts.
 * The protocol is docs/peer-protocol.md; every byte a peer sends is decoded
 * and checked by proto/peerframe.c. Main thread only.
 */
#ifndef UCCL_DAEMON_PEER_H
#define UCCL_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "daemon/conf.h"

struct event_base;
struct peermgr;

#define PEERMGR_MAX           (2 * CONF_MAX_PEERS) /* peers, plus dynamic_peers at most */
#define PEER_MAX_CONNS        PEERMGR_MAX    /* identified connections: one per peer */
#define PEER_MAX_UNIDENTIFIED 8u             /* accepted, no valid hello yet */
#define PEER_HELLO_DEADLINE_MS 5000u         /* from accept or dial to a complete hello */
#define PEER_KEEPALIVE_MS     1000u
#define PEER_MAX_LOOKUPS      256u           /* in flight per peer, asked by us */
#define PEER_MAX_CONNECTS     256u           /* unanswered per peer, each way */

enum peer_state { PEER_CONNECTING = 0, PEER_UP, PEER_DOWN };

/* Answers "which endpoint listens under name on this daemon": 0 with
 * *ep_id and its engine *thread, -ENOENT if none does, -EINVAL for a name
 * that cannot exist. */
typedef int (*peer_resolve_fn)(void *arg, const char *name, uint32_t *ep_id, uint32_t *thread);

/* Start peering as c says (c->peer_listen must be set): resolve host_name
 * and data_address, listen, dial the peers this daemon dials. Logs why it
 * failed; returns 0 or a negative errno. c is copied. */
int peermgr_start(struct event_base *base, const struct conf *c, peer_resolve_fn resolve,
		  void *resolve_arg, struct peermgr **out);
/* Close every connection and the listener; lookups and connects in flight
 * complete with -ECANCELED, and connects peers asked that were not answered
 * yet are freed. Accepts NULL, returns NULL. */
struct peermgr *peermgr_free(struct peermgr *pm);
/* Apply reloadable options: peers (added ones are dialed or awaited,
 * removed ones closed, re-addressed ones reconnected), peer_timeout_ms and
 * the key: key is c->peer_key_file's content, read by the caller (so that a
 * file that cannot be read refuses the reload before anything changed, and
 * is read once), or NULL when c names none. Logs each change. */
struct peerauth_key;
void peermgr_reload(struct peermgr *pm, const struct conf *c, const struct peerauth_key *key);

/* ---- what ucclctl peers shows ---- */

struct peer_status {
	char name[CONF_PEER_NAME_MAX + 1];
	char address[64];                  /* configured address:port */
	enum peer_state state;
	uint64_t since_ms;                 /* time in this state */
	bool dials;
	bool has_rtt;
	uint32_t rtt_us;                   /* last keepalive answered */
	bool tx_token_set, rx_token_set;
	bool announced;                    /* a hello arrived once: the fields below are set */
	char host_name[CONF_PEER_NAME_MAX + 1];
	char data_address[48];
	uint32_t data_port, data_paths, mtu;
	uint64_t max_inflight_bytes;       /* 0: not announced */
	uint32_t reconnects;
	bool dynamic;                      /* added at run time (dynamic_peers) */
	bool authenticated;                /* up, and proved peer_key_file's key */
	char last_error[160];
};

const char *peermgr_host_name(const struct peermgr *pm);
/* Whether new peer connections must prove peer_key_file's key. */
bool peermgr_has_key(const struct peermgr *pm);
/* The base data port of each of our n engine threads (n <= 16), announced
 * in every hello from now on; [0] must be the data_port peermgr_start got. */
void peermgr_set_thread_ports(struct peermgr *pm, const uint32_t *ports, uint32_t n);
/* Our lanes setting, announced in every hello from now on (before the loop
 * runs, like the thread ports). */
void peermgr_set_lanes(struct peermgr *pm, uint32_t lanes);
/* peer_listen as text, e.g. "10.0.0.1:7470". */
void peermgr_listen_text(const struct peermgr *pm, char *buf, size_t len);
size_t peermgr_count(const struct peermgr *pm);
/* Fill up to max entries, in configuration order; returns how many. */
/* The peer a client's connect to ADDRESS:PORT/name goes through: a
 * configured peer we dial at that address and port, else a dynamic one
 * (named "ADDRESS:PORT"), added now and dialed if dynamic_peers allows.
 * Its name goes to name. -EINVAL: text is not a numeric address:port;
 * -EEXIST: it is this daemon; -EPERM: dynamic_peers = 0; -EUSERS: that
 * many are there already; -ENAMETOOLONG: the address is too long to name
 * a peer (CONF_PEER_NAME_MAX). */
int peermgr_dynamic(struct peermgr *pm, const char *text, char *name, size_t len);
/* Why the last attempt to reach peer name failed ("" if none or unknown). */
void peermgr_last_error(const struct peermgr *pm, const char *name, char *buf, size_t len);
size_t peermgr_status(const struct peermgr *pm, struct peer_status *out, size_t max);

/* ---- for the data path (engine integration) ---- */

/* What the data path needs to talk to an up peer. */
struct peer_info {
	char name[CONF_PEER_NAME_MAX + 1];
	struct sockaddr_storage data_addr; /* announced address, port = data_port (0: not set) */
	socklen_t data_addrlen;
	uint32_t data_paths;               /* UDP ports data_port .. data_port + paths - 1 */
	uint32_t mtu;
	uint64_t tx_token;                 /* put it in every data packet sent to this peer */
	uint64_t rx_token;                 /* every data packet from this peer must carry it */
	uint64_t generation;               /* changes each time the peer comes up (new tokens) */
	uint32_t n_threads;                /* its engine threads, 1..PEER_THREADS_MAX */
	bool knows_threads;                /* it announced them: it reads thread fields */
	uint32_t thread_port[16];          /* each one's base port; [0] is data_addr's */
	uint32_t lanes;                    /* its lanes setting (0: none, or it predates them) */
	uint64_t max_inflight_bytes;       /* its setting: sizes its receive window (0: predates it) */
	bool data_crc;                     /* it wants crc32c on data packets (data_crc) */
};

/* 0 with *out, -ENOENT for a name not in peers, -ENOTCONN if not up. */
int peer_get(const struct peermgr *pm, const char *name, struct peer_info *out);

/* Called after every change: up (new tokens, new generation) or down. The
 * callback may call peer_get, peer_lookup and the like, not
 * peermgr_free/_reload. */
typedef void (*peer_event_fn)(void *arg, const char *name, bool up, uint64_t generation);
void peermgr_set_notify(struct peermgr *pm, peer_event_fn fn, void *arg);

/* Ask peer's daemon whether an endpoint listens under name there. Returns
 * 0 and later calls cb exactly once, from the event loop, never from inside
 * peer_lookup: status 0 with the endpoint id, -ENOENT (nothing listens),
 * -ETIMEDOUT (no answer in timeout_ms), -ENOTCONN (the connection went
 * down first, or a reload removed the peer) or -ECANCELED (daemon
 * stopping). Or fails at
 * once: -ESRCH (no such peer), -ENOTCONN (not up), -EINVAL (bad name or
 * timeout 0), -EBUSY (PEER_MAX_LOOKUPS in flight), -ENOMEM; cb is then not
 * called. *handle (may be NULL) names the lookup for peer_lookup_cancel. */
typedef void (*peer_lookup_cb)(void *arg, int status, uint32_t ep_id, uint32_t thread);
int peer_lookup(struct peermgr *pm, const char *peer, const char *name, uint32_t timeout_ms,
		peer_lookup_cb cb, void *arg, uint64_t *handle);
/* Forget a lookup in flight: its cb is not called. Unknown handles are ignored. */
void peer_lookup_cancel(struct peermgr *pm, uint64_t handle);

/* ---- connections across hosts ---- */

/* Ask peer's daemon to connect (src_ep, src_conn) of this daemon to the
 * endpoint listening under name there. Returns 0 and later calls cb exactly
 * once, from the event loop, never from inside peer_connect: status 0 with
 * (ep_id, conn), the remote side of the new connection; the remote's
 * negative errno (-ENOENT nothing listens, -ECONNREFUSED no room, -EBUSY,
 * -EOPNOTSUPP, ...); -ETIMEDOUT (no answer in timeout_ms), -ENOTCONN (the
 * connection went down first, or a reload removed the peer) or -ECANCELED
 * (daemon stopping). Or fails at once: -ESRCH (no such peer), -ENOTCONN (not up),
 * -EINVAL (bad name or timeout 0), -EBUSY (PEER_MAX_CONNECTS unanswered),
 * -ENOMEM; cb is then not called. *handle (may be NULL) names the request
 * for peer_connect_cancel. A request that timed out or was cancelled holds
 * its slot until its answer arrives; if that answer is a success, the
 * peer is told at once that the connection is closed (a ConnClose), so
 * that no half of it is left behind. */
typedef void (*peer_connect_cb)(void *arg, int status, uint32_t ep_id, uint32_t conn);
int peer_connect(struct peermgr *pm, const char *peer, const char *name, uint32_t src_ep,
		 uint32_t src_conn, uint32_t timeout_ms, peer_connect_cb cb, void *arg,
		 uint64_t *handle);
/* peer_connect from src_thread of ours to the listener on the peer's
 * dst_thread (peer_lookup's thread); peer_connect is both 0. */
int peer_connect_thr(struct peermgr *pm, const char *peer, const char *name, uint32_t src_ep,
		     uint32_t src_conn, uint32_t src_thread, uint32_t dst_thread, uint32_t timeout_ms,
		     peer_connect_cb cb, void *arg, uint64_t *handle);
/* Forget a connect in flight: its cb is not called. Unknown handles are
 * ignored. Lookup and connect handles never collide: either cancel
 * function takes either. */
void peer_connect_cancel(struct peermgr *pm, uint64_t handle);

/* A connect asked by a peer, waiting for its answer. */
struct peer_connect_req;

/* What the daemon does when a peer asks. Called from the event loop; they
 * may call any peer_* function except peermgr_free and peermgr_reload. */
struct peer_handlers {
	/* A peer asks to connect (src_ep, src_conn) of its daemon to the
	 * endpoint listening under name here. Answer exactly once with
	 * peer_connect_answer, at once or later; req stays valid until then.
	 * If the peer's connection goes down first, the answer is dropped.
	 * peer and name are valid during the call only. */
	void (*connect)(void *arg, const char *peer, struct peer_connect_req *req,
			const char *name, uint32_t src_ep, uint32_t src_conn);
	/* A peer closed a connection: (ep_id, conn) is ours, (src_ep,
	 * src_conn) theirs. */
	void (*conn_close)(void *arg, const char *peer, uint32_t ep_id, uint32_t conn,
			   uint32_t src_ep, uint32_t src_conn);
	void *arg;
};

/* Install h (copied; NULL: none). Without a connect handler a peer's
 * connect is answered -EOPNOTSUPP at once; without conn_close its
 * ConnClose is dropped. More than PEER_MAX_CONNECTS unanswered from one
 * connection are answered -EBUSY at once, the handler not called. */
void peermgr_set_handlers(struct peermgr *pm, const struct peer_handlers *h);
/* The asker's engine thread and the thread it expects the listener on (0
 * from a one-thread daemon). */
void peer_connect_req_threads(const struct peer_connect_req *req, uint32_t *src_thread,
			      uint32_t *dst_thread);
/* Answer req and free it: status 0 with (ep_id, conn), our side of the new
 * connection, or a negative errno (-4095..-1; anything else is sent as
 * -EIO). A no-op but the free if its connection went down meanwhile: the
 * peer reset its side then. Requests never answered are freed by
 * peermgr_free; do not answer them after it. */
void peer_connect_answer(struct peermgr *pm, struct peer_connect_req *req, int status,
			 uint32_t ep_id, uint32_t conn);
/* Tell peer a connection was closed: (ep_id, conn) is its side, (src_ep,
 * src_conn) ours. 0 (told, or it could not be queued and the peer's
 * connection is being closed, which resets that side all the same),
 * -ENOTCONN if the peer is not up (nothing to tell: its side was reset
 * when the peer went down), -ESRCH for no such peer. */
int peer_conn_close(struct peermgr *pm, const char *peer, uint32_t ep_id, uint32_t conn,
		    uint32_t src_ep, uint32_t src_conn);
/* Close peer's control connection (an Error with why goes first), as if it
 * had been lost: both daemons take the peer down (its data channels and
 * connections go) and the dialing side dials again at once, so the peer
 * comes back with new tokens and fresh channels. For a data channel that
 * gave up while the control connection stayed up. 0, -ENOTCONN if the peer
 * is not up, -ESRCH for no such peer. */
int peer_restart(struct peermgr *pm, const char *peer, const char *why);

#endif
